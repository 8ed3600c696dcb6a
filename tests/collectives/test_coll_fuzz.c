/* Differential fuzz of the host collectives: from a seed, every rank draws the same
 * batches of cases (collective, dtype, op, count near the algorithms' thresholds, in
 * place, root, plain or registered memory, how each request completes), issues a
 * batch's calls at once and completes them in a random order of its own. Results are
 * checked against references computed here and in coll_check.h, never by the library;
 * results every rank holds must be bitwise equal; guards around every buffer stay
 * intact, and nothing is written into a buffer once its call completed. Run through
 * scrun; see usage(). */
#include <getopt.h>
#include <limits.h>
#include <sched.h>

#include "coll_check.h"
#include "../common/sc_fuzz_args.h"

#define FZ_DEFAULT_INFLIGHT 5 /* most cases of one batch issued at once, */
#define FZ_MAX_INFLIGHT 32    /* and what --inflight may raise it to */
#define FZ_MAX_BUF_ELEMS ((size_t)4 << 20)    /* largest buffer of one case (32 MiB), */
#define FZ_BATCH_ELEMS ((size_t)20 << 20)     /* and of a batch of --inflight cases */
#define FZ_DEFAULT_MAX_COUNT ((size_t)4 << 20)
#define FZ_DEFAULT_REGISTERED ((size_t)8 << 20)
#define FZ_CHECK_ALL_BELOW 4096 /* results this long are checked whole on every rank */
#define FZ_SCRIBBLE_BYTE 0xEE   /* what a finished case's buffers are overwritten with */

typedef enum {
    FZ_ALLREDUCE = 0,
    FZ_REDUCE_SCATTER,
    FZ_ALLGATHER,
    FZ_BROADCAST,
    FZ_REDUCE,
    FZ_ALLTOALL,
    FZ_SENDRECV, /* every rank sends to rank + shift and receives from rank - shift */
    FZ_BARRIER,
    FZ_KIND_COUNT
} fz_kind_t;

static const char *const fz_kind_names[FZ_KIND_COUNT] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast",
    "reduce",    "alltoall",       "sendrecv",  "barrier"};

/* Every dtype of types.h; cc_dtypes lacks the float8 types. */
static const sc_dtype_t fz_dtypes[] = {SC_FLOAT32, SC_FLOAT64, SC_FLOAT16,     SC_BFLOAT16,
                                       SC_INT8,    SC_UINT8,   SC_INT32,       SC_INT64,
                                       SC_FLOAT8_E4M3, SC_FLOAT8_E5M2};

/* What the inputs of a reducing case are (data movement always moves random bits). */
typedef enum {
    FZ_EXACT = 0, /* coll_check.h's values (float8: their like), exact in any order */
    FZ_ROUGH,     /* floats with every mantissa bit random: sums round, within a bound */
    FZ_SPECIAL,   /* sum/prod with elements that overflow or hold a NaN on one rank */
} fz_values_t;

typedef enum { FZ_BLOCKING = 0, FZ_WAIT, FZ_TEST_LOOP } fz_done_t;

static const char *const fz_values_names[] = {"exact", "rough", "special"};
static const char *const fz_done_names[] = {"blocking", "wait", "test-loop"};

/* One case: what every rank drew alike, then this rank's buffers and requests. */
typedef struct {
    fz_kind_t kind;
    sc_dtype_t dtype;
    sc_op_t op; /* CC_NO_OP for the data-movement collectives */
    fz_values_t values;
    size_t count;
    int in_place;
    int root;       /* broadcast, reduce; else -1 */
    int shift;      /* sendrecv: the peer's distance to the right */
    int recv_first; /* sendrecv: the receive is posted before the send */
    int pass_null;  /* a non-root passes NULL for the buffer it does not use */
    size_t misalign;
    fz_done_t done;
    uint64_t seed; /* of the inputs */
    long number;   /* over the whole run */

    cc_buf_t sb, rb; /* rb only: the one buffer of an in-place call */
    int has_sb, has_rb;
    const void *send;
    void *recv;
    sc_request_t *reqs[2];
    int unfinished;        /* requests not yet completed */
    uint64_t keep_hash[2]; /* what must come back unchanged */
    uint64_t agreed;       /* hash of a result every rank holds alike; 0: none */
    char desc[256];
} fz_case_t;

typedef struct {
    size_t max_count;
    size_t inflight;
    unsigned kinds; /* bit k: fz_kind_t k may be drawn */
    size_t chunk_bytes, ring_threshold, stage_bytes; /* the library's, from the env */
    size_t registered_bytes;
} fz_limits_t;

/* The communicator the cases run on: the world, or a split of it whose ranks are
 * numbered against the world's (and, halves, two of them running at once on one
 * transport). */
typedef enum { FZ_SPLIT_NONE = 0, FZ_SPLIT_REVERSED, FZ_SPLIT_HALVES } fz_split_t;

static const char *const fz_split_names[] = {"none", "reversed", "halves"};

typedef struct {
    cc_ctx_t ctx;
    sc_comm_t *world;
    fz_split_t split;
    const char *prog, *kinds_arg;
    uint64_t seed;
    fz_limits_t lim;
    uint8_t *arena; /* sc_mem_alloc'ed, lim.registered_bytes; NULL: none */
    long cases_run, batches_run, registered_batches;
    long per_kind[FZ_KIND_COUNT];
    long batch;        /* the batch under test */
    long failed_batch; /* the first batch this rank saw fail; -1: none */
    int repro_printed;
} fz_run_t;

/* ---- the shared pseudo-random sequence ----------------------------------------------- */

typedef struct {
    uint64_t key;
    size_t n;
} fz_rng_t;

static uint64_t fz_next(fz_rng_t *r)
{
    return cc_hash(r->key, 0, r->n++);
}

static size_t fz_below(fz_rng_t *r, size_t n)
{
    return n ? (size_t)(fz_next(r) % n) : 0;
}

static int fz_chance(fz_rng_t *r, unsigned percent)
{
    return fz_below(r, 100) < percent;
}

static fz_rng_t fz_batch_rng(uint64_t seed, long batch)
{
    fz_rng_t r = {cc_mix(seed ^ cc_mix((uint64_t)batch)), 0};
    return r;
}

/* ---- dtypes: float8 next to coll_check.h's eight ------------------------------------- */

static int fz_is_fp8(sc_dtype_t d)
{
    return d == SC_FLOAT8_E4M3 || d == SC_FLOAT8_E5M2;
}

static int fz_is_float(sc_dtype_t d)
{
    return cc_is_float(d) || fz_is_fp8(d);
}

/* float8 elements are loaded, stored and moved as bytes. */
static sc_dtype_t fz_storage(sc_dtype_t d)
{
    return fz_is_fp8(d) ? SC_UINT8 : d;
}

static size_t fz_size(sc_dtype_t d)
{
    return cc_size(fz_storage(d));
}

static const char *fz_dtype_str(sc_dtype_t d)
{
    if (d == SC_FLOAT8_E4M3)
        return "float8_e4m3";
    if (d == SC_FLOAT8_E5M2)
        return "float8_e5m2";
    return cc_dtype_str(d);
}

/* OCP FP8 from its fields (E4M3FN: bias 7, S.1111.111 NaN, no infinity; E5M2: bias 15,
 * IEEE-like), written out here so that a wrong library table cannot hide. */
static double fz_fp8_decode_fields(sc_dtype_t d, unsigned b)
{
    int e4m3 = d == SC_FLOAT8_E4M3, mbits = e4m3 ? 3 : 2, ebits = e4m3 ? 4 : 5;
    int bias = (1 << (ebits - 1)) - 1;
    unsigned e = (b >> mbits) & ((1u << ebits) - 1u);
    unsigned m = b & ((1u << mbits) - 1u);
    double v;

    if (e4m3 && e == 15 && m == 7)
        return NAN;
    if (!e4m3 && e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, 1 - bias - mbits);
    else
        v = ldexp((double)((1u << mbits) | m), (int)e - bias - mbits);
    return (b & 0x80u) ? -v : v;
}

/* The same from a table: references decode every input of every element. */
static double fz_fp8_decode(sc_dtype_t d, uint64_t bits)
{
    static double values[2][256];
    static int filled;
    int e5m2 = d == SC_FLOAT8_E5M2;

    if (!filled) {
        for (unsigned b = 0; b < 256; b++) {
            values[0][b] = fz_fp8_decode_fields(SC_FLOAT8_E4M3, b);
            values[1][b] = fz_fp8_decode_fields(SC_FLOAT8_E5M2, b);
        }
        filled = 1;
    }
    return values[e5m2][bits & 0xffu];
}

/* The finite code nearest to x, ties to the even code (round to nearest even): finite
 * magnitudes grow with the code, so a binary search finds it. Exact for a value the
 * format holds; x must lie within the format's range. */
static uint64_t fz_fp8_search(sc_dtype_t d, double x)
{
    unsigned sign = signbit(x) ? 0x80u : 0u, lo = 0, hi = d == SC_FLOAT8_E4M3 ? 0x7eu : 0x7bu;
    double a = fabs(x), below, above;

    if (a >= fz_fp8_decode(d, hi))
        return sign | hi;
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) / 2;
        if (fz_fp8_decode(d, mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    below = a - fz_fp8_decode(d, lo);
    above = fz_fp8_decode(d, hi) - a;
    if (below < above || (below == above && !(lo & 1u)))
        return sign | lo;
    return sign | hi;
}

/* fz_fp8_search, memoized for the integers -16..16 that most float8 inputs and sums
 * are (the references encode every input of every element). */
static uint64_t fz_fp8_round(sc_dtype_t d, double x)
{
    static uint8_t ints[2][33];
    static int filled;
    int e5m2 = d == SC_FLOAT8_E5M2;

    if (x != rint(x) || fabs(x) > 16 || (x == 0 && signbit(x)))
        return fz_fp8_search(d, x);
    if (!filled) {
        for (int v = -16; v <= 16; v++) {
            ints[0][v + 16] = (uint8_t)fz_fp8_search(SC_FLOAT8_E4M3, v);
            ints[1][v + 16] = (uint8_t)fz_fp8_search(SC_FLOAT8_E5M2, v);
        }
        filled = 1;
    }
    return ints[e5m2][(int)x + 16];
}

static double fz_decode(sc_dtype_t d, uint64_t bits)
{
    return fz_is_fp8(d) ? fz_fp8_decode(d, bits) : cc_bits_to_double(d, bits);
}

/* Only values the dtype holds exactly (cc_double_to_bits truncates bfloat16). */
static uint64_t fz_encode(sc_dtype_t d, double v)
{
    return fz_is_fp8(d) ? fz_fp8_round(d, v) : cc_double_to_bits(d, v);
}

/* IEEE-style fields of the float dtypes: +infinity (0: none), the canonical quiet NaN
 * every reduction's NaN becomes (types.h), the mantissa bits, the exponent of a power
 * of two that overflows when two of them are added or multiplied. */
typedef struct {
    uint64_t inf, qnan, mant;
    int big_exp;
} fz_fmt_t;

static fz_fmt_t fz_fmt(sc_dtype_t d)
{
    switch (d) {
    case SC_FLOAT32: return (fz_fmt_t){0x7f800000u, 0x7fc00000u, 0x7fffffu, 127};
    case SC_FLOAT64:
        return (fz_fmt_t){0x7ff0000000000000ull, 0x7ff8000000000000ull, (1ull << 52) - 1, 1023};
    case SC_FLOAT16: return (fz_fmt_t){0x7c00u, 0x7e00u, 0x3ffu, 15};
    case SC_BFLOAT16: return (fz_fmt_t){0x7f80u, 0x7fc0u, 0x7fu, 127};
    case SC_FLOAT8_E4M3: return (fz_fmt_t){0, 0x7fu, 0x7u, 8};
    default: return (fz_fmt_t){0x7cu, 0x7eu, 0x3u, 15}; /* SC_FLOAT8_E5M2 */
    }
}

static uint64_t fz_sign_bit(sc_dtype_t d)
{
    return 1ull << (8 * fz_size(d) - 1);
}

/* ---- inputs ---------------------------------------------------------------------------- */

/* Largest |integer| a rank contributes to a float8 sum: p of them, in any order, stay
 * where every partial sum is an integer the format holds (16 in e4m3, 8 in e5m2). */
static int fz_fp8_int_width(sc_dtype_t d, int p)
{
    int w = (d == SC_FLOAT8_E4M3 ? 16 : 8) / p;
    return w > 0 ? w : 1;
}

/* The ranks whose inputs of a sum (prod) of dtype d any order combines exactly: sums of
 * integers up to 16 in e4m3 and 8 in e5m2 (|input| 1 past 8 or 16 ranks), of quarters
 * up to 512 in float16 and 64 in bfloat16 (|input| at most 4); products of powers of two
 * up to 2^8 in e4m3 (its largest is 448), 2^15 in e5m2 and float16, 2^127 in bfloat16,
 * and down to their smallest subnormals. INT_MAX where no world size reaches it. */
static int fz_exact_terms(sc_dtype_t d, sc_op_t op)
{
    int prod = op == SC_PROD;

    switch (d) {
    case SC_FLOAT8_E4M3: return prod ? 8 : 16;
    case SC_FLOAT8_E5M2: return prod ? 15 : 8;
    case SC_FLOAT16: return prod ? 15 : 128;
    case SC_BFLOAT16: return prod ? 127 : 16;
    default: return INT_MAX;
    }
}

/* Whether rank's input of a sum (prod) at idx may be other than 0 (+-1). Up to
 * fz_exact_terms ranks every rank's may; past them the ranks fall into groups of at
 * most that many (rank modulo the number of groups) and only idx's group's inputs are
 * not neutral. The float16 and bfloat16 avg keeps every input (its reference,
 * cc_avg_ok, reads coll_check.h's inputs and allows for rounding). */
static int fz_active(sc_dtype_t d, sc_op_t op, int p, int rank, size_t idx)
{
    int most = fz_exact_terms(d, op);
    size_t groups = p > most ? (size_t)(p - 1) / (size_t)most + 1 : 1;

    if (op != SC_SUM && op != SC_PROD && !(op == SC_AVG && fz_is_fp8(d)))
        return 1;
    return (size_t)rank % groups == idx % groups;
}

/* A product's factor: +-1, 2 or 0.5 where the rank is active, else its sign. */
static double fz_prod_factor(sc_dtype_t d, int p, int rank, size_t idx, uint64_t h)
{
    static const double prod[] = {1, 2, -1, 0.5, -2, 1, 1, -1};

    return fz_active(d, SC_PROD, p, rank, idx) ? prod[h % 8] : copysign(1.0, prod[h % 8]);
}

/* float8 inputs that reduce exactly in any order: sum/avg small integers, prod powers
 * of two (|exponent| <= 1 per rank), min/max any finite code (the result is one of
 * them). */
static uint64_t fz_fp8_input(const fz_case_t *k, int p, int rank, size_t idx)
{
    uint64_t h = cc_hash(k->seed, rank, idx);
    int w = fz_active(k->dtype, k->op, p, rank, idx) ? fz_fp8_int_width(k->dtype, p) : 0;

    switch (k->op) {
    case SC_SUM:
    case SC_AVG: return fz_fp8_round(k->dtype, (double)((int)(h % (uint64_t)(2 * w + 1)) - w));
    case SC_PROD: return fz_fp8_round(k->dtype, fz_prod_factor(k->dtype, p, rank, idx, h));
    default:
        h &= 0xffu;
        return isnan(fz_fp8_decode(k->dtype, h)) || isinf(fz_fp8_decode(k->dtype, h))
                   ? h & 0x83u /* exponent cleared: a subnormal or zero */
                   : h;
    }
}

/* Floats with random mantissas in (-8, 8): every sum rounds. */
static uint64_t fz_rough_input(const fz_case_t *k, int rank, size_t idx)
{
    uint64_t h = cc_hash(k->seed, rank, idx);
    double u = (double)(h >> 11) * 0x1p-53; /* [0, 1) */
    return cc_double_to_bits(k->dtype, (2 * u - 1) * ldexp(1.0, (int)(h & 7) - 4));
}

/* Each element of a special case is one class on every rank: (0) a power of two that
 * overflows once two ranks' are added or multiplied (a sum's share one sign), (1) a
 * NaN on one rank (any payload and sign) and small values elsewhere, else small values
 * (integers for sum, powers of two for prod) that reduce exactly. */
static int fz_special_class(const fz_case_t *k, size_t idx, uint64_t *shared)
{
    *shared = cc_hash(k->seed ^ 0xC1A55ull, 0, idx);
    return (int)(*shared % 8);
}

static uint64_t fz_special_input(const fz_case_t *k, int p, int rank, size_t idx)
{
    sc_dtype_t d = k->dtype;
    fz_fmt_t f = fz_fmt(d);
    uint64_t shared, h = cc_hash(k->seed, rank, idx);
    int cls = fz_special_class(k, idx, &shared), w;

    if (cls == 0) {
        uint64_t sign = ((k->op == SC_SUM ? shared : h) >> 32) & 1 ? fz_sign_bit(d) : 0;
        return fz_encode(d, ldexp(1.0, f.big_exp)) | sign;
    }
    if (cls == 1 && rank == (int)((shared >> 8) % (uint64_t)p)) {
        uint64_t sign = (h >> 63) ? fz_sign_bit(d) : 0;
        if (d == SC_FLOAT8_E4M3)
            return 0x7fu | sign;
        return f.inf | ((h & f.mant) ? (h & f.mant) : 1) | sign;
    }
    if (k->op == SC_PROD)
        return fz_encode(d, fz_prod_factor(d, p, rank, idx, h));
    w = fz_is_fp8(d) && fz_fp8_int_width(d, p) < 3 ? fz_fp8_int_width(d, p) : 3;
    if (!fz_active(d, k->op, p, rank, idx))
        w = 0;
    return fz_encode(d, (double)((int)(h % (uint64_t)(2 * w + 1)) - w));
}

/* Rank `rank`'s element idx of case k on p ranks, as the dtype's bits. */
static uint64_t fz_input(const fz_case_t *k, int p, int rank, size_t idx)
{
    if (k->op == CC_NO_OP)
        return cc_input(fz_storage(k->dtype), CC_NO_OP, k->seed, rank, idx);
    switch (k->values) {
    case FZ_ROUGH: return fz_rough_input(k, rank, idx);
    case FZ_SPECIAL: return fz_special_input(k, p, rank, idx);
    default:
        if (fz_is_fp8(k->dtype))
            return fz_fp8_input(k, p, rank, idx);
        if (cc_is_float(k->dtype) && !fz_active(k->dtype, k->op, p, rank, idx)) {
            double v = cc_bits_to_double(k->dtype, cc_input(k->dtype, k->op, k->seed, rank, idx));
            return fz_encode(k->dtype, k->op == SC_PROD ? copysign(1.0, v) : 0.0);
        }
        return cc_input(k->dtype, k->op, k->seed, rank, idx);
    }
}

static void fz_fill(const fz_case_t *k, int p, int rank, void *buf, size_t first, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cc_store(fz_storage(k->dtype), buf, i, fz_input(k, p, rank, first + i));
}

/* ---- reference reductions --------------------------------------------------------------- */

/* The expected element: exact bits, or (approx) a value and an absolute tolerance. */
typedef struct {
    uint64_t bits;
    double value, tol;
    int approx;
} fz_want_t;

/* sum/prod/min/max of every rank's decoded element idx, in double (exact for the
 * inputs used where exactness is claimed); *mag the sum of magnitudes, *pick the bits
 * of the input min/max chose (-0 below +0, as the library specifies). */
static double fz_fold(const fz_case_t *k, int p, size_t idx, double *mag, uint64_t *pick)
{
    double acc = 0;

    *mag = 0;
    for (int r = 0; r < p; r++) {
        uint64_t bits = fz_input(k, p, r, idx);
        double v = fz_decode(k->dtype, bits);
        *mag += fabs(v);
        if (r == 0) {
            acc = v;
            *pick = bits;
            continue;
        }
        switch (k->op) {
        case SC_SUM:
        case SC_AVG: acc += v; break;
        case SC_PROD: acc *= v; break;
        case SC_MIN:
            if (cc_fmin(acc, v) != acc || signbit(cc_fmin(acc, v)) != signbit(acc))
                *pick = bits;
            acc = cc_fmin(acc, v);
            break;
        default:
            if (cc_fmax(acc, v) != acc || signbit(cc_fmax(acc, v)) != signbit(acc))
                *pick = bits;
            acc = cc_fmax(acc, v);
            break;
        }
    }
    return acc;
}

/* Rough sums round at each of the p - 1 additions (float16/bfloat16 once more through
 * float32), avg's products once more: each rounding is at most half an ulp of a
 * magnitude no larger than the sum of magnitudes; p + 1 epsilons of it, plus the
 * smallest subnormal per rounding, leave room. The epsilons are coll_check.h's. */
static void fz_want_rough(const fz_case_t *k, int p, size_t idx, fz_want_t *w)
{
    static const int min_exp[] = {-149, -1074, -24, -133};
    double mag, sum = fz_fold(k, p, idx, &mag, &w->bits);
    double scale = k->op == SC_AVG ? 1.0 / p : 1.0;

    if (k->op == SC_MIN || k->op == SC_MAX)
        return;
    w->approx = 1;
    w->value = sum * scale;
    w->tol = (p + 1) * (cc_avg_tolerance(k->dtype) * mag * scale +
                        ldexp(1.0, min_exp[k->dtype]));
}

/* float8 avg: every input times 1 / p in float32, rounded to the format, then summed
 * (the premultiplied avg of types.h): the exact sum of the rounded products within half
 * an ulp of the magnitudes' sum per addition, as tests/collectives/test_fp8_collectives.c.
 * The products are memoized per input code (p is the same all run). */
static void fz_want_fp8_avg(const fz_case_t *k, int p, size_t idx, fz_want_t *w)
{
    static double scaled[2][256];
    static int scaled_p;
    double sum = 0, mag = 0, ulp = k->dtype == SC_FLOAT8_E4M3 ? 0x1p-3 : 0x1p-2;
    int e5m2 = k->dtype == SC_FLOAT8_E5M2;

    if (scaled_p != p) {
        for (unsigned b = 0; b < 256; b++) {
            for (int t = 0; t < 2; t++) {
                sc_dtype_t d = t ? SC_FLOAT8_E5M2 : SC_FLOAT8_E4M3;
                float q = (float)fz_decode(d, b) * (float)(1.0 / p);
                scaled[t][b] = isfinite(q) ? fz_decode(d, fz_fp8_round(d, q)) : NAN;
            }
        }
        scaled_p = p;
    }
    for (int r = 0; r < p; r++) {
        double q = scaled[e5m2][fz_input(k, p, r, idx) & 0xffu];
        sum += q;
        mag += fabs(q);
    }
    w->approx = 1;
    w->value = sum;
    w->tol = (p - 1) * ulp / 2 * mag;
}

static void fz_want_special(const fz_case_t *k, int p, size_t idx, fz_want_t *w)
{
    sc_dtype_t d = k->dtype;
    fz_fmt_t f = fz_fmt(d);
    uint64_t shared, sign = 0, pick;
    int cls = fz_special_class(k, idx, &shared);
    double mag;

    if (p == 1) { /* one rank's reduction is a copy of its input, NaNs as they are */
        w->bits = fz_input(k, p, 0, idx);
        return;
    }
    if (cls == 1) {
        w->bits = f.qnan;
        return;
    }
    if (cls == 0) {
        for (int r = 0; r < p && k->op == SC_PROD; r++)
            sign ^= fz_input(k, p, r, idx) & fz_sign_bit(d);
        if (k->op == SC_SUM)
            sign = fz_input(k, p, 0, idx) & fz_sign_bit(d);
        /* e4m3 has no infinity: past 448 is its canonical NaN, whatever the sign. */
        w->bits = d == SC_FLOAT8_E4M3 ? f.qnan : (f.inf | sign);
        return;
    }
    w->bits = fz_encode(d, fz_fold(k, p, idx, &mag, &pick));
}

static void fz_want(const fz_case_t *k, int p, size_t idx, fz_want_t *w)
{
    double mag;

    memset(w, 0, sizeof(*w));
    if (k->values == FZ_ROUGH) {
        fz_want_rough(k, p, idx, w);
    } else if (k->values == FZ_SPECIAL) {
        fz_want_special(k, p, idx, w);
    } else if (fz_is_fp8(k->dtype)) {
        if (k->op == SC_AVG) {
            fz_want_fp8_avg(k, p, idx, w);
        } else {
            double v = fz_fold(k, p, idx, &mag, &w->bits);
            if (k->op == SC_SUM || k->op == SC_PROD)
                w->bits = fz_fp8_round(k->dtype, v);
        }
    } else if (k->op == SC_AVG) {
        w->approx = 1;
        cc_avg_ok(k->dtype, k->seed, p, idx, 0, &w->value, &w->tol);
    } else if (cc_is_float(k->dtype) && (k->op == SC_SUM || k->op == SC_PROD) &&
               p > fz_exact_terms(k->dtype, k->op)) {
        w->bits = fz_encode(k->dtype, fz_fold(k, p, idx, &mag, &w->bits)); /* inputs grouped */
    } else {
        w->bits = cc_expect(k->dtype, k->op, k->seed, p, idx, &mag);
    }
}

static int fz_matches(const fz_case_t *k, const fz_want_t *w, uint64_t got)
{
    double g;

    if (!w->approx)
        return got == w->bits;
    g = fz_decode(k->dtype, got);
    return g == w->value || fabs(g - w->value) <= w->tol;
}

/* ---- checks ----------------------------------------------------------------------------- */

/* got[i], lo <= i < hi, against element elem0 + i of the reduction over every rank. */
static void fz_check_reduced(fz_run_t *run, const fz_case_t *k, const void *got, size_t lo,
                             size_t hi, size_t elem0)
{
    cc_ctx_t *c = &run->ctx;
    sc_dtype_t st = fz_storage(k->dtype);
    size_t wrong = 0, first = 0;
    uint64_t first_got = 0;
    fz_want_t w, first_want = {0};

    for (size_t i = lo; i < hi; i++) {
        uint64_t g = cc_load(st, got, i);
        fz_want(k, c->size, elem0 + i, &w);
        if (!fz_matches(k, &w, g) && wrong++ == 0) {
            first = i;
            first_got = g;
            first_want = w;
        }
    }
    if (!wrong)
        return;
    if (first_want.approx)
        cc_fail(c, "first wrong element %zu (%zu wrong in [%zu, %zu)): got %.17g (0x%" PRIx64
                   "), expected %.17g within %g",
                first, wrong, lo, hi, fz_decode(k->dtype, first_got), first_got,
                first_want.value, first_want.tol);
    else if (fz_is_float(k->dtype))
        cc_fail(c, "first wrong element %zu (%zu wrong in [%zu, %zu)): got %.17g (0x%" PRIx64
                   "), expected %.17g (0x%" PRIx64 ")",
                first, wrong, lo, hi, fz_decode(k->dtype, first_got), first_got,
                fz_decode(k->dtype, first_want.bits), first_want.bits);
    else
        cc_fail(c, "first wrong element %zu (%zu wrong in [%zu, %zu)): got %" PRId64
                   " (0x%" PRIx64 "), expected %" PRId64 " (0x%" PRIx64 ")",
                first, wrong, lo, hi, cc_bits_to_int(st, first_got), first_got,
                cc_bits_to_int(st, first_want.bits), first_want.bits);
}

/* got[i], lo <= i < hi, against src_rank's input element src0 + (i - lo). */
static void fz_check_moved(fz_run_t *run, const fz_case_t *k, const void *got, size_t lo,
                           size_t hi, int src_rank, size_t src0)
{
    cc_ctx_t *c = &run->ctx;
    sc_dtype_t st = fz_storage(k->dtype);
    size_t wrong = 0, first = 0;
    uint64_t first_got = 0, first_exp = 0;

    for (size_t i = lo; i < hi; i++) {
        uint64_t g = cc_load(st, got, i), e = fz_input(k, c->size, src_rank, src0 + (i - lo));
        if (g != e && wrong++ == 0) {
            first = i;
            first_got = g;
            first_exp = e;
        }
    }
    if (wrong)
        cc_fail(c, "first wrong element %zu (%zu wrong in [%zu, %zu), from rank %d): got 0x%"
                   PRIx64 ", expected 0x%" PRIx64 " (rank %d's element %zu)",
                first, wrong, lo, hi, src_rank, first_got, first_exp, src_rank,
                src0 + (first - lo));
}

/* Where every rank holds the same result (its hash is compared across ranks), a long
 * one is checked in slices, one per rank: its reference costs p inputs per element. */
static void fz_slice(const cc_ctx_t *c, size_t total, size_t *lo, size_t *hi)
{
    if (total < FZ_CHECK_ALL_BELOW) {
        *lo = 0;
        *hi = total;
        return;
    }
    *lo = total / (size_t)c->size * (size_t)c->rank;
    *hi = c->rank == c->size - 1 ? total : total / (size_t)c->size * (size_t)(c->rank + 1);
}

/* [lo, hi) of p blocks of n elements, block j from rank j's input src0 onwards. */
static void fz_check_blocks(fz_run_t *run, const fz_case_t *k, const void *got, size_t n,
                            size_t lo, size_t hi, size_t src0)
{
    for (int j = 0; j < run->ctx.size && n; j++) {
        size_t b_lo = (size_t)j * n, b_hi = b_lo + n;
        size_t s_lo = lo > b_lo ? lo : b_lo, s_hi = hi < b_hi ? hi : b_hi;
        if (s_lo < s_hi)
            fz_check_moved(run, k, got, s_lo, s_hi, j, src0 + (s_lo - b_lo));
    }
}

static void fz_check_kept(fz_run_t *run, const void *p, size_t bytes, uint64_t hash,
                          const char *what)
{
    if (cc_hash_bytes(p, bytes) != hash)
        cc_fail(&run->ctx, "%s was modified", what);
}

/* Failure reports (cc_fail) name case k. */
static void fz_report_as(fz_run_t *run, const fz_case_t *k)
{
    cc_ctx_t *c = &run->ctx;

    c->coll = k->desc;
    c->dtype = k->dtype;
    c->op = k->op;
    c->count = k->count;
    c->in_place = k->in_place;
    c->root = k->root;
}

/* Failure reports name a call of the test's own (no case). */
static void fz_report_call(fz_run_t *run, const char *what)
{
    fz_case_t none = {.dtype = SC_UINT8, .op = CC_NO_OP, .root = -1};

    fz_report_as(run, &none);
    run->ctx.coll = what;
}

/* Checks case k's result on this rank; returns the hash of a result every rank must
 * hold bit for bit (0 where ranks hold different results). */
static uint64_t fz_check_case(fz_run_t *run, fz_case_t *k)
{
    cc_ctx_t *c = &run->ctx;
    int p = c->size, rank = c->rank, is_root = rank == k->root;
    size_t n = k->count, es = fz_size(k->dtype), lo, hi;
    uint64_t agreed = 0;

    fz_report_as(run, k);
    switch (k->kind) {
    case FZ_ALLREDUCE:
        agreed = cc_hash_bytes(k->rb.p, k->rb.bytes);
        fz_slice(c, n, &lo, &hi);
        fz_check_reduced(run, k, k->rb.p, lo, hi, 0);
        break;
    case FZ_REDUCE_SCATTER:
        fz_check_reduced(run, k, k->recv, 0, n, (size_t)rank * n);
        if (k->in_place) {
            /* The other blocks of the (const) send buffer stay as they were. */
            size_t tail = (size_t)(rank + 1) * n;
            fz_check_kept(run, k->sb.p, (size_t)rank * n * es, k->keep_hash[0],
                          "in place: a block of sendbuf before this rank's");
            fz_check_kept(run, k->sb.p + tail * es, ((size_t)p - (size_t)rank - 1) * n * es,
                          k->keep_hash[1], "in place: a block of sendbuf after this rank's");
        }
        break;
    case FZ_ALLGATHER:
        agreed = cc_hash_bytes(k->rb.p, k->rb.bytes);
        fz_slice(c, n * (size_t)p, &lo, &hi);
        fz_check_blocks(run, k, k->rb.p, n, lo, hi, 0);
        break;
    case FZ_BROADCAST:
        agreed = cc_hash_bytes(k->rb.p, k->rb.bytes);
        fz_slice(c, n, &lo, &hi);
        fz_check_moved(run, k, k->rb.p, lo, hi, k->root, lo);
        break;
    case FZ_REDUCE:
        if (is_root)
            fz_check_reduced(run, k, k->rb.p, 0, n, 0);
        else if (k->in_place)
            fz_check_kept(run, k->rb.p, k->rb.bytes, k->keep_hash[1],
                          "in place on a non-root: the buffer");
        else if (k->has_rb)
            cc_check_untouched(c, k->rb.p, k->rb.bytes, CC_FILL_BYTE, "a non-root's recvbuf");
        break;
    case FZ_ALLTOALL:
        /* Block j came from rank j's block for this rank. */
        fz_check_blocks(run, k, k->rb.p, n, 0, n * (size_t)p, (size_t)rank * n);
        break;
    case FZ_SENDRECV:
        fz_check_moved(run, k, k->rb.p, 0, n, (rank - k->shift + p) % p, 0);
        break;
    default: /* FZ_BARRIER: completing is all it does */
        break;
    }
    if (k->has_sb) {
        /* A send buffer is const, in place too (reduce_scatter's other blocks above). */
        if (!k->in_place)
            fz_check_kept(run, k->sb.p, k->sb.bytes, k->keep_hash[0], "sendbuf");
        cc_buf_check_guards(c, &k->sb, "sendbuf");
    }
    if (k->has_rb)
        cc_buf_check_guards(c, &k->rb, "recvbuf");
    return agreed;
}

/* ---- drawing a batch -------------------------------------------------------------------- */

static size_t fz_env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    char *end;
    unsigned long long x;

    if (!v || !*v)
        return dflt;
    x = strtoull(v, &end, 10);
    return *end ? dflt : (size_t)x;
}

/* Elements of the largest buffer of a case per count: p blocks, or 1. */
static size_t fz_blocks(fz_kind_t kind, int p)
{
    return kind == FZ_REDUCE_SCATTER || kind == FZ_ALLGATHER || kind == FZ_ALLTOALL ? (size_t)p
                                                                                    : 1;
}

/* x - 1, x or x + 1 (never below 0). */
static size_t fz_around(fz_rng_t *r, size_t x)
{
    size_t d = fz_below(r, 3);
    return d == 0 ? (x ? x - 1 : 0) : x + d - 1;
}

/* A count biased to the edges the algorithms have: 0, 1, around the rank count, primes,
 * the 512 bytes a header carries inline (and the registered-memory threshold) or the
 * 4 KiB of a 2-rank collective's, the
 * recursive-doubling/tree threshold, the ring's chunks, the staging windows, pages;
 * sometimes large (1-4 Mi elements, one case in 64). Byte thresholds are met per
 * element and, for the blocked collectives, per block. */
static size_t fz_draw_count(fz_rng_t *r, const fz_limits_t *lim, fz_kind_t kind, int p,
                            size_t es)
{
    static const size_t primes[] = {2,    3,    5,     7,     13,    31,     61,    127,
                                    251,  509,  1021,  2039,  4093,  8191,   16381, 65521,
                                    131071};
    size_t blocks = fz_blocks(kind, p), per = fz_chance(r, 50) ? es : es * blocks;
    size_t n, cap;

    switch (fz_below(r, 16)) {
    case 0: n = 0; break;
    case 1: n = 1 + fz_below(r, 3); break;
    case 2: n = fz_around(r, (size_t)p); break;
    case 3: n = primes[fz_below(r, CC_NELEM(primes))]; break;
    case 4: n = fz_around(r, (fz_chance(r, 50) ? 512 : 4096) / per); break;
    case 5: n = fz_around(r, lim->ring_threshold / per); break;
    case 6: n = fz_around(r, (1 + fz_below(r, 2 * (size_t)p)) * lim->chunk_bytes / per); break;
    case 7:
        /* An allreduce's window is the area's elements, a reduce_scatter's the area's
         * elements over p; past 4,096 windows an op is not staged. */
        n = fz_around(r, (fz_chance(r, 20) ? 4096 : 1 + fz_below(r, 2)) * lim->stage_bytes / per);
        break;
    case 8:
    case 9:
    case 10:
    case 11: n = fz_below(r, 4096); break;
    case 12:
    case 13: n = fz_below(r, (size_t)1 << (10 + fz_below(r, 9))); break;
    case 14: n = fz_around(r, (1 + fz_below(r, 64)) * 4096 / per); break; /* pages */
    default:
        n = fz_chance(r, 25) ? ((size_t)1 << 20) + fz_below(r, (size_t)3 << 20)
                             : fz_below(r, 20000);
        break;
    }
    cap = (FZ_BATCH_ELEMS / lim->inflight < FZ_MAX_BUF_ELEMS ? FZ_BATCH_ELEMS / lim->inflight
                                                              : FZ_MAX_BUF_ELEMS) / blocks;
    if (cap > lim->max_count)
        cap = lim->max_count;
    return n < cap ? n : cap;
}

static sc_op_t fz_draw_op(fz_rng_t *r, fz_kind_t kind, sc_dtype_t d)
{
    sc_op_t op;

    if (kind != FZ_ALLREDUCE && kind != FZ_REDUCE_SCATTER && kind != FZ_REDUCE)
        return CC_NO_OP;
    op = cc_ops[fz_below(r, CC_NELEM(cc_ops))];
    return op == SC_AVG && !fz_is_float(d) ? SC_SUM : op;
}

static fz_values_t fz_draw_values(fz_rng_t *r, sc_dtype_t d, sc_op_t op)
{
    if ((op == SC_SUM || op == SC_PROD) && fz_is_float(d) && fz_chance(r, 20))
        return FZ_SPECIAL;
    if (op != SC_PROD && op != CC_NO_OP && cc_is_float(d) && fz_chance(r, 30))
        return FZ_ROUGH;
    return FZ_EXACT;
}

static void fz_draw_case(fz_rng_t *r, const fz_run_t *run, fz_case_t *k)
{
    int p = run->ctx.size;

    memset(k, 0, sizeof(*k));
    do /* the same draws on every rank, which share --kinds */
        k->kind = (fz_kind_t)fz_below(r, FZ_KIND_COUNT);
    while (!(run->lim.kinds & (1u << k->kind)));
    k->dtype = fz_dtypes[fz_below(r, CC_NELEM(fz_dtypes))];
    k->op = fz_draw_op(r, k->kind, k->dtype);
    k->values = fz_draw_values(r, k->dtype, k->op);
    k->count = k->kind == FZ_BARRIER
                   ? 0
                   : fz_draw_count(r, &run->lim, k->kind, p, fz_size(k->dtype));
    k->in_place = k->kind < FZ_SENDRECV && fz_chance(r, 50);
    k->root = k->kind == FZ_BROADCAST || k->kind == FZ_REDUCE ? (int)fz_below(r, (size_t)p)
                                                              : -1;
    k->shift = k->kind == FZ_SENDRECV ? (int)fz_below(r, (size_t)p) : 0;
    k->recv_first = fz_chance(r, 50);
    k->pass_null = fz_chance(r, 50);
    k->misalign = fz_chance(r, 50) ? fz_size(k->dtype) * (1 + fz_below(r, 3)) : 0;
    /* Send/recv blocking on every rank at once would wait for a receive never posted. */
    k->done = k->kind == FZ_SENDRECV ? (fz_done_t)(1 + fz_below(r, 2))
                                     : (fz_done_t)fz_below(r, 3);
    k->seed = fz_next(r);
}

/* The buffers a case allocates, in elements: a reduce_scatter always its send buffer
 * (in place, its receive buffer is a block of it), the others always their receive
 * buffer (in place, the send buffer is it or a block of it). */
typedef struct {
    size_t send, recv;
    int has_send, has_recv;
} fz_layout_t;

static fz_layout_t fz_layout(const fz_case_t *k, int p)
{
    size_t n = k->count, big = n * (size_t)p;
    fz_layout_t l = {0, 0, 0, 0};

    switch (k->kind) {
    case FZ_BARRIER: return l;
    case FZ_REDUCE_SCATTER: l.send = big; l.recv = n; break;
    case FZ_ALLGATHER: l.send = n; l.recv = big; break;
    case FZ_ALLTOALL: l.send = l.recv = big; break;
    default: l.send = l.recv = n; break;
    }
    l.has_send = k->kind == FZ_REDUCE_SCATTER || !k->in_place;
    l.has_recv = k->kind != FZ_REDUCE_SCATTER || !k->in_place;
    return l;
}

/* The bytes cc_buf_alloc carves from the arena for a case's buffers. */
static size_t fz_case_carved(const fz_case_t *k, int p)
{
    fz_layout_t l = fz_layout(k, p);
    size_t es = fz_size(k->dtype), bytes = 0;

    if (l.has_send)
        bytes += (CC_GUARD + k->misalign + l.send * es + CC_GUARD + 63) & ~(size_t)63;
    if (l.has_recv)
        bytes += (CC_GUARD + k->misalign + l.recv * es + CC_GUARD + 63) & ~(size_t)63;
    return bytes;
}

/* The first cases' numbers of batch b: every batch's size is its first draw. */
static long fz_first_number(const fz_run_t *run, long batch)
{
    long number = 0;

    for (long b = 0; b < batch; b++) {
        fz_rng_t r = fz_batch_rng(run->seed, b);
        number += 1 + (long)fz_below(&r, run->lim.inflight);
    }
    return number;
}

/* Draws batch b; returns its size. *registered: every buffer in the arena. */
static int fz_draw_batch(fz_run_t *run, long b, long first_number, fz_case_t *cases,
                         int *registered)
{
    fz_rng_t r = fz_batch_rng(run->seed, b);
    int ncases = 1 + (int)fz_below(&r, run->lim.inflight), p = run->ctx.size;
    size_t bytes = 0;

    *registered = run->arena && fz_chance(&r, 35);
    for (int i = 0; i < ncases; i++) {
        fz_draw_case(&r, run, &cases[i]);
        cases[i].number = first_number + i;
        bytes += fz_case_carved(&cases[i], p);
    }
    /* The same sizes on every rank, so every rank decides alike. */
    if (bytes > run->lim.registered_bytes)
        *registered = 0;
    for (int i = 0; i < ncases; i++) {
        fz_case_t *k = &cases[i];
        char extra[64] = "";
        if (fz_is_fp8(k->dtype))
            snprintf(extra, sizeof(extra), ", %s", fz_dtype_str(k->dtype));
        if (k->kind == FZ_SENDRECV)
            snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), ", shift %d%s",
                     k->shift, k->recv_first ? ", recv first" : "");
        snprintf(k->desc, sizeof(k->desc),
                 "%s [seed 0x%" PRIx64 " batch %ld case %ld, %d of %d in flight, %s%s, %s "
                 "values, misalign %zu, %s%s]",
                 fz_kind_names[k->kind], run->seed, b, k->number, i + 1, ncases,
                 *registered ? "registered" : "plain", k->pass_null ? ", NULL unused" : "",
                 fz_values_names[k->values], k->misalign, fz_done_names[k->done], extra);
    }
    return ncases;
}

/* ---- running a batch -------------------------------------------------------------------- */

static void fz_print_repro(fz_run_t *run)
{
    if (run->repro_printed)
        return;
    run->repro_printed = 1;
    fprintf(stderr, "reproduce: %sscrun -n %d %s --seed 0x%" PRIx64 " --batch %ld "
            "--max-count %zu --registered-bytes %zu --split %s --inflight %zu --kinds %s\n",
            sc_fuzz_env_prefix(), sc_fuzz_ranks(sc_comm_size(run->world)), run->prog,
            run->seed, run->failed_batch >= 0 ? run->failed_batch : run->batch,
            run->lim.max_count, run->lim.registered_bytes, fz_split_names[run->split],
            run->lim.inflight, run->kinds_arg);
    fprintf(stderr, "(or the whole run up to it: --cases %ld in place of --batch)\n",
            fz_first_number(run, (run->failed_batch >= 0 ? run->failed_batch : run->batch) + 1));
}

/* A library call that fails leaves the run in an unknown state: report and stop (scrun
 * stops the other ranks). */
static void fz_check_status(fz_run_t *run, sc_status_t st, const char *what)
{
    if (st == SC_SUCCESS)
        return;
    cc_fail(&run->ctx, "%s returned %s: %s", what, sc_status_string(st), sc_last_error());
    fz_print_repro(run);
    exit(1);
}

static void fz_alloc_case(fz_run_t *run, fz_case_t *k)
{
    int p = run->ctx.size, rank = run->ctx.rank;
    fz_layout_t l = fz_layout(k, p);
    size_t es = fz_size(k->dtype), block = k->count * es;

    k->has_sb = l.has_send;
    k->has_rb = l.has_recv;
    if (l.has_send) {
        /* A non-root's broadcast sendbuf holds its own pattern, which must not leak. */
        cc_buf_alloc(&k->sb, l.send * es, 0, k->misalign);
        fz_fill(k, p, rank, k->sb.p, 0, l.send);
        k->keep_hash[0] = cc_hash_bytes(k->sb.p, k->sb.bytes);
        k->send = k->sb.p;
    }
    if (l.has_recv) {
        cc_buf_alloc(&k->rb, l.recv * es, CC_FILL_BYTE, k->misalign);
        k->recv = k->rb.p;
    }
    if (!k->in_place) {
        /* Every rank allocated both (registered buffers lie at the same offsets
         * everywhere); a non-root may pass NULL for the one it does not use. */
        if (k->pass_null && rank != k->root && k->kind == FZ_BROADCAST)
            k->send = NULL;
        if (k->pass_null && rank != k->root && k->kind == FZ_REDUCE)
            k->recv = NULL;
        return;
    }
    /* In place: the one buffer holds this rank's input where the call reads it; what
     * the call must leave as it is gets hashed. */
    switch (k->kind) {
    case FZ_REDUCE_SCATTER:
        k->recv = k->sb.p + (size_t)rank * block;
        k->keep_hash[0] = cc_hash_bytes(k->sb.p, (size_t)rank * block);
        k->keep_hash[1] = cc_hash_bytes(k->sb.p + (size_t)(rank + 1) * block,
                                   (size_t)(p - rank - 1) * block);
        return;
    case FZ_ALLGATHER:
        k->send = k->rb.p + (size_t)rank * block;
        fz_fill(k, p, rank, k->rb.p + (size_t)rank * block, 0, k->count);
        return;
    case FZ_BROADCAST:
        if (rank == k->root)
            fz_fill(k, p, rank, k->rb.p, 0, k->count);
        break;
    default: fz_fill(k, p, rank, k->rb.p, 0, l.recv); break;
    }
    k->send = k->rb.p;
    k->keep_hash[1] = cc_hash_bytes(k->rb.p, k->rb.bytes);
}

static void fz_free_case(fz_case_t *k)
{
    if (k->has_sb)
        cc_buf_free(&k->sb);
    if (k->has_rb)
        cc_buf_free(&k->rb);
}

/* A case whose requests all completed: its result checked, then every byte of its
 * buffers overwritten, as a caller may do at once; fz_verify_untouched checks later
 * that no peer wrote there after this rank's requests completed. */
static void fz_finish_case(fz_run_t *run, fz_case_t *k)
{
    k->agreed = fz_check_case(run, k);
    if (k->has_sb)
        memset(k->sb.p, FZ_SCRIBBLE_BYTE, k->sb.bytes);
    if (k->has_rb)
        memset(k->rb.p, FZ_SCRIBBLE_BYTE, k->rb.bytes);
    run->per_kind[k->kind]++;
}

/* After every rank finished the batch (the exchange): nothing wrote into a finished
 * case's buffers or their guards. */
static void fz_verify_untouched(fz_run_t *run, fz_case_t *k)
{
    cc_ctx_t *c = &run->ctx;

    fz_report_as(run, k);
    if (k->has_sb) {
        cc_check_untouched(c, k->sb.p, k->sb.bytes, FZ_SCRIBBLE_BYTE,
                           "sendbuf, after the call completed,");
        cc_buf_check_guards(c, &k->sb, "sendbuf, after the call completed,");
    }
    if (k->has_rb) {
        cc_check_untouched(c, k->rb.p, k->rb.bytes, FZ_SCRIBBLE_BYTE,
                           "recvbuf, after the call completed,");
        cc_buf_check_guards(c, &k->rb, "recvbuf, after the call completed,");
    }
}

static void fz_issue_case(fz_run_t *run, fz_case_t *k)
{
    sc_comm_t *comm = run->ctx.comm;
    sc_request_t **req = k->done == FZ_BLOCKING ? NULL : &k->reqs[0];
    int p = run->ctx.size, rank = run->ctx.rank;
    size_t n = k->count;
    sc_dtype_t d = k->dtype;
    sc_status_t st;

    fz_report_as(run, k);
    switch (k->kind) {
    case FZ_ALLREDUCE: st = sc_allreduce(k->send, k->recv, n, d, k->op, comm, NULL, req); break;
    case FZ_REDUCE_SCATTER:
        st = sc_reduce_scatter(k->send, k->recv, n, d, k->op, comm, NULL, req);
        break;
    case FZ_ALLGATHER: st = sc_allgather(k->send, k->recv, n, d, comm, NULL, req); break;
    case FZ_BROADCAST:
        st = sc_broadcast(k->send, k->recv, n, d, k->root, comm, NULL, req);
        break;
    case FZ_REDUCE:
        st = sc_reduce(k->send, k->recv, n, d, k->op, k->root, comm, NULL, req);
        break;
    case FZ_ALLTOALL: st = sc_alltoall(k->send, k->recv, n, d, comm, NULL, req); break;
    case FZ_SENDRECV: {
        /* Never blocking (fz_draw_case); reqs[0] is the one posted first. */
        int right = (rank + k->shift) % p, left = (rank - k->shift + p) % p;
        sc_request_t **sreq = &k->reqs[k->recv_first], **rreq = &k->reqs[!k->recv_first];
        if (k->recv_first) {
            fz_check_status(run, sc_recv(k->recv, n, d, left, comm, NULL, rreq), "sc_recv");
            st = sc_send(k->send, n, d, right, comm, NULL, sreq);
        } else {
            fz_check_status(run, sc_send(k->send, n, d, right, comm, NULL, sreq), "sc_send");
            st = sc_recv(k->recv, n, d, left, comm, NULL, rreq);
        }
        break;
    }
    default: st = sc_barrier(comm, req); break;
    }
    fz_check_status(run, st, fz_kind_names[k->kind]);
    k->unfinished = (k->reqs[0] != NULL) + (k->reqs[1] != NULL);
    if (k->unfinished != (k->kind == FZ_SENDRECV ? 2 : req != NULL))
        fz_check_status(run, SC_ERR_INTERNAL, "a call that succeeded without setting *req");
    if (!k->unfinished)
        fz_finish_case(run, k);
}

static void fz_complete(fz_run_t *run, fz_case_t *k, sc_request_t *req)
{
    sc_status_t st;

    fz_report_as(run, k);
    if (k->done == FZ_WAIT) {
        st = sc_wait(req);
    } else {
        /* Yield: up to 5 ranks share 2 cores, a spinning rank would starve its peers. */
        while ((st = sc_test(req)) == SC_IN_PROGRESS)
            sched_yield();
    }
    sc_request_free(req);
    fz_check_status(run, st, k->done == FZ_WAIT ? "sc_wait" : "sc_test");
    if (--k->unfinished == 0)
        fz_finish_case(run, k);
}

typedef struct {
    fz_case_t *k;
    sc_request_t *req;
} fz_pending_t;

/* Issues every case of the batch in order (a blocking one finishes on the spot), then
 * completes the requests in an order of this rank's own, each case finishing with its
 * last request. */
static void fz_run_batch(fz_run_t *run, fz_case_t *cases, int ncases)
{
    fz_rng_t order = {cc_hash(run->seed, run->ctx.rank + 1, (size_t)run->batch), 0};
    fz_pending_t pending[2 * FZ_MAX_INFLIGHT];
    int npending = 0;

    for (int i = 0; i < ncases; i++)
        fz_alloc_case(run, &cases[i]);
    for (int i = 0; i < ncases; i++) {
        fz_issue_case(run, &cases[i]);
        for (int j = 0; j < 2; j++) {
            if (cases[i].reqs[j]) {
                pending[npending].k = &cases[i];
                pending[npending++].req = cases[i].reqs[j];
            }
        }
    }
    for (int i = npending - 1; i > 0; i--) {
        int j = (int)fz_below(&order, (size_t)i + 1);
        fz_pending_t t = pending[i];
        pending[i] = pending[j];
        pending[j] = t;
    }
    for (int i = 0; i < npending; i++)
        fz_complete(run, pending[i].k, pending[i].req);
}

/* Every rank's failure count, whether rank 0 ran out of time, and the hashes of the
 * results that must agree, gathered (by a call of its own, on buffers of its own): a
 * failure anywhere ends the run on every rank. Every rank sees the same hashes, so
 * rank 0 alone reports a disagreement. Returns the failures of every rank. */
static int fz_exchange(fz_run_t *run, const fz_case_t *cases, int ncases, int *stop)
{
    enum { HEAD = 2, WIDTH = HEAD + FZ_MAX_INFLIGHT };
    cc_ctx_t *c = &run->ctx;
    int64_t mine[WIDTH] = {c->failures, *stop}, *all;
    int total = 0;

    all = calloc((size_t)c->size * WIDTH, sizeof(int64_t));
    if (!all)
        fz_check_status(run, SC_ERR_NO_MEMORY, "the exchange's buffer");
    for (int i = 0; i < ncases; i++)
        mine[HEAD + i] = (int64_t)cases[i].agreed;
    fz_report_call(run, "the end-of-batch exchange");
    fz_check_status(run, sc_allgather(mine, all, WIDTH, SC_INT64, c->comm, NULL, NULL),
                    "sc_allgather of the failures and result hashes");
    for (int r = 0; r < c->size; r++)
        total += (int)all[r * WIDTH];
    for (int i = 0; i < ncases; i++) {
        for (int r = 1; r < c->size; r++) {
            if (all[r * WIDTH + HEAD + i] == all[HEAD + i])
                continue;
            total++;
            if (c->rank == 0) {
                fz_report_as(run, &cases[i]);
                cc_fail(c, "results differ across ranks: the hash of rank 0's is %016" PRIx64
                           ", of rank %d is %016" PRIx64,
                        (uint64_t)all[HEAD + i], r, (uint64_t)all[r * WIDTH + HEAD + i]);
            }
            break;
        }
    }
    *stop = (int)all[1];
    free(all);
    return total;
}

/* ---- main -------------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: test_coll_fuzz --seed S [--cases N] [--seconds T] [--batch B]\n"
            "                      [--inflight K] [--max-count N] [--registered-bytes R]\n"
            "                      [--split none|reversed|halves] [--kinds K1,K2,..]\n"
            "                      [--verbose]\n"
            "  From seed S (decimal or 0x hex) every rank draws the same batches of 1 to K\n"
            "  cases (default %d, at most %d) and runs them until N cases (default 500) or\n"
            "  T seconds (rank 0's clock, read after each batch) have passed, whichever\n"
            "  comes first. --batch B runs only batch B (the reproducer a failure prints).\n"
            "  Counts go up to N (default %zu; a buffer holds at most %zu elements, a batch\n"
            "  %zu). Registered batches carve their buffers from one sc_mem_alloc of R bytes\n"
            "  (default %zu; 0: none). --split: the cases run on a split of the world with\n"
            "  its ranks in reverse order (reversed), or on two at once, the even and the\n"
            "  odd ranks (halves). --kinds: only these of allreduce reduce_scatter allgather\n"
            "  broadcast reduce alltoall sendrecv barrier (default all). Exits 1 on a\n"
            "  failure, after printing the case and a reproducer.\n",
            FZ_DEFAULT_INFLIGHT, FZ_MAX_INFLIGHT, FZ_DEFAULT_MAX_COUNT, FZ_MAX_BUF_ELEMS,
            FZ_BATCH_ELEMS, FZ_DEFAULT_REGISTERED);
}

/* A comma-separated list of kind names, or "all". */
static int fz_parse_kinds(const char *s, unsigned *kinds)
{
    char buf[256], *save = NULL;

    if (strcmp(s, "all") == 0) {
        *kinds = (1u << FZ_KIND_COUNT) - 1;
        return 1;
    }
    if (strlen(s) >= sizeof(buf))
        return 0;
    strcpy(buf, s);
    *kinds = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int k = 0; k < FZ_KIND_COUNT; k++)
            if (strcmp(t, fz_kind_names[k]) == 0)
                found = 1, *kinds |= 1u << k;
        if (!found)
            return 0;
    }
    return *kinds != 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"seed", required_argument, NULL, 's'},
                                         {"cases", required_argument, NULL, 'n'},
                                         {"seconds", required_argument, NULL, 't'},
                                         {"batch", required_argument, NULL, 'b'},
                                         {"max-count", required_argument, NULL, 'm'},
                                         {"registered-bytes", required_argument, NULL, 'r'},
                                         {"split", required_argument, NULL, 'S'},
                                         {"inflight", required_argument, NULL, 'i'},
                                         {"kinds", required_argument, NULL, 'k'},
                                         {"verbose", no_argument, NULL, 'v'},
                                         {NULL, 0, NULL, 0}};
    fz_run_t run = {.failed_batch = -1};
    fz_case_t cases[FZ_MAX_INFLIGHT];
    size_t max_cases = 500, seed = 0, one_batch = 0;
    double seconds = 0, t0 = cc_now();
    int opt, have_seed = 0, only_one = 0, verbose = 0, failures = 0, stop = 0;
    long number;
    char *end;

    run.lim.max_count = FZ_DEFAULT_MAX_COUNT;
    run.lim.kinds = (1u << FZ_KIND_COUNT) - 1;
    run.kinds_arg = "all";
    run.lim.inflight = FZ_DEFAULT_INFLIGHT;
    run.lim.registered_bytes = FZ_DEFAULT_REGISTERED;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int ok = 1;

        switch (opt) {
        case 's': ok = have_seed = sc_parse_size(optarg, &seed); break;
        case 'n': ok = sc_parse_size(optarg, &max_cases); break;
        case 'b': ok = only_one = sc_parse_size(optarg, &one_batch); break;
        case 'm': ok = sc_parse_size(optarg, &run.lim.max_count); break;
        case 'r': ok = sc_parse_size(optarg, &run.lim.registered_bytes); break;
        case 'i':
            ok = sc_parse_size(optarg, &run.lim.inflight) && run.lim.inflight >= 1 &&
                 run.lim.inflight <= FZ_MAX_INFLIGHT;
            break;
        case 't':
            seconds = strtod(optarg, &end);
            ok = !*end && seconds >= 0;
            break;
        case 'k':
            run.kinds_arg = optarg;
            ok = fz_parse_kinds(optarg, &run.lim.kinds);
            break;
        case 'S':
            ok = 0;
            for (size_t i = 0; i < CC_NELEM(fz_split_names); i++)
                if (strcmp(optarg, fz_split_names[i]) == 0)
                    ok = 1, run.split = (fz_split_t)i;
            break;
        case 'v': verbose = 1; break;
        default: ok = 0; break;
        }
        if (!ok)
            goto bad;
    }
    if (!have_seed || optind != argc)
        goto bad;
    run.prog = argv[0];
    run.seed = (uint64_t)seed;
    /* The sizes the library cuts and switches algorithms at, to draw counts around. */
    run.lim.chunk_bytes = fz_env_size("SC_CHUNK_BYTES", 262144);
    run.lim.ring_threshold = fz_env_size("SC_RING_THRESHOLD", 8192);
    run.lim.stage_bytes = fz_env_size("SC_STAGE_BYTES", 2097152);
    (void)sc_fuzz_env_prefix(); /* the environment before sc_comm_init adds to it */
    fz_report_call(&run, "sc_comm_init_from_env");
    fz_check_status(&run, sc_comm_init_from_env(&run.world), "sc_comm_init_from_env");
    run.ctx.comm = run.world;
    if (run.split != FZ_SPLIT_NONE) {
        int wr = sc_comm_rank(run.world), ws = sc_comm_size(run.world);
        fz_report_call(&run, "sc_comm_split");
        fz_check_status(&run, sc_comm_split(run.world, run.split == FZ_SPLIT_HALVES ? wr % 2 : 0,
                                            ws - wr, &run.ctx.comm), "sc_comm_split");
    }
    run.ctx.rank = sc_comm_rank(run.ctx.comm);
    run.ctx.size = sc_comm_size(run.ctx.comm);
    if (run.lim.registered_bytes) {
        fz_report_call(&run, "sc_mem_alloc");
        fz_check_status(&run, sc_mem_alloc(run.ctx.comm, run.lim.registered_bytes,
                                           (void **)&run.arena), "sc_mem_alloc");
    }
    number = only_one ? fz_first_number(&run, (long)one_batch) : 0;
    for (long b = only_one ? (long)one_batch : 0; !stop; b++) {
        int registered, ncases, seen = run.ctx.failures;
        double bt = cc_now();

        run.batch = b;
        ncases = fz_draw_batch(&run, b, number, cases, &registered);
        number += ncases;
        /* cc_buf_alloc carves from cc_arena while its base is set (cc_buf_free too). */
        cc_arena.base = registered ? run.arena : NULL;
        cc_arena.bytes = run.lim.registered_bytes;
        cc_arena_reset();
        fz_run_batch(&run, cases, ncases);
        run.cases_run += ncases;
        run.batches_run++;
        run.registered_batches += registered;
        stop = only_one || run.cases_run >= (long)max_cases ||
               (seconds > 0 && cc_now() - t0 >= seconds);
        failures = fz_exchange(&run, cases, ncases, &stop);
        /* Every rank has finished the batch: a late write would have landed by now (and
         * is counted by the next exchange). */
        for (int i = 0; i < ncases; i++) {
            fz_verify_untouched(&run, &cases[i]);
            fz_free_case(&cases[i]);
        }
        cc_arena.base = NULL;
        if (run.ctx.failures > seen && run.failed_batch < 0)
            run.failed_batch = b;
        if (verbose && run.ctx.rank == 0)
            for (int i = 0; i < ncases; i++)
                printf("%s %s %s count=%zu in_place=%d root=%d (%.3f s)\n", cases[i].desc,
                       fz_dtype_str(cases[i].dtype), cc_op_str(cases[i].op),
                       cases[i].count, cases[i].in_place, cases[i].root, cc_now() - bt);
        if (failures)
            break;
    }
    if (!failures) {
        int last = 1;
        failures = fz_exchange(&run, cases, 0, &last); /* the last batch's late writes */
    }
    if (failures && (run.ctx.failures || run.ctx.rank == 0))
        fz_print_repro(&run);
    fz_report_call(&run, "the end of the run");
    if (run.arena)
        fz_check_status(&run, sc_mem_free(run.ctx.comm, run.arena), "sc_mem_free");
    if (run.ctx.comm != run.world)
        fz_check_status(&run, sc_comm_destroy(run.ctx.comm), "sc_comm_destroy");
    fz_check_status(&run, sc_comm_destroy(run.world), "sc_comm_destroy");
    if (run.ctx.rank == 0) {
        printf("seed 0x%" PRIx64 ": %ld cases in %ld batches (%ld registered) on %d ranks "
               "(split %s), %d failures, %.2f s;",
               run.seed, run.cases_run, run.batches_run, run.registered_batches,
               run.ctx.size, fz_split_names[run.split], failures, cc_now() - t0);
        for (int i = 0; i < FZ_KIND_COUNT; i++)
            printf(" %s %ld", fz_kind_names[i], run.per_kind[i]);
        printf("\n");
    }
    return failures ? 1 : 0;
bad:
    usage();
    return 2;
}
