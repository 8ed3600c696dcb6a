/* The floating-point environment the library computes in: round to nearest even,
 * subnormals kept (no flush-to-zero, no denormals-are-zero), exceptions masked, whatever
 * the calling thread set (torch.set_flush_denormal(True) sets FTZ and DAZ on its
 * thread). A reduction runs on whichever thread drives the progress engine, a caller's
 * or the progress thread; under the caller's modes, ranks whose parts ran on differently
 * set threads got different bits (2^-140 + 2^-140 flushed to 0 on one rank, 2^-139 on
 * the other). As NCCL's reductions, ours ignore the caller's modes. x86 only (MXCSR);
 * elsewhere the thread's own environment applies. */
#ifndef SC_CORE_FPENV_H
#define SC_CORE_FPENV_H

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>

/* MXCSR: flags in bits 0-5 (kept), the modes above them; 0x1f80 is the power-on state:
 * every exception masked, round to nearest, no FTZ, no DAZ. */
#define SC_FPENV_MODES_DEFAULT 0x1f80u
#define SC_FPENV_FLAGS 0x3fu

typedef struct {
    unsigned csr;
    int changed;
} sc_fpenv_t;

/* Enters the library's environment; a few cycles when the thread is in it already. */
static inline sc_fpenv_t sc_fpenv_enter(void)
{
    sc_fpenv_t e = {_mm_getcsr(), 0};

    if ((e.csr & ~SC_FPENV_FLAGS) != SC_FPENV_MODES_DEFAULT) {
        _mm_setcsr((e.csr & SC_FPENV_FLAGS) | SC_FPENV_MODES_DEFAULT);
        e.changed = 1;
    }
    return e;
}

/* A thread of the library's own (the progress thread, workers): its environment for
 * good, whatever the thread that created it had set. */
static inline void sc_fpenv_own_thread(void)
{
    (void)sc_fpenv_enter();
}

/* Gives the thread its own environment back (the flags raised meanwhile are dropped). */
static inline void sc_fpenv_leave(sc_fpenv_t e)
{
    if (e.changed)
        _mm_setcsr(e.csr);
}
#else
typedef struct {
    int unused;
} sc_fpenv_t;

static inline sc_fpenv_t sc_fpenv_enter(void)
{
    return (sc_fpenv_t){0};
}

static inline void sc_fpenv_leave(sc_fpenv_t e)
{
    (void)e;
}

static inline void sc_fpenv_own_thread(void)
{
}
#endif

#endif
