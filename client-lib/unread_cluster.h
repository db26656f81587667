/*
 * unread_cluster.h - libunread's cluster mode (docs/CLIENT.md "Cluster"):
 * a handle over a cluster-mode deployment (server/cluster.h) learns which
 * node serves each of the 16384 slots from CLUSTER SLOTS, routes every
 * request by its key's slot (protocol/slot.h, the key ops.h names), and
 * follows the redirections a node answers instead of running a request
 * (MOVED, ASK, TRYAGAIN, CLUSTERDOWN: none ran it, so resending is safe).
 *
 * The servers of the handle start as the seeds it was given; nodes the
 * map names are added as they appear, up to UC_CLUSTER_CAP: the arrays of
 * the core are allocated at that capacity up front, so a connection's
 * borrowed address never moves. Internal; not installed.
 */
#ifndef UNREAD_CLUSTER_H
#define UNREAD_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slot.h"
#include "unread_core.h"

#define UC_CLUSTER_CAP 256      /* nodes one handle can know */
#define UC_NO_SERVER UINT32_MAX /* a slot nobody is known to serve */
#define UC_REDIRECTS_MAX 5      /* redirections followed per request */
#define UC_RETRY_PAUSE_MS 20    /* before resending after TRYAGAIN... */
#define UC_REFRESH_MIN_MS 100   /* CLUSTER SLOTS at most this often */

struct uc_cluster {
    uint32_t map[UR_SLOTS];      /* slot -> server, or UC_NO_SERVER */
    uint32_t group_of[UR_SLOTS]; /* slot -> its group, while planning a
                                    split request (uc_split_plan) */
    bool stale;           /* ask CLUSTER SLOTS again before the next use */
    bool known;           /* a map was learnt once */
    int64_t refreshed_ms; /* monotonic */
    uint64_t redirects;   /* followed, in all */
    uint32_t last_node;   /* where the last keyed request went: WAIT's */
    char last[160];       /* the last redirection followed ("" none) */
};

/* Turns k (set up over its seeds by uc_core_init with o->cluster) into a
 * cluster-mode core. 0, or -1 (out of memory). */
int uc_cluster_init(struct uc_core *k);
void uc_cluster_deinit(struct uc_core *k);

/* The server at host:port: found, or added (its connection not made).
 * UC_NO_SERVER when the handle knows UC_CLUSTER_CAP nodes already or is
 * out of memory. */
uint32_t uc_cluster_node(struct uc_core *k, const char *host, size_t hlen,
                         uint16_t port);

/* A CLUSTER SLOTS reply body: the map is rebuilt from it (slots it does
 * not name are unknown). 0, or UNREAD_EPROTO (a malformed reply: the map
 * is unchanged) with the message recorded. */
int uc_cluster_learn(struct uc_core *k, const char *body, size_t len);

/* Routing (uc_route, cluster mode): the server of the request's key's
 * slot (the first server when it is unknown: its MOVED teaches the map),
 * for WAIT the server the last keyed request went to (or was redirected
 * to: WAIT counts the replicas that have that connection's writes),
 * UC_SPLIT for a many-users request over several slots, UC_ALL for a
 * keyless global write (FLUSHALL), UC_FIRST_SERVER for the rest. */
uint32_t uc_cluster_route(const struct uc_core *k, uint16_t op, unsigned argc,
                          const struct unread_arg *argv);
/* The slot of a key argument, or -1 when it is not one (the node's error
 * is the answer). */
int uc_cluster_arg_slot(const struct unread_arg *a);
/* The server of slot (-1 or unknown: the first server). */
uint32_t uc_cluster_slot_server(const struct uc_core *k, int slot);

/* Whether a server error code is a redirection cluster mode follows. */
static inline bool uc_cluster_redirected(int rc)
{
    return rc == UNREAD_ERR_MOVED || rc == UNREAD_ERR_ASK ||
           rc == UNREAD_ERR_TRYAGAIN || rc == UNREAD_ERR_CLUSTERDOWN;
}

/*
 * What a redirection reply (its error value: "slot ip:port" for MOVED and
 * ASK) asks: the server to resend to (added when new; UC_NO_SERVER when
 * it cannot be, or for TRYAGAIN and CLUSTERDOWN: the same server again,
 * after a pause) and whether ASKING goes first. A MOVED also fixes that
 * slot in the map and marks it stale. false for a reply that is not a
 * well-formed redirection.
 */
bool uc_cluster_follow(struct uc_core *k, int rc, const char *body, size_t len,
                       uint32_t *to, bool *asking);

#endif
