/* The environment variable lists behind each setting, and the parser of SC_BIND. */
#include <stdlib.h>

#include "core/env.h"
#include "core/env_names.h"

/* Position i > 0 of the four launch lists is launcher i's (sc_env_launcher_names); a
 * name after the last launcher's is that launcher's too, read when its own is unset.
 * Slurm's world is the step's: srun -E leaves SLURM_NTASKS as the job's, and only a
 * program the batch script runs itself has SLURM_NTASKS without SLURM_STEP_NUM_TASKS. */
const char *const sc_env_rank_names[] = {
    "SC_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL};
const char *const sc_env_world_size_names[] = {
    "SC_WORLD_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS",
    "SLURM_NTASKS", NULL};
const char *const sc_env_local_rank_names[] = {
    "SC_LOCAL_RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
    "SLURM_LOCALID", NULL};
/* Slurm's is the step's layout (srun sets it, -E too), not SLURM_NTASKS_PER_NODE: that
 * is --ntasks-per-node as asked, on every node, including one given fewer tasks. */
const char *const sc_env_local_size_names[] = {
    "SC_LOCAL_SIZE", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
    "SLURM_STEP_TASKS_PER_NODE", NULL};
static const char *const sc_env_launcher_names[] = {NULL, "torchrun", "Open MPI",
                                                    "MPICH (PMI)", "Slurm"};
#define SC_ENV_LAUNCHERS 5

static const char *const *const sc_env_launch_all[SC_LAUNCH_COUNT] = {
    sc_env_rank_names, sc_env_world_size_names, sc_env_local_rank_names,
    sc_env_local_size_names};

/* The first launcher whose rank variable is set (and not empty, as every variable is
 * read), else whose world size is; 0: none. An empty RANK left by a shell no longer
 * hides mpirun's or srun's variables. */
static int sc_env_launcher(void)
{
    for (int list = SC_LAUNCH_RANK; list <= SC_LAUNCH_WORLD_SIZE; list++)
        for (int l = 1; l < SC_ENV_LAUNCHERS; l++) {
            const char *v = getenv(sc_env_launch_all[list][l]);
            if (v && *v)
                return l;
        }
    return 0;
}

const char *const *sc_env_launch_names(sc_launch_var_t what, const char **launcher)
{
    static _Thread_local const char *list[SC_LAUNCH_COUNT][4];
    int l = sc_env_launcher();

    if (launcher)
        *launcher = sc_env_launcher_names[l];
    if (!l) /* no launcher's rank or size: each setting from the first variable set */
        return sc_env_launch_all[what];
    list[what][0] = sc_env_launch_all[what][0];
    list[what][1] = sc_env_launch_all[what][l];
    list[what][2] = l == SC_ENV_LAUNCHERS - 1 ? sc_env_launch_all[what][l + 1] : NULL;
    list[what][3] = NULL;
    return list[what];
}
const char *const sc_env_node_index_names[] = {"SLURM_NODEID", NULL};
const char *const sc_env_master_addr_names[] = {"SC_MASTER_ADDR", "MASTER_ADDR", NULL};
const char *const sc_env_master_port_names[] = {"SC_MASTER_PORT", "MASTER_PORT", NULL};
const char *const sc_env_launch_id_names[] = {"SC_LAUNCH_ID", NULL};
const char *const sc_env_timeout_names[] = {"SC_TIMEOUT", NULL};
const char *const sc_env_store_fanout_names[] = {"SC_STORE_FANOUT", NULL};
const char *const sc_env_device_names[] = {"SC_DEVICE", NULL};
const char *const sc_env_nccl_names[] = {"SC_NCCL", NULL};
const char *const sc_env_cuda_driver_names[] = {"SC_CUDA_DRIVER", NULL};
const char *const sc_env_bind_names[] = {"SC_BIND", NULL};
const char *const sc_env_log_level_names[] = {"SC_LOG_LEVEL", NULL};
const char *const sc_env_algo_names[] = {"SC_ALGO", NULL};
const char *const sc_env_ring_threshold_names[] = {"SC_RING_THRESHOLD", NULL};
const char *const sc_env_chunk_bytes_names[] = {"SC_CHUNK_BYTES", NULL};
const char *const sc_env_progress_spin_us_names[] = {"SC_PROGRESS_SPIN_US", NULL};
const char *const sc_env_local_register_names[] = {"SC_LOCAL_REGISTER", NULL};
const char *const sc_env_local_mailbox_names[] = {"SC_LOCAL_MAILBOX", NULL};
const char *const sc_env_stream_bytes_names[] = {"SC_STREAM_BYTES", NULL};
const char *const sc_env_stage_bytes_names[] = {"SC_STAGE_BYTES", NULL};
const char *const sc_env_eager_sends_names[] = {"SC_EAGER_SENDS", NULL};
const char *const sc_env_bucket_cap_mb_names[] = {"SC_BUCKET_CAP_MB", NULL};
const char *const sc_env_threads_names[] = {"SC_THREADS", NULL};
const char *const sc_env_cpu_isa_names[] = {"SC_CPU_ISA", NULL};

sc_status_t sc_env_bind_mode(sc_bind_t *mode)
{
    int i;
    sc_status_t st = sc_env_choice(sc_env_bind_names, &sc_env_bind_words, 0, &i);

    if (st == SC_SUCCESS) /* sc_env_bind_words: core, none */
        *mode = i == 0 ? SC_BIND_CORE : SC_BIND_NONE;
    return st;
}
