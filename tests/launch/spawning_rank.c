/* A rank that starts a long-lived program while its rendezvous goes on, as a data loader
 * or a tool started beside a training loop does (fork and exec, its descriptors left as
 * they are): `spawning_rank` joins the world from the environment, and on SIGUSR1 starts
 * `sleep 60` with its standard streams on /dev/null and prints "spawned PID". It exits 0
 * once its communicator was formed and destroyed. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "shardcomm/shardcomm.h"

static void *spawn_on_signal(void *arg)
{
    sigset_t *usr1 = arg;
    int sig;
    pid_t pid;

    if (sigwait(usr1, &sig) != 0)
        return NULL;
    pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);

        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        execlp("sleep", "sleep", "60", (char *)NULL);
        _exit(127);
    }
    printf("spawned %d\n", (int)pid);
    fflush(stdout);
    return NULL;
}

int main(void)
{
    sigset_t usr1;
    pthread_t spawner;
    sc_comm_t *comm = NULL;
    sc_status_t st;

    /* Blocked before any thread starts, so that only sigwait takes it. */
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    if (pthread_create(&spawner, NULL, spawn_on_signal, &usr1) != 0)
        return 1;
    st = sc_comm_init_from_env(&comm);
    if (st != SC_SUCCESS) {
        fprintf(stderr, "sc_comm_init_from_env: %s\n", sc_last_error());
        return 1;
    }
    sc_comm_destroy(comm);
    printf("formed\n");
    return 0;
}
