/* A child forked while another thread of the parent was inside sc_host_alloc_pinned or
 * sc_host_free_pinned (their bookkeeping's lock held: a data loader's worker forked
 * while the training thread allocates) allocates and frees pinned memory of its own:
 * FORKS forks beside THREADS threads that allocate and free in a loop, each child
 * given CHILD_S seconds (SIGALRM) for one allocation and its free. The lock is held for
 * a few instructions at a time: the old code's children waited for ever about once in
 * a few hundred to a few thousand forks. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shardcomm/shardcomm.h"

#define FORKS 1000
#define THREADS 3
#define CHILD_S 5
#define BATCH 8

static int stop;

static void *churn(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        void *p[BATCH] = {NULL};
        for (int i = 0; i < BATCH; i++)
            if (sc_host_alloc_pinned(64, &p[i]) != SC_SUCCESS)
                p[i] = NULL;
        for (int i = 0; i < BATCH; i++)
            sc_host_free_pinned(p[i]);
    }
    return NULL;
}

/* In the child: 0 when it allocated and freed, else a status to exit with. */
static int child(void)
{
    void *p = NULL;

    alarm(CHILD_S);
    if (sc_host_alloc_pinned(64, &p) != SC_SUCCESS)
        return 2;
    return sc_host_free_pinned(p) == SC_SUCCESS ? 0 : 3;
}

int main(void)
{
    pthread_t t[THREADS];
    int failed = 0;

    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, churn, NULL) != 0) {
            fprintf(stderr, "FAIL: pthread_create\n");
            return 1;
        }
    for (int i = 0; i < FORKS && !failed; i++) {
        int status = 0;
        pid_t pid = fork();

        if (pid == 0)
            _exit(child());
        if (pid < 0 || waitpid(pid, &status, 0) != pid) {
            fprintf(stderr, "FAIL: fork or waitpid %d\n", i);
            failed = 1;
        } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
            fprintf(stderr, "FAIL: fork %d: the child's sc_host_alloc_pinned or "
                    "sc_host_free_pinned still waited after %d s\n", i, CHILD_S);
            failed = 1;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "FAIL: fork %d: the child ended with status 0x%x: %s\n", i,
                    status, sc_last_error());
            failed = 1;
        }
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    if (!failed)
        printf("PASS: %d children forked beside %d threads allocating pinned memory "
               "allocated and freed their own\n", FORKS, THREADS);
    return failed;
}
