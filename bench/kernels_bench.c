/* kernels_bench: throughput of the host reduction kernels (sc_reduce_local) next to
 * memcpy of the same size, on a DRAM-sized and a cache-resident buffer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_time.h"
#include "collectives/reduce_kernels.h"

#define SAMPLES 15
#define MIN_SAMPLE_NS 2000000.0 /* repeat small buffers so one sample lasts >= 2 ms */

typedef struct {
    const char *name;
    sc_op_t op;
    sc_dtype_t dtype;
    size_t elem;
    int in_place; /* out == a, as when accumulating into the receive buffer */
} bench_case_t;

static const bench_case_t cases[] = {
    {"float32 sum", SC_SUM, SC_FLOAT32, 4, 0},   {"float32 sum in place", SC_SUM, SC_FLOAT32, 4, 1},
    {"float32 max", SC_MAX, SC_FLOAT32, 4, 0},   {"float16 sum", SC_SUM, SC_FLOAT16, 2, 0},
    {"bfloat16 sum", SC_SUM, SC_BFLOAT16, 2, 0}, {"float64 sum", SC_SUM, SC_FLOAT64, 8, 0},
    {"int32 sum", SC_SUM, SC_INT32, 4, 0},
};

/* Ordinary values in every dtype (1.0 or 1 and 0.5 or 3): no NaN, no subnormal. */
static void fill(sc_dtype_t dtype, void *buf, size_t bytes, int which)
{
    static const uint64_t one[SC_DTYPE_COUNT] = {
        [SC_FLOAT32] = 0x3f800000, [SC_FLOAT64] = UINT64_C(0x3ff0000000000000),
        [SC_FLOAT16] = 0x3c00,     [SC_BFLOAT16] = 0x3f80,
        [SC_INT8] = 1,             [SC_UINT8] = 1, [SC_INT32] = 1, [SC_INT64] = 1};
    static const uint64_t other[SC_DTYPE_COUNT] = {
        [SC_FLOAT32] = 0x3f000000, [SC_FLOAT64] = UINT64_C(0x3fe0000000000000),
        [SC_FLOAT16] = 0x3800,     [SC_BFLOAT16] = 0x3f00,
        [SC_INT8] = 3,             [SC_UINT8] = 3, [SC_INT32] = 3, [SC_INT64] = 3};
    size_t n = sc_dtype_size(dtype);
    uint64_t v = which ? other[dtype] : one[dtype];

    for (size_t off = 0; off + n <= bytes; off += n)
        memcpy((char *)buf + off, &v, n);
}

/* Median and best of SAMPLES samples, in ns per call. */
typedef struct {
    double median, best;
} timing_t;

/* c == NULL times memcpy(out, a, bytes). */
static timing_t time_calls(const bench_case_t *c, void *a, void *b, void *out, size_t bytes)
{
    double samples[SAMPLES];
    size_t count = c ? bytes / c->elem : 0;
    void *dst = c && c->in_place ? a : out;
    int reps = 1;

    /* warm up (page faults, caches), then size the batch */
    double t0 = bench_now_s() * 1e9;
    if (c)
        sc_reduce_local(c->op, c->dtype, a, b, dst, count);
    else
        memcpy(out, a, bytes);
    double once = bench_now_s() * 1e9 - t0;
    while (reps * once < MIN_SAMPLE_NS && reps < (1 << 20))
        reps *= 2;

    for (int s = 0; s < SAMPLES; s++) {
        t0 = bench_now_s() * 1e9;
        for (int r = 0; r < reps; r++) {
            if (c)
                sc_reduce_local(c->op, c->dtype, a, b, dst, count);
            else
                memcpy(out, a, bytes);
        }
        samples[s] = (bench_now_s() * 1e9 - t0) / reps;
    }
    qsort(samples, SAMPLES, sizeof(double), bench_cmp_double);
    return (timing_t){samples[SAMPLES / 2], samples[0]};
}

int main(void)
{
    static const size_t sizes[] = {(size_t)64 << 20, (size_t)256 << 10};
    size_t max = sizes[0];
    char *a = aligned_alloc(64, max), *b = aligned_alloc(64, max), *out = aligned_alloc(64, max);

    if (!a || !b || !out) {
        fprintf(stderr, "kernels_bench: cannot allocate 3 x %zu bytes\n", max);
        return 1;
    }
    memset(out, 0, max);
    printf("# GB/s = streams * bytes / time: 3 streams (a, b, out) for a reduction,\n"
           "# 2 (src, dst) for memcpy; median [best] of %d samples\n", SAMPLES);
    printf("%-10s %-22s %10s %10s\n", "bytes", "kernel", "GB/s", "best");
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        size_t bytes = sizes[si];
        timing_t t = time_calls(NULL, a, b, out, bytes);
        printf("%-10zu %-22s %10.1f %10.1f\n", bytes, "memcpy", 2 * bytes / t.median,
               2 * bytes / t.best);
        for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
            const bench_case_t *c = &cases[ci];
            fill(c->dtype, a, bytes, 0);
            fill(c->dtype, b, bytes, 1);
            t = time_calls(c, a, b, out, bytes);
            printf("%-10zu %-22s %10.1f %10.1f\n", bytes, c->name, 3 * bytes / t.median,
                   3 * bytes / t.best);
        }
    }
    free(a);
    free(b);
    free(out);
    return 0;
}
