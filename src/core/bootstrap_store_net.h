/* The TCP plumbing of the rendezvous store (bootstrap_store.c): exact reads and writes
 * with a deadline, the store's listening socket, a client's connection with its retries
 * and reasons, and rank 0's look at the master address. */
#ifndef SC_CORE_BOOTSTRAP_STORE_NET_H
#define SC_CORE_BOOTSTRAP_STORE_NET_H

#include <stddef.h>
#include "shardcomm/status.h"

/* Writes (writing 1) or reads exactly len bytes before deadline; -1 on error or
 * timeout. */
int sc_store_net_io(int fd, void *buf, size_t len, double deadline, int writing);

/* Reads and drops len bytes (up to the deadline). */
void sc_store_net_skip(int fd, size_t len, double deadline);

/* addr:port as the sentences write it, an IPv6 address in brackets ([::1]:29500). */
void sc_store_net_where(const char *addr, int port, char *buf, size_t len);

/* Rank 0's look at the master address, where the other ranks connect: note is empty
 * when it resolves to one of this host's addresses, else a clause saying what is wrong
 * (warned at start, it ends the rendezvous timeout's sentence). Not an error: behind a
 * NAT or a virtual IP the address is not rank 0's own and still leads here. */
void sc_store_net_check_master(const char *addr, char *note, size_t len);

/* *fd: a socket listening on port on every address of this host, IPv6 and IPv4 (IPv4
 * alone where the host has no IPv6), with room for backlog connections waiting.
 * SC_ERR_SYSTEM naming the port (and the process on it, where it is in use) otherwise. */
sc_status_t sc_store_net_listen(int port, int backlog, int *fd);

/* A connected socket, or -1 at the deadline or once *stop is set (stop may be NULL);
 * *why then says what failed last, and *last_err its errno (0: none). -2, with *why,
 * at once when the address cannot resolve however long this waits: an IP address that
 * does not parse, or a name with no address of a family this host has. A name that does
 * not resolve (yet) is retried: a node's name may come up in DNS after rank 0 starts. */
int sc_store_net_connect(const char *addr, int port, double deadline, const int *stop,
                         char *why, size_t why_len, int *last_err);

#endif
