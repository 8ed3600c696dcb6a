/* Reducers on split communicators, several at once, the way hybrid sharding (HSDP) and
 * DeepSpeed use them: 4 ranks (unless said) in "nodes" of 2, a replica split (equal local
 * index, its ranks in reverse world order, so that its rank 0 is world rank 2 or 3) and a
 * shard split (one node). One behaviour per test (argv[1]):
 *   missing_gradient_in_one_split_leaves_the_others   world rank 3 skips a gradient of
 *       its replica reducer: that split's finalize fails on both its ranks, naming the
 *       rank as a split's rank and a world rank; the other reducers and the world go on
 *   registration_mismatch_in_one_split_names_world_ranks   a gradient that differs on
 *       world rank 1 fails create on its replica split only, naming both ranks so
 *   hybrid_reducers_beside_a_busy_world LOCAL HOOK [view]   any world size, nodes of
 *       LOCAL: a reducer on each split, marks interleaved in an order of each rank's
 *       own, while another thread runs all-reduces on the world from before the
 *       reducers' creation on; HOOK allreduce | fp16 | bf16 | topk (density 1 with
 *       float16 values: sparse, every value exact); view: gradient_as_bucket_view.
 *       The rebuilt layouts follow each split's rank 0's ready order
 *   reducers_on_overlapping_comms_in_different_orders [HOOK]   a reducer on the world
 *       and one on the replica split, finalized in an order of each rank's parity (no
 *       cycle); a third on the shard split created and destroyed while the others are
 *       mid-iteration; destroyed in different orders
 *   topk_reducers_keep_their_own_residuals [ITERS]   2 or 4 ranks: top-k reducers
 *       (density 0.05, error feedback, autotune) on the world and on a copy whose ranks
 *       are reversed, the same gradients marked into both: the same bits as a reducer
 *       that ran alone (every sum is exact)
 *   destroyed_replica_reducer_fails_only_its_peer between|mid   world rank 3 destroys
 *       its replica reducer before marking or with half marked: world rank 1 fails that
 *       iteration at once, naming it both ways; the shard reducers and the world go on
 *   topk_state_resumes_on_new_splits   top-k states saved on every split, loaded into
 *       new reducers on new splits: the next iterations are the same bits
 *   reducers_on_threads_of_their_own [HOOK]   each split's reducer driven through 20
 *       iterations by a thread of its own, the world's all-reduces on the main thread
 * Results against a float64 reference of the split's world ranks, bit for bit the same
 * on every rank of each communicator. */
#include <pthread.h>

#include "reducer_test.h"

#define SEED 0x5eed5917ull

typedef struct {
    rt_world_t c;       /* the split as a "world" of its own, for the shared checks */
    int *world_of;      /* world rank of each split rank */
    int *used;          /* per world rank: a member of this split */
    rt_model_t m;
    sc_reducer_t *r;
    int order0[64];     /* split rank 0's ready order of the first iteration */
} group_t;

/* g's split of the world by (color, key), and which world ranks it holds. */
static int group_split(group_t *g, const rt_world_t *w, int color, int key)
{
    int32_t me = w->rank;

    g->r = NULL;
    CHECK_OK(sc_comm_split(w->comm, color, key, &g->c.comm));
    g->c.rank = sc_comm_rank(g->c.comm);
    g->c.size = sc_comm_size(g->c.comm);
    g->world_of = calloc((size_t)g->c.size, sizeof(int));
    g->used = calloc((size_t)w->size, sizeof(int));
    CHECK_OK(sc_allgather(&me, g->world_of, 1, SC_INT32, g->c.comm, NULL, NULL));
    for (int r = 0; r < g->c.size; r++)
        g->used[g->world_of[r]] = 1;
    return 0;
}

static void group_free(group_t *g)
{
    rt_model_free(&g->m);
    free(g->world_of);
    free(g->used);
}

/* A permutation of 0..n-1 for (world rank, iteration, salt). */
static void shuffled(int *order, int n, int rank, int it, int salt)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rt_mix(SEED ^ ((uint64_t)rank << 40) ^ ((uint64_t)it << 20) ^
                             ((uint64_t)salt << 56) ^ (uint64_t)i) % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* The hook of a kind (allreduce: none, the default). */
static int make_hook(const char *kind, sc_comm_hook_t *hook, int *has_hook)
{
    *has_hook = 1;
    if (strcmp(kind, "fp16") == 0)
        CHECK_OK(sc_comm_hook_builtin(SC_HOOK_FP16, hook));
    else if (strcmp(kind, "bf16") == 0)
        CHECK_OK(sc_comm_hook_builtin(SC_HOOK_BF16, hook));
    else if (strcmp(kind, "topk") == 0) {
        sc_compress_config_t cc = SC_COMPRESS_CONFIG_INIT;
        cc.density = 1.0;
        cc.values_fp16 = 1; /* sparse all the same: every value, exact as float16 */
        CHECK_OK(sc_comm_hook_topk(&cc, hook));
    } else
        *has_hook = 0;
    return 0;
}


/* g's results of iteration it: the average over its world ranks (float64 reference,
 * within the tolerance of tol), the same bits on every rank of the split. */
static int check_group(group_t *g, const rt_world_t *w, int it, sc_dtype_t tol)
{
    for (int i = 0; i < g->m.n; i++)
        if (rt_check_grad_as(&g->m, g->m.buf[i], i, SEED + (uint64_t)g->m.n, w->size,
                             g->c.size, &it, 1, g->used, tol))
            return 1;
    return rt_check_same_bits(&g->c, &g->m, g->m.buf);
}


/* 4 ranks in nodes of 2: g[0] the replica split (equal local index; its ranks in reverse
 * world order, so that its rank 0 is world rank 2 or 3), g[1] the shard split (a node). */
static int hybrid_of_4(rt_world_t *w, group_t *g)
{
    if (rt_world(w))
        return 1;
    CHECK(w->size == 4, "4 ranks, not %d", w->size);
    if (group_split(&g[0], w, w->rank % 2, -w->rank) ||
        group_split(&g[1], w, w->rank / 2, w->rank))
        return 1;
    return 0;
}

/* Destroys the n groups' reducers (NULL: none) and splits, then the world. */
static int groups_finish(rt_world_t *w, group_t *g, int n)
{
    for (int k = 0; k < n; k++) {
        CHECK_OK(sc_reducer_destroy(g[k].r));
        CHECK_OK(sc_comm_destroy(g[k].c.comm));
        group_free(&g[k]);
    }
    CHECK_OK(sc_comm_destroy(w->comm));
    return 0;
}

/* Creates a reducer of g->m (set up) on g's split, small buckets, with the hook kind. */
static int group_reducer(group_t *g, const char *hook)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_comm_hook_t h;
    int has;

    cfg.first_bucket_bytes = 2048;
    cfg.bucket_cap_bytes = 8192;
    if (make_hook(hook, &h, &has))
        return 1;
    cfg.hook = has ? &h : NULL;
    CHECK_OK(sc_reducer_create(g->c.comm, g->m.desc, g->m.n, &cfg, &g->r));
    return 0;
}

/* This rank's gradients of iteration it, from its world rank. */
static void group_fill(group_t *g, int wrank, int it)
{
    for (int i = 0; i < g->m.n; i++)
        rt_fill(&g->m, g->m.buf[i], SEED + (uint64_t)g->m.n, wrank, it, i);
}

/* Marks every gradient but skip (-1: none) in an order of the rank's own. */
static int group_mark_all(group_t *g, int wrank, int it, int skip)
{
    int o[64];
    shuffled(o, g->m.n, wrank, it, 3);
    for (int i = 0; i < g->m.n; i++)
        if (o[i] != skip)
            CHECK_OK(sc_reducer_mark_ready(g->r, o[i], g->m.buf[o[i]]));
    return 0;
}


/* hybrid_of_4 with a reducer on each split (the default hook, small buckets). */
static int hybrid_reducers_of_4(rt_world_t *w, group_t *g)
{
    static const size_t counts_a[] = {300, 7, 2000, 64};
    static const size_t counts_b[] = {100, 900, 5};

    if (hybrid_of_4(w, g))
        return 1;
    rt_model_init(&g[0].m, 4, counts_a, NULL);
    rt_model_init(&g[1].m, 3, counts_b, NULL);
    return group_reducer(&g[0], "allreduce") || group_reducer(&g[1], "allreduce");
}

/* The world still works: an all-reduce of one per rank. */
static int world_sums(rt_world_t *w)
{
    int32_t one = 1;

    CHECK_OK(sc_allreduce(&one, &one, 1, SC_INT32, SC_SUM, w->comm, NULL, NULL));
    CHECK(one == w->size, "the world's sum is %d", (int)one);
    return 0;
}

/* The world's all-reduces on another thread while the reducers run. */
typedef struct {
    rt_world_t *w;
    int stop;   /* atomic */
    int rounds; /* all-reduces it ran (the same on every rank) */
    int bad;
} busy_t;

static void *busy_world(void *arg)
{
    busy_t *b = arg;
    double v[1000];
    int go = 1;

    while (go) {
        int32_t more = !__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE);
        /* Every rank agrees whether to go on: the same number of rounds everywhere. */
        if (sc_allreduce(&more, &more, 1, SC_INT32, SC_MIN, b->w->comm, NULL, NULL) !=
            SC_SUCCESS) {
            fprintf(stderr, "rank %d: world all-reduce: %s\n", rt_rank, sc_last_error());
            b->bad = 1;
            return NULL;
        }
        go = more;
        if (!go)
            break;
        for (int e = 0; e < 1000; e++)
            v[e] = b->w->rank + e + b->rounds;
        if (sc_allreduce(v, v, 1000, SC_FLOAT64, SC_SUM, b->w->comm, NULL, NULL) !=
            SC_SUCCESS) {
            fprintf(stderr, "rank %d: world all-reduce: %s\n", rt_rank, sc_last_error());
            b->bad = 1;
            return NULL;
        }
        for (int e = 0; e < 1000; e++) {
            double want = (double)b->w->size * (b->w->size - 1) / 2 +
                          (double)b->w->size * (e + b->rounds);
            if (v[e] != want) {
                fprintf(stderr, "rank %d: world all-reduce element %d: %g, expected %g\n",
                        rt_rank, e, v[e], want);
                b->bad = 1;
            }
        }
        b->rounds++;
    }
    return NULL;
}


static int test_hybrid_reducers_beside_a_busy_world(int argc, char **argv)
{
    static const size_t counts_a[] = {3, 1000, 17, 5000, 1, 2000, 257, 64};
    static const size_t counts_b[] = {700, 9, 4096, 33, 1500, 2};
    int local = argc > 0 ? atoi(argv[0]) : 2;
    const char *hook = argc > 1 ? argv[1] : "allreduce";
    int view = argc > 2 && strcmp(argv[2], "view") == 0;
    sc_dtype_t tol = strcmp(hook, "bf16") == 0 ? SC_BFLOAT16 : strcmp(hook, "fp16") == 0 ?
                     SC_FLOAT16 : strcmp(hook, "topk") == 0 ? SC_FLOAT16 : SC_FLOAT32;
    rt_world_t w;
    group_t g[2];
    busy_t busy = {0};
    pthread_t th;
    int na, nb;

    if (rt_world(&w))
        return 1;
    CHECK(w.size % local == 0, "world of %d ranks in nodes of %d", w.size, local);
    /* g[0]: replica (equal local index), split rank 0 the highest world rank; g[1]: shard. */
    if (group_split(&g[0], &w, w.rank % local, -w.rank) ||
        group_split(&g[1], &w, w.rank / local, w.rank))
        return 1;
    na = (int)(sizeof(counts_a) / sizeof(counts_a[0]));
    nb = (int)(sizeof(counts_b) / sizeof(counts_b[0]));
    rt_model_init(&g[0].m, na, counts_a, NULL);
    rt_model_init(&g[1].m, nb, counts_b, NULL);
    /* The world is busy from here on, reducers' creation included. */
    busy.w = &w;
    CHECK(pthread_create(&th, NULL, busy_world, &busy) == 0, "pthread_create");
    for (int k = 0; k < 2; k++) {
        sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
        sc_comm_hook_t h;
        int has;
        cfg.first_bucket_bytes = 2048;
        cfg.bucket_cap_bytes = 8192;
        cfg.gradient_as_bucket_view = view;
        if (make_hook(hook, &h, &has))
            return 1;
        cfg.hook = has ? &h : NULL;
        CHECK_OK(sc_reducer_create(g[k].c.comm, g[k].m.desc, g[k].m.n, &cfg, &g[k].r));
    }
    for (int it = 0; it < 4; it++) {
        int oa[64], ob[64], ia = 0, ib = 0;
        shuffled(oa, na, w.rank, it, 1);
        shuffled(ob, nb, w.rank, it, 2);
        if (it == 0)
            for (int k = 0; k < 2; k++)
                shuffled(g[k].order0, g[k].m.n, g[k].world_of[0], 0, k + 1);
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < g[k].m.n; i++) {
                void *v = view ? sc_reducer_grad_view(g[k].r, i) : NULL;
                CHECK(!view || v || g[k].m.desc[i].count == 0, "no view of gradient %d", i);
                rt_fill(&g[k].m, view ? v : g[k].m.buf[i], SEED + (uint64_t)g[k].m.n, w.rank,
                        it, i);
            }
        /* Interleaved, in a rank's own rhythm. */
        while (ia < na || ib < nb) {
            int pick_a = ib == nb || (ia < na && (rt_mix((uint64_t)(w.rank * 131 + it * 7 +
                                                                    ia + ib)) & 1));
            group_t *gk = pick_a ? &g[0] : &g[1];
            int i = pick_a ? oa[ia++] : ob[ib++];
            CHECK_OK(sc_reducer_mark_ready(gk->r, i, view ? NULL : gk->m.buf[i]));
        }
        CHECK_OK(sc_reducer_finalize(g[0].r));
        CHECK_OK(sc_reducer_finalize(g[1].r));
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < g[k].m.n && view; i++)
                memcpy(g[k].m.buf[i], sc_reducer_grad_view(g[k].r, i),
                       g[k].m.desc[i].count * 4);
            if (check_group(&g[k], &w, it, tol))
                return 1;
        }
        if (it == 0) {
            /* Rebuilt in the order its split rank 0 marked: bucket numbers never go down
             * along that order. */
            for (int k = 0; k < 2; k++) {
                int last = -1;
                for (int pos = 0; pos < g[k].m.n; pos++) {
                    int b;
                    size_t off;
                    CHECK_OK(sc_reducer_grad_bucket(g[k].r, g[k].order0[pos], &b, &off));
                    CHECK(b >= last, "reducer %d: gradient %d (position %d of split rank 0 "
                          "(world rank %d)'s order) is in bucket %d, before bucket %d", k,
                          g[k].order0[pos], pos, g[k].world_of[0], b, last);
                    last = b;
                }
            }
        }
    }
    __atomic_store_n(&busy.stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    CHECK(!busy.bad, "the world's all-reduces failed");
    return groups_finish(&w, g, 2);
}


/* 4 ranks in nodes of 2: the replica reducer's missing gradient on world rank 3 (its
 * split's rank 0) fails that split's finalize on both of its ranks, naming the rank both
 * ways; the other replica split, the shard reducers and the world go on, and so does the
 * failed reducer's next iteration. */
static int test_missing_gradient_in_one_split_leaves_the_others(int argc, char **argv)
{
    rt_world_t w;
    group_t g[2];

    (void)argc, (void)argv;
    if (hybrid_reducers_of_4(&w, g))
        return 1;
    for (int it = 0; it < 3; it++) {
        int skip = it == 1 && w.rank == 3 ? 2 : -1;
        for (int k = 0; k < 2; k++) {
            group_fill(&g[k], w.rank, it);
            if (group_mark_all(&g[k], w.rank, it, k == 0 ? skip : -1))
                return 1;
        }
        if (it == 1 && w.rank % 2 == 1) {
            CHECK_STATUS(sc_reducer_finalize(g[0].r), SC_ERR_INVALID_ARG);
            if (w.rank == 1)
                CHECK_SAYS("rank 0 (world rank 3) never marked gradient 2");
        } else {
            CHECK_OK(sc_reducer_finalize(g[0].r));
            if (check_group(&g[0], &w, it, SC_FLOAT32))
                return 1;
        }
        CHECK_OK(sc_reducer_finalize(g[1].r));
        if (check_group(&g[1], &w, it, SC_FLOAT32))
            return 1;
        if (world_sums(&w))
            return 1;
    }
    return groups_finish(&w, g, 2);
}

/* 4 ranks: a registration that differs on world rank 1 (rank 1 of the replica split whose
 * rank 0 is world rank 3) fails create on that split only, naming the ranks both ways;
 * the shard reducer made meanwhile works. */
static int test_registration_mismatch_in_one_split_names_world_ranks(int argc, char **argv)
{
    size_t counts_a[] = {300, 7, 2000, 64};
    static const size_t counts_b[] = {100, 900, 5};
    rt_world_t w;
    group_t g[2];
    sc_reducer_t *bad = NULL;
    sc_status_t st;

    (void)argc, (void)argv;
    if (hybrid_of_4(&w, g))
        return 1;
    if (w.rank == 1)
        counts_a[2] = 2001;
    rt_model_init(&g[0].m, 4, counts_a, NULL);
    rt_model_init(&g[1].m, 3, counts_b, NULL);
    st = sc_reducer_create(g[0].c.comm, g[0].m.desc, g[0].m.n, NULL, &bad);
    if (w.rank % 2 == 1) {
        CHECK(st == SC_ERR_MISMATCH, "create: %s: %s", sc_status_string(st), sc_last_error());
        printf("rank %d: %s\n", w.rank, sc_last_error());
        CHECK_SAYS("on rank 0 (world rank 3) but", "on rank 1 (");
    } else {
        CHECK_OK(st);
        CHECK_OK(sc_reducer_destroy(bad));
    }
    if (group_reducer(&g[1], "allreduce"))
        return 1;
    group_fill(&g[1], w.rank, 0);
    if (group_mark_all(&g[1], w.rank, 0, -1))
        return 1;
    CHECK_OK(sc_reducer_finalize(g[1].r));
    if (check_group(&g[1], &w, 0, SC_FLOAT32))
        return 1;
    return groups_finish(&w, g, 2);
}

/* 4 ranks: a reducer on the world and one on the replica split ({0, 2}, {1, 3}); odd
 * ranks finalize the split's first, even ranks the world's (an order without a cycle);
 * a third reducer on the shard split is created and destroyed while the other two are
 * mid-iteration, and the reducers are destroyed in different orders. */
static int test_reducers_on_overlapping_comms_in_different_orders(int argc, char **argv)
{
    static const size_t counts_a[] = {300, 7, 2000, 64, 5000};
    static const size_t counts_b[] = {100, 900, 5, 3000};
    static const size_t counts_c[] = {10, 20};
    const char *hook = argc > 0 ? argv[0] : "allreduce";
    sc_dtype_t tol = strcmp(hook, "allreduce") == 0 ? SC_FLOAT32 : SC_FLOAT16;
    rt_world_t w;
    group_t g[3];

    if (rt_world(&w))
        return 1;
    CHECK(w.size == 4, "4 ranks");
    if (group_split(&g[0], &w, 0, w.rank) || group_split(&g[1], &w, w.rank % 2, -w.rank) ||
        group_split(&g[2], &w, w.rank / 2, w.rank))
        return 1;
    rt_model_init(&g[0].m, 5, counts_a, NULL);
    rt_model_init(&g[1].m, 4, counts_b, NULL);
    rt_model_init(&g[2].m, 2, counts_c, NULL);
    if (group_reducer(&g[0], hook) || group_reducer(&g[1], hook))
        return 1;
    for (int it = 0; it < 4; it++) {
        int first = w.rank % 2;
        for (int k = 0; k < 2; k++) {
            group_fill(&g[k], w.rank, it);
            if (group_mark_all(&g[k], w.rank, it, -1))
                return 1;
        }
        if (it == 1) {
            /* A third reducer comes and goes, the others mid-iteration. */
            if (group_reducer(&g[2], hook))
                return 1;
            group_fill(&g[2], w.rank, it);
            if (group_mark_all(&g[2], w.rank, it, -1))
                return 1;
            CHECK_OK(sc_reducer_finalize(g[2].r));
            if (check_group(&g[2], &w, it, tol))
                return 1;
            CHECK_OK(sc_reducer_destroy(g[2].r));
        }
        CHECK_OK(sc_reducer_finalize(g[first].r));
        CHECK_OK(sc_reducer_finalize(g[1 - first].r));
        for (int k = 0; k < 2; k++)
            if (check_group(&g[k], &w, it, tol))
                return 1;
    }
    CHECK_OK(sc_reducer_destroy(g[w.rank % 2].r));
    CHECK_OK(sc_reducer_destroy(g[1 - w.rank % 2].r));
    for (int k = 0; k < 3; k++) {
        CHECK_OK(sc_comm_destroy(g[k].c.comm));
        group_free(&g[k]);
    }
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* 2 ranks: top-k reducers (density 0.05, error feedback) on the world and on a copy of it
 * whose ranks are reversed, the same gradients marked into both, interleaved: each keeps
 * residuals of its own, so their results are the same bits (every sum is exact), and so
 * are those of a reducer that ran alone before; autotune runs on both. */
static int test_topk_reducers_keep_their_own_residuals(int argc, char **argv)
{
    static const size_t counts[] = {3000, 70, 2000, 640, 5000};
    const int n = 5, iters = argc > 0 ? atoi(argv[0]) : 6;
    rt_world_t w;
    group_t g[2];
    uint64_t *alone;

    if (rt_world(&w))
        return 1;
    if (group_split(&g[0], &w, 0, w.rank) || group_split(&g[1], &w, 0, -w.rank))
        return 1;
    alone = calloc((size_t)iters, 8);
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < 2; k++) {
            sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
            sc_compress_config_t cc = SC_COMPRESS_CONFIG_INIT;
            sc_comm_hook_t h;
            if (pass == 0 && k == 1)
                continue;
            rt_model_init(&g[k].m, n, counts, NULL);
            cc.density = 0.05;
            CHECK_OK(sc_comm_hook_topk(&cc, &h));
            cfg.first_bucket_bytes = 2048;
            cfg.bucket_cap_bytes = 16384;
            cfg.hook = &h;
            cfg.autotune = 1;
            CHECK_OK(sc_reducer_create(g[k].c.comm, g[k].m.desc, n, &cfg, &g[k].r));
        }
        for (int it = 0; it < iters; it++) {
            uint64_t h[2] = {SC_TEST_HASH_INIT, SC_TEST_HASH_INIT};
            for (int k = 0; k < 2 - (pass == 0); k++)
                group_fill(&g[k], w.rank, it);
            for (int i = n - 1; i >= 0; i--)
                for (int k = 0; k < 2 - (pass == 0); k++)
                    CHECK_OK(sc_reducer_mark_ready(g[k].r, i, g[k].m.buf[i]));
            for (int k = 0; k < 2 - (pass == 0); k++) {
                CHECK_OK(sc_reducer_finalize(g[k].r));
            }
            for (int k = 0; k < 2 - (pass == 0); k++) {
                for (int i = 0; i < n; i++)
                    h[k] = sc_test_hash(h[k], g[k].m.buf[i], counts[i] * 4);
                if (rt_check_same_bits(&g[k].c, &g[k].m, g[k].m.buf))
                    return 1;
            }
            if (pass == 0)
                alone[it] = h[0];
            else
                CHECK(h[0] == alone[it] && h[1] == alone[it], "iteration %d: results %016"
                      PRIx64 " (world) and %016" PRIx64 " (reversed copy), alone %016" PRIx64,
                      it, h[0], h[1], alone[it]);
        }
        for (int k = 0; k < 2 - (pass == 0); k++) {
            CHECK_OK(sc_reducer_destroy(g[k].r));
            rt_model_free(&g[k].m);
        }
    }
    free(alone);
    for (int k = 0; k < 2; k++) {
        CHECK_OK(sc_comm_destroy(g[k].c.comm));
        free(g[k].world_of);
        free(g[k].used);
    }
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* Runs iterations [first, end) of g (top-k hook), each result's hash in hashes[it]. */
static int run_hashed(group_t *g, const rt_world_t *w, int first, int end, uint64_t *hashes)
{
    for (int it = first; it < end; it++) {
        uint64_t h = SC_TEST_HASH_INIT;
        group_fill(g, w->rank, it);
        /* A backward pass's order, the layout's: a new reducer's first layout is the one
         * its state was saved under. */
        for (int i = g->m.n - 1; i >= 0; i--)
            CHECK_OK(sc_reducer_mark_ready(g->r, i, g->m.buf[i]));
        CHECK_OK(sc_reducer_finalize(g->r));
        for (int i = 0; i < g->m.n; i++)
            h = sc_test_hash(h, g->m.buf[i], g->m.desc[i].count * 4);
        hashes[it] = h;
        if (rt_check_same_bits(&g->c, &g->m, g->m.buf))
            return 1;
    }
    return 0;
}

static int topk_reducer(group_t *g)
{
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_compress_config_t cc = SC_COMPRESS_CONFIG_INIT;
    sc_comm_hook_t h;

    cc.density = 0.05;
    CHECK_OK(sc_comm_hook_topk(&cc, &h));
    cfg.first_bucket_bytes = 2048;
    cfg.bucket_cap_bytes = 8192;
    cfg.hook = &h;
    CHECK_OK(sc_reducer_create(g->c.comm, g->m.desc, g->m.n, &cfg, &g->r));
    return 0;
}

/* 4 ranks: the top-k reducers of both replica splits and of both shard splits saved
 * after 3 iterations; new splits, new reducers, their states loaded (each rank its own):
 * the next iterations are the same bits as those of the reducers that went on. */
static int test_topk_state_resumes_on_new_splits(int argc, char **argv)
{
    static const size_t counts[] = {3000, 70, 2000, 640, 5000};
    rt_world_t w;
    group_t g[2];
    uint64_t want[2][6], got[2][6];
    void *saved[2];
    size_t len[2];

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    CHECK(w.size == 4, "4 ranks");
    for (int pass = 0; pass < 2; pass++) {
        if (group_split(&g[0], &w, w.rank % 2, -w.rank) ||
            group_split(&g[1], &w, w.rank / 2, w.rank))
            return 1;
        for (int k = 0; k < 2; k++) {
            rt_model_init(&g[k].m, 5 - k, counts + k, NULL);
            if (topk_reducer(&g[k]))
                return 1;
        }
        for (int k = 0; k < 2; k++) {
            if (pass == 0) {
                if (run_hashed(&g[k], &w, 0, 3, want[k]))
                    return 1;
                CHECK_OK(sc_reducer_hook_save(g[k].r, NULL, &len[k]));
                saved[k] = malloc(len[k]);
                CHECK_OK(sc_reducer_hook_save(g[k].r, saved[k], &len[k]));
                if (run_hashed(&g[k], &w, 3, 6, want[k]))
                    return 1;
            } else {
                CHECK_OK(sc_reducer_hook_load(g[k].r, saved[k], len[k]));
                if (run_hashed(&g[k], &w, 3, 6, got[k]))
                    return 1;
                for (int it = 3; it < 6; it++)
                    CHECK(got[k][it] == want[k][it], "reducer %d iteration %d: %016" PRIx64
                          " after the load, %016" PRIx64 " before", k, it, got[k][it],
                          want[k][it]);
                free(saved[k]);
            }
        }
        for (int k = 0; k < 2; k++) {
            CHECK_OK(sc_reducer_destroy(g[k].r));
            CHECK_OK(sc_comm_destroy(g[k].c.comm));
            group_free(&g[k]);
        }
    }
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

/* 4 ranks: world rank 3 destroys its replica reducer in iteration 1, before marking
 * (between) or with half its gradients marked (mid); world rank 1, its peer there, fails
 * that iteration at once naming it both ways, while the shard reducers and the world go
 * on. */
static int test_destroyed_replica_reducer_fails_only_its_peer(int argc, char **argv)
{
    int mid = argc > 0 && strcmp(argv[0], "mid") == 0;
    rt_world_t w;
    group_t g[2];

    if (hybrid_reducers_of_4(&w, g))
        return 1;
    for (int it = 0; it < 3; it++) {
        double t0 = rt_now();
        group_fill(&g[1], w.rank, it);
        if (group_mark_all(&g[1], w.rank, it, -1))
            return 1;
        CHECK_OK(sc_reducer_finalize(g[1].r));
        if (check_group(&g[1], &w, it, SC_FLOAT32))
            return 1;
        if (g[0].r && it == 1 && w.rank == 3 && !mid) {
            CHECK_OK(sc_reducer_destroy(g[0].r));
            g[0].r = NULL;
        }
        if (g[0].r) {
            group_fill(&g[0], w.rank, it);
            for (int i = 3; i >= 0; i--) {
                /* The peer's marks are refused once the abort came. */
                sc_status_t st = sc_reducer_mark_ready(g[0].r, i, g[0].m.buf[i]);
                CHECK(st == SC_SUCCESS || (w.rank == 1 && it == 1), "mark: %s",
                      sc_last_error());
                if (it == 1 && w.rank == 3 && i == 2)
                    break;
            }
            if (it == 1 && w.rank == 3) {
                CHECK_OK(sc_reducer_destroy(g[0].r));
                g[0].r = NULL;
            } else if (it == 1 && w.rank == 1) {
                CHECK_STATUS(sc_reducer_finalize(g[0].r), SC_ERR_ABORTED);
                CHECK_SAYS("rank 0 (world rank 3)");
                CHECK(rt_now() - t0 < 10.0, "the abort took %.1f s", rt_now() - t0);
                CHECK_OK(sc_reducer_destroy(g[0].r));
                g[0].r = NULL;
            } else {
                CHECK_OK(sc_reducer_finalize(g[0].r));
                if (check_group(&g[0], &w, it, SC_FLOAT32))
                    return 1;
            }
        }
        if (world_sums(&w))
            return 1;
    }
    return groups_finish(&w, g, 2);
}

/* One split's reducer driven through iters iterations on a thread of its own. */
typedef struct {
    group_t *g;
    rt_world_t *w;
    int iters, bad;
} driver_t;

static void *drive_group(void *arg)
{
    driver_t *d = arg;

    for (int it = 0; it < d->iters && !d->bad; it++) {
        group_fill(d->g, d->w->rank, it);
        if (group_mark_all(d->g, d->w->rank, it, -1) ||
            sc_reducer_finalize(d->g->r) != SC_SUCCESS ||
            check_group(d->g, d->w, it, SC_FLOAT32)) {
            fprintf(stderr, "rank %d: iteration %d: %s\n", rt_rank, it, sc_last_error());
            d->bad = 1;
        }
    }
    return NULL;
}

/* 4 ranks: each split's reducer driven by a thread of its own, the world's all-reduces on
 * the main thread meanwhile. */
static int test_reducers_on_threads_of_their_own(int argc, char **argv)
{
    const char *hook = argc > 0 ? argv[0] : "allreduce";
    static const size_t counts_a[] = {300, 7, 2000, 64, 9000};
    static const size_t counts_b[] = {100, 900, 5, 4000};
    rt_world_t w;
    group_t g[2];
    driver_t d[2];
    pthread_t th[2];

    if (hybrid_of_4(&w, g))
        return 1;
    rt_model_init(&g[0].m, 5, counts_a, NULL);
    rt_model_init(&g[1].m, 4, counts_b, NULL);
    if (group_reducer(&g[0], hook) || group_reducer(&g[1], hook))
        return 1;
    for (int k = 0; k < 2; k++) {
        d[k] = (driver_t){&g[k], &w, 20, 0};
        CHECK(pthread_create(&th[k], NULL, drive_group, &d[k]) == 0, "pthread_create");
    }
    for (int i = 0; i < 50; i++)
        if (world_sums(&w))
            return 1;
    for (int k = 0; k < 2; k++) {
        pthread_join(th[k], NULL);
        CHECK(!d[k].bad, "reducer %d failed", k);
    }
    return groups_finish(&w, g, 2);
}

int main(int argc, char **argv)
{
    static const rt_test_t tests[] = {
        {"hybrid_reducers_beside_a_busy_world", test_hybrid_reducers_beside_a_busy_world},
        {"missing_gradient_in_one_split_leaves_the_others",
         test_missing_gradient_in_one_split_leaves_the_others},
        {"registration_mismatch_in_one_split_names_world_ranks",
         test_registration_mismatch_in_one_split_names_world_ranks},
        {"reducers_on_overlapping_comms_in_different_orders",
         test_reducers_on_overlapping_comms_in_different_orders},
        {"topk_reducers_keep_their_own_residuals", test_topk_reducers_keep_their_own_residuals},
        {"topk_state_resumes_on_new_splits", test_topk_state_resumes_on_new_splits},
        {"destroyed_replica_reducer_fails_only_its_peer",
         test_destroyed_replica_reducer_fails_only_its_peer},
        {"reducers_on_threads_of_their_own", test_reducers_on_threads_of_their_own},
        {NULL, NULL}};
    return rt_main(tests, argc, argv);
}

