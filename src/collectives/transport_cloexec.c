/* UCX's descriptors made close-on-exec: UCX 1.13 opens its sockets, pipes, epoll sets and
 * timerfds without FD_CLOEXEC and has no setting for it, so a program a rank started
 * (fork and exec) held them. A rank killed while such a program lived left its TCP
 * connections open in it: peers on other nodes saw no close and waited SC_TIMEOUT, and
 * its UCX listening port stayed taken. UCX names none of its descriptors but the
 * worker's event descriptor; the others are found through the epoll sets they are
 * watched in (/proc/self/fdinfo), which only UCX adds to. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collectives/transport_cloexec.h"
#include "core/log.h"

/* One open descriptor of the process, as the scan found it. */
typedef struct {
    int fd;
    dev_t dev;
    ino_t ino;
    unsigned char epoll;    /* an epoll set: its members are listed in its fdinfo */
    unsigned char fifo;     /* a pipe's end: its other end has the same inode */
    unsigned char ucx;      /* UCX's */
    unsigned char expanded; /* an epoll set of UCX's whose members were marked */
    unsigned char watcher;  /* an epoll set that watches one of UCX's */
} sc_fd_seen_t;

typedef struct {
    sc_fd_seen_t *fds; /* sorted by descriptor */
    size_t n, cap;
} sc_fd_list_t;

static int sc_fd_cmp(const void *a, const void *b)
{
    const sc_fd_seen_t *x = a, *y = b;

    return (x->fd > y->fd) - (x->fd < y->fd);
}

/* The process's open descriptors (/proc/self/fd), the listing's own left out. An errno
 * value on failure. */
static int sc_fd_list_read(sc_fd_list_t *l)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int err = 0;

    if (!d)
        return errno;
    while ((e = readdir(d)) != NULL) {
        char path[64], target[32];
        struct stat sb;
        ssize_t len;
        int fd;

        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        fd = atoi(e->d_name);
        if (fd == dirfd(d) || fstat(fd, &sb) != 0)
            continue;
        if (l->n == l->cap) {
            size_t cap = l->cap ? 2 * l->cap : 64;
            sc_fd_seen_t *grown = realloc(l->fds, cap * sizeof(*grown));
            if (!grown) {
                err = ENOMEM;
                break;
            }
            l->fds = grown;
            l->cap = cap;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        len = readlink(path, target, sizeof(target) - 1);
        target[len > 0 ? len : 0] = '\0';
        memset(&l->fds[l->n], 0, sizeof(l->fds[0]));
        l->fds[l->n].fd = fd;
        l->fds[l->n].dev = sb.st_dev;
        l->fds[l->n].ino = sb.st_ino;
        l->fds[l->n].epoll = strcmp(target, "anon_inode:[eventpoll]") == 0;
        l->fds[l->n].fifo = S_ISFIFO(sb.st_mode);
        l->n++;
    }
    closedir(d);
    if (l->n > 1)
        qsort(l->fds, l->n, sizeof(l->fds[0]), sc_fd_cmp);
    return err;
}

static sc_fd_seen_t *sc_fd_list_find(const sc_fd_list_t *l, int fd)
{
    sc_fd_seen_t key;

    key.fd = fd;
    return l->n ? bsearch(&key, l->fds, l->n, sizeof(key), sc_fd_cmp) : NULL;
}

/* The members of epoll set ep still open as the file they were added as (a "tfd:" line
 * of its fdinfo names the descriptor and its inode), into members (room for l->n);
 * their count. */
static size_t sc_fd_epoll_members(const sc_fd_list_t *l, int ep, sc_fd_seen_t **members)
{
    char path[64], line[256];
    size_t n = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", ep);
    f = fopen(path, "re");
    if (!f)
        return 0;
    while (n < l->n && fgets(line, sizeof(line), f)) {
        const char *ino_at = strstr(line, " ino:");
        sc_fd_seen_t *m;
        int tfd;

        if (sscanf(line, "tfd: %d", &tfd) != 1 || !ino_at)
            continue;
        m = sc_fd_list_find(l, tfd);
        if (m && m->ino == (ino_t)strtoull(ino_at + 5, NULL, 16))
            members[n++] = m;
    }
    fclose(f);
    return n;
}

/* Marks the members of every marked epoll set, and theirs, as UCX's. */
static void sc_fd_mark_down(const sc_fd_list_t *l, sc_fd_seen_t **members)
{
    int changed;

    do {
        changed = 0;
        for (size_t i = 0; i < l->n; i++) {
            sc_fd_seen_t *s = &l->fds[i];
            size_t n;

            if (!s->ucx || !s->epoll || s->expanded)
                continue;
            s->expanded = 1;
            n = sc_fd_epoll_members(l, s->fd, members);
            for (size_t j = 0; j < n; j++) {
                changed |= !members[j]->ucx;
                members[j]->ucx = 1;
            }
        }
    } while (changed);
}

/* Marks as UCX's the epoll sets that watch a descriptor already marked (UCX's progress
 * thread's set, which watches the worker's transports beside the worker's own set): one
 * step, from the marks made before it. */
static void sc_fd_mark_up(const sc_fd_list_t *l, sc_fd_seen_t **members)
{
    for (size_t i = 0; i < l->n; i++) {
        sc_fd_seen_t *s = &l->fds[i];
        size_t n;

        if (s->ucx || !s->epoll)
            continue;
        n = sc_fd_epoll_members(l, s->fd, members);
        for (size_t j = 0; j < n && !s->watcher; j++)
            s->watcher = members[j]->ucx;
    }
    for (size_t i = 0; i < l->n; i++)
        l->fds[i].ucx |= l->fds[i].watcher;
}

/* Marks the other end of every marked pipe (the write end UCX's threads wake each other
 * through is watched nowhere). */
static void sc_fd_mark_pipes(const sc_fd_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        const sc_fd_seen_t *s = &l->fds[i];

        if (!s->ucx || !s->fifo)
            continue;
        for (size_t j = 0; j < l->n; j++)
            if (l->fds[j].fifo && l->fds[j].dev == s->dev && l->fds[j].ino == s->ino)
                l->fds[j].ucx = 1;
    }
}

/* Sets FD_CLOEXEC on every marked descriptor still open as the file the scan found;
 * how many had it not. */
static int sc_fd_set_cloexec(const sc_fd_list_t *l)
{
    int set = 0;

    for (size_t i = 0; i < l->n; i++) {
        const sc_fd_seen_t *s = &l->fds[i];
        struct stat sb;
        int flags;

        if (!s->ucx || fstat(s->fd, &sb) != 0 || sb.st_dev != s->dev || sb.st_ino != s->ino)
            continue;
        flags = fcntl(s->fd, F_GETFD);
        if (flags < 0 || (flags & FD_CLOEXEC))
            continue;
        if (fcntl(s->fd, F_SETFD, flags | FD_CLOEXEC) == 0)
            set++;
    }
    return set;
}

void sc_ucx_cloexec(sc_transport_t *tp)
{
    sc_fd_list_t l = {NULL, 0, 0};
    sc_fd_seen_t **members = NULL, *efd;
    int err = sc_fd_list_read(&l), set;

    if (err == 0 && l.n > 0) {
        members = malloc(l.n * sizeof(*members));
        if (!members)
            err = ENOMEM;
    }
    efd = err == 0 ? sc_fd_list_find(&l, tp->efd) : NULL;
    if (efd) {
        efd->ucx = 1;
        sc_fd_mark_down(&l, members);
        sc_fd_mark_up(&l, members);
        sc_fd_mark_down(&l, members);
        sc_fd_mark_pipes(&l);
        set = sc_fd_set_cloexec(&l);
        sc_log(SC_LOG_DEBUG, "%d of UCX's descriptors made close-on-exec", set);
    } else if (err != 0) {
        sc_log(SC_LOG_INFO, "UCX's descriptors could not be listed (/proc/self/fd: %s): a "
               "program this rank starts inherits them", strerror(err));
    }
    free(members);
    free(l.fds);
}
