/* The runner of the single-process test programs: a table of named test functions, of
 * which `prog [NAME-SUBSTRING]` runs those whose name contains the argument. */
#ifndef SC_TESTS_RUNNER_H
#define SC_TESTS_RUNNER_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*fn)(void); /* 0: passed */
} sc_test_t;

#define SC_TEST(name) {#name, test_##name}

/* Runs the tests whose name contains filter (every one when filter is NULL), printing
 * "ok" or "FAIL" and the name of each, then how many failed. Returns the program's
 * exit status: 0 when at least one test ran and none failed. */
static inline int sc_run_tests(const sc_test_t *tests, size_t n, const char *filter)
{
    int failed = 0, ran = 0;

    for (size_t i = 0; i < n; i++) {
        int bad;
        if (filter && !strstr(tests[i].name, filter))
            continue;
        bad = tests[i].fn();
        printf("%s %s\n", bad ? "FAIL" : "ok  ", tests[i].name);
        fflush(stdout);
        failed += bad != 0;
        ran++;
    }
    printf("%d of %d tests failed\n", failed, ran);
    return failed || ran == 0;
}

#endif
