/* Gradient profiles of sc-bench reducer (bench/profiles/): one line per gradient
 * tensor, `name count dtype`, in registration order; lines starting with '#' and blank
 * lines are ignored. */
#ifndef SC_BENCH_PROFILE_H
#define SC_BENCH_PROFILE_H

#include <stddef.h>
#include "shardcomm/shardcomm.h"

typedef struct {
    char *name;
    size_t count;
    sc_dtype_t dtype; /* SC_FLOAT32, SC_FLOAT16 or SC_BFLOAT16 */
} sc_bench_tensor_t;

typedef struct {
    sc_bench_tensor_t *tensors; /* registration order */
    int ntensors;
    size_t count; /* elements of all tensors */
    size_t bytes; /* bytes of all tensors */
} sc_bench_profile_t;

/* Reads the profile `name`: a file (a path, or one in the working directory), else a
 * profile by name (resnet50 or resnet50.txt) from the installed profiles
 * (PREFIX/share/shardcomm/profiles) or the source tree's bench/profiles. On error writes
 * a sentence naming the file (and the line, for bad content; where it looked, for a
 * name found nowhere) into err and returns SC_ERR_SYSTEM (cannot read it) or
 * SC_ERR_INVALID_ARG (bad content, no tensor); *profile is written only on success. */
sc_status_t sc_bench_profile_load(const char *name, sc_bench_profile_t *profile,
                                  char *err, size_t errlen);

/* Frees what sc_bench_profile_load allocated. */
void sc_bench_profile_free(sc_bench_profile_t *profile);

#endif
