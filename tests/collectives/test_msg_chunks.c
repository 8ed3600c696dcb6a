/* The messages of the algorithms that move whole buffers between two ranks, built on a
 * stand-in communicator and never run: the pairwise all-to-all's blocks (algo_alltoall.c)
 * travel in chunks of at most SC_CHUNK_BYTES (grown only where a transfer would need more
 * than 65536, the tag's sub-indices), in order, each with its own sub-index. The buffers
 * are made-up addresses: blocks past 4 GiB cost no memory. `test_msg_chunks [NAME]`. */
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

/* The schedule of rank `rank` of `size` for an out-of-place all-to-all of count int8
 * elements per block; destroy frees it. */
static sc_status_t build_alltoall(int size, int rank, size_t count, sc_coll_op_t **op)
{
    static sc_comm_t comm;
    sc_coll_op_t *o = calloc(1, sizeof(*o));
    sc_status_t st;

    if (!o)
        return SC_ERR_NO_MEMORY;
    comm.size = size;
    comm.rank = rank;
    o->comm = &comm;
    o->dtype = SC_INT8;
    st = sc_algo_alltoall_pairwise(o, (const void *)SEND_BASE, (void *)RECV_BASE, count);
    *op = o;
    return st;
}

static void destroy(sc_coll_op_t *op)
{
    free(op->acts);
    free(op->scratch);
    free(op);
}

/* The messages of kind to or from peer: in order, each at most max bytes (and all but
 * the last exactly chunk), sub-indices 0, 1, ..., covering [base + peer * bytes,
 * base + (peer + 1) * bytes); nmsg: how many there are. 0 when they do. */
static int check_block(const sc_coll_op_t *op, sc_action_kind_t kind, int peer, size_t bytes,
                       size_t chunk, uintptr_t base, size_t nmsg)
{
    uintptr_t at = base + (uintptr_t)peer * bytes;
    size_t seen = 0;

    for (int i = 0; i < op->nacts; i++) {
        const sc_action_t *a = &op->acts[i];
        uintptr_t addr = (uintptr_t)(kind == SC_ACT_SEND ? a->src : a->dst);
        if (a->kind != kind || a->peer != peer)
            continue;
        CHECK(a->sub == (uint16_t)seen, "message %zu to/from %d has sub %u", seen, peer,
              (unsigned)a->sub);
        CHECK(addr == at, "message %zu to/from %d at offset %#llx, expected %#llx", seen,
              peer, (unsigned long long)(addr - base), (unsigned long long)(at - base));
        CHECK(a->len <= chunk, "message %zu to/from %d of %zu bytes, more than %zu", seen,
              peer, a->len, chunk);
        CHECK(a->len == chunk || at + a->len == base + (uintptr_t)(peer + 1) * bytes,
              "message %zu to/from %d of %zu bytes before the block's end", seen, peer,
              a->len);
        at += a->len;
        seen++;
    }
    CHECK(seen == nmsg, "%zu messages to/from %d, expected %zu", seen, peer, nmsg);
    CHECK(at == base + (uintptr_t)(peer + 1) * bytes, "the messages to/from %d end at %#llx "
          "of the block ending at %#llx", peer, (unsigned long long)(at - base),
          (unsigned long long)((uintptr_t)(peer + 1) * bytes));
    return 0;
}

/* Every peer's block of rank `rank` of `size` as check_block, sent and received. */
static int check_alltoall(int size, int rank, size_t count, size_t chunk, size_t nmsg)
{
    sc_coll_op_t *op = NULL;
    int bad = 0;

    CHECK_OK(build_alltoall(size, rank, count, &op));
    for (int q = 0; q < size && !bad; q++)
        if (q != rank)
            bad = check_block(op, SC_ACT_SEND, q, count, chunk, SEND_BASE, nmsg) ||
                  check_block(op, SC_ACT_RECV, q, count, chunk, RECV_BASE, nmsg);
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

int main(int argc, char **argv)
{
    static const sc_test_t tests[] = {
        SC_TEST(alltoall_block_past_2_gib_goes_in_chunks_of_sc_chunk_bytes),
        SC_TEST(alltoall_block_past_4_gib_on_2_ranks_goes_in_chunks),
        SC_TEST(alltoall_chunks_grow_where_a_block_needs_more_than_65536),
        SC_TEST(alltoall_small_and_empty_blocks_are_one_message),
    };
    return sc_run_tests(tests, NELEM(tests), argc > 1 ? argv[1] : NULL);
}
