/* The element-level spec of the mixed-precision kernels, on bit patterns: float32 <->
 * float16 / bfloat16 conversions, the scale fused with them, and the finiteness
 * tests. One definition serves the host twins (cast_host.c), the CUDA kernels
 * (cast_cuda.cu) and the host reductions (reduce_kernels.c). */
#ifndef SC_COLLECTIVES_CAST_SPEC_H
#define SC_COLLECTIVES_CAST_SPEC_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define SC_HD __host__ __device__
#else
#define SC_HD
#endif

#define SC_SPEC_F32_QNAN 0x7fc00000u  /* the quiet NaN a scaling makes (0 * Inf) */
#define SC_SPEC_F32_QUIET 0x00400000u /* quiet bit of a float32 NaN */

static inline SC_HD float sc_spec_f32(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
#endif
}

static inline SC_HD uint32_t sc_spec_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
#endif
}

static inline SC_HD int sc_spec_f32_is_nan(uint32_t x)
{
    return (x & 0x7fffffffu) > 0x7f800000u;
}

/* Inf or NaN: the exponent field is all ones. */
static inline SC_HD int sc_spec_f32_nonfinite(uint32_t x)
{
    return (x & 0x7f800000u) == 0x7f800000u;
}

static inline SC_HD int sc_spec_f16_nonfinite(uint16_t h)
{
    return (h & 0x7c00u) == 0x7c00u;
}

static inline SC_HD int sc_spec_bf16_nonfinite(uint16_t b)
{
    return (b & 0x7f80u) == 0x7f80u;
}

static inline SC_HD int sc_spec_f16_is_nan(uint16_t h)
{
    return (h & 0x7fffu) > 0x7c00u;
}

/* A float16 NaN as float32: made quiet, sign and payload kept (as x86 F16C's
 * vcvtph2ps does). */
static inline SC_HD uint32_t sc_spec_f16_nan_to_f32(uint16_t h)
{
    return ((uint32_t)(h & 0x8000u) << 16) | 0x7f800000u | SC_SPEC_F32_QUIET |
           ((uint32_t)(h & 0x3ffu) << 13);
}

/* A float32 NaN as float16: made quiet, sign and the top 9 payload bits kept (as
 * vcvtps2ph does). */
static inline SC_HD uint16_t sc_spec_f32_nan_to_f16(uint32_t x)
{
    return (uint16_t)(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu));
}

/* float16 -> float32, exact; a NaN as sc_spec_f16_nan_to_f32 says. */
static inline SC_HD uint32_t sc_spec_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (sc_spec_f16_is_nan(h))
        return sc_spec_f16_nan_to_f32(h);
    if (exp == 0x1f) /* Inf */
        return sign | 0x7f800000u;
    if (exp == 0) {
        if (mant == 0)
            return sign;
        /* subnormal: normalize so that bit 10 is the implicit one */
#ifdef __CUDA_ARCH__
        int shift = __clz(mant) - 21;
#else
        int shift = __builtin_clz(mant) - 21;
#endif
        mant = (mant << shift) & 0x3ffu;
        return sign | ((uint32_t)(113 - shift) << 23) | (mant << 13);
    }
    return sign | ((exp + 112) << 23) | (mant << 13);
}

/* float32 -> float16, rounded to nearest even, subnormal results included; beyond the
 * largest half (65504 plus half an ulp) to Inf; Inf kept; a NaN as
 * sc_spec_f32_nan_to_f16 says. */
static inline SC_HD uint16_t sc_spec_f32_to_f16(uint32_t x)
{
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);

    if (sc_spec_f32_is_nan(x))
        return sc_spec_f32_nan_to_f16(x);
    x &= 0x7fffffffu;
    if (x >= 0x477ff000u) /* >= 65520 = 65504 + half an ulp: rounds to Inf */
        return (uint16_t)(sign | 0x7c00u);
    if (x >= 0x38800000u) {
        /* normal half: rebias, then round to nearest even on the 13 dropped bits; a
         * carry out of the mantissa correctly bumps the exponent */
        x -= 112u << 23;
        x += 0xfffu + ((x >> 13) & 1u);
        return (uint16_t)(sign | (x >> 13));
    }
    if (x < 0x33000000u) /* below 2^-25, half the smallest subnormal: to zero */
        return sign;
    /* subnormal half: |f| * 2^24 rounded to an integer */
    uint32_t e = x >> 23; /* 102..112 here */
    uint32_t m = (x & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1u)))
        r++;
    return (uint16_t)(sign | r);
}

/* bfloat16 -> float32, exact; a NaN is made quiet, sign and payload kept. */
static inline SC_HD uint32_t sc_spec_bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;

    return sc_spec_f32_is_nan(x) ? x | SC_SPEC_F32_QUIET : x;
}

/* The bits of a non-NaN float32 rounded to nearest even at bit 16: the upper half is
 * the bfloat16. A carry out of the mantissa bumps the exponent, and lands on Inf past
 * the largest bfloat16, as it should; subnormals round the same way. */
static inline SC_HD uint32_t sc_spec_bf16_round(uint32_t x)
{
    return x + 0x7fffu + ((x >> 16) & 1u);
}

/* float32 -> bfloat16, rounded to nearest even; Inf kept. A NaN must not go through
 * the rounding add (its carry could make it Inf): it is made quiet, with its sign and
 * the top 6 payload bits. */
static inline SC_HD uint16_t sc_spec_f32_to_bf16(uint32_t x)
{
    if (sc_spec_f32_is_nan(x))
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)(sc_spec_bf16_round(x) >> 16);
}

/* x * scale, computed in float32 (rounded to nearest even). A NaN input is not
 * multiplied: it comes back made quiet with its sign and payload, so that no
 * hardware's NaN propagation rule shows. A NaN the multiplication makes (0 * Inf, a
 * NaN scale) is SC_SPEC_F32_QNAN. scale 1 changes no value but quiets NaNs. */
static inline SC_HD uint32_t sc_spec_scale(uint32_t x, float scale)
{
    uint32_t r;

    if (sc_spec_f32_is_nan(x))
        return x | SC_SPEC_F32_QUIET;
    r = sc_spec_bits(sc_spec_f32(x) * scale);
    return sc_spec_f32_is_nan(r) ? SC_SPEC_F32_QNAN : r;
}

/* x with a finite magnitude above bound brought down to bound, its sign kept: avg's
 * bound on each pre-scaled input (sc_avg_bound). Rounding is monotone and bound is a
 * value of the narrow type, so bounding before the rounding equals bounding after it.
 * Inf and NaN pass unchanged; bound Inf changes nothing. */
static inline SC_HD uint32_t sc_spec_bound(uint32_t x, float bound)
{
    uint32_t mag = x & 0x7fffffffu;

    if (mag < 0x7f800000u && sc_spec_f32(mag) > bound)
        return (x & 0x80000000u) | sc_spec_bits(bound);
    return x;
}

#endif
