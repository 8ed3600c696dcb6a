/* Reading settings from the environment, first variable set wins: integers (plain, or
 * this node's entry of Slurm's per-node task counts), doubles, 0/1 switches and words. */
#ifndef SC_CORE_ENV_H
#define SC_CORE_ENV_H

#include <stddef.h>

#include "core/env_words.h"
#include "shardcomm/status.h"

/* Value of the first variable of the NULL-terminated list that is set and not empty;
 * NULL if none. *which (when not NULL) receives that variable's name. */
const char *sc_env_first(const char *const *names, const char **which);

/* Parses the first set variable of names as an integer (or a double). Returns
 * SC_SUCCESS with the default when none is set, SC_ERR_INVALID_ARG naming the
 * variable and its text (quoted where it holds a blank: sc_env_text) when its value
 * does not parse. */
sc_status_t sc_env_int(const char *const *names, long def, long *value);
sc_status_t sc_env_double(const char *const *names, double def, double *value);

/* A per-node count: an integer, or a list as Slurm writes SLURM_STEP_TASKS_PER_NODE
 * (and SLURM_TASKS_PER_NODE), "4(x2),3" (4 on nodes 0 and 1, 3 on
 * node 2). Equal counts give that count; different ones give node's entry (node: this
 * node's index, SLURM_NODEID), or def when node is negative or past the list: the
 * leading count holds on the first nodes only. SC_ERR_INVALID_ARG naming the variable
 * for other text. *value is written only on success. */
sc_status_t sc_env_int_per_node(const char *const *names, long def, long node, long *value);

/* An on/off setting: 1 or 0 as an integer (as sc_env_int reads it: "00" is 0), def when
 * no variable of names is set. SC_ERR_INVALID_ARG "VARIABLE=text must be 0 or 1" for
 * any other text. *on is written only on success. */
sc_status_t sc_env_switch(const char *const *names, int def, int *on);

/* One of a few words (env_words.h): *index is the position in w of the word the first
 * set variable of names names, def when none is set. SC_ERR_INVALID_ARG with
 * sc_env_words_refusal's sentence ("SC_ALGO=x is not one of auto|ring|rd") for another
 * text. *index is written only on success. */
sc_status_t sc_env_choice(const char *const *names, const sc_env_words_t *w, int def,
                          int *index);

#endif
