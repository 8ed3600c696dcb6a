/* The shape of the tree that carries the rendezvous's table from rank 0 (sc_tree_layout),
 * on made-up addresses and ports: no process listens; and what a child makes of a
 * parent's table (sc_tree_fetch) from a parent played on loopback, and what a parent
 * (sc_tree_serve, on loopback) gives a child of another launch or world size; what a
 * rank that failed as the store's answer came (sc_store_allgather, against a store
 * played on loopback) tells its children, and how such a rank takes a store that closes
 * its connection unanswered. `test_store_tree [NAME]`. */
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/bootstrap_store.h"
#include "core/bootstrap_store_net.h"
#include "core/bootstrap_tree.h"
#include "core/clock.h"
#include "core/log.h"
#include "shardcomm/status.h"

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"
#include "../common/sc_test_runner.h"

#define NELEM(x) (sizeof(x) / sizeof((x)[0]))
#define MAX_RANKS 16

/* A rank of no known launch (an empty id: never checked). */
static const sc_store_launch_t no_launch = {"", ""};

/* The layout of size ranks (every one listening where ports is NULL) against the
 * expected parents and depths. */
static int check_layout(int size, int fanout, const uint8_t *side, const uint32_t *ports,
                        const int *want_parent, const int *want_depth)
{
    uint32_t listening[MAX_RANKS];
    int parent[MAX_RANKS], depth[MAX_RANKS];

    for (int r = 0; r < size; r++)
        listening[r] = ports ? ports[r] : (r ? 40000u + (uint32_t)r : 0u);
    CHECK_OK(sc_tree_layout(size, fanout, side, listening, parent, depth));
    for (int r = 0; r < size; r++)
        CHECK(parent[r] == want_parent[r] && depth[r] == want_depth[r],
              "rank %d of %d (fan-out %d): parent %d at depth %d, expected %d at %d", r,
              size, fanout, parent[r], depth[r], want_parent[r], want_depth[r]);
    return 0;
}

/* Fan-out 2 over 8 ranks of one side: rank 0 serves 1 and 2, rank 1 serves 3 and 4,
 * rank 2 serves 5 and 6, rank 3 serves 7. */
static int test_ranks_form_a_tree_of_the_fanout_in_rank_order(void)
{
    static const uint8_t loopback[] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const int parent[] = {0, 0, 0, 1, 1, 2, 2, 3};
    static const int depth[] = {0, 1, 1, 2, 2, 2, 2, 3};

    return check_layout(8, 2, loopback, NULL, parent, depth);
}

/* A fan-out of the world size or more: every rank gets the table from rank 0. */
static int test_fanout_of_the_world_size_is_rank_0_serving_every_rank(void)
{
    static const uint8_t loopback[] = {0, 0, 0, 0, 0};
    static const int parent[] = {0, 0, 0, 0, 0};
    static const int depth[] = {0, 1, 1, 1, 1};

    return check_layout(5, 4, loopback, NULL, parent, depth) ||
           check_layout(5, 65536, loopback, NULL, parent, depth);
}

/* Ranks that reached the store on a loopback address (on rank 0's host, where another
 * host could not reach them) serve only each other; the others form their own tree:
 * fan-out 1 makes a chain of each side. */
static int test_loopback_ranks_serve_only_loopback_ranks(void)
{
    uint8_t side[7];
    static const int loopback[] = {1, 1, 0, 1, 0, 0, 1};
    static const int parent[] = {0, 0, 0, 1, 2, 4, 3};
    static const int depth[] = {0, 1, 1, 2, 2, 3, 3};

    for (int r = 0; r < 7; r++)
        side[r] = (uint8_t)sc_tree_side(AF_INET, loopback[r]);
    return check_layout(7, 1, side, NULL, parent, depth);
}

/* IPv4 and IPv6 ranks likewise (a rank with IPv4 alone could not reach an IPv6 one),
 * four sides with loopback addresses: fan-out 1, rank 0 serves the first of each. */
static int test_each_family_and_loopback_side_is_a_tree_of_its_own(void)
{
    uint8_t side[9];
    static const int family[] = {AF_INET, AF_INET6, AF_INET, AF_INET6, AF_INET,
                                 AF_INET6, AF_INET6, AF_INET, AF_INET};
    static const int loopback[] = {1, 0, 0, 1, 1, 0, 1, 0, 1};
    static const int parent[] = {0, 0, 0, 0, 0, 1, 3, 2, 4};
    static const int depth[] = {0, 1, 1, 1, 1, 2, 2, 2, 2};

    for (int r = 0; r < 9; r++)
        side[r] = (uint8_t)sc_tree_side(family[r], loopback[r]);
    return check_layout(9, 1, side, NULL, parent, depth);
}

/* A rank that could not listen (port 0) serves none: the rank it would have served, 3,
 * gets the table from rank 0, and serves the next one itself. */
static int test_rank_that_cannot_listen_serves_none(void)
{
    static const uint8_t loopback[] = {0, 0, 0, 0, 0};
    static const uint32_t ports[] = {0, 41001, 0, 41003, 41004};
    static const int parent[] = {0, 0, 1, 0, 3};
    static const int depth[] = {0, 1, 2, 1, 2};

    return check_layout(5, 1, loopback, ports, parent, depth);
}

/* A parent played on loopback: a listening socket (backlog connections) whose address
 * *role names, as rank 1's at depth 1 of a tree of height 2 with a table of 8 bytes;
 * the socket, or -1. */
static int listen_as_parent(int backlog, sc_store_role_t *role)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, backlog) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *role = (sc_store_role_t){.parent = 1, .depth = 2, .height = 2, .table_len = 8,
                              .family = AF_INET, .port = ntohs(a.sin_port)};
    memcpy(role->addr, &a.sin_addr, 4);
    return fd;
}

/* Answers the child's hello on fd with a table of len bytes, and closes fd. */
static void answer_hello(int fd, const void *table, uint32_t len)
{
    sc_store_reply_t rep = {SC_STORE_MAGIC, SC_SUCCESS, len};
    sc_store_hello_t h;

    if (recv(fd, &h, sizeof(h), MSG_WAITALL) == (ssize_t)sizeof(h) &&
        send(fd, &rep, sizeof(rep), MSG_NOSIGNAL) == (ssize_t)sizeof(rep))
        send(fd, table, len, MSG_NOSIGNAL);
    close(fd);
}

/* A parent that answers one child's hello on listen_fd with a table of 8 bytes whose
 * first blob claims 100: a table that came malformed. */
static void *serve_malformed_table(void *arg)
{
    int listen_fd = *(int *)arg, fd = accept(listen_fd, NULL, NULL);
    const uint32_t table[2] = {100, 0};

    if (fd >= 0)
        answer_hello(fd, table, sizeof(table));
    return NULL;
}

/* A parent that closes the first connection unanswered on listen_fd, as sc_tree_serve
 * drops one that sent no hello within 5 s (its child stopped between its connect and
 * its hello), then answers the next child's hello, if one comes within 3 s, with a table
 * of 4 empty blobs. */
static void *drop_then_serve_table(void *arg)
{
    int listen_fd = *(int *)arg, fd = accept(listen_fd, NULL, NULL);
    struct pollfd pfd = {listen_fd, POLLIN, 0};
    const uint32_t table[4] = {0, 0, 0, 0};

    if (fd < 0)
        return NULL;
    close(fd);
    if (poll(&pfd, 1, 3000) == 1 && (fd = accept(listen_fd, NULL, NULL)) >= 0)
        answer_hello(fd, table, sizeof(table));
    return NULL;
}

/* Rank 3 of 4 fetches a table of table_len bytes from parent, a thread playing rank 1
 * on loopback, into *result (the sentence into err): its status, or SC_ERR_SYSTEM with
 * err empty where the parent could not be played. */
static sc_status_t fetch_from(void *(*parent)(void *), uint32_t table_len,
                              sc_store_result_t *result, char *err, size_t len)
{
    sc_store_role_t role;
    sc_tree_word_t no_store = {-1, 0, SC_SUCCESS, "", 0};
    int listen_fd = listen_as_parent(2, &role);
    pthread_t thread;
    sc_status_t st;

    err[0] = '\0';
    if (listen_fd < 0)
        return SC_ERR_SYSTEM;
    role.table_len = table_len;
    if (pthread_create(&thread, NULL, parent, &listen_fd) != 0) {
        close(listen_fd);
        return SC_ERR_SYSTEM;
    }
    sc_log_set_rank(3);
    st = sc_tree_fetch(&role, 3, 4, &no_launch, NULL, 0, "127.0.0.1:1", sc_clock_now() + 10.0,
                       &no_store, result, err, len);
    sc_log_set_rank(-1);
    pthread_join(thread, NULL);
    close(listen_fd);
    return st;
}

/* A child whose connection its parent closed unanswered while the parent still listens
 * (dropped as silent: the child was stopped between its connect and its hello, in a
 * debugger with SC_TIMEOUT=inf) asks again and gets the table; it failed at once saying
 * "its connection closed before the table came: rank 1 exited or was killed". */
static int test_child_dropped_by_a_live_parent_asks_again(void)
{
    sc_store_result_t result = {0};
    char err[SC_ERROR_MAX];
    sc_status_t st = fetch_from(drop_then_serve_table, 16, &result, err, sizeof(err));

    CHECK(st == SC_SUCCESS, "sc_tree_fetch returned %d: %s", st, err);
    CHECK(result.size == 4 && result.lens[3] == 0, "the table is not the parent's");
    sc_store_result_free(&result);
    return 0;
}

/* A child whose connection its parent does not take (the parent's queue of connections
 * full, as a stopped parent's or an unreachable host's leaves it: the kernel drops the
 * child's SYN) hears the store's failure meanwhile and fails at once with it; it waited
 * for the connection until its deadline and named its parent. */
static int test_child_connecting_to_its_parent_hears_the_store(void)
{
    static const char text[] = "rendezvous at 127.0.0.1:1: rank 2 exited or was killed "
                               "after the store answered it";
    sc_store_reply_t rep = {SC_STORE_MAGIC, SC_ERR_PEER_FAILED, sizeof(text) - 1};
    struct sockaddr_in a = {.sin_family = AF_INET};
    sc_store_role_t role;
    sc_store_result_t result = {0};
    sc_tree_word_t word;
    char err[SC_ERROR_MAX] = "";
    int listen_fd = listen_as_parent(0, &role), queued = socket(AF_INET, SOCK_STREAM, 0);
    int store[2] = {-1, -1};
    double t0, took;
    sc_status_t st;

    CHECK(listen_fd >= 0 && queued >= 0, "no listening socket on loopback");
    a.sin_port = htons(role.port);
    memcpy(&a.sin_addr, role.addr, 4);
    /* The one connection a queue of 0 holds, never accepted. */
    CHECK(connect(queued, (struct sockaddr *)&a, sizeof(a)) == 0, "no connection to queue");
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, store) == 0, "no socket pair for the store");
    CHECK(send(store[1], &rep, sizeof(rep), 0) == (ssize_t)sizeof(rep) &&
              send(store[1], text, rep.len, 0) == (ssize_t)rep.len,
          "the store's word could not be written");
    word = (sc_tree_word_t){store[0], 0, SC_SUCCESS, "", 0};
    t0 = sc_clock_now();
    st = sc_tree_fetch(&role, 3, 4, &no_launch, NULL, 0, "127.0.0.1:1", t0 + 3.0, &word, &result, err,
                       sizeof(err));
    took = sc_clock_now() - t0;
    close(store[0]);
    close(store[1]);
    close(queued);
    close(listen_fd);
    CHECK(st == SC_ERR_PEER_FAILED && word.heard, "sc_tree_fetch returned %d after %.2f s: %s",
          st, took, err);
    CHECK(strcmp(err, text) == 0, "the fetch's sentence is not the store's: %s", err);
    CHECK(took < 1.0, "the store's word took %.2f s to be heard", took);
    return 0;
}

/* A child waiting for its parent (whose queue of connections is full) whose connection
 * to the store the store resets, as it gives up on a rank that did not take its verdict
 * by its deadline (sc_store_tell_outcome: stopped with its whole answer in its socket),
 * says that the store gave up on it, stopped or too slow (SC_ERR_TIMEOUT); it said that
 * the store closed the connection and rank 0 exited or was killed, where rank 0 lived. */
static int test_child_whose_store_connection_was_reset_says_the_store_gave_up(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    struct linger reset = {1, 0};
    sc_store_role_t role, store_role;
    sc_store_result_t result = {0};
    sc_tree_word_t word;
    char err[SC_ERROR_MAX] = "";
    int listen_fd = listen_as_parent(0, &role), queued = socket(AF_INET, SOCK_STREAM, 0);
    int store_listen = listen_as_parent(1, &store_role), rank_end = socket(AF_INET, SOCK_STREAM, 0);
    int store_end;
    double t0, took;
    sc_status_t st;

    CHECK(listen_fd >= 0 && queued >= 0 && store_listen >= 0 && rank_end >= 0,
          "no sockets on loopback");
    a.sin_port = htons(role.port);
    memcpy(&a.sin_addr, role.addr, 4);
    /* The one connection a queue of 0 holds, never accepted. */
    CHECK(connect(queued, (struct sockaddr *)&a, sizeof(a)) == 0, "no connection to queue");
    a.sin_port = htons(store_role.port);
    CHECK(connect(rank_end, (struct sockaddr *)&a, sizeof(a)) == 0 &&
              (store_end = accept(store_listen, NULL, NULL)) >= 0,
          "no connection to play the store's");
    /* The store gives up on this rank: SO_LINGER 0, then close. */
    setsockopt(store_end, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    close(store_end);
    word = (sc_tree_word_t){rank_end, 0, SC_SUCCESS, "", 0};
    t0 = sc_clock_now();
    st = sc_tree_fetch(&role, 3, 4, &no_launch, NULL, 0, "127.0.0.1:1", t0 + 3.0, &word,
                       &result, err, sizeof(err));
    took = sc_clock_now() - t0;
    close(rank_end);
    close(store_listen);
    close(queued);
    close(listen_fd);
    CHECK(st == SC_ERR_TIMEOUT && word.heard, "sc_tree_fetch returned %d after %.2f s: %s",
          st, took, err);
    CHECK(strstr(err, "rank 0's store gave up on rank 3 (it reset the connection)") &&
              strstr(err, "it was stopped or too slow") && !strstr(err, "exited or was killed"),
          "the sentence does not say the store gave up on this rank: %s", err);
    CHECK(took < 1.0, "the store's reset took %.2f s to be heard", took);
    return 0;
}

/* A TCP connection on loopback, its two ends into *near and *far: 0, or -1. */
static int loopback_pair(int *near, int *far)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    sc_store_role_t role;
    int listen_fd = listen_as_parent(1, &role);

    *near = socket(AF_INET, SOCK_STREAM, 0);
    *far = -1;
    a.sin_port = htons(role.port);
    memcpy(&a.sin_addr, role.addr, 4);
    if (listen_fd >= 0 && *near >= 0 && connect(*near, (struct sockaddr *)&a, sizeof(a)) == 0)
        *far = accept(listen_fd, NULL, NULL);
    if (listen_fd >= 0)
        close(listen_fd);
    return *near >= 0 && *far >= 0 ? 0 : -1;
}

/* A child that finds both its parent's answer and the store's word waiting as it looks
 * (stopped or descheduled while both came) takes the one that came first, 50 ms before
 * the other: its parent's answer header (0) where that came first, the store's word
 * (-2) where it did. It took the store's word whenever both waited, so that a rank
 * whose parent had said its failure first reported the store's sentence. */
static int test_child_takes_whichever_of_its_parent_and_the_store_spoke_first(void)
{
    static const char text[] = "rank 1's own failure";
    sc_store_reply_t rep = {SC_STORE_MAGIC, SC_ERR_PEER_FAILED, sizeof(text) - 1}, got;

    for (int store_first = 0; store_first < 2; store_first++) {
        int child, parent, rank, store, r;

        CHECK(loopback_pair(&child, &parent) == 0 && loopback_pair(&rank, &store) == 0,
              "no connections on loopback");
        for (int k = 0; k < 2; k++) {
            int to = (k == 0) == (store_first == 1) ? store : parent;

            CHECK(send(to, &rep, sizeof(rep), 0) == (ssize_t)sizeof(rep) &&
                      send(to, text, rep.len, 0) == (ssize_t)rep.len,
                  "the answer could not be written");
            usleep(50000);
        }
        r = sc_store_net_read_reply_watch(child, &got, sc_clock_now() + 1.0, rank);
        close(child);
        close(parent);
        close(rank);
        close(store);
        CHECK(r == (store_first ? -2 : 0), "the %s spoke first, and the child took %s (%d)",
              store_first ? "store" : "parent",
              r == 0 ? "its parent's answer" : r == -2 ? "the store's word" : "neither", r);
    }
    return 0;
}

/* A malformed table from the parent fails the child with a sentence that its children
 * and the store get as its own failure: it carries no "rank R: " prefix, which the
 * rank that reports it puts before it (it came out as "rank 3: rank 3: ..."), and it
 * names the child, which its own children and the other ranks could not tell. */
static int test_malformed_table_from_the_parent_is_relayed_unprefixed(void)
{
    sc_store_result_t result = {0};
    char err[SC_ERROR_MAX];
    sc_status_t st = fetch_from(serve_malformed_table, 8, &result, err, sizeof(err));

    CHECK(st == SC_ERR_SYSTEM, "sc_tree_fetch returned %d, expected SC_ERR_SYSTEM", st);
    CHECK(strstr(err, "the table of the ranks' blobs that rank 3 received came malformed (8 "
                      "bytes for 4 ranks)"),
          "the sentence does not say the table came malformed to rank 3: %s", err);
    CHECK(strncmp(err, "rank ", 5) != 0, "the relayed sentence carries a rank's prefix: %s",
          err);
    return 0;
}

/* A parent that took the connection but sends nothing (stopped: the kernel accepts for
 * it) is named stopped or hung at the child's deadline, never as a closed connection:
 * the deadline's last part under a millisecond went to a poll of 0 ms, which returned at
 * once, and the child, still before its deadline, said "its connection closed before the
 * table came: rank 1 exited or was killed" (launch.store_tree.parent_stopped, once in
 * the waits group). Ten fetches of 60 ms each. */
static int test_silent_parent_is_named_stopped_at_the_deadline(void)
{
    sc_store_role_t role;
    sc_tree_word_t no_store = {-1, 0, SC_SUCCESS, "", 0};
    int listen_fd = listen_as_parent(16, &role);

    CHECK(listen_fd >= 0, "no listening socket on loopback");
    for (int i = 0; i < 10; i++) {
        sc_store_result_t result = {0};
        char err[SC_ERROR_MAX] = "";
        sc_status_t st = sc_tree_fetch(&role, 3, 4, &no_launch, NULL, 0, "127.0.0.1:1",
                                       sc_clock_now() + 0.06, &no_store, &result, err,
                                       sizeof(err));

        CHECK(st == SC_ERR_TIMEOUT && strstr(err, "rank 1 is stopped or hung"),
              "fetch %d from a silent parent: status %d, %s", i, st, err);
    }
    close(listen_fd);
    return 0;
}

/* A parent played by sc_tree_serve on loopback: rank 1 of a world of size, of launch,
 * serving the n ranks of children a table (table_len bytes; NULL: 4 empty blobs) on
 * listen_fd for 4 s at most, hearing the store on word (NULL: no store); its status
 * into st. */
typedef struct {
    int listen_fd;
    int size;
    sc_store_launch_t launch;
    uint32_t children[2];
    int n;
    const uint8_t *table;
    uint32_t table_len;
    sc_tree_word_t *word;
    sc_status_t st;
} parent_t;

static void *serve_as_parent(void *arg)
{
    static const uint32_t empty[4] = {0, 0, 0, 0};
    parent_t *p = arg;
    sc_tree_word_t no_store = {-1, 0, SC_SUCCESS, "", 0};
    const uint8_t *table = p->table ? p->table : (const uint8_t *)empty;
    uint32_t len = p->table ? p->table_len : (uint32_t)sizeof(empty);

    p->st = sc_tree_serve(p->listen_fd, 1, p->size, &p->launch, p->children, p->n, SC_SUCCESS,
                          "", table, len, "127.0.0.1:1", sc_clock_now() + 4.0,
                          p->word ? p->word : &no_store);
    return NULL;
}

/* Rank 1, serving rank 3 the table, finds its connection to the store reset (the store
 * gave up on rank 1, stopped past the store's deadline) and tells rank 3 so in place of
 * the table: rank 3 fails with a sentence that names rank 1 as the rank the store gave
 * up on. It said "rank 0's store gave up on this rank ... before this rank took its
 * word", which rank 3 reported as its own ("rank 3: ... gave up on this rank"), false
 * of rank 3. */
static int test_parent_given_up_on_by_the_store_tells_its_children_naming_itself(void)
{
    sc_tree_word_t word = {-1, 0, SC_SUCCESS, "", 0};
    parent_t parent = {.size = 4, .launch = {"", ""}, .children = {3}, .n = 1, .word = &word};
    struct sockaddr_in a = {.sin_family = AF_INET};
    struct linger reset = {1, 0};
    sc_tree_word_t no_store = {-1, 0, SC_SUCCESS, "", 0};
    sc_store_result_t result = {0};
    sc_store_role_t role, store_role;
    char err[SC_ERROR_MAX] = "";
    int store_listen = listen_as_parent(1, &store_role);
    int rank_end = socket(AF_INET, SOCK_STREAM, 0), store_end = -1;
    pthread_t thread;
    sc_status_t st;

    parent.listen_fd = listen_as_parent(4, &role);
    CHECK(parent.listen_fd >= 0 && store_listen >= 0 && rank_end >= 0,
          "no sockets on loopback");
    role.table_len = 16;
    a.sin_port = htons(store_role.port);
    memcpy(&a.sin_addr, store_role.addr, 4);
    CHECK(connect(rank_end, (struct sockaddr *)&a, sizeof(a)) == 0 &&
              (store_end = accept(store_listen, NULL, NULL)) >= 0,
          "no connection to play the store's");
    /* The store gives up on rank 1: SO_LINGER 0, then close. */
    setsockopt(store_end, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    close(store_end);
    word.fd = rank_end;
    CHECK(pthread_create(&thread, NULL, serve_as_parent, &parent) == 0, "no parent thread");
    st = sc_tree_fetch(&role, 3, 4, &no_launch, NULL, 0, "127.0.0.1:1", sc_clock_now() + 3.0,
                       &no_store, &result, err, sizeof(err));
    pthread_join(thread, NULL);
    close(parent.listen_fd);
    close(rank_end);
    close(store_listen);
    sc_store_result_free(&result);
    CHECK(word.heard && word.st == SC_ERR_TIMEOUT, "rank 1 did not hear the store's reset: "
          "%d, %s", word.st, word.text);
    CHECK(st == SC_ERR_TIMEOUT, "rank 3's fetch returned %d: %s", st, err);
    CHECK(strstr(err, "rank 0's store gave up on rank 1 (it reset the connection) before "
                      "rank 1 took its word") &&
              !strstr(err, "this rank"),
          "rank 3's sentence does not name rank 1 as the rank the store gave up on: %s", err);
    return 0;
}

/* Rank 1 of a world of 4 at the store on port (a store played on loopback), with
 * SC_TIMEOUT timeout_s: its sc_store_allgather's status into st, and its sentence into
 * err. */
typedef struct {
    int port;
    sc_status_t st;
    char err[SC_ERROR_MAX];
    double timeout_s;
} exchanging_t;

static void *rank_1_at_the_store(void *arg)
{
    exchanging_t *x = arg;
    sc_store_result_t result = {0};

    x->st = sc_store_allgather("127.0.0.1", x->port, 1, 4, &no_launch, x->timeout_s, 2, "b1",
                               2, &result);
    snprintf(x->err, sizeof(x->err), "%s", sc_last_error());
    if (x->st == SC_SUCCESS)
        sc_store_result_free(&result);
    return NULL;
}

/* Rank 1's connection to the store played on loopback at store_listen, accepted, with its
 * hello (into *h) and its blob of 2 bytes read, 4 s to read on it: the store's end, or
 * -1 (closed) where they did not come. */
static int accept_rank_1(int store_listen, sc_store_hello_t *h)
{
    struct timeval four_s = {4, 0};
    char blob[2];
    int fd = accept(store_listen, NULL, NULL);

    if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &four_s, sizeof(four_s)) != 0 ||
                    recv(fd, h, sizeof(*h), MSG_WAITALL) != (ssize_t)sizeof(*h) ||
                    h->len != 2 || recv(fd, blob, 2, MSG_WAITALL) != 2)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Rank 1 (a child of rank 0 serving rank 3 in the tree) takes its place and its
 * children from the store's answer, and the store, played on loopback, then resets the
 * connection before the table came (it gave up on rank 1, stopped or too slow): rank 1
 * fails saying so, and rank 3, asking rank 1 for the table, fails with rank 1's
 * sentence, which names rank 1 (SC_ERR_TIMEOUT). Rank 1 closed its port as it failed,
 * and rank 3 said "nothing listens there: rank 1 exited or was killed after the store
 * answered it" (or that its connection closed before the table came), false of rank 1. */
static int test_rank_failing_as_its_answer_comes_tells_its_children(void)
{
    struct {
        sc_store_reply_t rep;
        sc_store_role_t role;
        uint32_t children[1];
    } answer = {{SC_STORE_MAGIC, SC_SUCCESS, sizeof(sc_store_role_t) + 4 + 16},
                {.parent = 0, .depth = 1, .height = 2, .nchildren = 1, .table_len = 16},
                {3}};
    struct linger reset = {1, 0};
    exchanging_t rank_1 = {0, SC_SUCCESS, "", 5.0};
    sc_tree_word_t no_store = {-1, 0, SC_SUCCESS, "", 0};
    sc_store_result_t result = {0};
    sc_store_role_t store_role, role;
    sc_store_hello_t h;
    char blob[2], err[SC_ERROR_MAX] = "";
    int store_listen = listen_as_parent(4, &store_role), store_end = -1;
    pthread_t thread;
    sc_status_t st;

    CHECK(store_listen >= 0, "no socket on loopback");
    rank_1.port = store_role.port;
    CHECK(pthread_create(&thread, NULL, rank_1_at_the_store, &rank_1) == 0, "no thread");
    store_end = accept(store_listen, NULL, NULL);
    CHECK(store_end >= 0 && recv(store_end, &h, sizeof(h), MSG_WAITALL) == (ssize_t)sizeof(h) &&
              h.len == 2 && recv(store_end, blob, 2, MSG_WAITALL) == 2 && h.port != 0,
          "rank 1 sent no hello with its port");
    CHECK(send(store_end, &answer, sizeof(answer), MSG_NOSIGNAL) == (ssize_t)sizeof(answer),
          "the answer's start did not go");
    usleep(300000); /* rank 1 took its place and its children */
    setsockopt(store_end, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    close(store_end);
    role = store_role;
    role.port = (uint16_t)h.port;
    role.table_len = 16;
    st = sc_tree_fetch(&role, 3, 4, &no_launch, NULL, 0, "127.0.0.1:1", sc_clock_now() + 3.0,
                       &no_store, &result, err, sizeof(err));
    pthread_join(thread, NULL);
    close(store_listen);
    CHECK(st == SC_ERR_TIMEOUT, "rank 3's fetch returned %d: %s", st, err);
    CHECK(strstr(err, "rank 0's store gave up on rank 1 before it took its whole answer") &&
              !strstr(err, "exited or was killed") && !strstr(err, "this rank"),
          "rank 3's sentence is not rank 1's, naming it: %s", err);
    CHECK(rank_1.st == SC_ERR_TIMEOUT &&
              strstr(rank_1.err, "rank 0's store gave up on rank 1 before it took its whole "
                                 "answer"),
          "rank 1 returned %d: %s", rank_1.st, rank_1.err);
    return 0;
}

/* A store played on loopback answers rank 1 (rank_1, whose sc_store_allgather runs on
 * *thread; a child of rank 0 serving nchildren ranks in the tree, 3 and then 4) with its
 * place and table (table_bytes bytes at table, 16 at most) and, in the same send, where
 * killed is not NULL, its word that the rendezvous failed (SC_ERR_PEER_FAILED with
 * killed). The store's end of rank 1's connection (3 s to read on it), or -1; *parent:
 * where rank 1 serves its children; *store_listen: the store's listening socket, for the
 * caller to close (closed, and -1, where this returns -1). */
static int answer_rank_1(exchanging_t *rank_1, int nchildren, const uint32_t *table,
                         size_t table_bytes, const char *killed, pthread_t *thread,
                         int *store_listen, sc_store_role_t *parent)
{
    static const uint32_t children[2] = {3, 4};
    sc_store_role_t place = {.parent = 0, .depth = 1, .height = 2,
                             .nchildren = (uint32_t)nchildren, .table_len = (uint32_t)table_bytes};
    size_t kids = (size_t)nchildren * sizeof(uint32_t);
    sc_store_reply_t rep = {SC_STORE_MAGIC, SC_SUCCESS,
                            (uint32_t)(sizeof(place) + kids + table_bytes)};
    sc_store_reply_t word = {SC_STORE_MAGIC, SC_ERR_PEER_FAILED,
                             killed ? (uint32_t)strlen(killed) : 0};
    uint8_t answer[2 * sizeof(rep) + sizeof(place) + sizeof(children) + 16 + SC_ERROR_MAX];
    size_t len = sizeof(rep) + rep.len;
    struct timeval three_s = {3, 0};
    sc_store_hello_t h;
    char blob[2];
    int store_end;

    memcpy(answer, &rep, sizeof(rep));
    memcpy(answer + sizeof(rep), &place, sizeof(place));
    memcpy(answer + sizeof(rep) + sizeof(place), children, kids);
    memcpy(answer + sizeof(rep) + sizeof(place) + kids, table, table_bytes);
    if (killed) {
        memcpy(answer + len, &word, sizeof(word));
        memcpy(answer + len + sizeof(word), killed, word.len);
        len += sizeof(word) + word.len;
    }
    *store_listen = listen_as_parent(4, parent);
    if (*store_listen < 0)
        return -1;
    rank_1->port = parent->port;
    if (pthread_create(thread, NULL, rank_1_at_the_store, rank_1) != 0) {
        close(*store_listen);
        *store_listen = -1;
        return -1;
    }
    store_end = accept(*store_listen, NULL, NULL);
    if (store_end < 0 ||
        setsockopt(store_end, SOL_SOCKET, SO_RCVTIMEO, &three_s, sizeof(three_s)) != 0 ||
        recv(store_end, &h, sizeof(h), MSG_WAITALL) != (ssize_t)sizeof(h) || h.len != 2 ||
        recv(store_end, blob, 2, MSG_WAITALL) != 2 || h.port == 0 ||
        send(store_end, answer, len, MSG_NOSIGNAL) != (ssize_t)len) {
        if (store_end >= 0)
            close(store_end);
        pthread_join(*thread, NULL);
        close(*store_listen);
        *store_listen = -1;
        return -1;
    }
    parent->port = (uint16_t)h.port;
    return store_end;
}

/* answer_rank_1 with a table of 8 bytes whose first blob claims 100: a table that came
 * malformed. */
static int answer_rank_1_a_malformed_table(exchanging_t *rank_1, int nchildren,
                                           pthread_t *thread, int *store_listen,
                                           sc_store_role_t *parent)
{
    static const uint32_t table[2] = {100, 0};

    return answer_rank_1(rank_1, nchildren, table, sizeof(table), NULL, thread, store_listen,
                         parent);
}

/* answer_rank_1_a_malformed_table, then rank 1's word to the store read (it says why
 * before it tells its children): the store's end, or -1. */
static int rank_1_told_the_store_of_a_malformed_table(exchanging_t *rank_1, int nchildren,
                                                      pthread_t *thread, int *store_listen,
                                                      sc_store_role_t *parent)
{
    sc_store_reply_t word;
    char said[SC_ERROR_MAX];
    int store_end = answer_rank_1_a_malformed_table(rank_1, nchildren, thread, store_listen,
                                                    parent);

    if (store_end >= 0 &&
        recv(store_end, &word, sizeof(word), MSG_WAITALL) == (ssize_t)sizeof(word) &&
        word.len < sizeof(said))
        recv(store_end, said, word.len, MSG_WAITALL);
    return store_end;
}

/* Rank 1, a child of rank 0 given a malformed table by the store, tells its child, rank
 * 3, in place of the table a sentence that names rank 1 as the rank that received it:
 * it said "rendezvous: the table of the ranks' blobs came malformed (8 bytes for 4
 * ranks)", which rank 3 reported as its own ("rank 3: rendezvous: ..."). */
static int test_rank_given_a_malformed_table_names_itself_to_its_children(void)
{
    exchanging_t rank_1 = {0, SC_SUCCESS, "", 5.0};
    sc_tree_word_t no_store = {-1, 0, SC_SUCCESS, "", 0};
    sc_store_result_t result = {0};
    sc_store_role_t role;
    char err[SC_ERROR_MAX] = "";
    pthread_t thread;
    int store_listen = -1, store_end;
    sc_status_t st;

    store_end = answer_rank_1_a_malformed_table(&rank_1, 1, &thread, &store_listen, &role);
    CHECK(store_end >= 0, "rank 1 was not answered by the store played on loopback");
    st = sc_tree_fetch(&role, 3, 4, &no_launch, NULL, 0, "127.0.0.1:1", sc_clock_now() + 3.0,
                       &no_store, &result, err, sizeof(err));
    pthread_join(thread, NULL);
    close(store_end);
    close(store_listen);
    CHECK(st == SC_ERR_SYSTEM, "rank 3's fetch returned %d: %s", st, err);
    CHECK(strstr(err, "the table of the ranks' blobs that rank 1 received came malformed (8 "
                      "bytes for 4 ranks)"),
          "rank 3's sentence does not name rank 1 as the rank the table came to: %s", err);
    CHECK(rank_1.st == SC_ERR_SYSTEM && strstr(rank_1.err, "that rank 1 received came "
                                                           "malformed"),
          "rank 1 returned %d: %s", rank_1.st, rank_1.err);
    return 0;
}

/* Rank 1, given a malformed table by the store (a failure of its own after its hello),
 * says so to the store as its word, with its status and sentence, which the store tells
 * every rank: it closed its connection without a word, and the store told every rank
 * that rank 1 had exited or was killed. Rank 3 then asks rank 1 for the table, so that
 * rank 1 ends at once. */
static int test_rank_given_a_malformed_table_tells_the_store_why(void)
{
    exchanging_t rank_1 = {0, SC_SUCCESS, "", 5.0};
    sc_tree_word_t no_store = {-1, 0, SC_SUCCESS, "", 0};
    sc_store_result_t result = {0};
    sc_store_reply_t word = {0, 0, 0};
    sc_store_role_t role;
    char text[SC_ERROR_MAX] = "", err[SC_ERROR_MAX] = "";
    pthread_t thread;
    int store_listen = -1, store_end;
    ssize_t got, got_text = 0;

    store_end = answer_rank_1_a_malformed_table(&rank_1, 1, &thread, &store_listen, &role);
    CHECK(store_end >= 0, "rank 1 was not answered by the store played on loopback");
    got = recv(store_end, &word, sizeof(word), MSG_WAITALL);
    if (got == (ssize_t)sizeof(word) && word.len < sizeof(text))
        got_text = recv(store_end, text, word.len, MSG_WAITALL);
    sc_tree_fetch(&role, 3, 4, &no_launch, NULL, 0, "127.0.0.1:1", sc_clock_now() + 3.0,
                  &no_store, &result, err, sizeof(err));
    pthread_join(thread, NULL);
    close(store_end);
    close(store_listen);
    CHECK(got == (ssize_t)sizeof(word), "rank 1 sent the store no word (%zd bytes: its "
          "connection %s)", got, got == 0 ? "closed" : "broke or stayed silent for 3 s");
    CHECK(word.magic == SC_STORE_MAGIC && word.status == SC_ERR_SYSTEM &&
              got_text == (ssize_t)word.len,
          "rank 1's word: magic %#x, status %d, %u bytes of sentence (%zd came)", word.magic,
          word.status, word.len, got_text);
    CHECK(strstr(text, "the table of the ranks' blobs that rank 1 received came malformed") &&
              strncmp(text, "rank ", 5) != 0,
          "rank 1's word does not give its sentence, naming it, unprefixed: %s", text);
    CHECK(rank_1.st == SC_ERR_SYSTEM, "rank 1 returned %d: %s", rank_1.st, rank_1.err);
    return 0;
}

/* Rank 1, given a malformed table by the store, tells its children, ranks 3 and 4, its
 * failure in place of the table; both heard the store's verdict (rank 1's sentence,
 * which the store tells every rank) as they connected to rank 1, and failed with it,
 * closing their connections before their hellos. Rank 1 ends within 1 s of its word to
 * the store: it waited SC_TREE_TOLD_S (2 s) for them. */
static int test_rank_telling_its_children_ends_once_they_heard_the_store(void)
{
    static const char text[] = "rendezvous at 127.0.0.1:1: the table of the ranks' blobs "
                               "that rank 1 received came malformed (8 bytes for 4 ranks)";
    sc_store_reply_t verdict = {SC_STORE_MAGIC, SC_ERR_SYSTEM, sizeof(text) - 1};
    exchanging_t rank_1 = {0, SC_SUCCESS, "", 5.0};
    sc_store_role_t role;
    pthread_t thread;
    int store_listen = -1, store_end, heard = 0;
    double t0, took;

    store_end = rank_1_told_the_store_of_a_malformed_table(&rank_1, 2, &thread, &store_listen,
                                                           &role);
    CHECK(store_end >= 0, "rank 1 was not answered by the store played on loopback");
    t0 = sc_clock_now(); /* rank 1 said its word: it tells its children from here */
    for (uint32_t r = 3; r <= 4; r++) {
        sc_store_result_t result = {0};
        sc_tree_word_t store = {-1, 0, SC_SUCCESS, "", 0};
        char err[SC_ERROR_MAX];
        int pair[2];

        if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0)
            break;
        if (send(pair[1], &verdict, sizeof(verdict), 0) == (ssize_t)sizeof(verdict) &&
            send(pair[1], text, verdict.len, 0) == (ssize_t)verdict.len) {
            store.fd = pair[0];
            sc_tree_fetch(&role, (int)r, 4, &no_launch, NULL, 0, "127.0.0.1:1",
                          sc_clock_now() + 3.0, &store, &result, err, sizeof(err));
            heard += store.heard;
        }
        close(pair[0]);
        close(pair[1]);
    }
    pthread_join(thread, NULL);
    took = sc_clock_now() - t0;
    close(store_end);
    close(store_listen);
    CHECK(heard == 2, "%d of ranks 3 and 4 failed with the store's verdict", heard);
    CHECK(rank_1.st == SC_ERR_SYSTEM, "rank 1 returned %d: %s", rank_1.st, rank_1.err);
    CHECK(took < 1.0, "rank 1 told its children for %.2f s after its word, both gone", took);
    return 0;
}

/* Rank 1, with SC_TIMEOUT=inf, is answered by a store played on loopback that claims an
 * answer of 8 bytes (shorter than a place in the tree: malformed) and sends none of
 * them. Rank 1 fails and says so to the store as its word within 3 s, having read what
 * came of the answer for 2 s (SC_STORE_DRAIN_S): it waited for the 8 bytes until its
 * deadline, for ever. */
static int test_rank_given_less_than_the_store_claimed_says_its_word_within_2_s(void)
{
    sc_store_reply_t claim = {SC_STORE_MAGIC, SC_SUCCESS, 8}, word = {0, 0, 0};
    exchanging_t rank_1 = {0, SC_SUCCESS, "", INFINITY};
    sc_store_role_t store_role;
    sc_store_hello_t h;
    char text[SC_ERROR_MAX] = "";
    int store_listen = listen_as_parent(4, &store_role), store_end = -1;
    ssize_t got = -1, got_text = 0;
    pthread_t thread;
    double t0 = 0, took = 0;

    CHECK(store_listen >= 0, "no socket on loopback");
    rank_1.port = store_role.port;
    CHECK(pthread_create(&thread, NULL, rank_1_at_the_store, &rank_1) == 0, "no thread");
    store_end = accept_rank_1(store_listen, &h);
    if (store_end >= 0 &&
        send(store_end, &claim, sizeof(claim), MSG_NOSIGNAL) == (ssize_t)sizeof(claim)) {
        t0 = sc_clock_now();
        got = recv(store_end, &word, sizeof(word), MSG_WAITALL);
        took = sc_clock_now() - t0;
        if (got == (ssize_t)sizeof(word) && word.len < sizeof(text))
            got_text = recv(store_end, text, word.len, MSG_WAITALL);
    }
    if (store_end >= 0)
        close(store_end); /* where rank 1 still waits for the 8 bytes, it ends so */
    pthread_join(thread, NULL);
    close(store_listen);
    CHECK(t0 > 0, "rank 1 was not answered by the store played on loopback");
    CHECK(got == (ssize_t)sizeof(word) && word.status == SC_ERR_SYSTEM &&
              got_text == (ssize_t)word.len,
          "rank 1 said no word within 4 s of the claim (%zd bytes, status %d)", got,
          word.status);
    CHECK(strstr(text, "the store's answer to rank 1 came malformed (8 bytes)"),
          "rank 1's word: %s", text);
    CHECK(took < 3.0, "rank 1 said its word %.2f s after the claim", took);
    CHECK(rank_1.st == SC_ERR_SYSTEM, "rank 1 returned %d: %s", rank_1.st, rank_1.err);
    return 0;
}

/* Rank 1 is answered by a store played on loopback with a place in the tree that does
 * not hold together (a table of 8 bytes in an answer of 700000: malformed) and the rest
 * of the answer coming slowly, 100000 bytes every 0.4 s, 2.8 s in all. Rank 1 reads all
 * of it and then says its failure to the store as its word: it read the rest for 2 s in
 * all (SC_STORE_DRAIN_S), closed its connection with the rest unread, and the store's
 * sends failed (a real store told every rank that rank 1 had exited or was killed). */
static int test_rank_given_a_large_answer_slowly_reads_it_whole_before_its_word(void)
{
    enum { CHUNK = 100000, CHUNKS = 7 };
    static uint8_t chunk[CHUNK];
    sc_store_role_t place = {.parent = 0, .depth = 1, .height = 1, .table_len = 8};
    sc_store_reply_t rep = {SC_STORE_MAGIC, SC_SUCCESS, sizeof(place) + CHUNK * CHUNKS};
    sc_store_reply_t word = {0, 0, 0};
    exchanging_t rank_1 = {0, SC_SUCCESS, "", 5.0};
    sc_store_role_t store_role;
    sc_store_hello_t h;
    char text[SC_ERROR_MAX] = "";
    int store_listen = listen_as_parent(4, &store_role), store_end = -1, sent = -1;
    ssize_t got = -1, got_text = 0;
    pthread_t thread;

    CHECK(store_listen >= 0, "no socket on loopback");
    rank_1.port = store_role.port;
    CHECK(pthread_create(&thread, NULL, rank_1_at_the_store, &rank_1) == 0, "no thread");
    store_end = accept_rank_1(store_listen, &h);
    if (store_end >= 0 &&
        send(store_end, &rep, sizeof(rep), MSG_NOSIGNAL) == (ssize_t)sizeof(rep) &&
        send(store_end, &place, sizeof(place), MSG_NOSIGNAL) == (ssize_t)sizeof(place)) {
        for (sent = 0; sent < CHUNKS; sent++) {
            usleep(400000);
            if (send(store_end, chunk, CHUNK, MSG_NOSIGNAL) != CHUNK)
                break;
        }
        if (sent == CHUNKS)
            got = recv(store_end, &word, sizeof(word), MSG_WAITALL);
        if (got == (ssize_t)sizeof(word) && word.len < sizeof(text))
            got_text = recv(store_end, text, word.len, MSG_WAITALL);
    }
    if (store_end >= 0)
        close(store_end);
    pthread_join(thread, NULL);
    close(store_listen);
    CHECK(sent >= 0, "rank 1 was not answered by the store played on loopback");
    CHECK(sent == CHUNKS, "the store sent %d of the %d parts of rank 1's answer: rank 1 "
          "closed its connection %.1f s after the answer began", sent, (int)CHUNKS,
          0.4 * (sent + 1));
    CHECK(got == (ssize_t)sizeof(word) && word.status == SC_ERR_SYSTEM &&
              got_text == (ssize_t)word.len,
          "rank 1 said no word after its answer (%zd bytes, status %d)", got, word.status);
    CHECK(strstr(text, "the store's answer to rank 1 came malformed"), "rank 1's word: %s",
          text);
    CHECK(rank_1.st == SC_ERR_SYSTEM, "rank 1 returned %d: %s", rank_1.st, rank_1.err);
    return 0;
}

/* Rank 1 at a store played on loopback that closes its first three connections
 * unanswered 0.3 s after each came, as rank 0's store closes one whose hello has not
 * come after 0.25 s for one queued behind 64 silent ones (SC_STORE_EVICT_S: a rank
 * stopped between its connect and its hello), then answers the fourth with a failure:
 * rank 1 connects again each time and fails with the store's answer. It counted each
 * close, and after the third said SC_ERR_INVALID_ARG, that what answered was not a
 * shardcomm store. */
static int test_rank_evicted_by_the_store_three_times_connects_again(void)
{
    static const char text[] = "rendezvous at 127.0.0.1:1: rank 2 could not join";
    sc_store_reply_t rep = {SC_STORE_MAGIC, SC_ERR_PEER_FAILED, sizeof(text) - 1};
    exchanging_t rank_1 = {0, SC_SUCCESS, "", 5.0};
    sc_store_role_t store_role;
    sc_store_hello_t h;
    int store_listen = listen_as_parent(4, &store_role), store_end = -1, evicted = 0;
    struct pollfd pfd = {store_listen, POLLIN, 0};
    pthread_t thread;

    CHECK(store_listen >= 0, "no socket on loopback");
    rank_1.port = store_role.port;
    CHECK(pthread_create(&thread, NULL, rank_1_at_the_store, &rank_1) == 0, "no thread");
    for (; evicted < 3 && poll(&pfd, 1, 3000) == 1; evicted++) {
        int fd = accept(store_listen, NULL, NULL);

        if (fd < 0)
            break;
        usleep(300000);
        close(fd);
    }
    if (evicted == 3 && poll(&pfd, 1, 3000) == 1)
        store_end = accept_rank_1(store_listen, &h);
    if (store_end >= 0 &&
        send(store_end, &rep, sizeof(rep), MSG_NOSIGNAL) == (ssize_t)sizeof(rep))
        send(store_end, text, rep.len, MSG_NOSIGNAL);
    pthread_join(thread, NULL);
    if (store_end >= 0)
        close(store_end);
    close(store_listen);
    CHECK(rank_1.st == SC_ERR_PEER_FAILED && strstr(rank_1.err, text),
          "rank 1, its connection closed %d times 0.3 s after it came, returned %d: %s",
          evicted, rank_1.st, rank_1.err);
    return 0;
}

/* The store's word that the rendezvous failed, as the store says it to every rank. */
static const char rank_2_killed[] = "rendezvous at 127.0.0.1:1: rank 2 exited or was killed "
                                    "after the store answered it, before every rank had the "
                                    "table of the ranks' blobs";

/* Rank 1, a child of rank 0 serving ranks 3 and 4 in the tree, finds the store's word
 * that the rendezvous failed waiting as it comes to the tree (sent with its answer):
 * the store said it to ranks 3 and 4 too, which heard it before they came to rank 1,
 * and never come. Rank 1 fails with the store's sentence within 1 s: it waited
 * SC_TREE_TOLD_S (2 s) for them, unable to tell them from children on their way. */
static int test_rank_finding_the_store_s_failure_waiting_waits_for_no_child(void)
{
    static const uint32_t table[4] = {0, 0, 0, 0};
    exchanging_t rank_1 = {0, SC_SUCCESS, "", 5.0};
    sc_store_role_t role;
    pthread_t thread;
    int store_listen = -1, store_end;
    double t0 = sc_clock_now(), took;

    store_end = answer_rank_1(&rank_1, 2, table, sizeof(table), rank_2_killed, &thread,
                              &store_listen, &role);
    CHECK(store_end >= 0, "rank 1 was not answered by the store played on loopback");
    pthread_join(thread, NULL);
    took = sc_clock_now() - t0;
    close(store_end);
    close(store_listen);
    CHECK(rank_1.st == SC_ERR_PEER_FAILED && strstr(rank_1.err, rank_2_killed),
          "rank 1 returned %d: %s", rank_1.st, rank_1.err);
    CHECK(took < 1.0, "rank 1 returned %.2f s after the store's answer and word", took);
    return 0;
}

/* Rank 1 serves ranks 3 and 4 the table; rank 3 takes it, and then the store says that
 * the rendezvous failed, as it says to rank 4 too, which heard it before it came to rank
 * 1 and never comes. Rank 1 fails with the store's sentence within 1 s of the word: it
 * waited SC_TREE_TOLD_S (2 s) for rank 4. */
static int test_rank_serving_the_table_ends_once_the_store_said_its_failure(void)
{
    static const uint32_t table[4] = {0, 0, 0, 0};
    sc_store_reply_t word = {SC_STORE_MAGIC, SC_ERR_PEER_FAILED, sizeof(rank_2_killed) - 1};
    exchanging_t rank_1 = {0, SC_SUCCESS, "", 5.0};
    sc_tree_word_t no_store = {-1, 0, SC_SUCCESS, "", 0};
    sc_store_result_t result = {0};
    sc_store_role_t role;
    char err[SC_ERROR_MAX] = "";
    pthread_t thread;
    int store_listen = -1, store_end;
    double t0, took;
    sc_status_t st;

    store_end = answer_rank_1(&rank_1, 2, table, sizeof(table), NULL, &thread, &store_listen,
                              &role);
    CHECK(store_end >= 0, "rank 1 was not answered by the store played on loopback");
    role.table_len = sizeof(table);
    st = sc_tree_fetch(&role, 3, 4, &no_launch, NULL, 0, "127.0.0.1:1", sc_clock_now() + 3.0,
                       &no_store, &result, err, sizeof(err));
    sc_store_result_free(&result);
    t0 = sc_clock_now();
    if (send(store_end, &word, sizeof(word), MSG_NOSIGNAL) == (ssize_t)sizeof(word))
        send(store_end, rank_2_killed, word.len, MSG_NOSIGNAL);
    pthread_join(thread, NULL);
    took = sc_clock_now() - t0;
    close(store_end);
    close(store_listen);
    CHECK(st == SC_SUCCESS, "rank 3 got no table from rank 1 (%d): %s", st, err);
    CHECK(rank_1.st == SC_ERR_PEER_FAILED && strstr(rank_1.err, rank_2_killed),
          "rank 1 returned %d: %s", rank_1.st, rank_1.err);
    CHECK(took < 1.0, "rank 1 returned %.2f s after the store's word", took);
    return 0;
}

/* Rank 1, placed by a store played on loopback below rank 2 (played by the test too)
 * and serving ranks 3 and 4, is answered by rank 2 with answer (len bytes: a failure or
 * a table); then the store says that the rendezvous failed (rank_2_killed), as it says
 * to ranks 3 and 4 too, which heard it before they came to rank 1 and never come. Rank
 * 1 must return st, its sentence holding text, within 1 s of the store's word: it
 * waited SC_TREE_TOLD_S (2 s) for them where the failure it gave was not the store's. */
static int check_rank_below_rank_2_ends_at_the_store_s_word(const void *answer, size_t len,
                                                            sc_status_t st, const char *text)
{
    static const uint32_t children[2] = {3, 4};
    sc_store_reply_t word = {SC_STORE_MAGIC, SC_ERR_PEER_FAILED, sizeof(rank_2_killed) - 1};
    exchanging_t rank_1 = {0, SC_SUCCESS, "", 5.0};
    struct timeval three_s = {3, 0};
    sc_store_role_t store_role, place;
    struct {
        sc_store_reply_t rep;
        sc_store_role_t place;
        uint32_t children[2];
    } placed;
    sc_store_hello_t h;
    int parent_listen = listen_as_parent(4, &place);
    int store_listen = listen_as_parent(4, &store_role);
    int store_end = -1, child_end = -1, answered = 0;
    pthread_t thread;
    double t0 = 0, took = 0;

    if ((parent_listen < 0 || store_listen < 0) && parent_listen >= 0)
        close(parent_listen);
    if ((parent_listen < 0 || store_listen < 0) && store_listen >= 0)
        close(store_listen);
    CHECK(parent_listen >= 0 && store_listen >= 0, "no socket on loopback");
    place.parent = 2;
    place.nchildren = 2;
    place.table_len = 16;
    placed.rep = (sc_store_reply_t){SC_STORE_MAGIC, SC_SUCCESS,
                                    sizeof(place) + sizeof(children)};
    placed.place = place;
    memcpy(placed.children, children, sizeof(children));
    rank_1.port = store_role.port;
    CHECK(pthread_create(&thread, NULL, rank_1_at_the_store, &rank_1) == 0, "no thread");
    store_end = accept_rank_1(store_listen, &h);
    if (store_end >= 0 &&
        send(store_end, &placed, sizeof(placed), MSG_NOSIGNAL) == (ssize_t)sizeof(placed))
        child_end = accept(parent_listen, NULL, NULL); /* rank 1 asks rank 2 */
    if (child_end >= 0 &&
        setsockopt(child_end, SOL_SOCKET, SO_RCVTIMEO, &three_s, sizeof(three_s)) == 0 &&
        recv(child_end, &h, sizeof(h), MSG_WAITALL) == (ssize_t)sizeof(h) &&
        send(child_end, answer, len, MSG_NOSIGNAL) == (ssize_t)len) {
        answered = 1;
        usleep(100000); /* rank 1 serves its children */
        t0 = sc_clock_now();
        if (send(store_end, &word, sizeof(word), MSG_NOSIGNAL) == (ssize_t)sizeof(word))
            send(store_end, rank_2_killed, word.len, MSG_NOSIGNAL);
    }
    if (child_end >= 0)
        close(child_end);
    if (!answered && store_end >= 0)
        close(store_end); /* rank 1 ends so */
    pthread_join(thread, NULL);
    took = sc_clock_now() - t0;
    if (answered)
        close(store_end);
    close(parent_listen);
    close(store_listen);
    CHECK(answered, "rank 1 did not ask rank 2, played on loopback, for the table");
    CHECK(rank_1.st == st && strstr(rank_1.err, text), "rank 1 returned %d: %s", rank_1.st,
          rank_1.err);
    CHECK(took < 1.0, "rank 1 returned %.2f s after the store's word", took);
    return 0;
}

/* Rank 1's own failure came first (rank 2 gave it a malformed table), and the store's
 * word after it, as rank 1 tells its children its own: check_rank_below_rank_2_... */
static int test_rank_failing_before_the_store_s_word_ends_at_it(void)
{
    struct {
        sc_store_reply_t rep;
        uint32_t table[4];
    } malformed = {{SC_STORE_MAGIC, SC_SUCCESS, 16}, {100, 0, 0, 0}};

    return check_rank_below_rank_2_ends_at_the_store_s_word(
        &malformed, sizeof(malformed), SC_ERR_SYSTEM,
        "the table of the ranks' blobs that rank 1 received came malformed");
}

/* Rank 2 gave rank 1 the store's failure (it heard the store first), and the store's own
 * word to rank 1 came after it: check_rank_below_rank_2_... */
static int test_rank_given_the_store_s_failure_by_its_parent_ends_at_the_store_s_word(void)
{
    static const char relayed[] = "rendezvous at 127.0.0.1:1: rank 3 exited or was killed "
                                  "after the store answered it";
    uint8_t answer[sizeof(sc_store_reply_t) + sizeof(relayed) - 1];
    sc_store_reply_t rep = {SC_STORE_MAGIC, SC_ERR_PEER_FAILED, sizeof(relayed) - 1};

    memcpy(answer, &rep, sizeof(rep));
    memcpy(answer + sizeof(rep), relayed, rep.len);
    return check_rank_below_rank_2_ends_at_the_store_s_word(answer, sizeof(answer),
                                                            SC_ERR_PEER_FAILED, relayed);
}

/* The store's word st and text, written 50 ms after start on the far end of a socket
 * pair whose near end (pair[0]) is a rank's connection to the store: a parent that
 * stopped serving told the store its failure (or heard it), and the store tells every
 * rank a moment later. */
typedef struct {
    int pair[2];
    sc_status_t st;
    const char *text;
    pthread_t thread;
} late_word_t;

static void *write_word_late(void *arg)
{
    late_word_t *w = arg;
    sc_store_reply_t word = {SC_STORE_MAGIC, w->st, (uint32_t)strlen(w->text)};

    usleep(50000);
    if (send(w->pair[1], &word, sizeof(word), 0) == (ssize_t)sizeof(word))
        send(w->pair[1], w->text, word.len, 0);
    return NULL;
}

static int late_word_start(late_word_t *w)
{
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, w->pair) != 0)
        return -1;
    if (pthread_create(&w->thread, NULL, write_word_late, w) == 0)
        return 0;
    close(w->pair[0]);
    close(w->pair[1]);
    return -1;
}

static void late_word_end(late_word_t *w)
{
    pthread_join(w->thread, NULL);
    close(w->pair[0]);
    close(w->pair[1]);
}

/* Rank 3 asks rank 1, at role, for the table, the store's word (st and text) coming 50
 * ms after it began: it must fail with the store's status and sentence. */
static int check_fetch_takes_the_late_word(const sc_store_role_t *role, sc_status_t st,
                                           const char *text)
{
    late_word_t store = {.st = st, .text = text};
    sc_store_result_t result = {0};
    sc_tree_word_t word;
    char err[SC_ERROR_MAX] = "";
    sc_status_t got;

    CHECK(late_word_start(&store) == 0, "no store played on a socket pair");
    word = (sc_tree_word_t){store.pair[0], 0, SC_SUCCESS, "", 0};
    got = sc_tree_fetch(role, 3, 4, &no_launch, NULL, 0, "127.0.0.1:1", sc_clock_now() + 3.0,
                        &word, &result, err, sizeof(err));
    late_word_end(&store);
    CHECK(got == st && word.heard && strcmp(err, text) == 0,
          "rank 3 returned %d, the store's word %s: %s", got,
          word.heard ? "heard" : "not heard", err);
    return 0;
}

/* Rank 3 asks rank 1 for the table where nothing listens any more (rank 1 stopped
 * serving and returned its failure), and the store's word, which it says to every rank,
 * comes 50 ms later on rank 3's connection to the store: rank 3 fails with the store's
 * status and sentence. It said at once "nothing listens there: rank 1 exited or was
 * killed after the store answered it". */
static int test_child_finding_its_parent_s_port_closed_takes_the_store_s_word(void)
{
    sc_store_role_t role;
    int closed = listen_as_parent(1, &role);

    CHECK(closed >= 0, "no listening socket on loopback");
    close(closed); /* its port: nothing listens there now */
    return check_fetch_takes_the_late_word(&role, SC_ERR_PEER_FAILED, rank_2_killed);
}

/* Rank 1, given a malformed table by the store, says so to the store and tells its
 * child, rank 3, its failure in place of the table; it ends without rank 3, who hears
 * rank 1's sentence from the store (a connection that closes before any hello, a port
 * scanner's, finds it ending or its port closed already). Rank 3, coming then, finds
 * rank 1's port closed, and the store's word (rank 1's sentence) comes 50 ms later:
 * rank 3 fails with that sentence, where it said that rank 1 had exited or was
 * killed. */
static int test_child_coming_after_a_scanner_ended_its_parent_hears_the_store(void)
{
    static const char malformed[] = "rendezvous at 127.0.0.1:1: the table of the ranks' "
                                    "blobs that rank 1 received came malformed (8 bytes for "
                                    "4 ranks)";
    exchanging_t rank_1 = {0, SC_SUCCESS, "", 5.0};
    struct sockaddr_in a = {.sin_family = AF_INET};
    sc_store_role_t role;
    pthread_t thread;
    int store_listen = -1, store_end, scanner;
    double t0, took;

    store_end = rank_1_told_the_store_of_a_malformed_table(&rank_1, 1, &thread, &store_listen,
                                                           &role);
    CHECK(store_end >= 0, "rank 1 was not answered by the store played on loopback");
    t0 = sc_clock_now();
    a.sin_port = htons(role.port);
    memcpy(&a.sin_addr, role.addr, 4);
    scanner = socket(AF_INET, SOCK_STREAM, 0); /* connects, says nothing, closes */
    if (scanner >= 0 && connect(scanner, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(scanner);
        scanner = -1;
    }
    if (scanner >= 0)
        close(scanner);
    pthread_join(thread, NULL);
    took = sc_clock_now() - t0;
    close(store_end);
    close(store_listen);
    CHECK(took < 1.0, "rank 1 told its children for %.2f s after the scanner's connection",
          took);
    return check_fetch_takes_the_late_word(&role, SC_ERR_SYSTEM, malformed);
}

/* Rank 3 of a world of size, of launch id (from SC_LAUNCH_ID), asks for the table at
 * the port where rank 1 of launch job-B, world size 4, serves its own rank 3 (its parent
 * exited, and a rank of another launch on the host got its port): it fails within a
 * second with SC_ERR_PEER_FAILED and takes no table, its sentence saying want; then
 * job-B's rank 3 gets the table there, the refused one not taken for it. It took the
 * other launch's table, of the same length, and went on to connect to that launch's
 * processes. */
static int check_refused_child(int size, const char *id, const char *want)
{
    parent_t parent = {.size = 4, .launch = {"job-B", "SC_LAUNCH_ID"}, .children = {3}, .n = 1};
    sc_store_launch_t launch = {"", "SC_LAUNCH_ID"};
    sc_tree_word_t no_store = {-1, 0, SC_SUCCESS, "", 0};
    sc_store_result_t result = {0}, theirs = {0};
    sc_store_role_t role;
    char err[SC_ERROR_MAX] = "", their_err[SC_ERROR_MAX] = "";
    pthread_t thread;
    double t0, took;
    sc_status_t st, their_st;
    int took_table;

    snprintf(launch.id, sizeof(launch.id), "%s", id);
    parent.listen_fd = listen_as_parent(4, &role);
    CHECK(parent.listen_fd >= 0, "no listening socket on loopback");
    role.table_len = 16;
    CHECK(pthread_create(&thread, NULL, serve_as_parent, &parent) == 0, "no parent thread");
    t0 = sc_clock_now();
    st = sc_tree_fetch(&role, 3, size, &launch, NULL, 0, "127.0.0.1:1", t0 + 3.0, &no_store, &result,
                       err, sizeof(err));
    took = sc_clock_now() - t0;
    their_st = sc_tree_fetch(&role, 3, 4, &parent.launch, NULL, 0, "127.0.0.1:1", sc_clock_now() + 3.0,
                             &no_store, &theirs, their_err, sizeof(their_err));
    pthread_join(thread, NULL);
    close(parent.listen_fd);
    took_table = result.size != 0;
    sc_store_result_free(&result);
    sc_store_result_free(&theirs);
    CHECK(st == SC_ERR_PEER_FAILED && !took_table, "rank 3 of launch %s, world size %d, at "
          "a parent of launch job-B, world size 4: status %d, the table %s: %s", id, size,
          st, took_table ? "taken" : "not taken", err);
    CHECK(strstr(err, want), "the sentence lacks '%s': %s", want, err);
    CHECK(strstr(err, "rank 1 of this launch exited, and a rank of another launch on its "
                      "host"),
          "the sentence does not say that rank 1 exited: %s", err);
    CHECK(took < 1.0, "the refusal took %.2f s", took);
    CHECK(their_st == SC_SUCCESS && parent.st == SC_SUCCESS,
          "job-B's rank 3 after the refusal: status %d (%s), its parent's %d", their_st,
          their_err, parent.st);
    return 0;
}

static int test_child_of_another_launch_is_refused_and_takes_no_table(void)
{
    return check_refused_child(4, "job-A",
                               "what answered there is rank 1 of launch job-B (from "
                               "SC_LAUNCH_ID), world size 4, which refused rank 3, of "
                               "launch job-A (from SC_LAUNCH_ID), world size 4");
}

/* The same launch id with another world size (ids given by hand, reused) is another
 * launch too. */
static int test_child_of_another_world_size_is_refused_and_takes_no_table(void)
{
    return check_refused_child(5, "job-B",
                               "what answered there is rank 1 of launch job-B (from "
                               "SC_LAUNCH_ID), world size 4, which refused rank 3, of "
                               "launch job-B (from SC_LAUNCH_ID), world size 5");
}

/* A parent of launch job-A serves ranks 2 and 3: rank 3, started again in that launch
 * (its first process killed between its connect and its hello), with launch job-A, and
 * rank 2 with no launch id (never checked), each get the table. */
static int test_children_of_the_same_launch_or_none_get_the_table(void)
{
    parent_t parent = {.size = 4, .launch = {"job-A", "SC_LAUNCH_ID"}, .children = {2, 3},
                       .n = 2};
    sc_tree_word_t no_store = {-1, 0, SC_SUCCESS, "", 0};
    struct sockaddr_in a = {.sin_family = AF_INET};
    sc_store_role_t role;
    pthread_t thread;
    int first, got[2];

    parent.listen_fd = listen_as_parent(4, &role);
    CHECK(parent.listen_fd >= 0, "no listening socket on loopback");
    role.table_len = 16;
    CHECK(pthread_create(&thread, NULL, serve_as_parent, &parent) == 0, "no parent thread");
    a.sin_port = htons(role.port);
    memcpy(&a.sin_addr, role.addr, 4);
    first = socket(AF_INET, SOCK_STREAM, 0);
    if (first >= 0 && connect(first, (struct sockaddr *)&a, sizeof(a)) == 0)
        usleep(100000);
    if (first >= 0)
        close(first);
    for (int r = 3; r >= 2; r--) {
        sc_store_result_t result = {0};
        char err[SC_ERROR_MAX] = "";
        sc_status_t st = sc_tree_fetch(&role, r, 4, r == 3 ? &parent.launch : &no_launch,
                                       NULL, 0, "127.0.0.1:1", sc_clock_now() + 3.0, &no_store,
                                       &result, err, sizeof(err));

        got[r - 2] = st == SC_SUCCESS ? result.size : (int)st;
        if (st != SC_SUCCESS)
            fprintf(stderr, "rank %d: %s\n", r, err);
        sc_store_result_free(&result);
    }
    pthread_join(thread, NULL);
    close(parent.listen_fd);
    CHECK(got[0] == 4 && got[1] == 4 && parent.st == SC_SUCCESS,
          "ranks 2 and 3: %d and %d (a table's ranks, or the status), the parent's "
          "status %d", got[0], got[1], parent.st);
    return 0;
}

/* Rank 3 of a launch without an id asks for the table at the port where rank 1 of
 * another rendezvous, also without an id and of the same world size (two jobs on one
 * host started by hand; or that rank's shardcomm from before launches were checked),
 * serves its own rank 3 a table whose entry for rank 3 is its own rank 3's blob: the
 * launch check passes, and the child took that table. It now fails at once with
 * SC_ERR_PEER_FAILED, saying its entry is another process's, and takes no table. */
static int test_table_without_this_rank_s_own_entry_is_not_taken(void)
{
    static const uint8_t theirs_blob[8] = "theirs3", mine_blob[8] = "mine--3";
    uint8_t table[4 * sizeof(uint32_t) + sizeof(theirs_blob)] = {0};
    const uint32_t lens[4] = {0, 0, 0, sizeof(theirs_blob)};
    parent_t parent = {.size = 4, .launch = {"", ""}, .children = {3}, .n = 1,
                       .table = table, .table_len = sizeof(table)};
    sc_tree_word_t no_store = {-1, 0, SC_SUCCESS, "", 0};
    sc_store_result_t result = {0};
    char err[SC_ERROR_MAX] = "";
    sc_store_role_t role;
    pthread_t thread;
    sc_status_t st;
    double t0, took;
    int took_table;

    memcpy(table, lens, sizeof(lens));
    memcpy(table + sizeof(lens), theirs_blob, sizeof(theirs_blob));
    parent.listen_fd = listen_as_parent(4, &role);
    CHECK(parent.listen_fd >= 0, "no listening socket on loopback");
    role.table_len = sizeof(table);
    CHECK(pthread_create(&thread, NULL, serve_as_parent, &parent) == 0, "no parent thread");
    t0 = sc_clock_now();
    st = sc_tree_fetch(&role, 3, 4, &no_launch, mine_blob, sizeof(mine_blob), "127.0.0.1:1",
                       t0 + 3.0, &no_store, &result, err, sizeof(err));
    took = sc_clock_now() - t0;
    pthread_join(thread, NULL);
    close(parent.listen_fd);
    took_table = result.size != 0;
    sc_store_result_free(&result);
    CHECK(st == SC_ERR_PEER_FAILED && !took_table,
          "rank 3 given a table holding another process's entry for it: status %d, the "
          "table %s: %s", st, took_table ? "taken" : "not taken", err);
    CHECK(strstr(err, "rank 3 got no table of the ranks' blobs from rank 1") &&
          strstr(err, "the table that came holds another process's entry for rank 3 "
                      "(8 bytes, where rank 3 sent the store 8)") &&
          strstr(err, "rank 1 of this launch exited"),
          "the sentence: %s", err);
    CHECK(took < 1.0, "the refusal took %.2f s", took);
    return 0;
}

int main(int argc, char **argv)
{
    static const sc_test_t tests[] = {
        SC_TEST(ranks_form_a_tree_of_the_fanout_in_rank_order),
        SC_TEST(fanout_of_the_world_size_is_rank_0_serving_every_rank),
        SC_TEST(loopback_ranks_serve_only_loopback_ranks),
        SC_TEST(each_family_and_loopback_side_is_a_tree_of_its_own),
        SC_TEST(rank_that_cannot_listen_serves_none),
        SC_TEST(malformed_table_from_the_parent_is_relayed_unprefixed),
        SC_TEST(silent_parent_is_named_stopped_at_the_deadline),
        SC_TEST(child_dropped_by_a_live_parent_asks_again),
        SC_TEST(child_connecting_to_its_parent_hears_the_store),
        SC_TEST(child_whose_store_connection_was_reset_says_the_store_gave_up),
        SC_TEST(child_takes_whichever_of_its_parent_and_the_store_spoke_first),
        SC_TEST(child_of_another_launch_is_refused_and_takes_no_table),
        SC_TEST(child_of_another_world_size_is_refused_and_takes_no_table),
        SC_TEST(children_of_the_same_launch_or_none_get_the_table),
        SC_TEST(table_without_this_rank_s_own_entry_is_not_taken),
        SC_TEST(parent_given_up_on_by_the_store_tells_its_children_naming_itself),
        SC_TEST(rank_failing_as_its_answer_comes_tells_its_children),
        SC_TEST(rank_given_a_malformed_table_names_itself_to_its_children),
        SC_TEST(rank_given_a_malformed_table_tells_the_store_why),
        SC_TEST(rank_telling_its_children_ends_once_they_heard_the_store),
        SC_TEST(child_finding_its_parent_s_port_closed_takes_the_store_s_word),
        SC_TEST(child_coming_after_a_scanner_ended_its_parent_hears_the_store),
        SC_TEST(rank_finding_the_store_s_failure_waiting_waits_for_no_child),
        SC_TEST(rank_serving_the_table_ends_once_the_store_said_its_failure),
        SC_TEST(rank_given_less_than_the_store_claimed_says_its_word_within_2_s),
        SC_TEST(rank_given_a_large_answer_slowly_reads_it_whole_before_its_word),
        SC_TEST(rank_failing_before_the_store_s_word_ends_at_it),
        SC_TEST(rank_given_the_store_s_failure_by_its_parent_ends_at_the_store_s_word),
        SC_TEST(rank_evicted_by_the_store_three_times_connects_again),
    };
    return sc_run_tests(tests, NELEM(tests), argc > 1 ? argv[1] : NULL);
}
