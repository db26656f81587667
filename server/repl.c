/*
 * repl.c - see repl.h; the bytes on the wire are in docs/PERSISTENCE.md,
 * "Replication".
 *
 * The primary side keeps one struct link per replica: the socket it took
 * over from net.c, what it still has to send (a reply line, the
 * snapshot's bytes, then the backlog from its cursor) and what the
 * replica acknowledged. The replica side is one outgoing connection with
 * a small state machine (repl_state), in the manner of Redis's
 * replication.c: connect, handshake, full sync or continue, stream.
 *
 * Both sides run in the loop thread, from their own libevent events and
 * from repl_cron; nothing here blocks except a full sync's load of the
 * snapshot on a replica (as Redis's disk load blocks).
 */
#include "repl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "acl.h"
#include "backlog.h"
#include "cluster_keys.h"
#include "journal.h"
#include "log.h"
#include "persist.h"
#include "replay.h"
#include "resp.h"
#include "tls.h"

/* A link writes at most this much per event before the loop serves
 * others (the write event brings it back at once). */
#define SEND_CHUNK (4u << 20)
#define READ_CHUNK (64u << 10)
/* A replica's unparsed input (REPLCONF ACK lines) past this: closed. */
#define LINK_IN_MAX (64u << 10)
/* A replica's link is tried again this often while down. */
#define RECONNECT_MS 1000
/* Links waiting for their snapshot get a newline this often, so that
 * neither end times out while a large one is written. */
#define KEEPALIVE_MS 1000
/* A replica acknowledges what it applied at most this often, unless the
 * primary asks (a heartbeat: a WAIT is pending there) or the replica's
 * cron finds an offset not yet acknowledged. Redis's replicas ACK once a
 * second; one ACK per applied batch cost the primary a wakeup and a read
 * per replica per loop turn, most of what two replicas cost it. */
#define ACK_EVERY_MS 100
/* A handshake reply line longer than this is not one. */
#define LINE_MAX 1024

enum link_state { LINK_WAIT_BGSAVE, LINK_SEND_BULK, LINK_ONLINE };

static const char *const link_state_names[] = {"wait_bgsave", "send_bulk",
                                               "online"};

struct link {
    struct repl *R;
    struct tr_conn tr; /* the replica's connection, taken over from net.c */
    struct event *rev, *wev;
    bool want_write;
    bool read_on_write; /* a TLS read waits for the socket to take bytes */
    bool getack;        /* a WAIT is pending: a heartbeat after the backlog */
    enum link_state state;
    struct ur_buf out; /* lines before the stream: replies, +FULLRESYNC,
                          the bulk header, keepalives, heartbeats */
    size_t out_sent;
    struct ur_buf in; /* unparsed REPLCONF lines */
    int snap_fd;      /* SEND_BULK: the snapshot, its size, sent so far */
    uint64_t snap_len, snap_sent;
    uint64_t save_no;   /* WAIT_BGSAVE: its save ends when persist's count
                           of ended saves reaches this; 0: not started */
    uint64_t need_from; /* WAIT_BGSAVE: the backlog must hold from here */
    struct backlog_cursor cur; /* SEND_BULK, ONLINE: next byte to send */
    uint64_t ack_off;          /* acknowledged offset */
    uint64_t ack_ms;           /* when (monotonic) */
    uint64_t sent_ms;          /* last write (heartbeats, keepalives) */
    uint32_t port;
    char ip[64];
    struct session sess;
    struct client cl;
    struct link *prev, *next;
};

struct waiter {
    struct session *sess;
    uint64_t off;      /* acknowledgements wanted up to here */
    uint32_t need;     /* ... from this many replicas */
    uint64_t deadline; /* monotonic ms; 0: none */
    struct waiter *next;
};

/* The replica's handshake: the reply awaited. */
enum hs_step { HS_PONG, HS_AUTH, HS_PORT, HS_IP, HS_CAPA, HS_PSYNC };

struct repl {
    struct server *srv;
    struct event_base *base;
    bool replica;
    struct backlog bl;
    bool bl_active;
    struct link *links;
    uint32_t nlinks;
    uint64_t seen_ended; /* persist's ended saves, as last looked at */
    struct waiter *waiters;
    struct event *wait_ev;
    struct ur_buf discard; /* pushes to a link (none are sent) */
    /* The replica side. */
    char host[CONFIG_STR_MAX];
    uint32_t port;
    enum repl_state state;
    enum hs_step hs;
    struct tr_conn tr; /* the link to the primary; tr.fd -1: none */
    struct event *mrev, *mwev;
    bool m_want_write;
    bool m_read_on_write; /* a TLS read waits for the socket to take bytes */
    struct ur_buf min, mout;
    size_t mout_sent;
    uint64_t connect_ms; /* last connect attempt (monotonic) */
    uint64_t last_io_ms; /* the primary's last bytes */
    uint64_t down_ms;    /* the link went down; 0: never up */
    int tmp_fd;          /* full sync: the snapshot being received */
    char tmp_path[4200];
    bool bulk_hdr; /* its "$len" line was read */
    uint64_t bulk_len, bulk_got, bulk_io_ms;
    char fr_id[SNAP_REPLID + 1]; /* +FULLRESYNC's id and offset */
    uint64_t fr_off;
    bool force_full; /* ask for a full sync next (an apply failed) */
    uint64_t acked;  /* offset last acknowledged */
    uint64_t ack_ms;
    bool ack_asked; /* a heartbeat came: acknowledge at this read's end */
    uint64_t primary_off;
    struct session msess;
    struct client mcl;
    bool mcl_on; /* mcl is in the registry */
    struct ur_arg *args;
    uint32_t cap;
    struct ur_buf scratch;
    /* INFO */
    uint64_t sync_full, partial_ok, partial_err, apply_errors;
    uint64_t in_bytes, out_bytes;
};

static uint64_t now_ms(void)
{
    return server_mono_ms();
}

static struct persist *P(const struct repl *R)
{
    return R->srv->persist;
}

/* ---- the backlog ------------------------------------------------------ */

/* The backlog exists from the first replica on (and always on a
 * replica), starting at the current offset; records are made for it even
 * with the journal off. */
static void backlog_on(struct repl *R)
{
    uint64_t off = P(R) != NULL ? persist_offset(P(R)) : 0;

    if (R->bl_active && R->bl.end == off)
        return;
    if (R->bl_active)
        backlog_deinit(&R->bl);
    backlog_init(&R->bl, off);
    R->bl_active = true;
    if (P(R) != NULL)
        persist_set_stream(P(R), true);
}

static void link_close(struct link *L, const char *why);

static void drop_links(struct repl *R, const char *why)
{
    while (R->links != NULL)
        link_close(R->links, why);
}

void repl_feed(struct server *srv, struct session *sess)
{
    struct repl *R = srv->repl;
    const char *payload;
    char hdr[JOURNAL_REC_HDR];
    uint64_t at;
    uint32_t n;

    if (srv->persist == NULL ||
        !persist_take_record(srv->persist, &payload, &n, &at))
        return;
    if (sess != NULL)
        sess->woff = at + JOURNAL_REC_HDR + n;
    if (R == NULL || !R->bl_active)
        return;
    journal_item_seal(hdr, payload, n, at);
    if (R->bl.end != at ||
        backlog_append(&R->bl, hdr, sizeof(hdr), payload, n) != 0) {
        log_error("replication backlog: %s at offset %llu; every replica "
                  "resyncs",
                  R->bl.end != at ? "out of step" : "out of memory",
                  (unsigned long long)at);
        drop_links(R, "backlog reset");
        backlog_deinit(&R->bl);
        backlog_init(&R->bl, at + JOURNAL_REC_HDR + n);
    }
}

/* ---- WAIT ------------------------------------------------------------- */

/* Replicas online that acknowledged off. */
static uint32_t acked(const struct repl *R, uint64_t off)
{
    uint32_t n = 0;

    for (const struct link *L = R->links; L != NULL; L = L->next)
        n += L->state == LINK_ONLINE && L->ack_off >= off;
    return n;
}

static void wait_arm(struct repl *R)
{
    uint64_t first = 0, now = now_ms();

    for (struct waiter *w = R->waiters; w != NULL; w = w->next)
        if (w->deadline != 0 && (first == 0 || w->deadline < first))
            first = w->deadline;
    event_del(R->wait_ev);
    if (first != 0) {
        uint64_t ms = first > now ? first - now : 0;
        const struct timeval tv = {(time_t)(ms / 1000),
                                   (suseconds_t)(ms % 1000) * 1000};
        evtimer_add(R->wait_ev, &tv);
    }
}

/* Ends the WAITs that are satisfied or due (all: every one), answering
 * each with its count. */
static void wait_check(struct repl *R, bool all)
{
    struct waiter *done = NULL, **pw = &R->waiters;
    uint64_t now = now_ms();

    while (*pw != NULL) {
        struct waiter *w = *pw;

        if (all || acked(R, w->off) >= w->need ||
            (w->deadline != 0 && now >= w->deadline)) {
            *pw = w->next;
            w->next = done;
            done = w;
        } else {
            pw = &w->next;
        }
    }
    while (done != NULL) {
        struct waiter *w = done;
        uint32_t count = acked(R, w->off);

        done = w->next;
        w->sess->blocked = false;
        if (R->srv->on_unblock != NULL)
            R->srv->on_unblock(R->srv, w->sess, count);
        free(w);
    }
    wait_arm(R);
}

static void on_wait_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    wait_check(arg, false);
}

static bool link_write(struct link *L);

/* A WAIT is pending: every online replica is asked for an
 * acknowledgement once it has the stream's end (link_write's heartbeat),
 * instead of waiting for its next periodic one. */
static void ask_acks(struct repl *R)
{
    struct link *L, *next;

    for (L = R->links; L != NULL; L = next) {
        next = L->next;
        if (L->state != LINK_ONLINE)
            continue;
        L->getack = true;
        if (!L->want_write)
            link_write(L);
    }
}

bool repl_wait(struct server *srv, struct session *sess, uint32_t numreplicas,
               uint64_t timeout_ms, uint64_t *count)
{
    struct repl *R = srv->repl;
    struct waiter *w;

    *count = R != NULL ? acked(R, sess->woff) : 0;
    if (R == NULL || *count >= numreplicas || sess->client == NULL ||
        srv->on_unblock == NULL)
        return true;
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return true; /* answers what it has now */
    w->sess = sess;
    w->off = sess->woff;
    w->need = numreplicas;
    w->deadline = timeout_ms != 0 ? now_ms() + timeout_ms : 0;
    w->next = R->waiters;
    R->waiters = w;
    sess->blocked = true;
    wait_arm(R);
    ask_acks(R);
    return false;
}

void repl_wait_cancel(struct server *srv, struct session *sess)
{
    struct repl *R = srv->repl;

    if (R == NULL)
        return;
    for (struct waiter **pw = &R->waiters; *pw != NULL; pw = &(*pw)->next) {
        if ((*pw)->sess == sess) {
            struct waiter *w = *pw;
            *pw = w->next;
            free(w);
            break;
        }
    }
    sess->blocked = false;
    wait_arm(R);
}

/* ---- refusals ------------------------------------------------------- */

/* Replicas online whose last acknowledgement is at most
 * min-replicas-max-lag seconds old. */
static uint32_t good_replicas(const struct repl *R)
{
    uint64_t now = now_ms(), lag = R->srv->cfg.min_replicas_max_lag * 1000ull;
    uint32_t n = 0;

    for (const struct link *L = R->links; L != NULL; L = L->next)
        n += L->state == LINK_ONLINE && now - L->ack_ms <= lag;
    return n;
}

static bool refuse_write(struct server *srv, struct reply *r)
{
    struct repl *R = srv->repl;

    if (R->replica) {
        reply_err(r, UR_E_READONLY,
                  "You can't write against a read only replica.");
        return true;
    }
    if (srv->cfg.min_replicas_to_write != 0 &&
        good_replicas(R) < srv->cfg.min_replicas_to_write) {
        reply_err(r, UR_E_NOREPLICAS, "Not enough good replicas to write.");
        return true;
    }
    return false;
}

bool repl_refuse(struct server *srv, const struct ur_op *op, struct reply *r)
{
    struct repl *R = srv->repl;

    if (R == NULL || srv->loading)
        return false;
    if (op->flags & OPF_WRITE)
        return refuse_write(srv, r);
    if (R->replica && !(op->flags & OPF_ADMIN) &&
        !srv->cfg.replica_serve_stale_data && R->state != RS_CONNECTED) {
        reply_err(r, UR_E_MASTERDOWN,
                  "Link with MASTER is down and replica-serve-stale-data is "
                  "set to 'no'.");
        return true;
    }
    return false;
}

bool repl_refuse_batch(struct server *srv, bool writes, struct reply *r)
{
    return srv->repl != NULL && !srv->loading && writes && refuse_write(srv, r);
}

/* ---- the primary side: links to replicas ------------------------------ */

static void link_io_bufs(const struct client *cl, struct client_bufs *out)
{
    const struct link *L =
        (const void *)((const char *)cl - offsetof(struct link, cl));

    out->qbuf = L->in.len;
    out->qbuf_cap = L->in.cap;
    out->obuf = L->out.len - L->out_sent;
    if (L->state != LINK_WAIT_BGSAVE && L->R->bl_active)
        out->obuf += L->R->bl.end - L->cur.off;
    out->obuf_cap = L->out.cap;
    out->reading = true;
    out->writing = L->want_write;
}

static void link_io_kill(struct client *cl)
{
    link_close((void *)((char *)cl - offsetof(struct link, cl)), "killed");
}

static struct ur_buf *io_push_out(struct client *cl)
{
    struct link *L = (void *)((char *)cl - offsetof(struct link, cl));

    L->R->discard.len = 0;
    return &L->R->discard;
}

static bool io_push_done(struct client *cl)
{
    (void)cl;
    return true;
}

static const struct client_io link_io = {link_io_bufs, link_io_kill,
                                         io_push_out, io_push_done};

static void link_close(struct link *L, const char *why)
{
    struct repl *R = L->R;

    log_info("replica %s:%u: link closed (%s)", L->ip, L->port, why);
    event_free(L->rev);
    event_free(L->wev);
    tr_close(&L->tr);
    if (L->snap_fd >= 0)
        close(L->snap_fd);
    clients_remove(R->srv, &L->cl);
    if (L->prev != NULL)
        L->prev->next = L->next;
    else
        R->links = L->next;
    if (L->next != NULL)
        L->next->prev = L->prev;
    R->nlinks--;
    ur_buf_deinit(&L->out);
    ur_buf_deinit(&L->in);
    free(L);
}

static void link_arm(struct link *L, bool on)
{
    if (on && !L->want_write)
        event_add(L->wev, NULL);
    else if (!on && L->want_write)
        event_del(L->wev);
    L->want_write = on;
}

/* Writes what L has to send, at most SEND_CHUNK bytes this time. false
 * when L was closed. */
static bool link_write(struct link *L)
{
    struct repl *R = L->R;
    size_t budget = SEND_CHUNK;

    while (budget > 0) {
        const char *p;
        size_t k;
        ssize_t n;

        if (L->out_sent < L->out.len) {
            n = tr_write(&L->tr, L->out.data + L->out_sent,
                         L->out.len - L->out_sent);
            if (n > 0) {
                L->out_sent += (size_t)n;
                goto wrote;
            }
            goto failed;
        }
        L->out.len = L->out_sent = 0;
        if (L->state == LINK_SEND_BULK) {
            if (L->snap_sent < L->snap_len) {
                off_t o = (off_t)L->snap_sent;
                uint64_t left = L->snap_len - L->snap_sent;

                n = tr_sendfile(&L->tr, L->snap_fd, &o,
                                left < budget ? (size_t)left : budget);
                if (n > 0) {
                    L->snap_sent += (uint64_t)n;
                    goto wrote;
                }
                if (n == 0) {
                    link_close(L, "snapshot shorter than its size");
                    return false;
                }
                goto failed;
            }
            close(L->snap_fd);
            L->snap_fd = -1;
            L->state = LINK_ONLINE;
            L->ack_ms = now_ms(); /* it loads the snapshot now */
            log_info("replica %s:%u: snapshot sent (%llu bytes), streaming",
                     L->ip, L->port, (unsigned long long)L->snap_len);
            continue;
        }
        if (L->state != LINK_ONLINE)
            break;
        k = backlog_peek(&R->bl, &L->cur, &p);
        if (k == 0 && L->getack) {
            /* Everything up to the end sent: the heartbeat that asks
             * for an acknowledgement of it. */
            char hb[JOURNAL_REC_HDR];

            L->getack = false;
            journal_item_seal(hb, "", 0, R->bl.end);
            if (ur_buf_append(&L->out, hb, sizeof(hb)) != 0)
                break;
            continue;
        }
        if (k == 0)
            break;
        n = tr_write(&L->tr, p, k < budget ? k : budget);
        if (n > 0) {
            backlog_skip(&L->cur, (size_t)n);
            goto wrote;
        }
        goto failed;
    wrote:
        budget -= (size_t)n < budget ? (size_t)n : budget;
        R->out_bytes += (uint64_t)n;
        R->srv->stats.net_out_bytes += (uint64_t)n;
        L->sent_ms = now_ms();
        continue;
    failed:
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            link_arm(L, true);
            return true;
        }
        link_close(L, n < 0 ? tr_error(&L->tr) : "closed");
        return false;
    }
    /* More left than this turn's share: the write event comes back. */
    link_arm(L, budget == 0);
    return true;
}

static void on_link_read(evutil_socket_t fd, short what, void *arg);

static void on_link_write(evutil_socket_t fd, short what, void *arg)
{
    struct link *L = arg;

    if (!L->read_on_write) {
        link_write(L);
        return;
    }
    /* The read that had to write first (TLS), after what waits to go. */
    L->read_on_write = false;
    if (link_write(L))
        on_link_read(fd, what, L);
}

/* One request from a replica: REPLCONF ACK offset is all that matters
 * (anything else after PSYNC is ignored, as Redis ignores it). */
static void link_request(struct link *L, uint32_t argc,
                         const struct ur_arg *argv)
{
    uint64_t off;

    if (argc >= 3 && argv[0].len == 8 &&
        strncasecmp(argv[0].str, "REPLCONF", 8) == 0 && argv[1].len == 3 &&
        strncasecmp(argv[1].str, "ACK", 3) == 0 &&
        ur_parse_u64(argv[2].str, argv[2].len, &off)) {
        if (off > L->ack_off)
            L->ack_off = off;
        L->ack_ms = now_ms();
        L->cl.last_ms = L->ack_ms;
    }
}

static void on_link_read(evutil_socket_t fd, short what, void *arg)
{
    struct link *L = arg;
    struct ur_limits lim = {LINE_MAX, 8, LINE_MAX};
    struct ur_arg argv[9];
    size_t off = 0;
    ssize_t n;

    (void)fd, (void)what;
    if (ur_buf_reserve(&L->in, READ_CHUNK) != 0) {
        link_close(L, "out of memory");
        return;
    }
    n = tr_read(&L->tr, L->in.data + L->in.len, L->in.cap - L->in.len);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (L->tr.want == TR_WANT_WRITE) { /* TLS: it must write first */
            L->read_on_write = true;
            link_arm(L, true);
        }
        return;
    }
    if (n <= 0) {
        link_close(L, n == 0 ? "closed by the replica" : tr_error(&L->tr));
        return;
    }
    L->in.len += (size_t)n;
    L->R->in_bytes += (uint64_t)n;
    L->R->srv->stats.net_in_bytes += (uint64_t)n;
    for (;;) {
        uint32_t argc = 0;
        size_t used = 0, hint = 0;
        enum ur_parse st = ur_resp_parse_request(
            L->in.data + off, L->in.len - off, &lim, argv, &argc, &used, &hint);

        if (st == UR_PARSE_NEED_MORE)
            break;
        if (st != UR_PARSE_OK) {
            link_close(L, "protocol error");
            return;
        }
        if (argc > 0)
            link_request(L, argc, argv);
        off += used;
    }
    ur_buf_consume(&L->in, off);
    if (L->in.len > LINK_IN_MAX) {
        link_close(L, "input over its limit");
        return;
    }
    if (L->R->waiters != NULL)
        wait_check(L->R, false);
    if (tr_pending(&L->tr) != 0)
        event_active(L->rev, EV_READ, 0); /* TLS: read ahead */
}

/* Where a partial resync of (id, from: the first byte it wants) can
 * start: true when the history is ours, or the one ours forked from up
 * to its fork, and the backlog holds everything after what it has. */
static bool can_continue(const struct repl *R, const char *id, uint64_t from)
{
    struct snap_origin o;
    uint64_t have = from - 1;

    if (!R->bl_active || from == 0 || P(R) == NULL)
        return false;
    persist_origin(P(R), &o);
    if (strcmp(id, o.replid) != 0 &&
        !(o.has2 && strcmp(id, o.replid2) == 0 && have <= o.offset2))
        return false;
    return have >= R->bl.start && have <= R->bl.end;
}

static void sync_start_save(struct repl *R);

/* A full sync for L: the running background save's snapshot when the
 * backlog holds the stream after its cut, else the next save's. */
static void sync_attach(struct repl *R, struct link *L)
{
    struct persist_save_state st;

    persist_save_state(P(R), &st);
    if (st.running && st.running_offset >= R->bl.start &&
        st.running_offset <= R->bl.end) {
        L->save_no = st.ended + 1;
        L->need_from = st.running_offset;
        persist_want_snapshot(P(R));
        return;
    }
    L->save_no = 0;
    L->need_from = R->bl.end;
    if (!st.running)
        sync_start_save(R);
}

/* Starts a background save for the links waiting for one. */
static void sync_start_save(struct repl *R)
{
    struct persist_save_state st;
    char err[512];
    struct link *L, *next;

    if (persist_bgsave(P(R), err, sizeof(err)) != 0) {
        for (L = R->links; L != NULL; L = next) {
            next = L->next;
            if (L->state == LINK_WAIT_BGSAVE && L->save_no == 0)
                link_close(L, err);
        }
        return;
    }
    persist_save_state(P(R), &st);
    persist_want_snapshot(P(R));
    for (L = R->links; L != NULL; L = L->next) {
        if (L->state == LINK_WAIT_BGSAVE && L->save_no == 0) {
            L->save_no = st.ended + 1;
            L->need_from = st.running_offset;
        }
    }
}

/* L's snapshot is ready: +FULLRESYNC, the bulk header, then the file. */
static void sync_send(struct link *L, int fd, const struct snap_origin *o)
{
    struct repl *R = L->R;
    char line[128];
    struct stat st;
    int n;

    L->snap_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (L->snap_fd < 0 || fstat(L->snap_fd, &st) != 0) {
        link_close(L, strerror(errno));
        return;
    }
    if (!backlog_seek(&R->bl, o->offset, &L->cur)) {
        link_close(L, "the backlog no longer holds the snapshot's offset");
        return;
    }
    L->snap_len = (uint64_t)st.st_size;
    L->snap_sent = 0;
    n = snprintf(line, sizeof(line), "+FULLRESYNC %s %llu\r\n$%llu\r\n",
                 o->replid, (unsigned long long)o->offset,
                 (unsigned long long)L->snap_len);
    if (ur_buf_append(&L->out, line, (size_t)n) != 0) {
        link_close(L, "out of memory");
        return;
    }
    L->state = LINK_SEND_BULK;
    log_info("replica %s:%u: full sync at offset %llu, snapshot of %llu "
             "bytes",
             L->ip, L->port, (unsigned long long)o->offset,
             (unsigned long long)L->snap_len);
    link_write(L);
}

/* Background saves ended: the links that waited for one get its snapshot
 * (or, when it failed, are closed: the replica asks again). */
static void sync_saved(struct repl *R, uint64_t ended)
{
    struct snap_origin o;
    uint64_t no = 0;
    int fd = persist_saved_snapshot(P(R), &o, &no);
    struct link *L, *next;

    for (L = R->links; L != NULL; L = next) {
        next = L->next;
        if (L->state != LINK_WAIT_BGSAVE || L->save_no == 0 ||
            L->save_no > ended)
            continue;
        if (fd >= 0 && no == L->save_no)
            sync_send(L, fd, &o);
        else
            link_close(L, "its background save failed");
    }
    if (fd >= 0)
        close(fd);
}

/* "ip" of an "ip:port" address. */
static void addr_ip(const char *addr, char *out, size_t cap)
{
    const char *colon = strrchr(addr, ':');
    size_t n = colon != NULL ? (size_t)(colon - addr) : strlen(addr);

    if (n >= cap)
        n = cap - 1;
    memcpy(out, addr, n);
    out[n] = '\0';
}

void repl_take_replica(struct server *srv, const struct tr_conn *tr,
                       const struct session *sess, const char *addr,
                       const char *laddr, const char *out, size_t n)
{
    struct repl *R = srv->repl;
    const struct repl_hs *hs = sess->repl_hs;
    struct tr_conn t = *tr;
    int fd = t.fd;
    struct link *L;

    if (R == NULL || hs == NULL || P(R) == NULL ||
        (L = calloc(1, sizeof(*L))) == NULL) {
        tr_close(&t);
        return;
    }
    L->R = R;
    L->tr = t;
    L->snap_fd = -1;
    L->port = hs->port;
    if (hs->ip[0] != '\0')
        snprintf(L->ip, sizeof(L->ip), "%s", hs->ip);
    else
        addr_ip(addr, L->ip, sizeof(L->ip));
    L->sess.id = sess->id;
    L->sess.proto = REPLY_RESP;
    L->sess.authed = true;
    L->sess.client = &L->cl;
    L->cl.sess = &L->sess;
    L->cl.io = &link_io;
    L->cl.fd = fd;
    snprintf(L->cl.addr, sizeof(L->cl.addr), "%s", addr);
    snprintf(L->cl.laddr, sizeof(L->cl.laddr), "%s", laddr);
    L->ack_ms = L->sent_ms = now_ms();
    L->rev = event_new(R->base, fd, EV_READ | EV_PERSIST, on_link_read, L);
    L->wev = event_new(R->base, fd, EV_WRITE | EV_PERSIST, on_link_write, L);
    if (L->rev == NULL || L->wev == NULL || event_add(L->rev, NULL) != 0 ||
        (n > 0 && ur_buf_append(&L->out, out, n) != 0)) {
        if (L->rev != NULL)
            event_free(L->rev);
        if (L->wev != NULL)
            event_free(L->wev);
        ur_buf_deinit(&L->out);
        tr_close(&L->tr);
        free(L);
        return;
    }
    /* the link stays the user it logged in as (masteruser): CLIENT
     * LIST shows it, ACL DELUSER closes it, as Redis */
    acl_session_copy(&L->sess, sess);
    clients_add(srv, &L->cl, server_now_ms());
    L->cl.flags |= CLIENT_REPLICA;
    L->next = R->links;
    if (L->next != NULL)
        L->next->prev = L;
    R->links = L;
    R->nlinks++;
    backlog_on(R);
    if (strcmp(hs->psync_id, "?") != 0 &&
        can_continue(R, hs->psync_id, hs->psync_from)) {
        struct snap_origin o;
        char line[64];
        int k;

        persist_origin(P(R), &o);
        k = snprintf(line, sizeof(line), "+CONTINUE %s\r\n", o.replid);
        backlog_seek(&R->bl, hs->psync_from - 1, &L->cur);
        L->ack_off = hs->psync_from - 1;
        L->state = LINK_ONLINE;
        R->partial_ok++;
        log_info("replica %s:%u: partial resync from offset %llu (%llu "
                 "bytes of backlog to send)",
                 L->ip, L->port, (unsigned long long)(hs->psync_from - 1),
                 (unsigned long long)(R->bl.end - L->cur.off));
        if (ur_buf_append(&L->out, line, (size_t)k) != 0) {
            link_close(L, "out of memory");
            return;
        }
        link_write(L);
        return;
    }
    if (strcmp(hs->psync_id, "?") != 0)
        R->partial_err++;
    R->sync_full++;
    L->state = LINK_WAIT_BGSAVE;
    log_info("replica %s:%u: full sync (asked for %s at %llu)", L->ip, L->port,
             hs->psync_id, (unsigned long long)hs->psync_from);
    sync_attach(R, L);
    link_write(L);
}

void repl_flush(struct server *srv)
{
    struct repl *R = srv->repl;
    struct link *L, *next;

    if (R == NULL || !R->bl_active)
        return;
    for (L = R->links; L != NULL; L = next) {
        next = L->next;
        if (L->state == LINK_ONLINE && !L->want_write && L->cur.off < R->bl.end)
            link_write(L);
    }
}

/* Every cron: keepalives and heartbeats, the replicas' timeouts, full
 * syncs whose save ended, the backlog's trim. */
static void links_cron(struct repl *R)
{
    const struct config *cfg = &R->srv->cfg;
    uint64_t now, keep, limit = cfg->repl_buffer_limit;
    struct persist_save_state st;
    struct link *L, *next;
    bool waiting = false;

    persist_save_state(P(R), &st);
    if (st.ended != R->seen_ended) {
        R->seen_ended = st.ended;
        sync_saved(R, st.ended);
    }
    /* After the snapshots went: a link that sent all of its snapshot
     * there starts its acknowledgement clock then, which must not look
     * later than now (an unsigned now - ack_ms would wrap). */
    now = now_ms();
    for (L = R->links; L != NULL; L = next) {
        next = L->next;
        if (L->state == LINK_WAIT_BGSAVE && L->save_no == 0)
            waiting = true;
        if (L->state == LINK_ONLINE &&
            now - L->ack_ms > (uint64_t)cfg->repl_timeout * 1000) {
            link_close(L, "timeout: no acknowledgement");
            continue;
        }
        if (L->out_sent < L->out.len || L->want_write)
            continue;
        if (L->state == LINK_WAIT_BGSAVE && now - L->sent_ms >= KEEPALIVE_MS) {
            if (ur_buf_append(&L->out, "\n", 1) == 0)
                link_write(L);
        } else if (L->state == LINK_ONLINE && L->cur.off == R->bl.end &&
                   now - L->sent_ms >= cfg->repl_ping_period * 1000ull) {
            char hb[JOURNAL_REC_HDR];

            journal_item_seal(hb, "", 0, R->bl.end);
            if (ur_buf_append(&L->out, hb, sizeof(hb)) == 0)
                link_write(L);
        }
    }
    if (waiting && !st.running)
        sync_start_save(R);
    if (!R->bl_active)
        return;
    /* Trim: keep repl-backlog-size bytes, and whatever a replica still
     * needs, unless that passes repl-buffer-limit: then the replicas
     * furthest behind go (they resync). */
    for (;;) {
        uint64_t low = UINT64_MAX;

        keep = R->bl.end > cfg->repl_backlog_size
                   ? R->bl.end - cfg->repl_backlog_size
                   : 0;
        for (L = R->links; L != NULL; L = L->next) {
            uint64_t need =
                L->state == LINK_WAIT_BGSAVE ? L->need_from : L->cur.off;
            if (need < low)
                low = need;
        }
        if (low < keep)
            keep = low;
        if (limit == 0 || R->bl.end - keep <= limit ||
            R->bl.end - keep <= cfg->repl_backlog_size)
            break;
        for (L = R->links; L != NULL; L = next) {
            uint64_t need =
                L->state == LINK_WAIT_BGSAVE ? L->need_from : L->cur.off;
            next = L->next;
            if (need == low)
                link_close(L, "over repl-buffer-limit behind");
        }
    }
    backlog_trim(&R->bl, keep);
}

/* ---- the replica side: the link to the primary ------------------------ */

static void master_io_bufs(const struct client *cl, struct client_bufs *out)
{
    const struct repl *R =
        (const void *)((const char *)cl - offsetof(struct repl, mcl));

    out->qbuf = R->min.len;
    out->qbuf_cap = R->min.cap;
    out->obuf = R->mout.len - R->mout_sent;
    out->obuf_cap = R->mout.cap;
    out->reading = true;
    out->writing = R->m_want_write;
}

static void master_drop(struct repl *R, const char *why);

static void master_io_kill(struct client *cl)
{
    master_drop((void *)((char *)cl - offsetof(struct repl, mcl)), "killed");
}

static struct ur_buf *master_push_out(struct client *cl)
{
    struct repl *R = (void *)((char *)cl - offsetof(struct repl, mcl));

    R->discard.len = 0;
    return &R->discard;
}

static const struct client_io master_io = {master_io_bufs, master_io_kill,
                                           master_push_out, io_push_done};

/* Closes the link to the primary: it is tried again in RECONNECT_MS
 * (while this is a replica). A full sync in progress is given up. */
static void master_drop(struct repl *R, const char *why)
{
    if (R->tr.fd < 0)
        return;
    if (R->state == RS_CONNECTED)
        R->down_ms = now_ms();
    log_warn("replication: link to the primary %s:%u closed (%s)", R->host,
             R->port, why);
    if (R->mrev != NULL)
        event_free(R->mrev);
    if (R->mwev != NULL)
        event_free(R->mwev);
    R->mrev = R->mwev = NULL;
    tr_close(&R->tr);
    R->m_want_write = false;
    R->m_read_on_write = false;
    if (R->mcl_on)
        clients_remove(R->srv, &R->mcl);
    R->mcl_on = false;
    if (R->tmp_fd >= 0) {
        close(R->tmp_fd);
        unlink(R->tmp_path);
        R->tmp_fd = -1;
    }
    ur_buf_deinit(&R->min);
    ur_buf_deinit(&R->mout);
    R->mout_sent = 0;
    R->state = R->replica ? RS_CONNECT : RS_NONE;
}

static void master_arm(struct repl *R, bool on)
{
    if (on && !R->m_want_write)
        event_add(R->mwev, NULL);
    else if (!on && R->m_want_write)
        event_del(R->mwev);
    R->m_want_write = on;
}

/* Writes what is queued to the primary. false when the link was
 * dropped. */
static bool master_write(struct repl *R)
{
    while (R->mout_sent < R->mout.len) {
        ssize_t n = tr_write(&R->tr, R->mout.data + R->mout_sent,
                             R->mout.len - R->mout_sent);

        if (n > 0) {
            R->mout_sent += (size_t)n;
            R->out_bytes += (uint64_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            master_arm(R, true);
            return true;
        }
        master_drop(R, n < 0 ? tr_error(&R->tr) : "closed");
        return false;
    }
    R->mout.len = R->mout_sent = 0;
    master_arm(R, false);
    return true;
}

/* Queues one command (its words) to the primary and writes. */
static bool master_send(struct repl *R, uint32_t argc, const char *const *argv)
{
    size_t lens[8];

    for (uint32_t i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    if (ur_resp_put_request(&R->mout, argc, argv, lens) != 0) {
        master_drop(R, "out of memory");
        return false;
    }
    return master_write(R);
}

static bool send_ack(struct repl *R)
{
    char off[24];
    const char *argv[3] = {"REPLCONF", "ACK", off};

    R->acked = persist_offset(P(R));
    R->ack_ms = now_ms();
    off[ur_fmt_u64(off, R->acked)] = '\0';
    return master_send(R, 3, argv);
}

/* The next handshake command after step hs's reply. */
static bool hs_next(struct repl *R)
{
    const struct config *cfg = &R->srv->cfg;
    char port[24], from[24];
    struct snap_origin o;

    switch (R->hs) {
    case HS_PONG:
        if (cfg->masterauth[0] != '\0') {
            const char *a[3] = {"AUTH", cfg->masteruser, cfg->masterauth};
            R->hs = HS_AUTH;
            return cfg->masteruser[0] != '\0'
                       ? master_send(R, 3, a)
                       : master_send(R, 2,
                                     (const char *[]){"AUTH", cfg->masterauth});
        }
        /* fall through */
    case HS_AUTH:
        /* Over TLS the port a peer reaches us on is tls-port, as Redis
         * announces it (sentinels connect to it). */
        port[ur_fmt_u64(port, cfg->replica_announce_port != 0
                                  ? cfg->replica_announce_port
                              : cfg->tls_replication ? cfg->tls_port
                                                     : cfg->port)] = '\0';
        R->hs = HS_PORT;
        return master_send(
            R, 3, (const char *[]){"REPLCONF", "listening-port", port});
    case HS_PORT:
        if (cfg->replica_announce_ip[0] != '\0') {
            R->hs = HS_IP;
            return master_send(R, 3,
                               (const char *[]){"REPLCONF", "ip-address",
                                                cfg->replica_announce_ip});
        }
        /* fall through */
    case HS_IP:
        R->hs = HS_CAPA;
        return master_send(R, 3,
                           (const char *[]){"REPLCONF", "capa", "psync2"});
    case HS_CAPA:
        R->hs = HS_PSYNC;
        persist_origin(P(R), &o);
        if (R->force_full)
            return master_send(R, 3, (const char *[]){"PSYNC", "?", "-1"});
        /* Nothing originated here since the history forked (a restart
         * as primary, then REPLICAOF): the history before the fork is
         * the one a primary may hold. */
        from[ur_fmt_u64(from, o.offset + 1)] = '\0';
        return master_send(
            R, 3,
            (const char *[]){
                "PSYNC", o.has2 && o.offset == o.offset2 ? o.replid2 : o.replid,
                from});
    case HS_PSYNC:
        break;
    }
    return true;
}

/* Words of a reply line (into words, at most max), split on spaces. */
static unsigned split(char *line, char **words, unsigned max)
{
    unsigned n = 0;

    for (char *p = strtok(line, " "); p != NULL && n < max;
         p = strtok(NULL, " "))
        words[n++] = p;
    return n;
}

static bool hex40(const char *s)
{
    if (strlen(s) != SNAP_REPLID)
        return false;
    for (int i = 0; i < SNAP_REPLID; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

static void connected(struct repl *R)
{
    R->state = RS_CONNECTED;
    R->force_full = false;
    R->down_ms = 0;
    send_ack(R);
}

/* The reply to PSYNC. false when the link was dropped. */
static bool psync_reply(struct repl *R, char *line)
{
    char *w[4];
    unsigned n = split(line, w, 4);
    struct snap_origin o;
    uint64_t off;

    if (n == 3 && strcmp(w[0], "+FULLRESYNC") == 0 && hex40(w[1]) &&
        ur_parse_u64(w[2], strlen(w[2]), &off)) {
        memcpy(R->fr_id, w[1], SNAP_REPLID + 1);
        R->fr_off = off;
        R->state = RS_SYNC;
        R->bulk_hdr = false;
        log_info("replication: full sync from %s:%u (history %s at offset "
                 "%llu)",
                 R->host, R->port, R->fr_id, (unsigned long long)off);
        return true;
    }
    if (n >= 1 && strcmp(w[0], "+CONTINUE") == 0) {
        persist_origin(P(R), &o);
        if (n >= 2 && hex40(w[1]) && strcmp(w[1], o.replid) != 0) {
            log_info("replication: the primary's history is %s now (ours "
                     "was %s): forked at offset %llu",
                     w[1], o.replid, (unsigned long long)o.offset);
            persist_history_fork(P(R), w[1]);
            /* Our own replicas learn it when they reconnect. */
            drop_links(R, "the history changed");
        }
        backlog_on(R);
        log_info("replication: partial resync with %s:%u from offset %llu",
                 R->host, R->port, (unsigned long long)o.offset);
        connected(R);
        return R->tr.fd >= 0;
    }
    master_drop(R, line);
    return false;
}

/* The snapshot arrived whole: it replaces the data. */
static bool sync_done(struct repl *R)
{
    char err[1024];
    struct snap_origin o;

    if (fsync(R->tmp_fd) != 0 || close(R->tmp_fd) != 0) {
        R->tmp_fd = -1;
        unlink(R->tmp_path);
        master_drop(R, "cannot write the snapshot received");
        return false;
    }
    R->tmp_fd = -1;
    drop_links(R, "full sync: the data is replaced");
    cluster_keys_replaced(R->srv);
    if (persist_adopt(P(R), R->tmp_path, err, sizeof(err)) != 0) {
        unlink(R->tmp_path);
        log_error("replication: %s", err);
        R->force_full = true;
        master_drop(R, "the snapshot could not be loaded");
        return false;
    }
    persist_origin(P(R), &o);
    if (strcmp(o.replid, R->fr_id) != 0 || o.offset != R->fr_off)
        log_warn("replication: the snapshot is at %s offset %llu, "
                 "+FULLRESYNC said %s offset %llu",
                 o.replid, (unsigned long long)o.offset, R->fr_id,
                 (unsigned long long)R->fr_off);
    /* What the data's expiry sweep knew is about the old data. */
    R->srv->expiry.running = false;
    R->srv->expiry.cursor = (struct db_day_cursor){0};
    if (R->bl_active)
        backlog_deinit(&R->bl);
    R->bl_active = false;
    backlog_on(R);
    connected(R);
    return R->tr.fd >= 0;
}

/* Applies the records in min; returns false when the link was dropped. */
static bool apply_stream(struct repl *R)
{
    struct server *srv = R->srv;
    size_t off = 0;
    bool applied = false, ok = true;

    for (;;) {
        struct journal_rec rec;
        const char *why = "";
        char err[512];
        size_t used = 0;
        int rc = journal_item_next(R->min.data + off, R->min.len - off,
                                   persist_offset(P(R)), &used, &rec, &why);

        if (rc == 0)
            break;
        if (rc < 0) {
            log_error("replication: bad stream from the primary at offset "
                      "%llu: %s",
                      (unsigned long long)persist_offset(P(R)), why);
            master_drop(R, "bad stream");
            ok = false;
            break;
        }
        if (rec.frame == NULL) {
            R->primary_off = rec.seq; /* a heartbeat: it wants an ACK */
            R->ack_asked = true;
            off += used;
            continue;
        }
        if (replay_record(srv, &rec, &R->args, &R->cap, &R->scratch, err,
                          sizeof(err)) != 0 ||
            persist_append_payload(P(R), R->min.data + off + JOURNAL_REC_HDR,
                                   (uint32_t)(used - JOURNAL_REC_HDR)) != 0) {
            R->apply_errors++;
            log_error("replication: the record at offset %llu cannot be "
                      "applied (%s): the settings that decide how commands "
                      "run (counter-types, limits) must be the same on the "
                      "primary and its replicas. A full sync follows",
                      (unsigned long long)persist_offset(P(R)),
                      err[0] ? err : strerror(errno));
            R->force_full = true;
            master_drop(R, "a record could not be applied");
            ok = false;
            break;
        }
        repl_feed(srv, NULL);
        if (rec.seq + used > R->primary_off)
            R->primary_off = rec.seq + used;
        off += used;
        applied = true;
    }
    if (ok)
        ur_buf_consume(&R->min, off);
    if (applied) {
        /* The turn's end for these records: the journal, then our own
         * replicas, then the acknowledgement (now if asked or due, else
         * from master_cron). */
        persist_flush(P(R));
        repl_flush(srv);
    }
    if (ok &&
        (R->ack_asked || (applied && now_ms() - R->ack_ms >= ACK_EVERY_MS))) {
        R->ack_asked = false;
        ok = send_ack(R);
    }
    return ok;
}

/* Opens the file a full sync's snapshot goes to (removed at start if a
 * crash leaves it: persistence removes snapshot.tmp.*). */
static bool bulk_open(struct repl *R)
{
    snprintf(R->tmp_path, sizeof(R->tmp_path), "%s/snapshot.tmp.sync.%d",
             R->srv->cfg.dir, (int)getpid());
    R->tmp_fd =
        open(R->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (R->tmp_fd < 0) {
        log_error("replication: cannot create %s: %s", R->tmp_path,
                  strerror(errno));
        master_drop(R, "cannot store the snapshot");
        return false;
    }
    return true;
}

/* Takes one line ("...\r\n" or a bare "\n") off min into line; false
 * when none is whole yet. */
static bool take_line(struct repl *R, char *line, size_t cap, bool *toolong)
{
    const char *nl = memchr(R->min.data, '\n', R->min.len);
    size_t n;

    *toolong = false;
    if (nl == NULL) {
        *toolong = R->min.len > LINE_MAX;
        return false;
    }
    n = (size_t)(nl - R->min.data);
    if (n > 0 && R->min.data[n - 1] == '\r')
        n--;
    if (n >= cap) {
        *toolong = true;
        return false;
    }
    memcpy(line, R->min.data, n);
    line[n] = '\0';
    ur_buf_consume(&R->min, (size_t)(nl - R->min.data) + 1);
    return true;
}

/* What min holds, by state. false when the link was dropped. */
static bool master_input(struct repl *R)
{
    char line[LINE_MAX + 1];
    bool toolong;
    uint64_t len;

    for (;;) {
        if (R->state == RS_CONNECTED)
            return apply_stream(R);
        if (R->state == RS_SYNC && R->bulk_hdr) {
            size_t k = R->min.len;

            if (k > R->bulk_len - R->bulk_got)
                k = (size_t)(R->bulk_len - R->bulk_got);
            if (k > 0 && write(R->tmp_fd, R->min.data, k) != (ssize_t)k) {
                master_drop(R, "cannot write the snapshot received");
                return false;
            }
            R->bulk_got += k;
            R->bulk_io_ms = now_ms();
            ur_buf_consume(&R->min, k);
            if (R->bulk_got < R->bulk_len)
                return true;
            if (!sync_done(R))
                return false;
            continue;
        }
        if (!take_line(R, line, sizeof(line), &toolong)) {
            if (toolong)
                master_drop(R, "reply line too long");
            return !toolong;
        }
        if (line[0] == '\0')
            continue; /* a keepalive */
        if (R->state == RS_SYNC) {
            if (line[0] != '$' ||
                !ur_parse_u64(line + 1, strlen(line + 1), &len)) {
                master_drop(R, "bad snapshot header");
                return false;
            }
            if (!bulk_open(R))
                return false;
            R->bulk_hdr = true;
            R->bulk_len = len;
            R->bulk_got = 0;
            continue;
        }
        /* The handshake's replies. An error to PING is fine when it asks
         * for AUTH, which comes next, as in Redis. */
        if (R->hs == HS_PSYNC) {
            if (!psync_reply(R, line))
                return false;
            continue;
        }
        if (line[0] == '-' &&
            !(R->hs == HS_PONG && strncmp(line, "-NOAUTH", 7) == 0) &&
            R->hs != HS_PORT && R->hs != HS_IP && R->hs != HS_CAPA) {
            log_error("replication: the primary %s:%u answered %s", R->host,
                      R->port, line);
            master_drop(R, R->hs == HS_AUTH ? "AUTH refused (masterauth)"
                                            : "handshake refused");
            return false;
        }
        if (!hs_next(R))
            return false;
    }
}

static void master_connected(struct repl *R);

/* The connect, then the transport's handshake (TLS, tls-replication),
 * one step per event: the events follow what it waits for. */
static void master_handshake(struct repl *R)
{
    int rc = tr_handshake(&R->tr);

    if (rc < 0) {
        master_drop(R, tr_error(&R->tr));
        return;
    }
    if (rc > 0) {
        master_arm(R, R->tr.want == TR_WANT_WRITE);
        return;
    }
    master_arm(R, false);
    master_connected(R);
}

static void on_master_read(evutil_socket_t fd, short what, void *arg)
{
    struct repl *R = arg;
    ssize_t n;

    (void)fd, (void)what;
    if (R->state == RS_CONNECTING) {
        master_handshake(R);
        return;
    }
    if (ur_buf_reserve(&R->min, READ_CHUNK) != 0) {
        master_drop(R, "out of memory");
        return;
    }
    n = tr_read(&R->tr, R->min.data + R->min.len, R->min.cap - R->min.len);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (R->tr.want == TR_WANT_WRITE) { /* TLS: it must write first */
            R->m_read_on_write = true;
            master_arm(R, true);
        }
        return;
    }
    if (n <= 0) {
        master_drop(R, n == 0 ? "closed by the primary" : tr_error(&R->tr));
        return;
    }
    R->min.len += (size_t)n;
    R->in_bytes += (uint64_t)n;
    R->srv->stats.net_in_bytes += (uint64_t)n;
    R->last_io_ms = now_ms();
    R->mcl.last_ms = server_now_ms();
    if (master_input(R) && tr_pending(&R->tr) != 0)
        event_active(R->mrev, EV_READ, 0); /* TLS: read ahead */
}

static void on_master_write(evutil_socket_t fd, short what, void *arg)
{
    struct repl *R = arg;

    if (R->state == RS_CONNECTING) {
        master_handshake(R);
        return;
    }
    if (!R->m_read_on_write) {
        master_write(R);
        return;
    }
    /* The read that had to write first (TLS), after what waits to go. */
    R->m_read_on_write = false;
    if (master_write(R))
        on_master_read(fd, what, R);
}

/* The link to the primary is up (and, over TLS, the primary's certificate
 * verified): the replication handshake starts with PING. */
static void master_connected(struct repl *R)
{
    R->state = RS_HANDSHAKE;
    R->hs = HS_PONG;
    R->last_io_ms = now_ms();
    log_info("replication: connected to the primary %s:%u%s", R->host, R->port,
             R->tr.type == &tr_tcp ? "" : " over TLS");
    master_send(R, 1, (const char *[]){"PING"});
}

/* Registers the link to the primary as a client (CLIENT LIST's flags=M). */
static void master_register(struct repl *R)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char host[64] = "?";
    int port = 0;

    memset(&R->mcl, 0, sizeof(R->mcl));
    memset(&R->msess, 0, sizeof(R->msess));
    R->msess.id = ++R->srv->next_client_id;
    R->msess.proto = REPLY_RESP;
    R->msess.authed = true;
    R->msess.client = &R->mcl;
    R->mcl.sess = &R->msess;
    R->mcl.io = &master_io;
    R->mcl.fd = R->tr.fd;
    snprintf(R->mcl.addr, sizeof(R->mcl.addr), "%.46s:%u", R->host, R->port);
    if (getsockname(R->tr.fd, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET) {
            const struct sockaddr_in *in = (const void *)&ss;
            inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
            port = ntohs(in->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            const struct sockaddr_in6 *in6 = (const void *)&ss;
            inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
            port = ntohs(in6->sin6_port);
        }
    }
    snprintf(R->mcl.laddr, sizeof(R->mcl.laddr), "%.46s:%d", host, port);
    clients_add(R->srv, &R->mcl, server_now_ms());
    R->mcl.flags |= CLIENT_MASTER;
    R->mcl_on = true;
}

/* Starts connecting to the primary (a name is resolved here, blocking,
 * as Redis does). On failure the state stays CONNECT: the cron tries
 * again. */
static void master_connect(struct repl *R)
{
    const struct tr_type *type =
        R->srv->cfg.tls_replication ? &tr_tls : &tr_tcp;
    char err[512];

    R->connect_ms = now_ms();
    if (tr_connect(&R->tr, type, R->host, R->port, err, sizeof(err)) != 0) {
        R->tr.fd = -1;
        log_debug("replication: %s", err);
        return;
    }
    R->mrev =
        event_new(R->base, R->tr.fd, EV_READ | EV_PERSIST, on_master_read, R);
    R->mwev =
        event_new(R->base, R->tr.fd, EV_WRITE | EV_PERSIST, on_master_write, R);
    if (R->mrev == NULL || R->mwev == NULL || event_add(R->mrev, NULL) != 0) {
        master_drop(R, "out of memory");
        return;
    }
    R->state = RS_CONNECTING;
    R->last_io_ms = now_ms();
    master_register(R);
    master_arm(R, true);
}

static void master_cron(struct repl *R)
{
    uint64_t now = now_ms();
    uint64_t timeout = R->srv->cfg.repl_timeout * 1000ull;

    if (!R->replica)
        return;
    if (R->state == RS_CONNECT) {
        if (now - R->connect_ms >= RECONNECT_MS)
            master_connect(R);
        return;
    }
    if (now - R->last_io_ms > timeout) {
        master_drop(R, "timeout: nothing from the primary");
        return;
    }
    if (R->state == RS_CONNECTED &&
        (now - R->ack_ms >= R->srv->cfg.repl_ping_period * 1000ull ||
         R->acked != persist_offset(P(R))))
        send_ack(R);
}

/* ---- roles -------------------------------------------------------------- */

static void become_replica(struct repl *R, const char *host, uint32_t port)
{
    struct server *srv = R->srv;

    snprintf(R->host, sizeof(R->host), "%s", host);
    R->port = port;
    R->replica = true;
    srv->readonly_data = true;
    snprintf(srv->cfg.replicaof, sizeof(srv->cfg.replicaof), "%s %u", host,
             port);
    backlog_on(R);
    R->state = RS_CONNECT;
    R->connect_ms = 0;
    log_info("replication: replica of %s:%u", host, port);
    master_connect(R);
}

int repl_set_replica_of(struct server *srv, const char *host, uint32_t port,
                        char *err, size_t errlen)
{
    struct repl *R = srv->repl;

    if (R == NULL || srv->persist == NULL) {
        snprintf(err, errlen, "replication needs the server's network");
        return -1;
    }
    if (R->replica && strcmp(R->host, host) == 0 && R->port == port)
        return 1;
    if (R->replica) {
        master_drop(R, "REPLICAOF: another primary");
    } else {
        /* As Redis: blocked WAITs answer, and our replicas reconnect (to
         * resync with us partially). */
        wait_check(R, true);
        drop_links(R, "this server becomes a replica");
    }
    R->down_ms = 0;
    become_replica(R, host, port);
    return 0;
}

void repl_set_primary(struct server *srv)
{
    struct repl *R = srv->repl;

    if (R == NULL || !R->replica)
        return;
    R->replica = false;
    master_drop(R, "REPLICAOF NO ONE");
    R->state = RS_NONE;
    srv->readonly_data = false;
    srv->cfg.replicaof[0] = '\0';
    /* A new history: what this server writes now is not what the old
     * primary may have written after the same offset. */
    persist_history_fork(srv->persist, NULL);
    drop_links(R, "promoted: the history changed");
    {
        struct snap_origin o;

        persist_origin(srv->persist, &o);
        log_info("replication: promoted to primary: history %s from offset "
                 "%llu (the old one, %s, up to there)",
                 o.replid, (unsigned long long)o.offset, o.replid2);
    }
}

/* ---- the process -------------------------------------------------------- */

int repl_setup(struct server *srv, struct event_base *base, char *err,
               size_t errlen)
{
    struct repl *R = calloc(1, sizeof(*R));
    char host[CONFIG_STR_MAX];
    uint32_t port;

    if (R == NULL ||
        (R->wait_ev = evtimer_new(base, on_wait_timer, R)) == NULL) {
        free(R);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    R->srv = srv;
    R->base = base;
    R->tr.fd = R->tmp_fd = -1;
    R->tr.type = &tr_tcp;
    srv->repl = R;
    if (srv->persist != NULL)
        R->seen_ended = 0;
    if (config_replicaof(&srv->cfg, host, sizeof(host), &port) == 0 &&
        srv->persist != NULL) {
        become_replica(R, host, port);
    } else if (srv->persist != NULL && persist_offset(srv->persist) != 0) {
        /* A primary from the start: a new history (repl.h). Data that
         * has no stream yet has nothing a replica could hold more of. */
        persist_history_fork(srv->persist, NULL);
    }
    return 0;
}

void repl_teardown(struct server *srv)
{
    struct repl *R = srv->repl;

    if (R == NULL)
        return;
    R->replica = false;
    master_drop(R, "shutdown");
    drop_links(R, "shutdown");
    while (R->waiters != NULL) {
        struct waiter *w = R->waiters;
        R->waiters = w->next;
        w->sess->blocked = false;
        free(w);
    }
    event_free(R->wait_ev);
    if (R->bl_active)
        backlog_deinit(&R->bl);
    free(R->args);
    ur_buf_deinit(&R->scratch);
    ur_buf_deinit(&R->discard);
    free(R);
    srv->repl = NULL;
}

void repl_cron(struct server *srv)
{
    struct repl *R = srv->repl;

    if (R == NULL || srv->persist == NULL)
        return;
    links_cron(R);
    master_cron(R);
}

/* ---- INFO and ROLE --------------------------------------------------------
 */

const char *repl_state_name(enum repl_state st)
{
    static const char *const names[] = {"none",      "connect", "connecting",
                                        "handshake", "sync",    "connected"};
    return names[st];
}

void repl_info(const struct server *srv, struct repl_info *o)
{
    const struct repl *R = srv->repl;
    uint64_t now = now_ms();

    memset(o, 0, sizeof(*o));
    o->down_since_s = -1;
    o->last_io_s = -1;
    o->sync_last_io_s = -1;
    if (R == NULL)
        return;
    o->replica = R->replica;
    o->host = R->host;
    o->port = R->port;
    o->state = R->state;
    if (R->state != RS_CONNECT && R->state != RS_NONE)
        o->last_io_s = (int64_t)((now - R->last_io_ms) / 1000);
    if (R->down_ms != 0)
        o->down_since_s = (int64_t)((now - R->down_ms) / 1000);
    if (R->state == RS_SYNC && R->bulk_hdr) {
        o->sync_total = R->bulk_len;
        o->sync_read = R->bulk_got;
        o->sync_last_io_s = (int64_t)((now - R->bulk_io_ms) / 1000);
    }
    o->primary_offset = R->primary_off;
    o->replicas = R->nlinks;
    o->good_replicas = good_replicas(R);
    o->backlog_active = R->bl_active;
    o->backlog_first = R->bl_active ? R->bl.start + 1 : 0;
    o->backlog_histlen = R->bl_active ? backlog_histlen(&R->bl) : 0;
    o->backlog_bytes = R->bl_active ? backlog_bytes(&R->bl) : 0;
    o->sync_full = R->sync_full;
    o->sync_partial_ok = R->partial_ok;
    o->sync_partial_err = R->partial_err;
    o->apply_errors = R->apply_errors;
    o->repl_in_bytes = R->in_bytes;
    o->repl_out_bytes = R->out_bytes;
}

void repl_replicas(const struct server *srv, repl_replica_fn fn, void *ctx)
{
    const struct repl *R = srv->repl;
    uint64_t now = now_ms();

    if (R == NULL)
        return;
    for (const struct link *L = R->links; L != NULL; L = L->next) {
        struct repl_replica rr = {L->ip, L->port, link_state_names[L->state],
                                  L->ack_off, (now - L->ack_ms) / 1000};
        fn(&rr, ctx);
    }
}
