/* What bench/allreduce_gap.c and its MPI peer (compare/mpi_allreduce_gap.c) share: the
 * gaps before a timed all-reduce, their order, the command line and the table, so that
 * both measure and print the same thing. Header-only: the MPI peer links no shardcomm.
 *
 * Each round runs every gap once, in turn, and times one all-reduce after it; the
 * rounds interleave the gaps, so a slow spell of a shared machine falls on all of them
 * alike and their ratios to back-to-back calls stay comparable. */
#ifndef SC_BENCH_ALLREDUCE_GAP_COMMON_H
#define SC_BENCH_ALLREDUCE_GAP_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_time.h"

/* What comes before the timed call: nothing, a barrier, a barrier and then compute (a
 * sleep: a GPU computing, the CPU idle; a spin: the CPU computing). */
typedef enum {
    GAP_NONE,
    GAP_BARRIER,
    GAP_SLEEP_100US,
    GAP_SLEEP_1MS,
    GAP_SPIN_1MS,
    GAP_COUNT
} gap_kind_t;

static const char *const gap_names[GAP_COUNT] = {
    "back to back", "barrier", "barrier + sleep 0.1 ms", "barrier + sleep 1 ms",
    "barrier + spin 1 ms"};

typedef struct {
    size_t count; /* float32 elements per rank */
    int rounds;
} gap_options_t;

/* usage: PROG [COUNT [ROUNDS]], defaults 1048576 (4 MiB of float32) and 300. 0 on
 * success; prints the sentence and returns -1 on a bad argument. */
static inline int gap_parse(const char *prog, int argc, char **argv, gap_options_t *o)
{
    char *end;

    o->count = 1u << 20;
    o->rounds = 300;
    if (argc > 3) {
        fprintf(stderr, "usage: %s [COUNT [ROUNDS]]\n", prog);
        return -1;
    }
    if (argc > 1) {
        unsigned long long v = strtoull(argv[1], &end, 10);
        if (*end || end == argv[1] || v == 0 || v > (1ull << 32)) {
            fprintf(stderr, "%s: COUNT '%s' must be an integer from 1 to 2^32\n", prog,
                    argv[1]);
            return -1;
        }
        o->count = (size_t)v;
    }
    if (argc > 2) {
        long v = strtol(argv[2], &end, 10);
        if (*end || end == argv[2] || v < 4 || v > 1000000) {
            fprintf(stderr, "%s: ROUNDS '%s' must be an integer from 4 to 1000000\n", prog,
                    argv[2]);
            return -1;
        }
        o->rounds = (int)v;
    }
    return 0;
}

/* The compute part of gap (after its barrier, which the caller issues). */
static inline void gap_compute(gap_kind_t gap)
{
    struct timespec d = {0, 0};
    double until;

    switch (gap) {
    case GAP_SLEEP_100US:
        d.tv_nsec = 100000;
        nanosleep(&d, NULL);
        break;
    case GAP_SLEEP_1MS:
        d.tv_nsec = 1000000;
        nanosleep(&d, NULL);
        break;
    case GAP_SPIN_1MS:
        until = bench_now_s() + 1e-3;
        while (bench_now_s() < until)
            ;
        break;
    default:
        break;
    }
}

/* One library's calls: its barrier and its all-reduce of the program's buffers, each
 * nonzero on failure (with the sentence printed). */
typedef struct {
    void *ctx;
    int (*barrier)(void *ctx);
    int (*allreduce)(void *ctx);
} gap_ops_t;

/* 20 warm-up calls, then o->rounds rounds of every gap, each followed by one timed
 * all-reduce: t[gap * rounds + round], seconds. Nonzero on a failed call. */
static inline int gap_run(const gap_options_t *o, const gap_ops_t *ops, double *t)
{
    for (int i = 0; i < 20; i++)
        if (ops->allreduce(ops->ctx))
            return 1;
    for (int i = 0; i < o->rounds; i++) {
        for (int g = 0; g < GAP_COUNT; g++) {
            double t0;

            if (g != GAP_NONE && ops->barrier(ops->ctx))
                return 1;
            gap_compute((gap_kind_t)g);
            t0 = bench_now_s();
            if (ops->allreduce(ops->ctx))
                return 1;
            t[(size_t)g * (size_t)o->rounds + (size_t)i] = bench_now_s() - t0;
        }
    }
    return 0;
}

/* Input of rank r: every element r + 1, so that the sum over size ranks is exact. */
static inline void gap_fill(float *in, size_t count, int rank)
{
    for (size_t i = 0; i < count; i++)
        in[i] = (float)(rank + 1);
}

/* 0 when every element of out is the sum of size ranks' inputs; else prints the first
 * wrong one (prog, rank) and returns -1. */
static inline int gap_check(const char *prog, int rank, int size, const float *out,
                            size_t count)
{
    float want = (float)size * (float)(size + 1) / 2;

    for (size_t i = 0; i < count; i++) {
        if (out[i] != want) {
            fprintf(stderr, "%s: rank %d: element %zu is %g\n", prog, rank, i,
                    (double)out[i]);
            return -1;
        }
    }
    return 0;
}

/* Sorts each gap's times (t[gap * rounds + i], seconds) and prints one row per gap:
 * quartiles in microseconds, and the median's ratio to back-to-back calls. */
static inline void gap_print(const char *who, const gap_options_t *o, int nranks,
                             double *t)
{
    int n = o->rounds;
    double base;

    for (int g = 0; g < GAP_COUNT; g++)
        qsort(t + (size_t)g * n, (size_t)n, sizeof(double), bench_cmp_double);
    base = t[n / 2];
    printf("# %s: allreduce of %zu float32 (%zu bytes), sum, %d ranks, %d rounds, rank 0's "
           "times\n", who, o->count, o->count * 4, nranks, n);
    printf("# %-24s %10s %10s %10s %14s\n", "before the call", "p25_us", "median_us",
           "p75_us", "median/b2b");
    for (int g = 0; g < GAP_COUNT; g++) {
        const double *s = t + (size_t)g * n;
        printf("  %-24s %10.1f %10.1f %10.1f %14.2f\n", gap_names[g], 1e6 * s[n / 4],
               1e6 * s[n / 2], 1e6 * s[3 * n / 4], s[n / 2] / base);
    }
}

#endif
