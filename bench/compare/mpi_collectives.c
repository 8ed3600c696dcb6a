/* sc-bench-mpi: the Open MPI peer of sc-bench, float32 sum, same sizes, columns and
 * JSON keys. Based on /work/shared/peers/mpi_allreduce.c and mpi_latency.c.
 * Run: mpirun -np N sc-bench-mpi COLL [-b MIN] [-e MAX] [-f F] [-n ITERS] [-w WARMUP]
 *      [--json FILE], COLL = allreduce | reduce_scatter | allgather | sendrecv | latency
 *      | all. */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_output.h"
#include "compare/size_parse.h"

typedef enum {
    MPIB_ALLREDUCE,
    MPIB_REDUCE_SCATTER,
    MPIB_ALLGATHER,
    MPIB_SENDRECV, /* MPI_Sendrecv to rank + 1 from rank - 1, as sc-bench's sendrecv */
    MPIB_COLL_COUNT
} mpib_coll_t;

static const char *const mpib_names[MPIB_COLL_COUNT] = {"allreduce", "reduce_scatter",
                                                         "allgather", "sendrecv"};

typedef struct {
    int colls[MPIB_COLL_COUNT];
    int ncolls;
    size_t min_bytes, max_bytes, factor;
    int iters, warmup;
    const char *json_path;
} mpib_options_t;

static int mpib_options_parse(int argc, char **argv, mpib_options_t *o)
{
    static const struct option longopts[] = {{"json", required_argument, NULL, 'j'},
                                             {NULL, 0, NULL, 0}};
    int c;

    *o = (mpib_options_t){.min_bytes = 8, .max_bytes = 64u << 20, .factor = 2,
                          .iters = 20, .warmup = 5};
    while ((c = getopt_long(argc, argv, "b:e:f:n:w:", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': if (compare_size_parse(optarg, &o->min_bytes)) return -1; break;
        case 'e': if (compare_size_parse(optarg, &o->max_bytes)) return -1; break;
        case 'f': o->factor = strtoul(optarg, NULL, 10); if (o->factor < 2) return -1; break;
        case 'n': o->iters = atoi(optarg); if (o->iters < 1) return -1; break;
        case 'w': o->warmup = atoi(optarg); if (o->warmup < 0) return -1; break;
        case 'j': o->json_path = optarg; break;
        default: return -1;
        }
    }
    if (optind != argc - 1 || o->min_bytes > o->max_bytes)
        return -1;
    if (strcmp(argv[optind], "latency") == 0) {
        /* mpi_latency.c's loop: 8 bytes, 1000 warm-up and 20000 timed calls. */
        o->colls[0] = MPIB_ALLREDUCE;
        o->ncolls = 1;
        o->min_bytes = o->max_bytes = 8;
        o->iters = 20000;
        o->warmup = 1000;
        return 0;
    }
    for (int i = 0; i < MPIB_COLL_COUNT; i++)
        if (strcmp(argv[optind], "all") == 0 || strcmp(argv[optind], mpib_names[i]) == 0)
            o->colls[o->ncolls++] = i;
    return o->ncolls ? 0 : -1;
}

/* Element counts as sc-bench lays them out: size rounded down to whole elements, to
 * whole per-rank blocks for reduce_scatter and allgather; 0 where size holds none. */
static void mpib_counts(int coll, size_t size, int n, size_t *count, size_t *total)
{
    size_t elems = size / sizeof(float);

    if (coll == MPIB_ALLREDUCE || coll == MPIB_SENDRECV) {
        *count = elems;
        *total = elems;
        return;
    }
    *count = elems / (size_t)n;
    *total = *count * (size_t)n;
}

static void mpib_call(int coll, float *s, float *d, size_t count, int rank, int n)
{
    if (coll == MPIB_SENDRECV)
        MPI_Sendrecv(s, (int)count, MPI_FLOAT, (rank + 1) % n, 0, d, (int)count, MPI_FLOAT,
                     (rank + n - 1) % n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else if (coll == MPIB_ALLREDUCE)
        MPI_Allreduce(s, d, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (coll == MPIB_REDUCE_SCATTER)
        MPI_Reduce_scatter_block(s, d, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Allgather(s, (int)count, MPI_FLOAT, d, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    mpib_options_t o;
    int rank, n, first = 1;
    size_t maxb, count, total;
    float *s, *d;
    sc_bench_output_t *out = NULL;
    FILE *json = NULL;
    double sum_busbw = 0;
    int rows = 0, cannot = 0, status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (mpib_options_parse(argc, argv, &o) != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: sc-bench-mpi allreduce|reduce_scatter|allgather|"
                            "sendrecv|latency|all [-b MIN] [-e MAX] [-f F] [-n ITERS] [-w WARMUP] "
                            "[--json FILE]\n");
        MPI_Finalize();
        return 2;
    }
    maxb = 0;
    for (size_t b = o.min_bytes; b <= o.max_bytes; b *= o.factor) {
        mpib_counts(MPIB_REDUCE_SCATTER, b, n, &count, &total);
        maxb = total * sizeof(float) > maxb ? total * sizeof(float) : maxb;
        mpib_counts(MPIB_ALLREDUCE, b, n, &count, &total);
        maxb = total * sizeof(float) > maxb ? total * sizeof(float) : maxb;
        if (b > o.max_bytes / o.factor)
            break;
    }
    if (maxb == 0) {
        fprintf(stderr, "sc-bench-mpi: rank %d: -e %zu B holds no float32 element: sizes "
                        "round down to whole elements\n", rank, o.max_bytes);
        MPI_Finalize();
        return 2;
    }
    s = malloc(maxb);
    d = malloc(maxb);
    if (!s || !d) {
        fprintf(stderr, "sc-bench-mpi: rank %d: cannot allocate 2 x %zu B\n", rank, maxb);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < maxb / sizeof(float); i++) {
        s[i] = (float)(rank + 1);
        d[i] = 0;
    }
    if (rank == 0) {
        printf("# sc-bench-mpi (Open MPI), nranks %d, dtype float32, op sum, iters %d, "
               "warmup %d\n#\n", n, o.iters, o.warmup);
        printf("# %14s %12s %12s %9s %7s %5s %11s %9s %9s %7s\n", "collective", "size",
               "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong");
        printf("# %14s %12s %12s %9s %7s %5s %11s %9s %9s %7s\n", "", "(B)", "(elements)",
               "", "", "", "(us)", "(GB/s)", "(GB/s)", "");
        /* Written beside the file and put in place at the end: a failed run leaves
         * what was there. */
        if (o.json_path && !(out = sc_bench_output_open(o.json_path)))
            cannot = 1;
        json = out ? out->f : NULL;
        if (json)
            fputs("[\n", json);
    }
    MPI_Bcast(&cannot, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (cannot) { /* rank 0 said why */
        free(s);
        free(d);
        MPI_Finalize();
        return 2;
    }
    for (int c = 0; c < o.ncolls; c++) {
        int coll = o.colls[c];

        for (size_t b = o.min_bytes; b <= o.max_bytes; b *= o.factor) {
            double t, tmax, alg, bus;

            mpib_counts(coll, b, n, &count, &total);
            if (count == 0) { /* as sc-bench: a size that holds no element is skipped */
                if (rank == 0)
                    printf("# %s: %zu B skipped: less than one float32 element%s\n",
                           mpib_names[coll], b,
                           coll == MPIB_ALLREDUCE || coll == MPIB_SENDRECV ? ""
                                                                           : " per rank");
                if (b > o.max_bytes / o.factor)
                    break;
                continue;
            }
            for (int i = 0; i < o.warmup; i++)
                mpib_call(coll, s, d, count, rank, n);
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
            for (int i = 0; i < o.iters; i++)
                mpib_call(coll, s, d, count, rank, n);
            t = (MPI_Wtime() - t) / o.iters;
            MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            alg = (double)(total * sizeof(float)) / tmax / 1e9;
            bus = coll == MPIB_ALLREDUCE ? alg * 2.0 * (n - 1) / n
                  : coll == MPIB_SENDRECV ? alg
                                          : alg * (n - 1.0) / n;
            sum_busbw += bus;
            rows++;
            if (rank == 0) {
                /* count: the call's count argument, a rank's block for reduce_scatter
                 * and allgather, as sc-bench's (nccl-tests') column. */
                printf("  %14s %12zu %12zu %9s %7s %5d %11.2f %9.2f %9.2f %7s\n",
                       mpib_names[coll], total * sizeof(float), count, "float32",
                       coll == MPIB_ALLGATHER || coll == MPIB_SENDRECV ? "none" : "sum", -1,
                       tmax * 1e6, alg, bus, "N/A");
                fflush(stdout);
                if (json)
                    fprintf(json,
                            "%s  {\"coll\": \"%s\", \"bytes\": %zu, \"count\": %zu, "
                            "\"dtype\": \"float32\", \"op\": \"%s\", \"root\": -1, "
                            "\"inplace\": false, \"memory\": \"host\", \"nranks\": %d, "
                            "\"time_us\": %.6g, "
                            "\"algbw\": %.6g, \"busbw\": %.6g, \"wrong\": null}",
                            first ? "" : ",\n", mpib_names[coll], total * sizeof(float),
                            count,
                            coll == MPIB_ALLGATHER || coll == MPIB_SENDRECV ? "none" : "sum",
                            n, tmax * 1e6,
                            alg, bus);
                first = 0;
            }
            if (b > o.max_bytes / o.factor)
                break;
        }
    }
    status = 0;
    if (rank == 0) {
        printf("# avg busbw: %.3f GB/s, wrong: N/A\n", rows ? sum_busbw / rows : 0.0);
        if (json)
            fputs("\n]\n", json);
        status = sc_bench_output_commit(out);
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(s);
    free(d);
    MPI_Finalize();
    return status;
}
