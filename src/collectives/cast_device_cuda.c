/* The mixed-precision kernels' device path: the flag's memory is checked, then the
 * kernel (cast_cuda.cu) is launched on the buffers' GPU. */
#include "collectives/cast_kernels.h"
#include "core/cuda_util.h"
#include "core/memory.h"

sc_status_t sc_kernel_run_device(const char *fn, const sc_kernel_job_t *job, int device,
                                 sc_stream_t stream)
{
    sc_mem_kind_t kind;
    int flag_device, saved;
    sc_status_t st;

    if (job->flag) {
        sc_mem_query(job->flag, &kind, &flag_device);
        if (kind == SC_MEM_HOST)
            return sc_error(SC_ERR_INVALID_ARG,
                            "%s: flag is pageable host memory, which a kernel on GPU %d "
                            "cannot write; give device, managed or pinned memory", fn, device);
        if (kind == SC_MEM_DEVICE && flag_device != device)
            return sc_error(SC_ERR_INVALID_ARG,
                            "%s: flag is device memory on GPU %d, but the buffers are on "
                            "GPU %d", fn, flag_device, device);
    }
    st = sc_cuda_device_enter(device, &saved, fn);
    if (st != SC_SUCCESS)
        return st;
    st = sc_cuda_status((cudaError_t)sc_kernel_launch(job, stream), fn, "kernel launch");
    sc_cuda_device_leave(device, saved);
    return st;
}
