/* Inputs of the top-k tests, shared by the host tests (tests/compress/test_topk.c) and
 * the GPU tests (tests/gpu/test_gpu_topk.c): a seeded generator, elements of every float
 * dtype read and written through double, NaNs with many payloads, and data kinds that
 * exercise ties, -0, NaN, Inf and subnormals. */
#ifndef SC_TESTS_TOPK_DATA_H
#define SC_TESTS_TOPK_DATA_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "shardcomm/shardcomm.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * 0x1p-53;
}

static inline size_t esize(sc_dtype_t t)
{
    return t == SC_FLOAT64 ? 8 : t == SC_FLOAT32 ? 4 : 2;
}

static inline double bf16_to_double(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Element i of x as a double (NaN stays NaN, the sign is kept). */
static inline double elem(sc_dtype_t t, const void *x, size_t i)
{
    switch (t) {
    case SC_FLOAT64: return ((const double *)x)[i];
    case SC_FLOAT32: return ((const float *)x)[i];
    case SC_FLOAT16: return (double)((const _Float16 *)x)[i];
    default: return bf16_to_double(((const uint16_t *)x)[i]);
    }
}

/* Stores v into element i (bfloat16 by truncation: the test needs values, not rounding). */
static inline void put(sc_dtype_t t, void *x, size_t i, double v)
{
    switch (t) {
    case SC_FLOAT64: ((double *)x)[i] = v; break;
    case SC_FLOAT32: ((float *)x)[i] = (float)v; break;
    case SC_FLOAT16: ((_Float16 *)x)[i] = (_Float16)v; break;
    default: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        ((uint16_t *)x)[i] = (uint16_t)(u >> 16);
    }
    }
}

/* A NaN with sign and a payload chosen by r, in t's format. */
static inline void put_nan(sc_dtype_t t, void *x, size_t i, uint64_t r)
{
    uint64_t sign = r & 1;
    switch (t) {
    case SC_FLOAT64: {
        uint64_t u = sign << 63 | 0x7ff0000000000000ull | ((r >> 1) & 0xfffffffffffffull) | 1;
        memcpy((double *)x + i, &u, 8);
        break;
    }
    case SC_FLOAT32: {
        uint32_t u = (uint32_t)(sign << 31) | 0x7f800000u | (uint32_t)((r >> 1) & 0x7fffff) | 1;
        memcpy((float *)x + i, &u, 4);
        break;
    }
    case SC_FLOAT16:
        ((uint16_t *)x)[i] = (uint16_t)(sign << 15 | 0x7c00u | ((r >> 1) & 0x3ff) | 1);
        break;
    default:
        ((uint16_t *)x)[i] = (uint16_t)(sign << 15 | 0x7f80u | ((r >> 1) & 0x7f) | 1);
    }
}

typedef enum {
    DATA_GAUSS,    /* roughly normal, random signs */
    DATA_TIES,     /* a handful of magnitudes, both signs, -0 and +0 */
    DATA_SPECIAL,  /* normal with NaNs (many payloads), Infs, zeros and subnormals */
    DATA_EQUAL,    /* one magnitude, alternating sign */
    DATA_RAMP,     /* magnitudes rising with the index */
    DATA_SPARSE,   /* mostly zeros, a few large values */
    DATA_COUNT
} data_kind_t;

static inline const char *data_name(data_kind_t kind)
{
    static const char *const names[] = {"gauss", "ties", "special", "equal", "ramp", "sparse"};
    return names[kind];
}

static inline void fill(sc_dtype_t t, void *x, size_t n, data_kind_t kind, uint64_t seed)
{
    static const double tie_values[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0};
    uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;

    for (size_t i = 0; i < n; i++) {
        double g = rng_unit(&s) + rng_unit(&s) + rng_unit(&s) - 1.5;
        uint64_t r = rng_next(&s);
        switch (kind) {
        case DATA_GAUSS: put(t, x, i, g); break;
        case DATA_TIES: put(t, x, i, tie_values[r % NELEM(tie_values)]); break;
        case DATA_SPECIAL:
            switch (r % 64) {
            case 0: put_nan(t, x, i, r >> 8); break;
            case 1: put(t, x, i, (r >> 8) & 1 ? INFINITY : -INFINITY); break;
            case 2: put(t, x, i, (r >> 8) & 1 ? 0.0 : -0.0); break;
            case 3: put(t, x, i, ((r >> 8) & 1 ? 1 : -1) * 1e-320 * (double)(r >> 60)); break;
            default: put(t, x, i, g);
            }
            break;
        case DATA_EQUAL: put(t, x, i, i % 2 ? -0.75 : 0.75); break;
        case DATA_RAMP: put(t, x, i, (i % 2 ? -1.0 : 1.0) * (double)i / (double)n); break;
        default: put(t, x, i, r % 997 == 0 ? g * 1000.0 : 0.0);
        }
    }
}

/* Index i of an output of index_bits 32 or 64. */
static inline size_t index_at(const void *indices, int bits, size_t i)
{
    return bits == 32 ? ((const uint32_t *)indices)[i] : (size_t)((const uint64_t *)indices)[i];
}

#endif
