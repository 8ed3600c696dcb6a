/* A communicator destroyed on one rank while its peers go on: the notices its
 * sc_comm_destroy sends, and what a peer does with one (progress_gone.h). Collectives
 * are numbered per communicator and sends and receives per peer and direction, alike on
 * every rank, so the counts say exactly which calls the rank joined. */
#include <stdio.h>
#include <stdlib.h>

#include "core/progress.h"
#include "core/progress_gone.h"

void sc_progress_tell_gone(sc_comm_t *c)
{
    if (c->size == 1)
        return;
    pthread_mutex_lock(&c->tp->lock);
    for (int r = 0; r < c->size; r++) {
        /* A peer that destroyed it first no longer receives: the notice would stay in
         * its UCX queue. */
        if (r == c->rank || (c->gone && c->gone[r].gone))
            continue;
        sc_progress_notify_gone(c, r, c->seq, c->send_seq[r], c->recv_seq[r]);
    }
    pthread_mutex_unlock(&c->tp->lock);
    /* The detach cancels the control sends still queued (over TCP a queued one may
     * never leave): drive them out first, for a bounded time. */
    sc_progress_flush_ctl(c, SC_GONE_NOTICE_WAIT_S);
}

void sc_progress_gone_notice(sc_comm_t *c, const sc_ctl_msg_t *msg)
{
    char text[SC_ERROR_MAX];
    int src = msg->src;

    if (src < 0 || src >= c->size || src == c->rank)
        return;
    if (!c->gone) {
        c->gone = calloc((size_t)c->size, sizeof(*c->gone));
        if (!c->gone)
            return; /* best effort: the calls fail by their timeout */
    }
    c->gone[src].gone = 1;
    c->gone[src].sends = msg->p2p_sends;
    c->gone[src].recvs = msg->p2p_recvs;
    snprintf(text, sizeof(text), "%s: %s destroyed the communicator (sc_comm_destroy on %s): "
             "it will never join collective #%llu or a later one, nor a send to or receive "
             "from this rank past the %llu sends and %llu receives it issued with it",
             sc_comm_rank_name(c, c->rank).s, sc_comm_rank_name(c, src).s,
             sc_comm_rank_name(c, src).s, (unsigned long long)msg->seq,
             (unsigned long long)msg->p2p_sends, (unsigned long long)msg->p2p_recvs);
    sc_progress_fail_comm_gone(c, text, msg->seq);
}

int sc_progress_gone_spares(const sc_comm_t *c, sc_coll_kind_t kind, int peer, uint64_t seq)
{
    if (!c->gone_only || peer < 0 || peer >= c->size)
        return 0;
    if (!c->gone[peer].gone)
        return 1;
    if (kind == SC_COLL_RECV)
        return seq < c->gone[peer].sends;
    if (kind == SC_COLL_SEND)
        return seq < c->gone[peer].recvs;
    return 0;
}

void sc_progress_gone_free(sc_comm_t *c)
{
    free(c->gone);
    c->gone = NULL;
}
