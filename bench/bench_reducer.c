/* sc-bench reducer: replays a model's gradients through the gradient reducer
 * (shardcomm/reducer.h). Per iteration every gradient is marked ready in reverse
 * registration order, as a backward pass produces them, with the backward's compute
 * spread over them in proportion to their sizes, then the reducer is finalized. Per
 * bucket cap it reports the iteration, its compute and the exposed communication,
 * next to one all-reduce of the last bucket alone and to the same step done with one
 * all-reduce per tensor; it checks the averaged gradients once per cap. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "bench_agree.h"
#include "bench_cache.h"
#include "bench_data.h"
#include "bench_memory.h"
#include "bench_output.h"
#include "bench_profile.h"
#include "bench_reducer.h"
#include "bench_reducer_options.h"
#include "bench_reducer_output.h"
#include "bench_time.h"
#include "shardcomm/reducer.h"
#include "shardcomm/shardcomm.h"

#define SC_BR_AUTOTUNE_MAX_ITERS 1000 /* warmup iterations autotune may take */
#define SC_BR_CHUNK 65536              /* elements converted at a time (float16/bfloat16) */

/* What every step of a run shares. */
typedef struct {
    const sc_br_options_t *o;
    const sc_bench_profile_t *p;
    sc_comm_t *comm;
    int rank, nranks;
    void **grads;     /* the gradients in host memory (copies; and per tensor) */
    void *grads_block; /* their registered memory with --registered-grads, else NULL */
    void **views;     /* view mode: where each gradient was last written */
    double *backlog;  /* per gradient: fraction of the compute done once it is ready */
    double *times;    /* SC_BR_TIMES x iters (seconds) */
    uint64_t *bases;  /* per rank: the values' seed of the gradient being checked */
    float *chunk;     /* SC_BR_CHUNK float32 for float16/bfloat16 conversions */
    unsigned char *flush; /* flush_bytes written over to evict the caches */
    size_t flush_bytes;
    sc_request_t **reqs;
    int failed_alike; /* the failure is one every rank returns (a reducer refused) */
} sc_br_ctx_t;

/* A failed step's sentence, kept before later calls replace sc_last_error(). */
static char sc_br_error[1024];

static sc_status_t sc_br_fail(sc_status_t status, const char *what)
{
    snprintf(sc_br_error, sizeof(sc_br_error), "%s: %s: %s", what,
             sc_status_string(status), sc_last_error());
    return status;
}

/* ---- gradient values and their check --------------------------------------------- */

/* Element j of a gradient on a rank (base from sc_br_base): a multiple of 1/256 in
 * [-1, 1), exact in float32, float16 and bfloat16, so that every rank's input is
 * exactly what the reference sums. */
static float sc_br_value(uint64_t base, size_t j)
{
    return (float)((int)(sc_bench_mix(base + j) >> 55) - 256) * 0x1p-8f;
}

/* Where the hash inputs of gradient k on rank start: a hash in the high 32 bits, so
 * that the elements of different gradients and ranks never share an input. */
static uint64_t sc_br_base(uint64_t seed, int rank, int k)
{
    return sc_bench_mix(sc_bench_mix(seed) ^ ((uint64_t)(unsigned)rank << 32 | (unsigned)k)) *
           0x100000000ull;
}

/* Writes rank's values of gradient k into dst (in the gradient's dtype). */
static sc_status_t sc_br_fill(sc_br_ctx_t *c, int k, int rank, void *dst)
{
    const sc_bench_tensor_t *t = &c->p->tensors[k];
    uint64_t base = sc_br_base(c->o->seed, rank, k);
    sc_status_t status;

    if (t->dtype == SC_FLOAT32) {
        for (size_t j = 0; j < t->count; j++)
            ((float *)dst)[j] = sc_br_value(base, j);
        return SC_SUCCESS;
    }
    for (size_t off = 0; off < t->count; off += SC_BR_CHUNK) {
        size_t n = t->count - off < SC_BR_CHUNK ? t->count - off : SC_BR_CHUNK;

        for (size_t j = 0; j < n; j++)
            c->chunk[j] = sc_br_value(base, off + j);
        status = sc_cast(c->chunk, SC_FLOAT32, (char *)dst + off * sc_dtype_size(t->dtype),
                         t->dtype, n, 1.0f, NULL);
        if (status != SC_SUCCESS)
            return sc_br_fail(status, "sc_cast of the input values");
    }
    return SC_SUCCESS;
}

/* Spacing of the numbers near 1 in a dtype: the reducer's result may be off the float64
 * reference by a few of them (the pre-division, the sum, a compression hook). */
static double sc_br_spacing(sc_dtype_t dtype)
{
    return dtype == SC_FLOAT16 ? 0x1p-10 : dtype == SC_BFLOAT16 ? 0x1p-7 : 0x1p-23;
}

static double sc_br_tolerance(const sc_br_ctx_t *c, sc_dtype_t dtype)
{
    double s = sc_br_spacing(dtype);

    if (c->o->hook == SC_HOOK_FP16 && sc_br_spacing(SC_FLOAT16) > s)
        s = sc_br_spacing(SC_FLOAT16);
    if (c->o->hook == SC_HOOK_BF16 && sc_br_spacing(SC_BFLOAT16) > s)
        s = sc_br_spacing(SC_BFLOAT16);
    return (c->nranks + 1) * s;
}

/* Adds n bytes to a 64-bit hash of the results (compared between ranks): FNV-1a over
 * 8-byte words, h ^= h >> 29 after each multiply, without which two flipped sign bits
 * (the top bits of two words) cancel, and each word mixed first, without which a
 * flipped top bit and bits 63 and 34 of the next word cancel (the tests' sc_hash.h). */
static uint64_t sc_br_hash(uint64_t h, const void *buf, size_t n)
{
    const unsigned char *b = buf;
    size_t i = 0;
    uint64_t w;

    for (; i + 8 <= n; i += 8) {
        memcpy(&w, b + i, 8);
        w = (w ^ (w >> 32)) * 0xbf58476d1ce4e5b9ull;
        h = (h ^ w) * 0x100000001B3ull;
        h ^= h >> 29;
    }
    for (; i < n; i++) {
        h = (h ^ b[i]) * 0x100000001B3ull;
        h ^= h >> 29;
    }
    return h;
}

/* Counts the elements of gradient k at src that are off the average over ranks of
 * their inputs, computed here in float64; adds src's bytes to *hash. */
static sc_status_t sc_br_verify(sc_br_ctx_t *c, int k, const void *src, int64_t *wrong,
                                uint64_t *hash)
{
    const sc_bench_tensor_t *t = &c->p->tensors[k];
    double tol = sc_br_tolerance(c, t->dtype);
    size_t esize = sc_dtype_size(t->dtype);
    sc_status_t status;
    int n = c->nranks;

    for (int r = 0; r < n; r++)
        c->bases[r] = sc_br_base(c->o->seed, r, k);
    *hash = sc_br_hash(*hash, src, t->count * esize);
    for (size_t off = 0; off < t->count; off += SC_BR_CHUNK) {
        size_t m = t->count - off < SC_BR_CHUNK ? t->count - off : SC_BR_CHUNK;
        const float *got = (const float *)((const char *)src + off * esize);

        if (t->dtype != SC_FLOAT32) {
            status = sc_cast((const char *)src + off * esize, t->dtype, c->chunk,
                             SC_FLOAT32, m, 1.0f, NULL);
            if (status != SC_SUCCESS)
                return sc_br_fail(status, "sc_cast of the results");
            got = c->chunk;
        }
        for (size_t j = 0; j < m; j++) {
            double ref = 0;

            for (int r = 0; r < n; r++)
                ref += (double)sc_br_value(c->bases[r], off + j);
            ref /= n;
            if (!(fabs((double)got[j] - ref) <= tol))
                (*wrong)++;
        }
    }
    return SC_SUCCESS;
}

/* ---- the backward's compute ------------------------------------------------------ */

/* Fraction of the compute done when gradient k is ready: the backward produces the
 * gradients from the last registered to the first, each after compute in proportion
 * to its size. */
static void sc_br_backlog_init(sc_br_ctx_t *c)
{
    const sc_bench_profile_t *p = c->p;
    double done = 0;

    for (int k = p->ntensors - 1; k >= 0; k--) {
        size_t bytes = p->tensors[k].count * sc_dtype_size(p->tensors[k].dtype);

        done += p->bytes ? (double)bytes / (double)p->bytes : 0;
        c->backlog[k] = done;
    }
}

static void sc_br_sleep_until(double t)
{
    struct timespec ts;

    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_nsec = 999999999L;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* The compute that produces gradient k in an iteration that started at t0. Sleep: the
 * model computes elsewhere (a GPU) on a fixed timeline, gradient k is due at t0 plus
 * its share of the backlog, whatever the CPU did meanwhile. Spin: the CPU computes,
 * for k's share, after what it did for the previous gradient. */
static void sc_br_compute(const sc_br_ctx_t *c, int k, double t0, double total)
{
    double end;

    if (total <= 0)
        return;
    if (!c->o->spin) {
        sc_br_sleep_until(t0 + total * c->backlog[k]);
        return;
    }
    end = bench_now_s() + total * (c->backlog[k] -
                                   (k + 1 < c->p->ntensors ? c->backlog[k + 1] : 0));
    while (bench_now_s() < end)
        ;
}

/* ---- steps ----------------------------------------------------------------------- */

/* View mode: writes each gradient's values into its view when the view moved (the
 * first iteration, a rebuild), so that bucket memory holds gradients, not garbage. */
static sc_status_t sc_br_views_refresh(sc_br_ctx_t *c, sc_reducer_t *r, int force)
{
    sc_status_t status;

    for (int k = 0; k < c->p->ntensors; k++) {
        void *v = sc_reducer_grad_view(r, k);

        if (!v && c->p->tensors[k].count > 0) {
            snprintf(sc_br_error, sizeof(sc_br_error),
                     "sc_reducer_grad_view(%d) (%s) returned NULL with "
                     "gradient_as_bucket_view", k, c->p->tensors[k].name);
            return SC_ERR_INTERNAL;
        }
        if (v && (force || v != c->views[k])) {
            status = sc_br_fill(c, k, c->rank, v);
            if (status != SC_SUCCESS)
                return status;
        }
        c->views[k] = v;
    }
    return SC_SUCCESS;
}

/* One iteration through the reducer with compute seconds of backward; t[0..2]: when
 * (CLOCK_MONOTONIC, seconds) it started, its last gradient was ready, finalize returned. */
static sc_status_t sc_br_reducer_step(sc_br_ctx_t *c, sc_reducer_t *r, double compute,
                                      double t[3])
{
    double t0, last = 0, end;
    sc_status_t status;

    t0 = bench_now_s();
    for (int k = c->p->ntensors - 1; k >= 0; k--) {
        sc_br_compute(c, k, t0, compute);
        if (k == 0)
            last = bench_now_s();
        status = sc_reducer_mark_ready(r, k, c->o->view ? NULL : c->grads[k]);
        if (status != SC_SUCCESS) {
            char what[300];
            snprintf(what, sizeof(what), "sc_reducer_mark_ready(%d) (%s)", k,
                     c->p->tensors[k].name);
            return sc_br_fail(status, what);
        }
    }
    status = sc_reducer_finalize(r);
    if (status != SC_SUCCESS)
        return sc_br_fail(status, "sc_reducer_finalize");
    end = bench_now_s();
    t[0] = t0;
    t[1] = last;
    t[2] = end;
    return SC_SUCCESS;
}

/* One iteration with one non-blocking all-reduce per tensor, issued as its gradient is
 * ready, then waiting for all. */
static sc_status_t sc_br_per_tensor_step(sc_br_ctx_t *c, double t[3])
{
    sc_status_t status = SC_SUCCESS, st;
    double t0, last = 0, end;
    int k;

    t0 = bench_now_s();
    for (k = c->p->ntensors - 1; k >= 0; k--) {
        const sc_bench_tensor_t *g = &c->p->tensors[k];

        c->reqs[k] = NULL;
        sc_br_compute(c, k, t0, c->o->compute_ms * 1e-3);
        if (k == 0)
            last = bench_now_s();
        if (g->count == 0)
            continue;
        status = sc_allreduce(c->grads[k], c->grads[k], g->count, g->dtype, SC_AVG,
                              c->comm, NULL, &c->reqs[k]);
        if (status != SC_SUCCESS) {
            char what[300];
            snprintf(what, sizeof(what), "sc_allreduce of %s", g->name);
            sc_br_fail(status, what);
            break;
        }
    }
    /* Requests issued before a failure are waited for all the same. */
    for (int i = c->p->ntensors - 1; i > k; i--) {
        if (!c->reqs[i])
            continue;
        st = sc_wait(c->reqs[i]);
        if (st != SC_SUCCESS && status == SC_SUCCESS)
            status = sc_br_fail(st, "sc_wait of a tensor's all-reduce");
        sc_request_free(c->reqs[i]);
    }
    end = bench_now_s();
    t[0] = t0;
    t[1] = last;
    t[2] = end;
    return status;
}

/* SC_BR_BUCKET_COLD: the same all-reduce, each rank's caches flushed before it, as a
 * bucket's memory is at the end of a backward that went through other memory since. */
typedef enum { SC_BR_REDUCER, SC_BR_PER_TENSOR, SC_BR_BUCKET, SC_BR_BUCKET_COLD } sc_br_kind_t;

typedef struct {
    sc_br_kind_t kind;
    sc_reducer_t *reducer; /* SC_BR_REDUCER */
    void *buf;             /* SC_BR_BUCKET, SC_BR_BUCKET_COLD */
    size_t count;
    sc_dtype_t dtype;
    /* The top-k hook's buckets: buf compressed as the hook does (the compressor of
     * its settings), the result in out, buf left dense for the next step. */
    sc_compressor_t *comp;
    void *out;
} sc_br_step_t;

/* One all-reduce of a buffer, as the reducer issues a bucket's (through the top-k
 * hook, a compressed all-reduce). */
static sc_status_t sc_br_bucket_step(sc_br_ctx_t *c, const sc_br_step_t *s, double t[3])
{
    sc_request_t *req;
    sc_status_t status;
    double t0 = bench_now_s();

    if (s->comp) {
        status = sc_compressed_allreduce(s->comp, c->comm, 0, s->buf, s->out, s->count,
                                         s->dtype, SC_SUM);
        if (status != SC_SUCCESS)
            return sc_br_fail(status, "sc_compressed_allreduce of the last bucket's size");
    } else {
        status = sc_allreduce(s->buf, s->buf, s->count, s->dtype, SC_SUM, c->comm, NULL,
                              &req);
        if (status != SC_SUCCESS)
            return sc_br_fail(status, "sc_allreduce of the last bucket's size");
        status = sc_wait(req);
        sc_request_free(req);
        if (status != SC_SUCCESS)
            return sc_br_fail(status, "sc_wait of the last bucket's all-reduce");
    }
    t[0] = t0;
    t[1] = t[2] = bench_now_s();
    return SC_SUCCESS;
}

/* Every gradient (or view) written with its values. */
static sc_status_t sc_br_grads_refill(sc_br_ctx_t *c, sc_reducer_t *r)
{
    sc_status_t status;

    for (int k = 0; k < c->p->ntensors; k++) {
        void *dst = c->o->view ? sc_reducer_grad_view(r, k) : c->grads[k];

        if (!dst)
            continue;
        status = sc_br_fill(c, k, c->rank, dst);
        if (status != SC_SUCCESS)
            return status;
        c->views[k] = dst;
    }
    return SC_SUCCESS;
}

/* Evicts this rank's caches: writes twice the L3 cache's size of other memory
 * (bench_cache.h). */
static sc_status_t sc_br_caches_flush(sc_br_ctx_t *c)
{
    if (!c->flush) {
        c->flush_bytes = sc_bench_cache_flush_bytes();
        c->flush = malloc(c->flush_bytes);
        if (!c->flush) {
            snprintf(sc_br_error, sizeof(sc_br_error), "cannot allocate %zu B to flush the "
                     "caches", c->flush_bytes);
            return SC_ERR_NO_MEMORY;
        }
    }
    memset(c->flush, c->flush[0] + 1, c->flush_bytes);
    return SC_SUCCESS;
}

/* One iteration of any kind, after an untimed barrier (and, in view mode, the views
 * written where they moved). The top-k hook leaves a sparse result where the gradients
 * were: they are written anew before each iteration, so that every step selects from
 * dense gradients as in training (not from the last step's result). */
static sc_status_t sc_br_step(sc_br_ctx_t *c, const sc_br_step_t *s, double t[3])
{
    sc_status_t status;

    if (s->kind == SC_BR_REDUCER && c->o->topk) {
        status = sc_br_grads_refill(c, s->reducer);
        if (status != SC_SUCCESS)
            return status;
    } else if (s->kind == SC_BR_REDUCER && c->o->view) {
        status = sc_br_views_refresh(c, s->reducer, 0);
        if (status != SC_SUCCESS)
            return status;
    } else if (s->kind == SC_BR_BUCKET_COLD) {
        status = sc_br_caches_flush(c);
        if (status != SC_SUCCESS)
            return status;
    }
    status = sc_barrier(c->comm, NULL);
    if (status != SC_SUCCESS)
        return sc_br_fail(status, "sc_barrier");
    if (s->kind == SC_BR_REDUCER)
        return sc_br_reducer_step(c, s->reducer, c->o->compute_ms * 1e-3, t);
    if (s->kind == SC_BR_PER_TENSOR)
        return sc_br_per_tensor_step(c, t);
    return sc_br_bucket_step(c, s, t);
}

/* Per timed iteration, maxed over ranks: iteration, compute, exposed from the rank's
 * own last gradient, the last gradient, finalize's return, the last gradient negated
 * (its minimum). */
#define SC_BR_TIMES 6

/* Times iters iterations after warmup untimed ones. */
static sc_status_t sc_br_time(sc_br_ctx_t *c, const sc_br_step_t *s, int warmup,
                              sc_br_times_t *out)
{
    int iters = c->o->iters;
    /* Ranks on one node read one CLOCK_MONOTONIC, so their marks compare. */
    int one_clock = sc_comm_local_size(c->comm) == c->nranks;
    sc_br_times_t w = {0};
    sc_status_t status;
    double t[3];

    for (int i = 0; i < warmup; i++) {
        status = sc_br_step(c, s, t);
        if (status != SC_SUCCESS)
            return status;
    }
    for (int i = 0; i < iters; i++) {
        double *x = &c->times[SC_BR_TIMES * i];

        status = sc_br_step(c, s, t);
        if (status != SC_SUCCESS)
            return status;
        x[0] = t[2] - t[0];
        x[1] = t[1] - t[0];
        x[2] = t[2] - t[1];
        x[3] = t[1];
        x[4] = t[2];
        x[5] = -t[1];
    }
    status = sc_allreduce(c->times, c->times, SC_BR_TIMES * (size_t)iters, SC_FLOAT64,
                          SC_MAX, c->comm, NULL, NULL);
    if (status != SC_SUCCESS)
        return sc_br_fail(status, "sc_allreduce of the times");
    for (int i = 0; i < iters; i++) {
        const double *x = &c->times[SC_BR_TIMES * i];

        w.iter += x[0];
        w.compute += x[1];
        w.exposed_rank += x[2];
        w.exposed += one_clock ? x[4] - x[3] : x[2];
        w.skew += x[3] + x[5];
    }
    out->iter = w.iter * 1e3 / iters;
    out->compute = w.compute * 1e3 / iters;
    out->exposed = w.exposed * 1e3 / iters;
    out->exposed_rank = w.exposed_rank * 1e3 / iters;
    out->skew = one_clock ? w.skew * 1e3 / iters : NAN;
    return SC_SUCCESS;
}

/* ---- rows ------------------------------------------------------------------------ */

/* Elements of the bucket that holds gradient 0, the last one a backward produces. */
static sc_status_t sc_br_last_bucket(const sc_br_ctx_t *c, const sc_reducer_t *r,
                                     size_t *count)
{
    sc_status_t status;
    size_t offset, n = 0;
    int last, b;

    status = sc_reducer_grad_bucket(r, 0, &last, &offset);
    for (int k = 0; k < c->p->ntensors && status == SC_SUCCESS; k++) {
        status = sc_reducer_grad_bucket(r, k, &b, &offset);
        n += b == last ? c->p->tensors[k].count : 0;
    }
    if (status != SC_SUCCESS)
        return sc_br_fail(status, "sc_reducer_grad_bucket");
    *count = n;
    return SC_SUCCESS;
}

/* Fills every gradient (or view) with the check values, runs one iteration without
 * compute, and counts the wrong elements over ranks; row->identical says whether every
 * rank holds the same bits. */
static sc_status_t sc_br_check(sc_br_ctx_t *c, sc_reducer_t *r, sc_br_row_t *row)
{
    int64_t wrong = 0, sums[3];
    uint64_t hash = 0xCBF29CE484222325ull;
    sc_status_t status;
    double t[3];

    status = sc_br_grads_refill(c, r);
    if (status != SC_SUCCESS)
        return status;
    status = sc_barrier(c->comm, NULL);
    if (status != SC_SUCCESS)
        return sc_br_fail(status, "sc_barrier");
    status = sc_br_reducer_step(c, r, 0, t);
    if (status != SC_SUCCESS)
        return status;
    for (int k = 0; k < c->p->ntensors; k++) {
        const void *src = c->o->view ? sc_reducer_grad_view(r, k) : c->grads[k];

        if (!src)
            continue;
        status = sc_br_verify(c, k, src, &wrong, &hash);
        if (status != SC_SUCCESS)
            return status;
    }
    /* Sum of the wrong counts; max and min of the hash (as -max of its negation). */
    sums[0] = wrong;
    sums[1] = (int64_t)(hash >> 1);
    sums[2] = -(int64_t)(hash >> 1);
    status = sc_allreduce(sums, sums, 1, SC_INT64, SC_SUM, c->comm, NULL, NULL);
    if (status == SC_SUCCESS)
        status = sc_allreduce(sums + 1, sums + 1, 2, SC_INT64, SC_MAX, c->comm, NULL, NULL);
    if (status != SC_SUCCESS)
        return sc_br_fail(status, "sc_allreduce of the check's counts");
    /* Top-k sends a part of each bucket: only the ranks' agreement is checked. */
    row->wrong = c->o->topk ? 0 : sums[0];
    row->identical = sums[1] == -sums[2];
    return SC_SUCCESS;
}

/* Lets the reducer's autotuning finish: untimed iterations until every rank says it
 * is done. */
static sc_status_t sc_br_autotune_settle(sc_br_ctx_t *c, sc_reducer_t *r)
{
    sc_br_step_t s = {.kind = SC_BR_REDUCER, .reducer = r, .dtype = SC_FLOAT32};
    sc_reducer_stats_t stats;
    sc_status_t status;
    int done = 0;
    double t[3];

    for (int i = 0; i < SC_BR_AUTOTUNE_MAX_ITERS; i++) {
        status = sc_br_step(c, &s, t);
        if (status != SC_SUCCESS)
            return status;
        status = sc_reducer_stats(r, &stats);
        if (status != SC_SUCCESS)
            return sc_br_fail(status, "sc_reducer_stats");
        done = stats.autotune_done;
        status = sc_allreduce(&done, &done, 1, SC_INT32, SC_MIN, c->comm, NULL, NULL);
        if (status != SC_SUCCESS)
            return sc_br_fail(status, "sc_allreduce of the autotune flags");
        if (done)
            return SC_SUCCESS;
    }
    snprintf(sc_br_error, sizeof(sc_br_error),
             "autotune did not settle on a bucket cap within %d iterations",
             SC_BR_AUTOTUNE_MAX_ITERS);
    return SC_ERR_INTERNAL;
}

/* Times the last bucket's all-reduce alone (s: its count and dtype), back to back and
 * cold, into row: in the memory the reducer's bucket all-reduce uses (its registered
 * buckets with the plain hook, plain memory otherwise) and, with the top-k hook, as a
 * compressed all-reduce of the hook's settings on values that vary as gradients do. */
static sc_status_t sc_br_last_bucket_time(sc_br_ctx_t *c, sc_br_step_t *s, int registered,
                                          sc_br_row_t *row)
{
    size_t bytes = s->count * sc_dtype_size(s->dtype);
    sc_br_times_t bucket;
    sc_status_t status = SC_ERR_NO_MEMORY;
    void *buf = NULL;

    registered = registered && c->o->hook == SC_HOOK_ALLREDUCE && !c->o->topk;
    if (registered ? sc_mem_alloc(c->comm, bytes, &buf) != SC_SUCCESS
                   : posix_memalign(&buf, 64, bytes) != 0) {
        snprintf(sc_br_error, sizeof(sc_br_error), "cannot allocate %zu B", bytes);
        return SC_ERR_NO_MEMORY;
    }
    memset(buf, 0, bytes);
    s->buf = buf;
    if (c->o->topk) {
        sc_compress_config_t cc = SC_COMPRESS_CONFIG_INIT;

        /* Bytes below 0x40: every dtype's values finite, of varied magnitudes. */
        for (size_t i = 0; i < bytes; i++)
            ((unsigned char *)buf)[i] = (unsigned char)((i * 131 + (size_t)c->rank * 7) & 0x3f);
        cc.density = c->o->density;
        status = sc_compressor_create(&cc, &s->comp);
        if (status != SC_SUCCESS) {
            sc_br_fail(status, "sc_compressor_create");
            goto out;
        }
        if (posix_memalign(&s->out, 64, bytes) != 0) {
            snprintf(sc_br_error, sizeof(sc_br_error), "cannot allocate %zu B", bytes);
            status = SC_ERR_NO_MEMORY;
            goto out;
        }
    }
    status = sc_br_time(c, s, c->o->warmup > 1 ? c->o->warmup : 1, &bucket);
    row->last_bucket_ms = bucket.iter;
    row->last_bucket_sent = 2 * (bytes / (size_t)sc_comm_size(c->comm)) *
                            (size_t)(sc_comm_size(c->comm) - 1);
    if (status == SC_SUCCESS && s->comp) {
        sc_compress_stats_t st;

        status = sc_compressor_stats(s->comp, &st);
        if (status != SC_SUCCESS)
            sc_br_fail(status, "sc_compressor_stats");
        row->last_bucket_sent = st.bytes_sent;
    }
    if (status == SC_SUCCESS) {
        s->kind = SC_BR_BUCKET_COLD;
        status = sc_br_time(c, s, 1, &bucket);
        row->last_bucket_cold_ms = bucket.iter;
    }
out:
    if (s->comp)
        sc_compressor_destroy(s->comp);
    free(s->out);
    s->comp = NULL;
    s->out = NULL;
    if (registered)
        sc_mem_free(c->comm, buf);
    else
        free(buf);
    return status;
}

/* A reducer of the profile's first n gradients with a row's settings: the cap (0: the
 * reducer's default), autotune, views, the hook. */
static sc_status_t sc_br_reducer_create(sc_br_ctx_t *c, int n, size_t cap_bytes, int autotune,
                                        sc_reducer_t **r)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_grad_desc_t *descs;
    sc_comm_hook_t hook;
    sc_status_t status;

    descs = calloc(n > 0 ? (size_t)n : 1, sizeof(*descs));
    if (!descs) {
        snprintf(sc_br_error, sizeof(sc_br_error), "out of memory");
        return SC_ERR_NO_MEMORY;
    }
    for (int k = 0; k < n; k++) {
        descs[k].count = c->p->tensors[k].count;
        descs[k].dtype = c->p->tensors[k].dtype;
        descs[k].name = c->p->tensors[k].name;
    }
    cfg.bucket_cap_bytes = cap_bytes;
    cfg.gradient_as_bucket_view = c->o->view;
    cfg.autotune = autotune;
    if (c->o->topk) {
        sc_compress_config_t cc = SC_COMPRESS_CONFIG_INIT;
        cc.density = c->o->density;
        status = sc_comm_hook_topk(&cc, &hook);
    } else {
        status = sc_comm_hook_builtin(c->o->hook, &hook);
    }
    if (status != SC_SUCCESS) {
        sc_br_fail(status, c->o->topk ? "sc_comm_hook_topk" : "sc_comm_hook_builtin");
        goto out;
    }
    cfg.hook = &hook;
    status = sc_reducer_create(c->comm, descs, n, &cfg, r);
    if (status != SC_SUCCESS)
        sc_br_fail(status, "sc_reducer_create");
out:
    /* The hook's settings are the same on every rank (sc_bench_same_command), and
     * sc_reducer_create fails on every rank alike. */
    c->failed_alike = status != SC_SUCCESS;
    free(descs);
    return status;
}

/* The settings of the first row (its cap, the hook, views, and what the reducer reads
 * from the environment: SC_BUCKET_CAP_MB), checked by every rank before anything is
 * measured: a reducer of no gradients made and destroyed. They were refused only after
 * the per-tensor step had been timed. */
static sc_status_t sc_br_settings_check(sc_br_ctx_t *c, size_t cap_bytes, int autotune)
{
    sc_reducer_t *r;
    sc_status_t status = sc_br_reducer_create(c, 0, cap_bytes, autotune, &r);

    if (status != SC_SUCCESS)
        return status;
    status = sc_reducer_destroy(r);
    return status == SC_SUCCESS ? SC_SUCCESS : sc_br_fail(status, "sc_reducer_destroy");
}

/* One row: a reducer with the cap (0: the reducer's default; autotune), timed, its last
 * bucket timed alone, checked. */
static sc_status_t sc_br_row_measure(sc_br_ctx_t *c, size_t cap_bytes, int autotune,
                                     const sc_br_times_t *per_tensor, sc_br_row_t *row)
{
    sc_br_row_t w = {.autotune = autotune, .per_tensor = *per_tensor};
    sc_reducer_stats_t stats;
    sc_reducer_t *r;
    sc_br_step_t s;
    sc_status_t status;
    sc_dtype_t bucket_dtype;

    status = sc_br_reducer_create(c, c->p->ntensors, cap_bytes, autotune, &r);
    if (status != SC_SUCCESS)
        return status;
    for (int k = 0; k < c->p->ntensors; k++)
        c->views[k] = NULL;
    if (autotune) {
        status = sc_br_autotune_settle(c, r);
        if (status != SC_SUCCESS)
            goto err_destroy;
    }
    s = (sc_br_step_t){.kind = SC_BR_REDUCER, .reducer = r, .dtype = SC_FLOAT32};
    status = sc_br_time(c, &s, c->o->warmup, &w.t);
    if (status != SC_SUCCESS)
        goto err_destroy;
    status = sc_reducer_stats(r, &stats);
    if (status != SC_SUCCESS) {
        sc_br_fail(status, "sc_reducer_stats");
        goto err_destroy;
    }
    w.cap_bytes = stats.bucket_cap_bytes;
    w.buckets = stats.buckets;
    w.copy_bytes = stats.copy_bytes;
    status = sc_br_check(c, r, &w);
    if (status != SC_SUCCESS)
        goto err_destroy;

    /* The last bucket alone, in what the hook puts on the wire. */
    bucket_dtype = c->o->hook == SC_HOOK_FP16   ? SC_FLOAT16
                   : c->o->hook == SC_HOOK_BF16 ? SC_BFLOAT16
                                                : c->p->tensors[0].dtype;
    s = (sc_br_step_t){.kind = SC_BR_BUCKET, .dtype = bucket_dtype};
    status = sc_br_last_bucket(c, r, &s.count);
    if (status != SC_SUCCESS)
        goto err_destroy;
    w.last_bucket_bytes = s.count * sc_dtype_size(bucket_dtype);
    if (s.count > 0) {
        status = sc_br_last_bucket_time(c, &s, stats.registered, &w);
        if (status != SC_SUCCESS)
            goto err_destroy;
    }
    status = sc_reducer_destroy(r);
    if (status != SC_SUCCESS)
        return sc_br_fail(status, "sc_reducer_destroy");
    *row = w;
    return SC_SUCCESS;

err_destroy:
    sc_reducer_destroy(r);
    return status;
}

/* ---- the run --------------------------------------------------------------------- */

static void sc_br_grads_free(sc_br_ctx_t *c)
{
    if (!c->grads)
        return;
    if (c->grads_block)
        sc_mem_free(c->comm, c->grads_block); /* after sc_comm_destroy: freed by it */
    else
        for (int k = 0; k < c->p->ntensors; k++)
            free(c->grads[k]);
    c->grads_block = NULL;
    free(c->grads);
    c->grads = NULL;
}

/* Room for a gradient of bytes in a block: 64-byte aligned, never empty. */
static size_t sc_br_span(size_t bytes)
{
    return ((bytes ? bytes : 64) + 63) & ~(size_t)63;
}

/* Host gradients, filled with this rank's values (pages touched before any timing). */
static sc_status_t sc_br_grads_alloc(sc_br_ctx_t *c)
{
    sc_status_t status;

    size_t total = 0, off = 0;

    c->grads = calloc((size_t)c->p->ntensors, sizeof(*c->grads));
    if (!c->grads)
        goto err_no_memory;
    /* --registered-grads: one block, each gradient 64-byte aligned in it. */
    for (int k = 0; k < c->p->ntensors && c->o->registered_grads; k++)
        total += sc_br_span(c->p->tensors[k].count * sc_dtype_size(c->p->tensors[k].dtype));
    if (c->o->registered_grads) {
        status = sc_mem_alloc(c->comm, total, &c->grads_block);
        if (status != SC_SUCCESS) {
            snprintf(sc_br_error, sizeof(sc_br_error), "--registered-grads: %s",
                     sc_last_error());
            return status;
        }
    }
    for (int k = 0; k < c->p->ntensors; k++) {
        size_t bytes = c->p->tensors[k].count * sc_dtype_size(c->p->tensors[k].dtype);

        if (c->grads_block) {
            c->grads[k] = (char *)c->grads_block + off;
            off += sc_br_span(bytes);
        } else if (posix_memalign(&c->grads[k], 64, bytes ? bytes : 64) != 0) {
            /* Never NULL, even for an empty gradient: NULL means "in its view". */
            c->grads[k] = NULL;
            goto err_no_memory;
        }
        status = sc_br_fill(c, k, c->rank, c->grads[k]);
        if (status != SC_SUCCESS)
            return status;
    }
    return SC_SUCCESS;

err_no_memory:
    snprintf(sc_br_error, sizeof(sc_br_error), "cannot allocate the gradients (%.1f MiB)",
             (double)c->p->bytes / (1 << 20));
    return SC_ERR_NO_MEMORY;
}

/* Row i's cap in bytes: the i-th of --bucket-mb/--sweep, 0 (the reducer's default) where
 * none is given and for the autotuned row, which follows the ncaps others. */
static size_t sc_br_row_cap(const sc_br_options_t *o, int ncaps, int i)
{
    return i == ncaps || !o->ncaps ? 0 : (size_t)(o->caps_mb[i] * (1 << 20));
}

/* Every row: the per-tensor step once, then one reducer per cap (and autotune). */
static sc_status_t sc_br_run(sc_br_ctx_t *c, sc_br_row_t *rows, int *nrows)
{
    const sc_br_options_t *o = c->o;
    sc_br_step_t s = {.kind = SC_BR_PER_TENSOR, .dtype = SC_FLOAT32};
    sc_status_t status;
    sc_br_times_t per_tensor;
    int ncaps = o->ncaps ? o->ncaps : (o->autotune ? 0 : 1);

    status = sc_br_settings_check(c, sc_br_row_cap(o, ncaps, 0), ncaps == 0);
    if (status != SC_SUCCESS)
        return status;
    status = sc_br_grads_alloc(c);
    if (status != SC_SUCCESS)
        return status;
    status = sc_br_time(c, &s, o->warmup, &per_tensor);
    if (status != SC_SUCCESS)
        return status;
    if (o->view)
        sc_br_grads_free(c); /* the views hold the gradients from here on */
    for (int i = 0; i < ncaps + o->autotune; i++) {
        int autotune = i == ncaps;
        size_t cap = sc_br_row_cap(o, ncaps, i);

        status = sc_br_row_measure(c, cap, autotune, &per_tensor, &rows[*nrows]);
        if (status != SC_SUCCESS)
            return status;
        if (c->rank == 0)
            sc_br_print_row(&rows[*nrows]);
        (*nrows)++;
    }
    return SC_SUCCESS;
}

int sc_bench_reducer_main(int argc, char **argv)
{
    sc_br_options_t o;
    sc_bench_profile_t p;
    sc_br_ctx_t c;
    sc_br_row_t *rows = NULL;
    sc_bench_output_t *json = NULL;
    char err[1024];
    int nrows = 0, exit_code = 1;
    sc_status_t status;

    if (sc_br_options_parse(argc, argv, &o))
        return 2;
    if (o.help)
        return 0;
    /* Before the communicator: every rank reads the same file and fails the same way. */
    if (sc_bench_profile_load(o.profile, &p, err, sizeof(err)) != SC_SUCCESS) {
        fprintf(stderr, "sc-bench reducer: %s\n", err);
        return 2;
    }
    memset(&c, 0, sizeof(c));
    c.o = &o;
    c.p = &p;
    if (!o.spin && o.compute_ms > 0)
        prctl(PR_SET_TIMERSLACK, 1000UL); /* wake within 1 us of the deadlines */
    c.views = calloc((size_t)p.ntensors, sizeof(*c.views));
    c.backlog = calloc((size_t)p.ntensors, sizeof(*c.backlog));
    c.reqs = calloc((size_t)p.ntensors, sizeof(*c.reqs));
    c.times = calloc(SC_BR_TIMES * (size_t)o.iters, sizeof(*c.times));
    c.chunk = malloc(SC_BR_CHUNK * sizeof(*c.chunk));
    rows = calloc(SC_BR_MAX_CAPS + 1, sizeof(*rows));
    if (!c.views || !c.backlog || !c.reqs || !c.times || !c.chunk || !rows) {
        fprintf(stderr, "sc-bench reducer: out of memory\n");
        goto err_free;
    }
    sc_br_backlog_init(&c);
    status = sc_comm_init_from_env(&c.comm);
    if (status != SC_SUCCESS) {
        fprintf(stderr, "sc-bench reducer: sc_comm_init_from_env: %s: %s\n",
                sc_status_string(status), sc_last_error());
        goto err_free;
    }
    c.rank = sc_comm_rank(c.comm);
    c.nranks = sc_comm_size(c.comm);
    c.bases = calloc((size_t)c.nranks, sizeof(*c.bases));
    if (!c.bases) {
        fprintf(stderr, "sc-bench reducer: out of memory\n");
        goto err_destroy;
    }
    /* No operand for getopt to move: the arguments in the order given. */
    exit_code = sc_bench_same_command(c.comm, "sc-bench reducer", argc - 1, argv + 1);
    if (exit_code != 0)
        goto err_destroy;
    /* Before anything is measured: an unwritable --json fails every rank at once. */
    exit_code = sc_bench_output_open_root(c.comm, o.json_path, &json);
    if (exit_code != 0)
        goto err_destroy;
    exit_code = 1;
    /* Refused before anything is allocated, as sc-bench's buffers are: the gradients
     * and the buckets, or with views the buckets' two layouts in the first rebuild. */
    if (!sc_bench_memory_fits("sc-bench reducer", c.rank, "the gradients and their buckets",
                              2 * p.bytes, sc_comm_local_size(c.comm)))
        goto err_close_json;
    if (c.rank == 0)
        sc_br_print_header(&o, &p, c.comm, argc, argv);
    status = sc_br_run(&c, rows, &nrows);
    if (status != SC_SUCCESS) {
        fprintf(stderr, "sc-bench reducer: rank %d: %s\n", c.rank, sc_br_error);
        /* Peers still inside a collective learn of the failure at once; not after a
         * failure every rank returns, where the abort reached the peers still finishing
         * that call and replaced its sentence with 'the communicator was aborted'. */
        if (!c.failed_alike)
            sc_comm_abort(c.comm);
        goto err_close_json;
    }
    exit_code = 0;
    for (int i = 0; i < nrows; i++)
        exit_code |= rows[i].wrong != 0 || !rows[i].identical;
    if (c.rank == 0) {
        sc_br_print_summary(rows, nrows);
        if (exit_code)
            fprintf(stderr, "sc-bench reducer: wrong results (see the check column)\n");
    }
    if (json) {
        sc_br_json_write(json->f, &o, c.nranks, rows, nrows);
        exit_code |= sc_bench_output_commit(json);
        json = NULL;
    }

err_close_json:
    sc_bench_output_discard(json); /* a failed run: the file keeps what it held */
err_destroy:
    sc_comm_destroy(c.comm);
err_free:
    sc_br_grads_free(&c);
    free(rows);
    free(c.bases);
    free(c.chunk);
    free(c.flush);
    free(c.times);
    free(c.reqs);
    free(c.backlog);
    free(c.views);
    sc_bench_profile_free(&p);
    return exit_code;
}
