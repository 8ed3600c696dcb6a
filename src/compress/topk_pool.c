/* The selector's worker threads: a generation counter under a mutex starts a task, a
 * count of unfinished workers ends it. Workers sleep on a condition variable between
 * tasks, so an idle selector costs no CPU time. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compress/topk_pool.h"
#include "core/error.h"
#include "core/fpenv.h"
#include "core/unload_threads.h"

typedef struct {
    sc_topk_pool_t *pool;
    int tid;
    pthread_t thread;
    sc_unload_thread_t entry; /* ended at the library's unload (dlclose, exit) */
} sc_topk_worker_t;

struct sc_topk_pool {
    int size;
    int started;              /* workers running */
    pid_t owner;              /* the process whose threads they are (not a fork's child) */
    pthread_mutex_t lock;
    pthread_cond_t start;     /* generation advanced or stop set */
    pthread_cond_t done;      /* pending reached 0 */
    unsigned long generation;
    int active;               /* threads of the current task */
    int pending;              /* workers of the current task not yet finished */
    int stop;
    sc_topk_task_fn fn;
    void *arg;
    sc_topk_worker_t workers[];
};

static void *sc_topk_pool_main(void *p)
{
    sc_topk_worker_t *w = p;
    sc_topk_pool_t *pool = w->pool;
    unsigned long seen = 0;

    sc_fpenv_own_thread(); /* created by a caller whose modes it inherited */
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stop && pool->generation == seen)
            pthread_cond_wait(&pool->start, &pool->lock);
        if (pool->generation == seen)
            break; /* stopped; a task started before the unload stopped it is run first */
        seen = pool->generation;
        if (w->tid >= pool->active)
            continue;
        pthread_mutex_unlock(&pool->lock);
        pool->fn(pool->arg, w->tid);
        pthread_mutex_lock(&pool->lock);
        if (--pool->pending == 0)
            pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

sc_status_t sc_topk_pool_create(int nthreads, sc_topk_pool_t **pool)
{
    sc_topk_pool_t *p = calloc(1, sizeof(*p) + (size_t)nthreads * sizeof(p->workers[0]));
    sc_status_t st = SC_SUCCESS;
    int rc;

    if (!p)
        return sc_error(SC_ERR_NO_MEMORY, "sc_topk_create: out of memory for %d threads",
                        nthreads);
    p->size = nthreads;
    p->owner = getpid();
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int t = 1; t < nthreads; t++) {
        p->workers[t].pool = p;
        p->workers[t].tid = t;
        rc = pthread_create(&p->workers[t].thread, NULL, sc_topk_pool_main, &p->workers[t]);
        if (rc != 0) {
            st = sc_error(SC_ERR_SYSTEM, "sc_topk_create: starting worker thread %d of %d "
                          "failed: %s", t, nthreads, strerror(rc));
            goto err_stop;
        }
        p->started++;
        sc_unload_thread_add(&p->workers[t].entry, p->workers[t].thread, &p->lock,
                             &p->start, &p->stop);
    }
    *pool = p;
    return SC_SUCCESS;

err_stop:
    sc_topk_pool_destroy(p);
    return st;
}

int sc_topk_pool_size(const sc_topk_pool_t *pool)
{
    return pool->size;
}

/* In a child forked from the pool's process, the workers are not there (a data loader's
 * worker, a subprocess): the caller runs every part of the task itself, which gives the
 * same result (a selection never depends on its thread count). It waited for the
 * missing workers for ever. */
static int sc_topk_pool_forked(const sc_topk_pool_t *pool)
{
    return pool->owner != getpid();
}

void sc_topk_pool_run(sc_topk_pool_t *pool, int nthreads, sc_topk_task_fn fn, void *arg)
{
    int team = 0;

    /* Workers stopped by the library's unload (at exit, another thread still selecting)
     * would never take the task: the caller runs it alone, as in a fork's child. */
    if (nthreads > 1 && !sc_topk_pool_forked(pool)) {
        pthread_mutex_lock(&pool->lock);
        if (!pool->stop) {
            pool->fn = fn;
            pool->arg = arg;
            pool->active = nthreads;
            pool->pending = nthreads - 1;
            pool->generation++;
            pthread_cond_broadcast(&pool->start);
            team = 1;
        }
        pthread_mutex_unlock(&pool->lock);
    }
    if (!team) {
        for (int tid = 0; tid < nthreads; tid++)
            fn(arg, tid);
        return;
    }
    fn(arg, 0);
    pthread_mutex_lock(&pool->lock);
    while (pool->pending > 0)
        pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}

void sc_topk_pool_destroy(sc_topk_pool_t *pool)
{
    if (!pool)
        return;
    /* A fork's child frees its copy alone: joining the parent's workers, or destroying
     * the condition variables they wait on, would wait for ever. */
    if (pool->started > 0 && sc_topk_pool_forked(pool)) {
        for (int t = 1; t <= pool->started; t++)
            sc_unload_thread_remove(&pool->workers[t].entry);
        free(pool);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->stop = 1;
    pthread_cond_broadcast(&pool->start);
    pthread_mutex_unlock(&pool->lock);
    for (int t = 1; t <= pool->started; t++)
        if (sc_unload_thread_remove(&pool->workers[t].entry))
            pthread_join(pool->workers[t].thread, NULL);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->start);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}
