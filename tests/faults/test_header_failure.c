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
 * Usage (under scrun, 2 ranks, with the shim preloaded): test_header_failure send |
 * compressed_dense_step */
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

int main(int argc, char **argv)
{
    static const fault_test_t tests[] = {{"send", test_send},
                                         {"compressed_dense_step", test_compressed_dense_step},
                                         {NULL, NULL}};
    return fault_main(tests, argc, argv);
}
