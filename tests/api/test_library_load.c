/* libshardcomm.so loaded and unloaded at run time, as Python's ctypes does: what the
 * load and the unload leave behind in the process. The program is not linked with the
 * library; it opens the one named on its command line.
 * test_library_load TEST LIBRARY */
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shardcomm/shardcomm.h"
#include "../common/sc_proc_state.h"

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
    __typeof__(sc_status_string) *status_string;
    __typeof__(sc_send) *send;
    __typeof__(sc_recv) *recv;
    __typeof__(sc_wait) *wait;
    __typeof__(sc_comm_hook_topk) *hook_topk;
    __typeof__(sc_reducer_create) *reducer_create;
    __typeof__(sc_reducer_mark_ready) *mark_ready;
    __typeof__(sc_reducer_finalize) *finalize;
    __typeof__(sc_reducer_destroy) *reducer_destroy;
    __typeof__(sc_topk_create) *topk_create;
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
    *(void **)&l->status_string = dlsym(l->lib, "sc_status_string");
    *(void **)&l->send = dlsym(l->lib, "sc_send");
    *(void **)&l->recv = dlsym(l->lib, "sc_recv");
    *(void **)&l->wait = dlsym(l->lib, "sc_wait");
    *(void **)&l->hook_topk = dlsym(l->lib, "sc_comm_hook_topk");
    *(void **)&l->reducer_create = dlsym(l->lib, "sc_reducer_create");
    *(void **)&l->mark_ready = dlsym(l->lib, "sc_reducer_mark_ready");
    *(void **)&l->finalize = dlsym(l->lib, "sc_reducer_finalize");
    *(void **)&l->reducer_destroy = dlsym(l->lib, "sc_reducer_destroy");
    *(void **)&l->topk_create = dlsym(l->lib, "sc_topk_create");
    CHECK(l->init && l->destroy && l->rank && l->barrier && l->last_error && l->status_string &&
              l->send && l->recv && l->wait && l->hook_topk && l->reducer_create &&
              l->mark_ready && l->finalize && l->reducer_destroy && l->topk_create,
          "dlsym: %s", dlerror());
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

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Opens the library and its world, and passes a first barrier. */
static int open_world(const char *path, library_t *l, sc_comm_t **comm)
{
    if (library_open(path, l) != 0)
        return 1;
    CHECK(l->init(comm) == SC_SUCCESS, "sc_comm_init_from_env: %s", l->last_error());
    g_rank = l->rank(*comm);
    CHECK(l->barrier(*comm, NULL) == SC_SUCCESS, "sc_barrier: %s", l->last_error());
    return 0;
}

/* Rank 1's barrier once rank 0 closed its library: fails within limit_s with
 * SC_ERR_PEER_FAILED, saying that rank 0 left, its library unloaded. */
static int barrier_says_rank_0_left(library_t *l, sc_comm_t *comm, double limit_s)
{
    double t0 = now_s();
    sc_status_t st = l->barrier(comm, NULL);

    printf("rank 1: the barrier failed after %.2f s: %s\n", now_s() - t0, l->last_error());
    CHECK(st == SC_ERR_PEER_FAILED, "sc_barrier: %s: %s", l->status_string(st),
          l->last_error());
    CHECK(strstr(l->last_error(), "rank 0 left: its process unloaded libshardcomm"),
          "sentence: %s", l->last_error());
    CHECK(now_s() - t0 < limit_s, "the barrier failed after %.2f s", now_s() - t0);
    return 0;
}

/* Rank 0 closes the library while its communicator lives (a ctypes binding unloaded
 * without sc_comm_destroy) and goes on 0.5 s: the communicator's progress thread ran on
 * in the unmapped code and the process died of SIGSEGV. Rank 1 keeps its library and
 * waits in a barrier: it fails within seconds with SC_ERR_PEER_FAILED, saying that rank 0
 * left, its library unloaded with the communicator live (rank 0's process lives on: no
 * pid check would tell). */
static int test_live_communicator_outlives_dlclose(const char *path)
{
    library_t l;
    sc_comm_t *comm;

    if (open_world(path, &l, &comm) != 0)
        return 1;
    if (g_rank == 0) {
        usleep(200000); /* rank 1 waits in its barrier meanwhile */
        CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
        usleep(500000);
        return 0;
    }
    if (barrier_says_rank_0_left(&l, comm, 5.0) != 0)
        return 1;
    CHECK(l.destroy(comm) == SC_SUCCESS, "sc_comm_destroy: %s", l.last_error());
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    return 0;
}

/* A child made here runs body and exits with its result by exit() (destructors and
 * all); it must end within 10 s with status 0 (else it is killed). */
static int exits_cleanly(int (*body)(const char *), const char *path, const char *what)
{
    double t0 = now_s();
    int status = 0;
    pid_t pid, done;

    fflush(NULL); /* the child's exit would write what is buffered again */
    pid = fork();
    CHECK(pid >= 0, "fork failed");
    if (pid == 0)
        exit(body(path));
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 && now_s() - t0 < 10.0)
        usleep(1000);
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        CHECK(0, "%s: the process still ran after 10 s", what);
    }
    CHECK(done == pid, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the process %s %d", what,
          WIFSIGNALED(status) ? "was killed by signal" : "exited with",
          WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    printf("%s: exited in %.2f s\n", what, now_s() - t0);
    return 0;
}

/* Set: rank 1 ends at once, without destructors, before rank 0 exits. */
static int g_peer_leaves_first;

/* Leaves the communicator live and exits: rank 1 at once (_exit) where
 * g_peer_leaves_first is set, rank 0 then 0.5 s later, the peer gone without a word. */
static int exit_live(const char *path)
{
    library_t l;
    sc_comm_t *comm;

    if (open_world(path, &l, &comm) != 0)
        return 1;
    if (g_peer_leaves_first && g_rank == 1)
        _exit(0);
    if (g_peer_leaves_first)
        usleep(500000);
    return 0;
}

/* exit() with a live communicator (no sc_comm_destroy: a script that just ends) returns
 * within seconds and with status 0, its peer alive and exiting too. */
static int test_exit_with_a_live_communicator(const char *path)
{
    return exits_cleanly(exit_live, path, "exit with a live communicator");
}

/* The same with the peer gone before this rank exits, its endpoint not yet failed. */
static int test_exit_with_a_live_communicator_after_its_peer(const char *path)
{
    g_peer_leaves_first = 1;
    return exits_cleanly(exit_live, path, "exit with a live communicator, the peer gone");
}

/* Rank 1 sends rank 0 a message and ends (exit) without destroying its communicator, as
 * a script that just ends: rank 0's receive of it, posted 0.3 s later, still gets it, and
 * its next receive from rank 1 fails with SC_ERR_PEER_FAILED saying that rank 1 left, its
 * process exited with the communicator live. */
static int test_message_sent_before_an_exit_is_received(const char *path)
{
    const int32_t sent[4] = {11, 22, 33, 44};
    int32_t got[4] = {0, 0, 0, 0};
    library_t l;
    sc_comm_t *comm;
    sc_status_t st;

    if (open_world(path, &l, &comm) != 0)
        return 1;
    if (g_rank == 1) {
        CHECK(l.send(sent, 4, SC_INT32, 0, comm, NULL, NULL) == SC_SUCCESS, "sc_send: %s",
              l.last_error());
        return 0;
    }
    usleep(300000);
    CHECK(l.recv(got, 4, SC_INT32, 1, comm, NULL, NULL) == SC_SUCCESS, "sc_recv: %s",
          l.last_error());
    CHECK(memcmp(got, sent, sizeof(got)) == 0, "received %d %d %d %d", got[0], got[1], got[2],
          got[3]);
    st = l.recv(got, 4, SC_INT32, 1, comm, NULL, NULL);
    CHECK(st == SC_ERR_PEER_FAILED && strstr(l.last_error(), "rank 1 left: its process "),
          "the second sc_recv: %s: %s", l.status_string(st), l.last_error());
    CHECK(l.destroy(comm) == SC_SUCCESS, "sc_comm_destroy: %s", l.last_error());
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    return 0;
}

static int return_at_once(const char *path)
{
    (void)path;
    return 0;
}

/* A child forked while the communicator lives (a data loader's worker) ends with exit():
 * the unload leaves the inherited communicator alone (its progress thread is the
 * parent's, not the child's to end, and its abort would tell the parent's peers), and
 * the parent's collectives go on. */
static int test_fork_exits_beside_a_live_communicator(const char *path)
{
    library_t l;
    sc_comm_t *comm;

    if (open_world(path, &l, &comm) != 0)
        return 1;
    if (exits_cleanly(return_at_once, path, "a fork's exit") != 0)
        return 1;
    CHECK(l.barrier(comm, NULL) == SC_SUCCESS, "sc_barrier: %s", l.last_error());
    CHECK(l.destroy(comm) == SC_SUCCESS, "sc_comm_destroy: %s", l.last_error());
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    return 0;
}

static void exit_at_once(int sig)
{
    (void)sig;
    exit(0);
}

/* Waits for a receive from itself that no send matches (a world of one rank), until
 * SIGALRM's handler calls exit(), 10 to 60 ms in: the wait holds the transport's lock
 * part of that time, so the handler often runs on a thread that holds it. */
static int exit_in_a_wait(const char *path)
{
    struct sigaction sa;
    library_t l;
    sc_comm_t *comm;
    sc_request_t *req;
    int32_t x;

    if (open_world(path, &l, &comm) != 0)
        return 1;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = exit_at_once;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGALRM, &sa, NULL) == 0, "sigaction");
    CHECK(l.recv(&x, 1, SC_INT32, 0, comm, NULL, &req) == SC_SUCCESS, "sc_recv: %s",
          l.last_error());
    ualarm((useconds_t)(10000 + (getpid() % 6) * 10000), 0);
    l.wait(req);
    return 1; /* not reached: the receive has no send */
}

/* exit() from a signal handler (a program's SIGTERM handler) that interrupted the
 * library with its transport's lock held on that thread: the process still ends, within
 * seconds, 40 times of 40. The unload waited for that lock for ever: run with
 * UCX_TLS=tcp,self and a wait that spins throughout, where the handler finds the lock
 * held in about 13% of the exits, the first such exit hung. */
static int test_exit_from_a_signal_handler_in_a_wait(const char *path)
{
    for (int i = 0; i < 40; i++)
        if (exits_cleanly(exit_in_a_wait, path, "exit from a signal handler in a wait") != 0)
            return 1;
    return 0;
}

/* The gradient of the top-k reducers below: one bucket of it, whose selection on the
 * compressor's worker thread (and its pool of 2) takes tens of milliseconds. */
#define TOPK_GRAD_COUNT (4u << 20)

/* A reducer with the top-k hook (density 0.01, 2 selection threads) over one gradient
 * of TOPK_GRAD_COUNT float32 in one bucket: its finisher thread runs from here. */
static int topk_reducer(library_t *l, sc_comm_t *comm, sc_reducer_t **r)
{
    sc_compress_config_t cc = SC_COMPRESS_CONFIG_INIT;
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    const sc_grad_desc_t desc = {TOPK_GRAD_COUNT, SC_FLOAT32, "w"};
    sc_comm_hook_t hook;

    cc.density = 0.01;
    cc.threads = 2;
    CHECK(l->hook_topk(&cc, &hook) == SC_SUCCESS, "sc_comm_hook_topk: %s", l->last_error());
    cfg.hook = &hook;
    cfg.bucket_cap_bytes = TOPK_GRAD_COUNT * sizeof(float);
    cfg.first_bucket_bytes = TOPK_GRAD_COUNT * sizeof(float);
    CHECK(l->reducer_create(comm, &desc, 1, &cfg, r) == SC_SUCCESS, "sc_reducer_create: %s",
          l->last_error());
    return 0;
}

/* A gradient of distinct magnitudes (the selection has work to do). */
static float *topk_grad(void)
{
    float *g = malloc(TOPK_GRAD_COUNT * sizeof(float));

    for (size_t i = 0; g && i < TOPK_GRAD_COUNT; i++)
        g[i] = (float)((i * 2654435761u) % 1000003u) - 500001.0f;
    return g;
}

/* One iteration of the top-k reducer over g. */
static int iterate(library_t *l, sc_reducer_t *r, float *g)
{
    CHECK(l->mark_ready(r, 0, g) == SC_SUCCESS, "sc_reducer_mark_ready: %s",
          l->last_error());
    CHECK(l->finalize(r) == SC_SUCCESS, "sc_reducer_finalize: %s", l->last_error());
    return 0;
}

/* Opens the world, its top-k reducer and the gradient for it. */
static int topk_world(const char *path, library_t *l, sc_comm_t **comm, sc_reducer_t **r,
                      float **g)
{
    if (open_world(path, l, comm) != 0 || topk_reducer(l, *comm, r) != 0)
        return 1;
    *g = topk_grad();
    CHECK(*g != NULL, "out of memory");
    return 0;
}

/* Opens the world and marks the top-k reducer's gradient: its bucket's selection runs
 * on the compressor's worker thread (and its pool) as this returns. */
static int selecting(const char *path, library_t *l, float **g)
{
    sc_comm_t *comm;
    sc_reducer_t *r;

    if (topk_world(path, l, &comm, &r, g) != 0)
        return 1;
    CHECK(l->mark_ready(r, 0, *g) == SC_SUCCESS, "sc_reducer_mark_ready: %s",
          l->last_error());
    return 0;
}

/* The library closed (dlclose) while a top-k reducer's iteration runs (its gradient
 * marked, the bucket's selection running on the compressor's worker thread and pool, the
 * finisher waiting for it), reducer and communicator never destroyed; the process goes
 * on 0.5 s. Those threads ran on in the unmapped code: SIGSEGV. */
static int test_selection_outlives_dlclose(const char *path)
{
    library_t l;
    float *g;

    if (selecting(path, &l, &g) != 0)
        return 1;
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    usleep(500000);
    free(g);
    return 0;
}

static int exit_selecting(const char *path)
{
    library_t l;
    float *g;

    return selecting(path, &l, &g);
}

/* Two ranks: rank 0 marks its top-k reducer's gradient, and 0.3 s later (the selection
 * done, the finisher waiting for rank 1's part of the bucket's all-gather) closes the
 * library, reducer and communicator never destroyed, and goes on 0.5 s; rank 1 never
 * marks. The finisher, woken by the communicator's abort, ran on in the unmapped code:
 * SIGSEGV. */
static int test_finisher_waiting_outlives_dlclose(const char *path)
{
    library_t l;
    sc_comm_t *comm;
    sc_reducer_t *r;
    float *g;

    if (topk_world(path, &l, &comm, &r, &g) != 0)
        return 1;
    if (g_rank == 1) {
        usleep(1500000);
        free(g);
        return 0;
    }
    CHECK(l.mark_ready(r, 0, g) == SC_SUCCESS, "sc_reducer_mark_ready: %s", l.last_error());
    usleep(300000);
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    usleep(500000);
    free(g);
    return 0;
}

/* Rank 1 sends rank 0 its pid (*pid) and stops itself (SIGSTOP), and returns once
 * continued; rank 0 receives it (*pid) and returns once rank 1 is stopped. */
static int stop_rank_1(library_t *l, sc_comm_t *comm, int32_t *pid)
{
    if (g_rank == 1) {
        *pid = (int32_t)getpid();
        CHECK(l->send(pid, 1, SC_INT32, 0, comm, NULL, NULL) == SC_SUCCESS, "sc_send: %s",
              l->last_error());
        raise(SIGSTOP);
        return 0;
    }
    CHECK(l->recv(pid, 1, SC_INT32, 1, comm, NULL, NULL) == SC_SUCCESS, "sc_recv: %s",
          l->last_error());
    CHECK(sc_test_wait_stopped((int)*pid, 10.0), "rank 1 (pid %d) did not stop", (int)*pid);
    return 0;
}

/* Two ranks: rank 1 sends rank 0 its pid and stops itself (SIGSTOP); rank 0 marks its
 * top-k reducer's gradient and 1 s later (the selection done, the bucket's all-gather
 * sending rank 1 its 335552 bytes, a rendezvous that a stopped rank never takes) closes
 * the library, reducer and communicator never destroyed, goes on 0.5 s, then continues
 * rank 1. The unload's abort left the all-gather to settle (its transfer in flight with
 * a live peer of this node: up to 5 s), the finisher waited for it in sc_wait past the
 * unload's 2 s for the library's threads, and ran on in the unmapped code: SIGSEGV. So
 * did finisher_waiting_outlives_dlclose under ThreadSanitizer, where rank 1's exit,
 * which ends that transfer, came later than those 2 s. */
static int test_finisher_waiting_on_a_stopped_peer_outlives_dlclose(const char *path)
{
    library_t l;
    sc_comm_t *comm;
    sc_reducer_t *r;
    int32_t pid;
    float *g;
    double t0;

    if (topk_world(path, &l, &comm, &r, &g) != 0 || stop_rank_1(&l, comm, &pid) != 0)
        return 1;
    if (g_rank == 1) {
        free(g);
        return 0;
    }
    CHECK(l.mark_ready(r, 0, g) == SC_SUCCESS, "sc_reducer_mark_ready: %s", l.last_error());
    usleep(1000000);
    t0 = now_s();
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    printf("dlclose took %.2f s\n", now_s() - t0);
    usleep(500000);
    CHECK(kill((pid_t)pid, SIGCONT) == 0, "kill SIGCONT");
    free(g);
    return 0;
}

#define PENDING_SENDS 256
#define PENDING_SEND_BYTES 1024

/* Two ranks: rank 1 sends rank 0 its pid and stops itself (SIGSTOP); rank 0 issues 256
 * non-blocking sends of 1 KiB to it, most of which stay pending (a stopped rank takes
 * nothing), and 0.2 s later closes the library with the communicator never destroyed,
 * then continues rank 1. The unload's abort cancelled the pending sends one after
 * another, each waited for up to 50 ms, and gave up on them again one after another
 * once its leaving message was waited for: about 0.1 s a send, 37 s for 400 at an exit.
 * dlclose returns within 2 s. */
static int test_dlclose_with_sends_pending_to_a_stopped_peer_is_prompt(const char *path)
{
    static char bufs[PENDING_SENDS][PENDING_SEND_BYTES];
    sc_request_t *reqs[PENDING_SENDS];
    library_t l;
    sc_comm_t *comm;
    int32_t pid;
    double t0, took;

    if (open_world(path, &l, &comm) != 0 || stop_rank_1(&l, comm, &pid) != 0)
        return 1;
    if (g_rank == 1)
        return 0;
    for (int i = 0; i < PENDING_SENDS; i++)
        CHECK(l.send(bufs[i], PENDING_SEND_BYTES, SC_UINT8, 1, comm, NULL, &reqs[i]) ==
                  SC_SUCCESS,
              "sc_send %d: %s", i, l.last_error());
    usleep(200000);
    t0 = now_s();
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    took = now_s() - t0;
    CHECK(kill((pid_t)pid, SIGCONT) == 0, "kill SIGCONT");
    printf("dlclose with %d sends issued to a stopped peer took %.2f s\n", PENDING_SENDS,
           took);
    CHECK(took < 2.0, "dlclose took %.2f s", took);
    return 0;
}

/* Two ranks: rank 1 sends rank 0 its pid and stops itself (SIGSTOP); rank 0 issues
 * `pending` sends of PENDING_SEND_BYTES to it (256 fill its shared-memory FIFO: the
 * messages after them wait in rank 0's worker), closes the library 0.2 s later with the
 * communicator never destroyed, continues rank 1 and lives on until rank 1's process
 * ended (10 s at most). Rank 1, continued, calls a barrier: it must fail at once (3 s
 * here) with SC_ERR_PEER_FAILED saying that rank 0 left, its library unloaded. The
 * unload told no stopped peer (a message it never takes waited in its endpoint, whose
 * close UCX asserted on): rank 1 waited its SC_TIMEOUT (5 s here) and said that nothing
 * came from rank 0 (no pid check tells: rank 0 lives on). */
static int stopped_peer_told(const char *path, int pending)
{
    static char bufs[PENDING_SENDS][PENDING_SEND_BYTES];
    sc_request_t *reqs[PENDING_SENDS];
    library_t l;
    sc_comm_t *comm;
    int32_t pid;
    double t0;

    if (open_world(path, &l, &comm) != 0 || stop_rank_1(&l, comm, &pid) != 0)
        return 1;
    if (g_rank == 0) {
        for (int i = 0; i < pending; i++)
            CHECK(l.send(bufs[i], PENDING_SEND_BYTES, SC_UINT8, 1, comm, NULL, &reqs[i]) ==
                      SC_SUCCESS,
                  "sc_send %d: %s", i, l.last_error());
        if (pending)
            usleep(200000);
        CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
        CHECK(kill((pid_t)pid, SIGCONT) == 0, "kill SIGCONT");
        t0 = now_s();
        while (kill((pid_t)pid, 0) == 0 && now_s() - t0 < 10.0)
            usleep(10000);
        return 0;
    }
    if (barrier_says_rank_0_left(&l, comm, 3.0) != 0)
        return 1;
    CHECK(l.destroy(comm) == SC_SUCCESS, "sc_comm_destroy: %s", l.last_error());
    return 0;
}

/* Its FIFO has room: the leaving message reaches it there (run without the mailboxes). */
static int test_stopped_peer_is_told_of_a_dlclose(const char *path)
{
    return stopped_peer_told(path, 0);
}

/* Its FIFO is full: the mailboxes' mark tells it. */
static int test_stopped_peer_with_a_full_fifo_is_told_of_a_dlclose(const char *path)
{
    return stopped_peer_told(path, PENDING_SENDS);
}

/* exit() in the same state: the process ends within seconds, with status 0. */
static int test_exit_while_selecting(const char *path)
{
    return exits_cleanly(exit_selecting, path, "exit while selecting");
}

/* The library closed with a top-k reducer idle between iterations (its finisher, its
 * compressor's worker and pool waiting for work) and a selector of 3 threads, none
 * destroyed: no thread of the library is left (fewer threads than with the communicator
 * alone, whose progress thread ends too). They slept on in the unmapped code, each
 * a SIGSEGV at its next wake-up. */
static int test_idle_threads_end_at_dlclose(const char *path)
{
    sc_topk_config_t tc = SC_TOPK_CONFIG_INIT;
    library_t l;
    sc_comm_t *comm;
    sc_reducer_t *r;
    sc_topk_t *topk;
    float *g;
    int before, after;

    if (open_world(path, &l, &comm) != 0)
        return 1;
    before = sc_test_thread_count();
    if (topk_reducer(&l, comm, &r) != 0)
        return 1;
    g = topk_grad();
    CHECK(g != NULL, "out of memory");
    if (iterate(&l, r, g) != 0)
        return 1;
    tc.threads = 3;
    CHECK(l.topk_create(&tc, &topk) == SC_SUCCESS, "sc_topk_create: %s", l.last_error());
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    /* A thread joined may stay listed in /proc a moment after its join. */
    after = sc_test_thread_count_down_to(before - 1, 1.0);
    CHECK(before > 0 && after < before, "%d threads after dlclose, %d with the communicator "
          "alone", after, before);
    free(g);
    return 0;
}

/* A child forked while a top-k reducer lives ends with exit(): the unload leaves the
 * threads it inherited alone (the parent's), and the parent's next iteration goes on. */
static int test_fork_exits_beside_a_live_reducer(const char *path)
{
    library_t l;
    sc_comm_t *comm;
    sc_reducer_t *r;
    float *g;

    if (topk_world(path, &l, &comm, &r, &g) != 0 || iterate(&l, r, g) != 0)
        return 1;
    if (exits_cleanly(return_at_once, path, "a fork's exit beside a reducer") != 0)
        return 1;
    if (iterate(&l, r, g) != 0)
        return 1;
    CHECK(l.reducer_destroy(r) == SC_SUCCESS, "sc_reducer_destroy: %s", l.last_error());
    CHECK(l.destroy(comm) == SC_SUCCESS, "sc_comm_destroy: %s", l.last_error());
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    free(g);
    return 0;
}

/* Whether something listens on TCP port of this host (/proc/net/tcp, tcp6: state 0A). */
static int port_listens(int port)
{
    static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    char line[512];
    int found = 0;

    for (int i = 0; i < 2 && !found; i++) {
        FILE *f = fopen(tables[i], "r");
        unsigned local, state;

        if (!f)
            continue;
        while (!found && fgets(line, sizeof(line), f))
            found = sscanf(line, " %*s %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x", &local,
                           &state) == 2 && (int)local == port && state == 0x0A;
        fclose(f);
    }
    return found;
}

/* A connection to TCP port of this host (rank 0's store): its descriptor, or -1 with
 * errno set. */
static int store_connect(int port)
{
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0), err;

    if (fd >= 0 && connect(fd, (struct sockaddr *)&to, sizeof(to)) != 0) {
        err = errno;
        close(fd);
        errno = err;
        fd = -1;
    }
    return fd;
}

/* Three ranks, SC_TIMEOUT=inf: rank 1 fails before it joins (SC_BIND=bogus) and tells
 * rank 0's store, rank 2 never comes. *rank_0 is set on rank 0 alone, where the library
 * is open in *l, its sc_comm_init failed naming rank 1's failure and its store still
 * listens on *port to tell rank 2 (for 30 s); ranks 1 and 2 have nothing more to do. */
static int failed_rendezvous_left_to_rank_0(const char *path, library_t *l, int *port,
                                            int *rank_0)
{
    const char *rank = getenv("SC_RANK"), *master_port = getenv("SC_MASTER_PORT");
    sc_comm_t *comm = NULL;
    sc_status_t st;

    CHECK(rank && master_port, "SC_RANK and SC_MASTER_PORT must be set (run it under scrun)");
    g_rank = atoi(rank);
    *port = atoi(master_port);
    *rank_0 = 0;
    if (g_rank == 2)
        return 0;
    setenv("SC_TIMEOUT", "inf", 1);
    if (g_rank == 1)
        setenv("SC_BIND", "bogus", 1);
    if (library_open(path, l) != 0)
        return 1;
    st = l->init(&comm);
    CHECK(st != SC_SUCCESS && comm == NULL, "sc_comm_init_from_env succeeded");
    if (g_rank == 1)
        return 0; /* left open: UCX's libraries, closed without a context, leak */
    CHECK(st == SC_ERR_PEER_FAILED && strstr(l->last_error(), "rank 1 could not join it"),
          "sc_comm_init_from_env: %s: %s", l->status_string(st), l->last_error());
    CHECK(port_listens(*port), "rank 0's store listens no more after its sc_comm_init: "
          "nothing outlived the call");
    *rank_0 = 1;
    return 0;
}

/* The failed rendezvous of failed_rendezvous_left_to_rank_0, and rank 0 closes the
 * library at once and goes on 0.5 s: the unload stops that store and joins its thread
 * (its port listens no more), which would run on in the unmapped code. */
static int test_store_telling_a_failed_rendezvous_outlives_dlclose(const char *path)
{
    library_t l;
    int port, rank_0;
    double t0;

    if (failed_rendezvous_left_to_rank_0(path, &l, &port, &rank_0) != 0)
        return 1;
    if (!rank_0)
        return 0;
    t0 = now_s();
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    printf("dlclose took %.2f s\n", now_s() - t0);
    CHECK(!port_listens(port), "rank 0's store still listens after dlclose: its thread "
          "runs on");
    usleep(500000);
    return 0;
}

/* Rank 0 closes the library l, its child (forked without exec, asleep) still alive: a
 * process coming to the store's port then is refused at once, the port listening in
 * neither process; the child is killed after. */
static int refused_after_dlclose(library_t *l, int port, pid_t child)
{
    int fd, err, listens_after;

    CHECK(dlclose(l->lib) == 0, "dlclose: %s", dlerror());
    listens_after = port_listens(port);
    fd = store_connect(port);
    err = errno;
    if (fd >= 0)
        close(fd);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK(fd < 0 && err == ECONNREFUSED && !listens_after, "a process coming after "
          "dlclose was not refused (%s): the store's port still listens in the fork's child",
          fd >= 0 ? "it connected" : strerror(err));
    return 0;
}

/* The failed rendezvous of failed_rendezvous_left_to_rank_0, then rank 0 forks a child
 * that sleeps 3 s (no exec): the store still listens in rank 0. Rank 0 closes the
 * library: a process that comes then is refused at once (the port listens no more). The
 * child held a copy of the store's listening socket, on which that process was queued
 * and answered by none until the child exited. */
static int test_fork_keeps_no_store_of_a_failed_rendezvous(const char *path)
{
    int port, rank_0, listens_beside;
    library_t l;
    pid_t child;

    if (failed_rendezvous_left_to_rank_0(path, &l, &port, &rank_0) != 0)
        return 1;
    if (!rank_0)
        return 0;
    child = fork();
    CHECK(child >= 0, "fork: %s", strerror(errno));
    if (child == 0) {
        usleep(3000000);
        _exit(0);
    }
    usleep(100000); /* the child runs */
    listens_beside = port_listens(port);
    if (!listens_beside) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    CHECK(listens_beside, "rank 0's store listens no more beside the fork's child");
    return refused_after_dlclose(&l, port, child);
}

/* Rank 0's thread that forks, once its store listens (fork: the port, then the child
 * and the marker file that tells rank 1 to come). */
typedef struct {
    int port;
    char marker[128];
    pid_t child;
} forker_t;

static void *fork_beside_the_rendezvous(void *arg)
{
    forker_t *f = arg;
    double t0 = now_s();
    FILE *m;

    while (!port_listens(f->port) && now_s() - t0 < 15.0)
        usleep(20000);
    f->child = fork();
    if (f->child == 0) {
        usleep(30000000);
        _exit(0);
    }
    m = fopen(f->marker, "w");
    if (m)
        fclose(m);
    return NULL;
}

/* As fork_keeps_no_store_of_a_failed_rendezvous, where rank 0's process forks the child
 * during the rendezvous, as its store listens, before rank 1 comes and fails it: the
 * child closed its copy of the store's listening socket as it started too, and after
 * dlclose a process that comes is refused at once. Only a store already listed or held
 * was closed in the child, which kept the port listening, answered by none. */
static int test_fork_during_the_rendezvous_keeps_no_store(const char *path)
{
    const char *master_port = getenv("SC_MASTER_PORT");
    forker_t f = {.child = -1};
    int port, rank_0;
    pthread_t thread;
    library_t l;
    double t0 = now_s();

    CHECK(master_port, "SC_MASTER_PORT must be set (run it under scrun)");
    f.port = atoi(master_port);
    snprintf(f.marker, sizeof(f.marker), "/tmp/sc-test-fork-during-rendezvous-%d", f.port);
    if (getenv("SC_RANK") && atoi(getenv("SC_RANK")) == 0) {
        unlink(f.marker);
        CHECK(pthread_create(&thread, NULL, fork_beside_the_rendezvous, &f) == 0,
              "pthread_create");
    } else {
        while (access(f.marker, F_OK) != 0 && now_s() - t0 < 20.0)
            usleep(20000);
    }
    if (failed_rendezvous_left_to_rank_0(path, &l, &port, &rank_0) != 0)
        return 1;
    if (!rank_0)
        return 0;
    CHECK(pthread_join(thread, NULL) == 0, "pthread_join");
    unlink(f.marker);
    CHECK(f.child > 0, "fork: %s", strerror(errno));
    return refused_after_dlclose(&l, port, f.child);
}

/* The failed rendezvous of failed_rendezvous_left_to_rank_0, then three processes of
 * another protocol connect to rank 0's store and, once accepted, send their hellos
 * (protocol 0) together, and never read nor close: the store answers each and reads
 * what it sends until it closes, up to 2 s each, one after the other. Rank 0 closes the
 * library 0.3 s later: the unload stops the store within its bound of 2 s all the same
 * (dlclose returns within 1 s, and the port listens no more), where the store's waits
 * took no stop: 6 s, past the bound, and its thread ran on in the unmapped code. */
static int test_store_waiting_on_a_connection_ends_at_dlclose(const char *path)
{
    static const uint32_t hello[2] = {0x53434856u /* "SCHV", a rendezvous's hello */, 0};
    int fds[3], port, rank_0;
    library_t l;
    double t0;

    if (failed_rendezvous_left_to_rank_0(path, &l, &port, &rank_0) != 0)
        return 1;
    if (!rank_0)
        return 0;
    for (int i = 0; i < 3; i++) {
        fds[i] = store_connect(port);
        CHECK(fds[i] >= 0, "a process of another protocol could not reach the store: %s",
              strerror(errno));
    }
    usleep(200000); /* the store accepted all three: their hellos come under one poll */
    for (int i = 0; i < 3; i++)
        CHECK(write(fds[i], hello, sizeof(hello)) == (ssize_t)sizeof(hello), "write: %s",
              strerror(errno));
    usleep(300000); /* the store answered one and waits for it to close */
    t0 = now_s();
    CHECK(dlclose(l.lib) == 0, "dlclose: %s", dlerror());
    printf("dlclose took %.2f s\n", now_s() - t0);
    CHECK(now_s() - t0 < 1.0 && !port_listens(port), "rank 0's store still listens after "
          "dlclose (%.2f s): its thread runs on, waiting on a connection", now_s() - t0);
    usleep(500000);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
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

#define TEST(name) {#name, test_##name}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(const char *path);
    } tests[] = {
        TEST(thread_that_waited_outlives_dlclose),
        TEST(live_communicator_outlives_dlclose),
        TEST(exit_with_a_live_communicator),
        TEST(exit_with_a_live_communicator_after_its_peer),
        TEST(message_sent_before_an_exit_is_received),
        TEST(fork_exits_beside_a_live_communicator),
        TEST(exit_from_a_signal_handler_in_a_wait),
        TEST(selection_outlives_dlclose),
        TEST(exit_while_selecting),
        TEST(finisher_waiting_outlives_dlclose),
        TEST(finisher_waiting_on_a_stopped_peer_outlives_dlclose),
        TEST(dlclose_with_sends_pending_to_a_stopped_peer_is_prompt),
        TEST(stopped_peer_is_told_of_a_dlclose),
        TEST(stopped_peer_with_a_full_fifo_is_told_of_a_dlclose),
        TEST(idle_threads_end_at_dlclose),
        TEST(fork_exits_beside_a_live_reducer),
        TEST(store_telling_a_failed_rendezvous_outlives_dlclose),
        TEST(store_waiting_on_a_connection_ends_at_dlclose),
        TEST(fork_keeps_no_store_of_a_failed_rendezvous),
        TEST(fork_during_the_rendezvous_keeps_no_store),
        TEST(handler_set_before_load_is_kept),
        TEST(hangup_still_ends_the_process),
    };

    if (argc != 3) {
        fprintf(stderr, "usage: test_library_load TEST LIBRARY\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (strcmp(argv[1], tests[i].name) == 0) {
            int rc = tests[i].fn(argv[2]);

            printf("%s: %s\n", rc ? "FAIL" : "PASS", argv[1]);
            return rc;
        }
    }
    fprintf(stderr, "test_library_load: no test named %s\n", argv[1]);
    return 2;
}
