/*
 * unread.c - libunread over the binary protocol (protocol/frame.h).
 *
 * One handle = one non-blocking socket, one output buffer of encoded
 * request frames and one input buffer of reply bytes. Every wait is a
 * poll() bounded by the call's deadline. Requests carry ids counting up
 * from 1 on each connection, and the server answers in request order, so
 * the id the next reply must carry is always known without a queue:
 * synchronous calls and pipelines share this machinery, a synchronous call
 * being a pipeline of one.
 */
#include "unread.h"
#include "unread_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "frame.h"
#include "ops.h"
#include "proto.h"

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* platforms without it: SO_NOSIGPIPE instead */
#endif

/* The public codes are the wire codes: keep them in step with proto.h. */
#define UNREAD_SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " != " #b)
UNREAD_SAME(UNREAD_ERR_ERR, UR_E_ERR);
UNREAD_SAME(UNREAD_ERR_ARITY, UR_E_ARITY);
UNREAD_SAME(UNREAD_ERR_UNKNOWN, UR_E_UNKNOWN);
UNREAD_SAME(UNREAD_ERR_BADARG, UR_E_BADARG);
UNREAD_SAME(UNREAD_ERR_NOAUTH, UR_E_NOAUTH);
UNREAD_SAME(UNREAD_ERR_OOM, UR_E_OOM);
UNREAD_SAME(UNREAD_ERR_MISCONF, UR_E_MISCONF);
UNREAD_SAME(UNREAD_ERR_NOPROTO, UR_E_NOPROTO);
UNREAD_SAME(UNREAD_ERR_TOOBIG, UR_E_TOOBIG);
UNREAD_SAME(UNREAD_ERR_LIMIT, UR_E_LIMIT);
UNREAD_SAME(UNREAD_ERR_PROTO, UR_E_PROTO);
UNREAD_SAME(UNREAD_ERR_WRONGPASS, UR_E_WRONGPASS);
UNREAD_SAME(UR_E__COUNT, 13); /* a new code in proto.h: add it to unread.h */
/* Reply kinds are the wire's value tags. */
UNREAD_SAME(UNREAD_REPLY_INT, UR_VAL_INT);
UNREAD_SAME(UNREAD_REPLY_STR, UR_VAL_STR);
UNREAD_SAME(UNREAD_REPLY_ARRAY, UR_VAL_ARR);
UNREAD_SAME(UNREAD_REPLY_NIL, UR_VAL_NIL);
UNREAD_SAME(UNREAD_REPLY_STATUS, UR_VAL_STATUS);
UNREAD_SAME(UNREAD_REPLY_ERROR, UR_VAL_ERR);
#undef UNREAD_SAME

/* Largest reply frame accepted: the protocol's ceiling for max-frame. A
 * reply is a server's answer, so it may legitimately exceed the request
 * limit (INFO, HELP, long arrays). */
#define UNREAD_MAX_REPLY UR_MAX_FRAME_CEILING
/* Bytes asked of recv() at least, and kept by idle buffers. */
#define UNREAD_READ_CHUNK (64u << 10)
#define UNREAD_IDLE_KEEP (64u << 10)
#define UNREAD_ERRLEN 512

struct unread {
    int fd; /* -1 while not connected */
    char *host;
    uint16_t port;
    int connect_timeout_ms;
    int timeout_ms;

    uint32_t next_id;   /* id of the next request encoded */
    uint32_t expect_id; /* id the next reply must carry */
    size_t queued;      /* requests encoded, not yet flushed */
    size_t inflight;    /* requests flushed, reply not yet read */

    bool piping;      /* a pipeline is open */
    int fail_rc;      /* failed pipeline: code of the remaining reads */
    size_t fail_left; /* failed pipeline: reads still to answer fail_rc */

    struct ur_buf out; /* encoded requests; out_pos bytes already sent */
    size_t out_pos;
    struct ur_buf in; /* received bytes; in_pos bytes already parsed */
    size_t in_pos;

    char err[UNREAD_ERRLEN];
};

static int set_err(struct unread *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records the message for the last failure and returns rc. */
static int set_err(struct unread *c, int rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->err, sizeof(c->err), fmt, ap);
    va_end(ap);
    return rc;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* -1 means no deadline. */
static int64_t deadline_in(int timeout_ms)
{
    return timeout_ms > 0 ? now_ms() + timeout_ms : -1;
}

/* poll() timeout left until deadline: -1 forever, 0 when passed. */
static int ms_left(int64_t deadline)
{
    int64_t left;

    if (deadline < 0)
        return -1;
    left = deadline - now_ms();
    if (left <= 0)
        return 0;
    return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* ---- Connecting ------------------------------------------------------- */

/* One address: non-blocking connect bounded by the deadline. Returns the
 * fd, or -1 with *err_no set. */
static int dial_one(const struct addrinfo *ai, int64_t deadline, int *err_no)
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
            n = poll(&p, 1, ms_left(deadline));
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

/* Resolves host and tries each address in turn, the whole within
 * timeout_ms. Returns a connected non-blocking fd, or -1 with a message. */
static int dial(const char *host, uint16_t port, int timeout_ms, char *err,
                size_t errlen)
{
    struct addrinfo hints, *res = NULL, *ai;
    char portstr[8];
    int fd = -1, gai, err_no = ECONNREFUSED;
    int64_t deadline;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%u", (unsigned)port);
    gai = getaddrinfo(host, portstr, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(gai));
        return -1;
    }
    deadline = deadline_in(timeout_ms);
    for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next)
        fd = dial_one(ai, deadline, &err_no);
    freeaddrinfo(res);
    if (fd < 0) {
        if (err_no == ETIMEDOUT)
            snprintf(err, errlen, "connect to %s:%u: timeout after %d ms", host,
                     (unsigned)port, timeout_ms);
        else
            snprintf(err, errlen, "connect to %s:%u: %s", host, (unsigned)port,
                     strerror(err_no));
    }
    return fd;
}

/* Forgets the connection and everything in flight on it. */
static void conn_drop(struct unread *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->out.len = 0;
    c->out_pos = 0;
    c->in.len = 0;
    c->in_pos = 0;
    c->queued = 0;
    c->inflight = 0;
    c->next_id = 1;
    c->expect_id = 1;
    if (c->out.cap > UNREAD_IDLE_KEEP)
        ur_buf_shrink(&c->out, UNREAD_IDLE_KEEP);
    if (c->in.cap > UNREAD_IDLE_KEEP)
        ur_buf_shrink(&c->in, UNREAD_IDLE_KEEP);
}

/*
 * Between calls, nothing points into the input buffer any more: give back
 * what a burst of replies made it hold. (Not earlier: a reply body handed
 * to the decoder lives in it.)
 */
static void conn_idle(struct unread *c)
{
    c->in.len = 0;
    c->in_pos = 0;
    if (c->in.cap > UNREAD_IDLE_KEEP)
        ur_buf_shrink(&c->in, UNREAD_IDLE_KEEP);
}

static int conn_open(struct unread *c)
{
    c->fd =
        dial(c->host, c->port, c->connect_timeout_ms, c->err, sizeof(c->err));
    return c->fd < 0 ? UNREAD_ECONNECT : 0;
}

/*
 * Makes sure an idle handle has a usable connection before a new request:
 * reconnects after a failure, and also when the server closed the idle
 * connection (restart, QUIT, idle timeout), which a non-blocking peek sees
 * for the price of one syscall. Without the peek, the first call after a
 * server restart would be sent into a dead socket and fail.
 */
static int conn_ensure(struct unread *c)
{
    char b;
    ssize_t n;

    if (c->inflight == 0 && c->in_pos == c->in.len)
        conn_idle(c);
    if (c->fd >= 0 && c->inflight == 0 && c->in_pos == c->in.len) {
        n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        /* EOF, an error, or bytes nobody asked for: start afresh. */
        if (n >= 0 ||
            (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            conn_drop(c);
    }
    if (c->fd < 0)
        return conn_open(c);
    return 0;
}

/* ---- Socket I/O ------------------------------------------------------- */

static int wait_fd(struct unread *c, short events, int64_t deadline,
                   short *revents)
{
    struct pollfd p;
    int n;

    p.fd = c->fd;
    p.events = events;
    for (;;) {
        p.revents = 0;
        n = poll(&p, 1, ms_left(deadline));
        if (n > 0) {
            *revents = p.revents;
            return 0;
        }
        if (n == 0)
            return set_err(c, UNREAD_ETIMEOUT, "timeout after %d ms",
                           c->timeout_ms);
        if (errno != EINTR)
            return set_err(c, UNREAD_EIO, "poll: %s", strerror(errno));
    }
}

/* One recv() into the input buffer, at least `want` bytes of room.
 * 0 when bytes arrived, 1 when none were waiting, else an error code. */
static int in_recv(struct unread *c, size_t want)
{
    ssize_t n;

    /* Parsed bytes are dropped only here, so a long pipeline's replies are
     * not moved once per reply. */
    if (c->in_pos == c->in.len) {
        c->in.len = 0;
        c->in_pos = 0;
    } else if (c->in_pos > 0 && c->in_pos >= c->in.len / 2) {
        ur_buf_consume(&c->in, c->in_pos);
        c->in_pos = 0;
    }
    if (want < UNREAD_READ_CHUNK)
        want = UNREAD_READ_CHUNK;
    if (ur_buf_reserve(&c->in, want) != 0)
        return set_err(c, UNREAD_ENOMEM, "out of memory reading a reply");
    for (;;) {
        n = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len, 0);
        if (n > 0) {
            c->in.len += (size_t)n;
            return 0;
        }
        if (n == 0)
            return set_err(c, UNREAD_ECLOSED, "connection closed by server");
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 1;
        if (errno != EINTR)
            return set_err(c, UNREAD_EIO, "read: %s", strerror(errno));
    }
}

/* Waits for and reads more reply bytes. */
static int in_read(struct unread *c, size_t want, int64_t deadline)
{
    short ev;
    int rc;

    for (;;) {
        rc = wait_fd(c, POLLIN, deadline, &ev);
        if (rc != 0)
            return rc;
        rc = in_recv(c, want);
        if (rc != 1)
            return rc;
    }
}

/*
 * Writes out[out_pos..len). While the socket is full it also reads
 * whatever replies arrive: a server that answers as it reads may stop
 * reading while its replies are not consumed, and both sides would wait
 * for each other.
 */
static int out_flush(struct unread *c, int64_t deadline)
{
    ssize_t n;
    short ev;
    int rc;

    while (c->out_pos < c->out.len) {
        n = send(c->fd, c->out.data + c->out_pos, c->out.len - c->out_pos,
                 MSG_NOSIGNAL);
        if (n > 0) {
            c->out_pos += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return set_err(c, UNREAD_EIO, "write: %s", strerror(errno));
        rc = wait_fd(c, POLLOUT | POLLIN, deadline, &ev);
        if (rc != 0)
            return rc;
        if (ev & (POLLIN | POLLHUP | POLLERR)) {
            rc = in_recv(c, 0);
            if (rc < 0)
                return rc;
        }
    }
    c->out.len = 0;
    c->out_pos = 0;
    if (c->out.cap > UNREAD_IDLE_KEEP)
        ur_buf_shrink(&c->out, UNREAD_IDLE_KEEP);
    return 0;
}

/*
 * Reads the next reply frame and checks its request id. On success the
 * frame is consumed and *body points at its body in the input buffer,
 * valid until the next read on the handle. Any failure leaves the stream
 * unusable: the caller closes the connection.
 */
static int reply_next(struct unread *c, int64_t deadline,
                      struct ur_frame_hdr *h, const char **body)
{
    enum ur_parse st;
    size_t avail, consumed = 0, hint = UR_FRAME_HDR;
    int rc;

    for (;;) {
        avail = c->in.len - c->in_pos;
        st = UR_PARSE_NEED_MORE;
        if (avail > 0)
            st = ur_frame_parse_reply(c->in.data + c->in_pos, avail,
                                      UNREAD_MAX_REPLY, h, &consumed, &hint);
        if (st == UR_PARSE_OK)
            break;
        if (st == UR_PARSE_INVALID)
            return set_err(c, UNREAD_EPROTO,
                           "protocol error: malformed reply frame");
        if (st == UR_PARSE_TOO_BIG)
            return set_err(c, UNREAD_EPROTO,
                           "protocol error: reply larger than %u bytes",
                           (unsigned)UNREAD_MAX_REPLY);
        rc = in_read(c, hint > avail ? hint - avail : 1, deadline);
        if (rc != 0)
            return rc;
    }
    *body = c->in.data + c->in_pos + UR_FRAME_HDR;
    c->in_pos += consumed;
    if (h->id != c->expect_id)
        return set_err(c, UNREAD_EPROTO,
                       "protocol error: reply to request %u, expected %u",
                       (unsigned)h->id, (unsigned)c->expect_id);
    c->expect_id++;
    return 0;
}

/* ---- Requests ---------------------------------------------------------- */

/* Name or opcode, as unread_command() documents. */
static int resolve_op(struct unread *c, const char *name, uint16_t opcode,
                      uint16_t *op)
{
    const struct ur_op *o;

    if (name == NULL) {
        *op = opcode;
        return 0;
    }
    o = ur_op_by_name(name, strlen(name));
    if (o == NULL)
        return set_err(c, UNREAD_ERR_UNKNOWN, "ERR unknown command '%s'", name);
    *op = o->code;
    return 0;
}

/* Appends one request frame to the output buffer, or nothing. */
static int enc_cmd(struct unread *c, uint16_t op, unsigned argc,
                   const struct unread_arg *argv)
{
    size_t mark = c->out.len, off;
    unsigned i = 0;
    int rc = UNREAD_ENOMEM;

    if (argc > UINT16_MAX)
        return set_err(c, UNREAD_EUSAGE, "%u arguments: at most %u", argc,
                       (unsigned)UINT16_MAX);
    if (ur_frame_req_begin(&c->out, op, c->next_id, &off) != 0)
        goto error;
    for (i = 0; i < argc; i++) {
        if (argv[i].kind == UNREAD_ARG_INT) {
            if (ur_frame_put_arg_int(&c->out, argv[i].num) != 0)
                goto error;
        } else if (argv[i].kind == UNREAD_ARG_STR &&
                   argv[i].len <= UINT32_MAX &&
                   (argv[i].str != NULL || argv[i].len == 0)) {
            if (ur_frame_put_arg_str(&c->out, argv[i].str, argv[i].len) != 0)
                goto error;
        } else {
            rc = UNREAD_EUSAGE;
            goto error;
        }
    }
    ur_frame_req_end(&c->out, off, (uint16_t)argc);
    c->next_id++;
    c->queued++;
    return 0;

error:
    c->out.len = mark;
    if (rc == UNREAD_EUSAGE)
        return set_err(c, rc, "argument %u: bad kind, length or pointer", i);
    return set_err(c, rc, "out of memory encoding a request");
}

/*
 * The status of a reply: 0, or the server's error code with errstr set.
 * A non-zero status must carry one error value with the same code, and a
 * zero status must not carry an error value (frame.h).
 */
static int reply_status(struct unread *c, const struct ur_frame_hdr *h,
                        const char *body)
{
    struct ur_val_reader rd;
    struct ur_val v;

    ur_val_reader_init(&rd, body, h->len);
    if (!ur_val_next(&rd, &v))
        return set_err(c, UNREAD_EPROTO, "protocol error: empty reply");
    if (h->op == 0 && v.kind != UR_VAL_ERR)
        return 0;
    if (h->op == 0 || v.kind != UR_VAL_ERR || v.code != h->op)
        return set_err(c, UNREAD_EPROTO,
                       "protocol error: reply status %u does not match its "
                       "value",
                       (unsigned)h->op);
    set_err(c, h->op, "%s %.*s", ur_err_prefix(v.code), (int)v.len, v.str);
    return h->op;
}

/* A client-side failure of a synchronous call: the connection goes. */
static int call_fail(struct unread *c, int rc)
{
    if (rc != UNREAD_EUSAGE)
        conn_drop(c);
    return rc;
}

/*
 * One synchronous round trip. On 0 or a server error (> 0), *h and *body
 * describe the reply (valid until the next call); < 0: failed, and the
 * connection is closed unless the failure was a usage error.
 */
int uc_roundtrip(struct unread *c, uint16_t op, unsigned argc,
                 const struct unread_arg *argv, struct ur_frame_hdr *h,
                 const char **body)
{
    int64_t deadline;
    int rc;

    if (c->piping)
        return set_err(c, UNREAD_EUSAGE,
                       "a pipeline is open: read its replies or reset it");
    rc = conn_ensure(c);
    if (rc != 0)
        return rc;
    rc = enc_cmd(c, op, argc, argv);
    if (rc != 0)
        return rc;
    deadline = deadline_in(c->timeout_ms);
    rc = out_flush(c, deadline);
    if (rc != 0)
        return call_fail(c, rc);
    c->queued = 0;
    c->inflight = 1;
    rc = reply_next(c, deadline, h, body);
    if (rc != 0)
        return call_fail(c, rc);
    c->inflight = 0;
    rc = reply_status(c, h, *body);
    if (rc < 0)
        return call_fail(c, rc);
    return rc;
}

/* ---- Reply trees ------------------------------------------------------- */

struct tree {
    struct ur_val_reader rd;
    struct unread_reply *pool; /* every node; arrays take runs of it */
    size_t next;               /* first free node */
    char *strs;                /* string bytes, after the nodes */
};

/* Bytes an error value's text takes: "PREFIX message". */
static size_t err_text_len(const struct ur_val *v)
{
    return strlen(ur_err_prefix(v->code)) + 1 + v->len;
}

static char *tree_str(struct tree *t, const char *s, size_t n)
{
    char *d = t->strs;

    if (n > 0)
        memcpy(d, s, n);
    d[n] = '\0';
    t->strs += n + 1;
    return d;
}

/* Fills node from the next value in pre-order; depth is bounded by the
 * frame parser (UR_MAX_DEPTH). */
static bool tree_fill(struct tree *t, struct unread_reply *node)
{
    struct ur_val v;
    const char *prefix;
    size_t i, plen;

    if (!ur_val_next(&t->rd, &v))
        return false;
    memset(node, 0, sizeof(*node));
    node->kind = v.kind;
    switch (v.kind) {
    case UR_VAL_INT:
        node->integer = v.num;
        break;
    case UR_VAL_STR:
    case UR_VAL_STATUS:
        node->str = tree_str(t, v.str, v.len);
        node->len = v.len;
        break;
    case UR_VAL_ERR:
        prefix = ur_err_prefix(v.code);
        plen = strlen(prefix);
        node->code = v.code;
        node->len = err_text_len(&v);
        node->str = t->strs;
        memcpy(t->strs, prefix, plen);
        t->strs[plen] = ' ';
        t->strs += plen + 1;
        tree_str(t, v.str, v.len);
        break;
    case UR_VAL_NIL:
        break;
    case UR_VAL_ARR:
        node->n = v.count;
        if (v.count == 0)
            break;
        node->elem = t->pool + t->next;
        t->next += v.count;
        for (i = 0; i < node->n; i++)
            if (!tree_fill(t, &node->elem[i]))
                return false;
        break;
    default:
        return false;
    }
    return true;
}

/*
 * Copies a validated reply body into one allocation: the nodes first
 * (each array's elements contiguous), then the strings. Two passes over
 * the body: count, then fill.
 */
static int tree_build(struct unread *c, const char *body, size_t len,
                      struct unread_reply **out)
{
    struct tree t;
    struct ur_val v;
    struct unread_reply *root = NULL;
    size_t nodes = 0, bytes = 0;

    ur_val_reader_init(&t.rd, body, len);
    while (ur_val_next(&t.rd, &v)) {
        nodes++;
        if (v.kind == UR_VAL_STR || v.kind == UR_VAL_STATUS)
            bytes += (size_t)v.len + 1;
        else if (v.kind == UR_VAL_ERR)
            bytes += err_text_len(&v) + 1;
    }
    /* A body of at most 64 MiB cannot overflow this on 64-bit hosts. */
    if (nodes == 0 || nodes > (SIZE_MAX - bytes) / sizeof(*root))
        return set_err(c, UNREAD_EPROTO, "protocol error: bad reply body");
    root = malloc(nodes * sizeof(*root) + bytes);
    if (root == NULL)
        return set_err(c, UNREAD_ENOMEM, "out of memory for a reply");
    ur_val_reader_init(&t.rd, body, len);
    t.pool = root;
    t.next = 1;
    t.strs = (char *)(root + nodes);
    if (!tree_fill(&t, root)) {
        free(root);
        return set_err(c, UNREAD_EPROTO, "protocol error: bad reply body");
    }
    *out = root;
    return 0;
}

void unread_reply_free(struct unread_reply *r)
{
    free(r);
}

/* A reply made on the client side, for errors found before a round trip. */
static struct unread_reply *reply_local_error(int code, const char *text)
{
    size_t n = strlen(text);
    struct unread_reply *r = malloc(sizeof(*r) + n + 1);

    if (r == NULL)
        return NULL;
    memset(r, 0, sizeof(*r));
    r->kind = UNREAD_REPLY_ERROR;
    r->code = code;
    r->str = (char *)(r + 1);
    memcpy(r->str, text, n + 1);
    r->len = n;
    return r;
}

/* ---- Public: connection ------------------------------------------------ */

struct unread *unread_connect(const char *host, uint16_t port, int timeout_ms,
                              char *err, size_t errlen)
{
    struct unread *c = NULL;
    char local[UNREAD_ERRLEN];
    size_t n;

    if (err == NULL || errlen == 0) {
        err = local;
        errlen = sizeof(local);
    }
    if (host == NULL)
        host = "127.0.0.1";
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        goto nomem;
    n = strlen(host);
    c->host = malloc(n + 1);
    if (c->host == NULL)
        goto nomem;
    memcpy(c->host, host, n + 1);
    c->port = port;
    c->connect_timeout_ms = timeout_ms;
    c->timeout_ms = timeout_ms;
    c->next_id = 1;
    c->expect_id = 1;
    ur_buf_init(&c->out);
    ur_buf_init(&c->in);
    c->fd = dial(host, port, timeout_ms, err, errlen);
    if (c->fd < 0)
        goto error;
    return c;

nomem:
    snprintf(err, errlen, "out of memory");
error:
    if (c != NULL) {
        free(c->host);
        free(c);
    }
    return NULL;
}

void unread_close(struct unread *c)
{
    if (c == NULL)
        return;
    if (c->fd >= 0)
        close(c->fd);
    ur_buf_deinit(&c->out);
    ur_buf_deinit(&c->in);
    free(c->host);
    free(c);
}

void unread_set_timeout(struct unread *c, int timeout_ms)
{
    c->timeout_ms = timeout_ms;
}

int unread_fd(const struct unread *c)
{
    return c->fd;
}

const char *unread_errstr(const struct unread *c)
{
    return c->err;
}

const char *unread_strerror(int code)
{
    switch (code) {
    case UNREAD_OK:
        return "OK";
    case UNREAD_EIO:
        return "EIO";
    case UNREAD_ETIMEOUT:
        return "ETIMEOUT";
    case UNREAD_EPROTO:
        return "EPROTO";
    case UNREAD_ECLOSED:
        return "ECLOSED";
    case UNREAD_ECONNECT:
        return "ECONNECT";
    case UNREAD_ENOMEM:
        return "ENOMEM";
    case UNREAD_EUSAGE:
        return "EUSAGE";
    default:
        return code > 0 ? ur_err_name((uint32_t)code) : "EUNKNOWN";
    }
}

/* ---- Public: typed calls ----------------------------------------------- */

bool uc_rd_int(struct ur_val_reader *rd, uint64_t *v)
{
    struct ur_val x;

    if (!ur_val_next(rd, &x) || x.kind != UR_VAL_INT)
        return false;
    *v = x.num;
    return true;
}

bool uc_rd_arr(struct ur_val_reader *rd, uint32_t *count)
{
    struct ur_val x;

    if (!ur_val_next(rd, &x) || x.kind != UR_VAL_ARR)
        return false;
    *count = x.count;
    return true;
}

/* A typed call got a reply of the wrong shape: the server and the library
 * disagree on the command, and nothing later on this stream is trusted. */
int uc_shape_err(struct unread *c, uint16_t op)
{
    const struct ur_op *o = ur_op_by_code(op);

    set_err(c, UNREAD_EPROTO, "protocol error: unexpected reply to %s",
            o != NULL ? o->name : "command");
    return call_fail(c, UNREAD_EPROTO);
}

/* Synchronous call of an op whose arguments are all integers; on 0 *rd
 * reads the reply body. */
int uc_call_ints(struct unread *c, uint16_t op, unsigned argc,
                 const uint64_t *v, struct ur_val_reader *rd)
{
    struct unread_arg argv[UNREAD_CNT_TYPES + 1];
    struct ur_frame_hdr h;
    const char *body;
    unsigned i;
    int rc;

    for (i = 0; i < argc; i++)
        argv[i] = unread_arg_int(v[i]);
    rc = uc_roundtrip(c, op, argc, argv, &h, &body);
    if (rc == 0)
        ur_val_reader_init(rd, body, h.len);
    return rc;
}

/* The [value, total] reply of CNT.INCR, DECR and SET. */
static int call_cnt_pair(struct unread *c, uint16_t op, uint64_t uid,
                         unsigned type, uint32_t n, uint32_t *value,
                         uint64_t *total)
{
    struct ur_val_reader rd;
    uint64_t args[3] = {uid, type, n}, v, t;
    uint32_t count;
    int rc;

    rc = uc_call_ints(c, op, 3, args, &rd);
    if (rc != 0)
        return rc;
    if (!uc_rd_arr(&rd, &count) || count != 2 || !uc_rd_int(&rd, &v) ||
        !uc_rd_int(&rd, &t) || v > UINT32_MAX)
        return uc_shape_err(c, op);
    if (value != NULL)
        *value = (uint32_t)v;
    if (total != NULL)
        *total = t;
    return 0;
}

/* Calls whose reply is one integer. */
int uc_call_int(struct unread *c, uint16_t op, unsigned argc,
                const uint64_t *args, uint64_t *out)
{
    struct ur_val_reader rd;
    uint64_t v;
    int rc;

    rc = uc_call_ints(c, op, argc, args, &rd);
    if (rc != 0)
        return rc;
    if (!uc_rd_int(&rd, &v))
        return uc_shape_err(c, op);
    if (out != NULL)
        *out = v;
    return 0;
}

int unread_ping(struct unread *c)
{
    struct ur_val_reader rd;
    struct ur_val v;
    int rc;

    rc = uc_call_ints(c, UR_OP_PING, 0, NULL, &rd);
    if (rc != 0)
        return rc;
    if (!ur_val_next(&rd, &v) || v.kind != UR_VAL_STATUS || v.len != 4 ||
        memcmp(v.str, "PONG", 4) != 0)
        return uc_shape_err(c, UR_OP_PING);
    return 0;
}

int unread_cnt_incr(struct unread *c, uint64_t uid, unsigned type,
                    uint32_t delta, uint32_t *value, uint64_t *total)
{
    return call_cnt_pair(c, UR_OP_CNT_INCR, uid, type, delta, value, total);
}

int unread_cnt_decr(struct unread *c, uint64_t uid, unsigned type,
                    uint32_t delta, uint32_t *value, uint64_t *total)
{
    return call_cnt_pair(c, UR_OP_CNT_DECR, uid, type, delta, value, total);
}

int unread_cnt_set(struct unread *c, uint64_t uid, unsigned type,
                   uint32_t set_to, uint32_t *value, uint64_t *total)
{
    return call_cnt_pair(c, UR_OP_CNT_SET, uid, type, set_to, value, total);
}

int unread_cnt_get(struct unread *c, uint64_t uid, unsigned type,
                   uint32_t *value)
{
    uint64_t args[2] = {uid, type}, v;
    int rc;

    rc = uc_call_int(c, UR_OP_CNT_GET, 2, args, &v);
    if (rc != 0)
        return rc;
    if (v > UINT32_MAX)
        return uc_shape_err(c, UR_OP_CNT_GET);
    if (value != NULL)
        *value = (uint32_t)v;
    return 0;
}

int unread_cnt_getall(struct unread *c, uint64_t uid,
                      struct unread_cnt_pair *out, unsigned *n)
{
    struct ur_val_reader rd;
    uint64_t type, value;
    uint32_t count, i;
    int rc, last = -1;

    rc = uc_call_ints(c, UR_OP_CNT_GETALL, 1, &uid, &rd);
    if (rc != 0)
        return rc;
    if (!uc_rd_arr(&rd, &count) || count % 2 != 0 ||
        count / 2 > UNREAD_CNT_TYPES)
        return uc_shape_err(c, UR_OP_CNT_GETALL);
    for (i = 0; i < count / 2; i++) {
        if (!uc_rd_int(&rd, &type) || !uc_rd_int(&rd, &value) ||
            type >= UNREAD_CNT_TYPES || (int)type <= last || value > UINT32_MAX)
            return uc_shape_err(c, UR_OP_CNT_GETALL);
        last = (int)type;
        if (out != NULL) {
            out[i].type = (uint8_t)type;
            out[i].value = (uint32_t)value;
        }
    }
    if (n != NULL)
        *n = count / 2;
    return 0;
}

int unread_cnt_total(struct unread *c, uint64_t uid, uint64_t *total)
{
    return uc_call_int(c, UR_OP_CNT_TOTAL, 1, &uid, total);
}

int unread_cnt_clear(struct unread *c, uint64_t uid, const uint8_t *types,
                     unsigned ntypes, uint64_t *total)
{
    uint64_t args[UNREAD_CNT_TYPES + 1];
    unsigned i;

    if (ntypes > UNREAD_CNT_TYPES || (ntypes > 0 && types == NULL))
        return set_err(c, UNREAD_EUSAGE, "CNT.CLEAR: %u types, at most %u",
                       ntypes, (unsigned)UNREAD_CNT_TYPES);
    args[0] = uid;
    for (i = 0; i < ntypes; i++)
        args[i + 1] = types[i];
    return uc_call_int(c, UR_OP_CNT_CLEAR, ntypes + 1, args, total);
}

/* ---- Public: generic command ------------------------------------------- */

/* Turns a reply (0 or a server error) into a tree for the caller. */
static int reply_tree(struct unread *c, int status, const char *body,
                      size_t len, struct unread_reply **out)
{
    int rc = tree_build(c, body, len, out);

    if (rc != 0)
        return rc;
    if (status > 0)
        set_err(c, status, "%s", (*out)->str);
    return status;
}

int unread_command(struct unread *c, const char *name, uint16_t opcode,
                   unsigned argc, const struct unread_arg *argv,
                   struct unread_reply **out)
{
    struct ur_frame_hdr h;
    const char *body;
    uint16_t op = 0;
    int rc;

    *out = NULL;
    rc = resolve_op(c, name, opcode, &op);
    if (rc != 0) {
        *out = reply_local_error(rc, c->err);
        return *out != NULL ? rc : set_err(c, UNREAD_ENOMEM, "out of memory");
    }
    rc = uc_roundtrip(c, op, argc, argv, &h, &body);
    if (rc < 0)
        return rc;
    rc = reply_tree(c, rc, body, h.len, out);
    return rc == UNREAD_EPROTO ? call_fail(c, rc) : rc;
}

/* ---- Public: pipeline -------------------------------------------------- */

/* The pipeline's connection failed: the replies the caller still expects
 * (the one failing now included) all report rc. */
static int pipe_fail(struct unread *c, int rc, bool reading)
{
    c->fail_rc = rc;
    c->fail_left = c->inflight + c->queued - (reading ? 1 : 0);
    conn_drop(c);
    if (c->fail_left == 0)
        c->piping = false;
    return rc;
}

int unread_pipe_begin(struct unread *c)
{
    int rc;

    if (c->piping)
        return set_err(c, UNREAD_EUSAGE, "a pipeline is already open");
    rc = conn_ensure(c);
    if (rc != 0)
        return rc;
    c->piping = true;
    return 0;
}

int unread_pipe_cmd(struct unread *c, const char *name, uint16_t opcode,
                    unsigned argc, const struct unread_arg *argv)
{
    uint16_t op = 0;
    int rc;

    if (!c->piping)
        return set_err(c, UNREAD_EUSAGE,
                       "no pipeline open (unread_pipe_begin)");
    if (c->fail_left > 0)
        return c->fail_rc;
    rc = resolve_op(c, name, opcode, &op);
    if (rc != 0)
        return rc;
    return enc_cmd(c, op, argc, argv);
}

static int pipe_ints(struct unread *c, uint16_t op, unsigned argc,
                     const uint64_t *v)
{
    struct unread_arg argv[UNREAD_CNT_TYPES + 1];
    unsigned i;

    for (i = 0; i < argc; i++)
        argv[i] = unread_arg_int(v[i]);
    return unread_pipe_cmd(c, NULL, op, argc, argv);
}

int unread_pipe_cnt_incr(struct unread *c, uint64_t uid, unsigned type,
                         uint32_t delta)
{
    uint64_t a[3] = {uid, type, delta};

    return pipe_ints(c, UR_OP_CNT_INCR, 3, a);
}

int unread_pipe_cnt_decr(struct unread *c, uint64_t uid, unsigned type,
                         uint32_t delta)
{
    uint64_t a[3] = {uid, type, delta};

    return pipe_ints(c, UR_OP_CNT_DECR, 3, a);
}

int unread_pipe_cnt_set(struct unread *c, uint64_t uid, unsigned type,
                        uint32_t value)
{
    uint64_t a[3] = {uid, type, value};

    return pipe_ints(c, UR_OP_CNT_SET, 3, a);
}

int unread_pipe_cnt_get(struct unread *c, uint64_t uid, unsigned type)
{
    uint64_t a[2] = {uid, type};

    return pipe_ints(c, UR_OP_CNT_GET, 2, a);
}

int unread_pipe_cnt_getall(struct unread *c, uint64_t uid)
{
    return pipe_ints(c, UR_OP_CNT_GETALL, 1, &uid);
}

int unread_pipe_cnt_total(struct unread *c, uint64_t uid)
{
    return pipe_ints(c, UR_OP_CNT_TOTAL, 1, &uid);
}

int unread_pipe_cnt_clear(struct unread *c, uint64_t uid, const uint8_t *types,
                          unsigned ntypes)
{
    uint64_t a[UNREAD_CNT_TYPES + 1];
    unsigned i;

    if (ntypes > UNREAD_CNT_TYPES || (ntypes > 0 && types == NULL))
        return set_err(c, UNREAD_EUSAGE, "CNT.CLEAR: %u types, at most %u",
                       ntypes, (unsigned)UNREAD_CNT_TYPES);
    a[0] = uid;
    for (i = 0; i < ntypes; i++)
        a[i + 1] = types[i];
    return pipe_ints(c, UR_OP_CNT_CLEAR, ntypes + 1, a);
}

size_t unread_pipe_queued(const struct unread *c)
{
    return c->queued;
}

size_t unread_pipe_pending(const struct unread *c)
{
    return c->inflight;
}

int unread_pipe_flush(struct unread *c)
{
    int rc;

    if (!c->piping)
        return set_err(c, UNREAD_EUSAGE,
                       "no pipeline open (unread_pipe_begin)");
    if (c->fail_left > 0)
        return c->fail_rc;
    if (c->queued == 0)
        return 0;
    rc = out_flush(c, deadline_in(c->timeout_ms));
    if (rc != 0)
        return pipe_fail(c, rc, false);
    c->inflight += c->queued;
    c->queued = 0;
    return 0;
}

int unread_pipe_read(struct unread *c, struct unread_reply **out)
{
    struct ur_frame_hdr h;
    const char *body;
    int rc;

    *out = NULL;
    if (!c->piping)
        return set_err(c, UNREAD_EUSAGE, "no pipeline open");
    if (c->fail_left > 0) {
        if (--c->fail_left == 0)
            c->piping = false;
        return c->fail_rc;
    }
    if (c->inflight == 0)
        return set_err(c, UNREAD_EUSAGE,
                       "no reply pending (%zu queued: flush first)", c->queued);
    rc = reply_next(c, deadline_in(c->timeout_ms), &h, &body);
    if (rc != 0)
        return pipe_fail(c, rc, true);
    c->inflight--;
    if (c->inflight == 0 && c->queued == 0)
        c->piping = false;
    rc = reply_status(c, &h, body);
    if (rc >= 0)
        rc = reply_tree(c, rc, body, h.len, out);
    if (rc == UNREAD_EPROTO)
        return pipe_fail(c, rc, false);
    return rc;
}

void unread_pipe_reset(struct unread *c)
{
    if (!c->piping)
        return;
    if (c->inflight > 0 || c->out_pos > 0) {
        conn_drop(c);
    } else {
        /* Nothing was sent: the queued frames and their ids vanish. */
        c->out.len = 0;
        c->queued = 0;
        c->next_id = c->expect_id;
    }
    c->fail_left = 0;
    c->piping = false;
}
