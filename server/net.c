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
 * a group commit). Holding replies is a property of the output buffer,
 * not of the path that writes it: a reply that acknowledges journal
 * records sets a hold mark (c->hold_from, c->hold_seq), and conn_write,
 * whoever calls it (the flush, the write event of a congested socket, a
 * resume), sends nothing from hold_from on until record hold_seq is
 * durable. While the journal cannot be written such a connection waits
 * in the flush list, retried every RETRY_MS, its write event disarmed: no
 * reply ever claims a write the journal does not hold.
 *
 * Limits (docs/OPERATIONS.md "Security"): while a connection's unsent
 * replies reach OUT_PAUSE its input is neither read nor run, so a client
 * that pipelines without reading makes the server neither work nor
 * buffer without bound; past client-output-limit it is closed at once
 * (a subscriber also past pubsub-output-limit, or above
 * pubsub-output-soft-limit for pubsub-output-soft-seconds: out_over),
 * and when the socket takes nothing for client-output-timeout seconds, or
 * nothing arrives for `timeout` seconds, too. Both timers are libevent
 * event timeouts on one common-timeout queue each: O(1) to re-arm on
 * every read or write, O(1) per connection closed. A connection holding
 * an unfinished request has instead a deadline, `timeout` seconds after
 * the request's first byte, that further bytes do not push back: a client
 * trickling a request a byte at a time is closed like an idle one.
 * maxclients refuses connections past it with a text error (the protocol
 * is not known yet). Before AUTH, requests are held to PREAUTH_* sizes;
 * after a failed AUTH the connection is not read for a delay that grows
 * with its failures (and with the server's, under a storm of them), so
 * guessing is slow. The input buffers of unfinished requests count
 * against client-input-limit, all connections together (srv->
 * client_in_bytes); the connection that would pass it is closed.
 *
 * Pushes (clients.h client_io: MONITOR lines, pub/sub messages) are
 * appended to the receiver's output like replies. One for the connection
 * whose request is running waits in c->defer until that request's reply
 * is complete. A receiver over its limits is not closed while the pusher
 * walks its subscribers: it is marked (c->doomed), stops reading, drops
 * further pushes, and the flush closes it.
 *
 * The end of a turn (on_flush): the journal's records are written (and
 * synced), the replies are written, then the badge channels' messages of
 * the turn are published (badges.h) and written: a badge never leaves
 * before the reply of the write it reports, nor before that write is
 * durable.
 *
 * Descriptors: when accept fails for want of one (EMFILE, ENFILE), the
 * listener rests ACCEPT_REST_MS instead of spinning, and says so at most
 * once a second (metrics.c does the same for its port).
 */
#include "net.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "batch.h"
#include "cluster.h"
#include "exec.h"
#include "frame.h"
#include "log.h"
#include "persist.h"
#include "repl.h"
#include "reply.h"
#include "resp.h"
#include "tls.h"
#include "transport.h"

#define READ_CHUNK (64u << 10)
/* Output buffers larger than this are released once written. */
#define OUT_KEEP (64u << 10)
/* Held replies are retried this often while the journal cannot be written. */
#define RETRY_MS 100
/* Unsent reply bytes at which a connection's input waits (see above). */
#define OUT_PAUSE (256u << 10)
/* Before AUTH, as Redis limits unauthenticated clients: frame body, bulks
 * together or inline line, and arguments. Past them: error and close. */
#define PREAUTH_FRAME 1024u
#define PREAUTH_ARGS 8u
/* Descriptors kept beside maxclients' (listener, journal, snapshot,
 * metrics, log, event loop). */
#define FD_RESERVE 32
/* The listener rests this long after an accept failed (EMFILE, ...), so
 * a descriptor shortage is not a busy loop. */
#define ACCEPT_REST_MS 100
/* After a connection's nth failed AUTH its input waits AUTH_DELAY_MS <<
 * (n - 1), at most AUTH_DELAY_MAX_MS; while the server sees more than
 * AUTH_STORM failures a second, at least AUTH_STORM_DELAY_MS. */
#define AUTH_DELAY_MS 100u
#define AUTH_DELAY_MAX_MS 5000u
#define AUTH_STORM 100u
#define AUTH_STORM_DELAY_MS 1000u

enum conn_proto { PROTO_UNKNOWN = 0, PROTO_TEXT = 1, PROTO_BIN = 2 };

struct conn {
    struct tr_conn tr; /* the socket and its transport (transport.h) */

    uint8_t proto;    /* enum conn_proto, fixed by the first byte */
    bool close_after; /* stop reading; close once output is written */
    bool pending;     /* in the flush list */
    bool dead;        /* closed while pending: freed by the flush */
    bool want_write;  /* write event armed */
    bool paused;      /* input waits: OUT_PAUSE unsent reply bytes */
    bool delayed;     /* input waits: a failed AUTH (tev) */
    bool overflow;    /* over client-output-limit: to be closed */
    bool deadline;    /* rev's timeout is the request deadline */
    struct event *rev;
    struct event *wev;
    struct event *tev;     /* the AUTH delay; created at the first failure */
    struct ur_buf in;      /* only the unparsed tail of a partial request */
    size_t need;           /* don't parse again before in.len reaches this */
    size_t in_counted;     /* in.cap as counted in srv->client_in_bytes */
    uint64_t req_start_ms; /* monotonic ms of the first byte of the
                              unfinished request in `in`; 0: none */
    struct ur_buf out;
    size_t out_sent; /* bytes of out already written */
    /* The hold mark: out[hold_from..] may leave only once journal record
     * hold_seq is durable (persist_durable); hold_seq 0: nothing held.
     * One mark is enough: later replies wait behind earlier ones anyway,
     * so a new record raises hold_seq and keeps the earliest hold_from. */
    size_t hold_from;
    uint64_t hold_seq;
    struct session sess;
    struct client cl;       /* the registry's view (clients.h) */
    size_t push_mark;       /* out.len (defer.len) when a push began */
    struct ur_buf defer;    /* pushes made while its request runs */
    bool doomed;            /* over its output limits: the flush closes it */
    uint64_t soft_since_ms; /* above pubsub-output-soft-limit since; 0 not */
    bool running;           /* its requests are being run (process) */
    bool pause_wait;        /* input waits for CLIENT PAUSE to end */
    bool read_on_write;     /* a TLS read waits for the socket to take bytes */
    bool blocked;           /* input waits: a WAIT's reply is not written */
    bool resume;            /* the WAIT ended: the flush runs what waited */
    uint8_t block_proto;    /* ... the reply's protocol and request id */
    uint32_t block_id;
    struct conn *next_pending;
    struct conn *prev, *next; /* all connections */
};

static struct server *srv;
static struct event_base *base;
static struct evconnlistener *listener;     /* port; NULL with port 0 */
static struct evconnlistener *tls_listener; /* tls-port; NULL: none */
static struct event *flush_ev;
static struct event *retry_ev;  /* re-runs the flush while replies are held */
static struct event *accept_ev; /* re-enables the listener after a rest */
static const struct timeval *idle_tv; /* `timeout`, or NULL when 0 */
static const struct timeval *out_tv;  /* client-output-timeout, or NULL */
static struct conn *pending;
static struct conn *conns;
static struct event *pause_ev; /* CLIENT PAUSE's end */
static struct ur_arg *args;    /* scratch: max_args + 1 parsed arguments */
static char rbuf[READ_CHUNK];
static struct log_rate accept_log, auth_log, input_log, handshake_log;
static uint64_t auth_second_ms; /* the second AUTH failures are counted in */
static uint32_t auth_second_n;

static uint64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* c->in's capacity changed: srv->client_in_bytes follows. */
static void in_account(struct conn *c)
{
    srv->client_in_bytes += c->in.cap;
    srv->client_in_bytes -= c->in_counted;
    c->in_counted = c->in.cap;
}

static void in_release(struct conn *c)
{
    ur_buf_deinit(&c->in);
    in_account(c);
}

/* Whether c's input buffer may grow to hold `extra` more bytes without
 * taking every connection's input past client-input-limit. Counts what
 * ur_buf_reserve may allocate: its doubling stops below twice the need. */
static bool in_fits(const struct conn *c, size_t extra)
{
    uint64_t limit = srv->cfg.client_input_limit;

    if (limit == 0 || c->in.cap - c->in.len >= extra)
        return true;
    return srv->client_in_bytes - c->in.cap +
               2 * ((uint64_t)c->in.len + extra) <=
           limit;
}

static void conn_free(struct conn *c)
{
    batch_multi_end(&c->sess);
    free(c->sess.repl_hs);
    event_free(c->rev);
    event_free(c->wev);
    if (c->tev)
        event_free(c->tev);
    in_release(c);
    ur_buf_deinit(&c->out);
    ur_buf_deinit(&c->defer);
    free(c);
}

/* Takes c out of the network: its events, the registry, the counts;
 * the socket is closed, or kept when it was handed over (PSYNC). */
static void conn_release(struct conn *c, bool close_fd)
{
    if (c->tr.fd < 0)
        return;
    event_del(c->rev);
    event_del(c->wev);
    if (c->tev)
        event_del(c->tev);
    if (c->sess.blocked) {
        repl_wait_cancel(srv, &c->sess);
        cluster_meet_cancel(srv, &c->sess);
    }
    if (close_fd)
        tr_close(&c->tr);
    c->tr.fd = -1;
    c->tr.ssl = NULL;
    if (c->tr.type != &tr_tcp)
        srv->tls_clients--;

    clients_remove(srv, &c->cl);
    srv->clients--;
    srv->client_out_bytes -= c->out.len - c->out_sent;
    in_release(c);
    if (c->paused)
        srv->paused_clients--;
    if (c->delayed)
        srv->auth_delayed_clients--;
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

static void conn_close(struct conn *c)
{
    conn_release(c, true);
}

static void queue_pending(struct conn *c)
{
    if (!c->pending) {
        c->pending = true;
        c->next_pending = pending;
        pending = c;
    }
}

/* Set while on_flush publishes the turn's badge messages: it writes every
 * connection they queue right after, so they need no further flush. */
static bool flushing_badges;

static void queue_flush(struct conn *c)
{
    queue_pending(c);
    if (!flushing_badges)
        event_active(flush_ev, EV_WRITE, 0);
}

/* c's output waits for the journal: flushed again in RETRY_MS (or by
 * the next turn's flush, whichever comes first). */
static void queue_retry(struct conn *c)
{
    const struct timeval retry = {0, RETRY_MS * 1000};

    queue_pending(c);
    if (!evtimer_pending(retry_ev, NULL))
        evtimer_add(retry_ev, &retry);
}

static void conn_unpause(struct conn *c);
static void auth_delay(struct conn *c);

/* The reply bytes of c that acknowledge journal records start at from,
 * and the last of those records is seq. */
static void conn_hold(struct conn *c, size_t from, uint64_t seq)
{
    if (c->hold_seq == 0)
        c->hold_from = from;
    c->hold_seq = seq;
}

/* How far c's output may be sent: all of it, or up to its hold mark while
 * the records it acknowledges are not durable. */
static size_t conn_sendable(struct conn *c)
{
    if (c->hold_seq != 0 && persist_durable(srv->persist) >= c->hold_seq)
        c->hold_seq = 0;
    return c->hold_seq != 0 ? c->hold_from : c->out.len;
}
static void fd_limit_setup(void);
static const struct timeval *common_timeout(uint32_t seconds);

/* Writes what it can; arms the write event (and its stall timeout) when
 * the socket is full; lets a paused connection's input run again once
 * its unsent replies fall below OUT_PAUSE. Output behind a hold mark stays
 * (the connection is queued for the flush's retry). */
static void conn_write(struct conn *c)
{
    size_t end = conn_sendable(c);

    while (c->out_sent < end) {
        ssize_t n =
            tr_write(&c->tr, c->out.data + c->out_sent, end - c->out_sent);
        if (n > 0) {
            c->out_sent += (size_t)n;
            srv->client_out_bytes -= (size_t)n;
            srv->stats.net_out_bytes += (size_t)n;
            srv->stats.writes++;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->want_write) {
                event_add(c->wev, out_tv);
                c->want_write = true;
            }
            if (c->paused && !c->close_after &&
                c->out.len - c->out_sent < OUT_PAUSE)
                conn_unpause(c);
            return;
        }
        log_debug("client %llu: write: %s", (unsigned long long)c->sess.id,
                  tr_error(&c->tr));
        conn_close(c);
        return;
    }
    if (c->want_write) {
        event_del(c->wev);
        c->want_write = false;
    }
    if (end < c->out.len) {
        /* Held: the socket is not what it waits for. */
        queue_retry(c);
        return;
    }
    c->out.len = 0;
    c->out_sent = 0;
    c->hold_from = 0;
    c->soft_since_ms = 0;
    if (c->out.cap > OUT_KEEP)
        ur_buf_deinit(&c->out);
    if (c->close_after)
        conn_close(c);
    else if (c->paused)
        conn_unpause(c);
}

static void conn_continue(struct conn *c);

/* Writes every queued connection once (closes the doomed ones). */
static void write_pending(void)
{
    struct conn *c = pending;

    pending = NULL;
    while (c != NULL) {
        struct conn *next = c->next_pending;
        if (c->resume && !c->dead) {
            /* A WAIT ended: what the connection held back runs now, with
             * c still pending so that a close only marks it dead. */
            c->resume = false;
            conn_continue(c);
        }
        c->pending = false;
        if (c->dead)
            conn_free(c);
        else if (c->doomed)
            conn_close(c);
        else
            conn_write(c); /* a held one queues itself again */
        c = next;
    }
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    server_turn_end(srv);
    persist_flush(srv->persist);
    repl_flush(srv);
    cluster_flush(srv);
    write_pending();
    if (badges_pending(&srv->badges)) {
        const struct timeval retry = {0, RETRY_MS * 1000};
        bool published;

        flushing_badges = true;
        published = badges_flush(srv);
        flushing_badges = false;
        if (published)
            write_pending(); /* its messages, in this turn */
        else if (!evtimer_pending(retry_ev, NULL))
            evtimer_add(retry_ev, &retry); /* the journal is behind */
    }
    if (srv->shutdown_asap)
        event_base_loopbreak(base);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    event_active(flush_ev, EV_WRITE, 0);
}

static void on_read(evutil_socket_t fd, short what, void *arg);
static void conn_handshake(struct conn *c, short what);

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;

    if (c->tr.state != TR_READY) {
        conn_handshake(c, what);
        return;
    }
    if (c->read_on_write && !(what & EV_TIMEOUT)) {
        /* The socket takes bytes again: the read that had to write. */
        c->read_on_write = false;
        if (c->out_sent == c->out.len && c->want_write) {
            event_del(c->wev);
            c->want_write = false;
        }
        on_read(fd, EV_READ, c);
        return;
    }
    if (what & EV_TIMEOUT) {
        srv->stats.output_timeouts++;
        log_debug("client %llu: no reply bytes taken for %u s, closing",
                  (unsigned long long)c->sess.id,
                  srv->cfg.client_output_timeout);
        conn_close(c);
        return;
    }
    conn_write(c);
}

/* The limits c's next request is parsed with: the configured ones, or
 * before AUTH the PREAUTH ones (never looser than the configured). */
static struct ur_limits conn_limits(const struct conn *c)
{
    struct ur_limits lim = {srv->cfg.max_frame, srv->cfg.max_args,
                            srv->cfg.max_inline};
    if (session_needs_auth(srv, &c->sess)) {
        if (lim.max_frame > PREAUTH_FRAME)
            lim.max_frame = PREAUTH_FRAME;
        if (lim.max_args > PREAUTH_ARGS)
            lim.max_args = PREAUTH_ARGS;
        if (lim.max_inline > PREAUTH_FRAME)
            lim.max_inline = PREAUTH_FRAME;
    }
    return lim;
}

/* Framing is lost: answer one error, stop reading, close after writing. */
static void proto_error(struct conn *c, enum ur_parse st, uint32_t id,
                        const struct ur_limits *lim)
{
    struct reply r;
    srv->stats.proto_errors++;
    reply_begin(&r, &c->out, c->proto == PROTO_BIN ? REPLY_BIN : REPLY_RESP,
                id);
    if (st == UR_PARSE_TOO_BIG && session_needs_auth(srv, &c->sess))
        reply_err(&r, UR_E_TOOBIG,
                  "protocol error: request over the limits before AUTH "
                  "(%u bytes, %u arguments); closing",
                  lim->max_frame, lim->max_args);
    else if (st == UR_PARSE_TOO_BIG)
        reply_err(&r, UR_E_TOOBIG,
                  "protocol error: request over a limit (max-frame %u, "
                  "max-args %u, max-inline %u); closing",
                  lim->max_frame, lim->max_args, lim->max_inline);
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
 * Whether c's unsent output is over its limits: client-output-limit, and
 * while it subscribes (the pubsub class of Redis's
 * client-output-buffer-limit) pubsub-output-limit at once, or
 * pubsub-output-soft-limit once it has stayed above it for
 * pubsub-output-soft-seconds (checked whenever output is added; the clock
 * restarts when the output drains).
 */
static bool out_over(struct conn *c)
{
    size_t held = c->out.len - c->out_sent;
    uint64_t limit = srv->cfg.client_output_limit;
    uint64_t soft = srv->cfg.pubsub_output_soft, now;

    if (limit != 0 && held > limit)
        return true;
    if (c->sess.subs == 0)
        return false;
    limit = srv->cfg.pubsub_output_limit;
    if (limit != 0 && held > limit)
        return true;
    if (soft == 0 || held <= soft) {
        c->soft_since_ms = 0;
        return false;
    }
    now = mono_ms();
    if (c->soft_since_ms == 0) {
        c->soft_since_ms = now | 1;
        return false;
    }
    return now - c->soft_since_ms >=
           (uint64_t)srv->cfg.pubsub_output_soft_seconds * 1000;
}

/*
 * After each reply: past its output limits the connection is to be
 * closed (c->overflow), at OUT_PAUSE its input waits (c->paused) until
 * the client has read enough. true when process() must stop.
 */
static bool out_full(struct conn *c)
{
    size_t held = c->out.len - c->out_sent;

    if (out_over(c)) {
        if (c->sess.subs != 0)
            srv->pubsub.limit_closes++;
        c->overflow = true;
        return true;
    }
    if (held < OUT_PAUSE)
        return false;
    if (!c->paused) {
        c->paused = true;
        srv->paused_clients++;
        event_del(c->rev);
    }
    c->need = 0; /* what waits is parsed as soon as it resumes */
    return true;
}

/*
 * CLIENT PAUSE (docs/OPERATIONS.md): while srv->pause_end_ms is in the
 * future, a request that must wait (every one with pause_all, else writes:
 * OPF_WRITE, EXEC and batch frames, op NULL) is left unparsed and the
 * connection stops reading until the pause ends (pause_release). CLIENT
 * itself and QUIT never wait, so a paused server can be unpaused.
 * Called only while a pause is on (srv->pause_end_ms != 0): process()
 * tests that first, so that no request looks its op up for this when
 * there is no pause.
 */
static bool pause_holds(struct conn *c, const struct ur_op *op)
{
    if (server_mono_ms() >= srv->pause_end_ms) {
        srv->pause_end_ms = 0;
        return false;
    }
    if (op != NULL && (op->code == UR_OP_CLIENT || op->code == UR_OP_QUIT))
        return false;
    if (!srv->pause_all && op != NULL && !(op->flags & OPF_WRITE) &&
        op->code != UR_OP_EXEC)
        return false;
    if (!c->pause_wait) {
        c->pause_wait = true;
        event_del(c->rev);
    }
    c->need = 0;
    return true;
}

/*
 * process()'s lookahead on the binary protocol. Before a request runs, the
 * complete requests after it have been glanced at (ur_frame_peek) and the
 * stores told which user each one is about (exec_prefetch), in two
 * stages: the next LOOK_FAR load their map segment's header, the next
 * LOOK_NEAR (reading that header) their slot. The cache and TLB misses of
 * a pipelined read then overlap instead of queueing one after another:
 * with 1M users a user's slot is a miss, 36% of the server's time at
 * pipeline 16 without this.
 */
#define LOOK_FAR 16u
#define LOOK_NEAR 6u
#define LOOK_RING 32u /* a power of two above LOOK_FAR */

struct lookahead {
    size_t pos;            /* the next frame to glance at */
    unsigned first, count; /* ring[first ..] holds the frames glanced at and
                              not yet run, the running one first */
    unsigned near;         /* of those, how many had their second stage */
    struct glance {
        uint64_t uid;
        uint16_t op;
        bool has; /* uid is the frame's first argument */
    } ring[LOOK_RING];
};

/* Glances ahead in data[..len) of the frame about to run (ring[first]). */
static void look_ahead(struct lookahead *la, const char *data, size_t len)
{
    while (la->count <= LOOK_FAR && la->pos < len) {
        struct glance *g = &la->ring[(la->first + la->count) & (LOOK_RING - 1)];
        size_t used = ur_frame_peek(data + la->pos, len - la->pos, &g->op,
                                    &g->uid, &g->has);

        if (used == 0) {
            la->pos = len; /* a partial frame: nothing past it is whole */
            break;
        }
        g->has = g->has && exec_prefetchable(g->op);
        if (!g->has && la->pos == 0) {
            /* A pipeline is mostly of a kind: when its first request has
             * no hint (BC.PUBLISH, RCPT, admin), looking further costs more
             * than it finds. */
            la->pos = len;
            break;
        }
        if (g->has)
            exec_prefetch(srv, g->op, g->uid, 0);
        la->pos += used;
        la->count++;
    }
    while (la->near < la->count && la->near <= LOOK_NEAR) {
        const struct glance *g =
            &la->ring[(la->first + la->near) & (LOOK_RING - 1)];

        if (g->has)
            exec_prefetch(srv, g->op, g->uid, 1);
        la->near++;
    }
}

/* The frame at ring[first] ran. */
static void look_done(struct lookahead *la)
{
    if (la->count == 0)
        return;
    la->first = (la->first + 1) & (LOOK_RING - 1);
    la->count--;
    if (la->near > 0)
        la->near--;
}

/*
 * Parses and executes every complete request in data[0..len); returns the
 * bytes consumed. Replies go to c->out in request order.
 */
static size_t process(struct conn *c, const char *data, size_t len)
{
    uint64_t jseq = persist_appended(srv->persist);
    const uint32_t auth_failures = c->sess.auth_failures;
    const size_t out_before = c->out.len;
    struct lookahead la; /* the ring is written before it is read */
    size_t off = 0;

    la.pos = 0;
    la.first = la.count = la.near = 0;
    c->running = true;
    srv->cmd_ns = server_mono_ns();
    srv->cmd_clock = true;

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
        const struct ur_limits lim = conn_limits(c); /* AUTH changes them */
        const size_t reply_at = c->out.len;
        size_t used = 0, hint = 0;
        enum ur_parse st;
        struct reply r = {0};

        if (c->proto == PROTO_BIN) {
            struct ur_frame_req req = {0};
            look_ahead(&la, data, len);
            st = ur_frame_parse_request(data + off, len - off, &lim, args, &req,
                                        &used, &hint);
            if (st == UR_PARSE_OK && srv->pause_end_ms != 0 &&
                pause_holds(c, req.op == UR_FRAME_OP_BATCH
                                   ? NULL
                                   : ur_op_by_code(req.op))) {
                break;
            } else if (st == UR_PARSE_OK) {
                reply_begin(&r, &c->out, REPLY_BIN, req.id);
                if (req.op == UR_FRAME_OP_BATCH)
                    batch_exec(srv, &c->sess, &req, &r);
                else
                    exec_binary(srv, &c->sess, req.op, req.argc, req.argv, &r);
                reply_end(&r);
            } else if (st != UR_PARSE_NEED_MORE) {
                proto_error(c, st, req.id, &lim);
            }
        } else {
            uint32_t argc = 0;
            st = ur_resp_parse_request(data + off, len - off, &lim, args, &argc,
                                       &used, &hint);
            /* The op is looked up here only while a pause is on
             * (pause_holds): exec_text looks it up anyway. */
            if (st == UR_PARSE_OK && argc > 0 && srv->pause_end_ms != 0 &&
                pause_holds(c, ur_op_by_name(args[0].str, args[0].len))) {
                break;
            } else if (st == UR_PARSE_OK && argc > 0) {
                reply_begin(&r, &c->out, (enum reply_proto)c->sess.proto, 0);
                exec_text(srv, &c->sess, argc, args, &r);
                reply_end(&r);
            } else if (st != UR_PARSE_OK && st != UR_PARSE_NEED_MORE) {
                proto_error(c, st, 0, &lim);
            }
        }

        if (c->defer.len != 0) {
            /* Pushes made while it ran (a PUBLISH to its own channel):
             * after its reply. */
            if (ur_buf_append(&c->out, c->defer.data, c->defer.len) != 0)
                srv->pubsub.dropped++;
            c->defer.len = 0;
            ur_buf_shrink(&c->defer, 0);
        }
        if (st == UR_PARSE_NEED_MORE) {
            c->need = hint;
            break;
        }
        if (st != UR_PARSE_OK)
            break;
        if (persist_appended(srv->persist) != jseq) {
            /* This reply acknowledges records: it waits for them. */
            jseq = persist_appended(srv->persist);
            conn_hold(c, reply_at, jseq);
        }
        if (r.close_after && !c->close_after) {
            c->close_after = true;
            event_del(c->rev);
        }
        off += used;
        look_done(&la);
        if (c->sess.handover)
            break; /* PSYNC: the connection is a replica's now */
        if (c->sess.blocked) {
            /* WAIT: its reply comes later (net_unblock); what follows
             * waits for it. */
            c->blocked = true;
            c->block_proto = r.proto;
            c->block_id = r.id;
            event_del(c->rev);
            c->need = 0;
            break;
        }
        if (c->sess.auth_failures != auth_failures) {
            auth_delay(c); /* the rest waits */
            break;
        }
        if (out_full(c))
            break;
    }
    srv->cmd_clock = false;
    c->running = false;
    srv->client_out_bytes += c->out.len - out_before;
    return off;
}

/* c's unfinished request would take the input buffers of every
 * connection past client-input-limit: closed (Redis closes a client over
 * its query buffer limit the same way). */
static void input_over(struct conn *c, size_t more)
{
    uint64_t quiet;

    srv->stats.input_limit_closes++;
    if (log_rate_ok(&input_log, mono_ms(), &quiet))
        log_warn("client %llu: its unfinished request (%zu bytes, %zu more "
                 "wanted) would take the input buffers of all clients "
                 "(%llu bytes) past client-input-limit %llu; closing "
                 "(%llu more such closes since the last line)",
                 (unsigned long long)c->sess.id, c->in.len, more,
                 (unsigned long long)srv->client_in_bytes,
                 (unsigned long long)srv->cfg.client_input_limit,
                 (unsigned long long)quiet);
    conn_close(c);
}

/*
 * Runs the complete requests of c's input: the n bytes at fresh (just read
 * into rbuf, nothing buffered) or, when fresh is NULL, c->in. Keeps the
 * unparsed tail in c->in, noting when its request began, and queues the
 * replies for the flush. false when the connection was closed instead (out
 * of memory, input over client-input-limit, or replies over
 * client-output-limit): c must not be used then.
 */
/* PSYNC ran on c: replication takes the socket and the replies not yet
 * sent (its handshake's +OKs); c leaves the network. */
static void conn_hand_over(struct conn *c)
{
    repl_take_replica(srv, &c->tr, &c->sess, c->cl.addr, c->cl.laddr,
                      c->out.data + c->out_sent, c->out.len - c->out_sent);
    srv->client_out_bytes -= c->out.len - c->out_sent;
    c->out_sent = c->out.len;
    conn_release(c, false);
}

static bool conn_run(struct conn *c, const char *fresh, size_t n)
{
    size_t used;

    if (fresh == NULL) {
        used = process(c, c->in.data, c->in.len);
        ur_buf_consume(&c->in, used);
    } else {
        used = process(c, fresh, n);
    }
    if (c->sess.handover) {
        conn_hand_over(c);
        return false;
    }
    if (fresh != NULL) {
        if (used < n && !c->close_after && !c->overflow) {
            if (!in_fits(c, n - used)) {
                input_over(c, n - used);
                return false;
            }
            if (ur_buf_append(&c->in, fresh + used, n - used) != 0) {
                in_account(c);
                conn_close(c);
                return false;
            }
        }
    }
    if (c->in.len == 0 || c->close_after)
        ur_buf_deinit(&c->in);
    in_account(c);
    if (c->in.len == 0)
        c->req_start_ms = 0;
    else if (used > 0 || c->req_start_ms == 0)
        c->req_start_ms = mono_ms(); /* a new request began in this read */
    if (c->overflow) {
        srv->stats.output_limit_closes++;
        log_debug("client %llu: replies over client-output-limit, closing",
                  (unsigned long long)c->sess.id);
        conn_close(c);
        return false;
    }
    queue_flush(c);
    return true;
}

/* (Re-)arms c's read event: with the idle timeout, or while an unfinished
 * request waits, with what is left of its deadline (not a common timeout:
 * its duration varies). */
static void conn_arm_read(struct conn *c)
{
    if (c->req_start_ms != 0 && idle_tv != NULL) {
        uint64_t limit = (uint64_t)srv->cfg.timeout * 1000;
        uint64_t age = mono_ms() - c->req_start_ms;
        uint64_t left = age < limit ? limit - age : 0;
        struct timeval tv = {(time_t)(left / 1000),
                             (suseconds_t)(left % 1000) * 1000};
        event_add(c->rev, &tv);
        c->deadline = true;
    } else {
        event_add(c->rev, idle_tv);
        c->deadline = false;
    }
}

/* c's input may run again (a pause or an AUTH delay ended): runs the
 * requests that waited, then reads again unless they paused or delayed
 * it anew. */
static void conn_continue(struct conn *c)
{
    if (c->paused || c->delayed || c->pause_wait || c->close_after ||
        c->blocked)
        return;
    if (c->in.len > 0 && !conn_run(c, NULL, 0))
        return;
    if (!c->paused && !c->delayed && !c->pause_wait && !c->close_after &&
        !c->blocked) {
        conn_arm_read(c);
        if (tr_pending(&c->tr) != 0)
            event_active(c->rev, EV_READ, 0); /* TLS: read ahead */
    }
}

/* c's unsent replies fell below OUT_PAUSE. */
static void conn_unpause(struct conn *c)
{
    c->paused = false;
    srv->paused_clients--;
    conn_continue(c);
}

static void on_auth_delay(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;

    (void)fd, (void)what;
    c->delayed = false;
    srv->auth_delayed_clients--;
    conn_continue(c);
}

/* The peer of c as text, for the log. */
static void peer_name(const struct conn *c, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char host[64];
    int port = 0;

    snprintf(out, cap, "?");
    if (getpeername(c->tr.fd, (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)&ss;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)&ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    } else {
        return;
    }
    snprintf(out, cap, "%s:%d", host, port);
}

/*
 * A request of c failed AUTH: its input (read or buffered) waits a delay
 * that doubles with each failure on the connection, and is at least
 * AUTH_STORM_DELAY_MS while the server sees a storm of failures, so that
 * neither one connection nor many guess fast. The loop never waits: the
 * connection's read event is off until a timer ends the delay. Logged at
 * most once a second.
 */
static void auth_delay(struct conn *c)
{
    uint32_t shift = c->sess.auth_failures - 1;
    uint64_t now = mono_ms(), quiet, ms;

    if (now - auth_second_ms >= 1000) {
        auth_second_ms = now;
        auth_second_n = 0;
    }
    auth_second_n++;
    ms = AUTH_DELAY_MS << (shift < 6 ? shift : 6);
    if (ms > AUTH_DELAY_MAX_MS)
        ms = AUTH_DELAY_MAX_MS;
    if (auth_second_n > AUTH_STORM && ms < AUTH_STORM_DELAY_MS)
        ms = AUTH_STORM_DELAY_MS;
    if (log_rate_ok(&auth_log, now, &quiet)) {
        char peer[96];
        peer_name(c, peer, sizeof(peer));
        log_warn("client %llu (%s): AUTH failed, %u times on this connection "
                 "(%llu in all); its next request waits %llu ms (%llu "
                 "failures since the last line)",
                 (unsigned long long)c->sess.id, peer, c->sess.auth_failures,
                 (unsigned long long)srv->stats.auth_failures,
                 (unsigned long long)ms, (unsigned long long)quiet);
    }
    if (c->tev == NULL)
        c->tev = evtimer_new(base, on_auth_delay, c);
    event_del(c->rev);
    if (c->tev == NULL) {
        c->close_after = true; /* no timer: no more guesses either */
        return;
    }
    const struct timeval tv = {(time_t)(ms / 1000),
                               (suseconds_t)(ms % 1000) * 1000};
    c->delayed = true;
    srv->auth_delayed_clients++;
    evtimer_add(c->tev, &tv);
}

/* CLIENT PAUSE ended (its time, or CLIENT UNPAUSE): every connection that
 * waited runs what it holds and reads again. */
static void pause_release(void)
{
    srv->pause_end_ms = 0;
    event_del(pause_ev);
    /* From the head each time: running one connection's requests may
     * close others (CLIENT KILL), so no pointer is kept across a run. */
    for (;;) {
        struct conn *c = conns;

        while (c != NULL && !c->pause_wait)
            c = c->next;
        if (c == NULL)
            return;
        c->pause_wait = false;
        conn_continue(c);
        if (srv->pause_end_ms != 0)
            return; /* it paused the server again: the rest wait on */
    }
}

static void on_pause_end(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    uint64_t now = server_mono_ms();

    if (srv->pause_end_ms > now) { /* extended meanwhile */
        const struct timeval tv = {
            (time_t)((srv->pause_end_ms - now) / 1000),
            (suseconds_t)((srv->pause_end_ms - now) % 1000 * 1000)};
        evtimer_add(pause_ev, &tv);
        return;
    }
    pause_release();
}

/* srv->on_pause: a pause started, changed or ended (CLIENT UNPAUSE sets
 * pause_end_ms to 0). */
static void net_pause_changed(struct server *s)
{
    (void)s;
    if (srv->pause_end_ms == 0) {
        pause_release();
        return;
    }
    event_del(pause_ev);
    on_pause_end(-1, 0, NULL);
}

static struct conn *conn_of(const struct client *cl);

/* srv->on_unblock: sess's WAIT ended with value: its reply, then (at the
 * flush) what its connection held back meanwhile. */
static void net_unblock(struct server *s, struct session *sess, uint64_t value)
{
    struct conn *c = conn_of(sess->client);
    size_t before = c->out.len;
    struct reply r;

    (void)s;
    c->blocked = false;
    reply_begin(&r, &c->out, (enum reply_proto)c->block_proto, c->block_id);
    reply_int(&r, value);
    reply_end(&r);
    srv->client_out_bytes += c->out.len - before;
    c->resume = true;
    queue_flush(c);
}

/* srv->on_unblock_status: sess's CLUSTER MEET ended: a status (code 0)
 * or an error, then what its connection held back. */
static void net_unblock_status(struct server *s, struct session *sess,
                               uint16_t code, const char *text)
{
    struct conn *c = conn_of(sess->client);
    size_t before = c->out.len;
    struct reply r;

    (void)s;
    c->blocked = false;
    reply_begin(&r, &c->out, (enum reply_proto)c->block_proto, c->block_id);
    if (code == UR_E_OK)
        reply_status(&r, text);
    else
        reply_err(&r, code, "%s", text);
    reply_end(&r);
    srv->client_out_bytes += c->out.len - before;
    c->resume = true;
    queue_flush(c);
}

/* srv->on_badges: badge messages wait for the end of this turn, which a
 * timer's write (the expiry sweep) does not otherwise reach. */
static void net_badges(struct server *s)
{
    (void)s;
    event_active(flush_ev, EV_WRITE, 0);
}

/* srv->on_config: CONFIG SET changed a key read once here. */
static void net_config_changed(struct server *s, const char *key)
{
    (void)s;
    if (strcmp(key, "timeout") == 0)
        idle_tv = common_timeout(srv->cfg.timeout);
    else if (strcmp(key, "client-output-timeout") == 0)
        out_tv = common_timeout(srv->cfg.client_output_timeout);
    else if (strcmp(key, "maxclients") == 0)
        fd_limit_setup();
}

/* ---- the registry's view of a connection (clients.h) ------------------ */

static struct conn *conn_of(const struct client *cl)
{
    return (struct conn *)(void *)((char *)(uintptr_t)cl -
                                   offsetof(struct conn, cl));
}

static void io_bufs(const struct client *cl, struct client_bufs *out)
{
    const struct conn *c = conn_of(cl);

    out->qbuf = c->in.len;
    out->qbuf_cap = c->in.cap;
    out->obuf = c->out.len - c->out_sent;
    out->obuf_cap = c->out.cap;
    out->reading = !c->paused && !c->pause_wait && !c->close_after;
    out->writing = c->want_write;
}

static void io_kill(struct client *cl)
{
    struct conn *c = conn_of(cl);

    if (c->running) { /* its own command: close after the reply */
        c->close_after = true;
        event_del(c->rev);
        return;
    }
    conn_close(c);
}

static struct ur_buf *io_push_out(struct client *cl)
{
    struct conn *c = conn_of(cl);
    struct ur_buf *b = c->running ? &c->defer : &c->out;

    c->push_mark = b->len;
    return b;
}

/* A push to a running connection is checked with its reply (process);
 * one to a doomed connection is taken back. */
static bool io_push_done(struct client *cl)
{
    struct conn *c = conn_of(cl);

    if (c->running)
        return true;
    if (c->doomed) {
        c->out.len = c->push_mark;
        return false;
    }
    srv->client_out_bytes += c->out.len - c->push_mark;
    if (out_over(c)) {
        srv->stats.output_limit_closes++;
        if (c->sess.subs != 0)
            srv->pubsub.limit_closes++;
        log_debug("client %llu: pushed messages over its output limits "
                  "(%zu bytes unsent), closing",
                  (unsigned long long)c->sess.id, c->out.len - c->out_sent);
        c->doomed = true;
        event_del(c->rev);
        queue_flush(c);
        return false;
    }
    queue_flush(c);
    return true;
}

static const struct client_io conn_io = {io_bufs, io_kill, io_push_out,
                                         io_push_done};

/* "ip:port" of a socket address. */
static void fmt_addr(const struct sockaddr *sa, char *buf, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    snprintf(buf, cap, "%s:%u", host, port);
}

/* Whether c's input is read now (nothing holds it back). */
static bool conn_reading(const struct conn *c)
{
    return !c->paused && !c->delayed && !c->pause_wait && !c->close_after &&
           !c->blocked && !c->doomed;
}

/* A TLS read must write first (a key update's answer) and the socket is
 * full: the write event brings the read back (on_writable). */
static void read_wants_write(struct conn *c)
{
    c->read_on_write = true;
    if (!c->want_write) {
        event_add(c->wev, out_tv);
        c->want_write = true;
    }
}

/* (Re-)arms a handshaking c's read event with what is left of its
 * deadline, tls-handshake-timeout after the accept: bytes arriving do
 * not push it back, so a client sending its handshake a byte at a time
 * is closed like a silent one. */
static void handshake_arm(struct conn *c)
{
    uint64_t limit = (uint64_t)srv->cfg.tls_handshake_timeout * 1000;
    uint64_t age = mono_ms() - c->req_start_ms;
    uint64_t left = age < limit ? limit - age : 0;
    struct timeval tv = {(time_t)(left / 1000),
                         (suseconds_t)(left % 1000) * 1000};

    event_add(c->rev, &tv);
}

/*
 * One step of a new connection's handshake (TLS), on either event: it
 * waits for the one the transport names, within its deadline; a failure
 * or the deadline closes the connection (counted in INFO's
 * tls_handshake_failures, tls_handshake_timeouts). Until it is done the
 * connection holds a slot of maxclients and no input buffer. Then it
 * reads requests as any other: the first byte picks the protocol.
 */
static void conn_handshake(struct conn *c, short what)
{
    uint64_t quiet;
    int rc;

    if (what & EV_TIMEOUT) {
        if (mono_ms() - c->req_start_ms <
            (uint64_t)srv->cfg.tls_handshake_timeout * 1000) {
            handshake_arm(c); /* early by a rounding: wait the rest */
            return;
        }
        srv->stats.tls_handshake_timeouts++;
        log_debug("client %llu: TLS handshake not done within %u s, closing",
                  (unsigned long long)c->sess.id,
                  srv->cfg.tls_handshake_timeout);
        conn_close(c);
        return;
    }
    rc = tr_handshake(&c->tr);
    if (rc < 0) {
        srv->stats.tls_handshake_failures++;
        if (log_rate_ok(&handshake_log, mono_ms(), &quiet))
            log_info("client %llu (%s): TLS handshake failed: %s (%llu "
                     "more since the last line)",
                     (unsigned long long)c->sess.id, c->cl.addr,
                     tr_error(&c->tr), (unsigned long long)quiet);
        conn_close(c);
        return;
    }
    if (rc > 0) {
        bool write = c->tr.want == TR_WANT_WRITE;

        if (write != c->want_write) {
            if (write)
                event_add(c->wev, NULL);
            else
                event_del(c->wev);
            c->want_write = write;
        }
        handshake_arm(c);
        return;
    }
    srv->stats.tls_handshakes++;
    if (c->want_write) {
        event_del(c->wev);
        c->want_write = false;
    }
    c->req_start_ms = 0;
    conn_arm_read(c);
    if (tr_pending(&c->tr) != 0)
        event_active(c->rev, EV_READ, 0);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    ssize_t n;

    (void)fd;
    if (c->doomed)
        return;
    if (c->tr.state != TR_READY) {
        conn_handshake(c, what);
        return;
    }
    if (what & EV_TIMEOUT) {
        if (c->req_start_ms != 0 && idle_tv != NULL &&
            mono_ms() - c->req_start_ms >= (uint64_t)srv->cfg.timeout * 1000) {
            srv->stats.request_timeouts++;
            log_debug("client %llu: request not completed within %u s, "
                      "closing",
                      (unsigned long long)c->sess.id, srv->cfg.timeout);
            conn_close(c);
            return;
        }
        if (c->deadline) {
            conn_arm_read(c); /* early by a rounding: wait the rest */
            return;
        }
        if (c->out_sent < c->out.len)
            return; /* its replies are still going out: not idle */
        srv->stats.idle_timeouts++;
        log_debug("client %llu: idle for %u s, closing",
                  (unsigned long long)c->sess.id, srv->cfg.timeout);
        conn_close(c);
        return;
    }
    if (c->in.len == 0) {
        n = tr_read(&c->tr, rbuf, sizeof(rbuf));
    } else {
        /* Before AUTH a request is at most ~PREAUTH_FRAME bytes: a
         * connection holding a partial one holds no more than that. The
         * buffer grows with what arrives (doubling), never ahead to the
         * length a header announces: a client that claims a large frame
         * and sends little holds little. */
        size_t want =
            session_needs_auth(srv, &c->sess) ? PREAUTH_FRAME : READ_CHUNK;
        if (!in_fits(c, want)) {
            input_over(c, want);
            return;
        }
        if (ur_buf_reserve(&c->in, want) != 0) {
            log_warn("client %llu: out of memory for input, closing",
                     (unsigned long long)c->sess.id);
            conn_close(c);
            return;
        }
        in_account(c);
        n = tr_read(&c->tr, c->in.data + c->in.len, c->in.cap - c->in.len);
    }

    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            if (c->tr.want == TR_WANT_WRITE)
                read_wants_write(c);
            return;
        }
        log_debug("client %llu: read: %s", (unsigned long long)c->sess.id,
                  tr_error(&c->tr));
        conn_close(c);
        return;
    }
    if (n > 0) {
        srv->stats.net_in_bytes += (size_t)n;
        srv->stats.reads++;
    }
    if (n == 0) {
        /* Peer finished sending: answer what it sent, then close. */
        c->close_after = true;
        event_del(c->rev);
        queue_flush(c);
        return;
    }

    if (c->in.len == 0) {
        if (!conn_run(c, rbuf, (size_t)n))
            return;
    } else {
        c->in.len += (size_t)n;
        if (c->in.len >= c->need && !conn_run(c, NULL, 0))
            return;
    }
    /* Still reading: an unfinished request keeps its deadline, a finished
     * one gives the idle timeout back. */
    if ((c->req_start_ms != 0 ? idle_tv != NULL : c->deadline) && !c->paused &&
        !c->delayed && !c->close_after && !c->blocked)
        conn_arm_read(c);
    /* TLS: records read ahead wait in the transport, which the socket no
     * longer signals. */
    if (tr_pending(&c->tr) != 0 && conn_reading(c))
        event_active(c->rev, EV_READ, 0);
}

/* maxclients reached: one text error line (a client's protocol is known
 * only from its first byte; a binary client sees a malformed reply and
 * the close), then close. The socket is new: the short write fits. */
static bool is_loopback(const struct sockaddr *sa);

static void conn_refuse(evutil_socket_t fd)
{
    static const char msg[] = "-ERR max number of clients reached\r\n";
    ssize_t n = write(fd, msg, sizeof(msg) - 1);

    (void)n; /* best effort: the close says the same */
    close(fd);
    srv->stats.rejected_conns++;
}

/*
 * Protected mode (protected-mode yes, the default), as Redis's: while the
 * default user has no password, only loopback clients are served; any
 * other gets this one line (Redis's -DENIED text) and the close, before
 * anything it sends is read. A TLS client is closed without it (it could
 * not read plaintext).
 */
static const char denied_msg[] =
    "-DENIED unreadd is running in protected mode because protected mode is "
    "enabled and no password is set for the default user. In this mode "
    "connections are only accepted from the loopback interface. If you want "
    "to connect from external computers to unreadd you may adopt one of the "
    "following solutions: 1) Just disable protected mode sending the command "
    "'CONFIG SET protected-mode no' from the loopback interface by "
    "connecting to unreadd from the same host the server is running, "
    "however MAKE SURE unreadd is not publicly accessible from internet if "
    "you do so. Use CONFIG REWRITE to make this change permanent. 2) "
    "Alternatively you can just disable the protected mode by editing the "
    "unreadd configuration file, and setting the protected mode option to "
    "'no', and then restarting the server. 3) If you started the server "
    "manually just for testing, restart it with the '--protected-mode no' "
    "option. 4) Set up an authentication password for the default user. "
    "NOTE: You only need to do one of the above things in order for the "
    "server to start accepting connections from the outside.\r\n";

static bool protected_refuses(bool loopback)
{
    return srv->cfg.protected_mode && !srv->acl_locked && !loopback;
}

/* A connection on either port: arg is the listener's transport (NULL:
 * TCP, the plaintext port). A TLS connection starts with its handshake
 * (conn_handshake); at maxclients it is closed at once, with no
 * handshake spent on it (a TLS client cannot read a plaintext error). */
static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *addr, int socklen, void *arg)
{
    const struct tr_type *type = arg != NULL ? arg : &tr_tcp;

    (void)l, (void)socklen;
    if (srv->clients >= srv->cfg.maxclients) {
        if (type == &tr_tcp) {
            conn_refuse(fd);
        } else {
            close(fd);
            srv->stats.rejected_conns++;
        }
        return;
    }
    if (protected_refuses(is_loopback(addr))) {
        ssize_t n =
            type == &tr_tcp ? write(fd, denied_msg, sizeof(denied_msg) - 1) : 0;

        (void)n; /* best effort, as conn_refuse */
        close(fd);
        srv->stats.rejected_conns++;
        return;
    }
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        close(fd);
        return;
    }
    evutil_make_socket_nonblocking(fd);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

    if (tr_accept(&c->tr, type, fd) != 0) {
        log_warn("TLS: cannot take a connection: %s", tr_error(&c->tr));
        free(c);
        close(fd);
        return;
    }
    c->sess.id = ++srv->next_client_id;
    c->sess.client = &c->cl;
    /* As Redis: a connection made while no password is set stays in when
     * CONFIG SET requirepass sets one later. */
    c->sess.authed = !srv->acl_locked;
    c->cl.sess = &c->sess;
    c->cl.io = &conn_io;
    c->cl.fd = fd;
    fmt_addr(addr, c->cl.addr, sizeof(c->cl.addr));
    c->cl.local = is_loopback(addr);
    {
        struct sockaddr_storage local;
        socklen_t llen = sizeof(local);
        if (getsockname(fd, (struct sockaddr *)&local, &llen) == 0)
            fmt_addr((struct sockaddr *)&local, c->cl.laddr,
                     sizeof(c->cl.laddr));
    }
    c->rev = event_new(base, fd, EV_READ | EV_PERSIST, on_read, c);
    c->wev = event_new(base, fd, EV_WRITE | EV_PERSIST, on_writable, c);
    if (c->rev == NULL || c->wev == NULL || event_add(c->rev, idle_tv) != 0) {
        if (c->rev)
            event_free(c->rev);
        if (c->wev)
            event_free(c->wev);
        tr_close(&c->tr);
        free(c);
        return;
    }
    if (type != &tr_tcp) {
        srv->tls_clients++;
        c->req_start_ms = mono_ms(); /* the handshake's deadline */
        handshake_arm(c);
    }
    c->next = conns;
    if (conns)
        conns->prev = c;
    conns = c;
    clients_add(srv, &c->cl, server_mono_ms());
    srv->clients++;
    srv->stats.connections++;
}

/* An accept failed for want of a resource (EMFILE, ENFILE, ENOBUFS): the
 * pending connection would fail again at once, so the listener rests. */
static void on_accept_error(struct evconnlistener *l, void *arg)
{
    const struct timeval rest = {0, ACCEPT_REST_MS * 1000};
    uint64_t quiet;
    int err = errno;

    srv->stats.accept_errors++;
    if (log_rate_ok(&accept_log, mono_ms(), &quiet))
        log_warn("accept on port %u: %s; not accepting for %d ms at a time "
                 "until it succeeds (%llu more failures since the last line)",
                 arg != NULL ? srv->cfg.tls_port : srv->cfg.port, strerror(err),
                 ACCEPT_REST_MS, (unsigned long long)quiet);
    evconnlistener_disable(l);
    evtimer_add(accept_ev, &rest);
}

static void on_accept_rest(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    if (listener != NULL)
        evconnlistener_enable(listener);
    if (tls_listener != NULL)
        evconnlistener_enable(tls_listener);
}

/*
 * Raises RLIMIT_NOFILE to maxclients + FD_RESERVE. When the hard limit is
 * lower and cannot be raised (not root), takes all of it and lowers
 * maxclients to fit, as Redis does, so that no client is accepted without
 * a descriptor for it; says so in the log.
 */
static void fd_limit_setup(void)
{
    rlim_t want = (rlim_t)srv->cfg.maxclients + FD_RESERVE;
    struct rlimit rl, up;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    up.rlim_cur = want;
    up.rlim_max =
        rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
        log_info("open files limit raised to %llu (maxclients %u)",
                 (unsigned long long)want, srv->cfg.maxclients);
        return;
    }
    up.rlim_cur = up.rlim_max = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &up) == 0)
        rl.rlim_cur = rl.rlim_max;
    uint32_t fit =
        rl.rlim_cur > FD_RESERVE + 1 ? (uint32_t)(rl.rlim_cur - FD_RESERVE) : 1;
    log_warn("maxclients %u needs %llu open files but the limit is %llu "
             "(ulimit -n): maxclients lowered to %u",
             srv->cfg.maxclients, (unsigned long long)want,
             (unsigned long long)rl.rlim_cur, fit);
    srv->cfg.maxclients = fit;
}

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)sa;
        return ntohl(in->sin_addr.s_addr) >> 24 == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a =
            &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) ||
               (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}

/* The idle and stall timeouts as common timeouts: libevent keeps one
 * queue per duration, so re-arming on every read or write is O(1). */
static const struct timeval *common_timeout(uint32_t seconds)
{
    const struct timeval tv = {(time_t)seconds, 0};
    return seconds == 0 ? NULL : event_base_init_common_timeout(base, &tv);
}

/* Listens on bind:port for connections over type (NULL: TCP): the
 * listener, or NULL with a message. */
static struct evconnlistener *
listen_on(uint32_t port, const struct tr_type *type, char *err, size_t errlen)
{
    struct evutil_addrinfo hints, *ai = NULL;
    struct evconnlistener *l;
    char portstr[8];
    int rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = EVUTIL_AI_PASSIVE | EVUTIL_AI_NUMERICHOST;
    snprintf(portstr, sizeof(portstr), "%u", port);
    rc = evutil_getaddrinfo(srv->cfg.bind, portstr, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "bind %s: %s", srv->cfg.bind,
                 evutil_gai_strerror(rc));
        return NULL;
    }
    l = evconnlistener_new_bind(base, on_accept, (void *)(uintptr_t)type,
                                LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE |
                                    LEV_OPT_CLOSE_ON_EXEC,
                                511, ai->ai_addr, (int)ai->ai_addrlen);
    evutil_freeaddrinfo(ai);
    if (l == NULL) {
        snprintf(err, errlen, "listen on %s:%u: %s", srv->cfg.bind, port,
                 strerror(errno));
        return NULL;
    }
    evconnlistener_set_error_cb(l, on_accept_error);
    return l;
}

/* Whether bind is a loopback address (the warning of net_setup). */
static bool bind_is_loopback(void)
{
    struct evutil_addrinfo hints, *ai = NULL;
    bool loop;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = EVUTIL_AI_PASSIVE | EVUTIL_AI_NUMERICHOST;
    if (evutil_getaddrinfo(srv->cfg.bind, "1", &hints, &ai) != 0)
        return false;
    loop = is_loopback(ai->ai_addr);
    evutil_freeaddrinfo(ai);
    return loop;
}

int net_setup(struct server *s, struct event_base *b, char *err, size_t errlen)
{
    srv = s;
    base = b;

    args = calloc((size_t)srv->cfg.max_args + 1, sizeof(*args));
    flush_ev = event_new(base, -1, 0, on_flush, NULL);
    retry_ev = evtimer_new(base, on_retry, NULL);
    accept_ev = evtimer_new(base, on_accept_rest, NULL);
    pause_ev = evtimer_new(base, on_pause_end, NULL);
    srv->on_pause = net_pause_changed;
    srv->on_config = net_config_changed;
    srv->on_unblock = net_unblock;
    srv->on_unblock_status = net_unblock_status;
    srv->on_badges = net_badges;
    idle_tv = common_timeout(srv->cfg.timeout);
    out_tv = common_timeout(srv->cfg.client_output_timeout);
    if (args == NULL || flush_ev == NULL || retry_ev == NULL ||
        accept_ev == NULL || pause_ev == NULL ||
        (srv->cfg.timeout && idle_tv == NULL) ||
        (srv->cfg.client_output_timeout && out_tv == NULL)) {
        snprintf(err, errlen, "out of memory");
        goto error;
    }
    fd_limit_setup();

    if (srv->cfg.port == 0 && srv->cfg.tls_port == 0) {
        snprintf(err, errlen, "port 0 and no tls-port: nothing to listen on");
        goto error;
    }
    if ((srv->cfg.port != 0 &&
         (listener = listen_on(srv->cfg.port, NULL, err, errlen)) == NULL) ||
        (srv->cfg.tls_port != 0 &&
         (tls_listener = listen_on(srv->cfg.tls_port, &tr_tls, err, errlen)) ==
             NULL))
        goto error;
    if (!srv->acl_locked && !bind_is_loopback())
        log_warn("listening on %s:%u, not a loopback address, without "
                 "a password for the default user (requirepass or ACL): %s "
                 "(docs/OPERATIONS.md, Security)",
                 srv->cfg.bind,
                 srv->cfg.port != 0 ? srv->cfg.port : srv->cfg.tls_port,
                 srv->cfg.protected_mode
                     ? "protected mode refuses every client but loopback "
                       "ones (-DENIED) until requirepass is set, or "
                       "protected-mode no on a trusted network"
                     : "protected-mode is no, so anyone who can reach this "
                       "port can read and change every count");
    return 0;

error:
    if (listener)
        evconnlistener_free(listener);
    listener = NULL;
    if (tls_listener)
        evconnlistener_free(tls_listener);
    tls_listener = NULL;
    if (flush_ev)
        event_free(flush_ev);
    flush_ev = NULL;
    if (retry_ev)
        event_free(retry_ev);
    retry_ev = NULL;
    if (accept_ev)
        event_free(accept_ev);
    accept_ev = NULL;
    if (pause_ev)
        event_free(pause_ev);
    pause_ev = NULL;
    free(args);
    args = NULL;
    return -1;
}

void net_teardown(void)
{
    if (listener)
        evconnlistener_free(listener);
    listener = NULL;
    if (tls_listener)
        evconnlistener_free(tls_listener);
    tls_listener = NULL;
    while (conns != NULL)
        conn_close(conns);
    on_flush(-1, 0, NULL); /* frees connections closed while pending */
    if (flush_ev)
        event_free(flush_ev);
    flush_ev = NULL;
    if (retry_ev)
        event_free(retry_ev);
    retry_ev = NULL;
    if (accept_ev)
        event_free(accept_ev);
    accept_ev = NULL;
    if (pause_ev)
        event_free(pause_ev);
    pause_ev = NULL;
    srv->on_pause = NULL;
    srv->on_config = NULL;
    srv->on_unblock = NULL;
    srv->on_unblock_status = NULL;
    srv->on_badges = NULL;
    free(args);
    args = NULL;
}
