/* Internal layout of communicators, their shared transport and requests. */
#ifndef SC_CORE_COMM_INTERNAL_H
#define SC_CORE_COMM_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <ucp/api/ucp.h>

#include "collectives/proto_choice.h"
#include "collectives/schedule.h"
#include "core/error.h"
#include "shardcomm/collectives.h"

#define SC_HOSTNAME_MAX 64

/* One UCX context and worker, endpoints to every world rank, and the progress
 * engine that drives every communicator created on them (the world communicator and
 * its splits). `lock` protects the worker, every queue and every op. */
typedef struct sc_transport {
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_ep_h *eps;              /* indexed by world rank */
    int world_rank;
    int world_size;
    int *node_of;               /* node index of each world rank */
    int *peer_pid;              /* process id of each world rank */
    double last_liveness_check;
    char (*peer_error)[160];    /* non-empty once a world rank's endpoint failed */
    double *peer_error_at;      /* when it failed (sc_clock_now) */
    unsigned char *ep_flags;    /* SC_EP_* of each world rank's endpoint */
    uint8_t *peer_left;         /* a world rank said it left (transport_leave.c) */
    void *leave_req;            /* the receive of the peers' leaving messages */
    uint32_t leave_in;
    int leave_told;             /* this rank's leaving was sent */
    void **leave_out;           /* its sends in flight, world_size at most */
    int leave_out_n;
    pthread_mutex_t lock;
    pthread_mutex_t done_mutex;
    pthread_cond_t done_cond;   /* broadcast when a request completes and someone sleeps */
    int done_sleepers;          /* atomic: callers sleeping on done_cond */
    int efd;                    /* UCX worker event descriptor */
    int wake_fd;                /* eventfd that wakes the progress thread */
    pthread_t thread;
    int thread_started;
    int stop;                   /* atomic */
    int sleeping;               /* atomic: the progress thread is in poll() */
    int active;                 /* atomic: ops queued or running, all comms */
    int waiters;                /* atomic: callers driving progress in sc_wait */
    int mbox_marked;            /* the progress thread marked its mailboxes sleeping
                                   before it slept, and they still are (under lock) */
    int marks_taken;            /* atomic: a caller that drives took those marks away
                                   from the sleeping thread (progress.c) */
    int caller_drove;           /* a caller drove a step since the progress thread last
                                   slept idle (under lock) */
    int arm_failed_told;        /* the progress thread said the worker could not be
                                   armed (its own, no lock) */
    int refs;                   /* communicators using this transport */
    struct sc_comm *comms;
    uint32_t next_ctx;          /* every context id below it has been used (comm_ctx.c) */
    uint64_t ctx_live[64];      /* context ids that live communicators hold, a bit each */
    uint32_t ctx_cursor;        /* the context id reused last */
    double spin_s;
    sc_proto_t proto;           /* eager or rendezvous for collectives' mid-size messages */
    int rescan;                 /* atomic: the next progress step must scan every op */
    int idle_steps;             /* steps since the last scan */
    int p2p_visit_all;          /* the next scans visit every point-to-point op (before
                                   the progress thread sleeps), not at most 64 */
    pthread_mutex_t pool_lock;  /* the pool of finished ops for reuse */
    struct sc_op *op_pool;
    int op_pool_len;
    struct sc_op *op_stuck;     /* ops a transfer may still touch: freed after the worker */
    struct sc_op *op_settling;  /* failed ops whose transfers still move, their requests
                                   not yet completed (progress_settle.c) */
    struct sc_ctx_drain *drains; /* context ids whose messages no call here takes (a
                                   broken communicator's failed calls, a peer's destroy,
                                   this rank's): dropped as they come (progress_settle.c) */
    int ndrains;
    int drain_turn;             /* the drained id the next scan of a busy transport
                                   looks at in turn (progress_settle.c) */
    double drains_end;          /* no drained id's drain ends before */
    struct sc_ucx_dropping *dropping; /* messages being received into scratch to be
                                   dropped (transport_ucx.c, sc_ucx_drop) */
    struct sc_ucx_orphan *orphans; /* requests released unfinished, until UCX completes
                                   them (transport_ucx.c, sc_ucx_cancel_finish) */
    unsigned long ops_left;     /* ops ever marked stuck, counted before their request
                                   completes (under pool_lock) */
    struct sc_kept_block *kept; /* callers' memory a transfer may still touch (under
                                   pool_lock): freed after the worker (sc_ucx_keep_block) */
    struct sc_shm_seg *shm_all; /* sc_mem_alloc's memory of all its communicators, which
                                   any of their calls holds (shm_segment.c's lock) */
} sc_transport_t;

/* An endpoint without UCX's failure handling (a peer on this node, through shared
 * memory): UCX refuses to close it by force. */
#define SC_EP_LOCAL 1
/* UCX failed the local endpoint (its peer closed its side or exited): a flush of it
 * fails. Remote endpoints' failures are peer_error. */
#define SC_EP_FAILED 2
/* The library's unload left its leaving message to a stopped peer of this node held in
 * the endpoint (the peer's FIFO full), its request released: a flush of it waits for a
 * peer that may never run again (sc_ucx_close then gave up after its 2 s). */
#define SC_EP_LEAVE_HELD 4

#define SC_CTL_TEXT 512

/* The kinds of refusal notices (progress_refusal.c): a rank refused its part of a
 * collective, or its send or receive, or issued one in its place after all. */
#define SC_CTL_REFUSED 1
#define SC_CTL_REISSUED 2
/* Not a refusal: the sender's reducer (number seq) was destroyed between iterations
 * (collectives/reducer_watch.h). */
#define SC_CTL_REDUCER_GONE 3
/* Not a refusal: the sender destroyed its communicator (progress_gone.h), after
 * collectives numbered below seq and its sends and receives counted in p2p_sends and
 * p2p_recvs (with the receiver). */
#define SC_CTL_COMM_GONE 4

/* What a refusal notice is about: a collective, or the sender's send or receive. */
#define SC_CTL_P2P_NONE 0
#define SC_CTL_P2P_SEND 1
#define SC_CTL_P2P_RECV 2

/* How long a collective (a send, a receive) that a peer refused waits, after it last
 * moved, for the peer to issue one in its place (at most SC_TIMEOUT). */
#define SC_REFUSAL_GRACE_S 3.0

typedef struct {
    int32_t status;
    int32_t refused;            /* SC_CTL_REFUSED, SC_CTL_REISSUED, SC_CTL_REDUCER_GONE,
                                   SC_CTL_COMM_GONE, or 0 (an abort notice, a wake-up) */
    int32_t p2p;                /* refusals: SC_CTL_P2P_* */
    int32_t src;                /* the sender's rank in the communicator */
    uint64_t seq;               /* abort notices: the first collective that fails;
                                   refusals: the collective, send or receive refused
                                   (sends and receives numbered per peer); a reducer
                                   destroyed: its number on the communicator; a
                                   communicator destroyed: its next collective's */
    uint64_t iters;             /* a reducer destroyed: the synced iterations it ended */
    uint64_t p2p_sends;         /* a communicator destroyed: its sends to the receiver */
    uint64_t p2p_recvs;         /* and its receives from it */
    char text[SC_CTL_TEXT];
} sc_ctl_msg_t;

struct sc_comm {
    sc_transport_t *tp;
    uint32_t ctx;               /* tag context id, unique among comms sharing tp */
    uint32_t gen;               /* the id's generation: 0 unless reused (comm_ctx.h) */
    int rank;
    int size;
    int local_rank;
    int local_size;
    int *world_of;              /* comm rank -> world rank */
    double timeout_s;
    sc_coll_op_t *head;              /* collectives, run one at a time in issue order */
    /* The size classes whose mid-size messages go eagerly: those this rank and its
     * neighbours all preferred in the last collective's headers, so that both ends of
     * an exchange use one protocol (mixed, a 2-rank all-gather ran at 0.55-0.6x of
     * either). Under tp->lock. */
    uint8_t proto_agreed;
    /* This communicator's collectives of each size class so far (sc_proto_choose): its
     * own count, the same on each of its ranks, where the transport's would also count
     * the ops of splits some of its ranks are not in. Under tp->lock. */
    uint32_t proto_ops[SC_PROTO_CLASSES];
    uint8_t *pair_hdr;          /* 2 ranks: the running collective's header buffers,
                                   received then sent, SC_OP_PAIR_HDR_BUF each */
    sc_coll_op_t *tail;
    sc_coll_op_t *p2p;               /* point-to-point ops, all active at once, a FIFO */
    sc_coll_op_t *p2p_tail;          /* the scan visits a bounded number per pass */
    size_t p2p_len;
    uint64_t seq;               /* next collective's sequence number */
    uint64_t *send_seq;         /* next point-to-point sequence number per peer */
    uint64_t *recv_seq;
    sc_status_t broken;         /* SC_SUCCESS while usable */
    char broken_text[SC_ERROR_MAX];
    uint64_t broken_seq;        /* once broken: collectives numbered below it may finish */
    sc_ctl_msg_t ctl_in;        /* control messages from peers (progress_ctl.c) */
    void *ctl_recv_req;
    struct sc_ctl_out *ctl_outs; /* notices in flight to the peers */
    /* A peer's refusal of collective #refusal_seq, the earliest one not yet finished
     * here: that op fails with refusal_text (sc_progress_refused). */
    int refusal_held;
    uint64_t refusal_seq;
    char refusal_text[SC_CTL_TEXT];
    /* This rank's last refusal: of collective #own_refusal_seq (the op it issues with
     * that number is marked refused_here), and what it told the peers. */
    int own_refusal;
    uint64_t own_refusal_seq;
    char own_refusal_text[SC_CTL_TEXT];
    /* Refusals of sends and receives, this rank's and its peers' (a few per peer that
     * refused one): progress_refusal.c. */
    struct sc_p2p_refusal *p2p_refusals;
    /* Peers that destroyed the communicator, per comm rank (NULL: none did): what they
     * had done with this rank (progress_gone.h), and the first collective one of them
     * never joins (UINT64_MAX: none). Under tp->lock. */
    struct sc_comm_gone *gone;
    uint64_t gone_seq;
    struct sc_device *dev;      /* device path state; NULL in host-only builds */
    struct sc_shm_seg *shm_segs; /* registered memory (sc_mem_alloc), newest first */
    uint32_t shm_next_id;       /* the last segment's id, equal on every rank */
    struct sc_mbox *mbox;       /* collective headers through shared memory; NULL: UCX */
    struct sc_shm_seg *stage;   /* staging segment (stage.h); NULL: none */
    size_t stage_bytes;         /* the size of each of its two areas */
    int holders;                /* objects that use it (reducers): destroy refuses */
    /* Reducers made on it (each one's number, the same on every rank) and the live
     * ones, whose peers' reducers may end between iterations (reducer_watch.h). Under
     * tp->lock. */
    uint32_t reducers_made;
    struct sc_reducer_watch *reducer_watches;
    int entered;                /* threads inside sc_comm_abort: destroy waits for them */
    /* The call a thread is issuing on it (its public name; NULL: none) and that thread,
     * so that another thread's call meanwhile is refused (sc_comm_issue_begin). issuing
     * is atomic: set under the registry's lock, cleared by that thread; issuer is only
     * read and written under the registry's lock. */
    const char *issuing;
    pthread_t issuer;
    pid_t owner_pid;            /* the process that created it (a fork's child may not use it) */
    struct sc_comm *next;       /* in tp->comms */
};

struct sc_request;

/* How a request that the progress engine does not complete is tested, waited on and
 * released: device requests complete with their stream work. */
typedef struct {
    sc_status_t (*test)(struct sc_request *req);
    sc_status_t (*wait)(struct sc_request *req);
    void (*release)(struct sc_request *req);  /* after completion; frees impl */
} sc_request_ops_t;

struct sc_request {
    sc_transport_t *tp;
    pid_t owner_pid;            /* the process that issued it (a fork's child may not wait) */
    int done;                   /* atomic */
    sc_status_t status;
    char text[SC_ERROR_MAX];
    const sc_request_ops_t *ops; /* NULL: completed by the progress engine */
    void *impl;                 /* the ops' state */
};

/* A pending request on tp, completed by ops (NULL: by the progress engine), issued by
 * this process. */
void sc_request_init(struct sc_request *req, sc_transport_t *tp, const sc_request_ops_t *ops,
                     void *impl);

/* Nonzero in a process forked from owner: what owner created there (a communicator, a
 * request) is driven by owner's threads and UCX state, which the child does not have. */
int sc_process_is_fork_of(pid_t owner);

/* SC_ERR_UNSUPPORTED with a sentence in a process forked (it or an ancestor) from one that
 * had live communicators then: UCX supports no use in it (openucx/ucx#4325), and a
 * transport created there hung now and then, in UCX's locks its threads held at the
 * fork. */
sc_status_t sc_registry_check_init_allowed(void);

/* An object that keeps using comm (a reducer) holds it from its creation to its
 * destruction; sc_comm_destroy refuses a held communicator, naming the holders, instead
 * of freeing memory they still read. */
void sc_comm_hold(sc_comm_t *comm);
void sc_comm_release(sc_comm_t *comm);

/* "rank r" of comm, for sentences; on a communicator whose numbering is not the
 * world's (a split), with the world rank beside it ("rank 1 (world rank 3)"), since
 * the sentence's "rank R: " prefix and scrun's "[R]" are world ranks. */
typedef struct {
    char s[48];
} sc_rank_name_t;

sc_rank_name_t sc_comm_rank_name(const sc_comm_t *comm, int r);

/* sc_comm_abort with the reason (a sentence, NULL: none) in what every rank's calls
 * then report: "rank R: the communicator was aborted: <why>". */
sc_status_t sc_comm_abort_why(sc_comm_t *comm, const char *why);

/* At the library's unload (dlclose, or exit) with comm live: aborts it here (calls other
 * threads still make fail, saying that this process unloaded the library or exited
 * without destroying it); the peers are not told so (sc_progress_unload tells them that
 * this rank left). 0, and nothing done, where the transport's
 * lock could not be taken by `until` (CLOCK_REALTIME): held by a thread that does not let
 * go, such as this one, interrupted inside the library by a signal whose handler calls
 * exit(). Caller has entered comm. */
int sc_comm_abort_at_unload(sc_comm_t *comm, const struct timespec *until);

/* The registry of live communicators (comm_registry.c): a destroyed or unknown handle
 * is refused without being dereferenced. */
sc_status_t sc_comm_check(const sc_comm_t *comm, const char *caller);

/* The part of sc_comm_check after the handle's: a communicator that failed is refused
 * with its failure's status and a sentence naming caller. */
sc_status_t sc_comm_check_usable(const sc_comm_t *comm, const char *caller);

/* sc_comm_check_handle for a call that issues on comm (a collective, a send or receive,
 * sc_mem_alloc, sc_mem_free, sc_comm_split, sc_comm_destroy, the sparse and compressed
 * all-reduces, sc_reducer_create, a synced sc_reducer_finalize) that also marks comm as
 * issued on by this thread (caller: the call's public name, a string that lives for
 * good), looked up and marked under the registry's lock, until sc_comm_issue_end: from
 * the call's entry until it is numbered and posted, for a blocking call until it
 * returns. Calls on one communicator come from one thread at a time: another thread's
 * call while the mark is set is SC_ERR_INVALID_ARG, naming both calls, and changes
 * nothing (no number taken, no peer told; the marking thread's call goes on). A call
 * the library makes inside another on the same thread (the allgathers of
 * sc_comm_split) passes, leaving the mark to the outer one: *claimed is 0 for it, 1 for
 * the call that set the mark. A destroy cannot free comm while the mark is another
 * thread's. On success the caller ends with sc_comm_issue_end(comm, *claimed), but for
 * an sc_comm_destroy that freed comm. */
sc_status_t sc_comm_issue_begin(sc_comm_t *comm, const char *caller, int *claimed);
void sc_comm_issue_end(sc_comm_t *comm, int claimed);

/* Adds a communicator to the registry (SC_ERR_NO_MEMORY with a sentence); removes one,
 * nonzero when it was there. */
sc_status_t sc_registry_add(const sc_comm_t *comm);
int sc_registry_remove(const sc_comm_t *comm);

/* As sc_comm_check, but a communicator that failed passes: for the local calls that
 * still work on it (destroy, abort, sc_mem_free). */
sc_status_t sc_comm_check_handle(const sc_comm_t *comm, const char *caller);

/* sc_comm_check_handle that also counts the caller in comm->entered, looked up and
 * counted under the registry's lock, for a call that another thread's sc_comm_destroy
 * may race (sc_comm_abort): the destroy takes comm out of the registry, then waits
 * until no caller is counted (sc_registry_wait_left) before it frees anything. On
 * success the caller ends with sc_comm_leave. */
sc_status_t sc_comm_enter(sc_comm_t *comm, const char *caller);
void sc_comm_leave(sc_comm_t *comm);
void sc_registry_wait_left(const sc_comm_t *comm);

#endif
