/* Data types, reduction operations and the stream handle. */
#ifndef SHARDCOMM_TYPES_H
#define SHARDCOMM_TYPES_H

#include <stddef.h>
#include "shardcomm/api.h"
#include "shardcomm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    SC_FLOAT32 = 0,
    SC_FLOAT64,
    SC_FLOAT16,   /* IEEE binary16 */
    SC_BFLOAT16,
    SC_INT8,
    SC_UINT8,
    SC_INT32,
    SC_INT64,
    SC_FLOAT8_E4M3, /* OCP FP8 E4M3FN: no infinity, largest 448 */
    SC_FLOAT8_E5M2, /* OCP FP8 E5M2 */
    SC_DTYPE_COUNT
} sc_dtype_t;

typedef enum {
    SC_SUM = 0,
    SC_PROD,
    SC_MIN,
    SC_MAX,
    SC_AVG,       /* the mean over the communicator; float types only (see below) */
    SC_OP_COUNT
} sc_op_t;

/* How reductions compute. Integers wrap (two's complement). float16, bfloat16 and the
 * float8 types are widened to float32 for each operation and rounded back to their
 * type once per step of the algorithm, as NCCL does: a partial sum past the type's
 * range is Inf (past 65504 in float16; NaN in float8 E4M3, which has no Inf) even
 * where later terms would bring it back, and the rounding depends on the algorithm's
 * order; the result is still bitwise the same on every rank. A NaN result (on 2 or more ranks) is the type's canonical quiet NaN;
 * min and max return it where any rank's element is NaN (unlike C's fmin and fmax,
 * which return the other operand) and order -0 below +0. SC_AVG: float32 and float64 divide the sum by the
 * size, rounded once (values whose sum overflows average to Inf); float16, bfloat16 and
 * float8 multiply every input by 1 / size first (in float32, rounded to the type, as
 * NCCL's avg premultiplies), then sum, so that values whose sum passes the type's range
 * still average (a few more roundings than one division). A finite product is then kept
 * within the largest value of the type, not above its largest / size, for which every
 * sum of size such terms, rounded at every step in any order, is finite (so the average
 * of in-range values is finite: 65504 / 3 rounds up to 21840 in float16, three of which
 * sum to Inf, and is kept at 21824; on 10 ranks 6548 would still sum to Inf in some
 * orders and the bound is 6544): products below it keep their bits, Inf averages to
 * Inf and NaN to NaN. Reductions, casts, the reducer's pre-division and accumulation
 * (in mark_ready) and the compressor's steps compute
 * in one floating-point environment whatever the calling thread set (round to nearest
 * even, subnormals kept, exceptions masked: a thread's flush-to-zero, as
 * torch.set_flush_denormal(True) sets it, or another rounding mode does not apply), as
 * NCCL's device reductions, so that ranks whose reductions ran on differently set
 * threads still agree bit for bit (x86; elsewhere the threads' own modes apply). */

/* A CUDA stream (cudaStream_t) for device buffers; NULL for host buffers. */
typedef void *sc_stream_t;

/* Bytes [off, off + bytes) of a buffer and the memory they go to, dst (the reducer's
 * results delivered straight into the caller's gradients). */
typedef struct {
    size_t off;
    size_t bytes;
    void *dst;
} sc_range_t;

/* Size in bytes of one element; 0 for an unknown dtype. */
SC_API size_t sc_dtype_size(sc_dtype_t dtype);

/* Canonical name ("float32", "bfloat16", ...); "unknown" for an unknown dtype. */
SC_API const char *sc_dtype_name(sc_dtype_t dtype);

/* Parses a dtype name: the canonical names and nccl-tests' spellings (half, float,
 * double, bfloat16, int8, uint8, int32, int64). SC_ERR_INVALID_ARG if unknown. */
SC_API sc_status_t sc_dtype_from_name(const char *name, sc_dtype_t *dtype);

/* Name of an op ("sum", ...); "unknown" for an unknown op. */
SC_API const char *sc_op_name(sc_op_t op);

/* Parses an op name (sum prod min max avg). SC_ERR_INVALID_ARG if unknown. */
SC_API sc_status_t sc_op_from_name(const char *name, sc_op_t *op);

#ifdef __cplusplus
}
#endif

#endif
