/* What the two-node test programs share: their failure line, and the library's clock. */
#ifndef SC_TEST_NETFAULT_UTIL_H
#define SC_TEST_NETFAULT_UTIL_H

#include <stdio.h>

#include "core/clock.h"

/* Prints "FAIL: ..." and returns 1 from the calling function. */
#define FAIL(...)                                                                        \
    do {                                                                                 \
        fprintf(stderr, "FAIL: " __VA_ARGS__);                                           \
        fprintf(stderr, "\n");                                                           \
        return 1;                                                                        \
    } while (0)

#endif
