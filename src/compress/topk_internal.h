/* Inside the top-k selector: the selector's state, the element formats and magnitude
 * keys every path agrees on, and the entry points of the selection algorithms. */
#ifndef SC_COMPRESS_TOPK_INTERNAL_H
#define SC_COMPRESS_TOPK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "compress/topk_pool.h"
#include "compress/topk_state.h"
#include "core/cpu.h"
#include "shardcomm/compress.h"

/* The public limit and the one SC_THREADS is read with are one number. */
_Static_assert(SC_THREADS_MAX == SC_CPU_THREADS_MAX, "SC_THREADS_MAX is SC_CPU_THREADS_MAX");

/* Selection works on bit patterns. The magnitude key of an element is its bits without
 * the sign, every NaN mapped to nan_key (Inf's key + 1): a larger key is a larger
 * magnitude, -0 and +0 share key 0, and all NaNs tie (broken by the lowest index). The
 * raw key (bits & abs_mask) orders like the key against any threshold up to Inf's. */
typedef struct {
    unsigned width;     /* bytes per element: 2, 4 or 8 */
    unsigned key_bits;  /* bits a key needs: 15, 31 or 63 */
    uint64_t abs_mask;  /* every bit but the sign; also the largest raw key */
    uint64_t nan_key;
} sc_topk_format_t;

/* The format of a float dtype (float32, float64, float16, bfloat16). */
sc_topk_format_t sc_topk_format(sc_dtype_t dtype);

static inline uint64_t sc_topk_bits_at(const void *x, size_t i, unsigned width)
{
    uint16_t h;
    uint32_t w;
    uint64_t d;

    switch (width) {
    case 2: memcpy(&h, (const char *)x + 2 * i, 2); return h;
    case 4: memcpy(&w, (const char *)x + 4 * i, 4); return w;
    default: memcpy(&d, (const char *)x + 8 * i, 8); return d;
    }
}

static inline void sc_topk_bits_put(void *p, size_t i, unsigned width, uint64_t bits)
{
    uint16_t h = (uint16_t)bits;
    uint32_t w = (uint32_t)bits;

    switch (width) {
    case 2: memcpy((char *)p + 2 * i, &h, 2); break;
    case 4: memcpy((char *)p + 4 * i, &w, 4); break;
    default: memcpy((char *)p + 8 * i, &bits, 8);
    }
}

static inline uint64_t sc_topk_key(uint64_t bits, const sc_topk_format_t *f)
{
    uint64_t k = bits & f->abs_mask;
    return k > f->nan_key ? f->nan_key : k;
}

/* Elements found by a scan, in index order: offsets from their chunk's first element
 * and their bits (width bytes each). */
typedef struct {
    uint32_t *idx;
    void *bits;
    size_t n, cap;
} sc_topk_list_t;

/* A scan appends the elements of x[i..end) whose raw key is above hi to above and those
 * with lo <= raw key <= hi to cand (offsets from base, end - base < 2^32), and returns
 * end, or earlier, at a block boundary, when a list has fewer than
 * SC_TOPK_SCAN_SLACK free entries. lo <= abs_mask; hi = abs_mask puts nothing above. */
#define SC_TOPK_SCAN_SLACK 64
typedef size_t (*sc_topk_scan_fn)(const void *x, size_t base, size_t i, size_t end,
                                  uint64_t lo, uint64_t hi, sc_topk_list_t *above,
                                  sc_topk_list_t *cand);

/* The scans of one vector path, by element width: scan[0] 2 bytes, [1] 4, [2] 8. */
typedef struct {
    sc_topk_scan_fn scan[3];
} sc_topk_kernels_t;

const sc_topk_kernels_t *sc_topk_kernels(sc_cpu_isa_t isa);
extern const sc_topk_kernels_t sc_topk_kernels_scalar;
extern const sc_topk_kernels_t sc_topk_kernels_avx2;
extern const sc_topk_kernels_t sc_topk_kernels_avx512;

static inline sc_topk_scan_fn sc_topk_scan_for(const sc_topk_kernels_t *k, unsigned width)
{
    return k->scan[width == 2 ? 0 : width == 4 ? 1 : 2];
}

/* One selection request, validated: x holds n elements of a float dtype (host memory,
 * or device memory for sc_topk_select_device), 0 < k <= n, index_bits 32 or 64. With a
 * filler (host only), x is written by it as the selection goes: a sample looks ahead,
 * the scan fills each block before scanning it, and a path that reads x
 * otherwise fills all of it first (sc_topk_fill_all) and goes on with filler NULL. */
typedef struct {
    const void *x;
    sc_dtype_t dtype;
    sc_topk_format_t fmt;
    size_t n;
    size_t k;
    int index_bits;
    void *indices;
    void *values;
    const sc_topk_filler_t *filler;
} sc_topk_job_t;

/* Elements filled at a time by the scan: three float32 arrays of this many fit in L2. */
#define SC_TOPK_FILL_BLOCK ((size_t)4096)

/* Fills all of x (blocks on the selector's threads) when the job has a filler; *filled
 * receives job with filler NULL, ready for any path. SC_ERR_NO_MEMORY (sentence set)
 * when the chunks cannot be planned. */
sc_status_t sc_topk_fill_all(sc_topk_t *topk, const sc_topk_job_t *job,
                             sc_topk_job_t *filled);

static inline void sc_topk_job_put(const sc_topk_job_t *job, size_t pos, size_t index,
                                   uint64_t bits)
{
    if (job->index_bits == 32)
        ((uint32_t *)job->indices)[pos] = (uint32_t)index;
    else
        ((uint64_t *)job->indices)[pos] = index;
    sc_topk_bits_put(job->values, pos, job->fmt.width, bits);
}

/* A contiguous part of x owned by one thread during a pass (fewer than 2^32 elements),
 * with what the passes found in it. */
typedef struct {
    size_t begin, end;
    sc_topk_list_t above, cand;
    uint32_t *hist;        /* radix select: this chunk's histogram of one digit */
    size_t gt, eq;         /* elements above the threshold key, and at it */
    size_t take_eq;        /* elements at the threshold key it contributes */
    size_t out;            /* where its elements start in the output */
    size_t keys;           /* where its candidates' keys start in the selector's keys */
    int failed;            /* a scan list outgrew its limit or memory */
} sc_topk_chunk_t;

#define SC_TOPK_HIST_BITS 16

struct sc_topk {
    sc_topk_config_t config;
    int threads;
    sc_cpu_isa_t isa;
    const sc_topk_kernels_t *kernels;
    sc_topk_pool_t *pool;
    sc_topk_chunk_t *chunks;
    size_t chunks_cap;
    uint64_t *keys;        /* sample and candidate keys */
    size_t keys_cap;
    uint32_t *hist;        /* SC_TOPK_HIST_BITS-bit histogram for small arrays */
    /* SC_TOPK_APPROX: the threshold kept across steps (a caller with several tensors
     * swaps in each one's, sc_topk_approx_swap), and the samples taken so far (which
     * give each sample's seed) */
    sc_topk_approx_state_t approx;
    uint64_t approx_samples;
    /* SC_TOPK_RANDOM: calls made, which with the seed gives each call's draws */
    uint64_t random_calls;
    uint64_t *marks;       /* bitmap of the indices drawn, one bit per element */
    size_t marks_cap;      /* in 64-bit words */
};

/* Splits x into chunks for at most topk->threads threads (fewer for small n); returns
 * the number of chunks, or 0 when out of memory (the sentence is set). */
size_t sc_topk_chunks_plan(sc_topk_t *topk, size_t n, size_t min_per_thread);

/* Threads to run nchunks chunks. */
int sc_topk_chunks_threads(const sc_topk_t *topk, size_t nchunks);

/* Grows topk->keys to hold n keys. SC_ERR_NO_MEMORY with a sentence. */
sc_status_t sc_topk_keys_reserve(sc_topk_t *topk, size_t n);

/* Grows a list to hold at least need entries (of up to 8 bytes); 0 on success, -1 when
 * out of memory. */
int sc_topk_list_reserve(sc_topk_list_t *l, size_t need);

/* The r-th largest (1 <= r <= m) of keys[0..m), each below 2^key_bits; hist has
 * 2^SC_TOPK_HIST_BITS entries (m < 2^32). */
uint64_t sc_topk_kth_key(const uint64_t *keys, size_t m, size_t r, unsigned key_bits,
                         uint32_t *hist);

/* A scan of every chunk with the selector's vector path: chunk lists of the elements
 * above hi and in [lo, hi] (see sc_topk_scan_fn), each list at most limit entries (then
 * the chunk is marked failed, 1). SC_ERR_NO_MEMORY when a list cannot grow. With a
 * filler, each block is filled before it is scanned, and a chunk that fails
 * still fills the rest of it: x is all filled when the scan returns. */
sc_status_t sc_topk_chunks_scan(sc_topk_t *topk, const sc_topk_job_t *job, size_t nchunks,
                                uint64_t lo, uint64_t hi, size_t limit);

/* Writes the selection the chunks' lists hold: every above element and the r largest
 * candidates (ties by the lowest index; 0 <= r <= candidates), each chunk's in index
 * order, chunks in order. When 0 < r < candidates, *kth (may be NULL) receives the key
 * of the r-th largest candidate and topk->keys holds the candidates' keys, chunk after
 * chunk (r == candidates takes them all without computing keys). Returns the elements
 * written; SC_ERR_NO_MEMORY as a status. */
sc_status_t sc_topk_lists_emit(sc_topk_t *topk, const sc_topk_job_t *job, size_t nchunks,
                               size_t r, uint64_t *kth, size_t *written);

/* Up to want keys of x sampled in whole runs of 16 consecutive elements, one run at a
 * pseudo-random place (from seed) in each of equal strata, into topk->keys; *m receives
 * how many. SC_ERR_NO_MEMORY with a sentence. */
sc_status_t sc_topk_sample(sc_topk_t *topk, const sc_topk_job_t *job, size_t want,
                           uint64_t seed, size_t *m);

/* Exact selection on the host: radix select, always exact, 2 or more passes. */
sc_status_t sc_topk_radix_host(sc_topk_t *topk, const sc_topk_job_t *job);

/* Exact selection on the host: a sample brackets the k-th key and one scan collects the
 * elements above and inside the bracket; the radix select when the bracket misses. */
sc_status_t sc_topk_exact_host(sc_topk_t *topk, const sc_topk_job_t *job);

/* Approximate selection on the host: one scan against the threshold key kept across
 * calls, at most k elements; *selected receives how many. */
sc_status_t sc_topk_approx_host(sc_topk_t *topk, const sc_topk_job_t *job, size_t *selected);

/* Random-k on the host: k distinct indices drawn from config.seed and the call count. */
sc_status_t sc_topk_random_host(sc_topk_t *topk, const sc_topk_job_t *job);

/* The selection of a job whose buffers are on GPU device (stream: the caller's):
 * topk_device_cuda.c in CUDA builds, topk_device_nocuda.c (SC_ERR_UNSUPPORTED) in
 * host-only builds. *selected is written on success. */
sc_status_t sc_topk_select_device(sc_topk_t *topk, const sc_topk_job_t *job, int device,
                                  sc_stream_t stream, size_t *selected);

#endif
