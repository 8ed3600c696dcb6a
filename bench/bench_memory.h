/* sc-bench's check, before it allocates, that the buffers a run asks for fit in this
 * machine's memory: beyond, the allocation succeeds (the kernel overcommits) and the
 * first touch of the pages gets the rank killed by the kernel, with no word of why. */
#ifndef SC_BENCH_MEMORY_H
#define SC_BENCH_MEMORY_H

#include <stddef.h>

/* Whether bytes_per_rank times local_ranks (the ranks of this node) fits in the
 * machine's physical memory. If not, prints "PROG: rank R: WHAT: N B per rank x L ranks
 * on this node is more than this machine's memory (M B)" to stderr and returns 0. */
int sc_bench_memory_fits(const char *prog, int rank, const char *what, size_t bytes_per_rank,
                         int local_ranks);

#endif
