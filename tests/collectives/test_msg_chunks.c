/* The messages of the algorithms that move whole buffers between two ranks, built on a
 * stand-in communicator and never run: the pairwise all-to-all's blocks (algo_alltoall.c),
 * recursive doubling's exchanges (algo_rd.c) and the binomial tree's messages
 * (algo_tree.c) travel in chunks of at most SC_CHUNK_BYTES (grown only where a transfer
 * would need more than 65536, the tag's sub-indices), in order, each with its own
 * sub-index. The buffers are made-up addresses: blocks past 4 GiB cost no memory.
 * `test_msg_chunks [NAME]`. */
#include <stdint.h>
#include <stdlib.h>

#include "collectives/schedule.h"
#include "core/comm_internal.h"

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"
#include "../common/sc_test_runner.h"

#define NELEM(x) (sizeof(x) / sizeof((x)[0]))
#define CHUNK ((size_t)262144) /* SC_CHUNK_BYTES' default */
#define SEND_BASE ((uintptr_t)1 << 44)
#define RECV_BASE ((uintptr_t)1 << 45)

enum { ALLTOALL, RD, BCAST_TREE, REDUCE_TREE };

/* The schedule of rank `rank` of `size` for an out-of-place all-to-all, recursive
 * doubling allreduce, tree broadcast or tree reduce (root 0) of count int8 elements
 * (per block); destroy frees it. */
static sc_status_t build(int algo, int size, int rank, size_t count, sc_coll_op_t **op)
{
    static sc_comm_t comm;
    sc_coll_op_t *o = calloc(1, sizeof(*o));
    const void *s = (const void *)SEND_BASE;
    void *r = (void *)RECV_BASE;
    sc_status_t st;

    if (!o)
        return SC_ERR_NO_MEMORY;
    comm.size = size;
    comm.rank = rank;
    o->comm = &comm;
    o->dtype = SC_INT8;
    o->redop = SC_SUM;
    switch (algo) {
    case RD: st = sc_algo_allreduce_rd(o, s, r, count); break;
    case BCAST_TREE: st = sc_algo_broadcast_tree(o, s, r, count, 0); break;
    case REDUCE_TREE: st = sc_algo_reduce_tree(o, s, r, count, 0); break;
    default: st = sc_algo_alltoall_pairwise(o, s, r, count); break;
    }
    *op = o;
    return st;
}

static void destroy(sc_coll_op_t *op)
{
    free(op->acts);
    free(op->scratch);
    free(op);
}

/* The messages of kind to or from peer: in order, each at most chunk bytes (all but the
 * last exactly chunk), sub-indices 0, 1, ..., covering [start, start + bytes); nmsg:
 * how many there are. 0 when they do. */
static int check_msgs(const sc_coll_op_t *op, sc_action_kind_t kind, int peer, uintptr_t start,
                      size_t bytes, size_t chunk, size_t nmsg)
{
    uintptr_t at = start;
    size_t seen = 0;

    for (int i = 0; i < op->nacts; i++) {
        const sc_action_t *a = &op->acts[i];
        uintptr_t addr = (uintptr_t)(kind == SC_ACT_SEND ? a->src : a->dst);
        if (a->kind != kind || a->peer != peer)
            continue;
        CHECK(a->sub == (uint16_t)seen, "message %zu to/from %d has sub %u", seen, peer,
              (unsigned)a->sub);
        CHECK(addr == at, "message %zu to/from %d at offset %#llx, expected %#llx", seen,
              peer, (unsigned long long)(addr - start), (unsigned long long)(at - start));
        CHECK(a->len <= chunk, "message %zu to/from %d of %zu bytes, more than %zu", seen,
              peer, a->len, chunk);
        CHECK(a->len == chunk || at + a->len == start + bytes,
              "message %zu to/from %d of %zu bytes before the end", seen, peer, a->len);
        at += a->len;
        seen++;
    }
    CHECK(seen == nmsg, "%zu messages to/from %d, expected %zu", seen, peer, nmsg);
    CHECK(at == start + bytes, "the messages to/from %d end at offset %#llx of %#llx", peer,
          (unsigned long long)(at - start), (unsigned long long)bytes);
    return 0;
}

/* Every peer's block of rank `rank` of `size` as check_msgs, sent and received. */
static int check_alltoall(int size, int rank, size_t count, size_t chunk, size_t nmsg)
{
    sc_coll_op_t *op = NULL;
    int bad = 0;

    CHECK_OK(build(ALLTOALL, size, rank, count, &op));
    for (int q = 0; q < size && !bad; q++)
        if (q != rank)
            bad = check_msgs(op, SC_ACT_SEND, q, SEND_BASE + (uintptr_t)q * count, count,
                             chunk, nmsg) ||
                  check_msgs(op, SC_ACT_RECV, q, RECV_BASE + (uintptr_t)q * count, count,
                             chunk, nmsg);
    destroy(op);
    return bad;
}

/* A transfer a schedule must hold: its kind, its peer, and where it starts: sbuf
 * (FROM_SEND), rbuf (FROM_RECV) or slot k of the op's scratch (k * count on). */
#define FROM_SEND (-1)
#define FROM_RECV (-2)
typedef struct {
    sc_action_kind_t kind;
    int peer;
    int at;
} xfer_t;

/* The schedule of rank `rank` of `size` for algo on count int8 elements holds each of
 * x[0..nx) as check_msgs, in chunks of CHUNK. */
static int check_xfers(int algo, int size, int rank, size_t count, const xfer_t *x, size_t nx)
{
    size_t n = (count + CHUNK - 1) / CHUNK;
    sc_coll_op_t *op = NULL;
    int bad = 0;

    CHECK_OK(build(algo, size, rank, count, &op));
    for (size_t i = 0; i < nx && !bad; i++) {
        uintptr_t start = (uintptr_t)op->scratch + (uintptr_t)x[i].at * count;
        if (x[i].at < 0)
            start = x[i].at == FROM_SEND ? SEND_BASE : RECV_BASE;
        bad = check_msgs(op, x[i].kind, x[i].peer, start, count, CHUNK, n);
    }
    destroy(op);
    return bad;
}

/* 2 GiB + 4097 bytes per block: one message of all of it was silent until the whole
 * block had arrived, and SC_TIMEOUT failed the op while its bytes moved (2 s over TCP). */
static int test_alltoall_block_past_2_gib_goes_in_chunks_of_sc_chunk_bytes(void)
{
    size_t count = ((size_t)1 << 31) + 4097;

    return check_alltoall(3, 1, count, CHUNK, (count + CHUNK - 1) / CHUNK);
}

/* Past 4 GiB, on 2 ranks (the peer is both the one sent to and received from). */
static int test_alltoall_block_past_4_gib_on_2_ranks_goes_in_chunks(void)
{
    size_t count = ((size_t)1 << 32) + 1;

    return check_alltoall(2, 0, count, CHUNK, (count + CHUNK - 1) / CHUNK);
}

/* 16 GiB and 3 bytes would be 65537 chunks: they grow to 262145 bytes, 65536 of them, so
 * that the sub-indices do not repeat within a block. */
static int test_alltoall_chunks_grow_where_a_block_needs_more_than_65536(void)
{
    size_t count = ((size_t)1 << 34) + 3;

    return check_alltoall(3, 2, count, CHUNK + 1, 65536);
}

/* A block of one chunk or less is one message; an empty block one empty message. */
static int test_alltoall_small_and_empty_blocks_are_one_message(void)
{
    return check_alltoall(3, 0, CHUNK, CHUNK, 1) || check_alltoall(3, 0, 1000, CHUNK, 1) ||
           check_alltoall(3, 0, 0, CHUNK, 1);
}

/* Recursive doubling (SC_ALGO=rd, or a raised SC_RING_THRESHOLD) sent each exchange as
 * one message, silent until all of it had arrived: 2 GiB over TCP with SC_TIMEOUT=2
 * timed out while its bytes moved. Rank 2 of 3 folds into rank 0: its whole input
 * goes to rank 0 and the result comes back, in chunks, every send before the first
 * receive (that receive completes only at rank 0's end, and sends behind it would stay
 * out of the engine's window of 64 actions). No scratch there: a buffer past 2 GiB. */
static int test_rd_folded_rank_sends_then_receives_in_chunks(void)
{
    size_t count = ((size_t)1 << 31) + 4097, n = (count + CHUNK - 1) / CHUNK;
    sc_coll_op_t *op = NULL;
    int bad, first_recv = -1, last_send = -1;

    CHECK_OK(build(RD, 3, 2, count, &op));
    bad = check_msgs(op, SC_ACT_SEND, 0, SEND_BASE, count, CHUNK, n) ||
          check_msgs(op, SC_ACT_RECV, 0, RECV_BASE, count, CHUNK, n);
    for (int i = 0; i < op->nacts; i++) {
        if (op->acts[i].kind == SC_ACT_SEND)
            last_send = i;
        if (op->acts[i].kind == SC_ACT_RECV && first_recv < 0)
            first_recv = i;
    }
    destroy(op);
    if (bad)
        return 1;
    CHECK(last_send < first_recv, "a send (action %d) after the first receive (%d)",
          last_send, first_recv);
    return 0;
}

/* Rank 0 of 3: the fold from rank 2 into scratch slot 0, the exchange with rank 1 from
 * the result into slot 1, the result back to rank 2; rank 1: the exchange alone. 8 MiB
 * + 5 bytes (33 chunks) and 1 MiB + 3 (5). */
static int test_rd_exchanges_go_in_chunks(void)
{
    static const size_t counts[] = {((size_t)8 << 20) + 5, ((size_t)1 << 20) + 3};
    static const xfer_t rank0[] = {{SC_ACT_RECV, 2, 0},
                                   {SC_ACT_SEND, 1, FROM_RECV},
                                   {SC_ACT_RECV, 1, 1},
                                   {SC_ACT_SEND, 2, FROM_RECV}};
    static const xfer_t rank1[] = {{SC_ACT_SEND, 0, FROM_RECV}, {SC_ACT_RECV, 0, 1}};

    for (size_t i = 0; i < NELEM(counts); i++)
        if (check_xfers(RD, 3, 0, counts[i], rank0, NELEM(rank0)) ||
            check_xfers(RD, 3, 1, counts[i], rank1, NELEM(rank1)))
            return 1;
    return 0;
}

/* The binomial tree (a raised SC_RING_THRESHOLD) sent the whole buffer down (broadcast)
 * or up (reduce) each edge as one message. Rank 1 of 3, a leaf: the broadcast's receives
 * from the root into rbuf at 2 GiB + 4097 bytes (no scratch), the reduce's sends of its
 * accumulator (the scratch's slot 2, after two levels of receive slots) to the root at
 * 8 MiB + 5. */
static int test_tree_leaf_messages_go_in_chunks(void)
{
    static const xfer_t bcast[] = {{SC_ACT_RECV, 0, FROM_RECV}};
    static const xfer_t reduce[] = {{SC_ACT_SEND, 0, 2}};

    return check_xfers(BCAST_TREE, 3, 1, ((size_t)1 << 31) + 4097, bcast, NELEM(bcast)) ||
           check_xfers(REDUCE_TREE, 3, 1, ((size_t)8 << 20) + 5, reduce, NELEM(reduce));
}

/* The root of 3 at 8 MiB + 5 bytes: the broadcast sends sbuf to ranks 2 and 1, the
 * reduce receives from rank 1 into slot 0 and from rank 2 into slot 1. */
static int test_tree_root_messages_go_in_chunks(void)
{
    static const xfer_t bcast[] = {{SC_ACT_SEND, 1, FROM_SEND}, {SC_ACT_SEND, 2, FROM_SEND}};
    static const xfer_t reduce[] = {{SC_ACT_RECV, 1, 0}, {SC_ACT_RECV, 2, 1}};
    size_t count = ((size_t)8 << 20) + 5;

    return check_xfers(BCAST_TREE, 3, 0, count, bcast, NELEM(bcast)) ||
           check_xfers(REDUCE_TREE, 3, 0, count, reduce, NELEM(reduce));
}

int main(int argc, char **argv)
{
    static const sc_test_t tests[] = {
        SC_TEST(alltoall_block_past_2_gib_goes_in_chunks_of_sc_chunk_bytes),
        SC_TEST(alltoall_block_past_4_gib_on_2_ranks_goes_in_chunks),
        SC_TEST(alltoall_chunks_grow_where_a_block_needs_more_than_65536),
        SC_TEST(alltoall_small_and_empty_blocks_are_one_message),
        SC_TEST(rd_folded_rank_sends_then_receives_in_chunks),
        SC_TEST(rd_exchanges_go_in_chunks),
        SC_TEST(tree_leaf_messages_go_in_chunks),
        SC_TEST(tree_root_messages_go_in_chunks),
    };
    return sc_run_tests(tests, NELEM(tests), argc > 1 ? argv[1] : NULL);
}
