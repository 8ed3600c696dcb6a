/* What shardcomm reads of UCX's variables before ucp_init: which transports UCX_TLS
 * leaves to UCX. One place for sc_ucx_open, sc_ucx_peer_local and sc-info --config. */
#ifndef SC_COLLECTIVES_UCX_ENV_H
#define SC_COLLECTIVES_UCX_ENV_H

/* Whether UCX may pick its TCP transport: not on one node (single_node) without UCX_TLS
 * (shardcomm limits it to shared memory there), nor where UCX_TLS lists transports
 * without tcp. */
int sc_ucx_may_use_tcp(int single_node);

/* Whether UCX may carry messages to a peer on this node through shared memory (the mm
 * transports; cma, knem and xpmem only copy bulk data beside another transport): unless
 * UCX_TLS lists transports none of which is one, or excludes them ('^sm', '^shm', '^mm',
 * or both posix and sysv). Where it may not, nothing is mapped in shared memory (the
 * staging segments, the header mailboxes, registered memory read in place). */
int sc_ucx_may_use_shm(void);

#endif
