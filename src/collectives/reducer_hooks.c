/* The built-in comm hooks: plain all-reduce of a bucket, and float16 / bfloat16
 * compression (cast a float32 bucket to the narrow type, all-reduce that, cast back). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/reducer_internal.h"
#include "collectives/transport_ucx.h"
#include "core/memory.h"
#include "shardcomm/kernels.h"

static sc_status_t sc_hook_allreduce_validate(void *state, sc_dtype_t dtype)
{
    (void)state;
    if (!sc_reducer_dtype_ok(dtype))
        return sc_error(SC_ERR_INVALID_ARG, "comm hook allreduce: bucket dtype %s is not "
                        "one the reducer takes", sc_dtype_name(dtype));
    return SC_SUCCESS;
}

static sc_status_t sc_hook_allreduce_start(void *state, const sc_hook_bucket_t *bucket,
                                           sc_comm_t *comm, sc_request_t **req)
{
    (void)state;
    return sc_allreduce(bucket->data, bucket->data, bucket->count, bucket->dtype, SC_SUM,
                        comm, bucket->stream, req);
}

/* The narrow copy of each bucket, indexed by bucket index, reused across iterations;
 * in the buckets' memory (device: the GPU of the first bucket seen). The lock guards
 * the arrays: start (which may grow them) and finish run on different threads. */
typedef struct {
    sc_dtype_t narrow;
    const char *name;
    pthread_mutex_t lock;
    void **scratch;
    size_t *bytes;
    int n;
    int device;     /* -1: host scratch */
    struct sc_transport *keep; /* set: destroy hands the scratch to it (late writes) */
} sc_hook_cast_t;

static sc_status_t sc_hook_cast_validate(void *state, sc_dtype_t dtype)
{
    sc_hook_cast_t *s = state;

    if (dtype != SC_FLOAT32)
        return sc_error(SC_ERR_INVALID_ARG, "comm hook %s: bucket dtype is %s, but the %s "
                        "hook compresses float32 buckets only", s->name, sc_dtype_name(dtype),
                        s->name);
    return SC_SUCCESS;
}

static sc_status_t sc_hook_cast_scratch(sc_hook_cast_t *s, const sc_hook_bucket_t *bucket,
                                        size_t bytes, void **out)
{
    int index = bucket->index;
    sc_status_t st;

    if (index >= s->n) {
        int n = index + 1;
        void **sp = realloc(s->scratch, (size_t)n * sizeof(*sp));
        size_t *bp;
        if (!sp)
            goto err;
        s->scratch = sp;
        bp = realloc(s->bytes, (size_t)n * sizeof(*bp));
        if (!bp)
            goto err;
        s->bytes = bp;
        for (int i = s->n; i < n; i++)
            s->scratch[i] = NULL, s->bytes[i] = 0;
        s->n = n;
    }
    if (s->bytes[index] < bytes) {
        sc_mem_kind_t kind;
        void *p = NULL;
        /* Every bucket of a reducer lives in the same memory: the device of this one. */
        sc_mem_query(bucket->data, &kind, &s->device);
        if (!sc_mem_is_device(kind))
            s->device = -1;
        st = sc_mem_alloc_on(s->device, bytes, &p, "comm hook scratch");
        if (st != SC_SUCCESS)
            return st;
        sc_mem_free_on(s->device, s->scratch[index]);
        s->scratch[index] = p;
        s->bytes[index] = bytes;
    }
    *out = s->scratch[index];
    return SC_SUCCESS;
err:
    return sc_error(SC_ERR_NO_MEMORY, "comm hook %s: out of memory for a %zu-byte bucket",
                    s->name, bytes);
}

/* The narrow copy made from the n parts of the bucket (each cast from its source,
 * scaled), then all-reduced. */
static sc_status_t sc_hook_cast_start_parts(sc_hook_cast_t *s, const sc_hook_bucket_t *bucket,
                                            sc_comm_t *comm, const sc_hook_source_t *src,
                                            int n, sc_request_t **req)
{
    size_t nb = sc_dtype_size(s->narrow);
    char *narrow = NULL;
    sc_status_t st;

    pthread_mutex_lock(&s->lock);
    st = sc_hook_cast_scratch(s, bucket, bucket->count * nb, (void **)&narrow);
    pthread_mutex_unlock(&s->lock);
    for (int j = 0; j < n && st == SC_SUCCESS; j++)
        st = sc_cast(src[j].src, SC_FLOAT32, narrow + src[j].off / sizeof(float) * nb,
                     s->narrow, src[j].bytes / sizeof(float), src[j].scale, bucket->stream);
    if (st != SC_SUCCESS)
        return st;
    return sc_allreduce(narrow, narrow, bucket->count, s->narrow, SC_SUM, comm,
                        bucket->stream, req);
}

static sc_status_t sc_hook_cast_start(void *state, const sc_hook_bucket_t *bucket,
                                      sc_comm_t *comm, sc_request_t **req)
{
    sc_hook_source_t all = {0, bucket->count * sizeof(float), bucket->data, 1.0f};

    return sc_hook_cast_start_parts(state, bucket, comm, &all, 1, req);
}

sc_status_t sc_hook_cast_start_from(const sc_comm_hook_t *hook, const sc_hook_bucket_t *bucket,
                                    sc_comm_t *comm, const sc_hook_source_t *src, int n,
                                    sc_request_t **req)
{
    return sc_hook_cast_start_parts(hook->state, bucket, comm, src, n, req);
}

/* The reduced narrow copy cast into the ranges' memory: the gradients themselves
 * (finish_into: no float32 pass through the bucket, no copy back), or the bucket. */
static sc_status_t sc_hook_cast_finish_into(void *state, const sc_hook_bucket_t *bucket,
                                            sc_comm_t *comm, const sc_range_t *ranges, int n)
{
    sc_hook_cast_t *s = state;
    size_t nb = sc_dtype_size(s->narrow);
    const char *narrow;
    sc_status_t st = SC_SUCCESS;

    (void)comm;
    pthread_mutex_lock(&s->lock);
    narrow = s->scratch[bucket->index];
    pthread_mutex_unlock(&s->lock);
    for (int j = 0; j < n && st == SC_SUCCESS; j++)
        st = sc_cast(narrow + ranges[j].off / sizeof(float) * nb, s->narrow, ranges[j].dst,
                     SC_FLOAT32, ranges[j].bytes / sizeof(float), 1.0f, bucket->stream);
    return st;
}

static sc_status_t sc_hook_cast_finish(void *state, const sc_hook_bucket_t *bucket,
                                       sc_comm_t *comm)
{
    sc_range_t all = {0, bucket->count * sizeof(float), bucket->data};

    return sc_hook_cast_finish_into(state, bucket, comm, &all, 1);
}

static void sc_hook_cast_destroy(void *state)
{
    sc_hook_cast_t *s = state;

    for (int i = 0; i < s->n; i++) {
        if (s->keep)
            sc_ucx_keep_block(s->keep, s->device, s->scratch[i]);
        else
            sc_mem_free_on(s->device, s->scratch[i]);
    }
    free(s->scratch);
    free(s->bytes);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

void sc_reducer_hook_cast_keep(const sc_comm_hook_t *hook, struct sc_transport *tp)
{
    if (sc_reducer_hook_is_cast(hook))
        ((sc_hook_cast_t *)hook->state)->keep = tp;
}

int sc_reducer_hook_is_builtin(const sc_comm_hook_t *hook)
{
    return hook->start == sc_hook_allreduce_start || hook->start == sc_hook_cast_start;
}

int sc_reducer_hook_is_cast(const sc_comm_hook_t *hook)
{
    return hook->start == sc_hook_cast_start;
}

int sc_reducer_hook_is_plain(const sc_comm_hook_t *hook)
{
    return hook->start == sc_hook_allreduce_start && !hook->finish;
}

SC_API sc_status_t sc_comm_hook_builtin(sc_hook_kind_t kind, sc_comm_hook_t *hook)
{
    sc_hook_cast_t *s;

    if (!hook)
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_hook_builtin: hook is NULL");
    if (kind == SC_HOOK_ALLREDUCE) {
        memset(hook, 0, sizeof(*hook));
        hook->name = "allreduce";
        hook->validate = sc_hook_allreduce_validate;
        hook->start = sc_hook_allreduce_start;
        return SC_SUCCESS;
    }
    if (kind != SC_HOOK_FP16 && kind != SC_HOOK_BF16)
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_hook_builtin: kind %d is not one of "
                        "SC_HOOK_ALLREDUCE (0), SC_HOOK_FP16 (1), SC_HOOK_BF16 (2)", (int)kind);
    s = calloc(1, sizeof(*s));
    if (!s)
        return sc_error(SC_ERR_NO_MEMORY, "sc_comm_hook_builtin: out of memory");
    pthread_mutex_init(&s->lock, NULL);
    s->narrow = kind == SC_HOOK_FP16 ? SC_FLOAT16 : SC_BFLOAT16;
    s->name = kind == SC_HOOK_FP16 ? "fp16" : "bf16";
    memset(hook, 0, sizeof(*hook));
    hook->name = s->name;
    hook->state = s;
    hook->validate = sc_hook_cast_validate;
    hook->start = sc_hook_cast_start;
    hook->finish = sc_hook_cast_finish;
    hook->finish_into = sc_hook_cast_finish_into;
    hook->destroy = sc_hook_cast_destroy;
    return SC_SUCCESS;
}

/* reducer_internal.h says what it gives. */
sc_status_t sc_reducer_hook_why(sc_status_t st, char *why, size_t len)
{
    const char *text = sc_error_text_unprefixed();
    int n = snprintf(why, len, "%s", text[0] ? text : "the hook gave no reason");

    /* The error statuses run from SC_ERR_INVALID_ARG down to SC_ERR_DEVICE. */
    if (st <= SC_ERR_INVALID_ARG && st >= SC_ERR_DEVICE)
        return st;
    if (n >= 0 && (size_t)n < len)
        snprintf(why + n, len - (size_t)n, "; it returned %d (%s), which is not an error "
                 "status: a hook reports a failure with a negative sc_status_t", (int)st,
                 sc_status_string(st));
    return SC_ERR_INVALID_ARG;
}
