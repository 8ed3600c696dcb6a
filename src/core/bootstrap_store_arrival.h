/* The arrivals at rank 0's store (bootstrap_store_arrival.c), for its server thread
 * (bootstrap_store_server.c), which also tells those still arriving a failure. */
#ifndef SC_CORE_BOOTSTRAP_STORE_ARRIVAL_H
#define SC_CORE_BOOTSTRAP_STORE_ARRIVAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/bootstrap_store_server.h"
#include "core/bootstrap_wire.h"
#include "shardcomm/status.h"

/* A connection accepted by the store whose hello and blob (or failure text) are still
 * coming: read as they come, every such connection under one poll, so that one that goes
 * silent (a port scanner, a health check, a rank stopped between its connect and its
 * hello) holds up no later arrival; and one of another protocol, answered, whose bytes
 * are read under the same poll until it closes (refused). */
typedef struct {
    int fd;
    double until;       /* dropped where nothing more came by then */
    double by;          /* dropped where its hello and blob had not all come by then */
    size_t got;         /* bytes read: of the hello, then of its blob */
    sc_store_hello_t h;
    uint8_t *blob;      /* h.len bytes and a NUL, once the hello came */
    int refused;        /* answered as another protocol's: read and dropped until it closes */
} sc_store_arrival_t;

/* How long an arriving connection may go silent before its hello and blob came. */
#define SC_STORE_SILENT_S 5.0
/* How long its hello and blob may take in all: one that trickles its bytes, each within
 * SC_STORE_SILENT_S, is dropped too (5 s for the hello and 5 for the blob, as when the
 * store read them in turn). */
#define SC_STORE_ARRIVAL_S (2.0 * SC_STORE_SILENT_S)
/* Arriving connections read at once; more wait in the listening socket's queue, or take
 * the place of one silent SC_STORE_EVICT_S before its hello came. */
#define SC_STORE_ARRIVING_MAX 64
/* How long an arriving connection may go silent before its hello came and still keep its
 * slot from one queued behind every slot taken (sc_store_arrival_evictable): a rank sends
 * its hello as its connection is made, and 64 silent connections (port scanners, health
 * checks) held every rank behind them until they were dropped at SC_STORE_SILENT_S. The
 * store closes one it evicts unanswered, as one it drops: a rank stopped between its
 * connect and its hello connects again, and takes no close that came this long or
 * longer after it began to connect for a sign of a program other than a store
 * (sc_store_allgather, bootstrap_store.c). */
#define SC_STORE_EVICT_S 0.25
/* How long the connection of a refused process of another protocol is read after its
 * answer, until it closes as it read the answer: the rest of its hello and blob may still
 * come, and a close with unread bytes resets the connection. */
#define SC_STORE_REFUSED_S 2.0

/* Whether the process that sent hello h belongs to another launch than the store's, both
 * known (two launches given one master port): then err holds the sentence it is answered
 * with, and rank 0 logs it. Its slot is not taken, and the store's launch goes on. */
int sc_store_other_launch(sc_store_server_t *s, const sc_store_hello_t *h,
                          char *err, size_t len);

/* Whether hello h is one the store serves: a rank's, or a failing rank's, with a blob of
 * at most SC_STORE_MAX_BLOB. */
int sc_store_hello_served(const sc_store_hello_t *h);

/* Reads what came on k, without waiting: 0 while its hello and blob come, 1 once both
 * came (a hello of this protocol that the store serves), -1 when it is to be dropped (it
 * closed, or it is no rendezvous's or none the store serves), -2 when it is a rank's of
 * another protocol, answered (sc_store_refuse_protocol), its connection open: what comes
 * after is the caller's to read (sc_store_arrival_drain, where k->refused is set: 0, then
 * -1 once it closed). */
int sc_store_arrival_read(sc_store_server_t *s, sc_store_arrival_t *k);

/* When arrival k is dropped where its hello and blob had not come: SC_STORE_SILENT_S
 * after its last bytes, SC_STORE_ARRIVAL_S after it was accepted, and 1 s after the last
 * rank arrived (last; 0.0: not yet), or after it was accepted where that was later (one
 * queued behind SC_STORE_ARRIVING_MAX others then), where its hello had not come by then:
 * a hello is sent as its connection is made. A connection that trickled its blob after
 * the last rank arrived held every rank's answer for as long as it went on. One refused
 * (answered as another protocol's: its hello never comes whole) is read until its own
 * time, SC_STORE_REFUSED_S after its answer: dropped 1 s after the last rank arrived, the
 * rest of its hello and blob, still coming, reached a closed socket, which reset its
 * connection. */
double sc_store_arrival_until(const sc_store_arrival_t *k, double last);

/* Which of the n arrivals a connection queued behind them all takes the place of: the one
 * silent longest of those whose hello had not come (a refused one, answered, is read
 * until it closes), once it was silent SC_STORE_EVICT_S; -1 where none was by now. *at:
 * when the first will be (a time past every deadline where none can be). */
int sc_store_arrival_evictable(const sc_store_arrival_t *arriving, int n, double now,
                               double *at);

/* fd, accepted at now, as an arrival into arriving (*n of them): in a free slot, or where
 * every slot is taken in the place of the one that sc_store_arrival_evictable gives at
 * now (the caller saw that there is one), which is closed. */
void sc_store_arrival_add(sc_store_arrival_t *arriving, int *n, int fd, double now);

/* The rest of arrival k's hello, awaited by itself until k->until: 1 when it is one of
 * this protocol that the store serves, 0 when it is none (the connection broke or went
 * silent, or it is no rendezvous's), -1 when it is a rank's of another protocol, told
 * (sc_store_refuse_protocol). */
int sc_store_arrival_hello(sc_store_server_t *s, sc_store_arrival_t *k);

/* Whether the process on the connection fd of a rank that arrived closed it: it exited
 * or was killed during the rendezvous (its blob was read whole, so anything to read is
 * the end of the connection or its reset). A process waiting for the answer sends
 * nothing more. */
int sc_store_conn_closed(int fd);

/* The ranks' arrivals (sc_store_take) until every rank arrived, each connection's hello
 * and blob read as they come, all under one poll (sc_store_arrival_t), a refused process
 * of another protocol's too, read after its answer until it closes, so that none holds
 * up the others (sc_store_refuse_protocol read it so before it looked at any other
 * connection, up to 2 s: every rank arriving meanwhile waited); then the
 * connections already waiting are judged as ones before the last, before any rank is
 * answered (a second process claiming a rank, a rank telling its failure: it was told
 * that rank 0 exited or was killed when the store closed it unread, and the world went
 * on with whichever claimant came first), every one of them, as many at once as there
 * is room for and the rest as room frees (sc_store_accept_queued: those past the first
 * 64 were reset unanswered as the store closed its listening socket), those queued up
 * to SC_STORE_JUDGED_S after the last rank arrived (a flood of connections that keep
 * coming held the answers for as long as it went on). Every slot taken, a connection
 * queued takes the place of one silent SC_STORE_EVICT_S (sc_store_arrival_add), where
 * it waited until those were dropped. SC_SUCCESS; else
 * the failure, err set
 * (SC_ERR_SYSTEM where its poll fails for another reason than a signal), with
 * the connections still arriving in arriving (*n of them, up to SC_STORE_ARRIVING_MAX)
 * for sc_store_refuse_all. The spare descriptor (*spare) is closed where rank 0 ran out
 * of open files, to make room to tell that rank too. */
sc_status_t sc_store_gather(sc_store_server_t *s, int *fds, uint8_t **blobs,
                            uint32_t *lens, uint32_t *ports, int *spare,
                            sc_store_arrival_t *arriving, int *n, char *err,
                            size_t len);

#endif
