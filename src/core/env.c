/* Settings from the environment: the first variable of a list that is set wins. */
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
    if (errno || end == s || (*end != '\0' && !strchr(stops, *end)))
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
    if (errno || end == s || *end != '\0')
        return sc_error(SC_ERR_INVALID_ARG, "%s=%s is not a number", which, s);
    *value = v;
    return SC_SUCCESS;
}
