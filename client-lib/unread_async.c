/*
 * unread_async.c - the asynchronous face of libunread (unread.h,
 * "Asynchronous handle"): struct unread_async, a core (unread_core.h)
 * plus, per server, a connection state and the FIFO of the request parts
 * it owes replies to, and the requests decided without the network.
 *
 * A request is routed, admitted and encoded as on the synchronous face
 * (the same core functions), but nothing waits: its frames go into the
 * servers' output buffers, one part per server (a global write: one per
 * server; a split request: one per server holding its uids), and it is
 * answered when its last part is: the parts' replies become one answer
 * (uc_combine, uc_merge, uc_surface), the typed call's decoder fills the
 * caller's outputs, and the callback runs. A part whose server cannot be
 * used is decided at once; a request with every part decided waits on the
 * "done" list for the next handle_events / handle_timeout, so callbacks
 * never run inside a queue call.
 *
 * A server's connection is DOWN (no socket; the next request connects,
 * unless a failed connect set a backoff), CONNECTING (non-blocking
 * connect; requests wait in the output buffer behind the handshake's
 * AUTH and CONFIG GET counter-types) or UP. Any failure of the connection
 * fails every part it owes, in order, with the failure's code.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "proto.h"
#include "unread_cluster.h"
#include "unread_sentinel.h"
#include "unread_core.h"
#include "unread_int.h"
#include "unread_pubsub.h"

#define UA_RECONNECT_MIN_MS 100
#define UA_RECONNECT_MAX_MS 5000
#define UA_RECV_ROUNDS 16 /* recv() calls per readable event at most */

enum ua_state { UA_DOWN, UA_CONNECTING, UA_UP };

/* What a handshake request does with its answer. */
enum ua_internal {
    UA_USER = 0,
    UA_AUTH,
    UA_TYPES,
    UA_PUBSUB,
    UA_SLOTS, /* cluster mode: CLUSTER SLOTS, the map */
    UA_ASKING /* cluster mode: before a request an ASK sent on */
};

/* One part of a request: one server's frame and reply. */
struct ua_part {
    uint32_t server;
    int rc; /* UC_PENDING until answered or failed */
    struct ur_frame_hdr h;
    const char *view; /* the reply body in the input buffer (one part) */
    char *body;       /* a copy (requests of several parts) */
    char *frame;      /* cluster mode: its request frame, resent when a
                         node redirects it */
    uint32_t frame_len;
    uint8_t redirects; /* followed so far */
};

/* Requests of one many-users call (chunks of UR_UIDS_MAX uids). */
struct ua_join {
    unsigned left;
    int rc; /* the first failure, or UNREAD_DEGRADED, or 0 */
    unread_async_cb *cb;
    void *priv;
};

struct ua_req {
    struct ua_req *next; /* on the done list */
    struct uc_call q;    /* decode and outputs (argv already freed) */
    unread_async_cb *cb;
    void *priv;
    struct ua_join *join;
    int64_t deadline; /* monotonic ms; -1: none */
    struct uc_what w;
    uint8_t internal; /* enum ua_internal */
    bool split;
    uint16_t span, left;
    uint32_t nuids;
    uint32_t *map; /* a split request: each uid's server */
    struct ua_part part[];
};

/* One entry of a server's FIFO: a request's part awaiting its reply. */
struct ua_ref {
    struct ua_req *req;
    uint16_t part;
};

/* Cluster mode: a part answered TRYAGAIN or CLUSTERDOWN, resent to its
 * node at `at` (its slot is being moved, or has no node for now: at once
 * would use up the redirections before anything changed). */
struct ua_held {
    struct ua_req *req;
    uint16_t part;
    int64_t at; /* monotonic ms */
};

struct ua_server {
    int state;           /* enum ua_state */
    struct ua_ref *fifo; /* ring of cap entries: [head, head + len) */
    size_t head, len, cap;
    int64_t connect_at; /* CONNECTING: deadline; -1 none */
    int64_t retry_at;   /* DOWN: no connect attempt before (0: any time) */
    int backoff_ms;     /* the next failed connect's wait */
    int w_fd, w_ev;     /* what the hooks were last told */
};

struct unread_async {
    struct uc_core k; /* first: typed calls' prep functions take it */
    struct ua_server *as;
    struct ua_req *done_head, *done_tail; /* answered, callback to run */
    size_t pending;                       /* requests not yet completed */
    int cmd_timeout_ms;
    int64_t next_deadline; /* earliest deadline that may be due; -1 */
    struct unread_async_hooks hooks;
    bool attached;
    int64_t timer_at; /* the hooks' timer, absolute; -1: not armed */
    unsigned depth;   /* inside handle_* */
    bool closing;
    size_t inited;        /* cluster mode: servers whose as[] entry is set up */
    bool slots_sent;      /* cluster mode: a CLUSTER SLOTS is on its way */
    size_t slots_from;    /* cluster mode: the node asked next */
    char refused[480];    /* cluster mode: why a seed refused CLUSTER SLOTS
                             ("" none): every call fails with it */
    struct ua_held *held; /* cluster mode: parts waiting to be resent */
    size_t nheld, capheld;
};

static int64_t min_at(int64_t a, int64_t b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    return a < b ? a : b;
}

struct uc_core *uc_async_core(struct unread_async *a)
{
    return &a->k;
}

/* ---- Requests ----------------------------------------------------------- */

static void req_free(struct ua_req *r)
{
    uint16_t i;

    for (i = 0; i < r->span; i++) {
        free(r->part[i].body);
        free(r->part[i].frame);
    }
    free(r->map);
    free(r);
}

static void done_push(struct unread_async *a, struct ua_req *r)
{
    r->next = NULL;
    if (a->done_tail != NULL)
        a->done_tail->next = r;
    else
        a->done_head = r;
    a->done_tail = r;
}

static void fail_server(struct unread_async *a, uint32_t s, int rc);
static void servers_setup(struct unread_async *a);
static void async_push(void *ctx, struct uc_conn *k, const char *body,
                       uint32_t len);

/* A handshake request's answer: a refused AUTH fails the connection (as
 * an unreachable server: what was queued behind it was refused too); the
 * counter types are learnt. */
static void internal_done(struct unread_async *a, struct ua_req *r,
                          const struct uc_res *res)
{
    struct ua_server *sv = &a->as[res->server];
    struct uc_conn *c = &a->k.srv[res->server].conn;

    if (r->internal == UA_TYPES) {
        if (res->rc == 0)
            (void)uc_core_learn_types(&a->k, res->body, res->h.len);
        return;
    }
    if (r->internal == UA_SLOTS) {
        a->slots_sent = false;
        if (res->rc > 0 && !a->k.cl->known) {
            /* not a cluster-mode node (as unread_connect_cluster says
             * at once): every call from now on fails with this */
            struct ur_val_reader rd;
            struct ur_val v;

            ur_val_reader_init(&rd, res->body, res->h.len);
            if (!ur_val_next(&rd, &v) || v.kind != UR_VAL_ERR)
                v.len = 0;
            snprintf(a->refused, sizeof(a->refused),
                     "%s: CLUSTER SLOTS: %.*s%s", a->k.addr[res->server].name,
                     (int)(v.len > 300 ? 300 : v.len), v.len ? v.str : "",
                     v.len && memmem(v.str, v.len, "disabled", 8) != NULL
                         ? " (start it with cluster-enabled yes, or connect "
                           "without cluster mode)"
                         : "");
        } else if (res->rc != 0 ||
                   uc_cluster_learn(&a->k, res->body, res->h.len) != 0) {
            a->k.cl->refreshed_ms = 0; /* another node, at once */
        }
        servers_setup(a);
        return;
    }
    if (r->internal == UA_ASKING)
        return;
    if (r->internal == UA_PUBSUB) {
        /* a refused (P)(UN)SUBSCRIBE: said in errstr, nothing waits */
        if (res->rc > 0)
            uc_err(&a->k, res->rc, "%s: a subscription was refused (error %d)",
                   a->k.addr[res->server].name, res->rc);
        return;
    }
    if (res->rc == 0 || res->rc < 0 || sv->state == UA_DOWN)
        return;
    snprintf(c->err, sizeof(c->err), "%s: AUTH refused (error %d)",
             a->k.addr[res->server].name, res->rc);
    fail_server(a, res->server, UNREAD_ECONNECT);
}

/* Every part is in: one answer, decoded into the caller's outputs, then
 * the callback (or the many-users call's join). */
static void req_complete(struct unread_async *a, struct ua_req *r)
{
    struct uc_res out, *res = a->k.res;
    struct ur_val_reader rd;
    uint16_t i;
    int rc;

    for (i = 0; i < r->span; i++) {
        res[i].rc = r->part[i].rc;
        res[i].server = r->part[i].server;
        res[i].h = r->part[i].h;
        res[i].body =
            r->part[i].body != NULL ? r->part[i].body : r->part[i].view;
    }
    if (r->internal != UA_USER) {
        internal_done(a, r, &res[0]);
        req_free(r);
        return;
    }
    if (r->split) {
        if (!uc_merge(&a->k, r->w.op, res, r->span, r->map, r->nuids, &out))
            uc_surface(&a->k, &r->w, &out);
    } else {
        if (r->span == 1)
            out = res[0];
        else
            uc_combine(&a->k, r->w.op, r->span, res, &out);
        uc_surface(&a->k, &r->w, &out);
    }
    rc = out.rc;
    a->k.last_srv = out.server;
    if (r->q.decode != NULL &&
        (rc == 0 || rc == UNREAD_DEGRADED || (rc > 0 && r->q.errors))) {
        ur_val_reader_init(&rd, out.body, out.h.len);
        rc = r->q.decode(&a->k, &r->q, rc, &rd);
        if (rc == UNREAD_EPROTO && out.rc != UNREAD_EPROTO)
            fail_server(a, out.server, UNREAD_EPROTO);
    } else if (rc == UNREAD_EPROTO && r->split) {
        /* a share of the wrong shape (uc_merge): that stream is not
         * trusted any more */
        fail_server(a, a->k.last_srv, UNREAD_EPROTO);
    }
    a->pending--;
    if (r->join != NULL) {
        struct ua_join *j = r->join;

        if (rc != 0 && (j->rc == 0 || j->rc == UNREAD_DEGRADED))
            j->rc = rc;
        if (--j->left == 0) {
            rc = j->rc;
            if (rc == UNREAD_DEGRADED)
                uc_err(&a->k, rc,
                       "a server of the request could not be "
                       "reached: its users read as the default");
            j->cb(a, rc, j->priv);
            free(j);
        }
    } else if (r->cb != NULL) {
        r->cb(a, rc, r->priv);
    }
    req_free(r);
}

/* Part p of r is answered (rc, and the reply when rc >= 0): the request
 * completes with its last part. body is copied unless the request has
 * one part, in which case it is decoded now, before the input buffer
 * moves. */
static void part_done(struct unread_async *a, struct ua_req *r, uint16_t p,
                      int rc, const struct ur_frame_hdr *h, const char *body)
{
    struct ua_part *pt = &r->part[p];

    pt->rc = rc;
    if (rc >= 0 && h != NULL) {
        pt->h = *h;
        if (r->span == 1) {
            pt->view = body;
        } else if ((pt->body = malloc(h->len > 0 ? h->len : 1)) != NULL) {
            memcpy(pt->body, body, h->len);
        } else {
            pt->rc = UNREAD_ENOMEM;
            snprintf(a->k.srv[pt->server].conn.err,
                     sizeof(a->k.srv[pt->server].conn.err),
                     "out of memory keeping a reply");
        }
    }
    if (--r->left > 0)
        return;
    req_complete(a, r);
}

/* ---- Servers --------------------------------------------------------------
 */

static int fifo_push(struct ua_server *sv, struct ua_req *r, uint16_t p)
{
    if (sv->len == sv->cap) {
        size_t cap = sv->cap > 0 ? sv->cap * 2 : 64, i;
        struct ua_ref *f = malloc(cap * sizeof(*f));

        if (f == NULL)
            return -1;
        for (i = 0; i < sv->len; i++)
            f[i] = sv->fifo[(sv->head + i) % sv->cap];
        free(sv->fifo);
        sv->fifo = f;
        sv->cap = cap;
        sv->head = 0;
    }
    sv->fifo[(sv->head + sv->len) % sv->cap] = (struct ua_ref){r, p};
    sv->len++;
    return 0;
}

static struct ua_ref fifo_pop(struct ua_server *sv)
{
    struct ua_ref ref = sv->fifo[sv->head];

    sv->head = (sv->head + 1) % sv->cap;
    sv->len--;
    return ref;
}

/* What server s wants watched now. */
static void wanted(const struct unread_async *a, uint32_t s, int *fd, int *ev)
{
    const struct ua_server *sv = &a->as[s];
    const struct uc_conn *c = &a->k.srv[s].conn;

    *fd = c->fd;
    *ev = 0;
    if (sv->state == UA_CONNECTING)
        /* the connect, then (TLS) what its handshake waits for */
        *ev = c->ssl != NULL && c->tls_want == UC_TLS_READ ? UNREAD_EV_READ
                                                           : UNREAD_EV_WRITE;
    else if (sv->state == UA_UP)
        *ev = UNREAD_EV_READ | (c->out_pos < c->out.len ? UNREAD_EV_WRITE : 0);
}

/* Tells the hooks what server s wants, when it changed. */
static void watch(struct unread_async *a, uint32_t s)
{
    struct ua_server *sv = &a->as[s];
    int fd, ev;

    wanted(a, s, &fd, &ev);
    if (fd == sv->w_fd && ev == sv->w_ev)
        return;
    sv->w_fd = fd;
    sv->w_ev = ev;
    if (a->attached && a->hooks.watch != NULL)
        a->hooks.watch(a->hooks.data, s, fd, ev);
}

/*
 * Server s's connection failed with rc: every part it owes fails with rc
 * (their callbacks run now), the socket closes, the breaker hears of it,
 * and the next request reconnects - at once after a working connection
 * failed, after the backoff after a failed connect.
 */
static void fail_server(struct unread_async *a, uint32_t s, int rc)
{
    struct ua_server *sv = &a->as[s];
    struct ua_ref *refs = NULL;
    size_t n = sv->len, i;
    bool was_up = sv->state == UA_UP;

    if (sv->state == UA_DOWN && n == 0)
        return;
    if (n > 0 && (refs = malloc(n * sizeof(*refs))) != NULL) {
        for (i = 0; i < n; i++)
            refs[i] = fifo_pop(sv);
    }
    sv->state = UA_DOWN;
    sv->connect_at = -1;
    if (sv->w_fd >= 0 && a->attached && a->hooks.watch != NULL)
        a->hooks.watch(a->hooks.data, s, -1, 0);
    sv->w_fd = -1;
    sv->w_ev = 0;
    uc_server_down(&a->k, s, rc);
    if (was_up || rc != UNREAD_ECONNECT) {
        sv->retry_at = 0;
    } else {
        sv->retry_at = uc_now_ms() + sv->backoff_ms;
        sv->backoff_ms = sv->backoff_ms * 2 > a->k.opt.reconnect_max_ms
                             ? a->k.opt.reconnect_max_ms
                             : sv->backoff_ms * 2;
    }
    if (refs == NULL) {
        /* out of memory for the list: complete the parts from the FIFO
         * itself, the server refusing new ones meanwhile */
        sv->retry_at = uc_now_ms() + sv->backoff_ms;
        while (sv->len > 0) {
            struct ua_ref ref = fifo_pop(sv);

            part_done(a, ref.req, ref.part, rc, NULL, NULL);
        }
        return;
    }
    for (i = 0; i < n; i++)
        part_done(a, refs[i].req, refs[i].part, rc, NULL, NULL);
    free(refs);
}

/* Queues a request of the library's own on server s, its answer for
 * internal_done: 0, or -1 when out of memory (nothing queued). */
static int internal_send(struct unread_async *a, uint32_t s,
                         enum ua_internal what, uint16_t op, unsigned argc,
                         const struct unread_arg *argv)
{
    struct ua_req *r;

    r = calloc(1, sizeof(*r) + sizeof(r->part[0]));
    if (r == NULL)
        return -1;
    r->internal = (uint8_t)what;
    r->span = r->left = 1;
    r->deadline = -1;
    r->part[0].server = s;
    r->part[0].rc = UC_PENDING;
    if (uc_conn_encode(&a->k.srv[s].conn, op, argc, argv) != 0 ||
        fifo_push(&a->as[s], r, 0) != 0) {
        free(r);
        return -1;
    }
    return 0;
}

/* Queues a handshake request (AUTH, CONFIG GET) first on server s. */
static int internal_req(struct unread_async *a, uint32_t s,
                        enum ua_internal what)
{
    struct unread_arg argv[2];
    unsigned argc;
    uint16_t op;

    if (what == UA_AUTH) {
        op = UR_OP_AUTH;
        const char *user = uc_cred_user(a->k.opt.password);

        argc = 0;
        if (user[0] != '\0') /* AUTH user password: an ACL user */
            argv[argc++] = unread_arg_str(user, strlen(user));
        argv[argc++] =
            unread_arg_str(a->k.opt.password, strlen(a->k.opt.password));
    } else {
        op = UR_OP_CONFIG;
        argv[0] = unread_arg_str("GET", 3);
        argv[1] = unread_arg_str("counter-types", 13);
        argc = 2;
    }
    return internal_send(a, s, what, op, argc, argv);
}

/* The subscriptions server s carries, made on its new connection. */
struct ua_resub {
    struct unread_async *a;
    uint32_t s;
};

static int resub_send(void *ctx, uint16_t op, unsigned argc,
                      const struct unread_arg *argv)
{
    struct ua_resub *rs = ctx;

    return internal_send(rs->a, rs->s, UA_PUBSUB, op, argc, argv);
}

/*
 * Makes server s able to take a request: 0 (UP or CONNECTING: frames may
 * be queued), or why not (its circuit is open, its reconnect waits, the
 * connect failed at once), the reason in its connection's err.
 */
static int server_ready(struct unread_async *a, uint32_t s)
{
    struct ua_server *sv = &a->as[s];
    struct uc_conn *c = &a->k.srv[s].conn;
    struct ua_resub rs;
    int64_t now;
    int rc;

    rc = uc_server_admit(&a->k, s);
    if (rc != 0)
        return rc;
    if (sv->state != UA_DOWN)
        return 0;
    now = uc_now_ms();
    if (sv->retry_at > now) {
        snprintf(c->err, sizeof(c->err),
                 "%s: not connected (next attempt in %lld ms)",
                 a->k.addr[s].name, (long long)(sv->retry_at - now));
        return UNREAD_ECONNECT;
    }
    uc_conn_drop(c);
    rc = uc_conn_dial(c, a->k.opt.connect_timeout_ms);
    if (rc != 0) {
        uc_server_down(&a->k, s, rc);
        sv->retry_at = now + sv->backoff_ms;
        sv->backoff_ms = sv->backoff_ms * 2 > a->k.opt.reconnect_max_ms
                             ? a->k.opt.reconnect_max_ms
                             : sv->backoff_ms * 2;
        return rc;
    }
    sv->state = UA_CONNECTING;
    sv->connect_at = a->k.opt.connect_timeout_ms > 0
                         ? now + a->k.opt.connect_timeout_ms
                         : -1;
    a->next_deadline = min_at(a->next_deadline, sv->connect_at);
    rs.a = a;
    rs.s = s;
    if ((a->k.opt.password != NULL && internal_req(a, s, UA_AUTH) != 0) ||
        (!a->k.types_known && internal_req(a, s, UA_TYPES) != 0) ||
        uc_ps_frames(&a->k, s, resub_send, &rs) != 0) {
        snprintf(c->err, sizeof(c->err), "%s: out of memory connecting",
                 a->k.addr[s].name);
        fail_server(a, s, UNREAD_ECONNECT);
        return UNREAD_ECONNECT;
    }
    watch(a, s);
    return 0;
}

/* The connect of server s completed (or failed), or (TLS) its handshake
 * went a step further. */
static void connected(struct unread_async *a, uint32_t s)
{
    struct ua_server *sv = &a->as[s];
    struct uc_conn *c = &a->k.srv[s].conn;
    int rc = c->ssl != NULL ? 0 : uc_conn_dialed(c);

    if (rc == 0)
        rc = uc_conn_handshake(c);
    if (rc == 1)
        return; /* the handshake waits: watched as c->tls_want says */
    if (rc != 0) {
        fail_server(a, s, rc);
        return;
    }
    sv->state = UA_UP;
    sv->connect_at = -1;
    sv->backoff_ms = a->k.opt.reconnect_min_ms;
}

/* ---- Queuing --------------------------------------------------------------
 */

static struct ua_req *req_new(struct unread_async *a, const struct uc_call *q,
                              uint16_t span, unread_async_cb *cb, void *priv)
{
    struct ua_req *r = calloc(1, sizeof(*r) + span * sizeof(r->part[0]));

    if (r == NULL)
        return NULL;
    r->q = *q;
    r->q.argv = NULL;
    r->cb = cb;
    r->priv = priv;
    r->span = span;
    r->w.op = q->op;
    r->deadline = a->cmd_timeout_ms > 0 ? uc_now_ms() + a->cmd_timeout_ms : -1;
    return r;
}

/* Queues part p of r on server s, or decides it (rc != 0 from
 * server_ready). -1 when out of memory (nothing queued for this part). */
static int part_queue(struct unread_async *a, struct ua_req *r, uint16_t p,
                      uint32_t s, int ready, unsigned argc,
                      const struct unread_arg *argv)
{
    struct uc_conn *c = &a->k.srv[s].conn;

    r->part[p].server = s;
    if (ready != 0) {
        r->part[p].rc = ready;
        return 0;
    }
    r->part[p].rc = UC_PENDING;
    if (uc_conn_encode(c, r->q.op, argc, argv) != 0)
        return -1;
    if (a->k.cl != NULL) {
        size_t len;
        const char *f = uc_conn_last(c, &len);

        r->part[p].frame = malloc(len);
        if (r->part[p].frame == NULL) {
            uc_conn_unencode(c);
            return -1;
        }
        memcpy(r->part[p].frame, f, len);
        r->part[p].frame_len = (uint32_t)len;
    }
    if (fifo_push(&a->as[s], r, p) != 0) {
        uc_conn_unencode(c);
        free(r->part[p].frame);
        r->part[p].frame = NULL;
        return -1;
    }
    r->left++;
    return 0;
}

/* A request is queued: pending parts wait for replies; one with none
 * goes to the done list. */
static void queued(struct unread_async *a, struct ua_req *r)
{
    uint16_t i;

    a->pending++;
    a->next_deadline = min_at(a->next_deadline, r->deadline);
    if (r->left == 0) {
        r->left = 1; /* completed by the done list */
        done_push(a, r);
    }
    for (i = 0; i < r->span; i++)
        if (r->part[i].rc == UC_PENDING)
            watch(a, r->part[i].server);
}

/* Takes back the frames of r's pending parts queued so far (the last
 * ones on their servers) after an allocation failure. */
static void unqueue(struct unread_async *a, struct ua_req *r, uint16_t upto)
{
    uint16_t i;

    for (i = 0; i < upto; i++) {
        if (r->part[i].rc != UC_PENDING)
            continue;
        uc_conn_unencode(&a->k.srv[r->part[i].server].conn);
        a->as[r->part[i].server].len--;
    }
}

static int queue_split(struct unread_async *a, const struct uc_call *q,
                       unread_async_cb *cb, void *priv, struct ua_join *join)
{
    struct uc_split sp;
    struct ua_req *r;
    unsigned g;

    if (uc_split_plan(&a->k, q->op, q->argc, q->argv, &sp) != 0)
        return UNREAD_ENOMEM;
    r = req_new(a, q, (uint16_t)sp.groups, cb, priv);
    if (r == NULL || (r->map = malloc(sp.n * sizeof(*r->map))) == NULL) {
        if (r != NULL)
            req_free(r);
        uc_split_free(&sp);
        return uc_err(&a->k, UNREAD_ENOMEM, "out of memory queuing a request");
    }
    r->join = join;
    r->split = true;
    r->nuids = sp.n;
    memcpy(r->map, sp.map, sp.n * sizeof(*r->map));
    for (g = 0; g < sp.groups; g++) {
        uint32_t s = sp.server[g];

        if (part_queue(a, r, (uint16_t)g, s, server_ready(a, s),
                       uc_split_args(&sp, g), sp.args) != 0) {
            unqueue(a, r, (uint16_t)g);
            req_free(r);
            uc_split_free(&sp);
            return uc_err(&a->k, UNREAD_ENOMEM,
                          "out of memory queuing a request");
        }
    }
    uc_split_free(&sp);
    queued(a, r);
    return 0;
}

/* Queues q to `to` (a server, UC_ALL or UC_SPLIT). */
static int queue_call(struct unread_async *a, const struct uc_call *q,
                      uint32_t to, unread_async_cb *cb, void *priv,
                      struct ua_join *join)
{
    uint16_t span = to == UC_ALL ? (uint16_t)a->k.nsrv : 1, p;
    uint32_t first = to == UC_ALL ? 0 : to;
    struct ua_req *r;
    int rc = 0;

    if (to == UC_SPLIT)
        return queue_split(a, q, cb, priv, join);
    r = req_new(a, q, span, cb, priv);
    if (r == NULL)
        return uc_err(&a->k, UNREAD_ENOMEM, "out of memory queuing a request");
    r->join = join;
    /* a global write goes to no server unless every server can take it */
    for (p = 0; p < span && rc == 0; p++)
        rc = server_ready(a, first + p);
    if (rc != 0) {
        r->span = 1;
        r->part[0].server = first + p - 1;
        r->part[0].rc = rc;
        queued(a, r);
        return 0;
    }
    for (p = 0; p < span; p++) {
        if (part_queue(a, r, p, first + p, 0, q->argc, q->argv) != 0) {
            unqueue(a, r, p);
            req_free(r);
            return uc_err(&a->k, UNREAD_ENOMEM,
                          "out of memory encoding a request");
        }
    }
    queued(a, r);
    return 0;
}

static void arm_timer(struct unread_async *a);

/*
 * A many-users call: requests of at most UR_UIDS_MAX uids, each split by
 * server as needed, joined: the callback runs once, after the last, with
 * the first failure, else UNREAD_DEGRADED when some uids read as the
 * default, else 0. A chunk that cannot be queued (out of memory) counts
 * as a failure of the call; the chunks queued before it still run.
 */
static int queue_many(struct unread_async *a, struct uc_call *q,
                      unread_async_cb *cb, void *priv)
{
    size_t chunks = (q->n + UR_UIDS_MAX - 1) / UR_UIDS_MAX, done, k, i;
    struct unread_arg *argv = NULL;
    struct ua_join *j;
    struct uc_call one;
    int rc = 0;

    j = calloc(1, sizeof(*j));
    if (j == NULL ||
        (q->n > 0 && (argv = malloc((q->n < UR_UIDS_MAX ? q->n : UR_UIDS_MAX) *
                                    sizeof(*argv))) == NULL)) {
        free(j);
        return uc_err(&a->k, UNREAD_ENOMEM, "out of memory");
    }
    j->cb = cb;
    j->priv = priv;
    j->left = chunks > 0 ? (unsigned)chunks : 1;
    if (q->n == 0) {
        /* nothing to ask: a PING answered by nobody, result 0 */
        struct ua_req *r = req_new(a, q, 1, NULL, NULL);

        if (r == NULL) {
            free(j);
            return uc_err(&a->k, UNREAD_ENOMEM, "out of memory");
        }
        r->join = j;
        r->q.decode = NULL;
        r->q.many = false;
        r->part[0].rc = 0;
        queued(a, r);
        return 0;
    }
    for (done = 0; done < q->n; done += k) {
        k = q->n - done < UR_UIDS_MAX ? q->n - done : UR_UIDS_MAX;
        for (i = 0; i < k; i++)
            argv[i] = unread_arg_int(q->uids[done + i]);
        memset(&one, 0, sizeof(one));
        one.op = q->op;
        one.argc = (unsigned)k;
        one.argv = argv;
        one.decode = uc_dec_uids;
        one.out[0] = (uint64_t *)q->out[0] + done;
        one.n = k;
        rc = queue_call(a, &one, uc_route(&a->k, q->op, one.argc, argv), NULL,
                        NULL, j);
        if (rc != 0)
            break;
    }
    free(argv);
    if (done == 0) {
        free(j);
        return rc;
    }
    if (rc != 0) {
        /* the chunks not queued: the call has failed, the others run */
        j->rc = rc;
        j->left -= (unsigned)((q->n - done + UR_UIDS_MAX - 1) / UR_UIDS_MAX);
    }
    return 0;
}

int uc_async(struct unread_async *a, struct uc_call *q,
             void (*cb)(struct unread_async *, int, void *), void *priv)
{
    uint32_t to;
    int rc;

    if (cb == NULL)
        rc = uc_err(&a->k, UNREAD_EUSAGE, "a callback is needed");
    else if (a->closing)
        rc = uc_err(&a->k, UNREAD_EUSAGE, "the handle is closing");
    else if (a->refused[0] != '\0')
        rc = uc_err(&a->k, UNREAD_ECONNECT, "%s", a->refused);
    else if (q->many)
        return queue_many(a, q, cb, priv);
    else
        rc = uc_args_check(&a->k, q->argc, q->argv);
    if (rc == 0) {
        to = uc_route(&a->k, q->op, q->argc, q->argv);
        rc = queue_call(a, q, to, cb, priv, NULL);
    }
    if (q->argv != q->inl)
        free(q->argv);
    q->argv = q->inl;
    if (rc == 0 && a->depth == 0)
        arm_timer(a);
    return rc;
}

/* ---- Cluster mode -------------------------------------------------------- */

/* The servers the core added (nodes the map names) get their state. */
static void servers_setup(struct unread_async *a)
{
    for (; a->inited < a->k.nsrv; a->inited++) {
        uint32_t s = (uint32_t)a->inited;

        memset(&a->as[s], 0, sizeof(a->as[s]));
        a->k.srv[s].conn.on_push = async_push;
        a->k.srv[s].conn.push_ctx = a;
        a->as[s].w_fd = -1;
        a->as[s].connect_at = -1;
        a->as[s].backoff_ms = a->k.opt.reconnect_min_ms;
    }
}

/* The map is stale (a MOVED, a lost node) and was not asked for lately:
 * CLUSTER SLOTS goes to the first server that can take it. */
static void slots_ask(struct unread_async *a)
{
    struct unread_arg arg = unread_arg_str("SLOTS", 5);
    struct uc_cluster *cl = a->k.cl;

    if (cl == NULL || a->slots_sent || !cl->stale || a->closing ||
        uc_now_ms() - cl->refreshed_ms < UC_REFRESH_MIN_MS)
        return;
    cl->refreshed_ms = uc_now_ms();
    /* a connected node first, then any that can be dialled; each time
     * from the next one, so that a node that fails to answer is not the
     * one asked again */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < a->k.nsrv; i++) {
            uint32_t s = (uint32_t)((a->slots_from + i) % a->k.nsrv);

            if ((pass == 0 && a->as[s].state != UA_UP) ||
                server_ready(a, s) != 0 ||
                internal_send(a, s, UA_SLOTS, UR_OP_CLUSTER, 1, &arg) != 0)
                continue;
            a->slots_sent = true;
            a->slots_from = s + 1;
            watch(a, s);
            return;
        }
}

/*
 * Part p of r was answered with a redirection (MOVED, ASK, TRYAGAIN,
 * CLUSTERDOWN: not run): its frame goes to the node named (ASKING first
 * for an ASK; the same node again for the others) instead of answering,
 * at most UC_REDIRECTS_MAX times. true when it was sent on; false when
 * the redirection is the answer.
 */
static bool resend(struct unread_async *a, struct ua_req *r, uint16_t p, int rc,
                   const struct ur_frame_hdr *h, const char *body)
{
    struct ua_part *pt = &r->part[p];
    uint32_t to;
    bool asking;

    if (pt->frame == NULL || pt->redirects >= UC_REDIRECTS_MAX ||
        !uc_cluster_follow(&a->k, rc, body, h->len, &to, &asking))
        return false;
    servers_setup(a);
    if (to == UC_NO_SERVER) {
        /* TRYAGAIN, CLUSTERDOWN: the same node, after a pause that
         * doubles, as the synchronous handle waits */
        if (a->nheld == a->capheld) {
            size_t cap = a->capheld ? a->capheld * 2 : 16;
            struct ua_held *h2 = realloc(a->held, cap * sizeof(*h2));

            if (h2 == NULL)
                return false;
            a->held = h2;
            a->capheld = cap;
        }
        a->held[a->nheld].req = r;
        a->held[a->nheld].part = p;
        a->held[a->nheld++].at =
            uc_now_ms() + ((int64_t)UC_RETRY_PAUSE_MS << pt->redirects);
        pt->redirects++;
        return true;
    }
    if (server_ready(a, to) != 0)
        return false;
    if (asking) {
        struct unread_arg none;

        if (internal_send(a, to, UA_ASKING, UR_OP_ASKING, 0, &none) != 0)
            return false;
    }
    if (uc_conn_encode_copy(&a->k.srv[to].conn, pt->frame, pt->frame_len) !=
            0 ||
        fifo_push(&a->as[to], r, p) != 0)
        return false; /* (an ASKING alone is harmless) */
    pt->server = to;
    pt->redirects++;
    watch(a, to);
    slots_ask(a);
    return true;
}

/* Resends the held parts that are due (all of them when the handle
 * closes: they then fail as closed); a part whose node cannot take it
 * now fails as not sent (its connect's failure, or out of memory). */
static void release_held(struct unread_async *a, int64_t now)
{
    size_t i = 0;

    while (i < a->nheld) {
        struct ua_held h = a->held[i];
        struct ua_part *pt = &h.req->part[h.part];
        uint32_t to = pt->server;

        if (!a->closing && h.at > now) {
            i++;
            continue;
        }
        a->held[i] = a->held[--a->nheld];
        if (a->closing) {
            snprintf(a->k.err, sizeof(a->k.err), "the handle was closed");
            part_done(a, h.req, h.part, UNREAD_ECLOSED, NULL, NULL);
        } else {
            int rc = server_ready(a, to);

            if (rc == 0 && (uc_conn_encode_copy(&a->k.srv[to].conn, pt->frame,
                                                pt->frame_len) != 0 ||
                            fifo_push(&a->as[to], h.req, h.part) != 0))
                rc = UNREAD_ENOMEM;
            if (rc != 0) {
                snprintf(a->k.err, sizeof(a->k.err), "%s",
                         a->k.srv[to].conn.err);
                part_done(a, h.req, h.part, rc, NULL, NULL);
            } else {
                watch(a, to);
            }
        }
    }
}

static int64_t held_at(const struct unread_async *a)
{
    int64_t at = -1;

    for (size_t i = 0; i < a->nheld; i++)
        at = min_at(at, a->held[i].at);
    return at;
}

/* ---- Time --------------------------------------------------------------- */

/* When a server that carries subscriptions and lost its connection is
 * to be connected again (after()); -1: none. */
static int64_t resub_at(const struct unread_async *a)
{
    int64_t at = -1;
    uint32_t s;

    if (a->k.ps == NULL || a->closing)
        return -1;
    for (s = 0; s < a->k.nsrv; s++)
        if (a->as[s].state == UA_DOWN && uc_ps_wants(&a->k, s))
            at = min_at(at, a->as[s].retry_at);
    return at;
}

/* When handle_timeout is due: now when callbacks wait on the done list,
 * else the earliest deadline or reconnect; -1: never. */
static int64_t due_at(const struct unread_async *a)
{
    if (a->done_head != NULL)
        return uc_now_ms();
    return min_at(min_at(a->next_deadline, resub_at(a)), held_at(a));
}

/* Tells the hooks' timer when the handle is due, when that is earlier
 * than what it was told (a later wake-up finds nothing to do and asks
 * again). */
static void arm_timer(struct unread_async *a)
{
    int64_t at = due_at(a), now;

    if (!a->attached || a->hooks.timer == NULL || at < 0)
        return;
    if (a->timer_at >= 0 && a->timer_at <= at)
        return;
    now = uc_now_ms();
    a->timer_at = at;
    a->hooks.timer(a->hooks.data, at <= now ? 0 : (int)(at - now));
}

/* Fails the connections whose connect, or one of whose requests, has
 * passed its deadline, and recomputes the next deadline. */
static void expire(struct unread_async *a, int64_t now)
{
    int64_t next = -1;
    uint32_t s;
    size_t i;

    if (a->next_deadline < 0 || a->next_deadline > now)
        return;
    for (s = 0; s < a->k.nsrv; s++) {
        struct ua_server *sv = &a->as[s];
        struct uc_conn *c = &a->k.srv[s].conn;
        bool late = false;

        if (sv->state == UA_CONNECTING && sv->connect_at >= 0 &&
            sv->connect_at <= now) {
            snprintf(c->err, sizeof(c->err), "%s: connect: timeout after %d ms",
                     a->k.addr[s].name, a->k.opt.connect_timeout_ms);
            fail_server(a, s, UNREAD_ECONNECT);
            continue;
        }
        for (i = 0; i < sv->len && !late; i++) {
            int64_t d = sv->fifo[(sv->head + i) % sv->cap].req->deadline;

            late = d >= 0 && d <= now;
        }
        if (late && sv->state == UA_CONNECTING) {
            /* nothing was sent yet: "not sent", safe to retry */
            snprintf(c->err, sizeof(c->err),
                     "%s: connect: not connected within the command's "
                     "timeout",
                     a->k.addr[s].name);
            fail_server(a, s, UNREAD_ECONNECT);
        } else if (late) {
            snprintf(c->err, sizeof(c->err), "%s: read: timeout after %d ms",
                     a->k.addr[s].name, a->cmd_timeout_ms);
            fail_server(a, s, UNREAD_ETIMEOUT);
        }
    }
    for (s = 0; s < a->k.nsrv; s++) {
        struct ua_server *sv = &a->as[s];

        next = min_at(next, sv->connect_at);
        for (i = 0; i < sv->len; i++)
            next =
                min_at(next, sv->fifo[(sv->head + i) % sv->cap].req->deadline);
    }
    a->next_deadline = next;
}

/* Runs the callbacks of the requests decided without the network. */
static void run_done(struct unread_async *a)
{
    struct ua_req *r;

    while ((r = a->done_head) != NULL) {
        a->done_head = r->next;
        if (a->done_head == NULL)
            a->done_tail = NULL;
        r->left = 0;
        req_complete(a, r);
    }
}

/* ---- I/O ------------------------------------------------------------------
 */

/* Reads what server s sent and completes the parts it answers. */
static void read_server(struct unread_async *a, uint32_t s)
{
    struct ua_server *sv = &a->as[s];
    struct uc_conn *c = &a->k.srv[s].conn;
    struct ur_frame_hdr h;
    const char *body;
    size_t hint;
    int rc, fd = c->fd, rounds;

    for (rounds = 0; rounds < UA_RECV_ROUNDS; rounds++) {
        rc = uc_conn_recv(c);
        if (rc == 1)
            return;
        if (rc == UNREAD_ECLOSED && sv->len == 0) {
            /* an idle connection the server closed: not a failure */
            if (sv->w_fd >= 0 && a->attached && a->hooks.watch != NULL)
                a->hooks.watch(a->hooks.data, s, -1, 0);
            sv->w_fd = -1;
            sv->w_ev = 0;
            uc_conn_drop(c);
            sv->state = UA_DOWN;
            sv->retry_at = 0;
            return;
        }
        if (rc < 0) {
            fail_server(a, s, rc);
            return;
        }
        for (;;) {
            rc = uc_conn_take_reply(c, &h, &body, &hint);
            if (rc == 1)
                break;
            if (rc == 0 && sv->len == 0) {
                snprintf(c->err, sizeof(c->err),
                         "%s: protocol error: a reply to no request",
                         a->k.addr[s].name);
                rc = UNREAD_EPROTO;
            }
            if (rc == 0)
                rc = uc_reply_status(c, &h, body);
            if (rc < 0) {
                fail_server(a, s, rc);
                return;
            }
            {
                struct ua_ref ref = fifo_pop(sv);

                uc_server_answered(&a->k, s);
                if (a->k.cl != NULL && uc_cluster_redirected(rc) &&
                    resend(a, ref.req, ref.part, rc, &h, body))
                    continue;
                part_done(a, ref.req, ref.part, rc, &h, body);
            }
            if (c->fd != fd || sv->state != UA_UP)
                return; /* a callback's decode failed the connection */
            if (c->a->sentinel != NULL && c->a->sentinel->stale &&
                sv->len == 0) {
                /* -READONLY: no longer the master; reconnect at once,
                 * asking the sentinels (unread_sentinel.h) */
                snprintf(c->err, sizeof(c->err), "%s: no longer the master",
                         a->k.addr[s].name);
                fail_server(a, s, UNREAD_ECLOSED);
                return;
            }
        }
    }
}

static void write_server(struct unread_async *a, uint32_t s)
{
    int rc = uc_conn_send(&a->k.srv[s].conn);

    if (rc < 0)
        fail_server(a, s, rc);
}

/* After every entry point: what is queued goes out, what is due fails,
 * what was decided is answered, the hooks hear what changed. A close
 * asked for by a callback is done here. */
static void finish_close(struct unread_async *a);

static void after(struct unread_async *a)
{
    int64_t now;
    uint32_t s;
    int rounds;

    for (rounds = 0; rounds < 4; rounds++) {
        now = uc_now_ms();
        expire(a, now);
        if (a->nheld > 0)
            release_held(a, now);
        run_done(a);
        /* subscriptions outlive connections: a lost one is made again */
        if (a->k.ps != NULL && !a->closing)
            for (s = 0; s < a->k.nsrv; s++)
                if (a->as[s].state == UA_DOWN && a->as[s].retry_at <= now &&
                    uc_ps_wants(&a->k, s) && server_ready(a, s) != 0 &&
                    a->as[s].retry_at <= now)
                    /* refused without an attempt (an open circuit): not
                     * again before the backoff */
                    a->as[s].retry_at = now + a->as[s].backoff_ms;
        for (s = 0; s < a->k.nsrv; s++) {
            struct uc_conn *c = &a->k.srv[s].conn;

            /* TLS: replies decrypted already, which no poll reports */
            if (a->as[s].state == UA_UP && c->ssl != NULL &&
                uc_tls_pending(c->ssl) > 0)
                read_server(a, s);
            if (a->as[s].state == UA_UP && c->out_pos < c->out.len)
                write_server(a, s);
        }
        if (a->done_head == NULL)
            break;
    }
    slots_ask(a); /* cluster mode: a map made stale meanwhile */
    for (s = 0; s < a->k.nsrv; s++)
        watch(a, s);
    a->timer_at = -1;
    arm_timer(a);
}

/*
 * Every entry point from the loop runs between enter (depth++) and
 * leave: the outermost leave does after(), and a close asked for by a
 * callback meanwhile happens there, last. true when the handle is gone.
 */
static bool leave(struct unread_async *a)
{
    if (a->depth == 1)
        after(a);
    a->depth--;
    if (a->depth == 0 && a->closing) {
        finish_close(a);
        return true;
    }
    return false;
}

static void events(struct unread_async *a, int fd, int revents)
{
    uint32_t s;

    for (s = 0; s < a->k.nsrv; s++) {
        struct ua_server *sv = &a->as[s];

        if (a->k.srv[s].conn.fd != fd)
            continue;
        if (sv->state == UA_CONNECTING) {
            connected(a, s);
            if (sv->state == UA_UP)
                write_server(a, s);
        } else if (sv->state == UA_UP) {
            if (revents & UNREAD_EV_WRITE)
                write_server(a, s);
            if ((revents & UNREAD_EV_READ) && sv->state == UA_UP)
                read_server(a, s);
        }
        break;
    }
}

void unread_async_handle_events(struct unread_async *a, int fd, int revents)
{
    if (a == NULL || fd < 0 || a->depth > 0)
        return;
    a->depth++;
    events(a, fd, revents);
    (void)leave(a);
}

void unread_async_handle_timeout(struct unread_async *a)
{
    if (a == NULL || a->depth > 0)
        return;
    a->depth++;
    (void)leave(a);
}

void unread_async_flush(struct unread_async *a)
{
    uint32_t s;

    for (s = 0; s < a->k.nsrv; s++) {
        struct uc_conn *c = &a->k.srv[s].conn;

        if (a->as[s].state == UA_UP && c->out_pos < c->out.len)
            write_server(a, s);
        watch(a, s);
    }
}

size_t unread_async_fds(const struct unread_async *a,
                        struct unread_async_pollfd *out, size_t max)
{
    size_t n = 0;
    uint32_t s;
    int fd, ev;

    for (s = 0; s < a->k.nsrv; s++) {
        wanted(a, s, &fd, &ev);
        if (fd < 0 || ev == 0)
            continue;
        if (n < max) {
            out[n].fd = fd;
            out[n].events = ev;
        }
        n++;
    }
    return n;
}

int unread_async_timeout(const struct unread_async *a)
{
    int64_t at = due_at(a), now;

    if (at < 0)
        return -1;
    now = uc_now_ms();
    if (at <= now)
        return 0;
    return at - now > INT32_MAX ? INT32_MAX : (int)(at - now);
}

size_t unread_async_poll(struct unread_async *a, int timeout_ms)
{
    struct pollfd *p;
    struct unread_async_pollfd *w;
    size_t n, i;
    int t, ready;

    n = a->k.nsrv;
    p = calloc(n > 0 ? n : 1, sizeof(*p));
    w = calloc(n > 0 ? n : 1, sizeof(*w));
    if (p == NULL || w == NULL) {
        free(p);
        free(w);
        return a->pending;
    }
    n = unread_async_fds(a, w, n);
    for (i = 0; i < n; i++) {
        p[i].fd = w[i].fd;
        p[i].events = (short)(((w[i].events & UNREAD_EV_READ) ? POLLIN : 0) |
                              ((w[i].events & UNREAD_EV_WRITE) ? POLLOUT : 0));
    }
    t = unread_async_timeout(a);
    if (t < 0 || (timeout_ms >= 0 && timeout_ms < t))
        t = timeout_ms;
    do {
        ready = poll(p, (nfds_t)n, t);
    } while (ready < 0 && errno == EINTR);
    a->depth++;
    for (i = 0; i < n && ready > 0; i++) {
        int ev = 0;

        if (p[i].revents & (POLLIN | POLLHUP | POLLERR))
            ev |= UNREAD_EV_READ;
        if (p[i].revents & POLLOUT)
            ev |= UNREAD_EV_WRITE;
        if (ev != 0 && !a->closing)
            events(a, p[i].fd, ev);
    }
    free(p);
    free(w);
    if (leave(a))
        return 0;
    return a->pending;
}

int unread_async_attach(struct unread_async *a,
                        const struct unread_async_hooks *hooks)
{
    uint32_t s;

    if (a->attached)
        return uc_err(&a->k, UNREAD_EUSAGE, "hooks are already attached");
    a->hooks = *hooks;
    a->attached = true;
    a->timer_at = -1;
    for (s = 0; s < a->k.nsrv; s++) {
        a->as[s].w_fd = -1;
        a->as[s].w_ev = 0;
        watch(a, s);
    }
    arm_timer(a);
    return 0;
}

/* ---- Pub/sub (unread_pubsub.c) ------------------------------------------ */

/* A push frame read on server k's connection: a subscription's message
 * goes to its callback now, on the loop. */
static void async_push(void *ctx, struct uc_conn *k, const char *body,
                       uint32_t len)
{
    struct unread_async *a = ctx;
    uint32_t s;

    for (s = 0; s < a->k.nsrv; s++)
        if (&a->k.srv[s].conn == k)
            (void)uc_ps_dispatch(&a->k, a, s, body, len);
}

int ua_ps_send(struct unread_async *a, uint32_t s, uint16_t op, unsigned argc,
               const struct unread_arg *argv)
{
    bool leaving = op == UR_OP_UNSUBSCRIBE || op == UR_OP_PUNSUBSCRIBE;
    int rc = 0;

    if (a->closing)
        return uc_err(&a->k, UNREAD_EUSAGE, "the handle is closing");
    if (a->as[s].state == UA_DOWN) {
        /* a new connection makes what the table holds, this one too */
        if (!leaving)
            rc = server_ready(a, s);
    } else if (internal_send(a, s, UA_PUBSUB, op, argc, argv) != 0) {
        rc = uc_err(&a->k, UNREAD_ENOMEM, "out of memory");
    }
    watch(a, s);
    if (a->depth == 0)
        arm_timer(a);
    return rc;
}

/* ---- The handle ------------------------------------------------------------
 */

struct unread_async *unread_async_connect(const char *servers,
                                          const struct unread_opts *opts,
                                          char *err, size_t errlen)
{
    struct unread_async *a;
    struct unread_opts *dflt = NULL;
    struct uc_addr *addr;
    char local[UC_CORE_ERRLEN];
    size_t n;
    uint32_t s;

    if (err == NULL || errlen == 0) {
        err = local;
        errlen = sizeof(local);
    }
    if (servers == NULL) {
        snprintf(err, errlen, "no servers");
        return NULL;
    }
    if (opts == NULL && (opts = dflt = unread_opts_new()) == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL ||
        uc_core_addrs(servers, NULL, 0, opts, &addr, &n, err, errlen) != 0) {
        if (a == NULL)
            snprintf(err, errlen, "out of memory");
        free(a);
        unread_opts_free(dflt);
        return NULL;
    }
    if (uc_core_init(&a->k, addr, n, opts, err, errlen) != 0 ||
        (a->as = calloc(opts->cluster ? UC_CLUSTER_CAP : n, sizeof(*a->as))) ==
            NULL) {
        if (a->as == NULL && a->k.srv != NULL)
            snprintf(err, errlen, "out of memory");
        uc_core_deinit(&a->k);
        free(a);
        unread_opts_free(dflt);
        return NULL;
    }
    unread_opts_free(dflt);
    a->cmd_timeout_ms = a->k.opt.read_timeout_ms;
    a->next_deadline = -1;
    a->timer_at = -1;
    servers_setup(a);
    for (s = 0; s < n; s++)
        (void)server_ready(a, s); /* a failure is found out by requests */
    slots_ask(a); /* cluster mode: until it answers, seeds redirect */
    return a;
}

static void finish_close(struct unread_async *a)
{
    uint32_t s;

    a->depth++;         /* callbacks below may not close again */
    release_held(a, 0); /* closing: each fails as closed */
    for (s = 0; s < a->k.nsrv; s++) {
        snprintf(a->k.srv[s].conn.err, sizeof(a->k.srv[s].conn.err),
                 "%s: the handle was closed", a->k.addr[s].name);
        if (a->as[s].len > 0 || a->as[s].state != UA_DOWN)
            fail_server(a, s, UNREAD_ECLOSED);
    }
    run_done(a);
    if (a->attached && a->hooks.detach != NULL)
        a->hooks.detach(a->hooks.data);
    for (s = 0; s < a->k.nsrv; s++)
        free(a->as[s].fifo);
    free(a->as);
    free(a->held);
    uc_core_deinit(&a->k);
    free(a);
}

void unread_async_close(struct unread_async *a)
{
    if (a == NULL || a->closing)
        return;
    a->closing = true;
    if (a->depth == 0)
        finish_close(a);
}

void unread_async_set_timeout(struct unread_async *a, int timeout_ms)
{
    a->cmd_timeout_ms = timeout_ms;
}

size_t unread_async_pending(const struct unread_async *a)
{
    return a->pending;
}

const char *unread_async_errstr(const struct unread_async *a)
{
    return a->k.err;
}

size_t unread_async_shards(const struct unread_async *a)
{
    return a->k.nsrv;
}

size_t unread_async_shard_of(const struct unread_async *a, uint64_t key)
{
    return uc_shard_of(&a->k, key);
}

const char *unread_async_shard_name(const struct unread_async *a, size_t i)
{
    return i < a->k.nsrv ? a->k.addr[i].name : NULL;
}

int unread_async_shard_circuit(const struct unread_async *a, size_t i)
{
    return i < a->k.nsrv ? a->k.srv[i].brk.state : -1;
}

int unread_async_command(struct unread_async *a, const char *name,
                         uint16_t opcode, unsigned argc,
                         const struct unread_arg *argv,
                         struct unread_reply **out, unread_async_cb *cb,
                         void *priv)
{
    struct uc_call q;
    uint16_t op = 0;
    int rc;

    *out = NULL;
    rc = uc_resolve_op(&a->k, name, opcode, &op);
    if (rc == 0)
        rc = uc_q_args(&a->k, &q, op, argc, argv);
    if (rc != 0)
        return rc;
    uc_q_tree(&q, out);
    return uc_async(a, &q, cb, priv);
}

int unread_async_type(struct unread_async *a, const char *name, unsigned *type)
{
    if (!a->k.types_known && !(name[0] >= '0' && name[0] <= '9'))
        return uc_err(&a->k, UNREAD_EUNAVAIL,
                      "the servers' counter types are not known yet");
    return uc_core_type(&a->k, name, type);
}
