/* Multi-rank behaviour beyond the data collectives' values: send/recv, several
 * non-blocking operations in flight at once, sc_comm_split and barrier. Run through
 * scrun: test_comm_ops PREFIX runs every test whose name starts with PREFIX. */
#define _GNU_SOURCE /* usleep */
#include <sched.h>
#include <unistd.h>

#include "coll_check.h"

/* Waits for and frees a request; a failure stops the run (see cc_check_status). */
static void cc_wait_free(cc_ctx_t *c, sc_request_t *req, const char *what)
{
    sc_status_t st = sc_wait(req);
    sc_request_free(req);
    cc_check_status(c, st, what);
}

static void cc_set_case(cc_ctx_t *c, const char *coll, sc_dtype_t d, sc_op_t op, size_t count)
{
    c->coll = coll;
    c->dtype = d;
    c->op = op;
    c->count = count;
    c->in_place = 0;
    c->root = -1;
}

/* ---- send / recv ------------------------------------------------------------------- */

/* Rank r sends to r+1 and receives from r-1, both posted before either is waited for;
 * in one size one rank sends to itself. Half the rounds post the receive first. The
 * counts straddle 512 bytes, up to which the payload rides with the header. */
static void test_sendrecv_ring_nonblocking(cc_ctx_t *c)
{
    static const sc_dtype_t dts[] = {SC_FLOAT64, SC_INT8, SC_BFLOAT16};
    size_t counts[] = {0, 1, (size_t)c->size + 1, 64, 65, 256, 257, 512, 513, 1000003};
    int right = (c->rank + 1) % c->size, left = (c->rank + c->size - 1) % c->size;
    int round = 0;

    for (size_t di = 0; di < CC_NELEM(dts); di++) {
        for (size_t ci = 0; ci < CC_NELEM(counts); ci++, round++) {
            sc_dtype_t d = dts[di];
            size_t n = counts[ci], es = cc_size(d);
            uint64_t seed = cc_mix(0x51d0 + (uint64_t)round), send_hash;
            sc_request_t *sreq = NULL, *rreq = NULL;
            cc_buf_t sb, rb;

            cc_set_case(c, "send/recv ring", d, CC_NO_OP, n);
            cc_buf_alloc(&sb, n * es, 0, 0);
            cc_buf_alloc(&rb, n * es, CC_FILL_BYTE, round % 2 ? es : 0);
            cc_fill_inputs(d, CC_NO_OP, seed, c->rank, sb.p, 0, n);
            send_hash = cc_hash_bytes(sb.p, sb.bytes);
            if (round % 2) {
                cc_check_status(c, sc_recv(rb.p, n, d, left, c->comm, NULL, &rreq), "sc_recv");
                cc_check_status(c, sc_send(sb.p, n, d, right, c->comm, NULL, &sreq), "sc_send");
            } else {
                cc_check_status(c, sc_send(sb.p, n, d, right, c->comm, NULL, &sreq), "sc_send");
                cc_check_status(c, sc_recv(rb.p, n, d, left, c->comm, NULL, &rreq), "sc_recv");
            }
            cc_wait_free(c, rreq, "sc_wait(recv)");
            cc_wait_free(c, sreq, "sc_wait(send)");
            for (size_t i = 0; i < n; i++) {
                uint64_t exp = cc_input(d, CC_NO_OP, seed, left, i), got = cc_load(d, rb.p, i);
                if (got != exp) {
                    cc_fail(c, "first wrong index %zu received from rank %d: got 0x%" PRIx64
                               ", expected 0x%" PRIx64, i, left, got, exp);
                    break;
                }
            }
            cc_buf_check_guards(c, &rb, "recv buffer");
            if (cc_hash_bytes(sb.p, sb.bytes) != send_hash)
                cc_fail(c, "the send buffer was modified");
            cc_buf_check_guards(c, &sb, "send buffer");
            cc_buf_free(&sb);
            cc_buf_free(&rb);
        }
    }
}

/* Several messages between the same pair match in the order they were posted. */
static void test_sendrecv_same_pair_matches_in_order(cc_ctx_t *c)
{
    enum { NMSG = 6, N = 257 };
    int right = (c->rank + 1) % c->size, left = (c->rank + c->size - 1) % c->size;
    int32_t out[NMSG][N], in[NMSG][N];
    sc_request_t *sreq[NMSG], *rreq[NMSG];

    cc_set_case(c, "send/recv in order", SC_INT32, CC_NO_OP, N);
    memset(in, CC_FILL_BYTE, sizeof(in));
    for (int m = 0; m < NMSG; m++)
        for (int i = 0; i < N; i++)
            out[m][i] = c->rank * 1000000 + m * 1000 + i;
    for (int m = 0; m < NMSG; m++)
        cc_check_status(c, sc_send(out[m], N, SC_INT32, right, c->comm, NULL, &sreq[m]),
                        "sc_send");
    for (int m = 0; m < NMSG; m++)
        cc_check_status(c, sc_recv(in[m], N, SC_INT32, left, c->comm, NULL, &rreq[m]),
                        "sc_recv");
    /* Waiting on the last receive first must not reorder the matching. */
    for (int m = NMSG - 1; m >= 0; m--)
        cc_wait_free(c, rreq[m], "sc_wait(recv)");
    for (int m = 0; m < NMSG; m++)
        cc_wait_free(c, sreq[m], "sc_wait(send)");
    for (int m = 0; m < NMSG; m++) {
        for (int i = 0; i < N; i++) {
            if (in[m][i] != left * 1000000 + m * 1000 + i) {
                cc_fail(c, "message %d from rank %d: index %d is %d, expected %d", m, left, i,
                        in[m][i], left * 1000000 + m * 1000 + i);
                return;
            }
        }
    }
}

/* Thousands of sends and receives in flight at once, every 500th one large (a
 * rendezvous among the small ones), waited for newest first: each completes with its
 * own data however deep in the engine's list of point-to-point ops it sits. */
static void test_sendrecv_many_in_flight(cc_ctx_t *c)
{
    enum { NMSG = 5000, SMALL = 1, LARGE = 70001, EVERY = 500 };
    int right = (c->rank + 1) % c->size, left = (c->rank + c->size - 1) % c->size;
    size_t total = 0, off;
    size_t *at = calloc(NMSG, sizeof(*at));
    int32_t *out, *in;
    sc_request_t **sreq = calloc(NMSG, sizeof(*sreq)), **rreq = calloc(NMSG, sizeof(*rreq));

    cc_set_case(c, "send/recv, 5000 in flight", SC_INT32, CC_NO_OP, NMSG);
    for (int m = 0; m < NMSG; m++) {
        at[m] = total;
        total += m % EVERY == EVERY - 1 ? LARGE : SMALL;
    }
    out = malloc(total * sizeof(*out));
    in = malloc(total * sizeof(*in));
    if (!at || !sreq || !rreq || !out || !in) {
        cc_fail(c, "out of memory");
        goto done;
    }
    memset(in, CC_FILL_BYTE, total * sizeof(*in));
    for (size_t i = 0; i < total; i++)
        out[i] = (int32_t)((uint32_t)c->rank * 2654435761u + (uint32_t)i);
    for (int m = 0; m < NMSG; m++) {
        size_t n = (m + 1 < NMSG ? at[m + 1] : total) - at[m];
        cc_check_status(c, sc_recv(in + at[m], n, SC_INT32, left, c->comm, NULL, &rreq[m]),
                        "sc_recv");
        cc_check_status(c, sc_send(out + at[m], n, SC_INT32, right, c->comm, NULL, &sreq[m]),
                        "sc_send");
    }
    for (int m = NMSG - 1; m >= 0; m--)
        cc_wait_free(c, rreq[m], "sc_wait(recv)");
    for (int m = NMSG - 1; m >= 0; m--)
        cc_wait_free(c, sreq[m], "sc_wait(send)");
    off = 0;
    for (int m = 0; m < NMSG; m++) {
        for (; off < (m + 1 < NMSG ? at[m + 1] : total); off++) {
            int32_t want = (int32_t)((uint32_t)left * 2654435761u + (uint32_t)off);
            if (in[off] != want) {
                cc_fail(c, "message %d from rank %d: element %zu is %d, expected %d", m, left,
                        off - at[m], in[off], want);
                goto done;
            }
        }
    }
done:
    free(at);
    free(sreq);
    free(rreq);
    free(out);
    free(in);
}

/* ---- several non-blocking operations in flight ----------------------------------------- */

/* Allreduce, broadcast, allgather, reduce_scatter, alltoall, reduce, a send/recv pair,
 * barrier and a large (ring) allreduce are issued back to back before any is waited
 * for; even ranks wait in reverse issue order, odd ranks poll the last one first. */
static void test_issue_order_nonblocking_mix(cc_ctx_t *c)
{
    enum { K = 1000, BIG = 300007 };
    int p = c->size, r = c->rank;
    int right = (r + 1) % p, left = (r + p - 1) % p;
    uint64_t seed = cc_mix(0x1550e);
    sc_request_t *req[10];
    const char *names[10] = {"allreduce", "broadcast", "allgather", "reduce_scatter",
                             "alltoall",  "reduce",    "send",      "recv",
                             "barrier",   "allreduce (large)"};
    int nreq = 0;
    float *ar_in = malloc(K * sizeof(float)), *ar_out = malloc(K * sizeof(float));
    int64_t *bc = malloc(K * sizeof(int64_t));
    int32_t *ag_in = malloc(K * sizeof(int32_t)), *ag_out = malloc((size_t)p * K * sizeof(int32_t));
    double *rs_in = malloc((size_t)p * K * sizeof(double)), *rs_out = malloc(K * sizeof(double));
    uint16_t *a2a_in = malloc((size_t)p * K * 2), *a2a_out = malloc((size_t)p * K * 2);
    int8_t *red_in = malloc(K), *red_out = malloc(K);
    int32_t *p2p_out = malloc(K * sizeof(int32_t)), *p2p_in = malloc(K * sizeof(int32_t));
    float *big_in = malloc(BIG * sizeof(float)), *big_out = malloc(BIG * sizeof(float));

    if (!ar_in || !ar_out || !bc || !ag_in || !ag_out || !rs_in || !rs_out || !a2a_in ||
        !a2a_out || !red_in || !red_out || !p2p_out || !p2p_in || !big_in || !big_out)
        exit(1);
    cc_set_case(c, "issue order", SC_FLOAT32, SC_SUM, K);
    cc_fill_inputs(SC_FLOAT32, SC_SUM, seed + 1, r, ar_in, 0, K);
    if (r == p - 1)
        cc_fill_inputs(SC_INT64, CC_NO_OP, seed + 2, r, bc, 0, K);
    else
        memset(bc, CC_FILL_BYTE, K * sizeof(int64_t));
    cc_fill_inputs(SC_INT32, CC_NO_OP, seed + 3, r, ag_in, 0, K);
    cc_fill_inputs(SC_FLOAT64, SC_SUM, seed + 4, r, rs_in, 0, (size_t)p * K);
    cc_fill_inputs(SC_FLOAT16, CC_NO_OP, seed + 5, r, a2a_in, 0, (size_t)p * K);
    cc_fill_inputs(SC_INT8, SC_MAX, seed + 6, r, red_in, 0, K);
    cc_fill_inputs(SC_INT32, CC_NO_OP, seed + 7, r, p2p_out, 0, K);
    cc_fill_inputs(SC_FLOAT32, SC_SUM, seed + 8, r, big_in, 0, BIG);

#define ISSUE(expr) cc_check_status(c, (expr), names[nreq]), nreq++
    ISSUE(sc_allreduce(ar_in, ar_out, K, SC_FLOAT32, SC_SUM, c->comm, NULL, &req[nreq]));
    ISSUE(sc_broadcast(bc, bc, K, SC_INT64, p - 1, c->comm, NULL, &req[nreq]));
    ISSUE(sc_allgather(ag_in, ag_out, K, SC_INT32, c->comm, NULL, &req[nreq]));
    ISSUE(sc_reduce_scatter(rs_in, rs_out, K, SC_FLOAT64, SC_SUM, c->comm, NULL, &req[nreq]));
    ISSUE(sc_alltoall(a2a_in, a2a_out, K, SC_FLOAT16, c->comm, NULL, &req[nreq]));
    ISSUE(sc_reduce(red_in, red_out, K, SC_INT8, SC_MAX, 0, c->comm, NULL, &req[nreq]));
    ISSUE(sc_send(p2p_out, K, SC_INT32, right, c->comm, NULL, &req[nreq]));
    ISSUE(sc_recv(p2p_in, K, SC_INT32, left, c->comm, NULL, &req[nreq]));
    ISSUE(sc_barrier(c->comm, &req[nreq]));
    ISSUE(sc_allreduce(big_in, big_out, BIG, SC_FLOAT32, SC_SUM, c->comm, NULL, &req[nreq]));
#undef ISSUE
    if (r % 2 == 0) {
        for (int i = nreq - 1; i >= 0; i--)
            cc_wait_free(c, req[i], names[i]);
    } else {
        sc_status_t st;
        while ((st = sc_test(req[nreq - 1])) == SC_IN_PROGRESS)
            sched_yield();
        cc_check_status(c, st, "sc_test of the last request");
        /* Issue order: the last one done means every earlier collective is done too. */
        for (int i = 0; i < nreq - 1; i++) {
            if (i == 6 || i == 7)
                continue; /* send/recv are not ordered with the collectives */
            st = sc_test(req[i]);
            if (st == SC_IN_PROGRESS)
                cc_fail(c, "%s (issued %d of %d) still pending after the last collective "
                           "completed", names[i], i + 1, nreq);
            else
                cc_check_status(c, st, names[i]);
        }
        for (int i = 0; i < nreq - 1; i++)
            cc_wait_free(c, req[i], names[i]);
        sc_request_free(req[nreq - 1]);
    }

    cc_set_case(c, "issue order: allreduce", SC_FLOAT32, SC_SUM, K);
    for (size_t i = 0; i < K; i++) {
        double exact;
        uint64_t e = cc_expect(SC_FLOAT32, SC_SUM, seed + 1, p, i, &exact);
        if (cc_load(SC_FLOAT32, ar_out, i) != e) {
            cc_fail(c, "index %zu: got 0x%" PRIx64 ", expected 0x%" PRIx64, i,
                    cc_load(SC_FLOAT32, ar_out, i), e);
            break;
        }
    }
    cc_set_case(c, "issue order: broadcast", SC_INT64, CC_NO_OP, K);
    for (size_t i = 0; i < K; i++) {
        if ((uint64_t)bc[i] != cc_input(SC_INT64, CC_NO_OP, seed + 2, p - 1, i)) {
            cc_fail(c, "index %zu differs from root %d's", i, p - 1);
            break;
        }
    }
    cc_set_case(c, "issue order: allgather", SC_INT32, CC_NO_OP, K);
    for (size_t i = 0; i < (size_t)p * K; i++) {
        uint64_t e = cc_input(SC_INT32, CC_NO_OP, seed + 3, (int)(i / K), i % K);
        if (cc_load(SC_INT32, ag_out, i) != e) {
            cc_fail(c, "index %zu differs from rank %zu's element %zu", i, i / K, i % K);
            break;
        }
    }
    cc_set_case(c, "issue order: reduce_scatter", SC_FLOAT64, SC_SUM, K);
    for (size_t i = 0; i < K; i++) {
        double exact;
        if (cc_load(SC_FLOAT64, rs_out, i) !=
            cc_expect(SC_FLOAT64, SC_SUM, seed + 4, p, (size_t)r * K + i, &exact)) {
            cc_fail(c, "index %zu is wrong", i);
            break;
        }
    }
    cc_set_case(c, "issue order: alltoall", SC_FLOAT16, CC_NO_OP, K);
    for (size_t i = 0; i < (size_t)p * K; i++) {
        if (cc_load(SC_FLOAT16, a2a_out, i) !=
            cc_input(SC_FLOAT16, CC_NO_OP, seed + 5, (int)(i / K), (size_t)r * K + i % K)) {
            cc_fail(c, "index %zu is wrong", i);
            break;
        }
    }
    cc_set_case(c, "issue order: reduce", SC_INT8, SC_MAX, K);
    for (size_t i = 0; r == 0 && i < K; i++) {
        double exact;
        if (cc_load(SC_INT8, red_out, i) != cc_expect(SC_INT8, SC_MAX, seed + 6, p, i, &exact)) {
            cc_fail(c, "index %zu is wrong on the root", i);
            break;
        }
    }
    cc_set_case(c, "issue order: recv", SC_INT32, CC_NO_OP, K);
    for (size_t i = 0; i < K; i++) {
        if (cc_load(SC_INT32, p2p_in, i) != cc_input(SC_INT32, CC_NO_OP, seed + 7, left, i)) {
            cc_fail(c, "index %zu differs from rank %d's", i, left);
            break;
        }
    }
    cc_set_case(c, "issue order: allreduce (large)", SC_FLOAT32, SC_SUM, BIG);
    for (size_t i = 0; i < BIG; i++) {
        double exact;
        uint64_t e = cc_expect(SC_FLOAT32, SC_SUM, seed + 8, p, i, &exact);
        if (cc_load(SC_FLOAT32, big_out, i) != e) {
            cc_fail(c, "index %zu: got 0x%" PRIx64 ", expected 0x%" PRIx64, i,
                    cc_load(SC_FLOAT32, big_out, i), e);
            break;
        }
    }
    free(ar_in);
    free(ar_out);
    free(bc);
    free(ag_in);
    free(ag_out);
    free(rs_in);
    free(rs_out);
    free(a2a_in);
    free(a2a_out);
    free(red_in);
    free(red_out);
    free(p2p_out);
    free(p2p_in);
    free(big_in);
    free(big_out);
}

/* 64 small allreduces on distinct buffers in flight at once, waited for in order. */
static void test_issue_order_many_small_allreduces(cc_ctx_t *c)
{
    enum { M = 64, N = 33 };
    int64_t in[M][N], out[M][N];
    sc_request_t *req[M];

    cc_set_case(c, "64 allreduces in flight", SC_INT64, SC_SUM, N);
    for (int m = 0; m < M; m++)
        cc_fill_inputs(SC_INT64, SC_SUM, cc_mix(0xa11 + (uint64_t)m), c->rank, in[m], 0, N);
    for (int m = 0; m < M; m++)
        cc_check_status(c, sc_allreduce(in[m], out[m], N, SC_INT64, SC_SUM, c->comm, NULL,
                                        &req[m]), "sc_allreduce");
    for (int m = 0; m < M; m++)
        cc_wait_free(c, req[m], "sc_wait");
    for (int m = 0; m < M; m++) {
        for (size_t i = 0; i < N; i++) {
            double exact;
            uint64_t e = cc_expect(SC_INT64, SC_SUM, cc_mix(0xa11 + (uint64_t)m), c->size, i,
                                   &exact);
            if ((uint64_t)out[m][i] != e) {
                cc_fail(c, "allreduce %d of %d, index %zu: got %" PRId64 ", expected %" PRId64,
                        m, M, i, out[m][i], (int64_t)e);
                return;
            }
        }
    }
}

/* ---- split ----------------------------------------------------------------------------- */

/* Checks sub's rank and size, and that an allgather of the members' parent ranks over
 * sub lists expect_members in sub-rank order. */
static void cc_check_sub(cc_ctx_t *c, sc_comm_t *sub, const int *expect_members, int n,
                         int my_sub_rank)
{
    int32_t mine = c->rank, *got;

    if (sc_comm_size(sub) != n || sc_comm_rank(sub) != my_sub_rank) {
        cc_fail(c, "sub-communicator is rank %d of %d, expected rank %d of %d",
                sc_comm_rank(sub), sc_comm_size(sub), my_sub_rank, n);
        return;
    }
    got = calloc((size_t)n, sizeof(int32_t));
    if (!got)
        exit(1);
    cc_check_status(c, sc_allgather(&mine, got, 1, SC_INT32, sub, NULL, NULL),
                    "sc_allgather on the sub-communicator");
    for (int i = 0; i < n; i++) {
        if (got[i] != expect_members[i]) {
            cc_fail(c, "sub-communicator rank %d is parent rank %d, expected %d", i, got[i],
                    expect_members[i]);
            break;
        }
    }
    free(got);
}

/* Even and odd colors, key -rank: each half in reverse parent order. */
static void test_split_even_odd_with_reversed_key(cc_ctx_t *c)
{
    int members[64], n = 0, me = -1;
    sc_comm_t *sub = NULL;
    int64_t sum = 0, expect = 0, mine = c->rank;

    cc_set_case(c, "split even/odd", SC_INT64, SC_SUM, 1);
    for (int q = c->size - 1; q >= 0; q--) {
        if (q % 2 != c->rank % 2)
            continue;
        if (q == c->rank)
            me = n;
        members[n++] = q;
        expect += q;
    }
    cc_check_status(c, sc_comm_split(c->comm, c->rank % 2, -c->rank, &sub), "sc_comm_split");
    if (!sub) {
        cc_fail(c, "a non-negative color gave no communicator");
        return;
    }
    cc_check_sub(c, sub, members, n, me);
    cc_check_status(c, sc_allreduce(&mine, &sum, 1, SC_INT64, SC_SUM, sub, NULL, NULL),
                    "sc_allreduce on the sub-communicator");
    if (sum != expect)
        cc_fail(c, "sum of the parent ranks over the sub-communicator is %" PRId64
                   ", expected %" PRId64, sum, expect);
    cc_check_status(c, sc_comm_destroy(sub), "sc_comm_destroy");
}

/* Rank 0 passes a negative color: it gets NULL, the others a communicator without it. */
static void test_split_negative_color_gets_null(cc_ctx_t *c)
{
    int members[64], n = 0;
    sc_comm_t *sentinel = (sc_comm_t *)&members, *sub = sentinel;

    cc_set_case(c, "split negative color", SC_INT32, CC_NO_OP, 0);
    for (int q = 1; q < c->size; q++)
        members[n++] = q;
    cc_check_status(c, sc_comm_split(c->comm, c->rank == 0 ? -1 : 7, 0, &sub), "sc_comm_split");
    if (c->rank == 0) {
        if (sub != NULL)
            cc_fail(c, "a negative color gave %p, expected NULL", (void *)sub);
        return;
    }
    if (sub == NULL || sub == sentinel) {
        cc_fail(c, "color 7 gave %p", (void *)sub);
        return;
    }
    cc_check_sub(c, sub, members, n, c->rank - 1);
    cc_check_status(c, sc_comm_destroy(sub), "sc_comm_destroy");
}

/* Equal keys keep the parent order. */
static void test_split_equal_keys_keep_parent_order(cc_ctx_t *c)
{
    int members[64];
    sc_comm_t *sub = NULL;

    cc_set_case(c, "split one color, equal keys", SC_INT32, CC_NO_OP, 0);
    for (int q = 0; q < c->size; q++)
        members[q] = q;
    cc_check_status(c, sc_comm_split(c->comm, 3, 5, &sub), "sc_comm_split");
    cc_check_sub(c, sub, members, c->size, c->rank);
    cc_check_status(c, sc_comm_destroy(sub), "sc_comm_destroy");
}

/* A split of a split; the inner communicator keeps working after the outer one is
 * destroyed. Outer: parity, key rank (sub rank q/2). Inner: (q/2)/2 as color. */
static void test_split_nested_outlives_its_parent(cc_ctx_t *c)
{
    int members[64], n = 0, me = -1;
    sc_comm_t *outer = NULL, *inner = NULL;
    int64_t mine = c->rank, sum = 0, expect = 0;

    cc_set_case(c, "nested split", SC_INT64, SC_SUM, 1);
    for (int q = 0; q < c->size; q++) {
        if (q % 2 != c->rank % 2 || (q / 2) / 2 != (c->rank / 2) / 2)
            continue;
        if (q == c->rank)
            me = n;
        members[n++] = q;
        expect += q;
    }
    cc_check_status(c, sc_comm_split(c->comm, c->rank % 2, c->rank, &outer), "sc_comm_split");
    cc_check_status(c, sc_comm_split(outer, sc_comm_rank(outer) / 2, sc_comm_rank(outer), &inner),
                    "sc_comm_split of the sub-communicator");
    cc_check_status(c, sc_comm_destroy(outer), "sc_comm_destroy(outer)");
    cc_check_sub(c, inner, members, n, me);
    cc_check_status(c, sc_allreduce(&mine, &sum, 1, SC_INT64, SC_SUM, inner, NULL, NULL),
                    "sc_allreduce on the inner communicator");
    if (sum != expect)
        cc_fail(c, "inner sum %" PRId64 ", expected %" PRId64, sum, expect);
    cc_check_status(c, sc_comm_destroy(inner), "sc_comm_destroy(inner)");
}

/* Collectives on the parent and on a sub-communicator in flight at the same time do
 * not mix their messages. */
static void test_split_sub_and_parent_in_flight_together(cc_ctx_t *c)
{
    enum { N = 5000 };
    sc_comm_t *sub = NULL;
    float *wi = malloc(N * 4), *wo = malloc(N * 4), *si = malloc(N * 4), *so = malloc(N * 4);
    sc_request_t *wr, *sr;
    int sub_n = (c->size - c->rank % 2 + 1) / 2; /* ranks of my parity */
    uint64_t wseed = cc_mix(0x301), sseed = cc_mix(0x302 + (uint64_t)(c->rank % 2));

    if (!wi || !wo || !si || !so)
        exit(1);
    cc_set_case(c, "split: parent and sub in flight", SC_FLOAT32, SC_SUM, N);
    cc_check_status(c, sc_comm_split(c->comm, c->rank % 2, c->rank, &sub), "sc_comm_split");
    cc_fill_inputs(SC_FLOAT32, SC_SUM, wseed, c->rank, wi, 0, N);
    cc_fill_inputs(SC_FLOAT32, SC_SUM, sseed, sc_comm_rank(sub), si, 0, N);
    cc_check_status(c, sc_allreduce(wi, wo, N, SC_FLOAT32, SC_SUM, c->comm, NULL, &wr),
                    "sc_allreduce on the parent");
    cc_check_status(c, sc_allreduce(si, so, N, SC_FLOAT32, SC_SUM, sub, NULL, &sr),
                    "sc_allreduce on the sub-communicator");
    cc_wait_free(c, sr, "sc_wait(sub)");
    cc_wait_free(c, wr, "sc_wait(parent)");
    for (size_t i = 0; i < N; i++) {
        double exact;
        uint64_t e = cc_expect(SC_FLOAT32, SC_SUM, wseed, c->size, i, &exact);
        if (cc_load(SC_FLOAT32, wo, i) != e) {
            cc_fail(c, "parent allreduce index %zu is wrong", i);
            break;
        }
    }
    for (size_t i = 0; i < N; i++) {
        double exact;
        if (cc_load(SC_FLOAT32, so, i) != cc_expect(SC_FLOAT32, SC_SUM, sseed, sub_n, i, &exact)) {
            cc_fail(c, "sub-communicator allreduce index %zu is wrong", i);
            break;
        }
    }
    cc_check_status(c, sc_comm_destroy(sub), "sc_comm_destroy");
    free(wi);
    free(wo);
    free(si);
    free(so);
}

/* ---- barrier --------------------------------------------------------------------------- */

/* No rank leaves a barrier before the last one entered it (CLOCK_MONOTONIC is the same
 * clock in every process of the machine). Each rank in turn arrives 50 ms late. */
static void test_barrier_waits_for_the_last_rank(cc_ctx_t *c)
{
    double *entered = calloc((size_t)c->size, sizeof(double));

    if (!entered)
        exit(1);
    cc_set_case(c, "barrier", SC_FLOAT64, CC_NO_OP, 0);
    for (int late = 0; late < c->size; late++) {
        double t_in, t_out, last = 0;

        if (c->rank == late)
            usleep(50000);
        t_in = cc_now();
        cc_check_status(c, sc_barrier(c->comm, NULL), "sc_barrier");
        t_out = cc_now();
        cc_check_status(c, sc_allgather(&t_in, entered, 1, SC_FLOAT64, c->comm, NULL, NULL),
                        "sc_allgather");
        for (int q = 0; q < c->size; q++)
            last = entered[q] > last ? entered[q] : last;
        if (t_out < last)
            cc_fail(c, "left the barrier %.6f s before rank %d (late) entered it", last - t_out,
                    late);
    }
    free(entered);
}

/* A non-blocking barrier stays pending while a rank has not entered it: the last rank
 * enters it only after every other rank has tested its request and told it so (a
 * message each). It slept 0.5 s instead, which a rank descheduled that long between its
 * barrier and its test (a loaded machine) would not have covered. */
static void test_barrier_nonblocking_pending_until_all_enter(cc_ctx_t *c)
{
    sc_request_t *req = NULL;
    sc_status_t st;
    int32_t tested = 1;

    cc_set_case(c, "barrier (non-blocking)", SC_FLOAT64, CC_NO_OP, 0);
    if (c->size < 2)
        return;
    cc_check_status(c, sc_barrier(c->comm, NULL), "sc_barrier");
    if (c->rank == c->size - 1) {
        for (int q = 0; q < c->size - 1; q++)
            cc_check_status(c, sc_recv(&tested, 1, SC_INT32, q, c->comm, NULL, NULL),
                            "sc_recv");
        cc_check_status(c, sc_barrier(c->comm, &req), "sc_barrier");
        cc_wait_free(c, req, "sc_wait(barrier)");
        return;
    }
    cc_check_status(c, sc_barrier(c->comm, &req), "sc_barrier");
    st = sc_test(req);
    if (st != SC_IN_PROGRESS)
        cc_fail(c, "sc_test gave %s before rank %d entered the barrier", sc_status_string(st),
                c->size - 1);
    cc_check_status(c, sc_send(&tested, 1, SC_INT32, c->size - 1, c->comm, NULL, NULL),
                    "sc_send");
    cc_wait_free(c, req, "sc_wait(barrier)");
}

/* ---- teardown ------------------------------------------------------------------------ */

/* Nothing here: main's last allreduce (of the failure counts) and sc_comm_destroy are
 * the test. Ranks that finish that allreduce first destroy their communicator and exit
 * while the others are still completing it; those must still succeed. */
static void test_teardown_right_after_a_collective(cc_ctx_t *c)
{
    (void)c;
}

/* ---- main -------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    void (*fn)(cc_ctx_t *);
} cc_test_t;

static const cc_test_t cc_tests[] = {
    {"sendrecv_ring_nonblocking", test_sendrecv_ring_nonblocking},
    {"sendrecv_same_pair_matches_in_order", test_sendrecv_same_pair_matches_in_order},
    {"sendrecv_many_in_flight", test_sendrecv_many_in_flight},
    {"issue_order_nonblocking_mix", test_issue_order_nonblocking_mix},
    {"issue_order_many_small_allreduces", test_issue_order_many_small_allreduces},
    {"split_even_odd_with_reversed_key", test_split_even_odd_with_reversed_key},
    {"split_negative_color_gets_null", test_split_negative_color_gets_null},
    {"split_equal_keys_keep_parent_order", test_split_equal_keys_keep_parent_order},
    {"split_nested_outlives_its_parent", test_split_nested_outlives_its_parent},
    {"split_sub_and_parent_in_flight_together", test_split_sub_and_parent_in_flight_together},
    {"barrier_waits_for_the_last_rank", test_barrier_waits_for_the_last_rank},
    {"barrier_nonblocking_pending_until_all_enter",
     test_barrier_nonblocking_pending_until_all_enter},
    {"teardown_right_after_a_collective", test_teardown_right_after_a_collective},
};

int main(int argc, char **argv)
{
    cc_ctx_t c = {0};
    int total = 0, ran = 0;
    double t0 = cc_now();

    if (argc != 2) {
        fprintf(stderr, "usage: test_comm_ops PREFIX  (runs the tests whose name starts "
                        "with PREFIX: sendrecv, issue_order, split, barrier, teardown, or a "
                        "full name)\n");
        return 2;
    }
    c.root = -1;
    c.coll = "sc_comm_init_from_env";
    cc_check_status(&c, sc_comm_init_from_env(&c.comm), "sc_comm_init_from_env");
    c.rank = sc_comm_rank(c.comm);
    c.size = sc_comm_size(c.comm);
    if (c.size > 64) {
        fprintf(stderr, "at most 64 ranks\n");
        return 2;
    }
    for (size_t i = 0; i < CC_NELEM(cc_tests); i++) {
        int before = c.failures;
        double t = cc_now();

        if (strncmp(cc_tests[i].name, argv[1], strlen(argv[1])) != 0)
            continue;
        cc_tests[i].fn(&c);
        ran++;
        if (c.rank == 0)
            printf("%s: %s (%.2f s)\n", cc_tests[i].name,
                   c.failures == before ? "PASS" : "FAIL", cc_now() - t);
    }
    c.coll = "final";
    total = cc_total_failures(&c);
    cc_check_status(&c, sc_comm_destroy(c.comm), "sc_comm_destroy");
    if (ran == 0) {
        fprintf(stderr, "no test starts with '%s'\n", argv[1]);
        return 2;
    }
    if (c.rank == 0)
        printf("%d tests on %d ranks, %d failures (%.2f s)\n", ran, c.size, total, cc_now() - t0);
    return total || c.failures ? 1 : 0;
}
