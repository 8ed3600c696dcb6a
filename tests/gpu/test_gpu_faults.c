/* Faults on device buffers: every case ends in an error on every rank, never a hang.
 * Run one case per process: test_gpu_faults CASE (under scrun for the multi-rank ones).
 *   peer_never_issues_times_out_on_every_rank   2 ranks, host-staged, SC_TIMEOUT=3
 *   blocked_stream_times_out_on_every_rank      2 ranks, host-staged, SC_TIMEOUT=3
 *   abort_fails_later_device_calls              1 rank (NCCL where built)
 *   stream_of_another_gpu_is_invalid            1 rank, needs 2 GPUs */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

static int g_rank;
#define SC_CHECK_RANK g_rank
#include "../common/sc_check.h"
#include "gpu_check.h"

#define N 4096

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void CUDART_CB sleep_on_stream(void *arg)
{
    sleep(*(unsigned *)arg);
}

static int peer_never_issues_times_out_on_every_rank(sc_comm_t *comm, float *d,
                                                     cudaStream_t s)
{
    sc_request_t *req;
    sc_status_t st;
    double t0 = now_s();

    if (g_rank == 0) {
        CHECK_OK(sc_allreduce(d, d, N, SC_FLOAT32, SC_SUM, comm, s, &req));
        st = sc_wait(req);
        CHECK(st == SC_ERR_TIMEOUT, "expected SC_ERR_TIMEOUT, got %s: %s",
              sc_status_string(st), sc_last_error());
        CHECK(now_s() - t0 < 20, "the timeout took %.1f s", now_s() - t0);
        sc_request_free(req);
    } else {
        sleep(6);
        st = sc_allreduce(d, d, N, SC_FLOAT32, SC_SUM, comm, s, NULL);
        CHECK(st != SC_SUCCESS, "a call after the peer's timeout succeeded");
    }
    CHECK(cudaStreamSynchronize(s) == cudaSuccess, "stream sync failed");
    return 0;
}

static int blocked_stream_times_out_on_every_rank(sc_comm_t *comm, float *d, cudaStream_t s)
{
    static unsigned secs = 8;
    sc_request_t *req;
    sc_status_t st;
    double t0 = now_s();

    if (g_rank == 0)
        CHECK(cudaLaunchHostFunc(s, sleep_on_stream, &secs) == cudaSuccess, "host func");
    CHECK_OK(sc_allreduce(d, d, N, SC_FLOAT32, SC_SUM, comm, s, &req));
    st = sc_wait(req);
    CHECK(st != SC_SUCCESS, "the allreduce behind a blocked stream succeeded");
    CHECK(now_s() - t0 < 7.5, "the error took %.1f s: it waited for the stream", now_s() - t0);
    /* Rank 0's gate and rank 1's header wait time out together: either sentence may
     * reach a rank first. */
    CHECK(st == SC_ERR_TIMEOUT || st == SC_ERR_PEER_FAILED,
          "expected a timeout, got %s: %s", sc_status_string(st), sc_last_error());
    sc_request_free(req);
    CHECK(cudaStreamSynchronize(s) == cudaSuccess, "stream sync failed");
    return 0;
}

static int abort_fails_later_device_calls(sc_comm_t *comm, float *d, cudaStream_t s)
{
    sc_status_t st;

    CHECK_OK(sc_allreduce(d, d, N, SC_FLOAT32, SC_SUM, comm, s, NULL));
    CHECK(cudaStreamSynchronize(s) == cudaSuccess, "stream sync failed");
    CHECK_OK(sc_comm_abort(comm));
    st = sc_allreduce(d, d, N, SC_FLOAT32, SC_SUM, comm, s, NULL);
    CHECK(st == SC_ERR_ABORTED, "expected SC_ERR_ABORTED, got %s: %s", sc_status_string(st),
          sc_last_error());
    return 0;
}

static int stream_of_another_gpu_is_invalid(sc_comm_t *comm, float *d, cudaStream_t s)
{
    cudaStream_t other;
    int n = 0;
    sc_status_t st;

    (void)s;
    cudaGetDeviceCount(&n);
    if (n < 2) {
        printf("SKIP: needs 2 GPUs, this machine has %d\n", n);
        return GPU_SKIP_EXIT;
    }
    CHECK(cudaSetDevice(1) == cudaSuccess && cudaStreamCreate(&other) == cudaSuccess,
          "stream on GPU 1");
    cudaSetDevice(0);
    st = sc_allreduce(d, d, N, SC_FLOAT32, SC_SUM, comm, other, NULL);
    CHECK(st == SC_ERR_INVALID_ARG && strstr(sc_last_error(), "GPU 1"),
          "expected SC_ERR_INVALID_ARG naming GPU 1, got %s: %s", sc_status_string(st),
          sc_last_error());
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(sc_comm_t *, float *, cudaStream_t);
    } cases[] = {
        {"peer_never_issues_times_out_on_every_rank", peer_never_issues_times_out_on_every_rank},
        {"blocked_stream_times_out_on_every_rank", blocked_stream_times_out_on_every_rank},
        {"abort_fails_later_device_calls", abort_fails_later_device_calls},
        {"stream_of_another_gpu_is_invalid", stream_of_another_gpu_is_invalid},
    };
    char reason[256];
    sc_comm_t *comm;
    cudaStream_t s;
    float *d;
    int rc = -1;

    if (argc != 2) {
        fprintf(stderr, "usage: test_gpu_faults CASE\n");
        return 2;
    }
    if (!gpu_usable(reason, sizeof(reason))) {
        printf("SKIP: %s\n", reason);
        return GPU_SKIP_EXIT;
    }
    CHECK_OK(sc_comm_init_from_env(&comm));
    g_rank = sc_comm_rank(comm);
    CHECK(cudaMalloc((void **)&d, N * sizeof(float)) == cudaSuccess, "cudaMalloc");
    CHECK(cudaMemset(d, 0, N * sizeof(float)) == cudaSuccess, "cudaMemset");
    CHECK(cudaStreamCreate(&s) == cudaSuccess, "cudaStreamCreate");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (strcmp(argv[1], cases[i].name) == 0)
            rc = cases[i].fn(comm, d, s);
    if (rc < 0) {
        fprintf(stderr, "unknown case %s\n", argv[1]);
        return 2;
    }
    sc_comm_destroy(comm);
    cudaStreamDestroy(s);
    cudaFree(d);
    if (rc == 0)
        printf("PASS: %s\n", argv[1]);
    return rc;
}
