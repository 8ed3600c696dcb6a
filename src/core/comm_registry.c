/* The registry of live communicators: a handle is looked up before it is dereferenced,
 * so that a destroyed, never-created or inherited (fork) communicator is refused with a
 * sentence instead of read; and the getters (rank, size, local rank and size) that
 * answer -1 for such a handle. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/comm_internal.h"
#include "core/error.h"

static pthread_mutex_t sc_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static const sc_comm_t **sc_registry;
static size_t sc_registry_len, sc_registry_cap;
/* Set in a forked child: the communicators it inherited are the parent's (their
 * threads and UCX state are not in the child) and are refused there. */
static int sc_registry_forked;
static pthread_once_t sc_registry_once = PTHREAD_ONCE_INIT;

/* The registry's lock is held across fork(), so that the child gets it unlocked. */
static void sc_registry_fork_prepare(void) { pthread_mutex_lock(&sc_registry_lock); }
static void sc_registry_fork_parent(void) { pthread_mutex_unlock(&sc_registry_lock); }
static void sc_registry_fork_child(void)
{
    pthread_mutex_unlock(&sc_registry_lock);
    __atomic_store_n(&sc_registry_forked, 1, __ATOMIC_RELAXED);
}

static void sc_registry_watch_fork(void)
{
    pthread_atfork(sc_registry_fork_prepare, sc_registry_fork_parent, sc_registry_fork_child);
}

sc_status_t sc_registry_add(const sc_comm_t *c)
{
    sc_status_t st = SC_SUCCESS;

    pthread_once(&sc_registry_once, sc_registry_watch_fork);
    pthread_mutex_lock(&sc_registry_lock);
    if (sc_registry_len == sc_registry_cap) {
        size_t cap = sc_registry_cap ? 2 * sc_registry_cap : 16;
        const sc_comm_t **r = realloc(sc_registry, cap * sizeof(*r));
        if (!r) {
            st = sc_error(SC_ERR_NO_MEMORY, "communicator registry: out of memory");
            goto out;
        }
        sc_registry = r;
        sc_registry_cap = cap;
    }
    sc_registry[sc_registry_len++] = c;
out:
    pthread_mutex_unlock(&sc_registry_lock);
    return st;
}

int sc_registry_remove(const sc_comm_t *c)
{
    int found = 0;

    pthread_mutex_lock(&sc_registry_lock);
    for (size_t i = 0; i < sc_registry_len; i++) {
        if (sc_registry[i] == c) {
            sc_registry[i] = sc_registry[--sc_registry_len];
            found = 1;
            break;
        }
    }
    if (sc_registry_len == 0) {
        free(sc_registry);
        sc_registry = NULL;
        sc_registry_cap = 0;
    }
    pthread_mutex_unlock(&sc_registry_lock);
    return found;
}

int sc_process_is_fork_of(pid_t owner)
{
    return __atomic_load_n(&sc_registry_forked, __ATOMIC_RELAXED) && owner != getpid();
}

sc_status_t sc_comm_check_handle(const sc_comm_t *c, const char *caller)
{
    int found = 0;

    if (!c)
        return sc_error(SC_ERR_INVALID_COMM, "%s: communicator is NULL", caller);
    pthread_mutex_lock(&sc_registry_lock);
    for (size_t i = 0; i < sc_registry_len && !found; i++)
        found = sc_registry[i] == c;
    pthread_mutex_unlock(&sc_registry_lock);
    if (!found)
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

sc_status_t sc_comm_check(const sc_comm_t *c, const char *caller)
{
    sc_status_t st = sc_comm_check_handle(c, caller);

    if (st != SC_SUCCESS)
        return st;
    if (__atomic_load_n(&c->broken, __ATOMIC_ACQUIRE) != SC_SUCCESS) {
        char text[SC_ERROR_MAX];
        snprintf(text, sizeof(text), "%s refused, the communicator failed earlier: %.900s",
                 caller, c->broken_text);
        sc_error_set_text(text);
        return c->broken;
    }
    return SC_SUCCESS;
}

static int sc_comm_field(const sc_comm_t *comm, int which)
{
    int v = -1;

    pthread_mutex_lock(&sc_registry_lock);
    for (size_t i = 0; i < sc_registry_len; i++) {
        if (sc_registry[i] == comm) {
            v = which == 0 ? comm->rank
                : which == 1 ? comm->size
                : which == 2 ? comm->local_rank
                             : comm->local_size;
            break;
        }
    }
    pthread_mutex_unlock(&sc_registry_lock);
    return v;
}

SC_API int sc_comm_rank(const sc_comm_t *comm) { return sc_comm_field(comm, 0); }
SC_API int sc_comm_size(const sc_comm_t *comm) { return sc_comm_field(comm, 1); }
SC_API int sc_comm_local_rank(const sc_comm_t *comm) { return sc_comm_field(comm, 2); }
SC_API int sc_comm_local_size(const sc_comm_t *comm) { return sc_comm_field(comm, 3); }
