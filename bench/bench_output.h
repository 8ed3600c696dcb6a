/* sc-bench's output files (--json, --indices-out): opened before anything is measured,
 * so that an unwritable path fails at once, and closed with a check of every write. */
#ifndef SC_BENCH_OUTPUT_H
#define SC_BENCH_OUTPUT_H

#include <stdio.h>
#include "shardcomm/shardcomm.h"

/* Opens path for writing (created, or truncated). On failure prints "sc-bench: cannot
 * write PATH: <reason>" to stderr and returns NULL. */
FILE *sc_bench_output_open(const char *path);

/* Collective over comm where path is given (every rank passes the same): rank 0 opens
 * path with sc_bench_output_open, and every rank learns whether it could. Returns 0
 * with *f the file on rank 0 and NULL elsewhere (NULL everywhere without a path); 2 on
 * every rank when rank 0 cannot write path (rank 0 said why); 1 when the ranks could
 * not agree (said on stderr). *f is written only when 0 is returned. */
int sc_bench_output_open_root(sc_comm_t *comm, const char *path, FILE **f);

/* Closes f, opened by the calls above (NULL: nothing to do). Returns 0 when every write
 * and the close succeeded, else 1 after printing "sc-bench: cannot write PATH: <reason>"
 * to stderr. */
int sc_bench_output_close(FILE *f, const char *path);

#endif
