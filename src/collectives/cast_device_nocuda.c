/* The mixed-precision kernels' device path in a host-only build: device buffers are
 * refused with a sentence. */
#include "collectives/cast_kernels.h"
#include "core/error.h"

sc_status_t sc_kernel_run_device(const char *fn, const sc_kernel_job_t *job, int device,
                                 sc_stream_t stream)
{
    (void)job, (void)stream;
    return sc_error(SC_ERR_UNSUPPORTED,
                    "%s: the buffers are on GPU %d, but device buffers need a CUDA build "
                    "(this one is host-only)", fn, device);
}
