/* A stand-in for the CUDA driver's cuPointerGetAttributes, for tests of device-pointer
 * handling on machines without a GPU: memory in one range reports as device memory of
 * GPU 0, as the driver would for cudaMalloc'd memory. Tests link shardcomm_internal. */
#ifndef SC_TESTS_FAKE_DEVICE_H
#define SC_TESTS_FAKE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "core/cuda_driver.h"

typedef int (*sc_fake_device_query_fn)(unsigned n, int *attrs, void **data, uintptr_t ptr);

static uintptr_t sc_fake_device_begin, sc_fake_device_end;

static inline int sc_fake_device_attributes(unsigned n, int *attrs, void **data, uintptr_t ptr)
{
    if (ptr < sc_fake_device_begin || ptr >= sc_fake_device_end)
        return 1; /* CUDA_ERROR_INVALID_VALUE: not memory the driver knows */
    for (unsigned i = 0; i < n; i++) {
        if (attrs[i] == SC_CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
            *(unsigned *)data[i] = SC_CU_MEMORYTYPE_DEVICE;
        else if (attrs[i] == SC_CU_POINTER_ATTRIBUTE_IS_MANAGED)
            *(int *)data[i] = 0;
        else if (attrs[i] == SC_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
            *(int *)data[i] = 0;
    }
    return 0;
}

/* From now on [p, p + bytes) is device memory of GPU 0 to shardcomm; returns the
 * driver's own query, for sc_fake_device_remove. */
static inline sc_fake_device_query_fn sc_fake_device_install(void *p, size_t bytes)
{
    sc_cuda_driver_t *drv = (sc_cuda_driver_t *)sc_cuda_driver();
    sc_fake_device_query_fn saved = drv->pointer_get_attributes;

    sc_fake_device_begin = (uintptr_t)p;
    sc_fake_device_end = (uintptr_t)p + bytes;
    drv->pointer_get_attributes = sc_fake_device_attributes;
    return saved;
}

static inline void sc_fake_device_remove(sc_fake_device_query_fn saved)
{
    ((sc_cuda_driver_t *)sc_cuda_driver())->pointer_get_attributes = saved;
}

#endif
