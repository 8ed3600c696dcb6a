/* UCX's descriptors made close-on-exec (transport_cloexec.c), so that a program a rank
 * starts (fork and exec: posix_spawn, system, a data loader) holds none of them. */
#ifndef SC_COLLECTIVES_TRANSPORT_CLOEXEC_H
#define SC_COLLECTIVES_TRANSPORT_CLOEXEC_H

#include "core/comm_internal.h"

/* Sets FD_CLOEXEC on every descriptor of the process that UCX's worker watches: its
 * event descriptor (tp->efd) and the epoll sets, sockets, pipes, eventfds and timerfds
 * reachable from it through epoll membership, the sets of UCX's progress thread that
 * hold those, and the other ends of those pipes. A descriptor the application opened is
 * in none of these and is left as it is, whichever thread opened it. An epoll set,
 * eventfd or timerfd (they all have one inode) is a member where kcmp says so; where
 * kcmp is refused, those are left as they are, with what they watch (said once, INFO).
 * UCX links its transports' descriptors to the worker's event set only as endpoints
 * first use them, and opens some lazily (the connections peers make to this rank,
 * accepted by its thread), so it is called after the endpoints are created and again at
 * the end of sc_comm_init; during the rendezvous, before the endpoints, they cannot be
 * told apart and a program started then inherits them. Never on an op's path: one call
 * costs about 0.3 ms with 20 descriptors open, 15 ms with 2,000 (10,000 open files added
 * 90 ms to a world of one's sc_comm_init, two scans; their files are not looked at past
 * their link in /proc/self/fd: no fstat, which a hung network mount would block). Reads
 * /proc/self: where
 * that fails it logs so (INFO) and changes nothing. Any thread: it makes no UCX call and
 * reads only tp->efd, set before the transport's other threads start; UCX's own thread
 * may open and close descriptors meanwhile (each is checked to be the file found just
 * before its flag is set: its inode, and what kcmp found where the inode is shared). */
void sc_ucx_cloexec(sc_transport_t *tp);

#endif
