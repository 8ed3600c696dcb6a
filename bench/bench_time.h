/* Timing helpers of every benchmark program (sc-bench and its modes, allreduce_gap and
 * its MPI peer, sc-interleaved, p2p_inflight, kernels_bench): a monotonic clock in
 * seconds and an ordering of doubles for qsort. Header-only, so that the MPI peers link
 * no shardcomm. */
#ifndef SC_BENCH_TIME_H
#define SC_BENCH_TIME_H

#include <time.h>

static inline double bench_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* qsort's comparison of two doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#endif
