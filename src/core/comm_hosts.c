/* The ranks' hosts, from the rendezvous blobs: which ranks share a node (the same host
 * name) and whether the launcher's local sizes and local ranks fit them. Every rank
 * reaches the same verdict from the same blobs, in O(N log N) for N ranks (a sort of the
 * host names: comparing each rank with every other took seconds at 65536 ranks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm_hosts.h"
#include "core/error.h"

/* One rank's entry in the sort: its host name, the local rank it was given (-1: none; for
 * the check of duplicates, the one it takes), itself. */
typedef struct {
    const char *host;
    int32_t local_rank;
    int rank;
} sc_host_entry_t;

static int sc_host_entry_cmp(const void *a, const void *b)
{
    const sc_host_entry_t *x = a, *y = b;
    int c = strncmp(x->host, y->host, SC_HOSTNAME_MAX);

    if (c != 0)
        return c;
    if (x->local_rank != y->local_rank)
        return x->local_rank < y->local_rank ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int32_t sc_blob_int(const sc_store_result_t *res, int r, size_t off)
{
    int32_t v;

    memcpy(&v, res->blobs[r] + off, sizeof(v));
    return v;
}

/* The variable's name at off in rank r's blob, ended. */
static void sc_blob_from(const sc_store_result_t *res, int r, size_t off,
                         char from[SC_BLOB_FROM_LEN])
{
    memcpy(from, res->blobs[r] + off, SC_BLOB_FROM_LEN);
    from[SC_BLOB_FROM_LEN - 1] = '\0';
}

static const char *sc_blob_host(const sc_store_result_t *res, int r)
{
    return (const char *)res->blobs[r];
}

/* The view of the hosts the checks read: node[r] (the first rank of r's host name),
 * count[node[r]] (the ranks of that host name) and index[r] (r's place among them, in
 * rank order). */
typedef struct {
    const sc_store_result_t *res;
    int size;
    int *node, *count, *index;
} sc_hosts_t;

/* Rank r's local size: the launcher's (from its blob), else the ranks of its node. */
static int32_t sc_hosts_local_size(const sc_hosts_t *h, int r)
{
    int32_t given = sc_blob_int(h->res, r, SC_BLOB_LOCAL);

    return given > 0 ? given : h->count[h->node[r]];
}

/* A given local size may be smaller than the ranks of its host name (two launches on
 * one host, as torchrun --nnodes 2 there: equal local sizes, they pass) but not larger:
 * ranks on several hosts that each took themselves for one node's (a launcher's
 * variable wrong on every node but one) would bind to a share of the cores, or open
 * shared-memory transports alone and fail in UCX ("Destination is unreachable"). */
static sc_status_t sc_hosts_check_sizes(const sc_hosts_t *h)
{
    for (int r = 0; r < h->size; r++) {
        int32_t given = sc_blob_int(h->res, r, SC_BLOB_LOCAL), count = h->count[h->node[r]];
        char from[SC_BLOB_FROM_LEN];

        if (given <= count)
            continue;
        sc_blob_from(h->res, r, SC_BLOB_LOCAL_FROM, from);
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: rank %d has local size %d "
                        "(from %s) but %d rank%s of %d %s the host name %.64s; the local "
                        "size counts the ranks of one host (check %s on the host of rank "
                        "%d)", r, given, from, count, count == 1 ? "" : "s", h->size,
                        count == 1 ? "has" : "have", sc_blob_host(h->res, r), from, r);
    }
    /* Ranks that share a host name must agree on the local size, whether a launcher
     * gave it or it is counted: a rank that takes itself for the only node's opens
     * other transports than one that does not, and the two would hang. */
    for (int r = 0; r < h->size; r++) {
        int32_t mine, first;

        if (h->node[r] == r)
            continue;
        mine = sc_hosts_local_size(h, r);
        first = sc_hosts_local_size(h, h->node[r]);
        if (mine != first)
            return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: ranks %d and %d share the "
                            "host %.64s but have local sizes %d and %d; the ranks of one node "
                            "must agree (check the launcher's local size variables)",
                            h->node[r], r, sc_blob_host(h->res, r), first, mine);
    }
    return SC_SUCCESS;
}

/* A local rank past its local size failed the binding on that rank alone, after the
 * rendezvous, and its peers were told only that it exited or timed out: a given one
 * past the ranks of its host name (no local size given), or one counted among more
 * ranks than a given local size (several launches on one host, no local rank given). */
static sc_status_t sc_hosts_check_ranks(const sc_hosts_t *h)
{
    for (int r = 0; r < h->size; r++) {
        int32_t local_rank = sc_blob_int(h->res, r, SC_BLOB_LOCAL_RANK),
                given_size = sc_blob_int(h->res, r, SC_BLOB_LOCAL),
                local_size = sc_hosts_local_size(h, r);
        char from[SC_BLOB_FROM_LEN];

        if (local_rank >= local_size) {
            sc_blob_from(h->res, r, SC_BLOB_LOCAL_RANK_FROM, from);
            return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: rank %d has local rank %d "
                            "(from %s) but its host %.64s has local size %d (the ranks of "
                            "that host name); a local rank lies in [0, local size) (check %s "
                            "on the host of rank %d)", r, local_rank, from,
                            sc_blob_host(h->res, r), local_size, from, r);
        }
        if (local_rank < 0 && h->index[r] >= given_size && given_size > 0) {
            sc_blob_from(h->res, r, SC_BLOB_LOCAL_FROM, from);
            return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: rank %d is given local size "
                            "%d (from %s) but no local rank, and counted among the %d ranks "
                            "of the host name %.64s it is local rank %d; where a host holds "
                            "more ranks than the local size (several launches), give every "
                            "rank its local rank too", r, given_size, from,
                            h->count[h->node[r]], sc_blob_host(h->res, r), h->index[r]);
        }
    }
    return SC_SUCCESS;
}

/* Rank r's local rank as its sentence names where it came from: the variable that gave
 * it, or that it was counted. */
static void sc_hosts_local_rank_from(const sc_hosts_t *h, int r, char *out, size_t len)
{
    char from[SC_BLOB_FROM_LEN];

    if (sc_blob_int(h->res, r, SC_BLOB_LOCAL_RANK) < 0) {
        snprintf(out, len, "counted among the ranks of that host name: it was given none");
        return;
    }
    sc_blob_from(h->res, r, SC_BLOB_LOCAL_RANK_FROM, from);
    snprintf(out, len, "from %s", from);
}

/* Two ranks of one host with the same local rank, where the host holds one launch (its
 * local size is its ranks): both bound the same cores and took the same GPU. A local
 * rank is the one given, else the rank's place among the ranks of its host name (as
 * sc_comm_set_local counts it), so that a rank given none cannot take one given to
 * another. sorted holds the entries by host name, then that local rank: duplicates are
 * neighbours. */
static sc_status_t sc_hosts_check_duplicates(const sc_hosts_t *h, const sc_host_entry_t *sorted)
{
    for (int i = 1; i < h->size; i++) {
        const sc_host_entry_t *a = &sorted[i - 1], *b = &sorted[i];
        int first = a->rank < b->rank ? a->rank : b->rank;
        int second = a->rank < b->rank ? b->rank : a->rank;
        char from[SC_BLOB_FROM_LEN], from_first[96], from_second[96];

        if (a->local_rank != b->local_rank || h->node[a->rank] != h->node[b->rank] ||
            sc_hosts_local_size(h, b->rank) != h->count[h->node[b->rank]])
            continue;
        if (sc_blob_int(h->res, first, SC_BLOB_LOCAL_RANK) >= 0 &&
            sc_blob_int(h->res, second, SC_BLOB_LOCAL_RANK) >= 0) {
            sc_blob_from(h->res, second, SC_BLOB_LOCAL_RANK_FROM, from);
            return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: ranks %d and %d share the "
                            "host %.64s and both have local rank %d (from %s); the local "
                            "ranks of one host are distinct (check %s on that host)", first,
                            second, sc_blob_host(h->res, second), b->local_rank, from, from);
        }
        sc_hosts_local_rank_from(h, first, from_first, sizeof(from_first));
        sc_hosts_local_rank_from(h, second, from_second, sizeof(from_second));
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: ranks %d and %d share the host "
                        "%.64s and both have local rank %d (rank %d's %s, rank %d's %s); "
                        "the local ranks of one host are distinct (give every rank of that "
                        "host its local rank, or none)", first, second,
                        sc_blob_host(h->res, second), b->local_rank, first, from_first,
                        second, from_second);
    }
    return SC_SUCCESS;
}

sc_status_t sc_comm_hosts(const sc_store_result_t *res, int size, int *node_of)
{
    sc_host_entry_t *e = malloc((size_t)size * sizeof(*e));
    int *count = calloc((size_t)size, sizeof(int)), *index = malloc((size_t)size * sizeof(int));
    sc_hosts_t h = {res, size, node_of, count, index};
    sc_status_t st;

    if (!e || !count || !index) {
        free(e);
        free(count);
        free(index);
        return sc_error(SC_ERR_NO_MEMORY, "sc_comm_init: out of memory");
    }
    for (int r = 0; r < size; r++)
        e[r] = (sc_host_entry_t){sc_blob_host(res, r),
                                 sc_blob_int(res, r, SC_BLOB_LOCAL_RANK), r};
    qsort(e, (size_t)size, sizeof(*e), sc_host_entry_cmp);
    /* Each run of one host name: its first rank is the node's name. */
    for (int i = 0, j; i < size; i = j) {
        int first = e[i].rank;

        for (j = i + 1; j < size && strncmp(e[j].host, e[i].host, SC_HOSTNAME_MAX) == 0; j++)
            first = e[j].rank < first ? e[j].rank : first;
        for (int k = i; k < j; k++)
            node_of[e[k].rank] = first;
    }
    for (int r = 0; r < size; r++)
        index[r] = count[node_of[r]]++;
    st = sc_hosts_check_sizes(&h);
    if (st == SC_SUCCESS)
        st = sc_hosts_check_ranks(&h);
    if (st == SC_SUCCESS) {
        for (int i = 0; i < size; i++)
            if (e[i].local_rank < 0)
                e[i].local_rank = index[e[i].rank];
        qsort(e, (size_t)size, sizeof(*e), sc_host_entry_cmp);
        st = sc_hosts_check_duplicates(&h, e);
    }
    free(e);
    free(count);
    free(index);
    return st;
}
