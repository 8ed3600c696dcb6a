/* The scan that keeps avg's bound out of the hot loops of the bounded float16 and
 * bfloat16 kernels (cast_host.c, reduce_kernels.c): whether a block's inputs all lie
 * below the threshold code (sc_scale_bound_code). x86 with GCC or Clang only; the
 * caller checks AVX2. */
#ifndef SC_COLLECTIVES_BOUND_SCAN_H
#define SC_COLLECTIVES_BOUND_SCAN_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* 1 when every one of the count (a multiple of 64) float16 or bfloat16 values at p, and
 * at q unless it is NULL, has a magnitude code below code (four running maxima, so that
 * the scan is not one chain of dependent steps). */
__attribute__((target("avx2"))) static inline int
sc_below(const uint16_t *p, const uint16_t *q, size_t count, uint16_t code)
{
    __m256i mag = _mm256_set1_epi16(0x7fff), m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0,
            m3 = m0;

    for (int k = 0; k < 2; k++, p = q) {
        if (!p)
            break;
        for (size_t i = 0; i < count; i += 64) {
            const __m256i *v = (const __m256i *)(p + i);
            m0 = _mm256_max_epu16(m0, _mm256_and_si256(_mm256_loadu_si256(v), mag));
            m1 = _mm256_max_epu16(m1, _mm256_and_si256(_mm256_loadu_si256(v + 1), mag));
            m2 = _mm256_max_epu16(m2, _mm256_and_si256(_mm256_loadu_si256(v + 2), mag));
            m3 = _mm256_max_epu16(m3, _mm256_and_si256(_mm256_loadu_si256(v + 3), mag));
        }
    }
    m0 = _mm256_max_epu16(_mm256_max_epu16(m0, m1), _mm256_max_epu16(m2, m3));
    return _mm256_testz_si256(_mm256_subs_epu16(m0, _mm256_set1_epi16((short)(code - 1))),
                              _mm256_set1_epi16(-1));
}
#endif

#endif
