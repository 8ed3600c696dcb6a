/* The reducer's element work on host buckets: the copy of a gradient scaled by the
 * pre-division factor (the mixed-precision cast kernel for float32/float16/bfloat16)
 * and the scaled accumulation of iterations without sync, behind the host memory ops
 * (sc_reducer_mem_host). The device twins are in reducer_cuda.cu. */
#include <string.h>

#include "collectives/cast_kernels.h"
#include "collectives/reduce_kernels.h"
#include "collectives/reducer_internal.h"
#include "core/dtype.h"
#include "core/fpenv.h"

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

/* dst[i] += src[i] * scale, float32 arithmetic for float16/bfloat16, wrapping for
 * integers. */
static void sc_reducer_scale_add(sc_dtype_t dtype, void *dst, const void *src, size_t count,
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

static sc_status_t sc_rmem_host_copy(sc_reducer_mem_t *m, void *dst, const void *src,
                                     size_t bytes)
{
    (void)m;
    memcpy(dst, src, bytes);
    return SC_SUCCESS;
}

static sc_status_t sc_rmem_host_zero(sc_reducer_mem_t *m, void *dst, size_t bytes)
{
    (void)m;
    memset(dst, 0, bytes);
    return SC_SUCCESS;
}

/* Runs on the thread that marks the gradient ready, in the library's floating-point
 * environment (fpenv.h) as the reductions are: a caller that flushes subnormals would
 * otherwise flush them here (the float64 scaling and every accumulation), and ranks
 * whose callers set different modes would disagree. */
static sc_status_t sc_rmem_host_scale(sc_reducer_mem_t *m, sc_dtype_t dtype, void *dst,
                                      const void *src, size_t count, double scale,
                                      int accumulate)
{
    sc_fpenv_t fe = sc_fpenv_enter();

    (void)m;
    if (accumulate)
        sc_reducer_scale_add(dtype, dst, src, count, scale);
    else
        sc_scale_local(dtype, dst, src, count, scale, __builtin_inff());
    sc_fpenv_leave(fe);
    return SC_SUCCESS;
}

static sc_status_t sc_rmem_host_order(sc_reducer_mem_t *m)
{
    (void)m;
    return SC_SUCCESS;
}

static void sc_rmem_host_close(sc_reducer_mem_t *m)
{
    (void)m;
}

void sc_reducer_mem_host(sc_reducer_mem_t *m)
{
    memset(m, 0, sizeof(*m));
    m->device = -1;
    m->copy = sc_rmem_host_copy;
    m->zero = sc_rmem_host_zero;
    m->scale = sc_rmem_host_scale;
    m->after_compute = sc_rmem_host_order;
    m->before_compute = sc_rmem_host_order;
    m->close = sc_rmem_host_close;
}
