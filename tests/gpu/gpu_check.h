/* The GPU tests' skip condition: whether this process can use a GPU, and if not a
 * sentence saying why. Tests without one print "SKIP: <reason>" and exit 77. */
#ifndef SC_TESTS_GPU_CHECK_H
#define SC_TESTS_GPU_CHECK_H

#include <stdio.h>

#include <cuda_runtime_api.h>

#define GPU_SKIP_EXIT 77

/* 1 when a GPU is visible and the CUDA runtime can create a context on GPU 0; else
 * 0 with the CUDA error in reason. Leaves GPU 0 current. */
static inline int gpu_usable(char *reason, size_t len)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);

    if (err != cudaSuccess) {
        snprintf(reason, len, "no usable GPU: cudaGetDeviceCount failed: %s (%s)",
                 cudaGetErrorString(err), cudaGetErrorName(err));
        return 0;
    }
    if (count == 0) {
        snprintf(reason, len, "no usable GPU: cudaGetDeviceCount found none");
        return 0;
    }
    err = cudaSetDevice(0);
    if (err == cudaSuccess)
        err = cudaFree(NULL); /* creates the context */
    if (err != cudaSuccess) {
        snprintf(reason, len, "GPU 0 cannot be used: %s (%s)", cudaGetErrorString(err),
                 cudaGetErrorName(err));
        return 0;
    }
    return 1;
}

#endif
