/* sc-bench's output files (--json, --indices-out): opened before anything is measured,
 * so that an unwritable path fails at once, and put in place only when the run ends
 * well. A regular file (or a path not there yet) is written beside it under a temporary
 * name and renamed over it at the end, so a failed run leaves what was there before and
 * no partial file; a path that is something else (/dev/stdout, /dev/null, a pipe) is
 * written directly. */
#ifndef SC_BENCH_OUTPUT_H
#define SC_BENCH_OUTPUT_H

#include <stdio.h>
#include "shardcomm/shardcomm.h"

typedef struct sc_bench_output {
    FILE *f;      /* where the rows go */
    char *path;   /* the name given */
    char *target; /* the file renamed over at the end: path, or the file its link names */
    char *tmp;    /* the temporary file renamed to target; NULL: f is path itself */
} sc_bench_output_t;

/* Opens path for writing as above. On failure prints "sc-bench: cannot write PATH:
 * <reason>" to stderr and returns NULL. */
sc_bench_output_t *sc_bench_output_open(const char *path);

/* Collective over comm where path is given (every rank passes the same): rank 0 opens
 * path with sc_bench_output_open, and every rank learns whether it could. Returns 0
 * with *out the output on rank 0 and NULL elsewhere (NULL everywhere without a path); 2
 * on every rank when rank 0 cannot write path (rank 0 said why); 1 when the ranks could
 * not agree (said on stderr). *out is written only when 0 is returned. */
int sc_bench_output_open_root(sc_comm_t *comm, const char *path, sc_bench_output_t **out);

/* Ends a run that finished: checks every write, then puts the file in place. Returns 0
 * when all of that succeeded (NULL: nothing to do), else 1 after printing "sc-bench:
 * cannot write PATH: <reason>" to stderr and removing the temporary file. Frees out. */
int sc_bench_output_commit(sc_bench_output_t *out);

/* s as the body of a JSON string (without the quotes): quotes, backslashes and control
 * characters escaped, valid UTF-8 kept, and every byte that is not part of valid UTF-8
 * (a file name in another encoding) written as \u00XX, so that the file stays valid
 * JSON. */
void sc_bench_json_string(FILE *f, const char *s);

/* Ends a run that failed: the temporary file is removed, and path keeps what it held
 * before (a path written directly keeps what was written). NULL: nothing to do. Frees
 * out. */
void sc_bench_output_discard(sc_bench_output_t *out);

#endif
