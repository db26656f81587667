/*
 * unread_conn.h - one connection of libunread to one server: a
 * non-blocking socket, an output buffer of encoded request frames and an
 * input buffer of reply bytes, every wait a poll() bounded by a deadline.
 * Requests carry ids counting up from 1 on each connection and the server
 * answers in order, so the id the next reply must carry is always known.
 *
 * Knows nothing of routing, breakers, degraded replies or reply trees
 * (unread.c). Failures are returned as UNREAD_E* codes with a message in
 * err naming the server; the connection is then unusable and the caller
 * drops it. Internal; not installed.
 */
#ifndef UNREAD_CONN_H
#define UNREAD_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "frame.h"
#include "unread.h"
#include "unread_shard.h"
#include "unread_tls.h"

#define UC_ERRLEN 512

/* A point in time a wait must end by, and how to describe missing it. */
struct uc_deadline {
    int64_t at;       /* monotonic ms; -1: none */
    int ms;           /* the timeout it came from, for messages */
    const char *what; /* "read", "write" */
};

/* The user name stored after a handle's password (unread_core.h
 * unread_opts): "" for the default user (AUTH password), else AUTH user
 * password. */
static inline const char *uc_cred_user(const char *password)
{
    return password + strlen(password) + 1;
}

struct uc_conn {
    int fd;                  /* -1 while not connected */
    const struct uc_addr *a; /* borrowed from the handle */
    const char *password;    /* AUTH after each connect, or NULL; borrowed:
                                the ACL user name follows it after its
                                NUL (uc_cred_user) */

    /* TLS (unread_tls.h): the handle's context (borrowed; NULL: TCP),
     * and this connection's stream while connected. The handshake
     * follows the connect (uc_conn_ensure; uc_conn_handshake for the
     * asynchronous face). */
    struct uc_tls *tls;
    void *ssl;
    const char *tls_host; /* the host dialed (verification, SNI) */
    int tls_want;         /* enum uc_tls_want: what the handshake waits for */
    bool tls_broken;      /* a TLS failure: no goodbye at the close */
    bool tls_wpending;    /* a write was cut by EAGAIN: TLS holds its bytes,
                             the frames queued can no longer be taken back */

    uint32_t next_id;   /* id of the next request encoded */
    uint32_t expect_id; /* id the next reply must carry */
    size_t queued;      /* frames encoded, not yet sent */
    size_t inflight;    /* frames sent, reply not yet read */
    size_t last_frame;  /* offset of the last frame encoded */

    struct ur_buf out; /* encoded requests; out_pos bytes already sent */
    size_t out_pos;
    struct ur_buf in; /* received bytes; in_pos bytes already parsed */
    size_t in_pos;

    char err[UC_ERRLEN]; /* the last failure, "host:port: what: why" */

    /* Push frames (docs/PROTOCOL.md 2.13) answer no request: each one read
     * is handed to on_push when set (its body valid only during the call),
     * else dropped. Set by pub/sub (unread_pubsub.c). */
    void (*on_push)(void *ctx, struct uc_conn *k, const char *body,
                    uint32_t len);
    void *push_ctx;
};

int64_t uc_now_ms(void);

/* A deadline timeout_ms from now; timeout_ms <= 0 means none. */
struct uc_deadline uc_deadline(int timeout_ms, const char *what);

void uc_conn_init(struct uc_conn *k, const struct uc_addr *a);
void uc_conn_deinit(struct uc_conn *k);

/*
 * Makes sure the connection can take a request: connects when there is
 * none, and when an idle connection was closed by the server (restart,
 * QUIT, idle timeout), which a non-blocking peek sees for one syscall, so
 * the first request after a server restart is not sent into a dead socket.
 * A new connection sends AUTH first when there is a password. The connect
 * and the AUTH round trip are each bounded by connect_ms (<= 0: none).
 * 0 or UNREAD_ECONNECT (the server's refusal of the password included).
 */
int uc_conn_ensure(struct uc_conn *k, int connect_ms);

/* Forgets the connection and every frame queued or in flight on it. */
void uc_conn_drop(struct uc_conn *k);

/* Appends the arguments in the frame encoding (frame.h): 0, or -1 on
 * allocation failure with nothing appended. */
int uc_put_args(struct ur_buf *b, unsigned argc, const struct unread_arg *argv);

/* Appends one request frame, or nothing: 0 or UNREAD_ENOMEM. The caller
 * has checked the arguments (kinds, at most 65535, lengths that fit u32).
 * The connection stays usable either way. */
int uc_conn_encode(struct uc_conn *k, uint16_t op, unsigned argc,
                   const struct unread_arg *argv);

/* Appends one batch frame of n sub-requests, body[0..len) (frame.h), or
 * nothing: 0 or UNREAD_ENOMEM. */
int uc_conn_encode_batch(struct uc_conn *k, uint16_t n, const char *body,
                         size_t len);

/* Appends a copy of a request frame encoded earlier (for another
 * connection: cluster mode resends a redirected one), under this
 * connection's next id: 0 or UNREAD_ENOMEM. */
int uc_conn_encode_copy(struct uc_conn *k, const char *frame, size_t len);

/* The bytes of the frame the last uc_conn_encode* appended. */
static inline const char *uc_conn_last(const struct uc_conn *k, size_t *len)
{
    *len = k->out.len - k->last_frame;
    return k->out.data + k->last_frame;
}

/* Takes back the frame the last uc_conn_encode* appended (not yet sent). */
void uc_conn_unencode(struct uc_conn *k);

/* Gives up every frame queued or in flight: unsent frames vanish; when
 * anything was sent the connection is dropped, as its replies would
 * otherwise answer later requests. */
void uc_conn_abandon(struct uc_conn *k);

/* Sends every queued frame, reading whatever replies arrive meanwhile so a
 * server that answers as it reads cannot deadlock against us. 0 or a
 * failure code. */
int uc_conn_flush(struct uc_conn *k, const struct uc_deadline *d);

/*
 * Reads the next reply frame and checks its request id. On 0 *body points
 * at its body in the input buffer, valid until the next read on this
 * connection. A failure leaves the stream unusable.
 */
int uc_conn_reply(struct uc_conn *k, const struct uc_deadline *d,
                  struct ur_frame_hdr *h, const char **body);

/*
 * The next reply frame already received, without waiting: 0 (as
 * uc_conn_reply), 1 when it is not complete yet (*hint: the bytes the
 * frame needs in all, at least), or a failure code.
 */
int uc_conn_take_reply(struct uc_conn *k, struct ur_frame_hdr *h,
                       const char **body, size_t *hint);

/* ---- Without waiting: the asynchronous face ----------------------------- */

/* Resolves the host (getaddrinfo: blocking for a name that is not in
 * /etc/hosts or an address; a master name asks its sentinels, blocking
 * up to connect_ms each) and starts a non-blocking connect to the
 * first address that takes one: 0 (k->fd set; the connect completes when
 * the socket turns writable: uc_conn_dialed), or UNREAD_ECONNECT. */
int uc_conn_dial(struct uc_conn *k, int connect_ms);

/* Whether the connect uc_conn_dial started succeeded: 0 or
 * UNREAD_ECONNECT. */
int uc_conn_dialed(struct uc_conn *k);

/* After uc_conn_dialed, over TLS: one step of the handshake (the server's
 * certificate verified at its end): 0 done (at once without TLS), 1 again
 * when the socket is ready for k->tls_want, or UNREAD_ECONNECT. */
int uc_conn_handshake(struct uc_conn *k);

/* Sends what the socket takes of the queued frames: 0 when all are sent,
 * 1 when the socket is full, else a failure code. */
int uc_conn_send(struct uc_conn *k);

/* One recv() of what has arrived: 0 when bytes came, 1 when none were
 * waiting, else a failure code (UNREAD_ECLOSED: the server closed). Moves
 * the input buffer: no body from uc_conn_take_reply survives it. */
int uc_conn_recv(struct uc_conn *k);

#endif
