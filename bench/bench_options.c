/* sc-bench's command line, with nccl-tests' option letters and defaults. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_options.h"

static const char sc_bench_usage_text[] =
    "usage: sc-bench COLL [options]   (run under scrun -n N)\n"
    "       sc-bench kernels|reducer|topk|compressed --help   (the other modes)\n"
    "  COLL: allreduce reduce_scatter allgather broadcast reduce alltoall sendrecv all\n"
    "        (sendrecv: host buffers out of place; all leaves it out otherwise)\n"
    "  -b, --minbytes SIZE      smallest size (default 8); K/M/G suffixes, 1K = 1024\n"
    "  -e, --maxbytes SIZE      largest size (default 64M); sizes round down to whole\n"
    "                           elements (to whole blocks of one per rank for\n"
    "                           reduce_scatter, allgather, alltoall), as nccl-tests';\n"
    "                           a size that holds none is skipped\n"
    "  -f, --stepfactor F       size multiplier between rows (default 2)\n"
    "  -n, --iters N            timed iterations per size (default 20)\n"
    "  -w, --warmup_iters N     untimed iterations before (default 5)\n"
    "  -c, --check 0|1          check the results once per size (default 1)\n"
    "  -d, --datatype TYPE      int8 uint8 int32 int64 half float double bfloat16\n"
    "                           float16 float32 float64 f8e4m3 f8e5m2 (default float)\n"
    "  -o, --op OP              sum prod min max avg (default sum)\n"
    "  -r, --root R             root of broadcast and reduce (default 0)\n"
    "      --inplace            time the in-place variant instead of out-of-place\n"
    "      --blocking           blocking calls (no request, like MPI_Allreduce) instead\n"
    "                           of a request and sc_wait\n"
    "      --device             device buffers (cudaMalloc on the rank's GPU: SC_DEVICE,\n"
    "                           else local rank modulo the GPUs) and one CUDA stream:\n"
    "                           calls enqueued back to back without a request, timed\n"
    "                           from the first issue to the stream's completion; with\n"
    "                           --blocking the stream is synchronized after each call\n"
    "  -R, --local_register 0|1 1: host buffers from sc_mem_alloc, registered memory\n"
    "                           that the local ranks read in place (as nccl-tests' -R;\n"
    "                           default 0: plain memory)\n"
    "      --json FILE          rank 0 also writes the rows to FILE as JSON (put in\n"
    "                           place when the run ends; a failed run leaves FILE as\n"
    "                           it was)\n"
    "      --seed S             seed of the checked input values (default 1)\n"
    "  -h, --help               this text\n"
    "Size is the per-rank buffer as in nccl-tests: the allreduce/broadcast/reduce\n"
    "buffer, the reduce_scatter send and allgather receive buffer, the alltoall buffer,\n"
    "the sendrecv send buffer (sent to rank + 1 while receiving from rank - 1).\n"
    "Count is the call's count argument, as in nccl-tests: one rank's block for\n"
    "reduce_scatter, allgather and alltoall. Time is the average over the iterations\n"
    "of the slowest rank (nccl-tests averages over ranks); algbw is size / time and\n"
    "busbw algbw times nccl-tests' factor (allreduce 2(n-1)/n; reduce_scatter,\n"
    "allgather, alltoall (n-1)/n; the others 1).\n"
    "Every rank is given the same arguments: they are compared before anything is\n"
    "measured, and ranks given different ones exit 2 saying so.\n";

sc_status_t sc_bench_size_parse(const char *text, size_t *bytes)
{
    unsigned long long value;
    size_t shift = 0;
    char *end;

    if (!text || *text < '0' || *text > '9')
        return SC_ERR_INVALID_ARG;
    errno = 0;
    value = strtoull(text, &end, 10);
    if (errno)
        return SC_ERR_INVALID_ARG;
    switch (*end) {
    case '\0': break;
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    default: return SC_ERR_INVALID_ARG;
    }
    if (*end != '\0' || value == 0 || value > (SIZE_MAX >> shift))
        return SC_ERR_INVALID_ARG;
    *bytes = (size_t)value << shift;
    return SC_SUCCESS;
}

sc_status_t sc_bench_int_parse(const char *text, long long min, long long max,
                                      long long *out)
{
    long long value;
    char *end;

    errno = 0;
    value = strtoll(text, &end, 10);
    if (errno || end == text || *end != '\0' || value < min || value > max)
        return SC_ERR_INVALID_ARG;
    *out = value;
    return SC_SUCCESS;
}

sc_status_t sc_bench_double_parse(const char *text, double min, double max, double *out,
                                  char **end)
{
    char *e;
    double value;

    errno = 0;
    value = strtod(text, &e);
    if (errno || e == text || (!end && *e != '\0') || !(value >= min && value <= max))
        return SC_ERR_INVALID_ARG;
    if (end)
        *end = e;
    *out = value;
    return SC_SUCCESS;
}

sc_status_t sc_bench_ratio_parse(const char *text, double *out)
{
    double value;

    if (sc_bench_double_parse(text, 0.0, 1.0, &value, NULL) != SC_SUCCESS || value == 0.0)
        return SC_ERR_INVALID_ARG;
    *out = value;
    return SC_SUCCESS;
}

sc_status_t sc_bench_ratio_k(const char *prog, double ratio, size_t n, FILE *err,
                             size_t *k)
{
    double x = floor(ratio * (double)n + 0.5);

    if (x < 1.0) {
        fprintf(err, "%s: --ratio %g selects no element of %zu (k rounds to 0)\n", prog,
                ratio, n);
        return SC_ERR_INVALID_ARG;
    }
    *k = (size_t)x;
    return SC_SUCCESS;
}

enum {
    SC_BENCH_OPT_INPLACE = 256,
    SC_BENCH_OPT_JSON,
    SC_BENCH_OPT_SEED,
    SC_BENCH_OPT_BLOCKING,
    SC_BENCH_OPT_DEVICE
};

static const struct option sc_bench_long_options[] = {
    {"minbytes", required_argument, NULL, 'b'},
    {"maxbytes", required_argument, NULL, 'e'},
    {"stepfactor", required_argument, NULL, 'f'},
    {"iters", required_argument, NULL, 'n'},
    {"warmup_iters", required_argument, NULL, 'w'},
    {"check", required_argument, NULL, 'c'},
    {"datatype", required_argument, NULL, 'd'},
    {"op", required_argument, NULL, 'o'},
    {"root", required_argument, NULL, 'r'},
    {"inplace", no_argument, NULL, SC_BENCH_OPT_INPLACE},
    {"blocking", no_argument, NULL, SC_BENCH_OPT_BLOCKING},
    {"device", no_argument, NULL, SC_BENCH_OPT_DEVICE},
    {"local_register", required_argument, NULL, 'R'},
    {"json", required_argument, NULL, SC_BENCH_OPT_JSON},
    {"seed", required_argument, NULL, SC_BENCH_OPT_SEED},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Parses one option's argument into o; prints what is wrong to err. */
static sc_status_t sc_bench_option_apply(int letter, const char *arg, FILE *err,
                                         sc_bench_options_t *o)
{
    long long v;

    switch (letter) {
    case 'b':
    case 'e':
        if (sc_bench_size_parse(arg, letter == 'b' ? &o->min_bytes : &o->max_bytes))
            goto err_value;
        return SC_SUCCESS;
    case 'f':
        if (sc_bench_int_parse(arg, 2, INT_MAX, &v))
            goto err_value;
        o->factor = (size_t)v;
        return SC_SUCCESS;
    case 'R':
    case 'c': /* switches: 0 or 1 */
        if (sc_bench_int_parse(arg, 0, 1, &v))
            goto err_value;
        *(letter == 'R' ? &o->registered : &o->check) = (int)v;
        return SC_SUCCESS;
    case 'n':
    case 'w':
    case 'r':
        if (sc_bench_int_parse(arg, letter == 'n' ? 1 : 0, INT_MAX, &v))
            goto err_value;
        *(letter == 'n' ? &o->iters : letter == 'w' ? &o->warmup : &o->root) = (int)v;
        return SC_SUCCESS;
    case 'd':
        if (sc_dtype_from_name(arg, &o->dtype) != SC_SUCCESS) {
            fprintf(err, "sc-bench: -d: %s\n", sc_last_error());
            return SC_ERR_INVALID_ARG;
        }
        return SC_SUCCESS;
    case 'o':
        if (sc_op_from_name(arg, &o->op) != SC_SUCCESS) {
            fprintf(err, "sc-bench: -o: %s\n", sc_last_error());
            return SC_ERR_INVALID_ARG;
        }
        return SC_SUCCESS;
    case SC_BENCH_OPT_INPLACE:
        o->inplace = 1;
        return SC_SUCCESS;
    case SC_BENCH_OPT_BLOCKING:
        o->blocking = 1;
        return SC_SUCCESS;
    case SC_BENCH_OPT_DEVICE:
        o->device = 1;
        return SC_SUCCESS;
    case SC_BENCH_OPT_JSON:
        o->json_path = arg;
        return SC_SUCCESS;
    case SC_BENCH_OPT_SEED:
        if (sc_bench_int_parse(arg, 0, LLONG_MAX, &v))
            goto err_value;
        o->seed = (uint64_t)v;
        return SC_SUCCESS;
    default:
        fprintf(err, "sc-bench: try 'sc-bench --help'\n");
        return SC_ERR_INVALID_ARG;
    }

err_value:
    if (letter == SC_BENCH_OPT_SEED)
        fprintf(err, "sc-bench: invalid value '%s' for --seed (see sc-bench --help)\n", arg);
    else
        fprintf(err, "sc-bench: invalid value '%s' for -%c (see sc-bench --help)\n", arg,
                letter);
    return SC_ERR_INVALID_ARG;
}

/* Sets the collectives to run from the positional argument. */
static sc_status_t sc_bench_colls_apply(const char *name, FILE *err,
                                        sc_bench_options_t *o)
{
    sc_bench_coll_t coll;

    if (strcmp(name, "all") == 0) {
        for (int i = 0; i < SC_BENCH_COLL_COUNT; i++)
            o->colls[i] = (sc_bench_coll_t)i;
        o->ncolls = SC_BENCH_COLL_COUNT;
        return SC_SUCCESS;
    }
    if (sc_bench_coll_from_name(name, &coll) != SC_SUCCESS) {
        fprintf(err,
                "sc-bench: unknown collective '%s' (expected allreduce reduce_scatter "
                "allgather broadcast reduce alltoall sendrecv all)\n",
                name);
        return SC_ERR_INVALID_ARG;
    }
    o->colls[0] = coll;
    o->ncolls = 1;
    return SC_SUCCESS;
}

sc_status_t sc_bench_options_parse(int argc, char **argv, FILE *out, FILE *err,
                                   sc_bench_options_t *opts)
{
    sc_bench_options_t o = {
        .min_bytes = 8, .max_bytes = 64u << 20, .factor = 2, .iters = 20,
        .warmup = 5, .check = 1, .dtype = SC_FLOAT32, .op = SC_SUM, .root = 0,
        .seed = 1,
    };
    int letter, kept;

    optind = 1;
    opterr = 0; /* the messages below name the option the same way for every error */
    while ((letter = getopt_long(argc, argv, "b:e:f:n:w:c:d:o:r:R:h", sc_bench_long_options,
                                 NULL)) != -1) {
        if (letter == 'h') {
            fputs(sc_bench_usage_text, out);
            o.help = 1;
            *opts = o;
            return SC_SUCCESS;
        }
        if (letter == '?' || letter == ':') {
            fprintf(err, "sc-bench: unknown option or missing value in '%s' (see "
                         "sc-bench --help)\n", argv[optind - 1]);
            return SC_ERR_INVALID_ARG;
        }
        if (sc_bench_option_apply(letter, optarg, err, &o) != SC_SUCCESS)
            return SC_ERR_INVALID_ARG;
    }
    if (optind != argc - 1) {
        fprintf(err, "sc-bench: expected one collective name, got %d (see sc-bench "
                     "--help)\n", argc - optind);
        return SC_ERR_INVALID_ARG;
    }
    if (sc_bench_colls_apply(argv[optind], err, &o) != SC_SUCCESS)
        return SC_ERR_INVALID_ARG;
    if (o.registered && o.device) {
        fprintf(err, "sc-bench: -R 1 registers host memory; it does not go with --device\n");
        return SC_ERR_INVALID_ARG;
    }
    /* all runs what the buffers allow; a collective named alone must allow them. */
    kept = 0;
    for (int i = 0; i < o.ncolls; i++) {
        if (sc_bench_coll_supports(o.colls[i], o.inplace, o.device)) {
            o.colls[kept++] = o.colls[i];
        } else if (o.ncolls == 1) {
            fprintf(err, "sc-bench: %s runs on host buffers out of place only (no %s)\n",
                    sc_bench_coll_name(o.colls[i]), o.device ? "--device" : "--inplace");
            return SC_ERR_INVALID_ARG;
        }
    }
    o.ncolls = kept;
    /* The library's own check, before sc_comm_init rather than at every rank's first
     * call. */
    for (int i = 0; i < o.ncolls; i++) {
        if (o.op == SC_AVG && sc_bench_coll_reduces(o.colls[i]) &&
            !sc_bench_dtype_is_float(o.dtype)) {
            fprintf(err, "sc-bench: %s: op avg is defined on float types only, not on %s\n",
                    sc_bench_coll_name(o.colls[i]), sc_dtype_name(o.dtype));
            return SC_ERR_INVALID_ARG;
        }
    }
    if (o.min_bytes > o.max_bytes) {
        fprintf(err, "sc-bench: -b %zu is larger than -e %zu\n", o.min_bytes,
                o.max_bytes);
        return SC_ERR_INVALID_ARG;
    }
    *opts = o;
    return SC_SUCCESS;
}
