/* The gradient reducer's lifetime: creation (local checks, settings, the first layout,
 * the registration agreement), destruction, and the accessors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/agree.h"
#include "collectives/device.h"
#include "collectives/reducer_internal.h"
#include "collectives/serves.h"
#include "collectives/transport_ucx.h"
#include "core/comm_internal.h"
#include "core/dtype.h"
#include "core/env.h"
#include "core/env_names.h"
#include "core/error.h"
#include "core/log.h"
#include "core/ptr_set.h"

#define SC_MIB ((size_t)1 << 20)
#define SC_DEFAULT_FIRST_BUCKET_BYTES SC_MIB

/* The cap in bytes: the configuration's, else SC_BUCKET_CAP_MB, else the default.
 * *fixed is set when SC_BUCKET_CAP_MB is set (it turns autotuning off). */
static sc_status_t sc_reducer_cap(const sc_reducer_config_t *cfg, size_t *cap, int *fixed)
{
    double mb;
    const char *raw = sc_env_first(sc_env_bucket_cap_mb_names, NULL);
    sc_status_t st = sc_env_double(sc_env_bucket_cap_mb_names, -1.0, &mb);

    if (st != SC_SUCCESS)
        return st;
    /* Set or not by the variable itself: -1 is refused like any value out of range. */
    *fixed = raw != NULL;
    if (*fixed && !(mb > 0.0 && mb <= SC_MAX_BUCKET_CAP_MB))
        return sc_error(SC_ERR_INVALID_ARG, "SC_BUCKET_CAP_MB=%s is not a number of MiB in "
                        "(0, %d]", raw, SC_MAX_BUCKET_CAP_MB);
    if (cfg->bucket_cap_bytes)
        *cap = cfg->bucket_cap_bytes;
    else if (*fixed)
        *cap = sc_bucket_cap_bytes(mb);
    else
        *cap = (size_t)SC_DEFAULT_BUCKET_CAP_MB * SC_MIB;
    return SC_SUCCESS;
}

/* Checks and settings that need no other rank; the first failure sets the sentence. */
static sc_status_t sc_reducer_setup(sc_reducer_t *r, const sc_grad_desc_t *grads, int n,
                                    const sc_reducer_config_t *cfg, sc_reducer_t **out)
{
    size_t total = 0;
    int fixed = 0;
    sc_status_t st;

    if (!out)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_create: reducer is NULL");
    if (n < 0 || (n > 0 && !grads))
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_create: %d gradients at %p", n,
                        (const void *)grads);
    if (!(cfg->prediv >= 0.0) || isinf(cfg->prediv))
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_create: config.prediv is %g; it "
                        "must be a finite number > 0, or 0 for the communicator size",
                        cfg->prediv);
    if ((st = sc_check_switch("sc_reducer_create", "config.gradient_as_bucket_view",
                              cfg->gradient_as_bucket_view)) != SC_SUCCESS ||
        (st = sc_check_switch("sc_reducer_create", "config.find_unused", cfg->find_unused)) !=
            SC_SUCCESS ||
        (st = sc_check_switch("sc_reducer_create", "config.autotune", cfg->autotune)) !=
            SC_SUCCESS)
        return st;
    if (!r->hook.start)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_create: config.hook->start is NULL; "
                        "a comm hook must have a start function");
    st = sc_reducer_cap(cfg, &r->cap, &fixed);
    if (st != SC_SUCCESS)
        return st;
    if (cfg->stream) {
        st = sc_reducer_mem_device(&r->mem, cfg->stream, sc_device_gpu(r->comm));
        if (st != SC_SUCCESS)
            return st;
    }
    r->first_cap = cfg->first_bucket_bytes ? cfg->first_bucket_bytes
                                           : SC_DEFAULT_FIRST_BUCKET_BYTES;
    r->view = cfg->gradient_as_bucket_view;
    r->find_unused = cfg->find_unused;
    r->prediv = cfg->prediv > 0.0 ? cfg->prediv : (double)r->size;
    r->grads = calloc((size_t)(n ? n : 1), sizeof(*r->grads));
    r->order = malloc((size_t)(n ? n : 1) * sizeof(*r->order));
    if (!r->grads || !r->order)
        return sc_error(SC_ERR_NO_MEMORY, "sc_reducer_create: out of memory for %d gradients",
                        n);
    r->n = n;
    for (int i = 0; i < n; i++) {
        const sc_grad_desc_t *d = &grads[i];
        const char *name = d->name ? d->name : "";
        size_t es;

        if ((unsigned)d->dtype >= SC_DTYPE_COUNT || !sc_reducer_dtype_ok(d->dtype))
            return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_create: gradient %d (\"%s\") has "
                            "dtype %s; the reducer takes float32, float64, float16, bfloat16, "
                            "int8, uint8, int32 and int64", i, name, sc_dtype_name(d->dtype));
        es = sc_dtype_size(d->dtype);
        if (d->count > (SIZE_MAX / 2 - total) / es)
            return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_create: gradient %d (\"%s\"): "
                            "count %zu overflows the buckets' size", i, name, d->count);
        if (!sc_dtype_is_float(d->dtype) && r->prediv != 1.0)
            return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_create: gradient %d (\"%s\") is "
                            "%s: integer gradients are summed, not divided, so config.prediv "
                            "must be 1 (it is %g%s)", i, name, sc_dtype_name(d->dtype),
                            r->prediv, cfg->prediv > 0.0 ? "" : ", the communicator size");
        total += d->count * es;
        r->grads[i].count = d->count;
        r->grads[i].dtype = d->dtype;
        r->grads[i].name = strdup(name);
        if (!r->grads[i].name)
            return sc_error(SC_ERR_NO_MEMORY, "sc_reducer_create: out of memory");
        if (r->hook.validate) {
            sc_error_clear(); /* a caller's hook may fail without a sentence */
            st = r->hook.validate(r->hook.state, d->dtype);
            if (st != SC_SUCCESS) {
                char why[SC_ERROR_MAX];
                st = sc_reducer_hook_why(st, why, sizeof(why));
                return sc_error(st, "sc_reducer_create: comm hook \"%s\" refused gradient %d "
                                "(\"%s\") of dtype %s (%s): %s",
                                r->hook.name ? r->hook.name : "", i, name,
                                sc_dtype_name(d->dtype), sc_status_string(st), why);
            }
        }
    }
    r->tune.asked = cfg->autotune;
    r->tune.fixed = cfg->autotune && fixed;
    if (r->tune.fixed)
        sc_log(SC_LOG_INFO, "reducer: SC_BUCKET_CAP_MB fixes the bucket cap at %zu bytes; "
                            "autotuning is off", r->cap);
    else if (cfg->autotune)
        sc_reducer_tune_init(&r->tune, total);
    /* In plain memory, here; registered memory takes a collective, which waits for
     * every rank's agreement on the gradients (sc_reducer_create lays the buckets out
     * there, once: not in plain memory first, zeroed and then freed). */
    st = sc_reducer_wants_registered(r) ? SC_SUCCESS : sc_reducer_layout(r, NULL, r->cap, 0);
    /* Host buckets whose finish has work (a copy back, the hook's): a thread does it as
     * soon as each bucket is reduced. With the plain all-reduce hook the all-reduce
     * itself delivers the copies back, and nothing is left to do after it. */
    if (st == SC_SUCCESS && r->mem.device < 0 &&
        ((!r->view && !sc_reducer_hook_is_plain(&r->hook)) || r->hook.finish))
        st = sc_reducer_finisher_start(r);
    return st;
}

/* The hook states that live reducers own. One hook given to two reducers would be
 * destroyed twice (a framework that passed one hook object to two models' reducers
 * crashed in free when the second was destroyed), so the second is refused. */
static sc_ptr_set_t sc_hooks_owned = SC_PTR_SET_INIT;

/* Records r's hook state as owned by r: SC_ERR_INVALID_ARG, nothing recorded, when a
 * live reducer owns it already. A hook without state needs no record. */
static sc_status_t sc_reducer_claim_hook(sc_reducer_t *r)
{
    int added;

    if (!r->hook.state)
        return SC_SUCCESS;
    added = sc_ptr_set_add(&sc_hooks_owned, r->hook.state, 1);
    if (added == 0)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_create: config.hook (\"%s\") is "
                        "owned by another reducer, which was given the same hook and "
                        "destroys its state with itself; fill a new hook for each reducer "
                        "(sc_comm_hook_builtin, sc_comm_hook_topk)",
                        r->hook.name ? r->hook.name : "");
    if (added < 0)
        return sc_error(SC_ERR_NO_MEMORY, "sc_reducer_create: out of memory");
    r->hook_claimed = 1;
    return SC_SUCCESS;
}

/* Before the hook's destroy: once freed, its address may be a new hook's. */
static void sc_reducer_unclaim_hook(sc_reducer_t *r)
{
    if (r->hook_claimed)
        sc_ptr_set_remove(&sc_hooks_owned, r->hook.state);
    r->hook_claimed = 0;
}

static void sc_reducer_free(sc_reducer_t *r)
{
    sc_reducer_finisher_stop(r);
    if (r->grads)
        for (int i = 0; i < r->n; i++)
            free(r->grads[i].name);
    free(r->grads);
    free(r->order);
    free(r->fill);
    /* The hook first: its work may still read a bucket (the top-k hook's selection
     * runs on a worker, which a failed iteration does not wait for), and its destroy
     * waits for that work. */
    sc_reducer_unclaim_hook(r);
    if (sc_reducer_must_keep(r))
        sc_reducer_hook_cast_keep(&r->hook, r->comm->tp);
    if (r->hook.destroy)
        r->hook.destroy(r->hook.state);
    sc_reducer_free_buckets(r, r->buckets, r->nbuckets, r->registered);
    sc_reducer_drop_moved(r);
    r->mem.close(&r->mem);
    if (r->comm) {
        sc_reducer_watch_remove(r->comm, &r->watch);
        sc_comm_release(r->comm);
    }
    pthread_cond_destroy(&r->changed);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static sc_status_t sc_reducer_create_call(sc_comm_t *comm, const sc_grad_desc_t *grads, int n,
                                          const sc_reducer_config_t *config,
                                          sc_reducer_t **reducer);
static sc_status_t sc_reducer_create_marked(sc_reducer_t *r, sc_comm_t *comm,
                                            const sc_grad_desc_t *grads, int n,
                                            const sc_reducer_config_t *cfg, sc_status_t st,
                                            sc_reducer_t **reducer);

/* Failures inside say which public call they ended (sc_error_in). */
SC_API sc_status_t sc_reducer_create(sc_comm_t *comm, const sc_grad_desc_t *grads, int n,
                                     const sc_reducer_config_t *config,
                                     sc_reducer_t **reducer)
{
    sc_serves_t was = sc_serves_begin(SC_SERVES_REDUCER_CREATE);

    return sc_serves_return(was, sc_reducer_create_call(comm, grads, n, config, reducer),
                            "sc_reducer_create");
}

static sc_status_t sc_reducer_create_call(sc_comm_t *comm, const sc_grad_desc_t *grads, int n,
                                          const sc_reducer_config_t *config,
                                          sc_reducer_t **reducer)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_reducer_t *r;
    sc_status_t st = SC_SUCCESS, comm_st, hook_st;
    int claimed;

    if (config) {
        /* Exactly this version's size: a part of the struct could end inside a field. */
        if (config->size != sizeof(cfg))
            st = sc_error(SC_ERR_INVALID_ARG, "sc_reducer_create: config.size is %zu, not "
                          "%zu: start the configuration from SC_REDUCER_CONFIG_INIT",
                          config->size, sizeof(cfg));
        else
            cfg = *config;
    }
    r = calloc(1, sizeof(*r));
    if (!r) {
        if (cfg.hook && cfg.hook->destroy)
            cfg.hook->destroy(cfg.hook->state);
        return sc_error(SC_ERR_NO_MEMORY, "sc_reducer_create: out of memory");
    }
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->changed, NULL);
    sc_reducer_mem_host(&r->mem);
    sc_comm_hook_builtin(SC_HOOK_ALLREDUCE, &r->hook);
    if (cfg.hook) {
        r->hook = *cfg.hook; /* owned from here on, whatever happens... */
        hook_st = sc_reducer_claim_hook(r);
        if (hook_st == SC_ERR_INVALID_ARG)
            sc_comm_hook_builtin(SC_HOOK_ALLREDUCE, &r->hook); /* ...but another's */
        if (st == SC_SUCCESS)
            st = hook_st;
    }
    /* comm marked as issued on by this thread until the reducer is made
     * (sc_comm_issue_begin): another thread's call between its collectives would take a
     * number among them. */
    comm_st = sc_comm_issue_begin(comm, "sc_reducer_create", &claimed);
    if (comm_st != SC_SUCCESS) {
        sc_reducer_free(r);
        return comm_st;
    }
    st = sc_reducer_create_marked(r, comm, grads, n, &cfg, st, reducer);
    sc_comm_issue_end(comm, claimed);
    return st;
}

/* sc_reducer_create past its configuration, on a communicator this thread marked; st:
 * the configuration's verdict. Frees r when it fails. */
static sc_status_t sc_reducer_create_marked(sc_reducer_t *r, sc_comm_t *comm,
                                            const sc_grad_desc_t *grads, int n,
                                            const sc_reducer_config_t *cfg, sc_status_t st,
                                            sc_reducer_t **reducer)
{
    sc_status_t comm_st = sc_comm_check_usable(comm, "sc_reducer_create");

    if (comm_st != SC_SUCCESS) {
        /* No communicator to agree over: this rank's error only. */
        sc_reducer_free(r);
        return comm_st;
    }
    r->comm = comm;
    sc_comm_hold(comm); /* until the reducer is freed: its buckets may be comm's memory */
    r->ops_left = sc_ucx_ops_left(comm->tp);
    r->rank = sc_comm_rank(comm);
    r->size = sc_comm_size(comm);
    r->sync = 1;
    r->iteration = 1;
    if (st == SC_SUCCESS)
        st = sc_reducer_setup(r, grads, n, cfg, reducer);
    st = sc_reducer_agree(comm, grads, n, r, st);
    /* Only once every rank agreed on the gradients, and so on the layout: in registered
     * memory where it can be (or plain memory where the registration fails on some
     * rank, on every rank). A rank that gets no memory at all tells the others, so
     * that none returns a reducer whose first bucket would wait for it. */
    if (st == SC_SUCCESS && sc_reducer_wants_registered(r)) {
        st = sc_reducer_layout(r, NULL, r->cap, 1);
        st = sc_comm_agree(comm, "sc_reducer_create", st, SC_ERR_PEER_FAILED, NULL, 0, NULL);
    }
    if (st != SC_SUCCESS) {
        sc_reducer_free(r);
        return st;
    }
    /* Numbered only once made, which every rank agreed on: a create that failed on some
     * ranks before the agreement (no communicator there) numbers nothing anywhere. */
    sc_reducer_watch_add(comm, &r->watch);
    r->stats.buckets = r->nbuckets;
    r->stats.bucket_cap_bytes = r->cap;
    sc_log(SC_LOG_DEBUG, "reducer: %d gradients in %d buckets (cap %zu bytes, first %zu)",
           r->n, r->nbuckets, r->cap, r->first_cap);
    *reducer = r;
    return SC_SUCCESS;
}

SC_API sc_status_t sc_reducer_destroy(sc_reducer_t *reducer)
{
    sc_status_t st = SC_SUCCESS;
    int aborted = 0;

    if (!reducer)
        return SC_SUCCESS;
    /* In a process forked from the reducer's, its threads, communicator and registered
     * memory are the parent's: nothing is stopped or freed here (the child's copy goes
     * with the child), as a communicator is refused there. */
    if (reducer->comm && sc_process_is_fork_of(reducer->comm->owner_pid))
        return sc_comm_check_handle(reducer->comm, "sc_reducer_destroy");
    if (reducer->nready > 0 && reducer->sync) {
        /* Mid-iteration: the peers wait for buckets this rank will never start. The
         * abort tells them at once (they waited SC_TIMEOUT), with the reason, and fails
         * what is in flight here, before the finisher thread stops: it may be waiting
         * for a bucket that a peer which marked less will not start (until SC_TIMEOUT). */
        char why[192];
        snprintf(why, sizeof(why), "sc_reducer_destroy on %s: its reducer was destroyed with "
                 "%d of %d gradients marked, before finalize ended the iteration",
                 sc_comm_rank_name(reducer->comm, reducer->rank).s, reducer->nready,
                 reducer->n);
        sc_log(SC_LOG_INFO, "%s: the communicator is aborted", why);
        sc_comm_abort_why(reducer->comm, why);
        aborted = 1;
    } else if (reducer->comm) {
        /* Between iterations as this rank sees them; a peer may have begun the next
         * synced one and would wait for its buckets: it aborts when told (it alone
         * knows). */
        char why[192];
        snprintf(why, sizeof(why), "sc_reducer_destroy on %s: its reducer was destroyed "
                 "between iterations, after %llu synced ones",
                 sc_comm_rank_name(reducer->comm, reducer->rank).s,
                 (unsigned long long)reducer->watch.ended);
        sc_reducer_watch_tell_gone(reducer->comm, &reducer->watch, why);
    }
    sc_reducer_finisher_stop(reducer);
    /* Buckets started in an iteration that never finalized. */
    for (int b = 0; b < reducer->nbuckets; b++) {
        sc_rbucket_t *bk = &reducer->buckets[b];
        if (bk->req) {
            sc_status_t s = sc_wait(bk->req);
            if (s != SC_SUCCESS && st == SC_SUCCESS && !aborted)
                st = s;
            sc_request_free(bk->req);
            bk->req = NULL;
        }
    }
    sc_reducer_free(reducer);
    return st;
}

SC_API void *sc_reducer_grad_view(sc_reducer_t *reducer, int i)
{
    const sc_rgrad_t *g;
    sc_status_t st = SC_SUCCESS;

    if (!reducer || !reducer->view || i < 0 || i >= reducer->n)
        return NULL;
    /* The first call after a change of layout moves the views (reducer_layout.c). */
    pthread_mutex_lock(&reducer->lock);
    st = sc_reducer_move_views(reducer);
    pthread_mutex_unlock(&reducer->lock);
    if (st != SC_SUCCESS || reducer->unbuilt != SC_SUCCESS)
        return NULL;
    g = &reducer->grads[i];
    if (!reducer->buckets[g->bucket].hb.data)
        return NULL;
    return (char *)reducer->buckets[g->bucket].hb.data + g->offset * sc_dtype_size(g->dtype);
}

SC_API sc_status_t sc_reducer_grad_bucket(const sc_reducer_t *reducer, int i, int *bucket,
                                          size_t *offset)
{
    if (!reducer || !bucket || !offset)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_grad_bucket: reducer, bucket or "
                        "offset is NULL");
    if (i < 0 || i >= reducer->n)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_grad_bucket: gradient index %d is "
                        "outside [0, %d)", i, reducer->n);
    *bucket = reducer->grads[i].bucket;
    *offset = reducer->grads[i].offset;
    return SC_SUCCESS;
}

SC_API sc_status_t sc_reducer_stats(const sc_reducer_t *reducer, sc_reducer_stats_t *stats)
{
    if (!reducer || !stats)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_stats: reducer or stats is NULL");
    *stats = reducer->stats;
    stats->registered = reducer->registered != NULL;
    return SC_SUCCESS;
}
