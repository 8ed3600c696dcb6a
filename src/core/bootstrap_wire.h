/* The rendezvous's messages on the wire: a rank's hello to rank 0's store or to its
 * parent in the table's tree, the answers, and the part the store gives each rank in
 * that tree (bootstrap_store.c; rank 0's store: bootstrap_store_server.c, its arrivals
 * bootstrap_store_arrival.c and its answers bootstrap_store_answer.c; bootstrap_tree.c). */
#ifndef SC_CORE_BOOTSTRAP_WIRE_H
#define SC_CORE_BOOTSTRAP_WIRE_H

#include <stdint.h>

/* Every answer's magic, in every protocol; and the hello's of rendezvous protocols 1 and
 * 2 (shardcomm before 2026-12-07: magic, rank, size, len and, from 2, port), whose
 * hellos carry no protocol. */
#define SC_STORE_MAGIC 0x53435354u /* "SCST" */
/* Protocol 2's hello of a rank that cannot join. */
#define SC_STORE_MAGIC_FAILED 0x53434654u /* "SCFT" */
/* Every hello from protocol 3 on starts with this magic and its protocol, which every
 * later protocol keeps as its first 8 bytes, so that a store tells a rank of another
 * protocol and answers it with a sentence naming both (an answer's form does not
 * change), where a store of protocol 1 or 2 closes such a hello unanswered. */
#define SC_STORE_MAGIC_HELLO 0x53434856u /* "SCHV" */
#define SC_STORE_PROTOCOL 3u
#define SC_STORE_MAX_BLOB (1u << 20)

/* What a hello is for. */
typedef enum {
    SC_STORE_JOIN = 1,   /* a rank's blob for the store */
    SC_STORE_FAILED = 2, /* its blob is the sentence of a rank that cannot join
                          * (sc_store_tell_failure) */
    SC_STORE_CHILD = 3   /* a child's to its parent in the table's tree: no blob; its
                          * size and launch, which the parent checks */
} sc_store_kind_t;

/* A launch id's text and the variable that gave it, with their terminating zeros. */
#define SC_LAUNCH_ID_MAX 64
#define SC_LAUNCH_FROM_MAX 32

/* Which launch a rank belongs to (sc_bootstrap_launch_id): an empty id is none, which
 * is never checked. Rank 0's store refuses a hello of another launch (two launches on
 * one master port) without taking its slot; a parent in the table's tree refuses a
 * child's hello of another launch or world size (the child's parent exited, and a rank
 * of a launch on the same host got its port) with SC_ERR_MISMATCH and the text "rank R
 * of launch ID (from VAR), world size N", the child of that rank still served. Only such
 * a refusal has that status on the tree: a child refused fails with SC_ERR_PEER_FAILED. */
typedef struct {
    char id[SC_LAUNCH_ID_MAX];
    char from[SC_LAUNCH_FROM_MAX];
} sc_store_launch_t;

typedef struct {
    uint32_t magic;    /* SC_STORE_MAGIC_HELLO */
    uint32_t protocol; /* SC_STORE_PROTOCOL */
    uint32_t kind;     /* sc_store_kind_t */
    uint32_t rank;
    uint32_t size;
    uint32_t len;
    uint32_t port; /* where this rank serves its children the table (0: nowhere) */
    sc_store_launch_t launch;
} sc_store_hello_t;

typedef struct {
    uint32_t magic;
    int32_t status;
    uint32_t len; /* text length on error, payload length on success */
} sc_store_reply_t;

/* The start of the store's payload on success: where this rank gets the table (parent 0:
 * the table, table_len bytes, follows the children's ranks here), the ranks it serves it
 * to (nchildren uint32_t after this), its depth below rank 0 (1: a child of rank 0), and
 * the tree's height (its deepest rank's depth), which bounds how long the store waits
 * for every rank to say it has the table. After the tree a rank sends the store an
 * answer of its own on the same connection (SC_SUCCESS and no text once it has the
 * table and served its children, else its failure's status and sentence), and the store
 * answers every rank once all said so (SC_SUCCESS, no text), or at once the first
 * failure: a rank's, or a rank whose connection closed (it exited or was killed). */
typedef struct {
    uint32_t parent;
    uint32_t depth;
    uint32_t height;
    uint32_t nchildren;
    uint32_t table_len;
    uint32_t scope_id; /* the parent's address: an IPv6 one's scope */
    uint16_t family;   /* AF_INET or AF_INET6 */
    uint16_t port;     /* host order */
    uint8_t addr[16];  /* 4 bytes for AF_INET */
} sc_store_role_t;

#endif
