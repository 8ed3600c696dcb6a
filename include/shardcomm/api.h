/* Export macro and version of the shardcomm public API: the version the headers are
 * (SC_VERSION_*) and the version of the library loaded (sc_version()). */
#ifndef SHARDCOMM_API_H
#define SHARDCOMM_API_H

#if defined(__GNUC__)
#define SC_API __attribute__((visibility("default")))
#else
#define SC_API
#endif

#define SC_VERSION_MAJOR 0
#define SC_VERSION_MINOR 1
#define SC_VERSION_PATCH 0
/* One number, as NCCL_VERSION_CODE: 10000 * major + 100 * minor + patch. */
#define SC_VERSION_CODE (SC_VERSION_MAJOR * 10000 + SC_VERSION_MINOR * 100 + SC_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library loaded, as SC_VERSION_CODE: a program built against other
 * headers than the library it runs with can tell (compare the major parts, and the
 * minor parts too while the major is 0: a minor version of 0.x may change the ABI). */
SC_API int sc_version(void);

#ifdef __cplusplus
}
#endif

#endif
