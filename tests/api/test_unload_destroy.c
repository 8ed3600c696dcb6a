/* A communicator destroyed after the library's unload at exit (by another thread that
 * still holds it, or here by a destructor of this program's that runs after the
 * library's), where the unload told a stopped peer whose shared-memory FIFO is full that
 * this rank left: that message never leaves. Three ranks under scrun, with the library's
 * internals.
 *
 * Usage (under scrun -n 3): test_unload_destroy */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/comm_internal.h"
#include "../common/sc_fill_fifo.h"
#include "../common/sc_proc_state.h"

static int g_rank = -1;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

/* The bound on rank 0's destroys after the unload: their close flushes the endpoint of
 * rank 2, which runs (0.00 s measured), and waited 2 s (sc_ucx_close's bound) for the
 * one of the stopped rank, a flush that cannot finish. */
#define DESTROY_BOUND_S 1.0

static sc_comm_t *g_world, *g_pair; /* rank 0's, destroyed after the unload */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs after the library's destructor (sc_registry_unload, of the default priority, runs
 * first): rank 0 destroys its communicators there, and its exit status is the verdict.
 * The destroy's close flushed the stopped rank's endpoint, where the leaving message
 * waits behind the full FIFO, until its bound of 2 s (2.01 s), then left it to
 * ucp_worker_destroy all the same. */
__attribute__((destructor(101))) static void destroy_after_the_unload(void)
{
    sc_status_t st_pair, st_world;
    double t0, took;

    if (!g_world)
        return;
    t0 = now_s();
    st_pair = sc_comm_destroy(g_pair);
    st_world = sc_comm_destroy(g_world);
    took = now_s() - t0;
    printf("rank 0: the destroys after the unload took %.2f s: %s, %s\n", took,
           sc_status_string(st_pair), sc_status_string(st_world));
    if (st_pair != SC_SUCCESS || st_world != SC_SUCCESS || took >= DESTROY_BOUND_S)
        fprintf(stderr, "rank 0: CHECK failed: the destroys after the unload took %.2f s "
                "(not under %.2f s) and returned %s, %s: the close flushed the endpoint of "
                "the stopped rank, whose leaving message never leaves\n", took,
                DESTROY_BOUND_S, sc_status_string(st_pair), sc_status_string(st_world));
    fflush(NULL);
    _exit(st_pair == SC_SUCCESS && st_world == SC_SUCCESS && took < DESTROY_BOUND_S ? 0 : 1);
}

int main(void)
{
    sc_comm_t *world, *pair;
    int32_t pid = (int32_t)getpid(), pids[3];

    CHECK_OK(sc_comm_init_from_env(&world));
    g_rank = sc_comm_rank(world);
    CHECK(sc_comm_size(world) == 3, "this test runs on 3 ranks, not %d", sc_comm_size(world));
    CHECK_OK(sc_allgather(&pid, pids, 1, SC_INT32, world, NULL, NULL));
    /* Ranks 0 and 2, which go on while rank 1 is stopped. */
    CHECK_OK(sc_comm_split(world, g_rank == 1, g_rank, &pair));
    CHECK_OK(sc_barrier(world, NULL));
    if (g_rank == 1) {
        raise(SIGSTOP); /* until rank 2 continues it, once rank 0 is gone */
        fflush(NULL);
        _exit(0);
    }
    CHECK(sc_test_wait_stopped((int)pids[1], 10.0), "rank 1 (pid %d) did not stop",
          (int)pids[1]);
    if (g_rank == 2) {
        /* Rank 1's FIFO full: rank 0's leaving message to it stays in rank 0's worker,
         * with no op of rank 0's held there (those are given up on at the unload, their
         * endpoint closed). */
        if (sc_test_fill_until_held(world, 1) != 0)
            return 1;
        CHECK_OK(sc_barrier(pair, NULL));
        for (int i = 0; i < 10000 && kill((pid_t)pids[0], 0) == 0; i++)
            usleep(1000);
        kill((pid_t)pids[1], SIGCONT);
        fflush(NULL);
        _exit(0);
    }
    CHECK_OK(sc_barrier(pair, NULL));
    g_world = world;
    g_pair = pair;
    fflush(NULL);
    exit(0);
}
