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

bool scrun_proc_group_alive(pid_t pgid)
{
    pid_t sid = getsid(0);
    bool found = false;
    struct dirent *e;
    DIR *d = opendir("/proc");

    if (!d)
        return false;
    while (!found && (e = readdir(d)) != NULL) {
        char buf[512];
        const char *s;
        long pgrp, session;

        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        s = scrun_proc_stat(atol(e->d_name), buf, sizeof buf);
        /* A zombie is gone already (its parent has yet to reap it). */
        if (s && s[0] != 'Z' && s[0] != 'X' &&
            sscanf(s, "%*c %*d %ld %ld", &pgrp, &session) == 2)
            found = pgrp == (long)pgid && session == (long)sid;
    }
    closedir(d);
    return found;
}
