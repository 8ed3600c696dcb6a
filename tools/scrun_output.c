/* scrun's output: the ranks' lines passed on to scrun's stdout and stderr with their
 * "[rank] " prefixes, never merged with another rank's, and scrun's own messages. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "scrun.h"

/* Blocking: the end's drain, and output scrun has no memory to queue. */
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

/* Queues data for sink (on the queue it shares with its twin). */
static void scrun_sink_add(scrun_sink_t *sink, const char *data, size_t len)
{
    scrun_sink_t *k = sink->queue;

    if (k->broken || len == 0)
        return;
    if (k->qoff > 0 && k->qoff == k->qlen)
        k->qoff = k->qlen = 0;
    if (k->qlen + len > k->qcap) {
        size_t cap = k->qcap ? k->qcap : 65536;
        char *q;
        if (k->qoff > 0) { /* the written head is dropped first */
            memmove(k->q, k->q + k->qoff, k->qlen - k->qoff);
            k->qlen -= k->qoff;
            k->qoff = 0;
        }
        while (cap < k->qlen + len)
            cap *= 2;
        q = cap > k->qcap ? realloc(k->q, cap) : k->q;
        if (q == NULL) { /* no memory: this output goes out at once, blocking */
            scrun_sink_write(k, k->q, k->qlen);
            k->qlen = 0;
            scrun_sink_write(k, data, len);
            return;
        }
        k->q = q;
        k->qcap = cap;
    }
    memcpy(k->q + k->qlen, data, len);
    k->qlen += len;
}

size_t scrun_sink_pending(const scrun_sink_t *sink)
{
    return sink->broken || sink->queue != sink ? 0 : sink->qlen - sink->qoff;
}

void scrun_sink_pump(scrun_sink_t *sink)
{
    size_t len = scrun_sink_pending(sink);
    ssize_t n;

    if (len == 0)
        return;
    n = write(sink->fd, sink->q + sink->qoff, len < PIPE_BUF ? len : PIPE_BUF);
    if (n > 0) {
        sink->qoff += (size_t)n;
    } else if (n < 0 && errno != EINTR && errno != EAGAIN) {
        sink->broken = true;
        sink->error = errno;
    }
}

void scrun_sinks_drain(scrun_run_t *run, double seconds)
{
    struct timespec t0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 2; i++) {
        scrun_sink_t *k = &run->sinks[i];
        if (seconds < 0) {
            if (scrun_sink_pending(k) > 0)
                scrun_sink_write(k, k->q + k->qoff, scrun_sink_pending(k));
            k->qoff = k->qlen = 0;
            continue;
        }
        while (scrun_sink_pending(k) > 0) {
            struct timespec t;
            struct pollfd p = {.fd = k->fd, .events = POLLOUT};
            clock_gettime(CLOCK_MONOTONIC, &t);
            double left = seconds - ((double)(t.tv_sec - t0.tv_sec) +
                                     (double)(t.tv_nsec - t0.tv_nsec) * 1e-9);
            if (left <= 0 || poll(&p, 1, (int)(left * 1000.0) + 1) == 0)
                return; /* the reader takes nothing: what is left is dropped */
            scrun_sink_pump(k);
        }
    }
}

/* Ends a line another stream left unfinished on this sink, or on its twin (the same
 * file: a rank's stdout line cut by another's stderr under 2>&1), so lines never merge. */
static void scrun_sink_claim(scrun_sink_t *sink, scrun_stream_t *s)
{
    scrun_sink_t *both[2] = {sink, sink->twin};

    for (int i = 0; i < 2; i++) {
        scrun_sink_t *k = both[i];
        if (k != NULL && k->open_line != NULL && k->open_line != s) {
            scrun_sink_add(k, "\n", 1);
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
    run->sinks[0].queue = &run->sinks[0];
    run->sinks[1].queue = &run->sinks[1];
    if (fstat(STDOUT_FILENO, &out) == 0 && fstat(STDERR_FILENO, &err) == 0 &&
        out.st_dev == err.st_dev && out.st_ino == err.st_ino) {
        run->sinks[0].twin = &run->sinks[1];
        run->sinks[1].twin = &run->sinks[0];
        run->sinks[1].queue = &run->sinks[0];
    }
}

/* Passes data of one stream on to its sink with the rank prefix at every line start. */
static void scrun_stream_emit(scrun_stream_t *s, const char *data, size_t len)
{
    scrun_sink_t *sink = s->sink;
    const char *end = data + len;

    scrun_sink_claim(sink, s);
    while (data < end) {
        const char *nl = memchr(data, '\n', (size_t)(end - data));
        const char *seg_end = nl != NULL ? nl + 1 : end;
        if (s->at_line_start)
            scrun_sink_add(sink, s->prefix, s->prefix_len);
        scrun_sink_add(sink, data, (size_t)(seg_end - data));
        s->at_line_start = nl != NULL;
        data = seg_end;
    }
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
    scrun_sink_claim(&run->sinks[1], NULL);
    scrun_sink_add(&run->sinks[1], line, (size_t)n);
}

void scrun_stream_close(scrun_stream_t *s)
{
    if (s->used > 0)
        scrun_stream_emit(s, s->buf, s->used);
    s->used = 0;
    if (!s->at_line_start) /* a last line without newline still ends with one */
        scrun_stream_emit(s, "\n", 1);
    close(s->fd);
    s->fd = -1;
}

void scrun_stream_read(scrun_stream_t *s, bool drain)
{
    while (s->fd >= 0) {
        ssize_t n = read(s->fd, s->buf + s->used, sizeof s->buf - s->used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            scrun_stream_close(s);
            return;
        }
        s->used += (size_t)n;
        const char *last = memrchr(s->buf, '\n', s->used);
        if (last != NULL) {
            size_t k = (size_t)(last - s->buf) + 1;
            scrun_stream_emit(s, s->buf, k);
            memmove(s->buf, s->buf + k, s->used - k);
            s->used -= k;
        } else if (s->used == sizeof s->buf) {
            scrun_stream_emit(s, s->buf, s->used);
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
