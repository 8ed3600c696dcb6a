/* scrun's command line: the usage text and the parsing of its options. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bootstrap_env.h" /* SC_MAX_WORLD */
#include "core/env_words.h"
#include "scrun.h"

static void scrun_usage(FILE *f)
{
    fprintf(f,
            "usage: scrun -n N [options] [--] prog [args...]\n"
            "Starts N ranks of prog on this node with the SC_* rendezvous variables set,\n"
            "prefixes every output line with \"[rank] \", forwards SIGINT, SIGTERM, SIGHUP\n"
            "and SIGQUIT to the ranks, and stops all ranks when one fails.\n"
            "\n"
            "  -n, --nproc N           ranks on this node (1..%d; N x K at most %d, the\n"
            "                          largest world the library takes)\n"
            "      --bind core|none    SC_BIND for the ranks (default: SC_BIND if set, else core)\n"
            "      --nnodes K          number of nodes (1..%d, default 1)\n"
            "      --node-rank I       index of this node, 0..K-1 (default 0)\n"
            "      --master-addr HOST  rendezvous host (default: SC_MASTER_ADDR if set, else\n"
            "                          127.0.0.1; required on nodes other than 0 when K > 1)\n"
            "      --master-port P     rendezvous port (default: SC_MASTER_PORT if set, else a\n"
            "                          free port when K = 1, else MASTER_PORT + 1 (MASTER_PORT\n"
            "                          is torch.distributed's) or %d)\n"
            "      --grace S           seconds from SIGTERM (or a forwarded signal) to SIGKILL\n"
            "                          when stopping ranks (default 3); a second SIGINT kills\n"
            "                          at once\n"
            "  -h, --help              print this text\n"
            "\n"
            "The ranks are stopped when one fails, when scrun receives a signal it forwards,\n"
            "and when the reader of scrun's stdout or stderr goes away.\n"
            "Exit status: 0 when every rank exits 0, 1 when a rank fails or cannot be\n"
            "started or scrun's output is closed or cannot be written (a full disk), 2 on\n"
            "a usage error, 128+S after scrun received signal S (130 for SIGINT), whatever\n"
            "the ranks did.\n",
            SCRUN_MAX_RANKS, SC_MAX_WORLD, SCRUN_MAX_RANKS, SCRUN_DEFAULT_PORT);
}

const char *scrun_bind_mode(const char *text)
{
    /* The library's words, as it reads SC_BIND (sc_env_bind_mode). */
    int i = sc_env_words_find(&sc_env_bind_words, text);

    return i < 0 ? NULL : sc_env_bind_words.words[i];
}

int scrun_usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("scrun: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nusage: scrun -n N [options] [--] prog [args...]  (scrun --help for more)\n",
          stderr);
    return SCRUN_EXIT_USAGE;
}

bool scrun_parse_long(const char *s, long min, long max, long *value)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    /* Digits (and a minus sign) only: strtol would take leading blanks and a plus. */
    if ((!isdigit((unsigned char)s[0]) && s[0] != '-') || errno != 0 || end == s ||
        *end != '\0' || v < min || v > max)
        return false;
    *value = v;
    return true;
}

static bool scrun_parse_seconds(const char *s, double *value)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= 0 && v <= 1e6)) /* NaN fails too */
        return false;
    *value = v;
    return true;
}

/* The option getopt refused: the short one it was at (optopt; argv[optind - 1] is
 * another argument where options are bundled, "-vx"), else the long one. */
static const char *scrun_bad_option(char **argv, char *buf, size_t len)
{
    const char *arg = argv[optind - 1];

    if (optopt > 0 && optopt < 128 && isprint(optopt) && strncmp(arg, "--", 2) != 0) {
        snprintf(buf, len, "-%c", optopt);
        return buf;
    }
    return arg;
}

int scrun_parse_args(int argc, char **argv, scrun_opts_t *opts, bool *done)
{
    char bad[8], list[64];
    enum { OPT_BIND = 256, OPT_NNODES, OPT_NODE_RANK, OPT_MASTER_ADDR, OPT_MASTER_PORT,
           OPT_GRACE };
    static const struct option longopts[] = {
        {"nproc", required_argument, NULL, 'n'},
        {"bind", required_argument, NULL, OPT_BIND},
        {"nnodes", required_argument, NULL, OPT_NNODES},
        {"node-rank", required_argument, NULL, OPT_NODE_RANK},
        {"master-addr", required_argument, NULL, OPT_MASTER_ADDR},
        {"master-port", required_argument, NULL, OPT_MASTER_PORT},
        {"grace", required_argument, NULL, OPT_GRACE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    scrun_opts_t o = {.nlocal = 0, .nnodes = 1, .node_rank = 0, .grace = 3.0};
    bool have_n = false;
    int c;

    *done = false;
    opterr = 0;
    /* "+": options end at the program name, so its own flags are left to it. */
    while ((c = getopt_long(argc, argv, "+:hn:", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            scrun_usage(stdout);
            *done = true;
            return 0;
        case 'n':
            if (!scrun_parse_long(optarg, 1, SCRUN_MAX_RANKS, &o.nlocal))
                return scrun_usage_error("-n needs a number of ranks from 1 to %d, not '%s'",
                                         SCRUN_MAX_RANKS, optarg);
            have_n = true;
            break;
        case OPT_BIND:
            if (!(o.bind = scrun_bind_mode(optarg)))
                return scrun_usage_error("--bind is one of %s, not '%s'",
                                         sc_env_words_list(&sc_env_bind_words, list,
                                                           sizeof list), optarg);
            break;
        case OPT_NNODES:
            if (!scrun_parse_long(optarg, 1, SCRUN_MAX_RANKS, &o.nnodes))
                return scrun_usage_error("--nnodes needs a number of nodes from 1 to %d, "
                                         "not '%s'", SCRUN_MAX_RANKS, optarg);
            break;
        case OPT_NODE_RANK:
            if (!scrun_parse_long(optarg, 0, SCRUN_MAX_RANKS, &o.node_rank))
                return scrun_usage_error("--node-rank needs a number from 0 to %d, not '%s'",
                                         SCRUN_MAX_RANKS - 1, optarg);
            break;
        case OPT_MASTER_ADDR:
            if (optarg[0] == '\0')
                return scrun_usage_error("--master-addr needs a host name or address");
            o.master_addr = optarg;
            break;
        case OPT_MASTER_PORT:
            if (!scrun_parse_long(optarg, 1, 65535, &o.master_port))
                return scrun_usage_error("--master-port needs a port from 1 to 65535, not '%s'",
                                         optarg);
            break;
        case OPT_GRACE:
            if (!scrun_parse_seconds(optarg, &o.grace))
                return scrun_usage_error("--grace needs seconds from 0 to 1e6, not '%s'",
                                         optarg);
            break;
        case ':':
            return scrun_usage_error("option '%s' needs a value",
                                     scrun_bad_option(argv, bad, sizeof bad));
        default:
            return scrun_usage_error("unknown option '%s'",
                                     scrun_bad_option(argv, bad, sizeof bad));
        }
    }
    if (!have_n)
        return scrun_usage_error("the number of ranks (-n N) is missing");
    if (optind >= argc)
        return scrun_usage_error("the program to run is missing");
    if (argv[optind][0] == '\0')
        return scrun_usage_error("the program to run is an empty name");
    if (o.node_rank >= o.nnodes)
        return scrun_usage_error("--node-rank %ld is not below --nnodes %ld", o.node_rank,
                                 o.nnodes);
    /* Every rank would fail in sc_comm_init, which refuses a larger world. */
    if (o.nlocal * o.nnodes > SC_MAX_WORLD)
        return scrun_usage_error("-n %ld on %ld nodes is a world of %ld ranks; shardcomm "
                                 "supports at most %d", o.nlocal, o.nnodes,
                                 o.nlocal * o.nnodes, SC_MAX_WORLD);
    o.argv = argv + optind;
    *opts = o;
    return 0;
}
