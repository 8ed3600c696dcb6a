/* Rank 0's stores that outlive its sc_comm_init (a failed rendezvous told to the
 * processes still to come): their list, their end at a new store on their port and at
 * the library's unload (bootstrap_store_linger.h). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/bootstrap_store_linger.h"
#include "core/log.h"
#include "core/unload_threads.h"

static pthread_mutex_t sc_linger_lock = PTHREAD_MUTEX_INITIALIZER;
/* Broadcast as a held store leaves sc_linger_held (joined, or handed over). */
static pthread_cond_t sc_linger_left = PTHREAD_COND_INITIALIZER;
static sc_store_server_t *sc_linger_head;
/* The stores that rank 0's call still waits for (sc_store_linger_hold). */
static sc_store_server_t *sc_linger_held;
/* Every store of this process from before its socket exists until it is freed
 * (sc_store_linger_watch): its listening socket is closed in a fork's child. */
static sc_store_server_t *sc_linger_watched;
static pthread_once_t sc_linger_once = PTHREAD_ONCE_INIT;

/* Takes s off the list of held stores where it is on it; under sc_linger_lock. */
static void sc_store_linger_unhold(sc_store_server_t *s)
{
    for (sc_store_server_t **p = &sc_linger_held; *p != NULL; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            pthread_cond_broadcast(&sc_linger_left);
            return;
        }
    }
}

/* Takes s off the list of watched stores; under sc_linger_lock. */
static void sc_store_linger_unwatch_locked(sc_store_server_t *s)
{
    for (sc_store_server_t **p = &sc_linger_watched; *p != NULL; p = &(*p)->watched_next) {
        if (*p == s) {
            *p = s->watched_next;
            return;
        }
    }
}

/* Asks s's thread to stop telling its failed rendezvous, where it was not asked yet: a
 * new rendezvous takes its port. */
static void sc_store_linger_stop(sc_store_server_t *s)
{
    int was;

    pthread_mutex_lock(&s->lock);
    was = s->stop;
    s->stop = 1;
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    if (!was)
        sc_log(SC_LOG_INFO, "rendezvous: the store at %s of an earlier rendezvous, which "
               "failed, stops telling the processes still to come: a new rendezvous takes "
               "port %d", s->where, s->port);
}

/* The list's lock and every watched store's (which its thread holds to close its
 * listening socket: sc_store_close_listen) are held across a fork: locked (lock) or
 * unlocked. */
static void sc_store_linger_fork_lock(int lock)
{
    if (lock)
        pthread_mutex_lock(&sc_linger_lock);
    for (sc_store_server_t *s = sc_linger_watched; s != NULL; s = s->watched_next) {
        if (lock)
            pthread_mutex_lock(&s->lock);
        else
            pthread_mutex_unlock(&s->lock);
    }
    if (!lock)
        pthread_mutex_unlock(&sc_linger_lock);
}

static void sc_store_linger_fork_prepare(void) { sc_store_linger_fork_lock(1); }
static void sc_store_linger_fork_parent(void) { sc_store_linger_fork_lock(0); }

/* A fork's child (without exec) closes its copies of the stores' listening sockets,
 * still open as it starts (the parent's thread closes one only under the store's lock):
 * their threads are the parent's, and once the parent's store stopped (dlclose, exit) a
 * process that came was queued on the child's copy, answered by none until the child
 * exited (for ever with SC_TIMEOUT=inf). Every store from before its socket exists, so
 * that a fork during the rendezvous (before it failed) keeps no copy either. */
static void sc_store_linger_fork_child(void)
{
    for (sc_store_server_t *s = sc_linger_watched; s != NULL; s = s->watched_next) {
        if (s->listen_fd >= 0)
            close(s->listen_fd);
        s->listen_fd = -1;
    }
    sc_store_linger_fork_lock(0);
}

static void sc_store_linger_watch_fork(void)
{
    pthread_atfork(sc_store_linger_fork_prepare, sc_store_linger_fork_parent,
                   sc_store_linger_fork_child);
}

void sc_store_linger_watch(sc_store_server_t *s)
{
    pthread_once(&sc_linger_once, sc_store_linger_watch_fork);
    pthread_mutex_lock(&sc_linger_lock);
    s->watched_next = sc_linger_watched;
    sc_linger_watched = s;
    pthread_mutex_unlock(&sc_linger_lock);
}

void sc_store_linger_unwatch(sc_store_server_t *s)
{
    pthread_mutex_lock(&sc_linger_lock);
    sc_store_linger_unwatch_locked(s);
    pthread_mutex_unlock(&sc_linger_lock);
}

void sc_store_linger_hold(sc_store_server_t *s)
{
    s->holder = getpid();
    pthread_mutex_lock(&sc_linger_lock);
    s->next = sc_linger_held;
    sc_linger_held = s;
    pthread_mutex_unlock(&sc_linger_lock);
}

void sc_store_linger_release(sc_store_server_t *s)
{
    pthread_mutex_lock(&sc_linger_lock);
    sc_store_linger_unhold(s);
    pthread_mutex_unlock(&sc_linger_lock);
}

void sc_store_linger_add(sc_store_server_t *s)
{
    sc_unload_thread_add(&s->entry, s->thread, &s->lock, &s->wake, &s->stop);
    pthread_mutex_lock(&sc_linger_lock);
    sc_store_linger_unhold(s);
    s->next = sc_linger_head;
    sc_linger_head = s;
    pthread_mutex_unlock(&sc_linger_lock);
}

/* Ends s, taken off the list: its thread joined (asked to stop first where it still
 * tells) where it is this process's, else only forgotten (a fork's copy: the thread is
 * the parent's); then s is freed. */
static void sc_store_linger_end(sc_store_server_t *s)
{
    if (s->entry.owner != getpid()) {
        sc_unload_thread_remove(&s->entry);
        free(s); /* its lock may have been copied held: not destroyed */
        return;
    }
    if (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE))
        sc_store_linger_stop(s);
    if (sc_unload_thread_remove(&s->entry))
        pthread_join(s->thread, NULL);
    sc_store_server_fini(s);
    free(s);
}

void sc_store_linger_reap(int port)
{
    sc_store_server_t **p, *s, *ended = NULL;
    pid_t self = getpid();

    pthread_mutex_lock(&sc_linger_lock);
    /* One on port that rank 0's call on another thread still waits for (its 5 s before
     * the hand-over): stopped, and awaited until that call joined it or handed it over;
     * the bind of this rendezvous failed meanwhile, naming this very process. */
    for (;;) {
        for (s = sc_linger_held; s != NULL; s = s->next)
            if (s->holder == self && s->port == port)
                break;
        if (s == NULL)
            break;
        sc_store_linger_stop(s);
        pthread_cond_wait(&sc_linger_left, &sc_linger_lock);
    }
    for (p = &sc_linger_head; (s = *p) != NULL;) {
        if (s->entry.owner == self && s->port != port &&
            !__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
            p = &s->next;
            continue;
        }
        *p = s->next;
        sc_store_linger_unwatch_locked(s);
        s->next = ended;
        ended = s;
    }
    pthread_mutex_unlock(&sc_linger_lock);
    while ((s = ended) != NULL) {
        ended = s->next;
        sc_store_linger_end(s);
    }
}

void sc_store_linger_unload(const struct timespec *until)
{
    sc_store_server_t **p, *s;
    pid_t self = getpid();

    /* Not free by then: this thread holds it (a signal handler that called exit()). */
    if (pthread_mutex_timedlock(&sc_linger_lock, until) != 0)
        return;
    for (p = &sc_linger_head; (s = *p) != NULL;) {
        if (s->entry.owner == self && !__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
            p = &s->next; /* still running: left as it is, as the unload leaves it */
            continue;
        }
        *p = s->next;
        sc_store_linger_unwatch_locked(s);
        sc_store_linger_end(s);
    }
    pthread_mutex_unlock(&sc_linger_lock);
}
