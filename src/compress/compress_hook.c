/* The top-k comm hook for the gradient reducer: each bucket is one key of a compressor
 * (its index); start plans the step, issues the all-gather of the pairs gated on the
 * selection, which the compressor's worker thread makes (or, during warm-up, starts the
 * dense all-reduce), finish commits the step and scatter-adds every rank's pairs into
 * the bucket, or (finish_into) straight into the reducer's gradients. */
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/call.h"
#include "collectives/serves.h"
#include "compress/compress_internal.h"
#include "core/comm_internal.h"
#include "core/fpenv.h"
#include "core/log.h"

#define SC_HOOK_TOPK "comm hook topk"

static sc_status_t sc_hook_topk_validate(void *state, sc_dtype_t dtype)
{
    (void)state;
    if (!sc_pairs_dtype_ok(dtype))
        return sc_error(SC_ERR_INVALID_ARG, SC_HOOK_TOPK ": bucket dtype is %s, but the topk "
                        "hook compresses float32, float64, float16 and bfloat16 buckets only",
                        sc_dtype_name(dtype));
    return SC_SUCCESS;
}

static sc_status_t sc_hook_topk_key(sc_compressor_t *c, const sc_hook_bucket_t *b,
                                    sc_ckey_t **k)
{
    /* Layouts count from 1: a 0 here would read as "loaded, adopt it". */
    return sc_compressor_key(c, SC_HOOK_TOPK, b->index, b->count, b->dtype,
                             b->layout ? b->layout : 1, k);
}

/* The worker's job: the selection of one bucket into this rank's block, then the gate
 * of its all-gather opened. Nothing of the key is touched after the gate opens. */
static void sc_hook_topk_select_job(sc_worker_job_t *job)
{
    sc_ckey_t *k = (sc_ckey_t *)((char *)job - offsetof(sc_ckey_t, job));
    sc_status_t st;

    /* Here, not at the start: the worker selects the buckets in order, so an earlier
     * bucket's selection may still draw when this one starts. */
    sc_topk_draws_get(k->owner->topk, &k->draws_before);
    st = sc_compressor_select(k->owner, SC_HOOK_TOPK, k, k->job_g, k->job_rank);
    sc_topk_draws_get(k->owner->topk, &k->draws_after);
    if (st != SC_SUCCESS) {
        snprintf(k->job_text, sizeof(k->job_text), "%s", sc_last_error());
        /* Sent all the same (the peers' all-gather waits for it), saying so: every
         * rank then leaves the step uncommitted, not only this one. */
        sc_pairs_refuse(&k->lay, (char *)k->blocks + (size_t)k->job_rank * k->lay.bytes);
    }
    k->job_status = st;
    __atomic_store_n(&k->gate, 1, __ATOMIC_RELEASE);
}

/* Waits until the worker is done with key k's last selection (its gate open): a step
 * whose all-gather failed early (an aborted communicator) may leave it running. */
static void sc_hook_topk_idle(const sc_ckey_t *k)
{
    while (!__atomic_load_n(&k->gate, __ATOMIC_ACQUIRE))
        sched_yield();
}

/* Every key idle: before the state is saved or replaced. (Not waiting under c->lock,
 * which the selection takes for its counters.) */
static void sc_hook_topk_quiesce(sc_compressor_t *c)
{
    for (int busy = 1; busy;) {
        busy = 0;
        pthread_mutex_lock(&c->lock);
        for (int i = 0; i < c->nkeys && !busy; i++)
            busy = !__atomic_load_n(&c->keys[i]->gate, __ATOMIC_ACQUIRE);
        pthread_mutex_unlock(&c->lock);
        if (busy)
            sched_yield();
    }
}

/* The selector's draws less those key k's step took (none where it selected nothing:
 * a dense step), into k->draws_before for sc_compressor_abandon. Only its own: a later
 * bucket's step that drew and was committed keeps its draws, so that the next steps do
 * not draw what it drew again. */
static void sc_hook_topk_unwind(sc_compressor_t *c, sc_ckey_t *k)
{
    sc_topk_draws_t d;

    sc_topk_draws_get(c->topk, &d);
    if (k->hook_drew) {
        d.approx_samples -= k->draws_after.approx_samples - k->draws_before.approx_samples;
        d.random_calls -= k->draws_after.random_calls - k->draws_before.random_calls;
    }
    k->draws_before = d;
}

/* Undoes the steps started and never committed (their buckets failed, so the reducer
 * did not finish them, or their selection failed), each taking back its own draws
 * (sc_hook_topk_unwind), so in any order: each key's threshold and origin go back, and
 * a key its step created goes, as sc_compressed_allreduce undoes a failed step
 * (sc_compressor_abandon). Every key made idle first (sc_hook_topk_quiesce); between
 * iterations, under c->hook_lock. */
static void sc_hook_topk_undo(sc_compressor_t *c)
{
    sc_hook_topk_quiesce(c);
    for (;;) {
        sc_ckey_t *k = NULL;

        pthread_mutex_lock(&c->lock);
        for (int i = 0; i < c->nkeys && !k; i++)
            if (c->keys[i]->hook_pending)
                k = c->keys[i];
        if (k)
            k->hook_pending = 0;
        pthread_mutex_unlock(&c->lock);
        if (!k)
            return;
        sc_hook_topk_unwind(c, k);
        sc_compressor_abandon(c, k);
    }
}

/* One key's steps as the ranks exchange them (sc_hook_topk_align). */
typedef struct {
    int64_t key;   /* -1: a pad, past this rank's keys */
    int64_t steps;
} sc_hook_steps_t;

static int sc_hook_steps_cmp(const void *a, const void *b)
{
    const sc_hook_steps_t *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

/* The ranks' steps per bucket index, compared after a load (a hook made afresh has no
 * step on any rank), before the next step: a step that completed on some ranks and
 * failed on others (a peer's failure reaching them after their part was done) is
 * committed only where it completed, and states saved then and loaded differ by that
 * step; with warm-up, the ranks would all-reduce a bucket that others all-gather, at
 * every iteration. Every index whose steps differ goes back to the fewest on every
 * rank, its residual and momentum (and a state kept aside for it) dropped, and every
 * rank says so. An index a rank has no key for counts 0 steps; a key below 0 (a state
 * saved by sc_compressor_save, loaded as one without the hook's table, may hold any
 * int) is no bucket index, never started: it is not compared. The ranks exchange their
 * keys, not an array indexed by them: such a state's keys may be as large as INT32_MAX
 * (2^32 steps of 8 bytes: out of memory, or a 32 GiB all-reduce). Two small collectives
 * (the most keys on a rank, then every rank's keys and steps), issued where every rank
 * starts its iteration's first bucket. */
static sc_status_t sc_hook_topk_align_in(sc_compressor_t *c, sc_comm_t *comm)
{
    int size = sc_comm_size(comm);
    int64_t n = 0, at = 0;
    sc_hook_steps_t *all, *mine;
    sc_status_t st;

    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->nkeys; i++)
        n += c->keys[i]->key >= 0;
    pthread_mutex_unlock(&c->lock);
    st = sc_allreduce(&n, &n, 1, SC_INT64, SC_MAX, comm, NULL, NULL);
    if (st != SC_SUCCESS || n == 0)
        return st;
    all = malloc((size_t)n * (size_t)(size + 1) * sizeof(*all));
    if (!all) /* the start fails, which aborts the communicator: no rank waits */
        return sc_error(SC_ERR_NO_MEMORY, SC_HOOK_TOPK ": out of memory comparing the steps "
                        "of up to %lld buckets with the other ranks", (long long)n);
    mine = all + n * size; /* this rank's keys, gathered in front of them */
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->nkeys; i++)
        if (c->keys[i]->key >= 0)
            mine[at++] = (sc_hook_steps_t){c->keys[i]->key, c->keys[i]->steps};
    pthread_mutex_unlock(&c->lock);
    for (; at < n; at++)
        mine[at] = (sc_hook_steps_t){-1, 0};
    st = sc_allgather(mine, all, (size_t)n * 2, SC_INT64, comm, NULL, NULL);
    if (st != SC_SUCCESS)
        goto out;
    qsort(all, (size_t)(n * size), sizeof(*all), sc_hook_steps_cmp);
    for (int64_t i = 0, j; i < n * size; i = j) {
        int64_t most = all[i].steps, fewest = all[i].steps;
        for (j = i + 1; j < n * size && all[j].key == all[i].key; j++) {
            most = all[j].steps > most ? all[j].steps : most;
            fewest = all[j].steps < fewest ? all[j].steps : fewest;
        }
        if (all[i].key < 0)
            continue;
        if (j - i < size) /* a rank without the key: 0 steps */
            fewest = 0;
        if (most == fewest)
            continue;
        sc_log(SC_LOG_WARN, SC_HOOK_TOPK ": bucket %lld has between %lld and %lld steps done "
               "on different ranks (a step that failed on some ranks completed on others "
               "before their states were saved): every rank drops its residual and "
               "momentum and goes on from step %lld", (long long)all[i].key,
               (long long)fewest, (long long)most, (long long)fewest);
        pthread_mutex_lock(&c->lock);
        for (int k = 0; k < c->nkeys; k++) {
            if (c->keys[k]->key != all[i].key)
                continue;
            sc_ckey_free(c->keys[k]->parked);
            c->keys[k]->parked = NULL;
            sc_compressor_realign(c->keys[k], (long)fewest);
        }
        pthread_mutex_unlock(&c->lock);
    }
out:
    free(all);
    return st;
}

/* The comparison's collectives marked apart (serves.h): a rank that loaded no state
 * (against compress.h: every rank loads, or none) starts its first bucket instead, and
 * both ranks' disagreement then names the comparison after a load. */
static sc_status_t sc_hook_topk_align(sc_compressor_t *c, sc_comm_t *comm)
{
    sc_serves_t was = sc_serves_within(SC_SERVES_HOOK_ALIGN);
    sc_status_t st = sc_hook_topk_align_in(c, comm);

    sc_serves_end(was);
    return st;
}

/* A sparse step: the all-gather of this rank's block is issued here, in bucket order on
 * every rank, and starts once the compressor's worker has selected into the block; the
 * caller's thread goes on marking gradients meanwhile. */
static sc_status_t sc_hook_topk_start_in(void *state, const sc_hook_bucket_t *b,
                                         sc_comm_t *comm, sc_request_t **req)
{
    sc_compressor_t *c = state;
    int rank = sc_comm_rank(comm);
    sc_call_t call;
    sc_ckey_t *k;
    sc_status_t st = SC_SUCCESS;
    int first;

    if (b->stream)
        return sc_error(SC_ERR_UNSUPPORTED, SC_HOOK_TOPK ": bucket %d is device memory (the "
                        "reducer has config.stream); the topk hook compresses host buckets "
                        "only in this version", b->index);
    pthread_mutex_lock(&c->lock);
    first = b->iteration != c->hook_round;
    if (b->last)
        c->hook_complete = b->iteration;
    pthread_mutex_unlock(&c->lock);
    if (first) { /* the steps of a failed iteration undone before anything else */
        pthread_mutex_lock(&c->hook_lock);
        sc_hook_topk_undo(c);
        if (c->hook_align)
            st = sc_hook_topk_align(c, comm);
        if (st == SC_SUCCESS)
            c->hook_align = 0;
        pthread_mutex_unlock(&c->hook_lock);
        if (st != SC_SUCCESS)
            return st;
    }
    st = sc_hook_topk_key(c, b, &k);
    if (st == SC_SUCCESS) {
        /* A key not started in the latest iteration that reached every bucket belongs
         * to a bucket index the layout has no more (stale); one an iteration that failed
         * midway never reached is current (sc_hook_topk_save). The reducer numbers the
         * iterations: where a bucket of no elements (gradients of zero elements only),
         * which is never started, takes index 0 or a lower index than the others, the
         * indices started alone did not tell where an iteration began. */
        pthread_mutex_lock(&c->lock);
        c->hook_round = b->iteration;
        k->round = c->hook_round;
        /* A loaded state kept aside waits for the rebuild, which follows the first
         * iteration: a second iteration under the same layout means none came (the
         * ready order was the layout's), so it is dropped and saves write the state in
         * use. */
        if (k->parked && k->layout_starts >= 1) {
            sc_ckey_free(k->parked);
            k->parked = NULL;
        }
        k->layout_starts++;
        k->hook_pending = 1; /* until its finish commits it */
        pthread_mutex_unlock(&c->lock);
        sc_hook_topk_idle(k);
        sc_compressor_keep(k);
        k->hook_drew = 0;
        st = sc_compressor_plan(c, SC_HOOK_TOPK, k, comm);
    }
    if (st == SC_SUCCESS && !k->dense && !c->worker)
        st = sc_worker_create(SC_HOOK_TOPK, &c->worker);
    if (st != SC_SUCCESS)
        return st;
    if (k->dense)
        return sc_allreduce(b->data, b->data, b->count, b->dtype, SC_SUM, comm, b->stream,
                            req);
    call = (sc_call_t){SC_COLL_ALLGATHER, (char *)k->blocks + (size_t)rank * k->lay.bytes,
                       k->blocks, k->lay.bytes, SC_UINT8, SC_SUM, 0, 0.0, 0};
    k->gate = 0;
    st = sc_call_issue_gated(&call, comm, &k->gate, req);
    if (st != SC_SUCCESS) {
        k->gate = 1;
        return st;
    }
    k->owner = c;
    k->job_g = b->data;
    k->job_rank = rank;
    k->job_status = SC_SUCCESS;
    k->job.fn = sc_hook_topk_select_job;
    k->hook_drew = 1;
    sc_worker_post(c->worker, &k->job);
    return SC_SUCCESS;
}

/* The step committed and its result written: into the bucket (ranges NULL), or only
 * into the given ranges of it, each to its gradient (the reducer's copies). */
static sc_status_t sc_hook_topk_finish_into(void *state, const sc_hook_bucket_t *b,
                                            sc_comm_t *comm, const sc_range_t *ranges, int n)
{
    sc_compressor_t *c = state;
    sc_ckey_t *k;
    sc_status_t st;

    st = sc_hook_topk_key(c, b, &k);
    if (st != SC_SUCCESS)
        return st;
    /* The all-gather is over, so the selection is too (it opened the gate). A failed
     * selection, here or on another rank, sent a refused block: the step is committed on
     * no rank (it stays pending, undone as the next iteration starts or a save comes),
     * and the error stands. */
    if (!k->dense && k->job_status != SC_SUCCESS)
        return sc_error(k->job_status, "%s", k->job_text);
    for (int r = 0; !k->dense && r < sc_comm_size(comm); r++)
        if (sc_pairs_refused(&k->lay, (const char *)k->blocks + (size_t)r * k->lay.bytes))
            return sc_error(SC_ERR_PEER_FAILED, SC_HOOK_TOPK ": %s could not select its "
                            "pairs of bucket %d (its error says why), so no rank commits "
                            "the step", sc_comm_rank_name(comm, r).s, b->index);
    sc_compressor_commit(c, k, b->data, sc_comm_rank(comm));
    pthread_mutex_lock(&c->lock);
    k->hook_pending = 0;
    pthread_mutex_unlock(&c->lock);
    if (!k->dense)
        sc_compressor_scatter(c, k, sc_comm_size(comm), b->data, 1, ranges, n);
    else
        for (int j = 0; j < n; j++) /* the dense all-reduce's result, in the bucket */
            memcpy(ranges[j].dst, (const char *)b->data + ranges[j].off, ranges[j].bytes);
    return SC_SUCCESS;
}

/* The hook's calls on the reducer's threads, in the library's floating-point
 * environment (as sc_compressed_allreduce). */
static sc_status_t sc_hook_topk_start(void *state, const sc_hook_bucket_t *b,
                                      sc_comm_t *comm, sc_request_t **req)
{
    sc_fpenv_t fe = sc_fpenv_enter();
    sc_status_t st = sc_hook_topk_start_in(state, b, comm, req);

    sc_fpenv_leave(fe);
    return st;
}

static sc_status_t sc_hook_topk_finish_ranges(void *state, const sc_hook_bucket_t *b,
                                              sc_comm_t *comm, const sc_range_t *ranges,
                                              int n)
{
    sc_fpenv_t fe = sc_fpenv_enter();
    sc_status_t st = sc_hook_topk_finish_into(state, b, comm, ranges, n);

    sc_fpenv_leave(fe);
    return st;
}

static sc_status_t sc_hook_topk_finish(void *state, const sc_hook_bucket_t *b,
                                       sc_comm_t *comm)
{
    return sc_hook_topk_finish_ranges(state, b, comm, NULL, 0);
}

/* The hook's checkpoint: a table of the bucket layout each key's state belongs to
 * (sc_hook_bucket_t.layout, an id of the bucket's gradients and offsets), then the
 * compressor's state as sc_compressor_save writes it. A loaded state is adopted only by
 * a bucket of that layout: by count and dtype alone, a new reducer's first layout put
 * one bucket's residuals into another bucket of the same size (helper's find). A state
 * without the table (the compressor's magic first: saved before the table existed)
 * still loads, matched by count and dtype. */
static const char sc_hook_state_magic[8] = {'S', 'C', 'T', 'K', 'H', 'O', 'O', 'K'};
#define SC_HOOK_STATE_VERSION 1u

typedef struct {
    char magic[8];
    uint32_t version;
    uint32_t nkeys;
} sc_hook_state_header_t;

typedef struct {
    int32_t key;
    uint32_t flags;    /* SC_HOOK_STATE_STALE, or 0 */
    uint64_t layout;   /* 0: not known */
} sc_hook_state_entry_t;

/* The key's bucket index is in no layout since the last rebuild: its state is dropped
 * the next time the index is used (its steps kept), in the loading process as in the
 * saving one, never adopted. */
#define SC_HOOK_STATE_STALE 1u
/* The layout a stale key gets when loaded: no bucket has it (the reducer's ids are
 * hashes; this one is taken by none in practice). */
#define SC_HOOK_LAYOUT_STALE UINT64_MAX

/* A save takes back a failed iteration's steps first, so it changes the state as a
 * load does: one at a time under c->hook_lock (sc_reducer_hook_save takes a const
 * reducer, which threads may save at once), and not during a start's undo. */
static sc_status_t sc_hook_topk_save(void *state, void *buf, size_t *len)
{
    sc_compressor_t *c = state;
    sc_hook_state_header_t h = {{0}, SC_HOOK_STATE_VERSION, 0};
    size_t table, rest;
    sc_status_t st;

    if (!len)
        return sc_error(SC_ERR_INVALID_ARG, SC_HOOK_TOPK ": len is NULL");
    pthread_mutex_lock(&c->hook_lock);
    sc_hook_topk_undo(c); /* a failed iteration's steps: the state is as before it */
    st = sc_compressor_save(c, NULL, &rest);
    if (st != SC_SUCCESS)
        goto out;
    table = sizeof(h) + (size_t)c->nkeys * sizeof(sc_hook_state_entry_t);
    if (!buf) {
        *len = table + rest;
        goto out;
    }
    if (*len < table + rest) {
        st = sc_error(SC_ERR_INVALID_ARG, SC_HOOK_TOPK ": the buffer holds %zu bytes, the "
                      "state needs %zu (ask with buf NULL)", *len, table + rest);
        goto out;
    }
    pthread_mutex_lock(&c->lock);
    h.nkeys = (uint32_t)c->nkeys;
    memcpy(h.magic, sc_hook_state_magic, sizeof(h.magic));
    memcpy(buf, &h, sizeof(h));
    for (int i = 0; i < c->nkeys; i++) {
        const sc_ckey_t *k = c->keys[i];
        /* What the compressor saves in the key's place: a state kept aside, or one
         * loaded and not adopted yet, keeps the layout it was saved under. */
        uint64_t layout = k->parked ? k->parked->saved_layout
                          : k->layout ? k->layout : k->saved_layout;
        /* Not started since the latest iteration that reached every bucket (an
         * iteration that failed before its last bucket did not drop the ones it never
         * reached). */
        uint32_t stale = k->layout != 0 &&
                         (k->round == UINT64_MAX || k->round < c->hook_complete);
        sc_hook_state_entry_t e = {k->key, stale ? SC_HOOK_STATE_STALE : 0, layout};
        memcpy((char *)buf + sizeof(h) + (size_t)i * sizeof(e), &e, sizeof(e));
    }
    pthread_mutex_unlock(&c->lock);
    rest = *len - table;
    st = sc_compressor_save(c, (char *)buf + table, &rest);
    if (st == SC_SUCCESS)
        *len = table + rest;
out:
    pthread_mutex_unlock(&c->hook_lock);
    return st;
}

/* The table's flags, before anything is loaded: SC_ERR_INVALID_ARG for one no save
 * writes. */
static sc_status_t sc_hook_topk_check_table(const char *table, uint32_t nkeys)
{
    for (uint32_t i = 0; i < nkeys; i++) {
        sc_hook_state_entry_t e;
        memcpy(&e, table + (size_t)i * sizeof(e), sizeof(e));
        if (e.flags & ~SC_HOOK_STATE_STALE)
            return sc_error(SC_ERR_INVALID_ARG, SC_HOOK_TOPK ": the state's table of layouts "
                            "is corrupt (entry %u)", i);
    }
    return SC_SUCCESS;
}

/* Under c->hook_lock, as a save. */
static sc_status_t sc_hook_topk_load(void *state, const void *buf, size_t len)
{
    sc_compressor_t *c = state;
    sc_hook_state_header_t h;
    const char *table;
    size_t tb;
    sc_status_t st;

    if (!buf)
        return sc_error(SC_ERR_INVALID_ARG, SC_HOOK_TOPK ": buf is NULL");
    pthread_mutex_lock(&c->hook_lock);
    /* Before the keys it would put back are replaced. A load refused below has changed
     * nothing any call sees: the steps it undid were never committed, and every reader
     * of the state (a save, the next start, a load) undoes them first, each step taking
     * back only its own draws, so the same whenever that happens. */
    sc_hook_topk_undo(c);
    if (len < sizeof(h) || memcmp(buf, sc_hook_state_magic, sizeof(h.magic)) != 0) {
        st = sc_compressor_load(c, buf, len);
        goto out;
    }
    memcpy(&h, buf, sizeof(h));
    if (h.version != SC_HOOK_STATE_VERSION) {
        st = sc_error(SC_ERR_INVALID_ARG, SC_HOOK_TOPK ": the state is of format version "
                      "%u; this library reads version %u", h.version, SC_HOOK_STATE_VERSION);
        goto out;
    }
    if (h.nkeys > (len - sizeof(h)) / sizeof(sc_hook_state_entry_t)) {
        st = sc_error(SC_ERR_INVALID_ARG, SC_HOOK_TOPK ": the state is truncated (a table "
                      "of %u keys in %zu bytes)", h.nkeys, len);
        goto out;
    }
    table = (const char *)buf + sizeof(h);
    tb = (size_t)h.nkeys * sizeof(sc_hook_state_entry_t);
    st = sc_hook_topk_check_table(table, h.nkeys);
    if (st == SC_SUCCESS)
        st = sc_compressor_load(c, table + tb, len - sizeof(h) - tb);
    if (st != SC_SUCCESS)
        goto out;
    pthread_mutex_lock(&c->lock);
    for (uint32_t i = 0; i < h.nkeys; i++) {
        sc_hook_state_entry_t e;
        memcpy(&e, table + (size_t)i * sizeof(e), sizeof(e));
        for (int j = 0; j < c->nkeys; j++) {
            if (c->keys[j]->key != e.key)
                continue;
            if (e.flags & SC_HOOK_STATE_STALE) {
                c->keys[j]->layout = SC_HOOK_LAYOUT_STALE;
                c->keys[j]->round = UINT64_MAX; /* stale at every save until used */
            } else
                c->keys[j]->saved_layout = e.layout;
        }
    }
    pthread_mutex_unlock(&c->lock);
out:
    /* Every rank loads (its own state), or none: they compare them. A refused load
     * changed nothing, so a rank whose checkpoint was refused and the ranks that loaded
     * none go on alike. */
    if (st == SC_SUCCESS)
        c->hook_align = 1;
    pthread_mutex_unlock(&c->hook_lock);
    return st;
}

static void sc_hook_topk_destroy(void *state)
{
    sc_compressor_destroy(state);
}

SC_API sc_status_t sc_comm_hook_topk(const sc_compress_config_t *config,
                                     sc_comm_hook_t *hook)
{
    static const char *const modes[] = {"exact", "approx", "random"};
    char density[32], momentum[32];
    sc_compressor_t *c;
    sc_status_t st;

    if (!hook)
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_hook_topk: hook is NULL");
    st = sc_compressor_new("sc_comm_hook_topk", config, &c);
    if (st != SC_SUCCESS)
        return st;
    /* What every rank must share; threads and seed may differ (each rank's own). */
    /* Exact: hooks whose settings differ at all must differ as text. */
    sc_error_double(density, sizeof(density), c->cfg.density);
    sc_error_double(momentum, sizeof(momentum), c->cfg.momentum);
    snprintf(c->hook_config, sizeof(c->hook_config), "density %s, mode %s, error_feedback "
             "%d, momentum %s, values_fp16 %d, index_bits %d, warmup_steps %d", density,
             modes[c->cfg.mode], c->cfg.error_feedback, momentum, c->cfg.values_fp16,
             c->cfg.index_bits, c->cfg.warmup_steps);
    memset(hook, 0, sizeof(*hook));
    hook->name = "topk";
    hook->config = c->hook_config;
    hook->state = c;
    hook->validate = sc_hook_topk_validate;
    hook->start = sc_hook_topk_start;
    hook->finish = sc_hook_topk_finish;
    hook->finish_into = sc_hook_topk_finish_ranges;
    hook->save = sc_hook_topk_save;
    hook->load = sc_hook_topk_load;
    hook->destroy = sc_hook_topk_destroy;
    return SC_SUCCESS;
}
