/* The host half of a host-staged device collective, without a GPU: a thread stands in
 * for the CUDA stream. As on a GPU, the host op is queued at call time behind a gate;
 * the "stream" writes the input into the staging buffer (the device-to-host copy),
 * opens the gate and waits passively for the op, as the host function does.
 *   input_written_before_the_gate_opens_is_used   (2 ranks, 8 B inline and 1 MiB ring)
 *   stream_never_reaching_the_call_fails_every_rank   (rank 0's stream is blocked)
 *   peer_never_issuing_fails_every_rank               (rank 1 issues nothing) */
#include <pthread.h>

#include "collectives/call.h"
#include "core/comm_internal.h"
#include "core/progress.h"
#include "fault_util.h"

typedef struct {
    sc_comm_t *comm;
    struct sc_request req;
    int gate;
    float *stage;
    size_t count;
    double delay_s;     /* before the "copy"; < 0: the stream never gets there */
    float value;        /* what the "copy" writes */
    pthread_t thread;
} sim_op_t;

/* The stream: the copy into staging memory, then the host function. */
static void *sim_stream(void *arg)
{
    sim_op_t *s = arg;

    if (s->delay_s < 0)
        return NULL;
    fault_sleep(s->delay_s);
    for (size_t i = 0; i < s->count; i++)
        s->stage[i] = s->value;
    __atomic_store_n(&s->gate, 1, __ATOMIC_RELEASE);
    sc_progress_kick(s->comm->tp);
    sc_request_wait_passive(&s->req);
    return NULL;
}

/* Issues an in-place allreduce sum of count floats on staging memory behind a gate
 * and starts its stream thread. */
static int sim_issue(sim_op_t *s, sc_comm_t *comm, size_t count, double delay_s, float value)
{
    sc_call_t call = {SC_COLL_ALLREDUCE, NULL, NULL, count, SC_FLOAT32, SC_SUM, 0, 0.0, 0};

    s->comm = comm;
    s->gate = 0;
    s->count = count;
    s->delay_s = delay_s;
    s->value = value;
    s->stage = malloc(count * sizeof(float));
    CHECK(s->stage, "out of memory");
    for (size_t i = 0; i < count; i++)
        s->stage[i] = -1.0f; /* stale staging memory */
    call.sbuf = call.rbuf = s->stage;
    CHECK_OK(sc_call_enqueue_host(&call, comm, &s->req, &s->gate, 0, NULL, 0));
    CHECK(pthread_create(&s->thread, NULL, sim_stream, s) == 0, "thread");
    return 0;
}

static int input_written_before_the_gate_opens_is_used(int argc, char **argv)
{
    size_t counts[2] = {2, 1 << 18};
    sc_comm_t *comm;
    sim_op_t s[2];

    (void)argc, (void)argv;
    CHECK_OK(sc_comm_init_from_env(&comm));
    for (int k = 0; k < 2; k++)
        if (sim_issue(&s[k], comm, counts[k], 0.05 * (k + 1), (float)(fault_rank + 1)))
            return TEST_FAIL;
    for (int k = 0; k < 2; k++) {
        CHECK(pthread_join(s[k].thread, NULL) == 0, "join");
        CHECK(s[k].req.done && s[k].req.status == SC_SUCCESS, "op %d: %s: %s", k,
              sc_status_string(s[k].req.status), s[k].req.text);
        for (size_t i = 0; i < s[k].count; i++)
            CHECK(s[k].stage[i] == 3.0f, "op %d element %zu is %g, expected 3 (1 + 2)", k, i,
                  (double)s[k].stage[i]);
        free(s[k].stage);
    }
    CHECK_OK(sc_comm_destroy(comm));
    return TEST_PASS;
}

static int stream_never_reaching_the_call_fails_every_rank(int argc, char **argv)
{
    double t0 = fault_now(), timeout = fault_timeout();
    sc_comm_t *comm;
    sim_op_t s;

    (void)argc, (void)argv;
    CHECK_OK(sc_comm_init_from_env(&comm));
    if (sim_issue(&s, comm, 1024, fault_rank == 0 ? -1.0 : 0.0, 1.0f))
        return TEST_FAIL;
    if (fault_rank == 0) {
        sc_request_wait_passive(&s.req);
    } else {
        CHECK(pthread_join(s.thread, NULL) == 0, "join");
    }
    /* Rank 0's gate and rank 1's wait for rank 0's header time out together: either
     * sentence may reach a rank first. */
    CHECK(s.req.status == SC_ERR_TIMEOUT || s.req.status == SC_ERR_PEER_FAILED,
          "expected a timeout, got %s: %s", sc_status_string(s.req.status), s.req.text);
    CHECK(strstr(s.req.text, "stream") || strstr(s.req.text, "rank 0"),
          "the sentence names neither the stream nor rank 0: %s", s.req.text);
    CHECK(fault_now() - t0 < 3 * timeout + 2, "the error took %.1f s", fault_now() - t0);
    if (fault_rank == 0)
        pthread_join(s.thread, NULL);
    free(s.stage);
    sc_comm_destroy(comm);
    return TEST_PASS;
}

static int peer_never_issuing_fails_every_rank(int argc, char **argv)
{
    double timeout = fault_timeout(), t0;
    sc_comm_t *comm;
    sim_op_t s;
    float x = 0;
    sc_status_t st;

    (void)argc, (void)argv;
    CHECK_OK(sc_comm_init_from_env(&comm));
    t0 = fault_now();
    if (fault_rank == 0) {
        if (sim_issue(&s, comm, 1024, 0.0, 1.0f))
            return TEST_FAIL;
        CHECK(pthread_join(s.thread, NULL) == 0, "join");
        CHECK(s.req.status == SC_ERR_TIMEOUT, "expected SC_ERR_TIMEOUT, got %s: %s",
              sc_status_string(s.req.status), s.req.text);
        CHECK(fault_now() - t0 < 2 * timeout + 2, "the timeout took %.1f s", fault_now() - t0);
        free(s.stage);
    } else {
        fault_sleep(2 * timeout + 1);
        st = sc_allreduce(&x, &x, 1, SC_FLOAT32, SC_SUM, comm, NULL, NULL);
        CHECK(st != SC_SUCCESS, "a call after the peer's timeout succeeded");
    }
    sc_comm_destroy(comm);
    return TEST_PASS;
}

int main(int argc, char **argv)
{
    static const fault_test_t tests[] = {
        {"input_written_before_the_gate_opens_is_used",
         input_written_before_the_gate_opens_is_used},
        {"stream_never_reaching_the_call_fails_every_rank",
         stream_never_reaching_the_call_fails_every_rank},
        {"peer_never_issuing_fails_every_rank", peer_never_issuing_fails_every_rank},
        {NULL, NULL}};
    return fault_main(tests, argc, argv);
}
