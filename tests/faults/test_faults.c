/* Specs of failures other than mismatched arguments: a rank killed mid-allreduce, a
 * rank that never joins the rendezvous, sc_comm_abort, a rank that issues one
 * collective fewer, and an operation whose peer stays silent (and one that is long but
 * never silent, which must not fail). Every surviving rank
 * gets an error naming the cause, within SC_TIMEOUT (plus what the spec allows), never
 * a hang; later calls on the failed communicator repeat the error at once. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/sc_proc_state.h"
#include "fault_util.h"

#define ALLREDUCE_COUNT 1000
/* Ranks about to fail or exit wait this long after the last call every rank completes,
 * so that the slowest rank has finished it too: the failure then hits the call under
 * test. (A rank exiting while others still read what it sent them is the subject of
 * peer_exiting_right_after_a_barrier_does_not_fail_it.) */
#define SETTLE_S 0.3

/* The process id of every rank, gathered while the communicator still works, so that
 * the expected "rank N (pid P)" sentence is known independently of the library. */
static int gather_pids(sc_comm_t *comm, int32_t *pids)
{
    int32_t mine = (int32_t)getpid();
    CHECK_OK(sc_allgather(&mine, pids, 1, SC_INT32, comm, NULL, NULL));
    return TEST_PASS;
}

/* Element i of rank r's input at iteration it: small integers, exact in float. */
static float input_value(int r, int it, size_t i)
{
    return (float)((r + 1) * 4 + (int)((i + (size_t)it) % 17));
}

/* The communicator of size ranks. */
static int join_world(sc_comm_t **comm, int size)
{
    CHECK_OK(sc_comm_init_from_env(comm));
    CHECK(sc_comm_size(*comm) == size, "runs with %d ranks", size);
    return TEST_PASS;
}

/* The communicator most tests start from: size ranks, all present (a barrier). */
static int start_world(sc_comm_t **comm, int size)
{
    if (join_world(comm, size) != TEST_PASS)
        return TEST_FAIL;
    CHECK_OK(sc_barrier(*comm, NULL));
    return TEST_PASS;
}

/* The allreduce of this rank's input of iteration 0 (ALLREDUCE_COUNT floats). */
static sc_status_t allreduce_input_into(sc_comm_t *comm, float out[ALLREDUCE_COUNT])
{
    float in[ALLREDUCE_COUNT];

    for (size_t i = 0; i < ALLREDUCE_COUNT; i++)
        in[i] = input_value(fault_rank, 0, i);
    return sc_allreduce(in, out, ALLREDUCE_COUNT, SC_FLOAT32, SC_SUM, comm, NULL, NULL);
}

static sc_status_t allreduce_input(sc_comm_t *comm)
{
    float out[ALLREDUCE_COUNT];

    return allreduce_input_into(comm, out);
}

static float expected_sum(int size, int it, size_t i)
{
    float s = 0.0f;
    for (int r = 0; r < size; r++)
        s += input_value(r, it, i);
    return s;
}

static int check_sentence_has(const char *text, const char *what)
{
    CHECK(strstr(text, what), "the sentence '%s' does not say '%s'", text, what);
    return TEST_PASS;
}

/* Waits (up to 10 s) until process pid has exited (gone or a zombie). */
static int wait_gone(int32_t pid)
{
    double deadline = fault_now() + 10.0;

    while (fault_now() < deadline) {
        char path[64], buf[256];
        const char *paren;
        FILE *f;

        if (kill((pid_t)pid, 0) != 0)
            return TEST_PASS;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "r");
        if (!f)
            return TEST_PASS;
        paren = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
        fclose(f);
        if (paren && paren[1] == ' ' && paren[2] == 'Z')
            return TEST_PASS;
        fault_sleep(0.01);
    }
    CHECK(0, "process %d is still running after 10 s", (int)pid);
    return TEST_FAIL;
}

/* The end of a test whose call failed with err: later calls repeat err at once, the
 * rank says what its call got, and the failed communicator is destroyed promptly. */
static int finish_failed(sc_comm_t *comm, const fault_error_t *err, const char *call)
{
    if (fault_check_later_calls_fail(comm, err) != TEST_PASS)
        return TEST_FAIL;
    printf("rank %d: %s got %s after %.3f s: %s\n", fault_rank, call,
           sc_status_string(err->status), err->elapsed, err->text);
    return fault_check_destroy(comm, 3.0);
}

/* ---- a rank killed in the middle of an allreduce ---- */

#define KILL_COUNT (1u << 20) /* 4 MiB of float32: ring, many chunks in flight */
#define KILL_RANK 2
#define KILL_ITERATION 5
#define KILL_MAX_ITERATIONS 200

/* 4 ranks loop 4 MiB allreduces; at iteration 5 rank 2 starts its allreduce 0.3 s
 * late (the others wait in theirs) and raises SIGKILL on itself while it is in
 * flight. The others' allreduce of iteration 5 fails with SC_ERR_PEER_FAILED naming
 * rank 2, within SC_TIMEOUT; iterations 0-4 were correct. The survivors ignore the
 * SIGTERM scrun sends once rank 2 died, report and exit 0, so that scrun names rank 2
 * as the failure (killed_rank_test.sh). */
static int test_killed_rank_fails_pending_and_later_calls(int argc, char **argv)
{
    double timeout = fault_timeout();
    sc_comm_t *comm;
    float *in, *out;
    fault_error_t err = {SC_SUCCESS, "", 0.0};
    int rank, size, it, registered = argc > 0 && strcmp(argv[argc - 1], "registered") == 0;
    /* Read in place, 4 MiB take a fraction of a millisecond: the dying rank's part
     * could finish before its SIGKILL. 64 MiB keep the call in flight. */
    size_t count = registered ? KILL_COUNT * 16 : KILL_COUNT;

    CHECK_OK(sc_comm_init_from_env(&comm));
    rank = sc_comm_rank(comm);
    size = sc_comm_size(comm);
    CHECK(size > KILL_RANK, "needs at least %d ranks, has %d", KILL_RANK + 1, size);
    if (rank != KILL_RANK)
        signal(SIGTERM, SIG_IGN);
    /* "registered": buffers the ranks read from each other in place (sc_mem_alloc). */
    if (registered) {
        CHECK_OK(sc_mem_alloc(comm, count * sizeof(float), (void **)&in));
        CHECK_OK(sc_mem_alloc(comm, count * sizeof(float), (void **)&out));
    } else {
        in = malloc(count * sizeof(float));
        out = malloc(count * sizeof(float));
    }
    CHECK(in && out, "out of memory");
    for (it = 0; it < KILL_MAX_ITERATIONS; it++) {
        double t0;
        sc_status_t st;

        for (size_t i = 0; i < count; i++)
            in[i] = input_value(rank, it, i);
        if (rank == KILL_RANK && it == KILL_ITERATION) {
            sc_request_t *req;
            fault_sleep(SETTLE_S);
            CHECK_OK(sc_allreduce(in, out, count, SC_FLOAT32, SC_SUM, comm, NULL, &req));
            raise(SIGKILL);
        }
        t0 = fault_now();
        st = sc_allreduce(in, out, count, SC_FLOAT32, SC_SUM, comm, NULL, NULL);
        if (st != SC_SUCCESS) {
            fault_error_take(&err, st, t0);
            break;
        }
        for (size_t i = 0; i < count; i++)
            CHECK(out[i] == expected_sum(size, it, i),
                  "iteration %d element %zu is %g, expected %g", it, i, out[i],
                  expected_sum(size, it, i));
    }
    CHECK(it == KILL_ITERATION, "the first failing allreduce is iteration %d, expected %d",
          it, KILL_ITERATION);
    CHECK(err.status == SC_ERR_PEER_FAILED, "the allreduce returned %s: %s",
          sc_status_string(err.status), err.text);
    if (fault_check_names_dead_rank(err.text, KILL_RANK) != TEST_PASS)
        return TEST_FAIL;
    CHECK(err.elapsed < timeout, "the failure took %.3f s to report, SC_TIMEOUT is %g s",
          err.elapsed, timeout);
    /* Registered memory goes with the communicator (sc_comm_destroy); plain buffers of
     * a failed call may still be read and written until then (collectives.h). */
    if (finish_failed(comm, &err, "the allreduce") != TEST_PASS)
        return TEST_FAIL;
    if (!registered) {
        free(in);
        free(out);
    }
    return TEST_PASS;
}

/* ---- rendezvous with a missing rank ---- */

/* The missing rank sleeps through the others' rendezvous, then exits 0. */
static void stay_away(double timeout)
{
    fault_sleep(timeout + 3.5);
}

/* sc_comm_init fails with want, leaves its output alone, within [at_least, below)
 * seconds, and its sentence says each of what[] (NULL-terminated). */
static int check_init_fails(sc_status_t want, double at_least, double below,
                            const char *const *what)
{
    sc_comm_t *comm = (sc_comm_t *)(uintptr_t)0x1; /* must stay as it is */
    double t0 = fault_now(), elapsed;
    sc_status_t st = sc_comm_init_from_env(&comm);

    elapsed = fault_now() - t0;
    CHECK(st == want, "sc_comm_init returned %s, not %s: %s", sc_status_string(st),
          sc_status_string(want), sc_last_error());
    CHECK(comm == (sc_comm_t *)(uintptr_t)0x1, "sc_comm_init wrote its output on failure");
    for (; *what; what++)
        if (check_sentence_has(sc_last_error(), *what) != TEST_PASS)
            return TEST_FAIL;
    CHECK(elapsed >= at_least && elapsed < below,
          "sc_comm_init failed after %.3f s, expected [%g, %g) s", elapsed, at_least, below);
    printf("rank %d: sc_comm_init got %s after %.3f s: %s\n", fault_rank,
           sc_status_string(st), elapsed, sc_last_error());
    return TEST_PASS;
}

static int check_init_times_out(double at_least, double below, const char *const *what)
{
    return check_init_fails(SC_ERR_TIMEOUT, at_least, below, what);
}

/* 3 ranks; the last process claims rank 1 as well (a launcher's mistake). Every process
 * gets SC_ERR_INVALID_ARG saying two processes claimed rank 1, at once (rank 0 too,
 * also when both claimants reach its store before its own client does). */
static int test_two_processes_claiming_one_rank_fail_init_naming_it(int argc, char **argv)
{
    const char *what[] = {"two processes claimed rank 1 of world size 3", NULL};

    (void)argc, (void)argv;
    if (fault_rank == 2)
        setenv("SC_RANK", "1", 1);
    return check_init_fails(SC_ERR_INVALID_ARG, 0.0, fault_timeout() - 0.5, what);
}

/* Connects to rank 0's store (SC_MASTER_PORT on this host) and, after hold_s, sends 16
 * bytes that are no rendezvous's hello. */
typedef struct {
    int fd;
    double hold_s;
} store_holder_t;

static void *hold_the_store(void *arg)
{
    store_holder_t *h = arg;
    char junk[16] = {0};

    fault_sleep(h->hold_s);
    if (write(h->fd, junk, sizeof(junk)) != (ssize_t)sizeof(junk))
        fprintf(stderr, "rank %d: the store's holder could not write\n", fault_rank);
    close(h->fd);
    return NULL;
}

static int connect_to_the_store(int *fd)
{
    struct sockaddr_in sa;
    double until = fault_now() + 5.0;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)fault_env_int("SC_MASTER_PORT"));
    while (fault_now() < until) {
        *fd = socket(AF_INET, SOCK_STREAM, 0);
        if (*fd < 0)
            return -1;
        if (connect(*fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            return 0;
        close(*fd);
        fault_sleep(0.01);
    }
    return -1;
}

/* A hand-made hello claiming rank 1 of a world of 2 (rendezvous protocol 3, no launch
 * id, no blob) on fd: its first 8 bytes at once, the rest after hold_s; then the status
 * of the store's answer. */
typedef struct {
    int fd;
    double hold_s;
    int32_t status;
} slow_claim_t;

static void *claim_slowly(void *arg)
{
    slow_claim_t *c = arg;
    /* magic, protocol, kind (join), rank, size, blob length, port; the launch (96 bytes) */
    uint32_t hello[31] = {0x53434856, 3, 1, 1, 2, 0, 0};
    uint32_t answer[3] = {0};
    size_t got = 0;
    ssize_t n = 1;

    if (write(c->fd, hello, 8) == 8) {
        fault_sleep(c->hold_s);
        if (write(c->fd, (char *)hello + 8, sizeof(hello) - 8) == (ssize_t)sizeof(hello) - 8)
            while (got < sizeof(answer) &&
                   (n = read(c->fd, (char *)answer + got, sizeof(answer) - got)) > 0)
                got += (size_t)n;
    }
    c->status = got == sizeof(answer) ? (int32_t)answer[1] : 1;
    close(c->fd);
    return NULL;
}

/* 3 processes in a world of 2: the last, first at rank 0's store, claims rank 1 by hand
 * with a hello whose rest comes 0.5 s after rank 1 completed the world: every process
 * fails init naming the two claimants, the hand-made one told so too. The store judges
 * a connection whose hello is still coming when the last rank arrives before it answers
 * any rank (it reads every arrival at once, and one whose hello has not come 1 s after
 * the last rank arrived is no rank's). */
static int test_claim_still_coming_as_the_last_rank_arrives_fails_init_naming_it(
    int argc, char **argv)
{
    const char *what[] = {"two processes claimed rank 1 of world size 2", NULL};
    slow_claim_t claim = {-1, 1.0, 0};
    pthread_t thread;

    (void)argc, (void)argv;
    setenv("SC_WORLD_SIZE", "2", 1);
    setenv("SC_LOCAL_SIZE", "2", 1);
    if (fault_rank == 2) {
        CHECK(connect_to_the_store(&claim.fd) == 0, "no store to claim rank 1 at");
        CHECK(pthread_create(&thread, NULL, claim_slowly, &claim) == 0, "no thread");
        pthread_join(thread, NULL);
        CHECK(claim.status == SC_ERR_INVALID_ARG, "the hand-made claim of rank 1 was "
              "answered %d, not SC_ERR_INVALID_ARG (%d)", (int)claim.status,
              (int)SC_ERR_INVALID_ARG);
        return TEST_PASS;
    }
    if (fault_rank == 1)
        fault_sleep(0.5);
    return check_init_fails(SC_ERR_INVALID_ARG, 0.0, fault_timeout() - 0.5, what);
}

/* Init from the environment, then an allreduce of one 1 per rank: the sum is the world
 * size, want. */
static int init_and_sum_ones(int32_t want)
{
    sc_comm_t *comm = NULL;
    int32_t x = 1, y = 0;

    CHECK(sc_comm_init_from_env(&comm) == SC_SUCCESS, "init: %s", sc_last_error());
    CHECK(sc_allreduce(&x, &y, 1, SC_INT32, SC_SUM, comm, NULL, NULL) == SC_SUCCESS,
          "allreduce: %s", sc_last_error());
    CHECK(y == want, "sum %d, expected %d", (int)y, (int)want);
    CHECK(sc_comm_destroy(comm) == SC_SUCCESS, "destroy: %s", sc_last_error());
    return TEST_PASS;
}

/* 3 ranks; rank 2 first holds a connection to rank 0's store that sends nothing for 6 s
 * (a port scanner, a health check, a rank stopped between its connect and its hello),
 * then ranks 1 and 2 arrive: every rank completes init and an allreduce within 3.5 s of
 * its start. The store read each arrival's hello in turn, each within 5 s, so that the
 * ranks behind the silent connection waited the 5 s until the store dropped it. */
static int test_silent_connection_holds_up_no_later_arrival(int argc, char **argv)
{
    store_holder_t holder = {-1, 6.0};
    pthread_t thread;
    double t0, took;
    int rc;

    (void)argc, (void)argv;
    if (fault_rank == 2) {
        CHECK(connect_to_the_store(&holder.fd) == 0, "no store to hold");
        CHECK(pthread_create(&thread, NULL, hold_the_store, &holder) == 0, "no thread");
    }
    if (fault_rank != 0)
        fault_sleep(0.5); /* the silent connection is the store's first */
    t0 = fault_now();
    rc = init_and_sum_ones(3);
    took = fault_now() - t0;
    if (fault_rank == 2)
        pthread_join(thread, NULL);
    if (rc != TEST_PASS)
        return rc;
    CHECK(took < 3.5, "init and an allreduce took %.2f s behind a silent connection to the "
          "store", took);
    return TEST_PASS;
}

/* 3 ranks; rank 2 first holds a connection to rank 0's store that sends nothing for 6 s,
 * and rank 1's sc_comm_init fails before it joins (SC_BIND=bogus), which it tells the
 * store; rank 2 starts its own 1 s later: every rank fails init with SC_ERR_PEER_FAILED
 * giving rank 1's sentence within 2.5 s of its start (rank 1 with its own). The store's
 * refusal of every process awaited each connection's hello in turn, up to 5 s, so that
 * rank 0 and rank 2 were told only once the silent connection was dropped. */
static int test_silent_connection_holds_up_no_refusal(int argc, char **argv)
{
    static const char *const own[] = {"SC_BIND=bogus", NULL};
    static const char *const others[] = {"rank 1 could not join it (its sc_comm_init failed)",
                                         "SC_BIND=bogus", NULL};
    store_holder_t holder = {-1, 6.0};
    pthread_t thread;
    int rc;

    (void)argc, (void)argv;
    setenv("SC_TIMEOUT", "10", 1);
    if (fault_rank == 1) {
        setenv("SC_BIND", "bogus", 1);
        return check_init_fails(SC_ERR_INVALID_ARG, 0.0, 2.5, own);
    }
    if (fault_rank == 2) {
        CHECK(connect_to_the_store(&holder.fd) == 0, "no store to hold");
        CHECK(pthread_create(&thread, NULL, hold_the_store, &holder) == 0, "no thread");
        fault_sleep(1.0); /* rank 1's failure reaches the store meanwhile */
    }
    rc = check_init_fails(SC_ERR_PEER_FAILED, 0.0, 2.5, others);
    if (fault_rank == 2)
        pthread_join(thread, NULL);
    return rc;
}

/* A hand-made hello claiming rank 1 of a world of 2 (rendezvous protocol 3, no launch
 * id) that declares a blob of 64 bytes, on fd, then one byte of the blob a second, each
 * well within the store's 5 s of silence, until the store closes the connection. */
static void *trickle_a_claim(void *arg)
{
    int *fd = arg;
    /* magic, protocol, kind (join), rank, size, blob length, port; the launch (96 bytes) */
    uint32_t hello[31] = {0x53434856, 3, 1, 1, 2, 64, 0};
    char byte = 0;

    if (send(*fd, hello, sizeof(hello), MSG_NOSIGNAL) == (ssize_t)sizeof(hello))
        for (int k = 0; k < 30 && send(*fd, &byte, 1, MSG_NOSIGNAL) == 1; k++)
            fault_sleep(1.0);
    close(*fd);
    return NULL;
}

/* 3 processes in a world of 2: the last, first at rank 0's store, claims rank 1 with a
 * hello whose blob comes a byte a second for 30 s; ranks 0 and 1 arrive and complete init
 * and an allreduce within 14 s of their start (SC_TIMEOUT 20): the store drops an
 * arrival whose hello and blob have not all come 10 s after it was accepted. It reset
 * the 5 s of silence at each byte, so that after the last rank arrived the trickling
 * connection held every rank's answer until the ranks gave up on the store. */
static int test_trickling_connection_holds_the_store_no_longer_than_10_s(int argc,
                                                                         char **argv)
{
    pthread_t thread;
    double t0, took;
    int fd = -1;

    (void)argc, (void)argv;
    setenv("SC_WORLD_SIZE", "2", 1);
    setenv("SC_LOCAL_SIZE", "2", 1);
    if (fault_rank == 2) {
        CHECK(connect_to_the_store(&fd) == 0, "no store to trickle a claim to");
        CHECK(pthread_create(&thread, NULL, trickle_a_claim, &fd) == 0, "no thread");
        pthread_join(thread, NULL);
        return TEST_PASS;
    }
    if (fault_rank == 1)
        fault_sleep(0.5); /* the trickling connection is the store's first */
    t0 = fault_now();
    CHECK(init_and_sum_ones(2) == TEST_PASS, "init and an allreduce beside a trickling "
          "connection to the store failed");
    took = fault_now() - t0;
    CHECK(took < 14.0, "init and an allreduce took %.2f s beside a trickling connection to "
          "the store", took);
    return TEST_PASS;
}

/* 3 processes in a world of 2; the last claims rank 1 too, but comes a second late,
 * after ranks 0 and 1 finished the rendezvous and rank 0's store closed. Ranks 0 and 1
 * run an allreduce; the late process gets SC_ERR_TIMEOUT after SC_TIMEOUT + 3 s saying
 * nothing listens at the store, with the likely reasons (it said only "could not be
 * reached"). */
static int test_late_process_claiming_a_rank_is_told_the_store_is_gone(int argc, char **argv)
{
    double timeout = fault_timeout();
    const char *what[] = {"could not be reached: nothing listens there",
                          "was this rank launched twice", NULL};

    (void)argc, (void)argv;
    setenv("SC_WORLD_SIZE", "2", 1);
    setenv("SC_LOCAL_SIZE", "2", 1);
    if (fault_rank == 2) {
        setenv("SC_RANK", "1", 1);
        setenv("SC_LOCAL_RANK", "1", 1);
        fault_sleep(1.0);
        return check_init_times_out(timeout + 3.0 - 0.05, timeout + 4.0, what);
    }
    return init_and_sum_ones(2);
}

/* 3 ranks; the process of rank 2 is killed during the rendezvous, after it reached rank
 * 0's store, and rank 2 is started again (a node whose launch was stopped and rerun
 * while rank 0 waited for rank 1): the new process takes its place and every rank
 * completes init and an allreduce. The store counted the dead process's connection as
 * rank 2's, and failed every rank with "two processes claimed rank 2". */
static int test_rank_killed_in_the_rendezvous_and_started_again_joins(int argc, char **argv)
{
    sc_comm_t *comm = NULL;
    int status = 0;
    pid_t first;

    (void)argc, (void)argv;
    if (fault_rank == 1)
        fault_sleep(2.5); /* the rendezvous stays open while rank 2 is killed */
    if (fault_rank == 2) {
        first = fork();
        CHECK(first >= 0, "fork failed");
        if (first == 0) {
            /* Killed while it waits for rank 1 in the rendezvous. */
            sc_comm_init_from_env(&comm);
            _exit(3);
        }
        fault_sleep(1.0);
        kill(first, SIGKILL);
        CHECK(waitpid(first, &status, 0) == first, "waitpid failed");
        CHECK(WIFSIGNALED(status), "the first process of rank 2 ended before it was "
              "killed (status %d): the rendezvous did not wait for rank 1", status);
    }
    return init_and_sum_ones(3);
}

/* 2 ranks on one host; the launcher gives rank 1 local rank 0 of 1 where rank 0 has 0 of
 * 2 (as scrun sets): both fail init at once, naming both sizes, instead of opening different
 * transports and hanging. */
static int test_local_sizes_that_differ_fail_init_at_once(int argc, char **argv)
{
    const char *what[] = {"ranks 0 and 1 share the host", "local sizes 2 and 1", NULL};

    (void)argc, (void)argv;
    if (fault_rank == 1) {
        setenv("SC_LOCAL_RANK", "0", 1);
        setenv("SC_LOCAL_SIZE", "1", 1);
    }
    return check_init_fails(SC_ERR_INVALID_ARG, 0.0, fault_timeout() - 0.5, what);
}

/* The last rank alone sets VARIABLE to VALUE (argv), a setting every rank must share:
 * init fails on every rank at once with SC_ERR_MISMATCH naming the variable and both
 * values (SC_CHUNK_BYTES used to time a staged allreduce out and fail a broadcast on
 * some ranks only; SC_LOCAL_REGISTER made sc_reducer_create succeed on one rank). */
static int test_settings_that_differ_fail_init_on_every_rank(int argc, char **argv)
{
    char differs[128];
    const char *what[] = {"settings that must be the same on every rank", differs, NULL};
    int size = fault_env_int("SC_WORLD_SIZE");

    CHECK(argc == 3, "arguments: VARIABLE VALUE DEFAULT");
    snprintf(differs, sizeof(differs), "%s is %s on rank 0 but %s on rank %d", argv[0],
             argv[2], argv[1], size - 1);
    if (fault_rank == size - 1)
        setenv(argv[0], argv[1], 1);
    return check_init_fails(SC_ERR_MISMATCH, 0.0, fault_timeout() - 0.5, what);
}

/* Rank 0 sets UCX_TLS to FIRST and every other rank to OTHERS (argv), compared as sets
 * of transports: "same" (another order, a name twice, excluded alike with ^): init
 * succeeds on every rank and an allreduce sums (the values were compared as text, and
 * "self,sm" against "sm,self" failed init with SC_ERR_MISMATCH); "differ": init fails
 * on every rank with SC_ERR_MISMATCH naming both values. */
static int test_ucx_tls_compared_as_sets(int argc, char **argv)
{
    char differs[160];
    const char *what[] = {"settings that must be the same on every rank", differs, NULL};

    CHECK(argc == 3, "arguments: FIRST OTHERS same|differ");
    setenv("UCX_TLS", fault_rank == 0 ? argv[0] : argv[1], 1);
    if (strcmp(argv[2], "same") == 0)
        return init_and_sum_ones((int32_t)fault_env_int("SC_WORLD_SIZE"));
    snprintf(differs, sizeof(differs), "UCX_TLS is %s on rank 0 but %s on rank 1", argv[0],
             argv[1]);
    return check_init_fails(SC_ERR_MISMATCH, 0.0, fault_timeout() - 0.5, what);
}

/* Rank 0 sets UCX_TLS=self,sm and rank 1 self,sm and a name holding a tab (a script's
 * mistake; UCX warns that no such transport is available and goes on): init fails on
 * both with SC_ERR_MISMATCH writing that value quoted, the tab as \t, as every sentence
 * writes a user's text (sc_env_text); the tab was written raw. */
static int test_ucx_tls_that_differ_are_written_with_control_characters_shown(int argc,
                                                                             char **argv)
{
    const char *what[] = {"UCX_TLS is self,sm on rank 0 but 'self,sm,x\\ty' on rank 1",
                          NULL};

    (void)argc, (void)argv;
    setenv("UCX_TLS", fault_rank == 0 ? "self,sm" : "self,sm,x\ty", 1);
    return check_init_fails(SC_ERR_MISMATCH, 0.0, fault_timeout() - 0.5, what);
}

/* 3 ranks; rank R (argument) is given VARIABLE=VALUE, which makes its sc_comm_init fail
 * after it knew its rank and the store, before it could join the rendezvous, with a
 * sentence holding TEXT (UCX_TLS=bogus: its transport does not open; SC_CHUNK_BYTES=x: a
 * setting that is no number). It fails with its own sentence, and the others at once
 * with SC_ERR_PEER_FAILED giving it: they waited SC_TIMEOUT (10 s here) for it, then
 * said only that rank R never arrived (rank 0 failing: that its store could not be
 * reached). */
static int test_rank_failing_before_the_rendezvous_fails_every_rank_at_once(int argc,
                                                                          char **argv)
{
    char told[256];
    const char *own[] = {NULL, NULL}, *others[] = {told, NULL};
    int failing;

    CHECK(argc == 4, "arguments: RANK VARIABLE VALUE TEXT");
    failing = atoi(argv[0]);
    own[0] = argv[3];
    snprintf(told, sizeof(told), "rank %d could not %s it (its sc_comm_init failed): %s",
             failing, failing == 0 ? "serve" : "join", argv[3]);
    setenv("SC_TIMEOUT", "10", 1);
    if (fault_rank != failing)
        return check_init_fails(SC_ERR_PEER_FAILED, 0.0, 5.0, others);
    setenv(argv[1], argv[2], 1);
    {
        sc_comm_t *comm = NULL;
        sc_status_t st = sc_comm_init_from_env(&comm);
        char prefix[32];
        CHECK(st != SC_SUCCESS && comm == NULL, "init succeeded with %s=%s", argv[1],
              argv[2]);
        /* Its own sentence names its rank, as every other one does (SC_BIND=bogus said
         * only "SC_BIND=bogus is not one of core|none"). */
        snprintf(prefix, sizeof(prefix), "rank %d: ", failing);
        CHECK(strncmp(sc_last_error(), prefix, strlen(prefix)) == 0,
              "the sentence '%s' does not start with '%s'", sc_last_error(), prefix);
        return check_sentence_has(sc_last_error(), own[0]);
    }
}

/* The file by which rank 0 of this launch says its first sc_comm_init returned. */
static void retry_marker(char *path, size_t len)
{
    const char *dir = getenv("TMPDIR");

    snprintf(path, len, "%s/sc-retry-%s-%s", dir && dir[0] ? dir : "/tmp",
             getenv("SC_MASTER_PORT"), getenv("SC_LAUNCH_ID") ? getenv("SC_LAUNCH_ID") : "");
}

/* Init from the environment where the first store may still tell its failure (old, a
 * part of its sentence): a rank that reached it before rank 0's retry stopped it calls
 * sc_comm_init again, as every rank of a program that retries does, for 15 s at most;
 * then an allreduce of ones over 3 ranks. */
static int init_again_after_the_old_verdict(const char *old)
{
    sc_comm_t *comm = NULL;
    int32_t x = 1, y = 0;
    double t0 = fault_now();
    sc_status_t st;

    while ((st = sc_comm_init_from_env(&comm)) != SC_SUCCESS &&
           strstr(sc_last_error(), old) && fault_now() - t0 < 15.0)
        fault_sleep(0.2);
    CHECK(st == SC_SUCCESS, "init: %s", sc_last_error());
    CHECK(sc_allreduce(&x, &y, 1, SC_INT32, SC_SUM, comm, NULL, NULL) == SC_SUCCESS,
          "allreduce: %s", sc_last_error());
    CHECK(y == 3, "sum %d, expected 3", (int)y);
    CHECK(sc_comm_destroy(comm) == SC_SUCCESS, "destroy: %s", sc_last_error());
    return TEST_PASS;
}

/* 3 ranks, SC_TIMEOUT=inf: rank 1's first sc_comm_init fails before it joins
 * (SC_BIND=bogus), rank 2 calls none; rank 0's fails naming rank 1's failure, and its
 * store, on the heap, still tells the ranks to come (rank 2, for 30 s). Rank 0 calls
 * sc_comm_init again at once, on the same port (a program's retry), and says so by a
 * file; 1 s later ranks 1 and 2 call theirs (again where they reached the first store
 * still telling, rank 0 slow to its retry): every rank completes init and an allreduce.
 * The retry's store could not listen on the port, which the first store held in this
 * very process ("Address already in use: pid P (test_faults) listens on it"). */
static int test_retry_after_a_failed_rendezvous_takes_the_port(int argc, char **argv)
{
    const char *joined[] = {"rank 1 could not join it (its sc_comm_init failed)", NULL};
    const char *bind[] = {"SC_BIND=bogus is not one of", NULL};
    char marker[512];
    double t0 = fault_now();
    FILE *f;
    int rc;

    (void)argc, (void)argv;
    retry_marker(marker, sizeof(marker));
    setenv("SC_TIMEOUT", "inf", 1);
    if (fault_rank == 0) {
        if (check_init_fails(SC_ERR_PEER_FAILED, 0.0, 9.0, joined) != TEST_PASS)
            return TEST_FAIL;
        f = fopen(marker, "w");
        CHECK(f != NULL, "cannot write %s", marker);
        fclose(f);
        setenv("SC_TIMEOUT", "10", 1);
        rc = init_and_sum_ones(3); /* the others saw the file once they joined */
        unlink(marker);
        return rc;
    }
    if (fault_rank == 1) {
        setenv("SC_BIND", "bogus", 1);
        if (check_init_fails(SC_ERR_INVALID_ARG, 0.0, 5.0, bind) != TEST_PASS)
            return TEST_FAIL;
        unsetenv("SC_BIND");
    }
    while (access(marker, F_OK) != 0 && fault_now() - t0 < 15.0)
        fault_sleep(0.05);
    CHECK(access(marker, F_OK) == 0, "rank 0 never said its first sc_comm_init returned");
    fault_sleep(1.0); /* rank 0's retry listens by then, unless the machine is loaded */
    setenv("SC_TIMEOUT", "10", 1);
    return init_again_after_the_old_verdict(joined[0]);
}

/* Rank 0's sc_comm_init on a second thread (arg: its result), once rank 1 said by a file
 * that it told rank 0's store its failure (path). */
typedef struct {
    const char *told;
    int rc;
} second_init_t;

static void *second_init_on_rank_0(void *arg)
{
    second_init_t *t = arg;
    double t0 = fault_now();

    while (access(t->told, F_OK) != 0 && fault_now() - t0 < 15.0)
        fault_sleep(0.02);
    t->rc = init_and_sum_ones(3);
    return NULL;
}

/* 3 ranks, SC_TIMEOUT 10: rank 1's first sc_comm_init fails before it joins
 * (SC_BIND=bogus) and says so by a file, rank 2 calls none; rank 0's fails naming rank
 * 1's failure and waits 5 s for its store to tell rank 2. As rank 1's file appears, a
 * second thread of rank 0 calls sc_comm_init on the same port: it stops that store
 * (the first call returns its failure at once) and takes the port, and once the first
 * call returned ranks 1 and 2 call theirs again: every rank completes init and an
 * allreduce. The second call's store could not listen on the port, which the first
 * call's still held ("Address already in use: pid P (test_faults) listens on it"). */
static int test_second_init_beside_a_failed_rendezvous_takes_the_port(int argc, char **argv)
{
    const char *joined[] = {"rank 1 could not join it (its sc_comm_init failed)", NULL};
    const char *bind[] = {"SC_BIND=bogus is not one of", NULL};
    char marker[512], told[560];
    second_init_t second = {told, TEST_FAIL};
    double t0 = fault_now();
    pthread_t thread;
    FILE *f;
    int rc;

    (void)argc, (void)argv;
    retry_marker(marker, sizeof(marker));
    snprintf(told, sizeof(told), "%s-told", marker);
    setenv("SC_TIMEOUT", "10", 1);
    if (fault_rank == 0) {
        CHECK(pthread_create(&thread, NULL, second_init_on_rank_0, &second) == 0,
              "cannot start a thread");
        rc = check_init_fails(SC_ERR_PEER_FAILED, 0.0, 9.0, joined);
        f = fopen(marker, "w");
        if (f)
            fclose(f);
        pthread_join(thread, NULL);
        unlink(marker);
        unlink(told);
        CHECK(f != NULL, "cannot write %s", marker);
        return rc == TEST_PASS ? second.rc : rc;
    }
    if (fault_rank == 1) {
        setenv("SC_BIND", "bogus", 1);
        if (check_init_fails(SC_ERR_INVALID_ARG, 0.0, 5.0, bind) != TEST_PASS)
            return TEST_FAIL;
        unsetenv("SC_BIND");
        f = fopen(told, "w");
        CHECK(f != NULL, "cannot write %s", told);
        fclose(f);
    }
    while (access(marker, F_OK) != 0 && fault_now() - t0 < 15.0)
        fault_sleep(0.05);
    CHECK(access(marker, F_OK) == 0, "rank 0 never said its first sc_comm_init returned");
    fault_sleep(1.0); /* rank 0's second call listens by then */
    return init_and_sum_ones(3);
}

/* 1 rank, launched as by mpirun with a stale torchrun WORLD_SIZE=2 in the environment:
 * the size is Open MPI's, as the rank is, and init succeeds at once (it waited for a
 * second rank). Values out of range name the variable they came from; SC_TIMEOUT=nan is
 * refused. */
static int test_launch_variables_come_from_one_launcher(int argc, char **argv)
{
    static const char *const own[] = {"SC_RANK", "SC_WORLD_SIZE", "SC_LOCAL_RANK",
                                      "SC_LOCAL_SIZE"};
    sc_comm_t *comm = NULL;

    (void)argc, (void)argv;
    for (int i = 0; i < 4; i++)
        unsetenv(own[i]);
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    setenv("WORLD_SIZE", "2", 1);
    CHECK(sc_comm_init_from_env(&comm) == SC_SUCCESS, "init: %s", sc_last_error());
    CHECK(sc_comm_size(comm) == 1, "size %d", sc_comm_size(comm));
    CHECK(sc_comm_destroy(comm) == SC_SUCCESS, "destroy: %s", sc_last_error());
    setenv("OMPI_COMM_WORLD_SIZE", "-4", 1);
    CHECK(sc_comm_init_from_env(&comm) == SC_ERR_INVALID_ARG, "size -4 accepted");
    if (check_sentence_has(sc_last_error(), "OMPI_COMM_WORLD_SIZE=-4 is out of range"))
        return TEST_FAIL;
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    setenv("SC_TIMEOUT", "nan", 1);
    CHECK(sc_comm_init_from_env(&comm) == SC_ERR_INVALID_ARG, "SC_TIMEOUT=nan accepted");
    return check_sentence_has(sc_last_error(), "SC_TIMEOUT=nan must be positive seconds");
}

/* 5 ranks: a broadcast from rank 0, then an allreduce whose count differs on rank 1.
 * Rank 3 runs 0.5 s behind. Ranks 0 and 1 need only their ring neighbours' headers and
 * the root's data to finish the broadcast, so they reach the allreduce and find the
 * mismatch while rank 3 has not called the broadcast yet, and tell every rank. The
 * notice names the allreduce, so the broadcast still runs on the ranks that had not
 * finished it (2 and 4 wait for 3's header, 3 for 2's forward), with the root's data,
 * and only the allreduce fails, with SC_ERR_MISMATCH, on every rank. (The notice used
 * to fail their broadcast too, and rank 3's call was refused.) */
static int test_rank_behind_finishes_the_collective_before_the_mismatch(int argc, char **argv)
{
    int32_t src[8], b[8], x[8] = {0}, y[8];
    sc_request_t *rb = NULL, *rx = NULL;
    sc_comm_t *comm = NULL;
    sc_status_t st;

    (void)argc, (void)argv;
    CHECK(sc_comm_init_from_env(&comm) == SC_SUCCESS, "init: %s", sc_last_error());
    if (fault_rank == 3)
        fault_sleep(0.5);
    for (int i = 0; i < 8; i++)
        src[i] = 100 + i, b[i] = -1;
    CHECK(sc_broadcast(fault_rank == 0 ? src : NULL, b, 8, SC_INT32, 0, comm, NULL, &rb) ==
              SC_SUCCESS, "broadcast refused: %s", sc_last_error());
    st = sc_allreduce(x, y, fault_rank == 1 ? 8 : 4, SC_INT32, SC_SUM, comm, NULL, &rx);
    CHECK(sc_wait(rb) == SC_SUCCESS, "the broadcast failed: %s", sc_last_error());
    for (int i = 0; i < 8; i++)
        CHECK(b[i] == 100 + i, "b[%d] = %d", i, (int)b[i]);
    if (st == SC_SUCCESS)
        st = sc_wait(rx);
    CHECK(st == SC_ERR_MISMATCH, "the allreduce returned %s: %s", sc_status_string(st),
          sc_last_error());
    if (check_sentence_has(sc_last_error(), "ranks disagree") != TEST_PASS)
        return TEST_FAIL;
    sc_request_free(rb);
    sc_request_free(rx);
    CHECK(sc_barrier(comm, NULL) == SC_ERR_MISMATCH, "a later barrier was not refused");
    CHECK(sc_comm_destroy(comm) == SC_SUCCESS, "destroy: %s", sc_last_error());
    return TEST_PASS;
}

/* A timeout of a month, and an infinite one, are honoured: init and a collective succeed
 * at once (the rendezvous's wait in milliseconds once overflowed an int and hung). */
static int test_timeout_of_a_month_or_infinite_works(int argc, char **argv)
{
    static const char *const values[] = {"2678400", "inf"};

    (void)argc, (void)argv;
    for (int i = 0; i < 2; i++) {
        sc_comm_t *comm = NULL;
        int32_t x = fault_rank + 1, y = 0;
        double t0 = fault_now();

        setenv("SC_TIMEOUT", values[i], 1);
        CHECK(sc_comm_init_from_env(&comm) == SC_SUCCESS, "init with SC_TIMEOUT=%s: %s",
              values[i], sc_last_error());
        CHECK(sc_allreduce(&x, &y, 1, SC_INT32, SC_SUM, comm, NULL, NULL) == SC_SUCCESS,
              "allreduce: %s", sc_last_error());
        CHECK(y == 3, "sum %d", (int)y);
        CHECK(sc_comm_destroy(comm) == SC_SUCCESS, "destroy: %s", sc_last_error());
        CHECK(fault_now() - t0 < 20.0, "SC_TIMEOUT=%s took %.1f s", values[i],
              fault_now() - t0);
    }
    return TEST_PASS;
}

/* 3 ranks; rank 2 never calls sc_comm_init. Ranks 0 and 1 get SC_ERR_TIMEOUT listing
 * rank 2, and only rank 2, as missing, in the singular ("ranks 2 never arrived" before),
 * with the count "1 of 3", after SC_TIMEOUT and within 2 s more. */
static int test_missing_rank_times_out_the_rendezvous_naming_it(int argc, char **argv)
{
    double timeout = fault_timeout();
    char where[128];
    const char *what[] = {where, NULL};

    (void)argc;
    (void)argv;
    if (fault_rank == 2) {
        stay_away(timeout);
        return TEST_PASS;
    }
    snprintf(where, sizeof(where), "rendezvous at 127.0.0.1:%d timed out after %.3g s: "
             "rank 2 never arrived (1 of 3)", fault_env_int("SC_MASTER_PORT"), timeout);
    return check_init_times_out(timeout - 0.05, timeout + 2.0, what);
}

/* 4 processes that claim a world of 12; ranks 0 and 3 call sc_comm_init, 1 and 2 stay
 * away. Both get SC_ERR_TIMEOUT listing the missing ranks with runs of three or more as
 * ranges, as a node's ranks go missing together ("1, 2, 4-11"; each of the 10 listed
 * before, and a world of hundreds was cut off mid-number). */
static int test_missing_ranks_are_listed_as_ranges(int argc, char **argv)
{
    double timeout = fault_timeout();
    char where[160];
    const char *what[] = {where, NULL};

    (void)argc;
    (void)argv;
    if (fault_rank == 1 || fault_rank == 2) {
        stay_away(timeout);
        return TEST_PASS;
    }
    setenv("SC_WORLD_SIZE", "12", 1);
    snprintf(where, sizeof(where), "rendezvous at 127.0.0.1:%d timed out after %.3g s: "
             "ranks 1, 2, 4-11 never arrived (10 of 12)", fault_env_int("SC_MASTER_PORT"),
             timeout);
    return check_init_times_out(timeout - 0.05, timeout + 2.0, what);
}

/* 2 ranks; rank 0's timeout (1 us) ends before its own client joins the store it
 * serves. Its sentence says so, where it listed itself among the ranks that "never
 * arrived" as if its own process were missing. Rank 1 fails too, within its timeout. */
static int test_timeout_shorter_than_rank_0_joining_its_store_is_named(int argc,
                                                                     char **argv)
{
    char where[320];
    const char *what[] = {where, NULL};

    (void)argc;
    (void)argv;
    if (fault_rank == 0) {
        setenv("SC_TIMEOUT", "1e-6", 1);
        snprintf(where, sizeof(where), "rendezvous at 127.0.0.1:%d timed out after 1e-06 s: "
                 "ranks 0, 1 never arrived (2 of 2); rank 0, which serves the rendezvous, "
                 "had not joined it either: the timeout is shorter than a rendezvous takes",
                 fault_env_int("SC_MASTER_PORT"));
        return check_init_times_out(0.0, 1.0, what);
    }
    /* Rank 1 meets the store before, during or after its verdict (it is told the timeout,
     * finds its connection closed, or finds nothing listening): it fails, in time. */
    {
        sc_comm_t *comm = NULL;
        double t0 = fault_now();
        sc_status_t st = sc_comm_init_from_env(&comm);
        (void)what;
        CHECK(st != SC_SUCCESS && comm == NULL, "rank 1's init succeeded");
        CHECK(fault_now() - t0 < fault_timeout() + 3.5, "rank 1 failed after %.3f s",
              fault_now() - t0);
        return TEST_PASS;
    }
}

/* 3 ranks; rank 0, which serves the rendezvous, never calls sc_comm_init. Ranks 1 and
 * 2 get SC_ERR_TIMEOUT saying the store could not be reached; they wait 3 s longer
 * than SC_TIMEOUT (to hear a server's verdict) and not much more. */
static int test_missing_rank_0_times_out_the_rendezvous_naming_its_store(int argc,
                                                                          char **argv)
{
    double timeout = fault_timeout();
    char store[192];
    const char *what[] = {store, NULL};

    (void)argc;
    (void)argv;
    if (fault_rank == 0) {
        stay_away(timeout);
        return TEST_PASS;
    }
    snprintf(store, sizeof(store), "the store of rank 0 at 127.0.0.1:%d could not be reached: "
             "nothing listens there (rank 0 has not started",
             fault_env_int("SC_MASTER_PORT"));
    return check_init_times_out(timeout + 3.0 - 0.05, timeout + 4.0, what);
}

/* 2 ranks; the rendezvous port is taken (rank 0 listens on it itself first). Rank 0's
 * sc_comm_init fails at once with SC_ERR_SYSTEM naming the port and the process that
 * listens on it (its own pid and name), the rank named once, by the log prefix ("rank 0:
 * rank 0 could not serve the rendezvous" before); rank 1 gets SC_ERR_TIMEOUT about the
 * store. */
/* A socket of this process listening on SC_MASTER_PORT, as a store server does (scrun
 * reserves the port with a socket that never listens, which SO_REUSEADDR binds
 * beside): 0 and *fd, or -1. */
static int listen_on_master_port(int *fd)
{
    struct sockaddr_in sa;

    *fd = socket(AF_INET, SOCK_STREAM, 0);
    if (*fd < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    sa.sin_port = htons((uint16_t)fault_env_int("SC_MASTER_PORT"));
    if (setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int)) != 0 ||
        bind(*fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(*fd, 4) != 0) {
        close(*fd);
        return -1;
    }
    return 0;
}

static int test_busy_port_names_the_process_on_it(int argc, char **argv)
{
    double timeout = fault_timeout();
    char holder[128], said[96];
    const char *what[] = {"the store of rank 0", NULL};
    sc_comm_t *comm = (sc_comm_t *)(uintptr_t)0x1;
    sc_status_t st;
    int fd;

    (void)argc;
    (void)argv;
    if (fault_rank != 0)
        return check_init_times_out(timeout + 3.0 - 0.05, timeout + 4.0, what);
    CHECK(listen_on_master_port(&fd) == 0, "could not take the port first");
    st = sc_comm_init_from_env(&comm);
    CHECK(st == SC_ERR_SYSTEM, "sc_comm_init returned %s: %s", sc_status_string(st),
          sc_last_error());
    CHECK(comm == (sc_comm_t *)(uintptr_t)0x1, "sc_comm_init wrote its output on failure");
    {
        char name[64] = "";
        FILE *f = fopen("/proc/self/comm", "r");
        if (f) {
            if (fgets(name, sizeof(name), f))
                name[strcspn(name, "\n")] = '\0';
            fclose(f);
        }
        snprintf(holder, sizeof(holder), "pid %ld (%s) listens on it", (long)getpid(), name);
    }
    snprintf(said, sizeof(said), "rank 0: rendezvous failed: the store could not listen on "
             "port %d: ", (int)fault_env_int("SC_MASTER_PORT"));
    CHECK(strncmp(sc_last_error(), said, strlen(said)) == 0,
          "the sentence '%s' does not start '%s'", sc_last_error(), said);
    if (check_sentence_has(sc_last_error(), holder))
        return TEST_FAIL;
    /* Held until rank 1 gave up, so that it hears nothing either way. */
    fault_sleep(timeout + 3.5);
    close(fd);
    return TEST_PASS;
}

/* 2 ranks; a child of rank 0's process (the same program) listens on the master port,
 * as a second rank 0 does (two nodes launched with one --node-rank, or an earlier launch
 * still running). Rank 0's SC_ERR_SYSTEM names the child and says it runs this program
 * too, likely another rank 0; it named only "pid P (name)" before. Rank 1 times out. */
static int test_busy_port_held_by_this_program_names_a_second_rank_0(int argc, char **argv)
{
    double timeout = fault_timeout();
    const char *what[] = {"the store of rank 0", NULL};
    sc_comm_t *comm = NULL;
    sc_status_t st = SC_SUCCESS;
    int ready[2], fd = -1, ok;
    char c = 0, holder[96];
    pid_t child;

    (void)argc;
    (void)argv;
    if (fault_rank != 0)
        return check_init_times_out(timeout + 3.0 - 0.05, timeout + 4.0, what);
    CHECK(pipe(ready) == 0, "pipe");
    child = fork();
    CHECK(child >= 0, "fork");
    if (child == 0) {
        c = listen_on_master_port(&fd) == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1)
            _exit(1);
        fault_sleep(timeout + 4.0); /* until rank 1 gave up; killed before */
        _exit(0);
    }
    ok = read(ready[0], &c, 1) == 1 && c == 'y';
    if (ok) {
        st = sc_comm_init_from_env(&comm);
        snprintf(holder, sizeof(holder), "pid %ld (", (long)child);
        ok = !check_sentence_has(sc_last_error(), holder) &&
             !check_sentence_has(sc_last_error(), ", and it runs this program too: likely "
                                 "another rank 0 (two nodes given the same --node-rank or "
                                 "SC_RANK, or an earlier launch still running) (set "
                                 "SC_MASTER_PORT to a free port)") &&
             st == SC_ERR_SYSTEM && comm == NULL;
    }
    fault_sleep(timeout + 3.5); /* held until rank 1 gave up */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK(ok, "the child could not take the port, or rank 0's init (%s) did not say so: %s",
          sc_status_string(st), sc_last_error());
    return TEST_PASS;
}

/* A world of one rank opens no rendezvous port: with another process's socket
 * listening on SC_MASTER_PORT (another job, a launcher's own store), sc_comm_init and an
 * allreduce still succeed. It failed with "could not serve the rendezvous on port" (now
 * "the store could not listen on port"). */
static int test_one_rank_needs_no_rendezvous_port(int argc, char **argv)
{
    sc_comm_t *comm = NULL;
    float in[4] = {1.0f, -2.0f, 3.5f, 0.0f}, out[4] = {0};
    int fd;

    (void)argc;
    (void)argv;
    CHECK(listen_on_master_port(&fd) == 0, "could not take the port first");
    if (join_world(&comm, 1) != TEST_PASS) {
        close(fd);
        return TEST_FAIL;
    }
    close(fd);
    CHECK_OK(sc_allreduce(in, out, 4, SC_FLOAT32, SC_SUM, comm, NULL, NULL));
    CHECK(memcmp(in, out, sizeof(in)) == 0, "a one-rank sum is not its input");
    CHECK_OK(sc_comm_destroy(comm));
    return TEST_PASS;
}

/* 2 ranks with a master address that is no IP address although written as one
 * (::1::2): both fail at once with SC_ERR_INVALID_ARG naming it. Rank 1 retried the
 * lookup until SC_TIMEOUT + 3 s, then said the store could not be reached; later it
 * failed at once, but rank 0, which serves on every address without looking it up,
 * waited SC_TIMEOUT for rank 1. */
static int test_master_address_that_is_no_ip_address_fails_at_once(int argc, char **argv)
{
    const char *what[] = {"SC_MASTER_ADDR=::1::2 is written as an IP address but is not an "
                          "IPv4 or IPv6 address", NULL};

    (void)argc;
    (void)argv;
    setenv("SC_MASTER_ADDR", "::1::2", 1);
    return check_init_fails(SC_ERR_INVALID_ARG, 0.0, 1.0, what);
}

/* 2 ranks; rank 0 is given a master address that is none of its host's (192.0.2.1,
 * TEST-NET-1), and rank 1 stays away. Rank 0 still serves (behind a NAT or a virtual IP
 * the address leads to it) and times out saying that the address is not its own: it
 * said only that rank 1 never arrived. */
static int test_master_address_not_of_rank_0_is_named_in_its_timeout(int argc, char **argv)
{
    double timeout = fault_timeout();
    const char *what[] = {"rank 1 never arrived (1 of 2); the master address 192.0.2.1 is "
                          "none of rank 0's own addresses", NULL};

    (void)argc;
    (void)argv;
    if (fault_rank == 1) {
        stay_away(timeout);
        return TEST_PASS;
    }
    setenv("SC_MASTER_ADDR", "192.0.2.1", 1);
    return check_init_times_out(timeout - 0.05, timeout + 2.0, what);
}

/* ---- sc_comm_abort ---- */

#define ABORT_RANK 1
#define ABORT_AFTER_S 0.5

/* A world of 3 whose rank ABORT_RANK aborts ABORT_AFTER_S from now, a moment on
 * CLOCK_MONOTONIC broadcast from it (*abort_at); *t0: when this rank left the
 * broadcast (the aborting rank: after its abort). */
static int start_world_aborted_soon(sc_comm_t **comm, double *abort_at, double *t0)
{
    if (start_world(comm, 3) != TEST_PASS)
        return TEST_FAIL;
    *abort_at = fault_now() + ABORT_AFTER_S;
    CHECK_OK(sc_broadcast(abort_at, abort_at, 1, SC_FLOAT64, ABORT_RANK, *comm, NULL, NULL));
    *t0 = fault_now();
    if (fault_rank == ABORT_RANK) {
        if (*abort_at > *t0)
            fault_sleep(*abort_at - *t0);
        CHECK_OK(sc_comm_abort(*comm));
    }
    return TEST_PASS;
}

/* 3 ranks; ranks 0 and 2 wait in an allreduce while rank 1 calls sc_comm_abort
 * 0.5 s later, at a moment (CLOCK_MONOTONIC, one clock for every process of the
 * machine) it broadcast before. Every rank's allreduce fails with SC_ERR_ABORTED and
 * the sentence of rank 1's abort (rank 1's own, issued after the abort, may say first
 * that it was refused), the waiting ones after that moment (not before the abort), well
 * within SC_TIMEOUT. Each rank's own 0.5 s from the barrier before were the measure:
 * a rank leaving that barrier late (a loaded machine) saw the abort "before" it. */
static int test_abort_fails_the_allreduce_others_wait_in(int argc, char **argv)
{
    double timeout = fault_timeout();
    const char *expected = "rank 1: the communicator was aborted (sc_comm_abort)";
    fault_error_t err;
    sc_comm_t *comm;
    double t0, abort_at;

    (void)argc;
    (void)argv;
    if (start_world_aborted_soon(&comm, &abort_at, &t0) != TEST_PASS)
        return TEST_FAIL;
    fault_error_take(&err, allreduce_input(comm), t0);
    CHECK(err.status == SC_ERR_ABORTED, "the allreduce returned %s: %s",
          sc_status_string(err.status), err.text);
    if (check_sentence_has(err.text, expected) != TEST_PASS)
        return TEST_FAIL;
    /* The abort's sentence itself is what every later call repeats. */
    snprintf(err.text, sizeof(err.text), "%s", expected);
    CHECK(t0 + err.elapsed >= abort_at,
          "the allreduce failed %.3f s before rank 1's abort", abort_at - (t0 + err.elapsed));
    CHECK(err.elapsed < timeout, "the abort took %.3f s to reach this rank, SC_TIMEOUT is %g s",
          err.elapsed, timeout);
    return finish_failed(comm, &err, "the allreduce");
}

/* 3 ranks; rank 1 aborts while ranks 0 and 2 wait in sc_reducer_create, a public call
 * whose agreement is a collective: their sentence names the rank that aborted, as the
 * allreduce's does. The caller's name was put in front of the peer's sentence in place
 * of its "rank 1: ", so each rank read as if it had aborted itself ("rank 2:
 * sc_reducer_create: the communicator was aborted (sc_comm_abort)"). */
static int test_abort_is_named_in_a_call_others_wait_in(int argc, char **argv)
{
    const char *expected = "sc_reducer_create: rank 1: the communicator was aborted "
                           "(sc_comm_abort)";
    sc_grad_desc_t grad = {.count = 5, .dtype = SC_FLOAT32, .name = "w"};
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_reducer_t *reducer = (sc_reducer_t *)(uintptr_t)0x1; /* must stay as it is */
    sc_comm_t *comm;
    double abort_at, t0;
    sc_status_t st;

    (void)argc;
    (void)argv;
    if (start_world_aborted_soon(&comm, &abort_at, &t0) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank == ABORT_RANK) {
        CHECK_OK(sc_comm_destroy(comm));
        return TEST_PASS;
    }
    st = sc_reducer_create(comm, &grad, 1, &cfg, &reducer);
    CHECK(st == SC_ERR_ABORTED, "sc_reducer_create returned %s: %s", sc_status_string(st),
          sc_last_error());
    CHECK(reducer == (sc_reducer_t *)(uintptr_t)0x1, "sc_reducer_create wrote its output");
    if (check_sentence_has(sc_last_error(), expected) != TEST_PASS)
        return TEST_FAIL;
    printf("rank %d: %s\n", fault_rank, sc_last_error());
    CHECK_OK(sc_comm_destroy(comm));
    return TEST_PASS;
}

/* 2 ranks; rank 0 starts a non-blocking barrier that rank 1 never joins, and aborts
 * 0.2 s later: its own pending request fails with SC_ERR_ABORTED. Rank 1, calling a
 * barrier 0.5 s after the abort, fails with the same status and sentence. Both moments
 * are on CLOCK_MONOTONIC, one clock for every process of the machine, from rank 0's
 * broadcast: each rank's own time since it left start_world's barrier was the measure,
 * and a rank 0 leaving it 0.5 s late (a loaded machine) would have met rank 1's barrier
 * before its abort. */
static int test_abort_fails_own_pending_request(int argc, char **argv)
{
    double timeout = fault_timeout();
    const char *expected = "rank 0: the communicator was aborted (sc_comm_abort)";
    fault_error_t err;
    sc_request_t *req = NULL;
    sc_comm_t *comm;
    double t0, abort_at;

    (void)argc;
    (void)argv;
    if (start_world(&comm, 2) != TEST_PASS)
        return TEST_FAIL;
    abort_at = fault_now() + 0.2;
    CHECK_OK(sc_broadcast(&abort_at, &abort_at, 1, SC_FLOAT64, 0, comm, NULL, NULL));
    t0 = fault_now();
    if (fault_rank == 0) {
        CHECK_OK(sc_barrier(comm, &req));
        if (abort_at > fault_now())
            fault_sleep(abort_at - fault_now());
        CHECK(sc_test(req) == SC_IN_PROGRESS, "the barrier completed without rank 1");
        CHECK_OK(sc_comm_abort(comm));
        fault_error_take(&err, sc_wait(req), t0);
        sc_request_free(req);
    } else {
        if (abort_at + 0.5 > fault_now())
            fault_sleep(abort_at + 0.5 - fault_now());
        fault_error_take(&err, sc_barrier(comm, NULL), t0);
    }
    CHECK(err.status == SC_ERR_ABORTED, "the barrier returned %s: %s",
          sc_status_string(err.status), err.text);
    if (check_sentence_has(err.text, expected) != TEST_PASS)
        return TEST_FAIL;
    CHECK(err.elapsed < timeout, "took %.3f s", err.elapsed);
    return finish_failed(comm, &err, "the barrier");
}

/* ---- an abort with many sends pending to a stopped rank ---- */

#define PENDING_SENDS 256
#define PENDING_SEND_BYTES 1024

/* 2 ranks; rank 1 stops itself (SIGSTOP), and rank 0 issues 256 non-blocking sends of
 * 1 KiB to it, most of which stay pending (a stopped rank takes nothing), then calls
 * sc_comm_abort. The abort cancelled the pending sends one after another under the
 * transport's lock, each waited for up to 50 ms (UCX cannot cancel a send already
 * queued to a peer): 9 s for 200, 12 s for 256. It returns within 2 s; rank 0 then
 * resumes rank 1 (SIGCONT), every send's request completes, done before the abort or
 * with SC_ERR_ABORTED (some with that), and both ranks destroy the communicator
 * promptly. */
static int test_abort_with_sends_pending_to_a_stopped_rank_is_prompt(int argc, char **argv)
{
    static char bufs[PENDING_SENDS][PENDING_SEND_BYTES];
    sc_request_t *reqs[PENDING_SENDS];
    int32_t pids[2];
    sc_comm_t *comm;
    int aborted = 0;
    double t0, took;

    (void)argc;
    (void)argv;
    if (start_world(&comm, 2) != TEST_PASS || gather_pids(comm, pids) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank == 1) {
        raise(SIGSTOP);
        return fault_check_destroy(comm, 3.0);
    }
    CHECK(sc_test_wait_stopped((int)pids[1], 10.0), "rank 1 (pid %d) did not stop",
          (int)pids[1]);
    for (int i = 0; i < PENDING_SENDS; i++)
        CHECK_OK(sc_send(bufs[i], PENDING_SEND_BYTES, SC_UINT8, 1, comm, NULL, &reqs[i]));
    fault_sleep(0.2);
    t0 = fault_now();
    CHECK_OK(sc_comm_abort(comm));
    took = fault_now() - t0;
    CHECK(kill((pid_t)pids[1], SIGCONT) == 0, "SIGCONT to pid %d failed", (int)pids[1]);
    printf("rank 0: sc_comm_abort with %d sends issued to a stopped rank took %.3f s\n",
           PENDING_SENDS, took);
    CHECK(took < 2.0, "sc_comm_abort took %.3f s", took);
    for (int i = 0; i < PENDING_SENDS; i++) {
        sc_status_t st = sc_wait(reqs[i]);

        CHECK(st == SC_SUCCESS || st == SC_ERR_ABORTED, "send %d returned %s: %s", i,
              sc_status_string(st), sc_last_error());
        aborted += st == SC_ERR_ABORTED;
        sc_request_free(reqs[i]);
    }
    CHECK(aborted > 0, "no send was pending at the abort");
    printf("rank 0: %d of %d sends failed with SC_ERR_ABORTED\n", aborted, PENDING_SENDS);
    return fault_check_destroy(comm, 3.0);
}

/* ---- a destroy after an abort with every peer stopped ---- */

#define STOPPED_WORLD 8
#define FIFO_FILLING_SENDS 128
/* How long a destroy waited for its notices to peers that took nothing (the library's
 * SC_GONE_NOTICE_WAIT_S): a destroy that still waits for stopped ranks takes longer. */
#define NOTICE_WAIT_S 0.5

/* Waits (rank 0) for ranks 1 to size - 1, of pids, to stop themselves. */
static int wait_all_but_rank_0_stopped(int size, const int32_t *pids)
{
    for (int r = 1; r < size; r++)
        CHECK(sc_test_wait_stopped((int)pids[r], 10.0), "rank %d (pid %d) did not stop", r,
              (int)pids[r]);
    return TEST_PASS;
}

/* Resumes ranks 1 to size - 1 (SIGCONT). */
static int resume_all_but_rank_0(int size, const int32_t *pids)
{
    for (int r = 1; r < size; r++)
        CHECK(kill((pid_t)pids[r], SIGCONT) == 0, "SIGCONT to pid %d failed", (int)pids[r]);
    return TEST_PASS;
}

/* Issues count sends of len bytes from bufs (count * len bytes per rank) to each of
 * ranks 1 to size - 1, their requests in reqs (count per rank, from rank 1's), then a
 * send and a receive of a NULL buffer, which are refused (a notice to that rank each). */
static int send_to_all_but_rank_0(sc_comm_t *comm, int size, char *bufs, size_t len,
                                  int count, sc_request_t **reqs)
{
    for (int r = 1; r < size; r++) {
        for (int i = 0; i < count; i++) {
            size_t k = (size_t)(r - 1) * (size_t)count + (size_t)i;

            CHECK_OK(sc_send(bufs + k * len, len, SC_UINT8, r, comm, NULL, &reqs[k]));
        }
        CHECK(sc_send(NULL, len, SC_UINT8, r, comm, NULL, NULL) == SC_ERR_INVALID_ARG,
              "a NULL send buffer was not refused");
        CHECK(sc_recv(NULL, len, SC_UINT8, r, comm, NULL, NULL) == SC_ERR_INVALID_ARG,
              "a NULL receive buffer was not refused");
    }
    return TEST_PASS;
}

/* Waits for n send requests of an aborted communicator: each done, or failed with
 * SC_ERR_ABORTED. */
static int wait_sends_done_or_aborted(int n, sc_request_t **reqs)
{
    for (int i = 0; i < n; i++) {
        sc_status_t st = sc_wait(reqs[i]);

        CHECK(st == SC_SUCCESS || st == SC_ERR_ABORTED, "send %d returned %s: %s", i,
              sc_status_string(st), sc_last_error());
        sc_request_free(reqs[i]);
    }
    return TEST_PASS;
}

/* 8 ranks; ranks 1 to 7 stop themselves (SIGSTOP), rank 0 issues 128 sends of 1 KiB to
 * each, which fill its shared-memory queue to it (a stopped rank takes nothing), then a
 * refused send and a refused receive to and from each, and aborts the communicator:
 * those refusals' notices and the abort notice to each stopped rank wait behind the
 * sends, 21 in all. Then it destroys the communicator: that cancelled each one's send
 * with a 50 ms wait of its own, one after another (1.05 s for the 21), and before that
 * waited for the notices to leave, 0.5 s (SC_GONE_NOTICE_WAIT_S), for peers that take
 * nothing until they run again. It returns within 0.5 s (about 0.08 s: the cancels'
 * one wait of 50 ms, the worker's end); rank 0 then resumes the others, whose destroys
 * are prompt too. */
static int test_destroy_after_abort_with_stopped_ranks_is_prompt(int argc, char **argv)
{
    static char bufs[(STOPPED_WORLD - 1) * FIFO_FILLING_SENDS][PENDING_SEND_BYTES];
    static sc_request_t *reqs[(STOPPED_WORLD - 1) * FIFO_FILLING_SENDS];
    int32_t pids[STOPPED_WORLD];
    sc_comm_t *comm;
    double t0, took;

    (void)argc;
    (void)argv;
    if (start_world(&comm, STOPPED_WORLD) != TEST_PASS || gather_pids(comm, pids) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank != 0) {
        raise(SIGSTOP);
        return fault_check_destroy(comm, 3.0);
    }
    if (wait_all_but_rank_0_stopped(STOPPED_WORLD, pids) != TEST_PASS ||
        send_to_all_but_rank_0(comm, STOPPED_WORLD, &bufs[0][0], PENDING_SEND_BYTES,
                               FIFO_FILLING_SENDS, reqs) != TEST_PASS)
        return TEST_FAIL;
    fault_sleep(0.2);
    CHECK_OK(sc_comm_abort(comm));
    if (wait_sends_done_or_aborted((STOPPED_WORLD - 1) * FIFO_FILLING_SENDS, reqs) != TEST_PASS)
        return TEST_FAIL;
    t0 = fault_now();
    CHECK_OK(sc_comm_destroy(comm));
    took = fault_now() - t0;
    printf("rank 0: sc_comm_destroy after an abort with %d ranks stopped took %.3f s\n",
           STOPPED_WORLD - 1, took);
    if (resume_all_but_rank_0(STOPPED_WORLD, pids) != TEST_PASS)
        return TEST_FAIL;
    CHECK(took < NOTICE_WAIT_S, "sc_comm_destroy took %.3f s", took);
    return TEST_PASS;
}

/* ---- one collective fewer ---- */

#define SKIP_RANK 2

/* This rank's call where rank 2 skips a barrier: rank 2's allreduce meets the others'
 * barrier. */
static sc_status_t skip_the_barrier(sc_comm_t *comm)
{
    if (fault_rank == SKIP_RANK)
        return allreduce_input(comm);
    return sc_barrier(comm, NULL);
}

static const char *skipped_call(void)
{
    return fault_rank == SKIP_RANK ? "the allreduce" : "the barrier";
}

/* That call failed with SC_ERR_MISMATCH, its sentence naming both calls. */
static int check_skip_mismatch(const fault_error_t *err)
{
    CHECK(err->status == SC_ERR_MISMATCH, "%s returned %s: %s", skipped_call(),
          sc_status_string(err->status), err->text);
    if (check_sentence_has(err->text, "ranks disagree: rank ") != TEST_PASS ||
        check_sentence_has(err->text, "rank 2 called allreduce #") != TEST_PASS ||
        check_sentence_has(err->text, " called barrier #") != TEST_PASS)
        return TEST_FAIL;
    return TEST_PASS;
}

/* 3 ranks; after a first barrier, rank 2 skips the second one, destroys its
 * communicator and exits 0. Ranks 0 and 1 get SC_ERR_PEER_FAILED naming rank 2, within
 * SC_TIMEOUT. */
static int test_rank_skipping_a_barrier_then_exiting_fails_the_others(int argc, char **argv)
{
    double timeout = fault_timeout();
    fault_error_t err;
    sc_comm_t *comm;
    double t0;

    (void)argc;
    (void)argv;
    if (start_world(&comm, 3) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank == SKIP_RANK) {
        fault_sleep(SETTLE_S);
        return fault_check_destroy(comm, 3.0);
    }
    t0 = fault_now();
    fault_error_take(&err, sc_barrier(comm, NULL), t0);
    CHECK(err.status == SC_ERR_PEER_FAILED, "the barrier returned %s: %s",
          sc_status_string(err.status), err.text);
    if (fault_check_names_dead_rank(err.text, SKIP_RANK) != TEST_PASS)
        return TEST_FAIL;
    CHECK(err.elapsed < timeout, "took %.3f s, SC_TIMEOUT is %g s", err.elapsed, timeout);
    return finish_failed(comm, &err, "the barrier");
}

/* 3 ranks; rank 2 skips a barrier and goes on with an allreduce, so its allreduce
 * meets the others' barrier (rank 0 already waits in it, ranks 1 and 2 come 0.3 s
 * later): every rank gets SC_ERR_MISMATCH naming both calls. */
static int test_rank_skipping_a_barrier_then_continuing_is_a_mismatch(int argc, char **argv)
{
    double timeout = fault_timeout();
    fault_error_t err;
    sc_comm_t *comm;
    double t0;

    (void)argc;
    (void)argv;
    if (start_world(&comm, 3) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank != 0)
        fault_sleep(SETTLE_S);
    t0 = fault_now();
    fault_error_take(&err, skip_the_barrier(comm), t0);
    if (check_skip_mismatch(&err) != TEST_PASS)
        return TEST_FAIL;
    CHECK(err.elapsed < timeout, "took %.3f s, SC_TIMEOUT is %g s", err.elapsed, timeout);
    return finish_failed(comm, &err, skipped_call());
}

/* 3 ranks; rank 2 skips a barrier and calls an allreduce, rank 1 calls the barrier:
 * both detect the mismatch, notify every peer, and exit. Rank 0 calls the barrier
 * only once both have exited: the notices they sent before exiting still make its
 * call fail with SC_ERR_MISMATCH naming the calls (not with a dead peer). */
static int test_mismatch_reaches_a_rank_calling_after_the_detectors_exited(int argc,
                                                                           char **argv)
{
    int32_t pids[3];
    fault_error_t err;
    sc_comm_t *comm;

    (void)argc;
    (void)argv;
    if (join_world(&comm, 3) != TEST_PASS || gather_pids(comm, pids) != TEST_PASS)
        return TEST_FAIL;
    CHECK_OK(sc_barrier(comm, NULL));
    if (fault_rank != 0)
        fault_sleep(SETTLE_S);
    if (fault_rank == 0 && (wait_gone(pids[1]) != TEST_PASS || wait_gone(pids[2]) != TEST_PASS))
        return TEST_FAIL;
    fault_error_take(&err, skip_the_barrier(comm), fault_now());
    if (check_skip_mismatch(&err) != TEST_PASS)
        return TEST_FAIL;
    printf("rank %d: got SC_ERR_MISMATCH: %s\n", fault_rank, err.text);
    return fault_check_destroy(comm, 3.0);
}

#define EXIT_MESSAGES 8
#define EXIT_MESSAGE_COUNT 1024

/* 2 ranks; rank 0 starts a barrier and stops itself (SIGSTOP) right after. Rank 1
 * sends it 8 messages of 4 KiB (they complete as soon as they are delivered), completes
 * the barrier - it has what rank 0 sent - destroys its communicator and exits 0; a
 * helper it forked resumes rank 0 once rank 1 is gone. Rank 0's barrier succeeds, as
 * rank 1 entered it and every message of rank 1 was delivered before it exited; so do
 * its receives of the 8 messages, with their contents. */
static int test_peer_exiting_right_after_a_barrier_does_not_fail_it(int argc, char **argv)
{
    static int32_t msg[EXIT_MESSAGES][EXIT_MESSAGE_COUNT];
    sc_request_t *req;
    int32_t pids[2];
    sc_comm_t *comm;
    sc_status_t st;

    (void)argc;
    (void)argv;
    if (join_world(&comm, 2) != TEST_PASS || gather_pids(comm, pids) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank == 1) {
        pid_t helper;

        for (int m = 0; m < EXIT_MESSAGES; m++) {
            for (int i = 0; i < EXIT_MESSAGE_COUNT; i++)
                msg[m][i] = m * EXIT_MESSAGE_COUNT + i;
            CHECK_OK(sc_send(msg[m], EXIT_MESSAGE_COUNT, SC_INT32, 0, comm, NULL, NULL));
        }
        CHECK_OK(sc_barrier(comm, NULL));
        fflush(NULL);
        helper = fork();
        CHECK(helper >= 0, "fork failed");
        if (helper == 0) {
            int gone = wait_gone(pids[1]) == TEST_PASS;
            fault_sleep(0.2);
            kill((pid_t)pids[0], SIGCONT);
            _exit(gone ? 0 : 1);
        }
        return fault_check_destroy(comm, 3.0);
    }
    CHECK_OK(sc_barrier(comm, &req));
    raise(SIGSTOP);
    st = sc_wait(req);
    sc_request_free(req);
    CHECK(st == SC_SUCCESS, "the barrier rank 1 completed failed here with %s: %s",
          sc_status_string(st), sc_last_error());
    for (int m = 0; m < EXIT_MESSAGES; m++) {
        CHECK_OK(sc_recv(msg[m], EXIT_MESSAGE_COUNT, SC_INT32, 1, comm, NULL, NULL));
        for (int i = 0; i < EXIT_MESSAGE_COUNT; i++)
            CHECK(msg[m][i] == m * EXIT_MESSAGE_COUNT + i, "message %d element %d is %d", m, i,
                  msg[m][i]);
    }
    return fault_check_destroy(comm, 3.0);
}

/* 2 ranks; rank 1 destroys its communicator after a barrier and exits 0; rank 0, once
 * rank 1's process is gone, calls a barrier. It fails with SC_ERR_PEER_FAILED within
 * SC_TIMEOUT, saying that rank 1 destroyed the communicator (its destroy notice) or left
 * (it destroyed its communicators and closed its connections): over TCP the sentence
 * was UCX's verdict on the closed connection, "rank 1 is unreachable (UCX: Endpoint
 * timeout)", as for a network fault; over shared memory "rank 1 (pid P) exited or was
 * killed". */
static int test_peer_that_left_is_said_to_have_left(int argc, char **argv)
{
    double timeout = fault_timeout();
    fault_error_t err;
    int32_t pids[2];
    sc_comm_t *comm;

    (void)argc;
    (void)argv;
    if (start_world(&comm, 2) != TEST_PASS || gather_pids(comm, pids) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank == 1)
        return fault_check_destroy(comm, 3.0);
    if (wait_gone(pids[1]) != TEST_PASS)
        return TEST_FAIL;
    fault_error_take(&err, sc_barrier(comm, NULL), fault_now());
    CHECK(err.status == SC_ERR_PEER_FAILED, "the barrier returned %s: %s",
          sc_status_string(err.status), err.text);
    /* The communicator's destroy notice (progress_gone.c) or, where the transport's
     * leaving message was taken first, that message (transport_leave.c). */
    CHECK(strstr(err.text, "rank 1 destroyed the communicator (sc_comm_destroy on rank 1)") ||
              strstr(err.text, "rank 1 left: it destroyed its communicators"),
          "the sentence '%s' says neither that rank 1 destroyed the communicator nor that "
          "it left", err.text);
    CHECK(!strstr(err.text, "unreachable") && !strstr(err.text, "imeout"),
          "the sentence '%s' reads as a network fault", err.text);
    CHECK(err.elapsed < timeout, "took %.3f s, SC_TIMEOUT is %g s", err.elapsed, timeout);
    return finish_failed(comm, &err, "the barrier");
}

/* ---- a silent peer ---- */

/* 2 ranks; rank 1 stays alive but does not call the allreduce until rank 0's has failed
 * (rank 0 tells it with SIGUSR1; 20 s after SC_TIMEOUT at most). Rank 0's allreduce fails
 * with SC_ERR_TIMEOUT naming rank 1, after SC_TIMEOUT and within 2 s more; rank 1's late
 * allreduce then fails with the same status and sentence (rank 0's abort notice), at
 * once, or, where it starts before that notice is read, completes with rank 0's part
 * (sent before rank 0 gave up: 3 runs in 24, three at a time) and rank 1's next call
 * fails so, at once. Rank 1 slept SC_TIMEOUT + 1.5 s instead, and the 2 s timeout had 1 s of slack:
 * a rank 0 slowed by a loaded machine could pass the bound, or see rank 1's allreduce
 * arrive before its timeout and succeed. SC_TIMEOUT is 4 s here: twice the timeout, or
 * the timeout and the 3 s the rendezvous clients add, still fail the bound. */
static int test_pending_op_times_out_naming_the_silent_rank(int argc, char **argv)
{
    float out[ALLREDUCE_COUNT];
    double timeout = fault_timeout();
    char what[192];
    fault_error_t err;
    sc_comm_t *comm;
    int32_t pids[2];
    sigset_t usr1;
    double t0;

    (void)argc;
    (void)argv;
    /* Blocked before any rank can send it, so it waits for sigtimedwait. */
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    CHECK(pthread_sigmask(SIG_BLOCK, &usr1, NULL) == 0, "SIGUSR1 could not be blocked");
    if (start_world(&comm, 2) != TEST_PASS || gather_pids(comm, pids) != TEST_PASS)
        return TEST_FAIL;
    snprintf(what, sizeof(what), "timed out after %.1f s: nothing came from rank 1: it never "
             "issued its matching call, or it or the network to it failed", timeout);
    if (fault_rank == 1) {
        double limit = timeout + 20.0;
        struct timespec ts = {(time_t)limit, 0};

        /* Without the signal (rank 0's allreduce did not fail) it calls anyway, and rank
         * 0's check of its status fails the test. */
        if (sigtimedwait(&usr1, NULL, &ts) != SIGUSR1)
            printf("rank 1: no word from rank 0 after %.0f s; calling the allreduce\n", limit);
    }
    t0 = fault_now();
    fault_error_take(&err, allreduce_input_into(comm, out), t0);
    if (fault_rank == 0)
        kill((pid_t)pids[1], SIGUSR1);
    if (fault_rank == 1 && err.status == SC_SUCCESS) {
        for (size_t i = 0; i < ALLREDUCE_COUNT; i++)
            CHECK(out[i] == expected_sum(2, 0, i), "the late allreduce completed with "
                  "element %zu %g, expected %g", i, out[i], expected_sum(2, 0, i));
        printf("rank 1: the late allreduce completed, right, before rank 0's notice was "
               "read; the next one must fail\n");
        t0 = fault_now();
        fault_error_take(&err, allreduce_input(comm), t0);
    }
    CHECK(err.status == SC_ERR_TIMEOUT, "the allreduce returned %s: %s",
          sc_status_string(err.status), err.text);
    if (check_sentence_has(err.text, "allreduce #") != TEST_PASS ||
        check_sentence_has(err.text, what) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank == 0)
        CHECK(err.elapsed >= timeout - 0.05 && err.elapsed < timeout + 2.0,
              "the allreduce timed out after %.3f s, expected [%g, %g) s", err.elapsed,
              timeout, timeout + 2.0);
    else
        CHECK(err.elapsed < 0.5, "the late allreduce took %.3f s to fail", err.elapsed);
    return finish_failed(comm, &err, "the allreduce");
}

/* 3 ranks: rank 0 (the rendezvous store) is killed during sc_comm_init, once rank 1 is
 * connected to it and waits for rank 2, which joins only after rank 0 is gone. Rank 1's
 * connection breaks; it failed only after SC_TIMEOUT + 3 s, its sentence saying rank 0
 * had "not started" and a time it had not waited (helper's find). It now fails about
 * 1 s after the death (3 s at most here), naming it. Rank 2, which never reached the store, can only time
 * out. The moments come from the ranks themselves, not from sleeps: rank 0 was killed
 * 0.5 s into its init and rank 2 slept 2 s, and a rank 1 that connected later than that
 * (a loaded machine, a sanitizer's start-up) found no store and timed out.
 * $FAULT_DIR (killed_rank_test.sh's folder) holds rank 0's pid and its time of death. */
#define STORE_KILL_WAIT_S 20.0

/* Whether a process other than this one holds an established TCP connection to the
 * local port (in /proc/net/tcp: state 01, the remote port, a socket inode that is none
 * of this process's descriptors): rank 1's client connected to this rank's store. */
static int other_process_connected_to(int port)
{
    unsigned long rem_port, state, inode;
    char line[512], link[64], path[64];
    int found = 0;
    FILE *f = fopen("/proc/net/tcp", "r");

    if (!f)
        return 0;
    while (!found && fgets(line, sizeof(line), f)) {
        int mine = 0, fd;

        if (sscanf(line, " %*d: %*x:%*x %*x:%lx %lx %*x:%*x %*x:%*x %*x %*u %*u %lu",
                   &rem_port, &state, &inode) != 3 ||
            rem_port != (unsigned long)port || state != 1 || inode == 0)
            continue;
        for (fd = 0; fd < 4096 && !mine; fd++) {
            ssize_t n;

            snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
            n = readlink(path, link, sizeof(link) - 1);
            if (n <= 0)
                continue;
            link[n] = '\0';
            mine = strncmp(link, "socket:[", 8) == 0 && strtoul(link + 8, NULL, 10) == inode;
        }
        found = !mine;
    }
    fclose(f);
    return found;
}

static void fault_dir_path(char *path, size_t len, const char *name)
{
    const char *dir = getenv("FAULT_DIR");

    snprintf(path, len, "%s/%s", dir ? dir : ".", name);
}

/* Writes what to $FAULT_DIR/name whole (a rename), so a reader never sees a part. */
static void fault_dir_write(const char *name, const char *what)
{
    char path[512], tmp[520];
    FILE *f;

    fault_dir_path(path, sizeof(path), name);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    if (!f)
        return;
    fputs(what, f);
    fclose(f);
    rename(tmp, path);
}

/* Rank 0: SIGKILL once rank 1 is connected to the store (20 s at most), noting the
 * moment in $FAULT_DIR/killed_at for rank 1's bound. */
static void *kill_self_once_connected(void *arg)
{
    double deadline = fault_now() + STORE_KILL_WAIT_S;
    int port = *(const int *)arg;
    char when[64];

    while (!other_process_connected_to(port) && fault_now() < deadline)
        fault_sleep(0.005);
    snprintf(when, sizeof(when), "%.6f\n", fault_now());
    fault_dir_write("killed_at", when);
    raise(SIGKILL);
    return NULL;
}

static int test_store_killed_mid_rendezvous_fails_the_connected_ranks_at_once(int argc,
                                                                              char **argv)
{
    static int port;
    fault_error_t err;
    sc_comm_t *comm;
    pthread_t killer;
    char path[512];
    double t0;

    (void)argc;
    (void)argv;
    CHECK(getenv("FAULT_DIR"), "FAULT_DIR is not set (run through killed_rank_test.sh)");
    if (fault_rank != 0)
        signal(SIGTERM, SIG_IGN);
    if (fault_rank == 0) {
        char pid[32];

        port = fault_env_int("SC_MASTER_PORT");
        snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
        fault_dir_write("rank0.pid", pid);
        CHECK(pthread_create(&killer, NULL, kill_self_once_connected, &port) == 0,
              "no thread");
    }
    if (fault_rank == 2) {
        double deadline = fault_now() + STORE_KILL_WAIT_S;
        int pid = 0;
        FILE *f;

        fault_dir_path(path, sizeof(path), "rank0.pid");
        while (!(f = fopen(path, "r")) && fault_now() < deadline)
            fault_sleep(0.01);
        CHECK(f && fscanf(f, "%d", &pid) == 1, "rank 0 left no pid in %s", path);
        fclose(f);
        if (wait_gone(pid) != TEST_PASS)
            return TEST_FAIL;
        /* It can only time out: 1 s (4 s with the clients' 3 s more) ends it well within
         * scrun's 10 s of grace after rank 0's death; the test's SC_TIMEOUT of 5 s gives
         * the other ranks room to start. */
        setenv("SC_TIMEOUT", "1", 1);
    }
    t0 = fault_now();
    fault_error_take(&err, sc_comm_init_from_env(&comm), t0);
    CHECK(err.status != SC_SUCCESS, "sc_comm_init succeeded without rank 0");
    if (fault_rank == 1) {
        double killed_at = 0.0, since;
        FILE *f;

        CHECK(err.status == SC_ERR_PEER_FAILED, "sc_comm_init returned %s: %s",
              sc_status_string(err.status), err.text);
        if (check_sentence_has(err.text, "closed this rank's connection before it "
                                         "answered") != TEST_PASS ||
            check_sentence_has(err.text, "rank 0 exited or was killed") != TEST_PASS)
            return TEST_FAIL;
        fault_dir_path(path, sizeof(path), "killed_at");
        f = fopen(path, "r");
        CHECK(f && fscanf(f, "%lf", &killed_at) == 1, "rank 0 left no time of death in %s",
              path);
        fclose(f);
        since = t0 + err.elapsed - killed_at;
        /* About 1 s (the reconnections that find nothing listening) against SC_TIMEOUT
         * + 3 s from the start of the rendezvous. */
        CHECK(since < 3.0, "sc_comm_init failed %.2f s after rank 0 was killed", since);
    }
    printf("rank %d: sc_comm_init got %s after %.3f s: %s\n", fault_rank,
           sc_status_string(err.status), err.elapsed, err.text);
    return TEST_PASS;
}

/* size ranks, the ring (no staging): ranks 1 to nstopped stop themselves (SIGSTOP) in
 * the middle of a 16 MiB allreduce. A rank that times out waits for its ring neighbour,
 * in most runs a live rank that waits for a stopped one itself, and that sentence
 * reached every rank without naming the stopped rank (helper's find: 4 runs of 8 blamed
 * rank 2). Every live rank's sentence now names each stopped rank with its pid (one:
 * "rank 1 (pid P) is stopped (...)", several: "N ranks of S are stopped (...): rank 1
 * (pid P), ..."); rank 0 resumes them (SIGCONT, the pids from the sentence), and their
 * allreduce fails too. */
#define STOP_COUNT (4u << 20)

static int stopped_ranks_are_named(int size, int nstopped)
{
    float *in = malloc(STOP_COUNT * sizeof(float)), *out = malloc(STOP_COUNT * sizeof(float));
    int stopped = fault_rank >= 1 && fault_rank <= nstopped;
    fault_error_t err;
    sc_request_t *req;
    sc_comm_t *comm;
    char cause[96];
    int rc;

    CHECK(in && out, "out of memory");
    for (size_t i = 0; i < STOP_COUNT; i++)
        in[i] = (float)(i % 7);
    if (start_world(&comm, size) != TEST_PASS)
        return TEST_FAIL;
    CHECK_OK(sc_allreduce(in, out, STOP_COUNT, SC_FLOAT32, SC_SUM, comm, NULL, &req));
    if (stopped) {
        fault_sleep(0.02);
        raise(SIGSTOP);
    }
    fault_error_take(&err, sc_wait(req), fault_now());
    sc_request_free(req);
    /* A stopped rank, resumed, gets the others' notice or finds its own transfers failed
     * (UCX's endpoint timed out while it was stopped): either error. */
    CHECK(err.status == SC_ERR_TIMEOUT || (stopped && err.status == SC_ERR_PEER_FAILED),
          "the allreduce returned %s: %s", sc_status_string(err.status), err.text);
    if (!stopped) {
        if (nstopped == 1)
            snprintf(cause, sizeof(cause), ") is stopped (SIGSTOP, Ctrl-Z or a debugger)");
        else
            snprintf(cause, sizeof(cause), "; %d ranks of %d are stopped (SIGSTOP, Ctrl-Z or a "
                     "debugger): rank 1 (pid ", nstopped, size);
        if (check_sentence_has(err.text, cause) != TEST_PASS)
            return TEST_FAIL;
        for (int r = 1; r <= nstopped; r++) {
            char name[32];
            const char *at;
            int pid = 0;

            snprintf(name, sizeof(name), "rank %d (pid ", r);
            at = strstr(err.text, name);
            CHECK(at && sscanf(at + strlen(name), "%d)", &pid) == 1 && pid > 0,
                  "the sentence '%s' does not name rank %d and its pid", err.text, r);
            if (fault_rank == 0)
                CHECK(kill(pid, SIGCONT) == 0, "SIGCONT to pid %d failed", pid);
        }
    }
    /* The buffers stay until the communicator is gone: a transfer UCX could not cancel
     * (a peer's cross-memory copy) may still read or write them (collectives.h). */
    rc = finish_failed(comm, &err, "the allreduce");
    free(in);
    free(out);
    return rc;
}

/* 4 ranks, rank 1 stopped. */
static int test_stopped_rank_is_named_in_the_timeout(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return stopped_ranks_are_named(4, 1);
}

/* 4 ranks, rank 1 stopped, RESUMED_ROUNDS times in one process (each a world of its
 * own, made, broken by the timeout and destroyed), with UCX's cross-memory copies cut
 * into 256-byte segments (the test's UCX_CMA_SEG_SIZE), so that a copy takes many
 * progress calls. The timeout releases the rendezvous sends still in flight unfinished
 * (rank 0's to rank 1, rank 3's to rank 0), on local endpoints that no forced close
 * ends; their peers answer late, as they drop the failed call's messages (rank 1 once
 * rank 0 resumed it, rank 0 as it settles), and the answer starts the sender's copy as
 * its transport closes. UCX 1.13 destroyed the endpoint with the copy still queued and
 * aborted the process (arbiter.c: 'ucs_arbiter_group_is_empty(group)' in
 * uct_cma_ep_t_delete, from ucp_worker_destroy, under sc_comm_destroy): in the first
 * round in 3 runs of 3. Every round must pass on every rank, its destroy included. */
#define RESUMED_ROUNDS 3

static int test_stopped_rank_resumed_at_the_destroy(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    for (int round = 0; round < RESUMED_ROUNDS; round++)
        if (stopped_ranks_are_named(4, 1) != TEST_PASS)
            return TEST_FAIL;
    return TEST_PASS;
}

/* 8 ranks, ranks 1-6 stopped: each named with its pid, past the 300 characters the
 * list had, where the fifth was cut mid-word ("(SIGSTOP, Ctrl-") and the sixth left out
 * without a sign. */
static int test_stopped_ranks_are_all_named_in_the_timeout(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return stopped_ranks_are_named(8, 6);
}

/* 2 ranks, the ring (no staging): rank 1 stops itself (SIGSTOP) as it issues a 16 MiB
 * allreduce; rank 0's times out, and rank 0 destroys its communicator with rank 1
 * still stopped, then resumes it (SIGCONT, the pid from the sentence) and exits; rank 1's
 * allreduce fails and it destroys its communicator. The timeout released rank 0's
 * rendezvous sends to rank 1 unfinished, on a shared-memory endpoint that UCX neither
 * cancels nor closes by force, and rank 1's receives, once resumed, wait for a rank 0
 * whose worker is gone: each destroy printed a UCX WARN line per request, 'mpool.c:53
 * UCX WARN object 0x... {flags:0x4002 send length 262144
 * ucp_proto_progress_tag_rndv_rts() host memory} was not returned to mpool
 * ucp_requests' on rank 0 (the CTest entry fails on any UCX WARN). Each destroy stays
 * prompt (3 s). */
static int test_destroy_beside_a_stopped_rank_leaves_no_ucx_warning(int argc, char **argv)
{
    float *in = malloc(STOP_COUNT * sizeof(float)), *out = malloc(STOP_COUNT * sizeof(float));
    fault_error_t err;
    sc_request_t *req;
    sc_comm_t *comm;
    const char *at;
    int pid = 0;

    (void)argc;
    (void)argv;
    CHECK(in && out, "out of memory");
    for (size_t i = 0; i < STOP_COUNT; i++)
        in[i] = (float)(i % 7);
    if (start_world(&comm, 2) != TEST_PASS)
        return TEST_FAIL;
    CHECK_OK(sc_allreduce(in, out, STOP_COUNT, SC_FLOAT32, SC_SUM, comm, NULL, &req));
    /* At once: with 2 ranks the allreduce could finish within the 20 ms the others' wait. */
    if (fault_rank == 1)
        raise(SIGSTOP);
    fault_error_take(&err, sc_wait(req), fault_now());
    sc_request_free(req);
    CHECK(err.status == SC_ERR_TIMEOUT || (fault_rank == 1 && err.status == SC_ERR_PEER_FAILED),
          "the allreduce returned %s: %s", sc_status_string(err.status), err.text);
    if (fault_rank == 0) {
        at = strstr(err.text, "rank 1 (pid ");
        CHECK(at && sscanf(at + strlen("rank 1 (pid "), "%d)", &pid) == 1 && pid > 0,
              "the sentence '%s' does not name rank 1 and its pid", err.text);
    }
    /* Rank 1 is still stopped as rank 0 destroys. */
    if (fault_check_destroy(comm, 3.0) != TEST_PASS)
        return TEST_FAIL;
    if (fault_rank == 0)
        CHECK(kill(pid, SIGCONT) == 0, "SIGCONT to pid %d failed", pid);
    free(in);
    free(out);
    return TEST_PASS;
}

/* The input of the long allreduce below: small integers, so that any count sums exactly. */
static float long_input(int r, size_t i)
{
    return (float)((r + 1) * 3 + (int)(i % 13));
}

/* A call with the rank itself that waits for its pair times out after SC_TIMEOUT
 * saying that the pair is this rank's own: a blocking send to itself past UCX's eager
 * size (its data waits for a receive the blocked thread cannot post), a receive from
 * itself posted with a request and never matched. The sentences named rank 0 alone,
 * "waiting for rank 0 (send of N bytes)" and "nothing came from rank 0: it never
 * issued its matching call, or it or the network to it failed", rank 0 being itself. */
static int check_times_out_with_itself(int send, const char *says)
{
    static float buf[1 << 16];
    double timeout = fault_timeout(), t0;
    sc_request_t *req = NULL;
    fault_error_t err;
    sc_comm_t *comm;

    if (start_world(&comm, 1) != TEST_PASS)
        return TEST_FAIL;
    t0 = fault_now();
    if (send) {
        fault_error_take(&err, sc_send(buf, 1 << 16, SC_FLOAT32, 0, comm, NULL, NULL), t0);
    } else {
        CHECK_OK(sc_recv(buf, 1 << 16, SC_FLOAT32, 0, comm, NULL, &req));
        fault_error_take(&err, sc_wait(req), t0);
        sc_request_free(req);
    }
    CHECK(err.status == SC_ERR_TIMEOUT, "the %s returned %s: %s", send ? "send" : "receive",
          sc_status_string(err.status), err.text);
    CHECK(err.elapsed >= timeout - 0.5 && err.elapsed < timeout + 5.0,
          "failed after %.2f s, SC_TIMEOUT is %.1f s", err.elapsed, timeout);
    CHECK(strstr(err.text, says), "the sentence '%s' lacks '%s'", err.text, says);
    return fault_check_destroy(comm, 3.0);
}

static int test_send_to_itself_times_out_naming_its_own_receive(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return check_times_out_with_itself(1, "that is this rank itself, whose receive of it "
                                          "was not posted before it");
}

static int test_receive_from_itself_times_out_naming_its_own_send(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return check_times_out_with_itself(0, "nothing came from rank 0, this rank itself: it "
                                          "issued no matching send to itself");
}

/* Each rank's input of count floats written, and the result of the allreduce checked,
 * in slices of 4M floats with a barrier after each: with SC_TIMEOUT at 0.4 s, a rank
 * whose pass over up to 1 GiB ran 0.4 s behind its peer's (descheduled, or its pages
 * faulted in more slowly) left that peer's next collective waiting past the timeout
 * ('allreduce #13 ... timed out after 0.4 s: nothing came from rank 0' in CI, the
 * input of 206,762,275 floats being written). The barriers keep the ranks within a
 * slice of each other; what the test times is the allreduce alone. check: 0 writes in,
 * 1 compares out with the sum. 0, or -1 after printing why. */
static int long_pass_sliced(sc_comm_t *comm, float *in, const float *out, size_t count,
                            int check)
{
    const size_t slice = (size_t)1 << 22;

    for (size_t i0 = 0; i0 < count; i0 += slice) {
        size_t end = count - i0 < slice ? count : i0 + slice;

        for (size_t i = i0; i < end; i++) {
            if (!check) {
                in[i] = long_input(fault_rank, i);
            } else if (out[i] != long_input(0, i) + long_input(1, i)) {
                printf("rank %d: FAIL element %zu of %zu is %g, expected %g\n", fault_rank, i,
                       count, (double)out[i], (double)(long_input(0, i) + long_input(1, i)));
                return -1;
            }
        }
        if (sc_barrier(comm, NULL) != SC_SUCCESS) {
            printf("rank %d: FAIL the barrier after %s slice at %zu of %zu: %s\n", fault_rank,
                   check ? "checking the" : "writing the input's", i0, count, sc_last_error());
            return -1;
        }
    }
    return 0;
}

/* 2 ranks, 64-byte chunks and the ring, so that a large allreduce is a long stream of
 * small messages. The count grows (the same on both ranks: the slower rank's time
 * decides) until one allreduce takes longer than 1.5 x SC_TIMEOUT. It keeps moving the
 * whole time, so it completes with the right sum: SC_TIMEOUT bounds a wait for a peer,
 * not the length of an op. Since the ring caps an op at 65536 chunks, the count grows up to
 * 256M floats (1 GiB per buffer) to outlast 1.5 x SC_TIMEOUT. Building such a schedule (millions of actions) takes each
 * rank 0.3-0.6 s, and the two builds differ by more than the timeout on a loaded
 * machine: the op's build grace (SC_OP_BUILD_GRACE) covers that. */
static int test_long_op_that_keeps_moving_outlives_the_timeout(int argc, char **argv)
{
    const size_t cap = (size_t)256 << 20;
    double timeout = fault_timeout(), took = 0.0;
    size_t count = (size_t)1 << 18;
    float *in = NULL, *out = NULL;
    sc_comm_t *comm;
    int rc = TEST_FAIL;

    (void)argc;
    (void)argv;
    setenv("SC_CHUNK_BYTES", "64", 1);
    setenv("SC_ALGO", "ring", 1);
    if (start_world(&comm, 2) != TEST_PASS)
        return TEST_FAIL;
    for (;;) {
        double t0, mine;
        float *ni = realloc(in, count * sizeof(float)), *no;

        if (!ni)
            break;
        in = ni;
        no = realloc(out, count * sizeof(float));
        if (!no)
            break;
        out = no;
        if (long_pass_sliced(comm, in, out, count, 0) != 0)
            goto out;
        t0 = fault_now();
        sc_status_t st = sc_allreduce(in, out, count, SC_FLOAT32, SC_SUM, comm, NULL, NULL);
        mine = fault_now() - t0;
        if (st != SC_SUCCESS) {
            printf("rank %d: FAIL the allreduce of %zu floats returned %s after %.2f s "
                   "(SC_TIMEOUT %.1f s): %s\n", fault_rank, count, sc_status_string(st), mine,
                   timeout, sc_last_error());
            goto out;
        }
        if (long_pass_sliced(comm, in, out, count, 1) != 0)
            goto out;
        if (sc_allreduce(&mine, &took, 1, SC_FLOAT64, SC_MAX, comm, NULL, NULL) != SC_SUCCESS) {
            printf("rank %d: FAIL the agreement on the time: %s\n", fault_rank, sc_last_error());
            goto out;
        }
        if (took > 1.5 * timeout)
            break;
        if (count >= cap) {
            printf("rank %d: FAIL %zu floats took only %.2f s, not more than 1.5 x SC_TIMEOUT "
                   "(%.1f s): nothing was tested\n", fault_rank, count, took, timeout);
            goto out;
        }
        /* Aim at 2 x SC_TIMEOUT from the rate just seen. */
        double grow = took > 0.0 ? 2.0 * timeout / took : 16.0;
        count = grow > 16.0 ? count * 16 : (size_t)((double)count * (grow > 1.5 ? grow : 1.5));
        if (count > cap)
            count = cap;
    }
    if (!in || !out) {
        printf("rank %d: FAIL out of memory at %zu floats\n", fault_rank, count);
        goto out;
    }
    printf("rank %d: an allreduce of %zu floats took %.2f s with SC_TIMEOUT %.1f s and "
           "completed with the right sum\n", fault_rank, count, took, timeout);
    rc = TEST_PASS;
out:
    free(in);
    free(out);
    if (rc == TEST_PASS)
        return fault_check_destroy(comm, 3.0);
    sc_comm_destroy(comm);
    return rc;
}

int main(int argc, char **argv)
{
    static const fault_test_t tests[] = {
        {"killed_rank_fails_pending_and_later_calls",
         test_killed_rank_fails_pending_and_later_calls},
        {"missing_rank_times_out_the_rendezvous_naming_it",
         test_missing_rank_times_out_the_rendezvous_naming_it},
        {"missing_ranks_are_listed_as_ranges", test_missing_ranks_are_listed_as_ranges},
        {"missing_rank_0_times_out_the_rendezvous_naming_its_store",
         test_missing_rank_0_times_out_the_rendezvous_naming_its_store},
        {"timeout_shorter_than_rank_0_joining_its_store_is_named",
         test_timeout_shorter_than_rank_0_joining_its_store_is_named},
        {"busy_port_names_the_process_on_it", test_busy_port_names_the_process_on_it},
        {"busy_port_held_by_this_program_names_a_second_rank_0",
         test_busy_port_held_by_this_program_names_a_second_rank_0},
        {"one_rank_needs_no_rendezvous_port", test_one_rank_needs_no_rendezvous_port},
        {"rank_failing_before_the_rendezvous_fails_every_rank_at_once",
         test_rank_failing_before_the_rendezvous_fails_every_rank_at_once},
        {"retry_after_a_failed_rendezvous_takes_the_port",
         test_retry_after_a_failed_rendezvous_takes_the_port},
        {"second_init_beside_a_failed_rendezvous_takes_the_port",
         test_second_init_beside_a_failed_rendezvous_takes_the_port},
        {"master_address_that_is_no_ip_address_fails_at_once",
         test_master_address_that_is_no_ip_address_fails_at_once},
        {"master_address_not_of_rank_0_is_named_in_its_timeout",
         test_master_address_not_of_rank_0_is_named_in_its_timeout},
        {"two_processes_claiming_one_rank_fail_init_naming_it",
         test_two_processes_claiming_one_rank_fail_init_naming_it},
        {"claim_still_coming_as_the_last_rank_arrives_fails_init_naming_it",
         test_claim_still_coming_as_the_last_rank_arrives_fails_init_naming_it},
        {"late_process_claiming_a_rank_is_told_the_store_is_gone",
         test_late_process_claiming_a_rank_is_told_the_store_is_gone},
        {"rank_killed_in_the_rendezvous_and_started_again_joins",
         test_rank_killed_in_the_rendezvous_and_started_again_joins},
        {"local_sizes_that_differ_fail_init_at_once",
         test_local_sizes_that_differ_fail_init_at_once},
        {"timeout_of_a_month_or_infinite_works", test_timeout_of_a_month_or_infinite_works},
        {"settings_that_differ_fail_init_on_every_rank",
         test_settings_that_differ_fail_init_on_every_rank},
        {"ucx_tls_compared_as_sets", test_ucx_tls_compared_as_sets},
        {"ucx_tls_that_differ_are_written_with_control_characters_shown",
         test_ucx_tls_that_differ_are_written_with_control_characters_shown},
        {"launch_variables_come_from_one_launcher",
         test_launch_variables_come_from_one_launcher},
        {"rank_behind_finishes_the_collective_before_the_mismatch",
         test_rank_behind_finishes_the_collective_before_the_mismatch},
        {"abort_fails_the_allreduce_others_wait_in", test_abort_fails_the_allreduce_others_wait_in},
        {"abort_fails_own_pending_request", test_abort_fails_own_pending_request},
        {"abort_is_named_in_a_call_others_wait_in",
         test_abort_is_named_in_a_call_others_wait_in},
        {"abort_with_sends_pending_to_a_stopped_rank_is_prompt",
         test_abort_with_sends_pending_to_a_stopped_rank_is_prompt},
        {"destroy_after_abort_with_stopped_ranks_is_prompt",
         test_destroy_after_abort_with_stopped_ranks_is_prompt},
        {"rank_skipping_a_barrier_then_exiting_fails_the_others",
         test_rank_skipping_a_barrier_then_exiting_fails_the_others},
        {"rank_skipping_a_barrier_then_continuing_is_a_mismatch",
         test_rank_skipping_a_barrier_then_continuing_is_a_mismatch},
        {"mismatch_reaches_a_rank_calling_after_the_detectors_exited",
         test_mismatch_reaches_a_rank_calling_after_the_detectors_exited},
        {"peer_exiting_right_after_a_barrier_does_not_fail_it",
         test_peer_exiting_right_after_a_barrier_does_not_fail_it},
        {"peer_that_left_is_said_to_have_left", test_peer_that_left_is_said_to_have_left},
        {"silent_connection_holds_up_no_later_arrival",
         test_silent_connection_holds_up_no_later_arrival},
        {"silent_connection_holds_up_no_refusal", test_silent_connection_holds_up_no_refusal},
        {"trickling_connection_holds_the_store_no_longer_than_10_s",
         test_trickling_connection_holds_the_store_no_longer_than_10_s},
        {"pending_op_times_out_naming_the_silent_rank",
         test_pending_op_times_out_naming_the_silent_rank},
        {"send_to_itself_times_out_naming_its_own_receive",
         test_send_to_itself_times_out_naming_its_own_receive},
        {"receive_from_itself_times_out_naming_its_own_send",
         test_receive_from_itself_times_out_naming_its_own_send},
        {"long_op_that_keeps_moving_outlives_the_timeout",
         test_long_op_that_keeps_moving_outlives_the_timeout},
        {"stopped_rank_is_named_in_the_timeout", test_stopped_rank_is_named_in_the_timeout},
        {"stopped_rank_resumed_at_the_destroy", test_stopped_rank_resumed_at_the_destroy},
        {"destroy_beside_a_stopped_rank_leaves_no_ucx_warning",
         test_destroy_beside_a_stopped_rank_leaves_no_ucx_warning},
        {"stopped_ranks_are_all_named_in_the_timeout",
         test_stopped_ranks_are_all_named_in_the_timeout},
        {"store_killed_mid_rendezvous_fails_the_connected_ranks_at_once",
         test_store_killed_mid_rendezvous_fails_the_connected_ranks_at_once},
        {NULL, NULL}};
    return fault_main(tests, argc, argv);
}
