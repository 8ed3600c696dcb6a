/* The gradient reducer with device buckets (config.stream set): every rank reduces the
 * same gradients through a device reducer and a host reducer, and the device results,
 * read after the compute stream alone is synchronized (finalize orders it after the
 * communication stream), must equal the host reducer's bit for bit. Cases (argv[1]):
 *   copies DTYPE         gradients copied into device buckets and back (4 iterations:
 *                        before and after the rebuild)
 *   views                gradient_as_bucket_view, the framework writing into the views
 *   accumulate           an iteration without sync, then a synced one
 *   fp16_hook            the float16 compression hook on device buckets
 *   host_pointer_is_refused
 * Runs on 1 rank with NCCL and on 2 ranks host-staged (SC_NCCL=0). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static int g_rank;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"
#include "gpu_check.h"

static const size_t counts[] = {3, 1000, 17, 5000, 1, 20000, 257, 64};
#define NG ((int)(sizeof(counts) / sizeof(counts[0])))

typedef struct {
    sc_comm_t *comm;
    cudaStream_t compute;
    sc_dtype_t dtype;
    size_t es;
    sc_grad_desc_t desc[NG];
    void *host[NG];   /* the host reducer's gradients */
    void *dev[NG];    /* the device reducer's gradients */
    void *back[NG];   /* device results copied back */
} case_t;

/* Deterministic values per (rank, iteration, gradient, element), exact in every dtype. */
static void fill(case_t *c, int it, int g, void *out)
{
    for (size_t i = 0; i < counts[g]; i++) {
        int v = (int)((i * 7 + (size_t)g * 13 + (size_t)it * 5 + (size_t)g_rank * 3) % 17) - 8;
        switch (c->dtype) {
        case SC_FLOAT32: ((float *)out)[i] = (float)v * 0.375f; break;
        case SC_FLOAT64: ((double *)out)[i] = (double)v * 0.375; break;
        case SC_INT32: ((int32_t *)out)[i] = v; break;
        case SC_FLOAT16: { float f = (float)v * 0.375f; sc_cast(&f, SC_FLOAT32, (uint16_t *)out + i, SC_FLOAT16, 1, 1.0f, NULL); break; }
        case SC_BFLOAT16: { float f = (float)v * 0.375f; sc_cast(&f, SC_FLOAT32, (uint16_t *)out + i, SC_BFLOAT16, 1, 1.0f, NULL); break; }
        default: break;
        }
    }
}

static int setup(case_t *c, sc_dtype_t dtype)
{
    memset(c, 0, sizeof(*c));
    CHECK_OK(sc_comm_init_from_env(&c->comm));
    g_rank = sc_comm_rank(c->comm);
    CHECK(cudaStreamCreateWithFlags(&c->compute, cudaStreamNonBlocking) == cudaSuccess,
          "cudaStreamCreate");
    c->dtype = dtype;
    c->es = sc_dtype_size(dtype);
    for (int g = 0; g < NG; g++) {
        c->desc[g].count = counts[g];
        c->desc[g].dtype = dtype;
        c->desc[g].name = "g";
        c->host[g] = malloc(counts[g] * c->es);
        c->back[g] = malloc(counts[g] * c->es);
        CHECK(c->host[g] && c->back[g], "malloc");
        CHECK(cudaMalloc(&c->dev[g], counts[g] * c->es) == cudaSuccess, "cudaMalloc");
    }
    return 0;
}

static void teardown(case_t *c)
{
    for (int g = 0; g < NG; g++) {
        free(c->host[g]);
        free(c->back[g]);
        cudaFree(c->dev[g]);
    }
    cudaStreamDestroy(c->compute);
    sc_comm_destroy(c->comm);
}

static sc_reducer_config_t config(void)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    cfg.first_bucket_bytes = 4096;
    cfg.bucket_cap_bytes = 32768;
    return cfg;
}

/* Device results (grads[g], device memory) against the host reducer's, bitwise. */
static int compare(case_t *c, void *const *dev_results, void *const *host_results, int it)
{
    CHECK(cudaStreamSynchronize(c->compute) == cudaSuccess, "compute stream sync");
    for (int g = 0; g < NG; g++) {
        CHECK(cudaMemcpy(c->back[g], dev_results[g], counts[g] * c->es,
                         cudaMemcpyDeviceToHost) == cudaSuccess, "copy back");
        for (size_t i = 0; i < counts[g]; i++)
            CHECK(memcmp((char *)c->back[g] + i * c->es, (char *)host_results[g] + i * c->es,
                         c->es) == 0,
                  "iteration %d, %s gradient %d element %zu differs from the host reducer's",
                  it, sc_dtype_name(c->dtype), g, i);
    }
    return 0;
}

/* One iteration on both reducers, the device gradients written on the compute stream
 * (as a backward pass would), marked in reverse order. */
static int iteration(case_t *c, sc_reducer_t *rh, sc_reducer_t *rd, int it, int view)
{
    for (int g = NG - 1; g >= 0; g--) {
        void *dst = view ? sc_reducer_grad_view(rd, g) : c->dev[g];
        fill(c, it, g, c->host[g]);
        CHECK(cudaMemcpyAsync(dst, c->host[g], counts[g] * c->es, cudaMemcpyHostToDevice,
                              c->compute) == cudaSuccess, "gradient upload");
        CHECK(cudaStreamSynchronize(c->compute) == cudaSuccess, "upload sync");
        CHECK_OK(sc_reducer_mark_ready(rh, g, c->host[g]));
        CHECK_OK(sc_reducer_mark_ready(rd, g, view ? NULL : c->dev[g]));
    }
    CHECK_OK(sc_reducer_finalize(rh));
    CHECK_OK(sc_reducer_finalize(rd));
    return 0;
}

static int run_copies(sc_dtype_t dtype, int fp16_hook)
{
    sc_reducer_config_t cfg = config();
    sc_reducer_t *rh, *rd;
    sc_comm_hook_t hh, hd;
    case_t c;

    if (setup(&c, dtype))
        return 1;
    if (fp16_hook) {
        CHECK_OK(sc_comm_hook_builtin(SC_HOOK_FP16, &hh));
        cfg.hook = &hh;
    }
    CHECK_OK(sc_reducer_create(c.comm, c.desc, NG, &cfg, &rh));
    cfg.stream = (sc_stream_t)c.compute;
    if (fp16_hook) {
        CHECK_OK(sc_comm_hook_builtin(SC_HOOK_FP16, &hd));
        cfg.hook = &hd;
    }
    CHECK_OK(sc_reducer_create(c.comm, c.desc, NG, &cfg, &rd));
    for (int it = 0; it < 4; it++) {
        if (iteration(&c, rh, rd, it, 0) || compare(&c, c.dev, c.host, it))
            return 1;
    }
    CHECK_OK(sc_reducer_destroy(rd));
    CHECK_OK(sc_reducer_destroy(rh));
    teardown(&c);
    return 0;
}

static int run_views(void)
{
    sc_reducer_config_t cfg = config();
    sc_reducer_t *rh, *rd;
    void *views[NG];
    case_t c;

    if (setup(&c, SC_FLOAT32))
        return 1;
    CHECK_OK(sc_reducer_create(c.comm, c.desc, NG, &cfg, &rh));
    cfg.stream = (sc_stream_t)c.compute;
    cfg.gradient_as_bucket_view = 1;
    CHECK_OK(sc_reducer_create(c.comm, c.desc, NG, &cfg, &rd));
    for (int it = 0; it < 3; it++) {
        if (iteration(&c, rh, rd, it, 1))
            return 1;
        for (int g = 0; g < NG; g++) {
            views[g] = sc_reducer_grad_view(rd, g);
            CHECK(views[g] != NULL, "no view for gradient %d", g);
        }
        if (compare(&c, views, c.host, it))
            return 1;
    }
    CHECK_OK(sc_reducer_destroy(rd));
    CHECK_OK(sc_reducer_destroy(rh));
    teardown(&c);
    return 0;
}

static int run_accumulate(void)
{
    sc_reducer_config_t cfg = config();
    sc_reducer_t *rh, *rd;
    case_t c;

    if (setup(&c, SC_FLOAT32))
        return 1;
    CHECK_OK(sc_reducer_create(c.comm, c.desc, NG, &cfg, &rh));
    cfg.stream = (sc_stream_t)c.compute;
    CHECK_OK(sc_reducer_create(c.comm, c.desc, NG, &cfg, &rd));
    CHECK_OK(sc_reducer_set_sync(rh, 0));
    CHECK_OK(sc_reducer_set_sync(rd, 0));
    if (iteration(&c, rh, rd, 0, 0))
        return 1;
    CHECK_OK(sc_reducer_set_sync(rh, 1));
    CHECK_OK(sc_reducer_set_sync(rd, 1));
    if (iteration(&c, rh, rd, 1, 0) || compare(&c, c.dev, c.host, 1))
        return 1;
    CHECK_OK(sc_reducer_destroy(rd));
    CHECK_OK(sc_reducer_destroy(rh));
    teardown(&c);
    return 0;
}

static int run_host_pointer_is_refused(void)
{
    sc_reducer_config_t cfg = config();
    sc_reducer_t *rd;
    sc_status_t st;
    case_t c;

    if (setup(&c, SC_FLOAT32))
        return 1;
    cfg.stream = (sc_stream_t)c.compute;
    CHECK_OK(sc_reducer_create(c.comm, c.desc, NG, &cfg, &rd));
    st = sc_reducer_mark_ready(rd, 1, c.host[1]);
    CHECK(st == SC_ERR_INVALID_ARG, "a host gradient in a device reducer gave %s",
          sc_status_string(st));
    CHECK(strstr(sc_last_error(), "buckets are device memory on GPU") != NULL, "sentence: %s",
          sc_last_error());
    CHECK_OK(sc_reducer_destroy(rd));
    teardown(&c);
    return 0;
}

int main(int argc, char **argv)
{
    char reason[256];
    sc_dtype_t dtype = SC_FLOAT32;
    int rc;

    if (!gpu_usable(reason, sizeof(reason))) {
        printf("SKIP: %s\n", reason);
        return GPU_SKIP_EXIT;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s copies DTYPE | views | accumulate | fp16_hook | "
                        "host_pointer_is_refused\n", argv[0]);
        return 2;
    }
    if (argc > 2 && sc_dtype_from_name(argv[2], &dtype) != SC_SUCCESS)
        return 2;
    if (!strcmp(argv[1], "copies"))
        rc = run_copies(dtype, 0);
    else if (!strcmp(argv[1], "fp16_hook"))
        rc = run_copies(SC_FLOAT32, 1);
    else if (!strcmp(argv[1], "views"))
        rc = run_views();
    else if (!strcmp(argv[1], "accumulate"))
        rc = run_accumulate();
    else if (!strcmp(argv[1], "host_pointer_is_refused"))
        rc = run_host_pointer_is_refused();
    else {
        fprintf(stderr, "no case %s\n", argv[1]);
        return 2;
    }
    if (rc == 0)
        printf("PASS: %s %s\n", argv[1], argc > 2 ? argv[2] : "");
    return rc;
}
