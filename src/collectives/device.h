/* The device path of a communicator: the GPU it uses, the backend that runs its
 * device-buffer collectives (NCCL, or host-staged through pinned memory), and
 * stream-ordered requests. Host-only builds link device_nocuda.c instead, which refuses
 * device buffers with a sentence. */
#ifndef SC_COLLECTIVES_DEVICE_H
#define SC_COLLECTIVES_DEVICE_H

#include <stdint.h>

#include "collectives/call.h"
#include "core/bootstrap_env.h"
#include "core/comm_internal.h"

/* Bytes each rank contributes to the rendezvous: its GPU, and on rank 0 a NCCL id. */
#define SC_DEVICE_BLOB 256

/* Fills this rank's rendezvous contribution (zeros when it has no GPU). */
void sc_device_blob_fill(const sc_bootstrap_params_t *p, uint8_t *blob);

/* Sets up the device state of the world communicator from every rank's contribution
 * (blobs: size * SC_DEVICE_BLOB bytes). No GPU work happens here: the NCCL
 * communicator is created by the first device collective. */
sc_status_t sc_device_attach_world(sc_comm_t *c, const uint8_t *blobs);

/* Device state of child, split from parent (collective over parent: every parent
 * rank calls it, child NULL where color < 0). Maps to ncclCommSplit when the parent's
 * NCCL communicator exists. */
sc_status_t sc_device_split(sc_comm_t *parent, sc_comm_t *child, int color, int key);

/* Runs a checked call on device buffers on stream (NULL: the legacy default stream).
 * req NULL: returns once the work is enqueued on the stream. */
sc_status_t sc_device_issue(sc_comm_t *c, const sc_call_t *call, int device,
                            sc_stream_t stream, sc_request_t **req);

/* The GPU c's device path uses; -1 when it has none (no usable GPU, host-only build). */
int sc_device_gpu(const sc_comm_t *c);

/* One line saying how c serves device buffers ("GPU 0, NCCL 2.28.3", "host-staged
 * ...", "host-only build"), for sc-info. */
void sc_device_describe(const sc_comm_t *c, char *buf, size_t len);

/* sc_comm_abort: aborts the NCCL communicator so that kernels waiting on peers end. */
void sc_device_abort(sc_comm_t *c);

/* sc_comm_destroy: waits for device work of c (bounded by its timeout), frees all. */
void sc_device_destroy(sc_comm_t *c);

#endif
