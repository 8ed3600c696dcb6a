/* sc-bench's view of a collective: names, bus-bandwidth factor, buffer layout for a
 * size in bytes, and issuing the call through the public API. */
#ifndef SC_BENCH_COLL_H
#define SC_BENCH_COLL_H

#include <stddef.h>
#include "shardcomm/shardcomm.h"

typedef enum {
    SC_BENCH_ALLREDUCE = 0,
    SC_BENCH_REDUCE_SCATTER,
    SC_BENCH_ALLGATHER,
    SC_BENCH_BROADCAST,
    SC_BENCH_REDUCE,
    SC_BENCH_ALLTOALL,
    SC_BENCH_SENDRECV, /* a send to rank + 1 and a receive from rank - 1 (nccl-tests'
                          sendrecv), host buffers out of place only */
    SC_BENCH_COLL_COUNT
} sc_bench_coll_t;

/* One call of one collective at one size, as every rank issues it. Sizes follow
 * nccl-tests: `bytes` is the largest buffer of the call (the allreduce buffer, the
 * reduce_scatter send buffer, the allgather receive buffer, the whole alltoall
 * buffer, the sendrecv send buffer) and `total` its element count. */
typedef struct {
    sc_bench_coll_t coll;
    sc_dtype_t dtype;
    sc_op_t op;
    int root;          /* broadcast/reduce; -1 for the other collectives */
    int rank;
    int nranks;
    int inplace;
    size_t count;      /* the call's count argument (per-rank block for rs/ag/alltoall) */
    size_t total;      /* elements of the largest buffer */
    size_t bytes;      /* total * element size */
    void *sendbuf;     /* arguments passed to the call */
    void *recvbuf;
    sc_stream_t stream; /* CUDA stream for device buffers; NULL for host buffers */
} sc_bench_call_t;

/* "allreduce", "reduce_scatter", ...; NULL for an unknown value. */
const char *sc_bench_coll_name(sc_bench_coll_t coll);

/* Parses a collective name; SC_ERR_INVALID_ARG if unknown. */
sc_status_t sc_bench_coll_from_name(const char *name, sc_bench_coll_t *coll);

/* Whether the collective takes a reduction op / a root. */
int sc_bench_coll_reduces(sc_bench_coll_t coll);
int sc_bench_coll_rooted(sc_bench_coll_t coll);

/* Whether the collective runs with these buffers: sendrecv has no in-place form (its
 * send would read what its receive writes) and takes host buffers only (the device
 * path has no grouped send and receive, and one stream would hold each rank's send
 * behind its receive). */
int sc_bench_coll_supports(sc_bench_coll_t coll, int inplace, int device);

/* Whether dtype is one of the float types, the only ones op avg is defined on. */
int sc_bench_dtype_is_float(sc_dtype_t dtype);

/* busbw / algbw as nccl-tests defines it for nranks ranks. */
double sc_bench_coll_busbw_factor(sc_bench_coll_t coll, int nranks);

/* Bytes of the largest buffer for a requested size: the element count is rounded
 * down to whole elements, and to whole blocks of one per rank where blocks are per
 * rank (nccl-tests' sizes); 0 where size is below sc_bench_coll_min_bytes(). */
size_t sc_bench_coll_bytes(sc_bench_coll_t coll, size_t size, sc_dtype_t dtype,
                           int nranks);

/* The smallest size that holds a call: one element, or one per rank where blocks are
 * per rank. */
size_t sc_bench_coll_min_bytes(sc_bench_coll_t coll, sc_dtype_t dtype, int nranks);

/* Lays out a call of `size` bytes over two buffers a and b of at least
 * sc_bench_coll_bytes() bytes each: out of place it sends from a and receives in b,
 * in place it uses a alone, with the offsets the API defines for in-place
 * reduce_scatter and allgather. The stream is NULL (host buffers). */
void sc_bench_call_init(sc_bench_call_t *call, sc_bench_coll_t coll, size_t size,
                        sc_dtype_t dtype, sc_op_t op, int root, int rank, int nranks,
                        int inplace, void *a, void *b);

/* Issues the call on its stream; *req is set on success. With req NULL on device
 * buffers the call returns once the work is enqueued on the stream. sendrecv is a
 * send and a receive in flight together: req must be NULL (it returns once both
 * completed). */
sc_status_t sc_bench_call_issue(const sc_bench_call_t *call, sc_comm_t *comm,
                                sc_request_t **req);

#endif
