/* The TCP plumbing of the rendezvous store (bootstrap_store*.c) and of its table's tree
 * (bootstrap_tree.c): exact reads and writes with a deadline, an answer's header and
 * sentence checked as a store's, the store's listening socket and a rank's own beside
 * it, a client's connection with its retries and reasons, the address a rank reached
 * the store from, and rank 0's look at the master address. */
#ifndef SC_CORE_BOOTSTRAP_STORE_NET_H
#define SC_CORE_BOOTSTRAP_STORE_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "core/bootstrap_wire.h"
#include "shardcomm/status.h"

/* Writes (writing 1) or reads exactly len bytes before deadline (past it, only what the
 * socket holds or takes at once); -1 on error or timeout, errno saying which: ETIMEDOUT
 * at the deadline, 0 where the peer closed the connection, else the socket's error
 * (ECONNRESET where the peer reset it: rank 0's store gives up so on a rank). */
int sc_store_net_io(int fd, void *buf, size_t len, double deadline, int writing);

/* sc_store_net_io, which also returns -2 as soon as watch (a descriptor; -1: none) has
 * something to read or was closed before len bytes went: a child waiting for its parent
 * in the table's tree hears the store's failure meanwhile. Where both have data waiting
 * as it looks (this rank stopped or descheduled while both came), a read takes fd's
 * where it came first by the kernel's record of each TCP connection's last data (in ms,
 * as fine as the kernel's tick), else the watch's: the same tick, an end of connection
 * or a reset (never dated), or a socket other than TCP. */
int sc_store_net_io_watch(int fd, void *buf, size_t len, double deadline, int writing,
                          int watch);

/* Sends what fd's socket takes, without waiting, of an answer laid out as head (head_len
 * bytes) then body (body_len bytes), from *sent bytes of it on, which it advances: 1 once
 * all of it went, 0 while some is left, -1 when the connection broke. A peer that stopped
 * reading holds up only its own answer (rank 0's store and each parent in the table's
 * tree serve all theirs under one poll). */
int sc_store_net_send_some(int fd, const void *head, size_t head_len, const void *body,
                           size_t body_len, size_t *sent);

/* An answer: its header (SC_STORE_MAGIC, status, len), then len bytes of payload (the
 * table, or an error's sentence); -1 when the connection broke or the deadline passed. */
int sc_store_net_reply(int fd, int32_t status, const void *payload, uint32_t len,
                       double deadline);

/* Reads an answer's header into *rep before deadline: 0 when it is a store's (its magic,
 * a status of sc_status_t other than SC_IN_PROGRESS, and on error a sentence of 1 to
 * SC_ERROR_MAX - 1 bytes), -1 when the connection closed or the deadline passed first,
 * 1 when what came is no store's answer (another program answered). */
int sc_store_net_read_reply(int fd, sc_store_reply_t *rep, double deadline);

/* sc_store_net_read_reply, which also returns -2 as soon as watch has something to read
 * or was closed (sc_store_net_io_watch). */
int sc_store_net_read_reply_watch(int fd, sc_store_reply_t *rep, double deadline, int watch);

/* Reads an error's sentence of rep->len bytes (sc_store_net_read_reply passed it) into
 * text (SC_ERROR_MAX bytes), ended with a NUL: 0, -1 when the connection closed or the
 * deadline passed first, 1 when it is not text (a control character in it). */
int sc_store_net_read_text(int fd, const sc_store_reply_t *rep, char *text, double deadline);

/* A word at the end of the table's tree (a rank's to the store, the store's to a rank:
 * SC_SUCCESS and no text, or a failure's status and sentence), read from fd, rank's
 * connection to the store, before deadline into *st and text (SC_ERROR_MAX bytes): 0
 * when it came, -1 when the connection closed first (or what came is no such word), 1
 * when nothing came by the deadline; then *st and text say so of the store (where: its
 * address), rank 0 exited or was killed (SC_ERR_PEER_FAILED) or is stopped or hung
 * (SC_ERR_TIMEOUT). A rank that has not said its own word yet (said 0) and finds the
 * connection reset was given up on by the store, which resets a rank it could not tell
 * by its deadline (its socket full: stopped or too slow), where a rank 0 that exited or
 * was killed ends the connection, having read all this rank sent: SC_ERR_TIMEOUT saying
 * so. These sentences name rank, as they are true of it alone: a parent in the tree
 * passes them on to its children. Sets no error of this thread. */
int sc_store_net_read_word(int fd, const char *where, int rank, double deadline, int said,
                           sc_status_t *st, char *text);

/* A word at the end of the table's tree as it comes (rank 0's store reads every rank's
 * under one poll, so that a rank stopped in the middle of its word holds up none of the
 * others): the header, then the sentence of a failure, text (rep.len bytes and a NUL,
 * owned by the caller, who frees it). Start from {0}. */
typedef struct {
    sc_store_reply_t rep;
    size_t got; /* bytes that came: of rep, then of text */
    char *text;
} sc_store_word_t;

/* Reads what fd holds of word *w, without waiting: 1 once it came whole (SC_SUCCESS and
 * no text, or a failure's status and sentence), 0 while some is to come, -1 when the
 * connection closed or broke first, or what came is no such word (or no memory for its
 * sentence). */
int sc_store_net_word_some(int fd, sc_store_word_t *w);

/* Reads and drops len bytes (up to the deadline). */
void sc_store_net_skip(int fd, size_t len, double deadline);

/* Reads and drops len bytes as they come, until none came for idle_s or deadline passed
 * (past it, what the socket holds still counts): 0 once all of them came, -1 when the
 * connection closed or broke, went idle_s without a byte, or the deadline passed first.
 * A large answer that comes slowly is read whole however long it takes within deadline,
 * where a bound on the whole cut it off. */
int sc_store_net_drain(int fd, size_t len, double idle_s, double deadline);

/* Closes fd once an answer was written on it, gracefully: the answer goes out whole with
 * the end of the connection (shutdown), and what the peer sent that was not read (a
 * rank's word at the tree's end, said as the store told a failure) is dropped first, so
 * that the close does not reset the connection, which discards an answer's sentence
 * still held by Nagle's algorithm and may reach the peer before the answer. */
void sc_store_net_close_answered(int fd);

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

/* One attempt to connect to sa before deadline: the connected socket, or -1 with *err
 * the reason (ETIMEDOUT: no answer by the deadline; 0: no time left to learn one;
 * ECONNREFUSED also where the socket came up connected to itself: nothing listened), or
 * -2 as soon as watch (a descriptor; -1: none) has something to read or was closed
 * while the connection was not yet made: a child connecting to its parent in the
 * table's tree hears the store's failure meanwhile. */
int sc_store_net_connect_to(const struct sockaddr *sa, socklen_t sa_len, double deadline,
                            int watch, int *err);

/* *listen_fd: a socket listening on a port the system picks, on the address that the
 * connected socket fd has at its end (the interface, and the family, by which this rank
 * reached the store), and *port that port; -1 with errno otherwise. */
int sc_store_net_listen_beside(int fd, int *listen_fd, uint32_t *port);

/* A connection waiting on listen_fd, non-blocking where asked; -1 with errno when none
 * came. Like every socket of the rendezvous it is closed on exec: a program a rank
 * starts (a data loader's process) holding it would keep the connection open after the
 * rank exited or was killed, so that its peer would not see it go. */
int sc_store_net_accept(int listen_fd, int nonblocking);

/* The address of the process at the other end of fd (an IPv4 one as such, not mapped
 * into IPv6) into role's family, addr and scope_id; *loopback: whether it is a loopback
 * address (the process is on this host). -1 when the socket has none. */
int sc_store_net_peer(int fd, sc_store_role_t *role, int *loopback);

/* A role's address and port as the sentences write it (sc_store_net_where). */
void sc_store_net_role_where(const sc_store_role_t *role, char *buf, size_t len);

/* The store's deadline for a rank's answer and its word, as the sentences of a rank the
 * store gave up on name it (sc_store_watch's: SC_TIMEOUT after the rank's first answer,
 * SC_STORE_TREE_LEVEL_S per level of the tree and 2 more). */
#define SC_STORE_DEADLINE_TEXT                                                             \
    "the store's deadline (SC_TIMEOUT after its first answer, 2 s per level of the "      \
    "table's tree and 2 more)"

#endif
