/* mpi_p2p_inflight: the peer of bench/p2p_inflight.c in MPI, the same pattern (N
 * MPI_Irecv from and N MPI_Isend to rank ^ 1, waited for newest first, every value
 * checked) and the same output.
 *
 * usage: mpirun -np 2 build/bench/mpi_p2p_inflight [N ...]   (default 1000 10000 100000) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "p2p_inflight_common.h"

/* Posts, waits for and checks n message pairs with peer; the seconds taken, or -1. */
static double run_pairs(int rank, int peer, int n)
{
    float *out = malloc((size_t)n * sizeof(float)), *in = calloc((size_t)n, sizeof(float));
    MPI_Request *req = malloc(2 * (size_t)n * sizeof(*req));
    double t0, t = -1.0;

    if (!out || !in || !req) {
        fprintf(stderr, "mpi_p2p_inflight: out of memory for %d messages\n", n);
        goto done;
    }
    p2p_fill(out, rank, n);
    t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) {
        MPI_Irecv(&in[i], 1, MPI_FLOAT, peer, 0, MPI_COMM_WORLD, &req[2 * i]);
        MPI_Isend(&out[i], 1, MPI_FLOAT, peer, 0, MPI_COMM_WORLD, &req[2 * i + 1]);
    }
    for (int i = 2 * n - 1; i >= 0; i--)
        MPI_Wait(&req[i], MPI_STATUS_IGNORE);
    t = MPI_Wtime() - t0;
    if (p2p_count_wrong("mpi_p2p_inflight", in, peer, n))
        t = -1.0;
done:
    free(req);
    free(in);
    free(out);
    return t;
}

int main(int argc, char **argv)
{
    int nsizes = argc > 1 ? argc - 1 : P2P_DEFAULT_COUNTS, rank, size, peer, rc = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = p2p_partner(rank, size);
    if (rank == 0)
        p2p_print_header();
    for (int k = 0; k < nsizes && rc == 0; k++) {
        long n = p2p_count_arg("mpi_p2p_inflight", argc, argv, k, rank);
        double t = 0.0, fastest, slowest;

        if (n == 0) {
            rc = 2;
            break;
        }
        if (peer >= 0)
            t = run_pairs(rank, peer, (int)n);
        MPI_Allreduce(&t, &fastest, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (fastest < 0) {
            rc = 1;
            break;
        }
        if (rank == 0)
            p2p_print_row(n, slowest);
    }
    MPI_Finalize();
    return rc;
}
