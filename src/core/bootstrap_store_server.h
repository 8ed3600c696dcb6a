/* Rank 0's side of the rendezvous store (bootstrap_store_server.c): the server thread
 * that takes every rank's hello and blob, refuses processes of another launch or
 * protocol (bootstrap_store_arrival.c), answers each rank with its place in the table's
 * tree (the table itself to rank 0's children) and watches every rank until all have the
 * table (bootstrap_store_answer.c); and rank 0's refusal of every rank when it cannot
 * serve. The ranks' side, rank 0's own client included, is bootstrap_store.c. */
#ifndef SC_CORE_BOOTSTRAP_STORE_SERVER_H
#define SC_CORE_BOOTSTRAP_STORE_SERVER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "core/bootstrap_wire.h"
#include "core/error.h"
#include "core/unload_threads.h"
#include "shardcomm/status.h"

/* How much longer a rank waits for its parent in the table's tree than the parent for
 * its own, per level: time for a parent's failure to reach it before its own deadline. */
#define SC_STORE_TREE_LEVEL_S 2.0
/* How many refused processes the store keeps to name in its timeout's sentence. */
#define SC_STORE_REFUSALS_MAX 4
/* How long a failed rendezvous is told to the processes still to come, at most
 * (sc_store_tell_failure, and rank 0's store after a failure whatever SC_TIMEOUT). */
#define SC_STORE_TELL_S 30.0

/* A process the store refused (another launch's, another protocol's): the rank it
 * claimed (-1: not known, its hello being another protocol's) and why. */
typedef struct {
    int rank;
    char why[200];
} sc_store_refusal_t;

typedef struct sc_store_server sc_store_server_t;

struct sc_store_server {
    int listen_fd;
    int port;
    int size;
    int fanout;                    /* the table's tree: children of a rank (SC_STORE_FANOUT) */
    double started, deadline;
    double timeout_s;              /* SC_TIMEOUT: the table's tree has it again */
    char where[300];
    char note[400];                /* what rank 0 found wrong with the master address */
    sc_store_launch_t launch;      /* the launch it serves (id "": unknown, none refused) */
    pthread_t thread;
    int done;                      /* set (atomically) when the server has answered */
    int failed;                    /* set (atomically) once verdict holds a failure */
    pthread_mutex_t lock;          /* guards stop */
    pthread_cond_t wake;           /* broadcast with stop (sc_unload_thread_add's) */
    int stop;                      /* set: a failure's telling ends (unload, a new store) */
    sc_unload_thread_t entry;      /* listed once it outlives rank 0's call */
    sc_store_server_t *next;       /* in the list of those (bootstrap_store_linger.c) */
    pid_t holder;                  /* the process whose rank 0 holds it (linger_hold) */
    sc_store_server_t *watched_next; /* in the list a fork looks at (linger_watch) */
    int told_outside;              /* processes told a failure outside fds (refuse_all) */
    sc_store_refusal_t refused[SC_STORE_REFUSALS_MAX]; /* the first ones, told apart */
    int nrefused;
    sc_status_t verdict;           /* its outcome, for rank 0's own client */
    char verdict_text[SC_ERROR_MAX];
};

/* A server of rank 0's store for a world of size ranks of launch at addr:port, from
 * started until deadline; not yet listening (sc_store_server_listen; the caller sets
 * fanout and timeout_s). sc_store_server_fini undoes it once its thread ended. */
void sc_store_server_init(sc_store_server_t *s, const char *addr, int port, int size,
                          const sc_store_launch_t *launch, double started, double deadline);
void sc_store_server_fini(sc_store_server_t *s);

/* Opens s's listening socket at its port: s is watched first (a fork's child closes its
 * copy, bootstrap_store_linger.c) and the socket made under s's lock, which a fork holds
 * across, so that a child forked at any point holds no copy that listens. On failure
 * (sc_last_error set) s is watched no more. */
sc_status_t sc_store_server_listen(sc_store_server_t *s);

/* The server thread (arg: its sc_store_server_t, listening): serves until every rank has
 * the table or the rendezvous failed, then sets verdict and done. A failure sets verdict
 * and failed at once, before the processes still to come are told (SC_STORE_TELL_S after
 * the failure at most, or until stop is set), so that rank 0's client may return and
 * leave the thread to tell them (sc_store_linger_add). */
void *sc_store_serve(void *arg);

/* Rank 0, whose sc_comm_init failed before it could serve (text: its failure): s (not
 * yet listening) listens on its port, and its thread tells every rank that comes that
 * failure until its deadline or until stop is set, verdict and failed set as a failed
 * rendezvous's store sets them, so that rank 0 may return and leave the thread to tell
 * them (sc_store_linger_add). 0 once the thread runs (s watched), -1 where the port or
 * the thread could not be had (s then holds nothing to undo but sc_store_server_fini). */
int sc_store_server_tell_failure(sc_store_server_t *s, const char *text);

/* The server's waits and replies on one connection, which look whether it was stopped,
 * and its failure's sentence: shared with its arrivals (bootstrap_store_arrival.c). */

/* Waits until fd has events (POLLIN, POLLOUT) or deadline passes, looking every
 * SC_STORE_STOP_LOOK_S whether s was stopped: 1 when they came, 0 at the deadline or once
 * s was stopped, -1 when the poll failed. Every wait of the store on one connection goes
 * through it, so that a store telling a failed rendezvous ends within moments of its
 * stop (the library's unload joins it within 2 s, or leaves it running in the unmapped
 * code), where a reply or a skip waited up to 2 s per connection and a hello up to 5 s. */
int sc_store_wait(sc_store_server_t *s, int fd, short events, double deadline);

/* Answers fd with st and its sentence text before deadline (sc_store_wait), as
 * sc_store_net_reply does. */
void sc_store_reply_error(sc_store_server_t *s, int fd, sc_status_t st,
                          const char *text, double deadline);

/* Reads and drops len bytes of fd (SIZE_MAX: until it closes the connection) before
 * deadline (sc_store_wait): a peer answered before all it sent was read, whose close
 * with unread bytes would reset the connection before the answer reached it. */
void sc_store_skip(sc_store_server_t *s, int fd, size_t len, double deadline);

/* Into err: the rendezvous's sentence for rank's failure text (its sc_comm_init failed
 * before it could join, or rank 0 before it could serve). */
void sc_store_failure_sentence(const sc_store_server_t *s, uint32_t rank,
                               const char *text, char *err, size_t len);

#endif
