/* Unit tests of top-k selection (sc_topk_*) on the host: every mode against references
 * computed here (a qsort of (magnitude class, magnitude, index) in double), every dtype,
 * both index widths, the CPU paths this machine has, several thread counts; the
 * approximate mode's threshold kept across calls; random-k's draws; the refusal of a
 * device pointer without a GPU (the CUDA driver's pointer attributes faked), the
 * argument errors and a selector used in a forked child. test_topk NAME [ARGS...]; exit 77 means skipped. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"
#include "../common/sc_fake_device.h"
#include "topk_data.h"

#define SKIPPED 77

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

/* FNV-1a over the bytes of x: the reference order below is kept for the data it was
 * sorted for, since many selections (k, threads) check against one array. */
static uint64_t data_hash(const void *x, size_t bytes)
{
    const unsigned char *p = x;
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < bytes; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Every element in the reference order (largest magnitude first), cached for the last
 * array asked about. */
static const ref_t *reference_order(sc_dtype_t t, const void *x, size_t n)
{
    static struct {
        sc_dtype_t t;
        size_t n;
        uint64_t h;
        ref_t *r;
    } cache;
    uint64_t h = data_hash(x, n * esize(t));

    if (cache.r && cache.t == t && cache.n == n && cache.h == h)
        return cache.r;
    free(cache.r);
    cache.r = malloc((n ? n : 1) * sizeof(*cache.r));
    for (size_t i = 0; i < n; i++) {
        double v = elem(t, x, i);
        cache.r[i].cls = isnan(v) ? 2 : isinf(v) ? 1 : 0;
        cache.r[i].mag = cache.r[i].cls ? 0.0 : fabs(v);
        cache.r[i].index = i;
    }
    qsort(cache.r, n, sizeof(*cache.r), ref_cmp);
    cache.t = t;
    cache.n = n;
    cache.h = h;
    return cache.r;
}

/* The k indices of the largest magnitudes (NaN, then Inf, then finite; ties by lowest
 * index), ascending. Caller frees. */
static size_t *reference_topk(sc_dtype_t t, const void *x, size_t n, size_t k)
{
    const ref_t *r = reference_order(t, x, n);
    size_t *idx = malloc((k ? k : 1) * sizeof(*idx));

    for (size_t i = 0; i < k; i++)
        idx[i] = r[i].index;
    qsort(idx, k, sizeof(*idx), index_cmp);
    return idx;
}

/* Runs one selection and compares with the reference: *selected is k (exact) or at most
 * k (approx; then the selection is the reference's top *selected), the indices ascending
 * and the signed values bit for bit. got (may be NULL) receives *selected. */
static int check_selection(sc_topk_t *topk, sc_dtype_t t, int bits, const void *x, size_t n,
                           size_t k, int exact, size_t *got_selected, const char *what)
{
    size_t es = esize(t), selected = (size_t)-1, *ref = NULL;
    void *indices = malloc((k ? k : 1) * 8), *values = malloc((k ? k : 1) * es);
    int bad = 1;

    if (sc_topk_select(topk, x, t, n, k, bits, indices, values, &selected, NULL) != SC_SUCCESS) {
        fprintf(stderr, "  %s: %s\n", what, sc_last_error());
        goto out;
    }
    if (exact ? selected != k : selected > k) {
        fprintf(stderr, "  %s: selected %zu, expected %s%zu\n", what, selected,
                exact ? "" : "at most ", k);
        goto out;
    }
    ref = reference_topk(t, x, n, selected);
    bad = 0;
    for (size_t i = 0; i < selected && !bad; i++) {
        size_t got = index_at(indices, bits, i);
        if (got != ref[i]) {
            fprintf(stderr, "  %s: indices[%zu] = %zu, expected %zu\n", what, i, got, ref[i]);
            bad = 1;
        } else if (memcmp((char *)values + i * es, (const char *)x + got * es, es) != 0) {
            fprintf(stderr, "  %s: values[%zu] differs from x[%zu]\n", what, i, got);
            bad = 1;
        }
    }
    if (got_selected)
        *got_selected = selected;
out:
    free(ref);
    free(values);
    free(indices);
    return bad;
}

/* Room for the selection of up to k elements: 64-bit indices, values, the count. */
typedef struct {
    uint64_t *indices;
    void *values;
    size_t selected;
} picks_t;

static void picks_alloc(picks_t *p, size_t k, sc_dtype_t t)
{
    p->indices = malloc((k ? k : 1) * sizeof(*p->indices));
    p->values = malloc((k ? k : 1) * esize(t));
    p->selected = 0;
}

static void picks_free(picks_t *p)
{
    free(p->indices);
    free(p->values);
}

/* One selection into p whose result is checked for form only: at most k, indices
 * ascending below n, values x's bits at them. */
static int select_checked(sc_topk_t *topk, sc_dtype_t t, const void *x, size_t n, size_t k,
                          picks_t *p, const char *what)
{
    size_t es = esize(t);

    CHECK_OK(sc_topk_select(topk, x, t, n, k, 64, p->indices, p->values, &p->selected, NULL));
    CHECK(p->selected <= k, "%s: selected %zu of k = %zu", what, p->selected, k);
    for (size_t i = 0; i < p->selected; i++) {
        uint64_t at = p->indices[i];
        CHECK(at < n && (i == 0 || at > p->indices[i - 1]),
              "%s: indices[%zu] = %llu after %llu (n = %zu)", what, i, (unsigned long long)at,
              i ? (unsigned long long)p->indices[i - 1] : 0ull, n);
        CHECK(memcmp((char *)p->values + i * es, (const char *)x + at * es, es) == 0,
              "%s: values[%zu] differs from x[%llu]", what, i, (unsigned long long)at);
    }
    return 0;
}

static sc_status_t make_topk(sc_topk_mode_t mode, int threads, uint64_t seed,
                             double sample_ratio, sc_topk_t **topk)
{
    sc_topk_config_t cfg = SC_TOPK_CONFIG_INIT;
    cfg.mode = mode;
    cfg.threads = threads;
    cfg.seed = seed;
    cfg.sample_ratio = sample_ratio;
    return sc_topk_create(&cfg, topk);
}

/* x[i] *= factor for every element (NaN stays NaN). */
static void scale(sc_dtype_t t, void *x, size_t n, double factor)
{
    for (size_t i = 0; i < n; i++)
        put(t, x, i, elem(t, x, i) * factor);
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

/* The arguments DTYPE BITS: 0, or SKIPPED when SC_CPU_ISA names a path this CPU lacks. */
static int dtype_bits_args(int argc, char **argv, sc_dtype_t *t, int *bits)
{
    CHECK(argc == 2 && parse_dtype(argv[0], t) == 0, "usage: DTYPE BITS");
    *bits = atoi(argv[1]);
    return isa_missing() ? SKIPPED : 0;
}

/* Every data kind, sizes that are multiples of nothing, k from 1 to n, thread counts
 * 1, 2, 3 and 5: the selection equals the reference. */
static int test_exact_matches_reference(int argc, char **argv)
{
    static const size_t sizes[] = {1, 7, 100, 4099, 262147};
    static const int threads[] = {1, 2, 3, 5};
    sc_dtype_t t;
    int bits, bad = 0, rc;

    if ((rc = dtype_bits_args(argc, argv, &t, &bits)) != 0)
        return rc;
    for (size_t si = 0; si < NELEM(sizes) && !bad; si++) {
        size_t n = sizes[si];
        void *x = malloc(n * esize(t));
        const size_t ks[] = {1, n, n / 100 + 1, n / 3, n - n / 7};
        for (int d = 0; d < DATA_COUNT && !bad; d++) {
            fill(t, x, n, (data_kind_t)d, n * 31 + (size_t)d);
            for (size_t ti = 0; ti < NELEM(threads) && !bad; ti++) {
                sc_topk_t *topk;
                CHECK_OK(make_topk(SC_TOPK_EXACT, threads[ti], 0, 0.0, &topk));
                for (size_t ki = 0; ki < NELEM(ks) && !bad; ki++) {
                    char what[160];
                    snprintf(what, sizeof(what), "%s n=%zu k=%zu %s threads=%d",
                             sc_dtype_name(t), n, ks[ki], data_name((data_kind_t)d),
                             threads[ti]);
                    bad = check_selection(topk, t, bits, x, n, ks[ki], 1, NULL, what);
                }
                sc_topk_destroy(topk);
            }
        }
        free(x);
    }
    return bad;
}

/* Approximate mode on every data kind, three similar steps each: at most k, and what it
 * returns is the reference's top of that many (the threshold cuts through no tie).
 * Below 2^16 elements it is the exact selection. */
static int test_approx_returns_the_largest(int argc, char **argv)
{
    static const size_t sizes[] = {1000, 65537, 300007};
    sc_dtype_t t;
    int bits, bad = 0, rc;

    if ((rc = dtype_bits_args(argc, argv, &t, &bits)) != 0)
        return rc;
    for (size_t si = 0; si < NELEM(sizes) && !bad; si++) {
        size_t n = sizes[si], k = n / 100 + 1;
        void *x = malloc(n * esize(t));
        for (int d = 0; d < DATA_COUNT && !bad; d++) {
            sc_topk_t *topk;
            CHECK_OK(make_topk(SC_TOPK_APPROX, 2, 5, 0.0, &topk));
            for (int step = 0; step < 3 && !bad; step++) {
                char what[160];
                snprintf(what, sizeof(what), "%s n=%zu k=%zu %s step %d", sc_dtype_name(t),
                         n, k, data_name((data_kind_t)d), step);
                fill(t, x, n, (data_kind_t)d, n * 7 + (size_t)d * 100 + (size_t)step);
                bad = check_selection(topk, t, bits, x, n, k, n < 65536, NULL, what);
            }
            sc_topk_destroy(topk);
        }
        free(x);
    }
    return bad;
}

/* Twenty similar steps (fresh data of one distribution): every count lies in the band
 * [k - k/4, k] the kept threshold aims at. */
static int test_approx_count_stays_in_band(int argc, char **argv)
{
    const size_t n = (size_t)1 << 20, k = n / 100;
    float *x = malloc(n * sizeof(*x));
    sc_topk_t *topk;
    picks_t p;

    (void)argc, (void)argv;
    picks_alloc(&p, k, SC_FLOAT32);
    CHECK_OK(make_topk(SC_TOPK_APPROX, 2, 11, 0.1, &topk));
    for (int step = 0; step < 20; step++) {
        fill(SC_FLOAT32, x, n, DATA_GAUSS, 1000 + (uint64_t)step);
        if (select_checked(topk, SC_FLOAT32, x, n, k, &p, "step"))
            return 1;
        CHECK(p.selected >= k - k / 4 && p.selected <= k,
              "step %d selected %zu, band [%zu, %zu]", step, p.selected, k - k / 4, k);
    }
    sc_topk_destroy(topk);
    picks_free(&p);
    free(x);
    return 0;
}

/* The threshold is kept across calls: data halved after a step lets nothing through (a
 * fresh estimate would return about k), and the next call is in the band again; data
 * grown by 5% lets more than k through, and the k largest come back (exact); data
 * doubled after halved data overflows the scan and the call selects exactly. */
static int test_approx_keeps_the_threshold(int argc, char **argv)
{
    const size_t n = (size_t)1 << 20, k = n / 100;
    float *x = malloc(n * sizeof(*x));
    sc_topk_t *topk;
    size_t selected;
    struct {
        double factor;
        int exact;         /* the call must return exactly k, the reference's */
        size_t lo, hi;     /* or a count in [lo, hi] */
    } steps[] = {{1.0, 0, k - k / 4, k},  {0.5, 0, 0, 0},        {0.5, 0, k - k / 4, k},
                 {0.5, 0, k - k / 4, k},  {0.525, 1, k, k},      {0.525, 0, k - k / 4, k},
                 {1.05, 1, k, k},         {1.05, 0, k - k / 4, k}};

    (void)argc, (void)argv;
    CHECK_OK(make_topk(SC_TOPK_APPROX, 2, 3, 0.1, &topk));
    for (size_t s = 0; s < NELEM(steps); s++) {
        char what[64];
        snprintf(what, sizeof(what), "step %zu (data x %g)", s, steps[s].factor);
        fill(SC_FLOAT32, x, n, DATA_GAUSS, 77 + s);
        scale(SC_FLOAT32, x, n, steps[s].factor);
        if (check_selection(topk, SC_FLOAT32, 32, x, n, k, steps[s].exact, &selected, what))
            return 1;
        CHECK(selected >= steps[s].lo && selected <= steps[s].hi,
              "%s: selected %zu, expected [%zu, %zu]", what, selected, steps[s].lo,
              steps[s].hi);
    }
    sc_topk_destroy(topk);
    free(x);
    return 0;
}

/* The same inputs give the same selections whatever the threads, across steps that keep,
 * raise and re-estimate the threshold and one that overflows. */
static int test_approx_is_deterministic(int argc, char **argv)
{
    static const double factors[] = {1.0, 1.0, 1.2, 0.6, 0.6, 3.0, 1.0};
    const size_t n = 500009, k = n / 20;
    float *x = malloc(n * sizeof(*x));
    static const int threads[2] = {1, 3};
    sc_topk_t *topk[2];
    picks_t p[2];

    (void)argc, (void)argv;
    for (int r = 0; r < 2; r++) {
        CHECK_OK(make_topk(SC_TOPK_APPROX, threads[r], 9, 0.0, &topk[r]));
        picks_alloc(&p[r], k, SC_FLOAT32);
    }
    for (size_t s = 0; s < NELEM(factors); s++) {
        fill(SC_FLOAT32, x, n, DATA_SPECIAL, 500 + s);
        scale(SC_FLOAT32, x, n, factors[s]);
        for (int r = 0; r < 2; r++)
            if (select_checked(topk[r], SC_FLOAT32, x, n, k, &p[r], "approx"))
                return 1;
        CHECK(p[0].selected == p[1].selected &&
                  memcmp(p[0].indices, p[1].indices, p[0].selected * 8) == 0 &&
                  memcmp(p[0].values, p[1].values, p[0].selected * 4) == 0,
              "step %zu: 1 thread selected %zu, 3 threads %zu, or other elements", s,
              p[0].selected, p[1].selected);
    }
    for (int r = 0; r < 2; r++) {
        sc_topk_destroy(topk[r]);
        picks_free(&p[r]);
    }
    free(x);
    return 0;
}

/* Random-k: k distinct indices, ascending, below n, with x's values, for every size and
 * k from 1 to n. */
static int test_random_draws_distinct_ascending(int argc, char **argv)
{
    static const size_t sizes[] = {1, 7, 100, 4099, 262147};
    sc_dtype_t t;

    CHECK(argc == 1 && parse_dtype(argv[0], &t) == 0, "usage: DTYPE");
    for (size_t si = 0; si < NELEM(sizes); si++) {
        size_t n = sizes[si];
        const size_t ks[] = {1, n, n / 100 + 1, n / 3, n - n / 7};
        void *x = malloc(n * esize(t));
        sc_topk_t *topk;
        picks_t p;

        picks_alloc(&p, n, t);
        fill(t, x, n, DATA_SPECIAL, n);
        CHECK_OK(make_topk(SC_TOPK_RANDOM, 2, 1, 0.0, &topk));
        for (size_t ki = 0; ki < NELEM(ks); ki++) {
            if (ks[ki] == 0)
                continue;
            if (select_checked(topk, t, x, n, ks[ki], &p, "random"))
                return 1;
            CHECK(p.selected == ks[ki], "n=%zu: selected %zu of k = %zu", n, p.selected,
                  ks[ki]);
        }
        sc_topk_destroy(topk);
        picks_free(&p);
        free(x);
    }
    return 0;
}

/* The draws follow from the seed and the call count: two selectors with one seed agree
 * call for call, successive calls differ, another seed differs. */
static int test_random_is_deterministic_per_seed(int argc, char **argv)
{
    enum { N = 10000, K = 100, CALLS = 3 };
    static const uint64_t seeds[3] = {7, 7, 8};
    float x[N];
    uint64_t got[3][CALLS][K];
    picks_t p;

    (void)argc, (void)argv;
    fill(SC_FLOAT32, x, N, DATA_GAUSS, 1);
    picks_alloc(&p, K, SC_FLOAT32);
    for (int s = 0; s < 3; s++) {
        sc_topk_t *topk;
        CHECK_OK(make_topk(SC_TOPK_RANDOM, s + 1, seeds[s], 0.0, &topk));
        for (int c = 0; c < CALLS; c++) {
            if (select_checked(topk, SC_FLOAT32, x, N, K, &p, "random"))
                return 1;
            memcpy(got[s][c], p.indices, sizeof(got[s][c]));
        }
        sc_topk_destroy(topk);
    }
    picks_free(&p);
    CHECK(memcmp(got[0], got[1], sizeof(got[0])) == 0, "seed 7 drew differently twice");
    for (int c = 1; c < CALLS; c++)
        CHECK(memcmp(got[0][c], got[0][c - 1], sizeof(got[0][c])) != 0,
              "calls %d and %d drew the same indices", c - 1, c);
    CHECK(memcmp(got[0][0], got[2][0], sizeof(got[0][0])) != 0, "seeds 7 and 8 drew the same");
    return 0;
}

/* Every index is drawn about equally often: 4000 draws of 8 of 64, each index's count
 * within 5 standard deviations of 500. */
static int test_random_is_uniform(int argc, char **argv)
{
    enum { N = 64, K = 8, CALLS = 4000 };
    const double mean = (double)CALLS * K / N, sd = sqrt(mean * (1.0 - (double)K / N));
    float x[N];
    unsigned count[N] = {0};
    sc_topk_t *topk;
    picks_t p;

    (void)argc, (void)argv;
    fill(SC_FLOAT32, x, N, DATA_GAUSS, 2);
    picks_alloc(&p, K, SC_FLOAT32);
    CHECK_OK(make_topk(SC_TOPK_RANDOM, 1, 123, 0.0, &topk));
    for (int c = 0; c < CALLS; c++) {
        if (select_checked(topk, SC_FLOAT32, x, N, K, &p, "random"))
            return 1;
        for (int i = 0; i < K; i++)
            count[p.indices[i]]++;
    }
    sc_topk_destroy(topk);
    picks_free(&p);
    for (int i = 0; i < N; i++)
        CHECK(fabs(count[i] - mean) <= 5.0 * sd,
              "index %d drawn %u times, expected %.0f +- %.0f", i, count[i], mean, 5.0 * sd);
    return 0;
}

/* No GPU here: the stand-in driver reports the pages at fake_device as device memory of
 * GPU 0. They are mapped without access, so a read on the host would crash the test. */
static char *fake_device;
static const size_t fake_bytes = 3 * 4096;

/* A device x is refused without being read or writing an output: with host outputs
 * (mixed memory), in the approximate mode, and (host-only build) in any mode; in a CUDA
 * build without a GPU the exact mode fails in the CUDA runtime. */
static int check_device_refusals(void)
{
    const size_t n = 1024, k = 10;
    void *x = fake_device, *dind = fake_device + 4096, *dval = fake_device + 8192;
    uint32_t hind[10] = {0};
    float hval[10] = {0};
    size_t selected = 12345;
    sc_topk_t *exact, *approx;

    CHECK_OK(make_topk(SC_TOPK_EXACT, 1, 0, 0.0, &exact));
    CHECK_OK(make_topk(SC_TOPK_APPROX, 1, 0, 0.0, &approx));
    CHECK_REFUSED(sc_topk_select(exact, x, SC_FLOAT32, n, k, 32, hind, hval, &selected, NULL),
                  SC_ERR_INVALID_ARG, "all be host memory or all on one GPU");
    CHECK_REFUSED(sc_topk_select(exact, hval, SC_FLOAT32, k, k, 32, dind, dval, &selected,
                                 NULL),
                  SC_ERR_INVALID_ARG, "all be host memory or all on one GPU");
#ifdef SC_HAVE_CUDA
    CHECK_REFUSED(sc_topk_select(approx, x, SC_FLOAT32, n, k, 32, dind, dval, &selected, NULL),
                  SC_ERR_UNSUPPORTED, "SC_TOPK_EXACT mode only");
    if (sc_device_count() > 0) {
        printf("note: a GPU is visible; the exact device path runs in tests/gpu, not on "
               "a fake pointer\n");
    } else {
        CHECK_REFUSED(sc_topk_select(exact, x, SC_FLOAT32, n, k, 32, dind, dval, &selected,
                                     NULL),
                      SC_ERR_DEVICE, "sc_topk_select");
    }
#else
    CHECK_REFUSED(sc_topk_select(approx, x, SC_FLOAT32, n, k, 32, dind, dval, &selected, NULL),
                  SC_ERR_UNSUPPORTED, "need a CUDA build");
    CHECK_REFUSED(sc_topk_select(exact, x, SC_FLOAT32, n, k, 32, dind, dval, &selected, NULL),
                  SC_ERR_UNSUPPORTED, "x is on GPU 0, but device buffers need a CUDA build");
#endif
    CHECK(selected == 12345, "selected was written (%zu) by a refused call", selected);
    for (size_t i = 0; i < k; i++)
        CHECK(hind[i] == 0 && hval[i] == 0.0f, "output %zu was written by a refused call", i);
    sc_topk_destroy(approx);
    sc_topk_destroy(exact);
    return 0;
}

static int test_device_pointer_is_refused(int argc, char **argv)
{
    sc_fake_device_query_fn saved;
    int rc;

    (void)argc, (void)argv;
    fake_device = mmap(NULL, fake_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(fake_device != MAP_FAILED, "mmap of %zu bytes failed", fake_bytes);
    saved = sc_fake_device_install(fake_device, fake_bytes);
    rc = check_device_refusals();
    sc_fake_device_remove(saved);
    munmap(fake_device, fake_bytes);
    return rc;
}

/* A stream with host buffers, bad arguments and a bad configuration are refused with a
 * sentence naming the argument, and nothing is written. */
static int test_argument_errors_are_refused(int argc, char **argv)
{
    float x[16] = {1.0f};
    uint32_t indices[16] = {0};
    float values[16] = {0};
    size_t selected = 99;
    sc_topk_config_t cfg = SC_TOPK_CONFIG_INIT;
    sc_topk_t *topk;

    (void)argc, (void)argv;
    CHECK_OK(make_topk(SC_TOPK_EXACT, 1, 0, 0.0, &topk));
    CHECK_REFUSED(sc_topk_select(topk, x, SC_FLOAT32, 16, 4, 32, indices, values, &selected,
                                 (sc_stream_t)(uintptr_t)0x1000),
                  SC_ERR_INVALID_ARG, "a stream was given, but x is host memory");
    CHECK_REFUSED(sc_topk_select(topk, x, SC_FLOAT32, 16, 17, 32, indices, values, &selected,
                                 NULL),
                  SC_ERR_INVALID_ARG, "k = 17 is larger than n = 16");
    CHECK_REFUSED(sc_topk_select(topk, x, SC_FLOAT32, 16, 4, 16, indices, values, &selected,
                                 NULL),
                  SC_ERR_INVALID_ARG, "index_bits is 16");
    CHECK_REFUSED(sc_topk_select(topk, x, SC_INT32, 16, 4, 32, indices, values, &selected,
                                 NULL),
                  SC_ERR_INVALID_ARG, "is not one of float32");
    CHECK_REFUSED(sc_topk_select(topk, x, SC_FLOAT32, ((size_t)1 << 32) + 1, 4, 32, indices,
                                 values, &selected, NULL),
                  SC_ERR_INVALID_ARG, "need 64-bit indices");
    CHECK_REFUSED(sc_topk_select(topk, NULL, SC_FLOAT32, 16, 4, 32, indices, values,
                                 &selected, NULL),
                  SC_ERR_INVALID_ARG, "x is NULL");
    CHECK(selected == 99 && indices[0] == 0 && values[0] == 0.0f,
          "a refused call wrote an output");
    sc_topk_destroy(topk);
    cfg.mode = (sc_topk_mode_t)7;
    CHECK_REFUSED(sc_topk_create(&cfg, &topk), SC_ERR_INVALID_ARG, "config->mode is 7");
    cfg.mode = SC_TOPK_EXACT;
    cfg.threads = 100000; /* refused before a thread starts */
    CHECK_REFUSED(sc_topk_create(&cfg, &topk), SC_ERR_INVALID_ARG,
                  "config->threads is 100000, allowed: 0 (automatic) or 1 to 4096");
    cfg.threads = -2;
    CHECK_REFUSED(sc_topk_create(&cfg, &topk), SC_ERR_INVALID_ARG, "config->threads is -2");
    cfg.threads = 0;
    cfg.mode = SC_TOPK_APPROX;
    cfg.sample_ratio = 2.0;
    CHECK_REFUSED(sc_topk_create(&cfg, &topk), SC_ERR_INVALID_ARG,
                  "config->sample_ratio is 2");
    return 0;
}

/* n whose bytes overflow (SIZE_MAX float32 elements) is refused before x is read (x
 * holds 16), for every dtype, and nothing is written. */
static int test_count_overflow_is_refused(int argc, char **argv)
{
    static const sc_dtype_t dtypes[] = {SC_FLOAT32, SC_FLOAT64, SC_FLOAT16, SC_BFLOAT16};
    double x[16] = {1.0};
    uint64_t indices[4] = {0};
    double values[4] = {0};
    size_t selected = 99;
    sc_topk_t *topk;

    (void)argc, (void)argv;
    CHECK_OK(make_topk(SC_TOPK_EXACT, 1, 0, 0.0, &topk));
    for (size_t d = 0; d < NELEM(dtypes); d++) {
        CHECK_REFUSED(sc_topk_select(topk, x, dtypes[d], SIZE_MAX, 4, 64, indices, values,
                                     &selected, NULL),
                      SC_ERR_INVALID_ARG, "overflows the buffer size");
        CHECK_REFUSED(sc_topk_select(topk, x, dtypes[d], SIZE_MAX / 2 + 1, 4, 64, indices,
                                     values, &selected, NULL),
                      SC_ERR_INVALID_ARG, "overflows the buffer size");
    }
    CHECK(selected == 99 && indices[0] == 0 && values[0] == 0.0,
          "a refused call wrote an output");
    sc_topk_destroy(topk);
    return 0;
}

/* Host x, indices and values not aligned to their elements are refused, as the kernels
 * refuse them, and nothing is written. */
static int test_misaligned_buffers_are_refused(int argc, char **argv)
{
    float x[16] = {1, 9, 3, 7};
    _Alignas(8) unsigned char ib[8 * 17], vb[4 * 17];
    unsigned char ib0[sizeof(ib)], vb0[sizeof(vb)];
    size_t selected = 99;
    sc_topk_t *topk;

    (void)argc, (void)argv;
    memset(ib, 0x5a, sizeof(ib));
    memset(vb, 0x5a, sizeof(vb));
    memcpy(ib0, ib, sizeof(ib));
    memcpy(vb0, vb, sizeof(vb));
    CHECK_OK(make_topk(SC_TOPK_EXACT, 1, 0, 0.0, &topk));
    CHECK_REFUSED(sc_topk_select(topk, x, SC_FLOAT32, 16, 4, 32, ib + 1, vb, &selected, NULL),
                  SC_ERR_INVALID_ARG, "indices");
    CHECK_REFUSED(sc_topk_select(topk, x, SC_FLOAT32, 16, 4, 32, ib + 1, vb, &selected, NULL),
                  SC_ERR_INVALID_ARG, "not aligned to its 4-byte elements");
    CHECK_REFUSED(sc_topk_select(topk, x, SC_FLOAT32, 16, 4, 64, ib + 4, vb, &selected, NULL),
                  SC_ERR_INVALID_ARG, "not aligned to its 8-byte elements");
    CHECK_REFUSED(sc_topk_select(topk, x, SC_FLOAT32, 16, 4, 32, ib, vb + 2, &selected, NULL),
                  SC_ERR_INVALID_ARG, "values");
    CHECK_REFUSED(sc_topk_select(topk, (char *)x + 1, SC_FLOAT32, 15, 4, 32, ib, vb, &selected,
                                 NULL), SC_ERR_INVALID_ARG, "x (");
    CHECK(selected == 99 && memcmp(ib, ib0, sizeof(ib)) == 0 &&
          memcmp(vb, vb0, sizeof(vb)) == 0, "a refused call wrote an output");
    /* Aligned, the same call selects. */
    CHECK_OK(sc_topk_select(topk, x, SC_FLOAT32, 16, 4, 32, ib, vb, &selected, NULL));
    CHECK(selected == 4, "selected %zu of 4", selected);
    sc_topk_destroy(topk);
    return 0;
}

/* A selector with worker threads, used and destroyed in a child forked after its
 * creation (a data loader's worker, a subprocess): the child's selection equals the
 * reference and its destroy returns; the parent's selector still selects. The child's
 * select waited for ever for the parent's workers, which are not in the child (the
 * alarm fails it here). */
static int test_forked_child_uses_the_parents_selector(int argc, char **argv)
{
    const size_t n = (size_t)1 << 22, k = n / 100;
    float *x = malloc(n * sizeof(*x));
    sc_topk_t *topk;
    int status = 0, bad;
    pid_t pid;

    (void)argc;
    (void)argv;
    CHECK(x != NULL, "out of memory");
    fill(SC_FLOAT32, x, n, DATA_GAUSS, 11);
    CHECK_OK(make_topk(SC_TOPK_EXACT, 4, 0, 0.0, &topk));
    bad = check_selection(topk, SC_FLOAT32, 32, x, n, k, 1, NULL, "the parent, before");
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    CHECK(pid >= 0, "fork failed");
    if (pid == 0) {
        int child_bad;
        alarm(30);
        child_bad = check_selection(topk, SC_FLOAT32, 32, x, n, k, 1, NULL, "the child");
        sc_topk_destroy(topk);
        _exit(child_bad ? 1 : 0);
    }
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child %s %d",
          WIFSIGNALED(status) ? "was killed by signal" : "exited with",
          WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    bad |= check_selection(topk, SC_FLOAT32, 32, x, n, k, 1, NULL, "the parent, after");
    sc_topk_destroy(topk);
    free(x);
    return bad;
}

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} test_t;

static const test_t tests[] = {
    {"exact_matches_reference", test_exact_matches_reference},
    {"approx_returns_the_largest", test_approx_returns_the_largest},
    {"approx_count_stays_in_band", test_approx_count_stays_in_band},
    {"approx_keeps_the_threshold", test_approx_keeps_the_threshold},
    {"approx_is_deterministic", test_approx_is_deterministic},
    {"random_draws_distinct_ascending", test_random_draws_distinct_ascending},
    {"random_is_deterministic_per_seed", test_random_is_deterministic_per_seed},
    {"random_is_uniform", test_random_is_uniform},
    {"device_pointer_is_refused", test_device_pointer_is_refused},
    {"argument_errors_are_refused", test_argument_errors_are_refused},
    {"count_overflow_is_refused", test_count_overflow_is_refused},
    {"misaligned_buffers_are_refused", test_misaligned_buffers_are_refused},
    {"forked_child_uses_the_parents_selector", test_forked_child_uses_the_parents_selector},
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
