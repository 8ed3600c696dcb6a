/* sc-bench's ranks run one command: their command lines compared before anything is
 * measured. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_agree.h"

/* What of a command line the ranks exchange to name a difference. */
#define SC_BENCH_AGREE_TEXT 240

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

/* FNV-1a of the text. */
static uint64_t sc_bench_text_hash(const char *text)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (const unsigned char *s = (const unsigned char *)text; *s; s++)
        h = (h ^ *s) * 0x100000001b3ull;
    return h;
}

int sc_bench_same_command(sc_comm_t *comm, const char *tool, const char *args)
{
    int rank = sc_comm_rank(comm), size = sc_comm_size(comm), other = -1, rc = 1;
    uint64_t mine = sc_bench_text_hash(args ? args : ""), *all = calloc((size_t)size, 8);
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
        char text[SC_BENCH_AGREE_TEXT];
        snprintf(text, sizeof(text), "%s", args ? args : "");
        st = sc_allgather(text, texts, SC_BENCH_AGREE_TEXT, SC_UINT8, comm, NULL, NULL);
        if (st == SC_SUCCESS) {
            /* Every rank says it: the launcher may stop the others when one exits. */
            fprintf(stderr, "%s: rank %d: the ranks were given different arguments: rank 0 "
                    "'%s', rank %d '%s' (every rank runs the same command)\n", tool, rank,
                    texts, other, texts + (size_t)other * SC_BENCH_AGREE_TEXT);
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
