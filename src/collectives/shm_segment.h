/* Registered host memory (sc_mem_alloc): segments that UCX allocates in shared memory
 * and that every rank of the communicator maps from every other on the same node
 * (ucp_rkey_ptr), so that a collective reads the peers' buffers in place. */
#ifndef SC_COLLECTIVES_SHM_SEGMENT_H
#define SC_COLLECTIVES_SHM_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

struct sc_comm;

/* One buffer of a call as the peers see it: the segment that holds it and its offset
 * there (the same on every rank). seg is NULL for a buffer outside any shared
 * segment. */
typedef struct {
    const struct sc_shm_seg *seg;
    uint64_t off;
} sc_shm_ref_t;

/* Finds the shared segment that holds [p, p + bytes): *ref gets it and p's offset, or
 * seg NULL when none does (or the segment is not mapped by every rank). */
void sc_shm_lookup(struct sc_comm *comm, const void *p, size_t bytes, sc_shm_ref_t *ref);

/* The segment's id, equal on every rank (segments are allocated collectively). */
uint32_t sc_shm_id(const struct sc_shm_seg *seg);

/* Where rank q's copy of ref (offset plus delta bytes) is mapped in this process. */
void *sc_shm_peer_ptr(const sc_shm_ref_t *ref, int q, uint64_t delta);

/* Releases every segment of comm (sc_comm_destroy), before its endpoints close. */
void sc_shm_destroy_all(struct sc_comm *comm);

#endif
