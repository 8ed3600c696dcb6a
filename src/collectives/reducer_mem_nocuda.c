/* Device buckets in a host-only build: refused with a sentence. */
#include "collectives/reducer_internal.h"

sc_status_t sc_reducer_mem_device(sc_reducer_mem_t *m, sc_stream_t compute, int comm_gpu)
{
    (void)m, (void)compute, (void)comm_gpu;
    return sc_error(SC_ERR_UNSUPPORTED, "sc_reducer_create: config.stream is set (device "
                    "gradients), but device buckets need a CUDA build (this one is host-only)");
}
