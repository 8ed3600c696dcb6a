/* The scan on every CPU: the portable scalar path (64 elements per block, a bit mask of
 * the elements at or above lo, then the shared hit handling), and the choice of path. */
#include "compress/topk_scan.h"

static inline __attribute__((always_inline)) size_t
topk_scan_scalar(const void *x, size_t base, size_t i, size_t end, uint64_t lo, uint64_t hi,
                 sc_topk_list_t *above, sc_topk_list_t *cand, unsigned width,
                 uint64_t abs_mask)
{
    for (; i + 64 <= end; i += 64) {
        uint64_t hits = 0;

        if (!sc_topk_scan_room(above, cand))
            return i;
        for (unsigned j = 0; j < 64; j++)
            hits |= (uint64_t)((sc_topk_bits_at(x, i + j, width) & abs_mask) >= lo) << j;
        sc_topk_scan_hits(x, base, i, hits, width, abs_mask, hi, above, cand);
    }
    return sc_topk_scan_tail(x, base, i, end, lo, hi, width, abs_mask, above, cand);
}

static size_t topk_scan_scalar16(const void *x, size_t base, size_t i, size_t end,
                                 uint64_t lo, uint64_t hi, sc_topk_list_t *above,
                                 sc_topk_list_t *cand)
{
    return topk_scan_scalar(x, base, i, end, lo, hi, above, cand, 2, 0x7fff);
}

static size_t topk_scan_scalar32(const void *x, size_t base, size_t i, size_t end,
                                 uint64_t lo, uint64_t hi, sc_topk_list_t *above,
                                 sc_topk_list_t *cand)
{
    return topk_scan_scalar(x, base, i, end, lo, hi, above, cand, 4, 0x7fffffffu);
}

static size_t topk_scan_scalar64(const void *x, size_t base, size_t i, size_t end,
                                 uint64_t lo, uint64_t hi, sc_topk_list_t *above,
                                 sc_topk_list_t *cand)
{
    return topk_scan_scalar(x, base, i, end, lo, hi, above, cand, 8,
                            0x7fffffffffffffffull);
}

const sc_topk_kernels_t sc_topk_kernels_scalar = {
    {topk_scan_scalar16, topk_scan_scalar32, topk_scan_scalar64}};

const sc_topk_kernels_t *sc_topk_kernels(sc_cpu_isa_t isa)
{
    switch (isa) {
    case SC_CPU_AVX512: return &sc_topk_kernels_avx512;
    case SC_CPU_AVX2: return &sc_topk_kernels_avx2;
    default: return &sc_topk_kernels_scalar;
    }
}
