/* All-to-all by pairwise exchange: at step s rank r sends to r+s and receives from r-s,
 * each block in chunks (sc_msg_chunk_bytes), a send and a receive in turn. One message
 * per block left a large block (2 GiB over TCP) silent until all of it had arrived, and
 * SC_TIMEOUT, counted from the last message that completed, failed the op while its
 * bytes moved. */
#include "collectives/algo_common.h"

sc_status_t sc_algo_alltoall_pairwise(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                      size_t count)
{
    sc_comm_t *comm = op->comm;
    int p = comm->size, r = comm->rank;
    size_t es = sc_dtype_size(op->dtype), bytes = count * es;
    size_t chunk = sc_msg_chunk_bytes(bytes, es), nch = sc_msg_chunks(bytes, chunk);
    const uint8_t *src = sbuf;
    int staged = -1;

    op->hdr.algo = SC_ALGO_PAIRWISE;
    if (sbuf == rbuf && bytes) {
        /* In place: send from a copy so receives may overwrite recvbuf. */
        uint8_t *copy = sc_op_scratch(op, bytes * (size_t)p);
        if (!copy)
            return sc_error(SC_ERR_NO_MEMORY, "alltoall: out of memory for the in-place copy");
        staged = sc_op_copy(op, copy, sbuf, bytes * (size_t)p, -1, -1);
        src = copy;
    }
    sc_op_copy(op, SC_BYTES(rbuf) + (size_t)r * bytes, src + (size_t)r * bytes, bytes, staged, -1);
    for (int s = 1; s < p; s++) {
        int to = sc_mod(r + s, p), from = sc_mod(r - s, p);
        for (size_t c = 0; c < nch; c++) {
            size_t off = c * chunk, len = sc_msg_chunk_len(bytes, chunk, c);
            sc_op_send(op, to, (uint16_t)c, src + (size_t)to * bytes + off, len, staged, -1);
            sc_op_recv(op, from, (uint16_t)c, SC_BYTES(rbuf) + (size_t)from * bytes + off,
                       len, staged, -1);
        }
    }
    return sc_op_built(op);
}
