/* Context ids: which ids the live communicators of this process hold, and the
 * agreement of a parent's ranks on an id for a new communicator.
 *
 * Ids no rank has used go first, in order (tp->next_ctx: every id below it has been
 * used here). Once a rank of the parent has used all 4095, the ranks pick an id that no
 * live communicator holds on any of them, in turn from the last id reused (the id a
 * communicator just gave back is reused last), with a generation they agree on: the
 * largest of a random number each rank draws. The new communicator's control tag
 * carries the generation and its sequence numbers start from it, so that an abort
 * notice or a wake-up that an earlier holder of the id left in flight, or in UCX's queue
 * of unexpected messages, never matches its receives. Data messages carry the sequence
 * number, not the generation: those an earlier holder left in the queue are dropped when
 * the id is taken again (sc_ucx_purge_ctx), before the ranks agree that all took it, so
 * that none can meet the new communicator's receives once 2^18 sequence numbers come
 * round. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectives/transport_ucx.h"
#include "core/clock.h"
#include "core/comm_ctx.h"
#include "core/progress_settle.h"
#include "shardcomm/collectives.h"

#define SC_CTX_IDS (SC_CTX_MAX + 1u)

int sc_comm_ctx_held(const sc_transport_t *tp, uint32_t ctx)
{
    return (int)((tp->ctx_live[ctx / 64] >> (ctx % 64)) & 1u);
}

void sc_comm_ctx_release(sc_transport_t *tp, uint32_t ctx)
{
    pthread_mutex_lock(&tp->lock);
    tp->ctx_live[ctx / 64] &= ~(1ull << (ctx % 64));
    pthread_mutex_unlock(&tp->lock);
}

void sc_comm_ctx_start(sc_comm_t *c, uint32_t ctx, uint32_t gen)
{
    uint64_t first = gen & SC_TAG_SEQ_MASK;

    c->ctx = ctx;
    c->gen = gen;
    c->seq = first;
    for (int r = 0; r < c->size; r++)
        c->send_seq[r] = c->recv_seq[r] = first;
}

/* A positive 31-bit number that differs between processes and calls. */
static int32_t sc_ctx_draw(const sc_transport_t *tp)
{
    static uint64_t calls;
    uint64_t x = (uint64_t)(sc_clock_now() * 1e9) ^ ((uint64_t)getpid() << 32) ^
                 ((uint64_t)tp->world_rank << 48) ^
                 (__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) * 0x9e3779b97f4a7c15ull);

    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (int32_t)(x & 0x7fffffffu);
}

/* Takes ctx unless a communicator of tp holds it, or (fresh) it is below next_ctx:
 * another split on another thread may have taken it since the ranks looked. */
static int sc_ctx_take(sc_transport_t *tp, uint32_t ctx, int fresh)
{
    int took;

    pthread_mutex_lock(&tp->lock);
    took = !sc_comm_ctx_held(tp, ctx) && (!fresh || ctx >= tp->next_ctx);
    if (took) {
        tp->ctx_live[ctx / 64] |= 1ull << (ctx % 64);
        if (fresh) {
            tp->next_ctx = ctx + 1;
        } else {
            tp->ctx_cursor = ctx;
            /* Before any rank can use it: the ranks' agreement that all took it follows. */
            sc_ucx_purge_ctx(tp, ctx);
            sc_settle_drain_end(tp, ctx);
        }
    }
    pthread_mutex_unlock(&tp->lock);
    return took;
}

/* The ranks' proposal of an id no live communicator holds on any of them: view[id]
 * nonzero where some rank holds id, view[SC_CTX_IDS] the largest cursor, view[SC_CTX_IDS
 * + 1] the largest draw. 0 when every id is held. */
static uint32_t sc_ctx_pick_reused(const int32_t *view)
{
    uint32_t cursor = (uint32_t)view[SC_CTX_IDS] % SC_CTX_IDS;

    for (uint32_t i = 1; i <= SC_CTX_MAX; i++) {
        uint32_t id = (cursor + i) % SC_CTX_IDS;
        if (id != 0 && view[id] == 0)
            return id;
    }
    return 0;
}

sc_status_t sc_comm_ctx_agree(sc_comm_t *comm, uint32_t *out_ctx, uint32_t *out_gen)
{
    sc_transport_t *tp = comm->tp;
    int32_t *mine = NULL, *view = NULL; /* 16 KiB each, once the ids are all used */
    int32_t took, all_took = 0;
    uint32_t ctx = 0, gen = 0;
    sc_status_t st = SC_SUCCESS;

    for (int round = 0; !all_took; round++) {
        int32_t next, most;
        int fresh;

        /* A split of another communicator on another thread may take the id between the
         * proposal and the taking (on some ranks and not others); then every rank
         * proposes again, after a pause that grows with the rounds and differs with
         * comm's own id, so that the two splits stop meeting at the same moment. */
        if (round > 0)
            usleep((useconds_t)(round < 20 ? round : 20) * 50u * (1u + comm->ctx % 7u));
        pthread_mutex_lock(&tp->lock);
        next = (int32_t)tp->next_ctx;
        pthread_mutex_unlock(&tp->lock);
        st = sc_allreduce(&next, &most, 1, SC_INT32, SC_MAX, comm, NULL, NULL);
        if (st != SC_SUCCESS)
            break;
        fresh = (uint32_t)most <= SC_CTX_MAX;
        if (fresh) {
            ctx = (uint32_t)most;
            gen = 0;
        } else {
            /* Every id has been used on some rank: one that none holds now. */
            if (!mine) {
                mine = malloc(2 * (SC_CTX_IDS + 2) * sizeof(int32_t));
                view = mine + SC_CTX_IDS + 2;
            }
            if (!mine) {
                /* This rank cannot take part: the others learn it from the abort
                 * rather than waiting. */
                sc_comm_abort(comm);
                st = sc_error(SC_ERR_NO_MEMORY, "sc_comm_split: out of memory on rank %d",
                              comm->rank);
                break;
            }
            pthread_mutex_lock(&tp->lock);
            for (uint32_t id = 0; id < SC_CTX_IDS; id++)
                mine[id] = sc_comm_ctx_held(tp, id);
            mine[SC_CTX_IDS] = (int32_t)tp->ctx_cursor;
            pthread_mutex_unlock(&tp->lock);
            mine[SC_CTX_IDS + 1] = sc_ctx_draw(tp);
            st = sc_allreduce(mine, view, SC_CTX_IDS + 2, SC_INT32, SC_MAX, comm, NULL, NULL);
            if (st != SC_SUCCESS)
                break;
            ctx = sc_ctx_pick_reused(view);
            if (ctx == 0) {
                st = sc_error(SC_ERR_UNSUPPORTED,
                              "sc_comm_split: every context id (4095) is held by a live "
                              "communicator on some rank of this communicator: destroy "
                              "communicators that are no longer used (sc_comm_destroy)");
                break;
            }
            gen = (uint32_t)view[SC_CTX_IDS + 1] | 1u;
        }
        took = sc_ctx_take(tp, ctx, fresh);
        st = sc_allreduce(&took, &all_took, 1, SC_INT32, SC_MIN, comm, NULL, NULL);
        if (st != SC_SUCCESS || !all_took) {
            /* Not taken everywhere: given back here (a fresh id stays used: next_ctx
             * has passed it, and it comes back among the reused ones). */
            if (took)
                sc_comm_ctx_release(tp, ctx);
            if (st != SC_SUCCESS)
                break;
        }
    }
    free(mine);
    if (st != SC_SUCCESS)
        return st;
    *out_ctx = ctx;
    *out_gen = gen;
    return SC_SUCCESS;
}
