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
#include "grp.h"

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

void cmd_GRP_POST(struct exec_ctx *x)
{
    uint64_t gid, ts, seq;

    if (!arg_u64(x, 0, "gid", &gid) || !arg_ts_opt(x, 1, &ts))
        return;
    if (grp_post(x->srv->db.grp, gid, ts, x->srv->cfg.unread_cap + 1, &seq) !=
        GRP_OK) {
        reply_oom(x);
        return;
    }
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
    uint64_t uid;
    bool with = false;

    if (!arg_u64(x, 0, "uid", &uid) || !arg_withexpiry(x, 1, &with))
        return;
    reply_count(
        x, FAM_GRP, uid,
        capped(x, grp_total(x->srv->db.grp, uid, x->srv->cfg.unread_cap)),
        with);
}

void cmd_GRP_LIST(struct exec_ctx *x)
{
    const struct grp_store *s = x->srv->db.grp;
    struct grp_item *items;
    uint64_t uid;
    uint32_t n;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    n = grp_groups(s, uid);
    items = malloc((n ? n : 1) * sizeof(*items));
    if (items == NULL) {
        reply_oom(x);
        return;
    }
    n = grp_list(s, uid, items);
    reply_arr(x->r, 2 * n);
    for (uint32_t i = 0; i < n; i++) {
        reply_int(x->r, items[i].gid);
        reply_int(x->r, capped(x, items[i].unread));
    }
    free(items);
}

/* ---- USER.INFO, USER.BADGE --------------------------------------------- */

/* Through grp_total, GRP.TOTAL's own sum: what it leaves out (muted
 * groups) the badge leaves out too. */
bool cmd_grp_badge(const struct server *srv, uint64_t uid, uint64_t limit,
                   uint64_t *part)
{
    if (part == NULL)
        return true;
    *part = grp_total(srv->db.grp, uid, limit);
    return true;
}

static void grp_line(uint64_t gid, uint64_t head, uint64_t unread, void *ctx)
{
    struct user_lines *L = ctx;

    if (user_line_room(L))
        user_line(L, "grp %llu: head=%llu seen=%llu unread=%llu",
                  (unsigned long long)gid, (unsigned long long)head,
                  (unsigned long long)(head - unread),
                  (unsigned long long)unread);
}

void cmd_grp_user_info(struct user_lines *L, const struct server *srv,
                       uint64_t uid)
{
    uint32_t n = grp_user_info(srv->db.grp, uid, grp_line, L);

    user_lines_more(L, "grp", n);
    user_line(L, "grp: groups=%u total=%llu", n,
              (unsigned long long)grp_total(srv->db.grp, uid, UINT64_MAX));
}
