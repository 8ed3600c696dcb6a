/* Error feedback of the compressor's steps: v = residual + g (DGC: u = m u + g,
 * v = residual + u) filled block by block for the selection, with the residual settled
 * where the last step sent (the residual itself is written only by the commit's swap),
 * the momentum's update at the commit, and the settling for a checkpoint. */
#include <math.h>
#include <string.h>

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

static uint64_t sc_sent_index(const sc_ckey_t *k, size_t j)
{
    const char *block = k->sent_pairs;

    return k->sent.index_bits == 32 ? ((const uint32_t *)block)[j]
                                    : ((const uint64_t *)block)[j];
}

/* The first sent pair whose index is at least i (sent indices ascend). */
static size_t sc_sent_lower(const sc_ckey_t *k, uint64_t i)
{
    size_t lo = 0, hi = k->sent_n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sc_sent_index(k, mid) < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The residual at sent pair j (index i) settled: less what was sent, 0 where that is not
 * finite (an Inf or NaN sent, or a value that overflowed float16 on the wire). */
static double sc_ef_settled(const sc_ckey_t *k, size_t j, uint64_t i)
{
    const char *vals = (const char *)k->sent_pairs + k->sent.values_off;
    double sent = sc_pairs_load(vals, k->sent.vdtype, j);

    if (k->acc == SC_FLOAT64) {
        double x = ((const double *)k->residual)[i] - sent;
        return isfinite(x) ? x : 0.0;
    }
    float x = ((const float *)k->residual)[i] - (float)sent;
    return isfinite(x) ? x : 0.0f;
}

void sc_ckey_settle(sc_ckey_t *k)
{
    uint64_t i;

    for (size_t j = 0; k->unsettled && j < k->sent_n; j++) {
        i = sc_sent_index(k, j);
        if (k->acc == SC_FLOAT64)
            ((double *)k->residual)[i] = sc_ef_settled(k, j, i);
        else
            ((float *)k->residual)[i] = (float)sc_ef_settled(k, j, i);
    }
    k->unsettled = 0;
}

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

/* v at the sent pairs [j, ...) below end, the residual settled there: element by
 * element the arithmetic of sc_ef_v (float32 or float64 by the key's accumulation
 * type), without a call of it per element. */
static void sc_ef_fill_settled(const sc_ckey_t *k, double m, const void *g, size_t j,
                               size_t end)
{
    uint64_t i;

    if (k->acc == SC_FLOAT64) {
        const double *u = k->momentum, *gd = g;
        double *v = k->v;
        for (; j < k->sent_n && (i = sc_sent_index(k, j)) < end; j++) {
            double x = sc_ef_settled(k, j, i);
            v[i] = u ? x + (m * u[i] + gd[i]) : x + gd[i];
        }
        return;
    }
    const float *u = k->momentum;
    float *v = k->v, mf = (float)m;
    for (; j < k->sent_n && (i = sc_sent_index(k, j)) < end; j++) {
        float x = (float)sc_ef_settled(k, j, i), gi = (float)sc_pairs_load(g, k->dtype, i);
        v[i] = u ? x + (mf * u[i] + gi) : x + gi;
    }
}

void sc_ef_fill(void *ctx, size_t begin, size_t end)
{
    const sc_ef_fill_t *f = ctx;
    const sc_ckey_t *k = f->k;

    for (size_t off = begin; off < end; off += SC_EF_CHUNK)
        sc_ef_v(k, f->m, f->g, off, end - off < SC_EF_CHUNK ? end - off : SC_EF_CHUNK);
    if (k->unsettled)
        sc_ef_fill_settled(k, f->m, f->g, sc_sent_lower(k, begin), end);
}

void sc_ef_momentum(sc_ckey_t *k, double m, const void *g)
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
        for (; j < k->sent_n && sc_sent_index(k, j) < off + n; j++)
            memset(u + sc_sent_index(k, j) * es, 0, es);
    }
}
