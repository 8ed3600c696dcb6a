/* Example: a data-parallel training loop driving the gradient reducer the way a
 * framework's optimizer does. A 2-layer MLP (tanh hidden layer, logistic output) learns
 * a teacher network's labels; every rank trains on its own shard of generated data.
 *
 * - The gradients live in bucket memory (gradient_as_bucket_view): the backward pass
 *   writes each one straight into its view and marks it ready as soon as it is
 *   produced, last layer first, so that a full bucket's all-reduce overlaps the rest of
 *   the backward.
 * - Gradient accumulation: each step runs MICRO micro-batches; all but the last run
 *   without sync (nothing is communicated), accumulating into the views.
 * - --topk DENSITY reduces the buckets with the top-k hook (error feedback on) instead
 *   of the plain all-reduce.
 *
 * At the end every rank checks that its parameters are bitwise those of every other
 * rank (they must be: each applies the same averaged gradients), and rank 0 that the
 * loss fell below 0.6x its first value. Run with `scrun -n 2 ./train_data_parallel [--topk 0.05]`. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shardcomm/shardcomm.h>

#define IN 32      /* input features */
#define HID 64     /* hidden units */
#define BATCH 64   /* samples per micro-batch */
#define MICRO 2    /* micro-batches per optimizer step */
#define STEPS 200
#define LR 1.0f
#define TAIL 20   /* the final loss: the mean of the last TAIL steps' */

/* The parameters in registration order (the order of the forward pass); the backward
 * produces their gradients in reverse. */
enum { P_W1, P_B1, P_W2, P_B2, NPARAMS };
static const sc_grad_desc_t descs[NPARAMS] = {
    {HID * IN, SC_FLOAT32, "fc1.weight"},
    {HID, SC_FLOAT32, "fc1.bias"},
    {HID, SC_FLOAT32, "fc2.weight"},
    {1, SC_FLOAT32, "fc2.bias"},
};

typedef struct {
    float *p[NPARAMS];
} model_t;

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

static float rng_normal(uint64_t *s)
{
    double u = ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
    double v = ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static int model_init(model_t *m, uint64_t seed, float scale)
{
    for (int i = 0; i < NPARAMS; i++) {
        m->p[i] = malloc(descs[i].count * sizeof(float));
        if (!m->p[i])
            return -1;
        for (size_t j = 0; j < descs[i].count; j++)
            m->p[i][j] = scale * rng_normal(&seed) / sqrtf(i == P_W1 ? IN : HID);
    }
    return 0;
}

/* Forward of one sample: the hidden activations in h, the output logit returned. */
static float forward(const model_t *m, const float *x, float *h)
{
    float z = m->p[P_B2][0];

    for (int j = 0; j < HID; j++) {
        float a = m->p[P_B1][j];
        for (int i = 0; i < IN; i++)
            a += m->p[P_W1][j * IN + i] * x[i];
        h[j] = tanhf(a);
        z += m->p[P_W2][j] * h[j];
    }
    return z;
}

/* One micro-batch: forward, logistic loss, backward. Gradients are added into g[] (the
 * reducer's views) in the order the backward produces them, each marked ready as soon
 * as it is complete. Returns the batch's mean loss, or NAN when a mark fails. */
static float micro_batch(const model_t *m, sc_reducer_t *r, const float *xs, const float *ys)
{
    static float h[BATCH][HID], dz[BATCH];
    float *g[NPARAMS], loss = 0.0f;

    for (int i = 0; i < NPARAMS; i++)
        g[i] = sc_reducer_grad_view(r, i); /* ask each time: a rebuild moves them */
    for (int b = 0; b < BATCH; b++) {
        float z = forward(m, xs + b * IN, h[b]);
        float p = 1.0f / (1.0f + expf(-z));
        loss += -(ys[b] * logf(p + 1e-7f) + (1.0f - ys[b]) * logf(1.0f - p + 1e-7f));
        dz[b] = (p - ys[b]) / BATCH;
    }
    /* fc2 first, as autograd would: its gradients are ready before fc1's. */
    for (int b = 0; b < BATCH; b++)
        g[P_B2][0] += dz[b];
    if (sc_reducer_mark_ready(r, P_B2, NULL) != SC_SUCCESS)
        return NAN;
    for (int b = 0; b < BATCH; b++)
        for (int j = 0; j < HID; j++)
            g[P_W2][j] += dz[b] * h[b][j];
    if (sc_reducer_mark_ready(r, P_W2, NULL) != SC_SUCCESS)
        return NAN;
    for (int b = 0; b < BATCH; b++)
        for (int j = 0; j < HID; j++) {
            float da = dz[b] * m->p[P_W2][j] * (1.0f - h[b][j] * h[b][j]);
            g[P_B1][j] += da;
            for (int i = 0; i < IN; i++)
                g[P_W1][j * IN + i] += da * xs[b * IN + i];
        }
    if (sc_reducer_mark_ready(r, P_B1, NULL) != SC_SUCCESS ||
        sc_reducer_mark_ready(r, P_W1, NULL) != SC_SUCCESS)
        return NAN;
    return loss / BATCH;
}

/* This rank's shard: inputs from its own seed, labels from the shared teacher. */
static void make_batch(const model_t *teacher, uint64_t *s, float *xs, float *ys)
{
    float h[HID];

    for (int b = 0; b < BATCH; b++) {
        for (int i = 0; i < IN; i++)
            xs[b * IN + i] = rng_normal(s);
        ys[b] = forward(teacher, xs + b * IN, h) > 0.0f ? 1.0f : 0.0f;
    }
}

/* Whether every rank holds bitwise the same parameters: their max and min over ranks
 * equal this rank's. */
static int params_agree(const model_t *m, sc_comm_t *comm)
{
    int same = 1;

    for (int i = 0; i < NPARAMS && same; i++) {
        size_t n = descs[i].count;
        float *hi = malloc(n * sizeof(float)), *lo = malloc(n * sizeof(float));
        if (!hi || !lo || sc_allreduce(m->p[i], hi, n, SC_FLOAT32, SC_MAX, comm, NULL, NULL) ||
            sc_allreduce(m->p[i], lo, n, SC_FLOAT32, SC_MIN, comm, NULL, NULL))
            same = 0;
        else
            same = memcmp(hi, m->p[i], n * sizeof(float)) == 0 &&
                   memcmp(lo, m->p[i], n * sizeof(float)) == 0;
        free(hi);
        free(lo);
    }
    return same;
}

/* A failed call: the library's sentence, after the call's name where the sentence does
 * not name it already (most do: "sc_reducer_create: ..."). */
static int fail(const char *call)
{
    const char *why = sc_last_error();

    if (strstr(why, call))
        fprintf(stderr, "train_data_parallel: %s\n", why);
    else
        fprintf(stderr, "train_data_parallel: %s: %s\n", call, why);
    return 1;
}

int main(int argc, char **argv)
{
    static float xs[BATCH * IN], ys[BATCH];
    sc_reducer_config_t cfg = SC_REDUCER_CONFIG_INIT;
    sc_compress_config_t ccfg = SC_COMPRESS_CONFIG_INIT;
    sc_comm_hook_t hook;
    sc_reducer_t *r;
    sc_comm_t *comm;
    model_t m, teacher;
    float first = 0.0f, last = 0.0f;
    uint64_t data_seed;
    int rank, ok;

    if (argc == 3 && strcmp(argv[1], "--topk") == 0) {
        ccfg.density = atof(argv[2]);
        ccfg.warmup_steps = 5;
        if (sc_comm_hook_topk(&ccfg, &hook) != SC_SUCCESS)
            return fail("sc_comm_hook_topk");
        cfg.hook = &hook;
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [--topk DENSITY]\n", argv[0]);
        return 2;
    }
    if (sc_comm_init_from_env(&comm) != SC_SUCCESS)
        return fail("sc_comm_init_from_env");
    rank = sc_comm_rank(comm);
    data_seed = 0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1);
    /* Every rank starts from the same parameters (same seed), as after a broadcast. */
    if (model_init(&m, 42, 1.0f) != 0 || model_init(&teacher, 7, 3.0f) != 0)
        return 1;
    cfg.gradient_as_bucket_view = 1;
    cfg.bucket_cap_bytes = 4096; /* small, so that this small model has several buckets */
    cfg.first_bucket_bytes = 512;
    if (sc_reducer_create(comm, descs, NPARAMS, &cfg, &r) != SC_SUCCESS)
        return fail("sc_reducer_create");

    for (int step = 0; step < STEPS; step++) {
        float loss = 0.0f;

        for (int i = 0; i < NPARAMS; i++) /* zero_grad */
            memset(sc_reducer_grad_view(r, i), 0, descs[i].count * sizeof(float));
        for (int mb = 0; mb < MICRO; mb++) {
            /* Only the last micro-batch communicates (DDP's no_sync() for the others). */
            if (sc_reducer_set_sync(r, mb == MICRO - 1) != SC_SUCCESS)
                return fail("sc_reducer_set_sync");
            make_batch(&teacher, &data_seed, xs, ys);
            loss += micro_batch(&m, r, xs, ys);
            if (isnan(loss))
                return fail("sc_reducer_mark_ready");
            if (sc_reducer_finalize(r) != SC_SUCCESS)
                return fail("sc_reducer_finalize");
        }
        /* The views hold the gradients averaged over ranks, summed over micro-batches. */
        for (int i = 0; i < NPARAMS; i++) {
            const float *g = sc_reducer_grad_view(r, i);
            for (size_t j = 0; j < descs[i].count; j++)
                m.p[i][j] -= LR / MICRO * g[j];
        }
        loss /= MICRO;
        if (sc_allreduce(&loss, &loss, 1, SC_FLOAT32, SC_AVG, comm, NULL, NULL) != SC_SUCCESS)
            return fail("sc_allreduce");
        if (step == 0)
            first = loss;
        if (step >= STEPS - TAIL)
            last += loss / TAIL;
        if (rank == 0 && (step % 40 == 0 || step == STEPS - 1))
            printf("step %3d  loss %.4f\n", step, loss);
    }
    ok = params_agree(&m, comm);
    if (rank == 0) {
        sc_reducer_stats_t st;
        if (sc_reducer_stats(r, &st) == SC_SUCCESS)
            printf("%d buckets, last step %.3f ms, %.3f ms from the last gradient to "
                   "finalize's return\n", st.buckets, st.iteration_s * 1e3,
                   st.last_ready_to_done_s * 1e3);
        printf("parameters %s on every rank; loss %.4f at the first step, %.4f over the "
               "last %d\n", ok ? "bitwise equal" : "DIFFER", first, last, TAIL);
        if (!(last < 0.6f * first)) {
            fprintf(stderr, "train_data_parallel: the loss did not fall below 0.6x its "
                    "first value\n");
            ok = 0;
        }
    }
    if (sc_reducer_destroy(r) != SC_SUCCESS)
        return fail("sc_reducer_destroy");
    sc_comm_destroy(comm);
    for (int i = 0; i < NPARAMS; i++) {
        free(m.p[i]);
        free(teacher.p[i]);
    }
    return ok ? 0 : 1;
}
