/* The 8-bit float formats NCCL reduces (OCP FP8): float8_e4m3 (E4M3FN: bias 7, no
 * infinity, S.1111.111 is NaN, largest 448) and float8_e5m2 (bias 15, IEEE-like with
 * infinities). Decoding is exact; encoding rounds to nearest even on the bits, like
 * PyTorch's float8_e4m3fn / float8_e5m2 casts: an e4m3 value beyond 448 after
 * rounding (and an infinity) becomes NaN, an e5m2 one becomes infinity. Usable from C
 * and CUDA. */
#ifndef SC_COLLECTIVES_FP8_SPEC_H
#define SC_COLLECTIVES_FP8_SPEC_H

#include <stdint.h>

#include "collectives/cast_spec.h"

#define SC_FP8_E4M3_NAN 0x7fu  /* the canonical (positive) e4m3 NaN */
#define SC_FP8_E5M2_NAN 0x7eu  /* the canonical (positive, quiet) e5m2 NaN */
#define SC_FP8_E4M3_MAX_CODE 0x7eu
#define SC_FP8_E5M2_INF_CODE 0x7cu

/* The magnitude code of a finite, non-negative float32 (bits x) rounded to nearest
 * even into a format of E exponent bits and M mantissa bits (bias 2^(E-1) - 1),
 * subnormals included; codes past the format's largest mean overflow. */
static inline SC_HD uint32_t sc_fp8_round(uint32_t x, int E, int M)
{
    int bias = (1 << (E - 1)) - 1;
    int e = (int)(x >> 23) - 127 + bias; /* biased exponent in the small format */
    uint32_t sig = (x & 0x7fffffu) | 0x800000u, q, rem, half;
    int shift = e >= 1 ? 23 - M : 23 - M + 1 - e;

    if ((x >> 23) == 0 || shift > 25) /* float32 zeros and subnormals are far below */
        return 0;
    q = sig >> shift;
    rem = sig & ((1u << shift) - 1u);
    half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    /* A carry out of the mantissa moves to the next exponent by itself. */
    return e >= 1 ? ((uint32_t)e << M) + q - (1u << M) : q;
}

static inline SC_HD uint8_t sc_fp8_e4m3_from_f32(uint32_t x)
{
    uint32_t sign = (x >> 24) & 0x80u, code;

    if (sc_spec_f32_is_nan(x) || sc_spec_f32_nonfinite(x))
        return (uint8_t)(sign | SC_FP8_E4M3_NAN);
    code = sc_fp8_round(x & 0x7fffffffu, 4, 3);
    if (code > SC_FP8_E4M3_MAX_CODE)
        code = SC_FP8_E4M3_NAN;
    return (uint8_t)(sign | code);
}

static inline SC_HD uint8_t sc_fp8_e5m2_from_f32(uint32_t x)
{
    uint32_t sign = (x >> 24) & 0x80u, code;

    if (sc_spec_f32_is_nan(x))
        return (uint8_t)(sign | SC_FP8_E5M2_NAN);
    if (sc_spec_f32_nonfinite(x))
        return (uint8_t)(sign | SC_FP8_E5M2_INF_CODE);
    code = sc_fp8_round(x & 0x7fffffffu, 5, 2);
    if (code > SC_FP8_E5M2_INF_CODE)
        code = SC_FP8_E5M2_INF_CODE;
    return (uint8_t)(sign | code);
}

/* value = (-1)^s * 2^(e - bias) * (1 + m / 2^M), or 2^(1 - bias) * m / 2^M for e = 0:
 * built exactly as float32 bits. */
static inline SC_HD uint32_t sc_fp8_decode(uint8_t b, int E, int M)
{
    int bias = (1 << (E - 1)) - 1;
    uint32_t sign = (uint32_t)(b & 0x80u) << 24, e = (b >> M) & ((1u << E) - 1u);
    uint32_t m = b & ((1u << M) - 1u);

    if (e == 0) {
        int k = 0;
        if (m == 0)
            return sign;
        while (!(m & (1u << M))) /* normalize the subnormal */
            m <<= 1, k++;
        return sign | ((uint32_t)(1 - bias - k + 127) << 23) | ((m & ((1u << M) - 1u)) << (23 - M));
    }
    return sign | ((e - (uint32_t)bias + 127u) << 23) | (m << (23 - M));
}

static inline SC_HD uint32_t sc_fp8_e4m3_to_f32(uint8_t b)
{
    if ((b & 0x7fu) == SC_FP8_E4M3_NAN)
        return ((uint32_t)(b & 0x80u) << 24) | 0x7fc00000u;
    return sc_fp8_decode(b, 4, 3);
}

static inline SC_HD uint32_t sc_fp8_e5m2_to_f32(uint8_t b)
{
    uint32_t sign = (uint32_t)(b & 0x80u) << 24;

    if ((b & 0x7cu) == 0x7cu)
        return (b & 0x03u) ? sign | 0x7fc00000u | ((uint32_t)(b & 0x03u) << 21)
                           : sign | 0x7f800000u;
    return sc_fp8_decode(b, 5, 2);
}

#endif
