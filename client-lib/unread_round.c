/*
 * unread_round.c - the synchronous face's rounds: queue, flush, read
 * (unread_round.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops.h"
#include "unread_cluster.h"
#include "unread_int.h"
#include "unread_round.h"

/* A server failed during the round: the requests it still owes fail with
 * rc, and the round does not use it again. */
static void server_failed(struct unread *c, uint32_t s, int rc)
{
    size_t i;

    for (i = c->head; i < c->tail; i++)
        if (c->slot[i].server == s && c->slot[i].rc == UC_PENDING)
            c->slot[i].rc = rc;
    c->k.srv[s].round_rc = rc;
    uc_server_down(&c->k, s, rc);
}

/*
 * Readies server s for a request of this round: 0, or why it cannot take
 * one. An open circuit refuses without touching the network. A server
 * that already failed this round is not tried again: in degraded mode the
 * request is UNREAD_EUNAVAIL (never sent), not the earlier failure, which
 * would say it might have been applied.
 */
int uc_round_server(struct unread *c, uint32_t s)
{
    struct uc_server *sv = &c->k.srv[s];
    int rc;

    if (sv->round_rc != 0)
        return c->k.opt.degraded ? UNREAD_EUNAVAIL : sv->round_rc;
    rc = uc_server_admit(&c->k, s);
    if (rc != 0)
        return rc;
    rc = uc_conn_ensure(&sv->conn, c->k.opt.connect_timeout_ms);
    if (rc != 0)
        server_failed(c, s, rc);
    return rc;
}

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
    sl->frame_off = 0;
    sl->frame_len = 0;
}

/* Cluster mode: the frame just encoded on server s goes with the slot
 * just pushed, to be resent if a node redirects it. */
static int keep_frame(struct unread *c, uint32_t s)
{
    struct uc_slot *sl = &c->slot[c->tail - 1];
    size_t len;
    const char *f;

    if (c->k.cl == NULL)
        return 0;
    f = uc_conn_last(&c->k.srv[s].conn, &len);
    sl->frame_off = c->frames.len;
    sl->frame_len = len;
    return ur_buf_append(&c->frames, f, len);
}

/* The round is over: every server may be tried again, and what a long
 * pipeline made the order list hold is given back. */
void uc_round_end(struct unread *c)
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
    c->frames.len = 0;
    ur_buf_shrink(&c->frames, UC_BATCH_KEEP);
    ur_buf_shrink(&c->k.merged, UC_BATCH_KEEP);
    for (s = 0; s < c->k.nsrv; s++)
        c->k.srv[s].round_rc = 0;
}

/* Room for n more entries of the round's uid -> group map. */
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
 * Queues a request for many users split (uc_route said UC_SPLIT): one
 * frame per group of its uids (uc_split_plan: a server's, a slot's in
 * cluster mode), each with the arguments before the uids and its uids in
 * the caller's order; one slot per group, in group order. A server that
 * cannot take its share
 * gets a slot with the outcome and no frame: its uids fail, or in
 * degraded mode read as the default (merge). 0, or nothing queued.
 */
static int req_queue_split(struct unread *c, uint16_t op, unsigned argc,
                           const struct unread_arg *argv)
{
    size_t first_slot = c->tail, off = c->split_len, i;
    struct uc_split sp;
    unsigned g;
    int rc;

    if (uc_split_plan(&c->k, op, argc, argv, &sp) != 0)
        return UNREAD_ENOMEM;
    if (slots_reserve(c, sp.groups) != 0 || split_map_reserve(c, sp.n) != 0) {
        uc_split_free(&sp);
        return uc_err(&c->k, UNREAD_ENOMEM, "out of memory queuing a request");
    }
    memcpy(c->split_map + off, sp.map, sp.n * sizeof(*sp.map));
    for (g = 0; g < sp.groups; g++) {
        uint32_t s = sp.server[g];
        unsigned m = uc_split_args(&sp, g);

        rc = uc_round_server(c, s);
        if (rc == 0 && uc_conn_encode(&c->k.srv[s].conn, op, m, sp.args) != 0) {
            for (i = first_slot; i < c->tail; i++)
                if (c->slot[i].rc == UC_PENDING)
                    uc_conn_unencode(&c->k.srv[c->slot[i].server].conn);
            c->tail = first_slot;
            uc_split_free(&sp);
            return uc_err(&c->k, UNREAD_ENOMEM,
                          "out of memory encoding a request");
        }
        slot_push(c, s, op, 0, rc == 0 ? UC_PENDING : rc);
        c->slot[c->tail - 1].split = true;
        if (rc == 0 && keep_frame(c, s) != 0)
            c->slot[c->tail - 1].frame_len = 0; /* not resent: its error */
    }
    c->slot[first_slot].span = (uint16_t)sp.groups;
    c->slot[first_slot].nuids = sp.n;
    c->slot[first_slot].map_off = off;
    c->split_len += sp.n;
    c->unflushed++;
    uc_split_free(&sp);
    return 0;
}

/*
 * Queues one request for server `to` (or UC_ALL, or UC_SPLIT). 0: it has
 * its slots and one reply to read. Else nothing was queued (usage error,
 * out of memory). A global write is sent to no server unless every server
 * can take it.
 */
int uc_req_queue(struct unread *c, uint32_t to, uint16_t op, unsigned argc,
                 const struct unread_arg *argv)
{
    uint32_t s, first = to == UC_ALL ? 0 : to;
    size_t n = to == UC_ALL ? c->k.nsrv : 1;
    int rc;

    rc = uc_args_check(&c->k, argc, argv);
    if (rc != 0)
        return rc;
    if (to == UC_SPLIT)
        return req_queue_split(c, op, argc, argv);
    if (slots_reserve(c, n) != 0)
        return uc_err(&c->k, UNREAD_ENOMEM, "out of memory queuing a request");
    for (s = first; s < first + n; s++) {
        rc = uc_round_server(c, s);
        if (rc != 0) {
            slot_push(c, s, op, 1, rc);
            c->unflushed++;
            return 0;
        }
    }
    for (s = first; s < first + n; s++) {
        if ((op == UR_FRAME_OP_BATCH
                 ? uc_conn_encode_batch(&c->k.srv[s].conn, c->batch.n,
                                        c->batch.body.data, c->batch.body.len)
                 : uc_conn_encode(&c->k.srv[s].conn, op, argc, argv)) != 0) {
            while (s-- > first)
                uc_conn_unencode(&c->k.srv[s].conn);
            return uc_err(&c->k, UNREAD_ENOMEM,
                          "out of memory encoding a request");
        }
    }
    for (s = first; s < first + n; s++) {
        slot_push(c, s, op, s == first ? n : 0, UC_PENDING);
        if (keep_frame(c, s) != 0)
            c->slot[c->tail - 1].frame_len = 0; /* not resent: its error */
    }
    c->unflushed++;
    return 0;
}

static void follow(struct unread *c, const struct uc_slot *sl,
                   const struct uc_deadline *d, struct uc_res *r);

/* Reads one slot's reply (or takes its decided outcome). */
static void slot_read(struct unread *c, const struct uc_slot *sl,
                      const struct uc_deadline *d, struct uc_res *r)
{
    struct uc_conn *k = &c->k.srv[sl->server].conn;

    r->server = sl->server;
    r->rc = sl->rc;
    if (r->rc != UC_PENDING)
        return;
    r->rc = uc_conn_reply(k, d, &r->h, &r->body);
    if (r->rc == 0)
        r->rc = uc_reply_status(k, &r->h, r->body);
    if (r->rc < 0)
        server_failed(c, sl->server, r->rc);
    else
        uc_server_answered(&c->k, sl->server);
    if (c->k.cl != NULL && uc_cluster_redirected(r->rc) && sl->frame_len > 0)
        follow(c, sl, d, r);
}

/* The connection a redirected request goes on: the node's own when it
 * owes no reply of this round, else a side connection of its own. */
static struct uc_conn *resend_conn(struct unread *c, uint32_t s)
{
    struct uc_conn *k = &c->k.srv[s].conn;

    if (k->queued == 0 && k->inflight == 0)
        return k;
    if (c->side == NULL &&
        (c->side = calloc(UC_CLUSTER_CAP, sizeof(*c->side))) == NULL)
        return NULL;
    if (c->side[s] == NULL) {
        c->side[s] = calloc(1, sizeof(**c->side));
        if (c->side[s] == NULL)
            return NULL;
        uc_conn_init(c->side[s], &c->k.addr[s]);
        c->side[s]->password = c->k.opt.password;
    }
    return c->side[s];
}

static void pause_ms(int ms)
{
    struct timespec ts = {0, (long)ms * 1000000L};

    nanosleep(&ts, NULL);
}

/*
 * Cluster mode: r is a redirection (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) of
 * sl's request, which the node did not run: the request goes where it
 * says (ASKING first for an ASK; the same node after a pause for the
 * others), at most UC_REDIRECTS_MAX times, and r becomes the last answer.
 */
static void follow(struct unread *c, const struct uc_slot *sl,
                   const struct uc_deadline *d, struct uc_res *r)
{
    const char *frame = c->frames.data + sl->frame_off;
    uint32_t to = sl->server;
    bool asking;
    int n;

    for (n = 0; n < UC_REDIRECTS_MAX && uc_cluster_redirected(r->rc); n++) {
        struct uc_conn *k;
        struct ur_frame_hdr h;
        const char *body;
        int rc;

        if (!uc_cluster_follow(&c->k, r->rc, r->body, r->h.len, &to, &asking))
            return;
        if (to == UC_NO_SERVER) {
            to = r->server; /* TRYAGAIN, CLUSTERDOWN: once more, later */
            pause_ms(UC_RETRY_PAUSE_MS << n);
        }
        if (c->k.srv[to].round_rc != 0 || uc_server_admit(&c->k, to) != 0)
            return; /* the redirection stays the answer */
        k = resend_conn(c, to);
        if (k == NULL)
            return;
        rc = uc_conn_ensure(k, c->k.opt.connect_timeout_ms);
        if (rc == 0 && asking)
            rc = uc_conn_encode(k, UR_OP_ASKING, 0, NULL);
        if (rc == 0)
            rc = uc_conn_encode_copy(k, frame, sl->frame_len);
        if (rc == 0)
            rc = uc_conn_flush(k, d);
        if (rc == 0 && asking) {
            rc = uc_conn_reply(k, d, &h, &body);
            if (rc == 0 && uc_reply_status(k, &h, body) != 0)
                rc = UNREAD_EPROTO;
        }
        if (rc == 0)
            rc = uc_conn_reply(k, d, &r->h, &r->body);
        r->server = to;
        if (rc != 0) {
            r->rc = uc_err(&c->k, rc, "%s", k->err);
            uc_conn_drop(k);
            if (k == &c->k.srv[to].conn)
                server_failed(c, to, rc);
            return;
        }
        r->rc = uc_reply_status(k, &r->h, r->body);
        uc_server_answered(&c->k, to);
    }
}

void uc_round_refresh(struct unread *c)
{
    struct unread_arg a = {UNREAD_ARG_STR, 0, "SLOTS", 5};
    struct uc_cluster *cl = c->k.cl;
    struct ur_frame_hdr h;
    const char *body;
    char keep[UC_CORE_ERRLEN];

    if (cl == NULL || c->refreshing || !cl->stale ||
        uc_now_ms() - cl->refreshed_ms < UC_REFRESH_MIN_MS)
        return;
    memcpy(keep, c->k.err, sizeof(keep)); /* the caller's last failure */
    c->refreshing = true;
    cl->refreshed_ms = uc_now_ms(); /* asked, even if nobody answers */
    for (uint32_t s = 0; s < c->k.nsrv; s++) {
        if (uc_round_call(c, s, UR_OP_CLUSTER, 1, &a, &h, &body) == 0 &&
            uc_cluster_learn(&c->k, body, h.len) == 0)
            break;
    }
    c->refreshing = false;
    memcpy(c->k.err, keep, sizeof(keep));
}

/* Sends every server's queued frames, all within one write timeout. 0, or
 * the first failure (with its message). */
int uc_flush_all(struct unread *c)
{
    struct uc_deadline d = uc_deadline(c->k.opt.write_timeout_ms, "write");
    uint32_t s;
    int rc, first = 0;

    for (s = 0; s < c->k.nsrv; s++) {
        if (c->k.srv[s].conn.queued == 0)
            continue;
        rc = uc_conn_flush(&c->k.srv[s].conn, &d);
        if (rc == 0)
            continue;
        if (first == 0)
            first = uc_err(&c->k, rc, "%s", c->k.srv[s].conn.err);
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
void uc_req_read(struct unread *c, struct uc_res *out)
{
    const struct uc_slot *first = &c->slot[c->head];
    struct uc_deadline d = uc_deadline(c->k.opt.read_timeout_ms, "read");
    size_t i, span = first->span;
    uint16_t op = first->op;
    struct uc_what w;

    for (i = 0; i < span; i++)
        slot_read(c, &c->slot[c->head + i], &d, &c->k.res[i]);
    c->head += span;
    c->pending--;
    if (first->split) {
        if (uc_merge(&c->k, op, c->k.res, span, c->split_map + first->map_off,
                     first->nuids, out)) {
            if (out->rc == UNREAD_EPROTO)
                uc_conn_drop(&c->k.srv[c->k.last_srv].conn);
            return;
        }
    } else if (span == 1) {
        *out = c->k.res[0];
    } else {
        uc_combine(&c->k, op, span, c->k.res, out);
    }
    w.op = op;
    w.nbatch = first->nbatch;
    w.batch_reads = first->batch_reads;
    uc_surface(&c->k, &w, out);
}

/* One synchronous request to `to` (a server or UC_ALL), as uc_roundtrip. */
int uc_round_call(struct unread *c, uint32_t to, uint16_t op, unsigned argc,
                  const struct unread_arg *argv, struct ur_frame_hdr *h,
                  const char **body)
{
    struct uc_res r;
    int rc;

    if (c->piping)
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "a pipeline is open: read its replies or reset it");
    if (c->batch.open)
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "a batch is open: execute it or reset it");
    if (c->k.cl != NULL && !c->refreshing)
        c->k.cl->last[0] = '\0';
    rc = uc_req_queue(c, to, op, argc, argv);
    if (rc != 0)
        return rc;
    (void)uc_flush_all(c); /* a failure is the request's outcome */
    uc_req_read(c, &r);
    uc_round_end(c);
    c->k.last_srv = r.server;
    *h = r.h;
    *body = r.body;
    return r.rc;
}
