/* core_pingpong: the round trip of one cache line between two threads pinned to two
 * cores (default 0 and 1): a value handed back and forth through a shared atomic,
 * ROUNDS times; prints the mean round trip in ns. On a VM it tells whether the vCPUs
 * share a cache (tens of ns) or sit on different dies (hundreds), which decides how fast
 * shared-memory collectives are (benchmarks.md, "Interleaved in one process").
 *
 * usage: build/bench/core_pingpong [CORE_A CORE_B [ROUNDS]]   (default 0 1 200000) */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
    _Alignas(64) atomic_long turn; /* odd: the second thread's move; even: the first's;
                                      -1: the second thread could not be pinned */
    long rounds;
    int core;
} pp_shared_t;

static int pp_pin(int core)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(core, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *pp_second(void *arg)
{
    pp_shared_t *s = arg;

    if (pp_pin(s->core) != 0) {
        atomic_store_explicit(&s->turn, -1, memory_order_release);
        return NULL;
    }
    for (long i = 0; i < s->rounds; i++) {
        while (atomic_load_explicit(&s->turn, memory_order_acquire) != 2 * i + 1)
            ;
        atomic_store_explicit(&s->turn, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    static pp_shared_t s;
    int a = argc > 2 ? atoi(argv[1]) : 0;
    struct timespec t0, t1;
    pthread_t th;

    s.core = argc > 2 ? atoi(argv[2]) : 1;
    s.rounds = argc > 3 ? atol(argv[3]) : 200000;
    if (argc == 2 || argc > 4 || s.rounds < 1 || a < 0 || s.core < 0 || a >= CPU_SETSIZE ||
        s.core >= CPU_SETSIZE || a == s.core) {
        fprintf(stderr, "usage: core_pingpong [CORE_A CORE_B [ROUNDS]] (two different "
                        "cores)\n");
        return 2;
    }
    if (pp_pin(a) != 0) {
        fprintf(stderr, "core_pingpong: cannot run on core %d\n", a);
        return 1;
    }
    /* The second thread spins until the first move: nothing to wait for at the start. */
    if (pthread_create(&th, NULL, pp_second, &s) != 0) {
        fprintf(stderr, "core_pingpong: no second thread\n");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < s.rounds; i++) {
        long seen;
        /* Only from the value this thread left: a failed pin's -1 stays. */
        long expect = 2 * i;
        if (!atomic_compare_exchange_strong(&s.turn, &expect, 2 * i + 1))
            break;
        while ((seen = atomic_load_explicit(&s.turn, memory_order_acquire)) != 2 * i + 2 &&
               seen != -1)
            ;
        if (seen == -1)
            break;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(th, NULL);
    if (atomic_load(&s.turn) == -1) {
        fprintf(stderr, "core_pingpong: cannot run on core %d\n", s.core);
        return 1;
    }
    printf("cores %d and %d: round trip %.0f ns (mean of %ld)\n", a, s.core,
           ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
               (double)s.rounds,
           s.rounds);
    return 0;
}
