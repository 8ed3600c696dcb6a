/* Executing a schedule: called by the progress engine with the transport lock held. */
#ifndef SC_COLLECTIVES_SCHEDULE_EXEC_H
#define SC_COLLECTIVES_SCHEDULE_EXEC_H

#include "collectives/schedule.h"

/* Starts what can start and polls what is running. SC_IN_PROGRESS while unfinished,
 * SC_SUCCESS when complete, else the error (with its sentence set on the calling
 * thread). *moved (0 on entry) is set when something moved; an op fails with
 * SC_ERR_TIMEOUT when nothing of it moved for the communicator's timeout. */
sc_status_t sc_op_advance(sc_coll_op_t *op, int *moved);

/* What sc_op_cancel_finish keeps in flight to settle: the transfers with the peers of
 * this node (the peers are alive: a mismatch, a refusal, an abort), or with every peer
 * (a peer destroyed the communicator and lives on, dropping what this rank sent it). */
#define SC_SETTLE_LOCAL 1
#define SC_SETTLE_ALL 2

/* Cancels the op's outstanding transfers after a failure: start, then finish, which
 * waits for them until deadline (sc_clock_now; SC_UCX_CANCEL_WAIT_S from the start).
 * For many ops: start every op's cancel, then finish each against one shared deadline,
 * so that ops a peer does not progress cost that wait once, not once each. A transfer
 * left in flight (UCX cannot cancel a rendezvous under way, nor a send queued to a
 * peer that takes nothing) with a peer of this node (shared memory:
 * sc_ucx_peer_local), or with any peer where settle is SC_SETTLE_ALL, is kept on the
 * op when settle is set: 1 is returned, and
 * sc_op_settled tells when they are done (the peer finishes them, or drops what it
 * will never receive: progress_settle.h), so that the connection every communicator of
 * the transport shares stays open; sc_op_cancel_finish again without settle gives up
 * on them. Without settle, such a transfer closes the connection to its peer and keeps
 * the op's memory until the worker is destroyed (op->stuck, sc_op_abandon); 0 is
 * returned. */
void sc_op_cancel_start(sc_coll_op_t *op);
int sc_op_cancel_finish(sc_coll_op_t *op, int settle, double deadline);

/* Whether the transfers sc_op_cancel_finish left in flight are done: 1 when all are
 * (their requests freed), 0 while some move, -1 when the peer of one failed. Does not
 * progress the worker. */
int sc_op_settled(sc_coll_op_t *op);

#endif
