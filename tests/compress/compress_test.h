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
typedef struct {
    uint64_t key;
    size_t i;
} ct_rank_t;

static inline ct_rank_t ct_rank_of(const double *v, size_t i)
{
    double a = fabs(v[i]);
    ct_rank_t r = {UINT64_MAX, i};

    if (!isnan(a))
        memcpy(&r.key, &a, 8);
    return r;
}

/* Whether x comes before y in magnitude order (no two have the same index). */
static inline int ct_before(ct_rank_t x, ct_rank_t y)
{
    return x.key != y.key ? x.key > y.key : x.i < y.i;
}

static inline void ct_swap(ct_rank_t *all, size_t x, size_t y)
{
    ct_rank_t t = all[x];

    all[x] = all[y];
    all[y] = t;
}

static inline int ct_cmp_index(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    return i < j ? -1 : i > j;
}

/* The k indices of the largest magnitudes of v[0..n), ascending, into idx. A selection
 * (quickselect, a median of three drawn values as pivot), not a sort of all n: the sort
 * took most of the large density tests' time, hundreds of thousands of indices per
 * bucket and iteration. The order is total, so the first k are the same set whatever
 * the method. */
static inline void ct_topk(const double *v, size_t n, size_t k, size_t *idx)
{
    ct_rank_t *all = malloc((n ? n : 1) * sizeof(*all));
    size_t lo = 0, hi = n;
    uint64_t draw = 0x9e3779b97f4a7c15ull;

    if (!all) {
        fprintf(stderr, "ct_topk: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        all[i] = ct_rank_of(v, i);
    /* [0, lo) come before [lo, hi), which come before [hi, n); lo <= k <= hi. */
    while (hi - lo > 1 && lo < k && k < hi) {
        size_t mid, q = lo;

        /* The median of three at drawn places (a fixed sequence): the first, middle
         * and last of the range were quadratic on magnitudes that rise then fall, 10 s
         * for 300,000 values (each partition split off a few). */
        for (int j = 0; j < 3; j++) {
            draw = draw * 6364136223846793005ull + 1442695040888963407ull;
            ct_swap(all, j == 0 ? lo : j == 1 ? lo + (hi - lo) / 2 : hi - 1,
                    lo + (size_t)(draw >> 33) % (hi - lo));
        }
        mid = lo + (hi - lo) / 2;
        if (ct_before(all[mid], all[lo]))
            ct_swap(all, mid, lo);
        if (ct_before(all[hi - 1], all[lo]))
            ct_swap(all, hi - 1, lo);
        if (ct_before(all[hi - 1], all[mid]))
            ct_swap(all, hi - 1, mid);
        ct_swap(all, mid, hi - 1); /* the median, the pivot, last */
        for (size_t i = lo; i < hi - 1; i++)
            if (ct_before(all[i], all[hi - 1])) {
                ct_swap(all, i, q);
                q++;
            }
        ct_swap(all, q, hi - 1); /* [lo, q) before the pivot at q, (q, hi) after it */
        if (k <= q)
            hi = q;
        else
            lo = q + 1;
    }
    for (size_t i = 0; i < k; i++)
        idx[i] = all[i].i;
    qsort(idx, k, sizeof(*idx), ct_cmp_index);
    free(all);
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
