/* The compressor's state for checkpoints (sc_compressor_save / _load) and its reset
 * (sc_compressor_reset, which drops every key).
 * Format, in this machine's byte order: a header (magic "SCEFSTAT", version, number of
 * keys, payload bytes, a hash of the payload); in version 2 the selector's draws so far
 * (approximate samples, random calls: with the seed they give the next ones); then per
 * key a record (key, gradient dtype, accumulation dtype, which parts follow, count,
 * steps) followed by the approximate threshold kept for the key (version 2, when it
 * keeps one), the residual and the momentum (count elements of the accumulation dtype
 * each) when present. Version 1 (no draws, no thresholds) still loads: the next
 * selections then draw and estimate anew. A load parses and checks everything before
 * it replaces any state. Version 3 is version 2 with a hash that mixes each word
 * (sc_state_hash); 1 and 2, hashed by plain FNV-1a, still load. Version 4 adds to each
 * key's record the rank and communicator size that made its state (0 0: none yet), so
 * that a state loaded on another rank is refused at its next step instead of fed into
 * another rank's gradients; earlier versions load without them (nothing checked).
 * Version 5 adds that rank's world rank (-1: none yet) and 4 bytes of zeros, so that the
 * refusal of a state made on a split names the world rank that made it; version 4 loads
 * without it (the refusal names the communicator's rank alone). Version 6 is version 5
 * with each word of the payload mixed before the hash takes it (sc_state_hash): in
 * versions 3 to 5, which still load with their hash, a flipped top bit of one word and
 * flips of bits 63 and 34 of the next cancelled, whatever the data. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"
#include "core/memory.h"

#define SC_STATE_VERSION 6u
#define SC_STATE_HAS_RESIDUAL 1u
#define SC_STATE_HAS_MOMENTUM 2u
#define SC_STATE_HAS_THRESHOLD 4u /* version 2 */

static const char sc_state_magic[8] = {'S', 'C', 'E', 'F', 'S', 'T', 'A', 'T'};

typedef struct {
    char magic[8];
    uint32_t version;
    uint32_t nkeys;
    uint64_t payload;
    uint64_t hash;
} sc_state_header_t;

typedef struct {
    uint64_t approx_samples;
    uint64_t random_calls;
} sc_state_draws_t;

typedef struct {
    int32_t key;
    int32_t dtype;
    int32_t acc;
    uint32_t flags;
    uint64_t count;
    int64_t steps;
    int32_t origin_rank;  /* version 4 */
    int32_t origin_size;
    int32_t origin_world; /* version 5 */
    uint32_t reserved;    /* 0 */
} sc_state_key_t;

/* A key's record in versions 1 to 3: the above without its origin; in version 4,
 * without the origin's world rank. */
#define SC_STATE_KEY_V3_BYTES offsetof(sc_state_key_t, origin_rank)
#define SC_STATE_KEY_V4_BYTES offsetof(sc_state_key_t, origin_world)

static size_t sc_state_key_record_bytes(uint32_t version)
{
    return version >= 5 ? sizeof(sc_state_key_t)
           : version == 4 ? SC_STATE_KEY_V4_BYTES
                          : SC_STATE_KEY_V3_BYTES;
}

/* The approximate selection's threshold: valid for selections of n elements of dtype. */
typedef struct {
    int32_t dtype;
    uint32_t reserved; /* 0 */
    uint64_t n;
    uint64_t key;
} sc_state_threshold_t;

/* A checksum against truncation and corruption over 8-byte words (then the tail
 * bytes), fast enough for residuals of hundreds of MB. Version 3: each step folds the
 * high half down (h ^= h >> 29) after FNV-1a's multiply, which carries changes only
 * upward: without it two flips of the same high bit (two sign bits of a residual)
 * cancelled. Version 6 also mixes each word before it enters h (w ^= w >> 32, then a
 * multiply by an odd constant, one to one and off h's chain of multiplies): in version 3
 * a flipped bit 63 of a word changed h by a fixed pattern after the fold (bits 63 and
 * 34), which the same flips in the next word undid. The tail bytes are taken as in
 * version 3. Versions 1 and 2: plain FNV-1a. */
static uint64_t sc_state_hash(const void *p, size_t n, uint32_t version)
{
    const int mix = version >= 3, premix = version >= 6;
    const unsigned char *q = p;
    uint64_t h = 0xcbf29ce484222325ull, w;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        memcpy(&w, q + i, 8);
        if (premix)
            w = (w ^ (w >> 32)) * 0xbf58476d1ce4e5b9ull;
        h = (h ^ w) * 0x100000001b3ull;
        if (mix)
            h ^= h >> 29;
    }
    for (; i < n; i++) {
        h = (h ^ q[i]) * 0x100000001b3ull;
        if (mix)
            h ^= h >> 29;
    }
    return h;
}

static size_t sc_state_key_bytes(const sc_ckey_t *k)
{
    size_t b = k->count * sc_dtype_size(k->acc);

    return sizeof(sc_state_key_t) + (k->approx.valid ? sizeof(sc_state_threshold_t) : 0) +
           (k->residual ? b : 0) + (k->momentum ? b : 0);
}

SC_API sc_status_t sc_compressor_save(const sc_compressor_t *compressor, void *buf,
                                      size_t *len)
{
    sc_compressor_t *c = (sc_compressor_t *)compressor;
    sc_state_header_t h;
    size_t need = sizeof(h) + sizeof(sc_state_draws_t);
    sc_topk_draws_t draws;
    sc_state_draws_t d;
    char *o;

    if (!c || !len)
        return sc_error(SC_ERR_INVALID_ARG, "sc_compressor_save: %s is NULL",
                        !c ? "compressor" : "len");
    pthread_mutex_lock(&c->lock);
    /* A checkpoint's state kept aside (sc_ckey_t.parked) is saved in its key's place. */
    for (int i = 0; i < c->nkeys; i++)
        need += sc_state_key_bytes(c->keys[i]->parked ? c->keys[i]->parked : c->keys[i]);
    if (!buf || *len < need) {
        pthread_mutex_unlock(&c->lock);
        if (!buf) {
            *len = need;
            return SC_SUCCESS;
        }
        return sc_error(SC_ERR_INVALID_ARG, "sc_compressor_save: the buffer holds %zu bytes, "
                        "the state needs %zu (ask with buf NULL)", *len, need);
    }
    o = (char *)buf + sizeof(h);
    sc_topk_draws_get(c->topk, &draws);
    d.approx_samples = draws.approx_samples;
    d.random_calls = draws.random_calls;
    memcpy(o, &d, sizeof(d));
    o += sizeof(d);
    for (int i = 0; i < c->nkeys; i++) {
        const sc_ckey_t *k = c->keys[i]->parked ? c->keys[i]->parked : c->keys[i];
        size_t b = k->count * sc_dtype_size(k->acc);
        sc_state_key_t r = {k->key, k->dtype, k->acc,
                            (k->residual ? SC_STATE_HAS_RESIDUAL : 0) |
                                (k->momentum ? SC_STATE_HAS_MOMENTUM : 0) |
                                (k->approx.valid ? SC_STATE_HAS_THRESHOLD : 0),
                            k->count, c->keys[i]->steps, k->origin_rank, k->origin_size,
                            k->origin_world, 0};
        memcpy(o, &r, sizeof(r));
        o += sizeof(r);
        if (k->approx.valid) {
            sc_state_threshold_t t = {k->approx.dtype, 0, k->approx.n, k->approx.key};
            memcpy(o, &t, sizeof(t));
            o += sizeof(t);
        }
        if (k->residual) {
            memcpy(o, k->residual, b);
            o += b;
        }
        if (k->momentum) {
            memcpy(o, k->momentum, b);
            o += b;
        }
    }
    memcpy(h.magic, sc_state_magic, sizeof(h.magic));
    h.version = SC_STATE_VERSION;
    h.nkeys = (uint32_t)c->nkeys;
    h.payload = need - sizeof(h);
    h.hash = sc_state_hash((char *)buf + sizeof(h), need - sizeof(h), SC_STATE_VERSION);
    memcpy(buf, &h, sizeof(h));
    pthread_mutex_unlock(&c->lock);
    *len = need;
    return SC_SUCCESS;
}

/* key: the record where the problem is, or -1 for the buffer as a whole. */
static sc_status_t sc_state_bad(const char *why, long key)
{
    if (key < 0)
        return sc_error(SC_ERR_INVALID_ARG, "sc_compressor_load: the buffer is not a "
                        "compressor state saved by sc_compressor_save (%s)", why);
    return sc_error(SC_ERR_INVALID_ARG, "sc_compressor_load: the buffer is not a compressor "
                    "state saved by sc_compressor_save (%s at record %ld)", why, key);
}

/* Builds the state of record i from p (which has `left` bytes); *used is its size. The
 * buffers this compressor's configuration keeps and the record lacks are zero; those it
 * does not keep are skipped. */
static sc_status_t sc_state_parse_key(const sc_compressor_t *c, uint32_t version,
                                      const char *p, size_t left, long i, sc_ckey_t **out,
                                      size_t *used)
{
    const uint32_t known = SC_STATE_HAS_RESIDUAL | SC_STATE_HAS_MOMENTUM |
                           (version >= 2 ? SC_STATE_HAS_THRESHOLD : 0);
    sc_state_threshold_t t = {0, 0, 0, 0};
    sc_state_key_t r = {.origin_world = -1}; /* before version 5: not known */
    const size_t rb = sc_state_key_record_bytes(version);
    sc_ckey_t *k;
    size_t b, need, tb, fixed;
    int nbuf;
    sc_status_t st;

    if (left < rb)
        return sc_state_bad("truncated", i);
    memcpy(&r, p, rb);
    if (!sc_pairs_dtype_ok((sc_dtype_t)r.dtype) ||
        r.acc != (r.dtype == SC_FLOAT64 ? SC_FLOAT64 : SC_FLOAT32) || (r.flags & ~known) ||
        r.steps < 0 || r.count > SIZE_MAX / 16 || r.origin_size < 0 || r.origin_rank < 0 ||
        (r.origin_size > 0 && r.origin_rank >= r.origin_size) ||
        (r.origin_size == 0 && r.origin_rank != 0) || r.origin_world < -1 ||
        (version >= 5 && (r.origin_size == 0) != (r.origin_world == -1)) || r.reserved != 0)
        return sc_state_bad("a key record out of range", i);
    b = (size_t)r.count * sc_dtype_size((sc_dtype_t)r.acc);
    /* The key's working copy and residual take at least 2 b: a count past this
     * machine's memory is no state sc_compressor_save could have written here. */
    if (b > sc_mem_phys_bytes() / 2)
        return sc_error(SC_ERR_INVALID_ARG, "sc_compressor_load: record %ld gives key %d "
                        "%llu elements, whose working copy and residual (%zu bytes each) "
                        "are more than this machine's memory", i, (int)r.key,
                        (unsigned long long)r.count, b);
    tb = (r.flags & SC_STATE_HAS_THRESHOLD) ? sizeof(t) : 0;
    nbuf = !!(r.flags & SC_STATE_HAS_RESIDUAL) + !!(r.flags & SC_STATE_HAS_MOMENTUM);
    fixed = rb + tb;
    /* Compared buffer by buffer: fixed + nbuf * b may not fit a size_t. */
    if (left < fixed || (nbuf > 0 && b > (left - fixed) / (size_t)nbuf))
        return sc_state_bad("truncated", i);
    need = fixed + (size_t)nbuf * b;
    if (tb) {
        memcpy(&t, p + rb, sizeof(t));
        if (!sc_pairs_dtype_ok((sc_dtype_t)t.dtype) || t.reserved != 0 || t.n > r.count)
            return sc_state_bad("a threshold out of range", i);
    }
    st = sc_ckey_new(c, "sc_compressor_load", r.key, (size_t)r.count, (sc_dtype_t)r.dtype,
                     &k);
    if (st != SC_SUCCESS)
        return st;
    if (tb) {
        k->approx.valid = 1;
        k->approx.dtype = (sc_dtype_t)t.dtype;
        k->approx.n = (size_t)t.n;
        k->approx.key = t.key;
    }
    p += rb + tb;
    if (r.flags & SC_STATE_HAS_RESIDUAL) {
        if (k->residual)
            memcpy(k->residual, p, b);
        p += b;
    }
    if ((r.flags & SC_STATE_HAS_MOMENTUM) && k->momentum)
        memcpy(k->momentum, p, b);
    k->steps = r.steps;
    k->origin_rank = r.origin_rank;
    k->origin_size = r.origin_size;
    k->origin_world = r.origin_world;
    *out = k;
    *used = need;
    return SC_SUCCESS;
}

SC_API sc_status_t sc_compressor_load(sc_compressor_t *c, const void *buf, size_t len)
{
    sc_state_header_t h;
    sc_state_draws_t d = {0, 0};
    sc_topk_draws_t draws;
    sc_ckey_t **keys = NULL, **old;
    const char *p;
    size_t left;
    int n = 0, oldn;
    sc_status_t st = SC_SUCCESS;

    if (!c || !buf)
        return sc_error(SC_ERR_INVALID_ARG, "sc_compressor_load: %s is NULL",
                        !c ? "compressor" : "buf");
    if (len < sizeof(h))
        return sc_state_bad("shorter than the header", -1);
    memcpy(&h, buf, sizeof(h));
    if (memcmp(h.magic, sc_state_magic, sizeof(h.magic)) != 0)
        return sc_state_bad("another magic", -1);
    if (h.version < 1 || h.version > SC_STATE_VERSION)
        return sc_error(SC_ERR_INVALID_ARG, "sc_compressor_load: the state is of format "
                        "version %u; this library reads versions 1 to %u (a state saved by "
                        "a newer shardcomm, or not a state)", h.version, SC_STATE_VERSION);
    if (h.payload != len - sizeof(h))
        return sc_state_bad("truncated or padded", -1);
    if (h.hash != sc_state_hash((const char *)buf + sizeof(h), len - sizeof(h), h.version))
        return sc_state_bad("its hash does not match its contents", -1);
    p = (const char *)buf + sizeof(h);
    left = len - sizeof(h);
    if (h.version >= 2) {
        if (left < sizeof(d))
            return sc_state_bad("truncated", -1);
        memcpy(&d, p, sizeof(d));
        p += sizeof(d);
        left -= sizeof(d);
    }
    if (h.nkeys > left / sc_state_key_record_bytes(h.version))
        return sc_state_bad("more keys than it holds", -1);
    keys = calloc(h.nkeys ? h.nkeys : 1, sizeof(*keys));
    if (!keys)
        return sc_error(SC_ERR_NO_MEMORY, "sc_compressor_load: out of memory");
    for (; n < (int)h.nkeys; n++) {
        size_t used = 0;
        st = sc_state_parse_key(c, h.version, p, left, n, &keys[n], &used);
        if (st != SC_SUCCESS)
            goto err_free;
        for (int j = 0; j < n && st == SC_SUCCESS; j++)
            if (keys[j]->key == keys[n]->key)
                st = sc_state_bad("a key twice", n);
        if (st != SC_SUCCESS) {
            sc_ckey_free(keys[n]);
            goto err_free;
        }
        p += used;
        left -= used;
    }
    if (left != 0) {
        st = sc_state_bad("bytes after the last record", -1);
        goto err_free;
    }
    draws.approx_samples = d.approx_samples;
    draws.random_calls = d.random_calls;
    pthread_mutex_lock(&c->lock);
    old = c->keys;
    oldn = c->nkeys;
    c->keys = keys;
    c->nkeys = n;
    c->keys_cap = n;
    sc_topk_draws_set(c->topk, &draws);
    pthread_mutex_unlock(&c->lock);
    keys = old;
    n = oldn;
err_free:
    for (int j = 0; j < n; j++)
        sc_ckey_free(keys[j]);
    free(keys);
    return st;
}

SC_API sc_status_t sc_compressor_reset(sc_compressor_t *c)
{
    if (!c)
        return sc_error(SC_ERR_INVALID_ARG, "sc_compressor_reset: compressor is NULL");
    /* Every key dropped, not only zeroed: a key loaded from another compressor's state
     * (another count or dtype) would otherwise refuse every later call. */
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->nkeys; i++)
        sc_ckey_free(c->keys[i]);
    c->nkeys = 0;
    pthread_mutex_unlock(&c->lock);
    return SC_SUCCESS;
}

void sc_compressor_realign(sc_ckey_t *k, long steps)
{
    size_t bytes = (k->count ? k->count : 1) * sc_dtype_size(k->acc);

    if (k->residual)
        memset(k->residual, 0, bytes);
    if (k->momentum)
        memset(k->momentum, 0, bytes);
    k->steps = steps;
}
