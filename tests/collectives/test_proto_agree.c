/* The agreement on eager sends (comm->proto_agreed, proto_choice.h) on 2 ranks, with
 * eager preferred everywhere (SC_EAGER_SENDS=on): a collective leaves every class agreed
 * on both ranks, and point-to-point messages, which carry no preferences, leave the
 * agreement as it was on both ranks (a receive set it to none on the receiver alone,
 * so that the next collective sent eagerly one way and by rendezvous the other). */
#include <stdint.h>
#include <stdlib.h>

#include "core/comm_internal.h"

static int g_rank;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

#define ALL_CLASSES ((1u << SC_PROTO_CLASSES) - 1)

int main(void)
{
    enum { N = 16384 }; /* 64 KiB of float32: 32 KiB blocks, an eager class */
    float *x = calloc(2 * N, sizeof(float));
    int32_t v = 7;
    sc_comm_t *c;

    CHECK(x != NULL, "out of memory");
    CHECK_OK(sc_comm_init_from_env(&c));
    g_rank = sc_comm_rank(c);
    CHECK(sc_comm_size(c) == 2, "run with 2 ranks");
    CHECK_OK(sc_allgather(x, x + N, N / 2, SC_FLOAT32, c, NULL, NULL));
    CHECK(c->proto_agreed == ALL_CLASSES, "after an all-gather: 0x%x",
          (unsigned)c->proto_agreed);
    if (g_rank == 0)
        CHECK_OK(sc_send(&v, 1, SC_INT32, 1, c, NULL, NULL));
    else
        CHECK_OK(sc_recv(&v, 1, SC_INT32, 0, c, NULL, NULL));
    CHECK(c->proto_agreed == ALL_CLASSES, "after a %s: 0x%x", g_rank ? "receive" : "send",
          (unsigned)c->proto_agreed);
    CHECK_OK(sc_allgather(x, x + N, N / 2, SC_FLOAT32, c, NULL, NULL));
    CHECK_OK(sc_comm_destroy(c));
    free(x);
    return 0;
}
