/* Memory kinds inside the library: the query behind sc_memory_kind, and the check
 * that the buffers of one call are all host memory or all on one GPU. */
#ifndef SC_CORE_MEMORY_H
#define SC_CORE_MEMORY_H

#include "shardcomm/memory.h"

/* Device and managed memory go to the device backend; host and pinned to the host. */
static inline int sc_mem_is_device(sc_mem_kind_t kind)
{
    return kind == SC_MEM_DEVICE || kind == SC_MEM_MANAGED;
}

/* Kind and GPU ordinal of ptr (SC_MEM_HOST and -1 for NULL or unknown pointers). */
void sc_mem_query(const void *ptr, sc_mem_kind_t *kind, int *device);

/* Kind and GPU of the non-NULL buffers among bufs[0..n), named names[i] in the error;
 * SC_ERR_INVALID_ARG ("fn: sendbuf is device memory (GPU 0) but recvbuf is host
 * memory ...") when host and device buffers are mixed or two GPUs appear. */
sc_status_t sc_mem_classify(const char *fn, const void *const *bufs, const char *const *names,
                            int n, sc_mem_kind_t *kind, int *device);

/* Working memory of the library (buckets, hook scratch): zeroed, 64-byte aligned
 * host memory for device -1, else device memory on that GPU (SC_ERR_UNSUPPORTED in a
 * host-only build, SC_ERR_DEVICE / SC_ERR_NO_MEMORY when the GPU refuses). fn names the
 * caller in the sentence. sc_mem_free_on takes the same device. */
sc_status_t sc_mem_alloc_on(int device, size_t bytes, void **ptr, const char *fn);
void sc_mem_free_on(int device, void *ptr);

/* This machine's physical memory in bytes (SIZE_MAX where it cannot be known). */
size_t sc_mem_phys_bytes(void);

/* The host half of sc_mem_alloc_on, shared by both builds. */
sc_status_t sc_mem_alloc_host_zeroed(size_t bytes, void **ptr, const char *fn);

#endif
