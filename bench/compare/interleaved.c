/* sc-interleaved: shardcomm and Open MPI in one process, call by call. Each iteration
 * times one MPI call, one shardcomm call on plain memory (malloc) and one on registered
 * memory (sc_mem_alloc), each after a barrier of its own library, in an order that
 * rotates from one iteration to the next; so the drift of a shared machine, which
 * moves separate runs by 2-5x within minutes, falls on all three alike, and their
 * ratio is steady where separate runs' ratios are not. shardcomm finds its ranks from
 * Open MPI's environment (no scrun).
 *
 * Run: mpirun -np N sc-interleaved [-b MIN] [-e MAX] [-f F] [-n ITERS] [COLL...]
 *      COLL: allreduce reduce_scatter allgather (default: all three). Sizes as
 *      sc-bench's: the larger buffer's bytes, float32 sum; from 16 MiB on a tenth of
 *      the iterations (at least 5). Prints rank 0's median time of each and the ratios
 *      (Open MPI's time / shardcomm's, the ratio of their busbw); checks every result
 *      once per size (small integer sums, exact in float32). */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shardcomm/shardcomm.h>

#include "bench_time.h"
#include "compare/size_parse.h"

typedef enum { IL_ALLREDUCE, IL_REDUCE_SCATTER, IL_ALLGATHER, IL_COLL_COUNT } il_coll_t;

static const char *const il_names[IL_COLL_COUNT] = {"allreduce", "reduce_scatter",
                                                     "allgather"};

/* Who runs a call: Open MPI, shardcomm on plain memory, on registered memory. */
enum { IL_MPI, IL_SC, IL_SC_REG, IL_WHO };

typedef struct {
    size_t min_bytes, max_bytes, factor;
    int iters;
    int colls[IL_COLL_COUNT], ncolls; /* il_coll_t */
} il_options_t;

typedef struct {
    int rank, size;
    sc_comm_t *comm;
    float *in[IL_WHO], *out[IL_WHO]; /* IL_SC_REG's from sc_mem_alloc */
} il_world_t;

static int il_usage(void)
{
    fprintf(stderr, "usage: mpirun -np N sc-interleaved [-b MIN] [-e MAX] [-f F] [-n ITERS] "
                    "[allreduce|reduce_scatter|allgather ...]\n");
    return -1;
}

static int il_options_parse(int argc, char **argv, il_options_t *o)
{
    int c;

    *o = (il_options_t){.min_bytes = 64 << 10, .max_bytes = 64u << 20, .factor = 4,
                        .iters = 50};
    while ((c = getopt(argc, argv, "b:e:f:n:")) != -1) {
        switch (c) {
        case 'b': if (compare_size_parse(optarg, &o->min_bytes)) return il_usage(); break;
        case 'e': if (compare_size_parse(optarg, &o->max_bytes)) return il_usage(); break;
        case 'f':
            o->factor = strtoul(optarg, NULL, 10);
            if (o->factor < 2)
                return il_usage();
            break;
        case 'n':
            o->iters = atoi(optarg);
            if (o->iters < 1)
                return il_usage();
            break;
        default: return il_usage();
        }
    }
    if (o->min_bytes > o->max_bytes || o->max_bytes > ((size_t)1 << 31))
        return il_usage();
    for (; optind < argc; optind++) {
        int k = 0;
        while (k < IL_COLL_COUNT && strcmp(argv[optind], il_names[k]) != 0)
            k++;
        if (k == IL_COLL_COUNT)
            return il_usage();
        o->colls[o->ncolls++] = k;
    }
    if (o->ncolls == 0)
        for (int k = 0; k < IL_COLL_COUNT; k++)
            o->colls[o->ncolls++] = k;
    return 0;
}

/* Floats per rank of coll's input and output at bytes; 0 in *n_in when bytes do not
 * divide into whole float32 blocks of every rank. */
static void il_counts(il_coll_t coll, size_t bytes, int p, size_t *n_in, size_t *n_out)
{
    size_t n = bytes / sizeof(float) / (size_t)p * (size_t)p;

    *n_in = coll == IL_ALLGATHER ? n / (size_t)p : n;
    *n_out = coll == IL_REDUCE_SCATTER ? n / (size_t)p : n;
}

/* One call of coll by who; nonzero (with the sentence printed) on a shardcomm error. */
static int il_call(il_world_t *w, il_coll_t coll, int who, size_t n_in, size_t n_out)
{
    const float *in = w->in[who];
    float *out = w->out[who];
    sc_status_t st = SC_SUCCESS;

    if (who == IL_MPI) {
        if (coll == IL_ALLREDUCE)
            MPI_Allreduce(in, out, (int)n_in, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else if (coll == IL_REDUCE_SCATTER)
            MPI_Reduce_scatter_block(in, out, (int)n_out, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else
            MPI_Allgather(in, (int)n_in, MPI_FLOAT, out, (int)n_in, MPI_FLOAT, MPI_COMM_WORLD);
        return 0;
    }
    if (coll == IL_ALLREDUCE)
        st = sc_allreduce(in, out, n_in, SC_FLOAT32, SC_SUM, w->comm, NULL, NULL);
    else if (coll == IL_REDUCE_SCATTER)
        st = sc_reduce_scatter(in, out, n_out, SC_FLOAT32, SC_SUM, w->comm, NULL, NULL);
    else
        st = sc_allgather(in, out, n_in, SC_FLOAT32, w->comm, NULL, NULL);
    if (st != SC_SUCCESS) {
        fprintf(stderr, "sc-interleaved: rank %d: %s %s: %s\n", w->rank,
                who == IL_SC ? "plain" : "registered", il_names[coll], sc_last_error());
        return 1;
    }
    return 0;
}

static int il_barrier(il_world_t *w, int who)
{
    if (who == IL_MPI) {
        MPI_Barrier(MPI_COMM_WORLD);
        return 0;
    }
    if (sc_barrier(w->comm, NULL) != SC_SUCCESS) {
        fprintf(stderr, "sc-interleaved: rank %d: barrier: %s\n", w->rank, sc_last_error());
        return 1;
    }
    return 0;
}

/* Input element i of rank r: a small integer, so that every sum is exact. */
static float il_value(int r, size_t i)
{
    return (float)((r + 1) * (int)(i % 7 + 1));
}

/* The number of wrong elements of who's output after one call of coll. */
static size_t il_wrong(const il_world_t *w, il_coll_t coll, int who, size_t n_in, size_t n_out)
{
    const float *out = w->out[who];
    int p = w->size;
    size_t bad = 0;

    for (size_t i = 0; i < n_out; i++) {
        float want;
        if (coll == IL_ALLGATHER) {
            want = il_value((int)(i / n_in), i % n_in);
        } else {
            size_t j = coll == IL_REDUCE_SCATTER ? (size_t)w->rank * n_out + i : i;
            want = (float)(p * (p + 1) / 2) * (float)(j % 7 + 1);
        }
        bad += out[i] != want;
    }
    return bad;
}

/* Times coll at bytes: iters rounds of the three calls; prints rank 0's row. Nonzero on
 * an error or a wrong result (on any rank). */
static int il_size(il_world_t *w, il_coll_t coll, size_t bytes, int iters)
{
    size_t n_in, n_out;
    unsigned long wrong = 0, all_wrong = 0;
    double *t = malloc((size_t)IL_WHO * (size_t)iters * sizeof(double)), med[IL_WHO];
    int rc = 0;

    il_counts(coll, bytes, w->size, &n_in, &n_out);
    if (!t || n_in == 0) {
        free(t);
        return 0; /* nothing to time at this size */
    }
    for (int who = 0; who < IL_WHO; who++) {
        for (size_t i = 0; i < n_in; i++)
            w->in[who][i] = il_value(w->rank, i);
        rc |= il_call(w, coll, who, n_in, n_out); /* warm-up, and the checked call */
        wrong += il_wrong(w, coll, who, n_in, n_out);
    }
    /* Every rank times, or none: a rank that skipped the loop would pair its next MPI
     * call with a peer's barrier. (A shardcomm error in the loop is one on every rank,
     * at the same call.) */
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (int it = 0; it < iters && !rc; it++) {
        for (int k = 0; k < IL_WHO && !rc; k++) {
            int who = (it + k) % IL_WHO;
            double t0;

            rc |= il_barrier(w, who);
            t0 = bench_now_s();
            rc |= il_call(w, coll, who, n_in, n_out);
            t[(size_t)who * (size_t)iters + (size_t)it] = bench_now_s() - t0;
        }
    }
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!rc) {
        for (int who = 0; who < IL_WHO; who++) {
            qsort(t + (size_t)who * (size_t)iters, (size_t)iters, sizeof(double), bench_cmp_double);
            med[who] = t[(size_t)who * (size_t)iters + (size_t)iters / 2];
        }
        if (w->rank == 0)
            printf("  %-15s %10zu %10.1f %10.1f %10.1f %12.2f %12.2f %6lu\n", il_names[coll],
                   bytes, 1e6 * med[IL_MPI], 1e6 * med[IL_SC], 1e6 * med[IL_SC_REG],
                   med[IL_MPI] / med[IL_SC], med[IL_MPI] / med[IL_SC_REG], all_wrong);
    }
    free(t);
    return rc || all_wrong;
}

static int il_alloc(il_world_t *w, size_t max_bytes)
{
    size_t n = max_bytes / sizeof(float) + (size_t)w->size;

    for (int who = 0; who < IL_WHO; who++) {
        if (who == IL_SC_REG) {
            if (sc_mem_alloc(w->comm, n * sizeof(float), (void **)&w->in[who]) ||
                sc_mem_alloc(w->comm, n * sizeof(float), (void **)&w->out[who])) {
                fprintf(stderr, "sc-interleaved: rank %d: %s\n", w->rank, sc_last_error());
                return 1;
            }
        } else {
            w->in[who] = malloc(n * sizeof(float));
            w->out[who] = malloc(n * sizeof(float));
            if (!w->in[who] || !w->out[who]) {
                fprintf(stderr, "sc-interleaved: out of memory for %zu floats\n", n);
                return 1;
            }
        }
    }
    return 0;
}

static void il_free(il_world_t *w)
{
    for (int who = 0; who < IL_WHO; who++) {
        if (who == IL_SC_REG) {
            sc_mem_free(w->comm, w->in[who]);
            sc_mem_free(w->comm, w->out[who]);
        } else {
            free(w->in[who]);
            free(w->out[who]);
        }
    }
}

int main(int argc, char **argv)
{
    il_options_t o;
    il_world_t w = {0};
    int rc = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    if (il_options_parse(argc, argv, &o)) {
        MPI_Finalize();
        return 2;
    }
    if (sc_comm_init_from_env(&w.comm) != SC_SUCCESS) {
        fprintf(stderr, "sc-interleaved: rank %d: %s\n", w.rank, sc_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    rc = il_alloc(&w, o.max_bytes);
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!rc && w.rank == 0) {
        printf("# sc-interleaved: %d ranks, float32 sum, %d iterations (a tenth from 16 MiB),"
               " rank 0's medians\n", w.size, o.iters);
        printf("# %-15s %10s %10s %10s %10s %12s %12s %6s\n", "collective", "bytes", "mpi_us",
               "sc_us", "sc_reg_us", "mpi/sc", "mpi/sc_reg", "wrong");
    }
    for (int k = 0; k < o.ncolls && !rc; k++)
        for (size_t b = o.min_bytes; b <= o.max_bytes && !rc; b *= o.factor) {
            int iters = b >= ((size_t)16 << 20) ? (o.iters / 10 > 5 ? o.iters / 10 : 5) : o.iters;
            rc = il_size(&w, (il_coll_t)o.colls[k], b, iters);
        }
    il_free(&w);
    sc_comm_destroy(w.comm);
    MPI_Finalize();
    return rc ? 1 : 0;
}
