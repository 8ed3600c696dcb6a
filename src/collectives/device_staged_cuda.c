/* Host-staged device collectives: the input is copied to pinned host memory on the
 * caller's stream, the host collective runs on it, and the result is copied back,
 * all in stream order. Used when NCCL is absent, switched off (SC_NCCL=0), or when
 * ranks share a GPU (NCCL refuses that). */
#include <string.h>

#include "collectives/device_internal.h"
#include "core/cuda_util.h"
#include "core/progress.h"

/* Runs on CUDA's host-function thread when the stream has copied the input out:
 * opens the host op's gate and holds the stream until the host collective is over.
 * It makes no CUDA call and takes no engine lock (the progress thread drives). */
static void CUDART_CB sc_staged_on_stream(void *arg)
{
    sc_dev_op_t *dop = arg;
    sc_transport_t *tp = dop->dev->tp;

    __atomic_store_n(&dop->gate, 1, __ATOMIC_RELEASE);
    sc_progress_kick(tp);
    sc_request_wait_passive(&dop->host_req);
}

static sc_status_t sc_staged_issue(sc_device_t *d, const sc_call_t *call, cudaStream_t stream,
                                   sc_dev_op_t *dop)
{
    sc_comm_t *c = d->comm;
    const char *fn = sc_call_name(call);
    size_t sb, rb, roff;
    sc_call_t host = *call;
    char text[SC_ERROR_MAX];
    sc_status_t st;
    uint8_t *stage;

    sc_call_bytes(call, c->rank, c->size, &sb, &rb);
    /* Out-of-place staging serves in-place calls too: the input is copied out before
     * any output is written. Offsets stay 64-byte aligned for the reductions. */
    roff = (sb + 63) & ~(size_t)63;
    st = sc_device_stage_get(d, roff + rb + 64, &dop->stage, &dop->stage_bytes);
    if (st != SC_SUCCESS)
        return st;
    stage = dop->stage;
    host.sbuf = sb ? stage : NULL;
    host.rbuf = rb ? stage + roff : NULL;
    dop->staged = 1;
    if (sb) {
        st = sc_cuda_status(cudaMemcpyAsync(stage, call->sbuf, sb, cudaMemcpyDeviceToHost,
                                            stream), fn, "cudaMemcpyAsync to the staging buffer");
        if (st != SC_SUCCESS)
            return st;
    }
    /* Queued now, in issue order with every other call on the communicator; it
     * starts when the stream opens its gate. */
    st = sc_call_enqueue_host(&host, c, &dop->host_req, &dop->gate, 0, NULL, 0);
    if (st != SC_SUCCESS)
        return st;
    st = sc_cuda_status(cudaLaunchHostFunc(stream, sc_staged_on_stream, dop), fn,
                        "cudaLaunchHostFunc");
    if (st == SC_SUCCESS && rb)
        st = sc_cuda_status(cudaMemcpyAsync(call->rbuf, host.rbuf, rb, cudaMemcpyHostToDevice,
                                            stream), fn, "cudaMemcpyAsync from the staging buffer");
    if (st != SC_SUCCESS) {
        /* The host op is queued on every rank: fail it everywhere. */
        snprintf(text, sizeof(text), "%s", sc_last_error());
        sc_device_fail(d, st, text);
    }
    return st;
}

const sc_device_backend_t sc_device_backend_staged = {"host-staged", sc_staged_issue};
