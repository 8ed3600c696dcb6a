/* sc_comm_split of two communicators at once, from two threads, on communicators that
 * share one transport (the world and a split of it): the two new communicators must
 * get different context ids, or the messages of one are taken by the other's receives
 * (both succeed with each other's data). Each round splits both at once, checks the ids
 * (against each other and against every communicator still open), then runs one
 * non-blocking allgather on each, issued in opposite orders on even and odd ranks, and
 * checks every element. Rounds go on for ROUNDS rounds or SECONDS seconds (argv[1],
 * argv[2]; 400 and 6 by default). With BURN (argv[3]) that many splits that make no
 * communicator go first, so that the rounds take reused ids (comm_ctx.c). Run through
 * scrun. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/comm_internal.h"
#include "shardcomm/shardcomm.h"

static int rank_of_test = -1;
#define SC_CHECK_RANK rank_of_test
#include "../common/sc_check.h"

#define COUNT 1024

typedef struct {
    sc_comm_t *parent, *child;
    pthread_barrier_t *start;
    sc_status_t st;
    char err[256];
} split_arg_t;

static void *split_thread(void *p)
{
    split_arg_t *a = p;

    pthread_barrier_wait(a->start);
    a->st = sc_comm_split(a->parent, 0, sc_comm_rank(a->parent), &a->child);
    if (a->st != SC_SUCCESS)
        snprintf(a->err, sizeof(a->err), "%s", sc_last_error());
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One allgather on each child, issued A then B on even ranks and B then A on odd. */
static int cross_ordered_allgathers(split_arg_t *a, int round)
{
    static int32_t in[2][COUNT];
    sc_request_t *req[2];
    int size = sc_comm_size(a[0].child);
    int32_t *out[2] = {malloc((size_t)size * COUNT * sizeof(int32_t)),
                       malloc((size_t)size * COUNT * sizeof(int32_t))};

    CHECK(out[0] && out[1], "out of memory for %d ranks' blocks", size);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < COUNT; i++)
            in[k][i] = (k + 1) * 1000000 + round * 100 + rank_of_test;
    for (int j = 0; j < 2; j++) {
        int k = rank_of_test % 2 ? 1 - j : j;
        CHECK_OK(sc_allgather(in[k], out[k], COUNT, SC_INT32, a[k].child, NULL, &req[k]));
    }
    for (int k = 1; k >= 0; k--) {
        CHECK_OK(sc_wait(req[k]));
        sc_request_free(req[k]);
    }
    for (int k = 0; k < 2; k++)
        for (int q = 0; q < size; q++)
            for (int i = 0; i < COUNT; i++)
                CHECK(out[k][q * COUNT + i] == (k + 1) * 1000000 + round * 100 + q,
                      "round %d: the allgather on new communicator %d (ctx %u) has %d from "
                      "rank %d, expected %d", round, k, a[k].child->ctx,
                      (int)out[k][q * COUNT + i], q, (k + 1) * 1000000 + round * 100 + q);
    free(out[0]);
    free(out[1]);
    return 0;
}

static int run(int rounds, double seconds, int burn)
{
    sc_comm_t *world, *dup;
    pthread_barrier_t start;
    double t0 = now_s();
    uint32_t first_ctx;
    int round;

    CHECK_OK(sc_comm_init_from_env(&world));
    rank_of_test = sc_comm_rank(world);
    CHECK_OK(sc_comm_split(world, 0, rank_of_test, &dup));
    CHECK(dup->ctx != world->ctx, "the split has the world's context id %u", dup->ctx);
    for (int i = 0; i < burn; i++) {
        sc_comm_t *none = NULL;
        CHECK_OK(sc_comm_split(world, -1, 0, &none));
    }
    first_ctx = world->tp->next_ctx;
    pthread_barrier_init(&start, NULL, 2);
    for (round = 0;;) {
        split_arg_t a[2] = {{world, NULL, &start, SC_SUCCESS, ""},
                            {dup, NULL, &start, SC_SUCCESS, ""}};
        pthread_t th[2];
        int32_t go, all_go;

        for (int k = 0; k < 2; k++)
            CHECK(pthread_create(&th[k], NULL, split_thread, &a[k]) == 0, "pthread_create");
        for (int k = 0; k < 2; k++)
            pthread_join(th[k], NULL);
        for (int k = 0; k < 2; k++)
            CHECK(a[k].st == SC_SUCCESS, "round %d: split %d: %s: %s", round, k,
                  sc_status_string(a[k].st), a[k].err);
        CHECK(a[0].child->ctx != a[1].child->ctx,
              "round %d: both new communicators have context id %u", round, a[0].child->ctx);
        for (int k = 0; k < 2; k++)
            CHECK(a[k].child->ctx != world->ctx && a[k].child->ctx != dup->ctx,
                  "round %d: new communicator %d has the id %u of one still open", round, k,
                  a[k].child->ctx);
        if (cross_ordered_allgathers(a, round))
            return 1;
        for (int k = 0; k < 2; k++)
            CHECK_OK(sc_comm_destroy(a[k].child));
        /* Every rank runs the same number of rounds: rank 0's clock decides. */
        round++;
        go = rank_of_test != 0 || (round < rounds && now_s() - t0 < seconds);
        CHECK_OK(sc_allreduce(&go, &all_go, 1, SC_INT32, SC_MIN, world, NULL, NULL));
        if (!all_go)
            break;
    }
    if (world->tp->next_ctx > 0xfff)
        printf("rank %d: %d rounds of two concurrent splits on reused context ids, every "
               "pair of ids distinct\n", rank_of_test, round);
    else
        printf("rank %d: %d rounds of two concurrent splits, every pair of ids distinct; %u "
               "ids skipped after a split on the other thread took one first\n", rank_of_test,
               round, world->tp->next_ctx - first_ctx - 2u * (uint32_t)round);
    pthread_barrier_destroy(&start);
    CHECK_OK(sc_comm_destroy(dup));
    CHECK_OK(sc_comm_destroy(world));
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 400;
    double seconds = argc > 2 ? atof(argv[2]) : 6.0;
    int burn = argc > 3 ? atoi(argv[3]) : 0;

    return run(rounds, seconds, burn);
}
