/* Split communicators on device buffers: after the parent's NCCL communicator exists
 * (ncclCommSplit), and before it does (each child's rank 0 makes an id that the parent
 * exchanges). Every rank checks an allreduce sum on the child against values computed
 * here. Runs on 1 rank with NCCL and on 2 ranks host-staged. */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static int g_rank;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"
#include "gpu_check.h"

#define N 1001

/* Allreduce sum of (member rank + 1) * (i + 1) over comm; checks every element. */
static int allreduce_checks(sc_comm_t *comm, float *d, cudaStream_t s)
{
    int r = sc_comm_rank(comm), p = sc_comm_size(comm);
    float h[N];

    for (int i = 0; i < N; i++)
        h[i] = (float)((r + 1) * (i + 1));
    CHECK(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice) == cudaSuccess, "copy in");
    CHECK_OK(sc_allreduce(d, d, N, SC_FLOAT32, SC_SUM, comm, s, NULL));
    CHECK(cudaStreamSynchronize(s) == cudaSuccess, "sync");
    CHECK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost) == cudaSuccess, "copy out");
    for (int i = 0; i < N; i++) {
        float want = (float)((p * (p + 1) / 2) * (i + 1));
        CHECK(h[i] == want, "element %d is %g, expected %g (size %d)", i, (double)h[i],
              (double)want, p);
    }
    return 0;
}

int main(void)
{
    char reason[256];
    sc_comm_t *world, *early, *late;
    cudaStream_t s;
    float *d;

    if (!gpu_usable(reason, sizeof(reason))) {
        printf("SKIP: %s\n", reason);
        return GPU_SKIP_EXIT;
    }
    CHECK_OK(sc_comm_init_from_env(&world));
    g_rank = sc_comm_rank(world);
    CHECK(cudaMalloc((void **)&d, N * sizeof(float)) == cudaSuccess, "cudaMalloc");
    CHECK(cudaStreamCreate(&s) == cudaSuccess, "cudaStreamCreate");
    /* Before any device collective: no NCCL communicator on the parent yet. */
    CHECK_OK(sc_comm_split(world, 0, -g_rank, &early));
    if (allreduce_checks(early, d, s) || allreduce_checks(world, d, s))
        return 1;
    /* After: the parent's NCCL communicator exists (on one rank with NCCL). */
    CHECK_OK(sc_comm_split(world, g_rank % 2, g_rank, &late));
    if (allreduce_checks(late, d, s) || allreduce_checks(early, d, s))
        return 1;
    CHECK_OK(sc_comm_destroy(late));
    CHECK_OK(sc_comm_destroy(early));
    CHECK_OK(sc_comm_destroy(world));
    cudaStreamDestroy(s);
    cudaFree(d);
    printf("PASS: device collectives on split communicators (rank %d)\n", g_rank);
    return 0;
}
