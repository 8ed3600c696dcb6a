/* UCX_TLS as shardcomm reads it (ucx_env.h). */
#include <stdlib.h>
#include <string.h>

#include "collectives/ucx_env.h"

/* Whether the comma-separated list holds name. */
static int sc_ucx_tls_has(const char *list, const char *name)
{
    size_t n = strlen(name);

    while (*list) {
        size_t len = strcspn(list, ",");

        if (len == n && strncmp(list, name, len) == 0)
            return 1;
        list += len;
        if (*list == ',')
            list++;
    }
    return 0;
}

int sc_ucx_may_use_tcp(int single_node)
{
    const char *tls = getenv("UCX_TLS");

    if (!tls || !*tls)
        return !single_node;
    return tls[0] == '^' || sc_ucx_tls_has(tls, "tcp") || sc_ucx_tls_has(tls, "all");
}

int sc_ucx_may_use_shm(void)
{
    static const char *const shm_tls[] = {"all", "sm", "shm", "mm", "posix", "sysv"};
    const char *tls = getenv("UCX_TLS");

    if (!tls || !*tls)
        return 1;
    if (tls[0] == '^')
        return !(sc_ucx_tls_has(tls + 1, "sm") || sc_ucx_tls_has(tls + 1, "shm") ||
                 sc_ucx_tls_has(tls + 1, "mm") ||
                 (sc_ucx_tls_has(tls + 1, "posix") && sc_ucx_tls_has(tls + 1, "sysv")));
    for (size_t i = 0; i < sizeof(shm_tls) / sizeof(shm_tls[0]); i++)
        if (sc_ucx_tls_has(tls, shm_tls[i]))
            return 1;
    return 0;
}
