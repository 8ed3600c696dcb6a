/* The comm hook's state for checkpoints: sc_reducer_hook_save / _load wrap what the
 * hook's own save/load produce in a record that names the hook, so that a checkpoint
 * is not loaded into a reducer with another hook. */
#include <stdint.h>
#include <string.h>

#include "collectives/reducer_internal.h"

/* Record: magic, version, name length, payload length, the name, the payload. */
#define SC_HOOK_STATE_MAGIC 0x48524353u /* "SCRH" little-endian */
#define SC_HOOK_STATE_VERSION 1u

typedef struct {
    uint32_t magic;
    uint32_t version;
    uint32_t name_len;
    uint32_t reserved;    /* 0; a load refuses anything else (a later format) */
    uint64_t payload_len;
} sc_hook_state_header_t;

static const char *sc_hook_name(const sc_reducer_t *r)
{
    return r->hook.name ? r->hook.name : "";
}

/* The hook's save or load failed with st: a sentence naming the hook and its reason. */
static sc_status_t sc_hook_state_failed(const sc_reducer_t *r, sc_status_t st,
                                        const char *caller, const char *what)
{
    char why[SC_ERROR_MAX];

    st = sc_reducer_hook_why(st, why, sizeof(why));
    return sc_error(st, "%s: comm hook \"%s\" could not %s its state (%s): %s", caller,
                    sc_hook_name(r), what, sc_status_string(st), why);
}

/* SC_SUCCESS between iterations, else the refusal of fn ("save" or "load"). Under
 * r->lock. An iteration with no gradient marked is under way too once finalize starts
 * its buckets (it drops the lock around each start, which the hook's save or load would
 * then run beside). */
static sc_status_t sc_reducer_hook_between(const sc_reducer_t *r, const char *fn)
{
    if (r->nready > 0)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_hook_%s: %d gradients are marked in "
                        "this iteration; %s between iterations (after finalize)", fn,
                        r->nready, fn);
    if (r->next_start > 0)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_hook_%s: sc_reducer_finalize is "
                        "reducing this iteration's buckets on another thread; %s between "
                        "iterations (after finalize)", fn, fn);
    return SC_SUCCESS;
}

/* Under r->lock. */
static sc_status_t sc_reducer_hook_save_locked(const sc_reducer_t *r, void *buf, size_t *len)
{
    sc_hook_state_header_t h = {SC_HOOK_STATE_MAGIC, SC_HOOK_STATE_VERSION, 0, 0, 0};
    size_t payload = 0, need;
    sc_status_t st;

    if ((st = sc_reducer_hook_between(r, "save")) != SC_SUCCESS)
        return st;
    if (r->hook.save) {
        sc_error_clear(); /* a caller's hook may fail without a sentence */
        st = r->hook.save(r->hook.state, NULL, &payload);
        if (st != SC_SUCCESS)
            return sc_hook_state_failed(r, st, "sc_reducer_hook_save", "size");
    }
    h.name_len = (uint32_t)strlen(sc_hook_name(r));
    h.payload_len = payload;
    need = sizeof(h) + h.name_len + payload;
    if (!buf) {
        *len = need;
        return SC_SUCCESS;
    }
    if (*len < need)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_hook_save: the buffer holds %zu bytes, "
                        "the state of hook \"%s\" needs %zu (ask with buf NULL)", *len,
                        sc_hook_name(r), need);
    if (r->hook.save) {
        size_t got = payload;
        sc_error_clear();
        st = r->hook.save(r->hook.state, (char *)buf + sizeof(h) + h.name_len, &got);
        if (st != SC_SUCCESS)
            return sc_hook_state_failed(r, st, "sc_reducer_hook_save", "save");
        /* A length past the room given would send the caller reading past its buffer
         * (*len is what it writes to its checkpoint). */
        if (got > payload)
            return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_hook_save: comm hook \"%s\" "
                            "says it saved %zu bytes where it was given %zu (the size it "
                            "asked for): a hook's save writes at most *len bytes",
                            sc_hook_name(r), got, payload);
        h.payload_len = got;
    }
    memcpy(buf, &h, sizeof(h));
    memcpy((char *)buf + sizeof(h), sc_hook_name(r), h.name_len);
    *len = sizeof(h) + h.name_len + (size_t)h.payload_len;
    return SC_SUCCESS;
}

/* Under r->lock. */
static sc_status_t sc_reducer_hook_load_locked(sc_reducer_t *r, const void *buf, size_t len)
{
    sc_hook_state_header_t h;
    const char *name;
    sc_status_t st;

    if ((st = sc_reducer_hook_between(r, "load")) != SC_SUCCESS)
        return st;
    if (len < sizeof(h))
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_hook_load: %zu bytes are shorter than "
                        "a hook state record's %zu-byte header", len, sizeof(h));
    memcpy(&h, buf, sizeof(h));
    if (h.magic != SC_HOOK_STATE_MAGIC || h.version != SC_HOOK_STATE_VERSION || h.reserved)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_hook_load: the buffer is not a hook "
                        "state saved by sc_reducer_hook_save (magic 0x%08x, version %u, "
                        "reserved %u)", h.magic, h.version, h.reserved);
    if (h.name_len > len - sizeof(h) || h.payload_len != len - sizeof(h) - h.name_len)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_hook_load: the record says %u + %llu "
                        "bytes follow its header, the buffer has %zu: truncated or padded",
                        h.name_len, (unsigned long long)h.payload_len, len - sizeof(h));
    name = (const char *)buf + sizeof(h);
    if (h.name_len != strlen(sc_hook_name(r)) || memcmp(name, sc_hook_name(r), h.name_len))
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_hook_load: the state is of hook "
                        "\"%.*s\", this reducer's hook is \"%s\"", (int)h.name_len, name,
                        sc_hook_name(r));
    if (!r->hook.load)
        return h.payload_len == 0
                   ? SC_SUCCESS
                   : sc_error(SC_ERR_INVALID_ARG, "sc_reducer_hook_load: hook \"%s\" keeps no "
                              "state, but the record carries %llu bytes of it",
                              sc_hook_name(r), (unsigned long long)h.payload_len);
    sc_error_clear(); /* a caller's hook may fail without a sentence */
    st = r->hook.load(r->hook.state, name + h.name_len, (size_t)h.payload_len);
    return st == SC_SUCCESS ? st : sc_hook_state_failed(r, st, "sc_reducer_hook_load", "load");
}

/* The reducer's lock is held from the test of the marks through the hook's save or
 * load: a mark_ready on another thread (which counts itself under it, then may start a
 * bucket) comes wholly before it, which is then refused, or after it, never while the
 * hook's save or load runs. Saves on several threads take turns. */
SC_API sc_status_t sc_reducer_hook_save(const sc_reducer_t *r, void *buf, size_t *len)
{
    pthread_mutex_t *lock;
    sc_status_t st;

    if (!r || !len)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_hook_save: %s is NULL",
                        !r ? "reducer" : "len");
    lock = (pthread_mutex_t *)&r->lock; /* a const reducer's lock is still taken */
    pthread_mutex_lock(lock);
    st = sc_reducer_hook_save_locked(r, buf, len);
    pthread_mutex_unlock(lock);
    return st;
}

SC_API sc_status_t sc_reducer_hook_load(sc_reducer_t *r, const void *buf, size_t len)
{
    sc_status_t st;

    if (!r || !buf)
        return sc_error(SC_ERR_INVALID_ARG, "sc_reducer_hook_load: %s is NULL",
                        !r ? "reducer" : "buf");
    pthread_mutex_lock(&r->lock);
    st = sc_reducer_hook_load_locked(r, buf, len);
    pthread_mutex_unlock(&r->lock);
    return st;
}
