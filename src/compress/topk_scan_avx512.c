/* The scan with AVX-512 (F, BW, VL): four 512-bit compares per block straight into mask
 * registers, the hit mask handled one element at a time. */
#include <immintrin.h>

#include "compress/topk_scan.h"

#define SC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,bmi,bmi2")))

SC_AVX512 static size_t topk_scan_avx512_32(const void *x, size_t base, size_t i,
                                            size_t end, uint64_t lo, uint64_t hi,
                                            sc_topk_list_t *above, sc_topk_list_t *cand)
{
    const __m512i mask = _mm512_set1_epi32(0x7fffffff);
    const __m512i below = _mm512_set1_epi32((int32_t)lo - 1);
    const int32_t *p = x;

    for (; i + 64 <= end; i += 64) {
        uint64_t hits;

        if (!sc_topk_scan_room(above, cand))
            return i;
        hits = (uint64_t)_mm512_cmpgt_epi32_mask(
                   _mm512_and_si512(_mm512_loadu_si512(p + i), mask), below) |
               (uint64_t)_mm512_cmpgt_epi32_mask(
                   _mm512_and_si512(_mm512_loadu_si512(p + i + 16), mask), below) << 16 |
               (uint64_t)_mm512_cmpgt_epi32_mask(
                   _mm512_and_si512(_mm512_loadu_si512(p + i + 32), mask), below) << 32 |
               (uint64_t)_mm512_cmpgt_epi32_mask(
                   _mm512_and_si512(_mm512_loadu_si512(p + i + 48), mask), below) << 48;
        if (hits)
            sc_topk_scan_hits(x, base, i, hits, 4, 0x7fffffffu, hi, above, cand);
    }
    return sc_topk_scan_tail(x, base, i, end, lo, hi, 4, 0x7fffffffu, above, cand);
}

SC_AVX512 static size_t topk_scan_avx512_64(const void *x, size_t base, size_t i,
                                            size_t end, uint64_t lo, uint64_t hi,
                                            sc_topk_list_t *above, sc_topk_list_t *cand)
{
    const __m512i mask = _mm512_set1_epi64(0x7fffffffffffffffll);
    const __m512i below = _mm512_set1_epi64((int64_t)lo - 1);
    const int64_t *p = x;

    for (; i + 32 <= end; i += 32) {
        uint64_t hits;

        if (!sc_topk_scan_room(above, cand))
            return i;
        hits = (uint64_t)_mm512_cmpgt_epi64_mask(
                   _mm512_and_si512(_mm512_loadu_si512(p + i), mask), below) |
               (uint64_t)_mm512_cmpgt_epi64_mask(
                   _mm512_and_si512(_mm512_loadu_si512(p + i + 8), mask), below) << 8 |
               (uint64_t)_mm512_cmpgt_epi64_mask(
                   _mm512_and_si512(_mm512_loadu_si512(p + i + 16), mask), below) << 16 |
               (uint64_t)_mm512_cmpgt_epi64_mask(
                   _mm512_and_si512(_mm512_loadu_si512(p + i + 24), mask), below) << 24;
        if (hits)
            sc_topk_scan_hits(x, base, i, hits, 8, 0x7fffffffffffffffull, hi, above, cand);
    }
    return sc_topk_scan_tail(x, base, i, end, lo, hi, 8, 0x7fffffffffffffffull, above, cand);
}

SC_AVX512 static size_t topk_scan_avx512_16(const void *x, size_t base, size_t i,
                                            size_t end, uint64_t lo, uint64_t hi,
                                            sc_topk_list_t *above, sc_topk_list_t *cand)
{
    const __m512i mask = _mm512_set1_epi16(0x7fff);
    const __m512i below = _mm512_set1_epi16((int16_t)((int32_t)lo - 1));
    const int16_t *p = x;

    for (; i + 64 <= end; i += 64) {
        uint64_t hits;

        if (!sc_topk_scan_room(above, cand))
            return i;
        hits = (uint64_t)_mm512_cmpgt_epi16_mask(
                   _mm512_and_si512(_mm512_loadu_si512(p + i), mask), below) |
               (uint64_t)_mm512_cmpgt_epi16_mask(
                   _mm512_and_si512(_mm512_loadu_si512(p + i + 32), mask), below) << 32;
        if (hits)
            sc_topk_scan_hits(x, base, i, hits, 2, 0x7fff, hi, above, cand);
    }
    return sc_topk_scan_tail(x, base, i, end, lo, hi, 2, 0x7fff, above, cand);
}

const sc_topk_kernels_t sc_topk_kernels_avx512 = {
    {topk_scan_avx512_16, topk_scan_avx512_32, topk_scan_avx512_64}};
