/* Approximate top-k on the host (SC_TOPK_APPROX): one scan of x against a threshold key
 * kept across calls, as DGC and Ok-Topk keep theirs, returning what qualifies (key at or
 * above the threshold), at most k: when more than k qualify, the k largest of them (ties
 * by the lowest index), which is then the exact selection; when c <= k qualify, they are
 * the c largest elements of x. The threshold aims at aim = k - k/8 elements and is kept
 * while the count stays in the band [k - k/4, k]. Above the band it moves up to the
 * aim-th largest key among those that qualified (exact, from the keys at hand); below it,
 * it is estimated anew from a sample (sample_ratio of x; each estimate samples other
 * places). So repeated similar steps cost one scan and a copy of what qualified. A
 * threshold that lets more than 4 aim + 65536 elements through stops the scan early and
 * the call becomes an exact selection, with a threshold estimated anew. */
#include <math.h>

#include "compress/topk_internal.h"
#include "core/error.h"

/* Below this size the exact selection costs about one scan: no threshold is kept. */
#define SC_TOPK_APPROX_MIN_N ((size_t)1 << 16)

/* The key at rank aim of x (1 the largest) estimated from a sample. */
static sc_status_t topk_approx_estimate(sc_topk_t *topk, const sc_topk_job_t *job,
                                        size_t aim, uint64_t *key)
{
    double ratio = topk->config.sample_ratio > 0.0 ? topk->config.sample_ratio : 0.01;
    size_t want = (size_t)ceil(ratio * (double)job->n), m, r;
    uint64_t seed = topk->config.seed + topk->approx_samples * 0x9e3779b97f4a7c15ull;
    sc_status_t st;

    st = sc_topk_sample(topk, job, want, seed, &m);
    if (st != SC_SUCCESS)
        return st;
    topk->approx_samples++;
    r = (size_t)ceil((double)aim * (double)m / (double)job->n);
    if (r < 1)
        r = 1;
    *key = r > m ? 0 : sc_topk_kth_key(topk->keys, m, r, job->fmt.key_bits, topk->hist);
    return SC_SUCCESS;
}

/* The scan against thr and the output from its lists. *count receives how many
 * qualified, or SIZE_MAX when more than limit did (nothing is written then); *next the
 * threshold for the next call when the count was above k. */
static sc_status_t topk_approx_pass(sc_topk_t *topk, const sc_topk_job_t *job, uint64_t thr,
                                    size_t aim, size_t limit, size_t *count, uint64_t *next)
{
    size_t nchunks, c = 0, written;
    sc_status_t st;

    nchunks = sc_topk_chunks_plan(topk, job->n, SC_TOPK_APPROX_MIN_N);
    if (nchunks == 0)
        return SC_ERR_NO_MEMORY;
    for (size_t i = 0; i < nchunks; i++) {
        sc_topk_chunk_t *ch = &topk->chunks[i];
        size_t share = job->k / nchunks * 5 / 4 + SC_TOPK_SCAN_SLACK;
        /* Every element at or above thr is a candidate; above stays empty. */
        if (sc_topk_list_reserve(&ch->above, SC_TOPK_SCAN_SLACK) ||
            sc_topk_list_reserve(&ch->cand, share))
            return sc_error(SC_ERR_NO_MEMORY, "sc_topk_select: out of memory for %zu "
                            "candidates", share);
    }
    /* A chunk stops once its list passes limit, so the total passes it too: whether the
     * call overflows does not depend on the number of threads. */
    st = sc_topk_chunks_scan(topk, job, nchunks, thr, job->fmt.abs_mask, limit);
    if (st != SC_SUCCESS)
        return st;
    for (size_t i = 0; i < nchunks; i++)
        c += topk->chunks[i].cand.n;
    if (c > limit) {
        *count = SIZE_MAX;
        return SC_SUCCESS;
    }
    st = sc_topk_lists_emit(topk, job, nchunks, c < job->k ? c : job->k, NULL, &written);
    if (st != SC_SUCCESS)
        return st;
    /* Above k, lists_emit left the candidates' keys in topk->keys. */
    if (c > job->k)
        *next = sc_topk_kth_key(topk->keys, c, aim, job->fmt.key_bits, topk->hist);
    *count = c;
    return SC_SUCCESS;
}

sc_status_t sc_topk_approx_host(sc_topk_t *topk, const sc_topk_job_t *unfilled,
                                size_t *selected)
{
    sc_topk_job_t scanned = *unfilled, *job = &scanned;
    size_t aim = job->k - job->k / 8, low = job->k - job->k / 4, count = 0;
    size_t limit = 4 * aim + 65536;
    uint64_t thr, next;
    sc_status_t st;

    if (job->n < SC_TOPK_APPROX_MIN_N) {
        st = sc_topk_radix_host(topk, job);
        if (st == SC_SUCCESS)
            *selected = job->k;
        return st;
    }
    if (topk->approx.valid && topk->approx.dtype == job->dtype && topk->approx.n == job->n) {
        thr = topk->approx.key;
    } else {
        st = topk_approx_estimate(topk, job, aim, &thr);
        if (st != SC_SUCCESS)
            return st;
    }
    next = thr;
    st = topk_approx_pass(topk, job, thr, aim, limit, &count, &next);
    scanned.filler = NULL; /* the scan filled x (or an error follows) */
    if (st == SC_SUCCESS && count == SIZE_MAX)
        st = sc_topk_exact_host(topk, job);
    if (st == SC_SUCCESS && (count == SIZE_MAX || count < low))
        st = topk_approx_estimate(topk, job, aim, &next);
    if (st != SC_SUCCESS)
        return st;
    topk->approx.valid = 1;
    topk->approx.dtype = job->dtype;
    topk->approx.n = job->n;
    topk->approx.key = next;
    *selected = count < job->k ? count : job->k;
    return SC_SUCCESS;
}

void sc_topk_approx_swap(sc_topk_t *topk, sc_topk_approx_state_t *state)
{
    sc_topk_approx_state_t t = topk->approx;

    topk->approx = *state;
    *state = t;
}
