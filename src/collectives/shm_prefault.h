/* Page tables filled ahead of use for shared memory that collectives touch: the
 * peers' copies of registered segments as this rank maps them, and the segments of
 * UCX's shared-memory transport (its receive FIFO and descriptors, this rank's and the
 * mapped peers'). A first touch of a shared page costs a few microseconds on a VM, and
 * UCX hands its descriptors out one by one as messages arrive, so without this the
 * first few dozen messages of each new size pay a fault each. */
#ifndef SC_COLLECTIVES_SHM_PREFAULT_H
#define SC_COLLECTIVES_SHM_PREFAULT_H

#include <stddef.h>

#include "shardcomm/status.h"

struct sc_comm;

/* Fills this process's page tables for [p, p + bytes) of a readable shared mapping,
 * writable where the mapping is: with MADV_POPULATE_WRITE (Linux 5.14 and later), else
 * by reading one byte of each page. Never fails: what is refused comes on first use. */
void sc_shm_prefault(void *p, size_t bytes);

/* Collective over comm (sc_comm_init, after every endpoint is up): every rank sends
 * one message to each rank on its node, which maps the peers' receive segments that
 * UCX attaches on first use, then prefaults every segment of UCX's shared-memory
 * transports mapped in this process. An error only when the exchange fails. */
sc_status_t sc_shm_prefault_transport(struct sc_comm *comm);

#endif
