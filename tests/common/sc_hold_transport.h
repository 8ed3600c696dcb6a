/* A rank that stops taking messages: it holds its transport's lock (no progress, no
 * message taken, its shared-memory FIFO fills) until a peer's process is gone. For the
 * multi-rank tests built with the library's internals. */
#ifndef SC_TESTS_HOLD_TRANSPORT_H
#define SC_TESTS_HOLD_TRANSPORT_H

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "core/comm_internal.h"

/* Holds world's transport's lock until process peer is gone, 10 s at most, then ends
 * the process with status 0, without destructors. */
static inline void sc_test_hold_until_gone(sc_comm_t *world, pid_t peer)
{
    struct timespec t0, t;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_mutex_lock(&world->tp->lock);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (kill(peer, 0) != 0 || t.tv_sec - t0.tv_sec >= 10)
            break;
        usleep(1000);
    }
    pthread_mutex_unlock(&world->tp->lock);
    fflush(NULL);
    _exit(0);
}

#endif
