/* float8_e4m3 and float8_e5m2 through the host collectives: small integers whose partial
 * sums over up to 4 ranks both formats hold exactly (|sum| <= 16 for e4m3's 4
 * significant bits, <= 8 for e5m2's 3), so sums, minima and maxima are exact whatever
 * the order of reduction; avg is
 * the sum of every input times 1 / size, each product rounded to the format first (as
 * NCCL's premultiplied avg, so that a sum past the format's range still averages),
 * checked against the exact sum of those products within half an ulp per rounding
 * (the encoder is tested against an independent reference in tests/kernels/test_fp8.c).
 * Results must also be bitwise equal on every rank. */
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
    CHECK_OK(sc_comm_destroy(comm));
    printf("PASS: float8 collectives (rank %d)\n", g_rank);
    return 0;
}
