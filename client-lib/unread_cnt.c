/*
 * unread_cnt.c - libunread's CNT calls (docs/COMMANDS.md, "CNT") and PING:
 * each typed call an encode/decode pair (prep_<name>) from which UC_FACES
 * makes its synchronous and asynchronous functions (unread_int.h), and
 * the pipeline queue helpers.
 */
#include <string.h>

#include "unread_int.h"

static int dec_pong(struct uc_core *k, const struct uc_call *q, int rc,
                    struct ur_val_reader *rd)
{
    struct ur_val v;

    if (rc != 0)
        return rc;
    if (!ur_val_next(rd, &v) || v.kind != UR_VAL_STATUS || v.len != 4 ||
        memcmp(v.str, "PONG", 4) != 0)
        return uc_bad_reply(k, q->op);
    return 0;
}

static int prep_ping(struct uc_core *k, struct uc_call *q, int unused)
{
    (void)unused;
    int rc = uc_q_ints(k, q, UR_OP_PING, 0, NULL);

    q->decode = dec_pong;
    return rc;
}

int unread_ping(struct unread *c)
{
    struct uc_call q;
    int rc = prep_ping((struct uc_core *)(void *)c, &q, 0);

    return rc != 0 ? rc : uc_sync(c, &q);
}

int unread_async_ping(struct unread_async *a, unread_async_cb *cb, void *priv)
{
    struct uc_call q;
    int rc = prep_ping(uc_async_core(a), &q, 0);

    return rc != 0 ? rc : uc_async(a, &q, cb, priv);
}

/* CNT.INCR, DECR, SET uid type n: [value, total] (writes: never
 * degraded). */
static int prep_pair(struct uc_core *k, struct uc_call *q, uint16_t op,
                     uint64_t uid, unsigned type, uint32_t n, uint32_t *value,
                     uint64_t *total)
{
    uint64_t args[3] = {uid, type, n};
    int rc = uc_q_ints(k, q, op, 3, args);

    q->decode = uc_dec_pair32;
    q->out[0] = value;
    q->out[1] = total;
    return rc;
}

static int prep_cnt_incr(struct uc_core *k, struct uc_call *q, uint64_t uid,
                         unsigned type, uint32_t delta, uint32_t *value,
                         uint64_t *total)
{
    return prep_pair(k, q, UR_OP_CNT_INCR, uid, type, delta, value, total);
}
UC_FACES(cnt_incr,
         (uint64_t uid, unsigned type, uint32_t delta, uint32_t *value,
          uint64_t *total),
         (uid, type, delta, value, total))

static int prep_cnt_decr(struct uc_core *k, struct uc_call *q, uint64_t uid,
                         unsigned type, uint32_t delta, uint32_t *value,
                         uint64_t *total)
{
    return prep_pair(k, q, UR_OP_CNT_DECR, uid, type, delta, value, total);
}
UC_FACES(cnt_decr,
         (uint64_t uid, unsigned type, uint32_t delta, uint32_t *value,
          uint64_t *total),
         (uid, type, delta, value, total))

static int prep_cnt_set(struct uc_core *k, struct uc_call *q, uint64_t uid,
                        unsigned type, uint32_t set_to, uint32_t *value,
                        uint64_t *total)
{
    return prep_pair(k, q, UR_OP_CNT_SET, uid, type, set_to, value, total);
}
UC_FACES(cnt_set,
         (uint64_t uid, unsigned type, uint32_t set_to, uint32_t *value,
          uint64_t *total),
         (uid, type, set_to, value, total))

static int prep_cnt_get(struct uc_core *k, struct uc_call *q, uint64_t uid,
                        unsigned type, uint32_t *value)
{
    uint64_t args[2] = {uid, type};
    int rc = uc_q_ints(k, q, UR_OP_CNT_GET, 2, args);

    q->decode = uc_dec_u32;
    q->out[0] = value;
    return rc;
}
UC_FACES(cnt_get, (uint64_t uid, unsigned type, uint32_t *value),
         (uid, type, value))

/* CNT.GETALL: [type, value, ...], types ascending, below 64; degraded:
 * no pair. */
static int dec_getall(struct uc_core *k, const struct uc_call *q, int rc,
                      struct ur_val_reader *rd)
{
    struct unread_cnt_pair *out = q->out[0];
    unsigned *n = q->out[1];
    uint64_t type, value;
    uint32_t count, i;
    int last = -1;

    if (rc == UNREAD_DEGRADED) {
        if (n != NULL)
            *n = 0;
        return rc;
    }
    if (!uc_rd_arr(rd, &count) || count % 2 != 0 ||
        count / 2 > UNREAD_CNT_TYPES)
        return uc_bad_reply(k, q->op);
    for (i = 0; i < count / 2; i++) {
        if (!uc_rd_int(rd, &type) || !uc_rd_int(rd, &value) ||
            type >= UNREAD_CNT_TYPES || (int)type <= last || value > UINT32_MAX)
            return uc_bad_reply(k, q->op);
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

static int prep_cnt_getall(struct uc_core *k, struct uc_call *q, uint64_t uid,
                           struct unread_cnt_pair *out, unsigned *n)
{
    int rc = uc_q_ints(k, q, UR_OP_CNT_GETALL, 1, &uid);

    q->decode = dec_getall;
    q->out[0] = out;
    q->out[1] = n;
    return rc;
}
UC_FACES(cnt_getall, (uint64_t uid, struct unread_cnt_pair *out, unsigned *n),
         (uid, out, n))

static int prep_cnt_total(struct uc_core *k, struct uc_call *q, uint64_t uid,
                          uint64_t *total)
{
    int rc = uc_q_ints(k, q, UR_OP_CNT_TOTAL, 1, &uid);

    q->decode = uc_dec_u64;
    q->out[0] = total;
    return rc;
}
UC_FACES(cnt_total, (uint64_t uid, uint64_t *total), (uid, total))

static int prep_cnt_clear(struct uc_core *k, struct uc_call *q, uint64_t uid,
                          const uint8_t *types, unsigned ntypes,
                          uint64_t *total)
{
    uint64_t args[UNREAD_CNT_TYPES + 1];
    unsigned i;
    int rc;

    if (ntypes > UNREAD_CNT_TYPES || (ntypes > 0 && types == NULL))
        return uc_err(k, UNREAD_EUSAGE, "CNT.CLEAR: %u types, at most %u",
                      ntypes, (unsigned)UNREAD_CNT_TYPES);
    args[0] = uid;
    for (i = 0; i < ntypes; i++)
        args[i + 1] = types[i];
    rc = uc_q_ints(k, q, UR_OP_CNT_CLEAR, ntypes + 1, args);
    q->decode = uc_dec_u64;
    q->out[0] = total;
    return rc;
}
UC_FACES(cnt_clear,
         (uint64_t uid, const uint8_t *types, unsigned ntypes, uint64_t *total),
         (uid, types, ntypes, total))

/* CNT.INCR uid type delta ID nid, CNT.ACK uid type nid: [value, total]
 * (writes: never degraded). */
static int prep_cnt_incr_id(struct uc_core *k, struct uc_call *q, uint64_t uid,
                            unsigned type, uint32_t delta, uint64_t nid,
                            uint32_t *value, uint64_t *total)
{
    struct unread_arg argv[5] = {unread_arg_int(uid), unread_arg_int(type),
                                 unread_arg_int(delta), unread_arg_str("ID", 2),
                                 unread_arg_int(nid)};
    int rc = uc_q_args(k, q, UR_OP_CNT_INCR, 5, argv);

    q->decode = uc_dec_pair32;
    q->out[0] = value;
    q->out[1] = total;
    return rc;
}
UC_FACES(cnt_incr_id,
         (uint64_t uid, unsigned type, uint32_t delta, uint64_t nid,
          uint32_t *value, uint64_t *total),
         (uid, type, delta, nid, value, total))

static int prep_cnt_ack(struct uc_core *k, struct uc_call *q, uint64_t uid,
                        unsigned type, uint64_t nid, uint32_t *value,
                        uint64_t *total)
{
    uint64_t args[3] = {uid, type, nid};
    int rc = uc_q_ints(k, q, UR_OP_CNT_ACK, 3, args);

    q->decode = uc_dec_pair32;
    q->out[0] = value;
    q->out[1] = total;
    return rc;
}
UC_FACES(cnt_ack,
         (uint64_t uid, unsigned type, uint64_t nid, uint32_t *value,
          uint64_t *total),
         (uid, type, nid, value, total))

static int prep_cnt_mtotal(struct uc_core *k, struct uc_call *q,
                           const uint64_t *uids, size_t n, uint64_t *totals)
{
    return uc_q_uids(k, q, UR_OP_CNT_MTOTAL, uids, n, totals);
}
UC_FACES(cnt_mtotal, (const uint64_t *uids, size_t n, uint64_t *totals),
         (uids, n, totals))

static int prep_cnt_total_ex(struct uc_core *k, struct uc_call *q, uint64_t uid,
                             uint64_t *total, uint64_t *expired)
{
    return uc_q_count_ex(k, q, UR_OP_CNT_TOTAL, 1, &uid, total, expired);
}
UC_FACES(cnt_total_ex, (uint64_t uid, uint64_t *total, uint64_t *expired),
         (uid, total, expired))

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
