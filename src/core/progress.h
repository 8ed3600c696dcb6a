/* The progress engine: runs every communicator's operations in issue order, driven by
 * a background thread and by callers waiting on requests. */
#ifndef SC_CORE_PROGRESS_H
#define SC_CORE_PROGRESS_H

#include "core/comm_internal.h"

sc_status_t sc_progress_start(sc_transport_t *tp);
void sc_progress_stop(sc_transport_t *tp);

/* At the library's unload (dlclose, exit) with tp's communicators live and aborted: ends
 * the progress thread, whose code goes away with the library, then tells every peer that
 * this rank left (transport_leave.h; and in its mailboxes, which a stopped neighbour reads
 * once continued), driving the worker on the calling thread until the messages to the
 * peers that run left or timeout_s passed, then gives up on the aborted calls that still settle
 * (their requests complete; the connections of their transfers in flight close). The
 * transport stays usable by callers (they drive it themselves) and by its later
 * teardown. Once per transport, not per communicator: the splits of a world share it. */
void sc_progress_unload(sc_transport_t *tp, double timeout_s);

/* At the library's unload, for a transport whose lock it could not take (another thread
 * holds it: a signal handler that exits or unloads inside the library), so that its
 * communicators stay as they were: ends the progress thread all the same (it looks at its
 * stop flag every 0.1 s while it waits for that lock), joined by until at the latest,
 * since its code goes away with the library. Nothing else: no leaving message (that
 * needs the lock), no abort. */
void sc_progress_unload_locked_out(sc_transport_t *tp, const struct timespec *until);

/* At dlclose (ctypes unloading the library) and at exit, once the library's own threads
 * ended (sc_registry_unload): the key that gives a waiting thread's slot back at its exit
 * is deleted, since its destructor is this library's code and a thread that waited may
 * exit after the library is unmapped (SIGSEGV). Deleting it calls no destructor, and the
 * slots go with the library. A destructor of its own ran before the unload ended the
 * threads, and read whether the key existed as a finisher's first sc_wait created it
 * (a data race, ThreadSanitizer). */
void sc_progress_wait_unload(void);

/* Queues op (ownership passes to the engine) and starts it when it is first in line.
 * req receives the final status. caller_waits: the caller is about to sc_wait on req
 * and will drive progress itself, so the progress thread is not woken, and its
 * mailboxes' sleeping marks are taken (progress.c); where req is done here already
 * (refused, or its neighbours' headers were in), the thread is woken for the ops still
 * queued, as sc_wait would at its end. */
void sc_progress_enqueue(sc_comm_t *comm, sc_coll_op_t *op, struct sc_request *req,
                         int caller_waits);

/* Completes op's request with status and text (NULL on success) and frees op: it left
 * the engine's queues, and no transfer of it is in flight but those
 * sc_op_cancel_finish gave up on. Caller holds tp->lock. */
void sc_progress_finish_op(sc_comm_t *comm, sc_coll_op_t *op, sc_status_t status,
                           const char *text);

/* Makes the engine look at every op soon (a start condition changed outside UCX).
 * Any thread; takes no lock, makes no CUDA call. */
void sc_progress_kick(sc_transport_t *tp);

/* Waits for req without driving progress (the progress thread drives): for threads
 * that must not take tp->lock, such as a CUDA host function. */
void sc_request_wait_passive(struct sc_request *req);

/* Control messages (progress_ctl.c). */

/* The tag of control messages to comm's rank from world rank world_src: abort notices,
 * refusal notices, and wake-ups for a rank that sleeps while its mailbox fills (status
 * SC_SUCCESS). */
uint64_t sc_progress_ctl_tag(const sc_comm_t *comm, int world_src);

/* Posts the receive of control messages for a new communicator. Caller holds
 * tp->lock. */
sc_status_t sc_progress_attach(sc_comm_t *comm);

/* Cancels the control-message receive and the notices in flight, all of them first,
 * then waits for them once (SC_UCX_CANCEL_WAIT_S in all, however many are pending to
 * peers that take nothing). Caller holds tp->lock. */
void sc_progress_detach(sc_comm_t *comm);

/* Sends every peer a notice (best effort: a peer that is gone cannot be told): an abort
 * (refused 0: the communicator failed with status and text at collective seq, 0: all),
 * a refusal (SC_CTL_REFUSED: this rank refused its part of collective seq, text says
 * why) or a re-issue (SC_CTL_REISSUED: it issued collective seq after all). Caller
 * holds tp->lock. */
void sc_progress_notify(sc_comm_t *comm, sc_status_t status, uint64_t seq, int refused,
                        const char *text);

/* Sends peer (a comm rank other than this one) a refusal notice of this rank's send or
 * receive #seq to it (p2p SC_CTL_P2P_SEND or SC_CTL_P2P_RECV; refused SC_CTL_REFUSED
 * with text saying why, or SC_CTL_REISSUED). Caller holds tp->lock. */
void sc_progress_notify_p2p(sc_comm_t *comm, int peer, int refused, int p2p, uint64_t seq,
                            const char *text);

/* Sends every peer the notice that this rank's reducer number `number` was destroyed
 * between iterations, after ending `iters` synced ones (text says so: the peers' abort
 * names it), best effort (collectives/reducer_watch.h). Caller holds tp->lock. */
void sc_progress_notify_reducer_gone(sc_comm_t *comm, uint32_t number, uint64_t iters,
                                     const char *text);

/* Sends peer the notice that this rank destroyed comm: it joined the collectives
 * numbered below colls and issued sends and recvs with that peer (progress_gone.h),
 * best effort. Caller holds tp->lock. */
void sc_progress_notify_gone(sc_comm_t *comm, int peer, uint64_t colls, uint64_t sends,
                             uint64_t recvs);

/* Takes the control messages that arrived and releases the notices sent; nonzero when
 * one arrived. Caller holds tp->lock. */
int sc_progress_ctl(sc_comm_t *comm);

/* Marks comm broken (new calls are refused) and fails, with status and text, its queued
 * collectives numbered from seq on and every point-to-point op; tells peers when notify
 * is set. Collectives numbered below seq, issued before the failing one, go on: a peer
 * that found a mismatch at seq finished them, and its notice must not overtake their
 * last messages. seq 0 fails everything (an abort, a dead peer, a timeout). Caller
 * holds tp->lock. */
void sc_progress_fail_comm(sc_comm_t *comm, sc_status_t status, const char *text,
                           int notify, uint64_t seq);

/* The sends and receives with one peer that fail: the receives from it numbered from
 * recv_from on and the sends to it numbered from send_from on (both per peer and
 * direction, as sc_progress_enqueue numbers them). */
typedef struct {
    int peer;
    uint64_t recv_from;
    uint64_t send_from;
} sc_p2p_cut_t;

/* Fails with SC_ERR_PEER_FAILED and text, without marking comm broken (the calls that
 * do not need that peer go on), the queued calls a peer that destroyed comm will never
 * join: the collectives numbered from colls on and the sends and receives that cut
 * names (progress_gone.h). Their transfers settle (the peers are alive), and the
 * messages the others send for those collectives are dropped (progress_settle.h).
 * Caller holds tp->lock. */
void sc_progress_fail_stranded(sc_comm_t *comm, uint64_t colls, const sc_p2p_cut_t *cut,
                               const char *text);

/* Drives the engine until comm's control messages in flight left (their sends
 * completed) or wait only for peers that take nothing (sc_progress_ctl_held, looked at
 * every 10 ms), or wait_s passed. Takes tp->lock. */
void sc_progress_flush_ctl(sc_comm_t *comm, double wait_s);

/* Nonzero when comm's control messages still in flight all wait for peers of this node
 * that take nothing (stopped, exited: sc_ucx_peer_silent), none for one of another node
 * or one that runs: a message queued to a stopped peer (behind the sends that filled
 * its queue) leaves only when it runs again, which a destroy does not wait for. Reads
 * /proc once for each send still in flight. Caller holds tp->lock. */
int sc_progress_ctl_held(const sc_comm_t *comm);

/* Waits until no thread is inside sc_wait or sc_test on tp: the transport's teardown,
 * once every request on it is done. */
void sc_progress_wait_out(sc_transport_t *tp);

/* Waits until comm has no queued op, nor a failed one whose transfers settle. */
void sc_progress_drain(sc_comm_t *comm);

#endif
