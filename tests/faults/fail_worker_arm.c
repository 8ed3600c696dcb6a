/* Preloaded into test_arm_failure: every ucp_worker_arm fails (Input/output error)
 * without arming the worker, as it does where a transport cannot request its events;
 * sc_test_worker_arm_calls says how many were made. */
#include <ucp/api/ucp.h>

static unsigned long calls;

unsigned long sc_test_worker_arm_calls(void)
{
    return __atomic_load_n(&calls, __ATOMIC_RELAXED);
}

ucs_status_t ucp_worker_arm(ucp_worker_h worker)
{
    (void)worker;
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    return UCS_ERR_IO_ERROR;
}
