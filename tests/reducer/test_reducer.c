/* The gradient reducer across ranks, one behaviour per test (argv[1]):
 *   average_matches_reference DTYPE     averaged gradients against a float64 reference
 *                                       over 3 iterations (before and after the
 *                                       rebuild), ranks marking in different orders,
 *                                       bit for bit the same on every rank
 *   integer_gradients_are_summed        int32/int64 with prediv 1
 *   gradient_as_bucket_view_leaves_results_in_views [doubling|doubling_into]   (with the
 *     doubling hook; with finish_into too, which views never use)
 *   find_unused_gradients_count_as_zero MODE [whole_bucket]   (view | copy; the last
 *                                       rank also skips every gradient of one bucket)
 *   rebuild_follows_rank_0_ready_order
 *   views_stay_put_when_the_ready_order_is_the_layout
 *   views_held_at_finalize_keep_the_results_until_the_next_call
 *   no_sync_iterations_accumulate MODE  (copy | view)
 *   synced_iteration_after_one_rank_failed_without_sync   rank 0 leaves the odd
 *                                       gradients unmarked in an iteration without sync
 *                                       (its finalize fails, the others' succeed), then
 *                                       every rank marks all in a synced one: each result
 *                                       counts what each rank accumulated (a gradient
 *                                       alone in its bucket was reduced in place, divided
 *                                       inside its all-reduce, on rank 0, which had
 *                                       accumulated nothing for it, and not on the others:
 *                                       wrong results on every rank)
 *   hook_casts_to_narrow_type KIND      (fp16 | bf16)
 *   custom_hook_reduces_every_bucket [into]
 *   hook_state_survives_a_checkpoint    sc_reducer_hook_save/_load round trip and refusals
 *   hook_save_and_load_beside_a_marking_thread   saves and loads on one thread while
 *                                       another marks an iteration's gradients: each
 *                                       refused (gradients marked), or whole before the
 *                                       first mark, no bucket starting while the hook's
 *                                       save or load runs
 *   hook_save_beside_finalize_starting_the_buckets   a save on another thread while
 *                                       finalize starts the buckets of an iteration with
 *                                       no gradient marked: refused
 *   autotune_converges_and_ranks_agree
 *   SC_BUCKET_CAP_MB_turns_autotune_off
 *   mark_ready_from_several_threads
 *   zero_gradients_and_zero_element_gradients
 *   copy_back_follows_each_reduction_before_finalize
 *   hook_work_outliving_a_failed_iteration_ends_before_the_buckets_are_freed   a hook
 *                                       whose start leaves a thread reading the bucket
 *                                       and then fails (as the top-k hook's selection
 *                                       worker may still read a bucket after a failed
 *                                       iteration, whose finish never runs); its destroy
 *                                       joins the thread, and the reducer frees the
 *                                       buckets only after that (AddressSanitizer sees
 *                                       a read of freed memory otherwise) */
#include <pthread.h>
#include <sched.h>

#include "reducer_test.h"

#define SEED 0x5eed0001ull

/* Sizes that give several buckets with a 4 KiB first bucket and a 32 KiB cap, ring and
 * recursive-doubling all-reduces, and odd counts. */
static const size_t model_counts[] = {3, 1000, 17, 5000, 1, 20000, 257, 64, 4096, 999};
#define MODEL_N ((int)(sizeof(model_counts) / sizeof(model_counts[0])))

static void model_of(rt_model_t *m, sc_dtype_t d)
{
    sc_dtype_t dt[MODEL_N];
    for (int i = 0; i < MODEL_N; i++)
        dt[i] = d;
    rt_model_init(m, MODEL_N, model_counts, dt);
}

/* n float32 gradients (at most 64) of count elements each. */
static void model_uniform(rt_model_t *m, int n, size_t count)
{
    size_t counts[64];
    for (int i = 0; i < n; i++)
        counts[i] = count;
    rt_model_init(m, n, counts, NULL);
}

static sc_reducer_config_t small_buckets(void)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    cfg.first_bucket_bytes = 4096;
    cfg.bucket_cap_bytes = 32768;
    return cfg;
}

/* What a test runs on: the world, this rank's model, a reducer of the model. */
typedef struct {
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;
} fixture_t;

/* Joins the world and creates the reducer of fx->m (set up by the caller) with cfg. */
static int fixture_start(fixture_t *fx, const sc_reducer_config_t *cfg)
{
    if (rt_world(&fx->w))
        return 1;
    CHECK_OK(sc_reducer_create(fx->w.comm, fx->m.desc, fx->m.n, cfg, &fx->r));
    return 0;
}

/* fixture_start with the float32 model and small buckets, reduced by hook. */
static int fixture_start_hooked(fixture_t *fx, const sc_comm_hook_t *hook)
{
    sc_reducer_config_t cfg = small_buckets();

    model_of(&fx->m, SC_FLOAT32);
    cfg.hook = hook;
    return fixture_start(fx, &cfg);
}

/* Leaves the world and frees the model, the reducer already destroyed. */
static int fixture_leave(fixture_t *fx)
{
    CHECK_OK(sc_comm_destroy(fx->w.comm));
    rt_model_free(&fx->m);
    return 0;
}

static int fixture_finish(fixture_t *fx)
{
    CHECK_OK(sc_reducer_destroy(fx->r));
    return fixture_leave(fx);
}

/* A permutation of 0..n-1 for (rank, iteration): ranks mark in different orders. */
static void shuffled(int *order, int n, int rank, int it)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rt_mix(SEED ^ ((uint64_t)rank << 40) ^ ((uint64_t)it << 20) ^ (uint64_t)i) %
                      (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static sc_dtype_t dtype_arg(int argc, char **argv)
{
    sc_dtype_t d = SC_FLOAT32;
    if (argc > 0)
        sc_dtype_from_name(argv[0], &d);
    return d;
}

/* Fills every gradient of iteration it and marks them in a shuffled order (copy mode). */
static int copy_marks(fixture_t *fx, sc_reducer_t *r, int it)
{
    int order[64];

    for (int g = 0; g < fx->m.n; g++)
        rt_fill(&fx->m, fx->m.buf[g], SEED, fx->w.rank, it, g);
    shuffled(order, fx->m.n, fx->w.rank, it);
    for (int k = 0; k < fx->m.n; k++)
        CHECK_OK(sc_reducer_mark_ready(r, order[k], fx->m.buf[order[k]]));
    return 0;
}

/* Checks the results of iteration it at bufs[g] against the reference. */
static int check_grads(const fixture_t *fx, void *const *bufs, int it, double prediv,
                       sc_dtype_t tol_dtype)
{
    for (int g = 0; g < fx->m.n; g++)
        if (rt_check_grad_as(&fx->m, bufs[g], g, SEED, fx->w.size, prediv, &it, 1, NULL,
                             tol_dtype))
            return 1;
    return 0;
}

/* The same, and the same bits on every rank. */
static int check_results(fixture_t *fx, void *const *bufs, int it, double prediv,
                         sc_dtype_t tol_dtype)
{
    if (check_grads(fx, bufs, it, prediv, tol_dtype))
        return 1;
    return rt_check_same_bits(&fx->w, &fx->m, bufs);
}

/* One iteration in copy mode: marks, finalize, the results written back checked. */
static int copy_iteration(fixture_t *fx, sc_reducer_t *r, int it, double prediv,
                          sc_dtype_t tol_dtype)
{
    if (copy_marks(fx, r, it))
        return 1;
    CHECK_OK(sc_reducer_finalize(r));
    return check_results(fx, fx->m.buf, it, prediv, tol_dtype);
}

/* Iterations first..end-1 of fx's reducer in copy mode. */
static int copy_iterations(fixture_t *fx, int first, int end, double prediv,
                           sc_dtype_t tol_dtype)
{
    for (int it = first; it < end; it++)
        if (copy_iteration(fx, fx->r, it, prediv, tol_dtype))
            return 1;
    return 0;
}

static int test_average_matches_reference(int argc, char **argv)
{
    sc_dtype_t d = dtype_arg(argc, argv);
    sc_reducer_config_t cfg = small_buckets();
    fixture_t fx;

    model_of(&fx.m, d);
    if (fixture_start(&fx, &cfg) || copy_iterations(&fx, 0, 3, fx.w.size, d))
        return 1;
    return fixture_finish(&fx);
}

static int test_integer_gradients_are_summed(int argc, char **argv)
{
    static const size_t counts[] = {10, 3000, 7, 100};
    static const sc_dtype_t dtypes[] = {SC_INT32, SC_INT64, SC_INT32, SC_INT64};
    sc_reducer_config_t cfg = small_buckets();
    fixture_t fx;

    (void)argc, (void)argv;
    rt_model_init(&fx.m, 4, counts, dtypes);
    cfg.prediv = 1.0;
    if (fixture_start(&fx, &cfg) || copy_iterations(&fx, 0, 2, 1.0, SC_INT32))
        return 1;
    return fixture_finish(&fx);
}

/* A caller's hook: all-reduces the bucket itself, then doubles it in finish (or, with
 * finish_into, writes the doubled ranges straight into the gradients); counts its
 * calls. */
typedef struct {
    int starts, finishes, finishes_into;
    int bad_ranges;   /* finish_into calls whose ranges were not sorted, disjoint and
                         whole elements inside the bucket */
    int *destroyed;
} doubling_t;

static sc_status_t doubling_start(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm,
                                  sc_request_t **req)
{
    ((doubling_t *)state)->starts++;
    return sc_allreduce(b->data, b->data, b->count, b->dtype, SC_SUM, comm, NULL, req);
}

static sc_status_t doubling_finish(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm)
{
    float *x = b->data;
    (void)comm;
    ((doubling_t *)state)->finishes++;
    for (size_t i = 0; i < b->count; i++)
        x[i] *= 2.0f;
    return SC_SUCCESS;
}

static sc_status_t doubling_finish_into(void *state, const sc_hook_bucket_t *b,
                                         sc_comm_t *comm, const sc_range_t *ranges, int n)
{
    doubling_t *d = state;
    size_t end = 0;

    (void)comm;
    d->finishes_into++;
    for (int j = 0; j < n; j++) {
        const float *x = (const float *)((const char *)b->data + ranges[j].off);
        float *y = ranges[j].dst;
        if (ranges[j].off < end || ranges[j].bytes % sizeof(float) ||
            ranges[j].off % sizeof(float) ||
            ranges[j].off + ranges[j].bytes > b->count * sizeof(float)) {
            d->bad_ranges++;
            return SC_SUCCESS;
        }
        end = ranges[j].off + ranges[j].bytes;
        for (size_t i = 0; i < ranges[j].bytes / sizeof(float); i++)
            y[i] = 2.0f * x[i];
    }
    return SC_SUCCESS;
}

static void doubling_destroy(void *state)
{
    *((doubling_t *)state)->destroyed = 1;
}

/* The doubling hook on state, which starts with no calls; its destroy sets *destroyed. */
static sc_comm_hook_t doubling_hook(doubling_t *state, int *destroyed)
{
    sc_comm_hook_t hook = {.name = "doubling", .state = state, .start = doubling_start,
                           .finish = doubling_finish, .destroy = doubling_destroy};

    *state = (doubling_t){0, 0, 0, 0, destroyed};
    return hook;
}

/* The doubling hook with finish_into too. */
static sc_comm_hook_t doubling_into_hook(doubling_t *state, int *destroyed)
{
    sc_comm_hook_t hook = doubling_hook(state, destroyed);

    hook.finish_into = doubling_finish_into;
    return hook;
}

/* The framework writes each gradient into its view and marks it with NULL; the
 * averages are read from the views, asked again after every finalize (the first one
 * rebuilds the buckets and moves the views with their contents). With "doubling" the
 * doubling hook's finish (run by the reducer's thread) doubles them, once per bucket. */
static int test_gradient_as_bucket_view_leaves_results_in_views(int argc, char **argv)
{
    sc_reducer_config_t cfg = small_buckets();
    int destroyed = 0, doubled = argc > 0 && strncmp(argv[0], "doubling", 8) == 0;
    doubling_t state;
    sc_comm_hook_t hook = argc > 0 && strcmp(argv[0], "doubling_into") == 0
                              ? doubling_into_hook(&state, &destroyed)
                              : doubling_hook(&state, &destroyed);
    const char *reg = getenv("SC_LOCAL_REGISTER");
    sc_reducer_stats_t st;
    void *views[MODEL_N];
    int order[MODEL_N];
    fixture_t fx;

    model_of(&fx.m, SC_FLOAT32);
    cfg.gradient_as_bucket_view = 1;
    if (doubled)
        cfg.hook = &hook;
    if (fixture_start(&fx, &cfg))
        return 1;
    for (int it = 0; it < 3; it++) {
        for (int g = 0; g < fx.m.n; g++) {
            views[g] = sc_reducer_grad_view(fx.r, g);
            CHECK(views[g], "gradient %d has no view", g);
            rt_fill(&fx.m, views[g], SEED, fx.w.rank, it, g);
        }
        shuffled(order, fx.m.n, fx.w.rank, it);
        for (int k = 0; k < fx.m.n; k++)
            CHECK_OK(sc_reducer_mark_ready(fx.r, order[k], k % 2 ? views[order[k]] : NULL));
        CHECK_OK(sc_reducer_finalize(fx.r));
        /* Ranks of one node keep their buckets in registered memory unless told not
         * to, from creation and after the rebuild. */
        CHECK_OK(sc_reducer_stats(fx.r, &st));
        CHECK(st.registered == (fx.w.size > 1 && !(reg && strcmp(reg, "0") == 0)),
              "iteration %d: stats.registered is %d with %d ranks on one node and "
              "SC_LOCAL_REGISTER=%s", it, st.registered, fx.w.size, reg ? reg : "(unset)");
        CHECK(state.finishes == state.starts && state.finishes_into == 0,
              "iteration %d: %d starts, %d finishes, %d finishes into the gradients (views "
              "keep the results: finish only)", it, state.starts, state.finishes,
              state.finishes_into);
        for (int g = 0; g < fx.m.n; g++)
            views[g] = sc_reducer_grad_view(fx.r, g);
        if (check_results(&fx, views, it, doubled ? fx.w.size / 2.0 : fx.w.size, SC_FLOAT32))
            return 1;
    }
    return fixture_finish(&fx);
}

/* Rank r never marks gradient (r + 1) % n, and no rank marks gradient 5: with
 * find_unused each counts as zero from the ranks that skipped it. View mode reads
 * every result from the views; copy mode checks what was written back to the
 * gradients this rank marked. Two iterations (the rebuild in between puts the unmarked
 * gradients last). With whole_bucket the last rank also marks none of the gradients
 * of the bucket that holds gradient 0 (at least two of them): that rank reduces the
 * bucket with no gradient to write back, the others with theirs, and the reduction
 * must still be one on every rank (in registered memory the two used to take
 * different protocols and time out). */
static int test_find_unused_gradients_count_as_zero(int argc, char **argv)
{
    int view = argc > 0 && strcmp(argv[0], "view") == 0;
    int whole = argc > 1 && strcmp(argv[1], "whole_bucket") == 0;
    sc_reducer_config_t cfg = small_buckets();
    int used[16], skip[16];
    fixture_t fx;

    model_of(&fx.m, SC_FLOAT32);
    cfg.find_unused = 1;
    cfg.gradient_as_bucket_view = view;
    if (fixture_start(&fx, &cfg))
        return 1;
    for (int it = 0; it < 2; it++) {
        int b0 = -1, nskip = 0;
        size_t off;

        /* skip[g]: the last rank skips g, as one of the bucket of gradient 0. */
        CHECK_OK(sc_reducer_grad_bucket(fx.r, 0, &b0, &off));
        for (int g = 0; g < fx.m.n; g++) {
            int b = -1;
            CHECK_OK(sc_reducer_grad_bucket(fx.r, g, &b, &off));
            skip[g] = whole && b == b0;
            nskip += skip[g];
        }
        CHECK(!whole || nskip >= 2, "iteration %d: gradient 0's bucket holds %d gradients, "
              "expected at least 2", it, nskip);
        for (int g = fx.m.n - 1; g >= 0; g--) {
            void *p;
            if (g == 5 || g == (fx.w.rank + 1) % fx.m.n ||
                (skip[g] && fx.w.rank == fx.w.size - 1))
                continue;
            p = view ? sc_reducer_grad_view(fx.r, g) : fx.m.buf[g];
            rt_fill(&fx.m, p, SEED, fx.w.rank, it, g);
            CHECK_OK(sc_reducer_mark_ready(fx.r, g, view ? NULL : p));
        }
        CHECK_OK(sc_reducer_finalize(fx.r));
        for (int g = 0; g < fx.m.n; g++) {
            for (int q = 0; q < fx.w.size; q++)
                used[q] = g != 5 && g != (q + 1) % fx.m.n && !(skip[g] && q == fx.w.size - 1);
            if (!view && !used[fx.w.rank])
                continue; /* copy mode: no pointer to write it to */
            if (rt_check_grad(&fx.m, view ? sc_reducer_grad_view(fx.r, g) : fx.m.buf[g], g,
                              SEED, fx.w.size, fx.w.size, &it, 1, used))
                return 1;
        }
    }
    return fixture_finish(&fx);
}

/* Every gradient 400 bytes, first bucket 800, cap 1200: buckets of 2, 3 and 3 in the
 * fill order. Rank 0 marks in one shuffled order, the others in theirs; after the
 * first iteration the layout follows rank 0's order on every rank, and the results
 * stay right with every rank still marking in its own order. */
static int test_rebuild_follows_rank_0_ready_order(int argc, char **argv)
{
    int order0[8];
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    fixture_t fx;

    (void)argc, (void)argv;
    model_uniform(&fx.m, 8, 100);
    cfg.first_bucket_bytes = 800;
    cfg.bucket_cap_bytes = 1200;
    if (fixture_start(&fx, &cfg))
        return 1;
    for (int it = 0; it < 3; it++) {
        if (copy_marks(&fx, fx.r, it))
            return 1;
        CHECK_OK(sc_reducer_finalize(fx.r));
        if (check_grads(&fx, fx.m.buf, it, fx.w.size, SC_FLOAT32))
            return 1;
        if (it == 0) {
            static const int first[3] = {0, 2, 5}; /* first fill position of each bucket */
            shuffled(order0, fx.m.n, 0, 0);
            for (int pos = 0; pos < fx.m.n; pos++) {
                int b = -1, want_b = pos < 2 ? 0 : pos < 5 ? 1 : 2;
                size_t off = 0;
                CHECK_OK(sc_reducer_grad_bucket(fx.r, order0[pos], &b, &off));
                CHECK(b == want_b && off == (size_t)(pos - first[want_b]) * 100,
                      "gradient %d (rank 0's position %d) is in bucket %d at %zu, expected "
                      "bucket %d at %d", order0[pos], pos, b, off, want_b,
                      (pos - first[want_b]) * 100);
            }
        }
    }
    return fixture_finish(&fx);
}

/* Every rank marks in reverse registration order, the order of the layout made at
 * creation: the rebuild after the first iteration finds nothing to move, so the views
 * stay where they were (no second block of bucket memory, nothing copied), and the
 * results stay right. The layout counter the hooks see is unchanged too. */
static int test_views_stay_put_when_the_ready_order_is_the_layout(int argc, char **argv)
{
    sc_reducer_config_t cfg = small_buckets();
    void *first[MODEL_N];
    fixture_t fx;

    (void)argc, (void)argv;
    model_of(&fx.m, SC_FLOAT32);
    cfg.gradient_as_bucket_view = 1;
    if (fixture_start(&fx, &cfg))
        return 1;
    for (int g = 0; g < fx.m.n; g++)
        first[g] = sc_reducer_grad_view(fx.r, g);
    for (int it = 0; it < 3; it++) {
        void *views[MODEL_N];
        for (int g = 0; g < fx.m.n; g++) {
            views[g] = sc_reducer_grad_view(fx.r, g);
            CHECK(views[g] == first[g], "iteration %d: gradient %d's view moved from %p to "
                  "%p", it, g, first[g], views[g]);
            rt_fill(&fx.m, views[g], SEED, fx.w.rank, it, g);
        }
        for (int g = fx.m.n - 1; g >= 0; g--)
            CHECK_OK(sc_reducer_mark_ready(fx.r, g, NULL));
        CHECK_OK(sc_reducer_finalize(fx.r));
        if (check_results(&fx, views, it, fx.w.size, SC_FLOAT32))
            return 1;
    }
    return fixture_finish(&fx);
}

/* Marks every view (filled by the caller) in a shuffled order, finalizes and checks the
 * results of iteration it in views. */
static int view_iteration(fixture_t *fx, void *const *views, int it)
{
    int order[MODEL_N];

    shuffled(order, fx->m.n, fx->w.rank, it);
    for (int k = 0; k < fx->m.n; k++)
        CHECK_OK(sc_reducer_mark_ready(fx->r, order[k], NULL));
    CHECK_OK(sc_reducer_finalize(fx->r));
    return check_results(fx, views, it, fx->w.size, SC_FLOAT32);
}

/* The framework takes the views before the first iteration (as p.grad) and marks in
 * an order that moves gradients, so the first finalize rebuilds the buckets: the views
 * it holds still give the results after finalize (an optimizer's step reads them; they
 * were the previous layout's freed memory: a crash in registered memory), and what it
 * writes to them before its next call (zero_grad) is in the new views it asks for then.
 * The next iteration accumulates into the new views (over the zeros) and is right. */
static int test_views_held_at_finalize_keep_the_results_until_the_next_call(int argc,
                                                                            char **argv)
{
    sc_reducer_config_t cfg = small_buckets();
    void *held[MODEL_N], *views[MODEL_N];
    float *tmp = malloc(20000 * sizeof(float));
    int moved = 0;
    fixture_t fx;

    (void)argc, (void)argv;
    CHECK(tmp, "out of memory");
    model_of(&fx.m, SC_FLOAT32);
    cfg.gradient_as_bucket_view = 1;
    if (fixture_start(&fx, &cfg))
        return 1;
    for (int g = 0; g < fx.m.n; g++) {
        held[g] = sc_reducer_grad_view(fx.r, g);
        rt_fill(&fx.m, held[g], SEED, fx.w.rank, 0, g);
    }
    if (view_iteration(&fx, held, 0))
        return 1;
    for (int g = 0; g < fx.m.n; g++)
        memset(held[g], 0, fx.m.desc[g].count * sizeof(float));
    for (int g = 0; g < fx.m.n; g++) {
        views[g] = sc_reducer_grad_view(fx.r, g);
        moved += views[g] != held[g];
        for (size_t e = 0; e < fx.m.desc[g].count; e++)
            CHECK(((float *)views[g])[e] == 0.0f, "gradient %d's new view holds %g at %zu, "
                  "not the 0 written to its old view", g, ((float *)views[g])[e], e);
    }
    CHECK(moved > 0, "no view moved: the case is not the one meant");
    /* A view held from before the rebuild, marked: refused, saying why it moved. */
    for (int g = 0; g < fx.m.n; g++) {
        if (views[g] != held[g]) {
            CHECK_STATUS(sc_reducer_mark_ready(fx.r, g, held[g]), SC_ERR_INVALID_ARG);
            CHECK_SAYS("the views moved when the buckets were rebuilt");
            break;
        }
    }
    for (int g = 0; g < fx.m.n; g++) {
        rt_fill(&fx.m, tmp, SEED, fx.w.rank, 1, g);
        for (size_t e = 0; e < fx.m.desc[g].count; e++)
            ((float *)views[g])[e] += tmp[e];
    }
    if (view_iteration(&fx, views, 1))
        return 1;
    free(tmp);
    return fixture_finish(&fx);
}

/* Three iterations without sync, then one with: the result is the sum over the four
 * iterations of every rank's gradients divided by prediv. Copy mode: the reducer
 * accumulates (and writes nothing back before the synced iteration); view mode: the
 * framework accumulates in the views. set_sync is refused inside an iteration. */
static int test_no_sync_iterations_accumulate(int argc, char **argv)
{
    int view = argc > 0 && strcmp(argv[0], "view") == 0;
    sc_reducer_config_t cfg = small_buckets();
    int its[4] = {0, 1, 2, 3};
    fixture_t fx;
    float *tmp = malloc(20000 * sizeof(float));

    model_of(&fx.m, SC_FLOAT32);
    cfg.gradient_as_bucket_view = view;
    if (fixture_start(&fx, &cfg))
        return 1;
    for (int it = 0; it < 4; it++) {
        CHECK_OK(sc_reducer_set_sync(fx.r, it == 3));
        for (int g = fx.m.n - 1; g >= 0; g--) {
            if (view) {
                float *v = sc_reducer_grad_view(fx.r, g);
                rt_fill(&fx.m, tmp, SEED, fx.w.rank, it, g);
                for (size_t e = 0; e < fx.m.desc[g].count; e++)
                    v[e] = it ? v[e] + tmp[e] : tmp[e];
            } else {
                rt_fill(&fx.m, fx.m.buf[g], SEED, fx.w.rank, it, g);
            }
            CHECK_OK(sc_reducer_mark_ready(fx.r, g, view ? NULL : fx.m.buf[g]));
            if (g == fx.m.n - 1) {
                CHECK_STATUS(sc_reducer_set_sync(fx.r, 1), SC_ERR_INVALID_ARG);
                CHECK_SAYS("between iterations");
            }
        }
        CHECK_OK(sc_reducer_finalize(fx.r));
        if (it < 3 && !view)
            for (int g = 0; g < fx.m.n; g++)
                CHECK(rt_load(SC_FLOAT32, fx.m.buf[g], 0) ==
                          rt_value(SC_FLOAT32, SEED, fx.w.rank, it, g, 0),
                      "iteration %d without sync wrote gradient %d back", it, g);
    }
    for (int g = 0; g < fx.m.n; g++)
        if (rt_check_grad(&fx.m, view ? sc_reducer_grad_view(fx.r, g) : fx.m.buf[g], g, SEED,
                          fx.w.size, fx.w.size, its, 4, NULL))
            return 1;
    free(tmp);
    return fixture_finish(&fx);
}

/* Whether rank r marked gradient g in the iteration without sync below. */
static int marked_without_sync(int r, int g)
{
    return r != 0 || g % 2 == 0;
}

static int test_synced_iteration_after_one_rank_failed_without_sync(int argc, char **argv)
{
    sc_reducer_config_t cfg = small_buckets();
    fixture_t fx;

    (void)argc, (void)argv;
    model_of(&fx.m, SC_FLOAT32);
    if (fixture_start(&fx, &cfg))
        return 1;
    for (int it = 0; it < 2; it++) {
        CHECK_OK(sc_reducer_set_sync(fx.r, it == 1));
        for (int g = fx.m.n - 1; g >= 0; g--) {
            if (it == 0 && !marked_without_sync(fx.w.rank, g))
                continue;
            rt_fill(&fx.m, fx.m.buf[g], SEED, fx.w.rank, it, g);
            CHECK_OK(sc_reducer_mark_ready(fx.r, g, fx.m.buf[g]));
        }
        if (it == 0 && fx.w.rank == 0) {
            CHECK_STATUS(sc_reducer_finalize(fx.r), SC_ERR_INVALID_ARG);
            CHECK_SAYS("never marked ready in this iteration without sync");
        } else {
            CHECK_OK(sc_reducer_finalize(fx.r));
        }
    }
    for (int g = 0; g < fx.m.n; g++) {
        double tol = rt_tolerance(SC_FLOAT32, fx.w.size, 2 * fx.w.size, 8.0);
        for (size_t e = 0; e < fx.m.desc[g].count; e++) {
            double want = 0.0, v = rt_load(SC_FLOAT32, fx.m.buf[g], e);
            for (int r = 0; r < fx.w.size; r++)
                want += (rt_value(SC_FLOAT32, SEED, r, 1, g, e) +
                         (marked_without_sync(r, g) ? rt_value(SC_FLOAT32, SEED, r, 0, g, e)
                                                    : 0.0)) /
                        fx.w.size;
            CHECK(fabs(v - want) <= tol, "gradient %d element %zu: got %.9g, expected %.9g", g,
                  e, v, want);
        }
    }
    if (rt_check_same_bits(&fx.w, &fx.m, fx.m.buf))
        return 1;
    return fixture_finish(&fx);
}

/* Bytes of fx's gradients in the current layout: all of them, and those sharing their
 * bucket with another gradient (the others are alone in theirs). */
static int layout_bytes(fixture_t *fx, size_t *all, size_t *shared)
{
    int bucket[64], per[64] = {0};
    size_t offset;

    *all = *shared = 0;
    for (int g = 0; g < fx->m.n; g++) {
        CHECK_OK(sc_reducer_grad_bucket(fx->r, g, &bucket[g], &offset));
        per[bucket[g]]++;
    }
    for (int g = 0; g < fx->m.n; g++) {
        size_t bytes = fx->m.desc[g].count * sc_dtype_size(fx->m.desc[g].dtype);
        *all += bytes;
        if (per[bucket[g]] > 1)
            *shared += bytes;
    }
    return 0;
}

static int check_copy_bytes(fixture_t *fx, size_t want, const char *what)
{
    sc_reducer_stats_t st;

    CHECK_OK(sc_reducer_stats(fx->r, &st));
    CHECK(st.copy_bytes == want, "%s: %zu bytes copied, expected %zu", what, st.copy_bytes,
          want);
    return 0;
}

/* Copy mode: a gradient alone in its bucket is reduced in its own memory, the others
 * are copied in and back (copy_bytes counts them), and the results are right, with the
 * plain all-reduce; with the float16 hook (argument fp16) the others are not copied in
 * either (the hook's start casts each from where it is) and each of their results is
 * written into its gradient once; not with a caller's hook (argument doubling: every
 * gradient is copied), nor in an iteration that adds to what iterations without sync
 * accumulated (everything is copied in, and back after the synced one). */
static int test_gradients_alone_in_their_bucket_are_reduced_in_place(int argc, char **argv)
{
    int fp16 = argc > 0 && strcmp(argv[0], "fp16") == 0;
    int doubling = argc > 0 && strcmp(argv[0], "doubling") == 0, destroyed = 0;
    sc_reducer_config_t cfg = small_buckets();
    sc_dtype_t tol = fp16 ? SC_FLOAT16 : SC_FLOAT32;
    doubling_t state;
    sc_comm_hook_t hook = doubling_hook(&state, &destroyed);
    double prediv;
    size_t all, shared;
    int its[2] = {2, 3};
    fixture_t fx;

    model_of(&fx.m, SC_FLOAT32);
    if (fp16)
        CHECK_OK(sc_comm_hook_builtin(SC_HOOK_FP16, &hook));
    if (fp16 || doubling)
        cfg.hook = &hook;
    if (fixture_start(&fx, &cfg))
        return 1;
    prediv = doubling ? fx.w.size / 2.0 : fx.w.size;
    for (int it = 0; it < 2; it++) {
        if (layout_bytes(&fx, &all, &shared))
            return 1;
        CHECK(shared < all, "iteration %d: no gradient is alone in its bucket", it);
        if (copy_iteration(&fx, fx.r, it, prediv, tol) ||
            check_copy_bytes(&fx, fp16 ? shared : 2 * (doubling ? all : shared),
                             "synced iteration"))
            return 1;
    }
    CHECK_OK(sc_reducer_set_sync(fx.r, 0));
    if (copy_marks(&fx, fx.r, 2))
        return 1;
    CHECK_OK(sc_reducer_finalize(fx.r));
    if (check_copy_bytes(&fx, all, "iteration without sync"))
        return 1;
    CHECK_OK(sc_reducer_set_sync(fx.r, 1));
    if (copy_marks(&fx, fx.r, 3))
        return 1;
    CHECK_OK(sc_reducer_finalize(fx.r));
    if (check_copy_bytes(&fx, 2 * all, "synced iteration after one without sync"))
        return 1;
    for (int g = 0; g < fx.m.n; g++)
        if (rt_check_grad_as(&fx.m, fx.m.buf[g], g, SEED, fx.w.size, prediv, its, 2, NULL, tol))
            return 1;
    return fixture_finish(&fx);
}

static int test_hook_casts_to_narrow_type(int argc, char **argv)
{
    int bf16 = argc > 0 && strcmp(argv[0], "bf16") == 0;
    sc_reducer_config_t cfg = small_buckets();
    sc_comm_hook_t hook;
    fixture_t fx;

    model_of(&fx.m, SC_FLOAT32);
    CHECK_OK(sc_comm_hook_builtin(bf16 ? SC_HOOK_BF16 : SC_HOOK_FP16, &hook));
    cfg.hook = &hook;
    if (fixture_start(&fx, &cfg) ||
        copy_iterations(&fx, 0, 2, fx.w.size, bf16 ? SC_BFLOAT16 : SC_FLOAT16))
        return 1;
    return fixture_finish(&fx);
}

/* With "into" the hook has finish_into, which the reducer calls instead of finish
 * (copy mode), with the ranges of the marked gradients, and copies nothing back:
 * copy_bytes is the copy in plus the ranges, once each. */
static int test_custom_hook_reduces_every_bucket(int argc, char **argv)
{
    sc_reducer_config_t cfg = small_buckets();
    int destroyed = 0, into = argc > 0 && strcmp(argv[0], "into") == 0;
    doubling_t state;
    sc_comm_hook_t hook = into ? doubling_into_hook(&state, &destroyed)
                               : doubling_hook(&state, &destroyed);
    sc_reducer_stats_t st;
    size_t all, shared;
    fixture_t fx;
    int expected_calls = 0;

    model_of(&fx.m, SC_FLOAT32);
    cfg.hook = &hook;
    if (fixture_start(&fx, &cfg))
        return 1;
    for (int it = 0; it < 2; it++) {
        CHECK_OK(sc_reducer_stats(fx.r, &st));
        expected_calls += st.buckets;
        if (copy_marks(&fx, fx.r, it))
            return 1;
        CHECK_OK(sc_reducer_finalize(fx.r));
        CHECK(state.starts == expected_calls &&
                  (into ? state.finishes_into : state.finishes) == expected_calls &&
                  (into ? state.finishes : state.finishes_into) == 0 && !state.bad_ranges,
              "%d starts, %d finishes, %d finishes into the gradients (%d with bad ranges) "
              "after iteration %d, expected %d starts and as many %s", state.starts,
              state.finishes, state.finishes_into, state.bad_ranges, it, expected_calls,
              into ? "finishes into" : "finishes");
        /* A caller's hook: nothing is reduced in place, everything is copied in and
         * back (or written into the gradients by finish_into). */
        if (layout_bytes(&fx, &all, &shared) || check_copy_bytes(&fx, 2 * all, "iteration"))
            return 1;
        if (check_grads(&fx, fx.m.buf, it, fx.w.size / 2.0, SC_FLOAT32))
            return 1;
    }
    CHECK_OK(sc_reducer_destroy(fx.r));
    CHECK(destroyed, "the reducer did not destroy its hook");
    return fixture_leave(&fx);
}

/* A hook that leaves work behind: start starts a thread that reads the bucket 50 ms
 * later, then fails; destroy joins the threads. */
#define LINGER_MAX 64

typedef struct {
    pthread_t threads[LINGER_MAX];
    const float *data[LINGER_MAX];
    size_t count[LINGER_MAX];
    double sums[LINGER_MAX];
    int done[LINGER_MAX];
    int n;
} linger_t;

typedef struct {
    linger_t *l;
    int i;
} linger_job_t;

static void *linger_read(void *arg)
{
    linger_t *l = ((linger_job_t *)arg)->l;
    int i = ((linger_job_t *)arg)->i;
    struct timespec ts = {0, 50 * 1000 * 1000};
    double s = 0.0;

    free(arg);
    nanosleep(&ts, NULL);
    for (size_t e = 0; e < l->count[i]; e++)
        s += l->data[i][e];
    l->sums[i] = s;
    l->done[i] = 1;
    return NULL;
}

static sc_status_t linger_start(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm,
                                sc_request_t **req)
{
    linger_t *l = state;
    linger_job_t *job = malloc(sizeof(*job));

    if (l->n == LINGER_MAX || !job) {
        free(job);
        return SC_ERR_NO_MEMORY;
    }
    *job = (linger_job_t){l, l->n};
    l->data[l->n] = b->data;
    l->count[l->n] = b->count;
    if (pthread_create(&l->threads[l->n], NULL, linger_read, job) != 0) {
        free(job);
        return SC_ERR_SYSTEM;
    }
    l->n++;
    (void)comm, (void)req;
    return SC_ERR_INTERNAL;
}

static void linger_destroy(void *state)
{
    linger_t *l = state;

    for (int i = 0; i < l->n; i++)
        pthread_join(l->threads[i], NULL);
}

static int test_hook_work_outliving_a_failed_iteration_ends_before_the_buckets_are_freed(
    int argc, char **argv)
{
    linger_t l = {.n = 0};
    sc_comm_hook_t hook = {.name = "linger", .state = &l, .start = linger_start,
                           .destroy = linger_destroy};
    fixture_t fx;

    (void)argc, (void)argv;
    if (fixture_start_hooked(&fx, &hook))
        return 1;
    for (int g = fx.m.n - 1; g >= 0; g--) {
        rt_fill(&fx.m, fx.m.buf[g], SEED, fx.w.rank, 0, g);
        sc_reducer_mark_ready(fx.r, g, fx.m.buf[g]); /* the call that starts a bucket fails */
    }
    CHECK_REFUSED(sc_reducer_finalize(fx.r), SC_ERR_INTERNAL, "\"linger\"");
    CHECK(l.n >= 1, "no bucket started");
    /* The reader still sleeps: destroy must let it finish before freeing what it
     * reads. */
    sc_reducer_destroy(fx.r);
    for (int i = 0; i < l.n; i++)
        CHECK(l.done[i], "bucket %d's reader had not finished when destroy returned", i);
    return fixture_leave(&fx);
}

/* A stateful hook for checkpoints: counts the buckets it started; saves the count. */
static sc_status_t counting_start(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm,
                                  sc_request_t **req)
{
    ++*(int *)state;
    return sc_allreduce(b->data, b->data, b->count, b->dtype, SC_SUM, comm, NULL, req);
}

static sc_status_t counting_save(void *state, void *buf, size_t *len)
{
    if (buf && *len < sizeof(int))
        return SC_ERR_INVALID_ARG;
    if (buf)
        memcpy(buf, state, sizeof(int));
    *len = sizeof(int);
    return SC_SUCCESS;
}

static sc_status_t counting_load(void *state, const void *buf, size_t len)
{
    if (len != sizeof(int))
        return SC_ERR_INVALID_ARG;
    memcpy(state, buf, sizeof(int));
    return SC_SUCCESS;
}

static sc_comm_hook_t counting_hook(int *state)
{
    sc_comm_hook_t hook = {.name = "counting", .state = state, .start = counting_start,
                           .save = counting_save, .load = counting_load};
    return hook;
}

static int test_hook_state_survives_a_checkpoint(int argc, char **argv)
{
    sc_reducer_config_t cfg = small_buckets();
    int saved_starts = 0, loaded_starts = -1;
    sc_comm_hook_t hook = counting_hook(&saved_starts), hook2 = counting_hook(&loaded_starts);
    sc_reducer_t *r2, *plain;
    unsigned char buf[256];
    size_t len = 0, small;
    fixture_t fx;

    (void)argc, (void)argv;
    model_of(&fx.m, SC_FLOAT32);
    cfg.hook = &hook;
    if (fixture_start(&fx, &cfg) || copy_iterations(&fx, 0, 2, fx.w.size, SC_FLOAT32))
        return 1;
    CHECK(saved_starts > 0, "the hook started no bucket");
    CHECK_OK(sc_reducer_hook_save(fx.r, NULL, &len));
    CHECK(len > sizeof(int) && len <= sizeof(buf), "hook state of %zu bytes", len);
    small = len - 1;
    CHECK(sc_reducer_hook_save(fx.r, buf, &small) == SC_ERR_INVALID_ARG,
          "a buffer one byte short was accepted");
    CHECK(strstr(sc_last_error(), "needs") != NULL, "sentence: %s", sc_last_error());
    CHECK_OK(sc_reducer_hook_save(fx.r, buf, &len));

    cfg.hook = &hook2;
    CHECK_OK(sc_reducer_create(fx.w.comm, fx.m.desc, fx.m.n, &cfg, &r2));
    CHECK(sc_reducer_hook_load(r2, buf, len - 1) == SC_ERR_INVALID_ARG,
          "a truncated record was loaded");
    CHECK(loaded_starts == -1, "a refused load changed the state to %d", loaded_starts);
    buf[12] ^= 1; /* the header's reserved word */
    CHECK(sc_reducer_hook_load(r2, buf, len) == SC_ERR_INVALID_ARG,
          "a record with its reserved word set was loaded");
    CHECK(strstr(sc_last_error(), "reserved 1") != NULL, "sentence: %s", sc_last_error());
    buf[12] ^= 1;
    CHECK(loaded_starts == -1, "a refused load changed the state to %d", loaded_starts);
    CHECK_OK(sc_reducer_hook_load(r2, buf, len));
    CHECK(loaded_starts == saved_starts, "loaded %d starts, saved %d", loaded_starts,
          saved_starts);
    if (copy_iteration(&fx, r2, 2, fx.w.size, SC_FLOAT32))
        return 1;
    CHECK(loaded_starts > saved_starts, "the loaded hook did not go on counting");

    cfg.hook = NULL;
    CHECK_OK(sc_reducer_create(fx.w.comm, fx.m.desc, fx.m.n, &cfg, &plain));
    CHECK(sc_reducer_hook_load(plain, buf, len) == SC_ERR_INVALID_ARG,
          "the state of hook \"counting\" was loaded into an allreduce-hook reducer");
    CHECK(strstr(sc_last_error(), "\"counting\"") && strstr(sc_last_error(), "\"allreduce\""),
          "sentence: %s", sc_last_error());
    /* A stateless hook's record is its name alone: it loads back; one that carries
     * bytes of state does not. */
    len = sizeof(buf);
    CHECK_OK(sc_reducer_hook_save(plain, buf, &len));
    CHECK_OK(sc_reducer_hook_load(plain, buf, len));
    {
        uint64_t payload = 3;
        memcpy(buf + 16, &payload, sizeof(payload)); /* the header's payload length */
        CHECK(sc_reducer_hook_load(plain, buf, len + 3) == SC_ERR_INVALID_ARG,
              "3 bytes of state were loaded into a hook that keeps none");
        CHECK(strstr(sc_last_error(), "keeps no state") && strstr(sc_last_error(), "3 bytes"),
              "sentence: %s", sc_last_error());
    }
    /* Between iterations only: with a gradient marked, both are refused. */
    CHECK_OK(sc_reducer_mark_ready(plain, 0, fx.m.buf[0]));
    CHECK(sc_reducer_hook_save(plain, NULL, &len) == SC_ERR_INVALID_ARG &&
              strstr(sc_last_error(), "1 gradients are marked"),
          "a save in an iteration: %s", sc_last_error());
    CHECK(sc_reducer_hook_load(plain, buf, len) == SC_ERR_INVALID_ARG &&
              strstr(sc_last_error(), "1 gradients are marked"),
          "a load in an iteration: %s", sc_last_error());
    for (int g = 1; g < fx.m.n; g++)
        CHECK_OK(sc_reducer_mark_ready(plain, g, fx.m.buf[g]));
    CHECK_OK(sc_reducer_finalize(plain));
    CHECK_OK(sc_reducer_destroy(plain));
    CHECK_OK(sc_reducer_destroy(r2));
    return fixture_finish(&fx);
}

/* 6 MiB of float32 in 48 gradients, a reducer with autotune on. */
static int autotune_start(fixture_t *fx)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;

    model_uniform(&fx->m, 48, 32768);
    cfg.autotune = 1;
    return fixture_start(fx, &cfg);
}

/* 6 MiB of float32 in 48 gradients: caps 1, 5 and 6 MiB (25 and 100 clipped to the
 * model), twice round, 3 iterations a turn, after the rebuild's: the choice comes after
 * iteration 19, is one of them, is the same on every rank; results are right
 * throughout. */
static int test_autotune_converges_and_ranks_agree(int argc, char **argv)
{
    sc_reducer_stats_t st;
    fixture_t fx;
    int it;

    (void)argc, (void)argv;
    if (autotune_start(&fx))
        return 1;
    for (it = 0; it < 19; it++) {
        CHECK_OK(sc_reducer_stats(fx.r, &st));
        CHECK(!st.autotune_done, "autotune done before iteration %d", it);
        if (copy_iteration(&fx, fx.r, it, fx.w.size, SC_FLOAT32))
            return 1;
    }
    CHECK_OK(sc_reducer_stats(fx.r, &st));
    CHECK(st.autotune_done, "autotune not done after 19 iterations");
    CHECK(st.bucket_cap_bytes == (1u << 20) || st.bucket_cap_bytes == (5u << 20) ||
              st.bucket_cap_bytes == (6u << 20),
          "autotune chose %zu bytes, not a candidate", st.bucket_cap_bytes);
    if (rt_check_same_int(&fx.w, (long)st.bucket_cap_bytes, "the chosen cap") ||
        rt_check_same_int(&fx.w, st.buckets, "the bucket count") ||
        copy_iterations(&fx, it, 21, fx.w.size, SC_FLOAT32))
        return 1;
    return fixture_finish(&fx);
}

static int test_SC_BUCKET_CAP_MB_turns_autotune_off(int argc, char **argv)
{
    sc_reducer_stats_t st;
    fixture_t fx;

    (void)argc, (void)argv;
    if (autotune_start(&fx) || copy_iterations(&fx, 0, 11, fx.w.size, SC_FLOAT32))
        return 1;
    CHECK_OK(sc_reducer_stats(fx.r, &st));
    CHECK(!st.autotune_done && st.bucket_cap_bytes == (2u << 20),
          "autotune_done %d, cap %zu bytes: expected 0 and 2 MiB (SC_BUCKET_CAP_MB=%s)",
          st.autotune_done, st.bucket_cap_bytes, getenv("SC_BUCKET_CAP_MB"));
    return fixture_finish(&fx);
}

/* Threads marking the gradients concurrently, once go opens, in reverse order: thread t
 * those with index % stride == t, pause_ns apart. */
typedef struct {
    sc_reducer_t *r;
    rt_model_t *m;
    pthread_barrier_t *go;
    int t, failed;
    int stride;
    long pause_ns;
    int done; /* every mark returned (atomic) */
} marker_t;

static void *marker(void *arg)
{
    marker_t *mk = arg;
    pthread_barrier_wait(mk->go);
    for (int g = mk->m->n - 1 - mk->t; g >= 0; g -= mk->stride) {
        if (mk->pause_ns)
            nanosleep(&(struct timespec){0, mk->pause_ns}, NULL);
        if (sc_reducer_mark_ready(mk->r, g, mk->m->buf[g]) != SC_SUCCESS) {
            fprintf(stderr, "rank %d thread %d: %s\n", rt_rank, mk->t, sc_last_error());
            mk->failed = 1;
        }
    }
    __atomic_store_n(&mk->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static int test_mark_ready_from_several_threads(int argc, char **argv)
{
    sc_reducer_config_t cfg = small_buckets();
    size_t counts[40];
    pthread_barrier_t go;
    pthread_t th[4];
    marker_t mk[4];
    fixture_t fx;

    (void)argc, (void)argv;
    for (int i = 0; i < 40; i++)
        counts[i] = 100 + 37 * (size_t)i;
    rt_model_init(&fx.m, 40, counts, NULL);
    if (fixture_start(&fx, &cfg))
        return 1;
    for (int it = 0; it < 4; it++) {
        for (int g = 0; g < fx.m.n; g++)
            rt_fill(&fx.m, fx.m.buf[g], SEED, fx.w.rank, it, g);
        pthread_barrier_init(&go, NULL, 4);
        for (int t = 0; t < 4; t++) {
            mk[t] = (marker_t){fx.r, &fx.m, &go, t, 0, 4, 0, 0};
            CHECK(pthread_create(&th[t], NULL, marker, &mk[t]) == 0, "pthread_create");
        }
        for (int t = 0; t < 4; t++) {
            pthread_join(th[t], NULL);
            CHECK(!mk[t].failed, "thread %d failed to mark", t);
        }
        pthread_barrier_destroy(&go);
        CHECK_OK(sc_reducer_finalize(fx.r));
        if (check_results(&fx, fx.m.buf, it, fx.w.size, SC_FLOAT32))
            return 1;
    }
    return fixture_finish(&fx);
}

/* A hook whose save and load take 1 ms each and count those during which a bucket
 * started: the reducer's test of the marks and the hook's work are one step to a
 * mark_ready on another thread. The counters are relaxed atomics, so that they order
 * nothing for ThreadSanitizer. */
typedef struct {
    int starts;   /* buckets started (the marking thread) */
    int overlaps; /* saves or loads during which one started (the saving thread) */
} slow_state_t;

static sc_status_t slow_state_start(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm,
                                    sc_request_t **req)
{
    __atomic_add_fetch(&((slow_state_t *)state)->starts, 1, __ATOMIC_RELAXED);
    return sc_allreduce(b->data, b->data, b->count, b->dtype, SC_SUM, comm, NULL, req);
}

static void slow_state_work(slow_state_t *s)
{
    int before = __atomic_load_n(&s->starts, __ATOMIC_RELAXED);
    double until = rt_now() + 1e-3;

    while (rt_now() < until)
        ;
    if (__atomic_load_n(&s->starts, __ATOMIC_RELAXED) != before)
        s->overlaps++;
}

static sc_status_t slow_state_save(void *state, void *buf, size_t *len)
{
    (void)buf;
    slow_state_work(state);
    *len = 0;
    return SC_SUCCESS;
}

static sc_status_t slow_state_load(void *state, const void *buf, size_t len)
{
    (void)buf, (void)len;
    slow_state_work(state);
    return SC_SUCCESS;
}

/* A save or a load beside a mark_ready on another thread: each either comes before
 * the mark, whole (no bucket starts during the hook's save or load), or after it,
 * refused. sc_reducer_hook_save and _load read the count of marks without the
 * reducer's lock and ran the hook's save or load after it: ThreadSanitizer reported
 * the read racing with mark_ready's count, and a bucket started during the hook's work
 * (the top-k hook's save then undid and saved keys while a start planned one). 20
 * iterations, the saving thread alternating saves and loads (of a record saved between
 * iterations) from when the marking thread starts until it is done. */
static int test_hook_save_and_load_beside_a_marking_thread(int argc, char **argv)
{
    slow_state_t slow = {0, 0};
    sc_comm_hook_t hook = {.name = "slow", .state = &slow, .start = slow_state_start,
                           .save = slow_state_save, .load = slow_state_load};
    unsigned char record[64];
    size_t len = sizeof(record);
    int calls = 0, refused = 0;
    fixture_t fx;

    (void)argc, (void)argv;
    if (fixture_start_hooked(&fx, &hook))
        return 1;
    CHECK_OK(sc_reducer_hook_save(fx.r, record, &len));
    for (int it = 0; it < 20; it++) {
        pthread_barrier_t go;
        /* One thread, marks 50 us apart: marks fall inside saves and loads, and saves
         * and loads between marks. */
        marker_t mk = {fx.r, &fx.m, &go, 0, 0, 1, 50000, 0};
        pthread_t th;

        for (int g = 0; g < fx.m.n; g++)
            rt_fill(&fx.m, fx.m.buf[g], SEED, fx.w.rank, it, g);
        pthread_barrier_init(&go, NULL, 2);
        CHECK(pthread_create(&th, NULL, marker, &mk) == 0, "pthread_create");
        pthread_barrier_wait(&go);
        while (!__atomic_load_n(&mk.done, __ATOMIC_ACQUIRE)) {
            size_t n = 0;
            sc_status_t st = calls % 2 ? sc_reducer_hook_load(fx.r, record, len)
                                       : sc_reducer_hook_save(fx.r, NULL, &n);
            CHECK(st == SC_SUCCESS ||
                      (st == SC_ERR_INVALID_ARG && strstr(sc_last_error(), "are marked")),
                  "the %s beside the marks returned %s: %s", calls % 2 ? "load" : "save",
                  sc_status_string(st), sc_last_error());
            calls++;
            refused += st != SC_SUCCESS;
            /* The marking thread takes the reducer's lock between them. */
            nanosleep(&(struct timespec){0, 50000}, NULL);
        }
        pthread_join(th, NULL);
        pthread_barrier_destroy(&go);
        CHECK(!mk.failed, "the marking thread's mark_ready failed");
        CHECK_OK(sc_reducer_finalize(fx.r));
        if (check_results(&fx, fx.m.buf, it, fx.w.size, SC_FLOAT32))
            return 1;
    }
    CHECK(slow.overlaps == 0, "a bucket started during %d of the %d saves and loads made "
          "beside the marks (%d refused)", slow.overlaps, calls, refused);
    return fixture_finish(&fx);
}

/* A hook whose first start has another thread save the reducer's hook state, and waits
 * for that save: a save made while sc_reducer_finalize starts the buckets. Its save
 * counts the saves that ran during a start. */
typedef struct {
    sc_reducer_t *r;
    int in_start;        /* a start waits for the save on the other thread */
    int saved_in_start;  /* the hook's saves that ran meanwhile */
    int tried;           /* the other thread's save was made */
    sc_status_t st;      /* what it returned */
    char why[512];
} start_save_t;

static void *start_save_thread(void *arg)
{
    start_save_t *s = arg;
    size_t n = 0;

    s->st = sc_reducer_hook_save(s->r, NULL, &n);
    snprintf(s->why, sizeof(s->why), "%s", s->st == SC_SUCCESS ? "" : sc_last_error());
    return NULL;
}

static sc_status_t start_save_start(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm,
                                    sc_request_t **req)
{
    start_save_t *s = state;
    pthread_t th;

    if (!s->tried) {
        s->tried = 1;
        s->in_start = 1;
        if (pthread_create(&th, NULL, start_save_thread, s) != 0)
            return SC_ERR_SYSTEM;
        pthread_join(th, NULL);
        s->in_start = 0;
    }
    return sc_allreduce(b->data, b->data, b->count, b->dtype, SC_SUM, comm, NULL, req);
}

static sc_status_t start_save_save(void *state, void *buf, size_t *len)
{
    start_save_t *s = state;

    (void)buf;
    s->saved_in_start += s->in_start;
    *len = 0;
    return SC_SUCCESS;
}

/* A save on another thread while sc_reducer_finalize starts the buckets of an iteration
 * that marked no gradient (find_unused: each counts as zero): refused, as a save with a
 * gradient marked is, where the test of the marks alone let it through and the hook's
 * save ran during the hook's start (the top-k hook's save undid the step that start
 * had just begun). */
static int test_hook_save_beside_finalize_starting_the_buckets(int argc, char **argv)
{
    start_save_t s = {0};
    sc_comm_hook_t hook = {.name = "start_save", .state = &s, .start = start_save_start,
                           .save = start_save_save};
    sc_reducer_config_t cfg = small_buckets();
    fixture_t fx;

    (void)argc, (void)argv;
    model_of(&fx.m, SC_FLOAT32);
    cfg.hook = &hook;
    cfg.find_unused = 1;
    if (fixture_start(&fx, &cfg))
        return 1;
    s.r = fx.r;
    CHECK_OK(sc_reducer_finalize(fx.r));
    CHECK(s.tried, "no bucket started in finalize");
    CHECK(s.saved_in_start == 0 && s.st == SC_ERR_INVALID_ARG,
          "the save made while finalize started a bucket returned %s (the hook's save ran "
          "%d times during the start) %s", sc_status_string(s.st), s.saved_in_start, s.why);
    CHECK(strstr(s.why, "between iterations"), "the refusal says %s", s.why);
    return fixture_finish(&fx);
}

/* A hook that all-reduces each bucket and, in finish, checks the caller's gradients:
 * those of earlier buckets already hold their results (copied back), those of this
 * bucket and later ones still this rank's own values (nothing written before its
 * reduction is over). Counts the finishes of each bucket and expects bucket order. */
typedef struct {
    sc_reducer_t *r;
    const rt_model_t *m;
    void **own;       /* this rank's values of the iteration, per gradient */
    int it, size;
    int next;         /* the bucket expected to finish next */
    int finishes[64]; /* per bucket, in this iteration */
    int finished;     /* atomic: finishes in this iteration */
    int bad;          /* finishes that saw something wrong */
} watching_t;

static sc_status_t watching_start(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm,
                                  sc_request_t **req)
{
    (void)state;
    return sc_allreduce(b->data, b->data, b->count, b->dtype, SC_SUM, comm, NULL, req);
}

/* 1 when the caller's gradients are not as expected when bucket b finishes. */
static int watching_check(watching_t *s, int b)
{
    const rt_model_t *m = s->m;

    CHECK(b == s->next, "bucket %d finished when bucket %d was next", b, s->next);
    for (int g = 0; g < m->n; g++) {
        size_t offset, bytes = m->desc[g].count * rt_size(m->desc[g].dtype);
        int gb;

        CHECK_OK(sc_reducer_grad_bucket(s->r, g, &gb, &offset));
        if (gb < b && rt_check_grad(m, m->buf[g], g, SEED, s->size, s->size, &s->it, 1, NULL))
            return 1;
        CHECK(gb < b || memcmp(m->buf[g], s->own[g], bytes) == 0, "gradient %d of bucket %d "
              "was written before bucket %d finished", g, gb, b);
    }
    return 0;
}

static sc_status_t watching_finish(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm)
{
    watching_t *s = state;

    (void)comm;
    s->bad += watching_check(s, b->index);
    s->finishes[b->index]++;
    s->next = b->index + 1;
    __atomic_add_fetch(&s->finished, 1, __ATOMIC_RELEASE);
    return SC_SUCCESS;
}

/* Copy mode, host buckets: every bucket is finished once, in bucket order, after its
 * reduction and before the next bucket's finish its gradients hold their results; all
 * of this happens without finalize (the finisher thread does it while the caller
 * waits), and finalize leaves the results equal to the reference on every rank, over
 * 3 iterations (before and after the rebuild). */
static int test_copy_back_follows_each_reduction_before_finalize(int argc, char **argv)
{
    sc_reducer_config_t cfg = small_buckets();
    watching_t s = {0};
    sc_comm_hook_t hook = {.name = "watching", .state = &s, .start = watching_start,
                           .finish = watching_finish};
    sc_reducer_stats_t st;
    fixture_t fx;

    (void)argc, (void)argv;
    model_of(&fx.m, SC_FLOAT32);
    s.m = &fx.m;
    s.own = calloc(MODEL_N, sizeof(*s.own));
    for (int g = 0; g < fx.m.n; g++)
        s.own[g] = malloc(fx.m.desc[g].count * sizeof(float));
    cfg.hook = &hook;
    if (fixture_start(&fx, &cfg))
        return 1;
    s.r = fx.r;
    s.size = fx.w.size;
    for (int it = 0; it < 3; it++) {
        double t0;
        int done;

        CHECK_OK(sc_reducer_stats(fx.r, &st));
        CHECK(st.buckets <= 64, "%d buckets", st.buckets);
        memset(s.finishes, 0, sizeof(s.finishes));
        s.it = it;
        s.next = 0;
        __atomic_store_n(&s.finished, 0, __ATOMIC_RELAXED);
        for (int g = 0; g < fx.m.n; g++)
            rt_fill(&fx.m, s.own[g], SEED, fx.w.rank, it, g);
        if (copy_marks(&fx, fx.r, it))
            return 1;
        t0 = rt_now();
        while ((done = __atomic_load_n(&s.finished, __ATOMIC_ACQUIRE)) < st.buckets &&
               rt_now() - t0 < 10.0)
            sched_yield();
        CHECK(done == st.buckets, "iteration %d: %d of %d buckets finished without finalize",
              it, done, st.buckets);
        CHECK_OK(sc_reducer_finalize(fx.r));
        CHECK(s.bad == 0, "iteration %d: %d finishes saw wrong gradients", it, s.bad);
        for (int b = 0; b < st.buckets; b++)
            CHECK(s.finishes[b] == 1, "iteration %d: bucket %d finished %d times", it, b,
                  s.finishes[b]);
        if (check_results(&fx, fx.m.buf, it, fx.w.size, SC_FLOAT32))
            return 1;
    }
    for (int g = 0; g < fx.m.n; g++)
        free(s.own[g]);
    free(s.own);
    return fixture_finish(&fx);
}

/* A reducer of no gradient finalizes; gradients of zero elements (marked with NULL),
 * in a bucket of nothing ({4, 3} with a 16-byte first bucket) or next to others
 * ({2, 1, 0}), leave the rest right. */
static int test_zero_gradients_and_zero_element_gradients(int argc, char **argv)
{
    static const size_t counts[] = {300, 0, 10, 0, 0};
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_reducer_stats_t st;
    fixture_t fx;

    (void)argc, (void)argv;
    if (rt_world(&fx.w))
        return 1;
    CHECK_OK(sc_reducer_create(fx.w.comm, NULL, 0, NULL, &fx.r));
    for (int it = 0; it < 2; it++)
        CHECK_OK(sc_reducer_finalize(fx.r));
    CHECK_OK(sc_reducer_stats(fx.r, &st));
    CHECK(st.buckets == 0, "%d buckets for no gradient", st.buckets);
    CHECK_OK(sc_reducer_destroy(fx.r));

    rt_model_init(&fx.m, 5, counts, NULL);
    cfg.first_bucket_bytes = 16;
    CHECK_OK(sc_reducer_create(fx.w.comm, fx.m.desc, fx.m.n, &cfg, &fx.r));
    for (int it = 0; it < 3; it++) {
        for (int g = fx.m.n - 1; g >= 0; g--) {
            rt_fill(&fx.m, fx.m.buf[g], SEED, fx.w.rank, it, g);
            CHECK_OK(sc_reducer_mark_ready(fx.r, g, fx.m.desc[g].count ? fx.m.buf[g] : NULL));
        }
        CHECK_OK(sc_reducer_finalize(fx.r));
        if (check_grads(&fx, fx.m.buf, it, fx.w.size, SC_FLOAT32))
            return 1;
    }
    return fixture_finish(&fx);
}

int main(int argc, char **argv)
{
    static const rt_test_t tests[] = {
        {"average_matches_reference", test_average_matches_reference},
        {"integer_gradients_are_summed", test_integer_gradients_are_summed},
        {"gradient_as_bucket_view_leaves_results_in_views",
         test_gradient_as_bucket_view_leaves_results_in_views},
        {"find_unused_gradients_count_as_zero", test_find_unused_gradients_count_as_zero},
        {"rebuild_follows_rank_0_ready_order", test_rebuild_follows_rank_0_ready_order},
        {"views_stay_put_when_the_ready_order_is_the_layout",
         test_views_stay_put_when_the_ready_order_is_the_layout},
        {"views_held_at_finalize_keep_the_results_until_the_next_call",
         test_views_held_at_finalize_keep_the_results_until_the_next_call},
        {"no_sync_iterations_accumulate", test_no_sync_iterations_accumulate},
        {"synced_iteration_after_one_rank_failed_without_sync",
         test_synced_iteration_after_one_rank_failed_without_sync},
        {"gradients_alone_in_their_bucket_are_reduced_in_place",
         test_gradients_alone_in_their_bucket_are_reduced_in_place},
        {"hook_casts_to_narrow_type", test_hook_casts_to_narrow_type},
        {"custom_hook_reduces_every_bucket", test_custom_hook_reduces_every_bucket},
        {"hook_work_outliving_a_failed_iteration_ends_before_the_buckets_are_freed",
         test_hook_work_outliving_a_failed_iteration_ends_before_the_buckets_are_freed},
        {"hook_state_survives_a_checkpoint", test_hook_state_survives_a_checkpoint},
        {"hook_save_and_load_beside_a_marking_thread",
         test_hook_save_and_load_beside_a_marking_thread},
        {"hook_save_beside_finalize_starting_the_buckets",
         test_hook_save_beside_finalize_starting_the_buckets},
        {"autotune_converges_and_ranks_agree", test_autotune_converges_and_ranks_agree},
        {"SC_BUCKET_CAP_MB_turns_autotune_off", test_SC_BUCKET_CAP_MB_turns_autotune_off},
        {"mark_ready_from_several_threads", test_mark_ready_from_several_threads},
        {"zero_gradients_and_zero_element_gradients",
         test_zero_gradients_and_zero_element_gradients},
        {"copy_back_follows_each_reduction_before_finalize",
         test_copy_back_follows_each_reduction_before_finalize},
        {NULL, NULL}};
    return rt_main(tests, argc, argv);
}
