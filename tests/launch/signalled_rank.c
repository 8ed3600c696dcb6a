/* A rank whose process takes a signal every millisecond while it joins the world, as one
 * with a profiler's timer or a data loader's SIGCHLD handler does: `signalled_rank` sets
 * a handler for SIGALRM and an interval timer of 1 ms, joins the world from the
 * environment, and prints "formed after N signals" once its communicator was formed and
 * destroyed (exit 0); otherwise the error (exit 1). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "shardcomm/shardcomm.h"

static volatile sig_atomic_t signals;

static void count_signal(int sig)
{
    (void)sig;
    signals++;
}

int main(void)
{
    struct sigaction sa;
    struct itimerval every_ms = {{0, 1000}, {0, 1000}}, off = {{0, 0}, {0, 0}};
    sc_comm_t *comm = NULL;
    sc_status_t st;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = count_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) != 0 || setitimer(ITIMER_REAL, &every_ms, NULL) != 0)
        return 1;
    st = sc_comm_init_from_env(&comm);
    setitimer(ITIMER_REAL, &off, NULL);
    if (st != SC_SUCCESS) {
        fprintf(stderr, "sc_comm_init_from_env: %s\n", sc_last_error());
        return 1;
    }
    sc_comm_destroy(comm);
    printf("formed after %d signals\n", (int)signals);
    return 0;
}
