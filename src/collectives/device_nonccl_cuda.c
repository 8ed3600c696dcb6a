/* A CUDA build without NCCL: device buffers always go host-staged. */
#include "collectives/device_internal.h"

int sc_nccl_available(void)
{
    return 0;
}

int sc_nccl_make_id(unsigned char *id)
{
    (void)id;
    return 0;
}

sc_status_t sc_nccl_split(sc_device_t *parent, sc_device_t *child, int color, int key)
{
    (void)parent, (void)child, (void)color, (void)key;
    return SC_SUCCESS;
}

sc_status_t sc_nccl_poll_error(sc_device_t *d)
{
    (void)d;
    return SC_SUCCESS;
}

void sc_nccl_abort(sc_device_t *d)
{
    (void)d;
}

void sc_nccl_destroy(sc_device_t *d)
{
    (void)d;
}

static sc_status_t sc_nonccl_issue(sc_device_t *d, const sc_call_t *call, cudaStream_t s,
                                   sc_dev_op_t *dop)
{
    (void)d, (void)s, (void)dop;
    return sc_error(SC_ERR_INTERNAL, "%s: NCCL backend chosen in a build without NCCL",
                    sc_call_name(call));
}

const sc_device_backend_t sc_device_backend_nccl = {"nccl", sc_nonccl_issue};
