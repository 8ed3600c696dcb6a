/* The CPU facts the host kernels decide by: the widest vector path this CPU has, the
 * one SC_CPU_ISA asks for, and the threads SC_THREADS or this process's binding gives. */
#ifndef SC_CORE_CPU_H
#define SC_CORE_CPU_H

#include "shardcomm/status.h"

typedef enum {
    SC_CPU_SCALAR = 0,
    SC_CPU_AVX2,   /* AVX2 and BMI2 */
    SC_CPU_AVX512  /* AVX-512 F, BW and VL, and what AVX2 needs */
} sc_cpu_isa_t;

/* The widest path this CPU supports. Thread safe. */
sc_cpu_isa_t sc_cpu_isa_detect(void);

/* "scalar", "avx2" or "avx512". */
const char *sc_cpu_isa_name(sc_cpu_isa_t isa);

/* The path to use: SC_CPU_ISA (scalar|avx2|avx512, case-insensitive) when set, else the
 * widest this CPU has. A value that is not one of those is SC_ERR_INVALID_ARG; a path the
 * CPU lacks is SC_ERR_UNSUPPORTED, each naming the variable. *isa is written only on
 * success. */
sc_status_t sc_cpu_isa_select(sc_cpu_isa_t *isa);

/* The threads a host kernel may use: SC_THREADS when set (an integer >= 1), else the
 * number of CPUs this process is bound to (at least 1). SC_ERR_INVALID_ARG naming
 * SC_THREADS for a bad value. *threads is written only on success. */
sc_status_t sc_cpu_threads(int *threads);

/* The most threads SC_THREADS or a configuration's threads field may ask for. */
#define SC_CPU_THREADS_MAX 4096

#endif
