/* One rank per node, two nodes joined by a shaped veth pair (netfault_test.sh), one
 * 64 MiB allreduce in flight when the connection fails (argv[1]):
 *   abort     rank 0 calls sc_comm_abort 1 s into it: both ranks' requests fail with
 *             SC_ERR_ABORTED, and sc_comm_destroy succeeds
 *   linkdown  the script takes the link down 1 s after both ranks said they issued it
 *             (a line "rank R: the allreduce is issued"): both ranks fail with
 *             SC_ERR_TIMEOUT (SC_TIMEOUT is short) and sc_comm_destroy succeeds
 * Either way a later call fails at once. Rendezvous transfers left in flight on the
 * link used to abort the process in sc_comm_destroy (a UCX assertion) or let UCX write
 * into freed memory; now the connection to that peer is closed first.
 *   rendezvous_death  two ranks per node: rank 3's first process, forked, is killed
 *             0.7 s into a rendezvous that rank 1 holds open for 2 s; ranks 0-2 fail
 *             sc_comm_init with SC_ERR_PEER_FAILED naming rank 3, before SC_TIMEOUT.
 *             The world was completed with the dead process, and rank 0, on the other
 *             node, failed connecting to it with "send failed: Endpoint timeout".
 * Exit 0 on pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shardcomm/shardcomm.h"
#include "netfault_util.h"

/* rendezvous_death, on each rank. */
static int rendezvous_death(void)
{
    const char *rank_env = getenv("SC_RANK"), *timeout_env = getenv("SC_TIMEOUT");
    int rank = rank_env ? atoi(rank_env) : -1, status = 0;
    double timeout = timeout_env ? atof(timeout_env) : 0.0, t0 = sc_clock_now(), took;
    sc_comm_t *comm = NULL;
    sc_status_t st;
    pid_t first;

    if (rank == 3) {
        first = fork();
        if (first < 0)
            FAIL("rank 3: fork failed");
        if (first == 0) {
            sc_comm_init_from_env(&comm); /* killed in the rendezvous */
            _exit(3);
        }
        usleep(700 * 1000);
        kill(first, SIGKILL);
        if (waitpid(first, &status, 0) != first || !WIFSIGNALED(status))
            FAIL("rank 3: its first process ended before it was killed (status %d)", status);
        printf("PASS: rendezvous_death (rank 3 was killed in the rendezvous)\n");
        return 0;
    }
    if (rank == 1)
        usleep(2000 * 1000);
    st = sc_comm_init_from_env(&comm);
    took = sc_clock_now() - t0;
    if (st != SC_ERR_PEER_FAILED || !strstr(sc_last_error(), "rank 3 arrived"))
        FAIL("rank %d: sc_comm_init returned %s, not SC_ERR_PEER_FAILED naming rank 3: %s",
             rank, sc_status_string(st), sc_last_error());
    if (took >= timeout)
        FAIL("rank %d: sc_comm_init failed after %.2f s, not before SC_TIMEOUT (%g s)", rank,
             took, timeout);
    printf("PASS: rendezvous_death (rank %d, after %.2f s): %s\n", rank, took,
           sc_last_error());
    return 0;
}

int main(int argc, char **argv)
{
    const size_t n = (size_t)16 << 20;
    int abort_mode = argc > 1 && strcmp(argv[1], "abort") == 0;
    sc_status_t want = abort_mode ? SC_ERR_ABORTED : SC_ERR_TIMEOUT, st;
    sc_request_t *req;
    sc_comm_t *comm;
    float *buf = calloc(n, sizeof(float));
    double t0;
    int rank;

    if (argc == 2 && strcmp(argv[1], "rendezvous_death") == 0) {
        free(buf);
        return rendezvous_death();
    }
    if (argc != 2 || (!abort_mode && strcmp(argv[1], "linkdown") != 0) || !buf)
        FAIL("usage: test_netfault abort|linkdown|rendezvous_death");
    if (sc_comm_init_from_env(&comm) != SC_SUCCESS)
        FAIL("init: %s", sc_last_error());
    rank = sc_comm_rank(comm);
    t0 = sc_clock_now();
    if (sc_allreduce(buf, buf, n, SC_FLOAT32, SC_SUM, comm, NULL, &req) != SC_SUCCESS)
        FAIL("issue: %s", sc_last_error());
    /* What netfault_test.sh waits for before it takes the link down. */
    printf("rank %d: the allreduce is issued\n", rank);
    fflush(stdout);
    if (abort_mode && rank == 0) {
        usleep(1000 * 1000);
        if (sc_comm_abort(comm) != SC_SUCCESS)
            FAIL("abort: %s", sc_last_error());
    }
    st = sc_wait(req);
    sc_request_free(req);
    if (st != want)
        FAIL("rank %d: the allreduce returned %s, not %s: %s", rank, sc_status_string(st),
             sc_status_string(want), sc_last_error());
    printf("rank %d: the allreduce failed after %.2f s as it should: %s\n", rank,
           sc_clock_now() - t0, sc_last_error());
    if (sc_barrier(comm, NULL) == SC_SUCCESS)
        FAIL("rank %d: a later barrier succeeded", rank);
    t0 = sc_clock_now();
    st = sc_comm_destroy(comm);
    if (st != SC_SUCCESS)
        FAIL("rank %d: destroy returned %s: %s", rank, sc_status_string(st), sc_last_error());
    printf("PASS: %s (rank %d; destroy took %.3f s)\n", argv[1], rank, sc_clock_now() - t0);
    free(buf);
    return 0;
}
