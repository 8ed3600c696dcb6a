/* scrun: starts N local ranks of a program with the SC_* rendezvous variables set,
 * prefixes their output lines with "[rank] ", forwards signals, stops all on a failure. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "core/env_text.h"
#include "core/env_words.h"
#include "scrun.h"

static const int scrun_forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define SCRUN_NFORWARDED (sizeof scrun_forwarded_signals / sizeof scrun_forwarded_signals[0])

/* How long scrun waits for a dying rank to be reaped before naming another failure. */
#define SCRUN_DYING_WAIT_S 10.0

/* Self-pipe: the signal handler only writes the signal number here; the poll loop acts. */
static int scrun_sigpipe[2] = {-1, -1};

/* "SIGINT", "SIGPROF", ...: a buffer per signal, so that two names may share a message
 * (scrun is one thread). */
static const char *scrun_signal_name(int sig)
{
    static char names[NSIG][16];
    const char *abbrev = sig > 0 && sig < NSIG ? sigabbrev_np(sig) : NULL;

    if (abbrev == NULL)
        return "unknown signal";
    if (names[sig][0] == '\0')
        snprintf(names[sig], sizeof names[sig], "SIG%s", abbrev);
    return names[sig];
}

static double scrun_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void scrun_signal_handler(int sig)
{
    int saved = errno;
    unsigned char c = (unsigned char)sig;
    ssize_t r = write(scrun_sigpipe[1], &c, 1);
    (void)r; /* a full pipe already holds a wake-up */
    errno = saved;
}

static int scrun_install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = scrun_signal_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (pipe2(scrun_sigpipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    for (size_t i = 0; i < SCRUN_NFORWARDED; i++)
        if (sigaction(scrun_forwarded_signals[i], &sa, NULL) != 0)
            return -1;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    if (sigaction(SIGCHLD, &sa, NULL) != 0)
        return -1;
    /* A closed stdout must not kill scrun while ranks still run. */
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* How many exited ranks still have processes in their group (their children), each
 * marked in alive (nstarted entries; false for running ranks), from one pass over
 * /proc (none while every rank runs). 0, all false, when out of memory. */
static long scrun_leftover_groups(const scrun_run_t *run, bool *alive)
{
    pid_t *pgids = run->nrunning < run->nstarted
                       ? malloc((size_t)run->nstarted * sizeof *pgids)
                       : NULL;
    long n;

    if (!pgids) { /* every rank running (nothing to look for), or out of memory */
        for (long i = 0; i < run->nstarted; i++)
            alive[i] = false;
        return 0;
    }
    for (long i = 0; i < run->nstarted; i++)
        pgids[i] = run->ranks[i].running ? 0 : run->ranks[i].pid;
    n = scrun_proc_groups_alive(pgids, run->nstarted, alive);
    free(pgids);
    return n;
}

/* Sends sig to the group of every rank: the rank and its own children, and the
 * children a rank that exited left behind (a failed rank's helpers, which would
 * otherwise outlive the run). An exited rank's group is signalled only while a process
 * of this session is still in it: once it is empty its id may be another's. */
static void scrun_signal_ranks(scrun_run_t *run, int sig)
{
    bool *alive = calloc((size_t)run->nstarted + 1, sizeof *alive);

    if (alive)
        scrun_leftover_groups(run, alive);
    for (long i = 0; i < run->nstarted; i++)
        if (run->ranks[i].running || (alive && alive[i]))
            kill(-run->ranks[i].pid, sig);
    free(alive);
}

/* A run that was stopped (a failure, a signal) ends with every rank's children gone:
 * they got the stop signal with their rank; those still there at the end of the grace
 * period get SIGKILL. */
static void scrun_stop_leftovers(scrun_run_t *run)
{
    bool *alive;
    long n;

    if (!run->stopping || !(alive = calloc((size_t)run->nstarted + 1, sizeof *alive)))
        return;
    while ((n = scrun_leftover_groups(run, alive)) > 0 && !run->killed &&
           scrun_now() < run->kill_deadline)
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    free(alive);
    if (n == 0)
        return;
    scrun_msg(run, "processes the ranks left behind (their children) still running %s, "
              "sending SIGKILL to %ld rank%s group%s", run->killed ? "after SIGKILL" : "at "
              "the end of the grace period", n, n == 1 ? "'s" : "s'", n == 1 ? "" : "s");
    scrun_signal_ranks(run, SIGKILL);
}

/* Arms the SIGKILL that follows sig, sent to the ranks, once the grace period is over.
 * A run is stopped once: false when it was being stopped already. */
static bool scrun_stop_arm(scrun_run_t *run, int sig)
{
    if (run->stopping)
        return false;
    run->stopping = true;
    run->stop_signal = sig;
    run->kill_deadline = scrun_now() + run->opts.grace;
    return true;
}

/* After a failure or a lost output: SIGTERM to every running rank now, SIGKILL once the
 * grace period is over. others: a rank failed or could not start, so the message says
 * "the other N ranks". */
static void scrun_stop(scrun_run_t *run, bool others)
{
    if (!scrun_stop_arm(run, SIGTERM))
        return;
    if (run->nrunning > 0)
        scrun_msg(run, "stopping the %s%ld rank%s (SIGTERM, SIGKILL after %g s)",
                  others ? "other " : "", run->nrunning, run->nrunning == 1 ? "" : "s",
                  run->opts.grace);
    scrun_signal_ranks(run, SIGTERM);
}

/* " 3 5 8" for the ranks whose entry keep() accepts, at most about 200 characters:
 * then " ... (N in all)". Returns how many it accepted. */
static long scrun_rank_list(const scrun_run_t *run, bool (*keep)(const scrun_run_t *,
                                                                 const scrun_rank_t *),
                            char *list, size_t len)
{
    size_t n = 0;
    long count = 0, shown = 0;

    list[0] = '\0';
    for (long i = 0; i < run->nstarted; i++) {
        if (!keep(run, &run->ranks[i]))
            continue;
        count++;
        if (n < len - 48) {
            n += (size_t)snprintf(list + n, len - n, " %ld", run->ranks[i].rank);
            shown++;
        }
    }
    if (shown < count)
        snprintf(list + n, len - n, " ... (%ld in all)", count);
    return count;
}

static bool scrun_is_running(const scrun_run_t *run, const scrun_rank_t *r)
{
    (void)run;
    return r->running;
}

/* Ended badly, and not the first failure: stopped by scrun, or failing after it. */
static bool scrun_failed_after(const scrun_run_t *run, const scrun_rank_t *r)
{
    bool ok = WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
    return r->rank != run->first_failed && !ok;
}

/* SIGKILL to every rank still running; why ends "ranks still running ..." */
static void scrun_kill_remaining(scrun_run_t *run, const char *why)
{
    char list[256];

    scrun_rank_list(run, scrun_is_running, list, sizeof list);
    scrun_msg(run, "ranks still running %s, sending SIGKILL:%s", why, list);
    scrun_signal_ranks(run, SIGKILL);
    run->stopping = true;
    run->killed = true;
}

/* A signal scrun received is forwarded to the ranks. The first one stops the run (SIGKILL
 * after the grace period, as torchrun does) and is scrun's exit status; a SIGINT after it
 * kills the ranks at once, as a second Ctrl-C does under mpirun. */
static void scrun_on_signal(scrun_run_t *run, int sig)
{
    const char *name = scrun_signal_name(sig);

    if (sig == SIGINT && run->interrupted != 0) {
        char why[64] = "at a second SIGINT";
        if (run->interrupted != SIGINT)
            snprintf(why, sizeof why, "at SIGINT after %s", scrun_signal_name(run->interrupted));
        if (!run->killed)
            scrun_kill_remaining(run, why);
        return;
    }
    if (run->interrupted == 0)
        run->interrupted = sig;
    if (scrun_stop_arm(run, sig))
        scrun_msg(run, "received %s, forwarding it to the ranks (SIGKILL after %g s, or at "
                  "the next SIGINT)", name, run->opts.grace);
    else
        scrun_msg(run, "received %s, forwarding it to the ranks", name);
    scrun_signal_ranks(run, sig);
}

/* A reader of scrun's stdout or stderr that went away (EPIPE) ends the run as SIGPIPE
 * ends a program run directly: the ranks are stopped and scrun fails. Other write
 * errors (a full disk) drop the output from then on but let the ranks finish (a
 * training run outlives its log); at the end (at_end) scrun says so and fails, as a
 * program whose writes failed does, instead of exiting 0 with the output lost. */
static void scrun_check_sinks(scrun_run_t *run, bool at_end)
{
    static const char *const names[2] = {"stdout", "stderr"};

    for (int i = 0; i < 2 && !run->output_lost; i++) {
        int error = run->sinks[i].error;

        if (error == 0 || (error != EPIPE && !at_end))
            continue;
        run->output_lost = true;
        run->self_failed = true;
        if (error == EPIPE) {
            scrun_msg(run, "cannot write to %s: %s", names[i], strerror(EPIPE));
            scrun_stop(run, false);
        } else {
            scrun_msg(run, "cannot write to %s: %s (the ranks' output from then on was "
                      "lost)", names[i], strerror(error));
        }
    }
}

static void scrun_describe_status(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
                 scrun_signal_name(WTERMSIG(status)));
    else
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

/* Marks r ended with status and reads its last lines, which are in the pipes by now and
 * read before scrun's verdict on it. */
static void scrun_record_exit(scrun_run_t *run, scrun_rank_t *r, int status)
{
    r->running = false;
    r->status = status;
    run->nrunning--;
    scrun_stream_read(&r->out, true);
    scrun_stream_read(&r->err, true);
}

/* The cause to name when r exited with a failure status: a rank killed by a signal whose
 * teardown was still going on (its main thread a zombie; a surviving rank's library sees
 * such a peer as dead, and a program exits on that error at once) died before r. Each
 * dying rank is reaped, waiting up to SCRUN_DYING_WAIT_S for it (a dying process only
 * finishes its teardown; tens of milliseconds for hundreds of MiB on a quiet machine,
 * seconds on a loaded one, where 2 s was too short); the first one a signal killed is
 * returned, else NULL. The others reaped here are recorded, not named. */
static scrun_rank_t *scrun_reap_killed_before(scrun_run_t *run, const scrun_rank_t *r)
{
    scrun_rank_t *cause = NULL;

    for (long i = 0; i < run->nstarted; i++) {
        scrun_rank_t *q = &run->ranks[i];
        if (q == r || !q->running || !scrun_proc_dying(q->pid))
            continue;
        for (double until = scrun_now() + SCRUN_DYING_WAIT_S; scrun_now() < until;) {
            int status;
            if (waitpid(q->pid, &status, WNOHANG) == q->pid) {
                scrun_record_exit(run, q, status);
                if (cause == NULL && WIFSIGNALED(status))
                    cause = q;
                break;
            }
            nanosleep(&(struct timespec){0, 2000000}, NULL);
        }
    }
    return cause;
}

/* r ended with status. Only the first failure is the cause, named; later ones are ranks
 * scrun stopped (or failing after it). A rank a signal killed is named itself; one that
 * exited with a failure status may be reacting to a peer killed before it, which is
 * named instead (whichever of the two scrun happened to reap first). */
static void scrun_on_exit(scrun_run_t *run, scrun_rank_t *r, int status)
{
    scrun_rank_t *cause = r;
    char how[64];

    scrun_record_exit(run, r, status);
    if ((WIFEXITED(status) && WEXITSTATUS(status) == 0) || run->first_failed >= 0 ||
        run->stopping)
        return;
    if (WIFEXITED(status)) {
        scrun_rank_t *killed = scrun_reap_killed_before(run, r);
        if (killed != NULL)
            cause = killed;
    }
    scrun_describe_status(cause->status, how, sizeof how);
    run->first_failed = cause->rank;
    scrun_msg(run, "rank %ld %s", cause->rank, how);
    scrun_stop(run, true);
}

static void scrun_reap(scrun_run_t *run)
{
    for (long i = 0; i < run->nstarted; i++) {
        scrun_rank_t *r = &run->ranks[i];
        int status;
        if (!r->running)
            continue;
        pid_t p = waitpid(r->pid, &status, WNOHANG);
        if (p == r->pid)
            scrun_on_exit(run, r, status);
    }
}

static void scrun_handle_signals(scrun_run_t *run)
{
    unsigned char sigs[64];
    ssize_t n;
    bool child = false;
    while ((n = read(scrun_sigpipe[0], sigs, sizeof sigs)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (sigs[i] == SIGCHLD)
                child = true;
            else
                scrun_on_signal(run, sigs[i]);
        }
    }
    if (child)
        scrun_reap(run);
}

/* In the forked child: never returns. */
static void scrun_child_exec(const scrun_run_t *run, long local, int out_w, int err_w,
                             pid_t parent, const sigset_t *mask)
{
    long rank = run->opts.node_rank * run->opts.nlocal + local;
    char num[32];

    for (size_t i = 0; i < SCRUN_NFORWARDED; i++)
        signal(scrun_forwarded_signals[i], SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    if (run->nofile_soft >= 0) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
            rl.rlim_cur = (rlim_t)run->nofile_soft;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, mask, NULL);
    setpgid(0, 0);
#ifdef __linux__
    /* Ranks must not outlive a scrun killed by SIGKILL (e.g. by a CTest timeout). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
#else
    (void)parent;
#endif
    if (rank != 0 || !run->stdin_to_rank0) {
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0 && devnull != STDIN_FILENO) {
            dup2(devnull, STDIN_FILENO);
            close(devnull);
        }
    }
    dup2(out_w, STDOUT_FILENO);
    dup2(err_w, STDERR_FILENO);

    snprintf(num, sizeof num, "%ld", rank);
    setenv("SC_RANK", num, 1);
    snprintf(num, sizeof num, "%ld", run->world_size);
    setenv("SC_WORLD_SIZE", num, 1);
    snprintf(num, sizeof num, "%ld", local);
    setenv("SC_LOCAL_RANK", num, 1);
    snprintf(num, sizeof num, "%ld", run->opts.nlocal);
    setenv("SC_LOCAL_SIZE", num, 1);
    snprintf(num, sizeof num, "%ld", run->opts.node_rank);
    setenv("SC_NODE_RANK", num, 1);
    setenv("SC_MASTER_ADDR", run->master_addr, 1);
    setenv("SC_MASTER_PORT", run->master_port, 1);
    setenv("SC_BIND", run->bind, 1);
    if (run->launch_id[0] != '\0')
        setenv("SC_LAUNCH_ID", run->launch_id, 1);

    execvp(run->opts.argv[0], run->opts.argv);
    int err = errno;
    dprintf(STDERR_FILENO, "scrun: cannot run '%s': %s\n", run->opts.argv[0], strerror(err));
    _exit(err == ENOENT ? 127 : 126);
}

static int scrun_spawn(scrun_run_t *run, long local)
{
    scrun_rank_t *r = &run->ranks[local];
    int out[2], err[2];
    sigset_t block, old;
    pid_t parent = getpid();

    if (pipe2(out, O_CLOEXEC) != 0) {
        scrun_msg(run, "cannot start rank %ld: pipe: %s", r->rank, strerror(errno));
        return -1;
    }
    if (pipe2(err, O_CLOEXEC) != 0) {
        scrun_msg(run, "cannot start rank %ld: pipe: %s", r->rank, strerror(errno));
        goto err_close_out;
    }
    /* Blocked across fork so that a signal cannot reach our handler in the child. */
    sigfillset(&block);
    sigprocmask(SIG_BLOCK, &block, &old);
    pid_t pid = fork();
    if (pid == 0)
        scrun_child_exec(run, local, out[1], err[1], parent, &old);
    int fork_errno = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        scrun_msg(run, "cannot start rank %ld: fork: %s", r->rank, strerror(fork_errno));
        goto err_close_err;
    }
    /* Also here, so the group exists before we may signal it (the child races us). */
    setpgid(pid, pid);
    close(out[1]);
    close(err[1]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    r->pid = pid;
    r->running = true;
    scrun_stream_init(&r->out, out[0], &run->sinks[0], r->rank);
    scrun_stream_init(&r->err, err[0], &run->sinks[1], r->rank);
    run->nstarted++;
    run->nrunning++;
    return 0;

err_close_err:
    close(err[0]);
    close(err[1]);
err_close_out:
    close(out[0]);
    close(out[1]);
    return -1;
}

/* A port that nothing holds, reserved for this run: *held is a socket bound to it,
 * alone (no SO_REUSEADDR at the bind, so that it fails while any other socket holds
 * the port), then given SO_REUSEADDR and never listening; scrun keeps it until it
 * exits (closed on exec, so no rank inherits it). The rank serving the store binds the
 * port with SO_REUSEADDR, which such a socket allows; another scrun's bind, made
 * alone, fails for as long as the reservation stands, so no two runs share a port,
 * even between the choice and rank 0's bind, or when a program initializes its
 * communicator more than once. Drawn below Linux's ephemeral range (32768 and up),
 * where the kernel hands out ports for outgoing connections and UCX's listeners, from
 * the kernel's random source (a seed from the pid and the time repeats across runs
 * started together). */
static int scrun_reserve_port(long *port, int *held)
{
    for (int i = 0; i < 200; i++) {
        struct sockaddr_in addr;
        uint32_t draw;
        int one = 1, fd;
        if (getrandom(&draw, sizeof draw, 0) != (ssize_t)sizeof draw)
            draw = (uint32_t)getpid() * 2654435761u + (uint32_t)i * 40503u;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -1;
        memset(&addr, 0, sizeof addr);
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_ANY);
        addr.sin_port = htons((uint16_t)(20000 + draw % 12000));
        if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0) {
            *port = 20000 + (long)(draw % 12000);
            *held = fd;
            return 0;
        }
        close(fd);
    }
    errno = EADDRINUSE;
    return -1;
}

/* Fills the rendezvous settings: flags first, then SC_* already set, then defaults. */
static int scrun_resolve_env(scrun_run_t *run)
{
    const scrun_opts_t *o = &run->opts;
    const char *env_addr = getenv("SC_MASTER_ADDR");
    const char *env_port = getenv("SC_MASTER_PORT");
    const char *env_bind = getenv("SC_BIND");
    const char *env_launch = getenv("SC_LAUNCH_ID");
    char text[SC_ENV_TEXT_MAX], refusal[SC_ENV_TEXT_MAX + 64];
    long port;

    run->world_size = o->nlocal * o->nnodes;
    if (o->master_addr != NULL)
        run->master_addr = o->master_addr;
    else if (env_addr != NULL && env_addr[0] != '\0')
        run->master_addr = env_addr;
    else if (o->nnodes > 1 && o->node_rank != 0)
        return scrun_usage_error("--master-addr (or SC_MASTER_ADDR) is required on node %ld "
                                 "of a multi-node run", o->node_rank);
    else
        run->master_addr = "127.0.0.1";

    if (o->master_port != 0) {
        port = o->master_port;
    } else if (env_port != NULL && env_port[0] != '\0') {
        if (!scrun_parse_long(env_port, 1, 65535, &port))
            return scrun_usage_error("SC_MASTER_PORT=%s is not a port from 1 to 65535",
                                     sc_env_text(env_port, text, sizeof text));
    } else if (o->nnodes > 1) {
        /* Not torch.distributed's port, which its store holds (torchrun's agent, rank 0
         * of init_process_group): the one after MASTER_PORT, as the library takes it
         * (sc_bootstrap_beside_torch_store), the same on every node. */
        const char *torch = getenv("MASTER_PORT");
        long torch_port;
        if (torch == NULL || torch[0] == '\0') {
            port = SCRUN_DEFAULT_PORT;
        } else if (!scrun_parse_long(torch, 1, 65535, &torch_port)) {
            return scrun_usage_error("MASTER_PORT=%s is not a port from 1 to 65535",
                                     sc_env_text(torch, text, sizeof text));
        } else if (torch_port == 65535) {
            return scrun_usage_error("MASTER_PORT=65535 is torch.distributed's store and no "
                                     "port follows it for shardcomm's rendezvous: set "
                                     "--master-port or SC_MASTER_PORT");
        } else {
            port = torch_port + 1;
        }
    } else if (scrun_reserve_port(&port, &run->port_fd) != 0) {
        fprintf(stderr, "scrun: cannot find a free port: %s\n", strerror(errno));
        return SCRUN_EXIT_FAILED;
    }
    snprintf(run->master_port, sizeof run->master_port, "%ld", port);
    if (o->nnodes == 1 && (env_launch == NULL || env_launch[0] == '\0')) {
        uint64_t draw;
        if (getrandom(&draw, sizeof draw, 0) != (ssize_t)sizeof draw)
            draw = (uint64_t)getpid() << 32 ^ (uint64_t)(scrun_now() * 1e6);
        snprintf(run->launch_id, sizeof run->launch_id, "scrun-%016llx",
                 (unsigned long long)draw);
    }

    /* SC_BIND checked as --bind is: a value the library refuses would start ranks that
     * all fail. */
    if (o->bind != NULL)
        run->bind = o->bind;
    else if (env_bind == NULL || env_bind[0] == '\0')
        run->bind = "core";
    else if ((run->bind = scrun_bind_mode(env_bind)) == NULL)
        return scrun_usage_error("%s", sc_env_words_refusal(&sc_env_bind_words, "SC_BIND",
                                                            env_bind, refusal,
                                                            sizeof refusal));
    return 0;
}

/* A closed stdin/stdout/stderr would let a pipe take that number and then be closed on
 * exec by the CLOEXEC flag dup2 leaves in place when both numbers are the same. */
static void scrun_open_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0)
            continue;
        int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (n >= 0 && n != fd) {
            dup2(n, fd);
            close(n);
        }
    }
}

/* Two pipes per rank, and a margin: a soft open-file limit of 1024 stopped scrun at
 * rank 507. Raised to what is needed, as far as the hard limit allows; the ranks get the
 * limit scrun found (scrun_child_exec). */
static void scrun_raise_nofile(scrun_run_t *run)
{
    struct rlimit rl;
    rlim_t need = 2 * (rlim_t)run->opts.nlocal + 64;

    run->nofile_soft = -1;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= need)
        return;
    run->nofile_soft = (long long)rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        run->nofile_soft = -1;
}

static void scrun_loop(scrun_run_t *run)
{
    size_t cap = 3 + 2 * (size_t)run->nstarted;
    struct pollfd *fds = calloc(cap, sizeof *fds);
    scrun_stream_t **owners = calloc(cap, sizeof *owners);

    if (fds == NULL || owners == NULL) {
        /* Without memory for poll, still wait for the ranks; their output is lost. */
        scrun_msg(run, "out of memory; waiting for the ranks without their output");
        while (run->nrunning > 0) {
            int status;
            pid_t p = waitpid(-1, &status, 0);
            for (long i = 0; p > 0 && i < run->nstarted; i++)
                if (run->ranks[i].running && run->ranks[i].pid == p)
                    scrun_on_exit(run, &run->ranks[i], status);
        }
        goto out;
    }
    while (run->nrunning > 0) {
        size_t n = 0, first_stream;
        int timeout = -1;
        bool reading = scrun_sink_pending(&run->sinks[0]) +
                           scrun_sink_pending(&run->sinks[1]) < SCRUN_PENDING_MAX;
        fds[n++] = (struct pollfd){.fd = scrun_sigpipe[0], .events = POLLIN};
        /* Queued output goes out as the readers take it; the ranks' pipes are read
         * while the queues are short. */
        for (int k = 0; k < 2; k++) {
            int fd = scrun_sink_pending(&run->sinks[k]) ? run->sinks[k].fd : -1;
            fds[n++] = (struct pollfd){.fd = fd, .events = POLLOUT}; /* -1: ignored */
        }
        first_stream = n;
        for (long i = 0; reading && i < run->nstarted; i++) {
            scrun_stream_t *ss[2] = {&run->ranks[i].out, &run->ranks[i].err};
            for (int k = 0; k < 2; k++) {
                if (ss[k]->fd < 0)
                    continue;
                owners[n] = ss[k];
                fds[n++] = (struct pollfd){.fd = ss[k]->fd, .events = POLLIN};
            }
        }
        if (run->stopping && !run->killed) {
            double left = run->kill_deadline - scrun_now();
            timeout = left <= 0 ? 0 : (int)(left * 1000.0) + 1;
        }
        int ready = poll(fds, (nfds_t)n, timeout);
        if (ready < 0 && errno != EINTR) {
            scrun_msg(run, "poll: %s", strerror(errno));
            run->self_failed = true;
            break;
        }
        if (ready > 0) {
            for (int k = 0; k < 2; k++)
                if (fds[1 + k].revents != 0)
                    scrun_sink_pump(&run->sinks[k]);
            for (size_t i = first_stream; i < n; i++)
                if (fds[i].revents != 0)
                    scrun_stream_read(owners[i], false);
            if (fds[0].revents != 0)
                scrun_handle_signals(run);
        }
        scrun_check_sinks(run, false);
        if (run->stopping && !run->killed && run->nrunning > 0 &&
            scrun_now() >= run->kill_deadline) {
            char why[64];
            snprintf(why, sizeof why, "%g s after %s", run->opts.grace,
                     scrun_signal_name(run->stop_signal));
            scrun_kill_remaining(run, why);
        }
    }
out:
    free(owners);
    free(fds);
}

int main(int argc, char **argv)
{
    scrun_run_t *run;
    scrun_opts_t opts;
    bool done;
    double drain_s;
    int rc;

    /* Before any descriptor of scrun's own (the reserved port's socket) can take 0-2. */
    scrun_open_std_fds();
    rc = scrun_parse_args(argc, argv, &opts, &done);
    if (rc != 0 || done)
        return rc;
    run = calloc(1, sizeof *run);
    if (run == NULL) {
        fprintf(stderr, "scrun: out of memory\n");
        return SCRUN_EXIT_FAILED;
    }
    run->opts = opts;
    run->first_failed = -1;
    run->port_fd = -1;
    scrun_sinks_init(run);
    rc = scrun_resolve_env(run);
    if (rc != 0)
        goto out_free_run;
    scrun_raise_nofile(run);
    /* A rank in its own process group that reads a terminal would be stopped (SIGTTIN). */
    run->stdin_to_rank0 = !isatty(STDIN_FILENO);
    run->ranks = calloc((size_t)opts.nlocal, sizeof *run->ranks);
    if (run->ranks == NULL) {
        fprintf(stderr, "scrun: out of memory for %ld ranks\n", opts.nlocal);
        rc = SCRUN_EXIT_FAILED;
        goto out_free_run;
    }
    if (scrun_install_handlers() != 0) {
        fprintf(stderr, "scrun: cannot install signal handlers: %s\n", strerror(errno));
        rc = SCRUN_EXIT_FAILED;
        goto out_free_ranks;
    }

    for (long i = 0; i < opts.nlocal; i++) {
        run->ranks[i].rank = opts.node_rank * opts.nlocal + i;
        if (scrun_spawn(run, i) != 0) {
            run->self_failed = true;
            scrun_stop(run, true);
            break;
        }
    }
    scrun_loop(run);
    scrun_stop_leftovers(run);

    /* Pipes still open were drained when their rank was reaped but are held by the
     * rank's own children; scrun does not wait for those. */
    for (long i = 0; i < run->nstarted; i++) {
        if (run->ranks[i].out.fd >= 0)
            scrun_stream_close(&run->ranks[i].out);
        if (run->ranks[i].err.fd >= 0)
            scrun_stream_close(&run->ranks[i].err);
    }
    if (run->first_failed >= 0) {
        char list[256];
        if (scrun_rank_list(run, scrun_failed_after, list, sizeof list) > 0)
            scrun_msg(run, "rank %ld failed first; ranks stopped by scrun (or failing after it):%s",
                      run->first_failed, list);
    }
    /* What is still queued, written now that no rank runs: blocking (a signal then ends
     * scrun as it ends any program stuck writing to its terminal), or, in a run the user
     * interrupted, for the grace period at most (1 s at least). */
    for (size_t i = 0; i < SCRUN_NFORWARDED; i++)
        signal(scrun_forwarded_signals[i], SIG_DFL);
    drain_s = run->interrupted == 0 ? -1.0 : run->opts.grace > 1.0 ? run->opts.grace : 1.0;
    scrun_sinks_drain(run, drain_s);
    scrun_check_sinks(run, true); /* the last lines may have found the reader gone */
    rc = run->first_failed >= 0 || run->self_failed ? SCRUN_EXIT_FAILED : 0;
    if (run->interrupted != 0) {
        rc = 128 + run->interrupted;
        scrun_msg(run, "interrupted by %s (exit status %d)", scrun_signal_name(run->interrupted),
                  rc);
    }
    scrun_sinks_drain(run, drain_s); /* the messages since */

out_free_ranks:
    free(run->ranks);
out_free_run:
    if (run->port_fd >= 0)
        close(run->port_fd);
    free(run->sinks[0].q);
    free(run->sinks[1].q);
    free(run);
    return rc;
}
