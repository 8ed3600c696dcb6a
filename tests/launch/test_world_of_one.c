/* A world of one (a program started without a launcher, or with WORLD_SIZE=1) opens UCX
 * on shared memory and self only, as ranks all on one node do: it holds no TCP socket
 * (until 2026-12-07 it took UCX's every transport: a TCP listening port for no peer, and
 * an epoll_wait in every progress call). Run with a cleared environment (env -i; PATH
 * and the sanitizer runs' settings kept: CMakeLists.txt). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"

/* Whether socket inode ino is listed in /proc/self/net/FILE (a TCP socket of this
 * process's network namespace). */
static int tcp_lists(const char *file, unsigned long ino)
{
    char path[64], line[512];
    int found = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/net/%s", file);
    f = fopen(path, "r");
    if (!f)
        return 0; /* no IPv6: nothing listed */
    while (!found && fgets(line, sizeof(line), f)) {
        unsigned long i = 0;
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %lu", &i) == 1 && i == ino)
            found = 1;
    }
    fclose(f);
    return found;
}

/* How many of this process's descriptors are TCP sockets; -1 where /proc is unreadable. */
static int tcp_sockets(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL) {
        char path[300], target[64];
        unsigned long ino;
        ssize_t len;

        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        len = readlink(path, target, sizeof(target) - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (sscanf(target, "socket:[%lu]", &ino) == 1 &&
            (tcp_lists("tcp", ino) || tcp_lists("tcp6", ino)))
            n++;
    }
    closedir(d);
    return n;
}

static int world_of_one_takes_no_tcp(void)
{
    sc_comm_config_t cfg = SC_COMM_CONFIG_INIT;
    sc_comm_t *comm = NULL;
    float x[2] = {1.5f, -2.0f};
    int before = tcp_sockets(), after;

    CHECK(before >= 0, "/proc/self/fd cannot be read");
    CHECK_OK(sc_comm_init(&cfg, &comm));
    CHECK(sc_comm_size(comm) == 1, "a world of %d, not one: run with a cleared environment",
          sc_comm_size(comm));
    CHECK_OK(sc_allreduce(x, x, 2, SC_FLOAT32, SC_SUM, comm, NULL, NULL));
    CHECK(x[0] == 1.5f && x[1] == -2.0f, "allreduce of a world of one gave %g %g", x[0], x[1]);
    after = tcp_sockets();
    CHECK(after == before, "a world of one opened %d TCP socket(s) (UCX's TCP transport): it "
          "should take shared memory and self only", after - before);
    CHECK_OK(sc_comm_destroy(comm));
    return 0;
}

int main(void)
{
    if (world_of_one_takes_no_tcp() != 0)
        return 1;
    printf("PASS: a world of one holds no TCP socket\n");
    return 0;
}
