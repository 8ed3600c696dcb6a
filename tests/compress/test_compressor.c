/* The compressor and sc_compressed_allreduce across ranks, one behaviour per test
 * (argv[1]), each against a reference computed here:
 *   first_step_matches_topk DTYPE FP16 BITS OP   the sum over ranks of each rank's own
 *                                     top-k (sort by magnitude here), values rounded
 *                                     to the wire's dtype, avg divided by the ranks;
 *                                     in place and out of place; bit for bit the same
 *                                     on every rank; the stats
 *   error_feedback_conserves_the_sum DTYPE FP16 [N MODE [jump]]   over many steps and
 *                                     then steps of zero gradients that drain the
 *                                     residual, the sum of the results equals the sum of
 *                                     every gradient (N above 2^16: the selection's
 *                                     sampled, block-filled path; MODE exact, approx or
 *                                     random; jump: gradients 4096 times larger from the
 *                                     middle step on, past an approximate threshold kept
 *                                     from the step before, whose scan then overflows
 *                                     part way and gives way to the exact selection)
 *   momentum_correction_matches_reference [N M THREADS]   DGC: u = m u + g, v = r + u,
 *                                     sent entries cleared from r and u, simulated here
 *                                     per rank (M 0: error feedback alone)
 *   warmup_steps_are_dense
 *   density_one_is_dense              a dense all-reduce unless values_fp16
 *   reset_clears_residuals_and_restarts_warmup
 *   save_load_round_trip [N MODE]     a loaded state continues bit for bit as the saved
 *                                     one (MODE approx: the keys' kept thresholds and the
 *                                     samples drawn; random: the calls drawn; N above
 *                                     2^16 for a kept threshold); truncated, corrupted
 *                                     and foreign buffers are refused and change nothing
 *   state_of_another_rank_is_refused  a state loaded on another rank or world size
 *                                     fails its next step on every rank
 *   refused_step_leaves_an_unknown_origin   a state of an earlier format (no origin)
 *                                     that a refused step ran on stays of no origin: its
 *                                     save is unchanged, and it still steps on a
 *                                     communicator of another size
 *   state_of_another_split_rank_names_world_ranks   on a split, the refusal names the
 *                                     world ranks of the rank that made the state (format
 *                                     5) and of this one
 *   fp16_values_saturate DTYPE        values_fp16: a finite value past float16's range
 *                                     goes as +-65504 and the rest stays in the residual
 *                                     (sent at the next step); an Inf gradient still
 *                                     arrives as Inf
 *   overflow_step_is_not_kept MODE MOMENTUM   an all-NaN gradient on rank 0 (an
 *                                     overflowed backward) shows in that step's result
 *                                     and is not kept: the next step's result is rank
 *                                     0's selection of its new gradient alone
 *   compressed_sum_follows_rank_order   every rank's top 1 at the same element, of
 *                                     values whose float32 (float64) sum depends on the
 *                                     order (float32 and float16 values, float64), also
 *                                     once rounded to a float16 or bfloat16 gradient's
 *                                     result: the sum in rank order, rank 0 first, on
 *                                     every rank */
#include "compress_test.h"

#define SEED 0xef0001ull

/* Gradient element e of key `key` on rank r in step t. */
static double grad_value(int r, int t, int key, size_t e)
{
    return ct_value(rt_mix(SEED ^ ((uint64_t)r << 48) ^ ((uint64_t)t << 32) ^
                           ((uint64_t)key << 24) ^ e) % (1u << 21));
}

static void fill(sc_dtype_t d, void *buf, size_t n, int r, int t, int key)
{
    for (size_t e = 0; e < n; e++)
        ct_store(d, buf, e, ct_round(d, grad_value(r, t, key, e)));
}

static size_t k_of(double density, size_t n)
{
    size_t k = (size_t)floor(density * (double)n + 0.5);
    return k > n ? n : (n > 0 && k == 0 ? 1 : k);
}

/* Selection mode and threads of the compressors make() creates (a test's arguments). */
static sc_topk_mode_t g_mode = SC_TOPK_EXACT;
static int g_threads = 0;

static sc_compressor_t *make(double density, int fp16, int bits, int ef, double momentum,
                             int warmup)
{
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
    sc_compressor_t *c = NULL;

    cfg.mode = g_mode;
    cfg.threads = g_threads;
    cfg.density = density;
    cfg.values_fp16 = fp16;
    cfg.index_bits = bits;
    cfg.error_feedback = ef;
    cfg.momentum = momentum;
    cfg.warmup_steps = warmup;
    if (sc_compressor_create(&cfg, &c) != SC_SUCCESS)
        fprintf(stderr, "sc_compressor_create: %s\n", sc_last_error());
    return c;
}

static int test_first_step_matches_topk(int argc, char **argv)
{
    sc_dtype_t d = SC_FLOAT32, wire;
    int fp16 = argc > 1 && atoi(argv[1]), bits = argc > 2 ? atoi(argv[2]) : 0;
    sc_op_t op = SC_SUM;
    const size_t n = 3001;
    const double density = 0.02;
    size_t k = k_of(density, n), *idx = malloc(k * sizeof(size_t));
    double *g = malloc(n * sizeof(double)), *want = calloc(n, sizeof(double));
    void *send = malloc(n * 8), *recv = malloc(n * 8);
    sc_compress_stats_t stats;
    sc_compressor_t *c;
    rt_world_t w;

    if (argc > 0)
        sc_dtype_from_name(argv[0], &d);
    if (argc > 3)
        sc_op_from_name(argv[3], &op);
    wire = fp16 ? SC_FLOAT16 : d;
    if (rt_world(&w))
        return 1;
    for (int r = 0; r < w.size; r++) {
        for (size_t e = 0; e < n; e++)
            g[e] = ct_round(d, grad_value(r, 0, 0, e));
        ct_topk(g, n, k, idx);
        for (size_t j = 0; j < k; j++)
            want[idx[j]] += ct_round(wire, g[idx[j]]);
    }
    c = make(density, fp16, bits, 1, 0.0, 0);
    CHECK(c, "no compressor");
    for (int inplace = 0; inplace < 2; inplace++) {
        fill(d, send, n, w.rank, 0, 0);
        CHECK_OK(sc_compressed_allreduce(c, w.comm, inplace, send, inplace ? send : recv, n,
                                         d, op));
        for (size_t e = 0; e < n; e++) {
            double got = rt_load(d, inplace ? send : recv, e);
            double exp = ct_round(d, op == SC_AVG ? want[e] / w.size : want[e]);
            CHECK(got == exp, "%s element %zu is %.17g, expected %.17g", inplace ?
                  "in place:" : "out of place:", e, got, exp);
        }
        if (ct_check_same_bits(&w, inplace ? send : recv, n * rt_size(d)))
            return 1;
        CHECK_OK(sc_compressor_stats(c, &stats));
        CHECK(stats.selected == k && !stats.dense, "stats: %zu selected, dense %d",
              stats.selected, stats.dense);
        CHECK(stats.bytes_sent >= (size_t)(w.size - 1) * k * (rt_size(wire) + 4),
              "stats: %zu bytes sent", stats.bytes_sent);
    }
    sc_compressor_destroy(c);
    CHECK_OK(sc_comm_destroy(w.comm));
    free(idx), free(g), free(want), free(send), free(recv);
    return 0;
}

static int test_error_feedback_conserves_the_sum(int argc, char **argv)
{
    sc_dtype_t d = SC_FLOAT32;
    int fp16 = argc > 1 && atoi(argv[1]);
    const size_t n = argc > 2 ? (size_t)atol(argv[2]) : 1000;
    const int random = argc > 3 && !strcmp(argv[3], "random");
    const int jump = argc > 4 && !strcmp(argv[4], "jump");
    /* Enough drain steps to send every element left (random-k: each is missed with
     * probability 0.9 per step). */
    const double density = n > 65536 ? 0.1 : 0.05;
    const int steps = n > 65536 ? 6 : 20, drain = random ? 250 : n > 65536 ? 40 : 30;
    double *sent = calloc(n, sizeof(double)), *given = calloc(n, sizeof(double));
    double *tol = calloc(n, sizeof(double)), mag = 0;
    void *g = malloc(n * 8), *out = malloc(n * 8);
    sc_compressor_t *c;
    rt_world_t w;

    if (argc > 0)
        sc_dtype_from_name(argv[0], &d);
    if (argc > 3)
        g_mode = !strcmp(argv[3], "approx") ? SC_TOPK_APPROX : !strcmp(argv[3], "random")
                                                                   ? SC_TOPK_RANDOM
                                                                   : SC_TOPK_EXACT;
    /* Several fill blocks and chunks, whatever the cores; after a jump, one chunk, so
     * that its list passes the approximate pass's limit before its end and the rest of
     * v is filled without a scan. */
    g_threads = jump ? 1 : 3;
    if (rt_world(&w))
        return 1;
    c = make(density, fp16, 0, 1, 0.0, 0);
    CHECK(c, "no compressor");
    for (int t = 0; t < steps + drain; t++) {
        /* A power of two: the scaled gradients are exact. */
        double scale = jump && t >= steps / 2 ? 4096.0 : 1.0;
        for (size_t e = 0; e < n; e++) {
            for (int r = 0; r < w.size && t < steps; r++)
                given[e] += scale * ct_round(d, grad_value(r, t, 0, e));
            mag = fmax(mag, fabs(given[e]));
        }
        if (t < steps)
            fill(d, g, n, w.rank, t, 0);
        else
            memset(g, 0, n * rt_size(d));
        for (size_t e = 0; e < n && scale != 1.0 && t < steps; e++)
            ct_store(d, g, e, scale * rt_load(d, g, e));
        CHECK_OK(sc_compressed_allreduce(c, w.comm, 0, g, out, n, d, SC_SUM));
        for (size_t e = 0; e < n; e++) {
            sent[e] += rt_load(d, out, e);
            tol[e] += 2 * fabs(rt_load(d, out, e)) * rt_unit(d);
        }
    }
    /* What may be left: the roundings of the results (in their dtype), of v = r + g on
     * every rank and step (float32), and a residual below float16's smallest subnormal
     * per element and rank that values_fp16 cannot send. */
    for (size_t e = 0; e < n; e++) {
        double t = tol[e] + w.size * (steps + drain) * ldexp(1.0, -23) * (mag + 16);
        CHECK(fabs(sent[e] - given[e]) <= t, "element %zu: %.17g sent in all, %.17g given, "
              "tolerance %g", e, sent[e], given[e], t);
    }
    sc_compressor_destroy(c);
    CHECK_OK(sc_comm_destroy(w.comm));
    free(sent), free(given), free(tol), free(g), free(out);
    return 0;
}

static int test_momentum_correction_matches_reference(int argc, char **argv)
{
    const size_t n = argc > 0 ? (size_t)atol(argv[0]) : 400;
    const double density = n > 65536 ? 0.01 : 0.05;
    const float m = argc > 1 ? (float)atof(argv[1]) : 0.875f;
    size_t k = k_of(density, n), *idx = malloc(k * sizeof(*idx));
    int steps = n > 65536 ? 5 : 12;
    float *res, *u, *got = malloc(n * sizeof(float)), *g = malloc(n * sizeof(float));
    double *v = malloc(n * sizeof(double)), *want = malloc(n * sizeof(double));
    sc_compressor_t *c;
    rt_world_t w;

    g_threads = argc > 2 ? atoi(argv[2]) : 0;
    if (rt_world(&w))
        return 1;
    res = calloc(n * (size_t)w.size, sizeof(float));
    u = calloc(n * (size_t)w.size, sizeof(float));
    c = make(density, 0, 0, 1, m, 0);
    CHECK(c, "no compressor");
    for (int t = 0; t < steps; t++) {
        memset(want, 0, n * sizeof(double));
        for (int r = 0; r < w.size; r++) {
            float *rr = res + (size_t)r * n, *ur = u + (size_t)r * n;
            for (size_t e = 0; e < n; e++) {
                float x = (float)grad_value(r, t, 1, e);
                ur[e] = m * ur[e] + x;
                rr[e] = rr[e] + ur[e];
                v[e] = rr[e];
            }
            ct_topk(v, n, k, idx);
            for (size_t j = 0; j < k; j++) {
                want[idx[j]] = (float)(want[idx[j]] + rr[idx[j]]);
                rr[idx[j]] = 0.0f;
                ur[idx[j]] = 0.0f;
            }
        }
        fill(SC_FLOAT32, g, n, w.rank, t, 1);
        CHECK_OK(sc_compressed_allreduce(c, w.comm, 3, g, got, n, SC_FLOAT32, SC_SUM));
        for (size_t e = 0; e < n; e++)
            CHECK(fabs(got[e] - want[e]) <= 1e-6 * fabs(want[e]), "step %d element %zu is "
                  "%.9g, expected %.9g", t, e, got[e], want[e]);
    }
    sc_compressor_destroy(c);
    CHECK_OK(sc_comm_destroy(w.comm));
    free(res), free(u), free(got), free(g), free(v), free(want), free(idx);
    return 0;
}

/* Every element of got is the sum over ranks of step t's gradients (exact). */
static int check_dense(rt_world_t *w, const float *got, size_t n, int t, int key)
{
    for (size_t e = 0; e < n; e++) {
        double x = 0;
        for (int r = 0; r < w->size; r++)
            x += (float)grad_value(r, t, key, e);
        CHECK(got[e] == x, "step %d element %zu is %.9g, the dense sum %.9g", t, e, got[e], x);
    }
    return 0;
}

static size_t nonzeros(const float *x, size_t n)
{
    size_t z = 0;
    for (size_t e = 0; e < n; e++)
        z += x[e] != 0.0f;
    return z;
}

/* Density 1 in the gradient's dtype: a dense all-reduce (the dense sum, nothing
 * selected); with float16 values on the wire it stays a sparse step of every element. */
static int test_density_one_is_dense(int argc, char **argv)
{
    const size_t n = 3000;
    float *g = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    sc_compress_stats_t s;
    sc_compressor_t *c;
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    for (int fp16 = 0; fp16 <= 1; fp16++) {
        c = make(1.0, fp16, 0, 1, 0.0, 0);
        CHECK(c, "no compressor");
        for (int t = 0; t < 2; t++) {
            fill(SC_FLOAT32, g, n, w.rank, t, 4);
            CHECK_OK(sc_compressed_allreduce(c, w.comm, 1, g, out, n, SC_FLOAT32, SC_SUM));
            CHECK_OK(sc_compressor_stats(c, &s));
            CHECK(s.dense == !fp16 && s.selected == (fp16 ? n : 0), "values_fp16 %d step %d: "
                  "stats.dense %d, %zu selected", fp16, t, s.dense, s.selected);
            if (!fp16 && check_dense(&w, out, n, t, 4))
                return 1;
        }
        sc_compressor_destroy(c);
    }
    CHECK_OK(sc_comm_destroy(w.comm));
    free(g), free(out);
    return 0;
}

static int test_warmup_steps_are_dense(int argc, char **argv)
{
    const size_t n = 2000;
    float *g = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    sc_compress_stats_t s;
    sc_compressor_t *c;
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    c = make(0.01, 0, 0, 1, 0.5, 3);
    CHECK(c, "no compressor");
    for (int t = 0; t < 5; t++) {
        fill(SC_FLOAT32, g, n, w.rank, t, 2);
        CHECK_OK(sc_compressed_allreduce(c, w.comm, 9, g, out, n, SC_FLOAT32, SC_SUM));
        CHECK_OK(sc_compressor_stats(c, &s));
        CHECK(s.dense == (t < 3), "step %d: stats.dense is %d", t, s.dense);
        if (t < 3 && check_dense(&w, out, n, t, 2))
            return 1;
        if (t >= 3)
            CHECK(nonzeros(out, n) <= (size_t)w.size * 20 && s.selected == 20,
                  "step %d: %zu non-zero elements, %zu selected", t, nonzeros(out, n),
                  s.selected);
    }
    sc_compressor_destroy(c);
    CHECK_OK(sc_comm_destroy(w.comm));
    free(g), free(out);
    return 0;
}

/* After a reset a key is new: it may come back with another count and dtype, also one
 * that a state loaded from another compressor bound to its own count. */
static int reset_frees_keys_for_other_counts(rt_world_t *w, sc_compressor_t *c, float *g,
                                            float *out, size_t n)
{
    sc_compressor_t *other = make(0.1, 0, 0, 1, 0.0, 0);
    double g64[7] = {0, 0, 5, 0, 0, 0, 0}, out64[7];
    void *state;
    size_t len = 0;

    CHECK(other, "no compressor");
    fill(SC_FLOAT32, g, n / 2, w->rank, 0, 3);
    CHECK_OK(sc_compressed_allreduce(other, w->comm, 0, g, out, n / 2, SC_FLOAT32, SC_SUM));
    CHECK_OK(sc_compressor_save(other, NULL, &len));
    CHECK((state = malloc(len)) != NULL, "malloc");
    CHECK_OK(sc_compressor_save(other, state, &len));
    CHECK_OK(sc_compressor_load(c, state, len)); /* key 0 now holds n / 2 elements */
    CHECK_STATUS(sc_compressed_allreduce(c, w->comm, 0, g, out, n, SC_FLOAT32, SC_SUM),
                 SC_ERR_INVALID_ARG);
    CHECK_OK(sc_compressor_reset(c));
    CHECK_OK(sc_compressed_allreduce(c, w->comm, 0, g, out, n, SC_FLOAT32, SC_SUM));
    CHECK_OK(sc_compressor_reset(c));
    CHECK_OK(sc_compressed_allreduce(c, w->comm, 0, g64, out64, 7, SC_FLOAT64, SC_SUM));
    CHECK(out64[2] == 5.0 * w->size, "float64 key after the reset: %g", out64[2]);
    free(state);
    sc_compressor_destroy(other);
    return 0;
}

static int test_reset_clears_residuals_and_restarts_warmup(int argc, char **argv)
{
    const size_t n = 500;
    float *g = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    sc_compress_stats_t s;
    sc_compressor_t *c, *cw;
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    c = make(0.1, 0, 0, 1, 0.0, 0);
    cw = make(0.1, 0, 0, 1, 0.0, 1);
    CHECK(c && cw, "no compressor");
    fill(SC_FLOAT32, g, n, w.rank, 0, 3);
    CHECK_OK(sc_compressed_allreduce(c, w.comm, 0, g, out, n, SC_FLOAT32, SC_SUM));
    CHECK_OK(sc_compressor_reset(c));
    /* A zero gradient after the reset sends zeros only: the residual is gone. */
    memset(g, 0, n * sizeof(float));
    CHECK_OK(sc_compressed_allreduce(c, w.comm, 0, g, out, n, SC_FLOAT32, SC_SUM));
    CHECK(nonzeros(out, n) == 0, "%zu non-zero elements after the reset", nonzeros(out, n));
    for (int t = 0; t < 2; t++) {
        fill(SC_FLOAT32, g, n, w.rank, t, 3);
        CHECK_OK(sc_compressed_allreduce(cw, w.comm, 1, g, out, n, SC_FLOAT32, SC_SUM));
    }
    CHECK_OK(sc_compressor_reset(cw));
    fill(SC_FLOAT32, g, n, w.rank, 7, 3);
    CHECK_OK(sc_compressed_allreduce(cw, w.comm, 1, g, out, n, SC_FLOAT32, SC_SUM));
    CHECK_OK(sc_compressor_stats(cw, &s));
    CHECK(s.dense == 1, "the step after the reset is not a warm-up step");
    if (check_dense(&w, out, n, 7, 3))
        return 1;
    if (reset_frees_keys_for_other_counts(&w, c, g, out, n))
        return 1;
    sc_compressor_destroy(c);
    sc_compressor_destroy(cw);
    CHECK_OK(sc_comm_destroy(w.comm));
    free(g), free(out);
    return 0;
}

/* Steps t0..t1 of keys 0 (float32, n elements, results at out) and 1 (bfloat16,
 * n / 2 + 1, avg, results after key 0's). */
static int run_steps(rt_world_t *w, sc_compressor_t *c, int t0, int t1, size_t n, void *g,
                     char *out)
{
    for (int t = t0; t < t1; t++) {
        fill(SC_FLOAT32, g, n, w->rank, t, 4);
        CHECK_OK(sc_compressed_allreduce(c, w->comm, 0, g, out, n, SC_FLOAT32, SC_SUM));
        fill(SC_BFLOAT16, g, n / 2 + 1, w->rank, t, 5);
        CHECK_OK(sc_compressed_allreduce(c, w->comm, 1, g, out + n * 4, n / 2 + 1,
                                         SC_BFLOAT16, SC_AVG));
    }
    return 0;
}

/* The state as version 3 or 4 wrote it (records without their origin, the last 16 of
 * version 5's 48 bytes, or without its world rank, the last 8) of the version-5 state v5
 * (len bytes); *old_len its length. */
static unsigned char *state_older(const unsigned char *v5, size_t len, uint32_t version,
                                  size_t *old_len)
{
    const size_t head = 32, draws = 16, rec5 = 48, threshold = 24;
    const size_t rec = version == 4 ? 40 : 32;
    unsigned char *old = malloc(len);
    size_t i = head + draws, o = head + draws;
    uint32_t nkeys;
    uint64_t payload, hash;

    if (!old)
        return NULL;
    memcpy(old, v5, head + draws);
    memcpy(&nkeys, v5 + 12, 4);
    for (uint32_t k = 0; k < nkeys; k++) {
        int32_t acc;
        uint32_t flags;
        uint64_t count;
        size_t body;

        memcpy(&acc, v5 + i + 8, 4);
        memcpy(&flags, v5 + i + 12, 4);
        memcpy(&count, v5 + i + 16, 8);
        body = ((flags & 4) ? threshold : 0) + (size_t)(((flags & 1) != 0) +
                                                        ((flags & 2) != 0)) *
                                                   (size_t)count * (acc == SC_FLOAT64 ? 8 : 4);
        memcpy(old + o, v5 + i, rec);
        memcpy(old + o + rec, v5 + i + rec5, body);
        i += rec5 + body;
        o += rec + body;
    }
    payload = o - head;
    hash = ct_state_hash(old + head, payload, version);
    memcpy(old + 8, &version, 4);
    memcpy(old + 16, &payload, 8);
    memcpy(old + 24, &hash, 8);
    *old_len = o;
    return old;
}

/* The state an earlier library wrote (version 1: no draws after the 32-byte header, no
 * thresholds; exact mode keeps none) loads, and continues as version 2 does: v2 is a
 * state (version 3's layout) saved before step 4 of a compressor whose step 6 left
 * out_a. */
static int load_version_1(rt_world_t *w, const unsigned char *v2, size_t len, size_t n,
                          void *g, const char *out_a)
{
    const size_t head = 32, draws = 16, out_bytes = n * 4 + (n / 2 + 1) * 2;
    unsigned char *v1 = malloc(len - draws);
    char *out = malloc(out_bytes);
    sc_compressor_t *c = make(0.03, 0, 0, 1, 0.5, 1);
    uint32_t version = 1;
    uint64_t payload = len - draws - head, hash;

    CHECK(c && v1 && out, "no compressor");
    memcpy(v1, v2, head);
    memcpy(v1 + head, v2 + head + draws, len - head - draws);
    memcpy(v1 + 8, &version, 4);
    memcpy(v1 + 16, &payload, 8);
    hash = ct_state_hash(v1 + head, payload, 2);
    memcpy(v1 + 24, &hash, 8);
    CHECK_OK(sc_compressor_load(c, v1, len - draws));
    for (int t = 4; t < 7; t++)
        if (run_steps(w, c, t, t + 1, n, g, out))
            return 1;
    CHECK(memcmp(out, out_a, out_bytes) == 0, "the version-1 state continued otherwise");
    /* A version-1 record that names a threshold is not one. */
    v1[head + 12] |= 4;
    hash = ct_state_hash(v1 + head, payload, 2);
    memcpy(v1 + 24, &hash, 8);
    CHECK_STATUS(sc_compressor_load(c, v1, len - draws), SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_compressor_load", "out of range at record 0");
    sc_compressor_destroy(c);
    free(v1), free(out);
    return 0;
}

static int test_save_load_round_trip(int argc, char **argv)
{
    const size_t n = argc > 0 ? (size_t)atol(argv[0]) : 1500;
    const size_t out_bytes = n * 4 + (n / 2 + 1) * 2;
    void *g = malloc(n * 4);
    char *out_a = malloc(out_bytes), *out_b = malloc(out_bytes);
    unsigned char *saved, *again, *bad;
    size_t len = 0, len2 = 0, small;
    sc_compressor_t *a, *b;
    rt_world_t w;

    if (argc > 1)
        g_mode = !strcmp(argv[1], "approx") ? SC_TOPK_APPROX : !strcmp(argv[1], "random")
                                                                   ? SC_TOPK_RANDOM
                                                                   : SC_TOPK_EXACT;
    if (rt_world(&w))
        return 1;
    a = make(0.03, 0, 0, 1, 0.5, 1);
    b = make(0.03, 0, 0, 1, 0.5, 1);
    CHECK(a && b, "no compressor");
    if (run_steps(&w, a, 0, 4, n, g, out_a))
        return 1;
    CHECK_OK(sc_compressor_save(a, NULL, &len));
    saved = malloc(len);
    again = malloc(len);
    bad = malloc(len);
    small = len - 1;
    CHECK_STATUS(sc_compressor_save(a, saved, &small), SC_ERR_INVALID_ARG);
    CHECK_OK(sc_compressor_save(a, saved, &len));
    CHECK_OK(sc_compressor_load(b, saved, len));
    /* The loaded state continues as the saved one, bit for bit (warm-up included: both
     * are past it). */
    for (int t = 4; t < 7; t++) {
        if (run_steps(&w, a, t, t + 1, n, g, out_a) || run_steps(&w, b, t, t + 1, n, g, out_b))
            return 1;
        CHECK(memcmp(out_a, out_b, out_bytes) == 0, "step %d differs after the load", t);
    }
    if (g_mode == SC_TOPK_EXACT) {
        size_t len3 = 0;
        unsigned char *v3 = state_older(saved, len, 3, &len3);
        CHECK(v3, "out of memory");
        if (load_version_1(&w, v3, len3, n, g, out_a))
            return 1;
        free(v3);
    }
    /* Refused buffers leave b's state as it was. */
    len2 = len;
    CHECK_OK(sc_compressor_save(b, saved, &len2));
    CHECK_STATUS(sc_compressor_load(b, saved, len2 - 7), SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_compressor_load", "truncated");
    memcpy(bad, saved, len2);
    bad[len2 / 2] ^= 0x10;
    CHECK_STATUS(sc_compressor_load(b, bad, len2), SC_ERR_INVALID_ARG);
    {
        /* The sign bits of two words of the payload (two residual values): plain FNV-1a,
         * the hash of versions 1 and 2, does not see it (the two flips cancel); the
         * version-3 hash does. */
        const size_t head = 32, words = (len2 - head) / 8;
        uint32_t version = 2;
        uint64_t hash;

        memcpy(bad, saved, len2);
        bad[head + 8 * (words - 1) + 7] ^= 0x80;
        bad[head + 8 * (words - 2) + 7] ^= 0x80;
        CHECK(ct_state_hash(bad + head, len2 - head, 2) ==
                  ct_state_hash(saved + head, len2 - head, 2),
              "plain FNV-1a saw the two sign flips (the case is not the one meant)");
        CHECK_STATUS(sc_compressor_load(b, bad, len2), SC_ERR_INVALID_ARG);
        CHECK_SAYS("sc_compressor_load", "hash does not match");
        /* A version-2 state (plain FNV-1a, version 3's records) of the same contents
         * still loads. */
        size_t len3 = 0;
        unsigned char *v3 = state_older(saved, len2, 3, &len3);
        CHECK(v3, "out of memory");
        memcpy(bad, v3, len3);
        free(v3);
        memcpy(bad + 8, &version, 4);
        hash = ct_state_hash(bad + head, len3 - head, 2);
        memcpy(bad + 24, &hash, 8);
        CHECK_OK(sc_compressor_load(b, bad, len3));
        CHECK_OK(sc_compressor_load(b, saved, len2)); /* its origins back (version 6) */
    }
    {
        /* Bit 63 of one word of the payload and bits 63 and 34 of the next (a residual's
         * sign, the next one's sign and a bit of its mantissa): the hash of versions 3
         * to 5 changes by the same pattern for both words, which cancels whatever the
         * data; version 6 mixes each word first and sees it. A version-5 state (version
         * 6's records, version 5's hash) still loads. */
        const size_t head = 32, words = (len2 - head) / 8, at = head + 8 * (words - 2);
        uint32_t version = 5;
        uint64_t hash;

        memcpy(bad, saved, len2);
        bad[at + 7] ^= 0x80;
        bad[at + 8 + 7] ^= 0x80;
        bad[at + 8 + 4] ^= 0x04;
        CHECK(ct_state_hash(bad + head, len2 - head, 5) ==
                  ct_state_hash(saved + head, len2 - head, 5),
              "version 5's hash saw the three flips (the case is not the one meant)");
        CHECK_STATUS(sc_compressor_load(b, bad, len2), SC_ERR_INVALID_ARG);
        CHECK_SAYS("sc_compressor_load", "hash does not match");
        memcpy(bad, saved, len2);
        memcpy(bad + 8, &version, 4);
        hash = ct_state_hash(bad + head, len2 - head, 5);
        memcpy(bad + 24, &hash, 8);
        CHECK_OK(sc_compressor_load(b, bad, len2));
        CHECK_OK(sc_compressor_load(b, saved, len2));
    }
    for (size_t i = 0; i < len2; i++)
        bad[i] = (unsigned char)rt_mix(i);
    CHECK_STATUS(sc_compressor_load(b, bad, len2), SC_ERR_INVALID_ARG);
    CHECK_STATUS(sc_compressor_load(b, bad, 3), SC_ERR_INVALID_ARG);
    CHECK_OK(sc_compressor_save(b, again, &len2));
    CHECK(memcmp(saved, again, len2) == 0, "a refused load changed the state");
    sc_compressor_destroy(a);
    sc_compressor_destroy(b);
    CHECK_OK(sc_comm_destroy(w.comm));
    free(g), free(out_a), free(out_b), free(saved), free(again), free(bad);
    return 0;
}

/* Runs `steps` steps of key 0 (n floats) on comm, then saves the state into *mine (*len
 * bytes) and all-gathers every rank's into *all (exact mode, the same keys and counts:
 * every rank's state has the same length). */
/* A state of format 3 (no origin: accepted on any rank) loaded, then a step that the
 * ranks refuse (rank 0 sums, the others average: SC_ERR_MISMATCH on every rank): the
 * state is as it was, the saves before and after the step equal, and its next step on a
 * communicator of one rank (each rank alone) is taken. The refused step's plan had
 * recorded this rank of this size as the state's origin and the undo kept it, so that
 * step was refused as 'a checkpoint loaded on another rank or world size'. */
static int test_refused_step_leaves_an_unknown_origin(int argc, char **argv)
{
    const size_t n = 1500, out_bytes = n * 4 + (n / 2 + 1) * 2;
    void *g = malloc(n * 4);
    char *out = malloc(out_bytes);
    unsigned char *saved, *v3, *before, *after;
    size_t len = 0, len3 = 0, len_before = 0, len_after = 0;
    sc_compressor_t *a = make(0.03, 0, 0, 1, 0.5, 1), *b = make(0.03, 0, 0, 1, 0.5, 1);
    sc_comm_t *alone;
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    CHECK(a && b && g && out, "no compressor");
    if (run_steps(&w, a, 0, 4, n, g, out))
        return 1;
    CHECK_OK(sc_compressor_save(a, NULL, &len));
    saved = malloc(len);
    CHECK(saved, "out of memory");
    CHECK_OK(sc_compressor_save(a, saved, &len));
    v3 = state_older(saved, len, 3, &len3);
    CHECK(v3, "out of memory");
    CHECK_OK(sc_compressor_load(b, v3, len3));
    CHECK_OK(sc_compressor_save(b, NULL, &len_before));
    before = malloc(len_before);
    after = malloc(len_before);
    CHECK(before && after, "out of memory");
    CHECK_OK(sc_compressor_save(b, before, &len_before));
    fill(SC_FLOAT32, g, n, w.rank, 4, 4);
    CHECK_STATUS(sc_compressed_allreduce(b, w.comm, 0, g, out, n, SC_FLOAT32,
                                         w.rank == 0 ? SC_SUM : SC_AVG),
                 SC_ERR_MISMATCH);
    len_after = len_before;
    CHECK_OK(sc_compressor_save(b, after, &len_after));
    CHECK(len_after == len_before && memcmp(before, after, len_before) == 0,
          "the refused step changed the state (%zu bytes saved, %zu before)", len_after,
          len_before);
    CHECK_OK(sc_comm_split(w.comm, w.rank, 0, &alone));
    if (sc_compressed_allreduce(b, alone, 0, g, out, n, SC_FLOAT32, SC_SUM) != SC_SUCCESS)
        CHECK(0, "the state of no origin was refused on a communicator of one rank after "
              "a refused step: %s", sc_last_error());
    CHECK_OK(sc_comm_destroy(alone));
    sc_compressor_destroy(a);
    sc_compressor_destroy(b);
    CHECK_OK(sc_comm_destroy(w.comm));
    free(g), free(out), free(saved), free(v3), free(before), free(after);
    return 0;
}

static int steps_then_states(sc_compressor_t *c, sc_comm_t *comm, int world_rank, int steps,
                             float *g, float *out, size_t n, unsigned char **mine,
                             unsigned char **all, size_t *len)
{
    for (int t = 0; t < steps; t++) {
        fill(SC_FLOAT32, g, n, world_rank, t, 0);
        CHECK_OK(sc_compressed_allreduce(c, comm, 0, g, out, n, SC_FLOAT32, SC_SUM));
    }
    *len = 0;
    CHECK_OK(sc_compressor_save(c, NULL, len));
    *mine = malloc(*len);
    *all = malloc(*len * (size_t)sc_comm_size(comm));
    CHECK(*mine && *all, "out of memory");
    CHECK_OK(sc_compressor_save(c, *mine, len));
    CHECK_OK(sc_allgather(*mine, *all, *len, SC_UINT8, comm, NULL, NULL));
    return 0;
}

/* Each rank saves its state after 4 steps and loads its neighbour's: the next step
 * fails on every rank with SC_ERR_INVALID_ARG naming both ranks (each rank's residual is
 * its own: fed into another rank's gradients it is silently wrong); nothing is written
 * to the output. A reset then starts afresh. The rank's own state, loaded on a
 * communicator of another size (each rank alone), is refused too; on its own rank of
 * the same size it continues. */
static int test_state_of_another_rank_is_refused(int argc, char **argv)
{
    const size_t n = 1500;
    float *g = malloc(n * 4), *out = malloc(n * 4);
    unsigned char *mine, *theirs;
    size_t len = 0;
    sc_compressor_t *c = make(0.03, 0, 0, 1, 0.5, 1);
    sc_comm_t *alone;
    char want[96];
    rt_world_t w;

    (void)argc;
    (void)argv;
    if (rt_world(&w))
        return 1;
    CHECK(c && g && out && w.size >= 2, "needs 2 ranks or more");
    if (steps_then_states(c, w.comm, w.rank, 4, g, out, n, &mine, &theirs, &len))
        return 1;
    CHECK_OK(sc_compressor_load(c, theirs + len * (size_t)((w.rank + 1) % w.size), len));
    fill(SC_FLOAT32, g, n, w.rank, 4, 0);
    memset(out, 0x7f, n * 4);
    CHECK_STATUS(sc_compressed_allreduce(c, w.comm, 0, g, out, n, SC_FLOAT32, SC_SUM),
                 SC_ERR_INVALID_ARG);
    snprintf(want, sizeof(want), "made by rank %d of %d and this is rank %d of %d",
             (w.rank + 1) % w.size, w.size, w.rank, w.size);
    CHECK_SAYS("sc_compressed_allreduce", want);
    CHECK(((const unsigned char *)out)[0] == 0x7f && ((const unsigned char *)out)[n * 4 - 1] ==
              0x7f, "a refused step wrote its output");
    CHECK_OK(sc_compressor_reset(c));
    CHECK_OK(sc_compressed_allreduce(c, w.comm, 0, g, out, n, SC_FLOAT32, SC_SUM));
    /* The rank's own state on a communicator of one rank (a split: its world rank
     * named). */
    CHECK_OK(sc_comm_split(w.comm, w.rank, 0, &alone));
    CHECK_OK(sc_compressor_load(c, mine, len));
    CHECK_STATUS(sc_compressed_allreduce(c, alone, 0, g, out, n, SC_FLOAT32, SC_SUM),
                 SC_ERR_INVALID_ARG);
    if (w.rank == 0)
        snprintf(want, sizeof(want), "made by rank 0 of %d and this is rank 0 of 1", w.size);
    else
        snprintf(want, sizeof(want), "made by rank %d of %d and this is rank 0 (world rank "
                 "%d) of 1", w.rank, w.size, w.rank);
    CHECK_SAYS("sc_compressed_allreduce", want);
    CHECK_OK(sc_comm_destroy(alone));
    CHECK_OK(sc_compressor_load(c, mine, len));
    CHECK_OK(sc_compressed_allreduce(c, w.comm, 0, g, out, n, SC_FLOAT32, SC_SUM));
    sc_compressor_destroy(c);
    CHECK_OK(sc_comm_destroy(w.comm));
    free(g), free(out), free(mine), free(theirs);
    return 0;
}

/* "rank r", with "(world rank w)" where w differs, as the library names a split's rank. */
typedef struct {
    char s[48];
} rank_name_t;

static rank_name_t split_rank_name(int r, int world)
{
    rank_name_t n;

    if (r == world)
        snprintf(n.s, sizeof(n.s), "rank %d", r);
    else
        snprintf(n.s, sizeof(n.s), "rank %d (world rank %d)", r, world);
    return n;
}

/* The state of split rank s saved on a split whose ranks run in reverse world order
 * (split rank s is world rank size - 1 - s, as a hybrid-sharding replica group may be), and
 * loaded on split rank s - 1: the refusal names both world ranks, "made by rank S (world
 * rank W) of N and this is rank T (world rank V) of N" (it named split ranks alone, which
 * a reader took for world ranks, the prefix's numbering). The same state in format 4
 * (no world rank saved) names this rank's world rank. */
static int test_state_of_another_split_rank_names_world_ranks(int argc, char **argv)
{
    const size_t n = 4096;
    rt_world_t w;
    sc_compressor_t *c;
    float *g, *out;
    unsigned char *mine, *all, *v4;
    size_t len, len4 = 0;
    sc_comm_t *rev;
    int s, from;
    char want[160];

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    c = make(0.03, 0, 0, 1, 0.5, 1);
    g = malloc(n * 4);
    out = malloc(n * 4);
    CHECK(c && g && out && w.size >= 2, "out of memory, or fewer than 2 ranks");
    CHECK_OK(sc_comm_split(w.comm, 0, w.size - w.rank, &rev));
    s = sc_comm_rank(rev);
    CHECK(s == w.size - 1 - w.rank, "split rank %d on world rank %d", s, w.rank);
    if (steps_then_states(c, rev, w.rank, 3, g, out, n, &mine, &all, &len))
        return 1;
    from = (s + 1) % w.size; /* the split rank whose state this rank loads */
    fill(SC_FLOAT32, g, n, w.rank, 3, 0);
    CHECK_OK(sc_compressor_load(c, all + len * (size_t)from, len));
    CHECK_STATUS(sc_compressed_allreduce(c, rev, 0, g, out, n, SC_FLOAT32, SC_SUM),
                 SC_ERR_INVALID_ARG);
    snprintf(want, sizeof(want), "made by %s of %d and this is %s of %d",
             split_rank_name(from, w.size - 1 - from).s, w.size,
             split_rank_name(s, w.rank).s, w.size);
    CHECK_SAYS("sc_compressed_allreduce", want);
    v4 = state_older(all + len * (size_t)from, len, 4, &len4);
    CHECK(v4, "out of memory");
    CHECK_OK(sc_compressor_load(c, v4, len4));
    CHECK_STATUS(sc_compressed_allreduce(c, rev, 0, g, out, n, SC_FLOAT32, SC_SUM),
                 SC_ERR_INVALID_ARG);
    snprintf(want, sizeof(want), "made by rank %d of %d and this is %s of %d", from, w.size,
             split_rank_name(s, w.rank).s, w.size);
    CHECK_SAYS("sc_compressed_allreduce", want);
    CHECK_OK(sc_compressor_load(c, mine, len));
    CHECK_OK(sc_compressed_allreduce(c, rev, 0, g, out, n, SC_FLOAT32, SC_SUM));
    sc_compressor_destroy(c);
    CHECK_OK(sc_comm_destroy(rev));
    CHECK_OK(sc_comm_destroy(w.comm));
    free(g), free(out), free(mine), free(all), free(v4);
    return 0;
}

/* Every rank's gradient: element 3 is 100000 at step 0 (float16's largest is 65504),
 * element 6 is -Inf at step 2, the rest small; one element sent per step (k 1 of 8).
 * Step 0 sends 65504 from each rank and keeps 34496 (exact in float16); step 1 (zero
 * gradient) sends those 34496, so the two results add up to 100000 per rank. */
static int test_fp16_values_saturate(int argc, char **argv)
{
    sc_dtype_t d = argc > 0 && strcmp(argv[0], "float64") == 0 ? SC_FLOAT64 : SC_FLOAT32;
    const size_t n = 8;
    const double want3[3] = {65504.0, 34496.0, 0.0};
    void *g = malloc(n * 8), *out = malloc(n * 8);
    sc_compressor_t *c;
    rt_world_t w;

    if (rt_world(&w))
        return 1;
    c = make(1.0 / 8, 1, 0, 1, 0.0, 0);
    CHECK(c, "no compressor");
    for (int t = 0; t < 3; t++) {
        for (size_t e = 0; e < n; e++)
            rt_store(d, g, e, t == 0 && e == 3 ? 100000.0 : t == 2 && e == 6 ? -INFINITY
                                                                            : 0.0);
        CHECK_OK(sc_compressed_allreduce(c, w.comm, 1, g, out, n, d, SC_SUM));
        CHECK(rt_load(d, out, 3) == want3[t] * w.size, "step %d: element 3 is %g, want %g "
              "(%d ranks of %g)", t, rt_load(d, out, 3), want3[t] * w.size, w.size, want3[t]);
        CHECK(t != 2 || rt_load(d, out, 6) == -INFINITY, "step 2: element 6 is %g, want "
              "-inf (an Inf gradient goes as it is)", rt_load(d, out, 6));
    }
    sc_compressor_destroy(c);
    CHECK_OK(sc_comm_destroy(w.comm));
    free(g), free(out);
    return 0;
}

/* Rank 0's gradient: finite at step 0, NaN everywhere at step 1, finite at step 2; the
 * other ranks' are zero (their selections add +0). Step 1's result holds NaN; step 2's
 * is rank 0's selection of its step-2 gradient alone, the NaN it did not send at step 1
 * (all but k) dropped from its residual and momentum: exact and approx modes, the
 * largest magnitudes (all k of them exact); random, elements of that gradient. */
static int test_overflow_step_is_not_kept(int argc, char **argv)
{
    const char *mode = argc > 0 ? argv[0] : "exact";
    double m = argc > 1 ? atof(argv[1]) : 0.0;
    const size_t n = !strcmp(mode, "approx") ? 70001 : 1000;
    const double density = 0.01;
    size_t k = k_of(density, n), *idx = malloc(k * sizeof(size_t)), nonzero = 0;
    float *g = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    double *g2 = malloc(n * sizeof(double));
    int nan1 = 0;
    sc_compressor_t *c;
    rt_world_t w;

    if (rt_world(&w))
        return 1;
    g_mode = !strcmp(mode, "approx") ? SC_TOPK_APPROX
                                     : !strcmp(mode, "random") ? SC_TOPK_RANDOM : SC_TOPK_EXACT;
    c = make(density, 0, 0, 1, m, 0);
    CHECK(c, "no compressor");
    for (size_t e = 0; e < n; e++)
        g2[e] = (float)grad_value(0, 2, 5, e);
    for (int t = 0; t < 3; t++) {
        for (size_t e = 0; e < n; e++)
            g[e] = w.rank != 0 ? 0.0f : t == 1 ? NAN : (float)grad_value(0, t, 5, e);
        CHECK_OK(sc_compressed_allreduce(c, w.comm, 5, g, out, n, SC_FLOAT32, SC_SUM));
        for (size_t e = 0; e < n && t == 1; e++)
            nan1 |= isnan(out[e]);
    }
    CHECK(nan1, "step 1: no NaN in the result (rank 0's gradient was all NaN)");
    for (size_t e = 0; e < n; e++) {
        CHECK(isfinite(out[e]), "step 2: element %zu is %g (a NaN of step 1 kept)", e,
              out[e]);
        CHECK(out[e] == 0.0f || out[e] == (float)g2[e], "step 2: element %zu is %g, not 0 "
              "or rank 0's gradient %g", e, out[e], g2[e]);
        nonzero += out[e] != 0.0f;
    }
    if (!strcmp(mode, "exact")) {
        ct_topk(g2, n, k, idx);
        for (size_t j = 0; j < k; j++)
            CHECK(out[idx[j]] == (float)g2[idx[j]], "step 2: element %zu (rank %zu of the "
                  "top %zu) is %g, want %g", idx[j], j, k, out[idx[j]], g2[idx[j]]);
        CHECK(nonzero == k, "step 2: %zu elements nonzero, want %zu", nonzero, k);
    }
    sc_compressor_destroy(c);
    CHECK_OK(sc_comm_destroy(w.comm));
    free(idx), free(g), free(out), free(g2);
    return 0;
}

/* Every rank's gradient of 8 is ct_order_value at element 5 and zeros, its top 1 (density
 * 1/8) that element: the result there is the sum in rank order, the rest zero. */
static int order_case(rt_world_t *w, sc_dtype_t d, int fp16)
{
    sc_dtype_t vd = fp16 ? SC_FLOAT16 : d;
    double g[8], out[8], want = ct_order_sum(w->size, d, vd);
    sc_compressor_t *c = make(1.0 / 8, fp16, 0, 1, 0.0, 0);

    CHECK(c, "no compressor");
    for (size_t e = 0; e < 8; e++)
        rt_store(d, g, e, e == 5 ? ct_order_value(w->rank, d, vd) : 0.0);
    CHECK_OK(sc_compressed_allreduce(c, w->comm, 1, g, out, 8, d, SC_SUM));
    for (size_t e = 0; e < 8; e++)
        CHECK(rt_load(d, out, e) == (e == 5 ? want : 0.0), "%s%s: element %zu is %.17g, "
              "want %.17g (the sum in rank order)", sc_dtype_name(d), fp16 ? ", float16 "
              "values" : "", e, rt_load(d, out, e), e == 5 ? want : 0.0);
    sc_compressor_destroy(c);
    return ct_check_same_bits(w, out, 8 * rt_size(d));
}

static int test_compressed_sum_follows_rank_order(int argc, char **argv)
{
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    if (order_case(&w, SC_FLOAT32, 0) || order_case(&w, SC_FLOAT32, 1) ||
        order_case(&w, SC_FLOAT64, 0) || order_case(&w, SC_FLOAT16, 0) ||
        order_case(&w, SC_BFLOAT16, 0) || order_case(&w, SC_BFLOAT16, 1))
        return 1;
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

int main(int argc, char **argv)
{
    static const rt_test_t tests[] = {
        {"first_step_matches_topk", test_first_step_matches_topk},
        {"error_feedback_conserves_the_sum", test_error_feedback_conserves_the_sum},
        {"momentum_correction_matches_reference", test_momentum_correction_matches_reference},
        {"warmup_steps_are_dense", test_warmup_steps_are_dense},
        {"density_one_is_dense", test_density_one_is_dense},
        {"reset_clears_residuals_and_restarts_warmup",
         test_reset_clears_residuals_and_restarts_warmup},
        {"save_load_round_trip", test_save_load_round_trip},
        {"state_of_another_rank_is_refused", test_state_of_another_rank_is_refused},
        {"refused_step_leaves_an_unknown_origin", test_refused_step_leaves_an_unknown_origin},
        {"state_of_another_split_rank_names_world_ranks",
         test_state_of_another_split_rank_names_world_ranks},
        {"fp16_values_saturate", test_fp16_values_saturate},
        {"overflow_step_is_not_kept", test_overflow_step_is_not_kept},
        {"compressed_sum_follows_rank_order", test_compressed_sum_follows_rank_order},
        {NULL, NULL}};
    return rt_main(tests, argc, argv);
}
