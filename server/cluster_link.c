/*
 * cluster_link.c - see cluster_link.h.
 *
 * The queue: q holds the frames not acknowledged yet, from q_head on, in
 * the order they were queued; msgs[] says where each ends, its id and
 * kind. q_sent is how far this connection has written. A connection
 * starts with a preamble of its own (AUTH when masterauth is set, then
 * this node's record, fresh), whose replies come first; then the queue
 * is written from q_head again. A reply answers the oldest frame in
 * flight (the server replies in order); a frame is dropped from the
 * queue when its reply arrives.
 */
#include "cluster_link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "cluster_copy.h"
#include "tls.h"
#include "transport.h"
#include "frame.h"
#include "log.h"
#include "ops.h"

#define BACKOFF_MIN_MS 100u
#define BACKOFF_MAX_MS 1000u
#define CONNECT_MAX_MS 5000u
#define READ_CHUNK (64u << 10)
#define MEET_WAITERS 8

enum link_state { L_DOWN, L_CONNECTING, L_HANDSHAKE, L_UP };
static const char *const state_names[] = {"down", "connecting", "handshake",
                                          "up"};

enum msg_kind { M_AUTH, M_RECORD, M_COPY };

struct msg {
    size_t end; /* its last byte + 1, in q */
    uint32_t id;
    uint8_t kind;
    uint64_t queued_ms; /* monotonic */
};

struct cluster_link {
    struct cluster *c;
    uint32_t node;
    struct tr_conn tr; /* TCP, or TLS with tls-cluster yes; tr.fd -1: none */
    enum link_state state;
    struct event *rev, *wev;
    bool want_write;
    /* The preamble of this connection: frames, and replies awaited. */
    struct ur_buf pre;
    size_t pre_sent;
    unsigned pre_kinds[2];
    unsigned npre, pre_done;
    /* The queue (see above). */
    struct ur_buf q;
    size_t q_head, q_sent;
    struct msg *msgs;
    size_t nmsgs, msg_first, msg_cap;
    struct ur_buf in;
    uint32_t next_id;
    uint64_t connect_ms, retry_ms, backoff_ms, sent_ms;
    bool settled, meet_failed, answered;
    struct session *waiters[MEET_WAITERS];
    unsigned nwaiters;
    uint64_t meet_deadline_ms;
    char why[128]; /* the last failure, for a MEET's error */
    void *sync;    /* cluster_copy.c */
};

static uint64_t now_ms(void)
{
    return server_mono_ms();
}

static struct cluster_node *peer(const struct cluster_link *l)
{
    return &l->c->nodes[l->node];
}

struct cluster_link *clink_create(struct cluster *c, uint32_t node)
{
    struct cluster_link *l = calloc(1, sizeof(*l));

    if (l == NULL)
        return NULL;
    l->c = c;
    l->node = node;
    l->tr.fd = -1;
    l->state = L_DOWN;
    l->backoff_ms = BACKOFF_MIN_MS;
    l->next_id = 1;
    return l;
}

uint32_t clink_node(const struct cluster_link *l)
{
    return l->node;
}

bool clink_up(const struct cluster_link *l)
{
    return l->state == L_UP;
}

bool clink_settled(const struct cluster_link *l)
{
    return l->settled;
}

bool clink_meet_failed(const struct cluster_link *l)
{
    return l->meet_failed;
}

void *clink_sync_state(const struct cluster_link *l)
{
    return l->sync;
}

void clink_set_sync_state(struct cluster_link *l, void *state)
{
    l->sync = state;
}

size_t clink_pending_bytes(const struct cluster_link *l)
{
    return l->q.len - l->q_head;
}

static void answer_waiters(struct cluster_link *l, uint16_t code,
                           const char *text)
{
    struct server *srv = l->c->srv;

    for (unsigned i = 0; i < l->nwaiters; i++) {
        struct session *s = l->waiters[i];

        s->blocked = false;
        if (srv->on_unblock_status != NULL)
            srv->on_unblock_status(srv, s, code, text);
    }
    l->nwaiters = 0;
}

/* Closes the connection; the queue stays for the next one. */
static void disconnect(struct cluster_link *l, const char *why)
{
    if (l->tr.fd >= 0) {
        event_free(l->rev);
        event_free(l->wev);
        l->rev = l->wev = NULL;
        tr_close(&l->tr);
        if (l->state == L_UP)
            log_info("cluster: link to %.40s (%s:%u) lost: %s", peer(l)->id,
                     peer(l)->ip, peer(l)->port, why);
    }
    snprintf(l->why, sizeof(l->why), "%s", why);
    l->state = L_DOWN;
    l->want_write = false;
    l->q_sent = l->q_head;
    ur_buf_deinit(&l->pre);
    ur_buf_deinit(&l->in);
    l->pre_sent = 0;
    l->npre = l->pre_done = 0;
    l->settled = true;
    l->retry_ms = now_ms() + l->backoff_ms;
    l->backoff_ms =
        l->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : l->backoff_ms * 2;
    if (l->nwaiters > 0 && !l->answered && (peer(l)->flags & CN_HANDSHAKE)) {
        char text[256];

        snprintf(text, sizeof(text), "cannot meet %s:%u: %s", peer(l)->ip,
                 peer(l)->port, why);
        answer_waiters(l, UR_E_ERR, text);
        l->meet_failed = true;
    }
}

void clink_destroy(struct cluster_link *l)
{
    if (l == NULL)
        return;
    if (l->nwaiters > 0)
        answer_waiters(l, UR_E_ERR, "the node was forgotten meanwhile");
    disconnect(l, "closed");
    ccopy_link_gone(l->c, l);
    ur_buf_deinit(&l->q);
    free(l->msgs);
    free(l);
}

void clink_address_changed(struct cluster_link *l)
{
    (void)l; /* the next connection reads the node's address again */
}

/* ---- queueing --------------------------------------------------------- */

static int msg_add(struct cluster_link *l, uint32_t id, uint8_t kind)
{
    if (l->msg_first + l->nmsgs == l->msg_cap) {
        if (l->msg_first > 0) {
            memmove(l->msgs, l->msgs + l->msg_first,
                    l->nmsgs * sizeof(*l->msgs));
            l->msg_first = 0;
        } else {
            size_t cap = l->msg_cap ? l->msg_cap * 2 : 64;
            struct msg *m = realloc(l->msgs, cap * sizeof(*m));

            if (m == NULL)
                return -1;
            l->msgs = m;
            l->msg_cap = cap;
        }
    }
    l->msgs[l->msg_first + l->nmsgs++] =
        (struct msg){l->q.len, id, kind, now_ms()};
    l->c->msgs_sent++;
    return 0;
}

/* The oldest message was acknowledged. */
static void msg_ack(struct cluster_link *l)
{
    l->q_head = l->msgs[l->msg_first].end;
    l->msg_first++;
    l->nmsgs--;
    if (l->nmsgs == 0) {
        l->q.len = l->q_head = l->q_sent = 0;
        l->msg_first = 0;
        if (l->q.cap > (1u << 20))
            ur_buf_deinit(&l->q);
    } else if (l->q_head > (64u << 10) && l->q_head > l->q.len / 2) {
        size_t cut = l->q_head;

        memmove(l->q.data, l->q.data + cut, l->q.len - cut);
        l->q.len -= cut;
        l->q_head = 0;
        l->q_sent -= cut;
        for (size_t i = 0; i < l->nmsgs; i++)
            l->msgs[l->msg_first + i].end -= cut;
    }
}

static void arm_write(struct cluster_link *l)
{
    if (l->tr.fd >= 0 && l->state != L_CONNECTING && !l->want_write) {
        event_add(l->wev, NULL);
        l->want_write = true;
    }
}

/* Where message i (counting from the oldest) starts in q. */
static size_t msg_start(const struct cluster_link *l, size_t i)
{
    return i == 0 ? l->q_head : l->msgs[l->msg_first + i - 1].end;
}

void clink_push_record(struct cluster_link *l)
{
    size_t hdr;
    uint32_t id;
    uint16_t argc;

    /* A record last in the queue and not written yet is replaced by the
     * current one: a burst of changes sends one record, not one each. */
    if (l->nmsgs > 0 && l->msgs[l->msg_first + l->nmsgs - 1].kind == M_RECORD &&
        msg_start(l, l->nmsgs - 1) >= l->q_sent) {
        l->q.len = msg_start(l, l->nmsgs - 1);
        l->nmsgs--;
    }
    id = l->next_id++;
    hdr = l->q.len;
    if (ur_frame_req_begin(&l->q, UR_OP_CLUSTER, id, &hdr) != 0)
        return;
    argc = cluster_put_record(l->c, &l->q, peer(l)->ip);
    ur_frame_req_end(&l->q, hdr, argc);
    if (msg_add(l, id, M_RECORD) != 0) {
        l->q.len = hdr;
        return;
    }
    arm_write(l);
}

int clink_queue_copy(struct cluster_link *l, uint16_t argc,
                     const struct ur_arg *argv, bool *overflow)
{
    uint64_t limit = l->c->srv->cfg.cluster_link_sendbuf_limit;
    size_t hdr, before = l->q.len;
    uint32_t id = l->next_id++;

    *overflow = false;
    if (limit != 0 && l->q.len - l->q_head > limit) {
        /* The peer is far behind: its copies go, a full sync replaces
         * them when it is back (records stay: they are few). */
        size_t keep = 0;

        for (size_t i = 0; i < l->nmsgs; i++)
            keep += l->msgs[l->msg_first + i].kind == M_RECORD;
        log_warn("cluster: link to %.40s holds %zu bytes (over "
                 "cluster-link-sendbuf-limit): its copies are dropped, a "
                 "full sync follows",
                 peer(l)->id, l->q.len - l->q_head);
        l->c->links_buffer_limit_exceeded++;
        disconnect(l, "over cluster-link-sendbuf-limit");
        l->q.len = l->q_head = l->q_sent = 0;
        l->nmsgs = l->msg_first = 0;
        if (keep > 0)
            clink_push_record(l);
        (void)before;
        *overflow = true;
        return -1;
    }
    if (ur_frame_req_begin(&l->q, UR_OP_GLOBALCOPY, id, &hdr) != 0 ||
        ur_frame_put_args(&l->q, argc, argv) != 0 ||
        msg_add(l, id, M_COPY) != 0) {
        l->q.len = before;
        return -1;
    }
    ur_frame_req_end(&l->q, hdr, argc);
    arm_write(l);
    return 0;
}

int clink_wait_meet(struct cluster_link *l, struct session *sess)
{
    if (l->nwaiters == MEET_WAITERS)
        return -1;
    l->waiters[l->nwaiters++] = sess;
    sess->blocked = true;
    l->meet_deadline_ms =
        now_ms() + (l->c->srv->cfg.cluster_node_timeout < CONNECT_MAX_MS
                        ? l->c->srv->cfg.cluster_node_timeout
                        : CONNECT_MAX_MS);
    if (l->state == L_DOWN)
        l->retry_ms = 0; /* at the next cron */
    return 0;
}

void clink_meet_cancel(struct cluster_link *l, const struct session *sess)
{
    for (unsigned i = 0; i < l->nwaiters; i++)
        if (l->waiters[i] == sess) {
            l->waiters[i] = l->waiters[--l->nwaiters];
            return;
        }
}

/* ---- the connection ---------------------------------------------------- */

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);

/* Builds the preamble: AUTH (masteruser/masterauth), this node's record. */
static int preamble(struct cluster_link *l)
{
    const struct config *cfg = &l->c->srv->cfg;
    size_t hdr;
    uint16_t argc;

    l->npre = l->pre_done = 0;
    l->pre_sent = 0;
    l->pre.len = 0;
    if (cfg->masterauth[0] != '\0') {
        if (ur_frame_req_begin(&l->pre, UR_OP_AUTH, l->next_id++, &hdr) != 0)
            return -1;
        argc = 1;
        if (cfg->masteruser[0] != '\0') {
            (void)ur_frame_put_arg_str(&l->pre, cfg->masteruser,
                                       strlen(cfg->masteruser));
            argc++;
        }
        (void)ur_frame_put_arg_str(&l->pre, cfg->masterauth,
                                   strlen(cfg->masterauth));
        ur_frame_req_end(&l->pre, hdr, argc);
        l->pre_kinds[l->npre++] = M_AUTH;
    }
    if (ur_frame_req_begin(&l->pre, UR_OP_CLUSTER, l->next_id++, &hdr) != 0)
        return -1;
    argc = cluster_put_record(l->c, &l->pre, peer(l)->ip);
    ur_frame_req_end(&l->pre, hdr, argc);
    l->pre_kinds[l->npre++] = M_RECORD;
    return 0;
}

static void link_connect(struct cluster_link *l)
{
    const struct cluster_node *n = peer(l);
    const struct tr_type *type = l->c->srv->cfg.tls_cluster ? &tr_tls : &tr_tcp;
    char err[256];

    l->connect_ms = now_ms();
    if (tr_connect(&l->tr, type, n->ip, n->port, err, sizeof(err)) != 0) {
        disconnect(l, err);
        return;
    }
    l->rev = event_new(l->c->base, l->tr.fd, EV_READ | EV_PERSIST, on_read, l);
    l->wev = event_new(l->c->base, l->tr.fd, EV_WRITE, on_write, l);
    if (l->rev == NULL || l->wev == NULL || preamble(l) != 0) {
        disconnect(l, "out of memory");
        return;
    }
    l->state = L_CONNECTING;
    event_add(l->wev, NULL); /* writable: connected (or failed) */
    l->want_write = true;
}

static void link_write(struct cluster_link *l);

/* The connect and (TLS) its handshake, a step on either event: the
 * preamble goes once bytes can flow. */
static void link_handshake(struct cluster_link *l)
{
    int rc = tr_handshake(&l->tr);

    if (rc < 0) {
        disconnect(l, tr_error(&l->tr));
        return;
    }
    if (rc > 0) {
        if (l->tr.want == TR_WANT_WRITE && !l->want_write) {
            event_add(l->wev, NULL);
            l->want_write = true;
        } else if (l->tr.want == TR_WANT_READ) {
            event_add(l->rev, NULL);
        }
        return;
    }
    l->state = L_HANDSHAKE;
    event_add(l->rev, NULL);
    link_write(l);
}

/* Writes the preamble, then the queue. */
static void link_write(struct cluster_link *l)
{
    for (;;) {
        const char *p;
        size_t n;
        ssize_t w;
        bool pre = l->pre_sent < l->pre.len;

        if (pre) {
            p = l->pre.data + l->pre_sent;
            n = l->pre.len - l->pre_sent;
        } else if (l->state == L_UP && l->q_sent < l->q.len) {
            p = l->q.data + l->q_sent;
            n = l->q.len - l->q_sent;
        } else {
            break;
        }
        w = tr_write(&l->tr, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!l->want_write) {
                event_add(l->wev, NULL);
                l->want_write = true;
            }
            return;
        }
        if (w <= 0) {
            disconnect(l, tr_error(&l->tr));
            return;
        }
        l->sent_ms = now_ms();
        l->c->srv->stats.net_out_bytes += (size_t)w;
        if (pre)
            l->pre_sent += (size_t)w;
        else
            l->q_sent += (size_t)w;
    }
    if (l->want_write) {
        event_del(l->wev);
        l->want_write = false;
    }
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    struct cluster_link *l = arg;

    (void)fd, (void)what;
    l->want_write = false;
    if (l->state == L_CONNECTING) {
        link_handshake(l);
        return;
    }
    link_write(l);
}

/* A record in a reply array (cluster.h's fields). */
static int merge_reply_record(struct cluster_link *l, struct ur_val_reader *rd,
                              uint32_t count)
{
    struct ur_val v[11];
    static uint16_t ranges[2 * UR_SLOTS];
    struct cluster_record rec;
    char err[128];

    if (count != 11)
        return -1;
    for (int i = 0; i < 11; i++)
        if (!ur_val_next(rd, &v[i]))
            return -1;
    for (int i = 0; i < 11; i++) {
        bool num = i == 2 || i == 3 || (i >= 6 && i <= 8);
        if (num ? v[i].kind != UR_VAL_INT : v[i].kind != UR_VAL_STR)
            return -1;
    }
    memset(&rec, 0, sizeof(rec));
    rec.id = v[0].str;
    rec.id_len = v[0].len;
    rec.ip = v[1].str;
    rec.ip_len = v[1].len;
    rec.port = v[2].num > 65535 ? 0 : (uint32_t)v[2].num;
    rec.cport = v[3].num > 65535 ? 0 : (uint32_t)v[3].num;
    rec.master = v[4].len == 6 && memcmp(v[4].str, "master", 6) == 0;
    rec.master_id = v[5].str;
    rec.master_id_len = v[5].len;
    rec.config_epoch = v[6].num;
    rec.current_epoch = v[7].num;
    rec.version = v[8].num;
    if (cluster_parse_ranges(v[9].str, v[9].len, ranges, 2 * UR_SLOTS,
                             &rec.nranges) != 0)
        return -1;
    rec.ranges = ranges;
    rec.slots_text = v[9].str;
    rec.slots_text_len = v[9].len;
    if (cluster_merge_record(l->c, &rec, l, err, sizeof(err)) != 0) {
        log_warn("cluster: a bad record from %s:%u: %s", peer(l)->ip,
                 peer(l)->port, err);
        return -1;
    }
    cluster_learn_list(l->c, v[10].str, v[10].len);
    return 0;
}

/* Transient refusals: the peer cannot take it now, but will. */
static bool transient(uint16_t code)
{
    return code == UR_E_MISCONF || code == UR_E_NOREPLICAS ||
           code == UR_E_OOM || code == UR_E_NOAUTH || code == UR_E_MASTERDOWN;
}

/* One reply, for the preamble's next frame or the oldest message. false
 * when the connection was closed. */
static bool on_reply(struct cluster_link *l, const struct ur_frame_hdr *h,
                     const char *body)
{
    struct ur_val_reader rd;
    struct ur_val v;
    unsigned kind;
    bool from_queue = l->pre_done >= l->npre;

    if (from_queue && l->nmsgs == 0) {
        disconnect(l, "a reply to no request");
        return false;
    }
    kind = from_queue ? l->msgs[l->msg_first].kind : l->pre_kinds[l->pre_done];
    ur_val_reader_init(&rd, body, h->len);
    if (!ur_val_next(&rd, &v)) {
        disconnect(l, "a malformed reply");
        return false;
    }
    l->c->msgs_received++;
    if (v.kind == UR_VAL_ERR) {
        char text[160];

        snprintf(text, sizeof(text), "%.*s", (int)(v.len < 150 ? v.len : 150),
                 v.str);
        if (kind == M_AUTH || kind == M_RECORD || transient(v.code)) {
            log_warn("cluster: node %s:%u refused %s: %s", peer(l)->ip,
                     peer(l)->port,
                     kind == M_AUTH     ? "AUTH (masteruser/masterauth)"
                     : kind == M_RECORD ? "this node's record"
                                        : "a global copy",
                     text);
            disconnect(l, text);
            return false;
        }
        /* A copy it cannot take (a replica now, a malformed one): it is
         * not retried for ever. */
        log_debug("cluster: node %s:%u dropped a global copy: %s", peer(l)->ip,
                  peer(l)->port, text);
    } else if (kind == M_RECORD) {
        if (v.kind != UR_VAL_ARR || merge_reply_record(l, &rd, v.count) != 0) {
            disconnect(l, "a malformed record in a reply");
            return false;
        }
    }
    if (!from_queue) {
        l->pre_done++;
        if (l->pre_done == l->npre) {
            l->state = L_UP;
            l->settled = true;
            l->answered = true;
            l->backoff_ms = BACKOFF_MIN_MS;
            ur_buf_deinit(&l->pre);
            l->pre_sent = 0;
            if (l->nwaiters > 0)
                answer_waiters(l, UR_E_OK, "OK");
            log_debug("cluster: link to %.40s (%s:%u) up", peer(l)->id,
                      peer(l)->ip, peer(l)->port);
            link_write(l);
            if (l->tr.fd < 0)
                return false;
        }
    } else {
        msg_ack(l);
    }
    return true;
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct cluster_link *l = arg;
    char buf[READ_CHUNK];
    ssize_t n;
    size_t pos = 0;

    (void)fd, (void)what;
    if (l->state == L_CONNECTING) {
        link_handshake(l);
        return;
    }
again:
    n = tr_read(&l->tr, buf, sizeof(buf));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        disconnect(l, n == 0 ? "closed by the peer" : tr_error(&l->tr));
        return;
    }
    if (n < 0)
        return;
    l->c->srv->stats.net_in_bytes += (size_t)n;
    if (ur_buf_append(&l->in, buf, (size_t)n) != 0) {
        disconnect(l, "out of memory");
        return;
    }
    for (;;) {
        struct ur_frame_hdr h;
        size_t used = 0, hint = 0;
        enum ur_parse st =
            ur_frame_parse_reply(l->in.data + pos, l->in.len - pos,
                                 UR_MAX_FRAME_CEILING, &h, &used, &hint);

        if (st == UR_PARSE_NEED_MORE)
            break;
        if (st != UR_PARSE_OK) {
            disconnect(l, "a malformed reply frame");
            return;
        }
        if (!on_reply(l, &h, l->in.data + pos + UR_FRAME_HDR))
            return;
        pos += used;
    }
    ur_buf_consume(&l->in, pos);
    if (tr_pending(&l->tr) > 0)
        goto again; /* TLS: decrypted already, which no event reports */
}

void clink_cron(struct cluster_link *l, uint64_t now)
{
    uint64_t timeout = l->c->srv->cfg.cluster_node_timeout;

    if (l->nwaiters > 0 && now >= l->meet_deadline_ms && !l->answered) {
        disconnect(l, "no answer in time");
        return;
    }
    switch (l->state) {
    case L_DOWN:
        if (now >= l->retry_ms && !l->meet_failed &&
            !(peer(l)->flags & CN_NOADDR))
            link_connect(l);
        break;
    case L_CONNECTING:
    case L_HANDSHAKE:
        if (now - l->connect_ms >
            (timeout < CONNECT_MAX_MS ? timeout : CONNECT_MAX_MS))
            disconnect(l, "connect timed out");
        break;
    case L_UP:
        if (l->nmsgs > 0 && l->q_sent > l->q_head &&
            now - l->msgs[l->msg_first].queued_ms > timeout &&
            now - l->sent_ms > timeout)
            disconnect(l, "no reply within cluster-node-timeout");
        break;
    }
}

void clink_flush(struct cluster_link *l)
{
    if (l->tr.fd >= 0 && l->state == L_UP && l->q_sent < l->q.len)
        link_write(l);
}

void clink_info(const struct cluster_link *l, struct clink_info *out)
{
    out->state = state_names[l->state];
    out->pending = l->nmsgs;
    out->pending_bytes = l->q.len - l->q_head;
    out->lag_ms = l->nmsgs ? now_ms() - l->msgs[l->msg_first].queued_ms : 0;
    out->syncing = l->sync != NULL;
}
