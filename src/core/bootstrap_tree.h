/* The tree that carries the rendezvous's table of blobs from rank 0 to every rank, so that
 * rank 0 sends it whole to a few ranks only (fan-out SC_STORE_FANOUT) instead of to each:
 * its shape, a child's fetch from its parent, a parent's serving of its children, and
 * the table's form on the wire. */
#ifndef SC_CORE_BOOTSTRAP_TREE_H
#define SC_CORE_BOOTSTRAP_TREE_H

#include <stddef.h>
#include <stdint.h>
#include "core/bootstrap_store.h"
#include "core/bootstrap_wire.h"
#include "core/error.h"
#include "shardcomm/status.h"

/* How long a parent still serves the children to come once the store said that the
 * rendezvous failed: those alive are on their way (and learn why from it), one that
 * exited or was killed never comes. It ends sooner once each child was told, or closed
 * its connection before its hello (it heard the store as it connected: sc_tree_serve),
 * and once the connections at hand were answered where the store said its word whole,
 * which it says to every child too. */
#define SC_TREE_TOLD_S 2.0

/* How long a child that finds its parent gone (its port closed, or the connection closed
 * before the table came) waits for the store's word before it names the parent exited or
 * killed. A parent that failed stops serving once it heard the store or told it its
 * failure, and the store says its word to every rank at once: a word waiting already is
 * taken as the child connects, and one that follows within moments (the parent told the
 * store and returned before the store told the ranks) is the true sentence too. */
#define SC_TREE_WORD_LATE_S 0.5

/* The sides of the tree: ranks serve only ranks of their side, which can reach them. */
#define SC_TREE_SIDES 4

/* The side of a rank that reached the store from an address of family (AF_INET or
 * AF_INET6), a loopback one or not: one on rank 0's host, reached on a loopback address,
 * can serve no rank elsewhere, nor an IPv6 one a rank that has IPv4 alone. */
int sc_tree_side(int family, int loopback);

/* Into parent[r] and depth[r] (1: a child of rank 0), for each rank r of a world of size
 * (rank 0 the root: parent[0] = depth[0] = 0): the ranks of each side (side[r], below
 * SC_TREE_SIDES) form a tree of their own, in rank order with fanout children to a rank,
 * rank 0 the root of all. A rank that does not serve (port[r] 0: it could not listen)
 * has no children: those it would have had are rank 0's. SC_ERR_NO_MEMORY otherwise. */
sc_status_t sc_tree_layout(int size, int fanout, const uint8_t *side, const uint32_t *port,
                           int *parent, int *depth);

/* The table as the store's answer carries it (for each rank, its blob's length as a
 * uint32_t, then the blob; total bytes at payload) into *result, which takes payload
 * over (release with sc_store_result_free). SC_ERR_SYSTEM when the lengths do not add
 * up to total, SC_ERR_NO_MEMORY: sentences that name rank, the one that received it
 * (where names the store), since its children and the store pass them on as they are. */
sc_status_t sc_tree_table_take(uint8_t *payload, uint32_t total, const char *where, int rank,
                               int size, sc_store_result_t *result);

/* The store's word at the end of the table's tree (bootstrap_wire.h) as a rank that
 * serves children may hear it early: fd its connection to the store (-1: none), heard
 * once it came, its status and sentence (sc_store_net_read_word), and said where the
 * store said it whole, as it says it to every rank at once (not a reset or the end of
 * the connection, which sc_store_net_read_word words for this rank alone). */
typedef struct {
    int fd;
    int heard;
    sc_status_t st;
    char text[SC_ERROR_MAX];
    int said;
} sc_tree_word_t;

/* The table for this rank (rank of a world of size, of launch) from its parent in the
 * tree, at role's address and port, before deadline, into *result; its hello carries
 * launch and size, which the parent checks. Otherwise the sentence, naming the parent
 * (where names the store), both set as this thread's error and written to err, without
 * this thread's "rank R: " prefix, for this rank's children and the store:
 * SC_ERR_PEER_FAILED when nothing listens there, the connection closed before the table
 * came (the parent exited or was killed), or a rank of another launch or world size
 * answered there and refused this one (the parent exited, and that rank, of a launch on
 * the same host, got its port: the sentence names that rank's launch),
 * SC_ERR_TIMEOUT when nothing came by the deadline, or the status and sentence the parent
 * sent (its own parent's failure), SC_ERR_SYSTEM when the table came malformed,
 * SC_ERR_PEER_FAILED too when the table's entry for this rank is not sent (sent_len
 * bytes, the blob this rank sent the store): another rendezvous's table, from a rank that got
 * the parent's port and checks no launch (ids the same or none, a shardcomm from before
 * the check), taken by none of its children. A
 * connection the parent closed before it answered is made again once (a live parent
 * drops one silent for 5 s: this rank stopped between its connect and its hello). While it
 * connects to the parent and waits for its answer it watches the store's connection
 * (word->fd; -1: none): where the store speaks first (the rendezvous failed elsewhere,
 * while the parent is stopped, slow or does not take the connection), its word is read
 * into *word and its status and sentence are the fetch's, at once. Where both wait as
 * this rank looks, first is by their arrival (sc_store_net_io_watch): the parent's
 * answer that came before the store's word is taken, and the word heard after it. Where
 * it finds the parent gone (nothing listens there, or the connection closed before the
 * table came), the store's word that comes within SC_TREE_WORD_LATE_S is the fetch's
 * failure likewise: a parent that failed and lived stops serving so. */
sc_status_t sc_tree_fetch(const sc_store_role_t *role, int rank, int size,
                          const sc_store_launch_t *launch, const void *sent, size_t sent_len,
                          const char *where, double deadline, sc_tree_word_t *word,
                          sc_store_result_t *result, char *err, size_t err_len);

/* Serves this rank's children in the tree (the n ranks of children) as they connect to
 * listen_fd, each once and all at once (non-blocking, so that one that stalls, stopped
 * or too slow to read, holds up none of the others; a connection that sends no child's
 * hello within 5 s is dropped), until each came or deadline: the table (payload, total
 * bytes) where st is SC_SUCCESS, else st with text, this rank's failure, so that each
 * fails at once with it. A hello of another world size than size, or of another launch
 * than launch (both ids known), is no child's: it is answered SC_ERR_MISMATCH with this
 * rank's rank, launch and world size (its parent exited, and this rank, of a launch on
 * the same host, got that port), and the child of that rank is still served. Where the
 * store speaks meanwhile on word->fd (the rendezvous failed elsewhere: a rank exited or
 * was killed), its word is read into *word, the children still to come are given its
 * failure in place of the table, and those not come within 2 s are left. Where it
 * gives a failure (st's or the store's), it ends once every child was told or a
 * connection closed before its hello for each child not told: a child that hears the
 * store's failure as it connects (sc_tree_fetch) closes so, and asks no more. Where the
 * store said its failure whole (word->said: where word was heard before, st and text
 * are its; or heard here, whatever failure this rank gives), which the store says to
 * every child too, it answers the connections at hand and ends: a child still to come
 * hears the store itself, also where it finds this rank's port closed (sc_tree_fetch).
 * SC_SUCCESS (also where the store spoke: its word decides),
 * or SC_ERR_TIMEOUT naming the children that did not take the table, and how much of
 * it one that stalled took (only where st is SC_SUCCESS; else st, its sentence left to
 * the caller). Leaves listen_fd non-blocking. */
sc_status_t sc_tree_serve(int listen_fd, int rank, int size, const sc_store_launch_t *launch,
                          const uint32_t *children, int n, sc_status_t st, const char *text,
                          const uint8_t *payload, uint32_t total, const char *where,
                          double deadline, sc_tree_word_t *word);

#endif
