/* A collective, a send or a receive one rank refuses (a bad argument there) while its
 * peers issued theirs: the peers' call fails within a few seconds naming that rank and
 * its reason, instead of waiting out SC_TIMEOUT; a call every rank refuses, or one the
 * refusing rank issues again in time, leaves the communicator working. */
#include "fault_util.h"

#define COUNT 100
#define REFUSER 1
/* The peers' call fails this long after it last moved (SC_REFUSAL_GRACE_S, 3 s), plus
 * slack for a loaded machine: far below the tests' SC_TIMEOUT of 60 s. */
#define FAIL_WITHIN_S 10.0

static int check_sentence(const char *text, const char *what)
{
    CHECK(strstr(text, what), "the sentence '%s' does not say '%s'", text, what);
    return TEST_PASS;
}

/* The world communicator, all ranks present (a barrier), and its size. */
static int join(sc_comm_t **comm, int *size)
{
    CHECK_OK(sc_comm_init_from_env(comm));
    CHECK_OK(sc_barrier(*comm, NULL));
    *size = sc_comm_size(*comm);
    return TEST_PASS;
}

static void fill(float *v, int rank, int it)
{
    for (int i = 0; i < COUNT; i++)
        v[i] = (float)((rank + 1) * 10 + (i + it) % 7);
}

/* out, the sum over size ranks of fill's inputs of iteration it, checked element by
 * element (exact). */
static int check_sum(const float *out, int size, int it)
{
    for (int i = 0; i < COUNT; i++) {
        float want = 0.0f;
        for (int r = 0; r < size; r++)
            want += (float)((r + 1) * 10 + (i + it) % 7);
        CHECK(out[i] == want, "iteration %d: element %d is %g, expected %g", it, i,
              (double)out[i], (double)want);
    }
    return TEST_PASS;
}

/* This rank's allreduce with a NULL send buffer, refused at once. */
static int refuse_null_sendbuf(sc_comm_t *comm)
{
    float out[COUNT];

    CHECK(sc_allreduce(NULL, out, COUNT, SC_FLOAT32, SC_SUM, comm, NULL, NULL) ==
              SC_ERR_INVALID_ARG, "a NULL send buffer was not refused");
    return TEST_PASS;
}

/* An allreduce (sum) of fill's inputs of iteration it, its result checked. */
static int allreduce_checked(sc_comm_t *comm, int size, int it)
{
    float in[COUNT], out[COUNT];

    fill(in, fault_rank, it);
    CHECK_OK(sc_allreduce(in, out, COUNT, SC_FLOAT32, SC_SUM, comm, NULL, NULL));
    return check_sum(out, size, it);
}

/* argv[0]: "late" (the peers wait in their allreduce when the refusal comes), "early"
 * (the refusal comes before the peers issue theirs) or "continues" (the refusing rank
 * issues a barrier right after). The refusing rank passes a NULL send buffer and gets
 * SC_ERR_INVALID_ARG at once. Late and early: it then issues nothing for 6 s, and the
 * peers' allreduce fails with SC_ERR_MISMATCH naming it and its sentence, within
 * FAIL_WITHIN_S; its barrier after the 6 s fails with the peers' sentence. Continues:
 * its barrier meets the peers' allreduce, SC_ERR_MISMATCH on every rank, the refusing
 * rank's sentence saying what it refused. Then every rank's later calls fail with its
 * first error, and destroy returns. */
static int test_refusal_fails_the_peers_call(sc_comm_t *comm, int size, const char *mode)
{
    static float in[COUNT], out[COUNT]; /* kept until destroy, as a failed call asks */
    int continues;
    fault_error_t err;
    double t0;

    (void)size;
    mode = mode ? mode : "late";
    continues = strcmp(mode, "continues") == 0;
    fill(in, sc_comm_rank(comm), 0);
    if (fault_rank == REFUSER) {
        if (strcmp(mode, "late") == 0)
            fault_sleep(0.5);
        t0 = fault_now();
        fault_error_take(&err, sc_allreduce(NULL, out, COUNT, SC_FLOAT32, SC_SUM, comm,
                                            NULL, NULL), t0);
        CHECK(err.status == SC_ERR_INVALID_ARG, "the refused allreduce returned %s: %s",
              sc_status_string(err.status), err.text);
        CHECK(err.elapsed < 0.5, "the refusal took %.3f s", err.elapsed);
        if (check_sentence(err.text, "sendbuf is NULL") != TEST_PASS)
            return TEST_FAIL;
        if (!continues)
            fault_sleep(6.0);
        t0 = fault_now();
        fault_error_take(&err, sc_barrier(comm, NULL), t0);
    } else {
        if (strcmp(mode, "early") == 0)
            fault_sleep(0.5);
        t0 = fault_now();
        fault_error_take(&err, sc_allreduce(in, out, COUNT, SC_FLOAT32, SC_SUM, comm, NULL,
                                            NULL), t0);
    }
    CHECK(err.status == SC_ERR_MISMATCH, "the call returned %s: %s",
          sc_status_string(err.status), err.text);
    if (!continues || fault_rank == REFUSER) {
        if (check_sentence(err.text, "rank 1 refused its part of collective #") != TEST_PASS ||
            check_sentence(err.text, "sendbuf is NULL with count 100") != TEST_PASS)
            return TEST_FAIL;
    }
    if (continues && check_sentence(err.text, "called barrier #") != TEST_PASS)
        return TEST_FAIL;
    CHECK(err.elapsed < FAIL_WITHIN_S, "failed after %.3f s (SC_TIMEOUT %g s)", err.elapsed,
          fault_timeout());
    if (fault_check_later_calls_fail(comm, &err) != TEST_PASS)
        return TEST_FAIL;
    printf("rank %d: got %s after %.3f s: %s\n", fault_rank, sc_status_string(err.status),
           err.elapsed, err.text);
    return fault_check_destroy(comm, 3.0);
}

/* Every rank refuses an avg on int32 (ranks arriving at different times), then
 * reduces with sum: 20 rounds, every sum right, the communicator working at the end. */
static int test_refusal_by_every_rank_leaves_the_communicator_working(sc_comm_t *comm, int size,
                                                                      const char *mode)
{
    int32_t i32[COUNT] = {0};

    (void)mode;
    for (int it = 0; it < 20; it++) {
        fault_sleep(0.01 * ((it + fault_rank) % 3));
        CHECK(sc_allreduce(i32, i32, COUNT, SC_INT32, SC_AVG, comm, NULL, NULL) ==
                  SC_ERR_INVALID_ARG, "iteration %d: avg on int32 was not refused", it);
        if (allreduce_checked(comm, size, it) != TEST_PASS)
            return TEST_FAIL;
    }
    CHECK_OK(sc_barrier(comm, NULL));
    CHECK_OK(sc_comm_destroy(comm));
    return TEST_PASS;
}

/* The refusing rank issues the call again, right, 0.3 s after its refusal, while its
 * peers wait in theirs: the allreduce completes on every rank with the right sum, and
 * the communicator goes on (a barrier). Then the refusing rank refuses a broadcast
 * whose root the others never reach (they issue nothing in its place): the next
 * collective, a barrier every rank issues within 0.3 s, completes too. */
static int test_refusal_reissued_in_time_goes_on(sc_comm_t *comm, int size, const char *mode)
{
    float buf[COUNT] = {0};

    (void)mode;
    if (fault_rank == REFUSER) {
        if (refuse_null_sendbuf(comm) != TEST_PASS)
            return TEST_FAIL;
        fault_sleep(0.3);
    }
    if (allreduce_checked(comm, size, 0) != TEST_PASS)
        return TEST_FAIL;
    CHECK_OK(sc_barrier(comm, NULL));
    if (fault_rank == REFUSER) {
        CHECK(sc_broadcast(buf, buf, COUNT, SC_FLOAT32, size, comm, NULL, NULL) ==
                  SC_ERR_INVALID_ARG, "a root outside the communicator was not refused");
    } else {
        fault_sleep(0.3);
    }
    CHECK_OK(sc_barrier(comm, NULL));
    CHECK_OK(sc_comm_destroy(comm));
    return TEST_PASS;
}

/* The refusing rank issues the call again at once, while a third rank, which refused
 * nothing, comes 4 s late (more than the 3 s a refused call waits): the allreduce
 * completes on every rank, as it does without the refusal. */
static int test_refusal_reissued_while_a_third_rank_is_slow(sc_comm_t *comm, int size,
                                                            const char *mode)
{
    (void)mode;
    if (fault_rank == REFUSER && refuse_null_sendbuf(comm) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank == 2)
        fault_sleep(4.0);
    if (allreduce_checked(comm, size, 0) != TEST_PASS)
        return TEST_FAIL;
    CHECK_OK(sc_barrier(comm, NULL));
    CHECK_OK(sc_comm_destroy(comm));
    return TEST_PASS;
}

#define AHEAD 12

/* Every rank refuses an avg on int32 and then issues a non-blocking allreduce, 12
 * times; rank 1 stops 4 s after its first refusal, so rank 0 has refused and issued
 * all 12 when rank 1's first notice is taken: every allreduce completes, right (a
 * rank remembers the refusals of the calls it still has queued, however many). */
static int test_refusal_by_every_rank_with_one_far_behind(sc_comm_t *comm, int size,
                                                          const char *mode)
{
    static float in[AHEAD][COUNT], out[AHEAD][COUNT];
    int32_t i32[COUNT] = {0};
    sc_request_t *req[AHEAD];

    (void)mode;
    for (int k = 0; k < AHEAD; k++) {
        CHECK(sc_allreduce(i32, i32, COUNT, SC_INT32, SC_AVG, comm, NULL, NULL) ==
                  SC_ERR_INVALID_ARG, "round %d: avg on int32 was not refused", k);
        if (fault_rank == REFUSER && k == 0)
            fault_sleep(4.0);
        fill(in[k], fault_rank, k);
        CHECK_OK(sc_allreduce(in[k], out[k], COUNT, SC_FLOAT32, SC_SUM, comm, NULL, &req[k]));
    }
    for (int k = 0; k < AHEAD; k++) {
        CHECK_OK(sc_wait(req[k]));
        sc_request_free(req[k]);
        if (check_sum(out[k], size, k) != TEST_PASS)
            return TEST_FAIL;
    }
    CHECK_OK(sc_comm_destroy(comm));
    return TEST_PASS;
}

static long rss_kib(void)
{
    char line[256];
    long kib = 0;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = atol(line + 6);
    if (f)
        fclose(f);
    return kib;
}

/* 100000 calls refused in a row on rank 1 (no collective between them), then a barrier
 * on every rank: one notice for the number they all had, so the barrier is quick and
 * the memory stays (it grew by 50-900 MB, and the barrier took 8 s, when every refusal
 * sent one). */
static int test_refusals_in_a_row_send_one_notice(sc_comm_t *comm, int size, const char *mode)
{
    int32_t i32[4] = {0};
    long before;
    double t0;

    (void)size;
    (void)mode;
    before = rss_kib();
    if (fault_rank == REFUSER)
        for (int k = 0; k < 100000; k++)
            CHECK(sc_allreduce(i32, i32, 4, SC_INT32, SC_AVG, comm, NULL, NULL) ==
                      SC_ERR_INVALID_ARG, "call %d: avg on int32 was not refused", k);
    t0 = fault_now();
    CHECK_OK(sc_barrier(comm, NULL));
    CHECK(fault_now() - t0 < 2.0, "the barrier after the refusals took %.3f s",
          fault_now() - t0);
    CHECK(rss_kib() - before < 8192, "the memory grew from %ld to %ld KiB", before,
          rss_kib());
    CHECK_OK(sc_comm_destroy(comm));
    return TEST_PASS;
}

/* Large enough that a send waits for its receive (no eager completion). */
#define P2P_BIG (4 << 20)

/* A blocking send (send nonzero) or receive of P2P_BIG floats to or from peer. */
static sc_status_t p2p_big(int send, float *buf, int peer, sc_comm_t *comm)
{
    return send ? sc_send(buf, P2P_BIG, SC_FLOAT32, peer, comm, NULL, NULL)
                : sc_recv(buf, P2P_BIG, SC_FLOAT32, peer, comm, NULL, NULL);
}

/* argv[0]: "send" (rank 1 refuses its send to rank 0: a NULL buffer) or "recv" (rank 0
 * refuses its receive from rank 1, and rank 1's send of 16 MiB waits for it); "early"
 * after it: the refusal comes before the peer's call. The refusing rank issues nothing
 * for 6 s; the peer's call fails with SC_ERR_MISMATCH naming the rank, the call and its
 * sentence, within FAIL_WITHIN_S (SC_TIMEOUT 60 s); then every rank's later calls fail
 * with the first error, and destroy returns. */
static int test_p2p_refusal_fails_the_peers_call(sc_comm_t *comm, int size, const char *mode)
{
    static float buf[P2P_BIG]; /* kept until destroy, as a failed call asks */
    int refuse_send = strncmp(mode ? mode : "send", "send", 4) == 0;
    int early = mode && strstr(mode, "early") != NULL;
    int refuser = refuse_send ? 1 : 0, peer = 1 - fault_rank;
    fault_error_t err;
    double t0;

    (void)size;
    if (fault_rank == refuser) {
        if (!early)
            fault_sleep(0.5);
        t0 = fault_now();
        fault_error_take(&err, p2p_big(refuse_send, NULL, peer, comm), t0);
        CHECK(err.status == SC_ERR_INVALID_ARG, "the refused call returned %s: %s",
              sc_status_string(err.status), err.text);
        fault_sleep(6.0);
        t0 = fault_now();
        fault_error_take(&err, sc_barrier(comm, NULL), t0);
    } else {
        if (early)
            fault_sleep(0.5);
        t0 = fault_now();
        fault_error_take(&err, p2p_big(!refuse_send, buf, peer, comm), t0);
        CHECK(err.elapsed < FAIL_WITHIN_S, "failed after %.3f s (SC_TIMEOUT %g s)",
              err.elapsed, fault_timeout());
        if (check_sentence(err.text, refuse_send ? "it issued no send in its place"
                                                 : "it issued no receive in its place") !=
            TEST_PASS)
            return TEST_FAIL;
    }
    CHECK(err.status == SC_ERR_MISMATCH, "the call returned %s: %s",
          sc_status_string(err.status), err.text);
    if (check_sentence(err.text, refuse_send ? "rank 1 refused its send #"
                                             : "rank 0 refused its receive #") !=
            TEST_PASS ||
        check_sentence(err.text, refuse_send ? "sendbuf is NULL" : "recvbuf is NULL") !=
            TEST_PASS)
        return TEST_FAIL;
    if (fault_check_later_calls_fail(comm, &err) != TEST_PASS)
        return TEST_FAIL;
    printf("rank %d: got %s after %.3f s: %s\n", fault_rank, sc_status_string(err.status),
           err.elapsed, err.text);
    return fault_check_destroy(comm, 3.0);
}

/* n floats from rank `from`, message it: checked element by element. */
static int check_message(const float *v, int n, int from, int it)
{
    for (int i = 0; i < n; i++)
        CHECK(v[i] == (float)(from * 1000 + it + i % 13), "message %d: element %d is %g", it,
              i, (double)v[i]);
    return TEST_PASS;
}

static void fill_message(float *v, int n, int it)
{
    for (int i = 0; i < n; i++)
        v[i] = (float)(fault_rank * 1000 + it + i % 13);
}

/* Rank 1 refuses its send to rank 0, then sends after all 0.3 s later ("reissued"), or
 * rank 0 refuses its receive as well ("both", each then issues the right call): the
 * message arrives whole, and more messages and a barrier after it. Large messages, so
 * that the send waits for the receive. */
static int test_p2p_refusal_reissued_goes_on(sc_comm_t *comm, int size, const char *mode)
{
    static float buf[P2P_BIG];
    int both = mode && strcmp(mode, "both") == 0;

    (void)size;
    for (int it = 0; it < 3; it++) {
        if (fault_rank == 1) {
            if (it == 0) {
                CHECK(sc_send(NULL, P2P_BIG, SC_FLOAT32, 0, comm, NULL, NULL) ==
                          SC_ERR_INVALID_ARG, "a NULL send buffer was not refused");
                fault_sleep(0.3);
            }
            fill_message(buf, P2P_BIG, it);
            CHECK_OK(sc_send(buf, P2P_BIG, SC_FLOAT32, 0, comm, NULL, NULL));
        } else {
            if (it == 0 && both)
                CHECK(sc_recv(NULL, P2P_BIG, SC_FLOAT32, 1, comm, NULL, NULL) ==
                          SC_ERR_INVALID_ARG, "a NULL receive buffer was not refused");
            if (it == 0 && both)
                fault_sleep(4.0); /* past the grace: rank 1's send waits for this one */
            CHECK_OK(sc_recv(buf, P2P_BIG, SC_FLOAT32, 1, comm, NULL, NULL));
            if (check_message(buf, P2P_BIG, 1, it) != TEST_PASS)
                return TEST_FAIL;
        }
    }
    CHECK_OK(sc_barrier(comm, NULL));
    CHECK_OK(sc_comm_destroy(comm));
    return TEST_PASS;
}

/* One rank: its send to itself refused, then a receive from itself fails within
 * FAIL_WITHIN_S naming the refusal (it would wait out SC_TIMEOUT). */
static int test_p2p_refusal_to_itself(sc_comm_t *comm, int size, const char *mode)
{
    static float buf[16];
    sc_request_t *req;
    fault_error_t err;
    double t0;

    (void)size;
    (void)mode;
    CHECK(sc_send(NULL, 16, SC_FLOAT32, sc_comm_rank(comm), comm, NULL, NULL) ==
              SC_ERR_INVALID_ARG, "a NULL send buffer was not refused");
    t0 = fault_now();
    CHECK_OK(sc_recv(buf, 16, SC_FLOAT32, sc_comm_rank(comm), comm, NULL, &req));
    fault_error_take(&err, sc_wait(req), t0);
    sc_request_free(req);
    CHECK(err.status == SC_ERR_MISMATCH, "the receive returned %s: %s",
          sc_status_string(err.status), err.text);
    CHECK(err.elapsed < FAIL_WITHIN_S, "failed after %.3f s", err.elapsed);
    if (check_sentence(err.text, "refused its send #") != TEST_PASS)
        return TEST_FAIL;
    return fault_check_destroy(comm, 3.0);
}

/* Each test runs on the world communicator, every rank present; argv[0], if given, is
 * its mode. */
#define REFUSED_TEST(fn)                                                                 \
    static int fn##_joined(int argc, char **argv)                                        \
    {                                                                                    \
        sc_comm_t *comm;                                                                 \
        int size;                                                                        \
        if (join(&comm, &size) != TEST_PASS)                                             \
            return TEST_FAIL;                                                            \
        return fn(comm, size, argc > 0 ? argv[0] : NULL);                                \
    }
REFUSED_TEST(test_refusal_fails_the_peers_call)
REFUSED_TEST(test_refusal_by_every_rank_leaves_the_communicator_working)
REFUSED_TEST(test_refusal_reissued_in_time_goes_on)
REFUSED_TEST(test_refusal_reissued_while_a_third_rank_is_slow)
REFUSED_TEST(test_refusal_by_every_rank_with_one_far_behind)
REFUSED_TEST(test_refusals_in_a_row_send_one_notice)
REFUSED_TEST(test_p2p_refusal_fails_the_peers_call)
REFUSED_TEST(test_p2p_refusal_reissued_goes_on)
REFUSED_TEST(test_p2p_refusal_to_itself)

int main(int argc, char **argv)
{
    static const fault_test_t tests[] = {
        {"fails_the_peers_call", test_refusal_fails_the_peers_call_joined},
        {"by_every_rank_leaves_the_communicator_working",
         test_refusal_by_every_rank_leaves_the_communicator_working_joined},
        {"reissued_in_time_goes_on", test_refusal_reissued_in_time_goes_on_joined},
        {"reissued_while_a_third_rank_is_slow",
         test_refusal_reissued_while_a_third_rank_is_slow_joined},
        {"by_every_rank_with_one_far_behind",
         test_refusal_by_every_rank_with_one_far_behind_joined},
        {"in_a_row_send_one_notice", test_refusals_in_a_row_send_one_notice_joined},
        {"p2p_fails_the_peers_call", test_p2p_refusal_fails_the_peers_call_joined},
        {"p2p_reissued_goes_on", test_p2p_refusal_reissued_goes_on_joined},
        {"p2p_to_itself", test_p2p_refusal_to_itself_joined},
        {NULL, NULL}};
    return fault_main(tests, argc, argv);
}
