/* The top-k comm hook in the gradient reducer, one behaviour per test (argv[1]):
 *   density_one_equals_dense        density 1.0: the averages of the plain reducer (a
 *                                   float64 reference), over 3 iterations
 *   density_matches_reference       density 0.01: per bucket (as sc_reducer_grad_bucket
 *                                   lays them out) the sum over ranks of each rank's
 *                                   top-k of residual + gradient / ranks, simulated
 *                                   here; the residual dropped when the buckets are
 *                                   rebuilt after the first iteration, kept after;
 *                                   "large": buckets of 2^17 and more elements (the
 *                                   sampled, block-filled selection on the worker);
 *                                   ranks a power of two (the reducer multiplies by
 *                                   1/p, the reference here divides by p); "view":
 *                                   gradient_as_bucket_view, results in the views
 *   hook_state_survives_save_and_load   a reducer loaded from another's checkpoint
 *                                   continues as that one does
 *   hook_state_without_its_table_still_loads   a state saved before the hook's table
 *                                   of layouts existed (the compressor's state alone)
 *                                   loads and continues as the saved reducer does
 *   hook_state_of_a_compressor_with_a_negative_key_loads   a compressor's state whose
 *                                   keys are no bucket indices (-1) loads, and the
 *                                   loaded reducer's iterations succeed
 *   hook_state_of_a_compressor_with_a_huge_key_loads   the same with key INT32_MAX
 *   hook_state_with_a_bad_table_is_refused   a table of another version, truncated or
 *                                   with an unknown flag: SC_ERR_INVALID_ARG, nothing
 *                                   changed
 *   hook_state_refused_on_one_rank_changes_nothing   a load refused on rank 0 alone
 *                                   (rank 1 loads nothing): the next iterations succeed
 *   hook_state_loaded_on_one_rank_fails_every_rank   a load on rank 0 alone: the next
 *                                   iteration fails on both ranks, the sentence naming
 *                                   the comparison of the ranks' steps after a load
 *   hook_state_marks_dropped_indices_with_bucket_0_empty   a save after a rebuild that
 *                                   dropped a bucket index marks its state stale, also
 *                                   when bucket 0 holds no element (never started)
 *   hook_state_marks_index_0_stale_when_its_bucket_moves_up   the same where the only
 *                                   bucket with elements moves from index 0 to 1 as an
 *                                   empty bucket takes index 0: the iteration after the
 *                                   rebuild starts no index at or below the last one
 *   hook_state_waits_for_its_layout_after_load [counts_differ|counts_equal|one_bucket]
 *                                   the same when the loaded reducer's first layout
 *                                   differs from the saved one's: the loaded residuals
 *                                   are adopted by the rebuilt layout, also where the
 *                                   first layout's buckets have the saved ones' counts
 *                                   but other gradients
 *   hook_state_in_use_is_saved_when_no_rebuild_follows  a state loaded into a reducer
 *                                   whose layout differs and is never rebuilt (marked in
 *                                   its layout's order) is dropped after one iteration:
 *                                   the next save holds the reducer's own state, which a
 *                                   third reducer continues bit for bit
 *   hook_state_after_a_failed_iteration_keeps_the_buckets_it_never_started   a save
 *                                   after an iteration that failed at its first bucket
 *                                   equals the save before it (the later buckets' states
 *                                   current, not stale), and a reducer loading it
 *                                   continues as one loading the earlier save
 *   hook_state_saved_by_two_threads_at_once   after an iteration whose step stayed
 *                                   pending, two threads saving one reducer at once each
 *                                   write the state as it was before that iteration
 *   accumulation_equals_one_synced_step [view]  gradient accumulation (an iteration without
 *                                   sync, then a synced one) selects and sends, step
 *                                   after step, exactly what one synced iteration of
 *                                   the summed gradients does (small integers on 2
 *                                   ranks: every sum and halving is exact)
 *   hook_sum_follows_rank_order     every rank's top 1 at the same element, of values
 *                                   whose sum depends on the order (float32, float16 and
 *                                   bfloat16 gradients; float16 values of float32 and
 *                                   bfloat16 ones; copies and views), prediv 1: the sum
 *                                   in rank order, rank 0 first, on every rank */
#include <pthread.h>

#include "compress_test.h"

#define SEED 0x400cull
#define DENSITY 0.01

static const size_t model_counts[] = {3000, 1000, 5000, 17, 2000};
static const size_t large_counts[] = {300000, 150000, 70000, 200000, 131072};
#define MODEL_N ((int)(sizeof(model_counts) / sizeof(model_counts[0])))

/* The reducers live in bucket memory (gradient_as_bucket_view): a test's "view". */
static int g_view;

/* sc_reducer_create of a reducer with the top-k hook at density and buckets of these
 * sizes: its status. */
static sc_status_t create_reducer(rt_world_t *w, rt_model_t *m, double density,
                                  size_t first_bytes, size_t cap_bytes, sc_reducer_t **r)
{
    sc_compress_config_t cc = SC_COMPRESS_CONFIG_INIT;
    sc_comm_hook_t hook;
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_status_t st;

    cc.density = density;
    if ((st = sc_comm_hook_topk(&cc, &hook)) != SC_SUCCESS)
        return st;
    cfg.first_bucket_bytes = first_bytes;
    cfg.bucket_cap_bytes = cap_bytes;
    cfg.gradient_as_bucket_view = g_view;
    cfg.hook = &hook;
    return sc_reducer_create(w->comm, m->desc, m->n, &cfg, r);
}

/* A reducer with the top-k hook at density and buckets of these sizes. */
static int make_reducer_with(rt_world_t *w, rt_model_t *m, double density, size_t first_bytes,
                             size_t cap_bytes, sc_reducer_t **r)
{
    CHECK_OK(create_reducer(w, m, density, first_bytes, cap_bytes, r));
    return 0;
}

/* Small buckets: several per model. */
static int make_reducer(rt_world_t *w, rt_model_t *m, double density, sc_reducer_t **r)
{
    return make_reducer_with(w, m, density, 4096, 32768, r);
}

/* Iteration it: every gradient filled (zero: with zeros), marked in registration order
 * (forward) or its reverse, finalized. counts (NULL, or one per gradient): each
 * bucket's element count in the layout the iteration ran in. */
static int iterate_as(rt_world_t *w, rt_model_t *m, sc_reducer_t *r, int it, int forward,
                      int zero, size_t *counts)
{
    for (int g = 0; counts && g < m->n; g++)
        counts[g] = 0;
    for (int i = 0; i < m->n; i++) {
        int g = forward ? i : m->n - 1 - i, b;
        size_t off;
        if (counts) {
            CHECK_OK(sc_reducer_grad_bucket(r, g, &b, &off));
            CHECK(b >= 0 && b < m->n, "gradient %d in bucket %d", g, b);
            counts[b] += m->desc[g].count;
        }
        void *buf = g_view ? sc_reducer_grad_view(r, g) : m->buf[g];
        if (zero)
            memset(buf, 0, m->desc[g].count * sizeof(float));
        else
            rt_fill(m, buf, SEED, w->rank, it, g);
        CHECK_OK(sc_reducer_mark_ready(r, g, g_view ? NULL : buf));
    }
    CHECK_OK(sc_reducer_finalize(r));
    for (int g = 0; g < m->n && g_view; g++) /* the results, where the checks read them */
        memcpy(m->buf[g], sc_reducer_grad_view(r, g), m->desc[g].count * sizeof(float));
    return 0;
}

/* Iteration it: every gradient filled, marked in reverse registration order, finalized. */
static int iterate(rt_world_t *w, rt_model_t *m, sc_reducer_t *r, int it)
{
    return iterate_as(w, m, r, it, 0, 0, NULL);
}

static int test_density_one_equals_dense(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    rt_model_init(&m, MODEL_N, model_counts, NULL);
    if (make_reducer(&w, &m, 1.0, &r))
        return 1;
    for (int it = 0; it < 3; it++) {
        if (iterate(&w, &m, r, it))
            return 1;
        for (int g = 0; g < m.n; g++)
            if (rt_check_grad(&m, m.buf[g], g, SEED, w.size, w.size, &it, 1, NULL))
                return 1;
        if (rt_check_same_bits(&w, &m, m.buf))
            return 1;
    }
    CHECK_OK(sc_reducer_destroy(r));
    rt_model_free(&m);
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* The test's picture of the buckets: for each, its element count, and per rank its
 * residual (float32, as the hook keeps it). */
typedef struct {
    int n;
    size_t count[16];
    float *res[16]; /* [rank * count + e] */
} ref_t;

static int ref_layout(ref_t *f, sc_reducer_t *r, const rt_model_t *m, int p, int *bucket,
                      size_t *offset)
{
    for (int b = 0; b < f->n; b++)
        free(f->res[b]);
    memset(f, 0, sizeof(*f));
    for (int g = 0; g < m->n; g++) {
        CHECK_OK(sc_reducer_grad_bucket(r, g, &bucket[g], &offset[g]));
        CHECK(bucket[g] < 16, "bucket %d", bucket[g]);
        if (bucket[g] >= f->n)
            f->n = bucket[g] + 1;
        if (offset[g] + m->desc[g].count > f->count[bucket[g]])
            f->count[bucket[g]] = offset[g] + m->desc[g].count;
    }
    for (int b = 0; b < f->n; b++)
        f->res[b] = calloc(f->count[b] * (size_t)p + 1, sizeof(float));
    return 0;
}

/* Whether the reducer holds some gradient in another bucket or at another offset than
 * bucket and offset say: *moved. */
static int ref_layout_moved(sc_reducer_t *r, const rt_model_t *m, const int *bucket,
                            const size_t *offset, int *moved)
{
    *moved = 0;
    for (int g = 0; g < m->n; g++) {
        int b;
        size_t off;
        CHECK_OK(sc_reducer_grad_bucket(r, g, &b, &off));
        *moved |= b != bucket[g] || off != offset[g];
    }
    return 0;
}

/* The expected averages of iteration it into want[g][e]: per bucket and rank
 * v = residual + g / p, its top-k summed in rank order, the residual left. */
static void ref_iteration(ref_t *f, const rt_model_t *m, const int *bucket,
                          const size_t *offset, int p, int it, float **want)
{
    for (int b = 0; b < f->n; b++) {
        size_t n = f->count[b], k = (size_t)floor(DENSITY * (double)n + 0.5);
        double *v = calloc(n, sizeof(double));
        float *sum = calloc(n, sizeof(float));
        size_t *idx;

        k = k ? k : 1;
        idx = malloc(k * sizeof(*idx));
        for (int r = 0; r < p; r++) {
            float *res = f->res[b] + (size_t)r * n;
            for (int g = 0; g < m->n; g++)
                if (bucket[g] == b)
                    for (size_t e = 0; e < m->desc[g].count; e++)
                        res[offset[g] + e] +=
                            (float)(rt_value(SC_FLOAT32, SEED, r, it, g, e) / p);
            for (size_t e = 0; e < n; e++)
                v[e] = res[e];
            ct_topk(v, n, k, idx);
            for (size_t j = 0; j < k; j++) {
                sum[idx[j]] += res[idx[j]];
                res[idx[j]] = 0.0f;
            }
        }
        for (int g = 0; g < m->n; g++)
            if (bucket[g] == b)
                memcpy(want[g], sum + offset[g], m->desc[g].count * sizeof(float));
        free(v);
        free(sum);
        free(idx);
    }
}

static int test_density_matches_reference(int argc, char **argv)
{
    int bucket[MODEL_N];
    size_t offset[MODEL_N];
    float *want[MODEL_N];
    ref_t f = {0};
    const size_t *counts = argc > 0 && !strcmp(argv[0], "large") ? large_counts
                                                                  : model_counts;
    rt_world_t w;

    g_view = argc > 0 && !strcmp(argv[argc - 1], "view");
    rt_model_t m;
    sc_reducer_t *r;

    if (rt_world(&w))
        return 1;
    rt_model_init(&m, MODEL_N, counts, NULL);
    for (int g = 0; g < MODEL_N; g++)
        want[g] = malloc(counts[g] * sizeof(float));
    if (make_reducer(&w, &m, DENSITY, &r))
        return 1;
    for (int it = 0; it < 4; it++) {
        /* Iteration 0 starts from a zero residual, and so does iteration 1 when the
         * rebuild after iteration 0 moved a gradient (the hook keeps a residual per
         * bucket); a rebuild in the order the buckets already have moves nothing, and
         * the residuals carry on. */
        int moved = it == 0;
        if (it == 1 && ref_layout_moved(r, &m, bucket, offset, &moved))
            return 1;
        if (moved && ref_layout(&f, r, &m, w.size, bucket, offset))
            return 1;
        ref_iteration(&f, &m, bucket, offset, w.size, it, want);
        if (iterate(&w, &m, r, it))
            return 1;
        for (int g = 0; g < m.n; g++)
            for (size_t e = 0; e < m.desc[g].count; e++)
                CHECK(((float *)m.buf[g])[e] == want[g][e], "iteration %d gradient %d element "
                      "%zu is %.9g, expected %.9g", it, g, e, ((float *)m.buf[g])[e],
                      want[g][e]);
        if (rt_check_same_bits(&w, &m, m.buf))
            return 1;
    }
    CHECK_OK(sc_reducer_destroy(r));
    for (int g = 0; g < MODEL_N; g++)
        free(want[g]);
    for (int b = 0; b < f.n; b++)
        free(f.res[b]);
    rt_model_free(&m);
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* ra's hook state, saved, loaded into rb. */
static int copy_hook_state(sc_reducer_t *ra, sc_reducer_t *rb)
{
    size_t len = 0;
    void *state;

    CHECK_OK(sc_reducer_hook_save(ra, NULL, &len));
    state = malloc(len);
    CHECK(state, "out of memory");
    CHECK_OK(sc_reducer_hook_save(ra, state, &len));
    CHECK_OK(sc_reducer_hook_load(rb, state, len));
    free(state);
    return 0;
}

/* The reducer, both models and the world released. */
static int release_one(rt_world_t *w, rt_model_t *a, rt_model_t *b, sc_reducer_t *ra)
{
    CHECK_OK(sc_reducer_destroy(ra));
    rt_model_free(a);
    rt_model_free(b);
    CHECK_OK(sc_comm_destroy(w->comm));
    return 0;
}

/* Both reducers, their models and the world released. */
static int release_both(rt_world_t *w, rt_model_t *a, rt_model_t *b, sc_reducer_t *ra,
                        sc_reducer_t *rb)
{
    CHECK_OK(sc_reducer_destroy(rb));
    return release_one(w, a, b, ra);
}

/* The saved (a) and the loaded reducer's (b) last results are equal bit for bit; then
 * everything is released. */
static int check_same_and_release(rt_world_t *w, rt_model_t *a, rt_model_t *b,
                                  sc_reducer_t *ra, sc_reducer_t *rb)
{
    for (int g = 0; g < a->n; g++)
        CHECK(memcmp(a->buf[g], b->buf[g], a->desc[g].count * sizeof(float)) == 0,
              "gradient %d differs between the saved and the loaded reducer", g);
    return release_both(w, a, b, ra, rb);
}

/* The saved (a) and the loaded reducer (b) run one more iteration, whose results must
 * be equal bit for bit; then everything is released. */
static int continue_both(rt_world_t *w, rt_model_t *a, rt_model_t *b, sc_reducer_t *ra,
                         sc_reducer_t *rb)
{
    if (iterate(w, a, ra, 3) || iterate(w, b, rb, 3))
        return 1;
    return check_same_and_release(w, a, b, ra, rb);
}

/* The world, and a reducer of the model (a) past its rebuild (3 iterations), whose
 * hook state the test saves; b, a second model of the same gradients. */
static int saved_reducer(rt_world_t *w, rt_model_t *a, rt_model_t *b, sc_reducer_t **ra)
{
    if (rt_world(w))
        return 1;
    rt_model_init(a, MODEL_N, model_counts, NULL);
    rt_model_init(b, MODEL_N, model_counts, NULL);
    if (make_reducer(w, a, DENSITY, ra))
        return 1;
    for (int it = 0; it < 3; it++)
        if (iterate(w, a, *ra, it))
            return 1;
    return 0;
}

static int test_hook_state_survives_save_and_load(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t a, b;
    sc_reducer_t *ra, *rb;

    (void)argc, (void)argv;
    if (saved_reducer(&w, &a, &b, &ra))
        return 1;
    if (make_reducer(&w, &b, DENSITY, &rb) || copy_hook_state(ra, rb))
        return 1;
    /* rb's first layout has the same buckets as ra's rebuilt one (gradients are marked
     * in reverse registration order): it adopts the loaded residuals. */
    return continue_both(&w, &a, &b, ra, rb);
}

/* The reducer's record of ra's hook state (sc_reducer_hook_save) into *state, *len. */
static int saved_state(sc_reducer_t *ra, char **state, size_t *len)
{
    *len = 0;
    CHECK_OK(sc_reducer_hook_save(ra, NULL, len));
    *state = malloc(*len);
    CHECK(*state, "out of memory");
    CHECK_OK(sc_reducer_hook_save(ra, *state, len));
    return 0;
}

/* The record's layout (reducer_state.c, compress_hook.c): a 24-byte header whose last
 * 8 bytes are the payload's length, the hook's name ("topk"), then the hook's payload:
 * a 16-byte table header (magic, version, number of keys) and 16 bytes per key before
 * the compressor's state. */
#define RECORD_HEADER 24
#define RECORD_PAYLOAD (RECORD_HEADER + 4)

/* A state saved before the hook's table of layouts existed (the compressor's state
 * alone in the record) still loads, matched by count and dtype: the loaded reducer
 * continues as the saved one does. */
static int test_hook_state_without_its_table_still_loads(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t a, b;
    sc_reducer_t *ra, *rb;
    char *state;
    size_t len, table;
    uint32_t nkeys;
    uint64_t payload;

    (void)argc, (void)argv;
    if (saved_reducer(&w, &a, &b, &ra) || saved_state(ra, &state, &len))
        return 1;
    memcpy(&nkeys, state + RECORD_PAYLOAD + 12, sizeof(nkeys));
    table = 16 + (size_t)nkeys * 16;
    CHECK(nkeys > 0 && len > RECORD_PAYLOAD + table, "a record of %zu bytes with %u keys", len,
          nkeys);
    memmove(state + RECORD_PAYLOAD, state + RECORD_PAYLOAD + table,
            len - RECORD_PAYLOAD - table);
    len -= table;
    payload = len - RECORD_PAYLOAD;
    memcpy(state + 16, &payload, sizeof(payload));
    if (make_reducer(&w, &b, DENSITY, &rb))
        return 1;
    CHECK_OK(sc_reducer_hook_load(rb, state, len));
    free(state);
    return continue_both(&w, &a, &b, ra, rb);
}

/* A state of a compressor used by sc_compressed_allreduce (whose keys are any int),
 * loaded as a state without its table: keys odd_key and 0 (64 floats each, one step).
 * The loaded reducer's next two iterations succeed on every rank. */
static int compressor_state_loads(int odd_key)
{
    const int keys[] = {odd_key, 0};
    sc_compress_config_t cc = SC_COMPRESS_CONFIG_INIT;
    rt_world_t w;
    rt_model_t a, b;
    sc_reducer_t *ra, *rb;
    sc_compressor_t *c;
    float send[64], recv[64];
    char *state, *record;
    size_t len, clen = 0;
    uint64_t payload;

    if (saved_reducer(&w, &a, &b, &ra) || saved_state(ra, &state, &len))
        return 1;
    cc.density = DENSITY;
    CHECK_OK(sc_compressor_create(&cc, &c));
    for (int i = 0; i < 64; i++)
        send[i] = (float)(i + 1);
    for (int i = 0; i < 2; i++)
        CHECK_OK(sc_compressed_allreduce(c, w.comm, keys[i], send, recv, 64, SC_FLOAT32,
                                         SC_SUM));
    CHECK_OK(sc_compressor_save(c, NULL, &clen));
    record = malloc(RECORD_PAYLOAD + clen);
    CHECK(record, "out of memory");
    memcpy(record, state, RECORD_PAYLOAD);
    CHECK_OK(sc_compressor_save(c, record + RECORD_PAYLOAD, &clen));
    payload = clen;
    memcpy(record + 16, &payload, sizeof(payload));
    sc_compressor_destroy(c);
    free(state);
    if (make_reducer(&w, &b, DENSITY, &rb))
        return 1;
    CHECK_OK(sc_reducer_hook_load(rb, record, RECORD_PAYLOAD + clen));
    free(record);
    for (int it = 0; it < 2; it++)
        if (iterate(&w, &b, rb, it))
            return 1;
    return release_both(&w, &a, &b, ra, rb);
}

/* Key -1 is no bucket index; the comparison of the ranks' steps after the load wrote its
 * count before the array it allocated (heap corruption: glibc aborted in free). */
static int test_hook_state_of_a_compressor_with_a_negative_key_loads(int argc, char **argv)
{
    (void)argc, (void)argv;
    return compressor_state_loads(-1);
}

/* Key INT32_MAX is no bucket index either; the comparison sized its array by the
 * largest key (2^32 steps of 8 bytes, all-reduced: out of memory, or a 32 GiB
 * all-reduce past the test's timeout). */
static int test_hook_state_of_a_compressor_with_a_huge_key_loads(int argc, char **argv)
{
    (void)argc, (void)argv;
    return compressor_state_loads(INT32_MAX);
}

/* A record whose table of layouts is of another version, truncated or carries an
 * unknown flag is refused with SC_ERR_INVALID_ARG saying so, and changes nothing: the
 * reducer that loaded the intact record before them continues as the saved one does. */
static int test_hook_state_with_a_bad_table_is_refused(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t a, b;
    sc_reducer_t *ra, *rb;
    char *state, *bad;
    size_t len;
    uint32_t x;
    uint64_t payload;

    (void)argc, (void)argv;
    if (saved_reducer(&w, &a, &b, &ra) || saved_state(ra, &state, &len) ||
        make_reducer(&w, &b, DENSITY, &rb))
        return 1;
    CHECK_OK(sc_reducer_hook_load(rb, state, len));
    bad = malloc(len);
    CHECK(bad, "out of memory");
    memcpy(bad, state, len);
    x = 2; /* version */
    memcpy(bad + RECORD_PAYLOAD + 8, &x, sizeof(x));
    CHECK_STATUS(sc_reducer_hook_load(rb, bad, len), SC_ERR_INVALID_ARG);
    CHECK_SAYS("format version 2");
    memcpy(bad, state, len);
    x = 0x7fffffffu; /* keys: more than the record holds */
    memcpy(bad + RECORD_PAYLOAD + 12, &x, sizeof(x));
    CHECK_STATUS(sc_reducer_hook_load(rb, bad, len), SC_ERR_INVALID_ARG);
    CHECK_SAYS("truncated");
    memcpy(bad, state, len);
    x = 2; /* the first entry's flags: no such flag */
    memcpy(bad + RECORD_PAYLOAD + 16 + 4, &x, sizeof(x));
    CHECK_STATUS(sc_reducer_hook_load(rb, bad, len), SC_ERR_INVALID_ARG);
    CHECK_SAYS("corrupt (entry 0)");
    /* A table header alone, cut short within its first entry. */
    memcpy(bad, state, len);
    payload = 16 + 8;
    memcpy(bad + 16, &payload, sizeof(payload));
    CHECK_STATUS(sc_reducer_hook_load(rb, bad, RECORD_PAYLOAD + (size_t)payload),
                 SC_ERR_INVALID_ARG);
    CHECK_SAYS("truncated");
    free(bad);
    free(state);
    return continue_both(&w, &a, &b, ra, rb);
}

/* A top-k reducer of n gradients (first bucket 4000 bytes, cap 12000) run for two
 * iterations, each rank marking the gradients in order: the bucket each gradient is in
 * then (buckets, n of them) and the flags its save's table gives each bucket index below
 * nflags (a key at or past nflags fails; an index without a key keeps its flag). */
static int flags_after_two_iterations(const size_t *counts, const sc_dtype_t *dtypes, int n,
                                      const int *order, int *buckets, uint32_t *flags,
                                      int nflags)
{
    uint32_t nkeys;
    size_t len, off;
    char *state;
    sc_reducer_t *r;
    rt_model_t m;
    rt_world_t w;

    if (rt_world(&w))
        return 1;
    rt_model_init(&m, n, counts, dtypes);
    CHECK_OK(create_reducer(&w, &m, DENSITY, 4000, 12000, &r));
    for (int it = 0; it < 2; it++) {
        for (int i = 0; i < n; i++) {
            rt_fill(&m, m.buf[order[i]], SEED, w.rank, it, order[i]);
            CHECK_OK(sc_reducer_mark_ready(r, order[i], m.buf[order[i]]));
        }
        CHECK_OK(sc_reducer_finalize(r));
    }
    for (int i = 0; i < n; i++)
        CHECK_OK(sc_reducer_grad_bucket(r, i, &buckets[i], &off));
    if (saved_state(r, &state, &len))
        return 1;
    memcpy(&nkeys, state + RECORD_PAYLOAD + 12, sizeof(nkeys));
    for (uint32_t i = 0; i < nkeys; i++) {
        int32_t key;
        memcpy(&key, state + RECORD_PAYLOAD + 16 + 16 * i, sizeof(key));
        CHECK(key >= 0 && key < nflags, "a state for bucket index %d", key);
        memcpy(&flags[key], state + RECORD_PAYLOAD + 16 + 16 * i + 4, sizeof(flags[key]));
    }
    free(state);
    CHECK_OK(sc_reducer_destroy(r));
    rt_model_free(&m);
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* Bucket 0 holds no element (a float16 gradient of zero elements, alone in its dtype,
 * registered last), so the hook starts no bucket 0 in any iteration. The first layout
 * (reverse registration order, first bucket 4000 bytes, cap 12000) has 4 buckets:
 * [empty], [g3], [g2 g1], [g0]; rank 0 marks empty, g0, g1, g2, g3, and the rebuild lays
 * out 3: [empty], [g0], [g1 g2 g3]. A save after an iteration in that layout marks
 * bucket index 3, which it no longer has, stale (its state is never adopted), and
 * indices 1 and 2 current. */
static int test_hook_state_marks_dropped_indices_with_bucket_0_empty(int argc, char **argv)
{
    static const size_t counts[] = {3000, 1000, 1000, 1000, 0};
    static const sc_dtype_t dtypes[] = {SC_FLOAT32, SC_FLOAT32, SC_FLOAT32, SC_FLOAT32,
                                        SC_FLOAT16};
    static const int order[] = {4, 0, 1, 2, 3};
    uint32_t flags[4] = {9, 9, 9, 9};
    int buckets[5];

    (void)argc, (void)argv;
    if (flags_after_two_iterations(counts, dtypes, 5, order, buckets, flags, 4))
        return 1;
    CHECK(buckets[4] == 0, "the empty gradient is in bucket %d", buckets[4]);
    CHECK(buckets[3] == 2, "gradient 3 is in bucket %d after the rebuild, not 2", buckets[3]);
    CHECK(flags[0] == 9, "a state for bucket index 0, which holds no element");
    CHECK(flags[1] == 0 && flags[2] == 0, "bucket indices 1 and 2 saved with flags %u and %u, "
          "not current (0)", flags[1], flags[2]);
    CHECK(flags[3] == 1, "bucket index 3, which the rebuilt layout no longer has, saved with "
          "flags %u, not stale (1)", flags[3]);
    return 0;
}

/* One gradient of 1000 float32 elements and, registered before it, one float16 gradient
 * of zero elements: the first layout (reverse registration order) is [g1], [empty]; both
 * ranks mark g0 then g1, and the rebuild lays out [empty], [g1]. The iteration after the
 * rebuild starts bucket index 1 alone, above index 0, the only one the iteration before
 * started: a save after it marks index 0, which no longer holds elements, stale (its
 * state, g1's residual of the first layout, is never adopted), and index 1 current. */
static int test_hook_state_marks_index_0_stale_when_its_bucket_moves_up(int argc,
                                                                       char **argv)
{
    static const size_t counts[] = {0, 1000};
    static const sc_dtype_t dtypes[] = {SC_FLOAT16, SC_FLOAT32};
    static const int order[] = {0, 1};
    uint32_t flags[2] = {9, 9};
    int buckets[2];

    (void)argc, (void)argv;
    if (flags_after_two_iterations(counts, dtypes, 2, order, buckets, flags, 2))
        return 1;
    CHECK(buckets[0] == 0 && buckets[1] == 1, "gradients 0 and 1 are in buckets %d and %d "
          "after the rebuild, not 0 and 1", buckets[0], buckets[1]);
    CHECK(flags[0] == 1, "bucket index 0, which holds no element since the rebuild, saved "
          "with flags %u, not stale (1)", flags[0]);
    CHECK(flags[1] == 0, "bucket index 1 saved with flags %u, not current (0)", flags[1]);
    return 0;
}

/* Rank 1 loads rank 0's hook state, rank 0 its own: rank 1's first bucket refuses the
 * state of another rank (SC_ERR_INVALID_ARG) and aborts the reducer's communicator;
 * rank 0's calls fail with SC_ERR_ABORTED whose sentence gives that reason (it said
 * only that the communicator was aborted). Rank 1 aborts as soon as its create returns:
 * rank 0 may still be completing that create's all-gather, a pending call the abort
 * fails (comm.h), and a loaded machine did so (1 run of the multirank label at -j4). */
static int test_hook_state_of_another_rank_fails_every_rank(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t a, b;
    sc_reducer_t *ra, *rb = NULL;
    size_t len = 0, *lens;
    char *states, want[96];
    sc_status_t st = SC_SUCCESS;

    (void)argc, (void)argv;
    if (saved_reducer(&w, &a, &b, &ra))
        return 1;
    CHECK_OK(sc_reducer_hook_save(ra, NULL, &len));
    lens = malloc((size_t)w.size * sizeof(*lens));
    states = malloc(len * (size_t)w.size);
    CHECK(lens && states, "out of memory");
    CHECK_OK(sc_reducer_hook_save(ra, states + len * (size_t)w.rank, &len));
    CHECK_OK(sc_allgather(&len, lens, sizeof(len), SC_UINT8, w.comm, NULL, NULL));
    CHECK(lens[0] == len, "rank %d's state has %zu bytes, rank 0's %zu", w.rank, len, lens[0]);
    CHECK_OK(sc_allgather(states + len * (size_t)w.rank, states, len, SC_UINT8, w.comm, NULL,
                          NULL));
    st = create_reducer(&w, &b, DENSITY, 4096, 32768, &rb);
    CHECK(st == SC_SUCCESS || (w.rank != 1 && st == SC_ERR_ABORTED),
          "the second reducer's create returned %s: %s", sc_status_string(st), sc_last_error());
    if (st == SC_SUCCESS)
        CHECK_OK(sc_reducer_hook_load(rb, states + (w.rank == 1 ? 0 : len * (size_t)w.rank),
                                      len));
    for (int g = b.n - 1; g >= 0 && st == SC_SUCCESS; g--) {
        rt_fill(&b, b.buf[g], SEED, w.rank, 3, g);
        st = sc_reducer_mark_ready(rb, g, b.buf[g]);
    }
    if (st == SC_SUCCESS)
        st = sc_reducer_finalize(rb);
    CHECK(st == (w.rank == 1 ? SC_ERR_INVALID_ARG : SC_ERR_ABORTED),
          "the create or the iteration after the load returned %s: %s", sc_status_string(st),
          sc_last_error());
    snprintf(want, sizeof(want), "made by rank 0 of %d and this is rank 1 of %d", w.size,
             w.size);
    CHECK(strstr(sc_last_error(), want), "the sentence '%s' does not say '%s'",
          sc_last_error(), want);
    CHECK_OK(sc_reducer_destroy(ra));
    CHECK_OK(sc_reducer_destroy(rb));
    rt_model_free(&a);
    rt_model_free(&b);
    free(lens);
    free(states);
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* The world and a reducer of the model (a) past its rebuild, whose own state rank 0
 * alone loads into it, rank 1 loading nothing: truncated, the record's table claims
 * more keys than it holds, and the load is refused (SC_ERR_INVALID_ARG, "truncated"). */
static int load_on_rank_0(rt_world_t *w, rt_model_t *a, rt_model_t *b, sc_reducer_t **ra,
                          int truncated)
{
    char *state;
    size_t len;
    uint32_t x = 0x7fffffffu; /* keys: more than the record holds */

    if (saved_reducer(w, a, b, ra) || saved_state(*ra, &state, &len))
        return 1;
    if (w->rank == 0 && truncated) {
        memcpy(state + RECORD_PAYLOAD + 12, &x, sizeof(x));
        CHECK_STATUS(sc_reducer_hook_load(*ra, state, len), SC_ERR_INVALID_ARG);
        CHECK_SAYS("truncated");
    } else if (w->rank == 0) {
        CHECK_OK(sc_reducer_hook_load(*ra, state, len));
    }
    free(state);
    return 0;
}

/* Rank 0's load is refused and changes nothing; rank 1 loads nothing (a job that goes
 * on with the state it has). The reducer's next two iterations succeed on both ranks:
 * the refused load marked rank 0's hook to compare the ranks' steps, which it alone
 * then did, and the iteration failed on both with the collectives' kinds differing. */
static int test_hook_state_refused_on_one_rank_changes_nothing(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t a, b;
    sc_reducer_t *ra;

    (void)argc, (void)argv;
    if (load_on_rank_0(&w, &a, &b, &ra, 1))
        return 1;
    for (int it = 3; it < 5; it++)
        if (iterate(&w, &a, ra, it))
            return 1;
    return release_one(&w, &a, &b, ra);
}

/* Rank 0 loads its own state, rank 1 nothing (against compress.h: every rank loads, or
 * none): the next iteration fails on both ranks with SC_ERR_MISMATCH, neither waiting
 * for the timeout, whose sentence names both sides: rank 0's comparison after the load
 * (it named an all-reduce of one int64 inside a reducer step) and rank 1's bucket. No
 * rank aborts the communicator, which would fail the other with SC_ERR_ABORTED: the
 * comparison's collective fails, and so fails the communicator with SC_ERR_MISMATCH and
 * tells the peers so, before rank 0's start returns, and the reducer aborts only a
 * communicator that had not failed. */
static int test_hook_state_loaded_on_one_rank_fails_every_rank(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t a, b;
    sc_reducer_t *ra;
    sc_status_t st = SC_SUCCESS;

    (void)argc, (void)argv;
    if (load_on_rank_0(&w, &a, &b, &ra, 0))
        return 1;
    for (int g = a.n - 1; g >= 0 && st == SC_SUCCESS; g--) {
        rt_fill(&a, a.buf[g], SEED, w.rank, 3, g);
        st = sc_reducer_mark_ready(ra, g, a.buf[g]);
    }
    if (st == SC_SUCCESS)
        st = sc_reducer_finalize(ra);
    CHECK(st == SC_ERR_MISMATCH, "the iteration after the load returned %s: %s",
          sc_status_string(st), sc_last_error());
    CHECK_SAYS("rank 0 called allreduce", "inside the top-k hook's comparison of the ranks' "
               "steps after its sc_reducer_hook_load (every rank loads its hook's state, or "
               "none)", "rank 1 called allgather", "inside a reducer step");
    return release_one(&w, &a, &b, ra);
}

/* Models whose rebuilt layout (gradients marked in registration order) differs from
 * the first (reverse registration order). counts_differ: no bucket index keeps its
 * count ([7, 23000, 80000] against [80000, 23007]); counts_equal: two gradients of one
 * size in a bucket each, swapped; one_bucket: both gradients in one bucket, at other
 * offsets. In the last two a bucket of the first layout has the saved one's count and
 * dtype but other gradients: the loaded state was adopted there, sent as the wrong
 * gradients' residuals, then dropped at the rebuild (helper's find). */
typedef struct {
    const char *name;
    size_t counts[4];
    int n;
    size_t first_bytes, cap_bytes;
} adopt_model_t;

static const adopt_model_t adopt_models[] = {
    {"counts_differ", {80000, 3000, 20000, 7}, 4, 30000, 100000},
    {"counts_equal", {2000, 2000}, 2, 8000, 8000},
    {"one_bucket", {1000, 3000}, 2, 1 << 20, 1 << 20}};

static int make_adopt_reducer(rt_world_t *w, rt_model_t *m, const adopt_model_t *am,
                              sc_reducer_t **r)
{
    return make_reducer_with(w, m, 0.02, am->first_bytes, am->cap_bytes, r);
}

/* A checkpoint saved after the rebuild, loaded into a new reducer: its first layout
 * gives the buckets other counts, so the loaded residuals wait (that iteration, of
 * zeros, starts those buckets from zero and sends nothing); the rebuilt layout, the
 * saved one's, adopts them, and the next iteration equals the saved reducer's bit for
 * bit. Before, the first layout threw the loaded residuals away. */
static int test_hook_state_waits_for_its_layout_after_load(int argc, char **argv)
{
    const adopt_model_t *am = &adopt_models[0];
    rt_world_t w;
    rt_model_t a, b;
    sc_reducer_t *ra, *rb;
    size_t first[4], rebuilt[4];

    for (size_t i = 0; argc > 0 && i < sizeof(adopt_models) / sizeof(adopt_models[0]); i++)
        if (strcmp(argv[0], adopt_models[i].name) == 0)
            am = &adopt_models[i];
    CHECK(argc == 0 || strcmp(argv[0], am->name) == 0, "no model named %s", argv[0]);
    if (rt_world(&w))
        return 1;
    rt_model_init(&a, am->n, am->counts, NULL);
    rt_model_init(&b, am->n, am->counts, NULL);
    if (make_adopt_reducer(&w, &a, am, &ra))
        return 1;
    for (int it = 0; it < 3; it++)
        if (iterate_as(&w, &a, ra, it, 1, 0, it == 0 ? first : rebuilt))
            return 1;
    if (am == &adopt_models[0])
        for (int i = 0; i < am->n; i++)
            CHECK(first[i] != rebuilt[i] || first[i] == 0, "bucket %d holds %zu elements in "
                  "both layouts: the test needs other counts", i, first[i]);
    if (make_adopt_reducer(&w, &b, am, &rb) || copy_hook_state(ra, rb))
        return 1;
    /* The first layout's iteration, of zeros: its buckets start from zero (the loaded
     * residuals wait aside), so nothing is sent. */
    if (iterate_as(&w, &b, rb, 0, 1, 1, first))
        return 1;
    for (int g = 0; g < b.n; g++)
        for (size_t e = 0; e < b.desc[g].count; e++)
            CHECK(((float *)b.buf[g])[e] == 0.0f, "the first layout's iteration of zeros "
                  "sent %.9g as gradient %d element %zu: a loaded residual went to another "
                  "bucket's gradients", ((float *)b.buf[g])[e], g, e);
    if (iterate_as(&w, &a, ra, 3, 1, 0, rebuilt) || iterate_as(&w, &b, rb, 3, 1, 0, rebuilt))
        return 1;
    return check_same_and_release(&w, &a, &b, ra, rb);
}

static int test_hook_state_in_use_is_saved_when_no_rebuild_follows(int argc, char **argv)
{
    const adopt_model_t *am = &adopt_models[1]; /* counts_equal */
    rt_world_t w;
    rt_model_t a, b, c;
    sc_reducer_t *ra, *rb, *rc;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    rt_model_init(&a, am->n, am->counts, NULL);
    rt_model_init(&b, am->n, am->counts, NULL);
    rt_model_init(&c, am->n, am->counts, NULL);
    if (make_adopt_reducer(&w, &a, am, &ra))
        return 1;
    for (int it = 0; it < 3; it++) /* forward: rebuilt to other buckets than b's */
        if (iterate_as(&w, &a, ra, it, 1, 0, NULL))
            return 1;
    if (make_adopt_reducer(&w, &b, am, &rb) || copy_hook_state(ra, rb))
        return 1;
    for (int it = 3; it < 6; it++) /* reverse: b's first layout, never rebuilt */
        if (iterate(&w, &b, rb, it))
            return 1;
    if (make_adopt_reducer(&w, &c, am, &rc) || copy_hook_state(rb, rc))
        return 1;
    if (iterate(&w, &b, rb, 6) || iterate(&w, &c, rc, 6))
        return 1;
    CHECK_OK(sc_reducer_destroy(ra));
    rt_model_free(&a);
    /* The save held the state kept aside, not the one in use: c differed from b. */
    return check_same_and_release(&w, &b, &c, rb, rc);
}

/* An iteration whose first bucket cannot start (the reducer's communicator, a split,
 * aborted on every rank first) starts no later bucket: its steps were never taken. The
 * save after it marked their states stale (not started in the latest iteration), so
 * that a reducer loading it dropped their residuals, where the saving one kept them. */
static int test_hook_state_after_a_failed_iteration_keeps_the_buckets_it_never_started(
    int argc, char **argv)
{
    rt_world_t w, ws;
    rt_model_t a, b, c;
    sc_reducer_t *ra, *rb, *rc;
    char *before, *after;
    size_t lb, la;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    ws = w;
    CHECK_OK(sc_comm_split(w.comm, 0, w.rank, &ws.comm));
    rt_model_init(&a, MODEL_N, model_counts, NULL);
    rt_model_init(&b, MODEL_N, model_counts, NULL);
    rt_model_init(&c, MODEL_N, model_counts, NULL);
    if (make_reducer(&ws, &a, DENSITY, &ra))
        return 1;
    for (int it = 0; it < 3; it++)
        if (iterate(&ws, &a, ra, it))
            return 1;
    if (saved_state(ra, &before, &lb))
        return 1;
    /* Every rank past its third iteration first: aborted while a peer still finishes it,
     * that peer's finalize failed (beside other work). */
    CHECK_OK(sc_barrier(w.comm, NULL));
    CHECK_OK(sc_comm_abort(ws.comm));
    for (int i = 0; i < a.n; i++) { /* the first start fails, and no bucket starts after it */
        rt_fill(&a, a.buf[a.n - 1 - i], SEED, w.rank, 3, a.n - 1 - i);
        (void)sc_reducer_mark_ready(ra, a.n - 1 - i, a.buf[a.n - 1 - i]);
    }
    CHECK(sc_reducer_finalize(ra) != SC_SUCCESS, "the iteration on an aborted communicator "
          "succeeded");
    if (saved_state(ra, &after, &la))
        return 1;
    CHECK(la == lb && memcmp(before, after, lb) == 0, "the save after the failed iteration "
          "(%zu bytes) differs from the save before it (%zu bytes): the buckets it never "
          "started were saved as stale", la, lb);
    if (make_reducer(&w, &b, DENSITY, &rb) || make_reducer(&w, &c, DENSITY, &rc))
        return 1;
    CHECK_OK(sc_reducer_hook_load(rb, after, la));
    CHECK_OK(sc_reducer_hook_load(rc, before, lb));
    free(before);
    free(after);
    if (iterate(&w, &b, rb, 4) || iterate(&w, &c, rc, 4))
        return 1;
    CHECK_OK(sc_reducer_destroy(ra));
    CHECK_OK(sc_comm_destroy(ws.comm));
    rt_model_free(&a);
    return check_same_and_release(&w, &b, &c, rb, rc);
}

/* One of two threads saving one reducer's hook state at once: each waits for the other
 * to be ready, then saves into its own buffer. */
typedef struct {
    sc_reducer_t *r;
    pthread_barrier_t *go;
    char buf[32768];
    size_t len;
    sc_status_t st;
} saver_t;

static void *saver_run(void *arg)
{
    saver_t *s = arg;

    s->len = sizeof(s->buf);
    pthread_barrier_wait(s->go);
    s->st = sc_reducer_hook_save(s->r, s->buf, &s->len);
    return NULL;
}

/* sc_reducer_hook_save takes a const reducer, but the top-k hook's save first undoes a
 * failed iteration's steps: two threads saving at once both undid, one writing the
 * state while the other still put a step's key back (or freed a first step's key under
 * it). Each round: a fresh reducer on a split of one gradient's bucket, whose first
 * iteration (even rounds) or second (odd rounds, after one that succeeded) fails at its
 * start (the split aborted), leaving that step pending; two threads save at once; both
 * must write the state saved before the failed iteration. */
static int test_hook_state_saved_by_two_threads_at_once(int argc, char **argv)
{
    static const size_t counts[] = {4000};
    rt_world_t w, ws;
    rt_model_t m;
    pthread_barrier_t go;
    sc_reducer_t *r;
    char *want;
    size_t lw;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    rt_model_init(&m, 1, counts, NULL);
    pthread_barrier_init(&go, NULL, 2);
    for (int round = 0; round < 200; round++) {
        saver_t s[2] = {{.go = &go}, {.go = &go}};
        pthread_t t[2];

        ws = w;
        CHECK_OK(sc_comm_split(w.comm, 0, w.rank, &ws.comm));
        if (make_reducer(&ws, &m, DENSITY, &r) || (round % 2 && iterate(&ws, &m, r, 0)) ||
            saved_state(r, &want, &lw))
            return 1;
        CHECK(lw <= sizeof(s[0].buf), "a state of %zu bytes", lw);
        CHECK_OK(sc_comm_abort(ws.comm));
        rt_fill(&m, m.buf[0], SEED, w.rank, 1, 0);
        (void)sc_reducer_mark_ready(r, 0, m.buf[0]);
        CHECK(sc_reducer_finalize(r) != SC_SUCCESS, "the iteration on an aborted "
              "communicator succeeded");
        for (int i = 0; i < 2; i++) {
            s[i].r = r;
            CHECK(pthread_create(&t[i], NULL, saver_run, &s[i]) == 0, "pthread_create");
        }
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        for (int i = 0; i < 2; i++)
            CHECK(s[i].st == SC_SUCCESS && s[i].len == lw && memcmp(s[i].buf, want, lw) == 0,
                  "round %d: thread %d's save (%s, %zu bytes) is not the state before the "
                  "failed iteration (%zu bytes)", round, i, sc_status_string(s[i].st),
                  s[i].len, lw);
        free(want);
        CHECK_OK(sc_reducer_destroy(r));
        CHECK_OK(sc_comm_destroy(ws.comm));
    }
    pthread_barrier_destroy(&go);
    rt_model_free(&m);
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* Where gradient g of m is written and its result read: its view in r (g_view), else
 * the model's buffer. */
static float *grad_of(sc_reducer_t *r, rt_model_t *m, int g)
{
    return g_view ? sc_reducer_grad_view(r, g) : m->buf[g];
}

/* Small integers, distinct per rank, iteration and element (ties are broken by the
 * lowest index the same way on both sides anyway). */
static float accumulation_value(int rank, int step, int half, int g, size_t e)
{
    return (float)((int)((e * 37 + (size_t)g * 11 + (size_t)step * 5 + (size_t)half * 3 +
                          (size_t)rank * 17) % 129) - 64);
}

static int test_accumulation_equals_one_synced_step(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t a, b;
    sc_reducer_t *ra, *rb;

    g_view = argc > 0 && !strcmp(argv[0], "view");
    if (rt_world(&w))
        return 1;
    CHECK(w.size == 2, "runs on 2 ranks (halving by 2 is exact), not %d", w.size);
    rt_model_init(&a, MODEL_N, model_counts, NULL);
    rt_model_init(&b, MODEL_N, model_counts, NULL);
    if (make_reducer(&w, &a, 0.05, &ra) || make_reducer(&w, &b, 0.05, &rb))
        return 1;
    /* One synced iteration of zeros first: both lay their buckets out anew after it,
     * with nothing in the residuals yet. */
    for (int g = MODEL_N - 1; g >= 0; g--) {
        memset(grad_of(ra, &a, g), 0, model_counts[g] * sizeof(float));
        memset(grad_of(rb, &b, g), 0, model_counts[g] * sizeof(float));
        CHECK_OK(sc_reducer_mark_ready(ra, g, g_view ? NULL : a.buf[g]));
        CHECK_OK(sc_reducer_mark_ready(rb, g, g_view ? NULL : b.buf[g]));
    }
    CHECK_OK(sc_reducer_finalize(ra));
    CHECK_OK(sc_reducer_finalize(rb));
    for (int step = 0; step < 4; step++) {
        /* a: half 0 without sync, then half 1 synced; b: both halves summed, synced. */
        for (int half = 0; half < 2; half++) {
            CHECK_OK(sc_reducer_set_sync(ra, half));
            for (int g = MODEL_N - 1; g >= 0; g--) {
                /* Views: the framework adds the second half to the first, as autograd
                 * accumulates into .grad. */
                float *x = grad_of(ra, &a, g);
                for (size_t e = 0; e < model_counts[g]; e++)
                    x[e] = (g_view && half ? x[e] : 0.0f) +
                           accumulation_value(w.rank, step, half, g, e);
                CHECK_OK(sc_reducer_mark_ready(ra, g, g_view ? NULL : x));
            }
            CHECK_OK(sc_reducer_finalize(ra));
        }
        for (int g = MODEL_N - 1; g >= 0; g--) {
            float *x = grad_of(rb, &b, g);
            for (size_t e = 0; e < model_counts[g]; e++)
                x[e] = accumulation_value(w.rank, step, 0, g, e) +
                       accumulation_value(w.rank, step, 1, g, e);
            CHECK_OK(sc_reducer_mark_ready(rb, g, g_view ? NULL : x));
        }
        CHECK_OK(sc_reducer_finalize(rb));
        size_t nonzero = 0, total = 0;
        for (int g = 0; g < MODEL_N; g++) {
            const float *x = grad_of(ra, &a, g), *y = grad_of(rb, &b, g);
            for (size_t e = 0; e < model_counts[g]; e++) {
                CHECK(x[e] == y[e], "step %d gradient %d element %zu: %.9g accumulated, "
                      "%.9g in one step", step, g, e, x[e], y[e]);
                nonzero += x[e] != 0.0f;
            }
            total += model_counts[g];
        }
        /* Each rank sends 5% of every bucket (rounded): at most about 10% in all. */
        CHECK(nonzero > 0 && nonzero <= total / 10 + 2 * 16, "step %d: %zu nonzero of %zu, "
              "not the union of two 5%% selections", step, nonzero, total);
    }
    return release_both(&w, &a, &b, ra, rb);
}

/* One gradient of 8 in gd, ct_order_value at element 5 and zeros, its top 1 (density
 * 1/8) that element, values sent as float16 where fp16: after finalize, element 5 is
 * the sum in rank order (float32 for a float16 or bfloat16 bucket, rounded once), the
 * rest zero. */
static int order_case(rt_world_t *w, sc_dtype_t gd, int fp16, int view)
{
    static const size_t count[1] = {8};
    sc_dtype_t vd = fp16 ? SC_FLOAT16 : gd;
    double want = ct_order_sum(w->size, gd, vd);
    sc_compress_config_t cc = SC_COMPRESS_CONFIG_INIT;
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_comm_hook_t hook;
    sc_reducer_t *r;
    rt_model_t m;
    void *g;

    rt_model_init(&m, 1, count, &gd);
    cc.density = 1.0 / 8;
    cc.values_fp16 = fp16;
    CHECK_OK(sc_comm_hook_topk(&cc, &hook));
    cfg.prediv = 1.0;
    cfg.gradient_as_bucket_view = view;
    cfg.hook = &hook;
    CHECK_OK(sc_reducer_create(w->comm, m.desc, m.n, &cfg, &r));
    g = view ? sc_reducer_grad_view(r, 0) : m.buf[0];
    for (int e = 0; e < 8; e++)
        rt_store(gd, g, (size_t)e, e == 5 ? ct_order_value(w->rank, gd, vd) : 0.0);
    CHECK_OK(sc_reducer_mark_ready(r, 0, view ? NULL : g));
    CHECK_OK(sc_reducer_finalize(r));
    for (int e = 0; e < 8; e++)
        CHECK(rt_load(gd, g, (size_t)e) == (e == 5 ? want : 0.0), "%s gradients, %s values, "
              "%s: element %d is %.17g, want %.17g (the sum in rank order)", sc_dtype_name(gd),
              sc_dtype_name(vd), view ? "views" : "copies", e, rt_load(gd, g, (size_t)e),
              e == 5 ? want : 0.0);
    if (ct_check_same_bits(w, g, 8 * rt_size(gd)))
        return 1;
    CHECK_OK(sc_reducer_destroy(r));
    rt_model_free(&m);
    return 0;
}

static int test_hook_sum_follows_rank_order(int argc, char **argv)
{
    /* float32 gradients with float32 and float16 values; float16 and bfloat16 ones,
     * bfloat16 with float16 values too. */
    static const struct {
        sc_dtype_t gd;
        int fp16;
    } cases[] = {{SC_FLOAT32, 0}, {SC_FLOAT32, 1}, {SC_FLOAT16, 0}, {SC_BFLOAT16, 0},
                 {SC_BFLOAT16, 1}};
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (int view = 0; view < 2; view++)
            if (order_case(&w, cases[c].gd, cases[c].fp16, view))
                return 1;
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

int main(int argc, char **argv)
{
    static const rt_test_t tests[] = {
        {"density_one_equals_dense", test_density_one_equals_dense},
        {"density_matches_reference", test_density_matches_reference},
        {"hook_state_survives_save_and_load", test_hook_state_survives_save_and_load},
        {"hook_state_without_its_table_still_loads",
         test_hook_state_without_its_table_still_loads},
        {"hook_state_of_a_compressor_with_a_negative_key_loads",
         test_hook_state_of_a_compressor_with_a_negative_key_loads},
        {"hook_state_of_a_compressor_with_a_huge_key_loads",
         test_hook_state_of_a_compressor_with_a_huge_key_loads},
        {"hook_state_with_a_bad_table_is_refused", test_hook_state_with_a_bad_table_is_refused},
        {"hook_state_marks_dropped_indices_with_bucket_0_empty",
         test_hook_state_marks_dropped_indices_with_bucket_0_empty},
        {"hook_state_marks_index_0_stale_when_its_bucket_moves_up",
         test_hook_state_marks_index_0_stale_when_its_bucket_moves_up},
        {"hook_state_of_another_rank_fails_every_rank",
         test_hook_state_of_another_rank_fails_every_rank},
        {"hook_state_refused_on_one_rank_changes_nothing",
         test_hook_state_refused_on_one_rank_changes_nothing},
        {"hook_state_loaded_on_one_rank_fails_every_rank",
         test_hook_state_loaded_on_one_rank_fails_every_rank},
        {"hook_state_waits_for_its_layout_after_load",
         test_hook_state_waits_for_its_layout_after_load},
        {"hook_state_in_use_is_saved_when_no_rebuild_follows",
         test_hook_state_in_use_is_saved_when_no_rebuild_follows},
        {"hook_state_after_a_failed_iteration_keeps_the_buckets_it_never_started",
         test_hook_state_after_a_failed_iteration_keeps_the_buckets_it_never_started},
        {"accumulation_equals_one_synced_step", test_accumulation_equals_one_synced_step},
        {"hook_state_saved_by_two_threads_at_once",
         test_hook_state_saved_by_two_threads_at_once},
        {"hook_sum_follows_rank_order", test_hook_sum_follows_rank_order},
        {NULL, NULL}};
    return rt_main(tests, argc, argv);
}
