/* A library thread's wait at the library's unload (core/unload_threads.h), on a world of
 * one rank, with the library's internals: the unload's end of its threads, called by
 * hand, while a thread that the unload lists waits in sc_wait; and the unload at exit of
 * a world whose transport's lock the exiting thread holds. */
#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/comm_internal.h"
#include "core/error.h"
#include "core/unload_threads.h"

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"
#include "../common/sc_proc_state.h"
#include "../common/sc_test_runner.h"

/* A thread as the library runs its own (a reducer's finisher): listed for the unload,
 * ending once stop is set. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop;
    sc_request_t *req;     /* what it waits for */
    sc_status_t st;        /* its sc_wait's */
    char text[SC_ERROR_MAX];
    double left_at;        /* when its sc_wait returned */
    sc_unload_thread_t entry;
} waiter_t;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *waiter_main(void *arg)
{
    waiter_t *w = arg;

    sc_unload_thread_enter(&w->stop);
    w->st = sc_wait(w->req);
    snprintf(w->text, sizeof(w->text), "%s", sc_last_error());
    /* As the finisher frees its bucket's request: one left pending stays, its op and a
     * user's wait still on it (freed, that wait and the abort read freed memory). */
    sc_request_free(w->req);
    w->left_at = now_s();
    pthread_mutex_lock(&w->lock);
    while (!w->stop)
        pthread_cond_wait(&w->wake, &w->lock);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* A user's thread, waiting on the same request: never one the unload ends. */
typedef struct {
    sc_request_t *req;
    sc_status_t st;
    int left;              /* set (atomically) once its sc_wait returned */
} user_waiter_t;

static void *user_waiter_main(void *arg)
{
    user_waiter_t *u = arg;

    u->st = sc_wait(u->req);
    __atomic_store_n(&u->left, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* The thread waits on a receive that no send matches while the transport's lock is held
 * (what a lock that the unload's abort could not take within 1 s leaves: no progress,
 * no failure); the unload's end of the threads (2 s) asks it to end. Its sc_wait
 * returns SC_ERR_ABORTED at once, its sc_request_free leaves the request pending, and
 * the unload joins it. The wait never looked at the
 * thread's stop flag: the join gave up after 2 s and the thread waited on, after dlclose
 * in the unmapped code. */
static int test_library_thread_leaves_its_wait_at_the_unload(void)
{
    static waiter_t w = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};
    user_waiter_t u = {0};
    sc_comm_t *comm;
    pthread_t thread, user;
    struct timespec until;
    int32_t x;
    double asked;
    int joined;

    CHECK_OK(sc_comm_init_from_env(&comm));
    CHECK_OK(sc_recv(&x, 1, SC_INT32, 0, comm, NULL, &w.req));
    CHECK(pthread_create(&thread, NULL, waiter_main, &w) == 0, "pthread_create");
    sc_unload_thread_add(&w.entry, thread, &w.lock, &w.wake, &w.stop);
    u.req = w.req;
    CHECK(pthread_create(&user, NULL, user_waiter_main, &u) == 0, "pthread_create");
    usleep(200000); /* both asleep in their waits */
    pthread_mutex_lock(&comm->tp->lock);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    asked = now_s();
    sc_unload_threads_end(&until);
    pthread_mutex_unlock(&comm->tp->lock);
    joined = !sc_unload_thread_remove(&w.entry);
    CHECK(joined, "the unload did not join the thread within 2 s (%.2f s)", now_s() - asked);
    CHECK(w.st == SC_ERR_ABORTED, "its sc_wait returned %s", sc_status_string(w.st));
    CHECK(strstr(w.text, "the library is being unloaded") != NULL, "its sentence: %s",
          w.text);
    CHECK(w.left_at - asked < 0.5, "its wait ended %.2f s after the unload asked",
          w.left_at - asked);
    /* The user's thread, in its wait all along, still waits for the request (0.3 s
     * more): the abort completes it. */
    usleep(300000);
    CHECK(!__atomic_load_n(&u.left, __ATOMIC_ACQUIRE), "a user's sc_wait left at the "
          "unload too (%s): only a listed thread's may", sc_status_string(u.st));
    CHECK_OK(sc_comm_abort(comm));
    pthread_join(user, NULL);
    CHECK(u.st == SC_ERR_ABORTED, "the user's wait on the aborted receive: %s",
          sc_status_string(u.st));
    CHECK(sc_wait(w.req) == SC_ERR_ABORTED, "the aborted receive: %s", sc_last_error());
    sc_request_free(w.req);
    CHECK_OK(sc_comm_destroy(comm));
    return 0;
}

static int g_threads_at_exit = -1; /* the process's threads as exit() was called */

/* Runs after the library's destructor (sc_registry_unload, of the default priority, runs
 * first): one thread fewer (the progress thread), or the unload left it running. The
 * count is taken again for up to 1 s: a thread that the unload joined may stay listed
 * in /proc/self/task a moment. */
__attribute__((destructor(101))) static void progress_thread_ended(void)
{
    int left;

    if (g_threads_at_exit < 0)
        return;
    left = sc_test_thread_count_down_to(g_threads_at_exit - 1, 1.0);
    printf("threads: %d at exit(), %d after the library's unload\n", g_threads_at_exit, left);
    if (left != g_threads_at_exit - 1)
        fprintf(stderr, "rank 0: CHECK failed: the unload left the progress thread running "
                "(%d threads, %d at exit()): its transport's lock was held\n", left,
                g_threads_at_exit);
    fflush(NULL);
    _exit(left == g_threads_at_exit - 1 ? 0 : 1);
}

/* exit() on a thread that holds the transport's lock (a signal handler that exits inside
 * the library): the unload cannot abort the world (the lock is not free within its 1 s),
 * and left its progress thread, asleep or waiting for that lock, running; after dlclose
 * it ran on in the unmapped code. The progress thread is now ended all the same: the
 * verdict is the destructor's above (1.1 s). */
static int test_progress_thread_ends_at_an_exit_with_the_lock_held(void)
{
    sc_comm_t *comm;

    CHECK_OK(sc_comm_init_from_env(&comm));
    usleep(200000); /* the progress thread asleep, nothing queued */
    pthread_mutex_lock(&comm->tp->lock);
    usleep(200000); /* it woke and waits for the lock */
    g_threads_at_exit = sc_test_thread_count();
    fflush(NULL);
    exit(0);
}

int main(int argc, char **argv)
{
    static const sc_test_t tests[] = {SC_TEST(library_thread_leaves_its_wait_at_the_unload),
                                      SC_TEST(progress_thread_ends_at_an_exit_with_the_lock_held)};

    return sc_run_tests(tests, sizeof(tests) / sizeof(tests[0]), argc > 1 ? argv[1] : NULL);
}
