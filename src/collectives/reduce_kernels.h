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

/* dst[i] = src[i] * scale (src == dst allowed) for float dtypes, in the dtype's
 * arithmetic (float32, and the scale as a float, for float32, float16, bfloat16 and
 * float8, rounded once); integers are copied (scale applies to floats only). For
 * float16, bfloat16 and float8 a finite product whose magnitude passes bound is bound
 * (its sign kept; Inf and NaN stay as they are, bound Inf changes nothing). The one
 * definition of a pre-division: by the reducer's factor (bound Inf; the scaled copy
 * into a bucket and the scaled reduction below compute the same bits), and by the size
 * in avg of the narrow floats (sc_dtype_avg_premultiplies; bound sc_avg_bound). */
void sc_scale_local(sc_dtype_t dtype, void *dst, const void *src, size_t count, double scale,
                    float bound);

/* avg's bound on each pre-scaled input of the narrow float dtype over size ranks (>= 2),
 * into *bound: the largest value of the dtype not above its largest finite value / size
 * such that every sum of size terms within it, rounded to the dtype at every step in
 * any order and grouping (as every algorithm reduces), is finite. Values below it keep
 * their bits. O(size^2) work the first time for a size (remembered per dtype after);
 * 0 when out of memory. Thread safe. */
int sc_avg_bound(sc_dtype_t dtype, int size, float *bound);

/* out[i] = A op B, where A is a[i] * scale when scale_a (else a[i]) and B is
 * b[i] * scale, each scaled (and bound) as sc_scale_local does (so bit for bit the
 * reduction of the scaled copies). out may alias a or b exactly. */
void sc_reduce_local_scaled(sc_op_t op, sc_dtype_t dtype, const void *a, int scale_a,
                            const void *b, void *out, size_t count, double scale, float bound);

/* buf[i] /= nranks (nranks >= 1) for float32 and float64 buffers (avg of those; the
 * narrow floats premultiply instead, sc_dtype_avg_premultiplies, and integers have no
 * avg): a true division, not a multiply by 1/nranks, so that it matches x / n computed
 * anywhere else; NaNs stay NaN (made quiet, sign and payload kept). */
void sc_reduce_finish_avg(sc_dtype_t dtype, void *buf, size_t count, int nranks);

/* sc_reduce_local (scale 0) or sc_reduce_local_scaled (scale_a, scale, bound as there), the
 * result written to out, and to out2 as well unless it is NULL, with non-temporal stores:
 * for results that no one reads again soon, the writes skip reading the destination's
 * lines first (a third less memory traffic for a large reduction) and leave the caches
 * to the inputs. Block by block through a cache-resident buffer; the same bits as the
 * plain calls. The stores are fenced before it returns, so that a flag or message that
 * follows is seen after them. */
void sc_reduce_local_streamed(sc_op_t op, sc_dtype_t dtype, const void *a, int scale_a,
                              const void *b, void *out, void *out2, size_t count,
                              double scale, float bound);

/* memcpy with non-temporal stores where dst is 16-byte aligned, fenced before it
 * returns, for copies that no one reads again soon (dst and src do not overlap). */
void sc_copy_streamed(void *dst, const void *src, size_t bytes);

/* Scalar conversions, as collectives/cast_spec.h defines them: round to nearest even
 * (subnormals included), overflow to Inf, Inf kept, NaN kept as a quiet NaN with its
 * sign and the payload bits that fit (as F16C's vcvtph2ps/vcvtps2ph do). Thread safe. */
float sc_half_to_float(uint16_t h);
uint16_t sc_float_to_half(float f);
float sc_bfloat16_to_float(uint16_t b);
uint16_t sc_float_to_bfloat16(float f);

#endif
