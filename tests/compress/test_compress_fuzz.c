/* Differential fuzz of the compressed all-reduce and its compressor state: from a seed
 * every rank draws the same cases (a configuration, keys of edge-biased counts and every
 * float dtype, several steps per key with error feedback carried over, save/load round
 * trips, roll-backs to an earlier state, resets, and calls on which the ranks disagree,
 * each followed by the correct call). Every rank models every rank's compressor here
 * (selection, residual, momentum, the sparse sum across ranks) and checks the results
 * bit for bit, the residuals through the saved state, guard bytes, and that nothing is
 * written after a call returns. --load-fuzz feeds sc_compressor_load corrupted,
 * truncated and hostile states, without a communicator. See usage(). */
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/resource.h>

#include "compress_test.h"
#include "../common/sc_fuzz_args.h"

/* Built with AddressSanitizer or ThreadSanitizer (GCC's macros, clang's features). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FZ_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FZ_SANITIZED 1
#endif
#endif
#ifndef FZ_SANITIZED
#define FZ_SANITIZED 0
#endif

/* Built with AddressSanitizer alone: fz_scratch poisons the room past each use. */
#if defined(__SANITIZE_ADDRESS__)
#define FZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FZ_ASAN 1
#endif
#endif
#ifdef FZ_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define FZ_MAX_RANKS 8
#define FZ_MAX_KEYS 4
#define FZ_GUARD 64          /* bytes of guard before and after every buffer */
#define FZ_GUARD_BYTE 0xA5
#define FZ_FILL_BYTE 0x5A    /* a receive buffer's bytes before the call */
#define FZ_STATE_HEADER 32   /* the saved state's layout (compressor_state.c) */
#define FZ_STATE_DRAWS 16
#define FZ_STATE_RECORD 48
#define FZ_STATE_THRESHOLD 24

/* ---- the run ------------------------------------------------------------------------ */

typedef struct {
    rt_world_t w;
    uint64_t seed;
    size_t max_count;
    const char *prog;
    int load_fuzz;
    long case_no;
    int step;
    char what[256];
    const char *desc;
    long cases, steps, refused, saves, loads, rollbacks, resets, hostile;
} fz_run_t;

static fz_run_t R;

static void fz_repro(void)
{
    if (R.load_fuzz)
        fprintf(stderr, "reproduce: %s%s --load-fuzz --seed 0x%" PRIx64 " --case %ld\n",
                sc_fuzz_env_prefix(), R.prog, R.seed, R.case_no);
    else
        fprintf(stderr, "reproduce: %sscrun -n %d %s --seed 0x%" PRIx64 " --case %ld "
                "--max-count %zu\n", sc_fuzz_env_prefix(), sc_fuzz_ranks(R.w.size), R.prog,
                R.seed, R.case_no, R.max_count);
}

/* A failed check: the case, the step, what was being done, then a reproducer; exits
 * (scrun stops the other ranks). */
static void fz_fail(int line, const char *cond, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "rank %d: test_compress_fuzz.c:%d: FAIL (%s): case %ld step %d, %s: ",
            R.w.rank, line, cond, R.case_no, R.step, R.what);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n  case: %s\n  last library error: %s\n", R.desc ? R.desc : "-",
            sc_last_error());
    fz_repro();
    exit(1);
}

#define FZ_CHECK(cond, ...)                                                              \
    do {                                                                                 \
        if (!(cond))                                                                     \
            fz_fail(__LINE__, #cond, __VA_ARGS__);                                       \
    } while (0)

#define FZ_OK(call) FZ_CHECK((call) == SC_SUCCESS, "%s", #call)

#define FZ_WHAT(...) snprintf(R.what, sizeof(R.what), __VA_ARGS__)

/* ---- the shared pseudo-random sequence ------------------------------------------------ */

typedef struct {
    uint64_t key, n;
} fz_rng_t;

static uint64_t fz_next(fz_rng_t *r)
{
    return rt_mix(r->key ^ rt_mix(++r->n));
}

static size_t fz_below(fz_rng_t *r, size_t n)
{
    return n ? (size_t)(fz_next(r) % n) : 0;
}

static int fz_chance(fz_rng_t *r, unsigned percent)
{
    return fz_below(r, 100) < percent;
}

/* ---- dtypes ---------------------------------------------------------------------------- */

static const sc_dtype_t fz_dtypes[] = {SC_FLOAT32, SC_FLOAT64, SC_FLOAT16, SC_BFLOAT16};

static sc_dtype_t fz_acc(sc_dtype_t d)
{
    return d == SC_FLOAT64 ? SC_FLOAT64 : SC_FLOAT32;
}

/* x rounded to d (to nearest even; float64 to float16 through float32, as the wire's
 * conversion is documented to go). */
static double fz_round(sc_dtype_t d, double x)
{
    return ct_round(d, x);
}

/* x as a value on the wire of dtype d: rounded, a finite x past float16's or bfloat16's
 * range sent as the largest value of its sign (compress.h). */
static double fz_wire(sc_dtype_t d, double x)
{
    double max = d == SC_FLOAT16 ? 65504.0 : d == SC_BFLOAT16 ? 0x1.fep127 : INFINITY;

    return fz_round(d, isfinite(x) && fabs(x) > max ? copysign(max, x) : x);
}

static void fz_put(sc_dtype_t d, void *buf, size_t e, double v)
{
    ct_store(d, buf, e, v);
}

/* fz_put(d, buf, e, fz_round(d, x)), in one conversion for float16 where that took three
 * (the compiler's, in software): the same bits. */
static void fz_put_rounded(sc_dtype_t d, void *buf, size_t e, double x)
{
    if (d == SC_FLOAT16)
        ((_Float16 *)buf)[e] = (_Float16)(float)x;
    else
        fz_put(d, buf, e, fz_round(d, x));
}

static double fz_get(sc_dtype_t d, const void *buf, size_t e)
{
    return rt_load(d, buf, e);
}

/* float32 arithmetic where the accumulation type is float32, double otherwise. */
static double fz_add(sc_dtype_t acc, double a, double b)
{
    if (acc == SC_FLOAT64)
        return a + b;
    float fa = (float)a, fb = (float)b, s = fa + fb;
    return s;
}

static double fz_mul(sc_dtype_t acc, double a, double b)
{
    if (acc == SC_FLOAT64)
        return a * b;
    float fa = (float)a, fb = (float)b, s = fa * fb;
    return s;
}

static double fz_div(sc_dtype_t acc, double a, int p)
{
    if (acc == SC_FLOAT64)
        return a / (double)p;
    float fa = (float)a, s = fa / (float)p;
    return s;
}

/* ---- guarded buffers ----------------------------------------------------------------- */

typedef struct {
    unsigned char *base;
    size_t bytes, off, total;
} fz_buf_t;

static void *fz_buf(fz_buf_t *b, size_t bytes, size_t shift, int fill)
{
    b->bytes = bytes;
    b->off = FZ_GUARD + shift;
    b->total = bytes + 2 * FZ_GUARD + shift;
    b->base = malloc(b->total);
    FZ_CHECK(b->base, "out of memory for %zu bytes", b->total);
    memset(b->base, FZ_GUARD_BYTE, b->total);
    memset(b->base + b->off, fill, bytes);
    return b->base + b->off;
}

static void fz_guards(const fz_buf_t *b, const char *name)
{
    /* The guards alone: a loop over every byte that skipped the buffer's was a few
     * percent of the run at 200,000 elements. */
    for (size_t i = 0; i < b->total; i = i + 1 == b->off ? b->off + b->bytes : i + 1)
        FZ_CHECK(b->base[i] == FZ_GUARD_BYTE, "guard byte %s%zu of %s is 0x%02x",
                 i < b->off ? "-" : "+", i < b->off ? b->off - i : i - b->off - b->bytes,
                 name, b->base[i]);
}

static void fz_buf_free(fz_buf_t *b)
{
    free(b->base);
    b->base = NULL;
}

/* n elements of dtype d, got against want bit for bit: one memcmp, then the first element
 * that differs named (a memcmp per element was most of the comparison's time). */
static void fz_check_same(const char *got, const char *want, size_t n, sc_dtype_t d,
                          const char *what)
{
    size_t es = sc_dtype_size(d);

    if (n == 0 || memcmp(got, want, n * es) == 0)
        return;
    for (size_t e = 0; e < n; e++)
        FZ_CHECK(memcmp(got + e * es, want + e * es, es) == 0, "%s %zu: got %.17g, want "
                 "%.17g", what, e, fz_get(d, got, e), fz_get(d, want, e));
}

/* The model's and the reference's arrays, grown as needed and kept from step to step:
 * allocated afresh, their pages were faulted in and zeroed by the kernel at every step (a
 * tenth of the run at 200,000 elements). The buffers given to the collective stay fresh;
 * the random stand-in's input, draws and values (FZ_SCRATCH_V_AS_SENT, _DRAWS, _DRAWN)
 * go to sc_topk_select, so under AddressSanitizer the room past each use is poisoned, as
 * a fresh allocation of that size would end there: else a read or write past n or k
 * lands in room an earlier, larger step grew, unseen. */
enum {
    FZ_SCRATCH_V, FZ_SCRATCH_KEYS, FZ_SCRATCH_IDX, FZ_SCRATCH_SENT, FZ_SCRATCH_V_AS_SENT,
    FZ_SCRATCH_DRAWS, FZ_SCRATCH_DRAWN, FZ_SCRATCH_GRAD, FZ_SCRATCH_MY_GRAD, FZ_SCRATCH_SUM,
    FZ_SCRATCH_MAG, FZ_SCRATCH_WANT, FZ_SCRATCHES
};

static struct {
    void *p;
    size_t bytes;
} fz_scratches[FZ_SCRATCHES];

static void *fz_scratch(int which, size_t bytes)
{
    if (fz_scratches[which].bytes < bytes) {
        free(fz_scratches[which].p);
        fz_scratches[which].p = malloc(bytes);
        FZ_CHECK(fz_scratches[which].p, "out of memory for %zu bytes", bytes);
        fz_scratches[which].bytes = bytes;
    }
#ifdef FZ_ASAN
    ASAN_UNPOISON_MEMORY_REGION(fz_scratches[which].p, bytes);
    ASAN_POISON_MEMORY_REGION((char *)fz_scratches[which].p + bytes,
                              fz_scratches[which].bytes - bytes);
#endif
    return fz_scratches[which].p;
}

static void fz_scratch_free(void)
{
    for (int i = 0; i < FZ_SCRATCHES; i++)
        free(fz_scratches[i].p);
    memset(fz_scratches, 0, sizeof(fz_scratches));
}

static uint64_t fz_hash(const void *p, size_t n)
{
    return sc_test_hash(SC_TEST_HASH_INIT, p, n);
}

/* ---- a case ------------------------------------------------------------------------- */

typedef struct {
    int id;
    size_t count;
    sc_dtype_t dtype;
    int exp, range, zeros; /* values: zeros% 0, else integers in [-range, range] * 2^exp */
    double scale;          /* 2^exp: a product by it is exact, where ldexp was a call */
} fz_key_t;

typedef struct {
    sc_compress_config_t cfg; /* threads and seed: see fz_rank_cfg */
    int seed_per_rank;
    int nkeys;
    fz_key_t keys[FZ_MAX_KEYS];
    int nsteps;
    uint64_t vseed;
    char desc[640];
} fz_case_t;

static const char *fz_mode_name(sc_topk_mode_t m)
{
    return m == SC_TOPK_EXACT ? "exact" : m == SC_TOPK_APPROX ? "approx" : "random";
}

/* Counts near the edges: 0, 1, a few, below 1/(2 density) (k rounds to 0, so 1), k
 * exactly density * count, around the error feedback's and the scatter's chunks, and
 * (rarely) past 2^16 (the sampled exact path, the approximate threshold) and 2^17 (two
 * selection threads). */
static size_t fz_draw_count(fz_rng_t *r, double density, size_t max)
{
    size_t c;

    switch (fz_below(r, 12)) {
    case 0: c = fz_below(r, 3); break;
    case 1: c = 1 + fz_below(r, 16); break;
    case 2: c = 1 + fz_below(r, (size_t)(0.5 / density) + 1); break;
    case 3: { /* density * count an integer (density a dyadic fraction) */
        size_t den = (size_t)(1.0 / density + 0.5);
        c = den * (1 + fz_below(r, 40));
        break;
    }
    case 4: c = 4096 + fz_below(r, 3) - 1; break;
    case 5: c = 16384 + fz_below(r, 5) - 2; break;
    case 6:
        c = fz_chance(r, 40) ? ((size_t)1 << 16) - 1 + fz_below(r, 3)
                             : 65536 + fz_below(r, 160000);
        break;
    default: c = 1 + fz_below(r, fz_chance(r, 50) ? 300 : 6000); break;
    }
    return c > max ? max : c;
}

static double fz_draw_density(fz_rng_t *r)
{
    static const double d[] = {1e-6, 0.001, 0.01, 0.0625, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0};

    if (fz_chance(r, 15))
        return (double)(1 + fz_below(r, 1000)) / 1000.0;
    return d[fz_below(r, sizeof(d) / sizeof(d[0]))];
}

static void fz_draw_case(fz_rng_t *r, int p, fz_case_t *c)
{
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
    size_t used;
    int large = 0;

    cfg.density = fz_draw_density(r);
    cfg.mode = fz_chance(r, 55) ? SC_TOPK_EXACT : fz_chance(r, 65) ? SC_TOPK_RANDOM
                                                                   : SC_TOPK_APPROX;
    cfg.error_feedback = fz_chance(r, 70);
    cfg.momentum = fz_chance(r, 20) ? (fz_chance(r, 50) ? 0.5 : 0.25) : 0.0;
    cfg.values_fp16 = fz_chance(r, 20);
    cfg.index_bits = (int[]){0, 32, 64}[fz_below(r, 3)];
    cfg.warmup_steps = fz_chance(r, 15) ? 1 + (int)fz_below(r, 2) : 0;
    cfg.threads = (int)fz_below(r, 5);
    cfg.seed = fz_next(r);
    c->cfg = cfg;
    c->seed_per_rank = fz_chance(r, 70);
    c->nkeys = 1 + (int)fz_below(r, FZ_MAX_KEYS);
    for (int j = 0; j < c->nkeys; j++) {
        fz_key_t *k = &c->keys[j];
        int dense_possible;
        do {
            k->id = fz_chance(r, 10) ? (fz_chance(r, 50) ? INT_MAX : INT_MIN + 1 + j)
                                     : (int)fz_below(r, 40) - 5;
            used = 0;
            for (int i = 0; i < j; i++)
                used += c->keys[i].id == k->id;
        } while (used);
        k->dtype = fz_dtypes[fz_below(r, 4)];
        k->count = fz_draw_count(r, cfg.density, R.max_count);
        if (k->count > 65536) { /* one large key per case: the model costs p x count */
            if (large)
                k->count = 1 + fz_below(r, 1000);
            large = 1;
        }
        k->exp = (int)fz_below(r, 10) - 6;
        k->scale = ldexp(1.0, k->exp);
        k->zeros = (int[]){0, 0, 30, 90}[fz_below(r, 4)];
        /* Dense steps of float16/bfloat16 round every partial sum to the dtype: there the
         * values stay small enough that any order of summing p of them is exact. */
        dense_possible = cfg.warmup_steps > 0 || cfg.density >= 0.5;
        if (k->dtype == SC_BFLOAT16 && dense_possible)
            k->range = (int[]){1, 3, 31}[fz_below(r, 3)];
        else if (k->dtype == SC_FLOAT16 || k->dtype == SC_BFLOAT16)
            k->range = (int[]){1, 3, 31, 127}[fz_below(r, 4)];
        else
            k->range = (int[]){1, 3, 31, 1023}[fz_below(r, 4)];
    }
    c->nsteps = 3 + (int)fz_below(r, 14);
    c->vseed = fz_next(r);
    used = (size_t)snprintf(c->desc, sizeof(c->desc), "%d ranks, density %.17g, %s, ef %d, "
                            "momentum %g, values_fp16 %d, index_bits %d, warmup %d, threads "
                            "%d+rank, seed %s, %d steps; keys:", p, cfg.density,
                            fz_mode_name(cfg.mode), cfg.error_feedback, cfg.momentum,
                            cfg.values_fp16, cfg.index_bits, cfg.warmup_steps, cfg.threads,
                            c->seed_per_rank ? "per rank" : "shared", c->nsteps);
    for (int j = 0; j < c->nkeys && used < sizeof(c->desc); j++)
        used += (size_t)snprintf(c->desc + used, sizeof(c->desc) - used,
                                 " [id %d, %zu x %s, values %d%% 0 else +-%d * 2^%d]",
                                 c->keys[j].id, c->keys[j].count,
                                 sc_dtype_name(c->keys[j].dtype), c->keys[j].zeros,
                                 c->keys[j].range, c->keys[j].exp);
}

/* Rank r's configuration: threads may differ between ranks (never the results), and so
 * may the seed (the random selections). */
static sc_compress_config_t fz_rank_cfg(const fz_case_t *c, int rank, int salt)
{
    sc_compress_config_t cfg = c->cfg;

    cfg.threads = (c->cfg.threads + rank + salt) % 5;
    if (c->seed_per_rank)
        cfg.seed = rt_mix(c->cfg.seed + (uint64_t)rank);
    return cfg;
}

/* Key j's gradient on rank r at step t: element e is fz_value_of(key j,
 * rt_mix(fz_value_base(c, j, r, t) ^ e)), exact in the key's dtype. */
static uint64_t fz_value_base(const fz_case_t *c, int j, int r, int t)
{
    return rt_mix(c->vseed ^ ((uint64_t)(unsigned)r << 56) ^ ((uint64_t)(unsigned)t << 32) ^
                  (uint64_t)j);
}

static double fz_value_of(const fz_key_t *k, uint64_t h)
{
    if ((int)(h % 100) < k->zeros)
        return 0.0;
    return (double)((int)((h >> 8) % (uint64_t)(2 * k->range + 1)) - k->range) * k->scale;
}

/* Element e of key j's gradient on rank r at step t. */
static double fz_value(const fz_case_t *c, int j, int r, int t, size_t e)
{
    return fz_value_of(&c->keys[j], rt_mix(fz_value_base(c, j, r, t) ^ e));
}

/* Its elements [0, n) into g, the part of the hash shared by all of them mixed once. */
static void fz_values(const fz_case_t *c, int j, int r, int t, size_t n, double *g)
{
    uint64_t base = fz_value_base(c, j, r, t);

    for (size_t e = 0; e < n; e++)
        g[e] = fz_value_of(&c->keys[j], rt_mix(base ^ e));
}

/* ---- the model of every rank's compressor --------------------------------------------- */

typedef struct {
    int born;
    long steps;
    double *res[FZ_MAX_RANKS], *mom[FZ_MAX_RANKS]; /* NULL when not kept */
} fz_mkey_t;

typedef struct {
    fz_mkey_t k[FZ_MAX_KEYS];
    uint64_t draws; /* random selections each rank's selector has made */
} fz_model_t;

static void fz_model_init(fz_model_t *m, const fz_case_t *c, int p)
{
    memset(m, 0, sizeof(*m));
    for (int j = 0; j < c->nkeys; j++)
        for (int r = 0; r < p; r++) {
            size_t n = c->keys[j].count ? c->keys[j].count : 1;
            if (c->cfg.error_feedback)
                m->k[j].res[r] = calloc(n, sizeof(double));
            if (c->cfg.momentum > 0.0)
                m->k[j].mom[r] = calloc(n, sizeof(double));
        }
}

static void fz_model_free(fz_model_t *m)
{
    for (int j = 0; j < FZ_MAX_KEYS; j++)
        for (int r = 0; r < FZ_MAX_RANKS; r++) {
            free(m->k[j].res[r]);
            free(m->k[j].mom[r]);
        }
    memset(m, 0, sizeof(*m));
}

static void fz_model_copy(fz_model_t *dst, const fz_model_t *src, const fz_case_t *c, int p)
{
    fz_model_init(dst, c, p);
    dst->draws = src->draws;
    for (int j = 0; j < c->nkeys; j++) {
        size_t bytes = (c->keys[j].count ? c->keys[j].count : 1) * sizeof(double);
        dst->k[j].born = src->k[j].born;
        dst->k[j].steps = src->k[j].steps;
        for (int r = 0; r < p; r++) {
            if (src->k[j].res[r])
                memcpy(dst->k[j].res[r], src->k[j].res[r], bytes);
            if (src->k[j].mom[r])
                memcpy(dst->k[j].mom[r], src->k[j].mom[r], bytes);
        }
    }
}

/* sc_compressor_reset: every key as new. */
static void fz_model_reset(fz_model_t *m, const fz_case_t *c, int p)
{
    uint64_t draws = m->draws;

    fz_model_free(m);
    fz_model_init(m, c, p);
    m->draws = draws;
}

/* Stand-ins for each rank's random selector: a selector of the same seed gives the same
 * draws after as many calls (the draws follow from the seed and the call count). */
typedef struct {
    sc_topk_t *t[FZ_MAX_RANKS];
    uint64_t calls;
} fz_shadow_t;

static void fz_shadow_set(fz_shadow_t *s, const fz_case_t *c, int p, uint64_t calls)
{
    float one = 1.0f, val;
    uint64_t ix;
    size_t sel;

    for (int r = 0; r < p; r++) {
        sc_compress_config_t rc = fz_rank_cfg(c, r, 0);
        sc_topk_config_t tc = SC_TOPK_CONFIG_INIT;

        sc_topk_destroy(s->t[r]);
        tc.mode = SC_TOPK_RANDOM;
        tc.threads = 1;
        tc.seed = rc.seed;
        FZ_OK(sc_topk_create(&tc, &s->t[r]));
        for (uint64_t i = 0; i < calls; i++)
            FZ_OK(sc_topk_select(s->t[r], &one, SC_FLOAT32, 1, 1, 64, &ix, &val, &sel, NULL));
    }
    s->calls = calls;
}

static void fz_shadow_free(fz_shadow_t *s)
{
    for (int r = 0; r < FZ_MAX_RANKS; r++)
        sc_topk_destroy(s->t[r]);
    memset(s, 0, sizeof(*s));
}

/* k of a key: density * count rounded to nearest, at least 1 when count > 0. */
static size_t fz_k(double density, size_t count)
{
    double x = floor(density * (double)count + 0.5);
    size_t k = x >= (double)count ? count : (size_t)x;

    return count > 0 && k == 0 ? 1 : k;
}

static int fz_is_dense(const fz_case_t *c, const fz_mkey_t *mk, const fz_key_t *key)
{
    sc_dtype_t vd = c->cfg.values_fp16 ? SC_FLOAT16 : key->dtype;

    return mk->steps < c->cfg.warmup_steps ||
           (fz_k(c->cfg.density, key->count) == key->count && vd == key->dtype &&
            c->cfg.momentum == 0.0);
}

/* One rank's step on a key in the model, g its gradient: its selection and the values it
 * sends (scratch arrays, until the next rank's), the residual and momentum updated in
 * place. */
typedef struct {
    size_t k;
    size_t *idx;
    double *sent;
} fz_sel_t;

static void fz_model_rank(const fz_case_t *c, fz_mkey_t *mk, int j, int r, size_t want_k,
                          fz_shadow_t *sh, fz_sel_t *out, const double *g)
{
    const fz_key_t *key = &c->keys[j];
    size_t n = key->count;
    sc_dtype_t d = key->dtype, acc = fz_acc(d);
    sc_dtype_t vd = c->cfg.values_fp16 ? SC_FLOAT16 : d;
    int shaped = c->cfg.error_feedback || c->cfg.momentum > 0.0;
    sc_dtype_t sd = shaped ? acc : d;
    /* x: v, then the residual left (in place where the rank keeps one); u: the momentum */
    double m = c->cfg.momentum, *u = mk->mom[r];
    double *x = mk->res[r] ? mk->res[r] : fz_scratch(FZ_SCRATCH_V, (n ? n : 1) * 8);

    for (size_t e = 0; e < n; e++) {
        double ue = g[e];
        if (u)
            ue = u[e] = fz_add(acc, fz_mul(acc, m, u[e]), g[e]);
        x[e] = mk->res[r] ? fz_add(acc, x[e], ue) : ue;
    }
    out->k = want_k;
    out->idx = fz_scratch(FZ_SCRATCH_IDX, (want_k ? want_k : 1) * sizeof(size_t));
    out->sent = fz_scratch(FZ_SCRATCH_SENT, (want_k ? want_k : 1) * sizeof(double));
    if (c->cfg.mode == SC_TOPK_RANDOM && want_k > 0) {
        /* The draws from the stand-in selector; the rest checked here. */
        size_t es = sc_dtype_size(sd), sel = 0;
        char *xb = fz_scratch(FZ_SCRATCH_V_AS_SENT, n * es);
        char *vals = fz_scratch(FZ_SCRATCH_DRAWN, want_k * es);
        uint64_t *ix = fz_scratch(FZ_SCRATCH_DRAWS, want_k * sizeof(uint64_t));
        for (size_t e = 0; e < n; e++)
            fz_put(sd, xb, e, x[e]);
        FZ_OK(sc_topk_select(sh->t[r], xb, sd, n, want_k, 64, ix, vals, &sel, NULL));
        FZ_CHECK(sel == want_k, "the random stand-in selected %zu of %zu", sel, want_k);
        for (size_t i = 0; i < want_k; i++) {
            FZ_CHECK(ix[i] < n && (i == 0 || ix[i] > ix[i - 1]), "random draw %zu is %" PRIu64
                     " (n %zu, previous %" PRIu64 ")", i, ix[i], n, i ? ix[i - 1] : 0);
            FZ_CHECK(memcmp(vals + i * es, xb + ix[i] * es, es) == 0, "random draw %zu: the "
                     "value is not element %" PRIu64 "'s", i, ix[i]);
            out->idx[i] = (size_t)ix[i];
        }
    } else {
        /* By magnitude, larger first, ties by lower index (compress_test.h's reference). */
        ct_topk_in(x, n, want_k, out->idx,
                   fz_scratch(FZ_SCRATCH_KEYS, (n ? n : 1) * sizeof(uint64_t)));
    }
    for (size_t i = 0; i < want_k; i++) {
        size_t e = out->idx[i];
        double s = fz_wire(vd, x[e]);
        out->sent[i] = s;
        if (mk->res[r]) {
            double left = vd == SC_FLOAT32 && acc == SC_FLOAT32 ? 0.0
                                                                : fz_add(acc, x[e], -s);
            x[e] = isfinite(left) ? left : 0.0;
        }
        if (u)
            u[e] = 0.0;
    }
}

/* ---- the saved state, read back ---------------------------------------------------------- */

static void fz_state_rehash(unsigned char *b, size_t len)
{
    uint32_t version;
    uint64_t payload = len - FZ_STATE_HEADER, h;

    memcpy(&version, b + 8, 4);
    memcpy(b + 16, &payload, 8);
    h = ct_state_hash(b + FZ_STATE_HEADER, len - FZ_STATE_HEADER, version);
    memcpy(b + 24, &h, 8);
}

typedef struct {
    int32_t key, dtype, acc;
    uint32_t flags;
    uint64_t count;
    int64_t steps;
    int32_t origin_rank, origin_size; /* version 4 */
    int32_t origin_world;             /* version 5 */
    uint32_t reserved;
} fz_record_t;

/* Offsets of the records of a version 5 or 6 state (at most max); returns how many. */
static int fz_state_records(const unsigned char *b, size_t len, size_t *offs, int max)
{
    uint32_t nkeys;
    size_t o = FZ_STATE_HEADER + FZ_STATE_DRAWS;
    int n = 0;

    memcpy(&nkeys, b + 12, 4);
    for (uint32_t i = 0; i < nkeys && n < max && o + FZ_STATE_RECORD <= len; i++) {
        fz_record_t rec;
        size_t es;
        memcpy(&rec, b + o, sizeof(rec));
        es = rec.acc == SC_FLOAT64 ? 8 : 4;
        offs[n++] = o;
        o += FZ_STATE_RECORD + ((rec.flags & 4) ? FZ_STATE_THRESHOLD : 0) +
             (((rec.flags & 1) != 0) + ((rec.flags & 2) != 0)) * (size_t)rec.count * es;
    }
    return n;
}

static void *fz_save(sc_compressor_t *c, size_t *len)
{
    void *b;

    *len = 0;
    FZ_OK(sc_compressor_save(c, NULL, len));
    b = malloc(*len);
    FZ_CHECK(b, "out of memory for a state of %zu bytes", *len);
    FZ_OK(sc_compressor_save(c, b, len));
    R.saves++;
    return b;
}

/* The saved state of this rank's compressor against the model: every born key's steps,
 * residual and momentum bit for bit, the selector's random draws. */
static void fz_check_state(sc_compressor_t *comp, const fz_case_t *c, const fz_model_t *m,
                           int rank)
{
    size_t len, offs[FZ_MAX_KEYS + 1];
    unsigned char *b = fz_save(comp, &len);
    uint32_t version, nkeys;
    uint64_t h, draws[2];
    int nrec, born = 0;

    memcpy(&version, b + 8, 4);
    memcpy(&nkeys, b + 12, 4);
    memcpy(&h, b + 24, 8);
    FZ_CHECK(memcmp(b, "SCEFSTAT", 8) == 0 && version == 6, "the saved state's magic or "
             "version (%u)", version);
    FZ_CHECK(h == ct_state_hash(b + FZ_STATE_HEADER, len - FZ_STATE_HEADER, 6),
             "the saved state's hash");
    memcpy(draws, b + FZ_STATE_HEADER, 16);
    FZ_CHECK(draws[1] == (c->cfg.mode == SC_TOPK_RANDOM ? m->draws : 0), "the state says %"
             PRIu64 " random draws, the model %" PRIu64, draws[1], m->draws);
    for (int j = 0; j < c->nkeys; j++)
        born += m->k[j].born;
    FZ_CHECK((int)nkeys == born, "the state holds %u keys, the model %d", nkeys, born);
    nrec = fz_state_records(b, len, offs, FZ_MAX_KEYS + 1);
    FZ_CHECK(nrec == born, "%d records parsed of %d keys", nrec, born);
    for (int i = 0; i < nrec; i++) {
        fz_record_t rec;
        const fz_key_t *key = NULL;
        const fz_mkey_t *mk = NULL;
        const unsigned char *p;
        size_t es;

        memcpy(&rec, b + offs[i], sizeof(rec));
        for (int j = 0; j < c->nkeys; j++)
            if (c->keys[j].id == rec.key)
                key = &c->keys[j], mk = &m->k[j];
        FZ_CHECK(key && mk->born, "the state holds key %d, which the model has not", rec.key);
        FZ_CHECK(rec.count == key->count && rec.dtype == (int32_t)key->dtype &&
                 rec.acc == (int32_t)fz_acc(key->dtype) && rec.steps == mk->steps,
                 "key %d: record count %" PRIu64 " dtype %d acc %d steps %" PRId64 ", model "
                 "%zu %d steps %ld", rec.key, rec.count, rec.dtype, rec.acc, rec.steps,
                 key->count, (int)key->dtype, mk->steps);
        FZ_CHECK(((rec.flags & 1) != 0) == c->cfg.error_feedback &&
                 ((rec.flags & 2) != 0) == (c->cfg.momentum > 0.0), "key %d: flags 0x%x",
                 rec.key, rec.flags);
        p = b + offs[i] + FZ_STATE_RECORD + ((rec.flags & 4) ? FZ_STATE_THRESHOLD : 0);
        es = rec.acc == SC_FLOAT64 ? 8 : 4;
        for (int part = 0; part < 2; part++) {
            const double *want = part == 0 ? mk->res[rank] : mk->mom[rank];
            if (!want)
                continue;
            for (size_t e = 0; e < key->count; e++) {
                /* A record follows the previous one's elements: not aligned to them. */
                double got;
                float f;

                if (es == 8) {
                    memcpy(&got, p + e * 8, 8);
                } else {
                    memcpy(&f, p + e * 4, 4);
                    got = f;
                }
                FZ_CHECK(memcmp(&got, &want[e], 8) == 0 || (got == 0 && want[e] == 0),
                         "key %d: %s element %zu is %.17g, the model's %.17g", rec.key,
                         part ? "momentum" : "residual", e, got, want[e]);
            }
            p += key->count * es;
        }
    }
    free(b);
}

/* ---- hostile states ------------------------------------------------------------------- */

typedef enum { FZ_REFUSE, FZ_MAY_LOAD, FZ_LOADS } fz_expect_t;

/* One mutation of the valid state good (len bytes) into *out; what to expect of it. */
static fz_expect_t fz_mutate(fz_rng_t *r, const unsigned char *good, size_t len,
                             unsigned char **out, size_t *olen, char *what, size_t wlen)
{
    size_t offs[FZ_MAX_KEYS + 8], n = len;
    int nrec = fz_state_records(good, len, offs, FZ_MAX_KEYS + 8), kind = (int)fz_below(r, 16);
    unsigned char *b = malloc(len + 64);
    fz_record_t rec;
    fz_expect_t ex = FZ_REFUSE;
    size_t o;

    memcpy(b, good, len);
    if (kind >= 7 && nrec == 0)
        kind = (int)fz_below(r, 7);
    o = nrec ? offs[fz_below(r, (size_t)nrec)] : 0;
    if (nrec)
        memcpy(&rec, b + o, sizeof(rec));
    switch (kind) {
    case 0:
        n = fz_below(r, len);
        snprintf(what, wlen, "truncated to %zu of %zu bytes", n, len);
        break;
    case 1:
        n = len + 1 + fz_below(r, 16);
        memset(b + len, (int)fz_below(r, 256), n - len);
        snprintf(what, wlen, "padded with %zu bytes", n - len);
        if (fz_chance(r, 50)) {
            fz_state_rehash(b, n);
            snprintf(what, wlen, "padded with %zu bytes, rehashed", n - len);
        }
        break;
    case 2: {
        size_t bit = fz_below(r, len * 8);
        uint32_t ver;
        b[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        snprintf(what, wlen, "bit %zu flipped", bit);
        /* The hash covers the payload, not the version: version 6 read as 4 or 2 (6 is
         * 0b110) is a state of case 3 (with a hash those versions compute otherwise). */
        memcpy(&ver, b + 8, 4);
        if (bit / 8 >= 8 && bit / 8 < 12 && ver >= 1 && ver <= 5)
            ex = FZ_MAY_LOAD;
        break;
    }
    case 3: {
        /* Versions 1 to 4 have records 8 or 16 bytes shorter (no origin, no world rank),
         * and version 1 no draws: these bytes read as one of them are anything. Version
         * 5 is version 6 hashed without mixing each word first. */
        static const uint32_t v[] = {0, 7, 5, 0xffffffffu, 4, 3, 2, 1};
        uint32_t ver = v[fz_below(r, 8)];
        memcpy(b + 8, &ver, 4);
        fz_state_rehash(b, n);
        snprintf(what, wlen, "version %u, rehashed", ver);
        ex = ver == 5 ? FZ_LOADS : ver >= 1 && ver <= 4 ? FZ_MAY_LOAD : FZ_REFUSE;
        break;
    }
    case 4: {
        uint32_t nk;
        memcpy(&nk, b + 12, 4);
        nk = (uint32_t[]){nk + 1, nk ? nk - 1 : 7, 0xffffffffu, 0x7fffffffu}[fz_below(r, 4)];
        memcpy(b + 12, &nk, 4);
        fz_state_rehash(b, n);
        snprintf(what, wlen, "nkeys %u, rehashed", nk);
        break;
    }
    case 5: {
        uint64_t pl;
        memcpy(&pl, b + 16, 8);
        pl += fz_chance(r, 50) ? 1 : (uint64_t)-1;
        memcpy(b + 16, &pl, 8);
        snprintf(what, wlen, "payload %" PRIu64, pl);
        break;
    }
    case 6:
        b[fz_below(r, 8)] ^= 0x20;
        snprintf(what, wlen, "magic changed");
        break;
    case 7: {
        static const uint64_t huge[] = {((uint64_t)1 << 60) - 1, (uint64_t)1 << 60,
                                        (uint64_t)1 << 59, (uint64_t)1 << 40, UINT64_MAX};
        uint64_t cnt = fz_chance(r, 50) ? huge[fz_below(r, 5)]
                                        : rec.count + (fz_chance(r, 50) ? 1 : (uint64_t)-1);
        uint64_t es = rec.acc == SC_FLOAT64 ? 8 : 4, was, now;
        was = (((rec.flags & 1) != 0) + ((rec.flags & 2) != 0)) * rec.count * es;
        if (fz_chance(r, 30)) /* residual and momentum both claimed */
            rec.flags |= 3u;
        rec.count = cnt;
        now = (((rec.flags & 1) != 0) + ((rec.flags & 2) != 0)) * (cnt < ((uint64_t)1 << 40)
                                                                       ? cnt * es : 0);
        memcpy(b + o, &rec, sizeof(rec));
        fz_state_rehash(b, n);
        snprintf(what, wlen, "record at %zu: count %" PRIu64 ", flags 0x%x, rehashed", o, cnt,
                 rec.flags);
        /* A record without residual or momentum carries no elements: a huge count is
         * consistent (an earlier state of a compressor without error feedback). A count
         * off by one before the last record shifts the records after it: what they then
         * hold is anything. */
        if ((rec.flags & 3u) == 0 || (cnt < ((uint64_t)1 << 40) && o != offs[nrec - 1]))
            ex = FZ_MAY_LOAD;
        else if (cnt < ((uint64_t)1 << 40) && now == was)
            /* the flags' new buffers fit where the old count's were (a threshold kept
             * for more elements than the new count is refused) */
            ex = (rec.flags & 4u) ? FZ_MAY_LOAD : FZ_LOADS;
        break;
    }
    case 8: {
        static const int32_t bad[] = {99, -1, SC_INT32, SC_UINT8};
        rec.dtype = bad[fz_below(r, 4)];
        memcpy(b + o, &rec, sizeof(rec));
        fz_state_rehash(b, n);
        snprintf(what, wlen, "record at %zu: dtype %d, rehashed", o, rec.dtype);
        break;
    }
    case 9:
        rec.acc = rec.acc == SC_FLOAT64 ? SC_FLOAT32 : SC_FLOAT64;
        memcpy(b + o, &rec, sizeof(rec));
        fz_state_rehash(b, n);
        snprintf(what, wlen, "record at %zu: acc %d, rehashed", o, rec.acc);
        break;
    case 10:
        rec.flags |= 8u << fz_below(r, 28);
        memcpy(b + o, &rec, sizeof(rec));
        fz_state_rehash(b, n);
        snprintf(what, wlen, "record at %zu: flags 0x%x, rehashed", o, rec.flags);
        break;
    case 11:
        if (fz_chance(r, 50)) {
            rec.steps = fz_chance(r, 50) ? -1 : INT64_MIN;
            snprintf(what, wlen, "record at %zu: steps %" PRId64 ", rehashed", o, rec.steps);
        } else { /* an origin no communicator has, or a world rank for none or none for
                  * one, or the reserved word set */
            static const int32_t bad[][4] = {{2, 2, 2, 0},  {-1, 4, 0, 0}, {0, -1, 0, 0},
                                             {1, 0, 1, 0},  {5, 1, 5, 0},  {0, 0, 3, 0},
                                             {1, 2, -1, 0}, {1, 2, -2, 0}, {1, 2, 1, 7}};
            const int32_t *ob = bad[fz_below(r, 9)];
            rec.origin_rank = ob[0];
            rec.origin_size = ob[1];
            rec.origin_world = ob[2];
            rec.reserved = (uint32_t)ob[3];
            snprintf(what, wlen, "record at %zu: origin rank %d of %d, world rank %d, "
                     "reserved %u, rehashed", o, rec.origin_rank, rec.origin_size,
                     rec.origin_world, rec.reserved);
        }
        memcpy(b + o, &rec, sizeof(rec));
        fz_state_rehash(b, n);
        break;
    case 12:
        if (nrec >= 2) {
            int32_t k0;
            memcpy(&k0, b + offs[0], 4);
            memcpy(b + offs[1], &k0, 4);
            fz_state_rehash(b, n);
            snprintf(what, wlen, "key %d twice, rehashed", k0);
        } else {
            rec.key = rec.key == INT32_MAX ? INT32_MIN : rec.key + 1;
            memcpy(b + o, &rec, sizeof(rec));
            fz_state_rehash(b, n);
            snprintf(what, wlen, "the only key renamed %d, rehashed", rec.key);
            ex = FZ_LOADS;
        }
        break;
    case 13:
        if (rec.flags & 4u) {
            unsigned char *t = b + o + FZ_STATE_RECORD;
            if (fz_chance(r, 50)) {
                uint32_t one = 1 + (uint32_t)fz_below(r, 100);
                memcpy(t + 4, &one, 4);
                snprintf(what, wlen, "record at %zu: threshold reserved %u, rehashed", o, one);
            } else {
                uint64_t big = rec.count + 1 + fz_below(r, 1000);
                memcpy(t + 8, &big, 8);
                snprintf(what, wlen, "record at %zu: threshold n %" PRIu64 ", rehashed", o,
                         big);
            }
        } else { /* the steps are any count >= 0 */
            rec.steps = (int64_t)fz_below(r, 1000);
            memcpy(b + o, &rec, sizeof(rec));
            snprintf(what, wlen, "record at %zu: steps %" PRId64 ", rehashed", o, rec.steps);
            ex = FZ_LOADS;
        }
        fz_state_rehash(b, n);
        break;
    case 14: { /* any bytes in a record's header, rehashed */
        size_t at = o + fz_below(r, FZ_STATE_RECORD);
        b[at] = (unsigned char)fz_next(r);
        fz_state_rehash(b, n);
        snprintf(what, wlen, "byte %zu of a record set, rehashed", at);
        ex = FZ_MAY_LOAD;
        break;
    }
    default: { /* any bytes after the records' headers (residuals: any floats) */
        size_t at = FZ_STATE_HEADER + fz_below(r, len - FZ_STATE_HEADER);
        b[at] = (unsigned char)fz_next(r);
        fz_state_rehash(b, n);
        snprintf(what, wlen, "byte %zu set, rehashed", at);
        ex = FZ_MAY_LOAD;
        break;
    }
    }
    if (n == len && memcmp(b, good, len) == 0)
        ex = FZ_LOADS;
    *out = b;
    *olen = n;
    return ex;
}

/* rounds mutations of the valid state good fed to a compressor of configuration cfg that
 * holds good: each is refused with SC_ERR_INVALID_ARG and a sentence of
 * sc_compressor_load, leaving the state as it was, or (where it may) loads. */
static void fz_hostile(const void *good, size_t len, const sc_compress_config_t *cfg,
                       fz_rng_t *r, int rounds)
{
    sc_compressor_t *t;
    unsigned char *before, *after, *m;
    size_t blen, alen, mlen;
    char what[160];

    FZ_OK(sc_compressor_create(cfg, &t));
    FZ_OK(sc_compressor_load(t, good, len));
    before = fz_save(t, &blen);
    for (int i = 0; i < rounds; i++) {
        fz_expect_t ex = fz_mutate(r, good, len, &m, &mlen, what, sizeof(what));
        sc_status_t st;

        FZ_WHAT("hostile load %d: %s", i, what);
        st = sc_compressor_load(t, m, mlen);
        R.hostile++;
        if (st == SC_SUCCESS) {
            FZ_CHECK(ex != FZ_REFUSE, "the load succeeded");
            /* A record without buffers may claim any count: the state it took may be
             * far larger than the buffer (asked for its size only). */
            FZ_OK(sc_compressor_save(t, NULL, &alen));
            FZ_OK(sc_compressor_load(t, before, blen));
        } else {
            FZ_CHECK(ex != FZ_LOADS, "the load returned %s", sc_status_string(st));
            FZ_CHECK(st == SC_ERR_INVALID_ARG || (ex == FZ_MAY_LOAD && st == SC_ERR_NO_MEMORY),
                     "the load returned %s", sc_status_string(st));
            FZ_CHECK(strstr(sc_last_error(), "sc_compressor_load: ") != NULL,
                     "the error \"%s\" does not name sc_compressor_load", sc_last_error());
        }
        after = fz_save(t, &alen);
        FZ_CHECK(alen == blen && memcmp(after, before, blen) == 0,
                 "the state changed (%zu bytes, was %zu)", alen, blen);
        free(after);
        free(m);
    }
    free(before);
    sc_compressor_destroy(t);
}

/* ---- one call ------------------------------------------------------------------------------ */

/* Disagreements: one rank (or every rank) calls otherwise; every rank must fail. */
typedef enum {
    FZ_D_COUNT = 0, FZ_D_DTYPE, FZ_D_OP, FZ_D_BAD_OP, FZ_D_NULL, FZ_D_MISALIGNED,
    FZ_D_KEY_REUSED, FZ_D_CONFIG, FZ_D_KINDS
} fz_dis_t;

static const char *const fz_dis_names[] = {"count", "dtype", "op", "bad op", "NULL sendbuf",
                                           "misaligned recvbuf", "key reused with another count",
                                           "configuration"};

typedef struct {
    sc_compressor_t *comp;
    fz_model_t model;
    fz_shadow_t shadow;
    fz_buf_t last;     /* the previous call's result, kept to see no late write */
    uint64_t last_hash;
    int t;             /* steps done (the gradients' step index) */
} fz_state_t;

static void fz_check_last(fz_state_t *s)
{
    if (!s->last.base)
        return;
    FZ_CHECK(fz_hash(s->last.base + s->last.off, s->last.bytes) == s->last_hash,
             "the previous call's result changed after it returned");
    fz_guards(&s->last, "the previous call's result");
    fz_buf_free(&s->last);
}

/* A correct step on key j: the result, the stats and (often) the saved residuals
 * against the model, bitwise equal across ranks. */
static void fz_step(fz_state_t *s, const fz_case_t *c, fz_rng_t *rng, int j)
{
    const fz_key_t *key = &c->keys[j];
    fz_mkey_t *mk = &s->model.k[j];
    int p = R.w.size, me = R.w.rank, t = s->t;
    size_t n = key->count, es = sc_dtype_size(key->dtype), want_k;
    sc_dtype_t d = key->dtype, acc = fz_acc(d);
    sc_op_t op = fz_chance(rng, 50) ? SC_SUM : SC_AVG;
    int in_place = fz_chance(rng, 30), check_state = n <= 20000 || fz_chance(rng, 20);
    size_t shift = fz_chance(rng, 30) ? es : 0;
    int dense = fz_is_dense(c, mk, key);
    fz_buf_t sb, rb;
    char *send, *recv, *wantb;
    /* gme: this rank's gradient, g another's (each rank's computed once a step) */
    double *gme = fz_scratch(FZ_SCRATCH_MY_GRAD, (n ? n : 1) * sizeof(double));
    double *g = fz_scratch(FZ_SCRATCH_GRAD, (n ? n : 1) * sizeof(double)), *sum, *mag;
    int64_t mine[2], *all = calloc((size_t)p * 2, sizeof(int64_t));
    sc_compress_stats_t stats;
    uint64_t send_hash, recv_hash;
    sc_status_t st;

    FZ_WHAT("step %d on key %d (%zu x %s, %s%s%s, its step %ld)", t, key->id, n,
            sc_dtype_name(d), op == SC_SUM ? "sum" : "avg", in_place ? ", in place" : "",
            dense ? ", dense" : "", mk->steps);
    send = fz_buf(&sb, n * es, shift, 0);
    fz_values(c, j, me, t, n, gme);
    for (size_t e = 0; e < n; e++)
        fz_put(d, send, e, gme[e]);
    send_hash = fz_hash(send, n * es);
    recv = in_place ? send : fz_buf(&rb, n * es, fz_chance(rng, 30) ? es : 0, FZ_FILL_BYTE);
    st = sc_compressed_allreduce(s->comp, R.w.comm, key->id, send, recv, n, d, op);
    FZ_CHECK(st == SC_SUCCESS, "%s", sc_status_string(st));
    R.steps++;
    FZ_OK(sc_compressor_stats(s->comp, &stats));
    /* The hash of the result and this rank's selected count, from every rank; the hash is
     * also the one the next call's fz_check_last compares, so that a late write is seen
     * from the moment this call returned. */
    recv_hash = fz_hash(recv, n * es);
    mine[0] = (int64_t)recv_hash;
    mine[1] = (int64_t)stats.selected;
    FZ_OK(sc_allgather(mine, all, 2, SC_INT64, R.w.comm, NULL, NULL));
    fz_check_last(s);
    for (int r = 0; r < p; r++)
        FZ_CHECK(all[2 * r] == all[0], "results differ across ranks: rank 0's hash %016"
                 PRIx64 ", rank %d's %016" PRIx64, (uint64_t)all[0], r, (uint64_t)all[2 * r]);
    FZ_CHECK(stats.dense == dense, "stats.dense is %d, the model's %d", stats.dense, dense);
    want_k = dense ? 0 : fz_k(c->cfg.density, n);
    if (c->cfg.mode == SC_TOPK_APPROX && !dense) {
        FZ_CHECK(stats.selected <= want_k, "approx selected %zu > k %zu", stats.selected,
                 want_k);
        if (n < 65536)
            FZ_CHECK(stats.selected == want_k, "approx below 2^16 elements selected %zu, "
                     "not k %zu", stats.selected, want_k);
    } else {
        FZ_CHECK(stats.selected == want_k, "stats.selected %zu, k %zu", stats.selected, want_k);
    }
    if (!in_place)
        FZ_CHECK(fz_hash(send, n * es) == send_hash, "sendbuf changed");
    /* The reference: every rank's selection summed in rank order (or the dense sum). The
     * values make every such sum exact in any order, so the order itself is checked by
     * the *sum_follows_rank_order tests (test_sparse, test_compressor, the hook's). */
    sum = memset(fz_scratch(FZ_SCRATCH_SUM, (n ? n : 1) * sizeof(double)), 0, n * 8);
    mag = memset(fz_scratch(FZ_SCRATCH_MAG, (n ? n : 1) * sizeof(double)), 0, n * 8);
    wantb = fz_scratch(FZ_SCRATCH_WANT, n * es + 8);
    if (dense) {
        int tol = (d == SC_FLOAT16 || d == SC_BFLOAT16) && op == SC_AVG && (p & (p - 1));
        for (int r = 0; r < p; r++) {
            const double *gr = r == me ? gme : g;
            if (r != me)
                fz_values(c, j, r, t, n, g);
            for (size_t e = 0; e < n; e++) {
                double v = gr[e];
                if ((d == SC_FLOAT16 || d == SC_BFLOAT16) && op == SC_AVG)
                    v = fz_round(d, fz_mul(SC_FLOAT32, v, 1.0f / (float)p));
                sum[e] += v;
                mag[e] += fabs(v);
            }
        }
        for (size_t e = 0; e < n; e++) {
            double want = sum[e], got = fz_get(d, recv, e);
            if (op == SC_AVG && (d == SC_FLOAT32 || d == SC_FLOAT64))
                want = fz_div(acc, want, p);
            want = fz_round(d, want);
            /* Each of the p - 1 additions rounds by at most half a unit of a partial sum,
             * which is at most the sum of the magnitudes. */
            if (tol)
                FZ_CHECK(fabs(got - want) <= p * ldexp(mag[e], d == SC_FLOAT16 ? -11 : -8),
                         "dense element %zu: got %.17g, want %.17g within rounding", e, got,
                         want);
            else
                fz_put(d, wantb, e, want);
        }
        if (!tol)
            fz_check_same(recv, wantb, n, d, "dense element");
        /* dense steps leave residual and momentum as they were */
    } else {
        if (c->cfg.mode == SC_TOPK_RANDOM && want_k > 0)
            FZ_CHECK(s->shadow.calls == s->model.draws, "stand-ins out of step");
        for (int r = 0; r < p; r++) {
            fz_sel_t sel;
            size_t kr = c->cfg.mode == SC_TOPK_APPROX ? (size_t)all[2 * r + 1] : want_k;
            if (r != me)
                fz_values(c, j, r, t, n, g);
            fz_model_rank(c, mk, j, r, kr, &s->shadow, &sel, r == me ? gme : g);
            for (size_t i = 0; i < sel.k; i++)
                sum[sel.idx[i]] = fz_add(acc, sum[sel.idx[i]], sel.sent[i]);
        }
        if (c->cfg.mode == SC_TOPK_RANDOM && want_k > 0)
            s->shadow.calls++, s->model.draws++;
        for (size_t e = 0; e < n; e++)
            fz_put_rounded(d, wantb, e, op == SC_AVG ? fz_div(acc, sum[e], p) : sum[e]);
        fz_check_same(recv, wantb, n, d, "element");
    }
    mk->steps++;
    mk->born = 1;
    s->t++;
    free(all);
    if (check_state)
        fz_check_state(s->comp, c, &s->model, me);
    /* Keep the result to see that nothing writes it later. */
    if (in_place) {
        s->last = sb;
    } else {
        fz_guards(&sb, "sendbuf");
        fz_buf_free(&sb);
        s->last = rb;
    }
    fz_guards(&s->last, "recvbuf");
    s->last_hash = recv_hash;
}

/* The facts the ranks agree on, in the documented order, for a fresh key. */
static int fz_first_difference(const fz_case_t *c, const sc_compress_config_t *a,
                               const sc_compress_config_t *b, const fz_key_t *key,
                               const char **field)
{
    int64_t fa[8], fb[8];
    const char *names[] = {"step's kind", "k (density", "value dtype", "index_bits", "mode",
                           "error_feedback", "momentum"};
    const sc_compress_config_t *cf[2] = {a, b};
    int64_t *f[2] = {fa, fb};

    for (int i = 0; i < 2; i++) {
        fz_case_t tmp = *c;
        fz_mkey_t mk = {0};
        int dense, bits;
        tmp.cfg = *cf[i];
        dense = fz_is_dense(&tmp, &mk, key);
        bits = cf[i]->index_bits ? cf[i]->index_bits : 32;
        f[i][0] = dense;
        f[i][1] = dense ? 0 : (int64_t)fz_k(cf[i]->density, key->count);
        f[i][2] = dense ? 0 : (cf[i]->values_fp16 ? SC_FLOAT16 : key->dtype);
        f[i][3] = dense ? 0 : bits;
        f[i][4] = cf[i]->mode;
        f[i][5] = cf[i]->error_feedback;
        memcpy(&f[i][6], &cf[i]->momentum, 8);
    }
    for (int i = 0; i < 7; i++)
        if (fa[i] != fb[i]) {
            *field = names[i];
            return 1;
        }
    return 0;
}

/* A call on key j that the ranks disagree on (kind), refused on every rank with the
 * documented status and a sentence that says why; nothing written, the state unchanged.
 * Returns 0 when the kind does not apply to the key. */
static int fz_disagree(fz_state_t *s, const fz_case_t *c, fz_rng_t *rng, int j, fz_dis_t kind)
{
    const fz_key_t *key = &c->keys[j];
    const fz_mkey_t *mk = &s->model.k[j];
    int p = R.w.size, me = R.w.rank, bad = (int)fz_below(rng, (size_t)p);
    int is_bad = me == bad, born = mk->born;
    size_t n = key->count, cn = n, es;
    sc_dtype_t d = key->dtype;
    sc_op_t op = fz_chance(rng, 50) ? SC_SUM : SC_AVG;
    sc_compressor_t *comp = s->comp, *tmp = NULL;
    sc_status_t want = SC_ERR_MISMATCH, st;
    const char *says = NULL, *field = "";
    int id = key->id, misalign = 0, null_send = 0;
    unsigned char *before = NULL, *after;
    size_t blen = 0, alen;
    fz_buf_t sb, rb;
    char *send, *recv;
    uint64_t send_hash;

    switch (kind) {
    case FZ_D_COUNT: {
        int up = fz_chance(rng, 50);
        if (is_bad)
            cn = n == 0 || up ? n + 1 : n - 1;
        if (born) {
            want = is_bad ? SC_ERR_INVALID_ARG : SC_ERR_MISMATCH;
            says = is_bad ? "holds the state" : "failed its own checks";
        } else {
            says = "count";
        }
        break;
    }
    case FZ_D_DTYPE: {
        sc_dtype_t other = fz_dtypes[((size_t)(d == SC_FLOAT32 ? 0 : d == SC_FLOAT64 ? 1
                                                : d == SC_FLOAT16 ? 2 : 3) +
                                      1 + fz_below(rng, 3)) % 4];
        if (is_bad)
            d = other;
        if (born) {
            want = is_bad ? SC_ERR_INVALID_ARG : SC_ERR_MISMATCH;
            says = is_bad ? "holds the state" : "failed its own checks";
        } else {
            says = "dtype";
        }
        break;
    }
    case FZ_D_OP:
        if (is_bad)
            op = op == SC_SUM ? SC_AVG : SC_SUM;
        says = "op";
        break;
    case FZ_D_BAD_OP:
    {
        sc_op_t wrong = (sc_op_t[]){SC_MAX, SC_MIN, SC_PROD}[fz_below(rng, 3)];
        if (is_bad)
            op = wrong;
    }
        want = is_bad ? SC_ERR_INVALID_ARG : SC_ERR_MISMATCH;
        says = is_bad ? "op" : "failed its own checks";
        break;
    case FZ_D_NULL:
    case FZ_D_MISALIGNED:
        if (n == 0)
            return 0;
        null_send = is_bad && kind == FZ_D_NULL;
        misalign = is_bad && kind == FZ_D_MISALIGNED;
        want = is_bad ? SC_ERR_INVALID_ARG : SC_ERR_MISMATCH;
        says = !is_bad ? "failed its own checks" : null_send ? "NULL" : "aligned";
        break;
    case FZ_D_KEY_REUSED:
        if (!born)
            return 0;
        cn = n + 1 + fz_below(rng, 3);
        want = SC_ERR_INVALID_ARG;
        says = "holds the state";
        break;
    default: { /* one rank's compressor configured otherwise, on a fresh key */
        sc_compress_config_t good = fz_rank_cfg(c, me, 0), other = good;
        int which = (int)fz_below(rng, 6);
        switch (which) {
        case 0: other.density = fz_draw_density(rng); break;
        case 1: other.mode = (sc_topk_mode_t)((other.mode + 1 + fz_below(rng, 2)) % 3); break;
        case 2: other.error_feedback = !other.error_feedback; break;
        case 3: other.momentum = other.momentum > 0.0 ? 0.0 : 0.5; break;
        case 4: other.values_fp16 = !other.values_fp16; break;
        default: other.index_bits = other.index_bits == 64 ? 32 : 64; break;
        }
        if (!fz_first_difference(c, &good, &other, key, &field))
            return 0;
        FZ_OK(sc_compressor_create(is_bad ? &other : &good, &tmp));
        comp = tmp;
        says = field;
        break;
    }
    }
    /* One rank cannot disagree with another: only what it refuses itself applies. */
    if (p == 1 && want == SC_ERR_MISMATCH) {
        if (tmp)
            sc_compressor_destroy(tmp);
        return 0;
    }
    FZ_WHAT("disagreement (%s) on rank %d, key %d (%zu x %s), step %d", fz_dis_names[kind],
            bad, id, n, sc_dtype_name(key->dtype), s->t);
    es = sc_dtype_size(d);
    if (!tmp)
        before = fz_save(s->comp, &blen);
    send = fz_buf(&sb, cn * es, 0, 0);
    for (size_t e = 0; e < cn; e++)
        fz_put(d, send, e, fz_value(c, j, me, s->t, e % (n ? n : 1)));
    send_hash = fz_hash(send, cn * es);
    recv = fz_buf(&rb, cn * es + (misalign ? 8 : 0), 0, FZ_FILL_BYTE);
    st = sc_compressed_allreduce(comp, R.w.comm, id, null_send ? NULL : send,
                                 recv + (misalign ? 1 : 0), cn, d, op);
    R.refused++;
    FZ_CHECK(st == want, "%s instead of %s", sc_status_string(st), sc_status_string(want));
    FZ_CHECK(strstr(sc_last_error(), "sc_compressed_allreduce") && strstr(sc_last_error(), says),
             "the error \"%s\" does not say \"%s\"", sc_last_error(), says);
    if (want == SC_ERR_MISMATCH && !is_bad && kind != FZ_D_CONFIG && kind != FZ_D_OP &&
        (born || (kind != FZ_D_COUNT && kind != FZ_D_DTYPE))) {
        char rank_s[32];
        snprintf(rank_s, sizeof(rank_s), "rank %d", bad);
        FZ_CHECK(strstr(sc_last_error(), rank_s), "the error \"%s\" does not name %s",
                 sc_last_error(), rank_s);
    }
    if (want == SC_ERR_MISMATCH && (kind == FZ_D_CONFIG || kind == FZ_D_OP ||
                                    (!born && (kind == FZ_D_COUNT || kind == FZ_D_DTYPE))))
        FZ_CHECK(strstr(sc_last_error(), "ranks disagree"), "the error \"%s\" does not say "
                 "\"ranks disagree\"", sc_last_error());
    for (size_t i = 0; i < rb.bytes; i++)
        FZ_CHECK(rb.base[rb.off + i] == FZ_FILL_BYTE, "recvbuf byte %zu written by a refused "
                 "call", i);
    FZ_CHECK(fz_hash(send, cn * es) == send_hash, "sendbuf changed by a refused call");
    fz_guards(&sb, "sendbuf");
    fz_guards(&rb, "recvbuf");
    fz_buf_free(&sb);
    fz_buf_free(&rb);
    if (tmp) {
        sc_compressor_destroy(tmp);
    } else {
        after = fz_save(s->comp, &alen);
        FZ_CHECK(alen == blen && memcmp(before, after, blen) == 0, "a refused call changed "
                 "the saved state (%zu bytes, was %zu)", alen, blen);
        free(after);
        free(before);
    }
    return 1;
}

/* ---- a case ------------------------------------------------------------------------------- */

typedef struct {
    void *bytes;
    size_t len;
    fz_model_t model;
    int valid;
} fz_snap_t;

static void fz_run_case(long number)
{
    fz_rng_t rng = {rt_mix(R.seed ^ rt_mix((uint64_t)number)), 0};
    int p = R.w.size, me = R.w.rank;
    sc_compress_config_t cfg;
    fz_case_t c;
    fz_state_t s;
    fz_snap_t snap = {0};
    int salt = 0;

    memset(&s, 0, sizeof(s));
    R.case_no = number;
    R.step = 0;
    fz_draw_case(&rng, p, &c);
    R.desc = c.desc;
    FZ_WHAT("creating the compressor");
    cfg = fz_rank_cfg(&c, me, salt);
    FZ_OK(sc_compressor_create(&cfg, &s.comp));
    fz_model_init(&s.model, &c, p);
    if (c.cfg.mode == SC_TOPK_RANDOM)
        fz_shadow_set(&s.shadow, &c, p, 0);
    for (int i = 0; i < c.nsteps; i++) {
        int j = (int)fz_below(&rng, (size_t)c.nkeys), ev = (int)fz_below(&rng, 100);
        R.step = i;
        if (ev < 14) { /* disagreements, then the correct call */
            fz_dis_t kind = (fz_dis_t)fz_below(&rng, FZ_D_KINDS);
            fz_disagree(&s, &c, &rng, j, kind);
        } else if (ev < 24) { /* save, load into a new compressor (or this one) */
            size_t len;
            void *b;
            int how = (int)fz_below(&rng, 3);
            FZ_WHAT("save and load (%s)", how == 0 ? "new compressor" : how == 1 ? "same"
                                                                      : "after a reset");
            b = fz_save(s.comp, &len);
            if (how == 0) {
                sc_compressor_t *n2;
                size_t len2;
                void *b2;
                cfg = fz_rank_cfg(&c, me, ++salt);
                FZ_OK(sc_compressor_create(&cfg, &n2));
                FZ_OK(sc_compressor_load(n2, b, len));
                b2 = fz_save(n2, &len2);
                FZ_CHECK(len2 == len && memcmp(b, b2, len) == 0, "the loaded state saves "
                         "otherwise (%zu bytes, was %zu)", len2, len);
                free(b2);
                sc_compressor_destroy(s.comp);
                s.comp = n2;
            } else {
                if (how == 2)
                    FZ_OK(sc_compressor_reset(s.comp));
                FZ_OK(sc_compressor_load(s.comp, b, len));
            }
            R.loads++;
            if (fz_chance(&rng, 30)) {
                /* A stream of this rank's own: the states differ between ranks. */
                sc_compress_config_t hc = fz_rank_cfg(&c, me, 0);
                fz_rng_t hr = {rt_mix(fz_next(&rng) + (uint64_t)me), 0};
                fz_hostile(b, len, &hc, &hr, 8);
            }
            free(b);
        } else if (ev < 30) { /* a snapshot now, or back to it */
            if (snap.valid && fz_chance(&rng, 60)) {
                FZ_WHAT("roll back to the snapshot");
                FZ_OK(sc_compressor_load(s.comp, snap.bytes, snap.len));
                fz_model_free(&s.model);
                fz_model_copy(&s.model, &snap.model, &c, p);
                if (c.cfg.mode == SC_TOPK_RANDOM)
                    fz_shadow_set(&s.shadow, &c, p, s.model.draws);
                R.rollbacks++;
                fz_check_state(s.comp, &c, &s.model, me);
            } else {
                FZ_WHAT("snapshot");
                free(snap.bytes);
                fz_model_free(&snap.model);
                snap.bytes = fz_save(s.comp, &snap.len);
                fz_model_copy(&snap.model, &s.model, &c, p);
                snap.valid = 1;
            }
        } else if (ev < 32) { /* reset: every key as new */
            FZ_WHAT("reset");
            FZ_OK(sc_compressor_reset(s.comp));
            fz_model_reset(&s.model, &c, p);
            R.resets++;
            fz_check_state(s.comp, &c, &s.model, me);
        }
        fz_step(&s, &c, &rng, j);
    }
    FZ_WHAT("end of the case");
    fz_check_state(s.comp, &c, &s.model, me);
    {
        int64_t one = 1, sum = 0; /* every rank is past its last call */
        FZ_OK(sc_allreduce(&one, &sum, 1, SC_INT64, SC_SUM, R.w.comm, NULL, NULL));
    }
    fz_check_last(&s);
    sc_compressor_destroy(s.comp);
    fz_model_free(&s.model);
    fz_model_free(&snap.model);
    free(snap.bytes);
    fz_shadow_free(&s.shadow);
    R.cases++;
}

/* ---- --load-fuzz: states written here, then mutated ---------------------------------------- */

/* A valid state of nkeys records for a compressor of configuration cfg, built by hand in
 * the saved format (version 6), so that the load sees states no run produced. */
static unsigned char *fz_forge(fz_rng_t *r, const sc_compress_config_t *cfg, size_t *len)
{
    int nkeys = (int)fz_below(r, FZ_MAX_KEYS + 1);
    size_t cap = FZ_STATE_HEADER + FZ_STATE_DRAWS, o;
    unsigned char *b;
    fz_record_t recs[FZ_MAX_KEYS];
    int thr[FZ_MAX_KEYS];

    for (int i = 0; i < nkeys; i++) {
        sc_dtype_t d = fz_dtypes[fz_below(r, 4)];
        recs[i] = (fz_record_t){(int32_t)(i * 7 - 3), d, fz_acc(d),
                                (cfg->error_feedback ? 1u : 0u) |
                                    (cfg->momentum > 0.0 ? 2u : 0u),
                                fz_below(r, 70), (int64_t)fz_below(r, 50), 0, 0, -1, 0};
        if (fz_chance(r, 60)) { /* made on rank origin_rank of origin_size */
            recs[i].origin_size = 1 + (int32_t)fz_below(r, 8);
            recs[i].origin_rank = (int32_t)fz_below(r, (uint64_t)recs[i].origin_size);
            recs[i].origin_world = recs[i].origin_rank + (int32_t)fz_below(r, 8);
        }
        if (fz_chance(r, 15)) /* a record of another configuration: the load skips it */
            recs[i].flags ^= 1u << fz_below(r, 2);
        thr[i] = fz_chance(r, 30);
        if (thr[i])
            recs[i].flags |= 4u;
        cap += FZ_STATE_RECORD + (thr[i] ? FZ_STATE_THRESHOLD : 0) +
               (((recs[i].flags & 1) != 0) + ((recs[i].flags & 2) != 0)) * recs[i].count *
                   (recs[i].acc == SC_FLOAT64 ? 8 : 4);
    }
    b = calloc(1, cap);
    memcpy(b, "SCEFSTAT", 8);
    memcpy(b + 8, &(uint32_t){6}, 4);
    memcpy(b + 12, &(uint32_t){(uint32_t)nkeys}, 4);
    memcpy(b + FZ_STATE_HEADER, &(uint64_t){fz_below(r, 5)}, 8);
    memcpy(b + FZ_STATE_HEADER + 8, &(uint64_t){fz_below(r, 5)}, 8);
    o = FZ_STATE_HEADER + FZ_STATE_DRAWS;
    for (int i = 0; i < nkeys; i++) {
        size_t es = recs[i].acc == SC_FLOAT64 ? 8 : 4;
        memcpy(b + o, &recs[i], sizeof(recs[i]));
        o += FZ_STATE_RECORD;
        if (thr[i]) {
            int32_t td = recs[i].dtype;
            uint64_t tn = recs[i].count, tk = fz_next(r);
            memcpy(b + o, &td, 4);
            memcpy(b + o + 8, &tn, 8);
            memcpy(b + o + 16, &tk, 8);
            o += FZ_STATE_THRESHOLD;
        }
        for (int part = 0; part < 2; part++) {
            if (!(recs[i].flags & (1u << part)))
                continue;
            for (uint64_t e = 0; e < recs[i].count; e++) {
                double v = ldexp((double)((int)fz_below(r, 64) - 32), -3);
                if (es == 8)
                    memcpy(b + o, &v, 8);
                else
                    memcpy(b + o, &(float){(float)v}, 4);
                o += es;
            }
        }
    }
    fz_state_rehash(b, cap);
    *len = cap;
    return b;
}

/* The state a compressor took from the forged state good, saved again: the same draws
 * and records, each with the buffers of this configuration: the forged ones where the
 * record had them, else zero. */
static void fz_check_forged(sc_compressor_t *t, const sc_compress_config_t *cfg,
                            const unsigned char *good, size_t len)
{
    size_t slen, go[FZ_MAX_KEYS], so[FZ_MAX_KEYS];
    unsigned char *saved = fz_save(t, &slen);
    int ng = fz_state_records(good, len, go, FZ_MAX_KEYS);
    int ns = fz_state_records(saved, slen, so, FZ_MAX_KEYS);

    FZ_WHAT("the forged state saved again");
    FZ_CHECK(ng == ns, "%d records saved of %d loaded", ns, ng);
    FZ_CHECK(memcmp(good + FZ_STATE_HEADER, saved + FZ_STATE_HEADER, FZ_STATE_DRAWS) == 0,
             "the draws changed");
    for (int i = 0; i < ng; i++) {
        fz_record_t a, b;
        const unsigned char *pa, *pb;
        size_t bytes;
        memcpy(&a, good + go[i], sizeof(a));
        memcpy(&b, saved + so[i], sizeof(b));
        FZ_CHECK(a.key == b.key && a.dtype == b.dtype && a.acc == b.acc &&
                 a.count == b.count && a.steps == b.steps &&
                 a.origin_rank == b.origin_rank && a.origin_size == b.origin_size &&
                 a.origin_world == b.origin_world &&
                 b.flags == ((cfg->error_feedback ? 1u : 0u) | (cfg->momentum > 0.0 ? 2u : 0u) |
                             (a.flags & 4u)), "record %d: key %d/%d count %" PRIu64 "/%" PRIu64
                 " steps %" PRId64 "/%" PRId64 " flags 0x%x/0x%x", i, a.key, b.key, a.count,
                 b.count, a.steps, b.steps, a.flags, b.flags);
        pa = good + go[i] + FZ_STATE_RECORD;
        pb = saved + so[i] + FZ_STATE_RECORD;
        if (a.flags & 4u) {
            FZ_CHECK(memcmp(pa, pb, FZ_STATE_THRESHOLD) == 0, "record %d: the threshold", i);
            pa += FZ_STATE_THRESHOLD;
            pb += FZ_STATE_THRESHOLD;
        }
        bytes = (size_t)a.count * (a.acc == SC_FLOAT64 ? 8 : 4);
        for (unsigned part = 1; part <= 2; part++) {
            if (!(b.flags & part)) {
                pa += (a.flags & part) ? bytes : 0;
                continue;
            }
            for (size_t x = 0; x < bytes; x++)
                FZ_CHECK(pb[x] == ((a.flags & part) ? pa[x] : 0), "record %d: byte %zu of "
                         "the %s", i, x, part == 1 ? "residual" : "momentum");
            pa += (a.flags & part) ? bytes : 0;
            pb += bytes;
        }
    }
    free(saved);
}

static void fz_load_case(long number)
{
    fz_rng_t rng = {rt_mix(R.seed ^ rt_mix((uint64_t)number)), 0};
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
    sc_compressor_t *t;
    unsigned char *good;
    size_t len;
    char desc[160];

    R.case_no = number;
    cfg.error_feedback = fz_chance(&rng, 70);
    cfg.momentum = fz_chance(&rng, 30) ? 0.5 : 0.0;
    cfg.mode = (sc_topk_mode_t)fz_below(&rng, 3);
    cfg.threads = 1;
    good = fz_forge(&rng, &cfg, &len);
    snprintf(desc, sizeof(desc), "forged state of %zu bytes, compressor ef %d momentum %g",
             len, cfg.error_feedback, cfg.momentum);
    R.desc = desc;
    FZ_WHAT("loading the forged state");
    FZ_OK(sc_compressor_create(&cfg, &t));
    FZ_OK(sc_compressor_load(t, good, len));
    fz_check_forged(t, &cfg, good, len);
    sc_compressor_destroy(t);
    fz_hostile(good, len, &cfg, &rng, 40);
    free(good);
    R.cases++;
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr,
            "usage: test_compress_fuzz --seed S [--cases N] [--seconds T] [--case C]\n"
            "                          [--max-count M] [--load-fuzz]\n"
            "  Under scrun: from seed S (decimal or 0x hex) every rank draws the same cases\n"
            "  (a compressor configuration, 1-%d keys of up to M elements (default 200000),\n"
            "  3-16 steps with save/load, roll-backs, resets and disagreements) and runs them\n"
            "  until N cases (default 200) or T seconds (rank 0's clock, read after each\n"
            "  case) have passed, whichever comes first. --case C runs only case C (the\n"
            "  reproducer a failure prints). --load-fuzz: no communicator; forged states and\n"
            "  their mutations fed to sc_compressor_load, with the address space capped at\n"
            "  4 GiB (not in sanitized builds). Exits 1 on a failure, after printing the case\n"
            "  and a reproducer.\n",
            FZ_MAX_KEYS);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"seed", required_argument, NULL, 's'},
                                         {"cases", required_argument, NULL, 'n'},
                                         {"seconds", required_argument, NULL, 't'},
                                         {"case", required_argument, NULL, 'c'},
                                         {"max-count", required_argument, NULL, 'm'},
                                         {"load-fuzz", no_argument, NULL, 'l'},
                                         {NULL, 0, NULL, 0}};
    uint64_t max_cases = 200, one = 0, v = 0;
    double seconds = 0, t0 = rt_now();
    int opt, have_seed = 0, only_one = 0, stop = 0;
    char *end;

    setvbuf(stdout, NULL, _IOLBF, 0);
    R.max_count = 200000;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int ok = 1;
        switch (opt) {
        case 's': ok = have_seed = sc_parse_u64(optarg, &R.seed); break;
        case 'n': ok = sc_parse_u64(optarg, &max_cases); break;
        case 'c': ok = only_one = sc_parse_u64(optarg, &one); break;
        case 'm': ok = sc_parse_u64(optarg, &v) && v >= 1; R.max_count = (size_t)v; break;
        case 'l': R.load_fuzz = 1; break;
        case 't':
            seconds = strtod(optarg, &end);
            ok = !*end && seconds >= 0;
            break;
        default: ok = 0; break;
        }
        if (!ok) {
            usage();
            return 2;
        }
    }
    if (!have_seed || optind != argc) {
        usage();
        return 2;
    }
    R.prog = argv[0];
    if (R.load_fuzz) {
        /* A state that claims more than it holds must not make the load allocate it.
         * Not under a sanitizer, whose shadow memory is most of the address space. */
        if (!FZ_SANITIZED) {
            struct rlimit lim = {(rlim_t)4 << 30, (rlim_t)4 << 30};
            FZ_CHECK(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit");
        }
        R.w.rank = 0;
        R.w.size = 1;
        for (long c = only_one ? (long)one : 0; !stop; c++) {
            fz_load_case(c);
            stop = only_one || R.cases >= (long)max_cases ||
                   (seconds > 0 && rt_now() - t0 >= seconds);
        }
        printf("load fuzz seed 0x%" PRIx64 ": %ld forged states, %ld hostile loads, %.2f s\n",
               R.seed, R.cases, R.hostile, rt_now() - t0);
        return 0;
    }
    rt_rank = -1;
    (void)sc_fuzz_env_prefix(); /* the environment before sc_comm_init adds to it */
    FZ_WHAT("sc_comm_init_from_env");
    FZ_OK(sc_comm_init_from_env(&R.w.comm));
    R.w.rank = rt_rank = sc_comm_rank(R.w.comm);
    R.w.size = sc_comm_size(R.w.comm);
    FZ_CHECK(R.w.size <= FZ_MAX_RANKS, "at most %d ranks", FZ_MAX_RANKS);
    for (long c = only_one ? (long)one : 0; !stop; c++) {
        int64_t mine, all0 = 0;
        fz_run_case(c);
        mine = only_one || R.cases >= (long)max_cases ||
               (seconds > 0 && rt_now() - t0 >= seconds);
        /* rank 0 decides for everyone */
        FZ_OK(sc_broadcast(&mine, &all0, 1, SC_INT64, 0, R.w.comm, NULL, NULL));
        stop = (int)all0;
    }
    FZ_OK(sc_comm_destroy(R.w.comm));
    fz_scratch_free();
    if (R.w.rank == 0)
        printf("seed 0x%" PRIx64 ": %ld cases, %ld steps, %ld refused calls, %ld saves, %ld "
               "loads, %ld roll-backs, %ld resets, %ld hostile loads on %d ranks, %.2f s\n",
               R.seed, R.cases, R.steps, R.refused, R.saves, R.loads, R.rollbacks, R.resets,
               R.hostile, R.w.size, rt_now() - t0);
    return 0;
}
