/* hosts_bench: what sc_comm_init spends on the ranks' host names at a world size (the
 * nodes and the checks of the launcher's local settings, sc_comm_hosts), on blobs made
 * up as a rendezvous of N ranks, P per host name, would deliver.
 * Usage: hosts_bench [N [P]]   (defaults 65536 and 8) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_time.h"
#include "core/comm_hosts.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 65536, per = argc > 2 ? atoi(argv[2]) : 8;
    sc_store_result_t res = {0};
    int *node = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
    uint8_t *storage = calloc((size_t)(n > 0 ? n : 1), SC_BLOB_ADDR);
    double best = 1e30;
    sc_status_t st = SC_SUCCESS;

    if (n < 1 || per < 1) {
        fprintf(stderr, "usage: hosts_bench [N [P]]: N ranks (>= 1), P per host (>= 1)\n");
        return 2;
    }
    res.blobs = calloc((size_t)n, sizeof(uint8_t *));
    if (!node || !storage || !res.blobs) {
        fprintf(stderr, "hosts_bench: out of memory\n");
        return 1;
    }
    for (int r = 0; r < n; r++) {
        uint8_t *b = storage + (size_t)r * SC_BLOB_ADDR;
        int first = r - r % per; /* the host's first rank; the last host may hold fewer */
        int32_t local_size = n - first < per ? n - first : per, local_rank = r % per;

        snprintf((char *)b, SC_HOSTNAME_MAX, "node%06d", r / per);
        memcpy(b + SC_BLOB_LOCAL, &local_size, sizeof(local_size));
        memcpy(b + SC_BLOB_LOCAL_RANK, &local_rank, sizeof(local_rank));
        strcpy((char *)b + SC_BLOB_LOCAL_FROM, "LOCAL_WORLD_SIZE");
        strcpy((char *)b + SC_BLOB_LOCAL_RANK_FROM, "LOCAL_RANK");
        res.blobs[r] = b;
    }
    for (int k = 0; k < 5 && st == SC_SUCCESS; k++) {
        double t0 = bench_now_s(), t;

        st = sc_comm_hosts(&res, n, node);
        t = bench_now_s() - t0;
        best = t < best ? t : best;
    }
    if (st != SC_SUCCESS) {
        fprintf(stderr, "hosts_bench: %s\n", sc_last_error());
        return 1;
    }
    for (int r = 0; r < n; r++)
        if (node[r] != r - r % per) {
            fprintf(stderr, "hosts_bench: rank %d's node is %d, expected %d\n", r, node[r],
                    r - r % per);
            return 1;
        }
    printf("ranks %d, per host %d: sc_comm_hosts %.3f ms (best of 5)\n", n, per, best * 1e3);
    free(res.blobs);
    free(storage);
    free(node);
    return 0;
}
