/* Pinned host memory in a host-only build: page-aligned pageable memory stands in. */
#include <stdlib.h>
#include <unistd.h>

#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"

SC_API sc_status_t sc_host_alloc_pinned(size_t bytes, void **ptr)
{
    static int logged;
    void *p = NULL;

    if (!ptr)
        return sc_error(SC_ERR_INVALID_ARG, "sc_host_alloc_pinned: ptr is NULL");
    if (posix_memalign(&p, (size_t)sysconf(_SC_PAGESIZE), bytes ? bytes : 1) != 0)
        return sc_error(SC_ERR_NO_MEMORY, "sc_host_alloc_pinned: %zu bytes: out of memory",
                        bytes);
    if (!__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED))
        sc_log(SC_LOG_INFO, "sc_host_alloc_pinned: host-only build, so staging memory is "
                            "page-aligned pageable memory");
    *ptr = p;
    return SC_SUCCESS;
}

SC_API sc_status_t sc_host_free_pinned(void *ptr)
{
    free(ptr);
    return SC_SUCCESS;
}
