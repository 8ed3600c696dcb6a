/* The scatter-add of gathered pairs written only into ranges of the result, each to its
 * own memory (the top-k hook's finish straight into a reducer's gradients), against the
 * same scatter into the whole dense result: for float32, float64, float16 and bfloat16
 * results, 1 to 3 blocks, sizes across the scatter's chunks, sorted blocks (the chunked
 * path) and unsorted ones (the whole-result path), every range must hold exactly the
 * dense result's bytes there and nothing around a range may be written. Single process:
 * test_pairs_ranges (unit). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"

static int g_rank = 0;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"

#define GUARD 32
#define GUARD_BYTE 0x5A
#define MAX_RANGES 40

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* p blocks of k pairs each over n elements: ascending indices (unless unsorted: the
 * last block's first two swapped), a pad at the end of each block, values of vdtype. */
static void make_blocks(const sc_pairs_layout_t *l, int p, size_t n, int unsorted,
                        uint64_t seed, void *blocks)
{
    for (int r = 0; r < p; r++) {
        char *b = (char *)blocks + (size_t)r * l->bytes;
        size_t at = 0, gap = n / l->k;

        memset(b, 0, l->bytes);
        for (size_t j = 0; j < l->k; j++) {
            uint64_t i = at + next_rand(&seed) % (gap ? gap : 1);
            if (i > n - 1)
                i = n - 1;
            if (j + 1 == l->k)
                i = sc_pairs_pad(l->index_bits);
            double v = (double)(int)(next_rand(&seed) % 64) - 31.5;
            if (i != sc_pairs_pad(l->index_bits))
                at = (size_t)i + 1 < n ? (size_t)i + 1 : n - 1;
            if (l->index_bits == 32)
                ((uint32_t *)(void *)b)[j] = (uint32_t)i;
            else
                ((uint64_t *)(void *)b)[j] = i;
            sc_pairs_convert(&v, SC_FLOAT64, b + l->values_off + j * sc_dtype_size(l->vdtype),
                             l->vdtype, 1);
        }
        if (unsorted && r == p - 1 && l->k > 2 && l->index_bits == 32) {
            uint32_t *ix = (uint32_t *)(void *)b, t = ix[0];
            ix[0] = ix[1] > 0 ? ix[1] : 1;
            ix[1] = t;
        }
    }
}

static int check_case(sc_dtype_t dtype, int p, size_t n, int unsorted, uint64_t seed)
{
    size_t es = sc_dtype_size(dtype), k = n / 50 + 2, at = 0;
    sc_dtype_t vdtype = dtype == SC_FLOAT64 ? SC_FLOAT64 : dtype;
    sc_pairs_layout_t l;
    sc_range_t ranges[MAX_RANGES];
    unsigned char *mem[MAX_RANGES];
    void *blocks, *dense, *scratch;
    float *acc = malloc(n * sizeof(float)), *acc2 = malloc(n * sizeof(float));
    int nr = 0;

    CHECK_OK(sc_pairs_layout("test", k, 32, vdtype, p, &l));
    blocks = malloc(l.bytes * (size_t)p);
    dense = malloc(n * es);
    scratch = malloc(n * es);
    CHECK(blocks && dense && scratch && acc && acc2, "out of memory");
    make_blocks(&l, p, n, unsorted, seed, blocks);
    sc_pairs_scatter(&l, blocks, p, dense, dtype, n, p, acc, NULL, 0);
    /* Ranges of 1 to n/8 elements with gaps of 0 to 5, the first at 0. */
    while (at < n && nr < MAX_RANGES) {
        size_t len = 1 + (size_t)(next_rand(&seed) % (n / 8 + 1));
        if (len > n - at)
            len = n - at;
        ranges[nr].off = at * es;
        ranges[nr].bytes = len * es;
        mem[nr] = malloc(len * es + 2 * GUARD);
        CHECK(mem[nr], "out of memory");
        memset(mem[nr], GUARD_BYTE, len * es + 2 * GUARD);
        ranges[nr].dst = mem[nr] + GUARD;
        nr++;
        at += len + (size_t)(next_rand(&seed) % 6);
    }
    sc_pairs_scatter(&l, blocks, p, scratch, dtype, n, p, acc2, ranges, nr);
    for (int j = 0; j < nr; j++) {
        for (size_t b = 0; b < GUARD; b++)
            CHECK(mem[j][b] == GUARD_BYTE && mem[j][GUARD + ranges[j].bytes + b] == GUARD_BYTE,
                  "%s, %d blocks, n %zu%s: range %d [%zu, +%zu) was written outside its "
                  "memory", sc_dtype_name(dtype), p, n, unsorted ? ", unsorted" : "", j,
                  ranges[j].off, ranges[j].bytes);
        CHECK(memcmp(ranges[j].dst, (char *)dense + ranges[j].off, ranges[j].bytes) == 0,
              "%s, %d blocks, n %zu%s: range %d [%zu, +%zu) differs from the dense result",
              sc_dtype_name(dtype), p, n, unsorted ? ", unsorted" : "", j, ranges[j].off,
              ranges[j].bytes);
        free(mem[j]);
    }
    free(blocks);
    free(dense);
    free(scratch);
    free(acc);
    free(acc2);
    return 0;
}

int main(void)
{
    static const sc_dtype_t dtypes[] = {SC_FLOAT32, SC_FLOAT64, SC_FLOAT16, SC_BFLOAT16};
    static const size_t sizes[] = {3, 1000, 16384, 16385, 100003};

    for (size_t d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++)
        for (int p = 1; p <= 3; p++)
            for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
                for (int unsorted = 0; unsorted <= 1; unsorted++)
                    if (check_case(dtypes[d], p, sizes[s], unsorted,
                                   0x9e3779b97f4a7c15ull ^ (d * 131 + (size_t)p * 17 + s)))
                        return 1;
    printf("PASS: scatter into ranges\n");
    return 0;
}
