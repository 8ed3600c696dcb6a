/* Building an operation's schedule of actions (its execution: schedule_exec.c). */
#include <stdlib.h>
#include <string.h>

#include "collectives/schedule.h"
#include "core/error.h"
#include "core/progress.h"

static const char *const sc_coll_names[SC_COLL_KIND_COUNT] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce",
    "alltoall",  "barrier",        "send",      "recv"};

static const char *const sc_algo_names[] = {"none",     "ring",          "rd",
                                            "chain",    "tree",          "pairwise",
                                            "dissemination", "direct", "shm",
                                            "staged"};

const char *sc_coll_kind_name(sc_coll_kind_t kind)
{
    return (unsigned)kind < SC_COLL_KIND_COUNT ? sc_coll_names[kind] : "unknown";
}

const char *sc_algo_name(sc_algo_t algo)
{
    return (unsigned)algo <= SC_ALGO_STAGED ? sc_algo_names[algo] : "unknown";
}

/* Finished ops are kept for reuse, with their action arrays and small scratch
 * buffers, so that a small collective allocates nothing. */
#define SC_OP_POOL_MAX 32
#define SC_OP_POOL_SCRATCH_MAX (64 * 1024)
/* A pooled op keeps an action array of at most this many actions (a large op's array,
 * hundreds of MB with tiny chunks, is freed with it, not kept for the next call). */
#define SC_OP_POOL_ACTS_MAX 4096

sc_coll_op_t *sc_op_create(struct sc_comm *comm, sc_coll_kind_t kind, sc_dtype_t dtype,
                      sc_op_t redop, size_t count, int root)
{
    sc_transport_t *tp = comm->tp;
    sc_coll_op_t *op;
    sc_action_t *acts = NULL;
    void *scratch = NULL;
    size_t scratch_bytes = 0;
    int cap = 0;

    pthread_mutex_lock(&tp->pool_lock);
    op = tp->op_pool;
    if (op) {
        tp->op_pool = op->next;
        tp->op_pool_len--;
    }
    pthread_mutex_unlock(&tp->pool_lock);
    if (op) {
        acts = op->acts;
        cap = op->cap;
        scratch = op->scratch;
        scratch_bytes = op->scratch_bytes;
        memset(op, 0, SC_OP_CLEARED);
    } else {
        op = calloc(1, sizeof(*op));
        if (!op)
            return NULL;
    }
    op->acts = acts;
    op->cap = cap;
    op->scratch = scratch;
    op->scratch_bytes = scratch_bytes;
    op->comm = comm;
    op->dtype = dtype;
    op->redop = redop;
    op->hdr.magic = SC_OP_HDR_MAGIC;
    op->hdr.kind = (uint16_t)kind;
    op->hdr.dtype = (uint8_t)dtype;
    op->hdr.op = (uint8_t)redop;
    op->hdr.root = root;
    op->hdr.rank = comm->rank;
    op->hdr.count = count;
    op->hdr_peer[0] = op->hdr_peer[1] = -1;
    op->proto_cls = -1;
    return op;
}

void sc_op_unhold(sc_coll_op_t *op)
{
    if (op->stuck)
        return;
    for (int i = 0; i < 2; i++) {
        sc_shm_unhold(op->held[i]);
        op->held[i] = NULL;
    }
}

void sc_op_destroy(sc_coll_op_t *op)
{
    sc_transport_t *tp;

    if (!op)
        return;
    tp = op->comm->tp;
    sc_op_unhold(op);
    if (op->stuck) {
        pthread_mutex_lock(&tp->pool_lock);
        op->next = tp->op_stuck;
        tp->op_stuck = op;
        pthread_mutex_unlock(&tp->pool_lock);
        return;
    }
    free(op->prescale_own);
    op->prescale_own = NULL;
    if (op->cap > SC_OP_POOL_ACTS_MAX) {
        free(op->acts);
        op->acts = NULL;
        op->cap = 0;
    }
    if (op->scratch_bytes <= SC_OP_POOL_SCRATCH_MAX) {
        pthread_mutex_lock(&tp->pool_lock);
        if (tp->op_pool_len < SC_OP_POOL_MAX) {
            op->next = tp->op_pool;
            tp->op_pool = op;
            tp->op_pool_len++;
            op = NULL;
        }
        pthread_mutex_unlock(&tp->pool_lock);
        if (!op)
            return;
    }
    sc_op_free(op);
}

void sc_op_free(sc_coll_op_t *op)
{
    free(op->prescale_own);
    free(op->acts);
    free(op->scratch);
    free(op);
}

void *sc_op_scratch(sc_coll_op_t *op, size_t bytes)
{
    if (bytes <= op->scratch_bytes)
        return bytes ? op->scratch : NULL;
    free(op->scratch);
    op->scratch = malloc(bytes);
    op->scratch_bytes = op->scratch ? bytes : 0;
    if (!op->scratch)
        op->oom = 1; /* reported by sc_op_built */
    return op->scratch;
}

static int sc_op_append(sc_coll_op_t *op, sc_action_kind_t kind, int dep0, int dep1)
{
    sc_action_t *a;

    if (op->oom)
        return -1;
    if (op->nacts == op->cap) {
        int cap = op->cap ? 2 * op->cap : 16;
        sc_action_t *acts = realloc(op->acts, (size_t)cap * sizeof(*acts));
        if (!acts) {
            op->oom = 1;
            return -1;
        }
        op->acts = acts;
        op->cap = cap;
    }
    a = &op->acts[op->nacts];
    memset(a, 0, sizeof(*a));
    a->kind = (uint8_t)kind;
    a->dep[0] = dep0;
    a->dep[1] = dep1;
    a->peer = -1;
    return op->nacts++;
}

int sc_op_send(sc_coll_op_t *op, int peer, uint16_t sub, const void *src, size_t bytes,
               int dep0, int dep1)
{
    int i = sc_op_append(op, SC_ACT_SEND, dep0, dep1);
    if (i >= 0) {
        op->acts[i].peer = peer;
        op->acts[i].sub = sub;
        op->acts[i].src = src;
        op->acts[i].len = bytes;
        op->send_bytes += bytes;
        if (bytes > op->send_max)
            op->send_max = bytes;
    }
    return i;
}

int sc_op_recv(sc_coll_op_t *op, int peer, uint16_t sub, void *dst, size_t bytes, int dep0,
               int dep1)
{
    int i = sc_op_append(op, SC_ACT_RECV, dep0, dep1);
    if (i >= 0) {
        op->acts[i].peer = peer;
        op->acts[i].sub = sub;
        op->acts[i].dst = dst;
        op->acts[i].len = bytes;
    }
    return i;
}

int sc_op_reduce(sc_coll_op_t *op, void *dst, const void *a, const void *b, size_t count,
                 int dep0, int dep1)
{
    int i = sc_op_append(op, SC_ACT_REDUCE, dep0, dep1);
    if (i >= 0) {
        op->acts[i].dst = dst;
        op->acts[i].src = a;
        op->acts[i].src2 = b;
        op->acts[i].len = count;
    }
    return i;
}

int sc_op_reduce_scaled(sc_coll_op_t *op, void *dst, const void *a, const void *b, size_t count,
                        int scaled, int dep0, int dep1)
{
    int i = sc_op_reduce(op, dst, a, b, count, dep0, dep1);
    if (i >= 0)
        op->acts[i].scaled = (uint8_t)scaled;
    return i;
}

int sc_op_reduce_streamed(sc_coll_op_t *op, void *dst, void *dst2, const void *a,
                          const void *b, size_t count, int scaled, int dep0, int dep1)
{
    int i = sc_op_reduce_scaled(op, dst, a, b, count, scaled, dep0, dep1);
    if (i >= 0) {
        op->acts[i].streamed = 1;
        op->acts[i].dst2 = dst2;
    }
    return i;
}

int sc_op_copy(sc_coll_op_t *op, void *dst, const void *src, size_t bytes, int dep0, int dep1)
{
    int i = sc_op_append(op, SC_ACT_COPY, dep0, dep1);
    if (i >= 0) {
        op->acts[i].dst = dst;
        op->acts[i].src = src;
        op->acts[i].len = bytes;
    }
    return i;
}

int sc_op_copy_streamed(sc_coll_op_t *op, void *dst, const void *src, size_t bytes, int dep0,
                        int dep1)
{
    int i = sc_op_copy(op, dst, src, bytes, dep0, dep1);
    if (i >= 0)
        op->acts[i].streamed = 1;
    return i;
}

int sc_op_avg(sc_coll_op_t *op, void *dst, size_t count, int dep0)
{
    int i = sc_op_append(op, SC_ACT_AVG, dep0, -1);
    if (i >= 0) {
        op->acts[i].dst = dst;
        op->acts[i].len = count;
    }
    return i;
}

/* The first delivered range that ends after off. */
static int sc_op_deliver_first(const sc_coll_op_t *op, size_t off)
{
    const sc_range_t *seg = op->deliver;
    int lo = 0, hi = op->ndeliver;

    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (seg[mid].off + seg[mid].bytes <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void *sc_op_final(sc_coll_op_t *op, void *rbuf, size_t off, size_t bytes)
{
    int i = sc_op_deliver_first(op, off);

    if (bytes && i < op->ndeliver && op->deliver[i].off <= off &&
        off + bytes <= op->deliver[i].off + op->deliver[i].bytes)
        return (char *)op->deliver[i].dst + (off - op->deliver[i].off);
    return (char *)rbuf + off;
}

int sc_op_copy_delivered(sc_coll_op_t *op, void *dst, const void *src, size_t bytes, int dep0,
                         int dep1)
{
    return op->deliver_streamed ? sc_op_copy_streamed(op, dst, src, bytes, dep0, dep1)
                                : sc_op_copy(op, dst, src, bytes, dep0, dep1);
}

void sc_op_deliver(sc_coll_op_t *op, const void *rbuf, size_t off, size_t bytes, int dep)
{
    const sc_range_t *seg = op->deliver;

    for (int i = sc_op_deliver_first(op, off); i < op->ndeliver && seg[i].off < off + bytes;
         i++) {
        size_t a = seg[i].off > off ? seg[i].off : off;
        size_t b = seg[i].off + seg[i].bytes < off + bytes ? seg[i].off + seg[i].bytes
                                                           : off + bytes;
        sc_op_copy_delivered(op, (char *)seg[i].dst + (a - seg[i].off), (const char *)rbuf + a,
                             b - a, dep, -1);
    }
}

sc_status_t sc_op_built(sc_coll_op_t *op)
{
    if (op->oom)
        return sc_error(SC_ERR_NO_MEMORY, "%s: out of memory building the schedule",
                        sc_coll_kind_name((sc_coll_kind_t)op->hdr.kind));
    return SC_SUCCESS;
}
