/* Shared by the multi-rank collective tests: input values derived from (seed, rank,
 * index) by a hash, reference reductions computed here (never by the library),
 * buffers with guard bytes, agreement of results across ranks, and failure reports. */
#ifndef SC_TESTS_COLL_CHECK_H
#define SC_TESTS_COLL_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "shardcomm/shardcomm.h"
#include "../common/sc_hash.h"

#define CC_NELEM(x) (sizeof(x) / sizeof((x)[0]))
#define CC_GUARD 64            /* guard bytes on each side of a buffer */
#define CC_GUARD_BYTE 0xA5
#define CC_FILL_BYTE 0x5A      /* what an output buffer holds before the call */
#define CC_NO_OP ((sc_op_t)-1) /* data-movement collectives: raw bit patterns */

static const sc_dtype_t cc_dtypes[] = {SC_FLOAT32, SC_FLOAT64, SC_FLOAT16, SC_BFLOAT16,
                                       SC_INT8,    SC_UINT8,   SC_INT32,   SC_INT64};
static const sc_op_t cc_ops[] = {SC_SUM, SC_PROD, SC_MIN, SC_MAX, SC_AVG};

/* Names and sizes written out here so that a wrong library table cannot hide. */
static inline const char *cc_dtype_str(sc_dtype_t d)
{
    static const char *const names[] = {"float32", "float64", "float16", "bfloat16",
                                        "int8",    "uint8",   "int32",   "int64",
                                        "f8e4m3",  "f8e5m2"};
    return (unsigned)d < CC_NELEM(names) ? names[d] : "?";
}

static inline const char *cc_op_str(sc_op_t op)
{
    static const char *const names[] = {"sum", "prod", "min", "max", "avg"};
    return (unsigned)op < CC_NELEM(names) ? names[op] : "none";
}

static inline size_t cc_size(sc_dtype_t d)
{
    static const size_t sizes[] = {4, 8, 2, 2, 1, 1, 4, 8, 1, 1};
    return (unsigned)d < CC_NELEM(sizes) ? sizes[d] : 0;
}

static inline int cc_is_float(sc_dtype_t d)
{
    return d == SC_FLOAT32 || d == SC_FLOAT64 || d == SC_FLOAT16 || d == SC_BFLOAT16;
}

static inline int cc_op_applies(sc_dtype_t d, sc_op_t op)
{
    return op != SC_AVG || cc_is_float(d);
}

static inline double cc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the context of the case under test, for failure reports -------------------- */

typedef struct {
    sc_comm_t *comm;
    int rank, size;
    const char *coll;
    sc_dtype_t dtype;
    sc_op_t op;
    size_t count;
    int in_place;
    int root;       /* -1 where none */
    int failures;   /* on this rank, over the whole run */
} cc_ctx_t;

static inline void cc_fail(cc_ctx_t *c, const char *fmt, ...)
{
    va_list ap;
    char msg[512];

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL %s dtype=%s op=%s count=%zu in_place=%d root=%d rank=%d/%d: %s\n",
            c->coll, cc_dtype_str(c->dtype), cc_op_str(c->op), c->count, c->in_place, c->root,
            c->rank, c->size, msg);
    c->failures++;
}

/* A library call that fails leaves the run in an unknown state: report and stop. */
static inline void cc_check_status(cc_ctx_t *c, sc_status_t st, const char *what)
{
    if (st == SC_SUCCESS)
        return;
    cc_fail(c, "%s returned %s: %s", what, sc_status_string(st), sc_last_error());
    exit(1);
}

/* ---- input values -------------------------------------------------------------- */

static inline uint64_t cc_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static inline uint64_t cc_hash(uint64_t seed, int rank, size_t idx)
{
    return cc_mix(cc_mix(seed ^ ((uint64_t)(unsigned)rank << 40)) ^ (uint64_t)idx);
}

static inline uint64_t cc_width_mask(sc_dtype_t d)
{
    size_t b = cc_size(d) * 8;
    return b == 64 ? ~0ull : (1ull << b) - 1;
}

/* Floats as bit patterns of the dtype. Only values exactly representable in the dtype
 * are ever converted (the inputs are chosen so), so the conversions are exact. */
static inline uint64_t cc_double_to_bits(sc_dtype_t d, double v)
{
    switch (d) {
    case SC_FLOAT32: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        return u;
    }
    case SC_FLOAT64: {
        uint64_t u;
        memcpy(&u, &v, 8);
        return u;
    }
    case SC_FLOAT16: {
        _Float16 h = (_Float16)v;
        uint16_t u;
        memcpy(&u, &h, 2);
        return u;
    }
    case SC_BFLOAT16: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        return u >> 16; /* exact: the low half is zero for the values used */
    }
    default:
        abort();
    }
}

static inline double cc_bits_to_double(sc_dtype_t d, uint64_t bits)
{
    switch (d) {
    case SC_FLOAT32: {
        uint32_t u = (uint32_t)bits;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case SC_FLOAT64: {
        double v;
        memcpy(&v, &bits, 8);
        return v;
    }
    case SC_FLOAT16: {
        uint16_t u = (uint16_t)bits;
        _Float16 h;
        memcpy(&h, &u, 2);
        return (double)h;
    }
    case SC_BFLOAT16: {
        uint32_t u = (uint32_t)bits << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    default:
        abort();
    }
}

/* Integer bit pattern of width w, sign-extended for the signed dtypes. */
static inline int64_t cc_bits_to_int(sc_dtype_t d, uint64_t bits)
{
    switch (d) {
    case SC_INT8: return (int8_t)(uint8_t)bits;
    case SC_UINT8: return (uint8_t)bits;
    case SC_INT32: return (int32_t)(uint32_t)bits;
    case SC_INT64: return (int64_t)bits;
    default: abort();
    }
}

/* Rank `rank`'s input element idx, as the dtype's bit pattern.
 * Floats, sum/avg: k/4 with k in [-16, 15]: every partial sum of up to 8 ranks is a
 *   multiple of 1/4 below 32 in magnitude (at most 128 quarters, 8 significant bits),
 *   exact even in bfloat16, so the result does not depend on the reduction order or on
 *   the float32 accumulation of float16/bfloat16.
 * Floats, prod: one of 1, 2, -1, 1/2, -2: a product over 8 ranks is +-2^k, |k| <= 8.
 * Floats, min/max: half the elements from {+0, -0, 1/4, 1/2} (min) or {+0, -0, -1/4,
 *   -1/2} (max), so that zeros of both signs often meet; the rest k/4, |k| <= 64.
 * Integers, sum/min/max: every bit random (sums wrap, as specified).
 * Integers, prod: one of 1, 2, 3, -1 (products over 8 ranks wrap in int8/uint8).
 * No op (data movement): every bit random, NaN patterns included. */
static inline uint64_t cc_input(sc_dtype_t d, sc_op_t op, uint64_t seed, int rank, size_t idx)
{
    uint64_t h = cc_hash(seed, rank, idx);

    if (op == CC_NO_OP || (!cc_is_float(d) && op != SC_PROD))
        return h & cc_width_mask(d);
    if (!cc_is_float(d)) {
        static const int64_t v[] = {1, 2, 3, -1};
        return (uint64_t)v[h & 3] & cc_width_mask(d);
    }
    switch (op) {
    case SC_SUM:
    case SC_AVG:
        return cc_double_to_bits(d, ((int)(h % 32) - 16) * 0.25);
    case SC_PROD: {
        static const double v[] = {1, 2, -1, 0.5, -2, 1, 1, -1};
        return cc_double_to_bits(d, v[h % 8]);
    }
    case SC_MIN:
    case SC_MAX: {
        static const double near_zero[] = {0.0, -0.0, 0.25, 0.5};
        double s = op == SC_MIN ? 1.0 : -1.0;
        if ((h >> 40) & 1) {
            double v = near_zero[h & 3];
            return cc_double_to_bits(d, v == 0.0 ? v : s * v);
        }
        return cc_double_to_bits(d, ((int)(h % 129) - 64) * 0.25);
    }
    default:
        abort();
    }
}

/* ---- reference reductions ------------------------------------------------------ */

/* min(-0, +0) = -0, max(-0, +0) = +0, as the library specifies. */
static inline double cc_fmin(double a, double b)
{
    if (a < b)
        return a;
    if (b < a)
        return b;
    return signbit(a) ? a : b;
}

static inline double cc_fmax(double a, double b)
{
    if (a > b)
        return a;
    if (b > a)
        return b;
    return signbit(a) ? b : a;
}

/* The expected bit pattern of element idx of op over ranks 0..nranks-1 of the inputs
 * of `seed`, and for avg the exact average in *exact (compared with a tolerance). */
static inline uint64_t cc_expect(sc_dtype_t d, sc_op_t op, uint64_t seed, int nranks,
                                 size_t idx, double *exact)
{
    if (cc_is_float(d)) {
        double acc = cc_bits_to_double(d, cc_input(d, op, seed, 0, idx));
        for (int r = 1; r < nranks; r++) {
            double v = cc_bits_to_double(d, cc_input(d, op, seed, r, idx));
            switch (op) {
            case SC_SUM:
            case SC_AVG: acc += v; break;
            case SC_PROD: acc *= v; break;
            case SC_MIN: acc = cc_fmin(acc, v); break;
            case SC_MAX: acc = cc_fmax(acc, v); break;
            default: abort();
            }
        }
        if (op == SC_AVG) {
            *exact = acc / nranks;
            return 0;
        }
        return cc_double_to_bits(d, acc);
    } else {
        uint64_t acc = cc_input(d, op, seed, 0, idx);
        for (int r = 1; r < nranks; r++) {
            uint64_t v = cc_input(d, op, seed, r, idx);
            switch (op) {
            case SC_SUM: acc += v; break;   /* modulo 2^64, then truncated: wraps */
            case SC_PROD: acc *= v; break;
            case SC_MIN:
                if (cc_bits_to_int(d, v) < cc_bits_to_int(d, acc))
                    acc = v;
                break;
            case SC_MAX:
                if (cc_bits_to_int(d, v) > cc_bits_to_int(d, acc))
                    acc = v;
                break;
            default: abort();
            }
        }
        return acc & cc_width_mask(d);
    }
}

/* Relative tolerance of an average: the division rounds once (float16/bfloat16: in
 * float32, then to the dtype), so half an ulp; one epsilon leaves room. */
static inline double cc_avg_tolerance(sc_dtype_t d)
{
    switch (d) {
    case SC_FLOAT32: return ldexp(1.0, -23);
    case SC_FLOAT64: return ldexp(1.0, -52);
    case SC_FLOAT16: return ldexp(1.0, -10);
    default: return ldexp(1.0, -7);
    }
}

/* avg of float16 and bfloat16 is the sum of every input times 1 / nranks, each product
 * rounded to the dtype first (as NCCL's premultiplied avg, so that a sum past the
 * dtype's range still averages); float32 and float64 divide the sum once. */
static inline int cc_avg_premultiplies(sc_dtype_t d)
{
    return d == SC_FLOAT16 || d == SC_BFLOAT16;
}

/* Whether got (bits) is element idx of avg over nranks of the inputs of seed, with
 * *exact the value it is compared with and *tol the absolute tolerance. Premultiplied:
 * the exact sum of the rounded products; each of the nranks - 1 sums rounds by at most
 * half an ulp of a partial sum, no larger than the sum of the products' magnitudes.
 * Else the exact average within cc_avg_tolerance. */
static inline int cc_avg_ok(sc_dtype_t d, uint64_t seed, int nranks, size_t idx,
                            uint64_t got, double *exact, double *tol)
{
    double g = cc_bits_to_double(d, got), sum = 0, mag = 0;

    for (int r = 0; r < nranks; r++) {
        double x = cc_bits_to_double(d, cc_input(d, SC_AVG, seed, r, idx));
        if (cc_avg_premultiplies(d)) {
            float product = (float)x * (float)(1.0 / nranks);
            x = cc_bits_to_double(d, cc_double_to_bits(d, (double)product));
        }
        sum += x;
        mag += fabs(x);
    }
    if (cc_avg_premultiplies(d)) {
        *exact = sum;
        *tol = nranks * cc_avg_tolerance(d) * mag;
    } else {
        *exact = sum / nranks;
        *tol = cc_avg_tolerance(d) * fabs(*exact);
    }
    return g == *exact || fabs(g - *exact) <= *tol;
}

/* ---- element access ------------------------------------------------------------ */

static inline uint64_t cc_load(sc_dtype_t d, const void *buf, size_t idx)
{
    const uint8_t *p = (const uint8_t *)buf + idx * cc_size(d);
    switch (cc_size(d)) {
    case 1: return p[0];
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static inline void cc_store(sc_dtype_t d, void *buf, size_t idx, uint64_t bits)
{
    uint8_t *p = (uint8_t *)buf + idx * cc_size(d);
    switch (cc_size(d)) {
    case 1: p[0] = (uint8_t)bits; break;
    case 2: { uint16_t v = (uint16_t)bits; memcpy(p, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)bits; memcpy(p, &v, 4); break; }
    default: memcpy(p, &bits, 8); break;
    }
}

/* Writes rank's inputs for elements [first, first + n) at buf[0..n). */
static inline void cc_fill_inputs(sc_dtype_t d, sc_op_t op, uint64_t seed, int rank, void *buf,
                                  size_t first, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cc_store(d, buf, i, cc_input(d, op, seed, rank, first + i));
}

/* ---- guarded buffers ------------------------------------------------------------ */

typedef struct {
    uint8_t *base;
    uint8_t *p;       /* the buffer the library sees */
    size_t bytes;
    size_t lead;      /* guard bytes before p */
} cc_buf_t;

/* Registered memory (sc_mem_alloc) that cc_buf_alloc carves buffers from instead of
 * malloc when set: every rank allocates the same buffers in the same order, so that
 * they lie at the same offsets, as the library's in-place reads require. Reset to
 * empty before each case (cc_arena_reset). */
typedef struct {
    uint8_t *base;
    size_t bytes, used;
} cc_arena_t;

static cc_arena_t cc_arena;

static inline void cc_arena_reset(void)
{
    cc_arena.used = 0;
}

/* bytes usable at p, filled with `fill`; `misalign` shifts p by that many bytes off
 * the 64-byte boundary so that vector code meets unaligned buffers too. */
static inline void cc_buf_alloc(cc_buf_t *b, size_t bytes, int fill, size_t misalign)
{
    size_t whole = CC_GUARD + misalign + bytes + CC_GUARD;

    b->lead = CC_GUARD + misalign;
    b->bytes = bytes;
    if (cc_arena.base) {
        if (whole > cc_arena.bytes - cc_arena.used) {
            fprintf(stderr, "the registered arena of %zu bytes is too small\n",
                    cc_arena.bytes);
            exit(1);
        }
        b->base = cc_arena.base + cc_arena.used;
        cc_arena.used += (whole + 63) & ~(size_t)63;
    } else {
        b->base = malloc(whole);
    }
    if (!b->base) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    memset(b->base, CC_GUARD_BYTE, b->lead);
    b->p = b->base + b->lead;
    memset(b->p, fill, bytes);
    memset(b->p + bytes, CC_GUARD_BYTE, CC_GUARD);
}

static inline void cc_buf_free(cc_buf_t *b)
{
    if (!cc_arena.base)
        free(b->base);
    b->base = b->p = NULL;
}

/* Reports a guard byte that changed: the library wrote outside the buffer. */
static inline void cc_buf_check_guards(cc_ctx_t *c, const cc_buf_t *b, const char *name)
{
    for (size_t i = 0; i < b->lead; i++) {
        if (b->base[i] != CC_GUARD_BYTE) {
            cc_fail(c, "%s: guard byte %zd before the buffer was overwritten (0x%02x)", name,
                    (ssize_t)i - (ssize_t)b->lead, b->base[i]);
            return;
        }
    }
    for (size_t i = 0; i < CC_GUARD; i++) {
        if (b->p[b->bytes + i] != CC_GUARD_BYTE) {
            cc_fail(c, "%s: guard byte %zu after the end of the buffer was overwritten (0x%02x)",
                    name, i, b->p[b->bytes + i]);
            return;
        }
    }
}

/* Reports the first byte of [p, p + bytes) that is not `fill`. */
static inline void cc_check_untouched(cc_ctx_t *c, const void *p, size_t bytes, int fill,
                                      const char *what)
{
    const uint8_t *q = p;
    for (size_t i = 0; i < bytes; i++) {
        if (q[i] != (uint8_t)fill) {
            cc_fail(c, "%s was written: first changed byte %zu is 0x%02x, not 0x%02x", what, i,
                    q[i], (uint8_t)fill);
            return;
        }
    }
}

/* ---- agreement across ranks ------------------------------------------------------ */

static inline uint64_t cc_hash_bytes(const void *p, size_t bytes)
{
    return sc_test_hash(SC_TEST_HASH_INIT, p, bytes);
}

/* Every rank's hash of its result, gathered: all must be equal, bit for bit. */
static inline void cc_check_agreement(cc_ctx_t *c, const void *p, size_t bytes)
{
    uint64_t mine = cc_hash_bytes(p, bytes);
    uint64_t *all = calloc((size_t)c->size, sizeof(uint64_t));

    if (!all)
        exit(1);
    cc_check_status(c, sc_allgather(&mine, all, 1, SC_INT64, c->comm, NULL, NULL),
                    "sc_allgather of the result hashes");
    for (int r = 0; r < c->size; r++) {
        if (all[r] != all[0]) {
            cc_fail(c, "results differ across ranks: the hash of rank 0's is %016" PRIx64
                       ", of rank %d is %016" PRIx64, all[0], r, all[r]);
            break;
        }
    }
    free(all);
}

/* The failures of every rank, summed here from an allgather (not with the allreduce
 * under test), so that a failure seen by one rank fails all; the last call before
 * sc_comm_destroy. */
static inline int cc_total_failures(cc_ctx_t *c)
{
    int32_t mine = c->failures, *all = calloc((size_t)c->size, sizeof(int32_t));
    int total = 0;

    if (!all)
        exit(1);
    cc_check_status(c, sc_allgather(&mine, all, 1, SC_INT32, c->comm, NULL, NULL),
                    "sc_allgather of the failure counts");
    for (int r = 0; r < c->size; r++)
        total += all[r];
    free(all);
    return total;
}

#endif
