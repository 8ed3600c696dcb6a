/* Registered host memory: sc_mem_alloc and sc_mem_free, and the lookup that tells a
 * collective where its peers' copies of a buffer are mapped. UCX allocates each
 * segment (ucp_mem_map, in shared memory where a shared-memory transport can) and
 * every rank maps every other rank's segment through its endpoint (ucp_rkey_ptr). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collectives/agree.h"
#include "collectives/serves.h"
#include "collectives/shm_prefault.h"
#include "collectives/shm_segment.h"
#include "collectives/transport_ucx.h"
#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"
#include "shardcomm/collectives.h"

struct sc_shm_seg {
    struct sc_shm_seg *next;    /* the communicator's (comm->shm_segs) */
    struct sc_shm_seg *tp_next; /* the transport's (tp->shm_all): sc_mem_alloc's only */
    int nranks;                 /* size of the communicator it was allocated on */
    uint32_t id;
    uint8_t *base;
    size_t bytes;
    ucp_mem_h memh;
    int shared;        /* every rank maps every other rank's copy */
    uint8_t **peer;    /* by comm rank: where that rank's copy is mapped here */
    ucp_rkey_h *rkeys; /* by comm rank; NULL for this rank */
    int users;         /* atomic: pending calls that use it (sc_shm_hold) */
    int kept;          /* its communicator was destroyed while a call held it: freed
                          once none does (sc_shm_take_released) */
};

/* Segments of every communicator, of every transport (tp->shm_all, where a call of any
 * communicator of one sc_comm_init finds the memory it holds) and the next id per
 * communicator, behind one lock: allocation and lookup are rare next to the copies
 * they save. It is never held while tp->lock is taken.
 *
 * The UCX calls here (memory maps, remote keys) take tp->lock: the worker and context
 * are single-threaded (UCS_THREAD_MODE_SERIALIZED), and the progress thread or a waiter
 * drives them at the same time (remote keys come from the worker's pool, which the
 * rendezvous protocols use too). */
static pthread_mutex_t sc_shm_lock = PTHREAD_MUTEX_INITIALIZER;

static void sc_shm_release(sc_transport_t *tp, struct sc_shm_seg *s, int size)
{
    pthread_mutex_lock(&tp->lock);
    if (s->rkeys)
        for (int q = 0; q < size; q++)
            if (s->rkeys[q])
                ucp_rkey_destroy(s->rkeys[q]);
    if (s->memh)
        ucp_mem_unmap(tp->context, s->memh);
    pthread_mutex_unlock(&tp->lock);
    free(s->rkeys);
    free(s->peer);
    free(s);
}

/* Allocates s->bytes through UCX and packs its remote key into rec. */
static sc_status_t sc_shm_map_local(sc_comm_t *comm, struct sc_shm_seg *s,
                                    sc_shm_record_t *rec, const char *caller)
{
    ucp_mem_map_params_t mp;
    ucp_mem_attr_t attr;
    void *packed = NULL;
    size_t plen = 0;
    ucs_status_t us;

    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.address = NULL;
    mp.length = s->bytes;
    mp.flags = UCP_MEM_MAP_ALLOCATE;
    pthread_mutex_lock(&comm->tp->lock);
    us = ucp_mem_map(comm->tp->context, &mp, &s->memh);
    if (us != UCS_OK) {
        pthread_mutex_unlock(&comm->tp->lock);
        s->memh = NULL;
        return sc_error(SC_ERR_NO_MEMORY, "%s: rank %d could not allocate %zu bytes (UCX: %s)",
                        caller, comm->rank, s->bytes, ucs_status_string(us));
    }
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    us = ucp_mem_query(s->memh, &attr);
    pthread_mutex_unlock(&comm->tp->lock);
    if (us != UCS_OK)
        return sc_error(SC_ERR_INTERNAL, "%s: UCX did not say where it allocated (%s)", caller,
                        ucs_status_string(us));
    s->base = attr.address;
#ifdef MADV_POPULATE_WRITE
    /* Every page now: a shared-memory file system too small for the segment is an error
     * here rather than a SIGBUS on a later write (and no collective pays the faults).
     * Kernels without it (before 5.14) say EINVAL, and the pages come on first use. */
    if (madvise(s->base, s->bytes, MADV_POPULATE_WRITE) != 0 && errno != EINVAL)
        return sc_error(SC_ERR_NO_MEMORY, "%s: rank %d could not back %zu bytes of shared "
                        "memory with pages (%s)", caller, comm->rank, s->bytes, strerror(errno));
#endif
    memset(rec, 0, sizeof(*rec));
    rec->base = (uint64_t)(uintptr_t)s->base;
    rec->bytes = s->bytes;
    pthread_mutex_lock(&comm->tp->lock);
    if (comm->size > 1 && ucp_rkey_pack(comm->tp->context, s->memh, &packed, &plen) == UCS_OK) {
        if (plen <= SC_SHM_RKEY_MAX) {
            memcpy(rec->rkey, packed, plen);
            rec->rkey_len = plen;
        }
        ucp_rkey_buffer_release(packed);
    }
    pthread_mutex_unlock(&comm->tp->lock);
    return SC_SUCCESS;
}

/* Maps every peer's segment from the gathered records; nonzero when all of them are. */
static int sc_shm_map_peers(sc_comm_t *comm, struct sc_shm_seg *s, const sc_shm_record_t *all)
{
    sc_transport_t *tp = comm->tp;

    s->peer[comm->rank] = s->base;
    for (int q = 0; q < comm->size; q++) {
        void *ptr;
        int mapped;
        if (q == comm->rank)
            continue;
        if (!all[q].rkey_len || all[q].bytes != s->bytes)
            return 0;
        pthread_mutex_lock(&tp->lock);
        if (ucp_ep_rkey_unpack(tp->eps[comm->world_of[q]], all[q].rkey, &s->rkeys[q]) != UCS_OK)
            s->rkeys[q] = NULL;
        mapped = s->rkeys[q] && ucp_rkey_ptr(s->rkeys[q], all[q].base, &ptr) == UCS_OK;
        pthread_mutex_unlock(&tp->lock);
        if (!mapped)
            return 0;
        /* Mapped now rather than page by page in the first collectives that read it. */
        sc_shm_prefault(ptr, s->bytes);
        s->peer[q] = ptr;
    }
    return 1;
}

sc_status_t sc_shm_seg_local(sc_comm_t *comm, size_t bytes, const char *caller,
                             struct sc_shm_seg **seg, sc_shm_record_t *rec)
{
    struct sc_shm_seg *s = calloc(1, sizeof(*s));
    size_t phys = sc_mem_phys_bytes();
    sc_status_t st;

    memset(rec, 0, sizeof(*rec));
    if (s) {
        s->bytes = bytes;
        s->nranks = comm->size;
        s->peer = calloc((size_t)comm->size, sizeof(*s->peer));
        s->rkeys = calloc((size_t)comm->size, sizeof(*s->rkeys));
    }
    if (bytes == 0)
        st = sc_error(SC_ERR_INVALID_ARG, "%s: bytes is 0 on rank %d", caller, comm->rank);
    else if (bytes > phys)
        /* Refused before anything is mapped: a shared file that large would be filled
         * page by page by the prefault until the system killed the process, and left
         * behind. */
        st = sc_error(SC_ERR_NO_MEMORY, "%s: %zu bytes on rank %d is more than this "
                      "machine's memory (%zu bytes)", caller, bytes, comm->rank, phys);
    else if (!s || !s->peer || !s->rkeys)
        st = sc_error(SC_ERR_NO_MEMORY, "%s: out of memory on rank %d", caller, comm->rank);
    else
        st = sc_shm_map_local(comm, s, rec, caller);
    if (st != SC_SUCCESS) {
        if (s)
            sc_shm_release(comm->tp, s, comm->size);
        memset(rec, 0, sizeof(*rec));
        return st;
    }
    *seg = s;
    return SC_SUCCESS;
}

int sc_shm_seg_map(sc_comm_t *comm, struct sc_shm_seg *seg, const sc_shm_record_t *all)
{
    return comm->size > 1 && sc_shm_map_peers(comm, seg, all);
}

void sc_shm_seg_settle(sc_comm_t *comm, struct sc_shm_seg *seg, int shared)
{
    seg->shared = shared;
    if (shared)
        return;
    pthread_mutex_lock(&comm->tp->lock);
    for (int q = 0; q < comm->size; q++)
        if (seg->rkeys[q]) {
            ucp_rkey_destroy(seg->rkeys[q]);
            seg->rkeys[q] = NULL;
        }
    pthread_mutex_unlock(&comm->tp->lock);
}

/* Collective over comm (sc_mem_alloc): the steps above with the records exchanged over
 * comm itself; a rank's failure or differing sizes are an error on every rank, and
 * *seg is shared the same on every rank. */
static sc_status_t sc_shm_seg_create(sc_comm_t *comm, size_t bytes, const char *caller,
                                     sc_status_t refused, struct sc_shm_seg **seg)
{
    sc_status_t st, local;
    struct sc_shm_seg *s = NULL;
    sc_shm_record_t mine, *all = calloc((size_t)comm->size, sizeof(*all));
    int32_t mapped = 0, everywhere = 0;
    sc_fact_t facts[1];

    /* A rank whose call was refused (refused: its status, the sentence set) takes part
     * with nothing. */
    local = refused != SC_SUCCESS ? refused
            : all ? sc_shm_seg_local(comm, bytes, caller, &s, &mine)
                  : sc_error(SC_ERR_NO_MEMORY, "%s: out of memory on rank %d", caller,
                             comm->rank);
    /* Every rank learns of any rank's failure and of differing sizes. */
    facts[0] = (sc_fact_t){"bytes", SC_FACT_NUMBER, (int64_t)bytes};
    st = sc_comm_agree(comm, caller, local, SC_ERR_PEER_FAILED, facts, 1, NULL);
    if (st != SC_SUCCESS)
        goto fail;
    st = sc_allgather(&mine, all, sizeof(mine), SC_UINT8, comm, NULL, NULL);
    if (st != SC_SUCCESS)
        goto fail;
    mapped = sc_shm_seg_map(comm, s, all);
    /* Shared only where every rank maps every other: a collective decides the same way
     * on every rank. */
    st = sc_allreduce(&mapped, &everywhere, 1, SC_INT32, SC_MIN, comm, NULL, NULL);
    if (st != SC_SUCCESS)
        goto fail;
    sc_shm_seg_settle(comm, s, everywhere);
    free(all);
    *seg = s;
    return SC_SUCCESS;
fail:
    if (s)
        sc_shm_release(comm->tp, s, comm->size);
    free(all);
    return st;
}

sc_status_t sc_shm_seg_open_over(sc_comm_t *via, sc_comm_t *comm, size_t bytes,
                                 const char *caller, struct sc_shm_seg **seg)
{
    int want = comm != NULL && bytes > 0, shared = want;
    struct sc_shm_seg *s = NULL;
    sc_shm_record_t mine, *all = calloc((size_t)via->size, sizeof(*all));
    sc_shm_record_t *peers = want ? calloc((size_t)comm->size, sizeof(*peers)) : NULL;
    int32_t ok_mine, *ok = calloc((size_t)via->size, sizeof(*ok));
    sc_status_t st = SC_SUCCESS;
    int *via_rank = NULL;

    *seg = NULL;
    if (!all || !ok || (want && !peers)) {
        /* Without room for the exchange this rank cannot take part: every rank of via
         * learns it from the abort rather than waiting. */
        st = sc_error(SC_ERR_NO_MEMORY, "sc_comm_init/sc_comm_split: out of memory for the "
                      "%s on rank %d", caller, via->rank);
        sc_comm_abort(via);
        goto out;
    }
    memset(&mine, 0, sizeof(mine));
    if (want && sc_shm_seg_local(comm, bytes, caller, &s, &mine) != SC_SUCCESS) {
        sc_log(SC_LOG_INFO, "%s not opened: %s", caller, sc_last_error());
        s = NULL;
    }
    st = sc_allgather(&mine, all, sizeof(mine), SC_UINT8, via, NULL, NULL);
    if (st != SC_SUCCESS)
        goto out;
    if (s) {
        /* comm's ranks among via's: world ranks name them in both. */
        via_rank = malloc((size_t)comm->size * sizeof(*via_rank));
        for (int q = 0; via_rank && q < comm->size; q++)
            for (int v = 0; v < via->size; v++)
                if (via->world_of[v] == comm->world_of[q])
                    via_rank[q] = v;
        for (int q = 0; via_rank && q < comm->size; q++)
            peers[q] = all[via_rank[q]];
    }
    ok_mine = s && via_rank && sc_shm_seg_map(comm, s, peers);
    st = sc_allgather(&ok_mine, ok, 1, SC_INT32, via, NULL, NULL);
    if (st != SC_SUCCESS)
        goto out;
    /* Shared where every rank of comm mapped every other: the same answer on each. */
    for (int q = 0; shared && q < comm->size; q++)
        shared = via_rank && ok[via_rank[q]];
    if (shared) {
        sc_shm_seg_settle(comm, s, 1);
        *seg = s;
        s = NULL;
    }
out:
    if (s)
        sc_shm_seg_release(comm, s);
    free(via_rank);
    free(ok);
    free(peers);
    free(all);
    return st;
}

void *sc_shm_seg_peer(const struct sc_shm_seg *seg, int q)
{
    return seg->peer[q];
}

void sc_shm_seg_release(sc_comm_t *comm, struct sc_shm_seg *seg)
{
    if (seg)
        sc_shm_release(comm->tp, seg, comm->size);
}

/* Takes off tp's list the segments kept past their communicator (sc_shm_destroy_all)
 * that no call holds any more, chained through next onto *gone for sc_shm_release_all.
 * Caller holds sc_shm_lock, under which holds are taken: a count read 0 there stays 0. */
static void sc_shm_take_released(sc_transport_t *tp, struct sc_shm_seg **gone)
{
    struct sc_shm_seg **pp = &tp->shm_all;

    while (*pp) {
        struct sc_shm_seg *s = *pp;
        if (s->kept && !__atomic_load_n(&s->users, __ATOMIC_ACQUIRE)) {
            __atomic_store_n(pp, s->tp_next, __ATOMIC_RELEASE);
            s->next = *gone;
            *gone = s;
        } else {
            pp = &s->tp_next;
        }
    }
}

/* Releases a chain made by sc_shm_take_released (sc_shm_lock not held). */
static void sc_shm_release_all(sc_transport_t *tp, struct sc_shm_seg *gone)
{
    while (gone) {
        struct sc_shm_seg *next = gone->next;
        sc_shm_release(tp, gone, gone->nranks);
        gone = next;
    }
}

/* Frees the kept segments whose calls are done (every sc_mem_alloc, sc_mem_free and
 * sc_comm_destroy of the transport does), so that they do not pile up until the last
 * communicator of the sc_comm_init goes. */
static void sc_shm_free_released(sc_transport_t *tp)
{
    struct sc_shm_seg *gone = NULL;

    if (!__atomic_load_n(&tp->shm_all, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&sc_shm_lock);
    sc_shm_take_released(tp, &gone);
    pthread_mutex_unlock(&sc_shm_lock);
    sc_shm_release_all(tp, gone);
}

static sc_status_t sc_mem_alloc_call(sc_comm_t *comm, size_t bytes, void **ptr);

/* Failures inside say which public call they ended (sc_error_in). comm is marked as
 * issued on by this thread meanwhile (sc_comm_issue_begin). */
SC_API sc_status_t sc_mem_alloc(sc_comm_t *comm, size_t bytes, void **ptr)
{
    sc_serves_t was = sc_serves_begin(SC_SERVES_MEM_ALLOC);
    int claimed;
    sc_status_t st = sc_comm_issue_begin(comm, "sc_mem_alloc", &claimed);

    if (st == SC_SUCCESS) {
        st = sc_mem_alloc_call(comm, bytes, ptr);
        sc_comm_issue_end(comm, claimed);
    }
    return sc_serves_return(was, st, "sc_mem_alloc");
}

static sc_status_t sc_mem_alloc_call(sc_comm_t *comm, size_t bytes, void **ptr)
{
    sc_status_t st = sc_comm_check_usable(comm, "sc_mem_alloc");
    struct sc_shm_seg *s;

    if (st != SC_SUCCESS)
        return st;
    sc_shm_free_released(comm->tp);
    /* A NULL ptr is refused collectively, as a failed allocation is: the other ranks
     * must not wait for this one. */
    st = ptr ? SC_SUCCESS : sc_error(SC_ERR_INVALID_ARG, "sc_mem_alloc: ptr is NULL");
    st = sc_shm_seg_create(comm, bytes, "sc_mem_alloc", st, &s);
    if (st != SC_SUCCESS)
        return st;
    pthread_mutex_lock(&sc_shm_lock);
    s->id = ++comm->shm_next_id;
    s->next = comm->shm_segs;
    comm->shm_segs = s;
    s->tp_next = comm->tp->shm_all;
    __atomic_store_n(&comm->tp->shm_all, s, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sc_shm_lock);
    sc_log(SC_LOG_DEBUG, "sc_mem_alloc: segment %u of %zu bytes at %p, %s", s->id, bytes,
           (void *)s->base, s->shared ? "mapped by every rank" : "not shared (plain memory)");
    *ptr = s->base;
    return SC_SUCCESS;
}

/* Takes s off its transport's list (under sc_shm_lock). */
static void sc_shm_unlist(sc_transport_t *tp, const struct sc_shm_seg *s)
{
    for (struct sc_shm_seg **pp = &tp->shm_all; *pp; pp = &(*pp)->tp_next) {
        if (*pp == s) {
            __atomic_store_n(pp, s->tp_next, __ATOMIC_RELEASE);
            return;
        }
    }
}

static sc_status_t sc_mem_free_marked(sc_comm_t *comm, void *ptr);

/* Local: memory is given back on a communicator that failed too. comm is marked as
 * issued on by this thread meanwhile (sc_comm_issue_begin). */
SC_API sc_status_t sc_mem_free(sc_comm_t *comm, void *ptr)
{
    sc_status_t st;
    int claimed;

    if (!ptr)
        return SC_SUCCESS;
    st = sc_comm_issue_begin(comm, "sc_mem_free", &claimed);
    if (st != SC_SUCCESS)
        return st;
    st = sc_mem_free_marked(comm, ptr);
    sc_comm_issue_end(comm, claimed);
    return st;
}

static sc_status_t sc_mem_free_marked(sc_comm_t *comm, void *ptr)
{
    int users = 0;
    struct sc_shm_seg **pp, *s = NULL;

    sc_shm_free_released(comm->tp);
    pthread_mutex_lock(&sc_shm_lock);
    for (pp = &comm->shm_segs; *pp; pp = &(*pp)->next) {
        if ((*pp)->base == ptr) {
            s = *pp;
            users = __atomic_load_n(&s->users, __ATOMIC_ACQUIRE);
            if (!users) {
                *pp = s->next;
                sc_shm_unlist(comm->tp, s);
            }
            break;
        }
    }
    pthread_mutex_unlock(&sc_shm_lock);
    if (!s)
        return sc_error(SC_ERR_INVALID_ARG, "sc_mem_free: %p is not memory that sc_mem_alloc "
                        "returned on this communicator (or it was freed already)", ptr);
    if (users)
        return sc_error(SC_ERR_INVALID_ARG, "sc_mem_free: %d call%s that use%s the memory at "
                        "%p %s still pending on this rank, on this communicator or another "
                        "(or failed while a transfer "
                        "that could not be cancelled still used it: then it is freed with "
                        "the communicator); wait for them first", users,
                        users == 1 ? "" : "s", users == 1 ? "s" : "", ptr,
                        users == 1 ? "is" : "are");
    sc_shm_release(comm->tp, s, s->nranks);
    return SC_SUCCESS;
}

SC_API sc_status_t sc_mem_is_shared(sc_comm_t *comm, const void *ptr, int *shared)
{
    sc_shm_ref_t ref;
    sc_status_t st;

    if (!shared)
        return sc_error(SC_ERR_INVALID_ARG, "sc_mem_is_shared: shared is NULL");
    st = sc_comm_check_handle(comm, "sc_mem_is_shared");
    if (st != SC_SUCCESS)
        return st;
    sc_shm_lookup(comm, ptr, 1, &ref);
    *shared = ref.seg != NULL;
    return SC_SUCCESS;
}

void sc_shm_lookup(sc_comm_t *comm, const void *p, size_t bytes, sc_shm_ref_t *ref)
{
    const uint8_t *b = p;

    ref->seg = NULL;
    ref->off = 0;
    if (!p || !comm->shm_segs)
        return;
    pthread_mutex_lock(&sc_shm_lock);
    for (const struct sc_shm_seg *s = comm->shm_segs; s; s = s->next) {
        if (s->shared && b >= s->base && (size_t)(b - s->base) <= s->bytes &&
            bytes <= s->bytes - (size_t)(b - s->base)) {
            ref->seg = s;
            ref->off = (uint64_t)(b - s->base);
            break;
        }
    }
    pthread_mutex_unlock(&sc_shm_lock);
}

void sc_shm_hold(sc_comm_t *comm, const void *const p[2], const size_t bytes[2],
                 struct sc_shm_seg *held[2])
{
    held[0] = held[1] = NULL;
    /* Any communicator's memory: a split's call into its parent's memory holds it too. */
    if (!__atomic_load_n(&comm->tp->shm_all, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&sc_shm_lock);
    for (int i = 0; i < 2; i++) {
        const uint8_t *b = p[i];
        if (!b || !bytes[i])
            continue;
        for (struct sc_shm_seg *s = comm->tp->shm_all; s; s = s->tp_next) {
            if (b >= s->base && (size_t)(b - s->base) < s->bytes) {
                __atomic_add_fetch(&s->users, 1, __ATOMIC_ACQ_REL);
                held[i] = s;
                break;
            }
        }
    }
    pthread_mutex_unlock(&sc_shm_lock);
}

void sc_shm_unhold(struct sc_shm_seg *seg)
{
    if (seg)
        __atomic_sub_fetch(&seg->users, 1, __ATOMIC_ACQ_REL);
}

uint32_t sc_shm_id(const struct sc_shm_seg *seg)
{
    return seg ? seg->id : 0;
}

void *sc_shm_peer_ptr(const sc_shm_ref_t *ref, int q, uint64_t delta)
{
    return ref->seg->peer[q] + ref->off + delta;
}

void sc_shm_destroy_all(sc_comm_t *comm)
{
    struct sc_shm_seg *s, *gone = NULL;

    pthread_mutex_lock(&sc_shm_lock);
    s = comm->shm_segs;
    comm->shm_segs = NULL;
    while (s) {
        struct sc_shm_seg *next = s->next;
        /* Still held (a call of another communicator, or a transfer that could not be
         * cancelled): it stays on the transport's list, kept, until no call holds it
         * (then the next sc_mem_alloc, sc_mem_free or sc_comm_destroy of the transport
         * frees it) or the transport goes. */
        if (!__atomic_load_n(&s->users, __ATOMIC_ACQUIRE)) {
            sc_shm_unlist(comm->tp, s);
            s->next = gone;
            gone = s;
        } else {
            s->kept = 1;
        }
        s = next;
    }
    sc_shm_take_released(comm->tp, &gone);
    pthread_mutex_unlock(&sc_shm_lock);
    sc_shm_release_all(comm->tp, gone);
}

void sc_shm_destroy_kept(sc_transport_t *tp)
{
    struct sc_shm_seg *s;

    pthread_mutex_lock(&sc_shm_lock);
    s = tp->shm_all;
    tp->shm_all = NULL;
    pthread_mutex_unlock(&sc_shm_lock);
    while (s) {
        struct sc_shm_seg *next = s->tp_next;
        sc_shm_release(tp, s, s->nranks);
        s = next;
    }
}
