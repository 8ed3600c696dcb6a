/* The filter of UCX's leak-check lines around a worker's destruction
 * (collectives/ucx_leak_filter.h), driven with lines of our own through UCX's log:
 * it leaves out those of the thread that started it, counted, and no other line; and
 * UCX's list of handlers, a plain array whose last entry a pop removes, is left as it
 * was, a handler pushed meanwhile included. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <ucs/config/global_opts.h>
#include <ucs/debug/log_def.h>

#include "collectives/ucx_leak_filter.h"

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"
#include "../common/sc_test_runner.h"

#define NELEM(x) (sizeof(x) / sizeof((x)[0]))

/* What UCX's leak check prints per request (ucs_mpool_cleanup), marked as ours. */
#define LEAK_LINE "object %p {sc test} was not returned to mpool %s"
#define OTHER_LINE "sc test: another warning"

/* The lines of ours that reached the test's handler, below the filter. */
static unsigned g_below;

static ucs_log_func_rc_t below(const char *file, unsigned line, const char *function,
                               ucs_log_level_t level,
                               const ucs_log_component_config_t *comp_conf,
                               const char *message, va_list ap)
{
    (void)file, (void)line, (void)function, (void)level, (void)comp_conf, (void)ap;
    if (!strstr(message, "sc test"))
        return UCS_LOG_FUNC_RC_CONTINUE;
    __atomic_add_fetch(&g_below, 1, __ATOMIC_RELAXED);
    return UCS_LOG_FUNC_RC_STOP; /* not printed */
}

static void warn(const char *format)
{
    ucs_log_dispatch(__FILE__, __LINE__, __func__, UCS_LOG_LEVEL_WARN,
                     &ucs_global_opts.log_component, format, (void *)&g_below, "sc_test");
}

static void *warn_leak(void *arg)
{
    (void)arg;
    warn(LEAK_LINE);
    return NULL;
}

/* The thread that started the filter: its leak lines left out and counted, its other
 * warnings shown; after the end, its leak lines shown, and UCX's list as it was. */
static int test_leak_lines_of_the_destroying_thread_are_left_out_and_counted(void)
{
    unsigned depth = ucs_log_num_handlers(), hidden;

    g_below = 0;
    sc_ucx_leaks_hide_start();
    warn(LEAK_LINE);
    warn(LEAK_LINE);
    warn(OTHER_LINE);
    hidden = sc_ucx_leaks_hide_end();
    CHECK(hidden == 2, "%u leak lines left out, expected 2", hidden);
    CHECK(g_below == 1, "%u lines shown, expected 1 (the other warning)", g_below);
    warn(LEAK_LINE);
    CHECK(g_below == 2, "a leak line after the end was left out");
    CHECK(ucs_log_num_handlers() == depth, "UCX has %u log handlers, %u before",
          ucs_log_num_handlers(), depth);
    return 0;
}

/* Another thread's leak line while the filter is on (another transport's worker
 * destroyed on it, the application's own UCX): shown, and not counted as this
 * destroy's. It was left out and counted. */
static int test_leak_line_of_another_thread_is_shown(void)
{
    pthread_t t;
    unsigned hidden;

    g_below = 0;
    sc_ucx_leaks_hide_start();
    CHECK(pthread_create(&t, NULL, warn_leak, NULL) == 0, "pthread_create failed");
    pthread_join(t, NULL);
    hidden = sc_ucx_leaks_hide_end();
    CHECK(g_below == 1, "another thread's leak line was left out");
    CHECK(hidden == 0, "%u lines counted as left out, expected 0", hidden);
    return 0;
}

/* A handler pushed by someone else while the filter is on (the test's own, again)
 * stays after the end: UCX's pop removes the last one pushed, and the end's pop removed
 * that handler, the filter staying in its place. */
static int test_handler_pushed_meanwhile_stays(void)
{
    unsigned depth;

    g_below = 0;
    sc_ucx_leaks_hide_start();
    ucs_log_push_handler(below);
    depth = ucs_log_num_handlers();
    sc_ucx_leaks_hide_end();
    CHECK(ucs_log_num_handlers() == depth, "UCX has %u log handlers, %u before the end",
          ucs_log_num_handlers(), depth);
    ucs_log_pop_handler();
    /* Left under it, the filter leaves out nothing once ended. */
    warn(LEAK_LINE);
    CHECK(g_below == 1, "a leak line after the end was left out");
    return 0;
}

int main(int argc, char **argv)
{
    static const sc_test_t tests[] = {
        SC_TEST(leak_lines_of_the_destroying_thread_are_left_out_and_counted),
        SC_TEST(leak_line_of_another_thread_is_shown),
        SC_TEST(handler_pushed_meanwhile_stays),
    };

    ucs_log_push_handler(below);
    return sc_run_tests(tests, NELEM(tests), argc > 1 ? argv[1] : NULL);
}
