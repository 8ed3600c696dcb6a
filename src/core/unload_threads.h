/* The library's threads other than the progress threads (a reducer's finisher, a
 * compressor's selection worker, a selector's pool, a GPU communicator's watchdog, a
 * failed rendezvous's store telling the ranks to come after rank 0's sc_comm_init
 * returned: bootstrap_store_linger.c): a process-wide list that the library's unload (dlclose, exit) walks to end them, so
 * that none runs on in the unmapped code after dlclose. */
#ifndef SC_CORE_UNLOAD_THREADS_H
#define SC_CORE_UNLOAD_THREADS_H

#include <pthread.h>
#include <sys/types.h>
#include <time.h>

typedef struct sc_unload_thread sc_unload_thread_t;

/* One thread's entry, in the memory of the object that owns the thread. The thread ends
 * once *stop is set (under *lock, *wake broadcast), after the work it has in hand. */
struct sc_unload_thread {
    pthread_mutex_t *lock;
    pthread_cond_t *wake;
    int *stop;
    pthread_t thread;
    pid_t owner;        /* the process whose thread it is (not a fork's child) */
    int joined;         /* the unload joined it: its owner does not */
    sc_unload_thread_t *prev, *next;
};

/* Lists thread (just started by its owner), which ends when *stop is set. */
void sc_unload_thread_add(sc_unload_thread_t *t, pthread_t thread, pthread_mutex_t *lock,
                          pthread_cond_t *wake, int *stop);

/* Takes t off the list before its owner joins the thread: 1 where the owner joins it
 * (having asked it to end), 0 where the unload joined it already. Waits while the unload
 * ends the listed threads (a few seconds at most). */
int sc_unload_thread_remove(sc_unload_thread_t *t);

/* Called by a listed thread that waits in sc_wait on requests it frees with
 * sc_request_free (a reducer's finisher), on itself, as it starts: stop is its entry's
 * flag, which its owner sets with an atomic store. Once the unload sets that flag, the
 * thread's sc_wait leaves the wait unfinished (sc_unload_thread_asked) and
 * sc_request_free leaves the request to its op, so that the thread ends within the
 * unload's bound although its request never completes (an abort that could not take the
 * transport's lock). Not for a blocking call's request, which lives on its stack. */
void sc_unload_thread_enter(const int *stop);

/* Whether the calling thread is one that sc_unload_thread_enter named and the unload has
 * asked it to end: never for a user's thread, nor at a destroy by the thread's owner. */
int sc_unload_thread_asked(void);

/* At the library's unload: asks every thread this process listed to end (sets its stop
 * flag), then joins each, waiting until `until` (CLOCK_REALTIME) at most for them all,
 * locks included; one whose lock or end does not come by then (a job that runs on, a
 * lock held by the thread that unloads) is left running, as before the unload. Threads
 * a fork inherited are left alone. */
void sc_unload_threads_end(const struct timespec *until);

#endif
