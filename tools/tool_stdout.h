/* The command-line tools' last step: output that could not be written (stdout on a
 * full disk, /dev/full, a closed pipe) is a failure of the run, said on stderr, not an
 * exit status of 0 with every line lost. Header-only: sc-bench and sc-info share it. */
#ifndef SC_TOOLS_TOOL_STDOUT_H
#define SC_TOOLS_TOOL_STDOUT_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* code, or 1 when it was 0 and stdout could not be written (after saying so as
 * "PROG: cannot write stdout: <reason>"). */
static inline int sc_tool_stdout_checked(const char *prog, int code)
{
    int err;

    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return code;
    err = errno;
    fprintf(stderr, "%s: cannot write stdout: %s\n", prog,
            err ? strerror(err) : "an earlier write failed");
    return code ? code : 1;
}

#endif
