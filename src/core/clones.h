/* SC_CLONES: a function compiled once per vector target (AVX-512, AVX2, baseline) and
 * picked when the library is loaded (an ifunc), so that a generic build runs the widest
 * path the CPU has. The clones compute the same IEEE operations element by element, so
 * the result does not depend on which one runs. Off where GCC cannot do it, and under
 * ThreadSanitizer, whose runtime is not up yet when the loader runs ifunc resolvers. */
#ifndef SC_CORE_CLONES_H
#define SC_CORE_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__)
#define SC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SC_CLONES
#endif

#endif
