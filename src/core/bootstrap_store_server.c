/* Rank 0's side of the rendezvous store: the server thread (hellos, refusals of other
 * launches and protocols, the answer with each rank's place in the table's tree, the
 * watch until every rank has the table), and the refusal of every rank when rank 0
 * cannot serve (bootstrap_store_server.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/bootstrap_env.h"
#include "core/bootstrap_store.h"
#include "core/bootstrap_store_net.h"
#include "core/bootstrap_store_server.h"
#include "core/bootstrap_tree.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "core/text_list.h"

/* How often a store telling a failed rendezvous looks whether it was stopped. */
#define SC_STORE_STOP_LOOK_S 0.1

/* Whether s was asked to stop telling a failed rendezvous (sc_store_linger_reap, the
 * library's unload: sc_unload_threads_end). */
static int sc_store_stopped(sc_store_server_t *s)
{
    int stop;

    pthread_mutex_lock(&s->lock);
    stop = s->stop;
    pthread_mutex_unlock(&s->lock);
    return stop;
}

/* Closes s's listening socket under its lock, which a fork holds across (the child
 * closes its copy of the socket: bootstrap_store_linger.c), so that the child never
 * closes the number once another descriptor has it. */
static void sc_store_close_listen(sc_store_server_t *s)
{
    pthread_mutex_lock(&s->lock);
    close(s->listen_fd);
    s->listen_fd = -1;
    pthread_mutex_unlock(&s->lock);
}

/* Waits until fd has events (POLLIN, POLLOUT) or deadline passes, looking every
 * SC_STORE_STOP_LOOK_S whether s was stopped: 1 when they came, 0 at the deadline or once
 * s was stopped, -1 when the poll failed. Every wait of the store on one connection goes
 * through it, so that a store telling a failed rendezvous ends within moments of its
 * stop (the library's unload joins it within 2 s, or leaves it running in the unmapped
 * code), where a reply or a skip waited up to 2 s per connection and a hello up to 5 s. */
static int sc_store_wait(sc_store_server_t *s, int fd, short events, double deadline)
{
    for (;;) {
        struct pollfd pfd = {fd, events, 0};
        double look = sc_clock_now() + SC_STORE_STOP_LOOK_S;
        int ready;

        if (sc_store_stopped(s))
            return 0;
        ready = poll(&pfd, 1, sc_clock_ms_until(look < deadline ? look : deadline));
        if (ready > 0)
            return 1;
        if (ready < 0 && errno != EINTR)
            return -1;
        if (ready == 0 && sc_clock_now() >= deadline)
            return 0;
    }
}

/* Answers fd with st and its sentence text before deadline (sc_store_wait), as
 * sc_store_net_reply does. */
static void sc_store_reply_error(sc_store_server_t *s, int fd, sc_status_t st,
                                 const char *text, double deadline)
{
    sc_store_reply_t rep = {SC_STORE_MAGIC, st, (uint32_t)strlen(text)};
    size_t sent = 0;

    while (sc_store_net_send_some(fd, &rep, sizeof(rep), text, rep.len, &sent) == 0 &&
           sc_store_wait(s, fd, POLLOUT, deadline) > 0)
        ;
}

/* Reads and drops len bytes of fd (SIZE_MAX: until it closes the connection) before
 * deadline (sc_store_wait): a peer answered before all it sent was read, whose close
 * with unread bytes would reset the connection before the answer reached it. */
static void sc_store_skip(sc_store_server_t *s, int fd, size_t len, double deadline)
{
    uint8_t buf[4096];

    while (len > 0 && sc_store_wait(s, fd, POLLIN, deadline) > 0) {
        ssize_t n = recv(fd, buf, len < sizeof(buf) ? len : sizeof(buf), MSG_DONTWAIT);

        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
            return;
        if (n > 0 && len != SIZE_MAX)
            len -= (size_t)n;
    }
}

/* Keeps the refusal of a process that claimed rank (-1: not known) for why, where it is
 * not kept already and there is room, so that a timeout waiting for that rank says why
 * it did not arrive: "rank 1 never arrived" hid that a process claiming it came and was
 * turned away. */
static void sc_store_keep_refusal(sc_store_server_t *s, int rank, const char *why)
{
    for (int k = 0; k < s->nrefused; k++)
        if (s->refused[k].rank == rank && strcmp(s->refused[k].why, why) == 0)
            return;
    if (s->nrefused == SC_STORE_REFUSALS_MAX)
        return;
    s->refused[s->nrefused].rank = rank;
    snprintf(s->refused[s->nrefused].why, sizeof(s->refused[0].why), "%s", why);
    s->nrefused++;
}

/* Whether the process that sent hello h belongs to another launch than the store's, both
 * known (two launches given one master port): then err holds the sentence it is answered
 * with, and rank 0 logs it. Its slot is not taken, and the store's launch goes on. */
static int sc_store_other_launch(sc_store_server_t *s, const sc_store_hello_t *h,
                                 char *err, size_t len)
{
    sc_store_launch_t l = h->launch;
    char why[200];

    sc_bootstrap_launch_text(&l);
    if (!s->launch.id[0] || !l.id[0] || strcmp(l.id, s->launch.id) == 0)
        return 0;
    snprintf(err, len, "rendezvous failed: the store at %s serves launch %s (from %s), this "
             "rank belongs to launch %s (from %s): two launches share the master port (two "
             "jobs on one host given the same port, or a rank of an earlier launch still "
             "running); give each launch a port of its own (SC_MASTER_PORT, or MASTER_PORT), "
             "and where ranks are started by hand, the same SC_LAUNCH_ID to every rank of one "
             "launch", s->where, s->launch.id, s->launch.from, l.id, l.from);
    sc_log(SC_LOG_WARN, "rendezvous at %s: refused a process claiming rank %u of world size "
           "%u: it belongs to launch %s (from %s), this store serves launch %s (from %s)",
           s->where, h->rank, h->size, l.id, l.from, s->launch.id, s->launch.from);
    snprintf(why, sizeof(why), "it belongs to launch %.60s (from %.30s)", l.id, l.from);
    sc_store_keep_refusal(s, h->rank < (uint32_t)s->size ? (int)h->rank : -1, why);
    return 1;
}

/* Answers the process of another launch on fd with err, and closes fd. The unread bytes
 * of its blob are read first: a close with unread bytes resets the connection, and the
 * reset may reach the process before the answer. */
static void sc_store_refuse_other(sc_store_server_t *s, int fd, size_t unread,
                                  const char *err)
{
    sc_store_skip(s, fd, unread, sc_clock_now() + 2.0);
    sc_store_reply_error(s, fd, SC_ERR_MISMATCH, err, sc_clock_now() + 2.0);
    close(fd);
}

/* Whether hello h, of which its magic and protocol came, is a rank's of another protocol
 * (a shardcomm of another version, or one from before the protocol was in the hello):
 * then it is answered SC_ERR_MISMATCH naming both: it takes no slot, and the store's
 * launch goes on. What it sent after is read by the caller before fd is closed
 * (SC_STORE_REFUSED_S): a close with unread bytes resets the connection, and the reset
 * may reach the process before the answer. 0 where it is no rendezvous's hello. */
static int sc_store_refuse_protocol(sc_store_server_t *s, int fd, const sc_store_hello_t *h)
{
    char theirs[96], err[SC_ERROR_MAX], why[200];
    int rank = -1;

    if (h->magic == SC_STORE_MAGIC || h->magic == SC_STORE_MAGIC_FAILED) {
        snprintf(theirs, sizeof(theirs), "protocol 1 or 2 (a shardcomm from before "
                 "2026-12-07, whose hello carries no protocol)");
        /* Their hello has the rank where this one has the protocol. */
        if (h->protocol < (uint32_t)s->size)
            rank = (int)h->protocol;
    } else if (h->magic == SC_STORE_MAGIC_HELLO)
        snprintf(theirs, sizeof(theirs), "protocol %u", h->protocol);
    else
        return 0;
    snprintf(err, sizeof(err), "rendezvous failed: the store at %s speaks rendezvous protocol "
             "%u (shardcomm %d.%d.%d), this rank %s: every rank of a launch must run the same "
             "shardcomm; check which library each rank loads (the package installed on each "
             "node, LD_LIBRARY_PATH)", s->where, SC_STORE_PROTOCOL, SC_VERSION_MAJOR,
             SC_VERSION_MINOR, SC_VERSION_PATCH, theirs);
    sc_log(SC_LOG_WARN, "rendezvous at %s: refused a process of rendezvous %s; this store "
           "speaks protocol %u", s->where, theirs, SC_STORE_PROTOCOL);
    snprintf(why, sizeof(why), "it runs rendezvous %s, this store protocol %u", theirs,
             SC_STORE_PROTOCOL);
    sc_store_keep_refusal(s, rank, why);
    sc_store_reply_error(s, fd, SC_ERR_MISMATCH, err, sc_clock_now() + 2.0);
    return 1;
}

/* Whether hello h is one the store serves: a rank's, or a failing rank's, with a blob of
 * at most SC_STORE_MAX_BLOB. */
static int sc_store_hello_served(const sc_store_hello_t *h)
{
    return (h->kind == SC_STORE_JOIN || h->kind == SC_STORE_FAILED) &&
           h->len <= SC_STORE_MAX_BLOB;
}

/* A connection accepted by the store whose hello and blob (or failure text) are still
 * coming: read as they come, every such connection under one poll, so that one that goes
 * silent (a port scanner, a health check, a rank stopped between its connect and its
 * hello) holds up no later arrival; and one of another protocol, answered, whose bytes
 * are read under the same poll until it closes (refused). */
typedef struct {
    int fd;
    double until;       /* dropped where nothing more came by then */
    double by;          /* dropped where its hello and blob had not all come by then */
    size_t got;         /* bytes read: of the hello, then of its blob */
    sc_store_hello_t h;
    uint8_t *blob;      /* h.len bytes and a NUL, once the hello came */
    int refused;        /* answered as another protocol's: read and dropped until it closes */
} sc_store_arrival_t;

/* How long an arriving connection may go silent before its hello and blob came. */
#define SC_STORE_SILENT_S 5.0
/* How long its hello and blob may take in all: one that trickles its bytes, each within
 * SC_STORE_SILENT_S, is dropped too (5 s for the hello and 5 for the blob, as when the
 * store read them in turn). */
#define SC_STORE_ARRIVAL_S (2.0 * SC_STORE_SILENT_S)
/* Arriving connections read at once; more wait in the listening socket's queue, or take
 * the place of one silent SC_STORE_EVICT_S before its hello came. */
#define SC_STORE_ARRIVING_MAX 64
/* How long an arriving connection may go silent before its hello came and still keep its
 * slot from one queued behind every slot taken (sc_store_arrival_evictable): a rank sends
 * its hello as its connection is made, and 64 silent connections (port scanners, health
 * checks) held every rank behind them until they were dropped at SC_STORE_SILENT_S. */
#define SC_STORE_EVICT_S 0.25
/* How long after the last rank arrived the connections queued are still accepted to be
 * judged (sc_store_accept_queued): those accepted by then have their own times (a hello
 * within 1 s, all of it within SC_STORE_ARRIVAL_S), and those queued still are reset as
 * the store closes its listening socket. A steady flood of other connections held every
 * rank's answer for as long as it went on, the queue never empty. */
#define SC_STORE_JUDGED_S 1.0
/* How long the connection of a refused process of another protocol is read after its
 * answer, until it closes as it read the answer: the rest of its hello and blob may still
 * come, and a close with unread bytes resets the connection. */
#define SC_STORE_REFUSED_S 2.0

/* Reads and drops what refused arrival k sent, without waiting: 0 while its connection
 * is open, -1 once it closed or broke. */
static int sc_store_arrival_drain(sc_store_arrival_t *k)
{
    uint8_t buf[4096];
    ssize_t n = recv(k->fd, buf, sizeof(buf), MSG_DONTWAIT);

    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    return n > 0 ? 0 : -1;
}

/* Reads what came on k, without waiting: 0 while its hello and blob come, 1 once both
 * came (a hello of this protocol that the store serves), -1 when it is to be dropped (it
 * closed, or it is no rendezvous's or none the store serves), -2 when it is a rank's of
 * another protocol, answered (sc_store_refuse_protocol), its connection open: what comes
 * after is the caller's to read (sc_store_arrival_drain, where k->refused is set: 0, then
 * -1 once it closed). */
static int sc_store_arrival_read(sc_store_server_t *s, sc_store_arrival_t *k)
{
    const size_t head = offsetof(sc_store_hello_t, kind); /* magic and protocol */
    uint8_t *to = k->got < sizeof(k->h) ? (uint8_t *)&k->h + k->got
                                        : k->blob + (k->got - sizeof(k->h));
    size_t want = k->got < head ? head - k->got
                  : k->got < sizeof(k->h) ? sizeof(k->h) - k->got
                                          : sizeof(k->h) + k->h.len - k->got;
    ssize_t n;

    if (k->refused)
        return sc_store_arrival_drain(k);
    n = want ? recv(k->fd, to, want, MSG_DONTWAIT) : 0;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    if (want && n <= 0)
        return -1;
    k->got += (size_t)n;
    if (k->got == head && (k->h.magic != SC_STORE_MAGIC_HELLO ||
                           k->h.protocol != SC_STORE_PROTOCOL))
        return sc_store_refuse_protocol(s, k->fd, &k->h) ? -2 : -1;
    if (k->got < sizeof(k->h))
        return 0;
    if (!k->blob) {
        if (!sc_store_hello_served(&k->h) ||
            (k->h.kind == SC_STORE_FAILED && k->h.len >= SC_ERROR_MAX) ||
            !(k->blob = malloc((size_t)k->h.len + 1)))
            return -1;
        k->blob[k->h.len] = '\0';
    }
    return k->got == sizeof(k->h) + k->h.len;
}

/* When arrival k is dropped where its hello and blob had not come: SC_STORE_SILENT_S
 * after its last bytes, SC_STORE_ARRIVAL_S after it was accepted, and 1 s after the last
 * rank arrived (last; 0.0: not yet), or after it was accepted where that was later (one
 * queued behind SC_STORE_ARRIVING_MAX others then), where its hello had not come by then:
 * a hello is sent as its connection is made. A connection that trickled its blob after
 * the last rank arrived held every rank's answer for as long as it went on. One refused
 * (answered as another protocol's: its hello never comes whole) is read until its own
 * time, SC_STORE_REFUSED_S after its answer: dropped 1 s after the last rank arrived, the
 * rest of its hello and blob, still coming, reached a closed socket, which reset its
 * connection. */
static double sc_store_arrival_until(const sc_store_arrival_t *k, double last)
{
    double until = k->by < k->until ? k->by : k->until;
    double accepted = k->by - SC_STORE_ARRIVAL_S;
    double hello_by = (accepted > last ? accepted : last) + 1.0;

    if (k->refused)
        return k->until;
    return last > 0.0 && k->got < sizeof(k->h) && hello_by < until ? hello_by : until;
}

/* Which of the n arrivals a connection queued behind them all takes the place of: the one
 * silent longest of those whose hello had not come (a refused one, answered, is read
 * until it closes), once it was silent SC_STORE_EVICT_S; -1 where none was by now. *at:
 * when the first will be (a time past every deadline where none can be). */
static int sc_store_arrival_evictable(const sc_store_arrival_t *arriving, int n, double now,
                                      double *at)
{
    int k = -1;

    for (int j = 0; j < n; j++)
        if (!arriving[j].refused && arriving[j].got < sizeof(arriving[j].h) &&
            (k < 0 || arriving[j].until < arriving[k].until))
            k = j;
    /* until is SC_STORE_SILENT_S after its last bytes, or after it was accepted. */
    *at = k < 0 ? now + 1e9 : arriving[k].until - SC_STORE_SILENT_S + SC_STORE_EVICT_S;
    return k >= 0 && now >= *at ? k : -1;
}

/* fd, accepted at now, as an arrival into arriving (*n of them): in a free slot, or where
 * every slot is taken in the place of the one that sc_store_arrival_evictable gives at
 * now (the caller saw that there is one), which is closed. */
static void sc_store_arrival_add(sc_store_arrival_t *arriving, int *n, int fd, double now)
{
    if (*n == SC_STORE_ARRIVING_MAX) {
        double at;
        int k = sc_store_arrival_evictable(arriving, *n, now, &at);

        close(arriving[k].fd);
        free(arriving[k].blob);
        arriving[k] = arriving[--*n];
    }
    arriving[(*n)++] = (sc_store_arrival_t){fd, now + SC_STORE_SILENT_S,
                                            now + SC_STORE_ARRIVAL_S, 0, {0}, NULL, 0};
}

/* The rest of arrival k's hello, awaited by itself until k->until: 1 when it is one of
 * this protocol that the store serves, 0 when it is none (the connection broke or went
 * silent, or it is no rendezvous's), -1 when it is a rank's of another protocol, told
 * (sc_store_refuse_protocol). */
static int sc_store_arrival_hello(sc_store_server_t *s, sc_store_arrival_t *k)
{
    int r = 0;

    while (r == 0 && k->got < sizeof(k->h)) {
        if (sc_store_wait(s, k->fd, POLLIN, k->until) <= 0)
            return 0;
        r = sc_store_arrival_read(s, k);
    }
    return r == -2 ? -1 : r >= 0;
}

/* The list of ranks that never arrived, runs of three or more as ranges ("2, 5, 8-15":
 * a node's ranks show as one run), cut with ", ..." where it would not fit len; returns
 * how many. */
static int sc_store_missing(const int *fds, int size, char *buf, size_t len)
{
    sc_text_list_t l;
    int missing = 0;

    sc_text_list_init(&l, buf, len);
    for (int r = 0; r < size; r++) {
        int end = r;
        char run[32];

        if (fds[r] >= 0)
            continue;
        while (end + 1 < size && fds[end + 1] < 0)
            end++;
        if (end - r >= 2)
            snprintf(run, sizeof(run), "%d-%d", r, end);
        else if (end > r)
            snprintf(run, sizeof(run), "%d, %d", r, end);
        else
            snprintf(run, sizeof(run), "%d", r);
        sc_text_list_add(&l, run);
        missing += end - r + 1;
        r = end;
    }
    return missing;
}

/* Into buf: the processes refused that may have been the ranks that never arrived
 * (fds[r] < 0), each as "; a process claiming rank R was refused: WHY" (or "a process
 * ... (its rank not known)" where its hello was another protocol's); "" where none. */
static void sc_store_refusals_text(const sc_store_server_t *s, const int *fds, char *buf,
                                   size_t len)
{
    size_t n = 0;

    buf[0] = '\0';
    for (int k = 0; k < s->nrefused && n < len; k++) {
        const sc_store_refusal_t *f = &s->refused[k];

        if (f->rank >= 0 && fds[f->rank] >= 0)
            continue; /* that rank arrived: the refused process was not it */
        if (f->rank >= 0)
            n += (size_t)snprintf(buf + n, len - n, "; a process claiming rank %d was "
                                  "refused: %s", f->rank, f->why);
        else
            n += (size_t)snprintf(buf + n, len - n, "; a process was refused (which rank it "
                                  "claimed, its hello does not say in this protocol): %s",
                                  f->why);
    }
}

/* Answers the process on fd, whose hello came (hello 1: one of this protocol that the
 * store serves, h) or not (0: the connection broke or went silent, or it is no
 * rendezvous's hello), the rendezvous's failure st, err, or where it belongs to another
 * launch, that (sc_store_other_launch); fd is neither read nor closed: 1 where it is one
 * of the world's processes. */
static int sc_store_refuse_answer(sc_store_server_t *s, int fd, int hello,
                                  const sc_store_hello_t *h, sc_status_t st, const char *err)
{
    char other[SC_ERROR_MAX];

    if (hello && sc_store_other_launch(s, h, other, sizeof(other))) {
        sc_store_reply_error(s, fd, SC_ERR_MISMATCH, other, sc_clock_now() + 2.0);
        return 0; /* none of the world's processes */
    }
    sc_store_reply_error(s, fd, st, err, sc_clock_now() + 2.0);
    return hello;
}

/* Tells the process on fd, whose hello came (hello 1: one of this protocol that the store
 * serves, h; unread: the bytes of its blob still to come) or not (0: the connection broke
 * or went silent, or it is no rendezvous's hello; -1: a rank's of another protocol, told
 * already by sc_store_refuse_protocol: what it sent after is read until it closes), the
 * rendezvous's failure st, err (sc_store_refuse_answer), and closes fd: 1 where it is one
 * of the world's processes. */
static int sc_store_refuse_one(sc_store_server_t *s, int fd, int hello,
                               const sc_store_hello_t *h, size_t unread, sc_status_t st,
                               const char *err)
{
    if (hello < 0) { /* none of the world's processes: told why */
        sc_store_skip(s, fd, SIZE_MAX, sc_clock_now() + SC_STORE_REFUSED_S);
        close(fd);
        return 0;
    }
    /* Its blob is read first: a close with unread bytes resets the connection, and the
     * reset may reach the process before the answer. */
    if (hello)
        sc_store_skip(s, fd, unread, sc_clock_now() + 2.0);
    hello = sc_store_refuse_answer(s, fd, hello, h, st, err);
    close(fd);
    return hello;
}

/* Tells arrival k, whose hello came as hello says (sc_store_refuse_one), the
 * rendezvous's failure st, err, and closes it; *told counts it where it is one of the
 * world's processes. One told already (k->refused: read until it closes) is closed
 * after what it sent is read, until it closes or its time (wait) or at once (!wait). */
static void sc_store_arrival_tell(sc_store_server_t *s, sc_store_arrival_t *k, int hello,
                                  sc_status_t st, const char *err, int *told, int wait)
{
    if (k->refused && wait)
        sc_store_skip(s, k->fd, SIZE_MAX, k->until);
    if (k->refused)
        sc_store_net_close_answered(k->fd);
    else
        *told += sc_store_refuse_one(s, k->fd, hello, &k->h,
                                     hello > 0 ? sizeof(k->h) + k->h.len - k->got : 0, st,
                                     err);
    free(k->blob);
    k->blob = NULL;
}

/* The rendezvous failed with sentence err (rank 0 ran out of open files, two processes
 * claimed a rank, a rank could not join): every process is told so at once, not left to
 * time out as "never arrived" or, arriving after the verdict, as "could not be
 * reached". The connections held are answered and closed (fds[r] -2: told), which
 * frees their descriptors; then the n still arriving (arriving, room for
 * SC_STORE_ARRIVING_MAX) and every process that connects until as many as the world has
 * ranks were told (s->told_outside: those answered already outside fds, a second
 * claimant of a rank) or the deadline passed (SC_STORE_TELL_S after the failure at most,
 * set by sc_store_serve) or the store was stopped (s->stop, looked at every
 * SC_STORE_STOP_LOOK_S: the library's unload, a new store on its port) are read as
 * they come, all under one poll,
 * as sc_store_gather reads them, and each told once its hello and blob came, or when it
 * is dropped (silent SC_STORE_SILENT_S, or not all come within SC_STORE_ARRIVAL_S):
 * one that goes silent holds up none of the others, where each connection's hello was
 * awaited in turn, up to 5 s, and every later process waited behind it (as it still is
 * where that poll fails, other than for a signal, and each connection's alone does not);
 * and each told is read under the same poll until it closes as it reads its answer
 * (SC_STORE_REFUSED_S at most: k->refused), where each was read so in turn, up to 2 s,
 * and processes of another protocol that kept their connections open held every later
 * process 2 s each. Every slot taken, a connection queued takes the place of one silent
 * SC_STORE_EVICT_S (sc_store_arrival_add), as in sc_store_gather. Those still arriving
 * once the world was told are told at once, and those told closed. */
static void sc_store_refuse_all(sc_store_server_t *s, int *fds, sc_status_t st,
                                const char *err, sc_store_arrival_t *arriving, int n)
{
    struct pollfd pfds[SC_STORE_ARRIVING_MAX + 1];
    int told = s->told_outside, alone = 0;

    for (int r = 0; r < s->size; r++) {
        if (fds[r] >= 0) {
            sc_store_reply_error(s, fds[r], st, err, sc_clock_now() + 2.0);
            close(fds[r]);
            fds[r] = -2;
        }
        told += fds[r] == -2;
    }
    while (told < s->size && (n > 0 || sc_clock_now() < s->deadline) &&
           !sc_store_stopped(s)) {
        double now = sc_clock_now(), wake = s->deadline, evict_at;
        int np = 0, base, ready, fd;
        /* Every slot taken, the listening socket is looked at again once one of them
         * may give its place to a connection queued (sc_store_arrival_evictable): 64
         * silent ones held every later process, a rank of the world too, 7 s (dropped
         * at 5 s of silence, then read until they closed). */
        int evict = sc_store_arrival_evictable(arriving, n, now, &evict_at);

        if (now < s->deadline && (n < SC_STORE_ARRIVING_MAX || evict >= 0))
            pfds[np++] = (struct pollfd){s->listen_fd, POLLIN, 0};
        else if (now < s->deadline && evict_at < wake)
            wake = evict_at;
        base = np;
        for (int k = 0; k < n; k++) {
            double until = sc_store_arrival_until(&arriving[k], 0.0);

            pfds[np++] = (struct pollfd){arriving[k].fd, POLLIN, 0};
            if (until < wake)
                wake = until;
        }
        if (wake > now + SC_STORE_STOP_LOOK_S)
            wake = now + SC_STORE_STOP_LOOK_S;
        ready = poll(pfds, (nfds_t)np, sc_clock_ms_until(wake));
        if (ready < 0 && errno != EINTR && n > 0) {
            /* A poll of many that fails (ENOMEM, EINVAL past the limit of open files) may
             * not fail on one descriptor: from here each connection's hello is awaited by
             * itself, in turn, as all were before. */
            alone = 1;
            for (int k = 0; k < n; k++)
                sc_store_arrival_tell(s, &arriving[k],
                                      arriving[k].refused
                                          ? -1 : sc_store_arrival_hello(s, &arriving[k]),
                                      st, err, &told, 1);
            n = 0;
            continue;
        }
        if (ready < 0 && errno != EINTR)
            break;
        now = sc_clock_now();
        /* Back to front, so that an arrival done with (the last moved into its place)
         * leaves those not yet looked at where they were. */
        for (int k = n - 1; k >= 0; k--) {
            sc_store_arrival_t *a = &arriving[k];
            int came = ready > 0 && pfds[base + k].revents;
            int r = came ? sc_store_arrival_read(s, a) : 0;

            if (r == 0 && came && !a->refused)
                a->until = now + SC_STORE_SILENT_S;
            if (r == 0 && now < sc_store_arrival_until(a, 0.0) &&
                (now < s->deadline || a->refused))
                continue;
            if (a->refused) { /* it closed as it read its answer, or its time passed */
                sc_store_arrival_tell(s, a, -1, st, err, &told, 0);
                *a = arriving[--n];
                continue;
            }
            /* Done with: its hello and blob came (1), it is another protocol's, told
             * (-2), or it closed, went silent or is no hello the store serves. Told
             * here, it is read with the others until it closes as it reads its answer
             * (its time SC_STORE_REFUSED_S): a close with unread bytes resets the
             * connection, and each was read so in turn, up to 2 s, every later process
             * waiting behind it. */
            if (r != -2)
                told += sc_store_refuse_answer(s, a->fd,
                                               r == 1 || (a->got >= sizeof(a->h) &&
                                                          sc_store_hello_served(&a->h)),
                                               &a->h, st, err);
            free(a->blob);
            a->blob = NULL;
            a->refused = 1;
            a->until = now + SC_STORE_REFUSED_S;
        }
        /* The one that was to give its place may have spoken since. */
        if (ready <= 0 || base == 0 || !(pfds[0].revents & POLLIN) ||
            (n == SC_STORE_ARRIVING_MAX &&
             sc_store_arrival_evictable(arriving, n, now, &evict_at) < 0))
            continue;
        fd = sc_store_net_accept(s->listen_fd, 0);
        if (fd < 0)
            continue;
        sc_store_arrival_add(arriving, &n, fd, now);
        if (alone) {
            n--;
            sc_store_arrival_tell(s, &arriving[n], sc_store_arrival_hello(s, &arriving[n]),
                                  st, err, &told, 1);
        }
    }
    /* The world told, a poll of the listening socket alone failed, or the store was
     * stopped: those still arriving are told at once, those told closed. */
    for (int k = 0; k < n; k++)
        sc_store_arrival_tell(s, &arriving[k], 0, st, err, &told, 0);
}

/* Into err: the rendezvous's sentence for rank's failure text (its sc_comm_init failed
 * before it could join, or rank 0 before it could serve). */
static void sc_store_failure_sentence(const sc_store_server_t *s, uint32_t rank,
                                      const char *text, char *err, size_t len)
{
    char prefix[32];

    /* Its sentence names its rank already, as every rank's sentences do. */
    snprintf(prefix, sizeof(prefix), "rank %u: ", rank);
    if (strncmp(text, prefix, strlen(prefix)) == 0)
        text += strlen(prefix);
    snprintf(err, len, "rendezvous at %s: rank %u could not %s it (its sc_comm_init failed): "
             "%.600s", s->where, rank, rank == 0 ? "serve" : "join", text);
}

/* Whether the process on the connection fd of a rank that arrived closed it: it exited
 * or was killed during the rendezvous (its blob was read whole, so anything to read is
 * the end of the connection or its reset). A process waiting for the answer sends
 * nothing more. */
static int sc_store_conn_closed(int fd)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    char c;
    ssize_t n;

    if (poll(&pfd, 1, 0) <= 0)
        return 0;
    if (pfd.revents & (POLLERR | POLLHUP))
        return 1;
    n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* An arrival whose hello and blob came (k, whose descriptor and blob it owns from then
 * on): 1 when a rank arrived (its blob and the port it serves the table's tree on
 * kept), 2 when it arrived in place of a process of that rank that arrived and exited
 * since (a node restarted during the rendezvous, which was "two processes claimed rank
 * R"), 0 when the connection was dropped (it is another launch's, which is told so:
 * sc_store_other_launch), -1 when the rendezvous failed (*st and err set: a rank could
 * not join, a second process claimed a rank, a world size that differs). */
static int sc_store_take(sc_store_server_t *s, sc_store_arrival_t *k, int *fds,
                         uint8_t **blobs, uint32_t *lens, uint32_t *ports, sc_status_t *st,
                         char *err, size_t len)
{
    const sc_store_hello_t h = k->h;
    char other[SC_ERROR_MAX];
    int replaced;

    if (sc_store_other_launch(s, &h, other, sizeof(other))) {
        sc_store_refuse_other(s, k->fd, 0, other);
        free(k->blob);
        return 0;
    }
    if (h.kind == SC_STORE_FAILED && h.rank < (uint32_t)s->size) {
        /* Its blob is its failure's text. */
        sc_store_failure_sentence(s, h.rank, (const char *)k->blob, err, len);
        free(k->blob);
        *st = SC_ERR_PEER_FAILED;
        if (fds[h.rank] >= 0) { /* another process claimed that rank */
            sc_store_reply_error(s, fds[h.rank], *st, err, sc_clock_now() + 2.0);
            close(fds[h.rank]);
            s->told_outside++;
        }
        fds[h.rank] = k->fd; /* answered with the others */
        return -1;
    }
    replaced = h.size == (uint32_t)s->size && h.rank < (uint32_t)s->size &&
               fds[h.rank] >= 0 && sc_store_conn_closed(fds[h.rank]);
    if (h.size != (uint32_t)s->size || h.rank >= (uint32_t)s->size ||
        (fds[h.rank] >= 0 && !replaced)) {
        if (h.size != (uint32_t)s->size)
            snprintf(err, len, "rendezvous at %s: a process claimed rank %u of world size "
                     "%u, but rank 0 has world size %d", s->where, h.rank, h.size, s->size);
        else if (h.rank >= (uint32_t)s->size)
            snprintf(err, len, "rendezvous at %s: a process claimed rank %u, outside the "
                     "world of size %d", s->where, h.rank, s->size);
        else
            snprintf(err, len, "rendezvous at %s: two processes claimed rank %u of world "
                     "size %d (each process needs a rank of its own: check the launcher's "
                     "rank variables)", s->where, h.rank, s->size);
        *st = SC_ERR_INVALID_ARG;
        free(k->blob);
        sc_store_reply_error(s, k->fd, *st, err, sc_clock_now() + 2.0);
        s->told_outside++;
        close(k->fd);
        return -1;
    }
    /* The process it replaces is gone: its connection and its blob go. */
    if (replaced) {
        sc_log(SC_LOG_INFO, "rendezvous at %s: rank %u arrived again; the process that "
               "arrived as rank %u before has exited", s->where, h.rank, h.rank);
        close(fds[h.rank]);
        free(blobs[h.rank]);
    }
    blobs[h.rank] = k->blob;
    lens[h.rank] = h.len;
    ports[h.rank] = h.port <= 65535 ? h.port : 0;
    fds[h.rank] = k->fd;
    return replaced ? 2 : 1;
}

/* The table's tree as sc_store_answer lays it out. */
typedef struct {
    uint8_t *table;          /* the table as every answer carries it */
    uint32_t table_len;
    sc_store_role_t *at;     /* at[r]: the address rank r reached the store from */
    uint8_t *side;           /* its side of the tree (sc_tree_side) */
    int *parent, *depth;
    int *first;              /* rank r's children: kids[first[r]] to kids[first[r + 1] - 1] */
    uint32_t *kids;
} sc_store_tree_t;

static void sc_store_tree_free(sc_store_tree_t *t)
{
    free(t->table);
    free(t->at);
    free(t->side);
    free(t->parent);
    free(t->depth);
    free(t->first);
    free(t->kids);
}

/* The table of blobs and its tree: rank 0's children (SC_STORE_FANOUT of them on each
 * side: sc_tree_side) get the table from the store, the others from their parent,
 * each rank at the address it reached the store from and the port it said it listens
 * on (ports[r], set to 0 for a rank whose address is not known: it serves none). */
static sc_status_t sc_store_tree_plan(const sc_store_server_t *s, const int *fds,
                                      uint8_t *const *blobs, const uint32_t *lens,
                                      uint32_t *ports, sc_store_tree_t *t)
{
    size_t total = 0, n = (size_t)s->size;
    int *next;
    sc_status_t st;

    for (int r = 0; r < s->size; r++)
        total += sizeof(uint32_t) + lens[r];
    if (total > UINT32_MAX)
        return SC_ERR_INVALID_ARG;
    memset(t, 0, sizeof(*t));
    t->table = malloc(total ? total : 1);
    t->at = calloc(n, sizeof(*t->at));
    t->side = calloc(n, 1);
    t->parent = malloc(n * sizeof(int));
    t->depth = malloc(n * sizeof(int));
    t->first = calloc(n + 1, sizeof(int));
    t->kids = malloc(n * sizeof(uint32_t));
    next = malloc(n * sizeof(int));
    if (!t->table || !t->at || !t->side || !t->parent || !t->depth || !t->first ||
        !t->kids || !next) {
        free(next);
        sc_store_tree_free(t);
        return SC_ERR_NO_MEMORY;
    }
    t->table_len = (uint32_t)total;
    total = 0;
    for (int r = 0; r < s->size; r++) {
        int lb = 0;

        memcpy(t->table + total, &lens[r], sizeof(uint32_t));
        memcpy(t->table + total + sizeof(uint32_t), blobs[r], lens[r]);
        total += sizeof(uint32_t) + lens[r];
        if (r == 0 || sc_store_net_peer(fds[r], &t->at[r], &lb) != 0)
            ports[r] = 0; /* rank 0 serves its children through the store */
        t->side[r] = (uint8_t)sc_tree_side(t->at[r].family, lb);
    }
    st = sc_tree_layout(s->size, s->fanout, t->side, ports, t->parent, t->depth);
    /* Rank 0's children are served by the store, not listed as its own. */
    for (int r = 1; r < s->size && st == SC_SUCCESS; r++)
        if (t->parent[r])
            t->first[t->parent[r] + 1]++;
    for (int r = 0; r < s->size && st == SC_SUCCESS; r++) {
        t->first[r + 1] += t->first[r];
        next[r] = t->first[r];
    }
    for (int r = 1; r < s->size && st == SC_SUCCESS; r++)
        if (t->parent[r])
            t->kids[next[t->parent[r]]++] = (uint32_t)r;
    free(next);
    if (st != SC_SUCCESS)
        sc_store_tree_free(t);
    return st;
}

/* Every rank's answer as sc_store_answer lays it out, sent by sc_store_watch as each
 * rank's socket takes it: rank r's header and place in the tree (head + at[r] to
 * head + at[r + 1]), then the table where it is a child of rank 0 (with_table[r]); sent[r]
 * bytes of it sent. */
typedef struct {
    uint8_t *head;
    size_t *at;
    size_t *sent;
    uint8_t *with_table;
    uint8_t *table;
    uint32_t table_len;
    int height; /* the tree's */
} sc_store_answers_t;

static void sc_store_answers_free(sc_store_answers_t *a)
{
    free(a->head);
    free(a->at);
    free(a->sent);
    free(a->with_table);
    free(a->table);
    memset(a, 0, sizeof(*a));
}

/* The bytes of rank r's answer. */
static size_t sc_store_answer_len(const sc_store_answers_t *a, int r)
{
    return a->at[r + 1] - a->at[r] + (a->with_table[r] ? a->table_len : 0);
}

/* Sends what fd's socket takes of rank r's answer (sc_store_net_send_some). */
static int sc_store_answer_send_some(sc_store_answers_t *a, int fd, int r)
{
    size_t head = a->at[r + 1] - a->at[r];

    return sc_store_net_send_some(fd, a->head + a->at[r], head, a->table,
                                  sc_store_answer_len(a, r) - head, &a->sent[r]);
}

/* Every rank's answer once all arrived, into *a (released with sc_store_answers_free):
 * its place in the table's tree (sc_store_tree_plan), with the table for rank 0's
 * children, for each rank connected (fds[r] open); nothing is sent yet. Otherwise the
 * sentence in err (the blobs add up to more than a table holds, or rank 0 is out of
 * memory). */
static sc_status_t sc_store_answer(sc_store_server_t *s, const int *fds,
                                   uint8_t *const *blobs, const uint32_t *lens,
                                   uint32_t *ports, sc_store_answers_t *a, char *err,
                                   size_t err_len)
{
    sc_store_tree_t t;
    size_t n = (size_t)s->size, off = 0;
    sc_status_t st = sc_store_tree_plan(s, fds, blobs, lens, ports, &t);

    memset(a, 0, sizeof(*a));
    if (st == SC_SUCCESS) {
        a->head = malloc(n * (sizeof(sc_store_reply_t) + sizeof(sc_store_role_t) +
                              sizeof(uint32_t)));
        a->at = malloc((n + 1) * sizeof(size_t));
        a->sent = calloc(n, sizeof(size_t));
        a->with_table = calloc(n, 1);
        if (!a->head || !a->at || !a->sent || !a->with_table) {
            sc_store_tree_free(&t);
            sc_store_answers_free(a);
            st = SC_ERR_NO_MEMORY;
        }
    }
    if (st == SC_ERR_INVALID_ARG)
        snprintf(err, err_len, "rendezvous at %s: the ranks' blobs add up to more than "
                 "4 GiB, more than the store's table holds", s->where);
    else if (st != SC_SUCCESS)
        snprintf(err, err_len, "rendezvous at %s: rank 0 is out of memory for the tables "
                 "of %d ranks", s->where, s->size);
    if (st != SC_SUCCESS)
        return st;
    for (int r = 0; r < s->size; r++)
        if (t.depth[r] > a->height)
            a->height = t.depth[r];
    for (int r = 0; r < s->size; r++) {
        int p = t.parent[r], nkids = t.first[r + 1] - t.first[r];
        sc_store_role_t role = {(uint32_t)p, (uint32_t)t.depth[r], (uint32_t)a->height,
                                (uint32_t)nkids, t.table_len, 0, 0, 0, {0}};
        uint32_t len = (uint32_t)(sizeof(role) + (size_t)nkids * sizeof(uint32_t)) +
                       (p ? 0 : t.table_len);
        sc_store_reply_t rep = {SC_STORE_MAGIC, SC_SUCCESS, len};

        a->at[r] = off;
        if (fds[r] < 0)
            continue;
        if (p) {
            role.family = t.at[p].family;
            role.scope_id = t.at[p].scope_id;
            role.port = (uint16_t)ports[p];
            memcpy(role.addr, t.at[p].addr, sizeof(role.addr));
        }
        memcpy(a->head + off, &rep, sizeof(rep));
        memcpy(a->head + off + sizeof(rep), &role, sizeof(role));
        memcpy(a->head + off + sizeof(rep) + sizeof(role), t.kids + t.first[r],
               (size_t)nkids * sizeof(uint32_t));
        off += sizeof(rep) + sizeof(role) + (size_t)nkids * sizeof(uint32_t);
        a->with_table[r] = !p;
    }
    a->at[n] = off;
    a->table = t.table; /* the answers' now */
    a->table_len = t.table_len;
    t.table = NULL;
    sc_store_tree_free(&t);
    return SC_SUCCESS;
}

/* Logs at info what rank 0 sent once every rank connected took its whole answer. */
static void sc_store_answers_sent(const sc_store_server_t *s, const int *fds,
                                  const sc_store_answers_t *a)
{
    unsigned long long sent = 0;
    int tables = 0, answered = 0;

    for (int r = 0; r < s->size; r++) {
        if (fds[r] < 0)
            continue;
        sent += a->sent[r];
        tables += a->with_table[r];
        answered++;
    }
    sc_log(SC_LOG_INFO, "rendezvous at %s: rank 0 sent %llu bytes to %d ranks: the table of "
           "%u bytes to %d of them, this rank's own client included, their parent in the "
           "table's tree to the others (SC_STORE_FANOUT %d)", s->where, sent, answered,
           a->table_len, tables, s->fanout);
}

/* The ranks connected (fds[r] open) that did not say they had the table (said[r] 0), as
 * a sentence's list into buf, each that did not take its whole answer with how much of
 * it it took, each that sent part of its word (words[r]) with how much; how many. */
static int sc_store_unsaid(const sc_store_server_t *s, const int *fds, const uint8_t *said,
                           const sc_store_word_t *words, const sc_store_answers_t *a,
                           char *buf, size_t len)
{
    sc_text_list_t l;
    int n = 0;

    sc_text_list_init(&l, buf, len);
    for (int r = 0; r < s->size; r++) {
        char item[128];

        if (fds[r] < 0 || said[r])
            continue;
        if (a->sent[r] < sc_store_answer_len(a, r))
            snprintf(item, sizeof(item), "%d (it took %zu of the %zu bytes of the store's "
                     "answer)", r, a->sent[r], sc_store_answer_len(a, r));
        else if (words[r].got > 0)
            snprintf(item, sizeof(item), "%d (it sent %zu bytes of its word, then nothing)",
                     r, words[r].got);
        else
            snprintf(item, sizeof(item), "%d", r);
        sc_text_list_add(&l, item);
        n++;
    }
    return n;
}

/* Every answered rank's answer (a) sent as its socket takes it, all at once under one
 * poll, so that a rank that stalls (stopped, or too slow to read the table) holds up
 * none of the others; then each says on its connection that it has the table and served
 * its children, or why not. SC_SUCCESS once all said so; else at once the first failure
 * into err: a rank's own (its status and sentence), or SC_ERR_PEER_FAILED naming a rank
 * whose connection broke before its answer went or closed before the end (it exited or
 * was killed: its children and its parent would otherwise wait SC_TIMEOUT for it, and
 * the others learn it only as they connect to it), or SC_ERR_TIMEOUT naming the ranks
 * that said nothing by deadline (with how much of its answer one that stalled took), or
 * SC_ERR_SYSTEM where its poll fails (for another reason than a signal). A rank's broken
 * or closed connection is closed and set to -1. */
static sc_status_t sc_store_watch(sc_store_server_t *s, int *fds, sc_store_answers_t *a,
                                  double deadline, char *err, size_t err_len)
{
    struct pollfd *pfds = malloc((size_t)s->size * sizeof(*pfds));
    int *rank_of = malloc((size_t)s->size * sizeof(int));
    uint8_t *said = calloc((size_t)s->size, 1);
    sc_store_word_t *words = calloc((size_t)s->size, sizeof(*words));
    int left = 0, unsent = 0;
    sc_status_t st = SC_SUCCESS;

    if (!pfds || !rank_of || !said || !words) {
        snprintf(err, err_len, "rendezvous at %s: rank 0 is out of memory", s->where);
        st = SC_ERR_NO_MEMORY;
        goto out;
    }
    for (int r = 0; r < s->size; r++)
        left += fds[r] >= 0;
    unsent = left;
    while (left > 0 && st == SC_SUCCESS) {
        int np = 0, ms = sc_clock_ms_until(deadline), ready;

        if (ms <= 0) {
            char missing[512];
            int n = sc_store_unsaid(s, fds, said, words, a, missing, sizeof(missing));

            snprintf(err, err_len, "rendezvous at %s: rank%s %s never said %s had the table "
                     "of the ranks' blobs by the store's deadline (SC_TIMEOUT after its "
                     "first answer, 2 s more per level of the table's tree): %s stopped or "
                     "hung",
                     s->where, n == 1 ? "" : "s", missing, n == 1 ? "it" : "they",
                     n == 1 ? "it is" : "they are");
            st = SC_ERR_TIMEOUT;
            break;
        }
        /* A rank that said it has the table is watched still: its connection closing
         * means it exited or was killed before the others knew they all have it. */
        for (int r = 0; r < s->size; r++) {
            if (fds[r] < 0)
                continue;
            pfds[np] = (struct pollfd){fds[r],
                                       a->sent[r] < sc_store_answer_len(a, r) ? POLLOUT : POLLIN,
                                       0};
            rank_of[np++] = r;
        }
        ready = poll(pfds, (nfds_t)np, ms);
        /* A poll that fails for another reason than a signal fails so every time: it
         * would spin until the deadline, for ever with SC_TIMEOUT=inf. */
        if (ready < 0 && errno != EINTR) {
            snprintf(err, err_len, "rendezvous at %s: rank 0's store could not wait on the "
                     "ranks' connections (poll: %s)", s->where, strerror(errno));
            st = SC_ERR_SYSTEM;
            break;
        }
        if (ready <= 0)
            continue;
        for (int k = 0; k < np && st == SC_SUCCESS; k++) {
            int r = rank_of[k], got = -1;

            if (!pfds[k].revents)
                continue;
            if (pfds[k].events == POLLOUT) {
                got = sc_store_answer_send_some(a, fds[r], r);
                if (got > 0 && --unsent == 0)
                    sc_store_answers_sent(s, fds, a);
                if (got >= 0)
                    continue;
                snprintf(err, err_len, "rendezvous at %s: rank %d exited or was killed "
                         "before the store's answer reached it (its connection to the store "
                         "broke)", s->where, r);
                st = SC_ERR_PEER_FAILED;
                close(fds[r]);
                fds[r] = -1;
                break;
            }
            /* Read as it comes: a rank stopped in the middle of its word is waited for
             * as one stopped before it, holding up none of the others. */
            if (!said[r])
                got = sc_store_net_word_some(fds[r], &words[r]);
            if (got == 0)
                continue;
            if (got > 0 && words[r].rep.status == SC_SUCCESS) {
                said[r] = 1;
                left--;
            } else if (got > 0) {
                st = (sc_status_t)words[r].rep.status;
                snprintf(err, err_len, "%s", words[r].text); /* the rank's own failure */
            } else {
                snprintf(err, err_len, "rendezvous at %s: rank %d exited or was killed "
                         "after the store answered it, before every rank had the table of "
                         "the ranks' blobs (its connection to the store closed)", s->where, r);
                st = SC_ERR_PEER_FAILED;
                close(fds[r]);
                fds[r] = -1;
            }
        }
    }
out:
    for (int r = 0; words && r < s->size; r++)
        free(words[r].text);
    free(words);
    free(pfds);
    free(rank_of);
    free(said);
    return st;
}

/* Every rank connected (fds[r] open) told the outcome st and its sentence text ("" on
 * success), all under one poll on non-blocking writes, as the answers went
 * (sc_store_watch), so that a rank that takes nothing (stopped, its socket full of the
 * table) holds up none of the others' verdicts: each is waited for until deadline (one
 * that passed: each is sent what its socket takes at once), where each was waited for
 * 5 s in turn, so that with several stopped ranks the last ones heard nothing for tens
 * of seconds, and rank 0 returned only then; where poll fails, each is sent once what
 * its socket takes. One that did not take its whole answer (a) is sent the rest of it
 * first, since what it is told would be read as that rest. One not told by then is
 * given up on with a reset of its connection, which it tells from the end of a
 * connection whose rank 0 exited or was killed (sc_store_given_up, bootstrap_store.c,
 * as the rest of its answer comes; sc_store_net_read_word where only the verdict was
 * left): the reset drops what its socket held still, the rest of its answer. Every fds[r] is
 * closed, one told gracefully (sc_store_net_close_answered: its word not read, the
 * failure having come first, must not reset the connection); all are closed untold where
 * rank 0 is out of memory. */
static void sc_store_tell_outcome(const sc_store_server_t *s, int *fds,
                                  sc_store_answers_t *a, sc_status_t st, const char *text,
                                  double deadline)
{
    sc_store_reply_t rep = {SC_STORE_MAGIC, st, (uint32_t)strlen(text)};
    size_t *sent = calloc((size_t)s->size, sizeof(size_t));
    struct pollfd *pfds = malloc((size_t)s->size * sizeof(*pfds));
    int *rank_of = malloc((size_t)s->size * sizeof(int));
    size_t total = sizeof(rep) + rep.len;
    int left = 0;

    for (int r = 0; r < s->size; r++) {
        if (fds[r] < 0)
            continue;
        if (sent && pfds && rank_of) {
            left++;
        } else {
            close(fds[r]);
            fds[r] = -1;
        }
    }
    while (left > 0) {
        int np = 0, ms = sc_clock_ms_until(deadline), ready, failed;

        for (int r = 0; r < s->size; r++) {
            if (fds[r] < 0 || sent[r] == total)
                continue;
            pfds[np] = (struct pollfd){fds[r], POLLOUT, 0};
            rank_of[np++] = r;
        }
        ready = poll(pfds, (nfds_t)np, ms);
        /* Where poll fails (not for a signal: sc_store_watch's failure, it may be), each
         * is sent once what its socket takes. */
        failed = ready < 0 && errno != EINTR;
        for (int k = 0; k < np && (ready > 0 || failed); k++) {
            int r = rank_of[k], got = 1;

            if (!failed && !pfds[k].revents)
                continue;
            if (a->sent && a->sent[r] > 0 && a->sent[r] < sc_store_answer_len(a, r))
                got = sc_store_answer_send_some(a, fds[r], r);
            if (got > 0)
                got = sc_store_net_send_some(fds[r], &rep, sizeof(rep), text, rep.len,
                                             &sent[r]);
            if (got == 0)
                continue;
            left--;
            if (got < 0) { /* it exited or was killed: nobody to tell */
                close(fds[r]);
                fds[r] = -1;
            }
        }
        if (failed || ms <= 0)
            break;
    }
    for (int r = 0; r < s->size; r++) {
        if (fds[r] < 0)
            continue;
        if (sent[r] == total) {
            sc_store_net_close_answered(fds[r]);
        } else {
            struct linger reset = {1, 0};

            setsockopt(fds[r], SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
            close(fds[r]);
        }
        fds[r] = -1;
    }
    free(sent);
    free(pfds);
    free(rank_of);
}

/* The sentence of a rendezvous whose deadline passed before every rank arrived (fds[r]
 * -1: rank r did not), into err (len bytes). */
static void sc_store_timeout_sentence(const sc_store_server_t *s, const int *fds, char *err,
                                      size_t len)
{
    char missing[512], refused[SC_ERROR_MAX];
    int nmissing = sc_store_missing(fds, s->size, missing, sizeof(missing));
    int n;

    sc_store_refusals_text(s, fds, refused, sizeof(refused));
    /* Rank 0's own client joins as the others do: where it had not, the wait was shorter
     * than this process takes to connect to itself. */
    n = snprintf(err, len,
                 "rendezvous at %s timed out after %.3g s: rank%s %s never arrived "
                 "(%d of %d)%s%s%s%s", s->where, s->deadline - s->started,
                 nmissing == 1 ? "" : "s", missing, nmissing, s->size, refused,
                 fds[0] < 0 ? "; rank 0, which serves the rendezvous, had not joined "
                              "it either: the timeout is shorter than a rendezvous "
                              "takes" : "",
                 s->note[0] ? "; " : "", s->note);
    /* Cut where the address and the missing ranks were long: the reader sees it. */
    if (n >= (int)len)
        memcpy(err + len - 4, "...", 4);
}

/* How many of the n arrivals are still judged: those not refused (sc_store_refuse_protocol
 * answered those, whose bytes are only read until they close). */
static int sc_store_judging(const sc_store_arrival_t *arriving, int n)
{
    int judging = 0;

    for (int k = 0; k < n; k++)
        judging += !arriving[k].refused;
    return judging;
}

/* Closes the refused ones of the n arrivals, what came on them read first, and keeps the
 * others in order; returns how many are kept. */
static int sc_store_close_refused(sc_store_arrival_t *arriving, int n)
{
    int kept = 0;

    for (int k = 0; k < n; k++) {
        if (arriving[k].refused)
            sc_store_net_close_answered(arriving[k].fd);
        else
            arriving[kept++] = arriving[k];
    }
    return kept;
}

/* The connections queued on the store's listening socket accepted as arrivals (*n of
 * them in arriving), as many as there is room for (sc_store_arrival_add: a slot free, or
 * one silent SC_STORE_EVICT_S): 1 where some are left queued for want of room, 0 where
 * none is (or accept failed: those left are reset as the socket closes). */
static int sc_store_accept_queued(sc_store_server_t *s, sc_store_arrival_t *arriving,
                                  int *n, double now)
{
    for (;;) {
        struct pollfd q = {s->listen_fd, POLLIN, 0};
        double at;
        int fd;

        if (poll(&q, 1, 0) <= 0)
            return 0;
        if (*n == SC_STORE_ARRIVING_MAX &&
            sc_store_arrival_evictable(arriving, *n, now, &at) < 0)
            return 1;
        if ((fd = sc_store_net_accept(s->listen_fd, 0)) < 0)
            return 0;
        sc_store_arrival_add(arriving, n, fd, now);
    }
}

/* The ranks' arrivals (sc_store_take) until every rank arrived, each connection's hello
 * and blob read as they come, all under one poll (sc_store_arrival_t), a refused process
 * of another protocol's too, read after its answer until it closes, so that none holds
 * up the others (sc_store_refuse_protocol read it so before it looked at any other
 * connection, up to 2 s: every rank arriving meanwhile waited); then the
 * connections already waiting are judged as ones before the last, before any rank is
 * answered (a second process claiming a rank, a rank telling its failure: it was told
 * that rank 0 exited or was killed when the store closed it unread, and the world went
 * on with whichever claimant came first), every one of them, as many at once as there
 * is room for and the rest as room frees (sc_store_accept_queued: those past the first
 * 64 were reset unanswered as the store closed its listening socket), those queued up
 * to SC_STORE_JUDGED_S after the last rank arrived (a flood of connections that keep
 * coming held the answers for as long as it went on). Every slot taken, a connection
 * queued takes the place of one silent SC_STORE_EVICT_S (sc_store_arrival_add), where
 * it waited until those were dropped. SC_SUCCESS; else
 * the failure, err set
 * (SC_ERR_SYSTEM where its poll fails for another reason than a signal), with
 * the connections still arriving in arriving (*n of them, up to SC_STORE_ARRIVING_MAX)
 * for sc_store_refuse_all. The spare descriptor (*spare) is closed where rank 0 ran out
 * of open files, to make room to tell that rank too. */
static sc_status_t sc_store_gather(sc_store_server_t *s, int *fds, uint8_t **blobs,
                                   uint32_t *lens, uint32_t *ports, int *spare,
                                   sc_store_arrival_t *arriving, int *n, char *err,
                                   size_t len)
{
    struct pollfd pfds[SC_STORE_ARRIVING_MAX + 1];
    double last = 0.0; /* when the last rank arrived; 0.0 until then */
    int arrived = 0, queued = 0; /* queued: connections waiting then, not all accepted */
    sc_status_t st = SC_SUCCESS;

    *n = 0;
    while (st == SC_SUCCESS) {
        double now = sc_clock_now(), wake = s->deadline, evict_at;
        int np = 0, base, ready, fd = -1, evict;

        if (arrived == s->size && last == 0.0) {
            last = now;
            queued = 1;
        }
        if (queued)
            queued = now < last + SC_STORE_JUDGED_S &&
                     sc_store_accept_queued(s, arriving, n, now);
        if (last > 0.0 && !queued && sc_store_judging(arriving, *n) == 0)
            break;
        if (last == 0.0 && now >= s->deadline) {
            sc_store_timeout_sentence(s, fds, err, len);
            st = SC_ERR_TIMEOUT;
            break;
        }
        /* Every slot taken, the listening socket is looked at again once one of them
         * may give its place to a connection queued (sc_store_arrival_evictable). */
        evict = sc_store_arrival_evictable(arriving, *n, now, &evict_at);
        if (last == 0.0 && (*n < SC_STORE_ARRIVING_MAX || evict >= 0))
            pfds[np++] = (struct pollfd){s->listen_fd, POLLIN, 0};
        else if ((last == 0.0 || queued) && evict_at < wake)
            wake = evict_at;
        base = np;
        for (int k = 0; k < *n; k++) {
            double until = sc_store_arrival_until(&arriving[k], last);

            pfds[np++] = (struct pollfd){arriving[k].fd, POLLIN, 0};
            if (until < wake)
                wake = until;
        }
        ready = poll(pfds, (nfds_t)np, sc_clock_ms_until(wake));
        /* As in sc_store_watch: a poll that fails for another reason than a signal fails
         * so every time, and each arrival, unread, would be dropped at its time as a
         * silent one (its rank, connecting again, found the store closing it unanswered
         * and took it for no store) while the store spun until its deadline. */
        if (ready < 0 && errno != EINTR) {
            snprintf(err, len, "rendezvous at %s: rank 0's store could not wait on the "
                     "arriving connections (poll: %s)", s->where, strerror(errno));
            st = SC_ERR_SYSTEM;
            break;
        }
        now = sc_clock_now();
        /* Back to front, so that an arrival done with (the last moved into its place)
         * leaves those not yet looked at where they were. */
        for (int k = *n - 1; k >= 0 && st == SC_SUCCESS; k--) {
            sc_store_arrival_t *a = &arriving[k];
            int came = ready > 0 && pfds[base + k].revents;
            int r = came ? sc_store_arrival_read(s, a) : 0;

            if (r == 0 && came && !a->refused)
                a->until = now + SC_STORE_SILENT_S;
            if (r == 0 && now >= sc_store_arrival_until(a, last))
                r = -1; /* bytes that keep coming do not keep it past its time */
            if (r == -2) { /* answered: read until it closes */
                a->refused = 1;
                a->until = now + SC_STORE_REFUSED_S;
            }
            if (r == 0 || r == -2)
                continue;
            if (r == 1) {
                arrived += sc_store_take(s, a, fds, blobs, lens, ports, &st, err, len) == 1;
            } else if (r == -1 && a->refused) {
                /* What came since it was last read is read first: a close with unread
                 * bytes resets the connection. */
                sc_store_net_close_answered(a->fd);
            } else if (r == -1) {
                close(a->fd);
                free(a->blob);
            }
            *a = arriving[--*n];
        }
        /* The one that was to give its place may have spoken since. */
        if (st != SC_SUCCESS || ready <= 0 || base == 0 || !(pfds[0].revents & POLLIN) ||
            (*n == SC_STORE_ARRIVING_MAX &&
             sc_store_arrival_evictable(arriving, *n, now, &evict_at) < 0))
            continue;
        fd = sc_store_net_accept(s->listen_fd, 0);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            struct rlimit rl = {0, 0};

            getrlimit(RLIMIT_NOFILE, &rl);
            snprintf(err, len, "rendezvous at %s: rank 0 ran out of open files after %d of "
                     "%d ranks arrived (it holds one connection per rank until every rank "
                     "arrived, and the limit of open files is %llu): raise the limit "
                     "(ulimit -n) to at least %d, twice the world size and some", s->where,
                     arrived, s->size, (unsigned long long)rl.rlim_cur, 2 * s->size + 256);
            st = SC_ERR_SYSTEM;
            if (*spare >= 0) {
                close(*spare);
                *spare = -1;
            }
        } else if (fd >= 0) {
            sc_store_arrival_add(arriving, n, fd, now);
        }
    }
    *n = sc_store_close_refused(arriving, *n);
    return st;
}

void *sc_store_serve(void *arg)
{
    sc_store_server_t *s = arg;
    int *fds = malloc((size_t)s->size * sizeof(int));
    uint8_t **blobs = calloc((size_t)s->size, sizeof(uint8_t *));
    uint32_t *lens = calloc((size_t)s->size, sizeof(uint32_t));
    uint32_t *ports = calloc((size_t)s->size, sizeof(uint32_t));
    sc_store_arrival_t *arriving = calloc(SC_STORE_ARRIVING_MAX, sizeof(*arriving));
    int narriving = 0, spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    double answering, watched_until;
    sc_store_answers_t answers = {0};
    char err[SC_ERROR_MAX] = "";
    sc_status_t st;

    if (!fds || !blobs || !lens || !ports || !arriving) {
        /* Said to rank 0's own client, which stops at the verdict; the others find no
         * store listening. */
        free(fds);
        free(blobs);
        free(lens);
        free(ports);
        free(arriving);
        if (spare >= 0)
            close(spare);
        sc_store_close_listen(s);
        s->verdict = SC_ERR_NO_MEMORY;
        snprintf(s->verdict_text, sizeof(s->verdict_text), "rendezvous at %s: rank 0 is out "
                 "of memory for the tables of %d ranks", s->where, s->size);
        __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
        return NULL;
    }
    for (int r = 0; r < s->size; r++)
        fds[r] = -1;
    st = sc_store_gather(s, fds, blobs, lens, ports, &spare, arriving, &narriving, err,
                         sizeof(err));
    /* A rank that arrived and exited since (killed, or its program ended) would be
     * found dead only as the others connect to it, as an unreachable endpoint that
     * names no rank across nodes: the rendezvous fails on every rank naming it. */
    for (int r = 0; r < s->size && st == SC_SUCCESS; r++) {
        if (fds[r] < 0 || !sc_store_conn_closed(fds[r]))
            continue;
        snprintf(err, sizeof(err), "rendezvous at %s: rank %d arrived and then exited or "
                 "was killed before every rank had arrived (its connection to the store "
                 "closed): see why rank %d ended, and start it again (a process started "
                 "again before the last rank arrives takes its place)", s->where, r, r);
        st = SC_ERR_PEER_FAILED;
    }
    /* A failed rendezvous is said to every rank, those still to come too, for
     * SC_STORE_TELL_S at most (for ever with SC_TIMEOUT=inf where a rank never came);
     * then no later process may join it. Rank 0's client has the verdict first and
     * returns it (sc_store_allgather), leaving this thread to tell them. */
    if (st != SC_SUCCESS) {
        if (s->deadline > sc_clock_now() + SC_STORE_TELL_S)
            s->deadline = sc_clock_now() + SC_STORE_TELL_S;
        s->verdict = st;
        snprintf(s->verdict_text, sizeof(s->verdict_text), "%s", err);
        __atomic_store_n(&s->failed, 1, __ATOMIC_RELEASE);
        sc_store_refuse_all(s, fds, st, err, arriving, narriving);
    }
    free(arriving);
    sc_store_close_listen(s);
    if (spare >= 0)
        close(spare);
    /* The store's deadline at the tree's end counts from its first answer, as each
     * rank's own wait for the store's word counts from its answer (2 s longer), so that
     * the store speaks first however long answering every rank took: counted from its
     * last answer, the ranks answered first gave up on it and said rank 0 was hung. */
    answering = sc_clock_now();
    if (st == SC_SUCCESS)
        st = sc_store_answer(s, fds, blobs, lens, ports, &answers, err, sizeof(err));
    /* Until every rank has the table, each is watched, so that one that exited or was
     * killed fails every rank naming it within moments, not SC_TIMEOUT later. */
    watched_until = answering + s->timeout_s + SC_STORE_TREE_LEVEL_S * (answers.height + 2);
    if (st == SC_SUCCESS)
        st = sc_store_watch(s, fds, &answers, watched_until, err, sizeof(err));
    /* Every rank connected is told the outcome (failures, and the tree's end) until the
     * store's deadline (for ever with SC_TIMEOUT=inf, as a stopped rank is waited for
     * then where all goes well). */
    sc_store_tell_outcome(s, fds, &answers, st, st == SC_SUCCESS ? "" : err, watched_until);
    sc_store_answers_free(&answers);
    for (int r = 0; r < s->size; r++)
        free(blobs[r]);
    free(blobs);
    free(lens);
    free(ports);
    free(fds);
    /* A failure's verdict was set before it was told: rank 0's client reads it since. */
    if (!__atomic_load_n(&s->failed, __ATOMIC_ACQUIRE)) {
        s->verdict = st;
        snprintf(s->verdict_text, sizeof(s->verdict_text), "%s", err);
    }
    __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

void sc_store_server_init(sc_store_server_t *s, const char *addr, int port, int size,
                          const sc_store_launch_t *launch, double started, double deadline)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    s->port = port;
    s->size = size;
    s->launch = *launch;
    s->started = started;
    s->deadline = deadline;
    sc_store_net_where(addr, port, s->where, sizeof(s->where));
}

void sc_store_server_fini(sc_store_server_t *s)
{
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
}

/* The thread of a store whose rank 0 failed before it could serve (arg: its
 * sc_store_server_t, listening, verdict_text its sentence): tells every rank that comes
 * (sc_store_refuse_all), then sets done. */
static void *sc_store_serve_failure(void *arg)
{
    sc_store_server_t *s = arg;
    int *fds = malloc((size_t)s->size * sizeof(int));
    sc_store_arrival_t *arriving = calloc(SC_STORE_ARRIVING_MAX, sizeof(*arriving));

    if (fds && arriving) {
        for (int r = 0; r < s->size; r++)
            fds[r] = -1;
        fds[0] = -2; /* rank 0 knows */
        sc_store_refuse_all(s, fds, s->verdict, s->verdict_text, arriving, 0);
    }
    sc_store_close_listen(s);
    free(arriving);
    free(fds);
    __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

int sc_store_server_tell_failure(sc_store_server_t *s, const char *text)
{
    if (sc_store_net_listen(s->port, s->size < 128 ? 128 : s->size, &s->listen_fd) !=
        SC_SUCCESS)
        return -1;
    s->verdict = SC_ERR_PEER_FAILED;
    sc_store_failure_sentence(s, 0, text, s->verdict_text, sizeof(s->verdict_text));
    __atomic_store_n(&s->failed, 1, __ATOMIC_RELEASE);
    if (pthread_create(&s->thread, NULL, sc_store_serve_failure, s) != 0) {
        close(s->listen_fd);
        return -1;
    }
    return 0;
}
