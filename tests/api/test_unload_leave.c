/* The library's unload at exit with a world and splits of it live, which share one
 * transport: its leaving message is waited for once per transport. Two ranks under
 * scrun, with the library's internals (a rank that holds its transport's lock takes no
 * message).
 *
 * Usage (under scrun): test_unload_leave SPLITS */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/comm_internal.h"
#include "../common/sc_fill_fifo.h"
#include "../common/sc_hold_transport.h"

static int g_rank = -1;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

/* The unload's wait for a leaving message that no peer takes (comm_registry.c's
 * SC_REGISTRY_UNLOAD_NOTICE_S), and the bound on rank 0's whole unload: that wait once,
 * the abort's cancel of the one send held (50 ms), and room for a loaded machine (1.6 s
 * in all was seen with two busy loops beside the test on two cores). A wait per
 * communicator is 0.5 s more per split, each a wait to its end: with 7 splits at least
 * 4 s, well clear of the bound. */
#define NOTICE_S 0.5
#define UNLOAD_BOUND_S (NOTICE_S + 2.0)

static double g_exit_at = -1.0; /* when rank 0 called exit() */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs after the library's destructor (sc_registry_unload, of the default priority, runs
 * first): rank 0's exit status is the verdict on the unload's time. */
__attribute__((destructor(101))) static void unload_timed(void)
{
    double took;

    if (g_exit_at < 0.0)
        return;
    took = now_s() - g_exit_at;
    printf("rank 0: the unload took %.2f s\n", took);
    if (took >= UNLOAD_BOUND_S)
        fprintf(stderr, "rank 0: CHECK failed: the unload took %.2f s, not under %.2f s: it "
                "waited for its leaving message once per communicator\n", took,
                UNLOAD_BOUND_S);
    fflush(NULL);
    _exit(took < UNLOAD_BOUND_S ? 0 : 1);
}

int main(int argc, char **argv)
{
    sc_comm_t *world, *split;
    int32_t pid = (int32_t)getpid(), pids[2];
    int splits = argc > 1 ? atoi(argv[1]) : 0;

    CHECK_OK(sc_comm_init_from_env(&world));
    g_rank = sc_comm_rank(world);
    CHECK(sc_comm_size(world) == 2, "this test runs on 2 ranks, not %d", sc_comm_size(world));
    CHECK_OK(sc_allgather(&pid, pids, 1, SC_INT32, world, NULL, NULL));
    /* Live at the exit, never destroyed, as the world is. */
    for (int i = 0; i < splits; i++)
        CHECK_OK(sc_comm_split(world, 0, g_rank, &split));
    CHECK_OK(sc_barrier(world, NULL));
    if (g_rank == 1)
        sc_test_hold_until_gone(world, (pid_t)pids[0]); /* until rank 0 is gone */
    usleep(200000); /* rank 1 holds its lock */
    /* Rank 1's FIFO full: the leaving message sent after the send held is held too. */
    if (sc_test_fill_until_held(world, 1) != 0)
        return 1;
    fflush(NULL);
    g_exit_at = now_s();
    exit(0);
}
