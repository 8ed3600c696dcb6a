/* Executing a schedule: called by the progress engine with the transport lock held. */
#ifndef SC_COLLECTIVES_SCHEDULE_EXEC_H
#define SC_COLLECTIVES_SCHEDULE_EXEC_H

#include "collectives/schedule.h"

/* Starts what can start and polls what is running. SC_IN_PROGRESS while unfinished,
 * SC_SUCCESS when complete, else the error (with its sentence set on the calling
 * thread). *moved (0 on entry) is set when something moved; an op fails with
 * SC_ERR_TIMEOUT when nothing of it moved for the communicator's timeout. */
sc_status_t sc_op_advance(sc_coll_op_t *op, int *moved);

/* Cancels the op's outstanding transfers after a failure. A transfer left in flight
 * closes the connection to its peer and keeps the op's memory until the worker is
 * destroyed (op->stuck, sc_op_abandon). */
void sc_op_cancel(sc_coll_op_t *op);

#endif
