/* Status codes and error text: every shardcomm call returns an sc_status_t. */
#ifndef SHARDCOMM_STATUS_H
#define SHARDCOMM_STATUS_H

#include "shardcomm/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    SC_SUCCESS = 0,
    SC_IN_PROGRESS = 1,        /* sc_test: the request has not completed yet */
    SC_ERR_INVALID_ARG = -1,   /* a null pointer, a bad value, an overflow */
    SC_ERR_UNSUPPORTED = -2,   /* a valid request this build or backend cannot serve */
    SC_ERR_NO_MEMORY = -3,
    SC_ERR_TIMEOUT = -4,       /* SC_TIMEOUT elapsed: a peer never answered */
    SC_ERR_PEER_FAILED = -5,   /* a peer died or reported an error */
    SC_ERR_MISMATCH = -6,      /* ranks issued calls that disagree */
    SC_ERR_ABORTED = -7,       /* the communicator was aborted or broken */
    SC_ERR_INVALID_COMM = -8,  /* a destroyed or null communicator */
    SC_ERR_TRANSPORT = -9,     /* UCX or the bootstrap socket failed */
    SC_ERR_SYSTEM = -10,       /* an OS call failed */
    SC_ERR_INTERNAL = -11,
    SC_ERR_DEVICE = -12        /* the CUDA runtime or NCCL failed, or no device is present */
} sc_status_t;

/* Short constant name of a status ("SC_ERR_TIMEOUT"); never NULL. Thread safe. */
SC_API const char *sc_status_string(sc_status_t status);

/* The sentence describing the last error set on the calling thread: what, where,
 * which rank. Empty string when no error was recorded. The text is owned by the
 * library and valid until the next shardcomm call on this thread. */
SC_API const char *sc_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
