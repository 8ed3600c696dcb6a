/* Non-blocking collectives and point-to-point calls, and the requests they return.
 *
 * Every call is collective over the communicator (except send/recv) and must be
 * issued in the same order on every rank. A call checks its arguments, enqueues the
 * operation and returns a request at once; the progress engine runs the operations
 * of one communicator in issue order. Passing req == NULL makes the call blocking:
 * it returns when the operation has completed. Buffers must stay valid and
 * untouched until the request completes. In-place: sendbuf == recvbuf (for
 * reduce_scatter and allgather, as in NCCL, the rank's own slice of the larger
 * buffer, so sendbuf == recvbuf there is in place on rank 0 only); buffers that
 * overlap in any other way are SC_ERR_INVALID_ARG, the sentence saying where the
 * rank's in-place buffer would start. Buffers start at a multiple of their element size, as C requires of a
 * pointer to the type (a float32 buffer at an odd address is SC_ERR_INVALID_ARG); the
 * 1-byte types have no such rule. A call rejected when issued (bad argument, failed
 * communicator) writes nothing. Refused when issued: a NULL or destroyed communicator
 * (SC_ERR_INVALID_COMM); a NULL buffer with count > 0 (count 0 takes any buffer, NULL
 * too, and is still a call that every rank must make), an unknown dtype or op, SC_AVG
 * on an integer dtype, a root or peer outside the communicator, a misaligned or
 * overlapping buffer, a count whose bytes (times the size for the larger buffer of
 * reduce_scatter, allgather and alltoall) pass INT64_MAX (SC_ERR_INVALID_ARG); a failed
 * communicator (its failure's status and sentence). Ranks whose n-th collectives on a
 * communicator disagree in kind, count, dtype, op or root get SC_ERR_MISMATCH on every
 * rank, naming both calls (where NCCL and MPI leave it undefined). An operation that
 * fails while running (mismatch, dead peer, timeout, abort) may have written part of
 * recvbuf, as in NCCL and MPI: data arrives in place as it is received; it never
 * reports SC_SUCCESS with wrong data.
 * A large transfer that was under way when the operation failed cannot always be
 * stopped at once (UCX cannot cancel a rendezvous it has started: on one node a peer's
 * cross-memory copy it queued still runs, and over TCP what the peer already sent still
 * arrives): until the last communicator of its sc_comm_init is destroyed, it may still
 * write recvbuf (and read sendbuf), so keep them allocated until then. Such a failure
 * breaks the communicator on every rank: its pending operations fail with the
 * failure's sentence and later calls are refused. A peer that issues the call just as
 * a rank's SC_TIMEOUT ends it may still complete it, right, with what that rank had
 * sent before it gave up; its next call then fails with the timeout. After a mismatch,
 * collectives issued before the mismatched one still complete (a rank running behind
 * finishes the calls its peers finished, so that the error lands on the mismatched
 * call on every rank).
 *
 * A collective one rank rejects when issued (a bad argument there, say a NULL buffer)
 * while its peers issued theirs: the rejecting rank tells them, and their call fails
 * with SC_ERR_MISMATCH, naming that rank and its sentence, once it has waited 3 s
 * without moving (or SC_TIMEOUT, if shorter) for the rank to issue a collective in its
 * place; the communicator then fails on every rank, the rejecting one included (its
 * next call reports it). A rank that issues the call again, right, within that time
 * goes on as if nothing happened, and so does a call every rank rejected. A rejected
 * send or receive (to or from a peer inside the communicator) is told to that peer
 * alone, the same way: its receive (its send, when the send waits for the receive)
 * of that number fails after 3 s.
 *
 * Device buffers (CUDA builds): the same calls take GPU memory (cudaMalloc, managed)
 * and a cudaStream_t as stream (NULL: the legacy default stream). They are
 * stream-ordered like NCCL's: the work is queued on the stream and req == NULL
 * returns once it is queued, not when it is done; a request completes when the stream
 * has done the work (sc_wait polls an event, sc_test queries it). A failure found
 * after the call returned (SC_TIMEOUT, a peer's failure, an NCCL error) breaks the
 * communicator on every rank and later calls report it. Host and device buffers may
 * not be mixed in one call; host buffers take stream NULL. Device buffers go to NCCL,
 * or through pinned host memory to the host collectives when NCCL is absent, switched
 * off (SC_NCCL=0) or ranks share a GPU. A host-only build refuses device buffers with
 * SC_ERR_UNSUPPORTED.
 *
 * Thread safety: calls on one communicator (sc_mem_alloc and sc_mem_free included) are
 * issued by one thread at a time; calls on different communicators, splits of one
 * sc_comm_init too, may run at once on different threads. A call entered on a
 * communicator while another thread issues one on it (from that call's entry until it
 * is queued, a blocking call until it returns; sc_comm_split, sc_comm_destroy,
 * sc_sparse_allreduce, sc_compressed_allreduce, sc_reducer_create and a synced
 * iteration's sc_reducer_finalize too, for their whole length) fails at once with
 * SC_ERR_INVALID_ARG and a sentence naming both calls, and changes nothing: no output
 * written, no peer told, the other thread's call goes on (issued both, the ranks could
 * number the two in different orders and exchange, for calls of the same shape, each
 * other's data). Calls handed from one thread to another (under a lock) are fine. What
 * cannot be told is calls of two threads that do not overlap in time but come in
 * another order than on the peers. sc_wait/sc_test/sc_request_free may run on any
 * thread, and several threads may wait on or test one request at once (each gets its
 * status); sc_request_free only once no other thread is in sc_wait or sc_test on that
 * request (it frees what they read).
 *
 * Signals: no call is async-signal-safe (they take locks and allocate). A signal
 * handler must not call into the library: one that interrupts a call on the issuing
 * thread would pass the check above as a nested call and could free what that call
 * uses. To stop on a signal, let the handler set a flag that the program checks, or a
 * thread of its own call sc_comm_abort (comm.h). */
#ifndef SHARDCOMM_COLLECTIVES_H
#define SHARDCOMM_COLLECTIVES_H

#include <stddef.h>
#include "shardcomm/api.h"
#include "shardcomm/status.h"
#include "shardcomm/types.h"
#include "shardcomm/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sc_request sc_request_t;

/* Registered host memory, as NCCL's ncclMemAlloc or MPI_Win_allocate_shared: bytes of
 * host memory that every rank of comm on this node maps from every other (UCX
 * allocates it in shared memory). A host collective of more than 512 bytes whose
 * buffers lie in such memory at the same offset on every rank reads the peers' buffers
 * in place (one copy instead of a transfer through the kernel and a second copy):
 * allreduce with both buffers registered, reduce_scatter, allgather, reduce and
 * alltoall with the send buffer (allgather in place: the receive buffer), broadcast
 * with the receive buffer. Send/recv, and every call on a communicator whose ranks do
 * not all share one node or where UCX_TLS leaves UCX no shared-memory transport (tcp
 * alone, for example), treat it as plain memory (sc_mem_is_shared tells which). Ranks that pass registered memory while a
 * peer passes plain memory (or another offset) to the same call get SC_ERR_MISMATCH on
 * every rank: so does an allreduce or allgather in place on some ranks and out of place
 * on others there (the buffer read in place differs), which plain memory serves.
 * Collective: every rank calls it in the same order with the same bytes;
 * a rank's failure, or sizes that differ, is an error on every rank and allocates
 * nothing. bytes 0 is SC_ERR_INVALID_ARG; more bytes than the machine's physical memory
 * is SC_ERR_NO_MEMORY, refused before anything is mapped. *ptr (64-byte aligned) is written on success only and stays valid until
 * sc_mem_free or sc_comm_destroy. */
SC_API sc_status_t sc_mem_alloc(sc_comm_t *comm, size_t bytes, void **ptr);

/* Releases memory from sc_mem_alloc on comm (NULL is a no-op); local, but no call
 * that uses ptr may still be pending on any rank. Works on a communicator that failed
 * or was aborted too. SC_ERR_INVALID_ARG for a pointer that sc_mem_alloc did not return
 * on comm, and for memory that a call of this rank still uses, on comm or on another
 * communicator of its sc_comm_init (its send or receive buffer lies in it and its
 * request has not completed; or it failed while a transfer that could not be cancelled
 * still used it): the memory is left as it was. sc_comm_destroy of comm frees its
 * memory, but memory that such a call still uses stays mapped until the call is done
 * (then the next sc_mem_alloc, sc_mem_free or sc_comm_destroy of the sc_comm_init frees
 * it), or until the last communicator of the sc_comm_init goes. */
SC_API sc_status_t sc_mem_free(sc_comm_t *comm, void *ptr);

/* *shared = 1 where ptr lies in memory from sc_mem_alloc on comm that every rank of
 * comm maps, so that collectives read it in place; 0 for any other pointer (NULL too)
 * and for registered memory that serves as plain memory (see sc_mem_alloc). Local;
 * works on a communicator that failed or was aborted. SC_ERR_INVALID_ARG for shared
 * NULL; *shared is written on success only. */
SC_API sc_status_t sc_mem_is_shared(sc_comm_t *comm, const void *ptr, int *shared);

/* recvbuf[i] = op over ranks of sendbuf[i], for i < count. Bitwise the same on
 * every rank. */
SC_API sc_status_t sc_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                sc_dtype_t dtype, sc_op_t op, sc_comm_t *comm,
                                sc_stream_t stream, sc_request_t **req);

/* sendbuf holds recvcount * size elements; rank r receives the reduction of block r.
 * In place when recvbuf == (char *)sendbuf + rank * recvcount * dtype size. */
SC_API sc_status_t sc_reduce_scatter(const void *sendbuf, void *recvbuf,
                                     size_t recvcount, sc_dtype_t dtype, sc_op_t op,
                                     sc_comm_t *comm, sc_stream_t stream,
                                     sc_request_t **req);

/* recvbuf (sendcount * size elements) receives every rank's sendbuf in rank order.
 * In place when sendbuf == (char *)recvbuf + rank * sendcount * dtype size. */
SC_API sc_status_t sc_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                sc_dtype_t dtype, sc_comm_t *comm, sc_stream_t stream,
                                sc_request_t **req);

/* Copies root's sendbuf into every rank's recvbuf. sendbuf is read on root only. */
SC_API sc_status_t sc_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                                sc_dtype_t dtype, int root, sc_comm_t *comm,
                                sc_stream_t stream, sc_request_t **req);

/* Like allreduce, but only root's recvbuf is written (recvbuf may be NULL elsewhere). */
SC_API sc_status_t sc_reduce(const void *sendbuf, void *recvbuf, size_t count,
                             sc_dtype_t dtype, sc_op_t op, int root, sc_comm_t *comm,
                             sc_stream_t stream, sc_request_t **req);

/* Block j (count elements) of sendbuf goes to rank j, which stores it as block r of
 * its recvbuf. In place when sendbuf == recvbuf. */
SC_API sc_status_t sc_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                               sc_dtype_t dtype, sc_comm_t *comm, sc_stream_t stream,
                               sc_request_t **req);

/* Completes when every rank has entered the barrier. */
SC_API sc_status_t sc_barrier(sc_comm_t *comm, sc_request_t **req);

/* Point-to-point: matched in order per (sender, receiver) pair; count and dtype must
 * agree on both sides. A mismatch is SC_ERR_MISMATCH on the receiver, naming both
 * sides; the send may already have completed with SC_SUCCESS (its data was handed
 * over, as with MPI's eager sends), and the sender's later calls fail with the same
 * sentence, since the mismatch breaks the communicator on every rank. A rank may send
 * to itself (peer == its rank), as MPI's: a blocking receive from itself needs its send
 * issued before it (else SC_ERR_INVALID_ARG: it could never return), and a blocking
 * send to itself may wait for its receive, like a send to any peer (past UCX's eager
 * size), so post that receive first, with a request. */
SC_API sc_status_t sc_send(const void *buf, size_t count, sc_dtype_t dtype, int peer,
                           sc_comm_t *comm, sc_stream_t stream, sc_request_t **req);
SC_API sc_status_t sc_recv(void *buf, size_t count, sc_dtype_t dtype, int peer,
                           sc_comm_t *comm, sc_stream_t stream, sc_request_t **req);

/* Blocks until the request completes; returns its final status and, on failure,
 * sets sc_last_error() to its sentence. Does not free the request. */
SC_API sc_status_t sc_wait(sc_request_t *req);

/* SC_IN_PROGRESS while pending, else the final status (as sc_wait). Never blocks. */
SC_API sc_status_t sc_test(sc_request_t *req);

/* Releases a request. A pending request is waited for first. NULL is a no-op. As with
 * free(), the request is gone afterwards: freeing it again, or passing it to sc_wait or
 * sc_test, is undefined (a second free aborted the process in glibc's check); setting
 * the caller's pointer to NULL after it makes a second free a no-op and sc_wait or
 * sc_test SC_ERR_INVALID_ARG. In a child forked while a request was pending (comm.h,
 * sc_comm_init), sc_wait and sc_test return SC_ERR_INVALID_COMM for it at once (only
 * the process that issued it can complete it) and sc_request_free frees the child's
 * copy without waiting; the parent's request and communicator are untouched. */
SC_API void sc_request_free(sc_request_t *req);

#ifdef __cplusplus
}
#endif

#endif
