/* UCX_TLS as shardcomm reads it, the UCX defaults it decides, and which of them it set in
 * the process's environment (ucx_env.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/ucx_env.h"

/* The suffix UCX 1.13 reads after a name as "that one, for wireup alone": "tcp:aux" and
 * "sm:aux" name tcp and sm, so that '^tcp:aux' excludes tcp as '^tcp' does. */
#define SC_UCX_TLS_AUX ":aux"

/* Whether the comma-separated list holds name; a transport's (not an alias's: strict)
 * also as "\name", which UCX 1.13 reads as that transport, never an alias; either also
 * followed by SC_UCX_TLS_AUX. */
static int sc_ucx_tls_has(const char *list, const char *name, int strict)
{
    size_t n = strlen(name), aux = strlen(SC_UCX_TLS_AUX);

    while (*list) {
        size_t len = strcspn(list, ",");
        size_t at = strict && list[0] == '\\';
        size_t named = len; /* the item without its suffix */

        if (len > aux && strncmp(list + len - aux, SC_UCX_TLS_AUX, aux) == 0)
            named -= aux;
        if (named - at == n && strncmp(list + at, name, n) == 0)
            return 1;
        list += len;
        if (*list == ',')
            list++;
    }
    return 0;
}

/* Whether UCX_TLS leaves UCX one of the transports members (NULL-ended), which each of
 * aliases (NULL-ended) holds: unset; all alone, or a list naming an alias or a member (as
 * itself or "\member", either with ":aux"); a list after '^' that excludes no alias and not every member.
 * UCX 1.13 reads "all" as every transport only at the list's head ('^all' too), and
 * refuses a list where more follow it; further on it names none ("sm,all" is the sm
 * transports alone). */
static int sc_ucx_tls_leaves(const char *const *members, const char *const *aliases)
{
    const char *tls = getenv("UCX_TLS");
    int negated, alias = 0, any = 0, every = 1;

    if (!tls || !*tls)
        return 1;
    negated = tls[0] == '^';
    tls += negated;
    for (const char *const *a = aliases; *a; a++)
        alias |= sc_ucx_tls_has(tls, *a, 0);
    for (const char *const *m = members; *m; m++) {
        int has = sc_ucx_tls_has(tls, *m, 1);
        any |= has;
        every &= has;
    }
    if (negated)
        return !alias && !every;
    return alias || any || strcmp(tls, "all") == 0;
}

/* The aliases that hold UCX's mm transports (posix, sysv, xpmem). */
static const char *const sc_ucx_mm_aliases[] = {"sm", "shm", "mm", NULL};

int sc_ucx_may_use_tcp(int single_node)
{
    static const char *const tcp[] = {"tcp", NULL}, *const none[] = {NULL};
    const char *tls = getenv("UCX_TLS");

    if (!tls || !*tls)
        return !single_node;
    return sc_ucx_tls_leaves(tcp, none);
}

int sc_ucx_may_use_shm(void)
{
    static const char *const mm[] = {"posix", "sysv", NULL};

    return sc_ucx_tls_leaves(mm, sc_ucx_mm_aliases);
}

int sc_ucx_may_use_posix(void)
{
    static const char *const posix[] = {"posix", NULL};

    return sc_ucx_tls_leaves(posix, sc_ucx_mm_aliases);
}

const char *const sc_ucx_var_names[SC_UCX_VAR_COUNT] = {"UCX_TLS", "UCX_RNDV_SCHEME",
                                                        "UCX_TCP_CONN_NB"};

const char *sc_ucx_default(sc_ucx_var_t v, int single_node)
{
    switch (v) {
    case SC_UCX_TLS:
        /* A loaded TCP interface costs an epoll_wait in every progress call. */
        return single_node ? "self,sm" : NULL;
    case SC_UCX_RNDV_SCHEME:
        /* Measured on shared memory with CMA: the sender writing (put) moves large
         * messages about 3x faster than the receiver reading (get). */
        return "put_zcopy";
    case SC_UCX_TCP_CONN_NB:
        /* TCP endpoints connect without blocking, so that a peer behind a link that drops
         * packets costs SC_TIMEOUT, not the kernel's two minutes of SYN retries. Only
         * where TCP may be used: UCX warns of a variable no transport reads. */
        return sc_ucx_may_use_tcp(single_node) ? "y" : NULL;
    case SC_UCX_VAR_COUNT:
        break;
    }
    return NULL;
}

/* What sc_ucx_setenv_default set, per variable (a default's static text); NULL: nothing. */
static const char *_Atomic sc_ucx_env_set[SC_UCX_VAR_COUNT];

void sc_ucx_setenv_default(sc_ucx_var_t v, const char *value)
{
    const char *name = sc_ucx_var_names[v], *mine = sc_ucx_set_here(v);

    /* What an earlier sc_comm_init set and this one would not (ranks on several nodes,
     * then a world of one): taken back, else UCX would read it, warn of a variable no
     * transport reads, and a program this process starts would take it for its user's. */
    if (mine && (!value || strcmp(mine, value) != 0)) {
        unsetenv(name);
        atomic_store(&sc_ucx_env_set[v], NULL);
    }
    if (!value || getenv(name)) /* the user's, or what an earlier call set */
        return;
    if (setenv(name, value, 0) == 0)
        atomic_store(&sc_ucx_env_set[v], value);
}

const char *sc_ucx_set_here(sc_ucx_var_t v)
{
    const char *set = atomic_load(&sc_ucx_env_set[v]), *now = getenv(sc_ucx_var_names[v]);

    return set && now && strcmp(set, now) == 0 ? set : NULL;
}

const char *sc_ucx_user_value(sc_ucx_var_t v)
{
    const char *now = getenv(sc_ucx_var_names[v]);

    return now && *now && !sc_ucx_set_here(v) ? now : NULL;
}
