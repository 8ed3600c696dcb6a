/* Preloaded into test_arm_failure: every ucp_worker_arm fails (Input/output error)
 * without arming the worker, as it does where a transport cannot request its events;
 * sc_test_worker_arm_calls says how many were made, and sc_test_worker_arm_quick how
 * many of them came within 1 ms of the calling thread's previous arm. A thread that
 * sleeps after a failed arm makes none such; one that arms again at once makes almost
 * every arm so, however little CPU it gets: each time it runs, it arms in a loop. */
#include <time.h>
#include <ucp/api/ucp.h>

#define QUICK_ARM_S 0.001

static unsigned long calls, quick;
static __thread double last_arm;

static double arm_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

unsigned long sc_test_worker_arm_calls(void)
{
    return __atomic_load_n(&calls, __ATOMIC_RELAXED);
}

unsigned long sc_test_worker_arm_quick(void)
{
    return __atomic_load_n(&quick, __ATOMIC_RELAXED);
}

ucs_status_t ucp_worker_arm(ucp_worker_h worker)
{
    double now = arm_now();

    (void)worker;
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    if (last_arm > 0 && now - last_arm < QUICK_ARM_S)
        __atomic_add_fetch(&quick, 1, __ATOMIC_RELAXED);
    last_arm = now;
    return UCS_ERR_IO_ERROR;
}
