/* Bad input to the reducer, one case per test (argv[1]): each is an error with a
 * sentence saying what is wrong on every rank concerned, never a hang; where the
 * reducer lives on, the next iteration is right.
 *   index_out_of_range_is_refused
 *   marking_a_gradient_twice_is_refused
 *   device_pointer_is_refused            (a stand-in CUDA driver reports the memory)
 *   null_or_foreign_gradient_pointer_is_refused
 *   stream_on_one_rank_fails_create_on_every_rank
 *   missing_gradients_fail_finalize_on_every_rank RANK   (RANK skips one gradient)
 *   missing_gradients_without_sync_fail_locally
 *   different_registration_fails_create_on_every_rank WHAT  (count|dtype|name|number)
 *   different_config_fails_create_on_every_rank
 *   config_out_of_range_is_refused       (config.size, switches; set_sync's too)
 *   integer_gradients_need_prediv_1
 *   narrow_hook_refuses_non_float32_buckets
 *   failing_hook_start_fails_every_rank   (a caller's hook fails on the last rank)
 *   failing_hook_finish_fails_every_rank  (the same for its finish)
 *   bucket_refused_after_a_peers_abort_passes_its_reason_on   (the peers of a rank whose
 *                                    hook failed start the buckets after the abort came)
 *   failing_hook_validate_fails_every_rank, failing_hook_save_and_load_say_why,
 *   hook_saving_past_its_room_is_refused
 *   hook_given_to_two_reducers_is_refused
 *   hook_failing_with_a_status_that_is_no_error_fails_as_one WHERE
 *                                    (validate|start|finish|save_load: the last rank's
 *                                    hook returns SC_IN_PROGRESS or 42 there)
 *   destroy_mid_iteration_fails_peers_at_once
 *   destroy_mid_iteration_with_a_finishing_hook_fails_peers_at_once   (the bucket the
 *                                    finisher thread waits for is one no peer started)
 *   destroy_mid_iteration_on_split_leaves_world_working   (its abort leaves the world's
 *                                    connections: 1 MiB allreduces on the world after it)
 *   destroy_after_a_transfer_left_in_flight plain|registered  the buckets kept or given
 *                                    back */
#include <sys/wait.h>
#include <unistd.h>

#include "../common/sc_fake_device.h"
#include "collectives/transport_ucx.h"
#include "core/comm_internal.h"
#include "reducer_test.h"

#define SEED 0xbad0ull

static const size_t model_counts[] = {100, 2000, 7, 300, 50, 4000, 1, 600};
#define MODEL_N 8

/* The model in m and a reducer of it on w's communicator: create's status. hook NULL:
 * the default one. */
static sc_status_t create_hooked(rt_world_t *w, rt_model_t *m, sc_reducer_t **r, int view,
                                 const sc_comm_hook_t *hook)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;

    rt_model_init(m, MODEL_N, model_counts, NULL);
    cfg.first_bucket_bytes = 1024;
    cfg.bucket_cap_bytes = 8192;
    cfg.gradient_as_bucket_view = view;
    cfg.hook = hook;
    return sc_reducer_create(w->comm, m->desc, m->n, &cfg, r);
}

/* create_hooked failed with st beside a rank whose hook aborts the communicator (failing
 * is whether this is that rank): it may abort while this one still completes create's
 * allgather. */
static int create_met_the_abort(rt_world_t *w, rt_model_t *m, sc_status_t st, int failing)
{
    CHECK(!failing && st == SC_ERR_ABORTED, "create: %s: %s", sc_status_string(st),
          sc_last_error());
    sc_comm_destroy(w->comm);
    rt_model_free(m);
    return 0;
}

static int setup_hook(rt_world_t *w, rt_model_t *m, sc_reducer_t **r, int view,
                      const sc_comm_hook_t *hook)
{
    if (rt_world(w))
        return 1;
    CHECK_OK(create_hooked(w, m, r, view, hook));
    return 0;
}

static int setup(rt_world_t *w, rt_model_t *m, sc_reducer_t **r, int view)
{
    return setup_hook(w, m, r, view, NULL);
}

/* One good iteration (copy mode), checked. */
static int good_iteration(rt_world_t *w, rt_model_t *m, sc_reducer_t *r, int it)
{
    for (int g = m->n - 1; g >= 0; g--) {
        rt_fill(m, m->buf[g], SEED, w->rank, it, g);
        CHECK_OK(sc_reducer_mark_ready(r, g, m->buf[g]));
    }
    CHECK_OK(sc_reducer_finalize(r));
    for (int g = 0; g < m->n; g++)
        if (rt_check_grad(m, m->buf[g], g, SEED, w->size, w->size, &it, 1, NULL))
            return 1;
    return 0;
}

static int teardown(rt_world_t *w, rt_model_t *m, sc_reducer_t *r)
{
    CHECK_OK(sc_reducer_destroy(r));
    CHECK_OK(sc_comm_destroy(w->comm));
    rt_model_free(m);
    return 0;
}

/* Marks every gradient of iteration 0 and finalizes, up to the first failure, which
 * it returns. */
static sc_status_t marked_iteration(rt_world_t *w, rt_model_t *m, sc_reducer_t *r)
{
    sc_status_t st = SC_SUCCESS;

    for (int g = m->n - 1; g >= 0 && st == SC_SUCCESS; g--) {
        rt_fill(m, m->buf[g], SEED, w->rank, 0, g);
        st = sc_reducer_mark_ready(r, g, m->buf[g]);
    }
    return st == SC_SUCCESS ? sc_reducer_finalize(r) : st;
}

static int test_index_out_of_range_is_refused(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;

    (void)argc, (void)argv;
    if (setup(&w, &m, &r, 0))
        return 1;
    CHECK_STATUS(sc_reducer_mark_ready(r, MODEL_N, m.buf[0]), SC_ERR_INVALID_ARG);
    CHECK_SAYS("gradient index 8 is outside [0, 8)");
    CHECK_STATUS(sc_reducer_mark_ready(r, -1, m.buf[0]), SC_ERR_INVALID_ARG);
    CHECK_SAYS("gradient index -1 is outside [0, 8)");
    if (good_iteration(&w, &m, r, 0))
        return 1;
    return teardown(&w, &m, r);
}

/* The second mark is refused and changes nothing: the result is the first one's. */
static int test_marking_a_gradient_twice_is_refused(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;
    float other[300];
    int it = 0;

    (void)argc, (void)argv;
    if (setup(&w, &m, &r, 0))
        return 1;
    for (int i = 0; i < 300; i++)
        other[i] = 1000.0f;
    for (int g = m.n - 1; g >= 0; g--) {
        rt_fill(&m, m.buf[g], SEED, w.rank, it, g);
        CHECK_OK(sc_reducer_mark_ready(r, g, m.buf[g]));
        if (g == 3) {
            CHECK_STATUS(sc_reducer_mark_ready(r, 3, other), SC_ERR_INVALID_ARG);
            CHECK_SAYS("gradient 3 (\"layer3.weight\") was already marked ready in this "
                       "iteration");
        }
    }
    CHECK_OK(sc_reducer_finalize(r));
    for (int g = 0; g < m.n; g++)
        if (rt_check_grad(&m, m.buf[g], g, SEED, w.size, w.size, &it, 1, NULL))
            return 1;
    if (good_iteration(&w, &m, r, 1))
        return 1;
    return teardown(&w, &m, r);
}

/* No GPU here: the stand-in driver reports fake_device as device memory of GPU 0. */
static char fake_device[4096];

static int test_device_pointer_is_refused(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;

    (void)argc, (void)argv;
    if (setup(&w, &m, &r, 0))
        return 1;
    sc_fake_device_install(fake_device, sizeof(fake_device));
    CHECK_STATUS(sc_reducer_mark_ready(r, 2, fake_device), SC_ERR_INVALID_ARG);
    CHECK_SAYS("gradient 2 (\"layer2.weight\") is device memory (GPU 0)",
               "this reducer's buckets are host memory", "config.stream");
    if (good_iteration(&w, &m, r, 0))
        return 1;
    return teardown(&w, &m, r);
}

static int test_null_or_foreign_gradient_pointer_is_refused(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t m, mv;
    sc_reducer_t *r, *rv;
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;

    (void)argc, (void)argv;
    if (setup(&w, &m, &r, 0))
        return 1;
    CHECK_STATUS(sc_reducer_mark_ready(r, 1, NULL), SC_ERR_INVALID_ARG);
    CHECK_SAYS("gradient 1 (\"layer1.weight\") of 2000 elements is NULL");
    CHECK_STATUS(sc_reducer_mark_ready(r, 1, (char *)m.buf[1] + 2), SC_ERR_INVALID_ARG);
    CHECK_SAYS("gradient 1 (\"layer1.weight\")", "is not aligned to its 4-byte elements");
    if (good_iteration(&w, &m, r, 0))
        return 1;
    rt_model_init(&mv, MODEL_N, model_counts, NULL);
    cfg.gradient_as_bucket_view = 1;
    CHECK_OK(sc_reducer_create(w.comm, mv.desc, mv.n, &cfg, &rv));
    CHECK_STATUS(sc_reducer_mark_ready(rv, 1, mv.buf[1]), SC_ERR_INVALID_ARG);
    CHECK_SAYS("with gradient_as_bucket_view it must be in its view");
    CHECK_OK(sc_reducer_destroy(rv));
    rt_model_free(&mv);
    return teardown(&w, &m, r);
}

/* sc_comm_destroy refuses a communicator a reducer still uses (its buckets are the
 * communicator's registered memory), saying so, and both stay usable; once the reducer
 * is destroyed the communicator is destroyed. */
static int test_comm_destroy_refused_while_a_reducer_uses_it(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;

    (void)argc, (void)argv;
    if (setup(&w, &m, &r, 1))
        return 1;
    CHECK_STATUS(sc_comm_destroy(w.comm), SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_comm_destroy: 1 reducer still uses this communicator",
               "sc_reducer_destroy");
    for (int it = 0; it < 2; it++) {
        for (int g = m.n - 1; g >= 0; g--) {
            rt_fill(&m, sc_reducer_grad_view(r, g), SEED, w.rank, it, g);
            CHECK_OK(sc_reducer_mark_ready(r, g, NULL));
        }
        CHECK_OK(sc_reducer_finalize(r));
        for (int g = 0; g < m.n; g++)
            if (rt_check_grad(&m, sc_reducer_grad_view(r, g), g, SEED, w.size, w.size, &it, 1,
                              NULL))
                return 1;
    }
    return teardown(&w, &m, r);
}

/* sc_reducer_destroy in a child forked after an iteration (a data loader's worker): the
 * reducer's threads, communicator and memory are the parent's, so it is refused, as the
 * communicator is (it returned SC_SUCCESS after its frees were refused), and the
 * parent's reducer goes on on every rank. */
static int test_destroy_in_a_forked_child_is_refused(int argc, char **argv)
{
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;
    int status = 0;
    pid_t pid;

    (void)argc, (void)argv;
    if (setup(&w, &m, &r, 0) || good_iteration(&w, &m, r, 0))
        return 1;
    if (w.rank == 0) {
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        CHECK(pid >= 0, "fork failed");
        if (pid == 0) {
            sc_status_t st = sc_reducer_destroy(r);
            int ok = st == SC_ERR_INVALID_COMM && strstr(sc_last_error(), "is a fork of it");
            if (!ok)
                fprintf(stderr, "child: %s: %s\n", sc_status_string(st), sc_last_error());
            _exit(ok ? 0 : 1);
        }
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child was not refused");
    }
    if (good_iteration(&w, &m, r, 1))
        return 1;
    return teardown(&w, &m, r);
}

/* Rank 1 asks for device gradients (a stream) where there is no GPU (host-only build:
 * unsupported; CUDA build: the communicator has no GPU), and the other ranks fail too,
 * naming it. tests/gpu covers device buckets where a GPU is present. */
static int test_stream_on_one_rank_fails_create_on_every_rank(int argc, char **argv)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_reducer_t *r = NULL;
    rt_world_t w;
    rt_model_t m;

    (void)argc, (void)argv;
    if (sc_device_count() > 0) {
        printf("SKIP: this test needs a machine without a GPU (found %d)\n",
               sc_device_count());
        return 0;
    }
    if (rt_world(&w))
        return 1;
    rt_model_init(&m, MODEL_N, model_counts, NULL);
    if (w.rank == 1)
        cfg.stream = (sc_stream_t)&cfg;
#ifdef SC_HAVE_CUDA
    CHECK_STATUS(sc_reducer_create(w.comm, m.desc, m.n, &cfg, &r), SC_ERR_DEVICE);
    if (w.rank == 1)
        CHECK_SAYS("config.stream is set", "the communicator found no usable GPU");
    else
        CHECK_SAYS("rank 1 failed its own checks (SC_ERR_DEVICE)");
#else
    CHECK_STATUS(sc_reducer_create(w.comm, m.desc, m.n, &cfg, &r), SC_ERR_UNSUPPORTED);
    if (w.rank == 1)
        CHECK_SAYS("config.stream is set", "device buckets need a CUDA build");
    else
        CHECK_SAYS("rank 1 failed its own checks (SC_ERR_UNSUPPORTED)");
#endif
    CHECK(r == NULL, "the reducer was set on failure");
    CHECK_OK(sc_comm_destroy(w.comm));
    rt_model_free(&m);
    return 0;
}

/* Rank `skipper` never marks gradient 4 ("layer4.weight"), the others mark all: every
 * rank's finalize fails, the skipper listing it, the others naming the skipper; no
 * rank hangs, and the next iteration is right. */
static int test_missing_gradients_fail_finalize_on_every_rank(int argc, char **argv)
{
    int skipper = argc > 0 ? atoi(argv[0]) : 1;
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;

    if (setup(&w, &m, &r, 0))
        return 1;
    for (int g = m.n - 1; g >= 0; g--) {
        if (g == 4 && w.rank == skipper)
            continue;
        rt_fill(&m, m.buf[g], SEED, w.rank, 0, g);
        CHECK_OK(sc_reducer_mark_ready(r, g, m.buf[g]));
    }
    CHECK_STATUS(sc_reducer_finalize(r), SC_ERR_INVALID_ARG);
    if (w.rank == skipper) {
        CHECK_SAYS("gradients never marked ready in this iteration: 4 (\"layer4.weight\") "
                   "(1 of 8)", "without find_unused");
    } else {
        char says[64];
        snprintf(says, sizeof(says), "rank %d never marked gradient 4 (\"layer4.weight\")",
                 skipper);
        CHECK_SAYS(says);
    }
    if (good_iteration(&w, &m, r, 1))
        return 1;
    return teardown(&w, &m, r);
}

/* After a synced iteration the last rank alone runs one without sync: the others'
 * next synced iteration meets the last rank's one after, and their finalize (and then
 * the last rank's) fails with SC_ERR_MISMATCH saying that the ranks accumulated a
 * different number of iterations, instead of returning sums of different iterations as
 * a success. The reducer works again afterwards: an iteration synced on every rank
 * after that gives the right averages. */
static int test_one_rank_without_sync_is_a_mismatch(int argc, char **argv)
{
    int last, it_ok = 3;
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;

    (void)argc, (void)argv;
    if (setup(&w, &m, &r, 0))
        return 1;
    last = w.rank == w.size - 1;
    for (int it = 0; it < 3; it++) {
        /* The others: it 0 and 1 synced; the last rank: 0 synced, 1 without, 2 synced. */
        if (it == 2 && !last)
            break;
        CHECK_OK(sc_reducer_set_sync(r, !(last && it == 1)));
        for (int g = m.n - 1; g >= 0; g--) {
            rt_fill(&m, m.buf[g], SEED, w.rank, it, g);
            CHECK_OK(sc_reducer_mark_ready(r, g, m.buf[g]));
        }
        if (it == 0 || (last && it == 1)) {
            CHECK_OK(sc_reducer_finalize(r));
            continue;
        }
        CHECK_STATUS(sc_reducer_finalize(r), SC_ERR_MISMATCH);
        CHECK_SAYS("ranks disagree: between 0 and 1 iterations without sync",
                   last ? "(1 on this rank)" : "(0 on this rank)");
    }
    CHECK_OK(sc_reducer_set_sync(r, 1));
    for (int g = m.n - 1; g >= 0; g--) {
        rt_fill(&m, m.buf[g], SEED, w.rank, it_ok, g);
        CHECK_OK(sc_reducer_mark_ready(r, g, m.buf[g]));
    }
    CHECK_OK(sc_reducer_finalize(r));
    for (int g = 0; g < m.n; g++)
        if (rt_check_grad(&m, m.buf[g], g, SEED, w.size, w.size, &it_ok, 1, NULL))
            return 1;
    return teardown(&w, &m, r);
}

/* Without sync nothing is communicated: rank 1 skipping gradient 4 is rank 1's error
 * alone; the synced iteration after it works on every rank. */
static int test_missing_gradients_without_sync_fail_locally(int argc, char **argv)
{
    int its[2] = {0, 1};
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;

    (void)argc, (void)argv;
    if (setup(&w, &m, &r, 0))
        return 1;
    for (int it = 0; it < 2; it++) {
        CHECK_OK(sc_reducer_set_sync(r, it == 1));
        for (int g = m.n - 1; g >= 0; g--) {
            if (it == 0 && g == 4 && w.rank == 1)
                continue;
            rt_fill(&m, m.buf[g], SEED, w.rank, it, g);
            CHECK_OK(sc_reducer_mark_ready(r, g, m.buf[g]));
        }
        if (it == 0 && w.rank == 1) {
            CHECK_STATUS(sc_reducer_finalize(r), SC_ERR_INVALID_ARG);
            CHECK_SAYS("gradients never marked ready in this iteration without sync: 4 "
                       "(\"layer4.weight\") (1 of 8)");
        } else {
            CHECK_OK(sc_reducer_finalize(r));
        }
    }
    for (int g = 0; g < m.n; g++)
        if (g != 4 && rt_check_grad(&m, m.buf[g], g, SEED, w.size, w.size, its, 2, NULL))
            return 1;
    return teardown(&w, &m, r);
}

/* The last rank registers a list that differs from the others' at gradient 3 (or has a
 * ninth gradient): SC_ERR_MISMATCH on every rank, naming the gradient and both ranks'
 * versions of it. */
static int test_different_registration_fails_create_on_every_rank(int argc, char **argv)
{
    const char *what = argc > 0 ? argv[0] : "count";
    size_t counts[MODEL_N + 1];
    int n = MODEL_N, last;
    char says[160];
    sc_reducer_t *r = NULL;
    rt_world_t w;
    rt_model_t m;

    if (rt_world(&w))
        return 1;
    last = w.rank == w.size - 1;
    memcpy(counts, model_counts, sizeof(model_counts));
    counts[MODEL_N] = 5;
    if (last && strcmp(what, "number") == 0)
        n = MODEL_N + 1;
    rt_model_init(&m, n, counts, NULL);
    if (last && strcmp(what, "count") == 0)
        m.desc[3].count = 301;
    if (last && strcmp(what, "dtype") == 0)
        m.desc[3].dtype = SC_BFLOAT16;
    if (last && strcmp(what, "name") == 0)
        m.desc[3].name = "layer3.bias";
    CHECK_STATUS(sc_reducer_create(w.comm, m.desc, m.n, NULL, &r), SC_ERR_MISMATCH);
    if (strcmp(what, "number") == 0) {
        snprintf(says, sizeof(says), "gradient 8 is absent on rank 0 but \"layer8.weight\" "
                 "(5 elements of float32) on rank %d", w.size - 1);
    } else {
        snprintf(says, sizeof(says), "gradient 3 is \"layer3.weight\" (300 elements of float32) "
                 "on rank 0 but %s on rank %d",
                 strcmp(what, "count") == 0   ? "\"layer3.weight\" (301 elements of float32)"
                 : strcmp(what, "dtype") == 0 ? "\"layer3.weight\" (300 elements of bfloat16)"
                                              : "\"layer3.bias\" (300 elements of float32)",
                 w.size - 1);
    }
    CHECK_SAYS("ranks registered different gradients", says);
    CHECK(r == NULL, "the reducer was set on failure");
    CHECK_OK(sc_comm_destroy(w.comm));
    rt_model_free(&m);
    return 0;
}

/* The last rank's configuration differs in one field (argv[0]: cap, the bucket cap;
 * view, gradient_as_bucket_view, which changes which collective each bucket issues, so
 * that without the check the ranks' collectives no longer line up; cap_mb, autotune on
 * every rank and SC_BUCKET_CAP_MB=25, the default cap, on the last only, which turns
 * its autotuning off: the sentence named config.autotune, the same on every rank):
 * SC_ERR_MISMATCH on every rank at create, naming the field and both values. */
static int test_different_config_fails_create_on_every_rank(int argc, char **argv)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    int view = argc > 0 && strcmp(argv[0], "view") == 0;
    int cap_mb = argc > 0 && strcmp(argv[0], "cap_mb") == 0;
    sc_reducer_t *r = NULL;
    char says[128];
    rt_world_t w;
    rt_model_t m;

    if (rt_world(&w))
        return 1;
    rt_model_init(&m, MODEL_N, model_counts, NULL);
    if (cap_mb) {
        cfg.autotune = 1;
        if (w.rank == w.size - 1)
            setenv("SC_BUCKET_CAP_MB", "25", 1);
    } else if (view) {
        cfg.gradient_as_bucket_view = w.rank == w.size - 1;
    } else {
        cfg.bucket_cap_bytes = w.rank == w.size - 1 ? 8192 : 4096;
    }
    CHECK_STATUS(sc_reducer_create(w.comm, m.desc, m.n, &cfg, &r), SC_ERR_MISMATCH);
    if (cap_mb)
        snprintf(says, sizeof(says), "SC_BUCKET_CAP_MB set (it turns autotune off) is 0 on "
                 "rank 0 but 1 on rank %d", w.size - 1);
    else if (view)
        snprintf(says, sizeof(says), "gradient_as_bucket_view is 0 on rank 0 but 1 on rank %d",
                 w.size - 1);
    else
        snprintf(says, sizeof(says), "bucket_cap_bytes is 4096 on rank 0 but 8192 on rank %d",
                 w.size - 1);
    CHECK_SAYS("ranks disagree", says);
    CHECK_OK(sc_comm_destroy(w.comm));
    rt_model_free(&m);
    return 0;
}

/* The last rank calls an allreduce while the others create a reducer: the agreement's
 * own collective meets another call. SC_ERR_MISMATCH on every rank naming both calls
 * (the creating ranks used to read an unset difference and report running out of
 * memory). */
static int test_create_meeting_another_collective_is_a_mismatch(int argc, char **argv)
{
    sc_reducer_t *r = NULL;
    float x[64] = {0};
    rt_world_t w;
    rt_model_t m;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    /* Every rank out of sc_comm_init and the barrier first (the last one waits a
     * little more): the mismatch breaks the communicator, and a rank whose barrier had
     * not yet seen its last message would report it there (noted, not changed: an
     * abort notice can overtake an earlier op's last message). */
    CHECK_OK(sc_barrier(w.comm, NULL));
    rt_model_init(&m, MODEL_N, model_counts, NULL);
    if (w.rank == w.size - 1) {
        nanosleep(&(struct timespec){0, 300000000L}, NULL);
        CHECK_STATUS(sc_allreduce(x, x, 64, SC_FLOAT32, SC_SUM, w.comm, NULL, NULL),
                     SC_ERR_MISMATCH);
    } else {
        CHECK_STATUS(sc_reducer_create(w.comm, m.desc, m.n, NULL, &r), SC_ERR_MISMATCH);
        CHECK(r == NULL, "the reducer was set on failure");
    }
    CHECK_SAYS("ranks disagree", "called allreduce");
    sc_comm_destroy(w.comm);
    rt_model_free(&m);
    return 0;
}

/* A configuration not of this version's size (here 8 bytes: it would end inside a
 * field) is refused on every rank, naming both sizes; a switch other than 0 or 1 (most
 * likely a field never initialized) too, naming the field, and in set_sync, where the
 * refused call changes nothing. */
static int test_config_out_of_range_is_refused(int argc, char **argv)
{
    static const char *const fields[] = {"gradient_as_bucket_view", "find_unused",
                                         "autotune"};
    sc_reducer_t *r = NULL;
    rt_world_t w;
    rt_model_t m;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    rt_model_init(&m, MODEL_N, model_counts, NULL);
    {
        sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
        cfg.size = 8;
        CHECK_STATUS(sc_reducer_create(w.comm, m.desc, m.n, &cfg, &r), SC_ERR_INVALID_ARG);
        CHECK_SAYS("config.size is 8, not", "SC_REDUCER_CONFIG_INIT");
        CHECK(r == NULL, "the reducer was set on failure");
    }
    for (int f = 0; f < 3; f++) {
        sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
        char want[64];

        cfg.gradient_as_bucket_view = f == 0 ? 2 : 0;
        cfg.find_unused = f == 1 ? 2 : 0;
        cfg.autotune = f == 2 ? -1 : 0;
        snprintf(want, sizeof(want), "config.%s is %d, not 0 or 1", fields[f], f == 2 ? -1 : 2);
        CHECK_STATUS(sc_reducer_create(w.comm, m.desc, m.n, &cfg, &r), SC_ERR_INVALID_ARG);
        CHECK_SAYS("sc_reducer_create", want);
        CHECK(r == NULL, "the reducer was set on failure");
    }
    CHECK_OK(sc_comm_destroy(w.comm));
    rt_model_free(&m);
    if (setup(&w, &m, &r, 0))
        return 1;
    CHECK_STATUS(sc_reducer_set_sync(r, 2), SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_reducer_set_sync", "sync is 2, not 0 or 1");
    if (good_iteration(&w, &m, r, 0)) /* still synced: the sum of every rank */
        return 1;
    CHECK_OK(sc_reducer_set_sync(r, 0));
    CHECK_STATUS(sc_reducer_set_sync(r, -1), SC_ERR_INVALID_ARG);
    for (int g = m.n - 1; g >= 0; g--) { /* still without sync: nothing is communicated */
        rt_fill(&m, m.buf[g], SEED, w.rank, 1, g);
        CHECK_OK(sc_reducer_mark_ready(r, g, m.buf[g]));
    }
    CHECK_OK(sc_reducer_finalize(r));
    return teardown(&w, &m, r);
}

static int test_integer_gradients_need_prediv_1(int argc, char **argv)
{
    static const size_t counts[] = {10, 10};
    static const sc_dtype_t dtypes[] = {SC_FLOAT32, SC_INT32};
    sc_reducer_t *r = NULL;
    rt_world_t w;
    rt_model_t m;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    rt_model_init(&m, 2, counts, dtypes);
    CHECK_STATUS(sc_reducer_create(w.comm, m.desc, m.n, NULL, &r), SC_ERR_INVALID_ARG);
    CHECK_SAYS("gradient 1 (\"layer1.weight\") is int32", "prediv must be 1 (it is 2, the "
               "communicator size)");
    CHECK_OK(sc_comm_destroy(w.comm));
    rt_model_free(&m);
    return 0;
}

static int test_narrow_hook_refuses_non_float32_buckets(int argc, char **argv)
{
    static const size_t counts[] = {10, 10};
    static const sc_dtype_t dtypes[] = {SC_FLOAT32, SC_FLOAT64};
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_comm_hook_t hook;
    sc_reducer_t *r = NULL;
    rt_world_t w;
    rt_model_t m;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    rt_model_init(&m, 2, counts, dtypes);
    CHECK_OK(sc_comm_hook_builtin(SC_HOOK_FP16, &hook));
    cfg.hook = &hook;
    CHECK_STATUS(sc_reducer_create(w.comm, m.desc, m.n, &cfg, &r), SC_ERR_INVALID_ARG);
    CHECK_SAYS("comm hook fp16: bucket dtype is float64", "float32 buckets only");
    CHECK_OK(sc_comm_destroy(w.comm));
    rt_model_free(&m);
    return 0;
}

/* The last rank gives the float16 hook of its live reducer to a second reducer too (the
 * others a new hook): every rank's create fails, that rank's saying the hook is owned,
 * and the hook stays the first reducer's, which goes on and is destroyed once (the
 * second reducer took it and the second destroy freed it again: a crash in free). */
static int test_hook_given_to_two_reducers_is_refused(int argc, char **argv)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_comm_hook_t hook, fresh;
    sc_reducer_t *r, *second = NULL;
    rt_world_t w;
    rt_model_t m;
    sc_status_t st;
    char who[32];

    (void)argc, (void)argv;
    CHECK_OK(sc_comm_hook_builtin(SC_HOOK_FP16, &hook));
    if (setup_hook(&w, &m, &r, 0, &hook))
        return 1;
    if (w.rank < w.size - 1)
        CHECK_OK(sc_comm_hook_builtin(SC_HOOK_FP16, &fresh));
    cfg.hook = w.rank == w.size - 1 ? &hook : &fresh;
    st = sc_reducer_create(w.comm, m.desc, m.n, &cfg, &second);
    CHECK(st != SC_SUCCESS && !second, "the second reducer was made (%s)", sc_status_string(st));
    snprintf(who, sizeof(who), "rank %d", w.size - 1);
    if (w.rank == w.size - 1) {
        CHECK(st == SC_ERR_INVALID_ARG, "%s: %s", sc_status_string(st), sc_last_error());
        CHECK_SAYS("config.hook (\"fp16\") is owned by another reducer",
                   "fill a new hook for each reducer");
    } else {
        CHECK_SAYS(who);
    }
    for (int g = m.n - 1; g >= 0; g--) {
        rt_fill(&m, m.buf[g], SEED, w.rank, 0, g);
        CHECK_OK(sc_reducer_mark_ready(r, g, m.buf[g]));
    }
    CHECK_OK(sc_reducer_finalize(r));
    return teardown(&w, &m, r);
}

/* A caller's hook whose second start fails on the last rank: that rank's finalize
 * reports the hook's failure, the others' fail with SC_ERR_ABORTED (the reducer
 * aborted the communicator), well before SC_TIMEOUT; a rank still completing create
 * when the abort arrives fails there. argv[0] "issued": the failing start issues its
 * all-reduce first and hands its request out, which is then the reducer's to complete
 * and free (it was dropped with its collective in flight, never freed); the hook wraps
 * it in a request of its own that counts its releases. */
typedef struct {
    int starts, fail;
    int fail_finish;     /* the finish of bucket 1 fails once */
    int issue;           /* the failing start issues its all-reduce first */
    int released;        /* the failing start's request was freed */
    sc_request_t *inner; /* the all-reduce it issued */
} flaky_t;

static sc_status_t flaky_req_test(sc_request_t *req)
{
    flaky_t *f = req->impl;
    sc_status_t st = sc_test(f->inner);

    if (st != SC_IN_PROGRESS)
        __atomic_store_n(&req->done, 1, __ATOMIC_RELEASE);
    return st;
}

static sc_status_t flaky_req_wait(sc_request_t *req)
{
    flaky_t *f = req->impl;
    sc_status_t st = sc_wait(f->inner);

    __atomic_store_n(&req->done, 1, __ATOMIC_RELEASE);
    return st;
}

static void flaky_req_release(sc_request_t *req)
{
    flaky_t *f = req->impl;

    sc_request_free(f->inner);
    f->inner = NULL;
    f->released++;
}

static const sc_request_ops_t flaky_req_ops = {flaky_req_test, flaky_req_wait,
                                               flaky_req_release};

/* The all-reduce issued, its request wrapped in *req, and a failure returned. */
static sc_status_t flaky_issue_and_fail(flaky_t *f, const sc_hook_bucket_t *b,
                                        sc_comm_t *comm, sc_request_t **req)
{
    sc_request_t *outer = calloc(1, sizeof(*outer));
    sc_status_t st;

    if (!outer)
        return SC_ERR_NO_MEMORY;
    st = sc_allreduce(b->data, b->data, b->count, b->dtype, SC_SUM, comm, NULL, &f->inner);
    if (st != SC_SUCCESS) {
        free(outer);
        return st;
    }
    sc_request_init(outer, comm->tp, &flaky_req_ops, f);
    *req = outer;
    return SC_ERR_INTERNAL;
}

static sc_status_t flaky_start(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm,
                               sc_request_t **req)
{
    flaky_t *f = state;
    if (++f->starts == 2 && f->fail)
        return f->issue ? flaky_issue_and_fail(f, b, comm, req) : SC_ERR_INTERNAL;
    return sc_allreduce(b->data, b->data, b->count, b->dtype, SC_SUM, comm, NULL, req);
}

static int test_failing_hook_start_fails_every_rank(int argc, char **argv)
{
    flaky_t state = {0};
    sc_comm_hook_t hook = {.name = "flaky", .state = &state, .start = flaky_start};
    sc_status_t first = SC_SUCCESS, st;
    sc_reducer_t *r;
    rt_world_t w;
    rt_model_t m;
    char who[64];
    double t0;

    if (rt_world(&w))
        return 1;
    state.fail = w.rank == w.size - 1;
    state.issue = argc > 0 && !strcmp(argv[0], "issued");
    t0 = rt_now();
    st = create_hooked(&w, &m, &r, 0, &hook);
    if (st != SC_SUCCESS)
        return create_met_the_abort(&w, &m, st, state.fail);
    for (int g = m.n - 1; g >= 0; g--) {
        rt_fill(&m, m.buf[g], SEED, w.rank, 0, g);
        st = sc_reducer_mark_ready(r, g, m.buf[g]);
        if (first == SC_SUCCESS && st != SC_SUCCESS) {
            first = st;
            if (state.fail)
                CHECK_SAYS("comm hook \"flaky\" could not start bucket 1 (SC_ERR_INTERNAL): "
                           "the hook gave no reason", "the communicator is aborted");
        }
    }
    if (state.fail) {
        CHECK(first == SC_ERR_INTERNAL, "mark_ready returned %s, not the hook's failure",
              sc_status_string(first));
        CHECK_STATUS(sc_reducer_finalize(r), SC_ERR_INTERNAL);
        CHECK_SAYS("could not start bucket 1");
        /* Finalize waited for every started bucket, the failed one's request too. */
        CHECK(state.released == state.issue, "the failed start's request was freed %d "
              "times by finalize's return", state.released);
    } else {
        CHECK_STATUS(sc_reducer_finalize(r), SC_ERR_ABORTED);
        snprintf(who, sizeof(who), "rank %d: the communicator was aborted", w.size - 1);
        CHECK_SAYS(who, "comm hook \"flaky\" could not start bucket 1");
    }
    /* At once, not after SC_TIMEOUT (20 s here; 10 s leaves room for a loaded machine). */
    CHECK(rt_now() - t0 < 10.0, "the failure took %.1f s to reach every rank", rt_now() - t0);
    sc_reducer_destroy(r);
    CHECK(state.released == (state.fail && state.issue), "the failed start's request was "
          "freed %d times", state.released);
    sc_comm_destroy(w.comm);
    rt_model_free(&m);
    return 0;
}

/* A hook whose first start fails where *state is set (a caller's hook refusing). */
static sc_status_t refusing_start(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm,
                                  sc_request_t **req)
{
    int *refuse = state;

    if (*refuse) {
        *refuse = 0;
        return sc_error(SC_ERR_INTERNAL, "refusing: this hook refuses its first bucket");
    }
    return sc_allreduce(b->data, b->data, b->count, b->dtype, SC_SUM, comm, NULL, req);
}

/* The last rank's hook fails the first bucket's start, aborting the communicator; the
 * other ranks, told so (their barrier fails), reach finalize, where their buckets' starts
 * are refused. Their sentence carries the last rank's reason once: they abort nothing
 * (it said "...; the communicator is aborted so that no rank waits for the bucket" twice,
 * the second time as if this rank had aborted a communicator already aborted). */
static int test_bucket_refused_after_a_peers_abort_passes_its_reason_on(int argc, char **argv)
{
    int refuse = 0;
    int32_t token = 1;
    sc_comm_hook_t hook = {.name = "refusing", .state = &refuse, .start = refusing_start};
    const char *says, *again;
    sc_reducer_t *r;
    rt_world_t w;
    rt_model_t m;
    char who[64];

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    refuse = w.rank == w.size - 1;
    CHECK_OK(create_hooked(&w, &m, &r, 0, &hook));
    /* Every rank's create returned before the last rank aborts: a rank still in
     * sc_reducer_create's agreement failed there (under ThreadSanitizer in CI). */
    for (int p = 0; p < w.size - 1; p++)
        if (refuse)
            CHECK_OK(sc_recv(&token, 1, SC_INT32, p, w.comm, NULL, NULL));
        else if (p == w.rank)
            CHECK_OK(sc_send(&token, 1, SC_INT32, w.size - 1, w.comm, NULL, NULL));
    if (refuse) {
        for (int g = m.n - 1; g >= 0; g--) {
            rt_fill(&m, m.buf[g], SEED, w.rank, 0, g);
            sc_reducer_mark_ready(r, g, m.buf[g]);
        }
        CHECK_STATUS(sc_reducer_finalize(r), SC_ERR_INTERNAL);
    } else {
        CHECK_STATUS(sc_barrier(w.comm, NULL), SC_ERR_ABORTED);
        for (int g = m.n - 1; g >= 0; g--) {
            rt_fill(&m, m.buf[g], SEED, w.rank, 0, g);
            sc_reducer_mark_ready(r, g, m.buf[g]);
        }
        CHECK_STATUS(sc_reducer_finalize(r), SC_ERR_ABORTED);
        snprintf(who, sizeof(who), "rank %d: the communicator was aborted", w.size - 1);
        CHECK_SAYS(who, "this hook refuses its first bucket");
        says = strstr(sc_last_error(), "the communicator is aborted so that no rank waits");
        again = says ? strstr(says + 1, "the communicator is aborted so that") : NULL;
        CHECK(says && !again, "the error \"%s\" says that the communicator is aborted "
              "%s", sc_last_error(), says ? "twice" : "never");
    }
    sc_reducer_destroy(r);
    sc_comm_destroy(w.comm);
    rt_model_free(&m);
    return 0;
}

static sc_status_t flaky_finish(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm)
{
    flaky_t *f = state;

    (void)comm;
    if (b->index != 1 || !f->fail_finish)
        return SC_SUCCESS;
    f->fail_finish = 0;
    return SC_ERR_INTERNAL;
}

/* A caller's hook whose finish of bucket 1 fails on the last rank (a local failure:
 * the communicator lives on): that rank's finalize reports it, the others' name that
 * rank; the next iteration is right on every rank. */
static int test_failing_hook_finish_fails_every_rank(int argc, char **argv)
{
    flaky_t state = {0};
    sc_comm_hook_t hook = {.name = "flaky", .state = &state, .start = flaky_start,
                           .finish = flaky_finish};
    sc_reducer_t *r;
    rt_world_t w;
    rt_model_t m;
    char says[64];
    double t0;

    (void)argc, (void)argv;
    if (setup_hook(&w, &m, &r, 0, &hook))
        return 1;
    state.fail_finish = w.rank == w.size - 1;
    t0 = rt_now();
    for (int g = m.n - 1; g >= 0; g--) {
        rt_fill(&m, m.buf[g], SEED, w.rank, 0, g);
        CHECK_OK(sc_reducer_mark_ready(r, g, m.buf[g]));
    }
    if (w.rank == w.size - 1) {
        CHECK_STATUS(sc_reducer_finalize(r), SC_ERR_INTERNAL);
        CHECK_SAYS("comm hook \"flaky\" could not finish bucket 1 (SC_ERR_INTERNAL): the "
                   "hook gave no reason");
    } else {
        CHECK_STATUS(sc_reducer_finalize(r), SC_ERR_PEER_FAILED);
        snprintf(says, sizeof(says), "rank %d failed in this iteration", w.size - 1);
        CHECK_SAYS(says);
    }
    /* At once, not after SC_TIMEOUT (20 s here; 10 s leaves room for a loaded machine). */
    CHECK(rt_now() - t0 < 10.0, "the failure took %.1f s to reach every rank", rt_now() - t0);
    if (good_iteration(&w, &m, r, 1))
        return 1;
    return teardown(&w, &m, r);
}

/* The last rank destroys its reducer in the middle of an iteration (half its gradients
 * marked): the others, which marked all and wait in finalize for buckets it will never
 * start, fail at once with the abort it sent (they waited SC_TIMEOUT, 20 s here), whose
 * sentence names that rank and its destroy (it said only that the communicator was
 * aborted). */
static int test_destroy_mid_iteration_fails_peers_at_once(int argc, char **argv)
{
    sc_status_t st = SC_SUCCESS;
    sc_reducer_t *r;
    rt_world_t w;
    rt_model_t m;
    char who[64], marked[64];
    double t0;

    (void)argc, (void)argv;
    if (setup(&w, &m, &r, 0))
        return 1;
    /* Every rank out of create (its last collective) before the abort can reach it. */
    CHECK_OK(sc_barrier(w.comm, NULL));
    t0 = rt_now();
    if (w.rank == w.size - 1) {
        usleep(200000);
        for (int g = m.n - 1; g >= m.n / 2; g--) {
            rt_fill(&m, m.buf[g], SEED, w.rank, 0, g);
            CHECK_OK(sc_reducer_mark_ready(r, g, m.buf[g]));
        }
        CHECK_OK(sc_reducer_destroy(r));
        CHECK_STATUS(sc_barrier(w.comm, NULL), SC_ERR_ABORTED);
    } else {
        st = marked_iteration(&w, &m, r);
        CHECK(st == SC_ERR_ABORTED, "the iteration ended with %s: %s", sc_status_string(st),
              sc_last_error());
        snprintf(who, sizeof(who), "sc_reducer_destroy on rank %d:", w.size - 1);
        snprintf(marked, sizeof(marked), "destroyed with %d of %d gradients marked",
                 m.n - m.n / 2, m.n);
        CHECK_SAYS("the communicator was aborted", who, marked, "before finalize");
        CHECK(rt_now() - t0 < 10.0, "the abort took %.1f s to arrive", rt_now() - t0);
        sc_reducer_destroy(r);
    }
    sc_comm_destroy(w.comm);
    rt_model_free(&m);
    return 0;
}

/* The same on a communicator split from the world, with gradients large enough for
 * rendezvous transfers (the ring, unstaged: on one node the default algorithms go
 * through shared memory instead): the abort ends the reducer's communicator only; once every rank
 * destroyed it, the world's collectives work and are right. (The transfers the abort left
 * in flight closed the connections the world shares, and its calls failed with "the
 * connection to rank 1 was closed".) */
static int test_destroy_mid_iteration_on_split_leaves_world_working(int argc, char **argv)
{
    static const size_t counts[] = {300000, 5, 200000, 70000, 1, 250000};
    const size_t big = 1 << 20;
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_comm_t *world;
    sc_reducer_t *r;
    rt_world_t w;
    rt_model_t m;
    float *b;

    (void)argc, (void)argv;
    setenv("SC_ALGO", "ring", 0);
    setenv("SC_STAGE_BYTES", "0", 0);
    if (rt_world(&w))
        return 1;
    world = w.comm;
    CHECK_OK(sc_comm_split(world, 0, w.size - w.rank, &w.comm));
    w.rank = sc_comm_rank(w.comm);
    rt_model_init(&m, 6, counts, NULL);
    cfg.bucket_cap_bytes = 1 << 20;
    CHECK_OK(sc_reducer_create(w.comm, m.desc, m.n, &cfg, &r));
    CHECK_OK(sc_barrier(w.comm, NULL));
    if (w.rank == 0) {
        usleep(200000);
        for (int g = m.n - 1; g >= m.n / 2; g--) {
            rt_fill(&m, m.buf[g], SEED, w.rank, 0, g);
            CHECK_OK(sc_reducer_mark_ready(r, g, m.buf[g]));
        }
        CHECK_OK(sc_reducer_destroy(r));
    } else {
        sc_status_t st = marked_iteration(&w, &m, r);
        CHECK(st == SC_ERR_ABORTED, "the iteration ended with %s: %s", sc_status_string(st),
              sc_last_error());
        sc_reducer_destroy(r);
    }
    CHECK_OK(sc_comm_destroy(w.comm));
    b = malloc(big * sizeof(float));
    CHECK(b != NULL, "out of memory");
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < big; i++)
            b[i] = (float)(sc_comm_rank(world) + 1) * (float)(i % 7 + (size_t)round);
        CHECK_OK(sc_allreduce(b, b, big, SC_FLOAT32, SC_SUM, world, NULL, NULL));
        for (size_t i = 0; i < big; i++) {
            float want = (float)(w.size * (w.size + 1) / 2) * (float)(i % 7 + (size_t)round);
            CHECK(b[i] == want, "world allreduce %d after the split's abort: element %zu "
                  "is %g, expected %g", round, i, (double)b[i], (double)want);
        }
    }
    free(b);
    CHECK_OK(sc_comm_destroy(world));
    rt_model_free(&m);
    return 0;
}

/* The last rank destroys its reducer having marked nothing (between iterations, as it
 * sees them) while the others run a synced iteration, then waits for a message from
 * rank 0 without touching the reducer's collectives. argv[0] "waiting": the others mark
 * every gradient at once and wait in finalize for its buckets when its notice arrives;
 * "later": they begin the iteration only after it arrived (0.5 s later), and the first
 * bucket's start fails. Either way the others fail at once with SC_ERR_ABORTED naming
 * the iteration, that rank and its sc_reducer_destroy (they waited SC_TIMEOUT, 20 s
 * here, and it did too, in its receive), and the last rank's receive fails with the same
 * sentence: every rank gets the error, none waits. */
static int test_destroy_with_nothing_marked_fails_peers_at_once(int argc, char **argv)
{
    const int later = argc > 0 && !strcmp(argv[0], "later");
    sc_status_t st = SC_SUCCESS;
    sc_reducer_t *r;
    rt_world_t w;
    rt_model_t m;
    char who[256];
    int32_t token = 0;
    double t0;

    if (setup(&w, &m, &r, 0))
        return 1;
    /* Every rank out of create (its last collective) before the notice can reach it. */
    CHECK_OK(sc_barrier(w.comm, NULL));
    t0 = rt_now();
    snprintf(who, sizeof(who), "its reducer is in synced iteration 1, which rank %d will "
             "never join (sc_reducer_destroy on rank %d: its reducer was destroyed between "
             "iterations, after 0 synced ones)", w.size - 1, w.size - 1);
    if (w.rank == w.size - 1) {
        if (!later)
            usleep(200000); /* the others wait in finalize */
        CHECK_OK(sc_reducer_destroy(r));
        CHECK_STATUS(sc_recv(&token, 1, SC_INT32, 0, w.comm, NULL, NULL), SC_ERR_ABORTED);
        CHECK_SAYS("the communicator was aborted", who);
    } else {
        if (later)
            usleep(500000);
        st = marked_iteration(&w, &m, r);
        CHECK(st == SC_ERR_ABORTED, "the iteration ended with %s: %s", sc_status_string(st),
              sc_last_error());
        CHECK_SAYS("the communicator was aborted", who);
        sc_reducer_destroy(r);
    }
    CHECK(rt_now() - t0 < 10.0, "the failure took %.1f s to arrive", rt_now() - t0);
    sc_comm_destroy(w.comm);
    rt_model_free(&m);
    return 0;
}

/* The last rank destroys its reducer after a synced iteration that every rank ended,
 * first; the others run a collective of their own on the communicator, destroy theirs
 * later, and every rank makes a second reducer there and runs an iteration: nothing
 * fails (its notice that the reducer is gone concerns no iteration a peer is in). */
static int test_destroy_between_iterations_fails_no_one(int argc, char **argv)
{
    sc_reducer_t *r;
    rt_world_t w;
    rt_model_t m;
    int32_t one = 1, sum = 0;

    (void)argc, (void)argv;
    if (setup(&w, &m, &r, 0) || good_iteration(&w, &m, r, 0))
        return 1;
    if (w.rank == w.size - 1)
        CHECK_OK(sc_reducer_destroy(r));
    else
        usleep(300000); /* the notice arrives while their reducers live */
    CHECK_OK(sc_allreduce(&one, &sum, 1, SC_INT32, SC_SUM, w.comm, NULL, NULL));
    CHECK(sum == w.size, "the allreduce summed %d", (int)sum);
    if (w.rank < w.size - 1)
        CHECK_OK(sc_reducer_destroy(r));
    rt_model_free(&m);
    CHECK_OK(create_hooked(&w, &m, &r, 0, NULL));
    if (good_iteration(&w, &m, r, 1))
        return 1;
    return teardown(&w, &m, r);
}

/* The last rank, whose fp16 hook has a finish (the reducer's finisher thread waits for
 * each started bucket), marks the gradient of bucket 0 and destroys its reducer; the
 * others marked nothing yet (a slower backward) and wait for a message from it. Its
 * destroy returns at once and its abort reaches them at once (the destroy stopped the
 * finisher first, which waited for bucket 0 until SC_TIMEOUT, 20 s here, and only then
 * aborted). */
static int test_destroy_mid_iteration_with_a_finishing_hook_fails_peers_at_once(int argc,
                                                                                char **argv)
{
    sc_comm_hook_t hook;
    sc_reducer_t *r;
    rt_world_t w;
    rt_model_t m;
    char who[64], marked[64];
    int32_t none;
    double t0;

    (void)argc, (void)argv;
    CHECK_OK(sc_comm_hook_builtin(SC_HOOK_FP16, &hook));
    if (setup_hook(&w, &m, &r, 0, &hook))
        return 1;
    /* Every rank out of create (its last collective) before the abort can reach it. */
    CHECK_OK(sc_barrier(w.comm, NULL));
    if (w.rank == w.size - 1) {
        int b;
        size_t off;

        CHECK_OK(sc_reducer_grad_bucket(r, m.n - 1, &b, &off));
        CHECK(b == 0, "gradient %d is in bucket %d, not 0", m.n - 1, b);
        rt_fill(&m, m.buf[m.n - 1], SEED, w.rank, 0, m.n - 1);
        CHECK_OK(sc_reducer_mark_ready(r, m.n - 1, m.buf[m.n - 1]));
        usleep(200000); /* the finisher waits for bucket 0 */
        t0 = rt_now();
        CHECK_OK(sc_reducer_destroy(r));
        CHECK(rt_now() - t0 < 10.0, "sc_reducer_destroy took %.1f s", rt_now() - t0);
    } else {
        t0 = rt_now();
        CHECK_STATUS(sc_recv(&none, 1, SC_INT32, w.size - 1, w.comm, NULL, NULL),
                     SC_ERR_ABORTED);
        snprintf(who, sizeof(who), "sc_reducer_destroy on rank %d:", w.size - 1);
        snprintf(marked, sizeof(marked), "destroyed with 1 of %d gradients marked", m.n);
        CHECK_SAYS("the communicator was aborted", who, marked);
        CHECK(rt_now() - t0 < 10.0, "the abort took %.1f s to arrive", rt_now() - t0);
        sc_reducer_destroy(r);
    }
    sc_comm_destroy(w.comm);
    rt_model_free(&m);
    return 0;
}

/* A transfer of a failed collective left in flight (schedule_exec.c's sc_op_abandon, which
 * counts it in the transport's ops_left before the op's request completes) may still
 * write a reducer's plain buckets: sc_reducer_destroy then hands them to the transport,
 * which frees them after its worker; registered buckets are given back at once
 * (reducer.h). The count is moved here as sc_op_abandon moves it, after a good
 * iteration; a reducer made after it keeps nothing. argv[0]: plain | registered. */
static int test_destroy_after_a_transfer_left_in_flight(int argc, char **argv)
{
    const int registered = argc > 0 && !strcmp(argv[0], "registered");
    sc_reducer_stats_t stats;
    sc_transport_t *tp;
    sc_reducer_t *r;
    unsigned long kept;
    rt_world_t w;
    rt_model_t m;

    setenv("SC_LOCAL_REGISTER", registered ? "1" : "0", 1);
    if (setup(&w, &m, &r, 0))
        return 1;
    tp = w.comm->tp;
    if (good_iteration(&w, &m, r, 0))
        return 1;
    CHECK_OK(sc_reducer_stats(r, &stats));
    CHECK(stats.buckets > 1, "%d buckets: the case is not the one meant", stats.buckets);
    CHECK(stats.registered == (registered && w.size > 1), "registered buckets: %d",
          stats.registered);
    kept = sc_ucx_kept_blocks(tp);
    pthread_mutex_lock(&tp->pool_lock);
    tp->ops_left++;
    pthread_mutex_unlock(&tp->pool_lock);
    CHECK_OK(sc_reducer_destroy(r));
    CHECK(sc_ucx_kept_blocks(tp) == kept + (stats.registered ? 0 : (unsigned long)stats.buckets),
          "%lu blocks kept after the destroy of %d %s buckets, %lu before",
          sc_ucx_kept_blocks(tp), stats.buckets, stats.registered ? "registered" : "plain",
          kept);
    kept = sc_ucx_kept_blocks(tp);
    CHECK_OK(sc_reducer_create(w.comm, m.desc, m.n, NULL, &r));
    if (good_iteration(&w, &m, r, 1))
        return 1;
    CHECK_OK(sc_reducer_destroy(r));
    CHECK(sc_ucx_kept_blocks(tp) == kept, "a reducer made after the transfer kept %lu "
          "blocks", sc_ucx_kept_blocks(tp) - kept);
    /* The kept buckets are freed after the worker (under ASan: neither early nor twice). */
    CHECK_OK(sc_comm_destroy(w.comm));
    rt_model_free(&m);
    return 0;
}

static sc_status_t picky_validate(void *state, sc_dtype_t dtype)
{
    (void)dtype;
    return *(int *)state ? SC_ERR_INVALID_ARG : SC_SUCCESS;
}

/* A caller's hook whose validate refuses on the last rank without a sentence (the last
 * sentence on that thread is an unrelated one): that rank's create names the hook and
 * says it gave no reason, the others name that rank; nothing is made. */
static int test_failing_hook_validate_fails_every_rank(int argc, char **argv)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    int refuse;
    sc_comm_hook_t hook = {.name = "picky", .state = &refuse, .validate = picky_validate,
                           .start = flaky_start};
    flaky_t unused = {0};
    sc_reducer_t *r = NULL;
    sc_dtype_t dt;
    rt_world_t w;
    rt_model_t m;
    char says[64];

    (void)argc, (void)argv, (void)unused;
    if (rt_world(&w))
        return 1;
    rt_model_init(&m, MODEL_N, model_counts, NULL);
    refuse = w.rank == w.size - 1;
    cfg.hook = &hook;
    (void)sc_dtype_from_name("__unrelated__", &dt); /* leaves a sentence behind */
    if (refuse) {
        CHECK_STATUS(sc_reducer_create(w.comm, m.desc, m.n, &cfg, &r), SC_ERR_INVALID_ARG);
        CHECK_SAYS("comm hook \"picky\" refused gradient 0", "(SC_ERR_INVALID_ARG): the "
                   "hook gave no reason");
        CHECK(!strstr(sc_last_error(), "__unrelated__"), "an unrelated sentence: %s",
              sc_last_error());
    } else {
        CHECK(sc_reducer_create(w.comm, m.desc, m.n, &cfg, &r) != SC_SUCCESS,
              "create succeeded beside a rank whose hook refused");
        snprintf(says, sizeof(says), "rank %d failed its own checks (SC_ERR_INVALID_ARG)",
                 w.size - 1);
        CHECK_SAYS(says);
    }
    CHECK(r == NULL, "the reducer was set on failure");
    CHECK_OK(sc_comm_destroy(w.comm));
    rt_model_free(&m);
    return 0;
}

static sc_status_t failing_save(void *state, void *buf, size_t *len)
{
    (void)state, (void)buf, (void)len;
    return SC_ERR_INTERNAL;
}

static sc_status_t failing_load(void *state, const void *buf, size_t len)
{
    (void)state, (void)buf, (void)len;
    return SC_ERR_INTERNAL;
}

/* A caller's hook whose save and load fail without a sentence: each call names the hook
 * and says it gave no reason, not an older sentence; nothing is written. */
static int test_failing_hook_save_and_load_say_why(int argc, char **argv)
{
    flaky_t state = {0};
    sc_comm_hook_t hook = {.name = "forgetful", .state = &state, .start = flaky_start,
                           .save = failing_save, .load = failing_load};
    unsigned char buf[256], record[64];
    size_t len = 12345;
    sc_dtype_t dt;
    sc_reducer_t *r;
    rt_world_t w;
    rt_model_t m;

    (void)argc, (void)argv;
    if (setup_hook(&w, &m, &r, 0, &hook))
        return 1;
    (void)sc_dtype_from_name("__unrelated__", &dt);
    CHECK_STATUS(sc_reducer_hook_save(r, NULL, &len), SC_ERR_INTERNAL);
    CHECK_SAYS("sc_reducer_hook_save: comm hook \"forgetful\" could not size its state "
               "(SC_ERR_INTERNAL): the hook gave no reason");
    CHECK(len == 12345, "a failed save wrote len");
    (void)sc_dtype_from_name("__unrelated__", &dt);
    len = sizeof(buf);
    CHECK_STATUS(sc_reducer_hook_save(r, buf, &len), SC_ERR_INTERNAL);
    CHECK_SAYS("could not size its state", "the hook gave no reason");
    /* A record of this hook with an empty payload reaches the hook's load. */
    {
        const uint32_t head[4] = {0x48524353u, 1u, 9u, 0u};
        const uint64_t payload = 0;
        memcpy(record, head, sizeof(head));
        memcpy(record + sizeof(head), &payload, sizeof(payload));
        memcpy(record + sizeof(head) + sizeof(payload), "forgetful", 9);
    }
    (void)sc_dtype_from_name("__unrelated__", &dt);
    CHECK_STATUS(sc_reducer_hook_load(r, record, 16 + 8 + 9), SC_ERR_INTERNAL);
    CHECK_SAYS("sc_reducer_hook_load: comm hook \"forgetful\" could not load its state "
               "(SC_ERR_INTERNAL): the hook gave no reason");
    return teardown(&w, &m, r);
}

static sc_status_t boastful_save(void *state, void *buf, size_t *len)
{
    (void)state;
    if (buf)
        memset(buf, 0x5a, *len);
    *len = buf ? *len + 1000 : 8; /* sizes 8 bytes, then says it wrote 1008 */
    return SC_SUCCESS;
}

/* A caller's hook whose save says it wrote more than the room it was given: the length
 * was trusted, and *len (what the caller writes to its checkpoint) ran 1000 bytes past
 * the record. Now SC_ERR_INVALID_ARG naming the hook and both lengths; len unchanged. */
static int test_hook_saving_past_its_room_is_refused(int argc, char **argv)
{
    flaky_t state = {0};
    sc_comm_hook_t hook = {.name = "boastful", .state = &state, .start = flaky_start,
                           .save = boastful_save, .load = failing_load};
    unsigned char buf[256];
    size_t need = 0, len;
    sc_reducer_t *r;
    rt_world_t w;
    rt_model_t m;

    (void)argc, (void)argv;
    if (setup_hook(&w, &m, &r, 0, &hook))
        return 1;
    CHECK_OK(sc_reducer_hook_save(r, NULL, &need));
    CHECK(need == 16 + 8 + 8 + 8, "the record needs %zu bytes, expected 40", need);
    len = sizeof(buf);
    CHECK_STATUS(sc_reducer_hook_save(r, buf, &len), SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_reducer_hook_save: comm hook \"boastful\" says it saved 1008 bytes where "
               "it was given 8 (the size it asked for)");
    CHECK(len == sizeof(buf), "a refused save wrote len (%zu)", len);
    return teardown(&w, &m, r);
}

/* A caller's hook that reports a failure with a status that is no error: where (one of
 * "validate", "start", "finish", "save_load") on the rank with fail set. */
typedef struct {
    const char *where;
    int fail;
} odd_t;

static sc_status_t odd_status(const odd_t *o, const char *where, sc_status_t ret)
{
    return o->fail && strcmp(o->where, where) == 0 ? ret : SC_SUCCESS;
}

static sc_status_t odd_validate(void *state, sc_dtype_t dtype)
{
    (void)dtype;
    return odd_status(state, "validate", SC_IN_PROGRESS);
}

static sc_status_t odd_start(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm,
                             sc_request_t **req)
{
    if (b->index == 1 && odd_status(state, "start", SC_IN_PROGRESS) != SC_SUCCESS)
        return SC_IN_PROGRESS;
    return sc_allreduce(b->data, b->data, b->count, b->dtype, SC_SUM, comm, NULL, req);
}

static sc_status_t odd_finish(void *state, const sc_hook_bucket_t *b, sc_comm_t *comm)
{
    (void)comm;
    return b->index == 1 ? odd_status(state, "finish", (sc_status_t)42) : SC_SUCCESS;
}

static sc_status_t odd_save(void *state, void *buf, size_t *len)
{
    (void)buf;
    *len = 0;
    return odd_status(state, "save_load", SC_IN_PROGRESS);
}

static sc_status_t odd_load(void *state, const void *buf, size_t len)
{
    (void)buf, (void)len;
    return odd_status(state, "save_load", (sc_status_t)42);
}

/* The failing rank's call returns SC_ERR_INVALID_ARG saying what the hook returned
 * (it returned SC_IN_PROGRESS or 42 as they were: a caller testing st < 0 saw no
 * failure, and rank 0's create returned SC_IN_PROGRESS too); the others fail as for any
 * failure of that rank's hook. */
static int test_hook_failing_with_a_status_that_is_no_error_fails_as_one(int argc,
                                                                         char **argv)
{
    odd_t odd = {argc > 0 ? argv[0] : "", 0};
    sc_comm_hook_t hook = {.name = "odd", .state = &odd, .validate = odd_validate,
                           .start = odd_start, .finish = odd_finish, .save = odd_save,
                           .load = odd_load};
    const char *says = "which is not an error status";
    unsigned char buf[256];
    sc_status_t st, first = SC_SUCCESS;
    sc_reducer_t *r = NULL;
    size_t len = 12345;
    rt_world_t w;
    rt_model_t m;

    if (rt_world(&w))
        return 1;
    odd.fail = w.rank == w.size - 1;
    st = create_hooked(&w, &m, &r, 0, &hook);
    if (strcmp(odd.where, "validate") == 0) {
        char peer[64];

        CHECK(st == SC_ERR_INVALID_ARG && r == NULL, "create: %s (%d): %s",
              sc_status_string(st), (int)st, sc_last_error());
        snprintf(peer, sizeof(peer), "rank %d failed its own checks (SC_ERR_INVALID_ARG)",
                 w.size - 1);
        if (odd.fail)
            CHECK_SAYS("refused gradient 0", "it returned 1 (SC_IN_PROGRESS)", says);
        else
            CHECK_SAYS(peer);
        CHECK_OK(sc_comm_destroy(w.comm));
        rt_model_free(&m);
        return 0;
    }
    if (st != SC_SUCCESS)
        return create_met_the_abort(&w, &m, st, odd.fail);
    if (strcmp(odd.where, "save_load") == 0) {
        const uint32_t head[4] = {0x48524353u, 1u, 3u, 0u};
        const uint64_t payload = 0;

        st = sc_reducer_hook_save(r, NULL, &len);
        CHECK(st == (odd.fail ? SC_ERR_INVALID_ARG : SC_SUCCESS), "save: %s (%d): %s",
              sc_status_string(st), (int)st, sc_last_error());
        if (odd.fail) {
            CHECK_SAYS("could not size its state", "it returned 1 (SC_IN_PROGRESS)", says);
            CHECK(len == 12345, "a failed save wrote len");
        }
        memcpy(buf, head, sizeof(head));
        memcpy(buf + sizeof(head), &payload, sizeof(payload));
        memcpy(buf + sizeof(head) + sizeof(payload), "odd", 3);
        st = sc_reducer_hook_load(r, buf, sizeof(head) + sizeof(payload) + 3);
        CHECK(st == (odd.fail ? SC_ERR_INVALID_ARG : SC_SUCCESS), "load: %s (%d): %s",
              sc_status_string(st), (int)st, sc_last_error());
        if (odd.fail)
            CHECK_SAYS("could not load its state", "it returned 42", says);
        if (good_iteration(&w, &m, r, 0))
            return 1;
        return teardown(&w, &m, r);
    }
    for (int g = m.n - 1; g >= 0; g--) {
        rt_fill(&m, m.buf[g], SEED, w.rank, 0, g);
        st = sc_reducer_mark_ready(r, g, m.buf[g]);
        if (first == SC_SUCCESS && st != SC_SUCCESS)
            first = st;
    }
    st = sc_reducer_finalize(r);
    if (strcmp(odd.where, "start") == 0) {
        if (odd.fail) {
            CHECK(first == SC_ERR_INVALID_ARG, "mark_ready returned %s (%d)",
                  sc_status_string(first), (int)first);
            CHECK(st == SC_ERR_INVALID_ARG, "finalize: %s (%d): %s", sc_status_string(st),
                  (int)st, sc_last_error());
            CHECK_SAYS("could not start bucket 1 (SC_ERR_INVALID_ARG)",
                       "it returned 1 (SC_IN_PROGRESS)", says);
        } else {
            CHECK_STATUS(st, SC_ERR_ABORTED);
        }
        sc_reducer_destroy(r);
        sc_comm_destroy(w.comm);
        rt_model_free(&m);
        return 0;
    }
    CHECK_OK(first);
    CHECK(st == (odd.fail ? SC_ERR_INVALID_ARG : SC_ERR_PEER_FAILED), "finalize: %s (%d): %s",
          sc_status_string(st), (int)st, sc_last_error());
    if (odd.fail)
        CHECK_SAYS("could not finish bucket 1 (SC_ERR_INVALID_ARG)", "it returned 42", says);
    odd.fail = 0;
    if (good_iteration(&w, &m, r, 1))
        return 1;
    return teardown(&w, &m, r);
}

int main(int argc, char **argv)
{
    static const rt_test_t tests[] = {
        {"index_out_of_range_is_refused", test_index_out_of_range_is_refused},
        {"marking_a_gradient_twice_is_refused", test_marking_a_gradient_twice_is_refused},
        {"device_pointer_is_refused", test_device_pointer_is_refused},
        {"null_or_foreign_gradient_pointer_is_refused",
         test_null_or_foreign_gradient_pointer_is_refused},
        {"stream_on_one_rank_fails_create_on_every_rank",
         test_stream_on_one_rank_fails_create_on_every_rank},
        {"missing_gradients_fail_finalize_on_every_rank",
         test_missing_gradients_fail_finalize_on_every_rank},
        {"missing_gradients_without_sync_fail_locally",
         test_missing_gradients_without_sync_fail_locally},
        {"different_registration_fails_create_on_every_rank",
         test_different_registration_fails_create_on_every_rank},
        {"different_config_fails_create_on_every_rank",
         test_different_config_fails_create_on_every_rank},
        {"one_rank_without_sync_is_a_mismatch", test_one_rank_without_sync_is_a_mismatch},
        {"create_meeting_another_collective_is_a_mismatch",
         test_create_meeting_another_collective_is_a_mismatch},
        {"config_out_of_range_is_refused", test_config_out_of_range_is_refused},
        {"destroy_after_a_transfer_left_in_flight",
         test_destroy_after_a_transfer_left_in_flight},
        {"hook_given_to_two_reducers_is_refused", test_hook_given_to_two_reducers_is_refused},
        {"destroy_with_nothing_marked_fails_peers_at_once",
         test_destroy_with_nothing_marked_fails_peers_at_once},
        {"destroy_between_iterations_fails_no_one", test_destroy_between_iterations_fails_no_one},
        {"destroy_mid_iteration_fails_peers_at_once",
         test_destroy_mid_iteration_fails_peers_at_once},
        {"destroy_mid_iteration_with_a_finishing_hook_fails_peers_at_once",
         test_destroy_mid_iteration_with_a_finishing_hook_fails_peers_at_once},
        {"destroy_mid_iteration_on_split_leaves_world_working",
         test_destroy_mid_iteration_on_split_leaves_world_working},
        {"failing_hook_validate_fails_every_rank",
         test_failing_hook_validate_fails_every_rank},
        {"failing_hook_save_and_load_say_why", test_failing_hook_save_and_load_say_why},
        {"hook_saving_past_its_room_is_refused", test_hook_saving_past_its_room_is_refused},
        {"destroy_in_a_forked_child_is_refused", test_destroy_in_a_forked_child_is_refused},
        {"comm_destroy_refused_while_a_reducer_uses_it",
         test_comm_destroy_refused_while_a_reducer_uses_it},
        {"integer_gradients_need_prediv_1", test_integer_gradients_need_prediv_1},
        {"narrow_hook_refuses_non_float32_buckets", test_narrow_hook_refuses_non_float32_buckets},
        {"failing_hook_start_fails_every_rank", test_failing_hook_start_fails_every_rank},
        {"failing_hook_finish_fails_every_rank", test_failing_hook_finish_fails_every_rank},
        {"bucket_refused_after_a_peers_abort_passes_its_reason_on",
         test_bucket_refused_after_a_peers_abort_passes_its_reason_on},
        {"hook_failing_with_a_status_that_is_no_error_fails_as_one",
         test_hook_failing_with_a_status_that_is_no_error_fails_as_one},
        {NULL, NULL}};
    return rt_main(tests, argc, argv);
}
