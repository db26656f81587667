/*
 * cmd_cnt.c - CNT handlers (docs/COMMANDS.md, "CNT"): arguments in, store call,
 * reply out.
 */
#include <stdio.h>

#include "cmds.h"
#include "cnt.h"

/* CNT.INCR/DECR uid type [delta]: the shared argument shape. */
static bool incr_args(struct exec_ctx *x, uint64_t *uid, unsigned *type,
                      uint64_t *delta)
{
    *delta = 1;
    return arg_u64(x, 0, "uid", uid) && arg_ctype(x, 1, type) &&
           (x->argc < 3 || arg_u64(x, 2, "delta", delta));
}

void cmd_CNT_INCR(struct exec_ctx *x)
{
    uint64_t uid, delta, total;
    unsigned type;
    uint32_t value;
    if (!incr_args(x, &uid, &type, &delta))
        return;
    if (cnt_incr(x->srv->db.cnt, uid, type, delta, &value, &total) != 0) {
        reply_oom(x);
        return;
    }
    reply_pair(x->r, value, total);
}

void cmd_CNT_DECR(struct exec_ctx *x)
{
    uint64_t uid, delta, total;
    unsigned type;
    uint32_t value;
    if (!incr_args(x, &uid, &type, &delta))
        return;
    if (cnt_decr(x->srv->db.cnt, uid, type, delta, &value, &total) != 0) {
        reply_oom(x);
        return;
    }
    reply_pair(x->r, value, total);
}

void cmd_CNT_SET(struct exec_ctx *x)
{
    uint64_t uid, total;
    unsigned type;
    uint32_t v, value;
    if (!arg_u64(x, 0, "uid", &uid) || !arg_ctype(x, 1, &type) ||
        !arg_u32(x, 2, "value", &v))
        return;
    if (cnt_set(x->srv->db.cnt, uid, type, v, &value, &total) != 0) {
        reply_oom(x);
        return;
    }
    reply_pair(x->r, value, total);
}

void cmd_CNT_GET(struct exec_ctx *x)
{
    uint64_t uid;
    unsigned type;
    if (!arg_u64(x, 0, "uid", &uid) || !arg_ctype(x, 1, &type))
        return;
    reply_int(x->r, cnt_get(x->srv->db.cnt, uid, type));
}

void cmd_CNT_GETALL(struct exec_ctx *x)
{
    uint64_t uid;
    uint8_t types[CNT_TYPES];
    uint32_t vals[CNT_TYPES];
    if (!arg_u64(x, 0, "uid", &uid))
        return;
    unsigned n = cnt_getall(x->srv->db.cnt, uid, types, vals);
    reply_arr(x->r, 2 * n);
    for (unsigned i = 0; i < n; i++) {
        reply_int(x->r, types[i]);
        reply_int(x->r, vals[i]);
    }
}

void cmd_CNT_TOTAL(struct exec_ctx *x)
{
    uint64_t uid;
    if (!arg_u64(x, 0, "uid", &uid))
        return;
    reply_int(x->r, cnt_total(x->srv->db.cnt, uid));
}

void cmd_CNT_CLEAR(struct exec_ctx *x)
{
    uint64_t uid, mask = 0;
    if (!arg_u64(x, 0, "uid", &uid))
        return;
    if (x->argc == 1)
        mask = UINT64_MAX;
    /* Validate every type before clearing any: all or nothing. */
    for (uint32_t i = 1; i < x->argc; i++) {
        unsigned type;
        if (!arg_ctype(x, i, &type))
            return;
        mask |= (uint64_t)1 << type;
    }
    reply_int(x->r, cnt_clear(x->srv->db.cnt, uid, mask));
}

/* ---- USER.INFO --------------------------------------------------------- */

void cmd_cnt_user_info(struct user_lines *L, const struct server *srv,
                       uint64_t uid)
{
    uint8_t types[CNT_TYPES];
    uint32_t vals[CNT_TYPES];
    unsigned n = cnt_getall(srv->db.cnt, uid, types, vals);
    char buf[400] = "";
    size_t len = 0;

    for (unsigned i = 0; i < n && len < sizeof(buf); i++) {
        if (types[i] < srv->cfg.ntypes)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s=%u ",
                                    srv->cfg.type_names[types[i]], vals[i]);
        else
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%u=%u ",
                                    types[i], vals[i]);
    }
    user_line(L, "cnt: %stotal=%llu", buf,
              (unsigned long long)cnt_total(srv->db.cnt, uid));
}
