/* Rank 0's store server thread (bootstrap_store_server.h): it gathers the ranks'
 * arrivals (bootstrap_store_arrival.c) and answers them (bootstrap_store_answer.c), and
 * after a failure, or where rank 0 cannot serve, refuses every process that comes. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/bootstrap_store_answer.h"
#include "core/bootstrap_store_arrival.h"
#include "core/bootstrap_store_linger.h"
#include "core/bootstrap_store_net.h"
#include "core/bootstrap_store_server.h"
#include "core/clock.h"
#include "core/error.h"

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

int sc_store_wait(sc_store_server_t *s, int fd, short events, double deadline)
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

void sc_store_reply_error(sc_store_server_t *s, int fd, sc_status_t st,
                          const char *text, double deadline)
{
    sc_store_reply_t rep = {SC_STORE_MAGIC, st, (uint32_t)strlen(text)};
    size_t sent = 0;

    while (sc_store_net_send_some(fd, &rep, sizeof(rep), text, rep.len, &sent) == 0 &&
           sc_store_wait(s, fd, POLLOUT, deadline) > 0)
        ;
}

void sc_store_skip(sc_store_server_t *s, int fd, size_t len, double deadline)
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

void sc_store_failure_sentence(const sc_store_server_t *s, uint32_t rank,
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
    s->listen_fd = -1; /* none yet: a fork's child closes what it holds (watched) */
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

sc_status_t sc_store_server_listen(sc_store_server_t *s)
{
    sc_status_t st;

    /* Watched before the socket exists, not once the store's thread started: a fork
     * in between (pthread_create is slow under ThreadSanitizer) left the child a copy
     * that listened, on which a process that came after the parent's store stopped was
     * queued, answered by none (api.library_load.fork_during_the_rendezvous_keeps_no_store
     * failed so in CI's TSan run). */
    sc_store_linger_watch(s);
    pthread_mutex_lock(&s->lock);
    st = sc_store_net_listen(s->port, s->size < 128 ? 128 : s->size, &s->listen_fd);
    pthread_mutex_unlock(&s->lock);
    if (st != SC_SUCCESS)
        sc_store_linger_unwatch(s);
    return st;
}

int sc_store_server_tell_failure(sc_store_server_t *s, const char *text)
{
    if (sc_store_server_listen(s) != SC_SUCCESS)
        return -1;
    s->verdict = SC_ERR_PEER_FAILED;
    sc_store_failure_sentence(s, 0, text, s->verdict_text, sizeof(s->verdict_text));
    __atomic_store_n(&s->failed, 1, __ATOMIC_RELEASE);
    if (pthread_create(&s->thread, NULL, sc_store_serve_failure, s) != 0) {
        sc_store_linger_unwatch(s);
        close(s->listen_fd);
        return -1;
    }
    return 0;
}
