/* Prefaulting shared memory (shm_prefault.h). UCX's segments are found by name in
 * /proc/self/maps: System V segments show as "/SYSV<key>", POSIX ones as files named
 * "ucx_shm_posix_<id>" (both "(deleted)" once every rank attached). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collectives/shm_prefault.h"
#include "core/comm_internal.h"
#include "shardcomm/collectives.h"

/* Larger than any segment UCX's transports make for themselves (4.2 MB of receive
 * descriptors by default): what is larger is a caller's buffer, left alone. */
#define SC_PREFAULT_SEG_MAX (64u << 20)
/* Larger than a FIFO element's inline payload (128 bytes by default), so that the
 * message lands in a receive descriptor and the sender attaches the segment. */
#define SC_PREFAULT_MSG_BYTES 4096

void sc_shm_prefault(void *p, size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);

#ifdef MADV_POPULATE_WRITE
    if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0)
        return;
    if (errno != EINVAL) {
        (void)madvise(p, bytes, MADV_POPULATE_READ); /* a mapping without write access */
        return;
    }
#endif
    /* Kernels before 5.14: reading a page maps it (writable, for shared memory). */
    for (size_t off = 0; page > 0 && off < bytes; off += (size_t)page)
        (void)*(volatile const uint8_t *)((const uint8_t *)p + off);
}

/* Nonzero for a line of /proc/self/maps that is a shared mapping of UCX's. */
static int sc_prefault_is_ucx(const char *perms, const char *path)
{
    return perms[3] == 's' && perms[0] == 'r' &&
           (strncmp(path, "/SYSV", 5) == 0 || strstr(path, "ucx_shm_posix") != NULL);
}

static void sc_prefault_ucx_maps(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];

    if (!maps)
        return;
    while (fgets(line, sizeof(line), maps)) {
        unsigned long lo, hi;
        char perms[8], path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perms, path) < 3)
            continue;
        if (hi > lo && hi - lo <= SC_PREFAULT_SEG_MAX && sc_prefault_is_ucx(perms, path))
            sc_shm_prefault((void *)lo, hi - lo);
    }
    fclose(maps);
}

sc_status_t sc_shm_prefault_transport(sc_comm_t *comm)
{
    int node = comm->tp->node_of[comm->world_of[comm->rank]];
    int n = 0, npeers = 0;
    sc_request_t **reqs;
    uint8_t *bufs;
    sc_status_t st = SC_SUCCESS;

    /* The ranks that share this host name, not the launcher's local size: two launches
     * on one host (torchrun or scrun --nnodes 2 there) give each its own local ranks,
     * yet every rank of both shares this host's memory, and all of them must pair up. */
    for (int q = 0; q < comm->size; q++)
        npeers += q != comm->rank && comm->tp->node_of[comm->world_of[q]] == node;
    if (npeers <= 0)
        return SC_SUCCESS;
    reqs = calloc(2 * (size_t)npeers, sizeof(*reqs));
    bufs = calloc((size_t)npeers + 1, SC_PREFAULT_MSG_BYTES);
    if (!reqs || !bufs) {
        free(reqs);
        free(bufs);
        return sc_error(SC_ERR_NO_MEMORY, "sc_comm_init: out of memory on rank %d", comm->rank);
    }
    /* One receive and one send per peer on the node; bufs[0] is what every send reads. */
    for (int q = 0, k = 0; q < comm->size && k < npeers && st == SC_SUCCESS; q++) {
        if (q == comm->rank || comm->tp->node_of[comm->world_of[q]] != node)
            continue;
        k++;
        st = sc_recv(bufs + (size_t)k * SC_PREFAULT_MSG_BYTES, SC_PREFAULT_MSG_BYTES,
                     SC_UINT8, q, comm, NULL, &reqs[n]);
        if (st != SC_SUCCESS)
            break;
        n++;
        st = sc_send(bufs, SC_PREFAULT_MSG_BYTES, SC_UINT8, q, comm, NULL, &reqs[n]);
        if (st == SC_SUCCESS)
            n++;
    }
    for (int i = 0; i < n; i++) {
        sc_status_t w = sc_wait(reqs[i]);
        if (st == SC_SUCCESS)
            st = w;
        sc_request_free(reqs[i]);
    }
    free(reqs);
    free(bufs);
    if (st == SC_SUCCESS)
        sc_prefault_ucx_maps();
    return st;
}
