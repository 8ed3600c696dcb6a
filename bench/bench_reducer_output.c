/* sc-bench reducer's output: the header, the rows and the summary as text, the rows as
 * JSON. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_cache.h"
#include "bench_output.h"
#include "bench_reducer_output.h"

static const char *sc_br_hook_name(const sc_br_options_t *o)
{
    if (o->topk)
        return "topk";
    return o->hook == SC_HOOK_FP16 ? "fp16" : o->hook == SC_HOOK_BF16 ? "bf16" : "allreduce";
}

void sc_br_print_header(const sc_br_options_t *o, const sc_bench_profile_t *p, sc_comm_t *comm,
                        int argc, char **argv)
{

    printf("# sc-bench");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n# profile %s: %d tensors, %zu elements, %.1f MiB of gradients\n", o->profile,
           p->ntensors, p->count, (double)p->bytes / (1 << 20));
    printf("# nranks %d, iters %d, warmup %d, hook %s, %s, seed %" PRIu64 "\n", sc_comm_size(comm),
           o->iters, o->warmup, sc_br_hook_name(o),
           o->view ? "gradients written into the bucket views (gradient_as_bucket_view)"
                   : "gradients copied into the buckets and back",
           o->seed);
    if (o->topk)
        printf("# topk hook: density %g, exact selection, error feedback on; the check "
               "compares the ranks' results with each other only\n", o->density);
    if (o->compute_ms > 0)
        printf("# compute %.3g ms per iteration, %s, spread over the gradients by size\n",
               o->compute_ms,
               o->spin ? "spin (a busy loop: CPU compute)"
                       : "sleep (the CPU is free: GPU compute)");
    else
        printf("# no compute: the gradients are ready back to back\n");
    printf("# times in ms per iteration, averaged over the iterations; per_tensor: one "
           "sc_allreduce per tensor\n");
    if (sc_comm_local_size(comm) == sc_comm_size(comm))
        printf("# exposed_ms from the last gradient ready on any rank (one node, one clock);"
               " skew_ms: how far apart\n# the ranks' last gradients were; rank_exposed_ms "
               "from each rank's own last gradient\n");
    else
        printf("# exposed_ms = rank_exposed_ms, from each rank's own last gradient (the "
               "nodes do not share a clock)\n");
    printf("# last_bucket_ms: back to back, in cache; last_bucket_cold_ms: every rank's "
           "caches flushed first (%zu MiB written over)%s\n#\n",
           sc_bench_cache_flush_bytes() >> 20,
           o->topk ? "; both a compressed all-reduce at the hook's density" : "");
    printf("# %9s %7s %9s %10s %10s %8s %15s %14s %19s %18s %10s %8s %-5s %s\n", "bucket_mb",
           "buckets", "iter_ms", "compute_ms", "exposed_ms", "skew_ms", "rank_exposed_ms",
           "last_bucket_ms", "last_bucket_cold_ms", "per_tensor_iter_ms", "per_tensor",
           "copy_MB", "cap", "check");
    printf("# %9s %7s %9s %10s %10s %8s %15s %14s %19s %18s %10s %8s %-5s %s\n", "(MiB)", "",
           "", "", "", "", "", "", "", "", "/iter", "/iter", "", "");
    fflush(stdout);
}

void sc_br_print_row(const sc_br_row_t *w)
{
    char check[64], skew[32];

    if (w->wrong)
        snprintf(check, sizeof(check), "WRONG %" PRId64, w->wrong);
    else
        snprintf(check, sizeof(check), "ok");
    if (!w->identical)
        strncat(check, w->wrong ? ", ranks differ" : " values, ranks differ",
                sizeof(check) - strlen(check) - 1);
    if (isnan(w->t.skew))
        snprintf(skew, sizeof(skew), "-");
    else
        snprintf(skew, sizeof(skew), "%.3f", w->t.skew);
    printf("  %9.6g %7d %9.3f %10.3f %10.3f %8s %15.3f %14.3f %19.3f %18.3f %10.2f %8.1f %-5s "
           "%s\n",
           (double)w->cap_bytes / (1 << 20), w->buckets, w->t.iter, w->t.compute,
           w->t.exposed, skew, w->t.exposed_rank, w->last_bucket_ms, w->last_bucket_cold_ms,
           w->per_tensor.iter,
           w->t.iter > 0 ? w->per_tensor.iter / w->t.iter : 0.0, (double)w->copy_bytes * 1e-6,
           w->autotune ? "auto" : "fixed", check);
    fflush(stdout);
}

void sc_br_print_summary(const sc_br_row_t *rows, int nrows)
{
    int best = -1, tuned = -1;

    for (int i = 0; i < nrows; i++) {
        if (rows[i].autotune)
            tuned = i;
        else if (best < 0 || rows[i].t.iter < rows[best].t.iter)
            best = i;
    }
    if (best >= 0 && nrows - (tuned >= 0) > 1)
        printf("# best cap: %.6g MiB, iter_ms %.3f\n",
               (double)rows[best].cap_bytes / (1 << 20), rows[best].t.iter);
    if (best >= 0 && tuned >= 0) {
        int same = -1; /* the sweep's row of the cap autotune chose */

        for (int i = 0; i < nrows; i++)
            if (!rows[i].autotune && rows[i].cap_bytes == rows[tuned].cap_bytes)
                same = i;
        printf("# autotune chose %.6g MiB: iter_ms %.3f, %.3f x the best cap's",
               (double)rows[tuned].cap_bytes / (1 << 20), rows[tuned].t.iter,
               rows[tuned].t.iter / rows[best].t.iter);
        /* Rows are timed minutes apart: the choice itself, timed as the sweep timed
         * the best, says more about the choice than a row timed later. */
        if (same >= 0)
            printf("; the sweep's row for that cap: iter_ms %.3f, %.3f x the best cap's",
                   rows[same].t.iter, rows[same].t.iter / rows[best].t.iter);
        printf("\n");
    }
    fflush(stdout);
}

void sc_br_json_write(FILE *f, const sc_br_options_t *o, int nranks, const sc_br_row_t *rows,
                      int nrows)
{

    fputs("[\n", f);
    for (int i = 0; i < nrows; i++) {
        const sc_br_row_t *w = &rows[i];
        char skew[32];

        if (isnan(w->t.skew)) /* JSON has no NaN */
            snprintf(skew, sizeof(skew), "null");
        else
            snprintf(skew, sizeof(skew), "%.6g", w->t.skew);

        fprintf(f, "  {\"profile\": \"");
        sc_bench_json_string(f, o->profile);
        fprintf(f,
                "\", \"nranks\": %d, \"bucket_mb\": %.9g, \"bucket_bytes\": %zu, "
                "\"autotune\": %s, \"buckets\": %d, \"iter_ms\": %.6g, \"compute_ms\": %.6g, "
                "\"exposed_ms\": %.6g, \"skew_ms\": %s, \"rank_exposed_ms\": %.6g, "
                "\"last_bucket_ms\": %.6g, \"last_bucket_cold_ms\": %.6g, "
                "\"last_bucket_bytes\": %zu, \"last_bucket_sent_bytes\": %zu, "
                "\"per_tensor_iter_ms\": %.6g, \"per_tensor_exposed_ms\": %.6g, "
                "\"compute_target_ms\": %.6g, \"compute_mode\": \"%s\", \"view\": %s, "
                "\"hook\": \"%s\", \"iters\": %d, "
                "\"wrong\": %" PRId64 ", \"identical\": %s, \"copy_bytes\": %zu}%s\n",
                nranks, (double)w->cap_bytes / (1 << 20), w->cap_bytes,
                w->autotune ? "true" : "false", w->buckets, w->t.iter, w->t.compute,
                w->t.exposed, skew, w->t.exposed_rank, w->last_bucket_ms,
                w->last_bucket_cold_ms, w->last_bucket_bytes, w->last_bucket_sent,
                w->per_tensor.iter, w->per_tensor.exposed,
                o->compute_ms, o->spin ? "spin" : "sleep",
                o->view ? "true" : "false", sc_br_hook_name(o), o->iters, w->wrong,
                w->identical ? "true" : "false", w->copy_bytes, i + 1 < nrows ? "," : "");
    }
    fputs("]\n", f);
}
