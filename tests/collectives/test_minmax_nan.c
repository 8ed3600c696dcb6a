/* min and max where one rank's element is NaN: the result is the type's canonical quiet
 * NaN (types.h), not the other ranks' value as C's fmin and fmax would give, on every
 * rank, for every float type; every other element is the exact min or max of the
 * ranks' small integers. One NaN per five elements, held by a different rank each time,
 * with a sign and payload of its own. Through allreduce, reduce_scatter and reduce to
 * the last rank; 7 elements per block (recursive doubling, the tree) and 40000 (the
 * ring or the staging segment); plain and registered memory (sc_mem_alloc). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/cast_spec.h"
#include "collectives/fp8_spec.h"

static int g_rank, g_size;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"
#include "../common/sc_bits.h"

static const sc_dtype_t types[] = {SC_FLOAT32, SC_FLOAT64, SC_FLOAT16, SC_BFLOAT16,
                                   SC_FLOAT8_E4M3, SC_FLOAT8_E5M2};

/* Each type's canonical quiet NaN, and a NaN input that differs from it in sign and
 * payload. */
static uint64_t canonical_nan(sc_dtype_t t)
{
    switch (t) {
    case SC_FLOAT32: return 0x7fc00000u;
    case SC_FLOAT64: return 0x7ff8000000000000ull;
    case SC_FLOAT16: return 0x7e00u;
    case SC_BFLOAT16: return 0x7fc0u;
    case SC_FLOAT8_E4M3: return 0x7fu;
    default: return 0x7eu;
    }
}

static uint64_t input_nan(sc_dtype_t t)
{
    switch (t) {
    case SC_FLOAT32: return 0xffc12345u;
    case SC_FLOAT64: return 0xfff8000000012345ull;
    case SC_FLOAT16: return 0xfe01u;
    case SC_BFLOAT16: return 0xffc1u;
    default: return 0xffu;
    }
}

/* An integer from -5 to 5, exact in every float type. */
static uint64_t encode(sc_dtype_t t, int v)
{
    uint32_t b = f32_bits((float)v);
    double d = v;
    uint64_t u;

    switch (t) {
    case SC_FLOAT32: return b;
    case SC_FLOAT64: memcpy(&u, &d, 8); return u;
    case SC_FLOAT16: return sc_spec_f32_to_f16(b);
    case SC_BFLOAT16: return sc_spec_f32_to_bf16(b);
    case SC_FLOAT8_E4M3: return sc_fp8_e4m3_from_f32(b);
    default: return sc_fp8_e5m2_from_f32(b);
    }
}

static int value(size_t i, int rank)
{
    return (int)((i * 5 + (size_t)rank * 3) % 11) - 5;
}

/* Element i holds a NaN on one rank, a different one each fifth element. */
static int nan_rank(size_t i)
{
    return i % 5 == 0 ? (int)(i / 5 % (size_t)g_size) : -1;
}

static void store(sc_dtype_t t, void *buf, size_t i, uint64_t bits)
{
    size_t es = sc_dtype_size(t);
    memcpy((char *)buf + i * es, &bits, es); /* little-endian: the low bytes */
}

static uint64_t load(sc_dtype_t t, const void *buf, size_t i)
{
    uint64_t bits = 0;
    memcpy(&bits, (const char *)buf + i * sc_dtype_size(t), sc_dtype_size(t));
    return bits;
}

static uint64_t want(sc_dtype_t t, sc_op_t op, size_t i)
{
    int m = value(i, 0);

    if (nan_rank(i) >= 0)
        return canonical_nan(t);
    for (int r = 1; r < g_size; r++)
        m = op == SC_MIN ? (value(i, r) < m ? value(i, r) : m)
                         : (value(i, r) > m ? value(i, r) : m);
    return encode(t, m);
}

/* Elements [first, first + n) of the result in out, as want says. */
static int check(const char *what, sc_dtype_t t, sc_op_t op, const void *out, size_t first,
                 size_t n, size_t count, int registered)
{
    for (size_t j = 0; j < n; j++) {
        uint64_t got = load(t, out, j), w = want(t, op, first + j);
        CHECK(got == w, "%s %s %s, %zu elements%s: element %zu is 0x%llx, expected 0x%llx "
              "(NaN on rank %d)", what, sc_dtype_name(t), sc_op_name(op), count,
              registered ? ", registered" : "", first + j, (unsigned long long)got,
              (unsigned long long)w, nan_rank(first + j));
    }
    return 0;
}

static int check_type(sc_comm_t *comm, sc_dtype_t t, sc_op_t op, size_t count, int registered)
{
    size_t es = sc_dtype_size(t), total = count * (size_t)g_size, bytes = total * es;
    void *in, *out;
    int root = g_size - 1, rc = 1;

    if (registered) {
        CHECK_OK(sc_mem_alloc(comm, bytes, &in));
        CHECK_OK(sc_mem_alloc(comm, bytes, &out));
    } else {
        in = malloc(bytes);
        out = malloc(bytes);
        CHECK(in && out, "out of memory");
    }
    for (size_t i = 0; i < total; i++)
        store(t, in, i, nan_rank(i) == g_rank ? input_nan(t) : encode(t, value(i, g_rank)));
    CHECK_OK(sc_allreduce(in, out, total, t, op, comm, NULL, NULL));
    if (check("allreduce", t, op, out, 0, total, total, registered))
        goto out;
    CHECK_OK(sc_reduce_scatter(in, out, count, t, op, comm, NULL, NULL));
    if (check("reduce_scatter", t, op, out, (size_t)g_rank * count, count, count, registered))
        goto out;
    CHECK_OK(sc_reduce(in, out, total, t, op, root, comm, NULL, NULL));
    if (g_rank == root && check("reduce", t, op, out, 0, total, total, registered))
        goto out;
    rc = 0;
out:
    if (registered) {
        CHECK_OK(sc_mem_free(comm, in));
        CHECK_OK(sc_mem_free(comm, out));
    } else {
        free(in);
        free(out);
    }
    return rc;
}

int main(void)
{
    const size_t counts[] = {7, 40000};
    const sc_op_t ops[] = {SC_MIN, SC_MAX};
    sc_comm_t *comm;

    CHECK_OK(sc_comm_init_from_env(&comm));
    g_rank = sc_comm_rank(comm);
    g_size = sc_comm_size(comm);
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
        for (size_t o = 0; o < 2; o++)
            for (size_t c = 0; c < 2; c++)
                for (int registered = 0; registered < 2; registered++)
                    if (check_type(comm, types[t], ops[o], counts[c], registered))
                        return 1;
    CHECK_OK(sc_comm_destroy(comm));
    printf("PASS: min and max of a NaN are the canonical NaN on every rank (rank %d)\n",
           g_rank);
    return 0;
}
