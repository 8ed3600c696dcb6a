/* Error feedback of the compressor's steps: v = residual + g (DGC: u = m u + g,
 * v = residual + u) filled block by block for the selection, v settled where the step
 * sends (so that the commit only swaps it in as the residual), and the momentum's
 * update at the commit. */
#include <math.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "compress/compress_internal.h"
#include "shardcomm/kernels.h"

#define SC_EF_CHUNK 4096 /* elements of a pass at a time (float16/bfloat16 widened) */

/* One definition per accumulation type; u's update in the commit evaluates the same
 * expression as v's, so both see the same bits of m u + g. */
#define SC_EF_DEFINE(name, T)                                                           \
    static void name##_v(T *v, const T *r, const T *u, T m, const T *g, size_t n)       \
    {                                                                                   \
        if (r && u)                                                                     \
            for (size_t i = 0; i < n; i++)                                              \
                v[i] = r[i] + (m * u[i] + g[i]);                                        \
        else if (u)                                                                     \
            for (size_t i = 0; i < n; i++)                                              \
                v[i] = m * u[i] + g[i];                                                 \
        else                                                                            \
            for (size_t i = 0; i < n; i++)                                              \
                v[i] = r[i] + g[i];                                                     \
    }                                                                                   \
    static void name##_u(T *u, T m, const T *g, size_t n)                               \
    {                                                                                   \
        for (size_t i = 0; i < n; i++)                                                  \
            u[i] = m * u[i] + g[i];                                                     \
    }
SC_EF_DEFINE(sc_ef_f32, float)
SC_EF_DEFINE(sc_ef_f64, double)

/* v[off, off + n) = r + g (or + m u + g) with r as it stands, n <= SC_EF_CHUNK, the
 * gradient widened to float32 first when it is float16/bfloat16. */
static void sc_ef_v(const sc_ckey_t *k, double m, const void *g, size_t off, size_t n)
{
    size_t es = sc_dtype_size(k->acc);
    float wide[SC_EF_CHUNK];
    const void *gc = (const char *)g + off * sc_dtype_size(k->dtype);
    const void *uc = k->momentum ? (const char *)k->momentum + off * es : NULL;
    const void *r = k->residual ? (const char *)k->residual + off * es : NULL;
    void *vc = (char *)k->v + off * es;

    if (k->dtype == SC_FLOAT16 || k->dtype == SC_BFLOAT16) {
        sc_cast(gc, k->dtype, wide, SC_FLOAT32, n, 1.0f, NULL);
        gc = wide;
    }
    if (k->acc == SC_FLOAT64)
        sc_ef_f64_v(vc, r, uc, m, gc, n);
    else
        sc_ef_f32_v(vc, r, uc, (float)m, gc, n);
}

static void sc_ef_fill(void *ctx, size_t begin, size_t end)
{
    const sc_ef_fill_t *f = ctx;
    const sc_ckey_t *k = f->k;

    for (size_t off = begin; off < end; off += SC_EF_CHUNK)
        sc_ef_v(k, f->m, f->g, off, end - off < SC_EF_CHUNK ? end - off : SC_EF_CHUNK);
}

#ifdef __SSE2__
/* sc_ef_fill for a float32 key with error feedback and no momentum (the common step),
 * the same arithmetic: v = r + g streamed past the cache (nothing reads v again before
 * the settling's few stores; plain stores would read every line of v first), and the
 * same values into copy for the scan. */
static void sc_ef_fill_copy_f32(void *ctx, size_t begin, size_t end, void *copy)
{
    const sc_ef_fill_t *f = ctx;
    const float *r = f->k->residual, *g = f->g;
    float *v = f->k->v, *c = copy;
    size_t i = begin;

    for (; i < end && ((uintptr_t)(v + i) & 15); i++)
        c[i - begin] = v[i] = r[i] + g[i];
    for (; i + 4 <= end; i += 4) {
        __m128 x = _mm_add_ps(_mm_loadu_ps(r + i), _mm_loadu_ps(g + i));
        _mm_storeu_ps(c + (i - begin), x);
        _mm_stream_ps(v + i, x);
    }
    for (; i < end; i++)
        c[i - begin] = v[i] = r[i] + g[i];
    _mm_sfence();
}
#endif

sc_topk_filler_t sc_ef_filler(sc_ef_fill_t *fill)
{
    sc_topk_filler_t f = {sc_ef_fill, NULL, fill};
#ifdef __SSE2__
    const sc_ckey_t *k = fill->k;

    if (k->acc == SC_FLOAT32 && k->dtype == SC_FLOAT32 && k->residual && !k->momentum)
        f.fill_copy = sc_ef_fill_copy_f32;
#endif
    return f;
}

/* n elements of acc at p: each Inf or NaN set to 0. */
static void sc_ef_zero_nonfinite(sc_dtype_t acc, void *p, size_t n)
{
    if (acc == SC_FLOAT64) {
        double *d = p;
        for (size_t i = 0; i < n; i++)
            if (!isfinite(d[i]))
                d[i] = 0.0;
    } else {
        float *f = p;
        for (size_t i = 0; i < n; i++)
            if (!isfinite(f[i]))
                f[i] = 0.0f;
    }
}

void sc_ef_drop_nonfinite(sc_ckey_t *k)
{
    if (k->drop_nonfinite)
        sc_ef_zero_nonfinite(k->acc, k->v, k->count);
}

void sc_ef_momentum(sc_ckey_t *k, double m, const void *g, const void *block)
{
    size_t es = sc_dtype_size(k->acc), j = 0;
    char *u = k->momentum;

    for (size_t off = 0; off < k->count; off += SC_EF_CHUNK) {
        size_t n = k->count - off < SC_EF_CHUNK ? k->count - off : SC_EF_CHUNK;
        float wide[SC_EF_CHUNK];
        const void *gc = (const char *)g + off * sc_dtype_size(k->dtype);

        if (k->dtype == SC_FLOAT16 || k->dtype == SC_BFLOAT16) {
            sc_cast(gc, k->dtype, wide, SC_FLOAT32, n, 1.0f, NULL);
            gc = wide;
        }
        if (k->acc == SC_FLOAT64)
            sc_ef_f64_u((double *)(u + off * es), m, gc, n);
        else
            sc_ef_f32_u((float *)(u + off * es), (float)m, gc, n);
        for (; j < k->selected; j++) {
            uint64_t i = sc_pairs_index(block, k->lay.index_bits, j);
            if (i >= off + n)
                break;
            memset(u + i * es, 0, es);
        }
        if (k->drop_nonfinite)
            sc_ef_zero_nonfinite(k->acc, u + off * es, n);
    }
}

/* v at this step's selected pairs (block, indices ascending) settled: less what goes on
 * the wire (a finite value past float16's range went as +-65504, sc_pairs_convert), 0
 * where that is not finite (an Inf or NaN sent). float32 values sent from float32 leave
 * exactly 0. */
void sc_ef_settle_selected(sc_ckey_t *k, const void *block)
{
    const sc_pairs_layout_t *l = &k->lay;
    const char *vals = (const char *)block + l->values_off;

    if (l->vdtype == SC_FLOAT32 && k->acc == SC_FLOAT32) {
        for (size_t j = 0; j < k->selected; j++)
            ((float *)k->v)[sc_pairs_index(block, l->index_bits, j)] = 0.0f;
        return;
    }
    for (size_t j = 0; j < k->selected; j++) {
        uint64_t i = sc_pairs_index(block, l->index_bits, j);
        double sent = sc_pairs_load(vals, l->vdtype, j);

        if (k->acc == SC_FLOAT64) {
            double x = ((double *)k->v)[i] - sent;
            ((double *)k->v)[i] = isfinite(x) ? x : 0.0;
        } else {
            float x = ((float *)k->v)[i] - (float)sent;
            ((float *)k->v)[i] = isfinite(x) ? x : 0.0f;
        }
    }
}
