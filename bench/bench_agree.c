/* sc-bench's ranks run one command: their command lines compared before anything is
 * measured. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_agree.h"

/* What of a command line the ranks exchange to name a difference: the arguments, each
 * ended by a NUL, cut at this many bytes. */
#define SC_BENCH_AGREE_TEXT 4096

char *sc_bench_command_line(int argc, char **argv)
{
    size_t len = 1;
    char *line;

    for (int i = 0; i < argc; i++)
        len += strlen(argv[i]) + 1;
    line = malloc(len);
    if (!line)
        return NULL;
    line[0] = '\0';
    for (int i = 0; i < argc; i++) {
        strcat(line, argv[i]);
        if (i + 1 < argc)
            strcat(line, " ");
    }
    return line;
}

/* FNV-1a over the arguments, each with its ending NUL: "a b" as one argument and as two
 * differ. */
static uint64_t sc_bench_args_hash(int argc, char *const *argv)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (int i = 0; i < argc; i++) {
        const unsigned char *s = (const unsigned char *)argv[i];
        do
            h = (h ^ *s) * 0x100000001b3ull;
        while (*s++);
    }
    return h;
}

/* The arguments packed NUL after NUL into buf (SC_BENCH_AGREE_TEXT bytes, zero-filled
 * first), as many as fit. */
static void sc_bench_args_pack(int argc, char *const *argv, char *buf)
{
    size_t n = 0;

    memset(buf, 0, SC_BENCH_AGREE_TEXT);
    for (int i = 0; i < argc; i++) {
        size_t len = strlen(argv[i]) + 1;
        if (n + len >= SC_BENCH_AGREE_TEXT)
            break;
        memcpy(buf + n, argv[i], len);
        n += len;
    }
}

/* The first argument in which the packed lists a and b differ: its number (1-based),
 * and each side's text in *ta and *tb ("" past the end of a list). */
static int sc_bench_args_first_difference(const char *a, const char *b, const char **ta,
                                          const char **tb)
{
    const char *end_a = a + SC_BENCH_AGREE_TEXT, *end_b = b + SC_BENCH_AGREE_TEXT;
    int k = 1;

    while (a < end_a && b < end_b && strcmp(a, b) == 0 && (*a || *b)) {
        a += strlen(a) + 1;
        b += strlen(b) + 1;
        k++;
    }
    *ta = a < end_a ? a : "";
    *tb = b < end_b ? b : "";
    return k;
}

int sc_bench_same_command(sc_comm_t *comm, const char *tool, int argc, char *const *argv)
{
    int rank = sc_comm_rank(comm), size = sc_comm_size(comm), other = -1, rc = 1;
    uint64_t mine = sc_bench_args_hash(argc, argv), *all = calloc((size_t)size, 8);
    char *texts = calloc((size_t)size, SC_BENCH_AGREE_TEXT);
    sc_status_t st = all && texts ? SC_SUCCESS : SC_ERR_NO_MEMORY;

    if (st == SC_SUCCESS)
        st = sc_allgather(&mine, all, 1, SC_INT64, comm, NULL, NULL);
    for (int r = 1; st == SC_SUCCESS && r < size && other < 0; r++)
        if (all[r] != all[0])
            other = r;
    if (st == SC_SUCCESS && other < 0) {
        rc = 0;
    } else if (st == SC_SUCCESS) {
        char *packed = malloc(SC_BENCH_AGREE_TEXT);
        st = packed ? SC_SUCCESS : SC_ERR_NO_MEMORY;
        if (packed) {
            sc_bench_args_pack(argc, argv, packed);
            st = sc_allgather(packed, texts, SC_BENCH_AGREE_TEXT, SC_UINT8, comm, NULL, NULL);
            free(packed);
        }
        if (st == SC_SUCCESS) {
            const char *ta, *tb;
            int k = sc_bench_args_first_difference(
                texts, texts + (size_t)other * SC_BENCH_AGREE_TEXT, &ta, &tb);
            /* Every rank says it: the launcher may stop the others when one exits. */
            fprintf(stderr, "%s: rank %d: the ranks were given different arguments: "
                    "argument %d is '%s' on rank 0 and '%s' on rank %d (every rank runs "
                    "the same command)\n", tool, rank, k, ta, tb, other);
            rc = 2;
        }
    }
    if (st != SC_SUCCESS)
        fprintf(stderr, "%s: rank %d: comparing the ranks' arguments failed: %s: %s\n", tool,
                rank, sc_status_string(st), all && texts ? sc_last_error() : "out of memory");
    free(all);
    free(texts);
    return rc;
}
