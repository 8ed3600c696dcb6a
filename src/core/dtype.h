/* Facts about dtypes that several layers ask inside the library. */
#ifndef SC_CORE_DTYPE_H
#define SC_CORE_DTYPE_H

#include "shardcomm/types.h"

/* 1 for the floating-point dtypes (float64 down to float8), which avg applies to. */
int sc_dtype_is_float(sc_dtype_t dtype);

#endif
