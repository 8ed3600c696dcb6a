/* Host twins of the mixed-precision kernels: the element spec of cast_spec.h over
 * whole buffers, with an AVX2 + F16C path chosen at run time and the scalar spec for
 * tails and other CPUs. */
#include "collectives/bound_scan.h"
#include "collectives/cast_kernels.h"
#include "collectives/cast_spec.h"
#include "core/clones.h"
#include "core/fpenv.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SC_HAVE_X86_PATHS 1
#define SC_X86 __attribute__((target("avx2,f16c")))
#endif

/* The check scans this many elements between looks at what it found, so that a buffer
 * with an early Inf is not read to its end. */
#define SC_CHECK_CHUNK 65536

/* ---- scalar: the spec, element by element ----------------------------------------- */

/* Element i of a float32, float16 or bfloat16 buffer, as float32 bits. */
static inline uint32_t sc_elem_load(sc_dtype_t type, const void *p, size_t i)
{
    switch (type) {
    case SC_FLOAT16:
        return sc_spec_f16_to_f32(((const uint16_t *)p)[i]);
    case SC_BFLOAT16:
        return sc_spec_bf16_to_f32(((const uint16_t *)p)[i]);
    default:
        return ((const uint32_t *)p)[i];
    }
}

/* Stores float32 bits x as element i of a buffer of type; 1 when what it stored is
 * Inf or NaN. */
static inline int sc_elem_store(sc_dtype_t type, void *p, size_t i, uint32_t x)
{
    uint16_t h;

    switch (type) {
    case SC_FLOAT16:
        h = sc_spec_f32_to_f16(x);
        ((uint16_t *)p)[i] = h;
        return sc_spec_f16_nonfinite(h);
    case SC_BFLOAT16:
        h = sc_spec_f32_to_bf16(x);
        ((uint16_t *)p)[i] = h;
        return sc_spec_bf16_nonfinite(h);
    default:
        ((uint32_t *)p)[i] = x;
        return sc_spec_f32_nonfinite(x);
    }
}

/* dst[i] = cast(bound(src[i] * scale)) for i in [first, count) (sc_spec_bound; bound
 * Inf for none); 1 when a result is Inf or NaN. An input Inf or NaN always gives one,
 * so the results alone tell. */
static int sc_map_scalar(const void *src, sc_dtype_t src_type, void *dst,
                         sc_dtype_t dst_type, size_t first, size_t count, float scale,
                         float bound)
{
    int found = 0;

    for (size_t i = first; i < count; i++)
        found |= sc_elem_store(dst_type, dst, i,
                               sc_spec_bound(sc_spec_scale(sc_elem_load(src_type, src, i),
                                                           scale), bound));
    return found;
}

/* ---- x86: eight elements at a time in float32 lanes --------------------------------- */

#ifdef SC_HAVE_X86_PATHS
static int sc_cpu_has_avx2_f16c(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

/* Elements i..i+7 as float32 lanes, exact. NaNs are made quiet by sc_x86_scale. */
SC_X86 static inline __m256 sc_x86_load(sc_dtype_t type, const void *p, size_t i)
{
    const __m128i *h = (const __m128i *)((const uint16_t *)p + i);

    switch (type) {
    case SC_FLOAT16:
        return _mm256_cvtph_ps(_mm_loadu_si128(h));
    case SC_BFLOAT16:
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(h)), 16));
    default:
        return _mm256_loadu_ps((const float *)p + i);
    }
}

/* sc_spec_scale on eight lanes. */
SC_X86 static inline __m256 sc_x86_scale(__m256 v, __m256 scale)
{
    __m256 r = _mm256_mul_ps(v, scale);
    __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32((int)SC_SPEC_F32_QNAN));
    __m256 quiet = _mm256_or_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32((int)SC_SPEC_F32_QUIET)));

    r = _mm256_blendv_ps(r, qnan, _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
    return _mm256_blendv_ps(r, quiet, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

/* sc_spec_bound on eight lanes. */
SC_X86 static inline __m256 sc_x86_bound(__m256 r, __m256 bound)
{
    __m256 sign = _mm256_set1_ps(-0.0f), mag = _mm256_andnot_ps(sign, r);
    __m256 over = _mm256_and_ps(_mm256_cmp_ps(mag, bound, _CMP_GT_OQ),
                                _mm256_cmp_ps(mag, _mm256_set1_ps(__builtin_inff()), _CMP_LT_OQ));

    return _mm256_blendv_ps(r, _mm256_or_ps(_mm256_and_ps(sign, r), bound), over);
}

/* Non-zero when a 16-bit lane of h has all of the exponent bits e set. */
SC_X86 static inline int sc_x86_nonfinite16(__m128i h, short e)
{
    __m128i m = _mm_set1_epi16(e);
    return _mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, m), m));
}

/* Stores eight float32 lanes as elements i..i+7 of a buffer of type, rounded as the
 * spec says (vcvtps2ph rounds and treats NaNs exactly so); non-zero when a stored
 * element is Inf or NaN. */
SC_X86 static inline int sc_x86_store(sc_dtype_t type, void *p, size_t i, __m256 r)
{
    __m128i *h = (__m128i *)((uint16_t *)p + i);
    __m256i x = _mm256_castps_si256(r), b, m;
    __m128i packed;

    switch (type) {
    case SC_FLOAT16:
        packed = _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(h, packed);
        return sc_x86_nonfinite16(packed, 0x7c00);
    case SC_BFLOAT16:
        /* sc_spec_f32_to_bf16: the rounding add, or for a NaN the quiet bit */
        b = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)),
                             _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1)));
        b = _mm256_blendv_epi8(b, _mm256_or_si256(x, _mm256_set1_epi32((int)SC_SPEC_F32_QUIET)),
                               _mm256_castps_si256(_mm256_cmp_ps(r, r, _CMP_UNORD_Q)));
        b = _mm256_srli_epi32(b, 16);
        packed = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
        _mm_storeu_si128(h, packed);
        return sc_x86_nonfinite16(packed, 0x7f80);
    default:
        _mm256_storeu_ps((float *)p + i, r);
        m = _mm256_set1_epi32(0x7f800000);
        return _mm256_movemask_epi8(_mm256_cmpeq_epi32(_mm256_and_si256(x, m), m));
    }
}

/* The vector part of sc_map: whole groups of eight; *done is where it stopped. Inlined
 * into one function per pair of types (and bounded or not), so that the switches and
 * the bound fold away. */
SC_X86 static inline __attribute__((always_inline)) int
sc_x86_map(const void *src, sc_dtype_t src_type, void *dst, sc_dtype_t dst_type,
           size_t count, float scale, int bounded, float bound, size_t *done)
{
    __m256 s = _mm256_set1_ps(scale), b = _mm256_set1_ps(bound);
    int found = 0;
    size_t i = 0;

    for (; i + 8 <= count; i += 8) {
        __m256 r = sc_x86_scale(sc_x86_load(src_type, src, i), s);
        if (bounded)
            r = sc_x86_bound(r, b);
        found |= sc_x86_store(dst_type, dst, i, r);
    }
    *done = i;
    return found != 0;
}

typedef int (*sc_x86_map_fn)(const void *src, void *dst, size_t count, float scale,
                             size_t *done);

#define SC_X86_MAP(NAME, SRC, DST)                                                       \
    SC_X86 static int NAME(const void *src, void *dst, size_t count, float scale,        \
                           size_t *done)                                                 \
    {                                                                                    \
        return sc_x86_map(src, SRC, dst, DST, count, scale, 0, 0.0f, done);              \
    }

/* The same type in and out, each result bounded (avg's pre-scale). */
#define SC_X86_MAP_BOUNDED(NAME, TYPE)                                                   \
    SC_X86 static int NAME(const void *src, void *dst, size_t count, float scale,        \
                           float bound, size_t *done)                                    \
    {                                                                                    \
        return sc_x86_map(src, TYPE, dst, TYPE, count, scale, 1, bound, done);           \
    }

SC_X86_MAP(sc_x86_f32_f32, SC_FLOAT32, SC_FLOAT32)
SC_X86_MAP(sc_x86_f32_f16, SC_FLOAT32, SC_FLOAT16)
SC_X86_MAP(sc_x86_f32_bf16, SC_FLOAT32, SC_BFLOAT16)
SC_X86_MAP(sc_x86_f16_f32, SC_FLOAT16, SC_FLOAT32)
SC_X86_MAP(sc_x86_f16_f16, SC_FLOAT16, SC_FLOAT16)
SC_X86_MAP(sc_x86_f16_bf16, SC_FLOAT16, SC_BFLOAT16)
SC_X86_MAP(sc_x86_bf16_f32, SC_BFLOAT16, SC_FLOAT32)
SC_X86_MAP(sc_x86_bf16_f16, SC_BFLOAT16, SC_FLOAT16)
SC_X86_MAP(sc_x86_bf16_bf16, SC_BFLOAT16, SC_BFLOAT16)
SC_X86_MAP_BOUNDED(sc_x86_f16_bounded, SC_FLOAT16)
SC_X86_MAP_BOUNDED(sc_x86_bf16_bounded, SC_BFLOAT16)

/* Indexed by sc_fmt_index of the source, then of the destination. */
static const sc_x86_map_fn sc_x86_maps[3][3] = {
    {sc_x86_f32_f32, sc_x86_f32_f16, sc_x86_f32_bf16},
    {sc_x86_f16_f32, sc_x86_f16_f16, sc_x86_f16_bf16},
    {sc_x86_bf16_f32, sc_x86_bf16_f16, sc_x86_bf16_bf16},
};

/* 0 float32, 1 float16, 2 bfloat16. */
static int sc_fmt_index(sc_dtype_t type)
{
    return type == SC_FLOAT16 ? 1 : type == SC_BFLOAT16 ? 2 : 0;
}
#endif

/* dst[i] = cast(src[i] * scale) for i < count; 1 when a result is Inf or NaN. */
static int sc_map(const void *src, sc_dtype_t src_type, void *dst, sc_dtype_t dst_type,
                  size_t count, float scale)
{
    size_t done = 0;
    int found = 0;

#ifdef SC_HAVE_X86_PATHS
    if (sc_cpu_has_avx2_f16c())
        found = sc_x86_maps[sc_fmt_index(src_type)][sc_fmt_index(dst_type)](src, dst, count,
                                                                            scale, &done);
#endif
    return found | sc_map_scalar(src, src_type, dst, dst_type, done, count, scale,
                                 __builtin_inff());
}

/* The maps run in the library's floating-point environment (fpenv.h): a cast of the
 * same reduced values gives the same bits on every rank. */
void sc_cast_host(const void *src, sc_dtype_t src_type, void *dst, sc_dtype_t dst_type,
                  size_t count, float scale)
{
    sc_fpenv_t fe = sc_fpenv_enter();

    (void)sc_map(src, src_type, dst, dst_type, count, scale);
    sc_fpenv_leave(fe);
}

uint16_t sc_scale_bound_code(sc_dtype_t dtype, float scale, float bound)
{
    uint16_t lo = 0, hi = dtype == SC_FLOAT16 ? 0x7c00u : 0x7f80u;

    if (!(scale > 0.0f) || bound != bound)
        return 0;
    /* Products at or below bound (exact in double: 11 or 8 bits times 24) round to at
     * most bound in any mode. Codes up to the largest finite one are in value order. */
    while (lo < hi) {
        uint16_t mid = (uint16_t)(lo + (hi - lo) / 2);
        uint32_t v = dtype == SC_FLOAT16 ? sc_spec_f16_to_f32(mid) : sc_spec_bf16_to_f32(mid);

        if ((double)sc_spec_f32(v) * (double)scale > (double)bound)
            hi = mid;
        else
            lo = (uint16_t)(mid + 1);
    }
    return lo;
}

#ifdef SC_HAVE_X86_PATHS
/* Elements per check of the bounded map: a multiple of 64, read twice from L1. */
#define SC_BOUND_BLOCK 512

/* The bounded map of float16 or bfloat16 a block at a time: a block whose inputs'
 * magnitudes all lie below the threshold code (sc_scale_bound_code), nearly every one,
 * runs the unbounded map (PLAIN, sc_cast_host's), which gives the same bits there, the
 * rest the bounded one; so the bound costs a scan of the block from L1. Each block is
 * read before it is written (src == dst allowed). Returns the elements done. */
#define SC_X86_SCALE_BOUNDED(NAME, PLAIN, BOUNDED)                                       \
    SC_X86 static size_t NAME(const uint16_t *src, uint16_t *dst, size_t count,          \
                              float scale, float bound, uint16_t code)                   \
    {                                                                                    \
        size_t i = 0, done;                                                              \
                                                                                         \
        if (code != 0)                                                                   \
            for (; i + SC_BOUND_BLOCK <= count; i += SC_BOUND_BLOCK) {                   \
                if (sc_below(src + i, NULL, SC_BOUND_BLOCK, code))                         \
                    (void)PLAIN(src + i, dst + i, SC_BOUND_BLOCK, scale, &done);         \
                else                                                                     \
                    (void)BOUNDED(src + i, dst + i, SC_BOUND_BLOCK, scale, bound, &done); \
            }                                                                            \
        (void)BOUNDED(src + i, dst + i, count - i, scale, bound, &done);                 \
        return i + done;                                                                 \
    }

SC_X86_SCALE_BOUNDED(sc_x86_f16_scale_bounded, sc_x86_f16_f16, sc_x86_f16_bounded)
SC_X86_SCALE_BOUNDED(sc_x86_bf16_scale_bounded, sc_x86_bf16_bf16, sc_x86_bf16_bounded)
#endif

void sc_scale_bounded_host(const void *src, void *dst, sc_dtype_t dtype, size_t count,
                           float scale, float bound)
{
    sc_fpenv_t fe = sc_fpenv_enter();
    size_t done = 0;

#ifdef SC_HAVE_X86_PATHS
    if (sc_cpu_has_avx2_f16c())
        done = (dtype == SC_FLOAT16 ? sc_x86_f16_scale_bounded
                                    : sc_x86_bf16_scale_bounded)(src, dst, count, scale, bound,
                                                                 sc_scale_bound_code(dtype, scale,
                                                                                     bound));
#endif
    (void)sc_map_scalar(src, dtype, dst, dtype, done, count, scale, bound);
    sc_fpenv_leave(fe);
}

int sc_unscale_check_host(void *buf, sc_dtype_t dtype, size_t count, float inv_scale)
{
    sc_fpenv_t fe = sc_fpenv_enter();
    int found = sc_map(buf, dtype, buf, dtype, count, inv_scale);

    sc_fpenv_leave(fe);
    return found;
}

/* ---- the check: exponent bits all ones, on the bit patterns ---------------------------
 * (x & e) + lowest bit of e carries into the sign bit exactly when the exponent bits e
 * are all ones, so an OR of those sums tells: a reduction every ISA vectorizes. */

SC_CLONES static int sc_check_bits32(const uint32_t *x, size_t count)
{
    uint32_t acc = 0;

    for (size_t i = 0; i < count; i++)
        acc |= (x[i] & 0x7f800000u) + 0x00800000u;
    return (int)(acc >> 31);
}

SC_CLONES static int sc_check_bits16(const uint16_t *x, size_t count, uint16_t e)
{
    uint16_t acc = 0, low = (uint16_t)(e & -e);

    for (size_t i = 0; i < count; i++)
        acc |= (uint16_t)((x[i] & e) + low);
    return acc >> 15;
}

int sc_check_finite_host(const void *buf, sc_dtype_t dtype, size_t count)
{
    for (size_t i = 0; i < count; i += SC_CHECK_CHUNK) {
        size_t n = count - i < SC_CHECK_CHUNK ? count - i : SC_CHECK_CHUNK;
        int found;

        switch (dtype) {
        case SC_FLOAT16:
            found = sc_check_bits16((const uint16_t *)buf + i, n, 0x7c00);
            break;
        case SC_BFLOAT16:
            found = sc_check_bits16((const uint16_t *)buf + i, n, 0x7f80);
            break;
        default:
            found = sc_check_bits32((const uint32_t *)buf + i, n);
            break;
        }
        if (found)
            return 1;
    }
    return 0;
}
