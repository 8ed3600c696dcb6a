/* Setting the thread-local error sentence that sc_last_error() returns. */
#ifndef SC_CORE_ERROR_H
#define SC_CORE_ERROR_H

#include "shardcomm/status.h"

#define SC_ERROR_MAX 1024

/* Formats the sentence, prefixed with "rank R: " once the rank is known, stores it
 * as the calling thread's last error and returns status (so `return sc_error(...)`). */
sc_status_t sc_error(sc_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Stores text verbatim as the calling thread's last error. */
void sc_error_set_text(const char *text);

/* Clears the calling thread's last error. */
void sc_error_clear(void);

#endif
