/* The answers of rank 0's store once every rank arrived: the table's tree, each rank's
 * place in it sent as its socket takes it, every rank watched until all have the table,
 * and the outcome told to each (bootstrap_store_answer.h). */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/bootstrap_store_answer.h"
#include "core/bootstrap_store_net.h"
#include "core/bootstrap_store_server.h"
#include "core/bootstrap_tree.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/text_list.h"

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

void sc_store_answers_free(sc_store_answers_t *a)
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

sc_status_t sc_store_answer(sc_store_server_t *s, const int *fds,
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

sc_status_t sc_store_watch(sc_store_server_t *s, int *fds, sc_store_answers_t *a,
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

void sc_store_tell_outcome(const sc_store_server_t *s, int *fds,
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
