/* sc-bench kernels: throughput of the mixed-precision kernels next to the copy
 * bandwidth of the same bytes, on host buffers or with --device on a GPU. */
#ifndef SC_BENCH_KERNELS_H
#define SC_BENCH_KERNELS_H

/* Runs `sc-bench kernels [options]`; argv[0] is "kernels". Single process: no scrun,
 * no communicator. Returns the exit status: 0, 1 when a kernel or the device fails,
 * 2 on a bad command line. */
int sc_bench_kernels_main(int argc, char **argv);

#endif
