/* A process's state as /proc shows it: whether a rank stopped itself (SIGSTOP), how many
 * threads this process has (or comes down to). */
#ifndef SC_TESTS_PROC_STATE_H
#define SC_TESTS_PROC_STATE_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Whether process pid is stopped (state T or t in /proc/PID/stat). */
static inline int sc_test_process_stopped(int pid)
{
    char path[64], line[512];
    const char *paren;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    /* pid (comm) state ...: comm may hold spaces and parentheses */
    paren = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
    fclose(f);
    return paren && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't');
}

/* Waits up to limit_s seconds for process pid to stop; whether it did. */
static inline int sc_test_wait_stopped(int pid, double limit_s)
{
    struct timespec t0, t;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!sc_test_process_stopped(pid)) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) >= limit_s)
            return 0;
        usleep(1000);
    }
    return 1;
}

/* This process's threads (/proc/self/task), or -1. */
static inline int sc_test_thread_count(void)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (!dir)
        return -1;
    while ((e = readdir(dir)) != NULL)
        n += e->d_name[0] != '.';
    closedir(dir);
    return n;
}

/* This process's threads once they number n or fewer, or limit_s seconds have passed (a
 * thread just joined may stay listed in /proc/self/task a moment); -1 where they cannot
 * be counted. */
static inline int sc_test_thread_count_down_to(int n, double limit_s)
{
    struct timespec t0, t;
    int count;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    while ((count = sc_test_thread_count()) > n) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) >= limit_s)
            break;
        usleep(1000);
    }
    return count;
}

#endif
