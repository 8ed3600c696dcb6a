/* The scan with AVX2: four vectors per block compared at once against lo (signed compares
 * suffice: raw keys have no sign bit), the hit mask handled one element at a time. */
#include <immintrin.h>

#include "compress/topk_scan.h"

#define SC_AVX2 __attribute__((target("avx2,bmi,bmi2")))

SC_AVX2 static size_t topk_scan_avx2_32(const void *x, size_t base, size_t i, size_t end,
                                        uint64_t lo, uint64_t hi, sc_topk_list_t *above,
                                        sc_topk_list_t *cand)
{
    const __m256i mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i below = _mm256_set1_epi32((int32_t)lo - 1);
    const int32_t *p = x;

    for (; i + 32 <= end; i += 32) {
        __m256i a, b, c, d;
        uint64_t hits;

        if (!sc_topk_scan_room(above, cand))
            return i;
        a = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_loadu_si256((const void *)(p + i)),
                                                mask), below);
        b = _mm256_cmpgt_epi32(
            _mm256_and_si256(_mm256_loadu_si256((const void *)(p + i + 8)), mask), below);
        c = _mm256_cmpgt_epi32(
            _mm256_and_si256(_mm256_loadu_si256((const void *)(p + i + 16)), mask), below);
        d = _mm256_cmpgt_epi32(
            _mm256_and_si256(_mm256_loadu_si256((const void *)(p + i + 24)), mask), below);
        if (_mm256_testz_si256(_mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d)),
                               _mm256_set1_epi32(-1)))
            continue;
        hits = (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(a)) |
               (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(b)) << 8 |
               (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(c)) << 16 |
               (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(d)) << 24;
        sc_topk_scan_hits(x, base, i, hits, 4, 0x7fffffffu, hi, above, cand);
    }
    return sc_topk_scan_tail(x, base, i, end, lo, hi, 4, 0x7fffffffu, above, cand);
}

SC_AVX2 static size_t topk_scan_avx2_64(const void *x, size_t base, size_t i, size_t end,
                                        uint64_t lo, uint64_t hi, sc_topk_list_t *above,
                                        sc_topk_list_t *cand)
{
    const __m256i mask = _mm256_set1_epi64x(0x7fffffffffffffffll);
    const __m256i below = _mm256_set1_epi64x((int64_t)lo - 1);
    const int64_t *p = x;

    for (; i + 16 <= end; i += 16) {
        __m256i a, b, c, d;
        uint64_t hits;

        if (!sc_topk_scan_room(above, cand))
            return i;
        a = _mm256_cmpgt_epi64(_mm256_and_si256(_mm256_loadu_si256((const void *)(p + i)),
                                                mask), below);
        b = _mm256_cmpgt_epi64(
            _mm256_and_si256(_mm256_loadu_si256((const void *)(p + i + 4)), mask), below);
        c = _mm256_cmpgt_epi64(
            _mm256_and_si256(_mm256_loadu_si256((const void *)(p + i + 8)), mask), below);
        d = _mm256_cmpgt_epi64(
            _mm256_and_si256(_mm256_loadu_si256((const void *)(p + i + 12)), mask), below);
        if (_mm256_testz_si256(_mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d)),
                               _mm256_set1_epi32(-1)))
            continue;
        hits = (uint64_t)(uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(a)) |
               (uint64_t)(uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(b)) << 4 |
               (uint64_t)(uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(c)) << 8 |
               (uint64_t)(uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(d)) << 12;
        sc_topk_scan_hits(x, base, i, hits, 8, 0x7fffffffffffffffull, hi, above, cand);
    }
    return sc_topk_scan_tail(x, base, i, end, lo, hi, 8, 0x7fffffffffffffffull, above, cand);
}

/* movemask_epi8 gives two bits per 16-bit lane; pext keeps one. */
SC_AVX2 static inline uint64_t topk_avx2_mask16(__m256i m)
{
    return _pext_u32((uint32_t)_mm256_movemask_epi8(m), 0x55555555u);
}

SC_AVX2 static size_t topk_scan_avx2_16(const void *x, size_t base, size_t i, size_t end,
                                        uint64_t lo, uint64_t hi, sc_topk_list_t *above,
                                        sc_topk_list_t *cand)
{
    const __m256i mask = _mm256_set1_epi16(0x7fff);
    const __m256i below = _mm256_set1_epi16((int16_t)((int32_t)lo - 1));
    const int16_t *p = x;

    for (; i + 64 <= end; i += 64) {
        __m256i a, b, c, d;
        uint64_t hits;

        if (!sc_topk_scan_room(above, cand))
            return i;
        a = _mm256_cmpgt_epi16(_mm256_and_si256(_mm256_loadu_si256((const void *)(p + i)),
                                                mask), below);
        b = _mm256_cmpgt_epi16(
            _mm256_and_si256(_mm256_loadu_si256((const void *)(p + i + 16)), mask), below);
        c = _mm256_cmpgt_epi16(
            _mm256_and_si256(_mm256_loadu_si256((const void *)(p + i + 32)), mask), below);
        d = _mm256_cmpgt_epi16(
            _mm256_and_si256(_mm256_loadu_si256((const void *)(p + i + 48)), mask), below);
        if (_mm256_testz_si256(_mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d)),
                               _mm256_set1_epi32(-1)))
            continue;
        hits = topk_avx2_mask16(a) | topk_avx2_mask16(b) << 16 | topk_avx2_mask16(c) << 32 |
               topk_avx2_mask16(d) << 48;
        sc_topk_scan_hits(x, base, i, hits, 2, 0x7fff, hi, above, cand);
    }
    return sc_topk_scan_tail(x, base, i, end, lo, hi, 2, 0x7fff, above, cand);
}

const sc_topk_kernels_t sc_topk_kernels_avx2 = {
    {topk_scan_avx2_16, topk_scan_avx2_32, topk_scan_avx2_64}};
