/* Preloaded into an entry of test_library_load: every pthread_create waits 300 ms before
 * it starts the thread, so that rank 0's store starts its thread well after its socket
 * listens. The test forks once the port listens: in that window, which
 * ThreadSanitizer's slow pthread_create opened by chance in CI, not at the end of it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#define SLOW_START_US 300000

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                   void *arg)
{
    create_fn real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");

    usleep(SLOW_START_US);
    return real(thread, attr, fn, arg);
}
