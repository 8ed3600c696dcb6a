/* The progress thread where the UCX worker cannot be armed (fail_worker_arm.c, preloaded,
 * fails every ucp_worker_arm with Input/output error). With nothing queued the thread
 * armed again at once after each failure, sleeping never: an idle rank spun a core for
 * as long as it was idle. It now sleeps a few milliseconds between looks at UCX: no
 * more than a tenth of an idle rank's arms come within 1 ms of the one before (the
 * spin's nearly all did, however little CPU the machine gave it), an idle rank uses
 * less than a tenth of its idle time in CPU, and collectives complete, waited for or
 * driven by the thread alone: the allreduce that rank 0 posts and leaves to its thread
 * completes on rank 1 before rank 0's next call (measured on one clock, whenever rank 1
 * joined it).
 *
 * Usage (under scrun, 2 ranks, with the shim preloaded): test_arm_failure idle IDLE_S */
#include <dlfcn.h>

#include "fault_util.h"

/* Elements of the allreduce that rank 0's thread drives alone: chunks of a pipeline,
 * each reduced on rank 0 before rank 1 can have its result. */
#define ARM_BIG (1u << 20)

/* An allreduce of count float32 values, rank + 1 each, through req (NULL: waited for). */
static sc_status_t arm_allreduce(sc_comm_t *comm, float *buf, size_t count,
                                 sc_request_t **req)
{
    for (size_t i = 0; i < count; i++)
        buf[i] = (float)(fault_rank + 1);
    return sc_allreduce(buf, buf, count, SC_FLOAT32, SC_SUM, comm, NULL, req);
}

static int arm_sums_right(const float *buf, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (buf[i] != 3.0f)
            return 0;
    return 1;
}

static int test_idle(int argc, char **argv)
{
    unsigned long (*arm_calls)(void) =
        (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "sc_test_worker_arm_calls");
    unsigned long (*arm_quick)(void) =
        (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "sc_test_worker_arm_quick");
    float *buf = malloc(ARM_BIG * sizeof(float));
    double idle, cpu, times[2] = {0, 0}; /* rank 0's next call, rank 1's completion */
    unsigned long calls, quick;
    sc_request_t *req;
    sc_comm_t *comm;

    CHECK(argc == 1, "usage: test_arm_failure idle IDLE_S");
    CHECK(arm_calls && arm_quick, "fail_worker_arm.c is not preloaded");
    CHECK(buf, "out of memory");
    idle = atof(argv[0]);
    CHECK_OK(sc_comm_init_from_env(&comm));
    CHECK(sc_comm_size(comm) == 2, "needs 2 ranks");
    CHECK_OK(arm_allreduce(comm, buf, 1, NULL));
    CHECK(arm_sums_right(buf, 1), "the small allreduce gave %g, not 3", (double)buf[0]);
    CHECK_OK(sc_barrier(comm, NULL));

    calls = arm_calls();
    quick = arm_quick();
    cpu = fault_cpu_s();
    fault_sleep(idle);
    cpu = fault_cpu_s() - cpu;
    calls = arm_calls() - calls;
    quick = arm_quick() - quick;
    printf("rank %d: %.3f s of CPU in %.1f s without a call, %lu arms, %lu of them within "
           "1 ms of the one before\n", fault_rank, cpu, idle, calls, quick);
    CHECK(calls > 0, "the idle progress thread never armed the worker");
    CHECK(quick * 10 <= calls, "rank %d's idle progress thread armed the worker %lu times "
          "in %.1f s, %lu of them within 1 ms of the arm before: it armed again at once "
          "after a failed arm (%.2f s of CPU)", fault_rank, calls, idle, quick, cpu);
    CHECK(cpu < 0.1 * idle, "rank %d used %.2f s of CPU in its %.1f s without a call, its "
          "worker's every arm failing", fault_rank, cpu, idle);

    /* Rank 0 posts and makes no call for 1 s: rank 1's allreduce completes only as rank
     * 0's thread reduces each chunk. CLOCK_MONOTONIC is one clock for both processes. */
    if (fault_rank == 0) {
        CHECK_OK(arm_allreduce(comm, buf, ARM_BIG, &req));
        fault_sleep(1.0);
        times[0] = fault_now();
        CHECK_OK(sc_wait(req));
        sc_request_free(req);
    } else {
        CHECK_OK(arm_allreduce(comm, buf, ARM_BIG, NULL));
        times[1] = fault_now();
    }
    CHECK(arm_sums_right(buf, ARM_BIG), "the large allreduce went wrong");
    CHECK_OK(sc_allreduce(times, times, 2, SC_FLOAT64, SC_SUM, comm, NULL, NULL));
    CHECK(times[1] < times[0], "rank 1's allreduce completed %.3f s after rank 0's next "
          "call (its sc_wait): rank 0's thread did not drive it", times[1] - times[0]);
    CHECK_OK(sc_barrier(comm, NULL));
    free(buf);
    CHECK_OK(sc_comm_destroy(comm));
    return TEST_PASS;
}

int main(int argc, char **argv)
{
    static const fault_test_t tests[] = {{"idle", test_idle}, {NULL, NULL}};

    return fault_main(tests, argc, argv);
}
