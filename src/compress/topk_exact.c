/* Exact top-k on the host in one pass over x for most data: the keys of a sample bracket
 * the k-th largest key, one vectorized scan collects the elements above the bracket and
 * those inside it, and the k-th key is found among the few inside. When the bracket
 * misses (the scan counts show it) or would hold too much of x (many ties), the radix
 * select does the work instead. Small inputs go straight to the radix select. An x filled
 * on the fly is looked ahead at by the sample and filled by the scan (or by the radix
 * select when the scan does not run). */
#include <math.h>

#include "compress/topk_internal.h"
#include "core/error.h"

#define SC_TOPK_BRACKET_MIN_N ((size_t)1 << 16)
#define SC_TOPK_SAMPLE_KEYS ((size_t)1 << 16)

typedef struct {
    uint64_t lo, hi;
    size_t cand_est, above_est;
} topk_bracket_t;

/* A bracket [lo, hi] of keys that holds the k-th key unless the sample is unlucky:
 * about 6 standard deviations of the sample's rank on either side, plus some. 0 when the
 * bracket would hold more than a quarter of x. */
static int topk_bracket(sc_topk_t *topk, const sc_topk_job_t *job, size_t m,
                        topk_bracket_t *b)
{
    const sc_topk_format_t *f = &job->fmt;
    double rs = (double)job->k * (double)m / (double)job->n;
    double delta = 6.0 * sqrt(rs) + 32.0;
    double hi_rank = floor(rs - delta), lo_rank = ceil(rs + delta);
    size_t in = 0, above = 0;

    b->hi = hi_rank < 1.0 ? f->abs_mask
                          : sc_topk_kth_key(topk->keys, m, (size_t)hi_rank, f->key_bits,
                                            topk->hist);
    b->lo = lo_rank > (double)m ? 0
                                : sc_topk_kth_key(topk->keys, m, (size_t)lo_rank,
                                                  f->key_bits, topk->hist);
    /* A NaN bound: NaNs of any payload are candidates, none is above. */
    if (b->hi == f->nan_key)
        b->hi = f->abs_mask;
    /* Mostly zeros (a sparse gradient, a residual after a step): the bracket starts at
     * the smallest nonzero key instead; the scan's counts show whether the nonzeros
     * hold the k-th key. */
    if (b->lo == 0 && b->hi > 0)
        b->lo = 1;
    for (size_t i = 0; i < m; i++) {
        in += topk->keys[i] >= b->lo && topk->keys[i] <= b->hi;
        above += topk->keys[i] > b->hi;
    }
    b->cand_est = (size_t)((double)in * (double)job->n / (double)m);
    b->above_est = (size_t)((double)above * (double)job->n / (double)m);
    return b->cand_est <= job->n / 4;
}

sc_status_t sc_topk_exact_host(sc_topk_t *topk, const sc_topk_job_t *unfilled)
{
    sc_topk_job_t scanned = *unfilled, *job = &scanned;
    topk_bracket_t b;
    size_t m, nchunks, above = 0, cand = 0, written, limit;
    sc_status_t st;

    if (job->n < SC_TOPK_BRACKET_MIN_N)
        return sc_topk_radix_host(topk, job);
    st = sc_topk_sample(topk, job, SC_TOPK_SAMPLE_KEYS, topk->config.seed, &m);
    if (st != SC_SUCCESS)
        return st;
    if (!topk_bracket(topk, job, m, &b))
        return sc_topk_radix_host(topk, job);
    nchunks = sc_topk_chunks_plan(topk, job->n, SC_TOPK_BRACKET_MIN_N);
    if (nchunks == 0)
        return SC_ERR_NO_MEMORY;
    for (size_t k = 0; k < nchunks; k++) {
        sc_topk_chunk_t *ch = &topk->chunks[k];
        size_t share = (b.above_est + b.cand_est) / nchunks * 5 / 4 + SC_TOPK_SCAN_SLACK;
        if (sc_topk_list_reserve(&ch->above, share) || sc_topk_list_reserve(&ch->cand, share))
            return sc_error(SC_ERR_NO_MEMORY, "sc_topk_select: out of memory for %zu "
                            "candidates", share);
    }
    /* A chunk list longer than k and than 4 times the candidates expected in all of x
     * shows a missed bracket early. */
    limit = 4 * b.cand_est + 65536;
    st = sc_topk_chunks_scan(topk, job, nchunks, b.lo, b.hi, job->k > limit ? job->k : limit);
    scanned.filler = NULL; /* the scan filled x */
    if (st != SC_SUCCESS)
        return st;
    for (size_t k = 0; k < nchunks; k++) {
        if (topk->chunks[k].failed)
            return sc_topk_radix_host(topk, job);
        above += topk->chunks[k].above.n;
        cand += topk->chunks[k].cand.n;
    }
    if (above > job->k || above + cand < job->k)
        return sc_topk_radix_host(topk, job);
    return sc_topk_lists_emit(topk, job, nchunks, job->k - above, NULL, &written);
}
