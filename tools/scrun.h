/* scrun's shared pieces: its options, a run's ranks and their output streams, and the
 * functions that parse the command line (scrun_args.c) and pass the ranks' output on
 * with their prefixes (scrun_output.c). */
#ifndef SCRUN_H
#define SCRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SCRUN_EXIT_FAILED 1
#define SCRUN_EXIT_USAGE  2
#define SCRUN_MAX_RANKS   4096
#define SCRUN_LINE_BUF    65536 /* a longer line is passed on in pieces */
#define SCRUN_PREFIX_MAX  24
/* Multi-node runs without MASTER_PORT: the one after torch.distributed's default
 * (29500), where the library puts the rendezvous beside torch's store. */
#define SCRUN_DEFAULT_PORT 29501

typedef struct {
    long nlocal;
    long nnodes;
    long node_rank;
    const char *bind;        /* NULL: SC_BIND from the environment, else "core" */
    const char *master_addr; /* NULL: SC_MASTER_ADDR from the environment, else default */
    long master_port;        /* 0: not given */
    double grace;
    char **argv;             /* program and its arguments, NULL-terminated */
} scrun_opts_t;

typedef struct scrun_stream scrun_stream_t;

/* scrun's own stdout or stderr; open_line is the stream whose line was left unfinished
 * there, so that another rank's output first ends that line instead of joining it.
 * Output waits in the queue until the main loop finds the descriptor writable, so that
 * a reader that stalls (a terminal paused with Ctrl-S, a hung log reader) never keeps
 * scrun from acting on signals and on ranks that exit. */
typedef struct scrun_sink {
    int fd;
    bool broken; /* write failed: drop further output */
    int error;   /* errno of that write; EPIPE: the reader is gone */
    scrun_stream_t *open_line;
    struct scrun_sink *twin; /* the other sink where both are one file (2>&1), or NULL */
    struct scrun_sink *queue; /* whose queue this sink's output joins: its own, or the
                                 twin stdout's (one order for one file) */
    char *q;
    size_t qoff, qlen, qcap; /* pending bytes are q[qoff, qlen) */
} scrun_sink_t;

/* Pending output above which scrun stops reading the ranks' pipes (they then block
 * writing, as a program does on a stalled terminal). */
#define SCRUN_PENDING_MAX ((size_t)1 << 20)

/* One rank's stdout or stderr pipe. */
struct scrun_stream {
    int fd; /* read end, -1 once closed */
    scrun_sink_t *sink;
    char prefix[SCRUN_PREFIX_MAX];
    size_t prefix_len;
    bool at_line_start;
    size_t used;
    char buf[SCRUN_LINE_BUF];
};

typedef struct {
    pid_t pid; /* also the id of the rank's process group */
    long rank;
    bool running;
    int status;
    scrun_stream_t out;
    scrun_stream_t err;
} scrun_rank_t;

typedef struct {
    scrun_opts_t opts;
    long world_size;
    const char *master_addr;
    char master_port[16];
    int port_fd; /* the reservation of a port scrun chose (scrun_reserve_port), or -1 */
    const char *bind;
    /* SC_LAUNCH_ID for the ranks: a random one per single-node run (which the library
     * checks at the rendezvous: two launches on one port), "" to leave it as it is (set
     * by the user, or a multi-node run, whose nodes' scruns could not agree on one). */
    char launch_id[32];
    bool stdin_to_rank0;
    /* The open-file limit scrun found, given back to the ranks (scrun raises its own for
     * the two pipes per rank); rlim_cur < 0: unchanged. */
    long long nofile_soft;
    scrun_rank_t *ranks;
    long nstarted;
    long nrunning;
    scrun_sink_t sinks[2];
    long first_failed; /* global rank, -1 while none */
    bool self_failed; /* scrun could not start a rank or watch them, or lost its output */
    bool output_lost;  /* a reader of scrun's stdout or stderr went away */
    int interrupted;   /* the first signal scrun received and forwarded, 0 while none */
    bool stopping;     /* the ranks were sent stop_signal; SIGKILL follows at kill_deadline */
    int stop_signal;   /* SIGTERM after a failure, else the signal forwarded */
    bool killed;       /* SIGKILL sent */
    double kill_deadline;
} scrun_run_t;

/* "core" or "none" for text in any case (SC_BIND's values), else NULL. */
const char *scrun_bind_mode(const char *text);

/* Prints "scrun: <message>" and a short usage line to stderr; returns
 * SCRUN_EXIT_USAGE. */
int scrun_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A decimal number in [min, max], the whole of s. */
bool scrun_parse_long(const char *s, long min, long max, long *value);

/* Parses argv: 0 with *opts filled, or the exit status (0 with *done set after --help,
 * SCRUN_EXIT_USAGE after saying what is wrong). */
int scrun_parse_args(int argc, char **argv, scrun_opts_t *opts, bool *done);

/* scrun's own message, "scrun: " first, to stderr through the ranks' sink. */
void scrun_msg(scrun_run_t *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* scrun's stdout and stderr as sinks, twins where they are one file. */
void scrun_sinks_init(scrun_run_t *run);

/* Bytes waiting in sink's queue (0 for a broken sink, whose output is dropped). */
size_t scrun_sink_pending(const scrun_sink_t *sink);

/* One write of the queue's head, at most a pipe's atomic size, after poll found the
 * descriptor writable: it does not block on a pipe. */
void scrun_sink_pump(scrun_sink_t *sink);

/* Writes what is left at the end, once no rank runs: blocking (seconds < 0), or for at
 * most that long, dropping the rest (a run the user interrupted whose reader stalls). */
void scrun_sinks_drain(scrun_run_t *run, double seconds);

/* A rank's stream reading fd, passed on to sink with the prefix "[rank] ". */
void scrun_stream_init(scrun_stream_t *s, int fd, scrun_sink_t *sink, long rank);

/* Reads once (drain: until the pipe is empty) and passes on the complete lines; a
 * partial line waits for its end unless it fills the buffer. */
void scrun_stream_read(scrun_stream_t *s, bool drain);

/* Passes on what the stream still holds, ends its last line, closes its pipe. */
void scrun_stream_close(scrun_stream_t *s);

/* scrun_proc.c */

/* True when pid's process is exiting: its main thread a zombie ('Z', 'X') while its
 * other threads still unwind (tens of milliseconds for a large process killed by
 * SIGKILL) and it cannot be reaped yet. Linux only; elsewhere never. */
bool scrun_proc_dying(pid_t pid);

/* alive[i] = true while a live process of scrun's session is in process group pgids[i]
 * (an exited rank's children; pgids[i] <= 0: not asked), in one pass over /proc;
 * returns how many are. Linux only; elsewhere none. */
long scrun_proc_groups_alive(const pid_t *pgids, long n, bool *alive);

#endif
