/*
 * transport.h - the byte stream under a connection, as one type (STYLE.md
 * rule 15, Redis's ConnectionType): plain TCP here, TLS in tls.c. The
 * network (net.c), replication (repl.c) and cluster links hold a struct
 * tr_conn and call tr_read, tr_write, ... without asking which transport
 * it is; a plaintext connection pays one indirect call per system call.
 *
 * Every operation has the system call's contract: read and write return
 * the bytes moved, 0 at the end of the stream (read), or -1 with errno
 * (EAGAIN: try again when the event in t->want comes; anything else: the
 * stream is broken, tr_error says why). A TLS stream may hold decrypted
 * bytes the socket no longer signals (read-ahead): after a read that
 * returned bytes, tr_pending says whether to read again without waiting.
 *
 * Events stay with the owner: it arms its libevent read and write events
 * and their timeouts as before, and looks at t->want after an EAGAIN or
 * an unfinished handshake to know which one the stream waits for (a TLS
 * read may have to write: a key update's answer).
 *
 * A connection starts with a handshake: tr_accept (a server's side of a
 * socket accept(2) gave) or tr_connect (a non-blocking connect to
 * host:port), then tr_handshake until it returns 0. For TCP the accept
 * side has none, and the connect side's is the connect itself.
 */
#ifndef UR_TRANSPORT_H
#define UR_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

enum tr_want { TR_WANT_NONE = 0, TR_WANT_READ = 1, TR_WANT_WRITE = 2 };

enum tr_state {
    TR_CONNECTING = 0, /* a non-blocking connect(2) in progress */
    TR_HANDSHAKE = 1,  /* the transport's own handshake (TLS) */
    TR_READY = 2       /* bytes flow */
};

struct tr_conn;

struct tr_type {
    const char *name; /* "tcp", "tls" */
    /* Makes t (fd set) this transport's: the accepting side of a
     * handshake (accept) or the connecting one, naming the server for
     * SNI (name, may be NULL). 0, or -1 with errno (and tr_error). */
    int (*init)(struct tr_conn *t, bool accept, const char *name);
    /* One step of the handshake: 0 done, 1 again on t->want, -1 failed
     * (tr_error). */
    int (*handshake)(struct tr_conn *t);
    ssize_t (*read)(struct tr_conn *t, void *buf, size_t n);
    ssize_t (*write)(struct tr_conn *t, const void *buf, size_t n);
    ssize_t (*writev)(struct tr_conn *t, const struct iovec *iov, int iovcnt);
    /* sendfile(2)'s contract: up to n bytes of in_fd from *off. */
    ssize_t (*sendfile)(struct tr_conn *t, int in_fd, off_t *off, size_t n);
    /* Nonzero while bytes wait inside the transport (TLS read-ahead). */
    size_t (*pending)(const struct tr_conn *t);
    /* Frees what init made (a TLS session), closes fd when close_fd; a
     * TLS stream says goodbye (close_notify) first, without waiting. */
    void (*close)(struct tr_conn *t, bool close_fd);
    /* The last failure's text (errno's, or the TLS library's). */
    const char *(*error)(const struct tr_conn *t);
};

struct tr_conn {
    const struct tr_type *type;
    void *ssl;     /* TLS: its SSL; NULL for TCP */
    int fd;        /* -1: none */
    int err;       /* errno of the last failure */
    uint8_t state; /* enum tr_state */
    uint8_t want;  /* enum tr_want: what an EAGAIN waits for */
};

extern const struct tr_type tr_tcp;

/* Takes the socket of an accept(2) (non-blocking, TCP_NODELAY set by the
 * caller) under type: 0, or -1 with errno (nothing to free then; the
 * socket is the caller's). */
int tr_accept(struct tr_conn *t, const struct tr_type *type, int fd);

/*
 * Starts a non-blocking connect to host:port (resolved here, blocking, as
 * Redis resolves its replication peer) with TCP_NODELAY, to go on over
 * type: 0 with t->fd set and t->want TR_WANT_WRITE (the connect completes
 * when the socket is writable: call tr_handshake then), or -1 with a
 * message in err. A TLS stream names host in its SNI.
 */
int tr_connect(struct tr_conn *t, const struct tr_type *type, const char *host,
               uint32_t port, char *err, size_t errlen);

/* Drives the connect and the handshake: 0 when bytes can flow, 1 to be
 * called again when t->want's event comes, -1 failed (tr_error). */
int tr_handshake(struct tr_conn *t);

static inline ssize_t tr_read(struct tr_conn *t, void *buf, size_t n)
{
    return t->type->read(t, buf, n);
}

static inline ssize_t tr_write(struct tr_conn *t, const void *buf, size_t n)
{
    return t->type->write(t, buf, n);
}

static inline ssize_t tr_writev(struct tr_conn *t, const struct iovec *iov,
                                int iovcnt)
{
    return t->type->writev(t, iov, iovcnt);
}

static inline ssize_t tr_sendfile(struct tr_conn *t, int in_fd, off_t *off,
                                  size_t n)
{
    return t->type->sendfile(t, in_fd, off, n);
}

static inline size_t tr_pending(const struct tr_conn *t)
{
    return t->type->pending(t);
}

static inline const char *tr_error(const struct tr_conn *t)
{
    return t->type->error(t);
}

/* Closes t (see tr_type.close); t->fd is -1 after. A no-op when t has no
 * socket. A connection given to another owner (PSYNC hands a client's to
 * replication) is moved by copying the struct: the old copy is then
 * forgotten, not closed. */
void tr_close(struct tr_conn *t);

#endif
