/* One rank per node, two nodes joined by a shaped veth pair (netfault_test.sh), with
 * transfers in flight on the link when something fails (argv[1]):
 *   abort     a 64 MiB allreduce; rank 0 calls sc_comm_abort 1 s into it: both ranks'
 *             requests fail with SC_ERR_ABORTED, and sc_comm_destroy succeeds
 *   linkdown  the same allreduce; the script takes the link down 1 s into it: both
 *             ranks fail with SC_ERR_TIMEOUT (SC_TIMEOUT is short) and sc_comm_destroy
 *             succeeds
 *   reducer   a reducer's iteration of one 16 MiB bucket; rank 0 destroys its reducer
 *             0.4 s into it (which aborts the communicator): rank 1's finalize fails
 *             with SC_ERR_ABORTED, it destroys its reducer and maps 16 MiB of new memory
 *             filled with a pattern; 2 s later the pattern is intact (what rank 0 still
 *             sends must land in the bucket rank 1's reducer kept, not in freed memory;
 *             the new mapping is not always where the bucket was, so this part catches
 *             a late write only when the kernel reuses that hole)
 * Either way a later call fails at once. Rendezvous transfers left in flight on the
 * link used to abort the process in sc_comm_destroy (a UCX assertion) or let UCX write
 * into freed memory; now the failed operations keep their memory (and the reducer its
 * buckets) until the worker is destroyed. Exit 0 on pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "shardcomm/shardcomm.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define FAIL(...)                                                                        \
    do {                                                                                 \
        fprintf(stderr, "FAIL: " __VA_ARGS__);                                           \
        fprintf(stderr, "\n");                                                           \
        return 1;                                                                        \
    } while (0)

#define NF_GRADS 1
#define NF_GRAD_COUNT ((size_t)4 << 20)

/* The "reducer" fault (see the top). */
static int run_reducer(sc_comm_t *comm, int rank)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_grad_desc_t desc[NF_GRADS];
    float *grad[NF_GRADS];
    sc_reducer_t *r;
    sc_status_t st = SC_SUCCESS;

    for (int g = 0; g < NF_GRADS; g++) {
        grad[g] = calloc(NF_GRAD_COUNT, sizeof(float));
        if (!grad[g])
            FAIL("out of memory");
        desc[g] = (sc_grad_desc_t){.count = NF_GRAD_COUNT, .dtype = SC_FLOAT32};
    }
    cfg.bucket_cap_bytes = NF_GRAD_COUNT * sizeof(float);
    cfg.first_bucket_bytes = NF_GRAD_COUNT * sizeof(float);
    if (sc_reducer_create(comm, desc, NF_GRADS, &cfg, &r) != SC_SUCCESS)
        FAIL("rank %d: reducer: %s", rank, sc_last_error());
    for (int g = NF_GRADS - 1; g >= 0 && st == SC_SUCCESS; g--)
        st = sc_reducer_mark_ready(r, g, grad[g]);
    if (st != SC_SUCCESS)
        FAIL("rank %d: mark_ready: %s", rank, sc_last_error());
    if (rank == 0) {
        usleep(400 * 1000); /* within the bucket's transfers, which take ~0.7 s */
        if (sc_reducer_destroy(r) != SC_SUCCESS)
            FAIL("rank 0: destroy mid-iteration: %s", sc_last_error());
        usleep(2500 * 1000); /* what it sent keeps going while rank 1 checks */
    } else {
        size_t n = NF_GRADS * NF_GRAD_COUNT;
        unsigned char *fresh;

        st = sc_reducer_finalize(r);
        if (st != SC_ERR_ABORTED)
            FAIL("rank 1: finalize returned %s, not SC_ERR_ABORTED: %s",
                 sc_status_string(st), sc_last_error());
        sc_reducer_destroy(r);
        /* A mapping of the freed bucket's size: the kernel places it in the hole the
         * bucket's own mapping left, where a late transfer would write. */
        fresh = mmap(NULL, n * sizeof(float) + 4096, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (fresh == MAP_FAILED)
            FAIL("out of memory");
        memset(fresh, 0x5a, n * sizeof(float));
        usleep(2000 * 1000);
        for (size_t i = 0; i < n * sizeof(float); i++)
            if (fresh[i] != 0x5a)
                FAIL("rank 1: byte %zu of memory allocated after the reducer's destroy "
                     "changed to 0x%02x: a transfer of the failed iteration wrote into "
                     "freed buckets", i, fresh[i]);
        munmap(fresh, n * sizeof(float) + 4096);
        printf("rank 1: the iteration failed as it should, nothing landed in freed memory\n");
    }
    if (sc_barrier(comm, NULL) == SC_SUCCESS)
        FAIL("rank %d: a later barrier succeeded", rank);
    if (sc_comm_destroy(comm) != SC_SUCCESS)
        FAIL("rank %d: destroy: %s", rank, sc_last_error());
    for (int g = 0; g < NF_GRADS; g++)
        free(grad[g]);
    printf("PASS: reducer (rank %d)\n", rank);
    return 0;
}

int main(int argc, char **argv)
{
    const size_t n = (size_t)16 << 20;
    int abort_mode = argc > 1 && strcmp(argv[1], "abort") == 0;
    sc_status_t want = abort_mode ? SC_ERR_ABORTED : SC_ERR_TIMEOUT, st;
    sc_request_t *req;
    sc_comm_t *comm;
    float *buf = calloc(n, sizeof(float));
    double t0;
    int rank;

    int reducer_mode = argc > 1 && strcmp(argv[1], "reducer") == 0;

    if (argc != 2 || (!abort_mode && !reducer_mode && strcmp(argv[1], "linkdown") != 0) || !buf)
        FAIL("usage: test_netfault abort|linkdown|reducer");
    if (sc_comm_init_from_env(&comm) != SC_SUCCESS)
        FAIL("init: %s", sc_last_error());
    rank = sc_comm_rank(comm);
    if (reducer_mode) {
        free(buf);
        return run_reducer(comm, rank);
    }
    t0 = now();
    if (sc_allreduce(buf, buf, n, SC_FLOAT32, SC_SUM, comm, NULL, &req) != SC_SUCCESS)
        FAIL("issue: %s", sc_last_error());
    if (abort_mode && rank == 0) {
        usleep(1000 * 1000);
        if (sc_comm_abort(comm) != SC_SUCCESS)
            FAIL("abort: %s", sc_last_error());
    }
    st = sc_wait(req);
    sc_request_free(req);
    if (st != want)
        FAIL("rank %d: the allreduce returned %s, not %s: %s", rank, sc_status_string(st),
             sc_status_string(want), sc_last_error());
    printf("rank %d: the allreduce failed after %.2f s as it should: %s\n", rank,
           now() - t0, sc_last_error());
    if (sc_barrier(comm, NULL) == SC_SUCCESS)
        FAIL("rank %d: a later barrier succeeded", rank);
    t0 = now();
    st = sc_comm_destroy(comm);
    if (st != SC_SUCCESS)
        FAIL("rank %d: destroy returned %s: %s", rank, sc_status_string(st), sc_last_error());
    printf("PASS: %s (rank %d; destroy took %.3f s)\n", argv[1], rank, now() - t0);
    free(buf);
    return 0;
}
