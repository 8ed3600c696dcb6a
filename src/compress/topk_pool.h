/* The selector's worker threads: one task run by every thread of a team at once, the
 * caller being thread 0. */
#ifndef SC_COMPRESS_TOPK_POOL_H
#define SC_COMPRESS_TOPK_POOL_H

#include "shardcomm/status.h"

typedef struct sc_topk_pool sc_topk_pool_t;

/* fn(arg, tid) for tid in [0, nthreads). */
typedef void (*sc_topk_task_fn)(void *arg, int tid);

/* Starts nthreads - 1 workers (none for 1). SC_ERR_SYSTEM or SC_ERR_NO_MEMORY when they
 * cannot be started; *pool is written only on success. */
sc_status_t sc_topk_pool_create(int nthreads, sc_topk_pool_t **pool);

/* The pool's team size, caller included. */
int sc_topk_pool_size(const sc_topk_pool_t *pool);

/* Runs fn(arg, tid) on nthreads threads (1 <= nthreads <= the team size; the caller runs
 * tid 0) and returns when all have returned; in a child forked after the pool's creation,
 * or after the library's unload stopped the workers, the caller runs every tid in turn.
 * One caller at a time. */
void sc_topk_pool_run(sc_topk_pool_t *pool, int nthreads, sc_topk_task_fn fn, void *arg);

/* Stops and joins the workers (in a fork's child, only frees the pool). NULL is a no-op.
 * The library's unload (dlclose, exit) stops and joins them too (sc_unload_threads_end);
 * the pool is then only freed here, and sc_topk_pool_run runs every part on its caller. */
void sc_topk_pool_destroy(sc_topk_pool_t *pool);

#endif
