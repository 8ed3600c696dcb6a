/* sc_comm_agree: one all-gather of every rank's local status and facts, then the same
 * verdict on every rank (this rank's failure, a peer's failure, or the first fact that
 * differs from rank 0's). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/agree.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "shardcomm/collectives.h"

int64_t sc_fact_word(const char *word)
{
    int64_t value = 0;

    memcpy(&value, word, strnlen(word, sizeof(value)));
    return value;
}

static void sc_fact_print(const sc_fact_t *f, int64_t value, char *buf, size_t len)
{
    char word[sizeof(value) + 1] = {0};
    double d;

    switch (f->kind) {
    case SC_FACT_WORD:
        memcpy(word, &value, sizeof(value));
        snprintf(buf, len, "%s", word);
        break;
    case SC_FACT_DTYPE:
        snprintf(buf, len, "%s", sc_dtype_name((sc_dtype_t)value));
        break;
    case SC_FACT_DOUBLE:
        memcpy(&d, &value, sizeof(d));
        sc_error_double(buf, len, d);
        break;
    default:
        snprintf(buf, len, "%" PRId64, value);
        break;
    }
}

sc_status_t sc_comm_agree(sc_comm_t *comm, const char *caller, sc_status_t local,
                          sc_status_t peer_status, const sc_fact_t *facts, int nfacts,
                          sc_agree_diff_t *diff)
{
    int p = sc_comm_size(comm), width = nfacts + 1;
    int64_t mine[SC_AGREE_MAX_FACTS + 1] = {0}, *all;
    char text[SC_ERROR_MAX], a[64], b[64];
    sc_status_t st;

    if (nfacts < 0 || nfacts > SC_AGREE_MAX_FACTS)
        return sc_error(SC_ERR_INTERNAL, "%s: %d facts to agree on, at most %d", caller,
                        nfacts, SC_AGREE_MAX_FACTS);
    /* This rank's sentence survives the all-gather. */
    snprintf(text, sizeof(text), "%s", sc_last_error());
    mine[0] = local;
    for (int f = 0; f < nfacts; f++)
        mine[f + 1] = facts[f].value;
    all = malloc((size_t)p * (size_t)width * sizeof(*all));
    if (!all)
        return sc_error(SC_ERR_NO_MEMORY, "%s: out of memory agreeing with the other ranks",
                        caller);
    st = sc_allgather(mine, all, (size_t)width, SC_INT64, comm, NULL, NULL);
    if (st != SC_SUCCESS)
        goto out;
    if (local != SC_SUCCESS) {
        sc_error_set_text(text);
        st = local;
        goto out;
    }
    for (int q = 0; q < p; q++) {
        sc_status_t s = (sc_status_t)all[(size_t)q * width];
        if (s != SC_SUCCESS) {
            st = sc_error(peer_status != SC_SUCCESS ? peer_status : s, "%s: %s failed "
                          "its own checks (%s) and took no part; its error says why", caller,
                          sc_comm_rank_name(comm, q).s, sc_status_string(s));
            goto out;
        }
    }
    for (int q = 1; q < p; q++) {
        const int64_t *r0 = all + 1, *rq = all + (size_t)q * width + 1;
        for (int f = 0; f < nfacts; f++) {
            if (r0[f] == rq[f])
                continue;
            if (diff) {
                diff->fact = f;
                diff->rank = q;
                diff->value0 = r0[f];
                diff->value = rq[f];
            }
            if (facts[f].kind == SC_FACT_HASH) {
                st = sc_error(SC_ERR_MISMATCH, "%s: ranks disagree: %s differs between %s "
                              "and %s", caller, facts[f].name, sc_comm_rank_name(comm, 0).s,
                              sc_comm_rank_name(comm, q).s);
                goto out;
            }
            sc_fact_print(&facts[f], r0[f], a, sizeof(a));
            sc_fact_print(&facts[f], rq[f], b, sizeof(b));
            st = sc_error(SC_ERR_MISMATCH, "%s: ranks disagree: %s is %s on %s but %s on %s",
                          caller, facts[f].name, a, sc_comm_rank_name(comm, 0).s, b,
                          sc_comm_rank_name(comm, q).s);
            goto out;
        }
    }
out:
    free(all);
    return st;
}
