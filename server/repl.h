/*
 * repl.h - replication (docs/OPERATIONS.md "Replicas and failover",
 * docs/PERSISTENCE.md "Replication"): a primary streams its committed
 * records to its replicas, a replica applies its primary's stream.
 *
 * Execution propagates, replication listens: every record the executor
 * commits (persist_feed, persist_batch_end) or a replica applies
 * (persist_append_payload) is taken by repl_feed into the backlog
 * (backlog.h) at its stream offset, and each replica's link sends the
 * backlog from its own cursor at the end of the loop turn (repl_flush),
 * after the turn's journal write. The records are the journal's: the
 * request as received and the clock it ran at, so a replica replaying them
 * (replay_record: the executor with srv->loading set) is an exact copy,
 * expiry included (the primary's sweep journals USER.EXPIRE; a replica
 * sweeps nothing).
 *
 * The primary side: PSYNC (cmd_repl.c) hands the connection over from
 * net.c (repl_take_replica). A replica whose history and offset the
 * backlog still holds continues from there (+CONTINUE); any other gets a
 * full sync: a background save (persist_bgsave, or the one running when
 * the backlog holds its cut), then +FULLRESYNC, the snapshot file as a
 * bulk, and the stream from the snapshot's offset. Replicas acknowledge
 * (REPLCONF ACK offset) after each read they applied; WAIT blocks on
 * those, min-replicas-to-write counts them.
 *
 * The replica side: one outgoing link through PING, AUTH, REPLCONF and
 * PSYNC (as Redis's replica handshake), then the snapshot (persist_adopt)
 * and the records. A replica journals what it applies, keeps a backlog of
 * its own (so that after a promotion the other replicas resync
 * partially), and can serve replicas of its own.
 */
#ifndef UR_REPL_H
#define UR_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec.h"
#include "server.h"

struct event_base;

/* A connecting replica's handshake on its session (REPLCONF, PSYNC). */
struct repl_hs {
    uint32_t port;       /* REPLCONF listening-port; 0: not said */
    char ip[64];         /* REPLCONF ip-address; "": the peer's address */
    char psync_id[41];   /* PSYNC's replication id ("?": none) */
    uint64_t psync_from; /* ... the first stream byte it wants (offset+1) */
};

/* ---- the process ---------------------------------------------------- */

/* After the network: creates srv->repl. With replicaof set the server
 * starts as a replica of it (its history kept, to resync partially);
 * else as a primary, under a new replication id (the one it had kept as
 * replid2: a restart after a crash may have lost records its old replicas
 * have). 0, or -1 with a message. */
int repl_setup(struct server *srv, struct event_base *base, char *err,
               size_t errlen);
/* Closes every link; frees srv->repl. */
void repl_teardown(struct server *srv);
/* Every 100 ms (main.c): reconnects, heartbeats, acknowledgements,
 * timeouts, full syncs waiting for a save, the backlog's trim. */
void repl_cron(struct server *srv);

/* ---- the executor and the network ---------------------------------- */

/*
 * Before a command runs (not while loading): a write on a replica answers
 * -READONLY, on a primary with fewer good replicas than
 * min-replicas-to-write -NOREPLICAS; a data command (not OPF_ADMIN) on a
 * replica whose link is down, with replica-serve-stale-data no,
 * -MASTERDOWN. true after replying.
 */
bool repl_refuse(struct server *srv, const struct ur_op *op, struct reply *r);
/* The same for a batch, once for all of it (writes: it has a write). */
bool repl_refuse_batch(struct server *srv, bool writes, struct reply *r);

/* After a record may have been committed (exec.c, batch.c, a replica's
 * apply): takes it into the backlog; sess (may be NULL) remembers its end
 * offset for WAIT. */
void repl_feed(struct server *srv, struct session *sess);

/* End of a loop turn, after the journal's write (net.c): sends what the
 * backlog gained to every replica. */
void repl_flush(struct server *srv);

/*
 * PSYNC ran on a connection (sess->handover): net.c gives it up. Its
 * transport (tr, copied: the socket and, over TLS, the session with it)
 * and the registry's addresses (addr "ip:port", laddr) become a replica's
 * link; out[0..n) is reply output not yet sent (REPLCONF's +OK), which
 * goes first. The handshake is sess->repl_hs. The link's client id is
 * sess->id.
 */
struct tr_conn;
void repl_take_replica(struct server *srv, const struct tr_conn *tr,
                       const struct session *sess, const char *addr,
                       const char *laddr, const char *out, size_t n);

/* WAIT (cmd_repl.c): true with *count when it can answer now (enough
 * replicas acknowledged sess->woff, or none is wanted); else blocks sess
 * (sess->blocked) until they have or timeout_ms passed (0: forever);
 * srv->on_unblock then answers. */
bool repl_wait(struct server *srv, struct session *sess, uint32_t numreplicas,
               uint64_t timeout_ms, uint64_t *count);
/* A blocked session's connection closes. */
void repl_wait_cancel(struct server *srv, struct session *sess);

/* ---- REPLICAOF and what INFO and ROLE show (cmd_repl.c, cmd_info.c) -- */

/* REPLICAOF host port: 0, 1 when already a replica of it (nothing
 * changes), -1 with a message. REPLICAOF NO ONE: repl_set_primary. */
int repl_set_replica_of(struct server *srv, const char *host, uint32_t port,
                        char *err, size_t errlen);
void repl_set_primary(struct server *srv);

enum repl_state {
    RS_NONE,       /* a primary: no link */
    RS_CONNECT,    /* to connect (again) */
    RS_CONNECTING, /* the TCP connect is in progress */
    RS_HANDSHAKE,  /* PING, AUTH, REPLCONF, PSYNC in turn */
    RS_SYNC,       /* full sync: the snapshot is awaited or arriving */
    RS_CONNECTED   /* streaming */
};

struct repl_info {
    bool replica;
    /* the replica's link */
    const char *host;
    uint32_t port;
    enum repl_state state;
    int64_t last_io_s;    /* seconds since the primary said anything */
    int64_t down_since_s; /* seconds the link has been down; -1 never up */
    uint64_t sync_total;  /* full sync: snapshot bytes, received so far */
    uint64_t sync_read;
    int64_t sync_last_io_s;
    uint64_t primary_offset; /* the primary's, from its heartbeats */
    /* both */
    uint32_t replicas;      /* links of replicas (every state) */
    uint32_t good_replicas; /* online, lag <= min-replicas-max-lag */
    bool backlog_active;
    uint64_t backlog_first; /* first byte held (Redis: offset + 1) */
    uint64_t backlog_histlen;
    size_t backlog_bytes;
    uint64_t sync_full, sync_partial_ok, sync_partial_err;
    uint64_t apply_errors; /* records a replica could not apply */
    uint64_t repl_in_bytes, repl_out_bytes;
};
void repl_info(const struct server *srv, struct repl_info *out);

/* One replica of this primary, for INFO's slaveN lines and ROLE. */
struct repl_replica {
    const char *ip;
    uint32_t port;
    const char *state; /* wait_bgsave, send_bulk, online */
    uint64_t offset;   /* acknowledged */
    uint64_t lag_s;    /* seconds since its last acknowledgement */
};
typedef void (*repl_replica_fn)(const struct repl_replica *rr, void *ctx);
void repl_replicas(const struct server *srv, repl_replica_fn fn, void *ctx);

/* The name ROLE gives a link state. */
const char *repl_state_name(enum repl_state st);

#endif
