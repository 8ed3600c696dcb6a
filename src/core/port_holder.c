/* Who listens on a TCP port: for the error of a rank that cannot serve the rendezvous on
 * its port, so that the sentence names the process in the way (Linux /proc only). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/port_holder.h"

#define SC_TCP_LISTEN 0x0A /* the state column of /proc/net/tcp */

/* The inode of a socket listening on port in one /proc/net/tcp* table, or 0. */
static unsigned long sc_listen_inode(const char *table, int port)
{
    FILE *f = fopen(table, "r");
    char line[512];
    unsigned long inode = 0;

    if (!f)
        return 0;
    if (!fgets(line, sizeof(line), f)) { /* the header */
        fclose(f);
        return 0;
    }
    while (!inode && fgets(line, sizeof(line), f)) {
        unsigned p, st;
        unsigned long ino;
        if (sscanf(line, " %*d: %*[0-9A-Fa-f]:%x %*s %x %*s %*s %*s %*u %*u %lu", &p, &st,
                   &ino) == 3 &&
            (int)p == port && st == SC_TCP_LISTEN)
            inode = ino;
    }
    fclose(f);
    return inode;
}

/* The process with an open descriptor on socket inode, or 0. */
static long sc_socket_owner(unsigned long inode)
{
    char want[64], path[300], link[64];
    DIR *proc = opendir("/proc");
    struct dirent *p;
    long owner = 0;

    if (!proc)
        return 0;
    snprintf(want, sizeof(want), "socket:[%lu]", inode);
    while (!owner && (p = readdir(proc))) {
        char *end;
        long pid = strtol(p->d_name, &end, 10);
        DIR *fds;
        struct dirent *fd;
        if (*end || pid <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
        if (!(fds = opendir(path)))
            continue; /* gone, or another user's */
        while (!owner && (fd = readdir(fds))) {
            ssize_t n;
            snprintf(path, sizeof(path), "/proc/%ld/fd/%s", pid, fd->d_name);
            n = readlink(path, link, sizeof(link) - 1);
            if (n > 0) {
                link[n] = '\0';
                if (!strcmp(link, want))
                    owner = pid;
            }
        }
        closedir(fds);
    }
    closedir(proc);
    return owner;
}

/* Whether process pid runs this process's executable. */
static int sc_runs_this_program(long pid)
{
    char path[64], exe[4096], self[4096];
    ssize_t n, m;

    snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
    n = readlink(path, exe, sizeof(exe) - 1);
    m = readlink("/proc/self/exe", self, sizeof(self) - 1);
    return n > 0 && n == m && memcmp(exe, self, (size_t)n) == 0;
}

int sc_port_holder(int port, char *buf, size_t size)
{
    unsigned long inode = sc_listen_inode("/proc/net/tcp", port);
    char path[64], name[64] = "";
    long pid;
    FILE *f;

    if (!inode)
        inode = sc_listen_inode("/proc/net/tcp6", port);
    if (!inode || !(pid = sc_socket_owner(inode)))
        return -1;
    snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
    if ((f = fopen(path, "r"))) {
        if (fgets(name, sizeof(name), f))
            name[strcspn(name, "\n")] = '\0';
        fclose(f);
    }
    snprintf(buf, size, "pid %ld (%s)", pid, name[0] ? name : "?");
    return pid != (long)getpid() && sc_runs_this_program(pid);
}
