/* Specs of sc_info_print_config (values, sources, defaults, invalid settings), of the
 * Slurm task count parser, and of sc_info_print_topology's binding and counts. */
#include "test_util.h"

#include <pthread.h>

#include "collectives/ucx_env.h"
#include "core/bootstrap_env.h"
#include "core/cpu.h"
#include "core/env.h"
#include "core/env_names.h"
#include "core/log.h"
#include "core/topology.h"
#include "core/tuning.h"
#include "shardcomm/info.h"
#include "shardcomm/status.h"

#define REPORT_MAX 16384

typedef struct {
    const char *const *env; /* NAME, VALUE pairs, NULL-terminated */
    const cpu_set_t *restrict_to;
} report_args_t;

typedef struct {
    int setup_failed;
    sc_status_t status;
    char error[1024];
    char text[REPORT_MAX];
} report_t;

static const char *const ucx_variables[] = {"UCX_TLS", "UCX_RNDV_SCHEME", "UCX_TCP_CONN_NB",
                                            "UCX_DEBUG_SIGNO", NULL};
static const char *const *const all_variable_lists[] = {
    sc_env_rank_names, sc_env_world_size_names, sc_env_local_rank_names,
    sc_env_local_size_names, sc_env_master_addr_names, sc_env_master_port_names,
    sc_env_timeout_names, sc_env_bind_names, sc_env_log_level_names, sc_env_algo_names,
    sc_env_ring_threshold_names, sc_env_chunk_bytes_names, sc_env_progress_spin_us_names,
    sc_env_device_names, sc_env_nccl_names, sc_env_cuda_driver_names,
    sc_env_bucket_cap_mb_names, sc_env_eager_sends_names, sc_env_threads_names, ucx_variables,
    NULL};

/* Only the test's own variables are set: the environment ctest runs in may carry a
 * launcher's. */
static void report_setup(const report_args_t *a, report_t *r)
{
    for (const char *const *const *list = all_variable_lists; *list; list++)
        for (const char *const *name = *list; *name; name++)
            unsetenv(*name);
    for (const char *const *kv = a->env; kv && *kv; kv += 2)
        setenv(kv[0], kv[1], 1);
    if (a->restrict_to && restrict_process(a->restrict_to) < 0)
        r->setup_failed = 1;
}

static void capture(report_t *r, sc_status_t (*print)(FILE *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    if (!f) {
        r->setup_failed = 1;
        return;
    }
    r->status = print(f);
    snprintf(r->error, sizeof(r->error), "%s", sc_last_error());
    fclose(f);
    snprintf(r->text, sizeof(r->text), "%s", buf);
    free(buf);
}

static void config_body(void *out, const void *arg)
{
    report_setup(arg, out);
    capture(out, sc_info_print_config);
}

static void topology_body(void *out, const void *arg)
{
    report_setup(arg, out);
    capture(out, sc_info_print_topology);
}

static int run_report(void (*body)(void *, const void *), const char *const *env,
                      const cpu_set_t *restrict_to, report_t *r)
{
    report_args_t a = {env, restrict_to};

    memset(r, 0, sizeof(*r));
    if (run_in_child(body, &a, r, sizeof(*r)) < 0 || r->setup_failed)
        return -1;
    return 0;
}

/* The line of setting name ("  SC_RANK  = 3  RANK (reads ...)"): value and source
 * (the text after the value, up to " (reads"). 0 when found. */
static int setting(const report_t *r, const char *name, char *value, char *source)
{
    size_t nlen = strlen(name);

    for (const char *line = r->text; line && *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        char copy[1024], *p, *reads;

        if (len < sizeof(copy) && strncmp(line, "  ", 2) == 0 &&
            strncmp(line + 2, name, nlen) == 0 && line[2 + nlen] == ' ') {
            memcpy(copy, line, len);
            copy[len] = '\0';
            reads = strstr(copy, " (reads");
            if (reads)
                *reads = '\0';
            p = copy + 2 + nlen;
            p += strspn(p, " ");
            if (*p++ != '=')
                return -1;
            p += strspn(p, " ");
            len = strcspn(p, " ");
            memcpy(value, p, len);
            value[len] = '\0';
            p += len;
            p += strspn(p, " ");
            strcpy(source, p);
            return 0;
        }
        line = eol ? eol + 1 : NULL;
    }
    return -1;
}

/* sc-info --config in env succeeds, and shows setting name with want_value from
 * want_source; r keeps the report. */
static int config_shows(const char *const *env, const char *name, const char *want_value,
                        const char *want_source, report_t *r)
{
    char value[256], source[1024];

    CHECK(run_report(config_body, env, NULL, r) == 0);
    CHECK(r->status == SC_SUCCESS);
    CHECK(setting(r, name, value, source) == 0);
    CHECK(strcmp(value, want_value) == 0);
    CHECK(strcmp(source, want_source) == 0);
    return TEST_PASS;
}

static int config_shows_a_value_set_through_a_fallback_variable(void)
{
    static const char *const env[] = {"RANK", "3", "WORLD_SIZE", "4", NULL};
    report_t r;

    return config_shows(env, "SC_RANK", "3", "RANK", &r);
}

static int config_prefers_the_SC_variable_over_its_fallbacks(void)
{
    static const char *const env[] = {"RANK", "3", "SC_RANK", "5", "SLURM_PROCID", "7",
                                      NULL};
    char value[256], source[1024];
    report_t r;

    CHECK(run_report(config_body, env, NULL, &r) == 0);
    CHECK(setting(&r, "SC_RANK", value, source) == 0);
    CHECK(strcmp(value, "5") == 0);
    CHECK(strcmp(source, "SC_RANK") == 0);
    return TEST_PASS;
}

static int config_shows_the_documented_defaults_when_nothing_is_set(void)
{
    static const char *const expected[][2] = {
        {"SC_RANK", "0"},
        {"SC_WORLD_SIZE", "1"},
        {"SC_LOCAL_RANK", "auto"},
        {"SC_LOCAL_SIZE", "auto"},
        {"SC_MASTER_ADDR", "127.0.0.1"},
        {"SC_MASTER_PORT", "29500"},
        {"SC_TIMEOUT", "300"},
        {"SC_STORE_FANOUT", "8"},
        {"SC_BIND", "core"},
        {"SC_LOG_LEVEL", "warn"},
        {"SC_ALGO", "auto"},
        {"SC_RING_THRESHOLD", "8192"},
        {"SC_CHUNK_BYTES", "262144"},
        {"SC_PROGRESS_SPIN_US", "50"},
        {"SC_LOCAL_REGISTER", "1"},
        {"SC_LOCAL_MAILBOX", "1"},
        {"SC_STREAM_BYTES", "16777216"},
        {"SC_STAGE_BYTES", "2097152"},
        {"SC_EAGER_SENDS", "auto"},
    };
    char value[256], source[1024];
    report_t r;

    CHECK(run_report(config_body, NULL, NULL, &r) == 0);
    CHECK(r.status == SC_SUCCESS);
    for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
        if (setting(&r, expected[i][0], value, source) != 0 ||
            strcmp(value, expected[i][1]) != 0 || strncmp(source, "default", 7) != 0) {
            fprintf(stderr, "%s: expected %s from default\n%s", expected[i][0],
                    expected[i][1], r.text);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

/* mpirun's variables beside a stale torchrun WORLD_SIZE: the size is Open MPI's, as the
 * rank is, and the reads list says so. */
static int config_takes_rank_and_size_from_one_launcher(void)
{
    static const char *const env[] = {"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1",
                                      "WORLD_SIZE", "2", NULL};
    report_t r;

    CHECK(config_shows(env, "SC_WORLD_SIZE", "1", "OMPI_COMM_WORLD_SIZE", &r) == TEST_PASS);
    CHECK(strstr(r.text, "(reads SC_WORLD_SIZE OMPI_COMM_WORLD_SIZE: launched by Open MPI)"));
    return TEST_PASS;
}

static int config_local_rank_and_size_are_auto_when_unset(void)
{
    static const char *const env[] = {"RANK", "3", "WORLD_SIZE", "8", NULL};
    char value[256], source[1024];
    report_t r;

    CHECK(run_report(config_body, env, NULL, &r) == 0);
    CHECK(setting(&r, "SC_LOCAL_RANK", value, source) == 0);
    CHECK(strcmp(value, "auto") == 0);
    CHECK(strncmp(source, "default: counted", 16) == 0);
    CHECK(setting(&r, "SC_LOCAL_SIZE", value, source) == 0);
    CHECK(strcmp(value, "auto") == 0);
    CHECK(strncmp(source, "default: counted", 16) == 0);
    return TEST_PASS;
}

static int config_takes_the_leading_number_of_slurm_tasks_per_node(void)
{
    static const char *const env[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "8",
                                      "SLURM_STEP_TASKS_PER_NODE", "4(x2)", NULL};
    report_t r;

    return config_shows(env, "SC_LOCAL_SIZE", "4", "SLURM_STEP_TASKS_PER_NODE=4(x2)", &r);
}

/* SLURM_STEP_TASKS_PER_NODE=2,1 on the second node (SLURM_NODEID=1): its count, 1. The
 * leading number, 2, held on the first node only (the reviewer's layout: rank 2 alone
 * on node 1 bound to half the cores). */
static int config_takes_this_nodes_entry_of_slurm_tasks_per_node(void)
{
    static const char *const env[] = {"SLURM_PROCID", "2", "SLURM_NTASKS", "3",
                                      "SLURM_NODEID", "1", "SLURM_STEP_TASKS_PER_NODE", "2,1",
                                      NULL};
    report_t r;

    return config_shows(env, "SC_LOCAL_SIZE", "1", "SLURM_STEP_TASKS_PER_NODE=2,1", &r);
}

/* srun -n 7 --ntasks-per-node 4 on two nodes: SLURM_NTASKS_PER_NODE is the 4 asked for,
 * on node 1 too, which got 3 (the step's layout); it gave 4 there. */
static int config_takes_the_steps_tasks_per_node_not_the_requested(void)
{
    static const char *const env[] = {"SLURM_PROCID", "5", "SLURM_NTASKS", "7",
                                      "SLURM_LOCALID", "1", "SLURM_NODEID", "1",
                                      "SLURM_NTASKS_PER_NODE", "4",
                                      "SLURM_STEP_TASKS_PER_NODE", "4,3", NULL};
    report_t r;

    return config_shows(env, "SC_LOCAL_SIZE", "3", "SLURM_STEP_TASKS_PER_NODE=4,3", &r);
}

/* What sc_comm_init checks of the launch settings together, sc-info checks too: each
 * of these is valid alone (sc-info used to exit 0 for them). */
static int config_checks_the_launch_settings_together(void)
{
    static const char *const cases[][5] = {
        {"SC_RANK", "5", "SC_WORLD_SIZE", "2",
         "rank 5 (from SC_RANK) is outside the world of size 2 (from SC_WORLD_SIZE)"},
        {"SC_RANK", "1", NULL, NULL, "no world size is set"},
        {"SC_LOCAL_RANK", "1", "SC_LOCAL_SIZE", "1",
         "local rank 1 (from SC_LOCAL_RANK) is outside the local size 1 (from SC_LOCAL_SIZE)"}};
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const env[] = {cases[i][0], cases[i][1], cases[i][2], cases[i][3], NULL};
        CHECK(run_report(config_body, env, NULL, &r) == 0);
        if (r.status != SC_ERR_INVALID_ARG || !strstr(r.error, cases[i][4]) ||
            !strstr(r.text, "INVALID together: ")) {
            fprintf(stderr, "%s=%s: %s '%s', expected '%s'\n", cases[i][0], cases[i][1],
                    sc_status_string(r.status), r.error, cases[i][4]);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

/* sc-info --config under env (name, value pairs) succeeds and shows var as value, its
 * source starting with source_start; source (NULL, or 1024 bytes) receives it. */
static int shown_as(const char *const *env, const char *var, const char *value,
                    const char *source_start, char *source)
{
    char got[256], from[1024];
    report_t r;

    CHECK(run_report(config_body, env, NULL, &r) == 0);
    CHECK(r.status == SC_SUCCESS);
    CHECK(setting(&r, var, got, from) == 0);
    if (strcmp(got, value) != 0 || strncmp(from, source_start, strlen(source_start)) != 0) {
        fprintf(stderr, "%s shown as '%s' from '%s', expected '%s' from '%s...'\n", var, got,
                from, value, source_start);
        return TEST_FAIL;
    }
    if (source)
        snprintf(source, 1024, "%s", from);
    return TEST_PASS;
}

/* MASTER_PORT is torch.distributed's store (torchrun's agent, rank 0 of
 * init_process_group): the rendezvous port read from it is the next one, as
 * sc_comm_init takes it; SC_MASTER_PORT is taken as it is; no port after 65535 is
 * INVALID together where the world has a rendezvous (a world of one has none). */
static int config_takes_the_port_after_torchs_master_port(void)
{
    static const char *const moved[] = {"MASTER_PORT", "29500", NULL};
    static const char *const own[] = {"MASTER_PORT", "29500", "SC_MASTER_PORT", "4000", NULL};
    static const char *const last[] = {"MASTER_PORT", "65535", "RANK", "0", "WORLD_SIZE", "2",
                                       NULL};
    report_t r;

    CHECK(shown_as(moved, "SC_MASTER_PORT", "29501",
                   "MASTER_PORT=29500 plus 1: MASTER_PORT is torch.distributed's store",
                   NULL) == TEST_PASS);
    CHECK(shown_as(own, "SC_MASTER_PORT", "4000", "SC_MASTER_PORT", NULL) == TEST_PASS);
    CHECK(run_report(config_body, last, NULL, &r) == 0);
    CHECK(r.status == SC_ERR_INVALID_ARG);
    CHECK(strstr(r.error, "no port follows it") != NULL);
    CHECK(strstr(r.text, "INVALID together: ") != NULL);
    return TEST_PASS;
}

static int config_marks_an_invalid_value_and_returns_invalid_arg(void)
{
    static const char *const env[] = {"SC_BIND", "bogus", NULL};
    char value[256], source[1024];
    report_t r;

    CHECK(run_report(config_body, env, NULL, &r) == 0);
    CHECK(r.status == SC_ERR_INVALID_ARG);
    CHECK(strstr(r.error, "SC_BIND=bogus") != NULL);
    CHECK(setting(&r, "SC_BIND", value, source) == 0);
    CHECK(strcmp(value, "bogus") == 0);
    CHECK(strncmp(source, "INVALID", 7) == 0);
    /* the settings after the invalid one are still reported */
    CHECK(setting(&r, "SC_PROGRESS_SPIN_US", value, source) == 0);
    return TEST_PASS;
}

/* SC_BUCKET_CAP_MB shows the cap the reducer takes, in whole bytes rounded down and at
 * least 1, where that differs from the text (1e-9 showed "1e-09", a cap of a millionth
 * of a byte, where the reducer took 1 byte), and the text as written beside it; a cap of
 * whole bytes shows as written. */
static int config_shows_the_bucket_cap_the_reducer_takes(void)
{
    static const char *const cases[][3] = {
        /* value set, value shown (MiB), source */
        {"1e-9", "9.5367431640625e-07", /* 1 / 2^20 */
         "SC_BUCKET_CAP_MB=1e-9, a cap of 1 byte: the reducer takes whole bytes, at least 1"},
        {"0.1", "0.09999942779541016", /* 104857 / 2^20 */
         "SC_BUCKET_CAP_MB=0.1, a cap of 104857 bytes: the reducer takes whole bytes, at "
         "least 1"},
        {"0.5", "0.5", "SC_BUCKET_CAP_MB"},
        {"25", "25", "SC_BUCKET_CAP_MB"},
        {"1e-6", "9.5367431640625e-07",
         "SC_BUCKET_CAP_MB=1e-6, a cap of 1 byte: the reducer takes whole bytes, at least 1"}};
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const env[] = {"SC_BUCKET_CAP_MB", cases[i][0], NULL};
        CHECK(config_shows(env, "SC_BUCKET_CAP_MB", cases[i][1], cases[i][2], &r) ==
              TEST_PASS);
    }
    return TEST_PASS;
}

/* With a UCX_TLS that leaves no shared-memory transport, what the shared-memory settings
 * turn on is never mapped (configuration.md): their lines say so where they are on, and
 * not where they are off or UCX_TLS leaves one (they showed as on, with no word). */
static int config_says_shared_memory_settings_do_nothing_without_shared_memory(void)
{
    static const char *const none = "; no effect: UCX_TLS has no shared-memory transport";
    static const char *const cases[][6] = {
        /* UCX_TLS, another variable and its value (or NULL), then for SC_LOCAL_REGISTER,
         * SC_LOCAL_MAILBOX and SC_STAGE_BYTES 1 where the line says no effect */
        {"tcp,self", NULL, NULL, "1", "1", "1"},
        {"^sm", NULL, NULL, "1", "1", "1"},
        {"^posix,sysv", NULL, NULL, "1", "1", "1"},
        {"tcp,self", "SC_STAGE_BYTES", "0", "1", "1", "0"},
        {"tcp,self", "SC_LOCAL_MAILBOX", "0", "1", "0", "1"},
        {"tcp,sm,self", NULL, NULL, "0", "0", "0"},
        {"^posix", NULL, NULL, "0", "0", "0"}};
    static const char *const settings[] = {"SC_LOCAL_REGISTER", "SC_LOCAL_MAILBOX",
                                           "SC_STAGE_BYTES"};
    char value[256], source[1024], want[256];
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const env[] = {"UCX_TLS", cases[i][0], cases[i][1], cases[i][2], NULL};
        CHECK(run_report(config_body, env, NULL, &r) == 0);
        CHECK(r.status == SC_SUCCESS);
        for (int s = 0; s < 3; s++) {
            int set = cases[i][1] && strcmp(cases[i][1], settings[s]) == 0;
            snprintf(want, sizeof(want), "%s%s", set ? settings[s] : "default",
                     cases[i][3 + s][0] == '1' ? none : "");
            if (setting(&r, settings[s], value, source) != 0 || strcmp(source, want) != 0) {
                fprintf(stderr, "UCX_TLS=%s: %s from '%s', expected '%s'\n%s", cases[i][0],
                        settings[s], source, want, r.text);
                return TEST_FAIL;
            }
        }
    }
    return TEST_PASS;
}

/* Whether UCX_TLS leaves UCX its POSIX transport (the worker's /dev/shm hint) and any
 * mm transport (what shardcomm maps in shared memory) is one reading of the list, as UCX
 * reads it: names and the aliases that hold them, not substrings. The hint's own check
 * found "posix" among the excluded names alone, so '^sm', '^shm' and '^mm' (which
 * exclude it) left it on. */
static int ucx_tls_leaves_posix_and_shared_memory_as_ucx_reads_it(void)
{
    static const char *const cases[][3] = {
        /* UCX_TLS (NULL: unset), then 1 where posix, then any mm transport, is left */
        {NULL, "1", "1"},        {"", "1", "1"},          {"posix", "1", "1"},
        {"self,sm", "1", "1"},   {"shm,tcp", "1", "1"},   {"mm", "1", "1"},
        {"all", "1", "1"},       {"sysv,self", "0", "1"}, {"tcp,self", "0", "0"},
        {"tcp,cma", "0", "0"},   {"^posix", "0", "1"},    {"^sysv", "1", "1"},
        {"^tcp", "1", "1"},      {"^sm", "0", "0"},       {"^shm", "0", "0"},
        {"^mm,tcp", "0", "0"},   {"^posix,sysv", "0", "0"},
        /* "all" is every transport only alone ('^all' too); after another name it names
         * none: "tcp,self,all" is tcp and self, which map nothing in shared memory. */
        {"^all", "1", "1"},      {"tcp,self,all", "0", "0"}, {"sysv,all", "0", "1"},
        /* "\posix" is UCX's strict name of the transport posix; "\sm" names no alias,
         * and no transport (UCX warns that it is not available). */
        {"\\posix,self", "1", "1"}, {"\\sysv", "0", "1"}, {"^\\posix", "0", "1"},
        {"^\\posix,\\sysv", "0", "0"}, {"\\sm,self", "0", "0"}, {"^\\sm", "1", "1"}};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int posix, shm;

        if (cases[i][0])
            setenv("UCX_TLS", cases[i][0], 1);
        else
            unsetenv("UCX_TLS");
        posix = sc_ucx_may_use_posix();
        shm = sc_ucx_may_use_shm();
        if (posix != (cases[i][1][0] == '1') || shm != (cases[i][2][0] == '1')) {
            fprintf(stderr, "UCX_TLS=%s: posix %d, shared memory %d; expected %s, %s\n",
                    cases[i][0] ? cases[i][0] : "(unset)", posix, shm, cases[i][1],
                    cases[i][2]);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

/* A name with ":aux" after it (UCX's "that transport, for wireup alone") names it as UCX
 * 1.13 reads it (ucx_info -e shows no tcp lane under '^tcp:aux', no cma under '^sm:aux'):
 * '^tcp:aux' was read as excluding nothing, so TCP counted as left to UCX. */
static int ucx_tls_reads_a_name_with_aux_as_that_name(void)
{
    static const char *const cases[][4] = {
        /* UCX_TLS, then 1 where tcp (ranks on several nodes), posix, any mm is left */
        {"^tcp:aux", "0", "1", "1"},        {"^\\tcp:aux", "0", "1", "1"},
        {"^tcp:aux,posix", "0", "0", "1"},  {"tcp:aux,self", "1", "0", "0"},
        {"^sm:aux", "1", "0", "0"},         {"^posix:aux", "1", "0", "1"},
        {"posix:aux,tcp", "1", "1", "1"},   {"self,tcpx:aux", "0", "0", "0"},
        {"self,:aux", "0", "0", "0"}};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int tcp, posix, shm;

        setenv("UCX_TLS", cases[i][0], 1);
        tcp = sc_ucx_may_use_tcp(0);
        posix = sc_ucx_may_use_posix();
        shm = sc_ucx_may_use_shm();
        if (tcp != (cases[i][1][0] == '1') || posix != (cases[i][2][0] == '1') ||
            shm != (cases[i][3][0] == '1')) {
            fprintf(stderr, "UCX_TLS=%s: tcp %d, posix %d, shared memory %d; expected %s, "
                    "%s, %s\n", cases[i][0], tcp, posix, shm, cases[i][1], cases[i][2],
                    cases[i][3]);
            unsetenv("UCX_TLS");
            return TEST_FAIL;
        }
    }
    unsetenv("UCX_TLS");
    return TEST_PASS;
}

/* UCX_TCP_CONN_NB that an sc_comm_init of ranks on several nodes set is taken back by a
 * later one that sets none (a world of one), and only that: it stayed, so UCX warned of a
 * variable no transport reads and a program the process started took it for its user's.
 * sc_ucx_open calls sc_ucx_setenv_default with sc_ucx_default's answer, NULL included. */
static int ucx_tcp_conn_nb_set_by_an_earlier_init_is_taken_back(void)
{
    const char *name = sc_ucx_var_names[SC_UCX_TCP_CONN_NB];

    unsetenv(name);
    sc_ucx_setenv_default(SC_UCX_TCP_CONN_NB, "y"); /* ranks on several nodes */
    if (!getenv(name) || strcmp(getenv(name), "y") != 0 || sc_ucx_user_value(SC_UCX_TCP_CONN_NB)) {
        fprintf(stderr, "the first init's y: %s in the environment, user's %s\n",
                getenv(name) ? getenv(name) : "(unset)",
                sc_ucx_user_value(SC_UCX_TCP_CONN_NB) ? "yes" : "no");
        return TEST_FAIL;
    }
    sc_ucx_setenv_default(SC_UCX_TCP_CONN_NB, NULL); /* then a world of one */
    if (getenv(name)) {
        fprintf(stderr, "a later init without tcp left %s=%s\n", name, getenv(name));
        return TEST_FAIL;
    }
    /* The user's own value is never taken back, nor one the user wrote over ours. */
    sc_ucx_setenv_default(SC_UCX_TCP_CONN_NB, "y");
    setenv(name, "n", 1);
    sc_ucx_setenv_default(SC_UCX_TCP_CONN_NB, NULL);
    if (!getenv(name) || strcmp(getenv(name), "n") != 0 ||
        !sc_ucx_user_value(SC_UCX_TCP_CONN_NB)) {
        fprintf(stderr, "the user's n became %s\n", getenv(name) ? getenv(name) : "(unset)");
        return TEST_FAIL;
    }
    unsetenv(name);
    return TEST_PASS;
}

/* The UCX settings shardcomm decides are printed with the settings (configuration.md's
 * "each setting above"; they were not): the user's value from its variable, else
 * shardcomm's default for where the launcher says the ranks are, as sc_comm_init opens
 * the transport before the rendezvous (its local size the world size: self,sm and no
 * TCP; else, a local size to be counted and a world of one's too: UCX's transports, TCP
 * connecting without blocking), else UCX's own. An empty variable is unset. */
static int config_shows_the_ucx_settings_shardcomm_decides(void)
{
    static const char *const mine = "shardcomm's default";
    static const char *const ucx = "UCX's own default: shardcomm sets none here";
    static const char *const cases[][13] = {
        /* NAME, VALUE pairs (NULL-ended, up to 3), then UCX_TLS, UCX_RNDV_SCHEME,
         * UCX_TCP_CONN_NB: value and source each ("": shardcomm's default, "u": UCX's
         * own); at [12] UCX_DEBUG_SIGNO's value */
        /* A world of one is on one node (it took UCX's every transport before). */
        {NULL, NULL, NULL, NULL, NULL, NULL, "self,sm", "", "put_zcopy", "", "unset", "u",
         "none"},
        {"WORLD_SIZE", "1", NULL, NULL, NULL, NULL, "self,sm", "", "put_zcopy", "", "unset",
         "u", "none"},
        {"RANK", "0", "WORLD_SIZE", "2", NULL, NULL, "unset", "u", "put_zcopy", "", "y", "",
         "none"},
        {"RANK", "0", "WORLD_SIZE", "2", "LOCAL_WORLD_SIZE", "1", "unset", "u", "put_zcopy",
         "", "y", "", "none"},
        {"RANK", "0", "WORLD_SIZE", "2", "LOCAL_WORLD_SIZE", "2", "self,sm", "", "put_zcopy",
         "", "unset", "u", "none"},
        {"UCX_TLS", "tcp,self", "UCX_RNDV_SCHEME", "get_zcopy", "UCX_DEBUG_SIGNO", "10",
         "tcp,self", "UCX_TLS", "get_zcopy", "UCX_RNDV_SCHEME", "y", "", "10"},
        {"UCX_TLS", "", "SC_LOCAL_SIZE", "1", "UCX_TCP_CONN_NB", "n", "self,sm", "",
         "put_zcopy", "", "n", "UCX_TCP_CONN_NB", "none"},
        /* A list that excludes tcp leaves UCX none to read UCX_TCP_CONN_NB (it was set,
         * and UCX warned "unused env variable"); one that excludes another leaves tcp. */
        {"UCX_TLS", "^tcp", "RANK", "0", "WORLD_SIZE", "2", "^tcp", "UCX_TLS", "put_zcopy",
         "", "unset", "u", "none"},
        {"UCX_TLS", "^ib,sm", "RANK", "0", "WORLD_SIZE", "2", "^ib,sm", "UCX_TLS",
         "put_zcopy", "", "y", "", "none"},
        /* "all" after another name names no transport, as UCX reads it: no tcp there. */
        {"UCX_TLS", "sm,self,all", "RANK", "0", "WORLD_SIZE", "2", "sm,self,all", "UCX_TLS",
         "put_zcopy", "", "unset", "u", "none"},
        /* "\tcp" is UCX's strict name of tcp: TCP is used, and connects without blocking. */
        {"UCX_TLS", "\\tcp,self", "RANK", "0", "WORLD_SIZE", "2", "\\tcp,self", "UCX_TLS",
         "put_zcopy", "", "y", "", "none"}};
    static const char *const invalid[] = {"SC_RANK", "5", "SC_WORLD_SIZE", "2", NULL};
    static const char *const either[][2] = {
        {"UCX_TLS", "shardcomm's default: self,sm for a world of one or where the "
                    "launcher's local size is the world size, else UCX's own"},
        {"UCX_TCP_CONN_NB", "shardcomm's default: UCX's own for a world of one or where the "
                            "launcher's local size is the world size, else y"}};
    static const char *const names[] = {"UCX_TLS", "UCX_RNDV_SCHEME", "UCX_TCP_CONN_NB"};
    char value[256], source[1024];
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const env[] = {cases[i][0], cases[i][1], cases[i][2], cases[i][3],
                                   cases[i][4], cases[i][5], NULL};
        CHECK(run_report(config_body, env, NULL, &r) == 0);
        CHECK(r.status == SC_SUCCESS);
        for (int v = 0; v < 3; v++) {
            const char *want = cases[i][7 + 2 * v];
            want = !want[0] ? mine : strcmp(want, "u") == 0 ? ucx : want;
            if (setting(&r, names[v], value, source) != 0 ||
                strcmp(value, cases[i][6 + 2 * v]) != 0 || strcmp(source, want) != 0) {
                fprintf(stderr, "case %zu: %s = '%s' from '%s', expected '%s' from '%s'\n%s",
                        i, names[v], value, source, cases[i][6 + 2 * v], want, r.text);
                return TEST_FAIL;
            }
        }
        CHECK(setting(&r, "UCX_DEBUG_SIGNO", value, source) == 0);
        CHECK(strcmp(value, cases[i][12]) == 0);
        CHECK(strcmp(source, strcmp(value, "none") == 0
                                 ? "shardcomm's default: what UCX's handler replaced at load "
                                   "is given back"
                                 : "UCX_DEBUG_SIGNO: as UCX takes it") == 0);
    }
    /* Launch settings that do not fit: where the ranks are is not known, both are said. */
    CHECK(run_report(config_body, invalid, NULL, &r) == 0);
    CHECK(r.status == SC_ERR_INVALID_ARG);
    for (size_t i = 0; i < sizeof(either) / sizeof(either[0]); i++) {
        CHECK(setting(&r, either[i][0], value, source) == 0);
        CHECK(strcmp(value, "auto") == 0 && strcmp(source, either[i][1]) == 0);
    }
    return TEST_PASS;
}

/* SC_LOG_LEVEL=bogus: the library warns and logs at warn rather than failing, and
 * sc-info shows just that (warn, IGNORED with the reason), not an invalid setting. */
static int config_shows_an_unknown_log_level_as_the_library_takes_it(void)
{
    static const char *const env[] = {"SC_LOG_LEVEL", "bogus", NULL};
    char source[1024];

    CHECK(shown_as(env, "SC_LOG_LEVEL", "warn", "IGNORED: SC_LOG_LEVEL=bogus is not one of",
                   source) == TEST_PASS);
    CHECK(strstr(source, "uses warn") != NULL);
    return TEST_PASS;
}

/* A level given as its number shows as the level it means, from the text as written
 * (SC_LOG_LEVEL=3 showed "3", which a reader had to look up as debug); a name in another
 * case shows in lower case from the variable alone. */
static int config_shows_a_numbered_log_level_as_its_name(void)
{
    static const char *const cases[][3] = {
        /* value set, value shown, source */
        {"0", "error", "SC_LOG_LEVEL=0"},
        {"1", "warn", "SC_LOG_LEVEL=1"},
        {"3", "debug", "SC_LOG_LEVEL=3"},
        {"4", "trace", "SC_LOG_LEVEL=4"},
        {"DEBUG", "debug", "SC_LOG_LEVEL"},
        {"info", "info", "SC_LOG_LEVEL"}};
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const env[] = {"SC_LOG_LEVEL", cases[i][0], NULL};
        CHECK(config_shows(env, "SC_LOG_LEVEL", cases[i][1], cases[i][2], &r) == TEST_PASS);
    }
    return TEST_PASS;
}

/* Reads the level from a thread, as the progress threads and the caller's do. */
static void *log_level_thread(void *arg)
{
    (void)arg;
    sc_log_level();
    return NULL;
}

/* SC_LOG_LEVEL in arg's environment read by 8 threads at once and then again, with
 * stderr in a file: its lines into r->text, the level into r->status. */
static void log_level_body(void *out, const void *arg)
{
    report_t *r = out;
    pthread_t threads[8];
    FILE *f = tmpfile();
    size_t n;

    report_setup(arg, r);
    if (!f || dup2(fileno(f), STDERR_FILENO) < 0) {
        r->setup_failed = 1;
        return;
    }
    for (int i = 0; i < 8; i++)
        if (pthread_create(&threads[i], NULL, log_level_thread, NULL) != 0)
            r->setup_failed = 1;
    for (int i = 0; i < 8 && !r->setup_failed; i++)
        pthread_join(threads[i], NULL);
    r->status = (sc_status_t)sc_log_level();
    fflush(stderr);
    rewind(f);
    n = fread(r->text, 1, sizeof(r->text) - 1, f);
    r->text[n] = '\0';
}

/* An unknown SC_LOG_LEVEL is warn, said once on stderr in a WARN line of the log's own
 * format, its text quoted where it holds a blank (configuration.md: "reported once");
 * it was a line of another format ("shardcomm: SC_LOG_LEVEL=..."), printed by every
 * thread that read the level first. A known level says nothing. */
static int an_unknown_log_level_is_one_warn_line(void)
{
    static const char *const cases[][3] = {
        /* value, level (as a number), what stderr holds */
        {"bogus", "1", "[shardcomm] WARN: SC_LOG_LEVEL=bogus is not one of "
                       "error|warn|info|debug|trace or 0-4; using warn\n"},
        {"debug ", "1", "[shardcomm] WARN: SC_LOG_LEVEL='debug ' is not one of "
                        "error|warn|info|debug|trace or 0-4; using warn\n"},
        {"5", "1", "[shardcomm] WARN: SC_LOG_LEVEL=5 is not one of "
                   "error|warn|info|debug|trace or 0-4; using warn\n"},
        {"DEBUG", "3", ""},
        {"0", "0", ""}};
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const env[] = {"SC_LOG_LEVEL", cases[i][0], NULL};
        report_args_t a = {env, NULL};

        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(log_level_body, &a, &r, sizeof(r)) == 0 && !r.setup_failed);
        if ((int)r.status != atoi(cases[i][1]) || strcmp(r.text, cases[i][2]) != 0) {
            fprintf(stderr, "SC_LOG_LEVEL='%s': level %d, stderr '%s'; expected %s, '%s'\n",
                    cases[i][0], (int)r.status, r.text, cases[i][1], cases[i][2]);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

/* A negative local size, which sc_comm_init refuses naming the variable, is INVALID on
 * its own line, as a negative local rank is (the line showed "auto", as for a Slurm list
 * without this node's entry, and only the check of the settings together failed). */
static int config_marks_a_negative_local_size_invalid(void)
{
    static const char *const vars[][3] = {
        {"SC_LOCAL_SIZE", "-1", "SC_LOCAL_SIZE=-1 is below the minimum, 1"},
        {"SLURM_STEP_TASKS_PER_NODE", "-2",
         "SLURM_STEP_TASKS_PER_NODE=-2 is below the minimum, 1"},
        {"SC_LOCAL_SIZE", "-9223372036854775808",
         "SC_LOCAL_SIZE=-9223372036854775808 is below the minimum, 1"}};

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *const env[] = {vars[i][0], vars[i][1], NULL};
        char value[256], source[1024];
        report_t r;

        CHECK(run_report(config_body, env, NULL, &r) == 0);
        CHECK(r.status == SC_ERR_INVALID_ARG);
        CHECK(setting(&r, "SC_LOCAL_SIZE", value, source) == 0);
        if (strcmp(value, vars[i][1]) != 0 || strncmp(source, "INVALID: ", 9) != 0 ||
            !strstr(source, vars[i][2]) || !strstr(r.error, vars[i][2])) {
            fprintf(stderr, "%s=%s: shown as '%s' from '%s' (error '%s'), expected INVALID: "
                    "%s\n", vars[i][0], vars[i][1], value, source, r.error, vars[i][2]);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

static int config_error_names_the_first_invalid_setting(void)
{
    static const char *const env[] = {"MASTER_PORT", "70000", "SC_CHUNK_BYTES", "0", NULL};
    char value[256], source[1024];
    report_t r;

    CHECK(run_report(config_body, env, NULL, &r) == 0);
    CHECK(r.status == SC_ERR_INVALID_ARG);
    CHECK(strstr(r.error, "MASTER_PORT=70000") != NULL);
    CHECK(setting(&r, "SC_CHUNK_BYTES", value, source) == 0);
    CHECK(strncmp(source, "INVALID", 7) == 0);
    return TEST_PASS;
}

/* What sc-info calls valid is what the library takes, and it shows what the library
 * does: SC_BUCKET_CAP_MB above the reducer's maximum, and SC_MASTER_PORT or SC_DEVICE
 * that are not plain integers >= 0, are invalid (the library read "80(x2)" as 80 and
 * SC_DEVICE=-1 as unset); SC_NCCL and SC_CUDA_DRIVER are shown as 0 or 1 (their other
 * values: switches_are_0_or_1_in_the_library_as_in_sc_info). */
static int config_agrees_with_the_library_on_ranges_and_switches(void)
{
    static const char *const invalid[][3] = {
        {"SC_BUCKET_CAP_MB", "2000000", "SC_BUCKET_CAP_MB=2000000 is above the maximum, "
                                        "1048576"},
        {"SC_MASTER_PORT", "80(x2)", "SC_MASTER_PORT=80(x2) is not an integer"},
        {"SC_DEVICE", "-1", "SC_DEVICE=-1 is below the minimum, 0"},
        {"SC_DEVICE", "1,2", "SC_DEVICE=1,2 is not an integer"},
        {"SC_PROGRESS_SPIN_US", "nan", "SC_PROGRESS_SPIN_US=nan is not a number"},
        {"SC_STORE_FANOUT", "0", "SC_STORE_FANOUT=0 is below the minimum, 1"}};
    static const char *const shown[][4] = {
        /* variable, value set (NULL: unset), value shown, source */
        {"SC_BUCKET_CAP_MB", "1048576", "1048576", "SC_BUCKET_CAP_MB"},
        {"SC_NCCL", NULL, "1", "default"},
        {"SC_NCCL", "1", "1", "SC_NCCL"},
        {"SC_NCCL", "0", "0", "SC_NCCL"},
        {"SC_CUDA_DRIVER", NULL, "1", "default"},
        {"SC_CUDA_DRIVER", "0", "0", "SC_CUDA_DRIVER"},
        {"SC_CUDA_DRIVER", "00", "0", "SC_CUDA_DRIVER=00"}};
    char value[256], source[1024];
    report_t r;

    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        const char *const env[] = {invalid[i][0], invalid[i][1], NULL};
        CHECK(run_report(config_body, env, NULL, &r) == 0);
        CHECK(r.status == SC_ERR_INVALID_ARG);
        if (!strstr(r.error, invalid[i][2])) {
            fprintf(stderr, "expected '%s' in '%s'\n", invalid[i][2], r.error);
            return TEST_FAIL;
        }
    }
    for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
        const char *const env[] = {shown[i][0], shown[i][1], NULL};
        CHECK(run_report(config_body, shown[i][1] ? env : NULL, NULL, &r) == 0);
        CHECK(r.status == SC_SUCCESS);
        CHECK(setting(&r, shown[i][0], value, source) == 0);
        if (strcmp(value, shown[i][2]) != 0 || strcmp(source, shown[i][3]) != 0) {
            fprintf(stderr, "%s=%s: shown as '%s' from '%s', expected '%s' from '%s'\n",
                    shown[i][0], shown[i][1] ? shown[i][1] : "(unset)", value, source,
                    shown[i][2], shown[i][3]);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

/* A number is shown as the library reads it, as configuration.md says sc-info shows the
 * effective value: %g's six digits showed SC_TIMEOUT=1234567 as 1.23457e+06 (1234570 s)
 * and SC_BUCKET_CAP_MB=1048576, the largest cap, as 1.04858e+06, a cap the reducer
 * refuses, and named that as the maximum. */
static int config_shows_numbers_as_the_library_reads_them(void)
{
    static const char *const shown[][4] = {
        /* variable, value set, value shown, source */
        {"SC_TIMEOUT", "1234567", "1234567", "SC_TIMEOUT"},
        {"SC_TIMEOUT", "0.1", "0.1", "SC_TIMEOUT"},
        {"SC_TIMEOUT", "1e400", "inf", "SC_TIMEOUT=1e400"},
        {"SC_BUCKET_CAP_MB", "1048576", "1048576", "SC_BUCKET_CAP_MB"},
        {"SC_PROGRESS_SPIN_US", "12345.5", "12345.5", "SC_PROGRESS_SPIN_US"}};
    static const char *const env_max[] = {"SC_BUCKET_CAP_MB", "2000000", NULL};
    char value[256], source[1024];
    report_t r;

    for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
        const char *const env[] = {shown[i][0], shown[i][1], NULL};
        CHECK(run_report(config_body, env, NULL, &r) == 0);
        CHECK(r.status == SC_SUCCESS);
        CHECK(setting(&r, shown[i][0], value, source) == 0);
        if (strcmp(value, shown[i][2]) != 0 || strcmp(source, shown[i][3]) != 0) {
            fprintf(stderr, "%s=%s: shown as '%s' from '%s', expected '%s' from '%s'\n",
                    shown[i][0], shown[i][1], value, source, shown[i][2], shown[i][3]);
            return TEST_FAIL;
        }
    }
    CHECK(run_report(config_body, env_max, NULL, &r) == 0);
    CHECK(r.status == SC_ERR_INVALID_ARG);
    if (!strstr(r.error, "SC_BUCKET_CAP_MB=2000000 is above the maximum, 1048576")) {
        fprintf(stderr, "SC_BUCKET_CAP_MB=2000000: '%s'\n", r.error);
        return TEST_FAIL;
    }
    return TEST_PASS;
}

/* The CPUs sc_cpu_threads counts in a child before and after sc_topology_bind binds it
 * as local rank 0 of 2 (SC_BIND=core), as "BEFORE AFTER" in r->text. */
static void bound_threads_body(void *out, const void *arg)
{
    report_t *r = out;
    int before = 0, after = 0;

    report_setup(arg, r);
    if (sc_cpu_threads(&before) != SC_SUCCESS ||
        (r->status = sc_topology_bind(0, 2, SC_BIND_CORE)) != SC_SUCCESS ||
        sc_cpu_threads(&after) != SC_SUCCESS)
        r->setup_failed = 1;
    snprintf(r->text, sizeof(r->text), "%d %d", before, after);
}

/* SC_THREADS left unset follows the binding, which sc_comm_init makes before a program
 * selects: sc-info --config (which binds nothing) says what the selection will take in
 * this rank, its share of the cores, beside what the process has now. Under "scrun -n 2"
 * on 2 cores it said 2, where each rank's selection took 1. */
static int config_threads_are_those_the_binding_will_leave(void)
{
    static const char *const local[] = {"SC_RANK", "0", "SC_WORLD_SIZE", "2",
                                        "SC_LOCAL_RANK", "0", "SC_LOCAL_SIZE", "2", NULL};
    static const char *const unbound[] = {"SC_RANK", "0", "SC_WORLD_SIZE", "2",
                                          "SC_LOCAL_RANK", "0", "SC_LOCAL_SIZE", "2",
                                          "SC_BIND", "none", NULL};
    static const char *const counted[] = {"SC_RANK", "0", "SC_WORLD_SIZE", "2", NULL};
    static const char *const alone[] = {"SC_RANK", "0", "SC_WORLD_SIZE", "1", NULL};
    char want[4][160], value[256], source[1024];
    const char *const *envs[] = {local, unbound, counted, alone};
    report_args_t a = {NULL, NULL};
    report_t r;
    int before = 0, after = 0;

    memset(&r, 0, sizeof(r));
    CHECK(run_in_child(bound_threads_body, &a, &r, sizeof(r)) == 0 && !r.setup_failed);
    CHECK(sscanf(r.text, "%d %d", &before, &after) == 2);
    if (after == before)
        SKIP("local rank 0 of 2 is bound to all %d CPUs of this process (one core)", before);
    snprintf(want[0], sizeof(want[0]), "default: the CPUs this process is bound to, here %d "
             "once sc_comm_init binds local rank 0 of 2 (%d before)", after, before);
    snprintf(want[1], sizeof(want[1]), "default: the CPUs this process is bound to, here %d",
             before);
    snprintf(want[2], sizeof(want[2]), "default: the CPUs this process is bound to, here %d "
             "before sc_comm_init binds this rank to its share of them", before);
    snprintf(want[3], sizeof(want[3]), "default: the CPUs this process is bound to, here %d",
             before);
    for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
        CHECK(run_report(config_body, envs[i], NULL, &r) == 0);
        CHECK(r.status == SC_SUCCESS);
        CHECK(setting(&r, "SC_THREADS", value, source) == 0);
        if (strcmp(value, "auto") != 0 || strcmp(source, want[i]) != 0) {
            fprintf(stderr, "case %zu: SC_THREADS = %s '%s', expected auto '%s'\n", i, value,
                    source, want[i]);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

/* sc_bootstrap_resolve of the default configuration in the environment of arg: its
 * status and sentence into r; 1 on success, *p then filled. */
static int resolve_report(const void *arg, report_t *r, sc_bootstrap_params_t *p)
{
    sc_comm_config_t cfg = SC_COMM_CONFIG_INIT;

    report_setup(arg, r);
    r->status = sc_bootstrap_resolve(&cfg, p);
    snprintf(r->error, sizeof(r->error), "%s", sc_last_error());
    return r->status == SC_SUCCESS;
}

/* sc_bootstrap_resolve's status and sentence, and on success "rank R size S". */
static void resolve_body(void *out, const void *arg)
{
    sc_bootstrap_params_t p;
    report_t *r = out;

    if (resolve_report(arg, r, &p))
        snprintf(r->text, sizeof(r->text), "rank %d size %d master address %s", p.rank,
                 p.world_size, p.master_addr);
}

/* srun -E (--preserve-env) leaves SLURM_NTASKS as the job's (8) and sets the step's count
 * in SLURM_STEP_NUM_TASKS alone: the world is the step's (it was 8, and the rendezvous
 * waited for 6 ranks that never came). Outside a step (a program run by the batch
 * script itself) SLURM_NTASKS is still read. */
static int config_takes_the_steps_task_count_under_srun(void)
{
    static const char *const step[] = {"SLURM_PROCID", "1", "SLURM_NTASKS", "8",
                                       "SLURM_STEP_NUM_TASKS", "2", NULL};
    static const char *const batch[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "1", NULL};
    report_args_t a = {step, NULL};
    report_t r;

    CHECK(config_shows(step, "SC_WORLD_SIZE", "2", "SLURM_STEP_NUM_TASKS", &r) == TEST_PASS);
    CHECK(config_shows(batch, "SC_WORLD_SIZE", "1", "SLURM_NTASKS", &r) == TEST_PASS);
    memset(&r, 0, sizeof(r));
    CHECK(run_in_child(resolve_body, &a, &r, sizeof(r)) == 0);
    CHECK(r.status == SC_SUCCESS);
    CHECK(strcmp(r.text, "rank 1 size 2 master address 127.0.0.1") == 0);
    return TEST_PASS;
}

/* sc_bootstrap_resolve's status and sentence, and on success "local size L" (-1: to be
 * counted at start-up among the ranks with this host name). */
static void resolve_local_size_body(void *out, const void *arg)
{
    sc_bootstrap_params_t p;
    report_t *r = out;

    if (resolve_report(arg, r, &p))
        snprintf(r->text, sizeof(r->text), "local size %d", p.local_size);
}

/* Per-node counts that differ ("2,1") with no entry for this node (SLURM_NODEID unset,
 * or past the list) leave the local size to be counted among the ranks with this host
 * name, as docs/configuration.md says and sc-info shows ("auto"); sc_comm_init refused
 * them ("SLURM_STEP_TASKS_PER_NODE=2,1 is out of range"). This node's entry is taken. */
static int bootstrap_counts_the_local_size_without_this_nodes_slurm_entry(void)
{
    static const char *const counted[][9] = {
        {"SLURM_PROCID", "0", "SLURM_STEP_NUM_TASKS", "1", "SLURM_STEP_TASKS_PER_NODE", "2,1",
         NULL},
        {"SLURM_PROCID", "0", "SLURM_STEP_NUM_TASKS", "1", "SLURM_STEP_TASKS_PER_NODE", "2,1",
         "SLURM_NODEID", "2", NULL},
        {"SC_LOCAL_SIZE", "4(x2),3", "SLURM_NODEID", "7", NULL}};
    static const char *const entry[] = {"SLURM_PROCID", "0", "SLURM_STEP_NUM_TASKS", "1",
                                        "SLURM_STEP_TASKS_PER_NODE", "2,1", "SLURM_NODEID",
                                        "1", NULL};
    char value[256], source[1024];
    report_t r;

    for (size_t i = 0; i < sizeof(counted) / sizeof(counted[0]); i++) {
        report_args_t a = {counted[i], NULL};
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(resolve_local_size_body, &a, &r, sizeof(r)) == 0);
        if (r.status != SC_SUCCESS || strcmp(r.text, "local size -1") != 0) {
            fprintf(stderr, "case %zu: expected the local size counted (-1), got %s '%s' "
                    "(%s)\n", i, sc_status_string(r.status), r.text, r.error);
            return TEST_FAIL;
        }
        CHECK(run_report(config_body, counted[i], NULL, &r) == 0);
        CHECK(r.status == SC_SUCCESS);
        CHECK(setting(&r, "SC_LOCAL_SIZE", value, source) == 0);
        CHECK(strcmp(value, "auto") == 0);
    }
    {
        report_args_t a = {entry, NULL};
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(resolve_local_size_body, &a, &r, sizeof(r)) == 0);
        CHECK(r.status == SC_SUCCESS);
        CHECK(strcmp(r.text, "local size 1") == 0);
    }
    return TEST_PASS;
}

/* The library (body, which reports as lib does: sc_bootstrap_resolve, sc_tuning_get)
 * and sc-info --config both refuse env (name, value pairs) with a sentence holding want,
 * and sc-info marks a setting INVALID. */
static int refused_alike_in(void (*body)(void *out, const void *arg), const char *lib,
                            const char *const *env, const char *want)
{
    report_args_t a = {env, NULL};
    report_t r;

    memset(&r, 0, sizeof(r));
    CHECK(run_in_child(body, &a, &r, sizeof(r)) == 0);
    if (r.status != SC_ERR_INVALID_ARG || !strstr(r.error, want)) {
        fprintf(stderr, "%s: expected '%s', got %s '%s' (%s)\n", lib, want,
                sc_status_string(r.status), r.error, r.text);
        return TEST_FAIL;
    }
    CHECK(run_report(config_body, env, NULL, &r) == 0);
    if (r.status != SC_ERR_INVALID_ARG || !strstr(r.error, want) ||
        !strstr(r.text, "INVALID: ")) {
        fprintf(stderr, "sc-info --config: expected '%s', got %s '%s'\n%s", want,
                sc_status_string(r.status), r.error, r.text);
        return TEST_FAIL;
    }
    return TEST_PASS;
}

/* sc_comm_init (sc_bootstrap_resolve) and sc-info refuse env alike (refused_alike_in). */
static int refused_alike(const char *const *env, const char *want)
{
    return refused_alike_in(resolve_body, "sc_bootstrap_resolve", env, want);
}

/* Each of n cases (variable, value, what the sentence holds) refused alike. */
static int refused_alike_each(const char *const (*cases)[3], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *const env[] = {cases[i][0], cases[i][1], NULL};
        CHECK(refused_alike(env, cases[i][2]) == TEST_PASS);
    }
    return TEST_PASS;
}

/* No host name or address holds a blank: a master address with one (a blank left at
 * its end by a script) fails at once naming the variable and its text, in sc_comm_init
 * as in sc-info. It was retried as a name not yet in DNS: rank 0 timed out after
 * SC_TIMEOUT, the others 3 s later. The text is quoted as sc_env_text writes it, a tab
 * as \t: the sentence carried the tab itself. */
static int bootstrap_refuses_a_master_address_with_a_blank(void)
{
    static const char *const cases[][3] = {
        {"SC_MASTER_ADDR", "127.0.0.1 ", "SC_MASTER_ADDR='127.0.0.1 ' holds a blank"},
        {"MASTER_ADDR", " node0", "MASTER_ADDR=' node0' holds a blank"},
        {"SC_MASTER_ADDR", "node\t0", "SC_MASTER_ADDR='node\\t0' holds a blank"}};

    return refused_alike_each(cases, sizeof(cases) / sizeof(cases[0]));
}

/* Nor does one hold a control character: a master address with one ($'node0\001', a
 * byte a script let through) fails at once naming the variable and its text as
 * sc_env_text writes it, in sc_comm_init as in sc-info. It was taken, and retried as a
 * name not yet in DNS until SC_TIMEOUT. */
static int bootstrap_refuses_a_master_address_with_a_control_character(void)
{
    static const char *const cases[][3] = {
        {"SC_MASTER_ADDR", "node0\001",
         "SC_MASTER_ADDR='node0\\x01' holds a control character: the master address is a "
         "host name or an IP address"},
        {"MASTER_ADDR", "\033node0", "MASTER_ADDR='\\x1bnode0' holds a control character"},
        {"SC_MASTER_ADDR", "127.0.0.1\177", "SC_MASTER_ADDR='127.0.0.1\\x7f' holds a"}};

    return refused_alike_each(cases, sizeof(cases) / sizeof(cases[0]));
}

/* A master address that no host name or IP address can be fails at once, in
 * sc_comm_init as in sc-info: written as an IP address but none (rank 0 serves on every
 * address without looking it up, and waited SC_TIMEOUT for the ranks that had refused
 * it), brackets around anything but an IPv6 address, longer than a host name (it was cut
 * to 255 characters). */
static int bootstrap_refuses_a_master_address_no_host_can_have(void)
{
    static char longname[300];
    static const char *const cases[][3] = {
        {"SC_MASTER_ADDR", "::1::2",
         "SC_MASTER_ADDR=::1::2 is written as an IP address but is not an IPv4 or IPv6"},
        {"MASTER_ADDR", "10.0.0.256",
         "MASTER_ADDR=10.0.0.256 is written as an IP address but is not an IPv4 or IPv6"},
        {"SC_MASTER_ADDR", "[node0]", "SC_MASTER_ADDR=[node0]: brackets hold an IPv6 address"},
        {"SC_MASTER_ADDR", "[127.0.0.1]", "SC_MASTER_ADDR=[127.0.0.1]: brackets hold an IPv6"},
        {"SC_MASTER_ADDR", "[::1", "SC_MASTER_ADDR=[::1: brackets hold an IPv6 address"},
        {"SC_MASTER_ADDR", "[::1]]", "SC_MASTER_ADDR=[::1]]: brackets hold an IPv6 address"},
        {"SC_MASTER_ADDR", longname,
         "SC_MASTER_ADDR is 299 characters long: no host name or IP address is longer"}};

    memset(longname, 'a', sizeof(longname) - 1);
    return refused_alike_each(cases, sizeof(cases) / sizeof(cases[0]));
}

/* An empty config.master_addr (the environment's empty variables count as unset) is
 * said to be empty: it was "written as an IP address but not an IPv4 or IPv6 address". */
static int bootstrap_refuses_an_empty_master_address(void)
{
    char out[16] = "untouched";

    CHECK(sc_bootstrap_check_addr("", "config.master_addr", out, sizeof(out)) ==
          SC_ERR_INVALID_ARG);
    CHECK(strcmp(sc_last_error(), "config.master_addr is empty: the master address is a "
                                  "host name or an IP address") == 0);
    CHECK(strcmp(out, "untouched") == 0);
    return TEST_PASS;
}

/* An IPv6 master address in brackets, as URLs write it ([::1]), is the address inside;
 * others are taken as written. */
static int bootstrap_takes_an_ipv6_master_address_in_brackets(void)
{
    static const char *const cases[][2] = {
        {"[::1]", "::1"}, {"[fe80::1%lo]", "fe80::1%lo"}, {"::1", "::1"},
        {"127.1", "127.1"}, {"node0.example", "node0.example"}};
    char want[300];
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const env[] = {"SC_MASTER_ADDR", cases[i][0], NULL};
        report_args_t a = {env, NULL};
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(resolve_body, &a, &r, sizeof(r)) == 0);
        snprintf(want, sizeof(want), "rank 0 size 1 master address %s", cases[i][1]);
        if (r.status != SC_SUCCESS || strcmp(r.text, want) != 0) {
            fprintf(stderr, "SC_MASTER_ADDR=%s: expected the address %s, got %s '%s' (%s)\n",
                    cases[i][0], cases[i][1], sc_status_string(r.status), r.text, r.error);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

/* sc_comm_init refuses what sc-info calls invalid among the rendezvous settings. */
static int bootstrap_refuses_ports_and_devices_that_are_not_plain_integers(void)
{
    static const char *const cases[][3] = {
        {"SC_MASTER_PORT", "80(x2)", "SC_MASTER_PORT=80(x2) is not an integer"},
        {"SC_DEVICE", "-1", "SC_DEVICE=-1 is out of range"},
        {"SC_DEVICE", "1(x2)", "SC_DEVICE=1(x2) is not an integer"},
        {"SC_LOCAL_RANK", "-1", "SC_LOCAL_RANK=-1 is out of range"},
        {"SC_STORE_FANOUT", "2(x2)", "SC_STORE_FANOUT=2(x2) is not an integer"},
        {"SC_STORE_FANOUT", "0", "SC_STORE_FANOUT=0 must be from 1 to 65536"}};
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const env[] = {cases[i][0], cases[i][1], NULL};
        report_args_t a = {env, NULL};
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(resolve_body, &a, &r, sizeof(r)) == 0);
        CHECK(r.status == SC_ERR_INVALID_ARG);
        if (!strstr(r.error, cases[i][2])) {
            fprintf(stderr, "expected '%s' in '%s'\n", cases[i][2], r.error);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

/* No launcher writes a rank, a world size or a local rank as a list: "4(x2)" or "1,5"
 * there is a wrong variable, refused naming it and its text, in sc_comm_init as in
 * sc-info (both took the leading number: rank 4, world size 2, local rank 3). */
static int bootstrap_refuses_launch_values_that_are_not_plain_integers(void)
{
    static const char *const cases[][7] = {
        /* the variable and its text first, then the launch's other variables */
        {"SC_RANK", "4(x2)", "SC_WORLD_SIZE", "8", NULL},
        {"RANK", "1,5", "WORLD_SIZE", "8", NULL},
        {"OMPI_COMM_WORLD_RANK", "3(", "OMPI_COMM_WORLD_SIZE", "8", NULL},
        {"SLURM_PROCID", "3abc", "SLURM_NTASKS", "8", NULL},
        {"SLURM_NTASKS", "2(x3)", "SLURM_PROCID", "1", NULL},
        {"WORLD_SIZE", "8,8", "RANK", "1", NULL},
        {"LOCAL_RANK", "3(x2)", "RANK", "1", "WORLD_SIZE", "8", NULL}};
    char want[128];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(want, sizeof(want), "%s=%s is not an integer", cases[i][0], cases[i][1]);
        CHECK(refused_alike(cases[i], want) == TEST_PASS);
    }
    return TEST_PASS;
}

/* Values that do not fit together, or a world larger than the library takes, name the
 * variables that gave them: the sentences gave the numbers alone ("rank 8 is outside
 * the world of size 8"; LOCAL_WORLD_SIZE=0 was "local rank -1 is outside the local
 * size 0"). */
static int bootstrap_names_the_variables_of_values_that_do_not_fit(void)
{
    static const char *const cases[][10] = {
        /* NAME, VALUE pairs (NULL-ended), then at [9] the sentence expected */
        {"SLURM_PROCID", "8", "SLURM_NTASKS", "8", NULL, NULL, NULL, NULL, NULL,
         "rank 8 (from SLURM_PROCID) is outside the world of size 8 (from SLURM_NTASKS)"},
        {"RANK", "1", "WORLD_SIZE", "2", "LOCAL_WORLD_SIZE", "0", NULL, NULL, NULL,
         "local size 0 (from LOCAL_WORLD_SIZE) must be at least 1"},
        {"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "4",
         "OMPI_COMM_WORLD_LOCAL_RANK", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", NULL,
         "local rank 2 (from OMPI_COMM_WORLD_LOCAL_RANK) is outside the local size 2 (from "
         "OMPI_COMM_WORLD_LOCAL_SIZE)"},
        {"RANK", "0", "WORLD_SIZE", "2", "LOCAL_WORLD_SIZE", "4", NULL, NULL, NULL,
         "local size 4 (from LOCAL_WORLD_SIZE) is larger than the world size 2 (from "
         "WORLD_SIZE)"},
        {"MASTER_PORT", "70000", NULL, NULL, NULL, NULL, NULL, NULL, NULL,
         "master port 70000 (from MASTER_PORT) is not a TCP port (1-65535)"},
        /* more ranks than the library takes (it named no variable) */
        {"SC_RANK", "0", "SC_WORLD_SIZE", "70000", NULL, NULL, NULL, NULL, NULL,
         "world size 70000 (from SC_WORLD_SIZE) exceeds the supported 65536"}};
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        report_args_t a = {cases[i], NULL};
        sc_status_t want = strstr(cases[i][9], "supported") ? SC_ERR_UNSUPPORTED
                                                            : SC_ERR_INVALID_ARG;
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(resolve_body, &a, &r, sizeof(r)) == 0);
        if (r.status != want || !strstr(r.error, cases[i][9])) {
            fprintf(stderr, "expected '%s', got %s '%s'\n", cases[i][9],
                    sc_status_string(r.status), r.error);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

/* A rank without a world size (a lost or left-over variable) is refused on every
 * process instead of rank 0 running alone as a world of one; so is a world size above 1
 * without a rank. An empty variable counts as unset, also when the launcher is chosen:
 * an empty RANK left by a shell does not hide mpirun's variables (it made every rank 0
 * of 1). */
static int bootstrap_refuses_a_rank_without_a_world_size(void)
{
    static const char *const cases[][7] = {
        /* NAME, VALUE pairs (up to three, NULL-ended), then "ok RESULT" or "error TEXT" */
        {"RANK", "0", NULL, NULL, NULL, NULL, "error RANK but no world size"},
        {"RANK", "1", NULL, NULL, NULL, NULL, "error WORLD_SIZE"},
        {"SC_RANK", "0", NULL, NULL, NULL, NULL, "error SC_WORLD_SIZE"},
        {"WORLD_SIZE", "4", NULL, NULL, NULL, NULL, "error no rank is set"},
        {"RANK", "0", "OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2",
         "error RANK but no world size"},
        {"RANK", "", "OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", "ok rank 1 size 2"},
        {"SC_WORLD_SIZE", "1", NULL, NULL, NULL, NULL, "ok rank 0 size 1"},
        {"RANK", "2", "WORLD_SIZE", "3", NULL, NULL, "ok rank 2 size 3"}};
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const env[] = {cases[i][0], cases[i][1], cases[i][2], cases[i][3],
                                   cases[i][4], cases[i][5], NULL};
        report_args_t a = {env, NULL};
        const char *want = cases[i][6];
        int ok;

        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(resolve_body, &a, &r, sizeof(r)) == 0);
        if (strncmp(want, "ok ", 3) == 0) /* "rank R size S", the master address after */
            ok = r.status == SC_SUCCESS && strncmp(r.text, want + 3, strlen(want + 3)) == 0 &&
                 strncmp(r.text + strlen(want + 3), " master address ", 16) == 0;
        else
            ok = r.status == SC_ERR_INVALID_ARG && strstr(r.error, want + 6) != NULL;
        if (!ok) {
            fprintf(stderr, "case %zu (%s=%s): got %s '%s' / '%s', expected %s\n", i,
                    cases[i][0], cases[i][1], sc_status_string(r.status), r.text, r.error,
                    want);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

static void tuning_body(void *out, const void *arg)
{
    const sc_tuning_t *t;
    report_t *r = out;

    report_setup(arg, r);
    r->status = sc_tuning_get(&t);
    snprintf(r->error, sizeof(r->error), "%s", sc_last_error());
}

/* The library refuses a spin time that is not a number, as sc-info does: NaN passed
 * the check for negative values, and a waiting rank never went to sleep. */
static int tuning_refuses_a_spin_time_that_is_not_a_number(void)
{
    static const char *const values[] = {"nan", "NAN", "-nan", "-1"};
    report_t r;

    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        const char *const env[] = {"SC_PROGRESS_SPIN_US", values[i], NULL};
        report_args_t a = {env, NULL};
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(tuning_body, &a, &r, sizeof(r)) == 0);
        if (r.status != SC_ERR_INVALID_ARG || !strstr(r.error, "SC_PROGRESS_SPIN_US=")) {
            fprintf(stderr, "SC_PROGRESS_SPIN_US=%s: %s '%s'\n", values[i],
                    sc_status_string(r.status), r.error);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

/* A value refused for its range is quoted as written: SC_TIMEOUT=1e-400 (below the
 * smallest double, read as 0) was "SC_TIMEOUT=0 must be positive seconds", a value the
 * user never wrote; SC_RING_THRESHOLD=-01 was "SC_RING_THRESHOLD=-1". */
static void threads_body(void *out, const void *arg)
{
    report_t *r = out;
    int threads = -1;

    report_setup(arg, r);
    r->status = sc_cpu_threads(&threads);
    snprintf(r->error, sizeof(r->error), "%s", sc_last_error());
}

static int refusals_quote_the_value_as_written(void)
{
    static const char *const tuning[][2] = {
        {"SC_RING_THRESHOLD", "-01"}, {"SC_CHUNK_BYTES", "0063"},
        {"SC_PROGRESS_SPIN_US", "-1e30"}, {"SC_LOCAL_REGISTER", "002"},
        {"SC_LOCAL_MAILBOX", "-0001"}, {"SC_STREAM_BYTES", "-010"},
        {"SC_STAGE_BYTES", "01073741825"}};
    static const char *const timeouts[] = {"1e-400", "-1e-400", "-0.0", "-inf"};
    static const char *const threads[] = {"04097", "-0"};
    char want[128];
    report_t r;

    for (size_t i = 0; i < sizeof(tuning) / sizeof(tuning[0]); i++) {
        const char *const env[] = {tuning[i][0], tuning[i][1], NULL};
        report_args_t a = {env, NULL};
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(tuning_body, &a, &r, sizeof(r)) == 0);
        snprintf(want, sizeof(want), "%s=%s ", tuning[i][0], tuning[i][1]);
        if (r.status != SC_ERR_INVALID_ARG || !strstr(r.error, want)) {
            fprintf(stderr, "%s=%s: %s '%s', expected '%s'\n", tuning[i][0], tuning[i][1],
                    sc_status_string(r.status), r.error, want);
            return TEST_FAIL;
        }
    }
    for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
        const char *const env[] = {"SC_TIMEOUT", timeouts[i], NULL};
        snprintf(want, sizeof(want), "SC_TIMEOUT=%s ", timeouts[i]);
        CHECK(refused_alike(env, want) == TEST_PASS);
    }
    for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++) {
        const char *const env[] = {"SC_THREADS", threads[i], NULL};
        report_args_t a = {env, NULL};
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(threads_body, &a, &r, sizeof(r)) == 0);
        snprintf(want, sizeof(want), "SC_THREADS=%s is outside 1..", threads[i]);
        if (r.status != SC_ERR_INVALID_ARG || !strstr(r.error, want)) {
            fprintf(stderr, "SC_THREADS=%s: %s '%s', expected '%s'\n", threads[i],
                    sc_status_string(r.status), r.error, want);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

static void plain_body(void *out, const void *arg)
{
    static const char *const names[] = {"SC_TEST_NUMBER", NULL};
    const char *const *c = arg; /* value, "int" or "double" */
    report_t *r = out;
    long n = -42;
    double d = -42.0;

    setenv("SC_TEST_NUMBER", c[0], 1);
    if (strcmp(c[1], "int") == 0) {
        r->status = sc_env_int(names, 9, &n);
        snprintf(r->text, sizeof(r->text), "%ld", n);
    } else {
        r->status = sc_env_double(names, 9.0, &d);
        snprintf(r->text, sizeof(r->text), "%g", d);
    }
    snprintf(r->error, sizeof(r->error), "%s", sc_last_error());
}

/* SC_CPU_ISA as the top-k selection reads it (sc_cpu_isa_select). */
static void cpu_isa_body(void *out, const void *arg)
{
    report_t *r = out;
    sc_cpu_isa_t isa;

    report_setup(arg, r);
    r->status = sc_cpu_isa_select(&isa);
    snprintf(r->error, sizeof(r->error), "%s", sc_last_error());
}

/* Every enumerated setting's choices are listed alike, by the library's parser and by
 * sc-info, one sentence word for word: the library listed SC_ALGO's and SC_EAGER_SENDS'
 * as "auto, ring, rd" where sc-info and the other settings wrote "auto|ring|rd". */
static int choices_are_listed_alike_in_the_library_and_sc_info(void)
{
    static const char *const cases[][3] = {
        /* variable, read by, the sentence */
        {"SC_BIND", "resolve", "SC_BIND=bogus is not one of core|none"},
        {"SC_ALGO", "tuning", "SC_ALGO=bogus is not one of auto|ring|rd"},
        {"SC_EAGER_SENDS", "tuning", "SC_EAGER_SENDS=bogus is not one of auto|on|off"},
        {"SC_CPU_ISA", "cpu_isa", "SC_CPU_ISA=bogus is not one of scalar|avx2|avx512"}};
    static const char *const log_env[] = {"SC_LOG_LEVEL", "bogus", NULL};
    static const char *const log_sentence =
        "SC_LOG_LEVEL=bogus is not one of error|warn|info|debug|trace or 0-4";
    char want[512], value[256], source[1024];
    report_args_t log_args = {log_env, NULL};
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const env[] = {cases[i][0], "bogus", NULL};
        report_args_t a = {env, NULL};
        void (*body)(void *, const void *) =
            strcmp(cases[i][1], "resolve") == 0  ? resolve_body
            : strcmp(cases[i][1], "tuning") == 0 ? tuning_body
                                                 : cpu_isa_body;

        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(body, &a, &r, sizeof(r)) == 0);
        if (r.status != SC_ERR_INVALID_ARG || strcmp(r.error, cases[i][2]) != 0) {
            fprintf(stderr, "library: '%s', expected '%s'\n", r.error, cases[i][2]);
            return TEST_FAIL;
        }
        CHECK(run_report(config_body, env, NULL, &r) == 0);
        snprintf(want, sizeof(want), "INVALID: %s", cases[i][2]);
        if (r.status != SC_ERR_INVALID_ARG || strcmp(r.error, cases[i][2]) != 0 ||
            setting(&r, cases[i][0], value, source) != 0 || strcmp(source, want) != 0) {
            fprintf(stderr, "sc-info: '%s', expected '%s'\n%s", r.error, cases[i][2], r.text);
            return TEST_FAIL;
        }
    }
    /* The log level, which the library does not refuse: its warning and sc-info's
     * IGNORED line give the one sentence. */
    memset(&r, 0, sizeof(r));
    CHECK(run_in_child(log_level_body, &log_args, &r, sizeof(r)) == 0 && !r.setup_failed);
    snprintf(want, sizeof(want), "[shardcomm] WARN: %s; using warn\n", log_sentence);
    CHECK(strcmp(r.text, want) == 0);
    snprintf(want, sizeof(want), "IGNORED: %s (the library warns and uses warn)", log_sentence);
    CHECK(shown_as(log_env, "SC_LOG_LEVEL", "warn", want, source) == TEST_PASS);
    CHECK(strcmp(source, want) == 0);
    return TEST_PASS;
}

/* A blank or a control character that a script left in a value shows in the sentence
 * refusing it, in the library as in sc-info's line: "SC_ALGO=ring  is not one of auto,
 * ring, rd" read as if ring were refused, and sc-info showed the value as ring. Each
 * kind of parser: integers, per-node counts, numbers, switches, words (exact and any
 * case), the binding, the vector path. */
static int refusals_show_a_blank_in_the_value(void)
{
    static const char *const cases[][5] = {
        /* variable, value, read by, the value as the sentence shows it, the sentence's
         * rest */
        {"SC_MASTER_PORT", "29500 ", "resolve", "'29500 '", "is not an integer"},
        {"SC_LOCAL_SIZE", " 2", "resolve", "' 2'", "is not an integer, nor a list"},
        /* A count past a long before the blank: refused as out of range first. */
        {"SC_LOCAL_SIZE", "99999999999999999999,4 ", "resolve", "'99999999999999999999,4 '",
         "is out of range"},
        {"SC_TIMEOUT", "8 ", "resolve", "'8 '", "is not a number"},
        {"SC_NCCL", "1\n", "resolve", "'1\\n'", "must be 0 or 1"},
        {"SC_BIND", "none ", "resolve", "'none '", "is not one of core|none"},
        {"SC_CHUNK_BYTES", "4096\t", "tuning", "'4096\\t'", "is not an integer"},
        {"SC_PROGRESS_SPIN_US", "5\r", "tuning", "'5\\r'", "is not a number"},
        {"SC_ALGO", "ring ", "tuning", "'ring '", "is not one of auto|ring|rd"},
        {"SC_EAGER_SENDS", "on\x01", "tuning", "'on\\x01'", "is not one of auto|on|off"},
        {"SC_CPU_ISA", "scalar ", "cpu_isa", "'scalar '", "is not one of scalar|avx2|avx512"}};
    char want[256], shown[64];
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const env[] = {cases[i][0], cases[i][1], NULL};
        report_args_t a = {env, NULL};
        void (*body)(void *, const void *) =
            strcmp(cases[i][2], "resolve") == 0  ? resolve_body
            : strcmp(cases[i][2], "tuning") == 0 ? tuning_body
                                                 : cpu_isa_body;

        snprintf(want, sizeof(want), "%s=%s %s", cases[i][0], cases[i][3], cases[i][4]);
        snprintf(shown, sizeof(shown), " = %s ", cases[i][3]);
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(body, &a, &r, sizeof(r)) == 0);
        if (r.status != SC_ERR_INVALID_ARG || !strstr(r.error, want)) {
            fprintf(stderr, "%s: %s '%s', expected '%s'\n", cases[i][0],
                    sc_status_string(r.status), r.error, want);
            return TEST_FAIL;
        }
        CHECK(run_report(config_body, env, NULL, &r) == 0);
        if (r.status != SC_ERR_INVALID_ARG || !strstr(r.error, want) ||
            !strstr(r.text, shown)) {
            fprintf(stderr, "sc-info --config: expected '%s' and '%s', got '%s'\n%s", want,
                    shown, r.error, r.text);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}


/* Settings are plain numbers, as configuration.md says: no leading blank, plus sign or
 * hexadecimal (strtol and strtod took them: SC_TIMEOUT=0x10 was 16 s); a number past
 * the largest double is infinity (SC_TIMEOUT=1e400 waits for ever) instead of "not a
 * number". */
static int env_reads_plain_numbers_only(void)
{
    static const char *const cases[][3] = {
        /* value, int or double, what is read ("invalid": refused, output untouched) */
        {"5", "int", "5"},           {"-3", "int", "-3"},        {" 5", "int", "invalid"},
        {"+1", "int", "invalid"},    {"5 ", "int", "invalid"},   {"1.5", "double", "1.5"},
        {"-0.5", "double", "-0.5"},  {".5", "double", "0.5"},    {"1e3", "double", "1000"},
        {"inf", "double", "inf"},    {"1e400", "double", "inf"}, {"0x10", "double", "invalid"},
        {" 1", "double", "invalid"}, {"+2", "double", "invalid"}, {"1p3", "double", "invalid"}};
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int invalid = strcmp(cases[i][2], "invalid") == 0;
        const char *want = invalid ? "-42" : cases[i][2];
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(plain_body, cases[i], &r, sizeof(r)) == 0);
        if (r.status != (invalid ? SC_ERR_INVALID_ARG : SC_SUCCESS) ||
            strcmp(r.text, want) != 0 || (invalid && !strstr(r.error, "SC_TEST_NUMBER="))) {
            fprintf(stderr, "'%s' as %s: %s, read %s ('%s'), expected %s\n", cases[i][0],
                    cases[i][1], sc_status_string(r.status), r.text, r.error, cases[i][2]);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

/* An integer past what a long holds is refused as out of range, not as "not an
 * integer", which it is (SC_CHUNK_BYTES=9223372036854775808, 2^63, said so), whether
 * read as a plain integer or as a per-node count; sc-info says the same. */
static int env_calls_an_integer_past_a_long_out_of_range(void)
{
    static const char *const plain[] = {"9223372036854775808", "-9223372036854775809",
                                        "99999999999999999999"};
    static const char *const per_node[] = {"99999999999999999999", "2,99999999999999999999",
                                           "2(x99999999999999999999)"};
    char want[128];
    report_t r;

    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        const char *const c[] = {plain[i], "int"};
        const char *const env[] = {"SC_CHUNK_BYTES", plain[i], NULL};
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(plain_body, c, &r, sizeof(r)) == 0);
        snprintf(want, sizeof(want), "SC_TEST_NUMBER=%s is out of range", plain[i]);
        if (r.status != SC_ERR_INVALID_ARG || strcmp(r.text, "-42") != 0 ||
            !strstr(r.error, want)) {
            fprintf(stderr, "'%s': %s, read %s ('%s'), expected '%s'\n", plain[i],
                    sc_status_string(r.status), r.text, r.error, want);
            return TEST_FAIL;
        }
        snprintf(want, sizeof(want), "SC_CHUNK_BYTES=%s is out of range", plain[i]);
        CHECK(run_report(config_body, env, NULL, &r) == 0);
        if (r.status != SC_ERR_INVALID_ARG || !strstr(r.error, want)) {
            fprintf(stderr, "sc-info --config: expected '%s', got %s '%s'\n", want,
                    sc_status_string(r.status), r.error);
            return TEST_FAIL;
        }
    }
    for (size_t i = 0; i < sizeof(per_node) / sizeof(per_node[0]); i++) {
        const char *const env[] = {"SC_LOCAL_SIZE", per_node[i], NULL};
        snprintf(want, sizeof(want), "SC_LOCAL_SIZE=%s is out of range", per_node[i]);
        CHECK(refused_alike(env, want) == TEST_PASS);
    }
    return TEST_PASS;
}

/* SC_EAGER_SENDS is auto, on or off, in the library as in sc-info. */
static int tuning_takes_the_eager_modes_and_refuses_others(void)
{
    static const char *const cases[][2] = {
        {"auto", "ok"}, {"on", "ok"}, {"off", "ok"}, {"yes", "invalid"}, {"ON", "invalid"},
        {"1", "invalid"}};
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const env[] = {"SC_EAGER_SENDS", cases[i][0], NULL};
        report_args_t a = {env, NULL};
        int ok = strcmp(cases[i][1], "ok") == 0;
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(tuning_body, &a, &r, sizeof(r)) == 0);
        if (r.status != (ok ? SC_SUCCESS : SC_ERR_INVALID_ARG) ||
            (!ok && !strstr(r.error, "SC_EAGER_SENDS="))) {
            fprintf(stderr, "SC_EAGER_SENDS=%s: %s '%s'\n", cases[i][0],
                    sc_status_string(r.status), r.error);
            return TEST_FAIL;
        }
        CHECK(run_report(config_body, env, NULL, &r) == 0);
        CHECK(r.status == (ok ? SC_SUCCESS : SC_ERR_INVALID_ARG));
    }
    return TEST_PASS;
}

/* Every on/off setting takes 0 or 1 and refuses other text with one sentence, in the
 * library (sc_comm_init: the bootstrap's SC_NCCL and SC_CUDA_DRIVER, the tuning's
 * SC_LOCAL_REGISTER and SC_LOCAL_MAILBOX) as in sc-info, which marks it INVALID. The
 * device path took any value but 0 of SC_NCCL and SC_CUDA_DRIVER ("junk", "2") as on. */
static int switches_are_0_or_1_in_the_library_as_in_sc_info(void)
{
    static const char *const bootstrap[] = {"SC_NCCL", "SC_CUDA_DRIVER"};
    static const char *const tuning[] = {"SC_LOCAL_REGISTER", "SC_LOCAL_MAILBOX"};
    static const char *const refused[] = {"junk", "2", "-1", "on", "1.0"};
    char want[128];

    for (size_t v = 0; v < sizeof(refused) / sizeof(refused[0]); v++) {
        for (size_t i = 0; i < sizeof(bootstrap) / sizeof(bootstrap[0]); i++) {
            const char *const env[] = {bootstrap[i], refused[v], NULL};
            snprintf(want, sizeof(want), "%s=%s must be 0 or 1", bootstrap[i], refused[v]);
            CHECK(refused_alike(env, want) == TEST_PASS);
        }
        for (size_t i = 0; i < sizeof(tuning) / sizeof(tuning[0]); i++) {
            const char *const env[] = {tuning[i], refused[v], NULL};
            snprintf(want, sizeof(want), "%s=%s must be 0 or 1", tuning[i], refused[v]);
            CHECK(refused_alike_in(tuning_body, "sc_tuning_get", env, want) == TEST_PASS);
        }
    }
    return TEST_PASS;
}

typedef struct {
    const char *value;
    long node;
} per_node_case_t;

static void per_node_body(void *out, const void *arg)
{
    static const char *const names[] = {"SC_TEST_COUNT", NULL};
    const per_node_case_t *c = arg;
    report_t *r = out;
    long v = -42;

    setenv("SC_TEST_COUNT", c->value, 1);
    r->status = sc_env_int_per_node(names, 9, c->node, &v);
    snprintf(r->error, sizeof(r->error), "%s", sc_last_error());
    snprintf(r->text, sizeof(r->text), "%ld", v);
}

/* Slurm's per-node counts: this node's entry, expanded from "4(x2)"; equal counts on
 * any node; the default (9: count by host name) where the counts differ and the node
 * is unknown or past the list; more nodes in all than a long counts, refused. */
static int env_int_per_node_takes_this_nodes_slurm_count(void)
{
    static const struct {
        per_node_case_t c;
        const char *status, *want;
    } cases[] = {
        {{"2,1", 0}, "ok", "2"},          {{"2,1", 1}, "ok", "1"},
        {{"2,1", -1}, "ok", "9"},         {{"2,1", 2}, "ok", "9"},
        {{"4(x2),3", 1}, "ok", "4"},      {{"4(x2),3", 2}, "ok", "3"},
        {{"4(x2),3", 3}, "ok", "9"},      {{"4(x2)", -1}, "ok", "4"},
        {{"1,3(x2),2", 2}, "ok", "3"},    {{"5", 7}, "ok", "5"},
        {{"4(x0)", 0}, "invalid", "-42"}, {{"2,,1", 0}, "invalid", "-42"},
        {{"4(x2", 0}, "invalid", "-42"},  {{"2,1,", 0}, "invalid", "-42"},
        {{"4x2", 0}, "invalid", "-42"},   {{"four", 0}, "invalid", "-42"},
        /* more nodes than a long counts (the sum overflowed) */
        {{"1(x9223372036854775806),1(x5)", 0}, "invalid", "-42"}};
    report_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memset(&r, 0, sizeof(r));
        CHECK(run_in_child(per_node_body, &cases[i].c, &r, sizeof(r)) == 0);
        if (strcmp(cases[i].status, "ok") == 0) {
            CHECK(r.status == SC_SUCCESS);
        } else {
            CHECK(r.status == SC_ERR_INVALID_ARG);
            CHECK(strstr(r.error, "SC_TEST_COUNT") != NULL);
        }
        CHECK(strcmp(r.text, cases[i].want) == 0);
    }
    return TEST_PASS;
}

/* The PU list on the "bound to:" line. */
static int bound_list(const report_t *r, char *list, size_t len)
{
    const char *p = strstr(r->text, "\n  bound to:");

    if (!p)
        return -1;
    p += strlen("\n  bound to:");
    p += strspn(p, " ");
    if (strncmp(p, "PUs ", 4) != 0)
        return -1;
    p += 4;
    snprintf(list, len, "%.*s", (int)strcspn(p, " \n"), p);
    return 0;
}

static int topology_report_shows_the_binding_as_a_cpu_list(void)
{
    cpu_set_t allowed, one;
    char expected[1024], got[1024];
    report_t r;
    int last = -1;

    CHECK(current_affinity(&allowed) == 0);
    format_cpu_list(&allowed, expected, sizeof(expected));
    CHECK(run_report(topology_body, NULL, NULL, &r) == 0);
    CHECK(r.status == SC_SUCCESS);
    CHECK(bound_list(&r, got, sizeof(got)) == 0);
    CHECK(strcmp(got, expected) == 0);

    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed))
            last = c;
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    snprintf(expected, sizeof(expected), "%d", last);
    CHECK(run_report(topology_body, NULL, &one, &r) == 0);
    CHECK(bound_list(&r, got, sizeof(got)) == 0);
    CHECK(strcmp(got, expected) == 0);
    return TEST_PASS;
}

static int topology_report_counts_the_cores_and_PUs(void)
{
    static cpu_set_t cores[CPU_SETSIZE];
    cpu_set_t allowed, online;
    char line[4096], expected[128];
    int ncores, npus;
    report_t r;

    /* affinity within cgroup within online: when the affinity is every online CPU,
     * hwloc's allowed machine is the online one that sysfs describes. */
    CHECK(current_affinity(&allowed) == 0);
    if (read_file_line("/sys/devices/system/cpu/online", line, sizeof(line)) < 0 ||
        parse_cpu_list(line, &online) < 0)
        SKIP("cannot read /sys/devices/system/cpu/online");
    if (!CPU_EQUAL(&allowed, &online))
        SKIP("this process may not use every online CPU");
    ncores = sysfs_cores(&online, cores, CPU_SETSIZE);
    if (ncores < 0)
        SKIP("cannot read the thread siblings in sysfs");
    npus = CPU_COUNT(&online);
    snprintf(expected, sizeof(expected), " %d %s, %d %s,", ncores,
             ncores == 1 ? "core" : "cores", npus, npus == 1 ? "PU" : "PUs");

    CHECK(run_report(topology_body, NULL, NULL, &r) == 0);
    CHECK(r.status == SC_SUCCESS);
    CHECK(strstr(r.text, "\n  machine:") != NULL);
    snprintf(line, sizeof(line), "%.*s",
             (int)strcspn(strstr(r.text, "\n  machine:") + 1, "\n"),
             strstr(r.text, "\n  machine:") + 1);
    if (!strstr(line, expected)) {
        fprintf(stderr, "expected \"%s\" in \"%s\"\n", expected, line);
        return TEST_FAIL;
    }
    return TEST_PASS;
}

static const test_entry_t tests[] = {
    {"config_shows_a_value_set_through_a_fallback_variable",
     config_shows_a_value_set_through_a_fallback_variable},
    {"config_prefers_the_SC_variable_over_its_fallbacks",
     config_prefers_the_SC_variable_over_its_fallbacks},
    {"config_shows_the_documented_defaults_when_nothing_is_set",
     config_shows_the_documented_defaults_when_nothing_is_set},
    {"config_local_rank_and_size_are_auto_when_unset",
     config_local_rank_and_size_are_auto_when_unset},
    {"config_takes_the_leading_number_of_slurm_tasks_per_node",
     config_takes_the_leading_number_of_slurm_tasks_per_node},
    {"config_takes_this_nodes_entry_of_slurm_tasks_per_node",
     config_takes_this_nodes_entry_of_slurm_tasks_per_node},
    {"config_takes_the_steps_tasks_per_node_not_the_requested",
     config_takes_the_steps_tasks_per_node_not_the_requested},
    {"config_takes_the_steps_task_count_under_srun", config_takes_the_steps_task_count_under_srun},
    {"config_takes_rank_and_size_from_one_launcher",
     config_takes_rank_and_size_from_one_launcher},
    {"an_unknown_log_level_is_one_warn_line", an_unknown_log_level_is_one_warn_line},
    {"config_shows_an_unknown_log_level_as_the_library_takes_it",
     config_shows_an_unknown_log_level_as_the_library_takes_it},
    {"config_shows_a_numbered_log_level_as_its_name",
     config_shows_a_numbered_log_level_as_its_name},
    {"config_shows_the_bucket_cap_the_reducer_takes",
     config_shows_the_bucket_cap_the_reducer_takes},
    {"config_says_shared_memory_settings_do_nothing_without_shared_memory",
     config_says_shared_memory_settings_do_nothing_without_shared_memory},
    {"ucx_tls_leaves_posix_and_shared_memory_as_ucx_reads_it",
     ucx_tls_leaves_posix_and_shared_memory_as_ucx_reads_it},
    {"ucx_tls_reads_a_name_with_aux_as_that_name",
     ucx_tls_reads_a_name_with_aux_as_that_name},
    {"ucx_tcp_conn_nb_set_by_an_earlier_init_is_taken_back",
     ucx_tcp_conn_nb_set_by_an_earlier_init_is_taken_back},
    {"config_shows_the_ucx_settings_shardcomm_decides",
     config_shows_the_ucx_settings_shardcomm_decides},
    {"config_marks_an_invalid_value_and_returns_invalid_arg",
     config_marks_an_invalid_value_and_returns_invalid_arg},
    {"config_marks_a_negative_local_size_invalid", config_marks_a_negative_local_size_invalid},
    {"bootstrap_counts_the_local_size_without_this_nodes_slurm_entry",
     bootstrap_counts_the_local_size_without_this_nodes_slurm_entry},
    {"config_error_names_the_first_invalid_setting",
     config_error_names_the_first_invalid_setting},
    {"config_agrees_with_the_library_on_ranges_and_switches",
     config_agrees_with_the_library_on_ranges_and_switches},
    {"config_shows_numbers_as_the_library_reads_them",
     config_shows_numbers_as_the_library_reads_them},
    {"bootstrap_refuses_ports_and_devices_that_are_not_plain_integers",
     bootstrap_refuses_ports_and_devices_that_are_not_plain_integers},
    {"bootstrap_refuses_launch_values_that_are_not_plain_integers",
     bootstrap_refuses_launch_values_that_are_not_plain_integers},
    {"bootstrap_refuses_a_master_address_with_a_blank",
     bootstrap_refuses_a_master_address_with_a_blank},
    {"bootstrap_refuses_a_master_address_with_a_control_character",
     bootstrap_refuses_a_master_address_with_a_control_character},
    {"bootstrap_refuses_a_master_address_no_host_can_have",
     bootstrap_refuses_a_master_address_no_host_can_have},
    {"bootstrap_takes_an_ipv6_master_address_in_brackets",
     bootstrap_takes_an_ipv6_master_address_in_brackets},
    {"bootstrap_refuses_an_empty_master_address", bootstrap_refuses_an_empty_master_address},
    {"bootstrap_names_the_variables_of_values_that_do_not_fit",
     bootstrap_names_the_variables_of_values_that_do_not_fit},
    {"bootstrap_refuses_a_rank_without_a_world_size", bootstrap_refuses_a_rank_without_a_world_size},
    {"config_checks_the_launch_settings_together", config_checks_the_launch_settings_together},
    {"config_takes_the_port_after_torchs_master_port",
     config_takes_the_port_after_torchs_master_port},
    {"tuning_refuses_a_spin_time_that_is_not_a_number",
     tuning_refuses_a_spin_time_that_is_not_a_number},
    {"refusals_quote_the_value_as_written", refusals_quote_the_value_as_written},
    {"refusals_show_a_blank_in_the_value", refusals_show_a_blank_in_the_value},
    {"choices_are_listed_alike_in_the_library_and_sc_info",
     choices_are_listed_alike_in_the_library_and_sc_info},
    {"env_reads_plain_numbers_only", env_reads_plain_numbers_only},
    {"env_calls_an_integer_past_a_long_out_of_range",
     env_calls_an_integer_past_a_long_out_of_range},
    {"tuning_takes_the_eager_modes_and_refuses_others",
     tuning_takes_the_eager_modes_and_refuses_others},
    {"switches_are_0_or_1_in_the_library_as_in_sc_info",
     switches_are_0_or_1_in_the_library_as_in_sc_info},
    {"env_int_per_node_takes_this_nodes_slurm_count",
     env_int_per_node_takes_this_nodes_slurm_count},
    {"config_threads_are_those_the_binding_will_leave",
     config_threads_are_those_the_binding_will_leave},
    {"topology_report_shows_the_binding_as_a_cpu_list",
     topology_report_shows_the_binding_as_a_cpu_list},
    {"topology_report_counts_the_cores_and_PUs", topology_report_counts_the_cores_and_PUs},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
