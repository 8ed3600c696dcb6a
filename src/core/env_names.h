/* The environment variables behind every shardcomm setting (first set wins), their
 * defaults and limits: one list shared by the bootstrap, the binding, the reducer and
 * sc-info. */
#ifndef SC_CORE_ENV_NAMES_H
#define SC_CORE_ENV_NAMES_H

#include <stddef.h>

#include "shardcomm/comm.h"
#include "shardcomm/status.h"

/* NULL-terminated lists for sc_env_first / sc_env_int, most specific name first. The
 * four launch settings list shardcomm's own variable, then torchrun's, Open MPI's,
 * MPICH's (PMI) and Slurm's: every variable that may hold them (sc_env_launch_names
 * gives the two that are read). */
extern const char *const sc_env_rank_names[];        /* SC_RANK RANK ... SLURM_PROCID */
extern const char *const sc_env_world_size_names[];  /* SC_WORLD_SIZE ... SLURM_STEP_NUM_TASKS, SLURM_NTASKS */
extern const char *const sc_env_local_rank_names[];  /* SC_LOCAL_RANK ... SLURM_LOCALID */
extern const char *const sc_env_local_size_names[];  /* ... SLURM_STEP_TASKS_PER_NODE */
extern const char *const sc_env_master_addr_names[]; /* SC_MASTER_ADDR MASTER_ADDR */
extern const char *const sc_env_node_index_names[];  /* SLURM_NODEID: per-node counts */
extern const char *const sc_env_master_port_names[]; /* SC_MASTER_PORT MASTER_PORT */
extern const char *const sc_env_launch_id_names[];   /* SC_LAUNCH_ID */
extern const char *const sc_env_timeout_names[];     /* SC_TIMEOUT */
extern const char *const sc_env_store_fanout_names[]; /* SC_STORE_FANOUT */
extern const char *const sc_env_device_names[];      /* SC_DEVICE */
extern const char *const sc_env_nccl_names[];        /* SC_NCCL */
extern const char *const sc_env_cuda_driver_names[]; /* SC_CUDA_DRIVER */
extern const char *const sc_env_bind_names[];        /* SC_BIND */
extern const char *const sc_env_log_level_names[];   /* SC_LOG_LEVEL */
extern const char *const sc_env_algo_names[];        /* SC_ALGO */
extern const char *const sc_env_ring_threshold_names[];   /* SC_RING_THRESHOLD */
extern const char *const sc_env_chunk_bytes_names[];      /* SC_CHUNK_BYTES */
extern const char *const sc_env_progress_spin_us_names[]; /* SC_PROGRESS_SPIN_US */
extern const char *const sc_env_local_register_names[];    /* SC_LOCAL_REGISTER */
extern const char *const sc_env_local_mailbox_names[];     /* SC_LOCAL_MAILBOX */
extern const char *const sc_env_stream_bytes_names[];      /* SC_STREAM_BYTES */
extern const char *const sc_env_stage_bytes_names[];       /* SC_STAGE_BYTES */
extern const char *const sc_env_eager_sends_names[];       /* SC_EAGER_SENDS */
extern const char *const sc_env_bucket_cap_mb_names[];     /* SC_BUCKET_CAP_MB */
extern const char *const sc_env_threads_names[];           /* SC_THREADS */
extern const char *const sc_env_cpu_isa_names[];           /* SC_CPU_ISA */

/* The launch settings, read together from one launcher. */
typedef enum {
    SC_LAUNCH_RANK,
    SC_LAUNCH_WORLD_SIZE,
    SC_LAUNCH_LOCAL_RANK,
    SC_LAUNCH_LOCAL_SIZE,
    SC_LAUNCH_COUNT
} sc_launch_var_t;

/* The variables a launch setting is read from, first set wins: its own SC_ variable,
 * then that of the launcher that started this process: the first of torchrun, Open
 * MPI, MPICH (PMI) and Slurm whose rank variable is set, else whose world size is. So
 * rank, size and local values never come from two launchers (a stale WORLD_SIZE in the
 * shell beside mpirun's variables). Where no launcher sets either, every variable of the
 * setting in that order. *launcher (may be NULL) is set to the launcher's name, NULL
 * when there is none. NULL-terminated; valid until the thread's next call for the same
 * setting. */
const char *const *sc_env_launch_names(sc_launch_var_t what, const char **launcher);

/* Defaults when no variable of a list is set. The local rank and size have none:
 * sc_comm_init counts the ranks that share a host name. */
#define SC_DEFAULT_RANK 0
#define SC_DEFAULT_WORLD_SIZE 1
#define SC_DEFAULT_MASTER_ADDR "127.0.0.1"
#define SC_DEFAULT_MASTER_PORT 29500
#define SC_DEFAULT_TIMEOUT_S 300.0
/* The rendezvous's table goes from rank 0 to this many ranks, from each to as many more
 * (bootstrap_tree.h); a world of up to this many ranks and one gets it from rank 0. */
#define SC_DEFAULT_STORE_FANOUT 8
#define SC_DEFAULT_RING_THRESHOLD 8192
#define SC_DEFAULT_CHUNK_BYTES 262144
#define SC_DEFAULT_PROGRESS_SPIN_US 50
/* 1: the reducer puts host buckets in registered memory (sc_mem_alloc) where it can. */
#define SC_DEFAULT_LOCAL_REGISTER 1
/* 1: collectives' headers go between the ranks of one node through shared memory. */
#define SC_DEFAULT_LOCAL_MAILBOX 1
/* Bytes per rank from which collectives on registered memory store their results with
 * non-temporal stores (16 MiB: half this machine's last-level cache). */
#define SC_DEFAULT_STREAM_BYTES 16777216
#define SC_DEFAULT_STAGE_BYTES 2097152
/* The reducer's bucket cap (MiB) when neither its configuration nor SC_BUCKET_CAP_MB
 * sets one; SC_BUCKET_CAP_MB also turns autotuning off. */
#define SC_DEFAULT_BUCKET_CAP_MB 25
#define SC_MAX_BUCKET_CAP_MB 1048576 /* 1 TiB */

/* The cap in bytes that mb MiB of SC_BUCKET_CAP_MB gives the reducer: whole bytes,
 * rounded down, at least 1 (what sc-info shows where it differs from the text). */
static inline size_t sc_bucket_cap_bytes(double mb)
{
    double bytes = mb * (double)(1 << 20);

    return bytes < 1.0 ? 1 : (size_t)bytes;
}

/* The smallest SC_CHUNK_BYTES the ring accepts. */
#define SC_MIN_CHUNK_BYTES 64

/* The binding mode SC_BIND asks for: "core" (also when unset or empty) or "none",
 * case-insensitive. SC_ERR_INVALID_ARG naming SC_BIND and its value otherwise.
 * *mode (SC_BIND_CORE or SC_BIND_NONE) is written only on success. */
sc_status_t sc_env_bind_mode(sc_bind_t *mode);

#endif
