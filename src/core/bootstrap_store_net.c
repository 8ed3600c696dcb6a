/* The TCP plumbing of the rendezvous store and its table's tree: exact reads and writes
 * with a deadline, an answer's header and sentence checked as a store's, the store's
 * listening socket and a rank's own beside it, a client's connection with its retries
 * and reasons, the address of a rank, and rank 0's look at the master address. */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <math.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/bootstrap_env.h"
#include "core/bootstrap_store_net.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/port_holder.h"

int sc_store_net_io(int fd, void *buf, size_t len, double deadline, int writing)
{
    return sc_store_net_io_watch(fd, buf, len, deadline, writing, -1);
}

/* Whether the data waiting on fd came before the data waiting on watch, by the kernel's
 * record of each TCP connection's last data received (in ms, tcpi_last_data_recv): a
 * rank stopped or descheduled finds both when it looks, and poll says nothing of their
 * order. 0 where either has no data waiting (its end or a reset, which the kernel
 * dates nowhere), is no TCP socket, or both came within the same tick: the watch,
 * which is the rendezvous's verdict, comes first then. */
static int sc_store_net_came_first(int fd, int watch)
{
    struct tcp_info a, b;
    socklen_t alen = sizeof(a), blen = sizeof(b);
    int na = 0, nb = 0;

    if (ioctl(fd, FIONREAD, &na) != 0 || ioctl(watch, FIONREAD, &nb) != 0 || na <= 0 ||
        nb <= 0)
        return 0;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &a, &alen) != 0 ||
        getsockopt(watch, IPPROTO_TCP, TCP_INFO, &b, &blen) != 0)
        return 0;
    return a.tcpi_last_data_recv > b.tcpi_last_data_recv;
}

int sc_store_net_io_watch(int fd, void *buf, size_t len, double deadline, int writing,
                          int watch)
{
    uint8_t *p = buf;

    while (len > 0) {
        /* poll ignores a negative descriptor: no watch. */
        struct pollfd pfd[2] = {{fd, writing ? POLLOUT : POLLIN, 0}, {watch, POLLIN, 0}};
        ssize_t n;
        /* Past the deadline what is there already still counts: a rank stopped past it
         * finds the store's answer, or its word, waiting. A signal caught (a profiler's
         * timer, a SIGCHLD handler) interrupts the poll, which then goes on. */
        int ready = poll(pfd, 2, sc_clock_ms_until(deadline));

        if (ready < 0 && errno == EINTR)
            continue;
        /* A poll that timed out before the deadline by sc_clock_now's coarse clock (a
         * tick behind poll's) goes on: callers tell a silent peer from a closed
         * connection by that clock. */
        if (ready == 0 && sc_clock_now() < deadline)
            continue;
        if (ready == 0)
            errno = ETIMEDOUT;
        if (ready <= 0)
            return -1;
        /* Where both wait, the one that came first (sc_store_net_came_first). */
        if (pfd[1].revents &&
            !(pfd[0].revents && !writing && sc_store_net_came_first(fd, watch)))
            return -2;
        if (!pfd[0].revents)
            continue;
        /* Never blocking: a blocking socket's send waits until all of len is queued,
         * which a peer that stopped reading (stopped, hung) holds up past any deadline. */
        n = writing ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
                    : recv(fd, p, len, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n == 0)
            errno = 0; /* closed: no error */
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int sc_store_net_send_some(int fd, const void *head, size_t head_len, const void *body,
                           size_t body_len, size_t *sent)
{
    size_t total = head_len + body_len;

    while (*sent < total) {
        const uint8_t *from = *sent < head_len ? (const uint8_t *)head + *sent
                                               : (const uint8_t *)body + (*sent - head_len);
        size_t len = *sent < head_len ? head_len - *sent : total - *sent;
        ssize_t n = send(fd, from, len, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        if (n <= 0)
            return -1;
        *sent += (size_t)n;
    }
    return 1;
}

int sc_store_net_reply(int fd, int32_t status, const void *payload, uint32_t len,
                       double deadline)
{
    sc_store_reply_t rep = {SC_STORE_MAGIC, status, len};

    if (sc_store_net_io(fd, &rep, sizeof(rep), deadline, 1) != 0)
        return -1;
    return sc_store_net_io(fd, (void *)payload, len, deadline, 1);
}

int sc_store_net_read_reply(int fd, sc_store_reply_t *rep, double deadline)
{
    return sc_store_net_read_reply_watch(fd, rep, deadline, -1);
}

/* Whether rep is a store's answer header (sc_store_net_read_reply). */
static int sc_store_net_reply_valid(const sc_store_reply_t *rep)
{
    return rep->magic == SC_STORE_MAGIC && sc_status_known(rep->status) &&
           rep->status != SC_IN_PROGRESS &&
           (rep->status == SC_SUCCESS || (rep->len > 0 && rep->len < SC_ERROR_MAX));
}

/* Whether the len bytes of text are text (no control character). */
static int sc_store_net_is_text(const char *text, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++)
        if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
            return 0;
    return 1;
}

int sc_store_net_read_reply_watch(int fd, sc_store_reply_t *rep, double deadline, int watch)
{
    int got = sc_store_net_io_watch(fd, rep, sizeof(*rep), deadline, 0, watch);

    if (got != 0)
        return got;
    return !sc_store_net_reply_valid(rep);
}

int sc_store_net_read_text(int fd, const sc_store_reply_t *rep, char *text, double deadline)
{
    if (sc_store_net_io(fd, text, rep->len, deadline, 0) != 0)
        return -1;
    text[rep->len] = '\0';
    return !sc_store_net_is_text(text, rep->len);
}

int sc_store_net_word_some(int fd, sc_store_word_t *w)
{
    const size_t head = sizeof(w->rep);

    for (;;) {
        size_t want;
        uint8_t *to;
        ssize_t n;

        if (w->got == head && !w->text) { /* its header came: a sentence to come or none */
            if (!sc_store_net_reply_valid(&w->rep) ||
                (w->rep.status == SC_SUCCESS && w->rep.len != 0))
                return -1;
            if (w->rep.status == SC_SUCCESS)
                return 1;
            if (!(w->text = malloc((size_t)w->rep.len + 1)))
                return -1;
            w->text[w->rep.len] = '\0';
        }
        if (w->text && w->got == head + w->rep.len)
            return sc_store_net_is_text(w->text, w->rep.len) ? 1 : -1;
        want = w->got < head ? head - w->got : head + w->rep.len - w->got;
        to = w->got < head ? (uint8_t *)&w->rep + w->got : (uint8_t *)w->text + (w->got - head);
        n = recv(fd, to, want, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        if (n <= 0)
            return -1;
        w->got += (size_t)n;
    }
}

int sc_store_net_read_word(int fd, const char *where, int rank, double deadline, int said,
                           sc_status_t *st, char *text)
{
    sc_store_reply_t rep;
    int got = sc_store_net_read_reply(fd, &rep, deadline);

    *st = (sc_status_t)rep.status;
    text[0] = '\0';
    if (got == 0 && rep.status == SC_SUCCESS && rep.len == 0)
        return 0;
    if (got == 0 && rep.status != SC_SUCCESS &&
        (got = sc_store_net_read_text(fd, &rep, text, deadline)) == 0)
        return 0;
    /* The store (sc_store_tell_outcome) resets the connection of a rank whose socket did
     * not take its answer and verdict by its deadline; where the answer went whole and
     * the verdict did not, the rank finds the reset only here. Each sentence names the
     * rank, not "this rank": a parent passes it on to its children as their failure. */
    if (got < 0 && errno == ECONNRESET && !said) {
        *st = SC_ERR_TIMEOUT;
        snprintf(text, SC_ERROR_MAX, "rendezvous at %s: rank 0's store gave up on rank %d "
                 "(it reset the connection) before rank %d took its word on whether every "
                 "rank had the table of the ranks' blobs: it took nothing more by "
                 SC_STORE_DEADLINE_TEXT ": it was stopped or too slow", where, rank, rank);
        return -1;
    }
    if (sc_clock_now() >= deadline) {
        *st = SC_ERR_TIMEOUT;
        snprintf(text, SC_ERROR_MAX, "rendezvous at %s: the store of rank 0 did not say "
                 "by rank %d's deadline whether every rank had the table of the ranks' "
                 "blobs: rank 0 is stopped or hung", where, rank);
        return 1;
    }
    *st = SC_ERR_PEER_FAILED;
    snprintf(text, SC_ERROR_MAX, "rendezvous at %s: the store of rank 0 closed rank %d's "
             "connection before every rank had the table of the ranks' blobs: rank 0 "
             "exited or was killed", where, rank);
    return -1;
}

void sc_store_net_skip(int fd, size_t len, double deadline)
{
    (void)sc_store_net_drain(fd, len, HUGE_VAL, deadline);
}

int sc_store_net_drain(int fd, size_t len, double idle_s, double deadline)
{
    uint8_t buf[4096];
    double heard = sc_clock_now(); /* when the last byte came */

    while (len > 0) {
        struct pollfd pfd = {fd, POLLIN, 0};
        double by = heard + idle_s < deadline ? heard + idle_s : deadline;
        int ready = poll(&pfd, 1, sc_clock_ms_until(by));
        ssize_t n;

        if (ready < 0 && errno == EINTR)
            continue;
        /* As in sc_store_net_io: poll's clock is a tick ahead of sc_clock_now's. */
        if (ready == 0 && sc_clock_now() < by)
            continue;
        if (ready <= 0)
            return -1;
        n = recv(fd, buf, len < sizeof(buf) ? len : sizeof(buf), MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n <= 0)
            return -1;
        len -= (size_t)n;
        heard = sc_clock_now();
    }
    return 0;
}

void sc_store_net_close_answered(int fd)
{
    uint8_t buf[256];
    ssize_t n;

    shutdown(fd, SHUT_WR);
    do
        n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    while (n > 0 || (n < 0 && errno == EINTR));
    close(fd);
}

void sc_store_net_where(const char *addr, int port, char *buf, size_t len)
{
    if (strchr(addr, ':'))
        snprintf(buf, len, "[%s]:%d", addr, port);
    else
        snprintf(buf, len, "%s:%d", addr, port);
}

/* Whether sa is an address of this host: a loopback or unspecified one, or one of its
 * interfaces' (an IPv4 one also as an IPv4-mapped IPv6 address). */
static int sc_store_net_own_address(const struct sockaddr *sa, const struct ifaddrs *ifs)
{
    struct in_addr v4;
    int is_v4 = sa->sa_family == AF_INET;

    if (is_v4) {
        v4 = ((const struct sockaddr_in *)sa)->sin_addr;
    } else {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a6) || IN6_IS_ADDR_UNSPECIFIED(a6))
            return 1;
        if ((is_v4 = IN6_IS_ADDR_V4MAPPED(a6)))
            memcpy(&v4, &a6->s6_addr[12], sizeof(v4));
    }
    if (is_v4 && ((ntohl(v4.s_addr) >> 24) == 127 || v4.s_addr == htonl(INADDR_ANY)))
        return 1;
    for (const struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr)
            continue;
        if (is_v4 && i->ifa_addr->sa_family == AF_INET &&
            ((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == v4.s_addr)
            return 1;
        if (!is_v4 && i->ifa_addr->sa_family == AF_INET6 &&
            memcmp(&((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
                   &((const struct sockaddr_in6 *)sa)->sin6_addr, sizeof(struct in6_addr)) == 0)
            return 1;
    }
    return 0;
}

void sc_store_net_check_master(const char *addr, char *note, size_t len)
{
    struct addrinfo hints, *res = NULL;
    struct ifaddrs *ifs = NULL;
    char first[INET6_ADDRSTRLEN] = ""; /* what a name resolves to */
    int gai, own = 0;

    note[0] = '\0';
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = sc_bootstrap_addr_is_numeric(addr) ? AI_NUMERICHOST : 0;
    if ((gai = getaddrinfo(addr, NULL, &hints, &res)) != 0) {
        snprintf(note, len, "the master address %s does not resolve on rank 0 (%s): the "
                 "other ranks cannot find this store by it", addr, gai_strerror(gai));
        return;
    }
    if (getifaddrs(&ifs) != 0) {
        freeaddrinfo(res);
        return; /* nothing to compare with: no claim either way */
    }
    for (struct addrinfo *ai = res; ai && !own; ai = ai->ai_next)
        own = sc_store_net_own_address(ai->ai_addr, ifs);
    if (!own) {
        const void *a = res->ai_family == AF_INET
                            ? (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr
                            : (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr;
        if (!sc_bootstrap_addr_is_numeric(addr))
            inet_ntop(res->ai_family, a, first, sizeof(first));
        snprintf(note, len, "the master address %s%s%s%s is none of rank 0's own addresses "
                 "(the other ranks connect there, which leads to this store only through a "
                 "NAT or a virtual IP: check SC_MASTER_ADDR or MASTER_ADDR)", addr,
                 first[0] ? " (" : "", first, first[0] ? ")" : "");
    }
    freeifaddrs(ifs);
    freeaddrinfo(res);
}

/* A socket of family bound to port on every address, or -1 with *err its errno. An
 * IPv6 socket takes IPv4 clients too (IPV6_V6ONLY off, as mapped addresses), so that the
 * master address may be of either family. */
static int sc_store_net_bind(int family, int port, int *err)
{
    struct sockaddr_in6 sa6;
    struct sockaddr_in sa;
    int one = 1, zero = 0, fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        *err = errno;
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (family == AF_INET6) {
        memset(&sa6, 0, sizeof(sa6));
        sa6.sin6_family = AF_INET6;
        sa6.sin6_addr = in6addr_any;
        sa6.sin6_port = htons((uint16_t)port);
        if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) == 0 &&
            bind(fd, (struct sockaddr *)&sa6, sizeof(sa6)) == 0)
            return fd;
    } else {
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_ANY);
        sa.sin_port = htons((uint16_t)port);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            return fd;
    }
    *err = errno;
    close(fd);
    return -1;
}

sc_status_t sc_store_net_listen(int port, int backlog, int *fd)
{
    int e = 0;

    /* Dual-stack; IPv4 alone where this host has no IPv6 (a kernel without it, or
     * IPv6 switched off). A port in use is that, whichever family found it. */
    *fd = sc_store_net_bind(AF_INET6, port, &e);
    if (*fd < 0 && e != EADDRINUSE && e != EACCES)
        *fd = sc_store_net_bind(AF_INET, port, &e);
    if (*fd >= 0 && listen(*fd, backlog) != 0) {
        e = errno;
        close(*fd);
        *fd = -1;
    }
    if (*fd < 0) {
        char holder[128], who[320] = "";
        int found = e == EADDRINUSE ? sc_port_holder(port, holder, sizeof(holder)) : -1;
        /* Only rank 0 listens there: the same program's is another rank 0 (of this job,
         * launched twice as node 0, or of an earlier launch). */
        if (found >= 0)
            snprintf(who, sizeof(who), ": %s listens on it%s", holder,
                     found ? ", and it runs this program too: likely another rank 0 (two "
                             "nodes given the same --node-rank or SC_RANK, or an earlier "
                             "launch still running)"
                           : "");
        /* The log prefix names the rank; the sentence reads as the others here do. */
        return sc_error(SC_ERR_SYSTEM, "rendezvous failed: the store could not listen on "
                        "port %d: %s%s (set SC_MASTER_PORT to a free port)", port, strerror(e),
                        who);
    }
    return SC_SUCCESS;
}

/* Whether fd is connected to itself: a connection to a port of this host where nothing
 * listens comes up so when the kernel picks that very port for this end (TCP's
 * simultaneous open; scrun's ports lie in the kernel's ephemeral range), and everything
 * sent on it comes back as the answer. */
static int sc_store_net_self(int fd)
{
    struct sockaddr_storage here, there;
    socklen_t here_len = sizeof(here), there_len = sizeof(there);

    memset(&here, 0, sizeof(here));
    memset(&there, 0, sizeof(there));
    return getsockname(fd, (struct sockaddr *)&here, &here_len) == 0 &&
           getpeername(fd, (struct sockaddr *)&there, &there_len) == 0 &&
           here_len == there_len && memcmp(&here, &there, here_len) == 0;
}

/* One connection attempt, bounded by deadline (a blocking connect() behind a link that
 * drops packets waits out the kernel's SYN retries, about two minutes): the connected
 * socket, blocking again, or -1 with *err the reason (ETIMEDOUT: no answer by the
 * deadline; 0: the deadline had passed before the attempt could learn anything;
 * ECONNREFUSED also for a socket connected to itself: nothing listened there), or -2 as
 * soon as watch (a descriptor; -1: none) has something to read or was closed. */
static int sc_store_net_connect_one(const struct addrinfo *ai, double deadline, int watch,
                                    int *err)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);
    int one = 1, so_err = 0;
    socklen_t len = sizeof(so_err);

    if (fd < 0) {
        *err = errno;
        return -1;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        /* poll ignores a negative descriptor: no watch. */
        struct pollfd pfd[2] = {{fd, POLLOUT, 0}, {watch, POLLIN, 0}};
        int ms = sc_clock_ms_until(deadline), ready = -1, e = errno;

        /* A signal caught meanwhile interrupts the poll, not the attempt. */
        while (e == EINPROGRESS && ms > 0 && (ready = poll(pfd, 2, ms)) < 0 &&
               errno == EINTR)
            ms = sc_clock_ms_until(deadline);
        if (e == EINPROGRESS && ready > 0 && pfd[1].revents) {
            close(fd);
            return -2;
        }
        if (e != EINPROGRESS)
            *err = e;
        else if (ms <= 0)
            *err = 0; /* no time left to learn anything */
        else if (ready == 0)
            *err = ETIMEDOUT;
        else if (ready < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_err, &len) != 0)
            *err = errno;
        else
            *err = so_err;
        if (*err != 0 || ms <= 0) {
            close(fd);
            return -1;
        }
    }
    if (sc_store_net_self(fd)) {
        *err = ECONNREFUSED;
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

int sc_store_net_connect_to(const struct sockaddr *sa, socklen_t sa_len, double deadline,
                            int watch, int *err)
{
    struct addrinfo ai;

    memset(&ai, 0, sizeof(ai));
    ai.ai_family = sa->sa_family;
    ai.ai_socktype = SOCK_STREAM;
    ai.ai_addr = (struct sockaddr *)sa;
    ai.ai_addrlen = sa_len;
    return sc_store_net_connect_one(&ai, deadline, watch, err);
}

int sc_store_net_listen_beside(int fd, int *listen_fd, uint32_t *port)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    int l;

    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        return -1;
    if (sa.ss_family == AF_INET)
        ((struct sockaddr_in *)&sa)->sin_port = 0;
    else
        ((struct sockaddr_in6 *)&sa)->sin6_port = 0;
    l = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l < 0)
        return -1;
    /* Room for every child to wait while this rank fetches the table (the kernel caps
     * it at net.core.somaxconn), whatever SC_STORE_FANOUT rank 0 has. */
    if (bind(l, (struct sockaddr *)&sa, len) != 0 || listen(l, SOMAXCONN) != 0 ||
        getsockname(l, (struct sockaddr *)&sa, &len) != 0) {
        int e = errno;
        close(l);
        errno = e;
        return -1;
    }
    *port = ntohs(sa.ss_family == AF_INET ? ((struct sockaddr_in *)&sa)->sin_port
                                          : ((struct sockaddr_in6 *)&sa)->sin6_port);
    *listen_fd = l;
    return 0;
}

int sc_store_net_accept(int listen_fd, int nonblocking)
{
    return accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0));
}

int sc_store_net_peer(int fd, sc_store_role_t *role, int *loopback)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);

    if (getpeername(fd, (struct sockaddr *)&sa, &len) != 0)
        return -1;
    memset(role->addr, 0, sizeof(role->addr));
    role->scope_id = 0;
    if (sa.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&sa;
        if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
            role->family = AF_INET;
            memcpy(role->addr, &a6->sin6_addr.s6_addr[12], 4);
        } else {
            role->family = AF_INET6;
            memcpy(role->addr, &a6->sin6_addr, 16);
            role->scope_id = a6->sin6_scope_id;
            *loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
            return 0;
        }
    } else if (sa.ss_family == AF_INET) {
        role->family = AF_INET;
        memcpy(role->addr, &((const struct sockaddr_in *)&sa)->sin_addr, 4);
    } else {
        return -1;
    }
    *loopback = role->addr[0] == 127;
    return 0;
}

void sc_store_net_role_where(const sc_store_role_t *role, char *buf, size_t len)
{
    char text[INET6_ADDRSTRLEN] = "?";

    inet_ntop(role->family, role->addr, text, sizeof(text));
    sc_store_net_where(text, role->port, buf, len);
}

/* Why the store could not be reached, from a connection attempt's errno. */
static void sc_store_net_connect_why(int err, char *why, size_t why_len)
{
    if (err == ECONNREFUSED)
        snprintf(why, why_len, "could not be reached: nothing listens there (rank 0 has "
                 "not started, or it has finished this rendezvous already with other "
                 "processes: was this rank launched twice, or with another world size?)");
    else if (err == ETIMEDOUT)
        snprintf(why, why_len, "could not be reached: connections to it went unanswered "
                 "(a host that is down, or a firewall that drops them?)");
    else
        snprintf(why, why_len, "could not be reached: %s", strerror(err));
}

int sc_store_net_connect(const char *addr, int port, double deadline, const int *stop,
                            char *why, size_t why_len, int *last_err)
{
    char portstr[16];
    struct addrinfo hints, *res = NULL;
    int numeric = sc_bootstrap_addr_is_numeric(addr), gai;

    snprintf(portstr, sizeof(portstr), "%d", port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC; /* the master address may be IPv4 or IPv6 */
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = numeric ? AI_NUMERICHOST : 0; /* no DNS query for an address */
    while (sc_clock_now() < deadline && !(stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE))) {
        if (!res && (gai = getaddrinfo(addr, portstr, &hints, &res)) != 0) {
            res = NULL;
#ifdef EAI_ADDRFAMILY
            if (gai == EAI_ADDRFAMILY) {
                snprintf(why, why_len, "the address %s does not resolve (%s): the name has "
                         "no address of a family this host uses", addr, gai_strerror(gai));
                return -2;
            }
#endif
            if (numeric && gai == EAI_NONAME) {
                snprintf(why, why_len, "the address %s is not an IPv4 or IPv6 address (%s)",
                         addr, gai_strerror(gai));
                return -2;
            }
            snprintf(why, why_len, "could not be reached: the address %s does not resolve "
                     "(%s)", addr, gai_strerror(gai));
            usleep(100000);
            continue;
        }
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            int err = 0, fd = sc_store_net_connect_one(ai, deadline, -1, &err);
            if (fd >= 0) {
                freeaddrinfo(res);
                return fd;
            }
            if (err != 0) {
                sc_store_net_connect_why(err, why, why_len);
                *last_err = err;
            }
        }
        usleep(20000);
    }
    if (res)
        freeaddrinfo(res);
    return -1;
}
