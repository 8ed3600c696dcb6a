/* Shared memory mapped ahead of use (collectives/shm_prefault.h), counted in page
 * faults (getrusage's minor faults, every thread of the process):
 *   small       100 allreduces each of 1, 2 and 4 KiB on plain memory right after
 *               sc_comm_init: the messages go through UCX's shared-memory transport,
 *               whose descriptors (ours and the peers') are mapped at init. Without
 *               it this took 100-200 faults on 2 ranks, one per descriptor used first.
 *   registered  the first allreduce of 8 MiB on buffers from sc_mem_alloc, which reads
 *               the peers' copies in place: mapped by sc_mem_alloc, not fault by fault
 *               (2,000 or more without it).
 * The budgets leave room for the heap and UCX's request pools growing. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static int g_rank;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

#define SMALL_FAULTS_MAX 24
#define REGISTERED_BYTES (8u << 20)
#define REGISTERED_FAULTS_MAX 64

static long minor_faults(void)
{
    struct rusage u;

    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

static int small(sc_comm_t *world)
{
    static float buf[1024];
    long before, faults;

    memset(buf, 0, sizeof(buf));
    before = minor_faults();
    for (size_t bytes = 1024; bytes <= 4096; bytes *= 2)
        for (int i = 0; i < 100; i++)
            CHECK_OK(sc_allreduce(buf, buf, bytes / sizeof(float), SC_FLOAT32, SC_SUM, world,
                                  NULL, NULL));
    faults = minor_faults() - before;
    CHECK(faults <= SMALL_FAULTS_MAX, "300 allreduces of 1-4 KiB took %ld page faults "
          "(at most %d expected)", faults, SMALL_FAULTS_MAX);
    printf("small allreduces: %ld page faults (rank %d)\n", faults, g_rank);
    return 0;
}

static int registered(sc_comm_t *world)
{
    size_t count = REGISTERED_BYTES / sizeof(float);
    float *in = NULL, *out = NULL;
    long before, faults;
    int shared = 0;

    CHECK_OK(sc_mem_alloc(world, REGISTERED_BYTES, (void **)&in));
    CHECK_OK(sc_mem_alloc(world, REGISTERED_BYTES, (void **)&out));
    CHECK_OK(sc_mem_is_shared(world, in, &shared));
    CHECK(shared || sc_comm_size(world) == 1 || getenv("UCX_TLS"), "registered memory is "
          "not shared on one node with UCX's default transports");
    for (size_t i = 0; i < count; i++)
        in[i] = (float)(g_rank + 1);
    memset(out, 0, REGISTERED_BYTES);
    CHECK_OK(sc_barrier(world, NULL));
    before = minor_faults();
    CHECK_OK(sc_allreduce(in, out, count, SC_FLOAT32, SC_SUM, world, NULL, NULL));
    faults = minor_faults() - before;
    {
        int n = sc_comm_size(world);
        float want = (float)(n * (n + 1) / 2);
        CHECK(out[0] == want && out[count - 1] == want, "sum %g and %g, expected %g",
              (double)out[0], (double)out[count - 1], (double)want);
    }
    /* Registered memory that serves as plain memory (one rank, or UCX_TLS without a
     * shared-memory transport) maps nothing ahead: its faults are the transfer's. */
    if (!shared)
        printf("registered memory is plain memory here (UCX_TLS=%s): page faults not "
               "counted (%ld)\n", getenv("UCX_TLS") ? getenv("UCX_TLS") : "", faults);
    CHECK(!shared || faults <= REGISTERED_FAULTS_MAX, "the first allreduce of 8 MiB on registered "
          "memory took %ld page faults (at most %d expected)", faults, REGISTERED_FAULTS_MAX);
    printf("first registered allreduce: %ld page faults (rank %d)\n", faults, g_rank);
    CHECK_OK(sc_barrier(world, NULL));
    CHECK_OK(sc_mem_free(world, in));
    CHECK_OK(sc_mem_free(world, out));
    return 0;
}

int main(int argc, char **argv)
{
    sc_comm_t *world;
    int failed;

    if (argc != 2 || (strcmp(argv[1], "small") != 0 && strcmp(argv[1], "registered") != 0)) {
        fprintf(stderr, "usage: test_prefault small|registered\n");
        return 2;
    }
    if (sc_comm_init_from_env(&world) != SC_SUCCESS) {
        fprintf(stderr, "sc_comm_init_from_env: %s\n", sc_last_error());
        return 1;
    }
    g_rank = sc_comm_rank(world);
    failed = strcmp(argv[1], "small") == 0 ? small(world) : registered(world);
    printf("%s: prefault %s (rank %d)\n", failed ? "FAIL" : "PASS", argv[1], g_rank);
    sc_comm_destroy(world);
    return failed;
}
