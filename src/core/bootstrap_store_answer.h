/* The answers of rank 0's store once every rank arrived (bootstrap_store_answer.c), for
 * its server thread (bootstrap_store_server.c). */
#ifndef SC_CORE_BOOTSTRAP_STORE_ANSWER_H
#define SC_CORE_BOOTSTRAP_STORE_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include "core/bootstrap_store_server.h"
#include "shardcomm/status.h"

/* Every rank's answer as sc_store_answer lays it out, sent by sc_store_watch as each
 * rank's socket takes it: rank r's header and place in the tree (head + at[r] to
 * head + at[r + 1]), then the table where it is a child of rank 0 (with_table[r]); sent[r]
 * bytes of it sent. */
typedef struct {
    uint8_t *head;
    size_t *at;
    size_t *sent;
    uint8_t *with_table;
    uint8_t *table;
    uint32_t table_len;
    int height; /* the tree's */
} sc_store_answers_t;

void sc_store_answers_free(sc_store_answers_t *a);

/* Every rank's answer once all arrived, into *a (released with sc_store_answers_free):
 * its place in the table's tree (sc_store_tree_plan), with the table for rank 0's
 * children, for each rank connected (fds[r] open); nothing is sent yet. Otherwise the
 * sentence in err (the blobs add up to more than a table holds, or rank 0 is out of
 * memory). */
sc_status_t sc_store_answer(sc_store_server_t *s, const int *fds,
                            uint8_t *const *blobs, const uint32_t *lens,
                            uint32_t *ports, sc_store_answers_t *a, char *err,
                            size_t err_len);

/* Every answered rank's answer (a) sent as its socket takes it, all at once under one
 * poll, so that a rank that stalls (stopped, or too slow to read the table) holds up
 * none of the others; then each says on its connection that it has the table and served
 * its children, or why not. SC_SUCCESS once all said so; else at once the first failure
 * into err: a rank's own (its status and sentence), or SC_ERR_PEER_FAILED naming a rank
 * whose connection broke before its answer went or closed before the end (it exited or
 * was killed: its children and its parent would otherwise wait SC_TIMEOUT for it, and
 * the others learn it only as they connect to it), or SC_ERR_TIMEOUT naming the ranks
 * that said nothing by deadline (with how much of its answer one that stalled took), or
 * SC_ERR_SYSTEM where its poll fails (for another reason than a signal). A rank's broken
 * or closed connection is closed and set to -1. */
sc_status_t sc_store_watch(sc_store_server_t *s, int *fds, sc_store_answers_t *a,
                           double deadline, char *err, size_t err_len);

/* Every rank connected (fds[r] open) told the outcome st and its sentence text ("" on
 * success), all under one poll on non-blocking writes, as the answers went
 * (sc_store_watch), so that a rank that takes nothing (stopped, its socket full of the
 * table) holds up none of the others' verdicts: each is waited for until deadline (one
 * that passed: each is sent what its socket takes at once), where each was waited for
 * 5 s in turn, so that with several stopped ranks the last ones heard nothing for tens
 * of seconds, and rank 0 returned only then; where poll fails, each is sent once what
 * its socket takes. One that did not take its whole answer (a) is sent the rest of it
 * first, since what it is told would be read as that rest. One not told by then is
 * given up on with a reset of its connection, which it tells from the end of a
 * connection whose rank 0 exited or was killed (sc_store_given_up, bootstrap_store.c,
 * as the rest of its answer comes; sc_store_net_read_word where only the verdict was
 * left): the reset drops what its socket held still, the rest of its answer. Every fds[r] is
 * closed, one told gracefully (sc_store_net_close_answered: its word not read, the
 * failure having come first, must not reset the connection); all are closed untold where
 * rank 0 is out of memory. */
void sc_store_tell_outcome(const sc_store_server_t *s, int *fds,
                           sc_store_answers_t *a, sc_status_t st, const char *text,
                           double deadline);

#endif
