/* The rendezvous's table of blobs carried down a tree from rank 0: its shape, a child's
 * fetch from its parent, a parent's serving of its children, the table's wire form. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/bootstrap_store_net.h"
#include "core/bootstrap_tree.h"
#include "core/clock.h"
#include "core/error.h"
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

sc_status_t sc_tree_table_take(uint8_t *payload, uint32_t total, int size,
                               sc_store_result_t *result)
{
    size_t *lens = calloc((size_t)size, sizeof(size_t));
    uint8_t **blobs = calloc((size_t)size, sizeof(uint8_t *));
    uint32_t off = 0;

    if (!lens || !blobs) {
        free(lens);
        free(blobs);
        return sc_error(SC_ERR_NO_MEMORY, "rendezvous: out of memory");
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
    return sc_error(SC_ERR_SYSTEM, "rendezvous: the table of the ranks' blobs came malformed "
                    "(%u bytes for %d ranks)", total, size);
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

/* Why the parent gave no table, from where the fetch stopped: *st and why. */
static void sc_tree_fetch_why(uint32_t parent, int err, double deadline, sc_status_t *st,
                              char *why, size_t len)
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
        snprintf(why, len, "nothing came from it by this rank's deadline (SC_TIMEOUT after "
                 "the store answered): rank %u is stopped or hung", parent);
    } else if (err == EPIPE) {
        *st = SC_ERR_PEER_FAILED;
        snprintf(why, len, "its connection closed before the table came: rank %u exited or "
                 "was killed", parent);
    } else {
        *st = SC_ERR_SYSTEM;
        snprintf(why, len, "%s", strerror(err));
    }
}

sc_status_t sc_tree_fetch(const sc_store_role_t *role, int rank, int size, const char *where,
                          double deadline, sc_store_result_t *result, char *err,
                          size_t err_len)
{
    sc_store_hello_t h = {.magic = SC_STORE_MAGIC_HELLO, .protocol = SC_STORE_PROTOCOL,
                          .kind = SC_STORE_CHILD, .rank = (uint32_t)rank,
                          .size = (uint32_t)size};
    struct sockaddr_storage sa;
    socklen_t sa_len = sc_tree_parent_address(role, &sa);
    sc_store_reply_t rep;
    uint8_t *payload = NULL;
    char at[300], why[256], text[SC_ERROR_MAX];
    sc_status_t st = SC_SUCCESS;
    int e = 0, fd = sc_store_net_connect_to((struct sockaddr *)&sa, sa_len, deadline, &e);
    int got;

    if (fd < 0)
        goto err;
    e = EPIPE; /* from here: the connection closed, or nothing came in time */
    if (sc_store_net_io(fd, &h, sizeof(h), deadline, 1) ||
        (got = sc_store_net_read_reply(fd, &rep, deadline)) < 0)
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
    if (sc_store_net_io(fd, payload, rep.len, deadline, 0))
        goto err_close;
    close(fd);
    st = sc_tree_table_take(payload, rep.len, size, result);
    if (st != SC_SUCCESS) {
        free(payload);
        snprintf(err, err_len, "%s", sc_last_error());
    }
    return st;
err_close:
    close(fd);
    free(payload);
err:
    sc_tree_fetch_why(role->parent, e, deadline, &st, why, sizeof(why));
    sc_store_net_role_where(role, at, sizeof(at));
    snprintf(err, err_len, "rendezvous at %s: rank %d got no table of the ranks' blobs from "
             "rank %u, its parent in the rendezvous's tree, at %s: %s", where, rank,
             role->parent, at, why);
    return sc_error(st, "%s", err);
}

/* The children (n ranks) that served[] does not mark, as a sentence's list into buf; how
 * many. */
static int sc_tree_unserved(const uint32_t *children, const uint8_t *served, int n, char *buf,
                            size_t len)
{
    sc_text_list_t l;
    int missing = 0;

    sc_text_list_init(&l, buf, len);
    for (int c = 0; c < n; c++) {
        char item[16];

        if (served[c])
            continue;
        snprintf(item, sizeof(item), "%u", children[c]);
        sc_text_list_add(&l, item);
        missing++;
    }
    return missing;
}

sc_status_t sc_tree_serve(int listen_fd, int rank, const uint32_t *children, int n,
                          sc_status_t st, const char *text, const uint8_t *payload,
                          uint32_t total, const char *where, double deadline)
{
    uint8_t *served = calloc((size_t)n, 1), *handled = calloc((size_t)n, 1);
    char missing[256];
    int left = n, nmissing;

    if (!served || !handled) {
        free(served);
        free(handled);
        return st == SC_SUCCESS ? sc_error(SC_ERR_NO_MEMORY, "rendezvous: out of memory")
                                : st;
    }
    while (left > 0) {
        struct pollfd pfd = {listen_fd, POLLIN, 0};
        int ms = sc_clock_ms_until(deadline), fd, c = 0;
        /* A child that stalls (stopped) holds up the others 5 s at most, as at the store. */
        double until = sc_clock_now() + 5.0 < deadline ? sc_clock_now() + 5.0 : deadline;
        sc_store_hello_t h;

        if (ms <= 0)
            break;
        if (poll(&pfd, 1, ms) <= 0)
            continue;
        fd = accept(listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        if (sc_store_net_io(fd, &h, sizeof(h), until, 0) == 0 &&
            h.magic == SC_STORE_MAGIC_HELLO && h.protocol == SC_STORE_PROTOCOL &&
            h.kind == SC_STORE_CHILD) {
            while (c < n && children[c] != h.rank)
                c++;
        } else {
            c = n; /* no child's hello: dropped */
        }
        if (c < n && !handled[c]) {
            handled[c] = 1;
            left--;
            served[c] = sc_store_net_reply(fd, st,
                                           st == SC_SUCCESS ? payload : (const void *)text,
                                           st == SC_SUCCESS ? total : (uint32_t)strlen(text),
                                           until) == 0;
        }
        close(fd);
    }
    nmissing = sc_tree_unserved(children, served, n, missing, sizeof(missing));
    free(served);
    free(handled);
    if (nmissing == 0 || st != SC_SUCCESS)
        return st;
    return sc_error(SC_ERR_TIMEOUT, "rendezvous at %s: rank%s %s, child%s of rank %d in the "
                    "rendezvous's tree, did not take the table of the ranks' blobs by rank "
                    "%d's deadline (SC_TIMEOUT after the store answered): %s exited, %s "
                    "killed or stopped, or could not reach rank %d", where,
                    nmissing == 1 ? "" : "s", missing, nmissing == 1 ? "" : "ren", rank, rank,
                    nmissing == 1 ? "it" : "they", nmissing == 1 ? "was" : "were", rank);
}
