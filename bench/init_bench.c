/* init_bench: how long sc_comm_init takes on the ranks of one launch (the rendezvous,
 * the transport, the checks of the host names): each rank times its own, and rank 0
 * prints its own and the slowest rank's. Rank 0's bytes sent in the rendezvous are its
 * log line at SC_LOG_LEVEL=info.
 * Usage: scrun -n N --bind none init_bench */
#include <stdio.h>

#include "bench_time.h"
#include "shardcomm/shardcomm.h"

int main(void)
{
    sc_comm_t *comm;
    double t0 = bench_now_s(), own, slowest;

    if (sc_comm_init_from_env(&comm) != SC_SUCCESS) {
        fprintf(stderr, "init_bench: %s\n", sc_last_error());
        return 1;
    }
    own = bench_now_s() - t0;
    if (sc_allreduce(&own, &slowest, 1, SC_FLOAT64, SC_MAX, comm, NULL, NULL) != SC_SUCCESS) {
        fprintf(stderr, "init_bench: %s\n", sc_last_error());
        sc_comm_destroy(comm);
        return 1;
    }
    if (sc_comm_rank(comm) == 0)
        printf("ranks %d: sc_comm_init %.1f ms on rank 0, %.1f ms on the slowest rank\n",
               sc_comm_size(comm), own * 1e3, slowest * 1e3);
    sc_comm_destroy(comm);
    return 0;
}
