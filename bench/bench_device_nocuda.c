/* sc-bench --device in a host-only build: no device can be opened, so the other
 * functions are never reached with one. */
#include "bench_device.h"

static const char sc_bench_device_refusal[] =
    "--device needs a CUDA build (this one is host-only)";

int sc_bench_device_available(void)
{
    return 0;
}

sc_status_t sc_bench_device_open(int local_rank, size_t bytes, sc_bench_device_t **dev)
{
    (void)local_rank;
    (void)bytes;
    (void)dev;
    return SC_ERR_UNSUPPORTED;
}

void sc_bench_device_close(sc_bench_device_t *dev)
{
    (void)dev;
}

void *sc_bench_device_buffer(const sc_bench_device_t *dev, int index)
{
    (void)dev;
    (void)index;
    return NULL;
}

sc_stream_t sc_bench_device_stream(const sc_bench_device_t *dev)
{
    (void)dev;
    return NULL;
}

const char *sc_bench_device_name(const sc_bench_device_t *dev)
{
    (void)dev;
    return "none";
}

sc_status_t sc_bench_device_copy(sc_bench_device_t *dev, void *dst, const void *src,
                                 size_t bytes)
{
    (void)dev;
    (void)dst;
    (void)src;
    (void)bytes;
    return SC_ERR_UNSUPPORTED;
}

sc_status_t sc_bench_device_sync(sc_bench_device_t *dev)
{
    (void)dev;
    return SC_ERR_UNSUPPORTED;
}

const char *sc_bench_device_error(void)
{
    return sc_bench_device_refusal;
}
