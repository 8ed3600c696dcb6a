/* sc_comm_abort from a thread other than the one using the communicator (comm.h: any
 * thread may abort). Run through scrun: test_abort_threads wait|destroy ROUNDS.
 * wait: rank 0 aborts a split of the world on a second thread while its first thread
 * is inside a blocking allreduce on it that the other ranks join late; the allreduce
 * returns (aborted, or done where the peers came first), the next call on the split is
 * aborted, and the peers' calls fail, never hang. destroy: every rank aborts a split on
 * a second thread while its first thread destroys it; the abort either runs before the
 * destroy frees anything or finds the split destroyed (the abort read the freed
 * communicator: ThreadSanitizer reported it against the destroy's free, which
 * scripts/test.sh runs as comm.concurrent_*). Each round checks that the world is
 * untouched. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_rank = -1;
#define SC_CHECK_RANK check_rank
#include "../common/sc_check.h"

#define COUNT 4096

typedef struct {
    sc_comm_t *comm;
    pthread_barrier_t *start;
    int delay_us;  /* before the abort, after the start (start NULL: none) */
    sc_status_t st;
    char err[256];
} aborter_t;

static void *aborter(void *p)
{
    aborter_t *a = p;

    if (a->start)
        pthread_barrier_wait(a->start);
    for (volatile int i = 0; i < a->delay_us * 100; i++)
        ;
    a->st = sc_comm_abort(a->comm);
    snprintf(a->err, sizeof(a->err), "%s", a->st == SC_SUCCESS ? "" : sc_last_error());
    return NULL;
}

static int world_still_works(sc_comm_t *world, int round)
{
    int in = round + check_rank, out = -1, size = sc_comm_size(world);

    CHECK_OK(sc_allreduce(&in, &out, 1, SC_INT32, SC_SUM, world, NULL, NULL));
    CHECK(out == size * round + size * (size - 1) / 2, "round %d: the world's sum is %d",
          round, out);
    return 0;
}

static int abort_while_waiting(sc_comm_t *world, int round)
{
    static float in[COUNT], out[COUNT];
    sc_comm_t *comm;
    size_t count = (size_t)1 << (round % 12);
    sc_status_t st, next;

    CHECK_OK(sc_comm_split(world, 0, check_rank, &comm));
    if (check_rank == 0) {
        pthread_barrier_t start;
        aborter_t a = {comm, &start, 10 * (round % 50), SC_SUCCESS, ""};
        pthread_t thread;

        pthread_barrier_init(&start, NULL, 2);
        CHECK(pthread_create(&thread, NULL, aborter, &a) == 0, "no thread");
        pthread_barrier_wait(&start);
        st = sc_allreduce(in, out, count, SC_FLOAT32, SC_SUM, comm, NULL, NULL);
        pthread_join(thread, NULL);
        pthread_barrier_destroy(&start);
        CHECK(a.st == SC_SUCCESS, "round %d: sc_comm_abort: %s", round, a.err);
        CHECK(st == SC_SUCCESS || st == SC_ERR_ABORTED, "round %d: the allreduce: %s: %s",
              round, sc_status_string(st), sc_last_error());
        next = sc_barrier(comm, NULL);
        CHECK(next == SC_ERR_ABORTED, "round %d: the call after the abort: %s: %s", round,
              sc_status_string(next), sc_last_error());
    } else {
        usleep(2000);
        st = sc_allreduce(in, out, count, SC_FLOAT32, SC_SUM, comm, NULL, NULL);
        if (st == SC_SUCCESS)
            st = sc_barrier(comm, NULL);
        CHECK(st == SC_ERR_ABORTED || st == SC_ERR_PEER_FAILED,
              "round %d: the peer's call on the aborted split: %s: %s", round,
              sc_status_string(st), sc_last_error());
    }
    CHECK_OK(sc_comm_destroy(comm));
    return world_still_works(world, round);
}

/* The aborting thread starts as the destroy does (without a barrier: its start-up
 * spreads the aborts over the destroy's steps, where they met it most often). */
static int abort_while_destroying(sc_comm_t *world, int round)
{
    sc_comm_t *comm;
    aborter_t a = {NULL, NULL, 0, SC_SUCCESS, ""};
    pthread_t thread;

    CHECK_OK(sc_comm_split(world, 0, check_rank, &comm));
    CHECK_OK(sc_barrier(comm, NULL));
    /* No rank's abort reaches a peer still inside the split's barrier. */
    CHECK_OK(sc_barrier(world, NULL));
    a.comm = comm;
    CHECK(pthread_create(&thread, NULL, aborter, &a) == 0, "no thread");
    CHECK_OK(sc_comm_destroy(comm));
    pthread_join(thread, NULL);
    CHECK(a.st == SC_SUCCESS || (a.st == SC_ERR_INVALID_COMM && strstr(a.err, "destroyed")),
          "round %d: sc_comm_abort racing sc_comm_destroy: %s: %s", round,
          sc_status_string(a.st), a.err);
    return world_still_works(world, round);
}

int main(int argc, char **argv)
{
    sc_comm_t *world;
    int rounds = argc > 2 ? atoi(argv[2]) : 0;
    int destroy = argc > 1 && strcmp(argv[1], "destroy") == 0;

    if (argc != 3 || (!destroy && strcmp(argv[1], "wait") != 0) || rounds < 1) {
        fprintf(stderr, "usage: test_abort_threads wait|destroy ROUNDS\n");
        return 2;
    }
    CHECK_OK(sc_comm_init_from_env(&world));
    check_rank = sc_comm_rank(world);
    for (int r = 0; r < rounds; r++)
        if (destroy ? abort_while_destroying(world, r) : abort_while_waiting(world, r))
            return 1;
    CHECK_OK(sc_comm_destroy(world));
    return 0;
}
