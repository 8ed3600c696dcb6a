/* sc-bench reducer's command line: the usage text and the parsing of its options. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "bench_options.h"
#include "bench_reducer_options.h"

static const char sc_br_usage_text[] =
    "usage: sc-bench reducer --profile FILE|NAME [options]   (run under scrun -n N)\n"
    "  --profile FILE|NAME      gradients to replay, one line 'name count dtype' each\n"
    "                           in registration order; a NAME (resnet50, bert_base,\n"
    "                           gpt2_124m, gpt_1p3b) is looked up in the installed\n"
    "                           PREFIX/share/shardcomm/profiles, then bench/profiles/\n"
    "  --bucket-mb X            bucket cap in MiB (default: the reducer's, SC_BUCKET_CAP_MB\n"
    "                           or 25)\n"
    "  --sweep X,Y,...          one row per bucket cap in MiB (32 caps at most)\n"
    "  --autotune               let the reducer choose the cap over its first iterations\n"
    "                           (with --sweep: one more row after the sweep's)\n"
    "  --compute-ms T           backward compute per iteration, spread over the gradients\n"
    "                           in proportion to their sizes (default 0)\n"
    "  --compute-mode MODE      sleep: nanosleep, the CPU is free, as when a GPU computes\n"
    "                           (default); spin: a busy loop, as CPU compute\n"
    "  --iters N                timed iterations per cap (default 20)\n"
    "  --warmup W               untimed iterations before (default 3)\n"
    "  --view                   gradient_as_bucket_view: gradients written straight into\n"
    "                           sc_reducer_grad_view, mark_ready(NULL)\n"
    "  --registered-grads       the caller's gradients in registered memory (sc_mem_alloc,\n"
    "                           the same offsets on every rank), so that the per-tensor\n"
    "                           all-reduces read the peers' tensors in place too\n"
    "  --hook KIND              allreduce (default), fp16 or bf16 compression, or topk\n"
    "                           (top-k with error feedback; results are checked for\n"
    "                           agreement across ranks only, not against the average)\n"
    "  --density R              topk hook: fraction of each bucket sent (default 0.01)\n"
    "  --json FILE              rank 0 also writes the rows to FILE as JSON\n"
    "  --seed S                 seed of the checked gradient values (default 1)\n"
    "  -h, --help               this text\n"
    "Times in ms, per iteration, averaged over the timed iterations. iter_ms: iteration\n"
    "start to finalize returning, compute_ms: to the last gradient ready, each the slowest\n"
    "rank's. exposed_ms: from the last gradient ready on any rank to finalize returning on\n"
    "every rank (ranks on one node share a clock; across nodes, rank_exposed_ms).\n"
    "skew_ms: how far apart the ranks' last gradients were. rank_exposed_ms: from each\n"
    "rank's own last gradient to its finalize returning, the slowest rank's (it counts a\n"
    "wait for a later rank's compute too). last_bucket_ms: one all-reduce of the\n"
    "last bucket's size alone (with --hook topk, a compressed all-reduce at the hook's\n"
    "density, as the hook runs it), back to back (its memory in cache); last_bucket_cold_ms:\n"
    "the same with every rank's caches flushed first, as the reducer's last bucket is\n"
    "after a backward that went through other memory. per_tensor_iter_ms: the same step\n"
    "with one non-blocking sc_allreduce (avg, in place) per tensor issued as its gradient\n"
    "is ready, then waiting for all. copy_MB: what the reducer copied between gradients and buckets in the last\n"
    "iteration (1 MB = 1e6 B; 0 with --view, and a gradient alone in its bucket is reduced\n"
    "in place).\n";

enum {
    SC_BR_OPT_PROFILE = 256,
    SC_BR_OPT_BUCKET_MB,
    SC_BR_OPT_SWEEP,
    SC_BR_OPT_AUTOTUNE,
    SC_BR_OPT_COMPUTE_MS,
    SC_BR_OPT_COMPUTE_MODE,
    SC_BR_OPT_ITERS,
    SC_BR_OPT_WARMUP,
    SC_BR_OPT_VIEW,
    SC_BR_OPT_REGISTERED_GRADS,
    SC_BR_OPT_HOOK,
    SC_BR_OPT_DENSITY,
    SC_BR_OPT_JSON,
    SC_BR_OPT_SEED
};

static const struct option sc_br_long_options[] = {
    {"profile", required_argument, NULL, SC_BR_OPT_PROFILE},
    {"bucket-mb", required_argument, NULL, SC_BR_OPT_BUCKET_MB},
    {"sweep", required_argument, NULL, SC_BR_OPT_SWEEP},
    {"autotune", no_argument, NULL, SC_BR_OPT_AUTOTUNE},
    {"compute-ms", required_argument, NULL, SC_BR_OPT_COMPUTE_MS},
    {"compute-mode", required_argument, NULL, SC_BR_OPT_COMPUTE_MODE},
    {"iters", required_argument, NULL, SC_BR_OPT_ITERS},
    {"warmup", required_argument, NULL, SC_BR_OPT_WARMUP},
    {"view", no_argument, NULL, SC_BR_OPT_VIEW},
    {"registered-grads", no_argument, NULL, SC_BR_OPT_REGISTERED_GRADS},
    {"hook", required_argument, NULL, SC_BR_OPT_HOOK},
    {"density", required_argument, NULL, SC_BR_OPT_DENSITY},
    {"json", required_argument, NULL, SC_BR_OPT_JSON},
    {"seed", required_argument, NULL, SC_BR_OPT_SEED},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Caps in MiB, comma-separated, each above 0, SC_BR_MAX_CAPS at most. */
static int sc_br_sweep_parse(const char *text, sc_br_options_t *o)
{
    const char *s = text;
    char *end;

    o->ncaps = 0;
    for (;;) {
        if (o->ncaps == SC_BR_MAX_CAPS ||
            sc_bench_double_parse(s, 1e-6, 1e6, &o->caps_mb[o->ncaps], &end))
            return 1;
        o->ncaps++;
        if (*end == '\0')
            return 0;
        if (*end != ',')
            return 1;
        s = end + 1;
    }
}

static int sc_br_option_apply(int letter, const char *arg, sc_br_options_t *o,
                              int *fixed)
{
    long long v;

    switch (letter) {
    case SC_BR_OPT_PROFILE:
        o->profile = arg;
        return 0;
    case SC_BR_OPT_BUCKET_MB:
        *fixed = 1;
        o->ncaps = 1;
        return sc_bench_double_parse(arg, 1e-6, 1e6, &o->caps_mb[0], NULL) != SC_SUCCESS;
    case SC_BR_OPT_SWEEP:
        return sc_br_sweep_parse(arg, o);
    case SC_BR_OPT_AUTOTUNE:
        o->autotune = 1;
        return 0;
    case SC_BR_OPT_COMPUTE_MS:
        return sc_bench_double_parse(arg, 0, 1e7, &o->compute_ms, NULL) != SC_SUCCESS;
    case SC_BR_OPT_COMPUTE_MODE:
        if (strcmp(arg, "sleep") != 0 && strcmp(arg, "spin") != 0)
            return 1;
        o->spin = strcmp(arg, "spin") == 0;
        return 0;
    case SC_BR_OPT_ITERS:
    case SC_BR_OPT_WARMUP:
        if (sc_bench_int_parse(arg, letter == SC_BR_OPT_ITERS ? 1 : 0, INT_MAX, &v))
            return 1;
        *(letter == SC_BR_OPT_ITERS ? &o->iters : &o->warmup) = (int)v;
        return 0;
    case SC_BR_OPT_VIEW:
        o->view = 1;
        return 0;
    case SC_BR_OPT_REGISTERED_GRADS:
        o->registered_grads = 1;
        return 0;
    case SC_BR_OPT_HOOK:
        o->topk = 0; /* the last --hook counts */
        if (strcmp(arg, "allreduce") == 0)
            o->hook = SC_HOOK_ALLREDUCE;
        else if (strcmp(arg, "fp16") == 0)
            o->hook = SC_HOOK_FP16;
        else if (strcmp(arg, "bf16") == 0)
            o->hook = SC_HOOK_BF16;
        else if (strcmp(arg, "topk") == 0)
            o->topk = 1;
        else
            return 1;
        return 0;
    case SC_BR_OPT_DENSITY:
        return sc_bench_double_parse(arg, 1e-9, 1.0, &o->density, NULL) != SC_SUCCESS;
    case SC_BR_OPT_JSON:
        o->json_path = arg;
        return 0;
    case SC_BR_OPT_SEED:
        if (sc_bench_int_parse(arg, 0, LLONG_MAX, &v))
            return 1;
        o->seed = (uint64_t)v;
        return 0;
    default:
        return 1;
    }
}

int sc_br_options_parse(int argc, char **argv, sc_br_options_t *opts)
{
    sc_br_options_t o = {.iters = 20, .warmup = 3, .hook = SC_HOOK_ALLREDUCE, .density = 0.01,
                         .seed = 1};
    int letter, index, fixed = 0, sweep = 0, density = 0;

    optind = 1;
    opterr = 0;
    while ((letter = getopt_long(argc, argv, "h", sc_br_long_options, &index)) != -1) {
        if (letter == 'h') {
            fputs(sc_br_usage_text, stdout);
            o.help = 1;
            *opts = o;
            return 0;
        }
        if (letter == '?' || letter == ':') {
            fprintf(stderr, "sc-bench reducer: unknown option or missing value in '%s' "
                            "(see sc-bench reducer --help)\n", argv[optind - 1]);
            return 1;
        }
        sweep |= letter == SC_BR_OPT_SWEEP;
        density |= letter == SC_BR_OPT_DENSITY;
        if (sc_br_option_apply(letter, optarg, &o, &fixed)) {
            fprintf(stderr, "sc-bench reducer: invalid value '%s' for --%s (see sc-bench "
                            "reducer --help)\n", optarg ? optarg : "",
                    sc_br_long_options[index].name);
            return 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sc-bench reducer: unexpected argument '%s' (see sc-bench reducer "
                        "--help)\n", argv[optind]);
        return 1;
    }
    if (!o.profile) {
        fprintf(stderr, "sc-bench reducer: --profile FILE|NAME is required (resnet50, "
                        "bert_base, gpt2_124m, gpt_1p3b: ResNet-50, BERT-base, GPT-2 124M "
                        "and a 1.3B GPT)\n");
        return 1;
    }
    if (density && !o.topk) {
        fprintf(stderr, "sc-bench reducer: --density is the topk hook's: it goes with "
                        "--hook topk\n");
        return 1;
    }
    if (fixed && (sweep || o.autotune)) {
        fprintf(stderr, "sc-bench reducer: --bucket-mb fixes one cap: it goes with neither "
                        "--sweep nor --autotune\n");
        return 1;
    }
    *opts = o;
    return 0;
}
