/* Harness of the fault tests: each rank runs the test named by argv[1] under scrun,
 * checks its own expectations with CHECK and prints one PASS or FAIL line. */
#ifndef SC_TEST_FAULT_UTIL_H
#define SC_TEST_FAULT_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shardcomm/shardcomm.h"

#define TEST_PASS 0
#define TEST_FAIL 1

/* The rank scrun gave this process (SC_RANK), known before any communicator. */
static int fault_rank = -1;

#define SC_CHECK_RANK fault_rank
#include "../common/sc_check.h"

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} fault_test_t;

/* Monotonic seconds; CLOCK_MONOTONIC is one clock for every process of the machine. */
static inline double fault_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The CPU time of this process so far, its threads' together. */
static inline double fault_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline void fault_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* SC_TIMEOUT as the test's CTest entry set it, read independently of the library. */
static inline double fault_timeout(void)
{
    const char *s = getenv("SC_TIMEOUT");
    double t = s ? atof(s) : 0.0;
    if (t <= 0.0) {
        fprintf(stderr, "rank %d: the fault tests need SC_TIMEOUT set\n", fault_rank);
        exit(TEST_FAIL);
    }
    return t;
}

static inline int fault_env_int(const char *name)
{
    const char *s = getenv(name);
    if (!s) {
        fprintf(stderr, "rank %d: %s is not set (run through scrun)\n", fault_rank, name);
        exit(TEST_FAIL);
    }
    return atoi(s);
}

/* Each rank runs the named test and says how it went (one line, flushed, so that a
 * rank killed or stopped afterwards still shows it). */
static inline int fault_main(const fault_test_t *tests, int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    fault_rank = fault_env_int("SC_RANK");
    if (argc < 2) {
        fprintf(stderr, "usage: %s TEST [ARGS...]\n", argv[0]);
        return TEST_FAIL;
    }
    for (const fault_test_t *t = tests; t->name; t++) {
        if (strcmp(argv[1], t->name) == 0) {
            int rc = t->fn(argc - 2, argv + 2);
            printf("%s: %s (rank %d)\n", rc == TEST_PASS ? "PASS" : "FAIL", t->name,
                   fault_rank);
            return rc;
        }
    }
    fprintf(stderr, "no test named %s\n", argv[1]);
    return TEST_FAIL;
}

/* The first failure of a communicator, as every later call must repeat it. */
typedef struct {
    sc_status_t status;
    char text[1024];
    double elapsed;
} fault_error_t;

static inline void fault_error_take(fault_error_t *e, sc_status_t st, double t0)
{
    e->status = st;
    e->elapsed = fault_now() - t0;
    snprintf(e->text, sizeof(e->text), "%s", sc_last_error());
}

/* The sentence of a later call repeats the first error (the library may say before
 * it which call was refused). */
static inline const char *fault_root_error(const char *text)
{
    static const char marker[] = "the communicator failed earlier: ";
    const char *p = strstr(text, marker);
    return p ? p + sizeof(marker) - 1 : text;
}

static inline int fault_repeats(const char *later, const fault_error_t *first)
{
    return strcmp(fault_root_error(later), fault_root_error(first->text)) == 0;
}

/* Later calls on a failed communicator fail at once with its first error: a blocking
 * barrier, a blocking allreduce and a non-blocking allreduce. */
static inline int fault_check_later_calls_fail(sc_comm_t *comm, const fault_error_t *first)
{
    float in[4] = {1, 2, 3, 4}, out[4] = {0};
    sc_request_t *req = NULL;
    double t0 = fault_now();
    sc_status_t st;

    st = sc_barrier(comm, NULL);
    CHECK(st == first->status, "later barrier returned %s, expected %s",
          sc_status_string(st), sc_status_string(first->status));
    CHECK(fault_repeats(sc_last_error(), first),
          "later barrier said '%s', not the first error '%s'", sc_last_error(), first->text);
    st = sc_allreduce(in, out, 4, SC_FLOAT32, SC_SUM, comm, NULL, NULL);
    CHECK(st == first->status, "later allreduce returned %s, expected %s",
          sc_status_string(st), sc_status_string(first->status));
    CHECK(fault_repeats(sc_last_error(), first),
          "later allreduce said '%s', not the first error '%s'", sc_last_error(), first->text);
    st = sc_allreduce(in, out, 4, SC_FLOAT32, SC_SUM, comm, NULL, &req);
    if (st == SC_SUCCESS) {
        st = sc_wait(req);
        sc_request_free(req);
    }
    CHECK(st == first->status, "later non-blocking allreduce returned %s, expected %s",
          sc_status_string(st), sc_status_string(first->status));
    CHECK(fault_repeats(sc_last_error(), first),
          "later non-blocking allreduce said '%s', not the first error '%s'", sc_last_error(),
          first->text);
    CHECK(out[0] == 0 && out[3] == 0, "a failed allreduce wrote its output");
    CHECK(fault_now() - t0 < 0.5, "later calls took %.3f s to fail", fault_now() - t0);
    return TEST_PASS;
}

/* The sentence names the dead rank ("rank N" not followed by a digit), whichever
 * detector spoke first: the pid check ("rank N (pid P) exited or was killed"), UCX
 * ("rank N is unreachable (...)"), or a failed transfer with that rank. */
static inline int fault_check_names_dead_rank(const char *text, int rank)
{
    char name[32];
    const char *p = text;
    size_t len;

    len = (size_t)snprintf(name, sizeof(name), "rank %d", rank);
    while ((p = strstr(p, name)) != NULL) {
        if (p[len] < '0' || p[len] > '9')
            return TEST_PASS;
        p += len;
    }
    CHECK(0, "the sentence '%s' does not name the dead %s", text, name);
    return 1; /* not reached: CHECK(0) returned */
}

/* sc_comm_destroy of a failed communicator returns promptly (it must not wait for
 * peers that are gone or will never answer). */
static inline int fault_check_destroy(sc_comm_t *comm, double limit_s)
{
    double t0 = fault_now();
    CHECK_OK(sc_comm_destroy(comm));
    CHECK(fault_now() - t0 < limit_s, "sc_comm_destroy took %.3f s", fault_now() - t0);
    return TEST_PASS;
}

/* The reducer's record of r's hook state (sc_reducer_hook_save), malloc'd, in *state
 * and *len. */
static inline int fault_hook_state(const sc_reducer_t *r, char **state, size_t *len)
{
    CHECK_OK(sc_reducer_hook_save(r, NULL, len));
    *state = malloc(*len);
    CHECK(*state, "out of memory");
    CHECK_OK(sc_reducer_hook_save(r, *state, len));
    return TEST_PASS;
}

#endif
