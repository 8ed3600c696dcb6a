/* The ranks' hosts, from the rendezvous blobs: the layout of a blob, which ranks share a
 * node, and whether the launcher's local sizes and ranks fit them (comm_hosts.c). */
#ifndef SC_CORE_COMM_HOSTS_H
#define SC_CORE_COMM_HOSTS_H

#include "collectives/device.h"
#include "core/bootstrap_env.h"
#include "core/bootstrap_store.h"
#include "core/comm_internal.h"

/* Rendezvous blob: host name, process id, the local size the launcher gave (-1: none)
 * and what gave it (a variable's name), the local rank likewise, the device path's
 * contribution, UCX_TLS as set (empty: unset; its first SC_BLOB_TLS_LEN - 1 bytes),
 * then the UCX worker address. */
#define SC_BLOB_FROM_LEN sizeof(((sc_bootstrap_params_t *)0)->local_size_from)
#define SC_BLOB_PID SC_HOSTNAME_MAX
#define SC_BLOB_LOCAL (SC_BLOB_PID + sizeof(int32_t))
#define SC_BLOB_LOCAL_FROM (SC_BLOB_LOCAL + sizeof(int32_t))
#define SC_BLOB_LOCAL_RANK (SC_BLOB_LOCAL_FROM + SC_BLOB_FROM_LEN)
#define SC_BLOB_LOCAL_RANK_FROM (SC_BLOB_LOCAL_RANK + sizeof(int32_t))
#define SC_BLOB_DEV (SC_BLOB_LOCAL_RANK_FROM + SC_BLOB_FROM_LEN)
#define SC_BLOB_TLS (SC_BLOB_DEV + SC_DEVICE_BLOB)
#define SC_BLOB_TLS_LEN 256
#define SC_BLOB_ADDR (SC_BLOB_TLS + SC_BLOB_TLS_LEN)

/* node_of[r]: the first rank whose host name is rank r's, for the size ranks of res
 * (O(size log size): a sort of the host names). Then the checks every rank makes alike
 * from the same blobs: the local sizes the launcher gave agree with the host names,
 * and every local rank fits its host (SC_ERR_INVALID_ARG with a sentence naming the
 * ranks, hosts and variables otherwise; SC_ERR_NO_MEMORY). */
sc_status_t sc_comm_hosts(const sc_store_result_t *res, int size, int *node_of);

#endif
