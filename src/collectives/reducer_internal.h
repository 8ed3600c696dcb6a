/* The gradient reducer's state, shared by its files: reducer.c (create, destroy,
 * accessors), reducer_check.c (registration agreement), reducer_layout.c (buckets),
 * reducer_iter.c (iterations), reducer_kernels.c (host element work),
 * reducer_mem_cuda.c / reducer_mem_nocuda.c and reducer_cuda.cu (device buckets),
 * reducer_hooks.c (built-in comm hooks), reducer_state.c (hook state for checkpoints),
 * reducer_tune.c (bucket-cap autotuning) and reducer_watch.c (peers' reducers destroyed
 * between iterations). */
#ifndef SC_COLLECTIVES_REDUCER_INTERNAL_H
#define SC_COLLECTIVES_REDUCER_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "collectives/reducer_watch.h"
#include "collectives/schedule.h"
#include "core/error.h"
#include "core/unload_threads.h"
#include "shardcomm/memory.h"
#include "shardcomm/reducer.h"

/* Autotuning tries at most this many caps, in SC_TUNE_ROUNDS turns of SC_TUNE_SAMPLES
 * iterations each; the first iteration of a turn warms the new bucket memory and is not
 * counted. */
#define SC_TUNE_MAX_CANDIDATES 4
#define SC_TUNE_ROUNDS 2
#define SC_TUNE_SAMPLES 3

/* One registered gradient. */
typedef struct {
    size_t count;
    sc_dtype_t dtype;
    char *name;      /* "" when none was given */
    int bucket;      /* index into reducer->buckets */
    size_t offset;   /* element offset in that bucket */
    /* Iteration state. marked and user belong to the thread that marked the gradient
     * until finalize; has_data and user persist across iterations without sync. */
    int marked;      /* marked ready in this iteration */
    int has_data;    /* its slot (or view) holds a contribution since the last sync */
    void *user;      /* pointer given to mark_ready since the last sync (copy mode) */
    int direct;      /* this iteration: left unscaled in user's memory, where the bucket's
                        start reads it (copy mode, host, the float16/bfloat16 hooks) */
} sc_rgrad_t;

/* Where the buckets live and how the element work on them runs: host memory, on the
 * calling thread (reducer_kernels.c), or device memory of one GPU, ordered on the
 * reducer's communication stream (reducer_mem_cuda.c; reducer_mem_nocuda.c refuses it
 * in a host-only build). Buckets come from sc_mem_alloc_on(device, ...). */
typedef struct sc_reducer_mem sc_reducer_mem_t;
struct sc_reducer_mem {
    int device;            /* -1: host buckets */
    sc_stream_t stream;    /* the communication stream; NULL for host buckets */
    void *state;
    sc_status_t (*copy)(sc_reducer_mem_t *m, void *dst, const void *src, size_t bytes);
    sc_status_t (*zero)(sc_reducer_mem_t *m, void *dst, size_t bytes);
    /* dst = src * scale, or dst += src * scale with accumulate (see scale_copy/_add). */
    sc_status_t (*scale)(sc_reducer_mem_t *m, sc_dtype_t dtype, void *dst, const void *src,
                         size_t count, double scale, int accumulate);
    /* Later element work waits for the compute stream's work so far (a gradient's
     * producer), and the compute stream's later work for the element work and
     * reductions so far (the framework reads the results). No-ops on the host. */
    sc_status_t (*after_compute)(sc_reducer_mem_t *m);
    sc_status_t (*before_compute)(sc_reducer_mem_t *m);
    void (*close)(sc_reducer_mem_t *m);
};

/* Host buckets. */
void sc_reducer_mem_host(sc_reducer_mem_t *m);

/* Device buckets for gradients produced on compute (a cudaStream_t) of the GPU the
 * communicator uses (comm_gpu, -1 when it has none): creates the communication
 * stream. SC_ERR_INVALID_ARG for an invalid stream or one of another GPU,
 * SC_ERR_DEVICE when the communicator has no GPU, SC_ERR_UNSUPPORTED in a host-only
 * build. */
sc_status_t sc_reducer_mem_device(sc_reducer_mem_t *m, sc_stream_t compute, int comm_gpu);

/* One gradient's part of a bucket as the float16/bfloat16 hooks' start reads it:
 * bytes [off, off + bytes) of the (float32) bucket, from src, multiplied by scale. */
typedef struct {
    size_t off;
    size_t bytes;
    const void *src;
    float scale;
} sc_hook_source_t;

/* One bucket: gradients of one dtype and one memory kind, contiguous. */
typedef struct {
    sc_hook_bucket_t hb;  /* as the hook sees it, but for its iteration (sc_bucket_seen) */
    int *grads;           /* gradient indices in slot order */
    int ngrads;
    int pending;          /* gradients not yet marked in this iteration (under lock) */
    sc_status_t start_status;
    sc_request_t *req;    /* NULL when nothing was issued (count 0, failed start) */
    void *in_place;       /* this iteration: its one gradient's own memory, which start
                             and finish get as data instead of hb.data (copy mode, host,
                             built-in hook); else NULL */
    int in_place_scaled;  /* in_place, divided by prediv inside its all-reduce rather
                             than by a pass of its own at mark time */
    sc_range_t *deliver;  /* room for a range per gradient: where its results go */
    sc_hook_source_t *source; /* room for a part per gradient: where the float16/bfloat16
                             hooks' start reads it */
} sc_rbucket_t;

typedef struct {
    int asked;            /* config.autotune */
    int fixed;            /* config.autotune, but SC_BUCKET_CAP_MB fixes the cap: off */
    int active;           /* candidates left to measure */
    int done;             /* a cap was chosen */
    int ncand, cand, round, samples;
    size_t caps[SC_TUNE_MAX_CANDIDATES];
    double best_s[SC_TUNE_MAX_CANDIDATES]; /* fastest counted iteration per cap */
} sc_reducer_tune_t;

struct sc_reducer {
    sc_comm_t *comm;
    int rank, size;
    int n;
    sc_rgrad_t *grads;
    sc_rbucket_t *buckets;
    int nbuckets;
    void *registered;        /* the buckets' registered memory (sc_mem_alloc), or NULL:
                                each bucket allocated on its own */
    unsigned long ops_left;  /* sc_ucx_ops_left when the reducer was made */
    sc_reducer_mem_t mem;    /* where the buckets live */
    size_t first_cap, cap;   /* bytes */
    int view, find_unused;
    double prediv;           /* resolved: > 0 */
    sc_comm_hook_t hook;
    int hook_claimed;        /* hook.state is in the list of owned states (reducer.c) */

    /* Iteration state, under lock. */
    pthread_mutex_t lock;
    pthread_cond_t changed;  /* a bucket started or ended its finish; stopping was set */
    int sync;                /* this iteration reduces (set_sync) */
    int issuing;             /* a thread is starting buckets */
    int next_start;          /* first bucket not started in this iteration */
    int harvesting;          /* a thread is finishing a bucket */
    int nstarted;            /* buckets whose start has returned (<= next_start) */
    int next_done;           /* first started bucket not claimed for its finish */
    int aborted;             /* a start failed: the communicator is aborted */
    int watching;            /* this synced iteration communicates (sc_reducer_watch_begin) */
    int marking;             /* mark_ready calls between their two locked sections */
    int *order;              /* gradients in the order they were marked */
    int nready;
    double t_first, t_last;  /* first and last mark_ready of this iteration */
    sc_status_t async_status; /* first failure of a start or finish in this iteration */
    char async_text[SC_ERROR_MAX];
    int finisher_on;         /* the finisher thread runs (sc_reducer_finisher_start) */
    int stopping;            /* the finisher thread is asked to end */
    pthread_t finisher;
    sc_unload_thread_t finisher_entry; /* ended at the library's unload (dlclose, exit) */

    /* Across iterations (finalize's thread). */
    long synced;             /* synced iterations finished successfully */
    uint64_t iteration;      /* the iteration in progress, from 1 (sc_hook_bucket_t's);
                                moved on under the lock as an iteration ends */
    sc_reducer_watch_t watch; /* its peers' reducers destroyed between iterations */
    long unsynced;           /* iterations without sync since the last synced one */
    sc_status_t unbuilt;     /* a rebuild released the buckets' memory and then failed:
                                no iteration can run (SC_SUCCESS while it has buckets) */
    char unbuilt_text[SC_ERROR_MAX];
    /* The previous layout's buckets after a change of layout with views, until the
     * views move (sc_reducer_move_views): the views the framework holds keep the results
     * until its next call on the reducer. NULL when none are pending. */
    sc_rbucket_t *moved;
    int nmoved;
    void *moved_registered;
    void **moved_slot;       /* per gradient: its view in the previous layout, or NULL */
    int *fill;               /* fill order since the rebuild (rank 0's ready order);
                                NULL before it: reverse registration order */
    sc_reducer_tune_t tune;
    sc_reducer_stats_t stats;
    size_t copy_bytes;       /* this iteration's, atomic (copies run without the lock) */
};

/* ---- iterations (reducer_iter.c) -------------------------------------------------- */

/* Starts the finisher thread of a reducer with host buckets and work after a bucket's
 * reduction (copy mode, or a hook with finish): it finishes each started bucket as
 * soon as its reduction is over (hook->finish, the copy back), in bucket order, so
 * that this work overlaps the caller's compute. SC_ERR_SYSTEM when the thread cannot
 * start. */
sc_status_t sc_reducer_finisher_start(sc_reducer_t *r);

/* Ends the finisher thread, once the bucket it is finishing (if any) is finished; it
 * claims no other. No-op when it does not run, or when the library's unload ended it. */
void sc_reducer_finisher_stop(sc_reducer_t *r);

/* ---- layout (reducer_layout.c) ---------------------------------------------------- */

/* Lays out the buckets for cap, filling them in `order` (NULL: reverse registration
 * order). Replaces r->buckets only on success. Called between iterations. With views,
 * the previous layout's buckets stay (r->moved) until sc_reducer_move_views.
 * collective: on a layout every rank agreed on, the host buckets go into one block of
 * registered memory (sc_mem_alloc), which the peers on this node read in place when
 * the plain all-reduce reduces a bucket; where that cannot be (a device or single-rank
 * reducer, ranks on several nodes, SC_LOCAL_REGISTER=0, sc_mem_alloc failing on any
 * rank: the same outcome on every rank) into plain memory. Then it fails only when the
 * communicator does. */
sc_status_t sc_reducer_layout(sc_reducer_t *r, const int *order, size_t cap, int collective);

/* Moves the views' contents from the previous layout's buckets, left by
 * sc_reducer_layout, into the current ones and frees the previous ones; no-op when none
 * are left. Called by the first call on the reducer after the change of layout (under
 * r->lock where mark_ready may run), so that the views the framework held at finalize
 * keep the results, and its writes to them (an optimizer's zero_grad), until then. A
 * failure (a device copy) leaves the reducer without buckets (r->unbuilt). */
sc_status_t sc_reducer_move_views(sc_reducer_t *r);

/* Frees the previous layout's buckets without moving anything (sc_reducer_destroy). */
void sc_reducer_drop_moved(sc_reducer_t *r);

/* Whether the host buckets should live in registered memory (host reducer, ranks all on
 * one node, SC_LOCAL_REGISTER=1): the same answer on every rank. */
int sc_reducer_wants_registered(const sc_reducer_t *r);

/* Frees buckets and their memory: registered (sc_mem_alloc) when it is not NULL, else
 * each bucket's own. */
void sc_reducer_free_buckets(sc_reducer_t *r, sc_rbucket_t *buckets, int nbuckets,
                             void *registered);


/* ---- registration agreement (reducer_check.c) -------------------------------------- */

/* Collective: every rank's gradients and reducer settings against rank 0's. local is
 * this rank's status so far (its sentence in sc_last_error()); a failure on any rank is
 * an error on every rank. */
sc_status_t sc_reducer_agree(sc_comm_t *comm, const sc_grad_desc_t *grads, int n,
                             const sc_reducer_t *r, sc_status_t local);

/* ---- host element work (reducer_kernels.c) ----------------------------------------- */

/* 1 for the dtypes a reducer takes (float32/64, float16, bfloat16, the integers). */
int sc_reducer_dtype_ok(sc_dtype_t dtype);

/* ---- built-in hooks (reducer_hooks.c) ----------------------------------------------- */

/* Whether hook is a built-in one (plain all-reduce, float16 or bfloat16 compression),
 * which reads and writes a bucket's data only inside start and finish, wherever it is:
 * so a bucket may be reduced in its gradient's own memory. */
int sc_reducer_hook_is_builtin(const sc_comm_hook_t *hook);

/* Why a caller's hook failed with st (not SC_SUCCESS), for the sentence that names it:
 * the hook's own sentence (set on this thread), without its "rank R: " prefix, or that
 * it gave none (the caller clears the sentence with sc_error_clear before calling the
 * hook). Returns the status the reducer reports: st when it is an error status; else
 * (SC_IN_PROGRESS, or a value that is no sc_status_t), which a caller testing for an
 * error (st < 0) would take for no failure, SC_ERR_INVALID_ARG, why then saying what
 * the hook returned. */
sc_status_t sc_reducer_hook_why(sc_status_t st, char *why, size_t len);

/* Whether hook is the float16 or bfloat16 compression. */
int sc_reducer_hook_is_cast(const sc_comm_hook_t *hook);

struct sc_transport;

/* The float16/bfloat16 hook's destroy hands its narrow copies to tp (sc_ucx_keep_block)
 * instead of freeing them: a failed all-reduce of theirs may still write them. */
void sc_reducer_hook_cast_keep(const sc_comm_hook_t *hook, struct sc_transport *tp);

/* Nonzero when a transfer of a failed collective may still write memory the reducer
 * handed to collectives: an op on its transport was left stuck since it was made. */
int sc_reducer_must_keep(const sc_reducer_t *r);

/* The float16/bfloat16 hooks' start, reading each part of the bucket from its source
 * (n parts covering the bucket, in order: a gradient still in the caller's memory and
 * not yet scaled, or the bucket's own slot) straight into the narrow copy, then
 * all-reducing that: the bucket's float32 memory is skipped where it can be. */
sc_status_t sc_hook_cast_start_from(const sc_comm_hook_t *hook, const sc_hook_bucket_t *bucket,
                                    sc_comm_t *comm, const sc_hook_source_t *src, int n,
                                    sc_request_t **req);

/* Whether hook is the plain all-reduce, whose start is one in-place sc_allreduce of
 * the bucket and which has no finish: the reducer may issue that all-reduce itself,
 * with the copy back to the gradients delivered by it (sc_allreduce_delivered). */
int sc_reducer_hook_is_plain(const sc_comm_hook_t *hook);
/* Host gradients copied into buckets with the plain hook: from this size a gradient is
 * alone in its bucket, reduced in its caller's memory (reducer_layout.c). */
#define SC_REDUCER_SOLO_BYTES ((size_t)1 << 20)

/* ---- autotuning (reducer_tune.c) ---------------------------------------------------- */

/* The caps to try for a model of total_bytes (largest bucket dtype group). */
void sc_reducer_tune_init(sc_reducer_tune_t *t, size_t total_bytes);

/* After a counted synced iteration of iter_s seconds (the same value on every rank):
 * the cap to switch to now, or 0 to keep the current one. */
size_t sc_reducer_tune_step(sc_reducer_t *r, double iter_s);

#endif
