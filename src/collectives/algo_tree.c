/* Rooted collectives: broadcast and reduce as a binomial tree (small messages) or a
 * pipelined chain (large messages). Positions are relative to the root (vr = 0). The
 * tree's messages go in chunks too (sc_msg_chunk_bytes): a large one (a raised
 * SC_RING_THRESHOLD) sent whole was silent until all of it had arrived, and SC_TIMEOUT
 * failed the op while it moved. Every edge of the tree carries one transfer per op, so
 * chunk c's message has sub-index c. */
#include "collectives/algo_common.h"

#define SC_CHAIN_SLOTS 4

static int sc_tree_rank(int vr, int root, int p)
{
    return sc_mod(vr + root, p);
}

sc_status_t sc_algo_broadcast_tree(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                                   int root)
{
    sc_comm_t *comm = op->comm;
    int p = comm->size;
    int vr = sc_mod(comm->rank - root, p);
    size_t es = sc_dtype_size(op->dtype), bytes = count * es;
    size_t chunk = sc_msg_chunk_bytes(bytes, es), nch = sc_msg_chunks(bytes, chunk);
    const uint8_t *src = vr == 0 ? SC_CBYTES(sbuf) : SC_CBYTES(rbuf);
    int low = 1;

    op->hdr.algo = SC_ALGO_TREE;
    /* The parent is vr less its lowest set bit; the root's children start below p. */
    while (low < p && !(vr & low))
        low <<= 1;
    if (vr == 0)
        sc_op_copy(op, rbuf, sbuf, bytes, -1, -1);
    for (size_t c = 0; c < nch; c++) {
        size_t off = c * chunk, len = sc_msg_chunk_len(bytes, chunk, c);
        int got = -1;
        if (vr != 0)
            got = sc_op_recv(op, sc_tree_rank(vr - low, root, p), (uint16_t)c,
                             SC_BYTES(rbuf) + off, len, -1, -1);
        /* Children are vr + m for every m below vr's lowest set bit (all m < p for root). */
        for (int mask = low >> 1; mask > 0; mask >>= 1)
            if (vr + mask < p)
                sc_op_send(op, sc_tree_rank(vr + mask, root, p), (uint16_t)c, src + off, len,
                           got, -1);
    }
    return sc_op_built(op);
}

sc_status_t sc_algo_reduce_tree(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                                int root)
{
    sc_comm_t *comm = op->comm;
    int p = comm->size;
    int vr = sc_mod(comm->rank - root, p);
    size_t es = sc_dtype_size(op->dtype), bytes = count * es;
    size_t chunk = sc_msg_chunk_bytes(bytes, es), nch = sc_msg_chunks(bytes, chunk);
    int levels = 0;
    uint8_t *scratch, *acc;

    op->hdr.algo = SC_ALGO_TREE;
    while ((1 << levels) < p)
        levels++;
    /* One receive slot per child so all of them can arrive at once, plus the
     * accumulator on non-root ranks. */
    scratch = sc_op_scratch(op, bytes * (size_t)(levels + 1));
    if (bytes && !scratch)
        return sc_error(SC_ERR_NO_MEMORY, "reduce: out of memory for the tree");
    acc = vr == 0 ? rbuf : scratch + (size_t)levels * bytes;
    /* Chunk by chunk: each is reduced as its children's parts arrive and sent on. */
    for (size_t c = 0; c < nch; c++) {
        size_t off = c * chunk, len = sc_msg_chunk_len(bytes, chunk, c);
        int last = sc_op_copy(op, acc + off, SC_CBYTES(sbuf) + off, len, -1, -1), level = 0;
        for (int mask = 1; mask < p; mask <<= 1, level++) {
            if (vr & mask) {
                sc_op_send(op, sc_tree_rank(vr - mask, root, p), (uint16_t)c, acc + off, len,
                           last, -1);
                break;
            }
            if (vr + mask < p) {
                uint8_t *t = scratch + (size_t)level * bytes + off;
                int rv = sc_op_recv(op, sc_tree_rank(vr + mask, root, p), (uint16_t)c, t, len,
                                    -1, -1);
                last = sc_op_reduce(op, acc + off, acc + off, t, len / es, rv, last);
            }
        }
        if (vr == 0 && op->redop == SC_AVG)
            sc_op_avg(op, acc + off, len / es, last);
    }
    return sc_op_built(op);
}

sc_status_t sc_algo_broadcast_chain(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                                    int root)
{
    sc_comm_t *comm = op->comm;
    int p = comm->size;
    int vr = sc_mod(comm->rank - root, p);
    size_t es = sc_dtype_size(op->dtype), ce = sc_chunk_elems_in(es, count);
    int next = sc_tree_rank(vr + 1, root, p), prev = sc_tree_rank(vr - 1, root, p);

    op->hdr.algo = SC_ALGO_CHAIN;
    if (vr == 0)
        sc_op_copy(op, rbuf, sbuf, count * es, -1, -1);
    for (size_t off = 0, c = 0; p > 1 && off < count; off += ce, c++) {
        size_t len = sc_min_size(ce, count - off);
        uint16_t sub = (uint16_t)(c & 0xffff);
        if (vr == 0) {
            sc_op_send(op, next, sub, SC_CBYTES(sbuf) + off * es, len * es, -1, -1);
        } else {
            int rv = sc_op_recv(op, prev, sub, SC_BYTES(rbuf) + off * es, len * es, -1, -1);
            if (vr < p - 1)
                sc_op_send(op, next, sub, SC_BYTES(rbuf) + off * es, len * es, rv, -1);
        }
    }
    return sc_op_built(op);
}

sc_status_t sc_algo_reduce_chain(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                                 int root)
{
    sc_comm_t *comm = op->comm;
    int p = comm->size;
    int vr = sc_mod(comm->rank - root, p);
    size_t es = sc_dtype_size(op->dtype), ce = sc_chunk_elems_in(es, count);
    /* Data flows from the last position towards the root. */
    int next = sc_tree_rank(vr - 1, root, p), prev = sc_tree_rank(vr + 1, root, p);
    int tmp_user[SC_CHAIN_SLOTS], acc_user[SC_CHAIN_SLOTS], kt = 0;
    uint8_t *tmp = NULL, *acc = NULL;

    op->hdr.algo = SC_ALGO_CHAIN;
    if (vr < p - 1) {
        tmp = sc_op_scratch(op, 2 * SC_CHAIN_SLOTS * ce * es);
        if (!tmp)
            return sc_error(SC_ERR_NO_MEMORY, "reduce: out of memory for the chain");
        acc = tmp + SC_CHAIN_SLOTS * ce * es;
    }
    for (int i = 0; i < SC_CHAIN_SLOTS; i++)
        tmp_user[i] = acc_user[i] = -1;
    for (size_t off = 0, c = 0; off < count; off += ce, c++) {
        size_t len = sc_min_size(ce, count - off);
        uint16_t sub = (uint16_t)(c & 0xffff);
        int ts, rv, d;
        uint8_t *t;

        if (vr == p - 1) {
            sc_op_send(op, next, sub, SC_CBYTES(sbuf) + off * es, len * es, -1, -1);
            continue;
        }
        ts = kt++ % SC_CHAIN_SLOTS;
        t = tmp + (size_t)ts * ce * es;
        rv = sc_op_recv(op, prev, sub, t, len * es, tmp_user[ts], -1);
        if (vr == 0) {
            d = sc_op_reduce(op, SC_BYTES(rbuf) + off * es, t, SC_CBYTES(sbuf) + off * es, len,
                             rv, -1);
            if (op->redop == SC_AVG)
                sc_op_avg(op, SC_BYTES(rbuf) + off * es, len, d);
        } else {
            uint8_t *a = acc + (size_t)ts * ce * es;
            d = sc_op_reduce(op, a, t, SC_CBYTES(sbuf) + off * es, len, rv, acc_user[ts]);
            acc_user[ts] = sc_op_send(op, next, sub, a, len * es, d, -1);
        }
        tmp_user[ts] = d;
    }
    return sc_op_built(op);
}
