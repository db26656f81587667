/*
 * unread.h - libunread, the C client of unreadd over the binary protocol.
 *
 * One `struct unread` is a client of one server (unread_connect) or of a
 * sharded deployment (unread_connect_cluster): the same typed calls,
 * generic calls and pipelines work on both. A cluster routes each request
 * by the command table (docs/CLIENT.md): user-keyed commands to the server
 * owning the uid, RCPT commands to the server owning the gid (consistent
 * hashing), global writes (GRP.POST, BC.PUBLISH, DOT.PUSH, FEED.POST,
 * FEED.UNPOST) to every server, anything else to the first server. Calls
 * are synchronous (one request, one reply) or pipelined (queue many
 * requests, send them in one write per server, read the replies in order);
 * an atomic batch runs several commands on one server with nothing in
 * between. struct unread_async (at the end of this file) is the same
 * client for event loops: calls queue and return, a callback gets the
 * result.
 *
 * Threads: the library keeps no global state and takes no locks. A handle
 * must be used by one thread at a time (typically one handle per thread);
 * distinct handles are independent. Signals: writes use MSG_NOSIGNAL, so a
 * peer that went away gives UNREAD_EIO/UNREAD_ECLOSED, never SIGPIPE. The
 * library prints nothing.
 *
 * Errors: every call that can fail returns int: 0 on success, a positive
 * UNREAD_ERR_* code when the server answered with an error (the wire status
 * code), UNREAD_DEGRADED when degraded mode answered a read with the
 * configured default, or a negative UNREAD_E* code for a failure on the
 * client side. unread_errstr() then describes the last failure.
 *
 * Timeouts: each server connection has a connect timeout (one attempt),
 * a write timeout (sending a call's or a flush's requests) and a read
 * timeout (the reply, from the end of the send).
 *
 * Reconnect: a client-side failure (I/O error, timeout, protocol error,
 * connection closed) closes that server's connection; the next request for
 * it connects again (one attempt) before sending. A request is never
 * resent by the library: after a failure the caller cannot tell whether a
 * write was applied, and decides itself whether to retry.
 *
 * Degraded mode (opt-in, unread_opts_set_degraded): each server has a circuit
 * breaker. Reads of an unreachable server (or one whose circuit is open)
 * return UNREAD_DEGRADED with the configured default, at once and without
 * touching the network while the circuit is open; writes that were not
 * sent return UNREAD_EUNAVAIL, for the caller to queue or drop.
 *
 * Self-contained: this header needs only the C11 standard headers.
 */
#ifndef UNREAD_H
#define UNREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; unread_version() is the library's. The
 * major number is the ABI's: libunread.so.MAJOR. */
#define UNREAD_VERSION_MAJOR 1
#define UNREAD_VERSION_MINOR 1
#define UNREAD_VERSION_PATCH 0
#define UNREAD_VERSION "1.1.0"
#define UNREAD_VERSION_NUMBER                                                  \
    (UNREAD_VERSION_MAJOR * 10000 + UNREAD_VERSION_MINOR * 100 +               \
     UNREAD_VERSION_PATCH)
#define UNREAD_DEFAULT_PORT 7460

/* The running library's version, as UNREAD_VERSION_NUMBER (a program
 * built against 1.0 and run with 1.2 gets 10200), and as text. */
int unread_version(void);
const char *unread_version_string(void);

/*
 * Result codes. Positive values are the binary protocol's error status
 * codes, numerically identical to the server's (docs/PROTOCOL.md); a newer
 * server may send codes not listed here, which are passed through as they
 * are. Negative values never come from the server.
 */
enum unread_result {
    UNREAD_OK = 0,

    /* Server error replies (wire status codes). */
    UNREAD_ERR_ERR = 1,         /* generic failure */
    UNREAD_ERR_ARITY = 2,       /* wrong number of arguments */
    UNREAD_ERR_UNKNOWN = 3,     /* unknown command or opcode */
    UNREAD_ERR_BADARG = 4,      /* not a number, out of range, bad name */
    UNREAD_ERR_NOAUTH = 5,      /* authentication required */
    UNREAD_ERR_OOM = 6,         /* the server's maxmemory is reached */
    UNREAD_ERR_MISCONF = 7,     /* the server cannot write its journal */
    UNREAD_ERR_NOPROTO = 8,     /* unsupported protocol version */
    UNREAD_ERR_TOOBIG = 9,      /* frame or argument count too big */
    UNREAD_ERR_LIMIT = 10,      /* a configured per-entity limit */
    UNREAD_ERR_PROTO = 11,      /* the server lost framing; it closes */
    UNREAD_ERR_WRONGPASS = 12,  /* AUTH with a bad password */
    UNREAD_ERR_EXECABORT = 13,  /* text protocol's EXEC only: never sent on
                                   the binary protocol the library speaks */
    UNREAD_ERR_READONLY = 14,   /* a write sent to a replica */
    UNREAD_ERR_NOREPLICAS = 15, /* the primary has fewer good replicas than
                                   its min-replicas-to-write */
    UNREAD_ERR_MASTERDOWN = 16, /* a replica whose link to its primary is
                                   down, with replica-serve-stale-data no */
    /* Cluster mode (docs/CLIENT.md "Cluster"): a handle in cluster
     * mode follows MOVED and ASK itself; these reach the caller only when
     * following fails (too many redirections). */
    UNREAD_ERR_MOVED = 17,       /* the slot is served by another node */
    UNREAD_ERR_ASK = 18,         /* the key moves: ask that node, once */
    UNREAD_ERR_CROSSSLOT = 19,   /* a request's keys span slots */
    UNREAD_ERR_CLUSTERDOWN = 20, /* the key's slot has no node */
    UNREAD_ERR_TRYAGAIN = 21,    /* the keys are being moved: retry */
    /* 22: NOPERM (ACLs). Moving users (RESTORE, MIGRATE): */
    UNREAD_ERR_BUSYKEY = 23, /* RESTORE of an id that holds state */
    UNREAD_ERR_IOERR = 24,   /* MIGRATE could not reach its target */

    /* Client-side failures. All but EUSAGE, and ENOMEM outside a
     * receive, close the connection (see "Reconnect" above). */
    UNREAD_EIO = -1,       /* socket error (errno text in errstr) */
    UNREAD_ETIMEOUT = -2,  /* no complete reply within the timeout */
    UNREAD_EPROTO = -3,    /* malformed reply, wrong request id, or a reply
                              of the wrong shape for a typed call */
    UNREAD_ECLOSED = -4,   /* the server closed the connection */
    UNREAD_ECONNECT = -5,  /* (re)connect failed: refused, unreachable,
                              name not resolved, connect timeout, or the
                              password refused (errstr: the server's
                              reply) */
    UNREAD_ENOMEM = -6,    /* allocation failed: while encoding a request or
                              copying a received reply the connection is
                              kept; while receiving it is closed */
    UNREAD_EUSAGE = -7,    /* API misuse, e.g. a synchronous call while a
                              pipeline is open; the connection is kept */
    UNREAD_EUNAVAIL = -8,  /* degraded mode: a write (or admin command) was
                              not sent, its server being unreachable or its
                              circuit open: safe to queue and retry later */
    UNREAD_EMISMATCH = -9, /* a global write got different answers from
                              the servers (GRP.POST seqs): errstr lists
                              them; every server applied the write */

    /* Degraded mode answered a read with the configured default: the
     * outputs hold it (see "Typed calls"), errstr says why the server
     * was not asked. Above every wire code (u16), so never a server's. */
    UNREAD_DEGRADED = 0x10000
};

struct unread; /* opaque */

/* ---- Connection ------------------------------------------------------- */

/*
 * Connects to host:port. host is an address (IPv4 or IPv6) or a name
 * (NULL: 127.0.0.1), resolved with getaddrinfo() and each address tried in
 * turn; name resolution itself is not bounded by the timeout. The connects
 * are non-blocking and all together bounded by timeout_ms; TCP_NODELAY is
 * set. timeout_ms is also the connect, read and write timeout of later
 * calls; timeout_ms <= 0 means wait forever. Degraded mode is off.
 * Returns a handle owned by the caller (free with unread_close), or NULL
 * with a message in err[0..errlen) (err may be NULL).
 */
struct unread *unread_connect(const char *host, uint16_t port, int timeout_ms,
                              char *err, size_t errlen);

/*
 * Options of unread_connect_cluster and unread_async_connect, made by the
 * library so that a later version can add options without breaking a
 * program built against this one (docs/CLIENT.md, "ABI"):
 *
 *     struct unread_opts *o = unread_opts_new();
 *     unread_opts_set_timeouts(o, 1000, 200, 200);
 *     unread_opts_set_degraded(o, true, 0);
 *     c = unread_connect_cluster(list, o, err, sizeof(err));
 *     unread_opts_free(o);          (the handle keeps a copy)
 *
 * Setters return 0, or UNREAD_EUSAGE for a value out of range (the option
 * is then unchanged), UNREAD_ENOMEM.
 */
struct unread_opts; /* opaque */

/* Options holding the defaults below; NULL when out of memory. Free with
 * unread_opts_free (NULL: a no-op). */
struct unread_opts *unread_opts_new(void);
void unread_opts_free(struct unread_opts *o);

/* Connect (one attempt), read (a reply, from the end of the send; the
 * async handle's command timeout) and write (sending a call's requests)
 * timeouts in ms: 1000 each; <= 0: none. */
int unread_opts_set_timeouts(struct unread_opts *o, int connect_ms, int read_ms,
                             int write_ms);

/* Degraded mode: circuit breakers and default replies (off), and what
 * degraded reads return (0). */
int unread_opts_set_degraded(struct unread_opts *o, bool on,
                             uint64_t default_value);

/* Consecutive failed round trips that open a server's circuit (3; >= 1),
 * and how long it stays open before one probe request (1000 ms; >= 0). */
int unread_opts_set_breaker(struct unread_opts *o, unsigned failures,
                            int open_ms);

/* Hash-ring points per server (160; 1..): every client of a deployment
 * must use the same. */
int unread_opts_set_ring_points(struct unread_opts *o, unsigned points);

/* requirepass of the servers (NULL: none): sent with AUTH on every
 * connect, and a server that refuses it fails the connect (copied). */
int unread_opts_set_password(struct unread_opts *o, const char *password);

/* The async handle's reconnect backoff after a failed connect: first wait
 * min_ms (100), doubling up to max_ms (5000); 0 <= min_ms <= max_ms. */
int unread_opts_set_reconnect(struct unread_opts *o, int min_ms, int max_ms);

/*
 * Servers found through redis-sentinel (docs/CLIENT.md, "Sentinel"):
 * sentinels is "host:port,..." (port 26379 when omitted; NULL: off). With
 * it, the servers of unread_connect_cluster and unread_async_connect are
 * master names the sentinels monitor ("shard1,shard2"), each one shard:
 * before every connect the library asks the sentinels where that master
 * is (SENTINEL get-master-addr-by-name), so after a failover the next
 * connect (after a disconnect, or after a -READONLY reply, which also
 * fails its own request) reaches the promoted replica. replica: connect to
 * one of the master's healthy replicas instead (round robin; the master
 * when none is), for a handle that only reads; writes on it answer
 * UNREAD_ERR_READONLY. Asking is blocking, bounded by the connect timeout
 * per sentinel, on the async handle too.
 */
int unread_opts_set_sentinels(struct unread_opts *o, const char *sentinels,
                              bool replica);

/*
 * Cluster mode (docs/CLIENT.md section 16; since 1.1): the servers of
 * unread_connect_cluster and unread_async_connect are seeds of a
 * cluster-mode deployment (unreadd with cluster-enabled yes). The handle
 * asks the first seed that answers for CLUSTER SLOTS, then sends each
 * request to the node serving its key's slot (the uid, the RCPT gid, a
 * global write's object: every request goes to one node, a global write
 * included), connecting to nodes as
 * it needs them (at most 256). A node's MOVED (the map changed: a
 * failover, a slot moved) is followed: the request is sent to the node it
 * names and the map asked for again; ASK is followed once after ASKING;
 * TRYAGAIN and CLUSTERDOWN are retried after a short pause. At most 5
 * redirections per request, then the last error is the answer
 * (UNREAD_ERR_MOVED, ...). Only those refusals are resent: the node ran
 * nothing. A many-users call is split by slot; a batch must keep to one
 * slot (UNREAD_ERR_CROSSSLOT); WAIT goes to the node of the last keyed
 * request. Not with sentinels (the map names every primary), and no
 * subscriptions (UNREAD_EUSAGE: subscribe with a handle on each node).
 */
int unread_opts_set_cluster(struct unread_opts *o, bool on);

/*
 * TLS (docs/CLIENT.md, "TLS"; since 1.1): with on, every connection of
 * the handle, synchronous or asynchronous, is TLS (OpenSSL), its
 * handshake within the connect timeout. The server's certificate is
 * verified by default: it must chain to the CA of
 * unread_opts_set_tls_ca (the system's store when none is set) and name
 * the server (unread_opts_set_tls_server_name, else the host of the
 * server list: a DNS name, or an address against the certificate's IP
 * addresses). A server that fails it fails the connect, as an
 * unreachable one (UNREAD_ECONNECT, errstr saying why).
 *   ca      a PEM file and/or a directory of hashed certificates (NULL:
 *           the system's store when both are NULL)
 *   cert    this client's certificate chain and key (PEM; key NULL: in
 *           the cert file), for servers with tls-auth-clients yes
 *   server_name  the name to verify and send in SNI (NULL: the host)
 *   verify  false: no verification at all (tests, redis-cli's
 *           --insecure): anyone on the path can read and change traffic
 * The files are read when the handle is made (a bad one fails it).
 */
int unread_opts_set_tls(struct unread_opts *o, bool on);
int unread_opts_set_tls_ca(struct unread_opts *o, const char *ca_file,
                           const char *ca_dir);
int unread_opts_set_tls_cert(struct unread_opts *o, const char *cert_file,
                             const char *key_file);
int unread_opts_set_tls_server_name(struct unread_opts *o, const char *name);
int unread_opts_set_tls_verify(struct unread_opts *o, bool verify);

/*
 * A client of every server in `servers`: "host:port,host:port,..." (":port"
 * may be omitted for 7460; IPv6 as "[::1]:7460"; at most 1024 servers, each
 * once). One server is a cluster of one: this is also how a single server
 * gets separate timeouts and degraded mode. opts NULL: the defaults.
 *
 * Routing depends only on the servers' names as written here ("host:port")
 * and ring_points, not on their order: every client of a deployment must
 * spell the servers the same way. Adding a server moves ~1/N of the keys,
 * all to the new server.
 *
 * Connects to every server before returning. A server that cannot be
 * reached fails the call (NULL, message in err) unless degraded mode is
 * on, in which case it counts as a failure of that server's circuit.
 */
struct unread *unread_connect_cluster(const char *servers,
                                      const struct unread_opts *opts, char *err,
                                      size_t errlen);

/* Closes the connection and frees the handle and every reply buffer it
 * owns. Replies returned to the caller stay valid. NULL is a no-op. */
void unread_close(struct unread *c);

/*
 * Authenticates with the servers' requirepass: sends AUTH on every open
 * connection now, and on every later (re)connect (as opts.password does).
 * NULL forgets the password. 0, or the first failure: UNREAD_ERR_WRONGPASS
 * for a wrong password, UNREAD_ERR_ERR when a server has no password set,
 * UNREAD_EUSAGE while a pipeline is open.
 */
int unread_auth(struct unread *c, const char *password);

/*
 * Sets both the read and the write timeout, in milliseconds (<= 0: none):
 * sending a call's requests (or a flush) and then waiting for each reply
 * are each bounded by it. The connect timeout is unchanged.
 */
void unread_set_timeout(struct unread *c, int timeout_ms);

/* The first server's socket, for diagnostics or poll() by the caller; -1
 * while not connected (after a failure, until the next call reconnects).
 * The library owns it: do not read, write or close it. */
int unread_fd(const struct unread *c);

/* Servers of the handle (1 for unread_connect), in the order given. */
size_t unread_shards(const struct unread *c);

/* The server owning a uid (or an RCPT gid): an index below
 * unread_shards() (cluster mode: the node serving its slot in the
 * handle's map, the first server while it is unknown). */
size_t unread_shard_of(const struct unread *c, uint64_t key);

/* "host:port" of server i; NULL when i is out of range. */
const char *unread_shard_name(const struct unread *c, size_t i);

/* Circuit state of server i as of its last request (always CLOSED while
 * degraded mode is off); -1 when i is out of range. An OPEN circuit lets
 * one probe through once breaker_open_ms has passed. */
enum unread_circuit {
    UNREAD_CIRCUIT_CLOSED = 0,
    UNREAD_CIRCUIT_OPEN = 1,
    UNREAD_CIRCUIT_HALF_OPEN = 2 /* a probe is on its way */
};
int unread_shard_circuit(const struct unread *c, size_t i);

/*
 * Message for the last failure on this handle: for a server error reply
 * its text as the text protocol shows it ("ERR wrong number of arguments
 * for 'CNT.GET'"), else a client-side description ("timeout after 200
 * ms"). "" before any failure. Valid until the next call on the handle.
 */
const char *unread_errstr(const struct unread *c);

/* Cluster mode: the last redirection the handle followed, as redis-cli
 * -c prints it ("slot [8000] located at 127.0.0.1:7002"), or NULL when
 * the last call followed none (or not in cluster mode). Since 1.1. */
const char *unread_redirected(const struct unread *c);

/* Static name of a result code ("OK", "ARITY", "ETIMEOUT", ...); never
 * NULL. */
const char *unread_strerror(int code);

/*
 * Counter types by name: the number of the type called name ("mention")
 * in the servers' counter-types setting, for the typed calls, which take
 * numbers. The first call asks the servers (CONFIG GET counter-types, one
 * round trip to the first that answers) and the handle keeps the names;
 * unread_types_reload() asks again (after the servers' setting changed).
 * A decimal string ("3") is its number. 0 with *type set;
 * UNREAD_ERR_BADARG for a name the servers do not have; a failure to ask
 * (UNREAD_ECONNECT, ...) otherwise.
 *
 *     unsigned dm;
 *     if (unread_type(c, "dm", &dm) == 0)
 *         unread_cnt_incr(c, uid, dm, 1, &value, &total);
 */
int unread_type(struct unread *c, const char *name, unsigned *type);
int unread_types_reload(struct unread *c);

/* ---- Typed calls (protocol/ops.def) ----------------------------------- */
/*
 * Counter types are numbers 0..63; unread_type() gives the number of a
 * name ("mention") from the servers' counter-types. Output pointers may be NULL
 * when the value is not wanted; they are written only on success and on
 * UNREAD_DEGRADED, when an integer output holds the configured default
 * (saturated to the output's width), an array output is empty (count 0)
 * and a pair output (e.g. [read, unread]) holds the default twice. Counter
 * values are at most 4294967295 (the server saturates); totals are sums of
 * up to 64 values.
 */

/* PING (the first server): 0 when it answered PONG. */
int unread_ping(struct unread *c);

/* CNT.INCR uid type delta: the new value of the type and the user's new
 * total. */
int unread_cnt_incr(struct unread *c, uint64_t uid, unsigned type,
                    uint32_t delta, uint32_t *value, uint64_t *total);

/* CNT.DECR uid type delta (floors at 0): new value and total. */
int unread_cnt_decr(struct unread *c, uint64_t uid, unsigned type,
                    uint32_t delta, uint32_t *value, uint64_t *total);

/* CNT.SET uid type value: new value and total. */
int unread_cnt_set(struct unread *c, uint64_t uid, unsigned type,
                   uint32_t set_to, uint32_t *value, uint64_t *total);

/* CNT.GET uid type: the value (0 when never set). */
int unread_cnt_get(struct unread *c, uint64_t uid, unsigned type,
                   uint32_t *value);

/* One non-zero counter of a user. */
struct unread_cnt_pair {
    uint8_t type; /* 0..63 */
    uint32_t value;
};

#define UNREAD_CNT_TYPES 64

/*
 * CNT.GETALL uid: the user's non-zero types in ascending order into
 * out[0..*n); out must hold UNREAD_CNT_TYPES entries. A reply that is not
 * well formed (odd length, type >= 64, not ascending) is UNREAD_EPROTO.
 */
int unread_cnt_getall(struct unread *c, uint64_t uid,
                      struct unread_cnt_pair *out, unsigned *n);

/* CNT.TOTAL uid: the sum of the user's types. */
int unread_cnt_total(struct unread *c, uint64_t uid, uint64_t *total);

/* CNT.CLEAR uid [type ...]: zeroes types[0..ntypes), or every type when
 * ntypes is 0 (types may then be NULL); the total after. */
int unread_cnt_clear(struct unread *c, uint64_t uid, const uint8_t *types,
                     unsigned ntypes, uint64_t *total);

/*
 * Notices read once (docs/COMMANDS.md): CNT.INCR uid type delta ID nid
 * counts notice nid once, however many times it is sent; CNT.ACK uid type
 * nid takes it off once, however many devices read it. Both: the type's
 * value and the user's total after.
 */
int unread_cnt_incr_id(struct unread *c, uint64_t uid, unsigned type,
                       uint32_t delta, uint64_t nid, uint32_t *value,
                       uint64_t *total);
int unread_cnt_ack(struct unread *c, uint64_t uid, unsigned type, uint64_t nid,
                   uint32_t *value, uint64_t *total);

/*
 * Many users per call (CNT.MTOTAL, CONV.MTOTAL, USER.MBADGE): one integer
 * per uid of uids[0..n) into out[0..n), in order. Any n: the library sends
 * requests of at most 1000 uids, and on a cluster splits each by server
 * and merges the replies back in order (docs/CLIENT.md). UNREAD_DEGRADED
 * when some users' servers could not be reached: theirs hold the default.
 */
int unread_cnt_mtotal(struct unread *c, const uint64_t *uids, size_t n,
                      uint64_t *totals);

/*
 * Reads with WITHEXPIRY (docs/OPERATIONS.md, "Users and expiry"): the
 * count, and when the user expired from the family (ms since the epoch)
 * if no write of the family has rebuilt it since, else 0: a non-zero
 * *expired tells the app to rebuild (GRP.JOIN, FEED.FOLLOW, CNT.SET, ...).
 * The same _ex form exists for CONV.TOTAL, GRP.UNREAD, GRP.TOTAL,
 * BC.UNREAD and FEED.UNREAD below.
 */
int unread_cnt_total_ex(struct unread *c, uint64_t uid, uint64_t *total,
                        uint64_t *expired);

/* ---- Generic commands and replies ------------------------------------- */

/* One request argument: a u64 or a byte string (not necessarily
 * NUL-terminated; the library copies it before returning). */
enum unread_arg_kind { UNREAD_ARG_INT = 1, UNREAD_ARG_STR = 2 };

struct unread_arg {
    int kind;        /* enum unread_arg_kind */
    uint64_t num;    /* UNREAD_ARG_INT */
    const char *str; /* UNREAD_ARG_STR */
    size_t len;      /* UNREAD_ARG_STR; at most 4294967295 */
};

static inline struct unread_arg unread_arg_int(uint64_t v)
{
    struct unread_arg a = {UNREAD_ARG_INT, v, NULL, 0};
    return a;
}

static inline struct unread_arg unread_arg_str(const char *s, size_t n)
{
    struct unread_arg a = {UNREAD_ARG_STR, 0, s, n};
    return a;
}

/* Reply value kinds; the numbers are the wire's value tags. */
enum unread_reply_kind {
    UNREAD_REPLY_INT = 1,    /* integer */
    UNREAD_REPLY_STR = 2,    /* bulk bytes: str, len */
    UNREAD_REPLY_ARRAY = 3,  /* n elements in elem[0..n) */
    UNREAD_REPLY_NIL = 4,    /* absent value */
    UNREAD_REPLY_STATUS = 5, /* short status text ("OK", "PONG"): str, len */
    UNREAD_REPLY_ERROR = 6,  /* code, and str = "PREFIX message" */
    UNREAD_REPLY_SINT = 7    /* signed integer: (int64_t)integer (COMMAND) */
};

/*
 * A reply value. A whole tree is one allocation owned by the caller and
 * freed with unread_reply_free() on the root only. Strings are
 * NUL-terminated copies (a bulk string may also contain NUL bytes: use
 * len). Fields that do not apply to the kind are 0/NULL.
 */
struct unread_reply {
    int kind;                  /* enum unread_reply_kind */
    uint64_t integer;          /* INT; SINT: cast to int64_t */
    char *str;                 /* STR, STATUS, ERROR */
    size_t len;                /* STR, STATUS, ERROR: bytes in str */
    size_t n;                  /* ARRAY: element count */
    struct unread_reply *elem; /* ARRAY: the elements */
    int code;                  /* ERROR: wire error code (UNREAD_ERR_*) */
};

/* Frees a reply tree returned by the library; NULL is a no-op. */
void unread_reply_free(struct unread_reply *r);

/*
 * Sends any command and waits for its reply. The command is named by
 * `name` (case-insensitive, looked up in the library's command table) or,
 * when name is NULL, by its wire opcode (for commands newer than this
 * library). A name the table does not know is UNREAD_ERR_UNKNOWN without a
 * round trip. argc is at most 65535.
 *   0      *out = the reply.
 *   > 0    the server's error code; *out = the UNREAD_REPLY_ERROR reply.
 *          UNREAD_DEGRADED: *out = an INT reply holding the default,
 *          whatever the command's usual shape (typed calls give it).
 *   < 0    client-side failure; *out = NULL.
 * The caller frees *out with unread_reply_free().
 */
int unread_command(struct unread *c, const char *name, uint16_t opcode,
                   unsigned argc, const struct unread_arg *argv,
                   struct unread_reply **out);

/* unread_command sent to server `shard` (< unread_shards()) whatever the
 * routing says: INFO, DEBUG AUDIT or PING of each server of a cluster. */
int unread_command_shard(struct unread *c, size_t shard, const char *name,
                         uint16_t opcode, unsigned argc,
                         const struct unread_arg *argv,
                         struct unread_reply **out);

/* ---- Pipeline ---------------------------------------------------------- */
/*
 * Many requests, one round trip:
 *
 *     unread_pipe_begin(c);
 *     for (i = 0; i < n; i++)
 *         unread_pipe_cnt_incr(c, uid[i], 0, 1);
 *     unread_pipe_flush(c);               (one write of every frame)
 *     for (i = 0; i < n; i++) {
 *         rc = unread_pipe_read(c, &r);   (replies in queue order)
 *         ...
 *         unread_reply_free(r);
 *     }
 *
 * Queuing routes and encodes into memory (connecting the request's server
 * if needed); nothing is sent before flush. On a cluster each server gets
 * its own sub-pipeline and the replies are still read in queue order. While
 * flushing, the library also reads whatever replies already arrive, so
 * thousands of queued requests cannot deadlock against a server that
 * answers while it reads. Requests can be queued again after a flush,
 * before every reply has been read; they go out with the next flush. The
 * pipeline is over when every sent request's reply has been read and
 * nothing is queued, or after unread_pipe_reset; until then, synchronous
 * calls return UNREAD_EUSAGE. A pipeline opened and never used stays open
 * until unread_pipe_reset.
 *
 * Every queue call that returns 0 has exactly one reply to read, in
 * order, whatever happens to the servers: the outcome of a request whose
 * server could not be reached (connect failed, circuit open) is decided at
 * queue time and delivered by its unread_pipe_read (degraded mode:
 * UNREAD_DEGRADED for reads, UNREAD_EUNAVAIL for writes).
 *
 * Each reply's request id is checked against the queue order: a reply out
 * of order is UNREAD_EPROTO. When a server's connection fails (a flush or
 * read returns EIO, ETIMEOUT, EPROTO or ECLOSED), its part of the pipeline
 * has failed: the connection is closed, its replies not yet read are lost
 * and are not replayed, each of its remaining replies reads as the same
 * code (UNREAD_DEGRADED for reads in degraded mode), the pipeline does not
 * use that server again, and the next call after the pipeline reconnects.
 * The other servers' replies are unaffected.
 */

/* Opens a pipeline. UNREAD_EUSAGE if one is already open. */
int unread_pipe_begin(struct unread *c);

/* Queues one command, named as for unread_command(); an unknown name is
 * UNREAD_ERR_UNKNOWN and queues nothing; so do UNREAD_EUSAGE (no open
 * pipeline, bad argument) and UNREAD_ENOMEM. */
int unread_pipe_cmd(struct unread *c, const char *name, uint16_t opcode,
                    unsigned argc, const struct unread_arg *argv);

/* Typed queue helpers; the replies are read with unread_pipe_read:
 * incr/decr/set: ARRAY [value, total]; get, total, clear: INT;
 * getall: ARRAY [type, value, ...]. */
int unread_pipe_cnt_incr(struct unread *c, uint64_t uid, unsigned type,
                         uint32_t delta);
int unread_pipe_cnt_decr(struct unread *c, uint64_t uid, unsigned type,
                         uint32_t delta);
int unread_pipe_cnt_set(struct unread *c, uint64_t uid, unsigned type,
                        uint32_t value);
int unread_pipe_cnt_get(struct unread *c, uint64_t uid, unsigned type);
int unread_pipe_cnt_getall(struct unread *c, uint64_t uid);
int unread_pipe_cnt_total(struct unread *c, uint64_t uid);
int unread_pipe_cnt_incr_id(struct unread *c, uint64_t uid, unsigned type,
                            uint32_t delta, uint64_t nid);
int unread_pipe_cnt_ack(struct unread *c, uint64_t uid, unsigned type,
                        uint64_t nid);
int unread_pipe_cnt_clear(struct unread *c, uint64_t uid, const uint8_t *types,
                          unsigned ntypes);

/* Number of requests queued and not yet flushed, and of requests sent
 * whose reply has not been read. */
size_t unread_pipe_queued(const struct unread *c);
size_t unread_pipe_pending(const struct unread *c);

/* Sends every queued request (one write per server when the socket takes
 * it), all within the write timeout. 0, or the first server failure (its
 * requests' replies then read as that failure). */
int unread_pipe_flush(struct unread *c);

/*
 * Reads the next reply in queue order, within the read timeout; results
 * as for unread_command(). UNREAD_EUSAGE when no sent request is waiting
 * for its reply (flush first).
 */
int unread_pipe_read(struct unread *c, struct unread_reply **out);

/*
 * Abandons the pipeline: queued requests are dropped; a server from which
 * replies are still expected has its connection closed (they would
 * otherwise be read as answers to later calls) and the next call
 * reconnects. Always succeeds; a no-op when no pipeline is open.
 */
void unread_pipe_reset(struct unread *c);

/* ---- Atomic batch -------------------------------------------------------- */
/*
 * Several commands run by the server with nothing in between (the binary
 * protocol's batch frame, docs/PROTOCOL.md): no other client sees some of
 * them done and others not, and the server's journal keeps all or none.
 *
 *     unread_batch_begin(c);
 *     unread_pipe_conv_seq(c, uid, cid, seq);      (queue helpers and
 *     unread_pipe_cnt_incr(c, uid, TYPE_DM, 1);     unread_pipe_cmd add
 *     rc = unread_batch_exec(c, &r);                to the open batch)
 *     ... r->elem[0], r->elem[1] ...
 *     unread_reply_free(r);
 *
 * While a batch is open, unread_pipe_cmd and every unread_pipe_* queue
 * helper add one command to it (nothing is sent); a call that returns
 * non-zero added nothing, and the batch stays open. Synchronous calls
 * return UNREAD_EUSAGE meanwhile.
 *
 * One server runs a batch: on a sharded list every command must route to
 * the same server (the same uid, or the same RCPT gid), else its queue
 * call returns UNREAD_EUSAGE; in cluster mode every key must be in one
 * slot (as the node checks), else UNREAD_ERR_CROSSSLOT. Global writes
 * (GRP.POST, BC.PUBLISH, DOT.PUSH, FEED.POST, FEED.UNPOST, ...: every
 * server must apply them) cannot be batched on one server or a sharded
 * list, so that code behaves the same on both: UNREAD_EUSAGE; in cluster
 * mode they are keyed by their object and batch like any key.
 *
 * The server first checks every command: an unknown opcode, a wrong
 * argument count or a command that cannot be batched (SAVE, QUIT, ...)
 * refuses the whole batch, nothing runs, and the result is that error
 * (its message names the command, counting from 0: "batch op 1: ...").
 * Otherwise every command runs; one that fails at run time (a bad
 * argument, a limit) has its error in its place and does not undo the
 * others.
 *
 * Degraded mode: a batch holding a write that cannot be sent is
 * UNREAD_EUNAVAIL as a whole; a batch of reads only is UNREAD_DEGRADED,
 * its reply an ARRAY holding the default once per command.
 */

/* Opens a batch. UNREAD_EUSAGE if one is open. Inside an open pipeline
 * the batch becomes one request of it (unread_pipe_batch). */
int unread_batch_begin(struct unread *c);

/*
 * Sends the open batch, waits for its reply and closes the batch
 * (whatever the result). Results as for unread_command(): 0 with *out an
 * ARRAY of one reply per command, in order (an UNREAD_REPLY_ERROR element
 * for a command that failed at run time); > 0 when the server refused
 * the batch as a whole (*out the ERROR reply; nothing ran);
 * UNREAD_DEGRADED (see above); < 0 a client-side failure (*out NULL).
 * UNREAD_EUSAGE when no batch is open, or a pipeline is.
 */
int unread_batch_exec(struct unread *c, struct unread_reply **out);

/* Inside an open pipeline: closes the open batch and queues it as the
 * pipeline's next request; its reply (the ARRAY, as unread_batch_exec's)
 * is read with unread_pipe_read. UNREAD_EUSAGE when no batch or no
 * pipeline is open. */
int unread_pipe_batch(struct unread *c);

/* Drops the open batch, if any; nothing was sent. unread_pipe_reset drops
 * it too. */
void unread_batch_reset(struct unread *c);

/*
 * Typed calls of the other families, one section each, in families.def order
 * (implemented in client-lib/unread_<family>.c). Each family also gets
 * unread_pipe_<family>_<cmd> queue helpers where a pipeline of it is useful.
 */

/* ---- CONV: conversation unread ----------------------------------------- */
/*
 * The mutators give the conversation's unread after (at most 4294967295:
 * the server saturates) and the user's total after, over its unmuted
 * conversations. Seqs are the conversation's message numbers.
 */

/* CONV.INCR uid cid delta: delta new messages (max += delta). */
int unread_conv_incr(struct unread *c, uint64_t uid, uint64_t cid,
                     uint64_t delta, uint32_t *unread, uint64_t *total);

/* CONV.SEQ uid cid seq: message seq exists (idempotent; a seq at or below
 * the read watermark adds nothing). */
int unread_conv_seq(struct unread *c, uint64_t uid, uint64_t cid, uint64_t seq,
                    uint32_t *unread, uint64_t *total);

/* CONV.READ uid cid seq: read up to seq (never moves back). */
int unread_conv_read(struct unread *c, uint64_t uid, uint64_t cid, uint64_t seq,
                     uint32_t *unread, uint64_t *total);

/* CONV.READ uid cid: read up to the newest message. */
int unread_conv_read_all(struct unread *c, uint64_t uid, uint64_t cid,
                         uint32_t *unread, uint64_t *total);

/* CONV.MARKUNREAD uid cid seq: seq (>= 1) becomes the first unread
 * message; seq 0 is UNREAD_ERR_BADARG. */
int unread_conv_markunread(struct unread *c, uint64_t uid, uint64_t cid,
                           uint64_t seq, uint32_t *unread, uint64_t *total);

/* CONV.RECALL uid cid seq: message seq stops counting (idempotent).
 * UNREAD_ERR_LIMIT past 1024 recalled messages above the watermark. */
int unread_conv_recall(struct unread *c, uint64_t uid, uint64_t cid,
                       uint64_t seq, uint32_t *unread, uint64_t *total);

/* CONV.MUTE uid cid 0|1: muted (non-zero) or not; a muted conversation
 * keeps its unread but leaves the total. */
int unread_conv_mute(struct unread *c, uint64_t uid, uint64_t cid, int muted,
                     uint32_t *unread, uint64_t *total);

/* CONV.DEL uid cid: forgets the conversation; the user's total after. */
int unread_conv_del(struct unread *c, uint64_t uid, uint64_t cid,
                    uint64_t *total);

/* CONV.GET uid cid: the conversation's unread (muted or not). */
int unread_conv_get(struct unread *c, uint64_t uid, uint64_t cid,
                    uint32_t *unread);

/* CONV.TOTAL uid: the user's total over its unmuted conversations. */
int unread_conv_total(struct unread *c, uint64_t uid, uint64_t *total);

/* CONV.TOTAL uid WITHEXPIRY (as unread_cnt_total_ex). */
int unread_conv_total_ex(struct unread *c, uint64_t uid, uint64_t *total,
                         uint64_t *expired);

/* CONV.MTOTAL: CONV.TOTAL of many users (as unread_cnt_mtotal). */
int unread_conv_mtotal(struct unread *c, const uint64_t *uids, size_t n,
                       uint64_t *totals);

/* One conversation with unread messages. */
struct unread_conv_pair {
    uint64_t cid;
    uint32_t unread;
};

#define UNREAD_CONV_LIST_MAX 100000

/*
 * CONV.LIST uid max: the user's conversations with unread > 0 (muted ones
 * included), ascending cid, at most max of them, into out[0..*n); out
 * holds max entries (NULL: only *n). max over UNREAD_CONV_LIST_MAX is
 * UNREAD_ERR_BADARG. A reply that is not well formed (odd length, longer
 * than max, cids not ascending, an unread of 0) is UNREAD_EPROTO.
 */
int unread_conv_list(struct unread *c, uint64_t uid, unsigned max,
                     struct unread_conv_pair *out, unsigned *n);

/* Queue helpers (a DM fan-out, a badge refresh); replies: ARRAY [unread,
 * total] for the mutators, INT for del, get and total, ARRAY [cid, unread,
 * ...] for list. */
int unread_pipe_conv_incr(struct unread *c, uint64_t uid, uint64_t cid,
                          uint64_t delta);
int unread_pipe_conv_seq(struct unread *c, uint64_t uid, uint64_t cid,
                         uint64_t seq);
int unread_pipe_conv_read(struct unread *c, uint64_t uid, uint64_t cid,
                          uint64_t seq);
int unread_pipe_conv_read_all(struct unread *c, uint64_t uid, uint64_t cid);
int unread_pipe_conv_get(struct unread *c, uint64_t uid, uint64_t cid);
int unread_pipe_conv_total(struct unread *c, uint64_t uid);

/*
 * The chat features (docs/COMMANDS.md, CONV). Options of a write, OR'ed in
 * unread_conv_opt.flags: the message(s) mention the user; the seq is a
 * sparse id (every write of a sparse conversation says so, none of a
 * dense one: UNREAD_ERR_BADARG otherwise); the write applies to thread
 * `tid` (the reply's unread is then the thread's); the message(s) come
 * from source `source` (0..7). A NULL opt is no option.
 */
#define UNREAD_CONV_MENTION 1u
#define UNREAD_CONV_SPARSE 2u
#define UNREAD_CONV_THREAD 4u
#define UNREAD_CONV_SOURCE 8u

struct unread_conv_opt {
    unsigned flags;  /* UNREAD_CONV_* */
    uint64_t tid;    /* with UNREAD_CONV_THREAD: 0..2^63-1 */
    unsigned source; /* with UNREAD_CONV_SOURCE: 0..7 */
};

/* seq for unread_conv_read_opt: read up to the newest message. */
#define UNREAD_CONV_ALL UINT64_MAX

/* CONV.SEQ / INCR / READ / MARKUNREAD / RECALL with options; replies as
 * their plain forms. */
int unread_conv_seq_opt(struct unread *c, uint64_t uid, uint64_t cid,
                        uint64_t seq, const struct unread_conv_opt *opt,
                        uint32_t *unread, uint64_t *total);
int unread_conv_incr_opt(struct unread *c, uint64_t uid, uint64_t cid,
                         uint64_t delta, const struct unread_conv_opt *opt,
                         uint32_t *unread, uint64_t *total);
int unread_conv_read_opt(struct unread *c, uint64_t uid, uint64_t cid,
                         uint64_t seq, const struct unread_conv_opt *opt,
                         uint32_t *unread, uint64_t *total);
int unread_conv_markunread_opt(struct unread *c, uint64_t uid, uint64_t cid,
                               uint64_t seq, const struct unread_conv_opt *opt,
                               uint32_t *unread, uint64_t *total);
int unread_conv_recall_opt(struct unread *c, uint64_t uid, uint64_t cid,
                           uint64_t seq, const struct unread_conv_opt *opt,
                           uint32_t *unread, uint64_t *total);

/* CONV.ROLLUP uid cid 1|0: whether thread unread counts in the
 * conversation's (rolled_up non-zero, the default) or not. */
int unread_conv_rollup(struct unread *c, uint64_t uid, uint64_t cid,
                       int rolled_up, uint32_t *unread, uint64_t *total);

/* The read state of a conversation, a thread or a group membership. */
struct unread_chat_state {
    uint64_t max;  /* newest seq (GRP: the group's head) */
    uint64_t read; /* watermark (GRP: seen) */
    uint64_t unread;
    int muted;
    uint64_t mentions;
    uint64_t first_unread; /* 0: none */
};

/* CONV.STATE uid cid [THREAD *tid] (tid NULL: the conversation). On
 * UNREAD_DEGRADED every field is the configured default. */
int unread_conv_state(struct unread *c, uint64_t uid, uint64_t cid,
                      const uint64_t *tid, struct unread_chat_state *st);

/* CONV.MENTIONS uid: unread mentions over every conversation and thread,
 * muted ones included. */
int unread_conv_mentions(struct unread *c, uint64_t uid, uint64_t *mentions);

/* CONV.READALL uid: marks every conversation and thread read; the total
 * after (0). */
int unread_conv_readall(struct unread *c, uint64_t uid, uint64_t *total);

/* CONV.TOTAL uid CHATS THREADS: the total, the unmuted conversations with
 * unread, the threads with unread in them (any output may be NULL). */
int unread_conv_total_counts(struct unread *c, uint64_t uid, uint64_t *total,
                             uint64_t *chats, uint64_t *threads);

/* CONV.THREADS uid cid: the threads with unread, by ascending tid, into
 * out[0..max) as {tid, unread} pairs; *n how many the server listed. */
int unread_conv_threads(struct unread *c, uint64_t uid, uint64_t cid,
                        struct unread_conv_pair *out, unsigned max,
                        unsigned *n);

/* CONV.SOURCES uid cid: counts[s] = unread messages from source s. */
int unread_conv_sources(struct unread *c, uint64_t uid, uint64_t cid,
                        uint32_t counts[8]);

/* One entry of a listing page (CONV.LIST / GRP.LIST ... STATE). */
struct unread_list_entry {
    uint64_t id; /* cid or gid */
    struct unread_chat_state st;
};

/* Orders of a listing page. */
#define UNREAD_LIST_BY_ID 0
#define UNREAD_LIST_RECENT 1

/*
 * CONV.LIST uid count STATE [RECENT] CURSOR cursor: one page of at most
 * count (1..UNREAD_CONV_LIST_MAX) conversations with unread, with their
 * state, into out (room for count); *n how many; *next the cursor of the
 * next page, 0 after the last. Start with cursor 0.
 */
int unread_conv_list_page(struct unread *c, uint64_t uid, int order,
                          uint64_t cursor, unsigned count,
                          struct unread_list_entry *out, unsigned *n,
                          uint64_t *next);

/* ---- GRP: group unread ------------------------------------------------- */
/*
 * Counts are capped by the server's unread-cap: exact up to it, cap + 1
 * when larger (a badge shows "99+"). Pass UNREAD_GRP_NOW as ts to omit it:
 * GRP.POST then takes the server's clock, GRP.SEEN marks everything up to
 * the group's newest message seen.
 */
#define UNREAD_GRP_NOW UINT64_MAX

/* GRP.POST gid [ts]: the new message's seq (dense from 1 in each group). */
int unread_grp_post(struct unread *c, uint64_t gid, uint64_t ts, uint64_t *seq);

/* GRP.JOIN uid gid: the user's unread in the group (0 for a new member).
 * UNREAD_ERR_LIMIT past the server's grp-max-groups. */
int unread_grp_join(struct unread *c, uint64_t uid, uint64_t gid,
                    uint64_t *unread);

/* GRP.JOIN uid gid [gid ...] with gids[0..n): each group at its head (a
 * member stays where it is), all or nothing (UNREAD_ERR_LIMIT: none
 * joined); the user's unread over those groups after, capped. Rebuilds an
 * expired user's memberships in one call. */
int unread_grp_join_many(struct unread *c, uint64_t uid, const uint64_t *gids,
                         size_t n, uint64_t *unread);

/* GRP.LEAVE uid gid: *was_member = 1 when the user was a member, else 0. */
int unread_grp_leave(struct unread *c, uint64_t uid, uint64_t gid,
                     int *was_member);

/* GRP.SEEN uid gid [ts]: seen up to the last message posted at or before
 * ts (never moving back; joining when not a member); the unread after. */
int unread_grp_seen(struct unread *c, uint64_t uid, uint64_t gid, uint64_t ts,
                    uint64_t *unread);

/* GRP.UNREAD uid gid: the user's unread in one group (0: not a member). */
int unread_grp_unread(struct unread *c, uint64_t uid, uint64_t gid,
                      uint64_t *unread);

/* GRP.TOTAL uid: the sum over the user's groups. */
int unread_grp_total(struct unread *c, uint64_t uid, uint64_t *total);

/* GRP.UNREAD and GRP.TOTAL with WITHEXPIRY (as unread_cnt_total_ex). */
int unread_grp_unread_ex(struct unread *c, uint64_t uid, uint64_t gid,
                         uint64_t *unread, uint64_t *expired);
int unread_grp_total_ex(struct unread *c, uint64_t uid, uint64_t *total,
                        uint64_t *expired);

/* One group with unread messages. */
struct unread_grp_item {
    uint64_t gid;
    uint64_t unread; /* >= 1, capped */
};

/*
 * GRP.LIST uid: the user's groups with unread messages, by ascending gid,
 * into out[0..max); *n = how many the server listed, which may exceed max
 * (only the first max are stored). A reply that is not well formed (odd
 * length, gids not ascending, an unread of 0) is UNREAD_EPROTO.
 */
int unread_grp_list(struct unread *c, uint64_t uid, struct unread_grp_item *out,
                    size_t max, size_t *n);

/* Queue helpers; every reply is an INT (post: the seq; seen, unread,
 * total: the count). */
int unread_pipe_grp_post(struct unread *c, uint64_t gid, uint64_t ts);
int unread_pipe_grp_seen(struct unread *c, uint64_t uid, uint64_t gid,
                         uint64_t ts);
int unread_pipe_grp_unread(struct unread *c, uint64_t uid, uint64_t gid);
int unread_pipe_grp_total(struct unread *c, uint64_t uid);

/* GRP.POST gid [ts] MENTION uid...: a post mentioning uids[0..n) (the
 * members among them count it in their mentions); n 0 is a plain post. */
int unread_grp_post_mention(struct unread *c, uint64_t gid, uint64_t ts,
                            const uint64_t *uids, unsigned n, uint64_t *seq);

/* GRP.STATE uid gid: the membership's read state (all zero when not a
 * member); unread and mentions capped. */
int unread_grp_state(struct unread *c, uint64_t uid, uint64_t gid,
                     struct unread_chat_state *st);

/* GRP.MUTE uid gid 0|1: the unread in the group and the total after. */
int unread_grp_mute(struct unread *c, uint64_t uid, uint64_t gid, int muted,
                    uint64_t *unread, uint64_t *total);

/* GRP.MARKUNREAD uid gid seq: post seq (1..head) becomes the first unread;
 * the unread after. */
int unread_grp_markunread(struct unread *c, uint64_t uid, uint64_t gid,
                          uint64_t seq, uint64_t *unread);

/* GRP.RECALL gid seq: *newly 1 when newly recalled, 0 when it was. */
int unread_grp_recall(struct unread *c, uint64_t gid, uint64_t seq, int *newly);

/* GRP.SEENALL uid: every group seen; the total after (0). */
int unread_grp_seenall(struct unread *c, uint64_t uid, uint64_t *total);

/* GRP.MENTIONS uid: unread mentions over the user's groups, capped. */
int unread_grp_mentions(struct unread *c, uint64_t uid, uint64_t *mentions);

/* GRP.TOTAL uid CHATS: the total (capped) and the unmuted groups with
 * unread. */
int unread_grp_total_chats(struct unread *c, uint64_t uid, uint64_t *total,
                           uint64_t *chats);

/* GRP.LIST uid count STATE [RECENT] CURSOR cursor: as
 * unread_conv_list_page, for groups (RECENT: by the last post's time). */
int unread_grp_list_page(struct unread *c, uint64_t uid, int order,
                         uint64_t cursor, unsigned count,
                         struct unread_list_entry *out, unsigned *n,
                         uint64_t *next);

/* ---- BC: broadcast channels -------------------------------------------- */

/* BC.PUBLISH ch: the channel's new head. */
int unread_bc_publish(struct unread *c, uint64_t ch, uint64_t *head);

/* BC.UNREAD uid ch: messages published since the user last read (not
 * capped); a user new to the channel is registered and reads 0. */
int unread_bc_unread(struct unread *c, uint64_t uid, uint64_t ch,
                     uint64_t *unread);

/* BC.READ uid ch: everything published so far is read. */
int unread_bc_read(struct unread *c, uint64_t uid, uint64_t ch);

/* BC.READ uid ch upto: the messages numbered 1..upto are read (never
 * moving back); the user's unread in the channel after. */
int unread_bc_read_upto(struct unread *c, uint64_t uid, uint64_t ch,
                        uint64_t upto, uint64_t *unread);

/* BC.UNREAD uid ch WITHEXPIRY (as unread_cnt_total_ex). */
int unread_bc_unread_ex(struct unread *c, uint64_t uid, uint64_t ch,
                        uint64_t *unread, uint64_t *expired);

/* Queue helpers; replies: publish INT (head), unread INT, read INT 0,
 * read_upto INT (unread after). */
int unread_pipe_bc_publish(struct unread *c, uint64_t ch);
int unread_pipe_bc_unread(struct unread *c, uint64_t uid, uint64_t ch);
int unread_pipe_bc_read(struct unread *c, uint64_t uid, uint64_t ch);
int unread_pipe_bc_read_upto(struct unread *c, uint64_t uid, uint64_t ch,
                             uint64_t upto);

/* ---- DOT: red dots ----------------------------------------------------- */
/*
 * Times are milliseconds since the epoch, at most 140737488355327; pass
 * UNREAD_DOT_NOW to omit ts and let the server use its clock.
 */
#define UNREAD_DOT_NOW UINT64_MAX

/* DOT.PUSH dot [ts]: the dot's push time after the call (the later of the
 * old one and ts: it never moves back). */
int unread_dot_push(struct unread *c, uint64_t dot, uint64_t ts,
                    uint64_t *push_ts);

/* DOT.CLICK uid dot [ts]: the user dismissed the dot (click times never
 * move back either). */
int unread_dot_click(struct unread *c, uint64_t uid, uint64_t dot, uint64_t ts);

/*
 * DOT.CHECK uid dot [dot ...]: shown[i] = 1 when dots[i] shows for the
 * user (pushed, and last clicked before the push), else 0; shown holds n
 * entries. n is 1 to the server's max-args minus one (4095 by default).
 * On UNREAD_DEGRADED every shown[i] is 1 when the configured default is
 * non-zero, else 0.
 */
int unread_dot_check(struct unread *c, uint64_t uid, const uint64_t *dots,
                     unsigned n, uint8_t *shown);

/* Queue helpers; replies: push INT (push time), click INT 0, check ARRAY
 * of INT 0/1. */
int unread_pipe_dot_push(struct unread *c, uint64_t dot, uint64_t ts);
int unread_pipe_dot_click(struct unread *c, uint64_t uid, uint64_t dot,
                          uint64_t ts);
int unread_pipe_dot_check(struct unread *c, uint64_t uid, const uint64_t *dots,
                          unsigned n);

/* ---- FEED: followee snapshots ------------------------------------------ */
/* Post counts are at most 4294967295 (the server saturates). */

/* FEED.POST author n: the author's post count after. */
int unread_feed_post(struct unread *c, uint64_t author, uint32_t n,
                     uint32_t *count);

/* FEED.UNPOST author n (floors at 0): the author's post count after. */
int unread_feed_unpost(struct unread *c, uint64_t author, uint32_t n,
                       uint32_t *count);

/* FEED.FOLLOW uid author: *added = 1 when new (from the author's current
 * count), 0 when already followed. UNREAD_ERR_LIMIT past the server's
 * feed-max-follows. */
int unread_feed_follow(struct unread *c, uint64_t uid, uint64_t author,
                       int *added);

/* FEED.UNFOLLOW uid author: *removed = 1 when the user followed author. */
int unread_feed_unfollow(struct unread *c, uint64_t uid, uint64_t author,
                         int *removed);

/* FEED.FOLLOW uid author [author ...] with authors[0..n), all or nothing
 * (UNREAD_ERR_LIMIT: none followed): *added = how many were new.
 * Rebuilds an expired user's follows in one call. */
int unread_feed_follow_many(struct unread *c, uint64_t uid,
                            const uint64_t *authors, size_t n, uint64_t *added);

/* FEED.UNREAD uid: new posts of the followees, capped by the server's
 * unread-cap (cap + 1 means "more"). */
int unread_feed_unread(struct unread *c, uint64_t uid, uint64_t *unread);

/* FEED.UNREAD uid WITHEXPIRY (as unread_cnt_total_ex). */
int unread_feed_unread_ex(struct unread *c, uint64_t uid, uint64_t *unread,
                          uint64_t *expired);

/* FEED.RESET uid: every followee's posts seen; unread is 0 after. */
int unread_feed_reset(struct unread *c, uint64_t uid);

/* Queue helpers; replies: post, unpost INT count; follow, unfollow INT
 * 0/1; unread INT; reset INT 0. */
int unread_pipe_feed_post(struct unread *c, uint64_t author, uint32_t n);
int unread_pipe_feed_unpost(struct unread *c, uint64_t author, uint32_t n);
int unread_pipe_feed_follow(struct unread *c, uint64_t uid, uint64_t author);
int unread_pipe_feed_unfollow(struct unread *c, uint64_t uid, uint64_t author);
int unread_pipe_feed_unread(struct unread *c, uint64_t uid);
int unread_pipe_feed_reset(struct unread *c, uint64_t uid);

/* ---- RCPT: read receipts ----------------------------------------------- */
/*
 * Keyed by gid (a sharded client routes every RCPT call by it). A msgid
 * that is not tracked (never sent to the group, or older than the server's
 * rcpt-max-age-days) makes COUNT and LIST fail with UNREAD_ERR_ERR ("no
 * such message"), while READ and READUPTO skip it.
 */

/* Omits RCPT.SEND's ts: the server's clock dates the message. */
#define UNREAD_RCPT_NOW UINT64_MAX

/* RCPT.JOIN gid uid: the uid's mapid (kept across quit and rejoin).
 * UNREAD_ERR_LIMIT past the server's rcpt-max-members. */
int unread_rcpt_join(struct unread *c, uint64_t gid, uint64_t uid,
                     uint32_t *mapid);

/* RCPT.QUIT gid uid: *was_member = 1 when uid was a member, else 0. */
int unread_rcpt_quit(struct unread *c, uint64_t gid, uint64_t uid,
                     int *was_member);

/* RCPT.SEND gid msgid sender [ts] (ms, or UNREAD_RCPT_NOW): the number of
 * recipients. Safe to retry: a resend answers the same count. */
int unread_rcpt_send(struct unread *c, uint64_t gid, uint64_t msgid,
                     uint64_t sender, uint64_t ts, uint32_t *nrcpt);

/* RCPT.READ gid uid msgid...: marks msgids[0..n) read by uid (n from 1 to
 * the server's max-args minus two); *marked = how many were newly
 * marked. */
int unread_rcpt_read(struct unread *c, uint64_t gid, uint64_t uid,
                     const uint64_t *msgids, unsigned n, uint64_t *marked);

/* RCPT.READUPTO gid uid msgid: marks every tracked message <= msgid. */
int unread_rcpt_readupto(struct unread *c, uint64_t gid, uint64_t uid,
                         uint64_t msgid, uint64_t *marked);

/* RCPT.COUNT gid msgid: recipients who have and have not read it. */
int unread_rcpt_count(struct unread *c, uint64_t gid, uint64_t msgid,
                      uint32_t *nread, uint32_t *nunread);

/*
 * RCPT.LIST gid msgid READ|UNREAD offset count: the recipients who have
 * read it (want_read != 0) or not, in join order, skipping offset and at
 * most count (UINT32_MAX: all). On success and on UNREAD_DEGRADED, *uids
 * is an array of *n uids allocated by the library and owned by the
 * caller, who frees it with free(); NULL when *n is 0 (and on failure).
 */
int unread_rcpt_list(struct unread *c, uint64_t gid, uint64_t msgid,
                     int want_read, uint32_t offset, uint32_t count,
                     uint64_t **uids, size_t *n);

/* Queue helpers; replies: join INT mapid, send INT recipients, read INT
 * newly marked, count ARRAY [read, unread]. */
int unread_pipe_rcpt_join(struct unread *c, uint64_t gid, uint64_t uid);
int unread_pipe_rcpt_send(struct unread *c, uint64_t gid, uint64_t msgid,
                          uint64_t sender, uint64_t ts);
int unread_pipe_rcpt_read(struct unread *c, uint64_t gid, uint64_t uid,
                          const uint64_t *msgids, unsigned n);
int unread_pipe_rcpt_count(struct unread *c, uint64_t gid, uint64_t msgid);

/* ---- USER: per-user operations, FLUSHALL ------------------------------- */

/*
 * USER.INFO uid: everything the server holds about the user, for a person
 * to read ("why does this badge say 7?"): *out is an ARRAY of STR lines
 * (docs/COMMANDS.md, USER), freed with unread_reply_free(). Results as
 * unread_command(). On a cluster, asks the user's server (RCPT state
 * lives on the servers of its groups).
 */
int unread_user_info(struct unread *c, uint64_t uid, struct unread_reply **out);

/* USER.DEL uid: erases the user from every family (RCPT keeps its
 * receipts, anonymously); *removed = the entries removed. On a cluster
 * every server erases, and *removed is the first server's count. */
int unread_user_del(struct unread *c, uint64_t uid, uint64_t *removed);

/* FLUSHALL: erases all data (every server of a cluster). */
int unread_flushall(struct unread *c);

/* Queue helper; reply: INT entries removed. */
int unread_pipe_user_del(struct unread *c, uint64_t uid);

/* The badge's parts: one per family with a part (cnt conv grp bc dot
 * feed). */
#define UNREAD_BADGE_PARTS 8

struct unread_badge {
    uint64_t badge;  /* the sum, exact up to unread-cap, cap + 1 above */
    unsigned nparts; /* parts in the order asked (or the server's) */
    struct {
        char family[8]; /* "cnt", "conv", ... */
        uint64_t value; /* under the same rule as the badge */
    } part[UNREAD_BADGE_PARTS];
    uint64_t expired; /* with withexpiry: ms, or 0 (USER.BADGE) */
};

/*
 * USER.BADGE uid [family ...] [WITHEXPIRY]: the app badge, computed on the
 * server under one capping rule, and its parts. families[0..nfamilies)
 * names the families ("cnt", "grp", ...; none: all of them); withexpiry
 * asks for *expired. On UNREAD_DEGRADED: the default badge, no part.
 */
int unread_user_badge(struct unread *c, uint64_t uid,
                      const char *const *families, unsigned nfamilies,
                      int withexpiry, struct unread_badge *out);

/* USER.MBADGE: the badges of uids[0..n) into badges[0..n) (as
 * unread_cnt_mtotal: any n, split by server on a cluster). */
int unread_user_mbadge(struct unread *c, const uint64_t *uids, size_t n,
                       uint64_t *badges);

enum unread_user_state {
    UNREAD_USER_UNKNOWN = 0, /* nothing tracked */
    UNREAD_USER_ACTIVE = 1,
    UNREAD_USER_EXPIRED = 2 /* not active since its expiry */
};

struct unread_user_status {
    int state;               /* enum unread_user_state */
    uint64_t last_active_ms; /* ACTIVE: the start of its last active day */
    uint64_t expired_ms;     /* its last expiry, 0 when none */
    unsigned npending;       /* families expiry forgot, not rebuilt since */
    char pending[UNREAD_BADGE_PARTS][8];
};

/* USER.STATUS uid: whether the user's state is whole (an app rebuilds
 * the families in pending). Does not mark the user active. */
int unread_user_status(struct unread *c, uint64_t uid,
                       struct unread_user_status *out);

/* ==== Asynchronous handle ============================================== */
/*
 * struct unread_async is the event-driven face of the same client: the
 * same routing and sharding, circuit breakers, degraded defaults, typed
 * calls and error codes as struct unread (they share one core), but no
 * call ever waits. A call queues its request and returns; the request is
 * written when the caller's event loop next hands the handle control, and
 * a completion callback runs when its answer is in:
 *
 *     void done(struct unread_async *a, int rc, void *priv)
 *     {
 *         struct req *r = priv;   (rc as the synchronous call returns it;
 *         ...                      r->value, r->total written before)
 *     }
 *     unread_async_cnt_incr(a, uid, type, 1, &r->value, &r->total, done, r);
 *
 * Every synchronous typed call unread_<f>(c, args..., outputs...) has an
 * asynchronous form unread_async_<f>(a, args..., outputs..., cb, priv):
 * the outputs are written just before cb runs and must stay valid until
 * then. unread_async_command is the generic one.
 *
 * Queue calls return 0 when the request was queued: cb then runs exactly
 * once, later, never from inside the queue call. Non-zero: nothing was
 * queued and cb never runs (UNREAD_EUSAGE, UNREAD_ENOMEM,
 * UNREAD_ERR_UNKNOWN for an unknown name; message in unread_async_errstr).
 * A request whose server cannot take it (circuit open, reconnect backoff,
 * a failed connect) is answered without the network, at the next
 * unread_async_handle_events / _handle_timeout (the timeout asks for 0
 * ms): UNREAD_DEGRADED with the default for a read in degraded mode,
 * UNREAD_EUNAVAIL for a write, UNREAD_ECONNECT without degraded mode.
 *
 * Pipelining is the default: requests to a server are written back to back
 * without waiting for replies (those queued together go out in one
 * write), and each server answers in order. Callbacks run in the order
 * answers complete: one server's in the order its requests were made.
 *
 * Connecting: no call blocks on the network. Creating the handle starts a
 * non-blocking connect to every server; requests queued meanwhile wait in
 * memory and go out when it completes (after AUTH when a password is set).
 * Name resolution (getaddrinfo) does block: give addresses, or names the
 * system resolves locally (/etc/hosts).
 *
 * Timeouts: every request has one, from when it is queued to its answer:
 * the handle's command timeout when it was queued (opts read timeout;
 * unread_async_set_timeout changes it for later requests, so a caller can
 * give one command its own). A connect has opts' connect timeout. A
 * request that times out fails its server's connection (replies come in
 * order: nothing after a lost one can be matched): every request in
 * flight on that server completes with UNREAD_ETIMEOUT (reads: the
 * default in degraded mode) and the next request reconnects.
 *
 * Reconnect with backoff: a connection that fails (I/O error, timeout,
 * closed by the server, protocol error) fails the requests in flight on
 * it, as a synchronous pipeline's do, and the next request to that
 * server reconnects at once. A connect that fails makes the server wait
 * before the next attempt: opts reconnect minimum (100 ms), doubling up
 * to the maximum (5000 ms), back to the minimum after a success; requests
 * meanwhile are answered at once (see above). The library never resends
 * a request.
 *
 * Event loops: the handle owns one socket per server. Either attach it to
 * a loop that watches sockets for it (unread_async_attach with hooks; the
 * libevent adapter in unread_libevent.h is such hooks), or drive it from
 * a poll/epoll loop of your own: unread_async_fds (sockets and the events
 * wanted), unread_async_timeout (when to call handle_timeout), then
 * unread_async_handle_events(a, fd, revents) and
 * unread_async_handle_timeout(a). unread_async_poll runs one poll() round
 * itself.
 *
 * Threads: a handle, its callbacks and its loop hooks belong to one thread
 * at a time: every call on it, and the event loop that drives it, must be
 * on the same thread (or serialized by the caller); callbacks run on the
 * thread that called handle_events / handle_timeout / poll. The library
 * has no global state and takes no locks: one handle per thread (per
 * loop) scales; sync and async handles may be mixed freely. A callback
 * may queue new requests (they go out when the callback's handle_events
 * returns) and may close the handle (the close completes when
 * handle_events returns).
 */
struct unread_async; /* opaque */

/* A completion: rc as the synchronous call would return it. */
typedef void unread_async_cb(struct unread_async *a, int rc, void *priv);

/* Events of a socket: readable, writable. */
#define UNREAD_EV_READ 1
#define UNREAD_EV_WRITE 2

/*
 * A handle over the servers of `servers` (as unread_connect_cluster; one
 * server is a list of one; opts NULL: the defaults), connecting to each
 * without waiting. NULL with a message in err for a bad list or options,
 * or when out of memory; servers that cannot be reached are found out
 * later, request by request.
 */
struct unread_async *unread_async_connect(const char *servers,
                                          const struct unread_opts *opts,
                                          char *err, size_t errlen);

/*
 * Closes every connection, completes every request not yet answered with
 * UNREAD_ECLOSED (its callback runs now), detaches the loop hooks and
 * frees the handle. Inside a callback the close is finished when the
 * handle_events (or poll, handle_timeout) that ran it returns. NULL: a
 * no-op.
 */
void unread_async_close(struct unread_async *a);

/* Command timeout of requests queued from now on (<= 0: none). */
void unread_async_set_timeout(struct unread_async *a, int timeout_ms);

/* Requests queued and not yet completed. */
size_t unread_async_pending(const struct unread_async *a);

/* As unread_errstr: the last failure on this handle (a queue call's, or
 * the last completion's that failed; read it inside the callback). */
const char *unread_async_errstr(const struct unread_async *a);

/* As unread_shards, unread_shard_of, unread_shard_name,
 * unread_shard_circuit. */
size_t unread_async_shards(const struct unread_async *a);
size_t unread_async_shard_of(const struct unread_async *a, uint64_t key);
const char *unread_async_shard_name(const struct unread_async *a, size_t i);
int unread_async_shard_circuit(const struct unread_async *a, size_t i);

/* ---- Driving it from the caller's own loop ---------------------------- */

/* One socket to watch: fd, and UNREAD_EV_* wanted. */
struct unread_async_pollfd {
    int fd;
    int events;
};

/* The sockets the handle wants watched now into out[0..max); returns how
 * many there are (which may exceed max). Changes after each handle_*. */
size_t unread_async_fds(const struct unread_async *a,
                        struct unread_async_pollfd *out, size_t max);

/* Milliseconds until unread_async_handle_timeout is due (0: now), or -1
 * when nothing waits on time. */
int unread_async_timeout(const struct unread_async *a);

/* The loop saw events on fd (UNREAD_EV_*; an error or hang-up is READ):
 * reads and writes what it can, runs the callbacks of what completed,
 * answers what is due. An fd not the handle's is ignored. */
void unread_async_handle_events(struct unread_async *a, int fd, int revents);

/* Time passed: fails what timed out, runs the callbacks of what was
 * decided without the network, writes what is queued. */
void unread_async_handle_timeout(struct unread_async *a);

/* One round of the loop, for programs without one (and tests): poll()
 * over the handle's sockets for at most timeout_ms (-1: until something
 * happens), then handle_events and handle_timeout. Returns
 * unread_async_pending(). */
size_t unread_async_poll(struct unread_async *a, int timeout_ms);

/* Writes what is queued now (non-blocking); otherwise it goes when the
 * loop next runs the handle. */
void unread_async_flush(struct unread_async *a);

/* ---- Attaching it to a loop that watches sockets ------------------------- */

/*
 * Hooks of an event loop (the libevent adapter of unread_libevent.h fills
 * them). The handle calls them from its own calls; data is the loop's.
 *   watch    server i's socket is fd and the handle wants events on it
 *            (UNREAD_EV_*, 0: none for now); fd -1: forget the socket of
 *            server i (it is about to be closed). Called when either
 *            changes; the loop calls unread_async_handle_events(a, fd,
 *            revents) when an event comes.
 *   timer    call unread_async_handle_timeout(a) in ms milliseconds
 *            (replacing the previous request), or never when ms is -1.
 *   detach   the handle is closing: free what the loop made for it.
 */
struct unread_async_hooks {
    void *data;
    void (*watch)(void *data, size_t i, int fd, int events);
    void (*timer)(void *data, int ms);
    void (*detach)(void *data);
};

/* Attaches the hooks (copied): watch and timer are called at once with the
 * current state. 0, or UNREAD_EUSAGE when hooks are already attached. */
int unread_async_attach(struct unread_async *a,
                        const struct unread_async_hooks *hooks);

/* ---- Calls ----------------------------------------------------------------
 */

/* unread_command without waiting: *out (set to NULL now) receives the
 * reply tree before cb runs, owned by the caller (unread_reply_free). */
int unread_async_command(struct unread_async *a, const char *name,
                         uint16_t opcode, unsigned argc,
                         const struct unread_arg *argv,
                         struct unread_reply **out, unread_async_cb *cb,
                         void *priv);

/* The counter type named name ("mention", or a number "3") as the servers'
 * counter-types number it: 0 with *type, UNREAD_ERR_BADARG for a name the
 * servers do not have, UNREAD_EUNAVAIL while no server has told its names
 * yet (the handle asks each server at connect: try again after the first
 * completion). */
int unread_async_type(struct unread_async *a, const char *name, unsigned *type);

/* Typed calls, as their synchronous forms (see above), in the order of
 * the families' files: every typed call has its asynchronous form. */
int unread_async_ping(struct unread_async *a, unread_async_cb *cb, void *priv);
int unread_async_flushall(struct unread_async *a, unread_async_cb *cb,
                          void *priv);
int unread_async_bc_publish(struct unread_async *a, uint64_t ch, uint64_t *head,
                            unread_async_cb *cb, void *priv);
int unread_async_bc_unread(struct unread_async *a, uint64_t uid, uint64_t ch,
                           uint64_t *unread, unread_async_cb *cb, void *priv);
int unread_async_bc_read(struct unread_async *a, uint64_t uid, uint64_t ch,
                         unread_async_cb *cb, void *priv);
int unread_async_bc_read_upto(struct unread_async *a, uint64_t uid, uint64_t ch,
                              uint64_t upto, uint64_t *unread,
                              unread_async_cb *cb, void *priv);
int unread_async_bc_unread_ex(struct unread_async *a, uint64_t uid, uint64_t ch,
                              uint64_t *unread, uint64_t *expired,
                              unread_async_cb *cb, void *priv);
int unread_async_cnt_incr(struct unread_async *a, uint64_t uid, unsigned type,
                          uint32_t delta, uint32_t *value, uint64_t *total,
                          unread_async_cb *cb, void *priv);
int unread_async_cnt_decr(struct unread_async *a, uint64_t uid, unsigned type,
                          uint32_t delta, uint32_t *value, uint64_t *total,
                          unread_async_cb *cb, void *priv);
int unread_async_cnt_set(struct unread_async *a, uint64_t uid, unsigned type,
                         uint32_t set_to, uint32_t *value, uint64_t *total,
                         unread_async_cb *cb, void *priv);
int unread_async_cnt_get(struct unread_async *a, uint64_t uid, unsigned type,
                         uint32_t *value, unread_async_cb *cb, void *priv);
int unread_async_cnt_getall(struct unread_async *a, uint64_t uid,
                            struct unread_cnt_pair *out, unsigned *n,
                            unread_async_cb *cb, void *priv);
int unread_async_cnt_total(struct unread_async *a, uint64_t uid,
                           uint64_t *total, unread_async_cb *cb, void *priv);
int unread_async_cnt_clear(struct unread_async *a, uint64_t uid,
                           const uint8_t *types, unsigned ntypes,
                           uint64_t *total, unread_async_cb *cb, void *priv);
int unread_async_cnt_incr_id(struct unread_async *a, uint64_t uid,
                             unsigned type, uint32_t delta, uint64_t nid,
                             uint32_t *value, uint64_t *total,
                             unread_async_cb *cb, void *priv);
int unread_async_cnt_ack(struct unread_async *a, uint64_t uid, unsigned type,
                         uint64_t nid, uint32_t *value, uint64_t *total,
                         unread_async_cb *cb, void *priv);
int unread_async_cnt_mtotal(struct unread_async *a, const uint64_t *uids,
                            size_t n, uint64_t *totals, unread_async_cb *cb,
                            void *priv);
int unread_async_cnt_total_ex(struct unread_async *a, uint64_t uid,
                              uint64_t *total, uint64_t *expired,
                              unread_async_cb *cb, void *priv);
int unread_async_conv_incr(struct unread_async *a, uint64_t uid, uint64_t cid,
                           uint64_t delta, uint32_t *unread, uint64_t *total,
                           unread_async_cb *cb, void *priv);
int unread_async_conv_seq(struct unread_async *a, uint64_t uid, uint64_t cid,
                          uint64_t seq, uint32_t *unread, uint64_t *total,
                          unread_async_cb *cb, void *priv);
int unread_async_conv_read(struct unread_async *a, uint64_t uid, uint64_t cid,
                           uint64_t seq, uint32_t *unread, uint64_t *total,
                           unread_async_cb *cb, void *priv);
int unread_async_conv_read_all(struct unread_async *a, uint64_t uid,
                               uint64_t cid, uint32_t *unread, uint64_t *total,
                               unread_async_cb *cb, void *priv);
int unread_async_conv_markunread(struct unread_async *a, uint64_t uid,
                                 uint64_t cid, uint64_t seq, uint32_t *unread,
                                 uint64_t *total, unread_async_cb *cb,
                                 void *priv);
int unread_async_conv_recall(struct unread_async *a, uint64_t uid, uint64_t cid,
                             uint64_t seq, uint32_t *unread, uint64_t *total,
                             unread_async_cb *cb, void *priv);
int unread_async_conv_mute(struct unread_async *a, uint64_t uid, uint64_t cid,
                           int muted, uint32_t *unread, uint64_t *total,
                           unread_async_cb *cb, void *priv);
int unread_async_conv_del(struct unread_async *a, uint64_t uid, uint64_t cid,
                          uint64_t *total, unread_async_cb *cb, void *priv);
int unread_async_conv_get(struct unread_async *a, uint64_t uid, uint64_t cid,
                          uint32_t *unread, unread_async_cb *cb, void *priv);
int unread_async_conv_total(struct unread_async *a, uint64_t uid,
                            uint64_t *total, unread_async_cb *cb, void *priv);
int unread_async_conv_list(struct unread_async *a, uint64_t uid, unsigned max,
                           struct unread_conv_pair *out, unsigned *n,
                           unread_async_cb *cb, void *priv);
int unread_async_conv_mtotal(struct unread_async *a, const uint64_t *uids,
                             size_t n, uint64_t *totals, unread_async_cb *cb,
                             void *priv);
int unread_async_conv_total_ex(struct unread_async *a, uint64_t uid,
                               uint64_t *total, uint64_t *expired,
                               unread_async_cb *cb, void *priv);
int unread_async_conv_rollup(struct unread_async *a, uint64_t uid, uint64_t cid,
                             int rolled_up, uint32_t *unread, uint64_t *total,
                             unread_async_cb *cb, void *priv);
int unread_async_conv_state(struct unread_async *a, uint64_t uid, uint64_t cid,
                            const uint64_t *tid, struct unread_chat_state *st,
                            unread_async_cb *cb, void *priv);
int unread_async_conv_mentions(struct unread_async *a, uint64_t uid,
                               uint64_t *mentions, unread_async_cb *cb,
                               void *priv);
int unread_async_conv_readall(struct unread_async *a, uint64_t uid,
                              uint64_t *total, unread_async_cb *cb, void *priv);
int unread_async_conv_total_counts(struct unread_async *a, uint64_t uid,
                                   uint64_t *total, uint64_t *chats,
                                   uint64_t *threads, unread_async_cb *cb,
                                   void *priv);
int unread_async_conv_threads(struct unread_async *a, uint64_t uid,
                              uint64_t cid, struct unread_conv_pair *out,
                              unsigned max, unsigned *n, unread_async_cb *cb,
                              void *priv);
int unread_async_conv_sources(struct unread_async *a, uint64_t uid,
                              uint64_t cid, uint32_t counts[8],
                              unread_async_cb *cb, void *priv);
int unread_async_conv_list_page(struct unread_async *a, uint64_t uid, int order,
                                uint64_t cursor, unsigned count,
                                struct unread_list_entry *out, unsigned *n,
                                uint64_t *next, unread_async_cb *cb,
                                void *priv);
int unread_async_conv_seq_opt(struct unread_async *a, uint64_t uid,
                              uint64_t cid, uint64_t seq,
                              const struct unread_conv_opt *opt,
                              uint32_t *unread, uint64_t *total,
                              unread_async_cb *cb, void *priv);
int unread_async_conv_incr_opt(struct unread_async *a, uint64_t uid,
                               uint64_t cid, uint64_t delta,
                               const struct unread_conv_opt *opt,
                               uint32_t *unread, uint64_t *total,
                               unread_async_cb *cb, void *priv);
int unread_async_conv_read_opt(struct unread_async *a, uint64_t uid,
                               uint64_t cid, uint64_t seq,
                               const struct unread_conv_opt *opt,
                               uint32_t *unread, uint64_t *total,
                               unread_async_cb *cb, void *priv);
int unread_async_conv_markunread_opt(struct unread_async *a, uint64_t uid,
                                     uint64_t cid, uint64_t seq,
                                     const struct unread_conv_opt *opt,
                                     uint32_t *unread, uint64_t *total,
                                     unread_async_cb *cb, void *priv);
int unread_async_conv_recall_opt(struct unread_async *a, uint64_t uid,
                                 uint64_t cid, uint64_t seq,
                                 const struct unread_conv_opt *opt,
                                 uint32_t *unread, uint64_t *total,
                                 unread_async_cb *cb, void *priv);
int unread_async_dot_push(struct unread_async *a, uint64_t dot, uint64_t ts,
                          uint64_t *push_ts, unread_async_cb *cb, void *priv);
int unread_async_dot_click(struct unread_async *a, uint64_t uid, uint64_t dot,
                           uint64_t ts, unread_async_cb *cb, void *priv);
int unread_async_dot_check(struct unread_async *a, uint64_t uid,
                           const uint64_t *dots, unsigned n, uint8_t *shown,
                           unread_async_cb *cb, void *priv);
int unread_async_feed_post(struct unread_async *a, uint64_t author, uint32_t n,
                           uint32_t *count, unread_async_cb *cb, void *priv);
int unread_async_feed_unpost(struct unread_async *a, uint64_t author,
                             uint32_t n, uint32_t *count, unread_async_cb *cb,
                             void *priv);
int unread_async_feed_follow(struct unread_async *a, uint64_t uid,
                             uint64_t author, int *added, unread_async_cb *cb,
                             void *priv);
int unread_async_feed_unfollow(struct unread_async *a, uint64_t uid,
                               uint64_t author, int *removed,
                               unread_async_cb *cb, void *priv);
int unread_async_feed_unread(struct unread_async *a, uint64_t uid,
                             uint64_t *unread, unread_async_cb *cb, void *priv);
int unread_async_feed_reset(struct unread_async *a, uint64_t uid,
                            unread_async_cb *cb, void *priv);
int unread_async_feed_follow_many(struct unread_async *a, uint64_t uid,
                                  const uint64_t *authors, size_t n,
                                  uint64_t *added, unread_async_cb *cb,
                                  void *priv);
int unread_async_feed_unread_ex(struct unread_async *a, uint64_t uid,
                                uint64_t *unread, uint64_t *expired,
                                unread_async_cb *cb, void *priv);
int unread_async_grp_post(struct unread_async *a, uint64_t gid, uint64_t ts,
                          uint64_t *seq, unread_async_cb *cb, void *priv);
int unread_async_grp_join(struct unread_async *a, uint64_t uid, uint64_t gid,
                          uint64_t *unread, unread_async_cb *cb, void *priv);
int unread_async_grp_leave(struct unread_async *a, uint64_t uid, uint64_t gid,
                           int *was_member, unread_async_cb *cb, void *priv);
int unread_async_grp_seen(struct unread_async *a, uint64_t uid, uint64_t gid,
                          uint64_t ts, uint64_t *unread, unread_async_cb *cb,
                          void *priv);
int unread_async_grp_unread(struct unread_async *a, uint64_t uid, uint64_t gid,
                            uint64_t *unread, unread_async_cb *cb, void *priv);
int unread_async_grp_total(struct unread_async *a, uint64_t uid,
                           uint64_t *total, unread_async_cb *cb, void *priv);
int unread_async_grp_list(struct unread_async *a, uint64_t uid,
                          struct unread_grp_item *out, size_t max, size_t *n,
                          unread_async_cb *cb, void *priv);
int unread_async_grp_join_many(struct unread_async *a, uint64_t uid,
                               const uint64_t *gids, size_t n, uint64_t *unread,
                               unread_async_cb *cb, void *priv);
int unread_async_grp_unread_ex(struct unread_async *a, uint64_t uid,
                               uint64_t gid, uint64_t *unread,
                               uint64_t *expired, unread_async_cb *cb,
                               void *priv);
int unread_async_grp_total_ex(struct unread_async *a, uint64_t uid,
                              uint64_t *total, uint64_t *expired,
                              unread_async_cb *cb, void *priv);
int unread_async_grp_post_mention(struct unread_async *a, uint64_t gid,
                                  uint64_t ts, const uint64_t *uids, unsigned n,
                                  uint64_t *seq, unread_async_cb *cb,
                                  void *priv);
int unread_async_grp_state(struct unread_async *a, uint64_t uid, uint64_t gid,
                           struct unread_chat_state *st, unread_async_cb *cb,
                           void *priv);
int unread_async_grp_mute(struct unread_async *a, uint64_t uid, uint64_t gid,
                          int muted, uint64_t *unread, uint64_t *total,
                          unread_async_cb *cb, void *priv);
int unread_async_grp_markunread(struct unread_async *a, uint64_t uid,
                                uint64_t gid, uint64_t seq, uint64_t *unread,
                                unread_async_cb *cb, void *priv);
int unread_async_grp_recall(struct unread_async *a, uint64_t gid, uint64_t seq,
                            int *newly, unread_async_cb *cb, void *priv);
int unread_async_grp_seenall(struct unread_async *a, uint64_t uid,
                             uint64_t *total, unread_async_cb *cb, void *priv);
int unread_async_grp_mentions(struct unread_async *a, uint64_t uid,
                              uint64_t *mentions, unread_async_cb *cb,
                              void *priv);
int unread_async_grp_total_chats(struct unread_async *a, uint64_t uid,
                                 uint64_t *total, uint64_t *chats,
                                 unread_async_cb *cb, void *priv);
int unread_async_grp_list_page(struct unread_async *a, uint64_t uid, int order,
                               uint64_t cursor, unsigned count,
                               struct unread_list_entry *out, unsigned *n,
                               uint64_t *next, unread_async_cb *cb, void *priv);
int unread_async_rcpt_join(struct unread_async *a, uint64_t gid, uint64_t uid,
                           uint32_t *mapid, unread_async_cb *cb, void *priv);
int unread_async_rcpt_quit(struct unread_async *a, uint64_t gid, uint64_t uid,
                           int *was_member, unread_async_cb *cb, void *priv);
int unread_async_rcpt_send(struct unread_async *a, uint64_t gid, uint64_t msgid,
                           uint64_t sender, uint64_t ts, uint32_t *nrcpt,
                           unread_async_cb *cb, void *priv);
int unread_async_rcpt_read(struct unread_async *a, uint64_t gid, uint64_t uid,
                           const uint64_t *msgids, unsigned n, uint64_t *marked,
                           unread_async_cb *cb, void *priv);
int unread_async_rcpt_readupto(struct unread_async *a, uint64_t gid,
                               uint64_t uid, uint64_t msgid, uint64_t *marked,
                               unread_async_cb *cb, void *priv);
int unread_async_rcpt_count(struct unread_async *a, uint64_t gid,
                            uint64_t msgid, uint32_t *nread, uint32_t *nunread,
                            unread_async_cb *cb, void *priv);
int unread_async_rcpt_list(struct unread_async *a, uint64_t gid, uint64_t msgid,
                           int want_read, uint32_t offset, uint32_t count,
                           uint64_t **uids, size_t *n, unread_async_cb *cb,
                           void *priv);
int unread_async_user_info(struct unread_async *a, uint64_t uid,
                           struct unread_reply **out, unread_async_cb *cb,
                           void *priv);
int unread_async_user_del(struct unread_async *a, uint64_t uid,
                          uint64_t *removed, unread_async_cb *cb, void *priv);
int unread_async_user_mbadge(struct unread_async *a, const uint64_t *uids,
                             size_t n, uint64_t *badges, unread_async_cb *cb,
                             void *priv);
int unread_async_user_badge(struct unread_async *a, uint64_t uid,
                            const char *const *families, unsigned nfamilies,
                            int withexpiry, struct unread_badge *out,
                            unread_async_cb *cb, void *priv);
int unread_async_user_status(struct unread_async *a, uint64_t uid,
                             struct unread_user_status *out,
                             unread_async_cb *cb, void *priv);

/* ---- Pub/sub: subscriptions with a callback (both handles) -------------- */
/*
 * Messages published on a channel (PUBLISH, and the server's own badge:<uid>,
 * bc:, grp:, dot:, feed: channels with notify-badges yes: docs/COMMANDS.md,
 * "Badge channels") go to the callback of the subscription they match.
 * Subscriptions are the handle's state: the library keeps each server in
 * line with it, and after a connection is lost makes every subscription
 * again on the new one (messages published meanwhile are lost: pub/sub
 * keeps nothing). A subscription to a channel already subscribed replaces
 * its callback.
 *
 * Cluster: `badge:<uid>` (canonical decimal uid) is subscribed on the
 * uid's server, every other channel on the first server (global writes run
 * on every server, which each publish: one copy is enough; unread_publish
 * sends there too), a pattern on every server, its messages taken from
 * the channel's own server only, so each message arrives once.
 *
 * Names are NUL-terminated (channels with a NUL byte cannot be used here;
 * unread_command can). The message's strings are valid during the
 * callback only, and only until it calls the library.
 */
struct unread_message {
    const char *channel; /* the channel it was published on */
    size_t channel_len;
    const char *payload;
    size_t payload_len;
    const char *pattern; /* the pattern subscription it matched, or NULL */
    size_t pattern_len;
    size_t shard; /* the server it came from (unread_shard_name) */
};

/*
 * Synchronous handle: subscriptions live on a connection of their own per
 * server, opened on first use, so the handle stays fully usable while
 * subscribed (calls, pipelines and batches on the usual connections, even
 * from a callback). Messages are delivered by unread_listen only; those
 * that arrive while (un)subscribing wait for it.
 *
 * unread_subscribe / unread_psubscribe: 0 once every server concerned
 * confirmed; a server error (> 0, the subscription dropped); or a failure
 * to reach a server (< 0, errstr): the subscription is kept, and made
 * when unread_listen reconnects to that server. unread_unsubscribe /
 * unread_punsubscribe with NULL leave every channel / pattern. Messages of
 * a subscription left are no longer delivered, even those already
 * received.
 */
typedef void unread_message_cb(struct unread *c, const struct unread_message *m,
                               void *priv);

int unread_subscribe(struct unread *c, const char *channel,
                     unread_message_cb *cb, void *priv);
int unread_psubscribe(struct unread *c, const char *pattern,
                      unread_message_cb *cb, void *priv);
int unread_unsubscribe(struct unread *c, const char *channel);
int unread_punsubscribe(struct unread *c, const char *pattern);

/* The handle's subscriptions: channels plus patterns. */
size_t unread_subscriptions(const struct unread *c);

/*
 * Blocks, delivering messages to the callbacks, until timeout_ms has
 * passed (< 0: no limit; 0: only what has already arrived) or a callback
 * called unread_listen_stop. A server whose subscription connection was
 * lost is connected again meanwhile (backoff reconnect_min..max ms,
 * unread_opts_set_reconnect) and its subscriptions made again. Returns the
 * messages delivered (>= 0); UNREAD_EUSAGE without any subscription or
 * from a callback. A reconnect that failed is in errstr.
 */
int unread_listen(struct unread *c, int timeout_ms);
void unread_listen_stop(struct unread *c);

/* PUBLISH channel payload to the channel's server (above): *receivers (may
 * be NULL) the subscribers it reached there. */
int unread_publish(struct unread *c, const char *channel, const char *payload,
                   size_t payload_len, uint64_t *receivers);

/*
 * Asynchronous handle: subscriptions ride on the handle's connections;
 * messages are delivered on its loop (from handle_events / poll), as they
 * arrive. (P)SUBSCRIBE is queued at once (0) and needs no callback of its
 * own; a server that cannot be reached now is connected again by the
 * handle (its timer) while it carries a subscription, then subscribed.
 * unread_async_unsubscribe / punsubscribe with NULL leave all.
 */
typedef void unread_async_message_cb(struct unread_async *a,
                                     const struct unread_message *m,
                                     void *priv);

int unread_async_subscribe(struct unread_async *a, const char *channel,
                           unread_async_message_cb *cb, void *priv);
int unread_async_psubscribe(struct unread_async *a, const char *pattern,
                            unread_async_message_cb *cb, void *priv);
int unread_async_unsubscribe(struct unread_async *a, const char *channel);
int unread_async_punsubscribe(struct unread_async *a, const char *pattern);
size_t unread_async_subscriptions(const struct unread_async *a);

#ifdef __cplusplus
}
#endif

#endif
