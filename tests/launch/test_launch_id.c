/* Which launch a rank belongs to (sc_bootstrap_launch_id), from SC_LAUNCH_ID or the
 * variables of the launcher that gives its rank: torchrun's, Slurm's, Open MPI's.
 * `test_launch_id [NAME]`. */
#include <stdlib.h>
#include <string.h>

#include "core/bootstrap_env.h"

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"
#include "../common/sc_test_runner.h"

#define NELEM(x) (sizeof(x) / sizeof((x)[0]))

/* Every variable the derivation reads, or that picks the launcher. */
static void clear_env(void)
{
    static const char *const names[] = {
        "SC_LAUNCH_ID", "SC_RANK", "SC_WORLD_SIZE", "RANK", "WORLD_SIZE",
        "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
        "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid", "OMPI_MCA_ess_base_jobid", "PMI_RANK",
        "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_JOB_ID",
        "SLURM_STEP_ID"};

    for (size_t i = 0; i < NELEM(names); i++)
        unsetenv(names[i]);
}

/* The id derived from env (name, value pairs, NULL-ended; nothing else set) against
 * want_id and want_from. */
static int check_id(const char *const *env, const char *want_id, const char *want_from)
{
    sc_store_launch_t l;

    clear_env();
    for (; env[0]; env += 2)
        setenv(env[0], env[1], 1);
    sc_bootstrap_launch_id(&l);
    CHECK(strcmp(l.id, want_id) == 0 && strcmp(l.from, want_from) == 0,
          "launch id \"%s\" from \"%s\", expected \"%s\" from \"%s\"", l.id, l.from, want_id,
          want_from);
    return 0;
}

static int test_no_launcher_and_no_sc_launch_id_is_none(void)
{
    static const char *const env[] = {"SC_RANK", "1", "SC_WORLD_SIZE", "2", NULL};
    return check_id(env, "", "");
}

/* scrun's (a random one per run), or one a user sets: before the launcher's. */
static int test_sc_launch_id_comes_before_the_launchers(void)
{
    static const char *const env[] = {"RANK", "1", "TORCHELASTIC_RUN_ID", "torch-run",
                                      "SC_LAUNCH_ID", "scrun-0123456789abcdef", NULL};
    return check_id(env, "scrun-0123456789abcdef", "SC_LAUNCH_ID");
}

/* Inside a Slurm allocation too. */
static int test_torchrun_gives_its_run_id(void)
{
    static const char *const env[] = {"RANK", "3", "WORLD_SIZE", "4", "TORCHELASTIC_RUN_ID",
                                      "f3a9c2e4-job", "SLURM_JOB_ID", "777", NULL};
    return check_id(env, "f3a9c2e4-job", "TORCHELASTIC_RUN_ID");
}

/* Two torchruns of one Slurm allocation share its job id: it is no torchrun's id. */
static int test_torchrun_without_a_run_id_takes_no_other_launchers(void)
{
    static const char *const env[] = {"RANK", "3", "SLURM_PROCID", "0", "SLURM_JOB_ID", "777",
                                      NULL};
    return check_id(env, "", "");
}

static int test_slurm_gives_its_job_and_step(void)
{
    static const char *const env[] = {"SLURM_PROCID", "5", "SLURM_STEP_NUM_TASKS", "8",
                                      "SLURM_JOB_ID", "123456", "SLURM_STEP_ID", "2", NULL};
    return check_id(env, "123456.2", "SLURM_JOB_ID.SLURM_STEP_ID");
}

/* A program the batch script runs itself: no step. */
static int test_slurm_without_a_step_gives_its_job(void)
{
    static const char *const env[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "1",
                                      "SLURM_JOB_ID", "123456", NULL};
    return check_id(env, "123456", "SLURM_JOB_ID");
}

static int test_open_mpi_gives_its_pmix_namespace(void)
{
    static const char *const env[] = {"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "3",
                                      "PMIX_NAMESPACE", "prterun-node1-4242@1",
                                      "OMPI_MCA_ess_base_jobid", "99", NULL};
    return check_id(env, "prterun-node1-4242@1", "PMIX_NAMESPACE");
}

static int test_open_mpi_without_pmix_gives_its_orte_job_id(void)
{
    static const char *const env[] = {"OMPI_COMM_WORLD_RANK", "1", "OMPI_MCA_orte_ess_jobid",
                                      "3735879681", "OMPI_MCA_ess_base_jobid", "99", NULL};
    return check_id(env, "3735879681", "OMPI_MCA_orte_ess_jobid");
}

static int test_open_mpi_gives_its_ess_base_job_id(void)
{
    static const char *const env[] = {"OMPI_COMM_WORLD_RANK", "1", "OMPI_MCA_ess_base_jobid",
                                      "99", NULL};
    return check_id(env, "99", "OMPI_MCA_ess_base_jobid");
}

/* It goes into sentences: cut to SC_LAUNCH_ID_MAX - 1 bytes, control characters as '?'. */
static int test_a_long_id_is_cut_and_control_characters_replaced(void)
{
    char set[SC_LAUNCH_ID_MAX + 16], want[SC_LAUNCH_ID_MAX];
    const char *const env[] = {"SC_LAUNCH_ID", set, NULL};

    memset(set, 'x', sizeof(set) - 1);
    set[sizeof(set) - 1] = '\0';
    set[2] = '\t';
    memcpy(want, set, sizeof(want) - 1);
    want[sizeof(want) - 1] = '\0';
    want[2] = '?';
    return check_id(env, want, "SC_LAUNCH_ID");
}

int main(int argc, char **argv)
{
    static const sc_test_t tests[] = {
        SC_TEST(no_launcher_and_no_sc_launch_id_is_none),
        SC_TEST(sc_launch_id_comes_before_the_launchers),
        SC_TEST(torchrun_gives_its_run_id),
        SC_TEST(torchrun_without_a_run_id_takes_no_other_launchers),
        SC_TEST(slurm_gives_its_job_and_step),
        SC_TEST(slurm_without_a_step_gives_its_job),
        SC_TEST(open_mpi_gives_its_pmix_namespace),
        SC_TEST(open_mpi_without_pmix_gives_its_orte_job_id),
        SC_TEST(open_mpi_gives_its_ess_base_job_id),
        SC_TEST(a_long_id_is_cut_and_control_characters_replaced),
    };
    return sc_run_tests(tests, NELEM(tests), argc > 1 ? argv[1] : NULL);
}
