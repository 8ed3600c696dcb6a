/* Specs of a rank killed during training's communication: in the middle of a reducer
 * iteration (buckets in flight, their results being copied back; with the top-k hook
 * also its selection worker and gated all-gathers) and while the others wait in a
 * compressed all-reduce. Every surviving rank gets an error naming the dead rank within
 * SC_TIMEOUT (plus what the spec allows), never a hang, and destroying the reducer, the
 * compressor and the communicator returns promptly. Run by killed_rank_test.sh, which
 * checks scrun's verdict. */
#include <signal.h>
#include <stdint.h>

#include "fault_util.h"

#define DEAD_RANK 1
#define KILL_ITERATION 3 /* after the first iteration and the rebuild */
#define SETTLE_S 0.3
#define NGRADS 16
#define GRAD_COUNT 200000 /* 800 KB of float32 each: 7 buckets of a 2 MiB cap */

static float grad_value(int r, int it, int g, size_t i)
{
    return (float)((r + 1) * 3 + (int)((i * 7 + (size_t)g + (size_t)it) % 23)) - 11.0f;
}

/* Survivors ignore the SIGTERM scrun sends once the dead rank died: they report and
 * exit 0, so that scrun names only the dead rank. */
static int start_world(sc_comm_t **comm, int *rank)
{
    CHECK_OK(sc_comm_init_from_env(comm));
    *rank = sc_comm_rank(*comm);
    CHECK(sc_comm_size(*comm) > DEAD_RANK, "needs more than %d ranks", DEAD_RANK + 1);
    if (*rank != DEAD_RANK)
        signal(SIGTERM, SIG_IGN);
    return TEST_PASS;
}

/* The first error of the survivor: its status, sentence and time since t0 within the
 * limit, naming the dead rank and one of the public calls in calls (NULL-terminated;
 * not an inner call such as sc_allgather alone). */
static int check_first_error(const fault_error_t *err, double limit_s, const char *what,
                             const char *const *calls)
{
    int named = 0;

    CHECK(err->status == SC_ERR_PEER_FAILED, "%s returned %s: %s", what,
          sc_status_string(err->status), err->text);
    for (; *calls; calls++)
        named |= strstr(err->text, *calls) != NULL;
    CHECK(named, "%s: the sentence names no public call the test made: %s", what,
          err->text);
    if (fault_check_names_dead_rank(err->text, DEAD_RANK) != TEST_PASS)
        return TEST_FAIL;
    CHECK(err->elapsed < limit_s, "%s took %.3f s to fail (limit %.3f s)", what,
          err->elapsed, limit_s);
    printf("rank %d: %s got %s after %.3f s: %s\n", fault_rank, what,
           sc_status_string(err->status), err->elapsed, err->text);
    return TEST_PASS;
}

/* ---- a rank killed with buckets in flight ---- */

/* Copy mode with a 2 MiB cap, the hook named by argv[0] (allreduce or topk). At
 * iteration 3 the dead rank marks half of its gradients (starting the buckets they
 * fill) and raises SIGKILL; the survivors' mark_ready or finalize of that iteration
 * fails with SC_ERR_PEER_FAILED naming it, within SC_TIMEOUT (plus the dead rank's
 * settling time and 1 s); earlier iterations succeeded; destroying the reducer (whose
 * threads were waiting on buckets) returns within 3 s. */
static int test_killed_rank_fails_the_reducer_on_the_others(int argc, char **argv)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_compress_config_t ccfg = SC_COMPRESS_CONFIG_INIT;
    sc_grad_desc_t descs[NGRADS];
    sc_comm_hook_t hook;
    sc_reducer_t *red;
    sc_comm_t *comm;
    fault_error_t err = {SC_SUCCESS, "", 0.0};
    float *grads[NGRADS];
    int rank, it;
    double t0;

    CHECK(argc == 1 && (!strcmp(argv[0], "allreduce") || !strcmp(argv[0], "topk")),
          "usage: killed_rank_fails_the_reducer_on_the_others allreduce|topk");
    if (start_world(&comm, &rank) != TEST_PASS)
        return TEST_FAIL;
    for (int g = 0; g < NGRADS; g++) {
        descs[g] = (sc_grad_desc_t){GRAD_COUNT, SC_FLOAT32, NULL};
        grads[g] = malloc(GRAD_COUNT * sizeof(float));
        CHECK(grads[g], "out of memory");
    }
    cfg.bucket_cap_bytes = 2u << 20;
    if (!strcmp(argv[0], "topk")) {
        CHECK_OK(sc_comm_hook_topk(&ccfg, &hook));
        cfg.hook = &hook;
    }
    CHECK_OK(sc_reducer_create(comm, descs, NGRADS, &cfg, &red));
    for (it = 0; it <= KILL_ITERATION; it++) {
        sc_status_t st = SC_SUCCESS;

        for (int g = 0; g < NGRADS; g++)
            for (size_t i = 0; i < GRAD_COUNT; i++)
                grads[g][i] = grad_value(rank, it, g, i);
        t0 = fault_now();
        if (rank == DEAD_RANK && it == KILL_ITERATION) {
            fault_sleep(SETTLE_S);
            for (int g = NGRADS - 1; g >= NGRADS / 2; g--)
                CHECK_OK(sc_reducer_mark_ready(red, g, grads[g]));
            fault_sleep(0.05);
            raise(SIGKILL);
        }
        for (int g = NGRADS - 1; g >= 0 && st == SC_SUCCESS; g--)
            st = sc_reducer_mark_ready(red, g, grads[g]);
        if (st == SC_SUCCESS)
            st = sc_reducer_finalize(red);
        if (st != SC_SUCCESS) {
            fault_error_take(&err, st, t0);
            break;
        }
    }
    CHECK(it == KILL_ITERATION, "the first failing iteration is %d, expected %d", it,
          KILL_ITERATION);
    {
        static const char *const calls[] = {"sc_reducer_mark_ready", "sc_reducer_finalize",
                                            NULL};
        if (check_first_error(&err, fault_timeout() + SETTLE_S + 1.0, "the iteration",
                              calls) != TEST_PASS)
            return TEST_FAIL;
    }
    /* Every later mark fails at once with the communicator's failure, also one that
     * fills no bucket (the last gradient of the fill order, marked first, does not). */
    t0 = fault_now();
    sc_status_t st = sc_reducer_mark_ready(red, 0, grads[0]);
    CHECK(st == err.status, "a later mark_ready returned %s: %s", sc_status_string(st),
          sc_last_error());
    CHECK(fault_now() - t0 < 0.5, "a later mark_ready took %.3f s to fail", fault_now() - t0);
    t0 = fault_now();
    {
        sc_dtype_t unused;
        (void)sc_dtype_from_name("__primed__", &unused); /* a sentence without "refused" */
    }
    sc_reducer_destroy(red);
    CHECK(fault_now() - t0 < 3.0, "sc_reducer_destroy took %.3f s", fault_now() - t0);
    /* Its registered buckets were given back on the failed communicator, without a
     * sentence saying sc_mem_free was refused. */
    CHECK(!strstr(sc_last_error(), "refused"), "after sc_reducer_destroy: %s",
          sc_last_error());
    /* The gradients may be written until the communicator is destroyed (reducer.h:
     * results are delivered into them by the all-reduce). */
    if (fault_check_destroy(comm, 3.0) != TEST_PASS)
        return TEST_FAIL;
    for (int g = 0; g < NGRADS; g++)
        free(grads[g]);
    return TEST_PASS;
}

/* ---- a rank killed while the others are in a compressed all-reduce ---- */

#define CA_COUNT (1u << 20)

/* Compressed all-reduces (density 0.01, error feedback) in a loop; at iteration 3 the
 * dead rank raises SIGKILL instead of calling. The survivors' call fails with
 * SC_ERR_PEER_FAILED naming it within SC_TIMEOUT (plus the settling time and 1 s);
 * later calls fail at once; the compressor and the communicator are destroyed promptly. */
static int test_killed_rank_fails_the_compressed_allreduce_on_the_others(int argc,
                                                                          char **argv)
{
    sc_compress_config_t ccfg = SC_COMPRESS_CONFIG_INIT;
    sc_compressor_t *cmp;
    sc_comm_t *comm;
    fault_error_t err = {SC_SUCCESS, "", 0.0};
    float *in, *out;
    int rank, it;
    sc_status_t st = SC_SUCCESS;
    double t0;

    (void)argc;
    (void)argv;
    if (start_world(&comm, &rank) != TEST_PASS)
        return TEST_FAIL;
    in = malloc(CA_COUNT * sizeof(float));
    out = malloc(CA_COUNT * sizeof(float));
    CHECK(in && out, "out of memory");
    CHECK_OK(sc_compressor_create(&ccfg, &cmp));
    for (it = 0; it <= KILL_ITERATION; it++) {
        for (size_t i = 0; i < CA_COUNT; i++)
            in[i] = grad_value(rank, it, 0, i);
        if (rank == DEAD_RANK && it == KILL_ITERATION) {
            fault_sleep(SETTLE_S);
            raise(SIGKILL);
        }
        t0 = fault_now();
        st = sc_compressed_allreduce(cmp, comm, 0, in, out, CA_COUNT, SC_FLOAT32, SC_SUM);
        if (st != SC_SUCCESS) {
            fault_error_take(&err, st, t0);
            break;
        }
    }
    CHECK(it == KILL_ITERATION, "the first failing call is iteration %d, expected %d", it,
          KILL_ITERATION);
    {
        static const char *const calls[] = {"sc_compressed_allreduce", NULL};
        if (check_first_error(&err, fault_timeout() + SETTLE_S + 1.0,
                              "the compressed all-reduce", calls) != TEST_PASS)
            return TEST_FAIL;
    }
    t0 = fault_now();
    st = sc_compressed_allreduce(cmp, comm, 0, in, out, CA_COUNT, SC_FLOAT32, SC_SUM);
    CHECK(st == err.status, "a later compressed all-reduce returned %s: %s",
          sc_status_string(st), sc_last_error());
    CHECK(fault_now() - t0 < 0.5, "a later call took %.3f s to fail", fault_now() - t0);
    sc_compressor_destroy(cmp);
    free(in);
    free(out);
    return fault_check_destroy(comm, 3.0);
}

int main(int argc, char **argv)
{
    static const fault_test_t tests[] = {
        {"killed_rank_fails_the_reducer_on_the_others",
         test_killed_rank_fails_the_reducer_on_the_others},
        {"killed_rank_fails_the_compressed_allreduce_on_the_others",
         test_killed_rank_fails_the_compressed_allreduce_on_the_others},
        {NULL, NULL}};
    return fault_main(tests, argc, argv);
}
