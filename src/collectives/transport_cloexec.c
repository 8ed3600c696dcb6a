/* UCX's descriptors made close-on-exec: UCX 1.13 opens its sockets, pipes, epoll sets and
 * timerfds without FD_CLOEXEC and has no setting for it, so a program a rank started
 * (fork and exec) held them. A rank killed while such a program lived left its TCP
 * connections open in it: peers on other nodes saw no close and waited SC_TIMEOUT, and
 * its UCX listening port stayed taken. UCX names none of its descriptors but the
 * worker's event descriptor; the others are found through the epoll sets they are
 * watched in (/proc/self/fdinfo), which only UCX adds to. An entry names its file by
 * descriptor number and inode, and every epoll set, eventfd and timerfd has one inode:
 * such a member is taken as the file open at that number only where kcmp says it is. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
    unsigned char shared;   /* not a pipe's, and another descriptor has its inode (every
                             * anon_inode file): the inode does not say which file */
    unsigned char named;    /* the worker's event descriptor, which UCX names */
    int proof_ep, proof_fd; /* where shared, what kcmp found: epoll set proof_ep watches
                             * the file at proof_fd (it, or one it watches); -1 for none */
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

static int sc_fd_inode_cmp(const void *a, const void *b)
{
    const sc_fd_seen_t *x = *(sc_fd_seen_t *const *)a, *y = *(sc_fd_seen_t *const *)b;

    if (x->dev != y->dev)
        return (x->dev > y->dev) - (x->dev < y->dev);
    return (x->ino > y->ino) - (x->ino < y->ino);
}

/* Marks shared every descriptor but a pipe's whose inode another one has. An errno
 * value on failure. */
static int sc_fd_list_mark_shared(sc_fd_list_t *l)
{
    sc_fd_seen_t **by_inode = malloc(l->n * sizeof(*by_inode));
    size_t i = 0;

    if (!by_inode)
        return ENOMEM;
    for (size_t j = 0; j < l->n; j++)
        by_inode[j] = &l->fds[j];
    qsort(by_inode, l->n, sizeof(*by_inode), sc_fd_inode_cmp);
    while (i < l->n) {
        size_t end = i + 1;

        while (end < l->n && sc_fd_inode_cmp(&by_inode[i], &by_inode[end]) == 0)
            end++;
        for (size_t j = i; end - i > 1 && j < end; j++)
            by_inode[j]->shared = !by_inode[j]->fifo;
        i = end;
    }
    free(by_inode);
    return 0;
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
        if (fd == dirfd(d))
            continue;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        len = readlink(path, target, sizeof(target) - 1);
        target[len > 0 ? len : 0] = '\0';
        /* A file of a file system (no epoll set can watch one) is not looked at: fstat on
         * a hung network mount would block sc_comm_init. Devices (/dev) can be watched. */
        if (len <= 0 || (target[0] == '/' && strncmp(target, "/dev/", 5) != 0) ||
            fstat(fd, &sb) != 0)
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
        memset(&l->fds[l->n], 0, sizeof(l->fds[0]));
        l->fds[l->n].fd = fd;
        l->fds[l->n].dev = sb.st_dev;
        l->fds[l->n].ino = sb.st_ino;
        l->fds[l->n].epoll = strcmp(target, "anon_inode:[eventpoll]") == 0;
        l->fds[l->n].fifo = S_ISFIFO(sb.st_mode);
        l->fds[l->n].proof_ep = -1;
        l->fds[l->n].proof_fd = -1;
        l->n++;
    }
    closedir(d);
    if (err == 0 && l->n > 1) {
        qsort(l->fds, l->n, sizeof(l->fds[0]), sc_fd_cmp);
        err = sc_fd_list_mark_shared(l);
    }
    return err;
}

static sc_fd_seen_t *sc_fd_list_find(const sc_fd_list_t *l, int fd)
{
    sc_fd_seen_t key;

    key.fd = fd;
    return l->n ? bsearch(&key, l->fds, l->n, sizeof(key), sc_fd_cmp) : NULL;
}

/* Whether epoll set ep watches the file open at fd under fd's number (kcmp's
 * KCMP_EPOLL_TFD, the entries of that number in turn): 1 or 0; -1 where kcmp cannot
 * say (a kernel before 4.13 or without CONFIG_KCMP, a seccomp filter that refuses it). */
static int sc_fd_in_epoll(int ep, int fd)
{
    pid_t pid = getpid();

    for (unsigned toff = 0;; toff++) {
        struct kcmp_epoll_slot slot = {(unsigned)ep, (unsigned)fd, toff};
        long r = syscall(SYS_kcmp, (long)pid, (long)pid, (long)KCMP_EPOLL_TFD, (long)fd,
                         (unsigned long)&slot);

        if (r == 0)
            return 1;
        if (r < 0) /* no further entry of that number, or ep or fd closed meanwhile */
            return errno == ENOENT || errno == EBADF ? 0 : -1;
    }
}

/* The members of epoll set ep still open as the file they were added as, into members
 * (room for l->n); their count. A "tfd:" line of its fdinfo names the descriptor and its
 * inode; an entry left by a descriptor closed while a copy of its file lives on (a
 * forked child's, a dup's) names a number another file may have taken since, of the
 * same inode where both are anon_inode files: an entry is the file at its number where
 * kcmp says so, or where kcmp cannot say and no other descriptor has its inode (*unsure
 * set where it could not say of one that has). */
static size_t sc_fd_epoll_members(const sc_fd_list_t *l, int ep, sc_fd_seen_t **members,
                                  int *unsure)
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
        if (!m || m->ino != (ino_t)strtoull(ino_at + 5, NULL, 16))
            continue;
        switch (sc_fd_in_epoll(ep, tfd)) {
        case 1:
            m->proof_ep = ep;
            m->proof_fd = tfd;
            members[n++] = m;
            break;
        case -1:
            *unsure |= m->shared;
            if (!m->shared)
                members[n++] = m;
            break;
        }
    }
    fclose(f);
    return n;
}

/* Marks the members of every marked epoll set, and theirs, as UCX's. */
static void sc_fd_mark_down(const sc_fd_list_t *l, sc_fd_seen_t **members, int *unsure)
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
            n = sc_fd_epoll_members(l, s->fd, members, unsure);
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
static void sc_fd_mark_up(const sc_fd_list_t *l, sc_fd_seen_t **members, int *unsure)
{
    for (size_t i = 0; i < l->n; i++) {
        sc_fd_seen_t *s = &l->fds[i];
        size_t n;

        if (s->ucx || !s->epoll)
            continue;
        n = sc_fd_epoll_members(l, s->fd, members, unsure);
        for (size_t j = 0; j < n && !s->watcher; j++) {
            if (!members[j]->ucx)
                continue;
            s->watcher = 1;
            s->proof_ep = s->fd;
            s->proof_fd = members[j]->fd;
        }
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

/* Sets FD_CLOEXEC on every marked descriptor still open as the file the scan found (its
 * inode; where that is shared, what kcmp found is still so); how many had it not. */
static int sc_fd_set_cloexec(const sc_fd_list_t *l)
{
    int set = 0;

    for (size_t i = 0; i < l->n; i++) {
        const sc_fd_seen_t *s = &l->fds[i];
        struct stat sb;
        int flags;

        if (!s->ucx || fstat(s->fd, &sb) != 0 || sb.st_dev != s->dev || sb.st_ino != s->ino)
            continue;
        if (s->shared && !s->named &&
            (s->proof_ep < 0 || sc_fd_in_epoll(s->proof_ep, s->proof_fd) != 1))
            continue;
        flags = fcntl(s->fd, F_GETFD);
        if (flags < 0 || (flags & FD_CLOEXEC))
            continue;
        if (fcntl(s->fd, F_SETFD, flags | FD_CLOEXEC) == 0)
            set++;
    }
    return set;
}

/* Said once per process: the kcmp refusal is the machine's, not the transport's. */
static int sc_fd_kcmp_refusal_said;

void sc_ucx_cloexec(sc_transport_t *tp)
{
    sc_fd_list_t l = {NULL, 0, 0};
    sc_fd_seen_t **members = NULL, *efd;
    int err = sc_fd_list_read(&l), set, unsure = 0;

    if (err == 0 && l.n > 0) {
        members = malloc(l.n * sizeof(*members));
        if (!members)
            err = ENOMEM;
    }
    efd = err == 0 ? sc_fd_list_find(&l, tp->efd) : NULL;
    if (efd) {
        efd->ucx = 1;
        efd->named = 1;
        sc_fd_mark_down(&l, members, &unsure);
        sc_fd_mark_up(&l, members, &unsure);
        sc_fd_mark_down(&l, members, &unsure);
        sc_fd_mark_pipes(&l);
        set = sc_fd_set_cloexec(&l);
        sc_log(SC_LOG_DEBUG, "%d of UCX's descriptors made close-on-exec", set);
        if (unsure && !__atomic_exchange_n(&sc_fd_kcmp_refusal_said, 1, __ATOMIC_RELAXED))
            sc_log(SC_LOG_INFO, "kcmp is refused here: UCX's epoll sets, eventfds and "
                   "timerfds other than its worker's event descriptor, and what they "
                   "watch, are left as they are (a program this rank starts inherits "
                   "them)");
    } else if (err != 0) {
        sc_log(SC_LOG_INFO, "UCX's descriptors could not be listed (/proc/self/fd: %s): a "
               "program this rank starts inherits them", strerror(err));
    }
    free(members);
    free(l.fds);
}
