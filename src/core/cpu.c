/* CPU facts for the host kernels: vector path detection and its SC_CPU_ISA override, and
 * the thread count from SC_THREADS or the CPU binding. */
#define _GNU_SOURCE
#include <sched.h>

#include "core/cpu.h"
#include "core/env.h"
#include "core/env_names.h"
#include "core/error.h"

sc_cpu_isa_t sc_cpu_isa_detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("bmi2"))
        return SC_CPU_SCALAR;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        return SC_CPU_AVX512;
    return SC_CPU_AVX2;
#else
    return SC_CPU_SCALAR;
#endif
}

const char *sc_cpu_isa_name(sc_cpu_isa_t isa)
{
    return (unsigned)isa <= SC_CPU_AVX512 ? sc_env_cpu_isa_words.words[isa] : "unknown";
}

sc_status_t sc_cpu_isa_select(sc_cpu_isa_t *isa)
{
    const char *which = NULL;
    const char *s = sc_env_first(sc_env_cpu_isa_names, &which);
    sc_cpu_isa_t best = sc_cpu_isa_detect();
    int i;
    sc_status_t st = sc_env_choice(sc_env_cpu_isa_names, &sc_env_cpu_isa_words, (int)best, &i);

    if (st != SC_SUCCESS)
        return st;
    if ((sc_cpu_isa_t)i > best)
        return sc_error(SC_ERR_UNSUPPORTED,
                        "%s=%s asks for a vector path this CPU lacks (it has %s)", which, s,
                        sc_cpu_isa_name(best));
    *isa = (sc_cpu_isa_t)i;
    return SC_SUCCESS;
}

sc_status_t sc_cpu_threads(int *threads)
{
    cpu_set_t set;
    long v;
    sc_status_t st = sc_env_int(sc_env_threads_names, 0, &v);
    const char *raw = sc_env_first(sc_env_threads_names, NULL);

    if (st != SC_SUCCESS)
        return st;
    if (raw) {
        /* The text as written (04097 was quoted as 4097, -0 as 0). */
        if (v < 1 || v > SC_CPU_THREADS_MAX)
            return sc_error(SC_ERR_INVALID_ARG, "SC_THREADS=%s is outside 1..%d", raw,
                            SC_CPU_THREADS_MAX);
        *threads = (int)v;
        return SC_SUCCESS;
    }
    v = 1;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        v = CPU_COUNT(&set);
    *threads = (int)v;
    return SC_SUCCESS;
}
