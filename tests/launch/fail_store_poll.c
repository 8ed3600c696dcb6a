/* Preloaded into rank 0 by store_tree_test.sh (watch_poll_fails, gather_poll_fails): a
 * poll() of rank 0's store fails with ENOMEM. By default every poll of three or more
 * descriptors, all of them connected stream sockets, as the poll of the store over the
 * ranks' connections does once every rank of a world of three arrived (the store's other
 * polls watch its listening socket, a rank's watch one or two descriptors); with
 * SC_TEST_FAIL_POLL=gather every poll of two or more descriptors whose first is a
 * listening socket, as the store's poll over its listening socket and the connections
 * arriving does once one came (a rank's polls watch no listening socket in rank 0). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Whether fd is a stream socket that is listening (want 1) or connected (want 0). */
static int stream_socket(int fd, int want)
{
    int type = 0, listening = 1;
    socklen_t len = sizeof(type);

    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
        return 0;
    len = sizeof(listening);
    return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 &&
           !listening == !want;
}

/* Whether this poll is one to fail. */
static int to_fail(const struct pollfd *fds, nfds_t nfds)
{
    const char *mode = getenv("SC_TEST_FAIL_POLL");
    nfds_t k = 0;

    if (mode && strcmp(mode, "gather") == 0)
        return nfds >= 2 && stream_socket(fds[0].fd, 1);
    while (nfds >= 3 && k < nfds && stream_socket(fds[k].fd, 0))
        k++;
    return nfds >= 3 && k == nfds;
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    static int (*real)(struct pollfd *, nfds_t, int);

    if (!real)
        real = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "poll");
    if (to_fail(fds, nfds)) {
        errno = ENOMEM;
        return -1;
    }
    return real(fds, nfds, timeout);
}
