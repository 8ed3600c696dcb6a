/* sc-bench --device in a CUDA build: the rank's GPU, one non-blocking stream (as
 * nccl-tests creates it) and two device buffers. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "bench_device.h"

struct sc_bench_device {
    int ordinal;
    cudaStream_t stream;
    void *buf[2];
    char name[320];
};

static char sc_bench_device_error_text[512];

static sc_status_t sc_bench_device_fail(sc_status_t status, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sc_bench_device_error_text, sizeof(sc_bench_device_error_text), fmt, ap);
    va_end(ap);
    return status;
}

/* SC_ERR_DEVICE naming the CUDA call and CUDA's error. */
static sc_status_t sc_bench_cuda_fail(cudaError_t err, const char *call)
{
    return sc_bench_device_fail(SC_ERR_DEVICE, "--device: %s failed: %s (%s)", call,
                                cudaGetErrorString(err), cudaGetErrorName(err));
}

int sc_bench_device_available(void)
{
    return 1;
}

/* SC_DEVICE if set, else local_rank modulo count. */
static sc_status_t sc_bench_device_pick(int local_rank, int count, int *ordinal)
{
    const char *env = getenv("SC_DEVICE");
    char *end;
    long v;

    if (env && *env) {
        errno = 0;
        v = strtol(env, &end, 10);
        /* A plain integer, as the library reads SC_DEVICE (env.c): no blank, no sign. */
        if (*env < '0' || *env > '9' || errno || *end != '\0' || v >= count)
            return sc_bench_device_fail(SC_ERR_INVALID_ARG,
                                        "--device: SC_DEVICE=%s is not a GPU ordinal below "
                                        "%d (the GPUs this process sees)", env, count);
        *ordinal = (int)v;
        return SC_SUCCESS;
    }
    *ordinal = (local_rank > 0 ? local_rank : 0) % count;
    return SC_SUCCESS;
}

sc_status_t sc_bench_device_open(int local_rank, size_t bytes, sc_bench_device_t **out)
{
    struct cudaDeviceProp prop;
    sc_bench_device_t *dev;
    cudaError_t err;
    sc_status_t status;
    int count = 0;

    dev = calloc(1, sizeof(*dev));
    if (!dev)
        return sc_bench_device_fail(SC_ERR_NO_MEMORY, "--device: out of memory");
    err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        status = sc_bench_device_fail(SC_ERR_DEVICE, "--device: no usable GPU: "
                                      "cudaGetDeviceCount failed: %s (%s)",
                                      cudaGetErrorString(err), cudaGetErrorName(err));
        goto err_free;
    }
    if (count == 0) {
        status = sc_bench_device_fail(SC_ERR_DEVICE, "--device: no usable GPU: "
                                      "cudaGetDeviceCount found none");
        goto err_free;
    }
    status = sc_bench_device_pick(local_rank, count, &dev->ordinal);
    if (status != SC_SUCCESS)
        goto err_free;
    if ((err = cudaSetDevice(dev->ordinal)) != cudaSuccess) {
        status = sc_bench_cuda_fail(err, "cudaSetDevice");
        goto err_free;
    }
    if ((err = cudaGetDeviceProperties(&prop, dev->ordinal)) != cudaSuccess) {
        status = sc_bench_cuda_fail(err, "cudaGetDeviceProperties");
        goto err_free;
    }
    snprintf(dev->name, sizeof(dev->name), "GPU %d (%s)", dev->ordinal, prop.name);
    if ((err = cudaStreamCreateWithFlags(&dev->stream, cudaStreamNonBlocking)) !=
        cudaSuccess) {
        status = sc_bench_cuda_fail(err, "cudaStreamCreateWithFlags");
        goto err_free;
    }
    for (int i = 0; i < 2; i++) {
        if ((err = cudaMalloc(&dev->buf[i], bytes ? bytes : 1)) != cudaSuccess) {
            status = sc_bench_device_fail(SC_ERR_DEVICE,
                                          "--device: cudaMalloc of %zu B failed: %s (%s)",
                                          bytes, cudaGetErrorString(err),
                                          cudaGetErrorName(err));
            goto err_free_buffers;
        }
        if ((err = cudaMemsetAsync(dev->buf[i], 0, bytes, dev->stream)) != cudaSuccess) {
            status = sc_bench_cuda_fail(err, "cudaMemsetAsync");
            goto err_free_buffers;
        }
    }
    status = sc_bench_device_sync(dev);
    if (status != SC_SUCCESS)
        goto err_free_buffers;
    *out = dev;
    return SC_SUCCESS;

err_free_buffers:
    for (int i = 0; i < 2; i++)
        if (dev->buf[i])
            cudaFree(dev->buf[i]);
    cudaStreamDestroy(dev->stream);
err_free:
    free(dev);
    return status;
}

void sc_bench_device_close(sc_bench_device_t *dev)
{
    if (!dev)
        return;
    for (int i = 0; i < 2; i++)
        cudaFree(dev->buf[i]);
    cudaStreamDestroy(dev->stream);
    free(dev);
}

void *sc_bench_device_buffer(const sc_bench_device_t *dev, int index)
{
    return dev->buf[index];
}

sc_stream_t sc_bench_device_stream(const sc_bench_device_t *dev)
{
    return (sc_stream_t)dev->stream;
}

const char *sc_bench_device_name(const sc_bench_device_t *dev)
{
    return dev->name;
}

sc_status_t sc_bench_device_copy(sc_bench_device_t *dev, void *dst, const void *src,
                                 size_t bytes)
{
    cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, dev->stream);

    if (err != cudaSuccess)
        return sc_bench_cuda_fail(err, "cudaMemcpyAsync");
    return sc_bench_device_sync(dev);
}

sc_status_t sc_bench_device_sync(sc_bench_device_t *dev)
{
    cudaError_t err = cudaStreamSynchronize(dev->stream);

    return err == cudaSuccess ? SC_SUCCESS : sc_bench_cuda_fail(err, "cudaStreamSynchronize");
}

const char *sc_bench_device_error(void)
{
    return sc_bench_device_error_text;
}
