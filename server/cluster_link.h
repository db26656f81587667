/*
 * cluster_link.h - a node's link to one other node of the cluster
 * (cluster.h): an outgoing connection to that node's client port, in
 * the binary protocol, carrying this node's record (CLUSTER PEER) and
 * the global copies it owns (GLOBALCOPY, cluster_copy.h).
 *
 * Messages queue in order and stay queued until the peer acknowledges
 * them (its reply); a connection lost, refused or silent for
 * cluster-node-timeout is made again, with a growing pause (100 ms to
 * 1 s), and whatever was not acknowledged is sent again, in order. Each
 * connection first authenticates (masteruser/masterauth, as a replica
 * does) and sends this node's current record, so the peer knows the
 * owner of what follows. The receiver's side is no code of its own: its
 * executor runs the commands as any client's.
 */
#ifndef UR_CLUSTER_LINK_H
#define UR_CLUSTER_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"

/* A link to c->nodes[node] (connects at the next cron); NULL when out of
 * memory. */
struct cluster_link *clink_create(struct cluster *c, uint32_t node);
/* Closes it; a MEET waiting on it is answered with an error. */
void clink_destroy(struct cluster_link *l);

/* The node it links to. */
uint32_t clink_node(const struct cluster_link *l);
/* Whether the connection is up and the peer answered it. */
bool clink_up(const struct cluster_link *l);
/* Whether the start-up exchange is over for it: the peer answered this
 * node's record, or a connection attempt failed. */
bool clink_settled(const struct cluster_link *l);
/* A MEET's node could not be reached: the entry may go. */
bool clink_meet_failed(const struct cluster_link *l);
/* The node's address changed: the next connection uses the new one. */
void clink_address_changed(struct cluster_link *l);

/* Queues this node's record (coalesced with one not yet sent). */
void clink_push_record(struct cluster_link *l);
/* Queues a GLOBALCOPY with argv[0..argc) (arguments after the name).
 * 0, or -1 when out of memory or over cluster-link-sendbuf-limit (the
 * queued copies are then dropped and a full sync to the node is due:
 * *overflow set). */
int clink_queue_copy(struct cluster_link *l, uint16_t argc,
                     const struct ur_arg *argv, bool *overflow);
/* Bytes queued and not acknowledged. */
size_t clink_pending_bytes(const struct cluster_link *l);

/* sess (a CLUSTER MEET) waits for the peer's first answer. 0, or -1. */
int clink_wait_meet(struct cluster_link *l, struct session *sess);
/* sess's connection closed while it waited: forgotten. */
void clink_meet_cancel(struct cluster_link *l, const struct session *sess);

/* Cron (connect, timeouts) and the end of a loop turn (writes). */
void clink_cron(struct cluster_link *l, uint64_t now_ms);
void clink_flush(struct cluster_link *l);

struct clink_info {
    const char *state; /* "down", "connecting", "handshake", "up" */
    uint64_t pending, pending_bytes;
    uint64_t lag_ms; /* age of the oldest message not acknowledged */
    bool syncing;    /* a full sync of global objects is being queued */
};
void clink_info(const struct cluster_link *l, struct clink_info *out);

/* cluster_copy.c's state for this link (a full sync in progress). */
void *clink_sync_state(const struct cluster_link *l);
void clink_set_sync_state(struct cluster_link *l, void *state);

#endif
