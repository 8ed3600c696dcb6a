/* mpi_allreduce_gap: bench/allreduce_gap.c with MPI_Allreduce and MPI_Barrier, the same
 * gaps, rounds and table (allreduce_gap_common.h).
 *
 * usage: mpirun -np 2 build/bench/mpi_allreduce_gap [COUNT [ROUNDS]] */
#include <mpi.h>

#include "allreduce_gap_common.h"

int main(int argc, char **argv)
{
    gap_options_t o;
    float *in, *out;
    double *t;
    int rank, size, rc = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (gap_parse("mpi_allreduce_gap", argc, argv, &o)) {
        MPI_Finalize();
        return 2;
    }
    in = malloc(o.count * sizeof(float));
    out = malloc(o.count * sizeof(float));
    t = malloc((size_t)GAP_COUNT * (size_t)o.rounds * sizeof(double));
    if (!in || !out || !t || o.count > (size_t)2147483647) {
        fprintf(stderr, "mpi_allreduce_gap: cannot hold %zu floats\n", o.count);
        goto done;
    }
    for (size_t i = 0; i < o.count; i++)
        in[i] = (float)(rank + 1);
    for (int i = 0; i < 20; i++)
        MPI_Allreduce(in, out, (int)o.count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < o.rounds; i++) {
        for (int g = 0; g < GAP_COUNT; g++) {
            double t0;

            if (g != GAP_NONE)
                MPI_Barrier(MPI_COMM_WORLD);
            gap_compute((gap_kind_t)g);
            t0 = gap_now();
            MPI_Allreduce(in, out, (int)o.count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            t[(size_t)g * o.rounds + i] = gap_now() - t0;
        }
    }
    for (size_t i = 0; i < o.count; i++) {
        if (out[i] != (float)size * (float)(size + 1) / 2) {
            fprintf(stderr, "mpi_allreduce_gap: rank %d: element %zu is %g\n", rank, i,
                    (double)out[i]);
            goto done;
        }
    }
    if (rank == 0)
        gap_print("Open MPI", &o, size, t);
    rc = 0;
done:
    free(in);
    free(out);
    free(t);
    MPI_Finalize();
    return rc;
}
