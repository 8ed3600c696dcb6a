/* Convergence with top-k compression (run on 4 ranks): a logistic regression on data
 * generated here (each rank its own samples: features of mixed scales, labels from a
 * hidden weight vector with 10% of them flipped), trained by full-batch gradient
 * descent three times for the same number of steps: gradients averaged dense
 * (sc_allreduce), with top-k at 1% density and error feedback, and with top-k at 1%
 * without error feedback. Top-k with error feedback ends within 5% of the dense run's
 * final loss; without error feedback it ends clearly worse (by more than 25%). */
#include "compress_test.h"

#define DIM 1000       /* weights (the last one a bias) */
#define SAMPLES 100    /* per rank */
#define STEPS 300
#define LR 0.5f
#define SEED 0xc0417ull

typedef enum { RUN_DENSE, RUN_TOPK_EF, RUN_TOPK_NO_EF } run_t;

static double uniform(uint64_t h)
{
    return (double)(rt_mix(h) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

/* Rank r's samples: x[s * DIM + j], labels y[s] in {-1, 1}. Feature j has scale
 * 2^-(j % 8), so that a few coordinates dominate every gradient. */
static void make_data(int r, float *x, float *y)
{
    for (int s = 0; s < SAMPLES; s++) {
        uint64_t base = SEED ^ ((uint64_t)r << 40) ^ ((uint64_t)s << 20);
        double dot = 0;
        for (int j = 0; j < DIM; j++) {
            double xj = j == DIM - 1 ? 1.0
                                     : uniform(base ^ (uint64_t)j) * ldexp(1.0, -(j % 8));
            x[(size_t)s * DIM + j] = (float)xj;
            dot += xj * uniform(SEED ^ 0xabcdefull ^ (uint64_t)j) * ldexp(1.0, j % 8);
        }
        y[s] = (dot >= 0) == (uniform(base ^ 0x7777777ull) > -0.8) ? 1.0f : -1.0f;
    }
}

/* Mean logistic loss of this rank's samples; grad (if not NULL) its gradient. */
static double loss_grad(const float *w, const float *x, const float *y, float *grad)
{
    double loss = 0;

    if (grad)
        memset(grad, 0, DIM * sizeof(float));
    for (int s = 0; s < SAMPLES; s++) {
        const float *xs = x + (size_t)s * DIM;
        double z = 0, m, sig;
        for (int j = 0; j < DIM; j++)
            z += (double)w[j] * xs[j];
        m = y[s] * z;
        loss += m > 0 ? log1p(exp(-m)) : -m + log1p(exp(m));
        sig = 1.0 / (1.0 + exp(m)); /* d loss / d m = -sig */
        if (grad)
            for (int j = 0; j < DIM; j++)
                grad[j] -= (float)(sig * y[s] * xs[j] / SAMPLES);
    }
    return loss / SAMPLES;
}

/* Trains from zero weights; *final is the mean loss over every rank's samples. */
static int train(rt_world_t *w, run_t run, const float *x, const float *y, double *final)
{
    sc_compress_config_t cfg = SC_COMPRESS_CONFIG_INIT;
    float wts[DIM] = {0}, grad[DIM], avg[DIM];
    sc_compressor_t *c = NULL;
    double mine, sum;

    cfg.density = 0.01;
    cfg.error_feedback = run == RUN_TOPK_EF;
    if (run != RUN_DENSE)
        CHECK_OK(sc_compressor_create(&cfg, &c));
    for (int t = 0; t < STEPS; t++) {
        loss_grad(wts, x, y, grad);
        if (run == RUN_DENSE)
            CHECK_OK(sc_allreduce(grad, avg, DIM, SC_FLOAT32, SC_AVG, w->comm, NULL, NULL));
        else
            CHECK_OK(sc_compressed_allreduce(c, w->comm, 0, grad, avg, DIM, SC_FLOAT32,
                                             SC_AVG));
        for (int j = 0; j < DIM; j++)
            wts[j] -= LR * avg[j];
    }
    sc_compressor_destroy(c);
    mine = loss_grad(wts, x, y, NULL);
    CHECK_OK(sc_allreduce(&mine, &sum, 1, SC_FLOAT64, SC_SUM, w->comm, NULL, NULL));
    *final = sum / w->size;
    return 0;
}

static int test_converges_with_error_feedback(int argc, char **argv)
{
    float *x = malloc((size_t)SAMPLES * DIM * sizeof(float)), y[SAMPLES];
    double dense, ef, no_ef;
    rt_world_t w;

    (void)argc, (void)argv;
    if (rt_world(&w))
        return 1;
    make_data(w.rank, x, y);
    if (train(&w, RUN_DENSE, x, y, &dense) || train(&w, RUN_TOPK_EF, x, y, &ef) ||
        train(&w, RUN_TOPK_NO_EF, x, y, &no_ef))
        return 1;
    if (w.rank == 0)
        printf("final loss after %d steps: dense %.5f, top-k 1%% with error feedback %.5f "
               "(%+.1f%%), without %.5f (%+.1f%%); initial %.5f\n", STEPS, dense, ef,
               100 * (ef / dense - 1), no_ef, 100 * (no_ef / dense - 1), log(2.0));
    CHECK(ef <= 1.05 * dense, "top-k with error feedback ends at %.5f, more than 5%% above "
          "dense training's %.5f", ef, dense);
    CHECK(no_ef > 1.25 * dense, "top-k without error feedback ends at %.5f, not clearly "
          "worse than dense training's %.5f", no_ef, dense);
    free(x);
    CHECK_OK(sc_comm_destroy(w.comm));
    return 0;
}

int main(int argc, char **argv)
{
    static const rt_test_t tests[] = {
        {"converges_with_error_feedback", test_converges_with_error_feedback},
        {NULL, NULL}};
    return rt_main(tests, argc, argv);
}
