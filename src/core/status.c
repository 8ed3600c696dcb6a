/* sc_status_string and the thread-local error sentence. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/log.h"

static _Thread_local char sc_error_text[SC_ERROR_MAX];

SC_API const char *sc_status_string(sc_status_t status)
{
    switch (status) {
    case SC_SUCCESS: return "SC_SUCCESS";
    case SC_IN_PROGRESS: return "SC_IN_PROGRESS";
    case SC_ERR_INVALID_ARG: return "SC_ERR_INVALID_ARG";
    case SC_ERR_UNSUPPORTED: return "SC_ERR_UNSUPPORTED";
    case SC_ERR_NO_MEMORY: return "SC_ERR_NO_MEMORY";
    case SC_ERR_TIMEOUT: return "SC_ERR_TIMEOUT";
    case SC_ERR_PEER_FAILED: return "SC_ERR_PEER_FAILED";
    case SC_ERR_MISMATCH: return "SC_ERR_MISMATCH";
    case SC_ERR_ABORTED: return "SC_ERR_ABORTED";
    case SC_ERR_INVALID_COMM: return "SC_ERR_INVALID_COMM";
    case SC_ERR_TRANSPORT: return "SC_ERR_TRANSPORT";
    case SC_ERR_SYSTEM: return "SC_ERR_SYSTEM";
    case SC_ERR_INTERNAL: return "SC_ERR_INTERNAL";
    case SC_ERR_DEVICE: return "SC_ERR_DEVICE";
    }
    return "SC_ERR_UNKNOWN_STATUS";
}

int sc_status_known(int32_t value)
{
    return strcmp(sc_status_string((sc_status_t)value), "SC_ERR_UNKNOWN_STATUS") != 0;
}

SC_API const char *sc_last_error(void)
{
    return sc_error_text;
}

sc_status_t sc_error(sc_status_t status, const char *fmt, ...)
{
    char msg[SC_ERROR_MAX - 32];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (sc_log_rank() >= 0)
        snprintf(sc_error_text, sizeof(sc_error_text), "rank %d: %s", sc_log_rank(), msg);
    else
        snprintf(sc_error_text, sizeof(sc_error_text), "%s", msg);
    sc_log(SC_LOG_DEBUG, "%s: %s", sc_status_string(status), msg);
    return status;
}

const char *sc_error_text_unprefixed(void)
{
    char own[32];
    int n;

    /* This rank's prefix only: a sentence a peer sent (its abort, its refusal) keeps the
     * name of the rank it came from. */
    if (sc_log_rank() < 0)
        return sc_error_text;
    n = snprintf(own, sizeof(own), "rank %d: ", sc_log_rank());
    return strncmp(sc_error_text, own, (size_t)n) == 0 ? sc_error_text + n : sc_error_text;
}

sc_status_t sc_error_in(sc_status_t status, const char *caller)
{
    const char *inner = sc_error_text_unprefixed();
    char copy[SC_ERROR_MAX];
    size_t n = strlen(caller);

    if (status == SC_SUCCESS)
        return status;
    if (strncmp(inner, caller, n) == 0 && (inner[n] == ':' || inner[n] == ' '))
        return status;
    snprintf(copy, sizeof(copy), "%s", inner);
    return sc_error(status, "%s: %s", caller, copy);
}

void sc_error_set_text(const char *text)
{
    snprintf(sc_error_text, sizeof(sc_error_text), "%s", text);
}

sc_status_t sc_check_switch(const char *fn, const char *what, int value)
{
    if (value == 0 || value == 1)
        return SC_SUCCESS;
    return sc_error(SC_ERR_INVALID_ARG, "%s: %s is %d, not 0 or 1", fn, what, value);
}

sc_status_t sc_check_aligned(const char *fn, const char *name, const void *p, size_t elem)
{
    if (((uintptr_t)p & (elem - 1)) == 0)
        return SC_SUCCESS;
    return sc_error(SC_ERR_INVALID_ARG, "%s: %s (%p) is not aligned to its %zu-byte elements",
                    fn, name, p, elem);
}

void sc_error_double(char *buf, size_t len, double x)
{
    /* Also tells gcc's -Wformat-truncation, under AddressSanitizer, that buf is no NULL. */
    if (!buf || len == 0)
        return;
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

void sc_error_clear(void)
{
    sc_error_text[0] = '\0';
}
