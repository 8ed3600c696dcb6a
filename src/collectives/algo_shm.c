/* Algorithms on registered memory (sc_mem_alloc) for communicators whose ranks all map
 * each other's segments: every rank reads its peers' buffers in place. Allreduce: rank
 * b reduces block b from every rank's send buffer into its receive buffer, chunk by
 * chunk, writes each final chunk into every peer's receive buffer and tells them so
 * (with delivered ranges the peers copy it instead, see push below). Reduce-scatter:
 * each rank reduces its own block from every send buffer. All-gather: each rank copies
 * every block from its owner. Reduce: the root reduces from every send buffer.
 * Broadcast: every rank copies from the root's receive buffer. Alltoall: every rank
 * copies its block from every send buffer. Messages carry no data, only "entered" (for ranks that
 * are not ring neighbours: a neighbour's header says it already), "chunk final" and
 * "done reading your memory", which a rank waits for from every peer whose reads of its
 * memory nothing else bounds, so that no buffer is reused while a peer still reads it. */
#include <stdlib.h>

#include "collectives/algo_common.h"
#include "collectives/shm_segment.h"

#define SC_SHM_SUB_ENTER 0xfffe
#define SC_SHM_SUB_DONE 0xffff
/* Chunk subs stay below the two above. */
#define SC_SHM_MAX_CHUNKS 0xfff0

/* Where the zero-byte messages point: never read or written. */
static uint8_t sc_shm_sig;

typedef struct {
    int p, me;
    size_t es;
    size_t ce;  /* elements per chunk */
    int nch;    /* chunks of the largest block */
    int enter;  /* the action after which every peer is known to have entered, or -1 */
    int stream; /* final results stored non-temporally (sc_shm_streams) */
    /* Message subs: chunk c's is sub_chunk + c; "entered" and "done reading" have their
     * own (a staged op through several windows gives each window its own range). */
    unsigned sub_chunk, sub_enter, sub_done;
} sc_shm_plan_t;

/* Whether an op over `bytes` of input per rank stores its final results with
 * non-temporal stores: from SC_STREAM_BYTES up (16 MiB), far larger than the caches, a
 * result written the usual way costs a read of its line first and evicts inputs still
 * to be read; below, results stay in cache, where a later call finds them. Not an
 * average, which reads the result again to divide it, nor results written over the
 * inputs just read (over_inputs: in place), whose lines are in cache already: there
 * streaming saves no read and costs the next reader a miss (a 2-rank in-place
 * allreduce of registered memory: 16 MiB 0.67-0.75 against 1.69 ms streamed, 256 MiB
 * 19-22 against 36-37 ms). */
static int sc_shm_streams(const sc_coll_op_t *op, size_t bytes, int over_inputs)
{
    const sc_tuning_t *t;
    size_t min = sc_tuning_get(&t) == SC_SUCCESS ? t->stream_bytes : (size_t)16 << 20;

    return bytes >= min && op->redop != SC_AVG && !over_inputs;
}

/* A copy into this rank's output, streamed when g->stream. */
static int sc_shm_copy_out(sc_coll_op_t *op, const sc_shm_plan_t *g, void *dst, const void *src,
                           size_t bytes, int dep0, int dep1)
{
    return g->stream ? sc_op_copy_streamed(op, dst, src, bytes, dep0, dep1)
                     : sc_op_copy(op, dst, src, bytes, dep0, dep1);
}

/* g for blocks of block_elems in at most max_chunks chunks each. */
static void sc_shm_plan_chunks(sc_coll_op_t *op, sc_shm_plan_t *g, size_t block_elems,
                               size_t max_chunks)
{
    g->stream = 0;
    g->p = op->comm->size;
    g->me = op->comm->rank;
    g->es = sc_dtype_size(op->dtype);
    g->ce = sc_chunk_elems(g->es);
    if ((block_elems + g->ce - 1) / g->ce > max_chunks)
        g->ce = (block_elems + max_chunks - 1) / max_chunks;
    g->nch = (int)((block_elems + g->ce - 1) / g->ce);
    g->enter = -1;
    g->sub_chunk = 0;
    g->sub_enter = SC_SHM_SUB_ENTER;
    g->sub_done = SC_SHM_SUB_DONE;
}

static void sc_shm_plan(sc_coll_op_t *op, sc_shm_plan_t *g, size_t block_elems)
{
    sc_shm_plan_chunks(op, g, block_elems, SC_SHM_MAX_CHUNKS);
}

/* An empty local action, done once dep0 and dep1 are and, being local work, once the
 * neighbours' headers agreed with this rank's: joins two dependencies into one. */
static int sc_shm_gate(sc_coll_op_t *op, int dep0, int dep1)
{
    return sc_op_copy(op, &sc_shm_sig, &sc_shm_sig, 0, dep0, dep1);
}

/* Ring neighbours' headers say they entered the op; the other peers say so with a
 * message, g->enter is done once every peer entered. A rank says so only once its own
 * neighbours' headers agreed with its own (the gate): so every rank that hears from all its peers knows that every pair of
 * ring neighbours agreed, hence every rank passed the same segments and offsets, and
 * no rank writes into memory a peer did not pass. */
static void sc_shm_enter(sc_coll_op_t *op, sc_shm_plan_t *g)
{
    int left = sc_mod(g->me - 1, g->p), right = sc_mod(g->me + 1, g->p), agreed = -1;

    if (g->p > 3)
        agreed = sc_shm_gate(op, -1, -1);
    for (int q = 0; q < g->p; q++)
        if (q != g->me && q != left && q != right)
            sc_op_send(op, q, (uint16_t)g->sub_enter, &sc_shm_sig, 0, agreed, -1);
    for (int q = 0; q < g->p; q++)
        if (q != g->me && q != left && q != right)
            g->enter = sc_op_recv(op, q, (uint16_t)g->sub_enter, &sc_shm_sig, 0, g->enter, -1);
}

/* Every algorithm's opening: the op marked as this algorithm, g planned for blocks of
 * block_elems, and the "entered" messages appended. */
static void sc_shm_begin(sc_coll_op_t *op, sc_shm_plan_t *g, size_t block_elems)
{
    op->hdr.algo = SC_ALGO_SHM;
    sc_shm_plan(op, g, block_elems);
    sc_shm_enter(op, g);
}

/* dst = op over ranks of in(q), len elements; returns the last action. in_mine is this
 * rank's input (which dst may be: in place), peer inputs come from ref at byte offset
 * delta. The order starts at this rank and goes right: fixed for each block, since only
 * its owner reduces it, and this rank's input is read before dst is written. With
 * g->stream the last step stores the result non-temporally, into dst2 as well unless
 * it is NULL. */
static int sc_shm_reduce_chunk(sc_coll_op_t *op, const sc_shm_plan_t *g, void *dst, void *dst2,
                               const void *in_mine, const sc_shm_ref_t *ref, uint64_t delta,
                               size_t len, int dep)
{
    int d = dep;

    for (int i = 1; i < g->p; i++) {
        int q = (g->me + i) % g->p;
        const void *a = i == 1 ? in_mine : dst;
        const void *b = sc_shm_peer_ptr(ref, q, delta);
        /* A pre-scaled allreduce scales every input inside the reduction. */
        int scaled = op->prescale == 0.0 ? 0 : i == 1 ? 3 : 2;

        if (g->stream && i == g->p - 1)
            d = sc_op_reduce_streamed(op, dst, dst2, a, b, len, scaled, d, -1);
        else
            d = sc_op_reduce_scaled(op, dst, a, b, len, scaled, d, -1);
    }
    if (op->redop == SC_AVG)
        d = sc_op_avg(op, dst, len, d);
    return d;
}

/* A zero-byte message sub to every rank but skip, after actions dep0 and dep1. */
static void sc_shm_tell_all(sc_coll_op_t *op, const sc_shm_plan_t *g, int skip, uint16_t sub,
                            int dep0, int dep1)
{
    for (int q = 0; q < g->p; q++)
        if (q != skip)
            sc_op_send(op, q, sub, &sc_shm_sig, 0, dep0, dep1);
}

/* Waits for message sub from every rank but skip. With join, returns an action done
 * once every one arrived (gates joining the receives); else -1, appending no more. */
static int sc_shm_hear_all(sc_coll_op_t *op, const sc_shm_plan_t *g, int skip, uint16_t sub,
                           int join)
{
    int all = -1;

    for (int q = 0; q < g->p; q++) {
        int r;
        if (q == skip)
            continue;
        r = sc_op_recv(op, q, sub, &sc_shm_sig, 0, -1, -1);
        if (join)
            all = all < 0 ? r : sc_shm_gate(op, all, r);
    }
    return all;
}

/* Bytes [src, src + bytes) of a plain send buffer, copied to offset dst of this rank's
 * staging input area. */
typedef struct {
    size_t dst, src, bytes;
} sc_stage_copy_t;

/* The opening of one window of an algorithm on plain memory through the staging
 * segment (g planned): the copies of sbuf into this rank's input area (sin) appended
 * after action after (the previous window's "done reading" from every peer, or -1;
 * local actions, they also wait for the neighbours' headers to agree, as
 * sc_shm_enter's gate does), then "staged" told to and heard from every peer,
 * neighbours included (their headers say they entered, not that their copies are
 * done): g->enter is done once every peer's copies are, and so its neighbours agreed,
 * and not before after. */
static void sc_shm_begin_staged(sc_coll_op_t *op, sc_shm_plan_t *g, const void *sbuf,
                                const sc_shm_ref_t *sin, const sc_stage_copy_t *copies,
                                int ncopies, int after)
{
    uint8_t *in = sc_shm_peer_ptr(sin, g->me, 0);
    int last = after;

    op->hdr.algo = SC_ALGO_STAGED;
    for (int i = 0; i < ncopies; i++)
        if (copies[i].bytes)
            last = sc_op_copy(op, in + copies[i].dst, SC_CBYTES(sbuf) + copies[i].src,
                              copies[i].bytes, last, -1);
    if (last < 0 || last == after)
        last = sc_shm_gate(op, after, -1);
    sc_shm_tell_all(op, g, g->me, (uint16_t)g->sub_enter, last, -1);
    g->enter = after;
    for (int q = 0; q < g->p; q++)
        if (q != g->me)
            g->enter = sc_op_recv(op, q, (uint16_t)g->sub_enter, &sc_shm_sig, 0, g->enter, -1);
}

/* Tells every peer this rank is done reading its memory (after action last, and
 * last_from[q] for peer q when given) and waits for every peer to say the same; with
 * join, returns the action done once every peer did (a staged window's successor
 * waits for it), else -1. */
static int sc_shm_finish(sc_coll_op_t *op, sc_shm_plan_t *g, const int *last_from, int last,
                         int join)
{
    if (last_from) {
        for (int q = 0; q < g->p; q++)
            if (q != g->me)
                sc_op_send(op, q, (uint16_t)g->sub_done, &sc_shm_sig, 0, last_from[q], last);
    } else {
        sc_shm_tell_all(op, g, g->me, (uint16_t)g->sub_done, last, -1);
    }
    return sc_shm_hear_all(op, g, g->me, (uint16_t)g->sub_done, join);
}

/* The allreduce after its opening (g planned, g.enter set): sbuf is this rank's input,
 * sref where the peers' copies of it are, rbuf and rref the same for the output. done
 * (may be NULL) gets the action after which no peer reads this rank's memory any more
 * (pull), or -1 (push). */
static sc_status_t sc_shm_allreduce(sc_coll_op_t *op, sc_shm_plan_t *g_in, const void *sbuf,
                                    void *rbuf, size_t count, const sc_shm_ref_t *sref,
                                    const sc_shm_ref_t *rref, int *done)
{
    sc_shm_plan_t g = *g_in;
    int *last_from, last = -1;
    size_t bstart, bend;
    /* Push: the owner writes each final chunk into every peer's rbuf, then says so; a
     * rank whose every peer said so for every chunk has nothing of its memory read or
     * written by anyone any more, and is done without a closing round. Pull (with
     * delivered ranges): each rank copies the peers' chunks straight into the
     * caller's ranges, which only it can reach, and a closing round tells the owners
     * their rbuf is no longer read. */
    int push = op->deliver == NULL;

    /* Streamed on 2 ranks, where the one peer's copy is written in the same pass. */
    g.stream = push && g.p == 2 && sc_shm_streams(op, count * g.es, sbuf == rbuf);
    op->hdr.pulled = (uint8_t)!push;
    last_from = malloc((size_t)g.p * sizeof(int));
    if (!last_from)
        return sc_error(SC_ERR_NO_MEMORY, "allreduce: out of memory for the schedule");
    /* The owned block, reduced where the peers read it: this rank's rbuf. */
    bstart = sc_block_start(count, g.p, g.me);
    bend = sc_block_start(count, g.p, g.me + 1);
    for (int c = 0; c < g.nch; c++) {
        size_t off = bstart + (size_t)c * g.ce, len;
        if (off >= bend)
            break;
        len = sc_min_size(g.ce, bend - off);
        last = sc_shm_reduce_chunk(op, &g, SC_BYTES(rbuf) + off * g.es,
                                   g.stream ? sc_shm_peer_ptr(rref, (g.me + 1) % g.p, off * g.es)
                                            : NULL,
                                   SC_CBYTES(sbuf) + off * g.es, sref, off * g.es, len,
                                   last >= 0 ? last : g.enter);
        sc_op_deliver(op, rbuf, off * g.es, len * g.es, last);
        for (int i = 1; i < g.p; i++) {
            int q = (g.me + i) % g.p, cp = -1;
            if (push && g.stream)
                cp = last; /* the reduction wrote the peer's copy */
            else if (push)
                cp = sc_op_copy(op, sc_shm_peer_ptr(rref, q, off * g.es),
                                SC_BYTES(rbuf) + off * g.es, len * g.es, last, -1);
            sc_op_send(op, q, (uint16_t)(g.sub_chunk + (unsigned)c), &sc_shm_sig, 0,
                       push ? cp : last, -1);
        }
    }
    /* The other blocks, copied from their owners' rbuf as each chunk is final; the
     * owners in turn from this rank's right, so that ranks spread their reads. */
    for (int i = 1; i < g.p; i++) {
        int q = (g.me + i) % g.p;
        size_t qs = sc_block_start(count, g.p, q), qe = sc_block_start(count, g.p, q + 1);
        last_from[q] = -1;
        for (int c = 0; c < g.nch; c++) {
            size_t off = qs + (size_t)c * g.ce, len;
            uint8_t *dst;
            int rv, cp;
            if (off >= qe)
                break;
            len = sc_min_size(g.ce, qe - off);
            rv = sc_op_recv(op, q, (uint16_t)(g.sub_chunk + (unsigned)c), &sc_shm_sig, 0, -1,
                            -1);
            if (push)
                continue; /* the owner wrote it here */
            dst = sc_op_final(op, rbuf, off * g.es, len * g.es);
            cp = sc_op_copy_delivered(op, dst, sc_shm_peer_ptr(rref, q, off * g.es), len * g.es,
                                      rv, last_from[q]);
            if (dst == SC_BYTES(rbuf) + off * g.es)
                sc_op_deliver(op, rbuf, off * g.es, len * g.es, cp);
            last_from[q] = cp;
        }
    }
    last_from[g.me] = -1;
    last = push ? -1 : sc_shm_finish(op, &g, last_from, last, done != NULL);
    if (done)
        *done = last;
    free(last_from);
    return sc_op_built(op);
}

sc_status_t sc_algo_allreduce_shm(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                                  const sc_shm_ref_t *sref, const sc_shm_ref_t *rref)
{
    sc_shm_plan_t g;

    sc_shm_begin(op, &g, (count + (size_t)op->comm->size - 1) / (size_t)op->comm->size);
    return sc_shm_allreduce(op, &g, sbuf, rbuf, count, sref, rref, NULL);
}

size_t sc_stage_window_plan(sc_coll_kind_t kind, size_t count, size_t p, size_t es,
                            size_t area, size_t *welems)
{
    /* A reduce-scatter's window holds the same elements of every block. */
    *welems = area / (kind == SC_COLL_REDUCE_SCATTER ? p * es : es);
    return *welems ? (count + *welems - 1) / *welems : SIZE_MAX;
}

/* The chunks each window's blocks may have in a staged op of nwin windows, so that every
 * window's messages have subs of their own below SC_SHM_MAX_CHUNKS. */
static size_t sc_stage_max_chunks(size_t nwin)
{
    return nwin ? SC_SHM_MAX_CHUNKS / nwin - 2 : SC_SHM_MAX_CHUNKS;
}

/* g for one window of a staged op: blocks of block_elems in at most max_chunks chunks,
 * its message subs from *sub on (chunks, then "staged", then "done reading"); *sub
 * moves past them for the next window. */
static void sc_shm_plan_window(sc_coll_op_t *op, sc_shm_plan_t *g, size_t block_elems,
                               size_t max_chunks, unsigned *sub)
{
    sc_shm_plan_chunks(op, g, block_elems, max_chunks);
    g->sub_chunk = *sub;
    g->sub_enter = *sub + (unsigned)g->nch;
    g->sub_done = g->sub_enter + 1;
    *sub = g->sub_done + 1;
}

/* Where window [a, a + n) of a staged allreduce's result goes, as ranges over the
 * window's output area: the caller's delivered ranges (user, nuser; sorted, disjoint)
 * where they cover it, rbuf elsewhere. out has room for 2 nuser + 1; returns how many. */
static int sc_stage_window_ranges(const sc_range_t *user, int nuser, void *rbuf, size_t a,
                                  size_t n, sc_range_t *out)
{
    size_t at = a, end = a + n;
    int k = 0;

    for (int i = 0; i < nuser && at < end; i++) {
        size_t lo = user[i].off, hi = user[i].off + user[i].bytes;
        if (hi <= at || lo >= end)
            continue;
        if (lo > at)
            out[k++] = (sc_range_t){at - a, lo - at, SC_BYTES(rbuf) + at};
        lo = lo > at ? lo : at;
        hi = hi < end ? hi : end;
        out[k++] = (sc_range_t){lo - a, hi - lo, (uint8_t *)user[i].dst + (lo - user[i].off)};
        at = hi;
    }
    if (at < end)
        out[k++] = (sc_range_t){at - a, end - at, SC_BYTES(rbuf) + at};
    return k;
}

sc_status_t sc_algo_allreduce_staged(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                     size_t count, const sc_shm_ref_t *sin,
                                     const sc_shm_ref_t *sout, size_t area)
{
    size_t es = sc_dtype_size(op->dtype), p = (size_t)op->comm->size, welems;
    size_t nwin = sc_stage_window_plan(SC_COLL_ALLREDUCE, count, p, es, area, &welems);
    size_t max_chunks = sc_stage_max_chunks(nwin);
    const sc_range_t *user = op->deliver;
    int nuser = op->ndeliver;
    sc_range_t *ranges = malloc((2 * (size_t)nuser + 1) * sizeof(*ranges));
    unsigned sub = 0;
    int after = -1;
    sc_status_t st = SC_SUCCESS;

    if (!ranges)
        return sc_error(SC_ERR_NO_MEMORY, "allreduce: out of memory for the schedule");
    /* The results go to the caller's buffer, where nothing read them: streamed past
     * the cache from SC_STREAM_BYTES up, as on registered memory. */
    op->deliver_streamed = sc_shm_streams(op, count * es, sbuf == rbuf);
    for (size_t w = 0; w < nwin && st == SC_SUCCESS; w++) {
        size_t e0 = w * welems, wc = sc_min_size(welems, count - e0), n = wc * es;
        size_t bs = sc_block_start(wc, (int)p, op->comm->rank) * es;
        size_t be = sc_block_start(wc, (int)p, op->comm->rank + 1) * es;
        /* The blocks the peers reduce; this rank's own is reduced straight from sbuf. */
        const sc_stage_copy_t copies[2] = {{0, 0, bs}, {be, be, n - be}};
        const uint8_t *win_in = SC_CBYTES(sbuf) + e0 * es;
        sc_shm_plan_t g;

        sc_shm_plan_window(op, &g, (wc + p - 1) / p, max_chunks, &sub);
        /* The window's results are pulled (one range or more: the op delivers). */
        op->ndeliver = sc_stage_window_ranges(user, nuser, rbuf, e0 * es, n, ranges);
        op->deliver = ranges;
        sc_shm_begin_staged(op, &g, win_in, sin, copies, 2, after);
        /* Only a next window waits for this one's "done reading". */
        st = sc_shm_allreduce(op, &g, win_in, sc_shm_peer_ptr(sout, g.me, 0), wc, sin, sout,
                              w + 1 < nwin ? &after : NULL);
    }
    /* The ranges were read while building (every address is in the actions now). */
    op->deliver = user;
    op->ndeliver = nuser;
    free(ranges);
    return st;
}

/* The reduce-scatter after its opening: this rank's block of recvcount elements reduced
 * from mine (its own input) and the peers' copies at sref plus byte offset peer_off,
 * into rbuf; stream_bytes is the whole op's input, which decides streaming. With join,
 * returns the action after which no peer reads this rank's memory any more, else -1. */
static int sc_shm_reduce_scatter(sc_coll_op_t *op, sc_shm_plan_t *g_in, const void *mine,
                                 void *rbuf, size_t recvcount, const sc_shm_ref_t *sref,
                                 uint64_t peer_off, size_t stream_bytes, int join)
{
    sc_shm_plan_t g = *g_in;
    int last = -1;

    g.stream = sc_shm_streams(op, stream_bytes, SC_CBYTES(mine) == SC_CBYTES(rbuf));
    for (int c = 0; c < g.nch; c++) {
        size_t off = (size_t)c * g.ce, len = sc_min_size(g.ce, recvcount - off);
        last = sc_shm_reduce_chunk(op, &g, SC_BYTES(rbuf) + off * g.es, NULL,
                                   SC_CBYTES(mine) + off * g.es, sref, peer_off + off * g.es,
                                   len, last >= 0 ? last : g.enter);
    }
    return sc_shm_finish(op, &g, NULL, last, join);
}

sc_status_t sc_algo_reduce_scatter_shm(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                       size_t recvcount, const sc_shm_ref_t *sref)
{
    sc_shm_plan_t g;
    size_t base;

    sc_shm_begin(op, &g, recvcount);
    base = (size_t)g.me * recvcount * g.es;
    sc_shm_reduce_scatter(op, &g, SC_CBYTES(sbuf) + base, rbuf, recvcount, sref, base,
                          recvcount * (size_t)g.p * g.es, 0);
    return sc_op_built(op);
}

sc_status_t sc_algo_reduce_scatter_staged(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                          size_t recvcount, const sc_shm_ref_t *sin,
                                          size_t area)
{
    size_t es = sc_dtype_size(op->dtype), p = (size_t)op->comm->size, welems;
    size_t me = (size_t)op->comm->rank;
    size_t nwin = sc_stage_window_plan(SC_COLL_REDUCE_SCATTER, recvcount, p, es, area, &welems);
    size_t max_chunks = sc_stage_max_chunks(nwin);
    sc_stage_copy_t *copies = malloc(p * sizeof(*copies));
    unsigned sub = 0;
    int after = -1;

    if (!copies)
        return sc_error(SC_ERR_NO_MEMORY, "reduce_scatter: out of memory for the schedule");
    for (size_t w = 0; w < nwin; w++) {
        /* Elements [r0, r0 + wr) of every block: block q's goes to q * wr of the input
         * area, every block but this rank's, which it reduces straight from sbuf. */
        size_t r0 = w * welems, wr = sc_min_size(welems, recvcount - r0), nc = 0;
        sc_shm_plan_t g;

        for (size_t q = 0; q < p; q++)
            if (q != me)
                copies[nc++] = (sc_stage_copy_t){q * wr * es, (q * recvcount + r0) * es, wr * es};
        sc_shm_plan_window(op, &g, wr, max_chunks, &sub);
        sc_shm_begin_staged(op, &g, sbuf, sin, copies, (int)nc, after);
        after = sc_shm_reduce_scatter(op, &g, SC_CBYTES(sbuf) + (me * recvcount + r0) * es,
                                      SC_BYTES(rbuf) + r0 * es, wr, sin, me * wr * es,
                                      recvcount * p * es, w + 1 < nwin);
    }
    free(copies);
    return sc_op_built(op);
}

sc_status_t sc_algo_allgather_shm(sc_coll_op_t *op, const void *sbuf, void *rbuf,
                                  size_t sendcount, const sc_shm_ref_t *ref, size_t block_off)
{
    sc_shm_plan_t g;
    size_t bytes;
    int last = -1;

    sc_shm_begin(op, &g, sendcount);
    bytes = sendcount * g.es;
    g.stream = sc_shm_streams(op, bytes * (size_t)g.p, 0);
    /* Peer q's block is at ref's offset plus q * block_off (0 when ref is the send
     * buffer, the block's size when it is the receive buffer of an in-place call). */
    for (int i = 1; i < g.p; i++) {
        int q = (g.me + i) % g.p;
        last = sc_shm_copy_out(op, &g, SC_BYTES(rbuf) + (size_t)q * bytes,
                               sc_shm_peer_ptr(ref, q, (uint64_t)q * block_off), bytes,
                               last >= 0 ? last : g.enter, -1);
    }
    sc_shm_copy_out(op, &g, SC_BYTES(rbuf) + (size_t)g.me * bytes, sbuf, bytes, -1, -1);
    sc_shm_finish(op, &g, NULL, last, 0);
    return sc_op_built(op);
}

sc_status_t sc_algo_broadcast_shm(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                                  int root, const sc_shm_ref_t *rref)
{
    sc_shm_plan_t g;
    int last = -1;

    sc_shm_begin(op, &g, count);
    if (g.me == root) {
        /* The peers copy from the root's rbuf once it holds the data. */
        int ready = sbuf != rbuf ? sc_op_copy(op, rbuf, sbuf, count * g.es, -1, -1) : -1;
        sc_shm_tell_all(op, &g, root, 0, ready, g.enter);
        sc_shm_hear_all(op, &g, root, SC_SHM_SUB_DONE, 0);
        return sc_op_built(op);
    }
    last = sc_op_recv(op, root, 0, &sc_shm_sig, 0, -1, -1);
    if (g.enter >= 0)
        last = sc_shm_gate(op, last, g.enter);
    g.stream = sc_shm_streams(op, count * g.es, 0);
    for (int c = 0; c < g.nch; c++) {
        size_t off = (size_t)c * g.ce, len = sc_min_size(g.ce, count - off);
        last = sc_shm_copy_out(op, &g, SC_BYTES(rbuf) + off * g.es,
                               sc_shm_peer_ptr(rref, root, off * g.es), len * g.es, last, -1);
    }
    sc_op_send(op, root, SC_SHM_SUB_DONE, &sc_shm_sig, 0, last, -1);
    return sc_op_built(op);
}

sc_status_t sc_algo_reduce_shm(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                               int root, const sc_shm_ref_t *sref)
{
    sc_shm_plan_t g;
    int last = -1;

    sc_shm_begin(op, &g, count);
    if (g.me != root) {
        /* Done once the root read this rank's sbuf. */
        sc_op_recv(op, root, SC_SHM_SUB_DONE, &sc_shm_sig, 0, -1, -1);
        return sc_op_built(op);
    }
    g.stream = sc_shm_streams(op, count * g.es, sbuf == rbuf);
    for (int c = 0; c < g.nch; c++) {
        size_t off = (size_t)c * g.ce, len = sc_min_size(g.ce, count - off);
        last = sc_shm_reduce_chunk(op, &g, SC_BYTES(rbuf) + off * g.es, NULL,
                                   SC_CBYTES(sbuf) + off * g.es, sref, off * g.es, len,
                                   last >= 0 ? last : g.enter);
    }
    sc_shm_tell_all(op, &g, root, SC_SHM_SUB_DONE, last, -1);
    return sc_op_built(op);
}

sc_status_t sc_algo_alltoall_shm(sc_coll_op_t *op, const void *sbuf, void *rbuf, size_t count,
                                 const sc_shm_ref_t *sref)
{
    sc_shm_plan_t g;
    size_t bytes;
    int last = -1, in_place = sbuf == rbuf;
    uint8_t *dst = rbuf;

    sc_shm_begin(op, &g, count);
    bytes = count * g.es;
    /* Into scratch (in place) not streamed: the blocks are read again from there. */
    g.stream = sc_shm_streams(op, bytes * (size_t)g.p, in_place);
    /* In place, block q of this rank's buffer is what peer q reads from it: what q sends
     * here waits in scratch until every peer is done reading. */
    if (in_place && g.p > 1) {
        dst = sc_op_scratch(op, bytes * (size_t)g.p);
        if (!dst)
            return sc_error(SC_ERR_NO_MEMORY, "alltoall: out of memory for %zu bytes of "
                            "scratch", bytes * (size_t)g.p);
    }
    for (int i = 1; i < g.p; i++) {
        int q = (g.me + i) % g.p;
        last = sc_shm_copy_out(op, &g, dst + (size_t)q * bytes,
                               sc_shm_peer_ptr(sref, q, (uint64_t)g.me * bytes), bytes,
                               last >= 0 ? last : g.enter, -1);
    }
    if (!in_place) {
        sc_shm_copy_out(op, &g, dst + (size_t)g.me * bytes,
                        SC_CBYTES(sbuf) + (size_t)g.me * bytes, bytes, -1, -1);
        sc_shm_finish(op, &g, NULL, last, 0);
        return sc_op_built(op);
    }
    sc_shm_tell_all(op, &g, g.me, SC_SHM_SUB_DONE, last, -1);
    last = -1;
    for (int q = 0; q < g.p; q++)
        if (q != g.me)
            last = sc_op_recv(op, q, SC_SHM_SUB_DONE, &sc_shm_sig, 0, last, -1);
    g.stream = sc_shm_streams(op, bytes * (size_t)g.p, 0);
    for (int q = 0; q < g.p; q++)
        if (q != g.me)
            sc_shm_copy_out(op, &g, SC_BYTES(rbuf) + (size_t)q * bytes, dst + (size_t)q * bytes,
                            bytes, last, -1);
    return sc_op_built(op);
}
