/* The top-k selection's device path in a host-only build: device buffers are refused
 * with a sentence, and x is never read. */
#include "compress/topk_internal.h"
#include "core/error.h"

sc_status_t sc_topk_select_device(sc_topk_t *topk, const sc_topk_job_t *job, int device,
                                  sc_stream_t stream, size_t *selected)
{
    (void)topk, (void)job, (void)stream, (void)selected;
    return sc_error(SC_ERR_UNSUPPORTED,
                    "sc_topk_select: x is on GPU %d, but device buffers need a CUDA build "
                    "(this one is host-only); select on a host copy", device);
}
