/* Assertions shared by the multi-rank test programs. The including file defines
 * SC_CHECK_RANK, an int expression naming this process's rank, before including. */
#ifndef SC_TESTS_CHECK_H
#define SC_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

#include "shardcomm/shardcomm.h"

/* On failure: "rank R: file:line: CHECK failed: cond: message", and the calling test
 * function returns 1. */
#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "rank %d: %s:%d: CHECK failed: %s: ", (SC_CHECK_RANK),       \
                    __FILE__, __LINE__, #cond);                                          \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

/* A call that must succeed; on failure prints its status and sentence. */
#define CHECK_OK(call)                                                                   \
    do {                                                                                 \
        sc_status_t st_ = (call);                                                        \
        CHECK(st_ == SC_SUCCESS, "%s: %s", sc_status_string(st_), sc_last_error());      \
    } while (0)

/* A call refused with status and a sentence containing text. */
#define CHECK_REFUSED(call, status, text)                                                \
    do {                                                                                 \
        sc_status_t st_ = (call);                                                        \
        CHECK(st_ == (status), "%s returned %s (%s)", #call, sc_status_string(st_),      \
              sc_last_error());                                                          \
        CHECK(strstr(sc_last_error(), (text)) != NULL, "sentence '%s' lacks '%s'",       \
              sc_last_error(), (text));                                                  \
    } while (0)

#endif
