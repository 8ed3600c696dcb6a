/* The words of the settings that name one of a few (SC_BIND, SC_LOG_LEVEL, SC_ALGO,
 * SC_EAGER_SENDS, SC_CPU_ISA): one table that their parsers, sc-info and scrun read, and
 * the sentence refusing another text. libc alone: scrun, which links no library, builds
 * env_words.c in. */
#ifndef SC_CORE_ENV_WORDS_H
#define SC_CORE_ENV_WORDS_H

#include <stddef.h>

typedef struct {
    const char *const *words; /* NULL-terminated; words[i] names value i */
    int any_case;             /* 1: case-insensitive */
    int numbered;             /* 1: the digit i alone names words[i] too */
} sc_env_words_t;

extern const sc_env_words_t sc_env_bind_words;        /* core none (any case) */
extern const sc_env_words_t sc_env_log_level_words;   /* error ... trace (any case), 0-4 */
extern const sc_env_words_t sc_env_algo_words;        /* auto ring rd */
extern const sc_env_words_t sc_env_eager_sends_words; /* auto on off */
extern const sc_env_words_t sc_env_cpu_isa_words;     /* scalar avx2 avx512 (any case) */

/* The index of the word text names, -1 for none. */
int sc_env_words_find(const sc_env_words_t *w, const char *text);

/* The words as every sentence lists them, into buf (len bytes): "auto|ring|rd",
 * "error|warn|info|debug|trace or 0-4" for a numbered list. Returns buf. */
const char *sc_env_words_list(const sc_env_words_t *w, char *buf, size_t len);

/* The sentence refusing text as variable which's value, into buf (len bytes):
 * "SC_ALGO=x is not one of auto|ring|rd", the text as sc_env_text writes it (quoted
 * where it holds a blank). Returns buf. */
const char *sc_env_words_refusal(const sc_env_words_t *w, const char *which,
                                 const char *text, char *buf, size_t len);

#endif
