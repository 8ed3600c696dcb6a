/* Test harness for the topology tests: CHECK macros, running a test by name, running
 * code in a forked child so that the test process is never bound, restricting a child
 * as taskset would, and the cores of the machine read from sysfs (independently of
 * hwloc). */
#ifndef SC_TEST_TOPOLOGY_UTIL_H
#define SC_TEST_TOPOLOGY_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_* */
#endif
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TEST_PASS 0
#define TEST_FAIL 1
#define TEST_SKIP 77 /* CTest's SKIP_RETURN_CODE */

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
            return TEST_FAIL;                                                        \
        }                                                                            \
    } while (0)

#define SKIP(...)                                                                    \
    do {                                                                             \
        fprintf(stderr, "SKIP: " __VA_ARGS__);                                       \
        fprintf(stderr, "\n");                                                       \
        return TEST_SKIP;                                                            \
    } while (0)

typedef struct {
    const char *name;
    int (*fn)(void);
} test_entry_t;

/* main: runs the test named by argv[1], or every test in turn. */
static inline int test_main(const test_entry_t *tests, int argc, char **argv)
{
    int failed = 0;

    for (const test_entry_t *t = tests; t->name; t++) {
        int rc;

        if (argc > 1 && strcmp(argv[1], t->name) != 0)
            continue;
        rc = t->fn();
        printf("%s: %s\n", rc == TEST_PASS ? "PASS" : rc == TEST_SKIP ? "SKIP" : "FAIL",
               t->name);
        if (argc > 1)
            return rc;
        failed |= rc == TEST_FAIL;
    }
    if (argc > 1) {
        fprintf(stderr, "no test named %s\n", argv[1]);
        return TEST_FAIL;
    }
    return failed ? TEST_FAIL : TEST_PASS;
}

/* Runs body(out, arg) in a forked child and copies *out back. 0 on success, -1 when
 * the child could not run or did not exit normally. */
static inline int run_in_child(void (*body)(void *out, const void *arg), const void *arg,
                               void *out, size_t out_size)
{
    int fds[2], wstatus;
    size_t got = 0;
    pid_t pid;

    fflush(NULL);
    if (pipe(fds) < 0)
        return -1;
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        void *result = calloc(1, out_size);
        size_t put = 0;

        close(fds[0]);
        body(result, arg);
        while (put < out_size) {
            ssize_t n = write(fds[1], (char *)result + put, out_size - put);
            if (n <= 0)
                _exit(3);
            put += (size_t)n;
        }
        _exit(0);
    }
    close(fds[1]);
    while (got < out_size) {
        ssize_t n = read(fds[0], (char *)out + got, out_size - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fds[0]);
    if (waitpid(pid, &wstatus, 0) != pid || !WIFEXITED(wstatus) ||
        WEXITSTATUS(wstatus) != 0 || got != out_size)
        return -1;
    return 0;
}

/* Parses a Linux CPU list ("0-3,8,10-11") into set. 0 on success. */
static inline int parse_cpu_list(const char *s, cpu_set_t *set)
{
    CPU_ZERO(set);
    while (*s && *s != '\n') {
        char *end;
        long lo = strtol(s, &end, 10), hi = lo;

        if (end == s)
            return -1;
        s = end;
        if (*s == '-') {
            hi = strtol(s + 1, &end, 10);
            if (end == s + 1)
                return -1;
            s = end;
        }
        for (long c = lo; c <= hi && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, set);
        if (*s == ',')
            s++;
    }
    return 0;
}

/* Formats set as a Linux CPU list, the way taskset -c and hwloc print it. */
static inline void format_cpu_list(const cpu_set_t *set, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE; c++) {
        int hi = c;

        if (!CPU_ISSET(c, set))
            continue;
        while (hi + 1 < CPU_SETSIZE && CPU_ISSET(hi + 1, set))
            hi++;
        if (hi == c)
            used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? "," : "", c);
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", c,
                                     hi);
        c = hi;
        if (used >= len)
            return;
    }
}

static inline int read_file_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    int ok;

    if (!f)
        return -1;
    ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    return ok ? 0 : -1;
}

/* The cores holding CPUs of within, from sysfs thread siblings, each limited to
 * within and ordered by their lowest CPU. Returns how many (at most max), -1 when
 * sysfs cannot be read. */
static inline int sysfs_cores(const cpu_set_t *within, cpu_set_t *cores, int max)
{
    cpu_set_t seen;
    int n = 0;

    CPU_ZERO(&seen);
    for (int c = 0; c < CPU_SETSIZE && n < max; c++) {
        char path[128], line[1024];
        cpu_set_t siblings;

        if (!CPU_ISSET(c, within) || CPU_ISSET(c, &seen))
            continue;
        snprintf(path, sizeof(path),
                 "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
        if (read_file_line(path, line, sizeof(line)) < 0 ||
            parse_cpu_list(line, &siblings) < 0)
            return -1;
        CPU_OR(&seen, &seen, &siblings);
        CPU_AND(&cores[n], &siblings, within);
        n++;
    }
    return n;
}

/* Restricts every thread of the process to set, as taskset does to a program it starts:
 * the child may already hold a runtime's threads (ThreadSanitizer's fork interceptor
 * starts its background thread in every child), and hwloc's process binding is the
 * union of all threads' affinities. 0 on success. */
static inline int restrict_process(const cpu_set_t *set)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *entry;
    int rc = 0;

    if (!dir)
        return -1;
    while ((entry = readdir(dir)) != NULL) {
        pid_t tid = (pid_t)atoi(entry->d_name);

        /* ESRCH: the thread exited since it was listed */
        if (tid > 0 && sched_setaffinity(tid, sizeof(*set), set) < 0 && errno != ESRCH)
            rc = -1;
    }
    closedir(dir);
    return rc;
}

static inline int current_affinity(cpu_set_t *set)
{
    CPU_ZERO(set);
    return sched_getaffinity(0, sizeof(*set), set);
}

#endif
