/* Agreement before a collective: every rank's outcome of its local checks and the facts
 * that must be equal on every rank, gathered on all, so that one rank's failure or a
 * disagreement is an error on every rank instead of a hang or a silent mismatch. */
#ifndef SC_COLLECTIVES_AGREE_H
#define SC_COLLECTIVES_AGREE_H

#include <stdint.h>

#include "shardcomm/comm.h"
#include "shardcomm/status.h"

#define SC_AGREE_MAX_FACTS 15

typedef enum {
    SC_FACT_NUMBER = 0, /* printed as a number */
    SC_FACT_DTYPE,      /* printed as a dtype name */
    SC_FACT_DOUBLE,     /* the bits of a double (memcpy), printed with %g */
    SC_FACT_HASH,       /* a hash of something too long to gather: "differs" */
    SC_FACT_WORD        /* a word of up to 8 bytes (sc_fact_word), printed as it is */
} sc_fact_kind_t;

/* One fact: its name in error sentences ("n", "k", "index_bits"), how to print it and
 * this rank's value. */
typedef struct {
    const char *name;
    sc_fact_kind_t kind;
    int64_t value;
} sc_fact_t;

/* The value of an SC_FACT_WORD fact: word's bytes (at most the first 8; a setting's
 * value as it is spelled, "ring"), NUL-padded, so that words compare and print as text. */
int64_t sc_fact_word(const char *word);

/* Where the facts first differ: the fact's index and the rank (the lowest) whose value
 * differs from rank 0's, with both values. */
typedef struct {
    int fact;
    int rank;
    int64_t value0, value;
} sc_agree_diff_t;

/* Collective: one all-gather of every rank's local status and nfacts facts (at most
 * SC_AGREE_MAX_FACTS). Returns, on every rank:
 *   local, with this rank's sentence kept, when this rank's checks failed;
 *   peer_status (SC_SUCCESS: the failing rank's own status) naming the lowest rank whose
 *   checks failed, on the other ranks;
 *   SC_ERR_MISMATCH naming the first fact that differs from rank 0's, both values and
 *   both ranks, when every rank's checks passed (and *diff set, when diff is not NULL,
 *   for a caller that says more);
 *   the all-gather's failure.
 * caller names the public call in the sentences, which name a rank of a split by both
 * its numbers ("rank 1 (world rank 3)", sc_comm_rank_name). Facts of a rank that failed
 * are not compared (they may be unset). comm must be valid (sc_comm_check). */
sc_status_t sc_comm_agree(sc_comm_t *comm, const char *caller, sc_status_t local,
                          sc_status_t peer_status, const sc_fact_t *facts, int nfacts,
                          sc_agree_diff_t *diff);

#endif
