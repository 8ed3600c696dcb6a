/* The compression tests' top-k reference (compress_test.h's ct_topk) against a sort of
 * every index, on magnitudes that rise then fall, in a bounded time. Unit test, one
 * process. */
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

int main(void)
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
    qsort(all, k, sizeof(*all), ct_cmp_index);
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
