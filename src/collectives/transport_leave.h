/* A peer that left (transport_leave.c): each transport tells its peers as it closes, or as
 * the library is unloaded with it live, so that their failures with it say it left
 * instead of UCX's verdict on the connection. */
#ifndef SC_COLLECTIVES_TRANSPORT_LEAVE_H
#define SC_COLLECTIVES_TRANSPORT_LEAVE_H

#include "core/comm_internal.h"

/* Posts the receive of the peers' messages (once the endpoints exist). A peer's message
 * sets its failure (tp->peer_error) to "rank R left: ...", replacing what UCX or the pid
 * check said of it. Caller holds tp->lock, or is alone on tp. */
void sc_leave_listen(sc_transport_t *tp);

/* Why a rank leaves: its transport closes (the last sc_comm_destroy), or the library is
 * unloaded (dlclose, exit) with it live. */
#define SC_LEAVE_DESTROYED 1u
#define SC_LEAVE_UNLOADED 2u

/* Tells every peer not known to have failed that this rank leaves, and why, once per
 * transport; the endpoints' flushing close delivers it, or the worker's progress until
 * sc_leave_sent. A stopped peer of this node is told only at the unload, and not waited
 * for: where its FIFO is full the message stays with this rank's worker, its endpoint
 * marked SC_EP_LEAVE_HELD (a later close does not flush it), and the mailboxes tell it
 * (sc_mbox_mark_left). At the transport's close, before its endpoints close; or at the
 * library's unload. Caller holds tp->lock, or is alone on tp. */
void sc_leave_tell(sc_transport_t *tp, uint32_t why);

/* Marks world rank r as having left (why: SC_LEAVE_*), as its message says, or its mark
 * in a shared mailbox (mailbox.h) where the message could not reach this rank. Caller
 * holds tp->lock. */
void sc_leave_note(sc_transport_t *tp, int r, uint32_t why);

/* Whether every message sc_leave_tell sent has left (releases those that did). Caller
 * holds tp->lock. */
int sc_leave_sent(sc_transport_t *tp);

/* Cancels the receive (progressing the worker until deadline at most). At the
 * transport's close, after its endpoints closed. */
void sc_leave_stop(sc_transport_t *tp, double deadline);

#endif
