/* allreduce_gap: the time of one all-reduce after a gap (nothing, a barrier, a barrier
 * and a sleep or a spin), the gaps interleaved round by round (allreduce_gap_common.h;
 * its MPI peer: compare/mpi_allreduce_gap.c). Shows what a caller pays for calling
 * after compute rather than back to back: the progress engine asleep, caches cooled.
 *
 * usage: scrun -n 2 build/bench/allreduce_gap [COUNT [ROUNDS]] */
#include <shardcomm/shardcomm.h>

#include "allreduce_gap_common.h"

int main(int argc, char **argv)
{
    gap_options_t o;
    sc_comm_t *comm;
    float *in, *out;
    double *t;
    int rank, rc = 1;

    if (gap_parse("allreduce_gap", argc, argv, &o))
        return 2;
    if (sc_comm_init_from_env(&comm) != SC_SUCCESS) {
        fprintf(stderr, "allreduce_gap: %s\n", sc_last_error());
        return 1;
    }
    rank = sc_comm_rank(comm);
    in = malloc(o.count * sizeof(float));
    out = malloc(o.count * sizeof(float));
    t = malloc((size_t)GAP_COUNT * (size_t)o.rounds * sizeof(double));
    if (!in || !out || !t) {
        fprintf(stderr, "allreduce_gap: out of memory for %zu floats\n", o.count);
        goto done;
    }
    for (size_t i = 0; i < o.count; i++)
        in[i] = (float)(rank + 1);
    for (int i = 0; i < 20; i++)
        if (sc_allreduce(in, out, o.count, SC_FLOAT32, SC_SUM, comm, NULL, NULL))
            goto failed;
    for (int i = 0; i < o.rounds; i++) {
        for (int g = 0; g < GAP_COUNT; g++) {
            double t0;

            if (g != GAP_NONE && sc_barrier(comm, NULL) != SC_SUCCESS)
                goto failed;
            gap_compute((gap_kind_t)g);
            t0 = gap_now();
            if (sc_allreduce(in, out, o.count, SC_FLOAT32, SC_SUM, comm, NULL, NULL))
                goto failed;
            t[(size_t)g * o.rounds + i] = gap_now() - t0;
        }
    }
    for (size_t i = 0; i < o.count; i++) {
        int size = sc_comm_size(comm);
        if (out[i] != (float)size * (float)(size + 1) / 2) {
            fprintf(stderr, "allreduce_gap: rank %d: element %zu is %g\n", rank, i,
                    (double)out[i]);
            goto done;
        }
    }
    if (rank == 0)
        gap_print("shardcomm", &o, sc_comm_size(comm), t);
    rc = 0;
    goto done;
failed:
    fprintf(stderr, "allreduce_gap: rank %d: %s\n", rank, sc_last_error());
done:
    free(in);
    free(out);
    free(t);
    sc_comm_destroy(comm);
    return rc;
}
