/* What a failed op leaves in flight (progress_settle.h): its transfers waited for, and
 * the messages peers sent for a broken communicator's failed calls dropped as they
 * come. UCX 1.13 cannot cancel a rendezvous send whose announcement the peer holds:
 * it completes only once the peer receives it, and closing the connection instead
 * failed every later call of the other communicators with that peer. */
#include <stdlib.h>
#include <string.h>

#include "collectives/schedule_exec.h"
#include "collectives/transport_ucx.h"
#include "core/clock.h"
#include "core/comm_ctx.h"
#include "core/progress.h"
#include "core/progress_settle.h"

/* A context id whose collectives numbered from `from` on (every one where from is 0),
 * and with p2p every send and receive, no call of this rank takes: drained until
 * `until`. */
struct sc_ctx_drain {
    uint32_t ctx;
    uint64_t from;
    int p2p;
    int remote; /* from the peers of other nodes too */
    double until;
};

/* How long a context id is drained after its communicator broke, or after the last
 * message dropped: the peers learn of the failure from the abort notice at once and
 * stop sending, and each gives up on its own transfers SC_OP_SETTLE_S after its call
 * failed; past that, a drain would only cost the scans a probe each (four a scan, one
 * per kind of message, cost 0.2 us of a 2-rank 8-byte allreduce's 0.5 us on the world
 * beside a drained split; one, as sc_settle_drain makes while nothing of the id waits,
 * nothing measurable). */
#define SC_SETTLE_DRAIN_S (2 * SC_OP_SETTLE_S)

/* The tag's 18 bits of sequence number: a message is of a failed call when its number
 * is within half their range from `from` onwards. */
#define SC_SETTLE_SEQ_HALF ((SC_TAG_SEQ_MASK + 1) / 2)

/* Messages dropped per scan and kind of message, at most. */
#define SC_SETTLE_DROPS 64

/* Fails op, its cancel started, with st and text: its transfers are waited for until
 * deadline, then those a peer of this node still holds (alive) until the op's settle
 * deadline. */
static void sc_settle_fail_one(sc_comm_t *c, sc_coll_op_t *op, sc_status_t st,
                               const char *text, int alive, double deadline)
{
    sc_transport_t *tp = c->tp;
    double wait = c->timeout_s < SC_OP_SETTLE_S ? c->timeout_s : SC_OP_SETTLE_S;

    if (!sc_op_cancel_finish(op, alive, deadline)) {
        sc_progress_finish_op(c, op, st, text);
        return;
    }
    op->settle_text = strdup(text ? text : "");
    if (!op->settle_text) {
        sc_op_cancel_finish(op, 0, deadline);
        sc_progress_finish_op(c, op, st, text);
        return;
    }
    op->settle_status = st;
    op->settle_deadline = sc_clock_coarse() + wait;
    op->next = tp->op_settling;
    tp->op_settling = op;
}

void sc_settle_fail_ops(sc_comm_t *c, sc_coll_op_t *ops, sc_status_t st, const char *text,
                        int alive)
{
    double deadline;

    for (sc_coll_op_t *op = ops; op; op = op->next)
        sc_op_cancel_start(op);
    deadline = sc_clock_now() + SC_UCX_CANCEL_WAIT_S;
    while (ops) {
        sc_coll_op_t *op = ops;

        ops = op->next;
        sc_settle_fail_one(c, op, st, text, alive, deadline);
    }
}

/* Completes op's request with the failure it waited to report. */
static void sc_settle_finish(sc_coll_op_t *op)
{
    char *text = op->settle_text;

    op->settle_text = NULL;
    sc_progress_finish_op(op->comm, op, op->settle_status, text);
    free(text);
}

/* Whether a message with tag is one of d's calls. Point-to-point messages and headers
 * (sub 1) all are where d drops them (a broken communicator fails every send and
 * receive), none where it does not (a peer that destroyed the communicator leaves the
 * others' sends and receives alone). */
static int sc_settle_dropped(const struct sc_ctx_drain *d, uint64_t tag)
{
    uint32_t kind = sc_tag_kind(tag), sub = sc_tag_sub(tag);
    uint64_t seq = sc_tag_seq(tag);

    if (kind == SC_TAG_KIND_P2P || (kind == SC_TAG_KIND_HDR && sub == 1))
        return d->p2p;
    if (d->from == 0)
        return 1;
    return ((seq - d->from) & SC_TAG_SEQ_MASK) < SC_SETTLE_SEQ_HALF;
}

/* Drops the unexpected messages matching (tag, mask) that are d's, from the first
 * one on: one of a call still running (a collective numbered before d->from) stops it
 * (UCX shows the first match only). */
static int sc_settle_drop(sc_transport_t *tp, const struct sc_ctx_drain *d, uint64_t tag,
                          uint64_t mask)
{
    uint64_t found;
    int n = 0;

    while (n < SC_SETTLE_DROPS && sc_ucx_unexpected(tp, tag, mask, &found) &&
           sc_settle_dropped(d, found) && sc_ucx_drop(tp, found, SC_TAG_FULL_MASK))
        n++;
    return n;
}

/* Drops found, a control message of a drained id that no communicator here holds any
 * more (a peer's destroy notice to a split this rank destroyed too, which nothing
 * receives): left, it would make every scan look through the id's messages. Not the
 * world's id: the transport's own message has its control tag (transport_leave.c).
 * Nonzero when it was. */
static int sc_settle_drop_notice(sc_transport_t *tp, uint64_t found)
{
    uint32_t ctx = sc_tag_ctx(found);

    return sc_tag_kind(found) == SC_TAG_KIND_CTL && ctx != 0 && !sc_comm_ctx_held(tp, ctx) &&
           sc_ucx_drop(tp, found, SC_TAG_FULL_MASK);
}

/* Drops what arrived for d's failed calls; nonzero when something was. One probe when
 * nothing of d's context id waits (the usual case). */
static int sc_settle_drain(sc_transport_t *tp, struct sc_ctx_drain *d, double now)
{
    uint64_t kind_mask = sc_tag_make(~0u, 3, 0, 0, 0);
    uint64_t sub_mask = sc_tag_make(~0u, 3, 0, 0xffff, 0);
    uint64_t id_tag = sc_tag_make(d->ctx, 0, 0, 0, 0), id_mask = sc_tag_make(~0u, 0, 0, 0, 0);
    uint64_t found;
    int dropped = 0;

    while (sc_ucx_unexpected(tp, id_tag, id_mask, &found) && sc_settle_drop_notice(tp, found))
        dropped = 1;
    if (!sc_ucx_unexpected(tp, id_tag, id_mask, &found))
        return dropped;
    /* Peers of this node only, but after a destroy: a remote one closes its connection
     * at once instead (sc_op_cancel_finish), and a rendezvous this rank took from it
     * would only be cut. */
    for (int w = 0; w < tp->world_size; w++) {
        uint32_t src = (uint32_t)w;
        if (!d->remote && !sc_ucx_peer_local(tp, w))
            continue;
        dropped |= sc_settle_drop(tp, d, sc_tag_make(d->ctx, SC_TAG_KIND_COLL, 0, 0, src),
                                  kind_mask | SC_TAG_SRC_MASK) |
                   sc_settle_drop(tp, d, sc_tag_make(d->ctx, SC_TAG_KIND_HDR, 0, 0, src),
                                  sub_mask | SC_TAG_SRC_MASK);
        if (d->p2p)
            dropped |=
                sc_settle_drop(tp, d, sc_tag_make(d->ctx, SC_TAG_KIND_P2P, 0, 0, src),
                               kind_mask | SC_TAG_SRC_MASK) |
                sc_settle_drop(tp, d, sc_tag_make(d->ctx, SC_TAG_KIND_HDR, 0, 1, src),
                               sub_mask | SC_TAG_SRC_MASK);
    }
    if (dropped)
        d->until = now + SC_SETTLE_DRAIN_S;
    return dropped;
}

/* The entry of drained id ctx, or NULL. */
static struct sc_ctx_drain *sc_settle_drain_of(sc_transport_t *tp, uint32_t ctx)
{
    for (int i = 0; i < tp->ndrains; i++)
        if (tp->drains[i].ctx == ctx)
            return &tp->drains[i];
    return NULL;
}

/* Drops, from the oldest message UCX holds unreceived (found) on, those of drained
 * ids (and what of the same id waits behind them: sc_settle_drain), until one of
 * another call shows. Nonzero when something was dropped. */
static int sc_settle_drain_oldest(sc_transport_t *tp, uint64_t found, double now)
{
    int moved = 0;

    for (int n = 0; n < SC_SETTLE_DROPS; n++) {
        struct sc_ctx_drain *d = sc_settle_drain_of(tp, sc_tag_ctx(found));
        uint64_t before = found;

        if (!d || !sc_settle_drain(tp, d, now))
            break;
        moved = 1;
        if (!sc_ucx_unexpected(tp, 0, 0, &found) || found == before)
            break;
    }
    return moved;
}

/* Drops what waits of the drained ids besides the oldest message's: every id while no
 * op of tp is queued, else one id in turn. An idle transport scans only as UCX events
 * come (the progress thread sleeps on them), once each: the message that came may be
 * of any id, behind an older one of a call not yet made (a send this rank receives
 * later), and with one id a scan the others' waited until their senders gave up
 * (SC_OP_SETTLE_S) and closed the connections. A busy one scans every 128 progress
 * steps at least, or every 20 ms, and reaches every id in turn. Nonzero when
 * something was dropped. */
static int sc_settle_drain_others(sc_transport_t *tp, double now)
{
    int moved = 0;

    if (__atomic_load_n(&tp->active, __ATOMIC_RELAXED) == 0) {
        for (int i = 0; i < tp->ndrains; i++)
            moved |= sc_settle_drain(tp, &tp->drains[i], now);
        return moved;
    }
    tp->drain_turn = (tp->drain_turn + 1) % tp->ndrains;
    return sc_settle_drain(tp, &tp->drains[tp->drain_turn], now);
}

int sc_settle_poll(sc_transport_t *tp)
{
    sc_coll_op_t **pp = &tp->op_settling;
    double now = sc_clock_coarse();
    double give_up_by = 0.0;
    uint64_t found;
    int moved = 0;

    /* Dropped first: the peers' transfers it completes may be what ours wait for. One
     * probe while UCX holds no message unreceived (the usual case), else the oldest
     * one's id and the others (sc_settle_drain_others), and the ids' ends looked at
     * once the first is due: each split that every rank destroys drains its id on some
     * of them for a while, and a scan through every id cost a 3-rank 8-byte allreduce on
     * the world 15 us -> 50-170 us after 200 splits were created and destroyed. */
    if (tp->ndrains > 0 && sc_ucx_unexpected(tp, 0, 0, &found)) {
        moved |= sc_settle_drain_oldest(tp, found, now);
        moved |= sc_settle_drain_others(tp, now);
    }
    if (tp->ndrains > 0 && now > tp->drains_end) {
        tp->drains_end = now + SC_SETTLE_DRAIN_S;
        for (int i = 0; i < tp->ndrains; i++) {
            if (now > tp->drains[i].until)
                tp->drains[i--] = tp->drains[--tp->ndrains];
            else if (tp->drains[i].until < tp->drains_end)
                tp->drains_end = tp->drains[i].until;
        }
    }
    moved |= sc_ucx_drops_poll(tp);
    moved |= sc_ucx_orphans_poll(tp);
    while (*pp) {
        sc_coll_op_t *op = *pp;
        int done = sc_op_settled(op);

        if (done == 0 && now < op->settle_deadline) {
            pp = &op->next;
            continue;
        }
        *pp = op->next;
        /* Those given up on in one pass wait for their transfers once, together: their
         * cancels started as they failed. */
        if (done != 1) {
            if (give_up_by == 0.0)
                give_up_by = sc_clock_now() + SC_UCX_CANCEL_WAIT_S;
            sc_op_cancel_finish(op, 0, give_up_by);
        }
        sc_settle_finish(op);
        moved = 1;
    }
    if (tp->op_settling)
        __atomic_store_n(&tp->rescan, 1, __ATOMIC_RELAXED);
    return moved;
}

int sc_settle_pending(const sc_transport_t *tp, const sc_comm_t *c)
{
    for (const sc_coll_op_t *op = tp->op_settling; op; op = op->next)
        if (op->comm == c)
            return 1;
    return 0;
}

void sc_settle_end_comm(sc_transport_t *tp, sc_comm_t *c)
{
    sc_coll_op_t **pp = &tp->op_settling;
    /* One wait for them all: their cancels started as they failed. */
    double deadline = sc_clock_now() + SC_UCX_CANCEL_WAIT_S;

    while (*pp) {
        sc_coll_op_t *op = *pp;
        if (op->comm != c) {
            pp = &op->next;
            continue;
        }
        *pp = op->next;
        sc_op_cancel_finish(op, 0, deadline);
        sc_settle_finish(op);
    }
}

void sc_settle_drain_from(sc_transport_t *tp, uint32_t ctx, uint64_t seq, int p2p,
                          int remote)
{
    double until = sc_clock_coarse() + SC_SETTLE_DRAIN_S;
    struct sc_ctx_drain *more;

    /* What of ctx already waits in UCX's queue (a peer's rendezvous announced before
     * this) came as events that earlier steps consumed, and no event comes for it
     * again: the next step scans (sc_settle_poll drops it), whoever takes it, the
     * caller's or an idle progress thread's. Without it the drop waited for a scan by
     * chance (a destroy's flush of its notices happened to end on one), the rank's next
     * call or UCX event: the sender's call failed only then, or after SC_OP_SETTLE_S. */
    __atomic_store_n(&tp->rescan, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < tp->ndrains; i++) {
        if (tp->drains[i].ctx == ctx) {
            if (seq < tp->drains[i].from)
                tp->drains[i].from = seq;
            tp->drains[i].p2p |= p2p;
            tp->drains[i].remote |= remote;
            tp->drains[i].until = until;
            return;
        }
    }
    more = realloc(tp->drains, (size_t)(tp->ndrains + 1) * sizeof(*more));
    if (!more)
        return; /* the peers' transfers then close their connections, as they did */
    tp->drains = more;
    tp->drains[tp->ndrains].ctx = ctx;
    tp->drains[tp->ndrains].from = seq;
    tp->drains[tp->ndrains].p2p = p2p;
    tp->drains[tp->ndrains].remote = remote;
    tp->drains[tp->ndrains].until = until;
    tp->ndrains++;
}

void sc_settle_drain_end(sc_transport_t *tp, uint32_t ctx)
{
    for (int i = 0; i < tp->ndrains; i++) {
        if (tp->drains[i].ctx == ctx) {
            tp->drains[i] = tp->drains[--tp->ndrains];
            return;
        }
    }
}

void sc_settle_free(sc_transport_t *tp)
{
    free(tp->drains);
    tp->drains = NULL;
    tp->ndrains = 0;
}
