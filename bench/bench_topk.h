/* sc-bench topk: the selection modes of shardcomm/compress.h timed and checked on one
 * array, host or (--device) GPU. */
#ifndef SC_BENCH_TOPK_H
#define SC_BENCH_TOPK_H

/* Runs `sc-bench topk [options]`; argv[0] is "topk". Single process. Returns the exit
 * status: 0; 1 when a selection fails or is wrong, or an output file cannot be written
 * to the end; 2 on a bad command line, an --input that cannot be the input, a --ratio
 * that selects nothing, or an output file that cannot be opened for writing. */
int sc_bench_topk_main(int argc, char **argv);

#endif
