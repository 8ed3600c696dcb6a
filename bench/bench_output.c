/* sc-bench's output files: opened before a run, closed with a check of the writes. */
#include <errno.h>
#include <string.h>

#include "bench_output.h"

FILE *sc_bench_output_open(const char *path)
{
    FILE *f = fopen(path, "w");

    if (!f)
        fprintf(stderr, "sc-bench: cannot write %s: %s\n", path, strerror(errno));
    return f;
}

int sc_bench_output_open_root(sc_comm_t *comm, const char *path, FILE **f)
{
    FILE *mine = NULL;
    int failed = 0, any;
    sc_status_t status;

    if (!path) {
        *f = NULL;
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
        if (mine)
            fclose(mine);
        return 1;
    }
    if (any)
        return 2;
    *f = mine;
    return 0;
}

int sc_bench_output_close(FILE *f, const char *path)
{
    int failed, err;

    if (!f)
        return 0;
    failed = fflush(f) != 0 || ferror(f);
    err = errno;
    if (fclose(f) != 0 && !failed) {
        failed = 1;
        err = errno;
    }
    if (failed)
        fprintf(stderr, "sc-bench: cannot write %s: %s\n", path, strerror(err));
    return failed;
}
