/* A communicator destroyed on one rank while its peers go on: the notices its
 * sc_comm_destroy sends, and what a peer does with one (progress_gone.h). Collectives
 * are numbered per communicator and sends and receives per peer and direction, alike on
 * every rank, so the counts say exactly which calls the rank joined. */
#include <stdio.h>
#include <stdlib.h>

#include "collectives/schedule.h"
#include "collectives/transport_ucx.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/progress_gone.h"
#include "core/progress_settle.h"

void sc_progress_tell_gone(sc_comm_t *c)
{
    sc_transport_t *tp = c->tp;

    if (c->size == 1)
        return;
    pthread_mutex_lock(&tp->lock);
    /* The notices that came before this rank's own: a peer that destroyed it first no
     * longer receives (the notice would stay in its UCX queue), and may have exited
     * since. Bounded, as a progress step is. */
    for (int i = 0; i < 64 && sc_ucx_progress(tp) > 0; i++)
        ;
    sc_progress_ctl(c);
    if (c->broken == SC_SUCCESS) {
        int told = 0;

        for (int r = 0; r < c->size; r++) {
            if (r == c->rank || (c->gone && c->gone[r].gone))
                continue;
            sc_progress_notify_gone(c, r, c->seq, c->send_seq[r], c->recv_seq[r]);
            told = 1;
        }
        /* A peer that keeps the communicator may have sent this rank messages of calls
         * it never joins before the notice reached it (a collective's rendezvous, which
         * UCX cannot cancel): dropped as they come, so that its transfers end without
         * closing the connection, which the world and every split share. */
        if (told)
            sc_settle_drain_from(tp, c->ctx, 0, 1, 1);
    }
    pthread_mutex_unlock(&tp->lock);
    /* The detach cancels the control sends still queued (over TCP a queued one may
     * never leave): drive them out first, for a bounded time. */
    sc_progress_flush_ctl(c, SC_GONE_NOTICE_WAIT_S);
}

/* The sentence for the calls that src, gone after g, never joins. */
static void sc_progress_gone_text(const sc_comm_t *c, int src, const sc_comm_gone_t *g,
                                  char *text, size_t len)
{
    snprintf(text, len, "%s: %s destroyed the communicator (sc_comm_destroy on %s): it will "
             "never join collective #%llu or a later one, nor a send to or receive from this "
             "rank past the %llu sends and %llu receives it issued with it",
             sc_comm_rank_name(c, c->rank).s, sc_comm_rank_name(c, src).s,
             sc_comm_rank_name(c, src).s, (unsigned long long)g->colls,
             (unsigned long long)g->sends, (unsigned long long)g->recvs);
}

void sc_progress_gone_notice(sc_comm_t *c, const sc_ctl_msg_t *msg)
{
    char text[SC_ERROR_MAX];
    int src = msg->src;
    sc_comm_gone_t *g;

    if (src < 0 || src >= c->size || src == c->rank)
        return;
    if (!c->gone) {
        c->gone = calloc((size_t)c->size, sizeof(*c->gone));
        if (!c->gone)
            return; /* best effort: the calls fail by their timeout */
    }
    g = &c->gone[src];
    g->gone = 1;
    g->colls = msg->seq;
    g->sends = msg->p2p_sends;
    g->recvs = msg->p2p_recvs;
    if (g->colls < c->gone_seq)
        c->gone_seq = g->colls;
    sc_progress_gone_text(c, src, g, text, sizeof(text));
    sc_log(SC_LOG_INFO, "%s", text);
    sc_progress_fail_stranded(c, g->colls,
                              &(sc_p2p_cut_t){.peer = src, .recv_from = g->sends,
                                              .send_from = g->recvs},
                              text);
}

int sc_progress_gone_strands(const sc_comm_t *c, const sc_coll_op_t *op, char *text,
                             size_t len)
{
    int peer = -1;

    if (op->hdr.kind == SC_COLL_SEND || op->hdr.kind == SC_COLL_RECV) {
        const sc_comm_gone_t *g = &c->gone[op->hdr.root];
        uint64_t joined = op->hdr.kind == SC_COLL_RECV ? g->sends : g->recvs;
        if (g->gone && op->hdr.seq >= joined)
            peer = op->hdr.root;
    } else if (op->hdr.seq >= c->gone_seq) {
        /* The peer that left first. */
        for (int r = 0; r < c->size && peer < 0; r++)
            if (c->gone[r].gone && c->gone[r].colls == c->gone_seq)
                peer = r;
    }
    if (peer < 0)
        return 0;
    sc_progress_gone_text(c, peer, &c->gone[peer], text, len);
    return 1;
}

void sc_progress_gone_free(sc_comm_t *c)
{
    free(c->gone);
    c->gone = NULL;
}
