/* UCX (ucp) transport: context, worker, endpoints to every rank, tagged messages; UCX's
 * debug-signal handler given back at load. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <ucs/config/global_opts.h>
#include <ucs/debug/debug.h>

#include "collectives/transport_cloexec.h"
#include "collectives/transport_leave.h"
#include "collectives/ucx_leak_filter.h"
#include "collectives/transport_ucx.h"
#include "collectives/ucx_env.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/memory.h"

/* libucs, as it is loaded (before this library's constructors run), sets a handler for
 * UCX_DEBUG_SIGNO (SIGHUP by default) that turns UCX's data tracing on and returns: a
 * process that loaded shardcomm no longer stopped at SIGHUP (its terminal closed, scrun
 * forwarding it), and a handler a framework had set before the load (Python loading the
 * library through ctypes) was replaced without a word (UCX issue 10742). Unless the user
 * asked for UCX's handler (UCX_DEBUG_SIGNO set), the disposition it replaced goes back; a
 * handler set after libucs loaded (by another library that loaded it first) is left.
 * Here, not in a file of its own, so that a program linked with the static library has
 * it too. UCX's handlers of error signals (UCX_ERROR_SIGNALS) stay: they print a
 * backtrace and then give the signal to the handler they replaced. */
__attribute__((constructor)) static void sc_ucx_give_back_debug_signal(void)
{
    int signo = (int)ucs_global_opts.debug_signo;
    struct sigaction now;
    Dl_info set_by, ucs;
    void *handler;

    if (signo <= 0 || getenv("UCX_DEBUG_SIGNO") || sigaction(signo, NULL, &now) != 0)
        return;
    handler = (now.sa_flags & SA_SIGINFO) ? (void *)now.sa_sigaction : (void *)now.sa_handler;
    if (handler == (void *)SIG_DFL || handler == (void *)SIG_IGN ||
        !dladdr(handler, &set_by) || !dladdr((void *)ucs_debug_disable_signal, &ucs) ||
        set_by.dli_fbase != ucs.dli_fbase)
        return;
    ucs_debug_disable_signal(signo);
}

/* A request sc_ucx_cancel_finish released unfinished: held until UCX completes it, so
 * that it is back in UCX's pool of requests when the worker is destroyed. */
struct sc_ucx_orphan {
    struct sc_ucx_orphan *next;
    void *req;
    int world; /* the peer whose answer it waits for; -1 where unknown */
};

static int sc_ucx_pid_gone(int pid);

/* A block of sc_ucx_keep_block. */
struct sc_kept_block {
    struct sc_kept_block *next;
    void *ptr;
    int device;
};

/* Below this much free space in /dev/shm, a worker that could not be created is put
 * down to it: UCX's POSIX shared-memory transport needs about 4.2 MB there per process
 * (its receive FIFO and descriptors, by default). */
#define SC_UCX_SHM_NEED ((unsigned long long)16 << 20)

/* A sentence for a worker that could not be created for want of resources, where
 * /dev/shm is nearly full or small (a container's default is 64 MB) and the POSIX
 * transport is on: what to change. Empty otherwise. */
static void sc_ucx_shm_hint(ucs_status_t st, char *buf, size_t len)
{
    struct statvfs vfs;
    unsigned long long avail;

    buf[0] = '\0';
    if ((st != UCS_ERR_NO_RESOURCE && st != UCS_ERR_NO_MEMORY) || !sc_ucx_may_use_posix() ||
        statvfs("/dev/shm", &vfs) != 0)
        return;
    avail = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
    if (avail >= SC_UCX_SHM_NEED)
        return;
    snprintf(buf, len, " (/dev/shm has %.1f MiB free, and UCX's shared-memory transport "
             "needs about 4 MiB there for each process on this host: enlarge it, e.g. "
             "docker run --shm-size=1g, or set UCX_TLS=^posix to use System V shared "
             "memory instead)", (double)avail / (1 << 20));
}

/* The world rank whose endpoint ep is; -1 for none (an endpoint already given up). */
static int sc_ucx_rank_of(const sc_transport_t *tp, ucp_ep_h ep)
{
    for (int r = 0; tp->eps && r < tp->world_size; r++)
        if (tp->eps[r] == ep)
            return r;
    return -1;
}

static void sc_ucx_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    sc_transport_t *tp = arg;
    int r = sc_ucx_rank_of(tp, ep);

    if (r >= 0 && tp->peer_error[r][0] == '\0') {
        snprintf(tp->peer_error[r], sizeof(tp->peer_error[r]),
                 "rank %d is unreachable (UCX: %s)", r, ucs_status_string(status));
        tp->peer_error_at[r] = sc_clock_coarse();
        sc_log(SC_LOG_INFO, "%s", tp->peer_error[r]);
    }
}

/* Not a verdict on the peer (a local peer that merely closed its side or finished fails
 * its endpoint too), but the endpoint can no longer be flushed (sc_ucx_close). */
static void sc_ucx_ep_error_ignored(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    sc_transport_t *tp = arg;
    int r = sc_ucx_rank_of(tp, ep);

    if (r >= 0)
        tp->ep_flags[r] |= SC_EP_FAILED;
    sc_log(SC_LOG_INFO, "UCX error on a local endpoint ignored: %s", ucs_status_string(status));
}

sc_status_t sc_ucx_open(sc_transport_t *tp, int single_node, void **addr, size_t *addr_len)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_config_t *config;
    ucp_address_t *a;
    const char *tls, *scheme, *conn_nb;
    ucs_status_t st;

    /* An empty variable is an unset one, as everywhere in shardcomm (and as the tests of
     * UCX_TLS read it): shardcomm's defaults apply. UCX itself read "" as an empty
     * transport list or an invalid scheme, and every rank's init failed. */
    for (int i = 0; i < SC_UCX_VAR_COUNT; i++) {
        const char *v = getenv(sc_ucx_var_names[i]);
        if (v && !*v)
            unsetenv(sc_ucx_var_names[i]);
    }
    /* shardcomm's defaults (ucx_env.c), where the user's variable is unset. */
    tls = sc_ucx_default(SC_UCX_TLS, single_node);
    scheme = sc_ucx_default(SC_UCX_RNDV_SCHEME, single_node);
    conn_nb = sc_ucx_default(SC_UCX_TCP_CONN_NB, single_node);
    /* Set in the environment: UCX 1.13 applies a transport's setting made through
     * ucp_config_modify to no transport; NULL takes back what an earlier sc_comm_init
     * of this process set. */
    sc_ucx_setenv_default(SC_UCX_TCP_CONN_NB, conn_nb);
    st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK)
        return sc_error(SC_ERR_TRANSPORT, "UCX configuration could not be read: %s",
                        ucs_status_string(st));
    if (scheme && !getenv(sc_ucx_var_names[SC_UCX_RNDV_SCHEME]))
        ucp_config_modify(config, "RNDV_SCHEME", scheme);
    if (tls && !getenv(sc_ucx_var_names[SC_UCX_TLS]))
        ucp_config_modify(config, "TLS", tls);

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = 0;
    st = ucp_init(&params, config, &tp->context);
    ucp_config_release(config);
    if (st != UCS_OK)
        return sc_error(SC_ERR_TRANSPORT, "UCX context could not be created: %s",
                        ucs_status_string(st));

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    /* tp->lock serializes every worker call. */
    wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    st = ucp_worker_create(tp->context, &wparams, &tp->worker);
    if (st != UCS_OK) {
        char hint[256];
        sc_ucx_shm_hint(st, hint, sizeof(hint));
        sc_error(SC_ERR_TRANSPORT, "UCX worker could not be created: %s%s",
                 ucs_status_string(st), hint);
        goto err_cleanup;
    }
    st = ucp_worker_get_efd(tp->worker, &tp->efd);
    if (st != UCS_OK) {
        sc_error(SC_ERR_TRANSPORT, "UCX worker event descriptor unavailable: %s",
                 ucs_status_string(st));
        goto err_worker;
    }
    st = ucp_worker_get_address(tp->worker, &a, addr_len);
    if (st != UCS_OK) {
        sc_error(SC_ERR_TRANSPORT, "UCX worker address unavailable: %s",
                 ucs_status_string(st));
        goto err_worker;
    }
    *addr = a;
    return SC_SUCCESS;

err_worker:
    ucp_worker_destroy(tp->worker);
    tp->worker = NULL;
err_cleanup:
    ucp_cleanup(tp->context);
    tp->context = NULL;
    return SC_ERR_TRANSPORT;
}

void sc_ucx_release_address(sc_transport_t *tp, void *addr)
{
    ucp_worker_release_address(tp->worker, addr);
}

int sc_ucx_peer_local(const sc_transport_t *tp, int world)
{
    return tp->node_of[world] == tp->node_of[tp->world_rank] && sc_ucx_may_use_shm();
}

sc_status_t sc_ucx_connect(sc_transport_t *tp, void *const *addrs)
{
    for (int r = 0; r < tp->world_size; r++) {
        ucp_ep_params_t ep_params;
        ucs_status_t st;
        int local = sc_ucx_peer_local(tp, r);

        memset(&ep_params, 0, sizeof(ep_params));
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                               UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
        ep_params.address = addrs[r];
        /* UCX 1.13's shared-memory transports have no peer-failure handling, and asking
         * for it falls back to TCP; a local peer's death is detected from its pid
         * instead (sc_ucx_check_local_peers), and UCX's own verdicts on local
         * endpoints (a keepalive timeout of a peer that merely finished) are ignored.
         * Where UCX_TLS leaves no shared memory to use, local peers are reached as
         * remote ones are (a failed flush of an endpoint without failure handling is an
         * ERROR line from UCX when a peer closes first). */
        ep_params.err_mode = local ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
        ep_params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep_params.err_handler.cb = local ? sc_ucx_ep_error_ignored : sc_ucx_ep_error;
        ep_params.err_handler.arg = tp;
        tp->ep_flags[r] = local ? SC_EP_LOCAL : 0;
        st = ucp_ep_create(tp->worker, &ep_params, &tp->eps[r]);
        if (st != UCS_OK) {
            tp->eps[r] = NULL;
            return sc_error(SC_ERR_TRANSPORT, "UCX endpoint to rank %d failed: %s", r,
                            ucs_status_string(st));
        }
    }
    sc_leave_listen(tp);
    /* What the context and worker opened (the listening socket, UCX's progress thread's
     * pipes and epoll set) and the connections the endpoints opened (TCP connects as
     * they are created): UCX adds a transport's descriptors to the worker's event set
     * as an endpoint first uses it, and only from then on can they be told apart. */
    sc_ucx_cloexec(tp);
    return SC_SUCCESS;
}

/* Messages no receive will ever take (a peer's side of an op this rank never ran, after
 * a failure) are received into scratch and dropped, so that UCX does not warn of each
 * as the worker is destroyed. One whose data does not all come by the deadline (a
 * rendezvous from a dead or cut-off peer, or a slow link) has that peer's connection
 * closed (sc_ucx_abandon) and its scratch kept until the worker is gone. At most a few
 * thousand. */
static void sc_ucx_drain_unexpected(sc_transport_t *tp, double deadline)
{
    for (int n = 0; n < 4096; n++) {
        ucp_request_param_t param;
        ucp_tag_recv_info_t info;
        ucp_tag_message_h msg;
        void *buf, *req;

        ucp_worker_progress(tp->worker);
        msg = ucp_tag_probe_nb(tp->worker, 0, 0, 1, &info);
        if (!msg)
            return;
        buf = malloc(info.length ? info.length : 1);
        if (!buf)
            return;
        memset(&param, 0, sizeof(param));
        req = ucp_tag_msg_recv_nbx(tp->worker, buf, info.length, msg, &param);
        if (UCS_PTR_IS_PTR(req) &&
            sc_ucx_cancel_finish(tp, req, (int)(info.sender_tag & SC_TAG_SRC_MASK),
                                 deadline)) {
            int src = (int)(info.sender_tag & SC_TAG_SRC_MASK);
            if (src < tp->world_size)
                sc_ucx_abandon(tp, src, "its connection was closed at the communicator's end");
            /* Over TCP what the peer already sent still lands, after the close too. */
            sc_ucx_keep_block(tp, -1, buf);
            continue;
        }
        free(buf);
    }
}

/* A message sc_ucx_drop receives into scratch: until it is done (a rendezvous' data
 * comes after). */
struct sc_ucx_dropping {
    struct sc_ucx_dropping *next;
    void *req;
    void *scratch;
    int src;
};

int sc_ucx_unexpected(sc_transport_t *tp, uint64_t tag, uint64_t mask, uint64_t *found)
{
    ucp_tag_recv_info_t info;

    if (!ucp_tag_probe_nb(tp->worker, tag, mask, 0, &info))
        return 0;
    *found = info.sender_tag;
    return 1;
}

/* An eager message lands at once; a rendezvous' data comes after, into scratch freed
 * once it is in (sc_ucx_drops_poll), or kept past the worker where it is still arriving
 * at the close (a sender that died), and the sender's transfer completes. */
int sc_ucx_drop(sc_transport_t *tp, uint64_t tag, uint64_t mask)
{
    ucp_request_param_t param;
    ucp_tag_recv_info_t info;
    struct sc_ucx_dropping *d;
    ucp_tag_message_h msg;
    void *scratch, *req;

    if (!ucp_tag_probe_nb(tp->worker, tag, mask, 0, &info))
        return 0;
    scratch = malloc(info.length ? info.length : 1);
    if (!scratch)
        return 0; /* left in the queue: its sequence number still tells it apart */
    d = malloc(sizeof(*d));
    if (!d) {
        free(scratch);
        return 0;
    }
    /* The same message: the first that matches, and nothing progressed in between. */
    msg = ucp_tag_probe_nb(tp->worker, tag, mask, 1, &info);
    memset(&param, 0, sizeof(param));
    req = ucp_tag_msg_recv_nbx(tp->worker, scratch, info.length, msg, &param);
    if (UCS_PTR_IS_PTR(req)) {
        d->req = req;
        d->scratch = scratch;
        d->src = (int)(info.sender_tag & SC_TAG_SRC_MASK);
        d->next = tp->dropping;
        tp->dropping = d;
    } else {
        free(scratch);
        free(d);
    }
    sc_log(SC_LOG_DEBUG, "dropped a message of %zu bytes no receive will take (tag "
           "0x%016llx)", info.length, (unsigned long long)info.sender_tag);
    return 1;
}

int sc_ucx_drops_poll(sc_transport_t *tp)
{
    struct sc_ucx_dropping **pp = &tp->dropping;
    int done = 0;

    while (*pp) {
        struct sc_ucx_dropping *d = *pp;
        if (!sc_ucx_settled(tp, d->req)) {
            pp = &d->next;
            continue;
        }
        *pp = d->next;
        free(d->scratch);
        free(d);
        done = 1;
    }
    return done;
}

/* The messages still arriving into a drop's scratch by the deadline (a rendezvous from a
 * dead or cut-off peer, or a slow link) close their peer's connection, as the drain of
 * the unexpected queue does, and their scratch is kept until the worker is gone: an
 * endpoint destroyed with the transfer under way fails UCX's assertion on its list of
 * requests. */
static void sc_ucx_drops_finish(sc_transport_t *tp, double deadline)
{
    while (tp->dropping && sc_clock_now() < deadline) {
        ucp_worker_progress(tp->worker);
        sc_ucx_drops_poll(tp);
    }
    while (tp->dropping) {
        struct sc_ucx_dropping *d = tp->dropping;
        tp->dropping = d->next;
        if (d->src < tp->world_size)
            sc_ucx_abandon(tp, d->src, "its connection was closed at the communicator's end");
        sc_ucx_cancel_finish(tp, d->req, d->src, sc_clock_now());
        sc_ucx_keep_block(tp, -1, d->scratch);
        free(d);
    }
}

void sc_ucx_purge_ctx(sc_transport_t *tp, uint32_t ctx)
{
    uint64_t tag = sc_tag_make(ctx, 0, 0, 0, 0), mask = sc_tag_make(~0u, 0, 0, 0, 0);

    do
        ucp_worker_progress(tp->worker);
    while (sc_ucx_drop(tp, tag, mask));
}

/* How long sc_ucx_close progresses the worker at most before it destroys it, for the
 * copies a late answer started: with UCX's default 512 KiB segments a few progress
 * calls, with 256-byte ones (the test's UCX_CMA_SEG_SIZE) 16384 calls for 4 MiB, about
 * 8 us each (0.15 s, more on a loaded machine). */
#define SC_UCX_QUIESCE_S 2.0

/* Progresses the worker until a progress call moves nothing (what lands meanwhile
 * drained as above, against one 0.2 s deadline), or SC_UCX_QUIESCE_S passes. UCX 1.13
 * destroys an endpoint without waiting for the cross-memory copies (CMA) queued on it,
 * and fails an assertion where one is (arbiter.c, 'ucs_arbiter_group_is_empty', from
 * ucp_worker_destroy): a rendezvous send that a failed op released unfinished, on a
 * local endpoint that sc_ucx_abandon could not close, goes on when its peer answers
 * late (a stopped peer resumed, or one whose settling drops the op's messages:
 * progress_settle.c). The progress call that reads the answer queues the copy, and the
 * calls after move it a segment at a time; a call that moved nothing read no answer
 * and found no copy queued, and nothing progresses the worker between it and its
 * destruction. */
static void sc_ucx_quiesce(sc_transport_t *tp)
{
    double now = sc_clock_now(), drain_by = now + 0.2, deadline = now + SC_UCX_QUIESCE_S;
    unsigned moved;

    do {
        sc_ucx_drain_unexpected(tp, drain_by);
        moved = ucp_worker_progress(tp->worker);
    } while (moved != 0 && sc_clock_now() < deadline);
    if (moved != 0)
        sc_log(SC_LOG_INFO, "UCX's worker still moved %.1f s into the end of its close; "
               "destroyed as it was", SC_UCX_QUIESCE_S);
}

/* How long sc_ucx_close waits at most for the requests released unfinished whose peer
 * can still answer: a rank stopped and resumed answers as soon as it runs again (the
 * rendezvous announcements it holds), within 0.1 s but on a loaded machine. */
#define SC_UCX_ORPHANS_WAIT_S 1.0

/* Whether orphan o can still complete: its peer's process runs (a stopped or exited peer
 * of this node never answers; a remote one's connection closed by force ended it). */
static int sc_ucx_orphan_live(const sc_transport_t *tp, const struct sc_ucx_orphan *o)
{
    int w = o->world;

    return w < 0 || w >= tp->world_size || !sc_ucx_peer_silent(tp, w);
}

/* Progresses the worker, dropping what lands unreceived, until every request released
 * unfinished whose peer can still answer completed (a send whose peer was stopped by
 * the failed call and is now resumed, a receive whose sender still has to write), or
 * the deadline passes. Left in flight, each stayed in UCX's pool of requests and
 * ucp_worker_destroy printed a WARN line for it ('was not returned to mpool
 * ucp_requests'). */
static void sc_ucx_orphans_finish(sc_transport_t *tp, double deadline)
{
    double drain_by = sc_clock_now() + 0.2;

    for (;;) {
        int waiting = 0;

        sc_ucx_orphans_poll(tp);
        for (const struct sc_ucx_orphan *o = tp->orphans; o && !waiting; o = o->next)
            waiting = sc_ucx_orphan_live(tp, o);
        if (!waiting || sc_clock_now() >= deadline)
            return;
        sc_ucx_drain_unexpected(tp, drain_by);
        ucp_worker_progress(tp->worker);
    }
}

/* Destroys the worker, its leak check's lines left out where requests released
 * unfinished are still in flight (only then: any other leak is still UCX's WARN). The
 * requests whose peer never answers (stopped, exited, or silent past the wait): UCX
 * 1.13 cannot end them, as it cancels no send nor a matched receive and refuses to
 * close a shared-memory endpoint by force (sc_ucx_abandon). Released to UCX here, they
 * are the only requests its leak check at ucp_worker_destroy finds, and its WARN lines
 * for them are left out for one INFO line of ours. */
static void sc_ucx_worker_destroy(sc_transport_t *tp)
{
    unsigned hidden, left = 0;

    sc_ucx_orphans_poll(tp);
    while (tp->orphans) {
        struct sc_ucx_orphan *o = tp->orphans;
        tp->orphans = o->next;
        ucp_request_free(o->req);
        free(o);
        left++;
    }
    if (left == 0) {
        ucp_worker_destroy(tp->worker);
        return;
    }
    sc_ucx_leaks_hide_start();
    ucp_worker_destroy(tp->worker);
    hidden = sc_ucx_leaks_hide_end();
    sc_log(SC_LOG_INFO, "%u transfers of failed calls were still in flight to peers that "
           "never answered (stopped, exited or silent) as UCX's worker was destroyed; %u "
           "warnings of its leak check about them left out", left, hidden);
}

void sc_ucx_close(sc_transport_t *tp, double timeout_s)
{
    double deadline = sc_clock_now() + (timeout_s < 2.0 ? timeout_s : 2.0);

    if (tp->worker) {
        sc_ucx_drain_unexpected(tp, sc_clock_now() + 0.2);
        sc_ucx_drops_finish(tp, sc_clock_now() + 0.2);
        sc_ucx_orphans_finish(
            tp, sc_clock_now() + (timeout_s < SC_UCX_ORPHANS_WAIT_S ? timeout_s
                                                                    : SC_UCX_ORPHANS_WAIT_S));
    }
    if (tp->eps) {
        sc_leave_tell(tp, SC_LEAVE_DESTROYED);
        for (int r = 0; r < tp->world_size; r++) {
            ucp_request_param_t param;
            void *req;

            if (!tp->eps[r])
                continue;
            /* A failed local endpoint (its peer closed its side first, or died) is left
             * to ucp_worker_destroy: UCX refuses to force its close, and a flush of it
             * fails, an ERROR line from UCX for each of its transports. So is one that
             * holds the unload's leaving message to a stopped peer (a destroy after the
             * unload at exit): its flush waited the close's 2 s for a peer that may
             * never run again. */
            if ((tp->ep_flags[r] & SC_EP_LOCAL) &&
                ((tp->ep_flags[r] & (SC_EP_FAILED | SC_EP_LEAVE_HELD)) ||
                 tp->peer_error[r][0])) {
                tp->eps[r] = NULL;
                continue;
            }
            memset(&param, 0, sizeof(param));
            param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            /* A failed peer cannot answer a flush, nor a stopped one reached over TCP. */
            param.flags = tp->peer_error[r][0] || (tp->ep_flags[r] & SC_EP_LEAVE_HELD)
                              ? UCP_EP_CLOSE_FLAG_FORCE
                              : 0;
            req = ucp_ep_close_nbx(tp->eps[r], &param);
            if (!UCS_PTR_IS_ERR(req))
                sc_ucx_cancel_finish(tp, req, r, deadline);
            tp->eps[r] = NULL;
        }
    }
    if (tp->worker) {
        sc_leave_stop(tp, sc_clock_now() + SC_UCX_CANCEL_WAIT_S);
        /* Again: what landed while the endpoints closed (their close progresses the
         * worker). Over TCP a peer's last notice (a reducer destroyed between
         * iterations tells every peer) to a rank it never sent to before is still
         * connecting at the first drain. */
        sc_ucx_quiesce(tp);
        sc_ucx_worker_destroy(tp);
    }
    if (tp->context)
        ucp_cleanup(tp->context);
    tp->worker = NULL;
    tp->context = NULL;
    while (tp->kept) { /* nothing writes there any more */
        struct sc_kept_block *k = tp->kept;
        tp->kept = k->next;
        sc_mem_free_on(k->device, k->ptr);
        free(k);
    }
}

static sc_status_t sc_ucx_send_with(sc_transport_t *tp, int world_dst, uint64_t tag,
                                    const void *buf, size_t len, uint32_t attr, void **req)
{
    ucp_request_param_t param;
    void *r;

    if (tp->peer_error[world_dst][0])
        return sc_error(SC_ERR_PEER_FAILED, "%s", tp->peer_error[world_dst]);
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = attr;
    r = ucp_tag_send_nbx(tp->eps[world_dst], buf, len, tag, &param);
    if (UCS_PTR_IS_ERR(r))
        return sc_error(SC_ERR_PEER_FAILED, "send of %zu bytes to rank %d failed: %s", len,
                        world_dst, ucs_status_string(UCS_PTR_STATUS(r)));
    *req = r;
    return SC_SUCCESS;
}

sc_status_t sc_ucx_send(sc_transport_t *tp, int world_dst, uint64_t tag, const void *buf,
                        size_t len, void **req)
{
    return sc_ucx_send_with(tp, world_dst, tag, buf, len, 0, req);
}

/* UCX's fast completion makes it take its local rendezvous threshold, under which a
 * message of up to 128 KiB on shared memory goes through the FIFO (tag_send.c). */
sc_status_t sc_ucx_send_eager(sc_transport_t *tp, int world_dst, uint64_t tag,
                              const void *buf, size_t len, void **req)
{
    return sc_ucx_send_with(tp, world_dst, tag, buf, len, UCP_OP_ATTR_FLAG_FAST_CMPL, req);
}

sc_status_t sc_ucx_recv(sc_transport_t *tp, uint64_t tag, uint64_t mask, void *buf,
                        size_t len, void **req)
{
    ucp_request_param_t param;
    void *r;

    memset(&param, 0, sizeof(param));
    /* Always a request, even when the message is already here: its length is read
     * from the request. */
    param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    r = ucp_tag_recv_nbx(tp->worker, buf, len, tag, mask, &param);
    if (UCS_PTR_IS_ERR(r))
        return sc_error(SC_ERR_TRANSPORT, "receive of %zu bytes could not be posted: %s",
                        len, ucs_status_string(UCS_PTR_STATUS(r)));
    *req = r;
    return SC_SUCCESS;
}

sc_status_t sc_ucx_poll_send(sc_transport_t *tp, void *req)
{
    ucs_status_t st = ucp_request_check_status(req);

    (void)tp;
    if (st == UCS_INPROGRESS)
        return SC_IN_PROGRESS;
    ucp_request_free(req);
    if (st != UCS_OK)
        return sc_error(SC_ERR_PEER_FAILED, "send failed: %s", ucs_status_string(st));
    return SC_SUCCESS;
}

sc_status_t sc_ucx_poll_recv(sc_transport_t *tp, void *req, size_t *len)
{
    ucp_tag_recv_info_t info;
    ucs_status_t st = ucp_tag_recv_request_test(req, &info);

    (void)tp;
    if (st == UCS_INPROGRESS)
        return SC_IN_PROGRESS;
    ucp_request_free(req);
    if (st == UCS_ERR_MESSAGE_TRUNCATED)
        return sc_error(SC_ERR_MISMATCH, "a peer sent more data than this rank expected");
    if (st != UCS_OK)
        return sc_error(SC_ERR_PEER_FAILED, "receive failed: %s", ucs_status_string(st));
    *len = info.length;
    return SC_SUCCESS;
}

void sc_ucx_cancel_start(sc_transport_t *tp, void *req)
{
    if (req != NULL)
        ucp_request_cancel(tp->worker, req);
}

int sc_ucx_cancel_wait(sc_transport_t *tp, void *req, double deadline)
{
    if (req == NULL)
        return 0;
    /* A transfer UCX cannot cancel (already handed to a transport) completes or fails
     * on its own. */
    while (ucp_request_check_status(req) == UCS_INPROGRESS && sc_clock_now() < deadline)
        ucp_worker_progress(tp->worker);
    return !sc_ucx_settled(tp, req);
}

int sc_ucx_settled(sc_transport_t *tp, void *req)
{
    (void)tp;
    if (ucp_request_check_status(req) == UCS_INPROGRESS)
        return 0;
    ucp_request_free(req);
    return 1;
}

int sc_ucx_cancel_finish(sc_transport_t *tp, void *req, int world, double deadline)
{
    struct sc_ucx_orphan *o;

    /* Past the deadline it is released unfinished. */
    if (!sc_ucx_cancel_wait(tp, req, deadline))
        return 0;
    ucp_request_cancel(tp->worker, req);
    o = malloc(sizeof(*o));
    if (!o) {
        ucp_request_free(req); /* UCX returns it to its pool if it ever completes */
        return 1;
    }
    o->req = req;
    o->world = world;
    o->next = tp->orphans;
    tp->orphans = o;
    return 1;
}

int sc_ucx_orphans_poll(sc_transport_t *tp)
{
    struct sc_ucx_orphan **pp = &tp->orphans;
    int done = 0;

    while (*pp) {
        struct sc_ucx_orphan *o = *pp;
        if (!sc_ucx_settled(tp, o->req)) {
            pp = &o->next;
            continue;
        }
        *pp = o->next;
        free(o);
        done = 1;
    }
    return done;
}

void sc_ucx_abandon(sc_transport_t *tp, int world, const char *why)
{
    ucp_request_param_t param;
    void *req;

    if (tp->peer_error[world][0] == '\0') {
        snprintf(tp->peer_error[world], sizeof(tp->peer_error[world]), "%s", why);
        tp->peer_error_at[world] = sc_clock_coarse();
        sc_log(SC_LOG_INFO, "%s", why);
    }
    if (!tp->eps || !tp->eps[world])
        return;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    req = ucp_ep_close_nbx(tp->eps[world], &param);
    tp->eps[world] = NULL;
    if (!UCS_PTR_IS_ERR(req))
        sc_ucx_cancel_finish(tp, req, world, sc_clock_now() + 1.0);
}

unsigned long sc_ucx_ops_left(sc_transport_t *tp)
{
    unsigned long n;

    pthread_mutex_lock(&tp->pool_lock);
    n = tp->ops_left;
    pthread_mutex_unlock(&tp->pool_lock);
    return n;
}

void sc_ucx_keep_block(sc_transport_t *tp, int device, void *ptr)
{
    struct sc_kept_block *k;

    if (!ptr)
        return;
    k = malloc(sizeof(*k));
    if (!k)
        return;
    k->ptr = ptr;
    k->device = device;
    pthread_mutex_lock(&tp->pool_lock);
    k->next = tp->kept;
    tp->kept = k;
    pthread_mutex_unlock(&tp->pool_lock);
}

unsigned long sc_ucx_kept_blocks(sc_transport_t *tp)
{
    unsigned long n = 0;

    pthread_mutex_lock(&tp->pool_lock);
    for (const struct sc_kept_block *k = tp->kept; k; k = k->next)
        n++;
    pthread_mutex_unlock(&tp->pool_lock);
    return n;
}

int sc_ucx_progress(sc_transport_t *tp)
{
    return (int)ucp_worker_progress(tp->worker);
}

sc_status_t sc_ucx_arm(sc_transport_t *tp)
{
    ucs_status_t st = ucp_worker_arm(tp->worker);

    if (st == UCS_ERR_BUSY)
        return SC_IN_PROGRESS;
    if (st != UCS_OK)
        return sc_error(SC_ERR_TRANSPORT, "UCX worker could not be armed: %s",
                        ucs_status_string(st));
    return SC_SUCCESS;
}

void sc_ucx_print_transports(sc_transport_t *tp, const int *world_of, int n, FILE *out)
{
    for (int r = 0; r < n; r++) {
        int w = world_of[r];
        fprintf(out, "# endpoint to rank %d (world rank %d)%s\n", r, w,
                tp->peer_error[w][0] ? " FAILED" : "");
        if (tp->eps[w])
            ucp_ep_print_info(tp->eps[w], out);
    }
}

/* The state letter of pid in /proc/PID/stat, or 0 where it cannot be read. */
static char sc_ucx_pid_state(int pid)
{
    char path[64], buf[256];
    FILE *f;
    char *paren;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    paren = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
    fclose(f);
    return paren && paren[1] == ' ' ? paren[2] : 0;
}

/* A local peer that exited or was killed (a zombie counts) fails its endpoint; where
 * it was not gone, *state is what /proc said (0 if nothing). */
static int sc_ucx_pid_gone_or_state(int pid, char *state)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 1;
    *state = sc_ucx_pid_state(pid);
    return *state == 'Z' || *state == 'X';
}

static int sc_ucx_pid_gone(int pid)
{
    char state;

    return sc_ucx_pid_gone_or_state(pid, &state);
}

/* A stopped process's state in /proc/PID/stat (SIGSTOP, a debugger). */
static int sc_ucx_state_stopped(char state)
{
    return state == 'T' || state == 't';
}

/* Whether world rank w is another process of this node whose pid this rank knows. */
static int sc_ucx_peer_on_node(const sc_transport_t *tp, int w)
{
    return w != tp->world_rank && tp->peer_pid[w] > 0 &&
           tp->node_of[w] == tp->node_of[tp->world_rank];
}

int sc_ucx_peer_stopped(const sc_transport_t *tp, int w)
{
    if (!sc_ucx_peer_on_node(tp, w))
        return 0;
    return sc_ucx_state_stopped(sc_ucx_pid_state(tp->peer_pid[w]));
}

/* One read of /proc for both verdicts (it is made per orphaned request per pass, and
 * per control send every 10 ms of a destroy's flush). */
int sc_ucx_peer_silent(const sc_transport_t *tp, int w)
{
    char state = 0;

    if (!sc_ucx_peer_on_node(tp, w))
        return 0;
    return sc_ucx_pid_gone_or_state(tp->peer_pid[w], &state) || sc_ucx_state_stopped(state);
}

void sc_ucx_check_local_peers(sc_transport_t *tp)
{
    double now = sc_clock_coarse();

    if (now - tp->last_liveness_check < 0.1)
        return;
    tp->last_liveness_check = now;
    for (int r = 0; r < tp->world_size; r++) {
        if (r == tp->world_rank || tp->peer_pid[r] <= 0 || tp->peer_error[r][0])
            continue;
        if (tp->node_of[r] == tp->node_of[tp->world_rank] && sc_ucx_pid_gone(tp->peer_pid[r])) {
            /* What the peer sent before it went (an abort notice, a header) is taken in
             * first: the scan that follows reads it before it fails anything for the
             * death, so that the peer's own reason wins. */
            for (int i = 0; i < 64 && ucp_worker_progress(tp->worker) > 0; i++)
                ;
            if (tp->peer_error[r][0])
                continue; /* what it sent said it left (transport_leave.c) */
            snprintf(tp->peer_error[r], sizeof(tp->peer_error[r]),
                     "rank %d (pid %d) exited or was killed", r, tp->peer_pid[r]);
            tp->peer_error_at[r] = now;
            sc_log(SC_LOG_INFO, "%s", tp->peer_error[r]);
        }
    }
}
