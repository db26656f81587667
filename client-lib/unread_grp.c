/*
 * unread_grp.c - libunread's GRP calls (docs/COMMANDS.md, "GRP"): typed
 * synchronous calls and pipeline queue helpers over the connection core
 * (unread_int.h).
 */
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
