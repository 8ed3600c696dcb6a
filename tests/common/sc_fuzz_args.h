/* What the differential fuzzers (collectives, reducer, compression) share on their
 * command line: number arguments (--seed, --cases, ...: decimal, or hexadecimal after
 * 0x; nothing else in the string, no sign), the environment written in front of a
 * reproducer line and its number of ranks. */
#ifndef SC_TEST_FUZZ_ARGS_H
#define SC_TEST_FUZZ_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

extern char **environ;

/* The settings of this run that change what its cases do, as "NAME=value " to write in
 * front of a reproducer line: every SC_ and UCX_ variable set and not empty (a value
 * other than letters, digits and _.,:/^+- in single quotes), but those that place this
 * process in the launch, which scrun sets from its own command line. Read at the first
 * call, which each fuzzer makes before sc_comm_init: the UCX transport sets a UCX
 * variable of its own there (UCX_TCP_CONN_NB). */
static inline const char *sc_fuzz_env_prefix(void)
{
    static const char *const launch[] = {"SC_RANK=",       "SC_WORLD_SIZE=", "SC_LOCAL_RANK=",
                                         "SC_LOCAL_SIZE=", "SC_NODE_RANK=",  "SC_MASTER_ADDR=",
                                         "SC_MASTER_PORT=", "SC_BIND="};
    static const char plain[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                "0123456789_.,:/^+-";
    static char line[2048];
    static int taken;
    size_t used = 0;

    if (taken)
        return line;
    taken = 1;
    for (char **e = environ; *e && used < sizeof(line); e++) {
        const char *eq = strchr(*e, '=');
        int ours = strncmp(*e, "SC_", 3) == 0 || strncmp(*e, "UCX_", 4) == 0;
        int skip = !ours || !eq || !eq[1];

        for (size_t i = 0; !skip && i < sizeof(launch) / sizeof(launch[0]); i++)
            skip = strncmp(*e, launch[i], strlen(launch[i])) == 0;
        if (!skip)
            used += (size_t)snprintf(line + used, sizeof(line) - used,
                                     eq[1 + strspn(eq + 1, plain)] ? "%.*s'%s' " : "%.*s%s ",
                                     (int)(eq + 1 - *e), *e, eq + 1);
    }
    return line;
}

/* The ranks of the run for a reproducer line: size, or before the communicator exists
 * (its sc_comm_init failed) the world size scrun gave, else 1. */
static inline int sc_fuzz_ranks(int size)
{
    const char *v = getenv("SC_WORLD_SIZE");

    if (size > 0)
        return size;
    return v && atoi(v) > 0 ? atoi(v) : 1;
}

#endif
