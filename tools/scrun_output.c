/* scrun's output: the ranks' lines passed on to scrun's stdout and stderr with their
 * "[rank] " prefixes, never merged with another rank's, and scrun's own messages. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scrun.h"

static void scrun_sink_write(scrun_sink_t *sink, const char *data, size_t len)
{
    while (len > 0 && !sink->broken) {
        ssize_t n = write(sink->fd, data, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) { /* our stdout was left non-blocking by whoever opened it */
                struct pollfd p = {.fd = sink->fd, .events = POLLOUT};
                poll(&p, 1, -1);
                continue;
            }
            sink->broken = true;
            sink->error = errno;
            return;
        }
        data += n;
        len -= (size_t)n;
    }
}

static void scrun_scratch_flush(scrun_run_t *run, scrun_sink_t *sink)
{
    scrun_sink_write(sink, run->scratch, run->scratch_used);
    run->scratch_used = 0;
}

static void scrun_scratch_add(scrun_run_t *run, scrun_sink_t *sink, const char *data, size_t len)
{
    while (len > 0) {
        size_t room = sizeof run->scratch - run->scratch_used;
        size_t n = len < room ? len : room;
        memcpy(run->scratch + run->scratch_used, data, n);
        run->scratch_used += n;
        data += n;
        len -= n;
        if (run->scratch_used == sizeof run->scratch)
            scrun_scratch_flush(run, sink);
    }
}

/* Ends a line another stream left unfinished on this sink, or on its twin (the same
 * file: a rank's stdout line cut by another's stderr under 2>&1), so lines never merge. */
static void scrun_sink_claim(scrun_run_t *run, scrun_sink_t *sink, scrun_stream_t *s)
{
    scrun_sink_t *both[2] = {sink, sink->twin};

    for (int i = 0; i < 2; i++) {
        scrun_sink_t *k = both[i];
        if (k != NULL && k->open_line != NULL && k->open_line != s) {
            scrun_scratch_add(run, k, "\n", 1);
            scrun_scratch_flush(run, k);
            k->open_line->at_line_start = true;
            k->open_line = NULL;
        }
    }
}

void scrun_sinks_init(scrun_run_t *run)
{
    struct stat out, err;

    run->sinks[0] = (scrun_sink_t){.fd = STDOUT_FILENO};
    run->sinks[1] = (scrun_sink_t){.fd = STDERR_FILENO};
    if (fstat(STDOUT_FILENO, &out) == 0 && fstat(STDERR_FILENO, &err) == 0 &&
        out.st_dev == err.st_dev && out.st_ino == err.st_ino) {
        run->sinks[0].twin = &run->sinks[1];
        run->sinks[1].twin = &run->sinks[0];
    }
}

/* Passes data of one stream on to its sink with the rank prefix at every line start. */
static void scrun_stream_emit(scrun_run_t *run, scrun_stream_t *s, const char *data, size_t len)
{
    scrun_sink_t *sink = s->sink;
    const char *end = data + len;

    scrun_sink_claim(run, sink, s);
    while (data < end) {
        const char *nl = memchr(data, '\n', (size_t)(end - data));
        const char *seg_end = nl != NULL ? nl + 1 : end;
        if (s->at_line_start)
            scrun_scratch_add(run, sink, s->prefix, s->prefix_len);
        scrun_scratch_add(run, sink, data, (size_t)(seg_end - data));
        s->at_line_start = nl != NULL;
        data = seg_end;
    }
    scrun_scratch_flush(run, sink);
    sink->open_line = s->at_line_start ? NULL : s;
}

/* Through the same sink as the ranks' lines, so that a line never merges with theirs. */
void scrun_msg(scrun_run_t *run, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n = snprintf(line, sizeof line, "scrun: ");
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    scrun_sink_claim(run, &run->sinks[1], NULL);
    scrun_scratch_add(run, &run->sinks[1], line, (size_t)n);
    scrun_scratch_flush(run, &run->sinks[1]);
}

void scrun_stream_close(scrun_run_t *run, scrun_stream_t *s)
{
    if (s->used > 0)
        scrun_stream_emit(run, s, s->buf, s->used);
    s->used = 0;
    if (!s->at_line_start) /* a last line without newline still ends with one */
        scrun_stream_emit(run, s, "\n", 1);
    close(s->fd);
    s->fd = -1;
}

void scrun_stream_read(scrun_run_t *run, scrun_stream_t *s, bool drain)
{
    while (s->fd >= 0) {
        ssize_t n = read(s->fd, s->buf + s->used, sizeof s->buf - s->used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            scrun_stream_close(run, s);
            return;
        }
        s->used += (size_t)n;
        const char *last = memrchr(s->buf, '\n', s->used);
        if (last != NULL) {
            size_t k = (size_t)(last - s->buf) + 1;
            scrun_stream_emit(run, s, s->buf, k);
            memmove(s->buf, s->buf + k, s->used - k);
            s->used -= k;
        } else if (s->used == sizeof s->buf) {
            scrun_stream_emit(run, s, s->buf, s->used);
            s->used = 0;
        }
        if (!drain)
            return;
    }
}

void scrun_stream_init(scrun_stream_t *s, int fd, scrun_sink_t *sink, long rank)
{
    s->fd = fd;
    s->sink = sink;
    s->prefix_len = (size_t)snprintf(s->prefix, sizeof s->prefix, "[%ld] ", rank);
    s->at_line_start = true;
    s->used = 0;
}
