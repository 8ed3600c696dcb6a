/* Exact top-k by radix select on the magnitude keys, always exact whatever the data:
 * per-chunk histograms of 16 key bits at a time from the top (the elements whose higher
 * bits match the digits chosen so far), then one pass that writes the elements above the
 * k-th key and, in index order, the first ties at it. Also the same select on an array
 * of keys (samples, candidates). */
#include <stdlib.h>

#include "compress/topk_internal.h"
#include "core/error.h"

uint64_t sc_topk_kth_key(const uint64_t *keys, size_t m, size_t r, unsigned key_bits,
                         uint32_t *hist)
{
    unsigned pshift = key_bits;
    uint64_t prefix = 0;

    while (pshift > 0) {
        unsigned s = pshift > SC_TOPK_HIST_BITS ? pshift - SC_TOPK_HIST_BITS : 0;
        uint64_t dmask = ((uint64_t)1 << (pshift - s)) - 1;
        size_t above = 0, d;

        memset(hist, 0, (dmask + 1) * sizeof(*hist));
        for (size_t i = 0; i < m; i++)
            if ((keys[i] >> pshift) == prefix)
                hist[(keys[i] >> s) & dmask]++;
        for (d = dmask; above + hist[d] < r; d--)
            above += hist[d];
        r -= above;
        prefix = (prefix << (pshift - s)) | d;
        pshift = s;
    }
    return prefix;
}

/* One level of the select over the chunks. */
typedef struct {
    sc_topk_t *topk;
    const sc_topk_job_t *job;
    size_t nchunks;
    int threads;
    unsigned pshift, shift;  /* in play: key >> pshift == prefix; digit: key >> shift */
    uint64_t prefix, dmask;
    uint64_t kth;            /* emission: the k-th key */
} topk_radix_ctx_t;

static inline __attribute__((always_inline)) void
topk_radix_hist(const topk_radix_ctx_t *c, sc_topk_chunk_t *ch, unsigned width)
{
    const sc_topk_format_t f = c->job->fmt;
    const void *x = c->job->x;
    uint32_t *h = ch->hist;

    memset(h, 0, (c->dmask + 1) * sizeof(*h));
    if (c->pshift == f.key_bits) {
        for (size_t i = ch->begin; i < ch->end; i++)
            h[(sc_topk_key(sc_topk_bits_at(x, i, width), &f) >> c->shift) & c->dmask]++;
        return;
    }
    for (size_t i = ch->begin; i < ch->end; i++) {
        uint64_t key = sc_topk_key(sc_topk_bits_at(x, i, width), &f);
        if ((key >> c->pshift) == c->prefix)
            h[(key >> c->shift) & c->dmask]++;
    }
}

static void topk_radix_hist_task(void *arg, int tid)
{
    const topk_radix_ctx_t *c = arg;

    for (size_t k = (size_t)tid; k < c->nchunks; k += (size_t)c->threads) {
        sc_topk_chunk_t *ch = &c->topk->chunks[k];
        switch (c->job->fmt.width) {
        case 2: topk_radix_hist(c, ch, 2); break;
        case 4: topk_radix_hist(c, ch, 4); break;
        default: topk_radix_hist(c, ch, 8);
        }
    }
}

static inline __attribute__((always_inline)) void
topk_radix_emit(const topk_radix_ctx_t *c, sc_topk_chunk_t *ch, unsigned width)
{
    const sc_topk_format_t f = c->job->fmt;
    const void *x = c->job->x;
    size_t out = ch->out, ties = ch->take_eq;

    for (size_t i = ch->begin; i < ch->end; i++) {
        uint64_t bits = sc_topk_bits_at(x, i, width), key = sc_topk_key(bits, &f);
        if (key < c->kth || (key == c->kth && ties == 0))
            continue;
        ties -= key == c->kth;
        sc_topk_job_put(c->job, out++, i, bits);
    }
}

static void topk_radix_emit_task(void *arg, int tid)
{
    const topk_radix_ctx_t *c = arg;

    for (size_t k = (size_t)tid; k < c->nchunks; k += (size_t)c->threads) {
        sc_topk_chunk_t *ch = &c->topk->chunks[k];
        switch (c->job->fmt.width) {
        case 2: topk_radix_emit(c, ch, 2); break;
        case 4: topk_radix_emit(c, ch, 4); break;
        default: topk_radix_emit(c, ch, 8);
        }
    }
}

sc_status_t sc_topk_radix_host(sc_topk_t *topk, const sc_topk_job_t *unfilled)
{
    sc_topk_job_t filled, *job = &filled;
    topk_radix_ctx_t c = {topk, job, 0, 1, unfilled->fmt.key_bits, 0, 0, 0, 0};
    size_t need = unfilled->k, ties, out = 0;

    /* Every pass reads all of x: a filled-on-the-fly x is filled first. */
    if (sc_topk_fill_all(topk, unfilled, &filled) != SC_SUCCESS)
        return SC_ERR_NO_MEMORY;
    c.nchunks = sc_topk_chunks_plan(topk, job->n, (size_t)1 << 18);
    if (c.nchunks == 0)
        return SC_ERR_NO_MEMORY;
    c.threads = sc_topk_chunks_threads(topk, c.nchunks);
    for (size_t k = 0; k < c.nchunks; k++) {
        if (topk->chunks[k].hist)
            continue;
        topk->chunks[k].hist = malloc(sizeof(uint32_t) << SC_TOPK_HIST_BITS);
        if (!topk->chunks[k].hist)
            return sc_error(SC_ERR_NO_MEMORY, "sc_topk_select: out of memory for a "
                            "histogram");
    }
    while (c.pshift > 0) {
        size_t above = 0, d;

        c.shift = c.pshift > SC_TOPK_HIST_BITS ? c.pshift - SC_TOPK_HIST_BITS : 0;
        c.dmask = ((uint64_t)1 << (c.pshift - c.shift)) - 1;
        sc_topk_pool_run(topk->pool, c.threads, topk_radix_hist_task, &c);
        /* The digit of the need-th largest key among those in play. */
        for (d = c.dmask;; d--) {
            size_t count = 0;
            for (size_t k = 0; k < c.nchunks; k++)
                count += topk->chunks[k].hist[d];
            if (above + count >= need)
                break;
            above += count;
        }
        for (size_t k = 0; k < c.nchunks; k++) {
            sc_topk_chunk_t *ch = &topk->chunks[k];
            for (size_t e = d + 1; e <= c.dmask; e++)
                ch->gt += ch->hist[e];
            ch->eq = ch->hist[d];
        }
        need -= above;
        c.prefix = (c.prefix << (c.pshift - c.shift)) | d;
        c.pshift = c.shift;
    }
    /* c.prefix is the k-th key; need elements at it complete the selection, the
     * lowest indices first. */
    c.kth = c.prefix;
    ties = need;
    for (size_t k = 0; k < c.nchunks; k++) {
        sc_topk_chunk_t *ch = &topk->chunks[k];
        ch->take_eq = ch->eq < ties ? ch->eq : ties;
        ties -= ch->take_eq;
        ch->out = out;
        out += ch->gt + ch->take_eq;
    }
    sc_topk_pool_run(topk->pool, c.threads, topk_radix_emit_task, &c);
    return SC_SUCCESS;
}
