/* Multi-rank correctness of the data collectives (allreduce, reduce_scatter, allgather,
 * broadcast, reduce, alltoall): every dtype x op x in-place/out-of-place x count (the
 * large count once per element size for those that only move bytes), against
 * references computed in coll_check.h. Run through scrun; see usage() for the CLI. */
#include <getopt.h>
#include <sched.h>

#include "coll_check.h"

#define CC_BIG_COUNT ((size_t)1000003)

typedef enum { CC_BLOCKING = 0, CC_WAIT, CC_TEST_LOOP, CC_MODE_COUNT } cc_mode_t;

typedef struct {
    cc_ctx_t ctx;
    uint64_t seed;
    int case_no;   /* rotates the completion mode, root and alignment between cases */
    int cases_run;
} cc_run_t;

/* Issues nothing itself: completes the request of a call made in the given mode. */
static void cc_complete(cc_run_t *run, cc_mode_t mode, sc_status_t st, sc_request_t *req,
                        const char *fn)
{
    cc_ctx_t *c = &run->ctx;

    cc_check_status(c, st, fn);
    if (mode == CC_BLOCKING)
        return;
    if (!req) {
        cc_fail(c, "%s succeeded without setting *req", fn);
        exit(1);
    }
    if (mode == CC_WAIT) {
        st = sc_wait(req);
    } else {
        /* Yield: 8 ranks share 2 cores, a spinning rank would starve its peers. */
        while ((st = sc_test(req)) == SC_IN_PROGRESS)
            sched_yield();
    }
    sc_request_free(req);
    cc_check_status(c, st, mode == CC_WAIT ? "sc_wait" : "sc_test");
}

#define CC_REQP(mode, req) ((mode) == CC_BLOCKING ? NULL : &(req))

/* Compares recvbuf[i], lo <= i < hi, with element elem0 + i of the expected reduction. */
static void cc_check_reduced(cc_ctx_t *c, const void *recvbuf, size_t lo, size_t hi,
                             size_t elem0, uint64_t seed)
{
    sc_dtype_t d = c->dtype;
    size_t wrong = 0, first_wrong = 0;
    uint64_t got_w = 0, exp_w = 0;
    double exact_w = 0, tol_w = 0;

    for (size_t i = lo; i < hi; i++) {
        double exact = 0, tol = 0;
        uint64_t exp = cc_expect(d, c->op, seed, c->size, elem0 + i, &exact);
        uint64_t got = cc_load(d, recvbuf, i);
        int ok;

        if (c->op == SC_AVG)
            ok = cc_avg_ok(d, seed, c->size, elem0 + i, got, &exact, &tol);
        else
            ok = got == exp;
        if (!ok && wrong++ == 0) {
            first_wrong = i;
            got_w = got;
            exp_w = exp;
            exact_w = exact;
            tol_w = tol;
        }
    }
    if (!wrong)
        return;
    if (c->op == SC_AVG)
        cc_fail(c, "first wrong recvbuf index %zu (%zu wrong in [%zu, %zu)): got %.17g "
                   "(bits 0x%" PRIx64 "), expected %.17g within %g",
                first_wrong, wrong, lo, hi, cc_bits_to_double(d, got_w), got_w, exact_w, tol_w);
    else if (cc_is_float(d))
        cc_fail(c, "first wrong recvbuf index %zu (%zu wrong in [%zu, %zu)): got %.17g "
                   "(bits 0x%" PRIx64 "), expected %.17g (bits 0x%" PRIx64 ")",
                first_wrong, wrong, lo, hi, cc_bits_to_double(d, got_w), got_w,
                cc_bits_to_double(d, exp_w), exp_w);
    else
        cc_fail(c, "first wrong recvbuf index %zu (%zu wrong in [%zu, %zu)): got %" PRId64
                   " (0x%" PRIx64 "), expected %" PRId64 " (0x%" PRIx64 ")",
                first_wrong, wrong, lo, hi, cc_bits_to_int(d, got_w), got_w,
                cc_bits_to_int(d, exp_w), exp_w);
}

/* Compares recvbuf[i], lo <= i < hi, with src_rank's no-op input src0 + (i - lo). */
static void cc_check_moved(cc_ctx_t *c, const void *recvbuf, size_t lo, size_t hi,
                           int src_rank, size_t src0, uint64_t seed)
{
    sc_dtype_t d = c->dtype;

    for (size_t i = lo; i < hi; i++) {
        uint64_t exp = cc_input(d, CC_NO_OP, seed, src_rank, src0 + (i - lo));
        uint64_t got = cc_load(d, recvbuf, i);
        if (got != exp) {
            size_t wrong = 0;
            for (size_t j = i; j < hi; j++)
                wrong += cc_load(d, recvbuf, j) !=
                         cc_input(d, CC_NO_OP, seed, src_rank, src0 + (j - lo));
            cc_fail(c, "first wrong recvbuf index %zu (%zu wrong in [%zu, %zu), from rank %d): "
                       "got 0x%" PRIx64 ", expected 0x%" PRIx64 " (rank %d's element %zu)",
                    i, wrong, lo, hi, src_rank, got, exp, src_rank, src0 + (i - lo));
            return;
        }
    }
}

/* The part of a result of `total` elements that this rank checks. Where every rank
 * holds the same result (checked bit for bit by cc_check_agreement), large results are
 * split so that each element is checked once, on one rank: the references cost n
 * inputs per element, which 8 ranks on 2 cores cannot afford n times over. */
#define CC_CHECK_ALL_BELOW 4096
static void cc_slice(const cc_ctx_t *c, size_t total, size_t *lo, size_t *hi)
{
    if (total < CC_CHECK_ALL_BELOW) {
        *lo = 0;
        *hi = total;
        return;
    }
    *lo = total / (size_t)c->size * (size_t)c->rank;
    *hi = c->rank == c->size - 1 ? total : total / (size_t)c->size * (size_t)(c->rank + 1);
}

/* Allgather-shaped results: block j (n elements) is rank j's input src0 onwards. */
static void cc_check_blocks(cc_ctx_t *c, const void *recvbuf, size_t n, size_t lo, size_t hi,
                            size_t src0, uint64_t seed)
{
    for (int j = 0; j < c->size && n; j++) {
        size_t b_lo = (size_t)j * n, b_hi = b_lo + n;
        size_t s_lo = lo > b_lo ? lo : b_lo, s_hi = hi < b_hi ? hi : b_hi;
        if (s_lo < s_hi)
            cc_check_moved(c, recvbuf, s_lo, s_hi, j, src0 + (s_lo - b_lo), seed);
    }
}

static void cc_check_send_unchanged(cc_ctx_t *c, const cc_buf_t *b, uint64_t before)
{
    if (cc_hash_bytes(b->p, b->bytes) != before)
        cc_fail(c, "sendbuf (const) was modified");
    cc_buf_check_guards(c, b, "sendbuf");
}

/* ---- one case per collective --------------------------------------------------------- */

static void case_allreduce(cc_run_t *run, cc_mode_t mode, size_t misalign)
{
    cc_ctx_t *c = &run->ctx;
    size_t n = c->count, es = cc_size(c->dtype);
    cc_buf_t sb = {0}, rb;
    size_t lo, hi;
    sc_request_t *req = NULL;
    sc_status_t st;
    uint64_t send_hash = 0;
    const void *send;

    cc_buf_alloc(&rb, n * es, CC_FILL_BYTE, misalign);
    if (c->in_place) {
        cc_fill_inputs(c->dtype, c->op, run->seed, c->rank, rb.p, 0, n);
        send = rb.p;
    } else {
        cc_buf_alloc(&sb, n * es, 0, misalign);
        cc_fill_inputs(c->dtype, c->op, run->seed, c->rank, sb.p, 0, n);
        send_hash = cc_hash_bytes(sb.p, sb.bytes);
        send = sb.p;
    }
    st = sc_allreduce(send, rb.p, n, c->dtype, c->op, c->comm, NULL, CC_REQP(mode, req));
    cc_complete(run, mode, st, req, "sc_allreduce");
    cc_check_agreement(c, rb.p, rb.bytes);
    cc_slice(c, n, &lo, &hi);
    cc_check_reduced(c, rb.p, lo, hi, 0, run->seed);
    cc_buf_check_guards(c, &rb, "recvbuf");
    if (!c->in_place)
        cc_check_send_unchanged(c, &sb, send_hash);
    cc_buf_free(&rb);
    if (!c->in_place)
        cc_buf_free(&sb);
}

static void case_reduce_scatter(cc_run_t *run, cc_mode_t mode, size_t misalign)
{
    cc_ctx_t *c = &run->ctx;
    size_t n = c->count, es = cc_size(c->dtype), total = n * (size_t)c->size;
    cc_buf_t sb, rb = {0};
    sc_request_t *req = NULL;
    sc_status_t st;
    uint64_t send_hash, head_hash, tail_hash;
    void *recv;

    cc_buf_alloc(&sb, total * es, 0, misalign);
    cc_fill_inputs(c->dtype, c->op, run->seed, c->rank, sb.p, 0, total);
    send_hash = cc_hash_bytes(sb.p, sb.bytes);
    head_hash = cc_hash_bytes(sb.p, (size_t)c->rank * n * es);
    tail_hash = cc_hash_bytes(sb.p + (size_t)(c->rank + 1) * n * es,
                         (total - (size_t)(c->rank + 1) * n) * es);
    if (c->in_place) {
        recv = sb.p + (size_t)c->rank * n * es;
    } else {
        cc_buf_alloc(&rb, n * es, CC_FILL_BYTE, misalign);
        recv = rb.p;
    }
    st = sc_reduce_scatter(sb.p, recv, n, c->dtype, c->op, c->comm, NULL, CC_REQP(mode, req));
    cc_complete(run, mode, st, req, "sc_reduce_scatter");
    cc_check_reduced(c, recv, 0, n, (size_t)c->rank * n, run->seed);
    if (c->in_place) {
        /* The other blocks of the (const) sendbuf are left as they were. */
        size_t tail = (size_t)(c->rank + 1) * n;
        if (cc_hash_bytes(sb.p, (size_t)c->rank * n * es) != head_hash ||
            cc_hash_bytes(sb.p + tail * es, (total - tail) * es) != tail_hash)
            cc_fail(c, "in place: a block of sendbuf other than this rank's was modified");
        cc_buf_check_guards(c, &sb, "sendbuf");
    } else {
        cc_check_send_unchanged(c, &sb, send_hash);
        cc_buf_check_guards(c, &rb, "recvbuf");
        cc_buf_free(&rb);
    }
    cc_buf_free(&sb);
}

static void case_allgather(cc_run_t *run, cc_mode_t mode, size_t misalign)
{
    cc_ctx_t *c = &run->ctx;
    size_t n = c->count, es = cc_size(c->dtype), total = n * (size_t)c->size;
    cc_buf_t sb = {0}, rb;
    size_t lo, hi;
    sc_request_t *req = NULL;
    sc_status_t st;
    uint64_t send_hash = 0;
    const void *send;

    cc_buf_alloc(&rb, total * es, CC_FILL_BYTE, misalign);
    if (c->in_place) {
        send = rb.p + (size_t)c->rank * n * es;
        cc_fill_inputs(c->dtype, CC_NO_OP, run->seed, c->rank, (void *)send, 0, n);
    } else {
        cc_buf_alloc(&sb, n * es, 0, misalign);
        cc_fill_inputs(c->dtype, CC_NO_OP, run->seed, c->rank, sb.p, 0, n);
        send_hash = cc_hash_bytes(sb.p, sb.bytes);
        send = sb.p;
    }
    st = sc_allgather(send, rb.p, n, c->dtype, c->comm, NULL, CC_REQP(mode, req));
    cc_complete(run, mode, st, req, "sc_allgather");
    cc_check_agreement(c, rb.p, rb.bytes);
    cc_slice(c, total, &lo, &hi);
    cc_check_blocks(c, rb.p, n, lo, hi, 0, run->seed);
    cc_buf_check_guards(c, &rb, "recvbuf");
    if (!c->in_place) {
        cc_check_send_unchanged(c, &sb, send_hash);
        cc_buf_free(&sb);
    }
    cc_buf_free(&rb);
}

/* Non-roots pass sendbuf NULL on odd case numbers (sendbuf is read on root only). */
static void case_broadcast(cc_run_t *run, cc_mode_t mode, size_t misalign)
{
    cc_ctx_t *c = &run->ctx;
    size_t n = c->count, es = cc_size(c->dtype);
    int is_root = c->rank == c->root;
    cc_buf_t sb = {0}, rb;
    size_t lo, hi;
    sc_request_t *req = NULL;
    sc_status_t st;
    uint64_t send_hash = 0;
    const void *send = NULL;

    cc_buf_alloc(&rb, n * es, CC_FILL_BYTE, misalign);
    if (c->in_place) {
        if (is_root)
            cc_fill_inputs(c->dtype, CC_NO_OP, run->seed, c->rank, rb.p, 0, n);
        send = rb.p;
    } else if (is_root || run->case_no % 2 == 0) {
        /* A non-root's sendbuf holds its own pattern, which must not leak through. */
        cc_buf_alloc(&sb, n * es, 0, misalign);
        cc_fill_inputs(c->dtype, CC_NO_OP, run->seed, c->rank, sb.p, 0, n);
        send_hash = cc_hash_bytes(sb.p, sb.bytes);
        send = sb.p;
    }
    st = sc_broadcast(send, rb.p, n, c->dtype, c->root, c->comm, NULL, CC_REQP(mode, req));
    cc_complete(run, mode, st, req, "sc_broadcast");
    cc_check_agreement(c, rb.p, rb.bytes);
    cc_slice(c, n, &lo, &hi);
    cc_check_moved(c, rb.p, lo, hi, c->root, lo, run->seed);
    cc_buf_check_guards(c, &rb, "recvbuf");
    if (sb.base) {
        cc_check_send_unchanged(c, &sb, send_hash);
        cc_buf_free(&sb);
    }
    cc_buf_free(&rb);
}

/* Non-roots pass recvbuf NULL on odd case numbers; otherwise their recvbuf must come
 * back exactly as it was. */
static void case_reduce(cc_run_t *run, cc_mode_t mode, size_t misalign)
{
    cc_ctx_t *c = &run->ctx;
    size_t n = c->count, es = cc_size(c->dtype);
    int is_root = c->rank == c->root;
    cc_buf_t sb = {0}, rb = {0};
    sc_request_t *req = NULL;
    sc_status_t st;
    uint64_t send_hash = 0;
    const void *send;
    void *recv = NULL;

    if (c->in_place) {
        cc_buf_alloc(&rb, n * es, 0, misalign);
        cc_fill_inputs(c->dtype, c->op, run->seed, c->rank, rb.p, 0, n);
        send_hash = cc_hash_bytes(rb.p, rb.bytes);
        send = recv = rb.p;
    } else {
        cc_buf_alloc(&sb, n * es, 0, misalign);
        cc_fill_inputs(c->dtype, c->op, run->seed, c->rank, sb.p, 0, n);
        send_hash = cc_hash_bytes(sb.p, sb.bytes);
        send = sb.p;
        if (is_root || run->case_no % 2 == 0) {
            cc_buf_alloc(&rb, n * es, CC_FILL_BYTE, misalign);
            recv = rb.p;
        }
    }
    st = sc_reduce(send, recv, n, c->dtype, c->op, c->root, c->comm, NULL, CC_REQP(mode, req));
    cc_complete(run, mode, st, req, "sc_reduce");
    if (is_root) {
        cc_check_reduced(c, rb.p, 0, n, 0, run->seed);
    } else if (c->in_place) {
        if (cc_hash_bytes(rb.p, rb.bytes) != send_hash)
            cc_fail(c, "in place on a non-root: the buffer was modified");
    } else if (recv) {
        cc_check_untouched(c, rb.p, rb.bytes, CC_FILL_BYTE, "a non-root's recvbuf");
    }
    if (rb.base) {
        cc_buf_check_guards(c, &rb, "recvbuf");
        cc_buf_free(&rb);
    }
    if (!c->in_place) {
        cc_check_send_unchanged(c, &sb, send_hash);
        cc_buf_free(&sb);
    }
}

static void case_alltoall(cc_run_t *run, cc_mode_t mode, size_t misalign)
{
    cc_ctx_t *c = &run->ctx;
    size_t n = c->count, es = cc_size(c->dtype), total = n * (size_t)c->size;
    cc_buf_t sb = {0}, rb;
    sc_request_t *req = NULL;
    sc_status_t st;
    uint64_t send_hash = 0;
    const void *send;

    cc_buf_alloc(&rb, total * es, CC_FILL_BYTE, misalign);
    if (c->in_place) {
        cc_fill_inputs(c->dtype, CC_NO_OP, run->seed, c->rank, rb.p, 0, total);
        send = rb.p;
    } else {
        cc_buf_alloc(&sb, total * es, 0, misalign);
        cc_fill_inputs(c->dtype, CC_NO_OP, run->seed, c->rank, sb.p, 0, total);
        send_hash = cc_hash_bytes(sb.p, sb.bytes);
        send = sb.p;
    }
    st = sc_alltoall(send, rb.p, n, c->dtype, c->comm, NULL, CC_REQP(mode, req));
    cc_complete(run, mode, st, req, "sc_alltoall");
    /* Block j came from rank j's block for this rank. */
    cc_check_blocks(c, rb.p, n, 0, total, (size_t)c->rank * n, run->seed);
    cc_buf_check_guards(c, &rb, "recvbuf");
    if (!c->in_place) {
        cc_check_send_unchanged(c, &sb, send_hash);
        cc_buf_free(&sb);
    }
    cc_buf_free(&rb);
}

/* ---- the case matrix ------------------------------------------------------------------ */

typedef void (*cc_case_fn)(cc_run_t *, cc_mode_t, size_t);

typedef struct {
    const char *name;
    cc_case_fn fn;
    int reduces;
    int rooted;
} cc_coll_t;

static const cc_coll_t cc_colls[] = {
    {"allreduce", case_allreduce, 1, 0},  {"reduce_scatter", case_reduce_scatter, 1, 0},
    {"allgather", case_allgather, 0, 0},  {"broadcast", case_broadcast, 0, 1},
    {"reduce", case_reduce, 1, 1},        {"alltoall", case_alltoall, 0, 0},
};

/* misaligned: 0 or 1 (the buffers one element off), or -1 to alternate between cases. */
static void cc_run_case(cc_run_t *run, const cc_coll_t *coll, sc_dtype_t d, sc_op_t op,
                        size_t count, int in_place, int misaligned, int verbose)
{
    cc_ctx_t *c = &run->ctx;
    int k = run->case_no++;
    cc_mode_t mode = (cc_mode_t)(k % CC_MODE_COUNT);
    int off = misaligned < 0 ? (k / CC_MODE_COUNT) % 2 : misaligned;
    size_t misalign = off ? cc_size(d) : 0;
    int failures = c->failures;
    double t0 = cc_now();

    c->coll = coll->name;
    c->dtype = d;
    c->op = op;
    c->count = count;
    c->in_place = in_place;
    c->root = coll->rooted ? k % c->size : -1;
    run->seed = cc_mix(0x5eed0000ull + (uint64_t)k);
    cc_arena_reset();
    coll->fn(run, mode, misalign);
    run->cases_run++;
    if (verbose && c->rank == 0)
        printf("%s %s %s count=%zu in_place=%d root=%d mode=%d: %s (%.3f s)\n", coll->name,
               cc_dtype_str(d), cc_op_str(op), count, in_place, c->root, (int)mode,
               c->failures == failures ? "ok" : "FAILED", cc_now() - t0);
}

typedef struct {
    int small, big, verbose;
    int registered;   /* buffers from sc_mem_alloc */
    int dtype;        /* -1: every dtype */
    int op;           /* -1: every op */
    long long count;  /* -1: the count matrix; else only this count, every dtype x op */
} cc_opts_t;

/* Whether no dtype before d in cc_dtypes has d's size. */
static int cc_first_of_its_size(sc_dtype_t d)
{
    for (size_t i = 0; cc_dtypes[i] != d; i++)
        if (cc_size(cc_dtypes[i]) == cc_size(d))
            return 0;
    return 1;
}

/* Small counts: every dtype x op. The large count: every dtype with sum (or no op), plus
 * float32 with every op; each in place and out of place. The collectives that only move
 * bytes (allgather, broadcast, alltoall) see a dtype only as its size (coll_api.c and
 * the algorithms; the reductions alone read the values): their large count runs for the
 * first dtype of each of the four sizes, out of place with aligned buffers and in place
 * with buffers one element off, unless --dtype names one. The large cases left out
 * still take their turn (case_no), so that every other case runs as before. */
static void cc_run_coll(cc_run_t *run, const cc_coll_t *coll, const cc_opts_t *o)
{
    int p = run->ctx.size;
    size_t counts[4] = {0, 1, (size_t)p - 1, (size_t)p + 1};
    size_t ncounts = 0, uniq[4];
    /* reduce_scatter's sendbuf holds count * p elements and each rank's reference costs
     * p inputs per element: its large count is split over the ranks, so that its
     * sendbuf is about as large as allreduce's. */
    size_t big_count = coll->fn == case_reduce_scatter ? (CC_BIG_COUNT + (size_t)p - 1) / (size_t)p
                                                       : CC_BIG_COUNT;

    if (o->count >= 0) {
        uniq[ncounts++] = (size_t)o->count;
    } else {
        for (size_t i = 0; i < 4; i++) {
            int dup = 0;
            for (size_t j = 0; j < ncounts; j++)
                dup |= uniq[j] == counts[i];
            if (!dup)
                uniq[ncounts++] = counts[i];
        }
    }
    for (size_t di = 0; di < CC_NELEM(cc_dtypes); di++) {
        sc_dtype_t d = cc_dtypes[di];
        if (o->dtype >= 0 && (int)d != o->dtype)
            continue;
        for (size_t oi = 0; oi < (coll->reduces ? CC_NELEM(cc_ops) : 1); oi++) {
            sc_op_t op = coll->reduces ? cc_ops[oi] : CC_NO_OP;
            if (coll->reduces && (!cc_op_applies(d, op) || (o->op >= 0 && (int)op != o->op)))
                continue;
            for (int in_place = 0; in_place < 2; in_place++) {
                if (o->small || o->count >= 0)
                    for (size_t ci = 0; ci < ncounts; ci++)
                        cc_run_case(run, coll, d, op, uniq[ci], in_place, -1, o->verbose);
                if (!o->big || o->count >= 0 ||
                    (op != SC_SUM && op != CC_NO_OP && d != SC_FLOAT32))
                    continue;
                if (coll->reduces || o->dtype >= 0)
                    cc_run_case(run, coll, d, op, big_count, in_place, -1, o->verbose);
                else if (cc_first_of_its_size(d))
                    cc_run_case(run, coll, d, op, big_count, in_place, in_place, o->verbose);
                else
                    run->case_no++;
            }
        }
    }
}

static void usage(void)
{
    fprintf(stderr,
            "usage: test_collectives --coll NAME [--small-only | --big-only] [--dtype D]\n"
            "                        [--op OP] [--count N] [--registered] [--verbose]\n"
            "  NAME: allreduce reduce_scatter allgather broadcast reduce alltoall all\n"
            "  Counts 0, 1, n-1, n+1 (every dtype x op) and %zu (every dtype with sum,\n"
            "  float32 with every op; reduce_scatter: %zu/n rounded up; allgather,\n"
            "  broadcast, alltoall: one dtype per element size), in place and out of\n"
            "  place. --dtype/--op restrict the matrix, --count N runs only count N.\n"
            "  --registered: every buffer in memory from sc_mem_alloc, at the same offset\n"
            "  on every rank (the collectives then read their peers' buffers in place).\n"
            "  Exits 1 on a failure.\n",
            CC_BIG_COUNT, CC_BIG_COUNT);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"coll", required_argument, NULL, 'c'},
                                         {"small-only", no_argument, NULL, 's'},
                                         {"big-only", no_argument, NULL, 'b'},
                                         {"dtype", required_argument, NULL, 'd'},
                                         {"op", required_argument, NULL, 'o'},
                                         {"count", required_argument, NULL, 'n'},
                                         {"verbose", no_argument, NULL, 'v'},
                                         {"registered", no_argument, NULL, 'R'},
                                         {NULL, 0, NULL, 0}};
    cc_opts_t o = {1, 1, 0, 0, -1, -1, -1};
    const char *which = NULL;
    int opt, total_failures, matched = 0;
    cc_run_t run = {0};
    double t0 = cc_now();
    char *end;

    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'c': which = optarg; break;
        case 's': o.big = 0; break;
        case 'b': o.small = 0; break;
        case 'v': o.verbose = 1; break;
        case 'R': o.registered = 1; break;
        case 'd':
            for (size_t i = 0; i < CC_NELEM(cc_dtypes); i++)
                if (strcmp(optarg, cc_dtype_str(cc_dtypes[i])) == 0)
                    o.dtype = (int)cc_dtypes[i];
            if (o.dtype < 0) {
                usage();
                return 2;
            }
            break;
        case 'o':
            for (size_t i = 0; i < CC_NELEM(cc_ops); i++)
                if (strcmp(optarg, cc_op_str(cc_ops[i])) == 0)
                    o.op = (int)cc_ops[i];
            if (o.op < 0) {
                usage();
                return 2;
            }
            break;
        case 'n':
            o.count = strtoll(optarg, &end, 10);
            if (*end || o.count < 0) {
                usage();
                return 2;
            }
            break;
        default: usage(); return 2;
        }
    }
    if (!which || optind != argc || (!o.small && !o.big)) {
        usage();
        return 2;
    }
    run.ctx.coll = "sc_comm_init_from_env";
    run.ctx.root = -1;
    run.ctx.op = CC_NO_OP;
    cc_check_status(&run.ctx, sc_comm_init_from_env(&run.ctx.comm), "sc_comm_init_from_env");
    run.ctx.rank = sc_comm_rank(run.ctx.comm);
    run.ctx.size = sc_comm_size(run.ctx.comm);
    if (o.registered) {
        /* The largest case: an alltoall of the largest count of float64 (both buffers p
         * blocks), with guards; the small counts go up to p + 1. */
        size_t n = o.count >= 0 ? (size_t)o.count : o.big ? CC_BIG_COUNT
                                                           : (size_t)run.ctx.size + 1;
        cc_arena.bytes = 2 * (size_t)run.ctx.size * n * 8 + 4096;
        cc_check_status(&run.ctx, sc_mem_alloc(run.ctx.comm, cc_arena.bytes,
                                               (void **)&cc_arena.base), "sc_mem_alloc");
    }
    for (size_t i = 0; i < CC_NELEM(cc_colls); i++) {
        if (strcmp(which, "all") != 0 && strcmp(which, cc_colls[i].name) != 0)
            continue;
        matched = 1;
        cc_run_coll(&run, &cc_colls[i], &o);
    }
    if (!matched) {
        usage();
        return 2;
    }
    run.ctx.coll = "final";
    total_failures = cc_total_failures(&run.ctx);
    if (cc_arena.base)
        cc_check_status(&run.ctx, sc_mem_free(run.ctx.comm, cc_arena.base), "sc_mem_free");
    cc_check_status(&run.ctx, sc_comm_destroy(run.ctx.comm), "sc_comm_destroy");
    if (run.ctx.rank == 0)
        printf("%s: %d cases on %d ranks, %d failures (%.2f s)\n", which, run.cases_run,
               run.ctx.size, total_failures, cc_now() - t0);
    return total_failures || run.ctx.failures ? 1 : 0;
}
