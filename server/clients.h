/*
 * clients.h - the client registry: what the server knows of each
 * connection beyond its session, for CLIENT LIST/INFO/KILL/SETNAME,
 * MONITOR and INFO clients (Redis's `client` struct, without the socket).
 *
 * net.c owns the connections: it embeds a struct client in each, fills
 * the addresses at accept, registers it (clients_add) and unregisters it
 * before the close (clients_remove). What only the network knows (buffer
 * sizes, how to close, how to send a message nobody asked for) it offers
 * through struct client_io, so that handlers here never touch a socket and
 * the executor still runs without a network (replay, unit tests, fuzzers:
 * their sessions have no client).
 *
 * Pushing: clients_push_begin gives a reply writer on a client's output,
 * in its protocol (reply.h reply_begin_push: RESP as it is, a push frame
 * on the binary protocol); clients_push_end queues it for the flush. A
 * client whose unsent output passes its limits (client-output-limit, and
 * the pubsub-output-* limits while it subscribes: docs/OPERATIONS.md) is
 * closed after the turn's writes, never during the caller's walk of the
 * registry or of a channel's subscribers. MONITOR and pub/sub
 * (pubsub.h) use it. A message always lands between two replies of the
 * receiving connection: one pushed to the connection whose command is
 * running (a RESP3 client publishing to its own channel) is held aside
 * and follows that command's reply.
 */
#ifndef UR_CLIENTS_H
#define UR_CLIENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ops.h"
#include "proto.h"
#include "reply.h"

struct server;
struct session;
struct ps_client;

#define CLIENT_ADDR_MAX 64
#define CLIENT_NAME_MAX 128 /* CLIENT SETNAME, lib-name, lib-ver */

/* Figures of one connection that only the network layer has. */
struct client_bufs {
    size_t qbuf;     /* unparsed input bytes held */
    size_t qbuf_cap; /* ... and the buffer's size */
    size_t obuf;     /* reply bytes not yet sent */
    size_t obuf_cap; /* ... and the buffer's size */
    bool reading;    /* the read event is armed (events=r) */
    bool writing;    /* the write event is armed (events=w) */
};

struct client;

struct client_io {
    void (*bufs)(const struct client *cl, struct client_bufs *out);
    /* Closes the connection at once (never the one whose command runs:
     * that one closes after its reply, see cmd_CLIENT). */
    void (*kill)(struct client *cl);
    /* The output buffer a push is written to, and the flush after it;
     * push_done returns false when the connection is over its output
     * limits (it is closed after the turn's writes; later pushes to it
     * are dropped). */
    struct ur_buf *(*push_out)(struct client *cl);
    bool (*push_done)(struct client *cl);
};

enum client_flag {
    CLIENT_MONITOR = 1u << 0, /* receives every command (MONITOR) */
    CLIENT_KILLED = 1u << 1,  /* CLIENT KILL: closes after this reply */
    CLIENT_REPLICA = 1u << 2, /* a replica's link (repl.h): flags=S */
    CLIENT_MASTER = 1u << 3   /* this replica's link to its primary: M */
};

/* RESET: the connection as new (Redis's RESET): no transaction, no
 * subscriptions, not a monitor, no name, authenticated only when no
 * password is needed; the caller sets the protocol. */
void clients_reset(struct server *srv, struct session *sess);

struct client {
    struct session *sess;
    const struct client_io *io;
    uint32_t flags; /* enum client_flag */
    int fd;
    char addr[CLIENT_ADDR_MAX];  /* peer "ip:port" */
    char laddr[CLIENT_ADDR_MAX]; /* local "ip:port" */
    bool local;                  /* the peer is a loopback address: what
                                    enable-*-command local and protected
                                    mode call local (net.c) */
    char *name;                  /* CLIENT SETNAME; NULL: none */
    char *lib_name, *lib_ver;    /* CLIENT SETINFO; NULL: none */
    uint64_t ctime_ms;           /* connected at (wall clock) */
    uint64_t last_ms;            /* last command at (wall clock) */
    int16_t last_op;             /* index of the last command; -1 none */
    struct ps_client *ps;        /* its subscriptions (pubsub.h); NULL none */
    struct client *prev, *next;  /* the registry */
};

/* The registry (in struct server): every connected client, newest first,
 * and how many of them are monitors. */
struct client_list {
    struct client *head;
    uint32_t monitors;
};

/* Registers cl (its sess, io, fd and addresses set by the caller). */
void clients_add(struct server *srv, struct client *cl, uint64_t now_ms);
/* Unregisters cl and frees what it holds (name, lib-name, lib-ver). */
void clients_remove(struct server *srv, struct client *cl);

/* The client with this id, or NULL. O(clients). */
struct client *clients_find(struct server *srv, uint64_t id);

/* One CLIENT LIST / CLIENT INFO line (no newline) into b. 0 or -1. */
int clients_describe(const struct server *srv, const struct client *cl,
                     uint64_t now_ms, struct ur_buf *b);

/* Sets a name field (name, lib-name, lib-ver) to s[0..n), or clears it
 * when n is 0. 0, or -1 on allocation failure (unchanged). */
int clients_set_str(char **field, const char *s, size_t n);

/* Starts / ends a push to cl (see above). */
void clients_push_begin(struct client *cl, struct reply *r);
bool clients_push_end(struct client *cl, struct reply *r);

/* Makes sess's client a monitor; false when sess has no client. */
bool clients_monitor(struct server *srv, struct session *sess);

/* Whether argument i of op is a secret that is never shown (MONITOR,
 * SLOWLOG): AUTH's arguments, HELLO's after AUTH, the value CONFIG SET
 * gives a secret key (config_is_secret). */
bool clients_arg_secret(const struct ur_op *op, uint32_t argc,
                        const struct ur_arg *argv, uint32_t i);

/*
 * After a command ran: sends it, as Redis's MONITOR shows it, to every
 * monitor but the client that sent it, its secrets (clients_arg_secret)
 * as "(redacted)". Commands of sessions with no client (replay, expiry)
 * are not shown.
 */
void clients_monitor_feed(struct server *srv, const struct session *sess,
                          const struct ur_op *op, uint32_t argc,
                          const struct ur_arg *argv);

#endif
