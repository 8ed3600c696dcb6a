/* CUDA runtime errors as shardcomm errors, and a guard that runs code on one device
 * and gives the calling thread its current device back. CUDA builds only. */
#ifndef SC_CORE_CUDA_UTIL_H
#define SC_CORE_CUDA_UTIL_H

#include <cuda_runtime_api.h>

#include "core/error.h"

/* SC_ERR_DEVICE with "fn: what: <CUDA's sentence>" unless err is cudaSuccess. */
static inline sc_status_t sc_cuda_status(cudaError_t err, const char *fn, const char *what)
{
    if (err == cudaSuccess)
        return SC_SUCCESS;
    return sc_error(SC_ERR_DEVICE, "%s: %s failed: %s (%s)", fn, what,
                    cudaGetErrorString(err), cudaGetErrorName(err));
}

/* Makes device current on the calling thread; *saved receives the previous one. */
static inline sc_status_t sc_cuda_device_enter(int device, int *saved, const char *fn)
{
    cudaError_t err = cudaGetDevice(saved);

    if (err != cudaSuccess)
        return sc_cuda_status(err, fn, "cudaGetDevice");
    if (*saved != device)
        return sc_cuda_status(cudaSetDevice(device), fn, "cudaSetDevice");
    return SC_SUCCESS;
}

static inline void sc_cuda_device_leave(int device, int saved)
{
    if (saved != device)
        (void)cudaSetDevice(saved);
}

#endif
