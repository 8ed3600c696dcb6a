/* A caller thread that flushes subnormals (FTZ and DAZ in MXCSR, as
 * torch.set_flush_denormal(True) sets them) after sc_comm_init: reductions still keep
 * subnormals and give the same bits on every rank, whichever thread ran them (the
 * caller in sc_wait, or the progress thread while the caller computed), and the
 * caller's modes are as it set them afterwards. An allreduce of 2^-140 per rank (every
 * algorithm the size picks, and recursive doubling and the ring forced), reduce_scatter,
 * and the sparse aggregation's scatter-add; the compressed all-reduce (error feedback,
 * selection, scatter-add) of subnormal gradients; the reducer's pre-division and
 * accumulation of float64, float32 and bfloat16 gradients on the caller's thread. Then,
 * with the caller trapping invalid operations, overflow and division by zero
 * (feenableexcept), NaN, Inf and near-largest gradients through allreduce, the
 * compressed all-reduce with momentum and the top-k comm hook: no SIGFPE. x86 only
 * (skipped elsewhere). */
#define _GNU_SOURCE
#include <fenv.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shardcomm/shardcomm.h"

static int g_rank;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>

#define FTZ_DAZ 0x8040u
#define TINY 0x1.0p-140f /* a float32 subnormal */

static void sleep_ms(int ms)
{
    usleep((useconds_t)ms * 1000);
}

/* Every element must be size * TINY exactly (subnormals kept), the same bits on every
 * rank (gathered and compared). */
static int check_sum(sc_comm_t *comm, const float *out, size_t n, const char *what)
{
    int size = sc_comm_size(comm);
    float want = (float)size * TINY, *all = malloc(n * (size_t)size * sizeof(float));

    CHECK(all, "out of memory");
    for (size_t i = 0; i < n; i++)
        CHECK(out[i] == want, "%s: element %zu is %a, expected %a", what, i, (double)out[i],
              (double)want);
    CHECK_OK(sc_allgather(out, all, n, SC_FLOAT32, comm, NULL, NULL));
    for (int r = 1; r < size; r++)
        CHECK(memcmp(all, all + (size_t)r * n, n * sizeof(float)) == 0,
              "%s: rank %d's bits differ from rank 0's", what, r);
    free(all);
    CHECK((_mm_getcsr() & FTZ_DAZ) == FTZ_DAZ, "%s: the caller's FTZ and DAZ were cleared",
          what);
    return 0;
}

/* One non-blocking allreduce of n elements: the last rank computes 200 ms before it
 * waits (its progress thread runs the reduction), the others wait at once. */
static int allreduce_once(sc_comm_t *comm, size_t n, const char *what)
{
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    sc_request_t *req;

    CHECK(in && out, "out of memory");
    for (size_t i = 0; i < n; i++)
        in[i] = TINY;
    CHECK_OK(sc_allreduce(in, out, n, SC_FLOAT32, SC_SUM, comm, NULL, &req));
    if (sc_comm_rank(comm) == sc_comm_size(comm) - 1)
        sleep_ms(200);
    CHECK_OK(sc_wait(req));
    sc_request_free(req);
    if (check_sum(comm, out, n, what))
        return 1;
    free(in);
    free(out);
    return 0;
}

/* The reducer's pre-division on the caller's thread: two gradients of a dtype in one
 * bucket (copied into it, scaled by 1 / prediv = 2), one synced iteration, then one
 * without sync (accumulated in the bucket) and a synced one. Subnormals are kept: every
 * element is 2 * size * v, then 4 * size * v (exact), for float64 v = 2^-1070, float32
 * v = 2^-140 and bfloat16 v = 2^-133. Compared as bits, in units of the dtype's
 * smallest subnormal (DAZ would read both sides of a float compare as 0). */
static int reducer_steps(sc_comm_t *comm)
{
    enum { N = 5 };
    static const struct {
        sc_dtype_t dtype;
        uint64_t v; /* bits of v: v in units of the smallest subnormal */
    } cases[] = {{SC_FLOAT64, 16}, {SC_FLOAT32, 512}, {SC_BFLOAT16, 1}};
    uint64_t size = (uint64_t)sc_comm_size(comm);

    for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
        sc_dtype_t dt = cases[t].dtype;
        size_t es = sc_dtype_size(dt);
        sc_grad_desc_t desc[2] = {{N, dt, "a"}, {N, dt, "b"}};
        sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
        uint8_t g[2][N * 8];
        sc_reducer_t *r;

        cfg.prediv = 0.5;
        CHECK_OK(sc_reducer_create(comm, desc, 2, &cfg, &r));
        for (int step = 0; step < 3; step++) {
            int sync = step != 1;
            uint64_t want = (step == 2 ? 4 : 2) * size * cases[t].v, got = 0;
            CHECK_OK(sc_reducer_set_sync(r, sync));
            for (int k = 0; k < 2; k++)
                for (size_t i = 0; i < N; i++)
                    memcpy(g[k] + i * es, &cases[t].v, es); /* little-endian */
            CHECK_OK(sc_reducer_mark_ready(r, 1, g[1]));
            CHECK_OK(sc_reducer_mark_ready(r, 0, g[0]));
            CHECK_OK(sc_reducer_finalize(r));
            for (int k = 0; sync && k < 2; k++)
                for (size_t i = 0; i < N; i++) {
                    memcpy(&got, g[k] + i * es, es);
                    CHECK(got == want, "reducer %s step %d gradient %d element %zu is %" PRIu64
                          " smallest subnormals, expected %" PRIu64, sc_dtype_name(dt), step,
                          k, i, got, want);
                }
        }
        CHECK_OK(sc_reducer_destroy(r));
    }
    CHECK((_mm_getcsr() & FTZ_DAZ) == FTZ_DAZ, "reducer: the caller's FTZ and DAZ were cleared");
    return 0;
}

/* Gradients that are NaN, Inf or near the largest float, with the caller trapping
 * invalid operations, overflow and division by zero: the library's steps never raise
 * SIGFPE (which ends the test). */
static int trapped_steps(sc_comm_t *comm)
{
    enum { N = 4096 };
    static float g[N], out[N];
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
    sc_comm_hook_t hook;
    sc_reducer_config_t rcfg = SC_REDUCER_CONFIG_INIT;
    sc_grad_desc_t desc = {N, SC_FLOAT32, "g"};
    sc_compressor_t *c;
    sc_reducer_t *r;

    for (int i = 0; i < N; i++)
        g[i] = i % 7 == 0 ? 3e38f : i % 11 == 0 ? INFINITY : i % 13 == 0 ? NAN : 1e-3f * (float)i;
    cfg.density = 0.1;
    cfg.momentum = 0.9;
    CHECK_OK(sc_compressor_create(&cfg, &c));
    CHECK_OK(sc_comm_hook_topk(&cfg, &hook));
    rcfg.hook = &hook;
    CHECK_OK(sc_reducer_create(comm, &desc, 1, &rcfg, &r));
    feenableexcept(FE_INVALID | FE_OVERFLOW | FE_DIVBYZERO);
    for (int step = 0; step < 2; step++) {
        CHECK_OK(sc_allreduce(g, out, N, SC_FLOAT32, SC_AVG, comm, NULL, NULL));
        CHECK_OK(sc_compressed_allreduce(c, comm, 0, g, out, N, SC_FLOAT32, SC_AVG));
        memcpy(out, g, sizeof(out));
        CHECK_OK(sc_reducer_mark_ready(r, 0, out));
        CHECK_OK(sc_reducer_finalize(r));
    }
    fedisableexcept(FE_INVALID | FE_OVERFLOW | FE_DIVBYZERO);
    CHECK_OK(sc_reducer_destroy(r));
    sc_compressor_destroy(c);
    return 0;
}

int main(void)
{
    sc_comm_t *comm;
    int size;

    CHECK_OK(sc_comm_init_from_env(&comm));
    g_rank = sc_comm_rank(comm);
    size = sc_comm_size(comm);
    CHECK_OK(sc_barrier(comm, NULL));
    /* After init: the progress thread kept the modes it was created with. */
    _mm_setcsr(_mm_getcsr() | FTZ_DAZ);
    if (allreduce_once(comm, 7, "allreduce of 7") || allreduce_once(comm, 300, "allreduce of 300") ||
        allreduce_once(comm, 100000, "allreduce of 100000"))
        return 1;
    {
        /* reduce_scatter: each rank's block, 5 elements. */
        size_t n = 5;
        float *in = malloc(n * (size_t)size * sizeof(float)), *out = malloc(n * sizeof(float));
        CHECK(in && out, "out of memory");
        for (size_t i = 0; i < n * (size_t)size; i++)
            in[i] = TINY;
        CHECK_OK(sc_reduce_scatter(in, out, n, SC_FLOAT32, SC_SUM, comm, NULL, NULL));
        for (size_t i = 0; i < n; i++)
            CHECK(out[i] == (float)size * TINY, "reduce_scatter: element %zu is %a", i,
                  (double)out[i]);
        free(in);
        free(out);
    }
    {
        /* The sparse aggregation: every rank sends TINY at indices 0..3; the sum is
         * added on each rank's own thread. */
        uint32_t idx[4] = {0, 1, 2, 3};
        float vals[4] = {TINY, TINY, TINY, TINY}, dense[8];
        CHECK_OK(sc_sparse_allreduce(comm, idx, 32, vals, SC_FLOAT32, 4, dense, SC_FLOAT32, 8));
        if (check_sum(comm, dense, 4, "sparse allreduce"))
            return 1;
        for (int i = 4; i < 8; i++)
            CHECK(dense[i] == 0.0f, "sparse allreduce: element %d is %a", i, (double)dense[i]);
    }
    {
        /* The compressed all-reduce at density 0.5 of 2^-140 * (i + 1), the same on
         * every rank: the upper half is selected everywhere, each element size times its
         * value (exact), the lower half zero (kept in the residual). */
        enum { N = 64 };
        sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
        sc_compressor_t *c;
        float g[N], o[N];
        cfg.density = 0.5;
        CHECK_OK(sc_compressor_create(&cfg, &c));
        for (int i = 0; i < N; i++)
            g[i] = TINY * (float)(i + 1);
        CHECK_OK(sc_compressed_allreduce(c, comm, 0, g, o, N, SC_FLOAT32, SC_SUM));
        for (int i = 0; i < N; i++)
            CHECK(o[i] == (i < N / 2 ? 0.0f : (float)size * g[i]),
                  "compressed allreduce: element %d is %a", i, (double)o[i]);
        sc_compressor_destroy(c);
    }
    if (reducer_steps(comm) || trapped_steps(comm))
        return 1;
    CHECK_OK(sc_comm_destroy(comm));
    printf("rank %d: PASS\n", g_rank);
    return 0;
}
#else
int main(void)
{
    printf("SKIP: the floating-point modes tested are x86's MXCSR\n");
    return 77;
}
#endif
