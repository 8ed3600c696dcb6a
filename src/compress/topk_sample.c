/* A sample of x's keys for the threshold estimates of the exact and the approximate
 * selection: whole cache lines (16 consecutive elements) at a pseudo-random place in
 * each of equal strata, so a sample costs one memory access per 16 keys. An x filled on
 * the fly is filled ahead where the sample reads it. */
#include "compress/topk_internal.h"
#include "core/error.h"

#define SC_TOPK_SAMPLE_RUN 16

static uint64_t topk_sample_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

sc_status_t sc_topk_sample(sc_topk_t *topk, const sc_topk_job_t *job, size_t want,
                           uint64_t seed, size_t *m)
{
    size_t runs = want / SC_TOPK_SAMPLE_RUN, stratum, count = 0;
    sc_status_t st;

    if (runs > job->n / SC_TOPK_SAMPLE_RUN)
        runs = job->n / SC_TOPK_SAMPLE_RUN;
    if (runs == 0)
        runs = 1;
    stratum = job->n / runs;
    st = sc_topk_keys_reserve(topk, runs * SC_TOPK_SAMPLE_RUN);
    if (st != SC_SUCCESS)
        return st;
    for (size_t r = 0; r < runs; r++) {
        size_t span = stratum > SC_TOPK_SAMPLE_RUN ? stratum - SC_TOPK_SAMPLE_RUN : 0;
        size_t at = r * stratum + (span ? topk_sample_mix(seed + r) % span : 0);
        size_t end = at + SC_TOPK_SAMPLE_RUN < job->n ? at + SC_TOPK_SAMPLE_RUN : job->n;

        if (job->filler)
            job->filler->fill(job->filler->ctx, at, end);
        for (size_t i = at; i < end; i++)
            topk->keys[count++] =
                sc_topk_key(sc_topk_bits_at(job->x, i, job->fmt.width), &job->fmt);
    }
    *m = count;
    return SC_SUCCESS;
}
