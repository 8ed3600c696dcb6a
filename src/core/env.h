/* Reading settings from the environment, first variable set wins: integers (plain, or
 * leading as Slurm writes task counts) and doubles. */
#ifndef SC_CORE_ENV_H
#define SC_CORE_ENV_H

#include <stddef.h>
#include "shardcomm/status.h"

/* Value of the first variable of the NULL-terminated list that is set and not empty;
 * NULL if none. *which (when not NULL) receives that variable's name. */
const char *sc_env_first(const char *const *names, const char **which);

/* Parses the first set variable of names as an integer (or a double). Returns
 * SC_SUCCESS with the default when none is set, SC_ERR_INVALID_ARG naming the
 * variable when its value does not parse. */
sc_status_t sc_env_int(const char *const *names, long def, long *value);
sc_status_t sc_env_double(const char *const *names, double def, double *value);

/* Like sc_env_int, but a value made of a leading integer followed by '(' or ',' gives
 * that integer: Slurm writes SLURM_NTASKS_PER_NODE as "4(x2)" or "4,2" when the job
 * spans several nodes. Anything else that is not an integer is SC_ERR_INVALID_ARG
 * naming the variable. *value is written only on success. */
sc_status_t sc_env_int_leading(const char *const *names, long def, long *value);

/* A switch that is on unless switched off: 1 when the first set variable of names is
 * the integer 0 ("0", "00"), 0 otherwise (unset, or any other value: on). */
int sc_env_switched_off(const char *const *names);

#endif
