/* The TCP rendezvous store served by rank 0: exchanges one blob per rank at start-up
 * (UCX worker addresses and host names), as NCCL's bootstrap does. */
#ifndef SC_CORE_BOOTSTRAP_STORE_H
#define SC_CORE_BOOTSTRAP_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "core/bootstrap_wire.h"
#include "shardcomm/status.h"

typedef struct {
    int size;
    size_t *lens;     /* lens[r]: bytes of rank r's blob */
    uint8_t **blobs;  /* blobs[r]: rank r's blob, inside storage */
    uint8_t *storage;
} sc_store_result_t;

/* Every rank of launch (sc_bootstrap_launch_id) calls this once with its blob; rank 0
 * also serves the store on
 * port, on every address of its host, IPv6 and IPv4 (a world of one rank serves
 * nothing and opens no port); the others connect to addr:port, addr a name, an IPv4 or
 * an IPv6 address. Once every rank arrived, the table of all blobs goes down a tree
 * (bootstrap_tree.h): rank 0 sends it to fanout ranks (rank 0's value counts) of each
 * side (those that reached it on a loopback address or not, IPv4 or IPv6), each rank
 * to fanout more, and the others are told their parent's address, so that rank 0 sends
 * O(size) bytes, not size tables; every other rank listens on a port of its own beside
 * its connection to the store for that. On success *result holds every rank's blob
 * (release with sc_store_result_free). Errors: SC_ERR_TIMEOUT listing the ranks that
 * never arrived (or naming the store that could not be reached), SC_ERR_INVALID_ARG when
 * ranks disagree on the world size or claim the same rank, or at once when addr cannot
 * resolve however long one waits (an address that does not parse), SC_ERR_SYSTEM for
 * socket errors; in the tree, SC_ERR_PEER_FAILED or SC_ERR_TIMEOUT naming this rank's
 * parent (it exited, was killed or sent nothing within timeout_s of the store's answer,
 * plus 2 s a level), or a parent's own failure as it said it, or SC_ERR_TIMEOUT naming
 * the children that never came for the table; SC_ERR_PEER_FAILED naming a rank that
 * exited or was killed before every rank had the table, or another rank's failure in
 * the tree, as the store tells every rank at once (every rank says to the store when it
 * has the table: bootstrap_wire.h), or SC_ERR_TIMEOUT naming the ranks that did not say
 * so by the store's deadline (stopped or hung; one that stalled as its answer went with
 * how much of it it took), or this rank, where the store gave up on it before it took
 * its whole answer (stopped or too slow past the store's deadline: the store reset the
 * connection), a failure this rank gives the children the store gave it as they come
 * (2 s at most), as any failure of its exchange once its place came; SC_ERR_MISMATCH at
 * once where the store at
 * addr:port serves another launch (both ids known), which it refuses without failing
 * its own, as it refuses such a process telling a failure. */
sc_status_t sc_store_allgather(const char *addr, int port, int rank, int size,
                               const sc_store_launch_t *launch, double timeout_s, int fanout,
                               const void *blob, size_t len, sc_store_result_t *result);

/* A rank whose sc_comm_init failed after it knew its rank and the store, before it could
 * join the rendezvous (its transport would not open, for one), tells the others with its
 * sentence text, so that each fails at once with SC_ERR_PEER_FAILED saying why instead of
 * waiting timeout_s for it: rank 0 serves the store only to say so to every rank that
 * connects, until all were told, its call returning once they were or after 5 s
 * (SC_STORE_FAILED_WAIT_S) and leaving the rest to its store's thread
 * (sc_store_linger_add); another rank tells rank 0's store, which fails the rendezvous
 * for all. Either gives up after timeout_s or 30 s, whichever is shorter.
 * Nothing to do in a world of one; sc_last_error() is left as it was. */
void sc_store_tell_failure(const char *addr, int port, int rank, int size,
                           const sc_store_launch_t *launch, double timeout_s, const char *text);

void sc_store_result_free(sc_store_result_t *result);

#endif
