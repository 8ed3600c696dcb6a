/* libshardcomm.so loaded and unloaded at run time, as Python's ctypes does: what the
 * load and the unload leave behind in the process. The program is not linked with the
 * library; it opens the one named on its command line.
 * test_library_load TEST LIBRARY */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shardcomm/shardcomm.h"

static int g_rank = -1; /* this process's rank, once a communicator exists */
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

typedef struct {
    void *lib;
    __typeof__(sc_comm_init_from_env) *init;
    __typeof__(sc_comm_destroy) *destroy;
    __typeof__(sc_comm_rank) *rank;
    __typeof__(sc_barrier) *barrier;
    __typeof__(sc_last_error) *last_error;
} library_t;

static int library_open(const char *path, library_t *l)
{
    l->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(l->lib != NULL, "dlopen %s: %s", path, dlerror());
    *(void **)&l->init = dlsym(l->lib, "sc_comm_init_from_env");
    *(void **)&l->destroy = dlsym(l->lib, "sc_comm_destroy");
    *(void **)&l->rank = dlsym(l->lib, "sc_comm_rank");
    *(void **)&l->barrier = dlsym(l->lib, "sc_barrier");
    *(void **)&l->last_error = dlsym(l->lib, "sc_last_error");
    CHECK(l->init && l->destroy && l->rank && l->barrier && l->last_error, "dlsym: %s", dlerror());
    return 0;
}

typedef struct {
    library_t *l;
    sc_comm_t *comm;
    sc_status_t st;
    sem_t waited, may_exit;
} waiter_t;

/* Waits in a barrier (the rank's peer arrives later, so the call waits), then stays
 * until told to exit. */
static void *waiter_main(void *arg)
{
    waiter_t *w = arg;

    w->st = w->l->barrier(w->comm, NULL);
    sem_post(&w->waited);
    sem_wait(&w->may_exit);
    return NULL;
}

/* A thread that waited in a collective exits after the communicator was destroyed and
 * the library closed (a ctypes caller's worker thread): its exit ran the library's
 * thread-exit hook for its wait slot, in unmapped code, and the process died of SIGSEGV.
 * Two ranks: rank 1 reaches the barrier 0.2 s late, so rank 0's waiter waits. */
static int test_thread_that_waited_outlives_dlclose(const char *path)
{
    library_t l;
    waiter_t w;
    pthread_t thread;

    if (library_open(path, &l) != 0)
        return 1;
    memset(&w, 0, sizeof(w));
    w.l = &l;
    CHECK(l.init(&w.comm) == SC_SUCCESS, "sc_comm_init_from_env: %s", l.last_error());
    g_rank = l.rank(w.comm);
    if (g_rank == 1)
        usleep(200000);
    sem_init(&w.waited, 0, 0);
    sem_init(&w.may_exit, 0, 0);
    CHECK(pthread_create(&thread, NULL, waiter_main, &w) == 0, "pthread_create");
    sem_wait(&w.waited);
    CHECK(w.st == SC_SUCCESS, "sc_barrier: %s", l.last_error());
    CHECK(l.destroy(w.comm) == SC_SUCCESS, "sc_comm_destroy: %s", l.last_error());
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    sem_post(&w.may_exit);
    CHECK(pthread_join(thread, NULL) == 0, "pthread_join");
    return 0;
}

static volatile sig_atomic_t g_hangups;

static void on_hangup(int sig)
{
    (void)sig;
    g_hangups++;
}

/* The handler SIGHUP has now: its function, or SIG_DFL or SIG_IGN. */
static void *hangup_handler(void)
{
    struct sigaction sa;

    if (sigaction(SIGHUP, NULL, &sa) != 0)
        return NULL;
    return (sa.sa_flags & SA_SIGINFO) ? (void *)sa.sa_sigaction : (void *)sa.sa_handler;
}

/* A SIGHUP handler a framework set before loading the library (Python's ctypes loading it
 * after start-up) is still SIGHUP's handler after the load and a communicator's creation
 * and destruction, and a SIGHUP reaches it. UCX's library, loaded with shardcomm, had put
 * its debug handler in its place, which turned UCX's data tracing on instead. */
static int test_handler_set_before_load_is_kept(const char *path)
{
    struct sigaction sa;
    library_t l;
    sc_comm_t *comm;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_hangup;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGHUP, &sa, NULL) == 0, "sigaction");
    if (library_open(path, &l) != 0)
        return 1;
    CHECK(hangup_handler() == (void *)on_hangup, "the load replaced the SIGHUP handler");
    CHECK(l.init(&comm) == SC_SUCCESS, "sc_comm_init_from_env: %s", l.last_error());
    g_rank = l.rank(comm);
    CHECK(l.destroy(comm) == SC_SUCCESS, "sc_comm_destroy: %s", l.last_error());
    CHECK(hangup_handler() == (void *)on_hangup, "the communicator replaced the handler");
    CHECK(raise(SIGHUP) == 0 && g_hangups == 1, "the handler saw %d SIGHUPs of 1",
          (int)g_hangups);
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    return 0;
}

/* With SIGHUP's default disposition, a process that loaded the library still ends at a
 * SIGHUP (a closed terminal, scrun forwarding it): a child forked after the load raises
 * it and is killed by it. It went on, UCX's debug handler having taken the signal. */
static int test_hangup_still_ends_the_process(const char *path)
{
    library_t l;
    int status = 0;
    pid_t pid;

    CHECK(signal(SIGHUP, SIG_DFL) != SIG_ERR, "signal");
    if (library_open(path, &l) != 0)
        return 1;
    CHECK(hangup_handler() == (void *)SIG_DFL, "the load set a SIGHUP handler");
    pid = fork();
    CHECK(pid >= 0, "fork failed");
    if (pid == 0) {
        raise(SIGHUP);
        _exit(0);
    }
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGHUP, "the child %s %d",
          WIFSIGNALED(status) ? "was killed by signal" : "exited with",
          WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    return 0; /* left open: UCX's libraries, closed without a context, leak (LeakSanitizer) */
}

int main(int argc, char **argv)
{
    int rc;

    if (argc != 3) {
        fprintf(stderr, "usage: test_library_load TEST LIBRARY\n");
        return 2;
    }
    if (strcmp(argv[1], "thread_that_waited_outlives_dlclose") == 0) {
        rc = test_thread_that_waited_outlives_dlclose(argv[2]);
    } else if (strcmp(argv[1], "handler_set_before_load_is_kept") == 0) {
        rc = test_handler_set_before_load_is_kept(argv[2]);
    } else if (strcmp(argv[1], "hangup_still_ends_the_process") == 0) {
        rc = test_hangup_still_ends_the_process(argv[2]);
    } else {
        fprintf(stderr, "test_library_load: no test named %s\n", argv[1]);
        return 2;
    }
    printf("%s: %s\n", rc ? "FAIL" : "PASS", argv[1]);
    return rc;
}
