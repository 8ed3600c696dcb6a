/* Collectives on device buffers (cudaMalloc) and a CUDA stream: every collective x
 * dtype x op (avg on the float dtypes only) x in place / out of place x counts 0, 1, 7
 * and 1000003, each completed stream-ordered (req NULL, then cudaStreamSynchronize)
 * and with a request and sc_wait, on the test's stream or the legacy default stream;
 * results are copied back and compared with the references of coll_check.h. Then
 * device send/recv, sc_test on a device request that the stream holds back, and the
 * refusals of mixed host/device buffers and of a stream with host buffers.
 * Run through scrun (1 rank: NCCL where built; SC_NCCL=0: host-staged). Without a
 * usable GPU prints "SKIP: <reason>" and exits 77. */
#include <getopt.h>
#include <sched.h>
#include <unistd.h>

#include "coll_check.h"
#include "gpu_check.h"

#define GC_BIG_COUNT ((size_t)1000003)

static const size_t gc_counts[] = {0, 1, 7, GC_BIG_COUNT};

typedef enum { GC_STREAM_ORDERED = 0, GC_REQUEST_WAIT, GC_MODE_COUNT } gc_mode_t;

static const char *const gc_mode_names[GC_MODE_COUNT] = {"stream-ordered",
                                                         "request+sc_wait"};

typedef enum {
    GC_ALLREDUCE = 0,
    GC_REDUCE_SCATTER,
    GC_ALLGATHER,
    GC_BROADCAST,
    GC_REDUCE,
    GC_ALLTOALL,
    GC_COLL_COUNT
} gc_coll_t;

static const struct {
    const char *name;
    int reduces;
    int rooted;
    int same_everywhere; /* every rank holds the same result */
} gc_colls[GC_COLL_COUNT] = {
    [GC_ALLREDUCE] = {"allreduce", 1, 0, 1},     [GC_REDUCE_SCATTER] = {"reduce_scatter", 1, 0, 0},
    [GC_ALLGATHER] = {"allgather", 0, 0, 1},     [GC_BROADCAST] = {"broadcast", 0, 1, 1},
    [GC_REDUCE] = {"reduce", 1, 1, 0},           [GC_ALLTOALL] = {"alltoall", 0, 0, 0},
};

typedef struct {
    cc_ctx_t ctx;
    cudaStream_t stream; /* created by the test, non-blocking */
    uint64_t seed;
    int case_no;         /* picks root, stream, alignment and the NULL buffers */
    int cases_run;
    int verbose;
} gc_run_t;

/* Bit `bit` of a hash of the case number: the choices it makes vary independently of
 * the loops' order (dtype, op, count, in place, mode). */
static int gc_pick(int case_no, int bit)
{
    return (int)((cc_mix(0xca5e0000ull + (uint64_t)case_no) >> bit) & 1);
}

/* A CUDA call of the test itself: when it fails the run cannot go on. */
#define GPU_OK(c, call)                                                                  \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) {                                                         \
            cc_fail((c), "%s failed: %s (%s)", #call, cudaGetErrorString(e_),            \
                    cudaGetErrorName(e_));                                               \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* ---- device buffers with guard bytes ------------------------------------------- */

typedef struct {
    uint8_t *base, *p; /* device memory; p is what the library sees */
    size_t bytes;
    size_t lead;       /* guard bytes before p */
} gd_buf_t;

/* bytes usable at p, filled from host (or with CC_FILL_BYTE when host is NULL);
 * misalign shifts p off the 256-byte alignment of cudaMalloc. */
static void gd_alloc(cc_ctx_t *c, gd_buf_t *b, size_t bytes, size_t misalign,
                     const void *host)
{
    b->lead = CC_GUARD + misalign;
    b->bytes = bytes;
    GPU_OK(c, cudaMalloc((void **)&b->base, b->lead + bytes + CC_GUARD));
    GPU_OK(c, cudaMemset(b->base, CC_GUARD_BYTE, b->lead + bytes + CC_GUARD));
    b->p = b->base + b->lead;
    if (bytes && host)
        GPU_OK(c, cudaMemcpy(b->p, host, bytes, cudaMemcpyHostToDevice));
    else if (bytes)
        GPU_OK(c, cudaMemset(b->p, CC_FILL_BYTE, bytes));
}

static void gd_get(cc_ctx_t *c, const gd_buf_t *b, void *host)
{
    if (b->bytes)
        GPU_OK(c, cudaMemcpy(host, b->p, b->bytes, cudaMemcpyDeviceToHost));
}

static void gd_check_guards(cc_ctx_t *c, const gd_buf_t *b, const char *name)
{
    uint8_t g[CC_GUARD + 16];

    GPU_OK(c, cudaMemcpy(g, b->base, b->lead, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < b->lead; i++) {
        if (g[i] != CC_GUARD_BYTE) {
            cc_fail(c, "%s: guard byte %zd before the buffer was overwritten (0x%02x)", name,
                    (ssize_t)i - (ssize_t)b->lead, g[i]);
            return;
        }
    }
    GPU_OK(c, cudaMemcpy(g, b->p + b->bytes, CC_GUARD, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < CC_GUARD; i++) {
        if (g[i] != CC_GUARD_BYTE) {
            cc_fail(c, "%s: guard byte %zu after the end of the buffer was overwritten "
                       "(0x%02x)", name, i, g[i]);
            return;
        }
    }
}

static void gd_free(gd_buf_t *b)
{
    if (b->base)
        cudaFree(b->base);
    b->base = b->p = NULL;
}

static void *gc_host_alloc(size_t bytes, int fill)
{
    void *p = malloc(bytes ? bytes : 1);

    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    memset(p, fill, bytes);
    return p;
}

/* ---- one call of one collective -------------------------------------------------- */

/* Layout and completion of the case under test. */
typedef struct {
    gc_coll_t coll;
    gc_mode_t mode;
    cudaStream_t stream;        /* the test's stream, or NULL: the legacy default stream */
    sc_op_t in_op;              /* what the inputs are chosen for: the op, or CC_NO_OP */
    size_t send_n, recv_n;      /* elements of each buffer */
    size_t send_off, recv_off;  /* in place: where each starts in the one buffer */
    size_t io_n;                /* in place: elements of the one buffer */
} gc_case_t;

static void gc_layout(const cc_ctx_t *c, gc_case_t *k)
{
    size_t n = c->count, p = (size_t)c->size, r = (size_t)c->rank;

    k->send_n = k->recv_n = n;
    k->send_off = k->recv_off = 0;
    switch (k->coll) {
    case GC_REDUCE_SCATTER:
        k->send_n = n * p;
        k->recv_off = r * n;
        break;
    case GC_ALLGATHER:
        k->recv_n = n * p;
        k->send_off = r * n;
        break;
    case GC_ALLTOALL:
        k->send_n = k->recv_n = n * p;
        break;
    default:
        break;
    }
    k->io_n = k->send_n > k->recv_n ? k->send_n : k->recv_n;
}

/* What element i of the output buffer (recvbuf, or in place the one buffer) must hold:
 * the reduction of element idx, input element idx of rank, or the fill bytes. */
typedef enum { GC_EXP_REDUCED, GC_EXP_INPUT, GC_EXP_FILL } gc_exp_kind_t;

typedef struct {
    gc_exp_kind_t kind;
    int rank;
    size_t idx;
} gc_exp_t;

static gc_exp_t gc_expected(const cc_ctx_t *c, gc_coll_t coll, size_t i)
{
    size_t n = c->count, r = (size_t)c->rank;

    switch (coll) {
    case GC_ALLREDUCE:
        return (gc_exp_t){GC_EXP_REDUCED, 0, i};
    case GC_REDUCE_SCATTER:
        if (!c->in_place)
            return (gc_exp_t){GC_EXP_REDUCED, 0, r * n + i};
        if (i >= r * n && i < r * n + n)
            return (gc_exp_t){GC_EXP_REDUCED, 0, i};
        return (gc_exp_t){GC_EXP_INPUT, c->rank, i};
    case GC_ALLGATHER:
        return (gc_exp_t){GC_EXP_INPUT, (int)(i / n), i % n};
    case GC_BROADCAST:
        return (gc_exp_t){GC_EXP_INPUT, c->root, i};
    case GC_REDUCE:
        if (c->rank == c->root)
            return (gc_exp_t){GC_EXP_REDUCED, 0, i};
        if (c->in_place)
            return (gc_exp_t){GC_EXP_INPUT, c->rank, i};
        return (gc_exp_t){GC_EXP_FILL, 0, 0};
    default:
        return (gc_exp_t){GC_EXP_INPUT, (int)(i / n), r * n + i % n};
    }
}

static const char *gc_exp_describe(const gc_exp_t *e, char *buf, size_t len)
{
    if (e->kind == GC_EXP_REDUCED)
        snprintf(buf, len, "the reduction of element %zu", e->idx);
    else if (e->kind == GC_EXP_INPUT)
        snprintf(buf, len, "rank %d's input element %zu", e->rank, e->idx);
    else
        snprintf(buf, len, "left untouched");
    return buf;
}

/* Compares out[i], lo <= i < hi, with what gc_expected says. */
static void gc_check_output(gc_run_t *run, const gc_case_t *k, const void *out, size_t lo,
                            size_t hi)
{
    cc_ctx_t *c = &run->ctx;
    sc_dtype_t d = c->dtype;
    uint64_t fill = 0x5A5A5A5A5A5A5A5Aull & cc_width_mask(d);
    size_t wrong = 0, first = 0;
    uint64_t got_w = 0, want_w = 0;
    double exact_w = 0, tol_w = 0;
    gc_exp_t exp_w = {GC_EXP_FILL, 0, 0};
    char what[96];

    for (size_t i = lo; i < hi; i++) {
        gc_exp_t e = gc_expected(c, k->coll, i);
        uint64_t got = cc_load(d, out, i), want = fill;
        double exact = 0, tol = 0;
        int ok;

        if (e.kind == GC_EXP_REDUCED) {
            want = cc_expect(d, c->op, run->seed, c->size, e.idx, &exact);
            if (c->op == SC_AVG)
                ok = cc_avg_ok(d, run->seed, c->size, e.idx, got, &exact, &tol);
            else
                ok = got == want;
        } else {
            if (e.kind == GC_EXP_INPUT)
                want = cc_input(d, k->in_op, run->seed, e.rank, e.idx);
            ok = got == want;
        }
        if (!ok && wrong++ == 0) {
            first = i;
            got_w = got;
            want_w = want;
            exact_w = exact;
            tol_w = tol;
            exp_w = e;
        }
    }
    if (!wrong)
        return;
    gc_exp_describe(&exp_w, what, sizeof(what));
    if (exp_w.kind == GC_EXP_REDUCED && c->op == SC_AVG)
        cc_fail(c, "%s: first wrong output index %zu (%zu wrong in [%zu, %zu)): got %.17g "
                   "(bits 0x%" PRIx64 "), expected %s, %.17g within %g",
                gc_mode_names[k->mode], first, wrong, lo, hi,
                cc_bits_to_double(c->dtype, got_w), got_w, what, exact_w, tol_w);
    else
        cc_fail(c, "%s: first wrong output index %zu (%zu wrong in [%zu, %zu)): got bits "
                   "0x%" PRIx64 ", expected %s, bits 0x%" PRIx64,
                gc_mode_names[k->mode], first, wrong, lo, hi, got_w, what, want_w);
}

/* This rank's inputs for the case: n elements from element first, at dst. */
static void gc_fill_inputs(gc_run_t *run, const gc_case_t *k, void *dst, size_t first,
                           size_t n)
{
    cc_fill_inputs(run->ctx.dtype, k->in_op, run->seed, run->ctx.rank, dst, first, n);
}

static sc_status_t gc_issue(gc_run_t *run, const gc_case_t *k, const void *send, void *recv,
                            sc_request_t **req)
{
    cc_ctx_t *c = &run->ctx;
    sc_stream_t s = (sc_stream_t)k->stream;

    switch (k->coll) {
    case GC_ALLREDUCE:
        return sc_allreduce(send, recv, c->count, c->dtype, c->op, c->comm, s, req);
    case GC_REDUCE_SCATTER:
        return sc_reduce_scatter(send, recv, c->count, c->dtype, c->op, c->comm, s, req);
    case GC_ALLGATHER:
        return sc_allgather(send, recv, c->count, c->dtype, c->comm, s, req);
    case GC_BROADCAST:
        return sc_broadcast(send, recv, c->count, c->dtype, c->root, c->comm, s, req);
    case GC_REDUCE:
        return sc_reduce(send, recv, c->count, c->dtype, c->op, c->root, c->comm, s, req);
    default:
        return sc_alltoall(send, recv, c->count, c->dtype, c->comm, s, req);
    }
}

/* Stream-ordered: the call returned once enqueued, the stream is synchronized.
 * Request: sc_wait returns when the stream work is complete. */
static void gc_complete(gc_run_t *run, const gc_case_t *k, sc_status_t st, sc_request_t *req,
                        const char *fn)
{
    cc_ctx_t *c = &run->ctx;

    cc_check_status(c, st, fn);
    if (k->mode == GC_STREAM_ORDERED) {
        GPU_OK(c, cudaStreamSynchronize(k->stream));
        return;
    }
    if (!req) {
        cc_fail(c, "%s succeeded without setting *req", fn);
        exit(1);
    }
    st = sc_wait(req);
    sc_request_free(req);
    cc_check_status(c, st, "sc_wait");
}

/* The part of an output of `total` elements this rank checks: where every rank holds
 * the same result (compared bit for bit by cc_check_agreement) a large one is split
 * over the ranks, since a reference costs one input per rank and element. */
static void gc_slice(const cc_ctx_t *c, gc_coll_t coll, size_t total, size_t *lo,
                     size_t *hi)
{
    size_t per = total / (size_t)c->size;

    *lo = 0;
    *hi = total;
    if (!gc_colls[coll].same_everywhere || total < 4096)
        return;
    *lo = per * (size_t)c->rank;
    *hi = c->rank == c->size - 1 ? total : per * (size_t)(c->rank + 1);
}

static void gc_run_case(gc_run_t *run, gc_coll_t coll, sc_dtype_t d, sc_op_t op,
                        size_t count, int in_place, gc_mode_t mode)
{
    cc_ctx_t *c = &run->ctx;
    int k_no = run->case_no++, failures = c->failures;
    size_t es = cc_size(d), lo, hi, out_n;
    gc_case_t k = {coll, mode, gc_pick(k_no, 0) ? NULL : run->stream, op, 0, 0, 0, 0, 0};
    gd_buf_t io = {0}, sb = {0}, rb = {0};
    uint8_t *send_h = NULL, *out_h;
    const void *send = NULL;
    void *recv = NULL;
    sc_request_t *req = NULL;
    size_t misalign = gc_pick(k_no, 1) ? es : 0;
    /* Half the cases: a non-root passes NULL for the buffer the call does not use. */
    int null_unused = gc_pick(k_no, 2);
    double t0 = cc_now();
    sc_status_t st;

    c->coll = gc_colls[coll].name;
    c->dtype = d;
    c->op = op;
    c->count = count;
    c->in_place = in_place;
    c->root = gc_colls[coll].rooted
                  ? (int)((cc_mix(0x4007ull + (uint64_t)k_no) >> 8) % (uint64_t)c->size)
                  : -1;
    run->seed = cc_mix(0x9e3d0000ull + (uint64_t)k_no);
    gc_layout(c, &k);

    if (in_place) {
        out_n = k.io_n;
        out_h = gc_host_alloc(out_n * es, CC_FILL_BYTE);
        if (coll == GC_ALLGATHER)
            gc_fill_inputs(run, &k, out_h + k.send_off * es, 0, count);
        else if (coll != GC_BROADCAST || c->rank == c->root)
            gc_fill_inputs(run, &k, out_h, 0, k.send_n);
        gd_alloc(c, &io, out_n * es, misalign, out_h);
        send = io.p + k.send_off * es;
        recv = io.p + k.recv_off * es;
    } else {
        out_n = k.recv_n;
        out_h = gc_host_alloc(out_n * es, CC_FILL_BYTE);
        if (!(coll == GC_BROADCAST && c->rank != c->root && null_unused)) {
            /* A non-root's broadcast sendbuf holds its own inputs: they must not leak. */
            send_h = gc_host_alloc(k.send_n * es, 0);
            gc_fill_inputs(run, &k, send_h, 0, k.send_n);
            gd_alloc(c, &sb, k.send_n * es, misalign, send_h);
            send = sb.p;
        }
        if (!(coll == GC_REDUCE && c->rank != c->root && null_unused)) {
            gd_alloc(c, &rb, out_n * es, misalign, NULL);
            recv = rb.p;
        }
    }
    /* Copies and memsets from pageable memory may still run: the call's stream is
     * not ordered after them. */
    GPU_OK(c, cudaDeviceSynchronize());

    st = gc_issue(run, &k, send, recv, mode == GC_REQUEST_WAIT ? &req : NULL);
    gc_complete(run, &k, st, req, c->coll);

    if (in_place || recv) {
        gd_get(c, in_place ? &io : &rb, out_h);
        if (gc_colls[coll].same_everywhere)
            cc_check_agreement(c, out_h, out_n * es);
        gc_slice(c, coll, out_n, &lo, &hi);
        gc_check_output(run, &k, out_h, lo, hi);
        gd_check_guards(c, in_place ? &io : &rb, in_place ? "the in-place buffer" : "recvbuf");
    }
    if (send_h) {
        uint8_t *after = gc_host_alloc(k.send_n * es, 0);

        gd_get(c, &sb, after);
        if (memcmp(after, send_h, k.send_n * es) != 0)
            cc_fail(c, "%s: sendbuf (const) was modified", gc_mode_names[mode]);
        gd_check_guards(c, &sb, "sendbuf");
        free(after);
    }
    gd_free(&io);
    gd_free(&sb);
    gd_free(&rb);
    free(send_h);
    free(out_h);
    run->cases_run++;
    if (run->verbose && c->rank == 0)
        printf("%s %s %s count=%zu in_place=%d root=%d %s stream=%s: %s (%.3f s)\n", c->coll,
               cc_dtype_str(d), cc_op_str(op), count, in_place, c->root, gc_mode_names[mode],
               k.stream ? "created" : "legacy", c->failures == failures ? "ok" : "FAILED",
               cc_now() - t0);
}

/* Every dtype x op x count x in place/out of place x completion mode. */
static void gc_run_coll(gc_run_t *run, gc_coll_t coll, long long only_count)
{
    int reduces = gc_colls[coll].reduces;

    for (size_t di = 0; di < CC_NELEM(cc_dtypes); di++) {
        for (size_t oi = 0; oi < (reduces ? CC_NELEM(cc_ops) : 1); oi++) {
            sc_op_t op = reduces ? cc_ops[oi] : CC_NO_OP;

            if (reduces && !cc_op_applies(cc_dtypes[di], op))
                continue;
            for (size_t ci = 0; ci < (only_count >= 0 ? 1 : CC_NELEM(gc_counts)); ci++) {
                size_t count = only_count >= 0 ? (size_t)only_count : gc_counts[ci];

                for (int in_place = 0; in_place < 2; in_place++)
                    for (int mode = 0; mode < GC_MODE_COUNT; mode++)
                        gc_run_case(run, coll, cc_dtypes[di], op, count, in_place,
                                    (gc_mode_t)mode);
            }
        }
    }
}

/* ---- send/recv ------------------------------------------------------------------- */

/* This rank and partner exchange n inputs, the lower rank sending first. */
static void gc_sendrecv_case(gc_run_t *run, sc_dtype_t d, size_t n, gc_mode_t mode,
                             int partner)
{
    cc_ctx_t *c = &run->ctx;
    size_t es = cc_size(d);
    int k_no = run->case_no++;
    sc_stream_t s = gc_pick(k_no, 0) ? NULL : (sc_stream_t)run->stream;
    sc_request_t *reqs[2] = {NULL, NULL}; /* send, recv */
    sc_request_t **sreq = mode == GC_REQUEST_WAIT ? &reqs[0] : NULL;
    sc_request_t **rreq = mode == GC_REQUEST_WAIT ? &reqs[1] : NULL;
    uint8_t *in_h = gc_host_alloc(n * es, 0), *out_h = gc_host_alloc(n * es, 0);
    gd_buf_t sb, rb;

    c->dtype = d;
    c->count = n;
    run->seed = cc_mix(0x5e9d0000ull + (uint64_t)k_no);
    cc_fill_inputs(d, CC_NO_OP, run->seed, c->rank, in_h, 0, n);
    gd_alloc(c, &sb, n * es, 0, in_h);
    gd_alloc(c, &rb, n * es, gc_pick(k_no, 1) ? es : 0, NULL);
    GPU_OK(c, cudaDeviceSynchronize());
    if (c->rank < partner) {
        cc_check_status(c, sc_send(sb.p, n, d, partner, c->comm, s, sreq), "sc_send");
        cc_check_status(c, sc_recv(rb.p, n, d, partner, c->comm, s, rreq), "sc_recv");
    } else {
        cc_check_status(c, sc_recv(rb.p, n, d, partner, c->comm, s, rreq), "sc_recv");
        cc_check_status(c, sc_send(sb.p, n, d, partner, c->comm, s, sreq), "sc_send");
    }
    if (mode == GC_STREAM_ORDERED) {
        GPU_OK(c, cudaStreamSynchronize((cudaStream_t)s));
    } else {
        for (int i = 0; i < 2; i++) {
            sc_status_t st = sc_wait(reqs[i]);

            sc_request_free(reqs[i]);
            cc_check_status(c, st, "sc_wait");
        }
    }
    gd_get(c, &rb, out_h);
    for (size_t i = 0; i < n; i++) {
        uint64_t want = cc_input(d, CC_NO_OP, run->seed, partner, i);

        if (cc_load(d, out_h, i) != want) {
            cc_fail(c, "%s: received element %zu is 0x%" PRIx64 ", expected rank %d's input "
                       "0x%" PRIx64, gc_mode_names[mode], i, cc_load(d, out_h, i), partner,
                    want);
            break;
        }
    }
    gd_check_guards(c, &rb, "the receive buffer");
    gd_free(&sb);
    gd_free(&rb);
    free(in_h);
    free(out_h);
    run->cases_run++;
}

/* Ranks 2j and 2j+1 exchange their inputs (a last odd rank sits out): every dtype and
 * count, both completion modes. */
static void gc_test_sendrecv(gc_run_t *run, long long only_count)
{
    cc_ctx_t *c = &run->ctx;
    int partner = c->rank ^ 1;

    if (c->size < 2) {
        if (c->rank == 0)
            printf("send/recv: skipped (needs 2 ranks)\n");
        return;
    }
    if (partner >= c->size)
        return;
    c->coll = "send/recv";
    c->op = CC_NO_OP;
    c->root = -1;
    c->in_place = 0;
    for (size_t di = 0; di < CC_NELEM(cc_dtypes); di++)
        for (size_t ci = 0; ci < (only_count >= 0 ? 1 : CC_NELEM(gc_counts)); ci++)
            for (int mode = 0; mode < GC_MODE_COUNT; mode++)
                gc_sendrecv_case(run, cc_dtypes[di],
                                 only_count >= 0 ? (size_t)only_count : gc_counts[ci],
                                 (gc_mode_t)mode, partner);
}

/* ---- sc_test on a device request --------------------------------------------------- */

/* A host function on the stream holds it until `open` is set, or for at most
 * GC_GATE_MAX_S seconds, after which it sets `expired`: a call that waits for the
 * stream delays the test instead of hanging it. */
#define GC_GATE_MAX_S 10.0

typedef struct {
    int open;
    int expired;
} gc_gate_t;

static void CUDART_CB gc_gate_hold(void *arg)
{
    gc_gate_t *g = arg;
    double end = cc_now() + GC_GATE_MAX_S;

    while (!__atomic_load_n(&g->open, __ATOMIC_ACQUIRE)) {
        if (cc_now() > end) {
            __atomic_store_n(&g->expired, 1, __ATOMIC_RELEASE);
            return;
        }
        usleep(100);
    }
}

/* An allreduce enqueued behind a host function that holds the stream: the call
 * returns at once, sc_test says SC_IN_PROGRESS until the stream is let go, then
 * SC_SUCCESS, with the right sums. A first allreduce does the lazy setup (the NCCL
 * communicator) outside the hold. */
static void gc_test_sc_test(gc_run_t *run)
{
    static gc_gate_t gate;
    cc_ctx_t *c = &run->ctx;
    size_t n = 4096, es = 4;
    gc_case_t k = {GC_ALLREDUCE, GC_REQUEST_WAIT, run->stream, SC_SUM, n, n, 0, 0, n};
    sc_status_t st, early[5];
    sc_request_t *req = NULL;
    gd_buf_t sb, rb;
    uint8_t *in_h, *out_h;
    double t0, issue_s, deadline;
    int expired;

    c->coll = "sc_test on a device request";
    c->dtype = SC_FLOAT32;
    c->op = SC_SUM;
    c->count = n;
    c->in_place = 0;
    c->root = -1;
    run->seed = cc_mix(0x7e570000ull);
    in_h = gc_host_alloc(n * es, 0);
    out_h = gc_host_alloc(n * es, 0);
    cc_fill_inputs(SC_FLOAT32, SC_SUM, run->seed, c->rank, in_h, 0, n);
    gd_alloc(c, &sb, n * es, 0, in_h);
    gd_alloc(c, &rb, n * es, 0, NULL);
    GPU_OK(c, cudaDeviceSynchronize());
    st = sc_allreduce(sb.p, rb.p, n, SC_FLOAT32, SC_SUM, c->comm, run->stream, NULL);
    cc_check_status(c, st, "the first sc_allreduce");
    GPU_OK(c, cudaStreamSynchronize(run->stream));

    gate.open = gate.expired = 0;
    GPU_OK(c, cudaLaunchHostFunc(run->stream, gc_gate_hold, &gate));
    t0 = cc_now();
    st = sc_allreduce(sb.p, rb.p, n, SC_FLOAT32, SC_SUM, c->comm, run->stream, &req);
    issue_s = cc_now() - t0;
    for (int i = 0; i < 5; i++) {
        early[i] = st == SC_SUCCESS ? sc_test(req) : st;
        usleep(10000);
    }
    expired = __atomic_load_n(&gate.expired, __ATOMIC_ACQUIRE);
    __atomic_store_n(&gate.open, 1, __ATOMIC_RELEASE);
    cc_check_status(c, st, "sc_allreduce");
    if (expired)
        cc_fail(c, "the call (%.1f s) or sc_test waited for the stream, which was held "
                   "for %.0f s before the call", issue_s, GC_GATE_MAX_S);
    for (int i = 0; i < 5 && !expired; i++)
        if (early[i] != SC_IN_PROGRESS)
            cc_fail(c, "sc_test call %d returned %s while the stream was held before the "
                       "call, expected SC_IN_PROGRESS", i + 1, sc_status_string(early[i]));
    deadline = cc_now() + 60;
    while ((st = sc_test(req)) == SC_IN_PROGRESS && cc_now() < deadline)
        sched_yield();
    if (st != SC_SUCCESS)
        cc_fail(c, "sc_test after the stream was let go returned %s: %s", sc_status_string(st),
                st == SC_IN_PROGRESS ? "still pending after 60 s" : sc_last_error());
    sc_request_free(req);
    GPU_OK(c, cudaStreamSynchronize(run->stream));
    gd_get(c, &rb, out_h);
    gc_check_output(run, &k, out_h, 0, n);
    gd_free(&sb);
    gd_free(&rb);
    free(in_h);
    free(out_h);
    run->cases_run++;
}

/* ---- refusals ---------------------------------------------------------------------- */

/* st must be SC_ERR_INVALID_ARG with a sentence holding every word of words. */
static void gc_expect_refusal(cc_ctx_t *c, const char *what, sc_status_t st,
                              const char *const *words, size_t nwords)
{
    const char *text = sc_last_error();

    if (st != SC_ERR_INVALID_ARG) {
        cc_fail(c, "%s: returned %s (%s), expected SC_ERR_INVALID_ARG", what,
                sc_status_string(st), st == SC_SUCCESS ? "" : text);
        return;
    }
    for (size_t i = 0; i < nwords; i++)
        if (!strstr(text, words[i]))
            cc_fail(c, "%s: the sentence \"%s\" does not name %s", what, text, words[i]);
}

/* Mixed host and device buffers in one call, and a stream with host buffers: refused
 * when issued, nothing written, *req left alone. */
static void gc_test_refusals(gc_run_t *run)
{
    static const char *const both[] = {"sendbuf", "recvbuf"};
    static const char *const stream_word[] = {"stream"};
    cc_ctx_t *c = &run->ctx;
    size_t n = 64, es = 4, p = (size_t)c->size;
    static char unset;
    sc_request_t *req = (sc_request_t *)&unset; /* a refused call must leave it */
    uint8_t *hs = gc_host_alloc(n * p * es, 1), *hr = gc_host_alloc(n * p * es, CC_FILL_BYTE);
    uint8_t *check = gc_host_alloc(n * p * es, 0);
    gd_buf_t ds, dr;
    sc_status_t st;

    c->coll = "refusals";
    c->dtype = SC_FLOAT32;
    c->op = SC_SUM;
    c->count = n;
    c->in_place = 0;
    c->root = -1;
    gd_alloc(c, &ds, n * p * es, 0, hs);
    gd_alloc(c, &dr, n * p * es, 0, NULL);
    GPU_OK(c, cudaDeviceSynchronize());

    st = sc_allreduce(hs, dr.p, n, SC_FLOAT32, SC_SUM, c->comm, run->stream, NULL);
    gc_expect_refusal(c, "sc_allreduce(host sendbuf, device recvbuf, stream)", st, both, 2);
    st = sc_allreduce(ds.p, hr, n, SC_FLOAT32, SC_SUM, c->comm, NULL, &req);
    gc_expect_refusal(c, "sc_allreduce(device sendbuf, host recvbuf, NULL stream)", st, both,
                      2);
    st = sc_allgather(hs, dr.p, n, SC_FLOAT32, c->comm, run->stream, &req);
    gc_expect_refusal(c, "sc_allgather(host sendbuf, device recvbuf, stream)", st, both, 2);
    st = sc_reduce_scatter(ds.p, hr, n, SC_FLOAT32, SC_MAX, c->comm, run->stream, NULL);
    gc_expect_refusal(c, "sc_reduce_scatter(device sendbuf, host recvbuf, stream)", st, both,
                      2);
    st = sc_allreduce(hs, hr, n, SC_FLOAT32, SC_SUM, c->comm, run->stream, NULL);
    gc_expect_refusal(c, "sc_allreduce(host buffers, stream)", st, stream_word, 1);
    st = sc_broadcast(hs, hr, n, SC_FLOAT32, 0, c->comm, run->stream, &req);
    gc_expect_refusal(c, "sc_broadcast(host buffers, stream)", st, stream_word, 1);
    if (req != (sc_request_t *)&unset)
        cc_fail(c, "a refused call wrote *req");

    GPU_OK(c, cudaStreamSynchronize(run->stream));
    GPU_OK(c, cudaDeviceSynchronize());
    cc_check_untouched(c, hr, n * p * es, CC_FILL_BYTE, "a refused call's host recvbuf");
    gd_get(c, &dr, check);
    cc_check_untouched(c, check, n * p * es, CC_FILL_BYTE, "a refused call's device recvbuf");
    gd_free(&ds);
    gd_free(&dr);
    free(hs);
    free(hr);
    free(check);
    run->cases_run++;
}

/* ---- main ---------------------------------------------------------------------------- */

/* The library's choice: SC_DEVICE, else the local rank modulo the number of GPUs. */
static int gc_pick_device(cc_ctx_t *c)
{
    const char *env = getenv("SC_DEVICE");
    int count = 0, local = sc_comm_local_rank(c->comm);

    GPU_OK(c, cudaGetDeviceCount(&count));
    if (env && *env)
        return atoi(env);
    return (local > 0 ? local : 0) % count;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: test_gpu_collectives [--coll NAME] [--count N] [--verbose]\n"
            "  NAME: allreduce reduce_scatter allgather broadcast reduce alltoall sendrecv\n"
            "        sc_test refusals all (default all)\n"
            "  Counts 0, 1, 7, %zu (or only N), every dtype x op, in place and out of\n"
            "  place, stream-ordered and with a request. Exits 1 on a failure, 77 without\n"
            "  a usable GPU.\n",
            GC_BIG_COUNT);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"coll", required_argument, NULL, 'c'},
                                         {"count", required_argument, NULL, 'n'},
                                         {"verbose", no_argument, NULL, 'v'},
                                         {NULL, 0, NULL, 0}};
    const char *which = "all";
    long long only_count = -1;
    gc_run_t run = {0};
    char reason[512], *end;
    int opt, matched = 0, device, total_failures;
    double t0 = cc_now();

    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'c': which = optarg; break;
        case 'v': run.verbose = 1; break;
        case 'n':
            only_count = strtoll(optarg, &end, 10);
            if (*end || only_count < 0) {
                usage();
                return 2;
            }
            break;
        default: usage(); return 2;
        }
    }
    if (optind != argc) {
        usage();
        return 2;
    }
    if (!gpu_usable(reason, sizeof(reason))) {
        printf("SKIP: %s\n", reason);
        return GPU_SKIP_EXIT;
    }
    run.ctx.coll = "sc_comm_init_from_env";
    run.ctx.root = -1;
    run.ctx.op = CC_NO_OP;
    cc_check_status(&run.ctx, sc_comm_init_from_env(&run.ctx.comm), "sc_comm_init_from_env");
    run.ctx.rank = sc_comm_rank(run.ctx.comm);
    run.ctx.size = sc_comm_size(run.ctx.comm);
    device = gc_pick_device(&run.ctx);
    GPU_OK(&run.ctx, cudaSetDevice(device));
    GPU_OK(&run.ctx, cudaStreamCreateWithFlags(&run.stream, cudaStreamNonBlocking));

    if (strcmp(which, "all") == 0 || strcmp(which, "refusals") == 0) {
        matched = 1;
        gc_test_refusals(&run);
    }
    if (strcmp(which, "all") == 0 || strcmp(which, "sc_test") == 0) {
        matched = 1;
        gc_test_sc_test(&run);
    }
    for (int i = 0; i < GC_COLL_COUNT; i++) {
        int before = run.cases_run, failures = run.ctx.failures;
        double t = cc_now();

        if (strcmp(which, "all") != 0 && strcmp(which, gc_colls[i].name) != 0)
            continue;
        matched = 1;
        gc_run_coll(&run, (gc_coll_t)i, only_count);
        if (run.ctx.rank == 0)
            printf("%s: %d cases, %s (%.2f s)\n", gc_colls[i].name, run.cases_run - before,
                   run.ctx.failures == failures ? "ok" : "FAILED", cc_now() - t);
    }
    if (strcmp(which, "all") == 0 || strcmp(which, "sendrecv") == 0) {
        matched = 1;
        gc_test_sendrecv(&run, only_count);
    }
    if (!matched) {
        usage();
        return 2;
    }
    run.ctx.coll = "final";
    total_failures = cc_total_failures(&run.ctx);
    GPU_OK(&run.ctx, cudaStreamDestroy(run.stream));
    cc_check_status(&run.ctx, sc_comm_destroy(run.ctx.comm), "sc_comm_destroy");
    if (run.ctx.rank == 0)
        printf("%s: %d cases on %d ranks (GPU %d on rank 0), %d failures (%.2f s)\n", which,
               run.cases_run, run.ctx.size, device, total_failures, cc_now() - t0);
    return total_failures || run.ctx.failures ? 1 : 0;
}
