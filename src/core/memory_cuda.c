/* Pinned host memory through the CUDA runtime. */
#include <stdlib.h>

#include "core/cuda_util.h"
#include "core/memory.h"
#include "core/memory_pinned.h"

SC_API sc_status_t sc_host_alloc_pinned(size_t bytes, void **ptr)
{
    cudaError_t err;
    void *p = NULL;

    if (!ptr)
        return sc_error(SC_ERR_INVALID_ARG, "sc_host_alloc_pinned: ptr is NULL");
    if (sc_device_count() > 0) {
        err = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
        if (err == cudaSuccess) {
            if (sc_pinned_track(p) != SC_SUCCESS) {
                (void)cudaFreeHost(p);
                return SC_ERR_NO_MEMORY;
            }
            *ptr = p;
            return SC_SUCCESS;
        }
        (void)cudaGetLastError();
        if (err == cudaErrorMemoryAllocation)
            return sc_error(SC_ERR_NO_MEMORY, "sc_host_alloc_pinned: %zu bytes: %s", bytes,
                            cudaGetErrorString(err));
    }
    return sc_host_alloc_pinned_standin(bytes, ptr, "no usable GPU");
}

SC_API sc_status_t sc_host_free_pinned(void *ptr)
{
    sc_mem_kind_t kind;
    int device;

    if (!ptr)
        return SC_SUCCESS;
    if (!sc_pinned_untrack(ptr))
        return sc_host_free_pinned_unknown(ptr);
    sc_mem_query(ptr, &kind, &device);
    if (kind != SC_MEM_HOST_PINNED) {
        free(ptr);
        return SC_SUCCESS;
    }
    return sc_cuda_status(cudaFreeHost(ptr), "sc_host_free_pinned", "cudaFreeHost");
}

sc_status_t sc_mem_alloc_on(int device, size_t bytes, void **ptr, const char *fn)
{
    void *p = NULL;
    cudaError_t err;
    sc_status_t st;
    int saved;

    if (device < 0)
        return sc_mem_alloc_host_zeroed(bytes, ptr, fn);
    st = sc_cuda_device_enter(device, &saved, fn);
    if (st != SC_SUCCESS)
        return st;
    err = cudaMalloc(&p, bytes ? bytes : 1);
    if (err == cudaSuccess)
        err = cudaMemset(p, 0, bytes ? bytes : 1);
    sc_cuda_device_leave(device, saved);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return sc_error(SC_ERR_NO_MEMORY, "%s: GPU %d is out of memory for %zu bytes", fn,
                        device, bytes);
    }
    if (err != cudaSuccess) {
        if (p)
            (void)cudaFree(p);
        return sc_cuda_status(err, fn, "cudaMalloc");
    }
    *ptr = p;
    return SC_SUCCESS;
}

void sc_mem_free_on(int device, void *ptr)
{
    if (device < 0)
        free(ptr);
    else if (ptr)
        (void)cudaFree(ptr);
}
