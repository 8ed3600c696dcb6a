/* UCX's leak check's lines left out around a worker's destruction (ucx_leak_filter.h):
 * a UCX log handler, pushed and popped. */
#include <pthread.h>
#include <string.h>
#include <ucs/debug/log_def.h>

#include "collectives/ucx_leak_filter.h"

/* Set on the thread between start and end. The leak check prints on the thread that
 * destroys the worker; UCX's handlers see every thread's lines, and one that left out
 * any of them in the window left out another transport's leak check on another thread,
 * or the application's own UCX lines, and counted them as this destroy's. */
static _Thread_local int sc_ucx_hiding;
static _Thread_local unsigned sc_ucx_hidden;

/* UCX's list of handlers is an array and a count, with no lock, whose pop removes the
 * last handler pushed: two transports destroyed at once on two threads pushed and popped
 * it together, and a lost update removed UCX's own handler (no UCX line printed again)
 * or left the filter for good. It is pushed once for all the threads in the window, and
 * popped by the last one out, only where it is still the last handler: one pushed
 * meanwhile above it (the application's) was popped in its place. */
static pthread_mutex_t sc_ucx_filter_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned sc_ucx_filter_users;
static unsigned sc_ucx_filter_depth; /* UCX's count of handlers with the filter last;
                                        0: not pushed (UCX's list full) */

static ucs_log_func_rc_t sc_ucx_leak_filter(const char *file, unsigned line,
                                            const char *function, ucs_log_level_t level,
                                            const ucs_log_component_config_t *comp_conf,
                                            const char *message, va_list ap)
{
    (void)file, (void)line, (void)function, (void)comp_conf, (void)ap;
    if (!sc_ucx_hiding || level != UCS_LOG_LEVEL_WARN ||
        !strstr(message, "was not returned to mpool"))
        return UCS_LOG_FUNC_RC_CONTINUE;
    sc_ucx_hidden++;
    return UCS_LOG_FUNC_RC_STOP;
}

void sc_ucx_leaks_hide_start(void)
{
    pthread_mutex_lock(&sc_ucx_filter_lock);
    if (sc_ucx_filter_users++ == 0) {
        unsigned before = ucs_log_num_handlers();

        ucs_log_push_handler(sc_ucx_leak_filter);
        sc_ucx_filter_depth = ucs_log_num_handlers() == before + 1 ? before + 1 : 0;
    }
    pthread_mutex_unlock(&sc_ucx_filter_lock);
    sc_ucx_hidden = 0;
    sc_ucx_hiding = 1;
}

unsigned sc_ucx_leaks_hide_end(void)
{
    sc_ucx_hiding = 0;
    pthread_mutex_lock(&sc_ucx_filter_lock);
    /* Where another handler is last, the filter stays under it: it leaves out nothing
     * while no thread is between start and end. */
    if (--sc_ucx_filter_users == 0 && sc_ucx_filter_depth != 0 &&
        ucs_log_num_handlers() == sc_ucx_filter_depth)
        ucs_log_pop_handler();
    pthread_mutex_unlock(&sc_ucx_filter_lock);
    return sc_ucx_hidden;
}
