/* The reducer's buckets: which gradients share a bucket and where each one sits, the
 * bucket memory, and the move of the views' contents when the layout changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/reducer_internal.h"
#include "collectives/stage.h"
#include "collectives/transport_ucx.h"
#include "core/comm_internal.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/tuning.h"

/* One bucket under construction: its gradients as positions in the fill order. */
typedef struct {
    sc_dtype_t dtype;
    int *pos;
    int npos, cap_pos;
    size_t bytes;
    int last;        /* position of its last gradient: buckets start in this order */
} sc_draft_t;

typedef struct {
    sc_draft_t *v;
    int n, cap;
} sc_drafts_t;

static sc_draft_t *sc_draft_new(sc_drafts_t *d, sc_dtype_t dtype)
{
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 8;
        sc_draft_t *v = realloc(d->v, (size_t)cap * sizeof(*v));
        if (!v)
            return NULL;
        d->v = v;
        d->cap = cap;
    }
    memset(&d->v[d->n], 0, sizeof(d->v[0]));
    d->v[d->n].dtype = dtype;
    return &d->v[d->n++];
}

static int sc_draft_add(sc_draft_t *b, int pos, size_t bytes)
{
    if (b->npos == b->cap_pos) {
        int cap = b->cap_pos ? 2 * b->cap_pos : 8;
        int *p = realloc(b->pos, (size_t)cap * sizeof(*p));
        if (!p)
            return -1;
        b->pos = p;
        b->cap_pos = cap;
    }
    b->pos[b->npos++] = pos;
    b->bytes += bytes;
    b->last = pos;
    return 0;
}

static void sc_drafts_free(sc_drafts_t *d)
{
    for (int i = 0; i < d->n; i++)
        free(d->v[i].pos);
    free(d->v);
}

static int sc_draft_cmp(const void *a, const void *b)
{
    const sc_draft_t *x = a, *y = b;
    return (x->last > y->last) - (x->last < y->last);
}

/* The size from which a gradient gets a bucket of its own, whatever the cap, or 0: on
 * a communicator that stages plain memory through shared memory (one node), where a
 * bucket of one host gradient that is copied, not viewed, is reduced in the caller's
 * memory with the plain hook (sc_reducer_mark_ready). There, copying a large gradient
 * into a bucket and its result back costs more memory traffic than fusing it saves (a
 * call costs microseconds); across nodes the network is slower than those copies and
 * the calls cost more, so buckets fuse as DDP's do. The same on every rank. */
static size_t sc_layout_solo_bytes(const sc_reducer_t *r)
{
    return !r->view && r->mem.device < 0 && sc_reducer_hook_is_plain(&r->hook) &&
                   sc_stage_area(r->comm) > 0
               ? SC_REDUCER_SOLO_BYTES
               : 0;
}

/* Buckets as DDP forms them: one open bucket per dtype, filled in order; a bucket
 * closes when the next gradient would take it past its limit (first_cap for a dtype's
 * first bucket, cap after it); a gradient larger than the limit gets a bucket of its
 * own. A gradient of at least sc_layout_solo_bytes gets one too, beside that layout of
 * the others. Buckets are then ordered by the position of their last gradient, the
 * order in which they are expected to fill. */
static int sc_layout_draft(const sc_reducer_t *r, const int *order, size_t cap,
                           sc_drafts_t *out)
{
    size_t solo = sc_layout_solo_bytes(r);
    int open[SC_DTYPE_COUNT], closed[SC_DTYPE_COUNT];
    sc_drafts_t d = {0};

    for (int t = 0; t < SC_DTYPE_COUNT; t++)
        open[t] = -1, closed[t] = 0;
    for (int pos = 0; pos < r->n; pos++) {
        const sc_rgrad_t *g = &r->grads[order[pos]];
        int t = (int)g->dtype;
        size_t bytes = g->count * sc_dtype_size(g->dtype);
        size_t limit = closed[t] ? cap : r->first_cap;
        /* Solo: beside the others, which are laid out as without it (the open bucket
         * neither closed nor counted). */
        int solo_here = solo && bytes >= solo;
        sc_draft_t *b;

        if (!solo_here && open[t] >= 0 && d.v[open[t]].bytes + bytes > limit) {
            open[t] = -1;
            closed[t]++;
            limit = cap;
        }
        if (solo_here || bytes > limit) {
            /* Solo or oversize: alone in a bucket, which closes at once. */
            if (!(b = sc_draft_new(&d, g->dtype)) || sc_draft_add(b, pos, bytes) != 0)
                goto err;
            closed[t] += !solo_here;
            continue;
        }
        if (open[t] < 0) {
            if (!sc_draft_new(&d, g->dtype))
                goto err;
            open[t] = d.n - 1;
        }
        if (sc_draft_add(&d.v[open[t]], pos, bytes) != 0)
            goto err;
    }
    if (d.n > 1)
        qsort(d.v, (size_t)d.n, sizeof(d.v[0]), sc_draft_cmp);
    *out = d;
    return 0;

err:
    sc_drafts_free(&d);
    return -1;
}

int sc_reducer_must_keep(const sc_reducer_t *r)
{
    return r->comm && sc_ucx_ops_left(r->comm->tp) != r->ops_left;
}

/* One word into a 64-bit hash: FNV-1a's step, with the high half folded down so that
 * changes carry both ways. */
static uint64_t sc_id_mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

/* sc_hook_bucket_t.layout: an id of the bucket's contents (its dtype, and which
 * gradients in which order, so at which offsets), never 0. A new layout that leaves a
 * bucket as it was keeps its id (a hook keeps its state), one that changes it gets
 * another; equal in every process for equal contents, so a hook's checkpoint can name
 * the bucket it belongs to. */
static uint64_t sc_bucket_contents_id(const sc_reducer_t *r, const sc_rbucket_t *b)
{
    uint64_t h = sc_id_mix(sc_id_mix(0xcbf29ce484222325ull, (uint64_t)b->hb.dtype),
                           (uint64_t)b->ngrads);

    for (int j = 0; j < b->ngrads; j++)
        h = sc_id_mix(sc_id_mix(h, (uint64_t)b->grads[j]),
                      (uint64_t)r->grads[b->grads[j]].count);
    return h ? h : 1;
}

/* Gives registered memory back; memory a failed collective still holds (sc_mem_free
 * refuses it: a transfer that could not be cancelled) stays until sc_comm_destroy.
 * The caller's error sentence is kept either way. */
static void sc_reducer_free_registered(sc_reducer_t *r, void *block)
{
    char kept[SC_ERROR_MAX];

    snprintf(kept, sizeof(kept), "%s", sc_last_error());
    if (sc_mem_free(r->comm, block) != SC_SUCCESS)
        sc_log(SC_LOG_INFO, "sc_reducer: its registered buckets stay until "
               "sc_comm_destroy: %s", sc_error_text_unprefixed());
    sc_error_set_text(kept);
}

/* Frees the buckets' memory (registered: the one block), keeping their descriptions.
 * Plain buckets that a failed collective may still write (sc_reducer_must_keep:
 * collectives.h) go to the transport instead, which frees them after its worker. */
static void sc_buckets_free_memory(sc_reducer_t *r, sc_rbucket_t *buckets, int nbuckets,
                                   void *registered)
{
    int keep = !registered && sc_reducer_must_keep(r);

    if (registered)
        sc_reducer_free_registered(r, registered);
    if (keep && nbuckets > 0)
        sc_log(SC_LOG_INFO, "sc_reducer: %d buckets kept until the communicator's last "
               "sc_comm_destroy: a failed collective may still write them", nbuckets);
    for (int b = 0; b < nbuckets; b++) {
        if (keep)
            sc_ucx_keep_block(r->comm->tp, r->mem.device, buckets[b].hb.data);
        else if (!registered)
            sc_mem_free_on(r->mem.device, buckets[b].hb.data);
        buckets[b].hb.data = NULL;
    }
}

void sc_reducer_free_buckets(sc_reducer_t *r, sc_rbucket_t *buckets, int nbuckets,
                             void *registered)
{
    sc_buckets_free_memory(r, buckets, nbuckets, registered);
    for (int b = 0; b < nbuckets; b++) {
        free(buckets[b].grads);
        free(buckets[b].deliver);
        free(buckets[b].source);
    }
    free(buckets);
}

int sc_reducer_wants_registered(const sc_reducer_t *r)
{
    const sc_tuning_t *t;

    return r->mem.device < 0 && r->size >= 2 && sc_comm_local_size(r->comm) == r->size &&
           sc_tuning_get(&t) == SC_SUCCESS && t->local_register;
}

/* Bytes of a bucket's data, rounded up to 64 so that each bucket starts aligned. */
static size_t sc_bucket_span(size_t bytes)
{
    return (bytes + 63) & ~(size_t)63;
}

/* Collective: one block of registered memory for every bucket of d, in *block; NULL
 * (plain memory) where that cannot be, the same on every rank. Fails only when the
 * communicator does. */
static sc_status_t sc_layout_register(sc_reducer_t *r, const sc_drafts_t *d, uint8_t **block)
{
    size_t total = 0;
    sc_status_t st;

    *block = NULL;
    if (!sc_reducer_wants_registered(r))
        return SC_SUCCESS;
    for (int k = 0; k < d->n; k++)
        total += sc_bucket_span(d->v[k].bytes);
    if (total == 0)
        return SC_SUCCESS;
    st = sc_mem_alloc(r->comm, total, (void **)block);
    if (st == SC_ERR_NO_MEMORY || st == SC_ERR_PEER_FAILED) {
        /* Agreed on every rank: all keep their buckets in plain memory. */
        sc_log(SC_LOG_INFO, "reducer: buckets stay in plain memory: %s", sc_last_error());
        *block = NULL;
        return SC_SUCCESS;
    }
    if (st == SC_SUCCESS)
        sc_log(SC_LOG_DEBUG, "reducer: %d buckets in %zu bytes of registered memory", d->n,
               total);
    return st;
}

/* Whether draft d (over order) holds the same gradients in the same order in each
 * bucket as the layout in place, and so every gradient at its offset: a rebuild in the
 * order the buckets already have. The same on every rank (its inputs are). */
static int sc_layout_same(const sc_reducer_t *r, const int *order, const sc_drafts_t *d)
{
    if (!r->buckets || d->n != r->nbuckets)
        return 0;
    for (int k = 0; k < d->n; k++) {
        const sc_rbucket_t *b = &r->buckets[k];
        if (d->v[k].npos != b->ngrads)
            return 0;
        for (int j = 0; j < b->ngrads; j++)
            if (order[d->v[k].pos[j]] != b->grads[j])
                return 0;
    }
    return 1;
}

void sc_reducer_drop_moved(sc_reducer_t *r)
{
    if (!r->moved)
        return;
    sc_reducer_free_buckets(r, r->moved, r->nmoved, r->moved_registered);
    free(r->moved_slot);
    r->moved = NULL;
    r->nmoved = 0;
    r->moved_registered = NULL;
    r->moved_slot = NULL;
}

sc_status_t sc_reducer_move_views(sc_reducer_t *r)
{
    sc_status_t st;

    if (!r->moved)
        return SC_SUCCESS;
    st = r->mem.after_compute(&r->mem);
    for (int g = 0; g < r->n && st == SC_SUCCESS; g++) {
        size_t es = sc_dtype_size(r->grads[g].dtype), bytes = r->grads[g].count * es;
        if (bytes && r->moved_slot[g])
            st = r->mem.copy(&r->mem, (char *)r->buckets[r->grads[g].bucket].hb.data +
                                          r->grads[g].offset * es,
                             r->moved_slot[g], bytes);
    }
    if (st == SC_SUCCESS)
        st = r->mem.before_compute(&r->mem);
    sc_reducer_drop_moved(r);
    if (st != SC_SUCCESS) {
        /* The views lost their contents: no later iteration can be right. */
        r->unbuilt = st;
        snprintf(r->unbuilt_text, sizeof(r->unbuilt_text), "%s", sc_last_error());
    }
    return st;
}

sc_status_t sc_reducer_layout(sc_reducer_t *r, const int *order, size_t cap, int collective)
{
    sc_drafts_t d = {0};
    sc_rbucket_t *nb = NULL;
    int *rev = NULL, *gb = NULL;
    size_t *goff = NULL, block_off = 0;
    uint8_t *block = NULL;
    void **moved_slot = NULL;
    int released = 0;
    sc_status_t st = sc_reducer_move_views(r);

    if (st != SC_SUCCESS)
        return st;
    if (!order) {
        rev = malloc((size_t)(r->n ? r->n : 1) * sizeof(*rev));
        if (!rev)
            goto err_nomem;
        for (int i = 0; i < r->n; i++)
            rev[i] = r->n - 1 - i;
        order = rev;
    }
    if (sc_layout_draft(r, order, cap, &d) != 0)
        goto err_nomem;
    if (sc_layout_same(r, order, &d)) {
        /* Nothing moves: no second block of memory while the first is held, no copy
         * of the views, and the hooks keep their state per bucket (hb.layout). */
        r->cap = cap;
        sc_drafts_free(&d);
        free(rev);
        return SC_SUCCESS;
    }
    /* Without views the buckets hold nothing a later iteration reads (the results went
     * to the gradients, and a rebuild follows a synced iteration, which consumed what
     * was accumulated): their memory goes before the new layout's comes, so that a
     * rebuild holds one layout's memory, not two. From here a failure leaves the
     * reducer without bucket memory (r->unbuilt). */
    if (!r->view && r->buckets) {
        sc_buckets_free_memory(r, r->buckets, r->nbuckets, r->registered);
        r->registered = NULL;
        released = 1;
    }
    if (collective) {
        st = sc_layout_register(r, &d, &block);
        if (st != SC_SUCCESS)
            goto err;
    }
    gb = malloc((size_t)(r->n ? r->n : 1) * sizeof(*gb));
    goff = malloc((size_t)(r->n ? r->n : 1) * sizeof(*goff));
    nb = calloc((size_t)(d.n ? d.n : 1), sizeof(*nb));
    if (!gb || !goff || !nb)
        goto err_nomem;
    for (int k = 0; k < d.n; k++) {
        const sc_draft_t *dr = &d.v[k];
        sc_rbucket_t *b = &nb[k];
        size_t off = 0;

        b->hb.index = k;
        b->hb.dtype = dr->dtype;
        b->hb.stream = r->mem.stream;
        b->ngrads = dr->npos;
        b->grads = malloc((size_t)dr->npos * sizeof(int));
        b->deliver = malloc((size_t)dr->npos * sizeof(*b->deliver));
        b->source = malloc((size_t)dr->npos * sizeof(*b->source));
        if (!b->grads || !b->deliver || !b->source)
            goto err_nomem;
        for (int j = 0; j < dr->npos; j++) {
            int g = order[dr->pos[j]];
            b->grads[j] = g;
            gb[g] = k;
            goff[g] = off;
            off += r->grads[g].count;
        }
        b->hb.count = off;
        b->hb.layout = sc_bucket_contents_id(r, b);
        b->pending = b->ngrads;
        /* Zeroed and 64-byte aligned: a view may be read before anything is written
         * (registered memory comes zeroed from UCX's mapping). */
        if (dr->bytes > 0 && block) {
            b->hb.data = block + block_off;
            block_off += sc_bucket_span(dr->bytes);
        } else if (dr->bytes > 0) {
            st = sc_mem_alloc_on(r->mem.device, dr->bytes, &b->hb.data, "sc_reducer buckets");
            if (st != SC_SUCCESS)
                goto err;
        }
    }
    /* The last bucket an iteration starts: a hook tells by it that the iteration
     * reached every bucket (sc_hook_bucket_t.last). */
    for (int k = d.n - 1; k >= 0; k--)
        if (nb[k].hb.count > 0) {
            nb[k].hb.last = 1;
            break;
        }
    /* The views keep their contents across a change of layout: the framework reads
     * the averaged gradients after finalize in the views it holds, and may zero them or
     * accumulate into them, so they move at its next call (sc_reducer_move_views). */
    if (r->view && r->buckets) {
        moved_slot = calloc((size_t)(r->n ? r->n : 1), sizeof(*moved_slot));
        if (!moved_slot)
            goto err_nomem;
        for (int g = 0; g < r->n; g++)
            if (r->buckets[r->grads[g].bucket].hb.data)
                moved_slot[g] = (char *)r->buckets[r->grads[g].bucket].hb.data +
                                r->grads[g].offset * sc_dtype_size(r->grads[g].dtype);
        r->moved = r->buckets;
        r->nmoved = r->nbuckets;
        r->moved_registered = r->registered;
        r->moved_slot = moved_slot;
    } else {
        sc_reducer_free_buckets(r, r->buckets, r->nbuckets, r->registered);
    }
    for (int g = 0; g < r->n; g++) {
        r->grads[g].bucket = gb[g];
        r->grads[g].offset = goff[g];
    }
    r->registered = block;
    r->buckets = nb;
    r->nbuckets = d.n;
    r->cap = cap;
    sc_drafts_free(&d);
    free(gb);
    free(goff);
    free(rev);
    return SC_SUCCESS;

err_nomem:
    st = sc_error(SC_ERR_NO_MEMORY, "sc_reducer: out of memory laying out the buckets of "
                  "%d gradients", r->n);
err:
    if (nb)
        sc_reducer_free_buckets(r, nb, d.n, block); /* calloc'd: the unbuilt ones are empty */
    else if (block)
        sc_reducer_free_registered(r, block);
    if (released) {
        r->unbuilt = st;
        snprintf(r->unbuilt_text, sizeof(r->unbuilt_text), "%s", sc_last_error());
    }
    sc_drafts_free(&d);
    free(gb);
    free(goff);
    free(rev);
    free(moved_slot);
    return st;
}

