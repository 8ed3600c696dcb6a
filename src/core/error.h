/* Setting the thread-local error sentence that sc_last_error() returns. */
#ifndef SC_CORE_ERROR_H
#define SC_CORE_ERROR_H

#include <stddef.h>
#include <stdint.h>

#include "shardcomm/status.h"

#define SC_ERROR_MAX 1024

/* Formats the sentence, prefixed with "rank R: " once the rank is known, stores it
 * as the calling thread's last error and returns status (so `return sc_error(...)`). */
sc_status_t sc_error(sc_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The calling thread's last sentence without this rank's "rank R: " prefix (a prefix
 * naming another rank, whose sentence this rank was told, stays). */
const char *sc_error_text_unprefixed(void);

/* A public call's failure that an inner call's sentence describes ("sc_allgather
 * refused, ..."): the sentence starts with the public call's name unless it does
 * already. Returns status; SC_SUCCESS leaves the sentence alone. */
sc_status_t sc_error_in(sc_status_t status, const char *caller);

/* Whether value is one of sc_status_t's (a status read off the wire may be anything). */
int sc_status_known(int32_t value);

/* Stores text verbatim as the calling thread's last error. */
void sc_error_set_text(const char *text);

/* A switch (an on/off field or argument) is 0 or 1; anything else, most likely a field
 * never initialized, is SC_ERR_INVALID_ARG "fn: what is value, not 0 or 1". */
sc_status_t sc_check_switch(const char *fn, const char *what, int value);

/* A buffer of elem-byte elements (a power of two) starts at a multiple of elem, as C
 * requires of a pointer to them; else SC_ERR_INVALID_ARG "fn: name (p) is not aligned
 * to its elem-byte elements". NULL passes (the callers check it first). */
sc_status_t sc_check_aligned(const char *fn, const char *name, const void *p, size_t elem);

/* x into buf in the fewest significant digits (6 at least, as %g) that read back as x:
 * numbers that differ at all differ as text, in sentences and in settings compared as
 * text (0.01 and the next double up are both "0.01" in %g). */
void sc_error_double(char *buf, size_t len, double x);

/* Clears the calling thread's last error. */
void sc_error_clear(void);

#endif
