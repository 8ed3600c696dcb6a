/* The words of the enumerated settings, how they are found and how a refusal lists
 * them (env_words.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/env_text.h"
#include "core/env_words.h"

static const char *const sc_env_bind_list[] = {"core", "none", NULL};
static const char *const sc_env_log_level_list[] = {"error", "warn", "info", "debug", "trace",
                                                    NULL};
static const char *const sc_env_algo_list[] = {"auto", "ring", "rd", NULL};
static const char *const sc_env_eager_sends_list[] = {"auto", "on", "off", NULL};
static const char *const sc_env_cpu_isa_list[] = {"scalar", "avx2", "avx512", NULL};

const sc_env_words_t sc_env_bind_words = {sc_env_bind_list, 1, 0};
const sc_env_words_t sc_env_log_level_words = {sc_env_log_level_list, 1, 1};
const sc_env_words_t sc_env_algo_words = {sc_env_algo_list, 0, 0};
const sc_env_words_t sc_env_eager_sends_words = {sc_env_eager_sends_list, 0, 0};
const sc_env_words_t sc_env_cpu_isa_words = {sc_env_cpu_isa_list, 1, 0};

int sc_env_words_find(const sc_env_words_t *w, const char *text)
{
    for (int i = 0; w->words[i]; i++) {
        if (w->numbered && text[0] == '0' + i && text[1] == '\0')
            return i;
        if ((w->any_case ? strcasecmp(text, w->words[i]) : strcmp(text, w->words[i])) == 0)
            return i;
    }
    return -1;
}

const char *sc_env_words_list(const sc_env_words_t *w, char *buf, size_t len)
{
    size_t n = 0;
    int i;

    buf[0] = '\0';
    for (i = 0; w->words[i] && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "|" : "", w->words[i]);
    if (w->numbered && n < len)
        snprintf(buf + n, len - n, " or 0-%d", i - 1);
    return buf;
}

const char *sc_env_words_refusal(const sc_env_words_t *w, const char *which,
                                 const char *text, char *buf, size_t len)
{
    char shown[SC_ENV_TEXT_MAX], list[128];

    snprintf(buf, len, "%s=%s is not one of %s", which,
             sc_env_text(text, shown, sizeof(shown)), sc_env_words_list(w, list, sizeof(list)));
    return buf;
}
