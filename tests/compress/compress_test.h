/* Harness of the compression tests (multi-rank, under scrun): the reducer tests'
 * harness (a world, CHECK, CHECK_STATUS, CHECK_SAYS, rt_mix, rt_main) plus what every
 * compression test computes independently of the library: values, conversions to the
 * wire's dtypes, a top-k reference (a selection by magnitude, NaN above Inf, ties by
 * lowest index) and hashes compared across ranks. */
#ifndef SC_TEST_COMPRESS_TEST_H
#define SC_TEST_COMPRESS_TEST_H

#include "../reducer/reducer_test.h"

/* A value with at most 8 significant bits, distinct magnitudes for distinct h in
 * [0, 2^16): sign * (1 + (h % 256) / 256) * 2^(h / 256 % 8 - 4). Sums of a few of them
 * are exact in float32. */
static inline double ct_value(uint64_t h)
{
    int sign = (h >> 20) & 1 ? -1 : 1;
    int mant = (int)(h % 256), ex = (int)(h / 256 % 8) - 4;

    return sign * ldexp(1.0 + mant / 256.0, ex);
}

/* v rounded to the dtype (to nearest even), as double. */
static inline double ct_round(sc_dtype_t d, double v)
{
    switch (d) {
    case SC_FLOAT32: return (float)v;
    case SC_FLOAT16: return (double)(_Float16)(float)v;
    case SC_BFLOAT16: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        if ((u & 0x7fffffffu) > 0x7f800000u)
            return f;
        u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
        memcpy(&f, &u, 4);
        return f;
    }
    default: return v;
    }
}

/* Stores v (already representable) as element e of a buffer of dtype d. */
static inline void ct_store(sc_dtype_t d, void *buf, size_t e, double v)
{
    if (d == SC_BFLOAT16) {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        ((uint16_t *)buf)[e] = (uint16_t)(u >> 16);
        return;
    }
    rt_store(d, buf, e, v);
}

/* Magnitude order: NaN above Inf above finite; larger first; ties by lower index. Each
 * value's place as one integer, larger first: a NaN's bits (any payload) as the
 * largest, else those of |x| (ordered as the magnitudes are, Inf above every finite
 * one, -0 equal to +0). */
static inline uint64_t ct_key(double x)
{
    double a = fabs(x);
    uint64_t key = UINT64_MAX;

    if (!isnan(a))
        memcpy(&key, &a, 8);
    return key;
}

static inline void ct_swap(uint64_t *key, size_t x, size_t y)
{
    uint64_t t = key[x];

    key[x] = key[y];
    key[y] = t;
}

/* The k indices of the largest magnitudes of v[0..n), ascending, into idx; key: room for
 * n keys, overwritten. A selection of the k-th largest key (quickselect on the keys
 * alone, a median of three drawn values as pivot, equal keys kept together), then one
 * pass in index order that takes every larger key and the first of the equal ones: the
 * order is total, so that is the set a sort would give, and it comes out ascending.
 * Neither a sort of all n (most of the large density tests' time) nor of the k chosen
 * (qsort of the indices was a third of the compressor fuzzer's time at high densities). */
static inline void ct_topk_in(const double *v, size_t n, size_t k, size_t *idx,
                              uint64_t *key)
{
    uint64_t kth = 0, draw = 0x9e3779b97f4a7c15ull;
    size_t lo = 0, hi = n, above = 0, equal, o = 0;

    if (k >= n) { /* every index (no key needed) */
        for (size_t i = 0; i < n; i++)
            idx[i] = i;
        return;
    }
    if (k == 0)
        return;
    for (size_t i = 0; i < n; i++)
        key[i] = ct_key(v[i]);
    /* [0, lo) above every key of [lo, hi), which are above those of [hi, n); the k-th
     * largest, at place k - 1, in [lo, hi). */
    for (;;) {
        uint64_t c[3], pivot;
        size_t gt = lo, i = lo, lt = hi;

        /* The median of three at drawn places (a fixed sequence): the first, middle
         * and last of the range were quadratic on magnitudes that rise then fall, 10 s
         * for 300,000 values (each partition split off a few). */
        for (int j = 0; j < 3; j++) {
            draw = draw * 6364136223846793005ull + 1442695040888963407ull;
            c[j] = key[lo + (size_t)(draw >> 33) % (hi - lo)];
        }
        pivot = c[0] < c[1] ? (c[1] < c[2] ? c[1] : c[0] < c[2] ? c[2] : c[0])
                            : (c[0] < c[2] ? c[0] : c[1] < c[2] ? c[2] : c[1]);
        /* [lo, gt) above the pivot, [gt, i) equal to it, [lt, hi) below it. */
        while (i < lt) {
            if (key[i] > pivot)
                ct_swap(key, i++, gt++);
            else if (key[i] < pivot)
                ct_swap(key, i, --lt);
            else
                i++;
        }
        if (k - 1 < gt) {
            hi = gt;
        } else if (k - 1 < lt) {
            kth = pivot;
            above = gt;
            break;
        } else {
            lo = lt;
        }
    }
    equal = k - above;
    for (size_t i = 0; i < n && o < k; i++) {
        uint64_t x = ct_key(v[i]);
        if (x > kth || (x == kth && equal > 0 && equal--))
            idx[o++] = i;
    }
}

/* The same with room for the keys of its own. */
static inline void ct_topk(const double *v, size_t n, size_t k, size_t *idx)
{
    uint64_t *key = malloc((n ? n : 1) * sizeof(*key));

    if (!key) {
        fprintf(stderr, "ct_topk: out of memory\n");
        exit(1);
    }
    ct_topk_in(v, n, k, idx, key);
    free(key);
}

/* The saved compressor state's payload hash (compressor_state.c), computed here
 * independently: FNV-1a over 8-byte words then the tail bytes; from version 3 it folds
 * h ^= h >> 29 after each multiply (versions 1 and 2 do not), from version 6 each word
 * is mixed first (w ^= w >> 32, w *= 0xbf58476d1ce4e5b9). */
static inline uint64_t ct_state_hash(const unsigned char *q, size_t n, uint32_t version)
{
    uint64_t h = 0xcbf29ce484222325ull, w;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        memcpy(&w, q + i, 8);
        if (version >= 6)
            w = (w ^ (w >> 32)) * 0xbf58476d1ce4e5b9ull;
        h = (h ^ w) * 0x100000001b3ull;
        if (version >= 3)
            h ^= h >> 29;
    }
    for (; i < n; i++) {
        h = (h ^ q[i]) * 0x100000001b3ull;
        if (version >= 3)
            h ^= h >> 29;
    }
    return h;
}

/* Rank r's value at an index every rank sends, whose sum over 3 or 4 ranks depends on
 * the order the ranks are added in: 2^26, 5, -2^25, 3 (ranks past 3 send 0). In float32,
 * rank order rounds 2^26 + 5 up to a multiple of 8 and 2^25 + 8 + 3 to one of 4; every
 * other order, but rank 1 before rank 0 (addition commutes), gives another float32.
 * Scaled by 2^-11 for float16 values (in range, each exact) and the large ones by 2^29
 * for float64 sums (where 8 is their unit in the last place as well).
 * A float16 or bfloat16 result (acc) is the float32 sum rounded once at the end, to 11
 * or 8 bits, which rounds the sums of those values scaled by 2^-11 (2^14 plus a few
 * 2^-11) to 2^14 in every order. For it the large values cancel, 2^15 and -2^15, so
 * that the result is what the float32 roundings left of the small ones, 5 and 3 times
 * 2^-11, exact in every dtype: in rank order 2^15 + 5 x 2^-11 rounds up to 2^15 + 8 x
 * 2^-11, and the sum is 11 x 2^-11 on 4 ranks, 8 x 2^-11 on 3; every other order (but
 * rank 1 before rank 0) gives 5, 7, 8 or 9 x 2^-11 on 4 ranks, 4 or 5 x 2^-11 on 3. */
static inline double ct_order_value(int r, sc_dtype_t acc, sc_dtype_t vd)
{
    static const double v[4] = {0x1p26, 5.0, -0x1p25, 3.0};
    double x = r < 4 ? v[r] : 0.0;

    if (acc == SC_FLOAT16 || acc == SC_BFLOAT16)
        return fabs(x) > 8.0 ? copysign(0x1p15, x) : x * 0x1p-11;
    if (vd == SC_FLOAT16)
        return x * 0x1p-11;
    return acc == SC_FLOAT64 && fabs(x) > 8.0 ? x * 0x1p29 : x;
}

/* The sum over p ranks of ct_order_value, added in rank order (rank 0 first) in the
 * sparse aggregation's accumulation type (float64, else float32), rounded to acc. */
static inline double ct_order_sum(int p, sc_dtype_t acc, sc_dtype_t vd)
{
    double d = 0.0;
    float f = 0.0f;

    for (int r = 0; r < p; r++) {
        d += ct_order_value(r, acc, vd);
        f += (float)ct_order_value(r, acc, vd);
    }
    return acc == SC_FLOAT64 ? d : ct_round(acc, f);
}

/* Every rank's hash of buf gathered: equal, bit for bit. */
static inline int ct_check_same_bits(rt_world_t *w, const void *buf, size_t bytes)
{
    return rt_check_same_int(w, (long)sc_test_hash(SC_TEST_HASH_INIT, buf, bytes),
                             "the hash of the results");
}

/* The communicator still works after an error that every rank returned. */
static inline int ct_check_comm_works(rt_world_t *w)
{
    int64_t one = 1, sum = 0;

    CHECK_OK(sc_allreduce(&one, &sum, 1, SC_INT64, SC_SUM, w->comm, NULL, NULL));
    CHECK(sum == w->size, "the all-reduce after the error gave %" PRId64, sum);
    return 0;
}

#endif
