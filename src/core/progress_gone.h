/* A communicator destroyed on one rank while its peers go on (a split, the process
 * living on): sc_comm_destroy tells them after which collective and which sends and
 * receives it left, and a peer fails at once every pending and later call that needs
 * that rank past them, naming it, where it waited SC_TIMEOUT for it; the communicator
 * itself does not fail, so calls that need no such rank go on (progress_gone.c). */
#ifndef SC_CORE_PROGRESS_GONE_H
#define SC_CORE_PROGRESS_GONE_H

#include <stddef.h>

#include "core/comm_internal.h"

/* What a peer that destroyed the communicator had done with this rank. */
typedef struct sc_comm_gone {
    int gone;           /* it destroyed the communicator */
    uint64_t colls;     /* the collectives it issued: it joins none numbered from here */
    uint64_t sends;     /* the sends to this rank it issued (all completed there) */
    uint64_t recvs;     /* the receives from this rank it issued */
} sc_comm_gone_t;

/* How long sc_comm_destroy waits, at most, for its notices to leave (a peer's dead
 * endpoint must not hold it): the detach then cancels what is still queued. */
#define SC_GONE_NOTICE_WAIT_S 0.5

/* This rank destroys comm, whose ops are all done (drained): tells every peer, best
 * effort, the next collective's number and the sends and receives it issued with that
 * peer, and waits until the notices (and any other control message of comm still in
 * flight: a reducer's destroy notice) left, at most SC_GONE_NOTICE_WAIT_S. No notice on
 * a communicator of one rank or a failed one (its peers were told), nor to a peer whose
 * notice came first (it no longer receives, and may have exited). Where a notice went,
 * what the peers still send on comm is dropped as it comes (progress_settle.h), so that
 * their transfers end without closing the connections. Takes tp->lock. */
void sc_progress_tell_gone(sc_comm_t *comm);

/* A peer's notice that it destroyed comm: the calls that need it past what it joined
 * fail with SC_ERR_PEER_FAILED and a sentence naming it, pending ones at once and later
 * ones as they are issued; comm is not marked failed. Caller holds tp->lock. */
void sc_progress_gone_notice(sc_comm_t *comm, const sc_ctl_msg_t *msg);

/* Nonzero, with the sentence in text, when op (numbered, not yet queued) needs a peer
 * that destroyed comm before joining it. Caller holds tp->lock. */
int sc_progress_gone_strands(const sc_comm_t *comm, const sc_coll_op_t *op, char *text,
                             size_t len);

/* Frees the record of peers gone. Caller holds tp->lock. */
void sc_progress_gone_free(sc_comm_t *comm);

#endif
