/* sc-bench: nccl-tests-style timing and checking of shardcomm's collectives on host
 * buffers, or with --device on device buffers and a CUDA stream.
 * Run under `scrun -n N sc-bench COLL ...`; rank 0 prints one row per size. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_coll.h"
#include "bench_compressed.h"
#include "bench_data.h"
#include "bench_device.h"
#include "bench_kernels.h"
#include "bench_memory.h"
#include "bench_options.h"
#include "bench_agree.h"
#include "bench_output.h"
#include "bench_reducer.h"
#include "bench_time.h"
#include "bench_topk.h"
#include "../tools/tool_stdout.h"

/* One printed row: a collective at one size, over all ranks. */
typedef struct {
    sc_bench_coll_t coll;
    size_t bytes;    /* the largest buffer (nccl-tests' size) */
    size_t count;    /* the call's count argument: a rank's block for reduce_scatter,
                        allgather and alltoall (nccl-tests' count) */
    int root;
    double time_us;  /* average over the iterations, max over ranks */
    double algbw;    /* GB/s, 1 GB = 1e9 B as in nccl-tests */
    double busbw;
    int64_t wrong;   /* summed over ranks; -1 when not checked */
} sc_bench_row_t;

/* Where a run's calls find their buffers: host memory, or device memory with host
 * mirrors of the same layout that the check fills and reads. */
typedef struct {
    sc_bench_device_t *dev; /* NULL: host buffers */
    void *a, *b;            /* what the calls get */
    void *host_a, *host_b;  /* a and b themselves on the host, else their mirrors */
} sc_bench_bufs_t;

/* A failed call's sentence, kept before later calls replace sc_last_error(). */
static char sc_bench_error_text[1024];

static sc_status_t sc_bench_fail(sc_status_t status)
{
    snprintf(sc_bench_error_text, sizeof(sc_bench_error_text), "%s: %s",
             sc_status_string(status), sc_last_error());
    return status;
}

static sc_status_t sc_bench_fail_device(sc_status_t status)
{
    snprintf(sc_bench_error_text, sizeof(sc_bench_error_text), "%s: %s",
             sc_status_string(status), sc_bench_device_error());
    return status;
}

/* Issues the call and waits for it (or makes it blocking). */
static sc_status_t sc_bench_call_run(const sc_bench_call_t *call, sc_comm_t *comm,
                                     int blocking)
{
    sc_request_t *req;
    sc_status_t status;

    if (blocking || call->coll == SC_BENCH_SENDRECV) {
        status = sc_bench_call_issue(call, comm, NULL);
        return status == SC_SUCCESS ? status : sc_bench_fail(status);
    }
    status = sc_bench_call_issue(call, comm, &req);
    if (status != SC_SUCCESS)
        return sc_bench_fail(status);
    status = sc_wait(req);
    if (status != SC_SUCCESS)
        sc_bench_fail(status);
    sc_request_free(req);
    return status;
}

/* Returns when the work enqueued on the stream has run; at once on host buffers. */
static sc_status_t sc_bench_stream_sync(sc_bench_device_t *dev)
{
    sc_status_t status;

    if (!dev)
        return SC_SUCCESS;
    status = sc_bench_device_sync(dev);
    return status == SC_SUCCESS ? status : sc_bench_fail_device(status);
}

/* One timed call. On host buffers it is waited for (sc_wait, or blocking). On device
 * buffers it is enqueued on the stream without a request, as nccl-tests issues them
 * back to back; with --blocking the stream is synchronized after it. */
static sc_status_t sc_bench_call_step(const sc_bench_call_t *call, sc_comm_t *comm,
                                      const sc_bench_options_t *opts,
                                      sc_bench_device_t *dev)
{
    sc_status_t status;

    if (!dev)
        return sc_bench_call_run(call, comm, opts->blocking);
    status = sc_bench_call_issue(call, comm, NULL);
    if (status != SC_SUCCESS)
        return sc_bench_fail(status);
    return opts->blocking ? sc_bench_stream_sync(dev) : SC_SUCCESS;
}

/* Times `iters` calls after `warmup` untimed ones, from the first issue until the
 * last call (and on device buffers the stream) completed; *time_us is the average
 * over the iterations of the slowest rank. */
static sc_status_t sc_bench_call_time(const sc_bench_call_t *call, sc_comm_t *comm,
                                      const sc_bench_options_t *opts,
                                      sc_bench_device_t *dev, double *time_us)
{
    sc_status_t status;
    double start, local, slowest;

    for (int i = 0; i < opts->warmup; i++) {
        status = sc_bench_call_step(call, comm, opts, dev);
        if (status != SC_SUCCESS)
            return status;
    }
    status = sc_bench_stream_sync(dev);
    if (status != SC_SUCCESS)
        return status;
    status = sc_barrier(comm, NULL);
    if (status != SC_SUCCESS)
        return sc_bench_fail(status);
    start = bench_now_s();
    for (int i = 0; i < opts->iters; i++) {
        status = sc_bench_call_step(call, comm, opts, dev);
        if (status != SC_SUCCESS)
            return status;
    }
    status = sc_bench_stream_sync(dev);
    if (status != SC_SUCCESS)
        return status;
    local = (bench_now_s() - start) / opts->iters;
    status = sc_allreduce(&local, &slowest, 1, SC_FLOAT64, SC_MAX, comm, NULL, NULL);
    if (status != SC_SUCCESS)
        return sc_bench_fail(status);
    *time_us = slowest * 1e6;
    return SC_SUCCESS;
}

/* Writes the inputs and sentinels of `mirror`, the call laid out over the host
 * buffers; on device buffers copies them into the call's. */
static sc_status_t sc_bench_data_put(const sc_bench_call_t *call,
                                     const sc_bench_call_t *mirror,
                                     const sc_bench_bufs_t *bufs, uint64_t seed)
{
    sc_status_t status;

    sc_bench_data_fill(mirror, seed);
    if (!bufs->dev)
        return SC_SUCCESS;
    status = sc_bench_device_copy(bufs->dev, bufs->a, bufs->host_a, call->bytes);
    if (status == SC_SUCCESS && !call->inplace)
        status = sc_bench_device_copy(bufs->dev, bufs->b, bufs->host_b, call->bytes);
    return status == SC_SUCCESS ? status : sc_bench_fail_device(status);
}

/* On device buffers copies the call's receive side back into the host buffers. */
static sc_status_t sc_bench_data_get(const sc_bench_call_t *call,
                                     const sc_bench_bufs_t *bufs)
{
    sc_status_t status;

    if (!bufs->dev)
        return SC_SUCCESS;
    if (call->inplace)
        status = sc_bench_device_copy(bufs->dev, bufs->host_a, bufs->a, call->bytes);
    else
        status = sc_bench_device_copy(bufs->dev, bufs->host_b, bufs->b, call->bytes);
    return status == SC_SUCCESS ? status : sc_bench_fail_device(status);
}

/* Runs the call once on fresh inputs, with a request and sc_wait; *wrong is the
 * number of wrong output elements summed over ranks. */
static sc_status_t sc_bench_call_check(const sc_bench_call_t *call,
                                       const sc_bench_call_t *mirror,
                                       const sc_bench_bufs_t *bufs, sc_comm_t *comm,
                                       uint64_t seed, int64_t *wrong)
{
    sc_status_t status;
    int64_t local, sum;

    status = sc_bench_data_put(call, mirror, bufs, seed);
    if (status != SC_SUCCESS)
        return status;
    status = sc_bench_call_run(call, comm, 0);
    if (status != SC_SUCCESS)
        return status;
    status = sc_bench_data_get(call, bufs);
    if (status != SC_SUCCESS)
        return status;
    local = (int64_t)sc_bench_data_check(mirror, seed);
    status = sc_allreduce(&local, &sum, 1, SC_INT64, SC_SUM, comm, NULL, NULL);
    if (status != SC_SUCCESS)
        return sc_bench_fail(status);
    *wrong = sum;
    return SC_SUCCESS;
}

/* `mirror` is the call laid out over bufs' host buffers (the call itself on the
 * host). */
static sc_status_t sc_bench_row_measure(const sc_bench_call_t *call,
                                        const sc_bench_call_t *mirror,
                                        const sc_bench_bufs_t *bufs, sc_comm_t *comm,
                                        const sc_bench_options_t *opts,
                                        sc_bench_row_t *row)
{
    sc_bench_row_t r = {call->coll, call->bytes, call->count, call->root, 0, 0, 0, -1};
    sc_status_t status;

    status = sc_bench_data_put(call, mirror, bufs, opts->seed);
    if (status != SC_SUCCESS)
        return status;
    status = sc_bench_call_time(call, comm, opts, bufs->dev, &r.time_us);
    if (status != SC_SUCCESS)
        return status;
    if (opts->check) {
        status = sc_bench_call_check(call, mirror, bufs, comm, opts->seed, &r.wrong);
        if (status != SC_SUCCESS)
            return status;
    }
    r.algbw = r.time_us > 0 ? (double)r.bytes / r.time_us * 1e-3 : 0;
    r.busbw = r.algbw * sc_bench_coll_busbw_factor(call->coll, call->nranks);
    *row = r;
    return SC_SUCCESS;
}

/* The sizes of a run: min, min*factor, ... up to max. Returns 0 after the last. */
static int sc_bench_size_next(const sc_bench_options_t *opts, size_t *size)
{
    if (*size == 0) {
        *size = opts->min_bytes;
        return 1;
    }
    if (*size > opts->max_bytes / opts->factor)
        return 0;
    *size *= opts->factor;
    return 1;
}

/* Largest buffer any call of the run needs. */
static size_t sc_bench_max_bytes(const sc_bench_options_t *opts, int nranks)
{
    size_t max = 0, size = 0, bytes;

    while (sc_bench_size_next(opts, &size)) {
        for (int i = 0; i < opts->ncolls; i++) {
            bytes = sc_bench_coll_bytes(opts->colls[i], size, opts->dtype, nranks);
            max = bytes > max ? bytes : max;
        }
    }
    return max;
}

/* Whether some collective of the run has a size that holds a call; if none has, every
 * rank says which sizes would. */
static int sc_bench_some_size_fits(const sc_bench_options_t *opts, int rank, int nranks)
{
    size_t need = SIZE_MAX;

    for (int i = 0; i < opts->ncolls; i++) {
        size_t m = sc_bench_coll_min_bytes(opts->colls[i], opts->dtype, nranks);
        need = m < need ? m : need;
    }
    if (sc_bench_max_bytes(opts, nranks) > 0)
        return 1;
    fprintf(stderr, "sc-bench: rank %d: -e %zu B holds no %s element%s: sizes round down to "
                    "whole elements; give -e %zu or more\n",
            rank, opts->max_bytes, sc_dtype_name(opts->dtype),
            need > sc_dtype_size(opts->dtype) ? " per rank" : "", need);
    return 0;
}

static void sc_bench_print_header(FILE *out, const char *command,
                                  const sc_bench_options_t *opts, int nranks,
                                  const char *device)
{
    fprintf(out,
            "# %s\n# nranks %d, dtype %s, op %s, root %d, iters %d, warmup %d, check %d, "
            "%s, seed %" PRIu64 "\n",
            command ? command : "sc-bench", nranks, sc_dtype_name(opts->dtype), sc_op_name(opts->op), opts->root,
            opts->iters, opts->warmup, opts->check ? 1 : 0,
            opts->inplace ? "in-place" : "out-of-place", opts->seed);
    if (opts->registered)
        fprintf(out, "# host buffers from sc_mem_alloc (registered memory: read in place by "
                     "the local ranks where they share memory)\n");
    if (device)
        fprintf(out, "# device buffers (rank 0 on %s), calls enqueued on one CUDA stream%s\n",
                device, opts->blocking ? " and synchronized one by one" : "");
    fprintf(out, "#\n");
    fprintf(out, "# %14s %12s %12s %9s %7s %5s %11s %9s %9s %7s\n", "collective", "size",
            "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong");
    fprintf(out, "# %14s %12s %12s %9s %7s %5s %11s %9s %9s %7s\n", "", "(B)",
            "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "");
    fflush(out);
}

static void sc_bench_print_row(FILE *out, const sc_bench_row_t *row,
                               const sc_bench_options_t *opts)
{
    char wrong[32] = "N/A";

    if (row->wrong >= 0)
        snprintf(wrong, sizeof(wrong), "%" PRId64, row->wrong);
    fprintf(out, "  %14s %12zu %12zu %9s %7s %5d %11.2f %9.2f %9.2f %7s\n",
            sc_bench_coll_name(row->coll), row->bytes, row->count,
            sc_dtype_name(opts->dtype),
            sc_bench_coll_reduces(row->coll) ? sc_op_name(opts->op) : "none", row->root,
            row->time_us, row->algbw, row->busbw, wrong);
    fflush(out);
}

/* The rows as JSON into f, opened before the run (sc_bench_output_open_root). */
static void sc_bench_json_write(FILE *f, const sc_bench_row_t *rows, int nrows,
                                const sc_bench_options_t *opts, int nranks)
{
    fputs("[\n", f);
    for (int i = 0; i < nrows; i++) {
        const sc_bench_row_t *r = &rows[i];
        char wrong[32] = "null";

        if (r->wrong >= 0)
            snprintf(wrong, sizeof(wrong), "%" PRId64, r->wrong);
        fprintf(f,
                "  {\"coll\": \"%s\", \"bytes\": %zu, \"count\": %zu, \"dtype\": \"%s\", "
                "\"op\": \"%s\", \"root\": %d, \"inplace\": %s, \"memory\": \"%s\", "
                "\"nranks\": %d, \"time_us\": %.6g, \"algbw\": %.6g, \"busbw\": %.6g, "
                "\"wrong\": %s}%s\n",
                sc_bench_coll_name(r->coll), r->bytes, r->count, sc_dtype_name(opts->dtype),
                sc_bench_coll_reduces(r->coll) ? sc_op_name(opts->op) : "none", r->root,
                opts->inplace ? "true" : "false",
                opts->device ? "device" : opts->registered ? "host-registered" : "host", nranks,
                r->time_us, r->algbw, r->busbw, wrong, i + 1 < nrows ? "," : "");
    }
    fputs("]\n", f);
}

static void sc_bench_print_summary(FILE *out, const sc_bench_row_t *rows, int nrows,
                                   int checked)
{
    double sum = 0;
    int64_t wrong = 0;

    for (int i = 0; i < nrows; i++) {
        sum += rows[i].busbw;
        wrong += rows[i].wrong > 0 ? rows[i].wrong : 0;
    }
    if (checked)
        fprintf(out, "# avg busbw: %.3f GB/s, wrong: %" PRId64 "\n",
                nrows ? sum / nrows : 0.0, wrong);
    else
        fprintf(out, "# avg busbw: %.3f GB/s, wrong: N/A\n", nrows ? sum / nrows : 0.0);
    fflush(out);
}

/* Every collective of the run at every size; rows[] receives them. */
static sc_status_t sc_bench_run(sc_comm_t *comm, const sc_bench_options_t *opts,
                                const sc_bench_bufs_t *bufs, sc_bench_row_t *rows,
                                int *nrows)
{
    int rank = sc_comm_rank(comm), nranks = sc_comm_size(comm);
    sc_bench_call_t call, mirror;
    sc_status_t status;

    for (int i = 0; i < opts->ncolls; i++) {
        size_t size = 0;

        while (sc_bench_size_next(opts, &size)) {
            sc_bench_call_init(&call, opts->colls[i], size, opts->dtype, opts->op,
                               opts->root, rank, nranks, opts->inplace, bufs->a, bufs->b);
            if (call.count == 0) {
                /* Sizes round down to whole elements: this one holds none. */
                size_t need = sc_bench_coll_min_bytes(call.coll, opts->dtype, nranks);

                if (rank == 0)
                    printf("# %s: %zu B skipped: less than one %s element%s (%zu B)\n",
                           sc_bench_coll_name(call.coll), size, sc_dtype_name(opts->dtype),
                           need > sc_dtype_size(opts->dtype) ? " per rank" : "", need);
                continue;
            }
            mirror = call;
            if (bufs->dev) {
                call.stream = sc_bench_device_stream(bufs->dev);
                sc_bench_call_init(&mirror, opts->colls[i], size, opts->dtype, opts->op,
                                   opts->root, rank, nranks, opts->inplace, bufs->host_a,
                                   bufs->host_b);
            }
            status = sc_bench_row_measure(&call, &mirror, bufs, comm, opts, &rows[*nrows]);
            if (status != SC_SUCCESS) {
                fprintf(stderr, "sc-bench: rank %d: %s of %zu B failed: %s\n", rank,
                        sc_bench_coll_name(call.coll), call.bytes, sc_bench_error_text);
                return status;
            }
            if (rank == 0)
                sc_bench_print_row(stdout, &rows[*nrows], opts);
            (*nrows)++;
        }
    }
    return SC_SUCCESS;
}

static int sc_bench_row_capacity(const sc_bench_options_t *opts)
{
    size_t size = 0;
    int n = 0;

    while (sc_bench_size_next(opts, &size))
        n++;
    return n * opts->ncolls;
}

static int sc_bench_has_rooted(const sc_bench_options_t *opts)
{
    for (int i = 0; i < opts->ncolls; i++)
        if (sc_bench_coll_rooted(opts->colls[i]))
            return 1;
    return 0;
}

static int sc_bench_main(int argc, char **argv);

/* Every mode's exit status also says whether stdout could be written. */
int main(int argc, char **argv)
{
    return sc_tool_stdout_checked("sc-bench", sc_bench_main(argc, argv));
}

static int sc_bench_main(int argc, char **argv)
{
    /* `sc-bench kernels ...`: a single-process mode of its own (bench_kernels.c). */
    if (argc > 1 && strcmp(argv[1], "kernels") == 0)
        return sc_bench_kernels_main(argc - 1, argv + 1);
    /* `sc-bench reducer ...`: a model's gradients through the reducer (bench_reducer.c). */
    if (argc > 1 && strcmp(argv[1], "reducer") == 0)
        return sc_bench_reducer_main(argc - 1, argv + 1);
    /* `sc-bench compressed ...`: dense against top-k compressed all-reduce
     * (bench_compressed.c). */
    if (argc > 1 && strcmp(argv[1], "compressed") == 0)
        return sc_bench_compressed_main(argc - 1, argv + 1);
    /* `sc-bench topk ...`: the selection modes timed and checked (bench_topk.c). */
    if (argc > 1 && strcmp(argv[1], "topk") == 0)
        return sc_bench_topk_main(argc - 1, argv + 1);

    char *command = sc_bench_command_line(argc, argv);
    /* The arguments as given, for the peers (getopt reorders argv). */
    char **given = malloc((size_t)argc * sizeof(*given));
    sc_bench_options_t opts;
    sc_comm_t *comm;
    sc_bench_row_t *rows;
    sc_bench_bufs_t bufs = {NULL, NULL, NULL, NULL, NULL};
    sc_bench_output_t *json = NULL;
    void *a = NULL, *b = NULL;
    size_t max_bytes;
    int rank, nranks, nrows = 0, exit_code = 1;
    sc_status_t status;

    if (given)
        memcpy(given, argv, (size_t)argc * sizeof(*given));
    if (sc_bench_options_parse(argc, argv, stdout, stderr, &opts) != SC_SUCCESS) {
        exit_code = 2;
        goto err_free_command;
    }
    if (opts.help) {
        exit_code = 0;
        goto err_free_command;
    }
    if (opts.device && !sc_bench_device_available()) {
        fprintf(stderr, "sc-bench: %s\n", sc_bench_device_error());
        exit_code = 2;
        goto err_free_command;
    }
    status = sc_comm_init_from_env(&comm);
    if (status != SC_SUCCESS) {
        fprintf(stderr, "sc-bench: sc_comm_init_from_env: %s: %s\n",
                sc_status_string(status), sc_last_error());
        goto err_free_command;
    }
    rank = sc_comm_rank(comm);
    nranks = sc_comm_size(comm);
    exit_code = given ? sc_bench_same_command(comm, "sc-bench", argc - 1, given + 1) : 1;
    if (exit_code != 0)
        goto err_destroy;
    exit_code = 1;
    if (sc_bench_has_rooted(&opts) && opts.root >= nranks) {
        /* Every rank says it: the launcher may stop the others when one exits. */
        fprintf(stderr, "sc-bench: rank %d: -r %d: the root must be below the number of "
                        "ranks (%d)\n", rank, opts.root, nranks);
        exit_code = 2;
        goto err_destroy;
    }
    if (!sc_bench_some_size_fits(&opts, rank, nranks)) {
        exit_code = 2;
        goto err_destroy;
    }
    /* Before anything is measured: an unwritable --json fails every rank at once. */
    exit_code = sc_bench_output_open_root(comm, opts.json_path, &json);
    if (exit_code != 0)
        goto err_destroy;
    exit_code = 1;
    max_bytes = sc_bench_max_bytes(&opts, nranks);
    rows = calloc((size_t)sc_bench_row_capacity(&opts), sizeof(*rows));
    /* Registered buffers too: a rank's segments take as many pages as plain ones. */
    if (rows && !sc_bench_memory_fits("sc-bench", rank, "2 buffers of the largest size",
                                      2 * max_bytes, sc_comm_local_size(comm))) {
        goto err_free;
    } else if (opts.registered) {
        /* Collective: every rank allocates both, or every rank reports the failure. */
        if (!rows || sc_mem_alloc(comm, max_bytes, &a) != SC_SUCCESS ||
            sc_mem_alloc(comm, max_bytes, &b) != SC_SUCCESS) {
            fprintf(stderr, "sc-bench: rank %d: -R 1: %s\n", rank,
                    rows ? sc_last_error() : "out of memory");
            goto err_free;
        }
    } else if (!rows || posix_memalign(&a, 4096, max_bytes) != 0 ||
               posix_memalign(&b, 4096, max_bytes) != 0) {
        fprintf(stderr, "sc-bench: rank %d: cannot allocate 2 x %zu B\n", rank, max_bytes);
        goto err_free;
    }
    /* Touch every page now so that page faults are not timed. */
    memset(a, 0, max_bytes);
    memset(b, 0, max_bytes);
    bufs.a = bufs.host_a = a;
    bufs.b = bufs.host_b = b;
    if (opts.device) {
        /* a and b become the host mirrors of the device buffers. */
        if (sc_bench_device_open(sc_comm_local_rank(comm), max_bytes, &bufs.dev) !=
            SC_SUCCESS) {
            fprintf(stderr, "sc-bench: rank %d: %s\n", rank, sc_bench_device_error());
            goto err_free;
        }
        bufs.a = sc_bench_device_buffer(bufs.dev, 0);
        bufs.b = sc_bench_device_buffer(bufs.dev, 1);
    }

    if (rank == 0)
        sc_bench_print_header(stdout, command, &opts, nranks,
                              bufs.dev ? sc_bench_device_name(bufs.dev) : NULL);
    status = sc_bench_run(comm, &opts, &bufs, rows, &nrows);
    if (status != SC_SUCCESS) {
        /* Peers still inside a collective learn of the failure at once. */
        sc_comm_abort(comm);
        goto err_close_device;
    }
    exit_code = 0;
    for (int i = 0; i < nrows; i++)
        exit_code |= rows[i].wrong > 0;
    if (rank == 0)
        sc_bench_print_summary(stdout, rows, nrows, opts.check);
    if (json) {
        sc_bench_json_write(json->f, rows, nrows, &opts, nranks);
        exit_code |= sc_bench_output_commit(json);
        json = NULL;
    }

err_close_device:
    sc_bench_device_close(bufs.dev);
err_free:
    if (opts.registered) {
        sc_mem_free(comm, b);
        sc_mem_free(comm, a);
    } else {
        free(b);
        free(a);
    }
    free(rows);
    sc_bench_output_discard(json); /* a failed run: the file keeps what it held */
err_destroy:
    sc_comm_destroy(comm);
err_free_command:
    free(command);
    free(given);
    return exit_code;
}
