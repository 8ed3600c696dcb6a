/* The machine through hwloc: each local rank bound to its contiguous share of the cores
 * the process was allowed to use before shardcomm first bound it, and the size of the
 * caches of the core a thread runs on (sc_info_cache_bytes). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "core/env_names.h"
#include "core/error.h"
#include "core/log.h"
#include "core/topology.h"
#include "shardcomm/info.h"

/* Loaded once per process and only read afterwards, so concurrent binds are safe. */
static pthread_once_t sc_topology_once = PTHREAD_ONCE_INIT;
static hwloc_topology_t sc_topology;
/* The PUs the process may use (cgroup and taskset), captured before shardcomm binds
 * anything: a second bind (another communicator) splits this set again instead of
 * the share the first bind left the process with. */
static hwloc_bitmap_t sc_topology_allowed;
static const char *sc_topology_failed_call; /* set when loading failed */
static int sc_topology_failed_errno;

static void sc_topology_load(void)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t allowed, bound;

    if (hwloc_topology_init(&topo) < 0) {
        sc_topology_failed_call = "hwloc_topology_init";
        sc_topology_failed_errno = errno;
        return;
    }
    if (hwloc_topology_load(topo) < 0) {
        sc_topology_failed_call = "hwloc_topology_load";
        sc_topology_failed_errno = errno;
        goto err_destroy;
    }
    /* hwloc's allowed set is the cgroup's; the process's own binding adds taskset or
     * a launcher's restriction. */
    allowed = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topo));
    bound = hwloc_bitmap_alloc();
    if (!allowed || !bound) {
        sc_topology_failed_call = "hwloc_bitmap_alloc";
        sc_topology_failed_errno = ENOMEM;
        goto err_free_bitmaps;
    }
    if (hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) == 0 ||
        hwloc_get_cpubind(topo, bound, 0) == 0) {
        if (hwloc_bitmap_intersects(allowed, bound))
            hwloc_bitmap_and(allowed, allowed, bound);
    }
    hwloc_bitmap_free(bound);
    sc_topology = topo;
    sc_topology_allowed = allowed;
    return;

err_free_bitmaps:
    hwloc_bitmap_free(bound);
    hwloc_bitmap_free(allowed);
err_destroy:
    hwloc_topology_destroy(topo);
}

/* Frees the topology at exit (or when the shared library is unloaded). */
__attribute__((destructor)) static void sc_topology_unload(void)
{
    if (sc_topology) {
        hwloc_bitmap_free(sc_topology_allowed);
        hwloc_topology_destroy(sc_topology);
        sc_topology_allowed = NULL;
        sc_topology = NULL;
    }
}

/* Loads the topology once; NULL where it is loaded, else why not, written into why. */
static const char *sc_topology_get(char *why, size_t len)
{
    pthread_once(&sc_topology_once, sc_topology_load);
    if (sc_topology)
        return NULL;
    if (sc_topology_failed_call)
        snprintf(why, len, "%s failed: %s", sc_topology_failed_call,
                 strerror(sc_topology_failed_errno));
    else
        snprintf(why, len, "the process is exiting and the topology was released");
    return why;
}

/* Number of objects of type that hold an allowed PU. */
static unsigned sc_topology_count_allowed(hwloc_obj_type_t type)
{
    hwloc_obj_t obj = NULL;
    unsigned n = 0;

    while ((obj = hwloc_get_next_obj_by_type(sc_topology, type, obj)) != NULL)
        n += hwloc_bitmap_intersects(obj->cpuset, sc_topology_allowed) ? 1 : 0;
    return n;
}

/* set = the allowed PUs of the objects of type [first, end), counting only objects
 * that hold an allowed PU. */
static void sc_topology_collect(hwloc_obj_type_t type, unsigned first, unsigned end,
                                hwloc_bitmap_t set)
{
    hwloc_obj_t obj = NULL;
    unsigned i = 0;

    hwloc_bitmap_zero(set);
    while ((obj = hwloc_get_next_obj_by_type(sc_topology, type, obj)) != NULL) {
        if (!hwloc_bitmap_intersects(obj->cpuset, sc_topology_allowed))
            continue;
        if (i >= first && i < end)
            hwloc_bitmap_or(set, set, obj->cpuset);
        i++;
    }
    hwloc_bitmap_and(set, set, sc_topology_allowed);
}

/* The share of local rank (of local_size, both valid) of the cores the process was
 * allowed before shardcomm first bound it, into set: the units [*first, *end) of the *n
 * that hold an allowed PU (cores, or PUs where the machine reports no cores). */
static sc_status_t sc_topology_share(int local_rank, int local_size, hwloc_bitmap_t set,
                                     unsigned *first, unsigned *end, unsigned *n,
                                     hwloc_obj_type_t *unit)
{
    char why[192];

    if (sc_topology_get(why, sizeof(why)))
        return sc_error(SC_ERR_SYSTEM, "cannot bind local rank %d: %s", local_rank, why);

    *unit = HWLOC_OBJ_CORE;
    *n = sc_topology_count_allowed(*unit);
    if (*n == 0) {
        /* Some virtual machines report no cores; PUs are the next best unit. */
        *unit = HWLOC_OBJ_PU;
        *n = sc_topology_count_allowed(*unit);
    }
    if (*n == 0)
        return sc_error(SC_ERR_SYSTEM, "cannot bind local rank %d: hwloc reports no PU "
                        "this process may run on", local_rank);

    /* Contiguous groups; with more ranks than cores, consecutive ranks share one. */
    *first = (unsigned)((unsigned long long)local_rank * *n / (unsigned)local_size);
    *end = (unsigned)((unsigned long long)(local_rank + 1) * *n / (unsigned)local_size);
    if (*end <= *first)
        *end = *first + 1;
    sc_topology_collect(*unit, *first, *end, set);
    return SC_SUCCESS;
}

/* local rank inside [0, local size). */
static sc_status_t sc_topology_check_rank(int local_rank, int local_size)
{
    if (local_size < 1 || local_rank < 0 || local_rank >= local_size)
        return sc_error(SC_ERR_INVALID_ARG,
                        "cannot bind local rank %d of a local size of %d: the local rank "
                        "must lie in [0, local size)", local_rank, local_size);
    return SC_SUCCESS;
}

sc_status_t sc_topology_share_pus(int local_rank, int local_size, int *pus)
{
    hwloc_obj_type_t unit;
    hwloc_bitmap_t set;
    unsigned n, first, end;
    sc_status_t status = sc_topology_check_rank(local_rank, local_size);

    if (status != SC_SUCCESS)
        return status;
    set = hwloc_bitmap_alloc();
    if (!set)
        return sc_error(SC_ERR_NO_MEMORY, "cannot bind local rank %d: out of memory",
                        local_rank);
    status = sc_topology_share(local_rank, local_size, set, &first, &end, &n, &unit);
    if (status == SC_SUCCESS)
        *pus = hwloc_bitmap_weight(set);
    hwloc_bitmap_free(set);
    return status;
}

sc_status_t sc_topology_bind(int local_rank, int local_size, sc_bind_t mode)
{
    hwloc_obj_type_t unit;
    hwloc_bitmap_t set;
    unsigned n = 0, first, end;
    char *pus = NULL;
    sc_status_t status = sc_topology_check_rank(local_rank, local_size);

    if (status != SC_SUCCESS)
        return status;
    if (mode == SC_BIND_DEFAULT) {
        status = sc_env_bind_mode(&mode);
        if (status != SC_SUCCESS)
            return status;
    }
    if (mode == SC_BIND_NONE) {
        sc_log(SC_LOG_INFO, "local rank %d of %d left unbound (binding: none)", local_rank,
               local_size);
        return SC_SUCCESS;
    }
    if (mode != SC_BIND_CORE)
        return sc_error(SC_ERR_INVALID_ARG, "unknown binding mode %d (expected "
                        "SC_BIND_DEFAULT, SC_BIND_CORE or SC_BIND_NONE)", (int)mode);

    set = hwloc_bitmap_alloc();
    if (!set)
        return sc_error(SC_ERR_NO_MEMORY, "cannot bind local rank %d: out of memory",
                        local_rank);
    status = sc_topology_share(local_rank, local_size, set, &first, &end, &n, &unit);
    if (status != SC_SUCCESS)
        goto out_free_set;
    if (hwloc_bitmap_list_asprintf(&pus, set) < 0) {
        status = sc_error(SC_ERR_NO_MEMORY, "cannot bind local rank %d: out of memory",
                          local_rank);
        goto out_free_set;
    }

    if (hwloc_set_cpubind(sc_topology, set, HWLOC_CPUBIND_PROCESS) < 0) {
        status = sc_error(SC_ERR_SYSTEM, "cannot bind local rank %d of %d to PUs %s: %s",
                          local_rank, local_size, pus, strerror(errno));
        goto out_free_pus;
    }
    if (end - first == 1)
        sc_log(SC_LOG_INFO, "local rank %d of %d bound to %s %u of %u (PUs %s)", local_rank,
               local_size, unit == HWLOC_OBJ_CORE ? "core" : "PU", first, n, pus);
    else
        sc_log(SC_LOG_INFO, "local rank %d of %d bound to %ss %u-%u of %u (PUs %s)",
               local_rank, local_size, unit == HWLOC_OBJ_CORE ? "core" : "PU", first, end - 1, n, pus);
    status = SC_SUCCESS;

out_free_pus:
    free(pus);
out_free_set:
    hwloc_bitmap_free(set);
    return status;
}

sc_status_t sc_info_cache_bytes(int level, uint64_t *bytes)
{
    static const hwloc_obj_type_t types[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE,
                                             HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE,
                                             HWLOC_OBJ_L5CACHE};
    hwloc_bitmap_t here;
    hwloc_obj_t obj = NULL;
    uint64_t size = 0;
    char why[192];

    if (level < 1 || level > 5 || !bytes)
        return sc_error(SC_ERR_INVALID_ARG, "cannot give the size of a level-%d cache%s: "
                        "the level must be 1 to 5", level, bytes ? "" : " into a null bytes");
    if (sc_topology_get(why, sizeof(why)))
        return sc_error(SC_ERR_SYSTEM, "cannot give the size of the level-%d cache: %s",
                        level, why);
    here = hwloc_bitmap_alloc();
    if (!here)
        return sc_error(SC_ERR_NO_MEMORY, "cannot give the size of the level-%d cache: out "
                        "of memory", level);
    if (hwloc_get_last_cpu_location(sc_topology, here, HWLOC_CPUBIND_THREAD) < 0) {
        int err = errno;

        hwloc_bitmap_free(here);
        return sc_error(SC_ERR_SYSTEM, "cannot give the size of the level-%d cache: hwloc "
                        "cannot say which core this thread runs on: %s", level, strerror(err));
    }
    /* The first cache of that level over the PU (L1CACHE is data or unified: the
     * instruction caches are objects of their own types). */
    while ((obj = hwloc_get_next_obj_by_type(sc_topology, types[level - 1], obj)) != NULL)
        if (hwloc_bitmap_intersects(obj->cpuset, here) && obj->attr->cache.size > 0) {
            size = obj->attr->cache.size;
            break;
        }
    hwloc_bitmap_free(here);
    if (size == 0)
        return sc_error(SC_ERR_UNSUPPORTED, "hwloc lists no level-%d cache for the core this "
                        "thread runs on", level);
    *bytes = size;
    return SC_SUCCESS;
}
