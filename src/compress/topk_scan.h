/* What every vector path of the scan shares: the handling of the elements a vector
 * compare found at or above lo, one at a time, in index order. */
#ifndef SC_COMPRESS_TOPK_SCAN_H
#define SC_COMPRESS_TOPK_SCAN_H

#include "compress/topk_internal.h"

/* Element i + j for each set bit j of hits goes to above (raw key > hi) or cand. */
static inline __attribute__((always_inline)) void
sc_topk_scan_hits(const void *x, size_t base, size_t i, uint64_t hits, unsigned width,
                  uint64_t abs_mask, uint64_t hi, sc_topk_list_t *above, sc_topk_list_t *cand)
{
    while (hits) {
        size_t e = i + (size_t)__builtin_ctzll(hits);
        uint64_t bits = sc_topk_bits_at(x, e, width);
        sc_topk_list_t *l = (bits & abs_mask) > hi ? above : cand;

        hits &= hits - 1;
        l->idx[l->n] = (uint32_t)(e - base);
        sc_topk_bits_put(l->bits, l->n, width, bits);
        l->n++;
    }
}

/* The scalar scan of x[i..end) from i on (the vector paths' tail), one element at a
 * time; returns where it stopped (see sc_topk_scan_fn). */
static inline __attribute__((always_inline)) size_t
sc_topk_scan_tail(const void *x, size_t base, size_t i, size_t end, uint64_t lo, uint64_t hi,
                  unsigned width, uint64_t abs_mask, sc_topk_list_t *above,
                  sc_topk_list_t *cand)
{
    for (; i < end; i++) {
        if (above->cap - above->n < 1 || cand->cap - cand->n < 1)
            return i;
        if ((sc_topk_bits_at(x, i, width) & abs_mask) >= lo)
            sc_topk_scan_hits(x, base, i, 1, width, abs_mask, hi, above, cand);
    }
    return end;
}

static inline int sc_topk_scan_room(const sc_topk_list_t *above, const sc_topk_list_t *cand)
{
    return above->cap - above->n >= SC_TOPK_SCAN_SLACK &&
           cand->cap - cand->n >= SC_TOPK_SCAN_SLACK;
}

#endif
