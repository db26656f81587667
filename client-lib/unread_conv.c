/*
 * unread_conv.c - libunread's CONV calls (docs/COMMANDS.md, "CONV"): typed
 * synchronous calls and pipeline queue helpers over the connection core
 * (unread_int.h).
 */
#include "unread_int.h"

/* The [unread, total] reply of every CONV mutator; args are uid cid and,
 * when argc is 3, the op's argument. */
static int call_pair(struct unread *c, uint16_t op, unsigned argc,
                     const uint64_t *args, uint32_t *unread, uint64_t *total)
{
    struct ur_val_reader rd;
    uint64_t u, t;
    uint32_t count;
    int rc;

    rc = uc_call_ints(c, op, argc, args, &rd);
    if (rc != 0)
        return rc;
    if (!uc_rd_arr(&rd, &count) || count != 2 || !uc_rd_int(&rd, &u) ||
        !uc_rd_int(&rd, &t) || u > UINT32_MAX)
        return uc_shape_err(c, op);
    if (unread != NULL)
        *unread = (uint32_t)u;
    if (total != NULL)
        *total = t;
    return 0;
}

int unread_conv_incr(struct unread *c, uint64_t uid, uint64_t cid,
                     uint64_t delta, uint32_t *unread, uint64_t *total)
{
    uint64_t args[3] = {uid, cid, delta};

    return call_pair(c, UR_OP_CONV_INCR, 3, args, unread, total);
}

int unread_conv_seq(struct unread *c, uint64_t uid, uint64_t cid, uint64_t seq,
                    uint32_t *unread, uint64_t *total)
{
    uint64_t args[3] = {uid, cid, seq};

    return call_pair(c, UR_OP_CONV_SEQ, 3, args, unread, total);
}

int unread_conv_read(struct unread *c, uint64_t uid, uint64_t cid, uint64_t seq,
                     uint32_t *unread, uint64_t *total)
{
    uint64_t args[3] = {uid, cid, seq};

    return call_pair(c, UR_OP_CONV_READ, 3, args, unread, total);
}

int unread_conv_read_all(struct unread *c, uint64_t uid, uint64_t cid,
                         uint32_t *unread, uint64_t *total)
{
    uint64_t args[2] = {uid, cid};

    return call_pair(c, UR_OP_CONV_READ, 2, args, unread, total);
}

int unread_conv_markunread(struct unread *c, uint64_t uid, uint64_t cid,
                           uint64_t seq, uint32_t *unread, uint64_t *total)
{
    uint64_t args[3] = {uid, cid, seq};

    return call_pair(c, UR_OP_CONV_MARKUNREAD, 3, args, unread, total);
}

int unread_conv_recall(struct unread *c, uint64_t uid, uint64_t cid,
                       uint64_t seq, uint32_t *unread, uint64_t *total)
{
    uint64_t args[3] = {uid, cid, seq};

    return call_pair(c, UR_OP_CONV_RECALL, 3, args, unread, total);
}

int unread_conv_mute(struct unread *c, uint64_t uid, uint64_t cid, int muted,
                     uint32_t *unread, uint64_t *total)
{
    uint64_t args[3] = {uid, cid, muted != 0};

    return call_pair(c, UR_OP_CONV_MUTE, 3, args, unread, total);
}

int unread_conv_del(struct unread *c, uint64_t uid, uint64_t cid,
                    uint64_t *total)
{
    uint64_t args[2] = {uid, cid};

    return uc_call_int(c, UR_OP_CONV_DEL, 2, args, total);
}

int unread_conv_get(struct unread *c, uint64_t uid, uint64_t cid,
                    uint32_t *unread)
{
    uint64_t args[2] = {uid, cid}, v;
    int rc;

    rc = uc_call_int(c, UR_OP_CONV_GET, 2, args, &v);
    if (rc != 0 && rc != UNREAD_DEGRADED)
        return rc;
    if (rc == 0 && v > UINT32_MAX)
        return uc_shape_err(c, UR_OP_CONV_GET);
    if (unread != NULL)
        *unread = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    return rc;
}

int unread_conv_total(struct unread *c, uint64_t uid, uint64_t *total)
{
    return uc_call_int(c, UR_OP_CONV_TOTAL, 1, &uid, total);
}

int unread_conv_list(struct unread *c, uint64_t uid, unsigned max,
                     struct unread_conv_pair *out, unsigned *n)
{
    uint64_t args[2] = {uid, max}, cid, unread, last = 0;
    struct ur_val_reader rd;
    uint32_t count, i;
    int rc;

    rc = uc_call_ints(c, UR_OP_CONV_LIST, 2, args, &rd);
    if (rc == UNREAD_DEGRADED && n != NULL)
        *n = 0;
    if (rc != 0)
        return rc;
    if (!uc_rd_arr(&rd, &count) || count % 2 != 0 || count / 2 > max)
        return uc_shape_err(c, UR_OP_CONV_LIST);
    for (i = 0; i < count / 2; i++) {
        if (!uc_rd_int(&rd, &cid) || !uc_rd_int(&rd, &unread) || unread == 0 ||
            unread > UINT32_MAX || (i > 0 && cid <= last))
            return uc_shape_err(c, UR_OP_CONV_LIST);
        last = cid;
        if (out != NULL) {
            out[i].cid = cid;
            out[i].unread = (uint32_t)unread;
        }
    }
    if (n != NULL)
        *n = count / 2;
    return 0;
}

int unread_pipe_conv_incr(struct unread *c, uint64_t uid, uint64_t cid,
                          uint64_t delta)
{
    uint64_t a[3] = {uid, cid, delta};

    return uc_pipe_ints(c, UR_OP_CONV_INCR, 3, a);
}

int unread_pipe_conv_seq(struct unread *c, uint64_t uid, uint64_t cid,
                         uint64_t seq)
{
    uint64_t a[3] = {uid, cid, seq};

    return uc_pipe_ints(c, UR_OP_CONV_SEQ, 3, a);
}

int unread_pipe_conv_read(struct unread *c, uint64_t uid, uint64_t cid,
                          uint64_t seq)
{
    uint64_t a[3] = {uid, cid, seq};

    return uc_pipe_ints(c, UR_OP_CONV_READ, 3, a);
}

int unread_pipe_conv_read_all(struct unread *c, uint64_t uid, uint64_t cid)
{
    uint64_t a[2] = {uid, cid};

    return uc_pipe_ints(c, UR_OP_CONV_READ, 2, a);
}

int unread_pipe_conv_get(struct unread *c, uint64_t uid, uint64_t cid)
{
    uint64_t a[2] = {uid, cid};

    return uc_pipe_ints(c, UR_OP_CONV_GET, 2, a);
}

int unread_pipe_conv_total(struct unread *c, uint64_t uid)
{
    return uc_pipe_ints(c, UR_OP_CONV_TOTAL, 1, &uid);
}

int unread_conv_mtotal(struct unread *c, const uint64_t *uids, size_t n,
                       uint64_t *totals)
{
    return uc_call_uids(c, UR_OP_CONV_MTOTAL, uids, n, totals);
}

int unread_conv_total_ex(struct unread *c, uint64_t uid, uint64_t *total,
                         uint64_t *expired)
{
    return uc_call_count_ex(c, UR_OP_CONV_TOTAL, 1, &uid, total, expired);
}
