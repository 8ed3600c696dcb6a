/* Pinned host memory in a host-only build: page-aligned pageable memory stands in. */
#include <stdlib.h>

#include "core/error.h"
#include "core/memory.h"

SC_API sc_status_t sc_host_alloc_pinned(size_t bytes, void **ptr)
{
    if (!ptr)
        return sc_error(SC_ERR_INVALID_ARG, "sc_host_alloc_pinned: ptr is NULL");
    return sc_mem_alloc_pageable(bytes, ptr, "host-only build");
}

SC_API sc_status_t sc_host_free_pinned(void *ptr)
{
    free(ptr);
    return SC_SUCCESS;
}
