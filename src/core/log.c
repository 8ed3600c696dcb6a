/* Logging to stderr with a "[shardcomm rank R]" prefix, filtered by SC_LOG_LEVEL. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/env_words.h"
#include "core/log.h"

static int sc_log_rank_value = -1;
static int sc_log_level_value = -1;

void sc_log_set_rank(int rank)
{
    sc_log_rank_value = rank;
}

int sc_log_rank(void)
{
    return sc_log_rank_value;
}

sc_log_level_t sc_log_level(void)
{
    int level = __atomic_load_n(&sc_log_level_value, __ATOMIC_RELAXED), unset = -1;
    const char *s;
    char sentence[512];

    if (level >= 0)
        return (sc_log_level_t)level;
    s = getenv("SC_LOG_LEVEL");
    level = s && *s ? sc_env_words_find(&sc_env_log_level_words, s) : SC_LOG_WARN;
    /* An unknown level is warn, said once in a WARN line by the thread that stores it
     * (threads that read it first at once each printed it, in a format of its own). */
    if (__atomic_compare_exchange_n(&sc_log_level_value, &unset,
                                    level < 0 ? (int)SC_LOG_WARN : level, 0,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED) &&
        level < 0)
        sc_log_write(SC_LOG_WARN, "%s; using warn",
                     sc_env_words_refusal(&sc_env_log_level_words, "SC_LOG_LEVEL", s,
                                          sentence, sizeof(sentence)));
    return (sc_log_level_t)__atomic_load_n(&sc_log_level_value, __ATOMIC_RELAXED);
}

void sc_log_write(sc_log_level_t level, const char *fmt, ...)
{
    static const char *const tags[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
    char line[2048];
    int n;
    va_list ap;

    if (sc_log_rank_value >= 0)
        n = snprintf(line, sizeof(line), "[shardcomm rank %d] %s: ", sc_log_rank_value,
                     tags[level]);
    else
        n = snprintf(line, sizeof(line), "[shardcomm] %s: ", tags[level]);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
