/* The device path of a communicator (CUDA builds): choice of GPU and backend at
 * start-up, one device op per call with its completion event, stream-ordered
 * requests, and a watchdog thread that completes, times out and aborts device work so
 * that a failure is an error on every rank, never a hang. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectives/device_internal.h"
#include "core/clock.h"
#include "core/cuda_util.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/progress.h"

#define SC_DEVICE_BLOB_MAGIC 0x53434456u /* "SCDV" */

/* One rank's rendezvous contribution. */
typedef struct {
    uint32_t magic;
    int32_t device_count;
    int32_t device;          /* explicit choice, or -1 */
    int32_t local_rank;      /* -1 when derived from host names */
    int32_t nccl_ok;         /* NCCL built in, not switched off, a GPU present */
    int32_t has_id;
    unsigned char nccl_id[SC_NCCL_ID_BYTES];
} sc_device_blob_t;

_Static_assert(sizeof(sc_device_blob_t) <= SC_DEVICE_BLOB, "device blob too large");

void sc_device_blob_fill(const sc_bootstrap_params_t *p, uint8_t *blob)
{
    sc_device_blob_t b;

    memset(&b, 0, sizeof(b));
    b.magic = SC_DEVICE_BLOB_MAGIC;
    b.device_count = sc_device_count();
    b.device = p->device;
    b.local_rank = p->local_rank;
    b.nccl_ok = b.device_count > 0 && p->nccl && sc_nccl_available();
    if (b.nccl_ok && p->rank == 0) {
        b.has_id = sc_nccl_make_id(b.nccl_id);
    }
    memset(blob, 0, SC_DEVICE_BLOB);
    memcpy(blob, &b, sizeof(b));
}

static sc_device_t *sc_device_alloc(sc_comm_t *c, int device)
{
    sc_device_t *d = calloc(1, sizeof(*d));

    if (!d)
        return NULL;
    d->comm = c;
    d->tp = c->tp;
    d->device = device;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->cond, NULL);
    return d;
}

sc_status_t sc_device_attach_world(sc_comm_t *c, const uint8_t *blobs)
{
    sc_device_blob_t *all = calloc((size_t)c->size, sizeof(*all));
    int *dev_of = calloc((size_t)c->size, sizeof(int));
    int *local_of = calloc((size_t)c->size, sizeof(int));
    int use_nccl = 1, shared_a = -1, shared_b = -1;
    sc_device_blob_t *me;
    sc_device_t *d;
    sc_status_t st = SC_SUCCESS;

    if (!all || !dev_of || !local_of) {
        st = sc_error(SC_ERR_NO_MEMORY, "sc_comm_init: out of memory");
        goto out;
    }
    for (int r = 0; r < c->size; r++) {
        memcpy(&all[r], blobs + (size_t)r * SC_DEVICE_BLOB, sizeof(all[r]));
        /* The local rank: given, or counted among earlier ranks on the same node. */
        local_of[r] = all[r].local_rank;
        if (local_of[r] < 0) {
            local_of[r] = 0;
            for (int q = 0; q < r; q++)
                local_of[r] += c->tp->node_of[q] == c->tp->node_of[r];
        }
        dev_of[r] = -1;
        if (all[r].magic == SC_DEVICE_BLOB_MAGIC && all[r].device_count > 0)
            dev_of[r] = all[r].device >= 0 ? all[r].device
                                           : local_of[r] % all[r].device_count;
        if (!all[r].nccl_ok || dev_of[r] < 0)
            use_nccl = 0;
        for (int q = 0; q < r && shared_a < 0; q++)
            if (dev_of[r] >= 0 && dev_of[q] == dev_of[r] &&
                c->tp->node_of[q] == c->tp->node_of[r])
                shared_a = q, shared_b = r;
    }
    me = &all[c->rank];
    if (me->device_count <= 0)
        goto out; /* no GPU here: device buffers cannot exist */
    if (dev_of[c->rank] >= me->device_count) {
        st = sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: GPU %d was asked for (SC_DEVICE or "
                      "config.device) but this process sees %d", dev_of[c->rank],
                      me->device_count);
        goto out;
    }
    if (shared_a >= 0) {
        if (use_nccl && c->rank == 0)
            sc_log(SC_LOG_INFO, "ranks %d and %d share GPU %d: device buffers go through "
                   "pinned host memory (host-staged) rather than NCCL", shared_a, shared_b,
                   dev_of[shared_a]);
        use_nccl = 0;
    }
    if (!all[0].has_id)
        use_nccl = 0;
    d = sc_device_alloc(c, dev_of[c->rank]);
    if (!d) {
        st = sc_error(SC_ERR_NO_MEMORY, "sc_comm_init: out of memory");
        goto out;
    }
    if (use_nccl) {
        d->backend = &sc_device_backend_nccl;
        d->have_id = 1;
        memcpy(d->nccl_id, all[0].nccl_id, SC_NCCL_ID_BYTES);
    } else {
        d->backend = &sc_device_backend_staged;
        sc_log(SC_LOG_INFO, "device buffers on GPU %d go through pinned host memory "
               "(host-staged)%s", d->device,
               sc_nccl_available() ? "" : ": this build has no NCCL");
    }
    c->dev = d;
out:
    free(all);
    free(dev_of);
    free(local_of);
    return st;
}

sc_status_t sc_device_split(sc_comm_t *parent, sc_comm_t *child, int color, int key)
{
    sc_device_t *p = parent->dev, *d;
    sc_status_t st;

    if (!p)
        return SC_SUCCESS;
    d = child ? sc_device_alloc(child, p->device) : NULL;
    if (child && !d)
        return sc_error(SC_ERR_NO_MEMORY, "sc_comm_split: out of memory");
    if (d)
        d->backend = p->backend;
    if (p->backend == &sc_device_backend_nccl) {
        st = sc_nccl_split(p, d, color, key);
        if (st != SC_SUCCESS) {
            free(d);
            return st;
        }
    }
    if (child)
        child->dev = d;
    return SC_SUCCESS;
}

/* ---- pools ---- */

static sc_status_t sc_device_event_get(sc_device_t *d, cudaEvent_t *ev)
{
    pthread_mutex_lock(&d->lock);
    if (d->event_pool_len > 0) {
        *ev = d->event_pool[--d->event_pool_len];
        pthread_mutex_unlock(&d->lock);
        return SC_SUCCESS;
    }
    pthread_mutex_unlock(&d->lock);
    return sc_cuda_status(cudaEventCreateWithFlags(ev, cudaEventDisableTiming),
                          "device collective", "cudaEventCreate");
}

static void sc_device_event_put(sc_device_t *d, cudaEvent_t ev)
{
    pthread_mutex_lock(&d->lock);
    if (d->event_pool_len == d->event_pool_cap) {
        int cap = d->event_pool_cap ? 2 * d->event_pool_cap : 16;
        cudaEvent_t *pool = realloc(d->event_pool, (size_t)cap * sizeof(*pool));
        if (!pool) {
            pthread_mutex_unlock(&d->lock);
            (void)cudaEventDestroy(ev);
            return;
        }
        d->event_pool = pool;
        d->event_pool_cap = cap;
    }
    d->event_pool[d->event_pool_len++] = ev;
    pthread_mutex_unlock(&d->lock);
}

static int sc_stage_class(size_t bytes)
{
    int k = 12; /* 4 KiB at least */

    while (k < SC_STAGE_CLASSES - 1 && ((size_t)1 << k) < bytes)
        k++;
    return k;
}

sc_status_t sc_device_stage_get(sc_device_t *d, size_t bytes, void **mem, size_t *got)
{
    int k = sc_stage_class(bytes);
    void *m;

    pthread_mutex_lock(&d->lock);
    m = d->stage_free[k];
    if (m)
        d->stage_free[k] = *(void **)m;
    pthread_mutex_unlock(&d->lock);
    if (!m) {
        cudaError_t err = cudaHostAlloc(&m, (size_t)1 << k, cudaHostAllocPortable);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            return sc_error(err == cudaErrorMemoryAllocation ? SC_ERR_NO_MEMORY : SC_ERR_DEVICE,
                            "host-staged device collective: %zu bytes of pinned staging "
                            "memory: %s", (size_t)1 << k, cudaGetErrorString(err));
        }
    }
    *mem = m;
    *got = (size_t)1 << k;
    return SC_SUCCESS;
}

void sc_device_stage_put(sc_device_t *d, void *mem, size_t bytes)
{
    int k = sc_stage_class(bytes);

    pthread_mutex_lock(&d->lock);
    *(void **)mem = d->stage_free[k];
    d->stage_free[k] = mem;
    pthread_mutex_unlock(&d->lock);
}

/* ---- failure ---- */

void sc_device_fail(sc_device_t *d, sc_status_t status, const char *text)
{
    sc_comm_t *c = d->comm;

    pthread_mutex_lock(&c->tp->lock);
    sc_progress_fail_comm(c, status, text, 1, 0);
    pthread_mutex_unlock(&c->tp->lock);
    if (d->backend == &sc_device_backend_nccl)
        sc_nccl_abort(d);
}

/* The communicator's failure, if any, with its sentence. */
static sc_status_t sc_device_broken(sc_device_t *d, char *text, size_t len)
{
    sc_comm_t *c = d->comm;
    sc_status_t st;

    /* Polled for every pending op: the transport lock only once it broke. */
    if (__atomic_load_n(&c->broken, __ATOMIC_ACQUIRE) == SC_SUCCESS)
        return SC_SUCCESS;
    pthread_mutex_lock(&c->tp->lock);
    st = c->broken;
    if (st != SC_SUCCESS)
        snprintf(text, len, "%s", c->broken_text);
    pthread_mutex_unlock(&c->tp->lock);
    return st;
}

/* ---- device ops ---- */

static void sc_dev_op_finish(sc_dev_op_t *dop, sc_status_t st, const char *text)
{
    pthread_mutex_lock(&dop->dev->lock);
    if (!__atomic_load_n(&dop->finished, __ATOMIC_ACQUIRE)) {
        dop->status = st;
        snprintf(dop->text, sizeof(dop->text), "%s", st == SC_SUCCESS ? "" : text);
        __atomic_store_n(&dop->finished, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&dop->dev->lock);
}

/* Advances dop: SC_IN_PROGRESS, or its final status. *event_done: its stream work is
 * over (its staging memory and event may be reused). */
static sc_status_t sc_dev_op_poll(sc_dev_op_t *dop, int *event_done)
{
    sc_device_t *d = dop->dev;
    char text[SC_ERROR_MAX];
    sc_status_t st = SC_IN_PROGRESS;
    cudaError_t q = cudaEventQuery(dop->done_event);

    *event_done = q != cudaErrorNotReady;
    if (__atomic_load_n(&dop->finished, __ATOMIC_ACQUIRE))
        return dop->status;
    text[0] = '\0';
    if (q == cudaSuccess) {
        if (dop->staged) {
            st = dop->host_req.status;
            snprintf(text, sizeof(text), "%s", dop->host_req.text);
        } else if ((st = sc_device_broken(d, text, sizeof(text))) == SC_SUCCESS &&
                   __atomic_load_n(&d->nccl_aborted, __ATOMIC_ACQUIRE)) {
            st = SC_ERR_ABORTED;
            snprintf(text, sizeof(text), "the NCCL communicator was aborted");
        }
    } else if (q != cudaErrorNotReady) {
        st = sc_cuda_status(q, "device collective", "cudaEventQuery");
        snprintf(text, sizeof(text), "%s", sc_last_error());
        sc_device_fail(d, st, text);
    } else if (dop->staged && __atomic_load_n(&dop->host_req.done, __ATOMIC_ACQUIRE) &&
               dop->host_req.status != SC_SUCCESS) {
        st = dop->host_req.status;
        snprintf(text, sizeof(text), "%s", dop->host_req.text);
    } else if ((st = sc_device_broken(d, text, sizeof(text))) != SC_SUCCESS) {
        if (d->backend == &sc_device_backend_nccl)
            sc_nccl_abort(d);
    } else if (d->backend == &sc_device_backend_nccl &&
               (st = sc_nccl_poll_error(d)) != SC_SUCCESS) {
        snprintf(text, sizeof(text), "%s", sc_last_error());
        sc_device_fail(d, st, text);
    } else if (!dop->staged && dop->deadline > 0.0 && sc_clock_now() > dop->deadline) {
        /* Host-staged ops time out through their host collective (and its gate). */
        st = sc_error(SC_ERR_TIMEOUT, "a device collective did not complete within %.0f s "
                      "(SC_TIMEOUT): a peer stopped or never issued it; the communicator "
                      "is aborted", d->comm->timeout_s);
        snprintf(text, sizeof(text), "%s", sc_last_error());
        sc_device_fail(d, st, text);
    } else {
        st = SC_IN_PROGRESS;
    }
    if (st == SC_IN_PROGRESS)
        return st;
    sc_dev_op_finish(dop, st, text);
    return dop->status;
}

static void sc_dev_op_free(sc_dev_op_t *dop)
{
    sc_device_t *d = dop->dev;

    if (dop->stage)
        sc_device_stage_put(d, dop->stage, dop->stage_bytes);
    if (dop->done_event)
        sc_device_event_put(d, dop->done_event);
    free(dop);
}

static void sc_dev_op_unref(sc_dev_op_t *dop)
{
    int last;

    pthread_mutex_lock(&dop->dev->lock);
    last = --dop->refs == 0;
    pthread_mutex_unlock(&dop->dev->lock);
    if (last)
        sc_dev_op_free(dop);
}

/* ---- the watchdog ---- */

/* One pass over the pending ops: finished ones whose stream work is over leave the
 * list; the oldest one's deadline starts when it becomes the oldest. */
static void sc_device_scan(sc_device_t *d)
{
    sc_dev_op_t *dop, *prev = NULL, *next;

    pthread_mutex_lock(&d->lock);
    dop = d->pending;
    pthread_mutex_unlock(&d->lock);
    while (dop) {
        int event_done;
        sc_status_t st = sc_dev_op_poll(dop, &event_done);

        pthread_mutex_lock(&d->lock);
        next = dop->next;
        if (st != SC_IN_PROGRESS && event_done) {
            if (prev)
                prev->next = next;
            else
                d->pending = next;
            if (d->pending_tail == dop)
                d->pending_tail = prev;
            if (--dop->refs == 0) {
                pthread_mutex_unlock(&d->lock);
                sc_dev_op_free(dop);
                pthread_mutex_lock(&d->lock);
            }
        } else {
            prev = dop;
        }
        if (d->pending && d->pending->deadline == 0.0)
            d->pending->deadline = sc_clock_now() + d->comm->timeout_s;
        pthread_mutex_unlock(&d->lock);
        dop = next;
    }
}

static void *sc_device_watchdog(void *arg)
{
    sc_device_t *d = arg;

    pthread_mutex_lock(&d->lock);
    while (!d->stop) {
        struct timespec ts;

        if (d->pending) {
            pthread_mutex_unlock(&d->lock);
            sc_device_scan(d);
            pthread_mutex_lock(&d->lock);
        }
        ts = sc_clock_realtime_after(d->pending ? 1000 * 1000 : 100 * 1000 * 1000);
        if (!d->stop)
            pthread_cond_timedwait(&d->cond, &d->lock, &ts);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

/* ---- requests ---- */

static sc_status_t sc_dev_request_result(struct sc_request *req, sc_status_t st)
{
    sc_dev_op_t *dop = req->impl;

    if (st == SC_IN_PROGRESS)
        return st;
    req->status = st;
    if (st != SC_SUCCESS)
        snprintf(req->text, sizeof(req->text), "%s", dop->text);
    __atomic_store_n(&req->done, 1, __ATOMIC_RELEASE);
    if (st != SC_SUCCESS)
        sc_error_set_text(req->text);
    return st;
}

static sc_status_t sc_dev_request_test(struct sc_request *req)
{
    int event_done;

    if (__atomic_load_n(&req->done, __ATOMIC_ACQUIRE))
        return sc_dev_request_result(req, req->status);
    return sc_dev_request_result(req, sc_dev_op_poll(req->impl, &event_done));
}

static sc_status_t sc_dev_request_wait(struct sc_request *req)
{
    double t0 = sc_clock_now();
    sc_status_t st;

    /* Spin briefly (a short collective), then sleep in growing steps up to 1 ms: the
     * event is polled rather than synchronized on, so that timeouts and peers'
     * failures are noticed. */
    while ((st = sc_dev_request_test(req)) == SC_IN_PROGRESS) {
        double waited = sc_clock_now() - t0;
        if (waited > 50e-6) {
            struct timespec ts = {0, waited < 1e-3 ? 20 * 1000 : 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    return st;
}

static void sc_dev_request_release(struct sc_request *req)
{
    sc_dev_op_unref(req->impl);
    req->impl = NULL;
}

static const sc_request_ops_t sc_dev_request_ops = {
    sc_dev_request_test, sc_dev_request_wait, sc_dev_request_release};

/* ---- issue ---- */

static sc_status_t sc_device_stream_check(const sc_device_t *d, const sc_call_t *call,
                                          cudaStream_t stream)
{
    int sdev = -1;
    cudaError_t err;

    if (!stream)
        return SC_SUCCESS;
    err = cudaStreamGetDevice(stream, &sdev);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return sc_error(SC_ERR_INVALID_ARG, "%s: the stream is not a valid CUDA stream (%s)",
                        sc_call_name(call), cudaGetErrorString(err));
    }
    if (sdev != d->device)
        return sc_error(SC_ERR_INVALID_ARG, "%s: the stream belongs to GPU %d, but the "
                        "buffers and the communicator are on GPU %d", sc_call_name(call),
                        sdev, d->device);
    return SC_SUCCESS;
}

sc_status_t sc_device_issue(sc_comm_t *c, const sc_call_t *call, int device,
                            sc_stream_t stream, sc_request_t **req)
{
    sc_device_t *d = c->dev;
    cudaStream_t s = (cudaStream_t)stream;
    struct sc_request *r = NULL;
    char text[SC_ERROR_MAX];
    sc_dev_op_t *dop;
    sc_status_t st;
    int saved, started;

    if (!d)
        return sc_error(SC_ERR_DEVICE, "%s: the buffers are on GPU %d, but the communicator "
                        "found no usable GPU when it was created", sc_call_name(call), device);
    if (device >= 0 && device != d->device)
        return sc_error(SC_ERR_INVALID_ARG, "%s: the buffers are on GPU %d, but this "
                        "communicator uses GPU %d (SC_DEVICE or config.device)",
                        sc_call_name(call), device, d->device);
    st = sc_device_broken(d, text, sizeof(text));
    if (st != SC_SUCCESS) {
        sc_error_set_text(text);
        return st;
    }
    st = sc_device_stream_check(d, call, s);
    if (st != SC_SUCCESS)
        return st;
    dop = calloc(1, sizeof(*dop));
    if (req)
        r = malloc(sizeof(*r));
    if (!dop || (req && !r)) {
        free(dop);
        free(r);
        return sc_error(SC_ERR_NO_MEMORY, "%s: out of memory", sc_call_name(call));
    }
    dop->dev = d;
    st = sc_cuda_device_enter(d->device, &saved, sc_call_name(call));
    if (st != SC_SUCCESS)
        goto err_free;
    if (!s)
        s = cudaStreamLegacy;
    st = sc_device_event_get(d, &dop->done_event);
    if (st != SC_SUCCESS)
        goto err_leave;
    /* Zero elements move nothing on any rank: only the completion event is queued. */
    if (call->count > 0) {
        st = d->backend->issue(d, call, s, dop);
        if (st != SC_SUCCESS)
            goto err_leave;
    }
    st = sc_cuda_status(cudaEventRecord(dop->done_event, s), sc_call_name(call),
                        "cudaEventRecord");
    if (st != SC_SUCCESS) {
        /* The work is queued on this rank but cannot be tracked: fail everywhere. */
        snprintf(text, sizeof(text), "%s", sc_last_error());
        sc_device_fail(d, st, text);
        goto err_leave;
    }
    sc_cuda_device_leave(d->device, saved);

    pthread_mutex_lock(&d->lock);
    dop->refs = req ? 2 : 1;
    if (!d->pending)
        dop->deadline = sc_clock_now() + c->timeout_s;
    if (d->pending_tail)
        d->pending_tail->next = dop;
    else
        d->pending = dop;
    d->pending_tail = dop;
    started = !d->watchdog_started &&
              pthread_create(&d->watchdog, NULL, sc_device_watchdog, d) == 0;
    if (started)
        d->watchdog_started = 1;
    pthread_cond_signal(&d->cond);
    pthread_mutex_unlock(&d->lock);
    /* Listed outside d->lock: the unload takes the list's lock, then d->lock. */
    if (started)
        sc_unload_thread_add(&d->watchdog_entry, d->watchdog, &d->lock, &d->cond, &d->stop);
    if (req) {
        sc_request_init(r, c->tp, &sc_dev_request_ops, dop);
        *req = r;
    }
    return SC_SUCCESS;

err_leave:
    sc_cuda_device_leave(d->device, saved);
err_free:
    /* Staging memory the stream may still read is left alone. */
    if (dop->done_event)
        sc_device_event_put(d, dop->done_event);
    free(dop);
    free(r);
    return st;
}

int sc_device_gpu(const sc_comm_t *c)
{
    const sc_device_t *d = c->dev;

    return d ? d->device : -1;
}

void sc_device_describe(const sc_comm_t *c, char *buf, size_t len)
{
    const sc_device_t *d = c->dev;

    if (!d) {
        snprintf(buf, len, "none: no usable GPU in this process (%d found)",
                 sc_device_count());
        return;
    }
    if (d->backend == &sc_device_backend_nccl)
        snprintf(buf, len, "GPU %d, NCCL%s", d->device,
                 d->nccl ? "" : " (created by the first device collective)");
    else
        snprintf(buf, len, "GPU %d, host-staged through pinned memory (%s)", d->device,
                 sc_nccl_available() ? "SC_NCCL=0 or ranks share a GPU"
                                     : "this build has no NCCL");
}

/* ---- teardown ---- */

void sc_device_abort(sc_comm_t *c)
{
    if (c->dev && c->dev->backend == &sc_device_backend_nccl)
        sc_nccl_abort(c->dev);
}

void sc_device_destroy(sc_comm_t *c)
{
    sc_device_t *d = c->dev;
    double deadline;
    int stuck;

    if (!d)
        return;
    /* Device work still queued finishes first: its stream may still run host functions
     * and copies that use this state. The watchdog fails what outlives the timeout;
     * a stream that stays blocked past twice that is left to run on. */
    deadline = sc_clock_now() + 2.0 * c->timeout_s + 5.0;
    for (;;) {
        int watched;

        pthread_mutex_lock(&d->lock);
        stuck = d->pending != NULL;
        watched = d->watchdog_started && !d->stop; /* not ended by the library's unload */
        pthread_mutex_unlock(&d->lock);
        if (!stuck || sc_clock_now() > deadline)
            break;
        if (!watched)
            sc_device_scan(d);
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&d->lock);
    d->stop = 1;
    pthread_cond_signal(&d->cond);
    pthread_mutex_unlock(&d->lock);
    if (d->watchdog_started && sc_unload_thread_remove(&d->watchdog_entry))
        pthread_join(d->watchdog, NULL);
    c->dev = NULL;
    if (stuck) {
        /* Keep this state and the transport its host functions use alive for good. */
        sc_log(SC_LOG_WARN, "sc_comm_destroy: device work on GPU %d is still queued behind "
               "a blocked stream; its memory is left allocated", d->device);
        pthread_mutex_lock(&d->tp->lock);
        d->tp->refs++;
        pthread_mutex_unlock(&d->tp->lock);
        return;
    }
    if (d->backend == &sc_device_backend_nccl)
        sc_nccl_destroy(d);
    for (int i = 0; i < d->event_pool_len; i++)
        (void)cudaEventDestroy(d->event_pool[i]);
    free(d->event_pool);
    for (int k = 0; k < SC_STAGE_CLASSES; k++) {
        void *m = d->stage_free[k];
        while (m) {
            void *next = *(void **)m;
            (void)cudaFreeHost(m);
            m = next;
        }
    }
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->cond);
    free(d);
}
