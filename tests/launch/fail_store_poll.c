/* Preloaded into rank 0 by store_tree_test.sh (watch_poll_fails): every poll() of three
 * or more descriptors, all of them connected stream sockets, fails with ENOMEM, as the
 * poll of rank 0's store over the ranks' connections does once every rank of a world of
 * three arrived (the store's other polls watch its listening socket, a rank's watch one
 * or two descriptors). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

/* Whether fd is a connected stream socket (not a listening one). */
static int connected_stream(int fd)
{
    int type = 0, listening = 1;
    socklen_t len = sizeof(type);

    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
        return 0;
    len = sizeof(listening);
    return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && !listening;
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    static int (*real)(struct pollfd *, nfds_t, int);
    nfds_t k = 0;

    if (!real)
        real = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "poll");
    while (nfds >= 3 && k < nfds && connected_stream(fds[k].fd))
        k++;
    if (nfds >= 3 && k == nfds) {
        errno = ENOMEM;
        return -1;
    }
    return real(fds, nfds, timeout);
}
