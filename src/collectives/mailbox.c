/* Header mailboxes (mailbox.h). Every rank's shared segment holds two inboxes, rings of
 * SC_MBOX_SLOTS slots: one its left ring neighbour writes, one its right neighbour
 * writes (with 2 ranks only the first). Collective seq's message goes to slot seq %
 * SC_MBOX_SLOTS. A slot's stamp says what it holds: 0 nothing yet, 2 (seq + 1) the
 * message of seq, 2 (seq + 1) + 1 that message read. The writer waits for the read mark
 * of the slot's previous message (seq - SC_MBOX_SLOTS), so that messages never overtake
 * or overwrite one another; the reader copies the message out before marking it read.
 * Every collective of the communicator from the opening on sends one message to each
 * neighbour, so that every slot is used in turn.
 *
 * A rank's progress thread that goes to sleep (on UCX's events) sets the sleeping flag
 * at the head of its segment before its last look at the inboxes; a writer that finds
 * the flag set after writing sends a control message through UCX, which wakes it
 * (both sides sequentially consistent: the sleeper sees the message, or the writer the
 * flag). A caller that drives progress clears it (progress.c). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/mailbox.h"
#include "collectives/schedule.h"
#include "collectives/shm_segment.h"
#include "collectives/transport_leave.h"
#include "collectives/transport_ucx.h"
#include "core/clock.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/tuning.h"

#define SC_MBOX_SLOTS 16

typedef struct {
    _Alignas(64) uint64_t stamp;
    uint64_t len;
    _Alignas(16) uint8_t data[SC_OP_PAIR_HDR_BUF];
} sc_mbox_slot_t;

/* The head of every rank's segment, before its two rings. */
typedef struct {
    _Alignas(64) uint32_t sleeping;
    /* SC_LEAVE_UNLOADED once the rank's library was unloaded with the communicator live:
     * its neighbours read it without any progress of the rank's (on a line of its own,
     * away from the sleeping flag the rank writes as it sleeps and wakes). */
    _Alignas(64) uint32_t left;
} sc_mbox_head_t;

struct sc_mbox {
    struct sc_shm_seg *seg;
    uint64_t first_seq;                         /* the first collective sent through it */
    sc_mbox_head_t *head;                       /* this rank's */
    sc_mbox_slot_t *in[2];                      /* from the left neighbour, from the right */
    /* What this rank writes: [0] its right neighbour's, [1] its left neighbour's. */
    sc_mbox_head_t *peer_head[2];
    sc_mbox_slot_t *out[2];
    void *wake_req[2];                          /* a wake-up in flight to that neighbour */
};

#define SC_MBOX_RING_BYTES (SC_MBOX_SLOTS * sizeof(sc_mbox_slot_t))
#define SC_MBOX_SEG_BYTES (sizeof(sc_mbox_head_t) + 2 * SC_MBOX_RING_BYTES)

/* A wake-up: a control message that says no failure. */
static const sc_ctl_msg_t sc_mbox_wake_msg = {.status = SC_SUCCESS};

static uint64_t sc_mbox_full(uint64_t seq)
{
    return 2 * (seq + 1);
}

/* Whether comm should have mailboxes; the same on every rank of comm. */
static int sc_mbox_wanted(const sc_comm_t *comm)
{
    const sc_tuning_t *t;

    return comm && comm->size >= 2 && comm->local_size == comm->size &&
           sc_tuning_get(&t) == SC_SUCCESS && t->local_mailbox;
}

/* Whether comm is on its transport's list, which the progress thread marks. Caller
 * holds tp->lock. */
static int sc_mbox_attached(const sc_comm_t *comm)
{
    for (const sc_comm_t *c = comm->tp->comms; c; c = c->next)
        if (c == comm)
            return 1;
    return 0;
}

/* comm's mailboxes in seg, shared by every rank of comm, described in mb. */
static void sc_mbox_install(sc_comm_t *comm, sc_mbox_t *mb, struct sc_shm_seg *seg)
{
    int left = (comm->rank + comm->size - 1) % comm->size;
    int right = (comm->rank + 1) % comm->size;

    mb->seg = seg;
    mb->first_seq = comm->seq;
    mb->head = sc_shm_seg_peer(seg, comm->rank);
    mb->in[0] = (sc_mbox_slot_t *)(mb->head + 1);
    mb->in[1] = mb->in[0] + SC_MBOX_SLOTS;
    /* This rank is its right neighbour's left (ring 0) and its left neighbour's right
     * (ring 1); with 2 ranks the one neighbour reads ring 0. */
    mb->peer_head[0] = sc_shm_seg_peer(seg, right);
    mb->peer_head[1] = sc_shm_seg_peer(seg, left);
    mb->out[0] = (sc_mbox_slot_t *)(mb->peer_head[0] + 1);
    mb->out[1] = (sc_mbox_slot_t *)(mb->peer_head[1] + 1) + (comm->size > 2 ? SC_MBOX_SLOTS : 0);
    /* The progress thread reads comm->mbox under the lock (sc_mbox_sleeping). A thread
     * asleep on its marks is woken by this communicator's headers too, where it is
     * attached (the world's); a split's is attached later, and marked then
     * (sc_comm_attach): marked here, a clear of the thread's before the attach passed
     * it by. */
    pthread_mutex_lock(&comm->tp->lock);
    comm->mbox = mb;
    if (comm->tp->mbox_marked && sc_mbox_attached(comm))
        sc_mbox_sleeping(comm, 1);
    pthread_mutex_unlock(&comm->tp->lock);
    sc_log(SC_LOG_DEBUG, "header mailboxes open from collective #%llu",
           (unsigned long long)mb->first_seq);
}

sc_status_t sc_mbox_open(sc_comm_t *via, sc_comm_t *comm)
{
    int want = sc_mbox_wanted(comm);
    struct sc_shm_seg *seg = NULL;
    sc_mbox_t *mb = want ? calloc(1, sizeof(*mb)) : NULL;
    sc_status_t st;

    st = sc_shm_seg_open_over(via, comm, want && mb ? SC_MBOX_SEG_BYTES : 0,
                              "header mailboxes", &seg);
    if (st == SC_SUCCESS && seg) {
        sc_mbox_install(comm, mb, seg);
        mb = NULL;
    }
    free(mb);
    return st;
}

void sc_mbox_close(sc_comm_t *comm)
{
    sc_mbox_t *mb;
    double deadline;

    if (!comm->mbox)
        return; /* also after the transport went with the last communicator */
    pthread_mutex_lock(&comm->tp->lock);
    mb = comm->mbox;
    comm->mbox = NULL;
    /* Both cancelled, then waited for once: a wake-up to a stopped neighbour whose FIFO
     * is full stays in flight (UCX cancels no send), and each was waited for in turn. */
    for (int d = 0; mb && d < 2; d++)
        sc_ucx_cancel_start(comm->tp, mb->wake_req[d]);
    deadline = sc_clock_now() + SC_UCX_CANCEL_WAIT_S;
    for (int d = 0; mb && d < 2; d++) {
        int q = (comm->rank + (d == 0 ? 1 : comm->size - 1)) % comm->size;
        sc_ucx_cancel_finish(comm->tp, mb->wake_req[d], comm->world_of[q], deadline);
    }
    pthread_mutex_unlock(&comm->tp->lock);
    if (!mb)
        return;
    sc_shm_seg_release(comm, mb->seg);
    free(mb);
}

void sc_mbox_sleeping(sc_comm_t *comm, int sleeping)
{
    __atomic_store_n(&comm->mbox->head->sleeping, (uint32_t)sleeping, __ATOMIC_SEQ_CST);
}

int sc_mbox_is_sleeping(const sc_comm_t *comm)
{
    return __atomic_load_n(&comm->mbox->head->sleeping, __ATOMIC_SEQ_CST) != 0;
}

void sc_mbox_mark_left(sc_comm_t *comm, uint32_t why)
{
    __atomic_store_n(&comm->mbox->head->left, why, __ATOMIC_RELEASE);
}

void sc_mbox_look_left(sc_comm_t *comm)
{
    const sc_mbox_t *mb = comm->mbox;
    int q[2] = {(comm->rank + 1) % comm->size, (comm->rank + comm->size - 1) % comm->size};

    for (int d = 0; d < 2; d++) {
        uint32_t why = __atomic_load_n(&mb->peer_head[d]->left, __ATOMIC_ACQUIRE);

        if (why)
            sc_leave_note(comm->tp, comm->world_of[q[d]], why);
    }
}

/* Sends neighbour d (0 right, 1 left) a wake-up unless one is still in flight. Best
 * effort: a neighbour that cannot be reached fails by other means. */
static void sc_mbox_wake(sc_comm_t *comm, int d, int q)
{
    sc_mbox_t *mb = comm->mbox;
    sc_transport_t *tp = comm->tp;

    if (mb->wake_req[d]) {
        if (sc_ucx_poll_send(tp, mb->wake_req[d]) == SC_IN_PROGRESS)
            return;
        mb->wake_req[d] = NULL;
    }
    if (sc_ucx_send(tp, comm->world_of[q], sc_progress_ctl_tag(comm, tp->world_rank),
                    &sc_mbox_wake_msg, sizeof(sc_mbox_wake_msg), &mb->wake_req[d]) != SC_SUCCESS)
        mb->wake_req[d] = NULL;
}

int sc_mbox_put(sc_comm_t *comm, int q, uint64_t seq, const void *buf, size_t len)
{
    const sc_mbox_t *mb = comm->mbox;
    int d = q == (comm->rank + 1) % comm->size ? 0 : 1;
    sc_mbox_slot_t *slot = &mb->out[d][seq % SC_MBOX_SLOTS];
    uint64_t before = seq >= mb->first_seq + SC_MBOX_SLOTS ? sc_mbox_full(seq - SC_MBOX_SLOTS) + 1
                                                           : 0;

    if (__atomic_load_n(&slot->stamp, __ATOMIC_ACQUIRE) != before)
        return 0;
    memcpy(slot->data, buf, len);
    slot->len = len;
    __atomic_store_n(&slot->stamp, sc_mbox_full(seq), __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&mb->peer_head[d]->sleeping, __ATOMIC_SEQ_CST))
        sc_mbox_wake(comm, d, q);
    return 1;
}

int sc_mbox_get(const sc_comm_t *comm, int q, uint64_t seq, void *dst, size_t cap,
                size_t *len)
{
    const sc_mbox_t *mb = comm->mbox;
    int from_left = q == (comm->rank + comm->size - 1) % comm->size;
    sc_mbox_slot_t *slot = &mb->in[from_left ? 0 : 1][seq % SC_MBOX_SLOTS];
    size_t n;

    if (__atomic_load_n(&slot->stamp, __ATOMIC_ACQUIRE) != sc_mbox_full(seq))
        return 0;
    n = slot->len < cap ? slot->len : cap;
    memcpy(dst, slot->data, n);
    *len = n;
    __atomic_store_n(&slot->stamp, sc_mbox_full(seq) + 1, __ATOMIC_RELEASE);
    return 1;
}
