/* Element-wise reduction kernels on host memory (sum, prod, min, max, avg over the
 * eight dtypes) and the float16/bfloat16 scalar conversions they are defined by. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/bound_scan.h"
#include "collectives/cast_kernels.h"
#include "collectives/cast_spec.h"
#include "collectives/fp8_spec.h"
#include "collectives/reduce_kernels.h"
#include "core/clones.h"
#include "core/dtype.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* float16 and bfloat16 conversions are written with intrinsics, dispatched on
 * __builtin_cpu_supports. */
#define SC_HAVE_X86_PATHS 1
#define SC_F16C __attribute__((target("avx,f16c")))
#define SC_AVX2 __attribute__((target("avx2")))
#define SC_F16C_AVX2 __attribute__((target("avx2,f16c")))
#endif

/* Canonical quiet NaNs: every NaN a reduction produces is replaced by these. x86
 * keeps the first operand's NaN when both are NaN (other ISAs choose differently),
 * which would make a op b and b op a, or two machines, differ bitwise. */
#define SC_F32_QNAN 0x7fc00000u
#define SC_F64_QNAN UINT64_C(0x7ff8000000000000)
#define SC_F16_QNAN 0x7e00u
#define SC_BF16_QNAN 0x7fc0u

typedef void (*sc_kernel_fn)(const void *a, const void *b, void *out, size_t count);

static inline float sc_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static inline uint32_t sc_f32_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline double sc_f64_from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

/* ---- scalar conversions: the spec in cast_spec.h ------------------------------ */

float sc_half_to_float(uint16_t h)
{
    return sc_f32_from_bits(sc_spec_f16_to_f32(h));
}

uint16_t sc_float_to_half(float f)
{
    return sc_spec_f32_to_f16(sc_f32_to_bits(f));
}

float sc_bfloat16_to_float(uint16_t b)
{
    return sc_f32_from_bits(sc_spec_bf16_to_f32(b));
}

uint16_t sc_float_to_bfloat16(float f)
{
    return sc_spec_f32_to_bf16(sc_f32_to_bits(f));
}

/* ---- float32 / float64 ------------------------------------------------------- */

SC_CLONES static void sc_f32_sum(const void *a, const void *b, void *out, size_t count)
{
    const float *x = a, *y = b;
    float *z = out;

    for (size_t i = 0; i < count; i++) {
        float r = x[i] + y[i];
        z[i] = r != r ? sc_f32_from_bits(SC_F32_QNAN) : r;
    }
}

SC_CLONES static void sc_f32_prod(const void *a, const void *b, void *out, size_t count)
{
    const float *x = a, *y = b;
    float *z = out;

    for (size_t i = 0; i < count; i++) {
        float r = x[i] * y[i];
        z[i] = r != r ? sc_f32_from_bits(SC_F32_QNAN) : r;
    }
}

SC_CLONES static void sc_f64_sum(const void *a, const void *b, void *out, size_t count)
{
    const double *x = a, *y = b;
    double *z = out;

    for (size_t i = 0; i < count; i++) {
        double r = x[i] + y[i];
        z[i] = r != r ? sc_f64_from_bits(SC_F64_QNAN) : r;
    }
}

SC_CLONES static void sc_f64_prod(const void *a, const void *b, void *out, size_t count)
{
    const double *x = a, *y = b;
    double *z = out;

    for (size_t i = 0; i < count; i++) {
        double r = x[i] * y[i];
        z[i] = r != r ? sc_f64_from_bits(SC_F64_QNAN) : r;
    }
}

/* ---- float min/max on the bit patterns, for all four float formats ------------
 * key = bits ^ (sign ? 0x7f..f : 0) maps a sign-magnitude float to a two's
 * complement integer in the same order, with -0 just below +0. So min(-0, +0) is -0
 * and max(-0, +0) is +0 whatever the operand order, and the result is always one of
 * the operands, exact, without converting fp16/bf16. A NaN operand gives the
 * canonical quiet NaN. Integer compares vectorize on every ISA level. */
#define SC_DEFINE_FLOAT_MINMAX(NAME, UT, ST, BITS, INF, QNAN)                           \
    static inline ST NAME##_key(UT u)                                                   \
    {                                                                                   \
        ST s = (ST)u;                                                                   \
        return (ST)(s ^ (ST)((UT)(s >> (BITS - 1)) >> 1));                              \
    }                                                                                   \
    static inline int NAME##_isnan(UT u)                                                \
    {                                                                                   \
        return (ST)(u & (UT)~((UT)1 << (BITS - 1))) > (ST)(INF);                        \
    }                                                                                   \
    SC_CLONES static void NAME##_min(const void *a, const void *b, void *out,           \
                                     size_t count)                                      \
    {                                                                                   \
        const UT *x = a, *y = b;                                                        \
        UT *z = out;                                                                    \
        for (size_t i = 0; i < count; i++) {                                            \
            UT u = x[i], v = y[i];                                                      \
            UT m = NAME##_key(u) < NAME##_key(v) ? u : v;                               \
            z[i] = (NAME##_isnan(u) | NAME##_isnan(v)) ? (UT)(QNAN) : m;                \
        }                                                                               \
    }                                                                                   \
    SC_CLONES static void NAME##_max(const void *a, const void *b, void *out,           \
                                     size_t count)                                      \
    {                                                                                   \
        const UT *x = a, *y = b;                                                        \
        UT *z = out;                                                                    \
        for (size_t i = 0; i < count; i++) {                                            \
            UT u = x[i], v = y[i];                                                      \
            UT m = NAME##_key(u) > NAME##_key(v) ? u : v;                               \
            z[i] = (NAME##_isnan(u) | NAME##_isnan(v)) ? (UT)(QNAN) : m;                \
        }                                                                               \
    }

SC_DEFINE_FLOAT_MINMAX(sc_f32, uint32_t, int32_t, 32, 0x7f800000u, SC_F32_QNAN)
SC_DEFINE_FLOAT_MINMAX(sc_f64, uint64_t, int64_t, 64, UINT64_C(0x7ff0000000000000),
                       SC_F64_QNAN)
SC_DEFINE_FLOAT_MINMAX(sc_f16, uint16_t, int16_t, 16, 0x7c00u, SC_F16_QNAN)
SC_DEFINE_FLOAT_MINMAX(sc_bf16, uint16_t, int16_t, 16, 0x7f80u, SC_BF16_QNAN)

/* ---- float16 / bfloat16 sum and prod: computed in float32 and rounded once to
 * nearest even, which for these formats equals the correctly rounded result
 * (24 >= 2p + 2 bits). The plain C loops are the fallback and do the tails of the
 * x86 paths, which handle 8 (F16C) or 16 (AVX2) elements at a time. ------------- */

static inline uint16_t sc_f16_from_result(float r)
{
    return r != r ? (uint16_t)SC_F16_QNAN : sc_float_to_half(r);
}

/* A NaN result becomes the canonical NaN, selected in 32-bit lanes before the
 * narrowing so that a vectorized loop packs once. */
static inline uint16_t sc_bf16_from_result(float r)
{
    uint32_t u = r != r ? (uint32_t)SC_BF16_QNAN << 16 : sc_spec_bf16_round(sc_f32_to_bits(r));
    return (uint16_t)(u >> 16);
}

static void sc_f16_sum_c(const uint16_t *x, const uint16_t *y, uint16_t *z, size_t count)
{
    for (size_t i = 0; i < count; i++)
        z[i] = sc_f16_from_result(sc_half_to_float(x[i]) + sc_half_to_float(y[i]));
}

static void sc_f16_prod_c(const uint16_t *x, const uint16_t *y, uint16_t *z, size_t count)
{
    for (size_t i = 0; i < count; i++)
        z[i] = sc_f16_from_result(sc_half_to_float(x[i]) * sc_half_to_float(y[i]));
}

static void sc_bf16_sum_c(const uint16_t *x, const uint16_t *y, uint16_t *z, size_t count)
{
    for (size_t i = 0; i < count; i++)
        z[i] = sc_bf16_from_result(sc_f32_from_bits((uint32_t)x[i] << 16) +
                                   sc_f32_from_bits((uint32_t)y[i] << 16));
}

static void sc_bf16_prod_c(const uint16_t *x, const uint16_t *y, uint16_t *z, size_t count)
{
    for (size_t i = 0; i < count; i++)
        z[i] = sc_bf16_from_result(sc_f32_from_bits((uint32_t)x[i] << 16) *
                                   sc_f32_from_bits((uint32_t)y[i] << 16));
}

#ifdef SC_HAVE_X86_PATHS
static int sc_cpu_has_f16c(void)
{
    return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
}

static int sc_cpu_has_avx2(void)
{
    return __builtin_cpu_supports("avx2");
}

/* Masks rather than blendv: GCC 12 turns _mm256_blendv_ps into a generic select
 * that it can only expand with AVX2, and scalarizes it under plain AVX. */
SC_F16C static inline __m256 sc_f16c_canonical_nan(__m256 r)
{
    __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32((int)SC_F32_QNAN));
    __m256 isnan = _mm256_cmp_ps(r, r, _CMP_UNORD_Q);
    return _mm256_or_ps(_mm256_andnot_ps(isnan, r), _mm256_and_ps(isnan, qnan));
}

SC_F16C static inline __m256 sc_f16c_load(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* Immediate rounding mode: nearest even whatever MXCSR says. */
SC_F16C static inline void sc_f16c_store(uint16_t *p, __m256 r)
{
    _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
}

SC_F16C static void sc_f16_sum_f16c(const uint16_t *x, const uint16_t *y, uint16_t *z,
                                    size_t count)
{
    size_t i = 0;

    for (; i + 8 <= count; i += 8) {
        __m256 r = _mm256_add_ps(sc_f16c_load(x + i), sc_f16c_load(y + i));
        sc_f16c_store(z + i, sc_f16c_canonical_nan(r));
    }
    sc_f16_sum_c(x + i, y + i, z + i, count - i);
}

SC_F16C static void sc_f16_prod_f16c(const uint16_t *x, const uint16_t *y, uint16_t *z,
                                     size_t count)
{
    size_t i = 0;

    for (; i + 8 <= count; i += 8) {
        __m256 r = _mm256_mul_ps(sc_f16c_load(x + i), sc_f16c_load(y + i));
        sc_f16c_store(z + i, sc_f16c_canonical_nan(r));
    }
    sc_f16_prod_c(x + i, y + i, z + i, count - i);
}

/* 16 bfloat16 widened in place: interleaving with zeros puts each one in the top
 * half of a 32-bit lane. unpacklo/hi work within 128-bit lanes, and packus in
 * sc_bf16x16_store undoes exactly that order, so no cross-lane shuffle is needed
 * (GCC's own vectorization of the C loop spends about half again as many
 * instructions). */
SC_AVX2 static inline void sc_bf16x16_load(const uint16_t *p, __m256 *lo, __m256 *hi)
{
    __m256i v = _mm256_loadu_si256((const __m256i *)p), zero = _mm256_setzero_si256();

    *lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, v));
    *hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, v));
}

/* Lanes of rounded results, the bfloat16 in the low half (see sc_spec_bf16_round). */
SC_AVX2 static inline __m256i sc_bf16x8_round(__m256 r)
{
    __m256i u = _mm256_castps_si256(r);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
    __m256i isnan = _mm256_castps_si256(_mm256_cmp_ps(r, r, _CMP_UNORD_Q));
    rounded = _mm256_blendv_epi8(rounded, _mm256_set1_epi32((int)(SC_BF16_QNAN << 16)), isnan);
    return _mm256_srli_epi32(rounded, 16);
}

SC_AVX2 static inline void sc_bf16x16_store(uint16_t *p, __m256 lo, __m256 hi)
{
    __m256i v = _mm256_packus_epi32(sc_bf16x8_round(lo), sc_bf16x8_round(hi));
    _mm256_storeu_si256((__m256i *)p, v);
}

SC_AVX2 static void sc_bf16_sum_avx2(const uint16_t *x, const uint16_t *y, uint16_t *z,
                                     size_t count)
{
    size_t i = 0;

    for (; i + 16 <= count; i += 16) {
        __m256 xlo, xhi, ylo, yhi;
        sc_bf16x16_load(x + i, &xlo, &xhi);
        sc_bf16x16_load(y + i, &ylo, &yhi);
        sc_bf16x16_store(z + i, _mm256_add_ps(xlo, ylo), _mm256_add_ps(xhi, yhi));
    }
    sc_bf16_sum_c(x + i, y + i, z + i, count - i);
}

SC_AVX2 static void sc_bf16_prod_avx2(const uint16_t *x, const uint16_t *y, uint16_t *z,
                                      size_t count)
{
    size_t i = 0;

    for (; i + 16 <= count; i += 16) {
        __m256 xlo, xhi, ylo, yhi;
        sc_bf16x16_load(x + i, &xlo, &xhi);
        sc_bf16x16_load(y + i, &ylo, &yhi);
        sc_bf16x16_store(z + i, _mm256_mul_ps(xlo, ylo), _mm256_mul_ps(xhi, yhi));
    }
    sc_bf16_prod_c(x + i, y + i, z + i, count - i);
}
#endif

/* The x86 path when the CPU has it, else the portable one (same arguments, same
 * results); on other ISAs the portable one. */
#ifdef SC_HAVE_X86_PATHS
#define SC_PICK(has, x86, portable) ((has) ? (x86) : (portable))
#else
#define SC_PICK(has, x86, portable) (portable)
#endif

static void sc_f16_sum(const void *a, const void *b, void *out, size_t count)
{
    SC_PICK(sc_cpu_has_f16c(), sc_f16_sum_f16c, sc_f16_sum_c)(a, b, out, count);
}

static void sc_f16_prod(const void *a, const void *b, void *out, size_t count)
{
    SC_PICK(sc_cpu_has_f16c(), sc_f16_prod_f16c, sc_f16_prod_c)(a, b, out, count);
}

static void sc_bf16_sum(const void *a, const void *b, void *out, size_t count)
{
    SC_PICK(sc_cpu_has_avx2(), sc_bf16_sum_avx2, sc_bf16_sum_c)(a, b, out, count);
}

static void sc_bf16_prod(const void *a, const void *b, void *out, size_t count)
{
    SC_PICK(sc_cpu_has_avx2(), sc_bf16_prod_avx2, sc_bf16_prod_c)(a, b, out, count);
}

/* ---- integers: sum and prod in the unsigned type, which wraps without UB ------- */

#define SC_DEFINE_INT_KERNELS(NAME, T, UT)                                              \
    SC_CLONES static void NAME##_sum(const void *a, const void *b, void *out,           \
                                     size_t count)                                      \
    {                                                                                   \
        const T *x = a, *y = b;                                                         \
        T *z = out;                                                                     \
        for (size_t i = 0; i < count; i++)                                              \
            z[i] = (T)(UT)((UT)x[i] + (UT)y[i]);                                        \
    }                                                                                   \
    SC_CLONES static void NAME##_prod(const void *a, const void *b, void *out,          \
                                      size_t count)                                     \
    {                                                                                   \
        const T *x = a, *y = b;                                                         \
        T *z = out;                                                                     \
        for (size_t i = 0; i < count; i++)                                              \
            z[i] = (T)(UT)((UT)x[i] * (UT)y[i]);                                        \
    }                                                                                   \
    SC_CLONES static void NAME##_min(const void *a, const void *b, void *out,           \
                                     size_t count)                                      \
    {                                                                                   \
        const T *x = a, *y = b;                                                         \
        T *z = out;                                                                     \
        for (size_t i = 0; i < count; i++)                                              \
            z[i] = x[i] < y[i] ? x[i] : y[i];                                           \
    }                                                                                   \
    SC_CLONES static void NAME##_max(const void *a, const void *b, void *out,           \
                                     size_t count)                                      \
    {                                                                                   \
        const T *x = a, *y = b;                                                         \
        T *z = out;                                                                     \
        for (size_t i = 0; i < count; i++)                                              \
            z[i] = x[i] > y[i] ? x[i] : y[i];                                           \
    }

/* uint8 * uint8 promotes to int, where 255 * 255 cannot overflow; the 32- and
 * 64-bit unsigned products do not promote. */
SC_DEFINE_INT_KERNELS(sc_i8, int8_t, uint8_t)
SC_DEFINE_INT_KERNELS(sc_u8, uint8_t, uint8_t)
SC_DEFINE_INT_KERNELS(sc_i32, int32_t, uint32_t)
SC_DEFINE_INT_KERNELS(sc_i64, int64_t, uint64_t)

/* ---- float8: decoded to float32 in chunks, reduced by the float32 kernels (whose NaN
 * is canonical), encoded back rounding to nearest even ------------------------------ */

#define SC_FP8_CHUNK 256

typedef uint32_t (*sc_fp8_dec_fn)(uint8_t);
typedef uint8_t (*sc_fp8_enc_fn)(uint32_t);

/* E4M3 has no Inf: a finite float32 result past 448 encodes as NaN, which the cast keeps
 * signed (0xff); a reduction's NaN is the canonical 0x7f (types.h), as its NaN inputs
 * already give through the float32 kernels. */
static uint8_t sc_fp8_e4m3_from_f32_result(uint32_t x)
{
    uint8_t b = sc_fp8_e4m3_from_f32(x);

    return (b & 0x7fu) == SC_FP8_E4M3_NAN ? (uint8_t)SC_FP8_E4M3_NAN : b;
}

static void sc_fp8_apply(sc_kernel_fn f32_kernel, sc_fp8_dec_fn dec, sc_fp8_enc_fn enc,
                         const uint8_t *a, const uint8_t *b, uint8_t *out, size_t count)
{
    uint32_t x[SC_FP8_CHUNK], y[SC_FP8_CHUNK];

    for (size_t i = 0; i < count; i += SC_FP8_CHUNK) {
        size_t n = count - i < SC_FP8_CHUNK ? count - i : SC_FP8_CHUNK;
        for (size_t j = 0; j < n; j++) {
            x[j] = dec(a[i + j]);
            y[j] = dec(b[i + j]);
        }
        f32_kernel(x, y, x, n);
        for (size_t j = 0; j < n; j++)
            out[i + j] = enc(x[j]);
    }
}

#define SC_DEFINE_FP8_KERNEL(NAME, OP, DEC, ENC)                                        \
    static void NAME(const void *a, const void *b, void *out, size_t count)             \
    {                                                                                   \
        sc_fp8_apply(OP, DEC, ENC, a, b, out, count);                                   \
    }
SC_DEFINE_FP8_KERNEL(sc_e4m3_sum, sc_f32_sum, sc_fp8_e4m3_to_f32, sc_fp8_e4m3_from_f32_result)
SC_DEFINE_FP8_KERNEL(sc_e4m3_prod, sc_f32_prod, sc_fp8_e4m3_to_f32, sc_fp8_e4m3_from_f32_result)
SC_DEFINE_FP8_KERNEL(sc_e4m3_min, sc_f32_min, sc_fp8_e4m3_to_f32, sc_fp8_e4m3_from_f32_result)
SC_DEFINE_FP8_KERNEL(sc_e4m3_max, sc_f32_max, sc_fp8_e4m3_to_f32, sc_fp8_e4m3_from_f32_result)
SC_DEFINE_FP8_KERNEL(sc_e5m2_sum, sc_f32_sum, sc_fp8_e5m2_to_f32, sc_fp8_e5m2_from_f32)
SC_DEFINE_FP8_KERNEL(sc_e5m2_prod, sc_f32_prod, sc_fp8_e5m2_to_f32, sc_fp8_e5m2_from_f32)
SC_DEFINE_FP8_KERNEL(sc_e5m2_min, sc_f32_min, sc_fp8_e5m2_to_f32, sc_fp8_e5m2_from_f32)
SC_DEFINE_FP8_KERNEL(sc_e5m2_max, sc_f32_max, sc_fp8_e5m2_to_f32, sc_fp8_e5m2_from_f32)

/* dst[i] = src[i] * s, in float32, a finite product's magnitude at most bound
 * (sc_spec_bound) when bounded, rounded back once (a NaN made canonical). Inlined each
 * way, so that the unbounded one is the loop as it was. */
static inline __attribute__((always_inline)) void
sc_fp8_scale_body(uint8_t *dst, const uint8_t *src, size_t count, float s, int bounded,
                  float bound, sc_fp8_dec_fn dec, sc_fp8_enc_fn enc)
{
    for (size_t i = 0; i < count; i++) {
        uint32_t bits = dec(src[i]);
        float v;
        memcpy(&v, &bits, sizeof(v));
        v *= s;
        memcpy(&bits, &v, sizeof(v));
        if (bounded)
            bits = sc_spec_bound(bits, bound);
        dst[i] = enc(sc_spec_f32_is_nan(bits) ? SC_SPEC_F32_QNAN : bits);
    }
}

static void sc_fp8_scale(uint8_t *dst, const uint8_t *src, size_t count, float s,
                         float bound, sc_fp8_dec_fn dec, sc_fp8_enc_fn enc)
{
    if (bound < __builtin_inff())
        sc_fp8_scale_body(dst, src, count, s, 1, bound, dec, enc);
    else
        sc_fp8_scale_body(dst, src, count, s, 0, 0.0f, dec, enc);
}

/* ---- dispatch ---------------------------------------------------------------------- */

/* SC_AVG reduces as SC_SUM. */
static const sc_kernel_fn sc_kernels[SC_DTYPE_COUNT][SC_OP_COUNT] = {
    [SC_FLOAT32] = {sc_f32_sum, sc_f32_prod, sc_f32_min, sc_f32_max, sc_f32_sum},
    [SC_FLOAT64] = {sc_f64_sum, sc_f64_prod, sc_f64_min, sc_f64_max, sc_f64_sum},
    [SC_FLOAT16] = {sc_f16_sum, sc_f16_prod, sc_f16_min, sc_f16_max, sc_f16_sum},
    [SC_BFLOAT16] = {sc_bf16_sum, sc_bf16_prod, sc_bf16_min, sc_bf16_max, sc_bf16_sum},
    [SC_INT8] = {sc_i8_sum, sc_i8_prod, sc_i8_min, sc_i8_max, sc_i8_sum},
    [SC_UINT8] = {sc_u8_sum, sc_u8_prod, sc_u8_min, sc_u8_max, sc_u8_sum},
    [SC_INT32] = {sc_i32_sum, sc_i32_prod, sc_i32_min, sc_i32_max, sc_i32_sum},
    [SC_INT64] = {sc_i64_sum, sc_i64_prod, sc_i64_min, sc_i64_max, sc_i64_sum},
    [SC_FLOAT8_E4M3] = {sc_e4m3_sum, sc_e4m3_prod, sc_e4m3_min, sc_e4m3_max, sc_e4m3_sum},
    [SC_FLOAT8_E5M2] = {sc_e5m2_sum, sc_e5m2_prod, sc_e5m2_min, sc_e5m2_max, sc_e5m2_sum},
};

void sc_reduce_local(sc_op_t op, sc_dtype_t dtype, const void *a, const void *b,
                     void *out, size_t count)
{
    sc_kernels[dtype][op](a, b, out, count);
}

SC_CLONES static void sc_f32_div(float *buf, size_t count, float d)
{
    for (size_t i = 0; i < count; i++)
        buf[i] = buf[i] / d;
}

SC_CLONES static void sc_f64_div(double *buf, size_t count, double d)
{
    for (size_t i = 0; i < count; i++)
        buf[i] = buf[i] / d;
}

void sc_reduce_finish_avg(sc_dtype_t dtype, void *buf, size_t count, int nranks)
{
    if (dtype == SC_FLOAT64)
        sc_f64_div(buf, count, (double)nranks);
    else
        sc_f32_div(buf, count, (float)nranks);
}

void sc_scale_local(sc_dtype_t dtype, void *dst, const void *src, size_t count, double scale,
                    float bound)
{
    if (count == 0)
        return;
    if (scale == 1.0 || !sc_dtype_is_float(dtype)) {
        if (dst != src)
            memcpy(dst, src, count * sc_dtype_size(dtype));
        return;
    }
    if (dtype == SC_FLOAT64) {
        const double *s = src;
        double *d = dst;
        for (size_t i = 0; i < count; i++)
            d[i] = s[i] * scale;
        return;
    }
    if (dtype == SC_FLOAT8_E4M3 || dtype == SC_FLOAT8_E5M2) {
        int e4m3 = dtype == SC_FLOAT8_E4M3;
        sc_fp8_scale(dst, src, count, (float)scale, bound,
                     e4m3 ? sc_fp8_e4m3_to_f32 : sc_fp8_e5m2_to_f32,
                     e4m3 ? sc_fp8_e4m3_from_f32_result : sc_fp8_e5m2_from_f32);
        return;
    }
    if (bound < __builtin_inff())
        sc_scale_bounded_host(src, dst, dtype, count, (float)scale, bound);
    else
        sc_cast_host(src, dtype, dst, dtype, count, (float)scale);
}

/* ---- avg's bound on the pre-scaled inputs --------------------------------------------- */

/* x rounded to the narrow float dtype and back, as a step of a reduction rounds it (an
 * e4m3 value past 448 is NaN). */
static float sc_narrow_round(sc_dtype_t dtype, float x)
{
    uint32_t u = sc_f32_to_bits(x);

    switch (dtype) {
    case SC_FLOAT16:
        return sc_half_to_float(sc_float_to_half(x));
    case SC_BFLOAT16:
        return sc_bfloat16_to_float(sc_float_to_bfloat16(x));
    case SC_FLOAT8_E4M3:
        return sc_f32_from_bits(sc_fp8_e4m3_to_f32(sc_fp8_e4m3_from_f32(u)));
    default:
        return sc_f32_from_bits(sc_fp8_e5m2_to_f32(sc_fp8_e5m2_from_f32(u)));
    }
}

/* The value of the non-negative code c of the narrow float dtype; codes up to the
 * largest finite one are in the order of their values. */
static float sc_narrow_value(sc_dtype_t dtype, uint32_t c)
{
    switch (dtype) {
    case SC_FLOAT16:
        return sc_half_to_float((uint16_t)c);
    case SC_BFLOAT16:
        return sc_bfloat16_to_float((uint16_t)c);
    case SC_FLOAT8_E4M3:
        return sc_f32_from_bits(sc_fp8_e4m3_to_f32((uint8_t)c));
    default:
        return sc_f32_from_bits(sc_fp8_e5m2_to_f32((uint8_t)c));
    }
}

static uint32_t sc_narrow_max_code(sc_dtype_t dtype)
{
    switch (dtype) {
    case SC_FLOAT16: return 0x7bffu;
    case SC_BFLOAT16: return 0x7f7fu;
    case SC_FLOAT8_E4M3: return SC_FP8_E4M3_MAX_CODE;
    default: return SC_FP8_E5M2_INF_CODE - 1u;
    }
}

/* Whether every sum of size terms in [-t, t], rounded to dtype at every step, in any
 * order and grouping, is finite. Rounding and addition are monotone, so the largest
 * sum of a grouping is that of size copies of t, and the largest of k terms over the
 * groupings, m[k], is the largest rounded m[i] + m[k - i] (the smallest is -m[k]). */
static int sc_avg_bound_holds(sc_dtype_t dtype, int size, float t, float max, float *m)
{
    m[1] = t;
    for (int k = 2; k <= size; k++) {
        m[k] = 0;
        for (int i = 1; i <= k / 2; i++) {
            float v = sc_narrow_round(dtype, m[i] + m[k - i]);
            if (!(v <= max))
                return 0;
            m[k] = v > m[k] ? v : m[k];
        }
    }
    return 1;
}

/* The last answer per dtype: size in the high 32 bits, the bound's float bits low. */
static _Atomic uint64_t sc_avg_bound_last[SC_DTYPE_COUNT];

int sc_avg_bound(sc_dtype_t dtype, int size, float *bound)
{
    uint64_t last = atomic_load_explicit(&sc_avg_bound_last[dtype], memory_order_relaxed);
    float max = sc_narrow_value(dtype, sc_narrow_max_code(dtype)), *m;
    uint32_t lo = 0, hi = sc_narrow_max_code(dtype);

    if ((int)(last >> 32) == size) {
        *bound = sc_f32_from_bits((uint32_t)last);
        return 1;
    }
    m = malloc(((size_t)size + 1) * sizeof(*m));
    if (!m)
        return 0;
    /* The largest code whose value times size is at most max (exact in double), then
     * the largest at or below it whose sums stay finite (the predicate is monotone). */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if ((double)sc_narrow_value(dtype, mid) * size <= (double)max)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (!sc_avg_bound_holds(dtype, size, sc_narrow_value(dtype, hi), max, m)) {
        lo = 0;
        hi--;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo + 1) / 2;
            if (sc_avg_bound_holds(dtype, size, sc_narrow_value(dtype, mid), max, m))
                lo = mid;
            else
                hi = mid - 1;
        }
    }
    free(m);
    *bound = sc_narrow_value(dtype, hi);
    atomic_store_explicit(&sc_avg_bound_last[dtype],
                          (uint64_t)(uint32_t)size << 32 | sc_f32_to_bits(*bound),
                          memory_order_relaxed);
    return 1;
}

/* Elements per tile of the scaled reduction: two tiles of 8-byte elements stay in L1. */
#define SC_SCALED_TILE 1024

/* The float32 sum of the scaled inputs in one pass: each product rounded to float32
 * (never fused with the add), the sum rounded, a NaN made canonical, as the tiles below
 * compute it. */
SC_CLONES __attribute__((optimize("fp-contract=off")))
static void sc_f32_sum_scaled(const float *x, int scale_x, const float *y, float *z,
                              size_t count, float s)
{
    for (size_t i = 0; i < count; i++) {
        float a = scale_x ? x[i] * s : x[i];
        float r = a + y[i] * s;
        z[i] = r != r ? sc_f32_from_bits(SC_F32_QNAN) : r;
    }
}

#ifdef SC_HAVE_X86_PATHS
/* sc_spec_bound on eight lanes. */
SC_F16C static inline __m256 sc_f16c_bound(__m256 r, __m256 bound)
{
    __m256 sign = _mm256_set1_ps(-0.0f), mag = _mm256_andnot_ps(sign, r);
    __m256 over = _mm256_and_ps(_mm256_cmp_ps(mag, bound, _CMP_GT_OQ),
                                _mm256_cmp_ps(mag, _mm256_set1_ps(__builtin_inff()), _CMP_LT_OQ));

    return _mm256_or_ps(_mm256_andnot_ps(over, r),
                        _mm256_and_ps(over, _mm256_or_ps(_mm256_and_ps(sign, r), bound)));
}

/* A float16 lane's product by s, bounded when bounded, rounded as sc_scale_local
 * computes it. */
SC_F16C static inline __attribute__((always_inline)) __m256
sc_f16c_scaled(__m256 v, __m256 s, int bounded, __m256 bound)
{
    __m256 r = _mm256_mul_ps(v, s);

    if (bounded)
        r = sc_f16c_bound(r, bound);
    return _mm256_cvtph_ps(_mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
}

/* sc_f32_sum_scaled for float16, eight lanes at a time: each product (bounded when
 * bounded) rounded to float16 (as sc_scale_local), the sum in float32 rounded once;
 * returns the elements done (a multiple of 8). Inlined into one function each way, so
 * that the unbounded one is the kernel as it was. */
SC_F16C static inline __attribute__((always_inline)) size_t
sc_f16_sum_scaled_body(const uint16_t *x, int scale_x, const uint16_t *y, uint16_t *z,
                       size_t count, float s, int bounded, float bound)
{
    __m256 vs = _mm256_set1_ps(s), vb = _mm256_set1_ps(bound);
    size_t i = 0;

    for (; i + 8 <= count; i += 8) {
        __m256 a = sc_f16c_load(x + i), b = sc_f16c_scaled(sc_f16c_load(y + i), vs, bounded, vb);
        if (scale_x)
            a = sc_f16c_scaled(a, vs, bounded, vb);
        sc_f16c_store(z + i, sc_f16c_canonical_nan(_mm256_add_ps(a, b)));
    }
    return i;
}

SC_F16C static size_t sc_f16_sum_scaled_f16c(const uint16_t *x, int scale_x, const uint16_t *y,
                                             uint16_t *z, size_t count, float s)
{
    return sc_f16_sum_scaled_body(x, scale_x, y, z, count, s, 0, 0.0f);
}

/* The bfloat16 value of each lane's product, bounded when bounded, rounded as
 * sc_scale_local computes it. */
SC_AVX2 static inline __attribute__((always_inline)) __m256
sc_bf16x8_scaled(__m256 v, __m256 s, int bounded, __m256 bound)
{
    __m256 r = _mm256_mul_ps(v, s);

    if (bounded)
        r = sc_f16c_bound(r, bound);
    return _mm256_castsi256_ps(_mm256_slli_epi32(sc_bf16x8_round(r), 16));
}

/* The same for bfloat16, sixteen lanes at a time; returns the elements done. */
SC_AVX2 static inline __attribute__((always_inline)) size_t
sc_bf16_sum_scaled_body(const uint16_t *x, int scale_x, const uint16_t *y, uint16_t *z,
                        size_t count, float s, int bounded, float bound)
{
    __m256 vs = _mm256_set1_ps(s), vb = _mm256_set1_ps(bound);
    size_t i = 0;

    for (; i + 16 <= count; i += 16) {
        __m256 xlo, xhi, ylo, yhi;
        sc_bf16x16_load(x + i, &xlo, &xhi);
        sc_bf16x16_load(y + i, &ylo, &yhi);
        if (scale_x) {
            xlo = sc_bf16x8_scaled(xlo, vs, bounded, vb);
            xhi = sc_bf16x8_scaled(xhi, vs, bounded, vb);
        }
        sc_bf16x16_store(z + i, _mm256_add_ps(xlo, sc_bf16x8_scaled(ylo, vs, bounded, vb)),
                         _mm256_add_ps(xhi, sc_bf16x8_scaled(yhi, vs, bounded, vb)));
    }
    return i;
}

SC_AVX2 static size_t sc_bf16_sum_scaled_avx2(const uint16_t *x, int scale_x, const uint16_t *y,
                                              uint16_t *z, size_t count, float s)
{
    return sc_bf16_sum_scaled_body(x, scale_x, y, z, count, s, 0, 0.0f);
}

/* Elements per check of a bounded fused sum: a multiple of 64, read twice from L1. */
#define SC_BOUND_BLOCK 128

/* The bounded fused sums a block at a time: a block whose inputs' magnitudes all lie
 * below the threshold code (sc_scale_bound_code: nearly every block, as only inputs
 * near the type's largest value, Inf and NaN reach it) runs the unbounded kernel, the
 * one a call without a bound runs, whose bits are the same there; the rest the bounded
 * one. So the bound costs a scan of the block from L1, not a blend per lane. The block
 * is read before it is written (z may alias x or y). Returns the elements done. */
#define SC_DEFINE_SUM_SCALED_BOUND(NAME, PLAIN, BOUNDED, TARGET)                         \
    TARGET static size_t NAME(const uint16_t *x, int scale_x, const uint16_t *y,         \
                              uint16_t *z, size_t count, float s, float bound,           \
                              uint16_t code)                                             \
    {                                                                                    \
        size_t i = 0;                                                                    \
                                                                                         \
        if (code != 0)                                                                   \
            for (; i + SC_BOUND_BLOCK <= count; i += SC_BOUND_BLOCK) {                   \
                if (sc_below(y + i, scale_x ? x + i : NULL, SC_BOUND_BLOCK, code))      \
                    (void)PLAIN(x + i, scale_x, y + i, z + i, SC_BOUND_BLOCK, s);        \
                else                                                                     \
                    (void)BOUNDED(x + i, scale_x, y + i, z + i, SC_BOUND_BLOCK, s, bound); \
            }                                                                            \
        return i + BOUNDED(x + i, scale_x, y + i, z + i, count - i, s, bound);           \
    }

SC_F16C static __attribute__((noinline)) size_t
sc_f16_sum_scaled_body_bound(const uint16_t *x, int scale_x, const uint16_t *y, uint16_t *z,
                             size_t count, float s, float bound)
{
    return sc_f16_sum_scaled_body(x, scale_x, y, z, count, s, 1, bound);
}

SC_AVX2 static __attribute__((noinline)) size_t
sc_bf16_sum_scaled_body_bound(const uint16_t *x, int scale_x, const uint16_t *y, uint16_t *z,
                              size_t count, float s, float bound)
{
    return sc_bf16_sum_scaled_body(x, scale_x, y, z, count, s, 1, bound);
}

SC_DEFINE_SUM_SCALED_BOUND(sc_f16_sum_scaled_bound_avx2, sc_f16_sum_scaled_f16c,
                           sc_f16_sum_scaled_body_bound, SC_F16C_AVX2)
SC_DEFINE_SUM_SCALED_BOUND(sc_bf16_sum_scaled_bound_avx2, sc_bf16_sum_scaled_avx2,
                           sc_bf16_sum_scaled_body_bound, SC_AVX2)
#endif

/* Elements done at once by a fused kernel (a sum of float16 or bfloat16 where the CPU
 * has one), leaving the rest to the tiles. No bound (Inf, the reducer's) runs the
 * unbounded kernel whole, as before; a bound the blocked ones (float16 on a CPU with
 * F16C but not AVX2 bounds every lane). Chosen once per call. */
static size_t sc_sum_scaled_fused(sc_dtype_t dtype, const void *a, int scale_a, const void *b,
                                  void *out, size_t count, float s, float bound)
{
#ifdef SC_HAVE_X86_PATHS
    int bounded = bound < __builtin_inff();

    if (dtype == SC_FLOAT16 && sc_cpu_has_f16c()) {
        if (!bounded)
            return sc_f16_sum_scaled_f16c(a, scale_a, b, out, count, s);
        if (sc_cpu_has_avx2())
            return sc_f16_sum_scaled_bound_avx2(a, scale_a, b, out, count, s, bound,
                                                sc_scale_bound_code(dtype, s, bound));
        return sc_f16_sum_scaled_body_bound(a, scale_a, b, out, count, s, bound);
    }
    if (dtype == SC_BFLOAT16 && sc_cpu_has_avx2()) {
        if (!bounded)
            return sc_bf16_sum_scaled_avx2(a, scale_a, b, out, count, s);
        return sc_bf16_sum_scaled_bound_avx2(a, scale_a, b, out, count, s, bound,
                                             sc_scale_bound_code(dtype, s, bound));
    }
#else
    (void)dtype, (void)a, (void)scale_a, (void)b, (void)out, (void)count, (void)s, (void)bound;
#endif
    return 0;
}

void sc_reduce_local_scaled(sc_op_t op, sc_dtype_t dtype, const void *a, int scale_a,
                            const void *b, void *out, size_t count, double scale, float bound)
{
    _Alignas(64) uint8_t ta[SC_SCALED_TILE * 8], tb[SC_SCALED_TILE * 8];
    size_t es = sc_dtype_size(dtype), done;

    if (dtype == SC_FLOAT32 && (op == SC_SUM || op == SC_AVG)) {
        sc_f32_sum_scaled(a, scale_a, b, out, count, (float)scale);
        return;
    }
    if (op == SC_SUM || op == SC_AVG) {
        done = sc_sum_scaled_fused(dtype, a, scale_a, b, out, count, (float)scale, bound);
        a = (const uint8_t *)a + done * es;
        b = (const uint8_t *)b + done * es;
        out = (uint8_t *)out + done * es;
        count -= done;
    }
    for (size_t i = 0; i < count; i += SC_SCALED_TILE) {
        size_t n = count - i < SC_SCALED_TILE ? count - i : SC_SCALED_TILE;
        const uint8_t *pa = (const uint8_t *)a + i * es;
        sc_scale_local(dtype, tb, (const uint8_t *)b + i * es, n, scale, bound);
        if (scale_a) {
            sc_scale_local(dtype, ta, pa, n, scale, bound);
            pa = ta;
        }
        sc_reduce_local(op, dtype, pa, tb, (uint8_t *)out + i * es, n);
    }
}

/* ---- streamed results ---------------------------------------------------------------- */

/* Elements per block of sc_reduce_local_streamed: 8 KiB of the widest type. */
#define SC_STREAM_BLOCK_BYTES 8192

/* dst = src for bytes, with non-temporal stores where dst is 16-byte aligned (SSE2,
 * every x86-64 CPU has it); plain copies for the unaligned edges and elsewhere. */
static void sc_stream_copy(void *dst, const void *src, size_t bytes)
{
#if defined(SC_HAVE_X86_PATHS)
    uint8_t *d = dst;
    const uint8_t *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;

    if (head > bytes)
        head = bytes;
    memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {
        __m128i x0 = _mm_loadu_si128((const __m128i *)s);
        __m128i x1 = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i x2 = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i x3 = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, x0);
        _mm_stream_si128((__m128i *)(d + 16), x1);
        _mm_stream_si128((__m128i *)(d + 32), x2);
        _mm_stream_si128((__m128i *)(d + 48), x3);
    }
    memcpy(d, s, bytes);
#else
    memcpy(dst, src, bytes);
#endif
}

void sc_copy_streamed(void *dst, const void *src, size_t bytes)
{
    sc_stream_copy(dst, src, bytes);
#if defined(SC_HAVE_X86_PATHS)
    _mm_sfence();
#endif
}

void sc_reduce_local_streamed(sc_op_t op, sc_dtype_t dtype, const void *a, int scale_a,
                              const void *b, void *out, void *out2, size_t count,
                              double scale, float bound)
{
    _Alignas(64) uint8_t tmp[SC_STREAM_BLOCK_BYTES];
    size_t es = sc_dtype_size(dtype), per = SC_STREAM_BLOCK_BYTES / es;

    for (size_t i = 0; i < count; i += per) {
        size_t n = count - i < per ? count - i : per;
        const uint8_t *pa = (const uint8_t *)a + i * es, *pb = (const uint8_t *)b + i * es;

        if (scale != 0.0)
            sc_reduce_local_scaled(op, dtype, pa, scale_a, pb, tmp, n, scale, bound);
        else
            sc_reduce_local(op, dtype, pa, pb, tmp, n);
        sc_stream_copy((uint8_t *)out + i * es, tmp, n * es);
        if (out2)
            sc_stream_copy((uint8_t *)out2 + i * es, tmp, n * es);
    }
#if defined(SC_HAVE_X86_PATHS)
    _mm_sfence();
#endif
}
