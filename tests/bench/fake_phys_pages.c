/* Preloaded into a benchmark: sysconf(_SC_PHYS_PAGES) reports SC_TEST_PHYS_BYTES of
 * memory, so that the memory checks are tried at sizes this machine really holds. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

long sysconf(int name)
{
    static long (*real)(int);
    const char *bytes = getenv("SC_TEST_PHYS_BYTES");

    if (!real)
        real = (long (*)(int))dlsym(RTLD_NEXT, "sysconf");
    if (name == _SC_PHYS_PAGES && bytes)
        return atol(bytes) / real(_SC_PAGESIZE);
    return real(name);
}
