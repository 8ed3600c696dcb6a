/* sc-bench compressed: one float32 gradient of COUNT elements per rank, reduced (sum)
 * by sc_allreduce and by sc_compressed_allreduce at density R (error feedback on unless
 * --no-error-feedback; the selection, the packing and the scatter-add included in its
 * time), each timed per call
 * (average over the timed calls, slowest rank), with the bytes each rank sends and the
 * speed-up. Every rank's gradient has exactly k = round(R * COUNT) planted large values
 * (about half of their indices shared by every rank) among small ones, so that the
 * expected results of both methods are known here: the dense sum, and the sum of the
 * planted values for the compressor's first call (zero residual). Every value and sum
 * is exact in float32, so both are checked element by element. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_compressed.h"
#include "bench_memory.h"
#include "bench_data.h"
#include "bench_options.h"
#include "bench_agree.h"
#include "bench_output.h"
#include "bench_time.h"
#include "shardcomm/shardcomm.h"

static const char sc_bc_usage_text[] =
    "usage: sc-bench compressed [-n COUNT] [--ratio R] [options]   (run under scrun -n N)\n"
    "  -n, --count COUNT        float32 elements of the gradient; K/M/G suffixes, 1M =\n"
    "                           2^20 (default 25M)\n"
    "      --ratio R            density: fraction of elements each rank sends, (0, 1],\n"
    "                           k = round(R * COUNT) >= 1 (default 0.01)\n"
    "      --iters N            timed calls per method (default 10)\n"
    "      --warmup W           untimed calls before (default 2)\n"
    "      --mode MODE          exact (default) or approx selection\n"
    "      --values-fp16        send values as float16\n"
    "      --no-error-feedback  compressor without error feedback (selection straight\n"
    "                           from the gradient, no residual pass)\n"
    "      --threads T          selection threads (default: the library's)\n"
    "      --json FILE          rank 0 also writes the rows to FILE as JSON (select_ms\n"
    "                           and scatter_ms null for the dense all-reduce)\n"
    "      --seed S             seed of the gradient values (default 1)\n"
    "  -h, --help               this text\n"
    "time_ms: per call, average over the timed calls, slowest rank. select_ms: error\n"
    "feedback, selection and packing; scatter_ms: the scatter-add (both slowest rank).\n"
    "sent_MB: bytes one rank sends per call (1 MB = 1e6 B): a ring all-reduce's\n"
    "2 (p-1)/p of the gradient, and the all-gather of the pairs' (p-1) blocks.\n"
    "#wrong: elements of the first call's result off the sum over ranks of the planted\n"
    "values (the k largest of each rank); approx: off every sum of a subset of them\n"
    "(its threshold keeps about k - k/8; where more than 16 ranks planted an index,\n"
    "off the integers within the sum of their magnitudes), or nonzero off the planted\n"
    "indices.\n";

typedef struct {
    size_t count;
    double ratio;
    size_t k;             /* round(ratio * count), at least 1 */
    int iters, warmup;
    sc_topk_mode_t mode;
    int values_fp16;
    int error_feedback;
    int threads;
    const char *json_path;
    uint64_t seed;
    int help;
} sc_bc_options_t;

/* One row: a method, over all ranks. */
typedef struct {
    const char *method;
    double time_ms, select_ms, scatter_ms;
    double sent_mb;
    int64_t wrong;
} sc_bc_row_t;

enum { SC_BC_OPT_RATIO = 256, SC_BC_OPT_ITERS, SC_BC_OPT_WARMUP, SC_BC_OPT_MODE,
       SC_BC_OPT_FP16, SC_BC_OPT_NO_EF, SC_BC_OPT_THREADS, SC_BC_OPT_JSON, SC_BC_OPT_SEED };

static const struct option sc_bc_long_options[] = {
    {"count", required_argument, NULL, 'n'},
    {"ratio", required_argument, NULL, SC_BC_OPT_RATIO},
    {"iters", required_argument, NULL, SC_BC_OPT_ITERS},
    {"warmup", required_argument, NULL, SC_BC_OPT_WARMUP},
    {"mode", required_argument, NULL, SC_BC_OPT_MODE},
    {"values-fp16", no_argument, NULL, SC_BC_OPT_FP16},
    {"no-error-feedback", no_argument, NULL, SC_BC_OPT_NO_EF},
    {"threads", required_argument, NULL, SC_BC_OPT_THREADS},
    {"json", required_argument, NULL, SC_BC_OPT_JSON},
    {"seed", required_argument, NULL, SC_BC_OPT_SEED},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int sc_bc_option_apply(int letter, const char *arg, sc_bc_options_t *o)
{
    long long v;

    switch (letter) {
    case 'n':
        return sc_bench_size_parse(arg, &o->count) != SC_SUCCESS;
    case SC_BC_OPT_RATIO:
        return sc_bench_ratio_parse(arg, &o->ratio) != SC_SUCCESS;
    case SC_BC_OPT_ITERS:
    case SC_BC_OPT_WARMUP:
    case SC_BC_OPT_THREADS:
        if (sc_bench_int_parse(arg, letter == SC_BC_OPT_ITERS ? 1 : 0,
                               letter == SC_BC_OPT_THREADS ? SC_THREADS_MAX : INT_MAX,
                               &v) != SC_SUCCESS)
            return 1;
        *(letter == SC_BC_OPT_ITERS ? &o->iters
          : letter == SC_BC_OPT_WARMUP ? &o->warmup : &o->threads) = (int)v;
        return 0;
    case SC_BC_OPT_MODE:
        if (strcmp(arg, "exact") && strcmp(arg, "approx"))
            return 1;
        o->mode = strcmp(arg, "exact") ? SC_TOPK_APPROX : SC_TOPK_EXACT;
        return 0;
    case SC_BC_OPT_FP16:
        o->values_fp16 = 1;
        return 0;
    case SC_BC_OPT_NO_EF:
        o->error_feedback = 0;
        return 0;
    case SC_BC_OPT_JSON:
        o->json_path = arg;
        return 0;
    case SC_BC_OPT_SEED:
        if (sc_bench_int_parse(arg, 0, LLONG_MAX, &v) != SC_SUCCESS)
            return 1;
        o->seed = (uint64_t)v;
        return 0;
    default:
        return 1;
    }
}

/* Parses argv (argv[0] is "compressed"); prints what is wrong to stderr. Returns 0 and
 * writes *opts, or 1. */
static int sc_bc_options_parse(int argc, char **argv, sc_bc_options_t *opts)
{
    sc_bc_options_t o = {.count = (size_t)25 << 20, .ratio = 0.01, .iters = 10, .warmup = 2,
                         .mode = SC_TOPK_EXACT, .error_feedback = 1, .seed = 1};
    int letter, index = 0;

    optind = 1;
    opterr = 0;
    while ((letter = getopt_long(argc, argv, "hn:", sc_bc_long_options, &index)) != -1) {
        if (letter == 'h') {
            fputs(sc_bc_usage_text, stdout);
            o.help = 1;
            *opts = o;
            return 0;
        }
        if (letter == '?' || letter == ':') {
            fprintf(stderr, "sc-bench compressed: unknown option or missing value in '%s' "
                            "(see sc-bench compressed --help)\n", argv[optind - 1]);
            return 1;
        }
        if (sc_bc_option_apply(letter, optarg, &o)) {
            fprintf(stderr, "sc-bench compressed: invalid value '%s' for %s%s (see sc-bench "
                            "compressed --help)\n", optarg ? optarg : "",
                    letter == 'n' ? "" : "--",
                    letter == 'n' ? "-n" : sc_bc_long_options[index].name);
            return 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sc-bench compressed: unexpected argument '%s' (see sc-bench "
                        "compressed --help)\n", argv[optind]);
        return 1;
    }
    /* The memory check's 4 buffers of -n floats would wrap around (to a fit, and to
     * buffers too small for the gradient). */
    if (o.count > SIZE_MAX / (4 * sizeof(float))) {
        fprintf(stderr, "sc-bench compressed: -n %zu: 4 buffers of %zu float32 are more than "
                        "the address space\n", o.count, o.count);
        return 1;
    }
    if (sc_bench_ratio_k("sc-bench compressed", o.ratio, o.count, stderr, &o.k) != SC_SUCCESS)
        return 1;
    *opts = o;
    return 0;
}

/* ---- the gradients ------------------------------------------------------------------ */

/* What every rank's gradient shares: k planted indices per rank, stride apart. */
typedef struct {
    size_t n, k, stride;
    uint64_t seed;
} sc_bc_data_t;

/* Planted index j of rank r: j * stride, shifted by 1 + r % (stride - 1) for odd j. */
static int sc_bc_planted(const sc_bc_data_t *d, int r, size_t i)
{
    size_t off = d->stride > 1 ? 1 + (size_t)r % (d->stride - 1) : 0, j;

    if (i % d->stride == 0 && (i / d->stride) % 2 == 0)
        return i / d->stride < d->k;
    if (i < off || (i - off) % d->stride != 0)
        return 0;
    j = (i - off) / d->stride;
    return j % 2 == 1 && j < d->k;
}

/* Element i of rank r: planted, +-(1024 + 0..1023); else in (-0.5, 0.5) in steps of
 * 1/256. Sums of up to 16 ranks' values are exact in float32. */
static float sc_bc_value(const sc_bc_data_t *d, int r, size_t i, int *planted)
{
    uint64_t h = sc_bench_mix(d->seed ^ ((uint64_t)r << 44) ^ i);

    *planted = sc_bc_planted(d, r, i);
    if (*planted)
        return (float)((h & 1 ? -1.0 : 1.0) * (1024 + (double)((h >> 1) % 1024)));
    return (float)(((double)((h >> 1) % 256) - 128) / 256.0);
}

/* What the first call's result is checked against: the sum over ranks of every value
 * (the dense all-reduce), of the planted ones (exact top-k), or of any subset of the
 * planted ones (approximate top-k, whose threshold keeps about k - k/8 of each rank's
 * largest across calls). */
typedef enum { SC_BC_ALL, SC_BC_PLANTED, SC_BC_PLANTED_SUBSET } sc_bc_expect_t;

/* Planted values of one index whose subset sums are checked exactly; past this many
 * ranks that planted it, a result passes as an integer within the sum of their
 * magnitudes. Half the values go into a bitset of their subsets' sums and the other
 * half's subsets are listed, about 2,500 operations per index at 16 (16 ranks of a 1M
 * gradient at --ratio 0.5, every index planted by all: 1.5 s of CPU per rank). */
#define SC_BC_SUBSET_EXACT 16
#define SC_BC_SUBSET_LISTED (SC_BC_SUBSET_EXACT - SC_BC_SUBSET_EXACT / 2)
/* Words of a bitset of the sums from -mag to mag, mag at most SC_BC_SUBSET_EXACT / 2
 * planted magnitudes of at most 2047 (sc_bc_value). */
#define SC_BC_SUBSET_WORDS ((2 * (SC_BC_SUBSET_EXACT / 2) * 2047) / 64 + 1)

/* reach |= reach shifted by s bits (towards the higher bits for s > 0), over words. */
static void sc_bc_reach_add(uint64_t *reach, size_t words, int64_t s)
{
    size_t q = (size_t)(s < 0 ? -s : s) / 64;
    unsigned b = (unsigned)((s < 0 ? -s : s) % 64);

    if (s > 0) {
        for (size_t w = words; w-- > q;) {
            uint64_t t = reach[w - q] << b;
            if (b && w > q)
                t |= reach[w - q - 1] >> (64 - b);
            reach[w] |= t;
        }
    } else {
        for (size_t w = 0; w + q < words; w++) {
            uint64_t t = reach[w + q] >> b;
            if (b && w + q + 1 < words)
                t |= reach[w + q + 1] << (64 - b);
            reach[w] |= t;
        }
    }
}

/* Whether got is the sum of a subset of the m planted integers v (the empty one
 * included), magnitudes summing to mag; past SC_BC_SUBSET_EXACT values, whether it is
 * an integer within mag. reach: SC_BC_SUBSET_WORDS words to work in. */
static int sc_bc_subset_sum(const int32_t *v, int m, int64_t mag, float got, uint64_t *reach)
{
    int64_t listed[1 << SC_BC_SUBSET_LISTED], half = 0;
    int h = m / 2, n = 1;
    size_t words;

    if (got != nearbyintf(got) || fabsf(got) > (float)mag)
        return 0;
    if (m > SC_BC_SUBSET_EXACT)
        return 1;
    for (int b = 0; b < h; b++)
        half += v[b] < 0 ? -(int64_t)v[b] : v[b];
    words = (size_t)(2 * half) / 64 + 1;
    memset(reach, 0, words * sizeof(reach[0]));
    reach[half / 64] = 1ull << (half % 64);
    for (int b = 0; b < h; b++)
        sc_bc_reach_add(reach, words, v[b]);
    listed[0] = 0;
    for (int b = h; b < m; b++, n *= 2)
        for (int i = 0; i < n; i++)
            listed[n + i] = listed[i] + v[b];
    for (int i = 0; i < n; i++) {
        int64_t x = (int64_t)got - listed[i] + half;
        if (x >= 0 && x <= 2 * half && ((reach[x / 64] >> (x % 64)) & 1))
            return 1;
    }
    return 0;
}

/* Elements of got off what expect allows. */
static int64_t sc_bc_check(const sc_bc_data_t *d, int p, const float *got,
                           sc_bc_expect_t expect)
{
    uint64_t reach[SC_BC_SUBSET_WORDS];
    int64_t wrong = 0;

    for (size_t i = 0; i < d->n; i++) {
        double all = 0, planted_sum = 0;
        int32_t v[SC_BC_SUBSET_EXACT];
        int64_t mag = 0;
        int m = 0, ok;

        for (int r = 0; r < p; r++) {
            int planted;
            float x = sc_bc_value(d, r, i, &planted);
            all += x;
            if (!planted)
                continue;
            if (m < SC_BC_SUBSET_EXACT)
                v[m] = (int32_t)x;
            m++;
            mag += (int64_t)fabsf(x);
            planted_sum += x;
        }
        ok = got[i] == (float)(expect == SC_BC_ALL ? all : planted_sum);
        if (expect == SC_BC_PLANTED_SUBSET && !ok)
            ok = sc_bc_subset_sum(v, m, mag, got[i], reach);
        wrong += !ok;
    }
    return wrong;
}

/* ---- timing ------------------------------------------------------------------------ */

/* A failed call's sentence, kept before later calls replace sc_last_error(). */
static char sc_bc_error[1024];

static sc_status_t sc_bc_fail(sc_status_t st, const char *what)
{
    snprintf(sc_bc_error, sizeof(sc_bc_error), "%s: %s: %s", what, sc_status_string(st),
             sc_last_error());
    return st;
}

/* One call of the method: compressor NULL for the dense all-reduce. */
static sc_status_t sc_bc_call(sc_comm_t *comm, sc_compressor_t *c, const float *g, float *out,
                              size_t n, double *select_s, double *scatter_s)
{
    sc_compress_stats_t s;
    sc_status_t st;

    if (!c) {
        st = sc_allreduce(g, out, n, SC_FLOAT32, SC_SUM, comm, NULL, NULL);
        return st == SC_SUCCESS ? st : sc_bc_fail(st, "sc_allreduce");
    }
    st = sc_compressed_allreduce(c, comm, 0, g, out, n, SC_FLOAT32, SC_SUM);
    if (st != SC_SUCCESS)
        return sc_bc_fail(st, "sc_compressed_allreduce");
    sc_compressor_stats(c, &s);
    *select_s += s.select_s;
    *scatter_s += s.scatter_s;
    return SC_SUCCESS;
}

/* The first call checked, warm-up calls, then the timed ones; fills row's times
 * (slowest rank) and wrong (summed over ranks). */
static sc_status_t sc_bc_measure(sc_comm_t *comm, const sc_bc_options_t *o,
                                 const sc_bc_data_t *d, sc_compressor_t *c, const float *g,
                                 float *out, sc_bc_row_t *row)
{
    int p = sc_comm_size(comm);
    double sel = 0, sca = 0, t0, mine[3], slowest[3];
    int64_t wrong;
    sc_compress_stats_t s;
    sc_status_t st;

    st = sc_bc_call(comm, c, g, out, d->n, &sel, &sca);
    if (st != SC_SUCCESS)
        return st;
    wrong = sc_bc_check(d, p, out, !c                           ? SC_BC_ALL
                                   : o->mode == SC_TOPK_APPROX ? SC_BC_PLANTED_SUBSET
                                                               : SC_BC_PLANTED);
    for (int i = 0; i < o->warmup; i++)
        if ((st = sc_bc_call(comm, c, g, out, d->n, &sel, &sca)) != SC_SUCCESS)
            return st;
    if ((st = sc_barrier(comm, NULL)) != SC_SUCCESS)
        return sc_bc_fail(st, "sc_barrier");
    sel = sca = 0;
    t0 = bench_now_s();
    for (int i = 0; i < o->iters; i++)
        if ((st = sc_bc_call(comm, c, g, out, d->n, &sel, &sca)) != SC_SUCCESS)
            return st;
    mine[0] = (bench_now_s() - t0) / o->iters;
    mine[1] = sel / o->iters;
    mine[2] = sca / o->iters;
    if ((st = sc_allreduce(mine, slowest, 3, SC_FLOAT64, SC_MAX, comm, NULL, NULL)) ||
        (st = sc_allreduce(&wrong, &row->wrong, 1, SC_INT64, SC_SUM, comm, NULL, NULL)))
        return sc_bc_fail(st, "sc_allreduce of the results");
    row->time_ms = slowest[0] * 1e3;
    row->select_ms = c ? slowest[1] * 1e3 : -1;
    row->scatter_ms = c ? slowest[2] * 1e3 : -1;
    if (c) {
        sc_compressor_stats(c, &s);
        row->sent_mb = (double)s.bytes_sent * 1e-6;
    } else {
        row->sent_mb = 2.0 * (p - 1) / p * (double)d->n * sizeof(float) * 1e-6;
    }
    return SC_SUCCESS;
}

/* ---- output ------------------------------------------------------------------------ */

static void sc_bc_print(const sc_bc_options_t *o, const sc_bc_data_t *d, int p,
                        const sc_bc_row_t *rows, int argc, char **argv)
{
    printf("# sc-bench");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n# nranks %d, %zu float32 (%.1f MB), density %g (k %zu), %s selection, values "
           "%s, error feedback %s, iters %d, warmup %d, seed %" PRIu64 "\n#\n", p, d->n,
           (double)d->n * 4e-6, o->ratio, d->k, o->mode == SC_TOPK_EXACT ? "exact" : "approx",
           o->values_fp16 ? "float16" : "float32", o->error_feedback ? "on" : "off", o->iters,
           o->warmup, o->seed);
    printf("# %10s %10s %10s %10s %10s %8s %7s\n", "method", "time_ms", "select_ms",
           "scatter_ms", "sent_MB", "speedup", "#wrong");
    for (int i = 0; i < 2; i++) {
        char sel[32] = "-", sca[32] = "-";
        if (rows[i].select_ms >= 0) {
            snprintf(sel, sizeof(sel), "%.2f", rows[i].select_ms);
            snprintf(sca, sizeof(sca), "%.2f", rows[i].scatter_ms);
        }
        printf("  %10s %10.2f %10s %10s %10.3f %8.2f %7" PRId64 "\n", rows[i].method,
               rows[i].time_ms, sel, sca, rows[i].sent_mb, rows[0].time_ms / rows[i].time_ms,
               rows[i].wrong);
    }
    fflush(stdout);
}

/* The rows as JSON into f, opened before the run (sc_bench_output_open_root). */
static void sc_bc_json_write(FILE *f, const sc_bc_options_t *o, const sc_bc_data_t *d, int p,
                             const sc_bc_row_t *rows)
{
    fputs("[\n", f);
    for (int i = 0; i < 2; i++) {
        /* The dense all-reduce selects and scatters nothing: null, as the table's "-". */
        char sel[32] = "null", sca[32] = "null";

        if (rows[i].select_ms >= 0) {
            snprintf(sel, sizeof(sel), "%.6g", rows[i].select_ms);
            snprintf(sca, sizeof(sca), "%.6g", rows[i].scatter_ms);
        }
        fprintf(f, "  {\"method\": \"%s\", \"nranks\": %d, \"count\": %zu, \"density\": %g, "
                   "\"k\": %zu, \"mode\": \"%s\", \"values\": \"%s\", \"error_feedback\": %s, "
                   "\"time_ms\": %.6g, "
                   "\"select_ms\": %s, \"scatter_ms\": %s, \"sent_mb\": %.6g, "
                   "\"speedup\": %.6g, \"wrong\": %" PRId64 "}%s\n",
                rows[i].method, p, d->n, o->ratio, d->k,
                o->mode == SC_TOPK_EXACT ? "exact" : "approx",
                o->values_fp16 ? "float16" : "float32", o->error_feedback ? "true" : "false",
                rows[i].time_ms, sel, sca, rows[i].sent_mb, rows[0].time_ms / rows[i].time_ms,
                rows[i].wrong, i ? "" : ",");
    }
    fputs("]\n", f);
}

int sc_bench_compressed_main(int argc, char **argv)
{
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
    sc_bc_row_t rows[2] = {{"dense", 0, 0, 0, 0, 0}, {"topk", 0, 0, 0, 0, 0}};
    sc_compressor_t *c = NULL;
    sc_bc_options_t o;
    sc_bc_data_t d;
    sc_comm_t *comm;
    sc_bench_output_t *json = NULL;
    float *g = NULL, *out = NULL;
    int rank, p, exit_code = 1;
    sc_status_t st;

    if (sc_bc_options_parse(argc, argv, &o))
        return 2;
    if (o.help)
        return 0;
    st = sc_comm_init_from_env(&comm);
    if (st != SC_SUCCESS) {
        fprintf(stderr, "sc-bench compressed: sc_comm_init_from_env: %s: %s\n",
                sc_status_string(st), sc_last_error());
        return 1;
    }
    rank = sc_comm_rank(comm);
    p = sc_comm_size(comm);
    /* No operand for getopt to move: the arguments in the order given. */
    exit_code = sc_bench_same_command(comm, "sc-bench compressed", argc - 1, argv + 1);
    if (exit_code != 0)
        goto out;
    /* Before anything is measured: an unwritable --json fails every rank at once. */
    exit_code = sc_bench_output_open_root(comm, o.json_path, &json);
    if (exit_code != 0)
        goto out;
    exit_code = 1;
    d.n = o.count;
    d.k = o.k;
    d.stride = d.n / d.k;
    d.seed = o.seed;
    cfg.density = o.ratio;
    cfg.mode = o.mode;
    cfg.values_fp16 = o.values_fp16;
    cfg.error_feedback = o.error_feedback;
    cfg.threads = o.threads;
    /* The gradient and the result here; the compressor's residual and its scratch v. */
    if (!sc_bench_memory_fits("sc-bench compressed", rank, "-n", 4 * d.n * sizeof(float),
                              sc_comm_local_size(comm)))
        goto out;
    g = malloc(d.n * sizeof(float));
    out = malloc(d.n * sizeof(float));
    if (!g || !out) {
        fprintf(stderr, "sc-bench compressed: rank %d: cannot allocate 2 x %zu floats\n", rank,
                d.n);
        goto out;
    }
    for (size_t i = 0; i < d.n; i++) {
        int planted;
        g[i] = sc_bc_value(&d, rank, i, &planted);
    }
    memset(out, 0, d.n * sizeof(float));
    st = sc_compressor_create(&cfg, &c);
    if (st != SC_SUCCESS)
        sc_bc_fail(st, "sc_compressor_create");
    else
        st = sc_bc_measure(comm, &o, &d, NULL, g, out, &rows[0]);
    if (st == SC_SUCCESS)
        st = sc_bc_measure(comm, &o, &d, c, g, out, &rows[1]);
    if (st != SC_SUCCESS) {
        fprintf(stderr, "sc-bench compressed: rank %d: %s\n", rank, sc_bc_error);
        sc_comm_abort(comm);
        goto out;
    }
    exit_code = rows[0].wrong || rows[1].wrong;
    if (rank == 0)
        sc_bc_print(&o, &d, p, rows, argc, argv);
    if (json) {
        sc_bc_json_write(json->f, &o, &d, p, rows);
        exit_code |= sc_bench_output_commit(json);
        json = NULL;
    }
out:
    sc_bench_output_discard(json); /* a failed run: the file keeps what it held */
    sc_compressor_destroy(c);
    free(g);
    free(out);
    sc_comm_destroy(comm);
    return exit_code;
}
