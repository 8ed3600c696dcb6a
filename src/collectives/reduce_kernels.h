/* Element-wise reduction kernels on host memory, vectorized with run-time dispatch. */
#ifndef SC_COLLECTIVES_REDUCE_KERNELS_H
#define SC_COLLECTIVES_REDUCE_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "shardcomm/types.h"

/* out[i] = a[i] op b[i] for i < count. out may alias a or b (exactly, not partially);
 * count 0 writes nothing.
 * SC_AVG reduces as SC_SUM (the division is sc_reduce_finish_avg's job).
 * float16/bfloat16 compute in float32 and round once to nearest even, which for
 * these formats is the correctly rounded result.
 * Floats: every NaN result (a NaN operand, Inf - Inf, 0 * Inf) is the canonical quiet
 * NaN 0x7fc00000 / 0x7ff8000000000000 / 0x7e00 (float16) / 0x7fc0 (bfloat16),
 * because which operand's NaN the hardware keeps depends on the operand order.
 * min/max with a NaN operand give NaN; min(-0, +0) = -0 and max(-0, +0) = +0.
 * Integers wrap (two's complement) on sum and prod.
 * Commutative bit for bit: a op b == b op a, and the same on every ISA level the
 * kernel is chosen from at run time (baseline, F16C, AVX2, AVX-512).
 * The caller has validated dtype and op. Thread safe: no state. */
void sc_reduce_local(sc_op_t op, sc_dtype_t dtype, const void *a, const void *b,
                     void *out, size_t count);

/* buf[i] /= nranks (nranks >= 1), a true division, not a multiply by 1/nranks, so
 * that it matches x / n computed anywhere else. float16/bfloat16 go through float32
 * and round once; NaNs stay NaN (made quiet, sign and payload kept). Integer dtypes
 * divide truncating toward zero, as C does. */
void sc_reduce_finish_avg(sc_dtype_t dtype, void *buf, size_t count, int nranks);

/* Scalar conversions, as collectives/cast_spec.h defines them: round to nearest even
 * (subnormals included), overflow to Inf, Inf kept, NaN kept as a quiet NaN with its
 * sign and the payload bits that fit (as F16C's vcvtph2ps/vcvtps2ph do). Thread safe. */
float sc_half_to_float(uint16_t h);
uint16_t sc_float_to_half(float f);
float sc_bfloat16_to_float(uint16_t b);
uint16_t sc_float_to_bfloat16(float f);

#endif
