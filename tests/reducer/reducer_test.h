/* Harness of the reducer tests: each rank runs the test named by argv[1] under scrun.
 * Gradient values are derived from (seed, rank, iteration, gradient, element) by a
 * hash, the expected averages computed here in float64 (never by the library), and
 * results compared with a tolerance of the dtype (exactly where every operation is
 * exact: powers of two of ranks) and bit for bit across ranks. */
#ifndef SC_TEST_REDUCER_TEST_H
#define SC_TEST_REDUCER_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shardcomm/shardcomm.h"

static int rt_rank = -1;
#define SC_CHECK_RANK rt_rank
#include "../common/sc_check.h"
#include "../common/sc_hash.h"

/* A check that also prints the library's last sentence. */
#define CHECK_STATUS(call, expected, ...)                                                \
    do {                                                                                 \
        sc_status_t st_ = (call);                                                        \
        CHECK(st_ == (expected), "%s instead of %s (%s): ", sc_status_string(st_),       \
              sc_status_string(expected), sc_last_error());                              \
    } while (0)

/* The sentence of the last error contains every string given. */
#define CHECK_SAYS(...)                                                                  \
    do {                                                                                 \
        const char *say_[] = {__VA_ARGS__, NULL};                                        \
        for (int s_ = 0; say_[s_]; s_++)                                                 \
            CHECK(strstr(sc_last_error(), say_[s_]), "the error \"%s\" does not say \"%s\"", \
                  sc_last_error(), say_[s_]);                                            \
    } while (0)

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} rt_test_t;

static inline double rt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- a world ------------------------------------------------------------------ */

typedef struct {
    sc_comm_t *comm;
    int rank, size;
} rt_world_t;

static inline int rt_world(rt_world_t *w)
{
    CHECK_OK(sc_comm_init_from_env(&w->comm));
    w->rank = sc_comm_rank(w->comm);
    w->size = sc_comm_size(w->comm);
    return 0;
}

/* ---- values ------------------------------------------------------------------- */

static inline uint64_t rt_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Element e of gradient g on rank r in iteration it: k/4 with k in [-16, 15] (floats)
 * or an integer in [-500, 499]. Every value, any sum of up to 4 of them divided by 1,
 * 2 or 4, is exact in every float dtype (at most 8 significant bits), so with 1, 2 or
 * 4 ranks the expected result is exact. */
static inline double rt_value(sc_dtype_t d, uint64_t seed, int r, int it, int g, size_t e)
{
    uint64_t h = rt_mix(rt_mix(seed ^ ((uint64_t)(unsigned)r << 48) ^
                               ((uint64_t)(unsigned)it << 32) ^ (uint64_t)(unsigned)g) ^ e);
    if (d == SC_INT32 || d == SC_INT64)
        return (double)((int)(h % 1000) - 500);
    return ((int)(h % 32) - 16) * 0.25;
}

static inline size_t rt_size(sc_dtype_t d)
{
    switch (d) {
    case SC_FLOAT64: case SC_INT64: return 8;
    case SC_FLOAT16: case SC_BFLOAT16: return 2;
    default: return 4;
    }
}

/* float16 from and to double by their bits where the float16 is normal, which the tests'
 * values are; by the compiler's conversion, without F16C a call into libgcc that was a
 * fifth of the reducer fuzzer's time, for the rest. Equal to the conversion bit for bit. */
static inline double rt_half_load(uint16_t h)
{
    unsigned x = h >> 10 & 0x1f;
    uint64_t bits;
    double v;
    _Float16 f;

    if (x == 0 || x == 31) { /* zero, subnormal, infinite, NaN */
        memcpy(&f, &h, 2);
        return (double)f;
    }
    bits = (uint64_t)(h & 0x8000) << 48 | (uint64_t)(x - 15 + 1023) << 52 |
           (uint64_t)(h & 0x3ff) << 42;
    memcpy(&v, &bits, 8);
    return v;
}

static inline uint16_t rt_half_store(double v)
{
    uint64_t bits;
    int x;
    _Float16 f;
    uint16_t h;

    memcpy(&bits, &v, 8);
    x = (int)(bits >> 52 & 0x7ff) - 1023;
    if (x >= -14 && x <= 15 && (bits & (((uint64_t)1 << 42) - 1)) == 0) /* a normal float16 */
        return (uint16_t)((bits >> 48 & 0x8000) | (uint64_t)(x + 15) << 10 | (bits >> 42 & 0x3ff));
    f = (_Float16)v;
    memcpy(&h, &f, 2);
    return h;
}

static inline void rt_store(sc_dtype_t d, void *buf, size_t e, double v)
{
    switch (d) {
    case SC_FLOAT32: ((float *)buf)[e] = (float)v; break;
    case SC_FLOAT64: ((double *)buf)[e] = v; break;
    case SC_FLOAT16: ((uint16_t *)buf)[e] = rt_half_store(v); break;
    case SC_BFLOAT16: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        ((uint16_t *)buf)[e] = (uint16_t)(u >> 16); /* exact for the values used */
        break;
    }
    case SC_INT32: ((int32_t *)buf)[e] = (int32_t)v; break;
    case SC_INT64: ((int64_t *)buf)[e] = (int64_t)v; break;
    default: abort();
    }
}

static inline double rt_load(sc_dtype_t d, const void *buf, size_t e)
{
    switch (d) {
    case SC_FLOAT32: return ((const float *)buf)[e];
    case SC_FLOAT64: return ((const double *)buf)[e];
    case SC_FLOAT16: return rt_half_load(((const uint16_t *)buf)[e]);
    case SC_BFLOAT16: {
        uint32_t u = (uint32_t)((const uint16_t *)buf)[e] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case SC_INT32: return ((const int32_t *)buf)[e];
    case SC_INT64: return (double)((const int64_t *)buf)[e];
    default: abort();
    }
}

/* Unit roundoff of the dtype; 0 for integers (exact). */
static inline double rt_unit(sc_dtype_t d)
{
    switch (d) {
    case SC_FLOAT32: return ldexp(1.0, -24);
    case SC_FLOAT64: return ldexp(1.0, -53);
    case SC_FLOAT16: return ldexp(1.0, -11);
    case SC_BFLOAT16: return ldexp(1.0, -8);
    default: return 0.0;
    }
}

/* Tolerance of a sum of `terms` values, each divided by p, whose partial sums stay
 * below mag in magnitude: exact when p is a power of two (see rt_value), else one
 * rounding per division and per addition, each at most one unit roundoff of mag,
 * with a factor 2 of margin. */
static inline double rt_tolerance(sc_dtype_t d, int p, int terms, double mag)
{
    if ((p & (p - 1)) == 0)
        return 0.0;
    return 2.0 * 2.0 * terms * rt_unit(d) * mag;
}

/* ---- a model ------------------------------------------------------------------ */

typedef struct {
    int n;
    sc_grad_desc_t *desc;
    void **buf;     /* this rank's gradient buffers */
    char **names;
} rt_model_t;

static inline void rt_model_init(rt_model_t *m, int n, const size_t *counts,
                                 const sc_dtype_t *dtypes)
{
    m->n = n;
    m->desc = calloc((size_t)(n > 0 ? n : 1), sizeof(*m->desc));
    m->buf = calloc((size_t)(n > 0 ? n : 1), sizeof(*m->buf));
    m->names = calloc((size_t)(n > 0 ? n : 1), sizeof(*m->names));
    for (int i = 0; i < n; i++) {
        sc_dtype_t d = dtypes ? dtypes[i] : SC_FLOAT32;
        m->names[i] = malloc(32);
        snprintf(m->names[i], 32, "layer%d.weight", i);
        m->desc[i].count = counts[i];
        m->desc[i].dtype = d;
        m->desc[i].name = m->names[i];
        m->buf[i] = malloc(counts[i] * rt_size(d) + 8);
    }
}

static inline void rt_model_free(rt_model_t *m)
{
    for (int i = 0; i < m->n; i++) {
        free(m->buf[i]);
        free(m->names[i]);
    }
    free(m->desc);
    free(m->buf);
    free(m->names);
}

/* This rank's gradient g of iteration it, written to dst. */
static inline void rt_fill(const rt_model_t *m, void *dst, uint64_t seed, int rank, int it, int g)
{
    for (size_t e = 0; e < m->desc[g].count; e++)
        rt_store(m->desc[g].dtype, dst, e, rt_value(m->desc[g].dtype, seed, rank, it, g, e));
}

/* Compares gradient g's result at got with the sum over ranks 0..p-1 (those with
 * used[r] set, or all when used is NULL) and iterations its[0..nits) of value / prediv,
 * within the tolerance of tol_dtype. */
static inline int rt_check_grad_as(const rt_model_t *m, const void *got, int g, uint64_t seed,
                                   int p, double prediv, const int *its, int nits,
                                   const int *used, sc_dtype_t tol_dtype)
{
    sc_dtype_t d = m->desc[g].dtype;
    double tol = rt_tolerance(tol_dtype, (int)prediv, p * nits, 4.0 * nits);

    for (size_t e = 0; e < m->desc[g].count; e++) {
        double want = 0.0, v = rt_load(d, got, e);
        for (int k = 0; k < nits; k++)
            for (int r = 0; r < p; r++)
                if (!used || used[r])
                    want += rt_value(d, seed, r, its[k], g, e) / prediv;
        if (d == SC_INT32 || d == SC_INT64)
            want = round(want);
        CHECK(fabs(v - want) <= tol, "gradient %d (%s) element %zu: got %.17g, expected %.17g "
              "within %g", g, m->desc[g].name, e, v, want, tol);
    }
    return 0;
}

/* The same, with the tolerance of the gradient's own dtype. */
static inline int rt_check_grad(const rt_model_t *m, const void *got, int g, uint64_t seed,
                                int p, double prediv, const int *its, int nits,
                                const int *used)
{
    return rt_check_grad_as(m, got, g, seed, p, prediv, its, nits, used, m->desc[g].dtype);
}

/* ---- agreement across ranks ----------------------------------------------------- */

/* Every rank's hash of bufs[0..n) gathered: equal, bit for bit. */
static inline int rt_check_same_bits(rt_world_t *w, const rt_model_t *m, void *const *bufs)
{
    uint64_t h = SC_TEST_HASH_INIT, *all = calloc((size_t)w->size, 8);

    for (int g = 0; g < m->n; g++)
        if (bufs[g])
            h = sc_test_hash(h, bufs[g], m->desc[g].count * rt_size(m->desc[g].dtype));
    CHECK_OK(sc_allgather(&h, all, 1, SC_INT64, w->comm, NULL, NULL));
    for (int r = 0; r < w->size; r++)
        CHECK(all[r] == all[0], "results differ across ranks: hash of rank 0 %016" PRIx64
              ", of rank %d %016" PRIx64, all[0], r, all[r]);
    free(all);
    return 0;
}

/* Every rank's int gathered and compared with rank 0's. */
static inline int rt_check_same_int(rt_world_t *w, long v, const char *what)
{
    int64_t mine = v, *all = calloc((size_t)w->size, 8);

    CHECK_OK(sc_allgather(&mine, all, 1, SC_INT64, w->comm, NULL, NULL));
    for (int r = 0; r < w->size; r++)
        CHECK(all[r] == all[0], "%s differs: %" PRId64 " on rank 0, %" PRId64 " on rank %d",
              what, all[0], all[r], r);
    free(all);
    return 0;
}

static inline int rt_main(const rt_test_t *tests, int argc, char **argv)
{
    const char *r = getenv("SC_RANK");

    setvbuf(stdout, NULL, _IOLBF, 0);
    rt_rank = r ? atoi(r) : 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s TEST [ARGS...]\n", argv[0]);
        return 1;
    }
    for (const rt_test_t *t = tests; t->name; t++) {
        if (strcmp(argv[1], t->name) == 0) {
            int rc = t->fn(argc - 2, argv + 2);
            printf("%s: %s (rank %d)\n", rc ? "FAIL" : "PASS", t->name, rt_rank);
            return rc;
        }
    }
    fprintf(stderr, "no test named %s\n", argv[1]);
    return 1;
}

#endif
