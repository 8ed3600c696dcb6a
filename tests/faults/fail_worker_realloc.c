/* Preloaded into test_select_failure: once sc_test_fail_realloc_elsewhere(bytes) was
 * called, the next realloc of at least that many bytes made by another thread than the
 * caller's returns NULL, as where memory ran out: the top-k selection's scratch, which
 * the comm hook's worker thread grows. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>

void *__libc_realloc(void *p, size_t n);

static size_t armed; /* the size from which the next one fails; 0: none */
static pthread_t armer;

void sc_test_fail_realloc_elsewhere(size_t bytes)
{
    armer = pthread_self();
    __atomic_store_n(&armed, bytes, __ATOMIC_SEQ_CST);
}

void *realloc(void *p, size_t n)
{
    size_t a = __atomic_load_n(&armed, __ATOMIC_SEQ_CST);

    if (a && n >= a && !pthread_equal(pthread_self(), armer) &&
        __atomic_compare_exchange_n(&armed, &a, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return NULL;
    return __libc_realloc(p, n);
}
