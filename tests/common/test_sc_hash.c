/* The tests' hash (sc_hash.h) against the changes it must tell apart: every flip of up
 * to three bits in two neighbouring words, and of up to two anywhere in a buffer with a
 * tail. Unit test, one process. */
#include <stdio.h>

#include "sc_hash.h"

#define BYTES 43 /* five words and a tail of three bytes */

static void flip(unsigned char *b, int bit)
{
    b[bit / 8] ^= (unsigned char)(1u << (bit % 8));
}

/* Whether flipping the n bits of `bits` in b changes its hash h0 (b left as it was);
 * printed if not. */
static int flips_change_hash(unsigned char *b, uint64_t h0, const int *bits, int n)
{
    uint64_t h;

    for (int i = 0; i < n; i++)
        flip(b, bits[i]);
    h = sc_test_hash(SC_TEST_HASH_INIT, b, BYTES);
    for (int i = 0; i < n; i++)
        flip(b, bits[i]);
    if (h != h0)
        return 1;
    printf("FAIL: flipping bits");
    for (int i = 0; i < n; i++)
        printf(" %d", bits[i]);
    printf(" (bit 0: byte 0's lowest) leaves the hash 0x%016llx\n", (unsigned long long)h0);
    return 0;
}

/* Every set of one to `most` (2 or 3) distinct bits of [lo, hi) flipped changes the
 * hash of b: the number of sets that do not. */
static int flip_sets_missed(unsigned char *b, int lo, int hi, int most)
{
    uint64_t h0 = sc_test_hash(SC_TEST_HASH_INIT, b, BYTES);
    int missed = 0;

    for (int x = lo; x < hi; x++) {
        missed += !flips_change_hash(b, h0, (int[]){x}, 1);
        for (int y = x + 1; y < hi; y++) {
            missed += !flips_change_hash(b, h0, (int[]){x, y}, 2);
            for (int z = y + 1; most > 2 && z < hi; z++)
                missed += !flips_change_hash(b, h0, (int[]){x, y, z}, 3);
        }
    }
    return missed;
}

int main(void)
{
    unsigned char b[BYTES];
    uint64_t s = 0x9e3779b97f4a7c15ull;
    int failures = 0;

    for (int seed = 0; seed < 3; seed++) {
        for (int i = 0; i < BYTES; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            b[i] = (unsigned char)(s >> 56);
        }
        failures += flip_sets_missed(b, 0, BYTES * 8, 2);
        /* Words 1 and 2: a flipped top bit of word 1 with bits 63 and 34 of word 2 is
         * what an unmixed word-wise FNV-1a with the fold misses, whatever the data. */
        failures += flip_sets_missed(b, 64, 192, 3);
    }
    printf("%s: %d sets of flips left the hash unchanged\n", failures ? "FAIL" : "PASS",
           failures);
    return failures ? 1 : 0;
}
