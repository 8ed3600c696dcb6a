/* State shared by the device path's files (CUDA builds only): the per-communicator
 * device state, one device op per call, and the backends' table. */
#ifndef SC_COLLECTIVES_DEVICE_INTERNAL_H
#define SC_COLLECTIVES_DEVICE_INTERNAL_H

#include <cuda_runtime_api.h>
#include <pthread.h>

#include "collectives/device.h"
#include "core/unload_threads.h"

#define SC_NCCL_ID_BYTES 128

struct sc_device;

/* One device-buffer call: its completion event on the caller's stream, and for the
 * host-staged backend the host collective it runs through pinned memory. */
typedef struct sc_dev_op {
    struct sc_dev_op *next;       /* in the device state's pending list, oldest first */
    struct sc_device *dev;
    cudaEvent_t done_event;       /* recorded after the op's stream work */
    double deadline;              /* set when the op becomes the oldest pending one */
    int refs;                     /* pending list + the caller's request; dev->lock */
    int finished;                 /* atomic: status below is final */
    sc_status_t status;
    char text[SC_ERROR_MAX];
    /* host-staged only */
    int staged;
    struct sc_request host_req;   /* the host collective's request */
    int gate;                     /* atomic: the stream copied the input out */
    void *stage;                  /* pinned staging memory, back to the pool when done */
    size_t stage_bytes;
} sc_dev_op_t;

typedef struct sc_device_backend {
    const char *name;
    /* Enqueues call's work on stream; the caller records dop->done_event after it. */
    sc_status_t (*issue)(struct sc_device *d, const sc_call_t *call, cudaStream_t stream,
                         sc_dev_op_t *dop);
} sc_device_backend_t;

/* Pinned staging buffers kept for reuse, one free list per power-of-two size. */
#define SC_STAGE_CLASSES 48

typedef struct sc_device {
    sc_comm_t *comm;
    sc_transport_t *tp;           /* what host functions on the stream use */
    int device;                   /* the GPU this rank uses */
    const sc_device_backend_t *backend;
    /* NCCL (when backend is NCCL) */
    int have_id;
    unsigned char nccl_id[SC_NCCL_ID_BYTES];
    void *nccl;                   /* ncclComm_t, created by the first collective */
    void *split_sink;             /* where a split without a color writes (nothing) */
    int nccl_aborted;
    /* pending ops and the watchdog that completes, times out and aborts them */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    sc_dev_op_t *pending;
    sc_dev_op_t *pending_tail;
    pthread_t watchdog;
    int watchdog_started;
    sc_unload_thread_t watchdog_entry; /* ended at the library's unload (dlclose, exit) */
    int stop;
    cudaEvent_t *event_pool;      /* completion events for reuse; lock */
    int event_pool_len;
    int event_pool_cap;
    void *stage_free[SC_STAGE_CLASSES]; /* singly linked through the first word; lock */
} sc_device_t;

extern const sc_device_backend_t sc_device_backend_staged;
extern const sc_device_backend_t sc_device_backend_nccl;

/* Fails the communicator (every rank gets the error through abort notices) and
 * aborts its NCCL communicator. */
void sc_device_fail(sc_device_t *d, sc_status_t status, const char *text);

/* Pinned staging memory of at least bytes from the pool, and back. */
sc_status_t sc_device_stage_get(sc_device_t *d, size_t bytes, void **mem, size_t *got);
void sc_device_stage_put(sc_device_t *d, void *mem, size_t bytes);

/* NCCL backend pieces called by the device state (device_nccl.c). */
int sc_nccl_available(void);
int sc_nccl_make_id(unsigned char *id);  /* 1 when an id was made */
sc_status_t sc_nccl_split(sc_device_t *parent, sc_device_t *child, int color, int key);
sc_status_t sc_nccl_poll_error(sc_device_t *d);
void sc_nccl_abort(sc_device_t *d);
void sc_nccl_destroy(sc_device_t *d);

#endif
