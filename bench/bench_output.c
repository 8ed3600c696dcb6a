/* The benchmarks' output files: a temporary file beside the one named, renamed over it
 * when the run ends well (sc-bench, and sc-bench-mpi, which links no shardcomm). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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
    free(out->tmp);
    free(out->target);
    free(out->path);
    free(out);
}

sc_bench_output_t *sc_bench_output_open(const char *path)
{
    sc_bench_output_t *out = calloc(1, sizeof(*out));
    struct stat st, link;
    int err = ENOMEM, there;

    if (out && (out->path = strdup(path))) {
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
