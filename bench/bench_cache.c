/* The size of the cache flush before cold measurements (bench_cache.h). glibc's
 * sysconf(_SC_LEVEL3_CACHE_SIZE) reads CPUID, which on some AMD EPYC VMs gives the L3
 * of every CCD together (384 MiB where each core shares 32 MiB, lscpu's figure): twice
 * that was 768 MiB per rank, touched and written over before each cold all-reduce. The
 * kernel's cache list names the L3 this core shares. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "bench_cache.h"

/* The L3 cache size of cpu in bytes from sysfs, 0 where it lists none. */
static size_t sc_bench_cache_l3_sysfs(int cpu)
{
    for (int i = 0; i < 16; i++) {
        char path[128], unit = 0;
        unsigned long long size = 0;
        int level = 0, got;
        FILE *f;

        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/level",
                 cpu, i);
        f = fopen(path, "r");
        if (!f)
            return 0;
        got = fscanf(f, "%d", &level);
        fclose(f);
        if (got != 1 || level != 3)
            continue;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/size",
                 cpu, i);
        f = fopen(path, "r");
        if (!f)
            return 0;
        got = fscanf(f, "%llu%c", &size, &unit);
        fclose(f);
        if (got < 1)
            return 0;
        return (size_t)size << (unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0);
    }
    return 0;
}

size_t sc_bench_cache_flush_bytes(void)
{
    /* Found once per process: the header says what this rank's flushes write. */
    static size_t bytes;
    int cpu;
    size_t l3;

    if (bytes)
        return bytes;
    cpu = sched_getcpu();
    l3 = sc_bench_cache_l3_sysfs(cpu < 0 ? 0 : cpu);
    if (l3 == 0) {
        long conf = sysconf(_SC_LEVEL3_CACHE_SIZE);
        l3 = conf > 0 ? (size_t)conf : 0;
    }
    bytes = l3 > ((size_t)16 << 20) ? 2 * l3 : (size_t)64 << 20;
    return bytes;
}
