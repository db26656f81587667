/*
 * unread_conn.c - one connection to one server (unread_conn.h).
 */
#include "unread_conn.h"
#include "unread_sentinel.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ops.h"

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* platforms without it: SO_NOSIGPIPE instead */
#endif

/* Largest reply frame accepted: the protocol's ceiling for max-frame. A
 * reply is a server's answer, so it may legitimately exceed the request
 * limit (INFO, HELP, long arrays). */
#define UC_MAX_REPLY UR_MAX_FRAME_CEILING
/* Bytes asked of recv() at least, and kept by idle buffers. */
#define UC_READ_CHUNK (64u << 10)
#define UC_IDLE_KEEP (64u << 10)

static int conn_err(struct uc_conn *k, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records "host:port: message" as the connection's last failure. */
static int conn_err(struct uc_conn *k, int rc, const char *fmt, ...)
{
    va_list ap;
    int n;

    n = snprintf(k->err, sizeof(k->err), "%s: ", k->a->name);
    if (n < 0 || (size_t)n >= sizeof(k->err))
        return rc;
    va_start(ap, fmt);
    vsnprintf(k->err + n, sizeof(k->err) - (size_t)n, fmt, ap);
    va_end(ap);
    return rc;
}

/* strerror() may share one buffer between threads; this does not. */
static const char *errno_text(int e, char *buf, size_t n)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(e, buf, n);
#else
    return strerror_r(e, buf, n) == 0 ? buf : "unknown error";
#endif
}

int64_t uc_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct uc_deadline uc_deadline(int timeout_ms, const char *what)
{
    struct uc_deadline d;

    d.at = timeout_ms > 0 ? uc_now_ms() + timeout_ms : -1;
    d.ms = timeout_ms;
    d.what = what;
    return d;
}

/* poll() timeout left until the deadline: -1 forever, 0 when passed. */
static int ms_left(int64_t at)
{
    int64_t left;

    if (at < 0)
        return -1;
    left = at - uc_now_ms();
    if (left <= 0)
        return 0;
    return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* ---- Connecting ------------------------------------------------------- */

/* One address: non-blocking connect bounded by the deadline. Returns the
 * fd, or -1 with *err_no set. */
static int dial_one(const struct addrinfo *ai, int64_t at, int *err_no)
{
    struct pollfd p;
    socklen_t sl;
    int fd, flags, soerr, n, one = 1;

    fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0)
        goto error;
    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        goto error;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS)
            goto error;
        p.fd = fd;
        p.events = POLLOUT;
        do {
            n = poll(&p, 1, ms_left(at));
        } while (n < 0 && errno == EINTR);
        if (n < 0)
            goto error;
        if (n == 0) {
            errno = ETIMEDOUT;
            goto error;
        }
        sl = sizeof(soerr);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
            goto error;
        if (soerr != 0) {
            errno = soerr;
            goto error;
        }
    }
    /* Requests are small and latency-bound: never wait for Nagle. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;

error:
    *err_no = errno;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Where k connects: its address, or where the sentinels say its master
 * name is now (asked within connect_ms per sentinel). 0 or -1 (err set). */
static int conn_target(struct uc_conn *k, int connect_ms, const char **host,
                       uint16_t *port)
{
    struct uc_sentinel *s = k->a->sentinel;
    char why[UC_ERRLEN - 64];

    if (s == NULL) {
        *host = k->a->host;
        *port = k->a->port;
        return 0;
    }
    if (uc_sentinel_resolve(s, k->tls, connect_ms, why, sizeof(why)) != 0)
        return conn_err(k, UNREAD_ECONNECT, "connect: %s", why);
    *host = s->host;
    *port = s->port;
    return 0;
}

/* The addresses to dial for k (through its sentinels when it has them):
 * 0 with *res for freeaddrinfo, or UNREAD_ECONNECT with k's error set. */
static int conn_resolve(struct uc_conn *k, int connect_ms,
                        struct addrinfo **res)
{
    struct addrinfo hints;
    char portstr[8];
    const char *host = NULL;
    uint16_t port = 0;
    int gai;

    if (conn_target(k, connect_ms, &host, &port) != 0)
        return UNREAD_ECONNECT;
    k->tls_host = host;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%u", (unsigned)port);
    gai = getaddrinfo(host, portstr, &hints, res);
    if (gai != 0)
        return conn_err(k, UNREAD_ECONNECT, "connect: cannot resolve %s: %s",
                        host, gai_strerror(gai));
    return 0;
}

static void conn_close(struct uc_conn *k);

/* The TLS handshake on k's new socket, within the connect's deadline at:
 * 0, or UNREAD_ECONNECT with the socket closed. */
static int tls_open(struct uc_conn *k, int connect_ms, int64_t at)
{
    struct pollfd p;
    int rc, n;

    while ((rc = uc_conn_handshake(k)) == 1) {
        p.fd = k->fd;
        p.events = k->tls_want == UC_TLS_WRITE ? POLLOUT : POLLIN;
        do {
            n = poll(&p, 1, ms_left(at));
        } while (n < 0 && errno == EINTR);
        if (n == 0) {
            conn_err(k, UNREAD_ECONNECT, "TLS handshake: timeout after %d ms",
                     connect_ms);
            rc = UNREAD_ECONNECT;
            break;
        }
    }
    if (rc != 0)
        conn_close(k);
    return rc;
}

/* Resolves the host and tries each address in turn, the whole within
 * connect_ms (name resolution itself is not bounded). */
static int conn_open(struct uc_conn *k, int connect_ms)
{
    struct addrinfo *res = NULL, *ai;
    char ebuf[128];
    int err_no = ECONNREFUSED;
    int64_t at;

    if (conn_resolve(k, connect_ms, &res) != 0)
        return UNREAD_ECONNECT;
    at = uc_deadline(connect_ms, "connect").at;
    for (ai = res; ai != NULL && k->fd < 0; ai = ai->ai_next)
        k->fd = dial_one(ai, at, &err_no);
    freeaddrinfo(res);
    if (k->fd >= 0)
        return k->tls != NULL ? tls_open(k, connect_ms, at) : 0;
    if (err_no == ETIMEDOUT)
        return conn_err(k, UNREAD_ECONNECT, "connect: timeout after %d ms",
                        connect_ms);
    return conn_err(k, UNREAD_ECONNECT, "connect: %s",
                    errno_text(err_no, ebuf, sizeof(ebuf)));
}

void uc_conn_init(struct uc_conn *k, const struct uc_addr *a)
{
    memset(k, 0, sizeof(*k));
    k->fd = -1;
    k->a = a;
    k->next_id = 1;
    k->expect_id = 1;
    ur_buf_init(&k->out);
    ur_buf_init(&k->in);
}

/* Closes k's socket and its TLS stream. */
static void conn_close(struct uc_conn *k)
{
    uc_tls_close(k->ssl, k->tls_broken);
    k->ssl = NULL;
    k->tls_broken = false;
    k->tls_wpending = false;
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
}

void uc_conn_deinit(struct uc_conn *k)
{
    conn_close(k);
    ur_buf_deinit(&k->out);
    ur_buf_deinit(&k->in);
}

void uc_conn_drop(struct uc_conn *k)
{
    conn_close(k);
    k->out.len = 0;
    k->out_pos = 0;
    k->in.len = 0;
    k->in_pos = 0;
    k->queued = 0;
    k->inflight = 0;
    k->next_id = 1;
    k->expect_id = 1;
    if (k->out.cap > UC_IDLE_KEEP)
        ur_buf_shrink(&k->out, UC_IDLE_KEEP);
    if (k->in.cap > UC_IDLE_KEEP)
        ur_buf_shrink(&k->in, UC_IDLE_KEEP);
}

static int conn_auth(struct uc_conn *k, int connect_ms);

int uc_conn_ensure(struct uc_conn *k, int connect_ms)
{
    char b;
    ssize_t n;

    if (k->queued > 0 || k->inflight > 0 || k->in_pos < k->in.len) {
        /* In use by an open pipeline: its failures surface there. */
        if (k->fd >= 0)
            return 0;
    } else {
        /* Idle: nothing points into the input buffer any more, so give
         * back what a burst of replies made it hold. */
        k->in.len = 0;
        k->in_pos = 0;
        if (k->in.cap > UC_IDLE_KEEP)
            ur_buf_shrink(&k->in, UC_IDLE_KEEP);
        if (k->fd >= 0 && k->ssl != NULL) {
            /* TLS: a read, which also takes the session tickets a server
             * sends after the handshake (records, but no bytes). */
            char why[128];
            int want;

            n = uc_tls_recv(k->ssl, &b, 1, &want, why, sizeof(why));
            if (n >= 0 || errno != EAGAIN)
                uc_conn_drop(k);
        } else if (k->fd >= 0) {
            n = recv(k->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
            /* EOF, an error, or bytes nobody asked for: start afresh. */
            if (n >= 0 ||
                (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                uc_conn_drop(k);
        }
    }
    /* A -READONLY from a sentinel-found server: it is no longer the
     * master; ask the sentinels again once nothing is in flight. */
    if (k->fd >= 0 && k->a->sentinel != NULL && k->a->sentinel->stale &&
        k->queued == 0 && k->inflight == 0)
        uc_conn_drop(k);
    if (k->fd >= 0)
        return 0;
    if (conn_open(k, connect_ms) != 0)
        return UNREAD_ECONNECT;
    return k->password != NULL ? conn_auth(k, connect_ms) : 0;
}

/* ---- Requests ---------------------------------------------------------- */

/* The frame begun at mark, at off, is complete with argc (or its count
 * of sub-requests): it is queued under the next request id. */
static void encoded(struct uc_conn *k, size_t mark, size_t off, uint16_t argc)
{
    ur_frame_req_end(&k->out, off, argc);
    k->last_frame = mark;
    k->next_id++;
    k->queued++;
}

int uc_put_args(struct ur_buf *b, unsigned argc, const struct unread_arg *argv)
{
    size_t mark = b->len;
    unsigned i;
    int rc = 0;

    for (i = 0; i < argc && rc == 0; i++)
        rc = argv[i].kind == UNREAD_ARG_INT
                 ? ur_frame_put_arg_int(b, argv[i].num)
                 : ur_frame_put_arg_str(b, argv[i].str, argv[i].len);
    if (rc != 0)
        b->len = mark;
    return rc;
}

int uc_conn_encode(struct uc_conn *k, uint16_t op, unsigned argc,
                   const struct unread_arg *argv)
{
    size_t mark = k->out.len, off;

    if (ur_frame_req_begin(&k->out, op, k->next_id, &off) != 0 ||
        uc_put_args(&k->out, argc, argv) != 0) {
        k->out.len = mark;
        return conn_err(k, UNREAD_ENOMEM, "out of memory encoding a request");
    }
    encoded(k, mark, off, (uint16_t)argc);
    return 0;
}

int uc_conn_encode_batch(struct uc_conn *k, uint16_t n, const char *body,
                         size_t len)
{
    size_t mark = k->out.len, off;

    if (ur_frame_req_begin(&k->out, UR_FRAME_OP_BATCH, k->next_id, &off) != 0 ||
        ur_buf_append(&k->out, body, len) != 0) {
        k->out.len = mark;
        return conn_err(k, UNREAD_ENOMEM, "out of memory encoding a batch");
    }
    encoded(k, mark, off, n);
    return 0;
}

int uc_conn_encode_copy(struct uc_conn *k, const char *frame, size_t len)
{
    size_t mark = k->out.len;
    uint32_t id = k->next_id;

    if (len < UR_FRAME_HDR || ur_buf_append(&k->out, frame, len) != 0) {
        k->out.len = mark;
        return conn_err(k, UNREAD_ENOMEM, "out of memory encoding a request");
    }
    /* The id: bytes 4..7, little-endian (frame.h). */
    for (int i = 0; i < 4; i++)
        k->out.data[mark + 4 + i] = (char)(id >> (8 * i));
    k->last_frame = mark;
    k->next_id++;
    k->queued++;
    return 0;
}

void uc_conn_unencode(struct uc_conn *k)
{
    k->out.len = k->last_frame;
    k->next_id--;
    k->queued--;
}

void uc_conn_abandon(struct uc_conn *k)
{
    if (k->inflight > 0 || k->out_pos > 0 || k->tls_wpending) {
        uc_conn_drop(k);
        return;
    }
    k->out.len = 0;
    k->queued = 0;
    k->next_id = k->expect_id;
}

/* ---- Socket I/O ------------------------------------------------------- */

/* errno's text into why, errno kept. */
static void sys_why(char *why, size_t cap)
{
    char buf[128];
    int e = errno;

    snprintf(why, cap, "%s", errno_text(e, buf, sizeof(buf)));
    errno = e;
}

/* recv(2) and send(2) on k, through its TLS stream when it has one: their
 * contract (errno EAGAIN when the socket has nothing, or no room), with a
 * TLS failure's text in why. */
static ssize_t conn_recv(struct uc_conn *k, void *buf, size_t n, char *why,
                         size_t cap)
{
    ssize_t r;
    int want;

    if (k->ssl == NULL) {
        r = recv(k->fd, buf, n, 0);
        if (r < 0)
            sys_why(why, cap);
        return r;
    }
    r = uc_tls_recv(k->ssl, buf, n, &want, why, cap);
    if (r < 0 && errno != EAGAIN)
        k->tls_broken = true;
    return r;
}

static ssize_t conn_send(struct uc_conn *k, const void *buf, size_t n,
                         char *why, size_t cap)
{
    ssize_t r;
    int want;

    if (k->ssl == NULL) {
        r = send(k->fd, buf, n, MSG_NOSIGNAL);
        if (r < 0)
            sys_why(why, cap);
        return r;
    }
    r = uc_tls_send(k->ssl, buf, n, &want, why, cap);
    k->tls_wpending = r < 0 && errno == EAGAIN;
    if (r < 0 && errno != EAGAIN)
        k->tls_broken = true;
    return r;
}

static int wait_fd(struct uc_conn *k, short events, const struct uc_deadline *d,
                   short *revents)
{
    struct pollfd p;
    char ebuf[128];
    int n;

    if ((events & POLLIN) && k->ssl != NULL && uc_tls_pending(k->ssl) > 0) {
        *revents = POLLIN; /* decrypted bytes poll cannot see */
        return 0;
    }
    p.fd = k->fd;
    p.events = events;
    for (;;) {
        p.revents = 0;
        n = poll(&p, 1, ms_left(d->at));
        if (n > 0) {
            *revents = p.revents;
            return 0;
        }
        if (n == 0)
            return conn_err(k, UNREAD_ETIMEOUT, "%s: timeout after %d ms",
                            d->what, d->ms);
        if (errno != EINTR)
            return conn_err(k, UNREAD_EIO, "poll: %s",
                            errno_text(errno, ebuf, sizeof(ebuf)));
    }
}

/* One recv() into the input buffer, at least `want` bytes of room.
 * 0 when bytes arrived, 1 when none were waiting, else a failure code. */
static int in_recv(struct uc_conn *k, size_t want)
{
    char ebuf[256];
    ssize_t n;

    /* Parsed bytes are dropped only here, so a long pipeline's replies are
     * not moved once per reply. */
    if (k->in_pos == k->in.len) {
        k->in.len = 0;
        k->in_pos = 0;
    } else if (k->in_pos > 0 && k->in_pos >= k->in.len / 2) {
        ur_buf_consume(&k->in, k->in_pos);
        k->in_pos = 0;
    }
    if (want < UC_READ_CHUNK)
        want = UC_READ_CHUNK;
    if (ur_buf_reserve(&k->in, want) != 0)
        return conn_err(k, UNREAD_ENOMEM, "out of memory reading a reply");
    for (;;) {
        n = conn_recv(k, k->in.data + k->in.len, k->in.cap - k->in.len, ebuf,
                      sizeof(ebuf));
        if (n > 0) {
            k->in.len += (size_t)n;
            return 0;
        }
        if (n == 0)
            return conn_err(k, UNREAD_ECLOSED, "connection closed by server");
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 1;
        if (errno != EINTR)
            return conn_err(k, UNREAD_EIO, "read: %s", ebuf);
    }
}

/* Waits for and reads more reply bytes. */
static int in_read(struct uc_conn *k, size_t want, const struct uc_deadline *d)
{
    short ev;
    int rc;

    for (;;) {
        rc = wait_fd(k, POLLIN, d, &ev);
        if (rc != 0)
            return rc;
        rc = in_recv(k, want);
        if (rc != 1)
            return rc;
    }
}

int uc_conn_flush(struct uc_conn *k, const struct uc_deadline *d)
{
    char ebuf[256];
    ssize_t n;
    short ev;
    int rc;

    while (k->out_pos < k->out.len) {
        n = conn_send(k, k->out.data + k->out_pos, k->out.len - k->out_pos,
                      ebuf, sizeof(ebuf));
        if (n > 0) {
            k->out_pos += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return conn_err(k, UNREAD_EIO, "write: %s", ebuf);
        rc = wait_fd(k, POLLOUT | POLLIN, d, &ev);
        if (rc != 0)
            return rc;
        if (ev & (POLLIN | POLLHUP | POLLERR)) {
            rc = in_recv(k, 0);
            if (rc < 0)
                return rc;
        }
    }
    k->out.len = 0;
    k->out_pos = 0;
    if (k->out.cap > UC_IDLE_KEEP)
        ur_buf_shrink(&k->out, UC_IDLE_KEEP);
    k->inflight += k->queued;
    k->queued = 0;
    return 0;
}

int uc_conn_take_reply(struct uc_conn *k, struct ur_frame_hdr *h,
                       const char **body, size_t *hint)
{
    enum ur_parse st;
    size_t avail = k->in.len - k->in_pos, consumed = 0;

    for (;;) {
        *hint = UR_FRAME_HDR;
        avail = k->in.len - k->in_pos;
        if (avail == 0)
            return 1;
        st = ur_frame_parse_reply(k->in.data + k->in_pos, avail, UC_MAX_REPLY,
                                  h, &consumed, hint);
        if (st == UR_PARSE_OK && (h->flags & UR_FRAME_FLAG_PUSH)) {
            /* A push frame (MONITOR, pub/sub) answers no request: handed
             * to pub/sub or set aside, so the next frame is matched to
             * the request. */
            k->in_pos += consumed;
            if (k->on_push != NULL)
                k->on_push(k->push_ctx, k,
                           k->in.data + k->in_pos - consumed + UR_FRAME_HDR,
                           h->len);
            continue;
        }
        break;
    }
    if (st == UR_PARSE_NEED_MORE)
        return 1;
    if (st == UR_PARSE_INVALID)
        return conn_err(k, UNREAD_EPROTO,
                        "protocol error: malformed reply frame");
    if (st == UR_PARSE_TOO_BIG)
        return conn_err(k, UNREAD_EPROTO,
                        "protocol error: reply larger than %u bytes",
                        (unsigned)UC_MAX_REPLY);
    *body = k->in.data + k->in_pos + UR_FRAME_HDR;
    k->in_pos += consumed;
    if (h->id != k->expect_id)
        return conn_err(k, UNREAD_EPROTO,
                        "protocol error: reply to request %u, expected %u",
                        (unsigned)h->id, (unsigned)k->expect_id);
    k->expect_id++;
    if (k->inflight > 0)
        k->inflight--;
    else if (k->queued > 0)
        k->queued--;
    return 0;
}

int uc_conn_reply(struct uc_conn *k, const struct uc_deadline *d,
                  struct ur_frame_hdr *h, const char **body)
{
    size_t avail, hint;
    int rc;

    for (;;) {
        rc = uc_conn_take_reply(k, h, body, &hint);
        if (rc <= 0)
            return rc;
        avail = k->in.len - k->in_pos;
        rc = in_read(k, hint > avail ? hint - avail : 1, d);
        if (rc != 0)
            return rc;
    }
}

/* ---- Without waiting (the asynchronous face) ---------------------------- */

int uc_conn_dial(struct uc_conn *k, int connect_ms)
{
    struct addrinfo *res = NULL, *ai;
    char ebuf[128];
    int fd = -1, flags, err_no = ECONNREFUSED, one = 1;

    if (conn_resolve(k, connect_ms, &res) != 0)
        return UNREAD_ECONNECT;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) {
            err_no = errno;
            continue;
        }
        flags = fcntl(fd, F_GETFL);
        if (flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 &&
            fcntl(fd, F_SETFD, FD_CLOEXEC) == 0 &&
            (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
             errno == EINPROGRESS))
            break;
        err_no = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return conn_err(k, UNREAD_ECONNECT, "connect: %s",
                        errno_text(err_no, ebuf, sizeof(ebuf)));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    k->fd = fd;
    return 0;
}

int uc_conn_dialed(struct uc_conn *k)
{
    char ebuf[128];
    socklen_t sl = sizeof(int);
    int soerr = 0;

    if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
        soerr = errno;
    if (soerr == 0)
        return 0;
    return conn_err(k, UNREAD_ECONNECT, "connect: %s",
                    errno_text(soerr, ebuf, sizeof(ebuf)));
}

int uc_conn_handshake(struct uc_conn *k)
{
    char why[256];
    int rc;

    if (k->tls == NULL)
        return 0;
    if (k->ssl == NULL) {
        k->ssl = uc_tls_stream(k->tls, k->fd, k->tls_host, why, sizeof(why));
        if (k->ssl == NULL)
            return conn_err(k, UNREAD_ECONNECT, "%s", why);
    }
    rc = uc_tls_handshake(k->ssl, &k->tls_want, why, sizeof(why));
    if (rc < 0) {
        k->tls_broken = true;
        return conn_err(k, UNREAD_ECONNECT, "TLS handshake: %s", why);
    }
    return rc;
}

int uc_conn_send(struct uc_conn *k)
{
    char ebuf[256];
    ssize_t n;

    while (k->out_pos < k->out.len) {
        n = conn_send(k, k->out.data + k->out_pos, k->out.len - k->out_pos,
                      ebuf, sizeof(ebuf));
        if (n > 0) {
            k->out_pos += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 1;
        return conn_err(k, UNREAD_EIO, "write: %s", ebuf);
    }
    k->out.len = 0;
    k->out_pos = 0;
    if (k->out.cap > UC_IDLE_KEEP)
        ur_buf_shrink(&k->out, UC_IDLE_KEEP);
    k->inflight += k->queued;
    k->queued = 0;
    return 0;
}

int uc_conn_recv(struct uc_conn *k)
{
    return in_recv(k, 0);
}

/* ---- Authentication ----------------------------------------------------- */

/*
 * AUTH password on a new connection, before any request: a server that
 * refuses it (or does not answer within connect_ms) is no more usable than
 * one that cannot be reached, so the connection is dropped and the result
 * is UNREAD_ECONNECT, with the server's reply or the failure in err.
 */
static int conn_auth(struct uc_conn *k, int connect_ms)
{
    struct uc_deadline d = uc_deadline(connect_ms, "AUTH");
    const char *user = uc_cred_user(k->password);
    struct unread_arg a[2] = {
        {UNREAD_ARG_STR, 0, user, strlen(user)},
        {UNREAD_ARG_STR, 0, k->password, strlen(k->password)}};
    unsigned first = user[0] != '\0' ? 0 : 1; /* AUTH [user] password */
    struct ur_val_reader rd;
    struct ur_frame_hdr h;
    struct ur_val v;
    const char *body;
    int rc;

    rc = uc_conn_encode(k, UR_OP_AUTH, 2 - first, a + first);
    if (rc == 0)
        rc = uc_conn_flush(k, &d);
    if (rc == 0)
        rc = uc_conn_reply(k, &d, &h, &body);
    if (rc == 0 && h.op != 0) {
        ur_val_reader_init(&rd, body, h.len);
        if (ur_val_next(&rd, &v) && v.kind == UR_VAL_ERR)
            conn_err(k, 0, "AUTH refused: %s %.*s", ur_err_prefix(v.code),
                     (int)v.len, v.str);
        else
            conn_err(k, 0, "AUTH refused");
        rc = UNREAD_ECONNECT;
    }
    if (rc == 0)
        return 0;
    uc_conn_drop(k);
    return UNREAD_ECONNECT;
}
