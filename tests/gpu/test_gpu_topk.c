/* GPU tests of top-k selection: the CUDA radix select on device buffers against the
 * host's exact selection of the same data (which tests/compress checks against an
 * independent reference), bit for bit in indices and values, on every data kind (ties,
 * -0 and +0, NaNs of many payloads, Inf, subnormals), several n and k, float32, float16,
 * bfloat16 and float64, both index widths, on a CUDA stream and on the default stream;
 * and the device path's refusals. Without a usable GPU it prints "SKIP: <reason>" and
 * exits 77. test_gpu_topk [DTYPE | refusals] (no argument: everything) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"
#include "../compress/topk_data.h"
#include "gpu_check.h"

#define CUDA_OK(call)                                                                    \
    do {                                                                                 \
        cudaError_t err_ = (call);                                                       \
        CHECK(err_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(err_));           \
    } while (0)

static cudaStream_t g_stream;

typedef struct {
    void *x, *indices, *values;      /* device */
    void *hind, *hval, *dind, *dval; /* host: the host's selection, the device's copied */
} bufs_t;

/* One k on data already in b->x: the device's selection equals the host's. */
static int check_one(sc_topk_t *host, sc_topk_t *dev, sc_dtype_t t, int bits, const void *x,
                     size_t n, size_t k, const bufs_t *b, cudaStream_t stream,
                     const char *what)
{
    size_t es = esize(t), ib = (size_t)bits / 8, hsel = 0, dsel = 0;

    CHECK_OK(sc_topk_select(host, x, t, n, k, bits, b->hind, b->hval, &hsel, NULL));
    CHECK_OK(sc_topk_select(dev, b->x, t, n, k, bits, b->indices, b->values, &dsel,
                            (sc_stream_t)stream));
    CHECK(hsel == k && dsel == k, "%s: host selected %zu, device %zu", what, hsel, dsel);
    CUDA_OK(cudaMemcpy(b->dind, b->indices, k * ib, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(b->dval, b->values, k * es, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < k; i++) {
        size_t h = index_at(b->hind, bits, i), d = index_at(b->dind, bits, i);
        CHECK(h == d, "%s: indices[%zu]: device %zu, host %zu", what, i, d, h);
        CHECK(memcmp((char *)b->dval + i * es, (char *)b->hval + i * es, es) == 0,
              "%s: values[%zu] (index %zu) differ", what, i, d);
    }
    return 0;
}

static int bufs_alloc(bufs_t *b, size_t n, size_t es)
{
    memset(b, 0, sizeof(*b));
    CUDA_OK(cudaMalloc(&b->x, n * es));
    CUDA_OK(cudaMalloc(&b->indices, n * 8));
    CUDA_OK(cudaMalloc(&b->values, n * es));
    b->hind = malloc(n * 8);
    b->hval = malloc(n * es);
    b->dind = malloc(n * 8);
    b->dval = malloc(n * es);
    CHECK(b->hind && b->hval && b->dind && b->dval, "out of host memory for n = %zu", n);
    return 0;
}

static void bufs_free(bufs_t *b)
{
    cudaFree(b->x);
    cudaFree(b->indices);
    cudaFree(b->values);
    free(b->hind);
    free(b->hval);
    free(b->dind);
    free(b->dval);
}

/* Every data kind, sizes around the kernels' tiles (4096) and blocks, k from 1 to n. */
static int test_matches_host(sc_dtype_t t)
{
    static const size_t sizes[] = {1, 7, 4096, 4097, 65537, 1000003, ((size_t)1 << 23) + 5};
    size_t es = esize(t);
    sc_topk_t *host, *dev;
    sc_topk_config_t cfg = SC_TOPK_CONFIG_INIT;

    cfg.threads = 2;
    CHECK_OK(sc_topk_create(&cfg, &host));
    CHECK_OK(sc_topk_create(&cfg, &dev));
    for (size_t si = 0; si < NELEM(sizes); si++) {
        size_t n = sizes[si];
        const size_t ks[] = {1, n, n / 100 + 1, n / 3, n - n / 7};
        void *x = malloc(n * es);
        bufs_t b;

        CHECK(x != NULL, "out of host memory for n = %zu", n);
        if (bufs_alloc(&b, n, es))
            return 1;
        for (int d = 0; d < DATA_COUNT; d++) {
            fill(t, x, n, (data_kind_t)d, n * 13 + (size_t)d);
            CUDA_OK(cudaMemcpy(b.x, x, n * es, cudaMemcpyHostToDevice));
            for (size_t ki = 0; ki < NELEM(ks); ki++) {
                int bits = ki % 2 ? 64 : 32;
                char what[160];
                if (ks[ki] == 0)
                    continue;
                snprintf(what, sizeof(what), "%s n=%zu k=%zu %s bits=%d", sc_dtype_name(t),
                         n, ks[ki], data_name((data_kind_t)d), bits);
                if (check_one(host, dev, t, bits, x, n, ks[ki], &b,
                              ki == 0 ? NULL : g_stream, what))
                    return 1;
            }
        }
        bufs_free(&b);
        free(x);
    }
    sc_topk_destroy(dev);
    sc_topk_destroy(host);
    printf("matches_host %s: ok\n", sc_dtype_name(t));
    return 0;
}

/* The approximate and random modes, host outputs and misaligned buffers are refused,
 * with nothing written. */
static int test_refusals(void)
{
    const size_t n = 1000, k = 10;
    sc_topk_config_t cfg = SC_TOPK_CONFIG_INIT;
    sc_topk_t *approx, *random, *exact;
    uint32_t hind[10];
    float hval[10];
    size_t selected = 4242;
    bufs_t b;

    if (bufs_alloc(&b, n, 4))
        return 1;
    cfg.mode = SC_TOPK_APPROX;
    CHECK_OK(sc_topk_create(&cfg, &approx));
    cfg.mode = SC_TOPK_RANDOM;
    CHECK_OK(sc_topk_create(&cfg, &random));
    cfg.mode = SC_TOPK_EXACT;
    CHECK_OK(sc_topk_create(&cfg, &exact));
    CHECK_REFUSED(sc_topk_select(approx, b.x, SC_FLOAT32, n, k, 32, b.indices, b.values,
                                 &selected, (sc_stream_t)g_stream),
                  SC_ERR_UNSUPPORTED, "SC_TOPK_EXACT mode only");
    CHECK_REFUSED(sc_topk_select(random, b.x, SC_FLOAT32, n, k, 32, b.indices, b.values,
                                 &selected, (sc_stream_t)g_stream),
                  SC_ERR_UNSUPPORTED, "this selector's mode is SC_TOPK_RANDOM");
    CHECK_REFUSED(sc_topk_select(exact, b.x, SC_FLOAT32, n, k, 32, hind, hval, &selected,
                                 (sc_stream_t)g_stream),
                  SC_ERR_INVALID_ARG, "all be host memory or all on one GPU");
    CHECK_REFUSED(sc_topk_select(exact, (char *)b.x + 2, SC_FLOAT32, n - 1, k, 32, b.indices,
                                 b.values, &selected, (sc_stream_t)g_stream),
                  SC_ERR_INVALID_ARG, "aligned to their 4-byte elements");
    CHECK(selected == 4242, "a refused call wrote selected (%zu)", selected);
    sc_topk_destroy(exact);
    sc_topk_destroy(random);
    sc_topk_destroy(approx);
    bufs_free(&b);
    printf("refusals: ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    static const sc_dtype_t dtypes[] = {SC_FLOAT32, SC_FLOAT16, SC_BFLOAT16, SC_FLOAT64};
    char reason[256];
    int rc = 0;

    if (!gpu_usable(reason, sizeof(reason))) {
        printf("SKIP: %s\n", reason);
        return GPU_SKIP_EXIT;
    }
    if (cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "cudaStreamCreateWithFlags failed\n");
        return 1;
    }
    for (size_t i = 0; i < NELEM(dtypes) && rc == 0; i++)
        if (argc <= 1 || strcmp(argv[1], sc_dtype_name(dtypes[i])) == 0)
            rc = test_matches_host(dtypes[i]);
    if (rc == 0 && (argc <= 1 || strcmp(argv[1], "refusals") == 0))
        rc = test_refusals();
    cudaStreamDestroy(g_stream);
    return rc;
}
