/* Specs of sc_topology_bind: the cores each local rank gets, respect of a taskset
 * restriction, SC_BIND and the errors. Every bind runs in a forked child. */
#include "test_util.h"

#include <pthread.h>

#include "core/topology.h"
#include "shardcomm/status.h"

#define MAX_CORES 256

typedef struct {
    const cpu_set_t *restrict_to; /* NULL: the inherited affinity */
    int local_rank, local_size;
    sc_bind_t mode;
    const char *sc_bind;          /* SC_BIND in the child; NULL: unset */
} bind_args_t;

typedef struct {
    int setup_failed;
    sc_status_t status;
    cpu_set_t affinity;        /* of the calling thread, after the bind */
    cpu_set_t other_thread;    /* of a thread started before the bind */
    char error[1024];
} bind_result_t;

/* The machine as the test process sees it, from sched_getaffinity and sysfs. */
static cpu_set_t allowed;
static cpu_set_t cores[MAX_CORES];
static int ncores;

static int load_machine(void)
{
    if (current_affinity(&allowed) < 0)
        return -1;
    ncores = sysfs_cores(&allowed, cores, MAX_CORES);
    return ncores;
}

static void bind_setup(const bind_args_t *a, bind_result_t *r)
{
    if (a->sc_bind)
        setenv("SC_BIND", a->sc_bind, 1);
    else
        unsetenv("SC_BIND");
    if (a->restrict_to && restrict_process(a->restrict_to) < 0)
        r->setup_failed = 1;
}

static void bind_body(void *out, const void *arg)
{
    const bind_args_t *a = arg;
    bind_result_t *r = out;

    bind_setup(a, r);
    r->status = sc_topology_bind(a->local_rank, a->local_size, a->mode);
    snprintf(r->error, sizeof(r->error), "%s", sc_last_error());
    current_affinity(&r->affinity);
}

static int bind_in_child(const cpu_set_t *restrict_to, int local_rank, int local_size,
                         sc_bind_t mode, const char *sc_bind, bind_result_t *r)
{
    bind_args_t a = {restrict_to, local_rank, local_size, mode, sc_bind};

    memset(r, 0, sizeof(*r));
    if (run_in_child(bind_body, &a, r, sizeof(*r)) < 0 || r->setup_failed)
        return -1;
    return 0;
}

/* Number of cores of cores[] wholly inside set; -1 if set splits a core. */
static int whole_cores_in(const cpu_set_t *set)
{
    int n = 0;

    for (int i = 0; i < ncores; i++) {
        cpu_set_t common;

        CPU_AND(&common, &cores[i], set);
        if (CPU_EQUAL(&common, &cores[i]))
            n++;
        else if (CPU_COUNT(&common) != 0)
            return -1;
    }
    return n;
}

#define NEED_CORES(n)                                                                \
    do {                                                                             \
        if (load_machine() < 0)                                                      \
            SKIP("cannot read the affinity or /sys/devices/system/cpu");             \
        if (ncores < (n))                                                            \
            SKIP("needs %d cores, this process may use %d", (n), ncores);            \
    } while (0)

static int bind_one_local_rank_gets_every_allowed_core(void)
{
    bind_result_t r;

    NEED_CORES(1);
    CHECK(bind_in_child(NULL, 0, 1, SC_BIND_CORE, NULL, &r) == 0);
    CHECK(r.status == SC_SUCCESS);
    CHECK(CPU_EQUAL(&r.affinity, &allowed));
    return TEST_PASS;
}

static int bind_two_local_ranks_get_disjoint_halves_covering_the_allowed_cores(void)
{
    bind_result_t r0, r1;
    cpu_set_t both;

    NEED_CORES(2);
    CHECK(bind_in_child(NULL, 0, 2, SC_BIND_CORE, NULL, &r0) == 0);
    CHECK(bind_in_child(NULL, 1, 2, SC_BIND_CORE, NULL, &r1) == 0);
    CHECK(r0.status == SC_SUCCESS && r1.status == SC_SUCCESS);
    CPU_AND(&both, &r0.affinity, &r1.affinity);
    CHECK(CPU_COUNT(&both) == 0);
    CPU_OR(&both, &r0.affinity, &r1.affinity);
    CHECK(CPU_EQUAL(&both, &allowed));
    /* rank r gets cores [r*n/2, (r+1)*n/2) */
    CHECK(whole_cores_in(&r0.affinity) == ncores / 2);
    CHECK(whole_cores_in(&r1.affinity) == ncores - ncores / 2);
    return TEST_PASS;
}

static int bind_eight_local_ranks_on_two_cores_put_four_on_each_core(void)
{
    cpu_set_t two_cores;
    int core_of[8];

    NEED_CORES(2);
    CPU_OR(&two_cores, &cores[0], &cores[1]);
    for (int rank = 0; rank < 8; rank++) {
        bind_result_t r;

        CHECK(bind_in_child(&two_cores, rank, 8, SC_BIND_CORE, NULL, &r) == 0);
        CHECK(r.status == SC_SUCCESS);
        CHECK(CPU_EQUAL(&r.affinity, &cores[0]) || CPU_EQUAL(&r.affinity, &cores[1]));
        core_of[rank] = CPU_EQUAL(&r.affinity, &cores[0]) ? 0 : 1;
    }
    /* consecutive ranks share: 0-3 on one core, 4-7 on the other */
    for (int rank = 1; rank < 4; rank++)
        CHECK(core_of[rank] == core_of[0]);
    for (int rank = 4; rank < 8; rank++)
        CHECK(core_of[rank] == 1 - core_of[0]);
    return TEST_PASS;
}

static int bind_stays_inside_a_taskset_restriction(void)
{
    const cpu_set_t *last;
    bind_result_t r0, r1;

    NEED_CORES(2);
    last = &cores[ncores - 1];
    CHECK(bind_in_child(last, 0, 1, SC_BIND_CORE, NULL, &r0) == 0);
    CHECK(r0.status == SC_SUCCESS);
    CHECK(CPU_EQUAL(&r0.affinity, last));
    CHECK(bind_in_child(last, 1, 2, SC_BIND_CORE, NULL, &r1) == 0);
    CHECK(r1.status == SC_SUCCESS);
    CHECK(CPU_EQUAL(&r1.affinity, last));
    return TEST_PASS;
}

static int bind_none_leaves_the_affinity_unchanged(void)
{
    bind_result_t r;

    NEED_CORES(2); /* with one core, binding would not change it either */
    CHECK(bind_in_child(NULL, 0, 2, SC_BIND_NONE, NULL, &r) == 0);
    CHECK(r.status == SC_SUCCESS);
    CHECK(CPU_EQUAL(&r.affinity, &allowed));
    return TEST_PASS;
}

static int bind_default_with_SC_BIND_none_leaves_the_affinity_unchanged(void)
{
    bind_result_t r;

    NEED_CORES(2);
    CHECK(bind_in_child(NULL, 0, 2, SC_BIND_DEFAULT, "none", &r) == 0);
    CHECK(r.status == SC_SUCCESS);
    CHECK(CPU_EQUAL(&r.affinity, &allowed));
    return TEST_PASS;
}

static int bind_default_without_SC_BIND_binds_to_cores(void)
{
    bind_result_t by_default, by_core;

    NEED_CORES(2);
    CHECK(bind_in_child(NULL, 0, 2, SC_BIND_DEFAULT, NULL, &by_default) == 0);
    CHECK(bind_in_child(NULL, 0, 2, SC_BIND_CORE, NULL, &by_core) == 0);
    CHECK(by_default.status == SC_SUCCESS);
    CHECK(whole_cores_in(&by_default.affinity) == ncores / 2);
    CHECK(CPU_EQUAL(&by_default.affinity, &by_core.affinity));
    return TEST_PASS;
}

static int bind_default_with_bogus_SC_BIND_is_an_invalid_arg_naming_it(void)
{
    bind_result_t r;

    NEED_CORES(1);
    CHECK(bind_in_child(NULL, 0, 1, SC_BIND_DEFAULT, "bogus", &r) == 0);
    CHECK(r.status == SC_ERR_INVALID_ARG);
    CHECK(strstr(r.error, "SC_BIND") != NULL);
    CHECK(strstr(r.error, "bogus") != NULL);
    CHECK(CPU_EQUAL(&r.affinity, &allowed));
    return TEST_PASS;
}

static int bind_rejects_a_local_rank_outside_the_local_size(void)
{
    static const int bad[][2] = {{2, 2}, {-1, 2}, {0, 0}, {0, -3}};

    NEED_CORES(1);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bind_result_t r;

        CHECK(bind_in_child(NULL, bad[i][0], bad[i][1], SC_BIND_CORE, NULL, &r) == 0);
        CHECK(r.status == SC_ERR_INVALID_ARG);
        CHECK(strstr(r.error, "local rank") != NULL);
        CHECK(CPU_EQUAL(&r.affinity, &allowed));
    }
    return TEST_PASS;
}

static pthread_barrier_t thread_started, thread_may_exit;

static void *wait_thread(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&thread_started);
    pthread_barrier_wait(&thread_may_exit);
    return NULL;
}

/* Starts a thread, binds, reads that thread's affinity. */
static void bind_with_thread_body(void *out, const void *arg)
{
    const bind_args_t *a = arg;
    bind_result_t *r = out;
    pthread_t thread;

    bind_setup(a, r);
    pthread_barrier_init(&thread_started, NULL, 2);
    pthread_barrier_init(&thread_may_exit, NULL, 2);
    if (pthread_create(&thread, NULL, wait_thread, NULL) != 0) {
        r->setup_failed = 1;
        return;
    }
    pthread_barrier_wait(&thread_started);
    r->status = sc_topology_bind(a->local_rank, a->local_size, a->mode);
    current_affinity(&r->affinity);
    CPU_ZERO(&r->other_thread);
    pthread_getaffinity_np(thread, sizeof(cpu_set_t), &r->other_thread);
    pthread_barrier_wait(&thread_may_exit);
    pthread_join(thread, NULL);
}

static int bind_applies_to_every_thread_of_the_process(void)
{
    bind_args_t a = {NULL, 1, 2, SC_BIND_CORE, NULL};
    bind_result_t r;

    NEED_CORES(2);
    memset(&r, 0, sizeof(r));
    CHECK(run_in_child(bind_with_thread_body, &a, &r, sizeof(r)) == 0);
    CHECK(!r.setup_failed);
    CHECK(r.status == SC_SUCCESS);
    CHECK(whole_cores_in(&r.affinity) == ncores - ncores / 2);
    CHECK(CPU_EQUAL(&r.other_thread, &r.affinity));
    return TEST_PASS;
}

/* Binds as local rank 0 of 2, then as local rank 1 of 2, in one process. */
static void bind_twice_body(void *out, const void *arg)
{
    bind_result_t *r = out;

    (void)arg;
    unsetenv("SC_BIND");
    r->status = sc_topology_bind(0, 2, SC_BIND_CORE);
    if (r->status == SC_SUCCESS)
        r->status = sc_topology_bind(1, 2, SC_BIND_CORE);
    current_affinity(&r->affinity);
}

static int bind_again_splits_the_cores_allowed_before_the_first_bind(void)
{
    bind_result_t twice, once;

    NEED_CORES(2);
    memset(&twice, 0, sizeof(twice));
    CHECK(run_in_child(bind_twice_body, NULL, &twice, sizeof(twice)) == 0);
    CHECK(bind_in_child(NULL, 1, 2, SC_BIND_CORE, NULL, &once) == 0);
    CHECK(twice.status == SC_SUCCESS && once.status == SC_SUCCESS);
    CHECK(CPU_EQUAL(&twice.affinity, &once.affinity));
    CHECK(whole_cores_in(&twice.affinity) == ncores - ncores / 2);
    return TEST_PASS;
}

static const test_entry_t tests[] = {
    {"bind_one_local_rank_gets_every_allowed_core",
     bind_one_local_rank_gets_every_allowed_core},
    {"bind_two_local_ranks_get_disjoint_halves_covering_the_allowed_cores",
     bind_two_local_ranks_get_disjoint_halves_covering_the_allowed_cores},
    {"bind_eight_local_ranks_on_two_cores_put_four_on_each_core",
     bind_eight_local_ranks_on_two_cores_put_four_on_each_core},
    {"bind_stays_inside_a_taskset_restriction", bind_stays_inside_a_taskset_restriction},
    {"bind_none_leaves_the_affinity_unchanged", bind_none_leaves_the_affinity_unchanged},
    {"bind_default_with_SC_BIND_none_leaves_the_affinity_unchanged",
     bind_default_with_SC_BIND_none_leaves_the_affinity_unchanged},
    {"bind_default_without_SC_BIND_binds_to_cores",
     bind_default_without_SC_BIND_binds_to_cores},
    {"bind_default_with_bogus_SC_BIND_is_an_invalid_arg_naming_it",
     bind_default_with_bogus_SC_BIND_is_an_invalid_arg_naming_it},
    {"bind_rejects_a_local_rank_outside_the_local_size",
     bind_rejects_a_local_rank_outside_the_local_size},
    {"bind_applies_to_every_thread_of_the_process",
     bind_applies_to_every_thread_of_the_process},
    {"bind_again_splits_the_cores_allowed_before_the_first_bind",
     bind_again_splits_the_cores_allowed_before_the_first_bind},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
