/* Pinned host memory in a host-only build: page-aligned pageable memory stands in. */
#include <stdlib.h>

#include "core/error.h"
#include "core/memory.h"
#include "core/memory_pinned.h"

SC_API sc_status_t sc_host_alloc_pinned(size_t bytes, void **ptr)
{
    if (!ptr)
        return sc_error(SC_ERR_INVALID_ARG, "sc_host_alloc_pinned: ptr is NULL");
    return sc_host_alloc_pinned_standin(bytes, ptr, "host-only build");
}

SC_API sc_status_t sc_host_free_pinned(void *ptr)
{
    if (!ptr)
        return SC_SUCCESS;
    if (!sc_pinned_untrack(ptr))
        return sc_host_free_pinned_unknown(ptr);
    free(ptr);
    return SC_SUCCESS;
}

sc_status_t sc_mem_alloc_on(int device, size_t bytes, void **ptr, const char *fn)
{
    if (device >= 0)
        return sc_error(SC_ERR_UNSUPPORTED, "%s: device memory on GPU %d needs a CUDA build "
                        "(this one is host-only)", fn, device);
    return sc_mem_alloc_host_zeroed(bytes, ptr, fn);
}

void sc_mem_free_on(int device, void *ptr)
{
    (void)device;
    free(ptr);
}
