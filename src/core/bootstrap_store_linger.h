/* Rank 0's stores that outlive its sc_comm_init: a failed rendezvous's store telling the
 * processes still to come (bootstrap_store_server.c), listed so that the library's
 * unload stops and joins its thread and a new store on its port takes the port. */
#ifndef SC_CORE_BOOTSTRAP_STORE_LINGER_H
#define SC_CORE_BOOTSTRAP_STORE_LINGER_H

#include <time.h>

#include "core/bootstrap_store_server.h"

/* Rank 0's store s, from before its socket exists (sc_store_server_listen), is watched
 * until it is freed (unwatched by rank 0's call where it ends it, else as the list ends
 * it): a fork's child (without exec)
 * closes its copy of s's listening socket as it starts (pthread_atfork), during the
 * rendezvous too, so that once the parent's store stopped no process that comes waits
 * on a socket nothing answers. */
void sc_store_linger_watch(sc_store_server_t *s);
void sc_store_linger_unwatch(sc_store_server_t *s);

/* Rank 0's call waits for s (its thread telling a failed rendezvous, up to
 * SC_STORE_FAILED_WAIT_S) before it joins it (sc_store_linger_release) or hands it over
 * (sc_store_linger_add): held meanwhile, so that a new rendezvous of this process on its
 * port (sc_comm_init on another thread) stops it and waits for that. */
void sc_store_linger_hold(sc_store_server_t *s);
void sc_store_linger_release(sc_store_server_t *s);

/* Takes s over (on the heap, its thread telling a failed rendezvous, up to
 * SC_STORE_TELL_S): listed for the library's unload (sc_unload_thread_add), which stops
 * and joins its thread, and for sc_store_linger_reap; freed (and unwatched) once its
 * thread was joined. */
void sc_store_linger_add(sc_store_server_t *s);

/* Before this process's rendezvous on port: the listed stores whose thread ended are
 * joined and freed, and one still telling on port is stopped and joined first (a new
 * rendezvous on that port, a program's retry of sc_comm_init, takes the port: its bind
 * failed, naming this very process); one on port that rank 0's call on another thread
 * still holds (sc_store_linger_hold) is stopped and waited for until that call joined
 * or handed it over; those a fork inherited (their threads the parent's) are
 * forgotten. */
void sc_store_linger_reap(int port);

/* At the library's unload, after sc_unload_threads_end (until: CLOCK_REALTIME, for the
 * list's lock): frees the stores whose threads it joined; one still running is left
 * as it is. */
void sc_store_linger_unload(const struct timespec *until);

#endif
