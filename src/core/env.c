/* Settings from the environment: the first variable of a list that is set wins. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/error.h"

const char *sc_env_first(const char *const *names, const char **which)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (v && *v) {
            if (which)
                *which = *names;
            return v;
        }
    }
    return NULL;
}

/* Whether s starts as a number is written: a digit or a minus sign (a number also with a
 * point or a letter, for inf and nan). strtol and strtod would also take leading
 * blanks and a plus sign, which the settings' documentation does not allow. */
static int sc_env_plain_start(const char *s, int number)
{
    unsigned char c = (unsigned char)s[0];

    return isdigit(c) || c == '-' || (number && (c == '.' || isalpha(c)));
}

/* The integer at the start of the first set variable, which may be followed only by
 * the end of the string or, when stops is not empty, one of its characters. */
static sc_status_t sc_env_long(const char *const *names, long def, const char *stops,
                               long *value)
{
    const char *which = NULL;
    const char *s = sc_env_first(names, &which);
    char *end;
    long v;

    if (!s) {
        *value = def;
        return SC_SUCCESS;
    }
    errno = 0;
    v = strtol(s, &end, 10);
    if (!sc_env_plain_start(s, 0) || errno || end == s ||
        (*end != '\0' && !strchr(stops, *end)))
        return sc_error(SC_ERR_INVALID_ARG, "%s=%s is not an integer", which, s);
    *value = v;
    return SC_SUCCESS;
}

sc_status_t sc_env_int(const char *const *names, long def, long *value)
{
    return sc_env_long(names, def, "", value);
}

sc_status_t sc_env_int_leading(const char *const *names, long def, long *value)
{
    return sc_env_long(names, def, "(,", value);
}

int sc_env_switched_off(const char *const *names)
{
    long v = 1;

    return sc_env_first(names, NULL) && sc_env_int(names, 1, &v) == SC_SUCCESS && v == 0;
}

sc_status_t sc_env_double(const char *const *names, double def, double *value)
{
    const char *which = NULL;
    const char *s = sc_env_first(names, &which);
    char *end;
    double v;

    if (!s) {
        *value = def;
        return SC_SUCCESS;
    }
    errno = 0;
    v = strtod(s, &end);
    /* Out of range is not an error: past the largest double is infinity (SC_TIMEOUT=1e400
     * waits for ever, as the documentation says any number of seconds does), below the
     * smallest is about 0. Hexadecimal is not a number here. */
    if (!sc_env_plain_start(s, 1) || (errno && errno != ERANGE) || end == s || *end != '\0' ||
        strpbrk(s, "xX"))
        return sc_error(SC_ERR_INVALID_ARG, "%s=%s is not a number", which, s);
    *value = v;
    return SC_SUCCESS;
}
