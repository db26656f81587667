/*
 * unread_round.h - the synchronous face of libunread: struct unread, a
 * core (unread_core.h) plus the state of the current round. Every
 * synchronous request goes through three steps, a call being a pipeline
 * of one (unread_round.c):
 *   queue  route it, check the server's circuit, connect if needed,
 *          encode it into that server's output buffer, and record a slot
 *          in the round's order list (a global write takes one slot per
 *          server, a split request one per group of its uids);
 *   flush  send every server's queued frames;
 *   read   take the next request's slots in queue order, read each reply
 *          from its server (each server answers in its own request
 *          order, so reading in the caller's order needs no reordering),
 *          and make them one answer (unread_answer.c).
 * A request whose server could not be used is decided at queue time: its
 * slot carries the outcome and no frame, so every queued request has
 * exactly one reply to read, in order.
 *
 * A "round" is a synchronous call, or a pipeline from begin to its last
 * read or reset. A server that fails during a round is not tried again in
 * that round (a pipeline of 10,000 requests to a dead server costs one
 * connect attempt, not 10,000). Internal; not installed.
 */
#ifndef UNREAD_ROUND_H
#define UNREAD_ROUND_H

#include "unread_core.h"

#define UC_SLOTS_KEEP 4096 /* slots an idle handle keeps */

/* One request's part on one server, in queue order. */
struct uc_slot {
    uint32_t server;
    uint16_t op;
    uint16_t span;    /* on a request's first slot: its slot count */
    int rc;           /* UC_PENDING, or the outcome decided without a reply */
    uint16_t nbatch;  /* a batch frame: its command count */
    bool batch_reads; /* ... all of them reads: degraded mode may answer */
    bool split;       /* one group's share of a split request */
    uint32_t nuids;   /* first slot of a split: its uids, whose groups */
    size_t map_off;   /* ... are c->split_map[map_off .. + nuids) */
    size_t frame_off; /* cluster mode: its frame, c->frames[off .. + len), */
    size_t frame_len; /* ... resent when a node redirects it */
};

/* The batch being queued (unread_batch_begin): its commands encoded as a
 * batch frame's body, all routed to one server. */
struct uc_batch {
    bool open;
    bool writes;     /* holds a command that is not a read */
    int slot;        /* cluster mode: its keys' slot; -1 none yet */
    uint32_t server; /* where its commands route */
    uint16_t n;      /* commands */
    struct ur_buf body;
};

struct unread {
    struct uc_core k; /* first: the core's messages are the handle's */

    struct uc_slot *slot; /* the round's slots; [head, tail) to read */
    size_t head, tail, cap;
    size_t unflushed; /* requests queued, not yet flushed */
    size_t pending;   /* requests flushed, reply not yet read */
    bool piping;      /* a pipeline is open */
    struct uc_batch batch;
    uint32_t *split_map; /* the round's split requests: uid -> group */
    size_t split_len, split_cap;
    /* Cluster mode (unread_cluster.h): the round's frames, kept to be
     * resent; a side connection per node, for a redirected request sent
     * while the node's own connection owes replies of the round. */
    struct ur_buf frames;
    struct uc_conn **side;
    bool refreshing;
};

/* Cluster mode: asks CLUSTER SLOTS again when the map is stale (a MOVED
 * was followed) and it was not asked in the last UC_REFRESH_MIN_MS.
 * Between rounds only. */
void uc_round_refresh(struct unread *c);

/* Readies server s for a request of this round: 0, or why it cannot take
 * one (an open circuit, a failed connect, a failure earlier in the
 * round). */
int uc_round_server(struct unread *c, uint32_t s);

/* Queues one request for server `to` (or UC_ALL, or UC_SPLIT). 0: it has
 * its slots and one reply to read. Else nothing was queued (usage error,
 * out of memory). A global write is sent to no server unless every server
 * can take it. op UR_FRAME_OP_BATCH queues the open batch. */
int uc_req_queue(struct unread *c, uint32_t to, uint16_t op, unsigned argc,
                 const struct unread_arg *argv);

/* Sends every server's queued frames, all within one write timeout. 0, or
 * the first failure (with its message). */
int uc_flush_all(struct unread *c);

/* Reads the next request's answer (all its slots), within one read
 * timeout. The request must have been flushed. */
void uc_req_read(struct unread *c, struct uc_res *out);

/* The round is over: every server may be tried again, and what a long
 * pipeline made the order list hold is given back. */
void uc_round_end(struct unread *c);

/* One synchronous request to `to` (a server, UC_ALL or UC_SPLIT), as
 * uc_roundtrip (unread_int.h). */
int uc_round_call(struct unread *c, uint32_t to, uint16_t op, unsigned argc,
                  const struct unread_arg *argv, struct ur_frame_hdr *h,
                  const char **body);

/* Adds one command to the open batch, or nothing (a usage error: a
 * global write, another server than the batch's, too many commands or
 * bytes; or out of memory). */
int uc_batch_add(struct unread *c, uint16_t op, unsigned argc,
                 const struct unread_arg *argv);

/* A reply (status >= 0) from server s as a tree for the caller: status,
 * or UNREAD_ENOMEM / UNREAD_EPROTO (the connection dropped). */
int uc_reply_tree(struct unread *c, int status, uint32_t s,
                  const struct ur_frame_hdr *h, const char *body,
                  struct unread_reply **out);

#endif
