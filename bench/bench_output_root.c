/* sc-bench's output files opened by rank 0, with every rank told whether it could. */
#include "bench_output.h"

int sc_bench_output_open_root(sc_comm_t *comm, const char *path, sc_bench_output_t **out)
{
    sc_bench_output_t *mine = NULL;
    int failed = 0, any;
    sc_status_t status;

    if (!path) {
        *out = NULL;
        return 0;
    }
    if (sc_comm_rank(comm) == 0) {
        mine = sc_bench_output_open(path);
        failed = mine == NULL;
    }
    status = sc_allreduce(&failed, &any, 1, SC_INT32, SC_MAX, comm, NULL, NULL);
    if (status != SC_SUCCESS) {
        fprintf(stderr, "sc-bench: rank %d: cannot learn whether rank 0 can write %s: %s: "
                "%s\n", sc_comm_rank(comm), path, sc_status_string(status), sc_last_error());
        sc_bench_output_discard(mine);
        return 1;
    }
    if (any)
        return 2;
    *out = mine;
    return 0;
}
