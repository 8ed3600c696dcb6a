/* Registered host memory (sc_mem_alloc): segments that UCX allocates in shared memory
 * and that every rank of the communicator maps from every other on the same node
 * (ucp_rkey_ptr), so that a collective reads the peers' buffers in place. */
#ifndef SC_COLLECTIVES_SHM_SEGMENT_H
#define SC_COLLECTIVES_SHM_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "shardcomm/status.h"

struct sc_comm;
struct sc_transport;

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

/* A call that uses [p[i], p[i] + bytes[i]) (i = 0, 1: its send and receive buffer) of
 * memory from sc_mem_alloc on comm (shared or not) holds those segments until it is
 * done, so that sc_mem_free refuses them meanwhile instead of unmapping memory the call
 * still reads or writes: held[i] gets the segment, or NULL where p[i] lies in none (or
 * bytes[i] is 0). One lock for both. sc_shm_unhold (NULL is a no-op) takes no lock:
 * any thread, tp->lock held or not. */
void sc_shm_hold(struct sc_comm *comm, const void *const p[2], const size_t bytes[2],
                 struct sc_shm_seg *held[2]);
void sc_shm_unhold(struct sc_shm_seg *seg);

/* The segment's id, equal on every rank (segments are allocated collectively). */
uint32_t sc_shm_id(const struct sc_shm_seg *seg);

/* Where rank q's copy of ref (offset plus delta bytes) is mapped in this process. */
void *sc_shm_peer_ptr(const sc_shm_ref_t *ref, int q, uint64_t delta);

/* What a rank tells its peers of its copy of a segment so that they can map it: packed
 * remote keys travel in fixed records (UCX's are a few dozen bytes). */
#define SC_SHM_RKEY_MAX 224
typedef struct {
    uint64_t base;     /* the segment's address in its owner */
    uint64_t bytes;    /* its size: a peer maps only a segment of its own size */
    uint64_t rkey_len; /* 0: not packed (no shared mapping offered) */
    uint8_t rkey[SC_SHM_RKEY_MAX];
} sc_shm_record_t;

/* The opening of a segment in steps, for a caller that exchanges the records itself
 * (sc_comm_split, over the parent communicator). sc_shm_seg_local: this rank's copy
 * allocated for comm, its record packed (zeroed on failure, which peers then fail to
 * map). sc_shm_seg_map: every peer's copy mapped from all (indexed by comm rank);
 * nonzero when all are. sc_shm_seg_settle: shared or not, as every rank decided
 * alike. */
sc_status_t sc_shm_seg_local(struct sc_comm *comm, size_t bytes, const char *caller,
                             struct sc_shm_seg **seg, sc_shm_record_t *rec);
int sc_shm_seg_map(struct sc_comm *comm, struct sc_shm_seg *seg, const sc_shm_record_t *all);
void sc_shm_seg_settle(struct sc_comm *comm, struct sc_shm_seg *seg, int shared);

/* Collective over via, when comm has no collective yet, or none in flight (its
 * creation): the steps above with the records exchanged over via, which is comm itself
 * (sc_comm_init) or its parent (sc_comm_split, where comm is NULL on ranks that get
 * none), so that no rank of a new communicator waits for another in a collective of
 * it. *seg gets this rank's copy, of bytes (0: none wanted), where every rank of comm
 * maps every other's, else NULL, the same on every rank of comm. An error only when
 * via broke (or this rank ran out of memory, which aborts via). */
sc_status_t sc_shm_seg_open_over(struct sc_comm *via, struct sc_comm *comm, size_t bytes,
                                 const char *caller, struct sc_shm_seg **seg);

/* Where rank q's copy of seg starts in this process (shared segments). */
void *sc_shm_seg_peer(const struct sc_shm_seg *seg, int q);
/* Unmaps and frees a segment from sc_shm_seg_local that sc_mem_alloc did not list.
 * NULL is a no-op. */
void sc_shm_seg_release(struct sc_comm *comm, struct sc_shm_seg *seg);

/* Releases every segment of comm (sc_comm_destroy), before its endpoints close; one
 * that a call still holds (of another communicator of the transport, or a transfer
 * that could not be cancelled) is kept until no call holds it, then released by the
 * transport's next sc_mem_alloc, sc_mem_free or sc_comm_destroy, else with the
 * transport. */
void sc_shm_destroy_all(struct sc_comm *comm);

/* Releases the segments left on tp (sc_shm_destroy_all), once nothing progresses the
 * worker any more and before the endpoints and the context close. */
void sc_shm_destroy_kept(struct sc_transport *tp);

#endif
