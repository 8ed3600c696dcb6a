/* A call that fails on one communicator (a mismatch, a call refused on one rank, an
 * abort) while large (rendezvous) messages of it are in flight leaves the connections it
 * shares with the communicators of the same sc_comm_init working: the world's calls that
 * follow succeed with the exact result. */
#include "fault_util.h"

/* 1 MiB of float32: each message of the ring or the all-to-all goes by rendezvous. */
#define BIG (256 * 1024)

static void fill(float *v, size_t n, int rank)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (float)((rank + 1) * 10 + (int)(i % 7));
}

/* A 1 MiB allreduce (sum) on the world, its every element checked. */
static int world_allreduce_works(sc_comm_t *world)
{
    int size = sc_comm_size(world);
    float *in = malloc(BIG * sizeof(float)), *out = malloc(BIG * sizeof(float));

    CHECK(in && out, "out of memory");
    fill(in, BIG, fault_rank);
    CHECK_OK(sc_allreduce(in, out, BIG, SC_FLOAT32, SC_SUM, world, NULL, NULL));
    for (size_t i = 0; i < BIG; i++) {
        float want = 0.0f;
        for (int r = 0; r < size; r++)
            want += (float)((r + 1) * 10 + (int)(i % 7));
        CHECK(out[i] == want, "world allreduce: element %zu is %g, expected %g", i,
              (double)out[i], (double)want);
    }
    free(in);
    free(out);
    return TEST_PASS;
}

/* The split's call (fn) fails on every rank; the world works after it, twice. */
static int run(int (*fn)(sc_comm_t *split, float *in, float *out))
{
    /* Kept until the end: a failed call's buffers may still be read. */
    float *in = calloc(4 * (size_t)BIG + 1024, sizeof(float));
    float *out = calloc(4 * (size_t)BIG + 1024, sizeof(float));
    sc_comm_t *world, *split;

    CHECK(in && out, "out of memory");
    CHECK_OK(sc_comm_init_from_env(&world));
    CHECK_OK(sc_comm_split(world, 0, fault_rank, &split));
    CHECK_OK(sc_barrier(split, NULL));
    fill(in, 4 * (size_t)BIG, fault_rank);
    if (fn(split, in, out) != TEST_PASS)
        return TEST_FAIL;
    if (world_allreduce_works(world) != TEST_PASS || world_allreduce_works(world) != TEST_PASS)
        return TEST_FAIL;
    CHECK_OK(sc_comm_destroy(split));
    CHECK_OK(sc_comm_destroy(world));
    free(in);
    free(out);
    return TEST_PASS;
}

/* A 1 MiB allreduce whose count differs on rank 1: a mismatch on every rank. */
static int allreduce_mismatch(sc_comm_t *split, float *in, float *out)
{
    size_t count = fault_rank == 1 ? BIG + 1024 : BIG;
    sc_status_t st = sc_allreduce(in, out, count, SC_FLOAT32, SC_SUM, split, NULL, NULL);

    CHECK(st == SC_ERR_MISMATCH, "the mismatched allreduce returned %s: %s",
          sc_status_string(st), sc_last_error());
    return TEST_PASS;
}

/* An all-to-all of 1 MiB blocks that rank 2 (no ring neighbour of rank 0) refuses. */
static int alltoall_refused(sc_comm_t *split, float *in, float *out)
{
    sc_status_t st = sc_alltoall(fault_rank == 2 ? NULL : in, out, BIG, SC_FLOAT32, split,
                                 NULL, NULL);

    CHECK(st != SC_SUCCESS, "the refused all-to-all succeeded on rank %d", fault_rank);
    return TEST_PASS;
}

/* Rank 0 sends 1 MiB to rank 1, whose receive is refused (a NULL buffer) or too small
 * (a mismatch). */
static int p2p_failed(sc_comm_t *split, float *in, float *out, int refused)
{
    sc_status_t st;

    if (fault_rank == 0)
        st = sc_send(in, BIG, SC_FLOAT32, 1, split, NULL, NULL);
    else
        st = sc_recv(refused ? NULL : out, refused ? BIG : 1024, SC_FLOAT32, 0, split, NULL,
                     NULL);
    CHECK(st != SC_SUCCESS, "the failed %s succeeded", fault_rank == 0 ? "send" : "receive");
    return TEST_PASS;
}

/* Rank 0 aborts the split while its 4 MiB allreduce is in flight (rank 1 issues its own
 * later, after the abort notice or while it comes). */
static int aborted(sc_comm_t *split, float *in, float *out)
{
    sc_request_t *req = NULL;
    sc_status_t st;

    if (fault_rank == 0) {
        CHECK_OK(sc_allreduce(in, out, 4 * (size_t)BIG, SC_FLOAT32, SC_SUM, split, NULL,
                              &req));
        fault_sleep(0.2);
        CHECK_OK(sc_comm_abort(split));
        st = sc_wait(req);
        sc_request_free(req);
    } else {
        fault_sleep(0.4);
        st = sc_allreduce(in, out, 4 * (size_t)BIG, SC_FLOAT32, SC_SUM, split, NULL, NULL);
    }
    CHECK(st == SC_ERR_ABORTED, "the aborted allreduce returned %s: %s",
          sc_status_string(st), sc_last_error());
    return TEST_PASS;
}

static int recv_refused(sc_comm_t *split, float *in, float *out)
{
    return p2p_failed(split, in, out, 1);
}

static int recv_too_small(sc_comm_t *split, float *in, float *out)
{
    return p2p_failed(split, in, out, 0);
}

/* The test of each failing call: run with it. */
#define SPARES_TEST(name)                                                                \
    static int test_##name(int argc, char **argv)                                        \
    {                                                                                    \
        (void)argc, (void)argv;                                                          \
        return run(name);                                                                \
    }
SPARES_TEST(allreduce_mismatch)
SPARES_TEST(alltoall_refused)
SPARES_TEST(aborted)
SPARES_TEST(recv_refused)
SPARES_TEST(recv_too_small)

int main(int argc, char **argv)
{
    static const fault_test_t tests[] = {{"allreduce_mismatch", test_allreduce_mismatch},
                                         {"alltoall_refused", test_alltoall_refused},
                                         {"aborted", test_aborted},
                                         {"recv_refused", test_recv_refused},
                                         {"recv_too_small", test_recv_too_small},
                                         {NULL, NULL}};
    return fault_main(tests, argc, argv);
}
