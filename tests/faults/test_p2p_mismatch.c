/* Point-to-point calls that disagree: rank 0 sends SEND elements to rank 1, which
 * receives RECV. Sizes past one chunk (SC_CHUNK_BYTES) travel as several messages, so
 * a disagreement in size is also one in the number of messages. The receiver fails
 * with SC_ERR_MISMATCH naming both calls, within SC_TIMEOUT. The sender fails the same
 * way, notified, unless its send completed first (its messages all taken, as a send
 * that fits one message always is, MPI-like): then its next call fails. Never a hang,
 * never a success on the receiver.
 *
 * behind (3 ranks): rank 2 issues an allreduce with the others, then holds its
 * transport's lock for 300 ms (a rank descheduled, or busy in a long callback), so that
 * it takes the result only after ranks 0 and 1 finished the allreduce and mismatched a
 * send and a receive. The allreduce, issued before the mismatched calls on every rank,
 * completes on rank 2 too, with the right sum (a collective's mismatch spares the
 * collectives before it; a point-to-point one failed them all, so the last rank failed
 * an allreduce the others had finished); its next call fails with the mismatch.
 *
 * split (2 ranks): the same mismatch on a split that numbers the ranks in reverse; the
 * sentence names each rank of the split with its world rank beside it (its prefix,
 * "rank R: ", is the world rank: with the split's numbers alone it read "rank 0: ...
 * rank 0 called send" on the rank that called recv).
 *
 * Usage (under scrun): test_p2p_mismatch sizes SEND RECV (2 ranks) | behind (3 ranks) |
 * split (2 ranks) */
#include <pthread.h>

#include "core/comm_internal.h"
#include "fault_util.h"

static int test_sizes(int argc, char **argv)
{
    size_t send_n, recv_n, n;
    sc_comm_t *comm;
    fault_error_t err;
    float *buf;
    sc_status_t st;
    double t0, timeout = fault_timeout();
    int rank, must_fail;

    CHECK(argc == 2, "arguments: SEND RECV");
    send_n = strtoul(argv[0], NULL, 10);
    recv_n = strtoul(argv[1], NULL, 10);
    CHECK(send_n != recv_n, "the sizes must differ");
    CHECK_OK(sc_comm_init_from_env(&comm));
    rank = sc_comm_rank(comm);
    CHECK(sc_comm_size(comm) == 2, "needs 2 ranks");
    n = rank == 0 ? send_n : recv_n;
    buf = calloc(n ? n : 1, sizeof(float));
    CHECK(buf, "out of memory");
    CHECK_OK(sc_barrier(comm, NULL));
    t0 = fault_now();
    st = rank == 0 ? sc_send(buf, n, SC_FLOAT32, 1, comm, NULL, NULL)
                   : sc_recv(buf, n, SC_FLOAT32, 0, comm, NULL, NULL);
    must_fail = rank == 1;
    if (st == SC_SUCCESS) {
        CHECK(!must_fail, "%s of %zu elements succeeded against a %s of %zu",
              rank == 0 ? "send" : "receive", n, rank == 0 ? "receive" : "send",
              rank == 0 ? recv_n : send_n);
        st = sc_barrier(comm, NULL); /* the receiver's notice arrives */
        CHECK(st != SC_SUCCESS, "the sender's next call succeeded");
    }
    fault_error_take(&err, st, t0);
    CHECK(err.status == SC_ERR_MISMATCH, "returned %s (%s), expected SC_ERR_MISMATCH",
          sc_status_string(err.status), err.text);
    CHECK(strstr(err.text, "ranks disagree") && strstr(err.text, "send #") &&
              strstr(err.text, "recv #"),
          "the sentence '%s' does not name both calls", err.text);
    CHECK(err.elapsed < timeout + 1.0, "the error took %.2f s (SC_TIMEOUT %.1f)",
          err.elapsed, timeout);
    if (fault_check_later_calls_fail(comm, &err) != TEST_PASS)
        return TEST_FAIL;
    /* A failed call's buffer may still be read until the communicator is destroyed
     * (collectives.h): freed before, UCX's copy of the sender's last chunks read freed
     * memory (AddressSanitizer, 3 of 6 runs under load). */
    if (fault_check_destroy(comm, timeout + 1.0) != TEST_PASS)
        return TEST_FAIL;
    free(buf);
    return TEST_PASS;
}

/* The world of the tests without arguments, of size ranks. */
static int init_world(int argc, int size, sc_comm_t **world, int *rank)
{
    CHECK(argc == 0, "no arguments");
    CHECK_OK(sc_comm_init_from_env(world));
    *rank = sc_comm_rank(*world);
    CHECK(sc_comm_size(*world) == size, "needs %d ranks", size);
    return TEST_PASS;
}

static int test_behind(int argc, char **argv)
{
    sc_comm_t *comm;
    fault_error_t err;
    int32_t data[16], sum[16], big[8] = {0};
    double small = 0;
    sc_request_t *req;
    sc_status_t st;
    int rank;

    (void)argv;
    if (init_world(argc, 3, &comm, &rank))
        return TEST_FAIL;
    for (int i = 0; i < 16; i++)
        data[i] = rank * 100 + i;
    CHECK_OK(sc_barrier(comm, NULL));
    CHECK_OK(sc_allreduce(data, sum, 16, SC_INT32, SC_SUM, comm, NULL, &req));
    if (rank == 2) {
        pthread_mutex_lock(&comm->tp->lock);
        fault_sleep(0.3);
        pthread_mutex_unlock(&comm->tp->lock);
    }
    CHECK_OK(sc_wait(req));
    sc_request_free(req);
    for (int i = 0; i < 16; i++)
        CHECK(sum[i] == 300 + 3 * i, "allreduce element %d is %d", i, sum[i]);
    if (rank == 2) {
        st = sc_barrier(comm, NULL);
        CHECK(st == SC_ERR_MISMATCH, "the call after the broadcast returned %s (%s), "
              "expected the mismatch", sc_status_string(st), sc_last_error());
    } else {
        st = rank == 0 ? sc_send(big, 8, SC_INT32, 1, comm, NULL, NULL)
                       : sc_recv(&small, 1, SC_FLOAT64, 0, comm, NULL, NULL);
        if (st == SC_SUCCESS) {
            CHECK(rank == 0, "the mismatched receive succeeded");
            st = sc_barrier(comm, NULL);
        }
        fault_error_take(&err, st, fault_now());
        CHECK(err.status == SC_ERR_MISMATCH, "returned %s (%s), expected SC_ERR_MISMATCH",
              sc_status_string(err.status), err.text);
    }
    return fault_check_destroy(comm, fault_timeout() + 1.0);
}

static int test_split(int argc, char **argv)
{
    sc_comm_t *world, *sub;
    float two[2] = {1, 2};
    double one = 0;
    sc_status_t st;
    int rank;

    (void)argv;
    if (init_world(argc, 2, &world, &rank))
        return TEST_FAIL;
    CHECK_OK(sc_comm_split(world, 0, -rank, &sub));
    CHECK(sc_comm_rank(sub) == 1 - rank, "the split numbers world rank %d as %d", rank,
          sc_comm_rank(sub));
    /* World rank 1 (the split's 0) sends 2 float32; world rank 0 receives 1 float64. */
    if (rank == 1) {
        st = sc_send(two, 2, SC_FLOAT32, 1, sub, NULL, NULL);
        if (st == SC_SUCCESS)
            st = sc_barrier(sub, NULL);
    } else {
        st = sc_recv(&one, 1, SC_FLOAT64, 0, sub, NULL, NULL);
    }
    CHECK(st == SC_ERR_MISMATCH, "returned %s (%s), expected SC_ERR_MISMATCH",
          sc_status_string(st), sc_last_error());
    CHECK(strstr(sc_last_error(), "rank 1 (world rank 0) called recv #0 (count 1, float64, "
                                  "from rank 0 (world rank 1)) but rank 0 (world rank 1) "
                                  "called send #0 (count 2, float32, to rank 1 (world rank "
                                  "0))"),
          "the sentence '%s' does not name the split's ranks with their world ranks",
          sc_last_error());
    CHECK_OK(sc_comm_destroy(sub));
    CHECK_OK(sc_comm_destroy(world));
    return 0;
}

int main(int argc, char **argv)
{
    static const fault_test_t tests[] = {{"sizes", test_sizes}, {"behind", test_behind},
                                         {"split", test_split}, {NULL, NULL}};
    return fault_main(tests, argc, argv);
}
