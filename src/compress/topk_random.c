/* Random-k on the host (SC_TOPK_RANDOM): k distinct indices drawn uniformly without
 * replacement by Floyd's algorithm into a bitmap of n bits (k draws, n/64 words), read
 * back in index order. The draws come from a generator seeded with config.seed and the
 * number of calls made, so a selector gives the same sequence of selections every run. */
#include <stdlib.h>

#include "compress/topk_internal.h"
#include "core/error.h"

#define SC_RANDOM_AHEAD 16

static uint64_t topk_random_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* splitmix64 */
static uint64_t topk_random_next(uint64_t *s)
{
    return topk_random_mix(*s += 0x9e3779b97f4a7c15ull);
}

/* Uniform in [0, bound), bound > 0, without modulo bias (Lemire's multiply and reject). */
static uint64_t topk_random_below(uint64_t *s, uint64_t bound)
{
    unsigned __int128 m = (unsigned __int128)topk_random_next(s) * bound;

    if ((uint64_t)m < bound) {
        uint64_t reject = -bound % bound;
        while ((uint64_t)m < reject)
            m = (unsigned __int128)topk_random_next(s) * bound;
    }
    return (uint64_t)(m >> 64);
}

sc_status_t sc_topk_random_host(sc_topk_t *topk, const sc_topk_job_t *unfilled)
{
    sc_topk_job_t filled, *job = &filled;
    size_t words = (unfilled->n + 63) / 64, pos = 0, ahead[SC_RANDOM_AHEAD], head = 0,
           queued = 0;
    uint64_t *marks = topk->marks, s;

    if (sc_topk_fill_all(topk, unfilled, &filled) != SC_SUCCESS)
        return SC_ERR_NO_MEMORY;
    if (words > topk->marks_cap) {
        marks = realloc(topk->marks, words * sizeof(*marks));
        if (!marks)
            return sc_error(SC_ERR_NO_MEMORY, "sc_topk_select: out of memory for a bitmap "
                            "of %zu elements", job->n);
        topk->marks = marks;
        topk->marks_cap = words;
    }
    memset(marks, 0, words * sizeof(*marks));
    /* One stream per call: the seed and the call count, mixed. */
    s = topk_random_mix(topk->config.seed ^ topk_random_mix(topk->random_calls + 1));
    /* Floyd: for j = n-k .. n-1 draw t in [0, j]; take t, or j when t was taken. Every
     * k-subset comes out with the same probability. */
    for (size_t j = job->n - job->k; j < job->n; j++) {
        size_t t = (size_t)topk_random_below(&s, (uint64_t)j + 1);
        if (marks[t / 64] >> (t % 64) & 1)
            t = j;
        marks[t / 64] |= (uint64_t)1 << (t % 64);
    }
    /* The values are read in index order, each a cache miss: a queue of the next
     * SC_RANDOM_AHEAD indices, prefetched as they enter it, keeps that many in flight. */
    for (size_t w = 0; w < words; w++)
        for (uint64_t m = marks[w]; m; m &= m - 1) {
            size_t i = w * 64 + (size_t)__builtin_ctzll(m);
            __builtin_prefetch((const char *)job->x + i * job->fmt.width);
            if (queued == SC_RANDOM_AHEAD) {
                size_t o = ahead[head];
                sc_topk_job_put(job, pos++, o, sc_topk_bits_at(job->x, o, job->fmt.width));
                ahead[head] = i;
                head = (head + 1) % SC_RANDOM_AHEAD;
            } else {
                ahead[(head + queued++) % SC_RANDOM_AHEAD] = i;
            }
        }
    for (; queued; queued--, head = (head + 1) % SC_RANDOM_AHEAD)
        sc_topk_job_put(job, pos++, ahead[head],
                        sc_topk_bits_at(job->x, ahead[head], job->fmt.width));
    topk->random_calls++;
    return SC_SUCCESS;
}
