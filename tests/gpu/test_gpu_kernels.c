/* GPU tests of the mixed-precision kernels: each kernel on device buffers on a CUDA
 * stream, compared bit for bit with its host twin (which tests/kernels checks against
 * independent references), on random data with every special value, odd counts and
 * misaligned offsets; the flag's semantics; the device path's argument errors. Without
 * a usable GPU it prints "SKIP: <reason>" and exits 77.
 * test_gpu_kernels [NAME-SUBSTRING] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "collectives/cast_kernels.h"
#include "../common/cast_inputs.h"
#include "../common/sc_test_runner.h"
#include "gpu_check.h"
#include "shardcomm/shardcomm.h"

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "  %s:%d: %s: ", __FILE__, __LINE__, #cond);                 \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

#define CHECK_OK(call)                                                                   \
    do {                                                                                 \
        sc_status_t st_ = (call);                                                        \
        CHECK(st_ == SC_SUCCESS, "%s: %s", sc_status_string(st_), sc_last_error());      \
    } while (0)

#define CUDA_OK(call)                                                                    \
    do {                                                                                 \
        cudaError_t err_ = (call);                                                       \
        CHECK(err_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(err_));           \
    } while (0)

#define NELEM(x) (sizeof(x) / sizeof((x)[0]))

static const sc_dtype_t formats[] = {SC_FLOAT32, SC_FLOAT16, SC_BFLOAT16};
static const float scales[] = {1.0f, 0.5f, 1024.0f, 3.0e-5f, 0x1p-130f, -2.0f, 0.0f,
                               INFINITY, NAN};
static cudaStream_t g_stream;

/* Host data and device buffers for one comparison: src and dst of up to n + 8
 * elements of 4 bytes each, on both sides. */
typedef struct {
    size_t n;
    uint32_t *h_src, *h_expected, *h_got;
    void *d_src, *d_dst;
} cmp_bufs_t;

static int bufs_open(cmp_bufs_t *b, size_t n)
{
    size_t bytes = (n + 8) * 4;

    memset(b, 0, sizeof(*b));
    b->n = n;
    b->h_src = malloc(bytes);
    b->h_expected = malloc(bytes);
    b->h_got = malloc(bytes);
    CHECK(b->h_src && b->h_expected && b->h_got, "no host memory");
    CUDA_OK(cudaMalloc(&b->d_src, bytes));
    CUDA_OK(cudaMalloc(&b->d_dst, bytes));
    return 0;
}

static void bufs_close(cmp_bufs_t *b)
{
    free(b->h_src), free(b->h_expected), free(b->h_got);
    cudaFree(b->d_src), cudaFree(b->d_dst);
}

/* Casts count elements from element offset so of src to element offset dof of dst on
 * the device and on the host; the device's dst must equal the twin's, and the bytes
 * around it must keep their 0x5a fill. */
static int compare_cast(cmp_bufs_t *b, sc_dtype_t st, sc_dtype_t dt, size_t count,
                        size_t so, size_t dof, float scale, uint64_t seed)
{
    size_t ss = esize(st), ds = esize(dt), bytes = (b->n + 8) * 4;
    const unsigned char *got = (const unsigned char *)b->h_got;

    fill_random(st, b->h_src, b->n + 8, seed);
    memset(b->h_expected, 0x5a, bytes);
    sc_cast_host((char *)b->h_src + so * ss, st, (char *)b->h_expected + dof * ds, dt, count,
                 scale);
    CUDA_OK(cudaMemcpy(b->d_src, b->h_src, bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(b->d_dst, 0x5a, bytes));
    CHECK_OK(sc_cast((char *)b->d_src + so * ss, st, (char *)b->d_dst + dof * ds, dt, count,
                     scale, g_stream));
    CUDA_OK(cudaStreamSynchronize(g_stream));
    CUDA_OK(cudaMemcpy(b->h_got, b->d_dst, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < bytes; i++) {
        if (got[i] != ((const unsigned char *)b->h_expected)[i]) {
            size_t e = i / ds;
            fprintf(stderr, "  %s -> %s * %a, count %zu, offsets %zu/%zu: byte %zu "
                    "(element %zd) differs: device %#x, twin %#x\n", sc_dtype_name(st),
                    sc_dtype_name(dt), scale, count, so, dof, i, (ptrdiff_t)e - (ptrdiff_t)dof,
                    got[i], ((const unsigned char *)b->h_expected)[i]);
            return 1;
        }
    }
    return 0;
}

/* ---- casts -------------------------------------------------------------------------- */

static int test_device_cast_matches_twin_for_every_pair_count_and_offset(void)
{
    static const size_t counts[] = {1, 2, 7, 8, 9, 15, 31, 33, 1000, 65543, (1 << 20) + 37};
    static const size_t offsets[][2] = {{0, 0}, {1, 1}, {3, 0}, {0, 5}, {7, 3}, {2, 6}};
    cmp_bufs_t b;
    int bad = 0;

    if (bufs_open(&b, (1 << 20) + 37))
        return 1;
    for (size_t si = 0; si < NELEM(formats) && !bad; si++)
        for (size_t di = 0; di < NELEM(formats) && !bad; di++)
            for (size_t ci = 0; ci < NELEM(counts) && !bad; ci++)
                for (size_t oi = 0; oi < NELEM(offsets) && !bad; oi++)
                    bad = compare_cast(&b, formats[si], formats[di], counts[ci], offsets[oi][0],
                                       offsets[oi][1], scales[(ci + oi) % NELEM(scales)],
                                       si * 1000 + di * 100 + ci * 10 + oi);
    bufs_close(&b);
    return bad;
}

static int test_device_cast_matches_twin_for_every_scale(void)
{
    cmp_bufs_t b;
    int bad = 0;

    if (bufs_open(&b, (1 << 22) + 5))
        return 1;
    for (size_t si = 0; si < NELEM(formats) && !bad; si++)
        for (size_t di = 0; di < NELEM(formats) && !bad; di++)
            for (size_t k = 0; k < NELEM(scales) && !bad; k++)
                bad = compare_cast(&b, formats[si], formats[di], b.n, 0, 0, scales[k],
                                   77 + si * 100 + di * 10 + k);
    bufs_close(&b);
    return bad;
}

/* All 65536 float16 and bfloat16 patterns to every format. */
static int test_device_cast_of_every_16bit_pattern_matches_twin(void)
{
    enum { N = 0x10000 };
    uint16_t *in = malloc(N * 2);
    uint32_t *expected = malloc(N * 4), *got = malloc(N * 4);
    void *d_in, *d_out;

    CHECK(in && expected && got, "no memory");
    for (uint32_t v = 0; v < N; v++)
        in[v] = (uint16_t)v;
    CUDA_OK(cudaMalloc(&d_in, N * 2));
    CUDA_OK(cudaMalloc(&d_out, N * 4));
    CUDA_OK(cudaMemcpy(d_in, in, N * 2, cudaMemcpyHostToDevice));
    for (int s = 1; s < 3; s++)
        for (size_t di = 0; di < NELEM(formats); di++) {
            sc_dtype_t st = formats[s], dt = formats[di];
            sc_cast_host(in, st, expected, dt, N, 1.0f);
            CHECK_OK(sc_cast(d_in, st, d_out, dt, N, 1.0f, g_stream));
            CUDA_OK(cudaStreamSynchronize(g_stream));
            CUDA_OK(cudaMemcpy(got, d_out, N * esize(dt), cudaMemcpyDeviceToHost));
            CHECK(memcmp(got, expected, N * esize(dt)) == 0, "%s -> %s differs",
                  sc_dtype_name(st), sc_dtype_name(dt));
        }
    cudaFree(d_in), cudaFree(d_out);
    free(in), free(expected), free(got);
    return 0;
}

/* Every float32 to float16 and bfloat16, in chunks: the GPU's bit-level rounding
 * against the twin's F16C/AVX2 one. */
static int test_device_narrowing_of_every_float32_matches_twin(void)
{
    enum { CHUNK = 1 << 26 };
    uint32_t *in;
    uint16_t *got, *expected;
    void *d_in, *d_out;
    int bad = 0;

    CUDA_OK(cudaHostAlloc((void **)&in, (size_t)CHUNK * 4, cudaHostAllocDefault));
    CUDA_OK(cudaHostAlloc((void **)&got, (size_t)CHUNK * 2, cudaHostAllocDefault));
    expected = malloc((size_t)CHUNK * 2);
    CHECK(expected, "no memory");
    CUDA_OK(cudaMalloc(&d_in, (size_t)CHUNK * 4));
    CUDA_OK(cudaMalloc(&d_out, (size_t)CHUNK * 2));
    for (uint64_t base = 0; base < (UINT64_C(1) << 32) && !bad; base += CHUNK) {
        for (uint32_t i = 0; i < CHUNK; i++)
            in[i] = (uint32_t)(base + i);
        CUDA_OK(cudaMemcpyAsync(d_in, in, (size_t)CHUNK * 4, cudaMemcpyHostToDevice, g_stream));
        for (int k = 1; k < 3 && !bad; k++) {
            CHECK_OK(sc_cast(d_in, SC_FLOAT32, d_out, formats[k], CHUNK, 1.0f, g_stream));
            CUDA_OK(cudaMemcpyAsync(got, d_out, (size_t)CHUNK * 2, cudaMemcpyDeviceToHost,
                                    g_stream));
            sc_cast_host(in, SC_FLOAT32, expected, formats[k], CHUNK, 1.0f);
            CUDA_OK(cudaStreamSynchronize(g_stream));
            for (uint32_t i = 0; i < CHUNK; i++)
                if (got[i] != expected[i]) {
                    fprintf(stderr, "  float32 %#x -> %s: device %#x, twin %#x\n", in[i],
                            sc_dtype_name(formats[k]), got[i], expected[i]);
                    bad = 1;
                    break;
                }
        }
    }
    cudaFree(d_in), cudaFree(d_out);
    cudaFreeHost(in), cudaFreeHost(got);
    free(expected);
    return bad;
}

/* ---- the flag ------------------------------------------------------------------------- */

/* Where the flag lives: device, pinned host or managed memory. */
typedef struct {
    const char *name;
    int32_t *p;
} flag_mem_t;

static int flags_open(flag_mem_t f[3])
{
    f[0].name = "device", f[1].name = "pinned", f[2].name = "managed";
    CUDA_OK(cudaMalloc((void **)&f[0].p, 4));
    CUDA_OK(cudaHostAlloc((void **)&f[1].p, 4, cudaHostAllocDefault));
    CUDA_OK(cudaMallocManaged((void **)&f[2].p, 4, cudaMemAttachGlobal));
    return 0;
}

static void flags_close(flag_mem_t f[3])
{
    cudaFree(f[0].p), cudaFreeHost(f[1].p), cudaFree(f[2].p);
}

/* Sets or reads a flag once the stream is idle. */
static int flag_set(flag_mem_t *f, int32_t v)
{
    CUDA_OK(cudaStreamSynchronize(g_stream));
    CUDA_OK(cudaMemcpy(f->p, &v, 4, cudaMemcpyDefault));
    return 0;
}

static int flag_get(flag_mem_t *f, int32_t *v)
{
    CUDA_OK(cudaStreamSynchronize(g_stream));
    CUDA_OK(cudaMemcpy(v, f->p, 4, cudaMemcpyDefault));
    return 0;
}

/* Finite values bordering on the non-finite: extremes, subnormals, zeros, one. */
static void fill_finite(sc_dtype_t t, void *buf, size_t count)
{
    static const uint32_t f32v[] = {0x7f7fffff, 0xff7fffff, 0x00000001, 0x80000000, 0x3f800000,
                                    0x007fffff};
    static const uint16_t f16v[] = {0x7bff, 0xfbff, 0x0001, 0x8000, 0x3c00, 0x03ff};
    static const uint16_t bf16v[] = {0x7f7f, 0xff7f, 0x0001, 0x8000, 0x3f80, 0x007f};

    for (size_t i = 0; i < count; i++)
        put(t, buf, i, t == SC_FLOAT32 ? f32v[i % 6] : t == SC_FLOAT16 ? f16v[i % 6] : bf16v[i % 6]);
}

static uint32_t nonfinite_value(sc_dtype_t t, int k)
{
    static const uint32_t f32v[] = {0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffc12345};
    static const uint16_t f16v[] = {0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfd23};
    static const uint16_t bf16v[] = {0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffa5};
    return t == SC_FLOAT32 ? f32v[k] : t == SC_FLOAT16 ? f16v[k] : bf16v[k];
}

/* An Inf or NaN at the head, in the body and in the tail of misaligned buffers sets
 * the flag wherever it lives; finite data leaves 0 at 0 and 1 at 1. */
static int test_device_check_finite_sets_the_flag_and_never_clears_it(void)
{
    enum { N = 4099 };
    static const size_t positions[] = {0, 1, 6, 7, 8, 2050, N - 2, N - 1};
    uint32_t host[N + 8];
    void *d_buf;
    flag_mem_t flags[3];
    int32_t v;

    CUDA_OK(cudaMalloc(&d_buf, sizeof(host)));
    if (flags_open(flags))
        return 1;
    for (size_t ti = 0; ti < NELEM(formats); ti++)
        for (size_t off = 0; off < 4; off += 3)
            for (int fm = 0; fm < 3; fm++) {
                sc_dtype_t t = formats[ti];
                char *d = (char *)d_buf + off * esize(t);
                fill_finite(t, host, N);
                CUDA_OK(cudaMemcpy(d, host, N * esize(t), cudaMemcpyHostToDevice));
                for (int32_t start = 0; start < 2; start++) {
                    if (flag_set(&flags[fm], start))
                        return 1;
                    CHECK_OK(sc_check_finite(d, t, N, flags[fm].p, g_stream));
                    if (flag_get(&flags[fm], &v))
                        return 1;
                    CHECK(v == start, "%s finite data, %s flag %d became %d", sc_dtype_name(t),
                          flags[fm].name, start, v);
                }
                for (size_t p = 0; p < NELEM(positions); p++)
                    for (int k = 0; k < 5; k++) {
                        uint32_t one[1];
                        put(t, one, 0, nonfinite_value(t, k));
                        CUDA_OK(cudaMemcpy(d + positions[p] * esize(t), one, esize(t),
                                           cudaMemcpyHostToDevice));
                        if (flag_set(&flags[fm], 0))
                            return 1;
                        CHECK_OK(sc_check_finite(d, t, N, flags[fm].p, g_stream));
                        if (flag_get(&flags[fm], &v))
                            return 1;
                        CHECK(v == 1, "%s %#x at %zu (offset %zu) missed, %s flag",
                              sc_dtype_name(t), nonfinite_value(t, k), positions[p], off,
                              flags[fm].name);
                        CUDA_OK(cudaMemcpy(d + positions[p] * esize(t),
                                           (char *)host + positions[p] * esize(t), esize(t),
                                           cudaMemcpyHostToDevice));
                    }
            }
    flags_close(flags);
    cudaFree(d_buf);
    return 0;
}

/* Many blocks: only the last element is Inf. */
static int test_device_check_finite_finds_the_last_element_of_a_large_buffer(void)
{
    size_t n = (size_t)(1 << 26) + 3;
    uint32_t inf = 0x7f800000;
    flag_mem_t flags[3];
    void *d_buf;
    int32_t v;

    CUDA_OK(cudaMalloc(&d_buf, n * 4));
    CUDA_OK(cudaMemset(d_buf, 0, n * 4));
    if (flags_open(flags) || flag_set(&flags[0], 0))
        return 1;
    CHECK_OK(sc_check_finite(d_buf, SC_FLOAT32, n, flags[0].p, g_stream));
    if (flag_get(&flags[0], &v))
        return 1;
    CHECK(v == 0, "zeros flagged");
    CUDA_OK(cudaMemcpy((uint32_t *)d_buf + n - 1, &inf, 4, cudaMemcpyHostToDevice));
    CHECK_OK(sc_check_finite(d_buf, SC_FLOAT32, n, flags[0].p, g_stream));
    if (flag_get(&flags[0], &v))
        return 1;
    CHECK(v == 1, "the last element's Inf was missed");
    flags_close(flags);
    cudaFree(d_buf);
    return 0;
}

/* Values and flag equal the twin's, on random data with specials and on finite data,
 * for every scale, at an odd offset. */
static int test_device_unscale_check_matches_twin(void)
{
    size_t n = (1 << 20) + 13;
    uint32_t *host = malloc((n + 8) * 4), *expected = malloc((n + 8) * 4), *got = malloc((n + 8) * 4);
    flag_mem_t flags[3];
    void *d_buf;
    int32_t v;

    CHECK(host && expected && got, "no memory");
    CUDA_OK(cudaMalloc(&d_buf, (n + 8) * 4));
    if (flags_open(flags))
        return 1;
    for (size_t ti = 0; ti < NELEM(formats); ti++)
        for (size_t k = 0; k < NELEM(scales); k++)
            for (int finite = 0; finite < 2; finite++) {
                sc_dtype_t t = formats[ti];
                size_t es = esize(t), off = 1 + k % 4;
                if (finite)
                    fill_finite(t, (char *)host + off * es, n);
                else
                    fill_random(t, (char *)host + off * es, n, 900 + ti * 10 + k);
                memcpy(expected, host, (n + off) * es);
                int expected_flag = sc_unscale_check_host((char *)expected + off * es, t, n,
                                                          scales[k]);
                CUDA_OK(cudaMemcpy(d_buf, host, (n + off) * es, cudaMemcpyHostToDevice));
                if (flag_set(&flags[k % 3], 0))
                    return 1;
                CHECK_OK(sc_unscale_check((char *)d_buf + off * es, t, n, scales[k],
                                          flags[k % 3].p, g_stream));
                if (flag_get(&flags[k % 3], &v))
                    return 1;
                CUDA_OK(cudaMemcpy(got, d_buf, (n + off) * es, cudaMemcpyDeviceToHost));
                CHECK(memcmp(got, expected, (n + off) * es) == 0, "%s * %a: values differ",
                      sc_dtype_name(t), scales[k]);
                CHECK(v == expected_flag, "%s * %a (%s data): flag %d, twin %d",
                      sc_dtype_name(t), scales[k], finite ? "finite" : "random", v,
                      expected_flag);
            }
    flags_close(flags);
    cudaFree(d_buf);
    free(host), free(expected), free(got);
    return 0;
}

/* A float16 that overflows only when unscaled is flagged. */
static int test_device_unscale_check_flags_a_result_that_overflows(void)
{
    uint16_t buf[37];
    flag_mem_t flags[3];
    void *d_buf;
    int32_t v;

    for (size_t i = 0; i < NELEM(buf); i++)
        buf[i] = i == 30 ? 0x7bff : 0x3c00; /* 65504 at 30, else 1 */
    CUDA_OK(cudaMalloc(&d_buf, sizeof(buf)));
    CUDA_OK(cudaMemcpy(d_buf, buf, sizeof(buf), cudaMemcpyHostToDevice));
    if (flags_open(flags) || flag_set(&flags[1], 0))
        return 1;
    CHECK_OK(sc_unscale_check(d_buf, SC_FLOAT16, NELEM(buf), 2.0f, flags[1].p, g_stream));
    if (flag_get(&flags[1], &v))
        return 1;
    CUDA_OK(cudaMemcpy(buf, d_buf, sizeof(buf), cudaMemcpyDeviceToHost));
    CHECK(v == 1 && buf[30] == 0x7c00 && buf[0] == 0x4000, "flag %d, %#x %#x", v, buf[30], buf[0]);
    flags_close(flags);
    cudaFree(d_buf);
    return 0;
}

/* cast, unscale and check enqueued back to back on one stream (and on the legacy
 * default stream) give what the twins give one after the other. */
static int test_device_calls_follow_stream_order(void)
{
    size_t n = (1 << 22) + 1;
    float *host = malloc(n * 4);
    uint16_t *expected = malloc(n * 2), *got = malloc(n * 2);
    flag_mem_t flags[3];
    void *d_src, *d_half;
    int32_t v;

    CHECK(host && expected && got, "no memory");
    for (size_t i = 0; i < n; i++)
        host[i] = (float)(i % 1000) * 64.0f; /* up to 63936: times 2 overflows float16 */
    sc_cast_host(host, SC_FLOAT32, expected, SC_FLOAT16, n, 0.5f);
    int expected_flag = sc_unscale_check_host(expected, SC_FLOAT16, n, 4.0f);
    CUDA_OK(cudaMalloc(&d_src, n * 4));
    CUDA_OK(cudaMalloc(&d_half, n * 2));
    if (flags_open(flags))
        return 1;
    for (int legacy = 0; legacy < 2; legacy++) {
        sc_stream_t s = legacy ? NULL : g_stream;
        if (flag_set(&flags[0], 0) || flag_set(&flags[2], 0))
            return 1;
        CUDA_OK(cudaMemcpy(d_src, host, n * 4, cudaMemcpyHostToDevice));
        CHECK_OK(sc_cast(d_src, SC_FLOAT32, d_half, SC_FLOAT16, n, 0.5f, s));
        CHECK_OK(sc_unscale_check(d_half, SC_FLOAT16, n, 4.0f, flags[0].p, s));
        CHECK_OK(sc_check_finite(d_half, SC_FLOAT16, n, flags[2].p, s));
        CUDA_OK(cudaMemcpyAsync(got, d_half, n * 2, cudaMemcpyDeviceToHost,
                                (cudaStream_t)s));
        CUDA_OK(cudaDeviceSynchronize());
        CHECK(memcmp(got, expected, n * 2) == 0, "values differ (%s stream)",
              legacy ? "legacy" : "own");
        if (flag_get(&flags[0], &v))
            return 1;
        CHECK(v == expected_flag && v == 1, "unscale flag %d, twin %d", v, expected_flag);
        if (flag_get(&flags[2], &v))
            return 1;
        CHECK(v == 1, "check flag %d after the overflowed unscale", v);
    }
    flags_close(flags);
    cudaFree(d_src), cudaFree(d_half);
    free(host), free(expected), free(got);
    return 0;
}

/* ---- errors of the device path -------------------------------------------------------------- */

static int test_device_flag_in_pageable_memory_is_invalid_arg(void)
{
    void *d_buf;
    int32_t flag = 0;
    sc_status_t st;

    CUDA_OK(cudaMalloc(&d_buf, 64));
    st = sc_check_finite(d_buf, SC_FLOAT32, 16, &flag, g_stream);
    CHECK(st == SC_ERR_INVALID_ARG && strstr(sc_last_error(), "flag is pageable host memory"),
          "%s: %s", sc_status_string(st), sc_last_error());
    st = sc_unscale_check(d_buf, SC_FLOAT32, 16, 1.0f, &flag, g_stream);
    CHECK(st == SC_ERR_INVALID_ARG, "%s: %s", sc_status_string(st), sc_last_error());
    cudaFree(d_buf);
    return 0;
}

static int test_device_and_host_buffers_mixed_are_invalid_arg(void)
{
    void *d_buf;
    uint16_t host[16] = {0};
    sc_status_t st;

    CUDA_OK(cudaMalloc(&d_buf, 64));
    st = sc_cast(d_buf, SC_FLOAT32, host, SC_FLOAT16, 16, 1.0f, g_stream);
    CHECK(st == SC_ERR_INVALID_ARG && strstr(sc_last_error(), "sc_cast: src is device memory"),
          "%s: %s", sc_status_string(st), sc_last_error());
    CHECK(host[0] == 0, "host dst written");
    cudaFree(d_buf);
    return 0;
}

static int test_device_count_zero_does_nothing(void)
{
    void *d_buf;
    flag_mem_t flags[3];
    int32_t v;

    CUDA_OK(cudaMalloc(&d_buf, 64));
    if (flags_open(flags) || flag_set(&flags[0], 3))
        return 1;
    CHECK_OK(sc_cast(d_buf, SC_FLOAT32, d_buf, SC_FLOAT32, 0, 1.0f, g_stream));
    CHECK_OK(sc_unscale_check(d_buf, SC_BFLOAT16, 0, 1.0f, flags[0].p, g_stream));
    if (flag_get(&flags[0], &v))
        return 1;
    CHECK(v == 3, "flag written: %d", v);
    flags_close(flags);
    cudaFree(d_buf);
    return 0;
}

/* ---- runner ------------------------------------------------------------------------------------ */

static const sc_test_t tests[] = {
    SC_TEST(device_cast_matches_twin_for_every_pair_count_and_offset),
    SC_TEST(device_cast_matches_twin_for_every_scale),
    SC_TEST(device_cast_of_every_16bit_pattern_matches_twin),
    SC_TEST(device_narrowing_of_every_float32_matches_twin),
    SC_TEST(device_check_finite_sets_the_flag_and_never_clears_it),
    SC_TEST(device_check_finite_finds_the_last_element_of_a_large_buffer),
    SC_TEST(device_unscale_check_matches_twin),
    SC_TEST(device_unscale_check_flags_a_result_that_overflows),
    SC_TEST(device_calls_follow_stream_order),
    SC_TEST(device_flag_in_pageable_memory_is_invalid_arg),
    SC_TEST(device_and_host_buffers_mixed_are_invalid_arg),
    SC_TEST(device_count_zero_does_nothing),
};

/* Runs every test, or only those whose name contains argv[1]. */
int main(int argc, char **argv)
{
    char reason[512];
    int rc;

    if (!gpu_usable(reason, sizeof(reason))) {
        printf("SKIP: %s\n", reason);
        return GPU_SKIP_EXIT;
    }
    /* A blocking stream: the tests' cudaMemcpy calls on the legacy default stream are
     * ordered with the kernels on it. */
    if (cudaStreamCreate(&g_stream) != cudaSuccess) {
        fprintf(stderr, "cudaStreamCreate failed\n");
        return 1;
    }
    rc = sc_run_tests(tests, NELEM(tests), argc > 1 ? argv[1] : NULL);
    cudaStreamDestroy(g_stream);
    return rc;
}
