/* Preloaded into test_header_failure: the first collective header sent after
 * sc_test_fail_next_header_send() (or the one after n others,
 * sc_test_fail_header_send_after(n)) leaves as usual, but UCX is made to report its send
 * failed (Connection reset), as a send to a peer whose connection broke is; with
 * sc_test_fail_header_send_held(n, path), only once the file path exists (the peer made
 * it, its step done) or 10 s passed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

/* The tag's kind field (transport_ucx.h): a header, of a collective (sub 0). */
#define HDR_KIND 3u

static int armed; /* collective headers to send until the one that fails; 0: none */
static char token; /* handed out in place of the failed send's request */
static void *held; /* the real request behind token, while UCX still runs it */
static char hold_path[256]; /* the failure reported once this file exists; "": at once */
static double hold_until; /* or at this time (CLOCK_MONOTONIC) */

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

void sc_test_fail_header_send_after(int n)
{
    hold_path[0] = '\0';
    __atomic_store_n(&armed, n + 1, __ATOMIC_SEQ_CST);
}

/* As sc_test_fail_header_send_after, the failure reported only once path exists: a peer
 * that received the header completes its part before it learns of the failure. */
void sc_test_fail_header_send_held(int n, const char *path)
{
    snprintf(hold_path, sizeof(hold_path), "%s", path);
    hold_until = now_s() + 10.0;
    __atomic_store_n(&armed, n + 1, __ATOMIC_SEQ_CST);
}

void sc_test_fail_next_header_send(void)
{
    sc_test_fail_header_send_after(0);
}

/* Whether this header is the one to fail. */
static int sc_test_header_fails(void)
{
    int left = __atomic_load_n(&armed, __ATOMIC_SEQ_CST);

    while (left > 0 && !__atomic_compare_exchange_n(&armed, &left, left - 1, 0,
                                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
    return left == 1;
}

ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                                  const ucp_request_param_t *param)
{
    static ucs_status_ptr_t (*real)(ucp_ep_h, const void *, size_t, ucp_tag_t,
                                    const ucp_request_param_t *);
    ucs_status_ptr_t r;

    if (!real)
        real = (ucs_status_ptr_t(*)(ucp_ep_h, const void *, size_t, ucp_tag_t,
                                    const ucp_request_param_t *))dlsym(RTLD_NEXT,
                                                                       "ucp_tag_send_nbx");
    r = real(ep, buffer, count, tag, param);
    if (((tag >> 50) & 3) != HDR_KIND || ((tag >> 16) & 0xffff) != 0 || UCS_PTR_IS_ERR(r) ||
        !sc_test_header_fails())
        return r;
    held = r;
    return &token;
}

ucs_status_t ucp_request_check_status(void *request)
{
    static ucs_status_t (*real)(void *);
    static void (*release)(void *);

    if (!real) {
        real = (ucs_status_t(*)(void *))dlsym(RTLD_NEXT, "ucp_request_check_status");
        release = (void (*)(void *))dlsym(RTLD_NEXT, "ucp_request_free");
    }
    if (request != &token)
        return real(request);
    if (held && real(held) == UCS_INPROGRESS)
        return UCS_INPROGRESS;
    if (held)
        release(held);
    held = NULL;
    if (hold_path[0] && access(hold_path, F_OK) != 0 && now_s() < hold_until)
        return UCS_INPROGRESS;
    return UCS_ERR_CONNECTION_RESET;
}

void ucp_request_free(void *request)
{
    static void (*real)(void *);

    if (!real)
        real = (void (*)(void *))dlsym(RTLD_NEXT, "ucp_request_free");
    if (request != &token)
        real(request);
}

void ucp_request_cancel(ucp_worker_h worker, void *request)
{
    static void (*real)(ucp_worker_h, void *);

    if (!real)
        real = (void (*)(ucp_worker_h, void *))dlsym(RTLD_NEXT, "ucp_request_cancel");
    if (request != &token)
        real(worker, request);
}
