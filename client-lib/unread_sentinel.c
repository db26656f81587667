/*
 * unread_sentinel.c - asking redis-sentinel where a master is
 * (unread_sentinel.h). Sentinels speak RESP only: one short blocking
 * exchange per question on a connection of its own, closed after, as
 * Redis's sentinel client guidelines describe (ask each sentinel in turn,
 * the one that answered goes first next time).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "resp.h"
#include "unread_conn.h"
#include "unread_sentinel.h"
#include "unread_tls.h"

#define SENT_MAX_REPLY (1u << 20) /* a SENTINEL replicas answer, at most */

static int sent_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int sent_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void uc_sentinel_free(struct uc_sentinel *s)
{
    if (s == NULL)
        return;
    uc_addrs_free(s->sent, s->nsent);
    free(s->master);
    free(s);
}

int uc_sentinel_addrs(const char *names, const char *sentinels, bool replica,
                      struct uc_addr **out, size_t *n, char *err, size_t errlen)
{
    struct uc_addr *a = NULL;
    size_t k = 0, i, count = 1;
    const char *p = names, *end, *b, *e;

    for (b = names; *b != '\0'; b++)
        count += *b == ',';
    if (count > UC_MAX_SERVERS)
        return sent_err(err, errlen, "more than %u masters",
                        (unsigned)UC_MAX_SERVERS);
    a = calloc(count, sizeof(*a));
    if (a == NULL)
        return sent_err(err, errlen, "out of memory");
    for (;;) {
        struct uc_sentinel *s;

        end = strchr(p, ',');
        if (end == NULL)
            end = p + strlen(p);
        for (b = p; b < end && (*b == ' ' || *b == '\t'); b++)
            ;
        for (e = end; e > b && (e[-1] == ' ' || e[-1] == '\t'); e--)
            ;
        if (b == e) {
            sent_err(err, errlen, "empty master name in '%s'", names);
            goto error;
        }
        s = calloc(1, sizeof(*s));
        a[k].sentinel = s;
        if (s == NULL || (a[k].name = strndup(b, (size_t)(e - b))) == NULL ||
            (s->master = strdup(a[k].name)) == NULL) {
            k++;
            sent_err(err, errlen, "out of memory");
            goto error;
        }
        k++;
        s->replica = replica;
        if (uc_addrs_parse(sentinels, UC_SENTINEL_PORT, &s->sent, &s->nsent,
                           err, errlen) != 0)
            goto error;
        for (i = 0; i + 1 < k; i++) {
            if (strcmp(a[i].name, a[k - 1].name) == 0) {
                sent_err(err, errlen, "master %s listed twice", a[i].name);
                goto error;
            }
        }
        if (*end == '\0')
            break;
        p = end + 1;
    }
    *out = a;
    *n = k;
    return 0;

error:
    uc_addrs_free(a, k);
    return -1;
}

/* ---- One question to one sentinel ---------------------------------------- */

static int ms_until(int64_t at)
{
    int64_t left;

    if (at < 0)
        return -1;
    left = at - uc_now_ms();
    return left <= 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
}

static bool wait_fd(int fd, short events, int64_t at)
{
    struct pollfd p = {fd, events, 0};
    int rc;

    do {
        rc = poll(&p, 1, ms_until(at));
    } while (rc < 0 && errno == EINTR);
    return rc > 0;
}

/* A connected socket to sentinel a, or -1. */
static int sent_dial(const struct uc_addr *a, int64_t at)
{
    struct addrinfo hints, *res = NULL, *ai;
    char portstr[8];
    int fd = -1, soerr, one = 1;
    socklen_t sl;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%u", (unsigned)a->port);
    if (getaddrinfo(a->host, portstr, &hints, &res) != 0)
        return -1;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family,
                    ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        sl = sizeof(soerr);
        if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, at) &&
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
            soerr == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd >= 0)
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* A sentinel's connection: a socket, and its TLS stream when the handle
 * has TLS on (the sentinels then run with their tls-port). */
struct sent_io {
    int fd;
    void *ssl;
};

/* One send or receive on io: bytes moved, 0 at the end, -1 with errno
 * EAGAIN (*ev: the poll event to wait for) or another error. */
static ssize_t io_move(struct sent_io *io, bool out, void *buf, size_t n,
                       short *ev)
{
    char why[128];
    ssize_t r;
    int want = UC_TLS_READ;

    *ev = out ? POLLOUT : POLLIN;
    if (io->ssl == NULL)
        return out ? send(io->fd, buf, n, MSG_NOSIGNAL)
                   : recv(io->fd, buf, n, 0);
    r = out ? uc_tls_send(io->ssl, buf, n, &want, why, sizeof(why))
            : uc_tls_recv(io->ssl, buf, n, &want, why, sizeof(why));
    *ev = want == UC_TLS_WRITE ? POLLOUT : POLLIN;
    return r;
}

/* The TLS handshake on a dialled sentinel, within at: 0 or -1. */
static int sent_handshake(struct sent_io *io, struct uc_tls *tls,
                          const char *host, int64_t at)
{
    char why[128];
    int want = UC_TLS_READ, rc;

    io->ssl = uc_tls_stream(tls, io->fd, host, why, sizeof(why));
    if (io->ssl == NULL)
        return -1;
    while ((rc = uc_tls_handshake(io->ssl, &want, why, sizeof(why))) == 1)
        if (!wait_fd(io->fd, want == UC_TLS_WRITE ? POLLOUT : POLLIN, at))
            return -1;
    return rc;
}

/* Sends the request and reads one whole reply into in: 0 or -1. */
static int sent_ask(struct sent_io *io, uint32_t argc, const char *const *argv,
                    int64_t at, struct ur_buf *in)
{
    short ev;
    struct ur_buf req;
    size_t lens[4], off = 0, total, consumed;
    ssize_t n;
    char type;
    int64_t num;
    enum ur_parse st;

    for (uint32_t i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    ur_buf_init(&req);
    if (ur_resp_put_request(&req, argc, argv, lens) != 0) {
        ur_buf_deinit(&req);
        return -1;
    }
    total = req.len;
    while (off < total) {
        n = io_move(io, true, req.data + off, req.len - off, &ev);
        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!wait_fd(io->fd, ev, at))
                break;
        } else {
            break;
        }
    }
    ur_buf_deinit(&req);
    if (off < total)
        return -1;
    for (;;) {
        st = ur_resp_parse_reply(in->data, in->len, SENT_MAX_REPLY, &consumed,
                                 &type, &num);
        if (st == UR_PARSE_OK)
            return 0;
        if (st != UR_PARSE_NEED_MORE || in->len >= SENT_MAX_REPLY ||
            ur_buf_reserve(in, 4096) != 0)
            return -1;
        ev = POLLIN;
        do {
            /* Bytes OpenSSL already holds are not the socket's to poll. */
            if ((io->ssl == NULL || uc_tls_pending(io->ssl) == 0) &&
                !wait_fd(io->fd, ev, at))
                return -1;
            n = io_move(io, false, in->data + in->len, in->cap - in->len, &ev);
        } while (n < 0 && (errno == EAGAIN || errno == EINTR));
        if (n <= 0)
            return -1;
        in->len += (size_t)n;
    }
}

/* ---- Walking a reply -------------------------------------------------------
 */

/* One element at *pos: its type and number (ur_resp_parse_reply), a bulk's
 * bytes in *s; *pos moves past the whole element, or only past an
 * aggregate's header when enter is set. false when the bytes end. */
static bool elem(const struct ur_buf *in, size_t *pos, bool enter, char *type,
                 int64_t *num, const char **s)
{
    size_t consumed;
    const char *p = in->data + *pos, *nl;

    if (ur_resp_parse_reply(p, in->len - *pos, SENT_MAX_REPLY, &consumed, type,
                            num) != UR_PARSE_OK)
        return false;
    nl = memchr(p, '\n', consumed);
    *s = nl + 1;
    if (enter && (*type == '*' || *type == '%'))
        *pos += (size_t)(nl + 1 - p);
    else
        *pos += consumed;
    return true;
}

static bool bulk_is(char type, int64_t num, const char *s, const char *want)
{
    return type == '$' && (size_t)num == strlen(want) &&
           memcmp(s, want, (size_t)num) == 0;
}

/* Copies a bulk address and a port (bulk or integer) into s: 0 or -1. */
static int take_addr(struct uc_sentinel *s, const char *host, size_t hlen,
                     const char *port, size_t plen)
{
    char num[8];
    char *end;
    unsigned long v;

    if (hlen == 0 || hlen >= sizeof(s->host) || plen == 0 ||
        plen >= sizeof(num))
        return -1;
    memcpy(num, port, plen);
    num[plen] = '\0';
    v = strtoul(num, &end, 10);
    if (*end != '\0' || v == 0 || v > 65535)
        return -1;
    memcpy(s->host, host, hlen);
    s->host[hlen] = '\0';
    s->port = (uint16_t)v;
    return 0;
}

/* [ip, port] of get-master-addr-by-name: 0, 1 when the name is unknown
 * (nil), -1 when the reply is not one. */
static int read_master(struct uc_sentinel *s, const struct ur_buf *in)
{
    size_t pos = 0;
    char t1, t2, t;
    int64_t n1, n2, n;
    const char *h, *p, *x;

    if (!elem(in, &pos, true, &t, &n, &x))
        return -1;
    if ((t == '*' && n < 0) || t == '_' || (t == '$' && n < 0))
        return 1;
    if (t != '*' || n != 2 || !elem(in, &pos, false, &t1, &n1, &h) ||
        !elem(in, &pos, false, &t2, &n2, &p) || t1 != '$' || t2 != '$')
        return -1;
    return take_addr(s, h, (size_t)n1, p, (size_t)n2);
}

/*
 * SENTINEL replicas: an array of flat [key, value, ...] arrays (maps on
 * RESP3). Healthy ones have flags without s_down, o_down or disconnected
 * and master-link-status ok. With pick < 0 counts them into *count; else
 * takes the pick-th into s. 0, 1 when there is no such one, -1 when the
 * reply is not one.
 */
static int scan_replicas(struct uc_sentinel *s, const struct ur_buf *in,
                         int64_t pick, size_t *count)
{
    size_t pos = 0, healthy = 0;
    char t;
    int64_t n, m;
    const char *x;

    if (!elem(in, &pos, true, &t, &n, &x) || t != '*' || n < 0)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        const char *ip = NULL, *port = NULL, *k, *v;
        size_t iplen = 0, portlen = 0;
        bool good = true;
        char tk, tv;
        int64_t nk, nv;

        if (!elem(in, &pos, true, &t, &m, &x) || (t != '*' && t != '%'))
            return -1;
        if (t == '*')
            m /= 2;
        for (int64_t j = 0; j < m; j++) {
            if (!elem(in, &pos, false, &tk, &nk, &k) ||
                !elem(in, &pos, false, &tv, &nv, &v))
                return -1;
            if (tv != '$')
                continue;
            if (bulk_is(tk, nk, k, "ip")) {
                ip = v;
                iplen = (size_t)nv;
            } else if (bulk_is(tk, nk, k, "port")) {
                port = v;
                portlen = (size_t)nv;
            } else if (bulk_is(tk, nk, k, "flags")) {
                char flags[256];
                size_t fl = (size_t)nv < sizeof(flags) - 1 ? (size_t)nv
                                                           : sizeof(flags) - 1;
                memcpy(flags, v, fl);
                flags[fl] = '\0';
                if (strstr(flags, "s_down") || strstr(flags, "o_down") ||
                    strstr(flags, "disconnected"))
                    good = false;
            } else if (bulk_is(tk, nk, k, "master-link-status") &&
                       !bulk_is(tv, nv, v, "ok")) {
                good = false;
            }
        }
        if (!good || ip == NULL || port == NULL)
            continue;
        if (pick >= 0 && (int64_t)healthy == pick)
            return take_addr(s, ip, iplen, port, portlen);
        healthy++;
    }
    if (count != NULL)
        *count = healthy;
    return pick < 0 && healthy > 0 ? 0 : 1;
}

/* A healthy replica, a different one each time (round robin). */
static int read_replica(struct uc_sentinel *s, const struct ur_buf *in)
{
    size_t healthy = 0;
    int rc = scan_replicas(s, in, -1, &healthy);

    if (rc != 0)
        return rc;
    rc = scan_replicas(s, in, (int64_t)(s->turn % healthy), NULL);
    s->turn++;
    return rc;
}

int uc_sentinel_resolve(struct uc_sentinel *s, struct uc_tls *tls,
                        int timeout_ms, char *err, size_t errlen)
{
    struct ur_buf in;
    size_t i, idx;
    int rc = -1;
    bool unknown = false;

    ur_buf_init(&in);
    for (i = 0; i < s->nsent && rc != 0; i++) {
        const struct uc_addr *a;
        int64_t at = timeout_ms > 0 ? uc_now_ms() + timeout_ms : -1;
        struct sent_io io = {-1, NULL};

        idx = (s->first + i) % s->nsent;
        a = &s->sent[idx];
        io.fd = sent_dial(a, at);
        if (io.fd < 0)
            continue;
        if (tls != NULL && sent_handshake(&io, tls, a->host, at) != 0) {
            uc_tls_close(io.ssl, true);
            close(io.fd);
            continue;
        }
        if (s->replica) {
            const char *argv[] = {"SENTINEL", "replicas", s->master};
            in.len = 0;
            if (sent_ask(&io, 3, argv, at, &in) == 0)
                rc = read_replica(s, &in);
        }
        if (rc != 0) { /* the master, or no healthy replica: the master */
            const char *argv[] = {"SENTINEL", "get-master-addr-by-name",
                                  s->master};
            in.len = 0;
            rc =
                sent_ask(&io, 3, argv, at, &in) == 0 ? read_master(s, &in) : -1;
        }
        uc_tls_close(io.ssl, false);
        close(io.fd);
        if (rc == 1)
            unknown = true;
        if (rc == 0)
            s->first = idx;
    }
    ur_buf_deinit(&in);
    if (rc == 0) {
        s->stale = false;
        return 0;
    }
    if (unknown)
        return sent_err(err, errlen, "sentinel: no master named '%s'",
                        s->master);
    return sent_err(err, errlen,
                    "sentinel: none of %zu sentinels told where '%s' is",
                    s->nsent, s->master);
}
