/* Staging segments: where every rank of a communicator shares one node, each rank
 * holds a shared segment of 2 x SC_STAGE_BYTES (an input area and an output area) that
 * every other rank maps. An allreduce on plain memory up to SC_STAGE_BYTES copies the
 * blocks its peers reduce into its input area and then runs as on registered memory
 * (algo_shm.c), its results copied from the owners' output areas into the caller's
 * buffer: two user-space copies where UCX's rendezvous would take a handshake and a
 * kernel copy (CMA) per message. A reduce-scatter stages its input the same way. */
#ifndef SC_COLLECTIVES_STAGE_H
#define SC_COLLECTIVES_STAGE_H

#include <stddef.h>

#include "collectives/shm_segment.h"
#include "shardcomm/status.h"

struct sc_comm;

/* The id a staged op puts in its header for both of its segments: ranks that staged
 * agree, a rank that read registered buffers instead (ids from 1) disagrees. */
#define SC_STAGE_SEG_ID 0xffffffffu

/* Collective over via, as sc_mbox_open (mailbox.h): opens comm's staging segment when
 * comm has at least 2 ranks, all on one node, SC_STAGE_BYTES is not 0 and every rank of
 * comm maps every other's memory; else none, the same on every rank. An error only
 * when via broke. */
sc_status_t sc_stage_open(struct sc_comm *via, struct sc_comm *comm);

/* Frees comm's staging segment (sc_comm_destroy, after the last collective). */
void sc_stage_close(struct sc_comm *comm);

/* The size of each of comm's two staging areas; 0 when comm has none. */
size_t sc_stage_area(const struct sc_comm *comm);

/* comm's input area (offset 0) and output area (offset SC_STAGE_BYTES) as shared
 * references; only where comm has them. */
void sc_stage_refs(const struct sc_comm *comm, sc_shm_ref_t *in, sc_shm_ref_t *out);

#endif
