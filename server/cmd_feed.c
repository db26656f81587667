/*
 * cmd_feed.c - FEED handlers (docs/COMMANDS.md, "FEED"): arguments in, store
 * call, reply out. The limits come from the configuration: feed-max-follows for
 * FEED.FOLLOW, unread-cap for FEED.UNREAD.
 */
#include <stdio.h>

#include <inttypes.h>
#include <stdlib.h>

#include "cmds.h"
#include "badges.h"
#include "feed.h"

/* The reply to a FEED store error. */
static void feed_fail(struct exec_ctx *x, int rc, uint64_t uid)
{
    switch (rc) {
    case FEED_ELIMIT:
        reply_err(x->r, UR_E_LIMIT,
                  "user %" PRIu64 " already follows %" PRIu32
                  " authors (feed-max-follows)",
                  uid, x->srv->cfg.feed_max_follows);
        break;
    case FEED_EFULL:
        reply_err(x->r, UR_E_LIMIT,
                  "too many distinct authors (at most %" PRIu32 ")",
                  FEED_MAX_AUTHORS);
        break;
    default:
        reply_oom(x);
    }
}

/* FEED.POST/UNPOST author [n]: the shared argument shape. */
static bool post_args(struct exec_ctx *x, uint64_t *author, uint64_t *n)
{
    *n = 1;
    return arg_u64(x, 0, "author", author) &&
           (x->argc < 2 || arg_u64(x, 1, "n", n));
}

void cmd_FEED_POST(struct exec_ctx *x)
{
    uint64_t author, n;
    uint32_t count;
    int rc;

    if (!post_args(x, &author, &n))
        return;
    rc = feed_post(x->srv->db.feed, author, n, &count);
    if (rc != 0) {
        feed_fail(x, rc, 0);
        return;
    }
    reply_int(x->r, count);
}

void cmd_FEED_UNPOST(struct exec_ctx *x)
{
    uint64_t author, n;

    if (!post_args(x, &author, &n))
        return;
    reply_int(x->r, feed_unpost(x->srv->db.feed, author, n));
}

/* Every author is checked before any is followed: all or nothing. */
void cmd_FEED_FOLLOW(struct exec_ctx *x)
{
    uint64_t uid, *authors;
    uint32_t n = x->argc - 1;
    int rc;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    authors = malloc(n * sizeof(*authors));
    if (authors == NULL) {
        reply_oom(x);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!arg_u64(x, i + 1, "author", &authors[i])) {
            free(authors);
            return;
        }
    }
    rc = n == 1 ? feed_follow(x->srv->db.feed, uid, authors[0],
                              x->srv->cfg.feed_max_follows)
                : feed_follow_many(x->srv->db.feed, uid, authors, n,
                                   x->srv->cfg.feed_max_follows);
    free(authors);
    if (rc < 0) {
        feed_fail(x, rc, uid);
        return;
    }
    reply_int(x->r, (uint64_t)rc);
}

void cmd_FEED_UNFOLLOW(struct exec_ctx *x)
{
    uint64_t uid, author;

    if (!arg_u64(x, 0, "uid", &uid) || !arg_u64(x, 1, "author", &author))
        return;
    reply_int(x->r, feed_unfollow(x->srv->db.feed, uid, author));
}

void cmd_FEED_UNREAD(struct exec_ctx *x)
{
    uint64_t uid;
    bool with = false;

    if (!arg_u64(x, 0, "uid", &uid) || !arg_withexpiry(x, 1, &with))
        return;
    reply_count(x, FAM_FEED, uid,
                feed_unread(x->srv->db.feed, uid, x->srv->cfg.unread_cap),
                with);
}

void cmd_FEED_RESET(struct exec_ctx *x)
{
    uint64_t uid;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    if (feed_reset(x->srv->db.feed, uid) != 0) {
        reply_oom(x);
        return;
    }
    reply_int(x->r, 0);
}

/* ---- USER.INFO, USER.BADGE --------------------------------------------- */

bool cmd_feed_badge(const struct server *srv, uint64_t uid, uint64_t limit,
                    uint64_t *part, const union badge_probe *bp)
{
    (void)uid;
    if (part == NULL)
        return true;
    *part = feed_unread_probed(srv->db.feed, &bp->u, limit);
    return true;
}

void cmd_feed_badge_hint(const struct server *srv, uint64_t uid, int stage,
                         union badge_probe *bp)
{
    feed_probe_user(srv->db.feed, uid, stage, &bp->u);
}

static void feed_line(uint64_t author, uint32_t count, uint32_t snapshot,
                      void *ctx)
{
    struct user_lines *L = ctx;

    if (user_line_room(L))
        user_line(L, "feed %llu: posts=%u snapshot=%u new=%u",
                  (unsigned long long)author, count, snapshot,
                  count > snapshot ? count - snapshot : 0);
}

void cmd_feed_user_info(struct user_lines *L, const struct server *srv,
                        uint64_t uid)
{
    uint32_t n = feed_user_info(srv->db.feed, uid, feed_line, L);

    user_lines_more(L, "feed", n);
    user_line(
        L, "feed: follows=%u unread=%llu", n,
        (unsigned long long)feed_unread(srv->db.feed, uid, UINT64_MAX - 1));
}

/* ---- badge channels (badges.h) ------------------------------------------ */

/* A global op (FEED.POST, FEED.UNPOST): the author, whose channel carries
 * its post count. The user ops list no key: their part says it all. */
bool cmd_feed_badge_key(const struct server *srv, const struct ur_op *op,
                        uint32_t argc, const struct ur_arg *argv, uint64_t *key)
{
    (void)srv;
    return (op->flags & OPF_GLOBAL) && argc >= 1 &&
           badges_arg_u64(&argv[0], key);
}

uint64_t cmd_feed_badge_value(const struct server *srv, bool head, uint64_t uid,
                              uint64_t key)
{
    (void)head, (void)uid;
    return feed_posts(srv->db.feed, key);
}
