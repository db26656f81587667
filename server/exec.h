/*
 * exec.h - the executor: one request (an op from the table and its
 * arguments) in, one reply out. Arity is checked here from the op table;
 * arguments are validated by the handler through the accessors below, which
 * answer the error themselves. The same path serves RESP, the binary
 * protocol and journal replay (persistence/replay.c): nothing here knows
 * about sockets.
 */
#ifndef UR_EXEC_H
#define UR_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "ops.h"
#include "proto.h"
#include "reply.h"
#include "server.h"

/* What a handler may know of the connection that asked: never the socket.
 * Journal replay and tests use a session of their own. */
struct session {
    uint64_t id;            /* client id, unique for the process lifetime */
    uint8_t proto;          /* enum reply_proto (HELLO 3: REPLY_RESP3) */
    bool authed;            /* AUTH succeeded (or none is needed: replay) */
    uint32_t auth_failures; /* failed AUTH attempts (net.c delays the
                               next request after each one) */
    struct multi *multi;    /* the open MULTI transaction (batch.h), or NULL */
    uint32_t subs;          /* pub/sub subscriptions, channels and patterns
                               (pubsub.h): a RESP2 session with any is in
                               subscribed mode */
    struct client *client;  /* the connection (clients.h); NULL for replay,
                               expiry and tests */
    /* Replication (server/repl.h): the stream offset after this
     * session's last write, which WAIT waits for; a WAIT blocks (its
     * reply comes later: reply.h defer); a replica's handshake so far
     * (REPLCONF, PSYNC; NULL until then, freed with the session by
     * net.c); PSYNC ran: the connection becomes a replica's link. */
    uint64_t woff;
    bool blocked;
    bool handover;
    struct repl_hs *repl_hs;
    /* Cluster mode (cluster.h): READONLY (reads may be served by a
     * replica of the slot's primary), ASKING (the next command only). */
    bool readonly;
    bool asking;
    /* ACL (acl.h): the user logged in, holding a reference; NULL is the
     * default user. */
    struct acl_user *acl_user;
};

/* A password is needed (the default user is off or has one: acl.h;
 * requirepass where there is no ACL) and this session has not
 * authenticated: only OPF_NOAUTH ops run, and net.c applies its
 * unauthenticated limits. */
static inline bool session_needs_auth(const struct server *srv,
                                      const struct session *sess)
{
    return !sess->authed &&
           (srv->acl != NULL ? srv->acl_locked
                             : srv->cfg.requirepass[0] != '\0');
}

/* Whether the session is local, as enable-debug-command local and
 * enable-protected-configs local mean it: a loopback client, or no client
 * at all (replay, tests). */
static inline bool session_local(const struct session *sess)
{
    return sess->client == NULL || sess->client->local;
}

struct exec_ctx {
    struct server *srv;
    struct session *sess;
    const struct ur_op *op;
    uint32_t argc; /* arguments after the command name */
    const struct ur_arg *argv;
    struct reply *r;
    bool dirty; /* a command not flagged OPF_WRITE changed state
                   (e.g. a read that registers a new user): the
                   journal must record it too */
};

typedef void (*cmd_fn)(struct exec_ctx *x);

/* Whether argc arguments fit op's arity; arity_err answers ARITY for
 * op, its message preceded by where ("" or "batch op 3: "). */
bool exec_arity_ok(const struct ur_op *op, uint32_t argc);
void exec_arity_err(struct reply *r, const struct ur_op *op, const char *where);

/*
 * Runs op with argv[0..argc) (name excluded) and writes its reply, the
 * refusals included: -NOAUTH, arity, -OOM at maxmemory, -MISCONF for a
 * write while persistence cannot acknowledge writes. Pins the command
 * clock when it is not pinned already (by a batch, or by replay), stages
 * the command's journal record before it runs and feeds it after
 * (persist.h), unless srv->loading.
 */
void exec_op(struct server *srv, struct session *sess, const struct ur_op *op,
             uint32_t argc, const struct ur_arg *argv, struct reply *r);

/* true after replying -MISCONF: persistence cannot acknowledge writes now
 * (the journal cannot be written). false while loading or without
 * persistence. */
bool exec_refuse_write(struct server *srv, struct reply *r);

/* Pins the command clock to the turn's time when it is not pinned
 * already; returns whether it did (the caller then unpins it). */
bool exec_clock_pin(struct server *srv);

/* Text entry: argv[0] is the command name, looked up case-insensitively. */
void exec_text(struct server *srv, struct session *sess, uint32_t argc,
               const struct ur_arg *argv, struct reply *r);

/* Binary entry: opcode from the frame header. */
void exec_binary(struct server *srv, struct session *sess, uint16_t opcode,
                 uint32_t argc, const struct ur_arg *argv, struct reply *r);

/*
 * A hint ahead of exec_binary: when opcode is a user command (OPF_USER)
 * of a family with the hint (PREFETCH in families.def), starts loading
 * uid's record into the cache, in two stages (u64map_prefetch: 0 a few
 * requests before 1). Changes nothing; an unknown opcode or a family
 * without the hint is ignored.
 */
void exec_prefetch(const struct server *srv, uint16_t opcode, uint64_t uid,
                   int stage);

/* Whether exec_prefetch may do anything for opcode: its family has the
 * hint (PREFETCH in families.def). */
static inline bool exec_prefetchable(uint16_t opcode)
{
    return db_prefetchable(db_family_of_opcode(opcode));
}

/*
 * Argument accessors: true with *out set, or false after replying the
 * error (the handler then just returns). `what` names the argument in the
 * message ("uid", "delta").
 */
bool arg_u64(struct exec_ctx *x, uint32_t i, const char *what, uint64_t *out);
bool arg_u32(struct exec_ctx *x, uint32_t i, const char *what, uint32_t *out);
/* A counter type: 0..63, or a name from counter-types. */
bool arg_ctype(struct exec_ctx *x, uint32_t i, unsigned *out);
/* Optional timestamp argument i (ms since the epoch): when the command has
 * no argument i, the command's time (server_clock_ms), which its journal
 * record carries, so replay resolves it to the same value. */
bool arg_ts_opt(struct exec_ctx *x, uint32_t i, uint64_t *out);
/* Case-insensitive keyword compare of argument i (strings only). */
bool arg_is(const struct exec_ctx *x, uint32_t i, const char *word);
/* Argument i as text for messages: copies at most cap-1 bytes, printable
 * only; an integer argument is formatted. */
const char *arg_text(const struct exec_ctx *x, uint32_t i, char *buf,
                     size_t cap);

/* The one "out of memory" reply of every mutator. */
void reply_oom(struct exec_ctx *x);

#endif
