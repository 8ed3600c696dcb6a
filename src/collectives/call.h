/* One collective call as the caller made it: what the host and the device backends
 * both receive after the arguments were checked. */
#ifndef SC_COLLECTIVES_CALL_H
#define SC_COLLECTIVES_CALL_H

#include <stddef.h>

#include "collectives/schedule.h"
#include "shardcomm/types.h"

typedef struct {
    sc_coll_kind_t kind;
    const void *sbuf;
    void *rbuf;
    size_t count;        /* as passed by the caller */
    sc_dtype_t dtype;
    sc_op_t redop;
    int root;            /* root, or peer for send/recv */
    double prescale;     /* allreduce in place: inputs times this first (0: none) */
    int plain;           /* never read registered buffers in place (algo_shm.c) */
} sc_call_t;

/* "sc_allreduce", ...: the public name of the call, for error sentences. */
const char *sc_call_name(const sc_call_t *call);

/* Bytes of the send and the receive buffer this rank passes (0 where unused). */
void sc_call_bytes(const sc_call_t *call, int rank, int size, size_t *send_bytes,
                   size_t *recv_bytes);

struct sc_comm;
struct sc_request;

/* Builds call's host schedule and queues it on comm; r (initialized here) receives the
 * final status. gate: NULL, or a flag the op waits for before it starts (host-staged
 * device calls: set when the stream has copied the data out), for at most the
 * communicator's timeout. caller_waits: see sc_progress_enqueue. deliver: NULL, or
 * (allreduce) where parts of the result are copied as soon as they are final, a list
 * that outlives the op (see sc_coll_op_t.deliver). */
sc_status_t sc_call_enqueue_host(const sc_call_t *call, struct sc_comm *comm,
                                 struct sc_request *r, int *gate, int caller_waits,
                                 const sc_range_t *deliver, int ndeliver);

/* Issues call (host buffers) now, so that it keeps its place in the communicator's
 * order of collectives, but starts its op only once *gate is nonzero: another thread
 * fills the send buffer and then sets *gate (release order). A gate still shut after the
 * communicator's timeout fails the call (its peers time out too). Device buffers are
 * SC_ERR_INVALID_ARG. */
sc_status_t sc_call_issue_gated(const sc_call_t *call, struct sc_comm *comm, int *gate,
                                struct sc_request **req);

/* An in-place allreduce of host buffer buf whose result goes, range by range, to the
 * places deliver lists (sorted, disjoint ranges of buf; the list must outlive the
 * request): made there directly where the algorithm can (the ring, a chunk inside one
 * range), else copied there as soon as final, overlapping the rest of the
 * communication. buf holds the result outside the ranges; inside them its bytes are
 * unspecified afterwards. Completes when every range holds its result. A failed
 * request may have written some of them. Device buffers are SC_ERR_INVALID_ARG. */
sc_status_t sc_allreduce_delivered(void *buf, size_t count, sc_dtype_t dtype, sc_op_t op,
                                   struct sc_comm *comm, const sc_range_t *deliver,
                                   int ndeliver, struct sc_request **req);

/* The same, never reading registered buffers in place: for a buffer that is registered
 * on some ranks and not on others for the same call (the reducer's bucket that a rank
 * reduces in its caller's memory instead), so that every rank takes one algorithm. */
sc_status_t sc_allreduce_delivered_plain(void *buf, size_t count, sc_dtype_t dtype,
                                         sc_op_t op, struct sc_comm *comm,
                                         const sc_range_t *deliver, int ndeliver,
                                         struct sc_request **req);

/* An in-place sum allreduce of host buffer buf whose every rank's input is first
 * multiplied by scale (as sc_scale_local does, so that the result is bit for bit that
 * of scaling each input, then summing): on registered memory read in place the scaling
 * is done inside the reductions, with no pass of its own; otherwise buf is scaled in
 * place when the op starts. The reducer's pre-division of gradient views. */
sc_status_t sc_allreduce_prescaled(void *buf, size_t count, sc_dtype_t dtype, double scale,
                                   struct sc_comm *comm, struct sc_request **req);
/* The same, never reading registered buffers in place (as sc_allreduce_delivered_plain):
 * the reducer's gradient reduced in its caller's memory. */
sc_status_t sc_allreduce_prescaled_plain(void *buf, size_t count, sc_dtype_t dtype,
                                         double scale, struct sc_comm *comm,
                                         struct sc_request **req);

#endif
