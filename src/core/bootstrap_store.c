/* The TCP rendezvous store: rank 0 serves, every rank sends its blob and receives all
 * of them, or an error naming the ranks that never arrived. */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/bootstrap_env.h"
#include "core/bootstrap_store.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "core/port_holder.h"

#define SC_STORE_MAGIC 0x53435354u /* "SCST" */
/* A hello whose blob is the sentence of a rank that cannot join (sc_store_tell_failure). */
#define SC_STORE_MAGIC_FAILED 0x53434654u /* "SCFT" */
#define SC_STORE_MAX_BLOB (1u << 20)
/* How long a rank that cannot join spends telling the others (sc_store_tell_failure). */
#define SC_STORE_TELL_S 30.0

typedef struct {
    uint32_t magic;
    uint32_t rank;
    uint32_t size;
    uint32_t len;
} sc_store_hello_t;

typedef struct {
    uint32_t magic;
    int32_t status;
    uint32_t len; /* text length on error, payload length on success */
} sc_store_reply_t;

typedef struct {
    int listen_fd;
    int size;
    double deadline;
    char where[300];
    char note[400];                /* what rank 0 found wrong with the master address */
    pthread_t thread;
    int done;                      /* set (atomically) when the server has answered */
    int told_outside;              /* processes told a failure outside fds (refuse_all) */
    sc_status_t verdict;           /* its outcome, for rank 0's own client */
    char verdict_text[SC_ERROR_MAX];
} sc_store_server_t;

/* Writes/reads exactly len bytes before deadline; -1 on error or timeout. */
static int sc_store_io(int fd, void *buf, size_t len, double deadline, int writing)
{
    uint8_t *p = buf;

    while (len > 0) {
        struct pollfd pfd = {fd, writing ? POLLOUT : POLLIN, 0};
        int ms = sc_clock_ms_until(deadline);
        ssize_t n;

        if (ms <= 0 || poll(&pfd, 1, ms) <= 0)
            return -1;
        n = writing ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads and drops len bytes (up to the deadline). */
static void sc_store_skip(int fd, size_t len, double deadline)
{
    uint8_t buf[4096];

    while (len > 0) {
        size_t n = len < sizeof(buf) ? len : sizeof(buf);
        if (sc_store_io(fd, buf, n, deadline, 0) != 0)
            return;
        len -= n;
    }
}

static void sc_store_reply_error(int fd, sc_status_t st, const char *text, double deadline)
{
    sc_store_reply_t rep = {SC_STORE_MAGIC, st, (uint32_t)strlen(text)};

    if (sc_store_io(fd, &rep, sizeof(rep), deadline, 1) == 0)
        sc_store_io(fd, (void *)text, rep.len, deadline, 1);
}

/* The list of ranks that never arrived ("2, 5"); returns how many. */
static int sc_store_missing(const int *fds, int size, char *buf, size_t len)
{
    size_t n = 0;
    int missing = 0;

    buf[0] = '\0';
    for (int r = 0; r < size; r++) {
        if (fds[r] >= 0)
            continue;
        if (n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%d", missing ? ", " : "", r);
        missing++;
    }
    return missing;
}

/* The rendezvous failed with sentence err (rank 0 ran out of open files, two processes
 * claimed a rank, a rank could not join): every process is told so at once, not left to
 * time out as "never arrived" or, arriving after the verdict, as "could not be
 * reached". The connections held are answered and closed (fds[r] -2: told), which
 * frees their descriptors; then every process that connects is answered until as many
 * as the world has ranks were told (s->told_outside: those answered already outside
 * fds, a second claimant of a rank) or the deadline passed. */
static void sc_store_refuse_all(sc_store_server_t *s, int *fds, sc_status_t st,
                                const char *err)
{
    int told = s->told_outside;

    for (int r = 0; r < s->size; r++) {
        if (fds[r] >= 0) {
            sc_store_reply_error(fds[r], st, err, sc_clock_now() + 2.0);
            close(fds[r]);
            fds[r] = -2;
        }
        told += fds[r] == -2;
    }
    while (told < s->size) {
        struct pollfd pfd = {s->listen_fd, POLLIN, 0};
        int ms = sc_clock_ms_until(s->deadline), fd;
        sc_store_hello_t h;

        if (ms <= 0)
            return;
        if (poll(&pfd, 1, ms) <= 0)
            continue;
        fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        if (sc_store_io(fd, &h, sizeof(h), sc_clock_now() + 5.0, 0) == 0 &&
            (h.magic == SC_STORE_MAGIC || h.magic == SC_STORE_MAGIC_FAILED) &&
            h.len <= SC_STORE_MAX_BLOB) {
            told++;
            /* Its blob is read first: a close with unread bytes resets the connection,
             * and the reset may reach the process before the answer. */
            sc_store_skip(fd, h.len, sc_clock_now() + 2.0);
        }
        sc_store_reply_error(fd, st, err, sc_clock_now() + 2.0);
        close(fd);
    }
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

/* The failure text of a rank that cannot join, read from fd after its hello h, into err
 * as sc_store_failure_sentence says it: 0, or -1 when the connection broke first. */
static int sc_store_read_failure(sc_store_server_t *s, int fd, const sc_store_hello_t *h,
                                 char *err, size_t len)
{
    char text[SC_ERROR_MAX];

    if (h->len >= sizeof(text) || sc_store_io(fd, text, h->len, sc_clock_now() + 5.0, 0))
        return -1;
    text[h->len] = '\0';
    sc_store_failure_sentence(s, h->rank, text, err, len);
    return 0;
}

static void *sc_store_serve(void *arg)
{
    sc_store_server_t *s = arg;
    int *fds = malloc((size_t)s->size * sizeof(int));
    uint8_t **blobs = calloc((size_t)s->size, sizeof(uint8_t *));
    uint32_t *lens = calloc((size_t)s->size, sizeof(uint32_t));
    int arrived = 0, spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    char err[SC_ERROR_MAX] = "";
    sc_status_t st = SC_SUCCESS;

    if (!fds || !blobs || !lens) {
        free(fds);
        free(blobs);
        free(lens);
        if (spare >= 0)
            close(spare);
        return NULL;
    }
    for (int r = 0; r < s->size; r++)
        fds[r] = -1;
    while (arrived < s->size && st == SC_SUCCESS) {
        struct pollfd pfd = {s->listen_fd, POLLIN, 0};
        int ms = sc_clock_ms_until(s->deadline);
        sc_store_hello_t h;
        int fd;

        if (ms <= 0) {
            char missing[512];
            int nmissing = sc_store_missing(fds, s->size, missing, sizeof(missing));
            snprintf(err, sizeof(err),
                     "rendezvous at %s timed out: rank%s %s never arrived (%d of %d)%s%s",
                     s->where, nmissing == 1 ? "" : "s", missing, nmissing, s->size,
                     s->note[0] ? "; " : "", s->note);
            st = SC_ERR_TIMEOUT;
            break;
        }
        if (poll(&pfd, 1, ms) <= 0)
            continue;
        fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            struct rlimit rl = {0, 0};

            getrlimit(RLIMIT_NOFILE, &rl);
            snprintf(err, sizeof(err), "rendezvous at %s: rank 0 ran out of open files "
                     "after %d of %d ranks arrived (it holds one connection per rank until "
                     "every rank arrived, and the limit of open files is %llu): raise the "
                     "limit (ulimit -n) to at least %d, twice the world size and some",
                     s->where, arrived, s->size, (unsigned long long)rl.rlim_cur,
                     2 * s->size + 256);
            st = SC_ERR_SYSTEM;
            /* The spare descriptor makes room to tell this rank too. */
            if (spare >= 0) {
                close(spare);
                spare = -1;
            }
            break;
        }
        if (fd < 0)
            continue;
        if (sc_store_io(fd, &h, sizeof(h), sc_clock_now() + 5.0, 0) != 0 ||
            (h.magic != SC_STORE_MAGIC && h.magic != SC_STORE_MAGIC_FAILED) ||
            h.len > SC_STORE_MAX_BLOB) {
            close(fd);
            continue;
        }
        if (h.magic == SC_STORE_MAGIC_FAILED && h.rank < (uint32_t)s->size) {
            if (sc_store_read_failure(s, fd, &h, err, sizeof(err)) != 0) {
                close(fd);
                continue;
            }
            st = SC_ERR_PEER_FAILED;
            if (fds[h.rank] >= 0) { /* another process claimed that rank */
                sc_store_reply_error(fds[h.rank], st, err, sc_clock_now() + 2.0);
                close(fds[h.rank]);
                s->told_outside++;
            }
            fds[h.rank] = fd; /* answered with the others */
            break;
        }
        if (h.size != (uint32_t)s->size || h.rank >= (uint32_t)s->size || fds[h.rank] >= 0) {
            if (h.size != (uint32_t)s->size)
                snprintf(err, sizeof(err), "rendezvous at %s: a process claimed rank %u of "
                         "world size %u, but rank 0 has world size %d", s->where, h.rank,
                         h.size, s->size);
            else if (h.rank >= (uint32_t)s->size)
                snprintf(err, sizeof(err), "rendezvous at %s: a process claimed rank %u, "
                         "outside the world of size %d", s->where, h.rank, s->size);
            else
                snprintf(err, sizeof(err), "rendezvous at %s: two processes claimed rank %u "
                         "of world size %d (each process needs a rank of its own: check the "
                         "launcher's rank variables)", s->where, h.rank, s->size);
            st = SC_ERR_INVALID_ARG;
            sc_store_skip(fd, h.len, sc_clock_now() + 2.0);
            sc_store_reply_error(fd, st, err, sc_clock_now() + 2.0);
            s->told_outside++;
            close(fd);
            break;
        }
        blobs[h.rank] = malloc(h.len ? h.len : 1);
        if (!blobs[h.rank] || sc_store_io(fd, blobs[h.rank], h.len, sc_clock_now() + 5.0, 0)) {
            free(blobs[h.rank]);
            blobs[h.rank] = NULL;
            close(fd);
            continue;
        }
        lens[h.rank] = h.len;
        fds[h.rank] = fd;
        arrived++;
    }
    /* A failed rendezvous is said to every rank, those still to come too; then no later
     * process may join it. */
    if (st != SC_SUCCESS)
        sc_store_refuse_all(s, fds, st, err);
    close(s->listen_fd);
    if (spare >= 0)
        close(spare);
    for (int r = 0; r < s->size; r++) {
        double deadline = sc_clock_now() + 5.0;
        if (fds[r] < 0)
            continue;
        if (st != SC_SUCCESS) {
            sc_store_reply_error(fds[r], st, err, deadline);
        } else {
            uint32_t total = 0;
            sc_store_reply_t rep;
            for (int q = 0; q < s->size; q++)
                total += (uint32_t)sizeof(uint32_t) + lens[q];
            rep = (sc_store_reply_t){SC_STORE_MAGIC, SC_SUCCESS, total};
            if (sc_store_io(fds[r], &rep, sizeof(rep), deadline, 1) == 0) {
                for (int q = 0; q < s->size; q++) {
                    if (sc_store_io(fds[r], &lens[q], sizeof(uint32_t), deadline, 1) ||
                        sc_store_io(fds[r], blobs[q], lens[q], deadline, 1))
                        break;
                }
            }
        }
        close(fds[r]);
    }
    for (int r = 0; r < s->size; r++)
        free(blobs[r]);
    free(blobs);
    free(lens);
    free(fds);
    s->verdict = st;
    snprintf(s->verdict_text, sizeof(s->verdict_text), "%s", err);
    __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* addr:port as the sentences write it, an IPv6 address in brackets ([::1]:29500). */
static void sc_store_where(const char *addr, int port, char *buf, size_t len)
{
    if (strchr(addr, ':'))
        snprintf(buf, len, "[%s]:%d", addr, port);
    else
        snprintf(buf, len, "%s:%d", addr, port);
}

/* Whether sa is an address of this host: a loopback or unspecified one, or one of its
 * interfaces' (an IPv4 one also as an IPv4-mapped IPv6 address). */
static int sc_store_own_address(const struct sockaddr *sa, const struct ifaddrs *ifs)
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

/* Rank 0's look at the master address, where the other ranks connect: note is empty
 * when it resolves to one of this host's addresses, else a clause saying what is wrong
 * (warned at start, it ends the rendezvous timeout's sentence). Not an error: behind a
 * NAT or a virtual IP the address is not rank 0's own and still leads here. */
static void sc_store_check_master(const char *addr, char *note, size_t len)
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
        own = sc_store_own_address(ai->ai_addr, ifs);
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
static int sc_store_bind(int family, int port, int *err)
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

static sc_status_t sc_store_listen(sc_store_server_t *s, int port)
{
    int e = 0;

    /* Dual-stack; IPv4 alone where this host has no IPv6 (a kernel without it, or
     * IPv6 switched off). A port in use is that, whichever family found it. */
    s->listen_fd = sc_store_bind(AF_INET6, port, &e);
    if (s->listen_fd < 0 && e != EADDRINUSE && e != EACCES)
        s->listen_fd = sc_store_bind(AF_INET, port, &e);
    if (s->listen_fd >= 0 && listen(s->listen_fd, s->size < 128 ? 128 : s->size) != 0) {
        e = errno;
        close(s->listen_fd);
        s->listen_fd = -1;
    }
    if (s->listen_fd < 0) {
        char holder[128], who[160] = "";
        if (e == EADDRINUSE && sc_port_holder(port, holder, sizeof(holder)) == 0)
            snprintf(who, sizeof(who), ": %s listens on it", holder);
        return sc_error(SC_ERR_SYSTEM, "rank 0 could not serve the rendezvous on port %d: "
                        "%s%s (set SC_MASTER_PORT to a free port)", port, strerror(e), who);
    }
    return SC_SUCCESS;
}

/* One connection attempt, bounded by deadline (a blocking connect() behind a link that
 * drops packets waits out the kernel's SYN retries, about two minutes): the connected
 * socket, blocking again, or -1 with *err the reason (ETIMEDOUT: no answer by the
 * deadline; 0: the deadline had passed before the attempt could learn anything). */
static int sc_store_connect_one(const struct addrinfo *ai, double deadline, int *err)
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
        struct pollfd pfd = {fd, POLLOUT, 0};
        int ms = sc_clock_ms_until(deadline), ready;

        if (errno != EINPROGRESS)
            *err = errno;
        else if (ms <= 0)
            *err = 0; /* no time left to learn anything */
        else if ((ready = poll(&pfd, 1, ms)) == 0)
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
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Why the store could not be reached, from a connection attempt's errno. */
static void sc_store_connect_why(int err, char *why, size_t why_len)
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

/* A connected socket, or -1 at the deadline or once *stop is set (stop may be NULL);
 * *why then says what failed last, and *last_err its errno (0: none). -2, with *why,
 * at once when the address cannot resolve however long this waits: an IP address that
 * does not parse, or a name with no address of a family this host has. A name that does
 * not resolve (yet) is retried: a node's name may come up in DNS after rank 0 starts. */
static int sc_store_connect(const char *addr, int port, double deadline, const int *stop,
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
            int err = 0, fd = sc_store_connect_one(ai, deadline, &err);
            if (fd >= 0) {
                freeaddrinfo(res);
                return fd;
            }
            if (err != 0) {
                sc_store_connect_why(err, why, why_len);
                *last_err = err;
            }
        }
        usleep(20000);
    }
    if (res)
        freeaddrinfo(res);
    return -1;
}

/* One attempt: SC_IN_PROGRESS when the connection broke and a retry may succeed. */
static sc_status_t sc_store_exchange(int fd, int rank, int size, const void *blob, size_t len,
                                     double deadline, sc_store_result_t *result)
{
    sc_store_hello_t h = {SC_STORE_MAGIC, (uint32_t)rank, (uint32_t)size, (uint32_t)len};
    sc_store_reply_t rep;
    uint8_t *payload, *p;

    if (sc_store_io(fd, &h, sizeof(h), deadline, 1) || sc_store_io(fd, (void *)blob, len, deadline, 1))
        return SC_IN_PROGRESS;
    if (sc_store_io(fd, &rep, sizeof(rep), deadline, 0) || rep.magic != SC_STORE_MAGIC)
        return SC_IN_PROGRESS;
    payload = malloc(rep.len + 1u);
    if (!payload)
        return sc_error(SC_ERR_NO_MEMORY, "rendezvous: out of memory");
    if (sc_store_io(fd, payload, rep.len, deadline, 0)) {
        free(payload);
        return SC_IN_PROGRESS;
    }
    if (rep.status != SC_SUCCESS) {
        payload[rep.len] = '\0';
        sc_error((sc_status_t)rep.status, "%s", (char *)payload);
        free(payload);
        return (sc_status_t)rep.status;
    }
    result->size = size;
    result->lens = calloc((size_t)size, sizeof(size_t));
    result->blobs = calloc((size_t)size, sizeof(uint8_t *));
    if (!result->lens || !result->blobs) {
        free(result->lens);
        free(result->blobs);
        free(payload);
        return sc_error(SC_ERR_NO_MEMORY, "rendezvous: out of memory");
    }
    p = payload;
    for (int r = 0; r < size; r++) {
        uint32_t l;
        memcpy(&l, p, sizeof(l));
        result->lens[r] = l;
        result->blobs[r] = p + sizeof(l);
        p += sizeof(l) + l;
    }
    result->storage = payload;
    return SC_SUCCESS;
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

sc_status_t sc_store_allgather(const char *addr, int port, int rank, int size,
                               double timeout_s, const void *blob, size_t len,
                               sc_store_result_t *result)
{
    sc_store_server_t server;
    double deadline = sc_clock_now() + timeout_s;
    /* Clients wait a little longer than the server so they hear its verdict. */
    double client_deadline = deadline + 3.0;
    double start = sc_clock_now();
    sc_status_t st = SC_IN_PROGRESS;
    char why[384] = "could not be reached", where[300];
    int broke = 0, err = 0;

    if (size == 1 && rank == 0)
        return sc_store_alone(blob, len, result);
    sc_store_raise_nofile(size);
    sc_store_where(addr, port, where, sizeof(where));
    if (rank == 0) {
        memset(&server, 0, sizeof(server));
        server.size = size;
        server.deadline = deadline;
        sc_store_where(addr, port, server.where, sizeof(server.where));
        sc_store_check_master(addr, server.note, sizeof(server.note));
        if (server.note[0])
            sc_log(SC_LOG_WARN, "%s", server.note);
        st = sc_store_listen(&server, port);
        if (st != SC_SUCCESS)
            return st;
        if (pthread_create(&server.thread, NULL, sc_store_serve, &server) != 0) {
            close(server.listen_fd);
            return sc_error(SC_ERR_SYSTEM, "rendezvous server thread could not start");
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
        double until = broke && client_deadline > sc_clock_now() + 1.0 ? sc_clock_now() + 1.0
                                                                        : client_deadline;
        int fd;

        err = 0;
        fd = sc_store_connect(rank == 0 ? "127.0.0.1" : addr, port, until,
                              rank == 0 ? &server.done : NULL, why, sizeof(why), &err);
        if (fd == -2) {
            st = sc_error(SC_ERR_INVALID_ARG, "rendezvous failed: the store of rank 0 at %s "
                          "cannot be reached: %s (the master address is rank 0's host name "
                          "or IP address)", where, why);
            break;
        }
        if (fd < 0 && broke && err == ECONNREFUSED) {
            st = sc_error(SC_ERR_PEER_FAILED, "rendezvous failed after %.1f s: the store of "
                          "rank 0 at %s closed this rank's connection before it answered, "
                          "and nothing listens there any more: rank 0 exited or was killed "
                          "during the rendezvous", sc_clock_now() - start, where);
            break;
        }
        if (fd < 0 && until < client_deadline &&
            !(rank == 0 && __atomic_load_n(&server.done, __ATOMIC_ACQUIRE)))
            continue;
        if (fd < 0)
            break;
        snprintf(why, sizeof(why), "never answered");
        st = sc_store_exchange(fd, rank, size, blob, len, client_deadline, result);
        close(fd);
        if (st == SC_IN_PROGRESS) {
            broke = 1;
            usleep(50000);
        }
    }
    if (rank == 0) {
        pthread_join(server.thread, NULL);
        if (st == SC_IN_PROGRESS && server.verdict != SC_SUCCESS)
            st = sc_error(server.verdict, "%s", server.verdict_text);
    }
    if (st == SC_IN_PROGRESS)
        st = sc_error(SC_ERR_TIMEOUT,
                      "rendezvous timed out after %.1f s: the store of rank 0 at %s %s",
                      sc_clock_now() - start, where, why);
    return st;
}

void sc_store_tell_failure(const char *addr, int port, int rank, int size, double timeout_s,
                           const char *text)
{
    char saved[SC_ERROR_MAX], why[384];
    double deadline = sc_clock_now() + (timeout_s < SC_STORE_TELL_S ? timeout_s
                                                                     : SC_STORE_TELL_S);
    int err = 0;

    if (size <= 1)
        return;
    snprintf(saved, sizeof(saved), "%s", sc_last_error());
    if (rank == 0) {
        sc_store_server_t server;
        int *fds = malloc((size_t)size * sizeof(int));
        char sentence[SC_ERROR_MAX];

        memset(&server, 0, sizeof(server));
        server.size = size;
        server.deadline = deadline;
        sc_store_where(addr, port, server.where, sizeof(server.where));
        if (fds && sc_store_listen(&server, port) == SC_SUCCESS) {
            for (int r = 0; r < size; r++)
                fds[r] = -1;
            fds[0] = -2; /* rank 0 knows */
            sc_store_failure_sentence(&server, 0, text, sentence, sizeof(sentence));
            sc_store_refuse_all(&server, fds, SC_ERR_PEER_FAILED, sentence);
            close(server.listen_fd);
        }
        free(fds);
    } else {
        size_t n = strlen(text);
        sc_store_hello_t h = {SC_STORE_MAGIC_FAILED, (uint32_t)rank, (uint32_t)size,
                              (uint32_t)(n < SC_ERROR_MAX ? n : SC_ERROR_MAX - 1)};
        int fd = sc_store_connect(addr, port, deadline, NULL, why, sizeof(why), &err);
        if (fd >= 0) {
            sc_store_reply_t rep;
            /* The answer is read so that rank 0's store counts this rank as told. */
            if (sc_store_io(fd, &h, sizeof(h), deadline, 1) == 0 &&
                sc_store_io(fd, (void *)text, h.len, deadline, 1) == 0 &&
                sc_store_io(fd, &rep, sizeof(rep), deadline, 0) == 0)
                sc_store_skip(fd, rep.len, deadline);
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
