/* Settings from the environment: the first variable of a list that is set wins. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/env_text.h"
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

sc_status_t sc_env_int(const char *const *names, long def, long *value)
{
    const char *which = NULL;
    const char *s = sc_env_first(names, &which);
    char text[SC_ENV_TEXT_MAX], *end;
    long v;

    if (!s) {
        *value = def;
        return SC_SUCCESS;
    }
    errno = 0;
    v = strtol(s, &end, 10);
    if (!sc_env_plain_start(s, 0) || (errno && errno != ERANGE) || end == s || *end != '\0')
        return sc_error(SC_ERR_INVALID_ARG, "%s=%s is not an integer", which,
                        sc_env_text(s, text, sizeof(text)));
    if (errno == ERANGE) /* an integer all the same: say what is wrong with it */
        return sc_error(SC_ERR_INVALID_ARG, "%s=%s is out of range", which, s);
    *value = v;
    return SC_SUCCESS;
}

/* One count of a per-node list at *s ("4(x2)" or "3"): the count and how many nodes
 * it covers; *s moves past it. 0 on success, -1 when the text is not such a count, -2
 * when a number of it is past what a long holds. */
static int sc_env_count_item(const char **s, long *count, long *nodes)
{
    char *end;

    if (!isdigit((unsigned char)**s))
        return -1;
    errno = 0;
    *count = strtol(*s, &end, 10);
    *nodes = 1;
    if (errno)
        return errno == ERANGE ? -2 : -1;
    if (strncmp(end, "(x", 2) == 0) {
        const char *n = end + 2;
        if (!isdigit((unsigned char)*n))
            return -1;
        *nodes = strtol(n, &end, 10);
        if (errno == ERANGE)
            return -2;
        if (errno || *nodes < 1 || *end != ')')
            return -1;
        end++;
    }
    *s = end;
    return 0;
}

sc_status_t sc_env_int_per_node(const char *const *names, long def, long node, long *value)
{
    const char *which = NULL;
    const char *s = sc_env_first(names, &which), *p;
    char text[SC_ENV_TEXT_MAX];
    long first = -1, mine = -1, index = 0;
    int differ = 0;

    if (!s) {
        *value = def;
        return SC_SUCCESS;
    }
    if (s[0] == '-') /* a negative number: the caller names it out of range */
        return sc_env_int(names, def, value);
    for (p = s;;) {
        long count, nodes;
        int item = sc_env_count_item(&p, &count, &nodes);
        /* A number past a long, or more nodes in all than a long counts. */
        if (item == -2 || (item == 0 && nodes > LONG_MAX - index))
            return sc_error(SC_ERR_INVALID_ARG, "%s=%s is out of range", which,
                            sc_env_text(s, text, sizeof(text)));
        if (item != 0 || (*p != '\0' && *p != ','))
            return sc_error(SC_ERR_INVALID_ARG, "%s=%s is not an integer, nor a list of "
                            "per-node counts as Slurm writes them (\"4(x2),3\")", which,
                            sc_env_text(s, text, sizeof(text)));
        if (first < 0)
            first = count;
        differ |= count != first;
        if (node >= index && node - index < nodes)
            mine = count;
        index += nodes;
        if (*p == '\0')
            break;
        p++;
    }
    /* Equal counts hold on every node; different ones only on the node they are for. */
    *value = !differ ? first : mine >= 0 ? mine : def;
    return SC_SUCCESS;
}

sc_status_t sc_env_switch(const char *const *names, int def, int *on)
{
    const char *which = NULL;
    const char *s = sc_env_first(names, &which);
    char text[SC_ENV_TEXT_MAX];
    long v = def;

    if (s && (sc_env_int(names, def, &v) != SC_SUCCESS || (v != 0 && v != 1)))
        return sc_error(SC_ERR_INVALID_ARG, "%s=%s must be 0 or 1", which,
                        sc_env_text(s, text, sizeof(text)));
    *on = (int)v;
    return SC_SUCCESS;
}

sc_status_t sc_env_double(const char *const *names, double def, double *value)
{
    const char *which = NULL;
    const char *s = sc_env_first(names, &which);
    char text[SC_ENV_TEXT_MAX], *end;
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
        return sc_error(SC_ERR_INVALID_ARG, "%s=%s is not a number", which,
                        sc_env_text(s, text, sizeof(text)));
    *value = v;
    return SC_SUCCESS;
}

sc_status_t sc_env_choice(const char *const *names, const sc_env_words_t *w, int def,
                          int *index)
{
    const char *which = NULL;
    const char *s = sc_env_first(names, &which);
    char sentence[SC_ENV_TEXT_MAX + 192];
    int i = s ? sc_env_words_find(w, s) : def;

    if (s && i < 0)
        return sc_error(SC_ERR_INVALID_ARG, "%s",
                        sc_env_words_refusal(w, which, s, sentence, sizeof(sentence)));
    *index = i;
    return SC_SUCCESS;
}
