/* Rank 0's rendezvous store (sc_store_serve) on loopback, its ranks and the other
 * processes that reach it played by this program's sockets: a refusal that holds up no
 * rank, every connection queued as the last rank arrives answered.
 * `test_store_server [NAME]`. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/bootstrap_store_net.h"
#include "core/bootstrap_store_server.h"
#include "core/clock.h"

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"
#include "../common/sc_test_runner.h"

#define NELEM(x) (sizeof(x) / sizeof((x)[0]))
/* Each played rank's blob. */
#define BLOB_LEN 100
/* How long a played process waits for the store's bytes. */
#define WAIT_S 10.0

/* The launch every store here serves. */
static const sc_store_launch_t launch_a = {"launch-A", "SC_LAUNCH_ID"};

/* A store for size ranks of launch_a listening on a port of its own (backlog queued
 * connections), its thread not started: the port, or -1. */
static int store_listen(sc_store_server_t *s, int size, int backlog)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    double now = sc_clock_now();
    int fd, port;

    if (sc_store_net_listen(0, backlog, &fd) != SC_SUCCESS)
        return -1;
    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        close(fd);
        return -1;
    }
    port = ntohs(sa.ss_family == AF_INET ? ((struct sockaddr_in *)&sa)->sin_port
                                         : ((struct sockaddr_in6 *)&sa)->sin6_port);
    sc_store_server_init(s, "127.0.0.1", port, size, &launch_a, now, now + 10.0);
    s->listen_fd = fd;
    s->fanout = 64;
    s->timeout_s = 10.0;
    return port;
}

/* A connection to the store on port; -1 where none. */
static int store_connect(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* A connection that sent the hello and blob of rank of size ranks of launch (id ""
 * none); -1 where it could not. */
static int connect_as_rank(int port, uint32_t rank, uint32_t size, const char *launch)
{
    sc_store_hello_t h = {SC_STORE_MAGIC_HELLO, SC_STORE_PROTOCOL, SC_STORE_JOIN, rank, size,
                          BLOB_LEN, 0, {"", ""}};
    uint8_t blob[BLOB_LEN];
    int fd = store_connect(port);

    snprintf(h.launch.id, sizeof(h.launch.id), "%s", launch);
    snprintf(h.launch.from, sizeof(h.launch.from), "SC_LAUNCH_ID");
    memset(blob, (int)rank, sizeof(blob));
    if (fd >= 0 && (send(fd, &h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h) ||
                    send(fd, blob, sizeof(blob), MSG_NOSIGNAL) != (ssize_t)sizeof(blob))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* len bytes from fd into buf within WAIT_S (buf NULL: dropped); 0, or -1 where the
 * connection closed, broke or stayed silent first. */
static int read_all(int fd, void *buf, size_t len)
{
    double until = sc_clock_now() + WAIT_S;
    uint8_t scratch[4096];
    size_t got = 0;

    while (got < len) {
        struct pollfd pfd = {fd, POLLIN, 0};
        size_t want = len - got;
        ssize_t n;

        if (poll(&pfd, 1, sc_clock_ms_until(until)) != 1)
            return -1;
        if (!buf && want > sizeof(scratch))
            want = sizeof(scratch);
        n = recv(fd, buf ? (uint8_t *)buf + got : scratch, want, 0);
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* The store's answer on fd, its status into *status: 0, or -1 where none came whole. */
static int read_answer(int fd, int32_t *status)
{
    sc_store_reply_t rep;

    if (read_all(fd, &rep, sizeof(rep)) != 0 || rep.magic != SC_STORE_MAGIC ||
        read_all(fd, NULL, rep.len) != 0)
        return -1;
    *status = rep.status;
    return 0;
}

/* A connection that sent the hello of rank of size ranks of launch_a that cannot join,
 * its blob the sentence text; -1 where it could not. */
static int connect_as_failed_rank(int port, uint32_t rank, uint32_t size, const char *text)
{
    sc_store_hello_t h = {SC_STORE_MAGIC_HELLO, SC_STORE_PROTOCOL, SC_STORE_FAILED, rank,
                          size, (uint32_t)strlen(text), 0, {"", ""}};
    int fd = store_connect(port);

    snprintf(h.launch.id, sizeof(h.launch.id), "%s", launch_a.id);
    snprintf(h.launch.from, sizeof(h.launch.from), "%s", launch_a.from);
    if (fd >= 0 && (send(fd, &h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h) ||
                    send(fd, text, h.len, MSG_NOSIGNAL) != (ssize_t)h.len)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* A connection that sent the hello of a shardcomm of rendezvous protocol 4 and read the
 * store's refusal, SC_ERR_MISMATCH; -1 where it could not or was not so refused. */
static int connect_as_protocol_4(int port)
{
    const uint32_t hello[9] = {SC_STORE_MAGIC_HELLO, 4, SC_STORE_JOIN, 1, 2, BLOB_LEN};
    int fd = store_connect(port);
    int32_t status = 0;

    if (fd >= 0 && (send(fd, hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello) ||
                    read_answer(fd, &status) != 0 || status != SC_ERR_MISMATCH)) {
        fprintf(stderr, "FAIL: a process of protocol 4 was not refused with SC_ERR_MISMATCH "
                        "(%d)\n", (int)status);
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Sleeps until the clock reads t. */
static void sleep_until(double t)
{
    double left = t - sc_clock_now();

    if (left > 0.0) {
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* Connections of ranks 0 to size - 1 of launch_a that sent their hellos, into fds (-1
 * where one could not). */
static void connect_ranks(int port, int size, int *fds)
{
    for (int r = 0; r < size; r++)
        fds[r] = connect_as_rank(port, (uint32_t)r, (uint32_t)size, launch_a.id);
}

/* Ranks 0 to size - 1 on fds (connect_ranks) take their part, and their connections are
 * closed: each takes its answer (SC_SUCCESS), then each says it has the table and hears
 * the store's SC_SUCCESS; *took is the seconds from the call to their last answer. 0, or
 * 1 said why. */
static int play_ranks(const int *fds, int size, double *took)
{
    const sc_store_reply_t word = {SC_STORE_MAGIC, SC_SUCCESS, 0};
    double t0 = sc_clock_now();
    int32_t status = 0;
    int rc = 0;

    for (int r = 0; r < size && !rc; r++) {
        rc = fds[r] < 0 || read_answer(fds[r], &status) != 0 || status != SC_SUCCESS;
        if (rc)
            fprintf(stderr, "FAIL: rank %d was not answered SC_SUCCESS (%d)\n", r,
                    (int)status);
    }
    *took = sc_clock_now() - t0;
    for (int r = 0; r < size && !rc; r++) {
        rc = send(fds[r], &word, sizeof(word), MSG_NOSIGNAL) != (ssize_t)sizeof(word);
        if (rc)
            fprintf(stderr, "FAIL: rank %d could not say it has the table\n", r);
    }
    for (int r = 0; r < size && !rc; r++) {
        rc = read_answer(fds[r], &status) != 0 || status != SC_SUCCESS;
        if (rc)
            fprintf(stderr, "FAIL: rank %d did not hear the store's SC_SUCCESS (%d)\n", r,
                    (int)status);
    }
    for (int r = 0; r < size; r++)
        if (fds[r] >= 0)
            close(fds[r]);
    return rc;
}

/* Joins the store's thread, undoes its init, and checks its verdict: SC_SUCCESS. */
static int store_succeeded(sc_store_server_t *s)
{
    pthread_join(s->thread, NULL);
    sc_store_server_fini(s);
    CHECK(s->verdict == SC_SUCCESS, "the store's verdict is %d: %s", (int)s->verdict,
          s->verdict_text);
    return 0;
}

/* A process of another shardcomm version (rendezvous protocol 4) reaches the store first
 * and keeps its connection open once refused; ranks 0 and 1 arrive after its refusal
 * and are answered within 1 s. The store read what the refused process sent until it
 * closed, up to 2 s, before it looked at any other connection. */
static int test_refused_protocol_holds_up_no_arrival(void)
{
    const uint32_t hello[9] = {SC_STORE_MAGIC_HELLO, 4, SC_STORE_JOIN, 1, 2, BLOB_LEN};
    sc_store_server_t s;
    int port = store_listen(&s, 2, 16), other, ranks[2], rc;
    int32_t status = 0;
    double took = 0.0;

    CHECK(port > 0, "the store could not listen");
    CHECK(pthread_create(&s.thread, NULL, sc_store_serve, &s) == 0, "no store thread");
    other = store_connect(port);
    rc = other < 0 ||
         send(other, hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello) ||
         read_answer(other, &status) != 0 || status != SC_ERR_MISMATCH;
    if (rc)
        fprintf(stderr, "FAIL: the process of protocol 4 was not refused with "
                        "SC_ERR_MISMATCH (%d)\n", (int)status);
    connect_ranks(port, 2, ranks);
    rc = play_ranks(ranks, 2, &took) || rc;
    if (other >= 0)
        close(other);
    if (store_succeeded(&s) || rc)
        return 1;
    CHECK(took < 1.0, "ranks 0 and 1 were answered %.2f s after they reached the store, "
          "behind a refused process of another protocol", took);
    return 0;
}

/* Before the store's thread starts, ranks 0 and 1 of launch_a and then 80 processes of
 * launch B (two launches given one master port) queue at it: each of launch B is
 * refused with SC_ERR_MISMATCH, and ranks 0 and 1 complete the rendezvous. The store
 * judged only the first 64 connections waiting as the last rank arrived: the others
 * stayed queued until it closed its listening socket, which reset them unanswered. */
static int test_every_connection_queued_as_the_last_rank_arrives_is_answered(void)
{
    enum { OTHERS = 80 };
    sc_store_server_t s;
    int port = store_listen(&s, 2, 128), ranks[2], others[OTHERS], refused = 0, rc;
    int32_t status = 0;
    double took;

    CHECK(port > 0, "the store could not listen");
    connect_ranks(port, 2, ranks);
    for (int k = 0; k < OTHERS; k++)
        others[k] = connect_as_rank(port, 1, 2, "launch-B");
    CHECK(pthread_create(&s.thread, NULL, sc_store_serve, &s) == 0, "no store thread");
    for (int k = 0; k < OTHERS; k++)
        refused += others[k] >= 0 && read_answer(others[k], &status) == 0 &&
                   status == SC_ERR_MISMATCH;
    rc = play_ranks(ranks, 2, &took);
    for (int k = 0; k < OTHERS; k++)
        if (others[k] >= 0)
            close(others[k]);
    if (store_succeeded(&s) || rc)
        return 1;
    CHECK(refused == OTHERS, "%d of the %d processes of launch B queued as the last rank "
          "arrived were refused with SC_ERR_MISMATCH", refused, (int)OTHERS);
    return 0;
}

/* Before the store's thread starts, ranks 0 and 1 of launch_a, then 64 connections that
 * send nothing (port scanners, health checks) and a process of launch B queue at it: the
 * process of launch B is refused with SC_ERR_MISMATCH, and ranks 0 and 1 complete the
 * rendezvous. Accepted only as the silent ones were dropped, 1 s after the last rank
 * arrived, it had no time left for its hello and was closed unanswered. */
static int test_connection_queued_behind_64_silent_ones_is_answered(void)
{
    enum { SILENT = 64 };
    sc_store_server_t s;
    int port = store_listen(&s, 2, 128), ranks[2], silent[SILENT], other, rc;
    int32_t status = 0;
    double took;

    CHECK(port > 0, "the store could not listen");
    connect_ranks(port, 2, ranks);
    for (int k = 0; k < SILENT; k++)
        silent[k] = store_connect(port);
    other = connect_as_rank(port, 1, 2, "launch-B");
    CHECK(pthread_create(&s.thread, NULL, sc_store_serve, &s) == 0, "no store thread");
    rc = other < 0 || read_answer(other, &status) != 0 || status != SC_ERR_MISMATCH;
    if (rc)
        fprintf(stderr, "FAIL: the process of launch B queued behind %d silent connections "
                        "was not refused with SC_ERR_MISMATCH (%d)\n", (int)SILENT,
                (int)status);
    rc = play_ranks(ranks, 2, &took) || rc;
    for (int k = 0; k < SILENT; k++)
        if (silent[k] >= 0)
            close(silent[k]);
    if (other >= 0)
        close(other);
    return store_succeeded(&s) || rc;
}

/* The store's thread started, 64 connections that send nothing (port scanners, health
 * checks) reach it, then ranks 0 and 1: they complete the rendezvous within 4 s (taking
 * the places of silent ones after 0.25 s, then 1 s for the hellos of those still
 * arriving as the last rank arrived: 1.25 s, 2.1 s on 2 cores beside four busy loops,
 * which a bound of 2 s failed; the old wait cannot end before 5 s). The silent ones
 * took every arrival's slot, and the ranks waited in the listening socket's queue until
 * those were dropped at 5 s of silence. */
static int test_silent_connections_hold_up_no_rank(void)
{
    enum { SILENT = 64 };
    sc_store_server_t s;
    int port = store_listen(&s, 2, 128), ranks[2], silent[SILENT], rc;
    double t0, took;

    CHECK(port > 0, "the store could not listen");
    CHECK(pthread_create(&s.thread, NULL, sc_store_serve, &s) == 0, "no store thread");
    for (int k = 0; k < SILENT; k++)
        silent[k] = store_connect(port);
    t0 = sc_clock_now();
    connect_ranks(port, 2, ranks);
    rc = play_ranks(ranks, 2, &took);
    took = sc_clock_now() - t0;
    for (int k = 0; k < SILENT; k++)
        if (silent[k] >= 0)
            close(silent[k]);
    if (store_succeeded(&s) || rc)
        return 1;
    CHECK(took < 4.0, "ranks 0 and 1 completed the rendezvous %.2f s after they reached "
          "the store, behind %d silent connections", took, (int)SILENT);
    return 0;
}

/* A steady flood of connections that send nothing: FLOOD_HELD held open at a time, one
 * more every FLOOD_EVERY_S, until stop is set. */
#define FLOOD_HELD 800
#define FLOOD_EVERY_S 0.001
typedef struct {
    int port;
    int stop; /* set (atomically) by the test */
} flood_t;

static void *flood_run(void *arg)
{
    flood_t *f = arg;
    int fds[FLOOD_HELD], k = 0;

    for (int i = 0; i < FLOOD_HELD; i++)
        fds[i] = -1;
    while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
        if (fds[k] >= 0)
            close(fds[k]);
        fds[k] = store_connect(f->port);
        k = (k + 1) % FLOOD_HELD;
        sleep_until(sc_clock_now() + FLOOD_EVERY_S);
    }
    for (int i = 0; i < FLOOD_HELD; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return NULL;
}

/* Ranks 0 and 1 reach the store during a steady flood of silent connections (up to
 * 1,000 a second, each held 0.8 s), which goes on until they are answered: they complete
 * the rendezvous within 4 s. The store accepted the connections queued after the last
 * rank arrived for as long as any were queued, each given 1 s for its hello (or taking
 * the place of one silent 0.25 s), so that the flood held every answer for as long as
 * it went on. */
static int test_a_flood_of_connections_holds_no_answer(void)
{
    sc_store_server_t s;
    int port = store_listen(&s, 2, 1024), ranks[2], rc;
    flood_t f = {port, 0};
    pthread_t flood;
    double t0, took;

    CHECK(port > 0, "the store could not listen");
    CHECK(pthread_create(&s.thread, NULL, sc_store_serve, &s) == 0, "no store thread");
    CHECK(pthread_create(&flood, NULL, flood_run, &f) == 0, "no flood thread");
    sleep_until(sc_clock_now() + 0.1);
    t0 = sc_clock_now();
    connect_ranks(port, 2, ranks);
    rc = play_ranks(ranks, 2, &took);
    took = sc_clock_now() - t0;
    __atomic_store_n(&f.stop, 1, __ATOMIC_RELEASE);
    pthread_join(flood, NULL);
    if (store_succeeded(&s) || rc)
        return 1;
    CHECK(took < 4.0, "ranks 0 and 1 completed the rendezvous %.2f s after they reached "
          "the store, during a flood of silent connections", took);
    return 0;
}

/* A process of rendezvous protocol 4 is refused, and then sends the rest of its blob
 * (64 KiB) 1.3 s after the last rank arrived, while a connection that sent half its blob
 * still holds the rendezvous: its connection ends with the store's close, no reset.
 * It was closed 1 s after the last rank arrived as one whose hello had not come, and its
 * late bytes reached a closed socket. */
static int test_refused_process_is_read_past_the_hello_bound(void)
{
    sc_store_hello_t h = {SC_STORE_MAGIC_HELLO, SC_STORE_PROTOCOL, SC_STORE_JOIN, 1, 2,
                          BLOB_LEN, 0, {"", ""}};
    static uint8_t late[65536];
    sc_store_server_t s;
    int port = store_listen(&s, 2, 16), ranks[2], other, half, rc;
    double last, took;
    uint8_t buf[256];
    int error = 0;
    ssize_t n;

    CHECK(port > 0, "the store could not listen");
    CHECK(pthread_create(&s.thread, NULL, sc_store_serve, &s) == 0, "no store thread");
    other = connect_as_protocol_4(port);
    CHECK(other >= 0, "no connection of protocol 4");
    snprintf(h.launch.id, sizeof(h.launch.id), "%s", launch_a.id);
    half = store_connect(port);
    CHECK(half >= 0 && send(half, &h, sizeof(h), MSG_NOSIGNAL) == (ssize_t)sizeof(h) &&
          send(half, late, BLOB_LEN / 2, MSG_NOSIGNAL) == BLOB_LEN / 2,
          "no connection with half a blob");
    last = sc_clock_now();
    connect_ranks(port, 2, ranks);
    sleep_until(last + 1.3);
    send(other, late, sizeof(late), MSG_NOSIGNAL | MSG_DONTWAIT);
    sleep_until(last + 1.5);
    close(half);
    {
        struct pollfd pfd = {other, POLLIN, 0};
        socklen_t len = sizeof(error);

        n = poll(&pfd, 1, 5000) == 1 ? recv(other, buf, sizeof(buf), 0) : -2;
        /* A reset after the store's close shows only as the socket's error. */
        if (getsockopt(other, SOL_SOCKET, SO_ERROR, &error, &len) != 0)
            error = errno;
    }
    rc = n != 0 || error != 0;
    if (rc)
        fprintf(stderr, "FAIL: the refused process's connection ended with %zd, its "
                        "socket's error %d (%s), not with the store's close alone\n", n,
                error, strerror(error));
    close(other);
    rc = play_ranks(ranks, 2, &took) || rc;
    return store_succeeded(&s) || rc;
}

/* A store for 3 ranks of launch_a (backlog queued connections), its thread started,
 * where rank 0 arrived and rank 2 cannot join: the rendezvous failed, and rank 0 was told
 * so. The port, with the connections of ranks 0 and 2 in *r0 and *r2 (for
 * failed_store_end); -1 where it did not come about so, said why. */
static int failed_store_start(sc_store_server_t *s, int backlog, int *r0, int *r2)
{
    int port = store_listen(s, 3, backlog);
    int32_t status = 0;

    *r0 = *r2 = -1;
    if (port <= 0 || pthread_create(&s->thread, NULL, sc_store_serve, s) != 0) {
        fprintf(stderr, "FAIL: no store listening with its thread\n");
        return -1;
    }
    *r0 = connect_as_rank(port, 0, 3, launch_a.id);
    *r2 = connect_as_failed_rank(port, 2, 3, "rank 2: its transport would not open");
    if (*r0 < 0 || *r2 < 0 || read_answer(*r0, &status) != 0 ||
        status != SC_ERR_PEER_FAILED) {
        fprintf(stderr, "FAIL: rank 0 was not told rank 2's failure (%d)\n", (int)status);
        return -1;
    }
    return port;
}

/* Rank 1 reaches the failed store on port (failed_store_start): 0 where it is told rank
 * 2's failure, SC_ERR_PEER_FAILED; else 1, said why. */
static int failed_store_tells_rank_1(int port)
{
    int r1 = connect_as_rank(port, 1, 3, launch_a.id), rc;
    int32_t status = 0;

    rc = r1 < 0 || read_answer(r1, &status) != 0 || status != SC_ERR_PEER_FAILED;
    if (rc)
        fprintf(stderr, "FAIL: rank 1 was not told rank 2's failure (%d)\n", (int)status);
    if (r1 >= 0)
        close(r1);
    return rc;
}

/* Closes the connections of ranks 0 and 2 to the failed store (failed_store_start), joins
 * its thread and undoes its init, and checks its verdict: SC_ERR_PEER_FAILED. */
static int failed_store_end(sc_store_server_t *s, int r0, int r2)
{
    if (r0 >= 0)
        close(r0);
    if (r2 >= 0)
        close(r2);
    pthread_join(s->thread, NULL);
    sc_store_server_fini(s);
    CHECK(s->verdict == SC_ERR_PEER_FAILED, "the store's verdict is %d: %s", (int)s->verdict,
          s->verdict_text);
    return 0;
}

/* Rank 2 of 3 cannot join (the rendezvous fails), then three processes of rendezvous
 * protocol 4 are refused and keep their connections open, then rank 1 arrives: it is
 * told the failure within 1 s of the first refused process's arrival. The store read
 * each refused process until it closed, up to 2 s, before it looked at the next one. */
static int test_refused_processes_after_a_failure_hold_up_no_rank(void)
{
    enum { OTHERS = 3 };
    sc_store_server_t s;
    int r0, r2, others[OTHERS], port = failed_store_start(&s, 16, &r0, &r2), rc = 0;
    double t0, took;

    CHECK(port > 0, "the rendezvous did not fail as rank 2's");
    t0 = sc_clock_now();
    for (int k = 0; k < OTHERS; k++)
        rc |= (others[k] = connect_as_protocol_4(port)) < 0;
    rc = rc || failed_store_tells_rank_1(port);
    took = sc_clock_now() - t0;
    for (int k = 0; k < OTHERS; k++)
        if (others[k] >= 0)
            close(others[k]);
    if (failed_store_end(&s, r0, r2) || rc)
        return 1;
    CHECK(took < 1.0, "rank 1 was told the failure %.2f s after %d refused processes "
          "arrived", took, (int)OTHERS);
    return 0;
}

/* Rank 2 of 3 cannot join (the rendezvous fails), then 64 connections that send nothing
 * (port scanners, health checks) reach the store, then rank 1: it is told the failure
 * within 3 s (a silent one gives its place after 0.25 s). The failed rendezvous's store
 * read 64 arrivals at once and left the rest queued until those were dropped at 5 s of
 * silence and then read 2 s until they closed: 7 s. */
static int test_silent_connections_after_a_failure_hold_up_no_rank(void)
{
    enum { SILENT = 64 };
    sc_store_server_t s;
    int r0, r2, silent[SILENT], port = failed_store_start(&s, 128, &r0, &r2), rc;
    double t0, took;

    CHECK(port > 0, "the rendezvous did not fail as rank 2's");
    for (int k = 0; k < SILENT; k++)
        silent[k] = store_connect(port);
    t0 = sc_clock_now();
    rc = failed_store_tells_rank_1(port);
    took = sc_clock_now() - t0;
    for (int k = 0; k < SILENT; k++)
        if (silent[k] >= 0)
            close(silent[k]);
    if (failed_store_end(&s, r0, r2) || rc)
        return 1;
    CHECK(took < 3.0, "rank 1 was told the failure %.2f s after it reached the store, "
          "behind %d silent connections", took, (int)SILENT);
    return 0;
}

int main(int argc, char **argv)
{
    static const sc_test_t tests[] = {
        SC_TEST(refused_protocol_holds_up_no_arrival),
        SC_TEST(every_connection_queued_as_the_last_rank_arrives_is_answered),
        SC_TEST(connection_queued_behind_64_silent_ones_is_answered),
        SC_TEST(silent_connections_hold_up_no_rank),
        SC_TEST(a_flood_of_connections_holds_no_answer),
        SC_TEST(refused_process_is_read_past_the_hello_bound),
        SC_TEST(refused_processes_after_a_failure_hold_up_no_rank),
        SC_TEST(silent_connections_after_a_failure_hold_up_no_rank),
    };
    return sc_run_tests(tests, NELEM(tests), argc > 1 ? argv[1] : NULL);
}
