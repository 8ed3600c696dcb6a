/* Helpers shared by the algorithms: block and chunk arithmetic. */
#ifndef SC_COLLECTIVES_ALGO_COMMON_H
#define SC_COLLECTIVES_ALGO_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "collectives/schedule.h"
#include "core/comm_internal.h"
#include "core/tuning.h"

/* Start of block b when count elements are split into n nearly equal blocks. */
static inline size_t sc_block_start(size_t count, int n, int b)
{
    return (size_t)(((unsigned __int128)count * (unsigned)b) / (unsigned)n);
}

/* Elements per pipeline chunk for dtype size es. */
static inline size_t sc_chunk_elems(size_t es)
{
    const sc_tuning_t *t = NULL;
    size_t bytes = (sc_tuning_get(&t) == SC_SUCCESS) ? t->chunk_bytes : 262144;
    size_t n = bytes / es;
    return n ? n : 1;
}

static inline size_t sc_min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Elements per pipeline chunk of a block of at most block elements: no more than the
 * block holds, so that the scratch a pipeline sizes by its chunk stays that of the data
 * (SC_CHUNK_BYTES=4G made a 1-element reduce-scatter ask for 32 GiB of scratch). */
static inline size_t sc_chunk_elems_in(size_t es, size_t block)
{
    return sc_min_size(sc_chunk_elems(es), block > 0 ? block : 1);
}

static inline int sc_mod(int a, int n)
{
    return ((a % n) + n) % n;
}

#define SC_BYTES(p) ((uint8_t *)(p))
#define SC_CBYTES(p) ((const uint8_t *)(p))

#endif
