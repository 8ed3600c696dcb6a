/* Reducers on split communicators, several at once, the way hybrid sharding (HSDP) and
 * DeepSpeed use them: 4 ranks in "nodes" of 2, a replica split (equal local index, its
 * ranks in reverse world order, so that its rank 0 is world rank 2 or 3) and a shard
 * split (one node). One behaviour per test (argv[1]):
 *   missing_gradient_in_one_split_leaves_the_others   world rank 3 skips a gradient of
 *       its replica reducer: that split's finalize fails on both its ranks, naming the
 *       rank as a split's rank and a world rank; the other reducers and the world go on
 *   registration_mismatch_in_one_split_names_world_ranks   a gradient that differs on
 *       world rank 1 fails create on its replica split only, naming both ranks so */
#include "reducer_test.h"

#define SEED 0x5eed5917ull

typedef struct {
    rt_world_t c;       /* the split as a "world" of its own, for the shared checks */
    int *world_of;      /* world rank of each split rank */
    int *used;          /* per world rank: a member of this split */
    rt_model_t m;
    sc_reducer_t *r;
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

/* 4 ranks in nodes of 2: the replica reducer's missing gradient on world rank 3 (its
 * split's rank 0) fails that split's finalize on both of its ranks, naming the rank both
 * ways; the other replica split, the shard reducers and the world go on, and so does the
 * failed reducer's next iteration. */
static int test_missing_gradient_in_one_split_leaves_the_others(int argc, char **argv)
{
    static const size_t counts_a[] = {300, 7, 2000, 64};
    static const size_t counts_b[] = {100, 900, 5};
    rt_world_t w;
    group_t g[2];
    int32_t one = 1;

    (void)argc, (void)argv;
    if (hybrid_of_4(&w, g))
        return 1;
    rt_model_init(&g[0].m, 4, counts_a, NULL);
    rt_model_init(&g[1].m, 3, counts_b, NULL);
    if (group_reducer(&g[0], "allreduce") || group_reducer(&g[1], "allreduce"))
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
        CHECK_OK(sc_allreduce(&one, &one, 1, SC_INT32, SC_SUM, w.comm, NULL, NULL));
        CHECK(one == 4, "the world's sum is %d", (int)one);
        one = 1;
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


int main(int argc, char **argv)
{
    static const rt_test_t tests[] = {
        {"missing_gradient_in_one_split_leaves_the_others",
         test_missing_gradient_in_one_split_leaves_the_others},
        {"registration_mismatch_in_one_split_names_world_ranks",
         test_registration_mismatch_in_one_split_names_world_ranks},
        {NULL, NULL}};
    return rt_main(tests, argc, argv);
}
