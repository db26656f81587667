/*
 * cmd_rcpt.c - RCPT handlers (docs/RCPT.md): arguments in, store call, reply
 * out. Keyed by gid: no reader uid comes first, so no OPF_USER.
 *
 * Retention: messages older than rcpt-max-age-days read as absent at once
 * (the store compares every message's ts with the horizon), and are freed
 * incrementally: every RCPT write drops up to RCPT_STEP_DROP expired
 * messages of the next few groups of a walk over all groups, and every
 * RCPT.SEND first drops a few of its own group's. No timer is involved,
 * and no call does more than that bounded amount. Dropping only frees what
 * is already invisible, so it needs no journal record.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cmds.h"
#include "badges.h"
#include "rcpt.h"

#define DAY_MS 86400000ULL
/* Expired messages one RCPT write frees on its walk over the groups. */
#define RCPT_STEP_DROP 16

/* Messages sent before this (ms) are past retention. */
static uint64_t horizon(const struct exec_ctx *x)
{
    uint64_t now = server_clock_ms(x->srv);
    uint64_t age = (uint64_t)x->srv->cfg.rcpt_max_age_days * DAY_MS;

    return now > age ? now - age : 0;
}

/* The bounded retention work of every RCPT write. */
static void retention_step(struct exec_ctx *x, uint64_t h)
{
    rcpt_expire_step(x->srv->db.rcpt, h, RCPT_STEP_DROP);
}

/* The error reply of a store result (enum rcpt_status, not RCPT_OK). */
static void reply_rcpt_err(struct exec_ctx *x, int rc)
{
    switch (rc) {
    case RCPT_ELIMIT:
        if (x->op->code == UR_OP_RCPT_JOIN)
            reply_err(x->r, UR_E_LIMIT,
                      "group is at rcpt-max-members (%u uids; mapids are "
                      "never reused)",
                      x->srv->cfg.rcpt_max_members);
        else
            reply_err(x->r, UR_E_LIMIT,
                      "group is at its limit of %u tracked messages",
                      RCPT_MAX_MESSAGES);
        return;
    case RCPT_ENOMSG:
        reply_err(x->r, UR_E_ERR,
                  "no such message (never sent to this group, or older than "
                  "rcpt-max-age-days)");
        return;
    case RCPT_EEXIST:
        reply_err(x->r, UR_E_ERR, "msgid already sent by another sender");
        return;
    case RCPT_EEXPIRED:
        reply_err(x->r, UR_E_BADARG, "ts is older than rcpt-max-age-days");
        return;
    case RCPT_EANON: /* past UR_INT_MAX: arg_u64 refuses it first */
        reply_err(x->r, UR_E_BADARG, "uid out of range");
        return;
    default:
        reply_oom(x);
        return;
    }
}

/* gid and uid: the shape of JOIN, QUIT, READ and READUPTO. */
static bool gid_uid(struct exec_ctx *x, uint64_t *gid, uint64_t *uid)
{
    return arg_u64(x, 0, "gid", gid) && arg_u64(x, 1, "uid", uid);
}

void cmd_RCPT_JOIN(struct exec_ctx *x)
{
    uint64_t gid, uid;
    uint32_t mapid;
    int rc;

    if (!gid_uid(x, &gid, &uid))
        return;
    retention_step(x, horizon(x));
    rc = rcpt_join(x->srv->db.rcpt, gid, uid, x->srv->cfg.rcpt_max_members,
                   &mapid);
    if (rc != RCPT_OK) {
        reply_rcpt_err(x, rc);
        return;
    }
    reply_int(x->r, mapid);
}

void cmd_RCPT_QUIT(struct exec_ctx *x)
{
    uint64_t gid, uid;

    if (!gid_uid(x, &gid, &uid))
        return;
    retention_step(x, horizon(x));
    reply_int(x->r, rcpt_quit(x->srv->db.rcpt, gid, uid));
}

void cmd_RCPT_SEND(struct exec_ctx *x)
{
    uint64_t gid, msgid, sender, ts, h;
    uint32_t n;
    int rc;

    if (!arg_u64(x, 0, "gid", &gid) || !arg_u64(x, 1, "msgid", &msgid) ||
        !arg_u64(x, 2, "sender", &sender) || !arg_ts_opt(x, 3, &ts))
        return;
    h = horizon(x);
    retention_step(x, h);
    rc = rcpt_send(x->srv->db.rcpt, gid, msgid, sender, ts, h, &n);
    if (rc != RCPT_OK) {
        reply_rcpt_err(x, rc);
        return;
    }
    reply_int(x->r, n);
}

/* msgids a RCPT.READ reads from the stack; more take one allocation. */
#define READ_STACK 64

void cmd_RCPT_READ(struct exec_ctx *x)
{
    uint64_t gid, uid, h, n = 0, stack[READ_STACK], *ids = stack;
    uint32_t nids = x->argc - 2;
    int rc;

    if (!gid_uid(x, &gid, &uid))
        return;
    if (nids > READ_STACK && (ids = malloc(nids * sizeof(*ids))) == NULL) {
        reply_oom(x);
        return;
    }
    /* Validate every msgid before marking any: all or nothing. */
    for (uint32_t i = 0; i < nids; i++)
        if (!arg_u64(x, i + 2, "msgid", &ids[i]))
            goto done;
    h = horizon(x);
    retention_step(x, h);
    rc = rcpt_mark_read(x->srv->db.rcpt, gid, uid, ids, nids, h, &n);
    if (rc != RCPT_OK)
        reply_rcpt_err(x, rc);
    else
        reply_int(x->r, n);
done:
    if (ids != stack)
        free(ids);
}

void cmd_RCPT_READUPTO(struct exec_ctx *x)
{
    uint64_t gid, uid, msgid, h, n = 0;
    int rc;

    if (!gid_uid(x, &gid, &uid) || !arg_u64(x, 2, "msgid", &msgid))
        return;
    h = horizon(x);
    retention_step(x, h);
    rc = rcpt_mark_upto(x->srv->db.rcpt, gid, uid, msgid, h, &n);
    if (rc != RCPT_OK) {
        reply_rcpt_err(x, rc);
        return;
    }
    reply_int(x->r, n);
}

void cmd_RCPT_COUNT(struct exec_ctx *x)
{
    uint64_t gid, msgid;
    uint32_t nread, nunread;
    int rc;

    if (!arg_u64(x, 0, "gid", &gid) || !arg_u64(x, 1, "msgid", &msgid))
        return;
    rc = rcpt_count(x->srv->db.rcpt, gid, msgid, horizon(x), &nread, &nunread);
    if (rc != RCPT_OK) {
        reply_rcpt_err(x, rc);
        return;
    }
    reply_pair(x->r, nread, nunread);
}

/* A member erased by USER.DEL is a null: its receipt still counts, but
 * it has no uid any more (and RCPT_UID_ANON is past the integer range). */
static void list_uid(uint64_t uid, void *ctx)
{
    if (uid == RCPT_UID_ANON)
        reply_nil(ctx);
    else
        reply_int(ctx, uid);
}

void cmd_RCPT_LIST(struct exec_ctx *x)
{
    uint64_t gid, msgid, h;
    uint32_t offset = 0, count = UINT32_MAX, nread, nunread, n;
    bool want_read = arg_is(x, 2, "READ");
    size_t mark;
    int rc;

    if (!arg_u64(x, 0, "gid", &gid) || !arg_u64(x, 1, "msgid", &msgid))
        return;
    if (!want_read && !arg_is(x, 2, "UNREAD")) {
        char text[65];

        reply_err(x->r, UR_E_BADARG, "expected READ or UNREAD, got '%s'",
                  arg_text(x, 2, text, sizeof(text)));
        return;
    }
    if (x->argc == 4) {
        reply_err(x->r, UR_E_ARITY,
                  "wrong number of arguments for 'RCPT.LIST' (offset and "
                  "count go together)");
        return;
    }
    if (x->argc == 5 &&
        (!arg_u32(x, 3, "offset", &offset) || !arg_u32(x, 4, "count", &count)))
        return;
    /* The error must come before the array starts: look the message up
     * first (O(1)). */
    h = horizon(x);
    rc = rcpt_count(x->srv->db.rcpt, gid, msgid, h, &nread, &nunread);
    if (rc != RCPT_OK) {
        reply_rcpt_err(x, rc);
        return;
    }
    mark = reply_arr_defer(x->r);
    rcpt_list(x->srv->db.rcpt, gid, msgid, h, want_read, offset, count,
              list_uid, x->r, &n);
    reply_arr_finish(x->r, mark, n);
}

/* ---- USER.INFO, USER.BADGE --------------------------------------------- */

/* No part: receipts say who read the messages a user sent to a group,
 * not what the user has to read. */
bool cmd_rcpt_badge(const struct server *srv, uint64_t uid, uint64_t limit,
                    uint64_t *part, const union badge_probe *bp)
{
    (void)bp;
    (void)srv;
    (void)uid;
    (void)limit;
    (void)part;
    return false;
}

void cmd_rcpt_badge_hint(const struct server *srv, uint64_t uid, int stage,
                         union badge_probe *bp)
{
    (void)bp;
    (void)srv;
    (void)uid;
    (void)stage;
}

static void rcpt_line(uint64_t gid, uint32_t mapid, bool quit, void *ctx)
{
    struct user_lines *L = ctx;

    if (user_line_room(L))
        user_line(L, "rcpt %llu: mapid=%u quit=%d", (unsigned long long)gid,
                  mapid, quit);
}

void cmd_rcpt_user_info(struct user_lines *L, const struct server *srv,
                        uint64_t uid)
{
    size_t n = rcpt_user_info(srv->db.rcpt, uid, rcpt_line, L);

    user_lines_more(L, "rcpt", n);
    user_line(L, "rcpt: groups=%zu", n);
}

/* ---- badge channels (badges.h) ------------------------------------------ */

/* Receipts are about a message's sender, not a reader's badge: RCPT
 * publishes nothing. */
bool cmd_rcpt_badge_key(const struct server *srv, const struct ur_op *op,
                        uint32_t argc, const struct ur_arg *argv, uint64_t *key)
{
    (void)srv, (void)op, (void)argc, (void)argv, (void)key;
    return false;
}

uint64_t cmd_rcpt_badge_value(const struct server *srv, bool head, uint64_t uid,
                              uint64_t key)
{
    (void)srv, (void)head, (void)uid, (void)key;
    return 0;
}
