/* Context ids: the 12-bit tag field that keeps apart the communicators of one transport
 * (comm_ctx.c). */
#ifndef SC_CORE_COMM_CTX_H
#define SC_CORE_COMM_CTX_H

#include <stdint.h>

#include "core/comm_internal.h"

/* The largest context id; 0 is the world communicator's. */
#define SC_CTX_MAX 0xfffu

/* Collective over comm: a context id for a new communicator that no live communicator
 * holds on any rank of comm, taken (held) on every rank, and its generation (0 for an id
 * no communicator had before; otherwise a number the ranks agree on, which the new
 * communicator's control tag and sequence numbers start from, so that what an earlier
 * holder of the id left in flight does not match its messages). Give it back with
 * sc_comm_ctx_release where no communicator takes it. */
sc_status_t sc_comm_ctx_agree(sc_comm_t *comm, uint32_t *ctx, uint32_t *gen);

/* Gives ctx back: no communicator of tp holds it any more. */
void sc_comm_ctx_release(sc_transport_t *tp, uint32_t ctx);

/* Whether a communicator of tp holds ctx. Caller holds tp->lock. */
int sc_comm_ctx_held(const sc_transport_t *tp, uint32_t ctx);

/* Starts c's sequence numbers at its generation (before its mailbox opens). */
void sc_comm_ctx_start(sc_comm_t *c, uint32_t ctx, uint32_t gen);

#endif
