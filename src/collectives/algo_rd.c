/* Recursive doubling allreduce for small messages: log2(p) exchanges; ranks beyond
 * the largest power of two fold into a partner first and get the result back last. */
#include "collectives/algo_common.h"

#define SC_RD_SUB_FOLD 0
#define SC_RD_SUB_UNFOLD 0xfff0

sc_status_t sc_algo_allreduce_rd(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count)
{
    sc_comm_t *comm = op->comm;
    int p = comm->size, r = comm->rank;
    size_t es = sc_dtype_size(op->dtype), bytes = count * es;
    int p2 = 1, rem, last, step = 1;
    int slot_reader[2] = {-1, -1}; /* the reduce that last read each scratch slot */
    uint8_t *tmp;

    op->hdr.algo = SC_ALGO_RD;
    if (p == 2 && bytes <= SC_OP_PAIR_INLINE_MAX) {
        /* One message each way: the payload rides with the header exchange. */
        const void *theirs = sc_op_inline(op, sbuf, bytes);
        last = sc_op_reduce(op, rbuf, sbuf, theirs, count, -1, -1);
        if (op->redop == SC_AVG)
            last = sc_op_avg(op, rbuf, count, last);
        sc_op_deliver(op, rbuf, 0, bytes, last);
        return sc_op_built(op);
    }
    while (p2 * 2 <= p)
        p2 *= 2;
    rem = p - p2;
    if (r >= p2) {
        /* Folded rank: contribute, then receive the result. */
        int s = sc_op_send(op, r - p2, SC_RD_SUB_FOLD, sbuf, bytes, -1, -1);
        sc_op_deliver(op, rbuf, 0, bytes,
                      sc_op_recv(op, r - p2, SC_RD_SUB_UNFOLD, rbuf, bytes, s, -1));
        return sc_op_built(op);
    }
    tmp = sc_op_scratch(op, 2 * bytes);
    if (bytes && !tmp)
        return sc_error(SC_ERR_NO_MEMORY, "allreduce: out of memory for recursive doubling");
    last = sc_op_copy(op, rbuf, sbuf, bytes, -1, -1);
    if (r < rem) {
        int rv = sc_op_recv(op, r + p2, SC_RD_SUB_FOLD, tmp, bytes, -1, -1);
        last = sc_op_reduce(op, rbuf, rbuf, tmp, count, rv, last);
        slot_reader[0] = last;
    }
    for (int mask = 1; mask < p2; mask <<= 1, step++) {
        int partner = r ^ mask;
        int slot = step & 1;
        uint8_t *t = tmp + (size_t)slot * bytes;
        int s = sc_op_send(op, partner, (uint16_t)step, rbuf, bytes, last, -1);
        /* A slot is received into again only once its previous contents were reduced. */
        int rv = sc_op_recv(op, partner, (uint16_t)step, t, bytes, slot_reader[slot], -1);
        last = sc_op_reduce(op, rbuf, rbuf, t, count, rv, s);
        slot_reader[slot] = last;
    }
    if (op->redop == SC_AVG)
        last = sc_op_avg(op, rbuf, count, last);
    sc_op_deliver(op, rbuf, 0, bytes, last);
    if (r < rem)
        sc_op_send(op, r + p2, SC_RD_SUB_UNFOLD, rbuf, bytes, last, -1);
    return sc_op_built(op);
}
