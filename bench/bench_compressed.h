/* sc-bench compressed: dense all-reduce against the top-k compressed all-reduce
 * (shardcomm/compress.h) on one float32 gradient, side by side in one run. */
#ifndef SC_BENCH_COMPRESSED_H
#define SC_BENCH_COMPRESSED_H

/* Runs `sc-bench compressed [options]` under scrun; argv[0] is "compressed". Returns
 * the exit status: 0, 1 when a result is wrong or a call fails, 2 on a bad command
 * line. */
int sc_bench_compressed_main(int argc, char **argv);

#endif
