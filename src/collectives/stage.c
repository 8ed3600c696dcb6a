/* Staging segments (stage.h). */
#include "collectives/stage.h"
#include "core/comm_internal.h"
#include "core/log.h"
#include "core/tuning.h"

sc_status_t sc_stage_open(sc_comm_t *via, sc_comm_t *comm)
{
    const sc_tuning_t *t;
    size_t bytes = 0;
    struct sc_shm_seg *seg = NULL;
    sc_status_t st;

    if (comm && comm->size >= 2 && comm->local_size == comm->size &&
        sc_tuning_get(&t) == SC_SUCCESS)
        bytes = t->stage_bytes;
    st = sc_shm_seg_open_over(via, comm, 2 * bytes, "staging segment", &seg);
    if (st == SC_SUCCESS && seg) {
        comm->stage = seg;
        comm->stage_bytes = bytes;
        sc_log(SC_LOG_DEBUG, "staging segment of 2 x %zu bytes open", bytes);
    }
    return st;
}

void sc_stage_close(sc_comm_t *comm)
{
    if (!comm->stage)
        return;
    sc_shm_seg_release(comm, comm->stage);
    comm->stage = NULL;
    comm->stage_bytes = 0;
}

size_t sc_stage_area(const sc_comm_t *comm)
{
    return comm->stage ? comm->stage_bytes : 0;
}

void sc_stage_refs(const sc_comm_t *comm, sc_shm_ref_t *in, sc_shm_ref_t *out)
{
    in->seg = comm->stage;
    in->off = 0;
    out->seg = comm->stage;
    out->off = comm->stage_bytes;
}
