/* A thread that runs posted jobs one at a time, in the order they were posted: work that
 * must leave the caller's thread but keep its order (the top-k hook's selections, bucket
 * after bucket). Jobs are the caller's memory (intrusive), so posting cannot fail. */
#ifndef SC_CORE_WORKER_H
#define SC_CORE_WORKER_H

#include "shardcomm/status.h"

typedef struct sc_worker sc_worker_t;

typedef struct sc_worker_job {
    void (*fn)(struct sc_worker_job *job);
    struct sc_worker_job *next; /* the worker's */
} sc_worker_job_t;

/* Starts the thread. SC_ERR_SYSTEM or SC_ERR_NO_MEMORY with a sentence naming caller. */
sc_status_t sc_worker_create(const char *caller, sc_worker_t **worker);

/* Queues job (job->fn set; the job's memory stays valid until fn has returned). */
void sc_worker_post(sc_worker_t *worker, sc_worker_job_t *job);

/* Runs every job still queued, then stops and frees the worker. NULL is a no-op. The
 * library's unload (dlclose, exit) ends the thread the same way (sc_unload_threads_end);
 * the worker is then only freed here. */
void sc_worker_destroy(sc_worker_t *worker);

#endif
