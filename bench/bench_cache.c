/* The size of the cache flush before cold measurements (bench_cache.h): twice the L3
 * cache of the core the rank runs on as the library's hwloc lists it
 * (sc_info_cache_bytes), 64 MiB where that is 16 MiB or less or not listed. glibc's
 * sysconf(_SC_LEVEL3_CACHE_SIZE) reads CPUID, which on some AMD EPYC VMs gives the L3
 * of every CCD together (384 MiB where each core shares 32 MiB): twice that was 768
 * MiB per rank, touched and written over before each cold all-reduce. */
#include <stdint.h>

#include "bench_cache.h"
#include "shardcomm/info.h"

size_t sc_bench_cache_flush_bytes(void)
{
    /* Found once per process: the header says what this rank's flushes write. */
    static size_t bytes;
    uint64_t l3 = 0;

    if (bytes)
        return bytes;
    if (sc_info_cache_bytes(3, &l3) != SC_SUCCESS)
        l3 = 0;
    bytes = l3 > ((uint64_t)16 << 20) ? (size_t)(2 * l3) : (size_t)64 << 20;
    return bytes;
}
