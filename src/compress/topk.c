/* The top-k selector's public calls: configuration, argument checks in a fixed order
 * (nothing is read from a buffer before every size check has passed and its memory kind
 * is known), and the hand-off to the device path or to the exact, approximate or random
 * selection on the host. */
#include <stdlib.h>
#include <string.h>

#include "compress/topk_internal.h"
#include "core/error.h"
#include "core/memory.h"

/* nan_key: Inf's bits + 1. */
sc_topk_format_t sc_topk_format(sc_dtype_t dtype)
{
    switch (dtype) {
    case SC_FLOAT64:
        return (sc_topk_format_t){8, 63, 0x7fffffffffffffffull, 0x7ff0000000000001ull};
    case SC_FLOAT32:
        return (sc_topk_format_t){4, 31, 0x7fffffffu, 0x7f800001u};
    case SC_FLOAT16:
        return (sc_topk_format_t){2, 15, 0x7fffu, 0x7c01u};
    default:
        return (sc_topk_format_t){2, 15, 0x7fffu, 0x7f81u};
    }
}

sc_status_t sc_topk_create(const sc_topk_config_t *config, sc_topk_t **topk)
{
    sc_topk_config_t cfg = SC_TOPK_CONFIG_INIT;
    sc_topk_t *t;
    sc_status_t st;

    if (!topk)
        return sc_error(SC_ERR_INVALID_ARG, "sc_topk_create: topk is NULL");
    if (config) {
        if (config->size != sizeof(*config))
            return sc_error(SC_ERR_INVALID_ARG,
                            "sc_topk_create: config->size is %zu, expected %zu (initialize "
                            "the config with SC_TOPK_CONFIG_INIT)", config->size,
                            sizeof(*config));
        cfg = *config;
    }
    if (cfg.mode != SC_TOPK_EXACT && cfg.mode != SC_TOPK_APPROX && cfg.mode != SC_TOPK_RANDOM)
        return sc_error(SC_ERR_INVALID_ARG,
                        "sc_topk_create: config->mode is %d, allowed: SC_TOPK_EXACT, "
                        "SC_TOPK_APPROX or SC_TOPK_RANDOM", (int)cfg.mode);
    if (cfg.threads < 0 || cfg.threads > SC_CPU_THREADS_MAX)
        return sc_error(SC_ERR_INVALID_ARG,
                        "sc_topk_create: config->threads is %d, allowed: 0 (automatic) or "
                        "1 to %d", cfg.threads, SC_CPU_THREADS_MAX);
    if (!(cfg.sample_ratio >= 0.0 && cfg.sample_ratio <= 1.0))
        return sc_error(SC_ERR_INVALID_ARG,
                        "sc_topk_create: config->sample_ratio is %g, allowed: 0 (default "
                        "0.01) up to 1", cfg.sample_ratio);
    t = calloc(1, sizeof(*t));
    if (!t)
        return sc_error(SC_ERR_NO_MEMORY, "sc_topk_create: out of memory");
    t->config = cfg;
    t->threads = cfg.threads;
    if (t->threads == 0) {
        st = sc_cpu_threads(&t->threads);
        if (st != SC_SUCCESS)
            goto err_free;
    }
    st = sc_cpu_isa_select(&t->isa);
    if (st != SC_SUCCESS)
        goto err_free;
    t->kernels = sc_topk_kernels(t->isa);
    t->hist = malloc(sizeof(*t->hist) << SC_TOPK_HIST_BITS);
    if (!t->hist) {
        st = sc_error(SC_ERR_NO_MEMORY, "sc_topk_create: out of memory");
        goto err_free;
    }
    st = sc_topk_pool_create(t->threads, &t->pool);
    if (st != SC_SUCCESS)
        goto err_free;
    *topk = t;
    return SC_SUCCESS;

err_free:
    sc_topk_destroy(t);
    return st;
}

void sc_topk_destroy(sc_topk_t *topk)
{
    if (!topk)
        return;
    sc_topk_pool_destroy(topk->pool);
    for (size_t c = 0; c < topk->chunks_cap; c++) {
        sc_topk_chunk_t *ch = &topk->chunks[c];
        free(ch->above.idx);
        free(ch->above.bits);
        free(ch->cand.idx);
        free(ch->cand.bits);
        free(ch->hist);
    }
    free(topk->chunks);
    free(topk->keys);
    free(topk->hist);
    free(topk->marks);
    free(topk);
}

static int topk_dtype_supported(sc_dtype_t dtype)
{
    return dtype == SC_FLOAT32 || dtype == SC_FLOAT64 || dtype == SC_FLOAT16 ||
           dtype == SC_BFLOAT16;
}

/* The checks every selection makes before it reads a buffer, in a fixed order, and the
 * job they admit (filler NULL); k == 0 sets *selected to 0 and returns SC_SUCCESS
 * (nothing to select). */
static sc_status_t topk_check(const char *caller, sc_topk_t *topk, const void *x,
                              sc_dtype_t dtype, size_t n, size_t k, int index_bits,
                              void *indices, void *values, size_t *selected,
                              sc_topk_job_t *job)
{
    if (!topk)
        return sc_error(SC_ERR_INVALID_ARG, "%s: topk is NULL", caller);
    if (!selected)
        return sc_error(SC_ERR_INVALID_ARG, "%s: selected is NULL", caller);
    if (!topk_dtype_supported(dtype))
        return sc_error(SC_ERR_INVALID_ARG,
                        "%s: dtype %s (%d) is not one of float32, float64, float16, "
                        "bfloat16", caller, sc_dtype_name(dtype), (int)dtype);
    if (index_bits != 32 && index_bits != 64)
        return sc_error(SC_ERR_INVALID_ARG, "%s: index_bits is %d, allowed: 32 or 64",
                        caller, index_bits);
    if (n > (size_t)INT64_MAX / sc_topk_format(dtype).width)
        return sc_error(SC_ERR_INVALID_ARG, "%s: count n = %zu of %s overflows the buffer "
                        "size", caller, n, sc_dtype_name(dtype));
    if (k > n)
        return sc_error(SC_ERR_INVALID_ARG, "%s: k = %zu is larger than n = %zu", caller, k,
                        n);
    if (index_bits == 32 && (uint64_t)n > ((uint64_t)1 << 32))
        return sc_error(SC_ERR_INVALID_ARG,
                        "%s: n = %zu elements need 64-bit indices (index_bits 32 allows "
                        "n <= 2^32)", caller, n);
    *job = (sc_topk_job_t){x, dtype, sc_topk_format(dtype), n, k, index_bits, indices, values,
                           NULL};
    if (k == 0) {
        *selected = 0;
        return SC_SUCCESS;
    }
    if (!x || !indices || !values)
        return sc_error(SC_ERR_INVALID_ARG, "%s: %s is NULL", caller,
                        !x ? "x" : !indices ? "indices" : "values");
    /* As the kernels: buffers aligned to their elements, refused otherwise. */
    if (sc_check_aligned(caller, "x", x, job->fmt.width) != SC_SUCCESS ||
        sc_check_aligned(caller, "indices", indices, (size_t)(index_bits / 8)) != SC_SUCCESS ||
        sc_check_aligned(caller, "values", values, job->fmt.width) != SC_SUCCESS)
        return SC_ERR_INVALID_ARG;
    return SC_SUCCESS;
}

/* The host selection of a checked job in the selector's mode. */
static sc_status_t topk_select_host(sc_topk_t *topk, const sc_topk_job_t *job,
                                    size_t *selected)
{
    sc_status_t st;

    switch (topk->config.mode) {
    case SC_TOPK_APPROX:
        return sc_topk_approx_host(topk, job, selected);
    case SC_TOPK_RANDOM:
        st = sc_topk_random_host(topk, job);
        break;
    default:
        st = sc_topk_exact_host(topk, job);
    }
    if (st == SC_SUCCESS)
        *selected = job->k;
    return st;
}

void sc_topk_draws_get(const sc_topk_t *topk, sc_topk_draws_t *draws)
{
    draws->approx_samples = topk->approx_samples;
    draws->random_calls = topk->random_calls;
}

void sc_topk_draws_set(sc_topk_t *topk, const sc_topk_draws_t *draws)
{
    topk->approx_samples = draws->approx_samples;
    topk->random_calls = draws->random_calls;
}

sc_status_t sc_topk_select(sc_topk_t *topk, const void *x, sc_dtype_t dtype, size_t n,
                           size_t k, int index_bits, void *indices, void *values,
                           size_t *selected, sc_stream_t stream)
{
    const void *bufs[3] = {x, indices, values};
    static const char *const names[3] = {"x", "indices", "values"};
    sc_topk_job_t job = {0};
    sc_mem_kind_t kind;
    int device;
    sc_status_t st;

    st = topk_check("sc_topk_select", topk, x, dtype, n, k, index_bits, indices, values,
                    selected, &job);
    if (st != SC_SUCCESS || k == 0)
        return st;
    /* Where the buffers live decides the path; a device x is never read here. */
    st = sc_mem_classify("sc_topk_select", bufs, names, 3, &kind, &device);
    if (st != SC_SUCCESS)
        return st;
    if (sc_mem_is_device(kind))
        return sc_topk_select_device(topk, &job, device, stream, selected);
    if (stream)
        return sc_error(SC_ERR_INVALID_ARG,
                        "sc_topk_select: a stream was given, but x is host memory (the host "
                        "selection runs on the calling thread and its workers and takes "
                        "stream NULL)");
    return topk_select_host(topk, &job, selected);
}

sc_status_t sc_topk_select_filled(sc_topk_t *topk, void *x, sc_dtype_t dtype, size_t n,
                                  size_t k, int index_bits, void *indices, void *values,
                                  size_t *selected, const sc_topk_filler_t *filler)
{
    sc_topk_job_t job = {0}, filled;
    sc_status_t st;

    st = topk_check("sc_topk_select", topk, x, dtype, n, k, index_bits, indices, values,
                    selected, &job);
    if (st != SC_SUCCESS)
        return st;
    if (!filler)
        return sc_error(SC_ERR_INVALID_ARG, "sc_topk_select: filler is NULL");
    job.filler = filler;
    if (k == 0)
        return sc_topk_fill_all(topk, &job, &filled);
    return topk_select_host(topk, &job, selected);
}
