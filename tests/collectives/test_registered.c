/* Registered memory (sc_mem_alloc): its errors on every rank, the mismatch of ranks
 * that pass registered and plain memory (or other offsets) to one call, and buffers
 * reused right after each call while the peers read them in place. The values of
 * every collective on registered memory are checked by test_collectives --registered.
 * Memory a pending call uses is refused by sc_mem_free.
 * Run through scrun: test_registered NAME. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_rank = -1;
#define SC_CHECK_RANK check_rank
#include "../common/sc_check.h"

#define COUNT 300000 /* 1.2 MB of float32: above the latency algorithm's threshold */

static int init(sc_comm_t **comm, int *size)
{
    CHECK_OK(sc_comm_init_from_env(comm));
    check_rank = sc_comm_rank(*comm);
    *size = sc_comm_size(*comm);
    return 0;
}

/* Bad arguments are refused without writing *ptr; a rank that fails, or sizes that
 * differ, fail sc_mem_alloc on every rank; afterwards the communicator still works. */
static int test_alloc_errors(void)
{
    sc_comm_t *comm;
    void *p = (void *)&check_rank, *plain;
    int size, one = 1, sum = 0;

    if (init(&comm, &size))
        return 1;
    CHECK_REFUSED(sc_mem_alloc(NULL, 64, &p), SC_ERR_INVALID_COMM, "communicator");
    CHECK_REFUSED(sc_mem_alloc(comm, 64, NULL), SC_ERR_INVALID_ARG, "ptr is NULL");
    CHECK(p == (void *)&check_rank, "*ptr written by a refused call");
    /* More than the machine holds, on every rank: refused before anything is mapped
     * (it used to fill shared memory until the process was killed). */
    CHECK_REFUSED(sc_mem_alloc(comm, SIZE_MAX, &p), SC_ERR_NO_MEMORY,
                  "is more than this machine's memory");
    CHECK_REFUSED(sc_mem_alloc(comm, (size_t)1 << 50, &p), SC_ERR_NO_MEMORY,
                  "is more than this machine's memory");
    CHECK(p == (void *)&check_rank, "*ptr written by a failed call");
    if (size > 1) {
        CHECK_REFUSED(sc_mem_alloc(comm, 4096 * (size_t)(check_rank + 1), &p),
                      SC_ERR_MISMATCH, "bytes is 4096 on rank 0 but 8192 on rank 1");
        CHECK(p == (void *)&check_rank, "*ptr written by a failed call");
        /* Rank 1 alone asks for nothing: its own sentence there, the peers name it. */
        if (check_rank == 1)
            CHECK_REFUSED(sc_mem_alloc(comm, 0, &p), SC_ERR_INVALID_ARG, "bytes is 0");
        else
            CHECK_REFUSED(sc_mem_alloc(comm, 4096, &p), SC_ERR_PEER_FAILED, "rank 1 failed");
        CHECK(p == (void *)&check_rank, "*ptr written by a failed call");
        /* Rank 1 alone passes no ptr: refused there, and the peers fail at once instead
         * of waiting for it (they used to go on, and their next call failed). */
        if (check_rank == 1)
            CHECK_REFUSED(sc_mem_alloc(comm, 4096, NULL), SC_ERR_INVALID_ARG, "ptr is NULL");
        else
            CHECK_REFUSED(sc_mem_alloc(comm, 4096, &p), SC_ERR_PEER_FAILED, "rank 1 failed");
        CHECK(p == (void *)&check_rank, "*ptr written by a failed call");
    }
    plain = malloc(64);
    CHECK(plain != NULL, "out of memory");
    CHECK_REFUSED(sc_mem_free(comm, plain), SC_ERR_INVALID_ARG, "not memory that sc_mem_alloc");
    free(plain);
    CHECK_OK(sc_mem_free(comm, NULL));
    CHECK_OK(sc_mem_alloc(comm, 1 << 20, &p));
    CHECK(((uintptr_t)p & 63) == 0, "registered memory at %p is not 64-byte aligned", p);
    memset(p, 1, 1 << 20);
    {
        /* sc_mem_is_shared: 1 anywhere inside a shared segment (not for one rank or
         * where UCX_TLS leaves no shared memory); 0 for other pointers and once freed;
         * refusals write nothing. */
        int shared = -1, inside = -1, other = -1;
        int expect = size > 1 && !getenv("UCX_TLS");

        CHECK_OK(sc_mem_is_shared(comm, p, &shared));
        CHECK_OK(sc_mem_is_shared(comm, (char *)p + (1 << 20) - 1, &inside));
        CHECK(shared == inside && (shared == expect || getenv("UCX_TLS")),
              "sc_mem_is_shared gave %d (start) and %d (last byte), expected %d", shared,
              inside, expect);
        CHECK_OK(sc_mem_is_shared(comm, &other, &other));
        CHECK(other == 0, "a stack address is shared memory (%d)", other);
        other = -1;
        CHECK_OK(sc_mem_is_shared(comm, NULL, &other));
        CHECK(other == 0, "NULL is shared memory (%d)", other);
        other = -1;
        CHECK_REFUSED(sc_mem_is_shared(comm, p, NULL), SC_ERR_INVALID_ARG, "shared is NULL");
        CHECK_REFUSED(sc_mem_is_shared(NULL, p, &other), SC_ERR_INVALID_COMM, "communicator");
        CHECK(other == -1, "*shared written by a refused call");
        CHECK_OK(sc_mem_free(comm, p));
        CHECK_OK(sc_mem_is_shared(comm, p, &other));
        CHECK(other == 0, "freed memory is still shared memory (%d)", other);
    }
    CHECK_REFUSED(sc_mem_free(comm, p), SC_ERR_INVALID_ARG, "freed already");
    CHECK_OK(sc_allreduce(&one, &sum, 1, SC_INT32, SC_SUM, comm, NULL, NULL));
    CHECK(sum == size, "allreduce after the errors gave %d, expected %d", sum, size);
    /* Segments still allocated go with the communicator. */
    CHECK_OK(sc_mem_alloc(comm, 4096, &p));
    CHECK_OK(sc_comm_destroy(comm));
    return 0;
}

/* One rank passes plain memory (or registered memory at another offset) where the
 * others pass registered memory: every rank's call fails with SC_ERR_MISMATCH, whose
 * sentence says what differs, and no rank writes where that rank did not offer (its
 * segment outside its buffer keeps its sentinel, on 4 ranks too, where rank 3 is no
 * ring neighbour of rank 1). */
static int run_mismatch(int other_offset)
{
    sc_comm_t *comm;
    float *seg, *buf = NULL, *plain = NULL;
    int size, shared = 1; /* sc_mem_alloc fails here only where the memory is shared */
    sc_status_t st;

    if (init(&comm, &size))
        return 1;
    /* A rank still finishing sc_mem_alloc's own collectives when its neighbours found
     * the mismatch of the next call fails there, with the same sentence. */
    st = sc_mem_alloc(comm, (COUNT + 64) * sizeof(float), (void **)&seg);
    if (st != SC_SUCCESS)
        goto check;
    /* Rank 1 at offset 0, the others at 64 elements: a peer that wrote rank 1's
     * segment at its own offset would write past the end of rank 1's buffer. */
    CHECK_OK(sc_mem_is_shared(comm, seg, &shared));
    CHECK(shared || size == 1 || getenv("UCX_TLS"), "registered memory is not shared on "
          "one node with UCX's default transports");
    buf = seg + 64;
    for (size_t i = 0; i < COUNT + 64; i++)
        seg[i] = -7.0f; /* the sentinel */
    if (check_rank == 1 && other_offset)
        buf = seg;
    if (check_rank == 1 && !other_offset) {
        plain = calloc(COUNT, sizeof(float));
        CHECK(plain != NULL, "out of memory");
        buf = plain;
    }
    for (size_t i = 0; i < COUNT; i++)
        buf[i] = 1.0f;
    st = sc_allreduce(buf, buf, COUNT, SC_FLOAT32, SC_SUM, comm, NULL, NULL);
check:
    if (size == 1) {
        CHECK(st == SC_SUCCESS, "one rank: %s", sc_last_error());
    } else if (!shared) {
        /* Registered memory that serves as plain memory (UCX_TLS without a
         * shared-memory transport): nothing differs, the call reduces. */
        printf("registered memory is plain memory here (UCX_TLS=%s): the call must "
               "succeed\n", getenv("UCX_TLS") ? getenv("UCX_TLS") : "");
        CHECK(st == SC_SUCCESS, "allreduce on plain registered memory: %s", sc_last_error());
        for (size_t i = 0; i < COUNT; i++)
            CHECK(buf[i] == (float)size, "element %zu is %g, expected %d", i, buf[i], size);
    } else {
        CHECK(st == SC_ERR_MISMATCH, "allreduce returned %s (%s)", sc_status_string(st),
              sc_last_error());
        CHECK(strstr(sc_last_error(), "ranks disagree") != NULL, "sentence: %s",
              sc_last_error());
        CHECK(strstr(sc_last_error(), other_offset ? "offset 256" : "algorithm shm") != NULL,
              "sentence does not say what differs: %s", sc_last_error());
        if (check_rank == 1) {
            /* Outside what this rank passed: untouched. */
            size_t hi = other_offset ? COUNT : 0;
            for (size_t i = 0; i < COUNT + 64; i++)
                CHECK(i < hi || seg[i] == -7.0f,
                      "a peer wrote element %zu of rank 1's segment, outside its buffer "
                      "(%g)", i, seg[i]);
        }
    }
    free(plain);
    sc_comm_destroy(comm);
    return 0;
}

static int test_mismatch_plain(void)
{
    return run_mismatch(0);
}

static int test_mismatch_offset(void)
{
    return run_mismatch(1);
}

/* Each rank writes its next input into the send buffer the moment its call returns,
 * while slower peers may still be finishing theirs: every result must be exact, so a
 * call must not complete while a peer still reads this rank's buffers. Allreduce in
 * and out of place, reduce-scatter and all-gather, non-blocking, 60 rounds. */
static int test_reuse(void)
{
    sc_comm_t *comm;
    int32_t *a, *b;
    int size;

    if (init(&comm, &size))
        return 1;
    CHECK_OK(sc_mem_alloc(comm, (size_t)COUNT * 4 * (size_t)size, (void **)&a));
    CHECK_OK(sc_mem_alloc(comm, (size_t)COUNT * 4 * (size_t)size, (void **)&b));
    for (int round = 0; round < 60; round++) {
        int kind = round % 4;
        size_t n = COUNT - (size_t)round * 7;
        sc_request_t *req;
        /* Inputs: rank r, round k, element i -> r * 1000 + k + i % 97 (small ints). */
        size_t nin = kind == 2 ? n * (size_t)size : n;
        for (size_t i = 0; i < nin; i++)
            a[i] = check_rank * 1000 + round + (int32_t)(i % 97);
        if (kind == 0)
            CHECK_OK(sc_allreduce(a, b, n, SC_INT32, SC_SUM, comm, NULL, &req));
        else if (kind == 1)
            CHECK_OK(sc_allreduce(a, a, n, SC_INT32, SC_SUM, comm, NULL, &req));
        else if (kind == 2)
            CHECK_OK(sc_reduce_scatter(a, b, n, SC_INT32, SC_SUM, comm, NULL, &req));
        else
            CHECK_OK(sc_allgather(a, b, n, SC_INT32, comm, NULL, &req));
        CHECK_OK(sc_wait(req));
        sc_request_free(req);
        {
            int32_t *out = kind == 1 ? a : b;
            int32_t ranks = (int32_t)size * (int32_t)(size - 1) / 2 * 1000;
            size_t nout = kind == 3 ? n * (size_t)size : n;
            for (size_t i = 0; i < nout; i++) {
                size_t j = kind == 2 ? (size_t)check_rank * n + i : i;
                int32_t want = kind == 3 ? (int32_t)(i / n) * 1000 + round + (int32_t)(i % n % 97)
                                         : ranks + size * (round + (int32_t)(j % 97));
                CHECK(out[i] == want, "round %d (kind %d) element %zu is %d, expected %d",
                      round, kind, i, out[i], want);
            }
        }
        /* Scribble at once over what the peers read in place. */
        memset(a, 0xff, nin * 4);
        memset(b, 0xff, (kind == 3 ? n * (size_t)size : n) * 4);
    }
    CHECK_OK(sc_mem_free(comm, a));
    CHECK_OK(sc_mem_free(comm, b));
    CHECK_OK(sc_comm_destroy(comm));
    return 0;
}

/* The same for alltoall, alternately in place (through scratch, written back only once
 * every peer is done reading) and out of place, 40 rounds: rank r's block q holds
 * r * 1000 + q * 10 + round + i % 7. */
static int test_reuse_alltoall(void)
{
    sc_comm_t *comm;
    int32_t *a, *b;
    int size;

    if (init(&comm, &size))
        return 1;
    CHECK_OK(sc_mem_alloc(comm, (size_t)COUNT * 4, (void **)&a));
    CHECK_OK(sc_mem_alloc(comm, (size_t)COUNT * 4, (void **)&b));
    for (int round = 0; round < 40; round++) {
        size_t n = COUNT / (size_t)size - (size_t)round * 3;
        int in_place = round % 2;
        int32_t *out = in_place ? a : b;
        sc_request_t *req;
        for (size_t i = 0; i < n * (size_t)size; i++)
            a[i] = check_rank * 1000 + (int32_t)(i / n) * 10 + round + (int32_t)(i % n % 7);
        CHECK_OK(sc_alltoall(a, out, n, SC_INT32, comm, NULL, &req));
        CHECK_OK(sc_wait(req));
        sc_request_free(req);
        for (size_t i = 0; i < n * (size_t)size; i++) {
            int32_t want = (int32_t)(i / n) * 1000 + check_rank * 10 + round +
                           (int32_t)(i % n % 7);
            CHECK(out[i] == want, "round %d (%s) element %zu is %d, expected %d", round,
                  in_place ? "in place" : "out of place", i, out[i], want);
        }
        memset(a, 0xff, n * (size_t)size * 4);
        memset(b, 0xff, n * (size_t)size * 4);
    }
    CHECK_OK(sc_mem_free(comm, a));
    CHECK_OK(sc_mem_free(comm, b));
    CHECK_OK(sc_comm_destroy(comm));
    return 0;
}

/* Memory a pending call uses is not freed: while the last rank holds back, every other
 * rank's all-reduce (send and receive buffer) and receive from it pend, and sc_mem_free
 * of either buffer is refused, the memory left as it was; once the calls complete the
 * values are right and the memory frees at once (right after sc_wait, the progress
 * thread having completed the call: 30 rounds). A second free is refused. */
static int test_free_pending(void)
{
    sc_comm_t *comm;
    int32_t *a, *b, *c;
    int size, last;
    sc_request_t *req, *rreq = NULL;

    if (init(&comm, &size))
        return 1;
    last = size - 1;
    CHECK_OK(sc_mem_alloc(comm, (size_t)COUNT * 4, (void **)&a));
    CHECK_OK(sc_mem_alloc(comm, (size_t)COUNT * 4, (void **)&b));
    CHECK_OK(sc_mem_alloc(comm, 64, (void **)&c));
    for (size_t i = 0; i < COUNT; i++)
        a[i] = check_rank + (int32_t)(i % 13);
    CHECK_OK(sc_barrier(comm, NULL));
    if (check_rank == last)
        usleep(300000);
    CHECK_OK(sc_allreduce(a, b, COUNT, SC_INT32, SC_SUM, comm, NULL, &req));
    if (check_rank != last) {
        CHECK_OK(sc_recv(c, 16, SC_INT32, last, comm, NULL, &rreq));
        CHECK_REFUSED(sc_mem_free(comm, a), SC_ERR_INVALID_ARG, "still pending");
        CHECK_REFUSED(sc_mem_free(comm, b), SC_ERR_INVALID_ARG, "still pending");
        CHECK_REFUSED(sc_mem_free(comm, c), SC_ERR_INVALID_ARG, "still pending");
        CHECK(a[5] == check_rank + 5, "the refused free changed the buffer");
    }
    CHECK_OK(sc_wait(req));
    sc_request_free(req);
    if (check_rank == last) {
        int32_t v[16];
        for (int i = 0; i < 16; i++)
            v[i] = 7 * i;
        for (int q = 0; q < last; q++)
            CHECK_OK(sc_send(v, 16, SC_INT32, q, comm, NULL, NULL));
    } else {
        CHECK_OK(sc_wait(rreq));
        sc_request_free(rreq);
        for (int i = 0; i < 16; i++)
            CHECK(c[i] == 7 * i, "received element %d is %d", i, c[i]);
    }
    for (size_t i = 0; i < COUNT; i++)
        CHECK(b[i] == size * (size - 1) / 2 + size * (int32_t)(i % 13),
              "element %zu is %d", i, b[i]);
    CHECK_OK(sc_mem_free(comm, a));
    CHECK_OK(sc_mem_free(comm, b));
    CHECK_OK(sc_mem_free(comm, c));
    CHECK_REFUSED(sc_mem_free(comm, a), SC_ERR_INVALID_ARG, "freed already");
    for (int round = 0; round < 30; round++) {
        CHECK_OK(sc_mem_alloc(comm, 4096, (void **)&a));
        a[0] = 1;
        CHECK_OK(sc_allreduce(a, a, 1024, SC_INT32, SC_SUM, comm, NULL, &req));
        CHECK_OK(sc_wait(req));
        sc_request_free(req);
        CHECK(a[0] == size, "round %d: %d", round, a[0]);
        CHECK_OK(sc_mem_free(comm, a));
    }
    CHECK_OK(sc_comm_destroy(comm));
    return 0;
}

/* Memory from sc_mem_alloc on one communicator that a pending call of another
 * communicator of the same sc_comm_init uses is refused by sc_mem_free too: each rank
 * receives into its parent's memory on a split (reversed ranks) and into the split's
 * memory on the parent, and while both receives pend neither memory frees (it used to
 * free the other communicator's memory under the receive: the sender's transfer failed
 * with an I/O error, or the receive wrote unmapped memory); then the data is right. */
static int test_free_pending_other_comm(void)
{
    sc_comm_t *comm, *sub, *sync;
    uint8_t *pmem, *smem;
    uint8_t *out;
    int size, left, sleft;
    sc_request_t *req[2];

    if (init(&comm, &size))
        return 1;
    CHECK_OK(sc_comm_split(comm, 0, -check_rank, &sub));
    CHECK_OK(sc_comm_split(comm, 0, check_rank, &sync));
    CHECK_OK(sc_mem_alloc(comm, COUNT, (void **)&pmem));
    CHECK_OK(sc_mem_alloc(sub, COUNT, (void **)&smem));
    out = malloc(COUNT);
    CHECK(out != NULL, "out of memory");
    left = (check_rank + size - 1) % size;
    sleft = (sc_comm_rank(sub) + size - 1) % size;
    memset(pmem, 0xee, COUNT);
    memset(smem, 0xee, COUNT);
    CHECK_OK(sc_recv(pmem, COUNT, SC_UINT8, sleft, sub, NULL, &req[0]));
    CHECK_OK(sc_recv(smem, COUNT, SC_UINT8, left, comm, NULL, &req[1]));
    CHECK_REFUSED(sc_mem_free(comm, pmem), SC_ERR_INVALID_ARG, "still pending");
    CHECK_REFUSED(sc_mem_free(sub, smem), SC_ERR_INVALID_ARG, "still pending");
    CHECK(pmem[7] == 0xee && smem[7] == 0xee, "the refused free changed the memory");
    CHECK_OK(sc_barrier(sync, NULL));
    /* Rank r's byte i on the split is r + i, on the parent r * 3 + i. */
    for (size_t i = 0; i < COUNT; i++)
        out[i] = (uint8_t)(sc_comm_rank(sub) + i);
    CHECK_OK(sc_send(out, COUNT, SC_UINT8, (sc_comm_rank(sub) + 1) % size, sub, NULL, NULL));
    for (size_t i = 0; i < COUNT; i++)
        out[i] = (uint8_t)(check_rank * 3 + i);
    CHECK_OK(sc_send(out, COUNT, SC_UINT8, (check_rank + 1) % size, comm, NULL, NULL));
    CHECK_OK(sc_wait(req[0]));
    CHECK_OK(sc_wait(req[1]));
    sc_request_free(req[0]);
    sc_request_free(req[1]);
    for (size_t i = 0; i < COUNT; i++) {
        CHECK(pmem[i] == (uint8_t)(sleft + i), "split: byte %zu is %u, expected %u", i,
              pmem[i], (uint8_t)(sleft + i));
        CHECK(smem[i] == (uint8_t)(left * 3 + i), "parent: byte %zu is %u, expected %u", i,
              smem[i], (uint8_t)(left * 3 + i));
    }
    free(out);
    CHECK_OK(sc_mem_free(comm, pmem));
    CHECK_OK(sc_mem_free(sub, smem));
    CHECK_OK(sc_comm_destroy(sync));
    CHECK_OK(sc_comm_destroy(sub));
    CHECK_OK(sc_comm_destroy(comm));
    return 0;
}

/* Shared mappings of this process (/proc/self/maps lines whose permissions end in s):
 * registered memory and the peers' copies mapped here. -1 when unreadable. */
static int shared_mappings(void)
{
    char line[512], perms[8];
    int n = 0;
    FILE *f = fopen("/proc/self/maps", "r");

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "%*s %7s", perms) == 1 && perms[3] == 's')
            n++;
    fclose(f);
    return n;
}

#define KEPT_ROUNDS 40

/* Memory of a split that a pending call of its parent holds when the split is
 * destroyed stays mapped until the call is done, then the next sc_mem_alloc frees it:
 * after KEPT_ROUNDS rounds of (split, its memory, a parent's allreduce from it issued,
 * the split destroyed under it, the allreduce waited for) the process has as many
 * shared mappings as after the first (each round's memory used to stay until the
 * parent was destroyed: 2 mappings more per round on 2 ranks), and every allreduce's
 * values are right. The last rank issues late, so the others' calls are pending when
 * they destroy the split. */
static int test_destroyed_split_memory_freed_once_released(void)
{
    sc_comm_t *comm, *sub;
    int32_t *m, *out = malloc((size_t)COUNT * 4);
    int size, last, first = -1, now = -1;
    sc_request_t *req;

    if (init(&comm, &size))
        return 1;
    CHECK(out != NULL, "out of memory");
    last = size - 1;
    for (int round = 0; round < KEPT_ROUNDS; round++) {
        CHECK_OK(sc_comm_split(comm, 0, check_rank, &sub));
        CHECK_OK(sc_mem_alloc(sub, (size_t)COUNT * 4, (void **)&m));
        now = shared_mappings();
        if (round == 1)
            first = now;
        for (size_t i = 0; i < COUNT; i++)
            m[i] = check_rank + round + (int32_t)(i % 7);
        if (check_rank == last && size > 1)
            usleep(10000);
        CHECK_OK(sc_allreduce(m, out, COUNT, SC_INT32, SC_SUM, comm, NULL, &req));
        CHECK_OK(sc_comm_destroy(sub));
        CHECK_OK(sc_wait(req));
        sc_request_free(req);
        for (size_t i = 0; i < COUNT; i++)
            CHECK(out[i] == size * (size - 1) / 2 + size * (round + (int32_t)(i % 7)),
                  "round %d: element %zu is %d", round, i, out[i]);
    }
    free(out);
    CHECK(first >= 0 && now == first, "%d shared mappings after the memory of round %d was "
          "allocated, %d after round 1's: the memory of the destroyed splits stayed mapped",
          now, KEPT_ROUNDS - 1, first);
    CHECK_OK(sc_comm_destroy(comm));
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(void);
    } tests[] = {{"alloc_errors", test_alloc_errors},
                 {"mismatch_plain", test_mismatch_plain},
                 {"mismatch_offset", test_mismatch_offset},
                 {"reuse", test_reuse},
                 {"reuse_alltoall", test_reuse_alltoall},
                 {"free_pending", test_free_pending},
                 {"free_pending_other_comm", test_free_pending_other_comm},
                 {"destroyed_split_memory_freed_once_released",
                  test_destroyed_split_memory_freed_once_released}};

    if (argc != 2) {
        fprintf(stderr, "usage: test_registered alloc_errors|mismatch_plain|mismatch_offset|"
                        "reuse|reuse_alltoall|free_pending|free_pending_other_comm|"
                        "destroyed_split_memory_freed_once_released\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (strcmp(argv[1], tests[i].name) == 0) {
            int rc = tests[i].fn();
            printf("%s: %s\n", tests[i].name, rc ? "FAIL" : "PASS");
            return rc;
        }
    }
    fprintf(stderr, "no test named %s\n", argv[1]);
    return 2;
}
