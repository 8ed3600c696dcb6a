/* sc_compressed_allreduce: one step of a key of the compressor as a blocking
 * collective: the local preparation (error feedback, selection, packing), the agreement
 * of every rank on the step, then the all-gather of the pairs and their scatter-add (or,
 * during warm-up, a dense all-reduce), the residual committed only on success. */
#include <string.h>

#include "collectives/agree.h"
#include "collectives/serves.h"
#include "compress/compress_internal.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "core/fpenv.h"
#include "core/log.h"

#define SC_CAR_FN "sc_compressed_allreduce"

static sc_status_t sc_car_check(const sc_compressor_t *c, const void *sendbuf,
                                const void *recvbuf, size_t count, sc_dtype_t dtype,
                                sc_op_t op)
{
    if (!c)
        return sc_error(SC_ERR_INVALID_ARG, SC_CAR_FN ": compressor is NULL");
    if (count > 0 && (!sendbuf || !recvbuf))
        return sc_error(SC_ERR_INVALID_ARG, SC_CAR_FN ": %s is NULL with count %zu",
                        !sendbuf ? "sendbuf" : "recvbuf", count);
    if (!sc_pairs_dtype_ok(dtype))
        return sc_error(SC_ERR_INVALID_ARG, SC_CAR_FN ": dtype %s is not float32, float64, "
                        "float16 or bfloat16", sc_dtype_name(dtype));
    if (op != SC_SUM && op != SC_AVG)
        return sc_error(SC_ERR_INVALID_ARG, SC_CAR_FN ": op %s is not sum or avg",
                        sc_op_name(op));
    if (count > SIZE_MAX / sizeof(double) / 4)
        return sc_error(SC_ERR_INVALID_ARG, SC_CAR_FN ": count %zu overflows the buffer size",
                        count);
    if (count > 0 && (sc_check_aligned(SC_CAR_FN, "sendbuf", sendbuf, sc_dtype_size(dtype)) ||
                      sc_check_aligned(SC_CAR_FN, "recvbuf", recvbuf, sc_dtype_size(dtype))))
        return SC_ERR_INVALID_ARG;
    return SC_SUCCESS;
}

static sc_status_t sc_compressed_allreduce_call(sc_compressor_t *compressor, sc_comm_t *comm,
                                                int key, const void *sendbuf, void *recvbuf,
                                                size_t count, sc_dtype_t dtype, sc_op_t op);

/* Failures inside say which public call they ended (sc_error_in). */
SC_API sc_status_t sc_compressed_allreduce(sc_compressor_t *compressor, sc_comm_t *comm,
                                           int key, const void *sendbuf, void *recvbuf,
                                           size_t count, sc_dtype_t dtype, sc_op_t op)
{
    sc_serves_t was = sc_serves_begin(SC_SERVES_COMPRESSED);
    /* Error feedback, selection and scatter-add in the library's floating-point
     * environment: the caller's modes (trapped exceptions, flush-to-zero) neither stop
     * it with SIGFPE on NaN or Inf gradients nor change its result. */
    sc_fpenv_t fe = sc_fpenv_enter();
    int claimed;
    /* comm marked as issued on by this thread for the whole step (sc_comm_issue_begin):
     * another thread's call between its collectives would take a number among them. */
    sc_status_t st = sc_comm_issue_begin(comm, SC_CAR_FN, &claimed);

    if (st == SC_SUCCESS) {
        st = sc_compressed_allreduce_call(compressor, comm, key, sendbuf, recvbuf, count,
                                          dtype, op);
        sc_comm_issue_end(comm, claimed);
    }
    sc_fpenv_leave(fe);
    return sc_serves_return(was, st, "sc_compressed_allreduce");
}

/* The index of the key's steps among sc_car_agree's facts: where they alone (or first)
 * differ, a step was committed on some ranks and failed on others. */
#define SC_CAR_FACT_STEPS 3

/* Every rank's outcome so far (st) and what must match, agreed on (sc_comm_agree): k is
 * this rank's prepared key where st is SC_SUCCESS. */
static sc_status_t sc_car_agree(const sc_compressor_t *c, sc_comm_t *comm, sc_status_t st,
                                const sc_ckey_t *k, size_t count, sc_dtype_t dtype,
                                sc_op_t op, sc_agree_diff_t *diff)
{
    /* A rank that failed above still takes part, so that no rank waits. */
    int ok = st == SC_SUCCESS;
    /* The defaults where this rank failed (the compressor may be NULL). */
    sc_compress_config_t cfg = ok ? c->cfg : (sc_compress_config_t)SC_COMPRESS_CONFIG_INIT;
    int64_t momentum_bits;
    memcpy(&momentum_bits, &cfg.momentum, sizeof(momentum_bits));
    const sc_fact_t facts[] = {
        {"count", SC_FACT_NUMBER, (int64_t)count},
        {"dtype", SC_FACT_DTYPE, dtype},
        {"op", SC_FACT_NUMBER, op},
        /* SC_CAR_FACT_STEPS: before the step's kind, which warm-up makes follow them. */
        {"the key's steps done", SC_FACT_NUMBER, ok ? k->steps : 0},
        {"the step's kind (1: dense, in warm-up or at density 1 without values_fp16 or "
         "momentum)", SC_FACT_NUMBER, ok ? k->dense : 0},
        {"k (density * count)", SC_FACT_NUMBER, ok && !k->dense ? (int64_t)k->lay.k : 0},
        {"value dtype (values_fp16)", SC_FACT_DTYPE, ok && !k->dense ? k->lay.vdtype : 0},
        {"index_bits", SC_FACT_NUMBER, ok && !k->dense ? k->lay.index_bits : 0},
        /* How each rank selects and what it keeps: not the wire's shape, but ranks
         * that differ here do not train as one. */
        {"mode", SC_FACT_NUMBER, (int64_t)cfg.mode},
        {"error_feedback", SC_FACT_NUMBER, cfg.error_feedback},
        {"momentum", SC_FACT_DOUBLE, momentum_bits}};

    return sc_comm_agree(comm, SC_CAR_FN, st, SC_ERR_MISMATCH, facts,
                         (int)(sizeof(facts) / sizeof(facts[0])), diff);
}

/* The ranks' steps of key differ (diff): a step that completed on some ranks and failed
 * on others (a peer's failure reached them after their collective was done), so the
 * ranks are a step apart, and with warm-up one takes dense steps where another takes
 * sparse ones, refused at every step. Every rank drops the step it prepared and the
 * key's residual and momentum, takes rank 0's steps, says so, and prepares the step
 * again (*k: the key then, NULL where it could not be made). */
static sc_status_t sc_car_realign(sc_compressor_t *c, sc_comm_t *comm, int key,
                                  const void *sendbuf, size_t count, sc_dtype_t dtype,
                                  const sc_agree_diff_t *diff, sc_ckey_t **k)
{
    sc_status_t st;

    sc_compressor_abandon(c, *k); /* a key the step made is gone */
    *k = NULL;
    st = sc_compressor_key(c, SC_CAR_FN, key, count, dtype, 0, k);
    if (st != SC_SUCCESS)
        return st;
    sc_log(SC_LOG_WARN, SC_CAR_FN ": key %d has %lld steps done on %s but %lld on %s (a "
           "step that failed on some ranks completed on others): every rank drops its "
           "residual and momentum and goes on from step %lld", key, (long long)diff->value0,
           sc_comm_rank_name(comm, 0).s, (long long)diff->value,
           sc_comm_rank_name(comm, diff->rank).s, (long long)diff->value0);
    sc_compressor_realign(*k, (long)diff->value0);
    return sc_compressor_prepare(c, SC_CAR_FN, *k, sendbuf, comm);
}

static sc_status_t sc_compressed_allreduce_call(sc_compressor_t *compressor, sc_comm_t *comm,
                                                int key, const void *sendbuf, void *recvbuf,
                                                size_t count, sc_dtype_t dtype, sc_op_t op)
{
    sc_agree_diff_t diff = {-1, 0, 0, 0};
    sc_ckey_t *k = NULL;
    int rank, p;
    sc_status_t st;

    st = sc_comm_check_usable(comm, SC_CAR_FN);
    if (st != SC_SUCCESS)
        return st; /* no communicator to agree over */
    rank = sc_comm_rank(comm);
    p = sc_comm_size(comm);
    st = sc_car_check(compressor, sendbuf, recvbuf, count, dtype, op);
    if (st == SC_SUCCESS)
        st = sc_compressor_key(compressor, SC_CAR_FN, key, count, dtype, 0, &k);
    if (st == SC_SUCCESS)
        st = sc_compressor_prepare(compressor, SC_CAR_FN, k, sendbuf, comm);
    st = sc_car_agree(compressor, comm, st, k, count, dtype, op, &diff);
    if (st == SC_ERR_MISMATCH && diff.fact == SC_CAR_FACT_STEPS) {
        /* Every rank is here (a mismatch is found only where every rank prepared): each
         * realigns the key and agrees again. */
        st = sc_car_realign(compressor, comm, key, sendbuf, count, dtype, &diff, &k);
        st = sc_car_agree(compressor, comm, st, k, count, dtype, op, NULL);
    }
    if (st != SC_SUCCESS) {
        if (k)
            sc_compressor_abandon(compressor, k);
        return st;
    }
    if (k->dense) {
        /* Into v, so that recvbuf is written only on success. */
        st = sc_allreduce(sendbuf, k->v, count, dtype, op, comm, NULL, NULL);
        if (st != SC_SUCCESS) {
            sc_compressor_abandon(compressor, k); /* as a failed sparse step */
            return st;
        }
        sc_compressor_commit(compressor, k, sendbuf, rank);
        if (count > 0) /* recvbuf and v may be NULL with count 0 */
            memcpy(recvbuf, k->v, count * sc_dtype_size(dtype));
        return SC_SUCCESS;
    }
    st = sc_allgather((char *)k->blocks + (size_t)rank * k->lay.bytes, k->blocks, k->lay.bytes,
                      SC_UINT8, comm, NULL, NULL);
    if (st != SC_SUCCESS) {
        sc_compressor_abandon(compressor, k);
        return st;
    }
    sc_compressor_commit(compressor, k, sendbuf, rank);
    sc_compressor_scatter(compressor, k, p, recvbuf, op == SC_AVG ? p : 1, NULL, 0);
    return SC_SUCCESS;
}
