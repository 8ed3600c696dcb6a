/* The benchmarks' output files: a temporary file beside the one named, renamed over it
 * when the run ends well (sc-bench, and sc-bench-mpi, which links no shardcomm). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_output.h"

/* The mode fopen(path, "w") would give a new file: 0666 less the umask. */
static mode_t sc_bench_output_mode(void)
{
    mode_t mask = umask(0);

    umask(mask);
    return 0666 & ~mask;
}

/* The temporary files in existence, removed by a signal that ends the process (scrun
 * sends SIGTERM to every rank when one fails, and a user presses Ctrl-C): a stopped run
 * leaves no "TARGET.XXXXXX" behind, as a failed one does not. */
#define SC_BENCH_OUTPUT_TMPS 4
static char *volatile sc_bench_output_tmps[SC_BENCH_OUTPUT_TMPS];
static const int sc_bench_output_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

static void sc_bench_output_on_signal(int sig)
{
    for (int i = 0; i < SC_BENCH_OUTPUT_TMPS; i++)
        if (sc_bench_output_tmps[i])
            unlink(sc_bench_output_tmps[i]); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Records tmp for the handler (installed with the first one, where the signal is not
 * ignored). */
static void sc_bench_output_track(char *tmp)
{
    static int installed;

    if (!installed) {
        for (size_t i = 0; i < sizeof(sc_bench_output_signals) / sizeof(int); i++) {
            struct sigaction old, sa;
            if (sigaction(sc_bench_output_signals[i], NULL, &old) != 0 ||
                old.sa_handler == SIG_IGN)
                continue;
            memset(&sa, 0, sizeof(sa));
            sa.sa_handler = sc_bench_output_on_signal;
            sigemptyset(&sa.sa_mask);
            sigaction(sc_bench_output_signals[i], &sa, NULL);
        }
        installed = 1;
    }
    for (int i = 0; i < SC_BENCH_OUTPUT_TMPS; i++) {
        if (!sc_bench_output_tmps[i]) {
            sc_bench_output_tmps[i] = tmp;
            return;
        }
    }
}

static void sc_bench_output_untrack(const char *tmp)
{
    for (int i = 0; i < SC_BENCH_OUTPUT_TMPS; i++)
        if (sc_bench_output_tmps[i] == tmp)
            sc_bench_output_tmps[i] = NULL;
}

/* Opens out->tmp, "TARGET.XXXXXX" beside out->target, with mode, as out->f. Returns 0,
 * or errno. */
static int sc_bench_output_open_tmp(sc_bench_output_t *out, mode_t mode)
{
    size_t n = strlen(out->target);
    int fd;

    if (!(out->tmp = malloc(n + 8)))
        return ENOMEM;
    memcpy(out->tmp, out->target, n);
    memcpy(out->tmp + n, ".XXXXXX", 8);
    if ((fd = mkstemp(out->tmp)) < 0)
        return errno;
    sc_bench_output_track(out->tmp);
    if (fchmod(fd, mode) != 0 || !(out->f = fdopen(fd, "w"))) {
        int err = errno;
        close(fd);
        unlink(out->tmp);
        return err;
    }
    return 0;
}

static void sc_bench_output_free(sc_bench_output_t *out)
{
    if (out->tmp)
        sc_bench_output_untrack(out->tmp);
    free(out->tmp);
    free(out->target);
    free(out->path);
    free(out);
}

sc_bench_output_t *sc_bench_output_open(const char *path)
{
    sc_bench_output_t *out = calloc(1, sizeof(*out));
    struct stat st, link;
    int err = ENOMEM, there = 0;

    if (out && !path[0]) {
        err = ENOENT; /* "" names no file: refused before anything runs */
    } else if (out && (out->path = strdup(path))) {
        there = stat(path, &st) == 0;
        if (there ? S_ISREG(st.st_mode) : errno == ENOENT) {
            /* A link: the file it names is replaced, the link stays. */
            if (lstat(path, &link) == 0 && S_ISLNK(link.st_mode))
                out->target = realpath(path, NULL); /* NULL when dangling: written through */
            else
                out->target = strdup(path);
        }
        if (out->target)
            err = sc_bench_output_open_tmp(out, there ? st.st_mode & 07777
                                                      : sc_bench_output_mode());
        else
            err = (out->f = fopen(path, "w")) ? 0 : errno;
    }
    if (err == 0)
        return out;
    if (!path[0])
        fprintf(stderr, "%s: cannot write '': the file name is empty\n",
                program_invocation_short_name);
    else if (out && out->tmp && there)
        /* The file exists (and may be writable): the temporary file beside it failed. */
        fprintf(stderr, "%s: cannot write %s: the temporary file written beside it and "
                "renamed over it (%s.XXXXXX) cannot be created: %s\n",
                program_invocation_short_name, path, out->target, strerror(err));
    else
        fprintf(stderr, "%s: cannot write %s: %s\n", program_invocation_short_name, path,
                strerror(err));
    if (out)
        sc_bench_output_free(out);
    return NULL;
}

int sc_bench_output_commit(sc_bench_output_t *out)
{
    int failed, err;

    if (!out)
        return 0;
    failed = fflush(out->f) != 0 || ferror(out->f);
    err = errno;
    if (!failed && out->tmp && fsync(fileno(out->f)) != 0) {
        failed = 1;
        err = errno;
    }
    if (fclose(out->f) != 0 && !failed) {
        failed = 1;
        err = errno;
    }
    if (!failed && out->tmp && rename(out->tmp, out->target) != 0) {
        failed = 1;
        err = errno;
    }
    if (failed) {
        fprintf(stderr, "%s: cannot write %s: %s\n", program_invocation_short_name,
                out->path, strerror(err));
        if (out->tmp)
            unlink(out->tmp);
    }
    sc_bench_output_free(out);
    return failed;
}

void sc_bench_output_discard(sc_bench_output_t *out)
{
    if (!out)
        return;
    fclose(out->f);
    if (out->tmp)
        unlink(out->tmp);
    sc_bench_output_free(out);
}

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 where none starts there. */
static int sc_bench_utf8_len(const unsigned char *s)
{
    int n = s[0] < 0x80                   ? 1
            : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
            : s[0] >= 0xe0 && s[0] <= 0xef ? 3
            : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                                           : 0;

    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    /* Overlong forms, surrogates and code points past U+10FFFF are not valid. */
    if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

void sc_bench_json_string(FILE *f, const char *text)
{
    const unsigned char *s = (const unsigned char *)text;

    while (*s) {
        int n = sc_bench_utf8_len(s);
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if (*s < 0x20 || n == 0)
            fprintf(f, "\\u%04x", *s);
        else
            fwrite(s, 1, (size_t)n, f);
        s += n ? n : 1;
    }
}
