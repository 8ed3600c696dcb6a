/* Control messages between the ranks of a communicator, beside its collectives:
 * abort notices (the communicator failed at a collective), refusal notices (a rank
 * refused its part of a collective or a send or receive before it began: what they
 * mean is progress_refusal.c's), notices of a reducer destroyed between iterations
 * (reducer_watch.c's), notices of a communicator destroyed on one rank
 * (progress_gone.c's) and wake-ups (a neighbour wrote into a sleeping rank's
 * mailbox). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/reducer_watch.h"
#include "collectives/schedule_exec.h"
#include "collectives/transport_ucx.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/progress_gone.h"
#include "core/progress_refusal.h"

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
    double deadline;

    /* Every cancel first, then one wait for them all: a send to a peer that takes
     * nothing (a stopped rank) waits out the whole of it, and a destroy with a notice
     * pending to each of many such peers waited that long once per send. */
    sc_ucx_cancel_start(c->tp, c->ctl_recv_req);
    for (struct sc_ctl_out *o = c->ctl_outs; o; o = o->next)
        for (int r = 0; r < o->nreqs; r++)
            sc_ucx_cancel_start(c->tp, o->reqs[r]);
    deadline = sc_clock_now() + SC_UCX_CANCEL_WAIT_S;
    sc_ucx_cancel_finish(c->tp, c->ctl_recv_req, -1, deadline);
    c->ctl_recv_req = NULL;
    while (c->ctl_outs) {
        struct sc_ctl_out *o = c->ctl_outs;
        int in_flight = 0;

        c->ctl_outs = o->next;
        for (int r = 0; r < o->nreqs; r++)
            in_flight |= sc_ucx_cancel_finish(c->tp, o->reqs[r], c->world_of[r], deadline);
        /* A send UCX could not cancel (over TCP, one still waiting for its connection)
         * reads the message when it goes: kept until the worker is gone. */
        if (in_flight)
            sc_ucx_keep_block(c->tp, -1, o);
        else
            free(o);
    }
}

/* Sends the message's first len bytes to peer `only` (a comm rank), or to every peer
 * when only is -1. */
static void sc_progress_send_ctl(sc_comm_t *c, int only, const sc_ctl_msg_t *msg, size_t len)
{
    struct sc_ctl_out *o = calloc(1, sizeof(*o) + (size_t)c->size * sizeof(void *));

    if (!o)
        return; /* best effort: the peers fail by their timeout */
    o->nreqs = c->size;
    o->msg = *msg;
    o->msg.src = c->rank;
    for (int r = 0; r < c->size; r++) {
        if (r == c->rank || (only >= 0 && r != only) || c->tp->peer_error[c->world_of[r]][0])
            continue;
        if (sc_ucx_send(c->tp, c->world_of[r], sc_progress_ctl_tag(c, c->tp->world_rank),
                        &o->msg, len, &o->reqs[r]) != SC_SUCCESS)
            o->reqs[r] = NULL;
    }
    o->next = c->ctl_outs;
    c->ctl_outs = o;
}

void sc_progress_notify(sc_comm_t *c, sc_status_t status, uint64_t seq, int refused,
                        const char *text)
{
    sc_ctl_msg_t msg = {.status = status, .refused = refused, .seq = seq};

    snprintf(msg.text, sizeof(msg.text), "%.*s", SC_CTL_TEXT - 1, text);
    sc_progress_send_ctl(c, -1, &msg, sizeof(msg));
}

void sc_progress_notify_p2p(sc_comm_t *c, int peer, int refused, int p2p, uint64_t seq,
                            const char *text)
{
    sc_ctl_msg_t msg = {.status = SC_ERR_MISMATCH, .refused = refused, .p2p = p2p,
                        .seq = seq};

    snprintf(msg.text, sizeof(msg.text), "%.*s", SC_CTL_TEXT - 1, text);
    sc_progress_send_ctl(c, peer, &msg, sizeof(msg));
}

void sc_progress_notify_reducer_gone(sc_comm_t *c, uint32_t number, uint64_t iters,
                                     const char *text)
{
    sc_ctl_msg_t msg = {.status = SC_SUCCESS, .refused = SC_CTL_REDUCER_GONE, .seq = number,
                        .iters = iters};

    snprintf(msg.text, sizeof(msg.text), "%.*s", SC_CTL_TEXT - 1, text);
    sc_progress_send_ctl(c, -1, &msg, sizeof(msg));
}

void sc_progress_notify_gone(sc_comm_t *c, int peer, uint64_t colls, uint64_t sends,
                             uint64_t recvs)
{
    sc_ctl_msg_t msg = {.status = SC_SUCCESS, .refused = SC_CTL_COMM_GONE, .seq = colls,
                        .p2p_sends = sends, .p2p_recvs = recvs};

    /* Without its text, which nothing reads: every rank destroying a communicator sends
     * one to each peer, and those to a peer that destroyed it first stay in its UCX
     * queue. */
    sc_progress_send_ctl(c, peer, &msg, offsetof(sc_ctl_msg_t, text));
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

int sc_progress_ctl_held(const sc_comm_t *c)
{
    int held = 0;

    for (const struct sc_ctl_out *o = c->ctl_outs; o; o = o->next) {
        for (int r = 0; r < o->nreqs; r++) {
            if (!o->reqs[r])
                continue;
            if (!sc_ucx_peer_silent(c->tp, c->world_of[r]))
                return 0;
            held = 1;
        }
    }
    return held;
}

/* Takes one arrived control message; 0 when none had arrived. */
static int sc_progress_ctl_one(sc_comm_t *c)
{
    size_t len;
    sc_status_t st;
    char text[SC_ERROR_MAX];
    const char *own;

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
         * refusal or its withdrawal, a peer's reducer destroyed between iterations: the
         * communicator goes on (unless this rank's reducer waits for that one); a peer
         * that destroyed it: the calls it never joins fail. */
        if (c->ctl_in.refused == SC_CTL_REDUCER_GONE)
            sc_reducer_watch_notice(c, &c->ctl_in, text);
        else if (c->ctl_in.refused == SC_CTL_COMM_GONE)
            sc_progress_gone_notice(c, &c->ctl_in);
        else if (c->ctl_in.refused)
            sc_progress_refusal_notice(c, &c->ctl_in, text);
        if (sc_progress_attach(c) != SC_SUCCESS)
            c->ctl_recv_req = NULL;
        return 1;
    }
    st = c->ctl_in.status < 0 ? (sc_status_t)c->ctl_in.status : SC_ERR_PEER_FAILED;
    /* A peer's disagreement at the number this rank refused, found there before this
     * rank's refusal notice came (it travels beside the next call's header, not ahead
     * of it): this rank's sentence says what it refused, as its own finding does. */
    own = st == SC_ERR_MISMATCH ? sc_progress_own_refusal_text(c, c->ctl_in.seq) : NULL;
    if (own && !strstr(text, own)) {
        size_t n = strlen(text);
        snprintf(text + n, sizeof(text) - n, "; before that, %s", own);
    }
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
