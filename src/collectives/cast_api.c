/* The public mixed-precision calls (sc_cast, sc_check_finite, sc_unscale_check):
 * argument checks, then the host twin or the device by where the buffers live. */
#include <stdint.h>

#include "collectives/cast_kernels.h"
#include "core/error.h"
#include "core/memory.h"
#include "shardcomm/kernels.h"

static sc_status_t sc_kernel_check_dtype(const char *fn, const char *name, sc_dtype_t type)
{
    if (type == SC_FLOAT32 || type == SC_FLOAT16 || type == SC_BFLOAT16)
        return SC_SUCCESS;
    if ((unsigned)type >= SC_DTYPE_COUNT)
        return sc_error(SC_ERR_INVALID_ARG, "%s: %s is an unknown dtype (%d)", fn, name,
                        (int)type);
    return sc_error(SC_ERR_INVALID_ARG,
                    "%s: %s is %s, but the kernels take float32, float16 or bfloat16", fn,
                    name, sc_dtype_name(type));
}

/* count elements of the wider of the two types fit in a byte count. */
static sc_status_t sc_kernel_check_count(const char *fn, size_t count, sc_dtype_t type)
{
    if (count > (size_t)INT64_MAX / sc_dtype_size(type))
        return sc_error(SC_ERR_INVALID_ARG, "%s: count %zu of %s overflows the buffer size",
                        fn, count, sc_dtype_name(type));
    return SC_SUCCESS;
}

/* A buffer of count > 0 elements: not NULL, aligned to its element size. */
static sc_status_t sc_kernel_check_buf(const char *fn, const char *name, const void *p,
                                       size_t elem, size_t count)
{
    if (!p)
        return sc_error(SC_ERR_INVALID_ARG, "%s: %s is NULL with count %zu", fn, name, count);
    return sc_check_aligned(fn, name, p, elem);
}

/* Runs a checked job: on the GPU when its buffers are device or managed memory,
 * else the host twin, here and now. */
static sc_status_t sc_kernel_run(const char *fn, const sc_kernel_job_t *job,
                                 sc_stream_t stream)
{
    int cast = job->kind == SC_KERNEL_CAST;
    const void *bufs[2] = {job->src, job->dst};
    const char *names[2] = {cast ? "src" : "buf", "dst"};
    sc_mem_kind_t kind, flag_kind;
    int device, flag_device;
    sc_status_t st;

    st = sc_mem_classify(fn, bufs, names, cast ? 2 : 1, &kind, &device);
    if (st != SC_SUCCESS)
        return st;
    if (sc_mem_is_device(kind))
        return sc_kernel_run_device(fn, job, device, stream);
    if (stream)
        return sc_error(SC_ERR_INVALID_ARG,
                        "%s: a stream was given, but %s is host memory (kernels on host "
                        "buffers run on the calling thread and take stream NULL)",
                        fn, names[0]);
    if (job->flag) {
        sc_mem_query(job->flag, &flag_kind, &flag_device);
        if (flag_kind == SC_MEM_DEVICE)
            return sc_error(SC_ERR_INVALID_ARG,
                            "%s: flag is device memory (GPU %d), but buf is host memory, "
                            "checked on the calling thread, which cannot write it",
                            fn, flag_device);
    }
    switch (job->kind) {
    case SC_KERNEL_CAST:
        sc_cast_host(job->src, job->src_type, job->dst, job->dst_type, job->count,
                     job->scale);
        break;
    case SC_KERNEL_CHECK_FINITE:
        if (sc_check_finite_host(job->src, job->src_type, job->count))
            *job->flag = 1;
        break;
    default:
        if (sc_unscale_check_host(job->dst, job->src_type, job->count, job->scale))
            *job->flag = 1;
        break;
    }
    return SC_SUCCESS;
}

SC_API sc_status_t sc_cast(const void *src, sc_dtype_t src_type, void *dst,
                           sc_dtype_t dst_type, size_t count, float scale,
                           sc_stream_t stream)
{
    static const char fn[] = "sc_cast";
    sc_kernel_job_t job = {SC_KERNEL_CAST, src, src_type, dst, dst_type, count, scale, NULL};
    size_t ss, ds;
    uintptr_t s = (uintptr_t)src, d = (uintptr_t)dst;
    sc_status_t st;

    if ((st = sc_kernel_check_dtype(fn, "src_type", src_type)) != SC_SUCCESS ||
        (st = sc_kernel_check_dtype(fn, "dst_type", dst_type)) != SC_SUCCESS)
        return st;
    if (count == 0)
        return SC_SUCCESS;
    ss = sc_dtype_size(src_type);
    ds = sc_dtype_size(dst_type);
    if ((st = sc_kernel_check_count(fn, count, ss > ds ? src_type : dst_type)) != SC_SUCCESS ||
        (st = sc_kernel_check_buf(fn, "src", src, ss, count)) != SC_SUCCESS ||
        (st = sc_kernel_check_buf(fn, "dst", dst, ds, count)) != SC_SUCCESS)
        return st;
    if (src == dst && ss != ds)
        return sc_error(SC_ERR_INVALID_ARG,
                        "%s: src == dst, but in place needs equal element sizes (%s is %zu "
                        "bytes, %s %zu)", fn, sc_dtype_name(src_type), ss,
                        sc_dtype_name(dst_type), ds);
    if (src != dst && s < d + count * ds && d < s + count * ss)
        return sc_error(SC_ERR_INVALID_ARG,
                        "%s: src and dst overlap without being the same buffer", fn);
    return sc_kernel_run(fn, &job, stream);
}

/* The checks common to sc_check_finite and sc_unscale_check. */
static sc_status_t sc_kernel_check_flagged(const char *fn, const void *buf, sc_dtype_t dtype,
                                           size_t count, const int32_t *flag)
{
    sc_status_t st;

    if ((st = sc_kernel_check_dtype(fn, "dtype", dtype)) != SC_SUCCESS)
        return st;
    if (count == 0)
        return SC_SUCCESS;
    if ((st = sc_kernel_check_count(fn, count, dtype)) != SC_SUCCESS ||
        (st = sc_kernel_check_buf(fn, "buf", buf, sc_dtype_size(dtype), count)) != SC_SUCCESS ||
        (st = sc_kernel_check_buf(fn, "flag", flag, sizeof(*flag), count)) != SC_SUCCESS)
        return st;
    /* A flag inside buf would be written between the elements read. */
    if ((uintptr_t)flag < (uintptr_t)buf + count * sc_dtype_size(dtype) &&
        (uintptr_t)buf < (uintptr_t)(flag + 1))
        return sc_error(SC_ERR_INVALID_ARG, "%s: flag lies inside buf (%zu elements of %s at "
                        "%p)", fn, count, sc_dtype_name(dtype), buf);
    return SC_SUCCESS;
}

SC_API sc_status_t sc_check_finite(const void *buf, sc_dtype_t dtype, size_t count,
                                   int32_t *flag, sc_stream_t stream)
{
    static const char fn[] = "sc_check_finite";
    sc_kernel_job_t job = {SC_KERNEL_CHECK_FINITE, buf, dtype, NULL, dtype, count, 1.0f, flag};
    sc_status_t st = sc_kernel_check_flagged(fn, buf, dtype, count, flag);

    if (st != SC_SUCCESS || count == 0)
        return st;
    return sc_kernel_run(fn, &job, stream);
}

SC_API sc_status_t sc_unscale_check(void *buf, sc_dtype_t dtype, size_t count,
                                    float inv_scale, int32_t *flag, sc_stream_t stream)
{
    static const char fn[] = "sc_unscale_check";
    sc_kernel_job_t job = {SC_KERNEL_UNSCALE_CHECK, buf, dtype, buf, dtype, count, inv_scale,
                           flag};
    sc_status_t st = sc_kernel_check_flagged(fn, buf, dtype, count, flag);

    if (st != SC_SUCCESS || count == 0)
        return st;
    return sc_kernel_run(fn, &job, stream);
}
