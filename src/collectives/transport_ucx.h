/* UCX (ucp) transport: context, worker, endpoints and tagged messages. */
#ifndef SC_COLLECTIVES_TRANSPORT_UCX_H
#define SC_COLLECTIVES_TRANSPORT_UCX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/comm_internal.h"

/* Tag layout, high to low: ctx 12 bits, kind 2, seq 18, sub 16, source world rank 16. */
#define SC_TAG_KIND_COLL 0u
#define SC_TAG_KIND_P2P 1u
#define SC_TAG_KIND_CTL 2u
#define SC_TAG_KIND_HDR 3u
#define SC_TAG_SRC_MASK 0xffffull
#define SC_TAG_SEQ_MASK 0x3ffffull /* the 18 bits of the sequence field */
#define SC_TAG_FULL_MASK (~0ull)
/* The source field holds a world rank: SC_MAX_WORLD (core/bootstrap_env.h) ranks. */

static inline uint64_t sc_tag_make(uint32_t ctx, uint32_t kind, uint64_t seq, uint32_t sub,
                                   uint32_t src)
{
    return ((uint64_t)(ctx & 0xfff) << 52) | ((uint64_t)(kind & 3) << 50) |
           ((seq & SC_TAG_SEQ_MASK) << 32) | ((uint64_t)(sub & 0xffff) << 16) |
           (uint64_t)(src & 0xffff);
}

/* A tag's fields, as sc_tag_make lays them out. */
static inline uint32_t sc_tag_ctx(uint64_t tag)
{
    return (uint32_t)(tag >> 52) & 0xfffu;
}

static inline uint32_t sc_tag_kind(uint64_t tag)
{
    return (uint32_t)(tag >> 50) & 3u;
}

static inline uint64_t sc_tag_seq(uint64_t tag)
{
    return (tag >> 32) & SC_TAG_SEQ_MASK;
}

static inline uint32_t sc_tag_sub(uint64_t tag)
{
    return (uint32_t)(tag >> 16) & 0xffffu;
}

/* Creates the context and worker (shared-memory transports only when single_node and
 * UCX_TLS is not set); the worker address goes to addr and addr_len, to be
 * released with sc_ucx_release_address. */
sc_status_t sc_ucx_open(sc_transport_t *tp, int single_node, void **addr,
                        size_t *addr_len);
void sc_ucx_release_address(sc_transport_t *tp, void *addr);

/* Creates endpoints to every world rank from their worker addresses. */
sc_status_t sc_ucx_connect(sc_transport_t *tp, void *const *addrs);

/* Whether the endpoint to world rank `world` goes through shared memory (a peer of this
 * node, unless UCX_TLS leaves no shared-memory transport): UCX's peer-failure handling
 * is off there (sc_ucx_connect). */
int sc_ucx_peer_local(const sc_transport_t *tp, int world);

/* Closes endpoints (flushing, bounded by timeout_s), worker and context. */
void sc_ucx_close(sc_transport_t *tp, double timeout_s);

/* Drops every message in UCX's queue of unexpected messages whose tag carries context
 * id ctx (what an earlier communicator with the id left unreceived). Caller holds
 * tp->lock. */
void sc_ucx_purge_ctx(sc_transport_t *tp, uint32_t ctx);

/* Whether UCX's queue of unexpected messages holds one whose tag matches tag under mask;
 * the first one's tag goes to *found. Caller holds tp->lock. */
int sc_ucx_unexpected(sc_transport_t *tp, uint64_t tag, uint64_t mask, uint64_t *found);

/* Receives the first unexpected message whose tag matches tag under mask into scratch:
 * dropped, and its sender's transfer (a rendezvous too) completes. 0 when there was none
 * (or no memory for it). The scratch is freed once the message is in
 * (sc_ucx_drops_poll), or kept past the worker where it is still arriving at the
 * close. Caller holds tp->lock. */
int sc_ucx_drop(sc_transport_t *tp, uint64_t tag, uint64_t mask);

/* Frees the scratch of the dropped messages that are in; nonzero when one was. Caller
 * holds tp->lock. */
int sc_ucx_drops_poll(sc_transport_t *tp);

/* Posts a tagged send/receive. *req is NULL when the operation completed at once.
 * Errors carry a sentence. Caller holds tp->lock. */
sc_status_t sc_ucx_send(sc_transport_t *tp, int world_dst, uint64_t tag, const void *buf,
                        size_t len, void **req);
/* sc_ucx_send, eagerly where UCX can (up to about 128 KiB on shared memory: through its
 * FIFO instead of a handshake and a CMA copy). For the collectives' own data messages
 * when proto_choice.h says so. */
sc_status_t sc_ucx_send_eager(sc_transport_t *tp, int world_dst, uint64_t tag,
                              const void *buf, size_t len, void **req);
sc_status_t sc_ucx_recv(sc_transport_t *tp, uint64_t tag, uint64_t mask, void *buf,
                        size_t len, void **req);

/* SC_IN_PROGRESS, or the final status of a posted request (which is then freed).
 * *len receives the received length for a receive. */
sc_status_t sc_ucx_poll_send(sc_transport_t *tp, void *req);
sc_status_t sc_ucx_poll_recv(sc_transport_t *tp, void *req, size_t *len);

/* How long cancelled requests are progressed before they are released. */
#define SC_UCX_CANCEL_WAIT_S 0.05

/* Cancels a pending request (start) and waits (finish: progressing until a deadline,
 * SC_UCX_CANCEL_WAIT_S from the start as a rule) until UCX releases it. For many
 * requests: start every cancel, then finish each against one shared deadline (finish
 * alone also bounds an endpoint close). NULL is a no-op. finish returns 1 when the request was still in flight at the deadline (a
 * transfer UCX cannot cancel, already handed to the network): the caller no longer
 * holds it, but UCX may still read or write its buffer until the endpoint is closed
 * (sc_ucx_abandon). The transport keeps it until UCX completes it (sc_ucx_orphans_poll),
 * at the latest until sc_ucx_close, which waits for it if its peer, world rank `world`
 * (-1 where unknown), can still answer. */
void sc_ucx_cancel_start(sc_transport_t *tp, void *req);
int sc_ucx_cancel_finish(sc_transport_t *tp, void *req, int world, double deadline);

/* Frees the requests sc_ucx_cancel_finish released unfinished that UCX completed since;
 * nonzero when one was. Caller holds tp->lock. */
int sc_ucx_orphans_poll(sc_transport_t *tp);

/* The first part of sc_ucx_cancel_finish: progresses until the request is done (then
 * freed; 0) or the deadline passes (1: the request stays, still in flight, for
 * sc_ucx_settled or sc_ucx_cancel_finish later). NULL is done. */
int sc_ucx_cancel_wait(sc_transport_t *tp, void *req, double deadline);

/* Whether a request is done, without progressing: then it is freed. */
int sc_ucx_settled(sc_transport_t *tp, void *req);

/* Closes the endpoint to world rank `world` by force, which ends every transfer still in
 * flight on it (so that UCX touches none of their buffers afterwards), and marks the
 * peer failed with why (unless it failed already): the transport's later operations
 * with it fail. For a transfer left in flight by a failed operation. UCX refuses the
 * forced close of a local endpoint (no failure handling: sc_ucx_connect): it is only
 * dropped from tp->eps, its transfers go on until the worker is destroyed (the memory
 * they use must be kept until then), and sc_ucx_close lets the copies they start end
 * first. */
void sc_ucx_abandon(sc_transport_t *tp, int world, const char *why);

/* How many operations ever left a transfer in flight when they failed (their memory is
 * kept until the worker is destroyed). An object that freed memory it handed to
 * collectives compares the count with the one it saw when it allocated that memory:
 * where it grew, a transfer of a failed collective may still write there. */
unsigned long sc_ucx_ops_left(sc_transport_t *tp);

/* Takes memory that a transfer left in flight may still write, of
 * sc_mem_alloc_on(device) or, for device -1, of malloc: freed (sc_mem_free_on) once the
 * worker is destroyed, never before. Without
 * memory for the note, the block is leaked rather than freed early. */
void sc_ucx_keep_block(sc_transport_t *tp, int device, void *ptr);

/* How many blocks sc_ucx_keep_block holds now (for the tests and the logs). */
unsigned long sc_ucx_kept_blocks(sc_transport_t *tp);

/* Progresses the worker once; nonzero when something happened. */
int sc_ucx_progress(sc_transport_t *tp);

/* Arms the worker for sleeping on tp->efd: SC_SUCCESS when armed, SC_IN_PROGRESS
 * when events are pending and the caller should progress instead. */
sc_status_t sc_ucx_arm(sc_transport_t *tp);

/* Marks local peers whose process is gone as failed; at most every 100 ms. Caller
 * holds tp->lock. */
void sc_ucx_check_local_peers(sc_transport_t *tp);

/* Nonzero when world rank w is a process on this node that is stopped (SIGSTOP, Ctrl-Z,
 * a debugger: /proc/PID/stat T or t): alive, so no endpoint fails, but silent. */
int sc_ucx_peer_stopped(const sc_transport_t *tp, int w);

/* Nonzero when world rank w is a process on this node that takes nothing now nor, but
 * for a stopped one resumed, ever: stopped, exited or killed. */
int sc_ucx_peer_silent(const sc_transport_t *tp, int w);

/* Prints the transports of each endpoint. */
void sc_ucx_print_transports(sc_transport_t *tp, const int *world_of, int n, FILE *out);

#endif
