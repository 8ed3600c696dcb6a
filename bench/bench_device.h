/* sc-bench --device: the rank's GPU, one CUDA stream and two device buffers. A CUDA
 * build links bench_device_cuda.c; a host-only build links bench_device_nocuda.c,
 * which refuses. */
#ifndef SC_BENCH_DEVICE_H
#define SC_BENCH_DEVICE_H

#include <stddef.h>
#include "shardcomm/shardcomm.h"

typedef struct sc_bench_device sc_bench_device_t;

/* 1 in a CUDA build, 0 in a host-only build. */
int sc_bench_device_available(void);

/* Makes the rank's GPU current (SC_DEVICE if set, else local_rank modulo the number
 * of GPUs, as the library chooses), creates a stream on it and allocates two buffers
 * of `bytes` each. Errors: SC_ERR_UNSUPPORTED in a host-only build, SC_ERR_DEVICE when
 * a CUDA call fails (no GPU among others), SC_ERR_INVALID_ARG for a bad SC_DEVICE;
 * the sentence is in sc_bench_device_error(). *dev is set only on success. */
sc_status_t sc_bench_device_open(int local_rank, size_t bytes, sc_bench_device_t **dev);

/* Frees the buffers and the stream; NULL is a no-op. */
void sc_bench_device_close(sc_bench_device_t *dev);

/* Device buffer 0 or 1, and the stream the calls are enqueued on. */
void *sc_bench_device_buffer(const sc_bench_device_t *dev, int index);
sc_stream_t sc_bench_device_stream(const sc_bench_device_t *dev);

/* "GPU 0 (NVIDIA H100 80GB HBM3)". */
const char *sc_bench_device_name(const sc_bench_device_t *dev);

/* Copies bytes between host and device memory, either way, in order with the work
 * enqueued on the stream, and returns when the copy is done. SC_ERR_DEVICE. */
sc_status_t sc_bench_device_copy(sc_bench_device_t *dev, void *dst, const void *src,
                                 size_t bytes);

/* Returns when the work enqueued on the stream has run. SC_ERR_DEVICE. */
sc_status_t sc_bench_device_sync(sc_bench_device_t *dev);

/* The sentence of the last failure of a function above. Not thread-safe. */
const char *sc_bench_device_error(void);

#endif
