/* The public call an internal collective is part of. Its header carries it (schedule.h,
 * sc_op_header_t.serves) and the ranks compare it, so that a rank inside sc_comm_split
 * never matches another rank's sc_allgather of the same shape: that is a disagreement,
 * reported on every rank, where the user's call used to receive the split's record. */
#ifndef SC_COLLECTIVES_SERVES_H
#define SC_COLLECTIVES_SERVES_H

#include "shardcomm/status.h"

typedef enum {
    SC_SERVES_CALLER = 0,     /* a collective the caller made itself */
    SC_SERVES_COMM_INIT,
    SC_SERVES_COMM_SPLIT,
    SC_SERVES_MEM_ALLOC,
    SC_SERVES_REDUCER_CREATE,
    SC_SERVES_REDUCER_STEP,   /* sc_reducer_mark_ready and sc_reducer_finalize */
    SC_SERVES_COMPRESSED,
    SC_SERVES_SPARSE,
    SC_SERVES_HOOK_ALIGN,     /* the top-k hook's comparison of the ranks' steps after a
                                 load, inside a reducer step (sc_serves_within) */
    SC_SERVES_COUNT
} sc_serves_t;

/* From here on, the calling thread's collectives are part of public call s, unless
 * they are part of an outer public call already (sc_reducer_create's registered memory
 * stays sc_reducer_create's). Returns what sc_serves_end restores. Every rank runs the
 * same public calls around a collective, so every rank marks it alike. */
sc_serves_t sc_serves_begin(sc_serves_t s);
void sc_serves_end(sc_serves_t previous);

/* From here on, the calling thread's collectives are part of s even inside an outer
 * public call: a part of that call that only some ranks may run (the top-k hook's
 * comparison after sc_reducer_hook_load, which a rank that did not load skips), so that
 * the ranks' disagreement names it. Returns what sc_serves_end restores. */
sc_serves_t sc_serves_within(sc_serves_t s);

/* The end of a public call that communicates: restores previous (sc_serves_end) and
 * returns sc_error_in(status, caller). Such a call reads
 *     sc_serves_t was = sc_serves_begin(SC_SERVES_X);
 *     return sc_serves_return(was, sc_x_call(...), "sc_x");
 * (the argument, the call's body, runs before the restore). */
sc_status_t sc_serves_return(sc_serves_t previous, sc_status_t status, const char *caller);

/* What the calling thread's collectives are part of now. */
sc_serves_t sc_serves_now(void);

/* "sc_comm_split", ...; "" for SC_SERVES_CALLER. */
const char *sc_serves_name(unsigned s);

#endif
