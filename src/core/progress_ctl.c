/* Control messages between the ranks of a communicator, beside its collectives:
 * abort notices (the communicator failed at a collective), refusal notices (a rank
 * refused its part of a collective before it began) and wake-ups (a neighbour wrote
 * into a sleeping rank's mailbox). */
#include <stdlib.h>
#include <string.h>

#include "collectives/schedule_exec.h"
#include "collectives/transport_ucx.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/progress.h"

/* Control messages taken per scan of a communicator, at most. */
#define SC_CTL_PER_SCAN 64

/* A message in flight to every peer: its buffer lives until each send is done. */
struct sc_ctl_out {
    struct sc_ctl_out *next;
    sc_ctl_msg_t msg;
    int nreqs;
    void *reqs[];
};

uint64_t sc_progress_ctl_tag(const sc_comm_t *c, int world_src)
{
    /* The generation in the sequence and sub-index fields: a notice for an earlier
     * communicator with this context id does not match (comm_ctx.c). */
    return sc_tag_make(c->ctx, SC_TAG_KIND_CTL, c->gen, c->gen >> 18, (uint32_t)world_src);
}

sc_status_t sc_progress_attach(sc_comm_t *c)
{
    if (c->size == 1)
        return SC_SUCCESS;
    return sc_ucx_recv(c->tp, sc_progress_ctl_tag(c, 0), ~SC_TAG_SRC_MASK, &c->ctl_in,
                       sizeof(c->ctl_in), &c->ctl_recv_req);
}

void sc_progress_detach(sc_comm_t *c)
{
    sc_ucx_cancel(c->tp, c->ctl_recv_req);
    c->ctl_recv_req = NULL;
    while (c->ctl_outs) {
        struct sc_ctl_out *o = c->ctl_outs;
        c->ctl_outs = o->next;
        for (int r = 0; r < o->nreqs; r++)
            sc_ucx_cancel(c->tp, o->reqs[r]);
        free(o);
    }
}

void sc_progress_notify(sc_comm_t *c, sc_status_t status, uint64_t seq, int refused,
                        const char *text)
{
    struct sc_ctl_out *o = calloc(1, sizeof(*o) + (size_t)c->size * sizeof(void *));

    if (!o)
        return; /* best effort: the peers fail by their timeout */
    o->nreqs = c->size;
    o->msg.status = status;
    o->msg.seq = seq;
    o->msg.refused = refused;
    snprintf(o->msg.text, sizeof(o->msg.text), "%.*s", SC_CTL_TEXT - 1, text);
    for (int r = 0; r < c->size; r++) {
        if (r == c->rank || c->tp->peer_error[c->world_of[r]][0])
            continue;
        if (sc_ucx_send(c->tp, c->world_of[r], sc_progress_ctl_tag(c, c->tp->world_rank),
                        &o->msg, sizeof(o->msg), &o->reqs[r]) != SC_SUCCESS)
            o->reqs[r] = NULL;
    }
    o->next = c->ctl_outs;
    c->ctl_outs = o;
}

/* Releases the messages whose every send is done. */
static void sc_progress_ctl_sent(sc_comm_t *c)
{
    for (struct sc_ctl_out **pp = &c->ctl_outs; *pp;) {
        struct sc_ctl_out *o = *pp;
        int pending = 0;

        for (int r = 0; r < o->nreqs; r++) {
            if (o->reqs[r] && sc_ucx_poll_send(c->tp, o->reqs[r]) != SC_IN_PROGRESS)
                o->reqs[r] = NULL;
            pending |= o->reqs[r] != NULL;
        }
        if (pending) {
            pp = &o->next;
        } else {
            *pp = o->next;
            free(o);
        }
    }
}

/* The op a refusal of collective #seq fails: it gives up SC_REFUSAL_GRACE_S after it
 * last moved (sc_op_patience), unless the refusing rank issues a collective in its
 * place meanwhile. */
static void sc_progress_refusal_mark_op(sc_coll_op_t *op)
{
    op->refused = 1;
    if (op->started) {
        double by = sc_clock_coarse() + sc_op_patience(op);
        if (by < op->deadline)
            op->deadline = by;
    }
}

static void sc_progress_refusal_hold(sc_comm_t *c, uint64_t seq, const char *text)
{
    c->refusal_held = 1;
    c->refusal_seq = seq;
    snprintf(c->refusal_text, sizeof(c->refusal_text), "%.*s", SC_CTL_TEXT - 1, text);
}

/* A peer refused its collective #seq (sentence text). */
static void sc_progress_refusal_take(sc_comm_t *c, uint64_t seq, const char *text)
{
    /* This rank refused that one too (a call every rank refused), before it issued
     * another in its place or since: that one is not the peer's to fail. */
    if (c->own_refusal && c->own_refusal_seq == seq && seq >= c->seq)
        return;
    for (sc_coll_op_t *op = c->head; op; op = op->next) {
        if (op->hdr.seq == seq) {
            if (op->refused_here)
                return;
            sc_progress_refusal_hold(c, seq, text);
            sc_progress_refusal_mark_op(op);
            return;
        }
    }
    /* Not queued: finished already (a broadcast's root needs no leaf), or not issued
     * yet. The earliest refusal not yet issued is kept for sc_progress_refusal_mark. */
    if (seq < c->seq || (c->refusal_held && c->refusal_seq >= c->seq && c->refusal_seq < seq))
        return;
    sc_progress_refusal_hold(c, seq, text);
}

/* A peer issued collective #seq after it had refused it: its op here waits as long as
 * any other (a third rank may be slow), and a refusal kept for it is dropped. */
static void sc_progress_refusal_withdrawn(sc_comm_t *c, uint64_t seq)
{
    if (c->refusal_held && c->refusal_seq == seq)
        c->refusal_held = 0;
    for (sc_coll_op_t *op = c->head; op; op = op->next) {
        if (op->hdr.seq == seq && op->refused) {
            op->refused = 0;
            if (op->started)
                op->deadline = sc_clock_coarse() + sc_op_patience(op);
        }
    }
}

void sc_progress_refusal_mark(sc_comm_t *c, sc_coll_op_t *op)
{
    if (c->own_refusal && op->hdr.seq == c->own_refusal_seq && c->broken == SC_SUCCESS) {
        /* Issued in place of the one this rank refused: the peers stop counting on
         * the refusal (a notice behind the refusal's, from the same rank). */
        op->refused_here = 1;
        sc_progress_notify(c, SC_ERR_MISMATCH, op->hdr.seq, SC_CTL_REISSUED, "");
    }
    if (!c->refusal_held || op->hdr.seq < c->refusal_seq)
        return;
    if (op->hdr.seq == c->refusal_seq)
        sc_progress_refusal_mark_op(op);
    else
        c->refusal_held = 0; /* an earlier refusal this rank passed */
}

const char *sc_progress_refusal_text(const sc_comm_t *c, uint64_t seq)
{
    if (c->refusal_held && c->refusal_seq == seq)
        return c->refusal_text;
    return c->own_refusal && c->own_refusal_seq == seq ? c->own_refusal_text : NULL;
}

void sc_progress_refused(sc_comm_t *c, sc_coll_kind_t kind)
{
    sc_transport_t *tp = c->tp;
    char saved[SC_ERROR_MAX];

    if (c->size == 1 || kind == SC_COLL_SEND || kind == SC_COLL_RECV)
        return;
    snprintf(saved, sizeof(saved), "%s", sc_last_error()); /* the caller's sentence */
    pthread_mutex_lock(&tp->lock);
    /* A refusal of a number already announced (calls refused one after the other, with
     * no collective between them) is not announced again. */
    if (c->broken == SC_SUCCESS && !(c->own_refusal && c->own_refusal_seq == c->seq)) {
        uint64_t seq = c->seq;

        c->own_refusal = 1;
        c->own_refusal_seq = seq;
        if (c->refusal_held && c->refusal_seq == seq)
            c->refusal_held = 0;
        snprintf(c->own_refusal_text, sizeof(c->own_refusal_text),
                 "%s refused its part of collective #%llu: %s",
                 sc_comm_rank_name(c, c->rank).s, (unsigned long long)seq,
                 sc_error_text_unprefixed());
        sc_progress_notify(c, SC_ERR_MISMATCH, seq, SC_CTL_REFUSED, c->own_refusal_text);
        __atomic_store_n(&tp->rescan, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&tp->lock);
    sc_error_set_text(saved);
}

/* Takes one arrived control message; 0 when none had arrived. */
static int sc_progress_ctl_one(sc_comm_t *c)
{
    size_t len;
    sc_status_t st;
    char text[SC_ERROR_MAX];

    if (!c->ctl_recv_req)
        return 0;
    st = sc_ucx_poll_recv(c->tp, c->ctl_recv_req, &len);
    if (st == SC_IN_PROGRESS)
        return 0;
    c->ctl_recv_req = NULL;
    if (st != SC_SUCCESS)
        return 1;
    c->ctl_in.text[sizeof(c->ctl_in.text) - 1] = '\0';
    snprintf(text, sizeof(text), "%s", c->ctl_in.text);
    if (c->ctl_in.status == SC_SUCCESS || c->ctl_in.refused) {
        /* A wake-up (a neighbour wrote into this rank's mailbox while it slept), a
         * refusal or its withdrawal: the communicator goes on. */
        if (c->ctl_in.refused == SC_CTL_REFUSED)
            sc_progress_refusal_take(c, c->ctl_in.seq, text);
        else if (c->ctl_in.refused == SC_CTL_REISSUED)
            sc_progress_refusal_withdrawn(c, c->ctl_in.seq);
        if (sc_progress_attach(c) != SC_SUCCESS)
            c->ctl_recv_req = NULL;
        return 1;
    }
    st = c->ctl_in.status < 0 ? (sc_status_t)c->ctl_in.status : SC_ERR_PEER_FAILED;
    sc_progress_fail_comm(c, st, text, 0, c->ctl_in.seq);
    return 1;
}

int sc_progress_ctl(sc_comm_t *c)
{
    int taken = 0;

    sc_progress_ctl_sent(c);
    /* Every message that arrived (a burst of notices would otherwise wait in UCX's
     * queue, one taken per scan), a bounded number per scan. */
    while (taken < SC_CTL_PER_SCAN && sc_progress_ctl_one(c))
        taken++;
    return taken > 0;
}
