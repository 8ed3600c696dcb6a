/* The header mailboxes' slots (collectives/mailbox.h) driven by hand on 2 ranks: on a
 * communicator split off the world (which opens its own mailboxes and then runs no
 * collective of its own), rank 0 writes messages for collectives 0.. into rank 1's
 * inbox and rank 1 reads them, with world barriers in between. A writer may run 16
 * messages ahead of the reader and no further: the 17th waits for the reader to read
 * the message in its slot; messages are read in any order and come out as written,
 * and one that was not written is not there. Without the mailboxes (SC_LOCAL_MAILBOX=0)
 * the test checks that none were opened. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/mailbox.h"
#include "core/comm_internal.h"

static int g_rank;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

#define SLOTS 16

/* Message seq's bytes: its number and a pattern, len bytes. */
static size_t message(uint64_t seq, uint8_t *buf)
{
    size_t len = 8 + (size_t)(seq * 37 % 200);

    memcpy(buf, &seq, sizeof(seq));
    for (size_t i = 8; i < len; i++)
        buf[i] = (uint8_t)(seq * 31 + i);
    return len;
}

static int put(sc_comm_t *sub, uint64_t seq, int want)
{
    uint8_t buf[256];
    size_t len = message(seq, buf);
    int got = sc_mbox_put(sub, 1, seq, buf, len);

    CHECK(got == want, "writing message %llu returned %d, expected %d",
          (unsigned long long)seq, got, want);
    return 0;
}

static int get(sc_comm_t *sub, uint64_t seq, int want)
{
    uint8_t buf[1024], expect[256];
    size_t len = 0, elen = message(seq, expect);
    int got = sc_mbox_get(sub, 0, seq, buf, sizeof(buf), &len);

    CHECK(got == want, "reading message %llu returned %d, expected %d",
          (unsigned long long)seq, got, want);
    if (got)
        CHECK(len == elen && memcmp(buf, expect, len) == 0,
              "message %llu came out as %zu bytes unlike the %zu written",
              (unsigned long long)seq, len, elen);
    return 0;
}

static int run(sc_comm_t *world)
{
    const char *env = getenv("SC_LOCAL_MAILBOX");
    int off = env && strcmp(env, "0") == 0, shared = 0;
    sc_comm_t *sub;
    void *probe;

    CHECK(sc_comm_size(world) == 2, "runs with 2 ranks");
    /* Mailboxes are shared memory mapped as sc_mem_alloc's is: none where UCX_TLS
     * leaves no shared-memory transport (with UCX's defaults, there must be some). */
    CHECK_OK(sc_mem_alloc(world, 4096, &probe));
    CHECK_OK(sc_mem_is_shared(world, probe, &shared));
    CHECK_OK(sc_mem_free(world, probe));
    CHECK(shared || getenv("UCX_TLS"), "no shared memory on one node with UCX's defaults");
    if (!shared)
        printf("no shared memory here (UCX_TLS=%s): no mailboxes\n", getenv("UCX_TLS"));
    off = off || !shared;
    CHECK_OK(sc_comm_split(world, 0, g_rank, &sub));
    CHECK((world->mbox != NULL) == !off && (sub->mbox != NULL) == !off,
          "mailboxes world %p, split %p with SC_LOCAL_MAILBOX=%s", (void *)world->mbox,
          (void *)sub->mbox, env ? env : "(unset)");
    if (off)
        return sc_comm_destroy(sub) != SC_SUCCESS;
    /* Rank 0 fills every slot; the 17th message finds message 0 unread in its slot. */
    if (g_rank == 0) {
        for (uint64_t s = 0; s < SLOTS; s++)
            if (put(sub, s, 1))
                return 1;
        if (put(sub, SLOTS, 0))
            return 1;
    }
    CHECK_OK(sc_barrier(world, NULL));
    /* Rank 1 reads out of order; message 16 was not written. */
    if (g_rank == 1 && (get(sub, 1, 1) || get(sub, SLOTS, 0) || get(sub, 0, 1) ||
                        get(sub, 1 + SLOTS, 0)))
        return 1;
    CHECK_OK(sc_barrier(world, NULL));
    /* Slots 0 and 1 are free again, slot 2 is not. */
    if (g_rank == 0 && (put(sub, SLOTS, 1) || put(sub, SLOTS + 1, 1) || put(sub, SLOTS + 2, 0)))
        return 1;
    CHECK_OK(sc_barrier(world, NULL));
    if (g_rank == 1) {
        for (uint64_t s = 2; s < SLOTS + 2; s++)
            if (get(sub, s, 1))
                return 1;
        if (get(sub, SLOTS + 2, 0))
            return 1;
    }
    CHECK_OK(sc_barrier(world, NULL));
    CHECK_OK(sc_comm_destroy(sub));
    return 0;
}

int main(void)
{
    sc_comm_t *world;
    int failed;

    if (sc_comm_init_from_env(&world) != SC_SUCCESS) {
        fprintf(stderr, "sc_comm_init_from_env: %s\n", sc_last_error());
        return 1;
    }
    g_rank = sc_comm_rank(world);
    failed = run(world);
    printf("%s: mailbox slots (rank %d)\n", failed ? "FAIL" : "PASS", g_rank);
    sc_comm_destroy(world);
    return failed;
}
