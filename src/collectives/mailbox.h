/* Header mailboxes: where every rank of a communicator shares one node, the headers that
 * open each collective (and the small payloads that travel with them) go from a rank to
 * its ring neighbours through shared memory instead of UCX messages. A rank writes its
 * header into a slot of the neighbour's inbox and marks it full; the neighbour polls its
 * own inbox, copies the header out and marks the slot read. About 0.05 us one way on a
 * machine where UCX's shared-memory transport takes 0.2. A rank asleep in the progress
 * engine is woken by a control message through UCX. */
#ifndef SC_COLLECTIVES_MAILBOX_H
#define SC_COLLECTIVES_MAILBOX_H

#include <stddef.h>
#include <stdint.h>

#include "shardcomm/status.h"

struct sc_comm;
typedef struct sc_mbox sc_mbox_t;

/* Collective over via, when comm has no collective yet, or none in flight (its
 * creation): opens comm's mailboxes when comm has at least 2 ranks, all on one node,
 * SC_LOCAL_MAILBOX is 1 and every rank of comm maps every other's memory; else leaves
 * comm->mbox NULL, the same on every rank of comm. via is comm itself (sc_comm_init)
 * or its parent (sc_comm_split, where comm is NULL on ranks that get none): the
 * records travel over via, so that no rank of a new communicator waits for another
 * in a collective of it. An error only when via broke. */
sc_status_t sc_mbox_open(struct sc_comm *via, struct sc_comm *comm);

/* Frees comm's mailboxes (sc_comm_destroy, after the last collective). Takes
 * comm->tp->lock. */
void sc_mbox_close(struct sc_comm *comm);

/* Writes the len bytes at buf (at most SC_OP_PAIR_HDR_BUF) as collective seq's message to
 * ring neighbour q. 0 while q has not read the message that used the slot before (the
 * caller tries again), 1 once written. */
int sc_mbox_put(struct sc_comm *comm, int q, uint64_t seq, const void *buf, size_t len);

/* This rank's progress thread goes to sleep (1), or woke or a caller drives in its place
 * (0): writers into its mailboxes wake it meanwhile. Sequentially consistent, before the
 * sleeper's last look. Caller holds tp->lock. */
void sc_mbox_sleeping(struct sc_comm *comm, int sleeping);

/* Whether this rank's mailboxes of comm are marked sleeping, as its neighbours read it
 * (for the tests). Caller holds tp->lock. */
int sc_mbox_is_sleeping(const struct sc_comm *comm);

/* Marks this rank as having left (why: SC_LEAVE_UNLOADED, transport_leave.h) in its
 * mailboxes' head, where its ring neighbours read it (sc_mbox_look_left) without any
 * progress of this rank's: a stopped neighbour (SIGSTOP, a debugger) whose FIFO is full
 * takes no leaving message, and once continued waited its SC_TIMEOUT for this rank,
 * whose process lives on after dlclose. Caller holds tp->lock. */
void sc_mbox_mark_left(struct sc_comm *comm, uint32_t why);

/* Marks the transport's ring neighbours that marked themselves as having left
 * (sc_leave_note). Caller holds tp->lock. */
void sc_mbox_look_left(struct sc_comm *comm);

/* Collective seq's message from ring neighbour q: 1 with it copied to dst (at most cap
 * bytes; *len its length) and its slot free again, 0 while it has not arrived. */
int sc_mbox_get(const struct sc_comm *comm, int q, uint64_t seq, void *dst, size_t cap,
                size_t *len);

#endif
