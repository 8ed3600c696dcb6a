/* The selector's scratch: the split of x into per-thread chunks, the chunks' growable
 * scan lists, and the key array for samples and candidates. */
#include <stdlib.h>

#include "compress/topk_internal.h"
#include "core/error.h"

/* A chunk holds fewer than 2^32 elements (scan lists keep 32-bit offsets). */
#define SC_TOPK_CHUNK_MAX ((size_t)1 << 31)

size_t sc_topk_chunks_plan(sc_topk_t *topk, size_t n, size_t min_per_thread)
{
    size_t threads = n / min_per_thread, nchunks;

    if (threads > (size_t)topk->threads)
        threads = (size_t)topk->threads;
    if (threads < 1)
        threads = 1;
    nchunks = (n + SC_TOPK_CHUNK_MAX - 1) / SC_TOPK_CHUNK_MAX;
    /* A multiple of the threads, so that each thread gets the same share. */
    nchunks = (nchunks + threads - 1) / threads * threads;
    if (nchunks > topk->chunks_cap) {
        sc_topk_chunk_t *c = realloc(topk->chunks, nchunks * sizeof(*c));
        if (!c) {
            sc_error(SC_ERR_NO_MEMORY, "sc_topk_select: out of memory for %zu chunks",
                     nchunks);
            return 0;
        }
        memset(c + topk->chunks_cap, 0, (nchunks - topk->chunks_cap) * sizeof(*c));
        topk->chunks = c;
        topk->chunks_cap = nchunks;
    }
    for (size_t c = 0; c < nchunks; c++) {
        sc_topk_chunk_t *ch = &topk->chunks[c];
        /* Boundaries on multiples of 64 elements (whole cache lines for every width). */
        ch->begin = c == 0 ? 0 : (n / nchunks * c) & ~(size_t)63;
        ch->end = c + 1 == nchunks ? n : (n / nchunks * (c + 1)) & ~(size_t)63;
        ch->above.n = ch->cand.n = 0;
        ch->gt = ch->eq = ch->take_eq = ch->out = 0;
        ch->failed = 0;
    }
    return nchunks;
}

int sc_topk_chunks_threads(const sc_topk_t *topk, size_t nchunks)
{
    return nchunks < (size_t)topk->threads ? (int)nchunks : topk->threads;
}

sc_status_t sc_topk_keys_reserve(sc_topk_t *topk, size_t n)
{
    uint64_t *k;

    if (n <= topk->keys_cap)
        return SC_SUCCESS;
    k = realloc(topk->keys, n * sizeof(*k));
    if (!k)
        return sc_error(SC_ERR_NO_MEMORY, "sc_topk_select: out of memory for %zu keys", n);
    topk->keys = k;
    topk->keys_cap = n;
    return SC_SUCCESS;
}

int sc_topk_list_reserve(sc_topk_list_t *l, size_t need)
{
    size_t cap = l->cap ? l->cap : 4096;
    uint32_t *idx;
    void *bits;

    if (need <= l->cap)
        return 0;
    while (cap < need)
        cap *= 2;
    idx = realloc(l->idx, cap * sizeof(*idx));
    if (!idx)
        return -1;
    l->idx = idx;
    /* Room for the widest element, so that one list serves every dtype. */
    bits = realloc(l->bits, cap * 8);
    if (!bits)
        return -1;
    l->bits = bits;
    l->cap = cap;
    return 0;
}
