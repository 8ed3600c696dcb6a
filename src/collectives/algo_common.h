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

/* The tag's sub-indices: the most chunks one transfer between a pair of ranks in one op
 * is cut into. */
#define SC_MSG_MAX_CHUNKS 65536u

/* Bytes per chunk of a transfer of bytes (elements of size es) that travels as chunks,
 * each a message of its own (a point-to-point message, an all-to-all block):
 * SC_CHUNK_BYTES, grown so that there are at most SC_MSG_MAX_CHUNKS. The engine then sees
 * the transfer move chunk by chunk, so a long one does not time out while its bytes move
 * (SC_TIMEOUT counts from the last message that completed). Both sides cut the same
 * chunks from the count their headers compare. */
static inline size_t sc_msg_chunk_bytes(size_t bytes, size_t es)
{
    size_t chunk = sc_chunk_elems(es) * es;

    if (bytes / chunk >= SC_MSG_MAX_CHUNKS)
        chunk = (bytes / SC_MSG_MAX_CHUNKS / es + 1) * es;
    return chunk;
}

/* How many chunks of chunk bytes such a transfer of bytes takes; an empty one is still
 * one (empty) message. */
static inline size_t sc_msg_chunks(size_t bytes, size_t chunk)
{
    return bytes ? (bytes + chunk - 1) / chunk : 1;
}

/* The length of chunk c of such a transfer (at offset c * chunk): chunk bytes, the last
 * one what is left. */
static inline size_t sc_msg_chunk_len(size_t bytes, size_t chunk, size_t c)
{
    return sc_min_size(chunk, bytes - c * chunk);
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
