/*
 * cmd_conv.c - CONV handlers (docs/COMMANDS.md, "CONV"): arguments in, store
 * call, reply out.
 */
#include <stdio.h>

#include "cmds.h"
#include "conv.h"

/* CONV.LIST's default and largest count: bounds the reply (~1.8 MB in
 * binary, ~2.5 MB in RESP). */
#define CONV_LIST_MAX 100000

static bool uid_cid(struct exec_ctx *x, uint64_t *uid, uint64_t *cid)
{
    return arg_u64(x, 0, "uid", uid) && arg_u64(x, 1, "cid", cid);
}

/* uid cid [arg]: *arg keeps its default when the argument is absent. */
static bool conv_args(struct exec_ctx *x, const char *what, uint64_t *uid,
                      uint64_t *cid, uint64_t *arg)
{
    return uid_cid(x, uid, cid) && (x->argc < 3 || arg_u64(x, 2, what, arg));
}

/* Every mutator's store call and its [unread, total] reply. */
static void conv_reply(struct exec_ctx *x, enum conv_op op, uint64_t uid,
                       uint64_t cid, uint64_t arg)
{
    uint64_t total;
    uint32_t unread;

    switch (conv_update(x->srv->db.conv, op, uid, cid, arg, &unread, &total)) {
    case 0:
        reply_pair(x->r, unread, total);
        break;
    case CONV_ELIMIT:
        reply_err(x->r, UR_E_LIMIT,
                  "a conversation remembers at most %d recalled messages "
                  "above its read watermark",
                  CONV_RECALL_MAX);
        break;
    case CONV_EINVAL:
        reply_err(x->r, UR_E_BADARG, "argument out of range");
        break;
    default:
        reply_oom(x);
    }
}

void cmd_CONV_INCR(struct exec_ctx *x)
{
    uint64_t uid, cid, delta = 1;

    if (conv_args(x, "delta", &uid, &cid, &delta))
        conv_reply(x, CONV_OP_INCR, uid, cid, delta);
}

void cmd_CONV_SEQ(struct exec_ctx *x)
{
    uint64_t uid, cid, seq;

    if (conv_args(x, "seq", &uid, &cid, &seq))
        conv_reply(x, CONV_OP_SEQ, uid, cid, seq);
}

void cmd_CONV_READ(struct exec_ctx *x)
{
    uint64_t uid, cid, seq = 0;

    if (conv_args(x, "seq", &uid, &cid, &seq))
        conv_reply(x, x->argc == 3 ? CONV_OP_READ : CONV_OP_READ_ALL, uid, cid,
                   seq);
}

void cmd_CONV_MARKUNREAD(struct exec_ctx *x)
{
    uint64_t uid, cid, seq;

    if (!conv_args(x, "seq", &uid, &cid, &seq))
        return;
    if (seq == 0) {
        reply_err(x->r, UR_E_BADARG,
                  "seq must be at least 1 (it becomes the first unread "
                  "message)");
        return;
    }
    conv_reply(x, CONV_OP_MARKUNREAD, uid, cid, seq);
}

void cmd_CONV_RECALL(struct exec_ctx *x)
{
    uint64_t uid, cid, seq;

    if (conv_args(x, "seq", &uid, &cid, &seq))
        conv_reply(x, CONV_OP_RECALL, uid, cid, seq);
}

void cmd_CONV_MUTE(struct exec_ctx *x)
{
    uint64_t uid, cid, flag;

    if (!conv_args(x, "flag", &uid, &cid, &flag))
        return;
    if (flag > 1) {
        reply_err(x->r, UR_E_BADARG, "flag must be 0 (unmute) or 1 (mute)");
        return;
    }
    conv_reply(x, CONV_OP_MUTE, uid, cid, flag);
}

void cmd_CONV_DEL(struct exec_ctx *x)
{
    uint64_t uid, cid;

    if (uid_cid(x, &uid, &cid))
        reply_int(x->r, conv_del(x->srv->db.conv, uid, cid));
}

void cmd_CONV_GET(struct exec_ctx *x)
{
    uint64_t uid, cid;

    if (uid_cid(x, &uid, &cid))
        reply_int(x->r, conv_get(x->srv->db.conv, uid, cid));
}

void cmd_CONV_TOTAL(struct exec_ctx *x)
{
    uint64_t uid;
    bool with = false;

    if (arg_u64(x, 0, "uid", &uid) && arg_withexpiry(x, 1, &with))
        reply_count(x, FAM_CONV, uid, conv_total(x->srv->db.conv, uid), with);
}

/* Every uid is checked before the reply's first value goes out. */
void cmd_CONV_MTOTAL(struct exec_ctx *x)
{
    uint64_t uid;

    for (uint32_t i = 0; i < x->argc; i++)
        if (!arg_u64(x, i, "uid", &uid))
            return;
    reply_arr(x->r, x->argc);
    for (uint32_t i = 0; i < x->argc; i++) {
        (void)arg_u64(x, i, "uid", &uid);
        reply_int(x->r, conv_total(x->srv->db.conv, uid));
    }
}

/* The LIST reply's array starts at the first element, so that a store
 * failure (before any element) can still be answered with an error. */
struct list_out {
    struct reply *r;
    size_t mark;
    bool started;
};

static void list_emit(uint64_t cid, uint32_t unread, void *ctx)
{
    struct list_out *o = ctx;

    if (!o->started) {
        o->mark = reply_arr_defer(o->r);
        o->started = true;
    }
    reply_int(o->r, cid);
    reply_int(o->r, unread);
}

void cmd_CONV_LIST(struct exec_ctx *x)
{
    struct list_out o = {x->r, 0, false};
    uint64_t uid, count = CONV_LIST_MAX;
    size_t n;

    if (!arg_u64(x, 0, "uid", &uid) ||
        (x->argc == 2 && !arg_u64(x, 1, "count", &count)))
        return;
    if (count > CONV_LIST_MAX) {
        reply_err(x->r, UR_E_BADARG, "count must be at most %d", CONV_LIST_MAX);
        return;
    }
    if (conv_list(x->srv->db.conv, uid, count, list_emit, &o, &n) != 0)
        reply_oom(x);
    else if (!o.started)
        reply_arr(x->r, 0);
    else
        reply_arr_finish(x->r, o.mark, (uint32_t)(2 * n));
}

/* ---- USER.INFO, USER.BADGE --------------------------------------------- */

/* The total CONV.TOTAL answers: muted conversations are out of it. */
bool cmd_conv_badge(const struct server *srv, uint64_t uid, uint64_t limit,
                    uint64_t *part)
{
    (void)limit;
    if (part == NULL)
        return true;
    *part = conv_total(srv->db.conv, uid);
    return true;
}

/* Recalled seqs shown on a conversation's line. */
#define INFO_RECALLS 8

static void conv_line(uint64_t uid, uint64_t cid, const struct conv_info *ci,
                      void *ctx)
{
    struct user_lines *L = ctx;
    char rec[200] = "";
    size_t len = 0;

    (void)uid;
    if (!user_line_room(L))
        return;
    for (uint32_t i = 0; i < ci->nrecall && i < INFO_RECALLS; i++)
        len +=
            (size_t)snprintf(rec + len, sizeof(rec) - len, "%s%llu",
                             i ? "," : "", (unsigned long long)ci->recall[i]);
    if (ci->nrecall > INFO_RECALLS)
        snprintf(rec + len, sizeof(rec) - len, ",+%u more",
                 ci->nrecall - INFO_RECALLS);
    user_line(L,
              "conv %llu: max=%llu read=%llu unread=%u muted=%d recalled=[%s]",
              (unsigned long long)cid, (unsigned long long)ci->max,
              (unsigned long long)ci->read, ci->unread, ci->muted, rec);
}

void cmd_conv_user_info(struct user_lines *L, const struct server *srv,
                        uint64_t uid)
{
    size_t n = conv_user_info(srv->db.conv, uid, conv_line, L);

    user_lines_more(L, "conv", n);
    user_line(L, "conv: conversations=%zu total=%llu (unmuted unread)", n,
              (unsigned long long)conv_total(srv->db.conv, uid));
}
