/*
 * cmd_cnt.c - CNT handlers (docs/COMMANDS.md, "CNT"): arguments in, store call,
 * reply out.
 */
#include <stdio.h>

#include "cmds.h"
#include "badges.h"
#include "cnt.h"
#include "notice.h"

/* CNT.INCR/DECR uid type [delta]: the shared argument shape. */
static bool incr_args(struct exec_ctx *x, uint64_t *uid, unsigned *type,
                      uint64_t *delta)
{
    *delta = 1;
    return arg_u64(x, 0, "uid", uid) && arg_ctype(x, 1, type) &&
           (x->argc < 3 || arg_u64(x, 2, "delta", delta));
}

/* CNT.INCR uid type [delta] [ID nid]: *nid_at = where nid is, 0 without
 * ID. */
static bool incr_id_args(struct exec_ctx *x, uint64_t *uid, unsigned *type,
                         uint64_t *delta, uint64_t *nid, uint32_t *nid_at)
{
    uint32_t kw = x->argc == 4 ? 2 : 3;

    *delta = 1;
    *nid_at = 0;
    if (!arg_u64(x, 0, "uid", uid) || !arg_ctype(x, 1, type))
        return false;
    if (x->argc >= 4 && !arg_is(x, kw, "ID")) {
        char text[65];

        reply_err(x->r, UR_E_BADARG,
                  "expected ID before the notice id, got '%s'",
                  arg_text(x, kw, text, sizeof(text)));
        return false;
    }
    if ((x->argc == 3 || x->argc == 5) && !arg_u64(x, 2, "delta", delta))
        return false;
    if (x->argc >= 4) {
        *nid_at = kw + 1;
        if (!arg_u64(x, kw + 1, "nid", nid))
            return false;
        if (*delta > CNT_VALUE_MAX) {
            reply_err(x->r, UR_E_BADARG,
                      "a notice's delta must be at most 4294967295");
            return false;
        }
    }
    return true;
}

void cmd_CNT_INCR(struct exec_ctx *x)
{
    uint64_t uid, delta, total, nid = 0;
    unsigned type;
    uint32_t value, nid_at;
    int rc;

    if (!incr_id_args(x, &uid, &type, &delta, &nid, &nid_at))
        return;
    if (nid_at != 0)
        rc = cnt_incr_notice(x->srv->db.cnt, uid, type, delta, nid, &value,
                             &total);
    else
        rc = cnt_incr(x->srv->db.cnt, uid, type, delta, &value, &total);
    if (rc != 0) {
        reply_oom(x);
        return;
    }
    reply_pair(x->r, value, total);
}

void cmd_CNT_ACK(struct exec_ctx *x)
{
    uint64_t uid, nid, total;
    unsigned type;
    uint32_t value;

    if (!arg_u64(x, 0, "uid", &uid) || !arg_ctype(x, 1, &type) ||
        !arg_u64(x, 2, "nid", &nid))
        return;
    if (cnt_ack(x->srv->db.cnt, uid, type, nid, &value, &total) != 0) {
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
    bool with = false;

    if (!arg_u64(x, 0, "uid", &uid) || !arg_withexpiry(x, 1, &with))
        return;
    reply_count(x, FAM_CNT, uid, cnt_total(x->srv->db.cnt, uid), with);
}

/* Every uid is checked before the reply's first value goes out. */
void cmd_CNT_MTOTAL(struct exec_ctx *x)
{
    uint64_t uid;

    for (uint32_t i = 0; i < x->argc; i++)
        if (!arg_u64(x, i, "uid", &uid))
            return;
    reply_arr(x->r, x->argc);
    for (uint32_t i = 0; i < x->argc; i++) {
        (void)arg_u64(x, i, "uid", &uid);
        reply_int(x->r, cnt_total(x->srv->db.cnt, uid));
    }
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

/* ---- USER.INFO, USER.BADGE --------------------------------------------- */

bool cmd_cnt_badge(const struct server *srv, uint64_t uid, uint64_t limit,
                   uint64_t *part, const union badge_probe *bp)
{
    (void)srv;
    (void)uid;
    (void)limit;
    if (part == NULL)
        return true;
    *part = cnt_total_probed(&bp->u);
    return true;
}

void cmd_cnt_badge_hint(const struct server *srv, uint64_t uid, int stage,
                        union badge_probe *bp)
{
    cnt_probe_user(srv->db.cnt, uid, stage, &bp->u);
}

struct notice_lines {
    struct user_lines *L;
    const struct server *srv;
    uint32_t unread;
};

static void notice_line(const struct notice *n, void *ctx)
{
    struct notice_lines *nl = ctx;
    const struct config *cfg = &nl->srv->cfg;
    char type[32];

    nl->unread += !n->read;
    if (!user_line_room(nl->L))
        return;
    if (n->type < cfg->ntypes)
        snprintf(type, sizeof(type), "%s", cfg->type_names[n->type]);
    else
        snprintf(type, sizeof(type), "%u", n->type);
    user_line(nl->L, "cnt notice %llu: type=%s delta=%u %s",
              (unsigned long long)n->nid, type, n->delta,
              n->read ? "read" : "unread");
}

void cmd_cnt_user_info(struct user_lines *L, const struct server *srv,
                       uint64_t uid)
{
    struct notice_lines nl = {L, srv, 0};
    uint32_t notices;
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
    notices = notice_user(cnt_notices(srv->db.cnt), uid, notice_line, &nl);
    user_lines_more(L, "cnt", notices);
    if (notices > 0)
        user_line(L, "cnt: %stotal=%llu notices=%u (unread %u)", buf,
                  (unsigned long long)cnt_total(srv->db.cnt, uid), notices,
                  nl.unread);
    else
        user_line(L, "cnt: %stotal=%llu", buf,
                  (unsigned long long)cnt_total(srv->db.cnt, uid));
}

/* ---- badge channels (badges.h) ------------------------------------------ */

/* The type written; CNT.CLEAR of every type or of several has none. */
bool cmd_cnt_badge_key(const struct server *srv, const struct ur_op *op,
                       uint32_t argc, const struct ur_arg *argv, uint64_t *key)
{
    if (argc < 2 || (op->code == UR_OP_CNT_CLEAR && argc != 2))
        return false;
    return badges_arg_ctype(srv, &argv[1], key);
}

uint64_t cmd_cnt_badge_value(const struct server *srv, bool head, uint64_t uid,
                             uint64_t key)
{
    (void)head;
    return cnt_get(srv->db.cnt, uid, (unsigned)key);
}
