/* A set of pointers under its own lock (ptr_set.h). */
#include <stdlib.h>

#include "core/ptr_set.h"

/* The index of p, or len when absent. Caller holds s->lock. */
static size_t sc_ptr_set_find(const sc_ptr_set_t *s, const void *p)
{
    size_t i = 0;

    while (i < s->len && s->items[i] != p)
        i++;
    return i;
}

int sc_ptr_set_add(sc_ptr_set_t *s, const void *p, int unique)
{
    int added = 1;

    pthread_mutex_lock(&s->lock);
    if (unique && sc_ptr_set_find(s, p) < s->len) {
        added = 0;
    } else if (s->len == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        const void **grown = realloc(s->items, cap * sizeof(*grown));
        if (grown) {
            s->items = grown;
            s->cap = cap;
        } else {
            added = -1;
        }
    }
    if (added == 1)
        s->items[s->len++] = p;
    pthread_mutex_unlock(&s->lock);
    return added;
}

int sc_ptr_set_remove(sc_ptr_set_t *s, const void *p)
{
    size_t i;
    int found;

    pthread_mutex_lock(&s->lock);
    i = sc_ptr_set_find(s, p);
    found = i < s->len;
    if (found)
        s->items[i] = s->items[--s->len];
    if (s->len == 0) {
        free(s->items);
        s->items = NULL;
        s->cap = 0;
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

int sc_ptr_set_contains(sc_ptr_set_t *s, const void *p)
{
    return sc_ptr_set_contains_then(s, p, NULL, NULL);
}

int sc_ptr_set_contains_then(sc_ptr_set_t *s, const void *p,
                             void (*then)(const void *p, void *arg), void *arg)
{
    int found;

    pthread_mutex_lock(&s->lock);
    found = sc_ptr_set_find(s, p) < s->len;
    if (found && then)
        then(p, arg);
    pthread_mutex_unlock(&s->lock);
    return found;
}
