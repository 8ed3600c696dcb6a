/* float8_e4m3 and float8_e5m2: conversions and host reductions against references
 * written here independently (decoding with ldexp, encoding by searching the nearest
 * representable value, ties to the even code). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/fp8_spec.h"
#include "collectives/reduce_kernels.h"

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"

typedef struct {
    sc_dtype_t dtype;
    const char *name;
    int E, M;
    int has_inf;        /* e5m2: infinities; e4m3: none, S.1111.111 is NaN */
    double top;         /* the value of the first code past the largest finite one */
} fmt_t;

static const fmt_t fmts[2] = {{SC_FLOAT8_E4M3, "float8_e4m3", 4, 3, 0, 480.0},
                              {SC_FLOAT8_E5M2, "float8_e5m2", 5, 2, 1, 65536.0}};

static int ref_is_nan(const fmt_t *f, unsigned c)
{
    unsigned m = c & 0x7f, e = m >> f->M;
    return f->has_inf ? (e == (1u << f->E) - 1 && (m & ((1u << f->M) - 1))) : m == 0x7f;
}

static int ref_is_inf(const fmt_t *f, unsigned c)
{
    return f->has_inf && (c & 0x7f) == 0x7c;
}

static double ref_decode(const fmt_t *f, unsigned c)
{
    int bias = (1 << (f->E - 1)) - 1;
    unsigned m = c & ((1u << f->M) - 1), e = (c >> f->M) & ((1u << f->E) - 1);
    double v = e ? ldexp(1.0 + ldexp((double)m, -f->M), (int)e - bias)
                 : ldexp((double)m, 1 - bias - f->M);
    return (c & 0x80) ? -v : v;
}

/* Largest finite magnitude code. */
static unsigned ref_max_code(const fmt_t *f)
{
    return f->has_inf ? 0x7b : 0x7e;
}

/* Nearest code to x (finite, any sign), ties to the even code; past the largest value
 * the "top" code (NaN for e4m3, Inf for e5m2) competes like one more value. */
static unsigned ref_encode(const fmt_t *f, double x)
{
    unsigned sign = signbit(x) ? 0x80 : 0, best = 0, top = ref_max_code(f) + 1;
    double a = fabs(x), bestd = INFINITY;

    if (a >= f->top)
        return sign | top;
    for (unsigned c = 0; c <= top; c++) {
        double v = c == top ? f->top : ref_decode(f, c);
        double d = fabs(v - a);
        if (d < bestd || (d == bestd && !(c & 1))) {
            bestd = d;
            best = c;
        }
    }
    return sign | best;
}

static unsigned enc(const fmt_t *f, float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return f->dtype == SC_FLOAT8_E4M3 ? sc_fp8_e4m3_from_f32(u) : sc_fp8_e5m2_from_f32(u);
}

static float dec(const fmt_t *f, unsigned c)
{
    uint32_t u = f->dtype == SC_FLOAT8_E4M3 ? sc_fp8_e4m3_to_f32((uint8_t)c)
                                            : sc_fp8_e5m2_to_f32((uint8_t)c);
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static int test_decode_every_code(void)
{
    for (int k = 0; k < 2; k++) {
        const fmt_t *f = &fmts[k];
        for (unsigned c = 0; c < 256; c++) {
            float x = dec(f, c);
            if (ref_is_nan(f, c)) {
                CHECK(isnan(x) && !!signbit(x) == !!(c & 0x80), "%s %#x -> %g", f->name, c,
                      (double)x);
            } else if (ref_is_inf(f, c)) {
                CHECK(isinf(x) && !!signbit(x) == !!(c & 0x80), "%s %#x -> %g", f->name, c,
                      (double)x);
            } else {
                double want = ref_decode(f, c);
                CHECK((double)x == want && !!signbit(x) == !!(c & 0x80),
                      "%s %#x -> %.9g, expected %.9g", f->name, c, (double)x, want);
            }
        }
    }
    return 0;
}

/* Every code's value, the midpoints between neighbours and one float32 ulp either side,
 * both signs, plus a sweep of every float32 exponent. */
static int test_encode_rounds_to_nearest_even(void)
{
    for (int k = 0; k < 2; k++) {
        const fmt_t *f = &fmts[k];
        unsigned top = ref_max_code(f) + 1;
        for (unsigned c = 0; c <= top; c++) {
            double lo = ref_decode(f, c), hi = c == top ? f->top * 1.5
                                             : c + 1 == top ? f->top : ref_decode(f, c + 1);
            double pts[5] = {lo, (lo + hi) / 2, hi};
            pts[3] = nextafterf((float)pts[1], 0.0f);
            pts[4] = nextafterf((float)pts[1], INFINITY);
            for (int i = 0; i < 5; i++) {
                for (int s = 0; s < 2; s++) {
                    float x = (float)(s ? -pts[i] : pts[i]);
                    unsigned got = enc(f, x), want = ref_encode(f, x);
                    if (ref_is_nan(f, want))
                        CHECK(ref_is_nan(f, got) && (got & 0x80) == (want & 0x80),
                              "%s(%.9g) = %#x, expected NaN", f->name, (double)x, got);
                    else
                        CHECK(got == want, "%s(%.9g) = %#x, expected %#x", f->name, (double)x,
                              got, want);
                }
            }
        }
        for (int e = -40; e <= 40; e++) {
            for (uint32_t m = 0; m < (1u << 23); m += 4099) {
                float x = ldexpf(1.0f + ldexpf((float)m, -23), e);
                unsigned got = enc(f, x), want = ref_encode(f, x);
                CHECK(ref_is_nan(f, want) ? ref_is_nan(f, got) : got == want,
                      "%s(%.9g) = %#x, expected %#x", f->name, (double)x, got, want);
            }
        }
    }
    return 0;
}

static int test_encode_specials(void)
{
    const fmt_t *e4 = &fmts[0], *e5 = &fmts[1];

    CHECK(enc(e4, NAN) == 0x7f && enc(e4, -NAN) == 0xff, "e4m3 NaN");
    CHECK(enc(e4, INFINITY) == 0x7f && enc(e4, -INFINITY) == 0xff, "e4m3 Inf becomes NaN");
    CHECK(enc(e4, 448.0f) == 0x7e && enc(e4, 464.0f) == 0x7e && enc(e4, 465.0f) == 0x7f,
          "e4m3 overflow: 448 -> %#x, 464 -> %#x, 465 -> %#x", enc(e4, 448.0f),
          enc(e4, 464.0f), enc(e4, 465.0f));
    CHECK(enc(e4, -0.0f) == 0x80 && enc(e4, 1e-30f) == 0x00, "e4m3 zeros");
    CHECK(enc(e5, INFINITY) == 0x7c && enc(e5, -INFINITY) == 0xfc, "e5m2 Inf");
    CHECK(enc(e5, 57344.0f) == 0x7b && enc(e5, 61440.0f) == 0x7c, "e5m2 overflow");
    CHECK(ref_is_nan(e5, enc(e5, NAN)), "e5m2 NaN");
    return 0;
}

/* sum, prod, min, max and avg of random codes, as the collectives reduce them. */
static int test_reductions_match_the_reference(void)
{
    enum { N = 4099 };
    uint8_t a[N], b[N], out[N];
    uint64_t s = 12345;

    for (int k = 0; k < 2; k++) {
        const fmt_t *f = &fmts[k];
        for (int op = SC_SUM; op <= SC_MAX; op++) {
            for (int i = 0; i < N; i++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                a[i] = (uint8_t)(s >> 56);
                b[i] = (uint8_t)(s >> 48);
            }
            sc_reduce_local((sc_op_t)op, f->dtype, a, b, out, N);
            for (int i = 0; i < N; i++) {
                double x = ref_decode(f, a[i]), y = ref_decode(f, b[i]), r;
                int nan_in = ref_is_nan(f, a[i]) || ref_is_nan(f, b[i]);
                if (ref_is_inf(f, a[i]))
                    x = (a[i] & 0x80) ? -INFINITY : INFINITY;
                if (ref_is_inf(f, b[i]))
                    y = (b[i] & 0x80) ? -INFINITY : INFINITY;
                r = op == SC_SUM ? x + y : op == SC_PROD ? x * y : op == SC_MIN ? fmin(x, y)
                                                                                 : fmax(x, y);
                if (nan_in || isnan(r)) {
                    CHECK(out[i] == (f->has_inf ? SC_FP8_E5M2_NAN : SC_FP8_E4M3_NAN),
                          "%s op %d: %#x, %#x -> %#x, expected the canonical NaN", f->name, op,
                          a[i], b[i], out[i]);
                    continue;
                }
                if (isinf(r)) {
                    unsigned want = f->has_inf ? (r < 0 ? 0xfc : 0x7c) : (r < 0 ? 0xff : 0x7f);
                    CHECK(out[i] == want, "%s op %d: %#x, %#x -> %#x, expected %#x", f->name,
                          op, a[i], b[i], out[i], want);
                    continue;
                }
                if (r == 0 && (op == SC_MIN || op == SC_MAX))
                    continue; /* the sign of a zero from min/max of +0, -0: either */
                unsigned want = ref_encode(f, r);
                if (ref_is_nan(f, want))
                    CHECK(ref_is_nan(f, out[i]), "%s op %d: %#x, %#x -> %#x, expected NaN",
                          f->name, op, a[i], b[i], out[i]);
                else
                    CHECK(out[i] == want || (r == 0 && (out[i] & 0x7f) == 0),
                          "%s op %d: %#x (%g), %#x (%g) -> %#x, expected %#x", f->name, op,
                          a[i], x, b[i], y, out[i], want);
            }
        }
    }
    return 0;
}

/* sc_scale_local on every code (avg's premultiplication by 1 / size, the reducer's
 * pre-division): the product in float32, rounded to the format once, against the
 * reference; also in place. */
static int test_scale_matches_the_reference(void)
{
    static const double scales[] = {0.5, 1.0 / 3.0, 0.125, 1.0 / 7.0};
    uint8_t in[256], out[256];

    for (int k = 0; k < 2; k++) {
        const fmt_t *f = &fmts[k];
        for (size_t j = 0; j < sizeof(scales) / sizeof(scales[0]); j++) {
            for (int c = 0; c < 256; c++)
                in[c] = (uint8_t)c;
            sc_scale_local(f->dtype, out, in, 256, scales[j], INFINITY);
            sc_scale_local(f->dtype, in, in, 256, scales[j], INFINITY);
            CHECK(memcmp(in, out, 256) == 0, "%s scale %g: in place differs", f->name,
                  scales[j]);
            for (unsigned c = 0; c < 256; c++) {
                double r;
                unsigned want;
                if (ref_is_nan(f, c)) {
                    CHECK(ref_is_nan(f, out[c]), "%s: NaN %#x scaled to %#x", f->name, c,
                          out[c]);
                    continue;
                }
                if (ref_is_inf(f, c)) {
                    CHECK(out[c] == c, "%s: Inf %#x scaled to %#x", f->name, c, out[c]);
                    continue;
                }
                r = (double)((float)ref_decode(f, c) * (float)scales[j]);
                want = ref_encode(f, r);
                CHECK(out[c] == want || (r == 0 && (out[c] & 0x7f) == 0),
                      "%s: %#x (%g) times %g -> %#x, expected %#x", f->name, c,
                      ref_decode(f, c), scales[j], out[c], want);
            }
        }
    }
    return 0;
}

int main(void)
{
    int failed = 0;
    failed |= test_decode_every_code();
    failed |= test_encode_rounds_to_nearest_even();
    failed |= test_encode_specials();
    failed |= test_reductions_match_the_reference();
    failed |= test_scale_matches_the_reference();
    printf("%s: float8 conversions and reductions\n", failed ? "FAIL" : "PASS");
    return failed;
}
