/* allreduce_gap: the time of one all-reduce after a gap (nothing, a barrier, a barrier
 * and a sleep or a spin), the gaps interleaved round by round (allreduce_gap_common.h;
 * its MPI peer: compare/mpi_allreduce_gap.c). Shows what a caller pays for calling
 * after compute rather than back to back: the progress engine asleep, caches cooled.
 *
 * usage: scrun -n 2 build/bench/allreduce_gap [COUNT [ROUNDS]] */
#include <shardcomm/shardcomm.h>

#include "allreduce_gap_common.h"

typedef struct {
    sc_comm_t *comm;
    const float *in;
    float *out;
    size_t count;
} gap_sc_t;

static int gap_sc_failed(const gap_sc_t *g, const char *what)
{
    fprintf(stderr, "allreduce_gap: rank %d: %s: %s\n", sc_comm_rank(g->comm), what,
            sc_last_error());
    return 1;
}

static int gap_sc_barrier(void *ctx)
{
    gap_sc_t *g = ctx;
    return sc_barrier(g->comm, NULL) != SC_SUCCESS ? gap_sc_failed(g, "barrier") : 0;
}

static int gap_sc_allreduce(void *ctx)
{
    gap_sc_t *g = ctx;
    return sc_allreduce(g->in, g->out, g->count, SC_FLOAT32, SC_SUM, g->comm, NULL, NULL) !=
                   SC_SUCCESS
               ? gap_sc_failed(g, "allreduce")
               : 0;
}

int main(int argc, char **argv)
{
    gap_options_t o;
    gap_sc_t g;
    gap_ops_t ops = {&g, gap_sc_barrier, gap_sc_allreduce};
    float *in, *out;
    double *t;
    int rank, size, rc = 1;

    if (gap_parse("allreduce_gap", argc, argv, &o))
        return 2;
    if (sc_comm_init_from_env(&g.comm) != SC_SUCCESS) {
        fprintf(stderr, "allreduce_gap: %s\n", sc_last_error());
        return 1;
    }
    rank = sc_comm_rank(g.comm);
    size = sc_comm_size(g.comm);
    in = malloc(o.count * sizeof(float));
    out = malloc(o.count * sizeof(float));
    t = malloc((size_t)GAP_COUNT * (size_t)o.rounds * sizeof(double));
    if (!in || !out || !t) {
        fprintf(stderr, "allreduce_gap: out of memory for %zu floats\n", o.count);
    } else {
        gap_fill(in, o.count, rank);
        g.in = in;
        g.out = out;
        g.count = o.count;
        if (gap_run(&o, &ops, t) == 0 &&
            gap_check("allreduce_gap", rank, size, out, o.count) == 0) {
            if (rank == 0)
                gap_print("shardcomm", &o, size, t);
            rc = 0;
        }
    }
    free(in);
    free(out);
    free(t);
    sc_comm_destroy(g.comm);
    return rc;
}
