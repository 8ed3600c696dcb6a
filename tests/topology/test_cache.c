/* Specs of sc_info_cache_bytes: each core's caches as the kernel lists them (read here
 * from sysfs, independently of hwloc), and the refusals. */
#include "test_util.h"

#include <pthread.h>
#include <stdint.h>

#include "shardcomm/info.h"
#include "shardcomm/status.h"

#define UNTOUCHED UINT64_C(0x5a5a5a5a5a5a5a5a)

/* The size of cpu's data or unified cache of level from sysfs: 1 found, 0 none listed
 * (*bytes 0), -1 where sysfs lists no cache at all for cpu. */
static int sysfs_cache_bytes(int cpu, int level, uint64_t *bytes)
{
    char path[160], line[64];
    int listed = 0;

    *bytes = 0;
    for (int i = 0; i < 32; i++) {
        char unit = 0;
        unsigned long long size = 0;

        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/level",
                 cpu, i);
        if (read_file_line(path, line, sizeof(line)) < 0)
            break;
        listed = 1;
        if (atoi(line) != level)
            continue;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/type",
                 cpu, i);
        if (read_file_line(path, line, sizeof(line)) < 0 || strncmp(line, "Instruction", 11) == 0)
            continue;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/size",
                 cpu, i);
        if (read_file_line(path, line, sizeof(line)) < 0 ||
            sscanf(line, "%llu%c", &size, &unit) < 1)
            continue;
        *bytes = (uint64_t)size << (unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0);
        return 1;
    }
    return listed ? 0 : -1;
}

static int cache_bytes_refuses_a_level_outside_1_to_5_and_a_null_output(void)
{
    static const int levels[] = {0, 6, -1, 1000};
    uint64_t bytes = UNTOUCHED;

    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        CHECK(sc_info_cache_bytes(levels[i], &bytes) == SC_ERR_INVALID_ARG);
        CHECK(bytes == UNTOUCHED);
        CHECK(strstr(sc_last_error(), "the level must be 1 to 5") != NULL);
    }
    CHECK(sc_info_cache_bytes(3, NULL) == SC_ERR_INVALID_ARG);
    CHECK(strstr(sc_last_error(), "null") != NULL);
    return TEST_PASS;
}

/* On each cpu the process may use, the thread moved there: levels 1-3 are the
 * kernel's sizes of that cpu's data or unified caches (32 MiB of L3 on an AMD EPYC VM
 * whose CPUID says 384), and a level the kernel lists none of is SC_ERR_UNSUPPORTED.
 * Whether the answer follows the cpu shows only where cpus' caches differ in size
 * (a 7950X3D's two dies); on this VM's one L3 any core's would pass. */
static int cache_bytes_are_the_kernels_sizes_on_each_allowed_cpu(void)
{
    cpu_set_t allowed, one;
    int checked = 0;

    CHECK(pthread_getaffinity_np(pthread_self(), sizeof(allowed), &allowed) == 0);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &allowed))
            continue;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        CHECK(pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0);
        for (int level = 1; level <= 3; level++) {
            uint64_t want, got = UNTOUCHED;
            int listed = sysfs_cache_bytes(cpu, level, &want);
            sc_status_t status;

            if (listed < 0)
                break;
            status = sc_info_cache_bytes(level, &got);
            if (listed == 0) {
                CHECK(status == SC_ERR_UNSUPPORTED);
                CHECK(got == UNTOUCHED);
                continue;
            }
            if (status != SC_SUCCESS || got != want) {
                fprintf(stderr, "cpu %d level %d: sysfs %llu bytes, the library %s %llu (%s)\n",
                        cpu, level, (unsigned long long)want, sc_status_string(status),
                        (unsigned long long)got, sc_last_error());
                return TEST_FAIL;
            }
            checked++;
        }
    }
    CHECK(pthread_setaffinity_np(pthread_self(), sizeof(allowed), &allowed) == 0);
    if (checked == 0)
        SKIP("sysfs lists no cache of levels 1-3 for any allowed cpu");
    return TEST_PASS;
}

static const test_entry_t tests[] = {
    {"cache_bytes_refuses_a_level_outside_1_to_5_and_a_null_output",
     cache_bytes_refuses_a_level_outside_1_to_5_and_a_null_output},
    {"cache_bytes_are_the_kernels_sizes_on_each_allowed_cpu",
     cache_bytes_are_the_kernels_sizes_on_each_allowed_cpu},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
