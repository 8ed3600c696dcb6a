/* Recursive doubling allreduce for small messages: log2(p) exchanges; ranks beyond
 * the largest power of two fold into a partner first and get the result back last.
 * Each exchange goes in chunks, reduced as they arrive, as the ring's do: a large one
 * (SC_ALGO=rd, a raised SC_RING_THRESHOLD) sent as one message was silent until all of
 * it had arrived, and SC_TIMEOUT failed the op while its bytes moved. */
#include <stdlib.h>

#include "collectives/algo_common.h"

/* Chunks whose bookkeeping lives on the stack. */
#define SC_RD_STACK_CHUNKS 16

/* Every directed pair of ranks carries at most one transfer per op (the fold, each
 * step's partner, the unfold), so chunk c's message has sub-index c in each. */
sc_status_t sc_algo_allreduce_rd(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count)
{
    sc_comm_t *comm = op->comm;
    int p = comm->size, r = comm->rank;
    size_t es = sc_dtype_size(op->dtype), bytes = count * es;
    size_t chunk = sc_msg_chunk_bytes(bytes, es), nch = sc_msg_chunks(bytes, chunk);
    int p2 = 1, rem;
    /* Per chunk: the action that last wrote it in rbuf, and the reduce that last read it
     * in each scratch slot; on the stack for a small op (one chunk, the usual case), so
     * that building one costs no allocation. */
    int small[3 * SC_RD_STACK_CHUNKS], *last = NULL, *slot_reader[2] = {NULL, NULL};
    int heap;
    uint8_t *tmp;
    sc_status_t st = SC_SUCCESS;

    op->hdr.algo = SC_ALGO_RD;
    if (p == 2 && bytes <= SC_OP_PAIR_INLINE_MAX) {
        /* One message each way: the payload rides with the header exchange. */
        const void *theirs = sc_op_inline(op, sbuf, bytes);
        int done = sc_op_reduce(op, rbuf, sbuf, theirs, count, -1, -1);
        if (op->redop == SC_AVG)
            done = sc_op_avg(op, rbuf, count, done);
        sc_op_deliver(op, rbuf, 0, bytes, done);
        return sc_op_built(op);
    }
    while (p2 * 2 <= p)
        p2 *= 2;
    rem = p - p2;
    if (r >= p2) {
        /* Folded rank: contribute, then receive the result (a chunk once its own part
         * left: in place, sbuf is rbuf). Every send comes before the first receive,
         * which completes only at the partner's end: sends behind it would stay out of
         * the engine's window of 64 actions, and the partner would wait for them. */
        int first = op->nacts; /* the sends are actions first .. first + nch - 1 */
        for (size_t c = 0; c < nch; c++)
            sc_op_send(op, r - p2, (uint16_t)c, SC_CBYTES(sbuf) + c * chunk,
                       sc_msg_chunk_len(bytes, chunk, c), -1, -1);
        for (size_t c = 0; c < nch; c++) {
            size_t off = c * chunk, len = sc_msg_chunk_len(bytes, chunk, c);
            int rv = sc_op_recv(op, r - p2, (uint16_t)c, SC_BYTES(rbuf) + off, len,
                                op->oom ? -1 : first + (int)c, -1);
            sc_op_deliver(op, rbuf, off, len, rv);
        }
        return sc_op_built(op);
    }
    tmp = sc_op_scratch(op, 2 * bytes);
    heap = nch > SC_RD_STACK_CHUNKS;
    last = heap ? malloc(3 * nch * sizeof(int)) : small;
    if ((bytes && !tmp) || !last) {
        st = sc_error(SC_ERR_NO_MEMORY, "allreduce: out of memory for recursive doubling");
        goto out;
    }
    slot_reader[0] = last + nch;
    slot_reader[1] = last + 2 * nch;
    /* The input copied chunk by chunk too, so that the first exchanges wait for their
     * own chunk only. */
    for (size_t c = 0; c < nch; c++) {
        size_t off = c * chunk;
        last[c] = sc_op_copy(op, SC_BYTES(rbuf) + off, SC_CBYTES(sbuf) + off,
                             sc_msg_chunk_len(bytes, chunk, c), -1, -1);
        slot_reader[0][c] = slot_reader[1][c] = -1;
    }
    if (r < rem) {
        for (size_t c = 0; c < nch; c++) {
            size_t off = c * chunk, len = sc_msg_chunk_len(bytes, chunk, c);
            int rv = sc_op_recv(op, r + p2, (uint16_t)c, tmp + off, len, -1, -1);
            last[c] = sc_op_reduce(op, SC_BYTES(rbuf) + off, SC_BYTES(rbuf) + off, tmp + off,
                                   len / es, rv, last[c]);
            slot_reader[0][c] = last[c];
        }
    }
    for (int mask = 1, step = 1; mask < p2; mask <<= 1, step++) {
        int partner = r ^ mask;
        int slot = step & 1;
        uint8_t *t = tmp + (size_t)slot * bytes;
        for (size_t c = 0; c < nch; c++) {
            size_t off = c * chunk, len = sc_msg_chunk_len(bytes, chunk, c);
            int s = sc_op_send(op, partner, (uint16_t)c, SC_BYTES(rbuf) + off, len, last[c], -1);
            /* A slot's chunk is received into again only once its previous contents were
             * reduced. */
            int rv = sc_op_recv(op, partner, (uint16_t)c, t + off, len, slot_reader[slot][c],
                                -1);
            last[c] = sc_op_reduce(op, SC_BYTES(rbuf) + off, SC_BYTES(rbuf) + off, t + off,
                                   len / es, rv, s);
            slot_reader[slot][c] = last[c];
        }
    }
    for (size_t c = 0; c < nch; c++) {
        size_t off = c * chunk, len = sc_msg_chunk_len(bytes, chunk, c);
        if (op->redop == SC_AVG)
            last[c] = sc_op_avg(op, SC_BYTES(rbuf) + off, len / es, last[c]);
        sc_op_deliver(op, rbuf, off, len, last[c]);
        if (r < rem)
            sc_op_send(op, r + p2, (uint16_t)c, SC_BYTES(rbuf) + off, len, last[c], -1);
    }
    st = sc_op_built(op);
out:
    if (heap)
        free(last);
    return st;
}
