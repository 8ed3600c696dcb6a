/* Monotonic time in seconds, and absolute deadlines for pthread_cond_timedwait. */
#ifndef SC_CORE_CLOCK_H
#define SC_CORE_CLOCK_H

#include <time.h>

static inline double sc_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Coarse monotonic time (a cached value, resolution of a few milliseconds): for
 * deadlines and periodic checks on hot paths, where the precise clock costs too much
 * inside a virtual machine. */
static inline double sc_clock_coarse(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The CLOCK_REALTIME instant ns nanoseconds from now (pthread_cond_timedwait's clock). */
static inline struct timespec sc_clock_realtime_after(long ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += ns;
    while (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

#endif
