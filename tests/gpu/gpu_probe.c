/* Exits 0 when this process can use a GPU, else prints "SKIP: <reason>" and exits 77.
 * GPU tests that run under scrun are preceded by it: scrun reports a rank's exit
 * status 77 as a failure, so their ranks cannot skip on their own. */
#include "gpu_check.h"

int main(void)
{
    char reason[512];

    if (gpu_usable(reason, sizeof(reason)))
        return 0;
    printf("SKIP: %s\n", reason);
    return GPU_SKIP_EXIT;
}
