/*
 * unread_pubsub.c - subscriptions with a callback (unread_pubsub.h):
 * the table both faces share, where a subscription lives in a cluster,
 * the dispatch of push frames, and the synchronous face's subscription
 * connections and receive loop. The asynchronous face's requests and
 * reconnects are unread_async.c's (ua_ps_send).
 */
#include "unread_pubsub.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "proto.h"
#include "unread_core.h"
#include "unread_int.h"
#include "unread_round.h"

/* A subscription's callback, of the face that made it. */
union ps_cb {
    unread_message_cb *sync;
    unread_async_message_cb *async;
};

/* One subscription: a channel (on a hash chain) or a pattern (on the
 * pattern list). */
struct ps_sub {
    struct ps_sub *next;
    union ps_cb cb;
    void *priv;
    size_t len;
    char name[]; /* len bytes and a NUL */
};

struct uc_pubsub {
    bool async;
    struct ps_sub **bucket; /* nbucket chains of channels */
    size_t nbucket, nchan;
    struct ps_sub *pat; /* the patterns */
    size_t npat;

    /* the synchronous face: one subscription connection per server */
    struct uc_conn *conn;
    int64_t *retry_at; /* a lost connection: no attempt before (ms) */
    int *backoff_ms;
    struct ur_buf pending; /* pushes read, not yet delivered: */
    size_t pending_pos;    /* [u32 server][u32 len][body]... */
    bool listening, stop;
};

#define PS_BUCKETS_MIN 16

/* ---- The table ---------------------------------------------------------- */

static uint64_t ps_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static struct uc_pubsub *ps_get(struct uc_core *k, bool async)
{
    struct uc_pubsub *ps = k->ps;
    size_t s;

    if (ps != NULL)
        return ps;
    ps = calloc(1, sizeof(*ps));
    if (ps == NULL)
        return NULL;
    ps->async = async;
    ps->nbucket = PS_BUCKETS_MIN;
    ps->bucket = calloc(ps->nbucket, sizeof(*ps->bucket));
    ur_buf_init(&ps->pending);
    if (ps->bucket == NULL)
        goto error;
    if (!async) {
        ps->conn = calloc(k->nsrv, sizeof(*ps->conn));
        ps->retry_at = calloc(k->nsrv, sizeof(*ps->retry_at));
        ps->backoff_ms = calloc(k->nsrv, sizeof(*ps->backoff_ms));
        if (ps->conn == NULL || ps->retry_at == NULL || ps->backoff_ms == NULL)
            goto error;
        for (s = 0; s < k->nsrv; s++) {
            uc_conn_init(&ps->conn[s], &k->addr[s]);
            ps->conn[s].password = k->opt.password;
            ps->conn[s].tls = k->tls;
            ps->backoff_ms[s] = k->opt.reconnect_min_ms;
        }
    }
    k->ps = ps;
    return ps;

error:
    free(ps->bucket);
    free(ps->conn);
    free(ps->retry_at);
    free(ps->backoff_ms);
    free(ps);
    return NULL;
}

void uc_ps_free(struct uc_core *k)
{
    struct uc_pubsub *ps = k->ps;
    struct ps_sub *p, *next;
    size_t i;

    if (ps == NULL)
        return;
    for (i = 0; i < ps->nbucket; i++)
        for (p = ps->bucket[i]; p != NULL; p = next) {
            next = p->next;
            free(p);
        }
    for (p = ps->pat; p != NULL; p = next) {
        next = p->next;
        free(p);
    }
    if (ps->conn != NULL)
        for (i = 0; i < k->nsrv; i++)
            uc_conn_deinit(&ps->conn[i]);
    ur_buf_deinit(&ps->pending);
    free(ps->bucket);
    free(ps->conn);
    free(ps->retry_at);
    free(ps->backoff_ms);
    free(ps);
    k->ps = NULL;
}

/* The link that points at the subscription named s[0..n), or at the NULL
 * ending its chain (list). */
static struct ps_sub **ps_find(struct uc_pubsub *ps, bool pattern,
                               const char *s, size_t n)
{
    struct ps_sub **pp;

    pp = pattern ? &ps->pat : &ps->bucket[ps_hash(s, n) % ps->nbucket];
    for (; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->len == n && memcmp((*pp)->name, s, n) == 0)
            break;
    return pp;
}

/* Doubles the channel table when its chains grow long; a failure only
 * keeps them long. */
static void ps_grow(struct uc_pubsub *ps)
{
    struct ps_sub **b, *p, *next;
    size_t n = ps->nbucket * 2, i, h;

    if (ps->nchan < ps->nbucket * 2 || (b = calloc(n, sizeof(*b))) == NULL)
        return;
    for (i = 0; i < ps->nbucket; i++)
        for (p = ps->bucket[i]; p != NULL; p = next) {
            next = p->next;
            h = ps_hash(p->name, p->len) % n;
            p->next = b[h];
            b[h] = p;
        }
    free(ps->bucket);
    ps->bucket = b;
    ps->nbucket = n;
}

/* Adds (or updates) a subscription: 1 new, 0 updated, -1 out of memory. */
static int ps_add(struct uc_pubsub *ps, bool pattern, const char *name,
                  union ps_cb cb, void *priv)
{
    size_t n = strlen(name);
    struct ps_sub **pp = ps_find(ps, pattern, name, n), *p;

    if (*pp != NULL) {
        (*pp)->cb = cb;
        (*pp)->priv = priv;
        return 0;
    }
    p = malloc(sizeof(*p) + n + 1);
    if (p == NULL)
        return -1;
    p->next = NULL;
    p->cb = cb;
    p->priv = priv;
    p->len = n;
    memcpy(p->name, name, n + 1);
    *pp = p;
    if (pattern) {
        ps->npat++;
    } else {
        ps->nchan++;
        ps_grow(ps);
    }
    return 1;
}

/* Removes a subscription: whether there was one. */
static bool ps_del(struct uc_pubsub *ps, bool pattern, const char *name)
{
    struct ps_sub **pp = ps_find(ps, pattern, name, strlen(name)), *p = *pp;

    if (p == NULL)
        return false;
    *pp = p->next;
    free(p);
    if (pattern)
        ps->npat--;
    else
        ps->nchan--;
    return true;
}

/* Removes every channel, or every pattern. */
static void ps_clear(struct uc_pubsub *ps, bool pattern)
{
    struct ps_sub *p, *next;
    size_t i;

    if (pattern) {
        for (p = ps->pat; p != NULL; p = next) {
            next = p->next;
            free(p);
        }
        ps->pat = NULL;
        ps->npat = 0;
        return;
    }
    for (i = 0; i < ps->nbucket; i++) {
        for (p = ps->bucket[i]; p != NULL; p = next) {
            next = p->next;
            free(p);
        }
        ps->bucket[i] = NULL;
    }
    ps->nchan = 0;
}

/* Cluster mode routes no subscriptions (docs/CLIENT.md section 16). */
#define CLUSTER_NO_SUBS                                                        \
    "cluster mode: subscriptions are not routed; subscribe with a handle "     \
    "on each node"

/* ---- Where subscriptions live -------------------------------------------- */

uint32_t uc_ps_home(const struct uc_core *k, const char *ch, size_t len)
{
    uint64_t uid;

    if (k->nsrv > 1 && len > 6 && memcmp(ch, "badge:", 6) == 0 &&
        ur_parse_u64(ch + 6, len - 6, &uid) &&
        (ch[6] != '0' || len == 7)) /* canonical: no leading zero */
        return (uint32_t)uc_ring_find(&k->ring, uid);
    return UC_FIRST_SERVER;
}

bool uc_ps_wants(const struct uc_core *k, uint32_t s)
{
    const struct uc_pubsub *ps = k->ps;
    const struct ps_sub *p;
    size_t i;

    if (ps == NULL)
        return false;
    if (ps->npat > 0)
        return true;
    if (ps->nchan == 0)
        return false;
    if (k->nsrv == 1)
        return true;
    for (i = 0; i < ps->nbucket; i++)
        for (p = ps->bucket[i]; p != NULL; p = p->next)
            if (uc_ps_home(k, p->name, p->len) == s)
                return true;
    return false;
}

int uc_ps_frames(struct uc_core *k, uint32_t s,
                 int (*send)(void *ctx, uint16_t op, unsigned argc,
                             const struct unread_arg *argv),
                 void *ctx)
{
    struct unread_arg argv[UC_PS_CHUNK];
    struct uc_pubsub *ps = k->ps;
    struct ps_sub *p;
    unsigned n = 0;
    size_t i;
    int rc;

    if (ps == NULL)
        return 0;
    for (i = 0; i < ps->nbucket; i++) {
        for (p = ps->bucket[i]; p != NULL; p = p->next) {
            if (uc_ps_home(k, p->name, p->len) != s)
                continue;
            argv[n++] = unread_arg_str(p->name, p->len);
            if (n == UC_PS_CHUNK) {
                if ((rc = send(ctx, UR_OP_SUBSCRIBE, n, argv)) != 0)
                    return rc;
                n = 0;
            }
        }
    }
    if (n > 0 && (rc = send(ctx, UR_OP_SUBSCRIBE, n, argv)) != 0)
        return rc;
    n = 0;
    for (p = ps->pat; p != NULL; p = p->next) {
        argv[n++] = unread_arg_str(p->name, p->len);
        if (n == UC_PS_CHUNK || p->next == NULL) {
            if ((rc = send(ctx, UR_OP_PSUBSCRIBE, n, argv)) != 0)
                return rc;
            n = 0;
        }
    }
    return 0;
}

/* ---- Delivery ---------------------------------------------------------- */

static bool is_str(const struct ur_val *v, const char *s)
{
    return v->kind == UR_VAL_STR && v->len == strlen(s) &&
           memcmp(v->str, s, v->len) == 0;
}

bool uc_ps_dispatch(struct uc_core *k, void *handle, uint32_t s,
                    const char *body, uint32_t len)
{
    struct uc_pubsub *ps = k->ps;
    struct unread_message m;
    struct ur_val_reader rd;
    struct ur_val v, a[3];
    struct ps_sub *p;
    bool pattern;
    unsigned i;

    if (ps == NULL)
        return false;
    ur_val_reader_init(&rd, body, len);
    if (!ur_val_next(&rd, &v) || v.kind != UR_VAL_ARR ||
        (v.count != 3 && v.count != 4))
        return false;
    pattern = v.count == 4;
    if (!ur_val_next(&rd, &v) || !is_str(&v, pattern ? "pmessage" : "message"))
        return false;
    for (i = 0; i < (pattern ? 3u : 2u); i++)
        if (!ur_val_next(&rd, &a[i]) || a[i].kind != UR_VAL_STR)
            return false;
    memset(&m, 0, sizeof(m));
    m.shard = s;
    if (pattern) {
        m.pattern = a[0].str;
        m.pattern_len = a[0].len;
    }
    m.channel = a[pattern ? 1 : 0].str;
    m.channel_len = a[pattern ? 1 : 0].len;
    m.payload = a[pattern ? 2 : 1].str;
    m.payload_len = a[pattern ? 2 : 1].len;
    /* each message once: from the server the channel lives on */
    if (uc_ps_home(k, m.channel, m.channel_len) != s)
        return false;
    p = pattern ? *ps_find(ps, true, m.pattern, m.pattern_len)
                : *ps_find(ps, false, m.channel, m.channel_len);
    if (p == NULL)
        return false; /* left since */
    if (ps->async)
        p->cb.async((struct unread_async *)handle, &m, p->priv);
    else
        p->cb.sync((struct unread *)handle, &m, p->priv);
    return true;
}

/* ---- The synchronous face ------------------------------------------------ */

/* A push on a subscription connection: kept for unread_listen, which
 * delivers it outside any read (a callback may call the library). */
static void sync_push(void *ctx, struct uc_conn *k, const char *body,
                      uint32_t len)
{
    struct uc_pubsub *ps = ctx;
    uint32_t hdr[2];

    hdr[0] = (uint32_t)(k - ps->conn);
    hdr[1] = len;
    if (ur_buf_reserve(&ps->pending, sizeof(hdr) + len) != 0)
        return; /* out of memory: the message is lost, as on a drop */
    (void)ur_buf_append(&ps->pending, hdr, sizeof(hdr));
    (void)ur_buf_append(&ps->pending, body, len);
}

static int sync_send(void *ctx, uint16_t op, unsigned argc,
                     const struct unread_arg *argv)
{
    return uc_conn_encode(ctx, op, argc, argv);
}

/* Server s's subscription connection failed with rc: dropped, tried
 * again at once (after a working connection) or after the backoff. */
static void sub_down(struct unread *c, uint32_t s, int rc, bool was_up)
{
    struct uc_pubsub *ps = c->k.ps;
    int max = c->k.opt.reconnect_max_ms;

    uc_err(&c->k, rc, "%s", ps->conn[s].err);
    uc_conn_drop(&ps->conn[s]);
    if (was_up) {
        ps->retry_at[s] = 0;
        ps->backoff_ms[s] = c->k.opt.reconnect_min_ms;
        return;
    }
    ps->retry_at[s] = uc_now_ms() + ps->backoff_ms[s];
    ps->backoff_ms[s] =
        ps->backoff_ms[s] * 2 > max ? max : ps->backoff_ms[s] * 2;
}

/*
 * Server s's subscription connection, connected: a new one makes every
 * subscription s carries (its confirmations are read later). 0, or the
 * failure (s then waits for its backoff). *fresh: it was just made.
 */
static int sub_conn(struct unread *c, uint32_t s, bool *fresh)
{
    struct uc_pubsub *ps = c->k.ps;
    struct uc_conn *k = &ps->conn[s];
    struct uc_deadline d;
    int64_t now;
    int rc;

    *fresh = false;
    if (k->fd >= 0)
        return 0;
    now = uc_now_ms();
    if (ps->retry_at[s] > now)
        return uc_err(&c->k, UNREAD_ECONNECT,
                      "%s: not connected (next attempt in %lld ms)",
                      c->k.addr[s].name, (long long)(ps->retry_at[s] - now));
    k->password = c->k.opt.password;
    rc = uc_conn_ensure(k, c->k.opt.connect_timeout_ms);
    if (rc == 0) {
        k->on_push = sync_push;
        k->push_ctx = ps;
        rc = uc_ps_frames(&c->k, s, sync_send, k);
        d = uc_deadline(c->k.opt.write_timeout_ms, "write");
        if (rc == 0)
            rc = uc_conn_flush(k, &d);
    }
    if (rc != 0) {
        sub_down(c, s, rc, false);
        return rc;
    }
    ps->backoff_ms[s] = c->k.opt.reconnect_min_ms;
    *fresh = true;
    return 0;
}

/* The text of an error reply, for errstr. */
static int reply_err(struct unread *c, int status, const char *body,
                     uint32_t len)
{
    struct ur_val_reader rd;
    struct ur_val v;

    ur_val_reader_init(&rd, body, len);
    if (ur_val_next(&rd, &v) && v.kind == UR_VAL_ERR)
        return uc_err(&c->k, status, "%.*s", (int)v.len, v.str);
    return uc_err(&c->k, status, "error %d", status);
}

/* Reads every reply server s's subscription connection owes (pushes set
 * aside meanwhile): 0, the first server error, or a failure (dropped). */
static int sub_drain(struct unread *c, uint32_t s)
{
    struct uc_conn *k = &c->k.ps->conn[s];
    struct uc_deadline d = uc_deadline(c->k.opt.read_timeout_ms, "read");
    struct ur_frame_hdr h;
    const char *body;
    int rc, first = 0;

    while (k->inflight > 0) {
        rc = uc_conn_reply(k, &d, &h, &body);
        if (rc == 0)
            rc = uc_reply_status(k, &h, body);
        if (rc < 0) {
            sub_down(c, s, rc, true);
            return rc;
        }
        if (rc > 0 && first == 0)
            first = reply_err(c, rc, body, h.len);
    }
    return first;
}

/* One (P)(UN)SUBSCRIBE on server s's subscription connection, answered:
 * as sub_drain. A new connection already made every subscription in the
 * table: a (P)SUBSCRIBE is not sent again, an unsubscribe has nothing
 * to do. */
static int sub_call(struct unread *c, uint32_t s, uint16_t op, unsigned argc,
                    const struct unread_arg *argv)
{
    struct uc_conn *k;
    struct uc_deadline d;
    bool fresh;
    int rc;

    rc = sub_conn(c, s, &fresh);
    if (rc != 0)
        return rc;
    k = &c->k.ps->conn[s];
    if (!fresh) {
        rc = uc_conn_encode(k, op, argc, argv);
        if (rc != 0)
            return uc_err(&c->k, rc, "%s", k->err);
        d = uc_deadline(c->k.opt.write_timeout_ms, "write");
        rc = uc_conn_flush(k, &d);
        if (rc != 0) {
            sub_down(c, s, rc, true);
            return rc;
        }
    }
    return sub_drain(c, s);
}

/* The servers a subscription concerns: [*from, *to). */
static void sub_servers(const struct unread *c, bool pattern, const char *name,
                        uint32_t *from, uint32_t *to)
{
    if (pattern) {
        *from = 0;
        *to = (uint32_t)c->k.nsrv;
        return;
    }
    *from = uc_ps_home(&c->k, name, strlen(name));
    *to = *from + 1;
}

/*
 * (P)SUBSCRIBE name on the servers it concerns, the subscription in the
 * table first (so a connection made meanwhile makes it too). A server
 * error drops it; a failure to reach a server keeps it for unread_listen.
 */
static int sync_sub(struct unread *c, bool pattern, const char *name,
                    unread_message_cb *cb, void *priv)
{
    struct unread_arg a;
    struct uc_pubsub *ps;
    union ps_cb u;
    uint32_t s, from, to;
    int rc, first = 0;

    if (name == NULL || cb == NULL)
        return uc_err(&c->k, UNREAD_EUSAGE, "a name and a callback are needed");
    if (c->k.cl != NULL)
        return uc_err(&c->k, UNREAD_EUSAGE, CLUSTER_NO_SUBS);
    ps = ps_get(&c->k, false);
    u.sync = cb;
    if (ps == NULL || ps_add(ps, pattern, name, u, priv) < 0)
        return uc_err(&c->k, UNREAD_ENOMEM, "out of memory");
    a = unread_arg_str(name, strlen(name));
    sub_servers(c, pattern, name, &from, &to);
    for (s = from; s < to; s++) {
        rc =
            sub_call(c, s, pattern ? UR_OP_PSUBSCRIBE : UR_OP_SUBSCRIBE, 1, &a);
        if (rc > 0 && first <= 0) {
            (void)ps_del(ps, pattern, name);
            first = rc;
        } else if (rc < 0 && first == 0) {
            first = rc;
        }
    }
    return first;
}

/* (P)UNSUBSCRIBE name, or every channel / pattern (NULL): the table
 * first; then each connected server concerned. */
static int sync_unsub(struct unread *c, bool pattern, const char *name)
{
    struct uc_pubsub *ps = c->k.ps;
    struct unread_arg a = unread_arg_str("", 0);
    uint16_t op = pattern ? UR_OP_PUNSUBSCRIBE : UR_OP_UNSUBSCRIBE;
    uint32_t s, from = 0, to;
    int rc, first = 0;

    if (ps == NULL)
        return 0;
    to = (uint32_t)c->k.nsrv;
    if (name != NULL) {
        if (!ps_del(ps, pattern, name))
            return 0;
        a = unread_arg_str(name, strlen(name));
        sub_servers(c, pattern, name, &from, &to);
    } else {
        ps_clear(ps, pattern);
    }
    for (s = from; s < to; s++) {
        if (ps->conn[s].fd < 0)
            continue; /* nothing there: a new connection makes only what
                         the table holds */
        rc = sub_call(c, s, op, name != NULL ? 1 : 0, &a);
        if (rc != 0 && first == 0)
            first = rc;
    }
    return first;
}

int unread_subscribe(struct unread *c, const char *channel,
                     unread_message_cb *cb, void *priv)
{
    return sync_sub(c, false, channel, cb, priv);
}

int unread_psubscribe(struct unread *c, const char *pattern,
                      unread_message_cb *cb, void *priv)
{
    return sync_sub(c, true, pattern, cb, priv);
}

int unread_unsubscribe(struct unread *c, const char *channel)
{
    return sync_unsub(c, false, channel);
}

int unread_punsubscribe(struct unread *c, const char *pattern)
{
    return sync_unsub(c, true, pattern);
}

size_t unread_subscriptions(const struct unread *c)
{
    return c->k.ps != NULL ? c->k.ps->nchan + c->k.ps->npat : 0;
}

void unread_listen_stop(struct unread *c)
{
    if (c->k.ps != NULL)
        c->k.ps->stop = true;
}

/* Delivers the pushes set aside, until none is left or a callback asked
 * to stop: the messages delivered. A callback may subscribe meanwhile
 * (more pushes appended): the buffer is walked by offset. */
static int deliver(struct unread *c)
{
    struct uc_pubsub *ps = c->k.ps;
    uint32_t hdr[2];
    int n = 0;

    while (!ps->stop && ps->pending_pos + sizeof(hdr) <= ps->pending.len) {
        memcpy(hdr, ps->pending.data + ps->pending_pos, sizeof(hdr));
        ps->pending_pos += sizeof(hdr) + hdr[1];
        if (uc_ps_dispatch(&c->k, c, hdr[0],
                           ps->pending.data + ps->pending_pos - hdr[1],
                           hdr[1]) &&
            n < INT32_MAX)
            n++;
    }
    if (ps->pending_pos == ps->pending.len) {
        ps->pending.len = 0;
        ps->pending_pos = 0;
        ur_buf_shrink(&ps->pending, UC_BATCH_KEEP);
    }
    return n;
}

/* Reads what server s's subscription connection has: pushes set aside,
 * confirmations of a resubscribe checked. */
static void sub_read(struct unread *c, uint32_t s)
{
    struct uc_conn *k = &c->k.ps->conn[s];
    struct ur_frame_hdr h;
    const char *body;
    size_t hint;
    int rc;

    rc = uc_conn_recv(k);
    if (rc == 1)
        return;
    while (rc == 0) {
        rc = uc_conn_take_reply(k, &h, &body, &hint);
        if (rc == 1)
            return; /* no whole frame left */
        if (rc == 0 && k->inflight == 0 && h.id >= k->next_id)
            rc = uc_err(&c->k, UNREAD_EPROTO,
                        "%s: protocol error: a reply to no request",
                        c->k.addr[s].name);
        if (rc == 0)
            rc = uc_reply_status(k, &h, body);
        if (rc > 0) {
            /* a subscription made again was refused (NOAUTH, ...) */
            (void)reply_err(c, rc, body, h.len);
            rc = 0;
        }
    }
    if (rc < 0)
        sub_down(c, s, rc, true);
}

int unread_listen(struct unread *c, int timeout_ms)
{
    struct uc_pubsub *ps = c->k.ps;
    struct pollfd *p = NULL;
    uint32_t *who = NULL, s;
    int64_t end, now, wake;
    int n = 0, t, ready;
    bool fresh, once = false;
    nfds_t np;

    if (ps == NULL || ps->nchan + ps->npat == 0)
        return uc_err(&c->k, UNREAD_EUSAGE, "no subscription to listen to");
    if (ps->listening)
        return uc_err(&c->k, UNREAD_EUSAGE, "already listening");
    p = calloc(c->k.nsrv, sizeof(*p));
    who = calloc(c->k.nsrv, sizeof(*who));
    if (p == NULL || who == NULL) {
        free(p);
        free(who);
        return uc_err(&c->k, UNREAD_ENOMEM, "out of memory");
    }
    ps->listening = true;
    ps->stop = false;
    end = timeout_ms > 0 ? uc_now_ms() + timeout_ms : -1;
    for (;;) {
        n += deliver(c);
        if (ps->stop || once || ps->nchan + ps->npat == 0)
            break; /* asked to, or a callback left every subscription */
        now = uc_now_ms();
        if (end >= 0 && now >= end)
            break;
        /* connections to make again, and when the next one is due */
        wake = end;
        for (s = 0; s < c->k.nsrv; s++) {
            if (ps->conn[s].fd >= 0 || !uc_ps_wants(&c->k, s))
                continue;
            if (ps->retry_at[s] <= now)
                (void)sub_conn(c, s, &fresh);
            if (ps->conn[s].fd < 0 && (wake < 0 || ps->retry_at[s] < wake))
                wake = ps->retry_at[s];
        }
        np = 0;
        for (s = 0; s < c->k.nsrv; s++) {
            if (ps->conn[s].fd < 0)
                continue;
            p[np].fd = ps->conn[s].fd;
            p[np].events = POLLIN;
            p[np].revents = 0;
            who[np++] = s;
        }
        if (timeout_ms == 0) {
            t = 0;
            once = true;
        } else if (wake < 0) {
            t = -1;
        } else {
            now = uc_now_ms();
            t = wake <= now              ? 0
                : wake - now > INT32_MAX ? INT32_MAX
                                         : (int)(wake - now);
        }
        ready = poll(p, np, t);
        if (ready < 0 && errno != EINTR) {
            uc_err(&c->k, UNREAD_EIO, "poll: %s", strerror(errno));
            break;
        }
        for (s = 0; ready > 0 && s < np; s++)
            if (p[s].revents != 0)
                sub_read(c, who[s]);
    }
    ps->listening = false;
    free(p);
    free(who);
    return n;
}

int unread_publish(struct unread *c, const char *channel, const char *payload,
                   size_t payload_len, uint64_t *receivers)
{
    struct unread_arg a[2];
    struct ur_frame_hdr h;
    struct ur_val_reader rd;
    struct ur_val v;
    const char *body;
    int rc;

    if (channel == NULL || (payload == NULL && payload_len > 0))
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "a channel and a payload are "
                      "needed");
    a[0] = unread_arg_str(channel, strlen(channel));
    a[1] = unread_arg_str(payload != NULL ? payload : "", payload_len);
    rc = uc_round_call(c, uc_ps_home(&c->k, channel, a[0].len), UR_OP_PUBLISH,
                       2, a, &h, &body);
    if (rc != 0)
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    if (!ur_val_next(&rd, &v) || v.kind != UR_VAL_INT)
        return uc_shape_err(c, UR_OP_PUBLISH);
    if (receivers != NULL)
        *receivers = v.num;
    return 0;
}

/* ---- The asynchronous face's calls ------------------------------------------
 */

static int async_sub(struct unread_async *a, bool pattern, const char *name,
                     unread_async_message_cb *cb, void *priv)
{
    struct uc_core *k = uc_async_core(a);
    struct uc_pubsub *ps;
    struct unread_arg arg;
    union ps_cb u;
    uint32_t s;

    if (name == NULL || cb == NULL)
        return uc_err(k, UNREAD_EUSAGE, "a name and a callback are needed");
    if (k->cl != NULL)
        return uc_err(k, UNREAD_EUSAGE, CLUSTER_NO_SUBS);
    ps = ps_get(k, true);
    u.async = cb;
    if (ps == NULL || ps_add(ps, pattern, name, u, priv) < 0)
        return uc_err(k, UNREAD_ENOMEM, "out of memory");
    arg = unread_arg_str(name, strlen(name));
    if (!pattern) {
        (void)ua_ps_send(a, uc_ps_home(k, name, arg.len), UR_OP_SUBSCRIBE, 1,
                         &arg);
        return 0;
    }
    for (s = 0; s < k->nsrv; s++)
        (void)ua_ps_send(a, s, UR_OP_PSUBSCRIBE, 1, &arg);
    return 0;
}

static int async_unsub(struct unread_async *a, bool pattern, const char *name)
{
    struct uc_core *k = uc_async_core(a);
    uint16_t op = pattern ? UR_OP_PUNSUBSCRIBE : UR_OP_UNSUBSCRIBE;
    struct unread_arg arg;
    uint32_t s;

    if (k->ps == NULL)
        return 0;
    if (name == NULL) {
        ps_clear(k->ps, pattern);
        for (s = 0; s < k->nsrv; s++)
            (void)ua_ps_send(a, s, op, 0, NULL);
        return 0;
    }
    if (!ps_del(k->ps, pattern, name))
        return 0;
    arg = unread_arg_str(name, strlen(name));
    if (!pattern) {
        (void)ua_ps_send(a, uc_ps_home(k, name, arg.len), op, 1, &arg);
        return 0;
    }
    for (s = 0; s < k->nsrv; s++)
        (void)ua_ps_send(a, s, op, 1, &arg);
    return 0;
}

int unread_async_subscribe(struct unread_async *a, const char *channel,
                           unread_async_message_cb *cb, void *priv)
{
    return async_sub(a, false, channel, cb, priv);
}

int unread_async_psubscribe(struct unread_async *a, const char *pattern,
                            unread_async_message_cb *cb, void *priv)
{
    return async_sub(a, true, pattern, cb, priv);
}

int unread_async_unsubscribe(struct unread_async *a, const char *channel)
{
    return async_unsub(a, false, channel);
}

int unread_async_punsubscribe(struct unread_async *a, const char *pattern)
{
    return async_unsub(a, true, pattern);
}

size_t unread_async_subscriptions(const struct unread_async *a)
{
    const struct uc_core *k = uc_async_core((struct unread_async *)a);

    return k->ps != NULL ? k->ps->nchan + k->ps->npat : 0;
}
