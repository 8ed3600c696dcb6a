/* sc-bench reducer: a model's gradients (a profile from bench/profiles/) replayed
 * through the gradient reducer with the backward's compute spread over them, per bucket
 * cap, next to one all-reduce per tensor. */
#ifndef SC_BENCH_REDUCER_H
#define SC_BENCH_REDUCER_H

/* Runs `sc-bench reducer [options]` under scrun; argv[0] is "reducer". Returns the exit
 * status: 0, 1 when a result is wrong or a call fails, 2 on a bad command line or an
 * unreadable profile. */
int sc_bench_reducer_main(int argc, char **argv);

#endif
