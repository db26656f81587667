/*
 * bench_wire.c - see bench_wire.h.
 *
 * RESP requests are built by turning each argument into its bytes in a
 * stack scratch area and handing the slices to ur_resp_put_request, so the
 * text target pays exactly the codec the tests and server use; binary
 * requests go straight through ur_frame_put_arg_*.
 */
#include "bench_wire.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"
#include "ops.h"
#include "resp.h"
#include "bench_tls.h"

#define KEY_PREFIX_MAX 16
/* Longest argument produced from a number: a key prefix and 20 digits. */
#define ARG_TEXT_MAX (KEY_PREFIX_MAX + 21)

static struct bench_arg *arg_next(struct bench_cmd *c)
{
    if (c->argc == BENCH_MAX_ARGS) {
        fprintf(stderr, "unread-bench: workload built more than %d arguments\n",
                BENCH_MAX_ARGS);
        abort();
    }
    return &c->argv[c->argc++];
}

void bench_cmd_unreadd(struct bench_cmd *c, uint16_t op, uint8_t expect)
{
    c->op = op;
    c->name = NULL;
    c->expect = expect;
    c->argc = 0;
}

void bench_cmd_redis(struct bench_cmd *c, const char *name, uint8_t expect)
{
    c->op = 0;
    c->name = name;
    c->expect = expect;
    c->argc = 0;
}

void bench_cmd_fcall(struct bench_cmd *c, const char *function, unsigned nkeys,
                     uint8_t expect)
{
    bench_cmd_redis(c, "FCALL", expect);
    bench_arg_str(c, function);
    bench_arg_int(c, nkeys);
}

void bench_arg_int(struct bench_cmd *c, uint64_t v)
{
    struct bench_arg *a = arg_next(c);

    a->kind = BARG_INT;
    a->num = v;
}

void bench_arg_str(struct bench_cmd *c, const char *s)
{
    struct bench_arg *a = arg_next(c);

    a->kind = BARG_STR;
    a->str = s;
    a->len = (uint32_t)strlen(s);
}

void bench_arg_key(struct bench_cmd *c, const char *prefix, uint64_t id)
{
    struct bench_arg *a = arg_next(c);

    a->kind = BARG_KEY;
    a->str = prefix;
    a->len = (uint32_t)strlen(prefix);
    a->num = id;
    if (a->len > KEY_PREFIX_MAX) {
        fprintf(stderr, "unread-bench: key prefix '%s' over %d bytes\n", prefix,
                KEY_PREFIX_MAX);
        abort();
    }
}

enum bench_dialect bench_dialect_of(enum bench_target t)
{
    return t == BENCH_REDIS ? BENCH_REDIS_CMDS : BENCH_UNREADD;
}

static const char *const target_names[] = {"binary", "text", "redis"};

const char *bench_target_name(enum bench_target t)
{
    return target_names[t];
}

int bench_target_parse(const char *s, enum bench_target *t)
{
    for (unsigned i = 0; i < 3; i++) {
        if (strcmp(s, target_names[i]) == 0) {
            *t = (enum bench_target)i;
            return 0;
        }
    }
    return -1;
}

/* The bytes of argument a: its own for a string, else written to tmp. */
static const char *arg_bytes(const struct bench_arg *a, char *tmp, size_t *n)
{
    switch (a->kind) {
    case BARG_INT:
        *n = ur_fmt_u64(tmp, a->num);
        return tmp;
    case BARG_KEY:
        memcpy(tmp, a->str, a->len);
        *n = a->len + ur_fmt_u64(tmp + a->len, a->num);
        return tmp;
    default:
        *n = a->len;
        return a->str;
    }
}

static int encode_resp(struct ur_buf *b, const char *name,
                       const struct bench_cmd *c)
{
    const char *argv[BENCH_MAX_ARGS + 1];
    size_t lens[BENCH_MAX_ARGS + 1];
    char tmp[BENCH_MAX_ARGS][ARG_TEXT_MAX];

    argv[0] = name;
    lens[0] = strlen(name);
    for (unsigned i = 0; i < c->argc; i++)
        argv[i + 1] = arg_bytes(&c->argv[i], tmp[i], &lens[i + 1]);
    return ur_resp_put_request(b, c->argc + 1u, argv, lens);
}

static int encode_binary(struct ur_buf *b, const struct bench_cmd *c,
                         uint32_t id)
{
    char tmp[ARG_TEXT_MAX];
    size_t off, old = b->len;

    if (ur_frame_req_begin(b, c->op, id, &off) != 0)
        return -1;
    for (unsigned i = 0; i < c->argc; i++) {
        const struct bench_arg *a = &c->argv[i];
        const char *s;
        size_t n;
        int rc;

        if (a->kind == BARG_INT) {
            rc = ur_frame_put_arg_int(b, a->num);
        } else {
            s = arg_bytes(a, tmp, &n);
            rc = ur_frame_put_arg_str(b, s, n);
        }
        if (rc != 0) {
            b->len = old;
            return -1;
        }
    }
    ur_frame_req_end(b, off, c->argc);
    return 0;
}

int bench_encode(struct ur_buf *b, enum bench_target t,
                 const struct bench_cmd *c, uint32_t id)
{
    const struct ur_op *op;

    if (t == BENCH_REDIS)
        return c->name != NULL ? encode_resp(b, c->name, c) : -1;
    op = ur_op_by_code(c->op);
    if (op == NULL)
        return -1;
    if (t == BENCH_BINARY)
        return encode_binary(b, c, id);
    return encode_resp(b, op->name, c);
}

static enum ur_parse parse_binary(const char *buf, size_t len,
                                  struct bench_reply *r)
{
    struct ur_frame_hdr h;
    struct ur_val_reader rd;
    struct ur_val v;
    size_t hint;
    enum ur_parse st;

    st = ur_frame_parse_reply(buf, len, UR_MAX_FRAME_CEILING, &h, &r->consumed,
                              &hint);
    if (st != UR_PARSE_OK)
        return st;
    ur_val_reader_init(&rd, buf + UR_FRAME_HDR, h.len);
    if (!ur_val_next(&rd, &v))
        return UR_PARSE_INVALID; /* cannot happen after OK */
    r->id = h.id;
    r->kind = v.kind;
    r->text = v.str;
    r->text_len = v.len;
    return UR_PARSE_OK;
}

static enum ur_parse parse_resp(const char *buf, size_t len,
                                struct bench_reply *r)
{
    enum ur_parse st;
    int64_t num;
    char type;

    st = ur_resp_parse_reply(buf, len, UR_MAX_FRAME_CEILING, &r->consumed,
                             &type, &num);
    if (st != UR_PARSE_OK)
        return st;
    r->id = 0;
    r->text = NULL;
    r->text_len = 0;
    switch (type) {
    case ':':
        r->kind = UR_VAL_INT;
        break;
    case '$':
        r->kind = num < 0 ? UR_VAL_NIL : UR_VAL_STR;
        if (num >= 0) { /* the payload, after "$<len>\r\n" */
            r->text = (const char *)memchr(buf, '\n', r->consumed) + 1;
            r->text_len = (size_t)num;
        }
        break;
    case '*':
        r->kind = num < 0 ? UR_VAL_NIL : UR_VAL_ARR;
        break;
    default: /* '+' or '-': the line without its type byte and CRLF */
        r->kind = type == '+' ? UR_VAL_STATUS : UR_VAL_ERR;
        r->text = buf + 1;
        r->text_len = r->consumed - 3;
        break;
    }
    return UR_PARSE_OK;
}

enum ur_parse bench_parse_reply(enum bench_target t, const char *buf,
                                size_t len, struct bench_reply *r)
{
    if (t == BENCH_BINARY)
        return parse_binary(buf, len, r);
    return parse_resp(buf, len, r);
}

static int wait_fd(int fd, short events, int timeout_ms)
{
    struct pollfd p = {fd, events, 0};
    int n;

    do {
        n = poll(&p, 1, timeout_ms);
    } while (n < 0 && errno == EINTR);
    return n > 0 ? 0 : -1;
}

/* Reads until one whole reply is in b; 0 with *r filled, or -1. */
static int read_reply(int fd, SSL *ssl, enum bench_target t, struct ur_buf *b,
                      int timeout_ms, struct bench_reply *r, char *err,
                      size_t errlen)
{
    for (;;) {
        enum ur_parse st = bench_parse_reply(t, b->data, b->len, r);
        ssize_t n;

        if (st == UR_PARSE_OK)
            return 0;
        if (st != UR_PARSE_NEED_MORE) {
            snprintf(err, errlen, "malformed reply (%s)", ur_parse_name(st));
            return -1;
        }
        if (ur_buf_reserve(b, 4096) != 0 ||
            (bench_tls_pending(ssl) == 0 && wait_fd(fd, POLLIN, timeout_ms))) {
            snprintf(err, errlen, "no reply within %d ms", timeout_ms);
            return -1;
        }
        n = bench_tls_read(fd, ssl, b->data + b->len, b->cap - b->len);
        if (n < 0 && errno == EAGAIN)
            continue; /* a TLS record not whole yet */
        if (n <= 0) {
            snprintf(err, errlen, "connection closed while reading a reply");
            return -1;
        }
        b->len += (size_t)n;
    }
}

int bench_call(int fd, SSL *ssl, enum bench_target t, const struct bench_cmd *c,
               int timeout_ms, char *out, size_t outlen, char *err,
               size_t errlen)
{
    struct ur_buf b;
    struct bench_reply r;
    size_t sent = 0, n;
    int rc = -1;

    ur_buf_init(&b);
    if (bench_encode(&b, t, c, 1) != 0) {
        snprintf(err, errlen, "cannot encode the request");
        goto out;
    }
    while (sent < b.len) {
        ssize_t w = bench_tls_write(fd, ssl, b.data + sent, b.len - sent);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, errlen, "write: %s", strerror(errno));
            goto out;
        }
        sent += (size_t)w;
    }
    b.len = 0;
    if (read_reply(fd, ssl, t, &b, timeout_ms, &r, err, errlen) != 0)
        goto out;
    if (r.kind == UR_VAL_ERR) {
        snprintf(err, errlen, "%.*s", (int)r.text_len, r.text);
        goto out;
    }
    n = r.text_len < outlen ? r.text_len : outlen - 1;
    if (n > 0)
        memcpy(out, r.text, n);
    out[n] = '\0';
    rc = 0;
out:
    ur_buf_deinit(&b);
    return rc;
}

int bench_dial(const char *host, uint16_t port, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL, *ai;
    char service[8];
    int fd = -1, one = 1, rc, saved = 0;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(service, sizeof(service), "%u", port);
    rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", host, gai_strerror(rc));
        return -1;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "connect to %s:%u: %s", host, port,
                 strerror(saved));
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}
