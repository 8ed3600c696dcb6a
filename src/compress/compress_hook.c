/* The top-k comm hook for the gradient reducer: each bucket is one key of a compressor
 * (its index); start prepares the step and starts the all-gather of the pairs (or,
 * during warm-up, the dense all-reduce), finish commits the step and scatter-adds every
 * rank's pairs into the bucket. */
#include <string.h>

#include "compress/compress_internal.h"

#define SC_HOOK_TOPK "comm hook topk"

static sc_status_t sc_hook_topk_validate(void *state, sc_dtype_t dtype)
{
    (void)state;
    if (!sc_pairs_dtype_ok(dtype))
        return sc_error(SC_ERR_INVALID_ARG, SC_HOOK_TOPK ": bucket dtype is %s, but the topk "
                        "hook compresses float32, float64, float16 and bfloat16 buckets only",
                        sc_dtype_name(dtype));
    return SC_SUCCESS;
}

static sc_status_t sc_hook_topk_key(sc_compressor_t *c, const sc_hook_bucket_t *b,
                                    sc_ckey_t **k)
{
    /* Layouts count from 1: a 0 here would read as "loaded, adopt it". */
    return sc_compressor_key(c, SC_HOOK_TOPK, b->index, b->count, b->dtype,
                             b->layout ? b->layout : 1, k);
}

static sc_status_t sc_hook_topk_start(void *state, const sc_hook_bucket_t *b,
                                      sc_comm_t *comm, sc_request_t **req)
{
    sc_compressor_t *c = state;
    int rank = sc_comm_rank(comm);
    sc_ckey_t *k;
    sc_status_t st;

    if (b->stream)
        return sc_error(SC_ERR_UNSUPPORTED, SC_HOOK_TOPK ": bucket %d is device memory (the "
                        "reducer has config.stream); the topk hook compresses host buckets "
                        "only in this version", b->index);
    st = sc_hook_topk_key(c, b, &k);
    if (st == SC_SUCCESS)
        st = sc_compressor_prepare(c, SC_HOOK_TOPK, k, b->data, rank, sc_comm_size(comm));
    if (st != SC_SUCCESS)
        return st;
    if (k->dense)
        return sc_allreduce(b->data, b->data, b->count, b->dtype, SC_SUM, comm, b->stream,
                            req);
    return sc_allgather((char *)k->blocks + (size_t)rank * k->lay.bytes, k->blocks,
                        k->lay.bytes, SC_UINT8, comm, NULL, req);
}

static sc_status_t sc_hook_topk_finish(void *state, const sc_hook_bucket_t *b,
                                       sc_comm_t *comm)
{
    sc_compressor_t *c = state;
    sc_ckey_t *k;
    sc_status_t st;

    st = sc_hook_topk_key(c, b, &k);
    if (st != SC_SUCCESS)
        return st;
    sc_compressor_commit(c, k, b->data, sc_comm_rank(comm));
    if (!k->dense)
        sc_compressor_scatter(c, k, sc_comm_size(comm), b->data, 1);
    return SC_SUCCESS;
}

static sc_status_t sc_hook_topk_save(void *state, void *buf, size_t *len)
{
    return sc_compressor_save(state, buf, len);
}

static sc_status_t sc_hook_topk_load(void *state, const void *buf, size_t len)
{
    return sc_compressor_load(state, buf, len);
}

static void sc_hook_topk_destroy(void *state)
{
    sc_compressor_destroy(state);
}

SC_API sc_status_t sc_comm_hook_topk(const sc_compress_config_t *config,
                                     sc_comm_hook_t *hook)
{
    sc_compressor_t *c;
    sc_status_t st;

    if (!hook)
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_hook_topk: hook is NULL");
    st = sc_compressor_new("sc_comm_hook_topk", config, &c);
    if (st != SC_SUCCESS)
        return st;
    memset(hook, 0, sizeof(*hook));
    hook->name = "topk";
    hook->state = c;
    hook->validate = sc_hook_topk_validate;
    hook->start = sc_hook_topk_start;
    hook->finish = sc_hook_topk_finish;
    hook->save = sc_hook_topk_save;
    hook->load = sc_hook_topk_load;
    hook->destroy = sc_hook_topk_destroy;
    return SC_SUCCESS;
}
