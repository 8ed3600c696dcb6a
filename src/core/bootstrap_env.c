/* Rank, size and rendezvous settings: the configuration first, then the environment
 * (first variable of each list in env_names.c; rank, size and local values from one
 * launcher), then defaults. */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "core/bootstrap_env.h"
#include "core/env.h"
#include "core/env_names.h"
#include "core/env_text.h"
#include "core/error.h"

typedef enum {
    SC_READ_PLAIN,    /* an integer */
    SC_READ_PER_NODE  /* this node's entry of Slurm's per-node counts (sc_env_int_per_node) */
} sc_read_t;

/* field: the configuration field's name; from_cfg -1 (unset) reads the environment,
 * any other negative value is refused; so is a negative value in the environment.
 * from (may be NULL): "config.FIELD" or the variable read; left alone when neither
 * gave the value (a per-node count without this node's entry gives none). */
static sc_status_t sc_bootstrap_int(const char *field, int from_cfg, const char *const *names,
                                    sc_read_t read, long def, int *out, char *from,
                                    size_t from_len)
{
    const char *which = NULL, *raw;
    long v, node = -1;
    sc_status_t st;

    if (from_cfg < -1)
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: config.%s is %d; it must be >= 0, "
                        "or -1 (unset) to read it from the environment", field, from_cfg);
    if (from_cfg >= 0) {
        *out = from_cfg;
        if (from)
            snprintf(from, from_len, "config.%s", field);
        return SC_SUCCESS;
    }
    /* A node index that does not parse is no index: the count falls back to def. */
    if (read == SC_READ_PER_NODE &&
        sc_env_int(sc_env_node_index_names, -1, &node) != SC_SUCCESS)
        node = -1;
    st = read == SC_READ_PER_NODE ? sc_env_int_per_node(names, def, node, &v)
                                  : sc_env_int(names, def, &v);
    if (st != SC_SUCCESS)
        return st;
    raw = sc_env_first(names, &which);
    /* Per-node counts without this node's entry give no value: def stands, as unset (a
     * count is written without a sign, so a negative text is a value, and refused). */
    if (raw && read == SC_READ_PER_NODE && v == def && raw[0] != '-')
        raw = NULL;
    if (raw && from)
        snprintf(from, from_len, "%s", which);
    if (raw && (v < 0 || v > 0x7fffffff))
        return sc_error(SC_ERR_INVALID_ARG, "%s=%s is out of range", which, raw);
    *out = (int)v;
    return SC_SUCCESS;
}

/* Where the rank or the world size comes from (the configuration field, else the
 * variable read), NULL when neither gives it. */
static const char *sc_bootstrap_source(int from_cfg, const char *field, sc_launch_var_t what)
{
    const char *which = NULL;

    if (from_cfg >= 0)
        return field;
    return sc_env_first(sc_env_launch_names(what, NULL), &which) ? which : NULL;
}

/* A rank without a world size, or a world size above 1 without a rank, is a launch
 * that lost a variable or a variable left over from another one: refused on every
 * process, where the defaults made rank 0 run alone as a world of one while the others
 * failed. */
static sc_status_t sc_bootstrap_check_pair(const sc_comm_config_t *cfg, int world_size)
{
    const char *rank_src = sc_bootstrap_source(cfg->rank, "config.rank", SC_LAUNCH_RANK);
    const char *size_src =
        sc_bootstrap_source(cfg->world_size, "config.world_size", SC_LAUNCH_WORLD_SIZE);
    const char *const *sizes = sc_env_launch_names(SC_LAUNCH_WORLD_SIZE, NULL);
    const char *const *ranks = sc_env_launch_names(SC_LAUNCH_RANK, NULL);

    if (rank_src && !size_src)
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: the rank comes from %s but no "
                        "world size is set (%s%s%s, or config.world_size): a launcher sets "
                        "both; is %s left over from another launch?", rank_src, sizes[0],
                        sizes[1] ? " or " : "", sizes[1] ? sizes[1] : "", rank_src);
    if (size_src && !rank_src && world_size > 1)
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: the world size %d comes from %s "
                        "but no rank is set (%s%s%s, or config.rank): a launcher sets both",
                        world_size, size_src, ranks[0], ranks[1] ? " or " : "",
                        ranks[1] ? ranks[1] : "");
    return SC_SUCCESS;
}

int sc_bootstrap_addr_is_numeric(const char *addr)
{
    return strchr(addr, ':') || addr[strspn(addr, "0123456789.")] == '\0';
}

/* Whether addr parses as an IP address, as the rendezvous looks it up. */
static int sc_bootstrap_addr_parses(const char *addr)
{
    struct addrinfo hints, *res = NULL;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST;
    if (getaddrinfo(addr, NULL, &hints, &res) != 0)
        return 0;
    freeaddrinfo(res);
    return 1;
}

/* No name or address holds a blank or a control character; one was retried as a name
 * not yet in DNS until the timeout. A rank given an address that does not parse failed
 * at once, but rank 0 serves on every address of its host without looking it up, and
 * waited SC_TIMEOUT for it. */
sc_status_t sc_bootstrap_check_addr(const char *addr, const char *from, char *out, size_t len)
{
    char inner[SC_MASTER_ADDR_MAX], text[SC_ENV_TEXT_MAX];
    size_t n = strlen(addr);

    if (n == 0) /* an empty text passed for numeric, and was "not an IPv4 or IPv6 address" */
        return sc_error(SC_ERR_INVALID_ARG, "%s is empty: the master address is a host name "
                        "or an IP address", from);
    if (strpbrk(addr, " \t\n\v\f\r"))
        return sc_error(SC_ERR_INVALID_ARG, "%s=%s holds a blank: the master address is a "
                        "host name or an IP address", from,
                        sc_env_text(addr, text, sizeof(text)));
    for (const char *c = addr; *c; c++)
        if ((unsigned char)*c < ' ' || *c == 0x7f)
            return sc_error(SC_ERR_INVALID_ARG, "%s=%s holds a control character: the master "
                            "address is a host name or an IP address", from,
                            sc_env_text(addr, text, sizeof(text)));
    if (n >= SC_MASTER_ADDR_MAX)
        return sc_error(SC_ERR_INVALID_ARG, "%s is %zu characters long: no host name or IP "
                        "address is longer than %d", from, n, SC_MASTER_ADDR_MAX - 1);
    if (addr[0] == '[') {
        snprintf(inner, sizeof(inner), "%.*s", n >= 2 ? (int)(n - 2) : 0, addr + 1);
        if (n < 2 || addr[n - 1] != ']' || !strchr(inner, ':') ||
            !sc_bootstrap_addr_parses(inner))
            return sc_error(SC_ERR_INVALID_ARG, "%s=%s: brackets hold an IPv6 address alone "
                            "([::1])", from, addr);
    } else {
        snprintf(inner, sizeof(inner), "%s", addr);
        if (sc_bootstrap_addr_is_numeric(inner) && !sc_bootstrap_addr_parses(inner))
            return sc_error(SC_ERR_INVALID_ARG, "%s=%s is written as an IP address but is "
                            "not an IPv4 or IPv6 address", from, addr);
    }
    if (out)
        snprintf(out, len, "%s", inner);
    return SC_SUCCESS;
}

int sc_bootstrap_beside_torch_store(int *torch_port, int *port)
{
    const char *which = NULL;
    long torch;

    if (!sc_env_first(sc_env_master_port_names, &which) || strcmp(which, "MASTER_PORT") != 0 ||
        sc_env_int(sc_env_master_port_names, SC_DEFAULT_MASTER_PORT, &torch) != SC_SUCCESS)
        return 0;
    *torch_port = (int)torch;
    *port = torch < 65535 ? (int)torch + 1 : -1;
    return 1;
}

sc_status_t sc_bootstrap_resolve_rendezvous(const sc_comm_config_t *cfg,
                                            sc_bootstrap_params_t *out)
{
    char rank_from[32] = "default", port_from[32] = "default";
    int torch_port, port;
    sc_bootstrap_params_t p;
    const char *addr, *addr_from = "config.master_addr";
    sc_status_t st;

    if (!cfg)
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: config is NULL");
    if (cfg->size != sizeof(sc_comm_config_t))
        return sc_error(SC_ERR_INVALID_ARG,
                        "sc_comm_init: config.size is %zu, expected %zu: initialize the "
                        "config with SC_COMM_CONFIG_INIT", cfg->size, sizeof(sc_comm_config_t));
    memset(&p, 0, sizeof(p));
    snprintf(p.size_from, sizeof(p.size_from), "default");
    if ((st = sc_bootstrap_int("rank", cfg->rank,
                               sc_env_launch_names(SC_LAUNCH_RANK, NULL), SC_READ_PLAIN,
                               SC_DEFAULT_RANK, &p.rank, rank_from, sizeof(rank_from))) ||
        (st = sc_bootstrap_int("world_size", cfg->world_size,
                               sc_env_launch_names(SC_LAUNCH_WORLD_SIZE, NULL),
                               SC_READ_PLAIN, SC_DEFAULT_WORLD_SIZE, &p.world_size,
                               p.size_from, sizeof(p.size_from))) ||
        (st = sc_bootstrap_int("master_port", cfg->master_port, sc_env_master_port_names,
                               SC_READ_PLAIN, SC_DEFAULT_MASTER_PORT, &p.master_port,
                               port_from, sizeof(port_from))))
        return st;
    if ((st = sc_bootstrap_check_pair(cfg, p.world_size)) != SC_SUCCESS)
        return st;
    if (p.world_size < 1)
        return sc_error(SC_ERR_INVALID_ARG, "world size %d (from %s) must be at least 1",
                        p.world_size, p.size_from);
    if (p.world_size > SC_MAX_WORLD)
        return sc_error(SC_ERR_UNSUPPORTED, "world size %d (from %s) exceeds the supported %d",
                        p.world_size, p.size_from, SC_MAX_WORLD);
    if (p.rank < 0 || p.rank >= p.world_size)
        return sc_error(SC_ERR_INVALID_ARG, "rank %d (from %s) is outside the world of size "
                        "%d (from %s)", p.rank, rank_from, p.world_size, p.size_from);
    if (p.master_port <= 0 || p.master_port > 65535)
        return sc_error(SC_ERR_INVALID_ARG, "master port %d (from %s) is not a TCP port "
                        "(1-65535)", p.master_port, port_from);
    /* A world of one opens no port (sc_store_allgather): none to refuse there. */
    if (cfg->master_port < 0 && sc_bootstrap_beside_torch_store(&torch_port, &port)) {
        if (port < 0 && p.world_size > 1)
            return sc_error(SC_ERR_INVALID_ARG, "MASTER_PORT=%d is torch.distributed's "
                            "store and no port follows it for shardcomm's rendezvous: set "
                            "SC_MASTER_PORT", torch_port);
        if (port > 0)
            p.master_port = port;
    }
    addr = cfg->master_addr ? cfg->master_addr
                            : sc_env_first(sc_env_master_addr_names, &addr_from);
    if (addr && (st = sc_bootstrap_check_addr(addr, addr_from, p.master_addr,
                                              sizeof(p.master_addr))) != SC_SUCCESS)
        return st;
    if (!addr)
        snprintf(p.master_addr, sizeof(p.master_addr), "%s", SC_DEFAULT_MASTER_ADDR);
    sc_bootstrap_launch_id(&p.launch);
    *out = p;
    return SC_SUCCESS;
}

/* The launchers' own ids (sc_bootstrap_launch_id): torchrun's run id; Open MPI's job,
 * PMIx's namespace (Open MPI 5, and 4 under PMIx), else ORTE's; Slurm's job, with its
 * step after it. */
static const char *const sc_bootstrap_torchrun_id_names[] = {"TORCHELASTIC_RUN_ID", NULL};
static const char *const sc_bootstrap_ompi_id_names[] = {
    "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid", "OMPI_MCA_ess_base_jobid", NULL};
static const char *const sc_bootstrap_slurm_id_names[] = {"SLURM_JOB_ID", NULL};
static const char *const sc_bootstrap_slurm_step_names[] = {"SLURM_STEP_ID", NULL};

void sc_bootstrap_launch_id(sc_store_launch_t *launch)
{
    const char *launcher = NULL, *from = NULL, *id, *step = NULL;

    memset(launch, 0, sizeof(*launch));
    sc_env_launch_names(SC_LAUNCH_RANK, &launcher);
    id = sc_env_first(sc_env_launch_id_names, &from);
    if (!id && launcher && strcmp(launcher, "torchrun") == 0)
        id = sc_env_first(sc_bootstrap_torchrun_id_names, &from);
    if (!id && launcher && strcmp(launcher, "Open MPI") == 0)
        id = sc_env_first(sc_bootstrap_ompi_id_names, &from);
    if (!id && launcher && strcmp(launcher, "Slurm") == 0 &&
        (id = sc_env_first(sc_bootstrap_slurm_id_names, &from)) != NULL) {
        step = sc_env_first(sc_bootstrap_slurm_step_names, NULL);
        from = step ? "SLURM_JOB_ID.SLURM_STEP_ID" : from;
    }
    if (!id)
        return;
    snprintf(launch->id, sizeof(launch->id), "%s%s%s", id, step ? "." : "", step ? step : "");
    snprintf(launch->from, sizeof(launch->from), "%s", from);
    sc_bootstrap_launch_text(launch);
}

void sc_bootstrap_launch_text(sc_store_launch_t *launch)
{
    char *fields[] = {launch->id, launch->from};
    size_t sizes[] = {sizeof(launch->id), sizeof(launch->from)};

    for (int f = 0; f < 2; f++) {
        fields[f][sizes[f] - 1] = '\0';
        for (char *c = fields[f]; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
    }
}

sc_status_t sc_bootstrap_resolve_rest(const sc_comm_config_t *cfg, sc_bootstrap_params_t *io)
{
    sc_bootstrap_params_t p = *io;
    sc_status_t st;
    long fanout;
    int driver;

    /* 0 is the unset timeout; negative and NaN are refused before anything is read. */
    if (!(cfg->timeout_s >= 0.0))
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: config.timeout_s is %g; it must "
                        "be positive seconds, or 0 (unset) to read SC_TIMEOUT",
                        cfg->timeout_s);
    if ((st = sc_bootstrap_int("local_rank", cfg->local_rank,
                               sc_env_launch_names(SC_LAUNCH_LOCAL_RANK, NULL),
                               SC_READ_PLAIN, -1, &p.local_rank, p.local_rank_from,
                               sizeof(p.local_rank_from))) ||
        (st = sc_bootstrap_int("local_size", cfg->local_size,
                               sc_env_launch_names(SC_LAUNCH_LOCAL_SIZE, NULL),
                               SC_READ_PER_NODE, -1, &p.local_size, p.local_size_from,
                               sizeof(p.local_size_from))) ||
        (st = sc_bootstrap_int("device", cfg->device, sc_env_device_names, SC_READ_PLAIN, -1,
                               &p.device, NULL, 0)) ||
        (st = sc_env_switch(sc_env_nccl_names, 1, &p.nccl)) ||
        (st = sc_env_switch(sc_env_cuda_driver_names, 1, &driver)))
        return st;
    if (p.local_size == 0)
        return sc_error(SC_ERR_INVALID_ARG, "local size 0 (from %s) must be at least 1",
                        p.local_size_from);
    if (p.local_size > 0 && p.local_rank >= p.local_size)
        return sc_error(SC_ERR_INVALID_ARG, "local rank %d (from %s) is outside the local "
                        "size %d (from %s)", p.local_rank, p.local_rank_from, p.local_size,
                        p.local_size_from);
    if (p.local_size > p.world_size)
        return sc_error(SC_ERR_INVALID_ARG, "local size %d (from %s) is larger than the world "
                        "size %d (from %s)", p.local_size, p.local_size_from, p.world_size,
                        p.size_from);
    if (cfg->timeout_s > 0.0) {
        p.timeout_s = cfg->timeout_s;
    } else {
        st = sc_env_double(sc_env_timeout_names, SC_DEFAULT_TIMEOUT_S, &p.timeout_s);
        if (st != SC_SUCCESS)
            return st;
        if (!(p.timeout_s > 0.0)) /* NaN too; the text as written (1e-400 reads as 0) */
            return sc_error(SC_ERR_INVALID_ARG, "SC_TIMEOUT=%s must be positive seconds",
                            sc_env_first(sc_env_timeout_names, NULL));
    }
    st = sc_env_int(sc_env_store_fanout_names, SC_DEFAULT_STORE_FANOUT, &fanout);
    if (st != SC_SUCCESS)
        return st;
    if (fanout < 1 || fanout > SC_MAX_WORLD)
        return sc_error(SC_ERR_INVALID_ARG, "SC_STORE_FANOUT=%s must be from 1 to %d",
                        sc_env_first(sc_env_store_fanout_names, NULL), SC_MAX_WORLD);
    p.store_fanout = (int)fanout;
    if ((unsigned)cfg->bind > SC_BIND_NONE)
        return sc_error(SC_ERR_INVALID_ARG, "sc_comm_init: config.bind is %d, not "
                        "SC_BIND_DEFAULT (0), SC_BIND_CORE (1) or SC_BIND_NONE (2)",
                        (int)cfg->bind);
    p.bind = cfg->bind;
    if (p.bind == SC_BIND_DEFAULT) {
        st = sc_env_bind_mode(&p.bind);
        if (st != SC_SUCCESS)
            return st;
    }
    *io = p;
    return SC_SUCCESS;
}

sc_status_t sc_bootstrap_resolve(const sc_comm_config_t *cfg, sc_bootstrap_params_t *out)
{
    sc_bootstrap_params_t p;
    sc_status_t st = sc_bootstrap_resolve_rendezvous(cfg, &p);

    if (st == SC_SUCCESS)
        st = sc_bootstrap_resolve_rest(cfg, &p);
    if (st == SC_SUCCESS)
        *out = p;
    return st;
}
