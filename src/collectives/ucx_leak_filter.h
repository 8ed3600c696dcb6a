/* UCX's leak check at ucp_worker_destroy, its lines about requests that can never
 * complete left out (ucx_leak_filter.c). */
#ifndef SC_COLLECTIVES_UCX_LEAK_FILTER_H
#define SC_COLLECTIVES_UCX_LEAK_FILTER_H

/* From sc_ucx_leaks_hide_start on, UCX's WARN lines 'object ... was not returned to
 * mpool ...' are left out, until sc_ucx_leaks_hide_end, which returns how many were.
 * Around a ucp_worker_destroy whose worker still holds requests released unfinished
 * (their peer never answered), which UCX 1.13 cannot end. Only the calling thread's
 * lines are left out (the leak check prints on the thread that destroys the worker);
 * any thread, several at once, each its own start and end. */
void sc_ucx_leaks_hide_start(void);
unsigned sc_ucx_leaks_hide_end(void);

#endif
