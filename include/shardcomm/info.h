/* What sc-info reports (topology, transports, effective configuration), and the one
 * figure of the machine a tool sizes its work by: a core's cache. */
#ifndef SHARDCOMM_INFO_H
#define SHARDCOMM_INFO_H

#include <stdint.h>
#include <stdio.h>
#include "shardcomm/api.h"
#include "shardcomm/status.h"
#include "shardcomm/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Prints the machine's topology as hwloc sees it (packages, NUMA nodes, cores, PUs)
 * and the cores the calling process is bound to. */
SC_API sc_status_t sc_info_print_topology(FILE *out);

/* The size in bytes of the level-`level` data or unified cache (1 to 5) that serves the
 * core the calling thread last ran on (a thread not bound to one core may have moved
 * since), as hwloc lists it (on Linux the kernel's cache list, not CPUID, whose L3 on
 * some AMD EPYC virtual machines is every die's together: 384 MiB where each core
 * shares 32 MiB). SC_ERR_INVALID_ARG for another level or a null bytes,
 * SC_ERR_UNSUPPORTED where hwloc lists no such cache for that core, SC_ERR_SYSTEM where
 * hwloc cannot load the topology or say where the thread runs, SC_ERR_NO_MEMORY; *bytes
 * is written only on success. Thread safe, but not while the process exits (the
 * topology is released then). */
SC_API sc_status_t sc_info_cache_bytes(int level, uint64_t *bytes);

/* Prints the effective configuration: every SC_* setting, its value, and where the
 * value came from (environment variable or default), the launch id the rendezvous
 * checks (SC_LAUNCH_ID, or the launcher's id and its variable, or none), and the UCX
 * settings shardcomm decides (UCX_TLS, UCX_RNDV_SCHEME, UCX_TCP_CONN_NB,
 * UCX_DEBUG_SIGNO: the user's variable, shardcomm's default or UCX's own; a default
 * that an sc_comm_init of this process set in its environment, UCX_TCP_CONN_NB for ranks
 * on several nodes, is said to be that, not the user's). */
SC_API sc_status_t sc_info_print_config(FILE *out);

/* Prints, for each peer of comm, the UCX transports its endpoint uses. */
SC_API sc_status_t sc_info_print_transports(sc_comm_t *comm, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
