/* The hash by which the multi-rank tests compare results across ranks and find a
 * buffer the library must not write (a const sendbuf) changed. */
#ifndef SC_TESTS_HASH_H
#define SC_TESTS_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SC_TEST_HASH_INIT 0xcbf29ce484222325ull

/* FNV-1a over 8-byte words, then the tail bytes, each multiply followed by
 * h ^= h >> 29. Byte by byte, FNV-1a spent most of the collective tests' time on 2 cores
 * (a multiply's latency per byte of a 64 MiB result); a word at a time it costs a sixth
 * of that. Each step maps h one to one for a given word, so two buffers that differ in
 * one word always hash apart, as with bytes; the fold carries a word's high bits down,
 * without which two flipped sign bits would cancel. Each word is mixed first
 * (w ^= w >> 32, w *= an odd constant; off h's chain of multiplies, so it costs no
 * latency): unmixed, a flipped top bit of a word left h changed by a fixed pattern
 * (bits 63 and 34) that the next word's same flips undid, whatever the data, where
 * the byte-wise hash told them apart. h: SC_TEST_HASH_INIT, or an earlier buffer's
 * hash to chain. */
static inline uint64_t sc_test_hash(uint64_t h, const void *p, size_t bytes)
{
    const unsigned char *q = p;
    size_t i = 0;
    uint64_t w;

    for (; i + 8 <= bytes; i += 8) {
        memcpy(&w, q + i, 8);
        w = (w ^ (w >> 32)) * 0xbf58476d1ce4e5b9ull;
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < bytes; i++) {
        h = (h ^ q[i]) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h;
}

#endif
