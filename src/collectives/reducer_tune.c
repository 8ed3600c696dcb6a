/* Bucket-cap autotuning: over the first synced iterations after the rebuild, the
 * candidate caps take turns, SC_TUNE_ROUNDS times round, each for SC_TUNE_SAMPLES
 * iterations a turn; the fastest counted iteration of each cap (the first of a turn
 * warms new bucket memory and is not counted) decides. Taking turns rather than
 * measuring each cap once keeps a slow spell of a shared machine from deciding. The
 * times are the slowest rank's, from finalize's all-reduce, so every rank holds the
 * same numbers and makes the same choice at the same iteration: no broadcast needed. */
#include <stdio.h>

#include "collectives/reducer_internal.h"
#include "core/log.h"

#define SC_MIB ((size_t)1 << 20)

void sc_reducer_tune_init(sc_reducer_tune_t *t, size_t total_bytes)
{
    static const size_t mib[SC_TUNE_MAX_CANDIDATES] = {1, 5, 25, 100};
    size_t clip = total_bytes ? total_bytes : 1;

    t->ncand = 0;
    /* Caps past the model's size all give one bucket per dtype: try that once. */
    for (int i = 0; i < SC_TUNE_MAX_CANDIDATES; i++) {
        size_t c = mib[i] * SC_MIB < clip ? mib[i] * SC_MIB : clip;
        if (t->ncand && t->caps[t->ncand - 1] == c)
            continue;
        t->best_s[t->ncand] = -1.0;
        t->caps[t->ncand++] = c;
    }
    t->active = 1;
    t->done = 0;
    t->cand = 0;
    t->round = 0;
    t->samples = 0;
}

size_t sc_reducer_tune_step(sc_reducer_t *r, double iter_s)
{
    sc_reducer_tune_t *t = &r->tune;
    char tried[256];
    size_t used = 0;
    int best = 0;

    if (r->synced == 0) {
        /* The rebuild's iteration: measured under the initial layout, not counted. */
        if (t->ncand > 1)
            return t->caps[0];
        t->active = 0;
        t->done = 1;
        sc_log(SC_LOG_INFO, "reducer: autotune: the model (%zu bytes) fits one bucket at "
                            "every candidate cap; cap %zu bytes", t->caps[0], t->caps[0]);
        return t->caps[0];
    }
    if (++t->samples > 1 && (t->best_s[t->cand] < 0 || iter_s < t->best_s[t->cand]))
        t->best_s[t->cand] = iter_s;
    if (t->samples < SC_TUNE_SAMPLES)
        return 0;
    t->samples = 0;
    if (++t->cand < t->ncand)
        return t->caps[t->cand];
    if (++t->round < SC_TUNE_ROUNDS) {
        t->cand = 0;
        return t->caps[0];
    }
    tried[0] = '\0';
    for (int c = 0; c < t->ncand; c++) {
        if (t->best_s[c] < t->best_s[best])
            best = c;
        if (used < sizeof(tried))
            used += (size_t)snprintf(tried + used, sizeof(tried) - used, "%s%.2f MiB: %.3f ms",
                                     c ? ", " : "", (double)t->caps[c] / (double)SC_MIB,
                                     t->best_s[c] * 1e3);
    }
    t->active = 0;
    t->done = 1;
    sc_log(SC_LOG_INFO, "reducer: autotune chose bucket cap %.2f MiB (%zu bytes) after %ld "
                        "iterations (fastest iteration per cap, slowest rank: %s)",
           (double)t->caps[best] / (double)SC_MIB, t->caps[best], r->synced + 1, tried);
    return t->caps[best];
}
