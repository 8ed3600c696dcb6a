/* Memory kinds: where a buffer lives, and pinned host memory for staging. */
#ifndef SHARDCOMM_MEMORY_H
#define SHARDCOMM_MEMORY_H

#include <stddef.h>
#include "shardcomm/api.h"
#include "shardcomm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    SC_MEM_HOST = 0,     /* pageable host memory (malloc, the stack, mmap) */
    SC_MEM_HOST_PINNED,  /* page-locked host memory (cudaHostAlloc, cudaHostRegister) */
    SC_MEM_DEVICE,       /* GPU memory (cudaMalloc) */
    SC_MEM_MANAGED,      /* unified memory (cudaMallocManaged) */
    SC_MEM_KIND_COUNT
} sc_mem_kind_t;

/* Where ptr lives, read from the CUDA driver when one is installed (in a host-only
 * build too, so that a device pointer gets a clear error rather than a crash); every
 * pointer is SC_MEM_HOST on a machine without a GPU. *device is the GPU ordinal for
 * device, managed and pinned memory, -1 for pageable host memory (and for ptr NULL,
 * which is SC_MEM_HOST). device may be NULL.
 * kind NULL is SC_ERR_INVALID_ARG, and then nothing is written. Never creates a CUDA
 * context. Thread-safe. */
SC_API sc_status_t sc_memory_kind(const void *ptr, sc_mem_kind_t *kind, int *device);

/* "host", "host-pinned", "device", "managed"; "unknown" otherwise. */
SC_API const char *sc_mem_kind_name(sc_mem_kind_t kind);

/* Number of CUDA devices this process can use; 0 without a driver, without a GPU,
 * or in a host-only build. */
SC_API int sc_device_count(void);

/* Allocates bytes of page-locked host memory (cudaHostAlloc, portable across
 * devices); the caller frees it with sc_host_free_pinned. In a host-only build, or
 * where the CUDA runtime refuses, the memory is page-aligned pageable memory instead
 * and the substitution is logged once. SC_ERR_NO_MEMORY when nothing can be had;
 * *ptr is written only on success. Thread-safe (with sc_host_free_pinned too), also
 * across fork(): a child forked while another thread allocated may allocate (the CUDA
 * runtime itself does not work in a forked child; the pageable stand-in does). */
SC_API sc_status_t sc_host_alloc_pinned(size_t bytes, void **ptr);

/* Frees memory from sc_host_alloc_pinned; NULL is a no-op. A pointer it did not hand
 * out, or one freed already, is SC_ERR_INVALID_ARG and is left alone. Thread-safe. */
SC_API sc_status_t sc_host_free_pinned(void *ptr);

#ifdef __cplusplus
}
#endif

#endif
