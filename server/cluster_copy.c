/*
 * cluster_copy.c - see cluster_copy.h; the arguments of GLOBALCOPY are in
 * docs/PROTOCOL.md "Cluster":
 *
 *   GLOBALCOPY sender epoch offset slot kind id value ...
 *     BC     ch      head
 *     DOT    dot     push time
 *     FEED   author  count
 *     POST   gid     seq ts [uid ...]       (a post and whom it mentions)
 *     RECALL gid     seq
 *     GROUP  gid     head window ts recalls (a whole group: ts and recalls
 *                                            are u64 little-endian lists)
 *     UDEL   uid                            (USER.DEL: RCPT's part)
 *
 * A full sync walks the stores in order (BC channels, DOT dots, FEED
 * authors, GRP groups), SYNC_CHUNK objects a cron tick, and queues a copy
 * of each object whose slot this node owns; it waits while the link holds
 * more than SYNC_PENDING_MAX bytes, so a slow peer sets the pace.
 */
#include "cluster_copy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster_link.h"
#include "dot.h"
#include "feed.h"
#include "grp.h"
#include "le.h"
#include "log.h"
#include "persist.h"

#define SYNC_CHUNK 2000u
#define SYNC_PENDING_MAX (4u << 20)
#define COPY_MAX_UIDS 1024u

enum sync_stage { ST_BC, ST_DOT, ST_FEED, ST_GRP, ST_DONE };

struct sync {
    enum sync_stage stage;
    uint64_t cursor; /* BC: the scan cursor; others: the next index */
    uint64_t sent;
};

/* ---- building copies --------------------------------------------------- */

struct copy {
    struct ur_arg a[8 + COPY_MAX_UIDS];
    uint16_t n;
};

static void copy_begin(struct cluster *c, struct copy *k, unsigned slot,
                       const char *kind, uint64_t id)
{
    struct server *srv = c->srv;

    k->n = 0;
    k->a[k->n++] = (struct ur_arg){
        .kind = UR_ARG_STR, .len = CLUSTER_ID_LEN, .str = c->nodes[0].id};
    k->a[k->n++] =
        (struct ur_arg){.kind = UR_ARG_INT, .num = c->nodes[0].config_epoch};
    k->a[k->n++] = (struct ur_arg){
        .kind = UR_ARG_INT,
        .num = srv->persist != NULL ? persist_offset(srv->persist) : 0};
    k->a[k->n++] = (struct ur_arg){.kind = UR_ARG_INT, .num = slot};
    k->a[k->n++] = (struct ur_arg){
        .kind = UR_ARG_STR, .len = (uint32_t)strlen(kind), .str = kind};
    k->a[k->n++] = (struct ur_arg){.kind = UR_ARG_INT, .num = id};
}

static void copy_int(struct copy *k, uint64_t v)
{
    k->a[k->n++] = (struct ur_arg){.kind = UR_ARG_INT, .num = v};
}

static void copy_str(struct copy *k, const char *s, size_t n)
{
    k->a[k->n++] =
        (struct ur_arg){.kind = UR_ARG_STR, .len = (uint32_t)n, .str = s};
}

/* Queues k on the link to node i; an overflow starts a full sync there. */
static void send_to(struct cluster *c, uint32_t i, const struct copy *k)
{
    bool overflow;

    if (clink_queue_copy(c->nodes[i].link, k->n, k->a, &overflow) == 0)
        c->copies_sent++;
    else if (overflow)
        ccopy_sync_to(c, i);
}

/* The nodes a copy goes to: every other primary with a link. */
static bool is_target(const struct cluster *c, uint32_t i)
{
    const struct cluster_node *n = &c->nodes[i];

    return i != 0 && n->used && n->link != NULL && (n->flags & CN_MASTER) &&
           !(n->flags & CN_HANDSHAKE);
}

static void send_all(struct cluster *c, const struct copy *k)
{
    for (uint32_t i = 1; i < c->nnodes; i++)
        if (is_target(c, i))
            send_to(c, i, k);
}

static bool arg_num(const struct ur_arg *a, uint64_t *v)
{
    if (a->kind == UR_ARG_INT) {
        *v = a->num;
        return true;
    }
    return ur_parse_uint(a->str, a->len, UR_INT_MAX, v) == UR_NUM_OK;
}

void ccopy_written(struct server *srv, const struct ur_op *op, uint32_t argc,
                   const struct ur_arg *argv)
{
    struct cluster *c = srv->cluster;
    struct copy *k;
    uint64_t id, v;
    unsigned slot;

    if (c == NULL || argc == 0 || !cluster_myself_master(c) ||
        !arg_num(&argv[0], &id))
        return;
    slot = ur_arg_slot(&argv[0]);
    if (c->owner[slot] != 0)
        return;
    k = malloc(sizeof(*k));
    if (k == NULL) {
        log_warn("cluster: out of memory for a global copy (a full sync "
                 "follows)");
        ccopy_sync_all(c);
        return;
    }
    switch (op->code) {
    case UR_OP_BC_PUBLISH:
        copy_begin(c, k, slot, "BC", id);
        copy_int(k, bc_head(srv->db.bc, id));
        break;
    case UR_OP_DOT_PUSH:
        v = dot_push_time(srv->db.dot, id);
        if (v == DOT_NEVER)
            goto out;
        copy_begin(c, k, slot, "DOT", id);
        copy_int(k, v);
        break;
    case UR_OP_FEED_POST:
    case UR_OP_FEED_UNPOST:
        copy_begin(c, k, slot, "FEED", id);
        copy_int(k, feed_posts(srv->db.feed, id));
        break;
    case UR_OP_GRP_POST: {
        uint32_t at = 1;
        uint64_t ts = server_clock_ms(srv);

        copy_begin(c, k, slot, "POST", id);
        copy_int(k, grp_head(srv->db.grp, id));
        if (argc > 1 && !(argv[1].kind == UR_ARG_STR && argv[1].len == 7 &&
                          strncasecmp(argv[1].str, "MENTION", 7) == 0)) {
            if (!arg_num(&argv[1], &ts))
                goto out;
            at = 2;
        }
        copy_int(k, ts);
        for (uint32_t i = at + 1; i < argc && k->n < 8 + COPY_MAX_UIDS; i++)
            if (arg_num(&argv[i], &v))
                copy_int(k, v);
        break;
    }
    case UR_OP_GRP_RECALL:
        if (argc < 2 || !arg_num(&argv[1], &v))
            goto out;
        copy_begin(c, k, slot, "RECALL", id);
        copy_int(k, v);
        break;
    case UR_OP_USER_DEL:
        copy_begin(c, k, slot, "UDEL", id);
        break;
    default:
        goto out;
    }
    send_all(c, k);
out:
    free(k);
}

/* ---- applying them ----------------------------------------------------- */

/* A u64 little-endian list in a string argument; false when its length
 * is not a multiple of 8 or over max entries. */
static bool u64_list(const struct ur_arg *a, uint32_t max, uint64_t **out,
                     uint32_t *n)
{
    if (a->kind != UR_ARG_STR || a->len % 8 != 0 || a->len / 8 > max)
        return false;
    *n = a->len / 8;
    *out = malloc(((size_t)*n + 1) * sizeof(uint64_t));
    if (*out == NULL)
        return false;
    for (uint32_t i = 0; i < *n; i++)
        (*out)[i] = le_rd64(a->str + 8 * i);
    return true;
}

/* The version check and the owner check (not while loading: the
 * journal holds only copies that passed them). true: apply. */
static bool copy_current(struct exec_ctx *x, unsigned slot, uint64_t epoch,
                         uint64_t offset)
{
    struct cluster *c = x->srv->cluster;
    const struct cluster_node *o;
    const struct copy_version *v;

    if (c == NULL)
        return true;
    v = &c->received[slot];
    if (x->srv->loading)
        return true;
    o = cluster_slot_owner(c, slot);
    if (o == NULL || o == &c->nodes[0] ||
        memcmp(o->id, x->argv[0].str, CLUSTER_ID_LEN) != 0 ||
        epoch < v->epoch || (epoch == v->epoch && offset < v->offset)) {
        c->copies_stale++;
        return false;
    }
    return true;
}

static void version_keep(struct cluster *c, unsigned slot, uint64_t epoch,
                         uint64_t offset)
{
    struct copy_version *v;

    if (c == NULL)
        return;
    v = &c->received[slot];
    if (epoch > v->epoch || (epoch == v->epoch && offset > v->offset)) {
        v->epoch = epoch;
        v->offset = offset;
    }
    c->copies_applied++;
}

void ccopy_apply(struct exec_ctx *x)
{
    struct server *srv = x->srv;
    uint64_t epoch, offset, slot, id, v1 = 0, v2 = 0, *list = NULL,
                                      *list2 = NULL;
    uint32_t n = 0, n2 = 0;
    const struct ur_arg *kind = &x->argv[4];
    char what[16];
    int rc = 0;

    if (!srv->loading && srv->cluster == NULL) {
        reply_err(x->r, UR_E_ERR, "This instance has cluster support disabled");
        return;
    }
    if (x->argv[0].kind != UR_ARG_STR || x->argv[0].len != CLUSTER_ID_LEN ||
        kind->kind != UR_ARG_STR || kind->len >= sizeof(what)) {
        reply_err(x->r, UR_E_BADARG, "malformed GLOBALCOPY");
        return;
    }
    if (!arg_u64(x, 1, "epoch", &epoch) || !arg_u64(x, 2, "offset", &offset) ||
        !arg_u64(x, 3, "slot", &slot) || !arg_u64(x, 5, "id", &id))
        return;
    if (slot >= UR_SLOTS || ur_u64_slot(id) != slot) {
        reply_err(x->r, UR_E_BADARG, "GLOBALCOPY: id %llu is not in slot %llu",
                  (unsigned long long)id, (unsigned long long)slot);
        return;
    }
    memcpy(what, kind->str, kind->len);
    what[kind->len] = '\0';
    if (!copy_current(x, (unsigned)slot, epoch, offset)) {
        /* An error, so that it is not journaled: the journal holds only
         * the copies applied, which replay applies again as they are. */
        reply_err(x->r, UR_E_ERR,
                  "STALE copy of slot %llu: older than the one held, or not "
                  "from the slot's owner",
                  (unsigned long long)slot);
        return;
    }
    if (strcasecmp(what, "BC") == 0 && x->argc == 7) {
        if (!arg_u64(x, 6, "head", &v1))
            return;
        rc = bc_raise_head(srv->db.bc, id, v1);
    } else if (strcasecmp(what, "DOT") == 0 && x->argc == 7) {
        if (!arg_u64(x, 6, "ts", &v1))
            return;
        if (v1 > DOT_TS_MAX) {
            reply_err(x->r, UR_E_BADARG, "GLOBALCOPY: push time out of range");
            return;
        }
        rc = dot_push(srv->db.dot, id, v1, &v2);
    } else if (strcasecmp(what, "FEED") == 0 && x->argc == 7) {
        if (!arg_u64(x, 6, "count", &v1))
            return;
        rc = feed_set_posts(srv->db.feed, id, v1);
    } else if (strcasecmp(what, "POST") == 0 && x->argc >= 8 &&
               x->argc - 8 <= COPY_MAX_UIDS) {
        if (!arg_u64(x, 6, "seq", &v1) || !arg_u64(x, 7, "ts", &v2))
            return;
        n = x->argc - 8;
        list = malloc(((size_t)n + 1) * sizeof(*list));
        if (list == NULL) {
            reply_oom(x);
            return;
        }
        for (uint32_t i = 0; i < n; i++)
            if (!arg_u64(x, 8 + i, "uid", &list[i])) {
                free(list);
                return;
            }
        rc = grp_copy_post(srv->db.grp, id, v1, v2, srv->cfg.unread_cap + 1,
                           list, n);
        rc = rc == GRP_ENOMEM ? -1 : 0;
    } else if (strcasecmp(what, "RECALL") == 0 && x->argc == 7) {
        if (!arg_u64(x, 6, "seq", &v1))
            return;
        rc = grp_recall(srv->db.grp, id, v1);
        rc = rc == GRP_ENOMEM ? -1 : 0; /* unknown seq: nothing to recall */
    } else if (strcasecmp(what, "GROUP") == 0 && x->argc == 10) {
        uint64_t window;

        if (!arg_u64(x, 6, "head", &v1) || !arg_u64(x, 7, "window", &window))
            return;
        if (window > GRP_WINDOW_MAX ||
            !u64_list(&x->argv[8], GRP_WINDOW_MAX, &list, &n) ||
            !u64_list(&x->argv[9], GRP_RECALL_MAX, &list2, &n2)) {
            free(list);
            reply_err(x->r, UR_E_BADARG, "GLOBALCOPY: malformed group");
            return;
        }
        rc = grp_copy_group(srv->db.grp, id, v1, (uint32_t)window, n, list, n2,
                            list2);
        if (rc == 1) {
            free(list);
            free(list2);
            reply_err(x->r, UR_E_BADARG, "GLOBALCOPY: malformed group");
            return;
        }
        rc = rc == GRP_ENOMEM ? -1 : 0;
    } else if (strcasecmp(what, "UDEL") == 0 && x->argc == 6) {
        uint64_t removed[FAM_COUNT] = {0};

        db_forget_user(&srv->db, id, 1u << FAM_RCPT, removed);
    } else {
        reply_err(x->r, UR_E_BADARG,
                  "GLOBALCOPY: unknown kind '%s' or wrong "
                  "number of values",
                  what);
        return;
    }
    free(list);
    free(list2);
    if (rc < 0) {
        reply_oom(x);
        return;
    }
    version_keep(srv->cluster, (unsigned)slot, epoch, offset);
    reply_int(x->r, 1);
}

/* ---- full syncs -------------------------------------------------------- */

void ccopy_sync_to(struct cluster *c, uint32_t node)
{
    struct cluster_link *l = c->nodes[node].link;
    struct sync *s;

    if (l == NULL || !is_target(c, node) || !cluster_myself_master(c) ||
        c->nodes[0].nslots == 0)
        return;
    s = clink_sync_state(l);
    if (s == NULL) {
        s = calloc(1, sizeof(*s));
        if (s == NULL)
            return;
        clink_set_sync_state(l, s);
    }
    /* (Re)start from the beginning: what was queued before stays valid. */
    s->stage = ST_BC;
    s->cursor = 0;
    s->sent = 0;
    c->full_syncs++;
}

void ccopy_sync_all(struct cluster *c)
{
    for (uint32_t i = 1; i < c->nnodes; i++)
        if (is_target(c, i))
            ccopy_sync_to(c, i);
}

struct bc_walk {
    struct cluster *c;
    uint32_t node;
    uint64_t sent;
};

static void bc_visit(uint64_t ch, uint64_t head, size_t users, void *ctx)
{
    struct bc_walk *w = ctx;
    unsigned slot = ur_u64_slot(ch);
    struct copy k;

    (void)users;
    if (w->c->owner[slot] != 0 || head == 0)
        return;
    copy_begin(w->c, &k, slot, "BC", ch);
    copy_int(&k, head);
    send_to(w->c, w->node, &k);
    w->sent++;
}

/* Queues up to SYNC_CHUNK objects of s's stage; false when the link went
 * (its state was freed). */
static void sync_step(struct cluster *c, uint32_t node, struct sync *s)
{
    struct server *srv = c->srv;
    struct copy k;
    uint64_t id, v;
    unsigned slot, done = 0;

    while (s->stage != ST_DONE && done < SYNC_CHUNK) {
        switch (s->stage) {
        case ST_BC: {
            struct bc_walk w = {c, node, 0};

            done += (unsigned)bc_scan_channels(srv->db.bc, &s->cursor,
                                               SYNC_CHUNK, bc_visit, &w);
            s->sent += w.sent;
            if (s->cursor == 0)
                s->stage = ST_DOT;
            break;
        }
        case ST_DOT:
            if (s->cursor >= dot_dots(srv->db.dot)) {
                s->stage = ST_FEED;
                s->cursor = 0;
                break;
            }
            dot_dot_at(srv->db.dot, (uint32_t)s->cursor++, &id, &v);
            done++;
            slot = ur_u64_slot(id);
            if (v == DOT_NEVER || c->owner[slot] != 0)
                break;
            copy_begin(c, &k, slot, "DOT", id);
            copy_int(&k, v);
            send_to(c, node, &k);
            s->sent++;
            break;
        case ST_FEED: {
            uint32_t count;

            if (s->cursor >= feed_authors(srv->db.feed)) {
                s->stage = ST_GRP;
                s->cursor = 0;
                break;
            }
            feed_author_at(srv->db.feed, (uint32_t)s->cursor++, &id, &count);
            done++;
            slot = ur_u64_slot(id);
            if (c->owner[slot] != 0)
                break;
            copy_begin(c, &k, slot, "FEED", id);
            copy_int(&k, count);
            send_to(c, node, &k);
            s->sent++;
            break;
        }
        case ST_GRP: {
            struct grp_group_info gi;
            char *ts, *rec;

            if (s->cursor >= grp_group_count(srv->db.grp)) {
                s->stage = ST_DONE;
                break;
            }
            grp_group_info(srv->db.grp, (uint32_t)s->cursor, &gi);
            done++;
            slot = ur_u64_slot(gi.gid);
            if (c->owner[slot] != 0 || gi.head == 0) {
                s->cursor++;
                break;
            }
            ts = malloc((size_t)gi.known * 8 + 1);
            rec = malloc((size_t)gi.nrecall * 8 + 1);
            if (ts == NULL || rec == NULL) {
                free(ts);
                free(rec);
                return; /* tried again at the next tick */
            }
            for (uint32_t i = 0; i < gi.known; i++)
                le_wr64(ts + 8 * i,
                        grp_group_ts(srv->db.grp, (uint32_t)s->cursor, i));
            for (uint32_t i = 0; i < gi.nrecall; i++)
                le_wr64(rec + 8 * i, gi.recall[i]);
            copy_begin(c, &k, slot, "GROUP", gi.gid);
            copy_int(&k, gi.head);
            copy_int(&k, gi.window);
            copy_str(&k, ts, (size_t)gi.known * 8);
            copy_str(&k, rec, (size_t)gi.nrecall * 8);
            send_to(c, node, &k);
            free(ts);
            free(rec);
            s->sent++;
            s->cursor++;
            break;
        }
        case ST_DONE:
            break;
        }
        if (c->nodes[node].link == NULL ||
            clink_sync_state(c->nodes[node].link) != s)
            return; /* an overflow restarted or ended it */
        if (clink_pending_bytes(c->nodes[node].link) > SYNC_PENDING_MAX)
            return;
    }
    if (s->stage == ST_DONE) {
        log_info("cluster: full sync to %.40s queued (%llu objects)",
                 c->nodes[node].id, (unsigned long long)s->sent);
        clink_set_sync_state(c->nodes[node].link, NULL);
        free(s);
    }
}

void ccopy_cron(struct cluster *c)
{
    for (uint32_t i = 1; i < c->nnodes; i++) {
        struct cluster_link *l = c->nodes[i].link;
        struct sync *s;

        if (!c->nodes[i].used || l == NULL || (s = clink_sync_state(l)) == NULL)
            continue;
        if (!is_target(c, i) || !cluster_myself_master(c)) {
            clink_set_sync_state(l, NULL);
            free(s);
            continue;
        }
        if (clink_up(l) && clink_pending_bytes(l) <= SYNC_PENDING_MAX)
            sync_step(c, i, s);
    }
}

void ccopy_link_gone(struct cluster *c, struct cluster_link *l)
{
    (void)c;
    free(clink_sync_state(l));
    clink_set_sync_state(l, NULL);
}

void ccopy_teardown(struct cluster *c)
{
    (void)c; /* the links' syncs went with them */
}
