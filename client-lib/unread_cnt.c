/*
 * unread_cnt.c - libunread's CNT calls (docs/COMMANDS.md, "CNT") and PING:
 * typed synchronous calls and pipeline queue helpers over the connection
 * core (unread_int.h).
 */
#include <string.h>

#include "unread_int.h"

/* The [value, total] reply of CNT.INCR, DECR and SET (writes: never
 * degraded). */
static int call_cnt_pair(struct unread *c, uint16_t op, uint64_t uid,
                         unsigned type, uint32_t n, uint32_t *value,
                         uint64_t *total)
{
    struct ur_val_reader rd;
    uint64_t args[3] = {uid, type, n}, v, t;
    uint32_t count;
    int rc;

    rc = uc_call_ints(c, op, 3, args, &rd);
    if (rc != 0)
        return rc;
    if (!uc_rd_arr(&rd, &count) || count != 2 || !uc_rd_int(&rd, &v) ||
        !uc_rd_int(&rd, &t) || v > UINT32_MAX)
        return uc_shape_err(c, op);
    if (value != NULL)
        *value = (uint32_t)v;
    if (total != NULL)
        *total = t;
    return 0;
}

int unread_ping(struct unread *c)
{
    struct ur_val_reader rd;
    struct ur_val v;
    int rc;

    rc = uc_call_ints(c, UR_OP_PING, 0, NULL, &rd);
    if (rc != 0)
        return rc;
    if (!ur_val_next(&rd, &v) || v.kind != UR_VAL_STATUS || v.len != 4 ||
        memcmp(v.str, "PONG", 4) != 0)
        return uc_shape_err(c, UR_OP_PING);
    return 0;
}

int unread_cnt_incr(struct unread *c, uint64_t uid, unsigned type,
                    uint32_t delta, uint32_t *value, uint64_t *total)
{
    return call_cnt_pair(c, UR_OP_CNT_INCR, uid, type, delta, value, total);
}

int unread_cnt_decr(struct unread *c, uint64_t uid, unsigned type,
                    uint32_t delta, uint32_t *value, uint64_t *total)
{
    return call_cnt_pair(c, UR_OP_CNT_DECR, uid, type, delta, value, total);
}

int unread_cnt_set(struct unread *c, uint64_t uid, unsigned type,
                   uint32_t set_to, uint32_t *value, uint64_t *total)
{
    return call_cnt_pair(c, UR_OP_CNT_SET, uid, type, set_to, value, total);
}

int unread_cnt_get(struct unread *c, uint64_t uid, unsigned type,
                   uint32_t *value)
{
    uint64_t args[2] = {uid, type}, v;
    int rc;

    rc = uc_call_int(c, UR_OP_CNT_GET, 2, args, &v);
    if (rc != 0 && rc != UNREAD_DEGRADED)
        return rc;
    if (rc == 0 && v > UINT32_MAX)
        return uc_shape_err(c, UR_OP_CNT_GET);
    if (value != NULL)
        *value = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    return rc;
}

int unread_cnt_getall(struct unread *c, uint64_t uid,
                      struct unread_cnt_pair *out, unsigned *n)
{
    struct ur_val_reader rd;
    uint64_t type, value;
    uint32_t count, i;
    int rc, last = -1;

    rc = uc_call_ints(c, UR_OP_CNT_GETALL, 1, &uid, &rd);
    if (rc == UNREAD_DEGRADED && n != NULL)
        *n = 0;
    if (rc != 0)
        return rc;
    if (!uc_rd_arr(&rd, &count) || count % 2 != 0 ||
        count / 2 > UNREAD_CNT_TYPES)
        return uc_shape_err(c, UR_OP_CNT_GETALL);
    for (i = 0; i < count / 2; i++) {
        if (!uc_rd_int(&rd, &type) || !uc_rd_int(&rd, &value) ||
            type >= UNREAD_CNT_TYPES || (int)type <= last || value > UINT32_MAX)
            return uc_shape_err(c, UR_OP_CNT_GETALL);
        last = (int)type;
        if (out != NULL) {
            out[i].type = (uint8_t)type;
            out[i].value = (uint32_t)value;
        }
    }
    if (n != NULL)
        *n = count / 2;
    return 0;
}

int unread_cnt_total(struct unread *c, uint64_t uid, uint64_t *total)
{
    return uc_call_int(c, UR_OP_CNT_TOTAL, 1, &uid, total);
}

int unread_cnt_clear(struct unread *c, uint64_t uid, const uint8_t *types,
                     unsigned ntypes, uint64_t *total)
{
    uint64_t args[UNREAD_CNT_TYPES + 1];
    unsigned i;

    if (ntypes > UNREAD_CNT_TYPES || (ntypes > 0 && types == NULL))
        return uc_set_err(c, UNREAD_EUSAGE, "CNT.CLEAR: %u types, at most %u",
                          ntypes, (unsigned)UNREAD_CNT_TYPES);
    args[0] = uid;
    for (i = 0; i < ntypes; i++)
        args[i + 1] = types[i];
    return uc_call_int(c, UR_OP_CNT_CLEAR, ntypes + 1, args, total);
}

/* CNT.INCR uid type delta ID nid, CNT.ACK uid type nid: [value, total]
 * (writes: never degraded). */
static int call_notice(struct unread *c, uint16_t op, uint64_t uid,
                       unsigned type, const uint32_t *delta, uint64_t nid,
                       uint32_t *value, uint64_t *total)
{
    struct unread_arg argv[5];
    struct ur_val_reader rd;
    struct ur_frame_hdr h;
    const char *body;
    uint32_t count;
    uint64_t v, t;
    unsigned n = 0;
    int rc;

    argv[n++] = unread_arg_int(uid);
    argv[n++] = unread_arg_int(type);
    if (delta != NULL) {
        argv[n++] = unread_arg_int(*delta);
        argv[n++] = unread_arg_str("ID", 2);
    }
    argv[n++] = unread_arg_int(nid);
    rc = uc_roundtrip(c, op, n, argv, &h, &body);
    if (rc != 0)
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    if (!uc_rd_arr(&rd, &count) || count != 2 || !uc_rd_int(&rd, &v) ||
        !uc_rd_int(&rd, &t) || v > UINT32_MAX)
        return uc_shape_err(c, op);
    if (value != NULL)
        *value = (uint32_t)v;
    if (total != NULL)
        *total = t;
    return 0;
}

int unread_cnt_incr_id(struct unread *c, uint64_t uid, unsigned type,
                       uint32_t delta, uint64_t nid, uint32_t *value,
                       uint64_t *total)
{
    return call_notice(c, UR_OP_CNT_INCR, uid, type, &delta, nid, value, total);
}

int unread_cnt_ack(struct unread *c, uint64_t uid, unsigned type, uint64_t nid,
                   uint32_t *value, uint64_t *total)
{
    return call_notice(c, UR_OP_CNT_ACK, uid, type, NULL, nid, value, total);
}

int unread_cnt_mtotal(struct unread *c, const uint64_t *uids, size_t n,
                      uint64_t *totals)
{
    return uc_call_uids(c, UR_OP_CNT_MTOTAL, uids, n, totals);
}

int unread_cnt_total_ex(struct unread *c, uint64_t uid, uint64_t *total,
                        uint64_t *expired)
{
    return uc_call_count_ex(c, UR_OP_CNT_TOTAL, 1, &uid, total, expired);
}

int unread_pipe_cnt_incr(struct unread *c, uint64_t uid, unsigned type,
                         uint32_t delta)
{
    uint64_t a[3] = {uid, type, delta};

    return uc_pipe_ints(c, UR_OP_CNT_INCR, 3, a);
}

int unread_pipe_cnt_decr(struct unread *c, uint64_t uid, unsigned type,
                         uint32_t delta)
{
    uint64_t a[3] = {uid, type, delta};

    return uc_pipe_ints(c, UR_OP_CNT_DECR, 3, a);
}

int unread_pipe_cnt_set(struct unread *c, uint64_t uid, unsigned type,
                        uint32_t value)
{
    uint64_t a[3] = {uid, type, value};

    return uc_pipe_ints(c, UR_OP_CNT_SET, 3, a);
}

int unread_pipe_cnt_get(struct unread *c, uint64_t uid, unsigned type)
{
    uint64_t a[2] = {uid, type};

    return uc_pipe_ints(c, UR_OP_CNT_GET, 2, a);
}

int unread_pipe_cnt_getall(struct unread *c, uint64_t uid)
{
    return uc_pipe_ints(c, UR_OP_CNT_GETALL, 1, &uid);
}

int unread_pipe_cnt_total(struct unread *c, uint64_t uid)
{
    return uc_pipe_ints(c, UR_OP_CNT_TOTAL, 1, &uid);
}

int unread_pipe_cnt_incr_id(struct unread *c, uint64_t uid, unsigned type,
                            uint32_t delta, uint64_t nid)
{
    struct unread_arg a[5] = {unread_arg_int(uid), unread_arg_int(type),
                              unread_arg_int(delta), unread_arg_str("ID", 2),
                              unread_arg_int(nid)};

    return unread_pipe_cmd(c, NULL, UR_OP_CNT_INCR, 5, a);
}

int unread_pipe_cnt_ack(struct unread *c, uint64_t uid, unsigned type,
                        uint64_t nid)
{
    uint64_t a[3] = {uid, type, nid};

    return uc_pipe_ints(c, UR_OP_CNT_ACK, 3, a);
}

int unread_pipe_cnt_clear(struct unread *c, uint64_t uid, const uint8_t *types,
                          unsigned ntypes)
{
    uint64_t a[UNREAD_CNT_TYPES + 1];
    unsigned i;

    if (ntypes > UNREAD_CNT_TYPES || (ntypes > 0 && types == NULL))
        return uc_set_err(c, UNREAD_EUSAGE, "CNT.CLEAR: %u types, at most %u",
                          ntypes, (unsigned)UNREAD_CNT_TYPES);
    a[0] = uid;
    for (i = 0; i < ntypes; i++)
        a[i + 1] = types[i];
    return uc_pipe_ints(c, UR_OP_CNT_CLEAR, ntypes + 1, a);
}
