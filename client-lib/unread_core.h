/*
 * unread_core.h - what both faces of libunread share. The synchronous
 * handle (struct unread: rounds, pipelines, batches; unread_round.h) and
 * the asynchronous one (struct unread_async; unread_async.c) are each a
 * struct uc_core underneath: the server list and its hash ring, each
 * server's connection and circuit breaker, the options, the degraded
 * replies and the message of the last failure. On it:
 *   routing    where a request goes, from the op table's flags and its
 *              first argument (unread_route.c);
 *   servers    a server's breaker admits a request or not, and hears of
 *              its outcome (unread_server.c);
 *   answers    a request's replies - one, one per server for a global
 *              write, one per share of a split request - become one
 *              answer, and degraded mode maps a failure to the default
 *              (unread_answer.c);
 *   calls      the typed calls' encode/decode pairs (unread_call.h).
 * Internal; not installed.
 */
#ifndef UNREAD_CORE_H
#define UNREAD_CORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "frame.h"
#include "unread.h"
#include "unread_conn.h"
#include "unread_shard.h"

#define UC_CORE_ERRLEN 512
#define UC_PENDING INT_MIN /* a part's outcome: its reply is still to come */
#define UC_ALL UINT32_MAX  /* route: every server (a global write) */
#define UC_SPLIT (UINT32_MAX - 1) /* route: split by uid (OPF_UIDS) */
#define UC_FIRST_SERVER 0         /* route of admin and unkeyed commands */
#define UC_BATCH_KEEP 65536       /* batch and merge bytes kept when idle */
#define UC_TYPES_MAX 64           /* counter types (UNREAD_CNT_TYPES) */
#define UC_TYPE_NAME 32           /* a counter type's name, NUL included */

/* The options, as unread_opts_new() and its setters make them (opaque to
 * callers: growing it breaks no binary). */
struct unread_opts {
    int connect_timeout_ms;
    int read_timeout_ms;
    int write_timeout_ms;
    bool degraded;
    uint64_t default_value;
    unsigned breaker_failures;
    int breaker_open_ms;
    unsigned ring_points;
    /* owned. In a handle's core, the ACL user name (empty: the default
     * user) follows the password after its NUL, so that every connection
     * borrowing the password reads both through one pointer
     * (uc_cred_user). */
    char *password;
    char *user; /* owned; the handle's core keeps it in password */
    int reconnect_min_ms;
    int reconnect_max_ms;
    char *sentinels; /* owned; servers are master names (unread_sentinel.h) */
    bool sentinel_replica;
    bool cluster; /* cluster mode: the servers are seeds (unread_cluster.h) */
    struct uc_tls_opts tls; /* owned strings (unread_tls.h) */
};

struct uc_server {
    struct uc_conn conn;
    struct uc_breaker brk; /* used while degraded mode is on */
    int round_rc;          /* sync: its failure in the current round */
};

/* One server's answer to one part of a request. */
struct uc_res {
    int rc; /* 0, a server error (> 0), or a failure (< 0) */
    uint32_t server;
    struct ur_frame_hdr h;
    const char *body; /* h.len bytes, when rc >= 0 */
};

/* What degraded mode needs to know of a request to map its failure. */
struct uc_what {
    uint16_t op;      /* its opcode, or UR_FRAME_OP_BATCH */
    uint16_t nbatch;  /* a batch: its command count */
    bool batch_reads; /* ... all of them reads */
};

struct uc_core {
    struct uc_addr *addr; /* nsrv, as listed */
    struct uc_server *srv;
    size_t nsrv;
    struct uc_ring ring;    /* when nsrv > 1 */
    struct unread_opts opt; /* its password is the core's copy */
    struct uc_tls *tls;     /* the connections' TLS context; NULL: TCP */
    struct uc_breaker_cfg brk_cfg;

    struct uc_res *res; /* res_cap: one request's replies (one a
                           server, or a split request's group) */
    size_t res_cap;
    uint32_t *group_of;       /* nsrv: server -> its group, while planning */
    struct ur_buf dflt;       /* reply body of a degraded read: INT default */
    struct ur_buf dflt_batch; /* ... of a degraded batch: ARRAY of them */
    struct ur_buf merged;     /* the reply body of the last split request */
    uint32_t last_srv;        /* server of the last answer */

    /* counter-types, learnt from a server (unread_type) */
    unsigned ntypes;
    bool types_known;
    char types[UC_TYPES_MAX][UC_TYPE_NAME];

    char err[UC_CORE_ERRLEN];

    struct uc_pubsub *ps;  /* subscriptions (unread_pubsub.c), or NULL */
    struct uc_cluster *cl; /* cluster mode (unread_cluster.h), or NULL */
};

/* ---- The core (unread.c) ---------------------------------------------- */

/* The defaults (unread_opts_new). */
void uc_opts_defaults(struct unread_opts *o);

/* Sets k up over the n servers in a (which it takes over, even on
 * failure) with a copy of o: 0, or -1 with a message in err. Connects to
 * nothing. */
int uc_core_init(struct uc_core *k, struct uc_addr *a, size_t n,
                 const struct unread_opts *o, char *err, size_t errlen);
void uc_core_deinit(struct uc_core *k);

/* Keeps a copy of password (NULL: none) and of the ACL user name (NULL or
 * "": the default user) for every server's connects. 0, or -1 when out
 * of memory (the old ones are kept). */
int uc_core_password(struct uc_core *k, const char *user, const char *password);

/* Records the message for the last failure and returns rc. */
int uc_err(struct uc_core *k, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parses a server list into an address array, as unread_connect_cluster
 * documents ("host:port,...", or host and port for one server when list
 * is NULL; master names when o has sentinels): 0, or -1 with a message in
 * err. */
int uc_core_addrs(const char *list, const char *host, uint16_t port,
                  const struct unread_opts *o, struct uc_addr **a, size_t *n,
                  char *err, size_t errlen);

/* Learns the counter-types from a CONFIG GET counter-types reply body:
 * true when it was one (the names kept), else false. */
bool uc_core_learn_types(struct uc_core *k, const char *body, size_t len);

/* The number of a counter type written as a name or a number: 0 with
 * *type set, or UNREAD_ERR_BADARG (message recorded). The names must be
 * known. */
int uc_core_type(struct uc_core *k, const char *name, unsigned *type);

/* ---- Routing (unread_route.c) ----------------------------------------- */

/* The server of a request, UC_ALL (a global write) or UC_SPLIT (a
 * many-users request whose uids live on several servers). A keyed request
 * without a usable key goes to the first server, whose error reply is the
 * answer. */
uint32_t uc_route(const struct uc_core *k, uint16_t op, unsigned argc,
                  const struct unread_arg *argv);

/*
 * A many-users request the caller routed to UC_SPLIT, planned as one
 * request per group of its uids: a group per server, or in cluster mode
 * per slot (a node answers CROSSSLOT to a request whose keys span slots).
 * Groups are numbered in the order of their first uid; the replies are
 * merged back by map (uc_merge).
 */
struct uc_split {
    unsigned from; /* index of the first uid argument */
    unsigned n;    /* uids */
    unsigned groups;
    uint32_t *map;           /* n: uid i -> its group */
    uint32_t *server;        /* groups: the server of each */
    uint32_t *start;         /* groups + 1: group g's uids are */
    struct unread_arg *uids; /*   uids[start[g] .. start[g + 1]) */
    struct unread_arg *args; /* argc: one group's request (uc_split_args) */
    uint32_t *key;           /* groups: the slot or server grouped by */
};

/* Plans argv's request into sp (k->res grows to the groups' count). 0, or
 * UNREAD_ENOMEM (recorded; nothing to free). */
int uc_split_plan(struct uc_core *k, uint16_t op, unsigned argc,
                  const struct unread_arg *argv, struct uc_split *sp);
/* Group g's request into sp->args: its argument count. */
unsigned uc_split_args(struct uc_split *sp, unsigned g);
void uc_split_free(struct uc_split *sp);

/* The server of key (a uid, a gid): the ring's, or in cluster mode its
 * slot's (unread_shard_of). */
size_t uc_shard_of(const struct uc_core *k, uint64_t key);

/* A key argument: an integer, or a string holding a canonical decimal. */
bool uc_arg_key(const struct unread_arg *a, uint64_t *key);

bool uc_op_is_read(uint16_t op);
bool uc_op_is_global(uint16_t op);

/* Arguments are checked once, before routing, so a usage error is the
 * answer whatever state the servers are in: 0 or UNREAD_EUSAGE. */
int uc_args_check(struct uc_core *k, unsigned argc,
                  const struct unread_arg *argv);

/* Name or opcode, as unread_command() documents: 0 with *op, or
 * UNREAD_ERR_UNKNOWN / UNREAD_EUSAGE (message recorded). */
int uc_resolve_op(struct uc_core *k, const char *name, uint16_t opcode,
                  uint16_t *op);

/* ---- Servers: breaker and outcomes (unread_server.c) -------------------- */

/* Failures that say a server could not be reached or could not be
 * trusted: they count against its circuit and degrade reads. */
bool uc_unreachable(int rc);

/* Whether server s's circuit lets a request through now: 0, or
 * UNREAD_EUNAVAIL with the reason in its connection's err. Always 0 while
 * degraded mode is off. An open circuit whose time is up admits this
 * request as its probe. */
int uc_server_admit(struct uc_core *k, uint32_t s);

/* Server s's connection failed with rc: it is dropped, and a failure of
 * reachability counts against its circuit. */
void uc_server_down(struct uc_core *k, uint32_t s, int rc);

/* Server s answered: its circuit closes. */
void uc_server_answered(struct uc_core *k, uint32_t s);

/* ---- Answers (unread_answer.c) ------------------------------------------ */

/* The status of a reply: 0, or the server's error code; UNREAD_EPROTO
 * (message in the connection's err) when status and value disagree. */
int uc_reply_status(struct uc_conn *c, const struct ur_frame_hdr *h,
                    const char *body);

/* One answer from a global write's n replies res[0..n). */
void uc_combine(struct uc_core *k, uint16_t op, size_t n,
                const struct uc_res *res, struct uc_res *out);

/*
 * One answer from a split request's span replies res[0..span) (one per
 * group of its uids, uc_split_plan), map[0..nuids) giving each uid's
 * group: the arrays merged back in the caller's order into
 * k->merged. false when the answer is a failure for uc_surface to
 * describe; true when *out is final (merged, degraded, or a failure of
 * the merge itself).
 */
bool uc_merge(struct uc_core *k, uint16_t op, const struct uc_res *res,
              size_t span, const uint32_t *map, uint32_t nuids,
              struct uc_res *out);

/* What the caller sees of an answer: errstr for a failure, and degraded
 * mode's mapping (a read that could not reach its server is the default,
 * a write that never left is UNREAD_EUNAVAIL). */
void uc_surface(struct uc_core *k, const struct uc_what *w, struct uc_res *r);

#endif
