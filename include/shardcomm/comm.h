/* Communicators: creation from a configuration or the environment, split, abort. */
#ifndef SHARDCOMM_COMM_H
#define SHARDCOMM_COMM_H

#include <stddef.h>

#include "shardcomm/api.h"
#include "shardcomm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sc_comm sc_comm_t;

typedef enum {
    SC_BIND_DEFAULT = 0, /* from SC_BIND, else core */
    SC_BIND_CORE,        /* bind each local rank to its share of the cores */
    SC_BIND_NONE
} sc_bind_t;

/* Configuration of a communicator. Start from SC_COMM_CONFIG_INIT so that fields
 * added later keep their defaults. A field left at its "unset" value (-1, NULL, 0.0)
 * is read from the environment, then from the built-in default. Any other negative
 * value (a negative or NaN timeout_s too) is SC_ERR_INVALID_ARG naming the field, as
 * is a local_size larger than world_size. */
typedef struct {
    size_t size;                /* sizeof(sc_comm_config_t), set by the macro */
    int rank;                   /* -1: SC_RANK, RANK, OMPI_COMM_WORLD_RANK, PMI_RANK,
                                   SLURM_PROCID (one launcher's) */
    int world_size;             /* -1: SC_WORLD_SIZE, WORLD_SIZE, ... */
    int local_rank;             /* -1: SC_LOCAL_RANK, LOCAL_RANK, ...; else counted
                                   among the ranks with this host name */
    int local_size;             /* -1: SC_LOCAL_SIZE, LOCAL_WORLD_SIZE, ...; else counted */
    const char *master_addr;    /* NULL: SC_MASTER_ADDR, MASTER_ADDR, else 127.0.0.1 */
    int master_port;            /* -1: SC_MASTER_PORT, MASTER_PORT, else 29500 */
    double timeout_s;           /* 0: SC_TIMEOUT (seconds), else 300 */
    sc_bind_t bind;             /* SC_BIND_DEFAULT: SC_BIND (core|none), else core */
    int device;                 /* GPU for device buffers; -1: SC_DEVICE, else
                                   local rank modulo the number of GPUs */
} sc_comm_config_t;

#define SC_COMM_CONFIG_INIT                                                          \
    { sizeof(sc_comm_config_t), -1, -1, -1, -1, NULL, -1, 0.0, SC_BIND_DEFAULT, -1 }

/* Creates the world communicator: rendezvous through the TCP store served by rank 0,
 * exchange of UCX worker addresses, endpoints to every rank, CPU binding.
 * Collective over all world_size processes. Errors: SC_ERR_INVALID_ARG (config or
 * environment inconsistent), SC_ERR_MISMATCH (a setting every rank must share, such as
 * SC_CHUNK_BYTES or UCX_TLS, differs: on every rank, naming both values),
 * SC_ERR_UNSUPPORTED (a world of more than 65536 ranks), SC_ERR_TIMEOUT (ranks that
 * never arrived are listed, with the time waited), SC_ERR_PEER_FAILED (a rank whose
 * sc_comm_init failed before it joined, or that arrived at the rendezvous and exited or
 * was killed before the last rank arrived: named, on every rank), SC_ERR_TRANSPORT.
 * A process started again for a rank whose earlier process arrived and has exited takes
 * its place (docs/configuration.md). *comm is set only on success; the caller owns it
 * and releases it with sc_comm_destroy. A child process forked afterwards (a data loader's worker)
 * cannot use or destroy it: every call on it there is SC_ERR_INVALID_COMM (and so is
 * waiting for a request the parent had pending: collectives.h), and the parent's
 * communicator is untouched. Nor can that child (or its own forks) create a
 * communicator: UCX supports no use in a child forked while it is in use, where creating
 * the transport could hang, so sc_comm_init there is SC_ERR_UNSUPPORTED at once, naming
 * the parent; a process started by exec (Python multiprocessing's 'spawn'), or forked
 * after the parent destroyed all its communicators, may. A rank given without a
 * world size, or a world size above 1 without a rank (configuration or environment),
 * is SC_ERR_INVALID_ARG. */
SC_API sc_status_t sc_comm_init(const sc_comm_config_t *config, sc_comm_t **comm);

/* sc_comm_init with every field taken from the environment. */
SC_API sc_status_t sc_comm_init_from_env(sc_comm_t **comm);

/* Splits comm into disjoint communicators, one per color, ranked by (key, parent
 * rank). Collective over comm. A negative color returns *sub = NULL (the caller takes
 * part in no new communicator). The new communicator shares the parent's transport
 * and is destroyed independently. Splits of different communicators may run at once on
 * different threads (as any calls on different communicators); one entered while another
 * thread issues a call on comm is refused, as any call then (collectives.h, "Thread
 * safety"). At most 4095
 * communicators made by split live at once on the ranks of comm (the tag's context
 * ids; those of destroyed communicators are reused once 4095 have been used): beyond,
 * SC_ERR_UNSUPPORTED on every rank. */
SC_API sc_status_t sc_comm_split(sc_comm_t *comm, int color, int key, sc_comm_t **sub);

/* Waits for pending requests, then frees the communicator. Requests created on it
 * must be freed before or after; they keep their final status. Another thread may be
 * in sc_wait or sc_test on one of them meanwhile: it returns the request's status. A
 * communicator that a reducer still uses is refused with SC_ERR_INVALID_ARG (destroy
 * the reducer first) and stays as it was. Local call. Thread safety: no other call on
 * comm may run meanwhile on another thread, but for sc_wait, sc_test and sc_comm_abort
 * (which it waits for when that abort found comm live): a destroy entered while another
 * thread issues a call on comm is refused with SC_ERR_INVALID_ARG and leaves comm as it
 * was, and a call entered on another thread during the destroy is refused too
 * (SC_ERR_INVALID_ARG, or SC_ERR_INVALID_COMM once comm is gone; collectives.h,
 * "Thread safety").
 *
 * The peers are told, best effort (a control message, waited for at most 0.5 s, and not
 * at all for a peer of this node that is stopped or gone), which collectives and which
 * sends to and receives from each of them this rank joined: a peer that keeps the
 * communicator (this rank destroyed a split and lives on) fails every pending and
 * later call on it that needs this rank past those (a collective
 * after its last one, a send or receive with it past those it issued) at once with
 * SC_ERR_PEER_FAILED and a sentence naming this rank and its sc_comm_destroy, instead
 * of waiting SC_TIMEOUT. The communicator does not fail there: calls this rank
 * completed its part of still complete, and calls that need no such rank (sends and
 * receives among the other ranks, sc_info_print_transports) go on, and so does every
 * other communicator of the same sc_comm_init with this rank and among the peers: the
 * failed calls' transfers in flight settle (what was sent for them is received and
 * dropped, over TCP and from a peer of another node too) without closing the
 * connections they share, this rank's progress thread dropping them while it makes no
 * call; one not done within 5 s (a peer that stops taking them) still closes its
 * connection, as any failed call's does. Peers that destroy the communicator as well
 * see no error.
 *
 * A communicator never destroyed is aborted when the library is unloaded (dlclose) or
 * the process exits: its progress thread ends, and its peers are told that this rank
 * left (what it sent before still arrives there; their calls that need it fail with
 * SC_ERR_PEER_FAILED saying that its process unloaded the library or exited); its
 * memory is not freed. */
SC_API sc_status_t sc_comm_destroy(sc_comm_t *comm);

/* Marks the communicator aborted: pending and later calls fail with SC_ERR_ABORTED,
 * and peers are told so that their calls fail too. Never blocks: the pending calls'
 * transfers are cancelled and waited for 50 ms at most, all together, however many
 * calls are pending (and a closed connection's 1 s at most, below). The communicator
 * must still be destroyed. Any thread may call it, while another thread is in a call
 * on comm (sc_wait, a blocking collective: that call returns SC_ERR_ABORTED) or
 * destroys it (then the abort runs before the destroy frees anything, or finds comm
 * destroyed: SC_ERR_INVALID_COMM). The other communicators of the same sc_comm_init (its
 * parent, other splits) are not aborted, and the connections to the peers of this node
 * they share with it stay open: a large transfer the abort left in flight is finished
 * by the peer, which drops it, before the aborted call's request completes. Where a
 * peer does not take it within 5 s (a peer stopped, or one that never drives its
 * engine), and at once for a peer on another node (over TCP), the connection to that
 * peer is closed, and their later calls with that peer fail with SC_ERR_PEER_FAILED.
 * Not from a signal handler: it takes the communicator's locks (collectives.h,
 * "Signals"). */
SC_API sc_status_t sc_comm_abort(sc_comm_t *comm);

/* Rank, size, local rank and local size; -1 for a null or destroyed communicator. Any
 * thread, also while another destroys comm (then -1). */
SC_API int sc_comm_rank(const sc_comm_t *comm);
SC_API int sc_comm_size(const sc_comm_t *comm);
SC_API int sc_comm_local_rank(const sc_comm_t *comm);
SC_API int sc_comm_local_size(const sc_comm_t *comm);

#ifdef __cplusplus
}
#endif

#endif
