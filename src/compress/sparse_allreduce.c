/* sc_sparse_allreduce: the local checks, the agreement of every rank on the arguments,
 * the all-gather of every rank's pairs and their scatter-add in rank order. */
#include <stdlib.h>
#include <string.h>

#include "collectives/agree.h"
#include "collectives/serves.h"
#include "compress/compress_internal.h"
#include "core/comm_internal.h"
#include "core/error.h"

#define SC_SPARSE_FN "sc_sparse_allreduce"

/* The checks that need no other rank, and the layout of p ranks' pairs (*l); every
 * size is checked before any index is read. */
static sc_status_t sc_sparse_check(const void *indices, int index_bits, const void *values,
                                   sc_dtype_t value_dtype, size_t k, const void *dense,
                                   sc_dtype_t dtype, size_t n, int p, sc_pairs_layout_t *l)
{
    sc_status_t st;
    size_t bad;

    if (!sc_pairs_dtype_ok(dtype))
        return sc_error(SC_ERR_INVALID_ARG, SC_SPARSE_FN ": dtype %s is not float32, float64, "
                        "float16 or bfloat16", sc_dtype_name(dtype));
    if (value_dtype != dtype && value_dtype != SC_FLOAT16)
        return sc_error(SC_ERR_INVALID_ARG, SC_SPARSE_FN ": value_dtype %s is neither the "
                        "dense dtype (%s) nor float16", sc_dtype_name(value_dtype),
                        sc_dtype_name(dtype));
    if (index_bits != 32 && index_bits != 64)
        return sc_error(SC_ERR_INVALID_ARG, SC_SPARSE_FN ": index_bits is %d, not 32 or 64",
                        index_bits);
    /* The all-ones index pads: with 32 bits it must not also be an element. */
    if (index_bits == 32 && (uint64_t)n > UINT32_MAX)
        return sc_error(SC_ERR_INVALID_ARG, SC_SPARSE_FN ": n %zu needs 64-bit indices (with "
                        "32, index %u would be both an element and the pad)", n, UINT32_MAX);
    if (k > 0 && (!indices || !values))
        return sc_error(SC_ERR_INVALID_ARG, SC_SPARSE_FN ": indices or values is NULL with "
                        "k %zu", k);
    if (n > 0 && !dense)
        return sc_error(SC_ERR_INVALID_ARG, SC_SPARSE_FN ": dense is NULL with n %zu", n);
    if (sc_check_aligned(SC_SPARSE_FN, "indices", indices, (size_t)index_bits / 8) ||
        sc_check_aligned(SC_SPARSE_FN, "values", values, sc_dtype_size(value_dtype)) ||
        sc_check_aligned(SC_SPARSE_FN, "dense", dense, sc_dtype_size(dtype)))
        return SC_ERR_INVALID_ARG;
    if (n > SIZE_MAX / sizeof(double))
        return sc_error(SC_ERR_INVALID_ARG, SC_SPARSE_FN ": n %zu overflows the buffer size",
                        n);
    st = sc_pairs_layout(SC_SPARSE_FN, k, index_bits, value_dtype, p, l);
    if (st != SC_SUCCESS)
        return st;
    bad = sc_pairs_find_bad(indices, index_bits, k, n);
    if (bad < k)
        return sc_error(SC_ERR_INVALID_ARG, SC_SPARSE_FN ": pair %zu has index %llu, outside "
                        "the dense tensor of n %zu elements (and not the pad)", bad,
                        (unsigned long long)(index_bits == 32
                                                 ? ((const uint32_t *)indices)[bad]
                                                 : ((const uint64_t *)indices)[bad]), n);
    return SC_SUCCESS;
}

static sc_status_t sc_sparse_allreduce_call(sc_comm_t *comm, const void *indices, int index_bits,
                                            const void *values, sc_dtype_t value_dtype, size_t k,
                                            void *dense, sc_dtype_t dtype, size_t n);

/* Failures inside say which public call they ended (sc_error_in). */
SC_API sc_status_t sc_sparse_allreduce(sc_comm_t *comm, const void *indices, int index_bits,
                                       const void *values, sc_dtype_t value_dtype, size_t k,
                                       void *dense, sc_dtype_t dtype, size_t n)
{
    sc_serves_t was = sc_serves_begin(SC_SERVES_SPARSE);
    int claimed;
    /* comm marked as issued on by this thread for the whole call (sc_comm_issue_begin):
     * another thread's call between its collectives would take a number among them. */
    sc_status_t st = sc_comm_issue_begin(comm, SC_SPARSE_FN, &claimed);

    if (st == SC_SUCCESS) {
        st = sc_sparse_allreduce_call(comm, indices, index_bits, values, value_dtype, k,
                                      dense, dtype, n);
        sc_comm_issue_end(comm, claimed);
    }
    return sc_serves_return(was, st, "sc_sparse_allreduce");
}

static sc_status_t sc_sparse_allreduce_call(sc_comm_t *comm, const void *indices, int index_bits,
                                            const void *values, sc_dtype_t value_dtype, size_t k,
                                            void *dense, sc_dtype_t dtype, size_t n)
{
    int rank, p, narrow = dtype == SC_FLOAT16 || dtype == SC_BFLOAT16;
    sc_pairs_layout_t l;
    char *blocks = NULL;
    float *acc = NULL;
    sc_status_t st;

    st = sc_comm_check_usable(comm, SC_SPARSE_FN);
    if (st != SC_SUCCESS)
        return st; /* no communicator to agree over */
    rank = sc_comm_rank(comm);
    p = sc_comm_size(comm);
    st = sc_sparse_check(indices, index_bits, values, value_dtype, k, dense, dtype, n, p, &l);
    if (st == SC_SUCCESS) {
        blocks = malloc(l.bytes * (size_t)p + 8);
        acc = narrow ? malloc(n * sizeof(float) + 8) : NULL;
        if (!blocks || (narrow && !acc))
            st = sc_error(SC_ERR_NO_MEMORY, SC_SPARSE_FN ": out of memory for %d blocks of "
                          "%zu bytes", p, l.bytes);
    }
    {
        /* A rank that failed above still takes part, so that no rank waits. */
        const sc_fact_t facts[] = {
            {"n", SC_FACT_NUMBER, (int64_t)n},
            {"k", SC_FACT_NUMBER, (int64_t)k},
            {"dtype", SC_FACT_DTYPE, dtype},
            {"value_dtype", SC_FACT_DTYPE, value_dtype},
            {"index_bits", SC_FACT_NUMBER, index_bits}};
        st = sc_comm_agree(comm, SC_SPARSE_FN, st, SC_ERR_MISMATCH, facts,
                           (int)(sizeof(facts) / sizeof(facts[0])), NULL);
    }
    if (st != SC_SUCCESS)
        goto out;
    memset(blocks + (size_t)rank * l.bytes, 0, l.bytes);
    if (k > 0) { /* indices and values may be NULL with k 0 */
        memcpy(blocks + (size_t)rank * l.bytes, indices, k * (size_t)(index_bits / 8));
        memcpy(blocks + (size_t)rank * l.bytes + l.values_off, values,
               k * sc_dtype_size(value_dtype));
    }
    st = sc_allgather(blocks + (size_t)rank * l.bytes, blocks, l.bytes, SC_UINT8, comm, NULL,
                      NULL);
    if (st != SC_SUCCESS)
        goto out;
    sc_pairs_scatter(&l, blocks, p, dense, dtype, n, 1, acc, NULL, 0);
out:
    free(acc);
    free(blocks);
    return st;
}
