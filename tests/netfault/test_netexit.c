/* A clean exit across two nodes (netfault_test.sh clean_exit: two ranks per node, UCX's
 * transports left to UCX, so that the two ranks of a node share memory and also hold a
 * TCP connection to each other): local rank 1 of each node destroys its communicator at
 * once, tells its node's local rank 0 (SIGUSR1) and stays until that rank exited; local
 * rank 0 destroys its own 0.2 s after the signal, once its peer's side of their
 * connection is closed. Every sc_comm_destroy succeeds within 1 s; the script asserts
 * that no rank printed a UCX warning or error (local rank 0 flushed its endpoint to a
 * peer that had closed, which UCX had marked failed, and UCX printed "error during
 * flush: Endpoint timeout" for each of its three transports).
 * Exit 0 on pass. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "shardcomm/shardcomm.h"
#include "netfault_util.h"

static volatile sig_atomic_t peer_closed;

static void on_peer_closed(int sig)
{
    (void)sig;
    peer_closed = 1;
}

/* Whether pid has exited: gone, or a zombie its launcher has not reaped yet. */
static int exited(pid_t pid)
{
    char path[64], state = 0;
    FILE *f;

    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 1;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return 1;
    if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
        state = 0;
    fclose(f);
    return state == 'Z' || state == 'X';
}

/* Local rank 1 (ranks 1 and 3): destroys at once, signals rank - 1, waits for it to exit. */
static int close_first(sc_comm_t *comm, int rank, pid_t peer)
{
    double t0 = sc_clock_now(), took;

    if (sc_comm_destroy(comm) != SC_SUCCESS)
        FAIL("rank %d: destroy: %s", rank, sc_last_error());
    took = sc_clock_now() - t0;
    if (kill(peer, SIGUSR1) != 0)
        FAIL("rank %d: cannot signal rank %d (pid %d)", rank, rank - 1, (int)peer);
    while (!exited(peer) && sc_clock_now() - t0 < 10.0)
        usleep(10 * 1000);
    if (took > 1.0)
        FAIL("rank %d: destroy took %.3f s, not at most 1 s", rank, took);
    printf("PASS: clean_exit (rank %d; destroy took %.3f s)\n", rank, took);
    return 0;
}

int main(void)
{
    int64_t pid = getpid(), pids[4];
    struct sigaction sa;
    sc_comm_t *comm;
    double t0, took;
    int rank;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_peer_closed;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        FAIL("sigaction failed");
    if (sc_comm_init_from_env(&comm) != SC_SUCCESS)
        FAIL("init: %s", sc_last_error());
    rank = sc_comm_rank(comm);
    if (sc_comm_size(comm) != 4)
        FAIL("rank %d: %d ranks, not 4 (two per node)", rank, sc_comm_size(comm));
    if (sc_allgather(&pid, pids, 1, SC_INT64, comm, NULL, NULL) != SC_SUCCESS)
        FAIL("rank %d: allgather: %s", rank, sc_last_error());
    /* Ranks 0 and 1 are one node, 2 and 3 the other. */
    if (rank % 2 == 1)
        return close_first(comm, rank, (pid_t)pids[rank - 1]);
    t0 = sc_clock_now();
    while (!peer_closed && sc_clock_now() - t0 < 10.0)
        usleep(10 * 1000);
    if (!peer_closed)
        FAIL("rank %d: rank %d did not say within 10 s that it destroyed its communicator",
             rank, rank + 1);
    usleep(200 * 1000);
    t0 = sc_clock_now();
    if (sc_comm_destroy(comm) != SC_SUCCESS)
        FAIL("rank %d: destroy: %s", rank, sc_last_error());
    took = sc_clock_now() - t0;
    if (took > 1.0)
        FAIL("rank %d: destroy took %.3f s, not at most 1 s", rank, took);
    printf("PASS: clean_exit (rank %d; destroy took %.3f s)\n", rank, took);
    return 0;
}
