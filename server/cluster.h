/*
 * cluster.h - cluster mode (docs/OPERATIONS.md "Cluster", docs/PROTOCOL.md
 * "Cluster"): Redis Cluster's client-facing protocol over unreadd's data.
 *
 * The key space is Redis's 16384 hash slots (protocol/slot.h); a command's
 * key is the one ops.h ur_op_key_first names (the uid of a user command,
 * the group of RCPT, the object of a global write). Each node keeps a node
 * table (every node of the cluster: id, address, role, config epoch,
 * slots) and answers, before a command runs, the one question of Redis's
 * getNodeByQuery: serve here, or -MOVED / -CROSSSLOT / -CLUSTERDOWN.
 *
 * There is no cluster bus and no failure detection: slot ownership has
 * one writer, the operator's tool (redis-cli --cluster), and each shard's
 * primary one elector, redis-sentinel. Nodes tell each other their own
 * record over the client port (cluster_link.h: a link from every node to
 * every other, speaking the binary protocol), each change of it pushed to
 * every known node and retried until acknowledged; the reply to a push is
 * the receiver's own record and the nodes it knows, so a newcomer met by
 * one node is soon known to all. Slot conflicts are settled by Redis's
 * config-epoch rule: the claim with the higher epoch wins. A replica that
 * sentinel promotes (REPLICAOF NO ONE) takes its old primary's slots at a
 * new epoch; a primary that learns another took all its slots becomes
 * its replica.
 *
 * Global objects (a BC channel's head, a GRP group's head, a DOT push
 * time, a FEED author's count) live on every node; the node owning the
 * object's slot applies a write and copies the new value to every other
 * primary (cluster_copy.h). A server with cluster-enabled no has no struct
 * cluster (srv->cluster is NULL) and asks nothing of this module.
 */
#ifndef UR_CLUSTER_H
#define UR_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec.h"
#include "server.h"
#include "slot.h"

struct event_base;
struct cluster;
struct cluster_link;
struct ckeys;

#define CLUSTER_ID_LEN 40
#define CLUSTER_NONE 0xFFFFu /* no node (a slot's owner, a master) */
/* Nodes in one table at most: a cluster of hundreds of shards fits. */
#define CLUSTER_MAX_NODES 4096u

/* Flags of a node record (CLUSTER NODES' flags column). */
enum {
    CN_MYSELF = 1u << 0,
    CN_MASTER = 1u << 1,
    CN_REPLICA = 1u << 2,
    CN_HANDSHAKE = 1u << 3, /* met, its id not known yet */
    CN_NOADDR = 1u << 4     /* its address is not known */
};

/* One node of the table. Index 0 is always myself. */
struct cluster_node {
    char id[CLUSTER_ID_LEN + 1];
    char ip[64];
    uint32_t port, cport;
    uint32_t flags;
    char master_id[CLUSTER_ID_LEN + 1]; /* "" for a master */
    uint64_t config_epoch;
    uint64_t version; /* its record's version: a push older than the one
                         held is ignored */
    uint32_t nslots;  /* slots it owns in this table */
    uint64_t ping_ms; /* wall clock: a push to it waits since; 0 none */
    uint64_t pong_ms; /* wall clock of its last reply */
    struct cluster_link *link; /* ours to it; NULL for myself */
    /* A master's migration marks as its record carried them ("[5->-id]
     * [9-<-id]", malloc'ed; NULL: none): its replicas apply them to
     * themselves, so that a promoted replica keeps its moves. */
    char *marks;
    bool used; /* a free entry when false */
};

struct cluster {
    struct server *srv;
    struct event_base *base;
    struct cluster_node *nodes; /* [0] is myself */
    uint32_t nnodes;            /* entries used and free */
    uint16_t owner[UR_SLOTS];   /* node index, or CLUSTER_NONE */
    uint32_t assigned;          /* slots with an owner */
    /* Migration states (CLUSTER SETSLOT, Redis's migrating_slots_to and
     * importing_slots_from): node indices, or CLUSTER_NONE. A master acts
     * on them; a replica keeps its master's (learned from its record) and
     * acts on them once promoted. nopen counts the slots with either. */
    uint16_t migrating[UR_SLOTS];
    uint16_t importing[UR_SLOTS];
    uint32_t nopen;
    /* The ids (users, RCPT groups) held per slot (cluster_keys.h). */
    struct ckeys *keys;
    uint64_t current_epoch;
    bool state_ok;                 /* cluster_state: ok */
    bool started;                  /* the start-up exchange has ended */
    uint64_t start_ms;             /* monotonic, setup */
    bool dirty;                    /* the config file must be written */
    bool dirty_sync;               /* ... and fsynced */
    char path[CONFIG_STR_MAX * 2]; /* dir/cluster-config-file */
    /* FORGET: ids not to learn again for a minute, as Redis does. */
    struct forgotten {
        char id[CLUSTER_ID_LEN + 1];
        uint64_t until_ms;
    } forgotten[16];
    /* Global copies received (cluster_copy.c): per slot, the version of
     * the last one applied: its owner's config epoch and stream offset. */
    struct copy_version {
        uint64_t epoch, offset;
    } * received;
    /* Figures for CLUSTER INFO and INFO cluster. */
    uint64_t msgs_sent, msgs_received, copies_sent, copies_applied,
        copies_stale, full_syncs;
    uint64_t links_buffer_limit_exceeded;
};

/* ---- the process ----------------------------------------------------- */

/*
 * After the data is loaded and the network is up: with cluster-enabled,
 * creates srv->cluster from dir/cluster-config-file (Redis's nodes.conf
 * format) or, when there is none, as a new node of its own (a random id,
 * a master without slots), and links to every node the file knows. 0
 * (also with cluster mode off: srv->cluster stays NULL), or -1 with a
 * message (an unreadable or corrupt file names its line).
 */
int cluster_setup(struct server *srv, struct event_base *base, char *err,
                  size_t errlen);
/* Before the network is set up: cluster mode needs max-args to hold
 * CLUSTER ADDSLOTS of every slot (redis-cli --cluster create sends a
 * master's slots in one command), so a lower one is raised to
 * CLUSTER_MIN_ARGS, and logged. */
#define CLUSTER_MIN_ARGS (UR_SLOTS + 2)
void cluster_config_fix(struct config *cfg);
void cluster_teardown(struct server *srv);

/* The table alone, for tests and fuzzers: myself a master with no id and
 * no slots, no event loop (links are made but never connect). NULL when
 * out of memory. destroy frees it (and its links). */
struct cluster *cluster_create(struct server *srv);
void cluster_destroy(struct cluster *c);
/* The config file's bytes (nodes.conf) into a table made by
 * cluster_create; name is for messages ("file line N: ..."). 0, or -1. */
int cluster_config_parse(struct cluster *c, const char *data, size_t len,
                         const char *name, char *err, size_t errlen);

/* Every 100 ms (main.c): links (reconnects, timeouts), the start-up
 * exchange, full syncs, the config file. */
void cluster_cron(struct server *srv);

/* End of a loop turn (net.c), after the journal's write: sends what the
 * turn queued on the links. */
void cluster_flush(struct server *srv);

/* ---- the routing question (exec.c, batch.c) -------------------------- */

/*
 * Before op runs with argv[0..argc) (arity already checked): true after
 * replying -MOVED, -ASK, -TRYAGAIN, -CROSSSLOT, -CLUSTERDOWN or the error
 * of a non-canonical key, false when it runs here. Commands without a key
 * always run here. In a slot MIGRATING from this node: served when every
 * key is held here, -ASK to the target when none is, -TRYAGAIN when some
 * are; in a slot IMPORTING to it: served after ASKING (or for
 * RESTORE-ASKING), unless a multi-key request misses keys (-TRYAGAIN),
 * else -MOVED to the owner (Redis's getNodeByQuery).
 */
bool cluster_refuse_slow(struct server *srv, struct session *sess,
                         const struct ur_op *op, uint32_t argc,
                         const struct ur_arg *argv, struct reply *r);
static inline bool cluster_refuse(struct server *srv, struct session *sess,
                                  const struct ur_op *op, uint32_t argc,
                                  const struct ur_arg *argv, struct reply *r);

/*
 * The keys of a batch or a transaction, one command at a time: start
 * with cluster_batch_init, add each command (false after replying the
 * error of a non-canonical key, or CROSSSLOT when its keys are in another
 * slot than the earlier ones'), then cluster_batch_refuse answers for the
 * slot they share as cluster_refuse would (writes: one of them writes).
 */
struct cluster_batch {
    int slot;    /* -1: no key yet */
    bool writes; /* a command that is not a read */
    /* keys seen in an open slot (migrating or importing here), held
     * here, and whether more than one distinct key was seen */
    uint32_t keys, held;
    uint64_t first_key;
    bool multi;
};
void cluster_batch_init(struct cluster_batch *b);
bool cluster_batch_add(struct server *srv, struct cluster_batch *b,
                       const struct ur_op *op, uint32_t argc,
                       const struct ur_arg *argv, const char *where,
                       struct reply *r);
bool cluster_batch_refuse(struct server *srv, struct session *sess,
                          const struct cluster_batch *b, struct reply *r);

/* ---- replication's hooks (repl.c) ------------------------------------ */

/* REPLICAOF NO ONE made this node a primary: it takes the slots of the
 * master it replicated, at a new config epoch, and tells every node. */
void cluster_promoted(struct server *srv);
/* REPLICAOF host port: this node's master is the node at that address
 * (when the table knows one); its slots are given up. */
void cluster_replica_of(struct server *srv, const char *host, uint32_t port);

/* ---- for the commands (cmd_cluster.c) and INFO ----------------------- */

/* The index of the node with this id (40 characters), or CLUSTER_NONE. */
uint32_t cluster_node_by_id(const struct cluster *c, const char *id,
                            size_t len);
/* Whether this node is a master (with or without slots). */
bool cluster_myself_master(const struct cluster *c);
/* The node whose data this one serves: itself for a master, its master
 * (CLUSTER_NONE when unknown) for a replica. */
uint32_t cluster_data_owner(const struct cluster *c);

/* Slot ownership (CLUSTER ADDSLOTS, DELSLOTS, FLUSHSLOTS): 0, or -1 with
 * a message naming the slot. All or nothing over the list. */
int cluster_add_slots(struct cluster *c, const uint16_t *slots, size_t n,
                      char *err, size_t errlen);
int cluster_del_slots(struct cluster *c, const uint16_t *slots, size_t n,
                      char *err, size_t errlen);

/* CLUSTER MEET ip port [cport]: starts a link to that address; sess
 * blocks (0) until the node answers or the attempt fails or times out
 * (srv->on_unblock_status answers). -1 with a message when the address
 * is not valid; 1 when that address is already a known node, linked
 * (nothing to wait for). */
int cluster_meet(struct cluster *c, struct session *sess, const char *ip,
                 uint32_t port, uint32_t cport, char *err, size_t errlen);

/* CLUSTER FORGET id: 0, or -1 with Redis's message. */
int cluster_forget(struct cluster *c, const char *id, size_t len, char *err,
                   size_t errlen);
/* CLUSTER REPLICATE id: 0, or -1 with Redis's message. */
int cluster_replicate(struct cluster *c, const char *id, size_t len, char *err,
                      size_t errlen);
/* CLUSTER RESET [HARD]: forgets every other node and its slots (HARD:
 * also a new id and epochs 0). -1 with a message when this node holds
 * data (a master with users), as Redis refuses. */
int cluster_reset(struct cluster *c, bool hard, char *err, size_t errlen);
/* CLUSTER SET-CONFIG-EPOCH, BUMPEPOCH (*bumped: whether it changed). */
int cluster_set_config_epoch(struct cluster *c, uint64_t epoch, char *err,
                             size_t errlen);
uint64_t cluster_bump_epoch(struct cluster *c, bool *bumped);
/*
 * CLUSTER SETSLOT slot IMPORTING id | MIGRATING id | STABLE | NODE id, as
 * Redis's clusterCommandSetSlot, with its error texts: 0, or -1 with the
 * message. action is one of those names (any case); id is NULL for
 * STABLE. NODE of a slot this node was importing to itself bumps its
 * config epoch (without consensus, as Redis) so that its claim wins;
 * NODE of a slot it owns to another needs the slot empty here, and never
 * makes this node a replica (Redis does with replica migration on: here
 * each shard's roles are sentinel's).
 */
int cluster_setslot(struct cluster *c, unsigned slot, const char *action,
                    const char *id, size_t id_len, char *err, size_t errlen);

/* CLUSTER SAVECONFIG: writes the file now. 0, or -1 with errno. */
int cluster_save_config(struct cluster *c);

/* A node record changed here (a command above): version, file, pushes. */
void cluster_changed(struct cluster *c);

/*
 * A peer's record arrived (CLUSTER PEER, or the reply to ours): fields
 * as the link carries them (docs/PROTOCOL.md "Cluster"). Merged by the
 * rules above; 0, or -1 with a message for a malformed record.
 */
struct cluster_record {
    const char *id;
    size_t id_len;
    const char *ip;
    size_t ip_len;
    uint32_t port, cport;
    bool master;
    const char *master_id;
    size_t master_id_len;
    uint64_t config_epoch, current_epoch, version;
    const uint16_t *ranges; /* nranges pairs: first, last */
    size_t nranges;
    /* The slots text as sent, with its migration marks ("[5->-id]"
     * migrating, "[5-<-id]" importing): a replica takes its master's. */
    const char *slots_text;
    size_t slots_text_len;
};
int cluster_merge_record(struct cluster *c, const struct cluster_record *rec,
                         struct cluster_link *via, char *err, size_t errlen);
/* A node the sender knows (the known list of a record): linked to when new. */
void cluster_learn(struct cluster *c, const char *id, size_t id_len,
                   const char *ip, size_t ip_len, uint32_t port,
                   uint32_t cport);

/* Writes myself's record as the link carries it, and the known list, into
 * the reply (the answer to CLUSTER PEER) or a request (cluster_link.c). */
void cluster_reply_record(const struct cluster *c, struct reply *r);

/* CLUSTER NODES, SLOTS, SHARDS, INFO, as Redis prints them. */
void cluster_reply_nodes(const struct cluster *c, struct reply *r,
                         bool myself_only);
void cluster_reply_slots(const struct cluster *c, struct reply *r);
void cluster_reply_shards(const struct cluster *c, struct reply *r);
void cluster_reply_info(const struct cluster *c, struct reply *r);

/* INFO cluster's lines (cmd_info.c): appended to out. */
void cluster_info_lines(const struct cluster *c, struct ur_buf *out);

/* The nodes in the table (CLUSTER INFO cluster_known_nodes). */
uint32_t cluster_known_nodes(const struct cluster *c);
/* CLUSTER REPLICAS id: node m's replicas' lines. */
void cluster_reply_replicas(const struct cluster *c, uint32_t m,
                            struct reply *r);
/* Encodes myself's record as CLUSTER PEER's arguments after a request
 * header (the name included); returns the argument count. */
uint16_t cluster_put_record(const struct cluster *c, struct ur_buf *b,
                            const char *dialed_ip);
/* A record's slot text ("0-5460 5461") into out[0..cap) as pairs. 0, or
 * -1 when malformed or too long. */
int cluster_parse_ranges(const char *s, size_t n, uint16_t *out, size_t cap,
                         size_t *nranges);
/* A record's known list ("id,ip,port,cport ..."): each node learned. */
void cluster_learn_list(struct cluster *c, const char *s, size_t n);
/* A peer dialed this node at ip: its own address, when it had none. */
void cluster_learn_my_ip(struct cluster *c, const char *ip, size_t len);
/* A connection blocked in CLUSTER MEET closes (net.c). */
void cluster_meet_cancel(struct server *srv, const struct session *sess);

/* The slot's owner, or NULL. */
const struct cluster_node *cluster_slot_owner(const struct cluster *c,
                                              unsigned slot);

/* The question's common answer in a few instructions: one key, a binary
 * integer, in a slot this node serves while the cluster is up. Anything
 * else asks cluster_refuse_slow. */
static inline bool cluster_refuse(struct server *srv, struct session *sess,
                                  const struct ur_op *op, uint32_t argc,
                                  const struct ur_arg *argv, struct reply *r)
{
    const struct cluster *c = srv->cluster;
    unsigned k = ur_op_key_first(op);

    if (k == 0)
        return false;
    if (k <= argc && argv[k - 1].kind == UR_ARG_INT &&
        !(op->flags & OPF_UIDS) && c->started &&
        (c->assigned == UR_SLOTS || !srv->cfg.cluster_require_full_coverage)) {
        unsigned slot = ur_u64_slot(argv[k - 1].num);

        if (c->owner[slot] == 0 && c->migrating[slot] == CLUSTER_NONE)
            return false;
    }
    return cluster_refuse_slow(srv, sess, op, argc, argv, r);
}

#endif
