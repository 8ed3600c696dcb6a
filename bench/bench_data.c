/* sc-bench's correctness check: inputs derived from (seed, rank, index), and each
 * rank's outputs compared with values it computes on its own, as nccl-tests does. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "bench_data.h"

/* The values of one call: which op they are chosen for (SC_OP_COUNT for a
 * collective that only moves data) decides their range. */
typedef struct {
    sc_dtype_t dtype;
    sc_op_t op;
    int nranks;
    uint64_t seed;
} sc_bench_pattern_t;

uint64_t sc_bench_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static sc_bench_pattern_t sc_bench_pattern_make(const sc_bench_call_t *call,
                                                uint64_t seed)
{
    sc_bench_pattern_t p = {call->dtype, call->op, call->nranks, seed};

    if (!sc_bench_coll_reduces(call->coll))
        p.op = SC_OP_COUNT;
    return p;
}

/* How many ranks' inputs a sum may add while every partial sum stays an integer the
 * dtype holds exactly (|input| at most 1 for float8, 2 for the others): e5m2 holds the
 * integers up to 8, e4m3 up to 16, bfloat16 up to 256, float16 up to 2048. */
static int sc_bench_exact_terms(sc_dtype_t dtype)
{
    switch (dtype) {
    case SC_FLOAT8_E5M2: return 8;
    case SC_FLOAT8_E4M3: return 16;
    case SC_BFLOAT16: return 128;
    case SC_FLOAT16: return 1024;
    default: return INT_MAX;
    }
}

/* Input element `index` of `rank`, as an integer every dtype holds exactly. */
static int64_t sc_bench_value(const sc_bench_pattern_t *p, int rank, size_t index)
{
    uint64_t h = sc_bench_mix(sc_bench_mix(p->seed * 0x100000001b3ull + (uint64_t)rank) +
                              index);
    int is_unsigned = p->dtype == SC_UINT8;
    int fp8 = p->dtype == SC_FLOAT8_E4M3 || p->dtype == SC_FLOAT8_E5M2;
    int64_t v;

    switch (p->op) {
    case SC_PROD:
        /* |product| stays 2 whatever the number of ranks: no overflow in any dtype. */
        v = (!is_unsigned && (h & 1)) ? -1 : 1;
        if (index % (size_t)p->nranks == (size_t)rank)
            v *= 2;
        return v;
    case SC_SUM:
    case SC_AVG: {
        /* More ranks than the dtype's exact terms: the ranks fall into groups of at most
         * that many (rank modulo the number of groups) and only index's group's inputs
         * are nonzero, so that any order of the sum gives the exact one. */
        int terms = sc_bench_exact_terms(p->dtype);
        size_t groups = p->nranks > terms ? (size_t)(p->nranks - 1) / (size_t)terms + 1 : 1;

        if ((size_t)rank % groups != index % groups)
            return 0;
        if (fp8)
            return (int64_t)(h % 3) - 1;
        return is_unsigned ? (int64_t)(h % 5) : (int64_t)(h % 5) - 2;
    }
    default:
        if (fp8)
            return (int64_t)(h % 17) - 8;
        return is_unsigned ? (int64_t)(h % 201) : (int64_t)(h % 201) - 100;
    }
}

/* The reduction over all ranks of element `index`, in 64-bit two's complement
 * arithmetic; it is exact for the float dtypes and equals the wrapped integer
 * result once narrowed with sc_bench_int_wrap. avg gives the sum. */
static int64_t sc_bench_fold(const sc_bench_pattern_t *p, size_t index)
{
    uint64_t acc = (uint64_t)sc_bench_value(p, 0, index);

    for (int k = 1; k < p->nranks; k++) {
        int64_t v = sc_bench_value(p, k, index);

        switch (p->op) {
        case SC_PROD: acc *= (uint64_t)v; break;
        case SC_MIN: acc = (v < (int64_t)acc) ? (uint64_t)v : acc; break;
        case SC_MAX: acc = (v > (int64_t)acc) ? (uint64_t)v : acc; break;
        default: acc += (uint64_t)v; break;
        }
    }
    return (int64_t)acc;
}

/* float8 (E4M3FN: 3 mantissa bits, bias 7; E5M2: 2 and 15) of an integer the format
 * holds exactly, and any code back to a double; written here again so that the check
 * does not share code with the library. */
static uint8_t sc_bench_fp8_from_int(sc_dtype_t dtype, int64_t k)
{
    int m_bits = dtype == SC_FLOAT8_E4M3 ? 3 : 2, bias = dtype == SC_FLOAT8_E4M3 ? 7 : 15;
    uint8_t sign = k < 0 ? 0x80 : 0;
    int64_t a = k < 0 ? -k : k;
    int e = 0;

    if (a == 0)
        return sign;
    while ((a >> (e + 1)) != 0)
        e++;
    /* a = 2^e * (1 + f / 2^m_bits), exactly */
    int64_t f = ((a << m_bits) >> e) - ((int64_t)1 << m_bits);
    return (uint8_t)(sign | ((e + bias) << m_bits) | f);
}

static double sc_bench_fp8_to_double(sc_dtype_t dtype, uint8_t c)
{
    int m_bits = dtype == SC_FLOAT8_E4M3 ? 3 : 2, bias = dtype == SC_FLOAT8_E4M3 ? 7 : 15;
    int e = (c & 0x7f) >> m_bits, f = c & ((1 << m_bits) - 1);
    double v;

    if (dtype == SC_FLOAT8_E4M3 ? (c & 0x7f) == 0x7f : e == 31)
        return NAN; /* (an e5m2 infinity never is an expected value either) */
    v = e ? ldexp(1.0 + ldexp(f, -m_bits), e - bias) : ldexp(f, 1 - bias - m_bits);
    return (c & 0x80) ? -v : v;
}

/* v narrowed to the integer dtype, two's complement, and widened back. */
static int64_t sc_bench_int_wrap(sc_dtype_t dtype, int64_t v)
{
    switch (dtype) {
    case SC_INT8: return (int8_t)(uint8_t)v;
    case SC_UINT8: return (uint8_t)v;
    case SC_INT32: return (int32_t)(uint32_t)v;
    default: return v;
    }
}

/* IEEE binary16 from float, round to nearest even (the shardcomm kernels' rule);
 * written here again so that the check does not share code with the library. */
static uint16_t sc_bench_half_from_float(float f)
{
    uint32_t x, sign, abs;

    memcpy(&x, &f, sizeof(x));
    sign = (x >> 16) & 0x8000u;
    abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u);
    if (abs >= 0x477ff000u) /* rounds to 65520 or more: infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (abs < 0x38800000u) /* below 2^-14: subnormal, in units of 2^-24 */
        return (uint16_t)(sign | (uint32_t)nearbyintf(fabsf(f) * 16777216.0f));
    abs += 0xc8000fffu + ((abs >> 13) & 1u); /* rebias the exponent, round to even */
    return (uint16_t)(sign | (abs >> 13));
}

static float sc_bench_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu, x;
    float f;

    if (exp == 0) {
        f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    }
    if (exp == 31)
        x = sign | 0x7f800000u | (mant << 13);
    else
        x = sign | ((exp + 112) << 23) | (mant << 13);
    memcpy(&f, &x, sizeof(f));
    return f;
}

static uint16_t sc_bench_bfloat16_from_float(float f)
{
    uint32_t x;

    memcpy(&x, &f, sizeof(x));
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static float sc_bench_bfloat16_to_float(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;

    memcpy(&f, &x, sizeof(f));
    return f;
}

static void sc_bench_store(sc_dtype_t dtype, void *buf, size_t i, int64_t v)
{
    switch (dtype) {
    case SC_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case SC_FLOAT64: ((double *)buf)[i] = (double)v; break;
    case SC_FLOAT16: ((uint16_t *)buf)[i] = sc_bench_half_from_float((float)v); break;
    case SC_BFLOAT16: ((uint16_t *)buf)[i] = sc_bench_bfloat16_from_float((float)v); break;
    case SC_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case SC_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case SC_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case SC_FLOAT8_E4M3:
    case SC_FLOAT8_E5M2: ((uint8_t *)buf)[i] = sc_bench_fp8_from_int(dtype, v); break;
    default: ((int64_t *)buf)[i] = v; break;
    }
}

static double sc_bench_load_float(sc_dtype_t dtype, const void *buf, size_t i)
{
    switch (dtype) {
    case SC_FLOAT32: return ((const float *)buf)[i];
    case SC_FLOAT16: return sc_bench_half_to_float(((const uint16_t *)buf)[i]);
    case SC_BFLOAT16: return sc_bench_bfloat16_to_float(((const uint16_t *)buf)[i]);
    case SC_FLOAT8_E4M3:
    case SC_FLOAT8_E5M2: return sc_bench_fp8_to_double(dtype, ((const uint8_t *)buf)[i]);
    default: return ((const double *)buf)[i];
    }
}

static int64_t sc_bench_load_int(sc_dtype_t dtype, const void *buf, size_t i)
{
    switch (dtype) {
    case SC_INT8: return ((const int8_t *)buf)[i];
    case SC_UINT8: return ((const uint8_t *)buf)[i];
    case SC_INT32: return ((const int32_t *)buf)[i];
    default: return ((const int64_t *)buf)[i];
    }
}

/* A NaN for the float dtypes, the most negative value (all ones for uint8) for the
 * integers: no value the inputs or their reductions take. */
static void sc_bench_sentinel(sc_dtype_t dtype, unsigned char *bytes)
{
    static const uint16_t half_nan = 0x7e00u, bfloat16_nan = 0x7fc0u;
    static const uint8_t e4m3_nan = 0x7fu, e5m2_nan = 0x7eu;
    float f = NAN;
    double d = NAN;
    int8_t i8 = INT8_MIN;
    uint8_t u8 = UINT8_MAX;
    int32_t i32 = INT32_MIN;
    int64_t i64 = INT64_MIN;

    switch (dtype) {
    case SC_FLOAT32: memcpy(bytes, &f, sizeof(f)); break;
    case SC_FLOAT64: memcpy(bytes, &d, sizeof(d)); break;
    case SC_FLOAT16: memcpy(bytes, &half_nan, sizeof(half_nan)); break;
    case SC_BFLOAT16: memcpy(bytes, &bfloat16_nan, sizeof(bfloat16_nan)); break;
    case SC_INT8: memcpy(bytes, &i8, sizeof(i8)); break;
    case SC_UINT8: memcpy(bytes, &u8, sizeof(u8)); break;
    case SC_INT32: memcpy(bytes, &i32, sizeof(i32)); break;
    case SC_FLOAT8_E4M3: memcpy(bytes, &e4m3_nan, 1); break;
    case SC_FLOAT8_E5M2: memcpy(bytes, &e5m2_nan, 1); break;
    default: memcpy(bytes, &i64, sizeof(i64)); break;
    }
}

static void sc_bench_fill_sentinel(sc_dtype_t dtype, void *buf, size_t count)
{
    unsigned char s[8];
    size_t elem = sc_dtype_size(dtype);

    sc_bench_sentinel(dtype, s);
    for (size_t i = 0; i < count; i++)
        memcpy((char *)buf + i * elem, s, elem);
}

static size_t sc_bench_count_not_sentinel(sc_dtype_t dtype, const void *buf, size_t count)
{
    unsigned char s[8];
    size_t elem = sc_dtype_size(dtype), wrong = 0;

    sc_bench_sentinel(dtype, s);
    for (size_t i = 0; i < count; i++)
        wrong += memcmp((const char *)buf + i * elem, s, elem) != 0;
    return wrong;
}

/* buf[j] = input element first + j of rank, for j < count. */
static void sc_bench_fill_input(const sc_bench_pattern_t *p, int rank, void *buf,
                                size_t first, size_t count)
{
    for (size_t j = 0; j < count; j++)
        sc_bench_store(p->dtype, buf, j, sc_bench_value(p, rank, first + j));
}

/* Largest accepted |got - want| / max(1, |want|) for avg of float32 and float64: about
 * one ulp; for the narrow floats, their ulp relative to the significand. */
static double sc_bench_avg_tolerance(sc_dtype_t dtype)
{
    switch (dtype) {
    case SC_FLOAT16: return 0x1p-10;
    case SC_BFLOAT16: return 0x1p-7;
    case SC_FLOAT8_E4M3: return 0x1p-3;
    case SC_FLOAT8_E5M2: return 0x1p-2;
    case SC_FLOAT32: return 0x1p-22;
    default: return 0x1p-50;
    }
}

/* x rounded to a float8 format, to nearest even (x far below its largest value). */
static double sc_bench_fp8_round(sc_dtype_t dtype, double x)
{
    int m_bits = dtype == SC_FLOAT8_E4M3 ? 3 : 2, emin = dtype == SC_FLOAT8_E4M3 ? -6 : -14;
    int e;
    double q;

    if (x == 0.0)
        return x;
    (void)frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
    q = ldexp(1.0, (e - 1 < emin ? emin : e - 1) - m_bits);
    return nearbyint(x / q) * q;
}

/* The float32 value x rounded to a narrow float dtype. */
static double sc_bench_round(sc_dtype_t dtype, float x)
{
    switch (dtype) {
    case SC_FLOAT16: return sc_bench_half_to_float(sc_bench_half_from_float(x));
    case SC_BFLOAT16: return sc_bench_bfloat16_to_float(sc_bench_bfloat16_from_float(x));
    default: return sc_bench_fp8_round(dtype, x);
    }
}

/* avg of the narrow floats multiplies every input by 1 / nranks first (rounded to the
 * dtype, as NCCL's avg premultiplies); float32 and float64 divide the sum. */
static int sc_bench_avg_premultiplies(sc_dtype_t dtype)
{
    return dtype == SC_FLOAT16 || dtype == SC_BFLOAT16 || dtype == SC_FLOAT8_E4M3 ||
           dtype == SC_FLOAT8_E5M2;
}

/* Whether element i of buf holds the average of input element index: premultiplied,
 * the exact sum of the rounded products within half an ulp of their magnitudes' sum
 * per each of the nranks - 1 sums; else v / nranks (v the sum) within about an ulp. */
static int sc_bench_avg_matches(const sc_bench_pattern_t *p, const void *buf, size_t i,
                                size_t index, int64_t v)
{
    double got = sc_bench_load_float(p->dtype, buf, i), want = 0.0, mag = 0.0;
    double ulp = sc_bench_avg_tolerance(p->dtype);

    if (!sc_bench_avg_premultiplies(p->dtype)) {
        want = (double)v / p->nranks;
        return fabs(got - want) <= ulp * fmax(1.0, fabs(want));
    }
    for (int r = 0; r < p->nranks; r++) {
        float product = (float)sc_bench_value(p, r, index) * (float)(1.0 / p->nranks);
        double q = sc_bench_round(p->dtype, product);
        want += q;
        mag += fabs(q);
    }
    return fabs(got - want) <= (p->nranks - 1) * ulp / 2 * mag;
}

/* Whether element i of buf holds v (the reduction of input element index; the sum for
 * avg). Integers compare after wrapping v to the dtype. */
static int sc_bench_matches(const sc_bench_pattern_t *p, const void *buf, size_t i,
                            size_t index, int64_t v)
{
    if (!sc_bench_dtype_is_float(p->dtype))
        return sc_bench_load_int(p->dtype, buf, i) == sc_bench_int_wrap(p->dtype, v);
    if (p->op == SC_AVG)
        return sc_bench_avg_matches(p, buf, i, index, v);
    return sc_bench_load_float(p->dtype, buf, i) == (double)v;
}

/* Wrong elements among buf[j], j < count, expected to be the reduction of input
 * elements first + j. */
static size_t sc_bench_check_reduced(const sc_bench_pattern_t *p, const void *buf,
                                     size_t first, size_t count)
{
    size_t wrong = 0;

    for (size_t j = 0; j < count; j++)
        wrong += !sc_bench_matches(p, buf, j, first + j, sc_bench_fold(p, first + j));
    return wrong;
}

/* Wrong elements among buf[j], j < count, expected to be input elements first + j
 * of rank. */
static size_t sc_bench_check_copied(const sc_bench_pattern_t *p, int rank,
                                    const void *buf, size_t first, size_t count)
{
    sc_bench_pattern_t copy = *p;
    size_t wrong = 0;

    /* A copy compares exactly, whatever op the call had (an in-place reduce's input
     * stays on the ranks that are not its root). */
    copy.op = SC_OP_COUNT;
    for (size_t j = 0; j < count; j++)
        wrong += !sc_bench_matches(&copy, buf, j, first + j, sc_bench_value(p, rank, first + j));
    return wrong;
}

void sc_bench_data_fill(const sc_bench_call_t *c, uint64_t seed)
{
    sc_bench_pattern_t p = sc_bench_pattern_make(c, seed);
    size_t recv_count = c->count;

    switch (c->coll) {
    case SC_BENCH_REDUCE_SCATTER:
    case SC_BENCH_ALLTOALL:
        sc_bench_fill_input(&p, c->rank, c->sendbuf, 0, c->total);
        break;
    case SC_BENCH_ALLGATHER:
        recv_count = c->total;
        /* In place the input is a slice of the receive buffer: sentinel first. */
        if (c->inplace)
            sc_bench_fill_sentinel(c->dtype, c->recvbuf, c->total);
        sc_bench_fill_input(&p, c->rank, c->sendbuf, 0, c->count);
        break;
    case SC_BENCH_BROADCAST:
        if (c->inplace && c->rank != c->root)
            sc_bench_fill_sentinel(c->dtype, c->sendbuf, c->count);
        else
            sc_bench_fill_input(&p, c->rank, c->sendbuf, 0, c->count);
        break;
    default:
        sc_bench_fill_input(&p, c->rank, c->sendbuf, 0, c->count);
        break;
    }
    if (!c->inplace)
        sc_bench_fill_sentinel(c->dtype, c->recvbuf, recv_count);
}

size_t sc_bench_data_check(const sc_bench_call_t *c, uint64_t seed)
{
    sc_bench_pattern_t p = sc_bench_pattern_make(c, seed);
    size_t elem = sc_dtype_size(c->dtype), wrong = 0;

    switch (c->coll) {
    case SC_BENCH_ALLREDUCE:
        return sc_bench_check_reduced(&p, c->recvbuf, 0, c->count);
    case SC_BENCH_REDUCE_SCATTER:
        return sc_bench_check_reduced(&p, c->recvbuf, (size_t)c->rank * c->count,
                                      c->count);
    case SC_BENCH_REDUCE:
        if (c->rank == c->root)
            return sc_bench_check_reduced(&p, c->recvbuf, 0, c->count);
        if (c->inplace)
            return sc_bench_check_copied(&p, c->rank, c->recvbuf, 0, c->count);
        return sc_bench_count_not_sentinel(c->dtype, c->recvbuf, c->count);
    case SC_BENCH_BROADCAST:
        return sc_bench_check_copied(&p, c->root, c->recvbuf, 0, c->count);
    case SC_BENCH_ALLGATHER:
        for (int k = 0; k < c->nranks; k++)
            wrong += sc_bench_check_copied(&p, k,
                                           (const char *)c->recvbuf +
                                               (size_t)k * c->count * elem,
                                           0, c->count);
        return wrong;
    case SC_BENCH_ALLTOALL:
        for (int k = 0; k < c->nranks; k++)
            wrong += sc_bench_check_copied(&p, k,
                                           (const char *)c->recvbuf +
                                               (size_t)k * c->count * elem,
                                           (size_t)c->rank * c->count, c->count);
        return wrong;
    case SC_BENCH_SENDRECV:
        return sc_bench_check_copied(&p, (c->rank + c->nranks - 1) % c->nranks, c->recvbuf,
                                     0, c->count);
    default:
        return c->total;
    }
}
