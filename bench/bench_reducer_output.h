/* sc-bench reducer's results: what one row measured, and its printing as text and JSON. */
#ifndef SC_BENCH_REDUCER_OUTPUT_H
#define SC_BENCH_REDUCER_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_profile.h"
#include "bench_reducer_options.h"
#include "shardcomm/shardcomm.h"

/* What sc_br_time measures, in ms per iteration averaged over the timed iterations. */
typedef struct {
    double iter, compute; /* the slowest rank's */
    /* From the last gradient ready on any rank to finalize returning on every rank:
     * the communication no rank's compute hid. Where the ranks do not share a clock
     * (several nodes) it is exposed_rank. */
    double exposed;
    double skew;          /* the spread of the ranks' last gradient; NAN without a clock */
    double exposed_rank;  /* from a rank's own last gradient, the slowest rank's */
} sc_br_times_t;

/* One printed row: one bucket cap, over all ranks. */
typedef struct {
    int autotune;             /* the cap is autotune's choice */
    size_t cap_bytes;         /* in force, from sc_reducer_stats */
    int buckets;
    size_t last_bucket_bytes; /* what last_bucket_ms reduced */
    size_t last_bucket_sent;  /* bytes rank 0 sent in one such call: the top-k hook's
                                 count, else a ring all-reduce's 2 (p-1)/p of it */
    size_t copy_bytes;        /* copied to and from buckets in the last timed iteration */
    sc_br_times_t t;          /* the reducer's step */
    double last_bucket_ms;      /* back to back, its memory in cache */
    double last_bucket_cold_ms; /* every rank's caches flushed first */
    sc_br_times_t per_tensor; /* the step with one all-reduce per tensor */
    int64_t wrong;            /* elements off the reference, summed over ranks */
    int identical;            /* the results are bitwise the same on every rank */
} sc_br_row_t;

/* The run's header lines and the column titles (rank 0, to stdout). */
void sc_br_print_header(const sc_br_options_t *o, const sc_bench_profile_t *p, sc_comm_t *comm,
                        int argc, char **argv);

/* One row of the table. */
void sc_br_print_row(const sc_br_row_t *w);

/* The best cap of a sweep and, with --autotune, how autotune's choice compares to it. */
void sc_br_print_summary(const sc_br_row_t *rows, int nrows);

/* The rows as JSON into f, opened before the run (sc_bench_output_open_root). */
void sc_br_json_write(FILE *f, const sc_br_options_t *o, int nranks, const sc_br_row_t *rows,
                      int nrows);

#endif
