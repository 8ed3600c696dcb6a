/* Resolving rank, size, local rank and rendezvous from a configuration and the
 * environment (shardcomm's, torchrun's, Open MPI's or Slurm's variables). */
#ifndef SC_CORE_BOOTSTRAP_ENV_H
#define SC_CORE_BOOTSTRAP_ENV_H

#include "shardcomm/comm.h"

typedef struct {
    int rank;
    int world_size;
    int local_rank;   /* -1 when unknown: derived from host names */
    int local_size;   /* -1 when unknown */
    char master_addr[256];
    int master_port;
    double timeout_s;
    sc_bind_t bind;
    int device;       /* -1: local rank modulo the number of GPUs */
} sc_bootstrap_params_t;

/* torchrun's static rendezvous (its default) keeps its agent's TCP store listening on
 * MASTER_PORT for the whole run and tells the workers so (TORCHELASTIC_USE_AGENT_STORE
 * =True): a master port read from MASTER_PORT (SC_MASTER_PORT unset) then moves to the
 * next port, the same on every worker. 1 when that applies, with the agent's port in
 * *agent_port. */
int sc_bootstrap_beside_agent_store(int *agent_port);

/* Fills *params from cfg, then the environment, then defaults; checks ranges.
 * SC_ERR_INVALID_ARG with a sentence naming the setting otherwise. */
sc_status_t sc_bootstrap_resolve(const sc_comm_config_t *cfg, sc_bootstrap_params_t *params);

#endif
