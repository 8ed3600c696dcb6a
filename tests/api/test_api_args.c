/* Argument errors of the public API: each bad input gets its status, a sentence in
 * sc_last_error() naming the call and the bad argument, and leaves every output (buffer,
 * *req, *sub) as it was. Run through scrun (1 or 2 ranks): test_api_args NAME. */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shardcomm/shardcomm.h"

#define NELEM(x) (sizeof(x) / sizeof((x)[0]))
#define OUT_BYTES 4096
#define OUT_FILL 0xA5

static sc_comm_t *g_world;
static int g_rank, g_size;
static _Alignas(64) uint8_t g_in[OUT_BYTES];  /* a valid input buffer */
static _Alignas(64) uint8_t g_out[OUT_BYTES]; /* an output buffer errors must not touch */

#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

#define RUN(expr)                                                                        \
    do {                                                                                 \
        if ((expr) != 0) {                                                               \
            fprintf(stderr, "  (from %s:%d)\n", __FILE__, __LINE__);                     \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

/* ---- one call of the API, described as data -------------------------------------- */

typedef enum {
    K_ALLREDUCE, K_REDUCE_SCATTER, K_ALLGATHER, K_BROADCAST, K_REDUCE, K_ALLTOALL,
    K_SEND, K_RECV, K_BARRIER, K_COUNT
} kind_t;

static const char *const kind_fn[K_COUNT] = {
    "sc_allreduce", "sc_reduce_scatter", "sc_allgather", "sc_broadcast", "sc_reduce",
    "sc_alltoall",  "sc_send",           "sc_recv",      "sc_barrier"};

typedef struct {
    kind_t kind;
    const void *send;
    void *recv;
    size_t count;
    sc_dtype_t dtype;
    sc_op_t op;
    int root;          /* root, or peer of send/recv */
    sc_comm_t *comm;
    sc_stream_t stream;
} call_t;

static sc_status_t call_issue(const call_t *c, sc_request_t **req)
{
    switch (c->kind) {
    case K_ALLREDUCE:
        return sc_allreduce(c->send, c->recv, c->count, c->dtype, c->op, c->comm, c->stream, req);
    case K_REDUCE_SCATTER:
        return sc_reduce_scatter(c->send, c->recv, c->count, c->dtype, c->op, c->comm, c->stream,
                                 req);
    case K_ALLGATHER:
        return sc_allgather(c->send, c->recv, c->count, c->dtype, c->comm, c->stream, req);
    case K_BROADCAST:
        return sc_broadcast(c->send, c->recv, c->count, c->dtype, c->root, c->comm, c->stream,
                            req);
    case K_REDUCE:
        return sc_reduce(c->send, c->recv, c->count, c->dtype, c->op, c->root, c->comm,
                         c->stream, req);
    case K_ALLTOALL:
        return sc_alltoall(c->send, c->recv, c->count, c->dtype, c->comm, c->stream, req);
    case K_SEND:
        return sc_send(c->send, c->count, c->dtype, c->root, c->comm, c->stream, req);
    case K_RECV:
        return sc_recv(c->recv, c->count, c->dtype, c->root, c->comm, c->stream, req);
    default:
        return sc_barrier(c->comm, req);
    }
}

/* A valid call of kind k on comm: 4 float32 elements, sum, root/peer = this rank. */
static call_t call_valid(kind_t k, sc_comm_t *comm)
{
    call_t c = {k, g_in, g_out, 4, SC_FLOAT32, SC_SUM, 0, comm, NULL};

    c.root = sc_comm_rank(comm) >= 0 ? sc_comm_rank(comm) : 0;
    if (k == K_SEND)
        c.recv = NULL;
    if (k == K_RECV)
        c.send = NULL;
    return c;
}

static int kind_has_dtype(kind_t k)
{
    return k != K_BARRIER;
}

static int kind_reduces(kind_t k)
{
    return k == K_ALLREDUCE || k == K_REDUCE_SCATTER || k == K_REDUCE;
}

static int kind_rooted(kind_t k)
{
    return k == K_BROADCAST || k == K_REDUCE;
}

/* Sets sc_last_error() to a known sentence, so that a call that fails without setting
 * its own cannot pass for one that did. */
static void prime_last_error(void)
{
    sc_dtype_t d;
    (void)sc_dtype_from_name("__primed__", &d);
}

/* The call fails with `want`, blocking and non-blocking, writes nothing to g_out nor to
 * *req, and sc_last_error() names the call and contains `word`. */
static int expect_rejected(const call_t *c, sc_status_t want, const char *word)
{
    sc_request_t *const sentinel = (sc_request_t *)(uintptr_t)0x5c5c5c50;
    const char *fn = kind_fn[c->kind];

    for (int blocking = 0; blocking < 2; blocking++) {
        sc_request_t *req = sentinel;
        const char *msg;
        sc_status_t st;

        memset(g_out, OUT_FILL, sizeof(g_out));
        prime_last_error();
        st = call_issue(c, blocking ? NULL : &req);
        msg = sc_last_error();
        CHECK(st == want, "%s (%s, count %zu, dtype %d, op %d, root %d) returned %s, expected %s",
              fn, blocking ? "blocking" : "non-blocking", c->count, (int)c->dtype, (int)c->op,
              c->root, sc_status_string(st), sc_status_string(want));
        CHECK(req == sentinel, "%s wrote *req on error", fn);
        for (size_t i = 0; i < sizeof(g_out); i++)
            CHECK(g_out[i] == OUT_FILL, "%s wrote byte %zu of the output buffer on error", fn, i);
        CHECK(msg && msg[0] && !strstr(msg, "__primed__"), "%s set no error sentence", fn);
        /* A call refused because its communicator was aborted repeats the abort's
         * sentence, which names sc_comm_abort rather than the call. */
        CHECK(want == SC_ERR_ABORTED || strstr(msg, fn), "the sentence does not name %s: \"%s\"",
              fn, msg);
        CHECK(!word || strstr(msg, word), "the sentence of %s does not mention '%s': \"%s\"",
              fn, word, msg);
    }
    return 0;
}

/* ---- null buffers and zero counts ---------------------------------------------------- */

static int test_null_sendbuf_with_count_is_invalid_arg(void)
{
    for (kind_t k = 0; k < K_COUNT; k++) {
        call_t c = call_valid(k, g_world);
        if (k == K_RECV || k == K_BARRIER)
            continue;
        c.send = NULL;
        RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, "sendbuf"));
    }
    return 0;
}

static int test_null_recvbuf_with_count_is_invalid_arg(void)
{
    for (kind_t k = 0; k < K_COUNT; k++) {
        call_t c = call_valid(k, g_world);
        if (k == K_SEND || k == K_BARRIER)
            continue;
        c.recv = NULL;
        RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, "recvbuf"));
    }
    return 0;
}

/* Buffers that overlap other than in place (sendbuf one element past recvbuf) are
 * refused by every call that takes both, naming the overlap. */
static int test_overlapping_buffers_are_invalid_arg(void)
{
    for (kind_t k = 0; k < K_COUNT; k++) {
        call_t c = call_valid(k, g_world);
        if (k == K_SEND || k == K_RECV || k == K_BARRIER)
            continue;
        c.send = g_out + sizeof(float);
        c.recv = g_out;
        RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, "overlap other than in place"));
    }
    return 0;
}

/* reduce_scatter's and allgather's in-place form is not sendbuf == recvbuf but the
 * rank's own block of the larger buffer (NCCL's convention), so a refused overlap says
 * where this rank's in-place buffer would start. Here the smaller buffer starts one
 * element into the larger one: in place on no rank, so every rank refuses it. */
static int test_in_place_overlap_names_the_rank_s_block(void)
{
    size_t block = 4 * sizeof(float);
    call_t rs = call_valid(K_REDUCE_SCATTER, g_world), ag = call_valid(K_ALLGATHER, g_world);
    char word[96];

    rs.send = g_out;
    rs.recv = g_out + sizeof(float);
    snprintf(word, sizeof(word), "in place, recvbuf is sendbuf's block %d, at %p", g_rank,
             (void *)(g_out + (size_t)g_rank * block));
    RUN(expect_rejected(&rs, SC_ERR_INVALID_ARG, word));
    ag.send = g_out + sizeof(float);
    ag.recv = g_out;
    snprintf(word, sizeof(word), "in place, sendbuf is recvbuf's block %d, at %p", g_rank,
             (void *)(g_out + (size_t)g_rank * block));
    RUN(expect_rejected(&ag, SC_ERR_INVALID_ARG, word));
    return 0;
}

/* A buffer that does not start at a multiple of its element size (a float32 at an odd
 * address, a float64 at a multiple of 4, a float16 at an odd one) is refused, naming
 * it; one-byte elements have no such rule. */
static int test_misaligned_buffers_are_invalid_arg(void)
{
    static const struct {
        sc_dtype_t dtype;
        size_t off;
        const char *says;
    } cases[] = {{SC_FLOAT32, 1, "4-byte"}, {SC_FLOAT64, 4, "8-byte"}, {SC_FLOAT16, 3, "2-byte"}};

    for (kind_t k = 0; k < K_COUNT; k++) {
        if (k == K_BARRIER)
            continue;
        for (size_t i = 0; i < NELEM(cases); i++) {
            call_t c = call_valid(k, g_world);
            char word[64];

            c.dtype = cases[i].dtype;
            if (c.send) {
                c.send = g_in + cases[i].off;
                snprintf(word, sizeof(word), "sendbuf (%p) is not aligned to its %s",
                         (const void *)c.send, cases[i].says);
                RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, word));
                c.send = g_in;
            }
            if (c.recv) {
                c.recv = g_out + cases[i].off;
                snprintf(word, sizeof(word), "recvbuf (%p) is not aligned to its %s",
                         (void *)c.recv, cases[i].says);
                RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, word));
            }
        }
    }
    {
        uint8_t in[7] = {1, 2, 3, 4, 5, 6, 7}, out[8];
        CHECK_OK(sc_allreduce(in + 1, out + 1, 5, SC_INT8, SC_MAX, g_world, NULL, NULL));
        CHECK(out[1] == 2 && out[5] == 6, "int8 at odd addresses: %d %d", out[1], out[5]);
    }
    return 0;
}

/* Count 0 with NULL buffers is legal for every call, blocking and non-blocking. */
static int test_zero_count_with_null_buffers_succeeds(void)
{
    int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;

    for (kind_t k = 0; k < K_COUNT; k++) {
        for (int blocking = 0; blocking < 2; blocking++) {
            call_t c = call_valid(k, g_world);
            sc_request_t *req = NULL;
            sc_status_t st;

            if (k == K_SEND || k == K_RECV)
                continue;
            c.send = NULL;
            c.recv = NULL;
            c.count = 0;
            c.root = 0;
            st = call_issue(&c, blocking ? NULL : &req);
            CHECK(st == SC_SUCCESS, "%s with count 0 returned %s: %s", kind_fn[k],
                  sc_status_string(st), sc_last_error());
            if (!blocking) {
                CHECK(req != NULL, "%s did not set *req", kind_fn[k]);
                st = sc_wait(req);
                sc_request_free(req);
                CHECK(st == SC_SUCCESS, "sc_wait on %s with count 0: %s", kind_fn[k],
                      sc_status_string(st));
            }
        }
    }
    /* A zero-byte ring of send/recv. */
    {
        sc_request_t *sreq = NULL, *rreq = NULL;
        sc_status_t st = sc_send(NULL, 0, SC_INT32, right, g_world, NULL, &sreq);
        CHECK(st == SC_SUCCESS, "sc_send count 0: %s", sc_status_string(st));
        st = sc_recv(NULL, 0, SC_INT32, left, g_world, NULL, &rreq);
        CHECK(st == SC_SUCCESS, "sc_recv count 0: %s", sc_status_string(st));
        CHECK(sc_wait(rreq) == SC_SUCCESS, "sc_wait(recv): %s", sc_last_error());
        CHECK(sc_wait(sreq) == SC_SUCCESS, "sc_wait(send): %s", sc_last_error());
        sc_request_free(rreq);
        sc_request_free(sreq);
    }
    return 0;
}

/* ---- counts that overflow the buffer size -------------------------------------------- */

static int test_count_overflow_is_invalid_arg(void)
{
    struct {
        sc_dtype_t dtype;
        size_t count;
    } cases[] = {
        {SC_FLOAT32, SIZE_MAX / 2},               /* bytes wrap size_t */
        {SC_FLOAT32, SIZE_MAX / 4 + 1},           /* exactly 2^64 bytes */
        {SC_FLOAT64, SIZE_MAX},
        {SC_FLOAT16, (size_t)INT64_MAX / 2 + 1},  /* fits size_t, over INT64_MAX bytes */
        {SC_INT8, SIZE_MAX},
    };

    for (kind_t k = 0; k < K_COUNT; k++) {
        if (k == K_BARRIER)
            continue;
        for (size_t i = 0; i < NELEM(cases); i++) {
            call_t c = call_valid(k, g_world);
            c.dtype = cases[i].dtype;
            c.count = cases[i].count;
            RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, "overflow"));
        }
    }
    /* Count times the communicator size overflows, the count alone does not. */
    if (g_size >= 2) {
        kind_t scaled[] = {K_REDUCE_SCATTER, K_ALLGATHER, K_ALLTOALL};
        for (size_t i = 0; i < NELEM(scaled); i++) {
            call_t c = call_valid(scaled[i], g_world);
            c.dtype = SC_INT8;
            c.count = SIZE_MAX / (size_t)g_size + 1;
            RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, "overflow"));
        }
    }
    return 0;
}

/* ---- dtype, op, root, peer, stream ----------------------------------------------------- */

static int test_unknown_dtype_is_invalid_arg(void)
{
    sc_dtype_t bad[] = {(sc_dtype_t)99, SC_DTYPE_COUNT, (sc_dtype_t)-1};

    for (kind_t k = 0; k < K_COUNT; k++) {
        if (!kind_has_dtype(k))
            continue;
        for (size_t i = 0; i < NELEM(bad); i++) {
            call_t c = call_valid(k, g_world);
            c.dtype = bad[i];
            RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, "dtype"));
        }
    }
    return 0;
}

static int test_unknown_op_is_invalid_arg(void)
{
    sc_op_t bad[] = {(sc_op_t)99, SC_OP_COUNT, (sc_op_t)-1};

    for (kind_t k = 0; k < K_COUNT; k++) {
        if (!kind_reduces(k))
            continue;
        for (size_t i = 0; i < NELEM(bad); i++) {
            call_t c = call_valid(k, g_world);
            c.op = bad[i];
            RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, "op"));
        }
    }
    return 0;
}

static int test_avg_on_integer_dtypes_is_invalid_arg_naming_avg(void)
{
    sc_dtype_t ints[] = {SC_INT8, SC_UINT8, SC_INT32, SC_INT64};
    const char *names[] = {"int8", "uint8", "int32", "int64"};

    for (kind_t k = 0; k < K_COUNT; k++) {
        if (!kind_reduces(k))
            continue;
        for (size_t i = 0; i < NELEM(ints); i++) {
            call_t c = call_valid(k, g_world);
            c.dtype = ints[i];
            c.op = SC_AVG;
            RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, "avg"));
            RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, names[i]));
        }
    }
    return 0;
}

static int test_root_out_of_range_is_invalid_arg(void)
{
    int bad[] = {-1, g_size, g_size + 1, INT_MAX, INT_MIN};

    for (kind_t k = 0; k < K_COUNT; k++) {
        if (!kind_rooted(k))
            continue;
        for (size_t i = 0; i < NELEM(bad); i++) {
            call_t c = call_valid(k, g_world);
            c.root = bad[i];
            RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, "root"));
        }
    }
    return 0;
}

static int test_peer_out_of_range_is_invalid_arg(void)
{
    int bad[] = {-1, g_size, INT_MAX, INT_MIN};

    for (size_t i = 0; i < NELEM(bad); i++) {
        call_t s = call_valid(K_SEND, g_world), r = call_valid(K_RECV, g_world);
        s.root = r.root = bad[i];
        RUN(expect_rejected(&s, SC_ERR_INVALID_ARG, "peer"));
        RUN(expect_rejected(&r, SC_ERR_INVALID_ARG, "peer"));
    }
    return 0;
}

/* Host buffers take no stream: without a GPU the stream cannot be served at all,
 * with one it is a mistake in the call. */
/* A blocking receive from the rank itself returns only once a send to itself matched
 * it, which the thread waiting in it can no longer issue: with no such send issued
 * before, it is refused at once, writing nothing (it waited SC_TIMEOUT, then said the
 * rank itself never issued its matching call). Issued after its send, or with a request
 * before a blocking send, it receives the message. */
static int test_blocking_receive_from_itself_with_no_send_is_invalid_arg(void)
{
    const float msg[4] = {1, 2, 3, 4};
    float got[4] = {0};
    sc_request_t *req = NULL;

    memset(g_out, OUT_FILL, sizeof(g_out));
    CHECK_REFUSED(sc_recv(g_out, 4, SC_FLOAT32, g_rank, g_world, NULL, NULL),
                  SC_ERR_INVALID_ARG, "sc_recv: a blocking receive from this rank itself");
    for (size_t i = 0; i < sizeof(g_out); i++)
        CHECK(g_out[i] == OUT_FILL, "the refused receive wrote byte %zu", i);
    CHECK_REFUSED(sc_recv(NULL, 0, SC_FLOAT32, g_rank, g_world, NULL, NULL),
                  SC_ERR_INVALID_ARG, "no send to itself");
    CHECK_OK(sc_send(msg, 4, SC_FLOAT32, g_rank, g_world, NULL, NULL));
    CHECK_OK(sc_recv(got, 4, SC_FLOAT32, g_rank, g_world, NULL, NULL));
    CHECK(memcmp(got, msg, sizeof(msg)) == 0, "received %g %g %g %g", got[0], got[1], got[2],
          got[3]);
    memset(got, 0, sizeof(got));
    CHECK_OK(sc_recv(got, 4, SC_FLOAT32, g_rank, g_world, NULL, &req));
    CHECK_OK(sc_send(msg, 4, SC_FLOAT32, g_rank, g_world, NULL, NULL));
    CHECK_OK(sc_wait(req));
    sc_request_free(req);
    CHECK(memcmp(got, msg, sizeof(msg)) == 0, "received %g %g %g %g", got[0], got[1], got[2],
          got[3]);
    return 0;
}

static int test_stream_with_host_buffers_is_refused(void)
{
    sc_status_t expected = sc_device_count() == 0 ? SC_ERR_UNSUPPORTED : SC_ERR_INVALID_ARG;

    for (kind_t k = 0; k < K_COUNT; k++) {
        call_t c = call_valid(k, g_world);
        if (k == K_BARRIER)
            continue;
        c.stream = (sc_stream_t)(uintptr_t)0x1000;
        RUN(expect_rejected(&c, expected, "stream"));
    }
    return 0;
}

/* ---- communicators: NULL, destroyed, aborted --------------------------------------------- */

static int test_null_comm_is_invalid_comm(void)
{
    sc_comm_t *const sentinel = (sc_comm_t *)(uintptr_t)0x5c5c5c50;
    sc_comm_t *sub = sentinel;

    for (kind_t k = 0; k < K_COUNT; k++) {
        call_t c = call_valid(k, NULL);
        RUN(expect_rejected(&c, SC_ERR_INVALID_COMM, NULL));
    }
    CHECK(sc_comm_split(NULL, 0, 0, &sub) == SC_ERR_INVALID_COMM, "split of NULL");
    CHECK(sub == sentinel, "split of NULL wrote *sub");
    CHECK(sc_comm_destroy(NULL) == SC_ERR_INVALID_COMM, "destroy of NULL");
    CHECK(sc_comm_abort(NULL) == SC_ERR_INVALID_COMM, "abort of NULL");
    CHECK(sc_comm_rank(NULL) == -1 && sc_comm_size(NULL) == -1 &&
              sc_comm_local_rank(NULL) == -1 && sc_comm_local_size(NULL) == -1,
          "queries of NULL");
    return 0;
}

/* The library keeps a registry of live communicators, so a destroyed handle is
 * recognised without being dereferenced. */
static int test_destroyed_comm_is_invalid_comm(void)
{
    sc_comm_t *const sentinel = (sc_comm_t *)(uintptr_t)0x5c5c5c50;
    sc_comm_t *sub = NULL, *sub2 = sentinel;
    sc_status_t st;

    st = sc_comm_split(g_world, 0, g_rank, &sub);
    CHECK(st == SC_SUCCESS && sub, "split: %s", sc_last_error());
    CHECK(sc_comm_destroy(sub) == SC_SUCCESS, "destroy: %s", sc_last_error());
    for (kind_t k = 0; k < K_COUNT; k++) {
        call_t c = call_valid(k, sub);
        c.root = 0;
        RUN(expect_rejected(&c, SC_ERR_INVALID_COMM, "destroyed"));
    }
    prime_last_error();
    CHECK(sc_comm_split(sub, 0, 0, &sub2) == SC_ERR_INVALID_COMM, "split of a destroyed comm");
    CHECK(sub2 == sentinel, "split of a destroyed comm wrote *sub");
    CHECK(strstr(sc_last_error(), "sc_comm_split"), "sentence: %s", sc_last_error());
    prime_last_error();
    CHECK(sc_comm_destroy(sub) == SC_ERR_INVALID_COMM, "second destroy");
    CHECK(strstr(sc_last_error(), "sc_comm_destroy"), "sentence: %s", sc_last_error());
    CHECK(sc_comm_abort(sub) == SC_ERR_INVALID_COMM, "abort of a destroyed comm");
    CHECK(sc_comm_rank(sub) == -1 && sc_comm_size(sub) == -1 && sc_comm_local_rank(sub) == -1 &&
              sc_comm_local_size(sub) == -1,
          "queries of a destroyed comm");
    /* The parent is unaffected. */
    CHECK(sc_barrier(g_world, NULL) == SC_SUCCESS, "world barrier: %s", sc_last_error());
    return 0;
}

/* After sc_comm_abort every call on the communicator fails with SC_ERR_ABORTED; its
 * parent keeps working. */
static int test_aborted_comm_calls_fail_with_aborted(void)
{
    sc_comm_t *const sentinel = (sc_comm_t *)(uintptr_t)0x5c5c5c50;
    sc_comm_t *sub = NULL, *sub2 = sentinel;
    sc_status_t st;

    void *mem = NULL;

    st = sc_comm_split(g_world, 0, g_rank, &sub);
    CHECK(st == SC_SUCCESS && sub, "split: %s", sc_last_error());
    CHECK(sc_mem_alloc(sub, 4096, &mem) == SC_SUCCESS, "sc_mem_alloc: %s", sc_last_error());
    /* Every rank out of sc_mem_alloc's last collective before an abort can reach it. */
    CHECK(sc_barrier(g_world, NULL) == SC_SUCCESS, "world barrier: %s", sc_last_error());
    CHECK(sc_comm_abort(sub) == SC_SUCCESS, "abort: %s", sc_last_error());
    /* Local calls that still work: memory is given back (it was refused and kept until
     * the destroy), destroy and abort succeed, none leaving a sentence of refusal. */
    prime_last_error();
    CHECK(sc_mem_free(sub, mem) == SC_SUCCESS, "sc_mem_free on an aborted comm: %s",
          sc_last_error());
    CHECK(!strstr(sc_last_error(), "refused"), "sentence after sc_mem_free: %s",
          sc_last_error());
    CHECK(sc_mem_free(sub, mem) == SC_ERR_INVALID_ARG, "the block was not given back");
    for (kind_t k = 0; k < K_COUNT; k++) {
        call_t c = call_valid(k, sub);
        RUN(expect_rejected(&c, SC_ERR_ABORTED, "abort"));
    }
    CHECK(sc_comm_split(sub, 0, 0, &sub2) == SC_ERR_ABORTED, "split of an aborted comm");
    CHECK(sub2 == sentinel, "split of an aborted comm wrote *sub");
    CHECK(sc_comm_abort(sub) == SC_SUCCESS, "a second abort: %s", sc_last_error());
    prime_last_error();
    CHECK(sc_comm_destroy(sub) == SC_SUCCESS, "destroy of an aborted comm: %s", sc_last_error());
    CHECK(!strstr(sc_last_error(), "refused"), "sentence after destroy: %s", sc_last_error());
    CHECK(sc_barrier(g_world, NULL) == SC_SUCCESS, "world barrier: %s", sc_last_error());
    return 0;
}

/* A request pending when its communicator is aborted completes with SC_ERR_ABORTED
 * and leaves its buffer alone; with 2 ranks only rank 0 aborts and rank 1's pending
 * request learns of it from the notice. */
static int test_abort_fails_pending_requests_on_every_rank(void)
{
    sc_comm_t *sub = NULL;
    sc_request_t *req = NULL;
    sc_status_t st;

    st = sc_comm_split(g_world, 0, g_rank, &sub);
    CHECK(st == SC_SUCCESS && sub, "split: %s", sc_last_error());
    memset(g_out, OUT_FILL, sizeof(g_out));
    /* A receive nobody will ever match. */
    st = sc_recv(g_out, 16, SC_INT32, sc_comm_rank(sub), sub, NULL, &req);
    CHECK(st == SC_SUCCESS, "recv: %s", sc_last_error());
    CHECK(sc_test(req) == SC_IN_PROGRESS, "an unmatched receive completed");
    /* Every rank's receive is pending before rank 0 aborts. */
    CHECK(sc_barrier(g_world, NULL) == SC_SUCCESS, "world barrier: %s", sc_last_error());
    if (g_rank == 0)
        CHECK(sc_comm_abort(sub) == SC_SUCCESS, "abort: %s", sc_last_error());
    prime_last_error();
    st = sc_wait(req);
    CHECK(st == SC_ERR_ABORTED, "the pending receive ended with %s, expected SC_ERR_ABORTED",
          sc_status_string(st));
    CHECK(sc_last_error()[0] && !strstr(sc_last_error(), "__primed__"),
          "sc_wait set no sentence");
    CHECK(sc_test(req) == SC_ERR_ABORTED, "sc_test after the end gave another status");
    sc_request_free(req);
    for (size_t i = 0; i < sizeof(g_out); i++)
        CHECK(g_out[i] == OUT_FILL, "byte %zu of the aborted receive's buffer was written", i);
    CHECK(sc_comm_destroy(sub) == SC_SUCCESS, "destroy: %s", sc_last_error());
    CHECK(sc_barrier(g_world, NULL) == SC_SUCCESS, "world barrier: %s", sc_last_error());
    return 0;
}

static int test_split_without_output_is_invalid_arg(void)
{
    sc_comm_t *const sentinel = (sc_comm_t *)(uintptr_t)0x5c5c5c50;
    sc_comm_t *sub = sentinel;

    prime_last_error();
    CHECK(sc_comm_split(g_world, 0, 0, NULL) == SC_ERR_INVALID_ARG, "split with sub NULL");
    CHECK(strstr(sc_last_error(), "sc_comm_split"), "sentence: %s", sc_last_error());
    CHECK(sc_barrier(g_world, NULL) == SC_SUCCESS, "world barrier: %s", sc_last_error());
    if (g_size > 1) {
        /* Rank 1 alone passes no sub: every rank fails at once, naming it, and makes
         * nothing (the others used to go on and fail at their next call). */
        if (g_rank == 1) {
            CHECK(sc_comm_split(g_world, 0, 0, NULL) == SC_ERR_INVALID_ARG, "sub NULL");
            CHECK(strstr(sc_last_error(), "sub (output) is NULL"), "sentence: %s",
                  sc_last_error());
        } else {
            CHECK(sc_comm_split(g_world, 0, 0, &sub) == SC_ERR_INVALID_ARG,
                  "a split beside a refused one: %s", sc_last_error());
            CHECK(strstr(sc_last_error(), "rank 1's call was refused"), "sentence: %s",
                  sc_last_error());
            CHECK(sub == sentinel, "a failed split wrote *sub");
        }
        CHECK(sc_barrier(g_world, NULL) == SC_SUCCESS, "world barrier: %s",
              sc_last_error());
    }
    return 0;
}

static int test_comm_init_rejects_bad_arguments(void)
{
    sc_comm_t *const sentinel = (sc_comm_t *)(uintptr_t)0x5c5c5c50;
    sc_comm_config_t cfg = SC_COMM_CONFIG_INIT;
    sc_comm_t *comm = sentinel;

    CHECK(sc_comm_init(&cfg, NULL) == SC_ERR_INVALID_ARG, "init with comm NULL");
    cfg.rank = 3;
    cfg.world_size = 2;
    CHECK(sc_comm_init(&cfg, &comm) == SC_ERR_INVALID_ARG, "init with rank 3 of 2");
    CHECK(comm == sentinel, "a failed init wrote *comm");
    CHECK(sc_last_error()[0], "no sentence");
    return 0;
}

/* A field below its "unset" value is refused naming the field and the value, before any
 * rendezvous (timeout_s 1: a rendezvous would not take long to fail). */
static int comm_init_refuses(const sc_comm_config_t *cfg, const char *field,
                             const char *value)
{
    sc_comm_t *const sentinel = (sc_comm_t *)(uintptr_t)0x5c5c5c50;
    sc_comm_t *comm = sentinel;
    sc_status_t st;

    prime_last_error();
    st = sc_comm_init(cfg, &comm);
    if (st == SC_SUCCESS && comm != sentinel)
        sc_comm_destroy(comm);
    CHECK(st == SC_ERR_INVALID_ARG, "init with %s %s: %s (%s)", field, value,
          sc_status_string(st), sc_last_error());
    CHECK(comm == sentinel, "a failed init wrote *comm");
    CHECK(strstr(sc_last_error(), field) && strstr(sc_last_error(), value),
          "sentence '%s' lacks '%s' or '%s'", sc_last_error(), field, value);
    return 0;
}

static int test_comm_init_rejects_out_of_range_fields(void)
{
    /* Each int field below its unset value (-1), one at a time. */
    static const struct {
        const char *field, *value;
        size_t off;
        int bad;
    } ints[] = {
        {"config.rank", "-2", offsetof(sc_comm_config_t, rank), -2},
        {"config.world_size", "-5", offsetof(sc_comm_config_t, world_size), -5},
        {"config.local_rank", "-3", offsetof(sc_comm_config_t, local_rank), -3},
        {"config.local_size", "-4", offsetof(sc_comm_config_t, local_size), -4},
        {"config.master_port", "-29500", offsetof(sc_comm_config_t, master_port), -29500},
        {"config.device", "-2", offsetof(sc_comm_config_t, device), -2}};
    sc_comm_config_t cfg = SC_COMM_CONFIG_INIT;

    cfg.timeout_s = 1.0;
    for (size_t i = 0; i < NELEM(ints); i++) {
        sc_comm_config_t c = cfg;
        memcpy((char *)&c + ints[i].off, &ints[i].bad, sizeof(int));
        RUN(comm_init_refuses(&c, ints[i].field, ints[i].value));
    }
    cfg.timeout_s = -1.0;
    RUN(comm_init_refuses(&cfg, "config.timeout_s", "-1"));
    cfg.timeout_s = (double)NAN;
    RUN(comm_init_refuses(&cfg, "config.timeout_s", "nan"));
    cfg.timeout_s = 1.0;
    cfg.bind = (sc_bind_t)3;
    RUN(comm_init_refuses(&cfg, "config.bind", "3"));
    cfg.bind = (sc_bind_t)-1;
    RUN(comm_init_refuses(&cfg, "config.bind", "-1"));
    cfg.bind = SC_BIND_DEFAULT;
    cfg.rank = 0;
    cfg.world_size = 1;
    cfg.local_rank = 0;
    cfg.local_size = 2;
    RUN(comm_init_refuses(&cfg, "local size 2", "world size 1"));
    return 0;
}

/* ---- memory kinds ---------------------------------------------------------------------- */

static int test_memory_kind_without_kind_writes_nothing(void)
{
    int x = 0, device = 12345;

    prime_last_error();
    CHECK(sc_memory_kind(&x, NULL, &device) == SC_ERR_INVALID_ARG, "kind NULL accepted");
    CHECK(strstr(sc_last_error(), "sc_memory_kind") && strstr(sc_last_error(), "kind"),
          "sentence: %s", sc_last_error());
    CHECK(device == 12345, "*device was written (%d) on an error", device);
    return 0;
}

static int test_memory_kind_of_null_is_host(void)
{
    sc_mem_kind_t kind = SC_MEM_DEVICE;
    int device = 12345;

    CHECK_OK(sc_memory_kind(NULL, &kind, &device));
    CHECK(kind == SC_MEM_HOST && device == -1, "NULL is %s on %d", sc_mem_kind_name(kind),
          device);
    return 0;
}

/* Only what sc_host_alloc_pinned handed out, once: a stack pointer, a malloc'd one, a
 * pointer inside an allocation and a second free are refused and left alone. */
static int test_free_pinned_refuses_pointers_it_did_not_hand_out(void)
{
    void *pinned[3], *heap = malloc(64);
    int local = 0;
    void *bad[3] = {&local, heap, NULL};

    CHECK(heap, "malloc");
    for (int i = 0; i < 3; i++)
        CHECK_OK(sc_host_alloc_pinned(64u << i, &pinned[i]));
    bad[2] = (char *)pinned[1] + 8;
    for (int i = 0; i < 3; i++) {
        prime_last_error();
        CHECK(sc_host_free_pinned(bad[i]) == SC_ERR_INVALID_ARG, "pointer %d accepted", i);
        CHECK(strstr(sc_last_error(), "sc_host_free_pinned") &&
                  strstr(sc_last_error(), "sc_host_alloc_pinned"), "sentence: %s",
              sc_last_error());
    }
    memset(pinned[1], 1, 128); /* still ours after the refusal inside it */
    CHECK_OK(sc_host_free_pinned(pinned[1]));
    CHECK(sc_host_free_pinned(pinned[1]) == SC_ERR_INVALID_ARG, "a second free accepted");
    CHECK_OK(sc_host_free_pinned(pinned[0]));
    CHECK_OK(sc_host_free_pinned(pinned[2]));
    CHECK_OK(sc_host_free_pinned(NULL));
    free(heap);
    /* Many at once, freed out of order: the record grows and shrinks. */
    {
        enum { N = 300 };
        void *p[N];
        for (int i = 0; i < N; i++)
            CHECK_OK(sc_host_alloc_pinned(16, &p[i]));
        for (int i = 0; i < N; i += 2)
            CHECK_OK(sc_host_free_pinned(p[i]));
        for (int i = N - 1; i > 0; i -= 2)
            CHECK_OK(sc_host_free_pinned(p[i]));
        for (int i = 0; i < N; i++)
            CHECK(sc_host_free_pinned(p[i]) == SC_ERR_INVALID_ARG, "%d freed twice", i);
    }
    return 0;
}

/* Splits past the 4095 context ids a process has (a negative color uses one up too)
 * reuse the ids of communicators that are gone: each succeeds, a communicator made then
 * works, and so does the parent. (When 4095 are live at once the next split fails on
 * every rank; each live one holds its staging memory, more than this machine has for
 * 4095, so that is not tested.) */
static int test_split_past_the_id_count_reuses_ids(void)
{
    sc_comm_t *sub = NULL;
    int32_t x = 1, y = 0;
    int made = 0;

    while (made < 5000 && sc_comm_split(g_world, -1, 0, &sub) == SC_SUCCESS && !sub)
        made++;
    CHECK(made == 5000, "%d splits succeeded, not 5000: %s", made, sc_last_error());
    CHECK_OK(sc_comm_split(g_world, 0, g_rank, &sub));
    CHECK(sub != NULL, "color 0 gave no communicator");
    CHECK_OK(sc_allreduce(&x, &y, 1, SC_INT32, SC_SUM, sub, NULL, NULL));
    CHECK(y == g_size, "sum over the new communicator %d", (int)y);
    CHECK_OK(sc_comm_destroy(sub));
    y = 0;
    CHECK_OK(sc_allreduce(&x, &y, 1, SC_INT32, SC_SUM, g_world, NULL, NULL));
    CHECK(y == g_size, "sum %d", (int)y);
    return 0;
}

/* ---- fork -------------------------------------------------------------------------------- */

/* On rank 0, runs child_ok in a child forked now and asserts that it returned nonzero;
 * then every rank asserts that the parent's communicator still sums. */
static int check_forked_child_then_sum(int (*child_ok)(void))
{
    int32_t x = g_rank + 1, y = 0;
    int status = 0;
    pid_t pid;

    if (g_rank == 0) {
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        CHECK(pid >= 0, "fork failed");
        if (pid == 0)
            _exit(child_ok() ? 0 : 1);
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child was not refused");
    }
    CHECK_OK(sc_allreduce(&x, &y, 1, SC_INT32, SC_SUM, g_world, NULL, NULL));
    CHECK(y == g_size * (g_size + 1) / 2, "sum %d", (int)y);
    return 0;
}

static int child_is_refused_the_parents_communicator(void)
{
    int32_t x = 1, y = 0;
    int ok = sc_allreduce(&x, &y, 1, SC_INT32, SC_SUM, g_world, NULL, NULL) ==
                 SC_ERR_INVALID_COMM &&
             strstr(sc_last_error(), "is a fork of it") &&
             sc_comm_destroy(g_world) == SC_ERR_INVALID_COMM &&
             sc_barrier(g_world, NULL) == SC_ERR_INVALID_COMM && y == 0;

    if (!ok)
        fprintf(stderr, "child: %s\n", sc_last_error());
    return ok;
}

/* A child forked after init (a data loader's worker) is refused every call on the
 * parent's communicator, destroy included, without touching it; the parent's
 * communicator goes on working. */
static int test_forked_child_cannot_use_the_communicator(void)
{
    return check_forked_child_then_sum(child_is_refused_the_parents_communicator);
}

static int child_is_refused_a_communicator_of_its_own(void)
{
    sc_comm_config_t cfg = SC_COMM_CONFIG_INIT;
    sc_comm_t *own = NULL;
    char parent[64];
    sc_status_t st;
    int ok;

    alarm(20); /* a hang fails the child */
    cfg.rank = 0;
    cfg.world_size = 1;
    cfg.local_rank = 0;
    cfg.local_size = 1;
    cfg.bind = SC_BIND_NONE;
    snprintf(parent, sizeof(parent), "was forked from process %d while", (int)getppid());
    st = sc_comm_init(&cfg, &own);
    ok = st == SC_ERR_UNSUPPORTED && own == NULL && strstr(sc_last_error(), parent) &&
         strstr(sc_last_error(), "'spawn'");
    if (!ok)
        fprintf(stderr, "child: %s: %s\n", sc_status_string(st), sc_last_error());
    return ok;
}

/* A child forked while the parent has a communicator cannot create one of its own: UCX
 * supports no use in a child forked after its initialisation, and the transport's
 * creation there hung now and then (about one child in a hundred, while the parent's
 * progress thread ran collectives: in a UCX lock its async thread held at the fork).
 * sc_comm_init refuses at once with SC_ERR_UNSUPPORTED, naming the parent, and writes
 * nothing; the parent's communicator goes on. A world of one rank, from the
 * configuration alone. */
static int test_forked_child_cannot_create_a_communicator(void)
{
    return check_forked_child_then_sum(child_is_refused_a_communicator_of_its_own);
}

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A request still pending when the process forked: in the child, sc_wait and sc_test
 * refuse it at once and sc_request_free only frees it, so that the parent's communicator
 * is untouched on every rank. (The child used to wait for SC_TIMEOUT on a copy that
 * nothing completes, then tell the peers that the op had failed: rank 1's next call
 * failed while rank 0's succeeded.) A receive from rank 1, which sends only after the
 * child exited, keeps the request pending across the fork. */
static int test_forked_child_cannot_wait_for_a_pending_request(void)
{
    int32_t go = 1, got = 0, x = g_rank + 1, y = 0;
    sc_request_t *req = NULL;
    int status = 0;
    pid_t pid;

    if (g_rank == 0) {
        CHECK_OK(sc_recv(&got, 1, SC_INT32, 1, g_world, NULL, &req));
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        CHECK(pid >= 0, "fork failed");
        if (pid == 0) {
            double t0 = now_s();
            int ok = sc_wait(req) == SC_ERR_INVALID_COMM &&
                     strstr(sc_last_error(), "is a fork of it") &&
                     sc_test(req) == SC_ERR_INVALID_COMM && now_s() - t0 < 2.0;
            if (!ok)
                fprintf(stderr, "child: %s after %.1f s\n", sc_last_error(), now_s() - t0);
            sc_request_free(req);
            _exit(ok ? 0 : 1);
        }
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child was not refused");
        CHECK_OK(sc_send(&go, 1, SC_INT32, 1, g_world, NULL, NULL));
        CHECK_OK(sc_wait(req));
        sc_request_free(req);
        CHECK(got == 7, "received %d", (int)got);
    } else if (g_rank == 1) {
        CHECK_OK(sc_recv(&got, 1, SC_INT32, 0, g_world, NULL, NULL));
        go = 7;
        CHECK_OK(sc_send(&go, 1, SC_INT32, 0, g_world, NULL, NULL));
    }
    CHECK_OK(sc_barrier(g_world, NULL));
    CHECK_OK(sc_allreduce(&x, &y, 1, SC_INT32, SC_SUM, g_world, NULL, NULL));
    CHECK(y == g_size * (g_size + 1) / 2, "sum %d", (int)y);
    return 0;
}

/* ---- requests ------------------------------------------------------------------------- */

/* A request keeps its final status after its communicator (the process's last, so the
 * transport goes with it) is destroyed: wait, test and free read only the request
 * (ASan saw sc_wait write the freed transport). Destroys g_world. */
static int test_wait_after_destroy_returns_the_final_status(void)
{
    float x[4] = {1, 2, 3, 4}, y[4];
    sc_request_t *done = NULL, *pending = NULL;

    CHECK_OK(sc_allreduce(x, y, 4, SC_FLOAT32, SC_SUM, g_world, NULL, &done));
    CHECK_OK(sc_wait(done));
    CHECK_OK(sc_allreduce(x, x, 4, SC_FLOAT32, SC_MAX, g_world, NULL, &pending));
    CHECK_OK(sc_comm_destroy(g_world)); /* waits for the pending one */
    g_world = NULL;
    for (int i = 0; i < 2; i++) {
        sc_request_t *req = i ? pending : done;
        CHECK(sc_wait(req) == SC_SUCCESS, "sc_wait after destroy: %s", sc_last_error());
        CHECK(sc_test(req) == SC_SUCCESS, "sc_test after destroy: %s", sc_last_error());
        CHECK(sc_wait(req) == SC_SUCCESS, "a second sc_wait: %s", sc_last_error());
        sc_request_free(req);
    }
    CHECK(y[3] == 4.0f * (float)g_size && x[3] == 4.0f, "results %g %g", y[3], x[3]);
    return 0;
}

static int test_wait_and_test_reject_a_null_request(void)
{
    prime_last_error();
    CHECK(sc_wait(NULL) == SC_ERR_INVALID_ARG, "sc_wait(NULL)");
    CHECK(strstr(sc_last_error(), "sc_wait"), "sentence: %s", sc_last_error());
    prime_last_error();
    CHECK(sc_test(NULL) == SC_ERR_INVALID_ARG, "sc_test(NULL)");
    CHECK(strstr(sc_last_error(), "sc_test"), "sentence: %s", sc_last_error());
    sc_request_free(NULL); /* a no-op */
    return 0;
}

/* ---- rank-dependent checks (meaningful with 2 ranks) -------------------------------------- */

/* sendbuf matters on the root only: NULL there is an error (raised before anything is
 * sent, so the other ranks take no part), NULL elsewhere is fine. */
static int test_broadcast_null_sendbuf_is_an_error_on_the_root_only(void)
{
    int root = g_size - 1;
    int32_t data[8], out[8];
    sc_status_t st;

    if (g_rank == root) {
        call_t c = call_valid(K_BROADCAST, g_world);
        c.send = NULL;
        c.root = root;
        RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, "sendbuf"));
    }
    for (int i = 0; i < 8; i++)
        data[i] = 1000 * root + i;
    memset(out, 0, sizeof(out));
    st = sc_broadcast(g_rank == root ? data : NULL, out, 8, SC_INT32, root, g_world, NULL, NULL);
    CHECK(st == SC_SUCCESS, "broadcast with NULL sendbuf off the root: %s", sc_last_error());
    for (int i = 0; i < 8; i++)
        CHECK(out[i] == 1000 * root + i, "index %d is %d", i, out[i]);
    return 0;
}

/* recvbuf matters on the root only: NULL there is an error, NULL elsewhere is fine. */
static int test_reduce_null_recvbuf_is_an_error_on_the_root_only(void)
{
    int root = g_size - 1;
    int64_t mine[3] = {g_rank + 1, 10 * (g_rank + 1), -(g_rank + 1)}, out[3] = {7, 7, 7};
    int64_t n = g_size, tri = n * (n + 1) / 2;
    sc_status_t st;

    if (g_rank == root) {
        call_t c = call_valid(K_REDUCE, g_world);
        c.recv = NULL;
        c.root = root;
        RUN(expect_rejected(&c, SC_ERR_INVALID_ARG, "recvbuf"));
    }
    st = sc_reduce(mine, g_rank == root ? out : NULL, 3, SC_INT64, SC_SUM, root, g_world, NULL,
                   NULL);
    CHECK(st == SC_SUCCESS, "reduce with NULL recvbuf off the root: %s", sc_last_error());
    if (g_rank == root)
        CHECK(out[0] == tri && out[1] == 10 * tri && out[2] == -tri, "got %lld %lld %lld",
              (long long)out[0], (long long)out[1], (long long)out[2]);
    else
        CHECK(out[0] == 7 && out[1] == 7 && out[2] == 7, "a non-root's out was written");
    return 0;
}

/* ---- names and sizes -------------------------------------------------------------------- */

/* The library loaded says its version, the headers' one (built from one tree), as one
 * number 10000 * major + 100 * minor + patch. */
static int test_version_of_the_library_is_the_headers(void)
{
    CHECK(SC_VERSION_CODE == SC_VERSION_MAJOR * 10000 + SC_VERSION_MINOR * 100 +
                                 SC_VERSION_PATCH,
          "SC_VERSION_CODE is %d", SC_VERSION_CODE);
    CHECK(sc_version() == SC_VERSION_CODE, "sc_version() is %d, the headers say %d",
          sc_version(), SC_VERSION_CODE);
    return 0;
}

static int test_status_string_names_every_status(void)
{
    struct {
        sc_status_t st;
        const char *name;
    } all[] = {
        {SC_SUCCESS, "SC_SUCCESS"},
        {SC_IN_PROGRESS, "SC_IN_PROGRESS"},
        {SC_ERR_INVALID_ARG, "SC_ERR_INVALID_ARG"},
        {SC_ERR_UNSUPPORTED, "SC_ERR_UNSUPPORTED"},
        {SC_ERR_NO_MEMORY, "SC_ERR_NO_MEMORY"},
        {SC_ERR_TIMEOUT, "SC_ERR_TIMEOUT"},
        {SC_ERR_PEER_FAILED, "SC_ERR_PEER_FAILED"},
        {SC_ERR_MISMATCH, "SC_ERR_MISMATCH"},
        {SC_ERR_ABORTED, "SC_ERR_ABORTED"},
        {SC_ERR_INVALID_COMM, "SC_ERR_INVALID_COMM"},
        {SC_ERR_TRANSPORT, "SC_ERR_TRANSPORT"},
        {SC_ERR_SYSTEM, "SC_ERR_SYSTEM"},
        {SC_ERR_INTERNAL, "SC_ERR_INTERNAL"},
        {SC_ERR_DEVICE, "SC_ERR_DEVICE"},
    };
    sc_status_t unknown[] = {(sc_status_t)42, (sc_status_t)-13, (sc_status_t)INT_MIN};

    for (size_t i = 0; i < NELEM(all); i++) {
        const char *s = sc_status_string(all[i].st);
        CHECK(s && strcmp(s, all[i].name) == 0, "status %d is \"%s\", expected %s",
              (int)all[i].st, s ? s : "(null)", all[i].name);
    }
    for (size_t i = 0; i < NELEM(unknown); i++) {
        const char *s = sc_status_string(unknown[i]);
        CHECK(s && s[0], "status %d has no name", (int)unknown[i]);
        for (size_t j = 0; j < NELEM(all); j++)
            CHECK(strcmp(s, all[j].name) != 0, "unknown status %d is named %s",
                  (int)unknown[i], s);
    }
    return 0;
}

static int test_dtype_from_name_accepts_canonical_and_nccl_tests_names(void)
{
    struct {
        const char *name;
        sc_dtype_t dtype;
    } ok[] = {
        /* nccl-tests' -d spellings */
        {"int8", SC_INT8}, {"uint8", SC_UINT8}, {"int32", SC_INT32}, {"int64", SC_INT64},
        {"half", SC_FLOAT16}, {"float", SC_FLOAT32}, {"double", SC_FLOAT64},
        {"bfloat16", SC_BFLOAT16},
        /* canonical names */
        {"float16", SC_FLOAT16}, {"float32", SC_FLOAT32}, {"float64", SC_FLOAT64},
    };

    for (size_t i = 0; i < NELEM(ok); i++) {
        sc_dtype_t d = (sc_dtype_t)77;
        sc_status_t st = sc_dtype_from_name(ok[i].name, &d);
        CHECK(st == SC_SUCCESS && d == ok[i].dtype, "'%s' gave %s, dtype %d", ok[i].name,
              sc_status_string(st), (int)d);
    }
    return 0;
}

static int test_dtype_from_name_rejects_unknown_names(void)
{
    /* uint32/uint64 are nccl-tests types shardcomm does not have. */
    const char *bad[] = {"uint32", "uint64", "", "Float", "float32 ", "int", "all"};

    for (size_t i = 0; i < NELEM(bad); i++) {
        sc_dtype_t d = (sc_dtype_t)77;
        prime_last_error();
        CHECK(sc_dtype_from_name(bad[i], &d) == SC_ERR_INVALID_ARG, "'%s' accepted", bad[i]);
        CHECK(d == (sc_dtype_t)77, "'%s' wrote the output", bad[i]);
        CHECK(!strstr(sc_last_error(), "__primed__") && strstr(sc_last_error(), bad[i]),
              "the sentence does not quote '%s': %s", bad[i], sc_last_error());
    }
    {
        sc_dtype_t d = (sc_dtype_t)77;
        CHECK(sc_dtype_from_name(NULL, &d) == SC_ERR_INVALID_ARG && d == (sc_dtype_t)77,
              "NULL name");
        CHECK(sc_dtype_from_name("float", NULL) == SC_ERR_INVALID_ARG, "NULL output");
    }
    return 0;
}

static int test_op_from_name_accepts_every_op_and_rejects_others(void)
{
    const char *names[] = {"sum", "prod", "min", "max", "avg"};
    sc_op_t ops[] = {SC_SUM, SC_PROD, SC_MIN, SC_MAX, SC_AVG};
    const char *bad[] = {"mean", "SUM", "", "product"};

    for (size_t i = 0; i < NELEM(names); i++) {
        sc_op_t op = (sc_op_t)77;
        CHECK(sc_op_from_name(names[i], &op) == SC_SUCCESS && op == ops[i], "'%s'", names[i]);
        CHECK(strcmp(sc_op_name(ops[i]), names[i]) == 0, "name of op %d", (int)ops[i]);
    }
    for (size_t i = 0; i < NELEM(bad); i++) {
        sc_op_t op = (sc_op_t)77;
        prime_last_error();
        CHECK(sc_op_from_name(bad[i], &op) == SC_ERR_INVALID_ARG, "'%s' accepted", bad[i]);
        CHECK(op == (sc_op_t)77, "'%s' wrote the output", bad[i]);
        CHECK(!strstr(sc_last_error(), "__primed__"), "no sentence for '%s'", bad[i]);
    }
    CHECK(sc_op_from_name(NULL, NULL) == SC_ERR_INVALID_ARG, "NULL arguments");
    CHECK(strcmp(sc_op_name((sc_op_t)99), "unknown") == 0, "name of op 99");
    return 0;
}

static int test_dtype_size_and_name_of_every_dtype(void)
{
    struct {
        sc_dtype_t d;
        size_t size;
        const char *name;
    } all[] = {{SC_FLOAT32, 4, "float32"}, {SC_FLOAT64, 8, "float64"},
               {SC_FLOAT16, 2, "float16"}, {SC_BFLOAT16, 2, "bfloat16"},
               {SC_INT8, 1, "int8"},       {SC_UINT8, 1, "uint8"},
               {SC_INT32, 4, "int32"},     {SC_INT64, 8, "int64"}};

    for (size_t i = 0; i < NELEM(all); i++) {
        sc_dtype_t back = (sc_dtype_t)77;
        CHECK(sc_dtype_size(all[i].d) == all[i].size, "size of %s", all[i].name);
        CHECK(strcmp(sc_dtype_name(all[i].d), all[i].name) == 0, "name of dtype %d",
              (int)all[i].d);
        CHECK(sc_dtype_from_name(sc_dtype_name(all[i].d), &back) == SC_SUCCESS &&
                  back == all[i].d, "round trip of %s", all[i].name);
    }
    CHECK(sc_dtype_size((sc_dtype_t)99) == 0 && sc_dtype_size((sc_dtype_t)-1) == 0,
          "size of an unknown dtype");
    CHECK(strcmp(sc_dtype_name((sc_dtype_t)99), "unknown") == 0, "name of dtype 99");
    return 0;
}

/* ---- main ---------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int (*fn)(void);
} test_t;

#define T(name) {#name, test_##name}
static const test_t tests[] = {
    T(null_sendbuf_with_count_is_invalid_arg),
    T(null_recvbuf_with_count_is_invalid_arg),
    T(overlapping_buffers_are_invalid_arg),
    T(in_place_overlap_names_the_rank_s_block),
    T(misaligned_buffers_are_invalid_arg),
    T(zero_count_with_null_buffers_succeeds),
    T(count_overflow_is_invalid_arg),
    T(unknown_dtype_is_invalid_arg),
    T(unknown_op_is_invalid_arg),
    T(avg_on_integer_dtypes_is_invalid_arg_naming_avg),
    T(root_out_of_range_is_invalid_arg),
    T(peer_out_of_range_is_invalid_arg),
    T(blocking_receive_from_itself_with_no_send_is_invalid_arg),
    T(stream_with_host_buffers_is_refused),
    T(null_comm_is_invalid_comm),
    T(destroyed_comm_is_invalid_comm),
    T(aborted_comm_calls_fail_with_aborted),
    T(abort_fails_pending_requests_on_every_rank),
    T(split_without_output_is_invalid_arg),
    T(comm_init_rejects_bad_arguments),
    T(comm_init_rejects_out_of_range_fields),
    T(memory_kind_without_kind_writes_nothing),
    T(memory_kind_of_null_is_host),
    T(free_pinned_refuses_pointers_it_did_not_hand_out),
    T(wait_and_test_reject_a_null_request),
    T(wait_after_destroy_returns_the_final_status),
    T(forked_child_cannot_use_the_communicator),
    T(forked_child_cannot_wait_for_a_pending_request),
    T(forked_child_cannot_create_a_communicator),
    T(split_past_the_id_count_reuses_ids),
    T(broadcast_null_sendbuf_is_an_error_on_the_root_only),
    T(reduce_null_recvbuf_is_an_error_on_the_root_only),
    T(version_of_the_library_is_the_headers),
    T(status_string_names_every_status),
    T(dtype_from_name_accepts_canonical_and_nccl_tests_names),
    T(dtype_from_name_rejects_unknown_names),
    T(op_from_name_accepts_every_op_and_rejects_others),
    T(dtype_size_and_name_of_every_dtype),
};
#undef T

int main(int argc, char **argv)
{
    int failed = 0, ran = 0;
    sc_status_t st;

    if (argc > 2) {
        fprintf(stderr, "usage: test_api_args [TEST]\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof(g_in); i++)
        g_in[i] = (uint8_t)i;
    st = sc_comm_init_from_env(&g_world);
    if (st != SC_SUCCESS) {
        fprintf(stderr, "sc_comm_init_from_env: %s: %s\n", sc_status_string(st), sc_last_error());
        return 1;
    }
    g_rank = sc_comm_rank(g_world);
    g_size = sc_comm_size(g_world);
    for (size_t i = 0; i < NELEM(tests); i++) {
        int rc;
        if (argc == 2 && strcmp(argv[1], tests[i].name) != 0)
            continue;
        rc = tests[i].fn();
        ran++;
        failed |= rc;
        printf("%s: %s (%d ranks)\n", rc ? "FAIL" : "PASS", tests[i].name, g_size);
    }
    st = g_world ? sc_comm_destroy(g_world) : SC_SUCCESS; /* NULL: a test destroyed it */
    if (st != SC_SUCCESS) {
        fprintf(stderr, "sc_comm_destroy: %s\n", sc_last_error());
        failed = 1;
    }
    if (!ran) {
        fprintf(stderr, "no test named %s\n", argv[1]);
        return 2;
    }
    return failed;
}
