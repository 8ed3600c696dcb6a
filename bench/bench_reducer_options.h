/* sc-bench reducer's command line: its options, their defaults and the usage text. */
#ifndef SC_BENCH_REDUCER_OPTIONS_H
#define SC_BENCH_REDUCER_OPTIONS_H

#include <stdint.h>

#include "shardcomm/reducer.h"

#define SC_BR_MAX_CAPS 32 /* caps one --sweep may list */

typedef struct {
    const char *profile;
    double caps_mb[SC_BR_MAX_CAPS]; /* --bucket-mb or --sweep */
    int ncaps;                      /* 0: one row with the reducer's default cap */
    int autotune;
    double compute_ms;
    int spin;
    int iters;
    int warmup;
    int view;
    int registered_grads; /* --registered-grads */
    sc_hook_kind_t hook;
    int topk;                       /* --hook topk (hook is then unused) */
    double density;                 /* --density, for topk */
    const char *json_path;
    uint64_t seed;
    int help;
} sc_br_options_t;

/* Parses argv (argv[0] is "reducer"); prints what is wrong to stderr, and the usage text
 * to stdout for --help (opts->help set). Returns 0 and writes *opts, or 1. */
int sc_br_options_parse(int argc, char **argv, sc_br_options_t *opts);

#endif
