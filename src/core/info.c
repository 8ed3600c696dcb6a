/* sc-info's reports: the machine as hwloc sees it, and the effective value and source
 * of every SC_* setting and of the UCX settings shardcomm decides
 * (sc_info_print_transports lives with the communicator). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <hwloc.h>

#include "collectives/ucx_env.h"
#include "core/bootstrap_env.h"
#include "core/cpu.h"
#include "core/env.h"
#include "core/env_names.h"
#include "core/env_text.h"
#include "core/error.h"
#include "core/topology.h"
#include "shardcomm/info.h"

/* ---- topology ---------------------------------------------------------------- */

/* "32 KiB", "512 KiB", "4.3 GiB": exact multiples without decimals. */
static void sc_info_format_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    unsigned u = 0;

    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (v == (double)(uint64_t)v)
        snprintf(buf, len, "%" PRIu64 " %s", (uint64_t)v, units[u]);
    else
        snprintf(buf, len, "%.1f %s", v, units[u]);
}

static const char *sc_info_plural(unsigned n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* Number of objects of type whose PUs intersect set. */
static unsigned sc_info_count_touching(hwloc_topology_t topo, hwloc_obj_type_t type,
                                       hwloc_const_bitmap_t set)
{
    hwloc_obj_t obj = NULL;
    unsigned n = 0;

    while ((obj = hwloc_get_next_obj_by_type(topo, type, obj)) != NULL)
        n += hwloc_bitmap_intersects(obj->cpuset, set) ? 1 : 0;
    return n;
}

/* One cache level: "L2 512 KiB x2", sizes grouped so hybrid CPUs read
 * "L2 2 MiB x2 + 1 MiB x8". */
static void sc_info_print_cache(FILE *out, hwloc_topology_t topo, hwloc_obj_type_t type,
                                const char *name, int *first_level)
{
    enum { MAX_SIZES = 8 };
    uint64_t sizes[MAX_SIZES];
    unsigned counts[MAX_SIZES], nsizes = 0;
    hwloc_obj_t obj = NULL;
    char buf[32];

    while ((obj = hwloc_get_next_obj_by_type(topo, type, obj)) != NULL) {
        uint64_t size = obj->attr->cache.size;
        unsigned i = 0;

        while (i < nsizes && sizes[i] != size)
            i++;
        if (i == nsizes) {
            if (nsizes == MAX_SIZES)
                continue;
            sizes[nsizes] = size;
            counts[nsizes++] = 0;
        }
        counts[i]++;
    }
    if (nsizes == 0)
        return;
    fprintf(out, "%s%s", *first_level ? "" : ", ", name);
    for (unsigned i = 0; i < nsizes; i++) {
        sc_info_format_bytes(sizes[i], buf, sizeof(buf));
        fprintf(out, "%s %s x%u", i ? " +" : "", buf, counts[i]);
    }
    *first_level = 0;
}

static void sc_info_print_binding(FILE *out, hwloc_topology_t topo)
{
    hwloc_bitmap_t bound = hwloc_bitmap_alloc();
    unsigned ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    char *list = NULL;

    if (!bound) {
        fprintf(out, "  bound to:    (out of memory)\n");
        return;
    }
    if ((hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) < 0 &&
         hwloc_get_cpubind(topo, bound, 0) < 0) ||
        hwloc_bitmap_list_asprintf(&list, bound) < 0) {
        fprintf(out, "  bound to:    unknown (%s)\n", strerror(errno));
    } else {
        fprintf(out, "  bound to:    PUs %s (%u of %u %s)\n", list,
                sc_info_count_touching(topo, HWLOC_OBJ_CORE, bound), ncores,
                sc_info_plural(ncores, "core", "cores"));
    }
    free(list);
    hwloc_bitmap_free(bound);
}

static void sc_info_print_machine(FILE *out, hwloc_topology_t topo)
{
    unsigned npackages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    unsigned nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    unsigned ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    unsigned npus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    hwloc_obj_t obj = NULL;
    char *list = NULL;
    char mem[32];
    int first_level = 1;

    sc_info_format_bytes(hwloc_get_root_obj(topo)->total_memory, mem, sizeof(mem));
    fprintf(out, "Topology (hwloc %s)\n", HWLOC_VERSION);
    fprintf(out, "  machine:     %u %s, %u NUMA %s, %u %s, %u %s, %s of memory\n",
            npackages, sc_info_plural(npackages, "package", "packages"), nnuma,
            sc_info_plural(nnuma, "node", "nodes"), ncores,
            sc_info_plural(ncores, "core", "cores"), npus,
            sc_info_plural(npus, "PU", "PUs"), mem);

    while ((obj = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, obj)) != NULL) {
        const char *model = hwloc_obj_get_info_by_name(obj, "CPUModel");
        unsigned n = hwloc_get_nbobjs_inside_cpuset_by_type(topo, obj->cpuset,
                                                             HWLOC_OBJ_CORE);

        if (hwloc_bitmap_list_asprintf(&list, obj->cpuset) < 0)
            continue;
        fprintf(out, "  package %u:   %s%s%u %s, PUs %s\n", obj->logical_index,
                model ? model : "", model ? ", " : "", n,
                sc_info_plural(n, "core", "cores"), list);
        free(list);
        list = NULL;
    }
    while ((obj = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, obj)) != NULL) {
        if (hwloc_bitmap_list_asprintf(&list, obj->cpuset) < 0)
            continue;
        sc_info_format_bytes(obj->attr->numanode.local_memory, mem, sizeof(mem));
        fprintf(out, "  NUMA node %u: %s, PUs %s\n", obj->os_index, mem, list);
        free(list);
        list = NULL;
    }

    fprintf(out, "  caches:      ");
    sc_info_print_cache(out, topo, HWLOC_OBJ_L1CACHE, "L1d", &first_level);
    sc_info_print_cache(out, topo, HWLOC_OBJ_L2CACHE, "L2", &first_level);
    sc_info_print_cache(out, topo, HWLOC_OBJ_L3CACHE, "L3", &first_level);
    sc_info_print_cache(out, topo, HWLOC_OBJ_L4CACHE, "L4", &first_level);
    fprintf(out, "%s\n", first_level ? "none reported" : "");

    if (hwloc_bitmap_list_asprintf(&list, hwloc_topology_get_allowed_cpuset(topo)) >= 0) {
        fprintf(out, "  allowed:     PUs %s\n", list);
        free(list);
    }
    sc_info_print_binding(out, topo);
}

SC_API sc_status_t sc_info_print_topology(FILE *out)
{
    hwloc_topology_t topo;
    sc_status_t status = SC_SUCCESS;

    if (!out)
        return sc_error(SC_ERR_INVALID_ARG, "sc_info_print_topology: out is NULL");
    /* A topology of its own: sc-info asks once, and the binding's copy stays private
     * to topology.c. */
    if (hwloc_topology_init(&topo) < 0)
        return sc_error(SC_ERR_SYSTEM, "hwloc_topology_init failed: %s", strerror(errno));
    if (hwloc_topology_load(topo) < 0) {
        status = sc_error(SC_ERR_SYSTEM, "hwloc_topology_load failed: %s", strerror(errno));
        goto out_destroy;
    }
    sc_info_print_machine(out, topo);
    if (ferror(out))
        status = sc_error(SC_ERR_SYSTEM, "could not write the topology report");

out_destroy:
    hwloc_topology_destroy(topo);
    return status;
}

/* ---- configuration -------------------------------------------------------------- */

/* Each kind is parsed the way the code that uses the setting parses it, so that what
 * sc-info accepts is what the library accepts. */
typedef enum {
    SC_INFO_INT,         /* an integer in [min, max] (sc_env_int) */
    SC_INFO_INT_PER_NODE, /* the same, this node's entry of Slurm's "2,1" (bootstrap) */
    SC_INFO_NUMBER,      /* a number >= 0, or > 0 when positive is set; at most
                            max_number when that is set */
    SC_INFO_SWITCH,      /* 0 or 1, def when unset (sc_env_switch) */
    SC_INFO_STRING,      /* a master address (sc_bootstrap_check_addr) */
    SC_INFO_CHOICE       /* one of words (sc_env_choice) */
} sc_info_kind_t;

enum {
    SC_INFO_RANK, SC_INFO_WORLD_SIZE, SC_INFO_LOCAL_RANK, SC_INFO_LOCAL_SIZE,
    SC_INFO_MASTER_ADDR, SC_INFO_MASTER_PORT, SC_INFO_TIMEOUT, SC_INFO_STORE_FANOUT,
    SC_INFO_BIND,
    SC_INFO_LOG_LEVEL, SC_INFO_ALGO, SC_INFO_RING_THRESHOLD, SC_INFO_CHUNK_BYTES,
    SC_INFO_PROGRESS_SPIN_US, SC_INFO_LOCAL_REGISTER, SC_INFO_LOCAL_MAILBOX,
    SC_INFO_STREAM_BYTES, SC_INFO_STAGE_BYTES, SC_INFO_EAGER_SENDS, SC_INFO_DEVICE,
    SC_INFO_NCCL, SC_INFO_CUDA_DRIVER, SC_INFO_BUCKET_CAP_MB,
    SC_INFO_THREADS, SC_INFO_CPU_ISA,
    SC_INFO_SETTING_COUNT
};

typedef struct {
    const char *const *names;  /* names[0] is the setting's own SC_* name */
    int launch;                /* 1 + an sc_launch_var_t: names from the launcher */
    sc_info_kind_t kind;
    long min, max, def;        /* integers */
    double def_number, max_number;
    int positive;              /* numbers: 0 excluded */
    const char *def_text;      /* strings and choices */
    const char *default_note;  /* non-NULL: unset means "auto", decided as this says */
    void (*decided)(char *buf, size_t len); /* what "auto" decides here (NULL: not known
                                               to sc-info) */
    const sc_env_words_t *words; /* choices: the words the library's parser takes */
    int lenient;               /* choices: the library takes an unknown value as the
                                  default, with a warning, instead of refusing it */
    sc_status_t (*usable)(void); /* choices: the library's own test of the value, for
                                    what the text alone does not say (NULL: none) */
    int shared_memory;         /* what it turns on is mapped in shared memory, which a
                                  UCX_TLS without a shared-memory transport turns off */
} sc_info_setting_t;

/* A vector path is a valid name and must also be one this CPU has (sc_cpu_isa_select
 * refuses the others when the kernels start). */
static sc_status_t sc_info_cpu_isa_usable(void)
{
    sc_cpu_isa_t isa;

    return sc_cpu_isa_select(&isa);
}

/* What SC_THREADS and SC_CPU_ISA left unset decide in this process. The threads follow
 * the binding, which sc_comm_init makes (SC_BIND=core) before a program's selection
 * starts: its share of the cores where this rank's local rank and size are known, said
 * beside the binding as it is now. sc-info --config alone binds nothing, and under
 * "scrun -n 2" on 2 cores said 2 where each rank's selection took 1. */
static void sc_info_threads_decided(char *buf, size_t len)
{
    sc_comm_config_t cfg = SC_COMM_CONFIG_INIT;
    sc_bootstrap_params_t p;
    int threads = 0, share = 0, local_rank, local_size;

    if (sc_cpu_threads(&threads) != SC_SUCCESS)
        return;
    snprintf(buf, len, "%d", threads);
    /* Settings that do not resolve: their own lines and "INVALID together" say so. */
    if (sc_bootstrap_resolve(&cfg, &p) != SC_SUCCESS || p.bind != SC_BIND_CORE)
        return;
    local_rank = p.world_size == 1 ? 0 : p.local_rank;
    local_size = p.world_size == 1 ? 1 : p.local_size;
    if (local_rank < 0 || local_size <= 0) /* counted by sc_comm_init at the rendezvous */
        snprintf(buf, len, "%d before sc_comm_init binds this rank to its share of them",
                 threads);
    else if (sc_topology_share_pus(local_rank, local_size, &share) == SC_SUCCESS &&
             share != threads)
        snprintf(buf, len, "%d once sc_comm_init binds local rank %d of %d (%d before)",
                 share, local_rank, local_size, threads);
}

static void sc_info_cpu_isa_decided(char *buf, size_t len)
{
    snprintf(buf, len, "%s", sc_cpu_isa_name(sc_cpu_isa_detect()));
}

/* What sc_comm_init does when no local rank or size is given. */
#define SC_INFO_BY_HOST "counted at start-up among the ranks with this host name"

static const sc_info_setting_t sc_info_settings[SC_INFO_SETTING_COUNT] = {
    [SC_INFO_RANK] = {.launch = 1 + SC_LAUNCH_RANK, .kind = SC_INFO_INT, .min = 0,
                      .max = INT_MAX, .def = SC_DEFAULT_RANK},
    [SC_INFO_WORLD_SIZE] = {.launch = 1 + SC_LAUNCH_WORLD_SIZE, .kind = SC_INFO_INT,
                            .min = 1, .max = SC_MAX_WORLD, .def = SC_DEFAULT_WORLD_SIZE},
    [SC_INFO_LOCAL_RANK] = {.launch = 1 + SC_LAUNCH_LOCAL_RANK, .kind = SC_INFO_INT,
                            .min = 0, .max = INT_MAX, .default_note = SC_INFO_BY_HOST},
    [SC_INFO_LOCAL_SIZE] = {.launch = 1 + SC_LAUNCH_LOCAL_SIZE, .kind = SC_INFO_INT_PER_NODE,
                            .min = 1, .max = INT_MAX, .default_note = SC_INFO_BY_HOST},
    [SC_INFO_MASTER_ADDR] = {.names = sc_env_master_addr_names, .kind = SC_INFO_STRING,
                             .def_text = SC_DEFAULT_MASTER_ADDR},
    [SC_INFO_MASTER_PORT] = {.names = sc_env_master_port_names, .kind = SC_INFO_INT,
                             .min = 1, .max = 65535, .def = SC_DEFAULT_MASTER_PORT},
    [SC_INFO_TIMEOUT] = {.names = sc_env_timeout_names, .kind = SC_INFO_NUMBER,
                         .def_number = SC_DEFAULT_TIMEOUT_S, .positive = 1},
    [SC_INFO_STORE_FANOUT] = {.names = sc_env_store_fanout_names, .kind = SC_INFO_INT,
                              .min = 1, .max = SC_MAX_WORLD, .def = SC_DEFAULT_STORE_FANOUT},
    [SC_INFO_BIND] = {.names = sc_env_bind_names, .kind = SC_INFO_CHOICE, .def_text = "core",
                      .words = &sc_env_bind_words},
    [SC_INFO_LOG_LEVEL] = {.names = sc_env_log_level_names, .kind = SC_INFO_CHOICE,
                           .def_text = "warn", .words = &sc_env_log_level_words,
                           .lenient = 1},
    [SC_INFO_ALGO] = {.names = sc_env_algo_names, .kind = SC_INFO_CHOICE, .def_text = "auto",
                      .words = &sc_env_algo_words},
    [SC_INFO_RING_THRESHOLD] = {.names = sc_env_ring_threshold_names, .kind = SC_INFO_INT,
                                .min = 0, .max = LONG_MAX, .def = SC_DEFAULT_RING_THRESHOLD},
    [SC_INFO_CHUNK_BYTES] = {.names = sc_env_chunk_bytes_names, .kind = SC_INFO_INT,
                             .min = SC_MIN_CHUNK_BYTES, .max = LONG_MAX,
                             .def = SC_DEFAULT_CHUNK_BYTES},
    [SC_INFO_PROGRESS_SPIN_US] = {.names = sc_env_progress_spin_us_names,
                                  .kind = SC_INFO_NUMBER,
                                  .def_number = SC_DEFAULT_PROGRESS_SPIN_US},
    [SC_INFO_LOCAL_REGISTER] = {.names = sc_env_local_register_names, .kind = SC_INFO_SWITCH,
                                .def = SC_DEFAULT_LOCAL_REGISTER, .shared_memory = 1},
    [SC_INFO_LOCAL_MAILBOX] = {.names = sc_env_local_mailbox_names, .kind = SC_INFO_SWITCH,
                               .def = SC_DEFAULT_LOCAL_MAILBOX, .shared_memory = 1},
    [SC_INFO_STREAM_BYTES] = {.names = sc_env_stream_bytes_names, .kind = SC_INFO_INT,
                              .min = 0, .max = LONG_MAX, .def = SC_DEFAULT_STREAM_BYTES},
    [SC_INFO_STAGE_BYTES] = {.names = sc_env_stage_bytes_names, .kind = SC_INFO_INT,
                             .min = 0, .max = 1L << 30, .def = SC_DEFAULT_STAGE_BYTES,
                             .shared_memory = 1},
    [SC_INFO_EAGER_SENDS] = {.names = sc_env_eager_sends_names, .kind = SC_INFO_CHOICE,
                             .def_text = "auto", .words = &sc_env_eager_sends_words},
    [SC_INFO_DEVICE] = {.names = sc_env_device_names, .kind = SC_INFO_INT, .min = 0,
                        .max = INT_MAX,
                        .default_note = "the local rank modulo the number of GPUs"},
    [SC_INFO_NCCL] = {.names = sc_env_nccl_names, .kind = SC_INFO_SWITCH, .def = 1},
    [SC_INFO_CUDA_DRIVER] = {.names = sc_env_cuda_driver_names, .kind = SC_INFO_SWITCH,
                             .def = 1},
    [SC_INFO_BUCKET_CAP_MB] = {.names = sc_env_bucket_cap_mb_names, .kind = SC_INFO_NUMBER,
                               .def_number = SC_DEFAULT_BUCKET_CAP_MB, .positive = 1,
                               .max_number = SC_MAX_BUCKET_CAP_MB},
    [SC_INFO_THREADS] = {.names = sc_env_threads_names, .kind = SC_INFO_INT, .min = 1,
                         .max = SC_CPU_THREADS_MAX,
                         .default_note = "the CPUs this process is bound to",
                         .decided = sc_info_threads_decided},
    [SC_INFO_CPU_ISA] = {.names = sc_env_cpu_isa_names, .kind = SC_INFO_CHOICE,
                         .def_text = "auto", .words = &sc_env_cpu_isa_words,
                         .default_note = "the widest vector path this CPU has",
                         .decided = sc_info_cpu_isa_decided,
                         .usable = sc_info_cpu_isa_usable},
};

/* The effective value of one setting as text, and whether it is valid. */
typedef struct {
    char value[256];
    int invalid;
    int ignored;               /* a lenient setting's unknown value: the default used */
    char error[SC_ERROR_MAX];
    char moved[256];           /* where the library moved the value from, and why */
} sc_info_value_t;

static void sc_info_invalid(sc_info_value_t *v, const char *raw)
{
    char text[SC_ENV_TEXT_MAX];

    v->invalid = 1;
    snprintf(v->value, sizeof(v->value), "%s", sc_env_text(raw, text, sizeof(text)));
    snprintf(v->error, sizeof(v->error), "%s", sc_last_error());
}

/* A number as the shortest text that reads back as it: %g's six digits showed
 * SC_TIMEOUT=1234567 as 1.23457e+06, which is not the timeout in force. */
static void sc_info_format_number(double number, char *buf, size_t len)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, number);
        if (strtod(buf, NULL) == number)
            return;
    }
}

static void sc_info_evaluate(const sc_info_setting_t *s, const char *raw,
                             const char *which, sc_info_value_t *v)
{
    long n = 0;
    double number = 0.0;
    sc_status_t status;

    memset(v, 0, sizeof(*v));
    switch (s->kind) {
    case SC_INFO_INT:
    case SC_INFO_INT_PER_NODE:
        if (!raw && s->default_note) {
            snprintf(v->value, sizeof(v->value), "auto");
            return;
        }
        if (s->kind == SC_INFO_INT_PER_NODE) {
            long node = -1;
            if (sc_env_int(sc_env_node_index_names, -1, &node) != SC_SUCCESS)
                node = -1;
            /* LONG_MIN: the counts differ and this node's is not known, so counted. A
             * negative count written out (LONG_MIN too) is refused below, as sc_comm_init
             * refuses it. */
            status = sc_env_int_per_node(s->names, LONG_MIN, node, &n);
            if (status == SC_SUCCESS && n == LONG_MIN && raw && raw[0] != '-' &&
                s->default_note) {
                snprintf(v->value, sizeof(v->value), "auto");
                return;
            }
        } else {
            status = sc_env_int(s->names, s->def, &n);
        }
        if (status == SC_SUCCESS && raw && n < s->min)
            status = sc_error(SC_ERR_INVALID_ARG, "%s=%s is below the minimum, %ld", which,
                              raw, s->min);
        else if (status == SC_SUCCESS && raw && n > s->max)
            status = sc_error(SC_ERR_INVALID_ARG, "%s=%s is above the maximum, %ld", which,
                              raw, s->max);
        if (status != SC_SUCCESS) {
            sc_info_invalid(v, raw);
            return;
        }
        snprintf(v->value, sizeof(v->value), "%ld", n);
        return;
    case SC_INFO_NUMBER:
        status = sc_env_double(s->names, s->def_number, &number);
        if (status == SC_SUCCESS && s->positive && !(number > 0.0))
            status = sc_error(SC_ERR_INVALID_ARG, "%s=%s is not a positive number", which,
                              raw);
        else if (status == SC_SUCCESS && !(number >= 0.0))
            status = sc_error(SC_ERR_INVALID_ARG, "%s=%s is %s", which, raw,
                              number < 0.0 ? "negative" : "not a number");
        else if (status == SC_SUCCESS && s->max_number > 0.0 && number > s->max_number) {
            char max[64];
            sc_info_format_number(s->max_number, max, sizeof(max));
            status = sc_error(SC_ERR_INVALID_ARG, "%s=%s is above the maximum, %s", which,
                              raw, max);
        }
        if (status != SC_SUCCESS) {
            sc_info_invalid(v, raw);
            return;
        }
        sc_info_format_number(number, v->value, sizeof(v->value));
        return;
    case SC_INFO_STRING:
        if (raw && sc_bootstrap_check_addr(raw, which, NULL, 0) != SC_SUCCESS) {
            sc_info_invalid(v, raw);
            return;
        }
        snprintf(v->value, sizeof(v->value), "%s", raw ? raw : s->def_text);
        return;
    case SC_INFO_SWITCH: {
        int on;
        if (sc_env_switch(s->names, (int)s->def, &on) != SC_SUCCESS) {
            sc_info_invalid(v, raw);
            return;
        }
        snprintf(v->value, sizeof(v->value), "%d", on);
        return;
    }
    case SC_INFO_CHOICE: {
        int i;
        if (!raw) {
            snprintf(v->value, sizeof(v->value), "%s", s->def_text);
            return;
        }
        /* The library's own parser, and so its sentence, word for word. */
        status = sc_env_choice(s->names, s->words, -1, &i);
        if (status != SC_SUCCESS && s->lenient) {
            v->ignored = 1;
            snprintf(v->value, sizeof(v->value), "%s", s->def_text);
            snprintf(v->error, sizeof(v->error), "%s", sc_last_error());
            return;
        }
        if (status == SC_SUCCESS && s->usable)
            status = s->usable();
        if (status != SC_SUCCESS) {
            sc_info_invalid(v, raw);
            return;
        }
        snprintf(v->value, sizeof(v->value), "%s", s->words->words[i]);
        return;
    }
    }
}

static void sc_info_print_setting(FILE *out, const sc_info_setting_t *s,
                                  const sc_info_value_t *v, const char *raw,
                                  const char *which, const char *launcher)
{
    char source[SC_ERROR_MAX + 320]; /* the sentence, and a value of up to 255 */
    char decided[160] = "";

    if (s->decided)
        s->decided(decided, sizeof(decided));

    if (v->invalid)
        snprintf(source, sizeof(source), "INVALID: %s", v->error);
    else if (v->moved[0])
        snprintf(source, sizeof(source), "%s", v->moved);
    else if (v->ignored)
        snprintf(source, sizeof(source), "IGNORED: %s (the library warns and uses %s)",
                 v->error, v->value);
    else if (!which && s->default_note)
        snprintf(source, sizeof(source), "default: %s%s%s", s->default_note,
                 decided[0] ? ", here " : "", decided);
    else if (!which)
        snprintf(source, sizeof(source), "default");
    else if ((s->kind == SC_INFO_CHOICE ? strcasecmp(raw, v->value) : strcmp(raw, v->value)))
        snprintf(source, sizeof(source), "%s=%s", which, raw); /* "SC_LOG_LEVEL=3": debug */
    else
        snprintf(source, sizeof(source), "%s", which);

    fprintf(out, "  %-20s = %-12s %s", s->names[0], v->value, source);
    /* On, but nothing is mapped in shared memory (configuration.md, UCX_TLS). */
    if (s->shared_memory && !v->invalid && strcmp(v->value, "0") != 0 && !sc_ucx_may_use_shm())
        fprintf(out, "; no effect: UCX_TLS has no shared-memory transport");
    if (s->names[1]) {
        fprintf(out, " (reads");
        for (const char *const *name = s->names; *name; name++)
            fprintf(out, " %s", *name);
        fprintf(out, "%s%s)", launcher ? ": launched by " : "", launcher ? launcher : "");
    }
    fprintf(out, "\n");
}

/* The rendezvous beside torch.distributed's store (sc_bootstrap_beside_torch_store). */
static void sc_info_master_port_moved(sc_info_value_t *v)
{
    int torch_port, port;

    if (!sc_bootstrap_beside_torch_store(&torch_port, &port) || port < 0)
        return; /* none follows: sc_bootstrap_resolve's check says so */
    snprintf(v->value, sizeof(v->value), "%d", port);
    snprintf(v->moved, sizeof(v->moved), "MASTER_PORT=%d plus 1: MASTER_PORT is "
             "torch.distributed's store (torchrun's agent, rank 0 of init_process_group)",
             torch_port);
}

/* A bucket cap the reducer cannot take as written, in MiB (SC_BUCKET_CAP_MB=1e-9 is
 * 1 byte, 0.1 is 104857 bytes): the cap it takes, and the text beside it. */
static void sc_info_bucket_cap_rounded(sc_info_value_t *v, const char *which, const char *raw)
{
    double mb = 0.0;
    size_t bytes;

    if (sc_env_double(sc_env_bucket_cap_mb_names, 0.0, &mb) != SC_SUCCESS)
        return; /* its line says so */
    bytes = sc_bucket_cap_bytes(mb);
    if ((double)bytes == mb * (double)(1 << 20))
        return;
    sc_info_format_number((double)bytes / (double)(1 << 20), v->value, sizeof(v->value));
    snprintf(v->moved, sizeof(v->moved), "%s=%s, a cap of %zu %s: the reducer takes whole "
             "bytes, at least 1", which, raw, bytes, bytes == 1 ? "byte" : "bytes");
}

/* Which launch this process belongs to (sc_bootstrap_launch_id), by which the
 * rendezvous's store refuses a rank of another launch on its port: SC_LAUNCH_ID, else
 * the id of the launcher that gives the rank, else none (nothing is checked). */
static void sc_info_print_launch(FILE *out)
{
    sc_store_launch_t l;
    const char *launcher = NULL;

    sc_bootstrap_launch_id(&l);
    sc_env_launch_names(SC_LAUNCH_RANK, &launcher);
    if (!l.id[0])
        fprintf(out, "  %-20s = %-12s default: nothing checked (the store cannot tell this "
                "launch's ranks from another's on its port)", "SC_LAUNCH_ID", "none");
    else if (strcmp(l.from, sc_env_launch_id_names[0]) == 0)
        fprintf(out, "  %-20s = %-12s %s", "SC_LAUNCH_ID", l.id, l.from);
    else
        fprintf(out, "  %-20s = %-12s %s, the launcher's id", "SC_LAUNCH_ID", l.id, l.from);
    fprintf(out, " (reads SC_LAUNCH_ID, then the launcher's id: TORCHELASTIC_RUN_ID, "
            "PMIX_NAMESPACE or OMPI_MCA_*_jobid, SLURM_JOB_ID.SLURM_STEP_ID%s%s)\n",
            launcher ? "; launched by " : "", launcher ? launcher : "");
}

/* One UCX variable as sc_ucx_open gives it to UCX (ucx_env.c): the user's, else what
 * an sc_comm_init of this process set in its environment (UCX_TCP_CONN_NB for ranks on
 * several nodes: it was shown as the user's), which a later one keeps, else shardcomm's
 * default for ranks all on this node (single 1) or not (0), or for either where the
 * launch settings are invalid (-1: their lines say so), else UCX's own. */
static void sc_info_print_ucx_var(FILE *out, sc_ucx_var_t v, int single)
{
    const char *name = sc_ucx_var_names[v], *set = sc_ucx_user_value(v);
    const char *here = sc_ucx_set_here(v);
    const char *one = sc_ucx_default(v, 1), *many = sc_ucx_default(v, 0);
    const char *mine = single ? one : many;
    char text[SC_ENV_TEXT_MAX];

    if (set)
        fprintf(out, "  %-20s = %-12s %s\n", name, sc_env_text(set, text, sizeof(text)), name);
    else if (here)
        fprintf(out, "  %-20s = %-12s shardcomm's default, set in this process's environment "
                "by sc_comm_init\n", name, here);
    else if (single < 0 && (!one || !many || strcmp(one, many) != 0))
        fprintf(out, "  %-20s = %-12s shardcomm's default: %s for a world of one or where "
                "the launcher's local size is the world size, else %s\n", name, "auto",
                one ? one : "UCX's own",
                many ? many : "UCX's own");
    else if (mine)
        fprintf(out, "  %-20s = %-12s shardcomm's default\n", name, mine);
    else
        fprintf(out, "  %-20s = %-12s UCX's own default: shardcomm sets none here\n", name,
                "unset");
}

/* The UCX settings shardcomm decides: UCX_TLS, UCX_RNDV_SCHEME and UCX_TCP_CONN_NB
 * before ucp_init, UCX_DEBUG_SIGNO's handler at load (transport_ucx.c). Whether the
 * ranks are on one node is the launcher's word, as sc_comm_init opens the transport
 * before the rendezvous (a local size counted there is not; a world of one is). */
static void sc_info_print_ucx(FILE *out)
{
    sc_comm_config_t cfg = SC_COMM_CONFIG_INIT;
    sc_bootstrap_params_t p;
    const char *signo = getenv("UCX_DEBUG_SIGNO");
    char text[SC_ENV_TEXT_MAX];
    int single = -1;

    if (sc_bootstrap_resolve(&cfg, &p) == SC_SUCCESS)
        single = sc_bootstrap_single_node(&p);
    for (int v = 0; v < SC_UCX_VAR_COUNT; v++)
        sc_info_print_ucx_var(out, (sc_ucx_var_t)v, single);
    if (signo)
        fprintf(out, "  %-20s = %-12s UCX_DEBUG_SIGNO: as UCX takes it\n", "UCX_DEBUG_SIGNO",
                sc_env_text(signo, text, sizeof(text)));
    else
        fprintf(out, "  %-20s = %-12s shardcomm's default: what UCX's handler replaced at "
                "load is given back\n", "UCX_DEBUG_SIGNO", "none");
}

SC_API sc_status_t sc_info_print_config(FILE *out)
{
    sc_status_t status = SC_SUCCESS;
    char first_error[SC_ERROR_MAX] = "";
    sc_info_value_t v;

    if (!out)
        return sc_error(SC_ERR_INVALID_ARG, "sc_info_print_config: out is NULL");
    fprintf(out, "Configuration (value, then where it came from; the first variable set "
                 "wins)\n");
    for (int i = 0; i < SC_INFO_SETTING_COUNT; i++) {
        sc_info_setting_t s = sc_info_settings[i];
        const char *which = NULL, *launcher = NULL, *raw;

        if (s.launch) /* rank, size and local values: the launcher's variables */
            s.names = sc_env_launch_names((sc_launch_var_t)(s.launch - 1), &launcher);
        raw = sc_env_first(s.names, &which);
        sc_info_evaluate(&s, raw, which, &v);
        if (i == SC_INFO_MASTER_PORT && !v.invalid)
            sc_info_master_port_moved(&v);
        if (i == SC_INFO_BUCKET_CAP_MB && !v.invalid && raw)
            sc_info_bucket_cap_rounded(&v, which, raw);
        sc_info_print_setting(out, &s, &v, raw, which, launcher);
        if (v.invalid && status == SC_SUCCESS) {
            status = SC_ERR_INVALID_ARG;
            snprintf(first_error, sizeof(first_error), "%s", v.error);
        }
        if (i == SC_INFO_STORE_FANOUT) /* the last of the rendezvous's settings */
            sc_info_print_launch(out);
    }
    sc_info_print_ucx(out);

    /* Each setting is valid alone: now what sc_comm_init checks of them together (a rank
     * inside the world, a rank with a world size, a local rank inside the local size). */
    if (status == SC_SUCCESS) {
        sc_comm_config_t cfg = SC_COMM_CONFIG_INIT;
        sc_bootstrap_params_t p;
        if (sc_bootstrap_resolve(&cfg, &p) != SC_SUCCESS) {
            status = SC_ERR_INVALID_ARG;
            snprintf(first_error, sizeof(first_error), "%s", sc_last_error());
            fprintf(out, "  INVALID together: %s\n", first_error);
        }
    }

    /* Parsing the later settings overwrote the sentence; report the first problem. */
    if (status != SC_SUCCESS)
        sc_error_set_text(first_error);
    else if (ferror(out))
        status = sc_error(SC_ERR_SYSTEM, "could not write the configuration report");
    return status;
}
