/* The reducer tests' float16 conversions (reducer_test.h: rt_half_store, rt_half_load,
 * by bits where the value is a normal float16) against the compiler's: equal bit for bit
 * for every float16, the doubles next to each, and doubles of every exponent. Unit test,
 * one process. */
#include "reducer_test.h"

static uint16_t half_bits(_Float16 f)
{
    uint16_t h;

    memcpy(&h, &f, 2);
    return h;
}

/* Whether rt_half_store(v) is the cast's; the first few that are not printed. */
static int stores_as_the_cast(double v)
{
    static int printed;
    uint16_t want = half_bits((_Float16)v), got = rt_half_store(v);

    if (got == want || v != v) /* NaN: any NaN */
        return 1;
    if (printed++ < 8)
        printf("FAIL: rt_half_store(%a) is 0x%04x, the cast gives 0x%04x\n", v, got, want);
    return 0;
}

int main(void)
{
    long bad = 0;

    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t b = (uint16_t)h;
        _Float16 f;
        double want, got;
        uint64_t bits;

        memcpy(&f, &b, 2);
        want = (double)f;
        got = rt_half_load(b);
        if (memcmp(&got, &want, 8) != 0 && bad++ < 8)
            printf("FAIL: rt_half_load(0x%04x) is %a, the cast gives %a\n", b, got, want);
        /* The value itself and the doubles beside it, which round. */
        memcpy(&bits, &want, 8);
        for (int d = -3; d <= 3; d++) {
            uint64_t nb = bits + (uint64_t)(int64_t)d;
            double v;
            memcpy(&v, &nb, 8);
            bad += !stores_as_the_cast(v);
        }
    }
    for (int x = -30; x <= 20; x++)
        for (uint64_t i = 0; i < 4096; i++)
            bad += !stores_as_the_cast(ldexp(1.0 + (double)rt_mix(i) / 0x1p64, x) *
                                       (i % 2 ? -1 : 1));
    if (bad) {
        printf("%ld conversions differ\n", bad);
        return 1;
    }
    printf("float16 conversions equal the cast's\n");
    return 0;
}
