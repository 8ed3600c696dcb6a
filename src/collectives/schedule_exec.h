/* Executing a schedule: called by the progress engine with the transport lock held. */
#ifndef SC_COLLECTIVES_SCHEDULE_EXEC_H
#define SC_COLLECTIVES_SCHEDULE_EXEC_H

#include "collectives/schedule.h"

/* Starts what can start and polls what is running. SC_IN_PROGRESS while unfinished
 * (*progressed set when something moved), SC_SUCCESS when complete, else the error
 * (with its sentence set on the calling thread). */
sc_status_t sc_op_advance(sc_coll_op_t *op, int *progressed);

/* Cancels the op's outstanding transfers after a failure. */
void sc_op_cancel(sc_coll_op_t *op);

#endif
