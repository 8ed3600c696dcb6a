/* Device buckets: the reducer's communication stream on the compute stream's GPU, and
 * the element work on device buckets (copies, zeroing, scaled copies and accumulation)
 * ordered on it. The compute stream and the communication stream meet through one
 * event, re-recorded under a lock (mark_ready may run on several threads). */
#include <pthread.h>
#include <stdlib.h>

#include "collectives/reducer_device.h"
#include "collectives/reducer_internal.h"
#include "core/cuda_util.h"
#include "core/dtype.h"
#include "shardcomm/kernels.h"

typedef struct {
    cudaStream_t compute, comm;
    cudaEvent_t event;
    pthread_mutex_t lock;
} sc_rmem_dev_t;

static sc_status_t sc_rmem_dev_enter(sc_reducer_mem_t *m, int *saved, const char *fn)
{
    return sc_cuda_device_enter(m->device, saved, fn);
}

static sc_status_t sc_rmem_dev_copy(sc_reducer_mem_t *m, void *dst, const void *src,
                                    size_t bytes)
{
    sc_rmem_dev_t *d = m->state;
    sc_status_t st;
    int saved;

    if (dst == src || bytes == 0)
        return SC_SUCCESS;
    st = sc_rmem_dev_enter(m, &saved, "sc_reducer");
    if (st != SC_SUCCESS)
        return st;
    st = sc_cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, d->comm),
                        "sc_reducer", "a bucket copy (cudaMemcpyAsync)");
    sc_cuda_device_leave(m->device, saved);
    return st;
}

static sc_status_t sc_rmem_dev_zero(sc_reducer_mem_t *m, void *dst, size_t bytes)
{
    sc_rmem_dev_t *d = m->state;
    sc_status_t st;
    int saved;

    st = sc_rmem_dev_enter(m, &saved, "sc_reducer");
    if (st != SC_SUCCESS)
        return st;
    st = sc_cuda_status(cudaMemsetAsync(dst, 0, bytes, d->comm), "sc_reducer",
                        "zeroing a missing gradient (cudaMemsetAsync)");
    sc_cuda_device_leave(m->device, saved);
    return st;
}

static sc_status_t sc_rmem_dev_scale(sc_reducer_mem_t *m, sc_dtype_t dtype, void *dst,
                                     const void *src, size_t count, double scale,
                                     int accumulate)
{
    sc_rmem_dev_t *d = m->state;
    int narrow = dtype == SC_FLOAT32 || dtype == SC_FLOAT16 || dtype == SC_BFLOAT16;
    sc_status_t st;
    int saved;

    if (!accumulate && (scale == 1.0 || !sc_dtype_is_float(dtype)))
        return sc_rmem_dev_copy(m, dst, src, count * sc_dtype_size(dtype));
    /* The cast kernel with a fused scale is the host twin's scaled copy. */
    if (!accumulate && narrow)
        return sc_cast(src, dtype, dst, dtype, count, (float)scale, d->comm);
    st = sc_rmem_dev_enter(m, &saved, "sc_reducer");
    if (st != SC_SUCCESS)
        return st;
    st = sc_cuda_status((cudaError_t)sc_reducer_launch_scale((int)dtype, dst, src, count,
                                                             scale, accumulate, d->comm),
                        "sc_reducer", accumulate ? "the accumulation kernel" :
                                                   "the scaled-copy kernel");
    sc_cuda_device_leave(m->device, saved);
    return st;
}

/* Work on `to` waits for the work enqueued on `from` so far. */
static sc_status_t sc_rmem_dev_join(sc_reducer_mem_t *m, cudaStream_t from, cudaStream_t to,
                                    const char *what)
{
    sc_rmem_dev_t *d = m->state;
    cudaError_t err;
    sc_status_t st;
    int saved;

    st = sc_rmem_dev_enter(m, &saved, "sc_reducer");
    if (st != SC_SUCCESS)
        return st;
    pthread_mutex_lock(&d->lock);
    err = cudaEventRecord(d->event, from);
    if (err == cudaSuccess)
        err = cudaStreamWaitEvent(to, d->event, 0);
    pthread_mutex_unlock(&d->lock);
    sc_cuda_device_leave(m->device, saved);
    return sc_cuda_status(err, "sc_reducer", what);
}

static sc_status_t sc_rmem_dev_after_compute(sc_reducer_mem_t *m)
{
    sc_rmem_dev_t *d = m->state;

    return sc_rmem_dev_join(m, d->compute, d->comm,
                            "ordering the communication stream after the compute stream");
}

static sc_status_t sc_rmem_dev_before_compute(sc_reducer_mem_t *m)
{
    sc_rmem_dev_t *d = m->state;

    return sc_rmem_dev_join(m, d->comm, d->compute,
                            "ordering the compute stream after the communication stream");
}

static void sc_rmem_dev_close(sc_reducer_mem_t *m)
{
    sc_rmem_dev_t *d = m->state;
    int saved;

    if (!d)
        return;
    if (sc_rmem_dev_enter(m, &saved, "sc_reducer_destroy") == SC_SUCCESS) {
        (void)cudaStreamSynchronize(d->comm);
        (void)cudaEventDestroy(d->event);
        (void)cudaStreamDestroy(d->comm);
        sc_cuda_device_leave(m->device, saved);
    }
    pthread_mutex_destroy(&d->lock);
    free(d);
    sc_reducer_mem_host(m);
}

sc_status_t sc_reducer_mem_device(sc_reducer_mem_t *m, sc_stream_t compute, int comm_gpu)
{
    cudaStream_t cs = (cudaStream_t)compute;
    sc_rmem_dev_t *d;
    cudaError_t err;
    sc_status_t st;
    int dev = -1, saved;

    if (comm_gpu < 0)
        return sc_error(SC_ERR_DEVICE, "sc_reducer_create: config.stream is set (device "
                        "gradients), but the communicator found no usable GPU when it was "
                        "created");
    err = cudaStreamGetDevice(cs, &dev);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_create: config.stream is not a valid "
                        "CUDA stream (%s)", cudaGetErrorString(err));
    }
    if (dev != comm_gpu)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_create: config.stream is on GPU %d, "
                        "but the communicator uses GPU %d (SC_DEVICE or config.device)", dev,
                        comm_gpu);
    d = calloc(1, sizeof(*d));
    if (!d)
        return sc_error(SC_ERR_NO_MEMORY, "sc_reducer_create: out of memory");
    st = sc_cuda_device_enter(dev, &saved, "sc_reducer_create");
    if (st != SC_SUCCESS)
        goto err_free;
    err = cudaStreamCreateWithFlags(&d->comm, cudaStreamNonBlocking);
    if (err == cudaSuccess) {
        err = cudaEventCreateWithFlags(&d->event, cudaEventDisableTiming);
        if (err != cudaSuccess)
            (void)cudaStreamDestroy(d->comm);
    }
    sc_cuda_device_leave(dev, saved);
    if (err != cudaSuccess) {
        st = sc_cuda_status(err, "sc_reducer_create", "creating the communication stream");
        goto err_free;
    }
    d->compute = cs;
    pthread_mutex_init(&d->lock, NULL);
    m->device = dev;
    m->stream = (sc_stream_t)d->comm;
    m->state = d;
    m->copy = sc_rmem_dev_copy;
    m->zero = sc_rmem_dev_zero;
    m->scale = sc_rmem_dev_scale;
    m->after_compute = sc_rmem_dev_after_compute;
    m->before_compute = sc_rmem_dev_before_compute;
    m->close = sc_rmem_dev_close;
    return SC_SUCCESS;

err_free:
    free(d);
    return st;
}
