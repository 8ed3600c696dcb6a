/* Gradient compression: top-k selection (exact, approximate, random), error feedback
 * with optional DGC momentum correction, sparse aggregation of (index, value) pairs,
 * a compressed all-reduce and a comm hook for the gradient reducer.
 *
 * Selection is by magnitude and keeps the sign: the values returned are the signed
 * elements. NaN and Inf count as the largest magnitudes (NaN above Inf), so a loss
 * scaler still sees them. Ties are broken by the lowest index, so the selection is
 * deterministic; indices come back in ascending order.
 *
 * Sparse aggregation sums every rank's pairs into a dense result in rank order (rank 0's
 * pairs first, each rank's in ascending index order), accumulating in float32 for
 * float16/bfloat16 and in the dtype otherwise: every rank gets bitwise the same result,
 * and pairs of different ranks at the same index add up. */
#ifndef SHARDCOMM_COMPRESS_H
#define SHARDCOMM_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "shardcomm/api.h"
#include "shardcomm/comm.h"
#include "shardcomm/reducer.h"
#include "shardcomm/status.h"
#include "shardcomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    SC_TOPK_EXACT = 0, /* the k largest magnitudes, ties by lowest index */
    SC_TOPK_APPROX,    /* threshold estimated from a sample and kept across steps; one
                          pass; returns at most k elements (see sc_topk_select) */
    SC_TOPK_RANDOM     /* k indices drawn uniformly without replacement (for comparison) */
} sc_topk_mode_t;

/* ---- Selection ------------------------------------------------------------------- */

typedef struct sc_topk sc_topk_t;

/* The most CPU threads a selector or a compressor takes (config threads, SC_THREADS). */
#define SC_THREADS_MAX 4096

typedef struct {
    size_t size;         /* sizeof(sc_topk_config_t), set by the macro */
    sc_topk_mode_t mode;
    int threads;         /* CPU threads, up to SC_THREADS_MAX; 0: SC_THREADS, else this
                            rank's cores */
    double sample_ratio; /* SC_TOPK_APPROX: fraction of elements sampled; 0: 0.01 */
    uint64_t seed;       /* SC_TOPK_RANDOM and the approximate sample */
} sc_topk_config_t;

#define SC_TOPK_CONFIG_INIT { sizeof(sc_topk_config_t), SC_TOPK_EXACT, 0, 0.0, 0 }

/* A selector: its threads, scratch memory, the approximate mode's threshold and the
 * random generator. config NULL: SC_TOPK_CONFIG_INIT. SC_ERR_INVALID_ARG names a field
 * out of range. A selector's results depend on its inputs, its configuration and the
 * calls it has made, never on its thread count. */
SC_API sc_status_t sc_topk_create(const sc_topk_config_t *config, sc_topk_t **topk);

/* Selects k of the n elements of x (float32, float64, float16 or bfloat16) by magnitude.
 * Writes the indices (uint32_t when index_bits is 32, uint64_t when 64; 32 needs
 * n <= 2^32) in ascending order and the signed values (x's dtype) to indices[0..*selected)
 * and values[0..*selected); *selected is k (exact, random) or at most k (approximate).
 * indices and values must be aligned to their elements (host and device alike). Errors
 * (SC_ERR_INVALID_ARG, nothing written): k > n, n elements of dtype whose bytes overflow,
 * a NULL or misaligned buffer when k > 0. k == 0 selects nothing.
 *
 * SC_TOPK_APPROX: one scan returns the elements whose magnitude key is at or above a
 * threshold the selector keeps across calls for tensors of the same dtype and n; when
 * more than k qualify, the k largest of them (then the selection is the exact one), so
 * c <= k elements returned are always the c largest of x. The threshold aims at
 * k - k/8 elements and is kept while the count stays within [k - k/4, k]; above, it rises
 * to what would have given k - k/8 this call; below, it is estimated anew from a sample
 * of sample_ratio * n elements (taken after the scan, so that call may return few or
 * none). A threshold that lets far more than k through makes that call exact (about two
 * passes). n < 2^16 is always exact. Deterministic for the same inputs and calls.
 * SC_TOPK_RANDOM: the draws follow from config.seed and the number of earlier successful
 * calls with k > 0 (n/64 words of scratch).
 *
 * x in host memory: stream must be NULL (else SC_ERR_INVALID_ARG); indices and values
 * are host memory too. x on a device (device or managed memory, with stream the caller's
 * CUDA stream or NULL): SC_TOPK_EXACT only (the other modes are SC_ERR_UNSUPPORTED); a
 * CUDA radix select selects the same elements as the CPU, bit for bit; indices and values
 * must be device memory on the same GPU (else SC_ERR_INVALID_ARG), and x aligned
 * to its elements as well; *selected is valid once the stream reaches the call's end (the call
 * synchronizes the stream in this version); scratch comes from the stream's memory pool.
 * A host-only build refuses device buffers with SC_ERR_UNSUPPORTED. x is never read
 * before every check has passed. One thread at a time per selector. In a child process
 * forked after the selector's creation (a data loader's worker), which has none of its
 * threads, the calling thread does all the work: the same selection, more slowly. */
SC_API sc_status_t sc_topk_select(sc_topk_t *topk, const void *x, sc_dtype_t dtype, size_t n,
                                  size_t k, int index_bits, void *indices, void *values,
                                  size_t *selected, sc_stream_t stream);

/* Frees the selector and stops its threads (in a forked child, frees the child's copy
 * and leaves the parent's threads alone). NULL is a no-op. A selector (or compressor)
 * never destroyed has its threads ended when the library is unloaded (dlclose) or the
 * process exits, once their part of a selection running then is done (2 s at most); a
 * selection made after that, on another thread at exit, runs on its caller alone. */
SC_API void sc_topk_destroy(sc_topk_t *topk);

/* ---- Sparse aggregation ---------------------------------------------------------- */

/* Collective: every rank contributes k (index, value) pairs of a dense tensor of n
 * elements of dtype (k the same on every rank; an index of all ones, UINT32_MAX or
 * UINT64_MAX, pads and is skipped, so 32-bit indices need n < 2^32, else
 * SC_ERR_INVALID_ARG). value_dtype is dtype or float16. The pairs are
 * all-gathered and added in rank order (rank 0's first) into dense, which is first
 * zeroed; dense is written only on success. Indices >= n (other than the pad) are
 * SC_ERR_INVALID_ARG on the rank that sent them and SC_ERR_MISMATCH naming that rank on
 * the others; ranks that disagree on n, k, dtype or widths get SC_ERR_MISMATCH. k
 * whose pairs' bytes overflow is SC_ERR_INVALID_ARG, found before any pair is read, and
 * so are buffers not aligned to their elements. Host buffers. */
SC_API sc_status_t sc_sparse_allreduce(sc_comm_t *comm, const void *indices, int index_bits,
                                       const void *values, sc_dtype_t value_dtype, size_t k,
                                       void *dense, sc_dtype_t dtype, size_t n);

/* ---- Compressor: error feedback and the compressed all-reduce -------------------- */

typedef struct sc_compressor sc_compressor_t;

typedef struct {
    size_t size;          /* sizeof(sc_compress_config_t), set by the macro */
    double density;       /* fraction of elements sent, (0, 1]; 0: 0.01 */
    sc_topk_mode_t mode;
    int error_feedback;   /* keep what was not sent and add it to the next step (on: 1) */
    double momentum;      /* DGC momentum correction factor in [0, 1); 0: off */
    int values_fp16;      /* send values as float16 instead of the gradient's dtype
                             (past +-65504 as +-65504: sc_compressed_allreduce) */
    int index_bits;       /* 32 or 64; 0: 32 where n < 2^32, else 64 */
    int warmup_steps;     /* first steps of each tensor reduced dense (error feedback off) */
    int threads;          /* selection threads, as in sc_topk_config_t */
    uint64_t seed;
} sc_compress_config_t;

#define SC_COMPRESS_CONFIG_INIT                                                        \
    { sizeof(sc_compress_config_t), 0.0, SC_TOPK_EXACT, 1, 0.0, 0, 0, 0, 0, 0 }

/* A compressor holds one residual (and one momentum buffer) per key: a tensor or a
 * bucket, created by the first call with that key and the count it gives. config NULL:
 * SC_COMPRESS_CONFIG_INIT. SC_ERR_INVALID_ARG names a field out of range, config.size
 * other than sizeof(sc_compress_config_t) included.
 * Memory per key, in elements of its accumulation type (float32; float64 for float64
 * keys): count for the step's working copy (v = residual + g, which becomes the next
 * residual at the commit, so that a failed step changes nothing), count more for the
 * residual with error feedback and count more for the momentum with momentum
 * correction; plus every rank's pairs (p x k indices and values). */
SC_API sc_status_t sc_compressor_create(const sc_compress_config_t *config,
                                        sc_compressor_t **compressor);

/* Collective, blocking: reduces count elements of sendbuf (float32, float64, float16 or
 * bfloat16; host memory) across comm with op SC_SUM or SC_AVG into recvbuf (which may be
 * sendbuf). With error feedback: v = residual[key] + g (with momentum: u = m u + g,
 * v = residual + u), the top density * count elements of v (rounded to nearest, at
 * least one when count > 0) are selected, sent and cleared from the residual (and from
 * u); what rounding to the values' dtype on the wire lost stays in the residual (a
 * finite value past that dtype's range goes as its largest value of the sign, 65504 for
 * float16, and the rest stays too; an Inf or NaN goes as it is and leaves 0). A step
 * that sends an Inf or NaN drops (0) every other Inf and NaN of v and u too (an
 * overflowed gradient has more than k): the overflow shows in one step's result, not in
 * the steps after it (the exact and approximate selections take Inf and NaN first, so
 * the step it happens in; random-k the first step that draws one). The
 * result is the sparse aggregation of every rank's selection, bitwise the same on every
 * rank. During warm-up, and when every element would be sent in the gradient's dtype
 * (density 1 without values_fp16 or momentum), the reduction is a dense all-reduce. A
 * key reused with another count or dtype, and buffers not aligned to their elements,
 * are SC_ERR_INVALID_ARG; recvbuf is written only
 * on success, the residual is updated only on success, and a key's first step that
 * fails (refused, or its collective failing, dense or sparse) leaves no key behind; a
 * later one leaves the key's state as it was (one loaded from format versions 1 to 3,
 * which carry no origin, stays unchecked: sc_compressor_load).
 * An argument error on one rank fails every rank (the others with SC_ERR_MISMATCH naming
 * it), as do ranks that disagree on count, dtype, op, the
 * step kind (dense or sparse), k, the values' dtype, the index width, mode,
 * error_feedback or momentum. A step whose collective completed on some ranks and
 * failed on others (a peer's failure reaching them after their part was done) leaves
 * the ranks' steps of the key apart (those that completed it committed it): the next
 * step finds it (the ranks compare the key's steps done) and goes on, every rank
 * dropping the key's residual and momentum and taking rank 0's steps, with a warning
 * naming the key (where it was refused, by warm-up, as a mismatch of the step's kind at
 * every later step). One thread at a
 * time per compressor. */
SC_API sc_status_t sc_compressed_allreduce(sc_compressor_t *compressor, sc_comm_t *comm,
                                           int key, const void *sendbuf, void *recvbuf,
                                           size_t count, sc_dtype_t dtype, sc_op_t op);

/* Counters of the last sc_compressed_allreduce (or hook bucket) that succeeded:
 * elements selected on this rank, bytes this rank sent, seconds in selection and in
 * decompression. A failed or refused step leaves them as they were. */
typedef struct {
    size_t selected;
    size_t bytes_sent;
    double select_s;
    double scatter_s;
    int dense;            /* 1 when the step was a dense all-reduce (warm-up, density 1) */
} sc_compress_stats_t;

SC_API sc_status_t sc_compressor_stats(const sc_compressor_t *compressor,
                                       sc_compress_stats_t *stats);

/* Drops every key's state (residual, momentum, warm-up steps done): the keys are as
 * new, and a key may come back with another count or dtype (as after loading another
 * compressor's state). The selector's draws go on where they were (random-k and the
 * sampled selection do not repeat the choices they made before the reset; the state
 * sc_compressor_save writes carries them). One thread at a time, as every call on a
 * compressor. */
SC_API sc_status_t sc_compressor_reset(sc_compressor_t *compressor);

/* Exports the state (per key: count, dtype, residual, momentum, steps done, the
 * approximate mode's kept threshold; the selector's draws so far, from which the seed
 * gives the approximate samples and random selections that follow) into buf of *len
 * bytes; buf NULL: sets *len to the size needed. SC_ERR_INVALID_ARG when *len is too
 * small (nothing written). A compressor of the same configuration that loads it
 * continues bit for bit as this one would. */
SC_API sc_status_t sc_compressor_save(const sc_compressor_t *compressor, void *buf,
                                      size_t *len);

/* Imports state saved by sc_compressor_save (the same configuration's density and
 * momentum are not checked; counts are, per key, on the next call), also in the
 * earlier format without thresholds and draws (the next selections then sample and draw
 * anew). What this compressor's configuration does not keep is skipped (a residual
 * loaded into a compressor without error feedback, a momentum into one without
 * momentum), and what it keeps and the state lacks starts at zero. Each rank loads its
 * own: the state records, per key, the rank and communicator size whose steps made it,
 * and a key's next step on another rank or size (a checkpoint loaded on the wrong rank,
 * or on another world size) is SC_ERR_INVALID_ARG, on every rank, naming both (on a
 * split, with their world ranks: "rank 1 (world rank 3)"); sc_compressor_reset starts
 * afresh. States saved before this check (format versions 1 to 3) carry no origin and
 * are not checked; those of version 4 carry no world rank (the sentence names the rank
 * that made the state by its rank in its communicator alone). A truncated or foreign
 * buffer is SC_ERR_INVALID_ARG and leaves the state unchanged. */
SC_API sc_status_t sc_compressor_load(sc_compressor_t *compressor, const void *buf,
                                      size_t len);

/* Frees the compressor. NULL is a no-op. Not while a call on it runs on another thread
 * (one thread at a time per compressor). */
SC_API void sc_compressor_destroy(sc_compressor_t *compressor);

/* Fills *hook with a top-k comm hook for sc_reducer_create: each bucket is reduced with
 * a compressor of this configuration keyed by bucket index, leaving the sum over ranks of
 * the selected pairs in the bucket (the sparse aggregation's: in rank order, bitwise the
 * same on every rank). When the reducer lays the buckets out anew (the
 * rebuild after the first iteration, each cap autotuning tries) and a bucket index holds
 * other gradients (sc_hook_bucket_t.layout changes), its residual and momentum are
 * dropped (zero; warm-up steps done are kept). The hook's save writes, with the
 * compressor's state, the layout each bucket's state belongs to (its gradients and
 * offsets), and marks the states of bucket indices the current layout no longer has. A
 * loaded state is adopted by a bucket of the index with that layout: a new reducer's
 * first layout, where it differs (gradients marked in another order than the reverse of
 * their registration), starts that bucket from zero and keeps the loaded state aside,
 * and a save meanwhile writes the loaded one; the next layout (the rebuild) adopts it
 * or drops it, and so does a second iteration under the first layout (no rebuild
 * came: gradients marked in the layout's order). A state saved by an earlier version, without layouts, is adopted by the
 * first layout whose bucket of that index has the same count and dtype. A marked state
 * is never adopted; its steps count as its index's.
 * Float buckets only (validate says so otherwise); host buckets only (a reducer with
 * config.stream gets SC_ERR_UNSUPPORTED when a bucket starts). save/load carry the compressor's
 * state. A bucket's step that fails on this rank (its collective, or its selection)
 * leaves this rank's state as it was before that step, as sc_compressed_allreduce does:
 * residual, momentum, counters, the approximate threshold, the selector's draws (those
 * this step took: another bucket's step committed since keeps its own) and the key's
 * origin, and a key its first step made is gone (undone as the next iteration's
 * first bucket starts, or by save or load); so a save after an iteration whose steps all
 * failed writes what a save before it wrote. A selection that fails on one rank (out of
 * memory) fails that bucket's step on every rank (the others with SC_ERR_PEER_FAILED
 * naming it), none committing it. A step whose collective completed on some ranks and
 * failed on others (a peer's failure reaching them after their part was done) is
 * committed where it completed: the reducer cannot go on (its communicator failed), and
 * the states its ranks save are a step apart. So the first iteration after a load
 * compares the ranks' steps per bucket index (an all-reduce of the number of keys and
 * an all-gather of every rank's keys and steps, a few bytes per key, at its first
 * bucket's start), and every index whose steps differ goes back to the fewest on every
 * rank, its residual and momentum dropped, with a warning naming the bucket on every
 * rank (with warm-up, some ranks all-reduced that bucket where others all-gathered it,
 * at every iteration of every reducer loading those states). Every rank loads, or
 * none (a refused load changes nothing, and counts as none): where only some ranks
 * loaded, the next iteration fails on every rank with SC_ERR_MISMATCH, whose sentence
 * names the comparison after sc_reducer_hook_load. config NULL: defaults; a config is checked as by sc_compressor_create. The
 * hook's config text holds density, mode, error_feedback, momentum, values_fp16,
 * index_bits and warmup_steps, so that ranks whose settings differ fail
 * sc_reducer_create (threads and seed may differ). */
SC_API sc_status_t sc_comm_hook_topk(const sc_compress_config_t *config,
                                     sc_comm_hook_t *hook);

#ifdef __cplusplus
}
#endif

#endif
