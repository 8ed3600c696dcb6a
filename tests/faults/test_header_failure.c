/* A collective whose header send fails (fail_header_send.c, preloaded, reports the send
 * of rank 1's header failed, as UCX does for a peer whose connection broke): the
 * sentence names the op and the peer, as a failed data transfer's does ("send failed:
 * Connection reset by remote peer" named neither). The headers go through UCX
 * (SC_LOCAL_MAILBOX=0), as between nodes.
 *
 * compressed_dense_step: rank 1's first step of a key in warm-up (a dense all-reduce)
 * passes the ranks' agreement and fails in its all-reduce (its header send): the step
 * is undone as a failed sparse step is, leaving no key behind (sc_compressor_save's
 * state has none), so the compressor goes on as new on another communicator.
 *
 * hook_first_step, hook_approx_step: the same for the top-k comm hook of a reducer:
 * rank 1's first step of bucket 0 in warm-up (its dense all-reduce), or a later sparse
 * step in approximate mode (its all-gather, after the worker selected), fails; the
 * iteration fails, and a rank whose step failed saves the hook's state as it was
 * before the iteration (no key after a first step; the same threshold and draws).
 *
 * compressed_partial_failure: a compressor's dense warm-up step of a key on a split
 * that completes on rank 0 (rank 1's header, payload inline, arrived) and fails on rank
 * 1 (its send reported failed, once rank 0 said its step was done: a file both ranks
 * name): rank 0 committed the step and rank 1 did not. The
 * next steps of that key, on the world, succeed on every rank with the same result:
 * the ranks realign the key (they were refused as a mismatch of the step's kind at
 * every later step: rank 0 past warm-up, rank 1 not).
 *
 * hook_partial_failure: the same for the top-k comm hook: a reducer's second (dense,
 * the last of warm-up) step of bucket 0 completes on rank 0 and fails on rank 1 (its
 * send reported failed once rank 0's finish of the step made the file); each
 * rank saves its hook's state and loads it into a new reducer on the world, whose
 * iterations succeed on both ranks (rank 0 took sparse steps and rank 1 dense ones: the
 * collectives' kinds differed at every iteration of every reducer loading those
 * states).
 *
 * Usage (under scrun, 2 ranks, with the shim preloaded): test_header_failure send |
 * compressed_dense_step | compressed_partial_failure | hook_first_step |
 * hook_approx_step | hook_partial_failure */
#include <dlfcn.h>

#include "fault_util.h"
#include "shardcomm/compress.h"

static int test_send(int argc, char **argv)
{
    void (*fail_next)(void) = (void (*)(void))dlsym(RTLD_DEFAULT,
                                                    "sc_test_fail_next_header_send");
    double timeout = fault_timeout();
    fault_error_t err;
    sc_comm_t *comm;
    float x = 1.0f;
    double t0;

    (void)argc, (void)argv;
    CHECK(fail_next, "fail_header_send.c is not preloaded");
    CHECK_OK(sc_comm_init_from_env(&comm));
    CHECK(sc_comm_size(comm) == 2, "needs 2 ranks");
    /* Rank 1 leaves the barrier once rank 0's message came, and may fail its next header
     * send (telling rank 0, whose connection to it is then gone) before rank 0 had
     * rank 1's: rank 0's barrier fails too then. */
    {
        sc_status_t st = sc_barrier(comm, NULL);
        CHECK(st == SC_SUCCESS || (fault_rank == 0 && st == SC_ERR_PEER_FAILED),
              "the barrier returned %s: %s", sc_status_string(st), sc_last_error());
    }
    t0 = fault_now();
    if (fault_rank == 1)
        fail_next();
    fault_error_take(&err, sc_allreduce(&x, &x, 1, SC_FLOAT32, SC_SUM, comm, NULL, NULL), t0);
    /* Rank 0 had the header (it did leave) and the payload inside it: its allreduce may
     * have completed. */
    if (fault_rank == 1) {
        CHECK(err.status == SC_ERR_PEER_FAILED, "returned %s (%s)",
              sc_status_string(err.status), err.text);
        CHECK(strstr(err.text, "allreduce #") &&
                  strstr(err.text, "header send to rank 0 failed (send failed: "
                                   "Connection reset"),
              "the sentence '%s' does not name the op, the peer and UCX's reason", err.text);
    }
    CHECK(err.elapsed < timeout + 1.0, "the error took %.2f s (SC_TIMEOUT %.1f)", err.elapsed,
          timeout);
    sc_comm_destroy(comm);
    return TEST_PASS;
}

/* Bytes of c's saved state. */
static size_t state_bytes(const sc_compressor_t *c)
{
    size_t len = 0;

    return sc_compressor_save(c, NULL, &len) == SC_SUCCESS ? len : 0;
}

static int test_compressed_dense_step(int argc, char **argv)
{
    void (*fail_after)(int) = (void (*)(int))dlsym(RTLD_DEFAULT,
                                                   "sc_test_fail_header_send_after");
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
    float g[64], out[64];
    sc_compressor_t *c;
    sc_comm_t *comm;
    size_t empty;
    sc_status_t st;

    (void)argc, (void)argv;
    CHECK(fail_after, "fail_header_send.c is not preloaded");
    CHECK_OK(sc_comm_init_from_env(&comm));
    CHECK(sc_comm_size(comm) == 2, "needs 2 ranks");
    cfg.warmup_steps = 1;
    CHECK_OK(sc_compressor_create(&cfg, &c));
    empty = state_bytes(c);
    CHECK(empty > 0, "sc_compressor_save: %s", sc_last_error());
    for (int i = 0; i < 64; i++)
        g[i] = (float)(i + 1);
    /* The agreement's header goes; the all-reduce's fails. */
    if (fault_rank == 1)
        fail_after(1);
    st = sc_compressed_allreduce(c, comm, 0, g, out, 64, SC_FLOAT32, SC_SUM);
    if (fault_rank == 1) {
        CHECK(st == SC_ERR_PEER_FAILED, "returned %s (%s)", sc_status_string(st),
              sc_last_error());
        CHECK(strstr(sc_last_error(), "allreduce #"), "the step failed elsewhere: %s",
              sc_last_error());
    }
    if (st != SC_SUCCESS)
        CHECK(state_bytes(c) == empty, "the failed first step of key 0 left a key behind "
              "(a state of %zu bytes, %zu without keys)", state_bytes(c), empty);
    sc_compressor_destroy(c);
    sc_comm_destroy(comm);
    return TEST_PASS;
}

/* The world of 2 ranks the partial failures run in, the shim's arming, and their
 * compressors' configuration: warmup_steps warm-up steps, density 0.25. */
static int partial_world(sc_comm_t **comm, void (**fail_after)(int), sc_compress_config_t *cfg,
                         int warmup_steps)
{
    *fail_after = (void (*)(int))dlsym(RTLD_DEFAULT, "sc_test_fail_header_send_after");
    CHECK(*fail_after, "fail_header_send.c is not preloaded");
    CHECK_OK(sc_comm_init_from_env(comm));
    CHECK(sc_comm_size(*comm) == 2, "needs 2 ranks");
    *cfg = (sc_compress_config_t)SC_COMPRESS_CONFIG_INIT;
    cfg->warmup_steps = warmup_steps;
    cfg->density = 0.25;
    return TEST_PASS;
}

/* The file (both ranks are children of one scrun) whose making by rank 0, its part of
 * try t done, releases rank 1's held failure (sc_test_fail_header_send_held). */
static void held_path(char *path, size_t len, int t)
{
    snprintf(path, len, "/tmp/sc_test_header_failure.%d.%d", (int)getppid(), t);
}

/* Rank 1's next collective header send after n others fails once rank 0 made the file
 * path, or 10 s passed: rank 0 completes its part first. */
static int fail_held(int n, const char *path)
{
    void (*held)(int, const char *) = (void (*)(int, const char *))dlsym(
        RTLD_DEFAULT, "sc_test_fail_header_send_held");

    CHECK(held, "fail_header_send.c is not preloaded");
    held(n, path);
    return TEST_PASS;
}

/* Rank 0's part of the try whose file is path done: rank 1's held failure goes. */
static int release_held(const char *path)
{
    FILE *f = fopen(path, "w");

    CHECK(f, "cannot make %s", path);
    fclose(f);
    return TEST_PASS;
}

static int test_compressed_partial_failure(int argc, char **argv)
{
    float g[64], out[64], other[64];
    int key = -1, ok[2];
    void (*fail_after)(int);
    sc_compress_config_t cfg;
    sc_compressor_t *c;
    sc_comm_t *comm;
    char done[64];

    (void)argc, (void)argv;
    if (partial_world(&comm, &fail_after, &cfg, 1) != TEST_PASS)
        return TEST_FAIL;
    CHECK_OK(sc_compressor_create(&cfg, &c));
    for (int i = 0; i < 64; i++)
        g[i] = (float)((i * 37 + fault_rank * 11) % 64) - 32.0f;
    /* Rank 1's failure is reported once rank 0 made the file done (both ranks are
     * children of one scrun), its step over: where rank 1 failed at once, rank 0 took the
     * failure's notice before rank 1's header beside other work, every time. Rank 0's
     * step may still fail (rank 1 gave up waiting): tried again, on another key and
     * split, until only rank 1's failed. */
    for (int t = 0; t < 20 && key < 0; t++) {
        sc_comm_t *s;
        int mine;

        held_path(done, sizeof(done), t);
        CHECK_OK(sc_comm_split(comm, 0, fault_rank, &s));
        /* The agreement's header goes, the all-reduce's fails. */
        if (fault_rank == 1 && fail_held(1, done) != TEST_PASS)
            return TEST_FAIL;
        mine = sc_compressed_allreduce(c, s, t, g, out, 64, SC_FLOAT32, SC_SUM) == SC_SUCCESS;
        if (fault_rank == 0 && release_held(done) != TEST_PASS)
            return TEST_FAIL;
        sc_comm_destroy(s);
        CHECK_OK(sc_allgather(&mine, ok, 1, SC_INT32, comm, NULL, NULL));
        if (fault_rank == 0)
            unlink(done);
        if (ok[0] && !ok[1])
            key = t;
    }
    CHECK(key >= 0, "in 20 tries rank 0's step never completed where rank 1's failed");
    for (int step = 0; step < 3; step++) {
        sc_compress_stats_t stats;
        sc_status_t st = sc_compressed_allreduce(c, comm, key, g, out, 64, SC_FLOAT32,
                                                 SC_SUM);
        CHECK(st == SC_SUCCESS, "step %d of key %d after its partial failure returned %s: "
              "%s", step, key, sc_status_string(st), sc_last_error());
        CHECK_OK(sc_compressor_stats(c, &stats));
        CHECK(!stats.dense, "step %d of key %d after its partial failure was dense (in "
              "warm-up) on this rank", step, key);
        CHECK_OK(sc_broadcast(out, other, 64, SC_FLOAT32, 0, comm, NULL, NULL));
        CHECK(memcmp(out, other, sizeof(out)) == 0, "step %d's result differs from rank "
              "0's", step);
    }
    sc_compressor_destroy(c);
    sc_comm_destroy(comm);
    return TEST_PASS;
}

/* One iteration of r over the gradient g of n floats, of another scale in each (so that
 * an approximate threshold moves). */
static sc_status_t hook_iteration(sc_reducer_t *r, float *g, size_t n)
{
    static float scale = 1.0f;
    sc_status_t st, fin;

    scale *= 8.0f;
    for (size_t i = 0; i < n; i++)
        g[i] = scale * ((float)((i * 7919u + (size_t)fault_rank * 13u) % 1000u) - 500.0f);
    st = sc_reducer_mark_ready(r, 0, g);
    fin = sc_reducer_finalize(r); /* ends the iteration either way */
    return st != SC_SUCCESS ? st : fin;
}

/* The next iteration of r (one gradient g of n floats on comm), whose first collective's
 * header rank 1 fails (at once, or with held a path, once rank 0 made that file or 10 s
 * passed), fails; *before, *lb: the hook's state saved before it. */
static int hook_fail_next(sc_comm_t *comm, sc_reducer_t *r, void (*fail_after)(int),
                          const char *held, float *g, size_t n, char **before, size_t *lb)
{
    sc_status_t st;

    if (fault_hook_state(r, before, lb) != TEST_PASS)
        return TEST_FAIL;
    /* Both ranks past the good iterations first: rank 1's failure fails what rank 0
     * still has pending, an earlier iteration's last collective too (it did so in about
     * half the runs beside other tests). Rank 1 leaves the barrier once rank 0's message
     * came, and may fail before rank 0 had rank 1's (as in test_send). */
    st = sc_barrier(comm, NULL);
    CHECK(st == SC_SUCCESS || (fault_rank == 0 && st == SC_ERR_PEER_FAILED),
          "the barrier returned %s: %s", sc_status_string(st), sc_last_error());
    if (fault_rank == 1 && held && fail_held(0, held) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank == 1 && !held)
        fail_after(0);
    CHECK(hook_iteration(r, g, n) != SC_SUCCESS, "the iteration whose step failed on rank 1 "
          "succeeded");
    return TEST_PASS;
}

/* A reducer of one gradient of n floats (at most 2^17) with the top-k hook of cfg; `ok`
 * synced iterations run, then rank 1 fails the header of the next one's step, its
 * collective `op` (the first of the iteration): rank 1's save after that failed
 * iteration equals its save before it. */
static int hook_failed_step(const sc_compress_config_t *cfg, size_t n, int ok, const char *op)
{
    void (*fail_after)(int) = (void (*)(int))dlsym(RTLD_DEFAULT,
                                                   "sc_test_fail_header_send_after");
    sc_reducer_config_t rc = SC_REDUCER_CONFIG_INIT;
    sc_grad_desc_t desc = {n, SC_FLOAT32, "w"};
    static float g[1 << 17];
    char *before, *after;
    size_t lb, la;
    sc_comm_hook_t hook;
    sc_reducer_t *r;
    sc_comm_t *comm;

    CHECK(fail_after, "fail_header_send.c is not preloaded");
    CHECK_OK(sc_comm_init_from_env(&comm));
    CHECK(sc_comm_size(comm) == 2, "needs 2 ranks");
    CHECK_OK(sc_comm_hook_topk(cfg, &hook));
    rc.hook = &hook;
    CHECK_OK(sc_reducer_create(comm, &desc, 1, &rc, &r));
    for (int i = 0; i < ok; i++)
        CHECK_OK(hook_iteration(r, g, desc.count));
    if (hook_fail_next(comm, r, fail_after, NULL, g, desc.count, &before, &lb) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank == 1)
        CHECK(strstr(sc_last_error(), op), "the iteration failed elsewhere than in the "
              "step's %s: %s", op, sc_last_error());
    if (fault_hook_state(r, &after, &la) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank == 1)
        CHECK(la == lb && memcmp(before, after, lb) == 0, "the failed step changed the "
              "hook's state (%zu bytes saved after it, %zu before)", la, lb);
    free(before);
    free(after);
    sc_reducer_destroy(r);
    sc_comm_destroy(comm);
    return TEST_PASS;
}

/* The top-k hook's finish_into, which the reducer calls for a bucket's step whose
 * all-gather or all-reduce completed, followed on rank 0 by the making of the file that
 * releases rank 1's held failure (hook_release, "" when none): rank 0's step is
 * committed before rank 1's failure reaches it. */
static sc_comm_hook_t hook_topk;
static char hook_release[64];

static sc_status_t releasing_finish_into(void *state, const sc_hook_bucket_t *b,
                                         sc_comm_t *comm, const sc_range_t *ranges, int n)
{
    sc_status_t st = hook_topk.finish_into(state, b, comm, ranges, n);

    if (hook_release[0] && release_held(hook_release) != TEST_PASS)
        st = SC_ERR_SYSTEM;
    hook_release[0] = '\0';
    return st;
}

static int test_hook_partial_failure(int argc, char **argv)
{
    void (*fail_after)(int);
    sc_compress_config_t cfg;
    sc_reducer_config_t rc = SC_REDUCER_CONFIG_INIT;
    sc_grad_desc_t desc = {64, SC_FLOAT32, "w"}; /* its all-reduce inside the header */
    static float g[64];
    char *state = NULL, *before;
    size_t len = 0, lb;
    int done = 0, kept[2];
    sc_comm_hook_t hook;
    sc_reducer_t *r;
    sc_comm_t *comm;

    (void)argc, (void)argv;
    if (partial_world(&comm, &fail_after, &cfg, 2) != TEST_PASS)
        return TEST_FAIL;
    rc.hook = &hook;
    /* Rank 1's failure is reported once rank 0's step committed (its finish made the
     * file): where rank 1 failed at once, rank 0 took the failure's notice before rank
     * 1's header, which had come (its progress takes a communicator's notices before it
     * advances the collectives), in 15 of the first 16 tries unloaded and in all 40 of
     * every run beside two busy loops. Rank 0's step may still fail (rank 1 gave up
     * waiting): tried again, with a new reducer on a new split, until only rank 1's
     * failed (rank 0's state then changed, rank 1's did not). */
    for (int t = 0; t < 5 && !done; t++) {
        char path[64];
        sc_comm_t *s;

        held_path(path, sizeof(path), t);
        CHECK_OK(sc_comm_split(comm, 0, fault_rank, &s));
        CHECK_OK(sc_comm_hook_topk(&cfg, &hook));
        hook_topk = hook;
        hook.finish_into = releasing_finish_into;
        CHECK_OK(sc_reducer_create(s, &desc, 1, &rc, &r));
        CHECK_OK(hook_iteration(r, g, desc.count));
        if (fault_rank == 0)
            snprintf(hook_release, sizeof(hook_release), "%s", path);
        if (hook_fail_next(s, r, fail_after, path, g, desc.count, &before, &lb) != TEST_PASS)
            return TEST_FAIL;
        hook_release[0] = '\0';
        free(state);
        if (fault_hook_state(r, &state, &len) != TEST_PASS)
            return TEST_FAIL;
        kept[fault_rank] = len != lb || memcmp(state, before, len) != 0;
        free(before);
        sc_reducer_destroy(r);
        sc_comm_destroy(s);
        CHECK_OK(sc_allgather(&kept[fault_rank], kept, 1, SC_INT32, comm, NULL, NULL));
        if (fault_rank == 0)
            unlink(path);
        done = kept[0] && !kept[1];
    }
    CHECK(done, "in 5 tries rank 0's step never completed where rank 1's failed");
    CHECK_OK(sc_comm_hook_topk(&cfg, &hook));
    CHECK_OK(sc_reducer_create(comm, &desc, 1, &rc, &r));
    CHECK_OK(sc_reducer_hook_load(r, state, len));
    free(state);
    for (int it = 0; it < 2; it++) {
        sc_status_t st = hook_iteration(r, g, desc.count);
        CHECK(st == SC_SUCCESS, "iteration %d of the reducer that loaded the states returned "
              "%s: %s", it, sc_status_string(st), sc_last_error());
    }
    sc_reducer_destroy(r);
    sc_comm_destroy(comm);
    return TEST_PASS;
}

static int test_hook_first_step(int argc, char **argv)
{
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;

    (void)argc, (void)argv;
    cfg.warmup_steps = 1;
    return hook_failed_step(&cfg, 1000, 0, "allreduce #");
}

static int test_hook_approx_step(int argc, char **argv)
{
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;

    (void)argc, (void)argv;
    cfg.mode = SC_TOPK_APPROX;
    cfg.density = 0.1;
    /* Of the size from which the approximate mode keeps a threshold (topk_approx.c). */
    return hook_failed_step(&cfg, 1 << 17, 2, "allgather #");
}

int main(int argc, char **argv)
{
    static const fault_test_t tests[] = {{"send", test_send},
                                         {"compressed_dense_step", test_compressed_dense_step},
                                         {"compressed_partial_failure",
                                          test_compressed_partial_failure},
                                         {"hook_first_step", test_hook_first_step},
                                         {"hook_approx_step", test_hook_approx_step},
                                         {"hook_partial_failure", test_hook_partial_failure},
                                         {NULL, NULL}};
    return fault_main(tests, argc, argv);
}
