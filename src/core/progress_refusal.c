/* Refusals: a rank that refused its part of a collective, a send or a receive (a bad
 * argument there) tells the peers waiting for it, and the call they issued in its
 * place fails SC_REFUSAL_GRACE_S after it last moved, naming the rank and its reason,
 * unless the rank issues a call in its place meanwhile. Collectives are numbered per
 * communicator (one refusal kept each way: c->refusal_*, c->own_refusal_*); sends and
 * receives per peer and direction (c->p2p_refusals). */
#include <stdlib.h>
#include <string.h>

#include "collectives/schedule_exec.h"
#include "core/clock.h"
#include "core/progress.h"
#include "core/progress_refusal.h"

/* A refusal of a send or receive: this rank's own (of its call to or from peer), or a
 * peer's (held for the op here that it fails). */
struct sc_p2p_refusal {
    struct sc_p2p_refusal *next;
    int own;
    int peer;                   /* comm rank */
    int kind;                   /* SC_COLL_SEND or SC_COLL_RECV: own, the kind refused;
                                   a peer's, the kind of op here it fails */
    uint64_t seq;               /* that op's number (per peer and direction) */
    int withdrawn;              /* a peer's, issued after all: the op is not failed,
                                   the sentence stays for a mismatch of that number */
    char text[SC_CTL_TEXT];
};

static int sc_refusal_is_p2p(int kind)
{
    return kind == SC_COLL_SEND || kind == SC_COLL_RECV;
}

/* The next number of a send to (a receive from) peer. */
static uint64_t sc_refusal_p2p_next(const sc_comm_t *c, int kind, int peer)
{
    return kind == SC_COLL_SEND ? c->send_seq[peer] : c->recv_seq[peer];
}

static struct sc_p2p_refusal *sc_refusal_p2p_find(const sc_comm_t *c, int own, int peer,
                                                  int kind)
{
    for (struct sc_p2p_refusal *f = c->p2p_refusals; f; f = f->next)
        if (f->own == own && f->peer == peer && f->kind == kind)
            return f;
    return NULL;
}

/* The entry for (own, peer, kind), made when there is none; NULL out of memory. */
static struct sc_p2p_refusal *sc_refusal_p2p_get(sc_comm_t *c, int own, int peer, int kind)
{
    struct sc_p2p_refusal *f = sc_refusal_p2p_find(c, own, peer, kind);

    if (f)
        return f;
    f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->own = own;
    f->peer = peer;
    f->kind = kind;
    f->next = c->p2p_refusals;
    c->p2p_refusals = f;
    return f;
}

static void sc_refusal_p2p_drop(sc_comm_t *c, const struct sc_p2p_refusal *gone)
{
    for (struct sc_p2p_refusal **pp = &c->p2p_refusals; *pp; pp = &(*pp)->next) {
        if (*pp == gone) {
            struct sc_p2p_refusal *f = *pp;
            *pp = f->next;
            free(f);
            return;
        }
    }
}

void sc_progress_refusals_free(sc_comm_t *c)
{
    while (c->p2p_refusals) {
        struct sc_p2p_refusal *f = c->p2p_refusals;
        c->p2p_refusals = f->next;
        free(f);
    }
}

/* The op a refusal fails: it gives up SC_REFUSAL_GRACE_S after it last moved
 * (sc_op_patience), unless the refusing rank issues a call in its place meanwhile. */
static void sc_refusal_mark_op(sc_coll_op_t *op)
{
    op->refused = 1;
    if (op->started) {
        double by = sc_clock_coarse() + sc_op_patience(op);
        if (by < op->deadline)
            op->deadline = by;
    }
}

/* The op a refusal withdrawn had marked: it waits as long as any other again. */
static void sc_refusal_unmark_op(sc_coll_op_t *op)
{
    if (!op->refused)
        return;
    op->refused = 0;
    if (op->started)
        op->deadline = sc_clock_coarse() + sc_op_patience(op);
}

static void sc_refusal_hold(sc_comm_t *c, uint64_t seq, const char *text)
{
    c->refusal_held = 1;
    c->refusal_seq = seq;
    snprintf(c->refusal_text, sizeof(c->refusal_text), "%.*s", SC_CTL_TEXT - 1, text);
}

/* A peer refused its collective #seq (sentence text). */
static void sc_refusal_take(sc_comm_t *c, uint64_t seq, const char *text)
{
    /* This rank refused that one too (a call every rank refused), before it issued
     * another in its place or since: that one is not the peer's to fail. */
    if (c->own_refusal && c->own_refusal_seq == seq && seq >= c->seq)
        return;
    for (sc_coll_op_t *op = c->head; op; op = op->next) {
        if (op->hdr.seq == seq) {
            if (op->refused_here)
                return;
            sc_refusal_hold(c, seq, text);
            sc_refusal_mark_op(op);
            return;
        }
    }
    /* Not queued: finished already (a broadcast's root needs no leaf), or not issued
     * yet. The earliest refusal not yet issued is kept for sc_progress_refusal_mark. */
    if (seq < c->seq || (c->refusal_held && c->refusal_seq >= c->seq && c->refusal_seq < seq))
        return;
    sc_refusal_hold(c, seq, text);
}

/* A peer issued collective #seq after it had refused it: its op here waits as long as
 * any other (a third rank may be slow), and a refusal kept for it no longer fails it
 * (its sentence stays, for a mismatch of that number: c->refusal_seq). */
static void sc_refusal_withdrawn(sc_comm_t *c, uint64_t seq)
{
    if (c->refusal_held && c->refusal_seq == seq)
        c->refusal_held = 0;
    for (sc_coll_op_t *op = c->head; op; op = op->next)
        if (op->hdr.seq == seq)
            sc_refusal_unmark_op(op);
}

/* The send or receive here (kind) that pairs with peer's #seq. */
static sc_coll_op_t *sc_refusal_p2p_op(const sc_comm_t *c, int peer, int kind, uint64_t seq)
{
    for (sc_coll_op_t *op = c->p2p; op; op = op->next)
        if ((int)op->hdr.kind == kind && op->hdr.root == peer && op->hdr.seq == seq)
            return op;
    return NULL;
}

/* Peer refused its send or receive #seq to this rank (sentence text): kind is this
 * rank's op that pairs with it (a receive for a refused send). The same rules as a
 * collective's, per peer and direction. */
static void sc_refusal_p2p_take(sc_comm_t *c, int peer, int kind, uint64_t seq,
                                const char *text)
{
    uint64_t next = sc_refusal_p2p_next(c, kind, peer);
    struct sc_p2p_refusal *own = sc_refusal_p2p_find(c, 1, peer, kind), *held;
    sc_coll_op_t *op;

    if (own && own->seq == seq && seq >= next)
        return; /* both ends refused it */
    op = sc_refusal_p2p_op(c, peer, kind, seq);
    if (op && op->refused_here)
        return;
    if (!op && seq < next)
        return; /* done already (a send delivered before the peer's receive) */
    held = sc_refusal_p2p_find(c, 0, peer, kind);
    if (!op && held && !held->withdrawn && held->seq >= next && held->seq < seq)
        return; /* an earlier one not issued yet is kept */
    held = sc_refusal_p2p_get(c, 0, peer, kind);
    if (!held)
        return; /* out of memory: the op fails by its timeout */
    held->seq = seq;
    held->withdrawn = 0;
    snprintf(held->text, sizeof(held->text), "%.*s", SC_CTL_TEXT - 1, text);
    if (op)
        sc_refusal_mark_op(op);
}

static void sc_refusal_p2p_withdrawn(sc_comm_t *c, int peer, int kind, uint64_t seq)
{
    struct sc_p2p_refusal *held = sc_refusal_p2p_find(c, 0, peer, kind);
    sc_coll_op_t *op = sc_refusal_p2p_op(c, peer, kind, seq);

    if (held && held->seq == seq)
        held->withdrawn = 1;
    if (op)
        sc_refusal_unmark_op(op);
}

/* Peer src's notice (refused: SC_CTL_REFUSED or SC_CTL_REISSUED) of its send or
 * receive #seq (p2p: SC_CTL_P2P_SEND or SC_CTL_P2P_RECV), taken for the op here that
 * pairs with it: a receive for its send. */
static void sc_refusal_p2p_notice(sc_comm_t *c, int src, int p2p, int refused, uint64_t seq,
                                  const char *text)
{
    int kind = p2p == SC_CTL_P2P_SEND ? SC_COLL_RECV : SC_COLL_SEND;

    if (refused == SC_CTL_REFUSED)
        sc_refusal_p2p_take(c, src, kind, seq, text);
    else if (refused == SC_CTL_REISSUED)
        sc_refusal_p2p_withdrawn(c, src, kind, seq);
}

/* Tells peer this rank refused (or issued after all) its send or receive (kind) #seq: a
 * notice, or, to itself, taken at once as the notice would be. */
static void sc_refusal_p2p_tell(sc_comm_t *c, int peer, int kind, int refused, uint64_t seq,
                                const char *text)
{
    int p2p = kind == SC_COLL_SEND ? SC_CTL_P2P_SEND : SC_CTL_P2P_RECV;

    if (peer == c->rank)
        sc_refusal_p2p_notice(c, peer, p2p, refused, seq, text);
    else
        sc_progress_notify_p2p(c, peer, refused, p2p, seq, text);
}

void sc_progress_refusal_notice(sc_comm_t *c, const sc_ctl_msg_t *msg, const char *text)
{
    if (msg->p2p == SC_CTL_P2P_NONE) {
        if (msg->refused == SC_CTL_REFUSED)
            sc_refusal_take(c, msg->seq, text);
        else if (msg->refused == SC_CTL_REISSUED)
            sc_refusal_withdrawn(c, msg->seq);
    } else if (msg->src >= 0 && msg->src < c->size && msg->src != c->rank) {
        sc_refusal_p2p_notice(c, msg->src, msg->p2p, msg->refused, msg->seq, text);
    }
}

/* A send or receive just numbered: marked when its peer refused its pair, and the peer
 * told when this rank issues it in place of its own refusal. */
static void sc_refusal_p2p_mark(sc_comm_t *c, sc_coll_op_t *op)
{
    int peer = op->hdr.root, kind = (int)op->hdr.kind;
    struct sc_p2p_refusal *own = sc_refusal_p2p_find(c, 1, peer, kind);
    struct sc_p2p_refusal *held = sc_refusal_p2p_find(c, 0, peer, kind);

    if (own && own->seq == op->hdr.seq && c->broken == SC_SUCCESS) {
        op->refused_here = 1;
        sc_refusal_p2p_tell(c, peer, kind, SC_CTL_REISSUED, op->hdr.seq, "");
    }
    if (held && !held->withdrawn && op->hdr.seq == held->seq)
        sc_refusal_mark_op(op);
    else if (held && op->hdr.seq > held->seq)
        sc_refusal_p2p_drop(c, held); /* an earlier refusal this rank passed */
}

void sc_progress_refusal_mark(sc_comm_t *c, sc_coll_op_t *op)
{
    if (sc_refusal_is_p2p((int)op->hdr.kind)) {
        if (c->p2p_refusals)
            sc_refusal_p2p_mark(c, op);
        return;
    }
    if (c->own_refusal && op->hdr.seq == c->own_refusal_seq && c->broken == SC_SUCCESS) {
        /* Issued in place of the one this rank refused: the peers stop counting on
         * the refusal (a notice behind the refusal's, from the same rank). */
        op->refused_here = 1;
        sc_progress_notify(c, SC_ERR_MISMATCH, op->hdr.seq, SC_CTL_REISSUED, "");
    }
    if (!c->refusal_held || op->hdr.seq < c->refusal_seq)
        return;
    if (op->hdr.seq == c->refusal_seq)
        sc_refusal_mark_op(op);
    else
        c->refusal_held = 0; /* an earlier refusal this rank passed */
}

const char *sc_progress_refusal_text(const sc_comm_t *c, const sc_coll_op_t *op)
{
    uint64_t seq = op->hdr.seq;

    if (sc_refusal_is_p2p((int)op->hdr.kind)) {
        for (int own = 0; own < 2; own++) {
            const struct sc_p2p_refusal *f =
                sc_refusal_p2p_find(c, own, op->hdr.root, (int)op->hdr.kind);
            if (f && f->seq == seq)
                return f->text;
        }
        return NULL;
    }
    /* A peer's refusal, withdrawn or not: a mismatch of that number says it too. */
    if (c->refusal_text[0] && c->refusal_seq == seq)
        return c->refusal_text;
    return sc_progress_own_refusal_text(c, seq);
}

const char *sc_progress_own_refusal_text(const sc_comm_t *c, uint64_t seq)
{
    return c->own_refusal && c->own_refusal_seq == seq ? c->own_refusal_text : NULL;
}

/* This rank refused its send or receive (kind) to or from peer: announced once per
 * number, to that peer alone (to itself, taken here). */
static void sc_refusal_p2p_own(sc_comm_t *c, int kind, int peer)
{
    uint64_t seq = sc_refusal_p2p_next(c, kind, peer);
    struct sc_p2p_refusal *own = sc_refusal_p2p_find(c, 1, peer, kind), *held;

    if (own && own->seq == seq)
        return;
    own = sc_refusal_p2p_get(c, 1, peer, kind);
    if (!own)
        return; /* out of memory: the peer fails by its timeout */
    own->seq = seq;
    snprintf(own->text, sizeof(own->text), "%s refused its %s #%llu %s %s: %s",
             sc_comm_rank_name(c, c->rank).s, kind == SC_COLL_SEND ? "send" : "receive",
             (unsigned long long)seq, kind == SC_COLL_SEND ? "to" : "from",
             sc_comm_rank_name(c, peer).s, sc_error_text_unprefixed());
    /* The peer refused the pair of this one too: neither is left to fail. */
    held = sc_refusal_p2p_find(c, 0, peer, kind);
    if (held && held->seq == seq)
        sc_refusal_p2p_drop(c, held);
    sc_refusal_p2p_tell(c, peer, kind, SC_CTL_REFUSED, seq, own->text);
}

/* This rank refused collective #c->seq: announced once per number. */
static void sc_refusal_own(sc_comm_t *c)
{
    uint64_t seq = c->seq;

    /* A refusal of a number already announced (calls refused one after the other,
     * with no collective between them) is not announced again. */
    if (c->own_refusal && c->own_refusal_seq == seq)
        return;
    c->own_refusal = 1;
    c->own_refusal_seq = seq;
    if (c->refusal_held && c->refusal_seq == seq)
        c->refusal_held = 0;
    snprintf(c->own_refusal_text, sizeof(c->own_refusal_text),
             "%s refused its part of collective #%llu: %s", sc_comm_rank_name(c, c->rank).s,
             (unsigned long long)seq, sc_error_text_unprefixed());
    sc_progress_notify(c, SC_ERR_MISMATCH, seq, SC_CTL_REFUSED, c->own_refusal_text);
}

void sc_progress_refused(sc_comm_t *c, sc_coll_kind_t kind, int peer)
{
    sc_transport_t *tp = c->tp;
    int p2p = sc_refusal_is_p2p((int)kind);
    char saved[SC_ERROR_MAX];

    /* A one-rank communicator has no peer to tell, but may send to itself. */
    if ((c->size == 1 && !p2p) || (p2p && (peer < 0 || peer >= c->size)))
        return;
    snprintf(saved, sizeof(saved), "%s", sc_last_error()); /* the caller's sentence */
    pthread_mutex_lock(&tp->lock);
    if (c->broken == SC_SUCCESS) {
        if (p2p)
            sc_refusal_p2p_own(c, (int)kind, peer);
        else
            sc_refusal_own(c);
        __atomic_store_n(&tp->rescan, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&tp->lock);
    sc_error_set_text(saved);
}
