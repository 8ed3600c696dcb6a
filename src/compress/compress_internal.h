/* Shared by the files of src/compress/: the layout of a rank's block of (index, value)
 * pairs and the scatter-add of gathered blocks (sparse_pairs.c), and the compressor's
 * per-key state and step (compressor.c, its error feedback in compressor_ef.c), which
 * the compressed all-reduce (compressed_allreduce.c), the checkpoint format
 * (compressor_state.c) and the comm hook (compress_hook.c) drive. */
#ifndef SC_COMPRESS_INTERNAL_H
#define SC_COMPRESS_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "collectives/reduce_kernels.h"
#include "compress/topk_state.h"
#include "core/error.h"
#include "core/worker.h"
#include "shardcomm/compress.h"

/* ---- blocks of pairs (sparse_pairs.c) ---------------------------------------------- */

/* One rank's block in the all-gather: k indices (uint32_t or uint64_t), then k values of
 * vdtype at values_off; each section padded to 8 bytes, so that every rank's block in
 * the gathered buffer is aligned. An index of all ones pads. */
typedef struct {
    size_t k;
    int index_bits;
    sc_dtype_t vdtype;
    size_t values_off;
    size_t bytes;
} sc_pairs_layout_t;

/* Fills *l; SC_ERR_INVALID_ARG (naming caller) when p blocks of it overflow size_t. */
sc_status_t sc_pairs_layout(const char *caller, size_t k, int index_bits, sc_dtype_t vdtype,
                            int p, sc_pairs_layout_t *l);

/* 1 for float32, float64, float16 and bfloat16: the dtypes compression takes. */
int sc_pairs_dtype_ok(sc_dtype_t dtype);

/* Position of the first index >= n other than the pad among k, or k when none. */
size_t sc_pairs_find_bad(const void *indices, int index_bits, size_t k, size_t n);

/* The pad of an index width: UINT32_MAX or UINT64_MAX. */
uint64_t sc_pairs_pad(int index_bits);

/* dense (n elements of dtype) = the sum of the pairs of p blocks at blocks, in rank
 * order and each block's pairs in order, pads skipped, then divided by divisor (1: a
 * sum). float16/bfloat16 accumulate in acc (n floats, caller's scratch) and are rounded
 * once; float32/float64 accumulate in dense. The indices were checked (< n or the pad).
 * With nranges > 0 only those byte ranges of the result are written, each to its dst
 * (sorted, disjoint), and dense is scratch. */
void sc_pairs_scatter(const sc_pairs_layout_t *l, const void *blocks, int p, void *dense,
                      sc_dtype_t dtype, size_t n, int divisor, float *acc,
                      const sc_range_t *ranges, int nranges);

/* 1 when the block's indices never decrease (pads, all ones, come last). */
int sc_pairs_sorted(const sc_pairs_layout_t *l, const void *block);

/* Writes a block that carries no pair and says its rank could not select (the comm
 * hook's failed selection, which every rank then sees in the gathered blocks): all pads,
 * the first value's bytes all ones, which no selection writes (a pad's value is 0). */
void sc_pairs_refuse(const sc_pairs_layout_t *l, void *block);

/* 1 when the block is one sc_pairs_refuse wrote. */
int sc_pairs_refused(const sc_pairs_layout_t *l, const void *block);

/* dst[j] = src[j] converted from sdtype to ddtype (float types), j < k. */
void sc_pairs_convert(const void *src, sc_dtype_t sdtype, void *dst, sc_dtype_t ddtype,
                      size_t k);

/* Index j of a block's index section (index_bits 32 or 64). Inline: the scatter-add
 * and the settling of v call it per pair. */
static inline uint64_t sc_pairs_index(const void *ix, int index_bits, size_t j)
{
    return index_bits == 32 ? ((const uint32_t *)ix)[j] : ((const uint64_t *)ix)[j];
}

/* Element j of a float buffer of dtype, as double. Inline: the settling of v calls it
 * per sent pair. */
static inline double sc_pairs_load(const void *buf, sc_dtype_t dtype, size_t j)
{
    switch (dtype) {
    case SC_FLOAT64: return ((const double *)buf)[j];
    case SC_FLOAT16: return sc_half_to_float(((const uint16_t *)buf)[j]);
    case SC_BFLOAT16: return sc_bfloat16_to_float(((const uint16_t *)buf)[j]);
    default: return ((const float *)buf)[j];
    }
}

/* ---- the compressor (compressor.c) ------------------------------------------------- */

/* One key's state. residual, momentum and v are count elements of acc (float32, or
 * float64 for float64 gradients). A step in flight keeps v = residual + g (or
 * + m u + g) in v, settled where its pairs (in block) are sent; committing it swaps v
 * in as the residual. */
typedef struct sc_ckey {
    int key;
    size_t count;
    sc_dtype_t dtype;      /* the gradient's */
    sc_dtype_t acc;
    void *residual;        /* NULL without error feedback */
    void *momentum;        /* NULL without momentum */
    void *v;               /* allocated by the first sparse step */
    long steps;            /* steps completed */
    /* The rank and communicator size whose steps made the residual and momentum (0 0:
     * none yet): each rank's are its own, so a state taken to another rank or size is
     * refused rather than fed back into another rank's gradients. origin_world is that
     * rank's world rank, which the refusal names where it differs (a split); -1: not
     * known (no origin yet, or a state saved without it). */
    int origin_rank, origin_size, origin_world;
    int unborn;            /* made by a step not yet committed (not loaded): a failed
                              step removes it (sc_compressor_abandon) */
    uint64_t layout;       /* comm hook: the bucket layout the state belongs to (0:
                              loaded from a checkpoint, not adopted yet) */
    uint64_t saved_layout; /* comm hook, loaded: the layout it was saved under (the
                              bucket's contents, sc_hook_bucket_t.layout); 0: not known
                              (a checkpoint of the hook saved without its table) */
    uint64_t round;        /* comm hook: the iteration (hook_round) it last started in;
                              UINT64_MAX: loaded stale, stale at every save until used */
    int layout_starts;     /* comm hook: steps started under this layout */
    /* Comm hook: the state a checkpoint loaded for this key, kept aside (owned) while
     * the layouts give this bucket index another count or dtype, until one gives it the
     * checkpoint's (sc_compressor_key adopts it then). sc_compressor_save writes it in
     * this state's place, with this state's step count. */
    struct sc_ckey *parked;
    /* The step in flight. */
    int dense;
    size_t selected;
    double select_s;       /* the selection's time: sc_compressor_stats reports it once
                              the step commits */
    int drop_nonfinite;    /* the step sends an Inf or NaN: those of v (and of u at
                              the commit) it does not send are dropped (0) */
    sc_pairs_layout_t lay;
    void *blocks;          /* p blocks: this rank's at rank * lay.bytes */
    size_t blocks_cap;     /* bytes */
    void *picked;          /* selected values in the selection's dtype, when it is not
                              the values' dtype on the wire */
    size_t picked_cap;
    sc_topk_approx_state_t approx; /* this key's threshold (SC_TOPK_APPROX) */
    /* At the start of the step in flight (sc_compressor_prepare): this key's threshold,
     * the selector's draws and the key's origin (which the plan records), put back by
     * sc_compressor_abandon. */
    sc_topk_approx_state_t approx_before;
    sc_topk_draws_t draws_before;
    int origin_before[3]; /* origin_rank, origin_size, origin_world */
    /* The comm hook's selection on the compressor's worker (compress_hook.c): the
     * gradient and place it works on, the gate it opens once the block is written (the
     * all-gather, issued in order by the caller, waits for it), and its result. */
    sc_worker_job_t job;
    sc_compressor_t *owner;
    const void *job_g;
    int job_rank;
    int gate;              /* atomic */
    sc_status_t job_status;
    char job_text[SC_ERROR_MAX];
    /* Comm hook: a step started and neither committed nor undone (its bucket failed,
     * so the reducer never finished it, or its finish refused to commit), whether its
     * selection ran, and the selector's draws after it (with draws_before, what it drew:
     * an undo takes back that much, and no later step's). */
    int hook_pending;
    int hook_drew;
    sc_topk_draws_t draws_after;
} sc_ckey_t;

struct sc_compressor {
    sc_compress_config_t cfg; /* resolved: density > 0, index_bits as given */
    sc_topk_t *topk;
    pthread_mutex_t lock;     /* keys and stats: the hook's start and finish may run
                                 on different threads */
    pthread_mutex_t hook_lock; /* comm hook: one undo of a failed iteration's steps at a
                                  time, and the save or load that follows it (two
                                  threads saving one reducer at once both undid) */
    sc_ckey_t **keys;
    int nkeys, keys_cap;
    sc_compress_stats_t stats;
    sc_worker_t *worker;      /* the comm hook's selections, started by its first one */
    char hook_config[192];    /* the comm hook's settings that ranks must share */
    uint64_t hook_round;      /* comm hook: the reducer's iteration it started a bucket
                                 in last (sc_hook_bucket_t.iteration) */
    int hook_align;           /* comm hook: the ranks' steps per bucket index to compare
                                 at the next iteration's first start (set by each load
                                 that succeeds: sc_hook_topk_align) */
    uint64_t hook_complete;   /* comm hook: the latest iteration that started its last
                                 bucket (sc_hook_bucket_t.last), so reached every index
                                 of its layout; 0: none yet */
};

/* sc_compressor_create, with caller naming the public call in error sentences (which
 * name the configuration's field out of range). */
sc_status_t sc_compressor_new(const char *caller, const sc_compress_config_t *config,
                              sc_compressor_t **compressor);

/* The key's state, created with count and dtype when absent. layout 0 (calls): a key
 * that holds another count or dtype is SC_ERR_INVALID_ARG. layout > 0 (the comm hook's
 * bucket layout): a key of another layout gets a fresh state (residual and momentum
 * zero, steps kept), except one loaded from a checkpoint (layout 0) of the same count
 * and dtype, which is adopted. Takes c->lock. */
sc_status_t sc_compressor_key(sc_compressor_t *c, const char *caller, int key, size_t count,
                              sc_dtype_t dtype, uint64_t layout, sc_ckey_t **out);

/* A key's fresh state: residual (with error feedback) and momentum (with momentum)
 * zero, v allocated, steps and layout 0. */
sc_status_t sc_ckey_new(const sc_compressor_t *c, const char *caller, int key, size_t count,
                        sc_dtype_t dtype, sc_ckey_t **out);

/* Frees one key's state. */
void sc_ckey_free(sc_ckey_t *k);

/* Prepares the step of key k on gradient g of this rank (rank of p): plan, then (not
 * during warm-up) select. Nothing of the key's committed state changes (residual,
 * momentum), so a step that fails can be prepared again. */
sc_status_t sc_compressor_prepare(sc_compressor_t *c, const char *caller, sc_ckey_t *k,
                                  const void *g, const sc_comm_t *comm);

/* What sc_compressor_abandon puts back of key k (its approximate threshold and its
 * origin), kept as a step begins; prepare does it, with the selector's draws (the comm
 * hook takes those on its worker, just before the selection). */
void sc_compressor_keep(sc_ckey_t *k);

/* The first half of prepare, which decides what goes on the wire: a dense step during
 * warm-up (k->dense set), else the layout of the blocks (k->lay) and their memory. A
 * state made on another rank or communicator size (a checkpoint loaded on the wrong
 * rank) is SC_ERR_INVALID_ARG. */
sc_status_t sc_compressor_plan(sc_compressor_t *c, const char *caller, sc_ckey_t *k,
                               const sc_comm_t *comm);

/* The second half, after a sparse plan: v, the selection and this rank's block, the pads
 * after what the selection returned included. On an error the block is all pads (it may
 * still go on the wire, carrying nothing). Uses the compressor's selector: one thread at
 * a time. */
sc_status_t sc_compressor_select(sc_compressor_t *c, const char *caller, sc_ckey_t *k,
                                 const void *g, int rank);

/* Commits a prepared step once its collective succeeded: momentum u = m u + g (g still
 * the gradient the step was prepared on) with the entries this rank sent cleared, v
 * (settled by the selection) becomes the residual, steps + 1, and the compressor's
 * counters (sc_compressor_stats) become this step's. */
void sc_compressor_commit(sc_compressor_t *c, sc_ckey_t *k, const void *g, int rank);

/* Drops a step sc_compressor_prepare (or the comm hook) began whose collective failed:
 * the key's approximate threshold and the selector's draws go back to what they were
 * when it began (draws_before, sc_compressor_keep; the comm hook sets it to the draws
 * less this step's own, since later buckets' steps may have drawn and committed), so
 * that the next step selects as if the failed one had not run (the residual
 * is untouched until a commit anyway), and so does its origin (a loaded state of none
 * stays acceptable on any rank); a key the step created goes (k is freed), so
 * that a call refused for its count or dtype leaves no key of that shape behind. Takes
 * c->lock. */
void sc_compressor_abandon(sc_compressor_t *c, sc_ckey_t *k);


/* Key k's residual and momentum zeroed and its steps set to steps (compressor_state.c):
 * every rank does it when the ranks' steps of a key differ (a step committed on some
 * ranks and failed on others), so that their next steps are alike again. */
void sc_compressor_realign(sc_ckey_t *k, long steps);

/* The gathered blocks of a committed sparse step added into dense (k->count elements of
 * k->dtype), divided by divisor; the stats' scatter time set. With nranges > 0 only
 * those byte ranges of the result are written, each to its dst, and dense is scratch
 * (see sc_pairs_scatter). */
void sc_compressor_scatter(sc_compressor_t *c, sc_ckey_t *k, int p, void *dense,
                           int divisor, const sc_range_t *ranges, int nranges);

/* ---- error feedback (compressor_ef.c) ---------------------------------------------- */

/* The selection's filler of key k's v = residual + g (or + m u + g, m the momentum),
 * pointing at *fill, which must outlive the selection. */
typedef struct {
    const sc_ckey_t *k;
    double m;
    const void *g;
} sc_ef_fill_t;
sc_topk_filler_t sc_ef_filler(sc_ef_fill_t *fill);

/* v settled at the k->selected pairs of this step's block (this rank's, indices
 * ascending): less what goes on the wire, 0 where that is not finite. Only v changes,
 * so a step that fails leaves the residual as it was. */
void sc_ef_settle_selected(sc_ckey_t *k, const void *block);

/* Every Inf or NaN of v set to 0 (count elements of acc), when k->drop_nonfinite: what
 * the step did not send of an overflowed gradient is not kept for the next step. */
void sc_ef_drop_nonfinite(sc_ckey_t *k);

/* u = m u + g over the key (the gradient widened chunk by chunk), the entries this rank
 * sent (the k->selected pairs of block) cleared, and with k->drop_nonfinite every Inf
 * or NaN of u: the commit's update of the momentum. */
void sc_ef_momentum(sc_ckey_t *k, double m, const void *g, const void *block);

#endif
