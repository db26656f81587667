/*
 * net.c - see net.h.
 *
 * Reading: a connection with no partial request reads into one shared
 * buffer and is parsed in place; only the tail of an incomplete request is
 * copied into the connection's own buffer. An idle connection therefore
 * holds no input memory.
 *
 * Writing: replies are appended to the connection's output buffer and the
 * connection is queued; a "flush" event, activated at the end of the
 * active-event queue, writes every queued connection once per loop turn,
 * after all of that turn's requests ran (Redis's beforeSleep).
 *
 * Durability: the flush first writes the turn's journal records (and
 * fdatasyncs them with journal-fsync always: one sync for the whole turn,
 * a group commit). A connection whose output acknowledges writes whose
 * records are not durable yet (the journal write failed) is held in the
 * flush list, its output unsent, and retried every RETRY_MS: no reply
 * ever claims a write the journal does not hold.
 */
#include "net.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "exec.h"
#include "frame.h"
#include "log.h"
#include "persist.h"
#include "reply.h"
#include "resp.h"

#define READ_CHUNK (64u << 10)
/* Output buffers larger than this are released once written. */
#define OUT_KEEP (64u << 10)
/* Held replies are retried this often while the journal cannot be written. */
#define RETRY_MS 100

enum conn_proto { PROTO_UNKNOWN = 0, PROTO_TEXT = 1, PROTO_BIN = 2 };

struct conn {
    int fd;
    uint8_t proto;    /* enum conn_proto, fixed by the first byte */
    bool close_after; /* stop reading; close once output is written */
    bool pending;     /* in the flush list */
    bool dead;        /* closed while pending: freed by the flush */
    bool want_write;  /* write event armed */
    struct event *rev;
    struct event *wev;
    struct ur_buf in; /* only the unparsed tail of a partial request */
    size_t need;      /* don't parse again before in.len reaches this */
    struct ur_buf out;
    size_t out_sent; /* bytes of out already written */
    uint64_t jseq;   /* out acknowledges journal records up to this one */
    struct session sess;
    struct conn *next_pending;
    struct conn *prev, *next; /* all connections */
};

static struct server *srv;
static struct event_base *base;
static struct evconnlistener *listener;
static struct event *flush_ev;
static struct event *retry_ev; /* re-runs the flush while replies are held */
static struct conn *pending;
static struct conn *conns;
static struct ur_arg *args; /* scratch: max_args + 1 parsed arguments */
static char rbuf[READ_CHUNK];

static void conn_free(struct conn *c)
{
    event_free(c->rev);
    event_free(c->wev);
    ur_buf_deinit(&c->in);
    ur_buf_deinit(&c->out);
    free(c);
}

static void conn_close(struct conn *c)
{
    if (c->fd < 0)
        return;
    event_del(c->rev);
    event_del(c->wev);
    close(c->fd);
    c->fd = -1;

    srv->clients--;
    if (c->proto == PROTO_TEXT)
        srv->text_clients--;
    else if (c->proto == PROTO_BIN)
        srv->bin_clients--;
    if (c->prev)
        c->prev->next = c->next;
    else
        conns = c->next;
    if (c->next)
        c->next->prev = c->prev;

    if (c->pending)
        c->dead = true; /* still linked from the flush list */
    else
        conn_free(c);
}

static void queue_flush(struct conn *c)
{
    if (!c->pending) {
        c->pending = true;
        c->next_pending = pending;
        pending = c;
    }
    event_active(flush_ev, EV_WRITE, 0);
}

/* Writes what it can; arms the write event when the socket is full. */
static void conn_write(struct conn *c)
{
    while (c->out_sent < c->out.len) {
        ssize_t n =
            write(c->fd, c->out.data + c->out_sent, c->out.len - c->out_sent);
        if (n > 0) {
            c->out_sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->want_write) {
                event_add(c->wev, NULL);
                c->want_write = true;
            }
            return;
        }
        log_debug("client %llu: write: %s", (unsigned long long)c->sess.id,
                  strerror(errno));
        conn_close(c);
        return;
    }
    c->out.len = 0;
    c->out_sent = 0;
    if (c->out.cap > OUT_KEEP)
        ur_buf_deinit(&c->out);
    if (c->want_write) {
        event_del(c->wev);
        c->want_write = false;
    }
    if (c->close_after)
        conn_close(c);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    struct conn *c = pending, *held = NULL;
    pending = NULL;
    persist_flush(srv->persist);
    uint64_t durable = persist_durable(srv->persist);
    while (c != NULL) {
        struct conn *next = c->next_pending;
        if (!c->dead && c->jseq > durable) {
            c->next_pending = held; /* stays pending: sent by a retry */
            held = c;
        } else {
            c->pending = false;
            if (c->dead)
                conn_free(c);
            else
                conn_write(c);
        }
        c = next;
    }
    while (held != NULL) {
        struct conn *next = held->next_pending;
        held->next_pending = pending;
        pending = held;
        held = next;
    }
    if (pending != NULL) {
        const struct timeval retry = {0, RETRY_MS * 1000};
        evtimer_add(retry_ev, &retry);
    }
    if (srv->shutdown_asap)
        event_base_loopbreak(base);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    event_active(flush_ev, EV_WRITE, 0);
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    conn_write(arg);
}

/* Framing is lost: answer one error, stop reading, close after writing. */
static void proto_error(struct conn *c, enum ur_parse st, uint32_t id)
{
    const struct ur_limits lim = {srv->cfg.max_frame, srv->cfg.max_args,
                                  srv->cfg.max_inline};
    struct reply r;
    srv->stats.proto_errors++;
    reply_begin(&r, &c->out, c->proto == PROTO_BIN ? REPLY_BIN : REPLY_RESP,
                id);
    if (st == UR_PARSE_TOO_BIG)
        reply_err(&r, UR_E_TOOBIG,
                  "protocol error: request over a limit (max-frame %u, "
                  "max-args %u, max-inline %u); closing",
                  lim.max_frame, lim.max_args, lim.max_inline);
    else if (c->proto == PROTO_BIN)
        reply_err(&r, UR_E_PROTO,
                  "protocol error: malformed binary frame; closing");
    else
        reply_err(&r, UR_E_PROTO,
                  "protocol error: malformed multibulk request; closing");
    reply_end(&r);
    c->close_after = true;
    event_del(c->rev);
    log_debug("client %llu: protocol error (%s), closing",
              (unsigned long long)c->sess.id, ur_parse_name(st));
}

/*
 * Parses and executes every complete request in data[0..len); returns the
 * bytes consumed. Replies go to c->out in request order.
 */
static size_t process(struct conn *c, const char *data, size_t len)
{
    const struct ur_limits lim = {srv->cfg.max_frame, srv->cfg.max_args,
                                  srv->cfg.max_inline};
    const uint64_t jseq = persist_appended(srv->persist);
    size_t off = 0;

    if (c->proto == PROTO_UNKNOWN && len > 0) {
        if ((unsigned char)data[0] == UR_FRAME_MAGIC) {
            c->proto = PROTO_BIN;
            srv->bin_clients++;
        } else {
            c->proto = PROTO_TEXT;
            srv->text_clients++;
        }
        c->sess.proto = c->proto == PROTO_BIN ? REPLY_BIN : REPLY_RESP;
    }

    while (off < len && !c->close_after) {
        size_t used = 0, hint = 0;
        enum ur_parse st;
        struct reply r = {0};

        if (c->proto == PROTO_BIN) {
            struct ur_frame_req req = {0};
            st = ur_frame_parse_request(data + off, len - off, &lim, args, &req,
                                        &used, &hint);
            if (st == UR_PARSE_OK) {
                reply_begin(&r, &c->out, REPLY_BIN, req.id);
                exec_binary(srv, &c->sess, req.op, req.argc, req.argv, &r);
                reply_end(&r);
            } else if (st != UR_PARSE_NEED_MORE) {
                proto_error(c, st, req.id);
            }
        } else {
            uint32_t argc = 0;
            st = ur_resp_parse_request(data + off, len - off, &lim, args, &argc,
                                       &used, &hint);
            if (st == UR_PARSE_OK && argc > 0) {
                reply_begin(&r, &c->out, REPLY_RESP, 0);
                exec_text(srv, &c->sess, argc, args, &r);
                reply_end(&r);
            } else if (st != UR_PARSE_OK && st != UR_PARSE_NEED_MORE) {
                proto_error(c, st, 0);
            }
        }

        if (st == UR_PARSE_NEED_MORE) {
            c->need = hint;
            break;
        }
        if (st != UR_PARSE_OK)
            break;
        if (r.close_after && !c->close_after) {
            c->close_after = true;
            event_del(c->rev);
        }
        off += used;
    }
    if (persist_appended(srv->persist) != jseq)
        c->jseq = persist_appended(srv->persist);
    return off;
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct conn *c = arg;
    ssize_t n;

    if (c->in.len == 0) {
        n = read(fd, rbuf, sizeof(rbuf));
    } else {
        size_t want = READ_CHUNK;
        if (c->need > c->in.len && c->need - c->in.len > want)
            want = c->need - c->in.len;
        if (ur_buf_reserve(&c->in, want) != 0) {
            log_warn("client %llu: out of memory for input, closing",
                     (unsigned long long)c->sess.id);
            conn_close(c);
            return;
        }
        n = read(fd, c->in.data + c->in.len, c->in.cap - c->in.len);
    }

    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return;
        log_debug("client %llu: read: %s", (unsigned long long)c->sess.id,
                  strerror(errno));
        conn_close(c);
        return;
    }
    if (n == 0) {
        /* Peer finished sending: answer what it sent, then close. */
        c->close_after = true;
        event_del(c->rev);
        queue_flush(c);
        return;
    }

    if (c->in.len == 0) {
        size_t used = process(c, rbuf, (size_t)n);
        if (used < (size_t)n && !c->close_after &&
            ur_buf_append(&c->in, rbuf + used, (size_t)n - used) != 0) {
            conn_close(c);
            return;
        }
    } else {
        c->in.len += (size_t)n;
        if (c->in.len >= c->need) {
            size_t used = process(c, c->in.data, c->in.len);
            ur_buf_consume(&c->in, used);
        }
        if (c->in.len == 0)
            ur_buf_deinit(&c->in);
    }
    if (c->close_after && c->in.len)
        ur_buf_deinit(&c->in);
    queue_flush(c);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *addr, int socklen, void *arg)
{
    (void)l, (void)addr, (void)socklen, (void)arg;
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        close(fd);
        return;
    }
    evutil_make_socket_nonblocking(fd);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

    c->fd = fd;
    c->sess.id = ++srv->next_client_id;
    c->rev = event_new(base, fd, EV_READ | EV_PERSIST, on_read, c);
    c->wev = event_new(base, fd, EV_WRITE | EV_PERSIST, on_writable, c);
    if (c->rev == NULL || c->wev == NULL || event_add(c->rev, NULL) != 0) {
        if (c->rev)
            event_free(c->rev);
        if (c->wev)
            event_free(c->wev);
        free(c);
        close(fd);
        return;
    }
    c->next = conns;
    if (conns)
        conns->prev = c;
    conns = c;
    srv->clients++;
    srv->stats.connections++;
}

static void on_accept_error(struct evconnlistener *l, void *arg)
{
    (void)l, (void)arg;
    log_warn("accept: %s", strerror(errno));
}

int net_setup(struct server *s, struct event_base *b, char *err, size_t errlen)
{
    srv = s;
    base = b;

    args = calloc((size_t)srv->cfg.max_args + 1, sizeof(*args));
    flush_ev = event_new(base, -1, 0, on_flush, NULL);
    retry_ev = evtimer_new(base, on_retry, NULL);
    if (args == NULL || flush_ev == NULL || retry_ev == NULL) {
        snprintf(err, errlen, "out of memory");
        goto error;
    }

    struct evutil_addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = EVUTIL_AI_PASSIVE | EVUTIL_AI_NUMERICHOST;
    char port[8];
    snprintf(port, sizeof(port), "%u", srv->cfg.port);
    int rc = evutil_getaddrinfo(srv->cfg.bind, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "bind %s: %s", srv->cfg.bind,
                 evutil_gai_strerror(rc));
        goto error;
    }
    listener = evconnlistener_new_bind(
        base, on_accept, NULL,
        LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 511,
        ai->ai_addr, (int)ai->ai_addrlen);
    evutil_freeaddrinfo(ai);
    if (listener == NULL) {
        snprintf(err, errlen, "listen on %s:%u: %s", srv->cfg.bind,
                 srv->cfg.port, strerror(errno));
        goto error;
    }
    evconnlistener_set_error_cb(listener, on_accept_error);
    return 0;

error:
    if (flush_ev)
        event_free(flush_ev);
    flush_ev = NULL;
    if (retry_ev)
        event_free(retry_ev);
    retry_ev = NULL;
    free(args);
    args = NULL;
    return -1;
}

void net_teardown(void)
{
    if (listener)
        evconnlistener_free(listener);
    listener = NULL;
    while (conns != NULL)
        conn_close(conns);
    on_flush(-1, 0, NULL); /* frees connections closed while pending */
    if (flush_ev)
        event_free(flush_ev);
    flush_ev = NULL;
    if (retry_ev)
        event_free(retry_ev);
    retry_ev = NULL;
    free(args);
    args = NULL;
}
