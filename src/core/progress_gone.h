/* A communicator destroyed on one rank while its peers go on: sc_comm_destroy tells
 * them after which collective and which sends and receives it left, and a peer fails
 * at once every pending and later call that rank never joined, naming it, where it
 * waited SC_TIMEOUT for it (progress_gone.c). */
#ifndef SC_CORE_PROGRESS_GONE_H
#define SC_CORE_PROGRESS_GONE_H

#include "core/comm_internal.h"

/* What a peer that destroyed the communicator had done with this rank. */
typedef struct sc_comm_gone {
    int gone;           /* it destroyed the communicator */
    uint64_t sends;     /* the sends to this rank it issued (all completed there) */
    uint64_t recvs;     /* the receives from this rank it issued */
} sc_comm_gone_t;

/* How long sc_comm_destroy waits, at most, for its notices to leave (a peer's dead
 * endpoint must not hold it): the detach then cancels what is still queued. */
#define SC_GONE_NOTICE_WAIT_S 0.5

/* This rank destroys comm, whose ops are all done (drained): tells every peer, best
 * effort, the next collective's number and the sends and receives it issued with that
 * peer, and waits until the notices left (at most SC_GONE_NOTICE_WAIT_S). Nothing on a
 * communicator of one rank, nor to a peer that destroyed it first. Takes tp->lock. */
void sc_progress_tell_gone(sc_comm_t *comm);

/* A peer's notice that it destroyed comm: comm fails with SC_ERR_PEER_FAILED and a
 * sentence naming it, from the first collective it never joined on (those before go
 * on), and so do the sends to it and receives from it past those it issued; the others
 * go on while nothing else failed comm. Caller holds tp->lock. */
void sc_progress_gone_notice(sc_comm_t *comm, const sc_ctl_msg_t *msg);

/* Nonzero when a point-to-point call of kind with peer numbered seq goes on although
 * comm is broken: only destroy notices broke it, and that peer did not destroy comm or
 * did after completing its part of the call. Caller holds tp->lock. */
int sc_progress_gone_spares(const sc_comm_t *comm, sc_coll_kind_t kind, int peer,
                            uint64_t seq);

/* Frees the record of peers gone. Caller holds tp->lock. */
void sc_progress_gone_free(sc_comm_t *comm);

#endif
