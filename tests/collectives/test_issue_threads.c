/* Calls on one communicator from two threads of one rank. overlap ROUNDS: each round
 * both threads of rank 0 issue a blocking allreduce on the world at once (a barrier
 * releases them together); the peers join it only after rank 0 saw one thread's call
 * return, so the other's call is still in flight then. The thread that came second
 * must be refused at once with SC_ERR_INVALID_ARG and a sentence naming both calls, and
 * so must its sc_allreduce with a request, sc_barrier, sc_mem_alloc, sc_mem_free,
 * sc_comm_split and sc_comm_destroy on that communicator, each leaving its outputs
 * untouched; the first thread's allreduce completes with the right sum on every rank
 * (before, both were issued: numbered in whichever order, each waiting for a peer that
 * joined one). handover ROUNDS: the two threads take turns, handing the communicator
 * over under a mutex: blocking allreduces, then sc_mem_alloc and sc_mem_free on one
 * thread and sc_comm_split (whose own collectives on the world pass) on the other, all
 * succeeding. reducer ROUNDS: each round rank 0 makes a reducer on the world on one
 * thread and finalizes a synced iteration of it on another, the peers joining each only
 * once rank 0's main thread has issued an allreduce on the world meanwhile: refused with
 * a sentence naming sc_reducer_create, then sc_reducer_finalize, which hold the
 * communicator for their whole length (before, the allreduce passed between their
 * collectives, or was refused naming one of them); the reducer's sum is exact, and an
 * allreduce on the world after each works. Run through scrun:
 * test_issue_threads overlap|handover|reducer ROUNDS. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int check_rank = -1;
#define SC_CHECK_RANK check_rank
#include "../common/sc_check.h"

#define COUNT 256
/* How long rank 0 waits for the call of the thread that came second to return. */
#define REFUSAL_WAIT_S 10

static sc_comm_t *world, *side;
static int size;

/* Rank 0's input from thread t at step k; a peer's input. */
static int32_t input0(int t, int k, int i) { return (t + 1) * 1000000 + k * 1000 + i; }
static int32_t input_peer(int r, int i) { return r * 10 + i % 7; }

static int32_t peers_sum(int i)
{
    int32_t s = 0;

    for (int r = 1; r < size; r++)
        s += input_peer(r, i);
    return s;
}

/* One call that another thread's call other on world must refuse. */
static int refused_by(sc_status_t st, const char *call, const char *other)
{
    char want[128];

    snprintf(want, sizeof(want), "%s: another thread is in %s on this communicator", call,
             other);
    CHECK(st == SC_ERR_INVALID_ARG, "%s returned %s (%s) while another thread's %s was in "
          "flight", call, sc_status_string(st), sc_last_error(), other);
    CHECK(strstr(sc_last_error(), want) != NULL, "sentence '%s' lacks '%s'", sc_last_error(),
          want);
    CHECK(strstr(sc_last_error(), "one thread at a time") != NULL,
          "sentence '%s' does not say that calls come from one thread at a time",
          sc_last_error());
    return 0;
}

/* One call that another thread's blocking allreduce on world must refuse. */
static int refused_here(sc_status_t st, const char *call)
{
    return refused_by(st, call, "sc_allreduce");
}

/* The second thread's other calls, while the first one's allreduce is still in flight
 * (the peers have not joined it): all refused, their outputs untouched. */
static int refused_others(void)
{
    static int32_t in[COUNT], out[COUNT];
    sc_request_t *req = (sc_request_t *)&in;
    sc_comm_t *sub = (sc_comm_t *)&in;
    void *mem = &out;

    CHECK(!refused_here(sc_allreduce(in, out, COUNT, SC_INT32, SC_SUM, world, NULL, &req),
                        "sc_allreduce"), "a non-blocking allreduce was not refused");
    CHECK(req == (sc_request_t *)&in, "the refused allreduce wrote *req");
    CHECK(!refused_here(sc_barrier(world, NULL), "sc_barrier"), "a barrier was not refused");
    CHECK(!refused_here(sc_mem_alloc(world, 4096, &mem), "sc_mem_alloc"),
          "sc_mem_alloc was not refused");
    CHECK(mem == &out, "the refused sc_mem_alloc wrote *ptr");
    CHECK(!refused_here(sc_mem_free(world, out), "sc_mem_free"), "sc_mem_free was not refused");
    CHECK(!refused_here(sc_comm_split(world, 0, 0, &sub), "sc_comm_split"),
          "sc_comm_split was not refused");
    CHECK(sub == (sc_comm_t *)&in, "the refused sc_comm_split wrote *sub");
    CHECK(!refused_here(sc_comm_destroy(world), "sc_comm_destroy"),
          "sc_comm_destroy was not refused");
    CHECK(sc_comm_rank(world) == 0, "sc_comm_rank is %d", sc_comm_rank(world));
    return 0;
}

typedef struct {
    int t, rounds;
    int32_t out[COUNT];
    sc_status_t st;      /* this round's allreduce */
    char text[1024];     /* its sentence */
    int others_failed;   /* refused_others failed (its sentence printed) */
} issuer_t;

static pthread_barrier_t go, done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t returned_cond = PTHREAD_COND_INITIALIZER;
static int returned, back_first; /* this round's calls returned; the first one's thread */

static void *overlap_thread(void *p)
{
    issuer_t *a = p;
    int32_t in[COUNT];

    for (int k = 0; k < a->rounds; k++) {
        /* After the barrier: rank 0 checks the last round's out before it waits there. */
        pthread_barrier_wait(&go);
        for (int i = 0; i < COUNT; i++) {
            in[i] = input0(a->t, k, i);
            a->out[i] = -1;
        }
        a->st = sc_allreduce(in, a->out, COUNT, SC_INT32, SC_SUM, world, NULL, NULL);
        snprintf(a->text, sizeof(a->text), "%s", sc_last_error());
        a->others_failed = a->st != SC_SUCCESS && refused_others() != 0;
        pthread_mutex_lock(&lock);
        if (returned++ == 0)
            back_first = a->t;
        pthread_cond_broadcast(&returned_cond);
        pthread_mutex_unlock(&lock);
        pthread_barrier_wait(&done);
    }
    return NULL;
}

/* Rank 0's round k: one thread refused while the other's allreduce waits for the
 * peers, which the side barrier then lets join it. */
static int overlap_round0(issuer_t *a, int k)
{
    struct timespec until;
    issuer_t *second, *first;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += REFUSAL_WAIT_S;
    pthread_barrier_wait(&go);
    pthread_mutex_lock(&lock);
    while (returned == 0 && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&returned_cond, &lock, &until);
    pthread_mutex_unlock(&lock);
    CHECK(rc != ETIMEDOUT, "round %d: neither thread's allreduce returned within %d s: both "
          "were issued on the communicator at once, none refused", k, REFUSAL_WAIT_S);
    second = &a[back_first];
    first = &a[1 - back_first];
    CHECK(second->st == SC_ERR_INVALID_ARG, "round %d: the call that returned first got %s "
          "(%s) while the other thread's was in flight", k, sc_status_string(second->st),
          second->text);
    CHECK(strstr(second->text, "sc_allreduce: another thread is in sc_allreduce on this "
                 "communicator") && strstr(second->text, "one thread at a time"),
          "round %d: sentence '%s'", k, second->text);
    CHECK(!second->others_failed, "round %d: thread %d's other calls were not all refused",
          k, second->t);
    for (int i = 0; i < COUNT; i++)
        CHECK(second->out[i] == -1, "round %d: the refused allreduce wrote element %d", k, i);
    CHECK_OK(sc_barrier(side, NULL));
    pthread_barrier_wait(&done);
    CHECK(first->st == SC_SUCCESS, "round %d: thread %d's allreduce: %s (%s)", k, first->t,
          sc_status_string(first->st), first->text);
    for (int i = 0; i < COUNT; i++)
        CHECK(first->out[i] == input0(first->t, k, i) + peers_sum(i),
              "round %d: element %d is %d, expected %d", k, i, (int)first->out[i],
              (int)(input0(first->t, k, i) + peers_sum(i)));
    returned = 0;
    return 0;
}

/* A peer's round k: the allreduce carries one of rank 0's threads' inputs, all of it. */
static int overlap_round_peer(int k)
{
    int32_t in[COUNT], out[COUNT];
    int t = -1;

    for (int i = 0; i < COUNT; i++)
        in[i] = input_peer(check_rank, i);
    CHECK_OK(sc_barrier(side, NULL));
    CHECK_OK(sc_allreduce(in, out, COUNT, SC_INT32, SC_SUM, world, NULL, NULL));
    for (int i = 0; i < COUNT; i++) {
        int32_t from0 = out[i] - peers_sum(i);

        if (t < 0)
            t = from0 == input0(1, k, i) ? 1 : 0;
        CHECK(from0 == input0(t, k, i), "round %d: element %d holds %d from rank 0, "
              "expected %d (its thread %d's input)", k, i, (int)from0, (int)input0(t, k, i),
              t);
    }
    return 0;
}

static int overlap(int rounds)
{
    issuer_t a[2] = {{.t = 0, .rounds = rounds}, {.t = 1, .rounds = rounds}};
    pthread_t th[2];
    int failed = 0;

    if (check_rank != 0) {
        for (int k = 0; k < rounds; k++)
            CHECK(!overlap_round_peer(k), "round %d failed", k);
        return 0;
    }
    pthread_barrier_init(&go, NULL, 3);
    pthread_barrier_init(&done, NULL, 3);
    for (int t = 0; t < 2; t++)
        CHECK(pthread_create(&th[t], NULL, overlap_thread, &a[t]) == 0, "pthread_create");
    for (int k = 0; k < rounds && !failed; k++)
        failed = overlap_round0(a, k);
    CHECK(!failed, "rank 0 failed (its threads left blocked)");
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    return 0;
}

/* handover: step j (0 <= j < 2 ROUNDS: an allreduce, rank 0's input from thread j % 2;
 * then sc_mem_alloc and sc_mem_free; then sc_comm_split with an allreduce on the new
 * communicator), made on rank 0 by thread j % 2, on the peers by their one thread. */
static int handover_step(int j, int rounds)
{
    int32_t in[COUNT], out[COUNT];
    sc_comm_t *sub;
    void *mem;

    if (j == 2 * rounds) {
        CHECK_OK(sc_mem_alloc(world, 1 << 16, &mem));
        memset(mem, check_rank, 1 << 16);
        CHECK_OK(sc_mem_free(world, mem));
        return 0;
    }
    for (int i = 0; i < COUNT; i++)
        in[i] = check_rank == 0 ? input0(j % 2, j / 2, i) : input_peer(check_rank, i);
    if (j == 2 * rounds + 1) {
        CHECK_OK(sc_comm_split(world, 0, check_rank, &sub));
        CHECK_OK(sc_allreduce(in, out, COUNT, SC_INT32, SC_SUM, sub, NULL, NULL));
        CHECK_OK(sc_comm_destroy(sub));
    } else {
        CHECK_OK(sc_allreduce(in, out, COUNT, SC_INT32, SC_SUM, world, NULL, NULL));
    }
    for (int i = 0; i < COUNT; i++)
        CHECK(out[i] == input0(j % 2, j / 2, i) + peers_sum(i),
              "step %d: element %d is %d, expected %d", j, i, (int)out[i],
              (int)(input0(j % 2, j / 2, i) + peers_sum(i)));
    return 0;
}

typedef struct {
    int t, rounds, failed;
} handover_t;

static int turn; /* the next step; past the last one: a step failed */

static void *handover_thread(void *p)
{
    handover_t *a = p;
    int steps = 2 * a->rounds + 2;

    for (int j = a->t; j < steps; j += 2) {
        pthread_mutex_lock(&lock);
        while (turn < j)
            pthread_cond_wait(&returned_cond, &lock);
        if (turn > j) { /* the other thread failed */
            pthread_mutex_unlock(&lock);
            break;
        }
        a->failed = handover_step(j, a->rounds);
        turn = a->failed ? steps + 1 : j + 1;
        pthread_cond_broadcast(&returned_cond);
        pthread_mutex_unlock(&lock);
        if (a->failed)
            break;
    }
    return NULL;
}

static int handover(int rounds)
{
    handover_t a[2] = {{0, rounds, 0}, {1, rounds, 0}};
    pthread_t th[2];

    if (check_rank != 0) {
        for (int j = 0; j < 2 * rounds + 2; j++)
            CHECK(!handover_step(j, rounds), "step %d failed", j);
        return 0;
    }
    for (int t = 0; t < 2; t++)
        CHECK(pthread_create(&th[t], NULL, handover_thread, &a[t]) == 0, "pthread_create");
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    CHECK(!a[0].failed && !a[1].failed, "a step of rank 0's threads failed");
    return 0;
}

#define GRAD_COUNT 64

/* Rank r's gradient at round k; the sum over ranks. */
static float grad_in(int r, int k, int i) { return (float)(r * 100 + k * 10 + i % 5); }

static float grad_sum(int k, int i)
{
    float s = 0.0f;

    for (int r = 0; r < size; r++)
        s += grad_in(r, k, i);
    return s;
}

typedef struct {
    sc_reducer_t *r;
    int entered;    /* the call is about to be made (under lock) */
    sc_status_t st;
    char text[1024];
} reducer_call_t;

static sc_reducer_t *reducer_make(void)
{
    sc_grad_desc_t g = {GRAD_COUNT, SC_FLOAT32, "w"};
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_reducer_t *r = NULL;

    cfg.prediv = 1.0;
    return sc_reducer_create(world, &g, 1, &cfg, &r) == SC_SUCCESS ? r : NULL;
}

static void reducer_call_entered(reducer_call_t *c)
{
    pthread_mutex_lock(&lock);
    c->entered = 1;
    pthread_mutex_unlock(&lock);
}

static void *create_thread(void *p)
{
    reducer_call_t *c = p;

    reducer_call_entered(c);
    c->r = reducer_make();
    c->st = c->r ? SC_SUCCESS : SC_ERR_INTERNAL;
    snprintf(c->text, sizeof(c->text), "%s", sc_last_error());
    return NULL;
}

static void *finalize_thread(void *p)
{
    reducer_call_t *c = p;

    reducer_call_entered(c);
    c->st = sc_reducer_finalize(c->r);
    snprintf(c->text, sizeof(c->text), "%s", sc_last_error());
    return NULL;
}

/* Rank 0's main thread, while call (which waits for the peers) runs on another: an
 * allreduce on the world, which must be refused naming call; then the peers are let in.
 * An allreduce that passed is aborted, so that nothing waits for it. */
static int refused_beside(reducer_call_t *c, const char *call)
{
    static int32_t in[COUNT], out[COUNT];
    sc_request_t *req = NULL;
    sc_status_t st;
    int entered = 0;

    while (!entered) {
        pthread_mutex_lock(&lock);
        entered = c->entered;
        pthread_mutex_unlock(&lock);
    }
    /* It waits inside for the peers, which have not joined it. */
    nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
    st = sc_allreduce(in, out, COUNT, SC_INT32, SC_SUM, world, NULL, &req);
    if (st == SC_SUCCESS) {
        sc_comm_abort(world);
        sc_wait(req);
        sc_request_free(req);
    }
    CHECK(!refused_by(st, "sc_allreduce", call), "an allreduce beside %s was not refused",
          call);
    CHECK(req == NULL, "the refused allreduce wrote *req");
    CHECK_OK(sc_barrier(side, NULL));
    return 0;
}

/* Round k on rank 0: the reducer made and its iteration finalized on other threads. */
static int reducer_round0(int k)
{
    reducer_call_t made = {0}, fin = {0};
    float grad[GRAD_COUNT];
    pthread_t th;
    int failed;

    CHECK(pthread_create(&th, NULL, create_thread, &made) == 0, "pthread_create");
    failed = refused_beside(&made, "sc_reducer_create");
    pthread_join(th, NULL);
    CHECK(!failed, "round %d: a call beside sc_reducer_create was not refused", k);
    CHECK(made.st == SC_SUCCESS, "round %d: sc_reducer_create: %s", k, made.text);
    for (int i = 0; i < GRAD_COUNT; i++)
        grad[i] = grad_in(0, k, i);
    CHECK_OK(sc_reducer_mark_ready(made.r, 0, grad));
    fin.r = made.r;
    CHECK(pthread_create(&th, NULL, finalize_thread, &fin) == 0, "pthread_create");
    failed = refused_beside(&fin, "sc_reducer_finalize");
    pthread_join(th, NULL);
    CHECK(!failed, "round %d: a call beside sc_reducer_finalize was not refused", k);
    CHECK(fin.st == SC_SUCCESS, "round %d: sc_reducer_finalize: %s (%s)", k,
          sc_status_string(fin.st), fin.text);
    for (int i = 0; i < GRAD_COUNT; i++)
        CHECK(grad[i] == grad_sum(k, i), "round %d: element %d is %g, expected %g", k, i,
              (double)grad[i], (double)grad_sum(k, i));
    CHECK_OK(sc_reducer_destroy(made.r));
    return 0;
}

/* Round k on a peer: in each call once rank 0's refusal was seen. */
static int reducer_round_peer(int k)
{
    float grad[GRAD_COUNT];
    sc_reducer_t *r;

    CHECK_OK(sc_barrier(side, NULL));
    r = reducer_make();
    CHECK(r != NULL, "round %d: sc_reducer_create: %s", k, sc_last_error());
    for (int i = 0; i < GRAD_COUNT; i++)
        grad[i] = grad_in(check_rank, k, i);
    CHECK_OK(sc_barrier(side, NULL));
    CHECK_OK(sc_reducer_mark_ready(r, 0, grad));
    CHECK_OK(sc_reducer_finalize(r));
    for (int i = 0; i < GRAD_COUNT; i++)
        CHECK(grad[i] == grad_sum(k, i), "round %d: element %d is %g, expected %g", k, i,
              (double)grad[i], (double)grad_sum(k, i));
    CHECK_OK(sc_reducer_destroy(r));
    return 0;
}

/* Each round ends with an allreduce on the world from rank 0's main thread: the
 * communicator is free again once the reducer's calls returned. */
static int reducer_rounds(int rounds)
{
    for (int k = 0; k < rounds; k++) {
        int32_t in[COUNT], out[COUNT];

        CHECK(!(check_rank == 0 ? reducer_round0(k) : reducer_round_peer(k)),
              "round %d failed", k);
        for (int i = 0; i < COUNT; i++)
            in[i] = check_rank == 0 ? input0(0, k, i) : input_peer(check_rank, i);
        CHECK_OK(sc_allreduce(in, out, COUNT, SC_INT32, SC_SUM, world, NULL, NULL));
        for (int i = 0; i < COUNT; i++)
            CHECK(out[i] == input0(0, k, i) + peers_sum(i), "round %d: element %d of the "
                  "world's allreduce is %d", k, i, (int)out[i]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 2 ? atoi(argv[2]) : 0, failed;

    if (rounds < 1 || (strcmp(argv[1], "overlap") && strcmp(argv[1], "handover") &&
                       strcmp(argv[1], "reducer"))) {
        fprintf(stderr, "usage: test_issue_threads overlap|handover|reducer ROUNDS\n");
        return 2;
    }
    CHECK_OK(sc_comm_init_from_env(&world));
    check_rank = sc_comm_rank(world);
    size = sc_comm_size(world);
    CHECK_OK(sc_comm_split(world, 0, check_rank, &side));
    if (strcmp(argv[1], "reducer") == 0)
        failed = reducer_rounds(rounds);
    else
        failed = strcmp(argv[1], "overlap") == 0 ? overlap(rounds) : handover(rounds);
    CHECK(!failed, "%s failed", argv[1]);
    CHECK_OK(sc_comm_destroy(side));
    CHECK_OK(sc_comm_destroy(world));
    printf("calls from two threads on one communicator (%s): PASS\n", argv[1]);
    return 0;
}
