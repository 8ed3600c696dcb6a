/* The top-k selection's device path in a CUDA build: the exact mode only, buffers
 * aligned to their elements, the radix select (topk_cuda.cu) on the caller's stream on
 * the buffers' GPU, then a wait for the stream so that *selected is final. */
#include <stdint.h>

#include "compress/topk_device.h"
#include "compress/topk_internal.h"
#include "core/cuda_util.h"

static const char *topk_mode_name(sc_topk_mode_t mode)
{
    return mode == SC_TOPK_APPROX ? "SC_TOPK_APPROX" : "SC_TOPK_RANDOM";
}

sc_status_t sc_topk_select_device(sc_topk_t *topk, const sc_topk_job_t *job, int device,
                                  sc_stream_t stream, size_t *selected)
{
    static const char fn[] = "sc_topk_select";
    sc_topk_device_job_t dj = {job->x, job->n, job->k, job->fmt.width, job->fmt.key_bits,
                               job->fmt.nan_key, job->index_bits, job->indices, job->values};
    int saved;
    sc_status_t st;

    if (topk->config.mode != SC_TOPK_EXACT)
        return sc_error(SC_ERR_UNSUPPORTED,
                        "%s: x is on GPU %d, and the device path selects in SC_TOPK_EXACT "
                        "mode only; this selector's mode is %s (select on a host copy, or "
                        "with an exact selector)", fn, device,
                        topk_mode_name(topk->config.mode));
    st = sc_cuda_device_enter(device, &saved, fn);
    if (st != SC_SUCCESS)
        return st;
    st = sc_cuda_status((cudaError_t)sc_topk_cuda_select(&dj, stream), fn,
                        "the radix select on the GPU");
    if (st == SC_SUCCESS)
        st = sc_cuda_status(cudaStreamSynchronize((cudaStream_t)stream), fn,
                            "waiting for the stream");
    sc_cuda_device_leave(device, saved);
    if (st != SC_SUCCESS)
        return st;
    *selected = job->k;
    return SC_SUCCESS;
}
