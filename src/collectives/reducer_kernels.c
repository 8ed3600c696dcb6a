/* The reducer's element work on host buckets: the copy of a gradient scaled by the
 * pre-division factor (the mixed-precision cast kernel for float32/float16/bfloat16)
 * and the scaled accumulation of iterations without sync. */
#include <string.h>

#include "collectives/cast_kernels.h"
#include "collectives/reduce_kernels.h"
#include "collectives/reducer_internal.h"
#include "core/dtype.h"

int sc_reducer_dtype_ok(sc_dtype_t dtype)
{
    switch (dtype) {
    case SC_FLOAT32: case SC_FLOAT64: case SC_FLOAT16: case SC_BFLOAT16:
    case SC_INT8: case SC_UINT8: case SC_INT32: case SC_INT64:
        return 1;
    default:
        return 0;
    }
}

void sc_reducer_scale_copy(sc_dtype_t dtype, void *dst, const void *src, size_t count,
                           double scale)
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
    sc_cast_host(src, dtype, dst, dtype, count, (float)scale);
}

void sc_reducer_scale_add(sc_dtype_t dtype, void *dst, const void *src, size_t count,
                          double scale)
{
    float fs = (float)scale;

    switch (dtype) {
    case SC_FLOAT32: {
        const float *s = src;
        float *d = dst;
        for (size_t i = 0; i < count; i++)
            d[i] += s[i] * fs;
        break;
    }
    case SC_FLOAT64: {
        const double *s = src;
        double *d = dst;
        for (size_t i = 0; i < count; i++)
            d[i] += s[i] * scale;
        break;
    }
    case SC_FLOAT16: {
        const uint16_t *s = src;
        uint16_t *d = dst;
        for (size_t i = 0; i < count; i++)
            d[i] = sc_float_to_half(sc_half_to_float(d[i]) + sc_half_to_float(s[i]) * fs);
        break;
    }
    case SC_BFLOAT16: {
        const uint16_t *s = src;
        uint16_t *d = dst;
        for (size_t i = 0; i < count; i++)
            d[i] = sc_float_to_bfloat16(sc_bfloat16_to_float(d[i]) +
                                        sc_bfloat16_to_float(s[i]) * fs);
        break;
    }
    default:
        /* Integers: two's complement addition wraps, as the collectives' sum does. */
        sc_reduce_local(SC_SUM, dtype, dst, src, dst, count);
        break;
    }
}
