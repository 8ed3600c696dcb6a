/* A float's bit pattern and back, for the tests' independent references. */
#ifndef SC_TESTS_BITS_H
#define SC_TESTS_BITS_H

#include <stdint.h>
#include <string.h>

static inline float f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

#endif
