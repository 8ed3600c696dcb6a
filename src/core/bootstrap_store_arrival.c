/* The arrivals at rank 0's store: each connection's hello and blob read as they come,
 * processes of another protocol or launch refused, silent ones evicted, each rank taken
 * (or the rendezvous failed) until every rank arrived (bootstrap_store_arrival.h). */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/bootstrap_env.h"
#include "core/bootstrap_store_arrival.h"
#include "core/bootstrap_store_net.h"
#include "core/bootstrap_store_server.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "core/text_list.h"

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

int sc_store_other_launch(sc_store_server_t *s, const sc_store_hello_t *h,
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

int sc_store_hello_served(const sc_store_hello_t *h)
{
    return (h->kind == SC_STORE_JOIN || h->kind == SC_STORE_FAILED) &&
           h->len <= SC_STORE_MAX_BLOB;
}

/* How long after the last rank arrived the connections queued are still accepted to be
 * judged (sc_store_accept_queued): those accepted by then have their own times (a hello
 * within 1 s, all of it within SC_STORE_ARRIVAL_S), and those queued still are reset as
 * the store closes its listening socket. A steady flood of other connections held every
 * rank's answer for as long as it went on, the queue never empty. */
#define SC_STORE_JUDGED_S 1.0
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

int sc_store_arrival_read(sc_store_server_t *s, sc_store_arrival_t *k)
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

double sc_store_arrival_until(const sc_store_arrival_t *k, double last)
{
    double until = k->by < k->until ? k->by : k->until;
    double accepted = k->by - SC_STORE_ARRIVAL_S;
    double hello_by = (accepted > last ? accepted : last) + 1.0;

    if (k->refused)
        return k->until;
    return last > 0.0 && k->got < sizeof(k->h) && hello_by < until ? hello_by : until;
}

int sc_store_arrival_evictable(const sc_store_arrival_t *arriving, int n, double now,
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

void sc_store_arrival_add(sc_store_arrival_t *arriving, int *n, int fd, double now)
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

int sc_store_arrival_hello(sc_store_server_t *s, sc_store_arrival_t *k)
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

int sc_store_conn_closed(int fd)
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

sc_status_t sc_store_gather(sc_store_server_t *s, int *fds, uint8_t **blobs,
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
