/* An allreduce whose result is delivered, range by range, to other memory
 * (sc_allreduce_delivered, the reducer's copy back): for counts from 0 to 1000003 and
 * ranges that start at 0, end at the count, leave gaps and cross chunk boundaries,
 * every range's destination must hold the result of that range, nothing around it may
 * be written, and the buffer must hold the result outside the ranges (sums of small
 * integers, exact in float32 whatever the order). Run through scrun with each
 * algorithm: test_delivered [--max-count N]. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/call.h"

static int g_rank;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

#define GUARD 64 /* bytes before and after each destination */
#define GUARD_BYTE 0xAB

static float value(int rank, size_t i)
{
    return (float)((int)((i * 13 + (size_t)rank * 7) % 17) - 8);
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Ranges over [0, n): the first starts at 0, the last ends at n (when they fit), gaps of
 * 0 to 3 elements between them, lengths up to about n/5. Returns how many. */
static int make_ranges(size_t n, uint64_t seed, sc_range_t *segs, int max)
{
    size_t at = 0, most = n / 5 > 0 ? n / 5 : 1;
    int k = 0;

    while (at < n && k < max) {
        size_t len = 1 + (size_t)(next_rand(&seed) % most);
        if (len > n - at || k == max - 1)
            len = n - at;
        segs[k].off = at * sizeof(float);
        segs[k].bytes = len * sizeof(float);
        segs[k].dst = NULL;
        k++;
        at += len + (size_t)(next_rand(&seed) % 4);
    }
    return k;
}

static int check_case(sc_comm_t *comm, size_t n, sc_op_t op, uint64_t seed, int max_ranges)
{
    int p = sc_comm_size(comm), k;
    sc_range_t segs[64];
    unsigned char *mem[64];
    float *buf = malloc((n ? n : 1) * sizeof(float));
    sc_request_t *req = NULL;

    CHECK(buf, "out of memory");
    for (size_t i = 0; i < n; i++)
        buf[i] = value(g_rank, i);
    k = make_ranges(n, seed, segs, max_ranges);
    for (int j = 0; j < k; j++) {
        mem[j] = malloc(segs[j].bytes + 2 * GUARD);
        CHECK(mem[j], "out of memory");
        memset(mem[j], GUARD_BYTE, segs[j].bytes + 2 * GUARD);
        segs[j].dst = mem[j] + GUARD;
    }
    CHECK_OK(sc_allreduce_delivered(buf, n, SC_FLOAT32, op, comm, segs, k, &req));
    CHECK_OK(sc_wait(req));
    sc_request_free(req);
    /* Each element's result: in its range's destination, or in buf outside the ranges
     * (inside them buf's bytes are unspecified: the ring makes a chunk in its
     * destination directly). */
    for (size_t i = 0, j = 0; i < n; i++) {
        float s = 0.0f, got;
        for (int r = 0; r < p; r++)
            s += value(r, i);
        while (j < (size_t)k && segs[j].off + segs[j].bytes <= i * sizeof(float))
            j++;
        got = j < (size_t)k && segs[j].off <= i * sizeof(float)
                  ? ((const float *)segs[j].dst)[i - segs[j].off / sizeof(float)]
                  : buf[i];
        if (op == SC_SUM)
            CHECK(got == s, "count %zu: element %zu is %g, the sum is %g", n, i, (double)got,
                  (double)s);
        else
            CHECK(got > s / (float)p - 1e-5f && got < s / (float)p + 1e-5f,
                  "count %zu: element %zu is %g, the average is %g", n, i, (double)got,
                  (double)(s / (float)p));
    }
    for (int j = 0; j < k; j++) {
        for (size_t b = 0; b < GUARD; b++) {
            CHECK(mem[j][b] == GUARD_BYTE && mem[j][GUARD + segs[j].bytes + b] == GUARD_BYTE,
                  "count %zu: range %d [%zu, +%zu) was written outside its destination", n,
                  j, segs[j].off, segs[j].bytes);
        }
        free(mem[j]);
    }
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    const size_t counts[] = {0, 1, 2, 7, 129, 4096, 65537, 1000003};
    size_t max_count = argc > 2 && strcmp(argv[1], "--max-count") == 0
                           ? strtoull(argv[2], NULL, 10) : (size_t)-1;
    sc_comm_t *comm;
    sc_request_t *req = NULL;
    float x = 1.0f;
    sc_range_t one = {0, sizeof(float), &x};

    CHECK_OK(sc_comm_init_from_env(&comm));
    g_rank = sc_comm_rank(comm);
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        if (counts[c] > max_count)
            continue;
        for (uint64_t s = 1; s <= 3; s++)
            if (check_case(comm, counts[c], s == 2 ? SC_AVG : SC_SUM, 0x9e3779b9u * s + c,
                           64))
                return 1;
        /* Nothing to deliver: a plain in-place allreduce. */
        if (check_case(comm, counts[c], SC_SUM, 1, 0))
            return 1;
    }
    CHECK_REFUSED(sc_allreduce_delivered(&x, 1, SC_FLOAT32, SC_SUM, NULL, &one, 1, &req),
                  SC_ERR_INVALID_COMM, "communicator is NULL");
    CHECK_OK(sc_comm_destroy(comm));
    printf("PASS: delivered allreduce (rank %d)\n", g_rank);
    return 0;
}
