/* The registry of live communicators: a handle is looked up before it is dereferenced,
 * so that a destroyed, never-created or inherited (fork) communicator is refused with a
 * sentence instead of read, and a call is refused while another thread issues one on
 * the same communicator (the mark set at the lookup); the getters (rank, size, local
 * rank and size) that answer -1 for such a handle; and, at the library's unload, the
 * live ones aborted. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/bootstrap_store_linger.h"
#include "core/clock.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/ptr_set.h"
#include "core/unload_threads.h"

static sc_ptr_set_t sc_registry = SC_PTR_SET_INIT;
/* Set in a forked child: the communicators it inherited are the parent's (their
 * threads and UCX state are not in the child) and are refused there. */
static int sc_registry_forked;
/* The pid of a process that forked while it had live communicators (UCX and its threads
 * in use): kept by the process itself until it forks with none, and by its children and
 * theirs for good (sc_registry_check_init_allowed refuses them). 0: none. */
static pid_t sc_registry_ucx_forker;
static pthread_once_t sc_registry_once = PTHREAD_ONCE_INIT;

/* The registry's lock is held across fork(), so that the child gets it unlocked. */
static void sc_registry_fork_prepare(void)
{
    pid_t self = getpid(), forker;

    pthread_mutex_lock(&sc_registry.lock);
    forker = __atomic_load_n(&sc_registry_ucx_forker, __ATOMIC_RELAXED);
    if (sc_registry.len > 0)
        forker = self;
    else if (forker == self)
        forker = 0; /* all destroyed since */
    __atomic_store_n(&sc_registry_ucx_forker, forker, __ATOMIC_RELAXED);
}
static void sc_registry_fork_parent(void) { pthread_mutex_unlock(&sc_registry.lock); }
static void sc_registry_fork_child(void)
{
    pthread_mutex_unlock(&sc_registry.lock);
    __atomic_store_n(&sc_registry_forked, 1, __ATOMIC_RELAXED);
}

static void sc_registry_watch_fork(void)
{
    pthread_atfork(sc_registry_fork_prepare, sc_registry_fork_parent, sc_registry_fork_child);
}

sc_status_t sc_registry_add(const sc_comm_t *c)
{
    pthread_once(&sc_registry_once, sc_registry_watch_fork);
    if (sc_ptr_set_add(&sc_registry, c, 0) < 0)
        return sc_error(SC_ERR_NO_MEMORY, "communicator registry: out of memory");
    return SC_SUCCESS;
}

int sc_registry_remove(const sc_comm_t *c)
{
    return sc_ptr_set_remove(&sc_registry, c);
}

int sc_process_is_fork_of(pid_t owner)
{
    return __atomic_load_n(&sc_registry_forked, __ATOMIC_RELAXED) && owner != getpid();
}

sc_status_t sc_registry_check_init_allowed(void)
{
    pid_t forker = __atomic_load_n(&sc_registry_ucx_forker, __ATOMIC_RELAXED);

    if (forker == 0 || forker == getpid())
        return SC_SUCCESS;
    return sc_error(SC_ERR_UNSUPPORTED, "sc_comm_init: this process (%d) was forked from "
                    "process %d while that one had communicators, and UCX does not support "
                    "its use in such a child (its threads' locks were copied as they were: "
                    "creating the transport here could hang); create communicators in the "
                    "parent, or in a process started by exec (Python multiprocessing's "
                    "'spawn' or 'forkserver' start method)", (int)getpid(), (int)forker);
}

sc_status_t sc_comm_check_handle(const sc_comm_t *c, const char *caller)
{
    if (!c)
        return sc_error(SC_ERR_INVALID_COMM, "%s: communicator is NULL", caller);
    if (!sc_ptr_set_contains(&sc_registry, c))
        return sc_error(SC_ERR_INVALID_COMM,
                        "%s: communicator %p was destroyed or never created", caller,
                        (const void *)c);
    if (sc_process_is_fork_of(c->owner_pid))
        return sc_error(SC_ERR_INVALID_COMM, "%s: communicator %p belongs to process %d; "
                        "this process (%d) is a fork of it and can neither use nor destroy "
                        "it (create a communicator of its own)", caller, (const void *)c,
                        (int)c->owner_pid, (int)getpid());
    return SC_SUCCESS;
}

sc_status_t sc_comm_check_usable(const sc_comm_t *c, const char *caller)
{
    if (__atomic_load_n(&c->broken, __ATOMIC_ACQUIRE) != SC_SUCCESS) {
        char text[SC_ERROR_MAX];
        snprintf(text, sizeof(text), "%s refused, the communicator failed earlier: %.900s",
                 caller, c->broken_text);
        sc_error_set_text(text);
        return c->broken;
    }
    return SC_SUCCESS;
}

sc_status_t sc_comm_check(const sc_comm_t *c, const char *caller)
{
    sc_status_t st = sc_comm_check_handle(c, caller);

    return st != SC_SUCCESS ? st : sc_comm_check_usable(c, caller);
}

/* What sc_comm_issue_begin's lookup found: the mark set for this call, or the call
 * another thread is issuing (NULL: none, or this thread's own), or a fork's child. */
typedef struct {
    const char *caller;
    const char *other;
    int claimed;
    int forked;
} sc_issue_claim_t;

/* Under the registry's lock, where every mark is set: a mark seen here is either this
 * thread's (issuer) or another's, never a stale one of this thread's. A fork's child
 * leaves the parent's mark alone (sc_comm_check_handle refuses its call). */
static void sc_comm_claim(const void *p, void *arg)
{
    sc_comm_t *c = (sc_comm_t *)(uintptr_t)p;
    sc_issue_claim_t *claim = arg;
    const char *now = __atomic_load_n(&c->issuing, __ATOMIC_ACQUIRE);

    if (sc_process_is_fork_of(c->owner_pid)) {
        claim->forked = 1;
        return;
    }
    if (!now) {
        c->issuer = pthread_self();
        __atomic_store_n(&c->issuing, claim->caller, __ATOMIC_RELAXED);
        claim->claimed = 1;
    } else if (!pthread_equal(c->issuer, pthread_self())) {
        claim->other = now;
    }
}

sc_status_t sc_comm_issue_begin(sc_comm_t *c, const char *caller, int *claimed)
{
    sc_issue_claim_t claim = {caller, NULL, 0, 0};

    /* Nothing of c is read past the lookup but by a thread that holds its mark: another
     * thread's destroy may free it at once. */
    if (!c || !sc_ptr_set_contains_then(&sc_registry, c, sc_comm_claim, &claim) ||
        claim.forked) {
        /* NULL, destroyed or a fork's: nothing was marked. */
        sc_status_t st = sc_comm_check_handle(c, caller);

        if (st != SC_SUCCESS)
            return st;
        /* destroyed, and its address taken by a new one since */
        return sc_error(SC_ERR_INVALID_COMM, "%s: communicator %p was destroyed or never "
                        "created", caller, (void *)c);
    }
    if (claim.other)
        return sc_error(SC_ERR_INVALID_ARG, "%s: another thread is in %s on this "
                        "communicator (%p): calls on one communicator must come from one "
                        "thread at a time (but for sc_wait, sc_test, sc_request_free, "
                        "sc_comm_abort and the rank and size getters); this call was refused "
                        "and changed nothing, the other thread's call goes on", caller,
                        claim.other, (void *)c);
    *claimed = claim.claimed;
    return SC_SUCCESS;
}

void sc_comm_issue_end(sc_comm_t *c, int claimed)
{
    if (claimed)
        __atomic_store_n(&c->issuing, NULL, __ATOMIC_RELEASE);
}

static void sc_comm_count_entry(const void *c, void *arg)
{
    (void)arg;
    __atomic_add_fetch(&((sc_comm_t *)(uintptr_t)c)->entered, 1, __ATOMIC_RELAXED);
}

sc_status_t sc_comm_enter(sc_comm_t *c, const char *caller)
{
    int live = c && sc_ptr_set_contains_then(&sc_registry, c, sc_comm_count_entry, NULL);
    sc_status_t st = sc_comm_check_handle(c, caller);

    if (live && st != SC_SUCCESS) /* a fork's child */
        sc_comm_leave(c);
    else if (!live && st == SC_SUCCESS) /* destroyed, and its address taken by a new one */
        st = sc_error(SC_ERR_INVALID_COMM, "%s: communicator %p was destroyed or never "
                      "created", caller, (const void *)c);
    return st;
}

void sc_comm_leave(sc_comm_t *c)
{
    __atomic_sub_fetch(&c->entered, 1, __ATOMIC_RELEASE);
}

void sc_registry_wait_left(const sc_comm_t *c)
{
    while (__atomic_load_n(&c->entered, __ATOMIC_ACQUIRE) > 0)
        sched_yield();
}

/* How long the unload waits for its messages to the peers to leave (a peer that is gone
 * and not known to be may never take them), for the locks it takes, and for the
 * library's other threads to end (a selection that runs on). */
#define SC_REGISTRY_UNLOAD_NOTICE_S 0.5
#define SC_REGISTRY_UNLOAD_LOCK_NS 1000000000L
#define SC_REGISTRY_UNLOAD_THREADS_NS 2000000000L
/* How long it waits for the progress thread of a transport whose lock it could not take
 * (the thread looks at its stop flag every 0.1 s). */
#define SC_REGISTRY_UNLOAD_JOIN_NS 500000000L

/* At dlclose (a ctypes binding unloaded) and at exit, with communicators never destroyed:
 * their progress threads ran on in the unmapped code after dlclose (SIGSEGV). This
 * process's live communicators (not those a fork inherited: their threads are the
 * parent's) are aborted, their transports' threads ended, and the peers told that this
 * rank left (what it sent before still arrives, as when a process ends). Their memory
 * and UCX state stay: another thread may still hold the handles at exit, and its calls
 * fail with the abort's sentence; sc_comm_destroy still frees them. A lock that is not
 * free within a second (this thread holds it: a signal handler that interrupted the
 * library calls exit()) leaves what it guards as it is, as before: a wait for it hung the
 * exit. Then the library's other threads (reducers' finishers, compressors' workers,
 * selectors' pools, device watchdogs, a failed rendezvous's store still telling the
 * ranks to come: sc_unload_threads_end) end, after the communicators they may wait on
 * were aborted; they too ran on in the unmapped code. */
static void sc_registry_unload_comms(void)
{
    struct timespec until = sc_clock_realtime_after(SC_REGISTRY_UNLOAD_LOCK_NS);
    pid_t self = getpid();
    sc_comm_t **live;
    size_t n = 0, aborted = 0;

    if (pthread_mutex_timedlock(&sc_registry.lock, &until) != 0)
        return;
    live = sc_registry.len ? malloc(sc_registry.len * sizeof(*live)) : NULL;
    for (size_t i = 0; live && i < sc_registry.len; i++) {
        sc_comm_t *c = (sc_comm_t *)(uintptr_t)sc_registry.items[i];

        if (c->owner_pid != self)
            continue;
        sc_comm_count_entry(c, NULL); /* a destroy on another thread waits until it left */
        live[n++] = c;
    }
    pthread_mutex_unlock(&sc_registry.lock);
    /* All aborted first: no thread of this process starts a call on them meanwhile. */
    for (size_t i = 0; i < n; i++) {
        sc_comm_t *c = live[i];

        if (sc_comm_abort_at_unload(c, &until)) {
            live[i] = live[aborted]; /* the aborted ones first */
            live[aborted++] = c;
        }
    }
    /* This thread holds none of their transports' locks: their threads can be joined.
     * Once per transport, which a world and its splits share: else its leaving message
     * is waited for again for each (0.5 s each where no peer takes it). */
    for (size_t i = 0; i < aborted; i++) {
        size_t j = 0;

        while (j < i && live[j]->tp != live[i]->tp)
            j++;
        if (j == i)
            sc_progress_unload(live[i]->tp, SC_REGISTRY_UNLOAD_NOTICE_S);
    }
    /* The transports whose lock was not free are left as they were, but for their
     * progress threads, which would run on (or wake from their wait for that lock) in
     * the unmapped code: ended too, once each. */
    until = sc_clock_realtime_after(SC_REGISTRY_UNLOAD_JOIN_NS);
    for (size_t i = aborted; i < n; i++) {
        size_t j = 0;

        while (j < i && live[j]->tp != live[i]->tp)
            j++;
        if (j == i)
            sc_progress_unload_locked_out(live[i]->tp, &until);
    }
    for (size_t i = 0; i < n; i++)
        sc_comm_leave(live[i]);
    free(live);
}

/* The library's unload: its communicators, then the threads that may wait on them (and
 * the stores of failed rendezvous whose threads ended with them), then the waits' thread
 * key, which those threads may still create. */
__attribute__((destructor)) static void sc_registry_unload(void)
{
    struct timespec until;

    sc_registry_unload_comms();
    until = sc_clock_realtime_after(SC_REGISTRY_UNLOAD_THREADS_NS);
    sc_unload_threads_end(&until);
    sc_store_linger_unload(&until);
    sc_progress_wait_unload();
}

static int sc_comm_field(const sc_comm_t *comm, int which)
{
    int v = -1;

    /* Read under the set's lock: a destroy cannot free comm meanwhile. */
    pthread_mutex_lock(&sc_registry.lock);
    for (size_t i = 0; i < sc_registry.len; i++) {
        if (sc_registry.items[i] == comm) {
            v = which == 0 ? comm->rank
                : which == 1 ? comm->size
                : which == 2 ? comm->local_rank
                             : comm->local_size;
            break;
        }
    }
    pthread_mutex_unlock(&sc_registry.lock);
    return v;
}

SC_API int sc_comm_rank(const sc_comm_t *comm) { return sc_comm_field(comm, 0); }
SC_API int sc_comm_size(const sc_comm_t *comm) { return sc_comm_field(comm, 1); }
SC_API int sc_comm_local_rank(const sc_comm_t *comm) { return sc_comm_field(comm, 2); }
SC_API int sc_comm_local_size(const sc_comm_t *comm) { return sc_comm_field(comm, 3); }
