/* The environment variable lists behind each setting, and the parser of SC_BIND. */
#include <stdlib.h>
#include <strings.h>

#include "core/env.h"
#include "core/env_names.h"
#include "core/error.h"

const char *const sc_env_rank_names[] = {
    "SC_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL};
const char *const sc_env_world_size_names[] = {
    "SC_WORLD_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL};
const char *const sc_env_local_rank_names[] = {
    "SC_LOCAL_RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", NULL};
const char *const sc_env_local_size_names[] = {
    "SC_LOCAL_SIZE", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "SLURM_NTASKS_PER_NODE", NULL};
const char *const sc_env_master_addr_names[] = {"SC_MASTER_ADDR", "MASTER_ADDR", NULL};
const char *const sc_env_master_port_names[] = {"SC_MASTER_PORT", "MASTER_PORT", NULL};
const char *const sc_env_timeout_names[] = {"SC_TIMEOUT", NULL};
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
const char *const sc_env_bucket_cap_mb_names[] = {"SC_BUCKET_CAP_MB", NULL};
const char *const sc_env_threads_names[] = {"SC_THREADS", NULL};
const char *const sc_env_cpu_isa_names[] = {"SC_CPU_ISA", NULL};

sc_status_t sc_env_bind_mode(sc_bind_t *mode)
{
    const char *s = sc_env_first(sc_env_bind_names, NULL);

    if (!s || strcasecmp(s, "core") == 0) {
        *mode = SC_BIND_CORE;
        return SC_SUCCESS;
    }
    if (strcasecmp(s, "none") == 0) {
        *mode = SC_BIND_NONE;
        return SC_SUCCESS;
    }
    return sc_error(SC_ERR_INVALID_ARG, "SC_BIND=%s is not one of core|none", s);
}
