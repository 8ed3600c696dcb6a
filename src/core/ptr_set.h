/* A set of pointers under its own lock: the registry of live communicators
 * (comm_registry.c) and the hook states live reducers own (reducer.c). */
#ifndef SC_CORE_PTR_SET_H
#define SC_CORE_PTR_SET_H

#include <pthread.h>
#include <stddef.h>

typedef struct {
    pthread_mutex_t lock; /* taken by each call; a caller may hold it across fork() */
    const void **items;
    size_t len, cap;
} sc_ptr_set_t;

#define SC_PTR_SET_INIT {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0}

/* Adds p: 1 when added, 0 when unique is set and p is in the set already (nothing
 * added), -1 out of memory. */
int sc_ptr_set_add(sc_ptr_set_t *s, const void *p, int unique);

/* Removes p: 1 when it was in the set. The set's memory goes with its last item. */
int sc_ptr_set_remove(sc_ptr_set_t *s, const void *p);

int sc_ptr_set_contains(sc_ptr_set_t *s, const void *p);

/* sc_ptr_set_contains that also calls then(p, arg) under the set's lock when p is in it,
 * so that p cannot be removed in between (a communicator counted as entered before its
 * destroy can take it out, or marked as issued on by a thread before another thread's
 * destroy can). */
int sc_ptr_set_contains_then(sc_ptr_set_t *s, const void *p,
                             void (*then)(const void *p, void *arg), void *arg);

#endif
