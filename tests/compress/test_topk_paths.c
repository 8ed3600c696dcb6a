/* Unit tests of the top-k selector's set-up and of its two exact algorithms: the CPU path
 * and thread count taken from SC_CPU_ISA and SC_THREADS (checked at create), the radix
 * select (the always-exact fallback) giving what the sample-bracket path gives on data
 * where the bracket holds, and output pointers checked before anything is read.
 * test_topk_paths NAME; exit 77 means skipped. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"
#include "compress/topk_internal.h"
#include "topk_data.h"

#define SKIPPED 77

/* SC_CPU_ISA: a name that is no path and a path this CPU lacks are refused at create,
 * naming the variable; scalar always works; unset picks the widest path. */
static int test_isa_override_is_checked(void)
{
    sc_cpu_isa_t best = sc_cpu_isa_detect();
    sc_topk_t *topk;

    setenv("SC_CPU_ISA", "sse9", 1);
    CHECK_REFUSED(sc_topk_create(NULL, &topk), SC_ERR_INVALID_ARG,
                  "SC_CPU_ISA=sse9 is not one of scalar|avx2|avx512");
    setenv("SC_CPU_ISA", "AVX512", 1);
    if (best < SC_CPU_AVX512) {
        CHECK_REFUSED(sc_topk_create(NULL, &topk), SC_ERR_UNSUPPORTED,
                      "SC_CPU_ISA=AVX512 asks for a vector path this CPU lacks");
    } else {
        CHECK_OK(sc_topk_create(NULL, &topk));
        CHECK(topk->isa == SC_CPU_AVX512, "isa %d", (int)topk->isa);
        sc_topk_destroy(topk);
    }
    setenv("SC_CPU_ISA", "scalar", 1);
    CHECK_OK(sc_topk_create(NULL, &topk));
    CHECK(topk->isa == SC_CPU_SCALAR && topk->kernels == &sc_topk_kernels_scalar,
          "isa %d", (int)topk->isa);
    sc_topk_destroy(topk);
    unsetenv("SC_CPU_ISA");
    CHECK_OK(sc_topk_create(NULL, &topk));
    CHECK(topk->isa == best, "isa %s, the CPU's widest %s", sc_cpu_isa_name(topk->isa),
          sc_cpu_isa_name(best));
    sc_topk_destroy(topk);
    return 0;
}

/* config.threads wins over SC_THREADS, which wins over the CPUs this process may use;
 * a bad SC_THREADS is refused at create. */
static int test_threads_follow_SC_THREADS(void)
{
    sc_topk_config_t cfg = SC_TOPK_CONFIG_INIT;
    cpu_set_t set;
    sc_topk_t *topk;
    int cpus = 1;

    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        cpus = CPU_COUNT(&set);
    unsetenv("SC_THREADS");
    CHECK_OK(sc_topk_create(NULL, &topk));
    CHECK(topk->threads == cpus, "threads %d, CPUs %d", topk->threads, cpus);
    sc_topk_destroy(topk);
    setenv("SC_THREADS", "3", 1);
    CHECK_OK(sc_topk_create(NULL, &topk));
    CHECK(topk->threads == 3, "threads %d with SC_THREADS=3", topk->threads);
    sc_topk_destroy(topk);
    cfg.threads = 5;
    CHECK_OK(sc_topk_create(&cfg, &topk));
    CHECK(topk->threads == 5, "threads %d with config.threads 5", topk->threads);
    sc_topk_destroy(topk);
    setenv("SC_THREADS", "0", 1);
    CHECK_REFUSED(sc_topk_create(NULL, &topk), SC_ERR_INVALID_ARG, "SC_THREADS=0");
    setenv("SC_THREADS", "two", 1);
    CHECK_REFUSED(sc_topk_create(NULL, &topk), SC_ERR_INVALID_ARG, "SC_THREADS=two");
    unsetenv("SC_THREADS");
    return 0;
}

/* On gradient-like data the public call takes the sample-bracket path (on mostly zeros,
 * a bracket of the nonzeros, or the radix select when they are fewer than k); the radix
 * select run directly on the same input (1 and 3 threads, every dtype, both index
 * widths) writes the same indices and values. */
static int test_radix_select_agrees_with_bracket(void)
{
    static const sc_dtype_t dtypes[] = {SC_FLOAT32, SC_FLOAT64, SC_FLOAT16, SC_BFLOAT16};
    static const int threads[] = {1, 3};
    static const data_kind_t kinds[] = {DATA_GAUSS, DATA_SPARSE};
    const size_t n = 1000003, ks[] = {1, 500, 10000, 100001};

    for (size_t d = 0; d < 2 * NELEM(dtypes); d++) {
        sc_dtype_t t = dtypes[d % NELEM(dtypes)];
        data_kind_t kind = kinds[d / NELEM(dtypes)];
        void *x = malloc(n * esize(t));
        void *i1 = malloc(ks[3] * 8), *i2 = malloc(ks[3] * 8);
        void *v1 = malloc(ks[3] * 8), *v2 = malloc(ks[3] * 8);

        CHECK(x && i1 && i2 && v1 && v2, "out of memory");
        fill(t, x, n, kind, 7 + d);
        for (size_t ti = 0; ti < NELEM(threads); ti++) {
            sc_topk_config_t cfg = SC_TOPK_CONFIG_INIT;
            sc_topk_t *topk;

            cfg.threads = threads[ti];
            CHECK_OK(sc_topk_create(&cfg, &topk));
            for (size_t ki = 0; ki < NELEM(ks); ki++) {
                for (int bits = 32; bits <= 64; bits += 32) {
                    size_t k = ks[ki], selected = 0;
                    sc_topk_job_t job = {x, t, sc_topk_format(t), n, k, bits, i2, v2, NULL};

                    CHECK_OK(sc_topk_select(topk, x, t, n, k, bits, i1, v1, &selected,
                                            NULL));
                    CHECK(selected == k, "selected %zu of %zu", selected, k);
                    CHECK_OK(sc_topk_radix_host(topk, &job));
                    CHECK(memcmp(i1, i2, k * (size_t)bits / 8) == 0 &&
                              memcmp(v1, v2, k * esize(t)) == 0,
                          "%s %s k=%zu threads=%d bits=%d: the radix select differs",
                          sc_dtype_name(t), data_name(kind), k, threads[ti], bits);
                }
            }
            sc_topk_destroy(topk);
        }
        free(v2), free(v1), free(i2), free(i1), free(x);
    }
    return 0;
}

/* NULL selected, indices or values is refused with its name before x is read (x is a
 * pointer that must not be dereferenced), and k = 0 needs no buffer at all. */
static int test_null_outputs_are_refused(void)
{
    const void *unreadable = (const void *)(uintptr_t)0x10;
    uint32_t idx[4];
    float val[4];
    size_t selected = 99;
    sc_topk_t *topk;

    CHECK_OK(sc_topk_create(NULL, &topk));
    CHECK_REFUSED(sc_topk_select(topk, unreadable, SC_FLOAT32, 4, 2, 32, idx, val, NULL,
                                 NULL),
                  SC_ERR_INVALID_ARG, "selected is NULL");
    CHECK_REFUSED(sc_topk_select(topk, unreadable, SC_FLOAT32, 4, 2, 32, NULL, val,
                                 &selected, NULL),
                  SC_ERR_INVALID_ARG, "indices is NULL");
    CHECK_REFUSED(sc_topk_select(topk, unreadable, SC_FLOAT32, 4, 2, 32, idx, NULL,
                                 &selected, NULL),
                  SC_ERR_INVALID_ARG, "values is NULL");
    CHECK_REFUSED(sc_topk_select(NULL, unreadable, SC_FLOAT32, 4, 2, 32, idx, val,
                                 &selected, NULL),
                  SC_ERR_INVALID_ARG, "topk is NULL");
    CHECK(selected == 99, "a refused call wrote selected");
    CHECK_OK(sc_topk_select(topk, NULL, SC_FLOAT32, 4, 0, 32, NULL, NULL, &selected, NULL));
    CHECK(selected == 0, "k = 0 selected %zu", selected);
    sc_topk_destroy(topk);
    return 0;
}

typedef struct {
    const char *name;
    int (*fn)(void);
} test_t;

static const test_t tests[] = {
    {"isa_override_is_checked", test_isa_override_is_checked},
    {"threads_follow_SC_THREADS", test_threads_follow_SC_THREADS},
    {"radix_select_agrees_with_bracket", test_radix_select_agrees_with_bracket},
    {"null_outputs_are_refused", test_null_outputs_are_refused},
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_topk_paths NAME\n");
        return 2;
    }
    for (size_t i = 0; i < NELEM(tests); i++)
        if (strcmp(argv[1], tests[i].name) == 0) {
            int rc = tests[i].fn();
            printf("%s: %s\n", argv[1], rc == 0 ? "ok" : rc == SKIPPED ? "skipped" : "FAILED");
            return rc;
        }
    fprintf(stderr, "test_topk_paths: no test named %s\n", argv[1]);
    return 2;
}
