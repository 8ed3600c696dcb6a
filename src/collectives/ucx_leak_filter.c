/* UCX's leak check's lines left out around a worker's destruction (ucx_leak_filter.h):
 * a UCX log handler, pushed and popped. */
#include <string.h>
#include <ucs/debug/log_def.h>

#include "collectives/ucx_leak_filter.h"

static unsigned sc_ucx_leaks_hidden;
static unsigned sc_ucx_leaks_before;

static ucs_log_func_rc_t sc_ucx_leak_filter(const char *file, unsigned line,
                                            const char *function, ucs_log_level_t level,
                                            const ucs_log_component_config_t *comp_conf,
                                            const char *message, va_list ap)
{
    (void)file, (void)line, (void)function, (void)comp_conf, (void)ap;
    if (level != UCS_LOG_LEVEL_WARN || !strstr(message, "was not returned to mpool"))
        return UCS_LOG_FUNC_RC_CONTINUE;
    __atomic_add_fetch(&sc_ucx_leaks_hidden, 1, __ATOMIC_RELAXED);
    return UCS_LOG_FUNC_RC_STOP;
}

void sc_ucx_leaks_hide_start(void)
{
    sc_ucx_leaks_before = __atomic_load_n(&sc_ucx_leaks_hidden, __ATOMIC_RELAXED);
    ucs_log_push_handler(sc_ucx_leak_filter);
}

unsigned sc_ucx_leaks_hide_end(void)
{
    ucs_log_pop_handler();
    return __atomic_load_n(&sc_ucx_leaks_hidden, __ATOMIC_RELAXED) - sc_ucx_leaks_before;
}
