/* Device pointers in either build, without the CUDA runtime: GPU memory is allocated
 * through the CUDA driver (dlopen), so this test builds and runs in the host-only
 * variant too. It skips (77) where no GPU is present.
 *   memory_kind_of_device_and_host_pointers
 *   device_pointers_in_a_host_only_build_are_unsupported (host-only build)
 *   mixed_host_and_device_buffers_are_invalid (both builds)
 *   pinned_host_memory_is_host_memory_for_collectives */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"

typedef int (*cu_fn_t)();

static struct {
    int (*init)(unsigned);
    int (*device_get)(int *, int);
    int (*ctx_retain)(void **, int);
    int (*ctx_set_current)(void *);
    int (*mem_alloc)(uintptr_t *, size_t);
    int (*mem_free)(uintptr_t);
} cu;

/* GPU memory from the driver, or 0 with the reason in *why. */
static uintptr_t device_alloc(size_t bytes, const char **why)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    void *ctx = NULL;
    uintptr_t p = 0;
    int dev = 0;

    if (!lib) {
        *why = "no CUDA driver (libcuda.so.1) on this machine";
        return 0;
    }
    *(void **)&cu.init = dlsym(lib, "cuInit");
    *(void **)&cu.device_get = dlsym(lib, "cuDeviceGet");
    *(void **)&cu.ctx_retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
    *(void **)&cu.ctx_set_current = dlsym(lib, "cuCtxSetCurrent");
    *(void **)&cu.mem_alloc = dlsym(lib, "cuMemAlloc_v2");
    *(void **)&cu.mem_free = dlsym(lib, "cuMemFree_v2");
    if (!cu.init || cu.init(0) != 0 || cu.device_get(&dev, 0) != 0) {
        *why = "the CUDA driver reports no usable GPU";
        return 0;
    }
    if (cu.ctx_retain(&ctx, dev) != 0 || cu.ctx_set_current(ctx) != 0 ||
        cu.mem_alloc(&p, bytes) != 0) {
        *why = "the CUDA driver could not allocate GPU memory";
        return 0;
    }
    return p;
}

int main(void)
{
    const char *why = NULL;
    uintptr_t dptr = device_alloc(1 << 20, &why);
    float host[16] = {0};
    void *pinned = NULL;
    sc_mem_kind_t kind;
    sc_comm_t *comm;
    sc_status_t st;
    int device = -2;

    if (!dptr) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    CHECK_OK(sc_comm_init_from_env(&comm));

    /* memory_kind_of_device_and_host_pointers */
    CHECK_OK(sc_memory_kind((void *)dptr, &kind, &device));
    CHECK(kind == SC_MEM_DEVICE && device == 0, "device memory reported as %s on GPU %d",
          sc_mem_kind_name(kind), device);
    CHECK_OK(sc_memory_kind(host, &kind, &device));
    CHECK(kind == SC_MEM_HOST && device == -1, "stack memory reported as %s on GPU %d",
          sc_mem_kind_name(kind), device);

    /* mixed_host_and_device_buffers_are_invalid */
    st = sc_allreduce((void *)dptr, host, 16, SC_FLOAT32, SC_SUM, comm, NULL, NULL);
    CHECK(st == SC_ERR_INVALID_ARG && strstr(sc_last_error(), "sendbuf") &&
              strstr(sc_last_error(), "recvbuf"),
          "mixed call gave %s: %s", sc_status_string(st), sc_last_error());

#ifndef SC_HAVE_CUDA
    /* device_pointers_in_a_host_only_build_are_unsupported */
    st = sc_allreduce((void *)dptr, (void *)dptr, 16, SC_FLOAT32, SC_SUM, comm, NULL, NULL);
    CHECK(st == SC_ERR_UNSUPPORTED && strstr(sc_last_error(), "CUDA build"),
          "device buffers in a host-only build gave %s: %s", sc_status_string(st),
          sc_last_error());
#endif

    /* pinned_host_memory_is_host_memory_for_collectives */
    CHECK_OK(sc_host_alloc_pinned(64, &pinned));
    memset(pinned, 0, 64);
    CHECK_OK(sc_allreduce(pinned, pinned, 16, SC_FLOAT32, SC_SUM, comm, NULL, NULL));
    CHECK_OK(sc_host_free_pinned(pinned));

    cu.mem_free(dptr);
    CHECK_OK(sc_comm_destroy(comm));
    printf("PASS: device pointers (%s build)\n",
#ifdef SC_HAVE_CUDA
           "CUDA"
#else
           "host-only"
#endif
    );
    return 0;
}
