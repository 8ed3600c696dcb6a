/* The registration check of sc_reducer_create: every rank's gradients and settings
 * against rank 0's, with the host collectives, so that a difference is an error on
 * every rank that names the first differing gradient and both ranks, never a hang
 * (or a silent mismatch of bucket sizes later). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/reducer_internal.h"

/* What every rank contributes, gathered on all. */
enum {
    SC_AGREE_STATUS,     /* this rank's local checks: 0 or an sc_status_t */
    SC_AGREE_N,          /* number of gradients */
    SC_AGREE_HASH,       /* of every gradient's count, dtype and name */
    SC_AGREE_FIRST_CAP,
    SC_AGREE_CAP,
    SC_AGREE_FIND_UNUSED,
    SC_AGREE_AUTOTUNE,
    SC_AGREE_PREDIV,     /* bits of the resolved factor */
    SC_AGREE_HOOK,       /* hash of the hook's name */
    SC_AGREE_FIELDS
};

static const char *const sc_agree_names[SC_AGREE_FIELDS] = {
    "", "", "", "first_bucket_bytes", "bucket_cap_bytes", "find_unused", "autotune",
    "prediv", "hook"};

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
        st = sc_error(SC_ERR_INTERNAL, "sc_reducer_create: the gradient lists of rank 0 and "
                      "rank %d hash differently but compare equal", other);
        goto out;
    }
    sc_agree_describe(&a[i], da, sizeof(da));
    sc_agree_describe(&b[i], db, sizeof(db));
    st = sc_error(SC_ERR_MISMATCH,
                  "sc_reducer_create: ranks registered different gradients: gradient %" PRId64
                  " is %s on rank 0 but %s on rank %d (rank 0 registered %" PRId64
                  " gradients, rank %d %" PRId64 ")",
                  i, da, db, other, n0, other, nr);
out:
    free(a);
    free(b);
    return st;
}

sc_status_t sc_reducer_agree(sc_comm_t *comm, const sc_grad_desc_t *grads, int n,
                             const sc_reducer_t *r, sc_status_t local)
{
    int me = sc_comm_rank(comm), p = sc_comm_size(comm);
    int64_t mine[SC_AGREE_FIELDS] = {0}, *all;
    uint64_t h = SC_FNV_INIT;
    char text[SC_ERROR_MAX];
    sc_status_t st;

    /* This rank's sentence survives the collectives below. */
    snprintf(text, sizeof(text), "%s", sc_last_error());
    mine[SC_AGREE_STATUS] = local;
    mine[SC_AGREE_N] = n;
    if (local == SC_SUCCESS) {
        for (int i = 0; i < n; i++) {
            sc_agree_grad_t a;
            sc_agree_grad(&grads[i], &a);
            h = sc_fnv(h, &a.count, sizeof(a.count));
            h = sc_fnv(h, &a.dtype, sizeof(a.dtype));
            h = sc_fnv(h, &a.name_hash, sizeof(a.name_hash));
        }
        mine[SC_AGREE_HASH] = (int64_t)h;
        mine[SC_AGREE_FIRST_CAP] = (int64_t)r->first_cap;
        mine[SC_AGREE_CAP] = (int64_t)r->cap;
        mine[SC_AGREE_FIND_UNUSED] = r->find_unused;
        mine[SC_AGREE_AUTOTUNE] = r->tune.active;
        memcpy(&mine[SC_AGREE_PREDIV], &r->prediv, sizeof(double));
        mine[SC_AGREE_HOOK] = (int64_t)sc_name_hash(r->hook.name);
    }
    all = malloc((size_t)p * sizeof(mine));
    if (!all)
        return sc_error(SC_ERR_NO_MEMORY, "sc_reducer_create: out of memory");
    st = sc_allgather(mine, all, SC_AGREE_FIELDS, SC_INT64, comm, NULL, NULL);
    if (st != SC_SUCCESS)
        goto out;
    if (local != SC_SUCCESS) {
        sc_error_set_text(text);
        st = local;
        goto out;
    }
    for (int q = 0; q < p; q++) {
        sc_status_t s = (sc_status_t)all[q * SC_AGREE_FIELDS + SC_AGREE_STATUS];
        if (s != SC_SUCCESS) {
            st = sc_error(s, "sc_reducer_create: rank %d could not create its reducer (%s); "
                          "its error says why", q, sc_status_string(s));
            goto out;
        }
    }
    for (int q = 1; q < p; q++) {
        const int64_t *a = all, *b = all + q * SC_AGREE_FIELDS;
        if (a[SC_AGREE_N] != b[SC_AGREE_N] || a[SC_AGREE_HASH] != b[SC_AGREE_HASH]) {
            st = sc_agree_locate(comm, grads, n, me, q, a[SC_AGREE_N], b[SC_AGREE_N]);
            goto out;
        }
        for (int f = SC_AGREE_FIRST_CAP; f < SC_AGREE_FIELDS; f++) {
            if (a[f] == b[f])
                continue;
            if (f == SC_AGREE_PREDIV) {
                double x, y;
                memcpy(&x, &a[f], sizeof(x));
                memcpy(&y, &b[f], sizeof(y));
                st = sc_error(SC_ERR_MISMATCH, "sc_reducer_create: ranks configured the "
                              "reducer differently: prediv is %g on rank 0 but %g on rank %d",
                              x, y, q);
            } else if (f == SC_AGREE_HOOK) {
                st = sc_error(SC_ERR_MISMATCH, "sc_reducer_create: ranks configured the "
                              "reducer differently: the comm hook's name differs between "
                              "rank 0 and rank %d (this rank's is \"%s\")", q,
                              r->hook.name ? r->hook.name : "");
            } else {
                st = sc_error(SC_ERR_MISMATCH, "sc_reducer_create: ranks configured the "
                              "reducer differently: %s is %" PRId64 " on rank 0 but %" PRId64
                              " on rank %d", sc_agree_names[f], a[f], b[f], q);
            }
            goto out;
        }
    }
out:
    free(all);
    return st;
}
