/* What scrun reads of other processes in /proc (Linux; elsewhere nothing is found): a
 * rank that is dying, and the processes left in an exited rank's group. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scrun.h"

/* The fields of /proc/PID/stat after the command's closing parenthesis, into buf (len
 * bytes): "S PPID PGRP SESSION ...". NULL when pid is gone. */
static const char *scrun_proc_stat(long pid, char *buf, size_t len)
{
    char path[64], *paren;
    size_t n;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    f = fopen(path, "re");
    if (!f)
        return NULL;
    n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' ? paren + 2 : NULL;
}

bool scrun_proc_dying(pid_t pid)
{
    char buf[512];
    const char *s = scrun_proc_stat((long)pid, buf, sizeof buf);

    return s && (s[0] == 'Z' || s[0] == 'X');
}

long scrun_proc_groups_alive(const pid_t *pgids, long n, bool *alive)
{
    pid_t sid = getsid(0);
    long found = 0;
    struct dirent *e;
    DIR *d = opendir("/proc");

    for (long i = 0; i < n; i++)
        alive[i] = false;
    if (!d)
        return 0;
    while (found < n && (e = readdir(d)) != NULL) {
        char buf[512];
        const char *s;
        long pgrp, session;

        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        s = scrun_proc_stat(atol(e->d_name), buf, sizeof buf);
        /* A zombie is gone already (its parent has yet to reap it). */
        if (!s || s[0] == 'Z' || s[0] == 'X' ||
            sscanf(s, "%*c %*d %ld %ld", &pgrp, &session) != 2 || session != (long)sid)
            continue;
        for (long i = 0; i < n; i++) {
            if (pgids[i] > 0 && !alive[i] && pgrp == (long)pgids[i]) {
                alive[i] = true;
                found++;
            }
        }
    }
    closedir(d);
    return found;
}
