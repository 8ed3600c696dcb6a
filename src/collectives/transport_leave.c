/* A peer that left: the message every transport sends its peers as it closes (or as the
 * library is unloaded with it live), and the sentence its peers then give for it, where
 * UCX's verdict on the closed connection ("Endpoint timeout" over TCP, at once) read as
 * a network fault. */
#include <stdio.h>
#include <string.h>

#include "collectives/transport_leave.h"
#include "collectives/transport_ucx.h"
#include "core/clock.h"
#include "core/log.h"

/* The world communicator's context id and kind of control messages with a sequence
 * number that its own control tag never carries (its generation is 0). */
#define SC_LEAVE_TAG sc_tag_make(0, SC_TAG_KIND_CTL, 1, 0, 0)

static void sc_leave_post(sc_transport_t *tp);

/* Its failure, whatever reported it first (UCX's verdict on the closed connection, the pid
 * check), is its leaving. */
void sc_leave_note(sc_transport_t *tp, int r, uint32_t why)
{
    if (r < 0 || r >= tp->world_size || r == tp->world_rank || tp->peer_left[r])
        return;
    tp->peer_left[r] = 1;
    if (tp->peer_error[r][0] == '\0')
        tp->peer_error_at[r] = sc_clock_coarse();
    if (why == SC_LEAVE_UNLOADED)
        snprintf(tp->peer_error[r], sizeof(tp->peer_error[r]), "rank %d left: its process "
                 "unloaded libshardcomm (dlclose) or exited with its communicators live "
                 "(never destroyed with sc_comm_destroy)", r);
    else
        snprintf(tp->peer_error[r], sizeof(tp->peer_error[r]), "rank %d left: it destroyed "
                 "its communicators (sc_comm_destroy) and closed its connections", r);
    sc_log(SC_LOG_INFO, "%s", tp->peer_error[r]);
}

static void sc_leave_arrived(void *req, ucs_status_t status, const ucp_tag_recv_info_t *info,
                             void *arg)
{
    sc_transport_t *tp = arg;
    int src = (int)(info->sender_tag & SC_TAG_SRC_MASK); /* info lives in req */

    ucp_request_free(req);
    tp->leave_req = NULL;
    if (status != UCS_OK)
        return; /* cancelled as this transport closes */
    sc_leave_note(tp, src, tp->leave_in);
    sc_leave_post(tp);
}

/* Posts the receive of the next peer's message (one that came already completes it at
 * the next progress). */
static void sc_leave_post(sc_transport_t *tp)
{
    ucp_request_param_t param;
    void *req;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = sc_leave_arrived;
    param.user_data = tp;
    req = ucp_tag_recv_nbx(tp->worker, &tp->leave_in, sizeof(tp->leave_in), SC_LEAVE_TAG,
                           ~SC_TAG_SRC_MASK, &param);
    /* Without the receive, a peer's leaving is UCX's verdict or the pid check's. */
    tp->leave_req = UCS_PTR_IS_PTR(req) ? req : NULL;
}

void sc_leave_listen(sc_transport_t *tp)
{
    sc_leave_post(tp);
}

void sc_leave_tell(sc_transport_t *tp, uint32_t why)
{
    static const uint32_t reasons[] = {SC_LEAVE_DESTROYED, SC_LEAVE_UNLOADED};

    if (tp->leave_told || !tp->eps)
        return;
    tp->leave_told = 1;
    for (int r = 0; r < tp->world_size; r++) {
        ucp_request_param_t param;
        int stopped;
        void *req;

        if (r == tp->world_rank || !tp->eps[r] || tp->peer_error[r][0])
            continue;
        /* A stopped local peer (SIGSTOP, a debugger) takes nothing: at a close its
         * message would wait in the endpoint, whose close then cannot flush it (UCX
         * asserted on the pending operation at ucp_worker_destroy). The unload destroys
         * no endpoint: there the message goes all the same, into the peer's FIFO where it
         * has room, and is not waited for. Untold, the peer once continued waited its
         * SC_TIMEOUT for a rank whose process lives on after dlclose. */
        stopped = sc_ucx_peer_stopped(tp, r);
        if (stopped && why != SC_LEAVE_UNLOADED)
            continue;
        memset(&param, 0, sizeof(param));
        req = ucp_tag_send_nbx(tp->eps[r], &reasons[why == SC_LEAVE_UNLOADED],
                               sizeof(uint32_t), SC_LEAVE_TAG | (uint64_t)tp->world_rank,
                               &param);
        if (UCS_PTR_IS_PTR(req) && !stopped && tp->leave_out_n < tp->world_size) {
            tp->leave_out[tp->leave_out_n++] = req;
        } else if (UCS_PTR_IS_PTR(req)) {
            /* A later close (a destroy after the unload at exit) must not flush it. */
            if (stopped && ucp_request_check_status(req) == UCS_INPROGRESS)
                tp->ep_flags[r] |= SC_EP_LEAVE_HELD;
            ucp_request_free(req);
        }
    }
}

int sc_leave_sent(sc_transport_t *tp)
{
    int n = 0;

    for (int i = 0; i < tp->leave_out_n; i++) {
        if (ucp_request_check_status(tp->leave_out[i]) == UCS_INPROGRESS)
            tp->leave_out[n++] = tp->leave_out[i];
        else
            ucp_request_free(tp->leave_out[i]);
    }
    tp->leave_out_n = n;
    return n == 0;
}

void sc_leave_stop(sc_transport_t *tp, double deadline)
{
    /* The sends still in flight are released; the endpoints' close delivered or ended
     * them. */
    for (int i = 0; i < tp->leave_out_n; i++)
        ucp_request_free(tp->leave_out[i]);
    tp->leave_out_n = 0;
    if (!tp->leave_req)
        return;
    ucp_request_cancel(tp->worker, tp->leave_req);
    while (tp->leave_req && sc_clock_now() < deadline)
        ucp_worker_progress(tp->worker);
}
