/* Public collective calls: argument checks, algorithm choice, and hand-off of the
 * schedule to the progress engine. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/algo_common.h"
#include "collectives/call.h"
#include "collectives/reduce_kernels.h"
#include "collectives/device.h"
#include "collectives/serves.h"
#include "collectives/stage.h"
#include "core/clock.h"
#include "core/dtype.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/progress.h"
#include "core/progress_refusal.h"

const char *sc_call_name(const sc_call_t *call)
{
    static const char *const names[SC_COLL_KIND_COUNT] = {
        "sc_allreduce", "sc_reduce_scatter", "sc_allgather", "sc_broadcast", "sc_reduce",
        "sc_alltoall",  "sc_barrier",        "sc_send",      "sc_recv"};
    return names[call->kind];
}

void sc_call_bytes(const sc_call_t *call, int rank, int size, size_t *send_bytes,
                   size_t *recv_bytes)
{
    size_t b = call->count * sc_dtype_size(call->dtype), p = (size_t)size;

    *send_bytes = *recv_bytes = b;
    switch (call->kind) {
    case SC_COLL_REDUCE_SCATTER: *send_bytes = b * p; break;
    case SC_COLL_ALLGATHER: *recv_bytes = b * p; break;
    case SC_COLL_ALLTOALL: *send_bytes = *recv_bytes = b * p; break;
    case SC_COLL_BROADCAST: *send_bytes = rank == call->root ? b : 0; break;
    case SC_COLL_REDUCE: *recv_bytes = rank == call->root ? b : 0; break;
    case SC_COLL_SEND: *recv_bytes = 0; break;
    case SC_COLL_RECV: *send_bytes = 0; break;
    case SC_COLL_BARRIER: *send_bytes = *recv_bytes = 0; break;
    default: break;
    }
}

/* The send and the receive buffer overlap only in the call's in-place form (the same
 * buffer; for reduce_scatter and allgather the rank's own block of the larger one):
 * any other overlap would have the operation read what it already wrote. Buffers the
 * call does not use on this rank (sc_call_bytes: 0 bytes) overlap nothing. The sentence
 * says where this rank's in-place buffer starts where it is a block: sendbuf ==
 * recvbuf, in place elsewhere, is refused there on every rank but 0. */
static sc_status_t sc_call_check_overlap(const sc_call_t *call, sc_comm_t *comm)
{
    uintptr_t s = (uintptr_t)call->sbuf, r = (uintptr_t)call->rbuf, in_place = r;
    size_t sb, rb;
    char how[96] = "in place, sendbuf == recvbuf";

    sc_call_bytes(call, comm->rank, comm->size, &sb, &rb);
    if (call->kind == SC_COLL_REDUCE_SCATTER)
        in_place = r - (size_t)comm->rank * rb; /* recvbuf is sendbuf's block */
    else if (call->kind == SC_COLL_ALLGATHER)
        in_place = r + (size_t)comm->rank * sb; /* sendbuf is recvbuf's block */
    if (sb == 0 || rb == 0 || s == in_place || s >= r + rb || r >= s + sb)
        return SC_SUCCESS;
    if (call->kind == SC_COLL_REDUCE_SCATTER)
        snprintf(how, sizeof(how), "in place, recvbuf is sendbuf's block %d, at %p",
                 comm->rank, (void *)(s + (size_t)comm->rank * rb));
    else if (call->kind == SC_COLL_ALLGATHER)
        snprintf(how, sizeof(how), "in place, sendbuf is recvbuf's block %d, at %p",
                 comm->rank, (void *)in_place);
    return sc_error(SC_ERR_INVALID_ARG, "%s: sendbuf (%p, %zu bytes) and recvbuf (%p, %zu "
                    "bytes) overlap other than in place (%s)", sc_call_name(call), call->sbuf,
                    sb, (void *)call->rbuf, rb, how);
}

/* Elements each buffer holds, per the call's semantics, checked against overflow. */
static sc_status_t sc_call_check(const sc_call_t *call, sc_comm_t *comm)
{
    const char *fn = sc_call_name(call);
    int p = comm->size;
    size_t es, scale = 1, bytes;
    int reduces = call->kind == SC_COLL_ALLREDUCE || call->kind == SC_COLL_REDUCE_SCATTER ||
                  call->kind == SC_COLL_REDUCE;
    int needs_send = 1, needs_recv = 1;

    if (call->kind == SC_COLL_BARRIER)
        return SC_SUCCESS;
    if ((unsigned)call->dtype >= SC_DTYPE_COUNT)
        return sc_error(SC_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)call->dtype);
    es = sc_dtype_size(call->dtype);
    if (reduces) {
        if ((unsigned)call->redop >= SC_OP_COUNT)
            return sc_error(SC_ERR_INVALID_ARG, "%s: unknown op %d", fn, (int)call->redop);
        if (call->redop == SC_AVG && !sc_dtype_is_float(call->dtype))
            return sc_error(SC_ERR_INVALID_ARG,
                            "%s: op avg is defined on float types only, not on %s", fn,
                            sc_dtype_name(call->dtype));
    }
    if (call->kind == SC_COLL_BROADCAST || call->kind == SC_COLL_REDUCE ||
        call->kind == SC_COLL_SEND || call->kind == SC_COLL_RECV) {
        const char *what = (call->kind == SC_COLL_SEND || call->kind == SC_COLL_RECV) ? "peer"
                                                                                      : "root";
        if (call->root < 0 || call->root >= p)
            return sc_error(SC_ERR_INVALID_ARG, "%s: %s %d is outside the communicator of "
                            "size %d", fn, what, call->root, p);
    }
    if (call->kind == SC_COLL_REDUCE_SCATTER || call->kind == SC_COLL_ALLGATHER ||
        call->kind == SC_COLL_ALLTOALL)
        scale = (size_t)p;
    /* A multiplication checked for overflow, not divisions: this runs on every call. */
    if (__builtin_mul_overflow(call->count, es * scale, &bytes) || bytes > (size_t)INT64_MAX)
        return sc_error(SC_ERR_INVALID_ARG, "%s: count %zu of %s overflows the buffer size",
                        fn, call->count, sc_dtype_name(call->dtype));
    if (call->kind == SC_COLL_RECV)
        needs_send = 0;
    if (call->kind == SC_COLL_SEND)
        needs_recv = 0;
    if (call->kind == SC_COLL_BROADCAST && comm->rank != call->root)
        needs_send = 0;
    if (call->kind == SC_COLL_REDUCE && comm->rank != call->root)
        needs_recv = 0;
    if (call->count > 0) {
        if (needs_send && !call->sbuf)
            return sc_error(SC_ERR_INVALID_ARG, "%s: sendbuf is NULL with count %zu", fn,
                            call->count);
        if (needs_recv && !call->rbuf)
            return sc_error(SC_ERR_INVALID_ARG, "%s: recvbuf is NULL with count %zu", fn,
                            call->count);
        if ((needs_send && sc_check_aligned(fn, "sendbuf", call->sbuf, es) != SC_SUCCESS) ||
            (needs_recv && sc_check_aligned(fn, "recvbuf", call->rbuf, es) != SC_SUCCESS))
            return SC_ERR_INVALID_ARG;
    }
    return sc_call_check_overlap(call, comm);
}

/* Where the buffers live: device and managed memory go to the device backend, host
 * memory to the host collectives; a stream with host buffers is refused. A call with
 * no buffer at all (count 0) and a stream is stream-ordered on the device path.
 * Returns SC_IN_PROGRESS for the device path, with *device the buffers' GPU (-1: the
 * communicator's). */
static sc_status_t sc_call_route(const sc_call_t *call, sc_comm_t *comm, sc_stream_t stream,
                                 int *device)
{
    int bcast_leaf = call->kind == SC_COLL_BROADCAST && comm->rank != call->root;
    int reduce_leaf = call->kind == SC_COLL_REDUCE && comm->rank != call->root;
    const void *bufs[2] = {call->kind == SC_COLL_RECV || bcast_leaf ? NULL : call->sbuf,
                           call->kind == SC_COLL_SEND || reduce_leaf ? NULL : call->rbuf};
    const char *names[2] = {"sendbuf", "recvbuf"};
    sc_mem_kind_t kind;
    sc_status_t st;

    if (call->kind == SC_COLL_SEND)
        names[0] = "buf";
    if (call->kind == SC_COLL_RECV)
        names[1] = "buf";
    st = sc_mem_classify(sc_call_name(call), bufs, names, 2, &kind, device);
    if (st != SC_SUCCESS)
        return st;
    if (sc_mem_is_device(kind))
        return SC_IN_PROGRESS;
    if (stream && sc_device_count() == 0)
        return sc_error(SC_ERR_UNSUPPORTED,
                        "%s: a CUDA stream was given, but this process has no usable GPU "
                        "and the buffers are host memory", sc_call_name(call));
    if (stream && !bufs[0] && !bufs[1]) {
        *device = -1;
        return SC_IN_PROGRESS;
    }
    if (stream)
        return sc_error(SC_ERR_INVALID_ARG,
                        "%s: a CUDA stream was given, but the buffers are host memory "
                        "(host collectives take stream NULL)", sc_call_name(call));
    return SC_SUCCESS;
}

/* Puts the registered buffers an op reads in place into its header (s or r may be
 * NULL: that buffer is not read in place), for the neighbours to compare. */
static void sc_call_mark_shm(sc_coll_op_t *op, const sc_shm_ref_t *s, const sc_shm_ref_t *r)
{
    if (s) {
        op->hdr.sseg = sc_shm_id(s->seg);
        op->hdr.soff = s->off;
    }
    if (r) {
        op->hdr.rseg = sc_shm_id(r->seg);
        op->hdr.roff = r->off;
    }
}

/* Plain memory through the communicator's staging segment (stage.h), in windows of
 * its size, for an allreduce or reduce-scatter whose send buffer (sb bytes) is larger
 * than what recursive doubling serves (SC_RING_THRESHOLD: below, two copies cost more
 * than the messages they save) and takes at most SC_STAGE_MAX_WINDOWS windows (an
 * allreduce's delivered ranges, if any, get their parts of the result). An all-gather is
 * not staged: its one kernel copy (CMA) per block is as fast as staging's two
 * user-space copies up to 64 KiB and faster above (256 KiB: 19 against 31 us).
 * Returns as sc_call_build_shm. */
static int sc_call_build_staged(const sc_call_t *call, sc_coll_op_t *op, const sc_tuning_t *t,
                                size_t sb, sc_status_t *st)
{
    sc_comm_t *comm = op->comm;
    size_t area = sc_stage_area(comm), welems;
    sc_shm_ref_t in, out;

    if (sb <= t->ring_threshold ||
        (call->kind != SC_COLL_ALLREDUCE && call->kind != SC_COLL_REDUCE_SCATTER) ||
        sc_stage_window_plan(call->kind, call->count, (size_t)comm->size,
                             sc_dtype_size(call->dtype), area, &welems) > SC_STAGE_MAX_WINDOWS)
        return 0;
    sc_stage_refs(comm, &in, &out);
    op->hdr.sseg = SC_STAGE_SEG_ID;
    op->hdr.soff = in.off;
    switch (call->kind) {
    case SC_COLL_ALLREDUCE:
        op->hdr.rseg = SC_STAGE_SEG_ID;
        op->hdr.roff = out.off;
        *st = sc_algo_allreduce_staged(op, call->sbuf, call->rbuf, call->count, &in, &out,
                                       area);
        return 1;
    default: /* SC_COLL_REDUCE_SCATTER */
        *st = sc_algo_reduce_scatter_staged(op, call->sbuf, call->rbuf, call->count, &in,
                                            area);
        return 1;
    }
}

/* Registered memory read in place (algo_shm.c), where the call's buffers allow it:
 * allreduce with both buffers registered (unless SC_ALGO forces an algorithm);
 * reduce-scatter, reduce and alltoall with the send buffer; broadcast with the receive
 * buffer; all-gather with the send buffer or, in place, the receive buffer. The header
 * carries the segments and offsets, so that ranks that passed other memory disagree.
 * Returns 1 when it built op (its status in *st), 0 to leave the call to the other
 * algorithms (with the header untouched). */
static int sc_call_build_shm(const sc_call_t *call, sc_coll_op_t *op, const sc_tuning_t *t,
                             sc_status_t *st)
{
    sc_comm_t *comm = op->comm;
    sc_shm_ref_t s, r, *ref = &s;
    size_t sb, rb;
    int in_place = 0;

    if ((!comm->shm_segs && !comm->stage) || comm->size < 2)
        return 0;
    sc_call_bytes(call, comm->rank, comm->size, &sb, &rb);
    /* Above what a header carries inline (a 2-rank allreduce's one message each way)
     * it beats recursive doubling too: 1-8 KiB in about 1 us against 1.1-2.4 us. */
    if ((sb > rb ? sb : rb) <= SC_OP_INLINE_MAX)
        return 0;
    switch (call->kind) {
    case SC_COLL_ALLREDUCE:
        if (t->allreduce_algo != SC_ALGO_NONE)
            return 0;
        /* A plain call never reads registered buffers in place; staging does not
         * depend on where the buffers lie, so every rank decides alike either way. */
        sc_shm_lookup(comm, call->plain ? NULL : call->sbuf, sb, &s);
        sc_shm_lookup(comm, call->plain ? NULL : call->rbuf, rb, &r);
        if (s.seg && r.seg) {
            sc_call_mark_shm(op, &s, &r);
            *st = sc_algo_allreduce_shm(op, call->sbuf, call->rbuf, call->count, &s, &r);
            return 1;
        }
        return sc_call_build_staged(call, op, t, sb, st);
    case SC_COLL_ALLGATHER:
        /* In place, the send buffer is block `rank` of the receive buffer: its offset
         * differs between ranks, the receive buffer's does not. */
        in_place = call->sbuf == (const char *)call->rbuf + (size_t)comm->rank * sb;
        ref = in_place ? &r : &s;
        break;
    case SC_COLL_BROADCAST:
        ref = &r;
        break;
    case SC_COLL_REDUCE_SCATTER:
    case SC_COLL_REDUCE:
    case SC_COLL_ALLTOALL:
        break;
    default:
        return 0;
    }
    if (call->plain)
        return 0;
    /* One buffer read in place: ref is the send (s) or the receive buffer (r). */
    sc_shm_lookup(comm, ref == &s ? call->sbuf : call->rbuf, ref == &s ? sb : rb, ref);
    if (!ref->seg)
        return sc_call_build_staged(call, op, t, sb, st);
    sc_call_mark_shm(op, ref == &s ? ref : NULL, ref == &r ? ref : NULL);
    switch (call->kind) {
    case SC_COLL_ALLGATHER:
        *st = sc_algo_allgather_shm(op, call->sbuf, call->rbuf, call->count, ref,
                                    in_place ? sb : 0);
        break;
    case SC_COLL_BROADCAST:
        *st = sc_algo_broadcast_shm(op, call->sbuf, call->rbuf, call->count, call->root, ref);
        break;
    case SC_COLL_REDUCE_SCATTER:
        *st = sc_algo_reduce_scatter_shm(op, call->sbuf, call->rbuf, call->count, ref);
        break;
    case SC_COLL_REDUCE:
        *st = sc_algo_reduce_shm(op, call->sbuf, call->rbuf, call->count, call->root, ref);
        break;
    default: /* SC_COLL_ALLTOALL */
        *st = sc_algo_alltoall_shm(op, call->sbuf, call->rbuf, call->count, ref);
        break;
    }
    return 1;
}

/* A point-to-point message in pipeline chunks (sc_msg_chunk_bytes), each a message of
 * its own as the ring's are: the engine then sees the transfer move chunk by chunk and
 * keeps driving it, where one long rendezvous let a rank whose own send still needed its
 * progress sleep through it (4 MiB sent both ways at once took 4 ms instead of 0.5).
 * Both sides cut the same chunks from the byte count their headers compare:
 * SC_CHUNK_BYTES is the same on every rank (sc_comm_init compares it). */
static sc_status_t sc_call_build_p2p(const sc_call_t *call, sc_coll_op_t *op, size_t bytes)
{
    size_t chunk = sc_msg_chunk_bytes(bytes, sc_dtype_size(call->dtype)), n;

    op->hdr.algo = SC_ALGO_DIRECT;
    if (bytes <= SC_OP_INLINE_MAX) {
        /* One message: the payload rides with the header, which the receiver takes
         * (and checks) anyway; both sides decide alike from the count, and counts
         * that differ are a mismatch whichever way each side sent. */
        const void *theirs = sc_op_inline(op, call->sbuf, bytes);
        if (call->kind == SC_COLL_RECV && bytes > 0)
            sc_op_copy(op, call->rbuf, theirs, bytes, -1, -1);
        return sc_op_built(op);
    }
    n = sc_msg_chunks(bytes, chunk);
    for (size_t i = 0; i < n; i++) {
        size_t off = i * chunk, len = sc_msg_chunk_len(bytes, chunk, i);
        if (call->kind == SC_COLL_SEND)
            sc_op_send(op, call->root, (uint16_t)i, (const char *)call->sbuf + off, len, -1,
                       -1);
        else
            sc_op_recv(op, call->root, (uint16_t)i, (char *)call->rbuf + off, len, -1, -1);
    }
    return sc_op_built(op);
}

/* The message-based algorithms (and one rank's copy) take what they reduce as it is, so
 * a prescaled reduction has its input scaled when the op starts (sc_op_start) into the
 * buffer the algorithm then reads, *sbuf: an allreduce's receive buffer (run in place),
 * else a copy the op owns (a reduce-scatter's or reduce's send buffer stays the
 * caller's). 0 when out of memory. */
static int sc_call_prescale_input(const sc_call_t *call, sc_coll_op_t *op, const void **sbuf)
{
    size_t sb, rb;

    sc_call_bytes(call, op->comm->rank, op->comm->size, &sb, &rb);
    op->prescale_src = call->sbuf;
    op->prescale_count = sb / sc_dtype_size(call->dtype);
    if (call->kind == SC_COLL_ALLREDUCE) {
        op->prescale_buf = call->rbuf;
    } else {
        op->prescale_own = malloc(sb ? sb : 1);
        if (!op->prescale_own)
            return 0;
        op->prescale_buf = op->prescale_own;
    }
    *sbuf = op->prescale_buf;
    return 1;
}

static sc_status_t sc_call_no_scaled_input(const sc_call_t *call)
{
    return sc_error(SC_ERR_NO_MEMORY, "%s: out of memory for the scaled input",
                    sc_call_name(call));
}

static sc_status_t sc_call_build(const sc_call_t *call, sc_coll_op_t *op)
{
    sc_comm_t *comm = op->comm;
    const sc_tuning_t *t;
    const void *sbuf = call->sbuf;
    size_t bytes = call->count * sc_dtype_size(call->dtype);
    sc_status_t st = sc_tuning_get(&t);

    if (st != SC_SUCCESS)
        return st;
    op->prescale = call->prescale;
    op->prescale_bound = __builtin_inff();
    /* Avg of the narrow floats: the sum of the inputs times 1 / size (the header still
     * says avg, so ranks that disagree on the op still differ), each product bound so
     * that no partial sum of in-range inputs passes the type's range (65504 / 3 rounds
     * up to 21840 in float16, and three of those sum to Inf). */
    if (call->redop == SC_AVG && sc_dtype_avg_premultiplies(call->dtype) && comm->size > 1) {
        op->redop = SC_SUM;
        op->prescale = 1.0 / comm->size;
        if (!sc_avg_bound(call->dtype, comm->size, &op->prescale_bound))
            return sc_call_no_scaled_input(call);
    }
    /* On one rank every reduction (avg included) is a copy of the input. */
    if (comm->size == 1 && (call->kind == SC_COLL_ALLREDUCE ||
                            call->kind == SC_COLL_REDUCE_SCATTER || call->kind == SC_COLL_REDUCE)) {
        op->hdr.algo = SC_ALGO_DIRECT;
        if (op->prescale != 0.0 && !sc_call_prescale_input(call, op, &sbuf))
            return sc_call_no_scaled_input(call);
        sc_op_deliver(op, call->rbuf, 0, bytes,
                      sc_op_copy(op, call->rbuf, sbuf, bytes, -1, -1));
        return sc_op_built(op);
    }
    if (sc_call_build_shm(call, op, t, &st))
        return st;
    if (op->prescale != 0.0 && !sc_call_prescale_input(call, op, &sbuf))
        return sc_call_no_scaled_input(call);
    switch (call->kind) {
    case SC_COLL_ALLREDUCE: {
        int algo = t->allreduce_algo;
        if (algo == SC_ALGO_NONE)
            algo = (bytes <= t->ring_threshold || call->count < (size_t)comm->size)
                       ? SC_ALGO_RD : SC_ALGO_RING;
        return algo == SC_ALGO_RING ? sc_algo_allreduce_ring(op, sbuf, call->rbuf, call->count)
                                    : sc_algo_allreduce_rd(op, sbuf, call->rbuf, call->count);
    }
    case SC_COLL_REDUCE_SCATTER:
        return sc_algo_reduce_scatter_ring(op, sbuf, call->rbuf, call->count);
    case SC_COLL_ALLGATHER:
        return sc_algo_allgather_ring(op, call->sbuf, call->rbuf, call->count);
    case SC_COLL_BROADCAST:
        return bytes <= t->ring_threshold
                   ? sc_algo_broadcast_tree(op, call->sbuf, call->rbuf, call->count, call->root)
                   : sc_algo_broadcast_chain(op, call->sbuf, call->rbuf, call->count, call->root);
    case SC_COLL_REDUCE:
        return bytes <= t->ring_threshold
                   ? sc_algo_reduce_tree(op, sbuf, call->rbuf, call->count, call->root)
                   : sc_algo_reduce_chain(op, sbuf, call->rbuf, call->count, call->root);
    case SC_COLL_ALLTOALL:
        return sc_algo_alltoall_pairwise(op, call->sbuf, call->rbuf, call->count);
    case SC_COLL_BARRIER:
        return sc_algo_barrier_dissemination(op);
    case SC_COLL_SEND:
    case SC_COLL_RECV:
        return sc_call_build_p2p(call, op, bytes);
    default:
        return sc_error(SC_ERR_INTERNAL, "unknown collective kind %d", (int)call->kind);
    }
}

sc_status_t sc_call_enqueue_host(const sc_call_t *call, sc_comm_t *comm,
                                 struct sc_request *r, int *gate, int caller_waits,
                                 const sc_range_t *deliver, int ndeliver)
{
    sc_coll_op_t *op;
    sc_status_t st;
    size_t bytes[2];

    op = sc_op_create(comm, call->kind, call->dtype, call->redop, call->count, call->root);
    if (!op)
        return sc_error(SC_ERR_NO_MEMORY, "%s: out of memory", sc_call_name(call));
    sc_request_init(r, comm->tp, NULL, NULL);
    op->hdr.serves = (uint8_t)sc_serves_now();
    op->deliver = deliver;
    op->ndeliver = ndeliver;
    op->build_s = sc_clock_coarse();
    st = sc_call_build(call, op);
    op->build_s = sc_clock_coarse() - op->build_s;
    if (st != SC_SUCCESS) {
        sc_op_destroy(op);
        return st;
    }
    sc_call_bytes(call, comm->rank, comm->size, &bytes[0], &bytes[1]);
    sc_shm_hold(comm, (const void *const[2]){call->sbuf, call->rbuf}, bytes, op->held);
    if (gate) {
        op->gate = gate;
        op->gate_deadline = sc_clock_now() + comm->timeout_s;
    }
    sc_progress_enqueue(comm, op, r, caller_waits);
    return SC_SUCCESS;
}

/* The checks of every call (communicator, arguments; the handle was checked as comm was
 * marked, sc_comm_issue_begin), then its route: SC_SUCCESS for the host backend,
 * SC_IN_PROGRESS for the device path on *device, or an error. */
static sc_status_t sc_call_admit(const sc_call_t *call, sc_comm_t *comm, sc_stream_t stream,
                                 int *device)
{
    sc_status_t st = sc_comm_check_usable(comm, sc_call_name(call)), broken = SC_SUCCESS;

    /* Broken by a peer at a later collective than this one, which the peers finished
     * (a rank running behind): it still runs on the host path (sc_progress_fail_comm),
     * so that the error lands on the call that failed. */
    if (st != SC_SUCCESS && st != SC_ERR_INVALID_COMM && call->kind != SC_COLL_SEND &&
        call->kind != SC_COLL_RECV &&
        comm->seq < __atomic_load_n(&comm->broken_seq, __ATOMIC_RELAXED)) {
        broken = st;
        st = SC_SUCCESS;
    }
    if (st != SC_SUCCESS)
        return st;
    st = sc_call_check(call, comm);
    if (st == SC_SUCCESS)
        st = sc_call_route(call, comm, stream, device);
    if (broken != SC_SUCCESS && st == SC_IN_PROGRESS)
        return sc_comm_check_usable(comm, sc_call_name(call)); /* the device path: refused */
    if (st != SC_SUCCESS && st != SC_IN_PROGRESS)
        sc_progress_refused(comm, call->kind, call->root);
    return st;
}

/* An admitted host call queued (behind *gate when gate is not NULL): req NULL waits for
 * it, else *req receives its request. */
static sc_status_t sc_call_issue_host(const sc_call_t *call, sc_comm_t *comm, int *gate,
                                      const sc_range_t *deliver, int ndeliver,
                                      sc_request_t **req)
{
    /* A blocking call's request lives on this stack frame. */
    struct sc_request *r = req ? malloc(sizeof(*r)) : NULL, blocking;
    sc_status_t st;

    if (req && !r) {
        st = sc_error(SC_ERR_NO_MEMORY, "%s: out of memory", sc_call_name(call));
        sc_progress_refused(comm, call->kind, call->root);
        return st;
    }
    if (!req)
        r = &blocking;
    st = sc_call_enqueue_host(call, comm, r, gate, req == NULL, deliver, ndeliver);
    if (st != SC_SUCCESS) {
        if (req)
            free(r);
        sc_progress_refused(comm, call->kind, call->root);
        return st;
    }
    if (req) {
        *req = r;
        return SC_SUCCESS;
    }
    return sc_wait(r);
}

/* A blocking receive from the rank itself returns once a send to itself matched it,
 * which the thread waiting in it (the only one issuing on comm) can no longer issue:
 * without such a send issued before (its number below the next send's), it would
 * wait for SC_TIMEOUT. Read on the issuing thread, which alone numbers the calls. */
static sc_status_t sc_call_check_self_receive(const sc_call_t *call, sc_comm_t *comm)
{
    int self = comm->rank;

    if (call->kind != SC_COLL_RECV || call->root != self ||
        comm->send_seq[self] > comm->recv_seq[self])
        return SC_SUCCESS;
    return sc_error(SC_ERR_INVALID_ARG, "sc_recv: a blocking receive from this rank itself "
                    "(rank %d) would never return: there is no send to itself for it to "
                    "match; issue the send first, or this receive with a request (req not "
                    "NULL) before it", self);
}

/* sc_call_issue on a communicator this thread marked. */
static sc_status_t sc_call_issue_marked(const sc_call_t *call, sc_comm_t *comm,
                                        sc_stream_t stream, sc_request_t **req)
{
    sc_status_t st;
    int device;

    st = sc_call_admit(call, comm, stream, &device);
    if (st == SC_IN_PROGRESS)
        return sc_device_issue(comm, call, device, stream, req);
    if (st != SC_SUCCESS)
        return st;
    if (!req && sc_call_check_self_receive(call, comm) != SC_SUCCESS) {
        sc_progress_refused(comm, call->kind, call->root);
        return SC_ERR_INVALID_ARG;
    }
    return sc_call_issue_host(call, comm, NULL, NULL, 0, req);
}

/* A public call: comm marked as issued on by this thread until the call is queued, or,
 * blocking, until it returns (another thread's call meanwhile is refused). */
static sc_status_t sc_call_issue(const sc_call_t *call, sc_comm_t *comm, sc_stream_t stream,
                                 sc_request_t **req)
{
    int claimed;
    sc_status_t st = sc_comm_issue_begin(comm, sc_call_name(call), &claimed);

    if (st != SC_SUCCESS)
        return st;
    st = sc_call_issue_marked(call, comm, stream, req);
    sc_comm_issue_end(comm, claimed);
    return st;
}

/* sc_call_issue_host_only on a communicator this thread marked. */
static sc_status_t sc_call_issue_host_marked(const sc_call_t *call, sc_comm_t *comm,
                                             const char *what, int *gate,
                                             const sc_range_t *deliver, int ndeliver,
                                             sc_request_t **req)
{
    sc_status_t st;
    int device;

    st = sc_call_admit(call, comm, NULL, &device);
    if (st == SC_IN_PROGRESS) {
        st = sc_error(SC_ERR_INVALID_ARG, "%s: %s takes host buffers only",
                      sc_call_name(call), what);
        sc_progress_refused(comm, call->kind, call->root);
        return st;
    }
    if (st != SC_SUCCESS)
        return st;
    return sc_call_issue_host(call, comm, gate, deliver, ndeliver, req);
}

/* A call that takes host buffers only (what: the kind of call, for the sentence),
 * admitted and queued with its gate and its delivered ranges, with comm marked as
 * sc_call_issue does (the reducer's and the top-k hook's calls). */
static sc_status_t sc_call_issue_host_only(const sc_call_t *call, sc_comm_t *comm,
                                           const char *what, int *gate,
                                           const sc_range_t *deliver, int ndeliver,
                                           sc_request_t **req)
{
    int claimed;
    sc_status_t st = sc_comm_issue_begin(comm, sc_call_name(call), &claimed);

    if (st != SC_SUCCESS)
        return st;
    st = sc_call_issue_host_marked(call, comm, what, gate, deliver, ndeliver, req);
    sc_comm_issue_end(comm, claimed);
    return st;
}

sc_status_t sc_call_issue_gated(const sc_call_t *call, sc_comm_t *comm, int *gate,
                                sc_request_t **req)
{
    return sc_call_issue_host_only(call, comm, "a gated call", gate, NULL, 0, req);
}

sc_status_t sc_allreduce_prescaled(void *buf, size_t count, sc_dtype_t dtype, double scale,
                                   sc_comm_t *comm, sc_request_t **req)
{
    sc_call_t call = {SC_COLL_ALLREDUCE, buf, buf, count, dtype, SC_SUM, 0, scale, 0};

    return sc_call_issue_host_only(&call, comm, "a pre-scaled input", NULL, NULL, 0, req);
}

sc_status_t sc_allreduce_prescaled_plain(void *buf, size_t count, sc_dtype_t dtype,
                                         double scale, sc_comm_t *comm, sc_request_t **req)
{
    sc_call_t call = {SC_COLL_ALLREDUCE, buf, buf, count, dtype, SC_SUM, 0, scale, 1};

    return sc_call_issue_host_only(&call, comm, "a pre-scaled input", NULL, NULL, 0, req);
}

static sc_status_t sc_allreduce_delivered_as(void *buf, size_t count, sc_dtype_t dtype,
                                             sc_op_t op, sc_comm_t *comm,
                                             const sc_range_t *deliver, int ndeliver,
                                             int plain, sc_request_t **req)
{
    /* A delivered call with no ranges still pulls (sc_coll_op_t.deliver): a reducer's
     * bucket none of whose gradients this rank marked meets ranks that have ranges. */
    static const sc_range_t no_ranges[1];
    sc_call_t call = {SC_COLL_ALLREDUCE, buf, buf, count, dtype, op, 0, 0.0, plain};

    if (!deliver)
        deliver = no_ranges;
    return sc_call_issue_host_only(&call, comm, "a delivered result", NULL, deliver,
                                   ndeliver, req);
}

sc_status_t sc_allreduce_delivered(void *buf, size_t count, sc_dtype_t dtype, sc_op_t op,
                                   sc_comm_t *comm, const sc_range_t *deliver,
                                   int ndeliver, sc_request_t **req)
{
    return sc_allreduce_delivered_as(buf, count, dtype, op, comm, deliver, ndeliver, 0, req);
}

sc_status_t sc_allreduce_delivered_plain(void *buf, size_t count, sc_dtype_t dtype,
                                         sc_op_t op, sc_comm_t *comm,
                                         const sc_range_t *deliver, int ndeliver,
                                         sc_request_t **req)
{
    return sc_allreduce_delivered_as(buf, count, dtype, op, comm, deliver, ndeliver, 1, req);
}

SC_API sc_status_t sc_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                sc_dtype_t dtype, sc_op_t op, sc_comm_t *comm,
                                sc_stream_t stream, sc_request_t **req)
{
    sc_call_t call = {SC_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0, 0.0, 0};
    return sc_call_issue(&call, comm, stream, req);
}

SC_API sc_status_t sc_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                     sc_dtype_t dtype, sc_op_t op, sc_comm_t *comm,
                                     sc_stream_t stream, sc_request_t **req)
{
    sc_call_t call = {SC_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0, 0.0, 0};
    return sc_call_issue(&call, comm, stream, req);
}

SC_API sc_status_t sc_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                sc_dtype_t dtype, sc_comm_t *comm, sc_stream_t stream,
                                sc_request_t **req)
{
    sc_call_t call = {SC_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, SC_SUM, 0, 0.0, 0};
    return sc_call_issue(&call, comm, stream, req);
}

SC_API sc_status_t sc_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                                sc_dtype_t dtype, int root, sc_comm_t *comm,
                                sc_stream_t stream, sc_request_t **req)
{
    sc_call_t call = {SC_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, SC_SUM, root, 0.0, 0};
    return sc_call_issue(&call, comm, stream, req);
}

SC_API sc_status_t sc_reduce(const void *sendbuf, void *recvbuf, size_t count,
                             sc_dtype_t dtype, sc_op_t op, int root, sc_comm_t *comm,
                             sc_stream_t stream, sc_request_t **req)
{
    sc_call_t call = {SC_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root, 0.0, 0};
    return sc_call_issue(&call, comm, stream, req);
}

SC_API sc_status_t sc_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                               sc_dtype_t dtype, sc_comm_t *comm, sc_stream_t stream,
                               sc_request_t **req)
{
    sc_call_t call = {SC_COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, SC_SUM, 0, 0.0, 0};
    return sc_call_issue(&call, comm, stream, req);
}

SC_API sc_status_t sc_barrier(sc_comm_t *comm, sc_request_t **req)
{
    sc_call_t call = {SC_COLL_BARRIER, NULL, NULL, 0, SC_UINT8, SC_SUM, 0, 0.0, 0};
    return sc_call_issue(&call, comm, NULL, req);
}

SC_API sc_status_t sc_send(const void *buf, size_t count, sc_dtype_t dtype, int peer,
                           sc_comm_t *comm, sc_stream_t stream, sc_request_t **req)
{
    sc_call_t call = {SC_COLL_SEND, buf, NULL, count, dtype, SC_SUM, peer, 0.0, 0};
    return sc_call_issue(&call, comm, stream, req);
}

SC_API sc_status_t sc_recv(void *buf, size_t count, sc_dtype_t dtype, int peer,
                           sc_comm_t *comm, sc_stream_t stream, sc_request_t **req)
{
    sc_call_t call = {SC_COLL_RECV, NULL, buf, count, dtype, SC_SUM, peer, 0.0, 0};
    return sc_call_issue(&call, comm, stream, req);
}
