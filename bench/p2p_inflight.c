/* p2p_inflight: many point-to-point messages in flight at once (its MPI peer:
 * compare/mpi_p2p_inflight.c). Every rank posts N non-blocking receives from and N
 * sends to its partner (rank ^ 1; an odd last rank sits out), then waits for all of
 * them, newest first, and checks every value. Prints the time per message pair for
 * each N given, the slowest rank's.
 *
 * usage: scrun -n 2 build/bench/p2p_inflight [N ...]   (default 1000 10000 100000) */
#include <stdio.h>
#include <stdlib.h>

#include <shardcomm/shardcomm.h>

#include "bench_time.h"
#include "p2p_inflight_common.h"

/* Posts, waits for and checks n message pairs with peer; the seconds taken, or -1. */
static double run_pairs(sc_comm_t *comm, int rank, int peer, int n)
{
    float *out = malloc((size_t)n * sizeof(float)), *in = calloc((size_t)n, sizeof(float));
    sc_request_t **req = calloc(2 * (size_t)n, sizeof(*req));
    double t0, t = -1.0;
    int posted = 0;

    if (!out || !in || !req) {
        fprintf(stderr, "p2p_inflight: out of memory for %d messages\n", n);
        goto done;
    }
    p2p_fill(out, rank, n);
    t0 = bench_now_s();
    for (; posted < n; posted++) {
        if (sc_recv(&in[posted], 1, SC_FLOAT32, peer, comm, NULL, &req[2 * posted]) ||
            sc_send(&out[posted], 1, SC_FLOAT32, peer, comm, NULL, &req[2 * posted + 1])) {
            fprintf(stderr, "p2p_inflight: posting message %d failed: %s\n", posted,
                    sc_last_error());
            sc_request_free(req[2 * posted]); /* the receive, if it was posted */
            goto done;
        }
    }
    for (int i = 2 * n - 1; i >= 0; i--) {
        if (sc_wait(req[i]) != SC_SUCCESS) {
            fprintf(stderr, "p2p_inflight: request %d failed: %s\n", i, sc_last_error());
            goto done;
        }
    }
    t = bench_now_s() - t0;
    if (p2p_count_wrong("p2p_inflight", in, peer, n))
        t = -1.0;
done:
    for (int i = 0; i < 2 * posted; i++)
        sc_request_free(req[i]);
    free(req);
    free(in);
    free(out);
    return t;
}

int main(int argc, char **argv)
{
    int nsizes = argc > 1 ? argc - 1 : P2P_DEFAULT_COUNTS, rank, size, peer, rc = 0;
    sc_comm_t *comm;

    if (sc_comm_init_from_env(&comm) != SC_SUCCESS) {
        fprintf(stderr, "p2p_inflight: %s\n", sc_last_error());
        return 1;
    }
    rank = sc_comm_rank(comm);
    size = sc_comm_size(comm);
    peer = p2p_partner(rank, size);
    if (rank == 0)
        p2p_print_header();
    for (int k = 0; k < nsizes && rc == 0; k++) {
        long n = p2p_count_arg("p2p_inflight", argc, argv, k, rank);
        double t = 0.0, slowest;

        if (n == 0) {
            rc = 2;
            break;
        }
        if (peer >= 0)
            t = run_pairs(comm, rank, peer, (int)n);
        /* A failed rank's -1 makes the minimum negative everywhere. */
        if (sc_allreduce(&t, &slowest, 1, SC_FLOAT64, SC_MIN, comm, NULL, NULL) ||
            slowest < 0) {
            rc = 1;
            break;
        }
        sc_allreduce(&t, &slowest, 1, SC_FLOAT64, SC_MAX, comm, NULL, NULL);
        if (rank == 0)
            p2p_print_row(n, slowest);
    }
    sc_comm_destroy(comm);
    return rc;
}
