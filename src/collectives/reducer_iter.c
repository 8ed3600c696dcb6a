/* One iteration of the reducer: mark_ready (the scaled copy into the bucket, the start
 * of full buckets in bucket order, the finish of buckets already reduced), finalize
 * (the remaining buckets, the wait, the agreement of every rank on the outcome, the
 * rebuild and autotuning steps) and set_sync (accumulation without communication).
 *
 * Locking: r->lock guards the iteration state (marks, pending counts, the ready order,
 * the next bucket to start). mark_ready claims its gradient under the lock, copies
 * without it (threads marking different gradients copy in parallel), then counts the
 * gradient into its bucket under the lock. Buckets start in bucket order, by one
 * thread at a time: the thread that finds the next bucket full becomes the issuer and
 * starts every full bucket in order, dropping the lock around each start; a thread
 * that completes a bucket while another issues leaves it to that one, which looks
 * again before it stops. So collectives on the communicator are issued by one thread
 * at a time and in the same order on every rank. Host buckets of copies with the plain
 * all-reduce hook have their copy back delivered by the all-reduce itself, chunk by
 * chunk. Finishing (hook->finish, then the copy back to the caller's gradients where
 * the all-reduce did not deliver it) takes the started buckets in order, one thread at
 * a time: with host buckets whose finish has work the reducer's finisher thread waits
 * for each started bucket and finishes it at once, so that this work overlaps the
 * caller's compute instead of adding to finalize; with device buckets (whose finish
 * only enqueues stream work), and buckets with nothing to finish (but the request to
 * free), mark_ready finishes those whose reduction is already over. Finalize finishes
 * what is left, after the bucket the finisher holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/call.h"
#include "collectives/reducer_internal.h"
#include "collectives/serves.h"
#include "core/clock.h"
#include "core/comm_internal.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/fpenv.h"
#include "core/memory.h"

/* NULL in a bucket of zero bytes (gradients of zero elements only). */
static void *sc_grad_slot(const sc_reducer_t *r, const sc_rgrad_t *g)
{
    char *data = r->buckets[g->bucket].hb.data;
    return data ? data + g->offset * sc_dtype_size(g->dtype) : NULL;
}

static size_t sc_grad_bytes(const sc_rgrad_t *g)
{
    return g->count * sc_dtype_size(g->dtype);
}

/* Keeps the first failure of a start or finish for finalize. A failure that aborts the
 * communicator (a hook that could not start a bucket) makes the buckets in flight fail
 * with SC_ERR_ABORTED, and a finisher may note one of those first: the abort gives way
 * to the failure that caused it. Under lock. */
static void sc_reducer_note_failure(sc_reducer_t *r, sc_status_t st)
{
    if (r->async_status != SC_SUCCESS &&
        (r->async_status != SC_ERR_ABORTED || st == SC_ERR_ABORTED))
        return;
    r->async_status = st;
    snprintf(r->async_text, sizeof(r->async_text), "%s", sc_last_error());
}

/* A gradient pointer aligned to its elements, of the buckets' memory kind: host memory
 * for host buckets, device (or managed) memory of the buckets' GPU for device buckets. */
static sc_status_t sc_reducer_grad_check(const sc_reducer_t *r, int i, const void *grad)
{
    size_t es = sc_dtype_size(r->grads[i].dtype);
    sc_mem_kind_t kind;
    int dev;

    if ((uintptr_t)grad & (es - 1)) { /* the sentence only then: this runs on every mark */
        char what[96];

        snprintf(what, sizeof(what), "gradient %d (\"%s\")", i, r->grads[i].name);
        return sc_check_aligned("sc_reducer_mark_ready", what, grad, es);
    }
    sc_mem_query(grad, &kind, &dev);
    if (r->mem.device < 0 && sc_mem_is_device(kind))
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_mark_ready: gradient %d (\"%s\") is %s "
                        "memory (GPU %d), but this reducer's buckets are host memory: create "
                        "the reducer with config.stream (the compute stream) for device "
                        "gradients", i, r->grads[i].name, sc_mem_kind_name(kind), dev);
    if (r->mem.device >= 0 && (!sc_mem_is_device(kind) || dev != r->mem.device))
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_mark_ready: gradient %d (\"%s\") is %s "
                        "memory%s, but this reducer's buckets are device memory on GPU %d "
                        "(config.stream's)", i, r->grads[i].name, sc_mem_kind_name(kind),
                        sc_mem_is_device(kind) ? " of another GPU" : "", r->mem.device);
    return SC_SUCCESS;
}

/* A copy into or out of a bucket failed (a device error): the bucket cannot be
 * reduced right, so, as for a failed start, the communicator is aborted and every rank
 * fails. Under lock. */
static void sc_reducer_fail_element_work(sc_reducer_t *r, sc_status_t st)
{
    sc_reducer_note_failure(r, st);
    if (!r->aborted) {
        r->aborted = 1;
        sc_comm_abort(r->comm);
    }
}

/* The bucket as the hook sees it in this iteration: its data is the gradient's own
 * memory when it is reduced in place (built-in hooks use data only inside the call). */
static sc_hook_bucket_t sc_bucket_seen(const sc_reducer_t *r, const sc_rbucket_t *b)
{
    sc_hook_bucket_t hb = b->hb;

    hb.iteration = r->iteration;
    if (b->in_place)
        hb.data = b->in_place;
    return hb;
}

/* Whether the bucket holds copies of its gradients in host memory in this iteration
 * (not views, not reduced in place, not device memory): the case in which results can
 * go to the gradients without a copy back. */
static int sc_bucket_host_copies(const sc_reducer_t *r, const sc_rbucket_t *b)
{
    return !r->view && !b->in_place && r->mem.device < 0;
}

/* Whether the bucket's copy back is delivered by its all-reduce: host copies with the
 * plain all-reduce hook, which the reducer then issues itself. */
static int sc_bucket_delivers(const sc_reducer_t *r, const sc_rbucket_t *b)
{
    return sc_bucket_host_copies(r, b) && sc_reducer_hook_is_plain(&r->hook);
}

/* Whether the views of the bucket are divided by the pre-division factor inside its
 * all-reduce (sc_allreduce_prescaled) instead of by a pass of their own at mark time:
 * views in registered memory with the plain all-reduce hook, where the all-reduce
 * reads every rank's views in place and can scale them as it reduces. */
static int sc_bucket_prescales(const sc_reducer_t *r, const sc_rbucket_t *b)
{
    return r->view && r->registered && sc_reducer_hook_is_plain(&r->hook) &&
           sc_dtype_is_float(b->hb.dtype) && r->prediv != 1.0;
}

/* Whether a gradient reduced in its caller's memory (b->in_place) is divided by the
 * pre-division factor inside its all-reduce (sc_allreduce_prescaled_plain) instead of
 * by a pass of its own at mark time: the plain hook, a float type, host memory, and
 * every rank taking the same path, which holds without find_unused (every rank marks
 * every gradient in every iteration, so none reduces it in the bucket instead). */
static int sc_in_place_prescales(const sc_reducer_t *r, const sc_rbucket_t *b)
{
    return !r->find_unused && sc_reducer_hook_is_plain(&r->hook) && r->mem.device < 0 &&
           sc_dtype_is_float(b->hb.dtype) && r->prediv != 1.0;
}

/* Whether the bucket's finish writes the results straight into the caller's
 * gradients (hook->finish_into): host copies. */
static int sc_bucket_finishes_into(const sc_reducer_t *r, const sc_rbucket_t *b)
{
    return sc_bucket_host_copies(r, b) && r->hook.finish_into;
}

/* The bucket's ranges that go back to the caller's gradients (b->deliver, in slot
 * order), counted as copied; returns how many. */
static int sc_bucket_ranges(sc_reducer_t *r, sc_rbucket_t *b)
{
    size_t es = sc_dtype_size(b->hb.dtype);
    int n = 0;

    for (int j = 0; j < b->ngrads; j++) {
        const sc_rgrad_t *g = &r->grads[b->grads[j]];
        if (g->user && g->count) {
            b->deliver[n++] = (sc_range_t){g->offset * es, sc_grad_bytes(g), g->user};
            __atomic_add_fetch(&r->copy_bytes, sc_grad_bytes(g), __ATOMIC_RELAXED);
        }
    }
    return n;
}

/* Whether the bucket's start reads its gradients where they are (those marked
 * direct) through the float16/bfloat16 hook: a bucket of copies in host memory. */
static int sc_bucket_casts_from(const sc_reducer_t *r, const sc_rbucket_t *b)
{
    return sc_bucket_host_copies(r, b) && sc_reducer_hook_is_cast(&r->hook);
}

/* The float16/bfloat16 hook's start with each gradient's part read from the caller's
 * memory, scaled by 1/prediv on the way (direct), or from the bucket's slot (what was
 * accumulated, or the zeros of an unmarked gradient). */
static sc_status_t sc_bucket_start_cast_from(sc_reducer_t *r, sc_rbucket_t *b,
                                             const sc_hook_bucket_t *hb)
{
    size_t es = sc_dtype_size(b->hb.dtype);
    int n = 0;

    for (int j = 0; j < b->ngrads; j++) {
        const sc_rgrad_t *g = &r->grads[b->grads[j]];
        if (g->count)
            b->source[n++] = (sc_hook_source_t){
                g->offset * es, sc_grad_bytes(g), g->direct ? g->user : sc_grad_slot(r, g),
                g->direct ? (float)(1.0 / r->prediv) : 1.0f};
    }
    return sc_hook_cast_start_from(&r->hook, hb, r->comm, b->source, n, &b->req);
}

/* The plain all-reduce of the bucket, each gradient's result copied to the caller's
 * pointer by the progress engine as soon as its chunks are final, overlapping the rest
 * of the communication (no copy back after the bucket is done). */
static sc_status_t sc_bucket_start_delivered(sc_reducer_t *r, sc_rbucket_t *b)
{
    int n = sc_bucket_ranges(r, b);

    /* A gradient alone in its bucket is reduced in its caller's memory by the ranks
     * that marked it (b->in_place), in the bucket by one that did not (find_unused):
     * neither reads registered memory in place, so that both take one algorithm. */
    if (b->ngrads == 1)
        return sc_allreduce_delivered_plain(b->hb.data, b->hb.count, b->hb.dtype, SC_SUM,
                                            r->comm, b->deliver, n, &b->req);
    return sc_allreduce_delivered(b->hb.data, b->hb.count, b->hb.dtype, SC_SUM, r->comm,
                                  b->deliver, n, &b->req);
}

static sc_status_t sc_bucket_start(sc_reducer_t *r, sc_rbucket_t *b)
{
    sc_hook_bucket_t hb = sc_bucket_seen(r, b);
    sc_status_t st;

    b->req = NULL;
    if (b->hb.count == 0)
        return SC_SUCCESS; /* every rank skips it: nothing to reduce */
    sc_error_clear(); /* a caller's hook may fail without a sentence */
    if (sc_bucket_delivers(r, b))
        st = sc_bucket_start_delivered(r, b);
    else if (b->in_place && b->in_place_scaled)
        st = sc_allreduce_prescaled_plain(b->in_place, b->hb.count, b->hb.dtype,
                                          1.0 / r->prediv, r->comm, &b->req);
    else if (b->in_place && sc_reducer_hook_is_plain(&r->hook))
        st = sc_allreduce_delivered_plain(b->in_place, b->hb.count, b->hb.dtype, SC_SUM,
                                          r->comm, NULL, 0, &b->req); /* as just above */
    else if (sc_bucket_prescales(r, b))
        st = sc_allreduce_prescaled(b->hb.data, b->hb.count, b->hb.dtype, 1.0 / r->prediv,
                                    r->comm, &b->req);
    else if (sc_bucket_casts_from(r, b))
        st = sc_bucket_start_cast_from(r, b, &hb);
    else
        st = r->hook.start(r->hook.state, &hb, r->comm, &b->req);
    if (st != SC_SUCCESS) {
        char why[SC_ERROR_MAX];

        /* A request the hook issued before it failed stays the bucket's: its finish
         * (or sc_reducer_destroy) waits for it, failed at once by the abort below, and
         * frees it, where it used to be dropped with its collective in flight. */
        st = sc_reducer_hook_why(st, why, sizeof(why));
        /* Peers issued this bucket's collective and will issue the next ones: with one
         * missing here, the sequences of the ranks no longer line up. Aborting the
         * communicator fails every rank's pending and later calls instead, with the
         * reason. */
        char msg[SC_ERROR_MAX];
        int failed_before;
        pthread_mutex_lock(&r->comm->tp->lock);
        failed_before = r->comm->broken != SC_SUCCESS;
        pthread_mutex_unlock(&r->comm->tp->lock);
        snprintf(msg, sizeof(msg), "sc_reducer: comm hook \"%s\" could not start bucket %d "
                 "(%s): %.600s", r->hook.name ? r->hook.name : "", b->hb.index,
                 sc_status_string(st), why);
        /* A communicator that failed before (a peer's abort, which why passes on) is
         * not this rank's to abort: saying so would repeat the peer's reason's end. */
        if (!failed_before) {
            snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "; the communicator is "
                     "aborted so that no rank waits for the bucket");
            sc_comm_abort_why(r->comm, msg);
        }
        st = sc_error(st, "%s", msg);
    }
    b->start_status = st;
    return st;
}

/* Starts the full buckets next in bucket order. Caller holds r->lock, which is dropped
 * around each start. Returns the first failure of a start made by this call. */
static sc_status_t sc_reducer_issue(sc_reducer_t *r)
{
    sc_status_t first = SC_SUCCESS;

    if (r->issuing)
        return SC_SUCCESS;
    if (!r->watching) {
        /* The iteration's first collective: where a peer's reducer ended before this
         * iteration, it fails here (the communicator aborted) instead of waiting. */
        sc_status_t st = sc_reducer_watch_begin(r->comm, &r->watch);
        r->watching = 1;
        if (st != SC_SUCCESS) {
            r->aborted = 1;
            sc_reducer_note_failure(r, st);
            return st;
        }
    }
    r->issuing = 1;
    while (!r->aborted && r->next_start < r->nbuckets &&
           r->buckets[r->next_start].pending == 0) {
        sc_rbucket_t *b = &r->buckets[r->next_start++];
        sc_status_t st;

        pthread_mutex_unlock(&r->lock);
        st = sc_bucket_start(r, b);
        pthread_mutex_lock(&r->lock);
        r->nstarted++; /* its request is set: it may be finished now */
        pthread_cond_broadcast(&r->changed);
        if (st != SC_SUCCESS) {
            r->aborted = 1;
            sc_reducer_note_failure(r, st);
            if (first == SC_SUCCESS)
                first = st;
        }
    }
    r->issuing = 0;
    return first;
}

/* Whether a started bucket's reduction is over, without driving progress. */
static int sc_bucket_done(sc_rbucket_t *b)
{
    if (!b->req)
        return 1;
    if (b->req->ops)
        return sc_test(b->req) != SC_IN_PROGRESS;
    return __atomic_load_n(&b->req->done, __ATOMIC_ACQUIRE);
}

/* Waits for a started bucket, runs hook->finish and copies its gradients back to the
 * caller's pointers (copy mode); or runs hook->finish_into, which writes them there
 * itself; or, when its all-reduce delivered them, only frees the request. */
static sc_status_t sc_bucket_finish(sc_reducer_t *r, sc_rbucket_t *b)
{
    sc_status_t st = SC_SUCCESS;

    if (b->req) {
        st = sc_wait(b->req);
        sc_request_free(b->req);
        b->req = NULL;
    }
    if (st != SC_SUCCESS || b->start_status != SC_SUCCESS)
        return st;
    if (b->hb.count > 0 && (r->hook.finish || sc_bucket_finishes_into(r, b))) {
        sc_hook_bucket_t hb = sc_bucket_seen(r, b);
        char why[SC_ERROR_MAX];

        sc_error_clear();
        /* The results written straight into the gradients: no copy back. */
        if (sc_bucket_finishes_into(r, b)) {
            st = r->hook.finish_into(r->hook.state, &hb, r->comm, b->deliver,
                                     sc_bucket_ranges(r, b));
        } else {
            st = r->hook.finish(r->hook.state, &hb, r->comm);
        }
        if (st != SC_SUCCESS) {
            st = sc_reducer_hook_why(st, why, sizeof(why));
            return sc_error(st, "sc_reducer: comm hook \"%s\" could not finish bucket %d "
                            "(%s): %s", r->hook.name ? r->hook.name : "", b->hb.index,
                            sc_status_string(st), why);
        }
    }
    /* The copy back, unless the results were written into the gradients already. */
    if (!r->view && !b->in_place && !sc_bucket_delivers(r, b) && !sc_bucket_finishes_into(r, b))
        for (int j = 0; j < b->ngrads && st == SC_SUCCESS; j++) {
            const sc_rgrad_t *g = &r->grads[b->grads[j]];
            if (g->user && g->count) {
                st = r->mem.copy(&r->mem, g->user, sc_grad_slot(r, g), sc_grad_bytes(g));
                __atomic_add_fetch(&r->copy_bytes, sc_grad_bytes(g), __ATOMIC_RELAXED);
            }
        }
    return st;
}

/* Claims the next started bucket and finishes it. Caller holds r->lock, which is
 * dropped around the finish; no thread is finishing and a started bucket is left. */
static void sc_reducer_finish_next(sc_reducer_t *r)
{
    sc_rbucket_t *b = &r->buckets[r->next_done++];
    sc_status_t st;

    r->harvesting = 1;
    pthread_mutex_unlock(&r->lock);
    st = sc_bucket_finish(r, b);
    pthread_mutex_lock(&r->lock);
    r->harvesting = 0;
    if (st != SC_SUCCESS)
        sc_reducer_note_failure(r, st);
    pthread_cond_broadcast(&r->changed);
}

/* Finishes the started buckets in order: those already reduced, leaving them to a
 * thread that is finishing one; or (wait) all of them, after that thread's. Caller
 * holds r->lock. */
static void sc_reducer_harvest(sc_reducer_t *r, int wait)
{
    while (r->harvesting ? wait : r->next_done < r->nstarted) {
        if (r->harvesting)
            pthread_cond_wait(&r->changed, &r->lock);
        else if (wait || sc_bucket_done(&r->buckets[r->next_done]))
            sc_reducer_finish_next(r);
        else
            break;
    }
}

/* The finisher thread: waits for each started bucket in turn and finishes it. */
static void *sc_reducer_finisher(void *arg)
{
    sc_reducer_t *r = arg;

    sc_fpenv_own_thread(); /* created by a caller whose modes it inherited */
    sc_unload_thread_enter(&r->stopping); /* its sc_wait leaves at the unload */
    pthread_mutex_lock(&r->lock);
    while (!r->stopping) {
        if (!r->harvesting && r->next_done < r->nstarted)
            sc_reducer_finish_next(r);
        else
            pthread_cond_wait(&r->changed, &r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

sc_status_t sc_reducer_finisher_start(sc_reducer_t *r)
{
    int rc = pthread_create(&r->finisher, NULL, sc_reducer_finisher, r);

    if (rc != 0)
        return sc_error(SC_ERR_SYSTEM, "sc_reducer_create: the finisher thread could not "
                        "start: %s", strerror(rc));
    r->finisher_on = 1;
    /* Ended by the library's unload too (after the communicator's abort, which fails the
     * bucket it may finish). */
    sc_unload_thread_add(&r->finisher_entry, r->finisher, &r->lock, &r->changed,
                         &r->stopping);
    return SC_SUCCESS;
}

void sc_reducer_finisher_stop(sc_reducer_t *r)
{
    if (!r->finisher_on)
        return;
    pthread_mutex_lock(&r->lock);
    /* Atomic: the finisher's sc_wait reads it without the lock (unload_threads.h). */
    __atomic_store_n(&r->stopping, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
    if (sc_unload_thread_remove(&r->finisher_entry))
        pthread_join(r->finisher, NULL);
    r->finisher_on = 0;
}

/* The refusal of every call after a rebuild that failed having released the buckets'
 * memory (r->unbuilt). */
static sc_status_t sc_reducer_unbuilt(const sc_reducer_t *r, const char *fn)
{
    return sc_error(r->unbuilt, "%s: the reducer has no buckets since their rebuild failed "
                    "(%s); destroy it", fn, r->unbuilt_text);
}

static sc_status_t sc_reducer_mark_ready_call(sc_reducer_t *r, int i, void *grad);

/* Failures inside say which public call they ended (sc_error_in). */
SC_API sc_status_t sc_reducer_mark_ready(sc_reducer_t *r, int i, void *grad)
{
    sc_serves_t was = sc_serves_begin(SC_SERVES_REDUCER_STEP);

    return sc_serves_return(was, sc_reducer_mark_ready_call(r, i, grad),
                            "sc_reducer_mark_ready");
}

static sc_status_t sc_reducer_mark_ready_call(sc_reducer_t *r, int i, void *grad)
{
    sc_rgrad_t *g;
    sc_rbucket_t *b;
    void *slot;
    int sync, fresh;
    sc_status_t st = SC_SUCCESS;

    if (!r)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_mark_ready: reducer is NULL");
    if (r->unbuilt != SC_SUCCESS)
        return sc_reducer_unbuilt(r, "sc_reducer_mark_ready");
    if (i < 0 || i >= r->n)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_mark_ready: gradient index %d is "
                        "outside [0, %d), the %d registered gradients", i, r->n, r->n);
    /* A communicator that failed fails every mark at once, not only the one that fills
     * a bucket (whose collective would be refused); the flag alone on this hot path, the
     * sentence only then. */
    if (__atomic_load_n(&r->comm->broken, __ATOMIC_ACQUIRE) != SC_SUCCESS)
        return sc_comm_check(r->comm, "sc_reducer_mark_ready");
    g = &r->grads[i];
    if (grad) {
        st = sc_reducer_grad_check(r, i, grad);
        if (st != SC_SUCCESS)
            return st;
    }
    pthread_mutex_lock(&r->lock);
    if (r->moved && (st = sc_reducer_move_views(r)) != SC_SUCCESS) {
        pthread_mutex_unlock(&r->lock);
        return st;
    }
    if (g->marked) {
        pthread_mutex_unlock(&r->lock);
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_mark_ready: gradient %d (\"%s\") was "
                        "already marked ready in this iteration; each gradient is marked "
                        "once per iteration", i, g->name);
    }
    b = &r->buckets[g->bucket];
    slot = sc_grad_slot(r, g);
    if (r->view ? (grad && grad != slot && g->count) : (!grad && g->count)) {
        pthread_mutex_unlock(&r->lock);
        if (r->view)
            return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_mark_ready: gradient %d (\"%s\") "
                            "is at %p, but with gradient_as_bucket_view it must be in its "
                            "view %p (pass NULL or sc_reducer_grad_view())%s", i, g->name,
                            grad, slot,
                            r->fill ? "; the views moved when the buckets were rebuilt "
                                      "after the first synced iteration: take them again "
                                      "with sc_reducer_grad_view()" : "");
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_mark_ready: gradient %d (\"%s\") of "
                        "%zu elements is NULL", i, g->name, g->count);
    }
    g->marked = 1;
    if (r->nready == 0)
        r->t_first = sc_clock_now();
    r->order[r->nready++] = i;
    r->marking++;
    sync = r->sync;
    pthread_mutex_unlock(&r->lock);

    /* The gradient is this thread's until it is counted into its bucket. With the
     * float16/bfloat16 hooks and nothing accumulated it stays where it is, unscaled:
     * the bucket's start casts it, scaled, straight into the narrow copy. Else, alone in
     * its bucket, with nothing accumulated and a built-in hook, it is reduced where it
     * is, divided inside its all-reduce, which every rank must then do alike. "Nothing
     * accumulated" is therefore no iteration without sync since the last synced one
     * (a count the ranks agree on), not this gradient's own state: with find_unused,
     * or after one rank's failed iteration without sync, one rank may have accumulated
     * it and another not, and their all-reduces would divide differently. */
    fresh = !r->view && sync && r->unsynced == 0 && g->count && r->mem.device < 0;
    g->direct = fresh && b->ngrads > 1 && sc_reducer_hook_is_cast(&r->hook);
    if (fresh && b->ngrads == 1 && sc_reducer_hook_is_builtin(&r->hook)) {
        b->in_place = grad;
        b->in_place_scaled = sc_in_place_prescales(r, b);
        slot = grad;
    }
    if (g->count && (!r->view || sync))
        st = r->mem.after_compute(&r->mem);
    if (st == SC_SUCCESS && !r->view && g->count && !g->direct) {
        /* In place and pre-scaling, it is divided inside its all-reduce instead. */
        if (!b->in_place_scaled)
            st = r->mem.scale(&r->mem, g->dtype, slot, grad, g->count, 1.0 / r->prediv,
                              g->has_data);
        if (!b->in_place)
            __atomic_add_fetch(&r->copy_bytes, sc_grad_bytes(g), __ATOMIC_RELAXED);
    } else if (st == SC_SUCCESS && sync && g->count && !sc_bucket_prescales(r, b))
        /* The view holds what the framework accumulated: divided once, here (or
         * inside the bucket's all-reduce). */
        st = r->mem.scale(&r->mem, g->dtype, slot, slot, g->count, 1.0 / r->prediv, 0);
    if (!r->view)
        g->user = grad;
    g->has_data = 1;

    pthread_mutex_lock(&r->lock);
    if (st != SC_SUCCESS)
        sc_reducer_fail_element_work(r, st);
    r->t_last = sc_clock_now();
    if (--b->pending == 0 && sync && st == SC_SUCCESS)
        st = sc_reducer_issue(r);
    if (sync && !r->aborted && !r->finisher_on)
        sc_reducer_harvest(r, 0);
    r->marking--; /* after issuing: finalize must not overtake a start */
    pthread_mutex_unlock(&r->lock);
    return st;
}

SC_API sc_status_t sc_reducer_set_sync(sc_reducer_t *r, int sync)
{
    sc_status_t st = SC_SUCCESS;

    if (!r)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_set_sync: reducer is NULL");
    if (sc_check_switch("sc_reducer_set_sync", "sync", sync) != SC_SUCCESS)
        return SC_ERR_INVALID_ARG;
    pthread_mutex_lock(&r->lock);
    if (r->nready > 0)
        st = sc_error(SC_ERR_INVALID_ARG, "sc_reducer_set_sync: %d gradients are already "
                      "marked in this iteration; change sync between iterations (after "
                      "finalize)", r->nready);
    else
        st = sc_reducer_move_views(r);
    if (st == SC_SUCCESS)
        r->sync = sync;
    pthread_mutex_unlock(&r->lock);
    return st;
}

/* Ends the iteration: nothing marked; after a synced one, nothing accumulated. Under
 * the lock, which the finisher thread reads the counts under. */
static void sc_reducer_reset(sc_reducer_t *r, int synced)
{
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < r->n; i++) {
        r->grads[i].marked = 0;
        r->grads[i].direct = 0;
        /* The caller's pointer is valid until this iteration's finalize returns only: a
         * gradient the next iterations do not mark has no pointer to be written to
         * (what was accumulated from it stays in the bucket, has_data). */
        r->grads[i].user = NULL;
        if (synced)
            r->grads[i].has_data = 0;
    }
    for (int b = 0; b < r->nbuckets; b++) {
        r->buckets[b].pending = r->buckets[b].ngrads;
        r->buckets[b].start_status = SC_SUCCESS;
        r->buckets[b].req = NULL;
        r->buckets[b].in_place = NULL;
        r->buckets[b].in_place_scaled = 0;
    }
    __atomic_store_n(&r->copy_bytes, 0, __ATOMIC_RELAXED);
    r->nready = 0;
    r->iteration++;
    r->next_start = 0;
    r->nstarted = 0;
    r->next_done = 0;
    r->aborted = 0;
    r->watching = 0;
    r->async_status = SC_SUCCESS;
    r->async_text[0] = '\0';
    pthread_mutex_unlock(&r->lock);
}

/* "3 ("fc.w"), 7 ("x")" for the gradients not marked, at most what fits in len. */
static void sc_reducer_list_missing(const sc_reducer_t *r, int nmiss, char *buf, size_t len)
{
    size_t used = 0;
    int listed = 0;

    buf[0] = '\0';
    for (int i = 0; i < r->n && listed < nmiss; i++) {
        int w;
        if (r->grads[i].marked)
            continue;
        if (used + 64 >= len) {
            snprintf(buf + used, len - used, " and %d more", nmiss - listed);
            return;
        }
        w = snprintf(buf + used, len - used, "%s%d (\"%.40s\")", listed ? ", " : "", i,
                     r->grads[i].name);
        used += (size_t)w < len - used ? (size_t)w : len - used - 1;
        listed++;
    }
}

static void sc_reducer_stats_update(sc_reducer_t *r)
{
    double now = sc_clock_now();

    r->stats.buckets = r->nbuckets;
    r->stats.bucket_cap_bytes = r->cap;
    r->stats.autotune_done = r->tune.done;
    r->stats.iteration_s = r->nready ? now - r->t_first : 0.0;
    r->stats.last_ready_to_done_s = r->nready ? now - r->t_last : 0.0;
    r->stats.copy_bytes = __atomic_load_n(&r->copy_bytes, __ATOMIC_RELAXED);
}

/* The framework's later work (on the compute stream) waits for the results and the
 * copies. Under lock, after the harvest. */
static void sc_reducer_order_results(sc_reducer_t *r)
{
    sc_status_t st = r->mem.before_compute(&r->mem);

    if (st != SC_SUCCESS)
        sc_reducer_note_failure(r, st);
}

/* An iteration without sync: no communication; missing gradients are this rank's
 * error only (no other rank can know). */
static sc_status_t sc_reducer_finalize_local(sc_reducer_t *r)
{
    char list[512];
    int nmiss = 0;
    sc_status_t st = SC_SUCCESS;

    for (int i = 0; i < r->n; i++)
        nmiss += !r->grads[i].marked;
    /* The gradients read by the accumulations may be overwritten by the next backward. */
    st = r->mem.before_compute(&r->mem);
    if (st == SC_SUCCESS && nmiss && !r->find_unused) {
        sc_reducer_list_missing(r, nmiss, list, sizeof(list));
        st = sc_error(SC_ERR_INVALID_ARG, "sc_reducer_finalize: gradients never marked ready "
                      "in this iteration without sync: %s (%d of %d); without find_unused "
                      "every gradient must be marked (nothing was accumulated for them)",
                      list, nmiss, r->n);
    }
    r->unsynced++;
    sc_reducer_stats_update(r);
    sc_reducer_reset(r, 0);
    return st;
}

/* After the first synced iteration: the buckets rebuilt in rank 0's ready order (the
 * gradients it never marked after the others, in reverse registration order). Then
 * the autotuning step, which may change the cap. All ranks run this after the same
 * iteration, with the same inputs. */
static sc_status_t sc_reducer_after_sync(sc_reducer_t *r, double iter_s)
{
    size_t cap = r->cap;
    int relayout = 0;
    sc_status_t st;

    if (r->synced == 0 && r->n > 0) {
        int k = r->nready;
        char *seen = calloc((size_t)r->n, 1);

        free(r->fill);
        r->fill = malloc((size_t)r->n * sizeof(int));
        if (!seen || !r->fill) {
            free(seen);
            st = sc_error(SC_ERR_NO_MEMORY, "sc_reducer_finalize: out of memory");
            goto err_abort;
        }
        memcpy(r->fill, r->order, (size_t)k * sizeof(int));
        for (int j = 0; j < k; j++)
            seen[r->fill[j]] = 1;
        for (int i = r->n - 1; i >= 0; i--)
            if (!seen[i])
                r->fill[k++] = i;
        free(seen);
        st = sc_broadcast(r->fill, r->fill, (size_t)r->n, SC_INT32, 0, r->comm, NULL, NULL);
        if (st != SC_SUCCESS)
            return st;
        relayout = 1;
    }
    if (r->tune.active) {
        size_t next = sc_reducer_tune_step(r, iter_s);
        if (next && next != cap) {
            cap = next;
            relayout = 1;
        }
    }
    if (!relayout)
        return SC_SUCCESS;
    st = sc_reducer_layout(r, r->fill, cap, 1);
    if (st == SC_SUCCESS)
        return SC_SUCCESS;
err_abort:
    /* The other ranks changed their layout: with this one unchanged, the bucket
     * collectives would no longer match. */
    sc_comm_abort(r->comm);
    return st;
}

static sc_status_t sc_reducer_finalize_call(sc_reducer_t *r);

/* Failures inside say which public call they ended (sc_error_in). */
SC_API sc_status_t sc_reducer_finalize(sc_reducer_t *r)
{
    sc_serves_t was = sc_serves_begin(SC_SERVES_REDUCER_STEP);

    return sc_serves_return(was, sc_reducer_finalize_call(r), "sc_reducer_finalize");
}

static sc_status_t sc_reducer_finalize_call(sc_reducer_t *r)
{
    char list[512], local_text[SC_ERROR_MAX] = "";
    sc_status_t local = SC_SUCCESS, st;
    int nmiss = 0, first_miss = -1, claimed;
    int64_t v[5];
    double t_done;

    if (!r)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_finalize: reducer is NULL");
    if (r->unbuilt != SC_SUCCESS)
        return sc_reducer_unbuilt(r, "sc_reducer_finalize");
    pthread_mutex_lock(&r->lock);
    if (r->marking > 0) {
        pthread_mutex_unlock(&r->lock);
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_finalize: %d mark_ready calls are "
                        "still running; finalize after every mark_ready of the iteration "
                        "returned", r->marking);
    }
    if ((st = sc_reducer_move_views(r)) != SC_SUCCESS) {
        pthread_mutex_unlock(&r->lock);
        return st;
    }
    if (!r->sync) {
        pthread_mutex_unlock(&r->lock);
        return sc_reducer_finalize_local(r);
    }
    /* The communicator marked as issued on by this thread until finalize returns
     * (sc_comm_issue_begin): another thread's call between the buckets' collectives and
     * the agreement below would take a number among them. */
    if ((st = sc_comm_issue_begin(r->comm, "sc_reducer_finalize", &claimed)) != SC_SUCCESS) {
        pthread_mutex_unlock(&r->lock);
        return st;
    }
    if (r->nready == 0)
        r->t_first = r->t_last = sc_clock_now();
    /* Gradients never marked go into the reduction as zeros (or as what was accumulated
     * for them without sync), and every bucket starts, in order, so that ranks which
     * marked everything complete their collectives: missing gradients are an error
     * found below, on every rank, never a hang. */
    for (int i = 0; i < r->n; i++) {
        sc_rgrad_t *g = &r->grads[i];
        sc_status_t wst = SC_SUCCESS;
        if (g->marked)
            continue;
        if (nmiss++ == 0)
            first_miss = i;
        if (nmiss == 1 && r->view)
            wst = r->mem.after_compute(&r->mem); /* the framework's writes to the views */
        if (wst == SC_SUCCESS && !g->has_data && g->count)
            wst = r->mem.zero(&r->mem, sc_grad_slot(r, g), sc_grad_bytes(g));
        else if (wst == SC_SUCCESS && r->view && g->count &&
                 !sc_bucket_prescales(r, &r->buckets[g->bucket]))
            wst = r->mem.scale(&r->mem, g->dtype, sc_grad_slot(r, g), sc_grad_slot(r, g),
                               g->count, 1.0 / r->prediv, 0);
        if (wst != SC_SUCCESS)
            sc_reducer_fail_element_work(r, wst);
        r->buckets[g->bucket].pending--;
    }
    sc_reducer_issue(r);
    sc_reducer_harvest(r, 1);
    sc_reducer_order_results(r);
    if (r->async_status != SC_SUCCESS) {
        local = r->async_status;
        snprintf(local_text, sizeof(local_text), "%s", r->async_text);
    }
    pthread_mutex_unlock(&r->lock);
    t_done = sc_clock_now();
    if (local == SC_SUCCESS && nmiss && !r->find_unused) {
        sc_reducer_list_missing(r, nmiss, list, sizeof(list));
        local = sc_error(SC_ERR_INVALID_ARG, "sc_reducer_finalize: gradients never marked "
                         "ready in this iteration: %s (%d of %d); without find_unused every "
                         "gradient must be marked (their buckets were reduced with zeros in "
                         "their place so that no rank waits)", list, nmiss, r->n);
        snprintf(local_text, sizeof(local_text), "%s", sc_last_error());
    }

    /* Every rank learns whether any rank missed gradients or failed, and the slowest
     * rank's iteration time (autotuning): one small all-reduce of minima. */
    v[0] = nmiss && !r->find_unused ? ((int64_t)r->rank << 32) | first_miss : INT64_MAX;
    v[1] = local != SC_SUCCESS ? r->rank : INT64_MAX;
    v[2] = -(int64_t)((t_done - r->t_first) * 1e9);
    /* The iterations each rank accumulated without sync before this one, least and
     * most: where they differ, a rank's synced iteration met another's later one (one
     * rank called set_sync(r, 0) where the others did not), and the sums are not the
     * iteration's. */
    v[3] = r->unsynced;
    v[4] = -r->unsynced;
    st = r->n > 0 ? sc_allreduce(v, v, 5, SC_INT64, SC_MIN, r->comm, NULL, NULL) : SC_SUCCESS;
    if (local != SC_SUCCESS) {
        sc_error_set_text(local_text);
        st = local;
    } else if (st != SC_SUCCESS) {
        /* the all-reduce's sentence stands */
    } else if (v[3] != -v[4]) {
        st = sc_error(SC_ERR_MISMATCH, "sc_reducer_finalize: ranks disagree: between %lld and "
                      "%lld iterations without sync (set_sync(r, 0)) came before this synced "
                      "one on different ranks (%ld on this rank), so the ranks' collectives "
                      "met other iterations' and the results are not this iteration's; every "
                      "rank must run as many iterations without sync before each synced one",
                      (long long)v[3], (long long)-v[4], r->unsynced);
    } else if (v[0] != INT64_MAX) {
        int q = (int)(v[0] >> 32), i = (int)(v[0] & 0xffffffff);
        st = sc_error(SC_ERR_INVALID_ARG, "sc_reducer_finalize: %s never marked "
                      "gradient %d (\"%s\") ready in this iteration (the first missing one "
                      "of the lowest such rank); without find_unused every gradient must be "
                      "marked on every rank", sc_comm_rank_name(r->comm, q).s, i,
                      r->grads[i].name);
    } else if (v[1] != INT64_MAX) {
        st = sc_error(SC_ERR_PEER_FAILED, "sc_reducer_finalize: %s failed in this "
                      "iteration (its error says why)",
                      sc_comm_rank_name(r->comm, (int)v[1]).s);
    } else {
        st = sc_reducer_after_sync(r, (double)-v[2] * 1e-9);
        if (st == SC_SUCCESS)
            r->synced++;
    }
    r->unsynced = 0;
    sc_reducer_watch_end(r->comm, &r->watch);
    sc_reducer_stats_update(r);
    sc_reducer_reset(r, 1);
    sc_comm_issue_end(r->comm, claimed);
    return st;
}
