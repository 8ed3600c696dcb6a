/* A peer that left: the message every transport sends its peers as it closes, and the
 * sentence its peers then give for it, where UCX's verdict on the closed connection
 * ("Endpoint timeout" over TCP, at once) read as a network fault. */
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

/* Marks world rank r as having left: its failure, whatever reported it first (UCX's
 * verdict on the closed connection, the pid check), is its leaving. */
static void sc_leave_note(sc_transport_t *tp, int r)
{
    if (r < 0 || r >= tp->world_size || r == tp->world_rank || tp->peer_left[r])
        return;
    tp->peer_left[r] = 1;
    if (tp->peer_error[r][0] == '\0')
        tp->peer_error_at[r] = sc_clock_coarse();
    snprintf(tp->peer_error[r], sizeof(tp->peer_error[r]), "rank %d left: it destroyed its "
             "communicators (sc_comm_destroy) and closed its connections", r);
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
    sc_leave_note(tp, src);
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

void sc_leave_tell(sc_transport_t *tp)
{
    static const uint32_t leaving = 1;

    for (int r = 0; r < tp->world_size; r++) {
        ucp_request_param_t param;
        void *req;

        /* A stopped local peer (SIGSTOP, a debugger) takes nothing: its message would
         * wait in the endpoint, whose close then cannot flush it (UCX asserted on the
         * pending operation at ucp_worker_destroy). */
        if (r == tp->world_rank || !tp->eps[r] || tp->peer_error[r][0] ||
            sc_ucx_peer_stopped(tp, r))
            continue;
        memset(&param, 0, sizeof(param));
        req = ucp_tag_send_nbx(tp->eps[r], &leaving, sizeof(leaving),
                               SC_LEAVE_TAG | (uint64_t)tp->world_rank, &param);
        if (UCS_PTR_IS_PTR(req))
            ucp_request_free(req); /* the endpoint's flushing close delivers it */
    }
}

void sc_leave_stop(sc_transport_t *tp, double deadline)
{
    if (!tp->leave_req)
        return;
    ucp_request_cancel(tp->worker, tp->leave_req);
    while (tp->leave_req && sc_clock_now() < deadline)
        ucp_worker_progress(tp->worker);
}
