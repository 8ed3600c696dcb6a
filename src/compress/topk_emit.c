/* The scan of every chunk into its lists (filling x block by block first when the job
 * has a filler), the fill of all of x for the paths that read it otherwise, and the
 * output written from the lists: every element above the bracket and the largest
 * candidates, ties by the lowest index, merged per chunk in index order. Shared by the
 * exact and the approximate selection. */
#include "compress/topk_internal.h"
#include "core/error.h"

typedef struct {
    sc_topk_t *topk;
    const sc_topk_job_t *job;
    size_t nchunks;
    int threads;
    uint64_t lo, hi;
    size_t limit;
    uint64_t kth;     /* emission: candidates above kth are taken, and take_eq at it */
    size_t r;
    int all;          /* emission: every candidate is taken (no keys needed) */
} topk_emit_ctx_t;

/* Scans x[i, end) of one chunk into its lists, growing them as needed; 0, or the
 * chunk's failure (1: a list passed the limit, 2: out of memory). base: the index in
 * x of the chunk's first element, modulo 2^64 (a copy of one block numbers its
 * elements from the block's first). */
static int topk_scan_range(const topk_emit_ctx_t *c, sc_topk_scan_fn scan, sc_topk_chunk_t *ch,
                           const void *x, size_t base, size_t i, size_t end)
{
    while ((i = scan(x, base, i, end, c->lo, c->hi, &ch->above, &ch->cand)) < end) {
        if (ch->above.n > c->limit || ch->cand.n > c->limit)
            return 1;
        if (sc_topk_list_reserve(&ch->above, ch->above.n + SC_TOPK_SCAN_SLACK) ||
            sc_topk_list_reserve(&ch->cand, ch->cand.n + SC_TOPK_SCAN_SLACK))
            return 2;
    }
    return 0;
}

/* The end of the fill block that starts at b in a chunk ending at end. */
static size_t topk_block_end(size_t b, size_t end)
{
    return end - b < SC_TOPK_FILL_BLOCK ? end : b + SC_TOPK_FILL_BLOCK;
}

static void topk_scan_task(void *arg, int tid)
{
    const topk_emit_ctx_t *c = arg;
    const sc_topk_job_t *job = c->job;
    const sc_topk_filler_t *f = job->filler;
    sc_topk_scan_fn scan = sc_topk_scan_for(c->topk->kernels, job->fmt.width);
    _Alignas(64) uint64_t copy[SC_TOPK_FILL_BLOCK]; /* one block of any width */

    for (size_t k = (size_t)tid; k < c->nchunks; k += (size_t)c->threads) {
        sc_topk_chunk_t *ch = &c->topk->chunks[k];

        if (!f) {
            ch->failed = topk_scan_range(c, scan, ch, job->x, ch->begin, ch->begin, ch->end);
            continue;
        }
        /* Each block scanned while its fill is still in cache (in copy where the filler
         * makes one); after a failure the rest is only filled. */
        for (size_t b = ch->begin, e; b < ch->end; b = e) {
            e = topk_block_end(b, ch->end);
            if (ch->failed) {
                f->fill(f->ctx, b, e);
            } else if (f->fill_copy) {
                f->fill_copy(f->ctx, b, e, copy);
                ch->failed = topk_scan_range(c, scan, ch, copy, ch->begin - b, 0, e - b);
            } else {
                f->fill(f->ctx, b, e);
                ch->failed = topk_scan_range(c, scan, ch, job->x, ch->begin, b, e);
            }
        }
    }
}

static void topk_fill_task(void *arg, int tid)
{
    const topk_emit_ctx_t *c = arg;
    const sc_topk_filler_t *f = c->job->filler;

    for (size_t k = (size_t)tid; k < c->nchunks; k += (size_t)c->threads) {
        const sc_topk_chunk_t *ch = &c->topk->chunks[k];
        for (size_t b = ch->begin; b < ch->end; b = topk_block_end(b, ch->end))
            f->fill(f->ctx, b, topk_block_end(b, ch->end));
    }
}

sc_status_t sc_topk_fill_all(sc_topk_t *topk, const sc_topk_job_t *job,
                             sc_topk_job_t *filled)
{
    topk_emit_ctx_t c = {topk, job, 0, 0, 0, 0, 0, 0, 0, 0};

    *filled = *job;
    filled->filler = NULL;
    if (!job->filler)
        return SC_SUCCESS;
    c.nchunks = sc_topk_chunks_plan(topk, job->n, SC_TOPK_FILL_BLOCK * 16);
    if (c.nchunks == 0)
        return SC_ERR_NO_MEMORY;
    c.threads = sc_topk_chunks_threads(topk, c.nchunks);
    sc_topk_pool_run(topk->pool, c.threads, topk_fill_task, &c);
    return SC_SUCCESS;
}

sc_status_t sc_topk_chunks_scan(sc_topk_t *topk, const sc_topk_job_t *job, size_t nchunks,
                                uint64_t lo, uint64_t hi, size_t limit)
{
    topk_emit_ctx_t c = {topk, job, nchunks, sc_topk_chunks_threads(topk, nchunks), lo, hi,
                         limit, 0, 0, 0};

    sc_topk_pool_run(topk->pool, c.threads, topk_scan_task, &c);
    for (size_t k = 0; k < nchunks; k++)
        if (topk->chunks[k].failed == 2)
            return sc_error(SC_ERR_NO_MEMORY, "sc_topk_select: out of memory for the "
                            "elements found by the scan");
    return SC_SUCCESS;
}

static void topk_emit_task(void *arg, int tid)
{
    const topk_emit_ctx_t *c = arg;
    const sc_topk_job_t *job = c->job;
    unsigned width = job->fmt.width;

    for (size_t k = (size_t)tid; k < c->nchunks; k += (size_t)c->threads) {
        const sc_topk_chunk_t *ch = &c->topk->chunks[k];
        const uint64_t *keys = c->topk->keys + ch->keys;
        size_t out = ch->out, a = 0, ties = ch->take_eq;

        for (size_t j = 0; j < ch->cand.n && c->r > 0; j++) {
            if (!c->all) {
                if (keys[j] < c->kth || (keys[j] == c->kth && ties == 0))
                    continue;
                ties -= keys[j] == c->kth;
            }
            for (; a < ch->above.n && ch->above.idx[a] < ch->cand.idx[j]; a++)
                sc_topk_job_put(job, out++, ch->begin + ch->above.idx[a],
                                sc_topk_bits_at(ch->above.bits, a, width));
            sc_topk_job_put(job, out++, ch->begin + ch->cand.idx[j],
                            sc_topk_bits_at(ch->cand.bits, j, width));
        }
        for (; a < ch->above.n; a++)
            sc_topk_job_put(job, out++, ch->begin + ch->above.idx[a],
                            sc_topk_bits_at(ch->above.bits, a, width));
    }
}

sc_status_t sc_topk_lists_emit(sc_topk_t *topk, const sc_topk_job_t *job, size_t nchunks,
                               size_t r, uint64_t *kth, size_t *written)
{
    topk_emit_ctx_t c = {topk, job, nchunks, sc_topk_chunks_threads(topk, nchunks), 0, 0,
                         0, 0, r, 0};
    size_t ncand = 0, out = 0, ties;
    sc_status_t st;

    for (size_t k = 0; k < nchunks; k++) {
        topk->chunks[k].keys = ncand;
        ncand += topk->chunks[k].cand.n;
    }
    /* Every candidate taken: no keys, no k-th key. */
    if (r == ncand) {
        c.all = 1;
        for (size_t k = 0; k < nchunks; k++) {
            sc_topk_chunk_t *ch = &topk->chunks[k];
            ch->out = out;
            out += ch->above.n + ch->cand.n;
        }
        sc_topk_pool_run(topk->pool, c.threads, topk_emit_task, &c);
        *written = out;
        return SC_SUCCESS;
    }
    st = sc_topk_keys_reserve(topk, ncand);
    if (st != SC_SUCCESS)
        return st;
    for (size_t k = 0; k < nchunks; k++) {
        const sc_topk_chunk_t *ch = &topk->chunks[k];
        for (size_t j = 0; j < ch->cand.n; j++)
            topk->keys[ch->keys + j] =
                sc_topk_key(sc_topk_bits_at(ch->cand.bits, j, job->fmt.width), &job->fmt);
    }
    if (r > 0)
        c.kth = sc_topk_kth_key(topk->keys, ncand, r, job->fmt.key_bits, topk->hist);
    ties = r;
    for (size_t k = 0; k < nchunks; k++) {
        sc_topk_chunk_t *ch = &topk->chunks[k];
        ch->gt = ch->eq = 0;
        for (size_t j = ch->keys; j < ch->keys + ch->cand.n && r > 0; j++) {
            ch->gt += topk->keys[j] > c.kth;
            ch->eq += topk->keys[j] == c.kth;
        }
        ties -= ch->gt;
    }
    for (size_t k = 0; k < nchunks; k++) {
        sc_topk_chunk_t *ch = &topk->chunks[k];
        ch->take_eq = ch->eq < ties ? ch->eq : ties;
        ties -= ch->take_eq;
        ch->out = out;
        out += ch->above.n + ch->gt + ch->take_eq;
    }
    sc_topk_pool_run(topk->pool, c.threads, topk_emit_task, &c);
    if (kth && r > 0)
        *kth = c.kth;
    *written = out;
    return SC_SUCCESS;
}
