/* Facts about dtypes that several layers ask inside the library. */
#ifndef SC_CORE_DTYPE_H
#define SC_CORE_DTYPE_H

#include "shardcomm/types.h"

/* 1 for the floating-point dtypes (float64 down to float8), which avg applies to. */
int sc_dtype_is_float(sc_dtype_t dtype);

/* 1 for the floating-point dtypes narrower than 32 bits (float16, bfloat16, float8),
 * whose avg multiplies every input by 1 / size before the sum, as NCCL's does, so that
 * a sum past the dtype's range still averages: float32 and float64 divide the sum. */
int sc_dtype_avg_premultiplies(sc_dtype_t dtype);

#endif
