/* Communicators: init (rendezvous, UCX endpoints, binding, the settings every rank
 * must share), split, abort, destroy. The registry of live handles is comm_registry.c,
 * context ids comm_ctx.c. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectives/agree.h"
#include "collectives/device.h"
#include "collectives/mailbox.h"
#include "collectives/serves.h"
#include "collectives/shm_prefault.h"
#include "collectives/shm_segment.h"
#include "collectives/stage.h"
#include "collectives/transport_cloexec.h"
#include "collectives/transport_ucx.h"
#include "core/bootstrap_env.h"
#include "core/bootstrap_store.h"
#include "core/comm_ctx.h"
#include "core/comm_hosts.h"
#include "core/comm_internal.h"
#include "core/env_names.h"
#include "core/env_text.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/progress_gone.h"
#include "core/progress_refusal.h"
#include "core/progress_settle.h"
#include "core/topology.h"
#include "core/tuning.h"
#include "shardcomm/info.h"

/* ---- communicator objects ---- */

static sc_comm_t *sc_comm_alloc(sc_transport_t *tp, int size)
{
    sc_comm_t *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->tp = tp;
    c->size = size;
    c->owner_pid = getpid();
    c->gone_seq = UINT64_MAX;
    c->world_of = calloc((size_t)size, sizeof(int));
    c->send_seq = calloc((size_t)size, sizeof(uint64_t));
    c->recv_seq = calloc((size_t)size, sizeof(uint64_t));
    if (size == 2)
        c->pair_hdr = aligned_alloc(64, 2 * SC_OP_PAIR_HDR_BUF);
    if (!c->world_of || !c->send_seq || !c->recv_seq || (size == 2 && !c->pair_hdr)) {
        free(c->pair_hdr);
        free(c->world_of);
        free(c->send_seq);
        free(c->recv_seq);
        free(c);
        return NULL;
    }
    return c;
}

static void sc_comm_free(sc_comm_t *c)
{
    sc_device_destroy(c);
    free(c->pair_hdr);
    free(c->world_of);
    free(c->send_seq);
    free(c->recv_seq);
    free(c);
}

static void sc_transport_free(sc_transport_t *tp)
{
    sc_progress_wait_out(tp);
    sc_progress_stop(tp);
    sc_shm_destroy_kept(tp);
    sc_ucx_close(tp, 2.0);
    while (tp->op_pool) {
        sc_coll_op_t *op = tp->op_pool;
        tp->op_pool = op->next;
        sc_op_free(op);
    }
    while (tp->op_stuck) { /* the worker is gone: nothing touches them any more */
        sc_coll_op_t *op = tp->op_stuck;
        tp->op_stuck = op->next;
        sc_op_free(op);
    }
    sc_settle_free(tp);
    pthread_mutex_destroy(&tp->pool_lock);
    pthread_mutex_destroy(&tp->lock);
    pthread_mutex_destroy(&tp->done_mutex);
    pthread_cond_destroy(&tp->done_cond);
    free(tp->eps);
    free(tp->node_of);
    free(tp->peer_pid);
    free(tp->peer_error);
    free(tp->peer_error_at);
    free(tp->ep_flags);
    free(tp->peer_left);
    free(tp->leave_out);
    free(tp);
}

static sc_transport_t *sc_transport_alloc(int world_size, int world_rank)
{
    sc_transport_t *tp = calloc(1, sizeof(*tp));

    if (!tp)
        return NULL;
    tp->world_size = world_size;
    tp->world_rank = world_rank;
    tp->eps = calloc((size_t)world_size, sizeof(ucp_ep_h));
    tp->node_of = calloc((size_t)world_size, sizeof(int));
    tp->peer_pid = calloc((size_t)world_size, sizeof(int));
    tp->peer_error = calloc((size_t)world_size, sizeof(*tp->peer_error));
    tp->peer_error_at = calloc((size_t)world_size, sizeof(double));
    tp->ep_flags = calloc((size_t)world_size, 1);
    tp->peer_left = calloc((size_t)world_size, 1);
    tp->leave_out = calloc((size_t)world_size, sizeof(void *));
    tp->wake_fd = -1;
    tp->efd = -1;
    if (!tp->eps || !tp->node_of || !tp->peer_pid || !tp->peer_error || !tp->peer_error_at ||
        !tp->ep_flags || !tp->peer_left || !tp->leave_out) {
        free(tp->leave_out);
        free(tp->peer_left);
        free(tp->ep_flags);
        free(tp->peer_error_at);
        free(tp->eps);
        free(tp->node_of);
        free(tp->peer_pid);
        free(tp->peer_error);
        free(tp);
        return NULL;
    }
    pthread_mutex_init(&tp->lock, NULL);
    pthread_mutex_init(&tp->pool_lock, NULL);
    pthread_mutex_init(&tp->done_mutex, NULL);
    pthread_cond_init(&tp->done_cond, NULL);
    return tp;
}

/* What the refusals of settings that differ between ranks say they ended. */
#define SC_COMM_SETTINGS_CALLER "sc_comm_init (settings that must be the same on every rank)"

static int sc_tls_name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The aliases UCX documents by their members (its FAQ, "List of main transports and
 * aliases", and ucp_tl_aliases in ucp_context.c): shm is sm, cuda and rocm their memory
 * transports. sm itself, and the network aliases (rc, ud, dc, ib, ...), stay names: UCX
 * documents them as "all shared memory transports" or "RC, accelerated if possible", and
 * their members have changed between UCX versions. "all" is UCX's only when alone. */
static const struct {
    const char *alias;
    const char *members[4];
} sc_tls_aliases[] = {
    {"shm", {"sm", NULL}},
    {"cuda", {"cuda_copy", "cuda_ipc", "gdr_copy", NULL}},
    {"rocm", {"rocm_copy", "rocm_ipc", "rocm_gdr", NULL}},
};

/* Room for the names of a UCX_TLS value: an alias of 4 characters and its comma (5
 * bytes) gives at most 3, so fewer than one per byte. */
#define SC_TLS_NAMES_MAX SC_BLOB_TLS_LEN

/* The transports a UCX_TLS value (a blob's, at most SC_BLOB_TLS_LEN bytes with its end)
 * names, aliases replaced by their members (sc_tls_aliases), each once and sorted, in
 * names[] (pointing into copy or the alias table); the list's leading "^" (every
 * transport but these) is not one of them. Returns their number. */
static int sc_tls_names(const char *tls, char *copy, const char **names)
{
    char *save = NULL;
    int n = 0, k = 0;

    snprintf(copy, SC_BLOB_TLS_LEN, "%s", tls[0] == '^' ? tls + 1 : tls);
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t a = 0, count = sizeof(sc_tls_aliases) / sizeof(sc_tls_aliases[0]);

        while (a < count && strcmp(sc_tls_aliases[a].alias, t) != 0)
            a++;
        if (a == count)
            names[n++] = t;
        else
            for (const char *const *m = sc_tls_aliases[a].members; *m; m++)
                names[n++] = *m;
    }
    qsort(names, (size_t)n, sizeof(*names), sc_tls_name_cmp);
    for (int i = 0; i < n; i++)
        if (k == 0 || strcmp(names[k - 1], names[i]) != 0)
            names[k++] = names[i];
    return k;
}

/* Whether two UCX_TLS values name one set of transports: UCX reads the list as a set,
 * so "sm,tcp" and "tcp,sm" (or "sm,tcp,sm", or "shm,tcp") are one setting. */
static int sc_tls_same(const char *a, const char *b)
{
    char copy_a[SC_BLOB_TLS_LEN], copy_b[SC_BLOB_TLS_LEN];
    const char *names_a[SC_TLS_NAMES_MAX], *names_b[SC_TLS_NAMES_MAX];
    int n = sc_tls_names(a, copy_a, names_a);

    if ((a[0] == '^') != (b[0] == '^') || n != sc_tls_names(b, copy_b, names_b))
        return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(names_a[i], names_b[i]) != 0)
            return 0;
    return 1;
}

/* Rank r's UCX_TLS from its blob into tls, ended within SC_BLOB_TLS_LEN bytes whatever
 * the blob holds (every rank ends it; the text functions read to the end). */
static void sc_blob_tls(const sc_store_result_t *res, int r, char tls[SC_BLOB_TLS_LEN])
{
    memcpy(tls, (const char *)res->blobs[r] + SC_BLOB_TLS, SC_BLOB_TLS_LEN);
    tls[SC_BLOB_TLS_LEN - 1] = '\0';
}

/* UCX_TLS as each rank set it, from the rendezvous blobs: ranks whose transports differ
 * need not reach each other (tcp,self against shardcomm's self,sm on one node: "UCX
 * endpoint to rank 1 failed: Destination is unreachable", which named neither), so a
 * difference fails init on every rank, naming the variable and both values (as
 * sc_env_text writes a user's text: a blank or a control character in it shown), before
 * any endpoint is made: the same verdict on every rank from the same blobs. The values
 * are compared as sets of transports (sc_tls_same), not as text. */
static sc_status_t sc_comm_check_tls(const sc_store_result_t *res, int size)
{
    char tls0[SC_BLOB_TLS_LEN];

    sc_blob_tls(res, 0, tls0);
    for (int r = 1; r < size; r++) {
        char tls[SC_BLOB_TLS_LEN], text0[SC_ENV_TEXT_MAX], text[SC_ENV_TEXT_MAX];

        sc_blob_tls(res, r, tls);
        if (!sc_tls_same(tls0, tls))
            return sc_error(SC_ERR_MISMATCH, "%s: ranks disagree: UCX_TLS is %s on rank 0 "
                            "but %s on rank %d", SC_COMM_SETTINGS_CALLER,
                            *tls0 ? sc_env_text(tls0, text0, sizeof(text0)) : "unset",
                            *tls ? sc_env_text(tls, text, sizeof(text)) : "unset", r);
    }
    return SC_SUCCESS;
}

/* *joined is set once this rank has gone to the rendezvous (whatever its outcome). */
static sc_status_t sc_comm_exchange(sc_transport_t *tp, const sc_bootstrap_params_t *p,
                                    uint8_t *dev_blobs, int *joined)
{
    /* Known single-node: shared-memory transports only (a TCP interface costs an
     * epoll_wait in every progress call). A launcher wrong about it is found below, by
     * host name, before any rank connects (sc_comm_hosts). */
    int single_node = sc_bootstrap_single_node(p);
    sc_store_result_t res;
    void *addr = NULL;
    size_t addr_len = 0;
    const char *tls;
    uint8_t *blob;
    void **addrs;
    sc_status_t st;

    st = sc_ucx_open(tp, single_node, &addr, &addr_len);
    if (st != SC_SUCCESS)
        return st;
    tls = getenv("UCX_TLS");
    blob = calloc(1, SC_BLOB_ADDR + addr_len);
    if (!blob) {
        sc_ucx_release_address(tp, addr);
        return sc_error(SC_ERR_NO_MEMORY, "sc_comm_init: out of memory");
    }
    gethostname((char *)blob, SC_HOSTNAME_MAX - 1);
    {
        int32_t pid = (int32_t)getpid(), local_size = p->local_size,
                local_rank = p->local_rank;
        memcpy(blob + SC_BLOB_PID, &pid, sizeof(pid));
        memcpy(blob + SC_BLOB_LOCAL, &local_size, sizeof(local_size));
        memcpy(blob + SC_BLOB_LOCAL_FROM, p->local_size_from, SC_BLOB_FROM_LEN);
        memcpy(blob + SC_BLOB_LOCAL_RANK, &local_rank, sizeof(local_rank));
        memcpy(blob + SC_BLOB_LOCAL_RANK_FROM, p->local_rank_from, SC_BLOB_FROM_LEN);
    }
    sc_device_blob_fill(p, blob + SC_BLOB_DEV);
    if (tls) /* set and not empty: sc_ucx_open unset an empty one */
        strncpy((char *)blob + SC_BLOB_TLS, tls, SC_BLOB_TLS_LEN - 1);
    memcpy(blob + SC_BLOB_ADDR, addr, addr_len);
    sc_ucx_release_address(tp, addr);
    *joined = 1;
    st = sc_store_allgather(p->master_addr, p->master_port, p->rank, p->world_size,
                            &p->launch, p->timeout_s, p->store_fanout, blob,
                            SC_BLOB_ADDR + addr_len, &res);
    free(blob);
    if (st != SC_SUCCESS)
        return st;
    st = sc_comm_hosts(&res, p->world_size, tp->node_of);
    if (st == SC_SUCCESS)
        st = sc_comm_check_tls(&res, p->world_size);
    if (st != SC_SUCCESS) {
        sc_store_result_free(&res);
        return st;
    }
    addrs = calloc((size_t)p->world_size, sizeof(void *));
    if (!addrs) {
        sc_store_result_free(&res);
        return sc_error(SC_ERR_NO_MEMORY, "sc_comm_init: out of memory");
    }
    for (int r = 0; r < p->world_size; r++) {
        int32_t pid;
        addrs[r] = res.blobs[r] + SC_BLOB_ADDR;
        memcpy(dev_blobs + (size_t)r * SC_DEVICE_BLOB, res.blobs[r] + SC_BLOB_DEV,
               SC_DEVICE_BLOB);
        memcpy(&pid, res.blobs[r] + SC_BLOB_PID, sizeof(pid));
        tp->peer_pid[r] = pid;
    }
    st = sc_ucx_connect(tp, addrs);
    free(addrs);
    sc_store_result_free(&res);
    return st;
}

/* Local rank and size among the comm's ranks on the same node. */
static void sc_comm_set_local(sc_comm_t *c)
{
    int node = c->tp->node_of[c->world_of[c->rank]];

    c->local_rank = 0;
    c->local_size = 0;
    for (int r = 0; r < c->size; r++) {
        if (c->tp->node_of[c->world_of[r]] != node)
            continue;
        if (r < c->rank)
            c->local_rank++;
        c->local_size++;
    }
}

/* Collective over via (c itself, or its parent in sc_comm_split): c's shared-memory
 * helpers where its ranks share a node, the header mailboxes and the staging segment.
 * An error only when via broke. */
static sc_status_t sc_comm_open_local(sc_comm_t *via, sc_comm_t *c)
{
    sc_status_t st = sc_mbox_open(via, c);

    return st == SC_SUCCESS ? sc_stage_open(via, c) : st;
}

/* Frees what sc_comm_open_local opened (nothing when it opened nothing). */
static void sc_comm_close_local(sc_comm_t *c)
{
    sc_stage_close(c);
    sc_mbox_close(c);
}

/* Adds c to its transport's engine and to the registry. */
static sc_status_t sc_comm_attach(sc_comm_t *c)
{
    sc_transport_t *tp = c->tp;
    sc_status_t st;

    pthread_mutex_lock(&tp->lock);
    st = sc_progress_attach(c);
    if (st == SC_SUCCESS) {
        c->next = tp->comms;
        tp->comms = c;
        tp->refs++;
        /* A split's mailboxes open before it is attached, out of the reach of the
         * progress thread's marks and clears until now (sc_mbox_install): they take
         * the others' state, else one marked and left so sent a wake-up per header,
         * and one left out of a mark had its headers wake no one. */
        if (c->mbox)
            sc_mbox_sleeping(c, tp->mbox_marked);
    }
    pthread_mutex_unlock(&tp->lock);
    if (st != SC_SUCCESS)
        return st;
    return sc_registry_add(c);
}

/* Removes c from its transport; frees the transport with its last communicator. */
static void sc_comm_detach(sc_comm_t *c)
{
    sc_transport_t *tp = c->tp;
    int last;

    pthread_mutex_lock(&tp->lock);
    sc_settle_end_comm(tp, c);
    sc_progress_detach(c);
    sc_progress_refusals_free(c);
    sc_progress_gone_free(c);
    for (sc_comm_t **pp = &tp->comms; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    last = --tp->refs == 0;
    pthread_mutex_unlock(&tp->lock);
    if (last)
        sc_transport_free(tp);
}

/* Collective over a new world communicator: the settings that every rank must share
 * (messages are cut, staged and laid out by them; a difference used to surface as a
 * timeout or a mismatch of some later call, or a reducer created on one rank only),
 * compared once, failing init on every rank with the variable's name. */
static sc_status_t sc_comm_agree_settings(sc_comm_t *c, const sc_tuning_t *t)
{
    const sc_fact_t facts[] = {
        {"SC_CHUNK_BYTES", SC_FACT_NUMBER, (int64_t)t->chunk_bytes},
        {"SC_STAGE_BYTES", SC_FACT_NUMBER, (int64_t)t->stage_bytes},
        {"SC_LOCAL_REGISTER", SC_FACT_NUMBER, t->local_register},
        {"SC_LOCAL_MAILBOX", SC_FACT_NUMBER, t->local_mailbox},
        {"SC_RING_THRESHOLD", SC_FACT_NUMBER, (int64_t)t->ring_threshold},
        {"SC_ALGO", SC_FACT_WORD, sc_fact_word(t->allreduce_algo_word)},
        {"SC_EAGER_SENDS", SC_FACT_WORD, sc_fact_word(t->eager_sends_word)}};

    return sc_comm_agree(c, SC_COMM_SETTINGS_CALLER, SC_SUCCESS, SC_ERR_PEER_FAILED, facts,
                         (int)(sizeof(facts) / sizeof(facts[0])), NULL);
}

static sc_status_t sc_comm_init_call(const sc_comm_config_t *config, sc_comm_t **comm);

/* Its own collectives (the barrier, the agreement on settings) are sc_comm_init's. */
SC_API sc_status_t sc_comm_init(const sc_comm_config_t *config, sc_comm_t **comm)
{
    sc_serves_t was = sc_serves_begin(SC_SERVES_COMM_INIT);
    sc_status_t st = sc_comm_init_call(config, comm);

    sc_serves_end(was);
    return st;
}

static sc_status_t sc_comm_init_resolved(const sc_bootstrap_params_t *params, int *joined,
                                         sc_comm_t **comm);

static sc_status_t sc_comm_init_call(const sc_comm_config_t *config, sc_comm_t **comm)
{
    sc_bootstrap_params_t p;
    sc_status_t st;
    int joined = 0;

    if (!comm)
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: comm (output) is NULL");
    st = sc_bootstrap_resolve_rendezvous(config, &p);
    if (st != SC_SUCCESS)
        return st; /* no rendezvous to tell */
    /* From here this rank's sentences say which rank it is, its refused settings too. */
    sc_log_set_rank(p.rank);
    st = sc_registry_check_init_allowed();
    if (st == SC_SUCCESS)
        st = sc_bootstrap_resolve_rest(config, &p);
    if (st == SC_SUCCESS)
        st = sc_comm_init_resolved(&p, &joined, comm);
    /* A failure between knowing the rendezvous and joining it (a setting of this rank
     * alone that does not parse, its transport, its memory) is told to the other ranks
     * with this rank's sentence (they waited SC_TIMEOUT for it, then said only that it
     * never arrived); within the default timeout where its own did not parse. */
    if (st != SC_SUCCESS && !joined)
        sc_store_tell_failure(p.master_addr, p.master_port, p.rank, p.world_size, &p.launch,
                              p.timeout_s > 0.0 ? p.timeout_s : SC_DEFAULT_TIMEOUT_S,
                              sc_last_error());
    return st;
}

/* sc_comm_init once the bootstrap parameters are known; *joined as sc_comm_exchange. */
static sc_status_t sc_comm_init_resolved(const sc_bootstrap_params_t *params, int *joined,
                                         sc_comm_t **comm)
{
    sc_bootstrap_params_t p = *params;
    const sc_tuning_t *tuning;
    sc_transport_t *tp;
    sc_comm_t *c = NULL;
    uint8_t *dev_blobs = NULL;
    sc_status_t st;

    st = sc_tuning_get(&tuning);
    if (st != SC_SUCCESS)
        return st;
    /* Bind before any thread starts, so that every thread inherits it. */
    if (p.local_rank >= 0 && p.local_size > 0) {
        st = sc_topology_bind(p.local_rank, p.local_size, p.bind);
        if (st != SC_SUCCESS)
            return st;
    }
    tp = sc_transport_alloc(p.world_size, p.rank);
    if (!tp)
        return sc_error(SC_ERR_NO_MEMORY, "sc_comm_init: out of memory");
    tp->spin_s = tuning->spin_s;
    tp->proto.mode = (sc_proto_mode_t)tuning->eager_sends;
    tp->next_ctx = 1;
    dev_blobs = calloc((size_t)p.world_size, SC_DEVICE_BLOB);
    if (!dev_blobs) {
        st = sc_error(SC_ERR_NO_MEMORY, "sc_comm_init: out of memory");
        goto err_tp;
    }
    st = sc_comm_exchange(tp, &p, dev_blobs, joined);
    if (st != SC_SUCCESS)
        goto err_tp;
    c = sc_comm_alloc(tp, p.world_size);
    if (!c) {
        st = sc_error(SC_ERR_NO_MEMORY, "sc_comm_init: out of memory");
        goto err_tp;
    }
    c->rank = p.rank;
    c->timeout_s = p.timeout_s;
    for (int r = 0; r < p.world_size; r++)
        c->world_of[r] = r;
    sc_comm_set_local(c);
    if (p.local_size > 0 && p.local_size < c->local_size && p.bind != SC_BIND_NONE)
        sc_log(SC_LOG_WARN, "%d ranks share this host but the launcher's local size "
               "is %d (several launches on one host?): ranks of different launches with the "
               "same local rank are bound to the same cores (SC_BIND=none leaves them "
               "unbound)", c->local_size, p.local_size);
    if (p.local_rank >= 0)
        c->local_rank = p.local_rank;
    if (p.local_size > 0)
        c->local_size = p.local_size;
    if (p.local_rank < 0 || p.local_size <= 0)
        st = sc_topology_bind(c->local_rank, c->local_size, p.bind);
    if (st != SC_SUCCESS)
        goto err_comm;
    st = sc_device_attach_world(c, dev_blobs);
    if (st != SC_SUCCESS)
        goto err_comm;
    free(dev_blobs);
    dev_blobs = NULL;
    st = sc_progress_start(tp);
    if (st != SC_SUCCESS)
        goto err_comm;
    st = sc_comm_attach(c);
    if (st != SC_SUCCESS)
        goto err_comm;
    /* Every endpoint wired up and every rank present before anyone proceeds; then the
     * shared-memory transport's pages faulted in, the header mailboxes and the staging
     * segment, where ranks share a node. */
    st = sc_barrier(c, NULL);
    if (st == SC_SUCCESS)
        st = sc_comm_agree_settings(c, tuning);
    if (st == SC_SUCCESS)
        st = sc_shm_prefault_transport(c);
    if (st == SC_SUCCESS)
        st = sc_comm_open_local(c, c);
    if (st != SC_SUCCESS) {
        sc_comm_close_local(c);
        sc_registry_remove(c);
        sc_comm_detach(c);
        sc_comm_free(c);
        return st;
    }
    /* The connections the peers opened to this rank, accepted by UCX's progress thread
     * as they came: every peer created its endpoints before the barrier above. */
    sc_ucx_cloexec(tp);
    sc_log(SC_LOG_INFO, "communicator ready: rank %d of %d, local rank %d of %d", c->rank,
           c->size, c->local_rank, c->local_size);
    *comm = c;
    return SC_SUCCESS;

err_comm:
    sc_comm_free(c);
err_tp:
    free(dev_blobs);
    sc_transport_free(tp);
    return st;
}

SC_API sc_status_t sc_comm_init_from_env(sc_comm_t **comm)
{
    sc_comm_config_t cfg = SC_COMM_CONFIG_INIT;
    return sc_comm_init(&cfg, comm);
}

typedef struct {
    int32_t color;
    int32_t key;
    int32_t rank;
    int32_t refused; /* this rank's call was refused (sub NULL): every rank fails */
} sc_split_entry_t;

static int sc_split_cmp(const void *a, const void *b)
{
    const sc_split_entry_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : (x->rank > y->rank);
}

static sc_status_t sc_comm_split_call(sc_comm_t *comm, int color, int key, sc_comm_t **sub);

/* Failures inside say which public call they ended (sc_error_in). comm is marked as
 * issued on by this thread meanwhile (sc_comm_issue_begin): the split's own collectives
 * on it pass, another thread's calls are refused. */
SC_API sc_status_t sc_comm_split(sc_comm_t *comm, int color, int key, sc_comm_t **sub)
{
    sc_serves_t was = sc_serves_begin(SC_SERVES_COMM_SPLIT);
    int claimed;
    sc_status_t st = sc_comm_issue_begin(comm, "sc_comm_split", &claimed);

    if (st == SC_SUCCESS) {
        st = sc_comm_split_call(comm, color, key, sub);
        sc_comm_issue_end(comm, claimed);
    }
    return sc_serves_return(was, st, "sc_comm_split");
}

static sc_status_t sc_comm_split_call(sc_comm_t *comm, int color, int key, sc_comm_t **sub)
{
    sc_split_entry_t mine = {color < 0 ? -1 : color, key, 0, 0}, *all;
    uint32_t ctx = 0, gen = 0;
    sc_comm_t *c = NULL;
    int n = 0, held = 0;
    sc_status_t st;

    st = sc_comm_check_usable(comm, "sc_comm_split");
    if (st != SC_SUCCESS)
        return st;
    mine.rank = comm->rank;
    mine.refused = sub == NULL;
    all = calloc((size_t)comm->size, sizeof(*all));
    if (!all) {
        /* Without room for the exchange this rank cannot take part: the others learn
         * it from the abort rather than waiting. */
        sc_comm_abort(comm);
        return sc_error(SC_ERR_NO_MEMORY, "sc_comm_split: out of memory on rank %d",
                        comm->rank);
    }
    /* A rank whose call is refused still takes part in the exchange, so that every rank
     * fails at once instead of waiting for it. */
    st = sc_allgather(&mine, all, 4, SC_INT32, comm, NULL, NULL);
    if (st != SC_SUCCESS)
        goto out;
    if (!sub) {
        st = sc_error(SC_ERR_INVALID_ARG, "sc_comm_split: sub (output) is NULL");
        goto out;
    }
    for (int r = 0; r < comm->size; r++) {
        if (all[r].refused) {
            st = sc_error(SC_ERR_INVALID_ARG, "sc_comm_split: rank %d's call was refused "
                          "(its sub, the output, is NULL); no communicator was made", r);
            goto out;
        }
    }
    st = sc_comm_ctx_agree(comm, &ctx, &gen);
    if (st != SC_SUCCESS)
        goto out;
    held = 1;
    if (color >= 0) {
        for (int r = 0; r < comm->size; r++)
            if (all[r].color == color)
                all[n++] = all[r];
        qsort(all, (size_t)n, sizeof(*all), sc_split_cmp);
        c = sc_comm_alloc(comm->tp, n);
    }
    if (c) {
        sc_comm_ctx_start(c, ctx, gen);
        c->timeout_s = comm->timeout_s;
        for (int i = 0; i < n; i++) {
            c->world_of[i] = comm->world_of[all[i].rank];
            if (all[i].rank == comm->rank)
                c->rank = i;
        }
        sc_comm_set_local(c);
    }
    /* Every rank of the parent takes part (those without a new communicator, and one
     * that could not allocate its own, with nothing to offer). */
    st = sc_comm_open_local(comm, c);
    if (st == SC_SUCCESS && color >= 0 && !c)
        st = sc_error(SC_ERR_NO_MEMORY, "sc_comm_split: out of memory");
    if (st != SC_SUCCESS) {
        if (c) {
            sc_comm_close_local(c);
            sc_comm_free(c);
        }
        goto out;
    }
    if (color < 0) {
        st = sc_device_split(comm, NULL, color, key);
        if (st == SC_SUCCESS)
            *sub = NULL;
        goto out;
    }
    st = sc_device_split(comm, c, color, key);
    if (st == SC_SUCCESS)
        st = sc_comm_attach(c);
    if (st != SC_SUCCESS) {
        sc_comm_close_local(c);
        sc_comm_free(c);
        goto out;
    }
    *sub = c;
out:
    /* The id stays held by the new communicator only. */
    if (held && (st != SC_SUCCESS || color < 0))
        sc_comm_ctx_release(comm->tp, ctx);
    free(all);
    return st;
}

void sc_comm_hold(sc_comm_t *comm)
{
    __atomic_add_fetch(&comm->holders, 1, __ATOMIC_RELAXED);
}

void sc_comm_release(sc_comm_t *comm)
{
    __atomic_sub_fetch(&comm->holders, 1, __ATOMIC_RELAXED);
}

SC_API sc_status_t sc_comm_destroy(sc_comm_t *comm)
{
    sc_status_t st;
    int holders, claimed;

    if (!comm)
        return sc_error(SC_ERR_INVALID_COMM, "sc_comm_destroy: communicator is NULL");
    /* A broken communicator is destroyed too, without a sentence saying it was refused;
     * one another thread issues on is not (its mark stays this thread's until freed). */
    st = sc_comm_issue_begin(comm, "sc_comm_destroy", &claimed);
    if (st != SC_SUCCESS)
        return st;
    holders = __atomic_load_n(&comm->holders, __ATOMIC_RELAXED);
    if (holders > 0) {
        sc_comm_issue_end(comm, claimed);
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_destroy: %d reducer%s still use%s this "
                        "communicator (and its registered memory): destroy %s first "
                        "(sc_reducer_destroy)", holders, holders == 1 ? "" : "s",
                        holders == 1 ? "s" : "", holders == 1 ? "it" : "them");
    }
    if (!sc_registry_remove(comm)) {
        sc_comm_issue_end(comm, claimed);
        return sc_error(SC_ERR_INVALID_COMM,
                        "sc_comm_destroy: communicator %p was destroyed or never created",
                        (void *)comm);
    }
    /* An sc_comm_abort on another thread that found comm live finishes first. */
    sc_registry_wait_left(comm);
    sc_device_destroy(comm);
    sc_progress_drain(comm);
    /* Its peers may wait in (or later issue) calls this rank will never join. */
    sc_progress_tell_gone(comm);
    sc_comm_close_local(comm);
    sc_shm_destroy_all(comm);
    sc_comm_ctx_release(comm->tp, comm->ctx);
    sc_comm_detach(comm);
    sc_comm_free(comm);
    return SC_SUCCESS;
}

SC_API sc_status_t sc_comm_abort(sc_comm_t *comm)
{
    return sc_comm_abort_why(comm, NULL);
}

sc_rank_name_t sc_comm_rank_name(const sc_comm_t *comm, int r)
{
    sc_rank_name_t n;
    int w = r >= 0 && r < comm->size ? comm->world_of[r] : r;

    if (w == r)
        snprintf(n.s, sizeof(n.s), "rank %d", r);
    else
        snprintf(n.s, sizeof(n.s), "rank %d (world rank %d)", r, w);
    return n;
}

sc_status_t sc_comm_abort_why(sc_comm_t *comm, const char *why)
{
    sc_status_t st = sc_comm_enter(comm, "sc_comm_abort");
    char text[SC_ERROR_MAX];

    if (st != SC_SUCCESS)
        return st;
    /* Named as the peers' sentences name a rank of this communicator ("rank 1 (world
     * rank 3)" on a split). */
    if (why)
        snprintf(text, sizeof(text), "%s: the communicator was aborted: %s",
                 sc_comm_rank_name(comm, comm->rank).s, why);
    else
        snprintf(text, sizeof(text), "%s: the communicator was aborted (sc_comm_abort)",
                 sc_comm_rank_name(comm, comm->rank).s);
    pthread_mutex_lock(&comm->tp->lock);
    sc_progress_fail_comm(comm, SC_ERR_ABORTED, text, 1, 0);
    pthread_mutex_unlock(&comm->tp->lock);
    sc_device_abort(comm);
    sc_comm_leave(comm);
    return SC_SUCCESS;
}

int sc_comm_abort_at_unload(sc_comm_t *comm, const struct timespec *until)
{
    sc_transport_t *tp = comm->tp;
    char text[SC_ERROR_MAX];

    snprintf(text, sizeof(text), "%s: the communicator was aborted: this process unloaded "
             "libshardcomm (dlclose) or exited while the communicator was live (it was "
             "never destroyed with sc_comm_destroy)", sc_comm_rank_name(comm, comm->rank).s);
    if (pthread_mutex_timedlock(&tp->lock, until) != 0)
        return 0;
    /* No abort notice: the peers are told that this rank left (sc_progress_unload), and
     * what it sent before still arrives there, as when a process just ends. */
    sc_progress_fail_comm(comm, SC_ERR_ABORTED, text, 0, 0);
    pthread_mutex_unlock(&tp->lock);
    return 1;
}

SC_API sc_status_t sc_info_print_transports(sc_comm_t *comm, FILE *out)
{
    sc_status_t st = sc_comm_check(comm, "sc_info_print_transports");
    char device[256];

    if (st != SC_SUCCESS)
        return st;
    if (!out)
        return sc_error(SC_ERR_INVALID_ARG, "sc_info_print_transports: out is NULL");

    pthread_mutex_lock(&comm->tp->lock);
    sc_ucx_print_transports(comm->tp, comm->world_of, comm->size, out);
    pthread_mutex_unlock(&comm->tp->lock);
    sc_device_describe(comm, device, sizeof(device));
    fprintf(out, "device buffers: %s\n", device);
    return SC_SUCCESS;
}
