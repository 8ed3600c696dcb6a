/* Pinned host memory, the part both builds share: the record of the allocations
 * sc_host_alloc_pinned handed out (so that sc_host_free_pinned refuses a pointer it never
 * handed out, or already took back, instead of crashing in free()), and the pageable
 * stand-in where nothing can be pinned. */
#ifndef SC_CORE_MEMORY_PINNED_H
#define SC_CORE_MEMORY_PINNED_H

#include <stddef.h>

#include "shardcomm/status.h"

/* Records ptr (not NULL, not recorded yet). SC_ERR_NO_MEMORY when the table cannot
 * grow; then nothing is recorded. Thread-safe. */
sc_status_t sc_pinned_track(void *ptr);

/* Removes ptr: 1 when it was recorded, 0 when not (nothing changed). Thread-safe. */
int sc_pinned_untrack(void *ptr);

/* The stand-in for pinned memory: page-aligned pageable memory, recorded; the reason
 * (why) logged once. *ptr written only on success. */
sc_status_t sc_host_alloc_pinned_standin(size_t bytes, void **ptr, const char *why);

/* SC_ERR_INVALID_ARG for a pointer sc_host_free_pinned does not know. */
sc_status_t sc_host_free_pinned_unknown(const void *ptr);

#endif
