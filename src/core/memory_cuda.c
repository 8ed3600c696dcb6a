/* Pinned host memory through the CUDA runtime. */
#include <stdlib.h>

#include "core/cuda_util.h"
#include "core/memory.h"

SC_API sc_status_t sc_host_alloc_pinned(size_t bytes, void **ptr)
{
    cudaError_t err;
    void *p = NULL;

    if (!ptr)
        return sc_error(SC_ERR_INVALID_ARG, "sc_host_alloc_pinned: ptr is NULL");
    if (sc_device_count() > 0) {
        err = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
        if (err == cudaSuccess) {
            *ptr = p;
            return SC_SUCCESS;
        }
        (void)cudaGetLastError();
        if (err == cudaErrorMemoryAllocation)
            return sc_error(SC_ERR_NO_MEMORY, "sc_host_alloc_pinned: %zu bytes: %s", bytes,
                            cudaGetErrorString(err));
    }
    return sc_mem_alloc_pageable(bytes, ptr, "no usable GPU");
}

SC_API sc_status_t sc_host_free_pinned(void *ptr)
{
    sc_mem_kind_t kind;
    int device;

    if (!ptr)
        return SC_SUCCESS;
    sc_mem_query(ptr, &kind, &device);
    if (kind != SC_MEM_HOST_PINNED) {
        free(ptr);
        return SC_SUCCESS;
    }
    return sc_cuda_status(cudaFreeHost(ptr), "sc_host_free_pinned", "cudaFreeHost");
}
