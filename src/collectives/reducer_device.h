/* The reducer's device kernels (reducer_cuda.cu), for reducer_mem_cuda.c. */
#ifndef SC_COLLECTIVES_REDUCER_DEVICE_H
#define SC_COLLECTIVES_REDUCER_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = src[i] * scale (accumulate 0; float dtypes) or dst[i] += src[i] * scale
 * (accumulate 1; integers add and wrap, scale ignored) for i < count, as the host twin
 * computes it, launched on stream on the calling thread's current device. dtype is an
 * sc_dtype_t. Returns the launch's cudaError_t (0 on success). */
int sc_reducer_launch_scale(int dtype, void *dst, const void *src, size_t count,
                            double scale, int accumulate, void *stream);

#ifdef __cplusplus
}
#endif

#endif
