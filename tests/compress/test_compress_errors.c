/* Bad input to sparse aggregation, the compressor and the top-k hook: an error on every
 * rank that says what and where, never a hang, and a communicator that still works
 * afterwards. One behaviour per test (argv[1]):
 *   bad_index_fails_every_rank       the last rank sends index n
 *   sparse_bad_argument_fails_every_rank ARG   dtype | value_dtype | index_bits |
 *                                    null_values | null_dense | index_64 on the last rank
 *   ranks_disagree FIELD             n | k | value_dtype | index_bits differs on rank 1
 *   bad_config_is_refused            density, momentum, index_bits out of range
 *   key_reused_with_another_count    on every rank, and on rank 0 only; a failed first
 *                                    call on a key leaves no key behind
 *   hook_refuses_integer_buckets
 *   refused_step_changes_nothing [MODE]  a step refused after the selection keeps the
 *                                    state (MODE exact, approx or random)
 *   sparse_k_overflow_is_refused     k pairs whose bytes overflow, before any is read
 *   sparse_32_bit_indices_need_n_below_2_pow_32  the pad is not an element
 *   zero_count_with_null_buffers     k 0 / count 0 with NULL buffers succeeds
 *   misaligned_buffers_are_refused   pairs, dense, sendbuf and recvbuf
 *   hook_config_disagreement_fails_create FIELD  density | density_last_digit |
 *                                                warmup_steps | mode
 *   foreign_state_is_refused         the load's sentence says why, nothing more
 *   state_past_memory_is_refused     a record claiming more elements than this machine
 *                                    holds is refused before anything is allocated */
#include <math.h>
#include <unistd.h>

#include "compress_test.h"

/* After a refused call: the n elements of dense still hold the 0x55 fill, and the
 * communicator still works; then it is destroyed. */
static int dense_untouched_then_finish(rt_world_t *w, const float *dense, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &dense[i], 4);
        CHECK(u == 0x55555555u, "dense was written on an error");
    }
    if (ct_check_comm_works(w))
        return 1;
    CHECK_OK(sc_comm_destroy(w->comm));
    return 0;
}

static int test_bad_index_fails_every_rank(int argc, char **argv)
{
    uint32_t ix[3] = {0, 4, 9};
    float vals[3] = {1, 2, 3}, dense[10];
    char last_s[32];
    rt_world_t w;
    int last;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    last = w.size - 1;
    snprintf(last_s, sizeof(last_s), "rank %d", last);
    if (w.rank == last)
        ix[2] = 10;
    memset(dense, 0x55, sizeof(dense));
    if (w.rank == last) {
        CHECK_STATUS(sc_sparse_allreduce(w.comm, ix, 32, vals, SC_FLOAT32, 3, dense,
                                         SC_FLOAT32, 10), SC_ERR_INVALID_ARG);
        CHECK_SAYS("sc_sparse_allreduce", "index 10", "n 10");
    } else {
        CHECK_STATUS(sc_sparse_allreduce(w.comm, ix, 32, vals, SC_FLOAT32, 3, dense,
                                         SC_FLOAT32, 10), SC_ERR_MISMATCH);
        CHECK_SAYS("sc_sparse_allreduce", last_s);
    }
    return dense_untouched_then_finish(&w, dense, 10);
}

/* The last rank's call has one bad argument (ARG: dtype, value_dtype, index_bits,
 * null_values, null_dense or index_64, an index past n with 64-bit indices): it fails
 * with SC_ERR_INVALID_ARG naming the argument, the others with SC_ERR_MISMATCH naming
 * that rank; dense is written on none of them. */
static int test_sparse_bad_argument_fails_every_rank(int argc, char **argv)
{
    const char *arg = argc > 0 ? argv[0] : "dtype";
    uint64_t ix[3] = {0, 4, 9};
    float vals[3] = {1, 2, 3}, dense[10];
    const void *values = vals;
    void *out = dense;
    sc_dtype_t d = SC_FLOAT32, vd = SC_FLOAT32;
    int bits = 64, last;
    const char *says = NULL;
    char last_s[32];
    rt_world_t w;

    if (rt_world(&w))
        return 1;
    last = w.size - 1;
    snprintf(last_s, sizeof(last_s), "rank %d", last);
    if (w.rank == last) {
        if (!strcmp(arg, "dtype"))
            d = SC_INT32, vd = SC_INT32, says = "dtype int32";
        else if (!strcmp(arg, "value_dtype"))
            vd = SC_BFLOAT16, says = "value_dtype bfloat16";
        else if (!strcmp(arg, "index_bits"))
            bits = 16, says = "index_bits is 16";
        else if (!strcmp(arg, "null_values"))
            values = NULL, says = "values is NULL";
        else if (!strcmp(arg, "null_dense"))
            out = NULL, says = "dense is NULL";
        else if (!strcmp(arg, "index_64"))
            ix[1] = (uint64_t)1 << 40, says = "index 1099511627776";
        CHECK(says, "no argument %s", arg);
    }
    memset(dense, 0x55, sizeof(dense));
    if (w.rank == last) {
        CHECK_STATUS(sc_sparse_allreduce(w.comm, ix, bits, values, vd, 3, out, d, 10),
                     SC_ERR_INVALID_ARG);
        CHECK_SAYS("sc_sparse_allreduce", says);
    } else {
        CHECK_STATUS(sc_sparse_allreduce(w.comm, ix, bits, values, vd, 3, out, d, 10),
                     SC_ERR_MISMATCH);
        CHECK_SAYS("sc_sparse_allreduce", last_s);
    }
    return dense_untouched_then_finish(&w, dense, 10);
}

static int test_ranks_disagree(int argc, char **argv)
{
    const char *field = argc > 0 ? argv[0] : "n";
    uint64_t ix[4] = {0, 1, 2, 3};
    uint32_t ix32[4] = {0, 1, 2, 3};
    double vals[4] = {1, 2, 3, 4}, dense[20];
    _Float16 hvals[4] = {1, 2, 3, 4};
    size_t n = 20, k = 4;
    int bits = 64;
    sc_dtype_t vd = SC_FLOAT64;
    rt_world_t w;

    if (rt_world(&w))
        return 1;
    if (w.rank == 1) {
        if (!strcmp(field, "n"))
            n = 19;
        else if (!strcmp(field, "k"))
            k = 3;
        else if (!strcmp(field, "value_dtype"))
            vd = SC_FLOAT16;
        else
            bits = 32;
    }
    CHECK_STATUS(sc_sparse_allreduce(w.comm, bits == 32 ? (void *)ix32 : (void *)ix, bits,
                                     vd == SC_FLOAT16 ? (void *)hvals : (void *)vals, vd, k,
                                     dense, SC_FLOAT64, n), SC_ERR_MISMATCH);
    CHECK_SAYS("sc_sparse_allreduce", "ranks disagree", field, "rank 1");
    if (ct_check_comm_works(&w))
        return 1;
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

static int refused(const sc_compress_config_t *cfg, const char *field)
{
    sc_compressor_t *c = NULL;
    sc_comm_hook_t hook;

    CHECK_STATUS(sc_compressor_create(cfg, &c), SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_compressor_create", field);
    CHECK(c == NULL, "the output was written on an error");
    CHECK_STATUS(sc_comm_hook_topk(cfg, &hook), SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_comm_hook_topk", field);
    return 0;
}

static int test_bad_config_is_refused(int argc, char **argv)
{
    static const double densities[] = {1.5, -0.01, NAN, INFINITY};
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;

    (void)argc, (void)argv;
    for (size_t i = 0; i < sizeof(densities) / sizeof(densities[0]); i++) {
        cfg.density = densities[i];
        if (refused(&cfg, "config.density"))
            return 1;
    }
    cfg = (sc_compress_config_t)SC_COMPRESS_CONFIG_INIT;
    cfg.momentum = 1.0;
    if (refused(&cfg, "config.momentum"))
        return 1;
    cfg = (sc_compress_config_t)SC_COMPRESS_CONFIG_INIT;
    cfg.index_bits = 16;
    if (refused(&cfg, "config.index_bits"))
        return 1;
    cfg = (sc_compress_config_t)SC_COMPRESS_CONFIG_INIT;
    cfg.warmup_steps = -1;
    if (refused(&cfg, "config.warmup_steps"))
        return 1;
    cfg = (sc_compress_config_t)SC_COMPRESS_CONFIG_INIT;
    cfg.threads = -1;
    if (refused(&cfg, "config.threads is -1"))
        return 1;
    cfg.threads = 4097; /* SC_THREADS' limit too: not 4097 threads started */
    if (refused(&cfg, "config.threads is 4097"))
        return 1;
    cfg = (sc_compress_config_t)SC_COMPRESS_CONFIG_INIT;
    cfg.size = sizeof(cfg) + 8; /* a newer caller's configuration */
    if (refused(&cfg, "config.size"))
        return 1;
    cfg = (sc_compress_config_t)SC_COMPRESS_CONFIG_INIT;
    cfg.size = 12; /* ends inside density */
    if (refused(&cfg, "config.size"))
        return 1;
    cfg.size = sizeof(cfg) - 8; /* an older caller's configuration */
    return refused(&cfg, "config.size");
}

static int test_key_reused_with_another_count(int argc, char **argv)
{
    float g[100] = {0}, out[100];
    sc_compressor_t *c;
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    CHECK_OK(sc_compressor_create(NULL, &c));
    g[3] = 1.0f;
    CHECK_OK(sc_compressed_allreduce(c, w.comm, 0, g, out, 100, SC_FLOAT32, SC_SUM));
    CHECK_STATUS(sc_compressed_allreduce(c, w.comm, 0, g, out, 50, SC_FLOAT32, SC_SUM),
                 SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_compressed_allreduce", "key 0", "100 elements", "50 elements");
    /* Only rank 0 reuses key 0 with another dtype; the others use a fresh key 1. */
    if (w.rank == 0) {
        CHECK_STATUS(sc_compressed_allreduce(c, w.comm, 0, g, out, 50, SC_FLOAT16, SC_SUM),
                     SC_ERR_INVALID_ARG);
        CHECK_SAYS("key 0", "float16");
    } else {
        CHECK_STATUS(sc_compressed_allreduce(c, w.comm, 1, g, out, 50, SC_FLOAT16, SC_SUM),
                     SC_ERR_MISMATCH);
        CHECK_SAYS("sc_compressed_allreduce", "rank 0");
    }
    CHECK_OK(sc_compressed_allreduce(c, w.comm, 0, g, out, 100, SC_FLOAT32, SC_SUM));
    /* A failed first call on a key leaves no key behind: key 1 (made by the refused
     * call above on ranks other than 0) takes another shape, and key 7, whose first
     * call has the last rank give one element more, the right count afterwards. */
    CHECK_OK(sc_compressed_allreduce(c, w.comm, 1, g, out, 60, SC_FLOAT32, SC_SUM));
    if (w.size > 1) {
        CHECK_STATUS(sc_compressed_allreduce(c, w.comm, 7, g, out,
                                             w.rank == w.size - 1 ? 91 : 90, SC_FLOAT32,
                                             SC_SUM),
                     SC_ERR_MISMATCH);
        CHECK_SAYS("count");
    }
    CHECK_OK(sc_compressed_allreduce(c, w.comm, 7, g, out, 90, SC_FLOAT32, SC_SUM));
    sc_compressor_destroy(c);
    if (ct_check_comm_works(&w))
        return 1;
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* The last rank's compressor differs in argv[0] (error_feedback: off; momentum: 0.9):
 * the compressed all-reduce fails with SC_ERR_MISMATCH on every rank naming the field,
 * writes nothing, and the communicator still works. */
static int test_config_disagreement_is_a_mismatch(int argc, char **argv)
{
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
    const char *field = argc > 0 ? argv[0] : "error_feedback";
    float g[1000], out[1000];
    sc_compressor_t *c;
    rt_world_t w;

    if (rt_world(&w))
        return 1;
    if (w.rank == w.size - 1 && strcmp(field, "momentum") == 0)
        cfg.momentum = 0.9;
    else if (w.rank == w.size - 1)
        cfg.error_feedback = 0;
    CHECK_OK(sc_compressor_create(&cfg, &c));
    for (int i = 0; i < 1000; i++)
        g[i] = (float)(i % 17) - 8.0f;
    memset(out, 0x55, sizeof(out));
    CHECK_STATUS(sc_compressed_allreduce(c, w.comm, 0, g, out, 1000, SC_FLOAT32, SC_SUM),
                 SC_ERR_MISMATCH);
    CHECK_SAYS("sc_compressed_allreduce", "ranks disagree", field);
    for (int i = 0; i < 1000; i++) {
        uint32_t u;
        memcpy(&u, &out[i], 4);
        CHECK(u == 0x55555555u, "out was written on an error");
    }
    sc_compressor_destroy(c);
    if (ct_check_comm_works(&w))
        return 1;
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* The last rank's momentum is -0.0, the others' 0.0: both mean no momentum, and the
 * step runs (it was refused as "momentum is 0 on rank 0 but -0 on rank N"); every rank
 * gets the sum of the 10 planted values (density 0.01 of 1000). */
static int test_negative_zero_momentum_is_no_momentum(int argc, char **argv)
{
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
    float g[1000], out[1000];
    sc_compressor_t *c;
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    if (w.rank == w.size - 1)
        cfg.momentum = -0.0;
    CHECK_OK(sc_compressor_create(&cfg, &c));
    for (int i = 0; i < 1000; i++)
        g[i] = i % 100 == 7 ? 1000.0f + (float)i : 0.001f;
    CHECK_OK(sc_compressed_allreduce(c, w.comm, 0, g, out, 1000, SC_FLOAT32, SC_SUM));
    for (int i = 0; i < 1000; i++) {
        float want = i % 100 == 7 ? (float)w.size * (1000.0f + (float)i) : 0.0f;
        CHECK(out[i] == want, "out[%d] is %g, expected %g", i, out[i], want);
    }
    sc_compressor_destroy(c);
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* Step 2 is refused after every rank selected (the ranks disagree on the op): the state
 * and sc_compressor_stats stay as step 1 left them, so the next step and the saved state
 * are bit for bit those of a compressor that never saw step 2. Above 2^16 elements: the
 * selection's sampled, block-filled path. MODE approx and random: the kept threshold and the selector's
 * draws too (the refused step advanced them, and the next steps selected otherwise). */
static int test_refused_step_changes_nothing(int argc, char **argv)
{
    const char *mode = argc > 0 ? argv[0] : "exact";
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
    const size_t n = 100003;
    float *g = malloc(n * sizeof(float)), *out_a = malloc(n * sizeof(float));
    float *out_b = malloc(n * sizeof(float));
    sc_compressor_t *a, *b;
    size_t len_a = 0, len_b = 0;
    void *save_a, *save_b;
    rt_world_t w;

    if (rt_world(&w))
        return 1;
    cfg.mode = strcmp(mode, "approx") == 0   ? SC_TOPK_APPROX
               : strcmp(mode, "random") == 0 ? SC_TOPK_RANDOM
                                             : SC_TOPK_EXACT;
    CHECK_OK(sc_compressor_create(&cfg, &a));
    CHECK_OK(sc_compressor_create(&cfg, &b));
    for (int t = 0; t < 3; t++) {
        for (size_t e = 0; e < n; e++)
            g[e] = (float)ct_value(rt_mix(((uint64_t)w.rank << 40) ^ ((uint64_t)t << 32) ^ e) %
                                   (1u << 21));
        if (t == 1) {
            sc_compress_stats_t before, after;
            CHECK_OK(sc_compressor_stats(a, &before));
            CHECK_STATUS(sc_compressed_allreduce(a, w.comm, 0, g, out_a, n, SC_FLOAT32,
                                                 w.rank == 1 ? SC_AVG : SC_SUM),
                         SC_ERR_MISMATCH);
            CHECK_SAYS("op");
            /* The counters stay those of the step that ran, not the refused selection's. */
            CHECK_OK(sc_compressor_stats(a, &after));
            CHECK(memcmp(&before, &after, sizeof(before)) == 0, "the refused step changed "
                  "the counters: selected %zu -> %zu, bytes_sent %zu -> %zu, select_s %g -> "
                  "%g", before.selected, after.selected, before.bytes_sent, after.bytes_sent,
                  before.select_s, after.select_s);
        }
        CHECK_OK(sc_compressed_allreduce(a, w.comm, 0, g, out_a, n, SC_FLOAT32, SC_SUM));
        CHECK_OK(sc_compressed_allreduce(b, w.comm, 0, g, out_b, n, SC_FLOAT32, SC_SUM));
        CHECK(memcmp(out_a, out_b, n * sizeof(float)) == 0, "step %d: the results differ "
              "from those of the compressor that saw no refused step", t);
    }
    CHECK_OK(sc_compressor_save(a, NULL, &len_a));
    CHECK_OK(sc_compressor_save(b, NULL, &len_b));
    CHECK(len_a == len_b, "saved states of %zu and %zu bytes", len_a, len_b);
    save_a = malloc(len_a);
    save_b = malloc(len_b);
    CHECK_OK(sc_compressor_save(a, save_a, &len_a));
    CHECK_OK(sc_compressor_save(b, save_b, &len_b));
    CHECK(memcmp(save_a, save_b, len_a) == 0, "the saved states differ");
    sc_compressor_destroy(a);
    sc_compressor_destroy(b);
    CHECK_OK(sc_comm_destroy(w.comm));
    free(g), free(out_a), free(out_b), free(save_a), free(save_b);
    return 0;
}

static int test_hook_refuses_integer_buckets(int argc, char **argv)
{
    sc_grad_desc_t grads[2] = {{100, SC_FLOAT32, "w"}, {10, SC_INT32, "steps"}};
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_comm_hook_t hook;
    sc_reducer_t *r = NULL;
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    CHECK_OK(sc_comm_hook_topk(NULL, &hook));
    cfg.hook = &hook;
    cfg.prediv = 1.0;
    CHECK_STATUS(sc_reducer_create(w.comm, grads, 2, &cfg, &r), SC_ERR_INVALID_ARG);
    CHECK_SAYS("comm hook topk", "int32");
    if (ct_check_comm_works(&w))
        return 1;
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* Top-k hooks whose settings differ on the last rank (FIELD: density, warmup_steps or
 * mode; density_last_digit: the next double above 0.01, which %g printed as 0.01, so
 * that the hooks were created and sent each other different k) fail sc_reducer_create
 * on every rank, naming the hook's settings, before any bucket's collective; threads
 * may differ. */
static int test_hook_config_disagreement_fails_create(int argc, char **argv)
{
    sc_grad_desc_t grads[2] = {{100, SC_FLOAT32, "w"}, {10, SC_FLOAT32, "b"}};
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_compress_config_t ccfg = SC_COMPRESS_CONFIG_INIT;
    const char *field = argc > 0 ? argv[0] : "density";
    int last;
    sc_comm_hook_t hook;
    sc_reducer_t *r = NULL;
    rt_world_t w;

    if (rt_world(&w))
        return 1;
    last = w.rank == w.size - 1;
    ccfg.threads = 1 + w.rank; /* a local setting: never compared */
    if (last && strcmp(field, "density") == 0)
        ccfg.density = 0.05;
    else if (last && strcmp(field, "density_last_digit") == 0)
        ccfg.density = nextafter(0.01, 1.0);
    else if (last && strcmp(field, "warmup_steps") == 0)
        ccfg.warmup_steps = 3;
    else if (last)
        ccfg.mode = SC_TOPK_APPROX;
    CHECK_OK(sc_comm_hook_topk(&ccfg, &hook));
    cfg.hook = &hook;
    CHECK_STATUS(sc_reducer_create(w.comm, grads, 2, &cfg, &r), SC_ERR_MISMATCH);
    CHECK_SAYS("sc_reducer_create", "the settings of the comm hook \"topk\" differ",
               last ? (strcmp(field, "density") == 0 ? "density 0.05"
                       : strcmp(field, "density_last_digit") == 0 ? "density 0.010000000000000002,"
                       : strcmp(field, "warmup_steps") == 0 ? "warmup_steps 3" : "mode approx")
                    : "density 0.01, mode exact");
    CHECK(r == NULL, "the reducer was set on failure");
    /* Equal settings (threads still differing) create. */
    ccfg = (sc_compress_config_t)SC_COMPRESS_CONFIG_INIT;
    ccfg.threads = 1 + w.rank;
    CHECK_OK(sc_comm_hook_topk(&ccfg, &hook));
    CHECK_OK(sc_reducer_create(w.comm, grads, 2, &cfg, &r));
    CHECK_OK(sc_reducer_destroy(r));
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* k = SIZE_MAX / 2 pairs: refused for their size on every rank, before the three
 * indices there are are read past (ASan would stop the test). */
static int test_sparse_k_overflow_is_refused(int argc, char **argv)
{
    uint32_t ix[3] = {0, 1, 2};
    float vals[3] = {1, 2, 3}, dense[8];
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    memset(dense, 0x55, sizeof(dense));
    CHECK_STATUS(sc_sparse_allreduce(w.comm, ix, 32, vals, SC_FLOAT32, SIZE_MAX / 2, dense,
                                     SC_FLOAT32, 8), SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_sparse_allreduce", "overflow the buffer size");
    return dense_untouched_then_finish(&w, dense, 8);
}

/* n = 2^32 with 32-bit indices: the pad, UINT32_MAX, would also be the last element
 * (it was added there as a value). Refused on every rank before dense is touched: the
 * 8 elements here stand for 2^32, and ASan would stop a write past them. */
static int test_sparse_32_bit_indices_need_n_below_2_pow_32(int argc, char **argv)
{
    uint32_t ix[2] = {7, UINT32_MAX};
    float vals[2] = {5, 123}, dense[8];
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    memset(dense, 0x55, sizeof(dense));
    CHECK_STATUS(sc_sparse_allreduce(w.comm, ix, 32, vals, SC_FLOAT32, 2, dense, SC_FLOAT32,
                                     (size_t)1 << 32), SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_sparse_allreduce", "n 4294967296 needs 64-bit indices");
    return dense_untouched_then_finish(&w, dense, 8);
}

/* Buffers not aligned to their elements are refused before anything is sent, naming
 * the buffer, and the compressor's state is unchanged: the next step is right. */
static int test_misaligned_buffers_are_refused(int argc, char **argv)
{
    _Alignas(8) unsigned char raw[4 * 9], out[4 * 9];
    _Alignas(8) uint32_t ix[2] = {1, 5};
    _Alignas(8) float vals[2] = {1, 2}, g[8], dense[8];
    sc_compressor_t *c;
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    memset(out, 0x55, sizeof(out));
    CHECK_STATUS(sc_sparse_allreduce(w.comm, ix, 32, vals, SC_FLOAT32, 2, out + 2, SC_FLOAT32,
                                     8), SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_sparse_allreduce", "dense", "not aligned to its 4-byte elements");
    CHECK_STATUS(sc_sparse_allreduce(w.comm, (char *)ix + 1, 32, vals, SC_FLOAT32, 2, dense,
                                     SC_FLOAT32, 8), SC_ERR_INVALID_ARG);
    CHECK_SAYS("indices", "not aligned");
    CHECK_STATUS(sc_sparse_allreduce(w.comm, ix, 32, (char *)vals + 2, SC_FLOAT32, 2, dense,
                                     SC_FLOAT32, 8), SC_ERR_INVALID_ARG);
    CHECK_SAYS("values", "not aligned");
    CHECK_OK(sc_compressor_create(NULL, &c));
    memset(raw, 0, sizeof(raw));
    CHECK_STATUS(sc_compressed_allreduce(c, w.comm, 0, raw + 1, out, 8, SC_FLOAT32, SC_SUM),
                 SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_compressed_allreduce", "sendbuf", "not aligned to its 4-byte elements");
    CHECK_STATUS(sc_compressed_allreduce(c, w.comm, 0, raw, out + 1, 8, SC_FLOAT32, SC_SUM),
                 SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_compressed_allreduce", "recvbuf", "not aligned");
    for (int i = 0; i < 8; i++)
        g[i] = i == 3 + w.rank ? 100.0f : 0.0f;
    CHECK_OK(sc_compressed_allreduce(c, w.comm, 0, g, dense, 8, SC_FLOAT32, SC_SUM));
    for (int i = 0; i < 8; i++)
        CHECK(dense[i] == (i >= 3 && i < 3 + w.size ? 100.0f : 0.0f), "dense[%d] = %g", i,
              dense[i]);
    sc_compressor_destroy(c);
    return dense_untouched_then_finish(&w, (const float *)(out + 4), 8);
}

/* No pairs (k 0) and no elements (count 0) with NULL buffers are no errors and copy
 * nothing (UBSan stops a memcpy with NULL). */
static int test_zero_count_with_null_buffers(int argc, char **argv)
{
    float dense[4] = {1, 2, 3, 4};
    sc_compressor_t *c;
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    CHECK_OK(sc_sparse_allreduce(w.comm, NULL, 32, NULL, SC_FLOAT32, 0, dense, SC_FLOAT32, 4));
    for (int i = 0; i < 4; i++)
        CHECK(dense[i] == 0.0f, "dense[%d] is %g, not 0", i, dense[i]);
    CHECK_OK(sc_sparse_allreduce(w.comm, NULL, 64, NULL, SC_FLOAT32, 0, NULL, SC_FLOAT32, 0));
    CHECK_OK(sc_compressor_create(NULL, &c));
    CHECK_OK(sc_compressed_allreduce(c, w.comm, 0, NULL, NULL, 0, SC_FLOAT32, SC_SUM));
    CHECK_OK(sc_compressed_allreduce(c, w.comm, 0, NULL, NULL, 0, SC_FLOAT32, SC_AVG));
    sc_compressor_destroy(c);
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* The last error ends with suffix. */
static int says_last(const char *suffix)
{
    const char *e = sc_last_error();
    size_t len = strlen(e), n = strlen(suffix);

    CHECK(len >= n && strcmp(e + len - n, suffix) == 0,
          "the sentence \"%s\" does not end with \"%s\"", e, suffix);
    return 0;
}

/* A buffer that is no saved state: the sentence ends with the reason in parentheses. */
static int test_foreign_state_is_refused(int argc, char **argv)
{
    unsigned char bad[256];
    sc_compressor_t *c;

    (void)argc, (void)argv;
    memset(bad, 'x', sizeof(bad));
    CHECK_OK(sc_compressor_create(NULL, &c));
    CHECK_STATUS(sc_compressor_load(c, bad, sizeof(bad)), SC_ERR_INVALID_ARG);
    if (says_last("(another magic)"))
        return 1;
    CHECK_STATUS(sc_compressor_load(c, bad, 3), SC_ERR_INVALID_ARG);
    if (says_last("(shorter than the header)"))
        return 1;
    sc_compressor_destroy(c);
    return 0;
}

/* A version-2 state of one float32 key of count elements that keeps no buffers (the
 * state of a compressor without error feedback): the 32-byte header, the 16-byte draws,
 * one 32-byte record. magic: the 8 bytes a save begins with. */
static void forge_state(unsigned char st[80], const unsigned char magic[8], uint64_t count)
{
    const uint32_t version = 2, nkeys = 1;
    const uint64_t payload = 48;
    const int32_t rec[4] = {7, SC_FLOAT32, SC_FLOAT32, 0};
    const int64_t steps = 3;
    uint64_t hash;

    memset(st, 0, 80);
    memcpy(st, magic, 8);
    memcpy(st + 8, &version, 4);
    memcpy(st + 12, &nkeys, 4);
    memcpy(st + 16, &payload, 8);
    memcpy(st + 48, rec, sizeof(rec));
    memcpy(st + 64, &count, 8);
    memcpy(st + 72, &steps, 8);
    hash = ct_state_hash(st + 32, payload, 2);
    memcpy(st + 24, &hash, 8);
}

/* A record of no buffers carries its count alone: one whose elements would take more
 * than this machine's memory is refused with a sentence that says so, allocates
 * nothing, and leaves the loaded state as it was. The same record with a small count
 * loads (the forgery is a state the library accepts). */
static int test_state_past_memory_is_refused(int argc, char **argv)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const uint64_t past = (uint64_t)pages * (uint64_t)page / 4 + 1; /* float32: > phys */
    unsigned char empty[64], st[80], before[4096], after[4096];
    size_t len = sizeof(empty), lb = sizeof(before), la = sizeof(after);
    sc_compressor_t *c;

    (void)argc, (void)argv;
    CHECK(pages > 0 && page > 0, "sysconf gives no physical memory");
    CHECK_OK(sc_compressor_create(NULL, &c));
    CHECK_OK(sc_compressor_save(c, empty, &len));
    forge_state(st, empty, 1000);
    CHECK_OK(sc_compressor_load(c, st, sizeof(st)));
    CHECK_OK(sc_compressor_save(c, before, &lb));
    CHECK(lb > len, "the loaded key is not in the saved state (%zu bytes, empty %zu)", lb,
          len);
    forge_state(st, empty, past);
    CHECK_STATUS(sc_compressor_load(c, st, sizeof(st)), SC_ERR_INVALID_ARG);
    CHECK_SAYS("sc_compressor_load", "record 0 gives key 7",
               "more than this machine's memory");
    CHECK_OK(sc_compressor_save(c, after, &la));
    CHECK(la == lb && memcmp(before, after, lb) == 0, "a refused load changed the state");
    sc_compressor_destroy(c);
    return 0;
}

int main(int argc, char **argv)
{
    static const rt_test_t tests[] = {
        {"bad_index_fails_every_rank", test_bad_index_fails_every_rank},
        {"sparse_bad_argument_fails_every_rank", test_sparse_bad_argument_fails_every_rank},
        {"ranks_disagree", test_ranks_disagree},
        {"bad_config_is_refused", test_bad_config_is_refused},
        {"key_reused_with_another_count", test_key_reused_with_another_count},
        {"hook_refuses_integer_buckets", test_hook_refuses_integer_buckets},
        {"config_disagreement_is_a_mismatch", test_config_disagreement_is_a_mismatch},
        {"negative_zero_momentum_is_no_momentum", test_negative_zero_momentum_is_no_momentum},
        {"refused_step_changes_nothing", test_refused_step_changes_nothing},
        {"sparse_k_overflow_is_refused", test_sparse_k_overflow_is_refused},
        {"zero_count_with_null_buffers", test_zero_count_with_null_buffers},
        {"misaligned_buffers_are_refused", test_misaligned_buffers_are_refused},
        {"hook_config_disagreement_fails_create", test_hook_config_disagreement_fails_create},
        {"sparse_32_bit_indices_need_n_below_2_pow_32",
         test_sparse_32_bit_indices_need_n_below_2_pow_32},
        {"foreign_state_is_refused", test_foreign_state_is_refused},
        {"state_past_memory_is_refused", test_state_past_memory_is_refused},
        {NULL, NULL}};
    return rt_main(tests, argc, argv);
}
