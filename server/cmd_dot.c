/*
 * cmd_dot.c - DOT handlers (SPEC 3.5): arguments in, store call, reply out.
 */
#include <inttypes.h>

#include "cmds.h"
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

void cmd_DOT_CHECK(struct exec_ctx *x)
{
    uint64_t uid, dot;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    /* Every dot is valid before the reply's first value goes out. */
    for (uint32_t i = 1; i < x->argc; i++)
        if (!arg_u64(x, i, "dot", &dot))
            return;
    reply_arr(x->r, x->argc - 1);
    for (uint32_t i = 1; i < x->argc; i++) {
        (void)arg_u64(x, i, "dot", &dot);
        reply_int(x->r, dot_shown(x->srv->db.dot, uid, dot));
    }
}
