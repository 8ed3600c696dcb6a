/* What the differential fuzzers (collectives, reducer, compression) share on their
 * command line: number arguments (--seed, --cases, ...: decimal, or hexadecimal after
 * 0x; nothing else in the string, no sign) and the environment written in front of a
 * reproducer line. */
#ifndef SC_TEST_FUZZ_ARGS_H
#define SC_TEST_FUZZ_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* 1 and *out set when s is such a number, else 0 and *out untouched. */
static inline int sc_parse_ull(const char *s, unsigned long long *out)
{
    char *end;
    unsigned long long v;

    if (!*s || *s == '-' || *s == '+')
        return 0;
    v = strtoull(s, &end, s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10);
    if (*end)
        return 0;
    *out = v;
    return 1;
}

static inline int sc_parse_u64(const char *s, uint64_t *out)
{
    unsigned long long v;

    if (!sc_parse_ull(s, &v))
        return 0;
    *out = (uint64_t)v;
    return 1;
}

static inline int sc_parse_size(const char *s, size_t *out)
{
    unsigned long long v;

    if (!sc_parse_ull(s, &v) || v > SIZE_MAX)
        return 0;
    *out = (size_t)v;
    return 1;
}

/* Writes "NAME=value " for each of the n variables that is set and not empty into line
 * (len bytes, NUL-terminated); returns the bytes written, at most len - 1. */
static inline size_t sc_fuzz_env_prefix(char *line, size_t len, const char *const *names,
                                        size_t n)
{
    size_t used = 0;

    line[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(names[i]);
        if (v && *v && used < len)
            used += (size_t)snprintf(line + used, len - used, "%s=%s ", names[i], v);
    }
    return used >= len ? len - 1 : used;
}

#endif
