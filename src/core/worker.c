/* The ordered worker: a FIFO of intrusive jobs under a mutex, one thread that sleeps on a
 * condition variable while the queue is empty. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fpenv.h"
#include "core/unload_threads.h"
#include "core/worker.h"

struct sc_worker {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    sc_worker_job_t *head, *tail;
    int stop;
    pthread_t thread;
    sc_unload_thread_t entry; /* ended at the library's unload (dlclose, exit) */
};

static void *sc_worker_main(void *arg)
{
    sc_worker_t *w = arg;

    sc_fpenv_own_thread(); /* created by a caller whose modes it inherited */
    pthread_mutex_lock(&w->lock);
    for (;;) {
        sc_worker_job_t *job;

        while (!w->head && !w->stop)
            pthread_cond_wait(&w->wake, &w->lock);
        if (!w->head)
            break; /* stop, and nothing left */
        job = w->head;
        w->head = job->next;
        if (!w->head)
            w->tail = NULL;
        pthread_mutex_unlock(&w->lock);
        job->fn(job);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

sc_status_t sc_worker_create(const char *caller, sc_worker_t **worker)
{
    sc_worker_t *w = calloc(1, sizeof(*w));
    int rc;

    if (!w)
        return sc_error(SC_ERR_NO_MEMORY, "%s: out of memory for a worker thread", caller);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    rc = pthread_create(&w->thread, NULL, sc_worker_main, w);
    if (rc != 0) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return sc_error(SC_ERR_SYSTEM, "%s: starting a worker thread failed: %s", caller,
                        strerror(rc));
    }
    /* Ended by the library's unload too, after the jobs queued, as here. */
    sc_unload_thread_add(&w->entry, w->thread, &w->lock, &w->wake, &w->stop);
    *worker = w;
    return SC_SUCCESS;
}

void sc_worker_post(sc_worker_t *w, sc_worker_job_t *job)
{
    job->next = NULL;
    pthread_mutex_lock(&w->lock);
    if (w->tail)
        w->tail->next = job;
    else
        w->head = job;
    w->tail = job;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

void sc_worker_destroy(sc_worker_t *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    if (sc_unload_thread_remove(&w->entry))
        pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
