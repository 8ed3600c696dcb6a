/* What bench/p2p_inflight.c and its MPI peer (compare/mpi_p2p_inflight.c) share: the
 * values sent, their check, the message counts of the command line and the output, so
 * that both measure and print the same thing. Header-only: the MPI peer links no
 * shardcomm. */
#ifndef SC_BENCH_P2P_INFLIGHT_COMMON_H
#define SC_BENCH_P2P_INFLIGHT_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#define P2P_DEFAULT_COUNTS 3
static const char *const p2p_default_counts[P2P_DEFAULT_COUNTS] = {"1000", "10000",
                                                                    "100000"};

/* The partner of rank: rank ^ 1, or -1 for an odd last rank. */
static inline int p2p_partner(int rank, int size)
{
    return (rank ^ 1) < size ? rank ^ 1 : -1;
}

static inline float p2p_value(int rank, int i)
{
    return (float)(rank * 1000003 + i);
}

static inline void p2p_fill(float *out, int rank, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = p2p_value(rank, i);
}

/* The number of values in in[0..n) that are not what peer sent; prog names the
 * program in the sentence printed when there are some. */
static inline int p2p_count_wrong(const char *prog, const float *in, int peer, int n)
{
    int bad = 0;

    for (int i = 0; i < n; i++)
        bad += in[i] != p2p_value(peer, i);
    if (bad)
        fprintf(stderr, "%s: %d of %d values wrong\n", prog, bad, n);
    return bad;
}

/* The k-th message count of the command line (or of the defaults); 0 with a sentence
 * on rank 0 when it is not one. */
static inline long p2p_count_arg(const char *prog, int argc, char **argv, int k, int rank)
{
    const char *arg = argc > 1 ? argv[k + 1] : p2p_default_counts[k];
    char *end;
    long n = strtol(arg, &end, 10);

    if (*end || n < 1 || n > 100000000) {
        if (rank == 0)
            fprintf(stderr, "%s: '%s' is not a message count (1..1e8)\n", prog, arg);
        return 0;
    }
    return n;
}

static inline void p2p_print_header(void)
{
    printf("# %8s %12s %14s\n", "messages", "seconds", "us_per_pair");
}

static inline void p2p_print_row(long n, double seconds)
{
    printf("  %8ld %12.3f %14.2f\n", n, seconds, seconds / (double)n * 1e6);
}

#endif
