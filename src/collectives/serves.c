/* The public call the calling thread's collectives are part of (serves.h). */
#include "collectives/serves.h"
#include "core/error.h"

static _Thread_local sc_serves_t sc_serves_current;

sc_serves_t sc_serves_begin(sc_serves_t s)
{
    sc_serves_t previous = sc_serves_current;

    if (previous == SC_SERVES_CALLER)
        sc_serves_current = s;
    return previous;
}

void sc_serves_end(sc_serves_t previous)
{
    sc_serves_current = previous;
}

sc_serves_t sc_serves_within(sc_serves_t s)
{
    sc_serves_t previous = sc_serves_current;

    sc_serves_current = s;
    return previous;
}

sc_status_t sc_serves_return(sc_serves_t previous, sc_status_t status, const char *caller)
{
    sc_serves_end(previous);
    return sc_error_in(status, caller);
}

sc_serves_t sc_serves_now(void)
{
    return sc_serves_current;
}

const char *sc_serves_name(unsigned s)
{
    static const char *const names[SC_SERVES_COUNT] = {
        "", "sc_comm_init", "sc_comm_split", "sc_mem_alloc", "sc_reducer_create",
        "a reducer step (sc_reducer_mark_ready or sc_reducer_finalize)",
        "sc_compressed_allreduce", "sc_sparse_allreduce",
        "the top-k hook's comparison of the ranks' steps after its sc_reducer_hook_load "
        "(every rank loads its hook's state, or none)"};

    return s < SC_SERVES_COUNT ? names[s] : "a public call this build does not know";
}
