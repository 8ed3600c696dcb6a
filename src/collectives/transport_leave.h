/* A peer that left (transport_leave.c): each transport tells its peers as it closes, so
 * that their failures with it say it left instead of UCX's verdict on the connection. */
#ifndef SC_COLLECTIVES_TRANSPORT_LEAVE_H
#define SC_COLLECTIVES_TRANSPORT_LEAVE_H

#include "core/comm_internal.h"

/* Posts the receive of the peers' messages (once the endpoints exist). A peer's message
 * sets its failure (tp->peer_error) to "rank R left: ...", replacing what UCX or the pid
 * check said of it. Caller holds tp->lock, or is alone on tp. */
void sc_leave_listen(sc_transport_t *tp);

/* Tells every peer not known to have failed (nor stopped) that this rank leaves; the
 * endpoints' flushing close delivers it. At the transport's close, before its endpoints
 * close. */
void sc_leave_tell(sc_transport_t *tp);

/* Cancels the receive (progressing the worker until deadline at most). At the
 * transport's close, after its endpoints closed. */
void sc_leave_stop(sc_transport_t *tp, double deadline);

#endif
