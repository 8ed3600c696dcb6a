/* The registration check of sc_reducer_create: every rank's gradients and settings
 * against rank 0's (sc_comm_agree), so that a difference is an error on every rank that
 * names the first differing gradient (found by a second exchange) and both ranks, never
 * a hang (or a silent mismatch of bucket sizes later). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/agree.h"
#include "collectives/reducer_internal.h"
#include "core/comm_internal.h"

/* One gradient as the mismatch search exchanges it. */
#define SC_AGREE_NAME_MAX 48
typedef struct {
    int64_t present;     /* 0: this rank registered fewer gradients */
    int64_t count;
    int64_t dtype;
    uint64_t name_hash;
    char name[SC_AGREE_NAME_MAX];
} sc_agree_grad_t;

static uint64_t sc_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *q = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ q[i]) * 0x100000001b3ull;
    return h;
}

#define SC_FNV_INIT 0xcbf29ce484222325ull

static uint64_t sc_name_hash(const char *name)
{
    /* NULL and "" differ from every real name the same way: both mean "unnamed". */
    return sc_fnv(SC_FNV_INIT, name ? name : "", name ? strlen(name) + 1 : 1);
}

static void sc_agree_grad(const sc_grad_desc_t *d, sc_agree_grad_t *a)
{
    memset(a, 0, sizeof(*a));
    a->present = 1;
    a->count = (int64_t)d->count;
    a->dtype = (int64_t)d->dtype;
    a->name_hash = sc_name_hash(d->name);
    snprintf(a->name, sizeof(a->name), "%s", d->name ? d->name : "");
}

static void sc_agree_describe(const sc_agree_grad_t *a, char *buf, size_t len)
{
    if (!a->present)
        snprintf(buf, len, "absent");
    else
        snprintf(buf, len, "\"%s\" (%" PRId64 " elements of %s)", a->name, a->count,
                 sc_dtype_name((sc_dtype_t)a->dtype));
}

/* Both ranks' first max(n0, nr) gradients, broadcast from each in turn, then the first
 * index where they differ. Every rank takes part with the same counts. */
static sc_status_t sc_agree_locate(sc_comm_t *comm, const sc_grad_desc_t *grads, int n,
                                   int me, int other, int64_t n0, int64_t nr)
{
    int64_t k = n0 > nr ? n0 : nr;
    sc_agree_grad_t *a = calloc((size_t)k, sizeof(*a)), *b = calloc((size_t)k, sizeof(*b));
    size_t bytes = (size_t)k * sizeof(*a);
    char da[160], db[160];
    sc_status_t st;
    int64_t i;

    if (!a || !b) {
        free(a);
        free(b);
        return sc_error(SC_ERR_NO_MEMORY, "sc_reducer_create: out of memory comparing "
                        "the registered gradients");
    }
    for (i = 0; i < n && i < k; i++) {
        if (me == 0)
            sc_agree_grad(&grads[i], &a[i]);
        if (me == other)
            sc_agree_grad(&grads[i], &b[i]);
    }
    st = sc_broadcast(a, a, bytes, SC_UINT8, 0, comm, NULL, NULL);
    if (st == SC_SUCCESS)
        st = sc_broadcast(b, b, bytes, SC_UINT8, other, comm, NULL, NULL);
    if (st != SC_SUCCESS)
        goto out;
    for (i = 0; i < k; i++)
        if (a[i].present != b[i].present || a[i].count != b[i].count ||
            a[i].dtype != b[i].dtype || a[i].name_hash != b[i].name_hash)
            break;
    if (i == k) {
        st = sc_error(SC_ERR_INTERNAL, "sc_reducer_create: the gradient lists of %s and %s "
                      "hash differently but compare equal", sc_comm_rank_name(comm, 0).s,
                      sc_comm_rank_name(comm, other).s);
        goto out;
    }
    sc_agree_describe(&a[i], da, sizeof(da));
    sc_agree_describe(&b[i], db, sizeof(db));
    st = sc_error(SC_ERR_MISMATCH,
                  "sc_reducer_create: ranks registered different gradients: gradient %" PRId64
                  " is %s on %s but %s on %s (rank 0 registered %" PRId64
                  " gradients, rank %d %" PRId64 ")",
                  i, da, sc_comm_rank_name(comm, 0).s, db, sc_comm_rank_name(comm, other).s,
                  n0, other, nr);
out:
    free(a);
    free(b);
    return st;
}

/* The facts every rank must share, in sc_comm_agree's order: the first two say
 * whether the gradient lists agree. */
enum { SC_RFACT_N, SC_RFACT_LIST, SC_RFACT_HOOK = 8, SC_RFACT_HOOK_CONFIG = 11,
       SC_RFACT_COUNT };

sc_status_t sc_reducer_agree(sc_comm_t *comm, const sc_grad_desc_t *grads, int n,
                             const sc_reducer_t *r, sc_status_t local)
{
    uint64_t h = SC_FNV_INIT;
    int64_t prediv_bits = 0;
    /* Set only where the facts differ: a mismatch of the agreement's own collective
     * (a rank calling something else meanwhile) leaves it so. */
    sc_agree_diff_t diff = {-1, -1, 0, 0};
    sc_status_t st;

    if (local == SC_SUCCESS) {
        for (int i = 0; i < n; i++) {
            sc_agree_grad_t a;
            sc_agree_grad(&grads[i], &a);
            h = sc_fnv(h, &a.count, sizeof(a.count));
            h = sc_fnv(h, &a.dtype, sizeof(a.dtype));
            h = sc_fnv(h, &a.name_hash, sizeof(a.name_hash));
        }
        memcpy(&prediv_bits, &r->prediv, sizeof(double));
    }
    {
        const sc_fact_t facts[SC_RFACT_COUNT] = {
            {"the number of gradients", SC_FACT_NUMBER, n},
            {"the gradient list", SC_FACT_HASH, (int64_t)h},
            {"first_bucket_bytes", SC_FACT_NUMBER, (int64_t)r->first_cap},
            {"bucket_cap_bytes", SC_FACT_NUMBER, (int64_t)r->cap},
            {"find_unused", SC_FACT_NUMBER, r->find_unused},
            {"autotune", SC_FACT_NUMBER, r->tune.asked},
            /* Set on some ranks only, the variable turns autotuning off on those alone. */
            {"SC_BUCKET_CAP_MB set (it turns autotune off)", SC_FACT_NUMBER, r->tune.fixed},
            {"prediv", SC_FACT_DOUBLE, prediv_bits},
            {"the comm hook's name", SC_FACT_HASH, (int64_t)sc_name_hash(r->hook.name)},
            {"gradient_as_bucket_view", SC_FACT_NUMBER, r->view},
            {"device buckets (1: config.stream set)", SC_FACT_NUMBER, r->mem.device >= 0},
            {"the comm hook's config", SC_FACT_HASH, (int64_t)sc_name_hash(r->hook.config)}};
        st = sc_comm_agree(comm, "sc_reducer_create", local, SC_SUCCESS, facts,
                           SC_RFACT_COUNT, &diff);
    }
    if (st != SC_ERR_MISMATCH)
        return st;
    if (diff.fact == SC_RFACT_N || diff.fact == SC_RFACT_LIST)
        return sc_agree_locate(comm, grads, n, sc_comm_rank(comm), diff.rank,
                               diff.fact == SC_RFACT_N ? diff.value0 : n,
                               diff.fact == SC_RFACT_N ? diff.value : n);
    if (diff.fact == SC_RFACT_HOOK)
        return sc_error(SC_ERR_MISMATCH, "sc_reducer_create: ranks disagree: the comm hook's "
                        "name differs between %s and %s (this rank's is \"%s\")",
                        sc_comm_rank_name(comm, 0).s, sc_comm_rank_name(comm, diff.rank).s,
                        r->hook.name ? r->hook.name : "");
    if (diff.fact == SC_RFACT_HOOK_CONFIG)
        return sc_error(SC_ERR_MISMATCH, "sc_reducer_create: ranks disagree: the settings of "
                        "the comm hook \"%s\" differ between %s and %s (this rank's: %s)",
                        r->hook.name ? r->hook.name : "", sc_comm_rank_name(comm, 0).s,
                        sc_comm_rank_name(comm, diff.rank).s,
                        r->hook.config ? r->hook.config : "none");
    return st;
}
