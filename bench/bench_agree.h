/* sc-bench's ranks run one command: their command lines compared before anything is
 * measured. */
#ifndef SC_BENCH_AGREE_H
#define SC_BENCH_AGREE_H

#include "shardcomm/shardcomm.h"

/* argv joined by spaces (malloc'd; NULL when out of memory), taken before getopt
 * reorders it. */
char *sc_bench_command_line(int argc, char **argv);

/* Collective over comm: 0 when every rank was given the same argc arguments argv (in
 * the order given), 2 on every rank when they differ (each says so on stderr, naming
 * the first argument in which rank 0 and the first differing rank differ), 1 when the
 * ranks could not compare them (said on stderr). A seed or a size that differs on one
 * rank would otherwise check or time another call than its peers': wrong results, a
 * mismatch, or a run that does not mean anything. */
int sc_bench_same_command(sc_comm_t *comm, const char *tool, int argc, char *const *argv);

#endif
