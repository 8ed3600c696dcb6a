/* Context ids are reused once all 4095 have been used (comm_ctx.c), and a reused id does
 * not inherit what its earlier holder left behind. Run through scrun with 2 or more
 * ranks:
 *  1. 4,200 splits that make no communicator (color -1 on every rank) each use up an
 *     id; every one succeeds (before reuse the 4,096th failed).
 *  2. Communicators made from reused ids at once get distinct ids, distinct from the
 *     world's, and three all-reduces in flight on them together each get their own sum.
 *  3. An abort notice left in UCX's queue by an earlier holder of an id does not break
 *     the next communicator with that id: rank 0 aborts communicator A after the other
 *     ranks destroyed theirs, so its notices arrive with nobody to receive them; splits
 *     that make no communicator then move the ids round until the next split gets A's id
 *     again, and an all-reduce on it must succeed with the right sum.
 *  4. Data an earlier holder of an id left unreceived never reaches the next holder's
 *     receives: rank 0 sends on communicator A a message rank 1 never receives (rank 1
 *     destroys A last, so that no drain of the id drops it); once A's id is reused (the
 *     reused ids' cursor moved to just before it on every rank, as the splits of 3,
 *     which went round every id, would move it), the new communicator's point-to-point
 *     sequence from rank 0 to rank 1 is moved (on both ranks alike) to where the tag's
 *     18 bits come round to the stale message's, as 2^18 messages would move it, and
 *     the messages sent there, each with its own values, must arrive as sent. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/comm_ctx.h"
#include "core/comm_internal.h"
#include "shardcomm/shardcomm.h"

static int rank_of_test = -1;
#define SC_CHECK_RANK rank_of_test
#include "../common/sc_check.h"

#define BURN 4200
#define LIVE 3

static int split_nothing(sc_comm_t *world, int times)
{
    for (int i = 0; i < times; i++) {
        sc_comm_t *none = (sc_comm_t *)world;
        CHECK_OK(sc_comm_split(world, -1, 0, &none));
        CHECK(none == NULL, "split %d with color -1 gave a communicator", i);
    }
    return 0;
}

static int sum_of_ranks_is_right(sc_comm_t *c, const char *what)
{
    int64_t mine = rank_of_test + 1, sum = 0, expect = 0;

    for (int q = 0; q < sc_comm_size(c); q++)
        expect += q + 1;
    CHECK_OK(sc_allreduce(&mine, &sum, 1, SC_INT64, SC_SUM, c, NULL, NULL));
    CHECK(sum == expect, "%s: sum %lld, expected %lld", what, (long long)sum,
          (long long)expect);
    return 0;
}

static int live_ids_stay_distinct(sc_comm_t *world)
{
    sc_comm_t *c[LIVE];
    int32_t in[LIVE][256], out[LIVE][256];
    sc_request_t *req[LIVE];
    int size = sc_comm_size(world);

    for (int k = 0; k < LIVE; k++) {
        CHECK_OK(sc_comm_split(world, 0, rank_of_test, &c[k]));
        CHECK(c[k]->gen != 0, "communicator %d: context id %u not reused (generation 0)", k,
              c[k]->ctx);
        CHECK(c[k]->ctx != world->ctx, "communicator %d has the world's id", k);
        for (int j = 0; j < k; j++)
            CHECK(c[k]->ctx != c[j]->ctx, "communicators %d and %d share context id %u", j, k,
                  c[k]->ctx);
    }
    for (int k = 0; k < LIVE; k++) {
        for (int i = 0; i < 256; i++)
            in[k][i] = (k + 1) * 100000 + i * 10 + rank_of_test;
        CHECK_OK(sc_allreduce(in[k], out[k], 256, SC_INT32, SC_SUM, c[k], NULL, &req[k]));
    }
    for (int k = LIVE - 1; k >= 0; k--) {
        CHECK_OK(sc_wait(req[k]));
        sc_request_free(req[k]);
    }
    for (int k = 0; k < LIVE; k++) {
        for (int i = 0; i < 256; i++) {
            int32_t expect = size * ((k + 1) * 100000 + i * 10) + size * (size - 1) / 2;
            CHECK(out[k][i] == expect, "communicator %d element %d: %d, expected %d", k, i,
                  (int)out[k][i], (int)expect);
        }
        CHECK_OK(sc_comm_destroy(c[k]));
    }
    return 0;
}

/* Splits that make no communicator until the next split gets id ctx again, then that
 * split (every rank of world, in rank order) into *c. */
static int split_reusing(sc_comm_t *world, uint32_t ctx, sc_comm_t **c)
{
    uint32_t cursor;
    int moves = 0;

    for (;;) {
        pthread_mutex_lock(&world->tp->lock);
        cursor = world->tp->ctx_cursor;
        pthread_mutex_unlock(&world->tp->lock);
        if ((cursor + 1) % (SC_CTX_MAX + 1) == ctx)
            break;
        CHECK(moves++ <= (int)SC_CTX_MAX, "the reused ids never came round to %u", ctx);
        CHECK(split_nothing(world, 1) == 0, "a split with color -1");
    }
    CHECK_OK(sc_comm_split(world, 0, rank_of_test, c));
    CHECK((*c)->ctx == ctx, "the split after the ids came round got id %u, not %u",
          (*c)->ctx, ctx);
    return 0;
}

/* The reused ids' cursor put just before ctx on this rank, where split_reusing's splits
 * would leave it (every rank calls it alike): a round of 4,094 splits, 30% of the test's
 * time, which stale_notice_is_ignored has made already. */
static void cursor_before(sc_comm_t *world, uint32_t ctx)
{
    pthread_mutex_lock(&world->tp->lock);
    world->tp->ctx_cursor = (ctx + SC_CTX_MAX) % (SC_CTX_MAX + 1);
    pthread_mutex_unlock(&world->tp->lock);
}

static int stale_data_is_dropped(sc_comm_t *world)
{
    enum { N = 16 };
    sc_comm_t *a = NULL, *b = NULL;
    int32_t msg[N], got[N], one = 1;
    uint32_t a_ctx, a_seq;
    uint64_t next;
    sc_request_t *req = NULL;

    CHECK_OK(sc_comm_split(world, 0, rank_of_test, &a));
    a_ctx = a->ctx;
    a_seq = (uint32_t)a->send_seq[1]; /* rank 0's first send to rank 1, on every rank */
    if (rank_of_test == 0) {
        for (int i = 0; i < N; i++)
            msg[i] = -1 - i; /* the stale values */
        CHECK_OK(sc_send(msg, N, SC_INT32, 1, a, NULL, &req));
        CHECK_OK(sc_wait(req)); /* handed over: small sends complete unreceived */
        sc_request_free(req);
    }
    CHECK_OK(sc_barrier(world, NULL)); /* rank 0's message is at rank 1 */
    /* Rank 1 destroys A last, once every peer's notice that it did is there (each peer's
     * message on the world follows its notice to rank 1): a rank that destroys a
     * communicator some peer still holds drains the id's messages for 10 s
     * (progress_gone.c), which dropped the stale message by itself whenever rank 1 was
     * not last (nearly always on 3 ranks), so that the purge went untested. */
    if (rank_of_test != 1) {
        CHECK_OK(sc_comm_destroy(a));
        CHECK_OK(sc_send(&one, 1, SC_INT32, 1, world, NULL, NULL));
    } else {
        for (int r = 0; r < sc_comm_size(world); r++)
            if (r != 1)
                CHECK_OK(sc_recv(&one, 1, SC_INT32, r, world, NULL, NULL));
        CHECK_OK(sc_comm_destroy(a));
    }
    CHECK_OK(sc_barrier(world, NULL));
    cursor_before(world, a_ctx);
    if (split_reusing(world, a_ctx, &b))
        return 1;
    /* The second message below has the stale message's tag: its sequence number 2^18
     * further on (so a header that still arrived would fail as a mismatch). */
    next = (uint64_t)a_seq + 0x40000u - 1u;
    if (rank_of_test == 0)
        b->send_seq[1] = next;
    else if (rank_of_test == 1)
        b->recv_seq[0] = next;
    for (uint32_t k = 0; k < 3; k++) {
        if (rank_of_test == 0) {
            for (int i = 0; i < N; i++)
                msg[i] = (int32_t)(k * N + (uint32_t)i);
            CHECK_OK(sc_send(msg, N, SC_INT32, 1, b, NULL, NULL));
        } else if (rank_of_test == 1) {
            CHECK_OK(sc_recv(got, N, SC_INT32, 0, b, NULL, NULL));
            for (int i = 0; i < N; i++)
                CHECK(got[i] == (int32_t)(k * N + (uint32_t)i), "message %u on the "
                      "communicator that reused id %u: element %d is %d, expected %d (a "
                      "stale message of the id's earlier holder)", k, a_ctx, i, got[i],
                      (int32_t)(k * N + (uint32_t)i));
        }
    }
    CHECK_OK(sc_barrier(b, NULL));
    CHECK_OK(sc_comm_destroy(b));
    return 0;
}

static int stale_notice_is_ignored(sc_comm_t *world)
{
    sc_comm_t *a = NULL, *b = NULL;
    uint32_t a_ctx, a_gen;

    CHECK_OK(sc_comm_split(world, 0, rank_of_test, &a));
    a_ctx = a->ctx;
    a_gen = a->gen;
    CHECK(sum_of_ranks_is_right(a, "communicator A") == 0, "the sum on A");
    if (rank_of_test != 0)
        CHECK_OK(sc_comm_destroy(a));
    CHECK_OK(sc_barrier(world, NULL));
    if (rank_of_test == 0) {
        CHECK_OK(sc_comm_abort(a)); /* notices to ranks that no longer listen */
        CHECK_OK(sc_comm_destroy(a));
    }
    /* Rank 0's messages to each rank arrive in order: after the barrier the notices are
     * there. */
    CHECK_OK(sc_barrier(world, NULL));
    if (split_reusing(world, a_ctx, &b))
        return 1;
    CHECK(b->gen != a_gen, "id %u reused with the same generation %u", b->ctx, b->gen);
    CHECK(sum_of_ranks_is_right(b, "the communicator that reused A's id") == 0,
          "the sum on the communicator with A's id");
    CHECK_OK(sc_barrier(b, NULL));
    CHECK_OK(sc_comm_destroy(b));
    return 0;
}

int main(void)
{
    sc_comm_t *world;

    CHECK_OK(sc_comm_init_from_env(&world));
    rank_of_test = sc_comm_rank(world);
    CHECK(sc_comm_size(world) >= 2, "run with 2 or more ranks");
    if (split_nothing(world, BURN) || sum_of_ranks_is_right(world, "world") ||
        live_ids_stay_distinct(world) || stale_notice_is_ignored(world) ||
        stale_data_is_dropped(world))
        return 1;
    printf("rank %d: %d splits past the 4095 context ids, live ids distinct, a stale abort "
           "notice ignored, stale data dropped\n", rank_of_test, BURN);
    CHECK_OK(sc_comm_destroy(world));
    return 0;
}
