/* What shardcomm reads and decides of UCX's variables before ucp_init: which transports
 * UCX_TLS leaves to UCX, the defaults shardcomm gives UCX where the user's variable is
 * unset, and which of them it set in the environment. One place for sc_ucx_open,
 * sc_ucx_peer_local, the worker's /dev/shm hint and sc-info --config. */
#ifndef SC_COLLECTIVES_UCX_ENV_H
#define SC_COLLECTIVES_UCX_ENV_H

/* Whether UCX may pick its TCP transport: not on one node (single_node) without UCX_TLS
 * (shardcomm limits it to shared memory there), nor where UCX_TLS lists transports
 * without tcp (and is not all alone: "sm,all" is sm's alone, as UCX reads it), or
 * excludes tcp ('^tcp', or '^tcp:aux': UCX reads a name with ":aux" as that name). */
int sc_ucx_may_use_tcp(int single_node);

/* Whether UCX may carry messages to a peer on this node through shared memory (the mm
 * transports; cma, knem and xpmem only copy bulk data beside another transport): unless
 * UCX_TLS lists transports none of which is one, or excludes them ('^sm', '^shm', '^mm',
 * or both posix and sysv). Where it may not, nothing is mapped in shared memory (the
 * staging segments, the header mailboxes, registered memory read in place). */
int sc_ucx_may_use_shm(void);

/* Whether UCX_TLS leaves UCX its POSIX shared-memory transport, the one that maps its
 * segments in /dev/shm: unless UCX_TLS lists transports none of which is posix or an
 * alias holding it (sm, shm, mm; or all alone), or excludes it ('^posix', '^sm', '^shm',
 * '^mm').
 * The same reading of the list as sc_ucx_may_use_shm's. */
int sc_ucx_may_use_posix(void);

/* The UCX variables whose default shardcomm changes before ucp_init (a variable the
 * user set, and not empty, wins; UCX_DEBUG_SIGNO's is at load: transport_ucx.c). */
typedef enum {
    SC_UCX_TLS,         /* self,sm on one node */
    SC_UCX_RNDV_SCHEME, /* put_zcopy */
    SC_UCX_TCP_CONN_NB, /* y where TCP may be used */
    SC_UCX_VAR_COUNT
} sc_ucx_var_t;

/* "UCX_TLS", "UCX_RNDV_SCHEME", "UCX_TCP_CONN_NB", in sc_ucx_var_t's order. */
extern const char *const sc_ucx_var_names[SC_UCX_VAR_COUNT];

/* shardcomm's value of v where the user's variable is unset, for ranks all on one node
 * (single_node) or not, as the other variables are set now; NULL where shardcomm leaves
 * UCX's own default. */
const char *sc_ucx_default(sc_ucx_var_t v, int single_node);

/* Sets v to value in the process's environment where the variable is unset (an empty
 * one counts as set: sc_ucx_open unsets those first), for UCX to read at ucp_init, and
 * remembers that shardcomm set it: a later reader of the environment (sc-info --config
 * after sc_comm_init) would take it for the user's. value NULL, or another value than
 * an earlier call set: what that call set is unset first, where the variable still holds
 * it (a user's value written over it stays; one equal to it cannot be told apart).
 * Not thread-safe, as setenv is not. */
void sc_ucx_setenv_default(sc_ucx_var_t v, const char *value);

/* What sc_ucx_setenv_default set v to, where the variable still holds it; else NULL. */
const char *sc_ucx_set_here(sc_ucx_var_t v);

/* The user's value of v: its variable, where set, not empty and not what shardcomm set
 * (sc_ucx_set_here); else NULL. */
const char *sc_ucx_user_value(sc_ucx_var_t v);

#endif
