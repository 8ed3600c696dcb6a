/* Sizes on the command line of the MPI peers (bench/compare/), read as sc-bench reads
 * them: digits with an optional K/M/G suffix (1K = 1024). Header-only: the peers link
 * no shardcomm. */
#ifndef SC_BENCH_COMPARE_SIZE_PARSE_H
#define SC_BENCH_COMPARE_SIZE_PARSE_H

#include <stdlib.h>

/* *bytes = text's size; -1 (nothing written) for text that is not one, or 0. */
static inline int compare_size_parse(const char *text, size_t *bytes)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    int shift = 0;

    if (end == text)
        return -1;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (*end != '\0' || v == 0)
        return -1;
    *bytes = (size_t)v << shift;
    return 0;
}

#endif
