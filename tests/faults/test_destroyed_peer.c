/* A communicator destroyed on one rank while the process lives on (a split, here): its
 * peers' calls that need the rank past what it joined fail at once with
 * SC_ERR_PEER_FAILED, naming the rank and its sc_comm_destroy, where they waited
 * SC_TIMEOUT and then said that rank never issued its matching call; the communicator
 * itself does not fail. The last world rank destroys the split; the others:
 *
 * waiting: are in an allreduce on it when the notice arrives (issued at once);
 * later: issue their allreduce 1 s after it arrived;
 *   then, in both, later collectives repeat the error, while what needs no such rank
 *   still works on the split (sc_info_print_transports, a send to itself, a send
 *   between two live ranks on 3 ranks) and the world sums;
 * p2p (2 ranks): rank 1 sends rank 0 two messages before it destroys the split; rank 0
 *   receives both 1 s later (the sends it completed go on), its third receive fails,
 *   and a send to itself and its receive still deliver (they do not need rank 1);
 * every_rank_destroys: every rank destroys each of 20 splits right after an allreduce
 *   on it, then the world, and exits: no error, no delay (and no UCX warning: the
 *   CTest entries fail on one);
 * notice_behind_a_full_socket (2 ranks, over TCP with small socket buffers): rank 1
 *   stops itself (SIGSTOP); rank 0 fills their connection with sends on the world that
 *   rank 1 cannot take yet, destroys the split, whose notice UCX then holds unsent past
 *   the destroy's cancel, and resumes rank 1; rank 1 takes the sends and its barrier
 *   on the split fails at once naming rank 0's destroy. The destroy freed the notice
 *   while UCX still held its send, and UCX read it once the connection drained: a
 *   heap-use-after-free under ASan (the fault stage of scripts/test.sh), otherwise a
 *   notice of freed bytes (MALLOC_PERTURB_'s, in the CTest entry) that rank 1 did not
 *   take for one, its barrier timing out after SC_TIMEOUT.
 * mid_transfer DELAY (3 ranks, ring by rendezvous: SC_STAGE_BYTES=0): ranks 0 and 1 run
 *   a 64 MiB allreduce on the split, which rank 2 destroys DELAY seconds later without
 *   issuing it; their allreduce fails naming rank 2's destroy, and then an allreduce on
 *   the world and 1 MiB from rank 0 to rank 1, on the world and on the split, succeed
 *   with the exact data within 2 s. The failed allreduce closed the connections its
 *   rendezvous were still using (rank 1's sends to rank 2, rank 0's to rank 1), which
 *   the world and every split share: the calls after it failed with "the connection to
 *   rank 1 was closed after allreduce #1 failed with data in flight to or from it".
 *
 * mid_transfer_idle OLD DELAY IDLE (3 ranks, as mid_transfer): rank 2 first destroys OLD
 *   other splits before its peers (its drained ids) and holds rank 1's message on the
 *   world unreceived (the oldest message its UCX holds); then, as in mid_transfer, it
 *   destroys the split while ranks 0 and 1 are in the allreduce, and makes no call for
 *   IDLE seconds (only its progress thread runs), then takes the message; ranks 0 and
 *   1's allreduce fails within 2 s, and an allreduce on the world then succeeds with
 *   the exact data. An idle rank scans only as UCX events come, and looked at one
 *   drained id a scan besides the oldest message's: rank 1's rendezvous sends to rank 2,
 *   announced before the destroy, stayed undropped, and rank 1's allreduce failed only
 *   when it gave them up after SC_OP_SETTLE_S (5.2 s), closing the connection 1-2.
 *   Rank 2 uses less than a tenth of IDLE in CPU meanwhile. Over TCP its progress
 *   thread, woken by a socket UCX reports as armed while unread, went back to sleep
 *   without a progress call: poll returned at once, again and again (a core spun),
 *   and nothing moved until rank 2's next call, its peers' allreduce failing only then
 *   (after IDLE, or after SC_OP_SETTLE_S with the connection 1-2 closed).
 *
 * rendezvous_send_to_idle (2 ranks): rank 1 sends rank 0 4 MiB on the split (a
 *   rendezvous: its announcement waits in rank 0's UCX queue, unreceived), and rank 0
 *   destroys the split 0.2 s later and makes no call for 1.5 s; rank 1's send fails
 *   naming the destroy within 1 s. The destroy drains the id, but only a scan drops
 *   what already waits of it, and an idle rank scans only as UCX events come: one came
 *   only where the destroy's flush of its notices happened to end on a scan. A flush
 *   that saw the notices gone after a step without one (a first version of 17e9b86)
 *   left the announcement to rank 0's next call, its barrier after the 1.5 s (the
 *   send failed after 1.7 s; with no call, after SC_OP_SETTLE_S: 5.3 s).
 *
 * Usage (under scrun): test_destroyed_peer waiting|later|p2p|every_rank_destroys|
 *                      notice_behind_a_full_socket|mid_transfer DELAY|
 *                      mid_transfer_idle OLD DELAY IDLE|rendezvous_send_to_idle */
#include <signal.h>

#include "../common/sc_proc_state.h"
#include "fault_util.h"

/* The sentence of a call that the destroyed rank `gone` never joined. */
static int check_gone_error(sc_status_t st, double t0, int gone, fault_error_t *err)
{
    char name[128];

    fault_error_take(err, st, t0);
    snprintf(name, sizeof(name), "rank %d destroyed the communicator (sc_comm_destroy on "
             "rank %d)", gone, gone);
    CHECK(err->status == SC_ERR_PEER_FAILED, "returned %s (%s), expected SC_ERR_PEER_FAILED",
          sc_status_string(err->status), err->text);
    CHECK(strstr(err->text, name), "the sentence '%s' does not say '%s'", err->text, name);
    CHECK(err->elapsed < 5.0 && err->elapsed < fault_timeout() / 4,
          "the error took %.2f s (SC_TIMEOUT %.1f)", err->elapsed, fault_timeout());
    return TEST_PASS;
}

/* The split destroyed promptly on a peer of the rank that destroyed it (sub NULL: this
 * rank destroyed it), then the world, once every rank got there. */
static int end_split_and_world(sc_comm_t *sub, sc_comm_t *world)
{
    if (sub && fault_check_destroy(sub, 1.0) != TEST_PASS)
        return TEST_FAIL;
    CHECK_OK(sc_barrier(world, NULL));
    CHECK_OK(sc_comm_destroy(world));
    return TEST_PASS;
}

/* On a split that rank `gone` destroyed, what needs no such rank still works: the
 * transports printed, a send to itself, a send from rank 0 to rank 1 where neither left. */
static int check_peerless_calls(sc_comm_t *sub, int rank, int gone)
{
    FILE *devnull = fopen("/dev/null", "w");
    int32_t msg = -1, mine = 100 + rank;
    sc_status_t st;

    CHECK(devnull, "/dev/null could not be opened");
    st = sc_info_print_transports(sub, devnull);
    fclose(devnull);
    CHECK(st == SC_SUCCESS, "sc_info_print_transports returned %s: %s", sc_status_string(st),
          sc_last_error());
    CHECK_OK(sc_send(&mine, 1, SC_INT32, rank, sub, NULL, NULL));
    CHECK_OK(sc_recv(&msg, 1, SC_INT32, rank, sub, NULL, NULL));
    CHECK(msg == mine, "the message to itself arrived as %d, sent %d", msg, mine);
    if (gone >= 2 && rank == 0) {
        CHECK_OK(sc_send(&mine, 1, SC_INT32, 1, sub, NULL, NULL));
    } else if (gone >= 2 && rank == 1) {
        CHECK_OK(sc_recv(&msg, 1, SC_INT32, 0, sub, NULL, NULL));
        CHECK(msg == 100, "rank 0's message arrived as %d, sent 100", msg);
    }
    return TEST_PASS;
}

/* The last rank destroys its split after one allreduce on it; the others issue their
 * next allreduce after `delay` seconds. */
static int run_destroy(double delay)
{
    sc_comm_t *world, *sub;
    float in[4] = {1, 2, 3, 4}, out[4] = {0};
    fault_error_t err;
    int rank, last;
    double t0;

    CHECK_OK(sc_comm_init_from_env(&world));
    rank = sc_comm_rank(world);
    last = sc_comm_size(world) - 1;
    CHECK_OK(sc_comm_split(world, 0, rank, &sub));
    CHECK_OK(sc_allreduce(in, out, 4, SC_FLOAT32, SC_SUM, sub, NULL, NULL));
    CHECK(out[3] == 4.0f * (float)(last + 1), "the allreduce before gave %g", out[3]);
    if (rank == last) {
        CHECK_OK(sc_comm_destroy(sub));
    } else {
        if (delay > 0)
            fault_sleep(delay);
        t0 = fault_now();
        memset(out, 0, sizeof(out));
        if (check_gone_error(sc_allreduce(in, out, 4, SC_FLOAT32, SC_SUM, sub, NULL, NULL),
                             t0, last, &err) != TEST_PASS)
            return TEST_FAIL;
        CHECK(strstr(err.text, "collective #1 or a later one"),
              "the sentence '%s' does not name the first collective it never joins",
              err.text);
        if (fault_check_later_calls_fail(sub, &err) != TEST_PASS ||
            check_peerless_calls(sub, rank, last) != TEST_PASS)
            return TEST_FAIL;
    }
    CHECK_OK(sc_allreduce(in, out, 4, SC_FLOAT32, SC_SUM, world, NULL, NULL));
    CHECK(out[3] == 4.0f * (float)(last + 1), "the world's allreduce after gave %g", out[3]);
    return end_split_and_world(rank != last ? sub : NULL, world);
}

static int test_waiting(int argc, char **argv)
{
    (void)argc, (void)argv;
    return run_destroy(0.0);
}

static int test_later(int argc, char **argv)
{
    (void)argc, (void)argv;
    return run_destroy(1.0);
}

static int test_p2p(int argc, char **argv)
{
    sc_comm_t *world, *sub;
    int32_t msg[2] = {0, 0};
    fault_error_t err;
    int rank;
    double t0;

    (void)argc, (void)argv;
    CHECK_OK(sc_comm_init_from_env(&world));
    rank = sc_comm_rank(world);
    CHECK(sc_comm_size(world) == 2, "needs 2 ranks");
    CHECK_OK(sc_comm_split(world, 0, rank, &sub));
    if (rank == 1) {
        for (int32_t i = 0; i < 2; i++)
            CHECK_OK(sc_send(&i, 1, SC_INT32, 0, sub, NULL, NULL));
        CHECK_OK(sc_comm_destroy(sub));
    } else {
        fault_sleep(1.0);
        for (int i = 0; i < 2; i++) {
            msg[i] = -1;
            CHECK_OK(sc_recv(&msg[i], 1, SC_INT32, 1, sub, NULL, NULL));
        }
        CHECK(msg[0] == 0 && msg[1] == 1, "received %d and %d, expected 0 and 1", msg[0],
              msg[1]);
        t0 = fault_now();
        if (check_gone_error(sc_recv(msg, 1, SC_INT32, 1, sub, NULL, NULL), t0, 1, &err) !=
            TEST_PASS)
            return TEST_FAIL;
        CHECK(strstr(err.text, "past the 2 sends and 0 receives"),
              "the sentence '%s' does not count its sends and receives", err.text);
        if (check_peerless_calls(sub, rank, 1) != TEST_PASS)
            return TEST_FAIL;
    }
    return end_split_and_world(rank == 0 ? sub : NULL, world);
}

static int test_every_rank_destroys(int argc, char **argv)
{
    sc_comm_t *world, *sub;
    float in[4] = {1, 2, 3, 4}, out[4];
    int rank, size, slow = 0;
    double slowest = 0;

    (void)argc, (void)argv;
    CHECK_OK(sc_comm_init_from_env(&world));
    rank = sc_comm_rank(world);
    size = sc_comm_size(world);
    /* A destroy that waited for its notices (up to 0.5 s each) would be slow every time;
     * a loaded machine (8 ranks on 2 cores) makes one now and then late by itself. */
    for (int i = 0; i < 20; i++) {
        double t0, took;

        CHECK_OK(sc_comm_split(world, 0, rank, &sub));
        CHECK_OK(sc_allreduce(in, out, 4, SC_FLOAT32, SC_SUM, sub, NULL, NULL));
        CHECK(out[0] == (float)size, "split %d: the allreduce gave %g", i, out[0]);
        t0 = fault_now();
        CHECK_OK(sc_comm_destroy(sub));
        took = fault_now() - t0;
        slow += took >= 0.25;
        slowest = took > slowest ? took : slowest;
    }
    CHECK(slow <= 3, "%d of 20 sc_comm_destroy calls took 0.25 s or more (the slowest "
          "%.3f s)", slow, slowest);
    CHECK_OK(sc_allreduce(in, out, 4, SC_FLOAT32, SC_SUM, world, NULL, NULL));
    CHECK(out[3] == 4.0f * (float)size, "the world's allreduce gave %g", out[3]);
    CHECK_OK(sc_comm_destroy(world));
    return TEST_PASS;
}

/* Sends of NOTICE_MSG_BYTES each that fill a connection whose send buffer is 4 KiB and
 * receive buffer 32 KiB (the CTest entry's UCX_TCP_SNDBUF and UCX_TCP_RCVBUF), and
 * more: on this kernel 16 of them did not, 32 did. */
#define NOTICE_MSGS 64
#define NOTICE_MSG_BYTES 4096

static int test_notice_behind_a_full_socket(int argc, char **argv)
{
    static uint8_t msgs[NOTICE_MSGS][NOTICE_MSG_BYTES];
    sc_request_t *reqs[NOTICE_MSGS];
    sc_comm_t *world, *sub;
    int32_t mine = (int32_t)getpid(), pids[2];
    double t0;
    fault_error_t err;

    (void)argc;
    (void)argv;
    CHECK_OK(sc_comm_init_from_env(&world));
    CHECK(sc_comm_size(world) == 2, "this test runs on 2 ranks, not %d", sc_comm_size(world));
    CHECK_OK(sc_allgather(&mine, pids, 1, SC_INT32, world, NULL, NULL));
    CHECK_OK(sc_comm_split(world, 0, fault_rank, &sub));
    if (fault_rank == 1) {
        raise(SIGSTOP);
        for (int i = 0; i < NOTICE_MSGS; i++)
            CHECK_OK(sc_recv(msgs[i], NOTICE_MSG_BYTES, SC_UINT8, 0, world, NULL, &reqs[i]));
        for (int i = 0; i < NOTICE_MSGS; i++) {
            CHECK_OK(sc_wait(reqs[i]));
            sc_request_free(reqs[i]);
            CHECK(msgs[i][0] == (uint8_t)i && msgs[i][NOTICE_MSG_BYTES - 1] == (uint8_t)i,
                  "message %d came with %u, expected %d", i, msgs[i][0], i);
        }
        t0 = fault_now();
        if (check_gone_error(sc_barrier(sub, NULL), t0, 0, &err) != TEST_PASS)
            return TEST_FAIL;
        return end_split_and_world(sub, world);
    }
    t0 = fault_now();
    while (!sc_test_process_stopped(pids[1]))
        CHECK(fault_now() - t0 < 10.0, "rank 1 (pid %d) did not stop within 10 s", pids[1]);
    for (int i = 0; i < NOTICE_MSGS; i++) {
        memset(msgs[i], i, NOTICE_MSG_BYTES);
        CHECK_OK(sc_send(msgs[i], NOTICE_MSG_BYTES, SC_UINT8, 1, world, NULL, &reqs[i]));
    }
    fault_sleep(0.2);
    if (fault_check_destroy(sub, 2.0) != TEST_PASS)
        return TEST_FAIL;
    CHECK(kill((pid_t)pids[1], SIGCONT) == 0, "SIGCONT to pid %d failed", pids[1]);
    for (int i = 0; i < NOTICE_MSGS; i++) {
        CHECK_OK(sc_wait(reqs[i]));
        sc_request_free(reqs[i]);
    }
    return end_split_and_world(NULL, world);
}

/* The split's allreduce: 64 MiB of float32, its ring's messages by rendezvous. */
#define MID_FLOATS (16u * 1024 * 1024)
/* The calls after it: 1 MiB, by rendezvous too. */
#define MID_AFTER_FLOATS (256u * 1024)

static float mid_value(int rank, size_t i)
{
    return (float)((rank + 1) * 10 + (int)(i % 7));
}

static void mid_fill(float *v, size_t n, int rank)
{
    for (size_t i = 0; i < n; i++)
        v[i] = mid_value(rank, i);
}

/* A 1 MiB allreduce (sum) on the world, each element checked. */
static int mid_world_allreduce(sc_comm_t *world, float *in, float *out)
{
    int size = sc_comm_size(world);

    mid_fill(in, MID_AFTER_FLOATS, fault_rank);
    CHECK_OK(sc_allreduce(in, out, MID_AFTER_FLOATS, SC_FLOAT32, SC_SUM, world, NULL, NULL));
    for (size_t i = 0; i < MID_AFTER_FLOATS; i++) {
        float want = 0.0f;
        for (int r = 0; r < size; r++)
            want += mid_value(r, i);
        CHECK(out[i] == want, "the world's allreduce: element %zu is %g, expected %g", i,
              (double)out[i], (double)want);
    }
    return TEST_PASS;
}

/* 1 MiB from rank 0 to rank 1 on comm, each element checked. */
static int mid_message(sc_comm_t *comm, float *in, float *out, const char *what)
{
    if (fault_rank == 0) {
        mid_fill(in, MID_AFTER_FLOATS, 0);
        CHECK_OK(sc_send(in, MID_AFTER_FLOATS, SC_FLOAT32, 1, comm, NULL, NULL));
        return TEST_PASS;
    }
    memset(out, 0, MID_AFTER_FLOATS * sizeof(float));
    CHECK_OK(sc_recv(out, MID_AFTER_FLOATS, SC_FLOAT32, 0, comm, NULL, NULL));
    for (size_t i = 0; i < MID_AFTER_FLOATS; i++)
        CHECK(out[i] == mid_value(0, i), "%s: element %zu is %g, expected %g", what, i,
              (double)out[i], (double)mid_value(0, i));
    return TEST_PASS;
}

/* The world of the 3 ranks these tests run on. */
static int mid_world(sc_comm_t **world)
{
    CHECK_OK(sc_comm_init_from_env(world));
    CHECK(sc_comm_size(*world) == 3, "this test runs on 3 ranks, not %d",
          sc_comm_size(*world));
    return TEST_PASS;
}

/* The end of these tests: an allreduce on the world, exact; the split (which rank 2
 * destroyed) and the world destroyed; the buffers freed. */
static int mid_end(sc_comm_t *world, sc_comm_t *sub, float *in, float *out)
{
    if (mid_world_allreduce(world, in, out) != TEST_PASS ||
        end_split_and_world(fault_rank < 2 ? sub : NULL, world) != TEST_PASS)
        return TEST_FAIL;
    free(in);
    free(out);
    return TEST_PASS;
}

/* Ranks 0 and 1's 64 MiB allreduce on sub, which rank 2 destroys meanwhile without
 * issuing it: it fails naming the destroy and the allreduce (#1), within 2 s. */
static int mid_allreduce_fails(sc_comm_t *sub, float *in, float *out)
{
    sc_request_t *req = NULL;
    fault_error_t err;
    double t0;

    mid_fill(in, MID_FLOATS, fault_rank);
    t0 = fault_now();
    CHECK_OK(sc_allreduce(in, out, MID_FLOATS, SC_FLOAT32, SC_SUM, sub, NULL, &req));
    if (check_gone_error(sc_wait(req), t0, 2, &err) != TEST_PASS)
        return TEST_FAIL;
    sc_request_free(req);
    CHECK(strstr(err.text, "collective #1 or a later one"),
          "the sentence '%s' does not name the allreduce (#1)", err.text);
    /* Its transfers settled at once, not after SC_OP_SETTLE_S (5 s). */
    CHECK(err.elapsed < 2.0, "the allreduce took %.2f s to fail", err.elapsed);
    return TEST_PASS;
}

static int test_mid_transfer(int argc, char **argv)
{
    /* Kept to the end: a failed call's buffers may still be read. */
    float *in = calloc(MID_FLOATS, sizeof(float)), *out = calloc(MID_FLOATS, sizeof(float));
    sc_comm_t *world, *sub;
    double t0;

    CHECK(argc == 1, "usage: mid_transfer DELAY");
    CHECK(in && out, "out of memory");
    if (mid_world(&world) != TEST_PASS)
        return TEST_FAIL;
    CHECK_OK(sc_comm_split(world, 0, fault_rank, &sub));
    CHECK_OK(sc_barrier(sub, NULL));
    if (fault_rank == 2) {
        fault_sleep(atof(argv[0]));
        CHECK_OK(sc_comm_destroy(sub));
    } else if (mid_allreduce_fails(sub, in, out) != TEST_PASS) {
        return TEST_FAIL;
    }
    t0 = fault_now();
    if (mid_world_allreduce(world, in, out) != TEST_PASS ||
        (fault_rank < 2 && (mid_message(world, in, out, "the world's message") != TEST_PASS ||
                            mid_message(sub, in, out, "the split's message") != TEST_PASS)))
        return TEST_FAIL;
    CHECK(fault_now() - t0 < 2.0, "the calls after the failure took %.2f s",
          fault_now() - t0);
    return mid_end(world, sub, in, out);
}

/* OLD splits of world destroyed on rank 2 before the others: rank 2 told them, and
 * drains each id for a while. */
static int idle_old_splits(sc_comm_t *world, int old)
{
    sc_comm_t **olds = calloc((size_t)old, sizeof(*olds));

    CHECK(olds || old == 0, "out of memory");
    for (int k = 0; k < old; k++)
        CHECK_OK(sc_comm_split(world, 0, fault_rank, &olds[k]));
    if (fault_rank != 2)
        CHECK_OK(sc_barrier(world, NULL));
    for (int k = 0; k < old; k++)
        CHECK_OK(sc_comm_destroy(olds[k]));
    if (fault_rank == 2)
        CHECK_OK(sc_barrier(world, NULL));
    free(olds);
    return TEST_PASS;
}

static int test_mid_transfer_idle(int argc, char **argv)
{
    /* Kept to the end: a failed call's buffers may still be read. */
    float *in = calloc(MID_FLOATS, sizeof(float)), *out = calloc(MID_FLOATS, sizeof(float));
    int32_t held[4] = {7, 8, 9, 10}, got[4] = {0};
    sc_comm_t *world, *sub;

    CHECK(argc == 3, "usage: mid_transfer_idle OLD DELAY IDLE");
    CHECK(in && out, "out of memory");
    if (mid_world(&world) != TEST_PASS)
        return TEST_FAIL;
    if (idle_old_splits(world, atoi(argv[0])) != TEST_PASS)
        return TEST_FAIL;
    CHECK_OK(sc_comm_split(world, 0, fault_rank, &sub));
    /* Eager, and sent before anything of the split: the oldest message rank 2 holds. */
    if (fault_rank == 1)
        CHECK_OK(sc_send(held, 4, SC_INT32, 2, world, NULL, NULL));
    CHECK_OK(sc_barrier(sub, NULL));
    if (fault_rank == 2) {
        double idle = atof(argv[2]), cpu;

        fault_sleep(atof(argv[1]));
        CHECK_OK(sc_comm_destroy(sub));
        cpu = fault_cpu_s();
        fault_sleep(idle);
        cpu = fault_cpu_s() - cpu;
        CHECK(cpu < 0.1 * idle, "rank 2 used %.2f s of CPU in its %.1f s without a call",
              cpu, idle);
        CHECK_OK(sc_recv(got, 4, SC_INT32, 1, world, NULL, NULL));
        CHECK(memcmp(got, held, sizeof(got)) == 0, "rank 1's message came as %d %d %d %d",
              (int)got[0], (int)got[1], (int)got[2], (int)got[3]);
    } else if (mid_allreduce_fails(sub, in, out) != TEST_PASS) {
        return TEST_FAIL;
    }
    return mid_end(world, sub, in, out);
}

#define IDLE_SEND_FLOATS (1u << 20)

static int test_rendezvous_send_to_idle(int argc, char **argv)
{
    float *buf = calloc(IDLE_SEND_FLOATS, sizeof(float));
    sc_comm_t *world, *sub;
    sc_request_t *req = NULL;
    fault_error_t err;
    int rank;
    double t0;

    (void)argc, (void)argv;
    CHECK(buf, "out of memory");
    CHECK_OK(sc_comm_init_from_env(&world));
    rank = sc_comm_rank(world);
    CHECK(sc_comm_size(world) == 2, "needs 2 ranks");
    CHECK_OK(sc_comm_split(world, 0, rank, &sub));
    CHECK_OK(sc_barrier(sub, NULL));
    if (rank == 0) {
        fault_sleep(0.2);
        CHECK_OK(sc_comm_destroy(sub));
        fault_sleep(1.5);
    } else {
        t0 = fault_now();
        CHECK_OK(sc_send(buf, IDLE_SEND_FLOATS, SC_FLOAT32, 0, sub, NULL, &req));
        if (check_gone_error(sc_wait(req), t0, 0, &err) != TEST_PASS)
            return TEST_FAIL;
        sc_request_free(req);
        CHECK(err.elapsed < 1.0, "the send took %.2f s to fail", err.elapsed);
    }
    if (end_split_and_world(rank == 1 ? sub : NULL, world) != TEST_PASS)
        return TEST_FAIL;
    free(buf); /* kept to the end: a failed send's buffer may still be read */
    return TEST_PASS;
}

int main(int argc, char **argv)
{
    static const fault_test_t tests[] = {{"waiting", test_waiting},
                                         {"later", test_later},
                                         {"p2p", test_p2p},
                                         {"every_rank_destroys", test_every_rank_destroys},
                                         {"notice_behind_a_full_socket",
                                          test_notice_behind_a_full_socket},
                                         {"mid_transfer", test_mid_transfer},
                                         {"mid_transfer_idle", test_mid_transfer_idle},
                                         {"rendezvous_send_to_idle",
                                          test_rendezvous_send_to_idle},
                                         {NULL, NULL}};
    return fault_main(tests, argc, argv);
}
