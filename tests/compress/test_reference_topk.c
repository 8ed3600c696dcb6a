/* The compression tests' top-k reference (compress_test.h's ct_topk) against a sort of
 * every index: on magnitudes that rise then fall, in a bounded time; with "ties", for
 * every k of small arrays of few distinct magnitudes, NaNs, Infs and zeros of both signs.
 * Unit test, one process. */
#include <time.h>

#include "compress_test.h"

static const double *ref_v;

/* Larger magnitude first (NaN above Inf above finite, as ct_topk), ties by lower index. */
static int ref_cmp(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    double x = ref_v[i], y = ref_v[j];
    int cx = isnan(x) ? 2 : isinf(x) ? 1 : 0, cy = isnan(y) ? 2 : isinf(y) ? 1 : 0;

    if (cx != cy)
        return cy - cx;
    if (cx == 0 && fabs(x) != fabs(y))
        return fabs(x) > fabs(y) ? -1 : 1;
    return i < j ? -1 : i > j;
}

static int ref_cmp_index(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    return i < j ? -1 : i > j;
}

/* Every k of 20,000 arrays of 1-19 values drawn from 0, -0, +-1, +-2, +-Inf and NaNs of
 * either sign and two payloads: the equal magnitudes taken by the lower index, NaN above
 * Inf, -0 equal to +0. */
static int ties_match_a_sort(void)
{
    double v[19];
    size_t got[19], all[19], checked = 0;
    uint64_t h = 1;

    for (int a = 0; a < 20000; a++) {
        size_t n = 1 + (size_t)(rt_mix((uint64_t)a) % 19);
        for (size_t i = 0; i < n; i++) {
            static const double pick[] = {0.0, -0.0, 1.0, -1.0, 2.0, -2.0, INFINITY, -INFINITY};
            uint64_t nan_bits = 0x7ff8000000000001ull;
            h = rt_mix(h);
            v[i] = pick[h % 8];
            if (h % 11 < 2) {
                nan_bits |= (h % 11 == 1 ? 0x8000000000000000ull : 0) | (h & 0xff00);
                memcpy(&v[i], &nan_bits, 8);
            }
        }
        ref_v = v;
        for (size_t k = 0; k <= n; k++) {
            for (size_t i = 0; i < n; i++)
                all[i] = i;
            qsort(all, n, sizeof(*all), ref_cmp);
            qsort(all, k, sizeof(*all), ref_cmp_index);
            ct_topk(v, n, k, got);
            checked++;
            for (size_t i = 0; i < k; i++)
                if (got[i] != all[i]) {
                    printf("FAIL: array %d (n %zu), top %zu: index %zu is %zu, not %zu\n", a,
                           n, k, i, got[i], all[i]);
                    return 1;
                }
        }
    }
    printf("PASS: the same indices as the sort for %zu (array, k)\n", checked);
    return 0;
}

/* The top third of 200,000 magnitudes rising then falling, within 1 s of CPU. */
static int rise_then_fall_matches_a_sort(void)
{
    const size_t n = 200000, k = n / 3;
    double *v = malloc(n * sizeof(*v));
    size_t *got = malloc(k * sizeof(*got)), *all = malloc(n * sizeof(*all));
    clock_t t0;
    double cpu;
    int failures = 0;

    if (!v || !got || !all)
        return 1;
    /* Rise then fall: a quickselect pivoting on the first, middle and last of its range
     * split off a few values per partition here, 5 s of CPU where a sort takes 0.05. */
    for (size_t i = 0; i < n; i++)
        v[i] = i < n / 2 ? (double)i : (double)(n - i);
    t0 = clock();
    ct_topk(v, n, k, got);
    cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    for (size_t i = 0; i < n; i++)
        all[i] = i;
    ref_v = v;
    qsort(all, n, sizeof(*all), ref_cmp);
    qsort(all, k, sizeof(*all), ref_cmp_index);
    for (size_t i = 0; i < k && !failures; i++)
        if (got[i] != all[i]) {
            printf("FAIL: index %zu of the top %zu is %zu, not %zu\n", i, k, got[i], all[i]);
            failures++;
        }
    if (cpu > 1.0) {
        printf("FAIL: the top %zu of %zu values rising then falling took %.2f s of CPU "
               "(bound 1 s)\n", k, n, cpu);
        failures++;
    }
    printf("%s: top %zu of %zu in %.3f s of CPU\n", failures ? "FAIL" : "PASS", k, n, cpu);
    free(v);
    free(got);
    free(all);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "ties") == 0)
        return ties_match_a_sort();
    return rise_then_fall_matches_a_sort();
}
