/* What a failed op leaves in flight with the peers of this node, settled without
 * closing the connections that every communicator of the transport shares: its
 * transfers UCX could not cancel, waited for before its request completes, and the
 * messages those peers sent for calls that no call of this rank will take (a broken
 * communicator's failed calls, the collectives a peer that destroyed it never joins,
 * everything of a communicator this rank destroyed), received into scratch and
 * dropped, which completes their transfers in turn. (A remote peer's
 * connection is closed at once, as before: sc_op_cancel_finish; but for a peer that
 * destroyed the communicator, which lives on and drops them, SC_SETTLE_ALL.) */
#ifndef SC_CORE_PROGRESS_SETTLE_H
#define SC_CORE_PROGRESS_SETTLE_H

#include "collectives/schedule.h"
#include "core/comm_internal.h"

/* How long a failed op waits for its transfers in flight before it closes the
 * connections they use (at most the communicator's timeout): its peers' calls fail too
 * as the abort notice arrives, and they drop its messages. */
#define SC_OP_SETTLE_S 5.0

/* Whether a failure with status leaves the peers alive: not a timeout nor a dead peer.
 * (A peer that destroyed the communicator is alive too, though its peers' calls fail
 * with SC_ERR_PEER_FAILED: sc_progress_fail_stranded.) */
static inline int sc_settle_peers_alive(sc_status_t status)
{
    return status != SC_ERR_TIMEOUT && status != SC_ERR_PEER_FAILED;
}

/* Fails the ops of the list ops (linked by next, out of their communicator's queues)
 * with status and text: every op's transfers are cancelled first, then waited for
 * against one deadline (SC_UCX_CANCEL_WAIT_S in all, however many ops a peer that takes
 * nothing holds: each waited that long in turn, under tp->lock, 9 s for an abort with
 * 200 sends pending to a stopped rank), and those still in flight with a peer of this
 * node, where the peers are alive (alive: SC_SETTLE_LOCAL), or with any peer
 * (SC_SETTLE_ALL), are waited for before their requests complete. Caller holds
 * tp->lock. */
void sc_settle_fail_ops(sc_comm_t *comm, sc_coll_op_t *ops, sc_status_t status,
                        const char *text, int alive);

/* Completes the failed ops whose transfers are done; one past its deadline, or whose
 * peer failed, closes the connection to the peers of those still in flight (as
 * sc_op_cancel_finish without settle; those of one call waited for once, together).
 * Then drops what arrived for the broken communicators' failed calls. Nonzero when
 * something finished or was dropped. Caller holds tp->lock. */
int sc_settle_poll(sc_transport_t *tp);

/* Whether an op of comm still settles. Caller holds tp->lock. */
int sc_settle_pending(const sc_transport_t *tp, const sc_comm_t *comm);

/* Gives up on comm's settling ops at once (its teardown; their transfers waited for
 * once, together). Caller holds tp->lock. */
void sc_settle_end_comm(sc_transport_t *tp, sc_comm_t *comm);

/* From now on, messages of context id ctx for the collectives numbered from seq on
 * (every one when seq is 0), and with p2p for every send and receive too, are dropped
 * as they arrive: no call of ctx's communicator takes them (it broke there, a peer that
 * destroyed it will never join them, or this rank destroyed it). From the peers of this
 * node, and with remote from every peer (a destroy's: its senders settle remote
 * transfers too, SC_SETTLE_ALL). For 10 s after the last call or the last message
 * dropped (the peers have given up on their transfers by then). The next progress
 * step scans, dropping what already waits. Caller holds tp->lock. */
void sc_settle_drain_from(sc_transport_t *tp, uint32_t ctx, uint64_t seq, int p2p,
                          int remote);

/* Stops dropping the messages of ctx: a new communicator takes the id. Caller holds
 * tp->lock. */
void sc_settle_drain_end(sc_transport_t *tp, uint32_t ctx);

/* Frees the transport's list of drained ids (its teardown). */
void sc_settle_free(sc_transport_t *tp);

#endif
