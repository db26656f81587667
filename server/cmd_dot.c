/*
 * cmd_dot.c - DOT handlers (docs/COMMANDS.md, "DOT"): arguments in, store call,
 * reply out.
 */
#include <stdio.h>

#include <inttypes.h>

#include "cmds.h"
#include "badges.h"
#include "dot.h"

/* The reply to a DOT store error. */
static void dot_fail(struct exec_ctx *x, int rc)
{
    switch (rc) {
    case DOT_ERANGE:
        reply_err(x->r, UR_E_BADARG, "ts must be at most %" PRIu64, DOT_TS_MAX);
        break;
    case DOT_EFULL:
        reply_err(x->r, UR_E_LIMIT,
                  "too many distinct dots (at most %" PRIu32 ")", DOT_MAX_DOTS);
        break;
    default:
        reply_oom(x);
    }
}

void cmd_DOT_PUSH(struct exec_ctx *x)
{
    uint64_t dot, ts, push;
    int rc;

    if (!arg_u64(x, 0, "dot", &dot) || !arg_ts_opt(x, 1, &ts))
        return;
    rc = dot_push(x->srv->db.dot, dot, ts, &push);
    if (rc != 0) {
        dot_fail(x, rc);
        return;
    }
    reply_int(x->r, push);
}

void cmd_DOT_CLICK(struct exec_ctx *x)
{
    uint64_t uid, dot, ts;
    int rc;

    if (!arg_u64(x, 0, "uid", &uid) || !arg_u64(x, 1, "dot", &dot) ||
        !arg_ts_opt(x, 2, &ts))
        return;
    rc = dot_click(x->srv->db.dot, uid, dot, ts);
    if (rc != 0) {
        dot_fail(x, rc);
        return;
    }
    reply_int(x->r, 0);
}

/* The time up to which every dot reads as clicked for uid: its expiry,
 * when that forgot its clicks (docs/OPERATIONS.md, "Users and expiry"). */
static uint64_t dot_floor(const struct server *srv, uint64_t uid)
{
    return db_expiry_floor(&srv->db, uid, FAM_DOT);
}

void cmd_DOT_CHECK(struct exec_ctx *x)
{
    uint64_t uid, dot, floor;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    /* Every dot is valid before the reply's first value goes out. */
    for (uint32_t i = 1; i < x->argc; i++)
        if (!arg_u64(x, i, "dot", &dot))
            return;
    floor = dot_floor(x->srv, uid);
    reply_arr(x->r, x->argc - 1);
    for (uint32_t i = 1; i < x->argc; i++) {
        (void)arg_u64(x, i, "dot", &dot);
        reply_int(x->r, dot_shown_after(x->srv->db.dot, uid, dot, floor));
    }
}

/* ---- USER.INFO, USER.BADGE --------------------------------------------- */

/* Among the dots the user clicked: a dot it never touched is everyone's,
 * and counting all of them would cost O(dots) per badge. */
bool cmd_dot_badge(const struct server *srv, uint64_t uid, uint64_t limit,
                   uint64_t *part, const union badge_probe *bp)
{
    (void)bp;
    (void)limit;
    if (part == NULL)
        return true;
    *part = dot_user_shown(srv->db.dot, uid, dot_floor(srv, uid));
    return true;
}

void cmd_dot_badge_hint(const struct server *srv, uint64_t uid, int stage,
                        union badge_probe *bp)
{
    (void)bp;
    dot_prefetch_user(srv->db.dot, uid, stage);
}

static void dot_line(uint64_t dot, uint64_t click, uint64_t push, bool shown,
                     void *ctx)
{
    struct user_lines *L = ctx;
    char p[24] = "never";

    if (!user_line_room(L))
        return;
    if (push != DOT_NEVER)
        snprintf(p, sizeof(p), "%llu", (unsigned long long)push);
    user_line(L, "dot %llu: clicked=%llu pushed=%s shows=%d",
              (unsigned long long)dot, (unsigned long long)click, p, shown);
}

void cmd_dot_user_info(struct user_lines *L, const struct server *srv,
                       uint64_t uid)
{
    uint32_t n = dot_user_info(srv->db.dot, uid, dot_line, L);
    uint64_t floor = dot_floor(srv, uid);

    user_lines_more(L, "dot", n);
    if (floor != 0)
        user_line(L,
                  "dot: clicked=%u, every dot pushed up to %llu (its expiry) "
                  "reads as clicked; a dot pushed later and not listed shows",
                  n, (unsigned long long)floor);
    else
        user_line(L, "dot: clicked=%u (a pushed dot not listed shows)", n);
}

/* ---- badge channels (badges.h) ------------------------------------------ */

bool cmd_dot_badge_key(const struct server *srv, const struct ur_op *op,
                       uint32_t argc, const struct ur_arg *argv, uint64_t *key)
{
    uint32_t i = op->flags & OPF_GLOBAL ? 0 : 1;

    (void)srv;
    return argc > i && badges_arg_u64(&argv[i], key);
}

/* Whether the dot shows for the user (1/0, as DOT.CHECK), or its push
 * time (DOT_NEVER before the first push). */
uint64_t cmd_dot_badge_value(const struct server *srv, bool head, uint64_t uid,
                             uint64_t key)
{
    if (head)
        return dot_push_time(srv->db.dot, key);
    return dot_shown_after(srv->db.dot, uid, key, dot_floor(srv, uid));
}
