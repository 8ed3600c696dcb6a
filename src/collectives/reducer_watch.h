/* A reducer destroyed between iterations, as its peers see it. A rank that marked
 * nothing of an iteration cannot tell whether its peers began it, so its
 * sc_reducer_destroy tells them after how many synced iterations its reducer ended; a
 * peer whose reducer of the same number is in (or later begins) a synced iteration past
 * those aborts the communicator with that sentence, since the iteration can no longer
 * complete, where it waited SC_TIMEOUT for buckets that rank would never start. */
#ifndef SC_COLLECTIVES_REDUCER_WATCH_H
#define SC_COLLECTIVES_REDUCER_WATCH_H

#include <stdint.h>

#include "core/comm_internal.h"

/* A live reducer as its communicator's control messages see it. Under tp->lock. */
typedef struct sc_reducer_watch {
    struct sc_reducer_watch *next; /* in comm->reducer_watches */
    int added;
    uint32_t number;               /* the reducer's number on comm, equal on every rank */
    uint64_t ended;                /* synced iterations it ended (finalize returned) */
    int busy;                      /* it communicates in a synced iteration */
    int gone;                      /* a peer's reducer of this number was destroyed: */
    uint64_t gone_after;           /* after this many synced iterations (the fewest told) */
    int gone_src;                  /* on this rank (comm rank), */
    char gone_text[SC_CTL_TEXT];   /* which said this */
} sc_reducer_watch_t;

/* Numbers w (comm's next reducer) and adds it to comm's watches, once the reducer is
 * made. Every rank makes its reducers on comm in one order (sc_reducer_create is
 * collective, and succeeds on every rank or on none), so the numbers agree. */
void sc_reducer_watch_add(sc_comm_t *comm, sc_reducer_watch_t *w);

/* Removes w from comm's watches (nothing when it was not added). */
void sc_reducer_watch_remove(sc_comm_t *comm, sc_reducer_watch_t *w);

/* The reducer communicates in its synced iteration from now on (the first bucket it
 * starts, or finalize): SC_ERR_ABORTED, with comm aborted and the sentence set, where a
 * peer's reducer of this number ended before this iteration. */
sc_status_t sc_reducer_watch_begin(sc_comm_t *comm, sc_reducer_watch_t *w);

/* The synced iteration ended (finalize's end, whatever its outcome). */
void sc_reducer_watch_end(sc_comm_t *comm, sc_reducer_watch_t *w);

/* The reducer is destroyed between iterations (why names the call and the rank): the
 * peers are told, best effort. Nothing on a communicator of one rank. */
void sc_reducer_watch_tell_gone(sc_comm_t *comm, const sc_reducer_watch_t *w,
                                const char *why);

/* A peer's notice that its reducer msg->seq ended after msg->iters synced iterations
 * (text: why): aborts comm at once when this rank's reducer of that number
 * communicates in a later iteration, else keeps it for sc_reducer_watch_begin. Caller
 * holds tp->lock. */
void sc_reducer_watch_notice(sc_comm_t *comm, const sc_ctl_msg_t *msg, const char *text);

#endif
