/* Loading the CUDA driver library at run time. */
#include "core/cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/env_names.h"
#include "core/log.h"

static sc_cuda_driver_t sc_driver;
static pthread_once_t sc_driver_once = PTHREAD_ONCE_INIT;

static void sc_cuda_driver_load(void)
{
    int (*init)(unsigned);
    int (*count)(int *);
    void *lib;
    int n = 0, on = 1;

    /* Another value than 0 or 1 leaves the driver on: sc_comm_init refuses it. */
    if (sc_env_switch(sc_env_cuda_driver_names, 1, &on) == SC_SUCCESS && !on)
        return;
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
    *(void **)&init = dlsym(lib, "cuInit");
    *(void **)&count = dlsym(lib, "cuDeviceGetCount");
    *(void **)&sc_driver.pointer_get_attributes = dlsym(lib, "cuPointerGetAttributes");
    if (!init || !count || !sc_driver.pointer_get_attributes || init(0) != 0 ||
        count(&n) != 0 || n <= 0) {
        sc_log(SC_LOG_DEBUG, "CUDA driver present but no usable GPU: every buffer is host "
                             "memory");
        sc_driver.pointer_get_attributes = NULL;
        return;
    }
    sc_driver.device_count = n;
}

const sc_cuda_driver_t *sc_cuda_driver(void)
{
    pthread_once(&sc_driver_once, sc_cuda_driver_load);
    return &sc_driver;
}
