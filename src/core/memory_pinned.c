/* Pinned host memory, the part both builds share: the allocations handed out, an
 * open-addressing set of pointers (linear probing, deletion by backward shift) under
 * one lock; the pageable stand-in. */
#include "core/memory_pinned.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/error.h"
#include "core/log.h"

static pthread_mutex_t sc_pinned_lock = PTHREAD_MUTEX_INITIALIZER;
static void **sc_pinned_slots; /* NULL: empty slot */
static size_t sc_pinned_cap;   /* a power of two, or 0 */
static size_t sc_pinned_used;
static pthread_once_t sc_pinned_once = PTHREAD_ONCE_INIT;

/* The lock is held across fork(), so that a child forked while another thread held it
 * (a data loader's worker forked beside a thread allocating) gets it unlocked: its own
 * pinned allocations waited for ever. */
static void sc_pinned_fork_prepare(void) { pthread_mutex_lock(&sc_pinned_lock); }
static void sc_pinned_fork_done(void) { pthread_mutex_unlock(&sc_pinned_lock); }

static void sc_pinned_watch_fork(void)
{
    pthread_atfork(sc_pinned_fork_prepare, sc_pinned_fork_done, sc_pinned_fork_done);
}

static void sc_pinned_lock_take(void)
{
    pthread_once(&sc_pinned_once, sc_pinned_watch_fork);
    pthread_mutex_lock(&sc_pinned_lock);
}

static size_t sc_pinned_home(const void *ptr, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)ptr * 0x9E3779B97F4A7C15ull;

    return (size_t)(h >> 17) & (cap - 1);
}

static void sc_pinned_put(void **slots, size_t cap, void *ptr)
{
    size_t i = sc_pinned_home(ptr, cap);

    while (slots[i])
        i = (i + 1) & (cap - 1);
    slots[i] = ptr;
}

sc_status_t sc_pinned_track(void *ptr)
{
    sc_status_t st = SC_SUCCESS;

    sc_pinned_lock_take();
    if (2 * (sc_pinned_used + 1) > sc_pinned_cap) {
        size_t cap = sc_pinned_cap ? 2 * sc_pinned_cap : 64;
        void **slots = calloc(cap, sizeof(*slots));

        if (!slots) {
            st = sc_error(SC_ERR_NO_MEMORY, "sc_host_alloc_pinned: out of memory recording "
                          "the allocation");
            goto out;
        }
        for (size_t i = 0; i < sc_pinned_cap; i++)
            if (sc_pinned_slots[i])
                sc_pinned_put(slots, cap, sc_pinned_slots[i]);
        free(sc_pinned_slots);
        sc_pinned_slots = slots;
        sc_pinned_cap = cap;
    }
    sc_pinned_put(sc_pinned_slots, sc_pinned_cap, ptr);
    sc_pinned_used++;
out:
    pthread_mutex_unlock(&sc_pinned_lock);
    return st;
}

int sc_pinned_untrack(void *ptr)
{
    size_t i, j, mask;
    int found = 0;

    sc_pinned_lock_take();
    if (!sc_pinned_cap)
        goto out;
    mask = sc_pinned_cap - 1;
    for (i = sc_pinned_home(ptr, sc_pinned_cap); sc_pinned_slots[i]; i = (i + 1) & mask)
        if (sc_pinned_slots[i] == ptr) {
            found = 1;
            break;
        }
    if (!found)
        goto out;
    /* Backward shift: move later entries of the run into the hole when their home
     * slot does not lie in (hole, entry]. */
    sc_pinned_slots[i] = NULL;
    for (j = (i + 1) & mask; sc_pinned_slots[j]; j = (j + 1) & mask) {
        size_t home = sc_pinned_home(sc_pinned_slots[j], sc_pinned_cap);

        if (((j - home) & mask) >= ((j - i) & mask)) {
            sc_pinned_slots[i] = sc_pinned_slots[j];
            sc_pinned_slots[j] = NULL;
            i = j;
        }
    }
    sc_pinned_used--;
out:
    pthread_mutex_unlock(&sc_pinned_lock);
    return found;
}

sc_status_t sc_host_alloc_pinned_standin(size_t bytes, void **ptr, const char *why)
{
    static int logged;
    void *p = NULL;

    if (posix_memalign(&p, (size_t)sysconf(_SC_PAGESIZE), bytes ? bytes : 1) != 0)
        return sc_error(SC_ERR_NO_MEMORY, "sc_host_alloc_pinned: %zu bytes: out of memory",
                        bytes);
    if (sc_pinned_track(p) != SC_SUCCESS) {
        free(p);
        return SC_ERR_NO_MEMORY;
    }
    if (!__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED))
        sc_log(SC_LOG_INFO, "sc_host_alloc_pinned: %s, so staging memory is page-aligned "
                            "pageable memory", why);
    *ptr = p;
    return SC_SUCCESS;
}

sc_status_t sc_host_free_pinned_unknown(const void *ptr)
{
    return sc_error(SC_ERR_INVALID_ARG, "sc_host_free_pinned: %p was not allocated by "
                    "sc_host_alloc_pinned, or was freed already", ptr);
}
