/* avg of the narrow floats where the sum passes the dtype's range: every rank holds
 * values near the largest finite one (float16 +-40000, bfloat16 +-2e38, float8_e4m3
 * +-300, float8_e5m2 +-40000), whose sum over two ranks is Inf (NaN in e4m3). avg
 * multiplies each input by 1 / size first (as NCCL's does), so the averages are
 * finite, within half an ulp per rounding of the exact sum of the rounded products,
 * and bitwise equal on every rank. Through every path that reduces: allreduce out of
 * and in place, reduce_scatter, reduce to the first and the last rank; 7 elements
 * (recursive doubling, the tree, headers carrying the data) and 2^18 (the ring and the
 * chain, or the staging segment on one node); plain and registered memory
 * (sc_mem_alloc, read in place by the peers).
 * Then every rank holding the dtype's largest finite value, whose average is that value:
 * its product by 1 / size rounds up (65504 / 3 to 21840 in float16) and such products
 * summed to Inf until avg bounded them (sc_avg_bound); now finite, within the rounding
 * of the mean, the same on every rank (40000 elements for the ring). And values far
 * inside the range keep the bits of the old formula, each rounded product summed. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/fp8_spec.h"
#include "collectives/cast_spec.h"

static int g_rank;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"
#include "../common/sc_bits.h"
#include "../common/sc_hash.h"

typedef struct {
    sc_dtype_t t;
    double big;  /* a value whose double is past the largest finite one */
    double ulp;  /* relative ulp of the significand */
    double max;  /* the largest finite value */
} avg_type_t;

static const avg_type_t types[] = {
    {SC_FLOAT16, 40000.0, 0x1p-10, 65504.0},
    {SC_BFLOAT16, 2e38, 0x1p-7, 0x1.fep127},
    {SC_FLOAT8_E4M3, 300.0, 0x1p-3, 448.0},
    {SC_FLOAT8_E5M2, 40000.0, 0x1p-2, 57344.0},
};

/* What the ranks hold: values near the range (value), the largest finite value, or
 * small values (ordinary). */
enum { NEAR_RANGE, LARGEST, ORDINARY };
static int g_kind;

/* x rounded to t, as its bit pattern (one or two bytes). */
static uint16_t encode(sc_dtype_t t, float x)
{
    switch (t) {
    case SC_FLOAT16: return sc_spec_f32_to_f16(f32_bits(x));
    case SC_BFLOAT16: return sc_spec_f32_to_bf16(f32_bits(x));
    case SC_FLOAT8_E4M3: return sc_fp8_e4m3_from_f32(f32_bits(x));
    default: return sc_fp8_e5m2_from_f32(f32_bits(x));
    }
}

static float decode(sc_dtype_t t, uint16_t x)
{
    switch (t) {
    case SC_FLOAT16: return f32(sc_spec_f16_to_f32(x));
    case SC_BFLOAT16: return f32(sc_spec_bf16_to_f32(x));
    case SC_FLOAT8_E4M3: return f32(sc_fp8_e4m3_to_f32((uint8_t)x));
    default: return f32(sc_fp8_e5m2_to_f32((uint8_t)x));
    }
}

static uint16_t load(sc_dtype_t t, const void *buf, size_t i)
{
    uint16_t v;
    if (sc_dtype_size(t) == 1)
        return ((const uint8_t *)buf)[i];
    memcpy(&v, (const uint8_t *)buf + 2 * i, 2);
    return v;
}

static void store(sc_dtype_t t, void *buf, size_t i, uint16_t v)
{
    if (sc_dtype_size(t) == 1)
        ((uint8_t *)buf)[i] = (uint8_t)v;
    else
        memcpy((uint8_t *)buf + 2 * i, &v, 2);
}

/* Rank r's element i: big, rounded to the dtype's largest finite value below it where
 * it is not one, times a sign and a factor in {1, 7/8, 3/4} that vary with r and i.
 * Ranks 2q and 2q + 1 hold factors that add to 7/4 at every element (1 and 3/4, or 7/8
 * twice), so that on two ranks two values of one sign always sum past the range (7/8
 * and 3/4 of big would not in float16 and bfloat16, 65024 and 3.26e38). */
static float value(const avg_type_t *k, int r, size_t i)
{
    static const float factor[] = {1.0f, 0.875f, 0.75f};
    size_t f = (i + (size_t)r / 2) % 3;
    float sign = ((i + (size_t)r) % 5 == 0) ? -1.0f : 1.0f;

    if (r % 2)
        f = 2 - f;
    return decode(k->t, encode(k->t, (float)(k->big * factor[f]))) * sign;
}

/* Rank r's element i of the largest values: the largest finite value, negative at odd i. */
static float largest(const avg_type_t *k, size_t i)
{
    return (float)(i % 2 ? -k->max : k->max);
}

/* Rank r's element i of the ordinary values: p times a power of two from 1/4 to 2 (the
 * same on every rank) and a sign, exact in every type (p <= 7), whose products by
 * 1 / p round to the power of two and sum exactly, in any order. */
static float ordinary(int p, int r, size_t i)
{
    float sign = (i + (size_t)r) % 3 == 0 ? -1.0f : 1.0f;

    return sign * (float)p * ldexpf(1.0f, (int)(i % 4) - 2);
}

static float input(const avg_type_t *k, int p, int r, size_t i)
{
    return g_kind == LARGEST ? largest(k, i) : g_kind == ORDINARY ? ordinary(p, r, i)
                                                                  : value(k, r, i);
}

/* The average of the largest value is finite, no larger than it and within the rounding
 * of the mean: each of the p products below max / p by at most an ulp of it (the bound
 * rounds toward zero), and p - 1 roundings of the sum. */
static int check_largest(const avg_type_t *k, int p, size_t i, double g, const char *what)
{
    double mean = largest(k, i), tol = (p + 1) * k->ulp * k->max;

    CHECK(isfinite(g) && fabs(g) <= k->max && fabs(g - mean) <= tol,
          "%s %s element %zu over %d ranks of the largest value: %g, expected %g within %g "
          "(a rounded-up product by 1 / size made the sum pass the range)", sc_dtype_name(k->t),
          what, i, p, g, mean, tol);
    return 0;
}

/* The old formula: each input times (float)(1 / p) rounded to the type, summed (exact
 * here), rounded once; the result must keep its bits. */
static int check_ordinary(const avg_type_t *k, int p, size_t i, uint16_t got, const char *what)
{
    double sum = 0;
    uint16_t want;

    for (int r = 0; r < p; r++)
        sum += decode(k->t, encode(k->t, decode(k->t, encode(k->t, ordinary(p, r, i))) *
                                             (float)(1.0 / p)));
    want = encode(k->t, (float)sum);
    CHECK(got == want, "%s %s element %zu over %d ranks of ordinary values: bits 0x%x, the old "
          "formula gives 0x%x", sc_dtype_name(k->t), what, i, p, got, want);
    return 0;
}

/* Element i of the average over p ranks against the exact sum of the rounded products;
 * 1 (with a message) when it is off. */
static int check_element(const avg_type_t *k, int p, size_t i, uint16_t got,
                         const char *what)
{
    double sum = 0, mag = 0, tol, g = decode(k->t, got);

    if (g_kind == LARGEST)
        return check_largest(k, p, i, g, what);
    if (g_kind == ORDINARY)
        return check_ordinary(k, p, i, got, what);

    for (int r = 0; r < p; r++) {
        double q = decode(k->t, encode(k->t, value(k, r, i) * (float)(1.0 / p)));
        sum += q;
        mag += fabs(q);
    }
    tol = (p - 1) * k->ulp / 2 * mag;
    CHECK(isfinite(g) && fabs(g - sum) <= tol,
          "%s %s element %zu over %d ranks: %g, expected %g within %g (the sum of the "
          "inputs overflows the dtype: avg must scale them first)", sc_dtype_name(k->t),
          what, i, p, g, sum, tol);
    return 0;
}

/* Every rank's inputs, and so each element's expected average, repeat with this period
 * in the index: value() with i % 3 and i % 5, largest() with i % 2, ordinary() with
 * i % 3 and i % 4. */
#define AVG_PERIOD 60

/* Results already found right in one check_type call, per index modulo AVG_PERIOD: an
 * element with the same bits as one that passed passes too (check_element's verdict
 * depends on nothing else there), so that only other bits are checked in full. This
 * and inputs_of below kept 2^18-element checks from being most of the test's time. */
typedef struct {
    uint16_t bits[AVG_PERIOD];
    uint8_t known[AVG_PERIOD];
} avg_passed_t;

static int check_element_once(avg_passed_t *ok, const avg_type_t *k, int p, size_t i,
                              uint16_t got, const char *what)
{
    size_t j = i % AVG_PERIOD;

    if (ok->known[j] && ok->bits[j] == got)
        return 0;
    if (check_element(k, p, i, got, what))
        return 1;
    ok->known[j] = 1;
    ok->bits[j] = got;
    return 0;
}

/* This rank's inputs in their bits over one period; 1 (with a message) where some
 * rank's inputs do not repeat with it. */
static int inputs_of(const avg_type_t *k, int p, int rank, uint16_t bits[AVG_PERIOD])
{
    for (size_t j = 0; j < AVG_PERIOD; j++) {
        for (int r = 0; r < p; r++)
            CHECK(input(k, p, r, j) == input(k, p, r, j + AVG_PERIOD),
                  "rank %d's inputs do not repeat every %d elements: AVG_PERIOD is wrong",
                  r, AVG_PERIOD);
        bits[j] = encode(k->t, input(k, p, rank, j));
    }
    return 0;
}

static int same_on_every_rank(sc_comm_t *comm, const void *buf, size_t bytes,
                              const char *what)
{
    int p = sc_comm_size(comm);
    uint64_t mine = sc_test_hash(SC_TEST_HASH_INIT, buf, bytes), all[64];

    CHECK_OK(sc_allgather(&mine, all, 1, SC_INT64, comm, NULL, NULL));
    for (int r = 0; r < p; r++)
        CHECK(all[r] == all[0], "%s: rank %d's result differs from rank 0's", what, r);
    return 0;
}

static void *buffer(sc_comm_t *comm, size_t bytes, int registered)
{
    void *b = NULL;
    if (registered)
        return sc_mem_alloc(comm, bytes, &b) == SC_SUCCESS ? b : NULL;
    return malloc(bytes);
}

static void release(sc_comm_t *comm, void *b, int registered)
{
    if (registered)
        sc_mem_free(comm, b);
    else
        free(b);
}

static int check_type(sc_comm_t *comm, const avg_type_t *k, size_t n, int registered)
{
    int p = sc_comm_size(comm), rank = sc_comm_rank(comm);
    size_t es = sc_dtype_size(k->t), blk = n;
    uint8_t *in = buffer(comm, n * (size_t)p * es, registered);
    uint8_t *out = buffer(comm, n * (size_t)p * es, registered);
    uint16_t mine[AVG_PERIOD];
    avg_passed_t ok = {{0}, {0}};
    char what[64];

    CHECK(in && out, "out of memory");
    if (inputs_of(k, p, rank, mine))
        return 1;
    /* allreduce, out of place and in place. */
    for (int inplace = 0; inplace < 2; inplace++) {
        for (size_t i = 0; i < n; i++)
            store(k->t, in, i, mine[i % AVG_PERIOD]);
        if (inplace)
            memcpy(out, in, n * es);
        CHECK_OK(sc_allreduce(inplace ? out : in, out, n, k->t, SC_AVG, comm, NULL, NULL));
        snprintf(what, sizeof(what), "allreduce%s", inplace ? " in place" : "");
        for (size_t i = 0; i < n; i++)
            if (check_element_once(&ok, k, p, i, load(k->t, out, i), what))
                return 1;
        if (same_on_every_rank(comm, out, n * es, what))
            return 1;
    }
    /* reduce_scatter: blk elements per rank out of n * p. */
    for (size_t i = 0; i < blk * (size_t)p; i++)
        store(k->t, in, i, mine[i % AVG_PERIOD]);
    CHECK_OK(sc_reduce_scatter(in, out, blk, k->t, SC_AVG, comm, NULL, NULL));
    for (size_t j = 0; j < blk; j++)
        if (check_element_once(&ok, k, p, (size_t)rank * blk + j, load(k->t, out, j),
                               "reduce_scatter"))
            return 1;
    /* reduce to the first and the last rank; the input must stay as it was. */
    for (int root = 0; root < p; root += p > 1 ? p - 1 : 1) {
        uint64_t before = sc_test_hash(SC_TEST_HASH_INIT, in, n * es);
        CHECK_OK(sc_reduce(in, out, n, k->t, SC_AVG, root, comm, NULL, NULL));
        CHECK(sc_test_hash(SC_TEST_HASH_INIT, in, n * es) == before,
              "reduce changed its send buffer");
        if (rank == root)
            for (size_t i = 0; i < n; i++)
                if (check_element_once(&ok, k, p, i, load(k->t, out, i), "reduce"))
                    return 1;
    }
    release(comm, in, registered);
    release(comm, out, registered);
    return 0;
}

int main(int argc, char **argv)
{
    const size_t counts[] = {7, (size_t)1 << 18}, small_counts[] = {7, 40000};
    /* "largest": the largest values and the ordinary ones only. */
    int near_range = !(argc > 1 && strcmp(argv[1], "largest") == 0);
    sc_comm_t *comm;

    CHECK_OK(sc_comm_init_from_env(&comm));
    g_rank = sc_comm_rank(comm);
    CHECK(sc_comm_size(comm) <= 7, "at most 7 ranks (the ordinary values are exact)");
    for (size_t t = 0; near_range && t < sizeof(types) / sizeof(types[0]); t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (int registered = 0; registered < 2; registered++)
                if (check_type(comm, &types[t], counts[c], registered))
                    return 1;
    for (g_kind = LARGEST; g_kind <= ORDINARY; g_kind++)
        for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
            for (size_t c = 0; c < sizeof(small_counts) / sizeof(small_counts[0]); c++)
                for (int registered = 0; registered < 2; registered++)
                    if (check_type(comm, &types[t], small_counts[c], registered))
                        return 1;
    CHECK_OK(sc_comm_destroy(comm));
    printf("PASS: avg %sof the largest value of float16, bfloat16 and float8 and of ordinary "
           "values (rank %d)\n", near_range ? "past the range, " : "", g_rank);
    return 0;
}
