/*
 * cmd_bc.c - BC handlers (docs/COMMANDS.md, "BC"): arguments in, store call,
 * reply out.
 */
#include <stdio.h>

#include "bc.h"
#include "cmds.h"
#include "badges.h"

/* uid ch: the shape of the per-user commands. */
static bool user_args(struct exec_ctx *x, uint64_t *uid, uint64_t *ch)
{
    return arg_u64(x, 0, "uid", uid) && arg_u64(x, 1, "ch", ch);
}

void cmd_BC_PUBLISH(struct exec_ctx *x)
{
    uint64_t ch, head;

    if (!arg_u64(x, 0, "ch", &ch))
        return;
    if (bc_publish(x->srv->db.bc, ch, &head) != 0) {
        reply_oom(x);
        return;
    }
    reply_int(x->r, head);
}

/* A read that registers a new user changes state: it says so (x->dirty)
 * for the journal. On a replica it changes nothing (the primary's records
 * alone write there) and answers what it would: 0 for a new user. */
void cmd_BC_UNREAD(struct exec_ctx *x)
{
    uint64_t uid, ch, unread;
    bool registered, with = false;

    if (!user_args(x, &uid, &ch) || !arg_withexpiry(x, 2, &with))
        return;
    if (x->srv->readonly_data && !x->srv->loading) {
        reply_count(x, FAM_BC, uid, bc_peek_unread(x->srv->db.bc, uid, ch),
                    with);
        return;
    }
    if (bc_unread(x->srv->db.bc, uid, ch, &unread, &registered) != 0) {
        reply_oom(x);
        return;
    }
    x->dirty = registered;
    reply_count(x, FAM_BC, uid, unread, with);
}

/* Without upto, everything: the head is the highest message number. */
void cmd_BC_READ(struct exec_ctx *x)
{
    uint64_t uid, ch, upto = UINT64_MAX, unread;

    if (!user_args(x, &uid, &ch) ||
        (x->argc > 2 && !arg_u64(x, 2, "upto", &upto)))
        return;
    if (bc_read_upto(x->srv->db.bc, uid, ch, upto, &unread) != 0) {
        reply_oom(x);
        return;
    }
    reply_int(x->r, unread);
}

/* ---- USER.INFO, USER.BADGE --------------------------------------------- */

/* Over the channels the user is registered in: a read registers no one. */
bool cmd_bc_badge(const struct server *srv, uint64_t uid, uint64_t limit,
                  uint64_t *part, const union badge_probe *bp)
{
    (void)bp;
    if (part == NULL)
        return true;
    *part = bc_user_unread(srv->db.bc, uid, limit);
    return true;
}

void cmd_bc_badge_hint(const struct server *srv, uint64_t uid, int stage,
                       union badge_probe *bp)
{
    (void)bp;
    bc_prefetch_user(srv->db.bc, uid, stage);
}

static void bc_line(uint64_t ch, uint64_t head, uint64_t unread, void *ctx)
{
    struct user_lines *L = ctx;

    if (user_line_room(L))
        user_line(L, "bc %llu: head=%llu offset=%llu unread=%llu",
                  (unsigned long long)ch, (unsigned long long)head,
                  (unsigned long long)(head - unread),
                  (unsigned long long)unread);
}

void cmd_bc_user_info(struct user_lines *L, const struct server *srv,
                      uint64_t uid)
{
    size_t n = bc_user_info(srv->db.bc, uid, bc_line, L);

    user_lines_more(L, "bc", n);
    user_line(L,
              "bc: channels=%zu (a channel not listed registers the user at "
              "its head: 0 unread)",
              n);
}

/* ---- badge channels (badges.h) ------------------------------------------ */

bool cmd_bc_badge_key(const struct server *srv, const struct ur_op *op,
                      uint32_t argc, const struct ur_arg *argv, uint64_t *key)
{
    uint32_t i = op->flags & OPF_GLOBAL ? 0 : 1;

    (void)srv;
    return argc > i && badges_arg_u64(&argv[i], key);
}

/* A user's unread in the channel without registering it (0 when not
 * registered), or the channel's head. */
uint64_t cmd_bc_badge_value(const struct server *srv, bool head, uint64_t uid,
                            uint64_t key)
{
    uint64_t v = 0;

    if (head)
        return bc_head(srv->db.bc, key);
    bc_peek(srv->db.bc, uid, key, &v);
    return v;
}
