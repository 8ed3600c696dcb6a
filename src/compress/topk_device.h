/* The CUDA radix select of top-k (topk_cuda.cu) as C sees it: a selection request in
 * plain fields and its launcher. CUDA builds only. */
#ifndef SC_COMPRESS_TOPK_DEVICE_H
#define SC_COMPRESS_TOPK_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "shardcomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x, indices and values are device memory on the current device; 0 < k <= n. */
typedef struct {
    const void *x;
    size_t n;
    size_t k;
    unsigned width;       /* bytes per element: 2, 4 or 8 */
    unsigned key_bits;    /* 15, 31 or 63 (see sc_topk_format_t) */
    uint64_t nan_key;
    int index_bits;       /* 32 or 64 */
    void *indices;
    void *values;
} sc_topk_device_job_t;

/* Enqueues the selection of job on stream (the calling thread's current device): the
 * same elements as the host's exact selection, indices ascending. Scratch memory is
 * taken from and given back to the stream's memory pool. Returns the first CUDA error
 * (a cudaError_t, 0 on success). */
int sc_topk_cuda_select(const sc_topk_device_job_t *job, sc_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif
