/* Tuning knobs read once from the environment (SC_ALGO, SC_RING_THRESHOLD, ...). */
#ifndef SC_CORE_TUNING_H
#define SC_CORE_TUNING_H

#include <stddef.h>
#include "shardcomm/status.h"

typedef struct {
    int allreduce_algo;       /* sc_algo_t forced by SC_ALGO, or SC_ALGO_NONE for auto */
    const char *allreduce_algo_word; /* SC_ALGO as spelled: auto (also unset), ring, rd */
    size_t ring_threshold;    /* bytes above which allreduce uses the ring */
    size_t chunk_bytes;       /* pipeline chunk of ring and chain algorithms */
    double spin_s;            /* progress engine spin before sleeping */
    int local_register;       /* SC_LOCAL_REGISTER: registered reducer buckets (0 or 1) */
    int local_mailbox;        /* SC_LOCAL_MAILBOX: headers through shared memory (0 or 1) */
    size_t stream_bytes;      /* SC_STREAM_BYTES: registered-memory ops this large store
                                 their results non-temporally */
    size_t stage_bytes;       /* SC_STAGE_BYTES: plain-memory allreduces up to this size
                                 go through each communicator's staging segment */
    int eager_sends;          /* SC_EAGER_SENDS: an sc_proto_mode_t (proto_choice.h) */
    const char *eager_sends_word; /* SC_EAGER_SENDS as spelled: auto (also unset), on, off */
} sc_tuning_t;

/* The process's tuning, parsed on first use. An invalid value is an error naming the
 * variable; the caller reports it. */
sc_status_t sc_tuning_get(const sc_tuning_t **tuning);

#endif
