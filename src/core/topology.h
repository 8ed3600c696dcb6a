/* Topology through hwloc: binding each local rank to its share of the cores. */
#ifndef SC_CORE_TOPOLOGY_H
#define SC_CORE_TOPOLOGY_H

#include "shardcomm/comm.h"
#include "shardcomm/status.h"

/* Binds the calling process to local rank's share of the machine's cores: the cores
 * are split into local_size contiguous groups (several ranks share a core when there
 * are more ranks than cores). SC_BIND_NONE does nothing. Sets sc_last_error on
 * failure. */
sc_status_t sc_topology_bind(int local_rank, int local_size, sc_bind_t mode);

/* How many PUs sc_topology_bind(local_rank, local_size, SC_BIND_CORE) binds the process
 * to, without binding it: what a setting that follows the binding (SC_THREADS left
 * unset) becomes once sc_comm_init has bound it. *pus is set only on success. */
sc_status_t sc_topology_share_pus(int local_rank, int local_size, int *pus);

#endif
