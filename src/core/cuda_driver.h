/* The CUDA driver (libcuda.so.1), opened at run time in every build: memory kinds and
 * device counts are read from it without linking CUDA and without creating a context. */
#ifndef SC_CORE_CUDA_DRIVER_H
#define SC_CORE_CUDA_DRIVER_H

#include <stdint.h>

/* The few driver entry points shardcomm reads, with the driver's own constants. */
typedef struct {
    int (*pointer_get_attributes)(unsigned n, int *attrs, void **data, uintptr_t ptr);
    int device_count;            /* 0 when the driver or a GPU is missing */
} sc_cuda_driver_t;

#define SC_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define SC_CU_POINTER_ATTRIBUTE_IS_MANAGED 8
#define SC_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define SC_CU_MEMORYTYPE_HOST 1
#define SC_CU_MEMORYTYPE_DEVICE 2
#define SC_CU_MEMORYTYPE_UNIFIED 4

/* The driver, loaded and initialized on first use; never NULL (device_count is 0 and
 * the functions NULL when there is no usable driver). SC_CUDA_DRIVER=0 hides it.
 * Thread-safe. */
const sc_cuda_driver_t *sc_cuda_driver(void);

#endif
