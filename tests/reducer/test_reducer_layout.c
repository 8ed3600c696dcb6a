/* Bucket layout of the reducer, on one rank: which bucket each gradient lands in and at
 * which offset, against layouts worked out by hand from the rules in reducer.h.
 *   layout_fills_in_reverse_order_with_a_small_first_bucket
 *   layout_defaults_are_1_mib_first_and_25_mib_cap
 *   layout_gives_an_oversize_gradient_its_own_bucket
 *   layout_keeps_one_dtype_per_bucket
 *   layout_takes_the_cap_from_SC_BUCKET_CAP_MB        (SC_BUCKET_CAP_MB=0.001)
 *   layout_refuses_SC_BUCKET_CAP_MB_out_of_range      (SC_BUCKET_CAP_MB=-1, 0, nan)
 *   layout_places_zero_element_gradients
 *   layout_reduces_large_copied_gradients_alone_on_one_node   (2 ranks; with and
 *                                                              without SC_STAGE_BYTES=0)
 *   rebuild_in_copy_mode_holds_one_layouts_memory   (an address-space limit that fits
 *                                                    one layout's buckets, not two)
 *   rebuild_without_memory_refuses_later_calls      (a limit that fits no layout) */
#include <sys/resource.h>
#include <unistd.h>

#include "reducer_test.h"

/* Expected (bucket, offset) of each gradient, and the bucket count. */
static int check_layout(sc_reducer_t *r, int n, const int *bucket, const size_t *offset,
                        int nbuckets)
{
    sc_reducer_stats_t st;

    for (int i = 0; i < n; i++) {
        int b = -1;
        size_t off = 0;
        CHECK_OK(sc_reducer_grad_bucket(r, i, &b, &off));
        CHECK(b == bucket[i] && off == offset[i], "gradient %d is in bucket %d at offset %zu, "
              "expected bucket %d at offset %zu", i, b, off, bucket[i], offset[i]);
    }
    CHECK_OK(sc_reducer_stats(r, &st));
    CHECK(st.buckets == nbuckets, "%d buckets, expected %d", st.buckets, nbuckets);
    return 0;
}

static int make(rt_world_t *w, rt_model_t *m, int n, const size_t *counts,
                const sc_dtype_t *dtypes, size_t first, size_t cap, sc_reducer_t **r)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;

    if (rt_world(w))
        return 1;
    rt_model_init(m, n, counts, dtypes);
    cfg.first_bucket_bytes = first;
    cfg.bucket_cap_bytes = cap;
    CHECK_OK(sc_reducer_create(w->comm, m->desc, n, &cfg, r));
    return 0;
}

static int done(rt_world_t *w, rt_model_t *m, sc_reducer_t *r)
{
    CHECK_OK(sc_reducer_destroy(r));
    CHECK_OK(sc_comm_destroy(w->comm));
    rt_model_free(m);
    return 0;
}

/* float32 gradients of 400, 800, 1200, 200, 1000, 400 bytes, first bucket 1000 bytes,
 * cap 2000, filled from the last: {5} (5+4 > 1000), {4, 3} (+2 > 2000), {2, 1} (2000 is
 * not past the cap), {0}. */
static int test_layout_fills_in_reverse_order_with_a_small_first_bucket(int argc, char **argv)
{
    static const size_t counts[] = {100, 200, 300, 50, 250, 100};
    static const int bucket[] = {3, 2, 2, 1, 1, 0};
    static const size_t offset[] = {0, 300, 0, 250, 0, 0};
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;

    (void)argc, (void)argv;
    if (make(&w, &m, 6, counts, NULL, 1000, 2000, &r))
        return 1;
    if (check_layout(r, 6, bucket, offset, 4))
        return 1;
    return done(&w, &m, r);
}

/* 8 MiB gradients: the last one is past the 1 MiB first bucket (its own), then three
 * fit 25 MiB, then two. */
static int test_layout_defaults_are_1_mib_first_and_25_mib_cap(int argc, char **argv)
{
    static const size_t counts[] = {2 << 20, 2 << 20, 2 << 20, 2 << 20, 2 << 20, 2 << 20};
    static const int bucket[] = {2, 2, 1, 1, 1, 0};
    static const size_t offset[] = {2 << 20, 0, 4 << 20, 2 << 20, 0, 0};
    sc_reducer_stats_t st;
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;

    (void)argc, (void)argv;
    if (make(&w, &m, 6, counts, NULL, 0, 0, &r))
        return 1;
    if (check_layout(r, 6, bucket, offset, 3))
        return 1;
    CHECK_OK(sc_reducer_stats(r, &st));
    CHECK(st.bucket_cap_bytes == (size_t)25 << 20, "cap %zu, expected 25 MiB",
          st.bucket_cap_bytes);
    return done(&w, &m, r);
}

/* 400, 4000, 400, 400 bytes, first 1000, cap 2000: {3, 2}, then gradient 1 alone (past
 * the cap), then {0}. And a model whose last gradient is past the first limit: alone,
 * then the others up to the cap. */
static int test_layout_gives_an_oversize_gradient_its_own_bucket(int argc, char **argv)
{
    static const size_t counts[] = {100, 1000, 100, 100};
    static const int bucket[] = {2, 1, 0, 0};
    static const size_t offset[] = {0, 0, 100, 0};
    static const size_t counts2[] = {100, 100, 1000};
    static const int bucket2[] = {1, 1, 0};
    static const size_t offset2[] = {100, 0, 0};
    rt_world_t w;
    rt_model_t m, m2;
    sc_reducer_t *r, *r2;
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;

    (void)argc, (void)argv;
    if (make(&w, &m, 4, counts, NULL, 1000, 2000, &r))
        return 1;
    if (check_layout(r, 4, bucket, offset, 3))
        return 1;
    rt_model_init(&m2, 3, counts2, NULL);
    cfg.first_bucket_bytes = 1000;
    cfg.bucket_cap_bytes = 2000;
    CHECK_OK(sc_reducer_create(w.comm, m2.desc, 3, &cfg, &r2));
    if (check_layout(r2, 3, bucket2, offset2, 2))
        return 1;
    CHECK_OK(sc_reducer_destroy(r2));
    rt_model_free(&m2);
    return done(&w, &m, r);
}

/* float32, float16, float32, float16, float64, filled from the last: one open bucket
 * per dtype; buckets ordered by their last gradient: {4} (float64, position 0),
 * {3, 1} (float16, last at position 3), {2, 0} (float32, position 4). */
static int test_layout_keeps_one_dtype_per_bucket(int argc, char **argv)
{
    static const size_t counts[] = {100, 100, 100, 100, 10};
    static const sc_dtype_t dtypes[] = {SC_FLOAT32, SC_FLOAT16, SC_FLOAT32, SC_FLOAT16,
                                        SC_FLOAT64};
    static const int bucket[] = {2, 1, 2, 1, 0};
    static const size_t offset[] = {100, 100, 0, 0, 0};
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;

    (void)argc, (void)argv;
    if (make(&w, &m, 5, counts, dtypes, 0, 0, &r))
        return 1;
    if (check_layout(r, 5, bucket, offset, 3))
        return 1;
    return done(&w, &m, r);
}

/* SC_BUCKET_CAP_MB=0.001: a cap of 1048 bytes (0.001 MiB, rounded down). 200-element
 * float32 gradients (800 bytes), first bucket 800: one per bucket, the first two
 * together would be 1600. */
static int test_layout_takes_the_cap_from_SC_BUCKET_CAP_MB(int argc, char **argv)
{
    static const size_t counts[] = {200, 200, 200};
    static const int bucket[] = {2, 1, 0};
    static const size_t offset[] = {0, 0, 0};
    sc_reducer_stats_t st;
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;

    (void)argc, (void)argv;
    if (make(&w, &m, 3, counts, NULL, 800, 0, &r))
        return 1;
    CHECK_OK(sc_reducer_stats(r, &st));
    CHECK(st.bucket_cap_bytes == 1048, "cap %zu bytes, expected 1048 (SC_BUCKET_CAP_MB=%s)",
          st.bucket_cap_bytes, getenv("SC_BUCKET_CAP_MB"));
    if (check_layout(r, 3, bucket, offset, 3))
        return 1;
    return done(&w, &m, r);
}

/* SC_BUCKET_CAP_MB out of range, -1 included (it was taken as unset: autotuning stayed
 * on): sc_reducer_create refuses it naming the variable, and *r stays as it was. */
static int test_layout_refuses_SC_BUCKET_CAP_MB_out_of_range(int argc, char **argv)
{
    static const size_t counts[] = {200, 200};
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_reducer_t *r = (sc_reducer_t *)&cfg;
    rt_world_t w;
    rt_model_t m;
    sc_status_t s;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    rt_model_init(&m, 2, counts, NULL);
    cfg.autotune = 1;
    s = sc_reducer_create(w.comm, m.desc, 2, &cfg, &r);
    CHECK(s == SC_ERR_INVALID_ARG, "SC_BUCKET_CAP_MB=%s: %s", getenv("SC_BUCKET_CAP_MB"),
          sc_status_string(s));
    CHECK(strstr(sc_last_error(), "SC_BUCKET_CAP_MB="), "sentence: %s", sc_last_error());
    CHECK(r == (sc_reducer_t *)&cfg, "*reducer written on failure");
    CHECK_OK(sc_comm_destroy(w.comm));
    rt_model_free(&m);
    return 0;
}

/* 0, 10, 0, 0 elements, first bucket 16 bytes: {3, 2} holds nothing, then {1, 0}. */
static int test_layout_places_zero_element_gradients(int argc, char **argv)
{
    static const size_t counts[] = {0, 10, 0, 0};
    static const int bucket[] = {1, 1, 0, 0};
    static const size_t offset[] = {10, 0, 0, 0};
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;

    (void)argc, (void)argv;
    if (make(&w, &m, 4, counts, NULL, 16, 1000, &r))
        return 1;
    if (check_layout(r, 4, bucket, offset, 2))
        return 1;
    return done(&w, &m, r);
}

/* float32 gradients of 800 KB, 800 KB, 800 KB, 1.2 MB and 400 B, first bucket 2 MiB,
 * with staging: the solo gradient 3 goes beside the others, which are laid out as
 * without it: {4, 2, 1} reaches 1.6 MB, and 0 would take the first bucket past 2 MiB,
 * so it opens the next. By last gradient: {3}, {4, 2, 1}, {0}. */
static int layout_solo_leaves_the_first_bucket_small(rt_world_t *w)
{
    static const size_t counts[] = {200000, 200000, 200000, 300000, 100};
    static const int bucket[] = {2, 1, 1, 0, 1};
    static const size_t offset[] = {0, 200100, 100, 0, 0};
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    rt_model_t m;
    sc_reducer_t *r;

    rt_model_init(&m, 5, counts, NULL);
    cfg.first_bucket_bytes = (size_t)2 << 20;
    CHECK_OK(sc_reducer_create(w->comm, m.desc, 5, &cfg, &r));
    if (check_layout(r, 5, bucket, offset, 3))
        return 1;
    CHECK_OK(sc_reducer_destroy(r));
    rt_model_free(&m);
    return 0;
}

/* float32 gradients of 8 MiB, 400 B, 8 MiB, 400 B and 1.2 MB, default caps (1 MiB
 * first, 25 MiB after), filled from the last. As DDP lays them out (views; or no
 * staging segment, SC_STAGE_BYTES=0): {4} (past the first bucket's 1 MiB), then
 * {3, 2, 1, 0} (16 MiB and 800 B fit 25 MiB). Copied gradients on one node with
 * staging: from 1 MiB (SC_REDUCER_SOLO_BYTES) each alone, reduced in the caller's
 * memory: {4}, {2}, {3, 1}, {0}, in the order of their last gradient. Either way every
 * rank reduces the same sum. */
static int test_layout_reduces_large_copied_gradients_alone_on_one_node(int argc, char **argv)
{
    static const size_t counts[] = {2 << 20, 100, 2 << 20, 100, 300000};
    static const int ddp_bucket[] = {1, 1, 1, 1, 0};
    static const size_t ddp_offset[] = {(2 << 20) + 200, (2 << 20) + 100, 100, 0, 0};
    static const int solo_bucket[] = {3, 2, 1, 2, 0};
    static const size_t solo_offset[] = {0, 100, 0, 0, 0};
    const char *stage = getenv("SC_STAGE_BYTES");
    int staged = !(stage && strcmp(stage, "0") == 0);
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;
    void *probe;
    int shared = 0;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    CHECK(w.size == 2, "run on 2 ranks, not %d", w.size);
    /* The staging segment is shared memory mapped as sc_mem_alloc's is: where UCX_TLS
     * leaves no shared-memory transport, nothing is staged. */
    CHECK_OK(sc_mem_alloc(w.comm, 4096, &probe));
    CHECK_OK(sc_mem_is_shared(w.comm, probe, &shared));
    CHECK_OK(sc_mem_free(w.comm, probe));
    staged = staged && shared;
    rt_model_init(&m, 5, counts, NULL);
    CHECK_OK(sc_reducer_create(w.comm, m.desc, 5, &cfg, &r));
    if (staged ? check_layout(r, 5, solo_bucket, solo_offset, 4)
               : check_layout(r, 5, ddp_bucket, ddp_offset, 2))
        return 1;
    /* One iteration, marked in the backward order: each result the average. */
    for (int g = m.n - 1; g >= 0; g--) {
        rt_fill(&m, m.buf[g], 7, w.rank, 0, g);
        CHECK_OK(sc_reducer_mark_ready(r, g, m.buf[g]));
    }
    CHECK_OK(sc_reducer_finalize(r));
    for (int g = 0, it = 0; g < m.n; g++)
        if (rt_check_grad(&m, m.buf[g], g, 7, w.size, w.size, &it, 1, NULL))
            return 1;
    if (rt_check_same_bits(&w, &m, m.buf))
        return 1;
    CHECK_OK(sc_reducer_destroy(r));
    cfg.gradient_as_bucket_view = 1;
    CHECK_OK(sc_reducer_create(w.comm, m.desc, 5, &cfg, &r));
    if (check_layout(r, 5, ddp_bucket, ddp_offset, 2))
        return 1;
    if (staged && layout_solo_leaves_the_first_bucket_small(&w))
        return 1;
    return done(&w, &m, r);
}

/* The address space this process has mapped, in bytes (/proc/self/statm), or 0. */
static size_t mapped_bytes(void)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* Copy mode, one rank, four float32 gradients of 32 MiB in buckets of 64 MiB ({3, 2}
 * and {1, 0} from creation), then an address-space limit delta bytes from what is
 * mapped; *old gets the limit to restore. */
static int start_limited(rt_world_t *w, rt_model_t *m, sc_reducer_t **r, long delta,
                         struct rlimit *old)
{
    static const size_t counts[] = {8 << 20, 8 << 20, 8 << 20, 8 << 20};
    static const int bucket[] = {1, 1, 0, 0};
    static const size_t offset[] = {8 << 20, 0, 8 << 20, 0};
    struct rlimit lim;
    size_t mapped;

    if (make(w, m, 4, counts, NULL, 64 << 20, 64 << 20, r) ||
        check_layout(*r, 4, bucket, offset, 2))
        return 1;
    mapped = mapped_bytes();
    CHECK(mapped > ((size_t)64 << 20) && getrlimit(RLIMIT_AS, old) == 0, "getrlimit");
    lim = *old;
    lim.rlim_cur = (rlim_t)((long)mapped + delta);
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit");
    return 0;
}

/* A sanitizer's shadow memory leaves no room under such a limit. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SKIP_UNDER_A_SANITIZER()                                                         \
    do {                                                                                 \
        printf("SKIP: an address-space limit leaves a sanitizer no room for its shadow "  \
               "memory\n");                                                              \
        return 0;                                                                        \
    } while (0)
#else
#define SKIP_UNDER_A_SANITIZER() ((void)0)
#endif

/* Marked 0, 1, 2, 3, the rebuild after the first iteration makes {0, 1} and {2, 3}.
 * Under a limit 48 MiB above what is mapped once the gradients exist, it fits only if
 * the old buckets' memory goes before the new one comes (it holds nothing the next
 * iteration reads); the next iteration's results are right. */
static int test_rebuild_in_copy_mode_holds_one_layouts_memory(int argc, char **argv)
{
    static const int bucket[] = {0, 0, 1, 1};
    static const size_t offset[] = {0, 8 << 20, 0, 8 << 20};
    struct rlimit old;
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;
    sc_status_t st = SC_SUCCESS;
    int rc = 0;

    (void)argc, (void)argv;
    SKIP_UNDER_A_SANITIZER();
    if (start_limited(&w, &m, &r, (long)48 << 20, &old))
        return 1;
    for (int it = 0; it < 2 && st == SC_SUCCESS; it++) {
        for (int g = 0; g < m.n && st == SC_SUCCESS; g++) {
            rt_fill(&m, m.buf[g], 11, w.rank, it, g);
            st = sc_reducer_mark_ready(r, g, m.buf[g]);
        }
        if (st == SC_SUCCESS)
            st = sc_reducer_finalize(r);
        for (int g = 0; g < m.n && st == SC_SUCCESS && !rc; g++)
            rc = rt_check_grad(&m, m.buf[g], g, 11, w.size, w.size, &it, 1, NULL);
    }
    setrlimit(RLIMIT_AS, &old);
    CHECK(st == SC_SUCCESS, "an iteration failed under the limit: %s: %s",
          sc_status_string(st), sc_last_error());
    if (rc || check_layout(r, 4, bucket, offset, 2))
        return 1;
    return done(&w, &m, r);
}

/* As above under a limit 64 MiB below what is mapped: the rebuild releases the old
 * buckets (128 MiB) and cannot make the second new one, so the first finalize fails
 * with SC_ERR_NO_MEMORY; every later mark_ready and finalize is refused with that
 * cause, and destroy still frees everything. */
static int test_rebuild_without_memory_refuses_later_calls(int argc, char **argv)
{
    struct rlimit old;
    rt_world_t w;
    rt_model_t m;
    sc_reducer_t *r;
    sc_status_t st = SC_SUCCESS;

    (void)argc, (void)argv;
    SKIP_UNDER_A_SANITIZER();
    if (start_limited(&w, &m, &r, -((long)64 << 20), &old))
        return 1;
    for (int g = 0; g < m.n && st == SC_SUCCESS; g++)
        st = sc_reducer_mark_ready(r, g, m.buf[g]);
    if (st == SC_SUCCESS)
        st = sc_reducer_finalize(r);
    setrlimit(RLIMIT_AS, &old);
    CHECK(st == SC_ERR_NO_MEMORY, "the rebuild's finalize returned %s: %s",
          sc_status_string(st), sc_last_error());
    CHECK_REFUSED(sc_reducer_mark_ready(r, 0, m.buf[0]), SC_ERR_NO_MEMORY,
                  "sc_reducer_mark_ready: the reducer has no buckets since their rebuild "
                  "failed (");
    CHECK(strstr(sc_last_error(), "out of memory") != NULL, "no cause in '%s'", sc_last_error());
    CHECK_REFUSED(sc_reducer_finalize(r), SC_ERR_NO_MEMORY, "; destroy it");
    return done(&w, &m, r);
}

int main(int argc, char **argv)
{
    static const rt_test_t tests[] = {
        {"layout_fills_in_reverse_order_with_a_small_first_bucket",
         test_layout_fills_in_reverse_order_with_a_small_first_bucket},
        {"layout_defaults_are_1_mib_first_and_25_mib_cap",
         test_layout_defaults_are_1_mib_first_and_25_mib_cap},
        {"layout_gives_an_oversize_gradient_its_own_bucket",
         test_layout_gives_an_oversize_gradient_its_own_bucket},
        {"layout_keeps_one_dtype_per_bucket", test_layout_keeps_one_dtype_per_bucket},
        {"layout_reduces_large_copied_gradients_alone_on_one_node",
         test_layout_reduces_large_copied_gradients_alone_on_one_node},
        {"layout_takes_the_cap_from_SC_BUCKET_CAP_MB",
         test_layout_takes_the_cap_from_SC_BUCKET_CAP_MB},
        {"layout_refuses_SC_BUCKET_CAP_MB_out_of_range",
         test_layout_refuses_SC_BUCKET_CAP_MB_out_of_range},
        {"layout_places_zero_element_gradients", test_layout_places_zero_element_gradients},
        {"rebuild_in_copy_mode_holds_one_layouts_memory",
         test_rebuild_in_copy_mode_holds_one_layouts_memory},
        {"rebuild_without_memory_refuses_later_calls",
         test_rebuild_without_memory_refuses_later_calls},
        {NULL, NULL}};
    return rt_main(tests, argc, argv);
}
