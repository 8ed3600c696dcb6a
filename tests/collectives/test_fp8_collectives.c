/* float8_e4m3 and float8_e5m2 through the host collectives: small integers whose partial
 * sums over up to 4 ranks both formats hold exactly (|sum| <= 16 for e4m3's 4
 * significant bits, <= 8 for e5m2's 3), so sums, minima and maxima are exact whatever
 * the order of reduction; avg is
 * the sum of every input times 1 / size, each product rounded to the format first (as
 * NCCL's premultiplied avg, so that a sum past the format's range still averages),
 * checked against the exact sum of those products within half an ulp per rounding
 * (the encoder is tested against an independent reference in tests/kernels/test_fp8.c).
 * Results must also be bitwise equal on every rank. On 2 or more ranks, negative sums
 * and products past e4m3's range are its canonical NaN 0x7f in every reducing
 * collective (they were 0xff where the last step overflowed), and past e5m2's -Inf. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/fp8_spec.h"

static int g_rank;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

static uint8_t encode(sc_dtype_t t, float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return t == SC_FLOAT8_E4M3 ? sc_fp8_e4m3_from_f32(u) : sc_fp8_e5m2_from_f32(u);
}

static float decode(sc_dtype_t t, uint8_t x)
{
    uint32_t u = t == SC_FLOAT8_E4M3 ? sc_fp8_e4m3_to_f32(x) : sc_fp8_e5m2_to_f32(x);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static sc_dtype_t g_type;

/* This rank's value at index i: an integer in [-4, 4] (e4m3) or [-2, 2] (e5m2). */
static int value(int rank, size_t i)
{
    int w = g_type == SC_FLOAT8_E4M3 ? 4 : 2;
    return (int)((i * 7 + (size_t)rank * 3) % (size_t)(2 * w + 1)) - w;
}

static int check_reductions(sc_comm_t *comm, sc_dtype_t t, size_t n)
{
    int p = sc_comm_size(comm);
    uint8_t *in = malloc(n + 1), *out = malloc(n + 1), *mine = malloc(n / (size_t)p + 1);
    const sc_op_t ops[] = {SC_SUM, SC_MIN, SC_MAX, SC_AVG};

    CHECK(in && out && mine, "out of memory");
    g_type = t;
    for (size_t i = 0; i < n; i++)
        in[i] = encode(t, (float)value(g_rank, i));
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        CHECK_OK(sc_allreduce(in, out, n, t, ops[k], comm, NULL, NULL));
        for (size_t i = 0; i < n; i++) {
            int s = 0, lo = 99, hi = -99;
            for (int r = 0; r < p; r++) {
                int v = value(r, i);
                s += v;
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
            if (ops[k] == SC_AVG) {
                /* Half an ulp (3 or 2 significant bits after the leading one) of at
                 * most the magnitudes' sum, per each of the p - 1 sums. */
                double sum = 0, mag = 0, ulp = t == SC_FLOAT8_E4M3 ? 0x1p-3 : 0x1p-2;
                for (int r = 0; r < p; r++) {
                    double q = decode(t, encode(t, (float)value(r, i) * (float)(1.0 / p)));
                    sum += q;
                    mag += fabs(q);
                }
                CHECK(fabs(decode(t, out[i]) - sum) <= (p - 1) * ulp / 2 * mag,
                      "%s avg element %zu: %g, expected %g within %g", sc_dtype_name(t), i,
                      (double)decode(t, out[i]), sum, (p - 1) * ulp / 2 * mag);
                continue;
            }
            float want = ops[k] == SC_SUM ? (float)s : ops[k] == SC_MIN ? (float)lo
                                                                       : (float)hi;
            CHECK(out[i] == encode(t, want), "%s %s element %zu: %#x, expected %#x (%g)",
                  sc_dtype_name(t), sc_op_name(ops[k]), i, out[i], encode(t, want),
                  (double)want);
        }
    }
    /* reduce_scatter: block r of the sum. */
    size_t blk = n / (size_t)p;
    CHECK_OK(sc_reduce_scatter(in, mine, blk, t, SC_SUM, comm, NULL, NULL));
    for (size_t j = 0; j < blk; j++) {
        size_t i = (size_t)g_rank * blk + j;
        int s = 0;
        for (int r = 0; r < p; r++)
            s += value(r, i);
        CHECK(mine[j] == encode(t, (float)s), "%s reduce_scatter element %zu",
              sc_dtype_name(t), i);
    }
    free(in);
    free(out);
    free(mine);
    return 0;
}

/* Every element of the n-element result res (of an op named what) is want. */
static int all_are(const uint8_t *res, size_t n, uint8_t want, const char *what)
{
    for (size_t i = 0; i < n; i++)
        CHECK(res[i] == want, "%s element %zu: %#x, expected %#x", what, i, res[i], want);
    return 0;
}

static int check_negative_overflow(sc_comm_t *comm, size_t n)
{
    int p = sc_comm_size(comm);
    size_t blk = n / (size_t)p;
    uint8_t *in = malloc(n + 1), *out = malloc(n + 1);

    CHECK(in && out, "out of memory");
    /* sum: -256 on every rank (-512 and beyond); prod: -32 on rank 0, 32 elsewhere. */
    memset(in, encode(SC_FLOAT8_E4M3, -256.0f), n);
    CHECK_OK(sc_allreduce(in, out, n, SC_FLOAT8_E4M3, SC_SUM, comm, NULL, NULL));
    if (all_are(out, n, 0x7f, "e4m3 allreduce sum of -256 each"))
        return 1;
    memset(out, 0, n);
    CHECK_OK(sc_reduce(in, out, n, SC_FLOAT8_E4M3, SC_SUM, 0, comm, NULL, NULL));
    if (g_rank == 0 && all_are(out, n, 0x7f, "e4m3 reduce sum of -256 each"))
        return 1;
    CHECK_OK(sc_reduce_scatter(in, out, blk, SC_FLOAT8_E4M3, SC_SUM, comm, NULL, NULL));
    if (all_are(out, blk, 0x7f, "e4m3 reduce_scatter sum of -256 each"))
        return 1;
    memset(in, encode(SC_FLOAT8_E4M3, g_rank == 0 ? -32.0f : 32.0f), n);
    CHECK_OK(sc_allreduce(in, out, n, SC_FLOAT8_E4M3, SC_PROD, comm, NULL, NULL));
    if (all_are(out, n, 0x7f, "e4m3 allreduce prod of -32 and 32s"))
        return 1;
    memset(in, encode(SC_FLOAT8_E5M2, -40960.0f), n);
    CHECK_OK(sc_allreduce(in, out, n, SC_FLOAT8_E5M2, SC_SUM, comm, NULL, NULL));
    if (all_are(out, n, 0xfc, "e5m2 allreduce sum of -40960 each"))
        return 1;
    free(in);
    free(out);
    return 0;
}

int main(void)
{
    const size_t counts[] = {0, 1, 7, 4096, 1000003};
    sc_comm_t *comm;

    CHECK_OK(sc_comm_init_from_env(&comm));
    g_rank = sc_comm_rank(comm);
    for (int t = SC_FLOAT8_E4M3; t <= SC_FLOAT8_E5M2; t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            if (check_reductions(comm, (sc_dtype_t)t, counts[c]))
                return 1;
    for (size_t c = 1; sc_comm_size(comm) > 1 && c < sizeof(counts) / sizeof(counts[0]); c++)
        if (check_negative_overflow(comm, counts[c]))
            return 1;
    CHECK_OK(sc_comm_destroy(comm));
    printf("PASS: float8 collectives (rank %d)\n", g_rank);
    return 0;
}
