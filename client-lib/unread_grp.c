/*
 * unread_grp.c - libunread's GRP calls (docs/COMMANDS.md, "GRP"): typed
 * synchronous calls and pipeline queue helpers over the connection core
 * (unread_int.h).
 */
#include <stdlib.h>

#include "unread_int.h"

/* Arguments of a command ending in [ts]: ts is left out when it is
 * UNREAD_GRP_NOW. */
static unsigned ts_argc(unsigned argc, uint64_t ts)
{
    return ts == UNREAD_GRP_NOW ? argc - 1 : argc;
}

int unread_grp_post(struct unread *c, uint64_t gid, uint64_t ts, uint64_t *seq)
{
    uint64_t args[2] = {gid, ts};

    return uc_call_int(c, UR_OP_GRP_POST, ts_argc(2, ts), args, seq);
}

int unread_grp_join(struct unread *c, uint64_t uid, uint64_t gid,
                    uint64_t *unread)
{
    uint64_t args[2] = {uid, gid};

    return uc_call_int(c, UR_OP_GRP_JOIN, 2, args, unread);
}

int unread_grp_leave(struct unread *c, uint64_t uid, uint64_t gid,
                     int *was_member)
{
    uint64_t args[2] = {uid, gid}, v;
    int rc;

    rc = uc_call_int(c, UR_OP_GRP_LEAVE, 2, args, &v);
    if (rc != 0)
        return rc;
    if (v > 1)
        return uc_shape_err(c, UR_OP_GRP_LEAVE);
    if (was_member != NULL)
        *was_member = (int)v;
    return 0;
}

int unread_grp_seen(struct unread *c, uint64_t uid, uint64_t gid, uint64_t ts,
                    uint64_t *unread)
{
    uint64_t args[3] = {uid, gid, ts};

    return uc_call_int(c, UR_OP_GRP_SEEN, ts_argc(3, ts), args, unread);
}

int unread_grp_unread(struct unread *c, uint64_t uid, uint64_t gid,
                      uint64_t *unread)
{
    uint64_t args[2] = {uid, gid};

    return uc_call_int(c, UR_OP_GRP_UNREAD, 2, args, unread);
}

int unread_grp_total(struct unread *c, uint64_t uid, uint64_t *total)
{
    return uc_call_int(c, UR_OP_GRP_TOTAL, 1, &uid, total);
}

int unread_grp_list(struct unread *c, uint64_t uid, struct unread_grp_item *out,
                    size_t max, size_t *n)
{
    struct ur_val_reader rd;
    uint64_t gid, unread, last = 0;
    uint32_t count;
    int rc;

    rc = uc_call_ints(c, UR_OP_GRP_LIST, 1, &uid, &rd);
    if (rc == UNREAD_DEGRADED && n != NULL)
        *n = 0;
    if (rc != 0)
        return rc;
    if (!uc_rd_arr(&rd, &count) || count % 2 != 0)
        return uc_shape_err(c, UR_OP_GRP_LIST);
    for (uint32_t i = 0; i < count / 2; i++) {
        if (!uc_rd_int(&rd, &gid) || !uc_rd_int(&rd, &unread) || unread == 0 ||
            (i > 0 && gid <= last))
            return uc_shape_err(c, UR_OP_GRP_LIST);
        last = gid;
        if (out != NULL && i < max)
            out[i] = (struct unread_grp_item){gid, unread};
    }
    if (n != NULL)
        *n = count / 2;
    return 0;
}

int unread_pipe_grp_post(struct unread *c, uint64_t gid, uint64_t ts)
{
    uint64_t a[2] = {gid, ts};

    return uc_pipe_ints(c, UR_OP_GRP_POST, ts_argc(2, ts), a);
}

int unread_pipe_grp_seen(struct unread *c, uint64_t uid, uint64_t gid,
                         uint64_t ts)
{
    uint64_t a[3] = {uid, gid, ts};

    return uc_pipe_ints(c, UR_OP_GRP_SEEN, ts_argc(3, ts), a);
}

int unread_pipe_grp_unread(struct unread *c, uint64_t uid, uint64_t gid)
{
    uint64_t a[2] = {uid, gid};

    return uc_pipe_ints(c, UR_OP_GRP_UNREAD, 2, a);
}

int unread_pipe_grp_total(struct unread *c, uint64_t uid)
{
    return uc_pipe_ints(c, UR_OP_GRP_TOTAL, 1, &uid);
}

int unread_grp_join_many(struct unread *c, uint64_t uid, const uint64_t *gids,
                         size_t n, uint64_t *unread)
{
    return uc_call_int_list(c, UR_OP_GRP_JOIN, uid, gids, n, unread);
}

int unread_grp_unread_ex(struct unread *c, uint64_t uid, uint64_t gid,
                         uint64_t *unread, uint64_t *expired)
{
    uint64_t args[2] = {uid, gid};

    return uc_call_count_ex(c, UR_OP_GRP_UNREAD, 2, args, unread, expired);
}

int unread_grp_total_ex(struct unread *c, uint64_t uid, uint64_t *total,
                        uint64_t *expired)
{
    return uc_call_count_ex(c, UR_OP_GRP_TOTAL, 1, &uid, total, expired);
}

/* ---- The chat features ------------------------------------------------- */

int unread_grp_post_mention(struct unread *c, uint64_t gid, uint64_t ts,
                            const uint64_t *uids, unsigned n, uint64_t *seq)
{
    struct unread_arg *argv = malloc((3 + (size_t)n) * sizeof(*argv));
    struct ur_val_reader rd;
    struct ur_frame_hdr h;
    const char *body;
    unsigned argc = 0;
    int rc;

    if (argv == NULL)
        return uc_set_err(c, UNREAD_ENOMEM, "out of memory for GRP.POST");
    argv[argc++] = unread_arg_int(gid);
    if (ts != UNREAD_GRP_NOW)
        argv[argc++] = unread_arg_int(ts);
    if (n > 0)
        argv[argc++] = unread_arg_str("MENTION", 7);
    for (unsigned i = 0; i < n; i++)
        argv[argc++] = unread_arg_int(uids[i]);
    rc = uc_roundtrip(c, UR_OP_GRP_POST, argc, argv, &h, &body);
    free(argv);
    if (rc != 0)
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    if (!uc_rd_int(&rd, seq))
        return uc_shape_err(c, UR_OP_GRP_POST);
    return 0;
}

int unread_grp_state(struct unread *c, uint64_t uid, uint64_t gid,
                     struct unread_chat_state *st)
{
    struct unread_arg argv[2] = {unread_arg_int(uid), unread_arg_int(gid)};

    return uc_call_state(c, UR_OP_GRP_STATE, 2, argv, st);
}

int unread_grp_mute(struct unread *c, uint64_t uid, uint64_t gid, int muted,
                    uint64_t *unread, uint64_t *total)
{
    uint64_t args[3] = {uid, gid, muted != 0}, u, t;
    struct ur_val_reader rd;
    uint32_t count;
    int rc;

    rc = uc_call_ints(c, UR_OP_GRP_MUTE, 3, args, &rd);
    if (rc != 0)
        return rc;
    if (!uc_rd_arr(&rd, &count) || count != 2 || !uc_rd_int(&rd, &u) ||
        !uc_rd_int(&rd, &t))
        return uc_shape_err(c, UR_OP_GRP_MUTE);
    if (unread != NULL)
        *unread = u;
    if (total != NULL)
        *total = t;
    return 0;
}

int unread_grp_markunread(struct unread *c, uint64_t uid, uint64_t gid,
                          uint64_t seq, uint64_t *unread)
{
    uint64_t args[3] = {uid, gid, seq};

    return uc_call_int(c, UR_OP_GRP_MARKUNREAD, 3, args, unread);
}

int unread_grp_recall(struct unread *c, uint64_t gid, uint64_t seq, int *newly)
{
    uint64_t args[2] = {gid, seq}, v;
    int rc;

    rc = uc_call_int(c, UR_OP_GRP_RECALL, 2, args, &v);
    if (rc != 0)
        return rc;
    if (v > 1)
        return uc_shape_err(c, UR_OP_GRP_RECALL);
    if (newly != NULL)
        *newly = (int)v;
    return 0;
}

int unread_grp_seenall(struct unread *c, uint64_t uid, uint64_t *total)
{
    return uc_call_int(c, UR_OP_GRP_SEENALL, 1, &uid, total);
}

int unread_grp_mentions(struct unread *c, uint64_t uid, uint64_t *mentions)
{
    return uc_call_int(c, UR_OP_GRP_MENTIONS, 1, &uid, mentions);
}

int unread_grp_total_chats(struct unread *c, uint64_t uid, uint64_t *total,
                           uint64_t *chats)
{
    struct unread_arg argv[2] = {unread_arg_int(uid),
                                 unread_arg_str("CHATS", 5)};
    struct ur_val_reader rd;
    struct ur_frame_hdr h;
    const char *body;
    uint64_t t = 0, k = 0;
    uint32_t count;
    int rc;

    rc = uc_roundtrip(c, UR_OP_GRP_TOTAL, 2, argv, &h, &body);
    if (rc < 0)
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    if (rc == UNREAD_DEGRADED) {
        t = k = uc_rd_int(&rd, &t) ? t : 0;
    } else if (rc != 0) {
        return rc;
    } else if (!uc_rd_arr(&rd, &count) || count != 2 || !uc_rd_int(&rd, &t) ||
               !uc_rd_int(&rd, &k)) {
        return uc_shape_err(c, UR_OP_GRP_TOTAL);
    }
    if (total != NULL)
        *total = t;
    if (chats != NULL)
        *chats = k;
    return rc;
}

int unread_grp_list_page(struct unread *c, uint64_t uid, int order,
                         uint64_t cursor, unsigned count,
                         struct unread_list_entry *out, unsigned *n,
                         uint64_t *next)
{
    return uc_list_page(c, UR_OP_GRP_LIST, uid, order, cursor, count, out, n,
                        next);
}
