/* The gradient reducer: bucketed all-reduce of a model's gradients, overlapped with
 * the backward pass (what PyTorch DDP's Reducer and Horovod's tensor fusion do), with
 * gradient accumulation, per-bucket comm hooks and bucket-size autotuning.
 *
 * The result of an iteration is, for every element, the sum over ranks of the
 * gradient divided by prediv (the default, prediv = the communicator size, gives the
 * average), bitwise the same on every rank with the default hook. Integer gradients
 * are summed (prediv must be 1 for them). prediv is the whole division, unlike DDP's
 * gradient_predivide_factor (after which DDP divides by world_size / factor again):
 * prediv 1 gives the sum, not the average.
 *
 * Buckets hold one dtype and one memory kind. They are filled in reverse registration
 * order (the order of a backward pass), one open bucket per dtype: a dtype's first
 * bucket up to first_bucket_bytes, the next ones up to the cap; a gradient larger than
 * the limit gets a bucket of its own. So does, whatever the cap, a host gradient of at
 * least 1 MiB that is copied (no gradient_as_bucket_view) with the plain all-reduce
 * hook on a communicator whose ranks share one node and stage plain memory
 * (SC_STAGE_BYTES not 0, and a UCX_TLS that keeps a shared-memory transport), the
 * others laid out as without it: it is then reduced where
 * it is, in the caller's memory, since copying it into a bucket and back costs more
 * than fusing saves there. Buckets start (are reduced) in the order of their last
 * gradient. After the first synced iteration they are rebuilt once in the order in
 * which rank 0 marked its gradients (unless that order puts every gradient where it
 * already is: then nothing moves, and the views and the hooks' layout stay).
 *
 * Buckets are host memory, or with config.stream set (the compute stream on which the
 * framework produces its gradients, a cudaStream_t) device memory of that stream's GPU,
 * which must be the communicator's. Then the reducer owns a communication stream: each
 * mark_ready makes it wait for the work enqueued on the compute stream so far, and the
 * scaled copy, the bucket's all-reduce (NCCL or host-staged) and the copy back run on
 * it; finalize waits for the buckets and makes the compute stream wait for the
 * communication stream, so that the framework's next kernels see the results. Views
 * (gradient_as_bucket_view) are then device memory. Host buckets of a communicator
 * whose ranks all share one node are registered memory (sc_mem_alloc; SC_LOCAL_REGISTER=0
 * keeps them plain), so that their all-reduces read the peers' buckets in place; to the
 * caller they are host memory like any other.
 *
 * Threads: mark_ready may be called from any thread, concurrently for different
 * gradients. Every other call on a reducer comes from one thread at a time (but for
 * sc_reducer_hook_save, which several threads may call at once between iterations), and
 * finalize only after every mark_ready of the iteration has returned. Between the
 * first mark_ready of a synced iteration and finalize's return the reducer issues
 * collectives on the communicator (from whichever thread completes a bucket): the
 * caller issues none of its own on it then (sc_comm_split gives another one); one that
 * meets a start in flight on another thread is refused, or makes the start fail
 * (collectives.h, "Thread safety"), which aborts the communicator, and one made while
 * sc_reducer_create or a synced iteration's sc_reducer_finalize runs on another thread
 * is refused (they hold the communicator from their entry until they return). A
 * reducer with host buckets whose finish has work (a hook's finish, or copies with a
 * hook other than the plain all-reduce, whose all-reduce copies the results back
 * itself as they become final) owns a thread that finishes each bucket as soon as its
 * reduction is over, while the caller computes. */
#ifndef SHARDCOMM_REDUCER_H
#define SHARDCOMM_REDUCER_H

#include <stddef.h>
#include <stdint.h>

#include "shardcomm/api.h"
#include "shardcomm/collectives.h"
#include "shardcomm/comm.h"
#include "shardcomm/status.h"
#include "shardcomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sc_reducer sc_reducer_t;

/* One gradient as registered: element count, dtype, optional name (copied; used in
 * error sentences). A gradient is count contiguous elements from the pointer given to
 * mark_ready: a binding passes contiguous tensors only (torch: is_contiguous(); a dense
 * permuted layout such as channels_last is fine when every rank uses the same), since
 * a strided view's memory would be read as if it were contiguous. */
typedef struct {
    size_t count;
    sc_dtype_t dtype;
    const char *name;
} sc_grad_desc_t;

/* One bucket as a comm hook sees it: data holds count elements of dtype, already
 * multiplied by the pre-division factor; stream is the reducer's communication stream
 * (NULL for host buckets). layout identifies the bucket's contents (its dtype and which
 * gradients, in which order: a hash, never 0): it changes when a new layout (the rebuild
 * after the first iteration where it moves a gradient, each cap autotuning tries) puts
 * other gradients or other offsets in this bucket, so a hook that keeps state per bucket
 * index knows that index now holds other gradients; it is the same in every process for
 * the same contents, so a hook's checkpoint can name the bucket its state belongs to.
 * iteration numbers the reducer's iterations from 1 (those without sync too): the same
 * for every bucket of one iteration, higher in a later one, so that a hook knows which
 * bucket indices the latest iteration started (a bucket of zero elements is never
 * started, so the indices alone do not tell where an iteration begins). last is 1 on
 * the layout's last bucket of elements (the last one an iteration starts), 0 on the
 * others: an iteration that failed before it started only some of its buckets, so a
 * hook that keeps state per bucket index tells a bucket its iteration never reached
 * from one the layout no longer has by the latest iteration that started its last
 * bucket. (Added after iteration: a hook built before it never reads it.) */
typedef struct {
    int index;
    void *data;
    size_t count;
    sc_dtype_t dtype;
    sc_stream_t stream;
    uint64_t layout;
    uint64_t iteration;
    int last;
} sc_hook_bucket_t;

/* A comm hook: how one bucket is reduced across ranks. A vtable plus state, like every
 * plugin: validate checks the state against the bucket's dtype (an error naming the
 * field and its allowed values); start begins the reduction and returns a request;
 * finish runs after that request completed and leaves the sum over ranks in
 * bucket->data. start and finish may run on different threads, the finish of one bucket
 * while a later one starts; finish runs once per bucket, in bucket order. Only start
 * issues collectives (the reducer calls it in bucket order on every rank); finish, which
 * runs on the reducer's finisher thread with host buckets, issues none. Each function
 * returns SC_SUCCESS or an error status (negative), which the reducer call it failed
 * returns; any other value (SC_IN_PROGRESS, a number that is no sc_status_t) is a
 * failure too, returned as SC_ERR_INVALID_ARG with a sentence saying what the hook
 * returned. A start that fails aborts the communicator (sc_reducer_mark_ready); a
 * request it set in *req before failing (a collective it issued) is the reducer's: it
 * is waited for (the abort fails it at once) and freed, by finalize or destroy.
 * save/load carry the state across checkpoints (NULL when stateless):
 * save with buf NULL sets *len to the bytes needed, else writes at most *len bytes and
 * sets *len to what it wrote (SC_ERR_INVALID_ARG when they do not fit; a *len past the
 * room given fails sc_reducer_hook_save with SC_ERR_INVALID_ARG); load takes
 * exactly what save wrote and leaves the state unchanged when it fails; both run
 * under the reducer's lock (sc_reducer_hook_save), so they call nothing of the reducer;
 * destroy frees it (NULL when nothing to free), after waiting for any work of its own
 * still reading a bucket: the reducer frees the buckets after destroy returns. The
 * reducer owns a hook passed in its configuration and destroys it with itself.
 * finish_into (optional; NULL: finish, then the reducer copies the results back) is
 * finish writing the results straight into the caller's gradients instead of
 * bucket->data: ranges[0..n) are byte ranges of the bucket (sorted, disjoint) with the
 * gradient each goes to, and bytes outside them are no one's; bucket->data may be used
 * as scratch. The reducer calls it instead of finish for host buckets of copies (not
 * with views, where the results stay in the bucket), and copies nothing back then; the
 * built-in float16/bfloat16 hooks and the top-k hook have one.
 * config (optional; NULL: nothing) is the hook's settings as text, which every rank's
 * must equal: sc_reducer_create compares it (SC_ERR_MISMATCH naming the hook and this
 * rank's text otherwise), so that ranks whose hooks differ fail there and not in a
 * bucket's collective. It is not part of a checkpoint (save/load), so a run may resume
 * with other settings. Owned by the state: valid until destroy. */
typedef struct sc_comm_hook {
    const char *name;
    void *state;
    sc_status_t (*validate)(void *state, sc_dtype_t dtype);
    sc_status_t (*start)(void *state, const sc_hook_bucket_t *bucket, sc_comm_t *comm,
                         sc_request_t **req);
    sc_status_t (*finish)(void *state, const sc_hook_bucket_t *bucket, sc_comm_t *comm);
    sc_status_t (*save)(void *state, void *buf, size_t *len);
    sc_status_t (*load)(void *state, const void *buf, size_t len);
    void (*destroy)(void *state);
    sc_status_t (*finish_into)(void *state, const sc_hook_bucket_t *bucket, sc_comm_t *comm,
                               const sc_range_t *ranges, int n);
    const char *config;
} sc_comm_hook_t;

typedef enum {
    SC_HOOK_ALLREDUCE = 0, /* plain all-reduce in the bucket's dtype (the default) */
    SC_HOOK_FP16,          /* cast to float16, all-reduce, cast back */
    SC_HOOK_BF16           /* cast to bfloat16, all-reduce, cast back */
} sc_hook_kind_t;

/* Fills *hook with a built-in hook (its state freshly allocated). The float16 and
 * bfloat16 hooks take float32 buckets only (validate says so otherwise). */
SC_API sc_status_t sc_comm_hook_builtin(sc_hook_kind_t kind, sc_comm_hook_t *hook);

typedef struct {
    size_t size;                 /* sizeof(sc_reducer_config_t), set by the macro */
    size_t bucket_cap_bytes;     /* 0: SC_BUCKET_CAP_MB, else 25 MiB */
    size_t first_bucket_bytes;   /* 0: 1 MiB */
    int gradient_as_bucket_view; /* gradients live in bucket memory (sc_reducer_grad_view) */
    int find_unused;             /* gradients never marked count as zero */
    int autotune;                /* try bucket caps over the first iterations */
    double prediv;               /* divide by this before the sum; 0: the comm size */
    const sc_comm_hook_t *hook;  /* NULL: SC_HOOK_ALLREDUCE; copied, owned afterwards */
    sc_stream_t stream;          /* compute stream of device gradients: device buckets;
                                    NULL: host buckets */
} sc_reducer_config_t;

#define SC_REDUCER_CONFIG_INIT                                                         \
    { sizeof(sc_reducer_config_t), 0, 0, 0, 0, 0, 0.0, NULL, NULL }

/* Registers n gradients (collective: every rank registers the same list; a mismatch
 * is SC_ERR_MISMATCH on every rank naming the first differing gradient and both
 * ranks) and lays out the buckets in reverse registration order. The caps, find_unused,
 * autotune (and, with autotune, whether SC_BUCKET_CAP_MB is set, which turns it off),
 * prediv, gradient_as_bucket_view, whether config.stream is set and the hook's name and
 * config must agree across ranks too (SC_ERR_MISMATCH naming the field). An argument error on one rank (SC_ERR_INVALID_ARG: config.size other than
 * sizeof(sc_reducer_config_t) (the config is then not read, its hook not destroyed), a
 * switch (gradient_as_bucket_view, find_unused, autotune) other than 0 or 1, a
 * dtype the reducer does not take, prediv not 1 with integer gradients, a hook that refuses a
 * bucket dtype or a stream that is invalid or of another GPU than the communicator's;
 * SC_ERR_DEVICE: config.stream set but the communicator has no GPU; SC_ERR_UNSUPPORTED:
 * config.stream set in a host-only build) fails every rank: that rank
 * with its sentence, the others naming it. n == 0 and gradients of zero elements are
 * legal. The hook in config is owned by the reducer from this call on, also when it
 * fails (then it is destroyed here), so each reducer needs a hook of its own: one whose
 * state a live reducer owns already (the same hook given twice) is SC_ERR_INVALID_ARG on
 * every rank and stays that reducer's (a hook of a destroyed reducer is freed memory,
 * which cannot be told). config NULL: SC_REDUCER_CONFIG_INIT. */
SC_API sc_status_t sc_reducer_create(sc_comm_t *comm, const sc_grad_desc_t *grads, int n,
                                     const sc_reducer_config_t *config,
                                     sc_reducer_t **reducer);

/* Gradient i is ready at grad (NULL with gradient_as_bucket_view: it is in its view).
 * Copies it into its bucket scaled by 1/prediv; a full bucket's reduction starts, in
 * bucket order on every rank. Any thread; one call per gradient per iteration.
 * grad stays valid until finalize returns: the result is written to it at the latest
 * then, and possibly earlier, as its bucket is reduced (host buckets with the plain
 * all-reduce hook: by the all-reduce itself, part by part as the results become final;
 * with another hook: by the reducer's thread once the bucket is done; device buckets:
 * by a later mark_ready). A gradient alone in its bucket (host buckets, a built-in
 * hook, nothing accumulated without sync) is not copied: it is scaled and reduced in
 * place in grad, so that a large tensor costs no copy in and out. With the float16 and
 * bfloat16 hooks (host buckets, nothing accumulated) the others are not copied either:
 * each is read from grad, scaled, when its bucket starts. So the caller does not write
 * grad from this call until finalize returns: the reducer reads and writes it in
 * between. After a failed
 * iteration a gradient of host buckets may hold a partial result.
 * With gradient_as_bucket_view the view is scaled in place (in a synced iteration; in
 * registered buckets with the plain all-reduce hook, inside the bucket's all-reduce,
 * so that the view holds the unscaled gradient until its bucket starts);
 * grad must then be NULL or the view. Errors, with nothing changed: SC_ERR_INVALID_ARG
 * for an index outside [0, n), a gradient already marked in this iteration, a NULL
 * grad (copy mode, count > 0), one not aligned to its elements, one outside its view,
 * or one of the wrong memory kind
 * (device memory for host buckets; anything but device or managed memory of the
 * buckets' GPU for device buckets). A failure to start a bucket (the hook, a broken communicator) is
 * returned by the call that started it and by finalize, and aborts the communicator:
 * a bucket missing on one rank would shift every later collective. */
SC_API sc_status_t sc_reducer_mark_ready(sc_reducer_t *reducer, int i, void *grad);

/* Where gradient i lives in bucket memory (gradient_as_bucket_view), else NULL (also
 * for a gradient of zero elements alone in its bucket). A rebuild of the buckets (by the
 * first synced finalize, and by finalize while autotuning changes the cap) moves the
 * views: those taken before stay valid after that finalize, holding its results, until
 * the next call on the reducer other than sc_reducer_stats and sc_reducer_grad_bucket
 * (this one, mark_ready, set_sync, finalize), which moves their contents, with what the
 * framework wrote to them meanwhile (an optimizer's zero_grad), into the new views and
 * frees them. So ask again each iteration, before writing to the views; valid until
 * then or until the reducer is destroyed. */
SC_API void *sc_reducer_grad_view(sc_reducer_t *reducer, int i);

/* Which bucket holds gradient i (buckets are numbered in the order they start) and its
 * element offset there, in the current layout. SC_ERR_INVALID_ARG for a bad index. */
SC_API sc_status_t sc_reducer_grad_bucket(const sc_reducer_t *reducer, int i, int *bucket,
                                          size_t *offset);

/* Waits for every bucket and writes the averaged gradients back to the pointers given
 * to mark_ready (or leaves them in the views). Missing gradients: zero with
 * find_unused, else SC_ERR_INVALID_ARG listing them. Ends the iteration.
 * A bucket whose reduction is over is finished (and copied back) before, by the
 * reducer's thread (host buckets) or a later mark_ready (device buckets; views whose
 * hook has no finish), so that the copies overlap the backward pass. In a synced
 * iteration every bucket is reduced, gradients never marked contributing zeros, and one
 * small all-reduce tells every rank whether any rank missed gradients or failed: then
 * every rank returns an error (the rank concerned lists its gradients, the others name
 * it); as with a collective that fails while running, gradients of buckets that were
 * already reduced may have been written, and a gradient reduced in place in the
 * caller's memory may still be written until the last communicator of the reducer's
 * sc_comm_init is destroyed (collectives.h; the reducer's own buckets in plain memory
 * are then kept until that point too, after sc_reducer_destroy; buckets in registered
 * memory, used where all ranks share a node, are given back at sc_reducer_destroy:
 * their peers read and write them through their own mappings, and only a message
 * algorithm forced by SC_ALGO could leave a transfer writing them). With find_unused a gradient this rank
 * never marked gets the other ranks' contributions in its view (gradient_as_bucket_view);
 * in copy mode it has no pointer to be written to: to receive them (as DDP gives a
 * parameter unused on one rank the others' average), mark it with a zeroed buffer. In an iteration without sync
 * nothing is communicated and missing gradients are an error on this rank only. */
SC_API sc_status_t sc_reducer_finalize(sc_reducer_t *reducer);

/* sync 0: the following iterations accumulate locally and communicate nothing; the
 * next iteration with sync 1 reduces the sum. In copy mode the reducer accumulates
 * the scaled gradients in its buckets, so each mark must pass that iteration's gradient
 * alone (DDP reads param.grad, which autograd has summed already: a binding that passes
 * a gradient it does not zero between iterations counts earlier ones twice); with
 * gradient_as_bucket_view the framework
 * accumulates in the views (as autograd does) and the synced iteration divides them
 * once. Called between iterations (SC_ERR_INVALID_ARG once a gradient is marked).
 * Every rank runs as many iterations without sync before each synced one (as with a
 * fixed number of accumulation steps): where the counts differ, a rank's synced
 * iteration has met another rank's later one, and the synced finalize fails with
 * SC_ERR_MISMATCH on every rank (each when it reaches it), its gradients holding sums of
 * different iterations. sync other than 0 or 1 is SC_ERR_INVALID_ARG (nothing changed). */
SC_API sc_status_t sc_reducer_set_sync(sc_reducer_t *reducer, int sync);

/* What the last finished iteration did, for benchmarks and tuning. Autotuning (with
 * config.autotune, unless SC_BUCKET_CAP_MB is set) tries caps of 1, 5, 25 and 100 MiB
 * (clipped to the model's size) after the rebuild, taking turns of 3 synced iterations,
 * twice round, keeps the fastest (slowest rank's time; the first iteration of a turn is
 * not counted), logs it at info level and sets autotune_done: 1 + 24 iterations for
 * four caps. */
typedef struct {
    int buckets;
    size_t bucket_cap_bytes;     /* in force (the autotuned choice once made) */
    double last_ready_to_done_s; /* from the last mark_ready to finalize's return */
    double iteration_s;          /* from the first mark_ready to finalize's return */
    int autotune_done;
    size_t copy_bytes;           /* copied between gradients and buckets (in by mark_ready,
                                    back by the finish): 0 with views, and not counting a
                                    gradient reduced in place in grad (see mark_ready) */
    int registered;              /* the host buckets live in registered memory (sc_mem_alloc,
                                    SC_LOCAL_REGISTER): their all-reduces read the peers'
                                    buckets in place */
} sc_reducer_stats_t;

SC_API sc_status_t sc_reducer_stats(const sc_reducer_t *reducer, sc_reducer_stats_t *stats);

/* The comm hook's state (the top-k hook's error-feedback residuals, ...) for a
 * checkpoint, in a record naming the hook. Save: buf NULL sets *len to the bytes
 * needed; else at most *len bytes are written and *len set to their number
 * (SC_ERR_INVALID_ARG when they do not fit). A stateless hook saves its name only.
 * Load: SC_ERR_INVALID_ARG, state unchanged, for a record that is truncated, not one,
 * or of another hook. Local (no communication); between iterations: with a gradient of
 * this iteration marked, or while sc_reducer_finalize on another thread reduces the
 * buckets (an iteration that marked none), SC_ERR_INVALID_ARG. Each holds the reducer's
 * lock from that test through the hook's save or load, so that a mark_ready or a bucket's
 * start on another thread comes wholly before it (which is then refused) or after it,
 * never during the hook's work.
 * Saves of one reducer may be called on several threads at once; they take turns. A
 * hook may require every rank to load, or none (the top-k hook compares the ranks'
 * states at the next iteration, compress.h): where only some ranks loaded, that
 * iteration fails on every rank with SC_ERR_MISMATCH naming both sides' collectives,
 * never SC_ERR_ABORTED on some (the failed collective fails the communicator and tells
 * the peers so before the reducer could abort it). The gradients accumulated by
 * iterations without sync (sc_reducer_set_sync) are not part of it: save after a
 * synced iteration to resume where the run stood. */
SC_API sc_status_t sc_reducer_hook_save(const sc_reducer_t *reducer, void *buf, size_t *len);
SC_API sc_status_t sc_reducer_hook_load(sc_reducer_t *reducer, const void *buf, size_t len);

/* Waits for pending buckets and frees the reducer (and its hook). NULL is a no-op.
 * In a child forked after the reducer's creation: SC_ERR_INVALID_COMM, nothing touched
 * (the reducer is the parent's, as its communicator is: comm.h, sc_comm_init).
 * Destroyed in the middle of a synced iteration (gradients marked, finalize not
 * reached), it aborts the communicator (sc_comm_abort): the peers wait for buckets this
 * rank will never start, and fail at once instead of after SC_TIMEOUT, with SC_ERR_ABORTED
 * whose sentence names this rank's sc_reducer_destroy. Destroyed between iterations as
 * this rank sees them (nothing of a synced iteration marked, or in an iteration without
 * sync), it tells the peers after how many synced iterations its reducer ended: a peer
 * whose reducer (made by the same sc_reducer_create) is in, or later begins, a synced
 * iteration past those, which can no longer complete, aborts the communicator, failing
 * with SC_ERR_ABORTED naming that iteration and this rank's sc_reducer_destroy at once
 * (it waited SC_TIMEOUT for this rank's buckets), and so do this rank's pending and later
 * calls on it; peers that destroy their reducers too, or use the communicator otherwise,
 * are not affected. Only the
 * reducer's communicator is aborted; the others of the same sc_comm_init share its
 * connections, which stay open to the peers of this node (comm.h, sc_comm_abort).
 * A reducer never destroyed has its threads (its finisher, its top-k hook's worker and
 * selector threads) ended when the library is unloaded (dlclose) or the process exits,
 * after its communicator was aborted (comm.h, sc_comm_destroy), once the bucket each
 * works on is done (2 s at most); its memory is not freed. */
SC_API sc_status_t sc_reducer_destroy(sc_reducer_t *reducer);

#ifdef __cplusplus
}
#endif

#endif
