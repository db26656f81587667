/*
 * unread.c - the libunread handle: routing over one or many servers,
 * circuit breakers and degraded replies, and the one request engine behind
 * synchronous calls and pipelines.
 *
 * A handle holds one connection per server (unread_conn.h). Every request
 * goes through the same three steps, a synchronous call being a pipeline
 * of one:
 *   queue  route it (the op table's flags and its first argument), check
 *          the server's circuit, connect if needed, encode it into that
 *          server's output buffer, and record a slot in the round's order
 *          list (a global write takes one slot per server);
 *   flush  send every server's queued frames;
 *   read   take the next request's slots in queue order, read each reply
 *          from its server (each server answers in its own request order,
 *          so reading in the caller's order needs no reordering), combine
 *          a global write's replies, merge a split request's replies, and
 *          turn unreachable reads into the default when degraded mode is
 *          on.
 * A request for many users (OPF_UIDS) whose uids live on several servers
 * is split: each server gets the arguments before the uids and its own
 * uids in their order, one slot each, and the replies (arrays with one
 * element per uid) are merged back into one array in the caller's order.
 * A request whose server could not be used is decided at queue time: its
 * slot carries the outcome and no frame, so every queued request has
 * exactly one reply to read, in order.
 *
 * A "round" is a synchronous call, or a pipeline from begin to its last
 * read or reset. A server that fails during a round is not tried again in
 * that round (a pipeline of 10,000 requests to a dead server costs one
 * connect attempt, not 10,000).
 */
#include "unread.h"
#include "unread_int.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "frame.h"
#include "ops.h"
#include "proto.h"
#include "unread_conn.h"
#include "unread_shard.h"

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
UNREAD_SAME(UNREAD_ERR_EXECABORT, UR_E_EXECABORT);
UNREAD_SAME(UR_E__COUNT, 14); /* a new code in proto.h: add it to unread.h */
/* Reply kinds are the wire's value tags. */
UNREAD_SAME(UNREAD_REPLY_INT, UR_VAL_INT);
UNREAD_SAME(UNREAD_REPLY_STR, UR_VAL_STR);
UNREAD_SAME(UNREAD_REPLY_ARRAY, UR_VAL_ARR);
UNREAD_SAME(UNREAD_REPLY_NIL, UR_VAL_NIL);
UNREAD_SAME(UNREAD_REPLY_STATUS, UR_VAL_STATUS);
UNREAD_SAME(UNREAD_REPLY_ERROR, UR_VAL_ERR);
UNREAD_SAME(UNREAD_REPLY_SINT, UR_VAL_SINT);
/* Circuit states are the breaker's. */
UNREAD_SAME(UNREAD_CIRCUIT_CLOSED, UC_CLOSED);
UNREAD_SAME(UNREAD_CIRCUIT_OPEN, UC_OPEN);
UNREAD_SAME(UNREAD_CIRCUIT_HALF_OPEN, UC_HALF_OPEN);
#undef UNREAD_SAME
_Static_assert(UNREAD_DEGRADED > UINT16_MAX, "a wire code could collide");

#define UNREAD_ERRLEN 512
#define UC_PENDING INT_MIN /* slot outcome: the reply is still to be read */
#define UC_ALL UINT32_MAX  /* route: every server (a global write) */
#define UC_SPLIT (UINT32_MAX - 1) /* route: split by uid (OPF_UIDS) */
#define UC_FIRST_SERVER 0         /* route of admin and unkeyed commands */
#define UC_SLOTS_KEEP 4096        /* slots an idle handle keeps */
#define UC_BATCH_KEEP 65536       /* batch body bytes an idle handle keeps */

struct uc_server {
    struct uc_conn conn;
    struct uc_breaker brk; /* used while degraded mode is on */
    int round_rc;          /* its failure in the current round, or 0 */
};

/* One request's part on one server, in queue order. */
struct uc_slot {
    uint32_t server;
    uint16_t op;
    uint16_t span;    /* on a request's first slot: its slot count */
    int rc;           /* UC_PENDING, or the outcome decided without a reply */
    uint16_t nbatch;  /* a batch frame: its command count */
    bool batch_reads; /* ... all of them reads: degraded mode may answer */
    bool split;       /* one server's share of a split request */
    uint32_t nuids;   /* first slot of a split: its uids, whose servers */
    size_t map_off;   /* ... are c->split_map[map_off .. + nuids) */
};

/* The batch being queued (unread_batch_begin): its commands encoded as a
 * batch frame's body, all routed to one server. */
struct uc_batch {
    bool open;
    bool writes;     /* holds a command that is not a read */
    uint32_t server; /* where its commands route */
    uint16_t n;      /* commands */
    struct ur_buf body;
};

/* One server's answer to one slot. */
struct uc_res {
    int rc;
    uint32_t server;
    struct ur_frame_hdr h;
    const char *body; /* when rc >= 0 */
};

struct unread {
    struct uc_addr *addr; /* nsrv, as listed */
    struct uc_server *srv;
    size_t nsrv;
    struct uc_ring ring; /* when nsrv > 1 */
    struct unread_opts opt;
    struct uc_breaker_cfg brk_cfg;

    struct uc_slot *slot; /* the round's slots; [head, tail) to read */
    size_t head, tail, cap;
    size_t unflushed;   /* requests queued, not yet flushed */
    size_t pending;     /* requests flushed, reply not yet read */
    bool piping;        /* a pipeline is open */
    uint32_t last_srv;  /* server of the last synchronous reply */
    struct uc_res *res; /* nsrv: one request's replies */
    struct ur_buf dflt; /* reply body of a degraded read: INT default */
    struct uc_batch batch;
    struct ur_buf dflt_batch; /* ... of a degraded batch: ARRAY of defaults */
    uint32_t *split_map;      /* the round's split requests: uid -> server */
    size_t split_len, split_cap;
    struct unread_arg *split_argv; /* one server's share, while queuing */
    size_t split_argc_cap;
    struct ur_buf merged; /* the reply body of the last split request */
    uint32_t *share_of;   /* nsrv: server -> its share, while merging */
    char *password;       /* sent on every (re)connect (unread_auth), or NULL */

    char err[UNREAD_ERRLEN];
};

/* Records the message for the last failure and returns rc. */
int uc_set_err(struct unread *c, int rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->err, sizeof(c->err), fmt, ap);
    va_end(ap);
    return rc;
}

/* Failures that say a server could not be reached or could not be
 * trusted: they count against its circuit and degrade reads. */
static bool is_unreachable(int rc)
{
    return rc == UNREAD_ECONNECT || rc == UNREAD_ETIMEOUT || rc == UNREAD_EIO ||
           rc == UNREAD_ECLOSED || rc == UNREAD_EPROTO || rc == UNREAD_EUNAVAIL;
}

/* ---- Routing ----------------------------------------------------------- */

/* Routing comes from the op table's flags only (protocol/ops.def): a
 * write every server must see (OPF_GLOBAL), or a command keyed by its
 * first argument, a uid (OPF_USER) or a group (OPF_GID). */
static bool op_is_global(const struct ur_op *o)
{
    return (o->flags & OPF_GLOBAL) != 0;
}

static bool op_is_keyed(const struct ur_op *o)
{
    return (o->flags & (OPF_USER | OPF_GID)) != 0;
}

/* Many users per call: every argument from ur_op_uids_from() on is a
 * uid. */
static bool op_is_uids(const struct ur_op *o)
{
    return (o->flags & OPF_UIDS) != 0;
}

/* A key argument: an integer, or a string holding a canonical decimal
 * (unread-cli and generic callers may send either). */
static bool arg_key(const struct unread_arg *a, uint64_t *key)
{
    if (a->kind == UNREAD_ARG_INT) {
        *key = a->num;
        return true;
    }
    return a->kind == UNREAD_ARG_STR && a->str != NULL &&
           ur_parse_uint(a->str, a->len, UINT64_MAX, key) == UR_NUM_OK;
}

/*
 * The server of a request for many users: the one holding all its uids,
 * or UC_SPLIT. A uid that is not a usable key sends the whole request to
 * the first server, whose error reply is the answer.
 */
static uint32_t route_uids(const struct unread *c, const struct ur_op *o,
                           unsigned argc, const struct unread_arg *argv)
{
    unsigned from = ur_op_uids_from(o->flags), i;
    uint32_t first = UC_FIRST_SERVER, s;
    uint64_t key;

    for (i = from; i < argc; i++) {
        if (!arg_key(&argv[i], &key))
            return UC_FIRST_SERVER;
        s = uc_ring_find(&c->ring, key);
        if (i == from)
            first = s;
        else if (s != first)
            return UC_SPLIT;
    }
    return first;
}

/*
 * The server of a request, UC_ALL or UC_SPLIT. A keyed request without a
 * usable key goes to the first server, whose error reply (arity, bad uid)
 * is the answer.
 */
static uint32_t route(const struct unread *c, uint16_t op, unsigned argc,
                      const struct unread_arg *argv)
{
    const struct ur_op *o;
    uint64_t key;

    if (c->nsrv == 1)
        return UC_FIRST_SERVER;
    o = ur_op_by_code(op);
    if (o == NULL)
        return UC_FIRST_SERVER;
    if (op_is_global(o))
        return UC_ALL;
    if (op_is_uids(o))
        return route_uids(c, o, argc, argv);
    if (!op_is_keyed(o) || argc == 0 || !arg_key(&argv[0], &key))
        return UC_FIRST_SERVER;
    return uc_ring_find(&c->ring, key);
}

static bool op_is_read(uint16_t op)
{
    const struct ur_op *o = ur_op_by_code(op);

    return o != NULL && (o->flags & OPF_READ);
}

/* ---- Servers: breaker and failures --------------------------------------- */

/* Drops a server's connection after a failure; a failure of reachability
 * counts against its circuit. */
static void server_down(struct unread *c, uint32_t s, int rc)
{
    struct uc_server *sv = &c->srv[s];

    uc_conn_drop(&sv->conn);
    if (c->opt.degraded && is_unreachable(rc))
        uc_breaker_done(&sv->brk, &c->brk_cfg, false, uc_now_ms());
}

/* A server failed during the round: the requests it still owes fail with
 * rc, and the round does not use it again. */
static void server_failed(struct unread *c, uint32_t s, int rc)
{
    size_t i;

    for (i = c->head; i < c->tail; i++)
        if (c->slot[i].server == s && c->slot[i].rc == UC_PENDING)
            c->slot[i].rc = rc;
    c->srv[s].round_rc = rc;
    server_down(c, s, rc);
}

static void server_answered(struct unread *c, uint32_t s)
{
    if (c->opt.degraded)
        uc_breaker_done(&c->srv[s].brk, &c->brk_cfg, true, uc_now_ms());
}

/*
 * Readies server s for a request of this round: 0, or why it cannot take
 * one. An open circuit refuses without touching the network. A server
 * that already failed this round is not tried again: in degraded mode the
 * request is UNREAD_EUNAVAIL (never sent), not the earlier failure, which
 * would say it might have been applied.
 */
static int server_ready(struct unread *c, uint32_t s)
{
    struct uc_server *sv = &c->srv[s];
    int64_t now;
    int rc;

    if (sv->round_rc != 0)
        return c->opt.degraded ? UNREAD_EUNAVAIL : sv->round_rc;
    if (c->opt.degraded) {
        now = uc_now_ms();
        if (!uc_breaker_admit(&sv->brk, &c->brk_cfg, now)) {
            snprintf(sv->conn.err, sizeof(sv->conn.err),
                     "%s: circuit open after %u failures (probe in %lld ms)",
                     c->addr[s].name, (unsigned)sv->brk.failures,
                     (long long)uc_breaker_wait(&sv->brk, &c->brk_cfg, now));
            return UNREAD_EUNAVAIL;
        }
    }
    rc = uc_conn_ensure(&sv->conn, c->opt.connect_timeout_ms);
    if (rc != 0)
        server_failed(c, s, rc);
    return rc;
}

/* ---- Rounds: queue, flush, read ------------------------------------------ */

static int slots_reserve(struct unread *c, size_t n)
{
    struct uc_slot *p;
    size_t cap;

    if (c->tail + n <= c->cap)
        return 0;
    cap = c->cap > 0 ? c->cap * 2 : 64;
    while (cap < c->tail + n)
        cap *= 2;
    p = realloc(c->slot, cap * sizeof(*p));
    if (p == NULL)
        return -1;
    c->slot = p;
    c->cap = cap;
    return 0;
}

static void slot_push(struct unread *c, uint32_t s, uint16_t op, size_t span,
                      int rc)
{
    struct uc_slot *sl = &c->slot[c->tail++];

    sl->server = s;
    sl->op = op;
    sl->span = (uint16_t)span;
    sl->rc = rc;
    sl->nbatch = op == UR_FRAME_OP_BATCH ? c->batch.n : 0;
    sl->batch_reads = op == UR_FRAME_OP_BATCH && !c->batch.writes;
    sl->split = false;
    sl->nuids = 0;
    sl->map_off = 0;
}

/* The round is over: every server may be tried again, and what a long
 * pipeline made the order list hold is given back. */
static void round_end(struct unread *c)
{
    size_t s;

    if (c->cap > UC_SLOTS_KEEP) {
        free(c->slot);
        c->slot = NULL;
        c->cap = 0;
    }
    c->head = 0;
    c->tail = 0;
    c->unflushed = 0;
    c->pending = 0;
    c->split_len = 0;
    ur_buf_shrink(&c->merged, UC_BATCH_KEEP);
    for (s = 0; s < c->nsrv; s++)
        c->srv[s].round_rc = 0;
}

/* Arguments are checked once, before routing, so a usage error is the
 * answer whatever state the servers are in. */
static int args_check(struct unread *c, unsigned argc,
                      const struct unread_arg *argv)
{
    unsigned i;

    if (argc > UINT16_MAX)
        return uc_set_err(c, UNREAD_EUSAGE, "%u arguments: at most %u", argc,
                          (unsigned)UINT16_MAX);
    for (i = 0; i < argc; i++) {
        if (argv[i].kind == UNREAD_ARG_INT)
            continue;
        if (argv[i].kind != UNREAD_ARG_STR || argv[i].len > UINT32_MAX ||
            (argv[i].str == NULL && argv[i].len > 0))
            return uc_set_err(c, UNREAD_EUSAGE,
                              "argument %u: bad kind, length or pointer", i);
    }
    return 0;
}

/* Room for n more entries of the round's uid -> server map. */
static int split_map_reserve(struct unread *c, size_t n)
{
    uint32_t *p;
    size_t cap;

    if (c->split_len + n <= c->split_cap)
        return 0;
    cap = c->split_cap > 0 ? c->split_cap * 2 : 1024;
    while (cap < c->split_len + n)
        cap *= 2;
    p = realloc(c->split_map, cap * sizeof(*p));
    if (p == NULL)
        return -1;
    c->split_map = p;
    c->split_cap = cap;
    return 0;
}

/*
 * Queues a request for many users split by server (route_uids said
 * UC_SPLIT): one frame per server holding some of its uids, each with the
 * arguments before the uids and its uids in the caller's order; one slot
 * per such server, in server order. A server that cannot take its share
 * gets a slot with the outcome and no frame: its uids fail, or in
 * degraded mode read as the default (merge). 0, or nothing queued.
 */
static int req_queue_split(struct unread *c, uint16_t op, unsigned argc,
                           const struct unread_arg *argv)
{
    const struct ur_op *o = ur_op_by_code(op);
    unsigned from = ur_op_uids_from(o->flags), n = argc - from, i, k = 0;
    size_t first_slot = c->tail, off = c->split_len;
    uint32_t s, *map;
    uint64_t key;
    int rc;

    if (slots_reserve(c, c->nsrv) != 0 || split_map_reserve(c, n) != 0)
        return uc_set_err(c, UNREAD_ENOMEM, "out of memory queuing a request");
    if (c->split_argc_cap < argc) {
        struct unread_arg *a = realloc(c->split_argv, argc * sizeof(*a));

        if (a == NULL)
            return uc_set_err(c, UNREAD_ENOMEM,
                              "out of memory queuing a request");
        c->split_argv = a;
        c->split_argc_cap = argc;
    }
    map = c->split_map + off;
    for (i = 0; i < n; i++) {
        (void)arg_key(&argv[from + i], &key); /* route_uids checked it */
        map[i] = uc_ring_find(&c->ring, key);
    }
    memcpy(c->split_argv, argv, from * sizeof(*argv));
    for (s = 0; s < c->nsrv; s++) {
        unsigned m = from;

        for (i = 0; i < n; i++)
            if (map[i] == s)
                c->split_argv[m++] = argv[from + i];
        if (m == from)
            continue;
        rc = server_ready(c, s);
        if (rc == 0 &&
            uc_conn_encode(&c->srv[s].conn, op, m, c->split_argv) != 0) {
            for (i = first_slot; i < c->tail; i++)
                if (c->slot[i].rc == UC_PENDING)
                    uc_conn_unencode(&c->srv[c->slot[i].server].conn);
            c->tail = first_slot;
            return uc_set_err(c, UNREAD_ENOMEM,
                              "out of memory encoding a request");
        }
        slot_push(c, s, op, 0, rc == 0 ? UC_PENDING : rc);
        c->slot[c->tail - 1].split = true;
        k++;
    }
    c->slot[first_slot].span = (uint16_t)k;
    c->slot[first_slot].nuids = n;
    c->slot[first_slot].map_off = off;
    c->split_len += n;
    c->unflushed++;
    return 0;
}

/*
 * Queues one request for server `to` (or UC_ALL, or UC_SPLIT). 0: it has
 * its slots and one reply to read. Else nothing was queued (usage error,
 * out of memory). A global write is sent to no server unless every server
 * can take it.
 */
static int req_queue(struct unread *c, uint32_t to, uint16_t op, unsigned argc,
                     const struct unread_arg *argv)
{
    uint32_t s, first = to == UC_ALL ? 0 : to;
    size_t n = to == UC_ALL ? c->nsrv : 1;
    int rc;

    rc = args_check(c, argc, argv);
    if (rc != 0)
        return rc;
    if (to == UC_SPLIT)
        return req_queue_split(c, op, argc, argv);
    if (slots_reserve(c, n) != 0)
        return uc_set_err(c, UNREAD_ENOMEM, "out of memory queuing a request");
    for (s = first; s < first + n; s++) {
        rc = server_ready(c, s);
        if (rc != 0) {
            slot_push(c, s, op, 1, rc);
            c->unflushed++;
            return 0;
        }
    }
    for (s = first; s < first + n; s++) {
        if ((op == UR_FRAME_OP_BATCH
                 ? uc_conn_encode_batch(&c->srv[s].conn, c->batch.n,
                                        c->batch.body.data, c->batch.body.len)
                 : uc_conn_encode(&c->srv[s].conn, op, argc, argv)) != 0) {
            while (s-- > first)
                uc_conn_unencode(&c->srv[s].conn);
            return uc_set_err(c, UNREAD_ENOMEM,
                              "out of memory encoding a request");
        }
    }
    for (s = first; s < first + n; s++)
        slot_push(c, s, op, s == first ? n : 0, UC_PENDING);
    c->unflushed++;
    return 0;
}

/* Sends every server's queued frames, all within one write timeout. 0, or
 * the first failure (with its message). */
static int flush_all(struct unread *c)
{
    struct uc_deadline d = uc_deadline(c->opt.write_timeout_ms, "write");
    uint32_t s;
    int rc, first = 0;

    for (s = 0; s < c->nsrv; s++) {
        if (c->srv[s].conn.queued == 0)
            continue;
        rc = uc_conn_flush(&c->srv[s].conn, &d);
        if (rc == 0)
            continue;
        if (first == 0)
            first = uc_set_err(c, rc, "%s", c->srv[s].conn.err);
        server_failed(c, s, rc);
    }
    c->pending += c->unflushed;
    c->unflushed = 0;
    return first;
}

/*
 * The status of a reply: 0, or the server's error code. A non-zero status
 * must carry one error value with the same code, and a zero status must
 * not carry an error value (frame.h); else UNREAD_EPROTO.
 */
static int reply_status(struct uc_conn *k, const struct ur_frame_hdr *h,
                        const char *body)
{
    struct ur_val_reader rd;
    struct ur_val v;

    ur_val_reader_init(&rd, body, h->len);
    if (ur_val_next(&rd, &v) &&
        ((h->op == 0 && v.kind != UR_VAL_ERR) ||
         (h->op != 0 && v.kind == UR_VAL_ERR && v.code == h->op)))
        return h->op;
    snprintf(k->err, sizeof(k->err),
             "%s: protocol error: reply status %u does not match its value",
             k->a->name, (unsigned)h->op);
    return UNREAD_EPROTO;
}

/* Reads one slot's reply (or takes its decided outcome). */
static void slot_read(struct unread *c, const struct uc_slot *sl,
                      const struct uc_deadline *d, struct uc_res *r)
{
    struct uc_conn *k = &c->srv[sl->server].conn;

    r->server = sl->server;
    r->rc = sl->rc;
    if (r->rc != UC_PENDING)
        return;
    r->rc = uc_conn_reply(k, d, &r->h, &r->body);
    if (r->rc == 0)
        r->rc = reply_status(k, &r->h, r->body);
    if (r->rc < 0)
        server_failed(c, sl->server, r->rc);
    else
        server_answered(c, sl->server);
}

/* The seq of a GRP.POST reply, or false when it is not one integer. */
static bool res_int(const struct uc_res *r, uint64_t *v)
{
    struct ur_val_reader rd;

    ur_val_reader_init(&rd, r->body, r->h.len);
    return uc_rd_int(&rd, v);
}

/*
 * One answer from a global write's n replies: the first client-side
 * failure, else the first server error, else the first server's reply -
 * after checking that GRP.POST's seqs agree (UNREAD_EMISMATCH, with every
 * server's answer in errstr).
 */
static void combine(struct unread *c, uint16_t op, size_t n, struct uc_res *out)
{
    size_t i, pick = n, len;
    uint64_t v0 = 0, v = 0;
    bool same;

    for (i = 0; i < n && pick == n; i++)
        if (c->res[i].rc < 0)
            pick = i;
    for (i = 0; i < n && pick == n; i++)
        if (c->res[i].rc > 0)
            pick = i;
    *out = c->res[pick == n ? 0 : pick];
    if (out->rc != 0 || op != UR_OP_GRP_POST)
        return;
    same = res_int(&c->res[0], &v0);
    for (i = 1; i < n && same; i++)
        same = res_int(&c->res[i], &v) && v == v0;
    if (same)
        return;
    len = (size_t)snprintf(c->err, sizeof(c->err),
                           "GRP.POST: servers disagree on the seq:");
    for (i = 0; i < n && len < sizeof(c->err); i++) {
        if (res_int(&c->res[i], &v))
            len += (size_t)snprintf(c->err + len, sizeof(c->err) - len,
                                    " %s=%llu", c->addr[c->res[i].server].name,
                                    (unsigned long long)v);
        else
            len += (size_t)snprintf(c->err + len, sizeof(c->err) - len,
                                    " %s=(not an integer)",
                                    c->addr[c->res[i].server].name);
    }
    out->rc = UNREAD_EMISMATCH;
}

/* The message of a server's error reply, as the text protocol shows it. */
static void set_reply_err(struct unread *c, const struct uc_res *r)
{
    struct ur_val_reader rd;
    struct ur_val v;

    ur_val_reader_init(&rd, r->body, r->h.len);
    if (ur_val_next(&rd, &v))
        uc_set_err(c, r->rc, "%s %.*s", ur_err_prefix(v.code), (int)v.len,
                   v.str);
}

/*
 * What the caller sees: errstr for a failure, and degraded mode's
 * mapping - a read that could not reach its server is the default
 * (errstr keeps the reason), a write that never left is UNREAD_EUNAVAIL.
 */
/* The reply body of a degraded batch of n reads: an ARRAY holding the
 * default n times. 0, or -1 when out of memory. */
static int degraded_batch(struct unread *c, uint16_t n)
{
    uint16_t i;
    int rc;

    c->dflt_batch.len = 0;
    rc = ur_frame_put_arr(&c->dflt_batch, n);
    for (i = 0; i < n && rc == 0; i++)
        rc = ur_frame_put_int(&c->dflt_batch, c->opt.default_value);
    return rc;
}

static void surface(struct unread *c, const struct uc_slot *sl,
                    struct uc_res *r)
{
    bool batch = sl->op == UR_FRAME_OP_BATCH;

    if (r->rc > 0) {
        set_reply_err(c, r);
        return;
    }
    if (r->rc == 0 || r->rc == UNREAD_EMISMATCH)
        return;
    uc_set_err(c, r->rc, "%s", c->srv[r->server].conn.err);
    if (!c->opt.degraded || !is_unreachable(r->rc))
        return;
    if (batch ? sl->batch_reads : op_is_read(sl->op)) {
        if (batch && degraded_batch(c, sl->nbatch) != 0) {
            r->rc = uc_set_err(c, UNREAD_ENOMEM, "out of memory");
            return;
        }
        r->rc = UNREAD_DEGRADED;
        memset(&r->h, 0, sizeof(r->h));
        r->h.len = (uint32_t)(batch ? c->dflt_batch.len : c->dflt.len);
        r->body = batch ? c->dflt_batch.data : c->dflt.data;
    } else if (r->rc == UNREAD_ECONNECT) {
        r->rc = UNREAD_EUNAVAIL;
    }
}

/* Skips one value (an array with all its elements) in rd. */
static bool skip_value(struct ur_val_reader *rd)
{
    struct ur_val v;
    uint64_t left = 1;

    while (left > 0) {
        if (!ur_val_next(rd, &v))
            return false;
        left--;
        if (v.kind == UR_VAL_ARR)
            left += v.count;
    }
    return true;
}

/* Whether a failed share of a split read reads as defaults. */
static bool split_degrades(const struct unread *c, uint16_t op, int rc)
{
    return c->opt.degraded && is_unreachable(rc) && op_is_read(op);
}

/* One server's share of a split request, while merging. */
struct uc_share {
    struct ur_val_reader rd;
    uint32_t sent; /* uids it was sent */
};

/*
 * One answer from the span replies of a split request (first: its first
 * slot): each an array with one element per uid the server was sent, put
 * back in the caller's order into c->merged. A failed share fails the
 * request (the first client-side failure, else the first server error),
 * except in degraded mode, where an unreachable server's uids read as the
 * default and the answer is UNREAD_DEGRADED. false when the answer is a
 * failure for surface() to describe.
 */
static bool merge(struct unread *c, const struct uc_slot *first, size_t span,
                  struct uc_res *out)
{
    const struct uc_slot *sl = &c->slot[c->head - span];
    const uint32_t *map = c->split_map + first->map_off;
    struct uc_share local[16], *sh = local;
    size_t i, pick = span;
    bool degraded = false;
    int rc = UNREAD_ENOMEM;

    for (i = 0; i < span && pick == span; i++)
        if (c->res[i].rc < 0 && !split_degrades(c, first->op, c->res[i].rc))
            pick = i;
    for (i = 0; i < span && pick == span; i++)
        if (c->res[i].rc > 0)
            pick = i;
    if (pick != span) {
        *out = c->res[pick];
        return false;
    }
    memset(out, 0, sizeof(*out));
    out->server = c->res[0].server;
    if (span > 16 && (sh = calloc(span, sizeof(*sh))) == NULL)
        goto fail;
    /* share_of: server -> its share (slot) index; the slots are in server
     * order, one per server with uids */
    for (i = 0; i < span; i++) {
        c->share_of[sl[i].server] = (uint32_t)i;
        sh[i].sent = 0;
    }
    for (uint32_t u = 0; u < first->nuids; u++)
        sh[c->share_of[map[u]]].sent++;
    for (i = 0; i < span; i++) {
        struct ur_val v;

        if (c->res[i].rc != 0) {
            degraded = true;
            continue;
        }
        ur_val_reader_init(&sh[i].rd, c->res[i].body, c->res[i].h.len);
        if (!ur_val_next(&sh[i].rd, &v) || v.kind != UR_VAL_ARR ||
            v.count != sh[i].sent) {
            rc = uc_shape_err(c, first->op);
            goto fail;
        }
    }
    c->merged.len = 0;
    if (ur_frame_put_arr(&c->merged, first->nuids) != 0)
        goto fail;
    for (uint32_t u = 0; u < first->nuids; u++) {
        struct uc_share *one = &sh[c->share_of[map[u]]];
        const char *from = one->rd.p;

        if (c->res[c->share_of[map[u]]].rc != 0) {
            if (ur_frame_put_int(&c->merged, c->opt.default_value) != 0)
                goto fail;
            continue;
        }
        if (!skip_value(&one->rd)) {
            rc = uc_shape_err(c, first->op);
            goto fail;
        }
        if (ur_buf_append(&c->merged, from, (size_t)(one->rd.p - from)) != 0)
            goto fail;
    }
    if (sh != local)
        free(sh);
    out->rc = degraded ? UNREAD_DEGRADED : 0;
    out->h.len = (uint32_t)c->merged.len;
    out->body = c->merged.data;
    if (degraded)
        uc_set_err(c, UNREAD_DEGRADED,
                   "a server of the request could not be reached: its "
                   "users read as the default");
    return true;

fail:
    if (sh != local)
        free(sh);
    out->rc = rc == UNREAD_ENOMEM
                  ? uc_set_err(c, rc, "out of memory merging replies")
                  : rc;
    return true;
}

/* Reads the next request's reply (all its slots), within one read
 * timeout. The request must have been flushed. */
static void req_read(struct unread *c, struct uc_res *out)
{
    const struct uc_slot *first = &c->slot[c->head];
    struct uc_deadline d = uc_deadline(c->opt.read_timeout_ms, "read");
    size_t i, span = first->span;
    uint16_t op = first->op;

    for (i = 0; i < span; i++)
        slot_read(c, &c->slot[c->head + i], &d, &c->res[i]);
    c->head += span;
    c->pending--;
    if (first->split) {
        if (merge(c, first, span, out))
            return;
    } else if (span == 1) {
        *out = c->res[0];
    } else {
        combine(c, op, span, out);
    }
    surface(c, first, out);
}

/* One synchronous request to `to` (a server or UC_ALL), as uc_roundtrip. */
static int call(struct unread *c, uint32_t to, uint16_t op, unsigned argc,
                const struct unread_arg *argv, struct ur_frame_hdr *h,
                const char **body)
{
    struct uc_res r;
    int rc;

    if (c->piping)
        return uc_set_err(c, UNREAD_EUSAGE,
                          "a pipeline is open: read its replies or reset it");
    if (c->batch.open)
        return uc_set_err(c, UNREAD_EUSAGE,
                          "a batch is open: execute it or reset it");
    rc = req_queue(c, to, op, argc, argv);
    if (rc != 0)
        return rc;
    (void)flush_all(c); /* a failure is the request's outcome */
    req_read(c, &r);
    round_end(c);
    c->last_srv = r.server;
    *h = r.h;
    *body = r.body;
    return r.rc;
}

int uc_roundtrip(struct unread *c, uint16_t op, unsigned argc,
                 const struct unread_arg *argv, struct ur_frame_hdr *h,
                 const char **body)
{
    return call(c, route(c, op, argc, argv), op, argc, argv, h, body);
}

/* Name or opcode, as unread_command() documents. */
static int resolve_op(struct unread *c, const char *name, uint16_t opcode,
                      uint16_t *op)
{
    const struct ur_op *o;

    if (name == NULL && opcode == UR_FRAME_OP_BATCH)
        return uc_set_err(c, UNREAD_EUSAGE,
                          "opcode 0x%04x is the batch frame: use "
                          "unread_batch_begin",
                          opcode);
    if (name == NULL) {
        *op = opcode;
        return 0;
    }
    o = ur_op_by_name(name, strlen(name));
    if (o == NULL)
        return uc_set_err(c, UNREAD_ERR_UNKNOWN, "ERR unknown command '%s'",
                          name);
    *op = o->code;
    return 0;
}

/* ---- Public: connection ------------------------------------------------ */

#define UC_DEFAULT_TIMEOUT_MS 1000
#define UC_DEFAULT_BREAKER_FAILURES 3
#define UC_DEFAULT_BREAKER_OPEN_MS 1000
#define UC_DEFAULT_RING_POINTS 160

void unread_opts_init(struct unread_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->connect_timeout_ms = UC_DEFAULT_TIMEOUT_MS;
    o->read_timeout_ms = UC_DEFAULT_TIMEOUT_MS;
    o->write_timeout_ms = UC_DEFAULT_TIMEOUT_MS;
    o->breaker_failures = UC_DEFAULT_BREAKER_FAILURES;
    o->breaker_open_ms = UC_DEFAULT_BREAKER_OPEN_MS;
    o->ring_points = UC_DEFAULT_RING_POINTS;
}

/* Keeps a copy of password (NULL: none) for every server's connects.
 * 0, or -1 when out of memory (the old one is kept). */
static int password_set(struct unread *c, const char *password)
{
    char *copy = NULL;
    size_t s;

    if (password != NULL && (copy = strdup(password)) == NULL)
        return -1;
    free(c->password);
    c->password = copy;
    c->opt.password = copy;
    for (s = 0; s < c->nsrv; s++)
        c->srv[s].conn.password = copy;
    return 0;
}

static void handle_free(struct unread *c)
{
    size_t s;

    if (c->srv != NULL)
        for (s = 0; s < c->nsrv; s++)
            uc_conn_deinit(&c->srv[s].conn);
    uc_ring_deinit(&c->ring);
    ur_buf_deinit(&c->dflt);
    ur_buf_deinit(&c->dflt_batch);
    ur_buf_deinit(&c->batch.body);
    ur_buf_deinit(&c->merged);
    free(c->split_map);
    free(c->split_argv);
    free(c->share_of);
    free(c->password);
    free(c->srv);
    free(c->res);
    free(c->slot);
    uc_addrs_free(c->addr, c->nsrv);
    free(c);
}

static bool opts_valid(const struct unread_opts *o, size_t n, char *err,
                       size_t errlen)
{
    if (o->breaker_failures < 1 || o->breaker_open_ms < 0) {
        snprintf(err, errlen,
                 "breaker_failures must be at least 1 and "
                 "breaker_open_ms at least 0");
        return false;
    }
    if (o->ring_points < 1 || n > UC_MAX_RING / o->ring_points) {
        snprintf(err, errlen, "ring_points must be 1 to %zu for %zu servers",
                 (size_t)UC_MAX_RING / n, n);
        return false;
    }
    return true;
}

/*
 * A handle over the n servers in a (which it takes over, even on failure),
 * connected to each: without degraded mode a server that cannot be
 * reached fails it; with it, that server's circuit counts the failure.
 */
static struct unread *handle_create(struct uc_addr *a, size_t n,
                                    const struct unread_opts *o, char *err,
                                    size_t errlen)
{
    struct unread *c = calloc(1, sizeof(*c));
    size_t i;

    if (c == NULL) {
        uc_addrs_free(a, n);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->addr = a;
    c->nsrv = n;
    ur_buf_init(&c->dflt);
    ur_buf_init(&c->dflt_batch);
    ur_buf_init(&c->batch.body);
    ur_buf_init(&c->merged);
    if (!opts_valid(o, n, err, errlen))
        goto error;
    c->opt = *o;
    c->brk_cfg.failures = o->breaker_failures;
    c->brk_cfg.open_ms = o->breaker_open_ms;
    c->srv = calloc(n, sizeof(*c->srv));
    c->res = calloc(n, sizeof(*c->res));
    c->share_of = calloc(n, sizeof(*c->share_of));
    if (c->srv == NULL || c->res == NULL || c->share_of == NULL ||
        (n > 1 && uc_ring_build(&c->ring, a, n, o->ring_points) != 0) ||
        ur_frame_put_int(&c->dflt, o->default_value) != 0) {
        snprintf(err, errlen, "out of memory");
        goto error;
    }
    for (i = 0; i < n; i++)
        uc_conn_init(&c->srv[i].conn, &a[i]);
    if (password_set(c, o->password) != 0) {
        snprintf(err, errlen, "out of memory");
        goto error;
    }
    for (i = 0; i < n; i++) {
        if (server_ready(c, (uint32_t)i) != 0 && !o->degraded) {
            snprintf(err, errlen, "%s", c->srv[i].conn.err);
            goto error;
        }
    }
    round_end(c);
    return c;

error:
    handle_free(c);
    return NULL;
}

struct unread *unread_connect(const char *host, uint16_t port, int timeout_ms,
                              char *err, size_t errlen)
{
    struct unread_opts o;
    struct uc_addr *a;
    char local[UNREAD_ERRLEN], *list;
    size_t n, len;

    if (err == NULL || errlen == 0) {
        err = local;
        errlen = sizeof(local);
    }
    if (host == NULL)
        host = "127.0.0.1";
    /* One server is a list of one; an IPv6 address takes brackets. */
    len = strlen(host) + 16;
    list = malloc(len);
    if (list == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(list, len, strchr(host, ':') != NULL ? "[%s]:%u" : "%s:%u", host,
             (unsigned)port);
    if (uc_addrs_parse(list, port, &a, &n, err, errlen) != 0) {
        free(list);
        return NULL;
    }
    free(list);
    unread_opts_init(&o);
    o.connect_timeout_ms = timeout_ms;
    o.read_timeout_ms = timeout_ms;
    o.write_timeout_ms = timeout_ms;
    return handle_create(a, n, &o, err, errlen);
}

struct unread *unread_connect_cluster(const char *servers,
                                      const struct unread_opts *opts, char *err,
                                      size_t errlen)
{
    struct unread_opts o;
    struct uc_addr *a;
    char local[UNREAD_ERRLEN];
    size_t n;

    if (err == NULL || errlen == 0) {
        err = local;
        errlen = sizeof(local);
    }
    if (servers == NULL) {
        snprintf(err, errlen, "no servers");
        return NULL;
    }
    if (opts == NULL)
        unread_opts_init(&o);
    else
        o = *opts;
    if (uc_addrs_parse(servers, UNREAD_DEFAULT_PORT, &a, &n, err, errlen) != 0)
        return NULL;
    return handle_create(a, n, &o, err, errlen);
}

int unread_auth(struct unread *c, const char *password)
{
    struct unread_arg a = {UNREAD_ARG_STR, 0, password, 0};
    struct ur_frame_hdr h;
    const char *body;
    int rc, first = 0;
    uint32_t s;

    if (c->piping)
        return uc_set_err(c, UNREAD_EUSAGE,
                          "a pipeline is open: read its replies or reset it");
    if (password_set(c, password) != 0)
        return uc_set_err(c, UNREAD_ENOMEM, "out of memory");
    if (password == NULL)
        return 0;
    a.len = strlen(password);
    for (s = 0; s < c->nsrv; s++) {
        if (c->srv[s].conn.fd < 0)
            continue; /* authenticates when it connects */
        rc = call(c, s, UR_OP_AUTH, 1, &a, &h, &body);
        if (first == 0)
            first = rc;
    }
    return first;
}

void unread_close(struct unread *c)
{
    if (c != NULL)
        handle_free(c);
}

void unread_set_timeout(struct unread *c, int timeout_ms)
{
    c->opt.read_timeout_ms = timeout_ms;
    c->opt.write_timeout_ms = timeout_ms;
}

int unread_fd(const struct unread *c)
{
    return c->srv[0].conn.fd;
}

size_t unread_shards(const struct unread *c)
{
    return c->nsrv;
}

size_t unread_shard_of(const struct unread *c, uint64_t key)
{
    return c->nsrv == 1 ? 0 : uc_ring_find(&c->ring, key);
}

const char *unread_shard_name(const struct unread *c, size_t i)
{
    return i < c->nsrv ? c->addr[i].name : NULL;
}

int unread_shard_circuit(const struct unread *c, size_t i)
{
    return i < c->nsrv ? c->srv[i].brk.state : -1;
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
    case UNREAD_EUNAVAIL:
        return "EUNAVAIL";
    case UNREAD_EMISMATCH:
        return "EMISMATCH";
    case UNREAD_DEGRADED:
        return "DEGRADED";
    default:
        return code > 0 && code <= UINT16_MAX ? ur_err_name((uint32_t)code)
                                              : "EUNKNOWN";
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

/*
 * A typed call got a reply of the wrong shape: the server and the library
 * disagree on the command, and nothing later on that stream is trusted.
 * It does not count against the circuit: the server is reachable, and one
 * command's disagreement must not degrade every other.
 */
int uc_shape_err(struct unread *c, uint16_t op)
{
    const struct ur_op *o = ur_op_by_code(op);

    uc_set_err(c, UNREAD_EPROTO, "%s: protocol error: unexpected reply to %s",
               c->addr[c->last_srv].name, o != NULL ? o->name : "command");
    uc_conn_drop(&c->srv[c->last_srv].conn);
    return UNREAD_EPROTO;
}

int uc_call_ints(struct unread *c, uint16_t op, unsigned argc,
                 const uint64_t *v, struct ur_val_reader *rd)
{
    struct unread_arg argv[UNREAD_CNT_TYPES + 1];
    struct ur_frame_hdr h;
    const char *body;
    unsigned i;
    int rc;

    if (argc > UNREAD_CNT_TYPES + 1)
        return uc_set_err(c, UNREAD_EUSAGE, "%u integer arguments: at most %u",
                          argc, (unsigned)UNREAD_CNT_TYPES + 1);
    for (i = 0; i < argc; i++)
        argv[i] = unread_arg_int(v[i]);
    rc = uc_roundtrip(c, op, argc, argv, &h, &body);
    if (rc == 0 || rc == UNREAD_DEGRADED)
        ur_val_reader_init(rd, body, h.len);
    return rc;
}

/* The [value, total] reply of CNT.INCR, DECR and SET (writes: never
 * degraded). */
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

int uc_call_int(struct unread *c, uint16_t op, unsigned argc,
                const uint64_t *args, uint64_t *out)
{
    struct ur_val_reader rd;
    uint64_t v;
    int rc;

    rc = uc_call_ints(c, op, argc, args, &rd);
    if (rc != 0 && rc != UNREAD_DEGRADED)
        return rc;
    if (!uc_rd_int(&rd, &v))
        return uc_shape_err(c, op);
    if (out != NULL)
        *out = v;
    return rc;
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
    if (rc != 0 && rc != UNREAD_DEGRADED)
        return rc;
    if (rc == 0 && v > UINT32_MAX)
        return uc_shape_err(c, UR_OP_CNT_GET);
    if (value != NULL)
        *value = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    return rc;
}

int unread_cnt_getall(struct unread *c, uint64_t uid,
                      struct unread_cnt_pair *out, unsigned *n)
{
    struct ur_val_reader rd;
    uint64_t type, value;
    uint32_t count, i;
    int rc, last = -1;

    rc = uc_call_ints(c, UR_OP_CNT_GETALL, 1, &uid, &rd);
    if (rc == UNREAD_DEGRADED && n != NULL)
        *n = 0;
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
        return uc_set_err(c, UNREAD_EUSAGE, "CNT.CLEAR: %u types, at most %u",
                          ntypes, (unsigned)UNREAD_CNT_TYPES);
    args[0] = uid;
    for (i = 0; i < ntypes; i++)
        args[i + 1] = types[i];
    return uc_call_int(c, UR_OP_CNT_CLEAR, ntypes + 1, args, total);
}

/* CNT.INCR uid type delta ID nid, CNT.ACK uid type nid: [value, total]
 * (writes: never degraded). */
static int call_notice(struct unread *c, uint16_t op, uint64_t uid,
                       unsigned type, const uint32_t *delta, uint64_t nid,
                       uint32_t *value, uint64_t *total)
{
    struct unread_arg argv[5];
    struct ur_val_reader rd;
    struct ur_frame_hdr h;
    const char *body;
    uint32_t count;
    uint64_t v, t;
    unsigned n = 0;
    int rc;

    argv[n++] = unread_arg_int(uid);
    argv[n++] = unread_arg_int(type);
    if (delta != NULL) {
        argv[n++] = unread_arg_int(*delta);
        argv[n++] = unread_arg_str("ID", 2);
    }
    argv[n++] = unread_arg_int(nid);
    rc = uc_roundtrip(c, op, n, argv, &h, &body);
    if (rc != 0)
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    if (!uc_rd_arr(&rd, &count) || count != 2 || !uc_rd_int(&rd, &v) ||
        !uc_rd_int(&rd, &t) || v > UINT32_MAX)
        return uc_shape_err(c, op);
    if (value != NULL)
        *value = (uint32_t)v;
    if (total != NULL)
        *total = t;
    return 0;
}

int unread_cnt_incr_id(struct unread *c, uint64_t uid, unsigned type,
                       uint32_t delta, uint64_t nid, uint32_t *value,
                       uint64_t *total)
{
    return call_notice(c, UR_OP_CNT_INCR, uid, type, &delta, nid, value, total);
}

int unread_cnt_ack(struct unread *c, uint64_t uid, unsigned type, uint64_t nid,
                   uint32_t *value, uint64_t *total)
{
    return call_notice(c, UR_OP_CNT_ACK, uid, type, NULL, nid, value, total);
}

int unread_cnt_mtotal(struct unread *c, const uint64_t *uids, size_t n,
                      uint64_t *totals)
{
    return uc_call_uids(c, UR_OP_CNT_MTOTAL, uids, n, totals);
}

int unread_cnt_total_ex(struct unread *c, uint64_t uid, uint64_t *total,
                        uint64_t *expired)
{
    return uc_call_count_ex(c, UR_OP_CNT_TOTAL, 1, &uid, total, expired);
}

/* ---- Many users per call, reads with WITHEXPIRY ------------------------ */

int uc_call_uids(struct unread *c, uint16_t op, const uint64_t *uids, size_t n,
                 uint64_t *out)
{
    struct unread_arg *argv;
    size_t done = 0, k, i;
    int rc = 0, degraded = 0;

    if (n == 0)
        return 0;
    if (uids == NULL || out == NULL)
        return uc_set_err(c, UNREAD_EUSAGE, "%zu uids: uids and out needed", n);
    argv = malloc((n < UR_UIDS_MAX ? n : UR_UIDS_MAX) * sizeof(*argv));
    if (argv == NULL)
        return uc_set_err(c, UNREAD_ENOMEM, "out of memory");
    for (; done < n && rc == 0; done += k) {
        struct ur_val_reader rd;
        struct ur_frame_hdr h;
        const char *body;
        uint32_t count;
        uint64_t v;

        k = n - done < UR_UIDS_MAX ? n - done : UR_UIDS_MAX;
        for (i = 0; i < k; i++)
            argv[i] = unread_arg_int(uids[done + i]);
        rc = uc_roundtrip(c, op, (unsigned)k, argv, &h, &body);
        if (rc != 0 && rc != UNREAD_DEGRADED)
            break;
        ur_val_reader_init(&rd, body, h.len);
        if (rc == UNREAD_DEGRADED && h.len == c->dflt.len &&
            memcmp(body, c->dflt.data, h.len) == 0) {
            /* one server, unreachable: the default for every uid */
            for (i = 0; i < k; i++)
                out[done + i] = c->opt.default_value;
        } else {
            if (!uc_rd_arr(&rd, &count) || count != k) {
                rc = uc_shape_err(c, op);
                break;
            }
            for (i = 0; i < k; i++) {
                if (!uc_rd_int(&rd, &v)) {
                    rc = uc_shape_err(c, op);
                    break;
                }
                out[done + i] = v;
            }
        }
        if (rc == UNREAD_DEGRADED) {
            degraded = 1;
            rc = 0;
        }
    }
    free(argv);
    return rc != 0 ? rc : degraded ? UNREAD_DEGRADED : 0;
}

uint64_t uc_default(const struct unread *c)
{
    return c->opt.default_value;
}

int uc_call_int_list(struct unread *c, uint16_t op, uint64_t first,
                     const uint64_t *rest, size_t n, uint64_t *out)
{
    struct unread_arg *argv;
    struct ur_frame_hdr h;
    struct ur_val_reader rd;
    const char *body;
    uint64_t v;
    size_t i;
    int rc;

    if (n == 0 || rest == NULL || n >= UINT16_MAX)
        return uc_set_err(c, UNREAD_EUSAGE, "%zu items: 1 to %u", n,
                          (unsigned)UINT16_MAX - 1);
    argv = malloc((n + 1) * sizeof(*argv));
    if (argv == NULL)
        return uc_set_err(c, UNREAD_ENOMEM, "out of memory");
    argv[0] = unread_arg_int(first);
    for (i = 0; i < n; i++)
        argv[i + 1] = unread_arg_int(rest[i]);
    rc = uc_roundtrip(c, op, (unsigned)n + 1, argv, &h, &body);
    free(argv);
    if (rc != 0 && rc != UNREAD_DEGRADED)
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    if (!uc_rd_int(&rd, &v))
        return uc_shape_err(c, op);
    if (out != NULL)
        *out = v;
    return rc;
}

int uc_call_count_ex(struct unread *c, uint16_t op, unsigned argc,
                     const uint64_t *args, uint64_t *count, uint64_t *expired)
{
    struct unread_arg argv[4];
    struct ur_val_reader rd;
    struct ur_frame_hdr h;
    const char *body;
    uint32_t n;
    uint64_t v, e;
    unsigned i;
    int rc;

    if (argc > 3)
        return uc_set_err(c, UNREAD_EUSAGE, "%u arguments: at most 3", argc);
    for (i = 0; i < argc; i++)
        argv[i] = unread_arg_int(args[i]);
    argv[argc] = unread_arg_str("WITHEXPIRY", 10);
    rc = uc_roundtrip(c, op, argc + 1, argv, &h, &body);
    if (rc != 0 && rc != UNREAD_DEGRADED)
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    if (rc == UNREAD_DEGRADED) {
        v = c->opt.default_value;
        e = 0;
    } else if (!uc_rd_arr(&rd, &n) || n != 2 || !uc_rd_int(&rd, &v) ||
               !uc_rd_int(&rd, &e)) {
        return uc_shape_err(c, op);
    }
    if (count != NULL)
        *count = v;
    if (expired != NULL)
        *expired = e;
    return rc;
}

/* ---- Public: generic command ------------------------------------------- */

/* A reply (status >= 0) as a tree for the caller, from server s. */
static int reply_tree(struct unread *c, int status, uint32_t s,
                      const struct ur_frame_hdr *h, const char *body,
                      struct unread_reply **out)
{
    int rc = uc_tree_build(body, h->len, out);

    if (rc == UNREAD_ENOMEM)
        return uc_set_err(c, rc, "out of memory for a reply");
    if (rc != 0) {
        uc_conn_drop(&c->srv[s].conn);
        return uc_set_err(c, rc, "%s: protocol error: bad reply body",
                          c->addr[s].name);
    }
    return status;
}

/* unread_command to `to` (a server, or UC_ALL), or routed when route_it. */
static int command(struct unread *c, bool route_it, uint32_t to,
                   const char *name, uint16_t opcode, unsigned argc,
                   const struct unread_arg *argv, struct unread_reply **out)
{
    struct ur_frame_hdr h;
    const char *body;
    uint16_t op = 0;
    int rc;

    *out = NULL;
    rc = resolve_op(c, name, opcode, &op);
    if (rc != 0) {
        *out = uc_reply_error(rc, c->err);
        return *out != NULL ? rc
                            : uc_set_err(c, UNREAD_ENOMEM, "out of memory");
    }
    if (route_it)
        to = route(c, op, argc, argv);
    rc = call(c, to, op, argc, argv, &h, &body);
    if (rc < 0)
        return rc;
    return reply_tree(c, rc, c->last_srv, &h, body, out);
}

int unread_command(struct unread *c, const char *name, uint16_t opcode,
                   unsigned argc, const struct unread_arg *argv,
                   struct unread_reply **out)
{
    return command(c, true, 0, name, opcode, argc, argv, out);
}

int unread_command_shard(struct unread *c, size_t shard, const char *name,
                         uint16_t opcode, unsigned argc,
                         const struct unread_arg *argv,
                         struct unread_reply **out)
{
    if (shard >= c->nsrv) {
        *out = NULL;
        return uc_set_err(c, UNREAD_EUSAGE, "shard %zu: the handle has %zu",
                          shard, c->nsrv);
    }
    return command(c, false, (uint32_t)shard, name, opcode, argc, argv, out);
}

/* ---- Public: atomic batch ---------------------------------------------- */

/* The open batch is over: the next one starts empty. A long batch's body
 * is given back. */
static void batch_clear(struct unread *c)
{
    struct uc_batch *b = &c->batch;

    b->open = false;
    b->writes = false;
    b->server = UC_FIRST_SERVER;
    b->n = 0;
    b->body.len = 0;
    ur_buf_shrink(&b->body, UC_BATCH_KEEP);
}

/*
 * Adds one command to the open batch, or nothing (a usage error: a global
 * write, another server than the batch's, too many commands or bytes; or
 * out of memory). The commands are only encoded here; the server checks
 * them when the batch arrives.
 */
static int batch_add(struct unread *c, uint16_t op, unsigned argc,
                     const struct unread_arg *argv)
{
    struct uc_batch *b = &c->batch;
    const struct ur_op *o = ur_op_by_code(op);
    size_t mark = b->body.len;
    uint32_t to;
    int rc;

    rc = args_check(c, argc, argv);
    if (rc != 0)
        return rc;
    if (o != NULL && op_is_global(o))
        return uc_set_err(c, UNREAD_EUSAGE,
                          "%s cannot be batched: every server must apply it",
                          o->name);
    if (b->n == UINT16_MAX)
        return uc_set_err(c, UNREAD_EUSAGE, "a batch holds at most %u commands",
                          (unsigned)UINT16_MAX);
    to = route(c, op, argc, argv);
    if (to == UC_SPLIT)
        return uc_set_err(c, UNREAD_EUSAGE,
                          "%s: its uids live on several servers, and a batch "
                          "runs on one",
                          o->name);
    if (b->n > 0 && to != b->server)
        return uc_set_err(c, UNREAD_EUSAGE,
                          "a batch runs on one server: this command goes to "
                          "%s, the batch to %s",
                          c->addr[to].name, c->addr[b->server].name);
    if (ur_frame_put_sub_hdr(&b->body, op, (uint16_t)argc) != 0 ||
        uc_put_args(&b->body, argc, argv) != 0) {
        b->body.len = mark;
        return uc_set_err(c, UNREAD_ENOMEM, "out of memory queuing a command");
    }
    if (b->body.len > UR_MAX_FRAME_CEILING) {
        b->body.len = mark;
        return uc_set_err(c, UNREAD_EUSAGE, "a batch is at most %u bytes",
                          (unsigned)UR_MAX_FRAME_CEILING);
    }
    b->server = to;
    b->n++;
    b->writes |= !op_is_read(op);
    return 0;
}

int unread_batch_begin(struct unread *c)
{
    if (c->batch.open)
        return uc_set_err(c, UNREAD_EUSAGE, "a batch is already open");
    c->batch.open = true;
    return 0;
}

int unread_batch_exec(struct unread *c, struct unread_reply **out)
{
    uint16_t n = c->batch.n;
    struct ur_frame_hdr h;
    const char *body;
    int rc;

    *out = NULL;
    if (!c->batch.open)
        return uc_set_err(c, UNREAD_EUSAGE,
                          "no batch open (unread_batch_begin)");
    if (c->piping)
        return uc_set_err(c, UNREAD_EUSAGE,
                          "a pipeline is open: queue the batch with "
                          "unread_pipe_batch");
    c->batch.open = false; /* it is sent as one request of its own */
    rc = call(c, c->batch.server, UR_FRAME_OP_BATCH, 0, NULL, &h, &body);
    batch_clear(c);
    if (rc < 0)
        return rc;
    rc = reply_tree(c, rc, c->last_srv, &h, body, out);
    if (rc == 0 && ((*out)->kind != UNREAD_REPLY_ARRAY || (*out)->n != n)) {
        unread_reply_free(*out);
        *out = NULL;
        return uc_shape_err(c, UR_FRAME_OP_BATCH);
    }
    return rc;
}

int unread_pipe_batch(struct unread *c)
{
    int rc;

    if (!c->batch.open || !c->piping)
        return uc_set_err(c, UNREAD_EUSAGE, "no batch open inside a pipeline");
    rc = req_queue(c, c->batch.server, UR_FRAME_OP_BATCH, 0, NULL);
    batch_clear(c);
    return rc;
}

void unread_batch_reset(struct unread *c)
{
    batch_clear(c);
}

/* ---- Public: pipeline -------------------------------------------------- */

int unread_pipe_begin(struct unread *c)
{
    if (c->piping)
        return uc_set_err(c, UNREAD_EUSAGE, "a pipeline is already open");
    if (c->batch.open)
        return uc_set_err(c, UNREAD_EUSAGE,
                          "a batch is open: execute it or reset it");
    c->piping = true;
    return 0;
}

int unread_pipe_cmd(struct unread *c, const char *name, uint16_t opcode,
                    unsigned argc, const struct unread_arg *argv)
{
    uint16_t op = 0;
    int rc;

    if (!c->piping && !c->batch.open)
        return uc_set_err(c, UNREAD_EUSAGE,
                          "no pipeline open (unread_pipe_begin)");
    rc = resolve_op(c, name, opcode, &op);
    if (rc != 0)
        return rc;
    if (c->batch.open)
        return batch_add(c, op, argc, argv);
    return req_queue(c, route(c, op, argc, argv), op, argc, argv);
}

int uc_pipe_ints(struct unread *c, uint16_t op, unsigned argc,
                 const uint64_t *v)
{
    struct unread_arg argv[UNREAD_CNT_TYPES + 1];
    unsigned i;

    if (argc > UNREAD_CNT_TYPES + 1)
        return uc_set_err(c, UNREAD_EUSAGE, "%u integer arguments: at most %u",
                          argc, (unsigned)UNREAD_CNT_TYPES + 1);
    for (i = 0; i < argc; i++)
        argv[i] = unread_arg_int(v[i]);
    return unread_pipe_cmd(c, NULL, op, argc, argv);
}

int unread_pipe_cnt_incr(struct unread *c, uint64_t uid, unsigned type,
                         uint32_t delta)
{
    uint64_t a[3] = {uid, type, delta};

    return uc_pipe_ints(c, UR_OP_CNT_INCR, 3, a);
}

int unread_pipe_cnt_decr(struct unread *c, uint64_t uid, unsigned type,
                         uint32_t delta)
{
    uint64_t a[3] = {uid, type, delta};

    return uc_pipe_ints(c, UR_OP_CNT_DECR, 3, a);
}

int unread_pipe_cnt_set(struct unread *c, uint64_t uid, unsigned type,
                        uint32_t value)
{
    uint64_t a[3] = {uid, type, value};

    return uc_pipe_ints(c, UR_OP_CNT_SET, 3, a);
}

int unread_pipe_cnt_get(struct unread *c, uint64_t uid, unsigned type)
{
    uint64_t a[2] = {uid, type};

    return uc_pipe_ints(c, UR_OP_CNT_GET, 2, a);
}

int unread_pipe_cnt_getall(struct unread *c, uint64_t uid)
{
    return uc_pipe_ints(c, UR_OP_CNT_GETALL, 1, &uid);
}

int unread_pipe_cnt_total(struct unread *c, uint64_t uid)
{
    return uc_pipe_ints(c, UR_OP_CNT_TOTAL, 1, &uid);
}

int unread_pipe_cnt_incr_id(struct unread *c, uint64_t uid, unsigned type,
                            uint32_t delta, uint64_t nid)
{
    struct unread_arg a[5] = {unread_arg_int(uid), unread_arg_int(type),
                              unread_arg_int(delta), unread_arg_str("ID", 2),
                              unread_arg_int(nid)};

    return unread_pipe_cmd(c, NULL, UR_OP_CNT_INCR, 5, a);
}

int unread_pipe_cnt_ack(struct unread *c, uint64_t uid, unsigned type,
                        uint64_t nid)
{
    uint64_t a[3] = {uid, type, nid};

    return uc_pipe_ints(c, UR_OP_CNT_ACK, 3, a);
}

int unread_pipe_cnt_clear(struct unread *c, uint64_t uid, const uint8_t *types,
                          unsigned ntypes)
{
    uint64_t a[UNREAD_CNT_TYPES + 1];
    unsigned i;

    if (ntypes > UNREAD_CNT_TYPES || (ntypes > 0 && types == NULL))
        return uc_set_err(c, UNREAD_EUSAGE, "CNT.CLEAR: %u types, at most %u",
                          ntypes, (unsigned)UNREAD_CNT_TYPES);
    a[0] = uid;
    for (i = 0; i < ntypes; i++)
        a[i + 1] = types[i];
    return uc_pipe_ints(c, UR_OP_CNT_CLEAR, ntypes + 1, a);
}

size_t unread_pipe_queued(const struct unread *c)
{
    return c->unflushed;
}

size_t unread_pipe_pending(const struct unread *c)
{
    return c->pending;
}

int unread_pipe_flush(struct unread *c)
{
    if (!c->piping)
        return uc_set_err(c, UNREAD_EUSAGE,
                          "no pipeline open (unread_pipe_begin)");
    return flush_all(c);
}

int unread_pipe_read(struct unread *c, struct unread_reply **out)
{
    struct uc_res r;

    *out = NULL;
    if (!c->piping)
        return uc_set_err(c, UNREAD_EUSAGE, "no pipeline open");
    if (c->pending == 0)
        return uc_set_err(c, UNREAD_EUSAGE,
                          "no reply pending (%zu queued: flush first)",
                          c->unflushed);
    req_read(c, &r);
    if (c->pending == 0 && c->unflushed == 0) {
        c->piping = false;
        round_end(c);
    }
    if (r.rc < 0)
        return r.rc;
    return reply_tree(c, r.rc, r.server, &r.h, r.body, out);
}

void unread_pipe_reset(struct unread *c)
{
    size_t s;

    unread_batch_reset(c);
    if (!c->piping)
        return;
    for (s = 0; s < c->nsrv; s++)
        uc_conn_abandon(&c->srv[s].conn);
    round_end(c);
    c->piping = false;
}
