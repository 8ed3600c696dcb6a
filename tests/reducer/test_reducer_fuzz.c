/* Differential fuzz of the gradient reducer: from a seed, every rank draws the same
 * cases, each a model (1-200 gradients of float32/64, float16, bfloat16 and sometimes
 * integers, sizes around 0, 1, the bucket limits and the 1 MiB of a gradient reduced in
 * place), a configuration (caps, views, find_unused, prediv, built-in hook, autotune)
 * and a run of windows (iterations without sync, then a synced one) in which every rank
 * marks its gradients in an order of its own, from one or two threads, skips some with
 * find_unused, and provokes refusals that must change nothing (an index out of range, a
 * gradient marked twice, a NULL, misaligned or foreign pointer, set_sync inside an
 * iteration) or failures that every rank must report (a gradient missing without
 * find_unused). Inputs are small integers times powers of two, so that sums are exact
 * where the pre-division is a power of two; the expected averages are computed here in
 * float64. Checked: the results (each rank a share of the elements every rank holds),
 * their bits across ranks, the layout against the one the header describes (rebuilt in
 * rank 0's ready order), guard bytes around every gradient, gradients left alone by
 * iterations without sync, and nothing written into a gradient once the finalize of its
 * iteration returned. Run through scrun; see usage(). */
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>

#include "reducer_test.h"
#include "../common/sc_fuzz_args.h"

#define FZ_MAX_GRADS 200
#define FZ_MAX_WINDOWS 10
#define FZ_MAX_ITS (FZ_MAX_WINDOWS * 4)
#define FZ_GUARD 64
#define FZ_GUARD_BYTE 0xA5
#define FZ_SCRIBBLE_BYTE 0xEE /* a finished iteration's gradients are overwritten with */
#define FZ_SOLO_BYTES ((size_t)1 << 20) /* reducer.h: a copied gradient reduced alone */
#define FZ_DEFAULT_MAX_BYTES ((size_t)3 << 20)

/* Dimensions a run may leave out (--no), to narrow a failure down. */
enum {
    FZ_NO_VIEWS = 1 << 0,
    FZ_NO_UNUSED = 1 << 1,
    FZ_NO_ACCUMULATE = 1 << 2,
    FZ_NO_THREADS = 1 << 3,
    FZ_NO_ERRORS = 1 << 4,
    FZ_NO_HOOKS = 1 << 5,
    FZ_NO_AUTOTUNE = 1 << 6,
    FZ_NO_INTEGERS = 1 << 7,
    FZ_NO_MISSING = 1 << 8,
    FZ_NO_UNUSED_VARIES = 1 << 9, /* a rank marks the same gradients in every
                                     iteration of a window */
    FZ_NO_COPIES = 1 << 10,       /* views only */
};
static const char *const fz_no_names[] = {"views",   "unused",   "accumulate",
                                          "threads", "errors",   "hooks",
                                          "autotune", "integers", "missing",
                                          "unused_varies", "copies"};

/* Refusals provoked in an iteration (bits), each of which must change nothing. */
enum {
    FZ_E_RANGE = 1 << 0,   /* an index outside [0, n) */
    FZ_E_TWICE = 1 << 1,   /* a gradient marked again */
    FZ_E_SYNC = 1 << 2,    /* set_sync after a mark, or with 2 */
    FZ_E_NULL = 1 << 3,    /* copy mode: NULL for a gradient of elements */
    FZ_E_ALIGN = 1 << 4,   /* copy mode: a pointer off its elements' alignment */
    FZ_E_FOREIGN = 1 << 5, /* views: a pointer other than the view */
};

typedef struct {
    uint64_t key;
    size_t n;
} fz_rng_t;

static uint64_t fz_next(fz_rng_t *r)
{
    return rt_mix(r->key ^ rt_mix(r->n++));
}

static size_t fz_below(fz_rng_t *r, size_t n)
{
    return n ? (size_t)(fz_next(r) % n) : 0;
}

static int fz_chance(fz_rng_t *r, unsigned percent)
{
    return fz_below(r, 100) < percent;
}

/* A hash of a case's key and three small numbers: per-rank draws every rank can make
 * for every rank. */
static uint64_t fz_hash(uint64_t key, uint64_t a, uint64_t b, uint64_t c)
{
    return rt_mix(key ^ rt_mix(a ^ rt_mix(b ^ rt_mix(c + 0x51ull))));
}

/* One iteration of a case's plan. */
typedef struct {
    int sync;
    int window;
    int miss_rank, miss_grad; /* without find_unused: this rank leaves it out; -1 none */
    int threaded;             /* ranks may mark from two threads */
} fz_iter_t;

/* One case: what every rank drew alike. */
typedef struct {
    long number;
    uint64_t key;
    int n;
    sc_grad_desc_t desc[FZ_MAX_GRADS];
    char names[FZ_MAX_GRADS][24];
    int exp2[FZ_MAX_GRADS];   /* inputs are m * 2^exp2 */
    double scale[FZ_MAX_GRADS]; /* 2^exp2: a multiply, where ldexp, a call into libm,
                                   was two fifths of the run's time */
    int mag[FZ_MAX_GRADS];    /* |m| <= mag */
    unsigned __int128 mod_m[FZ_MAX_GRADS]; /* fz_mod's multiplier for 2 mag + 1 */
    int dead[FZ_MAX_GRADS];   /* find_unused: no rank ever marks it */
    size_t cap_bytes, first_bytes; /* the configuration's (0: the default) */
    int view, find_unused, autotune, threads, errors;
    int hook;                 /* -1: none given, else an sc_hook_kind_t */
    double prediv;            /* the configuration's */
    double div;               /* resolved */
    int unused_pct;
    int unused_by_window;     /* a rank skips the same gradients all window long */
    int nits, nwin;
    fz_iter_t its[FZ_MAX_ITS];
    int win_len;              /* most iterations of a window */
    int rebuild_it;           /* the first synced iteration that succeeds; -1: none */
    char desc_text[512];
} fz_case_t;

/* A caller's gradient buffer of one iteration (copy mode), with guards around it. */
typedef struct {
    uint8_t *base;
    uint8_t *p;
    size_t bytes, misalign;
    uint64_t given; /* the hash of what was marked (fz_end_buffers) */
} fz_buf_t;

typedef struct {
    sc_comm_t *comm;
    int rank, size;
    uint64_t seed;
    const char *prog;
    unsigned no;
    const char *no_arg;
    size_t max_bytes;
    int staged;         /* the ranks stage plain memory: shared memory (not UCX_TLS=tcp,self)
                           and SC_STAGE_BYTES not 0; then a large copied gradient is alone */
    size_t env_cap;     /* SC_BUCKET_CAP_MB in bytes; 0: unset */
    long failures;      /* this rank's, over the run */
    long cases_run, windows_checked, refusals, threaded_its, failed_its;
    long per_mode[2];   /* copy, views */
    int verbose;
    double t0, seconds; /* stop after seconds (0: never) on rank 0's clock, */
    long max_cases;     /* or after this many cases, */
    int only_one;       /* or after one */

    /* The case under test. */
    fz_case_t *c;
    sc_reducer_t *red;
    fz_buf_t *bufs;     /* [nits][n] */
    uint64_t win_hash[FZ_MAX_WINDOWS];
    int view_written[FZ_MAX_GRADS]; /* views: written in this window by the framework */
    int order0[FZ_MAX_GRADS];       /* rank 0's order in the rebuild iteration */
    int norder0;
    int rebuilt;
    int case_failures;
} fz_run_t;

/* ---- reporting ------------------------------------------------------------------ */

/* The command that reruns the failed case (the whole seed where none was drawn yet:
 * sc_comm_init failed). */
static void fz_print_repro(const fz_run_t *run)
{
    char one[40] = "";

    if (run->c)
        snprintf(one, sizeof(one), " --case %ld", run->c->number);
    fprintf(stderr, "rank %d: reproduce: %sscrun -n %d %s --seed 0x%" PRIx64 "%s "
            "--max-bytes %zu%s%s\n", run->rank, sc_fuzz_env_prefix(), sc_fuzz_ranks(run->size),
            run->prog, run->seed, one, run->max_bytes, run->no ? " --no " : "",
            run->no ? run->no_arg : "");
}

static void fz_fail(fz_run_t *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fz_fail(fz_run_t *run, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (run->case_failures++ < 8)
        fprintf(stderr, "rank %d: FAIL case %ld [%s]: %s\n", run->rank,
                run->c ? run->c->number : -1L, run->c ? run->c->desc_text : "", msg);
    run->failures++;
}

/* A call whose failure leaves the run in an unknown state: report and end (scrun ends
 * the other ranks). */
static void fz_fatal(fz_run_t *run, sc_status_t st, const char *what)
{
    fz_fail(run, "%s returned %s: %s", what, sc_status_string(st), sc_last_error());
    fz_print_repro(run);
    exit(1);
}

static void fz_ok(fz_run_t *run, sc_status_t st, const char *what)
{
    if (st != SC_SUCCESS)
        fz_fatal(run, st, what);
}

/* A refusal: exactly status, the reducer unchanged (checked by the results). */
static void fz_refused(fz_run_t *run, sc_status_t st, sc_status_t want, const char *what)
{
    run->refusals++;
    if (st == want)
        return;
    if (st == SC_SUCCESS)
        fz_fatal(run, SC_ERR_INTERNAL, what); /* the reducer took it: the state is lost */
    fz_fail(run, "%s returned %s instead of %s: %s", what, sc_status_string(st),
            sc_status_string(want), sc_last_error());
}

/* ---- dtypes and inputs ------------------------------------------------------------ */

static int fz_is_int(sc_dtype_t d)
{
    return d == SC_INT32 || d == SC_INT64;
}

/* Significand bits (with the implicit one) of the format sums are formed in: the
 * gradient's, or the narrow type of a casting hook. */
static int fz_bits(sc_dtype_t d, int hook)
{
    if (hook == SC_HOOK_FP16)
        return 11;
    if (hook == SC_HOOK_BF16)
        return 8;
    switch (d) {
    case SC_FLOAT16: return 11;
    case SC_BFLOAT16: return 8;
    case SC_FLOAT32: return 24;
    default: return 53;
    }
}

static double fz_unit(sc_dtype_t d, int hook)
{
    return fz_is_int(d) ? 0.0 : ldexp(1.0, -fz_bits(d, hook));
}

static uint64_t fz_grad_key(const fz_case_t *c, int r, int it, int g)
{
    return fz_hash(c->key ^ 0x7a1ull, (uint64_t)r, (uint64_t)it, (uint64_t)g);
}

/* h % d by multiplies, with m = fz_mod_multiplier(d) (Lemire, Kaser and Kurz, "Faster
 * remainder by direct computation", 2019: exact for every 64-bit h and d, 128-bit m):
 * the division, once per element of every input and of every sum, was a sixth of the
 * run's time once ldexp was gone (on an AMD EPYC, whose division is among the fast). */
static unsigned __int128 fz_mod_multiplier(uint64_t d)
{
    return ~(unsigned __int128)0 / d + 1;
}

static uint64_t fz_mod(uint64_t h, unsigned __int128 m, uint64_t d)
{
    unsigned __int128 low = m * h, bottom = ((low & UINT64_MAX) * d) >> 64;

    return (uint64_t)((bottom + (low >> 64) * d) >> 64);
}

/* Element e of gradient g, rank r's in iteration it (key from fz_grad_key). */
static double fz_value(const fz_case_t *c, uint64_t key, int g, size_t e)
{
    uint64_t h = rt_mix(key + e);
    int m = (int)fz_mod(h, c->mod_m[g], (uint64_t)(2 * c->mag[g] + 1)) - c->mag[g];

    return (double)m * c->scale[g]; /* exact: |m| < 2^12, 2^exp2 in [2^-3, 2^2] */
}

/* Whether rank r marks gradient g in iteration it. */
static int fz_used(const fz_case_t *c, int r, int it, int g)
{
    uint64_t when = c->unused_by_window ? 1000 + (uint64_t)c->its[it].window : (uint64_t)it;

    if (!c->find_unused)
        return !(c->its[it].miss_rank == r && c->its[it].miss_grad == g);
    if (c->dead[g])
        return 0;
    if (fz_hash(c->key ^ 0x1d1eull, (uint64_t)r, when, 0) % 100 < 5)
        return 0; /* this rank marks nothing in this iteration */
    return fz_hash(c->key ^ 0x0bedull, (uint64_t)r, when, (uint64_t)g) % 100 >=
           (uint64_t)c->unused_pct;
}

/* Rank r's marking order of iteration it: a permutation of 0..n-1 (the unmarked
 * gradients are skipped when marking). */
static void fz_order(const fz_case_t *c, int r, int it, int *order)
{
    uint64_t style = fz_hash(c->key ^ 0x0dd5ull, (uint64_t)r, (uint64_t)it, 0) % 8;

    for (int i = 0; i < c->n; i++)
        order[i] = style == 0 ? i : c->n - 1 - i; /* registration order, or reversed */
    if (style < 2)
        return;
    for (int i = c->n - 1; i > 0; i--) {
        int j = (int)(fz_hash(c->key ^ 0x5b11ull, (uint64_t)r, (uint64_t)it, (uint64_t)i) %
                      (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* Refusals rank r provokes in iteration it. */
static unsigned fz_errors(const fz_case_t *c, int r, int it)
{
    uint64_t h = fz_hash(c->key ^ 0xe770ull, (uint64_t)r, (uint64_t)it, 0);
    unsigned e = 0;

    if (!c->errors)
        return 0;
    for (int k = 0; k < 6; k++)
        if ((h >> (8 * k)) % 100 < 12)
            e |= 1u << k;
    return e;
}

/* ---- drawing a case ---------------------------------------------------------------- */

/* x - 1, x or x + 1 (never below 0). */
static size_t fz_around(fz_rng_t *r, size_t x)
{
    size_t d = fz_below(r, 3);
    return d == 0 ? (x ? x - 1 : 0) : x + d - 1;
}

/* A count biased to the edges: 0, 1, the first bucket's and the cap's elements, half a
 * cap, the 1 MiB from which a copied gradient is reduced alone, pages; within budget
 * bytes. */
static size_t fz_draw_count(fz_rng_t *r, size_t es, size_t cap, size_t first, size_t budget)
{
    size_t n;

    switch (fz_below(r, 14)) {
    case 0: n = 0; break;
    case 1: n = 1; break;
    case 2: n = 2 + fz_below(r, 6); break;
    case 3:
    case 4: n = fz_below(r, 64); break;
    case 5:
    case 6: n = fz_below(r, 4096); break;
    case 7: n = fz_around(r, first / es); break;
    case 8: n = fz_around(r, cap / es); break;
    case 9: n = fz_around(r, (cap / 2 + 1) / es); break;
    case 10: n = fz_around(r, FZ_SOLO_BYTES / es); break;
    case 11: n = fz_below(r, 100000); break;
    default: n = fz_around(r, (1 + fz_below(r, 3)) * 4096 / es); break;
    }
    if (n * es > budget)
        n = fz_below(r, 1 + (budget / es < 300 ? budget / es : 300));
    return n;
}

static sc_dtype_t fz_draw_float(fz_rng_t *r)
{
    static const sc_dtype_t f[] = {SC_FLOAT32, SC_FLOAT64, SC_FLOAT16, SC_BFLOAT16};
    return f[fz_below(r, 4)];
}

static size_t fz_draw_cap(fz_rng_t *r)
{
    switch (fz_below(r, 8)) {
    case 0: return 0; /* the default (or SC_BUCKET_CAP_MB) */
    case 1: return 1 + fz_below(r, 256);
    case 2:
    case 3: return 64 + fz_below(r, 8192);
    case 4:
    case 5: return 4096 * (1 + fz_below(r, 64));
    case 6: return 1 + fz_below(r, (size_t)1 << 20);
    default: return ((size_t)1 << 20) * (1 + fz_below(r, 4));
    }
}

static void fz_draw_case(fz_run_t *run, long number, fz_case_t *c)
{
    fz_rng_t r = {rt_mix(run->seed ^ rt_mix((uint64_t)number ^ 0xCA5Eull)), 0};
    int p = run->size, ints = 0, dmode;
    size_t budget = run->max_bytes, es, bytes = 0;
    sc_dtype_t one;

    memset(c, 0, sizeof(*c));
    c->number = number;
    c->key = fz_next(&r);
    switch (fz_below(&r, 20)) {
    case 0: c->n = 0; break;
    case 1:
    case 2: c->n = 1; break;
    case 3:
    case 4:
    case 5:
    case 6:
    case 7: c->n = 2 + (int)fz_below(&r, 7); break;
    case 8:
    case 9:
    case 10:
    case 11:
    case 12:
    case 13: c->n = 9 + (int)fz_below(&r, 32); break;
    default: c->n = 41 + (int)fz_below(&r, FZ_MAX_GRADS - 40); break;
    }
    c->view = (run->no & FZ_NO_COPIES) || (!(run->no & FZ_NO_VIEWS) && fz_chance(&r, 40));
    c->find_unused = !(run->no & FZ_NO_UNUSED) && fz_chance(&r, 40);
    c->threads = !(run->no & FZ_NO_THREADS) && fz_chance(&r, 15);
    c->errors = !(run->no & FZ_NO_ERRORS) && fz_chance(&r, 40);
    c->cap_bytes = fz_draw_cap(&r);
    c->first_bytes = fz_chance(&r, 30) ? 0 : fz_chance(&r, 20) ? c->cap_bytes : fz_draw_cap(&r);
    /* The dtypes: one float type, float32 alone (the casting hooks take only it), any
     * floats, or floats and integers (then prediv is 1). */
    dmode = (int)fz_below(&r, 10);
    if (dmode == 9 && (run->no & FZ_NO_INTEGERS))
        dmode = 8;
    one = dmode < 3 ? SC_FLOAT32 : fz_draw_float(&r);
    c->hook = -1;
    if (dmode < 3 && !(run->no & FZ_NO_HOOKS)) {
        static const int hooks[] = {-1, -1, -1, SC_HOOK_ALLREDUCE, SC_HOOK_FP16, SC_HOOK_BF16};
        c->hook = hooks[fz_below(&r, 6)];
    }
    {
        size_t cap = c->cap_bytes ? c->cap_bytes : (size_t)25 << 20;
        size_t first = c->first_bytes ? c->first_bytes : (size_t)1 << 20;
        for (int g = 0; g < c->n; g++) {
            sc_dtype_t d = dmode < 6 ? one : fz_draw_float(&r);
            if (dmode == 9 && fz_chance(&r, 30))
                d = fz_chance(&r, 50) ? SC_INT32 : SC_INT64;
            ints |= fz_is_int(d);
            es = rt_size(d);
            c->desc[g].dtype = d;
            c->desc[g].count = fz_draw_count(&r, es, cap, first, budget);
            budget -= c->desc[g].count * es;
            snprintf(c->names[g], sizeof(c->names[g]), "g%d.%s", g, sc_dtype_name(d));
            c->desc[g].name = c->names[g];
            c->exp2[g] = fz_is_int(d) ? 0 : (int)fz_below(&r, 6) - 3;
            c->scale[g] = ldexp(1.0, c->exp2[g]);
            c->dead[g] = fz_chance(&r, 5);
        }
    }
    /* The pre-division: the default (the comm size), a sum, powers of two, 3. */
    switch (ints ? 5 : fz_below(&r, 10)) {
    case 0: case 1: case 2: case 3: case 4: c->prediv = 0; break;
    case 5: c->prediv = 1; break;
    case 6: c->prediv = 2; break;
    case 7: c->prediv = 3; break;
    case 8: c->prediv = p; break;
    default: c->prediv = 8; break;
    }
    c->div = c->prediv > 0 ? c->prediv : p;
    c->unused_pct = (int)(fz_chance(&r, 25) ? 0 : fz_chance(&r, 50) ? 10 : fz_chance(&r, 70) ? 40 : 95);
    c->autotune = !(run->no & FZ_NO_AUTOTUNE) && fz_chance(&r, 4);
    c->unused_by_window = (run->no & FZ_NO_UNUSED_VARIES) || fz_chance(&r, 30);

    /* The plan: windows of 0-3 iterations without sync, then a synced one. */
    c->nwin = c->autotune ? FZ_MAX_WINDOWS : 1 + (int)fz_below(&r, 5);
    c->win_len = 1;
    c->rebuild_it = -1;
    for (int w = 0; w < c->nwin; w++) {
        int acc = (run->no & FZ_NO_ACCUMULATE) || fz_chance(&r, 50) ? 0 : 1 + (int)fz_below(&r, 3);
        if (acc + 1 > c->win_len)
            c->win_len = acc + 1;
        for (int k = 0; k <= acc; k++) {
            fz_iter_t *it = &c->its[c->nits++];
            it->sync = k == acc;
            it->window = w;
            it->threaded = c->threads && fz_chance(&r, 60);
            it->miss_rank = it->miss_grad = -1;
            /* A synced iteration that misses a gradient marked earlier in its window
             * varies the gradients marked within the window too. */
            if (!c->find_unused && c->n > 0 && !(run->no & FZ_NO_MISSING) && fz_chance(&r, 6) &&
                !(c->unused_by_window && it->sync && acc > 0)) {
                it->miss_rank = (int)fz_below(&r, (size_t)p);
                it->miss_grad = (int)fz_below(&r, (size_t)c->n);
            }
            if (it->sync && it->miss_rank < 0 && c->rebuild_it < 0) {
                c->rebuild_it = c->nits - 1;
                it->threaded = 0; /* rank 0's order, which the rebuild follows, known here */
            }
        }
    }
    /* Magnitudes: a rank's sum over a window, summed over the ranks, stays an integer
     * times 2^exp2 that the format holds (2^bits), so that with a pre-division by a
     * power of two every sum is exact. */
    for (int g = 0; g < c->n; g++) {
        int bits = fz_bits(c->desc[g].dtype, c->hook), terms = p * c->win_len;
        long m = bits >= 24 || fz_is_int(c->desc[g].dtype) ? 1000 : (1L << bits) / terms;
        c->mag[g] = (int)(m < 1 ? 1 : m);
        c->mod_m[g] = fz_mod_multiplier((uint64_t)(2 * c->mag[g] + 1));
    }

    for (int g = 0; g < c->n; g++)
        bytes += c->desc[g].count * rt_size(c->desc[g].dtype);
    snprintf(c->desc_text, sizeof(c->desc_text),
             "seed 0x%" PRIx64 " case %ld: %d gradients (%zu bytes, %s), cap %zu, first %zu, "
             "%s, find_unused %d%s, prediv %g, hook %s, autotune %d, threads %d, errors %d, "
             "%d windows in %d iterations",
             run->seed, number, c->n, bytes,
             dmode < 3 ? "float32" : dmode < 6 ? sc_dtype_name(one)
                         : dmode < 9 ? "mixed floats" : "floats and integers",
             c->cap_bytes, c->first_bytes, c->view ? "views" : "copies", c->find_unused,
             c->unused_by_window ? " (per window)" : "", c->prediv,
             c->hook < 0 ? "none" : c->hook == SC_HOOK_FP16 ? "fp16"
                         : c->hook == SC_HOOK_BF16 ? "bf16" : "allreduce",
             c->autotune, c->threads, c->errors, c->nwin, c->nits);
}

/* ---- the layout the header describes ------------------------------------------------ */

/* Buckets as reducer.h lays them out, for the fill order `fill`: one open bucket per
 * dtype, a dtype's first up to first bytes, the next up to cap; a gradient larger than
 * the limit alone (closing nothing open, counting as a closed bucket); a copied host
 * gradient of at least 1 MiB alone, beside the others, with the plain hook where the
 * ranks stage (solo); buckets numbered by the fill position of their last gradient.
 * Writes each gradient's bucket and offset; returns the number of buckets. */
static int fz_model_layout(const fz_case_t *c, const int *fill, size_t cap, size_t first,
                           int solo, int *bucket, size_t *offset)
{
    int open[SC_DTYPE_COUNT], nclosed[SC_DTYPE_COUNT], nb = 0;
    int last[FZ_MAX_GRADS], rank_of[FZ_MAX_GRADS];
    size_t fill_bytes[FZ_MAX_GRADS];

    for (int t = 0; t < SC_DTYPE_COUNT; t++)
        open[t] = -1, nclosed[t] = 0;
    for (int pos = 0; pos < c->n; pos++) {
        int g = fill[pos], t = (int)c->desc[g].dtype;
        size_t bytes = c->desc[g].count * rt_size(c->desc[g].dtype);
        size_t limit = nclosed[t] ? cap : first;
        int alone = solo && bytes >= FZ_SOLO_BYTES;

        if (!alone && open[t] >= 0 && fill_bytes[open[t]] + bytes > limit) {
            open[t] = -1;
            nclosed[t]++;
            limit = cap;
        }
        if (alone || bytes > limit) {
            bucket[g] = nb;
            offset[g] = 0;
            fill_bytes[nb] = bytes;
            last[nb++] = pos;
            nclosed[t] += !alone;
            continue;
        }
        if (open[t] < 0) {
            open[t] = nb;
            fill_bytes[nb++] = 0;
        }
        bucket[g] = open[t];
        offset[g] = fill_bytes[open[t]] / rt_size(c->desc[g].dtype);
        fill_bytes[open[t]] += bytes;
        last[open[t]] = pos;
    }
    /* Number the buckets by their last gradient's position. */
    for (int b = 0; b < nb; b++) {
        rank_of[b] = 0;
        for (int o = 0; o < nb; o++)
            rank_of[b] += last[o] < last[b];
    }
    for (int g = 0; g < c->n; g++)
        bucket[g] = rank_of[bucket[g]];
    return nb;
}

/* The fill order: reverse registration before the rebuild, rank 0's ready order of
 * the rebuild iteration (the gradients it never marked after, in reverse registration
 * order) from then on. */
static void fz_fill_order(const fz_run_t *run, int *fill)
{
    const fz_case_t *c = run->c;
    char seen[FZ_MAX_GRADS] = {0};
    int k = 0;

    if (run->rebuilt)
        for (int j = 0; j < run->norder0; j++)
            seen[fill[k++] = run->order0[j]] = 1;
    for (int g = c->n - 1; g >= 0; g--)
        if (!seen[g])
            fill[k++] = g;
}

static void fz_check_layout(fz_run_t *run, size_t cap, int when, int nbuckets_seen)
{
    const fz_case_t *c = run->c;
    int fill[FZ_MAX_GRADS], bucket[FZ_MAX_GRADS], nb;
    size_t offset[FZ_MAX_GRADS], first = c->first_bytes ? c->first_bytes : (size_t)1 << 20;
    int solo = !c->view && (c->hook < 0 || c->hook == SC_HOOK_ALLREDUCE) && run->staged;
    uint8_t *base[FZ_MAX_GRADS];
    int b;
    size_t off;
    sc_status_t st;

    fz_fill_order(run, fill);
    nb = fz_model_layout(c, fill, cap, first, solo, bucket, offset);
    if (nbuckets_seen >= 0 && nbuckets_seen != nb)
        fz_fail(run, "after iteration %d: stats.buckets is %d, the layout of reducer.h has %d "
                "(cap %zu, first %zu, %s)", when, nbuckets_seen, nb, cap, first,
                run->rebuilt ? "rebuilt in rank 0's order" : "reverse registration order");
    for (int k = 0; k < nb; k++)
        base[k] = NULL;
    for (int g = 0; g < c->n; g++) {
        b = -1;
        off = 0;
        fz_ok(run, sc_reducer_grad_bucket(run->red, g, &b, &off), "sc_reducer_grad_bucket");
        if (b != bucket[g] || off != offset[g]) {
            fz_fail(run, "after iteration %d: gradient %d (%s, %zu elements) is in bucket %d "
                    "at %zu, the layout of reducer.h puts it in bucket %d at %zu (cap %zu, "
                    "first %zu, %s)", when, g, c->names[g], c->desc[g].count, b, off,
                    bucket[g], offset[g], cap, first,
                    run->rebuilt ? "rebuilt in rank 0's order" : "reverse registration order");
            return;
        }
        if (c->view && c->desc[g].count) {
            /* Views of one bucket lie at their offsets from one base. */
            size_t es = rt_size(c->desc[g].dtype);
            uint8_t *v = sc_reducer_grad_view(run->red, g);
            if (!v || (uintptr_t)v % es) {
                fz_fail(run, "after iteration %d: gradient %d's view is %p", when, g, (void *)v);
                return;
            }
            if (!base[b])
                base[b] = v - off * es;
            if (v != base[b] + off * es) {
                fz_fail(run, "after iteration %d: gradient %d's view %p is not at offset %zu "
                        "of its bucket %d (base %p)", when, g, (void *)v, off, b,
                        (void *)base[b]);
                return;
            }
        }
    }
    st = sc_reducer_grad_bucket(run->red, c->n, &b, &off);
    if (st != SC_ERR_INVALID_ARG)
        fz_fail(run, "sc_reducer_grad_bucket(%d) of %d gradients returned %s", c->n, c->n,
                sc_status_string(st));
}

/* ---- buffers --------------------------------------------------------------------- */

static fz_buf_t *fz_buf(fz_run_t *run, int it, int g)
{
    return &run->bufs[(size_t)it * (size_t)(run->c->n ? run->c->n : 1) + (size_t)g];
}

static void fz_buf_alloc(fz_run_t *run, fz_buf_t *b, size_t bytes, size_t misalign)
{
    b->bytes = bytes;
    b->misalign = misalign;
    b->base = malloc(2 * FZ_GUARD + misalign + bytes);
    if (!b->base)
        fz_fatal(run, SC_ERR_NO_MEMORY, "malloc of a gradient");
    memset(b->base, FZ_GUARD_BYTE, 2 * FZ_GUARD + misalign + bytes);
    b->p = b->base + FZ_GUARD + misalign;
}

static int fz_guards_ok(const fz_buf_t *b)
{
    for (size_t i = 0; i < FZ_GUARD + b->misalign; i++)
        if (b->base[i] != FZ_GUARD_BYTE)
            return 0;
    for (size_t i = 0; i < FZ_GUARD; i++)
        if (b->p[b->bytes + i] != FZ_GUARD_BYTE)
            return 0;
    return 1;
}

static void fz_check_guards(fz_run_t *run, const fz_buf_t *b, int it, int g, const char *when)
{
    if (b->base && !fz_guards_ok(b))
        fz_fail(run, "iteration %d: the guard bytes around gradient %d (%s) were overwritten "
                "%s", it, g, run->c->names[g], when);
}

/* Its iteration ended: every byte must stay FZ_SCRIBBLE_BYTE (fz_check_late_writes). */
static void fz_scribble(fz_buf_t *b)
{
    if (b->base)
        memset(b->p, FZ_SCRIBBLE_BYTE, b->bytes);
}

/* ---- one iteration --------------------------------------------------------------- */

/* What one rank's marking of an iteration shares with its helper thread. */
typedef struct {
    fz_run_t *run;
    int it;
    const int *seq; /* the gradients to mark, in order */
    int nseq;
    int next;       /* atomic: the next position to claim */
} fz_marking_t;

/* Writes this rank's gradient g of iteration it where the reducer reads it (its own
 * buffer, or its view, where the framework accumulates within a window) and marks it. */
static void fz_mark_one(fz_run_t *run, int it, int g)
{
    const fz_case_t *c = run->c;
    sc_dtype_t d = c->desc[g].dtype;
    size_t n = c->desc[g].count;
    uint64_t key = fz_grad_key(c, run->rank, it, g);
    void *grad = NULL;
    char what[96];

    if (c->view) {
        uint8_t *v = sc_reducer_grad_view(run->red, g);
        int acc = run->view_written[g];
        for (size_t e = 0; e < n; e++)
            rt_store(d, v, e, (acc ? rt_load(d, v, e) : 0.0) + fz_value(c, key, g, e));
        run->view_written[g] = 1;
        grad = fz_hash(key, 1, 2, 3) % 2 ? v : NULL;
    } else {
        fz_buf_t *b = fz_buf(run, it, g);
        grad = b->p;
        for (size_t e = 0; e < n; e++)
            rt_store(d, b->p, e, fz_value(c, key, g, e));
        b->given = sc_test_hash(SC_TEST_HASH_INIT, b->p, b->bytes);
        if (n == 0 && fz_hash(key, 4, 5, 6) % 2)
            grad = NULL; /* legal for a gradient of zero elements */
    }
    snprintf(what, sizeof(what), "sc_reducer_mark_ready(%d) in iteration %d", g, it);
    fz_ok(run, sc_reducer_mark_ready(run->red, g, grad), what);
}

static void *fz_helper(void *arg)
{
    fz_marking_t *mk = arg;
    int k;

    while ((k = __atomic_fetch_add(&mk->next, 1, __ATOMIC_RELAXED)) < mk->nseq)
        fz_mark_one(mk->run, mk->it, mk->seq[k]);
    return NULL;
}

/* Refusals before gradient g's own mark: each must leave it unmarked. */
static void fz_refuse_before(fz_run_t *run, int it, int g, unsigned errs)
{
    const fz_case_t *c = run->c;
    size_t es = rt_size(c->desc[g].dtype), n = c->desc[g].count;

    if ((errs & FZ_E_NULL) && !c->view && n)
        fz_refused(run, sc_reducer_mark_ready(run->red, g, NULL), SC_ERR_INVALID_ARG,
                   "mark_ready with NULL for a gradient of elements");
    if ((errs & FZ_E_ALIGN) && !c->view && n && es > 1)
        fz_refused(run, sc_reducer_mark_ready(run->red, g, fz_buf(run, it, g)->p + 1),
                   SC_ERR_INVALID_ARG, "mark_ready with a misaligned pointer");
    if ((errs & FZ_E_FOREIGN) && c->view && n) {
        double other[4];
        fz_refused(run, sc_reducer_mark_ready(run->red, g, other), SC_ERR_INVALID_ARG,
                   "mark_ready with a pointer other than the view");
    }
}

/* Refusals after some gradients were marked (marked[0..nmarked)). */
static void fz_refuse_after(fz_run_t *run, int it, const int *marked, int nmarked, unsigned errs)
{
    const fz_case_t *c = run->c;
    static const int bad[] = {-1, 0, 7, INT_MIN};

    if (errs & FZ_E_RANGE) {
        int i = bad[fz_hash(c->key, (uint64_t)run->rank, (uint64_t)it, 9) % 4];
        i = i == INT_MIN || i < 0 ? i : c->n + i;
        fz_refused(run, sc_reducer_mark_ready(run->red, i, NULL), SC_ERR_INVALID_ARG,
                   "mark_ready with an index out of range");
    }
    if ((errs & FZ_E_TWICE) && nmarked > 0) {
        int g = marked[fz_hash(c->key, (uint64_t)run->rank, (uint64_t)it, 10) % (uint64_t)nmarked];
        void *p = c->view ? sc_reducer_grad_view(run->red, g)
                          : c->desc[g].count ? fz_buf(run, it, g)->p : NULL;
        fz_refused(run, sc_reducer_mark_ready(run->red, g, p), SC_ERR_INVALID_ARG,
                   "mark_ready of a gradient already marked");
    }
    if ((errs & FZ_E_SYNC) && nmarked > 0)
        fz_refused(run, sc_reducer_set_sync(run->red, c->its[it].sync), SC_ERR_INVALID_ARG,
                   "set_sync inside an iteration");
    if (errs & FZ_E_SYNC)
        fz_refused(run, sc_reducer_set_sync(run->red, 2), SC_ERR_INVALID_ARG, "set_sync(2)");
}

/* Marks this rank's gradients of iteration it. */
static void fz_mark_all(fz_run_t *run, int it)
{
    const fz_case_t *c = run->c;
    int order[FZ_MAX_GRADS], seq[FZ_MAX_GRADS], nseq = 0;
    unsigned errs = fz_errors(c, run->rank, it);
    int cut = (int)(fz_hash(c->key, (uint64_t)run->rank, (uint64_t)it, 11) % (uint64_t)(c->n + 1));

    fz_order(c, run->rank, it, order);
    for (int k = 0; k < c->n; k++) {
        int g = order[k];
        if (!fz_used(c, run->rank, it, g))
            continue;
        seq[nseq++] = g;
        if (!c->view) {
            fz_buf_t *b = fz_buf(run, it, g);
            size_t es = rt_size(c->desc[g].dtype);
            fz_buf_alloc(run, b, c->desc[g].count * es,
                         es * (fz_hash(c->key, (uint64_t)run->rank, (uint64_t)it, 100 + (uint64_t)g) % 4));
        }
    }
    if (c->its[it].threaded && nseq > 1) {
        fz_marking_t mk = {run, it, seq, nseq, 0};
        pthread_t th;
        if (pthread_create(&th, NULL, fz_helper, &mk) != 0)
            fz_fatal(run, SC_ERR_SYSTEM, "pthread_create");
        fz_helper(&mk);
        pthread_join(th, NULL);
        run->threaded_its++;
        fz_refuse_after(run, it, seq, nseq, errs);
        return;
    }
    for (int k = 0; k < nseq; k++) {
        if (k == cut)
            fz_refuse_after(run, it, seq, k, errs);
        fz_refuse_before(run, it, seq[k], errs);
        fz_mark_one(run, it, seq[k]);
    }
    if (cut >= nseq)
        fz_refuse_after(run, it, seq, nseq, errs);
}

/* Checks the results of the window ending with synced iteration it against the sums
 * over every rank and iteration of the window, divided by prediv, and folds the results
 * every rank holds into the window's hash. A gradient every rank holds, whose bits
 * fz_exchange compares across the ranks, each rank checks against the sums in a share of
 * its elements of its own: the sums, p values an element, were the largest part of the
 * run's time when every rank formed them all. A single case (--case, the reproducer) checks every
 * element on every rank. */
static void fz_check_window(fz_run_t *run, int it)
{
    const fz_case_t *c = run->c;
    int w = c->its[it].window, first = it, p = run->size;
    uint64_t h = SC_TEST_HASH_INIT;

    while (first > 0 && c->its[first - 1].window == w)
        first--;
    for (int g = 0; g < c->n; g++) {
        sc_dtype_t d = c->desc[g].dtype;
        size_t n = c->desc[g].count, wrong = 0, bad_e = 0;
        const void *got;
        uint64_t keys[FZ_MAX_ITS * 16];
        int nkeys = 0, everywhere = 1, terms;
        double tol_unit, inv_div, bad_got = 0, bad_want = 0, bad_tol = 0;
        size_t lo = 0, hi = n;
        int pow2;

        if (c->view) {
            got = n ? sc_reducer_grad_view(run->red, g) : NULL;
        } else {
            got = fz_used(c, run->rank, it, g) ? fz_buf(run, it, g)->p : NULL;
            for (int r = 0; r < p; r++)
                everywhere &= fz_used(c, r, it, g);
        }
        if (!got || !n)
            continue;
        for (int k = first; k <= it; k++)
            for (int r = 0; r < p; r++)
                if (fz_used(c, r, k, g))
                    keys[nkeys++] = fz_grad_key(c, r, k, g);
        /* Exact with a power-of-two division (see the magnitudes); else one rounding per
         * division, per addition and per cast, each within a unit of the magnitudes' sum,
         * twice over. */
        terms = it - first + 1 + p + 4;
        pow2 = ((long)c->div & ((long)c->div - 1)) == 0 && c->div == floor(c->div);
        tol_unit = pow2 ? 0.0 : 2.0 * terms * fz_unit(d, c->hook);
        inv_div = 1.0 / c->div; /* exact, and so is x * inv_div, where div is 2^k */
        if (everywhere && !run->only_one) {
            lo = n * (size_t)run->rank / (size_t)p;
            hi = n * (size_t)(run->rank + 1) / (size_t)p;
        }
        for (size_t e = lo; e < hi; e++) {
            double want = 0, mag = 0, v = rt_load(d, got, e), tol;
            for (int k = 0; k < nkeys; k++) {
                double x = pow2 ? fz_value(c, keys[k], g, e) * inv_div
                                : fz_value(c, keys[k], g, e) / c->div;
                want += x;
                mag += fabs(x);
            }
            tol = tol_unit * mag;
            if (!(v == want || fabs(v - want) <= tol) && wrong++ == 0) {
                bad_e = e;
                bad_got = v;
                bad_want = want;
                bad_tol = tol;
            }
        }
        if (wrong)
            fz_fail(run, "window %d (synced iteration %d): gradient %d (%s, %zu elements, %d "
                    "contributions): %zu elements of %zu-%zu wrong, the first %zu: got %.17g, "
                    "expected %.17g within %g", w, it, g, c->names[g], n, nkeys, wrong, lo,
                    hi - 1, bad_e, bad_got, bad_want, bad_tol);
        if (everywhere)
            h = sc_test_hash(h, got, n * rt_size(d));
    }
    run->win_hash[w] = h;
    run->windows_checked++;
}

/* Gradients handed over in iteration it, after its finalize returned (also a failed
 * one): guards intact, those of an iteration without sync as they were given, then
 * overwritten. */
static void fz_end_buffers(fz_run_t *run, int it)
{
    const fz_case_t *c = run->c;

    if (c->view)
        return;
    for (int g = 0; g < c->n; g++) {
        fz_buf_t *b = fz_buf(run, it, g);
        if (!b->base)
            continue;
        fz_check_guards(run, b, it, g, "by the time its finalize returned");
        /* Compared as hashes, cheaper than the inputs formed again, which are formed to
         * name the element once they differ. */
        if (!c->its[it].sync && sc_test_hash(SC_TEST_HASH_INIT, b->p, b->bytes) != b->given) {
            uint64_t key = fz_grad_key(c, run->rank, it, g);
            size_t e = 0;
            double v = 0, x = 0;
            for (; e < c->desc[g].count; e++) {
                v = rt_load(c->desc[g].dtype, b->p, e);
                x = fz_value(c, key, g, e);
                if (memcmp(&v, &x, sizeof(v)) != 0)
                    break;
            }
            if (e < c->desc[g].count)
                fz_fail(run, "iteration %d without sync: gradient %d (%s) element %zu was "
                        "changed from %.17g to %.17g", it, g, c->names[g], e, x, v);
            else /* an int64 beyond 2^53, which its double does not tell apart */
                fz_fail(run, "iteration %d without sync: gradient %d (%s) was changed", it, g,
                        c->names[g]);
        }
        fz_scribble(b);
    }
}

/* The expected outcome of finalize in iteration it on this rank. */
static sc_status_t fz_want_finalize(const fz_case_t *c, int rank, int it)
{
    const fz_iter_t *t = &c->its[it];

    if (t->miss_rank < 0)
        return SC_SUCCESS;
    /* Synced: every rank fails; without sync only the rank that missed one. */
    return t->sync || t->miss_rank == rank ? SC_ERR_INVALID_ARG : SC_SUCCESS;
}

static void fz_run_iteration(fz_run_t *run, int it)
{
    const fz_case_t *c = run->c;
    const fz_iter_t *t = &c->its[it];
    sc_status_t want = fz_want_finalize(c, run->rank, it), st;
    sc_reducer_stats_t stats;
    char what[64];

    if (it == 0 || c->its[it - 1].sync)
        memset(run->view_written, 0, sizeof(run->view_written));
    if (it == c->rebuild_it) {
        /* Rank 0's ready order, which the rebuild after this iteration follows. */
        int order[FZ_MAX_GRADS];
        fz_order(c, 0, it, order);
        run->norder0 = 0;
        for (int k = 0; k < c->n; k++)
            if (fz_used(c, 0, it, order[k]))
                run->order0[run->norder0++] = order[k];
    }
    fz_ok(run, sc_reducer_set_sync(run->red, t->sync), "sc_reducer_set_sync");
    fz_mark_all(run, it);
    st = sc_reducer_finalize(run->red);
    snprintf(what, sizeof(what), "sc_reducer_finalize of iteration %d", it);
    if (st != want) {
        if (want == SC_SUCCESS)
            fz_fatal(run, st, what);
        fz_fail(run, "%s returned %s, expected %s (rank %d left gradient %d out%s): %s", what,
                sc_status_string(st), sc_status_string(want), t->miss_rank, t->miss_grad,
                t->sync ? "" : " without sync", sc_last_error());
        if (st == SC_SUCCESS && t->sync) {
            fz_print_repro(run);
            exit(1); /* the others failed: the ranks no longer agree on anything */
        }
    }
    run->failed_its += want != SC_SUCCESS;
    if (t->sync && want == SC_SUCCESS)
        fz_check_window(run, it);
    fz_end_buffers(run, it);
    if (t->sync && it == c->rebuild_it)
        run->rebuilt = 1;
    if (t->sync || want == SC_SUCCESS) {
        fz_ok(run, sc_reducer_stats(run->red, &stats), "sc_reducer_stats");
        if (c->view && stats.copy_bytes != 0)
            fz_fail(run, "iteration %d: stats.copy_bytes is %zu with views (0: nothing is "
                    "copied)", it, stats.copy_bytes);
        fz_check_layout(run, stats.bucket_cap_bytes, it, c->n ? stats.buckets : -1);
    }
}

/* ---- one case -------------------------------------------------------------------- */

static sc_status_t fz_create(fz_run_t *run)
{
    const fz_case_t *c = run->c;
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_comm_hook_t hook;

    cfg.bucket_cap_bytes = c->cap_bytes;
    cfg.first_bucket_bytes = c->first_bytes;
    cfg.gradient_as_bucket_view = c->view;
    cfg.find_unused = c->find_unused;
    cfg.autotune = c->autotune;
    cfg.prediv = c->prediv;
    if (c->hook >= 0) {
        fz_ok(run, sc_comm_hook_builtin((sc_hook_kind_t)c->hook, &hook), "sc_comm_hook_builtin");
        cfg.hook = &hook;
    }
    return sc_reducer_create(run->comm, c->desc, c->n, &cfg, &run->red);
}

/* The case's results and late writes agreed: every rank's failures and the hashes of
 * the windows gathered (after the reducer is gone). Returns the failures of every rank;
 * *stop becomes rank 0's. */
static long fz_exchange(fz_run_t *run, long mine_failures, int *stop)
{
    enum { HEAD = 2, WIDTH = HEAD + FZ_MAX_WINDOWS };
    int64_t mine[WIDTH] = {mine_failures, *stop}, *all;
    long total = 0;

    all = calloc((size_t)run->size * WIDTH, sizeof(int64_t));
    if (!all)
        fz_fatal(run, SC_ERR_NO_MEMORY, "the exchange's buffer");
    for (int w = 0; w < FZ_MAX_WINDOWS; w++)
        mine[HEAD + w] = (int64_t)run->win_hash[w];
    fz_ok(run, sc_allgather(mine, all, WIDTH, SC_INT64, run->comm, NULL, NULL),
          "sc_allgather of the failures and result hashes");
    for (int r = 0; r < run->size; r++)
        total += (long)all[r * WIDTH];
    for (int w = 0; w < FZ_MAX_WINDOWS && run->c; w++) {
        for (int r = 1; r < run->size; r++) {
            if (all[r * WIDTH + HEAD + w] == all[HEAD + w])
                continue;
            total++;
            if (run->rank == 0)
                fz_fail(run, "window %d: results differ across ranks: hash of rank 0 %016" PRIx64
                        ", of rank %d %016" PRIx64, w, (uint64_t)all[HEAD + w], r,
                        (uint64_t)all[r * WIDTH + HEAD + w]);
            break;
        }
    }
    *stop = (int)all[1];
    free(all);
    return total;
}

/* How many leading bytes of b still hold FZ_SCRIBBLE_BYTE, give or take the last 7: a
 * word at a time; a byte at a time was a twentieth of the run's time. */
static size_t fz_scribbled_bytes(const fz_buf_t *b)
{
    const uint64_t want = 0x0101010101010101ull * FZ_SCRIBBLE_BYTE;
    size_t i = 0;
    uint64_t w;

    for (; i + 8 <= b->bytes; i += 8) {
        memcpy(&w, b->p + i, 8);
        if (w != want)
            break;
    }
    return i;
}

/* After the reducer is gone (its destroy waited for every bucket): nothing wrote into
 * a gradient once the finalize of its iteration returned. Frees the buffers. */
static void fz_check_late_writes(fz_run_t *run)
{
    const fz_case_t *c = run->c;

    for (int it = 0; it < c->nits; it++) {
        for (int g = 0; g < c->n; g++) {
            fz_buf_t *b = fz_buf(run, it, g);
            if (!b->base)
                continue;
            fz_check_guards(run, b, it, g, "after the case ended");
            for (size_t i = fz_scribbled_bytes(b); i < b->bytes; i++) {
                if (b->p[i] != FZ_SCRIBBLE_BYTE) {
                    int end = it;
                    while (!c->its[end].sync)
                        end++;
                    fz_fail(run, "iteration %d: gradient %d (%s) was written after the "
                            "finalize of its iteration returned (byte %zu of %zu is 0x%02x)%s; "
                            "this rank %s it in the window's synced iteration %d%s",
                            it, g, c->names[g], i, b->bytes, b->p[i],
                            c->its[it].sync ? "" : ", an iteration without sync",
                            fz_used(c, run->rank, end, g) ? "marked" : "did not mark", end,
                            c->its[end].miss_rank >= 0 ? ", which was to fail" : "");
                    break;
                }
            }
            free(b->base);
        }
    }
    free(run->bufs);
    run->bufs = NULL;
}

/* Runs case c; returns the failures of every rank, and in *stop whether the run ends
 * (rank 0's decision). */
static long fz_run_case(fz_run_t *run, fz_case_t *c, int *stop)
{
    long before = run->failures;
    sc_status_t st;
    size_t cap;

    run->c = c;
    run->case_failures = 0;
    run->rebuilt = 0;
    run->norder0 = 0;
    memset(run->win_hash, 0, sizeof(run->win_hash));
    run->bufs = calloc((size_t)c->nits * (size_t)(c->n ? c->n : 1), sizeof(fz_buf_t));
    if (!run->bufs)
        fz_fatal(run, SC_ERR_NO_MEMORY, "the case's buffers");
    st = fz_create(run);
    if (st != SC_SUCCESS)
        fz_fatal(run, st, "sc_reducer_create");
    cap = c->cap_bytes ? c->cap_bytes : run->env_cap ? run->env_cap : (size_t)25 << 20;
    fz_check_layout(run, cap, -1, -1);
    for (int it = 0; it < c->nits; it++)
        fz_run_iteration(run, it);
    fz_ok(run, sc_reducer_destroy(run->red), "sc_reducer_destroy");
    run->red = NULL;
    fz_check_late_writes(run);
    run->cases_run++;
    run->per_mode[c->view]++;
    *stop = run->only_one || run->cases_run >= run->max_cases ||
            (run->seconds > 0 && rt_now() - run->t0 >= run->seconds);
    return fz_exchange(run, run->failures - before, stop);
}

/* ---- main ------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: test_reducer_fuzz --seed S [--cases N] [--seconds T] [--case K]\n"
            "                         [--max-bytes B] [--no D1,D2,..] [--verbose]\n"
            "  From seed S (decimal or 0x hex) every rank draws the same cases and runs\n"
            "  them until N cases (default 100) or T seconds (rank 0's clock, read after\n"
            "  each case) have passed, whichever comes first; --case K runs only case K\n"
            "  (the reproducer a failure prints). A model holds at most B bytes (default\n"
            "  %zu). --no leaves dimensions out: views unused accumulate threads errors\n"
            "  hooks autotune integers missing unused_varies (a rank marks other gradients\n"
            "  in different iterations of a window: find_unused, or a synced iteration\n"
            "  missing one) copies (views only). Exits 1 on a failure, after printing the\n"
            "  case and a reproducer.\n",
            FZ_DEFAULT_MAX_BYTES);
}

static int fz_parse_no(const char *s, unsigned *no)
{
    char buf[256], *save = NULL;

    if (strlen(s) >= sizeof(buf))
        return 0;
    strcpy(buf, s);
    *no = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (size_t k = 0; k < sizeof(fz_no_names) / sizeof(fz_no_names[0]); k++)
            if (strcmp(t, fz_no_names[k]) == 0)
                found = 1, *no |= 1u << k;
        if (!found)
            return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"seed", required_argument, NULL, 's'},
                                         {"cases", required_argument, NULL, 'n'},
                                         {"seconds", required_argument, NULL, 't'},
                                         {"case", required_argument, NULL, 'c'},
                                         {"max-bytes", required_argument, NULL, 'm'},
                                         {"no", required_argument, NULL, 'N'},
                                         {"verbose", no_argument, NULL, 'v'},
                                         {NULL, 0, NULL, 0}};
    fz_run_t run = {0};
    size_t max_cases = 100, seed = 0, one_case = 0;
    int opt, have_seed = 0, stop = 0;
    long failures = 0;
    const char *env;
    char *end;
    static fz_case_t kase;

    setvbuf(stdout, NULL, _IOLBF, 0);
    run.max_bytes = FZ_DEFAULT_MAX_BYTES;
    run.no_arg = "";
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int ok = 1;

        switch (opt) {
        case 's': ok = have_seed = sc_parse_size(optarg, &seed); break;
        case 'n': ok = sc_parse_size(optarg, &max_cases); break;
        case 'c': ok = run.only_one = sc_parse_size(optarg, &one_case); break;
        case 'm': ok = sc_parse_size(optarg, &run.max_bytes); break;
        case 'N':
            run.no_arg = optarg;
            ok = fz_parse_no(optarg, &run.no);
            break;
        case 't':
            run.seconds = strtod(optarg, &end);
            ok = !*end && run.seconds >= 0;
            break;
        case 'v': run.verbose = 1; break;
        default: ok = 0; break;
        }
        if (!ok)
            goto bad;
    }
    if (!have_seed || optind != argc)
        goto bad;
    run.prog = argv[0];
    run.seed = (uint64_t)seed;
    run.max_cases = (long)max_cases;
    run.t0 = rt_now();
    env = getenv("SC_BUCKET_CAP_MB");
    if (env && *env) {
        double mb = strtod(env, NULL);
        run.env_cap = mb * 1048576.0 < 1.0 ? 1 : (size_t)(mb * 1048576.0);
    }
    (void)sc_fuzz_env_prefix(); /* the environment before sc_comm_init adds to it */
    fz_ok(&run, sc_comm_init_from_env(&run.comm), "sc_comm_init_from_env");
    run.rank = sc_comm_rank(run.comm);
    run.size = sc_comm_size(run.comm);
    rt_rank = run.rank;
    env = getenv("SC_STAGE_BYTES");
    if (run.size > 1 && !(env && env[0] == '0' && strtoull(env, NULL, 10) == 0)) {
        /* Shared memory, which staging needs, as registered memory tells it. */
        void *probe;
        int shared = 0;
        fz_ok(&run, sc_mem_alloc(run.comm, 4096, &probe), "sc_mem_alloc");
        fz_ok(&run, sc_mem_is_shared(run.comm, probe, &shared), "sc_mem_is_shared");
        fz_ok(&run, sc_mem_free(run.comm, probe), "sc_mem_free");
        run.staged = shared;
    }
    for (long k = run.only_one ? (long)one_case : 0; !stop; k++) {
        double ct = rt_now();

        fz_draw_case(&run, k, &kase);
        failures = fz_run_case(&run, &kase, &stop);
        if (run.verbose && run.rank == 0)
            printf("%s (%.3f s)\n", kase.desc_text, rt_now() - ct);
        if (failures) {
            if (run.case_failures || run.rank == 0)
                fz_print_repro(&run);
            break;
        }
    }
    run.c = NULL;
    fz_ok(&run, sc_comm_destroy(run.comm), "sc_comm_destroy");
    if (run.rank == 0)
        printf("seed 0x%" PRIx64 ": %ld cases (%ld copies, %ld views) on %d ranks, %ld windows "
               "checked, %ld refusals, %ld threaded and %ld failing iterations, %ld "
               "failures, %.2f s\n",
               run.seed, run.cases_run, run.per_mode[0], run.per_mode[1], run.size,
               run.windows_checked, run.refusals, run.threaded_its, run.failed_its, failures,
               rt_now() - run.t0);
    return failures ? 1 : 0;
bad:
    usage();
    return 2;
}
