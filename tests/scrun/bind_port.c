/* Test helper: bind_port [--as-rank-0] PORT exits 0 when TCP port PORT can be bound on
 * 127.0.0.1, else 1. Plain, it binds as another scrun's probe does (no SO_REUSEADDR);
 * with --as-rank-0 as the rank serving the rendezvous store does (SO_REUSEADDR, then
 * listen). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct sockaddr_in addr;
    int as_rank0 = argc == 3 && strcmp(argv[1], "--as-rank-0") == 0;
    int one = 1, fd;

    if (argc != 2 && !as_rank0) {
        fprintf(stderr, "usage: %s [--as-rank-0] PORT\n", argv[0]);
        return 2;
    }
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        perror("socket");
        return 1;
    }
    if (as_rank0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
        perror("setsockopt");
        close(fd);
        return 1;
    }
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons((unsigned short)atoi(argv[argc - 1]));
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        (as_rank0 && listen(fd, 4) != 0)) {
        fprintf(stderr, "%s 127.0.0.1:%s: %s\n", as_rank0 ? "bind+listen" : "bind",
                argv[argc - 1], strerror(errno));
        close(fd);
        return 1;
    }
    close(fd);
    return 0;
}
