/* sc-bench's view of a collective: names, bus-bandwidth factor, buffer layout for a
 * size in bytes, and issuing the call through the public API. */
#include <string.h>

#include "bench_coll.h"

static const char *const sc_bench_coll_names[SC_BENCH_COLL_COUNT] = {
    [SC_BENCH_ALLREDUCE] = "allreduce", [SC_BENCH_REDUCE_SCATTER] = "reduce_scatter",
    [SC_BENCH_ALLGATHER] = "allgather", [SC_BENCH_BROADCAST] = "broadcast",
    [SC_BENCH_REDUCE] = "reduce",       [SC_BENCH_ALLTOALL] = "alltoall",
    [SC_BENCH_SENDRECV] = "sendrecv",
};

const char *sc_bench_coll_name(sc_bench_coll_t coll)
{
    return ((unsigned)coll < SC_BENCH_COLL_COUNT) ? sc_bench_coll_names[coll] : NULL;
}

sc_status_t sc_bench_coll_from_name(const char *name, sc_bench_coll_t *coll)
{
    for (int i = 0; i < SC_BENCH_COLL_COUNT; i++) {
        if (strcmp(name, sc_bench_coll_names[i]) == 0) {
            *coll = (sc_bench_coll_t)i;
            return SC_SUCCESS;
        }
    }
    return SC_ERR_INVALID_ARG;
}

int sc_bench_coll_reduces(sc_bench_coll_t coll)
{
    return coll == SC_BENCH_ALLREDUCE || coll == SC_BENCH_REDUCE_SCATTER ||
           coll == SC_BENCH_REDUCE;
}

int sc_bench_coll_rooted(sc_bench_coll_t coll)
{
    return coll == SC_BENCH_BROADCAST || coll == SC_BENCH_REDUCE;
}

int sc_bench_coll_supports(sc_bench_coll_t coll, int inplace, int device)
{
    return coll != SC_BENCH_SENDRECV || (!inplace && !device);
}

/* The send to rank + 1 and the receive from rank - 1, both in flight, then both
 * waited for; the first error (a failed post still waits for the other). */
static sc_status_t sc_bench_sendrecv(const sc_bench_call_t *c, sc_comm_t *comm)
{
    int right = (c->rank + 1) % c->nranks, left = (c->rank + c->nranks - 1) % c->nranks;
    sc_request_t *recv = NULL, *send = NULL;
    sc_status_t st, st2;

    st = sc_recv(c->recvbuf, c->count, c->dtype, left, comm, NULL, &recv);
    st2 = sc_send(c->sendbuf, c->count, c->dtype, right, comm, NULL, &send);
    if (st == SC_SUCCESS)
        st = st2;
    if (recv) {
        st2 = sc_wait(recv);
        st = st == SC_SUCCESS ? st2 : st;
        sc_request_free(recv);
    }
    if (send) {
        st2 = sc_wait(send);
        st = st == SC_SUCCESS ? st2 : st;
        sc_request_free(send);
    }
    return st;
}

int sc_bench_dtype_is_float(sc_dtype_t dtype)
{
    return dtype == SC_FLOAT32 || dtype == SC_FLOAT64 || dtype == SC_FLOAT16 ||
           dtype == SC_BFLOAT16 || dtype == SC_FLOAT8_E4M3 || dtype == SC_FLOAT8_E5M2;
}

double sc_bench_coll_busbw_factor(sc_bench_coll_t coll, int nranks)
{
    double n = nranks;

    switch (coll) {
    case SC_BENCH_ALLREDUCE: return 2.0 * (n - 1) / n;
    case SC_BENCH_REDUCE_SCATTER:
    case SC_BENCH_ALLGATHER:
    case SC_BENCH_ALLTOALL: return (n - 1) / n;
    default: return 1.0;
    }
}

/* Whether the call's count is a block per rank (its largest buffer holds nranks). */
static int sc_bench_coll_blocked(sc_bench_coll_t coll)
{
    return coll == SC_BENCH_REDUCE_SCATTER || coll == SC_BENCH_ALLGATHER ||
           coll == SC_BENCH_ALLTOALL;
}

/* Element count of the call's count argument and of its largest buffer: size rounded
 * down to whole elements (whole blocks of one per rank), as nccl-tests does; 0 where
 * size holds none. */
static void sc_bench_coll_counts(sc_bench_coll_t coll, size_t size, sc_dtype_t dtype,
                                 int nranks, size_t *count, size_t *total)
{
    size_t elems = size / sc_dtype_size(dtype);

    if (sc_bench_coll_blocked(coll)) {
        *count = elems / (size_t)nranks;
        *total = *count * (size_t)nranks;
    } else {
        *count = elems;
        *total = elems;
    }
}

size_t sc_bench_coll_min_bytes(sc_bench_coll_t coll, sc_dtype_t dtype, int nranks)
{
    return sc_dtype_size(dtype) * (sc_bench_coll_blocked(coll) ? (size_t)nranks : 1);
}

size_t sc_bench_coll_bytes(sc_bench_coll_t coll, size_t size, sc_dtype_t dtype,
                           int nranks)
{
    size_t count, total;

    sc_bench_coll_counts(coll, size, dtype, nranks, &count, &total);
    return total * sc_dtype_size(dtype);
}

void sc_bench_call_init(sc_bench_call_t *call, sc_bench_coll_t coll, size_t size,
                        sc_dtype_t dtype, sc_op_t op, int root, int rank, int nranks,
                        int inplace, void *a, void *b)
{
    size_t elem = sc_dtype_size(dtype);

    memset(call, 0, sizeof(*call));
    call->coll = coll;
    call->dtype = dtype;
    call->op = op;
    call->root = sc_bench_coll_rooted(coll) ? root : -1;
    call->rank = rank;
    call->nranks = nranks;
    call->inplace = inplace;
    sc_bench_coll_counts(coll, size, dtype, nranks, &call->count, &call->total);
    call->bytes = call->total * elem;
    call->sendbuf = a;
    call->recvbuf = inplace ? a : b;
    if (inplace && coll == SC_BENCH_REDUCE_SCATTER)
        call->recvbuf = (char *)a + (size_t)rank * call->count * elem;
    if (inplace && coll == SC_BENCH_ALLGATHER)
        call->sendbuf = (char *)a + (size_t)rank * call->count * elem;
}

sc_status_t sc_bench_call_issue(const sc_bench_call_t *c, sc_comm_t *comm,
                                sc_request_t **req)
{
    switch (c->coll) {
    case SC_BENCH_ALLREDUCE:
        return sc_allreduce(c->sendbuf, c->recvbuf, c->count, c->dtype, c->op, comm,
                            c->stream, req);
    case SC_BENCH_REDUCE_SCATTER:
        return sc_reduce_scatter(c->sendbuf, c->recvbuf, c->count, c->dtype, c->op, comm,
                                 c->stream, req);
    case SC_BENCH_ALLGATHER:
        return sc_allgather(c->sendbuf, c->recvbuf, c->count, c->dtype, comm, c->stream,
                            req);
    case SC_BENCH_BROADCAST:
        return sc_broadcast(c->sendbuf, c->recvbuf, c->count, c->dtype, c->root, comm,
                            c->stream, req);
    case SC_BENCH_REDUCE:
        return sc_reduce(c->sendbuf, c->recvbuf, c->count, c->dtype, c->op, c->root, comm,
                         c->stream, req);
    case SC_BENCH_ALLTOALL:
        return sc_alltoall(c->sendbuf, c->recvbuf, c->count, c->dtype, comm, c->stream,
                           req);
    case SC_BENCH_SENDRECV:
        return req ? SC_ERR_INVALID_ARG : sc_bench_sendrecv(c, comm);
    default:
        return SC_ERR_INVALID_ARG;
    }
}
