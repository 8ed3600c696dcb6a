/* Unit tests of the mixed-precision kernels on the host: the element spec
 * (cast_spec.h) and the host twins (cast_host.c) against references written here
 * (_Float16 for float16, the nearest of the two neighbours measured in double for
 * bfloat16, the documented NaN rules by hand), and the public calls' host path and
 * argument errors. test_cast_kernels [NAME-SUBSTRING] */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_CHECK_RANK 0
#include "../common/sc_bits.h"
#include "../common/cast_inputs.h"
#include "../common/sc_test_runner.h"
#include "../common/sc_check.h"
#include "collectives/cast_kernels.h"
#include "collectives/cast_spec.h"
#include "shardcomm/shardcomm.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#define NELEM(x) (sizeof(x) / sizeof((x)[0]))

static const sc_dtype_t formats[] = {SC_FLOAT32, SC_FLOAT16, SC_BFLOAT16};

/* ---- bits, elements, random numbers ------------------------------------------------- */

/* ---- references ----------------------------------------------------------------------- */

static int ref_f16_is_nan(uint16_t h)
{
    return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

/* float16 -> float32 through _Float16; a NaN keeps sign and payload, made quiet. */
static uint32_t ref_f16_to_f32(uint16_t h)
{
    _Float16 v;

    if (ref_f16_is_nan(h))
        return ((uint32_t)(h & 0x8000) << 16) | 0x7fc00000u | ((uint32_t)(h & 0x3ff) << 13);
    memcpy(&v, &h, 2);
    return f32_bits((float)v);
}

/* float32 -> float16 through _Float16 (libgcc, nearest even); a NaN keeps its sign
 * and top 9 payload bits, made quiet. */
static uint16_t ref_f32_to_f16(uint32_t u)
{
    _Float16 v;
    uint16_t h;

    if (isnan(f32(u)))
        return (uint16_t)(((u >> 16) & 0x8000) | 0x7e00 | ((u >> 13) & 0x3ff));
    v = (_Float16)f32(u);
    memcpy(&h, &v, 2);
    return h;
}

/* The value of a non-NaN bfloat16 from its fields: 1 sign, 8 exponent, 7 mantissa. */
static double ref_bf16_value(uint16_t b)
{
    int exp = (b >> 7) & 0xff, mant = b & 0x7f;
    double mag = exp == 0xff ? INFINITY
                 : exp == 0  ? ldexp(mant, -126 - 7)
                             : ldexp(mant + 128, exp - 127 - 7);
    return (b & 0x8000) ? -mag : mag;
}

static uint32_t ref_bf16_to_f32(uint16_t b)
{
    if ((b & 0x7f80) == 0x7f80 && (b & 0x7f))
        return ((uint32_t)b << 16) | 0x400000u;
    return f32_bits((float)ref_bf16_value(b));
}

/* float32 -> bfloat16: of the two bfloat16 neighbours (the truncation and the next one
 * away from zero, 2^128 standing for the one past the largest) the nearer, the even one
 * on a tie; measured in double, where these differences are exact. */
static uint16_t ref_f32_to_bf16(uint32_t u)
{
    uint16_t lo = (uint16_t)(u >> 16);
    double x, a, b;

    if (isnan(f32(u)))
        return (uint16_t)(lo | 0x40);
    if (isinf(f32(u)))
        return lo;
    x = fabs((double)f32(u));
    a = fabs(ref_bf16_value(lo));
    b = (lo & 0x7fff) == 0x7f7f ? 0x1p128 : fabs(ref_bf16_value((uint16_t)(lo + 1)));
    if (x - a < b - x || (x - a == b - x && !(lo & 1)))
        return lo;
    return (uint16_t)(lo + 1);
}

static uint32_t ref_widen(sc_dtype_t t, uint32_t v)
{
    if (t == SC_FLOAT16)
        return ref_f16_to_f32((uint16_t)v);
    if (t == SC_BFLOAT16)
        return ref_bf16_to_f32((uint16_t)v);
    return v;
}

static uint32_t ref_narrow(sc_dtype_t t, uint32_t u)
{
    if (t == SC_FLOAT16)
        return ref_f32_to_f16(u);
    if (t == SC_BFLOAT16)
        return ref_f32_to_bf16(u);
    return u;
}

/* x * scale in float32; a NaN input is not multiplied but made quiet; a NaN the
 * product makes is 0x7fc00000. */
static uint32_t ref_scale(uint32_t x, float scale)
{
    float p;

    if (isnan(f32(x)))
        return x | 0x400000u;
    p = f32(x) * scale;
    return isnan(p) ? 0x7fc00000u : f32_bits(p);
}

static uint32_t ref_cast(sc_dtype_t st, sc_dtype_t dt, uint32_t v, float scale)
{
    return ref_narrow(dt, ref_scale(ref_widen(st, v), scale));
}

static int ref_nonfinite(sc_dtype_t t, uint32_t v)
{
    uint32_t e = t == SC_FLOAT32 ? 0x7f800000u : t == SC_FLOAT16 ? 0x7c00u : 0x7f80u;
    return (v & e) == e;
}

/* ---- inputs ----------------------------------------------------------------------------- */

/* Float32 bit patterns at every exponent and sign, with mantissas around the rounding
 * points: for each cut (13 bits dropped for a normal float16, 16 for bfloat16, more for
 * a subnormal float16) the dropped bits 0, 1, half - 1, half, half + 1 and all ones
 * under kept bits ending in 0 and 1; plus random mantissas. Returns the count. */
static size_t structured_floats(uint32_t *out)
{
    static const uint32_t kept[] = {0, 1, 2, 3, 0x2a, 0x3f, 0x7e, 0x7f, 0x155, 0x3fe, 0x3ff};
    uint64_t s = 99;
    size_t n = 0;

    for (uint32_t sign = 0; sign < 2; sign++) {
        for (uint32_t exp = 0; exp < 256; exp++) {
            int e = (int)exp - 127;
            int cuts[3] = {13, 16, e < -14 ? 13 + (-14 - e) : 13};
            for (int c = 0; c < 3; c++) {
                int cut = cuts[c] > 24 ? 24 : cuts[c];
                uint32_t half = 1u << (cut - 1), all = (1u << cut) - 1;
                uint32_t dropped[] = {0, 1, half - 1, half, half + 1, all};
                for (size_t k = 0; k < NELEM(kept); k++)
                    for (size_t d = 0; d < NELEM(dropped); d++) {
                        uint32_t m = ((kept[k] << cut) | dropped[d]) & 0x7fffffu;
                        out[n++] = sign << 31 | exp << 23 | m;
                    }
            }
            for (int k = 0; k < 256; k++)
                out[n++] = sign << 31 | exp << 23 | ((uint32_t)rng_next(&s) & 0x7fffffu);
        }
    }
    return n;
}

#define STRUCTURED_MAX (2 * 256 * (3 * 11 * 6 + 256))

/* ---- float16 / bfloat16 -> float32 ---------------------------------------------------- */

/* Every 16-bit pattern through the spec and through the host twin (from element 1, so
 * that the twin's vector body and its scalar tail both see values). */
static int check_widen_every_pattern(sc_dtype_t t)
{
    uint16_t *in = malloc(0x10001 * 2);
    uint32_t *out = malloc(0x10001 * 4);

    CHECK(in && out, "no memory");
    for (uint32_t v = 0; v < 0x10000; v++)
        in[v + 1] = (uint16_t)v;
    sc_cast_host(in + 1, t, out + 1, SC_FLOAT32, 0x10000, 1.0f);
    for (uint32_t v = 0; v < 0x10000; v++) {
        uint32_t expected = ref_widen(t, v);
        uint32_t spec = t == SC_FLOAT16 ? sc_spec_f16_to_f32((uint16_t)v)
                                        : sc_spec_bf16_to_f32((uint16_t)v);
        if (spec != expected || out[v + 1] != expected) {
            fprintf(stderr, "  %s %#x: spec %#x, twin %#x, expected %#x\n",
                    sc_dtype_name(t), v, spec, out[v + 1], expected);
            free(in), free(out);
            return 1;
        }
    }
    free(in), free(out);
    return 0;
}

static int test_half_to_float_is_exact_for_every_half(void)
{
    return check_widen_every_pattern(SC_FLOAT16);
}

static int test_bfloat16_to_float_is_exact_for_every_bfloat16(void)
{
    return check_widen_every_pattern(SC_BFLOAT16);
}

typedef struct {
    uint32_t in, out;
} case_t;

/* The spec's element function, composed from cast_spec.h. */
static uint32_t spec_cast(sc_dtype_t st, sc_dtype_t dt, uint32_t v, float scale)
{
    uint32_t x = st == SC_FLOAT16    ? sc_spec_f16_to_f32((uint16_t)v)
                 : st == SC_BFLOAT16 ? sc_spec_bf16_to_f32((uint16_t)v)
                                     : v;
    x = sc_spec_scale(x, scale);
    return dt == SC_FLOAT16 ? sc_spec_f32_to_f16(x) : dt == SC_BFLOAT16 ? sc_spec_f32_to_bf16(x) : x;
}

/* in -> out through the spec and the twin (16 copies, so the vector body sees it). */
static int run_cases(sc_dtype_t st, sc_dtype_t dt, float scale, const case_t *cases,
                     size_t n)
{
    uint32_t in[16], out[16];

    for (size_t c = 0; c < n; c++) {
        uint32_t spec = spec_cast(st, dt, cases[c].in, scale);
        for (size_t i = 0; i < 16; i++)
            put(st, in, i, cases[c].in);
        sc_cast_host(in, st, out, dt, 16, scale);
        for (size_t i = 0; i < 16; i++)
            CHECK(get(dt, out, i) == cases[c].out, "%s %#x * %a -> %s %#x, expected %#x",
                  sc_dtype_name(st), cases[c].in, scale, sc_dtype_name(dt), get(dt, out, i),
                  cases[c].out);
        CHECK(spec == cases[c].out, "spec: %s %#x * %a -> %#x, expected %#x",
              sc_dtype_name(st), cases[c].in, scale, spec, cases[c].out);
    }
    return 0;
}

static int test_half_and_bfloat16_nans_widen_quiet_with_sign_and_payload(void)
{
    static const case_t f16[] = {{0x7c01, 0x7fc02000}, {0xfc01, 0xffc02000},
                                 {0x7e00, 0x7fc00000}, {0x7dff, 0x7fffe000},
                                 {0xfd23, 0xffe46000}};
    static const case_t bf16[] = {{0x7f81, 0x7fc10000}, {0xff81, 0xffc10000},
                                  {0x7fc0, 0x7fc00000}, {0x7fbf, 0x7fff0000}};
    return run_cases(SC_FLOAT16, SC_FLOAT32, 1.0f, f16, NELEM(f16)) ||
           run_cases(SC_BFLOAT16, SC_FLOAT32, 1.0f, bf16, NELEM(bf16));
}

/* ---- float32 -> float16 / bfloat16 ------------------------------------------------------ */

static int check_narrow_structured(sc_dtype_t t)
{
    uint32_t *in = malloc(STRUCTURED_MAX * 4);
    uint16_t *out = malloc(STRUCTURED_MAX * 2);
    size_t n;

    CHECK(in && out, "no memory");
    n = structured_floats(in);
    sc_cast_host(in, SC_FLOAT32, out, t, n, 1.0f);
    for (size_t i = 0; i < n; i++) {
        uint32_t expected = ref_narrow(t, in[i]);
        uint32_t spec = t == SC_FLOAT16 ? sc_spec_f32_to_f16(in[i]) : sc_spec_f32_to_bf16(in[i]);
        if (spec != expected || out[i] != expected) {
            fprintf(stderr, "  %#x (%a) -> %s: spec %#x, twin %#x, expected %#x\n", in[i],
                    f32(in[i]), sc_dtype_name(t), spec, out[i], expected);
            free(in), free(out);
            return 1;
        }
    }
    free(in), free(out);
    return 0;
}

static int test_float_to_half_matches_reference_at_every_exponent_and_tie(void)
{
    return check_narrow_structured(SC_FLOAT16);
}

static int test_float_to_bfloat16_matches_reference_at_every_exponent_and_tie(void)
{
    return check_narrow_structured(SC_BFLOAT16);
}

static int test_float_to_half_rounds_ties_to_even(void)
{
    static const case_t cases[] = {
        {0x3f801000, 0x3c00}, /* 1 + 2^-11: tie between 1 and 1 + 2^-10, even is 1 */
        {0x3f803000, 0x3c02}, /* 1 + 3 * 2^-11: tie, even is 1 + 2^-9 */
        {0x3f801001, 0x3c01}, /* just above the tie */
        {0x3f800fff, 0x3c00}, /* just below */
        {0xbf803000, 0xbc02},
        {0x45001000, 0x6800}, /* 2049: tie at ulp 2, stays on 2048 */
        {0x45003000, 0x6802}, /* 2051: tie, up to 2052 */
    };
    return run_cases(SC_FLOAT32, SC_FLOAT16, 1.0f, cases, NELEM(cases));
}

static int test_float_to_half_overflows_to_inf_past_65520(void)
{
    static const case_t cases[] = {
        {0x477fe000, 0x7bff}, /* 65504, the largest half */
        {0x477fefff, 0x7bff}, /* just below 65520 */
        {0x477ff000, 0x7c00}, /* 65520: tie, even is Inf */
        {0xc77ff000, 0xfc00}, {0x7f7fffff, 0x7c00}, {0xff7fffff, 0xfc00},
        {0x7f800000, 0x7c00}, {0xff800000, 0xfc00},
    };
    return run_cases(SC_FLOAT32, SC_FLOAT16, 1.0f, cases, NELEM(cases));
}

static int test_float_to_half_rounds_subnormal_results_and_keeps_the_sign_of_zero(void)
{
    static const case_t cases[] = {
        {0x33800000, 0x0001}, /* 2^-24, the smallest subnormal half */
        {0x33000000, 0x0000}, /* 2^-25: tie, even is zero */
        {0x33000001, 0x0001}, /* just above */
        {0xb3000000, 0x8000}, /* -2^-25 -> -0 */
        {0x33c00000, 0x0002}, /* 1.5 * 2^-24: tie, up to 2 */
        {0x34200000, 0x0002}, /* 2.5 * 2^-24: tie, down to 2 */
        {0x387fc000, 0x03ff}, /* the largest subnormal half */
        {0x387fe000, 0x0400}, /* tie between it and the smallest normal: even */
        {0x00000001, 0x0000}, /* float32 subnormals vanish */
        {0x807fffff, 0x8000}, {0x00000000, 0x0000}, {0x80000000, 0x8000},
    };
    return run_cases(SC_FLOAT32, SC_FLOAT16, 1.0f, cases, NELEM(cases));
}

static int test_float_to_half_keeps_nan_quiet_with_sign_and_top_payload(void)
{
    static const case_t cases[] = {
        {0x7fc00000, 0x7e00}, {0xffc00000, 0xfe00}, {0x7f800001, 0x7e00}, /* payload lost */
        {0x7fbfe000, 0x7fff}, {0xff802000, 0xfe01}, {0x7fffffff, 0x7fff},
    };
    return run_cases(SC_FLOAT32, SC_FLOAT16, 1.0f, cases, NELEM(cases));
}

static int test_float_to_bfloat16_rounds_ties_to_even(void)
{
    static const case_t cases[] = {
        {0x3f808000, 0x3f80}, /* 1 + 2^-8: tie, even is 1 */
        {0x3f818000, 0x3f82}, /* tie, up to even */
        {0x3f808001, 0x3f81}, {0x3f807fff, 0x3f80}, {0xbf818000, 0xbf82},
        {0x00008000, 0x0000}, /* subnormal tie, down to even zero */
        {0x00018000, 0x0002}, /* subnormal tie, up to even */
        {0x007f8000, 0x0080}, /* the largest subnormal rounds up to the smallest normal */
    };
    return run_cases(SC_FLOAT32, SC_BFLOAT16, 1.0f, cases, NELEM(cases));
}

static int test_float_to_bfloat16_overflows_to_inf_past_the_largest(void)
{
    static const case_t cases[] = {
        {0x7f7f7fff, 0x7f7f}, {0x7f7f8000, 0x7f80}, /* tie: even is Inf */
        {0x7f7fffff, 0x7f80}, {0xff7fffff, 0xff80}, {0x7f800000, 0x7f80}, {0xff800000, 0xff80},
    };
    return run_cases(SC_FLOAT32, SC_BFLOAT16, 1.0f, cases, NELEM(cases));
}

/* A rounding add on 0x7fffffff would carry into the sign, on 0x7f800001 truncation
 * would give Inf. */
static int test_float_to_bfloat16_keeps_nan_quiet_with_sign_and_top_payload(void)
{
    static const case_t cases[] = {
        {0x7fffffff, 0x7fff}, {0x7f800001, 0x7fc0}, {0xff800001, 0xffc0},
        {0x7fc00000, 0x7fc0}, {0xffffffff, 0xffff}, {0x7f80ffff, 0x7fc0},
    };
    return run_cases(SC_FLOAT32, SC_BFLOAT16, 1.0f, cases, NELEM(cases));
}

/* Every float32 through the twin's vector path and the spec's scalar one: on x86 the
 * twin rounds with F16C and AVX2, the GPU with the spec, so this is where host and
 * device meet. Two threads; under the sanitizers a sample. */
#if defined(__SANITIZE_ADDRESS__)
#define SWEEP_STRIDE 97
#else
#define SWEEP_STRIDE 1
#endif
#define SWEEP_CHUNK 16384

typedef struct {
    uint64_t first, end;
    uint32_t bad_in, bad_got, bad_expected;
    int bad;
} sweep_t;

static void *sweep_part(void *arg)
{
    sweep_t *w = arg;
    uint32_t in[SWEEP_CHUNK];
    uint16_t h[SWEEP_CHUNK], b[SWEEP_CHUNK];

    for (uint64_t base = w->first; base < w->end && !w->bad;
         base += (uint64_t)SWEEP_CHUNK * SWEEP_STRIDE) {
        size_t n = 0;
        for (; n < SWEEP_CHUNK && base + n * SWEEP_STRIDE < w->end; n++)
            in[n] = (uint32_t)(base + n * SWEEP_STRIDE);
        sc_cast_host(in, SC_FLOAT32, h, SC_FLOAT16, n, 1.0f);
        sc_cast_host(in, SC_FLOAT32, b, SC_BFLOAT16, n, 1.0f);
        for (size_t i = 0; i < n; i++) {
            uint32_t x = sc_spec_scale(in[i], 1.0f);
            uint16_t eh = sc_spec_f32_to_f16(x), eb = sc_spec_f32_to_bf16(x);
            if (h[i] != eh || b[i] != eb) {
                w->bad = 1;
                w->bad_in = in[i];
                w->bad_got = h[i] != eh ? h[i] : b[i];
                w->bad_expected = h[i] != eh ? eh : eb;
                break;
            }
        }
    }
    return NULL;
}

static int test_twin_matches_spec_for_every_float32(void)
{
    sweep_t parts[2] = {{0, UINT64_C(1) << 31, 0, 0, 0, 0},
                        {UINT64_C(1) << 31, UINT64_C(1) << 32, 0, 0, 0, 0}};
    pthread_t thread;

    CHECK(pthread_create(&thread, NULL, sweep_part, &parts[1]) == 0, "pthread_create");
    sweep_part(&parts[0]);
    pthread_join(thread, NULL);
    for (int i = 0; i < 2; i++)
        CHECK(!parts[i].bad, "%#x: twin %#x, spec %#x", parts[i].bad_in, parts[i].bad_got,
              parts[i].bad_expected);
    return 0;
}

/* ---- the fused scale ---------------------------------------------------------------------- */

static const float scales[] = {1.0f, 0.5f, 2.0f, 1024.0f, 0x1p-24f, 3.0e-5f, 65536.0f,
                               -3.0f, 0x1.8p+100f, 0x1p-130f, 0.0f, INFINITY, NAN};

/* The twin over random data of every pair of types and every scale equals the
 * reference cast of the float32 product. */
static int test_cast_with_scale_is_the_reference_cast_of_the_float32_product(void)
{
    enum { N = 1003 };
    uint32_t in[N], out[N];

    for (size_t si = 0; si < NELEM(formats); si++)
        for (size_t di = 0; di < NELEM(formats); di++)
            for (size_t k = 0; k < NELEM(scales); k++) {
                sc_dtype_t st = formats[si], dt = formats[di];
                fill_random(st, in, N, si * 100 + di * 10 + k);
                sc_cast_host(in, st, out, dt, N, scales[k]);
                for (size_t i = 0; i < N; i++) {
                    uint32_t v = get(st, in, i), expected = ref_cast(st, dt, v, scales[k]);
                    CHECK(get(dt, out, i) == expected, "%s %#x * %a -> %s %#x, expected %#x",
                          sc_dtype_name(st), v, scales[k], sc_dtype_name(dt), get(dt, out, i),
                          expected);
                }
            }
    return 0;
}

static int test_cast_with_scale_one_changes_no_number(void)
{
    enum { N = 517 };
    uint32_t in[N], out[N];

    for (size_t si = 0; si < NELEM(formats); si++)
        for (size_t di = 0; di < NELEM(formats); di++) {
            sc_dtype_t st = formats[si], dt = formats[di];
            fill_random(st, in, N, 7 + si * 3 + di);
            sc_cast_host(in, st, out, dt, N, 1.0f);
            for (size_t i = 0; i < N; i++) {
                uint32_t v = get(st, in, i), expected = ref_narrow(dt, ref_widen(st, v));
                if (isnan(f32(ref_widen(st, v))))
                    continue;
                CHECK(get(dt, out, i) == expected, "%s %#x -> %s %#x, expected %#x",
                      sc_dtype_name(st), v, sc_dtype_name(dt), get(dt, out, i), expected);
            }
        }
    return 0;
}

static int test_nan_input_is_not_scaled_and_keeps_sign_and_payload(void)
{
    static const case_t f32c[] = {{0xff812345, 0xffc12345}, {0x7fc00001, 0x7fc00001}};
    static const case_t f16c[] = {{0x7d23, 0x7f23}, {0xfc01, 0xfe01}};
    static const case_t bf16c[] = {{0xffa5, 0xffe5}, {0x7f81, 0x7fc1}};
    static const case_t f16_bf16[] = {{0x7d23, 0x7fe4}}; /* payload 0x123 keeps its top 6 bits */
    return run_cases(SC_FLOAT32, SC_FLOAT32, 4.0f, f32c, NELEM(f32c)) ||
           run_cases(SC_FLOAT16, SC_FLOAT16, 4.0f, f16c, NELEM(f16c)) ||
           run_cases(SC_BFLOAT16, SC_BFLOAT16, 0.0f, bf16c, NELEM(bf16c)) ||
           run_cases(SC_FLOAT16, SC_BFLOAT16, 2.0f, f16_bf16, NELEM(f16_bf16));
}

static int test_nan_made_by_scaling_is_the_canonical_quiet_nan(void)
{
    static const case_t zero_inf[] = {{0x00000000, 0x7fc00000}, {0x80000000, 0x7fc00000}};
    static const case_t inf_zero[] = {{0xff800000, 0x7fc00000}};
    static const case_t f16_zero_inf[] = {{0x8000, 0x7e00}};
    static const case_t bf16_zero_inf[] = {{0x0000, 0x7fc0}};
    static const case_t nan_scale[] = {{0x3f800000, 0x7fc00000}, {0xbf800000, 0x7fc00000}};
    return run_cases(SC_FLOAT32, SC_FLOAT32, INFINITY, zero_inf, NELEM(zero_inf)) ||
           run_cases(SC_FLOAT32, SC_FLOAT32, 0.0f, inf_zero, NELEM(inf_zero)) ||
           run_cases(SC_FLOAT16, SC_FLOAT16, -INFINITY, f16_zero_inf, NELEM(f16_zero_inf)) ||
           run_cases(SC_FLOAT32, SC_BFLOAT16, INFINITY, bf16_zero_inf, NELEM(bf16_zero_inf)) ||
           run_cases(SC_FLOAT32, SC_FLOAT32, f32(0xffc12345), nan_scale, NELEM(nan_scale));
}

static int test_scaled_cast_overflows_to_inf_and_underflows_to_signed_zero(void)
{
    static const case_t f16_up[] = {{0x471c4000, 0x7c00}, /* 40000 * 2 */
                                    {0xc6fff000, 0xfc00}, /* -32760 * 2 = -65520: tie */
                                    {0x46ffe000, 0x7bff}}; /* 32752 * 2 = 65504 */
    static const case_t f16_down[] = {{0xb3000000, 0x8000}, {0x33800000, 0x0000}};
    static const case_t bf16_up[] = {{0x7f7f0000, 0x7f80}};
    return run_cases(SC_FLOAT32, SC_FLOAT16, 2.0f, f16_up, NELEM(f16_up)) ||
           run_cases(SC_FLOAT32, SC_FLOAT16, 0.5f, f16_down, NELEM(f16_down)) ||
           run_cases(SC_FLOAT32, SC_BFLOAT16, 2.0f, bf16_up, NELEM(bf16_up));
}

/* Counts 0..40 at element offsets 0..7 of source and destination: every head, body and
 * tail split; the elements around the destination stay untouched. */
static int test_twin_handles_every_count_and_offset(void)
{
    enum { MAXN = 40, PAD = 8 };
    uint32_t src[MAXN + 2 * PAD], dst[MAXN + 2 * PAD];

    for (size_t si = 0; si < NELEM(formats); si++)
        for (size_t di = 0; di < NELEM(formats); di++)
            for (size_t n = 0; n <= MAXN; n++)
                for (size_t so = 0; so < 8; so++)
                    for (size_t d0 = 0; d0 < 8; d0++) {
                        sc_dtype_t st = formats[si], dt = formats[di];
                        char *s = (char *)src + so * esize(st), *d = (char *)dst + d0 * esize(dt);
                        fill_random(st, s, n, n * 64 + so * 8 + d0);
                        memset(dst, 0x5a, sizeof(dst));
                        sc_cast_host(s, st, d, dt, n, 3.0f);
                        for (size_t i = 0; i < n; i++)
                            CHECK(get(dt, d, i) == ref_cast(st, dt, get(st, s, i), 3.0f),
                                  "%s -> %s count %zu offsets %zu/%zu element %zu",
                                  sc_dtype_name(st), sc_dtype_name(dt), n, so, d0, i);
                        for (size_t b = 0; b < sizeof(dst); b++) {
                            size_t lo = d0 * esize(dt), hi = lo + n * esize(dt);
                            CHECK((b >= lo && b < hi) || ((unsigned char *)dst)[b] == 0x5a,
                                  "%s -> %s count %zu: byte %zu outside dst written",
                                  sc_dtype_name(st), sc_dtype_name(dt), n, b);
                        }
                    }
    return 0;
}

static int test_in_place_cast_equals_out_of_place(void)
{
    enum { N = 1001 };
    static const sc_dtype_t pairs[][2] = {{SC_FLOAT32, SC_FLOAT32}, {SC_FLOAT16, SC_FLOAT16},
                                          {SC_BFLOAT16, SC_BFLOAT16}, {SC_FLOAT16, SC_BFLOAT16},
                                          {SC_BFLOAT16, SC_FLOAT16}};
    uint32_t buf[N], expected[N];

    for (size_t p = 0; p < NELEM(pairs); p++) {
        fill_random(pairs[p][0], buf, N, 300 + p);
        sc_cast_host(buf, pairs[p][0], expected, pairs[p][1], N, 0.25f);
        sc_cast_host(buf, pairs[p][0], buf, pairs[p][1], N, 0.25f);
        CHECK(memcmp(buf, expected, N * esize(pairs[p][1])) == 0, "%s -> %s in place differs",
              sc_dtype_name(pairs[p][0]), sc_dtype_name(pairs[p][1]));
    }
    return 0;
}

/* ---- check_finite --------------------------------------------------------------------------- */

/* Finite values of type t that border on the non-finite ones: extremes, subnormals,
 * zeros, one. */
static void fill_finite_extremes(sc_dtype_t t, void *buf, size_t count)
{
    static const uint32_t f32v[] = {0x7f7fffff, 0xff7fffff, 0x00000001, 0x80000000, 0x3f800000,
                                    0x007fffff};
    static const uint16_t f16v[] = {0x7bff, 0xfbff, 0x0001, 0x8000, 0x3c00, 0x03ff};
    static const uint16_t bf16v[] = {0x7f7f, 0xff7f, 0x0001, 0x8000, 0x3f80, 0x007f};

    for (size_t i = 0; i < count; i++)
        put(t, buf, i, t == SC_FLOAT32 ? f32v[i % 6] : t == SC_FLOAT16 ? f16v[i % 6] : bf16v[i % 6]);
}

/* +Inf, -Inf, a quiet NaN, a signaling NaN and a negative NaN of each type. */
static uint32_t nonfinite_value(sc_dtype_t t, int k)
{
    static const uint32_t f32v[] = {0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffc12345};
    static const uint16_t f16v[] = {0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfd23};
    static const uint16_t bf16v[] = {0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffa5};
    return t == SC_FLOAT32 ? f32v[k] : t == SC_FLOAT16 ? f16v[k] : bf16v[k];
}

static int test_check_finite_flags_inf_or_nan_at_any_position(void)
{
    enum { N = 67 };
    uint32_t buf[N];

    for (size_t ti = 0; ti < NELEM(formats); ti++)
        for (int k = 0; k < 5; k++)
            for (size_t pos = 0; pos < N; pos++) {
                sc_dtype_t t = formats[ti];
                fill_finite_extremes(t, buf, N);
                put(t, buf, pos, nonfinite_value(t, k));
                CHECK(sc_check_finite_host(buf, t, N) == 1, "%s %#x at %zu not found",
                      sc_dtype_name(t), nonfinite_value(t, k), pos);
            }
    return 0;
}

static int test_check_finite_does_not_flag_finite_extremes(void)
{
    enum { N = 1001 };
    uint32_t buf[N];

    for (size_t ti = 0; ti < NELEM(formats); ti++) {
        fill_finite_extremes(formats[ti], buf, N);
        CHECK(sc_check_finite_host(buf, formats[ti], N) == 0, "%s flagged",
              sc_dtype_name(formats[ti]));
    }
    return 0;
}

/* Past the first chunks that the twin looks at separately. */
static int test_check_finite_finds_an_inf_at_the_end_of_a_long_buffer(void)
{
    size_t n = 1000003;
    uint32_t *buf = malloc(n * 4);

    CHECK(buf, "no memory");
    for (size_t ti = 0; ti < NELEM(formats); ti++) {
        sc_dtype_t t = formats[ti];
        fill_finite_extremes(t, buf, n);
        int clean = sc_check_finite_host(buf, t, n);
        put(t, buf, n - 1, nonfinite_value(t, 1));
        int found = sc_check_finite_host(buf, t, n);
        if (clean != 0 || found != 1) {
            fprintf(stderr, "  %s: clean %d found %d\n", sc_dtype_name(t), clean, found);
            free(buf);
            return 1;
        }
    }
    free(buf);
    return 0;
}

/* ---- unscale_check ---------------------------------------------------------------------------- */

static int test_unscale_check_values_are_the_scaled_cast(void)
{
    enum { N = 1003 };
    uint32_t buf[N], in[N];

    for (size_t ti = 0; ti < NELEM(formats); ti++)
        for (size_t k = 0; k < NELEM(scales); k++) {
            sc_dtype_t t = formats[ti];
            int expected_flag = 0;
            fill_random(t, in, N, 500 + ti * 20 + k);
            memcpy(buf, in, sizeof(buf));
            int flag = sc_unscale_check_host(buf, t, N, scales[k]);
            for (size_t i = 0; i < N; i++) {
                uint32_t expected = ref_cast(t, t, get(t, in, i), scales[k]);
                expected_flag |= ref_nonfinite(t, get(t, in, i)) | ref_nonfinite(t, expected);
                CHECK(get(t, buf, i) == expected, "%s %#x * %a -> %#x, expected %#x",
                      sc_dtype_name(t), get(t, in, i), scales[k], get(t, buf, i), expected);
            }
            CHECK(flag == expected_flag, "%s * %a: flag %d, expected %d", sc_dtype_name(t),
                  scales[k], flag, expected_flag);
        }
    return 0;
}

static int test_unscale_check_flags_inf_and_nan_inputs_at_any_position(void)
{
    enum { N = 35 };
    uint32_t buf[N];

    for (size_t ti = 0; ti < NELEM(formats); ti++)
        for (int k = 0; k < 5; k++)
            for (size_t pos = 0; pos < N; pos++) {
                sc_dtype_t t = formats[ti];
                fill_finite_extremes(t, buf, N);
                put(t, buf, pos, nonfinite_value(t, k));
                CHECK(sc_unscale_check_host(buf, t, N, 0.5f) == 1, "%s %#x at %zu not flagged",
                      sc_dtype_name(t), nonfinite_value(t, k), pos);
            }
    return 0;
}

static int test_unscale_check_does_not_flag_finite_results(void)
{
    enum { N = 1001 };
    uint32_t buf[N];

    for (size_t ti = 0; ti < NELEM(formats); ti++) {
        fill_finite_extremes(formats[ti], buf, N);
        CHECK(sc_unscale_check_host(buf, formats[ti], N, 0.5f) == 0, "%s flagged",
              sc_dtype_name(formats[ti]));
    }
    return 0;
}

/* A finite input whose result overflows is flagged: a float16 gradient times 2. */
static int test_unscale_check_flags_results_that_overflow(void)
{
    static const struct {
        sc_dtype_t t;
        uint32_t one, in, out;
        float scale;
    } cases[] = {{SC_FLOAT16, 0x3c00, 0x7bff, 0x7c00, 2.0f},
                 {SC_FLOAT16, 0x3c00, 0xf8e2, 0xfc00, 4.0f}, /* -40000 * 4 */
                 {SC_BFLOAT16, 0x3f80, 0x7f7f, 0x7f80, 2.0f},
                 {SC_FLOAT32, 0x3f800000, 0x7f7fffff, 0x7f800000, 2.0f}};

    for (size_t c = 0; c < NELEM(cases); c++) {
        uint32_t buf[9];
        for (size_t i = 0; i < 9; i++)
            put(cases[c].t, buf, i, i == 4 ? cases[c].in : cases[c].one);
        int flag = sc_unscale_check_host(buf, cases[c].t, 9, cases[c].scale);
        CHECK(flag == 1 && get(cases[c].t, buf, 4) == cases[c].out, "%s %#x * %a: %#x flag %d",
              sc_dtype_name(cases[c].t), cases[c].in, cases[c].scale, get(cases[c].t, buf, 4),
              flag);
    }
    return 0;
}

static int test_unscale_check_flags_nan_made_by_scaling(void)
{
    uint32_t f[9] = {0};
    uint16_t h[9] = {0};

    CHECK(sc_unscale_check_host(f, SC_FLOAT32, 9, INFINITY) == 1 && f[0] == 0x7fc00000u,
          "float32 0 * Inf: %#x", f[0]);
    CHECK(sc_unscale_check_host(h, SC_FLOAT16, 9, NAN) == 1 && h[8] == 0x7e00, "float16 0 * NaN: %#x",
          h[8]);
    return 0;
}

/* ---- the public calls on host buffers ----------------------------------------------------------- */

static int test_api_cast_on_host_buffers_is_the_reference_cast(void)
{
    enum { N = 777 };
    uint32_t in[N], out[N];

    for (size_t si = 0; si < NELEM(formats); si++)
        for (size_t di = 0; di < NELEM(formats); di++) {
            sc_dtype_t st = formats[si], dt = formats[di];
            fill_random(st, in, N, 40 + si * 3 + di);
            CHECK_OK(sc_cast(in, st, out, dt, N, 0.125f, NULL));
            for (size_t i = 0; i < N; i++)
                CHECK(get(dt, out, i) == ref_cast(st, dt, get(st, in, i), 0.125f),
                      "%s -> %s element %zu", sc_dtype_name(st), sc_dtype_name(dt), i);
        }
    return 0;
}

static int test_api_check_finite_sets_the_flag_and_never_clears_it(void)
{
    float good[5] = {1, 2, 3, 4, 5}, bad[5] = {1, 2, INFINITY, 4, 5};
    int32_t flag = 0;

    CHECK_OK(sc_check_finite(good, SC_FLOAT32, 5, &flag, NULL));
    CHECK(flag == 0, "finite data set the flag to %d", flag);
    CHECK_OK(sc_check_finite(bad, SC_FLOAT32, 5, &flag, NULL));
    CHECK(flag == 1, "Inf left the flag at %d", flag);
    CHECK_OK(sc_check_finite(good, SC_FLOAT32, 5, &flag, NULL));
    CHECK(flag == 1, "finite data cleared the flag to %d", flag);
    return 0;
}

static int test_api_unscale_check_scales_in_place_and_never_clears_the_flag(void)
{
    uint16_t buf[3] = {0x4000, 0x3c00, 0xc400}; /* 2, 1, -4 as float16 */
    uint16_t after[3] = {0x3800, 0x3400, 0xbc00}; /* 0.5, 0.25, -1 */
    int32_t flag = 1;

    CHECK_OK(sc_unscale_check(buf, SC_FLOAT16, 3, 0.25f, &flag, NULL));
    CHECK(memcmp(buf, after, sizeof(buf)) == 0, "got %#x %#x %#x", buf[0], buf[1], buf[2]);
    CHECK(flag == 1, "finite data cleared the flag to %d", flag);
    flag = 0;
    buf[1] = 0x7c00;
    CHECK_OK(sc_unscale_check(buf, SC_FLOAT16, 3, 0.25f, &flag, NULL));
    CHECK(flag == 1, "Inf left the flag at %d", flag);
    return 0;
}

static int test_api_count_zero_does_nothing_and_succeeds(void)
{
    int32_t flag = 5;

    CHECK_OK(sc_cast(NULL, SC_FLOAT32, NULL, SC_FLOAT16, 0, 1.0f, NULL));
    CHECK_OK(sc_check_finite(NULL, SC_BFLOAT16, 0, NULL, NULL));
    CHECK_OK(sc_unscale_check(NULL, SC_FLOAT16, 0, 2.0f, &flag, NULL));
    CHECK(flag == 5, "flag written: %d", flag);
    return 0;
}

static int test_api_null_buffers_are_invalid_arg_naming_them(void)
{
    float buf[4] = {1, 2, 3, 4};
    uint16_t out[4] = {7, 7, 7, 7};
    int32_t flag = 0;

    CHECK_REFUSED(sc_cast(NULL, SC_FLOAT32, out, SC_FLOAT16, 4, 1.0f, NULL), SC_ERR_INVALID_ARG,
                  "sc_cast: src is NULL with count 4");
    CHECK_REFUSED(sc_cast(buf, SC_FLOAT32, NULL, SC_FLOAT16, 4, 1.0f, NULL), SC_ERR_INVALID_ARG,
                  "sc_cast: dst is NULL with count 4");
    CHECK_REFUSED(sc_check_finite(NULL, SC_FLOAT32, 4, &flag, NULL), SC_ERR_INVALID_ARG,
                  "sc_check_finite: buf is NULL");
    CHECK_REFUSED(sc_check_finite(buf, SC_FLOAT32, 4, NULL, NULL), SC_ERR_INVALID_ARG,
                  "sc_check_finite: flag is NULL");
    CHECK_REFUSED(sc_unscale_check(buf, SC_FLOAT32, 4, 2.0f, NULL, NULL), SC_ERR_INVALID_ARG,
                  "sc_unscale_check: flag is NULL");
    /* A flag inside the buffer it checks (it used to be written over an element). */
    CHECK_REFUSED(sc_unscale_check(buf, SC_FLOAT32, 4, 0.5f, (int32_t *)(void *)&buf[1], NULL),
                  SC_ERR_INVALID_ARG, "sc_unscale_check: flag lies inside buf");
    CHECK_REFUSED(sc_check_finite(buf, SC_FLOAT32, 4, (int32_t *)(void *)&buf[3], NULL),
                  SC_ERR_INVALID_ARG, "sc_check_finite: flag lies inside buf");
    CHECK(out[0] == 7 && buf[0] == 1 && buf[1] == 2 && buf[3] == 4 && flag == 0,
          "an output was written");
    return 0;
}

static int test_api_dtypes_other_than_the_three_floats_are_invalid_arg(void)
{
    float buf[4] = {1, 2, 3, 4}, out[4] = {0};
    int32_t flag = 0;

    CHECK_REFUSED(sc_cast(buf, SC_INT32, out, SC_FLOAT32, 4, 1.0f, NULL), SC_ERR_INVALID_ARG,
                  "sc_cast: src_type is int32, but the kernels take float32, float16 or bfloat16");
    CHECK_REFUSED(sc_cast(buf, SC_FLOAT32, out, SC_FLOAT64, 2, 1.0f, NULL), SC_ERR_INVALID_ARG,
                  "sc_cast: dst_type is float64");
    CHECK_REFUSED(sc_cast(buf, (sc_dtype_t)99, out, SC_FLOAT32, 4, 1.0f, NULL),
                  SC_ERR_INVALID_ARG, "sc_cast: src_type is an unknown dtype (99)");
    CHECK_REFUSED(sc_check_finite(buf, SC_INT8, 4, &flag, NULL), SC_ERR_INVALID_ARG,
                  "sc_check_finite: dtype is int8");
    CHECK_REFUSED(sc_unscale_check(buf, SC_UINT8, 0, 1.0f, &flag, NULL), SC_ERR_INVALID_ARG,
                  "sc_unscale_check: dtype is uint8");
    CHECK(out[0] == 0 && flag == 0, "an output was written");
    return 0;
}

static int test_api_count_overflow_is_invalid_arg(void)
{
    float buf[4] = {0};
    int32_t flag = 0;

    CHECK_REFUSED(sc_cast(buf, SC_FLOAT16, buf, SC_FLOAT32, SIZE_MAX / 2, 1.0f, NULL),
                  SC_ERR_INVALID_ARG, "sc_cast: count 9223372036854775807 of float32 overflows");
    CHECK_REFUSED(sc_unscale_check(buf, SC_FLOAT16, SIZE_MAX, 1.0f, &flag, NULL),
                  SC_ERR_INVALID_ARG, "overflows the buffer size");
    return 0;
}

static int test_api_misaligned_buffers_are_invalid_arg(void)
{
    uint32_t mem[8] = {0};
    char *odd = (char *)mem + 1;
    int32_t flag = 0;

    CHECK_REFUSED(sc_cast(odd, SC_FLOAT16, mem + 4, SC_FLOAT32, 2, 1.0f, NULL),
                  SC_ERR_INVALID_ARG, "is not aligned to its 2-byte elements");
    CHECK_REFUSED(sc_cast(mem, SC_FLOAT16, (char *)mem + 18, SC_FLOAT32, 2, 1.0f, NULL),
                  SC_ERR_INVALID_ARG, "sc_cast: dst");
    CHECK_REFUSED(sc_check_finite(mem, SC_FLOAT32, 2, (int32_t *)odd, NULL), SC_ERR_INVALID_ARG,
                  "sc_check_finite: flag");
    CHECK(flag == 0 && mem[4] == 0, "an output was written");
    return 0;
}

static int test_api_overlap_other_than_in_place_is_invalid_arg(void)
{
    uint32_t mem[16] = {0};

    CHECK_REFUSED(sc_cast(mem, SC_FLOAT32, mem + 1, SC_FLOAT32, 4, 1.0f, NULL), SC_ERR_INVALID_ARG,
                  "sc_cast: src and dst overlap without being the same buffer");
    CHECK_REFUSED(sc_cast(mem, SC_FLOAT32, mem, SC_FLOAT16, 4, 1.0f, NULL), SC_ERR_INVALID_ARG,
                  "in place needs equal element sizes");
    CHECK_REFUSED(sc_cast((uint16_t *)mem + 3, SC_FLOAT16, mem, SC_FLOAT32, 4, 1.0f, NULL),
                  SC_ERR_INVALID_ARG, "overlap");
    return 0;
}

static int test_api_in_place_cast_is_allowed(void)
{
    uint16_t buf[2] = {0x3c00, 0x4000}; /* float16 1 and 2 */

    CHECK_OK(sc_cast(buf, SC_FLOAT16, buf, SC_BFLOAT16, 2, 1.0f, NULL));
    CHECK(buf[0] == 0x3f80 && buf[1] == 0x4000, "got %#x %#x", buf[0], buf[1]);
    return 0;
}

static int test_api_stream_with_host_buffers_is_invalid_arg(void)
{
    float buf[4] = {1, 2, 3, 4};
    uint16_t out[4] = {0};
    int32_t flag = 0;
    sc_stream_t stream = (sc_stream_t)(uintptr_t)0x1000;

    CHECK_REFUSED(sc_cast(buf, SC_FLOAT32, out, SC_FLOAT16, 4, 1.0f, stream), SC_ERR_INVALID_ARG,
                  "sc_cast: a stream was given, but src is host memory");
    CHECK_REFUSED(sc_unscale_check(buf, SC_FLOAT32, 4, 2.0f, &flag, stream), SC_ERR_INVALID_ARG,
                  "sc_unscale_check: a stream was given, but buf is host memory");
    CHECK(out[0] == 0 && buf[0] == 1 && flag == 0, "an output was written");
    return 0;
}

/* The host twins compute in the library's floating-point environment (types.h), not in
 * the caller's: with flush-to-zero, denormals-are-zero and rounding toward zero set on
 * the calling thread (torch.set_flush_denormal(True) sets the first two), subnormal
 * inputs and results are kept and products round to nearest even, on the vector path
 * and the scalar tail (17 elements), and the caller's modes are as it set them after. */
static int test_api_host_kernels_ignore_the_callers_flush_to_zero_and_rounding_mode(void)
{
#if defined(__x86_64__) || defined(__i386__)
    enum { N = 17 };
    /* MXCSR: flush-to-zero, rounding toward zero, denormals-are-zero; 0x3f the flags */
    unsigned set = _mm_getcsr() | 0x8000u | 0x6000u | 0x0040u, saved = _mm_getcsr(), after;
    uint32_t tiny[N], one[N], unscaled[N], out_tiny[N], out_one[N], out_bf[N];
    uint16_t bf[N];
    sc_status_t st[4];
    int32_t flag = 0;

    for (size_t i = 0; i < N; i++) {
        tiny[i] = unscaled[i] = 0x00000003u; /* 3 * 2^-149 */
        one[i] = 0x3f800001u;                /* 1 + 2^-23 */
        bf[i] = 0x0001;                      /* 2^-133 */
    }
    _mm_setcsr(set);
    st[0] = sc_cast(tiny, SC_FLOAT32, out_tiny, SC_FLOAT32, N, 0.5f, NULL);
    st[1] = sc_cast(one, SC_FLOAT32, out_one, SC_FLOAT32, N, 1.5f, NULL);
    st[2] = sc_cast(bf, SC_BFLOAT16, out_bf, SC_FLOAT32, N, 3.0f, NULL);
    st[3] = sc_unscale_check(unscaled, SC_FLOAT32, N, 0.5f, &flag, NULL);
    after = _mm_getcsr();
    _mm_setcsr(saved);
    for (int k = 0; k < 4; k++)
        CHECK_OK(st[k]);
    CHECK((after & ~0x3fu) == (set & ~0x3fu), "the caller's MXCSR %#x came back as %#x", set,
          after);
    /* 1.5 * 2^-149 and 1.5 + 2^-23 + 2^-24 are ties: to even, 2 * 2^-149 and 1.5 + 2^-22 */
    for (size_t i = 0; i < N; i++) {
        CHECK(out_tiny[i] == 0x00000002u, "3 * 2^-149 * 0.5: element %zu is %#x", i,
              out_tiny[i]);
        CHECK(out_one[i] == 0x3fc00002u, "(1 + 2^-23) * 1.5: element %zu is %#x", i, out_one[i]);
        CHECK(out_bf[i] == 0x00030000u, "bfloat16 2^-133 * 3: element %zu is %#x", i, out_bf[i]);
        CHECK(unscaled[i] == 0x00000002u, "unscale_check: element %zu is %#x", i, unscaled[i]);
    }
    CHECK(flag == 0, "finite results set the flag to %d", flag);
#endif
    return 0;
}

/* ---- runner -------------------------------------------------------------------------------------- */

static const sc_test_t tests[] = {
    SC_TEST(half_to_float_is_exact_for_every_half),
    SC_TEST(bfloat16_to_float_is_exact_for_every_bfloat16),
    SC_TEST(half_and_bfloat16_nans_widen_quiet_with_sign_and_payload),
    SC_TEST(float_to_half_matches_reference_at_every_exponent_and_tie),
    SC_TEST(float_to_bfloat16_matches_reference_at_every_exponent_and_tie),
    SC_TEST(float_to_half_rounds_ties_to_even),
    SC_TEST(float_to_half_overflows_to_inf_past_65520),
    SC_TEST(float_to_half_rounds_subnormal_results_and_keeps_the_sign_of_zero),
    SC_TEST(float_to_half_keeps_nan_quiet_with_sign_and_top_payload),
    SC_TEST(float_to_bfloat16_rounds_ties_to_even),
    SC_TEST(float_to_bfloat16_overflows_to_inf_past_the_largest),
    SC_TEST(float_to_bfloat16_keeps_nan_quiet_with_sign_and_top_payload),
    SC_TEST(twin_matches_spec_for_every_float32),
    SC_TEST(cast_with_scale_is_the_reference_cast_of_the_float32_product),
    SC_TEST(cast_with_scale_one_changes_no_number),
    SC_TEST(nan_input_is_not_scaled_and_keeps_sign_and_payload),
    SC_TEST(nan_made_by_scaling_is_the_canonical_quiet_nan),
    SC_TEST(scaled_cast_overflows_to_inf_and_underflows_to_signed_zero),
    SC_TEST(twin_handles_every_count_and_offset),
    SC_TEST(in_place_cast_equals_out_of_place),
    SC_TEST(check_finite_flags_inf_or_nan_at_any_position),
    SC_TEST(check_finite_does_not_flag_finite_extremes),
    SC_TEST(check_finite_finds_an_inf_at_the_end_of_a_long_buffer),
    SC_TEST(unscale_check_values_are_the_scaled_cast),
    SC_TEST(unscale_check_flags_inf_and_nan_inputs_at_any_position),
    SC_TEST(unscale_check_does_not_flag_finite_results),
    SC_TEST(unscale_check_flags_results_that_overflow),
    SC_TEST(unscale_check_flags_nan_made_by_scaling),
    SC_TEST(api_cast_on_host_buffers_is_the_reference_cast),
    SC_TEST(api_check_finite_sets_the_flag_and_never_clears_it),
    SC_TEST(api_unscale_check_scales_in_place_and_never_clears_the_flag),
    SC_TEST(api_count_zero_does_nothing_and_succeeds),
    SC_TEST(api_null_buffers_are_invalid_arg_naming_them),
    SC_TEST(api_dtypes_other_than_the_three_floats_are_invalid_arg),
    SC_TEST(api_count_overflow_is_invalid_arg),
    SC_TEST(api_misaligned_buffers_are_invalid_arg),
    SC_TEST(api_overlap_other_than_in_place_is_invalid_arg),
    SC_TEST(api_in_place_cast_is_allowed),
    SC_TEST(api_stream_with_host_buffers_is_invalid_arg),
    SC_TEST(api_host_kernels_ignore_the_callers_flush_to_zero_and_rounding_mode),
};

/* Runs every test, or only those whose name contains argv[1]. */
int main(int argc, char **argv)
{
    return sc_run_tests(tests, NELEM(tests), argc > 1 ? argv[1] : NULL);
}
