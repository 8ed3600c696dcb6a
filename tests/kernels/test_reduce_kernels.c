/* Unit tests of the host reduction kernels and the float16/bfloat16 conversions,
 * against references written here: _Float16 for halves, frexp/ldexp for bfloat16. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/sc_bits.h"
#include "../common/sc_test_runner.h"
#include "collectives/fp8_spec.h"
#include "collectives/reduce_kernels.h"

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "  %s:%d: %s: ", __FILE__, __LINE__, #cond);                 \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

static const sc_dtype_t all_dtypes[] = {SC_FLOAT32, SC_FLOAT64, SC_FLOAT16, SC_BFLOAT16,
                                        SC_INT8,    SC_UINT8,   SC_INT32,   SC_INT64};
static const sc_op_t all_ops[] = {SC_SUM, SC_PROD, SC_MIN, SC_MAX, SC_AVG};
static const size_t tail_counts[] = {1, 7, 8, 9, 31, 33, 1000003};
#define NELEM(x) (sizeof(x) / sizeof((x)[0]))

static const char *dtype_str(sc_dtype_t d)
{
    static const char *names[] = {"float32", "float64", "float16", "bfloat16",
                                  "int8",    "uint8",   "int32",   "int64"};
    return names[d];
}

static const char *op_str(sc_op_t op)
{
    static const char *names[] = {"sum", "prod", "min", "max", "avg"};
    return names[op];
}

static size_t dtype_bytes(sc_dtype_t d)
{
    static const size_t sizes[] = {4, 8, 2, 2, 1, 1, 4, 8};
    return sizes[d];
}

/* ---- bit helpers and independent references ---------------------------------- */

static double f64(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static uint64_t f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* float16 through the compiler's _Float16 (libgcc conversions on x86-64). */
static double ref_half_to_double(uint16_t h)
{
    _Float16 v;
    memcpy(&v, &h, 2);
    return (double)v;
}

static uint16_t ref_double_to_half(double d)
{
    _Float16 v = (_Float16)d;
    uint16_t h;
    memcpy(&h, &v, 2);
    return h;
}

/* bfloat16 from its fields: 1 sign, 8 exponent (bias 127), 7 mantissa bits. */
static double ref_bf16_to_double(uint16_t b)
{
    int exp = (b >> 7) & 0xff, mant = b & 0x7f;
    double mag;

    if (exp == 0xff)
        mag = mant ? NAN : INFINITY;
    else if (exp == 0)
        mag = ldexp(mant, -126 - 7);
    else
        mag = ldexp(mant + 128, exp - 127 - 7);
    return (b & 0x8000) ? -mag : mag;
}

/* Round a non-NaN double to bfloat16, nearest even, by scaling to an integer
 * count of ulps and nearbyint (the default rounding mode is nearest even). */
static uint16_t ref_double_to_bf16(double d)
{
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    double mag = fabs(d);
    int e;

    if (isinf(mag))
        return sign | 0x7f80;
    if (mag == 0)
        return sign;
    frexp(mag, &e);
    int lead = e - 1 < -126 ? -126 : e - 1;
    double ulp = ldexp(1.0, lead - 7);
    double r = nearbyint(mag / ulp) * ulp;
    if (r >= 0x1p128)
        return sign | 0x7f80;
    return sign | (uint16_t)(f32_bits((float)r) >> 16);
}

/* min/max as specified: NaN if either is NaN, -0 below +0, otherwise the usual. */
static double ref_min(double x, double y)
{
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == y)
        return signbit(x) ? x : y;
    return x < y ? x : y;
}

static double ref_max(double x, double y)
{
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == y)
        return signbit(x) ? y : x;
    return x > y ? x : y;
}

static double ref_float_op(sc_op_t op, double x, double y)
{
    switch (op) {
    case SC_PROD:
        return x * y;
    case SC_MIN:
        return ref_min(x, y);
    case SC_MAX:
        return ref_max(x, y);
    default:
        return x + y;
    }
}

/* Integers: exact in 128 bits, then wrapped modulo 2^bits by hand. */
static __int128 ref_int_op(sc_op_t op, __int128 x, __int128 y)
{
    switch (op) {
    case SC_PROD:
        return x * y;
    case SC_MIN:
        return x < y ? x : y;
    case SC_MAX:
        return x > y ? x : y;
    default:
        return x + y;
    }
}

static __int128 wrap_signed(__int128 v, int bits)
{
    __int128 m = (__int128)1 << bits;
    v %= m;
    if (v < 0)
        v += m;
    if (v >= m / 2)
        v -= m;
    return v;
}

static __int128 wrap_unsigned(__int128 v, int bits)
{
    __int128 m = (__int128)1 << bits;
    v %= m;
    return v < 0 ? v + m : v;
}

/* Expected element out = a op b, computed in double (exact for sum/prod of halves
 * and bfloat16 products; for the rest, rounding twice through 53 bits gives the
 * correctly rounded result since 53 >= 2p + 2), then rounded once. */
static void ref_elem(sc_op_t op, sc_dtype_t d, const void *a, const void *b, void *out)
{
    switch (d) {
    case SC_FLOAT32: {
        uint32_t x, y, r;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        if (op == SC_MIN || op == SC_MAX) {
            double m = ref_float_op(op, f32(x), f32(y));
            r = isnan(m) ? 0x7fc00000u : f32_bits((float)m);
        } else {
            float s = op == SC_PROD ? f32(x) * f32(y) : f32(x) + f32(y);
            r = isnan(s) ? 0x7fc00000u : f32_bits(s);
        }
        memcpy(out, &r, 4);
        break;
    }
    case SC_FLOAT64: {
        uint64_t x, y, r;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        double m = ref_float_op(op, f64(x), f64(y));
        r = isnan(m) ? UINT64_C(0x7ff8000000000000) : f64_bits(m);
        memcpy(out, &r, 8);
        break;
    }
    case SC_FLOAT16: {
        uint16_t x, y, r;
        memcpy(&x, a, 2);
        memcpy(&y, b, 2);
        double m = ref_float_op(op, ref_half_to_double(x), ref_half_to_double(y));
        r = isnan(m) ? 0x7e00 : ref_double_to_half(m);
        memcpy(out, &r, 2);
        break;
    }
    case SC_BFLOAT16: {
        uint16_t x, y, r;
        memcpy(&x, a, 2);
        memcpy(&y, b, 2);
        double m = ref_float_op(op, ref_bf16_to_double(x), ref_bf16_to_double(y));
        r = isnan(m) ? 0x7fc0 : ref_double_to_bf16(m);
        memcpy(out, &r, 2);
        break;
    }
    case SC_INT8: {
        int8_t x = *(const int8_t *)a, y = *(const int8_t *)b;
        *(int8_t *)out = (int8_t)wrap_signed(ref_int_op(op, x, y), 8);
        break;
    }
    case SC_UINT8: {
        uint8_t x = *(const uint8_t *)a, y = *(const uint8_t *)b;
        *(uint8_t *)out = (uint8_t)wrap_unsigned(ref_int_op(op, x, y), 8);
        break;
    }
    case SC_INT32: {
        int32_t x, y, r;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        r = (int32_t)wrap_signed(ref_int_op(op, x, y), 32);
        memcpy(out, &r, 4);
        break;
    }
    default: {
        int64_t x, y, r;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        r = (int64_t)wrap_signed(ref_int_op(op, x, y), 64);
        memcpy(out, &r, 8);
        break;
    }
    }
}

/* ---- random inputs: ordinary values with close exponents (so sums round), random
 * bit patterns (every class), and a list of edge cases ----------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

static const uint32_t special_f32[] = {
    0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001,
    0x7fa12345, 0xff812345, 0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff,
    0xff7fffff, 0x3f800000, 0xbf800000};
static const uint64_t special_f64[] = {
    0, UINT64_C(0x8000000000000000), UINT64_C(0x7ff0000000000000),
    UINT64_C(0xfff0000000000000), UINT64_C(0x7ff8000000000000), UINT64_C(0xfff8000000000000),
    UINT64_C(0x7ff0000000000001), UINT64_C(0x7ff4000000abcdef), UINT64_C(0x0000000000000001),
    UINT64_C(0x000fffffffffffff), UINT64_C(0x7fefffffffffffff), UINT64_C(0xffefffffffffffff),
    UINT64_C(0x3ff0000000000000)};
static const uint16_t special_f16[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe00,
                                       0x7c01, 0x7d23, 0xfd23, 0x0001, 0x8001, 0x03ff,
                                       0x0400, 0x7bff, 0xfbff, 0x3c00, 0x3c01};
static const uint16_t special_bf16[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc0,
                                        0x7f81, 0x7fa5, 0xffa5, 0x0001, 0x8001, 0x007f,
                                        0x0080, 0x7f7f, 0xff7f, 0x3f80, 0x3f81};
static const int64_t special_int[] = {0, 1, -1, 2, -2, 127, -128, 255, 32767, INT32_MAX,
                                      INT32_MIN, INT64_MAX, INT64_MIN};

static void fill_random(sc_dtype_t d, void *buf, size_t count, uint64_t seed)
{
    uint64_t s = seed * UINT64_C(0x9e3779b97f4a7c15) + 1;

    for (size_t i = 0; i < count; i++) {
        uint64_t r = rng_next(&s);
        unsigned kind = r % 8, sign = (r >> 3) & 1;
        uint64_t bits = r >> 16;
        switch (d) {
        case SC_FLOAT32: {
            uint32_t v = kind == 0 ? special_f32[bits % NELEM(special_f32)]
                         : kind == 1
                             ? (uint32_t)bits
                             : f32_bits(ldexpf((float)(bits & 0xffffff), (int)((bits >> 24) % 21) - 34));
            ((uint32_t *)buf)[i] = v ^ (sign && kind > 1 ? 0x80000000u : 0);
            break;
        }
        case SC_FLOAT64: {
            uint64_t v = kind == 0 ? special_f64[bits % NELEM(special_f64)]
                         : kind == 1 ? rng_next(&s)
                                     : f64_bits(ldexp((double)(rng_next(&s) >> 11),
                                                      (int)(bits % 41) - 73));
            ((uint64_t *)buf)[i] = v ^ (sign && kind > 1 ? UINT64_C(1) << 63 : 0);
            break;
        }
        case SC_FLOAT16:
        case SC_BFLOAT16: {
            /* ordinary: exponent field within +-5 of one, random mantissa */
            int half = d == SC_FLOAT16;
            uint16_t v;
            if (kind == 0)
                v = half ? special_f16[bits % NELEM(special_f16)]
                         : special_bf16[bits % NELEM(special_bf16)];
            else if (kind == 1)
                v = (uint16_t)bits;
            else if (half)
                v = (uint16_t)(((10 + bits % 11) << 10) | ((bits >> 8) & 0x3ff));
            else
                v = (uint16_t)(((122 + bits % 11) << 7) | ((bits >> 8) & 0x7f));
            ((uint16_t *)buf)[i] = v ^ (sign && kind > 1 ? 0x8000 : 0);
            break;
        }
        default: {
            uint64_t v = kind == 0 ? (uint64_t)special_int[bits % NELEM(special_int)]
                         : kind < 4 ? bits % 16 : rng_next(&s);
            memcpy((char *)buf + i * dtype_bytes(d), &v, dtype_bytes(d));
            break;
        }
        }
    }
}

/* Compares count elements of got with expected, naming the first difference. */
static int check_elems(sc_dtype_t d, sc_op_t op, const void *a, const void *b,
                       const void *got, const void *expected, size_t count, const char *what)
{
    size_t n = dtype_bytes(d);

    for (size_t i = 0; i < count; i++) {
        if (memcmp((const char *)got + i * n, (const char *)expected + i * n, n) != 0) {
            uint64_t va = 0, vb = 0, vg = 0, ve = 0;
            memcpy(&va, (const char *)a + i * n, n);
            memcpy(&vb, (const char *)b + i * n, n);
            memcpy(&vg, (const char *)got + i * n, n);
            memcpy(&ve, (const char *)expected + i * n, n);
            fprintf(stderr,
                    "  %s %s %s count %zu: element %zu: a=%#" PRIx64 " b=%#" PRIx64
                    " got %#" PRIx64 " expected %#" PRIx64 "\n",
                    what, dtype_str(d), op_str(op), count, i, va, vb, vg, ve);
            return 1;
        }
    }
    return 0;
}

/* Buffers a, b (random, seeded), out and expected for one dtype and count, shifted
 * by one element off the allocation's alignment when misalign is set. */
typedef struct {
    char *mem[4];
    void *a, *b, *out, *expected;
} bufs_t;

static int bufs_alloc(bufs_t *t, sc_dtype_t d, size_t count, int misalign, uint64_t seed)
{
    size_t n = dtype_bytes(d), off = misalign ? n : 0;
    void **p[4] = {&t->a, &t->b, &t->out, &t->expected};

    for (int i = 0; i < 4; i++) {
        t->mem[i] = malloc(count * n + off + 1);
        if (!t->mem[i]) {
            while (i--)
                free(t->mem[i]);
            return 1;
        }
        *p[i] = t->mem[i] + off;
    }
    fill_random(d, t->a, count, seed);
    fill_random(d, t->b, count, seed + 1000);
    memset(t->out, 0xa5, count * n);
    return 0;
}

static void bufs_free(bufs_t *t)
{
    for (int i = 0; i < 4; i++)
        free(t->mem[i]);
}

static void ref_reduce(sc_op_t op, sc_dtype_t d, const void *a, const void *b, void *out,
                       size_t count)
{
    size_t n = dtype_bytes(d);

    for (size_t i = 0; i < count; i++)
        ref_elem(op, d, (const char *)a + i * n, (const char *)b + i * n, (char *)out + i * n);
}

/* ---- conversions: float16 ------------------------------------------------------ */

static int test_half_to_float_is_exact_for_every_half(void)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        double expected = ref_half_to_double((uint16_t)h);
        if (isnan(expected))
            continue;
        float got = sc_half_to_float((uint16_t)h);
        CHECK(f32_bits(got) == f32_bits((float)expected), "half %#x -> %a, expected %a", h,
              got, expected);
    }
    return 0;
}

static int test_half_to_float_keeps_nan_quiet_sign_and_payload(void)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        uint32_t mant = h & 0x3ff;
        if ((h & 0x7c00) != 0x7c00 || mant == 0)
            continue;
        uint32_t expected = ((h & 0x8000u) << 16) | 0x7fc00000u | (mant << 13);
        uint32_t got = f32_bits(sc_half_to_float((uint16_t)h));
        CHECK(got == expected, "half %#x -> %#x, expected %#x", h, got, expected);
    }
    return 0;
}

static int test_float_to_half_roundtrips_every_half(void)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        if (isnan(ref_half_to_double((uint16_t)h)))
            continue;
        uint16_t got = sc_float_to_half((float)ref_half_to_double((uint16_t)h));
        CHECK(got == h, "half %#x came back as %#x", h, got);
    }
    return 0;
}

/* Every midpoint between consecutive finite halves of both signs (a tie), and the
 * floats one ulp either side of it. */
static int test_float_to_half_rounds_midpoints_to_even(void)
{
    for (uint32_t h = 0; h < 0x7bff; h++) {
        for (int neg = 0; neg < 2; neg++) {
            double lo = ref_half_to_double((uint16_t)h), hi = ref_half_to_double((uint16_t)(h + 1));
            float mid = (float)((lo + hi) / 2); /* exact: 12 significant bits */
            float around[3] = {nextafterf(mid, 0), mid, nextafterf(mid, INFINITY)};
            for (int k = 0; k < 3; k++) {
                float f = neg ? -around[k] : around[k];
                uint16_t expected = ref_double_to_half(f), got = sc_float_to_half(f);
                CHECK(got == expected, "%a -> %#x, expected %#x", f, got, expected);
                CHECK(k != 1 || (got & 1) == 0, "tie %a went to odd %#x", f, got);
            }
        }
    }
    return 0;
}

static int test_float_to_half_matches_reference_on_random_floats(void)
{
    uint64_t s = 42;

    for (int i = 0; i < 2000000; i++) {
        uint64_t r = rng_next(&s);
        uint32_t bits = (uint32_t)r;
        if (i % 2) /* half of them near the float16 range: exponent field 100..145 */
            bits = (bits & 0x807fffffu) | ((uint32_t)(100 + (r >> 32) % 46) << 23);
        float f = f32(bits);
        if (isnan(f))
            continue;
        uint16_t expected = ref_double_to_half(f), got = sc_float_to_half(f);
        CHECK(got == expected, "%a (%#x) -> %#x, expected %#x", f, bits, got, expected);
    }
    return 0;
}

static int test_float_to_half_overflows_to_inf(void)
{
    static const struct {
        float in;
        uint16_t out;
    } cases[] = {
        {65504.0f, 0x7bff},  {0x1.ffdffep15f, 0x7bff}, /* one float ulp below 65520 */
        {65520.0f, 0x7c00},  {-65520.0f, 0xfc00},      {1e10f, 0x7c00},
        {FLT_MAX, 0x7c00},   {-FLT_MAX, 0xfc00},       {INFINITY, 0x7c00},
        {-INFINITY, 0xfc00},
    };
    for (size_t i = 0; i < NELEM(cases); i++) {
        uint16_t got = sc_float_to_half(cases[i].in);
        CHECK(got == cases[i].out, "%a -> %#x, expected %#x", cases[i].in, got, cases[i].out);
    }
    return 0;
}

static int test_float_to_half_rounds_subnormals_and_underflows_to_signed_zero(void)
{
    static const struct {
        float in;
        uint16_t out;
    } cases[] = {
        {0x1p-24f, 0x0001},          {0x1p-25f, 0x0000}, /* tie: even is zero */
        {0x1.000002p-25f, 0x0001},   {0x1p-26f, 0x0000},   {-0x1p-25f, 0x8000},
        {-0.0f, 0x8000},             {FLT_TRUE_MIN, 0x0000}, {-FLT_TRUE_MIN, 0x8000},
        {0x1.8p-24f, 0x0002},        {0x1.4p-23f, 0x0002}, /* 2.5 * 2^-24: tie to 2 */
        {0x1.ff8p-15f, 0x03ff},      {0x1.ffcp-15f, 0x0400}, /* tie: even is the first normal */
    };
    for (size_t i = 0; i < NELEM(cases); i++) {
        uint16_t got = sc_float_to_half(cases[i].in);
        CHECK(got == cases[i].out, "%a -> %#x, expected %#x", cases[i].in, got, cases[i].out);
    }
    return 0;
}

static int test_float_to_half_keeps_nan_quiet_with_sign(void)
{
    static const uint32_t in[] = {0x7fc00000, 0xffc00000, 0x7f800001, 0x7fbfe000, 0xff802000};
    static const uint16_t out[] = {0x7e00, 0xfe00, 0x7e00, 0x7fff, 0xfe01};

    for (size_t i = 0; i < NELEM(in); i++) {
        uint16_t got = sc_float_to_half(f32(in[i]));
        CHECK(got == out[i], "%#x -> %#x, expected %#x", in[i], got, out[i]);
    }
    return 0;
}

/* ---- conversions: bfloat16 --------------------------------------------------- */

static int test_bfloat16_to_float_is_exact_for_every_bfloat16(void)
{
    for (uint32_t b = 0; b < 0x10000; b++) {
        double expected = ref_bf16_to_double((uint16_t)b);
        if (isnan(expected))
            continue;
        float got = sc_bfloat16_to_float((uint16_t)b);
        CHECK(f32_bits(got) == f32_bits((float)expected), "bf16 %#x -> %a, expected %a", b,
              got, expected);
    }
    return 0;
}

static int test_bfloat16_to_float_keeps_nan_quiet_sign_and_payload(void)
{
    for (uint32_t b = 0; b < 0x10000; b++) {
        if ((b & 0x7f80) != 0x7f80 || (b & 0x7f) == 0)
            continue;
        uint32_t expected = (b << 16) | 0x400000u;
        uint32_t got = f32_bits(sc_bfloat16_to_float((uint16_t)b));
        CHECK(got == expected, "bf16 %#x -> %#x, expected %#x", b, got, expected);
    }
    return 0;
}

static int test_float_to_bfloat16_roundtrips_every_bfloat16(void)
{
    for (uint32_t b = 0; b < 0x10000; b++) {
        double v = ref_bf16_to_double((uint16_t)b);
        if (isnan(v))
            continue;
        uint16_t got = sc_float_to_bfloat16((float)v);
        CHECK(got == b, "bf16 %#x came back as %#x", b, got);
    }
    return 0;
}

static int test_float_to_bfloat16_rounds_midpoints_to_even(void)
{
    for (uint32_t b = 0; b < 0x7f7f; b++) {
        for (int neg = 0; neg < 2; neg++) {
            double lo = ref_bf16_to_double((uint16_t)b), hi = ref_bf16_to_double((uint16_t)(b + 1));
            float mid = (float)((lo + hi) / 2);
            float around[3] = {nextafterf(mid, 0), mid, nextafterf(mid, INFINITY)};
            for (int k = 0; k < 3; k++) {
                float f = neg ? -around[k] : around[k];
                uint16_t expected = ref_double_to_bf16(f), got = sc_float_to_bfloat16(f);
                CHECK(got == expected, "%a -> %#x, expected %#x", f, got, expected);
                CHECK(k != 1 || (got & 1) == 0, "tie %a went to odd %#x", f, got);
            }
        }
    }
    return 0;
}

static int test_float_to_bfloat16_matches_reference_on_random_floats(void)
{
    uint64_t s = 7;

    for (int i = 0; i < 2000000; i++) {
        float f = f32((uint32_t)rng_next(&s));
        if (isnan(f))
            continue;
        uint16_t expected = ref_double_to_bf16(f), got = sc_float_to_bfloat16(f);
        CHECK(got == expected, "%a -> %#x, expected %#x", f, got, expected);
    }
    return 0;
}

static int test_float_to_bfloat16_overflows_to_inf(void)
{
    static const uint32_t in[] = {0x7f7f7fff, 0x7f7f8000, 0x7f7fffff, 0xff7fffff, 0x7f800000,
                                  0xff800000};
    static const uint16_t out[] = {0x7f7f, 0x7f80, 0x7f80, 0xff80, 0x7f80, 0xff80};

    for (size_t i = 0; i < NELEM(in); i++) {
        uint16_t got = sc_float_to_bfloat16(f32(in[i]));
        CHECK(got == out[i], "%#x -> %#x, expected %#x", in[i], got, out[i]);
    }
    return 0;
}

/* A naive round-to-nearest add on 0x7fffffff would carry into 0x8000 and 0x7f800001
 * would truncate to Inf. */
static int test_float_to_bfloat16_keeps_nan_a_quiet_nan(void)
{
    static const uint32_t in[] = {0x7fffffff, 0x7f800001, 0xff800001, 0x7fc00000, 0xffffffff,
                                  0x7f80ffff};
    static const uint16_t out[] = {0x7fff, 0x7fc0, 0xffc0, 0x7fc0, 0xffff, 0x7fc0};

    for (size_t i = 0; i < NELEM(in); i++) {
        uint16_t got = sc_float_to_bfloat16(f32(in[i]));
        CHECK(got == out[i], "%#x -> %#x, expected %#x", in[i], got, out[i]);
    }
    return 0;
}

/* ---- reductions on random data ----------------------------------------------- */

static int test_reduce_matches_reference_for_every_dtype_op_and_count(void)
{
    for (size_t di = 0; di < NELEM(all_dtypes); di++) {
        for (size_t oi = 0; oi < NELEM(all_ops); oi++) {
            for (size_t ci = 0; ci < NELEM(tail_counts); ci++) {
                size_t count = tail_counts[ci];
                for (int misalign = 0; misalign < (count < 1000 ? 2 : 1); misalign++) {
                    sc_dtype_t d = all_dtypes[di];
                    sc_op_t op = all_ops[oi];
                    bufs_t t;
                    CHECK(bufs_alloc(&t, d, count, misalign, di * 100 + ci) == 0, "no memory");
                    ref_reduce(op, d, t.a, t.b, t.expected, count);
                    sc_reduce_local(op, d, t.a, t.b, t.out, count);
                    int bad = check_elems(d, op, t.a, t.b, t.out, t.expected, count,
                                          misalign ? "misaligned" : "aligned");
                    bufs_free(&t);
                    if (bad)
                        return 1;
                }
            }
        }
    }
    return 0;
}

static int test_reduce_of_zero_elements_writes_nothing(void)
{
    unsigned char a[16], b[16], out[16], before[16];

    memset(a, 1, sizeof(a));
    memset(b, 2, sizeof(b));
    memset(out, 0x5a, sizeof(out));
    memcpy(before, out, sizeof(out));
    for (size_t di = 0; di < NELEM(all_dtypes); di++)
        for (size_t oi = 0; oi < NELEM(all_ops); oi++)
            sc_reduce_local(all_ops[oi], all_dtypes[di], a, b, out, 0);
    CHECK(memcmp(out, before, sizeof(out)) == 0, "out was written");
    return 0;
}

/* out == a (in_a) or out == b: the result equals the out-of-place one. */
static int check_in_place(int in_a)
{
    static const size_t counts[] = {33, 1007};

    for (size_t di = 0; di < NELEM(all_dtypes); di++) {
        for (size_t oi = 0; oi < NELEM(all_ops); oi++) {
            for (size_t ci = 0; ci < NELEM(counts); ci++) {
                sc_dtype_t d = all_dtypes[di];
                sc_op_t op = all_ops[oi];
                size_t count = counts[ci], n = count * dtype_bytes(d);
                bufs_t t;
                CHECK(bufs_alloc(&t, d, count, 0, 77 + di) == 0, "no memory");
                sc_reduce_local(op, d, t.a, t.b, t.expected, count);
                memcpy(t.out, in_a ? t.a : t.b, n);
                if (in_a)
                    sc_reduce_local(op, d, t.out, t.b, t.out, count);
                else
                    sc_reduce_local(op, d, t.a, t.out, t.out, count);
                int bad = check_elems(d, op, t.a, t.b, t.out, t.expected, count,
                                      in_a ? "out==a" : "out==b");
                bufs_free(&t);
                if (bad)
                    return 1;
            }
        }
    }
    return 0;
}

static int test_reduce_into_a_matches_out_of_place(void)
{
    return check_in_place(1);
}

static int test_reduce_into_b_matches_out_of_place(void)
{
    return check_in_place(0);
}

static int test_reduce_is_commutative_bitwise(void)
{
    size_t count = 4099;

    for (size_t di = 0; di < NELEM(all_dtypes); di++) {
        for (size_t oi = 0; oi < NELEM(all_ops); oi++) {
            sc_dtype_t d = all_dtypes[di];
            sc_op_t op = all_ops[oi];
            bufs_t t;
            CHECK(bufs_alloc(&t, d, count, 0, 500 + di) == 0, "no memory");
            sc_reduce_local(op, d, t.a, t.b, t.expected, count);
            sc_reduce_local(op, d, t.b, t.a, t.out, count);
            int bad = check_elems(d, op, t.a, t.b, t.out, t.expected, count, "b op a vs a op b");
            bufs_free(&t);
            if (bad)
                return 1;
        }
    }
    return 0;
}

/* The dtypes whose avg pre-scales its inputs, with a bound (sc_avg_bound). */
static int narrow(sc_dtype_t d)
{
    return d == SC_FLOAT16 || d == SC_BFLOAT16 || d == SC_FLOAT8_E4M3 || d == SC_FLOAT8_E5M2;
}

/* The scaled reduction (the reducer's pre-division inside an all-reduce) is bit for bit
 * the reduction of the inputs scaled by sc_scale_local, for every dtype and op, with
 * the first input scaled or not, in place too, on random bit patterns (NaN, Inf and
 * subnormals among them) and a count that is no multiple of a vector or a tile; with
 * avg's bound on the narrow floats too (the fused kernels bound as sc_scale_local). */
static int test_scaled_reduce_equals_scale_then_reduce(void)
{
    static const double scales[] = {0.5, 1.0 / 3.0, 0.125};
    size_t count = 5003;

    for (size_t di = 0; di < NELEM(all_dtypes); di++) {
        for (size_t oi = 0; oi < NELEM(all_ops); oi++) {
            sc_dtype_t d = all_dtypes[di];
            size_t n = dtype_bytes(d);
            for (int k = 0; k < 6; k++) {
                int scale_a = k % 2, in_place = k >= 4;
                double s = scales[k / 2 % 3];
                float bound = INFINITY;
                bufs_t t;
                char *sa, *sb;
                /* avg's bound on the narrow floats over 2 + k ranks */
                if (k >= 2 && narrow(d))
                    CHECK(sc_avg_bound(d, 2 + k, &bound), "no memory");
                CHECK(bufs_alloc(&t, d, count, k % 2, 1300 + di * 10 + oi) == 0, "no memory");
                sa = malloc(count * n);
                sb = malloc(count * n);
                CHECK(sa && sb, "no memory");
                if (scale_a)
                    sc_scale_local(d, sa, t.a, count, s, bound);
                else
                    memcpy(sa, t.a, count * n);
                sc_scale_local(d, sb, t.b, count, s, bound);
                sc_reduce_local(all_ops[oi], d, sa, sb, t.expected, count);
                if (in_place) {
                    memcpy(t.out, t.a, count * n);
                    sc_reduce_local_scaled(all_ops[oi], d, t.out, scale_a, t.b, t.out, count, s,
                                           bound);
                } else {
                    sc_reduce_local_scaled(all_ops[oi], d, t.a, scale_a, t.b, t.out, count, s,
                                           bound);
                }
                int bad = memcmp(t.out, t.expected, count * n) != 0;
                free(sa);
                free(sb);
                bufs_free(&t);
                CHECK(!bad, "%s %s scale %g bound %g, first input %s%s: differs from scaling, "
                      "then reducing", dtype_str(d), op_str(all_ops[oi]), s, bound,
                      scale_a ? "scaled" : "as is", in_place ? ", in place" : "");
            }
        }
    }
    return 0;
}

/* A narrow float's code as a double, and a value of the type as its code (exact). */
static double decode_any(sc_dtype_t d, uint16_t c)
{
    uint32_t u;
    float f;

    switch (d) {
    case SC_FLOAT16: return ref_half_to_double(c);
    case SC_BFLOAT16: return ref_bf16_to_double(c);
    case SC_FLOAT8_E4M3: u = sc_fp8_e4m3_to_f32((uint8_t)c); break;
    default: u = sc_fp8_e5m2_to_f32((uint8_t)c); break;
    }
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t encode_any(sc_dtype_t d, float x)
{
    uint32_t u;

    memcpy(&u, &x, 4);
    switch (d) {
    case SC_FLOAT16: return sc_float_to_half(x);
    case SC_BFLOAT16: return sc_float_to_bfloat16(x);
    case SC_FLOAT8_E4M3: return sc_fp8_e4m3_from_f32(u);
    default: return sc_fp8_e5m2_from_f32(u);
    }
}

/* avg's bound over p ranks (sc_avg_bound) keeps every sum of p terms within it finite,
 * rounded at each step by the library's sum in any grouping (the ring's chain, recursive
 * doubling's pairs, and all others: each grouping's largest sum is that of p copies of
 * the bound, m[k] below), for p from 2 to 64; it is no larger than the largest value / p.
 * Scaling with it keeps the bits of every product at most the bound, brings the larger
 * ones to it with their sign, and keeps Inf and NaN. */
static int test_avg_bound_keeps_every_sum_finite(void)
{
    static const sc_dtype_t ds[] = {SC_FLOAT16, SC_BFLOAT16, SC_FLOAT8_E4M3, SC_FLOAT8_E5M2};
    static const double maxes[] = {65504.0, 0x1.fep127, 448.0, 57344.0};
    uint8_t m[65][2], *in = malloc(2 * 65536), *plain = malloc(2 * 65536);
    uint8_t *bounded = malloc(2 * 65536);

    CHECK(in && plain && bounded, "no memory");
    for (size_t di = 0; di < NELEM(ds); di++) {
        sc_dtype_t d = ds[di];
        size_t es = sc_dtype_size(d), ncodes = es == 1 ? 256 : 65536;
        for (int p = 2; p <= 64; p++) {
            float t;
            CHECK(sc_avg_bound(d, p, &t), "no memory");
            CHECK((double)t * p <= maxes[di], "%s over %d ranks: bound %g above max / p",
                  dtype_str(d), p, t);
            for (size_t c = 0; c < ncodes; c++)
                memcpy(in + c * es, &(uint16_t){(uint16_t)c}, es);
            sc_scale_local(d, plain, in, ncodes, 1.0 / p, INFINITY);
            sc_scale_local(d, bounded, in, ncodes, 1.0 / p, t);
            for (size_t c = 0; c < ncodes; c++) {
                uint16_t u = 0, b = 0;
                double x;
                memcpy(&u, plain + c * es, es);
                memcpy(&b, bounded + c * es, es);
                x = decode_any(d, u);
                if (!isfinite(x) || fabs(x) <= t)
                    CHECK(u == b || (isnan(x) && isnan(decode_any(d, b))),
                          "%s code 0x%zx over %d ranks: bits changed below the bound",
                          dtype_str(d), c, p);
                else
                    CHECK(decode_any(d, b) == (x < 0 ? -t : t), "%s code 0x%zx over %d "
                          "ranks: %g not bound to %g", dtype_str(d), c, p, x, t);
            }
            memcpy(m[1], &(uint16_t){encode_any(d, t)}, es);
            for (int k = 2; k <= p; k++) {
                memset(m[k], 0, sizeof(m[k]));
                for (int i = 1; i <= k / 2; i++) {
                    uint8_t v[2] = {0, 0};
                    uint16_t vc = 0, mc = 0;
                    sc_reduce_local(SC_SUM, d, m[i], m[k - i], v, 1);
                    memcpy(&vc, v, es);
                    memcpy(&mc, m[k], es);
                    CHECK(isfinite(decode_any(d, vc)), "%s over %d ranks: %d terms of the "
                          "bound %g grouped %d + %d sum to %g", dtype_str(d), p, k, t, i,
                          k - i, decode_any(d, vc));
                    if (decode_any(d, vc) > decode_any(d, mc))
                        memcpy(m[k], v, es);
                }
            }
        }
    }
    free(in);
    free(plain);
    free(bounded);
    return 0;
}

/* x scaled by s, and bound to t as avg bounds it (sc_spec_bound's rule), from the
 * unbounded scaling: a finite product past t is t with its sign, the rest keep their
 * bits. Independent of the blocks and the threshold the bounded kernels use. */
static void scale_bound_ref(sc_dtype_t d, uint16_t *dst, const uint16_t *src, size_t count,
                            double s, float t)
{
    sc_scale_local(d, dst, src, count, s, INFINITY);
    for (size_t i = 0; i < count; i++) {
        double x = decode_any(d, dst[i]);
        if (isfinite(x) && fabs(x) > t)
            dst[i] = encode_any(d, x < 0 ? -t : t);
    }
}

/* The bounded kernels check their inputs a block at a time and bound only blocks with
 * an input at or past the threshold (sc_scale_bound_code): one such input, of every
 * code from three binades below the largest up to NaN, either sign, alone among
 * ordinary values at a position that moves through the blocks (and into the tail), is
 * bound in sc_scale_local, the fused sum (first input scaled or not) and the streamed
 * sum as the unbounded scaling bound afterwards is; its neighbours keep their bits. */
static int test_bound_applies_to_one_large_value_among_ordinary_ones(void)
{
    static const sc_dtype_t ds[] = {SC_FLOAT16, SC_BFLOAT16};
    static const int ps[] = {2, 3, 5, 6, 10, 64};
    enum { N = 1100 };
    uint16_t *a = malloc(2 * N), *b = malloc(2 * N), *ra = malloc(2 * N), *rb = malloc(2 * N);
    uint16_t *exp = malloc(2 * N), *out = malloc(2 * N);

    CHECK(a && b && ra && rb && exp && out, "no memory");
    for (size_t di = 0; di < NELEM(ds); di++) {
        sc_dtype_t d = ds[di];
        uint16_t one = d == SC_FLOAT16 ? 0x3c00 : 0x3f80, top = d == SC_FLOAT16 ? 0x7bff : 0x7f7f;
        uint16_t from = (uint16_t)(top - (d == SC_FLOAT16 ? 3 * 0x400 : 3 * 0x80));
        for (size_t pi = 0; pi < NELEM(ps); pi++) {
            double s = 1.0 / ps[pi];
            float t;
            CHECK(sc_avg_bound(d, ps[pi], &t), "no memory");
            for (uint32_t c = from; c <= 0x7fff; c++) {
                for (int sign = 0; sign < 2; sign++) {
                    size_t pos = (c * 7u + (unsigned)sign * 131u) % N;
                    for (size_t i = 0; i < N; i++)
                        a[i] = b[i] = (uint16_t)(one + i % 97);
                    a[pos] = (uint16_t)(c | (sign ? 0x8000u : 0));
                    b[(pos + 517) % N] = (uint16_t)(c | (sign ? 0 : 0x8000u));
                    scale_bound_ref(d, ra, a, N, s, t);
                    scale_bound_ref(d, rb, b, N, s, t);
                    sc_scale_local(d, out, a, N, s, t);
                    CHECK(memcmp(out, ra, 2 * N) == 0, "%s code 0x%x%s over %d ranks: "
                          "sc_scale_local differs from the bound product", dtype_str(d),
                          (unsigned)c, sign ? " negated" : "", ps[pi]);
                    for (int scale_a = 0; scale_a < 2; scale_a++) {
                        sc_reduce_local(SC_SUM, d, scale_a ? ra : a, rb, exp, N);
                        sc_reduce_local_scaled(SC_SUM, d, a, scale_a, b, out, N, s, t);
                        CHECK(memcmp(out, exp, 2 * N) == 0, "%s code 0x%x%s over %d ranks, "
                              "first input %s: the scaled sum differs from the bound one",
                              dtype_str(d), (unsigned)c, sign ? " negated" : "", ps[pi],
                              scale_a ? "scaled" : "as is");
                        sc_reduce_local_streamed(SC_SUM, d, a, scale_a, b, out, NULL, N, s, t);
                        CHECK(memcmp(out, exp, 2 * N) == 0, "%s code 0x%x%s over %d ranks, "
                              "first input %s: the streamed sum differs from the bound one",
                              dtype_str(d), (unsigned)c, sign ? " negated" : "", ps[pi],
                              scale_a ? "scaled" : "as is");
                    }
                }
            }
        }
    }
    free(a);
    free(b);
    free(ra);
    free(rb);
    free(exp);
    free(out);
    return 0;
}

/* sc_reduce_local_streamed (non-temporal stores through a block buffer) writes the
 * bits sc_reduce_local and sc_reduce_local_scaled write, into one destination or two,
 * for every dtype and op, at destinations off a 16-byte boundary by 0 to 15 bytes and
 * counts around the 8 KiB block; nothing before or after a destination is written. */
static int test_streamed_reduce_equals_plain_reduce(void)
{
    static const size_t counts[] = {1, 7, 4096, 8192 + 3, 20011};
    enum { GUARD = 64 };

    for (size_t di = 0; di < NELEM(all_dtypes); di++) {
        for (size_t oi = 0; oi < NELEM(all_ops); oi++) {
            sc_dtype_t d = all_dtypes[di];
            size_t n = dtype_bytes(d);
            for (int k = 0; k < 10; k++) {
                size_t count = counts[k % NELEM(counts)], bytes, skew = (size_t)(k * 5) % 16;
                double s = k % 3 == 0 ? 0.5 : 0.0;
                float bound = INFINITY;
                int scale_a = k % 2, two = k >= 5, bad;
                uint8_t *o1, *o2;
                bufs_t t;

                if (k == 6 && narrow(d))
                    CHECK(sc_avg_bound(d, 2, &bound), "no memory");
                CHECK(bufs_alloc(&t, d, count, k % 2, 1700 + di * 10 + oi) == 0, "no memory");
                bytes = count * n;
                o1 = malloc(bytes + 2 * GUARD + 16);
                o2 = malloc(bytes + 2 * GUARD + 16);
                CHECK(o1 && o2, "no memory");
                memset(o1, 0x5a, bytes + 2 * GUARD + 16);
                memset(o2, 0x5a, bytes + 2 * GUARD + 16);
                if (s != 0.0)
                    sc_reduce_local_scaled(all_ops[oi], d, t.a, scale_a, t.b, t.expected, count,
                                           s, bound);
                else
                    sc_reduce_local(all_ops[oi], d, t.a, t.b, t.expected, count);
                sc_reduce_local_streamed(all_ops[oi], d, t.a, scale_a, t.b, o1 + GUARD + skew,
                                         two ? o2 + GUARD + skew : NULL, count, s, bound);
                bad = memcmp(o1 + GUARD + skew, t.expected, bytes) != 0 ||
                      (two && memcmp(o2 + GUARD + skew, t.expected, bytes) != 0);
                for (size_t i = 0; i < GUARD + skew && !bad; i++)
                    bad = o1[i] != 0x5a || o2[i] != 0x5a;
                for (size_t i = GUARD + skew + bytes; i < bytes + 2 * GUARD + 16 && !bad; i++)
                    bad = o1[i] != 0x5a || o2[i] != 0x5a;
                if (!two)
                    for (size_t i = 0; i < bytes + 2 * GUARD + 16 && !bad; i++)
                        bad = o2[i] != 0x5a;
                free(o1);
                free(o2);
                bufs_free(&t);
                CHECK(!bad, "%s %s, %zu elements, destination %zu bytes off 16, %s%s: "
                      "differs from the plain reduction or writes outside it", dtype_str(d),
                      op_str(all_ops[oi]), count, skew, two ? "two destinations" : "one",
                      s != 0.0 ? ", scaled" : "");
            }
        }
    }
    return 0;
}

static int test_avg_reduces_as_sum(void)
{
    size_t count = 1001;

    for (size_t di = 0; di < NELEM(all_dtypes); di++) {
        sc_dtype_t d = all_dtypes[di];
        bufs_t t;
        CHECK(bufs_alloc(&t, d, count, 0, 900 + di) == 0, "no memory");
        sc_reduce_local(SC_SUM, d, t.a, t.b, t.expected, count);
        sc_reduce_local(SC_AVG, d, t.a, t.b, t.out, count);
        int bad = check_elems(d, SC_AVG, t.a, t.b, t.out, t.expected, count, "avg vs sum");
        bufs_free(&t);
        if (bad)
            return 1;
    }
    return 0;
}

/* ---- edge cases, written out by hand -------------------------------------------
 * Each case list is tiled to 67 elements so that vector bodies and tails both see it. */

#define TILE 67

typedef struct {
    uint64_t a, b, out; /* bit patterns in the dtype's width */
} case_t;

static int run_cases(sc_op_t op, sc_dtype_t d, const case_t *cases, size_t ncases)
{
    size_t n = dtype_bytes(d);
    unsigned char a[TILE * 8], b[TILE * 8], out[TILE * 8], expected[TILE * 8];

    for (size_t i = 0; i < TILE; i++) {
        const case_t *c = &cases[i % ncases];
        memcpy(a + i * n, &c->a, n); /* little endian: the low bytes */
        memcpy(b + i * n, &c->b, n);
        memcpy(expected + i * n, &c->out, n);
    }
    sc_reduce_local(op, d, a, b, out, TILE);
    return check_elems(d, op, a, b, out, expected, TILE, "case");
}

/* Bit patterns of a few values in each float format, written out. */
typedef struct {
    sc_dtype_t dtype;
    uint64_t pzero, nzero, one, two, mtwo, pinf, ninf, qnan, nqnan, snan, nan_payload, canon;
} float_consts_t;

static const float_consts_t float_consts[] = {
    {SC_FLOAT32, 0, 0x80000000, 0x3f800000, 0x40000000, 0xc0000000, 0x7f800000, 0xff800000,
     0x7fc00000, 0xffc00000, 0x7f800001, 0x7fd23456, 0x7fc00000},
    {SC_FLOAT64, 0, UINT64_C(0x8000000000000000), UINT64_C(0x3ff0000000000000),
     UINT64_C(0x4000000000000000), UINT64_C(0xc000000000000000), UINT64_C(0x7ff0000000000000),
     UINT64_C(0xfff0000000000000), UINT64_C(0x7ff8000000000000), UINT64_C(0xfff8000000000000),
     UINT64_C(0x7ff0000000000001), UINT64_C(0x7ff8123456789abc), UINT64_C(0x7ff8000000000000)},
    {SC_FLOAT16, 0, 0x8000, 0x3c00, 0x4000, 0xc000, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01,
     0x7e5a, 0x7e00},
    {SC_BFLOAT16, 0, 0x8000, 0x3f80, 0x4000, 0xc000, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81,
     0x7fd2, 0x7fc0},
};

/* Whatever NaN comes in (sign, payload, signaling) or is made (Inf - Inf, 0 * Inf),
 * the result is the canonical quiet NaN, from either operand order. */
static int test_float_nan_results_are_the_canonical_quiet_nan(void)
{
    static const sc_op_t ops[] = {SC_SUM, SC_PROD, SC_MIN, SC_MAX};

    for (size_t k = 0; k < NELEM(float_consts); k++) {
        const float_consts_t *f = &float_consts[k];
        const uint64_t nans[] = {f->qnan, f->nqnan, f->snan, f->nan_payload};
        const uint64_t others[] = {f->one, f->mtwo, f->pzero, f->nzero, f->pinf, f->ninf};
        case_t cases[64];
        size_t n = 0;
        for (size_t i = 0; i < NELEM(nans); i++) {
            for (size_t j = 0; j < NELEM(nans); j++)
                cases[n++] = (case_t){nans[i], nans[j], f->canon};
            cases[n++] = (case_t){nans[i], others[i], f->canon};
            cases[n++] = (case_t){others[i + 1], nans[i], f->canon};
        }
        for (size_t oi = 0; oi < NELEM(ops); oi++)
            if (run_cases(ops[oi], f->dtype, cases, n))
                return 1;
        case_t made_sum[] = {{f->pinf, f->ninf, f->canon}, {f->ninf, f->pinf, f->canon}};
        case_t made_prod[] = {{f->pzero, f->pinf, f->canon}, {f->ninf, f->nzero, f->canon}};
        if (run_cases(SC_SUM, f->dtype, made_sum, 2) || run_cases(SC_PROD, f->dtype, made_prod, 2))
            return 1;
    }
    return 0;
}

/* The documented rule: min(-0, +0) = -0 and max(-0, +0) = +0, in either order. */
static int test_float_min_max_order_signed_zeros(void)
{
    for (size_t k = 0; k < NELEM(float_consts); k++) {
        const float_consts_t *f = &float_consts[k];
        case_t min_cases[] = {{f->nzero, f->pzero, f->nzero}, {f->pzero, f->nzero, f->nzero},
                              {f->nzero, f->nzero, f->nzero}, {f->pzero, f->pzero, f->pzero}};
        case_t max_cases[] = {{f->nzero, f->pzero, f->pzero}, {f->pzero, f->nzero, f->pzero},
                              {f->nzero, f->nzero, f->nzero}, {f->pzero, f->pzero, f->pzero}};
        if (run_cases(SC_MIN, f->dtype, min_cases, 4) || run_cases(SC_MAX, f->dtype, max_cases, 4))
            return 1;
    }
    return 0;
}

static int test_float_min_max_order_infinities_and_negatives(void)
{
    for (size_t k = 0; k < NELEM(float_consts); k++) {
        const float_consts_t *f = &float_consts[k];
        case_t min_cases[] = {{f->ninf, f->mtwo, f->ninf}, {f->pinf, f->two, f->two},
                              {f->mtwo, f->nzero, f->mtwo}, {f->one, f->two, f->one}};
        case_t max_cases[] = {{f->ninf, f->mtwo, f->mtwo}, {f->pinf, f->two, f->pinf},
                              {f->mtwo, f->nzero, f->nzero}, {f->one, f->two, f->two}};
        if (run_cases(SC_MIN, f->dtype, min_cases, 4) || run_cases(SC_MAX, f->dtype, max_cases, 4))
            return 1;
    }
    return 0;
}

static int test_float_sum_and_prod_keep_signs_of_zeros_and_infinities(void)
{
    for (size_t k = 0; k < NELEM(float_consts); k++) {
        const float_consts_t *f = &float_consts[k];
        case_t sum_cases[] = {{f->nzero, f->nzero, f->nzero}, {f->nzero, f->pzero, f->pzero},
                              {f->pinf, f->mtwo, f->pinf},    {f->ninf, f->ninf, f->ninf},
                              {f->one, f->one, f->two}};
        case_t prod_cases[] = {{f->pzero, f->mtwo, f->nzero}, {f->nzero, f->nzero, f->pzero},
                               {f->pinf, f->mtwo, f->ninf},   {f->ninf, f->ninf, f->pinf},
                               {f->one, f->mtwo, f->mtwo}};
        if (run_cases(SC_SUM, f->dtype, sum_cases, 5) || run_cases(SC_PROD, f->dtype, prod_cases, 5))
            return 1;
    }
    return 0;
}

static int test_half_sum_and_prod_round_once_to_nearest_even(void)
{
    static const case_t sums[] = {
        {0x6800, 0x3c00, 0x6800}, /* 2048 + 1: tie, stays on even 2048 */
        {0x6801, 0x3c00, 0x6802}, /* 2050 + 1: tie, goes up to even 2052 */
        {0x3c00, 0x1000, 0x3c00}, /* 1 + 2^-11: tie */
        {0x3c01, 0x1000, 0x3c02}, /* (1 + 2^-10) + 2^-11: tie, up to even */
        {0x3c00, 0x1001, 0x3c01}, /* 1 + 2^-11 + 2^-21: just above the tie */
        {0x3c00, 0x9001, 0x3bff}, /* 1 - (2^-11 + 2^-21): just below 1 - half an ulp */
    };
    static const case_t prods[] = {
        {0x3c01, 0x3c01, 0x3c02}, /* (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 */
        {0x3e00, 0x3e00, 0x4080}, /* 1.5 * 1.5 = 2.25 */
    };
    return run_cases(SC_SUM, SC_FLOAT16, sums, NELEM(sums)) ||
           run_cases(SC_PROD, SC_FLOAT16, prods, NELEM(prods));
}

static int test_half_sum_and_prod_overflow_to_inf(void)
{
    static const case_t sums[] = {
        {0x7bff, 0x4800, 0x7bff}, /* 65504 + 8 = 65512: below the midpoint 65520 */
        {0x7bff, 0x4c00, 0x7c00}, /* 65504 + 16 = 65520: tie, even is Inf */
        {0xfbff, 0xcc00, 0xfc00},
    };
    static const case_t prods[] = {{0x5c00, 0x5c00, 0x7c00}, /* 256 * 256 */
                                   {0x5c00, 0xdc00, 0xfc00}};
    return run_cases(SC_SUM, SC_FLOAT16, sums, NELEM(sums)) ||
           run_cases(SC_PROD, SC_FLOAT16, prods, NELEM(prods));
}

static int test_half_subnormal_results_are_exact_or_round_to_even(void)
{
    static const case_t sums[] = {
        {0x0001, 0x0001, 0x0002}, {0x03ff, 0x0001, 0x0400}, /* into the normals */
        {0x8001, 0x0001, 0x0000}, /* x + -x is +0 */
    };
    static const case_t prods[] = {
        {0x0200, 0x4000, 0x0400}, /* 2^-15 * 2 */
        {0x0001, 0x3800, 0x0000}, /* 2^-24 * 0.5: tie, even is zero */
        {0x0003, 0x3800, 0x0002}, /* 3 * 2^-24 * 0.5: tie between 1 and 2 ulps */
        {0x8001, 0x3800, 0x8000}, /* underflow keeps the sign */
    };
    return run_cases(SC_SUM, SC_FLOAT16, sums, NELEM(sums)) ||
           run_cases(SC_PROD, SC_FLOAT16, prods, NELEM(prods));
}

static int test_bfloat16_sum_rounds_once_to_nearest_even(void)
{
    static const case_t sums[] = {
        {0x4380, 0x3f80, 0x4380}, /* 256 + 1: tie, stays on even 256 */
        {0x4381, 0x3f80, 0x4382}, /* 258 + 1: tie, up to even 260 */
        {0x4380, 0x3fc0, 0x4381}, /* 256 + 1.5 = 257.5: up to 258 */
        {0x0001, 0x0001, 0x0002}, {0x007f, 0x0001, 0x0080}, /* subnormals are exact */
    };
    return run_cases(SC_SUM, SC_BFLOAT16, sums, NELEM(sums));
}

static int test_bfloat16_sum_overflows_to_inf(void)
{
    static const case_t sums[] = {
        {0x7f7f, 0x7a80, 0x7f7f}, /* max + 2^118: below half an ulp (2^119) */
        {0x7f7f, 0x7b00, 0x7f80}, /* max + 2^119: tie, even is Inf */
        {0xff7f, 0xff7f, 0xff80},
    };
    return run_cases(SC_SUM, SC_BFLOAT16, sums, NELEM(sums));
}

static int test_integer_sum_wraps_around(void)
{
    static const case_t i8[] = {{127, 1, 0x80}, {0x80, 0xff, 127}, {0xff, 0xff, 0xfe}};
    static const case_t u8[] = {{255, 1, 0}, {200, 100, 44}};
    static const case_t i32[] = {{0x7fffffff, 1, 0x80000000}, {0x80000000, 0xffffffff, 0x7fffffff}};
    static const case_t i64[] = {{UINT64_C(0x7fffffffffffffff), 1, UINT64_C(0x8000000000000000)},
                                 {UINT64_C(0x8000000000000000), UINT64_C(0xffffffffffffffff),
                                  UINT64_C(0x7fffffffffffffff)}};
    return run_cases(SC_SUM, SC_INT8, i8, NELEM(i8)) ||
           run_cases(SC_SUM, SC_UINT8, u8, NELEM(u8)) ||
           run_cases(SC_SUM, SC_INT32, i32, NELEM(i32)) ||
           run_cases(SC_SUM, SC_INT64, i64, NELEM(i64));
}

static int test_integer_prod_wraps_around(void)
{
    static const case_t i8[] = {{16, 16, 0}, {127, 2, 0xfe}, {0x80, 0xff, 0x80}, {0xfd, 3, 0xf7}};
    static const case_t u8[] = {{16, 16, 0}, {200, 2, 144}, {255, 255, 1}};
    static const case_t i32[] = {{0x10000, 0x10000, 0}, {0x80000000, 0xffffffff, 0x80000000},
                                 {0x7fffffff, 2, 0xfffffffe}};
    static const case_t i64[] = {{UINT64_C(0x100000000), UINT64_C(0x100000000), 0},
                                 {UINT64_C(0x8000000000000000), UINT64_C(0xffffffffffffffff),
                                  UINT64_C(0x8000000000000000)},
                                 {UINT64_C(0x7fffffffffffffff), 3, UINT64_C(0x7ffffffffffffffd)}};
    return run_cases(SC_PROD, SC_INT8, i8, NELEM(i8)) ||
           run_cases(SC_PROD, SC_UINT8, u8, NELEM(u8)) ||
           run_cases(SC_PROD, SC_INT32, i32, NELEM(i32)) ||
           run_cases(SC_PROD, SC_INT64, i64, NELEM(i64));
}

/* The same byte 0xc8 is -56 as int8 and 200 as uint8. */
static int test_integer_min_max_respect_signedness(void)
{
    static const case_t i8_min[] = {{0xc8, 100, 0xc8}, {0x80, 0x7f, 0x80}};
    static const case_t u8_min[] = {{0xc8, 100, 100}, {0xff, 0, 0}};
    static const case_t i32_max[] = {{0xffffffff, 1, 1}, {0x80000000, 0x7fffffff, 0x7fffffff}};
    static const case_t i64_max[] = {{UINT64_C(0x8000000000000000), 0, 0},
                                     {UINT64_C(0xffffffffffffffff), UINT64_C(0xfffffffffffffffe),
                                      UINT64_C(0xffffffffffffffff)}};
    return run_cases(SC_MIN, SC_INT8, i8_min, NELEM(i8_min)) ||
           run_cases(SC_MIN, SC_UINT8, u8_min, NELEM(u8_min)) ||
           run_cases(SC_MAX, SC_INT32, i32_max, NELEM(i32_max)) ||
           run_cases(SC_MAX, SC_INT64, i64_max, NELEM(i64_max));
}

/* ---- finishing an average ---------------------------------------------------- */

static const int avg_ranks[] = {1, 2, 3, 5, 7, 10, 100};

/* x / n, not x * (1 / n): the data must contain values where the two differ, or
 * the test could not tell them apart. */
static int test_finish_avg_divides_float32_like_division(void)
{
    size_t count = 1003;

    for (size_t r = 0; r < NELEM(avg_ranks); r++) {
        int n = avg_ranks[r], differ = 0;
        bufs_t t;
        CHECK(bufs_alloc(&t, SC_FLOAT32, count, r % 2, 31 + r) == 0, "no memory");
        float *in = t.a, *out = t.out, *expected = t.expected;
        for (size_t i = 0; i < count; i++) {
            expected[i] = in[i] / (float)n;
            differ += f32_bits(expected[i]) != f32_bits(in[i] * (1.0f / (float)n));
        }
        memcpy(out, in, count * 4);
        sc_reduce_finish_avg(SC_FLOAT32, out, count, n);
        int bad = check_elems(SC_FLOAT32, SC_AVG, in, in, out, expected, count, "finish");
        bufs_free(&t);
        if (bad)
            return 1;
        CHECK(n == 1 || n == 2 || n == 10 || differ > 0, "no discriminating value for n=%d", n);
    }
    return 0;
}

static int test_finish_avg_divides_float64_like_division(void)
{
    size_t count = 1003;

    for (size_t r = 0; r < NELEM(avg_ranks); r++) {
        int n = avg_ranks[r], differ = 0;
        bufs_t t;
        CHECK(bufs_alloc(&t, SC_FLOAT64, count, r % 2, 41 + r) == 0, "no memory");
        double *in = t.a, *out = t.out, *expected = t.expected;
        for (size_t i = 0; i < count; i++) {
            expected[i] = in[i] / (double)n;
            differ += f64_bits(expected[i]) != f64_bits(in[i] * (1.0 / (double)n));
        }
        memcpy(out, in, count * 8);
        sc_reduce_finish_avg(SC_FLOAT64, out, count, n);
        int bad = check_elems(SC_FLOAT64, SC_AVG, in, in, out, expected, count, "finish");
        bufs_free(&t);
        if (bad)
            return 1;
        CHECK(n == 1 || n == 2 || n == 10 || differ > 0, "no discriminating value for n=%d", n);
    }
    return 0;
}

/* ---- runner ---------------------------------------------------------------------- */

static const sc_test_t tests[] = {
    SC_TEST(half_to_float_is_exact_for_every_half),
    SC_TEST(half_to_float_keeps_nan_quiet_sign_and_payload),
    SC_TEST(float_to_half_roundtrips_every_half),
    SC_TEST(float_to_half_rounds_midpoints_to_even),
    SC_TEST(float_to_half_matches_reference_on_random_floats),
    SC_TEST(float_to_half_overflows_to_inf),
    SC_TEST(float_to_half_rounds_subnormals_and_underflows_to_signed_zero),
    SC_TEST(float_to_half_keeps_nan_quiet_with_sign),
    SC_TEST(bfloat16_to_float_is_exact_for_every_bfloat16),
    SC_TEST(bfloat16_to_float_keeps_nan_quiet_sign_and_payload),
    SC_TEST(float_to_bfloat16_roundtrips_every_bfloat16),
    SC_TEST(float_to_bfloat16_rounds_midpoints_to_even),
    SC_TEST(float_to_bfloat16_matches_reference_on_random_floats),
    SC_TEST(float_to_bfloat16_overflows_to_inf),
    SC_TEST(float_to_bfloat16_keeps_nan_a_quiet_nan),
    SC_TEST(reduce_matches_reference_for_every_dtype_op_and_count),
    SC_TEST(reduce_of_zero_elements_writes_nothing),
    SC_TEST(reduce_into_a_matches_out_of_place),
    SC_TEST(reduce_into_b_matches_out_of_place),
    SC_TEST(reduce_is_commutative_bitwise),
    SC_TEST(avg_reduces_as_sum),
    SC_TEST(scaled_reduce_equals_scale_then_reduce),
    SC_TEST(streamed_reduce_equals_plain_reduce),
    SC_TEST(float_nan_results_are_the_canonical_quiet_nan),
    SC_TEST(float_min_max_order_signed_zeros),
    SC_TEST(float_min_max_order_infinities_and_negatives),
    SC_TEST(float_sum_and_prod_keep_signs_of_zeros_and_infinities),
    SC_TEST(half_sum_and_prod_round_once_to_nearest_even),
    SC_TEST(half_sum_and_prod_overflow_to_inf),
    SC_TEST(half_subnormal_results_are_exact_or_round_to_even),
    SC_TEST(bfloat16_sum_rounds_once_to_nearest_even),
    SC_TEST(bfloat16_sum_overflows_to_inf),
    SC_TEST(avg_bound_keeps_every_sum_finite),
    SC_TEST(bound_applies_to_one_large_value_among_ordinary_ones),
    SC_TEST(integer_sum_wraps_around),
    SC_TEST(integer_prod_wraps_around),
    SC_TEST(integer_min_max_respect_signedness),
    SC_TEST(finish_avg_divides_float32_like_division),
    SC_TEST(finish_avg_divides_float64_like_division),
};

/* Runs every test, or only those whose name contains argv[1]. */
int main(int argc, char **argv)
{
    return sc_run_tests(tests, NELEM(tests), argc > 1 ? argv[1] : NULL);
}
