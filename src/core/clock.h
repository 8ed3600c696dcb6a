/* Monotonic time in seconds. */
#ifndef SC_CORE_CLOCK_H
#define SC_CORE_CLOCK_H

#include <time.h>

static inline double sc_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
