/* Unit tests of top-k selection (sc_topk_*) on the host: every mode against references
 * computed here (a qsort of (magnitude class, magnitude, index) in double), every dtype,
 * both index widths, the CPU paths this machine has, several thread counts, and the
 * argument errors. test_topk NAME [ARGS...]; exit 77 means skipped. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A call refused with status and a sentence containing text. */
#define CHECK_REFUSED(call, status, text)                                                \
    do {                                                                                 \
        sc_status_t st_ = (call);                                                        \
        CHECK(st_ == (status), "%s returned %s (%s)", #call, sc_status_string(st_),      \
              sc_last_error());                                                          \
        CHECK(strstr(sc_last_error(), (text)) != NULL, "sentence '%s' lacks '%s'",       \
              sc_last_error(), (text));                                                  \
    } while (0)

#define SKIPPED 77
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---- random numbers and elements ---------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * 0x1p-53;
}

static size_t esize(sc_dtype_t t)
{
    return t == SC_FLOAT64 ? 8 : t == SC_FLOAT32 ? 4 : 2;
}

static double bf16_to_double(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Element i of x as a double (NaN stays NaN, the sign is kept). */
static double elem(sc_dtype_t t, const void *x, size_t i)
{
    switch (t) {
    case SC_FLOAT64: return ((const double *)x)[i];
    case SC_FLOAT32: return ((const float *)x)[i];
    case SC_FLOAT16: return (double)((const _Float16 *)x)[i];
    default: return bf16_to_double(((const uint16_t *)x)[i]);
    }
}

/* Stores v into element i (bfloat16 by truncation: the test needs values, not rounding). */
static void put(sc_dtype_t t, void *x, size_t i, double v)
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
static void put_nan(sc_dtype_t t, void *x, size_t i, uint64_t r)
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

static const char *const data_names[] = {"gauss", "ties", "special", "equal", "ramp", "sparse"};

static void fill(sc_dtype_t t, void *x, size_t n, data_kind_t kind, uint64_t seed)
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

/* ---- the reference ------------------------------------------------------------------ */

typedef struct {
    int cls;      /* 2 NaN, 1 Inf, 0 finite */
    double mag;
    size_t index;
} ref_t;

static int ref_cmp(const void *a, const void *b)
{
    const ref_t *p = a, *q = b;
    if (p->cls != q->cls)
        return p->cls > q->cls ? -1 : 1;
    if (p->mag != q->mag)
        return p->mag > q->mag ? -1 : 1;
    return p->index < q->index ? -1 : p->index > q->index;
}

static int index_cmp(const void *a, const void *b)
{
    size_t p = *(const size_t *)a, q = *(const size_t *)b;
    return p < q ? -1 : p > q;
}

/* The k indices of the largest magnitudes (NaN, then Inf, then finite; ties by lowest
 * index), ascending. Caller frees. */
static size_t *reference_topk(sc_dtype_t t, const void *x, size_t n, size_t k)
{
    ref_t *r = malloc((n ? n : 1) * sizeof(*r));
    size_t *idx = malloc((k ? k : 1) * sizeof(*idx));

    for (size_t i = 0; i < n; i++) {
        double v = elem(t, x, i);
        r[i].cls = isnan(v) ? 2 : isinf(v) ? 1 : 0;
        r[i].mag = r[i].cls ? 0.0 : fabs(v);
        r[i].index = i;
    }
    qsort(r, n, sizeof(*r), ref_cmp);
    for (size_t i = 0; i < k; i++)
        idx[i] = r[i].index;
    qsort(idx, k, sizeof(*idx), index_cmp);
    free(r);
    return idx;
}

static size_t index_at(const void *indices, int bits, size_t i)
{
    return bits == 32 ? ((const uint32_t *)indices)[i] : (size_t)((const uint64_t *)indices)[i];
}

/* Runs one selection and compares with the reference: the same indices, ascending, and
 * the signed values bit for bit. */
static int check_exact(sc_topk_t *topk, sc_dtype_t t, int bits, const void *x, size_t n,
                       size_t k, const char *what)
{
    size_t es = esize(t), selected = (size_t)-1;
    void *indices = malloc((k ? k : 1) * 8), *values = malloc((k ? k : 1) * es);
    size_t *ref = reference_topk(t, x, n, k);
    int bad = 0;

    if (sc_topk_select(topk, x, t, n, k, bits, indices, values, &selected, NULL) != SC_SUCCESS) {
        fprintf(stderr, "  %s: %s\n", what, sc_last_error());
        bad = 1;
        goto out;
    }
    if (selected != k) {
        fprintf(stderr, "  %s: selected %zu, expected %zu\n", what, selected, k);
        bad = 1;
        goto out;
    }
    for (size_t i = 0; i < k && !bad; i++) {
        size_t got = index_at(indices, bits, i);
        if (got != ref[i]) {
            fprintf(stderr, "  %s: indices[%zu] = %zu, expected %zu\n", what, i, got, ref[i]);
            bad = 1;
        } else if (memcmp((char *)values + i * es, (const char *)x + got * es, es) != 0) {
            fprintf(stderr, "  %s: values[%zu] differs from x[%zu]\n", what, i, got);
            bad = 1;
        }
    }
out:
    free(ref);
    free(values);
    free(indices);
    return bad;
}

static sc_status_t make_topk(sc_topk_mode_t mode, int threads, uint64_t seed, sc_topk_t **topk)
{
    sc_topk_config_t cfg = SC_TOPK_CONFIG_INIT;
    cfg.mode = mode;
    cfg.threads = threads;
    cfg.seed = seed;
    return sc_topk_create(&cfg, topk);
}

/* ---- the CPU path the environment asks for ------------------------------------------ */

/* 1 when SC_CPU_ISA names a path this CPU lacks (the test is then skipped). */
static int isa_missing(void)
{
    const char *isa = getenv("SC_CPU_ISA");
    __builtin_cpu_init();
    if (isa && strcmp(isa, "avx512") == 0 &&
        !(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512vl"))) {
        printf("SKIP: SC_CPU_ISA=avx512 but this CPU lacks AVX-512 (F, BW, VL)\n");
        return 1;
    }
    if (isa && strcmp(isa, "avx2") == 0 &&
        !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2"))) {
        printf("SKIP: SC_CPU_ISA=avx2 but this CPU lacks AVX2 or BMI2\n");
        return 1;
    }
    return 0;
}

/* ---- tests -------------------------------------------------------------------------- */

static int parse_dtype(const char *s, sc_dtype_t *t)
{
    return sc_dtype_from_name(s, t) == SC_SUCCESS ? 0 : 1;
}

/* Every data kind, sizes that are multiples of nothing, k from 1 to n, thread counts
 * 1, 2, 3 and 5: the selection equals the reference. */
static int test_exact_matches_reference(int argc, char **argv)
{
    static const size_t sizes[] = {1, 7, 100, 4099, 1000003};
    static const int threads[] = {1, 2, 3, 5};
    sc_dtype_t t;
    int bits, bad = 0;

    CHECK(argc == 2 && parse_dtype(argv[0], &t) == 0, "usage: DTYPE BITS");
    bits = atoi(argv[1]);
    if (isa_missing())
        return SKIPPED;
    for (size_t si = 0; si < NELEM(sizes) && !bad; si++) {
        size_t n = sizes[si];
        void *x = malloc(n * esize(t));
        const size_t ks[] = {1, n, n / 100 + 1, n / 3, n - n / 7};
        for (int d = 0; d < DATA_COUNT && !bad; d++) {
            fill(t, x, n, (data_kind_t)d, n * 31 + (size_t)d);
            for (size_t ti = 0; ti < NELEM(threads) && !bad; ti++) {
                sc_topk_t *topk;
                CHECK_OK(make_topk(SC_TOPK_EXACT, threads[ti], 0, &topk));
                for (size_t ki = 0; ki < NELEM(ks) && !bad; ki++) {
                    char what[160];
                    if (n > 100000 && ti > 1 && ki > 2)
                        continue; /* the big sizes' reference sort is slow */
                    snprintf(what, sizeof(what), "%s n=%zu k=%zu %s threads=%d",
                             sc_dtype_name(t), n, ks[ki], data_names[d], threads[ti]);
                    bad = check_exact(topk, t, bits, x, n, ks[ki], what);
                }
                sc_topk_destroy(topk);
            }
        }
        free(x);
    }
    return bad;
}

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} test_t;

static const test_t tests[] = {
    {"exact_matches_reference", test_exact_matches_reference},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_topk NAME [ARGS...]\n");
        return 2;
    }
    for (size_t i = 0; i < NELEM(tests); i++)
        if (strcmp(argv[1], tests[i].name) == 0) {
            int rc = tests[i].fn(argc - 2, argv + 2);
            printf("%s: %s\n", argv[1], rc == 0 ? "ok" : rc == SKIPPED ? "skipped" : "FAILED");
            return rc;
        }
    fprintf(stderr, "test_topk: no test named %s\n", argv[1]);
    return 2;
}
