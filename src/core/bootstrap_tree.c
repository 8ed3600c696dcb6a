/* The rendezvous's table of blobs carried down a tree from rank 0: its shape, a child's
 * fetch from its parent, a parent's serving of its children, the table's wire form. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/bootstrap_env.h"
#include "core/bootstrap_store_net.h"
#include "core/bootstrap_tree.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "core/text_list.h"

int sc_tree_side(int family, int loopback)
{
    return (family == AF_INET6) * 2 + (loopback != 0);
}

sc_status_t sc_tree_layout(int size, int fanout, const uint8_t *side, const uint32_t *port,
                           int *parent, int *depth)
{
    /* The ranks of one tree in rank order: the children of the one at position i are at
     * positions fanout * (i + 1) to fanout * (i + 2) - 1, those of rank 0 at 0 to
     * fanout - 1. */
    int *member = malloc((size_t)size * sizeof(int));

    if (!member)
        return sc_error(SC_ERR_NO_MEMORY, "rendezvous: out of memory");
    parent[0] = depth[0] = 0;
    for (int group = 0; group < SC_TREE_SIDES; group++) {
        int n = 0;

        for (int r = 1; r < size; r++) {
            int p;

            if (side[r] != group)
                continue;
            p = n < fanout ? 0 : member[n / fanout - 1];
            if (port[p] == 0)
                p = 0;
            parent[r] = p;
            depth[r] = p ? depth[p] + 1 : 1;
            member[n++] = r;
        }
    }
    free(member);
    return SC_SUCCESS;
}

sc_status_t sc_tree_table_take(uint8_t *payload, uint32_t total, const char *where, int rank,
                               int size, sc_store_result_t *result)
{
    size_t *lens = calloc((size_t)size, sizeof(size_t));
    uint8_t **blobs = calloc((size_t)size, sizeof(uint8_t *));
    uint32_t off = 0;

    if (!lens || !blobs) {
        free(lens);
        free(blobs);
        return sc_error(SC_ERR_NO_MEMORY, "rendezvous at %s: rank %d is out of memory for "
                        "the table of the ranks' blobs (%d ranks)", where, rank, size);
    }
    for (int r = 0; r < size; r++) {
        uint32_t l;

        if (total - off < sizeof(l))
            break;
        memcpy(&l, payload + off, sizeof(l));
        off += (uint32_t)sizeof(l);
        if (l > total - off)
            break;
        lens[r] = l;
        blobs[r] = payload + off;
        off += l;
        if (r == size - 1 && off == total) {
            *result = (sc_store_result_t){size, lens, blobs, payload};
            return SC_SUCCESS;
        }
    }
    free(lens);
    free(blobs);
    return sc_error(SC_ERR_SYSTEM, "rendezvous at %s: the table of the ranks' blobs that "
                    "rank %d received came malformed (%u bytes for %d ranks)", where, rank,
                    total, size);
}

/* role's address and port as a socket address, into sa; its length. */
static socklen_t sc_tree_parent_address(const sc_store_role_t *role,
                                        struct sockaddr_storage *sa)
{
    memset(sa, 0, sizeof(*sa));
    if (role->family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)sa;
        a->sin_family = AF_INET;
        a->sin_port = htons(role->port);
        memcpy(&a->sin_addr, role->addr, 4);
        return sizeof(*a);
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)sa;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(role->port);
        memcpy(&a->sin6_addr, role->addr, 16);
        a->sin6_scope_id = role->scope_id;
        return sizeof(*a);
    }
}

/* A rank's launch and world size as sentences write them ("launch ID (from VAR), world
 * size N"), into buf. */
static void sc_tree_launch_text(const sc_store_launch_t *launch, int size, char *buf,
                                size_t len)
{
    if (launch->id[0])
        snprintf(buf, len, "launch %s (from %s), world size %d", launch->id, launch->from,
                 size);
    else
        snprintf(buf, len, "a launch without an id, world size %d", size);
}

/* Why the parent gave no table to rank, from where the fetch stopped: *st and why, which
 * names rank, not "this rank" (its children and the store pass it on). */
static void sc_tree_fetch_why(uint32_t parent, int rank, int err, double deadline,
                              sc_status_t *st, char *why, size_t len)
{
    if (err == ECONNREFUSED) {
        *st = SC_ERR_PEER_FAILED;
        snprintf(why, len, "nothing listens there: rank %u exited or was killed after the "
                 "store answered it", parent);
    } else if (err == ETIMEDOUT || err == 0) {
        *st = SC_ERR_TIMEOUT;
        snprintf(why, len, "connections to it went unanswered (a host that is down, or a "
                 "firewall that drops them?)");
    } else if (err == EPROTO) {
        *st = SC_ERR_PEER_FAILED;
        snprintf(why, len, "what answered there is not rank %u serving the table (its "
                 "answer is not one a rank sends): rank %u exited, and another program "
                 "listens on its port", parent, parent);
    } else if (err == EPIPE && sc_clock_now() >= deadline) {
        *st = SC_ERR_TIMEOUT;
        snprintf(why, len, "nothing came from it by rank %d's deadline (SC_TIMEOUT after "
                 "the store answered): rank %u is stopped or hung", rank, parent);
    } else if (err == EPIPE) {
        *st = SC_ERR_PEER_FAILED;
        snprintf(why, len, "its connection closed before the table came: rank %u exited or "
                 "was killed", parent);
    } else {
        *st = SC_ERR_SYSTEM;
        snprintf(why, len, "%s", strerror(err));
    }
}

/* Whether the store's word waits on word's connection (or comes within
 * SC_TREE_WORD_LATE_S), where the word was not heard yet: a child that finds its parent
 * gone looks there before it names the parent exited or killed. */
static int sc_tree_word_waits(const sc_tree_word_t *word)
{
    struct pollfd pfd = {word->fd, POLLIN, 0};
    double until = sc_clock_now() + SC_TREE_WORD_LATE_S;
    int ready;

    if (word->fd < 0 || word->heard)
        return 0;
    do
        ready = poll(&pfd, 1, sc_clock_ms_until(until));
    while (ready < 0 && errno == EINTR);
    return ready > 0;
}

/* The store's word on word->fd, which spoke while this rank (rank) waited for its
 * parent, read into *word as the fetch's failure: its status, its sentence into err. */
static sc_status_t sc_tree_fetch_heard(sc_tree_word_t *word, const char *where, int rank,
                                       char *err, size_t err_len)
{
    /* Before this rank said it has the table, the store speaks only of a failure. */
    word->said = sc_store_net_read_word(word->fd, where, rank, sc_clock_now() + 2.0, 0,
                                        &word->st, word->text) == 0;
    word->heard = 1;
    snprintf(err, err_len, "%s", word->text);
    return sc_error(word->st, "%s", err);
}

sc_status_t sc_tree_fetch(const sc_store_role_t *role, int rank, int size,
                          const sc_store_launch_t *launch, const void *sent, size_t sent_len,
                          const char *where, double deadline, sc_tree_word_t *word,
                          sc_store_result_t *result, char *err, size_t err_len)
{
    sc_store_hello_t h = {.magic = SC_STORE_MAGIC_HELLO, .protocol = SC_STORE_PROTOCOL,
                          .kind = SC_STORE_CHILD, .rank = (uint32_t)rank,
                          .size = (uint32_t)size, .launch = *launch};
    struct sockaddr_storage sa;
    socklen_t sa_len = sc_tree_parent_address(role, &sa);
    sc_store_reply_t rep;
    uint8_t *payload = NULL;
    char at[300], why[640], text[SC_ERROR_MAX], own[160];
    sc_status_t st = SC_SUCCESS;
    int e = 0, fd = -1, got = -1;

    /* A connection the parent closed before it answered, before the deadline, is made
     * again once: a parent drops one that sent no hello within 5 s (this rank stopped
     * between its connect and its hello, in a debugger), and answers the next; one
     * that exited leaves nothing listening, which names it so (ECONNREFUSED). */
    for (int tries = 0; got < 0 && tries < 2; tries++) {
        if (fd >= 0)
            close(fd);
        fd = sc_store_net_connect_to((struct sockaddr *)&sa, sa_len, deadline, word->fd, &e);
        if (fd == -2)
            goto store_spoke;
        if (fd < 0)
            goto err;
        e = EPIPE; /* from here: the connection closed, or nothing came in time */
        got = sc_store_net_io(fd, &h, sizeof(h), deadline, 1) ? -1
              : sc_store_net_read_reply_watch(fd, &rep, deadline, word->fd);
        if (got == -2)
            goto store_spoke;
        if (sc_clock_now() >= deadline)
            break;
    }
    if (got < 0)
        goto err_close;
    if (got > 0 || (rep.status == SC_SUCCESS && rep.len != role->table_len)) {
        e = EPROTO;
        goto err_close;
    }
    if (rep.status != SC_SUCCESS) {
        /* The parent's own failure, as it said it: it names the rank that failed. */
        got = sc_store_net_read_text(fd, &rep, text, deadline);
        e = got > 0 ? EPROTO : EPIPE;
        if (got != 0)
            goto err_close;
        close(fd);
        if (rep.status == SC_ERR_MISMATCH) {
            /* A rank of another launch refused this one (sc_tree_serve): its text says
             * which it is. A parent passes on no such status: a child that got it fails
             * as below. */
            st = SC_ERR_PEER_FAILED;
            sc_tree_launch_text(launch, size, own, sizeof(own));
            snprintf(why, sizeof(why), "what answered there is %.300s, which refused rank "
                     "%d, of %s: rank %u of this launch exited, and a rank of another launch "
                     "on its host (two jobs on one host) got its port", text, rank, own,
                     role->parent);
            goto fail;
        }
        snprintf(err, err_len, "%s", text);
        return sc_error((sc_status_t)rep.status, "%s", err);
    }
    payload = malloc((size_t)rep.len + 1);
    if (!payload) {
        close(fd);
        snprintf(err, err_len, "rendezvous at %s: rank %d is out of memory for the table of "
                 "the ranks' blobs (%u bytes)", where, rank, rep.len);
        return sc_error(SC_ERR_NO_MEMORY, "%s", err);
    }
    got = sc_store_net_io_watch(fd, payload, rep.len, deadline, 0, word->fd);
    if (got == -2)
        goto store_spoke;
    if (got != 0)
        goto err_close;
    close(fd);
    st = sc_tree_table_take(payload, rep.len, where, rank, size, result);
    if (st != SC_SUCCESS) {
        free(payload);
        /* Relayed to its children and the store: the sentence names this rank. */
        snprintf(err, err_len, "%s", sc_error_text_unprefixed());
        return st;
    }
    /* Every rank's entry is the blob it sent the store, and a rank's blob is its own
     * (its host, its pid, its UCX worker's address): a table of another rendezvous holds
     * another process's entry here, whatever launch ids the two sides have. */
    if (result->lens[rank] != sent_len ||
        (sent_len && memcmp(result->blobs[rank], sent, sent_len) != 0)) {
        st = SC_ERR_PEER_FAILED;
        snprintf(why, sizeof(why), "the table that came holds another process's entry for "
                 "rank %d (%zu bytes, where rank %d sent the store %zu): it is the table of "
                 "another rendezvous; rank %u of this launch exited, and a rank of another "
                 "launch on its host that checks no launch (both without a launch id or with "
                 "the same one, or a shardcomm from before 2026-12-07) got its port",
                 rank, result->lens[rank], rank, sent_len, role->parent);
        sc_store_result_free(result);
        goto fail;
    }
    sc_log(SC_LOG_INFO, "rendezvous at %s: rank %d got the table of the ranks' blobs (%u "
           "bytes) from rank %u, its parent in the rendezvous's tree", where, rank, rep.len,
           role->parent);
    return st;
store_spoke:
    if (fd >= 0)
        close(fd);
    free(payload);
    return sc_tree_fetch_heard(word, where, rank, err, err_len);
err_close:
    close(fd);
    free(payload);
err:
    sc_tree_fetch_why(role->parent, rank, e, deadline, &st, why, sizeof(why));
    /* The parent seems gone (nothing listens there, or it closed the connection before
     * the table came). A parent that failed stops serving and closes its port only
     * once the store spoke to it or it told the store its failure (sc_store_tree_part,
     * sc_store_tell_children), and the store says its word to every rank at once: the
     * word that waits here is the true sentence, where this rank named its parent
     * exited or killed. One that was killed is named so by the store too. */
    if (st == SC_ERR_PEER_FAILED && (e == ECONNREFUSED || e == EPIPE) &&
        sc_tree_word_waits(word))
        return sc_tree_fetch_heard(word, where, rank, err, err_len);
fail:
    sc_store_net_role_where(role, at, sizeof(at));
    snprintf(err, err_len, "rendezvous at %s: rank %d got no table of the ranks' blobs from "
             "rank %u, its parent in the rendezvous's tree, at %s: %s", where, rank,
             role->parent, at, why);
    return sc_error(st, "%s", err);
}

/* A connection to this rank's listening socket while it serves its children: its hello
 * as it comes in, then the answer as it goes out, each as far as the socket takes it. */
typedef struct {
    int fd;
    int child;          /* its index in children once its hello came; -1 before, and for
                         * one refused (another launch's) */
    double hello_until; /* a connection silent past this is no child's, and one refused
                         * that has not taken its answer by then: dropped */
    size_t got;         /* bytes of the hello read */
    size_t sent;        /* bytes of the answer (header, then payload) sent */
    sc_store_hello_t h;
    const struct sc_tree_answer *ans; /* what it is sent, once its hello came; NULL before */
} sc_tree_conn_t;

/* What sc_tree_serve sends: st with payload (the table) or text (a failure). */
typedef struct sc_tree_answer {
    sc_store_reply_t rep;
    const uint8_t *payload;
} sc_tree_answer_t;

/* Reads what came of k's hello: 0 while it comes or once it named a child not yet
 * handled (k->child set, handled[] marked), 1 when it is a rank's of another world size
 * than size or of another launch than launch (both ids known), whatever its rank: it is
 * refused, and handled[] is left as it was (the child of that rank may still come); -1
 * when the connection is to be dropped (it closed, or it is no child's hello, or that
 * child came already). */
static int sc_tree_conn_read(sc_tree_conn_t *k, const uint32_t *children, int n,
                             uint8_t *handled, int size, const sc_store_launch_t *launch)
{
    ssize_t got = recv(k->fd, (uint8_t *)&k->h + k->got, sizeof(k->h) - k->got, MSG_DONTWAIT);

    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    if (got <= 0)
        return -1;
    k->got += (size_t)got;
    if (k->got < sizeof(k->h))
        return 0;
    if (k->h.magic != SC_STORE_MAGIC_HELLO || k->h.protocol != SC_STORE_PROTOCOL ||
        k->h.kind != SC_STORE_CHILD)
        return -1;
    sc_bootstrap_launch_text(&k->h.launch);
    if (k->h.size != (uint32_t)size ||
        (launch->id[0] && k->h.launch.id[0] && strcmp(k->h.launch.id, launch->id) != 0))
        return 1;
    for (int c = 0; c < n; c++) {
        if (children[c] != k->h.rank)
            continue;
        if (handled[c])
            return -1;
        handled[c] = 1;
        k->child = c;
        return 0;
    }
    return -1;
}

/* Sends what the socket takes of k's answer: 1 once all of it went, 0 while some is
 * left, -1 when the connection broke. */
static int sc_tree_conn_write(sc_tree_conn_t *k)
{
    const sc_tree_answer_t *a = k->ans;

    return sc_store_net_send_some(k->fd, &a->rep, sizeof(a->rep), a->payload, a->rep.len,
                                  &k->sent);
}

/* The children (n ranks) that were not served, as a sentence's list into buf, each that
 * came and took part of the answer with how much (took[c] bytes of total); how many. */
static int sc_tree_unserved(const uint32_t *children, const uint8_t *served,
                            const size_t *took, size_t total, int n, char *buf, size_t len)
{
    sc_text_list_t l;
    int missing = 0;

    sc_text_list_init(&l, buf, len);
    for (int c = 0; c < n; c++) {
        char item[96];

        if (served[c])
            continue;
        if (took[c])
            snprintf(item, sizeof(item), "%u (it took %zu of %zu bytes)",
                     children[c], took[c], total);
        else
            snprintf(item, sizeof(item), "%u", children[c]);
        sc_text_list_add(&l, item);
        missing++;
    }
    return missing;
}

/* Logs the refusal of connection k, whose hello is another launch's or world size's
 * (sc_tree_conn_read), by rank of own (its launch and world size as sentences write
 * them). */
static void sc_tree_conn_refused(const sc_tree_conn_t *k, int rank, const char *own,
                                 const char *where)
{
    char theirs[160];

    sc_tree_launch_text(&k->h.launch, (int)k->h.size, theirs, sizeof(theirs));
    sc_log(SC_LOG_WARN, "rendezvous at %s: rank %d refused the table of the ranks' blobs to "
           "a process claiming rank %u of %s, which asked for it as a child in the "
           "rendezvous's tree: this rank is of %s (that process's parent exited, and this "
           "rank got its port: two jobs on one host)", where, rank, k->h.rank, theirs, own);
}

/* Whether a connection waits to be accepted on listen_fd. */
static int sc_tree_queued(int listen_fd)
{
    struct pollfd pfd = {listen_fd, POLLIN, 0};

    return poll(&pfd, 1, 0) > 0;
}

/* Closes connection k of *nconns; the last one moves into its place. */
static void sc_tree_conn_drop(sc_tree_conn_t *conns, int *nconns, int k)
{
    close(conns[k].fd);
    conns[k] = conns[--*nconns];
}

sc_status_t sc_tree_serve(int listen_fd, int rank, int size, const sc_store_launch_t *launch,
                          const uint32_t *children, int n, sc_status_t st, const char *text,
                          const uint8_t *payload, uint32_t total, const char *where,
                          double deadline, sc_tree_word_t *word)
{
    /* Every connection is served as far as its socket takes it, so that a child that
     * stalls (stopped, or too slow to read) holds up none of its siblings; a connection
     * silent 5 s before its hello is no child's. gone: connections their process closed
     * before any of a hello came, as a child does that hears the store's failure while
     * it connects to this rank (sc_tree_fetch): it failed with the store's sentence and
     * asks no more. Once this rank tells a failure, it ends as soon as every child was
     * told or is one of those, where it waited out its deadline (SC_TREE_TOLD_S) for
     * children that had failed already. theirs: the store said its failure whole (word
     * heard before, st then its, or heard here, whatever this rank tells), as it says
     * it to every child, which hears it from the store itself: the connections at hand
     * are answered, and no child still to come is waited for (one that finds this rank's
     * port closed takes the store's word: sc_tree_fetch), where this rank waited its 2 s
     * for children that had heard the store before they came and never would; also
     * where this rank's own failure came first, or its parent gave it the store's before
     * the store's own word came. */
    int cap = 2 * n + 8, nconns = 0, left = n, gone = 0, nmissing;
    int theirs = st != SC_SUCCESS && word->heard && word->said;
    sc_tree_conn_t *conns = calloc((size_t)cap, sizeof(*conns));
    struct pollfd *pfds = calloc((size_t)cap + 1, sizeof(*pfds));
    uint8_t *served = calloc((size_t)n, 1), *handled = calloc((size_t)n, 1);
    size_t *took = calloc((size_t)n, sizeof(size_t));
    sc_tree_answer_t a = {{SC_STORE_MAGIC, st, st == SC_SUCCESS ? total : (uint32_t)strlen(text)},
                          st == SC_SUCCESS ? payload : (const uint8_t *)text};
    sc_tree_answer_t told; /* the store's failure, once it said one */
    sc_tree_answer_t refuse; /* to a rank of another launch or world size */
    const sc_tree_answer_t *cur = &a;
    char missing[512], own[160], whom[192];

    if (!conns || !pfds || !served || !handled || !took) {
        free(conns);
        free(pfds);
        free(served);
        free(handled);
        free(took);
        return st == SC_SUCCESS ? sc_error(SC_ERR_NO_MEMORY, "rendezvous: out of memory")
                                : st;
    }
    sc_tree_launch_text(launch, size, own, sizeof(own));
    snprintf(whom, sizeof(whom), "rank %d of %s", rank, own);
    refuse = (sc_tree_answer_t){{SC_STORE_MAGIC, SC_ERR_MISMATCH, (uint32_t)strlen(whom)},
                                (const uint8_t *)whom};
    fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
    while (left > 0 && (cur->rep.status == SC_SUCCESS || gone < left)) {
        double now = sc_clock_now(), wake = deadline;
        int np = 0, base, ready, at_word = -1;

        if (now >= deadline || (theirs && nconns == 0 && !sc_tree_queued(listen_fd)))
            break;
        if (nconns < cap)
            pfds[np++] = (struct pollfd){listen_fd, POLLIN, 0};
        if (word->fd >= 0 && !word->heard) {
            at_word = np;
            pfds[np++] = (struct pollfd){word->fd, POLLIN, 0};
        }
        base = np;
        for (int k = 0; k < nconns; k++) {
            pfds[np++] = (struct pollfd){conns[k].fd, conns[k].ans ? POLLOUT : POLLIN, 0};
            if (conns[k].child < 0 && conns[k].hello_until < wake)
                wake = conns[k].hello_until;
        }
        ready = poll(pfds, (nfds_t)np, sc_clock_ms_until(wake));
        if (ready < 0 && errno != EINTR)
            break;
        now = sc_clock_now();
        if (ready > 0 && at_word >= 0 && pfds[at_word].revents) {
            /* The rendezvous failed elsewhere (a rank exited or was killed, or rank 0):
             * the children still to come are told so, for a while, as they come. */
            word->said = sc_store_net_read_word(word->fd, where, rank, now + 2.0, 0,
                                                &word->st, word->text) == 0;
            word->heard = 1;
            if (word->st != SC_SUCCESS && st == SC_SUCCESS) {
                told = (sc_tree_answer_t){{SC_STORE_MAGIC, word->st, (uint32_t)strlen(word->text)},
                                          (const uint8_t *)word->text};
                cur = &told;
            }
            if (word->st != SC_SUCCESS)
                theirs = word->said;
            if (deadline > now + SC_TREE_TOLD_S)
                deadline = now + SC_TREE_TOLD_S;
        }
        /* Back to front, so that a connection dropped (the last moved into its place)
         * leaves those not yet looked at where they were. */
        for (int k = nconns - 1; k >= 0; k--) {
            sc_tree_conn_t *c = &conns[k];
            short rev = ready > 0 ? pfds[base + k].revents : 0;
            int r;

            if (!c->ans) {
                r = rev ? sc_tree_conn_read(c, children, n, handled, size, launch)
                        : -(now >= c->hello_until);
                gone += rev && r < 0 && c->got == 0;
                if (r > 0)
                    sc_tree_conn_refused(c, rank, own, where);
                if (r > 0 || (r == 0 && c->child >= 0)) {
                    c->ans = r > 0 ? &refuse : cur;
                    r = sc_tree_conn_write(c);
                }
            } else {
                /* A refused one that does not take its answer is dropped as a silent one. */
                r = rev ? sc_tree_conn_write(c) : -(c->child < 0 && now >= c->hello_until);
            }
            if (c->child >= 0 && r != 0) {
                served[c->child] = r > 0;
                left--;
            }
            if (c->child >= 0)
                took[c->child] = c->sent;
            if (r != 0)
                sc_tree_conn_drop(conns, &nconns, k);
        }
        if (ready <= 0 || base == 0 || !(pfds[0].revents & POLLIN))
            continue;
        while (nconns < cap) {
            int fd = sc_store_net_accept(listen_fd, 1);

            if (fd < 0)
                break;
            conns[nconns++] = (sc_tree_conn_t){fd, -1, now + 5.0, 0, 0, {0}, NULL};
        }
    }
    for (int k = 0; k < nconns; k++)
        close(conns[k].fd);
    nmissing = sc_tree_unserved(children, served, took, sizeof(a.rep) + a.rep.len, n, missing,
                                sizeof(missing));
    free(conns);
    free(pfds);
    free(served);
    free(handled);
    free(took);
    if (nmissing == 0 || st != SC_SUCCESS || word->heard)
        return st;
    return sc_error(SC_ERR_TIMEOUT, "rendezvous at %s: rank%s %s, child%s of rank %d in the "
                    "rendezvous's tree, did not take the table of the ranks' blobs by rank "
                    "%d's deadline (SC_TIMEOUT after the store answered): %s exited, %s "
                    "killed or stopped, or could not reach rank %d", where,
                    nmissing == 1 ? "" : "s", missing, nmissing == 1 ? "" : "ren", rank, rank,
                    nmissing == 1 ? "it" : "they", nmissing == 1 ? "was" : "were", rank);
}
