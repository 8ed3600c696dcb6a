/* sc-bench kernels: times each mixed-precision kernel (sc_cast, sc_check_finite,
 * sc_unscale_check) at one size, on host buffers (the host twins, wall clock) or with
 * --device on GPU buffers and a CUDA stream (CUDA events), next to a copy of the same
 * bytes timed in the same run (memcpy, or cudaMemcpyAsync device to device). */
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SC_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "bench_kernels.h"
#include "bench_options.h"
#include "bench_output.h"
#include "bench_time.h"
#include "shardcomm/shardcomm.h"

static const char sc_bk_usage_text[] =
    "usage: sc-bench kernels [options]   (one process, no scrun)\n"
    "  -b, --bytes SIZE         float32 input of each kernel (default 256M); K/M/G\n"
    "                           suffixes, 1K = 1024; float16/bfloat16 inputs hold the\n"
    "                           same number of elements\n"
    "  -n, --iters N            timed calls per kernel (default 20)\n"
    "  -w, --warmup_iters N     untimed calls before (default 5)\n"
    "      --device             device buffers on GPU 0 and one CUDA stream, timed\n"
    "                           with CUDA events (default: host buffers, wall clock)\n"
    "      --json FILE          also write the rows to FILE as JSON\n"
    "  -h, --help               this text\n"
    "bytes counts what a kernel reads and writes; GB/s is bytes / time (1 GB = 1e9 B);\n"
    "ratio compares it with a copy that reads and writes as many bytes.\n";

typedef enum { SC_BK_CAST, SC_BK_CHECK, SC_BK_UNSCALE } sc_bk_kind_t;

typedef struct {
    sc_bk_kind_t kind;
    sc_dtype_t src, dst; /* dst == src for the check and unscale */
    float scale;         /* unscale alternates scale and 1 / scale, exact powers of 2 */
} sc_bk_case_t;

static const sc_bk_case_t sc_bk_cases[] = {
    {SC_BK_CAST, SC_FLOAT32, SC_FLOAT16, 1.0f},
    {SC_BK_CAST, SC_FLOAT32, SC_BFLOAT16, 1.0f},
    {SC_BK_CAST, SC_FLOAT16, SC_FLOAT32, 1.0f},
    {SC_BK_CAST, SC_BFLOAT16, SC_FLOAT32, 1.0f},
    {SC_BK_CAST, SC_FLOAT32, SC_FLOAT16, 1024.0f},
    {SC_BK_CAST, SC_FLOAT32, SC_BFLOAT16, 1024.0f},
    {SC_BK_CAST, SC_FLOAT16, SC_FLOAT32, 0x1p-10f},
    {SC_BK_CAST, SC_BFLOAT16, SC_FLOAT32, 0x1p-10f},
    {SC_BK_CAST, SC_FLOAT32, SC_FLOAT32, 0.5f},
    {SC_BK_CHECK, SC_FLOAT32, SC_FLOAT32, 1.0f},
    {SC_BK_CHECK, SC_FLOAT16, SC_FLOAT16, 1.0f},
    {SC_BK_CHECK, SC_BFLOAT16, SC_BFLOAT16, 1.0f},
    {SC_BK_UNSCALE, SC_FLOAT32, SC_FLOAT32, 0.5f},
    {SC_BK_UNSCALE, SC_FLOAT16, SC_FLOAT16, 0.5f},
    {SC_BK_UNSCALE, SC_BFLOAT16, SC_BFLOAT16, 0.5f},
};
#define SC_BK_NCASES (sizeof(sc_bk_cases) / sizeof(sc_bk_cases[0]))

typedef struct {
    size_t bytes;          /* -b, default 256M */
    int iters;             /* -n, default 20 */
    int warmup;            /* -w, default 5 */
    int device;            /* --device */
    const char *json_path; /* --json FILE */
    int help;
} sc_bk_options_t;

typedef struct {
    const sc_bk_case_t *c;
    size_t bytes;
    double time_us, gbps, copy_gbps;
} sc_bk_row_t;

/* The buffers of a run, all host or all on GPU 0, and its clock. */
typedef struct {
    int device;
    size_t count;
    void *src[3];   /* the input as float32, float16 and bfloat16 (sc_bk_fmt) */
    void *dst;      /* count float32 of output, and the unscaled buffer */
    int32_t *flag;
    void *stream;   /* cudaStream_t with --device */
    char name[256]; /* "host" or the GPU */
#ifdef SC_HAVE_CUDA
    cudaEvent_t start, stop;
#endif
    double host_start;
} sc_bk_mem_t;

static char sc_bk_error[1024];

static int sc_bk_fmt(sc_dtype_t t)
{
    return t == SC_FLOAT16 ? 1 : t == SC_BFLOAT16 ? 2 : 0;
}

static const char *sc_bk_kind_name(sc_bk_kind_t k)
{
    return k == SC_BK_CAST ? "cast" : k == SC_BK_CHECK ? "check_finite" : "unscale_check";
}

/* Bytes a call reads and writes. */
static size_t sc_bk_case_bytes(const sc_bk_case_t *c, size_t count)
{
    size_t s = sc_dtype_size(c->src), d = sc_dtype_size(c->dst);

    return c->kind == SC_BK_CAST ? count * (s + d) : c->kind == SC_BK_CHECK ? count * s
                                                                            : 2 * count * s;
}

static void sc_bk_label(const sc_bk_case_t *c, char *buf, size_t len)
{
    if (c->kind == SC_BK_CAST && c->scale != 1.0f)
        snprintf(buf, len, "cast %s->%s %s%g", sc_dtype_name(c->src), sc_dtype_name(c->dst),
                 c->scale < 1.0f ? "/" : "*",
                 c->scale < 1.0f ? 1.0 / (double)c->scale : (double)c->scale);
    else if (c->kind == SC_BK_CAST)
        snprintf(buf, len, "cast %s->%s", sc_dtype_name(c->src), sc_dtype_name(c->dst));
    else
        snprintf(buf, len, "%s %s", sc_bk_kind_name(c->kind), sc_dtype_name(c->src));
}

/* ---- the command line ----------------------------------------------------------------- */

static int sc_bk_options_parse(int argc, char **argv, sc_bk_options_t *o)
{
    static const struct option longs[] = {
        {"bytes", required_argument, NULL, 'b'},    {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'}, {"device", no_argument, NULL, 'D'},
        {"json", required_argument, NULL, 'J'},     {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    sc_bk_options_t r = {(size_t)256 << 20, 20, 5, 0, NULL, 0};
    long long v;
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "b:n:w:h", longs, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (sc_bench_size_parse(optarg, &r.bytes) != SC_SUCCESS || r.bytes < 4)
                goto err_value;
            break;
        case 'n':
            if (sc_bench_int_parse(optarg, 1, INT_MAX, &v) != SC_SUCCESS)
                goto err_value;
            r.iters = (int)v;
            break;
        case 'w':
            if (sc_bench_int_parse(optarg, 0, INT_MAX, &v) != SC_SUCCESS)
                goto err_value;
            r.warmup = (int)v;
            break;
        case 'D':
            r.device = 1;
            break;
        case 'J':
            r.json_path = optarg;
            break;
        case 'h':
            fputs(sc_bk_usage_text, stdout);
            r.help = 1;
            break;
        default:
            fputs(sc_bk_usage_text, stderr);
            return 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sc-bench kernels: unexpected argument '%s'\n", argv[optind]);
        return 1;
    }
    *o = r;
    return 0;

err_value:
    fprintf(stderr, "sc-bench kernels: invalid value '%s' for -%c\n", optarg, c);
    return 1;
}

/* ---- GPU buffers and CUDA events ------------------------------------------------------------ */

#ifdef SC_HAVE_CUDA
#define SC_BK_CUDA(call)                                                                 \
    do {                                                                                 \
        cudaError_t err_ = (call);                                                       \
        if (err_ != cudaSuccess) {                                                       \
            snprintf(sc_bk_error, sizeof(sc_bk_error), "%s failed: %s", #call,           \
                     cudaGetErrorString(err_));                                          \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

/* Device copies of the host inputs in host[], on GPU 0. */
static int sc_bk_device_open(sc_bk_mem_t *m, void *const host[3])
{
    struct cudaDeviceProp prop;
    cudaStream_t stream;
    cudaError_t err;
    int n = 0;

    err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n == 0) {
        snprintf(sc_bk_error, sizeof(sc_bk_error), "--device: no usable GPU (%s)",
                 err != cudaSuccess ? cudaGetErrorString(err) : "the CUDA runtime finds none");
        return 1;
    }
    SC_BK_CUDA(cudaSetDevice(0));
    SC_BK_CUDA(cudaGetDeviceProperties(&prop, 0));
    snprintf(m->name, sizeof(m->name), "GPU 0 (%.200s)", prop.name);
    for (int f = 0; f < 3; f++) {
        size_t bytes = m->count * (f ? 2 : 4);
        SC_BK_CUDA(cudaMalloc(&m->src[f], bytes));
        SC_BK_CUDA(cudaMemcpy(m->src[f], host[f], bytes, cudaMemcpyHostToDevice));
    }
    SC_BK_CUDA(cudaMalloc(&m->dst, m->count * 4));
    SC_BK_CUDA(cudaMemset(m->dst, 0, m->count * 4));
    SC_BK_CUDA(cudaMalloc((void **)&m->flag, sizeof(int32_t)));
    SC_BK_CUDA(cudaStreamCreate(&stream));
    m->stream = stream;
    SC_BK_CUDA(cudaEventCreate(&m->start));
    SC_BK_CUDA(cudaEventCreate(&m->stop));
    return 0;
}

static void sc_bk_device_close(sc_bk_mem_t *m)
{
    for (int f = 0; f < 3; f++)
        cudaFree(m->src[f]);
    cudaFree(m->dst);
    cudaFree(m->flag);
    if (m->stream)
        cudaStreamDestroy((cudaStream_t)m->stream);
    if (m->start)
        cudaEventDestroy(m->start);
    if (m->stop)
        cudaEventDestroy(m->stop);
}

static int sc_bk_device_copy(sc_bk_mem_t *m, void *dst, const void *src, size_t bytes)
{
    SC_BK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                               (cudaStream_t)m->stream));
    return 0;
}

static int sc_bk_device_start(sc_bk_mem_t *m)
{
    SC_BK_CUDA(cudaEventRecord(m->start, (cudaStream_t)m->stream));
    return 0;
}

/* Seconds from the start event to now on the stream. */
static int sc_bk_device_stop(sc_bk_mem_t *m, double *seconds)
{
    float ms;

    SC_BK_CUDA(cudaEventRecord(m->stop, (cudaStream_t)m->stream));
    SC_BK_CUDA(cudaEventSynchronize(m->stop));
    SC_BK_CUDA(cudaEventElapsedTime(&ms, m->start, m->stop));
    *seconds = ms * 1e-3;
    return 0;
}
#else
static int sc_bk_device_open(sc_bk_mem_t *m, void *const host[3])
{
    (void)m, (void)host;
    snprintf(sc_bk_error, sizeof(sc_bk_error),
             "--device: this build is host-only (no CUDA toolkit was found, or "
             "SC_WITH_CUDA=OFF); rebuild with SC_WITH_CUDA=ON to time the GPU kernels");
    return 1;
}

static void sc_bk_device_close(sc_bk_mem_t *m)
{
    (void)m;
}

static int sc_bk_device_copy(sc_bk_mem_t *m, void *dst, const void *src, size_t bytes)
{
    (void)m, (void)dst, (void)src, (void)bytes;
    return 1;
}

static int sc_bk_device_start(sc_bk_mem_t *m)
{
    (void)m;
    return 1;
}

static int sc_bk_device_stop(sc_bk_mem_t *m, double *seconds)
{
    (void)m, (void)seconds;
    return 1;
}
#endif

/* ---- buffers and clocks: host or device ----------------------------------------------------- */

static void sc_bk_mem_close(sc_bk_mem_t *m, void *host[3])
{
    if (m->device)
        sc_bk_device_close(m);
    for (int f = 0; f < 3; f++)
        free(host[f]);
    if (!m->device) {
        free(m->dst);
        free(m->flag);
    }
}

/* The input: count float32 in [-1, 1), and its float16 and bfloat16 casts; in host[]
 * always, and in m's buffers (host[] themselves, or device copies). */
static int sc_bk_mem_open(const sc_bk_options_t *o, sc_bk_mem_t *m, void *host[3])
{
    size_t count = o->bytes / 4;
    float *in;

    memset(m, 0, sizeof(*m));
    m->device = o->device;
    m->count = count;
    snprintf(m->name, sizeof(m->name), "host");
    for (int f = 0; f < 3; f++)
        if (posix_memalign(&host[f], 4096, count * (f ? 2 : 4)) != 0) {
            snprintf(sc_bk_error, sizeof(sc_bk_error), "cannot allocate %zu B", count * 4);
            return 1;
        }
    in = host[0];
    for (size_t i = 0; i < count; i++)
        in[i] = (float)(((uint32_t)i * 2654435761u) >> 8) * 0x1p-23f - 1.0f;
    if (sc_cast(in, SC_FLOAT32, host[1], SC_FLOAT16, count, 1.0f, NULL) != SC_SUCCESS ||
        sc_cast(in, SC_FLOAT32, host[2], SC_BFLOAT16, count, 1.0f, NULL) != SC_SUCCESS) {
        snprintf(sc_bk_error, sizeof(sc_bk_error), "sc_cast: %s", sc_last_error());
        return 1;
    }
    if (m->device)
        return sc_bk_device_open(m, host);
    for (int f = 0; f < 3; f++)
        m->src[f] = host[f];
    m->flag = calloc(1, sizeof(int32_t));
    if (!m->flag || posix_memalign(&m->dst, 4096, count * 4) != 0) {
        snprintf(sc_bk_error, sizeof(sc_bk_error), "cannot allocate %zu B", count * 4);
        return 1;
    }
    memset(m->dst, 0, count * 4); /* page faults now, not while timed */
    return 0;
}

static int sc_bk_copy(sc_bk_mem_t *m, void *dst, const void *src, size_t bytes)
{
    if (m->device)
        return sc_bk_device_copy(m, dst, src, bytes);
    memcpy(dst, src, bytes);
    return 0;
}

static int sc_bk_clock_start(sc_bk_mem_t *m)
{
    if (m->device)
        return sc_bk_device_start(m);
    m->host_start = bench_now_s();
    return 0;
}

static int sc_bk_clock_stop(sc_bk_mem_t *m, double *seconds)
{
    if (m->device)
        return sc_bk_device_stop(m, seconds);
    *seconds = bench_now_s() - m->host_start;
    return 0;
}

/* ---- timing ------------------------------------------------------------------------------- */

/* One call: the case's kernel, or (c NULL) a copy of copy_bytes. */
static int sc_bk_call(sc_bk_mem_t *m, const sc_bk_case_t *c, size_t copy_bytes, int i)
{
    sc_status_t st;
    void *src;

    if (!c)
        return sc_bk_copy(m, m->dst, m->src[0], copy_bytes);
    src = m->src[sc_bk_fmt(c->src)];
    if (c->kind == SC_BK_CAST)
        st = sc_cast(src, c->src, m->dst, c->dst, m->count, c->scale, m->stream);
    else if (c->kind == SC_BK_CHECK)
        st = sc_check_finite(src, c->src, m->count, m->flag, m->stream);
    else
        st = sc_unscale_check(m->dst, c->src, m->count, i % 2 ? 1.0f / c->scale : c->scale,
                              m->flag, m->stream);
    if (st != SC_SUCCESS) {
        snprintf(sc_bk_error, sizeof(sc_bk_error), "%s: %s", sc_status_string(st),
                 sc_last_error());
        return 1;
    }
    return 0;
}

/* Average seconds of one call over the timed iterations, after the warmup ones. */
static int sc_bk_time(sc_bk_mem_t *m, const sc_bk_case_t *c, size_t copy_bytes,
                      const sc_bk_options_t *o, double *seconds)
{
    double total;

    for (int i = 0; i < o->warmup; i++)
        if (sc_bk_call(m, c, copy_bytes, i))
            return 1;
    if (sc_bk_clock_start(m))
        return 1;
    for (int i = 0; i < o->iters; i++)
        if (sc_bk_call(m, c, copy_bytes, o->warmup + i))
            return 1;
    if (sc_bk_clock_stop(m, &total))
        return 1;
    *seconds = total / o->iters;
    return 0;
}

/* GB/s of a copy moving `bytes` in all (reading and writing half each), timed once per
 * distinct size. */
static int sc_bk_copy_gbps(sc_bk_mem_t *m, size_t bytes, const sc_bk_options_t *o,
                           double *gbps)
{
    static size_t cached_bytes[8];
    static double cached_gbps[8];
    static int ncached;
    double s;

    for (int i = 0; i < ncached; i++)
        if (cached_bytes[i] == bytes) {
            *gbps = cached_gbps[i];
            return 0;
        }
    if (sc_bk_time(m, NULL, bytes / 2, o, &s))
        return 1;
    *gbps = s > 0 ? (double)bytes / s * 1e-9 : 0;
    if (ncached < 8) {
        cached_bytes[ncached] = bytes;
        cached_gbps[ncached++] = *gbps;
    }
    return 0;
}

static int sc_bk_measure(sc_bk_mem_t *m, const sc_bk_case_t *c, const sc_bk_options_t *o,
                         sc_bk_row_t *row)
{
    sc_bk_row_t r = {c, sc_bk_case_bytes(c, m->count), 0, 0, 0};
    double s;

    /* The unscale works in place on dst: start it from the input. */
    if (c->kind == SC_BK_UNSCALE &&
        sc_bk_copy(m, m->dst, m->src[sc_bk_fmt(c->src)], m->count * sc_dtype_size(c->src)))
        return 1;
    if (sc_bk_time(m, c, 0, o, &s) || sc_bk_copy_gbps(m, r.bytes, o, &r.copy_gbps))
        return 1;
    r.time_us = s * 1e6;
    r.gbps = s > 0 ? (double)r.bytes / s * 1e-9 : 0;
    *row = r;
    return 0;
}

/* ---- output ----------------------------------------------------------------------------------- */

static void sc_bk_print_header(const sc_bk_mem_t *m, const sc_bk_options_t *o)
{
    printf("# sc-bench kernels on %s (%s): %zu B of float32 input = %zu elements, "
           "iters %d, warmup %d\n#\n",
           m->name, m->device ? "CUDA stream, CUDA events" : "host twins, wall clock",
           m->count * 4, m->count, o->iters, o->warmup);
    printf("# %-32s %12s %11s %9s %9s %6s\n", "kernel", "bytes", "time", "GB/s", "copy",
           "ratio");
    printf("# %-32s %12s %11s %9s %9s %6s\n", "", "(B)", "(us)", "", "(GB/s)", "");
}

static void sc_bk_print_row(const sc_bk_row_t *r)
{
    char label[64];

    sc_bk_label(r->c, label, sizeof(label));
    printf("  %-32s %12zu %11.2f %9.2f %9.2f %6.2f\n", label, r->bytes, r->time_us, r->gbps,
           r->copy_gbps, r->copy_gbps > 0 ? r->gbps / r->copy_gbps : 0.0);
    fflush(stdout);
}

/* The rows as JSON into f, opened before the run (sc_bench_output_open). */
static void sc_bk_json_write(FILE *f, const sc_bk_row_t *rows, int nrows, const sc_bk_mem_t *m)
{
    fputs("[\n", f);
    for (int i = 0; i < nrows; i++) {
        const sc_bk_row_t *r = &rows[i];
        fprintf(f,
                "  {\"kernel\": \"%s\", \"src\": \"%s\", \"dst\": \"%s\", \"scale\": %.9g, "
                "\"memory\": \"%s\", \"count\": %zu, \"bytes\": %zu, \"time_us\": %.6g, "
                "\"gbps\": %.6g, \"copy_gbps\": %.6g, \"ratio\": %.6g}%s\n",
                sc_bk_kind_name(r->c->kind), sc_dtype_name(r->c->src), sc_dtype_name(r->c->dst),
                (double)r->c->scale, m->device ? "device" : "host", m->count, r->bytes,
                r->time_us, r->gbps, r->copy_gbps,
                r->copy_gbps > 0 ? r->gbps / r->copy_gbps : 0.0, i + 1 < nrows ? "," : "");
    }
    fputs("]\n", f);
}

int sc_bench_kernels_main(int argc, char **argv)
{
    sc_bk_options_t o;
    sc_bk_mem_t m;
    sc_bk_row_t rows[SC_BK_NCASES];
    void *host[3] = {NULL, NULL, NULL};
    sc_bench_output_t *json = NULL;
    int nrows = 0, exit_code = 1;

    if (sc_bk_options_parse(argc, argv, &o))
        return 2;
    if (o.help)
        return 0;
    /* Before anything is measured: an unwritable --json is a usage error. */
    if (o.json_path && !(json = sc_bench_output_open(o.json_path)))
        return 2;
    if (sc_bk_mem_open(&o, &m, host)) {
        fprintf(stderr, "sc-bench kernels: %s\n", sc_bk_error);
        exit_code = o.device ? 2 : 1;
        goto err_close;
    }
    sc_bk_print_header(&m, &o);
    for (size_t i = 0; i < SC_BK_NCASES; i++) {
        if (sc_bk_measure(&m, &sc_bk_cases[i], &o, &rows[nrows])) {
            char label[64];
            sc_bk_label(&sc_bk_cases[i], label, sizeof(label));
            fprintf(stderr, "sc-bench kernels: %s failed: %s\n", label, sc_bk_error);
            goto err_close;
        }
        sc_bk_print_row(&rows[nrows++]);
    }
    exit_code = 0;
    if (json) {
        sc_bk_json_write(json->f, rows, nrows, &m);
        exit_code = sc_bench_output_commit(json);
        json = NULL;
    }

err_close:
    sc_bench_output_discard(json); /* a failed run: the file keeps what it held */
    sc_bk_mem_close(&m, host);
    return exit_code;
}
