/* Refusals: a rank that refused its part of a collective, or a send or receive, before
 * it was numbered (a bad argument there) tells the peers that wait for it, so that
 * their call fails within seconds naming it and its reason instead of waiting out
 * SC_TIMEOUT (progress_refusal.c). */
#ifndef SC_CORE_PROGRESS_REFUSAL_H
#define SC_CORE_PROGRESS_REFUSAL_H

#include "core/comm_internal.h"

/* This rank refused a call of kind `kind` (to or from peer, for a send or receive;
 * the calling thread's last error says why) before it was numbered: the peers that
 * wait for it are told (once per number; for a send or receive, peer alone), so that
 * the call they issued in its place (the same number) fails with that sentence
 * SC_REFUSAL_GRACE_S after it last moved, unless this rank issues one in its place
 * meanwhile (then they are told that too: a call issued again, or every rank's refusal
 * followed by another call, goes on). Nothing on a broken or one-rank communicator, nor
 * for a peer outside it. Takes tp->lock. */
void sc_progress_refused(sc_comm_t *comm, sc_coll_kind_t kind, int peer);

/* Marks op (just numbered) if a peer refused its part of that call; tells the peers
 * when this rank refused its own call of that number before. Caller holds tp->lock. */
void sc_progress_refusal_mark(sc_comm_t *comm, sc_coll_op_t *op);

/* The sentence of a refusal of op's call (its number, and for a send or receive its
 * peer), a peer's or this rank's, or NULL. Caller holds tp->lock. */
const char *sc_progress_refusal_text(const sc_comm_t *comm, const sc_coll_op_t *op);

/* The sentence of this rank's own refusal of collective #seq, or NULL. Caller holds
 * tp->lock. */
const char *sc_progress_own_refusal_text(const sc_comm_t *comm, uint64_t seq);

/* Takes a refusal notice from a peer (msg->refused nonzero; text, its sentence, ended).
 * Caller holds tp->lock. */
void sc_progress_refusal_notice(sc_comm_t *comm, const sc_ctl_msg_t *msg, const char *text);

/* Frees what the communicator keeps of sends and receives refused. Caller holds
 * tp->lock. */
void sc_progress_refusals_free(sc_comm_t *comm);

#endif
