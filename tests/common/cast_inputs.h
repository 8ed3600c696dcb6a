/* Inputs of the mixed-precision kernel tests, host (tests/kernels) and device
 * (tests/gpu) alike: elements of float32, float16 and bfloat16 as bit patterns, and
 * random buffers with every special value of the format. */
#ifndef SC_TESTS_CAST_INPUTS_H
#define SC_TESTS_CAST_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "shardcomm/shardcomm.h"

#define CAST_NELEM(x) (sizeof(x) / sizeof((x)[0]))

static inline size_t esize(sc_dtype_t t)
{
    return t == SC_FLOAT32 ? 4 : 2;
}

static inline uint32_t get(sc_dtype_t t, const void *p, size_t i)
{
    return t == SC_FLOAT32 ? ((const uint32_t *)p)[i] : ((const uint16_t *)p)[i];
}

static inline void put(sc_dtype_t t, void *p, size_t i, uint32_t v)
{
    if (t == SC_FLOAT32)
        ((uint32_t *)p)[i] = v;
    else
        ((uint16_t *)p)[i] = (uint16_t)v;
}

/* xorshift64*: the same sequence on every machine. */
static inline uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

/* Zeros, infinities, quiet and signalling NaNs with payloads, subnormals, the largest
 * finite values, and values at the rounding points of the narrow formats. */
static const uint32_t special_f32[] = {
    0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001,
    0x7fa12345, 0xff812345, 0x7fffffff, 0x00000001, 0x80000001, 0x007fffff, 0x00800000,
    0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000, 0x477fe000, 0x477fefff, 0x477ff000,
    0xc77ff000, 0x33800000, 0x33000000, 0x33000001, 0x387fc000, 0x7f7f8000, 0x7f7f7fff,
    0x3f808000, 0x3f818000, 0x3f801000, 0x3f803000};
static const uint16_t special_f16[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe00,
                                       0x7c01, 0x7d23, 0xfd23, 0x7fff, 0x0001, 0x8001,
                                       0x03ff, 0x0400, 0x7bff, 0xfbff, 0x3c00, 0x3c01};
static const uint16_t special_bf16[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc0,
                                        0x7f81, 0x7fa5, 0xffa5, 0x7fff, 0x0001, 0x8001,
                                        0x007f, 0x0080, 0x7f7f, 0xff7f, 0x3f80, 0x3f81};

/* count elements of type t: specials, random bit patterns, and mostly ordinary values
 * with exponents near one (so that scaling and rounding have work to do). */
static inline void fill_random(sc_dtype_t t, void *buf, size_t count, uint64_t seed)
{
    uint64_t s = seed * UINT64_C(0x9e3779b97f4a7c15) + 1;

    for (size_t i = 0; i < count; i++) {
        uint64_t r = rng_next(&s);
        unsigned kind = r % 8;
        uint32_t b = (uint32_t)(r >> 16), v;

        if (t == SC_FLOAT32)
            v = kind == 0   ? special_f32[b % CAST_NELEM(special_f32)]
                : kind == 1 ? b
                            : (b & 0x807fffffu) | ((112u + (b >> 23) % 32) << 23);
        else if (t == SC_FLOAT16)
            v = kind == 0   ? special_f16[b % CAST_NELEM(special_f16)]
                : kind == 1 ? b & 0xffff
                            : (b & 0x83ff) | ((6u + (b >> 10) % 18) << 10);
        else
            v = kind == 0   ? special_bf16[b % CAST_NELEM(special_bf16)]
                : kind == 1 ? b & 0xffff
                            : (b & 0x807f) | ((112u + (b >> 7) % 32) << 7);
        put(t, buf, i, v);
    }
}

#endif
