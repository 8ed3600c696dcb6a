/* Logging to stderr with a "[shardcomm rank R]" prefix, filtered by SC_LOG_LEVEL. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/env_text.h"
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

static int sc_log_parse_level(const char *s)
{
    static const char *const names[] = {"error", "warn", "info", "debug", "trace"};
    char text[SC_ENV_TEXT_MAX];

    for (int i = 0; i < 5; i++)
        if (strcasecmp(s, names[i]) == 0)
            return i;
    if (s[0] >= '0' && s[0] <= '4' && s[1] == '\0')
        return s[0] - '0';
    fprintf(stderr, "shardcomm: SC_LOG_LEVEL=%s is not one of error|warn|info|debug|trace"
                    " or 0-4; using warn\n", sc_env_text(s, text, sizeof(text)));
    return SC_LOG_WARN;
}

sc_log_level_t sc_log_level(void)
{
    int level = __atomic_load_n(&sc_log_level_value, __ATOMIC_RELAXED);
    if (level < 0) {
        const char *s = getenv("SC_LOG_LEVEL");
        level = (s && *s) ? sc_log_parse_level(s) : SC_LOG_WARN;
        __atomic_store_n(&sc_log_level_value, level, __ATOMIC_RELAXED);
    }
    return (sc_log_level_t)level;
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
