/* The compressor: configuration, per-key state (residual, momentum, steps), and one
 * step on a key: v = residual + g (error feedback, compressor_ef.c) filled block by
 * block as the selection scans it (one pass over memory, on the selector's threads),
 * the top-k selection of v packed into this rank's block and v settled there (less
 * what is sent), and, once the collective succeeded, the commit (v becomes the
 * residual; sent entries of u are cleared) and the scatter-add of every rank's
 * block. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"
#include "core/clock.h"
#include "core/comm_internal.h"
#include "core/cpu.h"
#include "shardcomm/kernels.h"

static sc_status_t sc_compress_config_resolve(const char *caller,
                                              const sc_compress_config_t *in,
                                              sc_compress_config_t *out)
{
    sc_compress_config_t c = SC_COMPRESS_CONFIG_INIT;

    if (in) {
        /* Exactly this version's size: a part of the struct could end inside a field. */
        if (in->size != sizeof(c))
            return sc_error(SC_ERR_INVALID_ARG, "%s: config.size is %zu, not %zu: start the "
                            "configuration from SC_COMPRESS_CONFIG_INIT", caller, in->size,
                            sizeof(c));
        c = *in;
    }
    if (c.density == 0.0)
        c.density = 0.01;
    if (!(c.density > 0.0 && c.density <= 1.0))
        return sc_error(SC_ERR_INVALID_ARG, "%s: config.density is %g; it must be in (0, 1] "
                        "(or 0 for 0.01)", caller, c.density);
    if ((unsigned)c.mode > SC_TOPK_RANDOM)
        return sc_error(SC_ERR_INVALID_ARG, "%s: config.mode is %d, not SC_TOPK_EXACT (0), "
                        "SC_TOPK_APPROX (1) or SC_TOPK_RANDOM (2)", caller, (int)c.mode);
    if (sc_check_switch(caller, "config.error_feedback", c.error_feedback) != SC_SUCCESS)
        return SC_ERR_INVALID_ARG;
    if (!(c.momentum >= 0.0 && c.momentum < 1.0))
        return sc_error(SC_ERR_INVALID_ARG, "%s: config.momentum is %g; it must be in [0, 1) "
                        "(0: no momentum correction)", caller, c.momentum);
    if (c.momentum == 0.0) /* -0.0 too: both are off, and the ranks compare the bits */
        c.momentum = 0.0;
    if (sc_check_switch(caller, "config.values_fp16", c.values_fp16) != SC_SUCCESS)
        return SC_ERR_INVALID_ARG;
    if (c.index_bits != 0 && c.index_bits != 32 && c.index_bits != 64)
        return sc_error(SC_ERR_INVALID_ARG, "%s: config.index_bits is %d, not 0 (by size), 32 "
                        "or 64", caller, c.index_bits);
    if (c.warmup_steps < 0)
        return sc_error(SC_ERR_INVALID_ARG, "%s: config.warmup_steps is %d; it must be >= 0",
                        caller, c.warmup_steps);
    if (c.threads < 0 || c.threads > SC_CPU_THREADS_MAX)
        return sc_error(SC_ERR_INVALID_ARG, "%s: config.threads is %d; it must be from 0 "
                        "(SC_THREADS or the cores this rank is bound to) to %d", caller,
                        c.threads, SC_CPU_THREADS_MAX);
    *out = c;
    return SC_SUCCESS;
}

sc_status_t sc_compressor_new(const char *caller, const sc_compress_config_t *config,
                              sc_compressor_t **compressor)
{
    sc_topk_config_t tc = SC_TOPK_CONFIG_INIT;
    sc_compressor_t *c;
    sc_status_t st;

    if (!compressor)
        return sc_error(SC_ERR_INVALID_ARG, "%s: the output pointer is NULL", caller);
    c = calloc(1, sizeof(*c));
    if (!c)
        return sc_error(SC_ERR_NO_MEMORY, "%s: out of memory", caller);
    st = sc_compress_config_resolve(caller, config, &c->cfg);
    if (st != SC_SUCCESS)
        goto err_free;
    tc.mode = c->cfg.mode;
    tc.threads = c->cfg.threads;
    tc.seed = c->cfg.seed;
    st = sc_topk_create(&tc, &c->topk);
    if (st != SC_SUCCESS)
        goto err_free;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->hook_lock, NULL);
    *compressor = c;
    return SC_SUCCESS;
err_free:
    free(c);
    return st;
}

SC_API sc_status_t sc_compressor_create(const sc_compress_config_t *config,
                                        sc_compressor_t **compressor)
{
    return sc_compressor_new("sc_compressor_create", config, compressor);
}

void sc_ckey_free(sc_ckey_t *k)
{
    if (!k)
        return;
    free(k->residual);
    free(k->momentum);
    free(k->v);
    free(k->blocks);
    free(k->picked);
    sc_ckey_free(k->parked);
    free(k);
}

SC_API void sc_compressor_destroy(sc_compressor_t *c)
{
    if (!c)
        return;
    sc_worker_destroy(c->worker); /* after the selections still queued */
    for (int i = 0; i < c->nkeys; i++)
        sc_ckey_free(c->keys[i]);
    free(c->keys);
    sc_topk_destroy(c->topk);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->hook_lock);
    free(c);
}

sc_status_t sc_ckey_new(const sc_compressor_t *c, const char *caller, int key,
                               size_t count, sc_dtype_t dtype, sc_ckey_t **out)
{
    sc_ckey_t *k = calloc(1, sizeof(*k));
    size_t bytes;

    if (!k)
        goto err;
    k->key = key;
    k->origin_world = -1;
    k->gate = 1; /* no selection of the comm hook in flight */
    k->count = count;
    k->dtype = dtype;
    k->acc = dtype == SC_FLOAT64 ? SC_FLOAT64 : SC_FLOAT32;
    bytes = (count ? count : 1) * sc_dtype_size(k->acc);
    k->v = malloc(bytes);
    if (!k->v)
        goto err;
    if (c->cfg.error_feedback && !(k->residual = calloc(1, bytes)))
        goto err;
    if (c->cfg.momentum > 0.0 && !(k->momentum = calloc(1, bytes)))
        goto err;
    *out = k;
    return SC_SUCCESS;
err:
    sc_ckey_free(k);
    return sc_error(SC_ERR_NO_MEMORY, "%s: out of memory for the state of key %d (%zu "
                    "elements)", caller, key, count);
}

/* Under c->lock. */
static sc_ckey_t **sc_compressor_find(sc_compressor_t *c, int key)
{
    for (int i = 0; i < c->nkeys; i++)
        if (c->keys[i]->key == key)
            return &c->keys[i];
    return NULL;
}

sc_status_t sc_compressor_key(sc_compressor_t *c, const char *caller, int key, size_t count,
                              sc_dtype_t dtype, uint64_t layout, sc_ckey_t **out)
{
    sc_ckey_t **slot, *k;
    sc_status_t st = SC_SUCCESS;

    pthread_mutex_lock(&c->lock);
    slot = sc_compressor_find(c, key);
    if (slot && (*slot)->layout == layout && ((*slot)->count != count ||
                                              (*slot)->dtype != dtype)) {
        st = sc_error(SC_ERR_INVALID_ARG, "%s: key %d holds the state of %zu elements of %s, "
                      "this call gives %zu elements of %s; a key is one tensor", caller, key,
                      (*slot)->count, sc_dtype_name((*slot)->dtype), count,
                      sc_dtype_name(dtype));
        goto out;
    }
    if (slot && (*slot)->layout != layout) {
        /* The buckets were laid out anew: this index holds other gradients, unless they
         * are those of the checkpoint loaded for it (in the slot, or kept aside while
         * earlier layouts gave the index other contents), which is adopted then: the
         * layout it was saved under names the bucket's gradients and offsets; a state
         * that does not record it is matched by count and dtype. */
        sc_ckey_t *loaded = (*slot)->layout == 0 ? *slot : (*slot)->parked, *next = loaded;
        int waited = loaded && loaded != *slot; /* kept aside through a layout already */
        if (!loaded || loaded->count != count || loaded->dtype != dtype ||
            (loaded->saved_layout != 0 && loaded->saved_layout != layout)) {
            st = sc_ckey_new(c, caller, key, count, dtype, &next);
            if (st != SC_SUCCESS)
                goto out;
            /* Kept aside through the first layout after the load only (a new reducer's,
             * before its rebuild): the next one adopts it or drops it, so that saves
             * write the state in use from then on. */
            next->parked = waited ? NULL : loaded;
            if (waited) {
                (*slot)->parked = NULL;
                sc_ckey_free(loaded);
            }
        }
        next->steps = (*slot)->steps;
        next->layout = layout;
        next->layout_starts = 0;
        if (*slot != loaded) { /* a state of an earlier layout: dropped */
            (*slot)->parked = NULL;
            sc_ckey_free(*slot);
        }
        *slot = next;
    }
    if (slot) {
        *out = *slot;
        goto out;
    }
    if (c->nkeys == c->keys_cap) {
        int cap = c->keys_cap ? 2 * c->keys_cap : 8;
        sc_ckey_t **keys = realloc(c->keys, (size_t)cap * sizeof(*keys));
        if (!keys) {
            st = sc_error(SC_ERR_NO_MEMORY, "%s: out of memory for key %d", caller, key);
            goto out;
        }
        c->keys = keys;
        c->keys_cap = cap;
    }
    st = sc_ckey_new(c, caller, key, count, dtype, &k);
    if (st != SC_SUCCESS)
        goto out;
    k->layout = layout;
    k->unborn = 1;
    c->keys[c->nkeys++] = k;
    *out = k;
out:
    pthread_mutex_unlock(&c->lock);
    return st;
}

/* Whether the key's steps select from v (error feedback or momentum) rather than from
 * the gradient. */
static int sc_ckey_shaped(const sc_ckey_t *k)
{
    return k->residual || k->momentum;
}

/* k elements: round(density * count), at least 1 when count > 0. */
static size_t sc_compress_k(const sc_compress_config_t *cfg, size_t count)
{
    double x = floor(cfg->density * (double)count + 0.5);
    size_t k = x >= (double)count ? count : (size_t)x;

    return count > 0 && k == 0 ? 1 : k;
}

static sc_status_t sc_ckey_reserve(void **buf, size_t *cap, size_t bytes, const char *caller,
                                   const char *what)
{
    void *p;

    if (*cap >= bytes && *buf)
        return SC_SUCCESS;
    p = malloc(bytes ? bytes : 8);
    if (!p)
        return sc_error(SC_ERR_NO_MEMORY, "%s: out of memory for %zu bytes of %s", caller,
                        bytes, what);
    free(*buf);
    *buf = p;
    *cap = bytes;
    return SC_SUCCESS;
}

/* The rank that made k's state, for the refusal of a state loaded elsewhere: with its
 * world rank where that is known and differs (a split), as sc_comm_rank_name names this
 * rank. */
static sc_rank_name_t sc_ckey_origin_name(const sc_ckey_t *k)
{
    sc_rank_name_t n;

    if (k->origin_world >= 0 && k->origin_world != k->origin_rank)
        snprintf(n.s, sizeof(n.s), "rank %d (world rank %d)", k->origin_rank, k->origin_world);
    else
        snprintf(n.s, sizeof(n.s), "rank %d", k->origin_rank);
    return n;
}

sc_status_t sc_compressor_plan(sc_compressor_t *c, const char *caller, sc_ckey_t *k,
                               const sc_comm_t *comm)
{
    int rank = comm->rank, p = comm->size;
    const sc_compress_config_t *cfg = &c->cfg;
    size_t kk = sc_compress_k(cfg, k->count);
    int bits = cfg->index_bits ? cfg->index_bits : (k->count <= UINT32_MAX ? 32 : 64);
    sc_dtype_t vdtype = cfg->values_fp16 ? SC_FLOAT16 : k->dtype;
    sc_dtype_t sdtype = sc_ckey_shaped(k) ? k->acc : k->dtype;
    sc_status_t st;

    if (k->origin_size > 0 && (k->residual || k->momentum) &&
        (k->origin_rank != rank || k->origin_size != p))
        return sc_error(SC_ERR_INVALID_ARG, "%s: the state of key %d (its residual%s) was "
                        "made by %s of %d and this is %s of %d: a checkpoint loaded on "
                        "another rank or world size; load each rank's own state, or "
                        "sc_compressor_reset to start afresh", caller, k->key,
                        k->momentum ? " and momentum" : "", sc_ckey_origin_name(k).s,
                        k->origin_size, sc_comm_rank_name(comm, rank).s, p);
    k->origin_rank = rank;
    k->origin_size = p;
    k->origin_world = comm->world_of[rank];

    /* Warm-up, or every element sent in the gradient's dtype: a dense all-reduce moves
     * half the bytes of the pairs and selects nothing (nothing is left to feed back). */
    k->dense = k->steps < cfg->warmup_steps || (kk == k->count && vdtype == k->dtype &&
                                                !k->momentum);
    k->selected = 0;
    k->select_s = 0.0;
    if (k->dense)
        return SC_SUCCESS;
    if (bits == 32 && k->count > UINT32_MAX)
        return sc_error(SC_ERR_INVALID_ARG, "%s: config.index_bits is 32, but key %d has %zu "
                        "elements (32-bit indices address fewer than 2^32)", caller, k->key,
                        k->count);
    st = sc_pairs_layout(caller, kk, bits, vdtype, p, &k->lay);
    if (st == SC_SUCCESS)
        st = sc_ckey_reserve(&k->blocks, &k->blocks_cap, k->lay.bytes * (size_t)p, caller,
                             "blocks of pairs");
    if (st == SC_SUCCESS && sdtype != vdtype)
        st = sc_ckey_reserve(&k->picked, &k->picked_cap, kk * sc_dtype_size(sdtype), caller,
                             "selected values");
    return st;
}

/* Whether the selection took an Inf or NaN (vals: the selected values, of dtype): the
 * step's result shows the overflow then, and the Inf and NaN it did not take (the exact
 * and approximate selections take them first; random-k draws regardless) are dropped. */
static int sc_ckey_sends_nonfinite(const void *vals, sc_dtype_t dtype, size_t selected)
{
    for (size_t j = 0; j < selected; j++)
        if (!isfinite(sc_pairs_load(vals, dtype, j)))
            return 1;
    return 0;
}

sc_status_t sc_compressor_select(sc_compressor_t *c, const char *caller, sc_ckey_t *k,
                                 const void *g, int rank)
{
    const sc_compress_config_t *cfg = &c->cfg;
    size_t kk = k->lay.k, selected = 0;
    int bits = k->lay.index_bits, shaped = sc_ckey_shaped(k);
    sc_dtype_t vdtype = k->lay.vdtype;
    sc_dtype_t sdtype = shaped ? k->acc : k->dtype; /* what the selection reads */
    size_t ib = (size_t)bits / 8, vb = sc_dtype_size(vdtype);
    sc_ef_fill_t fill = {k, cfg->momentum, g};
    sc_topk_filler_t filler = sc_ef_filler(&fill);
    char *block = (char *)k->blocks + (size_t)rank * k->lay.bytes;
    char *vals = block + k->lay.values_off;
    void *out_vals = sdtype == vdtype ? (void *)vals : k->picked;
    double t0 = sc_clock_now();
    sc_status_t st = SC_SUCCESS;

    if (kk > 0) {
        /* Each key keeps its own approximate threshold (buckets differ in size and
         * spread); the selector is shared. */
        sc_topk_approx_swap(c->topk, &k->approx);
        if (shaped)
            st = sc_topk_select_filled(c->topk, k->v, sdtype, k->count, kk, bits, block,
                                       out_vals, &selected, &filler);
        else
            st = sc_topk_select(c->topk, g, sdtype, k->count, kk, bits, block, out_vals,
                                &selected, NULL);
        sc_topk_approx_swap(c->topk, &k->approx);
    }
    if (st == SC_SUCCESS && sdtype != vdtype)
        sc_pairs_convert(k->picked, sdtype, vals, vdtype, selected);
    /* Pads after what an approximate selection returned (the whole block when the
     * selection failed: nothing of this rank's goes on the wire); zeros in the sections'
     * tails. */
    if (st != SC_SUCCESS)
        selected = 0;
    memset(block + selected * ib, 0xff, (kk - selected) * ib);
    memset(block + kk * ib, 0, k->lay.values_off - kk * ib);
    memset(vals + selected * vb, 0, k->lay.bytes - k->lay.values_off - selected * vb);
    if (st != SC_SUCCESS)
        return st;
    /* The settling and the momentum pass walk the sent pairs in index order. */
    if (!sc_pairs_sorted(&k->lay, block))
        return sc_error(SC_ERR_INTERNAL, "%s: the selection of key %d returned indices out "
                        "of ascending order", caller, k->key);
    k->selected = selected;
    k->drop_nonfinite = shaped && sc_ckey_sends_nonfinite(out_vals, sdtype, selected);
    if (k->residual) {
        sc_ef_settle_selected(k, block);
        sc_ef_drop_nonfinite(k);
    }
    k->select_s = sc_clock_now() - t0;
    return SC_SUCCESS;
}

void sc_compressor_keep(sc_ckey_t *k)
{
    k->approx_before = k->approx;
    k->origin_before[0] = k->origin_rank;
    k->origin_before[1] = k->origin_size;
    k->origin_before[2] = k->origin_world;
}

sc_status_t sc_compressor_prepare(sc_compressor_t *c, const char *caller, sc_ckey_t *k,
                                  const void *g, const sc_comm_t *comm)
{
    sc_status_t st;

    sc_compressor_keep(k);
    sc_topk_draws_get(c->topk, &k->draws_before);
    st = sc_compressor_plan(c, caller, k, comm);
    if (st != SC_SUCCESS || k->dense)
        return st;
    return sc_compressor_select(c, caller, k, g, comm->rank);
}

void sc_compressor_abandon(sc_compressor_t *c, sc_ckey_t *k)
{
    sc_topk_draws_set(c->topk, &k->draws_before);
    if (!k->unborn) {
        /* A loaded state of no origin (an earlier format) stays of none. */
        k->approx = k->approx_before;
        k->origin_rank = k->origin_before[0];
        k->origin_size = k->origin_before[1];
        k->origin_world = k->origin_before[2];
        return;
    }
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->nkeys; i++) {
        if (c->keys[i] == k) { /* the others keep their order (saved in it) */
            memmove(&c->keys[i], &c->keys[i + 1], (size_t)(c->nkeys - i - 1) * sizeof(*c->keys));
            c->nkeys--;
            break;
        }
    }
    pthread_mutex_unlock(&c->lock);
    sc_ckey_free(k);
}

void sc_compressor_commit(sc_compressor_t *c, sc_ckey_t *k, const void *g, int rank)
{
    size_t p = (size_t)k->origin_size;
    /* The counters describe the last step that ran: a refused or failed one (abandoned)
     * leaves them as they were. */
    sc_compress_stats_t stats = {k->selected, (p - 1) * k->lay.bytes, k->select_s, 0.0, 0};

    if (k->dense)
        stats = (sc_compress_stats_t){0, 2 * (p - 1) * k->count * sc_dtype_size(k->dtype) / p,
                                      0.0, 0.0, 1};
    pthread_mutex_lock(&c->lock);
    c->stats = stats;
    pthread_mutex_unlock(&c->lock);
    if (!k->dense) {
        if (k->momentum)
            sc_ef_momentum(k, c->cfg.momentum, g,
                           (const char *)k->blocks + (size_t)rank * k->lay.bytes);
        if (k->residual) {
            void *t = k->residual;
            k->residual = k->v;
            k->v = t;
        }
    }
    k->steps++;
    k->unborn = 0;
}

void sc_compressor_scatter(sc_compressor_t *c, sc_ckey_t *k, int p, void *dense,
                           int divisor, const sc_range_t *ranges, int nranges)
{
    double t0 = sc_clock_now();

    /* After the commit v is free: it serves as float16/bfloat16's float32 accumulator. */
    sc_pairs_scatter(&k->lay, k->blocks, p, dense, k->dtype, k->count, divisor, k->v, ranges,
                     nranges);
    pthread_mutex_lock(&c->lock);
    c->stats.scatter_s = sc_clock_now() - t0;
    pthread_mutex_unlock(&c->lock);
}

SC_API sc_status_t sc_compressor_stats(const sc_compressor_t *compressor,
                                       sc_compress_stats_t *stats)
{
    sc_compressor_t *c = (sc_compressor_t *)compressor;

    if (!c || !stats)
        return sc_error(SC_ERR_INVALID_ARG, "sc_compressor_stats: %s is NULL",
                        !c ? "compressor" : "stats");
    pthread_mutex_lock(&c->lock);
    *stats = c->stats;
    pthread_mutex_unlock(&c->lock);
    return SC_SUCCESS;
}
