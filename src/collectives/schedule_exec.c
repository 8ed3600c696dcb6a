/* Executing an operation's schedule step by step (schedule_exec.h): the header
 * exchange and its checks, the actions run and polled, the timeout, the cancel. */
#include <string.h>

#include "collectives/mailbox.h"
#include "collectives/reduce_kernels.h"
#include "collectives/schedule.h"
#include "collectives/schedule_exec.h"
#include "collectives/serves.h"
#include "collectives/transport_ucx.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/progress_refusal.h"
#include "core/text_list.h"

/* How far past the first unfinished action the executor looks for work to start. */
#define SC_OP_WINDOW 64

/* "rank r" of the op's communicator, for sentences (sc_comm_rank_name). */
static sc_rank_name_t sc_op_rank(const sc_coll_op_t *op, int r)
{
    return sc_comm_rank_name(op->comm, r);
}

static void sc_op_describe_call(const sc_coll_op_t *op, const sc_op_header_t *h, char *buf,
                                size_t len)
{
    sc_coll_kind_t kind = (sc_coll_kind_t)h->kind;
    int n;

    if (h->magic != SC_OP_HDR_MAGIC) {
        snprintf(buf, len, "an unrecognizable call");
        return;
    }
    n = snprintf(buf, len, "%s #%llu (count %llu, %s", sc_coll_kind_name(kind),
                 (unsigned long long)h->seq, (unsigned long long)h->count,
                 sc_dtype_name((sc_dtype_t)h->dtype));
    if (kind == SC_COLL_ALLREDUCE || kind == SC_COLL_REDUCE_SCATTER || kind == SC_COLL_REDUCE)
        n += snprintf(buf + n, len - (size_t)n, ", op %s", sc_op_name((sc_op_t)h->op));
    if (kind == SC_COLL_BROADCAST || kind == SC_COLL_REDUCE)
        n += snprintf(buf + n, len - (size_t)n, ", root %d", h->root);
    if (kind == SC_COLL_SEND || kind == SC_COLL_RECV) {
        snprintf(buf + n, len - (size_t)n, ", %s %s)", kind == SC_COLL_SEND ? "to" : "from",
                 sc_op_rank(op, h->root).s);
        return;
    }
    n += snprintf(buf + n, len - (size_t)n, ", algorithm %s", sc_algo_name((sc_algo_t)h->algo));
    if (h->algo == SC_ALGO_STAGED)
        snprintf(buf + n, len - (size_t)n, ")");
    else if (h->sseg || h->rseg)
        snprintf(buf + n, len - (size_t)n, ", registered memory: send segment %u offset %llu, "
                 "receive segment %u offset %llu, results %s)", h->sseg,
                 (unsigned long long)h->soff, h->rseg, (unsigned long long)h->roff,
                 h->pulled ? "pulled" : "pushed");
    else
        snprintf(buf + n, len - (size_t)n, ")");
}

/* The call, and the public call it is part of where it is not the caller's own. */
static void sc_op_describe(const sc_coll_op_t *op, const sc_op_header_t *h, char *buf,
                           size_t len)
{
    size_t n;

    sc_op_describe_call(op, h, buf, len);
    n = strlen(buf);
    if (h->magic == SC_OP_HDR_MAGIC && h->serves != SC_SERVES_CALLER && n < len)
        snprintf(buf + n, len - n, " inside %s", sc_serves_name(h->serves));
}

/* mine and theirs describe the same call: for point-to-point, a receive matches a
 * send of the same count and dtype. */
static int sc_op_header_equal(const sc_op_header_t *mine, const sc_op_header_t *theirs)
{
    if (mine->magic != theirs->magic || mine->dtype != theirs->dtype ||
        mine->count != theirs->count || mine->seq != theirs->seq ||
        mine->serves != theirs->serves)
        return 0;
    if (mine->kind == SC_COLL_RECV)
        return theirs->kind == SC_COLL_SEND;
    return mine->kind == theirs->kind && mine->op == theirs->op &&
           mine->root == theirs->root && mine->algo == theirs->algo &&
           mine->pulled == theirs->pulled &&
           mine->sseg == theirs->sseg && mine->rseg == theirs->rseg &&
           mine->soff == theirs->soff && mine->roff == theirs->roff;
}

static int sc_op_world(const sc_coll_op_t *op, int peer)
{
    return op->comm->world_of[peer];
}

static uint64_t sc_op_tag(const sc_coll_op_t *op, uint32_t kind, uint32_t sub, int src_rank)
{
    return sc_tag_make(op->comm->ctx, kind, op->hdr.seq, sub,
                       (uint32_t)sc_op_world(op, src_rank));
}

static uint32_t sc_op_data_kind(const sc_coll_op_t *op)
{
    sc_coll_kind_t k = (sc_coll_kind_t)op->hdr.kind;
    return (k == SC_COLL_SEND || k == SC_COLL_RECV) ? SC_TAG_KIND_P2P : SC_TAG_KIND_COLL;
}

/* Header buffers: a collective of a 2-rank communicator's are the communicator's (room
 * for SC_OP_PAIR_INLINE_MAX), every other op's its own. */
static int sc_op_uses_pair_hdr(const sc_coll_op_t *op)
{
    return op->comm->pair_hdr && op->hdr.kind != SC_COLL_SEND && op->hdr.kind != SC_COLL_RECV;
}

/* Neighbour i's header, received into *cap bytes at most. */
static uint8_t *sc_op_hdr_in(sc_coll_op_t *op, int i, size_t *cap)
{
    *cap = sc_op_uses_pair_hdr(op) ? SC_OP_PAIR_HDR_BUF : SC_OP_HDR_BUF;
    return sc_op_uses_pair_hdr(op) ? op->comm->pair_hdr : op->hdr_in[i];
}

/* This op's header and inline payload, as sent. */
static uint8_t *sc_op_hdr_out(sc_coll_op_t *op)
{
    return sc_op_uses_pair_hdr(op) ? op->comm->pair_hdr + SC_OP_PAIR_HDR_BUF : op->inline_out;
}

/* The header length this op sends (and expects): the header, plus its inline payload. */
static size_t sc_op_header_bytes(const sc_coll_op_t *op)
{
    return op->inline_bytes ? SC_OP_INLINE_OFF + op->inline_bytes : sizeof(op->hdr);
}

/* The header, and the inline payload after it, into inline_out. The payload is read
 * at start, not when the op was built: a gated op's input (host-staged device calls)
 * arrives in between. */
static void sc_op_pack_header(sc_coll_op_t *op)
{
    uint8_t *out = sc_op_hdr_out(op);

    memcpy(out, &op->hdr, sizeof(op->hdr));
    if (op->inline_bytes) {
        memset(out + sizeof(op->hdr), 0, SC_OP_INLINE_OFF - sizeof(op->hdr));
        memcpy(out + SC_OP_INLINE_OFF, op->inline_src, op->inline_bytes);
    }
}

/* Posts header exchange with the ring neighbours (collectives) or the peer (p2p). */
static sc_status_t sc_op_start(sc_coll_op_t *op)
{
    sc_comm_t *c = op->comm;
    sc_transport_t *tp = c->tp;
    sc_coll_kind_t kind = (sc_coll_kind_t)op->hdr.kind;
    uint8_t *in;
    size_t cap;
    sc_status_t st;

    op->started = 1;
    op->deadline = sc_clock_coarse() + sc_op_patience(op);
    /* An algorithm that cannot scale in its reductions has the input scaled here,
     * before anything reads it. */
    if (op->prescale_buf)
        sc_scale_local(op->dtype, op->prescale_buf, op->prescale_src, op->prescale_count,
                       op->prescale, op->prescale_bound);
    if (kind == SC_COLL_SEND || kind == SC_COLL_RECV) {
        /* The receiver checks the sender's header. */
        op->nhdr = (kind == SC_COLL_RECV) ? 1 : 0;
        op->hdr_peer[0] = op->hdr.root;
        /* sub 1 keeps point-to-point headers apart from collective ones; a small
         * message rides with its header (sc_call_build_p2p). */
        if (kind == SC_COLL_SEND) {
            sc_op_pack_header(op);
            return sc_ucx_send(tp, sc_op_world(op, op->hdr.root),
                               sc_op_tag(op, SC_TAG_KIND_HDR, 1, c->rank), sc_op_hdr_out(op),
                               sc_op_header_bytes(op), &op->hdr_send_req[0]);
        }
        in = sc_op_hdr_in(op, 0, &cap);
        return sc_ucx_recv(tp, sc_op_tag(op, SC_TAG_KIND_HDR, 1, op->hdr.root),
                           SC_TAG_FULL_MASK, in, cap, &op->hdr_recv_req[0]);
    }
    if (c->size == 1)
        return SC_SUCCESS;
    /* Between the ranks of one node, mid-size data messages go eagerly or not as this
     * rank's measurements say (proto_choice.h); across nodes UCX decides. */
    if (c->local_size == c->size) {
        op->hdr.eager_prefs = sc_proto_prefs(&tp->proto);
        op->peer_prefs = 0xff;
        op->proto_cls = sc_proto_class_of(op->send_max);
        op->proto_eager = op->proto_cls >= 0 &&
                          sc_proto_choose(&tp->proto, c->proto_ops, op->proto_cls,
                                          (c->proto_agreed >> op->proto_cls) & 1);
        op->proto_t0 = sc_clock_now();
    }
    op->hdr_peer[0] = (c->rank + c->size - 1) % c->size; /* left */
    op->hdr_peer[1] = (c->rank + 1) % c->size;           /* right */
    op->nhdr = (c->size == 2) ? 1 : 2;
    /* Every header receive has room for an inline payload, so that a neighbour's
     * message is never truncated, whatever call it made. */
    sc_op_pack_header(op);
    if (c->mbox) {
        /* Written (and read) in sc_op_headers, as the first step follows at once. */
        op->mbox = 1;
        op->mbox_put = (1 << op->nhdr) - 1;
        return SC_SUCCESS;
    }
    for (int i = 0; i < op->nhdr; i++) {
        int peer = op->hdr_peer[i];
        /* The send first, so that it leaves sooner (a header that arrives before its
         * receive is posted waits in UCX's unexpected queue). */
        st = sc_ucx_send(tp, sc_op_world(op, peer), sc_op_tag(op, SC_TAG_KIND_HDR, 0, c->rank),
                         sc_op_hdr_out(op), sc_op_header_bytes(op), &op->hdr_send_req[i]);
        if (st != SC_SUCCESS)
            return st;
        in = sc_op_hdr_in(op, i, &cap);
        st = sc_ucx_recv(tp, sc_op_tag(op, SC_TAG_KIND_HDR, 0, peer), SC_TAG_FULL_MASK, in, cap,
                         &op->hdr_recv_req[i]);
        if (st != SC_SUCCESS)
            return st;
    }
    /* A header that completed at once is checked in the first step. */
    return SC_SUCCESS;
}

/* Checks neighbour i's header, received in len bytes (header plus inline payload). */
static sc_status_t sc_op_check_header(sc_coll_op_t *op, int i, size_t len)
{
    char mine[400], theirs[400];
    const char *refusal;
    sc_op_header_t in;
    size_t cap;

    memset(&in, 0, sizeof(in));
    memcpy(&in, sc_op_hdr_in(op, i, &cap), len < sizeof(in) ? len : sizeof(in));
    if (sc_op_header_equal(&op->hdr, &in)) {
        size_t want = sc_op_header_bytes(op);
        op->peer_prefs &= in.eager_prefs;
        if (len == want)
            return SC_SUCCESS;
        return sc_error(SC_ERR_MISMATCH, "%s #%llu: %s sent %zu bytes of header and "
                        "payload where this rank expected %zu",
                        sc_coll_kind_name((sc_coll_kind_t)op->hdr.kind),
                        (unsigned long long)op->hdr.seq, sc_op_rank(op, op->hdr_peer[i]).s,
                        len, want);
    }
    sc_op_describe(op, &op->hdr, mine, sizeof(mine));
    sc_op_describe(op, &in, theirs, sizeof(theirs));
    /* A rank that refused its call of this number, then issued another. */
    refusal = sc_progress_refusal_text(op->comm, op);
    return sc_error(SC_ERR_MISMATCH, "ranks disagree: %s called %s but %s called %s%s%s",
                    sc_op_rank(op, op->comm->rank).s, mine, sc_op_rank(op, op->hdr_peer[i]).s,
                    theirs, refusal ? "; before that, " : "", refusal ? refusal : "");
}

const void *sc_op_inline(sc_coll_op_t *op, const void *src, size_t bytes)
{
    size_t cap;

    op->inline_hdr = 1;
    op->inline_bytes = bytes;
    op->inline_src = src;
    return sc_op_hdr_in(op, 0, &cap) + SC_OP_INLINE_OFF;
}

/* A message of op to or from peer (a comm rank) that UCX failed, named with the op,
 * what it was and the peer, UCX's sentence (the calling thread's last error, without
 * its "rank R: ") after. */
static sc_status_t sc_op_transfer_failed(const sc_coll_op_t *op, sc_status_t st,
                                         const char *what, int send, int peer)
{
    char why[256];

    snprintf(why, sizeof(why), "%s", sc_error_text_unprefixed());
    return sc_error(st, "%s #%llu: %s %s %s failed (%s)",
                    sc_coll_kind_name((sc_coll_kind_t)op->hdr.kind),
                    (unsigned long long)op->hdr.seq, what, send ? "to" : "from",
                    sc_op_rank(op, peer).s, why);
}

static int sc_op_headers_done(const sc_coll_op_t *op)
{
    return op->hdr_ok == (1 << op->nhdr) - 1;
}

/* Header exchange through the mailboxes: writes the headers not yet written and reads
 * the neighbours' that arrived. While one is missing the engine looks again at its
 * next step: a mailbox filling is no UCX event. */
static sc_status_t sc_op_headers_mbox(sc_coll_op_t *op, int *progressed)
{
    sc_comm_t *c = op->comm;
    sc_status_t st;

    for (int i = 0; i < op->nhdr; i++) {
        if ((op->mbox_put & (1 << i)) &&
            sc_mbox_put(c, op->hdr_peer[i], op->hdr.seq, sc_op_hdr_out(op),
                        sc_op_header_bytes(op))) {
            op->mbox_put &= ~(1 << i);
            *progressed = 1;
        }
    }
    for (int i = 0; i < op->nhdr; i++) {
        size_t len = 0, cap;
        uint8_t *in = sc_op_hdr_in(op, i, &cap);
        if ((op->hdr_ok & (1 << i)) || !sc_mbox_get(c, op->hdr_peer[i], op->hdr.seq, in, cap, &len))
            continue;
        *progressed = 1;
        st = sc_op_check_header(op, i, len);
        if (st != SC_SUCCESS)
            return st;
        op->hdr_ok |= 1 << i;
    }
    if (op->mbox_put || !sc_op_headers_done(op))
        __atomic_store_n(&c->tp->rescan, 1, __ATOMIC_RELAXED);
    return SC_SUCCESS;
}

/* Advances header exchange; sets *progressed when something completed. */
static sc_status_t sc_op_headers(sc_coll_op_t *op, int *progressed)
{
    sc_transport_t *tp = op->comm->tp;
    sc_status_t st;

    if (op->mbox)
        return sc_op_headers_mbox(op, progressed);

    for (int i = 0; i < 2; i++) {
        if (op->hdr_send_req[i]) {
            st = sc_ucx_poll_send(tp, op->hdr_send_req[i]);
            if (st == SC_IN_PROGRESS)
                continue;
            op->hdr_send_req[i] = NULL;
            *progressed = 1;
            if (st != SC_SUCCESS)
                return sc_op_transfer_failed(op, st, "header send", 1, op->hdr_peer[i]);
        }
    }
    for (int i = 0; i < op->nhdr; i++) {
        size_t len = 0;
        if ((op->hdr_ok & (1 << i)) || !op->hdr_recv_req[i])
            continue;
        st = sc_ucx_poll_recv(tp, op->hdr_recv_req[i], &len);
        if (st == SC_IN_PROGRESS)
            continue;
        op->hdr_recv_req[i] = NULL;
        if (st != SC_SUCCESS)
            return sc_op_transfer_failed(op, st, "header receive", 0, op->hdr_peer[i]);
        *progressed = 1;
        st = sc_op_check_header(op, i, len);
        if (st != SC_SUCCESS)
            return st;
        op->hdr_ok |= 1 << i;
    }
    return SC_SUCCESS;
}

static int sc_op_deps_done(const sc_coll_op_t *op, const sc_action_t *a)
{
    for (int d = 0; d < SC_ACT_MAX_DEPS; d++)
        if (a->dep[d] >= 0 && op->acts[a->dep[d]].state != SC_ACT_DONE)
            return 0;
    return 1;
}

static sc_status_t sc_op_run_action(sc_coll_op_t *op, sc_action_t *a)
{
    sc_transport_t *tp = op->comm->tp;
    sc_comm_t *c = op->comm;
    uint32_t kind = sc_op_data_kind(op);
    sc_status_t st;

    switch ((sc_action_kind_t)a->kind) {
    case SC_ACT_SEND:
        st = (op->proto_eager && a->len > SC_PROTO_MIN_BYTES && a->len <= SC_PROTO_MAX_BYTES
                  ? sc_ucx_send_eager
                  : sc_ucx_send)(tp, sc_op_world(op, a->peer),
                                 sc_op_tag(op, kind, a->sub, c->rank), a->src, a->len,
                                 &a->ucx_req);
        if (st != SC_SUCCESS)
            return st;
        a->state = a->ucx_req ? SC_ACT_STARTED : SC_ACT_DONE;
        return SC_SUCCESS;
    case SC_ACT_RECV:
        st = sc_ucx_recv(tp, sc_op_tag(op, kind, a->sub, a->peer), SC_TAG_FULL_MASK, a->dst,
                         a->len, &a->ucx_req);
        if (st != SC_SUCCESS)
            return st;
        a->state = SC_ACT_STARTED;
        if (!a->ucx_req)
            a->state = SC_ACT_DONE;
        return SC_SUCCESS;
    case SC_ACT_REDUCE:
        if (a->streamed)
            sc_reduce_local_streamed(op->redop, op->dtype, a->src, a->scaled & 1, a->src2,
                                     a->dst, a->dst2, a->len, a->scaled ? op->prescale : 0.0,
                                     op->prescale_bound);
        else if (a->scaled)
            sc_reduce_local_scaled(op->redop, op->dtype, a->src, a->scaled & 1, a->src2,
                                   a->dst, a->len, op->prescale, op->prescale_bound);
        else
            sc_reduce_local(op->redop, op->dtype, a->src, a->src2, a->dst, a->len);
        break;
    case SC_ACT_COPY:
        if (a->dst != a->src && a->len && a->streamed)
            sc_copy_streamed(a->dst, a->src, a->len);
        else if (a->dst != a->src && a->len)
            memmove(a->dst, a->src, a->len);
        break;
    case SC_ACT_AVG:
        sc_reduce_finish_avg(op->dtype, a->dst, a->len, c->size);
        break;
    }
    a->state = SC_ACT_DONE;
    return SC_SUCCESS;
}

static sc_status_t sc_op_poll_action(sc_coll_op_t *op, sc_action_t *a)
{
    sc_transport_t *tp = op->comm->tp;
    size_t len = 0;
    sc_status_t st;

    if (a->kind == SC_ACT_SEND) {
        st = sc_ucx_poll_send(tp, a->ucx_req);
    } else {
        st = sc_ucx_poll_recv(tp, a->ucx_req, &len);
        if (st == SC_SUCCESS && len != a->len)
            st = sc_error(SC_ERR_MISMATCH,
                          "%s #%llu: %s sent %zu bytes where this rank expected %zu",
                          sc_coll_kind_name((sc_coll_kind_t)op->hdr.kind),
                          (unsigned long long)op->hdr.seq, sc_op_rank(op, a->peer).s, len,
                          a->len);
    }
    if (st == SC_IN_PROGRESS)
        return st;
    a->ucx_req = NULL;
    if (st == SC_ERR_PEER_FAILED) {
        char what[64];
        snprintf(what, sizeof(what), "%s of %zu bytes",
                 a->kind == SC_ACT_SEND ? "send" : "receive", a->len);
        return sc_op_transfer_failed(op, st, what, a->kind == SC_ACT_SEND, a->peer);
    }
    if (st != SC_SUCCESS)
        return st;
    a->state = SC_ACT_DONE;
    return SC_SUCCESS;
}

/* A peer failed long enough ago that what it sent before failing has arrived. */
#define SC_PEER_FAIL_GRACE_S 0.5

static int sc_op_peer_failed(const sc_transport_t *tp, int world, double now)
{
    return tp->peer_error[world][0] && now - tp->peer_error_at[world] > SC_PEER_FAIL_GRACE_S;
}

/* The failure of a peer this op waits on, if any. */
static sc_status_t sc_op_check_peers(sc_coll_op_t *op)
{
    sc_transport_t *tp = op->comm->tp;
    double now = sc_clock_coarse();
    int end = op->nacts < op->first_pending + SC_OP_WINDOW ? op->nacts
                                                           : op->first_pending + SC_OP_WINDOW;

    for (int i = 0; i < op->nhdr; i++) {
        int w = sc_op_world(op, op->hdr_peer[i]);
        if (!(op->hdr_ok & (1 << i)) && sc_op_peer_failed(tp, w, now))
            return sc_error(SC_ERR_PEER_FAILED, "%s", tp->peer_error[w]);
    }
    for (int i = op->first_pending; i < end; i++) {
        const sc_action_t *a = &op->acts[i];
        if (a->state == SC_ACT_STARTED && sc_op_peer_failed(tp, sc_op_world(op, a->peer), now))
            return sc_error(SC_ERR_PEER_FAILED, "%s",
                            tp->peer_error[sc_op_world(op, a->peer)]);
    }
    return SC_SUCCESS;
}

double sc_op_patience(const sc_coll_op_t *op)
{
    double t = op->comm->timeout_s + SC_OP_BUILD_GRACE * op->build_s;

    return op->refused && SC_REFUSAL_GRACE_S < t ? SC_REFUSAL_GRACE_S : t;
}

/* "; rank R (pid P) is stopped (...)", or for several "; N ranks of S are stopped (...):
 * rank R (pid P), ..." (cut with ", ..." where it would not fit len), naming every rank
 * of op's communicator on this node that is stopped: the likely cause of a timeout,
 * which names the peer this rank waited for, in a ring often a live rank that waits for
 * the stopped one itself. Empty where none is (or none is on this node). */
static void sc_op_stopped_peers(const sc_coll_op_t *op, char *buf, size_t len)
{
    static const char why[] = "(SIGSTOP, Ctrl-Z or a debugger)";
    const sc_comm_t *c = op->comm;
    char list[256];
    sc_text_list_t l;
    int stopped = 0;

    sc_text_list_init(&l, list, sizeof(list));
    for (int r = 0; r < c->size; r++) {
        int w = c->world_of[r];
        char one[80];

        if (!sc_ucx_peer_stopped(c->tp, w))
            continue;
        snprintf(one, sizeof(one), "%s (pid %d)", sc_op_rank(op, r).s, c->tp->peer_pid[w]);
        sc_text_list_add(&l, one);
        stopped++;
    }
    if (stopped == 0)
        buf[0] = '\0';
    else if (stopped == 1)
        snprintf(buf, len, "; %s is stopped %s", list, why);
    else
        snprintf(buf, len, "; %d ranks of %d are stopped %s: %s", stopped, c->size, why, list);
}

static sc_status_t sc_op_timeout(sc_coll_op_t *op)
{
    char mine[400], stopped[340];
    int p2p = op->hdr.kind == SC_COLL_SEND || op->hdr.kind == SC_COLL_RECV;
    int end = op->nacts < op->first_pending + SC_OP_WINDOW ? op->nacts
                                                           : op->first_pending + SC_OP_WINDOW;

    sc_op_describe(op, &op->hdr, mine, sizeof(mine));
    if (op->refused) {
        const char *why = sc_progress_refusal_text(op->comm, op);
        /* What the refusing rank did not issue: the pair of a send or receive. */
        const char *call = op->hdr.kind == SC_COLL_RECV   ? "send"
                           : op->hdr.kind == SC_COLL_SEND ? "receive"
                                                          : "collective";
        return sc_error(SC_ERR_MISMATCH, "%s failed: %s; it issued no %s in its place "
                        "within %.1f s", mine, why ? why : "a rank refused its part of it",
                        call, sc_op_patience(op));
    }
    sc_op_stopped_peers(op, stopped, sizeof(stopped));
    /* A send or receive with the rank itself waits for a call of its own thread, which
     * the sentence says rather than suspecting a peer or the network. */
    for (int i = 0; i < op->nhdr; i++)
        if (!(op->hdr_ok & (1 << i)))
            return sc_error(SC_ERR_TIMEOUT,
                            "%s timed out after %.1f s: nothing came from %s%s%s", mine,
                            sc_op_patience(op), sc_op_rank(op, op->hdr_peer[i]).s,
                            p2p && op->hdr_peer[i] == op->comm->rank
                                ? ", this rank itself: it issued no matching send to itself"
                                : ": it never issued its matching call, or it or the network "
                                  "to it failed",
                            stopped);
    for (int i = op->first_pending; i < end; i++) {
        const sc_action_t *a = &op->acts[i];
        const char *self = !p2p || a->peer != op->comm->rank ? ""
                           : a->kind == SC_ACT_SEND
                               ? ": that is this rank itself, whose receive of it was not "
                                 "posted before it (a send to itself past UCX's eager size "
                                 "waits for it: post the receive first, with a request)"
                               : ": that is this rank itself";
        if (a->state == SC_ACT_STARTED)
            return sc_error(SC_ERR_TIMEOUT,
                            "%s timed out after %.1f s waiting for %s (%s of %zu bytes)%s%s",
                            mine, sc_op_patience(op), sc_op_rank(op, a->peer).s,
                            a->kind == SC_ACT_SEND ? "send" : "receive", a->len, self,
                            stopped);
    }
    return sc_error(SC_ERR_TIMEOUT, "%s timed out after %.1f s%s", mine, sc_op_patience(op),
                    stopped);
}

sc_status_t sc_op_advance(sc_coll_op_t *op, int *moved)
{
    sc_status_t st;
    int end;
    double now;

    if (!op->started) {
        if (op->gate && !__atomic_load_n(op->gate, __ATOMIC_ACQUIRE)) {
            if (sc_clock_now() < op->gate_deadline)
                return SC_IN_PROGRESS;
            return sc_error(SC_ERR_TIMEOUT,
                            "%s #%llu on device buffers: the stream did not reach it within "
                            "the timeout (work queued before it never finished)",
                            sc_coll_kind_name((sc_coll_kind_t)op->hdr.kind),
                            (unsigned long long)op->hdr.seq);
        }
        st = sc_op_start(op);
        *moved = 1;
        if (st != SC_SUCCESS)
            return st;
    }
    st = sc_op_headers(op, moved);
    if (st != SC_SUCCESS)
        return st;
    end = op->nacts < op->first_pending + SC_OP_WINDOW ? op->nacts
                                                       : op->first_pending + SC_OP_WINDOW;
    for (int i = op->first_pending; i < end; i++) {
        sc_action_t *a = &op->acts[i];

        if (a->state == SC_ACT_STARTED) {
            st = sc_op_poll_action(op, a);
            if (st == SC_IN_PROGRESS)
                continue;
            if (st != SC_SUCCESS)
                return st;
            *moved = 1;
        } else if (a->state == SC_ACT_PENDING && sc_op_deps_done(op, a)) {
            /* Local computation waits until the neighbours agreed on the call. */
            if (a->kind != SC_ACT_SEND && a->kind != SC_ACT_RECV && !sc_op_headers_done(op))
                continue;
            st = sc_op_run_action(op, a);
            if (st != SC_SUCCESS)
                return st;
            *moved = 1;
        }
        if (i == op->first_pending && a->state == SC_ACT_DONE) {
            op->first_pending++;
            if (end < op->nacts)
                end++;
        }
    }
    if (op->first_pending == op->nacts && sc_op_headers_done(op) && !op->hdr_send_req[0] &&
        !op->hdr_send_req[1] && !op->mbox_put) {
        if (op->proto_cls >= 0)
            sc_proto_record(&op->comm->tp->proto, op->proto_cls, op->proto_eager,
                            sc_clock_now() - op->proto_t0, op->send_bytes);
        op->proto_cls = -1;
        /* The next op's protocol: what every rank of this collective preferred (the
         * same on both ranks of a pair, which saw the same two headers). A receive's
         * header, a point-to-point one, carries none: it leaves the agreement alone. */
        if (op->nhdr > 0 && op->hdr.kind != SC_COLL_RECV)
            op->comm->proto_agreed = op->hdr.eager_prefs & op->peer_prefs;
        return SC_SUCCESS;
    }
    st = sc_op_check_peers(op);
    if (st != SC_SUCCESS)
        return st;
    now = sc_clock_coarse();
    if (*moved)
        op->deadline = now + sc_op_patience(op);
    else if (now > op->deadline)
        return sc_op_timeout(op);
    return SC_IN_PROGRESS;
}

/* A transfer with peer (a rank of op's communicator) that the cancel left in flight:
 * the connection to it is closed, so that the transport stops moving the transfer's
 * data (a rendezvous on a dead link, a busy one, or one whose other side gave up), and
 * the op's memory stays until the worker is destroyed (over TCP, data the peer already
 * sent still arrives after the close). The connection is shared by every communicator
 * of the same sc_comm_init, so this fails the others' calls with that peer: where the
 * peers are alive the transfer was given time to settle first (progress_settle.h), and
 * a timeout's or a dead peer's comes here at once. (Kept open with the transfer never
 * finished, the connection failed later with 'Endpoint timeout' under heavy load.) */
static void sc_op_abandon(sc_coll_op_t *op, int peer)
{
    sc_transport_t *tp = op->comm->tp;
    char why[160];

    /* Counted here, before the op's request completes: a caller that waited for it
     * (a reducer's destroy) then sees the count move and keeps its memory too. */
    if (!op->stuck) {
        pthread_mutex_lock(&tp->pool_lock);
        tp->ops_left++;
        pthread_mutex_unlock(&tp->pool_lock);
    }
    op->stuck = 1;
    snprintf(why, sizeof(why), "the connection to rank %d was closed after %s #%llu failed "
             "with data in flight to or from it", sc_op_world(op, peer),
             sc_coll_kind_name((sc_coll_kind_t)op->hdr.kind),
             (unsigned long long)op->hdr.seq);
    sc_ucx_abandon(op->comm->tp, sc_op_world(op, peer), why);
}

/* Waits for a cancelled request (*req) until the deadline: 1 once it is done, or given
 * up on (released unfinished, the peer's connection closed: without settle), *req then
 * NULL; 0 when it is still in flight and kept for sc_op_settled (settle). */
static int sc_op_cancel_one(sc_coll_op_t *op, void **req, int peer, double deadline,
                            int settle)
{
    sc_transport_t *tp = op->comm->tp;

    if (*req == NULL)
        return 1;
    /* Over TCP, UCX 1.13 fails an assertion (uct_iface.h, a zero-copy completion with
     * count 0, 'Endpoint timeout') when the peer closes its side while a rendezvous of
     * this rank is still moving, as a peer that finished with the failed call does:
     * fault.netfault.abort, 5 runs of 12 under load with remote transfers settled. A
     * peer that destroyed the communicator does not finish so: it lives on and drops
     * what it never receives (SC_SETTLE_ALL), and closing the connection instead failed
     * the world's next call with it. */
    settle = settle == SC_SETTLE_ALL || (settle && sc_ucx_peer_local(tp, sc_op_world(op, peer)));
    if (settle ? !sc_ucx_cancel_wait(tp, *req, deadline)
               : !sc_ucx_cancel_finish(tp, *req, sc_op_world(op, peer), deadline)) {
        *req = NULL;
        return 1;
    }
    if (settle)
        return 0;
    *req = NULL;
    sc_op_abandon(op, peer);
    return 1;
}

void sc_op_cancel_start(sc_coll_op_t *op)
{
    sc_transport_t *tp = op->comm->tp;

    for (int i = 0; i < 2; i++) {
        sc_ucx_cancel_start(tp, op->hdr_recv_req[i]);
        sc_ucx_cancel_start(tp, op->hdr_send_req[i]);
    }
    for (int i = op->first_pending; i < op->nacts; i++)
        if (op->acts[i].state == SC_ACT_STARTED)
            sc_ucx_cancel_start(tp, op->acts[i].ucx_req);
}

int sc_op_cancel_finish(sc_coll_op_t *op, int settle, double deadline)
{
    int done = 1;

    for (int i = 0; i < 2; i++) {
        done &= sc_op_cancel_one(op, &op->hdr_recv_req[i], op->hdr_peer[i], deadline, settle);
        done &= sc_op_cancel_one(op, &op->hdr_send_req[i], op->hdr_peer[i], deadline, settle);
    }
    for (int i = op->first_pending; i < op->nacts; i++)
        if (op->acts[i].state == SC_ACT_STARTED)
            done &= sc_op_cancel_one(op, &op->acts[i].ucx_req, op->acts[i].peer, deadline,
                                     settle);
    return !done;
}

int sc_op_settled(sc_coll_op_t *op)
{
    sc_transport_t *tp = op->comm->tp;
    double now = sc_clock_coarse();
    int done = 1;

    for (int i = 0; i < 2; i++) {
        void **reqs[2] = {&op->hdr_recv_req[i], &op->hdr_send_req[i]};
        for (int k = 0; k < 2; k++) {
            if (*reqs[k] && sc_ucx_settled(tp, *reqs[k]))
                *reqs[k] = NULL;
            done &= *reqs[k] == NULL;
        }
    }
    for (int i = op->first_pending; i < op->nacts; i++) {
        sc_action_t *a = &op->acts[i];
        if (a->state != SC_ACT_STARTED || !a->ucx_req)
            continue;
        if (sc_ucx_settled(tp, a->ucx_req))
            a->ucx_req = NULL;
        else if (sc_op_peer_failed(tp, sc_op_world(op, a->peer), now))
            return -1;
        else
            done = 0;
    }
    return done;
}
