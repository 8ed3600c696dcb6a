/* mpi_allreduce_gap: bench/allreduce_gap.c with MPI_Allreduce and MPI_Barrier, the same
 * gaps, rounds and table (allreduce_gap_common.h).
 *
 * usage: mpirun -np 2 build/bench/mpi_allreduce_gap [COUNT [ROUNDS]] */
#include <mpi.h>

#include "allreduce_gap_common.h"

typedef struct {
    const float *in;
    float *out;
    int count;
} gap_mpi_t;

/* MPI's default error handler aborts the job on a failure: nothing to report here. */
static int gap_mpi_barrier(void *ctx)
{
    (void)ctx;
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
}

static int gap_mpi_allreduce(void *ctx)
{
    gap_mpi_t *g = ctx;
    MPI_Allreduce(g->in, g->out, g->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    return 0;
}

int main(int argc, char **argv)
{
    gap_options_t o;
    gap_mpi_t g;
    gap_ops_t ops = {&g, gap_mpi_barrier, gap_mpi_allreduce};
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
    } else {
        gap_fill(in, o.count, rank);
        g.in = in;
        g.out = out;
        g.count = (int)o.count;
        if (gap_run(&o, &ops, t) == 0 &&
            gap_check("mpi_allreduce_gap", rank, size, out, o.count) == 0) {
            if (rank == 0)
                gap_print("Open MPI", &o, size, t);
            rc = 0;
        }
    }
    free(in);
    free(out);
    free(t);
    MPI_Finalize();
    return rc;
}
