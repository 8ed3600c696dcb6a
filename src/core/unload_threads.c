/* The list of the library's threads other than the progress threads, and their end at
 * the library's unload (sc_registry_unload). */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <pthread.h>
#include <unistd.h>

#include "core/unload_threads.h"

static pthread_mutex_t sc_unload_lock = PTHREAD_MUTEX_INITIALIZER;
static sc_unload_thread_t *sc_unload_head;
/* Set as the unload begins to ask the threads to end: a stop flag set before it is an
 * owner's (a destroy, which lets the thread's wait finish). */
static int sc_unload_asking;
/* The calling thread's stop flag, where it is a listed thread that may wait. */
static _Thread_local const int *sc_unload_own_stop;

void sc_unload_thread_enter(const int *stop)
{
    sc_unload_own_stop = stop;
}

int sc_unload_thread_asked(void)
{
    return sc_unload_own_stop && __atomic_load_n(&sc_unload_asking, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(sc_unload_own_stop, __ATOMIC_ACQUIRE);
}

void sc_unload_thread_add(sc_unload_thread_t *t, pthread_t thread, pthread_mutex_t *lock,
                          pthread_cond_t *wake, int *stop)
{
    t->lock = lock;
    t->wake = wake;
    t->stop = stop;
    t->thread = thread;
    t->owner = getpid();
    t->joined = 0;
    t->prev = NULL;
    pthread_mutex_lock(&sc_unload_lock);
    t->next = sc_unload_head;
    if (sc_unload_head)
        sc_unload_head->prev = t;
    sc_unload_head = t;
    pthread_mutex_unlock(&sc_unload_lock);
}

int sc_unload_thread_remove(sc_unload_thread_t *t)
{
    int joined;

    pthread_mutex_lock(&sc_unload_lock);
    joined = t->joined;
    if (!joined) {
        if (t->prev)
            t->prev->next = t->next;
        else if (sc_unload_head == t)
            sc_unload_head = t->next;
        if (t->next)
            t->next->prev = t->prev;
    }
    t->prev = t->next = NULL;
    pthread_mutex_unlock(&sc_unload_lock);
    return !joined;
}

/* Sets t's stop flag: 1, or 0 where its lock is not free by until. */
static int sc_unload_thread_ask(sc_unload_thread_t *t, const struct timespec *until)
{
    if (pthread_mutex_timedlock(t->lock, until) != 0)
        return 0;
    __atomic_store_n(t->stop, 1, __ATOMIC_RELEASE); /* read outside the lock in a wait */
    pthread_cond_broadcast(t->wake);
    pthread_mutex_unlock(t->lock);
    return 1;
}

void sc_unload_threads_end(const struct timespec *until)
{
    pid_t self = getpid();
    sc_unload_thread_t *t, *next;

    /* Held throughout: an owner that destroys its object meanwhile waits here, then
     * finds its thread joined. */
    if (pthread_mutex_timedlock(&sc_unload_lock, until) != 0)
        return;
    __atomic_store_n(&sc_unload_asking, 1, __ATOMIC_RELEASE);
    /* All asked first, so that they end side by side (a finisher that waits for the
     * selection worker's job, say). */
    for (t = sc_unload_head; t; t = t->next)
        t->joined = t->owner == self && sc_unload_thread_ask(t, until) ? -1 : 0;
    for (t = sc_unload_head; t; t = next) {
        next = t->next;
        if (t->joined != -1 || pthread_timedjoin_np(t->thread, NULL, until) != 0) {
            t->joined = 0;
            continue;
        }
        t->joined = 1;
        if (t->prev)
            t->prev->next = t->next;
        else
            sc_unload_head = t->next;
        if (t->next)
            t->next->prev = t->prev;
    }
    pthread_mutex_unlock(&sc_unload_lock);
}
