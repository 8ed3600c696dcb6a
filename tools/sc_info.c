/* sc-info: prints the machine's topology, the effective configuration and the UCX
 * transports a communicator uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardcomm/shardcomm.h"
#include "tool_stdout.h"

static void sc_info_usage(FILE *out)
{
    fprintf(out,
            "usage: sc-info [--topology] [--config] [--transports] [--version]\n"
            "  --topology    packages, NUMA nodes, cores, caches and this process's binding\n"
            "  --config      every SC_* setting, its value and where it came from\n"
            "  --transports  the UCX transports to each peer; run under scrun for several\n"
            "                ranks (alone it is a communicator of one rank)\n"
            "  --version     the version of the library loaded and of the headers\n"
            "                sc-info was built with, and nothing else\n"
            "With no option, prints all three.\n");
}

static int sc_info_failed(const char *what, sc_status_t status)
{
    fprintf(stderr, "sc-info: %s failed: %s: %s\n", what, sc_status_string(status),
            sc_last_error());
    return 1;
}

static int sc_info_main(int argc, char **argv);

/* The exit status also says whether stdout could be written. */
int main(int argc, char **argv)
{
    return sc_tool_stdout_checked("sc-info", sc_info_main(argc, argv));
}

static int sc_info_main(int argc, char **argv)
{
    int topology = 0, config = 0, transports = 0;
    int rc = 0;
    sc_comm_t *comm = NULL;
    sc_status_t status;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--topology") == 0) {
            topology = 1;
        } else if (strcmp(argv[i], "--config") == 0) {
            config = 1;
        } else if (strcmp(argv[i], "--transports") == 0) {
            transports = 1;
        } else if (strcmp(argv[i], "--version") == 0) {
            int v = sc_version();
            printf("shardcomm %d.%d.%d (headers %d.%d.%d)\n", v / 10000, v / 100 % 100, v % 100,
                   SC_VERSION_MAJOR, SC_VERSION_MINOR, SC_VERSION_PATCH);
            return 0;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            sc_info_usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "sc-info: unknown option '%s'\n", argv[i]);
            sc_info_usage(stderr);
            return 2;
        }
    }
    if (!topology && !config && !transports)
        topology = config = transports = 1;

    /* The communicator comes first so that the topology report shows the binding it
     * made. Without a launcher the environment sets no rank and no size, and the
     * library's defaults (rank 0 of 1) give a communicator of one rank. Each report
     * is printed even when an earlier step failed; the exit status says whether all
     * succeeded. */
    if (transports) {
        status = sc_comm_init_from_env(&comm);
        if (status != SC_SUCCESS) {
            rc = sc_info_failed("creating a communicator", status);
            comm = NULL;
        }
    }
    if (topology) {
        status = sc_info_print_topology(stdout);
        if (status != SC_SUCCESS)
            rc = sc_info_failed("sc_info_print_topology", status);
    }
    if (config) {
        if (topology)
            printf("\n");
        status = sc_info_print_config(stdout);
        if (status != SC_SUCCESS)
            rc = sc_info_failed("sc_info_print_config", status);
    }
    if (comm) {
        if (topology || config)
            printf("\n");
        fflush(stdout);
        status = sc_info_print_transports(comm, stdout);
        if (status != SC_SUCCESS)
            rc = sc_info_failed("sc_info_print_transports", status);
        status = sc_comm_destroy(comm);
        if (status != SC_SUCCESS)
            rc = sc_info_failed("sc_comm_destroy", status);
    }
    return rc;
}
