/* Export macro and version of the shardcomm public API. */
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

#endif
