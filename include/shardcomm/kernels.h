/* Mixed-precision kernels: casts between float32, float16 and bfloat16 with a fused
 * scale, an Inf/NaN check, and the fused unscale + check of dynamic loss scaling.
 *
 * Where they run: on host buffers (pageable or pinned) with stream NULL, synchronously
 * on the calling thread; on device or managed buffers as a CUDA kernel on stream (NULL:
 * the legacy default stream) of the buffers' GPU, asynchronously: the call returns once
 * the kernel is enqueued, and the stream orders the results, the flag included. A
 * call's buffers must all be host memory or all on one GPU. Host and device give the
 * same bits for the same input.
 *
 * Numbers: every element is computed in float32. Conversions to float16 and bfloat16
 * round to nearest even (subnormal results included) and overflow to Inf; conversions
 * to float32 are exact. A NaN input is never multiplied: it comes out as a quiet NaN
 * with its sign and the payload bits that fit the output. A NaN made by the scaling
 * (0 * Inf, a NaN scale) is the quiet NaN 0x7fc00000 in float32 terms (0x7e00 float16,
 * 0x7fc0 bfloat16). These results hold whatever floating-point modes the calling
 * thread set: on host buffers the kernels compute in the library's environment
 * (types.h), so a thread with flush-to-zero, denormals-are-zero or another rounding
 * mode still gets subnormals kept and products rounded to nearest even, and has its
 * modes back after the call (x86; elsewhere the thread's own modes apply).
 *
 * Buffers are aligned to their element size. Errors are checked before any work:
 * SC_ERR_INVALID_ARG (a NULL buffer with count > 0, a dtype other than float32,
 * float16 or bfloat16, a count whose bytes overflow, a misaligned or partly overlapping
 * buffer, host and device buffers mixed, a stream with host buffers, a flag the kernel
 * cannot write); SC_ERR_UNSUPPORTED for device buffers in a host-only build; SC_ERR_DEVICE
 * when the CUDA runtime refuses the launch. Nothing is written on an error. count 0 does
 * nothing and succeeds. sc_last_error() names the call and the argument.
 *
 * Thread safety: any thread may call; calls on distinct buffers are independent. */
#ifndef SHARDCOMM_KERNELS_H
#define SHARDCOMM_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "shardcomm/api.h"
#include "shardcomm/status.h"
#include "shardcomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = (dst_type)(src[i] * scale) for i < count, the product in float32; scale 1
 * is a plain cast. src_type and dst_type are each SC_FLOAT32, SC_FLOAT16 or
 * SC_BFLOAT16 (all nine pairs). In place (src == dst) when the two element sizes are
 * equal; any other overlap is refused. */
SC_API sc_status_t sc_cast(const void *src, sc_dtype_t src_type, void *dst,
                           sc_dtype_t dst_type, size_t count, float scale,
                           sc_stream_t stream);

/* Sets *flag to 1 when any of the count elements of buf (SC_FLOAT32, SC_FLOAT16 or
 * SC_BFLOAT16) is Inf or NaN; never clears it, so that one flag gathers many buffers
 * (like PyTorch's found_inf). With device buffers the flag is device or managed memory
 * on the same GPU, or pinned host memory, read after the stream has reached this point. */
SC_API sc_status_t sc_check_finite(const void *buf, sc_dtype_t dtype, size_t count,
                                   int32_t *flag, sc_stream_t stream);

/* buf[i] = buf[i] * inv_scale in place (as sc_cast with scale inv_scale), and *flag = 1
 * when an input or a result is Inf or NaN (a float16 result may overflow); never clears
 * the flag. The flag follows sc_check_finite's rules. */
SC_API sc_status_t sc_unscale_check(void *buf, sc_dtype_t dtype, size_t count,
                                    float inv_scale, int32_t *flag, sc_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif
