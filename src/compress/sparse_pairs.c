/* Blocks of (index, value) pairs: their layout in the all-gather, the check of their
 * indices, value conversions, and the scatter-add of every rank's block into a dense
 * result in rank order (float32 accumulation for float16/bfloat16, one rounding). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/reduce_kernels.h"
#include "compress/compress_internal.h"
#include "core/fpenv.h"
#include "shardcomm/kernels.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define SC_SCATTER_CHUNK 16384 /* result elements summed at a time, in cache */

static size_t sc_round8(size_t x)
{
    return (x + 7) / 8 * 8;
}

int sc_pairs_dtype_ok(sc_dtype_t dtype)
{
    return dtype == SC_FLOAT32 || dtype == SC_FLOAT64 || dtype == SC_FLOAT16 ||
           dtype == SC_BFLOAT16;
}

uint64_t sc_pairs_pad(int index_bits)
{
    return index_bits == 32 ? UINT32_MAX : UINT64_MAX;
}

sc_status_t sc_pairs_layout(const char *caller, size_t k, int index_bits, sc_dtype_t vdtype,
                            int p, sc_pairs_layout_t *l)
{
    size_t ib = (size_t)index_bits / 8, vb = sc_dtype_size(vdtype);

    if (k > (SIZE_MAX / 4) / (ib + vb + 16) / (size_t)p)
        return sc_error(SC_ERR_INVALID_ARG, "%s: %zu pairs from each of %d ranks overflow "
                        "the buffer size", caller, k, p);
    l->k = k;
    l->index_bits = index_bits;
    l->vdtype = vdtype;
    l->values_off = sc_round8(k * ib);
    l->bytes = l->values_off + sc_round8(k * vb);
    return SC_SUCCESS;
}

size_t sc_pairs_find_bad(const void *indices, int index_bits, size_t k, size_t n)
{
    if (index_bits == 32) {
        const uint32_t *ix = indices;
        for (size_t j = 0; j < k; j++)
            if (ix[j] >= n && ix[j] != UINT32_MAX)
                return j;
    } else {
        const uint64_t *ix = indices;
        for (size_t j = 0; j < k; j++)
            if (ix[j] >= n && ix[j] != UINT64_MAX)
                return j;
    }
    return k;
}

/* x, when finite, limited to [-max, max]. */
static double sc_pairs_saturate(double x, double max)
{
    return isfinite(x) && fabs(x) > max ? copysign(max, x) : x;
}

/* float64 goes to float16 through float32 (one more rounding, which error feedback
 * carries like any other: the residual keeps what was not sent). A finite value past
 * float16's or bfloat16's range goes as the largest finite value of its sign, not as
 * Inf: the rest is rounding like any other, kept in the residual, and an Inf in the
 * result stays the sign of an Inf or NaN in some rank's gradient. */
void sc_pairs_convert(const void *src, sc_dtype_t sdtype, void *dst, sc_dtype_t ddtype,
                      size_t k)
{
    if (sdtype == ddtype) {
        memcpy(dst, src, k * sc_dtype_size(sdtype));
        return;
    }
    for (size_t j = 0; j < k; j++) {
        double x = sc_pairs_load(src, sdtype, j);
        switch (ddtype) {
        case SC_FLOAT64: ((double *)dst)[j] = x; break;
        case SC_FLOAT16:
            ((uint16_t *)dst)[j] = sc_float_to_half((float)sc_pairs_saturate(x, 65504.0));
            break;
        case SC_BFLOAT16:
            ((uint16_t *)dst)[j] =
                sc_float_to_bfloat16((float)sc_pairs_saturate(x, 0x1.fep127));
            break;
        default: ((float *)dst)[j] = (float)x; break;
        }
    }
}

/* Adds a block's pairs from *pos on into the accumulator d (float32, or float64 when
 * wide), which holds the elements from base on: in a sorted block up to the first index
 * >= hi (then *pos is there), else every pair below hi, pads and the rest skipped. */
static void sc_pairs_add(const sc_pairs_layout_t *l, const char *block, void *d, int wide,
                         uint64_t base, size_t *pos, uint64_t hi, int sorted)
{
    const char *vals = block + l->values_off;
    size_t j = *pos;

    for (; j < l->k; j++) {
        uint64_t i = sc_pairs_index(block, l->index_bits, j);
        if (i >= hi) {
            if (sorted)
                break;
            continue;
        }
        i -= base;
        if (wide)
            ((double *)d)[i] += sc_pairs_load(vals, l->vdtype, j);
        else if (l->vdtype == SC_FLOAT32)
            ((float *)d)[i] += ((const float *)vals)[j];
        else
            ((float *)d)[i] += (float)sc_pairs_load(vals, l->vdtype, j);
    }
    *pos = j;
}

int sc_pairs_sorted(const sc_pairs_layout_t *l, const void *block)
{
    for (size_t j = 1; j < l->k; j++)
        if (sc_pairs_index(block, l->index_bits, j) <
            sc_pairs_index(block, l->index_bits, j - 1))
            return 0;
    return 1;
}

void sc_pairs_refuse(const sc_pairs_layout_t *l, void *block)
{
    size_t ib = (size_t)l->index_bits / 8;

    memset(block, 0xff, l->k * ib);
    memset((char *)block + l->k * ib, 0, l->bytes - l->k * ib);
    memset((char *)block + l->values_off, 0xff, sc_dtype_size(l->vdtype));
}

int sc_pairs_refused(const sc_pairs_layout_t *l, const void *block)
{
    const unsigned char *v = (const unsigned char *)block + l->values_off;

    if (l->k == 0 || sc_pairs_index(block, l->index_bits, 0) != sc_pairs_pad(l->index_bits))
        return 0;
    for (size_t j = 0; j < sc_dtype_size(l->vdtype); j++)
        if (v[j] != 0xff)
            return 0;
    return 1;
}

/* Copies bytes from src to dst with stores that bypass the cache where the ISA has them
 * (dst is not read again here, and the result is far larger than the cache); the caller
 * fences. */
static void sc_pairs_stream(void *dst, const void *src, size_t bytes)
{
    char *d = dst;
    const char *s = src;
#ifdef __SSE2__
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;

    if (head > bytes)
        head = bytes;
    memcpy(d, s, head);
    d += head, s += head, bytes -= head;
    for (; bytes >= 16; d += 16, s += 16, bytes -= 16)
        _mm_stream_si128((__m128i *)(void *)d,
                         _mm_loadu_si128((const __m128i *)(const void *)s));
#endif
    memcpy(d, s, bytes);
}

/* Where the result goes: byte ranges of it, each to its dst (one range over all of
 * dense when the whole result is wanted); next is the first range not yet behind the
 * chunks written (they ascend). */
typedef struct {
    const sc_range_t *ranges;
    int n, next;
} sc_pairs_out_t;

/* Elements [lo, hi) of the result, held in a of type adt, written out in dtype:
 * streamed, or rounded to float16 or bfloat16; nothing to do where a is already the
 * destination. */
static void sc_pairs_put(sc_pairs_out_t *o, const void *a, sc_dtype_t adt, sc_dtype_t dtype,
                         size_t lo, size_t hi)
{
    size_t es = sc_dtype_size(dtype), as = sc_dtype_size(adt);

    while (o->next < o->n && (o->ranges[o->next].off + o->ranges[o->next].bytes) / es <= lo)
        o->next++;
    for (int i = o->next; i < o->n && o->ranges[i].off / es < hi; i++) {
        size_t first = o->ranges[i].off / es, end = first + o->ranges[i].bytes / es;
        size_t x = first > lo ? first : lo, y = end < hi ? end : hi;
        char *d = (char *)o->ranges[i].dst + (x - first) * es;
        const char *s = (const char *)a + (x - lo) * as;

        if (adt != dtype)
            sc_cast(s, adt, d, dtype, y - x, 1.0f, NULL);
        else if (d != s)
            sc_pairs_stream(d, s, (y - x) * es);
    }
}

/* Elements [lo, hi) of the result, summed in a (float64 for float64 results, else
 * float32): divided, then written out (see sc_pairs_put). */
static void sc_pairs_finish(void *a, sc_dtype_t adt, sc_pairs_out_t *o, sc_dtype_t dtype,
                            size_t lo, size_t hi, int divisor)
{
    if (divisor > 1)
        sc_reduce_finish_avg(adt, a, hi - lo, divisor);
    sc_pairs_put(o, a, adt, dtype, lo, hi);
}

void sc_pairs_scatter(const sc_pairs_layout_t *l, const void *blocks, int p, void *dense,
                      sc_dtype_t dtype, size_t n, int divisor, float *acc,
                      const sc_range_t *ranges, int nranges)
{
    int wide = dtype == SC_FLOAT64, sorted = 1;
    sc_dtype_t adt = wide ? SC_FLOAT64 : SC_FLOAT32;
    size_t es = sc_dtype_size(adt), *pos = calloc((size_t)p, sizeof(size_t));
    char *chunk = malloc(SC_SCATTER_CHUNK * sizeof(double));
    sc_range_t whole = {0, n * sc_dtype_size(dtype), dense};
    sc_pairs_out_t out = {nranges > 0 ? ranges : &whole, nranges > 0 ? nranges : 1, 0};
    /* Every rank adds the same pairs: in the library's floating-point environment, so
     * that it gets the same bits whatever its thread set (fpenv.h). */
    sc_fpenv_t fe = sc_fpenv_enter();

    for (int r = 0; r < p && sorted; r++)
        sorted = sc_pairs_sorted(l, (const char *)blocks + (size_t)r * l->bytes);
    if (!sorted || !pos || !chunk) {
        /* Pairs in any order: the whole result zeroed, then every block added. */
        void *d = adt == dtype ? dense : (void *)acc;
        size_t from = 0;
        memset(d, 0, n * es);
        for (int r = 0; r < p; r++, from = 0)
            sc_pairs_add(l, (const char *)blocks + (size_t)r * l->bytes, d, wide, 0, &from, n,
                         0);
        sc_pairs_finish(d, adt, &out, dtype, 0, n, divisor);
        goto done;
    }
    /* Sorted blocks (the compressor's): one chunk of the result at a time, summed in a
     * scratch that stays in cache (every rank's pairs that fall in the chunk, in rank
     * order), then written out once. */
    for (size_t lo = 0; lo < n; lo += SC_SCATTER_CHUNK) {
        size_t hi = n - lo < SC_SCATTER_CHUNK ? n : lo + SC_SCATTER_CHUNK;
        memset(chunk, 0, (hi - lo) * es);
        for (int r = 0; r < p; r++)
            sc_pairs_add(l, (const char *)blocks + (size_t)r * l->bytes, chunk, wide, lo,
                         &pos[r], hi, 1);
        sc_pairs_finish(chunk, adt, &out, dtype, lo, hi, divisor);
    }
done:
#ifdef __SSE2__
    _mm_sfence();
#endif
    sc_fpenv_leave(fe);
    free(chunk);
    free(pos);
}
