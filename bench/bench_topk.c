/* sc-bench topk: the time of one top-k selection (shardcomm/compress.h) of COUNT
 * elements at density R, per selection mode, in ms and GB/s of input scanned; every
 * mode's result is checked once, untimed, against the input: exact against the
 * magnitude order with ties by the lowest index, approximate and random for their own
 * rules. Single process; no communicator. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_data.h"
#include "bench_device.h"
#include "bench_memory.h"
#include "bench_options.h"
#include "bench_output.h"
#include "bench_time.h"
#include "bench_topk.h"
#include "shardcomm/shardcomm.h"

static const char sc_bt_usage_text[] =
    "usage: sc-bench topk -n COUNT --ratio R [options]   (one process, no scrun)\n"
    "  -n, --count COUNT   elements; K/M/G suffixes, 1M = 2^20 (default 25M)\n"
    "      --ratio R       k = round(R * COUNT), (0, 1], k >= 1 (default 0.01)\n"
    "      --mode MODE     exact, approx, random or all (default all)\n"
    "      --threads T     selection threads (default: SC_THREADS or the bound cores)\n"
    "  -d, --dtype TYPE    float32 (default), float64, float16, bfloat16\n"
    "      --input FILE    raw float32 values to select from, a regular file of whole\n"
    "                      values (COUNT taken from its size unless -n is given);\n"
    "                      default: generated, seed --seed\n"
    "      --device        the input on the GPU, the selection on a CUDA stream\n"
    "      --iters N       timed selections per mode (default 10)\n"
    "      --warmup W      untimed selections first (default 2)\n"
    "      --json FILE     also write the rows to FILE as JSON\n"
    "      --indices-out FILE  write the last selection's indices there (raw uint32;\n"
    "                      one --mode only)\n"
    "      --seed S        seed of the generated values (default 1)\n"
    "  -h, --help          this text\n"
    "min_ms / median_ms: one selection, over the timed ones; GB/s: input bytes / median.\n";

typedef struct {
    size_t count;
    int count_given;
    double ratio;
    size_t k;             /* round(ratio * count), set once count is known */
    int modes;            /* bit per sc_topk_mode_t */
    int threads;
    sc_dtype_t dtype;
    const char *input;
    int device;
    int iters, warmup;
    const char *json_path;
    const char *indices_out;
    uint64_t seed;
    int help;
} sc_bt_options_t;

typedef struct {
    sc_topk_mode_t mode;
    size_t selected;
    double min_ms, median_ms, gbps;
    int ok;
} sc_bt_row_t;

enum { SC_BT_OPT_RATIO = 256, SC_BT_OPT_MODE, SC_BT_OPT_THREADS, SC_BT_OPT_INPUT,
       SC_BT_OPT_DEVICE, SC_BT_OPT_ITERS, SC_BT_OPT_WARMUP, SC_BT_OPT_JSON, SC_BT_OPT_SEED,
       SC_BT_OPT_INDICES_OUT };

static const struct option sc_bt_long_options[] = {
    {"count", required_argument, NULL, 'n'},
    {"ratio", required_argument, NULL, SC_BT_OPT_RATIO},
    {"mode", required_argument, NULL, SC_BT_OPT_MODE},
    {"threads", required_argument, NULL, SC_BT_OPT_THREADS},
    {"dtype", required_argument, NULL, 'd'},
    {"input", required_argument, NULL, SC_BT_OPT_INPUT},
    {"device", no_argument, NULL, SC_BT_OPT_DEVICE},
    {"iters", required_argument, NULL, SC_BT_OPT_ITERS},
    {"warmup", required_argument, NULL, SC_BT_OPT_WARMUP},
    {"json", required_argument, NULL, SC_BT_OPT_JSON},
    {"seed", required_argument, NULL, SC_BT_OPT_SEED},
    {"indices-out", required_argument, NULL, SC_BT_OPT_INDICES_OUT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const char *const sc_bt_mode_names[] = {"exact", "approx", "random"};

static int sc_bt_option_apply(int letter, const char *arg, sc_bt_options_t *o)
{
    long long v;

    switch (letter) {
    case 'n':
        o->count_given = 1;
        return sc_bench_size_parse(arg, &o->count) != SC_SUCCESS;
    case 'd':
        return sc_dtype_from_name(arg, &o->dtype) != SC_SUCCESS ||
               !(o->dtype == SC_FLOAT32 || o->dtype == SC_FLOAT64 || o->dtype == SC_FLOAT16 ||
                 o->dtype == SC_BFLOAT16);
    case SC_BT_OPT_RATIO:
        return sc_bench_ratio_parse(arg, &o->ratio) != SC_SUCCESS;
    case SC_BT_OPT_MODE:
        if (strcmp(arg, "all") == 0) {
            o->modes = 7;
            return 0;
        }
        for (int m = 0; m < 3; m++)
            if (strcmp(arg, sc_bt_mode_names[m]) == 0) {
                o->modes = 1 << m;
                return 0;
            }
        return 1;
    case SC_BT_OPT_THREADS:
    case SC_BT_OPT_ITERS:
    case SC_BT_OPT_WARMUP:
    case SC_BT_OPT_SEED:
        if (sc_bench_int_parse(arg, letter == SC_BT_OPT_ITERS ? 1 : 0,
                               letter == SC_BT_OPT_THREADS ? SC_THREADS_MAX : INT_MAX,
                               &v) != SC_SUCCESS)
            return 1;
        if (letter == SC_BT_OPT_SEED)
            o->seed = (uint64_t)v;
        else
            *(letter == SC_BT_OPT_THREADS ? &o->threads
              : letter == SC_BT_OPT_ITERS ? &o->iters : &o->warmup) = (int)v;
        return 0;
    case SC_BT_OPT_INPUT:
        o->input = arg;
        return 0;
    case SC_BT_OPT_DEVICE:
        o->device = 1;
        return 0;
    case SC_BT_OPT_JSON:
        o->json_path = arg;
        return 0;
    case SC_BT_OPT_INDICES_OUT:
        o->indices_out = arg;
        return 0;
    default:
        return 1;
    }
}

/* "--ratio", "-n", ...: the option letter's name, for sentences. */
static const char *sc_bt_option_name(int letter)
{
    static char name[40];

    if (letter < 256) {
        snprintf(name, sizeof name, "-%c", letter);
        return name;
    }
    for (const struct option *p = sc_bt_long_options; p->name; p++)
        if (p->val == letter) {
            snprintf(name, sizeof name, "--%s", p->name);
            return name;
        }
    return "an option";
}

static int sc_bt_parse(int argc, char **argv, sc_bt_options_t *o)
{
    int letter;

    *o = (sc_bt_options_t){.count = (size_t)25 << 20, .ratio = 0.01, .modes = 7,
                           .dtype = SC_FLOAT32, .iters = 10, .warmup = 2, .seed = 1};
    optind = 1;
    opterr = 0;
    while ((letter = getopt_long(argc, argv, "n:d:h", sc_bt_long_options, NULL)) != -1) {
        if (letter == 'h') {
            o->help = 1;
            return 0;
        }
        if (letter == '?' || letter == ':') {
            fprintf(stderr, "sc-bench topk: unknown option or missing value in \"%s\" (see "
                            "sc-bench topk --help)\n", argv[optind - 1]);
            return 2;
        }
        if (sc_bt_option_apply(letter, optarg, o)) {
            fprintf(stderr, "sc-bench topk: invalid value \"%s\" for %s (see sc-bench topk "
                            "--help)\n", optarg ? optarg : "", sc_bt_option_name(letter));
            return 2;
        }
    }
    /* The selection takes at most 2^32 elements (32-bit indices): refused here, before
     * the input is allocated and generated. */
    if ((uint64_t)o->count > ((uint64_t)1 << 32)) {
        fprintf(stderr, "sc-bench topk: -n %zu is more than the 2^32 elements a selection "
                        "takes\n", o->count);
        return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "sc-bench topk: unexpected argument \"%s\"\n%s", argv[optind],
                sc_bt_usage_text);
        return 2;
    }
    if (o->indices_out && o->modes != 1 && o->modes != 2 && o->modes != 4) {
        fprintf(stderr, "sc-bench topk: --indices-out needs one --mode\n");
        return 2;
    }
    if (o->input && o->dtype != SC_FLOAT32) {
        fprintf(stderr, "sc-bench topk: --input holds float32 values; -d must be float32\n");
        return 2;
    }
    return 0;
}

/* Gradient-like values: a sum of four uniforms (about normal), scaled. */
static void sc_bt_generate(void *x, sc_dtype_t dtype, size_t n, uint64_t seed)
{
    const size_t block = 4096;
    float f[4096];

    for (size_t i = 0; i < n; i += block) {
        size_t m = n - i < block ? n - i : block;
        for (size_t j = 0; j < m; j++) {
            uint64_t h = sc_bench_mix(seed * 0x9e3779b97f4a7c15ull + i + j);
            double s = 0.0;
            for (int q = 0; q < 4; q++)
                s += (double)((h >> (16 * q)) & 0xffff) / 65536.0;
            f[j] = (float)((s - 2.0) * 1e-3);
        }
        if (dtype == SC_FLOAT64)
            for (size_t j = 0; j < m; j++)
                ((double *)x)[i + j] = f[j];
        else
            sc_cast(f, SC_FLOAT32, (char *)x + i * sc_dtype_size(dtype), dtype, m, 1.0f, NULL);
    }
}

/* Whether path, opened as f, can hold the input: a regular file of whole float32
 * values, at least count of them when -n was given; else says why. */
static int sc_bt_input_usable(const char *path, FILE *f, const sc_bt_options_t *o,
                              size_t *bytes)
{
    struct stat st;

    if (fstat(fileno(f), &st) != 0) {
        fprintf(stderr, "sc-bench topk: cannot stat --input %s: %s\n", path, strerror(errno));
        return 0;
    }
    if (S_ISDIR(st.st_mode))
        fprintf(stderr, "sc-bench topk: --input %s is a directory\n", path);
    else if (!S_ISREG(st.st_mode))
        fprintf(stderr, "sc-bench topk: --input %s is not a regular file\n", path);
    else if (st.st_size == 0)
        fprintf(stderr, "sc-bench topk: --input %s is empty\n", path);
    else if (st.st_size % (off_t)sizeof(float) != 0)
        fprintf(stderr, "sc-bench topk: --input %s holds %lld bytes, not a multiple of %zu\n",
                path, (long long)st.st_size, sizeof(float));
    else if (o->count_given && o->count > (size_t)st.st_size / sizeof(float))
        fprintf(stderr, "sc-bench topk: --input %s holds %lld bytes, %zu float32 were asked "
                "for\n", path, (long long)st.st_size, o->count);
    else {
        *bytes = (size_t)st.st_size;
        return 1;
    }
    return 0;
}

/* Reads the --input values (all of them unless -n was given) into *x. Returns 0; 2
 * when the file cannot be the input (said why); 1 when reading it fails. */
static int sc_bt_read_input(const char *path, sc_bt_options_t *o, void **x)
{
    FILE *f = fopen(path, "rb");
    size_t bytes, want;
    void *buf = NULL;
    int rc = 2;

    if (!f) {
        fprintf(stderr, "sc-bench topk: cannot open --input %s: %s\n", path, strerror(errno));
        return 2;
    }
    if (!sc_bt_input_usable(path, f, o, &bytes))
        goto out;
    if (!o->count_given)
        o->count = bytes / sizeof(float);
    want = o->count * sizeof(float);
    rc = 1;
    buf = malloc(want);
    if (!buf) {
        fprintf(stderr, "sc-bench topk: out of memory for %zu elements\n", o->count);
        goto out;
    }
    if (fread(buf, 1, want, f) != want) {
        fprintf(stderr, "sc-bench topk: cannot read --input %s: %s\n", path,
                ferror(f) ? strerror(errno) : "the file got shorter");
        free(buf);
        goto out;
    }
    *x = buf;
    rc = 0;
out:
    fclose(f);
    return rc;
}

/* The magnitude key the selection orders by: the absolute value's bits, all NaNs one key
 * above infinity. Written independently of the library. */
static uint64_t sc_bt_key(const void *x, sc_dtype_t dtype, size_t i)
{
    switch (dtype) {
    case SC_FLOAT64: {
        uint64_t b;
        memcpy(&b, (const double *)x + i, 8);
        b &= 0x7fffffffffffffffull;
        return b > 0x7ff0000000000000ull ? 0x7ff0000000000001ull : b;
    }
    case SC_FLOAT32: {
        uint32_t b;
        memcpy(&b, (const float *)x + i, 4);
        b &= 0x7fffffffu;
        return b > 0x7f800000u ? 0x7f800001u : b;
    }
    default: {
        uint16_t b = ((const uint16_t *)x)[i] & 0x7fffu;
        uint16_t inf = dtype == SC_FLOAT16 ? 0x7c00u : 0x7f80u;
        return b > inf ? (uint64_t)inf + 1 : b;
    }
    }
}

/* The rules of the mode on (indices, values, sel) against x; 1 when they hold. */
static int sc_bt_check(sc_topk_mode_t mode, const void *x, sc_dtype_t dtype, size_t n,
                       size_t k, const uint32_t *idx, const void *vals, size_t sel)
{
    size_t es = sc_dtype_size(dtype);
    uint8_t *mark;
    uint64_t kth = UINT64_MAX, above_max = 0;
    size_t last_tie = 0;
    int ok = 1, have_kth = 0;

    if (sel > k || (mode != SC_TOPK_APPROX && sel != k))
        return 0;
    mark = calloc(n ? n : 1, 1);
    if (!mark)
        return 0;
    for (size_t j = 0; j < sel && ok; j++) {
        ok = idx[j] < n && (j == 0 || idx[j] > idx[j - 1]) &&
             memcmp((const char *)vals + j * es, (const char *)x + idx[j] * es, es) == 0;
        if (ok)
            mark[idx[j]] = 1;
    }
    if (ok && mode == SC_TOPK_EXACT && sel > 0) {
        /* Every selected key >= every unselected one; at the k-th key, the selected ties
         * come before the unselected ones. */
        for (size_t j = 0; j < sel; j++) {
            uint64_t key = sc_bt_key(x, dtype, idx[j]);
            if (!have_kth || key < kth)
                kth = key, have_kth = 1;
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t key = sc_bt_key(x, dtype, i);
            if (mark[i] && key == kth)
                last_tie = i;
            if (!mark[i] && key > above_max)
                above_max = key;
        }
        ok = above_max <= kth;
        for (size_t i = 0; ok && i < last_tie; i++)
            ok = mark[i] || sc_bt_key(x, dtype, i) != kth;
    }
    free(mark);
    return ok;
}

/* One mode: warm-up, timed selections, then the check of the last one, whose indices
 * go to indices when given (its write errors are found when it is closed). */
static int sc_bt_run_mode(const sc_bt_options_t *o, sc_topk_mode_t mode, const void *x,
                          sc_bench_device_t *dev, FILE *indices, sc_bt_row_t *row)
{
    sc_topk_config_t cfg = SC_TOPK_CONFIG_INIT;
    size_t n = o->count, es = sc_dtype_size(o->dtype), k = o->k;
    const void *in = dev ? sc_bench_device_buffer(dev, 0) : x;
    uint32_t *idx = malloc((k ? k : 1) * sizeof(uint32_t));
    void *vals = malloc((k ? k : 1) * es);
    void *didx = dev ? sc_bench_device_buffer(dev, 1) : idx;
    void *dvals = dev ? (char *)sc_bench_device_buffer(dev, 1) + k * sizeof(uint32_t) : vals;
    double *t = calloc((size_t)o->iters, sizeof(double));
    sc_topk_t *topk = NULL;
    sc_status_t st = SC_ERR_NO_MEMORY;
    size_t sel = 0;

    if (!idx || !vals || !t)
        goto out;
    cfg.mode = mode;
    cfg.threads = o->threads;
    cfg.seed = o->seed;
    st = sc_topk_create(&cfg, &topk);
    for (int i = 0; st == SC_SUCCESS && i < o->warmup + o->iters; i++) {
        double t0 = bench_now_s();
        st = sc_topk_select(topk, in, o->dtype, n, k, 32, didx, dvals, &sel,
                            dev ? sc_bench_device_stream(dev) : NULL);
        if (st == SC_SUCCESS && dev && sc_bench_device_sync(dev) != SC_SUCCESS) {
            fprintf(stderr, "sc-bench topk: %s\n", sc_bench_device_error());
            goto out;
        }
        if (i >= o->warmup)
            t[i - o->warmup] = bench_now_s() - t0;
    }
    if (st != SC_SUCCESS)
        goto out;
    if (dev && (sc_bench_device_copy(dev, idx, didx, sel * sizeof(uint32_t)) != SC_SUCCESS ||
                sc_bench_device_copy(dev, vals, dvals, sel * es) != SC_SUCCESS)) {
        fprintf(stderr, "sc-bench topk: %s\n", sc_bench_device_error());
        st = SC_ERR_DEVICE;
        goto out;
    }
    qsort(t, (size_t)o->iters, sizeof(double), bench_cmp_double);
    row->mode = mode;
    row->selected = sel;
    row->min_ms = t[0] * 1e3;
    row->median_ms = t[o->iters / 2] * 1e3;
    row->gbps = (double)(n * es) / t[o->iters / 2] * 1e-9;
    row->ok = sc_bt_check(mode, x, o->dtype, n, k, idx, vals, sel);
    if (indices)
        fwrite(idx, sizeof(uint32_t), sel, indices);
out:
    if (st != SC_SUCCESS)
        fprintf(stderr, "sc-bench topk: %s mode: %s: %s\n", sc_bt_mode_names[mode],
                sc_status_string(st), sc_last_error());
    sc_topk_destroy(topk);
    free(idx);
    free(vals);
    free(t);
    return st == SC_SUCCESS ? 0 : 1;
}

/* The rows as JSON into f, opened before the run (sc_bench_output_open). */
static void sc_bt_json(FILE *f, const sc_bt_options_t *o, const sc_bt_row_t *rows, int nrows)
{
    fprintf(f, "{\"count\": %zu, \"ratio\": %g, \"k\": %zu, \"dtype\": \"%s\", \"threads\": "
               "%d, \"device\": %s, \"rows\": [",
            o->count, o->ratio, o->k, sc_dtype_name(o->dtype),
            o->threads, o->device ? "true" : "false");
    for (int r = 0; r < nrows; r++)
        fprintf(f, "%s{\"mode\": \"%s\", \"selected\": %zu, \"min_ms\": %.6g, \"median_ms\": "
                   "%.6g, \"gbps\": %.6g, \"check\": %s}",
                r ? ", " : "", sc_bt_mode_names[rows[r].mode], rows[r].selected,
                rows[r].min_ms, rows[r].median_ms, rows[r].gbps, rows[r].ok ? "true" : "false");
    fprintf(f, "]}\n");
}

int sc_bench_topk_main(int argc, char **argv)
{
    sc_bt_options_t o;
    sc_bt_row_t rows[3];
    sc_bench_device_t *dev = NULL;
    sc_bench_output_t *json = NULL, *indices = NULL;
    void *x = NULL;
    int rc = sc_bt_parse(argc, argv, &o), nrows = 0, failed = 0;

    if (rc || o.help) {
        if (o.help)
            fputs(sc_bt_usage_text, stdout);
        return rc;
    }
    if (o.input && (rc = sc_bt_read_input(o.input, &o, &x)) != 0)
        return rc;
    rc = 2;
    if (sc_bench_ratio_k("sc-bench topk", o.ratio, o.count, stderr, &o.k) != SC_SUCCESS)
        goto err_free_x;
    /* Before anything is measured: an output that cannot be written is a usage error. */
    if (o.json_path && !(json = sc_bench_output_open(o.json_path)))
        goto err_free_x;
    if (o.indices_out && !(indices = sc_bench_output_open(o.indices_out)))
        goto err_close_json;
    rc = 1;
    /* Refused before it is allocated, as sc-bench's buffers are: the generated input
     * and the check's mark per element. */
    if (!x && !sc_bench_memory_fits("sc-bench topk", 0, "the input and its check",
                                    o.count * (sc_dtype_size(o.dtype) + 1), 1))
        goto err_close_indices;
    if (!x) {
        x = malloc(o.count * sc_dtype_size(o.dtype) + 1);
        if (!x) {
            fprintf(stderr, "sc-bench topk: out of memory for %zu elements\n", o.count);
            goto err_close_indices;
        }
        sc_bt_generate(x, o.dtype, o.count, o.seed);
    }
    if (o.device) {
        size_t in = o.count * sc_dtype_size(o.dtype);
        size_t out = o.k * (sizeof(uint32_t) + sc_dtype_size(o.dtype));
        if (sc_bench_device_open(0, in > out ? in : out, &dev) != SC_SUCCESS ||
            sc_bench_device_copy(dev, sc_bench_device_buffer(dev, 0), x, in) != SC_SUCCESS) {
            fprintf(stderr, "sc-bench topk: %s\n", sc_bench_device_error());
            goto err_close_device;
        }
    }
    printf("# sc-bench topk: %zu %s elements%s, k = %zu (ratio %g), threads %d (0: the "
           "library's), %d timed selections after %d\n",
           o.count, sc_dtype_name(o.dtype), o.input ? " from the input file" : "", o.k, o.ratio,
           o.threads, o.iters, o.warmup);
    if (dev)
        printf("# on %s\n", sc_bench_device_name(dev));
    printf("#   mode   selected     min_ms  median_ms     GB/s  check\n");
    for (int m = 0; m < 3; m++) {
        if (!(o.modes & (1 << m)))
            continue;
        if (sc_bt_run_mode(&o, (sc_topk_mode_t)m, x, dev, indices ? indices->f : NULL,
                           &rows[nrows])) {
            failed = 1;
            continue;
        }
        printf("%8s %10zu %10.3f %10.3f %8.2f  %s\n", sc_bt_mode_names[m],
               rows[nrows].selected, rows[nrows].min_ms, rows[nrows].median_ms,
               rows[nrows].gbps, rows[nrows].ok ? "ok" : "WRONG");
        failed |= !rows[nrows].ok;
        nrows++;
    }
    fflush(stdout); /* the rows before any message about the files */
    /* The files are put in place only when every mode ran and checked out (an earlier
     * run's file stays otherwise, as in the other modes); a write error is a failure of
     * its own. */
    if (!failed) {
        if (json)
            sc_bt_json(json->f, &o, rows, nrows);
        failed |= sc_bench_output_commit(json);
        failed |= sc_bench_output_commit(indices);
        json = indices = NULL;
    }
    rc = failed;

err_close_device:
    sc_bench_device_close(dev);
err_close_indices:
    sc_bench_output_discard(indices);
err_close_json:
    sc_bench_output_discard(json);
err_free_x:
    free(x);
    return rc;
}
