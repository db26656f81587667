/*
 * cmd_grp.c - GRP handlers (docs/COMMANDS.md, "GRP"): arguments in, store call,
 * reply out. The store counts exactly; every count replied here is capped for
 * display (docs/COMMANDS.md, "Replies": exact up to unread-cap, unread-cap + 1
 * when larger). Groups keep the timestamps of their last unread-cap + 1
 * messages, which is what keeps a capped GRP.SEEN with an old ts exact.
 */
#include <stdio.h>

#include <inttypes.h>
#include <stdlib.h>

#include "cmds.h"
#include "badges.h"
#include "grp.h"
#include "page.h"

/* GRP.LIST's largest count (the user's groups are at most grp-max-groups,
 * 100000 at most). */
#define GRP_LIST_MAX 100000

static uint64_t capped(const struct exec_ctx *x, uint64_t v)
{
    uint64_t cap = x->srv->cfg.unread_cap;

    return v > cap ? cap + 1 : v;
}

/* uid gid: the shape of every per-membership command. */
static bool memb_args(struct exec_ctx *x, uint64_t *uid, uint64_t *gid)
{
    return arg_u64(x, 0, "uid", uid) && arg_u64(x, 1, "gid", gid);
}

/* The reply of JOIN and SEEN: the unread after, or the store's error. */
static void reply_placed(struct exec_ctx *x, int rc, uint64_t uid,
                         uint64_t unread)
{
    if (rc == GRP_ELIMIT)
        reply_err(x->r, UR_E_LIMIT,
                  "user %" PRIu64 " is already in %" PRIu32
                  " groups (grp-max-groups)",
                  uid, x->srv->cfg.grp_max_groups);
    else if (rc != GRP_OK)
        reply_oom(x);
    else
        reply_int(x->r, capped(x, unread));
}

/* GRP.POST gid [ts] [MENTION uid [uid ...]] */
void cmd_GRP_POST(struct exec_ctx *x)
{
    uint64_t gid, ts, seq, *uids = NULL;
    uint32_t at = 1, n = 0;
    int rc;

    if (!arg_u64(x, 0, "gid", &gid))
        return;
    if (x->argc > 1 && !arg_is(x, 1, "MENTION")) {
        if (!arg_u64(x, 1, "ts", &ts))
            return;
        at = 2;
    } else {
        ts = server_clock_ms(x->srv);
    }
    if (at < x->argc) {
        if (!arg_is(x, at, "MENTION") || at + 1 == x->argc) {
            reply_err(x->r, UR_E_BADARG,
                      "GRP.POST takes gid [ts] [MENTION uid [uid ...]]");
            return;
        }
        n = x->argc - at - 1;
        uids = malloc(n * sizeof(*uids));
        if (uids == NULL) {
            reply_oom(x);
            return;
        }
        for (uint32_t i = 0; i < n; i++)
            if (!arg_u64(x, at + 1 + i, "uid", &uids[i])) {
                free(uids);
                return;
            }
    }
    rc = grp_post_mention(x->srv->db.grp, gid, ts, x->srv->cfg.unread_cap + 1,
                          uids, n, &seq);
    free(uids);
    if (rc != GRP_OK)
        reply_oom(x);
    else
        reply_int(x->r, seq);
}

/* Every gid is checked before any is joined: all or nothing. */
void cmd_GRP_JOIN(struct exec_ctx *x)
{
    uint64_t uid, gid, unread = 0, *gids;
    uint32_t n = x->argc - 1;
    int rc;

    if (!memb_args(x, &uid, &gid))
        return;
    if (n == 1) {
        rc = grp_join(x->srv->db.grp, uid, gid, x->srv->cfg.grp_max_groups,
                      &unread);
        reply_placed(x, rc, uid, unread);
        return;
    }
    gids = malloc(n * sizeof(*gids));
    if (gids == NULL) {
        reply_oom(x);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!arg_u64(x, i + 1, "gid", &gids[i])) {
            free(gids);
            return;
        }
    }
    rc = grp_join_many(x->srv->db.grp, uid, gids, n, x->srv->cfg.grp_max_groups,
                       x->srv->cfg.unread_cap, &unread);
    free(gids);
    reply_placed(x, rc, uid, unread);
}

void cmd_GRP_LEAVE(struct exec_ctx *x)
{
    uint64_t uid, gid;

    if (!memb_args(x, &uid, &gid))
        return;
    reply_int(x->r, grp_leave(x->srv->db.grp, uid, gid));
}

/* Without ts, seen means the head: UINT64_MAX is at or after every post,
 * so the store needs no second form (and replay needs no clock). */
void cmd_GRP_SEEN(struct exec_ctx *x)
{
    uint64_t uid, gid, ts = UINT64_MAX, unread = 0;
    int rc;

    if (!memb_args(x, &uid, &gid) || (x->argc > 2 && !arg_u64(x, 2, "ts", &ts)))
        return;
    rc = grp_seen(x->srv->db.grp, uid, gid, ts, x->srv->cfg.grp_max_groups,
                  &unread);
    reply_placed(x, rc, uid, unread);
}

void cmd_GRP_UNREAD(struct exec_ctx *x)
{
    uint64_t uid, gid;
    bool with = false;

    if (!memb_args(x, &uid, &gid) || !arg_withexpiry(x, 2, &with))
        return;
    reply_count(x, FAM_GRP, uid,
                capped(x, grp_unread(x->srv->db.grp, uid, gid)), with);
}

void cmd_GRP_TOTAL(struct exec_ctx *x)
{
    bool chats = false, with = false;
    uint64_t uid, total;
    char text[33];

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    for (uint32_t i = 1; i < x->argc; i++) {
        if (arg_is(x, i, "CHATS") && !chats) {
            chats = true;
        } else if (arg_is(x, i, "WITHEXPIRY") && !with) {
            with = true;
        } else {
            reply_err(x->r, UR_E_BADARG,
                      "unknown or repeated option '%s' (GRP.TOTAL takes "
                      "CHATS, WITHEXPIRY)",
                      arg_text(x, i, text, sizeof(text)));
            return;
        }
    }
    total = capped(x, grp_total(x->srv->db.grp, uid, x->srv->cfg.unread_cap));
    if (!chats) {
        reply_count(x, FAM_GRP, uid, total, with);
        return;
    }
    reply_arr(x->r, 2 + with);
    reply_int(x->r, total);
    reply_int(x->r, grp_chats(x->srv->db.grp, uid));
    if (with)
        reply_int(x->r, db_expiry_pending(&x->srv->db, uid, FAM_GRP));
}

void cmd_GRP_LIST(struct exec_ctx *x)
{
    const struct grp_store *s = x->srv->db.grp;
    struct grp_item *items;
    struct page_item *page;
    struct page_opts o;
    uint64_t uid;
    uint32_t n;

    if (!arg_u64(x, 0, "uid", &uid) || !page_parse(x, 1, GRP_LIST_MAX, &o))
        return;
    n = grp_groups(s, uid);
    items = malloc((n ? n : 1) * sizeof(*items));
    page = malloc((n ? n : 1) * sizeof(*page));
    if (items == NULL || page == NULL) {
        free(items);
        free(page);
        reply_oom(x);
        return;
    }
    n = grp_list(s, uid, items);
    for (uint32_t i = 0; i < n; i++) {
        const struct grp_state *st = &items[i].st;

        page[i] = (struct page_item){items[i].gid,
                                     st->recency,
                                     {st->head, st->seen, capped(x, st->unread),
                                      st->muted, capped(x, st->mentions),
                                      st->first_unread}};
    }
    page_reply(x, page, n, &o);
    free(items);
    free(page);
}

void cmd_GRP_STATE(struct exec_ctx *x)
{
    struct grp_state st;
    uint64_t uid, gid;

    if (!memb_args(x, &uid, &gid))
        return;
    grp_state(x->srv->db.grp, uid, gid, &st);
    reply_arr(x->r, 6);
    reply_int(x->r, st.head);
    reply_int(x->r, st.seen);
    reply_int(x->r, capped(x, st.unread));
    reply_int(x->r, st.muted);
    reply_int(x->r, capped(x, st.mentions));
    reply_int(x->r, st.first_unread);
}

void cmd_GRP_MUTE(struct exec_ctx *x)
{
    struct grp_store *s = x->srv->db.grp;
    uint64_t uid, gid, flag;

    if (!memb_args(x, &uid, &gid) || !arg_u64(x, 2, "flag", &flag))
        return;
    if (flag > 1) {
        reply_err(x->r, UR_E_BADARG, "flag must be 0 (unmute) or 1 (mute)");
        return;
    }
    grp_mute(s, uid, gid, flag);
    reply_pair(x->r, capped(x, grp_unread(s, uid, gid)),
               capped(x, grp_total(s, uid, x->srv->cfg.unread_cap)));
}

void cmd_GRP_MARKUNREAD(struct exec_ctx *x)
{
    uint64_t uid, gid, seq, unread = 0;
    int rc;

    if (!memb_args(x, &uid, &gid) || !arg_u64(x, 2, "seq", &seq))
        return;
    rc = grp_markunread(x->srv->db.grp, uid, gid, seq,
                        x->srv->cfg.grp_max_groups, &unread);
    if (rc == GRP_EINVAL)
        reply_err(x->r, UR_E_BADARG,
                  "no post %llu in group %llu (seq must be 1..head, at most "
                  "4294967295 behind it)",
                  (unsigned long long)seq, (unsigned long long)gid);
    else
        reply_placed(x, rc, uid, unread);
}

void cmd_GRP_RECALL(struct exec_ctx *x)
{
    uint64_t gid, seq;
    int rc;

    if (!arg_u64(x, 0, "gid", &gid) || !arg_u64(x, 1, "seq", &seq))
        return;
    rc = grp_recall(x->srv->db.grp, gid, seq);
    if (rc == GRP_EINVAL)
        reply_err(x->r, UR_E_BADARG, "no post %llu in group %llu",
                  (unsigned long long)seq, (unsigned long long)gid);
    else if (rc < 0)
        reply_oom(x);
    else
        reply_int(x->r, (uint64_t)rc);
}

void cmd_GRP_SEENALL(struct exec_ctx *x)
{
    uint64_t uid;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    if (grp_seen_all(x->srv->db.grp, uid) != GRP_OK) {
        reply_oom(x);
        return;
    }
    reply_int(x->r, capped(x, grp_total(x->srv->db.grp, uid,
                                        x->srv->cfg.unread_cap)));
}

void cmd_GRP_MENTIONS(struct exec_ctx *x)
{
    uint64_t uid;

    if (arg_u64(x, 0, "uid", &uid))
        reply_int(x->r, capped(x, grp_mentions(x->srv->db.grp, uid)));
}

/* ---- USER.INFO, USER.BADGE --------------------------------------------- */

/* Through grp_total, GRP.TOTAL's own sum: what it leaves out (muted
 * groups) the badge leaves out too. */
bool cmd_grp_badge(const struct server *srv, uint64_t uid, uint64_t limit,
                   uint64_t *part, const union badge_probe *bp)
{
    (void)uid;
    if (part == NULL)
        return true;
    *part = grp_total_probed(srv->db.grp, &bp->u, limit);
    return true;
}

void cmd_grp_badge_hint(const struct server *srv, uint64_t uid, int stage,
                        union badge_probe *bp)
{
    grp_probe_user(srv->db.grp, uid, stage, &bp->u);
}

static void grp_line(uint64_t gid, const struct grp_state *st, void *ctx)
{
    struct user_lines *L = ctx;
    char extra[64] = "";

    if (!user_line_room(L))
        return;
    if (st->muted || st->mentions)
        snprintf(extra, sizeof(extra), " muted=%d mentions=%llu", st->muted,
                 (unsigned long long)st->mentions);
    user_line(L, "grp %llu: head=%llu seen=%llu unread=%llu%s",
              (unsigned long long)gid, (unsigned long long)st->head,
              (unsigned long long)st->seen, (unsigned long long)st->unread,
              extra);
}

void cmd_grp_user_info(struct user_lines *L, const struct server *srv,
                       uint64_t uid)
{
    uint32_t n = grp_user_info(srv->db.grp, uid, grp_line, L);

    user_lines_more(L, "grp", n);
    user_line(L, "grp: groups=%u total=%llu (unmuted unread) mentions=%llu", n,
              (unsigned long long)grp_total(srv->db.grp, uid, UINT64_MAX),
              (unsigned long long)grp_mentions(srv->db.grp, uid));
}

/* ---- badge channels (badges.h) ------------------------------------------ */

/* A user op: the group written (GRP.JOIN of several, GRP.SEENALL: none);
 * a global one (GRP.POST, GRP.RECALL): the group, whose channel carries
 * its head. A recall moves no head: it publishes nothing. */
bool cmd_grp_badge_key(const struct server *srv, const struct ur_op *op,
                       uint32_t argc, const struct ur_arg *argv, uint64_t *key)
{
    (void)srv;
    if (op->flags & OPF_GLOBAL)
        return argc >= 1 && badges_arg_u64(&argv[0], key);
    return argc >= 2 && !(op->code == UR_OP_GRP_JOIN && argc > 2) &&
           badges_arg_u64(&argv[1], key);
}

/* As GRP.UNREAD: capped. */
uint64_t cmd_grp_badge_value(const struct server *srv, bool head, uint64_t uid,
                             uint64_t key)
{
    uint64_t v, cap = srv->cfg.unread_cap;

    if (head)
        return grp_head(srv->db.grp, key);
    v = grp_unread(srv->db.grp, uid, key);
    return v > cap ? cap + 1 : v;
}
