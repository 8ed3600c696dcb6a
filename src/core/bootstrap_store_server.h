/* Rank 0's side of the rendezvous store (bootstrap_store_server.c): the server thread
 * that takes every rank's hello and blob, refuses processes of another launch or
 * protocol, answers each rank with its place in the table's tree (the table itself to
 * rank 0's children) and watches every rank until all have the table; and rank 0's
 * refusal of every rank when it cannot serve. The ranks' side, rank 0's own client
 * included, is bootstrap_store.c. */
#ifndef SC_CORE_BOOTSTRAP_STORE_SERVER_H
#define SC_CORE_BOOTSTRAP_STORE_SERVER_H

#include <pthread.h>

#include "core/bootstrap_wire.h"
#include "core/error.h"
#include "shardcomm/status.h"

/* How much longer a rank waits for its parent in the table's tree than the parent for
 * its own, per level: time for a parent's failure to reach it before its own deadline. */
#define SC_STORE_TREE_LEVEL_S 2.0
/* How many refused processes the store keeps to name in its timeout's sentence. */
#define SC_STORE_REFUSALS_MAX 4

/* A process the store refused (another launch's, another protocol's): the rank it
 * claimed (-1: not known, its hello being another protocol's) and why. */
typedef struct {
    int rank;
    char why[200];
} sc_store_refusal_t;

typedef struct {
    int listen_fd;
    int size;
    int fanout;                    /* the table's tree: children of a rank (SC_STORE_FANOUT) */
    double started, deadline;
    double timeout_s;              /* SC_TIMEOUT: the table's tree has it again */
    char where[300];
    char note[400];                /* what rank 0 found wrong with the master address */
    sc_store_launch_t launch;      /* the launch it serves (id "": unknown, none refused) */
    pthread_t thread;
    int done;                      /* set (atomically) when the server has answered */
    int told_outside;              /* processes told a failure outside fds (refuse_all) */
    sc_store_refusal_t refused[SC_STORE_REFUSALS_MAX]; /* the first ones, told apart */
    int nrefused;
    sc_status_t verdict;           /* its outcome, for rank 0's own client */
    char verdict_text[SC_ERROR_MAX];
} sc_store_server_t;

/* A server of rank 0's store for a world of size ranks of launch at addr:port, from
 * started until deadline; not yet listening (the caller sets listen_fd, fanout and
 * timeout_s). */
void sc_store_server_init(sc_store_server_t *s, const char *addr, int port, int size,
                          const sc_store_launch_t *launch, double started, double deadline);

/* The server thread (arg: its sc_store_server_t, listening): serves until every rank has
 * the table or the rendezvous failed, then sets verdict and done. */
void *sc_store_serve(void *arg);

/* Rank 0, whose sc_comm_init failed before it could serve (text: its failure), listens
 * on port until deadline and tells every rank that comes that failure. */
void sc_store_server_tell_failure(const char *addr, int port, int size,
                                  const sc_store_launch_t *launch, double started,
                                  double deadline, const char *text);

#endif
