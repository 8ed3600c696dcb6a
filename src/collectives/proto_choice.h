/* Eager or rendezvous for a collective's data messages of 8-128 KiB between the ranks of
 * one node, chosen by each sender from what it measures. */
#ifndef SC_COLLECTIVES_PROTO_CHOICE_H
#define SC_COLLECTIVES_PROTO_CHOICE_H

#include <stddef.h>
#include <stdint.h>

/* Messages above UCX's own eager size on shared memory (8 KiB here) and up to this
 * size may go eagerly (UCX's FIFO, 8 KiB pieces) instead of a rendezvous (a handshake,
 * then one CMA copy). Larger ones, point-to-point chunks included, always take the
 * rendezvous: eager 256 KiB chunks halved a 4 MiB exchange (docs/benchmarks.md). */
#define SC_PROTO_MIN_BYTES ((size_t)8 * 1024)
#define SC_PROTO_MAX_BYTES ((size_t)128 * 1024)
/* Size classes, by the op's largest data message: (8, 16], (16, 32], (32, 64] and
 * (64, 128] KiB. */
#define SC_PROTO_CLASSES 4
/* One op of a class in this many takes the protocol not preferred, so that a change of
 * the machine's state (the cores sharing a cache or not) is seen; each communicator
 * counts its own ops (every rank of it counts the same ones, whatever splits of it also
 * ran), so the ranks of a communicator try it on the same op. More often over
 * a class's first ops: the first ones of a process are slow for other reasons (pages,
 * caches; 20-30 us against 12-20 later for a 256 KiB all-gather here), and the warm-up's
 * figures must be replaced by steady ones soon. */
#define SC_PROTO_EXPLORE_EVERY 32
#define SC_PROTO_EXPLORE_EARLY 4
#define SC_PROTO_EARLY_OPS 128
/* Samples of each protocol taken in turn before the first choice. */
#define SC_PROTO_WARMUP 4
/* The other protocol takes over when its cost is below this fraction of the preferred
 * one's. */
#define SC_PROTO_SWITCH_BELOW 0.85

typedef enum { SC_PROTO_AUTO = 0, SC_PROTO_EAGER_OFF, SC_PROTO_EAGER_ON } sc_proto_mode_t;

typedef struct {
    double cost[2];      /* smoothed seconds per byte: [0] rendezvous, [1] eager */
    uint32_t samples[2];
    uint8_t eager;       /* the preferred protocol */
} sc_proto_class_t;

typedef struct {
    sc_proto_mode_t mode;
    sc_proto_class_t cls[SC_PROTO_CLASSES];
} sc_proto_t;

/* The class of an op whose largest data message has max_msg bytes, or -1 when the
 * choice does not apply to it. */
int sc_proto_class_of(size_t max_msg);

/* The classes this rank prefers to send eagerly, a bit each, for its headers. */
uint8_t sc_proto_prefs(const sc_proto_t *p);

/* Whether the next op of class cls sends eagerly (1) or by rendezvous (0), given what
 * the ranks agreed on (agreed_eager: every one of them preferred eager). The warm-up and
 * the tries of the other protocol follow ops[cls], the communicator's count of its ops of
 * each class (SC_PROTO_CLASSES of them), the same on every rank of it; counts this op. */
int sc_proto_choose(const sc_proto_t *p, uint32_t *ops, int cls, int agreed_eager);

/* What an op of class cls that sent eagerly (or not) cost: seconds from its start to
 * its completion, for bytes of data. */
void sc_proto_record(sc_proto_t *p, int cls, int eager, double seconds, size_t bytes);

#endif
