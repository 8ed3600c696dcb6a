/* Human-readable reports for sc-info: topology, transports, effective configuration. */
#ifndef SHARDCOMM_INFO_H
#define SHARDCOMM_INFO_H

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
