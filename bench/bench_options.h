/* sc-bench's command line, with nccl-tests' option letters and defaults. */
#ifndef SC_BENCH_OPTIONS_H
#define SC_BENCH_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "bench_coll.h"

typedef struct {
    sc_bench_coll_t colls[SC_BENCH_COLL_COUNT]; /* run in this order */
    int ncolls;
    size_t min_bytes;      /* -b, default 8 */
    size_t max_bytes;      /* -e, default 64M */
    size_t factor;         /* -f, default 2 */
    int iters;             /* -n, default 20 */
    int warmup;            /* -w, default 5 */
    int check;             /* -c, default 1: check once per size */
    sc_dtype_t dtype;      /* -d, default float32 */
    sc_op_t op;            /* -o, default sum */
    int root;              /* -r, default 0 */
    int inplace;           /* --inplace: time the in-place variant instead */
    int blocking;          /* --blocking: calls without a request */
    int device;            /* --device: device buffers and a CUDA stream */
    int registered;        /* -R 1: host buffers from sc_mem_alloc (registered memory) */
    const char *json_path; /* --json FILE, NULL for none */
    uint64_t seed;         /* --seed, default 1 */
    int help;              /* -h: usage printed, nothing else to do */
} sc_bench_options_t;

/* Parses a byte count: digits with an optional binary suffix K, M or G (1K = 1024).
 * SC_ERR_INVALID_ARG for anything else, zero, or an overflow. */
sc_status_t sc_bench_size_parse(const char *text, size_t *bytes);

/* A decimal integer in [min, max]; SC_ERR_INVALID_ARG otherwise. */
sc_status_t sc_bench_int_parse(const char *text, long long min, long long max,
                               long long *out);

/* A decimal number in [min, max] (NaN never is). With end NULL the whole text; else
 * *end is set past the number, which may be followed by anything (a list).
 * SC_ERR_INVALID_ARG otherwise; *out and *end written only on success. */
sc_status_t sc_bench_double_parse(const char *text, double min, double max, double *out,
                                  char **end);

/* A fraction in (0, 1], as top-k's --ratio. */
sc_status_t sc_bench_ratio_parse(const char *text, double *out);

/* The k that --ratio selects of n elements: round(ratio * n), halves up, as the
 * library's compressor rounds its density. When that is 0 prints "PROG: --ratio R
 * selects no element of N (k rounds to 0)" to err and returns SC_ERR_INVALID_ARG; *k
 * is written only on success. */
sc_status_t sc_bench_ratio_k(const char *prog, double ratio, size_t n, FILE *err,
                             size_t *k);

/* Parses argv. On an error prints a sentence naming the bad argument to err and
 * returns SC_ERR_INVALID_ARG; *opts is written only on success. -h prints the usage
 * to out and sets opts->help. */
sc_status_t sc_bench_options_parse(int argc, char **argv, FILE *out, FILE *err,
                                   sc_bench_options_t *opts);

#endif
