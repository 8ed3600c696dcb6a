/* Barrier by dissemination: in round k rank r signals r + 2^k and waits for r - 2^k. */
#include "collectives/algo_common.h"

sc_status_t sc_algo_barrier_dissemination(sc_coll_op_t *op)
{
    sc_comm_t *comm = op->comm;
    int p = comm->size, r = comm->rank, prev = -1;
    uint16_t round = 0;

    op->hdr.algo = SC_ALGO_DISSEMINATION;
    /* Round k's signal must carry every earlier round's news: it waits for all
     * earlier receives, which the chain of receives (each after the previous) gives. */
    for (int k = 1; k < p; k <<= 1, round++) {
        sc_op_send(op, sc_mod(r + k, p), round, NULL, 0, prev, -1);
        prev = sc_op_recv(op, sc_mod(r - k, p), round, NULL, 0, prev, -1);
    }
    return sc_op_built(op);
}
