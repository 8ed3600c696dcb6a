/* What callers outside the selector (the compressor) hold and call: the approximate
 * selection's kept threshold, swapped in per key, and the selection of an array that the
 * caller fills as the selection reaches it (error feedback's v = residual + g computed
 * block by block and scanned while in cache, instead of a pass of its own). */
#ifndef SC_COMPRESS_TOPK_STATE_H
#define SC_COMPRESS_TOPK_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "shardcomm/compress.h"

/* The approximate mode's threshold: valid for tensors of this dtype and size. A zeroed
 * state is "none yet". */
typedef struct {
    int valid;
    sc_dtype_t dtype;
    size_t n;
    uint64_t key;
} sc_topk_approx_state_t;

/* Exchanges the selector's threshold with *state (topk_approx.c). One thread at a time
 * per selector, as for sc_topk_select. */
void sc_topk_approx_swap(sc_topk_t *topk, sc_topk_approx_state_t *state);

/* The selector's draws so far (the approximate mode's samples, random-k's calls), which
 * with the seed give the next ones: a caller saves them before a step and puts them back
 * when the step fails, so that a failed step draws nothing (topk.c). */
typedef struct {
    uint64_t approx_samples;
    uint64_t random_calls;
} sc_topk_draws_t;

void sc_topk_draws_get(const sc_topk_t *topk, sc_topk_draws_t *draws);
void sc_topk_draws_set(sc_topk_t *topk, const sc_topk_draws_t *draws);

/* Writes x[begin, end) of an array filled on the fly, from the selector's threads
 * (blocks of different threads disjoint). A range may be filled more than once (a
 * sample looks ahead, the scan fills it again): each call writes the same values and
 * changes nothing else. fill_copy (optional) writes what fill writes and the same
 * values into copy[0, end - begin) (one block of the scan, in cache), which the scan
 * then reads instead of x, so that x's stores may bypass the cache (fenced before
 * fill_copy returns). */
typedef struct {
    void (*fill)(void *ctx, size_t begin, size_t end);
    void (*fill_copy)(void *ctx, size_t begin, size_t end, void *copy);
    void *ctx;
} sc_topk_filler_t;

/* sc_topk_select on host memory x (n elements of dtype) that filler writes as the
 * selection goes: same arguments, checks and results as sc_topk_select with stream NULL
 * once x is filled. On success (k == 0 too) all of x is filled; after an error x may be
 * filled in part. */
sc_status_t sc_topk_select_filled(sc_topk_t *topk, void *x, sc_dtype_t dtype, size_t n,
                                  size_t k, int index_bits, void *indices, void *values,
                                  size_t *selected, const sc_topk_filler_t *filler);

#endif
