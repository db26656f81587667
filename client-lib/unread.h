/*
 * unread.h - libunread, the C client of unreadd over the binary protocol.
 *
 * One `struct unread` is one TCP connection. Calls are synchronous (one
 * request, one reply, within the handle's timeout) or pipelined (queue many
 * requests, send them in one write, read the replies in order).
 *
 * Threads: the library keeps no global state and takes no locks. A handle
 * must be used by one thread at a time (typically one handle per thread);
 * distinct handles are independent. Signals: writes use MSG_NOSIGNAL, so a
 * peer that went away gives UNREAD_EIO/UNREAD_ECLOSED, never SIGPIPE. The
 * library prints nothing.
 *
 * Errors: every call that can fail returns int: 0 on success, a positive
 * UNREAD_ERR_* code when the server answered with an error (the wire status
 * code), or a negative UNREAD_E* code for a failure on the client side.
 * unread_errstr() then describes the last failure of that handle.
 *
 * Reconnect: a client-side failure (I/O error, timeout, protocol error,
 * connection closed) closes the connection; the next call connects again
 * (one attempt, same host, port and timeouts) before sending. A request is
 * never resent by the library: after a failure the caller cannot tell
 * whether a write was applied, and decides itself whether to retry.
 *
 * Self-contained: this header needs only the C11 standard headers.
 */
#ifndef UNREAD_H
#define UNREAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UNREAD_VERSION "0.1.0"
#define UNREAD_DEFAULT_PORT 7460

/*
 * Result codes. Positive values are the binary protocol's error status
 * codes, numerically identical to the server's (docs/PROTOCOL.md); a newer
 * server may send codes not listed here, which are passed through as they
 * are. Negative values never come from the server.
 */
enum unread_result {
    UNREAD_OK = 0,

    /* Server error replies (wire status codes). */
    UNREAD_ERR_ERR = 1,        /* generic failure */
    UNREAD_ERR_ARITY = 2,      /* wrong number of arguments */
    UNREAD_ERR_UNKNOWN = 3,    /* unknown command or opcode */
    UNREAD_ERR_BADARG = 4,     /* not a number, out of range, bad name */
    UNREAD_ERR_NOAUTH = 5,     /* authentication required */
    UNREAD_ERR_OOM = 6,        /* the server's maxmemory is reached */
    UNREAD_ERR_MISCONF = 7,    /* the server cannot write its journal */
    UNREAD_ERR_NOPROTO = 8,    /* unsupported protocol version */
    UNREAD_ERR_TOOBIG = 9,     /* frame or argument count too big */
    UNREAD_ERR_LIMIT = 10,     /* a configured per-entity limit */
    UNREAD_ERR_PROTO = 11,     /* the server lost framing; it closes */
    UNREAD_ERR_WRONGPASS = 12, /* AUTH with a bad password */

    /* Client-side failures. All but EUSAGE, and ENOMEM outside a
     * receive, close the connection (see "Reconnect" above). */
    UNREAD_EIO = -1,      /* socket error (errno text in errstr) */
    UNREAD_ETIMEOUT = -2, /* no complete reply within the timeout */
    UNREAD_EPROTO = -3,   /* malformed reply, wrong request id, or a reply
                             of the wrong shape for a typed call */
    UNREAD_ECLOSED = -4,  /* the server closed the connection */
    UNREAD_ECONNECT = -5, /* (re)connect failed: refused, unreachable,
                             name not resolved, connect timeout */
    UNREAD_ENOMEM = -6,   /* allocation failed: while encoding a request or
                             copying a received reply the connection is
                             kept; while receiving it is closed */
    UNREAD_EUSAGE = -7    /* API misuse, e.g. a synchronous call while a
                             pipeline is open; the connection is kept */
};

struct unread; /* opaque */

/* ---- Connection ------------------------------------------------------- */

/*
 * Connects to host:port. host is an address (IPv4 or IPv6) or a name
 * (NULL: 127.0.0.1), resolved with getaddrinfo() and each address tried in
 * turn; name resolution itself is not bounded by the timeout. The connects
 * are non-blocking and all together bounded by timeout_ms; TCP_NODELAY is
 * set. timeout_ms also becomes the per-call timeout (unread_set_timeout);
 * timeout_ms <= 0 means wait forever.
 * Returns a handle owned by the caller (free with unread_close), or NULL
 * with a message in err[0..errlen) (err may be NULL).
 */
struct unread *unread_connect(const char *host, uint16_t port, int timeout_ms,
                              char *err, size_t errlen);

/* Closes the connection and frees the handle and every reply buffer it
 * owns. Replies returned to the caller stay valid. NULL is a no-op. */
void unread_close(struct unread *c);

/*
 * Per-call timeout in milliseconds, <= 0 for none. A synchronous call must
 * complete (send and whole reply) within it; so must unread_pipe_flush and
 * each unread_pipe_read. Reconnects use the timeout given to unread_connect.
 */
void unread_set_timeout(struct unread *c, int timeout_ms);

/* The socket, for diagnostics or poll() by the caller; -1 while not
 * connected (after a failure, until the next call reconnects). The library
 * owns it: do not read, write or close it. */
int unread_fd(const struct unread *c);

/*
 * Message for the last failure on this handle: for a server error reply
 * its text as the text protocol shows it ("ERR wrong number of arguments
 * for 'CNT.GET'"), else a client-side description ("timeout after 200
 * ms"). "" before any failure. Valid until the next call on the handle.
 */
const char *unread_errstr(const struct unread *c);

/* Static name of a result code ("OK", "ARITY", "ETIMEOUT", ...); never
 * NULL. */
const char *unread_strerror(int code);

/* ---- Typed calls (protocol/ops.def) ----------------------------------- */
/*
 * Counter types are numbers 0..63 (names such as "mention" are a feature of
 * the text protocol and unread-cli). Output pointers may be NULL when the
 * value is not wanted; they are written only on success. Counter values are
 * at most 4294967295 (the server saturates); totals are sums of up to 64
 * values.
 */

/* PING: 0 when the server answered PONG. */
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
    UNREAD_REPLY_ERROR = 6   /* code, and str = "PREFIX message" */
};

/*
 * A reply value. A whole tree is one allocation owned by the caller and
 * freed with unread_reply_free() on the root only. Strings are
 * NUL-terminated copies (a bulk string may also contain NUL bytes: use
 * len). Fields that do not apply to the kind are 0/NULL.
 */
struct unread_reply {
    int kind;                  /* enum unread_reply_kind */
    uint64_t integer;          /* INT */
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
 *   < 0    client-side failure; *out = NULL.
 * The caller frees *out with unread_reply_free().
 */
int unread_command(struct unread *c, const char *name, uint16_t opcode,
                   unsigned argc, const struct unread_arg *argv,
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
 * Queuing only encodes into memory; nothing is sent before flush. While
 * flushing, the library also reads whatever replies already arrive, so
 * thousands of queued requests cannot deadlock against a server that
 * answers while it reads. Requests can be queued again after a flush,
 * before every reply has been read; they go out with the next flush. The
 * pipeline is over when every sent request's reply has been read and
 * nothing is queued, or after unread_pipe_reset; until then, synchronous
 * calls return UNREAD_EUSAGE. A pipeline opened and never used stays open
 * until unread_pipe_reset.
 *
 * Each reply's request id is checked against the queue order: a reply out
 * of order is UNREAD_EPROTO. When the connection fails (a flush or read
 * returns EIO, ETIMEOUT, EPROTO or ECLOSED), the pipeline has failed: the
 * connection is closed, replies not yet read are lost and are not replayed,
 * each remaining unread_pipe_read returns the same code, and the next call
 * after those (or after unread_pipe_reset) reconnects.
 */

/* Opens a pipeline (connecting first if needed). UNREAD_EUSAGE if one is
 * already open. */
int unread_pipe_begin(struct unread *c);

/* Queues one command, named as for unread_command(); an unknown name is
 * UNREAD_ERR_UNKNOWN and queues nothing. UNREAD_EUSAGE without an open
 * pipeline. */
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
int unread_pipe_cnt_clear(struct unread *c, uint64_t uid, const uint8_t *types,
                          unsigned ntypes);

/* Number of requests queued and not yet flushed, and of requests sent
 * whose reply has not been read. */
size_t unread_pipe_queued(const struct unread *c);
size_t unread_pipe_pending(const struct unread *c);

/* Sends every queued request (one write when the socket takes it). */
int unread_pipe_flush(struct unread *c);

/*
 * Reads the next reply in queue order; results as for unread_command().
 * UNREAD_EUSAGE when no sent request is waiting for its reply (flush
 * first).
 */
int unread_pipe_read(struct unread *c, struct unread_reply **out);

/*
 * Abandons the pipeline: queued requests are dropped; when replies are
 * still expected the connection is closed (they would otherwise be read
 * as answers to later calls) and the next call reconnects. Always
 * succeeds; a no-op when no pipeline is open.
 */
void unread_pipe_reset(struct unread *c);

/*
 * Typed calls of the other families, one section each, in SPEC order
 * (implemented in client-lib/unread_<family>.c). Each family also gets
 * unread_pipe_<family>_<cmd> queue helpers where a pipeline of it is useful.
 */

/* ---- CONV: conversation unread ----------------------------------------- */

/* ---- GRP: group unread ------------------------------------------------- */

/* ---- BC: broadcast channels -------------------------------------------- */

/* ---- DOT: red dots ----------------------------------------------------- */

/* ---- FEED: followee snapshots ------------------------------------------ */

/* ---- RCPT: read receipts ----------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif
