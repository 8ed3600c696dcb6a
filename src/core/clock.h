/* Monotonic time in seconds, and absolute deadlines for pthread_cond_timedwait. */
#ifndef SC_CORE_CLOCK_H
#define SC_CORE_CLOCK_H

#include <limits.h>
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

/* Milliseconds from now until deadline (an sc_clock_now time) for poll(): 0 once it has
 * passed, at most INT_MAX (24.8 days) for a later or infinite one, so that a long
 * timeout is never an overflowed, negative interval. Rounded up, so that a poll that
 * times out ends at or past the deadline: rounded down, the last part under a
 * millisecond became a poll of 0 ms that returned at once, before the deadline, and a
 * caller that tells "nothing came in time" from "the connection closed" by the clock
 * took a stopped peer for a dead one. */
static inline int sc_clock_ms_until(double deadline)
{
    double ms = (deadline - sc_clock_now()) * 1000.0;
    int whole;

    if (!(ms > 0.0))
        return 0;
    if (ms >= (double)INT_MAX)
        return INT_MAX;
    whole = (int)ms;
    return whole + ((double)whole < ms);
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
