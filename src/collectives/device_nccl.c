/* The NCCL backend: a non-blocking NCCL communicator per shardcomm communicator,
 * created by the first device collective (or split) from the id that travelled
 * through the bootstrap store, split with ncclCommSplit, polled for asynchronous errors and
 * aborted on failure, timeout or sc_comm_abort. */
#include <nccl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectives/device_internal.h"
#include "core/clock.h"
#include "core/log.h"

_Static_assert(sizeof(ncclUniqueId) == SC_NCCL_ID_BYTES, "NCCL id size");

int sc_nccl_available(void)
{
    return 1;
}

int sc_nccl_make_id(unsigned char *id)
{
    ncclUniqueId uid;
    ncclResult_t r = ncclGetUniqueId(&uid);

    if (r != ncclSuccess) {
        sc_log(SC_LOG_WARN, "ncclGetUniqueId failed (%s): device buffers will go through "
               "pinned host memory", ncclGetErrorString(r));
        return 0;
    }
    memcpy(id, &uid, sizeof(uid));
    return 1;
}

static sc_status_t sc_nccl_error(ncclComm_t comm, ncclResult_t r, const char *fn,
                                 const char *what)
{
    const char *last = comm ? ncclGetLastError(comm) : NULL;

    return sc_error(r == ncclInvalidArgument || r == ncclInvalidUsage ? SC_ERR_INVALID_ARG
                                                                       : SC_ERR_DEVICE,
                    "%s: %s failed: %s%s%s", fn, what, ncclGetErrorString(r),
                    last && last[0] ? ": " : "", last ? last : "");
}

/* Waits (up to the communicator's timeout) for a non-blocking NCCL call that returned
 * ncclInProgress to settle. */
static sc_status_t sc_nccl_settle(sc_device_t *d, ncclComm_t comm, ncclResult_t r,
                                  const char *fn, const char *what)
{
    double deadline = sc_clock_now() + d->comm->timeout_s;

    while (r == ncclInProgress) {
        struct timespec ts = {0, 50 * 1000};

        if (ncclCommGetAsyncError(comm, &r) != ncclSuccess)
            break;
        if (r != ncclInProgress)
            break;
        if (sc_clock_now() > deadline) {
            return sc_error(SC_ERR_TIMEOUT, "%s: %s did not finish within %.0f s "
                            "(SC_TIMEOUT): a rank never joined or stopped", fn, what,
                            d->comm->timeout_s);
        }
        nanosleep(&ts, NULL);
    }
    return r == ncclSuccess ? SC_SUCCESS : sc_nccl_error(comm, r, fn, what);
}

static void sc_nccl_config(ncclConfig_t *cfg)
{
    ncclConfig_t init = NCCL_CONFIG_INITIALIZER;

    *cfg = init;
    cfg->blocking = 0;
}

/* Creates the NCCL communicator on the first device collective (all ranks issue it in
 * the same order, so all ranks create it together). */
static sc_status_t sc_nccl_ensure(sc_device_t *d, const char *fn)
{
    ncclComm_t comm = NULL;
    ncclUniqueId id;
    ncclConfig_t cfg;
    ncclResult_t r;
    sc_status_t st;

    if (d->nccl)
        return SC_SUCCESS;
    if (!d->have_id)
        return sc_error(SC_ERR_INTERNAL, "%s: no NCCL id for this communicator", fn);
    memcpy(&id, d->nccl_id, sizeof(id));
    sc_nccl_config(&cfg);
    r = ncclCommInitRankConfig(&comm, d->comm->size, id, d->comm->rank, &cfg);
    if (r != ncclSuccess && r != ncclInProgress)
        return sc_nccl_error(comm, r, fn, "ncclCommInitRankConfig");
    st = sc_nccl_settle(d, comm, r, fn, "creating the NCCL communicator");
    if (st != SC_SUCCESS) {
        if (comm)
            ncclCommAbort(comm);
        return st;
    }
    sc_log(SC_LOG_INFO, "NCCL communicator ready on GPU %d (%d ranks)", d->device,
           d->comm->size);
    d->nccl = comm;
    return SC_SUCCESS;
}

static ncclDataType_t sc_nccl_dtype(sc_dtype_t t)
{
    switch (t) {
    case SC_FLOAT32: return ncclFloat32;
    case SC_FLOAT64: return ncclFloat64;
    case SC_FLOAT16: return ncclFloat16;
    case SC_BFLOAT16: return ncclBfloat16;
    case SC_INT8: return ncclInt8;
    case SC_UINT8: return ncclUint8;
    case SC_INT32: return ncclInt32;
    case SC_INT64: return ncclInt64;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    case SC_FLOAT8_E4M3: return ncclFloat8e4m3;
    case SC_FLOAT8_E5M2: return ncclFloat8e5m2;
#endif
    default: return ncclNumTypes;
    }
}

static ncclRedOp_t sc_nccl_op(sc_op_t op)
{
    switch (op) {
    case SC_SUM: return ncclSum;
    case SC_PROD: return ncclProd;
    case SC_MIN: return ncclMin;
    case SC_MAX: return ncclMax;
    default: return ncclAvg;
    }
}

/* Pairwise exchange of count-element blocks; in place through a stream-ordered copy. */
static ncclResult_t sc_nccl_alltoall(const sc_call_t *call, ncclComm_t comm, int size,
                                     cudaStream_t s, void **tmp)
{
    size_t block = call->count * sc_dtype_size(call->dtype);
    ncclDataType_t dt = sc_nccl_dtype(call->dtype);
    const char *src = call->sbuf;
    ncclResult_t r, r2;

    if (call->sbuf == call->rbuf) {
        if (cudaMallocAsync(tmp, block * (size_t)size, s) != cudaSuccess ||
            cudaMemcpyAsync(*tmp, call->sbuf, block * (size_t)size, cudaMemcpyDeviceToDevice,
                            s) != cudaSuccess)
            return ncclUnhandledCudaError;
        src = *tmp;
    }
    r = ncclGroupStart();
    for (int p = 0; p < size && r == ncclSuccess; p++) {
        r = ncclSend(src + (size_t)p * block, call->count, dt, p, comm, s);
        if (r == ncclSuccess)
            r = ncclRecv((char *)call->rbuf + (size_t)p * block, call->count, dt, p, comm, s);
    }
    r2 = ncclGroupEnd();
    return r != ncclSuccess ? r : r2;
}

static sc_status_t sc_nccl_issue(sc_device_t *d, const sc_call_t *call, cudaStream_t s,
                                 sc_dev_op_t *dop)
{
    const char *fn = sc_call_name(call);
    ncclDataType_t dt = sc_nccl_dtype(call->dtype);
    /* On one rank avg is the identity, as sum is: NCCL 2.28's single-rank avg left the
     * last elements of an odd-sized float64 buffer unwritten (seen on an H100). */
    ncclRedOp_t op = call->redop == SC_AVG && d->comm->size == 1 ? ncclSum
                                                                 : sc_nccl_op(call->redop);
    void *tmp = NULL;
    ncclComm_t comm;
    ncclResult_t r;
    sc_status_t st;
    char text[SC_ERROR_MAX];

    (void)dop;
    if (__atomic_load_n(&d->nccl_aborted, __ATOMIC_ACQUIRE))
        return sc_error(SC_ERR_ABORTED, "%s: the NCCL communicator was aborted", fn);
    if (dt == ncclNumTypes)
        return sc_error(SC_ERR_UNSUPPORTED, "%s: this NCCL (%d) has no %s; float8 needs "
                        "NCCL 2.24 or later", fn, NCCL_VERSION_CODE, sc_dtype_name(call->dtype));
    st = sc_nccl_ensure(d, fn);
    if (st != SC_SUCCESS)
        goto fail;
    comm = d->nccl;
    switch (call->kind) {
    case SC_COLL_ALLREDUCE:
        r = ncclAllReduce(call->sbuf, call->rbuf, call->count, dt, op, comm, s);
        break;
    case SC_COLL_REDUCE_SCATTER:
        r = ncclReduceScatter(call->sbuf, call->rbuf, call->count, dt, op, comm, s);
        break;
    case SC_COLL_ALLGATHER:
        r = ncclAllGather(call->sbuf, call->rbuf, call->count, dt, comm, s);
        break;
    case SC_COLL_BROADCAST:
        r = ncclBroadcast(call->sbuf, call->rbuf, call->count, dt, call->root, comm, s);
        break;
    case SC_COLL_REDUCE:
        r = ncclReduce(call->sbuf, call->rbuf, call->count, dt, op, call->root, comm, s);
        break;
    case SC_COLL_ALLTOALL:
        r = sc_nccl_alltoall(call, comm, d->comm->size, s, &tmp);
        break;
    case SC_COLL_SEND:
        r = ncclSend(call->sbuf, call->count, dt, call->root, comm, s);
        break;
    case SC_COLL_RECV:
        r = ncclRecv(call->rbuf, call->count, dt, call->root, comm, s);
        break;
    default:
        return sc_error(SC_ERR_INTERNAL, "%s: no NCCL mapping", fn);
    }
    if (tmp)
        (void)cudaFreeAsync(tmp, s);
    if (r != ncclSuccess && r != ncclInProgress) {
        st = sc_nccl_error(comm, r, fn, "the NCCL call");
        goto fail;
    }
    st = sc_nccl_settle(d, comm, r, fn, "the NCCL call");
    if (st != SC_SUCCESS)
        goto fail;
    return SC_SUCCESS;

fail:
    /* Peers may have queued their part: fail the communicator everywhere. */
    snprintf(text, sizeof(text), "%s", sc_last_error());
    sc_device_fail(d, st, text);
    return st;
}

sc_status_t sc_nccl_split(sc_device_t *p, sc_device_t *child, int color, int key)
{
    /* A non-blocking ncclCommSplit writes the new communicator from NCCL's own thread
     * when its job creates it (NCCL 2.28 does not set it before returning), so the
     * output lives in the device state, never on this stack. */
    void **cell = child ? &child->nccl : &p->split_sink;
    double deadline = sc_clock_now() + p->comm->timeout_s;
    ncclResult_t r, state = ncclInProgress;
    ncclConfig_t cfg;
    ncclComm_t sub;
    sc_status_t st;

    if (__atomic_load_n(&p->nccl_aborted, __ATOMIC_ACQUIRE))
        return sc_error(SC_ERR_ABORTED, "sc_comm_split: the NCCL communicator was aborted");
    /* Every parent rank is here, so the parent's NCCL communicator can be created now if
     * no device collective did it yet; the child is split from it. */
    st = sc_nccl_ensure(p, "sc_comm_split");
    if (st != SC_SUCCESS)
        return st;
    sc_nccl_config(&cfg);
    __atomic_store_n(cell, NULL, __ATOMIC_RELEASE);
    r = ncclCommSplit(p->nccl, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key,
                      (ncclComm_t *)cell, &cfg);
    if (r != ncclSuccess && r != ncclInProgress)
        return sc_nccl_error(p->nccl, r, "sc_comm_split", "ncclCommSplit");
    for (;;) {
        struct timespec ts = {0, 50 * 1000};

        sub = __atomic_load_n((ncclComm_t *)cell, __ATOMIC_ACQUIRE);
        /* Without a color there is no child to watch: the parent's state says when the
         * split is over. */
        if (ncclCommGetAsyncError(sub ? sub : p->nccl, &state) != ncclSuccess)
            state = ncclInternalError;
        if (state != ncclInProgress && (sub || color < 0))
            break;
        if (state != ncclInProgress && state != ncclSuccess)
            break;
        if (sc_clock_now() > deadline)
            return sc_error(SC_ERR_TIMEOUT, "sc_comm_split: ncclCommSplit did not finish "
                            "within %.0f s (SC_TIMEOUT)", p->comm->timeout_s);
        nanosleep(&ts, NULL);
    }
    if (state != ncclSuccess) {
        st = sc_nccl_error(sub ? sub : p->nccl, state, "sc_comm_split", "ncclCommSplit");
        if (sub)
            ncclCommAbort(sub);
        __atomic_store_n(cell, NULL, __ATOMIC_RELEASE);
        return st;
    }
    return SC_SUCCESS;
}

sc_status_t sc_nccl_poll_error(sc_device_t *d)
{
    ncclResult_t r = ncclSuccess;

    if (!d->nccl || __atomic_load_n(&d->nccl_aborted, __ATOMIC_ACQUIRE))
        return SC_SUCCESS;
    if (ncclCommGetAsyncError(d->nccl, &r) != ncclSuccess || r == ncclSuccess ||
        r == ncclInProgress)
        return SC_SUCCESS;
    return sc_nccl_error(d->nccl, r, "device collective", "NCCL (asynchronous error)");
}

void sc_nccl_abort(sc_device_t *d)
{
    if (!d->nccl || __atomic_exchange_n(&d->nccl_aborted, 1, __ATOMIC_ACQ_REL))
        return;
    sc_log(SC_LOG_WARN, "aborting the NCCL communicator on GPU %d", d->device);
    ncclCommAbort(d->nccl);
}

void sc_nccl_destroy(sc_device_t *d)
{
    ncclResult_t r;

    if (!d->nccl || __atomic_exchange_n(&d->nccl_aborted, 1, __ATOMIC_ACQ_REL))
        return;
    r = ncclCommFinalize(d->nccl);
    if ((r == ncclSuccess || r == ncclInProgress) &&
        sc_nccl_settle(d, d->nccl, r, "sc_comm_destroy", "ncclCommFinalize") == SC_SUCCESS)
        ncclCommDestroy(d->nccl);
    else
        ncclCommAbort(d->nccl);
    d->nccl = NULL;
}

const sc_device_backend_t sc_device_backend_nccl = {"nccl", sc_nccl_issue};
