/* Test helper, run by scrun: rank 1 maps and touches 512 MiB, starts four threads and
 * kills itself with SIGKILL; its main thread is then a zombie for the tens of
 * milliseconds its other threads take to unmap that memory, before scrun can reap it.
 * Rank 0 waits for that state (a surviving rank's library sees a peer in it as dead,
 * and the program exits with an error at once) and exits with status 1, so that its
 * exit is reaped first. Other ranks sleep until stopped. DIR (argument) is where rank 1
 * leaves its pid. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BYTES ((size_t)512 << 20)

static void *idle(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* The state letter of /proc/PID/stat ('Z' for a zombie), or 0 once the pid is gone. */
static char proc_state(long pid)
{
    char path[64], buf[512], *close_paren;
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' ? close_paren[2] : 0;
}

int main(int argc, char **argv)
{
    const char *rank_env = getenv("SC_RANK");
    int rank = rank_env ? atoi(rank_env) : -1;
    char path[4096];

    if (argc != 2 || rank < 0) {
        fprintf(stderr, "usage: SC_RANK=R dying_rank DIR (under scrun)\n");
        return 2;
    }
    snprintf(path, sizeof path, "%s/dying_pid", argv[1]);
    if (rank == 1) {
        char tmp[4200];
        unsigned char *p = mmap(NULL, BYTES, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        FILE *f;
        if (p == MAP_FAILED)
            return 3;
        memset(p, 1, BYTES);
        for (int i = 0; i < 4; i++) {
            pthread_t t;
            if (pthread_create(&t, NULL, idle, NULL) != 0)
                return 3;
        }
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        f = fopen(tmp, "w");
        if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0 ||
            rename(tmp, path) != 0)
            return 3;
        raise(SIGKILL);
    }
    if (rank == 0) {
        long pid = 0;
        for (int i = 0; i < 3000 && pid == 0; i++) {
            FILE *f = fopen(path, "r");
            if (!f || fscanf(f, "%ld", &pid) != 1)
                pid = 0;
            if (f)
                fclose(f);
            if (pid == 0)
                usleep(10000);
        }
        while (pid > 0 && proc_state(pid) != 'Z' && proc_state(pid) != 0)
            ;
        fprintf(stderr, "rank 0: rank 1 died\n");
        return 1;
    }
    sleep(30);
    return 0;
}
