/* A top-k comm hook's selection that fails on one rank (fail_worker_realloc.c, preloaded,
 * makes the selection's scratch run out on rank 1's worker thread): that rank's block
 * goes out marked as refused, so no rank commits the bucket's step, every rank's
 * iteration fails (the others naming rank 1) and every rank saves the hook's state it
 * saved before the iteration, where the other ranks committed the step and only rank 1
 * kept its state.
 *
 * Usage (under scrun, 2 ranks, with the shim preloaded): test_select_failure
 * first_step|later_bucket */
#include <dlfcn.h>

#include "fault_util.h"
#include "shardcomm/compress.h"

#define GRAD_COUNT ((size_t)1 << 18)

static int test_first_step(int argc, char **argv)
{
    void (*fail_realloc)(size_t) = (void (*)(size_t))dlsym(RTLD_DEFAULT,
                                                          "sc_test_fail_realloc_elsewhere");
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
    sc_reducer_config_t rc = SC_REDUCER_CONFIG_INIT;
    sc_grad_desc_t desc = {GRAD_COUNT, SC_FLOAT32, "w"};
    static float g[GRAD_COUNT];
    char *before, *after, why[1024];
    size_t lb, la;
    sc_comm_hook_t hook;
    sc_reducer_t *r;
    sc_comm_t *comm;
    sc_status_t st, fin;

    (void)argc, (void)argv;
    CHECK(fail_realloc, "fail_worker_realloc.c is not preloaded");
    CHECK_OK(sc_comm_init_from_env(&comm));
    CHECK(sc_comm_size(comm) == 2, "needs 2 ranks");
    cfg.threads = 1;
    CHECK_OK(sc_comm_hook_topk(&cfg, &hook));
    rc.hook = &hook;
    CHECK_OK(sc_reducer_create(comm, &desc, 1, &rc, &r));
    if (fault_hook_state(r, &before, &lb) != TEST_PASS)
        return TEST_FAIL;
    for (size_t i = 0; i < GRAD_COUNT; i++)
        g[i] = (float)((i * 7919u + (size_t)fault_rank * 13u) % 1000u) - 500.0f;
    /* The selection's scratch (a realloc on the worker) of at least GRAD_COUNT bytes. */
    if (fault_rank == 1)
        fail_realloc(GRAD_COUNT);
    st = sc_reducer_mark_ready(r, 0, g);
    fin = sc_reducer_finalize(r);
    CHECK(st == SC_SUCCESS, "mark_ready: %s", sc_last_error());
    CHECK(fin != SC_SUCCESS, "the iteration whose selection failed on rank 1 succeeded");
    snprintf(why, sizeof(why), "%s", sc_last_error()); /* the save may clear it */
    if (fault_hook_state(r, &after, &la) != TEST_PASS)
        return TEST_FAIL;
    CHECK(la == lb && memcmp(before, after, lb) == 0, "the step of the bucket whose "
          "selection failed on rank 1 changed the hook's state (%zu bytes saved after it, "
          "%zu before)", la, lb);
    CHECK(strstr(why, fault_rank == 1 ? "out of memory"
                                      : "rank 1 could not select its pairs of bucket 0"),
          "the iteration failed otherwise: %s", why);
    free(before);
    free(after);
    sc_reducer_destroy(r);
    sc_comm_destroy(comm);
    return TEST_PASS;
}

/* Random-k, bucket 0 (GRAD_COUNT floats) refused as above and bucket 1 (SMALL_COUNT
 * floats, whose scratch is below the failing size) committed: the undo takes back bucket
 * 0's draws only, so the next iteration's bucket 1 draws anew; where the undo put the
 * draws back to where bucket 0 found them, bucket 1 drew its committed step's indices
 * again, every one. */
#define SMALL_COUNT ((size_t)1 << 12)

static size_t later_bucket_iteration(sc_reducer_t *r, float *g, float *s,
                                     unsigned char *sent, sc_status_t *fin)
{
    size_t again = 0;

    for (size_t i = 0; i < GRAD_COUNT; i++)
        g[i] = 1.0f + (float)((i + (size_t)fault_rank) % 7u);
    for (size_t i = 0; i < SMALL_COUNT; i++)
        s[i] = 1.0f + (float)((i * 3u + (size_t)fault_rank) % 5u);
    *fin = sc_reducer_mark_ready(r, 0, s);
    if (*fin == SC_SUCCESS)
        *fin = sc_reducer_mark_ready(r, 1, g);
    if (*fin == SC_SUCCESS)
        *fin = sc_reducer_finalize(r);
    for (size_t i = 0; i < SMALL_COUNT; i++) { /* the indices some rank sent: not 0 */
        again += s[i] != 0.0f && sent[i];
        sent[i] = s[i] != 0.0f;
    }
    return again;
}

static int test_later_bucket(int argc, char **argv)
{
    void (*fail_realloc)(size_t) = (void (*)(size_t))dlsym(RTLD_DEFAULT,
                                                          "sc_test_fail_realloc_elsewhere");
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
    sc_reducer_config_t rc = SC_REDUCER_CONFIG_INIT;
    sc_grad_desc_t desc[2] = {{SMALL_COUNT, SC_FLOAT32, "s"}, {GRAD_COUNT, SC_FLOAT32, "w"}};
    static float g[GRAD_COUNT], s[SMALL_COUNT];
    static unsigned char sent[SMALL_COUNT];
    size_t again, k = (SMALL_COUNT + 99) / 100;
    sc_comm_hook_t hook;
    sc_reducer_t *r;
    sc_comm_t *comm;
    sc_status_t fin;

    (void)argc, (void)argv;
    CHECK(fail_realloc, "fail_worker_realloc.c is not preloaded");
    CHECK_OK(sc_comm_init_from_env(&comm));
    CHECK(sc_comm_size(comm) == 2, "needs 2 ranks");
    cfg.threads = 1;
    cfg.mode = SC_TOPK_RANDOM;
    cfg.density = 0.01;
    CHECK_OK(sc_comm_hook_topk(&cfg, &hook));
    rc.hook = &hook;
    rc.bucket_cap_bytes = 8192; /* a bucket per gradient: "w" first, then "s" */
    rc.first_bucket_bytes = 8192;
    CHECK_OK(sc_reducer_create(comm, desc, 2, &rc, &r));
    /* Random-k's bitmap for GRAD_COUNT elements (32 KiB), not SMALL_COUNT's. */
    if (fault_rank == 1)
        fail_realloc(16384);
    later_bucket_iteration(r, g, s, sent, &fin);
    CHECK(fin != SC_SUCCESS, "the iteration whose selection failed on rank 1 succeeded");
    CHECK(strstr(sc_last_error(), "finish bucket 0 ("), "bucket 0 did not fail: %s",
          sc_last_error());
    again = later_bucket_iteration(r, g, s, sent, &fin);
    CHECK(fin == SC_SUCCESS, "the next iteration failed: %s", sc_last_error());
    CHECK(again < k / 2, "bucket 1's next step drew %zu of its committed step's %zu "
          "indices again: the undo of bucket 0 took back bucket 1's draws too", again, k);
    sc_reducer_destroy(r);
    sc_comm_destroy(comm);
    return TEST_PASS;
}

int main(int argc, char **argv)
{
    static const fault_test_t tests[] = {{"first_step", test_first_step},
                                         {"later_bucket", test_later_bucket},
                                         {NULL, NULL}};
    return fault_main(tests, argc, argv);
}
