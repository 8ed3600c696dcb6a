/* The eager-or-rendezvous choice (proto_choice.h) on a communicator whose ranks also
 * run collectives of the same size class on different splits: every rank of it takes
 * the same protocol on each op (one end eager and the other not ran at 0.55-0.6x).
 * 3 ranks: ranks 0 and 1 run SPLIT_OPS all-gathers of one class on their split, rank 2
 * none (a split of its own, one rank); then WORLD_OPS all-gathers of that class on the
 * world, each rank noting which protocol it took on each (the sample it recorded,
 * tp->proto.cls[].samples), and the notes are compared across the ranks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm_internal.h"

static int g_rank;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

#define N 16384 /* 64 KiB of float32 per rank: 32-64 KiB messages, an eager class */
#define SPLIT_OPS 5
#define WORLD_OPS 48

int main(void)
{
    float *x = calloc((size_t)3 * N, sizeof(float));
    uint8_t took[WORLD_OPS], all[3 * WORLD_OPS];
    sc_comm_t *c, *split;
    int cls = sc_proto_class_of((size_t)N * sizeof(float));

    CHECK(x != NULL, "out of memory");
    CHECK(cls >= 0, "%d bytes are in no class", N * (int)sizeof(float));
    CHECK_OK(sc_comm_init_from_env(&c));
    g_rank = sc_comm_rank(c);
    CHECK(sc_comm_size(c) == 3 && c->local_size == 3, "run with 3 ranks on one node");
    CHECK_OK(sc_comm_split(c, g_rank == 2, g_rank, &split));
    for (int i = 0; g_rank < 2 && i < SPLIT_OPS; i++)
        CHECK_OK(sc_allgather(x, x + N, N, SC_FLOAT32, split, NULL, NULL));
    for (int i = 0; i < WORLD_OPS; i++) {
        uint32_t eager_before = c->tp->proto.cls[cls].samples[1];
        CHECK_OK(sc_allgather(x + (size_t)g_rank * N, x, N, SC_FLOAT32, c, NULL, NULL));
        took[i] = (uint8_t)(c->tp->proto.cls[cls].samples[1] != eager_before);
    }
    CHECK_OK(sc_allgather(took, all, WORLD_OPS, SC_UINT8, c, NULL, NULL));
    for (int i = 0; i < WORLD_OPS; i++)
        CHECK(all[i] == all[WORLD_OPS + i] && all[i] == all[2 * WORLD_OPS + i],
              "world all-gather %d went %s on rank 0, %s on rank 1, %s on rank 2", i,
              all[i] ? "eagerly" : "by rendezvous",
              all[WORLD_OPS + i] ? "eagerly" : "by rendezvous",
              all[2 * WORLD_OPS + i] ? "eagerly" : "by rendezvous");
    CHECK_OK(sc_comm_destroy(split));
    CHECK_OK(sc_comm_destroy(c));
    free(x);
    return 0;
}
