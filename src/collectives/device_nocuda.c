/* The device path in a host-only build: no GPU state, device buffers refused. */
#include <stdio.h>
#include <string.h>

#include "collectives/device.h"

void sc_device_blob_fill(const sc_bootstrap_params_t *p, uint8_t *blob)
{
    (void)p;
    memset(blob, 0, SC_DEVICE_BLOB);
}

sc_status_t sc_device_attach_world(sc_comm_t *c, const uint8_t *blobs)
{
    (void)c, (void)blobs;
    return SC_SUCCESS;
}

sc_status_t sc_device_split(sc_comm_t *parent, sc_comm_t *child, int color, int key)
{
    (void)parent, (void)child, (void)color, (void)key;
    return SC_SUCCESS;
}

sc_status_t sc_device_issue(sc_comm_t *c, const sc_call_t *call, int device,
                            sc_stream_t stream, sc_request_t **req)
{
    (void)c, (void)stream, (void)req;
    return sc_error(SC_ERR_UNSUPPORTED,
                    "%s: the buffers are on GPU %d, but device buffers need a CUDA build "
                    "(this one is host-only)", sc_call_name(call), device);
}

void sc_device_describe(const sc_comm_t *c, char *buf, size_t len)
{
    (void)c;
    snprintf(buf, len, "none: host-only build (device buffers are refused)");
}

void sc_device_abort(sc_comm_t *c)
{
    (void)c;
}

void sc_device_destroy(sc_comm_t *c)
{
    (void)c;
}

int sc_device_gpu(const sc_comm_t *c)
{
    (void)c;
    return -1;
}
