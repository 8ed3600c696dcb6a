/* Sparse aggregation (sc_sparse_allreduce) across ranks, one behaviour per test
 * (argv[1]), each against a sum computed here in double:
 *   matches_reference DTYPE VDTYPE BITS   pseudo-random indices per rank (ranks pick
 *                                         different ones, some shared), signed values,
 *                                         bit for bit the same on every rank
 *   overlapping_indices_add               every rank sends the same indices
 *   edge_sizes                            k = 0, k = n, n = 1, odd n
 *   nan_and_inf_pass_through
 *   pads_are_skipped                      indices of all ones add nothing
 *   sum_follows_rank_order                values whose float32 (float64) sum depends
 *                                         on the order, also once rounded to a float16
 *                                         or bfloat16 result: the sum in rank order,
 *                                         rank 0 first, on every rank */
#include "compress_test.h"

#define SEED 0x5ba75e01ull

/* Rank r's k pairs of a tensor of n: ascending distinct indices, about half of them
 * shared by every rank (chosen from the seed alone), the others from r. */
static void pairs_of(int r, size_t n, size_t k, size_t *idx, double *val)
{
    unsigned char *used = calloc(n, 1);
    size_t got = 0;

    for (uint64_t t = 0; got < k; t++) {
        uint64_t h = rt_mix(SEED ^ (t % 2 ? (uint64_t)(r + 1) << 40 : 0) ^ t);
        size_t i = (size_t)(h % n);
        if (!used[i]) {
            used[i] = 1;
            got++;
        }
    }
    got = 0;
    for (size_t i = 0; i < n; i++)
        if (used[i]) {
            idx[got] = i;
            val[got++] = ct_value(rt_mix(SEED ^ ((uint64_t)r << 32) ^ i) % (1u << 21));
        }
    free(used);
}

static void put_index(void *ix, int bits, size_t j, uint64_t i)
{
    if (bits == 32)
        ((uint32_t *)ix)[j] = (uint32_t)i;
    else
        ((uint64_t *)ix)[j] = i;
}

/* One sparse all-reduce of k pairs per rank into n elements, checked against the sum
 * over ranks (in rank order, in double: exact for these values) of the values rounded
 * to vdtype, then rounded to dtype. */
static int run_case(rt_world_t *w, sc_dtype_t d, sc_dtype_t vd, int bits, size_t n, size_t k)
{
    size_t *idx = malloc((k ? k : 1) * sizeof(*idx));
    double *val = malloc((k ? k : 1) * sizeof(*val));
    double *want = calloc(n ? n : 1, sizeof(double));
    void *ix = malloc((k ? k : 1) * 8), *vals = malloc((k ? k : 1) * 8);
    void *dense = malloc((n ? n : 1) * 8);

    for (int r = 0; r < w->size; r++) {
        pairs_of(r, n, k, idx, val);
        for (size_t j = 0; j < k; j++) {
            want[idx[j]] += ct_round(vd, val[j]);
            if (r == w->rank) {
                put_index(ix, bits, j, idx[j]);
                ct_store(vd, vals, j, ct_round(vd, val[j]));
            }
        }
    }
    memset(dense, 0xa5, (n ? n : 1) * 8);
    CHECK_OK(sc_sparse_allreduce(w->comm, ix, bits, vals, vd, k, dense, d, n));
    for (size_t i = 0; i < n; i++) {
        double got = rt_load(d, dense, i), exp = ct_round(d, want[i]);
        CHECK(got == exp, "n %zu k %zu %s values %s %d-bit: element %zu is %.17g, expected "
              "%.17g", n, k, sc_dtype_name(d), sc_dtype_name(vd), bits, i, got, exp);
    }
    if (ct_check_same_bits(w, dense, n * rt_size(d)))
        return 1;
    free(idx);
    free(val);
    free(want);
    free(ix);
    free(vals);
    free(dense);
    return 0;
}

static int test_matches_reference(int argc, char **argv)
{
    sc_dtype_t d = SC_FLOAT32, vd = SC_FLOAT32;
    int bits = argc > 2 ? atoi(argv[2]) : 32;
    rt_world_t w;

    if (argc > 1) {
        sc_dtype_from_name(argv[0], &d);
        sc_dtype_from_name(argv[1], &vd);
    }
    if (rt_world(&w))
        return 1;
    if (run_case(&w, d, vd, bits, 5000, 300) || run_case(&w, d, vd, bits, 777, 100))
        return 1;
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

static int test_overlapping_indices_add(int argc, char **argv)
{
    uint32_t ix[3] = {0, 7, 9};
    float vals[3], dense[10];
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    for (int j = 0; j < 3; j++)
        vals[j] = (float)((w.rank + 1) * (j % 2 ? -1 : 1));
    CHECK_OK(sc_sparse_allreduce(w.comm, ix, 32, vals, SC_FLOAT32, 3, dense, SC_FLOAT32, 10));
    for (int i = 0; i < 10; i++) {
        double s = w.size * (w.size + 1) / 2.0;
        double want = i == 0 || i == 9 ? s : i == 7 ? -s : 0.0;
        CHECK(dense[i] == want, "element %d is %g, expected %g", i, dense[i], want);
    }
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

static int test_edge_sizes(int argc, char **argv)
{
    static const size_t cases[][2] = {{100, 0}, {100, 100}, {1, 1}, {1, 0}, {1001, 17},
                                      {0, 0}};
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        if (run_case(&w, SC_FLOAT32, SC_FLOAT32, 32, cases[c][0], cases[c][1]) ||
            run_case(&w, SC_BFLOAT16, SC_FLOAT16, 64, cases[c][0], cases[c][1]))
            return 1;
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* Rank 0 sends NaN at 1 and +Inf at 2, the last rank -Inf at 3 and 1.5 at 1. */
static int test_nan_and_inf_pass_through(int argc, char **argv)
{
    uint32_t ix[2];
    float vals[2], dense[5];
    int last;
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    last = w.size - 1;
    ix[0] = 1, ix[1] = 2;
    vals[0] = NAN, vals[1] = INFINITY;
    if (w.rank == last && w.rank != 0)
        ix[0] = 1, ix[1] = 3, vals[0] = 1.5f, vals[1] = -INFINITY;
    else if (w.rank != 0)
        ix[0] = 0, ix[1] = 4, vals[0] = 0.0f, vals[1] = 0.0f;
    CHECK_OK(sc_sparse_allreduce(w.comm, ix, 32, vals, SC_FLOAT32, 2, dense, SC_FLOAT32, 5));
    CHECK(isnan(dense[1]), "element 1 is %g, expected NaN", dense[1]);
    CHECK(isinf(dense[2]) && dense[2] > 0, "element 2 is %g, expected +Inf", dense[2]);
    if (w.size > 1)
        CHECK(isinf(dense[3]) && dense[3] < 0, "element 3 is %g, expected -Inf", dense[3]);
    CHECK(dense[0] == 0.0f && dense[4] == 0.0f, "elements 0 and 4 are %g and %g", dense[0],
          dense[4]);
    if (ct_check_same_bits(&w, dense, sizeof(dense)))
        return 1;
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

static int test_pads_are_skipped(int argc, char **argv)
{
    uint64_t ix[3] = {UINT64_MAX, 2, UINT64_MAX};
    uint32_t ix32[3] = {UINT32_MAX, 1, UINT32_MAX};
    double vals[3] = {100.0, 0.5, -100.0}, dense[4];
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    CHECK_OK(sc_sparse_allreduce(w.comm, ix, 64, vals, SC_FLOAT64, 3, dense, SC_FLOAT64, 4));
    for (int i = 0; i < 4; i++)
        CHECK(dense[i] == (i == 2 ? 0.5 * w.size : 0.0), "64-bit: element %d is %g", i,
              dense[i]);
    CHECK_OK(sc_sparse_allreduce(w.comm, ix32, 32, vals, SC_FLOAT64, 3, dense, SC_FLOAT64, 4));
    for (int i = 0; i < 4; i++)
        CHECK(dense[i] == (i == 1 ? 0.5 * w.size : 0.0), "32-bit: element %d is %g", i,
              dense[i]);
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* Every rank sends ct_order_value at indices 1 and 3 of 5, ascending or descending (the
 * scatter's path for sorted blocks, and the one for pairs in any order): both elements
 * are the sum in rank order, bit for bit, the others zero. */
static int order_case(rt_world_t *w, sc_dtype_t d, sc_dtype_t vd, int descending)
{
    uint32_t ix[2] = {descending ? 3u : 1u, descending ? 1u : 3u};
    double vals[2], dense[5], v = ct_order_value(w->rank, d, vd);
    double want = ct_order_sum(w->size, d, vd);

    ct_store(vd, vals, 0, v);
    ct_store(vd, vals, 1, v);
    memset(dense, 0xa5, sizeof(dense));
    CHECK_OK(sc_sparse_allreduce(w->comm, ix, 32, vals, vd, 2, dense, d, 5));
    for (int i = 0; i < 5; i++) {
        double got = rt_load(d, dense, i), exp = i == 1 || i == 3 ? want : 0.0;
        CHECK(got == exp, "%s values into %s, indices %s: element %d is %.17g, expected "
              "%.17g (the sum in rank order)", sc_dtype_name(vd), sc_dtype_name(d),
              descending ? "descending" : "ascending", i, got, exp);
    }
    return ct_check_same_bits(w, dense, 5 * rt_size(d));
}

static int test_sum_follows_rank_order(int argc, char **argv)
{
    static const sc_dtype_t cases[][2] = {{SC_FLOAT32, SC_FLOAT32},
                                          {SC_FLOAT32, SC_FLOAT16},
                                          {SC_FLOAT64, SC_FLOAT64},
                                          {SC_FLOAT16, SC_FLOAT16},
                                          {SC_BFLOAT16, SC_BFLOAT16},
                                          {SC_BFLOAT16, SC_FLOAT16}};
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (int descending = 0; descending < 2; descending++)
            if (order_case(&w, cases[c][0], cases[c][1], descending))
                return 1;
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

int main(int argc, char **argv)
{
    static const rt_test_t tests[] = {
        {"matches_reference", test_matches_reference},
        {"overlapping_indices_add", test_overlapping_indices_add},
        {"edge_sizes", test_edge_sizes},
        {"nan_and_inf_pass_through", test_nan_and_inf_pass_through},
        {"pads_are_skipped", test_pads_are_skipped},
        {"sum_follows_rank_order", test_sum_follows_rank_order},
        {NULL, NULL}};
    return rt_main(tests, argc, argv);
}
