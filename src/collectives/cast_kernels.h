/* The mixed-precision kernels inside the library: host twins of the element spec in
 * cast_spec.h over whole buffers, and the hand-off of a checked call to the device
 * (cast_device_cuda.c in CUDA builds, cast_device_nocuda.c in host-only builds). */
#ifndef SC_COLLECTIVES_CAST_KERNELS_H
#define SC_COLLECTIVES_CAST_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "shardcomm/status.h"
#include "shardcomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    SC_KERNEL_CAST = 0,      /* dst = cast(src * scale) */
    SC_KERNEL_CHECK_FINITE,  /* flag = 1 when src holds an Inf or NaN */
    SC_KERNEL_UNSCALE_CHECK, /* src = src * scale in place (dst == src), flag as above */
} sc_kernel_kind_t;

/* One checked call: dtypes are float32, float16 or bfloat16, count > 0, buffers
 * non-NULL and aligned to their element size. */
typedef struct {
    sc_kernel_kind_t kind;
    const void *src;
    sc_dtype_t src_type;
    void *dst;           /* NULL for the check */
    sc_dtype_t dst_type; /* src_type except for the cast */
    size_t count;
    float scale;
    int32_t *flag;       /* NULL for the cast */
} sc_kernel_job_t;

/* Host twins: synchronous, on the calling thread, with AVX2/F16C paths chosen at run
 * time and the scalar spec elsewhere; every path gives the spec's bits. The caller has
 * validated the arguments (see sc_kernel_job_t); count 0 does nothing. Thread safe. */
void sc_cast_host(const void *src, sc_dtype_t src_type, void *dst, sc_dtype_t dst_type,
                  size_t count, float scale);

/* dst[i] = src[i] * scale for float16 or bfloat16 (dtype), as sc_cast_host computes it,
 * each finite result's magnitude then at most bound (sc_spec_bound: avg's pre-scale,
 * sc_avg_bound); src == dst allowed. Thread safe. */
void sc_scale_bounded_host(const void *src, void *dst, sc_dtype_t dtype, size_t count,
                           float scale, float bound);

/* The smallest float16 or bfloat16 (dtype) code c such that a finite value whose
 * magnitude's code is c or more may have its product by scale (> 0) pass bound: below
 * it, bounding changes nothing (a threshold on the input, so that the bound stays out
 * of the hot loops). 0x7c00 or 0x7f80 (Inf) when no finite value passes; 0 for a scale
 * not above 0 or a NaN bound. */
uint16_t sc_scale_bound_code(sc_dtype_t dtype, float scale, float bound);

/* 1 when any element is Inf or NaN, else 0. */
int sc_check_finite_host(const void *buf, sc_dtype_t dtype, size_t count);

/* buf[i] = buf[i] * inv_scale in place; 1 when an input or result is Inf or NaN. */
int sc_unscale_check_host(void *buf, sc_dtype_t dtype, size_t count, float inv_scale);

/* Runs a checked job whose buffers are on GPU device, on stream (NULL: the legacy
 * default stream), asynchronously. Checks that the flag is memory the kernel can
 * write. fn names the public call in error sentences. A host-only build refuses with
 * SC_ERR_UNSUPPORTED. */
sc_status_t sc_kernel_run_device(const char *fn, const sc_kernel_job_t *job, int device,
                                 sc_stream_t stream);

/* CUDA builds only (cast_cuda.cu): enqueues job's kernel on stream on the calling
 * thread's current device; returns the launch's cudaError_t (0 on success). */
int sc_kernel_launch(const sc_kernel_job_t *job, sc_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif
