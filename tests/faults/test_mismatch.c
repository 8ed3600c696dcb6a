/* Specs of collective calls that disagree across ranks: the last rank issues a call that
 * differs from everyone else's in one argument, and every rank gets SC_ERR_MISMATCH
 * with a sentence naming both calls, within SC_TIMEOUT; later calls fail the same way.
 *
 * Usage (under scrun): test_mismatch different_WHAT SIZE ORDER
 *   SIZE  small: 1000 elements (recursive doubling, binomial tree)
 *         large: 300001 elements (ring, pipelined chain)
 *         COUNT: that many elements
 *   ORDER odd-first: the differing rank issues its call 0.2 s before the others
 *         odd-last:  0.2 s after them (its peers' receives are already posted)
 *
 * Which ranks fail in the mismatched call itself: every rank checks its call against
 * its two ring neighbours before it computes anything, so the differing rank and its
 * neighbours always do. With 4 ranks the rank opposite the differing one may complete
 * the call (only with the data its own call defines) and then fails in the next call
 * (a barrier), after the abort notice of a rank that detected the mismatch.
 * A call that succeeds must hold exactly what its own arguments define (no silent
 * wrong data); a failed call may have written part of recvbuf (collectives.h). */
#include <stdint.h>

#include "fault_util.h"

#define SMALL_COUNT 1000
#define LARGE_COUNT 300001
#define STAGGER_S 0.2
#define SENTINEL 0xA5

typedef enum { CALL_ALLREDUCE, CALL_BROADCAST } call_kind_t;

typedef struct {
    call_kind_t kind;
    size_t extra;    /* elements added to the test's count */
    sc_dtype_t dtype;
    sc_op_t op;      /* allreduce */
    int root;        /* broadcast */
} call_t;

typedef struct {
    sc_comm_t *comm;
    int rank, size, odd;
    size_t count;    /* the test's count, before a call's extra */
    double timeout;
} mismatch_t;

/* Input element i of rank r: small exact values, distinct per rank. */
static double input_value(int r, size_t i)
{
    return (double)((r + 1) * 2 + (int)(i % 13)) * 0.5;
}

static void fill_input(void *buf, sc_dtype_t dtype, int r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (dtype == SC_FLOAT32)
            ((float *)buf)[i] = (float)input_value(r, i);
        else
            ((int32_t *)buf)[i] = (int32_t)(2.0 * input_value(r, i));
    }
}

/* What call c defines for element i when every rank of size issued it. */
static double expected_value(const call_t *c, int size, size_t i)
{
    double v = 0.0;

    if (c->kind == CALL_BROADCAST)
        v = input_value(c->root, i);
    else if (c->op == SC_MAX)
        v = input_value(size - 1, i); /* the input grows with the rank */
    else
        for (int r = 0; r < size; r++)
            v += input_value(r, i);
    return c->dtype == SC_INT32 ? 2.0 * v : v;
}

static const char *kind_name(call_kind_t k)
{
    return k == CALL_ALLREDUCE ? "allreduce" : "broadcast";
}

/* d starts with the library's description of call c with n elements:
 * "KIND #SEQ (count N, DTYPE[, op OP][, root R], algorithm ALGO)".
 * Returns the end of the description and sets *seq, or NULL. */
static const char *match_description(const char *d, const call_t *c, size_t n,
                                     unsigned long long *seq)
{
    char head[128];
    size_t len = strlen(kind_name(c->kind));
    char *end;

    if (strncmp(d, kind_name(c->kind), len) != 0 || strncmp(d + len, " #", 2) != 0)
        return NULL;
    d += len + 2;
    *seq = strtoull(d, &end, 10);
    if (end == d)
        return NULL;
    d = end;
    if (c->kind == CALL_ALLREDUCE)
        snprintf(head, sizeof(head), " (count %zu, %s, op %s, algorithm ", n,
                 sc_dtype_name(c->dtype), sc_op_name(c->op));
    else
        snprintf(head, sizeof(head), " (count %zu, %s, root %d, algorithm ", n,
                 sc_dtype_name(c->dtype), c->root);
    if (strncmp(d, head, strlen(head)) != 0)
        return NULL;
    d += strlen(head);
    while (*d >= 'a' && *d <= 'z')
        d++;
    return *d == ')' ? d + 1 : NULL;
}

static int is_neighbour(int a, int b, int size)
{
    return a != b && ((a + 1) % size == b || (b + 1) % size == a);
}

/* The sentence says "ranks disagree: rank A called <A's call> but rank B called <B's
 * call>", where one of A and B is the differing rank and the other its neighbour, and
 * both describe the same sequence number. */
static int check_sentence(const mismatch_t *m, const char *text, const call_t *major,
                          const call_t *odd)
{
    const char *p = strstr(text, "ranks disagree: rank ");
    int who[2];
    unsigned long long seq[2];

    CHECK(p, "no 'ranks disagree' in '%s'", text);
    p += strlen("ranks disagree: ");
    for (int i = 0; i < 2; i++) {
        const call_t *c;
        int used = 0;

        CHECK(sscanf(p, i == 0 ? "rank %d called %n" : " but rank %d called %n", &who[i],
                     &used) == 1 && used > 0,
              "cannot read the %s rank of '%s'", i == 0 ? "first" : "second", text);
        CHECK(who[i] >= 0 && who[i] < m->size, "rank %d out of range in '%s'", who[i], text);
        p += used;
        c = who[i] == m->odd ? odd : major;
        p = match_description(p, c, m->count + c->extra, &seq[i]);
        CHECK(p, "rank %d's call is not described as %s of %zu %s in '%s'", who[i],
              kind_name(c->kind), m->count + c->extra, sc_dtype_name(c->dtype), text);
    }
    CHECK(*p == '\0', "text after the second call in '%s'", text);
    CHECK((who[0] == m->odd) != (who[1] == m->odd),
          "the sentence must name the differing rank %d and one other: '%s'", m->odd, text);
    CHECK(is_neighbour(who[0], who[1], m->size), "ranks %d and %d are not neighbours: '%s'",
          who[0], who[1], text);
    CHECK(seq[0] == seq[1], "sequence numbers differ in '%s'", text);
    return TEST_PASS;
}

static sc_status_t issue(const mismatch_t *m, const call_t *c, const void *in, void *out)
{
    size_t n = m->count + c->extra;

    if (c->kind == CALL_ALLREDUCE)
        return sc_allreduce(in, out, n, c->dtype, c->op, m->comm, NULL, NULL);
    return sc_broadcast(in, out, n, c->dtype, c->root, m->comm, NULL, NULL);
}

static int check_output(const mismatch_t *m, const call_t *c, const void *out)
{
    size_t n = m->count + c->extra;

    for (size_t i = 0; i < n; i++) {
        double want = expected_value(c, m->size, i);
        double got = c->dtype == SC_FLOAT32 ? (double)((const float *)out)[i]
                                            : (double)((const int32_t *)out)[i];
        CHECK(got == want, "silent wrong data: the call succeeded but element %zu is %g, "
              "its call defines %g", i, got, want);
    }
    return TEST_PASS;
}

/* A matching allreduce first: the communicator works before the mismatch. */
static int check_healthy(const mismatch_t *m)
{
    int32_t in = m->rank + 1, out = 0;

    CHECK_OK(sc_allreduce(&in, &out, 1, SC_INT32, SC_SUM, m->comm, NULL, NULL));
    CHECK(out == m->size * (m->size + 1) / 2, "sanity allreduce gave %d", out);
    return TEST_PASS;
}

static int run_mismatch(const call_t *major, const call_t *odd, int argc, char **argv)
{
    mismatch_t m = {0};
    const call_t *mine;
    size_t n, bytes;
    void *in, *out;
    fault_error_t err;
    sc_status_t st;
    int odd_first, completed;
    double t0;

    if (argc != 2 || (strcmp(argv[1], "odd-first") && strcmp(argv[1], "odd-last"))) {
        fprintf(stderr, "arguments: small|large|COUNT odd-first|odd-last\n");
        return TEST_FAIL;
    }
    m.count = strcmp(argv[0], "small") == 0   ? SMALL_COUNT
              : strcmp(argv[0], "large") == 0 ? LARGE_COUNT
                                              : strtoul(argv[0], NULL, 10);
    CHECK(m.count > 0, "bad count %s", argv[0]);
    odd_first = strcmp(argv[1], "odd-first") == 0;
    m.timeout = fault_timeout();
    CHECK_OK(sc_comm_init_from_env(&m.comm));
    m.rank = sc_comm_rank(m.comm);
    m.size = sc_comm_size(m.comm);
    m.odd = m.size - 1;
    CHECK(m.size >= 2, "needs at least 2 ranks");
    if (check_healthy(&m) != TEST_PASS)
        return TEST_FAIL;

    mine = m.rank == m.odd ? odd : major;
    n = m.count + mine->extra;
    bytes = n * sc_dtype_size(mine->dtype);
    in = malloc(bytes);
    out = malloc(bytes);
    CHECK(in && out, "out of memory");
    fill_input(in, mine->dtype, m.rank, n);
    memset(out, SENTINEL, bytes);

    if ((m.rank == m.odd) != odd_first)
        fault_sleep(STAGGER_S);
    t0 = fault_now();
    st = issue(&m, mine, in, out);
    completed = st == SC_SUCCESS;
    if (completed) {
        CHECK(m.rank != m.odd && !is_neighbour(m.rank, m.odd, m.size),
              "rank %d checks its call against rank %d, yet its mismatched call succeeded",
              m.rank, m.odd);
        if (check_output(&m, mine, out) != TEST_PASS)
            return TEST_FAIL;
        st = sc_barrier(m.comm, NULL);
    }
    fault_error_take(&err, st, t0);
    CHECK(err.status == SC_ERR_MISMATCH, "%s call returned %s: %s",
          completed ? "the barrier after the mismatched" : "the mismatched",
          sc_status_string(err.status), err.text);
    CHECK(err.elapsed < m.timeout, "the mismatch took %.3f s to report, SC_TIMEOUT is %g s",
          err.elapsed, m.timeout);
    if (check_sentence(&m, err.text, major, odd) != TEST_PASS)
        return TEST_FAIL;
    if (fault_check_later_calls_fail(m.comm, &err) != TEST_PASS)
        return TEST_FAIL;
    printf("rank %d: %s SC_ERR_MISMATCH after %.3f s: %s\n", m.rank,
           completed ? "call completed, next barrier got" : "call got", err.elapsed, err.text);
    /* A failed call's buffers may still be read and written until the communicator is
     * destroyed (collectives.h): freed after. */
    if (fault_check_destroy(m.comm, 3.0) != TEST_PASS)
        return TEST_FAIL;
    free(in);
    free(out);
    return TEST_PASS;
}

/* allreduce on every rank but the last, which calls broadcast with the same count. */
static int test_different_collective(int argc, char **argv)
{
    const call_t major = {CALL_ALLREDUCE, 0, SC_FLOAT32, SC_SUM, 0};
    const call_t odd = {CALL_BROADCAST, 0, SC_FLOAT32, SC_SUM, 0};
    return run_mismatch(&major, &odd, argc, argv);
}

/* The last rank passes one element more. */
static int test_different_count(int argc, char **argv)
{
    const call_t major = {CALL_ALLREDUCE, 0, SC_FLOAT32, SC_SUM, 0};
    const call_t odd = {CALL_ALLREDUCE, 1, SC_FLOAT32, SC_SUM, 0};
    return run_mismatch(&major, &odd, argc, argv);
}

/* The last rank passes int32 where the others pass float32: same bytes on the wire. */
static int test_different_dtype(int argc, char **argv)
{
    const call_t major = {CALL_ALLREDUCE, 0, SC_FLOAT32, SC_SUM, 0};
    const call_t odd = {CALL_ALLREDUCE, 0, SC_INT32, SC_SUM, 0};
    return run_mismatch(&major, &odd, argc, argv);
}

/* The last rank reduces with max where the others sum. */
static int test_different_op(int argc, char **argv)
{
    const call_t major = {CALL_ALLREDUCE, 0, SC_FLOAT32, SC_SUM, 0};
    const call_t odd = {CALL_ALLREDUCE, 0, SC_FLOAT32, SC_MAX, 0};
    return run_mismatch(&major, &odd, argc, argv);
}

/* broadcast from root 0 everywhere but on the last rank, which names root 1. */
static int test_different_root(int argc, char **argv)
{
    const call_t major = {CALL_BROADCAST, 0, SC_FLOAT32, SC_SUM, 0};
    const call_t odd = {CALL_BROADCAST, 0, SC_FLOAT32, SC_SUM, 1};
    return run_mismatch(&major, &odd, argc, argv);
}

/* The last rank calls sc_comm_split while the others call sc_allgather of the shape the
 * split exchanges its records with (4 int32 per rank). The split's own collective says
 * what it is part of, so every rank gets SC_ERR_MISMATCH naming sc_comm_split. Before,
 * the allgathers returned SC_SUCCESS holding the split's record, the split failed
 * saying another rank's sub was NULL, and nothing else noticed. Arguments: ORDER. */
static int test_split_against_allgather(int argc, char **argv)
{
    sc_comm_t *comm, *sub = (sc_comm_t *)(uintptr_t)0x1;
    int32_t in[4], *out;
    fault_error_t err;
    sc_status_t st;
    int rank, size, odd, completed;
    double t0, timeout = fault_timeout();

    CHECK(argc == 1 && (!strcmp(argv[0], "odd-first") || !strcmp(argv[0], "odd-last")),
          "arguments: odd-first|odd-last");
    CHECK_OK(sc_comm_init_from_env(&comm));
    rank = sc_comm_rank(comm);
    size = sc_comm_size(comm);
    odd = size - 1;
    out = malloc((size_t)size * sizeof(in));
    CHECK(out, "out of memory");
    for (int i = 0; i < 4; i++)
        in[i] = 100 * (i + 1) + rank;
    memset(out, SENTINEL, (size_t)size * sizeof(in));
    CHECK_OK(sc_barrier(comm, NULL));
    if ((rank == odd) != (strcmp(argv[0], "odd-first") == 0))
        fault_sleep(STAGGER_S);
    t0 = fault_now();
    st = rank == odd ? sc_comm_split(comm, 0, 0, &sub)
                     : sc_allgather(in, out, 4, SC_INT32, comm, NULL, NULL);
    completed = st == SC_SUCCESS;
    if (completed) /* only a rank that checks neither neighbour against the split */
        st = sc_barrier(comm, NULL);
    fault_error_take(&err, st, t0);
    CHECK(err.status == SC_ERR_MISMATCH, "%s returned %s: %s",
          completed ? "the barrier after the call" : rank == odd ? "sc_comm_split"
                                                                 : "sc_allgather",
          sc_status_string(err.status), err.text);
    CHECK(err.elapsed < timeout, "the mismatch took %.3f s to report", err.elapsed);
    CHECK(strstr(err.text, "inside sc_comm_split") != NULL,
          "the sentence does not name sc_comm_split: %s", err.text);
    if (rank == odd)
        CHECK(sub == (sc_comm_t *)(uintptr_t)0x1, "sc_comm_split wrote its output on failure");
    else if (completed)
        for (int q = 0; q < size; q++)
            for (int i = 0; i < 4; i++)
                CHECK(out[q * 4 + i] == 100 * (i + 1) + q,
                      "completed all-gather holds %d at rank %d's element %d", out[q * 4 + i],
                      q, i);
    /* The split's sentence starts "sc_comm_split: ", which later calls do not repeat. */
    if (rank == odd)
        CHECK(sc_barrier(comm, NULL) == SC_ERR_MISMATCH, "a later barrier returned %s",
              sc_last_error());
    else if (fault_check_later_calls_fail(comm, &err) != TEST_PASS)
        return TEST_FAIL;
    printf("rank %d: SC_ERR_MISMATCH after %.3f s: %s\n", rank, err.elapsed, err.text);
    if (fault_check_destroy(comm, 3.0) != TEST_PASS)
        return TEST_FAIL;
    free(out);
    return TEST_PASS;
}

int main(int argc, char **argv)
{
    static const fault_test_t tests[] = {
        {"different_collective", test_different_collective},
        {"different_count", test_different_count},
        {"different_dtype", test_different_dtype},
        {"different_op", test_different_op},
        {"different_root", test_different_root},
        {"split_against_allgather", test_split_against_allgather},
        {NULL, NULL}};
    return fault_main(tests, argc, argv);
}
