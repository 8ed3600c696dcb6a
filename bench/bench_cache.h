/* How much memory sc-bench writes over to evict a rank's caches before a cold
 * measurement (sc-bench reducer's last_bucket_cold_ms). */
#ifndef SC_BENCH_CACHE_H
#define SC_BENCH_CACHE_H

#include <stddef.h>

/* Twice the L3 cache of the core this process runs on when first called (the same
 * size after), as hwloc lists it (sc_info_cache_bytes); 64 MiB where that is 16 MiB or
 * less or unknown. */
size_t sc_bench_cache_flush_bytes(void);

#endif
