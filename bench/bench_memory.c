/* The memory check of bench_memory.h. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "bench_memory.h"

int sc_bench_memory_fits(const char *prog, int rank, const char *what, size_t bytes_per_rank,
                         int local_ranks)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t phys, ranks = local_ranks > 0 ? (size_t)local_ranks : 1;

    if (pages <= 0 || page <= 0)
        return 1; /* unknown: let the allocation decide */
    phys = (size_t)pages * (size_t)page;
    if (bytes_per_rank <= phys / ranks)
        return 1;
    fprintf(stderr, "%s: rank %d: %s: %zu B per rank x %zu rank%s on this node is more than "
            "this machine's memory (%zu B)\n", prog, rank, what, bytes_per_rank, ranks,
            ranks == 1 ? "" : "s", phys);
    return 0;
}
