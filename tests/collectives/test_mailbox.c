/* The header mailboxes' slots (collectives/mailbox.h) driven by hand on 2 ranks: on a
 * communicator split off the world (which opens its own mailboxes and then runs no
 * collective of its own), rank 0 writes messages for collectives 0.. into rank 1's
 * inbox and rank 1 reads them, with world barriers in between. A writer may run 16
 * messages ahead of the reader and no further: the 17th waits for the reader to read
 * the message in its slot; messages are read in any order and come out as written,
 * and one that was not written is not there. Without the mailboxes (SC_LOCAL_MAILBOX=0)
 * the test checks that none were opened. With the argument close: a close with a wake-up
 * in flight to each neighbour waits for them once; with stop: a progress thread asked to
 * stop while the lock is taken a moment clears its sleeping mark first; with idle_post:
 * a progress thread asleep with nothing queued marks its mailboxes sleeping, so that a
 * header that fills one wakes it; with idle_post_after_wait: also where a blocking call
 * just took those marks; with idle_post_before_a_done_call: where a blocking call done
 * as it was queued took them; with idle_post_after_thread_drove: after an op the thread
 * drove; with drive: a caller that drives takes them. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collectives/mailbox.h"
#include "collectives/transport_ucx.h"
#include "core/comm_internal.h"
#include "core/progress.h"
#include "../common/sc_fill_fifo.h"
#include "../common/sc_hold_transport.h"

static int g_rank;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

#define SLOTS 16

/* Message seq's bytes: its number and a pattern, len bytes. */
static size_t message(uint64_t seq, uint8_t *buf)
{
    size_t len = 8 + (size_t)(seq * 37 % 200);

    memcpy(buf, &seq, sizeof(seq));
    for (size_t i = 8; i < len; i++)
        buf[i] = (uint8_t)(seq * 31 + i);
    return len;
}

static int put(sc_comm_t *sub, uint64_t seq, int want)
{
    uint8_t buf[256];
    size_t len = message(seq, buf);
    int got = sc_mbox_put(sub, 1, seq, buf, len);

    CHECK(got == want, "writing message %llu returned %d, expected %d",
          (unsigned long long)seq, got, want);
    return 0;
}

static int get(sc_comm_t *sub, uint64_t seq, int want)
{
    uint8_t buf[1024], expect[256];
    size_t len = 0, elen = message(seq, expect);
    int got = sc_mbox_get(sub, 0, seq, buf, sizeof(buf), &len);

    CHECK(got == want, "reading message %llu returned %d, expected %d",
          (unsigned long long)seq, got, want);
    if (got)
        CHECK(len == elen && memcmp(buf, expect, len) == 0,
              "message %llu came out as %zu bytes unlike the %zu written",
              (unsigned long long)seq, len, elen);
    return 0;
}

static int run(sc_comm_t *world)
{
    const char *env = getenv("SC_LOCAL_MAILBOX");
    int off = env && strcmp(env, "0") == 0, shared = 0;
    sc_comm_t *sub;
    void *probe;

    CHECK(sc_comm_size(world) == 2, "runs with 2 ranks");
    /* Mailboxes are shared memory mapped as sc_mem_alloc's is: none where UCX_TLS
     * leaves no shared-memory transport (with UCX's defaults, there must be some). */
    CHECK_OK(sc_mem_alloc(world, 4096, &probe));
    CHECK_OK(sc_mem_is_shared(world, probe, &shared));
    CHECK_OK(sc_mem_free(world, probe));
    CHECK(shared || getenv("UCX_TLS"), "no shared memory on one node with UCX's defaults");
    if (!shared)
        printf("no shared memory here (UCX_TLS=%s): no mailboxes\n", getenv("UCX_TLS"));
    off = off || !shared;
    CHECK_OK(sc_comm_split(world, 0, g_rank, &sub));
    CHECK((world->mbox != NULL) == !off && (sub->mbox != NULL) == !off,
          "mailboxes world %p, split %p with SC_LOCAL_MAILBOX=%s", (void *)world->mbox,
          (void *)sub->mbox, env ? env : "(unset)");
    if (off)
        return sc_comm_destroy(sub) != SC_SUCCESS;
    /* Rank 0 fills every slot; the 17th message finds message 0 unread in its slot. */
    if (g_rank == 0) {
        for (uint64_t s = 0; s < SLOTS; s++)
            if (put(sub, s, 1))
                return 1;
        if (put(sub, SLOTS, 0))
            return 1;
    }
    CHECK_OK(sc_barrier(world, NULL));
    /* Rank 1 reads out of order; message 16 was not written. */
    if (g_rank == 1 && (get(sub, 1, 1) || get(sub, SLOTS, 0) || get(sub, 0, 1) ||
                        get(sub, 1 + SLOTS, 0)))
        return 1;
    CHECK_OK(sc_barrier(world, NULL));
    /* Slots 0 and 1 are free again, slot 2 is not. */
    if (g_rank == 0 && (put(sub, SLOTS, 1) || put(sub, SLOTS + 1, 1) || put(sub, SLOTS + 2, 0)))
        return 1;
    CHECK_OK(sc_barrier(world, NULL));
    if (g_rank == 1) {
        for (uint64_t s = 2; s < SLOTS + 2; s++)
            if (get(sub, s, 1))
                return 1;
        if (get(sub, SLOTS + 2, 0))
            return 1;
    }
    CHECK_OK(sc_barrier(world, NULL));
    CHECK_OK(sc_comm_destroy(sub));
    return 0;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* How many split communicators rank 0 may close, each with its two wake-ups held: the
 * first close under 2 x SC_UCX_CANCEL_WAIT_S passes. The close that waited for each in
 * turn took at least that every time; one that waits once takes one wait and what the
 * machine adds: with a single close, 0.10 s or more in 4 of 30 runs beside two busy
 * loops, and up to 3 late closes in a row there. */
#define SC_CLOSE_TRIES 8

/* Rank 0's part below: for each split in turn, the two wake-ups held, then the close,
 * timed, until one closed in time. */
static int close_held(sc_comm_t *world, sc_comm_t **subs)
{
    uint8_t msg[64] = {0};
    double took[SC_CLOSE_TRIES];
    int t;

    usleep(200000); /* ranks 1 and 2 hold their locks */
    if (sc_test_fill_until_held(world, 1) != 0 || sc_test_fill_until_held(world, 2) != 0)
        return 1;
    for (t = 0; t < SC_CLOSE_TRIES; t++) {
        double t0;

        pthread_mutex_lock(&world->tp->lock);
        for (int q = 1; q <= 2; q++)
            CHECK(sc_mbox_put(subs[t], q, subs[t]->seq, msg, sizeof(msg)),
                  "rank %d's inbox is full", q);
        pthread_mutex_unlock(&world->tp->lock);
        t0 = now_s();
        sc_mbox_close(subs[t]);
        took[t] = now_s() - t0;
        printf("the mailboxes of split %d closed in %.3f s with a wake-up held to each "
               "neighbour\n", t, took[t]);
        if (took[t] < 2 * SC_UCX_CANCEL_WAIT_S)
            break;
    }
    CHECK(t < SC_CLOSE_TRIES, "each of %d closes took %.3f s or more (the first %.3f s): "
          "its two wake-ups were waited for one after the other", SC_CLOSE_TRIES,
          2 * SC_UCX_CANCEL_WAIT_S, took[0]);
    return 0;
}

/* A mailbox closed with a wake-up in flight to each neighbour (both neighbours stopped
 * with their FIFOs full: UCX cancels no send) waited for each in turn, up to
 * SC_UCX_CANCEL_WAIT_S each, 0.10 s in all; now once for both, under 0.10 s. 3 ranks:
 * rank 0 writes a message into a split's mailbox of each neighbour, which holds its
 * transport's lock with its mailboxes marked sleeping and its FIFO full, so that both
 * wake-ups stay in flight, then closes the split's mailboxes; again with the next
 * split, up to SC_CLOSE_TRIES, where the machine's load made a close late. Every rank
 * ends with _exit: the sends held are the process's to end. */
static int close_with_wake_ups_held(sc_comm_t *world)
{
    int32_t pid = (int32_t)getpid(), pids[3];
    sc_comm_t *subs[SC_CLOSE_TRIES];
    int failed;

    CHECK(sc_comm_size(world) == 3, "runs with 3 ranks");
    CHECK_OK(sc_allgather(&pid, pids, 1, SC_INT32, world, NULL, NULL));
    for (int t = 0; t < SC_CLOSE_TRIES; t++) {
        CHECK_OK(sc_comm_split(world, 0, g_rank, &subs[t]));
        if (!subs[t]->mbox) {
            printf("no mailboxes here: nothing to close\n");
            return 0;
        }
    }
    if (g_rank != 0) {
        pthread_mutex_lock(&world->tp->lock);
        for (int t = 0; t < SC_CLOSE_TRIES; t++)
            sc_mbox_sleeping(subs[t], 1);
        pthread_mutex_unlock(&world->tp->lock);
        CHECK_OK(sc_barrier(world, NULL));
        sc_test_hold_until_gone(world, (pid_t)pids[0]); /* until rank 0 is gone */
    }
    CHECK_OK(sc_barrier(world, NULL));
    failed = close_held(world, subs);
    fflush(NULL);
    _exit(failed);
}

static void *stop_progress(void *tp)
{
    sc_progress_stop(tp);
    return NULL;
}

/* Rank 0's progress thread, asleep with its mailboxes marked sleeping (a receive that
 * nothing answers yet is queued), is asked to stop (sc_progress_stop, on another
 * thread) while this thread holds the transport's lock, which it lets go 50 ms later.
 * The thread, woken, then found the lock taken once, saw its stop flag and ended at
 * once, its mailboxes left marked sleeping (its neighbours then send a wake-up with
 * every message); it now waits for the lock, as it did before it looked at that flag,
 * and clears the mark. Rank 1 then sends what the receive waits for. */
static int stop_with_the_lock_taken(sc_comm_t *world)
{
    int32_t v = 1;
    sc_request_t *req;
    pthread_t t;
    int sleeping;

    CHECK(sc_comm_size(world) == 2, "runs with 2 ranks");
    if (!world->mbox) {
        printf("no mailboxes here: nothing marked sleeping\n");
        return 0;
    }
    if (g_rank == 1) {
        CHECK_OK(sc_barrier(world, NULL)); /* rank 0's thread ended */
        CHECK_OK(sc_send(&v, 1, SC_INT32, 0, world, NULL, NULL));
        return 0;
    }
    CHECK_OK(sc_recv(&v, 1, SC_INT32, 1, world, NULL, &req));
    for (int i = 0;; i++) {
        CHECK(i < 2000, "the progress thread never marked its mailboxes sleeping");
        pthread_mutex_lock(&world->tp->lock);
        if (sc_mbox_is_sleeping(world))
            break; /* held: the thread sleeps, and clears the mark under the lock */
        pthread_mutex_unlock(&world->tp->lock);
        usleep(1000);
    }
    CHECK(pthread_create(&t, NULL, stop_progress, world->tp) == 0, "pthread_create");
    while (!__atomic_load_n(&world->tp->stop, __ATOMIC_ACQUIRE))
        usleep(100);
    usleep(50000); /* the thread woke and found the lock taken */
    pthread_mutex_unlock(&world->tp->lock);
    pthread_join(t, NULL);
    pthread_mutex_lock(&world->tp->lock);
    sleeping = sc_mbox_is_sleeping(world);
    pthread_mutex_unlock(&world->tp->lock);
    printf("the progress thread ended, its mailboxes %s\n",
           sleeping ? "marked sleeping" : "awake");
    CHECK_OK(sc_barrier(world, NULL));
    CHECK_OK(sc_wait(req));
    CHECK(v == 1, "received %d, not 1", (int)v);
    CHECK(!sleeping, "the progress thread ended with its mailboxes marked sleeping: it "
          "gave up the lock, taken a moment as it was asked to stop");
    return 0;
}

/* Rounds of idle_post, and the most their median delay may be: a few ms with the
 * wake-up, 55 ms or more each round without it; one or two rounds of a loaded machine
 * (15-45 ms where other processes took both cores) do not move the median past it.
 * After an op the thread drove (IDLE_AFTER_THREAD_DROVE), the sleep that ends late is
 * 20 ms from that op's end, and rank 1 posts 4 ms after it: 16 ms late, so the bound is
 * lower. */
#define IDLE_ROUNDS 4
#define IDLE_MEDIAN_S 0.03
#define IDLE_DROVE_MEDIAN_S 0.008

/* What comes before the op timed in a round of idle_post. */
typedef enum {
    IDLE_PLAIN,              /* nothing: the thread sleeps idle, marked */
    IDLE_AFTER_WAIT,         /* a blocking allreduce of both ranks, which rank 0 drove */
    IDLE_AFTER_DONE_CALL,    /* after rank 0's post, a blocking allreduce of its own on a
                                split that is done as it is queued */
    IDLE_AFTER_THREAD_DROVE  /* a posted allreduce that rank 0's thread drove */
} idle_mode_t;

/* Polls req (no library call) until it is done or 1 s passed; the time it was seen done. */
static double idle_done_at(sc_request_t *req)
{
    double t0 = now_s();

    while (!__atomic_load_n(&req->done, __ATOMIC_ACQUIRE) && now_s() - t0 < 1.0)
        usleep(100); /* leaves the thread a core on a loaded machine */
    return now_s();
}

/* Rank 0 posts a small allreduce (which wakes no thread) 230 ms after a barrier, its
 * progress thread asleep with nothing queued, and makes no library call until the
 * request is done; rank 1 posts its part 10 ms later. With IDLE_AFTER_WAIT both ranks
 * run a blocking allreduce first, which took the thread's marks as rank 0 drove it, the
 * thread asleep on: the post must wake it. With IDLE_AFTER_DONE_CALL rank 0, after its
 * post, calls a blocking allreduce on a split of both ranks that rank 1 posted at 200
 * ms: its neighbour's header already in the inbox, it is done as it is queued, and its
 * sc_wait returns at once; that call took the thread's marks too, and must give the
 * thread back what it queued before. With IDLE_AFTER_THREAD_DROVE rank 0 posts an
 * allreduce first that its thread drives (rank 1 joins it 2 ms later, blocking), and
 * posts the one timed 2 ms after that one is done, rank 1 4 ms after: the thread's own
 * driving is no caller's, after which it sleeps idle unmarked for 20 ms. Rank 1's
 * header fills rank 0's inbox, no UCX event: only the wake-up rank 1 sends where rank
 * 0's mailboxes are marked sleeping has it read before the thread's sleep ends (it
 * sleeps up to 100 ms at a time, from shortly after the barrier: until about 300 ms,
 * 60 ms or more after rank 1's post). The delay: from rank 1's post to the completion
 * on rank 0 (CLOCK_MONOTONIC, one clock for both); a few ms with the wake-up. */
static int idle_post(sc_comm_t *world, idle_mode_t mode)
{
    double delays[IDLE_ROUNDS], median,
        bound = mode == IDLE_AFTER_THREAD_DROVE ? IDLE_DROVE_MEDIAN_S : IDLE_MEDIAN_S;
    sc_comm_t *y = NULL;

    CHECK(sc_comm_size(world) == 2, "runs with 2 ranks");
    if (!world->mbox) {
        printf("no mailboxes here: nothing to mark sleeping\n");
        return 0;
    }
    if (mode == IDLE_AFTER_DONE_CALL) {
        CHECK_OK(sc_comm_split(world, 0, g_rank, &y));
        CHECK(y->mbox, "the split opened no mailboxes");
    }
    for (int r = 0; r < IDLE_ROUNDS; r++) {
        int32_t v = 1 + g_rank, sum = 0, ysum = 0;
        double t[2] = {0, 0}, at[2], delay;
        sc_request_t *req, *yreq;
        int k;

        CHECK_OK(sc_barrier(world, NULL));
        if (g_rank == 0) {
            usleep(230000);
            if (mode == IDLE_AFTER_WAIT)
                CHECK_OK(sc_allreduce(&v, &sum, 1, SC_INT32, SC_SUM, world, NULL, NULL));
            if (mode == IDLE_AFTER_THREAD_DROVE) {
                CHECK_OK(sc_allreduce(&v, &sum, 1, SC_INT32, SC_SUM, world, NULL, &req));
                idle_done_at(req);
                CHECK_OK(sc_wait(req));
                sc_request_free(req);
                usleep(2000);
            }
            CHECK_OK(sc_allreduce(&v, &sum, 1, SC_INT32, SC_SUM, world, NULL, &req));
            if (mode == IDLE_AFTER_DONE_CALL)
                CHECK_OK(sc_allreduce(&v, &ysum, 1, SC_INT32, SC_SUM, y, NULL, NULL));
            t[0] = idle_done_at(req);
            CHECK_OK(sc_wait(req));
            sc_request_free(req);
        } else {
            usleep(mode == IDLE_AFTER_DONE_CALL ? 200000 : 230000);
            if (mode == IDLE_AFTER_WAIT)
                CHECK_OK(sc_allreduce(&v, &sum, 1, SC_INT32, SC_SUM, world, NULL, NULL));
            if (mode == IDLE_AFTER_DONE_CALL) {
                CHECK_OK(sc_allreduce(&v, &ysum, 1, SC_INT32, SC_SUM, y, NULL, &yreq));
                usleep(30000); /* rank 0 posts and calls at 230 ms */
            }
            if (mode == IDLE_AFTER_THREAD_DROVE) {
                usleep(2000);
                CHECK_OK(sc_allreduce(&v, &sum, 1, SC_INT32, SC_SUM, world, NULL, NULL));
                usleep(4000);
            } else {
                usleep(10000);
            }
            t[1] = now_s();
            CHECK_OK(sc_allreduce(&v, &sum, 1, SC_INT32, SC_SUM, world, NULL, NULL));
            if (mode == IDLE_AFTER_DONE_CALL) {
                CHECK_OK(sc_wait(yreq));
                sc_request_free(yreq);
            }
        }
        CHECK(sum == 3, "round %d: the sum came as %d, not 3", r, (int)sum);
        CHECK(mode != IDLE_AFTER_DONE_CALL || ysum == 3,
              "round %d: the split's sum came as %d, not 3", r, (int)ysum);
        CHECK_OK(sc_allreduce(t, at, 2, SC_FLOAT64, SC_SUM, world, NULL, NULL));
        delay = at[0] - at[1];
        /* In order, for the median. */
        for (k = r; k > 0 && delays[k - 1] > delay; k--)
            delays[k] = delays[k - 1];
        delays[k] = delay;
        if (g_rank == 0)
            printf("round %d: rank 0's allreduce done %.1f ms after rank 1's post\n", r,
                   1e3 * delay);
    }
    if (y)
        CHECK_OK(sc_comm_destroy(y));
    median = (delays[(IDLE_ROUNDS - 1) / 2] + delays[IDLE_ROUNDS / 2]) / 2;
    if (g_rank == 0)
        printf("median %.1f ms\n", 1e3 * median);
    CHECK(median < bound, "rank 0's allreduces were done %.3f s (the median; the "
          "best %.3f s, the worst %.3f s) after rank 1 posted its part, over %d rounds: its "
          "idle progress thread slept on with rank 1's header in its inbox", median,
          delays[0], delays[IDLE_ROUNDS - 1], IDLE_ROUNDS);
    return 0;
}

/* Samples of drive: how many of rank 0's marks read while its caller drove were set. */
typedef struct {
    sc_comm_t *world;
    int seen, marked;
} drive_sample_t;

/* From 5 ms into rank 0's blocking allreduce to 45 ms, every ms: the mailbox's head
 * read without the lock (the world's mailboxes stay while the call runs). */
static void *drive_sampler(void *arg)
{
    drive_sample_t *ds = arg;

    usleep(5000);
    for (int i = 0; i < 40; i++, usleep(1000)) {
        ds->marked += sc_mbox_is_sleeping(ds->world);
        ds->seen++;
    }
    return NULL;
}

/* Rank 0's progress thread, idle after a barrier, marks its mailboxes sleeping once it
 * sleeps with nothing queued and no caller driving (for 100 ms; the barrier's caller
 * took any marks before); rank 0 then calls a blocking allreduce at once, which rank 1
 * joins 250 ms after the barrier, and drives it the whole time (SC_PROGRESS_SPIN_US=inf:
 * it never hands over). The marks must be gone while it drives: the thread, asleep,
 * clears them only when it wakes, and meanwhile every header a neighbour wrote sent a
 * wake-up through UCX. */
static int drive(sc_comm_t *world)
{
    int32_t v = 1 + g_rank, sum = 0;
    drive_sample_t ds = {world, 0, 0};
    pthread_t t;

    CHECK(sc_comm_size(world) == 2, "runs with 2 ranks");
    if (!world->mbox) {
        printf("no mailboxes here: nothing marked sleeping\n");
        return 0;
    }
    CHECK_OK(sc_barrier(world, NULL));
    if (g_rank == 1) {
        usleep(250000);
        CHECK_OK(sc_allreduce(&v, &sum, 1, SC_INT32, SC_SUM, world, NULL, NULL));
        CHECK(sum == 3, "the sum came as %d, not 3", (int)sum);
        return 0;
    }
    for (int i = 0; i < 10000 && !sc_mbox_is_sleeping(world); i++)
        usleep(100);
    CHECK(sc_mbox_is_sleeping(world), "the idle progress thread never marked its mailboxes "
          "sleeping");
    CHECK(pthread_create(&t, NULL, drive_sampler, &ds) == 0, "pthread_create");
    CHECK_OK(sc_allreduce(&v, &sum, 1, SC_INT32, SC_SUM, world, NULL, NULL));
    pthread_join(t, NULL);
    CHECK(sum == 3, "the sum came as %d, not 3", (int)sum);
    printf("marked sleeping in %d of %d reads while the caller drove\n", ds.marked, ds.seen);
    CHECK(ds.marked == 0, "rank 0's mailboxes were marked sleeping in %d of %d reads while "
          "its caller drove a blocking allreduce: its neighbour sent a wake-up through UCX "
          "with every header", ds.marked, ds.seen);
    return 0;
}

int main(int argc, char **argv)
{
    sc_comm_t *world;
    int failed;

    if (sc_comm_init_from_env(&world) != SC_SUCCESS) {
        fprintf(stderr, "sc_comm_init_from_env: %s\n", sc_last_error());
        return 1;
    }
    g_rank = sc_comm_rank(world);
    if (argc > 1 && strcmp(argv[1], "close") == 0)
        failed = close_with_wake_ups_held(world);
    else if (argc > 1 && strcmp(argv[1], "stop") == 0)
        failed = stop_with_the_lock_taken(world);
    else if (argc > 1 && strcmp(argv[1], "idle_post") == 0)
        failed = idle_post(world, IDLE_PLAIN);
    else if (argc > 1 && strcmp(argv[1], "idle_post_after_wait") == 0)
        failed = idle_post(world, IDLE_AFTER_WAIT);
    else if (argc > 1 && strcmp(argv[1], "idle_post_before_a_done_call") == 0)
        failed = idle_post(world, IDLE_AFTER_DONE_CALL);
    else if (argc > 1 && strcmp(argv[1], "idle_post_after_thread_drove") == 0)
        failed = idle_post(world, IDLE_AFTER_THREAD_DROVE);
    else if (argc > 1 && strcmp(argv[1], "drive") == 0)
        failed = drive(world);
    else
        failed = run(world);
    printf("%s: mailbox slots (rank %d)\n", failed ? "FAIL" : "PASS", g_rank);
    sc_comm_destroy(world);
    return failed;
}
