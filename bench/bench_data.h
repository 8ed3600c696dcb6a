/* sc-bench's correctness check: inputs derived from (seed, rank, index), and each
 * rank's outputs compared with values it computes on its own, as nccl-tests does. */
#ifndef SC_BENCH_DATA_H
#define SC_BENCH_DATA_H

#include <stddef.h>
#include <stdint.h>
#include "bench_coll.h"

/* Writes this rank's inputs of the call, and a sentinel into every output element
 * that is not also an input, so that an output left unwritten is caught.
 *
 * Inputs are small integers, exactly representable in every dtype, chosen so that
 * any order of reduction gives the exact result: sum/avg in [-2, 2], prod in
 * {-1, 1} with one factor 2 per element, min/max and data movement in [-100, 100]
 * (non-negative ranges for uint8). Integer sums and products wrap as the API says;
 * float16 sums are exact up to 1024 ranks, bfloat16 up to 128. */
void sc_bench_data_fill(const sc_bench_call_t *call, uint64_t seed);

/* Number of wrong elements among this rank's outputs after the call completed:
 * the result elements, and for reduce on a non-root rank the receive buffer, which
 * must be left untouched. avg is compared with a tolerance of about one ulp of the
 * dtype, everything else exactly. */
size_t sc_bench_data_check(const sc_bench_call_t *call, uint64_t seed);

/* splitmix64's finalizer: consecutive indices give unrelated values. */
uint64_t sc_bench_mix(uint64_t x);

#endif
