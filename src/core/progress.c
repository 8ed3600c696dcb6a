/* The progress engine: a thread per transport, plus callers in sc_wait, advance the
 * head op of every communicator and all point-to-point ops; failures become errors on
 * every rank through abort notices. */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <errno.h>
#include <linux/membarrier.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collectives/mailbox.h"
#include "collectives/schedule_exec.h"
#include "collectives/transport_leave.h"
#include "collectives/transport_ucx.h"
#include "core/clock.h"
#include "core/fpenv.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/progress_gone.h"
#include "core/progress_refusal.h"
#include "core/progress_settle.h"
#include "core/unload_threads.h"

static void sc_request_complete(sc_transport_t *tp, struct sc_request *req, sc_status_t st,
                                const char *text)
{
    if (!req)
        return;
    req->status = st;
    if (st != SC_SUCCESS)
        snprintf(req->text, sizeof(req->text), "%s", text);
    /* A sleeper registers before it checks `done` again under done_mutex, so either
     * it sees done or it is counted here and woken. */
    __atomic_store_n(&req->done, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&tp->done_sleepers, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&tp->done_mutex);
        pthread_cond_broadcast(&tp->done_cond);
        pthread_mutex_unlock(&tp->done_mutex);
    }
}

void sc_progress_finish_op(sc_comm_t *c, sc_coll_op_t *op, sc_status_t st, const char *text)
{
    sc_op_unhold(op);
    sc_request_complete(c->tp, op->req, st, text);
    sc_op_destroy(op);
    __atomic_sub_fetch(&c->tp->active, 1, __ATOMIC_RELEASE);
}

static void sc_progress_p2p_append(sc_comm_t *c, sc_coll_op_t *op)
{
    op->next = NULL;
    if (c->p2p_tail)
        c->p2p_tail->next = op;
    else
        c->p2p = op;
    c->p2p_tail = op;
    c->p2p_len++;
}

static int sc_p2p_cut_fails(const sc_p2p_cut_t *cut, const sc_coll_op_t *op)
{
    if (op->hdr.root != cut->peer)
        return 0;
    if (op->hdr.kind == SC_COLL_RECV)
        return op->hdr.seq >= cut->recv_from;
    return op->hdr.kind == SC_COLL_SEND && op->hdr.seq >= cut->send_from;
}

/* Fails comm's queued collectives numbered from colls on and its point-to-point ops
 * that cut names (every one when cut is NULL), all together: their transfers are
 * cancelled and waited for once, and settle where the peers are alive
 * (sc_settle_fail_ops). Caller holds tp->lock. */
static void sc_progress_fail_queued(sc_comm_t *c, uint64_t colls, const sc_p2p_cut_t *cut,
                                    sc_status_t st, const char *text, int alive)
{
    sc_coll_op_t **pp = &c->head, *kept = NULL, *p2p = c->p2p, *failed, **failed_end;

    /* The queue is in issue order: the ops before the first failing one stay. */
    while (*pp && (*pp)->hdr.seq < colls) {
        kept = *pp;
        pp = &kept->next;
    }
    c->tail = kept;
    failed = *pp;
    *pp = NULL;
    failed_end = &failed;
    while (*failed_end)
        failed_end = &(*failed_end)->next;
    c->p2p = c->p2p_tail = NULL;
    c->p2p_len = 0;
    while (p2p) {
        sc_coll_op_t *op = p2p;
        p2p = op->next;
        if (cut && !sc_p2p_cut_fails(cut, op)) {
            sc_progress_p2p_append(c, op);
            continue;
        }
        op->next = NULL;
        *failed_end = op;
        failed_end = &op->next;
    }
    sc_settle_fail_ops(c, failed, st, text, alive);
}

void sc_progress_fail_comm(sc_comm_t *c, sc_status_t st, const char *text, int notify,
                           uint64_t seq)
{
    if (c->broken == SC_SUCCESS) {
        /* The sentence first: readers that skip tp->lock look at `broken` alone. */
        snprintf(c->broken_text, sizeof(c->broken_text), "%s", text);
        __atomic_store_n(&c->broken_seq, seq, __ATOMIC_RELAXED);
        __atomic_store_n(&c->broken, st, __ATOMIC_RELEASE);
        sc_log(SC_LOG_INFO, "communicator failed: %s", text);
        if (notify && c->size > 1)
            sc_progress_notify(c, st, seq, 0, text);
    } else if (seq < c->broken_seq) {
        __atomic_store_n(&c->broken_seq, seq, __ATOMIC_RELAXED); /* an earlier one too */
    }
    /* What the peers sent or will send for the failed calls: dropped as it comes, so
     * that their transfers end without closing the connections. */
    if (c->size > 1)
        sc_settle_drain_from(c->tp, c->ctx, c->broken_seq, 1, 0);
    sc_progress_fail_queued(c, c->broken_seq, NULL, st, text, sc_settle_peers_alive(st));
}

void sc_progress_fail_stranded(sc_comm_t *c, uint64_t colls, const sc_p2p_cut_t *cut,
                               const char *text)
{
    /* The other ranks' messages for those collectives too, each of them failing its
     * own as the notice reaches it: their transfers end without closing the
     * connections, which the world and every split share. Their sends and receives
     * go on. */
    sc_settle_drain_from(c->tp, c->ctx, colls, 0, 1);
    /* The peer that left lives on and drops what this rank sent it (progress_gone.c),
     * from another node too. */
    sc_progress_fail_queued(c, colls, cut, SC_ERR_PEER_FAILED, text, SC_SETTLE_ALL);
}

/* Advances op; a failure fails the whole communicator, op included, with the
 * sentence the failing step set. Returns SC_IN_PROGRESS, SC_SUCCESS (the caller
 * unlinks and finishes op) or the error. Caller holds tp->lock. */
static sc_status_t sc_progress_advance(sc_comm_t *c, sc_coll_op_t *op, int *progressed)
{
    int moved = 0;
    sc_status_t st = sc_op_advance(op, &moved);

    *progressed |= moved;
    if (st != SC_SUCCESS && st != SC_IN_PROGRESS) {
        char text[SC_ERROR_MAX];
        snprintf(text, sizeof(text), "%s", sc_last_error());
        /* A mismatch spares the collectives issued before it (a send's or a receive's:
         * those queued before it on this rank), which every rank can finish: a rank
         * behind in one that its peers finished completes it as they did. Any other
         * failure (a dead peer, a timeout) may stall them too: it fails everything. */
        int p2p = op->hdr.kind == SC_COLL_SEND || op->hdr.kind == SC_COLL_RECV;
        uint64_t spare = st != SC_ERR_MISMATCH ? 0 : p2p ? op->colls_before : op->hdr.seq;

        sc_progress_fail_comm(c, st, text, 1, spare);
    }
    return st;
}

/* Ops larger than this wake the progress thread when queued. */
#define SC_PROGRESS_WAKE_BYTES (64 * 1024)

/* Idle steps between full scans when UCX reports nothing: deadlines and dead peers
 * are noticed within this many steps. */
#define SC_PROGRESS_IDLE_SCAN 128

/* Point-to-point ops advanced per scan, at most: with many in flight, each is
 * visited every p2p_len / SC_PROGRESS_P2P_VISITS scans, so that posting and waiting
 * for N of them costs O(N), not O(N^2). */
#define SC_PROGRESS_P2P_VISITS 64

/* Advances op, out of the list: done, it finishes; still moving, it joins the list's
 * end; failed, the failure (which emptied the list) ends it too. Nonzero on failure.
 * Caller holds tp->lock. */
static int sc_progress_p2p_one(sc_comm_t *c, sc_coll_op_t *op, int *progressed)
{
    sc_status_t st = sc_progress_advance(c, op, progressed);
    char text[SC_ERROR_MAX];

    if (st == SC_IN_PROGRESS) {
        sc_progress_p2p_append(c, op);
        return 0;
    }
    *progressed = 1;
    if (st == SC_SUCCESS) {
        sc_progress_finish_op(c, op, SC_SUCCESS, NULL);
        return 0;
    }
    snprintf(text, sizeof(text), "%s", c->broken_text);
    st = c->broken != SC_SUCCESS ? c->broken : st;
    op->next = NULL;
    sc_settle_fail_ops(c, op, st, text, sc_settle_peers_alive(st));
    return 1;
}

/* Advances the point-to-point ops at the front of the list, each once (all of them
 * when the transport asks for it). */
static void sc_progress_p2p(sc_comm_t *c, int *progressed)
{
    size_t visits = c->p2p_len < SC_PROGRESS_P2P_VISITS || c->tp->p2p_visit_all
                        ? c->p2p_len
                        : SC_PROGRESS_P2P_VISITS;

    for (size_t i = 0; i < visits && c->p2p; i++) {
        sc_coll_op_t *op = c->p2p;

        c->p2p = op->next;
        if (!c->p2p)
            c->p2p_tail = NULL;
        c->p2p_len--;
        if (sc_progress_p2p_one(c, op, progressed))
            return;
    }
}

/* Advances every queued op of every communicator, starting those first in line, and
 * looks for dead local peers; nonzero when something moved (or progressed was set: UCX
 * delivered something just before). Caller holds tp->lock. */
static int sc_progress_scan(sc_transport_t *tp, int progressed)
{
    /* The reductions and scalings the ops run, in the library's floating-point
     * environment whichever thread drives them (fpenv.h). */
    sc_fpenv_t fe = sc_fpenv_enter();

    tp->idle_steps = 0;
    /* Cleared before the scan: a request for another one made meanwhile survives. */
    __atomic_store_n(&tp->rescan, 0, __ATOMIC_RELAXED);
    sc_ucx_check_local_peers(tp);
    if (tp->op_settling || tp->ndrains || tp->dropping || tp->orphans)
        progressed |= sc_settle_poll(tp);
    for (sc_comm_t *c = tp->comms; c; c = c->next) {
        if (c->mbox)
            sc_mbox_look_left(c);
        progressed |= sc_progress_ctl(c);
        while (c->head) {
            sc_coll_op_t *op = c->head;
            if (sc_progress_advance(c, op, &progressed) != SC_SUCCESS)
                break;
            c->head = op->next;
            if (!c->head)
                c->tail = NULL;
            sc_progress_finish_op(c, op, SC_SUCCESS, NULL);
            progressed = 1;
        }
        sc_progress_p2p(c, &progressed);
    }
    if (progressed)
        __atomic_store_n(&tp->rescan, 1, __ATOMIC_RELAXED);
    sc_fpenv_leave(fe);
    return progressed;
}

static int sc_progress_step(sc_transport_t *tp)
{
    int progressed = 0;

    /* Drain what peers already delivered before judging any peer dead (bounded, so
     * that a flood of messages cannot keep the caller here). */
    for (int i = 0; i < 64 && sc_ucx_progress(tp) > 0; i++)
        progressed = 1;

    /* Nothing can have changed when UCX processed no event and the last scan moved
     * nothing: skip the scan, the hot loop of a waiting caller stays short. */
    if (!progressed && !__atomic_load_n(&tp->rescan, __ATOMIC_RELAXED) &&
        ++tp->idle_steps < SC_PROGRESS_IDLE_SCAN)
        return 0;
    return sc_progress_scan(tp, progressed);
}

static inline void sc_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Idle spinning of a driver (the progress thread or a waiting caller): pure spinning
 * for the first iterations (a yield is a system call, and a peer's answer often comes
 * sooner), then yielding so that oversubscribed ranks share the cores, until spin_s
 * has passed. The clock is read every few iterations only: it is slow in a VM. */
typedef struct {
    unsigned n;
    double since;
} sc_spin_t;

#define SC_SPIN_PURE 64
#define SC_SPIN_CLOCK_EVERY 16

static void sc_spin_reset(sc_spin_t *spin)
{
    spin->n = 0;
    spin->since = -1.0;
}

/* Nonzero while the driver should keep spinning; 0 once it should sleep. */
static int sc_spin_continue(sc_spin_t *spin, double spin_s)
{
    spin->n++;
    if (spin->n % SC_SPIN_CLOCK_EVERY == 0) {
        double now = sc_clock_now();
        if (spin->since < 0)
            spin->since = now;
        else if (now - spin->since >= spin_s)
            return 0;
    }
    if (spin->n < SC_SPIN_PURE)
        sc_cpu_relax();
    else
        sched_yield();
    return 1;
}

/* Writes the progress thread's wake eventfd: its poll, now or next, returns at once. */
static void sc_progress_wake_fd(sc_transport_t *tp)
{
    uint64_t one = 1;

    (void)!write(tp->wake_fd, &one, sizeof(one));
}

static void sc_progress_wake(sc_transport_t *tp)
{
    if (__atomic_load_n(&tp->sleeping, __ATOMIC_SEQ_CST))
        sc_progress_wake_fd(tp);
}

/* Marks every mailbox of the transport's communicators as that of a sleeping rank, or
 * no more (a mailbox opened meanwhile is marked as it opens). Caller holds tp->lock. */
static void sc_progress_mbox_sleeping(sc_transport_t *tp, int sleeping)
{
    tp->mbox_marked = sleeping;
    for (sc_comm_t *c = tp->comms; c; c = c->next)
        if (c->mbox)
            sc_mbox_sleeping(c, sleeping);
}

/* A caller drives a step. The marks are the progress thread's, set before it sleeps
 * and cleared when it wakes; a caller that drives takes them away at each of its steps:
 * while it drove, a neighbour that found them sent a wake-up through UCX with every
 * header it wrote, and the thread, woken, waited for the lock the caller held to clear
 * them (hundreds to thousands of wake-ups in a loop of blocking 8-byte allreduces,
 * 78b79f9). The thread then sleeps on without them: marks_taken says so, and the caller
 * that stops driving, or queues an op it does not wait for, wakes it
 * (sc_progress_hand_over). And the thread's next sleep with nothing queued is not marked
 * (caller_drove): in a loop of calls waited for, a thread that marked whenever it found
 * nothing queued between two of them had its marks taken and was woken again at every
 * call. Caller holds tp->lock. */
static void sc_progress_marks_take(sc_transport_t *tp)
{
    tp->caller_drove = 1;
    if (!tp->mbox_marked)
        return;
    sc_progress_mbox_sleeping(tp, 0);
    __atomic_store_n(&tp->marks_taken, 1, __ATOMIC_SEQ_CST);
}

/* Ops are queued and no caller drives them (a caller stopped driving, or queued an op
 * it does not wait for): the progress thread must, and is woken where it sleeps on
 * marks a caller took, once per take (an eventfd written while the thread is not yet in
 * poll() ends its next poll at once); with any, wherever it sleeps. */
static void sc_progress_hand_over(sc_transport_t *tp, int any)
{
    if (__atomic_load_n(&tp->active, __ATOMIC_SEQ_CST) == 0 ||
        __atomic_load_n(&tp->waiters, __ATOMIC_SEQ_CST) > 0)
        return;
    if (__atomic_load_n(&tp->marks_taken, __ATOMIC_SEQ_CST) &&
        __atomic_exchange_n(&tp->marks_taken, 0, __ATOMIC_SEQ_CST))
        sc_progress_wake_fd(tp);
    else if (any)
        sc_progress_wake(tp);
}

void sc_progress_enqueue(sc_comm_t *c, sc_coll_op_t *op, struct sc_request *req,
                         int caller_waits)
{
    sc_transport_t *tp = c->tp;
    int first, refused = 1,
        big = op->hdr.count * sc_dtype_size(op->dtype) > SC_PROGRESS_WAKE_BYTES;

    op->req = req;
    __atomic_add_fetch(&tp->active, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&tp->lock);
    /* A caller about to drive takes the marks before its header goes out, so that its
     * neighbours' answers send no wake-up. */
    if (caller_waits)
        sc_progress_marks_take(tp);
    /* Numbered under the lock that queues it: calls from two threads (which the API
     * forbids on one communicator) then at least queue in the order of their numbers,
     * instead of an op waiting behind a later one until the timeout. */
    op->hdr.seq = op->hdr.kind == SC_COLL_SEND   ? c->send_seq[op->hdr.root]++
                  : op->hdr.kind == SC_COLL_RECV ? c->recv_seq[op->hdr.root]++
                                                 : c->seq++;
    sc_progress_refusal_mark(c, op);
    /* Refused once broken, unless a peer broke it at a later collective than this one. */
    if (c->broken != SC_SUCCESS &&
        (op->hdr.kind == SC_COLL_SEND || op->hdr.kind == SC_COLL_RECV ||
         op->hdr.seq >= c->broken_seq)) {
        char text[SC_ERROR_MAX];
        snprintf(text, sizeof(text), "%s", c->broken_text);
        sc_progress_finish_op(c, op, c->broken, text);
        goto queued;
    }
    /* A call that needs a peer which destroyed the communicator before joining it. */
    if (c->gone) {
        char text[SC_ERROR_MAX];
        if (sc_progress_gone_strands(c, op, text, sizeof(text))) {
            sc_progress_finish_op(c, op, SC_ERR_PEER_FAILED, text);
            goto queued;
        }
    }
    if (op->hdr.kind == SC_COLL_SEND || op->hdr.kind == SC_COLL_RECV) {
        op->colls_before = c->seq;
        /* Posted at once, and alone (a full scan per call made posting N of them
         * cost O(N^2)). */
        int moved = 0;

        sc_progress_p2p_one(c, op, &moved);
        first = 0;
    } else {
        op->next = NULL;
        first = (c->head == NULL);
        if (c->tail)
            c->tail->next = op;
        else
            c->head = op;
        c->tail = op;
    }
    __atomic_store_n(&tp->rescan, 1, __ATOMIC_RELAXED);
    /* Posting the first sends now saves the peers a round trip. The scan alone gets
     * them out sooner: the next step drains UCX, and a peer's failure counts only a
     * grace time after it was seen, so nothing is judged on undrained news. */
    if (first)
        sc_progress_scan(tp, 0);
    refused = 0;
queued:
    pthread_mutex_unlock(&tp->lock);
    /* The thread sleeps on UCX events and on its mailboxes' marks, and wakes when a
     * peer answers; a large op is worth an explicit wake so that its pipeline starts at
     * once. A small one, most often waited on right away, is not worth the system call
     * and the thread's trip through a busy core, unless a caller took the thread's
     * marks: then no neighbour's header would wake it. A caller about to wait whose op
     * is already done here (refused, or its neighbours' headers were in the inbox) took
     * the marks too, and its sc_wait returns at once without handing over: ops it did
     * not wait for, queued before, had no header wake the thread until its sleep ended
     * (up to 100 ms). */
    if (!caller_waits && !refused)
        sc_progress_hand_over(tp, big);
    else if (caller_waits && __atomic_load_n(&req->done, __ATOMIC_SEQ_CST))
        sc_progress_hand_over(tp, 0);
}

/* The progress thread has nothing to drive: no op, or a caller drives. */
static int sc_progress_thread_idle(sc_transport_t *tp)
{
    return __atomic_load_n(&tp->active, __ATOMIC_SEQ_CST) == 0 ||
           __atomic_load_n(&tp->waiters, __ATOMIC_SEQ_CST) > 0;
}

/* How the progress thread sleeps: the thread drives (or nothing is queued) and no
 * caller waits, on UCX's events (armed) or, where the worker could not be armed, on a
 * timer alone; or a caller drives. */
typedef enum {
    SC_SLEEP_ARMED,
    SC_SLEEP_UNARMED,
    SC_SLEEP_CALLER_DRIVES
} sc_sleep_t;

/* How long the thread sleeps where the worker could not be armed: UCX's event
 * descriptor then says nothing (it may stay readable, or never become so), so the
 * thread looks at UCX this often instead; each look costs an idle rank a few
 * microseconds of CPU. */
#define SC_PROGRESS_UNARMED_MS 2

/* Sleeps on the wake eventfd, and on the UCX event descriptor when armed, for at
 * most timeout_ms. `sleeping` is published before the reason to sleep is checked
 * again, and wakers change that reason before reading `sleeping` (both sequentially
 * consistent), so a wake-up is never lost between the check and poll(). */
static void sc_progress_sleep(sc_transport_t *tp, sc_sleep_t how, int timeout_ms)
{
    struct pollfd fds[2] = {{tp->wake_fd, POLLIN, 0}, {tp->efd, POLLIN, 0}};
    int still;

    __atomic_store_n(&tp->sleeping, 1, __ATOMIC_SEQ_CST);
    if (how == SC_SLEEP_CALLER_DRIVES)
        still = sc_progress_thread_idle(tp);
    else
        still = __atomic_load_n(&tp->waiters, __ATOMIC_SEQ_CST) == 0;
    if (still)
        poll(fds, how == SC_SLEEP_ARMED ? 2 : 1, timeout_ms);
    __atomic_store_n(&tp->sleeping, 0, __ATOMIC_SEQ_CST);
    if (fds[0].revents & POLLIN) {
        uint64_t v;
        (void)!read(tp->wake_fd, &v, sizeof(v));
    }
}

/* The sleep after an arm that failed (UCX's sentence in sc_last_error): said once per
 * transport, at WARN. The thread sleeps on a timer instead of UCX's events: an arm
 * that fails now and then costs a look at UCX sooner, one that always fails (a
 * transport whose events cannot be requested) makes the thread poll; either way it
 * never spins (an idle thread that armed again at once took a core for as long as the
 * arm failed) and still moves what comes. */
static void sc_progress_sleep_unarmed(sc_transport_t *tp, int timeout_ms)
{
    if (!tp->arm_failed_told) {
        tp->arm_failed_told = 1;
        sc_log(SC_LOG_WARN, "%s; the progress thread looks at UCX every %d ms instead of "
               "sleeping until it has an event (said once)", sc_error_text_unprefixed(),
               timeout_ms);
    }
    sc_progress_sleep(tp, SC_SLEEP_UNARMED, timeout_ms);
}

/* One progress step unless another thread holds the lock; then whether to go on
 * spinning: after progress (the spin starts over) or while the spin lasts. caller: a
 * caller in sc_wait drives (it takes the thread's marks), not the progress thread, whose
 * marks are gone once it wakes and whose driving is no caller's: counted as one, it made
 * the thread's next idle sleep after every op it drove unmarked, and a small op posted
 * without a wait within it waited up to 20 ms. */
static int sc_progress_spin_step(sc_transport_t *tp, sc_spin_t *spin, int caller)
{
    int progressed = 0;

    if (pthread_mutex_trylock(&tp->lock) == 0) {
        if (caller)
            sc_progress_marks_take(tp);
        progressed = sc_progress_step(tp);
        pthread_mutex_unlock(&tp->lock);
    }
    if (progressed) {
        sc_spin_reset(spin);
        return 1;
    }
    return sc_spin_continue(spin, tp->spin_s);
}

/* How often the progress thread, waiting for tp->lock, looks at its stop flag. */
#define SC_PROGRESS_LOCK_LOOK_NS 100000000L

/* The progress thread's take of tp->lock: 0, without it, once the thread is asked to
 * stop. The library's unload ends the thread even where another thread holds the lock
 * for ever (a signal handler that exits or unloads inside the library), and a thread
 * blocked in pthread_mutex_lock could not be joined. The stop flag is looked at only
 * after a whole wait failed: a lock held a moment as the thread is asked to stop (a
 * caller's progress step) is taken, as pthread_mutex_lock did, and the thread's turn
 * ends as usual (its mailboxes no longer marked sleeping). */
static int sc_progress_thread_lock(sc_transport_t *tp)
{
    for (;;) {
        struct timespec until = sc_clock_realtime_after(SC_PROGRESS_LOCK_LOOK_NS);

        if (pthread_mutex_timedlock(&tp->lock, &until) == 0)
            return 1;
        if (__atomic_load_n(&tp->stop, __ATOMIC_ACQUIRE))
            return 0;
    }
}

/* The progress thread's sleep once it marked its mailboxes sleeping and armed the
 * worker (st: sc_ucx_arm's, or SC_IN_PROGRESS where a step moved something, then no
 * sleep): on UCX's events for at most timeout_ms, or after a failed arm on a timer;
 * then the marks are cleared, and none taken by a caller are owed a wake-up any more
 * (the thread is awake). 0, the marks left, where the thread is to stop without the
 * lock (sc_progress_thread_lock). */
static int sc_progress_thread_nap(sc_transport_t *tp, sc_status_t st, int timeout_ms)
{
    if (st == SC_SUCCESS)
        sc_progress_sleep(tp, SC_SLEEP_ARMED, timeout_ms);
    else if (st != SC_IN_PROGRESS)
        sc_progress_sleep_unarmed(tp, SC_PROGRESS_UNARMED_MS);
    if (!sc_progress_thread_lock(tp))
        return 0;
    sc_progress_mbox_sleeping(tp, 0);
    __atomic_store_n(&tp->marks_taken, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&tp->lock);
    return 1;
}

/* The background driver: runs queued ops while no caller is waiting on one (a waiting
 * caller drives progress itself, so the two never compete for a core). */
static void *sc_progress_thread(void *arg)
{
    sc_transport_t *tp = arg;
    sc_spin_t spin;

    sc_fpenv_own_thread(); /* created by sc_comm_init's caller, whose modes it inherited */
    sc_spin_reset(&spin);

    while (!__atomic_load_n(&tp->stop, __ATOMIC_ACQUIRE)) {
        int active = __atomic_load_n(&tp->active, __ATOMIC_SEQ_CST), quiet;
        sc_status_t st;

        /* A caller still in sc_wait with nothing queued (its op just done, the caller
         * not yet back on a core) drives: the thread sleeps as while it drives. Here it
         * went round without sleeping (a sleep on UCX's events skips poll() while a
         * caller waits), thousands of times in a run of sc-bench, marking its mailboxes
         * each time. */
        if (!active && !__atomic_load_n(&tp->waiters, __ATOMIC_SEQ_CST)) {
            /* Nothing queued: sleep on UCX events too, so that an op queued by a
             * caller who does not wait is driven as soon as a peer answers, without
             * that caller having to wake this thread. */
            if (!sc_progress_thread_lock(tp))
                break;
            /* Marked sleeping before anything here looks at the inboxes: an op of 64
             * KiB or less queued by a caller who does not wait wakes no one, and its
             * neighbours' headers, which fill the inbox without a UCX event, sat there
             * until this sleep ended (up to 100 ms). An op queued before the mark is
             * seen by the step below. Where a caller drove since the last such sleep
             * (a loop of calls it waits for), unmarked and for 20 ms, as while a
             * caller drives: marks it would take at its next call. */
            quiet = !tp->caller_drove;
            if (quiet)
                sc_progress_mbox_sleeping(tp, 1);
            /* What woke the last sleep is taken first: UCX 1.13's TCP transport arms
             * nothing (its sockets wait in the worker's event set, level-triggered),
             * so ucp_worker_arm reports a socket no progress call has read as armed,
             * and poll returned at once for it, again and again, until the rank's next
             * call: a core spun and nothing moved (a rendezvous this rank drops, a
             * peer's notice, UCX's keepalive). */
            sc_progress_step(tp);
            st = sc_ucx_arm(tp);
            if (st == SC_IN_PROGRESS)
                sc_progress_step(tp);
            /* The caller's drive is forgotten only by a pass that sleeps: one that
             * found UCX busy goes round again at once, and would have slept its next
             * pass marked for 100 ms, the marks taken and the thread woken at the
             * caller's next call (a loop of waited calls with UCX traffic). */
            if (st != SC_IN_PROGRESS)
                tp->caller_drove = 0;
            pthread_mutex_unlock(&tp->lock);
            if (!sc_progress_thread_nap(tp, st, quiet ? 100 : 20))
                break;
            sc_spin_reset(&spin);
            continue;
        }
        if (sc_progress_thread_idle(tp)) {
            /* A caller drives; the timeout only bounds how late it is noticed that
             * the caller stopped without telling. */
            sc_progress_sleep(tp, SC_SLEEP_CALLER_DRIVES, 20);
            sc_spin_reset(&spin);
            continue;
        }
        if (sc_progress_spin_step(tp, &spin, 0))
            continue;
        /* One full scan (a completion UCX did not count as an event is seen there;
         * every point-to-point op visited, not the usual 64), then sleep until UCX
         * has an event, an op is queued, or a deadline may pass; and scan again on
         * waking. */
        if (!sc_progress_thread_lock(tp))
            break;
        __atomic_store_n(&tp->rescan, 1, __ATOMIC_RELAXED);
        /* Neighbours that write into a mailbox from here on send a wake-up too; what
         * they wrote before, the scan sees. */
        sc_progress_mbox_sleeping(tp, 1);
        tp->p2p_visit_all = 1;
        st = sc_progress_step(tp) ? SC_IN_PROGRESS : sc_ucx_arm(tp);
        tp->p2p_visit_all = 0;
        pthread_mutex_unlock(&tp->lock);
        if (!sc_progress_thread_nap(tp, st, 20))
            break;
        __atomic_store_n(&tp->rescan, 1, __ATOMIC_RELAXED);
        sc_spin_reset(&spin);
    }
    return NULL;
}

sc_status_t sc_progress_start(sc_transport_t *tp)
{
    int rc;

    tp->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (tp->wake_fd < 0)
        return sc_error(SC_ERR_SYSTEM, "eventfd for the progress thread failed: %s",
                        strerror(errno));
    rc = pthread_create(&tp->thread, NULL, sc_progress_thread, tp);
    if (rc != 0) {
        close(tp->wake_fd);
        tp->wake_fd = -1;
        return sc_error(SC_ERR_SYSTEM, "progress thread could not start: %s", strerror(rc));
    }
    tp->thread_started = 1;
    return SC_SUCCESS;
}

/* Asks the progress thread to stop and wakes it. */
static void sc_progress_ask_stop(sc_transport_t *tp)
{
    __atomic_store_n(&tp->stop, 1, __ATOMIC_RELEASE);
    sc_progress_wake_fd(tp);
}

/* Ends the progress thread; its eventfd stays open (callers in sc_wait write to it). */
static void sc_progress_join(sc_transport_t *tp)
{
    if (!tp->thread_started)
        return;
    sc_progress_ask_stop(tp);
    pthread_join(tp->thread, NULL);
    tp->thread_started = 0;
}

void sc_progress_stop(sc_transport_t *tp)
{
    sc_progress_join(tp);
    if (tp->wake_fd >= 0)
        close(tp->wake_fd);
    tp->wake_fd = -1;
}

void sc_progress_unload(sc_transport_t *tp, double timeout_s)
{
    double deadline = sc_clock_now() + timeout_s;

    sc_progress_join(tp);
    pthread_mutex_lock(&tp->lock);
    for (sc_comm_t *c = tp->comms; c; c = c->next)
        if (c->mbox)
            sc_mbox_mark_left(c, SC_LEAVE_UNLOADED);
    sc_leave_tell(tp, SC_LEAVE_UNLOADED);
    pthread_mutex_unlock(&tp->lock);
    for (;;) {
        int sent;

        pthread_mutex_lock(&tp->lock);
        sc_ucx_progress(tp);
        sent = sc_leave_sent(tp);
        pthread_mutex_unlock(&tp->lock);
        if (sent || sc_clock_now() >= deadline)
            break;
        sched_yield();
    }
    /* The aborted calls still settling (a transfer in flight with a peer of this node,
     * waited for up to SC_OP_SETTLE_S) are given up on now, as at a communicator's
     * teardown: a thread of the library that waits for one (a reducer's finisher in
     * sc_wait) outlasted the unload's bound for the library's threads and ran on in the
     * unmapped code after dlclose. Their connections close after the leaving message. */
    pthread_mutex_lock(&tp->lock);
    for (sc_comm_t *c = tp->comms; c; c = c->next)
        sc_settle_end_comm(tp, c);
    pthread_mutex_unlock(&tp->lock);
}

void sc_progress_unload_locked_out(sc_transport_t *tp, const struct timespec *until)
{
    /* The unload may run on the progress thread itself (a signal handler's exit there):
     * it cannot join itself, and goes on in the process's exit. */
    if (!tp->thread_started || pthread_equal(tp->thread, pthread_self()))
        return;
    sc_progress_ask_stop(tp);
    if (pthread_timedjoin_np(tp->thread, NULL, until) == 0)
        tp->thread_started = 0;
}

void sc_progress_kick(sc_transport_t *tp)
{
    __atomic_store_n(&tp->rescan, 1, __ATOMIC_SEQ_CST);
    sc_progress_wake_fd(tp);
}

/* ---- requests ---- */

void sc_request_init(struct sc_request *req, sc_transport_t *tp, const sc_request_ops_t *ops,
                     void *impl)
{
    req->tp = tp;
    req->owner_pid = getpid();
    req->done = 0;
    req->status = SC_SUCCESS;
    req->text[0] = '\0';
    req->ops = ops;
    req->impl = impl;
}

/* A request inherited through fork() and pending there: the parent's engine completes
 * it, never the child's copy, and driving the parent's transport from the child would
 * time the op out and tell the peers it failed. Refused without touching anything. */
static int sc_request_forked_away(struct sc_request *req, const char *caller,
                                  sc_status_t *st)
{
    if (!sc_process_is_fork_of(req->owner_pid) || __atomic_load_n(&req->done, __ATOMIC_ACQUIRE))
        return 0;
    *st = sc_error(SC_ERR_INVALID_COMM, "%s: the request belongs to process %d; this "
                   "process (%d) is a fork of it, made while the request was pending, and "
                   "cannot complete it (only process %d can)", caller, (int)req->owner_pid,
                   (int)getpid(), (int)req->owner_pid);
    return 1;
}

/* Threads inside sc_wait or sc_test on a transport, one slot each (hazard pointers):
 * such a thread still uses the transport (its lock, its counters, its worker) after
 * another thread's sc_comm_destroy may have seen the request done, so the transport's
 * teardown first waits until no slot names it (sc_progress_wait_out). A thread names
 * the transport in its slot before it reads `done`; the teardown reads the slots after
 * every request of the transport is done: either it sees the name, or the thread sees
 * `done` and leaves without touching the transport. That needs the slot's store
 * ordered before the load of `done`: where the kernel offers membarrier's private
 * expedited command, the teardown issues it before it reads the slots and the waiter's
 * store is plain (a fence on every wait cost 3-5% of an 8-byte allreduce); elsewhere
 * the store is sequentially consistent. A thread owns its slot from its first wait
 * until it exits; one that finds none to own takes one for the wait alone. */
#define SC_WAIT_SLOTS 256
#define SC_WAIT_TEMPORARY SC_WAIT_SLOTS /* added to a slot taken for one wait */

typedef struct {
    _Alignas(64) sc_transport_t *tp; /* the transport its thread waits on, or NULL */
    int taken;                       /* owned by a thread, or taken for one wait */
} sc_wait_slot_t;

static sc_wait_slot_t sc_wait_slots[SC_WAIT_SLOTS];
static pthread_once_t sc_wait_once = PTHREAD_ONCE_INIT;
static pthread_key_t sc_wait_key; /* a thread's owned slot + 1, given back at its exit */
static int sc_wait_keyed;         /* sc_wait_key was created */
static int sc_wait_asymmetric;    /* membarrier orders the waiters' stores */
static _Thread_local int sc_wait_owned = -1;

static void sc_wait_give_back(void *slot)
{
    __atomic_store_n(&sc_wait_slots[(intptr_t)slot - 1].taken, 0, __ATOMIC_RELEASE);
}

static void sc_wait_init(void)
{
    if (pthread_key_create(&sc_wait_key, sc_wait_give_back) != 0)
        return; /* no owned slots: every wait takes one for itself */
    __atomic_store_n(&sc_wait_keyed, 1, __ATOMIC_RELEASE);
    sc_wait_asymmetric =
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* A free slot taken (its `taken` set), or -1 when every one is taken. */
static int sc_wait_take(void)
{
    for (int s = 0; s < SC_WAIT_SLOTS; s++) {
        int none = 0;
        if (__atomic_compare_exchange_n(&sc_wait_slots[s].taken, &none, 1, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return s;
    }
    return -1;
}

void sc_progress_wait_unload(void)
{
    if (__atomic_load_n(&sc_wait_keyed, __ATOMIC_ACQUIRE))
        pthread_key_delete(sc_wait_key);
}

static int sc_wait_enter(sc_transport_t *tp)
{
    int s = sc_wait_owned, asym;

    pthread_once(&sc_wait_once, sc_wait_init);
    asym = sc_wait_asymmetric;
    if (s < 0 && (s = sc_wait_take()) >= 0) {
        if (pthread_setspecific(sc_wait_key, (void *)(intptr_t)(s + 1)) == 0) {
            sc_wait_owned = s;
        } else {
            s += SC_WAIT_TEMPORARY;
            asym = 0;
        }
    } else if (s < 0) {
        while ((s = sc_wait_take()) < 0)
            sched_yield();
        s += SC_WAIT_TEMPORARY;
    }
    if (asym && s < SC_WAIT_TEMPORARY) {
        __atomic_store_n(&sc_wait_slots[s].tp, tp, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    } else {
        __atomic_store_n(&sc_wait_slots[s % SC_WAIT_TEMPORARY].tp, tp, __ATOMIC_SEQ_CST);
    }
    return s;
}

static void sc_wait_leave(int s)
{
    sc_wait_slot_t *slot = &sc_wait_slots[s % SC_WAIT_TEMPORARY];

    __atomic_store_n(&slot->tp, NULL, __ATOMIC_RELEASE);
    if (s >= SC_WAIT_TEMPORARY)
        __atomic_store_n(&slot->taken, 0, __ATOMIC_RELEASE);
}

void sc_progress_wait_out(sc_transport_t *tp)
{
    pthread_once(&sc_wait_once, sc_wait_init);
    /* Without membarrier, the waiters' sequentially consistent stores and these loads
     * order themselves (every request's `done` was stored sequentially consistent
     * before this teardown began). */
    if (sc_wait_asymmetric)
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    for (int s = 0; s < SC_WAIT_SLOTS; s++)
        while (__atomic_load_n(&sc_wait_slots[s].tp, __ATOMIC_SEQ_CST) == tp)
            sched_yield();
}

/* Sleeps until req is done or ms milliseconds passed. A sleeper registers before it
 * checks `done` again under done_mutex, so a completion either is seen here or wakes
 * it (sc_request_complete). */
static void sc_request_sleep(sc_transport_t *tp, struct sc_request *req, long ms)
{
    pthread_mutex_lock(&tp->done_mutex);
    __atomic_add_fetch(&tp->done_sleepers, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&req->done, __ATOMIC_SEQ_CST)) {
        struct timespec ts = sc_clock_realtime_after(ms * 1000 * 1000);
        pthread_cond_timedwait(&tp->done_cond, &tp->done_mutex, &ts);
    }
    __atomic_sub_fetch(&tp->done_sleepers, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&tp->done_mutex);
}

void sc_request_wait_passive(struct sc_request *req)
{
    while (!__atomic_load_n(&req->done, __ATOMIC_SEQ_CST))
        sc_request_sleep(req->tp, req, 20);
}

static sc_status_t sc_request_result(struct sc_request *req)
{
    if (req->status != SC_SUCCESS)
        sc_error_set_text(req->text);
    return req->status;
}

SC_API sc_status_t sc_test(sc_request_t *req)
{
    sc_status_t st;
    int slot;

    if (!req)
        return sc_error(SC_ERR_INVALID_ARG, "sc_test: request is NULL");
    if (sc_request_forked_away(req, "sc_test", &st))
        return st;
    if (req->ops)
        return req->ops->test(req);
    /* A finished request touches nothing else (see sc_wait). */
    if (__atomic_load_n(&req->done, __ATOMIC_ACQUIRE))
        return sc_request_result(req);
    slot = sc_wait_enter(req->tp);
    if (!__atomic_load_n(&req->done, __ATOMIC_SEQ_CST) &&
        pthread_mutex_trylock(&req->tp->lock) == 0) {
        sc_progress_step(req->tp);
        pthread_mutex_unlock(&req->tp->lock);
    }
    sc_wait_leave(slot);
    if (!__atomic_load_n(&req->done, __ATOMIC_ACQUIRE))
        return SC_IN_PROGRESS;
    return sc_request_result(req);
}

SC_API sc_status_t sc_wait(sc_request_t *req)
{
    sc_transport_t *tp;
    sc_spin_t spin;
    sc_status_t st;
    int slot;

    if (!req)
        return sc_error(SC_ERR_INVALID_ARG, "sc_wait: request is NULL");
    if (sc_request_forked_away(req, "sc_wait", &st))
        return st;
    if (req->ops)
        return req->ops->wait(req);
    /* A finished request touches nothing else: its communicator, and the transport,
     * may be gone (comm.h: requests keep their final status after sc_comm_destroy). */
    if (__atomic_load_n(&req->done, __ATOMIC_ACQUIRE))
        return sc_request_result(req);
    tp = req->tp;
    slot = sc_wait_enter(tp);
    if (__atomic_load_n(&req->done, __ATOMIC_SEQ_CST)) {
        sc_wait_leave(slot);
        return sc_request_result(req);
    }
    sc_spin_reset(&spin);
    __atomic_add_fetch(&tp->waiters, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&req->done, __ATOMIC_ACQUIRE)) {
        /* A library thread the unload ends: its request may never complete (an abort that
         * could not take the transport's lock), and the thread must end before dlclose
         * unmaps this code. The request stays pending, and is not freed. */
        if (sc_unload_thread_asked()) {
            __atomic_sub_fetch(&tp->waiters, 1, __ATOMIC_SEQ_CST);
            sc_wait_leave(slot);
            return sc_error(SC_ERR_ABORTED, "sc_wait: left unfinished: the library is being "
                            "unloaded (dlclose or exit), which ends its threads");
        }
        if (sc_progress_spin_step(tp, &spin, 1))
            continue;
        /* Hand the driving to the progress thread and sleep until a completion. */
        __atomic_store_n(&tp->rescan, 1, __ATOMIC_RELAXED);
        __atomic_sub_fetch(&tp->waiters, 1, __ATOMIC_SEQ_CST);
        sc_progress_hand_over(tp, 1);
        sc_request_sleep(tp, req, 50);
        __atomic_add_fetch(&tp->waiters, 1, __ATOMIC_SEQ_CST);
        sc_spin_reset(&spin);
    }
    __atomic_sub_fetch(&tp->waiters, 1, __ATOMIC_SEQ_CST);
    /* Ops left that no one waits for go back to the thread if this caller took its
     * marks; one that sleeps without them because a caller drove stays asleep (up to
     * its 20 ms): waking it after every wait in a loop costs more than that. */
    sc_progress_hand_over(tp, 0);
    sc_wait_leave(slot);
    return sc_request_result(req);
}

SC_API void sc_request_free(sc_request_t *req)
{
    sc_status_t st;

    if (!req)
        return;
    /* In a fork's child only the memory is this process's (a device request's state
     * there is the parent's too, and stays). */
    if (sc_request_forked_away(req, "sc_request_free", &st)) {
        free(req);
        return;
    }
    if (!__atomic_load_n(&req->done, __ATOMIC_ACQUIRE))
        sc_wait(req);
    /* Left pending by a library thread's wait at the unload: its op still writes it. */
    if (!req->ops && !__atomic_load_n(&req->done, __ATOMIC_ACQUIRE))
        return;
    if (req->ops)
        req->ops->release(req);
    free(req);
}

/* How often sc_progress_flush_ctl looks at which peers its control messages still wait
 * for (a read of /proc per such peer). */
#define SC_FLUSH_LOOK_S 0.01

/* Drives the engine until comm has no queued op (ctl 0) or no control message in flight
 * to a peer that can take it (ctl 1), or the deadline passed. */
static void sc_progress_drive(sc_comm_t *c, int ctl, double deadline)
{
    sc_transport_t *tp = c->tp;
    double look = 0;

    for (;;) {
        double now;
        int busy;

        pthread_mutex_lock(&tp->lock);
        sc_progress_step(tp);
        busy = ctl ? c->ctl_outs != NULL : c->head != NULL || c->p2p != NULL;
        now = sc_clock_now();
        if (ctl && busy && now >= look) {
            busy = !sc_progress_ctl_held(c);
            look = now + SC_FLUSH_LOOK_S;
        }
        pthread_mutex_unlock(&tp->lock);
        if (!busy || now >= deadline)
            return;
        sched_yield();
    }
}

void sc_progress_drain(sc_comm_t *c)
{
    sc_progress_drive(c, 0, INFINITY);
}

void sc_progress_flush_ctl(sc_comm_t *c, double wait_s)
{
    sc_progress_drive(c, 1, sc_clock_now() + wait_s);
}
