/* The per-sender choice between UCX's eager and rendezvous protocols for a collective's
 * mid-size messages on one node (proto_choice.h). On this kind of VM eager is 1.2-1.4x
 * faster at 32-128 KiB while the two vCPUs share a cache and 2-4x slower while they do
 * not (the FIFO's pieces then cross between the dies twice, a CMA copy once), and the
 * state changes while a job runs: so each rank keeps a smoothed cost per protocol and
 * size class, takes the cheaper one, and tries the other now and then. The receiver
 * takes either protocol, but one end eager and the other not is slower than both, so
 * the ranks combine their preferences through their headers (schedule_exec.c). Caller
 * holds the transport's lock. */
#include "collectives/proto_choice.h"
#include "core/log.h"

int sc_proto_class_of(size_t max_msg)
{
    size_t top = SC_PROTO_MIN_BYTES * 2;

    if (max_msg <= SC_PROTO_MIN_BYTES || max_msg > SC_PROTO_MAX_BYTES)
        return -1;
    for (int c = 0; c < SC_PROTO_CLASSES; c++, top *= 2)
        if (max_msg <= top)
            return c;
    return -1;
}

uint8_t sc_proto_prefs(const sc_proto_t *p)
{
    uint8_t m = 0;

    for (int c = 0; c < SC_PROTO_CLASSES; c++)
        m |= (uint8_t)((p->mode == SC_PROTO_AUTO ? p->cls[c].eager
                                                 : p->mode == SC_PROTO_EAGER_ON) << c);
    return m;
}

int sc_proto_choose(const sc_proto_t *p, uint32_t *ops, int cls, int agreed_eager)
{
    uint32_t n;

    if (p->mode != SC_PROTO_AUTO || cls < 0 || cls >= SC_PROTO_CLASSES)
        return p->mode == SC_PROTO_EAGER_ON;
    n = ops[cls]++;
    if (n < 2 * SC_PROTO_WARMUP)
        return (int)(n & 1);
    if (n % (n < SC_PROTO_EARLY_OPS ? SC_PROTO_EXPLORE_EARLY : SC_PROTO_EXPLORE_EVERY) == 0)
        return !agreed_eager;
    return agreed_eager != 0;
}

void sc_proto_record(sc_proto_t *p, int cls, int eager, double seconds, size_t bytes)
{
    sc_proto_class_t *c;
    double cost;
    int e = eager ? 1 : 0;

    if (p->mode != SC_PROTO_AUTO || cls < 0 || cls >= SC_PROTO_CLASSES || bytes == 0 ||
        !(seconds >= 0.0))
        return;
    c = &p->cls[cls];
    cost = seconds / (double)bytes;
    /* The first sample of each is dropped (a first op pays for page faults); then a
     * plain mean up to the warm-up count, and a moving average after it: slow for the
     * preferred protocol, sampled every op, and fast for the other, sampled once in
     * SC_PROTO_EXPLORE_EVERY ops, so that a change of state is followed within about
     * four tries (a lucky try that switches wrongly is undone by the next few ops). */
    if (c->samples[e]++ == 0)
        return;
    if (c->samples[e] <= SC_PROTO_WARMUP)
        c->cost[e] += (cost - c->cost[e]) / (double)(c->samples[e] - 1);
    else
        c->cost[e] += (cost - c->cost[e]) * (e == c->eager ? 0.125 : 0.5);
    if (c->samples[0] > 1 && c->samples[1] > 1 &&
        c->cost[!c->eager] < SC_PROTO_SWITCH_BELOW * c->cost[c->eager]) {
        c->eager = (uint8_t)!c->eager;
        sc_log(SC_LOG_DEBUG, "messages of %zu-%zu KiB go %s after %u ops of their class: "
               "%.3g against %.3g ns per byte", (SC_PROTO_MIN_BYTES << cls) / 1024,
               (SC_PROTO_MIN_BYTES << (cls + 1)) / 1024, c->eager ? "eagerly" : "by rendezvous",
               c->samples[0] + c->samples[1], c->cost[c->eager] * 1e9,
               c->cost[!c->eager] * 1e9);
    }
}
