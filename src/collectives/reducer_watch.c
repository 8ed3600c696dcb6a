/* A reducer destroyed on one rank between iterations, seen by its peers: the notice its
 * destroy sends, the live reducers' watches that take it, and the abort where a peer's
 * reducer is in an iteration the destroyed one will never join (reducer_watch.h). */
#include <stdio.h>

#include "collectives/reducer_watch.h"
#include "core/error.h"
#include "core/progress.h"

/* Whether w is in a synced iteration that the peer's reducer, gone after its
 * gone_after synced iterations, will never join. Caller holds tp->lock. */
static int sc_watch_stranded(const sc_reducer_watch_t *w)
{
    return w->busy && w->gone && w->ended >= w->gone_after;
}

/* Aborts comm, naming the iteration and the peer's notice; the sentence in text. Caller
 * holds tp->lock. */
static void sc_watch_abort(sc_comm_t *c, const sc_reducer_watch_t *w, char *text, size_t len)
{
    snprintf(text, len, "%s: the communicator was aborted: its reducer is in synced "
             "iteration %llu, which %s will never join (%s)", sc_comm_rank_name(c, c->rank).s,
             (unsigned long long)w->ended + 1, sc_comm_rank_name(c, w->gone_src).s,
             w->gone_text);
    sc_progress_fail_comm(c, SC_ERR_ABORTED, text, 1, 0);
}

void sc_reducer_watch_add(sc_comm_t *c, sc_reducer_watch_t *w)
{
    pthread_mutex_lock(&c->tp->lock);
    w->number = c->reducers_made++;
    w->next = c->reducer_watches;
    c->reducer_watches = w;
    w->added = 1;
    pthread_mutex_unlock(&c->tp->lock);
}

void sc_reducer_watch_remove(sc_comm_t *c, sc_reducer_watch_t *w)
{
    if (!w->added)
        return;
    pthread_mutex_lock(&c->tp->lock);
    for (sc_reducer_watch_t **pp = &c->reducer_watches; *pp; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    }
    w->added = 0;
    pthread_mutex_unlock(&c->tp->lock);
}

sc_status_t sc_reducer_watch_begin(sc_comm_t *c, sc_reducer_watch_t *w)
{
    char text[SC_ERROR_MAX];
    int stranded;

    pthread_mutex_lock(&c->tp->lock);
    w->busy = 1;
    stranded = sc_watch_stranded(w);
    if (stranded)
        sc_watch_abort(c, w, text, sizeof(text));
    pthread_mutex_unlock(&c->tp->lock);
    if (!stranded)
        return SC_SUCCESS;
    sc_error_set_text(text);
    return SC_ERR_ABORTED;
}

void sc_reducer_watch_end(sc_comm_t *c, sc_reducer_watch_t *w)
{
    pthread_mutex_lock(&c->tp->lock);
    w->busy = 0;
    w->ended++;
    pthread_mutex_unlock(&c->tp->lock);
}

void sc_reducer_watch_tell_gone(sc_comm_t *c, const sc_reducer_watch_t *w, const char *why)
{
    if (c->size == 1)
        return;
    pthread_mutex_lock(&c->tp->lock);
    if (c->broken == SC_SUCCESS)
        sc_progress_notify_reducer_gone(c, w->number, w->ended, why);
    pthread_mutex_unlock(&c->tp->lock);
}

void sc_reducer_watch_notice(sc_comm_t *c, const sc_ctl_msg_t *msg, const char *text)
{
    sc_reducer_watch_t *w = c->reducer_watches;
    char abort_text[SC_ERROR_MAX];

    while (w && w->number != msg->seq)
        w = w->next;
    /* This rank's reducer of that number is destroyed already: nothing waits for it. */
    if (!w || (w->gone && w->gone_after <= msg->iters))
        return;
    w->gone = 1;
    w->gone_after = msg->iters;
    w->gone_src = msg->src;
    snprintf(w->gone_text, sizeof(w->gone_text), "%s", text);
    if (sc_watch_stranded(w))
        sc_watch_abort(c, w, abort_text, sizeof(abort_text));
}
