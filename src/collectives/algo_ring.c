/* Ring algorithms, chunked and pipelined: allreduce (reduce-scatter then all-gather;
 * a chunk of the result that lies in one delivered range is made there, the others are
 * copied there as soon as they are final), reduce-scatter and all-gather. */
#include <stdlib.h>

#include "collectives/algo_common.h"

/* Receive buffers in flight per rank: enough to keep the ring busy, small enough to
 * stay in cache. */
#define SC_RING_SLOTS 4

typedef struct {
    size_t count;  /* elements in all */
    int p;
    size_t es;
    size_t ce;     /* elements per chunk */
    int nch;       /* chunks per block */
} sc_ring_geom_t;

/* The 16-bit sub of a message's tag numbers the chunks of every step of the op
 * (sc_ring_sub); it must not wrap within the op, or a receive of one step can take the
 * neighbour's message of another step that has the same sub (reduce-scatter returned
 * wrong sums: its first step sends every chunk at once). So a block has at most
 * 65536 / steps chunks, larger than the configured chunk where it must be. */
#define SC_RING_SUBS 65536u

static void sc_ring_geom(sc_ring_geom_t *g, size_t count, int p, size_t es, int even_blocks,
                         int steps)
{
    size_t max_block = even_blocks ? count / (size_t)p : (count + (size_t)p - 1) / (size_t)p;
    size_t max_chunks = SC_RING_SUBS / (size_t)(steps > 0 ? steps : 1);

    g->count = count;
    g->p = p;
    g->es = es;
    g->ce = sc_chunk_elems_in(es, max_block);
    if (max_chunks == 0)
        max_chunks = 1; /* more than 65536 steps (p > 32768): subs repeat every step */
    if ((max_block + g->ce - 1) / g->ce > max_chunks)
        g->ce = (max_block + max_chunks - 1) / max_chunks;
    g->nch = (int)((max_block + g->ce - 1) / g->ce);
    if (g->nch == 0)
        g->nch = 1;
}

/* Offset (elements) and length of chunk c of block b; len 0 when empty. */
static void sc_ring_chunk(const sc_ring_geom_t *g, int b, int c, size_t *off, size_t *len)
{
    size_t start = sc_block_start(g->count, g->p, b);
    size_t end = sc_block_start(g->count, g->p, b + 1);
    size_t o = start + (size_t)c * g->ce;

    *off = o;
    *len = o < end ? sc_min_size(g->ce, end - o) : 0;
}

static uint16_t sc_ring_sub(const sc_ring_geom_t *g, int phase_step, int c)
{
    return (uint16_t)(((size_t)phase_step * (size_t)g->nch + (size_t)c) & 0xffff);
}

/* Where the final values of elements [off, off + len) are made: a delivered range's own
 * memory when one holds them all, else rbuf (see sc_op_final). */
static uint8_t *sc_ring_final(sc_coll_op_t *op, void *rbuf, size_t off, size_t len, size_t es)
{
    return sc_op_final(op, rbuf, off * es, len * es);
}

/* The final values of elements [off, off + len), made at fin once action dep is done,
 * copied where they are delivered unless they were made there. */
static void sc_ring_deliver(sc_coll_op_t *op, void *rbuf, const uint8_t *fin, size_t off,
                            size_t len, size_t es, int dep)
{
    if (fin == SC_BYTES(rbuf) + off * es)
        sc_op_deliver(op, rbuf, off * es, len * es, dep);
}

sc_status_t sc_algo_allreduce_ring(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count)
{
    sc_comm_t *comm = op->comm;
    int p = comm->size, r = comm->rank;
    int left = sc_mod(r - 1, p), right = sc_mod(r + 1, p);
    size_t es = sc_dtype_size(op->dtype);
    sc_ring_geom_t g;
    int *red, *rs_send, *ready, slot_user[SC_RING_SLOTS];
    uint8_t *tmp;
    int k = 0;
    sc_status_t st = SC_SUCCESS;

    op->hdr.algo = SC_ALGO_RING;
    sc_ring_geom(&g, count, p, es, 0, 2 * (p - 1));
    tmp = sc_op_scratch(op, SC_RING_SLOTS * g.ce * es);
    red = malloc((size_t)p * (size_t)g.nch * sizeof(int));
    rs_send = malloc((size_t)p * (size_t)g.nch * sizeof(int));
    ready = malloc((size_t)p * (size_t)g.nch * sizeof(int));
    if (!tmp || !red || !rs_send || !ready) {
        st = sc_error(SC_ERR_NO_MEMORY, "allreduce: out of memory for the ring schedule");
        goto out;
    }
    for (int i = 0; i < p * g.nch; i++)
        red[i] = rs_send[i] = ready[i] = -1;
    for (int i = 0; i < SC_RING_SLOTS; i++)
        slot_user[i] = -1;

    /* Reduce-scatter: after p-1 steps rank r holds the sum of block r+1. */
    for (int s = 0; s < p - 1; s++) {
        int sb = sc_mod(r - s, p), rb = sc_mod(r - s - 1, p);
        for (int c = 0; c < g.nch; c++) {
            size_t off, len;
            sc_ring_chunk(&g, sb, c, &off, &len);
            if (len) {
                const void *src = s == 0 ? SC_CBYTES(sbuf) + off * es : SC_BYTES(rbuf) + off * es;
                rs_send[sb * g.nch + c] = sc_op_send(op, right, sc_ring_sub(&g, s, c), src,
                                                     len * es, s == 0 ? -1 : red[sb * g.nch + c], -1);
            }
            sc_ring_chunk(&g, rb, c, &off, &len);
            if (len) {
                int slot = k++ % SC_RING_SLOTS;
                uint8_t *t = tmp + (size_t)slot * g.ce * es;
                int rv = sc_op_recv(op, left, sc_ring_sub(&g, s, c), t, len * es,
                                    slot_user[slot], -1);
                /* The last step makes the owned block's final values. */
                uint8_t *dst = s == p - 2 ? sc_ring_final(op, rbuf, off, len, es)
                                          : SC_BYTES(rbuf) + off * es;
                int d = sc_op_reduce(op, dst, t, SC_CBYTES(sbuf) + off * es, len, rv, -1);
                slot_user[slot] = d;
                red[rb * g.nch + c] = d;
            }
        }
    }
    /* The owned block: averaged once, by its owner. */
    {
        int ob = sc_mod(r + 1, p);
        for (int c = 0; c < g.nch; c++) {
            size_t off, len;
            uint8_t *fin;
            sc_ring_chunk(&g, ob, c, &off, &len);
            if (!len)
                continue;
            fin = sc_ring_final(op, rbuf, off, len, es);
            ready[ob * g.nch + c] = red[ob * g.nch + c];
            if (op->redop == SC_AVG)
                ready[ob * g.nch + c] = sc_op_avg(op, fin, len, red[ob * g.nch + c]);
            sc_ring_deliver(op, rbuf, fin, off, len, es, ready[ob * g.nch + c]);
        }
    }
    /* All-gather of the reduced blocks. */
    for (int s = 0; s < p - 1; s++) {
        int sb = sc_mod(r + 1 - s, p), rb = sc_mod(r - s, p);
        for (int c = 0; c < g.nch; c++) {
            size_t off, len;
            sc_ring_chunk(&g, sb, c, &off, &len);
            if (len)
                sc_op_send(op, right, sc_ring_sub(&g, p - 1 + s, c),
                           sc_ring_final(op, rbuf, off, len, es), len * es,
                           ready[sb * g.nch + c], -1);
            sc_ring_chunk(&g, rb, c, &off, &len);
            if (len) {
                uint8_t *fin = sc_ring_final(op, rbuf, off, len, es);
                ready[rb * g.nch + c] =
                    sc_op_recv(op, left, sc_ring_sub(&g, p - 1 + s, c), fin, len * es,
                               rs_send[rb * g.nch + c], -1);
                sc_ring_deliver(op, rbuf, fin, off, len, es, ready[rb * g.nch + c]);
            }
        }
    }
    st = sc_op_built(op);
out:
    free(red);
    free(rs_send);
    free(ready);
    return st;
}

sc_status_t sc_algo_reduce_scatter_ring(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                        size_t recvcount)
{
    sc_comm_t *comm = op->comm;
    int p = comm->size, r = comm->rank;
    int left = sc_mod(r - 1, p), right = sc_mod(r + 1, p);
    size_t es = sc_dtype_size(op->dtype);
    sc_ring_geom_t g;
    int tmp_user[SC_RING_SLOTS], acc_user[SC_RING_SLOTS];
    uint8_t *tmp, *acc;
    int kt = 0, ka = 0;

    op->hdr.algo = SC_ALGO_RING;
    sc_ring_geom(&g, recvcount * (size_t)p, p, es, 1, p - 1);
    tmp = sc_op_scratch(op, 2 * SC_RING_SLOTS * g.ce * es);
    if (!tmp)
        return sc_error(SC_ERR_NO_MEMORY, "reduce_scatter: out of memory for the ring schedule");
    acc = tmp + SC_RING_SLOTS * g.ce * es;
    for (int i = 0; i < SC_RING_SLOTS; i++)
        tmp_user[i] = acc_user[i] = -1;

    /* Chunk by chunk, so that a partial sum's slot is free again once the next step
     * has sent it. Step s sends block r-s-1 and receives block r-s-2; the last step
     * lands block r in recvbuf. */
    for (int c = 0; c < g.nch; c++) {
        int acc_prev = -1, acc_slot = -1;
        for (int s = 0; s < p - 1; s++) {
            int sb = sc_mod(r - s - 1, p), rb = sc_mod(r - s - 2, p);
            size_t off, len, roff, rlen;
            sc_ring_chunk(&g, sb, c, &off, &len);
            if (len) {
                if (s == 0)
                    sc_op_send(op, right, sc_ring_sub(&g, s, c), SC_CBYTES(sbuf) + off * es,
                               len * es, -1, -1);
                else
                    acc_user[acc_slot] =
                        sc_op_send(op, right, sc_ring_sub(&g, s, c),
                                   acc + (size_t)acc_slot * g.ce * es, len * es, acc_prev, -1);
            }
            sc_ring_chunk(&g, rb, c, &roff, &rlen);
            if (rlen) {
                int ts = kt++ % SC_RING_SLOTS;
                uint8_t *t = tmp + (size_t)ts * g.ce * es;
                int rv = sc_op_recv(op, left, sc_ring_sub(&g, s, c), t, rlen * es,
                                    tmp_user[ts], -1);
                void *dst;
                int d, as = -1;
                if (s == p - 2) {
                    dst = SC_BYTES(rbuf) + (roff - (size_t)r * recvcount) * es;
                } else {
                    as = ka++ % SC_RING_SLOTS;
                    dst = acc + (size_t)as * g.ce * es;
                }
                d = sc_op_reduce(op, dst, t, SC_CBYTES(sbuf) + roff * es, rlen, rv,
                                 as >= 0 ? acc_user[as] : -1);
                tmp_user[ts] = d;
                if (as >= 0) {
                    acc_user[as] = d;
                    acc_prev = d;
                    acc_slot = as;
                } else if (op->redop == SC_AVG) {
                    sc_op_avg(op, dst, rlen, d);
                }
            }
        }
    }
    return sc_op_built(op);
}

sc_status_t sc_algo_allgather_ring(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                   size_t sendcount)
{
    sc_comm_t *comm = op->comm;
    int p = comm->size, r = comm->rank;
    int left = sc_mod(r - 1, p), right = sc_mod(r + 1, p);
    size_t es = sc_dtype_size(op->dtype);
    sc_ring_geom_t g;
    int *got;

    op->hdr.algo = SC_ALGO_RING;
    sc_ring_geom(&g, sendcount * (size_t)p, p, es, 1, p - 1);
    if (p == 2 && sendcount > 0) {
        /* Nothing is forwarded: one message per block. */
        g.ce = sendcount;
        g.nch = 1;
    }
    got = malloc((size_t)p * (size_t)g.nch * sizeof(int));
    if (!got)
        return sc_error(SC_ERR_NO_MEMORY, "allgather: out of memory for the ring schedule");
    for (int i = 0; i < p * g.nch; i++)
        got[i] = -1;
    for (int s = 0; s < p - 1; s++) {
        int sb = sc_mod(r - s, p), rb = sc_mod(r - s - 1, p);
        for (int c = 0; c < g.nch; c++) {
            size_t off, len;
            sc_ring_chunk(&g, sb, c, &off, &len);
            if (len) {
                /* Our own block goes straight from sendbuf. */
                const void *src = s == 0 ? SC_CBYTES(sbuf) + (off - (size_t)r * sendcount) * es
                                         : SC_BYTES(rbuf) + off * es;
                sc_op_send(op, right, sc_ring_sub(&g, s, c), src, len * es,
                           s == 0 ? -1 : got[sb * g.nch + c], -1);
            }
            sc_ring_chunk(&g, rb, c, &off, &len);
            if (len)
                got[rb * g.nch + c] = sc_op_recv(op, left, sc_ring_sub(&g, s, c),
                                                 SC_BYTES(rbuf) + off * es, len * es, -1, -1);
        }
    }
    /* Our own block last: the first transfers are under way (their handshakes
     * answered) before the copy takes the progress thread. */
    sc_op_copy(op, SC_BYTES(rbuf) + (size_t)r * sendcount * es, sbuf, sendcount * es, -1, -1);
    free(got);
    return sc_op_built(op);
}
