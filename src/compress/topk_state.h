/* The approximate selection's kept threshold as callers outside the selector hold it:
 * the compressor keeps one per key and swaps it into its one selector around each
 * selection. */
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

#endif
