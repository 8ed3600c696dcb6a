/* Memory kinds read from the CUDA driver, and the check that one call's buffers agree. */
#include "core/memory.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cuda_driver.h"
#include "core/error.h"

SC_API const char *sc_mem_kind_name(sc_mem_kind_t kind)
{
    static const char *const names[SC_MEM_KIND_COUNT] = {"host", "host-pinned", "device",
                                                         "managed"};
    return (unsigned)kind < SC_MEM_KIND_COUNT ? names[kind] : "unknown";
}

SC_API int sc_device_count(void)
{
    return sc_cuda_driver()->device_count;
}

void sc_mem_query(const void *ptr, sc_mem_kind_t *kind, int *device)
{
    const sc_cuda_driver_t *drv = sc_cuda_driver();
    int attrs[3] = {SC_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, SC_CU_POINTER_ATTRIBUTE_IS_MANAGED,
                    SC_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    unsigned type = 0;
    int managed = 0, ordinal = -1;
    void *data[3] = {&type, &managed, &ordinal};

    *kind = SC_MEM_HOST;
    *device = -1;
    if (!ptr || !drv->pointer_get_attributes ||
        drv->pointer_get_attributes(3, attrs, data, (uintptr_t)ptr) != 0)
        return;
    if (managed)
        *kind = SC_MEM_MANAGED;
    else if (type == SC_CU_MEMORYTYPE_DEVICE)
        *kind = SC_MEM_DEVICE;
    else if (type == SC_CU_MEMORYTYPE_HOST)
        *kind = SC_MEM_HOST_PINNED;
    else
        return;
    *device = ordinal;
}

SC_API sc_status_t sc_memory_kind(const void *ptr, sc_mem_kind_t *kind, int *device)
{
    sc_mem_kind_t k;
    int d;

    if (!kind)
        return sc_error(SC_ERR_INVALID_ARG, "sc_memory_kind: kind is NULL");
    sc_mem_query(ptr, &k, &d);
    *kind = k;
    if (device)
        *device = d;
    return SC_SUCCESS;
}

sc_status_t sc_mem_classify(const char *fn, const void *const *bufs, const char *const *names,
                            int n, sc_mem_kind_t *kind, int *device)
{
    sc_mem_kind_t k0 = SC_MEM_HOST, k;
    int d0 = -1, d, first = -1;

    for (int i = 0; i < n; i++) {
        if (!bufs[i])
            continue;
        sc_mem_query(bufs[i], &k, &d);
        if (first < 0) {
            first = i, k0 = k, d0 = d;
            continue;
        }
        if (sc_mem_is_device(k) != sc_mem_is_device(k0) ||
            (sc_mem_is_device(k) && d != d0))
            return sc_error(SC_ERR_INVALID_ARG,
                            "%s: %s is %s memory (GPU %d) but %s is %s memory (GPU %d); the "
                            "buffers of one call must all be host memory or all on one GPU",
                            fn, names[first], sc_mem_kind_name(k0), d0, names[i],
                            sc_mem_kind_name(k), d);
    }
    *kind = k0;
    *device = d0;
    return SC_SUCCESS;
}

size_t sc_mem_phys_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

    if (pages <= 0 || page <= 0 || (size_t)pages > SIZE_MAX / (size_t)page)
        return SIZE_MAX;
    return (size_t)pages * (size_t)page;
}

/* Host working memory: the aligned, zeroed half of sc_mem_alloc_on. */
sc_status_t sc_mem_alloc_host_zeroed(size_t bytes, void **ptr, const char *fn)
{
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);

    if (!p)
        return sc_error(SC_ERR_NO_MEMORY, "%s: out of memory for %zu bytes", fn, bytes);
    memset(p, 0, rounded ? rounded : 64);
    *ptr = p;
    return SC_SUCCESS;
}
