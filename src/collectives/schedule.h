/* An operation as a schedule: a list of actions (send, receive, reduce, copy) with
 * dependencies, built by an algorithm and executed by the progress engine. */
#ifndef SC_COLLECTIVES_SCHEDULE_H
#define SC_COLLECTIVES_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>
#include "collectives/shm_segment.h"
#include "shardcomm/collectives.h"

typedef enum {
    SC_ACT_SEND = 0,
    SC_ACT_RECV,
    SC_ACT_REDUCE, /* dst = src op src2, count elements */
    SC_ACT_COPY,   /* dst = src, bytes */
    SC_ACT_AVG     /* dst /= comm size, count elements */
} sc_action_kind_t;

typedef enum {
    SC_ACT_PENDING = 0,
    SC_ACT_STARTED,
    SC_ACT_DONE
} sc_action_state_t;

#define SC_ACT_MAX_DEPS 2

typedef struct {
    uint8_t kind;
    uint8_t state;
    uint16_t sub;              /* tag sub-index, equal on the matching send and recv */
    uint8_t scaled;            /* reduce: bit 0 src, bit 1 src2 times op->prescale */
    uint8_t streamed;          /* reduce, copy: the result stored non-temporally (a
                                  reduce's to dst2 too) */
    int32_t peer;              /* comm rank of the peer (send/recv) */
    int32_t dep[SC_ACT_MAX_DEPS]; /* indices of earlier actions, -1 for none */
    void *dst;
    void *dst2;                /* streamed reduce: a second destination, or NULL */
    const void *src;
    const void *src2;
    size_t len;                /* bytes for send/recv/copy, elements for reduce/avg */
    void *ucx_req;
} sc_action_t;

/* What every rank checks against its ring neighbours before trusting an operation. */
#define SC_OP_HDR_MAGIC 0x5343484fu /* "SCHO" */
typedef struct {
    uint32_t magic;
    uint16_t kind;        /* sc_coll_kind_t */
    uint8_t dtype;
    uint8_t op;
    int32_t root;
    int32_t algo;
    int32_t rank;         /* the sender's comm rank */
    /* An allreduce on registered memory (algorithm shm) whose ranks copy their results
     * from the owners' buffers (1: pulled, the delivered calls) instead of having them
     * written into theirs (0: pushed); the two end differently, so ranks must agree. */
    uint8_t pulled;
    /* The sender's preferred protocol for each size class of mid-size messages, a bit
     * per class set for eager (proto_choice.h); not compared: the ranks combine them. */
    uint8_t eager_prefs;
    /* The public call this collective is part of (serves.h; 0: the caller's own). */
    uint8_t serves;
    uint8_t pad;
    uint64_t count;
    uint64_t seq;
    /* Registered memory (sc_mem_alloc) the call reads in place: the segments of the
     * send and the receive buffer (0: not read in place) and the offsets there, which
     * must be equal on every rank. */
    uint32_t sseg, rseg;
    uint64_t soff, roff;
} sc_op_header_t;

/* Largest payload sent inline with an operation's header (a point-to-point message's,
 * in the op's own buffers). */
#define SC_OP_INLINE_MAX 512
/* Largest payload a collective of a 2-rank communicator sends with its header (a small
 * allreduce: one message each way). Its header buffers are the communicator's
 * (sc_comm.pair_hdr), not the op's: collectives run one at a time, so one pair serves
 * them all, and an op stays small (2 KB: 100,000 point-to-point ops in flight take 200
 * MB; three 4 KiB buffers in every op would make that 1.3 GB). */
#define SC_OP_PAIR_INLINE_MAX 4096
/* The inline payload starts at a 16-byte boundary after the header, so that 8-byte
 * elements are read aligned in place. */
#define SC_OP_INLINE_OFF ((sizeof(sc_op_header_t) + 15) & ~(size_t)15)
#define SC_OP_HDR_BUF (SC_OP_INLINE_OFF + SC_OP_INLINE_MAX)
#define SC_OP_PAIR_HDR_BUF (SC_OP_INLINE_OFF + SC_OP_PAIR_INLINE_MAX)

typedef enum {
    SC_COLL_ALLREDUCE = 0,
    SC_COLL_REDUCE_SCATTER,
    SC_COLL_ALLGATHER,
    SC_COLL_BROADCAST,
    SC_COLL_REDUCE,
    SC_COLL_ALLTOALL,
    SC_COLL_BARRIER,
    SC_COLL_SEND,
    SC_COLL_RECV,
    SC_COLL_KIND_COUNT
} sc_coll_kind_t;

typedef enum {
    SC_ALGO_NONE = 0,
    SC_ALGO_RING,
    SC_ALGO_RD,       /* recursive doubling */
    SC_ALGO_CHAIN,    /* pipelined chain (broadcast, reduce) */
    SC_ALGO_TREE,     /* binomial tree (broadcast, reduce) */
    SC_ALGO_PAIRWISE, /* alltoall */
    SC_ALGO_DISSEMINATION,
    SC_ALGO_DIRECT,   /* send/recv */
    SC_ALGO_SHM,      /* every rank reads its peers' registered buffers in place */
    SC_ALGO_STAGED    /* the same through the communicator's staging segment (stage.h) */
} sc_algo_t;

struct sc_comm;

typedef struct sc_op {
    struct sc_op *next;        /* in the communicator's queue */
    struct sc_comm *comm;
    struct sc_request *req;
    sc_op_header_t hdr;        /* this rank's view of the call */
    sc_dtype_t dtype;
    sc_op_t redop;
    sc_action_t *acts;
    int nacts;
    int cap;
    int first_pending;         /* every action before it is done */
    int oom;                   /* an append or the scratch allocation failed */
    /* A transfer UCX could not cancel still reads or writes the op's memory (its
     * scratch, its header buffers): the op is never reused nor freed before the worker
     * is gone (sc_op_destroy keeps it on the transport's list of stuck ops). */
    int stuck;
    void *scratch;             /* owned; freed with the op */
    size_t scratch_bytes;
    int started;               /* headers posted, deadline set */
    int refused;               /* a peer refused its part (sc_progress_refused): the op
                                  waits SC_REFUSAL_GRACE_S after it last moved */
    int refused_here;          /* this rank refused its call of this number first */
    int nhdr;                  /* neighbour headers expected (0, 1 or 2) */
    int hdr_peer[2];
    int hdr_ok;                /* bit i: neighbour i's header verified */
    int mbox;                  /* the headers go through the comm's mailboxes, not UCX */
    int mbox_put;              /* bit i: the header for neighbour i still to be written */
    /* Small operations on two ranks send their payload with the header, one message
     * each way: inline_bytes of payload follow the header in inline_out. */
    int inline_hdr;
    size_t inline_bytes;
    const void *inline_src;    /* copied into inline_out when the op starts */
    void *hdr_recv_req[2];
    void *hdr_send_req[2];
    /* SC_TIMEOUT after the op last moved: a peer that stops answering fails it, a
     * long op that keeps moving (a large one on a slow or loaded machine) does not. */
    double deadline;
    /* Seconds this rank took to build the schedule: a peer builds the same call before
     * it sends its header or its first data, so the deadline is extended by
     * SC_OP_BUILD_GRACE times it (nothing for a usual op; a second or more for millions
     * of actions, as with tiny SC_CHUNK_BYTES on a large op). */
    double build_s;
    /* Start condition: the op starts once *gate is nonzero (a host-staged device call
     * waits for its stream to copy the data out), failing at gate_deadline. */
    int *gate;
    double gate_deadline;
    /* Where parts of the result go (sc_op_final, sc_op_deliver): rbuf[off, off + bytes)
     * is made in dst directly where the algorithm can (a chunk inside one range), else
     * copied to dst as soon as those bytes are final, while the rest of the op still
     * runs (the reducer's copy back to a bucket's gradients). The caller's list, sorted
     * by off, its ranges disjoint. Not NULL (even with ndeliver 0) for every delivered
     * call: on registered memory such an op pulls its results (algo_shm.c), so that the
     * ranks of one bucket, some with ranges and some with none, take one protocol. */
    const sc_range_t *deliver;
    int ndeliver;
    int deliver_streamed;      /* the copies to delivered ranges (sc_op_deliver, and an
                                  algorithm's own) stored non-temporally */
    /* A reduction of inputs multiplied by prescale (0: none; sc_allreduce_prescaled, and
     * avg of the narrow floats, sc_dtype_avg_premultiplies): the algorithm scales in
     * its reductions (scaled actions), or, where it cannot, the op's start writes
     * prescale_count elements of prescale_src (the send buffer) times prescale into
     * prescale_buf, which the algorithm reads as its input: an allreduce's receive
     * buffer (the same one in place), or prescale_own, a copy the op owns. */
    double prescale;
    float prescale_bound;      /* each scaled input's largest magnitude: sc_avg_bound for
                                  avg, Inf for sc_allreduce_prescaled */
    void *prescale_buf;
    const void *prescale_src;
    size_t prescale_count;
    void *prescale_own;
    /* Its data messages, for the choice of protocol (proto_choice.h): the largest and
     * the total, counted as the schedule is built; the class chosen for (-1: none),
     * whether it sends eagerly, and when it started. */
    size_t send_max;
    size_t send_bytes;
    int proto_cls;
    int proto_eager;
    double proto_t0;
    uint8_t peer_prefs;        /* the neighbours' eager_prefs, ANDed as their headers pass */
    /* Registered memory its send and receive buffers lie in (sc_shm_hold): sc_mem_free
     * refuses it until the op lets go, before its request completes (sc_op_unhold);
     * a stuck op never does. */
    struct sc_shm_seg *held[2];
    /* Send/recv: the collectives issued before it on its rank (the communicator's seq
     * when it was queued). Its mismatch spares them on every rank, as a collective's
     * mismatch spares those before it. */
    uint64_t colls_before;
    /* Failed with transfers still in flight (progress_settle.h): its status and sentence,
     * given to its request once they are done, or at settle_deadline. */
    sc_status_t settle_status;
    char *settle_text;
    double settle_deadline;
    /* The message buffers come last: they are written before they are read, so a
     * reused op clears only the fields above them (SC_OP_CLEARED). */
    /* Header receives have room for an inline payload (see inline_bytes). A collective
     * of a 2-rank communicator uses the communicator's pair_hdr instead. */
    _Alignas(16) uint8_t hdr_in[2][SC_OP_HDR_BUF];
    _Alignas(16) uint8_t inline_out[SC_OP_HDR_BUF];
} sc_coll_op_t;

#define SC_OP_CLEARED offsetof(sc_coll_op_t, hdr_in)

/* Lets go of the registered memory op holds (held[]), unless it is stuck; again is a
 * no-op. Before its request completes, so that a caller's sc_mem_free after sc_wait
 * finds the memory free. */
void sc_op_unhold(sc_coll_op_t *op);

/* How many times its own build time an op waits beyond SC_TIMEOUT for its peers. */
#define SC_OP_BUILD_GRACE 4.0
/* Seconds an op waits for a peer that does not move: SC_TIMEOUT plus the build grace. */
double sc_op_patience(const sc_coll_op_t *op);

/* Creates an empty op for comm (not queued). Returns NULL when out of memory. */
sc_coll_op_t *sc_op_create(struct sc_comm *comm, sc_coll_kind_t kind, sc_dtype_t dtype,
                      sc_op_t redop, size_t count, int root);
/* Returns op to its transport's pool (or frees it). */
void sc_op_destroy(sc_coll_op_t *op);

/* Frees op outright (pool teardown). */
void sc_op_free(sc_coll_op_t *op);

/* Allocates the op's scratch buffer; NULL when out of memory. */
void *sc_op_scratch(sc_coll_op_t *op, size_t bytes);

/* Appends an action and returns its index, or -1 when out of memory (the op then
 * remembers the failure and sc_op_built() reports it). */
int sc_op_send(sc_coll_op_t *op, int peer, uint16_t sub, const void *src, size_t bytes,
               int dep0, int dep1);
int sc_op_recv(sc_coll_op_t *op, int peer, uint16_t sub, void *dst, size_t bytes, int dep0,
               int dep1);
int sc_op_reduce(sc_coll_op_t *op, void *dst, const void *a, const void *b, size_t count,
                 int dep0, int dep1);
int sc_op_copy(sc_coll_op_t *op, void *dst, const void *src, size_t bytes, int dep0, int dep1);
/* dst = a op b with a (bit 0 of scaled) and b (bit 1) multiplied by op->prescale first. */
int sc_op_reduce_scaled(sc_coll_op_t *op, void *dst, const void *a, const void *b, size_t count,
                        int scaled, int dep0, int dep1);
int sc_op_avg(sc_coll_op_t *op, void *dst, size_t count, int dep0);
/* sc_op_reduce_scaled whose result no action of the op reads again: stored with
 * non-temporal stores (sc_reduce_local_streamed) into dst, and into dst2 as well
 * unless it is NULL. */
int sc_op_reduce_streamed(sc_coll_op_t *op, void *dst, void *dst2, const void *a,
                          const void *b, size_t count, int scaled, int dep0, int dep1);
/* sc_op_copy (dst and src apart) whose result no action of the op reads again: stored
 * with non-temporal stores (sc_copy_streamed). */
int sc_op_copy_streamed(sc_coll_op_t *op, void *dst, const void *src, size_t bytes, int dep0,
                        int dep1);

/* A copy of final values into the caller's memory (a delivered range, or the part of
 * rbuf the algorithm pulls there): sc_op_copy, or sc_op_copy_streamed where the op
 * says so (op->deliver_streamed). */
int sc_op_copy_delivered(sc_coll_op_t *op, void *dst, const void *src, size_t bytes, int dep0,
                         int dep1);

/* Where an algorithm makes the final values of rbuf[off, off + bytes): in the memory
 * of the delivered range that holds all of them (so that they need no copy; that part
 * of rbuf is then left as it is), else in rbuf itself. Every action that writes or reads
 * those final values uses this address. */
void *sc_op_final(sc_coll_op_t *op, void *rbuf, size_t off, size_t bytes);

/* rbuf[off, off + bytes) is final once action dep is done: appends the copies of its
 * part in op->deliver (none when the op delivers nothing). Not for values the algorithm
 * made where sc_op_final said. */
void sc_op_deliver(sc_coll_op_t *op, const void *rbuf, size_t off, size_t bytes, int dep);

/* Makes the header exchange with the single neighbour (2 ranks) carry bytes of
 * payload read from src when the op starts; returns where the neighbour's payload
 * will be. */
const void *sc_op_inline(sc_coll_op_t *op, const void *src, size_t bytes);

/* SC_SUCCESS when every append succeeded, else SC_ERR_NO_MEMORY with a sentence. */
sc_status_t sc_op_built(sc_coll_op_t *op);

/* Name of a collective kind ("allreduce"). */
const char *sc_coll_kind_name(sc_coll_kind_t kind);
const char *sc_algo_name(sc_algo_t algo);

/* Algorithms: append the actions of one operation to op. Buffers as in the public
 * API; sizes in elements. Each returns SC_SUCCESS or SC_ERR_NO_MEMORY. */
sc_status_t sc_algo_allreduce_ring(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count);
sc_status_t sc_algo_allreduce_rd(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count);
sc_status_t sc_algo_reduce_scatter_ring(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                        size_t recvcount);
sc_status_t sc_algo_allgather_ring(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                   size_t sendcount);
sc_status_t sc_algo_broadcast_chain(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                    size_t count, int root);
sc_status_t sc_algo_broadcast_tree(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                   size_t count, int root);
sc_status_t sc_algo_reduce_chain(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                                 int root);
sc_status_t sc_algo_reduce_tree(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                                int root);
sc_status_t sc_algo_alltoall_pairwise(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                      size_t count);
sc_status_t sc_algo_barrier_dissemination(sc_coll_op_t *op);
/* On registered memory that every rank maps (algo_shm.c): peers' copies of a buffer come
 * from its reference (sref: the send buffer, rref: the receive buffer). All-gather
 * reads peer q's block at ref's offset plus q * block_off. */
sc_status_t sc_algo_allreduce_shm(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                                  const sc_shm_ref_t *sref, const sc_shm_ref_t *rref);
/* Allreduce on plain memory through comm's staging segment (stage.h), in windows of at
 * most area bytes of the input, one after the other: the blocks the peers reduce are
 * copied into the input area (sin) first, the results are made in the output area
 * (sout) and delivered from there to rbuf, or to the caller's delivered ranges
 * (op->deliver) where they cover it. At most SC_STAGE_MAX_WINDOWS windows. */
sc_status_t sc_algo_allreduce_staged(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                     size_t count, const sc_shm_ref_t *sin,
                                     const sc_shm_ref_t *sout, size_t area);
/* Reduce-scatter on plain memory through the staging input area, in windows of
 * area / (size x dtype size) elements of each block: every block's window but this
 * rank's is copied there first, then each rank reduces its block's window from its
 * own sbuf and the peers' input areas. At most SC_STAGE_MAX_WINDOWS windows. */
sc_status_t sc_algo_reduce_scatter_staged(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                          size_t recvcount, const sc_shm_ref_t *sin,
                                          size_t area);
/* Windows a staged op may take: each has message subs of its own. */
#define SC_STAGE_MAX_WINDOWS 4096
/* A staged op of kind (allreduce or reduce-scatter) over count elements (of the
 * allreduce, or of each reduce-scatter block) of es bytes on p ranks, through areas of
 * area bytes: the elements of one window in *welems, and the number of windows
 * (SIZE_MAX when not one element fits). */
size_t sc_stage_window_plan(sc_coll_kind_t kind, size_t count, size_t p, size_t es,
                            size_t area, size_t *welems);
sc_status_t sc_algo_reduce_scatter_shm(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                       size_t recvcount, const sc_shm_ref_t *sref);
sc_status_t sc_algo_allgather_shm(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                  size_t sendcount, const sc_shm_ref_t *ref, size_t block_off);
/* Broadcast: the peers copy from the root's rbuf (rref); reduce: the root reduces from
 * every rank's sbuf (sref). */
sc_status_t sc_algo_broadcast_shm(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                                  int root, const sc_shm_ref_t *rref);
sc_status_t sc_algo_reduce_shm(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                               int root, const sc_shm_ref_t *sref);
/* Alltoall: every rank copies its block from every send buffer (sref); in place through
 * scratch, written back once every peer is done reading. */
sc_status_t sc_algo_alltoall_shm(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                                 const sc_shm_ref_t *sref);

#endif
