/* Tuning knobs from the environment, parsed once per process. */
#include <pthread.h>
#include <string.h>
#include <stdlib.h>

#include "collectives/proto_choice.h"
#include "collectives/schedule.h"
#include "core/env.h"
#include "core/env_names.h"
#include "core/error.h"
#include "core/tuning.h"

static sc_tuning_t sc_tuning_value;
static sc_status_t sc_tuning_status;
static char sc_tuning_text[SC_ERROR_MAX];
static pthread_once_t sc_tuning_once = PTHREAD_ONCE_INIT;

/* The text of a setting as written, for a sentence refusing its value (a default is
 * never refused: the variable is set). */
static const char *sc_tuning_text_of(const char *const *names)
{
    const char *v = sc_env_first(names, NULL);

    return v ? v : "(unset)";
}

static sc_status_t sc_tuning_parse(sc_tuning_t *t)
{
    /* The values of sc_env_algo_words' and sc_env_eager_sends_words' words, in order. */
    static const int algo_values[] = {SC_ALGO_NONE, SC_ALGO_RING, SC_ALGO_RD};
    static const int eager_values[] = {SC_PROTO_AUTO, SC_PROTO_EAGER_ON, SC_PROTO_EAGER_OFF};
    long thr, chunk, stream, stage;
    int reg, mbox, algo, eager;
    double spin_us;
    sc_status_t st;

    st = sc_env_choice(sc_env_algo_names, &sc_env_algo_words, 0, &algo);
    if (st != SC_SUCCESS)
        return st;
    st = sc_env_choice(sc_env_eager_sends_names, &sc_env_eager_sends_words, 0, &eager);
    if (st != SC_SUCCESS)
        return st;
    t->allreduce_algo = algo_values[algo];
    t->allreduce_algo_word = sc_env_algo_words.words[algo];
    t->eager_sends = eager_values[eager];
    t->eager_sends_word = sc_env_eager_sends_words.words[eager];
    st = sc_env_int(sc_env_ring_threshold_names, SC_DEFAULT_RING_THRESHOLD, &thr);
    if (st != SC_SUCCESS)
        return st;
    st = sc_env_int(sc_env_chunk_bytes_names, SC_DEFAULT_CHUNK_BYTES, &chunk);
    if (st != SC_SUCCESS)
        return st;
    st = sc_env_double(sc_env_progress_spin_us_names, SC_DEFAULT_PROGRESS_SPIN_US, &spin_us);
    if (st != SC_SUCCESS)
        return st;
    st = sc_env_switch(sc_env_local_register_names, SC_DEFAULT_LOCAL_REGISTER, &reg);
    if (st != SC_SUCCESS)
        return st;
    st = sc_env_switch(sc_env_local_mailbox_names, SC_DEFAULT_LOCAL_MAILBOX, &mbox);
    if (st != SC_SUCCESS)
        return st;
    st = sc_env_int(sc_env_stream_bytes_names, SC_DEFAULT_STREAM_BYTES, &stream);
    if (st != SC_SUCCESS)
        return st;
    if (stream < 0)
        return sc_error(SC_ERR_INVALID_ARG, "SC_STREAM_BYTES=%s must be >= 0",
                        sc_tuning_text_of(sc_env_stream_bytes_names));
    st = sc_env_int(sc_env_stage_bytes_names, SC_DEFAULT_STAGE_BYTES, &stage);
    if (st != SC_SUCCESS)
        return st;
    if (stage < 0 || stage > (1L << 30))
        return sc_error(SC_ERR_INVALID_ARG, "SC_STAGE_BYTES=%s must be from 0 to 1 GiB",
                        sc_tuning_text_of(sc_env_stage_bytes_names));
    if (thr < 0)
        return sc_error(SC_ERR_INVALID_ARG, "SC_RING_THRESHOLD=%s must be >= 0",
                        sc_tuning_text_of(sc_env_ring_threshold_names));
    if (chunk < SC_MIN_CHUNK_BYTES)
        return sc_error(SC_ERR_INVALID_ARG, "SC_CHUNK_BYTES=%s must be >= %d",
                        sc_tuning_text_of(sc_env_chunk_bytes_names), SC_MIN_CHUNK_BYTES);
    if (!(spin_us >= 0)) /* NaN too; inf is taken: never sleep (configuration.md) */
        return sc_error(SC_ERR_INVALID_ARG, "SC_PROGRESS_SPIN_US=%s must be a number >= 0",
                        sc_tuning_text_of(sc_env_progress_spin_us_names));
    t->ring_threshold = (size_t)thr;
    t->chunk_bytes = (size_t)chunk;
    t->spin_s = spin_us * 1e-6;
    t->local_register = reg;
    t->local_mailbox = mbox;
    t->stream_bytes = (size_t)stream;
    t->stage_bytes = (size_t)stage;
    return SC_SUCCESS;
}

static void sc_tuning_init(void)
{
    sc_tuning_status = sc_tuning_parse(&sc_tuning_value);
    if (sc_tuning_status != SC_SUCCESS)
        strncpy(sc_tuning_text, sc_last_error(), sizeof(sc_tuning_text) - 1);
}

sc_status_t sc_tuning_get(const sc_tuning_t **tuning)
{
    pthread_once(&sc_tuning_once, sc_tuning_init);
    if (sc_tuning_status != SC_SUCCESS) {
        sc_error_set_text(sc_tuning_text);
        return sc_tuning_status;
    }
    *tuning = &sc_tuning_value;
    return SC_SUCCESS;
}
