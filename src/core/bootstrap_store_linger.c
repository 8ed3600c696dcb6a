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
static sc_store_server_t *sc_linger_head;

void sc_store_linger_add(sc_store_server_t *s)
{
    sc_unload_thread_add(&s->entry, s->thread, &s->lock, &s->wake, &s->stop);
    pthread_mutex_lock(&sc_linger_lock);
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
    if (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&s->lock);
        s->stop = 1;
        pthread_cond_broadcast(&s->wake);
        pthread_mutex_unlock(&s->lock);
        sc_log(SC_LOG_INFO, "rendezvous: the store at %s of an earlier rendezvous, which "
               "failed, stops telling the processes still to come: a new rendezvous takes "
               "port %d", s->where, s->port);
    }
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
    for (p = &sc_linger_head; (s = *p) != NULL;) {
        if (s->entry.owner == self && s->port != port &&
            !__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
            p = &s->next;
            continue;
        }
        *p = s->next;
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
        sc_store_linger_end(s);
    }
    pthread_mutex_unlock(&sc_linger_lock);
}
