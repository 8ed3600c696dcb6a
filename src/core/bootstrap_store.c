/* The ranks' side of the TCP rendezvous store: every rank sends its blob to rank 0's store
 * (bootstrap_store_server.c, whose server thread rank 0 starts here) and receives all of
 * them, from rank 0 or down the table's tree (bootstrap_tree.c), or an error naming the
 * ranks that never arrived; and a rank that cannot join telling the others. */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/bootstrap_env.h"
#include "core/bootstrap_store.h"
#include "core/bootstrap_store_arrival.h"
#include "core/bootstrap_store_linger.h"
#include "core/bootstrap_store_net.h"
#include "core/bootstrap_store_server.h"
#include "core/bootstrap_tree.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "shardcomm/api.h"

/* How long rank 0 waits for its store to tell a failed rendezvous to the processes still
 * to come before it returns the failure (sc_store_server_end). */
#define SC_STORE_FAILED_WAIT_S 5.0
/* How many connections in a row closed unanswered, each accepted again, show that what
 * listens is no store: a store answers every rank that connects, and one that went
 * (rank 0 killed) leaves nothing listening. Only closes that came within
 * SC_STORE_EVICT_S of the connect's start count: a store closes unanswered a connection
 * whose hello did not come for that long (it evicts it for one queued behind 64 silent
 * ones, or drops it after 5 s of silence), as it finds a rank stopped between its
 * connect and its hello; such a rank, dropped three times, said that what answered was
 * not a shardcomm store. */
#define SC_STORE_BROKEN_MAX 3
/* How many connections in a row closed unanswered, however late each close came, show
 * the same: a program that closes a connection after SC_STORE_EVICT_S (one waiting for
 * a header of its own protocol, one far away) was taken for a store evicting this rank
 * again and again, for ever with SC_TIMEOUT=inf. A store evicts a rank only while it is
 * stopped before its hello and 64 silent connections fill the store. */
#define SC_STORE_UNANSWERED_MAX 8
/* How long a rank that fails as the store's answer comes reads the rest of the answer
 * while none of it comes, before it says its word (sc_store_tell_own_failure): a
 * malformed answer may claim more bytes than the store sends, which held the rank until
 * its deadline, for ever with SC_TIMEOUT=inf. Rank 0's store drains a peer's unread
 * bytes for 2 s too (sc_store_skip's callers). An answer that keeps coming is read
 * whole, within the rank's deadline and SC_STORE_DRAIN_ALL_S: a bound of 2 s on the
 * whole cut a large table that came slowly off, the rank closed its connection with the
 * rest unread, and the store told every rank that it had exited or was killed. */
#define SC_STORE_DRAIN_S 2.0
#define SC_STORE_DRAIN_ALL_S 60.0


/* This rank's place in the table's tree, from the store's answer. */
typedef struct {
    sc_store_role_t role;
    uint32_t *children; /* role.nchildren ranks */
    int listen_fd;      /* where it serves them; -1: nowhere */
    uint32_t port;      /* listen_fd's port; 0: none */
    int store_fd;       /* its connection to the store, for the word at the tree's end */
} sc_store_place_t;

/* Whether role, the start of the store's answer of len bytes to a rank of a world of
 * size, holds together: its children and, for a child of rank 0, the table make up the
 * rest. */
static int sc_store_role_ok(const sc_store_role_t *role, uint32_t len, int size)
{
    size_t kids = (size_t)role->nchildren * sizeof(uint32_t);

    return role->nchildren < (uint32_t)size && role->parent < (uint32_t)size &&
           role->depth <= role->height && role->height < (uint32_t)size &&
           len == sizeof(*role) + kids + (role->parent ? 0 : role->table_len);
}

/* Rank's place from the store's answer, role and its children (kids, role's nchildren
 * ranks), into *place (the children on the heap, those of an earlier attempt freed), as
 * soon as they came: a failure as the rest comes is told to them
 * (sc_store_tell_children). */
static sc_status_t sc_store_place_begin(const sc_store_role_t *role, const uint8_t *kids,
                                        const char *where, int rank, sc_store_place_t *place)
{
    size_t n = (size_t)role->nchildren * sizeof(uint32_t);

    free(place->children);
    place->children = malloc(n ? n : 1);
    if (!place->children)
        return sc_error(SC_ERR_NO_MEMORY, "rendezvous at %s: rank %d is out of memory for "
                        "its %u children in the table's tree", where, rank, role->nchildren);
    memcpy(place->children, kids, n);
    place->role = *role;
    return SC_SUCCESS;
}

/* The table that came with the store's answer of rank, a child of rank 0 (table_len
 * bytes after the role and children at payload, which this takes over), into *result. */
static sc_status_t sc_store_table_take(uint8_t *payload, const sc_store_place_t *place,
                                       const char *where, int rank, int size,
                                       sc_store_result_t *result)
{
    size_t at = sizeof(place->role) + (size_t)place->role.nchildren * sizeof(uint32_t);
    sc_status_t st;

    if (place->role.parent) {
        free(payload);
        return SC_SUCCESS;
    }
    memmove(payload, payload + at, place->role.table_len);
    st = sc_tree_table_take(payload, place->role.table_len, where, rank, size, result);
    if (st != SC_SUCCESS)
        free(payload);
    return st;
}

/* The rendezvous's failure when what answered at where is no shardcomm store (why: what
 * it did), which no retry mends. */
static sc_status_t sc_store_foreign(const char *where, const char *why)
{
    return sc_error(SC_ERR_INVALID_ARG, "rendezvous failed: what answered at %s is not a "
                    "shardcomm store (%s): another program listens on that port; check the "
                    "master address and port (SC_MASTER_ADDR and SC_MASTER_PORT, or "
                    "MASTER_ADDR and MASTER_PORT + 1)", where, why);
}

/* The rendezvous's failure when rank 0's store reset this rank's connection (errno
 * ECONNRESET) as the rest of its answer came: the store gives up so on a rank that took
 * nothing more of its answer by the store's deadline (sc_store_tell_outcome), and rank 0
 * lives on (it read all this rank sent, so that rank 0 exited or was killed ends the
 * connection, not resets it); else SC_IN_PROGRESS, a connection that broke. It was said
 * that the store closed the connection and nothing listened any more: rank 0 exited or
 * was killed. The sentence names rank, not "this rank": its children are told it
 * (sc_store_tell_children). */
static sc_status_t sc_store_given_up(const char *where, int rank, int err)
{
    if (err != ECONNRESET)
        return SC_IN_PROGRESS;
    return sc_error(SC_ERR_TIMEOUT, "rendezvous at %s: rank 0's store gave up on rank %d "
                    "before it took its whole answer (the store reset the connection): rank "
                    "%d took nothing more of it by " SC_STORE_DEADLINE_TEXT ": it was stopped "
                    "or too slow; the other ranks were told so", where, rank, rank);
}

/* A rank whose exchange with the store failed for a reason of its own once the store's
 * answer began (the answer or its table came malformed, or no memory for them: st, this
 * thread's sentence, which names the rank) says so on fd as its word to the store, as
 * it does at the tree's end (sc_store_tree_part), the rest of the answer (left bytes)
 * read first, since the store reads a rank's word once its answer went whole: as long
 * as it comes, until SC_STORE_DRAIN_S passed without a byte, deadline or
 * SC_STORE_DRAIN_ALL_S (past it, the word goes where the socket takes it at once). The
 * store fails every rank with that sentence, where it found the connection closed and
 * told them that this rank had exited or was killed. Returns st. */
static sc_status_t sc_store_tell_own_failure(int fd, sc_status_t st, size_t left,
                                             double deadline)
{
    double until = sc_clock_now() + SC_STORE_DRAIN_ALL_S;
    char text[SC_ERROR_MAX];

    if (until > deadline)
        until = deadline;
    snprintf(text, sizeof(text), "%s", sc_error_text_unprefixed());
    /* The word goes also where the answer did not come whole: the store may read it. */
    sc_store_net_drain(fd, left, SC_STORE_DRAIN_S, until);
    sc_store_net_reply(fd, st, text, (uint32_t)strlen(text), until);
    return st;
}

/* One attempt: SC_IN_PROGRESS when the connection broke and a retry may succeed. A rank
 * other than 0 listens, beside its connection to the store, for the children it may be
 * given in the table's tree, and says on which port. The answer is awaited until
 * deadline, and once its place in the tree came, the rest as long as the store waits
 * for it (timeout_s from then, SC_STORE_TREE_LEVEL_S more per level and 2 more). */
static sc_status_t sc_store_exchange(int fd, int rank, int size,
                                     const sc_store_launch_t *launch, const void *blob,
                                     size_t len, const char *where, double deadline,
                                     double timeout_s, sc_store_place_t *place,
                                     sc_store_result_t *result)
{
    sc_store_hello_t h = {SC_STORE_MAGIC_HELLO, SC_STORE_PROTOCOL, SC_STORE_JOIN,
                          (uint32_t)rank, (uint32_t)size, (uint32_t)len, 0, *launch};
    sc_store_reply_t rep;
    sc_store_role_t role;
    char text[SC_ERROR_MAX];
    uint8_t *payload;
    size_t head;
    double answered, rest = deadline; /* the store's deadline, once known */
    sc_status_t st;
    int got, err;

    if (rank != 0 && place->listen_fd < 0) {
        if (sc_store_net_listen_beside(fd, &place->listen_fd, &place->port) == 0) {
            sc_log(SC_LOG_INFO, "rendezvous: rank %d listens on port %u for the children it "
                   "may be given in the table's tree", rank, place->port);
        } else {
            sc_log(SC_LOG_WARN, "rendezvous: this rank cannot listen for its children in "
                   "the table's tree (%s): it serves none", strerror(errno));
            place->listen_fd = -1;
            place->port = 0;
        }
    }
    h.port = place->port;
    if (sc_store_net_io(fd, &h, sizeof(h), deadline, 1) || sc_store_net_io(fd, (void *)blob, len, deadline, 1))
        return SC_IN_PROGRESS;
    got = sc_store_net_read_reply(fd, &rep, deadline);
    answered = sc_clock_now();
    if (got > 0)
        return sc_store_foreign(where, memcmp(&rep, &h, sizeof(rep)) == 0
                                           ? "it sent this rank's own hello back"
                                           : "its answer is not one a store sends");
    if (got < 0)
        return SC_IN_PROGRESS;
    if (rep.status != SC_SUCCESS) {
        got = sc_store_net_read_text(fd, &rep, text, deadline);
        if (got > 0)
            return sc_store_foreign(where, "the sentence of its error is not text");
        if (got < 0)
            return SC_IN_PROGRESS;
        return sc_error((sc_status_t)rep.status, "%s", text);
    }
    if (rep.len < sizeof(role))
        return sc_store_tell_own_failure(
            fd, sc_error(SC_ERR_SYSTEM, "rendezvous at %s: the store's answer to rank %d came "
                         "malformed (%u bytes)", where, rank, rep.len),
            rep.len, deadline);
    payload = malloc((size_t)rep.len + 1);
    if (!payload)
        return sc_store_tell_own_failure(
            fd, sc_error(SC_ERR_NO_MEMORY, "rendezvous at %s: rank %d is out of memory for "
                         "the store's answer (%u bytes)", where, rank, rep.len),
            rep.len, deadline);
    /* The store waits for a rank that stalls while its answer goes (stopped, the table
     * filling its socket) until its own deadline, SC_TIMEOUT after its first answer and
     * 2 s per level of the tree and 2 more; this rank's deadline counts from its start
     * and passed first where the others arrived late: a rank stopped and resumed within
     * the store's deadline gave up on the rest of the table and failed the rendezvous. */
    if (sc_store_net_io(fd, payload, sizeof(role), deadline, 0) != 0)
        goto err_given_up;
    memcpy(&role, payload, sizeof(role));
    if (!sc_store_role_ok(&role, rep.len, size)) {
        free(payload);
        return sc_store_tell_own_failure(
            fd, sc_error(SC_ERR_SYSTEM, "rendezvous at %s: the store's answer to rank %d came "
                         "malformed (%u bytes)", where, rank, rep.len),
            rep.len - sizeof(role), deadline);
    }
    answered += timeout_s + SC_STORE_TREE_LEVEL_S * (role.height + 2.0);
    if (answered > rest)
        rest = answered;
    head = sizeof(role) + (size_t)role.nchildren * sizeof(uint32_t);
    if (sc_store_net_io(fd, payload + sizeof(role), head - sizeof(role), rest, 0) != 0)
        goto err_given_up;
    st = sc_store_place_begin(&role, payload + sizeof(role), where, rank, place);
    if (st != SC_SUCCESS) {
        free(payload);
        return sc_store_tell_own_failure(fd, st, rep.len - head, rest);
    }
    if (sc_store_net_io(fd, payload + head, rep.len - head, rest, 0) != 0)
        goto err_given_up;
    st = sc_store_table_take(payload, place, where, rank, size, result);
    return st == SC_SUCCESS ? st : sc_store_tell_own_failure(fd, st, 0, rest);
err_given_up:
    err = errno;
    free(payload);
    return sc_store_given_up(where, rank, err);
}

/* The tree's part of the rendezvous for a rank of launch the store answered (place; its
 * parent and its children check launch and size): the table from its parent (its entry
 * for this rank checked against blob, len bytes, the one this rank sent), unless it
 * came from the store, then served to its children (their parent's failure instead,
 * where it has none), within timeout_s of the store's answer and SC_STORE_TREE_LEVEL_S
 * more per level below rank 0; then its word to the store (it has the table, or its
 * failure) and the store's (every rank has it, or the first failure, such as a rank that
 * exited or was killed). This rank's own failure is what it returns where it has one,
 * else the store's. */
static sc_status_t sc_store_tree_part(const sc_store_place_t *place, int rank, int size,
                                      const sc_store_launch_t *launch, const void *blob,
                                      size_t len, const char *where, double timeout_s,
                                      sc_store_result_t *result)
{
    double now = sc_clock_now();
    double deadline = now + timeout_s + SC_STORE_TREE_LEVEL_S * (double)place->role.depth;
    /* The store waits for every rank's word 2 levels past the tree's height. */
    double end = now + timeout_s + SC_STORE_TREE_LEVEL_S * ((double)place->role.height + 3.0);
    char err[SC_ERROR_MAX] = "";
    sc_tree_word_t word = {place->store_fd, 0, SC_SUCCESS, "", 0};
    struct pollfd pfd = {place->store_fd, POLLIN, 0};
    sc_status_t st = SC_SUCCESS;

    /* The store spoke already: the rendezvous failed while this rank was away (stopped
     * after it was answered, as its parent gave up on it), and the store says why. Its
     * children waiting for the table are told so, as a parent that hears it while it
     * serves tells them: left unserved, they would take it for dead. Where the store
     * said it whole, it said it to them too: only those whose connections wait are
     * answered (sc_tree_serve), where this rank waited 2 s for children that had heard
     * it before they came, and never came. */
    if (poll(&pfd, 1, 0) > 0) {
        word.said = sc_store_net_read_word(place->store_fd, where, rank, now + 2.0, 0,
                                           &word.st, word.text) == 0;
        if (word.st != SC_SUCCESS) {
            word.heard = 1; /* the children are not to wait for it again */
            if (!place->role.parent) /* the table came with the store's answer */
                sc_store_result_free(result);
            if (place->role.nchildren > 0)
                sc_tree_serve(place->listen_fd, rank, size, launch, place->children,
                              (int)place->role.nchildren, word.st, word.text, NULL, 0, where,
                              now + SC_TREE_TOLD_S, &word);
            return sc_error(word.st, "%s", word.text);
        }
    }
    if (place->role.parent)
        st = sc_tree_fetch(&place->role, rank, size, launch, blob, len, where, deadline,
                           &word, result, err, sizeof(err));
    if (place->role.nchildren > 0) {
        /* Where the store spoke as this rank waited for its parent, the children still
         * to come are told its failure for a while, as they are while it serves (only
         * those at hand, where the store said it whole: sc_tree_serve). */
        sc_status_t served = sc_tree_serve(place->listen_fd, rank, size, launch,
                                           place->children, (int)place->role.nchildren, st, err,
                                           st == SC_SUCCESS ? result->storage : NULL,
                                           place->role.table_len, where,
                                           word.heard ? sc_clock_now() + SC_TREE_TOLD_S
                                                      : deadline + SC_STORE_TREE_LEVEL_S,
                                           &word);
        if (st == SC_SUCCESS && served != SC_SUCCESS) {
            snprintf(err, sizeof(err), "%s", sc_error_text_unprefixed());
            sc_store_result_free(result);
            st = served;
        }
    }
    /* Where the word cannot be sent, the store's connection broke: the read says so. */
    if (!word.heard) {
        int said = sc_store_net_reply(place->store_fd, st, err, (uint32_t)strlen(err),
                                      sc_clock_now() + 5.0) == 0;

        if (!said)
            end = sc_clock_now() + 1.0;
        sc_store_net_read_word(place->store_fd, where, rank, end, said, &word.st,
                               word.text);
    }
    if (st != SC_SUCCESS)
        return st; /* its own sentence, set already, names the rank it concerns */
    if (word.st == SC_SUCCESS)
        return SC_SUCCESS;
    sc_store_result_free(result);
    return sc_error(word.st, "%s", word.text);
}

/* A rank whose exchange with the store failed once its place came (the store gave up on
 * it as the rest of its answer came, the table came malformed) gives the children the
 * store gave it its failure st (this thread's sentence) in place of the table, as they
 * come, for SC_TREE_TOLD_S at most, as a parent that fails in the tree tells them: they
 * found its port closed and said that it had exited or was killed. Also where it told
 * the store its own failure, which the store tells every rank: its word in the socket is
 * not yet the store's word to the children, and a child that found this rank's port
 * closed before the store's word came named this rank exited or killed. */
static void sc_store_tell_children(const sc_store_place_t *place, int rank, int size,
                                   const sc_store_launch_t *launch, const char *where,
                                   sc_status_t st)
{
    sc_tree_word_t no_store = {-1, 0, SC_SUCCESS, "", 0};
    char text[SC_ERROR_MAX];

    snprintf(text, sizeof(text), "%s", sc_error_text_unprefixed());
    sc_tree_serve(place->listen_fd, rank, size, launch, place->children,
                  (int)place->role.nchildren, st, text, NULL, 0, where,
                  sc_clock_now() + SC_TREE_TOLD_S, &no_store);
}

/* A world of one rank has only its own blob: no store, so that a single process (a
 * one-rank sc-bench, sc-info, a job beside another) never needs the port, which may
 * be taken by another job or by a launcher's own store. */
static sc_status_t sc_store_alone(const void *blob, size_t len, sc_store_result_t *result)
{
    result->size = 1;
    result->lens = calloc(1, sizeof(size_t));
    result->blobs = calloc(1, sizeof(uint8_t *));
    result->storage = malloc(len ? len : 1);
    if (!result->lens || !result->blobs || !result->storage) {
        sc_store_result_free(result);
        return sc_error(SC_ERR_NO_MEMORY, "rendezvous: out of memory");
    }
    memcpy(result->storage, blob, len);
    result->lens[0] = len;
    result->blobs[0] = result->storage;
    return SC_SUCCESS;
}

/* A world of size ranks holds up to 2 size descriptors on a rank: rank 0's store holds
 * a connection per rank while it gathers, and UCX over TCP a socket per peer. The soft
 * limit of open files is raised that far, within the hard limit (1024, a common
 * default, failed the rendezvous of 1000 ranks); past the hard limit rank 0 tells
 * every rank when it runs out (sc_store_refuse_all). */
static void sc_store_raise_nofile(int size)
{
    rlim_t need = 2 * (rlim_t)size + 256, was;
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= need)
        return;
    was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
    if (rl.rlim_cur > was && setrlimit(RLIMIT_NOFILE, &rl) == 0)
        sc_log(SC_LOG_INFO, "rendezvous: the limit of open files raised from %llu to %llu "
               "for a world of %d", (unsigned long long)was, (unsigned long long)rl.rlim_cur,
               size);
}

/* Rank 0's end of its store (server, whose thread runs) once its own client has st: the
 * thread joined and the server freed, its verdict returned where st has none. A failed
 * rendezvous's store tells the processes still to come: rank 0 waits
 * SC_STORE_FAILED_WAIT_S for that at most, so that those starting beside it are told
 * before its process may exit (they waited their own SC_TIMEOUT on a store gone), then
 * returns the failure and hands the store over to tell the rest (sc_store_linger_add; a
 * rank that never came held rank 0 here for ever with SC_TIMEOUT=inf). */
static sc_status_t sc_store_server_end(sc_store_server_t *server, sc_status_t st)
{
    if (__atomic_load_n(&server->failed, __ATOMIC_ACQUIRE)) {
        struct timespec until = sc_clock_realtime_after((long)(SC_STORE_FAILED_WAIT_S * 1e9));

        if (st == SC_IN_PROGRESS)
            st = sc_error(server->verdict, "%s", server->verdict_text);
        /* Held meanwhile: a new rendezvous on its port (sc_comm_init on another thread)
         * stops it and takes the port, where its bind failed naming this process. */
        sc_store_linger_hold(server);
        if (pthread_timedjoin_np(server->thread, NULL, &until) != 0) {
            sc_store_linger_add(server);
            return st;
        }
        sc_store_linger_release(server);
    } else {
        pthread_join(server->thread, NULL);
        if (st == SC_IN_PROGRESS && server->verdict != SC_SUCCESS)
            st = sc_error(server->verdict, "%s", server->verdict_text);
    }
    sc_store_linger_unwatch(server);
    sc_store_server_fini(server);
    free(server);
    return st;
}

sc_status_t sc_store_allgather(const char *addr, int port, int rank, int size,
                               const sc_store_launch_t *launch, double timeout_s, int fanout,
                               const void *blob, size_t len, sc_store_result_t *result)
{
    sc_store_server_t *server = NULL;
    sc_store_place_t place = {.listen_fd = -1, .store_fd = -1};
    double start = sc_clock_now(), deadline = start + timeout_s;
    /* Clients wait a little longer than the server so they hear its verdict. */
    double client_deadline = deadline + 3.0;
    sc_status_t st = SC_IN_PROGRESS;
    char why[384] = "could not be reached", where[300];
    int closed = 0, unanswered = 0, err = 0, exchanged;

    if (size == 1 && rank == 0)
        return sc_store_alone(blob, len, result);
    sc_store_raise_nofile(size);
    sc_store_net_where(addr, port, where, sizeof(where));
    sc_store_linger_reap(port);
    if (rank == 0) {
        /* On the heap: after a failure the thread may outlive this call. */
        server = malloc(sizeof(*server));
        if (!server)
            return sc_error(SC_ERR_NO_MEMORY, "rendezvous: out of memory");
        sc_store_server_init(server, addr, port, size, launch, start, deadline);
        server->fanout = fanout;
        server->timeout_s = timeout_s;
        sc_store_net_check_master(addr, server->note, sizeof(server->note));
        if (server->note[0])
            sc_log(SC_LOG_WARN, "%s", server->note);
        st = sc_store_server_listen(server);
        if (st != SC_SUCCESS)
            goto err_free_server;
        if (pthread_create(&server->thread, NULL, sc_store_serve, server) != 0) {
            sc_store_linger_unwatch(server);
            close(server->listen_fd);
            st = sc_error(SC_ERR_SYSTEM, "rendezvous server thread could not start");
            goto err_free_server;
        }
        st = SC_IN_PROGRESS;
    }
    while (st == SC_IN_PROGRESS && sc_clock_now() < client_deadline) {
        /* Rank 0's client stops once its own server has answered: a verdict reached
         * before it connected (two processes claiming one rank) is read below. */
        /* After a connection that broke before the store answered, nothing listening
         * any more means the store is gone: rank 0 exited or was killed (a store
         * serves until every rank has its answer). That is said at once, not after
         * the timeout as "not started". */
        double tried = sc_clock_now();
        double until = unanswered > 0 && client_deadline > tried + 1.0 ? tried + 1.0
                                                                       : client_deadline;
        int fd;

        err = 0;
        fd = sc_store_net_connect(rank == 0 ? "127.0.0.1" : addr, port, until,
                              rank == 0 ? &server->done : NULL, why, sizeof(why), &err);
        if (fd == -2) {
            st = sc_error(SC_ERR_INVALID_ARG, "rendezvous failed: the store of rank 0 at %s "
                          "cannot be reached: %s (the master address is rank 0's host name "
                          "or IP address)", where, why);
            break;
        }
        if (fd < 0 && unanswered > 0 && err == ECONNREFUSED) {
            st = sc_error(SC_ERR_PEER_FAILED, "rendezvous failed after %.1f s: the store of "
                          "rank 0 at %s closed this rank's connection before it answered, "
                          "and nothing listens there any more: rank 0 exited or was killed "
                          "during the rendezvous", sc_clock_now() - start, where);
            break;
        }
        if (fd < 0 && until < client_deadline &&
            !(rank == 0 && __atomic_load_n(&server->done, __ATOMIC_ACQUIRE)))
            continue;
        if (fd < 0)
            break;
        snprintf(why, sizeof(why), "never answered");
        st = sc_store_exchange(fd, rank, size, launch, blob, len, where, client_deadline,
                               timeout_s, &place, result);
        if (st == SC_SUCCESS)
            place.store_fd = fd; /* the word at the tree's end comes on it */
        else
            close(fd);
        if (st == SC_IN_PROGRESS && sc_clock_now() < client_deadline) {
            /* A close that came SC_STORE_EVICT_S or more after the connect began may be
             * the store's eviction of this rank, stopped before its hello went. */
            closed = sc_clock_now() - tried < SC_STORE_EVICT_S ? closed + 1 : 0;
            unanswered++;
        }
        if (st == SC_IN_PROGRESS &&
            (closed == SC_STORE_BROKEN_MAX || unanswered == SC_STORE_UNANSWERED_MAX)) {
            snprintf(why, sizeof(why), "it took this rank's connection and closed it "
                     "without an answer %d times in a row, where a store answers every rank "
                     "(a store of rendezvous protocol 1 or 2, a shardcomm from before "
                     "2026-12-07, closes so a hello of this one's protocol, %u)",
                     closed == SC_STORE_BROKEN_MAX ? closed : unanswered, SC_STORE_PROTOCOL);
            st = sc_store_foreign(where, why);
        }
        if (st == SC_IN_PROGRESS)
            usleep(50000);
    }
    /* Rank 0's store serves until every rank, its own client too, said it has the table. */
    exchanged = st == SC_SUCCESS;
    if (exchanged)
        st = sc_store_tree_part(&place, rank, size, launch, blob, len, where, timeout_s,
                                result);
    if (rank == 0)
        st = sc_store_server_end(server, st);
    if (st == SC_IN_PROGRESS)
        st = sc_error(SC_ERR_TIMEOUT,
                      "rendezvous timed out after %.1f s: the store of rank 0 at %s %s",
                      sc_clock_now() - start, where, why);
    if (!exchanged && place.children && place.role.nchildren > 0 && place.listen_fd >= 0)
        sc_store_tell_children(&place, rank, size, launch, where, st);
    if (place.store_fd >= 0)
        close(place.store_fd);
    if (place.listen_fd >= 0)
        close(place.listen_fd);
    free(place.children);
    return st;

err_free_server:
    sc_store_server_fini(server);
    free(server);
    return st;
}

void sc_store_tell_failure(const char *addr, int port, int rank, int size,
                           const sc_store_launch_t *launch, double timeout_s, const char *text)
{
    char saved[SC_ERROR_MAX], why[384];
    double start = sc_clock_now();
    double deadline = start + (timeout_s < SC_STORE_TELL_S ? timeout_s : SC_STORE_TELL_S);
    int err = 0;

    if (size <= 1)
        return;
    snprintf(saved, sizeof(saved), "%s", sc_last_error());
    sc_store_linger_reap(port);
    if (rank == 0) {
        /* On the heap, waited for as a failed rendezvous's store (sc_store_server_end):
         * told here until every rank was, rank 0's sc_comm_init returned only after
         * min(SC_TIMEOUT, SC_STORE_TELL_S) where a rank never came. */
        sc_store_server_t *server = malloc(sizeof(*server));

        if (server) {
            sc_store_server_init(server, addr, port, size, launch, start, deadline);
            if (sc_store_server_tell_failure(server, text) == 0) {
                sc_store_server_end(server, SC_ERR_PEER_FAILED);
            } else {
                sc_store_server_fini(server);
                free(server);
            }
        }
    } else {
        size_t n = strlen(text);
        sc_store_hello_t h = {SC_STORE_MAGIC_HELLO, SC_STORE_PROTOCOL, SC_STORE_FAILED,
                              (uint32_t)rank, (uint32_t)size,
                              (uint32_t)(n < SC_ERROR_MAX ? n : SC_ERROR_MAX - 1), 0,
                              *launch};
        int fd = sc_store_net_connect(addr, port, deadline, NULL, why, sizeof(why), &err);
        if (fd >= 0) {
            sc_store_reply_t rep;
            /* The answer is read so that rank 0's store counts this rank as told. */
            if (sc_store_net_io(fd, &h, sizeof(h), deadline, 1) == 0 &&
                sc_store_net_io(fd, (void *)text, h.len, deadline, 1) == 0 &&
                sc_store_net_read_reply(fd, &rep, deadline) == 0)
                sc_store_net_skip(fd, rep.len, deadline);
            close(fd);
        }
    }
    sc_error_set_text(saved);
}

void sc_store_result_free(sc_store_result_t *result)
{
    free(result->lens);
    free(result->blobs);
    free(result->storage);
    memset(result, 0, sizeof(*result));
}
