/* Number arguments of the test programs (the fuzzers' --seed, --cases, ...): decimal,
 * or hexadecimal after 0x; nothing else in the string, no sign. */
#ifndef SC_TEST_PARSE_H
#define SC_TEST_PARSE_H

#include <stddef.h>
#include <stdint.h>
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

#endif
