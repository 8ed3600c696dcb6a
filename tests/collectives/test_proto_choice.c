/* The choice between eager and rendezvous sends (collectives/proto_choice.h), driven
 * with made-up costs: which messages it applies to, the forced modes, the warm-up, the
 * cheaper protocol taken with exactly one op in SC_PROTO_EXPLORE_EVERY trying the other,
 * and a change of the costs (the machine's state) followed within a few tries. */
#include <stdio.h>
#include <string.h>

#include "collectives/proto_choice.h"

#define SC_CHECK_RANK 0
#include "../common/sc_check.h"
#include "../common/sc_test_runner.h"

#define NELEM(x) (sizeof(x) / sizeof((x)[0]))
#define KIB ((size_t)1024)

/* One communicator's op counts (sc_proto_choose's ops), fresh with each fresh choice. */
static uint32_t g_ops[SC_PROTO_CLASSES];

static void fresh(sc_proto_t *p)
{
    memset(p, 0, sizeof(*p));
    memset(g_ops, 0, sizeof(g_ops));
}

static int choose(const sc_proto_t *p, int cls, int agreed_eager)
{
    return sc_proto_choose(p, g_ops, cls, agreed_eager);
}

/* Runs n ops of class cls whose cost per byte is eager_cost or rndv_cost; counts the
 * eager ones in *eager_ops. */
static void run_ops(sc_proto_t *p, int cls, int n, double rndv_cost, double eager_cost,
                    int *eager_ops)
{
    for (int i = 0; i < n; i++) {
        int e = choose(p, cls, (sc_proto_prefs(p) >> cls) & 1);
        *eager_ops += e;
        sc_proto_record(p, cls, e, (e ? eager_cost : rndv_cost) * 65536.0, 65536);
    }
}

static int test_classes_cover_8_to_128_kib_by_the_largest_message(void)
{
    static const struct {
        size_t bytes;
        int cls;
    } cases[] = {{0, -1},         {8 * KIB, -1},     {8 * KIB + 1, 0}, {16 * KIB, 0},
                 {16 * KIB + 1, 1}, {32 * KIB, 1},   {64 * KIB, 2},    {64 * KIB + 1, 3},
                 {128 * KIB, 3},  {128 * KIB + 1, -1}, {256 * KIB, -1}};

    for (size_t i = 0; i < NELEM(cases); i++)
        CHECK(sc_proto_class_of(cases[i].bytes) == cases[i].cls, "%zu bytes: class %d, "
              "expected %d", cases[i].bytes, sc_proto_class_of(cases[i].bytes), cases[i].cls);
    return 0;
}

static int test_forced_modes_ignore_the_costs(void)
{
    sc_proto_t on = {.mode = SC_PROTO_EAGER_ON}, off = {.mode = SC_PROTO_EAGER_OFF};
    int eager_on = 0, eager_off = 0;

    run_ops(&on, 2, 100, 1.0, 5.0, &eager_on);
    run_ops(&off, 2, 100, 5.0, 1.0, &eager_off);
    CHECK(eager_on == 100 && eager_off == 0, "on: %d eager of 100, off: %d", eager_on,
          eager_off);
    CHECK(choose(&on, -1, 0) == 1 && choose(&off, -1, 1) == 0,
          "no class: as forced");
    return 0;
}

/* Warm-up: the two in turn, rendezvous first; with eager cheaper it is taken from then
 * on, the rendezvous tried once per SC_PROTO_EXPLORE_EARLY ops up to SC_PROTO_EARLY_OPS,
 * then once per SC_PROTO_EXPLORE_EVERY. */
static int test_cheaper_eager_is_taken_and_rendezvous_tried_now_and_then(void)
{
    sc_proto_t p;
    int warm = 0, early = 0, later = 0;

    fresh(&p);
    CHECK(choose(&p, 1, 0) == 0 && choose(&p, 1, 0) == 1, "warm-up order");
    fresh(&p);
    run_ops(&p, 1, 2 * SC_PROTO_WARMUP, 1.0, 0.7, &warm);
    CHECK(warm == SC_PROTO_WARMUP, "%d eager ops in the warm-up", warm);
    run_ops(&p, 1, SC_PROTO_EARLY_OPS - 2 * SC_PROTO_WARMUP, 1.0, 0.7, &early);
    CHECK(early == (SC_PROTO_EARLY_OPS - 2 * SC_PROTO_WARMUP) -
                       (SC_PROTO_EARLY_OPS - 2 * SC_PROTO_WARMUP) / SC_PROTO_EXPLORE_EARLY,
          "%d eager ops of the first %d after the warm-up", early,
          SC_PROTO_EARLY_OPS - 2 * SC_PROTO_WARMUP);
    run_ops(&p, 1, 10 * SC_PROTO_EXPLORE_EVERY, 1.0, 0.7, &later);
    CHECK(later == 10 * SC_PROTO_EXPLORE_EVERY - 10, "%d eager ops of %d later", later,
          10 * SC_PROTO_EXPLORE_EVERY);
    return 0;
}

/* Costs within the switching margin keep the rendezvous (the default); classes are
 * independent. */
static int test_similar_costs_keep_the_rendezvous_and_classes_are_apart(void)
{
    sc_proto_t p;
    int e0 = 0, e3 = 0;

    fresh(&p);
    run_ops(&p, 0, SC_PROTO_EARLY_OPS + 20 * SC_PROTO_EXPLORE_EVERY, 1.0, 0.9, &e0);
    run_ops(&p, 3, 20 * SC_PROTO_EXPLORE_EVERY, 1.0, 0.5, &e3);
    CHECK(e0 == SC_PROTO_WARMUP + (SC_PROTO_EARLY_OPS - 2 * SC_PROTO_WARMUP) /
                                      SC_PROTO_EXPLORE_EARLY + 20,
          "class 0 (eager 0.9x): %d eager ops", e0);
    CHECK(e3 > 18 * SC_PROTO_EXPLORE_EVERY, "class 3 (eager 0.5x): %d eager ops", e3);
    return 0;
}

/* Eager preferred, then it becomes 3x the rendezvous (the cores no longer share a
 * cache): the rendezvous is back within three tries; eager again within four tries
 * once it is cheaper again. */
static int test_a_change_of_costs_is_followed(void)
{
    sc_proto_t p;
    int eager = 0, after = 0, back = 0;

    fresh(&p);
    run_ops(&p, 2, SC_PROTO_EARLY_OPS, 1.0, 0.7, &eager);
    CHECK(p.cls[2].eager == 1, "eager not preferred at 0.7x");
    run_ops(&p, 2, 3 * SC_PROTO_EXPLORE_EVERY, 1.0, 3.0, &after);
    CHECK(p.cls[2].eager == 0, "still eager at 3x after %d ops", 3 * SC_PROTO_EXPLORE_EVERY);
    after = 0;
    run_ops(&p, 2, 10 * SC_PROTO_EXPLORE_EVERY, 1.0, 3.0, &after);
    CHECK(after == 10, "%d eager ops of %d at 3x, expected the 10 tries", after,
          10 * SC_PROTO_EXPLORE_EVERY);
    run_ops(&p, 2, 4 * SC_PROTO_EXPLORE_EVERY, 1.0, 0.6, &back);
    CHECK(p.cls[2].eager == 1, "eager not back at 0.6x");
    return 0;
}

/* What the ranks agreed decides, not this rank's preference alone: a rank that prefers
 * eager sends by rendezvous while a neighbour does not (mixed, a 2-rank all-gather ran
 * at 0.55-0.6x), and the tries flip the agreed protocol on every rank alike. */
static int test_the_agreed_protocol_is_used_and_tries_flip_it(void)
{
    sc_proto_t p;
    int eager = 0;

    fresh(&p);
    run_ops(&p, 2, SC_PROTO_EARLY_OPS, 1.0, 0.5, &eager);
    CHECK(sc_proto_prefs(&p) == 1u << 2, "prefs 0x%x, expected class 2 eager",
          (unsigned)sc_proto_prefs(&p));
    for (int i = 0; i < 2 * SC_PROTO_EXPLORE_EVERY; i++) {
        uint32_t n = g_ops[2];
        int tried = n % SC_PROTO_EXPLORE_EVERY == 0;
        CHECK(choose(&p, 2, 0) == tried, "op %u with rendezvous agreed", n);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const sc_test_t tests[] = {
        SC_TEST(classes_cover_8_to_128_kib_by_the_largest_message),
        SC_TEST(forced_modes_ignore_the_costs),
        SC_TEST(cheaper_eager_is_taken_and_rendezvous_tried_now_and_then),
        SC_TEST(similar_costs_keep_the_rendezvous_and_classes_are_apart),
        SC_TEST(a_change_of_costs_is_followed),
        SC_TEST(the_agreed_protocol_is_used_and_tries_flip_it),
    };
    return sc_run_tests(tests, NELEM(tests), argc > 1 ? argv[1] : NULL);
}
