/* A peer's shared-memory FIFO filled: for the multi-rank tests built with the library's
 * internals, where the peer takes no message (stopped, or holding its transport's lock). */
#ifndef SC_TESTS_FILL_FIFO_H
#define SC_TESTS_FILL_FIFO_H

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "shardcomm/shardcomm.h"

/* Sends world rank q 1 KiB messages until one stays in flight for 0.2 s: q's
 * shared-memory FIFO is full, and a message sent after it is held by UCX. That one send
 * is left in flight (the process ends without it). 0, or -1 saying why. */
static inline int sc_test_fill_until_held(sc_comm_t *world, int q)
{
    static char buf[1024];

    for (int sent = 0; sent < 4096; sent++) {
        struct timespec t0, t;
        sc_request_t *req;
        sc_status_t st = sc_send(buf, sizeof(buf), SC_UINT8, q, world, NULL, &req);

        if (st != SC_SUCCESS) {
            fprintf(stderr, "sc_send to rank %d: %s: %s\n", q, sc_status_string(st),
                    sc_last_error());
            return -1;
        }
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            if (sc_test(req) != SC_IN_PROGRESS)
                break;
            usleep(100);
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) <
                 0.2);
        if (sc_test(req) == SC_IN_PROGRESS) {
            printf("%d sends went to rank %d, the next one is held\n", sent, q);
            return 0;
        }
        sc_request_free(req);
    }
    fprintf(stderr, "4096 sends went to rank %d, which takes nothing\n", q);
    return -1;
}

#endif
