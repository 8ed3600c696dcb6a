/* Resolving rank, size, local rank and rendezvous from a configuration and the
 * environment (shardcomm's, torchrun's, Open MPI's or Slurm's variables). */
#ifndef SC_CORE_BOOTSTRAP_ENV_H
#define SC_CORE_BOOTSTRAP_ENV_H

#include "core/bootstrap_wire.h"
#include "shardcomm/comm.h"

/* The largest world: the UCX tags carry the source world rank in 16 bits
 * (collectives/transport_ucx.h). sc_comm_init refuses more, and sc-info says so. */
#define SC_MAX_WORLD 65536

/* A master address's bytes with its terminating zero: a host name is at most 253
 * characters. */
#define SC_MASTER_ADDR_MAX 256

typedef struct {
    int rank;
    int world_size;
    int local_rank;   /* -1 when unknown: derived from host names */
    int local_size;   /* -1 when unknown */
    char size_from[32];       /* what gave world_size: a variable, config.world_size */
    char local_size_from[32]; /* what gave local_size: a variable, config.local_size */
    char local_rank_from[32]; /* what gave local_rank, likewise */
    char master_addr[SC_MASTER_ADDR_MAX];
    int master_port;
    sc_store_launch_t launch; /* which launch this rank belongs to (id "": unknown) */
    double timeout_s;
    int store_fanout; /* SC_STORE_FANOUT: the rendezvous table's tree (rank 0's counts) */
    sc_bind_t bind;
    int device;       /* -1: local rank modulo the number of GPUs */
    int nccl;         /* SC_NCCL: 0 sends device buffers host-staged */
} sc_bootstrap_params_t;

/* Whether every rank is on this node: a world of one, or one whose launcher says so (its
 * local size is the world's): what the transport is opened for, before the rendezvous
 * (sc_ucx_open). A local size counted at the rendezvous is not known then. A world of
 * one took UCX's every transport until 2026-12-07: a TCP listening port for no peer, and
 * an 8-byte allreduce at 0.8-1.3 us instead of 0.4-0.9 (its epoll_wait). */
static inline int sc_bootstrap_single_node(const sc_bootstrap_params_t *p)
{
    return p->world_size == 1 || p->local_size == p->world_size;
}

/* MASTER_PORT is torch.distributed's: the store of its rank 0 listens there from
 * init_process_group to the process's end, and torchrun's agent keeps its own there for
 * the whole run (its default, static rendezvous). A master port read from MASTER_PORT
 * (SC_MASTER_PORT and config.master_port unset) is therefore the next port, the same on
 * every process, so that shardcomm and torch never take or talk to each other's store.
 * 1 when that applies, with MASTER_PORT's value in *torch_port and the rendezvous's in
 * *port (-1: none follows 65535). */
int sc_bootstrap_beside_torch_store(int *torch_port, int *port);

/* Whether addr is written as an IP address, not a host name: a colon (IPv6; no name
 * has one) or digits and dots alone (no top-level domain is all digits). */
int sc_bootstrap_addr_is_numeric(const char *addr);

/* The master address as the rendezvous uses it, into out (len bytes; out may be NULL):
 * addr, or the IPv6 address inside brackets ([::1], as URLs write it). SC_ERR_INVALID_ARG,
 * naming from (the variable or field that gave addr) and addr, for a master address that
 * no host name or address can be: one with a blank or a control character, one longer
 * than a host name, one
 * written as an IP address that is none (::1::2, 10.0.0.256), brackets around anything
 * but an IPv6 address. */
sc_status_t sc_bootstrap_check_addr(const char *addr, const char *from, char *out, size_t len);

/* Which launch this process belongs to, into *launch: SC_LAUNCH_ID (scrun exports a
 * random one per single-node run), else the launcher's own id, of the launcher that gives
 * the rank (sc_env_launch_names): torchrun's TORCHELASTIC_RUN_ID, Slurm's SLURM_JOB_ID
 * and SLURM_STEP_ID ("JOB.STEP"), Open MPI's PMIX_NAMESPACE, OMPI_MCA_orte_ess_jobid or
 * OMPI_MCA_ess_base_jobid; else none (an empty id). An id is cut to
 * SC_LAUNCH_ID_MAX - 1 bytes. Every rank of one launch, a rank started again included,
 * derives the same. */
void sc_bootstrap_launch_id(sc_store_launch_t *launch);

/* A launch id as sentences write it, in place: both fields ended within their size, a
 * control character as '?' (a sentence carries text only: sc_store_net_read_text), for
 * an id this rank derived or one a hello brought. */
void sc_bootstrap_launch_text(sc_store_launch_t *launch);

/* Fills *params from cfg, then the environment, then defaults; checks ranges.
 * SC_ERR_INVALID_ARG with a sentence naming the setting otherwise. The two halves of it
 * follow. */
sc_status_t sc_bootstrap_resolve(const sc_comm_config_t *cfg, sc_bootstrap_params_t *params);

/* The first half: rank, world size and the rendezvous's address and port into *params
 * (the rest zero), which is what a rank needs to tell the others that it cannot join
 * (sc_store_tell_failure) when a setting of the second half fails. */
sc_status_t sc_bootstrap_resolve_rendezvous(const sc_comm_config_t *cfg,
                                            sc_bootstrap_params_t *params);

/* The second half, completing *params (written only on success): local rank and size,
 * device, timeout, the rendezvous's fan-out, binding, SC_NCCL; SC_CUDA_DRIVER is checked (0 or 1) here too, for
 * the driver, which loads on first use (cuda_driver.c), cannot refuse it. */
sc_status_t sc_bootstrap_resolve_rest(const sc_comm_config_t *cfg, sc_bootstrap_params_t *params);

#endif
