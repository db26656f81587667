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

/* One INT, a u64 (decode: uc_dec_u64). */
static int prep_u64(struct uc_core *k, struct uc_call *q, uint16_t op,
                    unsigned argc, const uint64_t *args, uint64_t *out)
{
    int rc = uc_q_ints(k, q, op, argc, args);

    q->decode = uc_dec_u64;
    q->out[0] = out;
    return rc;
}

static int prep_grp_post(struct uc_core *k, struct uc_call *q, uint64_t gid,
                         uint64_t ts, uint64_t *seq)
{
    uint64_t args[2] = {gid, ts};

    return prep_u64(k, q, UR_OP_GRP_POST, ts_argc(2, ts), args, seq);
}
UC_FACES(grp_post, (uint64_t gid, uint64_t ts, uint64_t *seq), (gid, ts, seq))

static int prep_grp_join(struct uc_core *k, struct uc_call *q, uint64_t uid,
                         uint64_t gid, uint64_t *unread)
{
    uint64_t args[2] = {uid, gid};

    return prep_u64(k, q, UR_OP_GRP_JOIN, 2, args, unread);
}
UC_FACES(grp_join, (uint64_t uid, uint64_t gid, uint64_t *unread),
         (uid, gid, unread))

static int prep_grp_leave(struct uc_core *k, struct uc_call *q, uint64_t uid,
                          uint64_t gid, int *was_member)
{
    uint64_t args[2] = {uid, gid};
    int rc = uc_q_ints(k, q, UR_OP_GRP_LEAVE, 2, args);

    q->decode = uc_dec_flag;
    q->out[0] = was_member;
    return rc;
}
UC_FACES(grp_leave, (uint64_t uid, uint64_t gid, int *was_member),
         (uid, gid, was_member))

static int prep_grp_seen(struct uc_core *k, struct uc_call *q, uint64_t uid,
                         uint64_t gid, uint64_t ts, uint64_t *unread)
{
    uint64_t args[3] = {uid, gid, ts};

    return prep_u64(k, q, UR_OP_GRP_SEEN, ts_argc(3, ts), args, unread);
}
UC_FACES(grp_seen, (uint64_t uid, uint64_t gid, uint64_t ts, uint64_t *unread),
         (uid, gid, ts, unread))

static int prep_grp_unread(struct uc_core *k, struct uc_call *q, uint64_t uid,
                           uint64_t gid, uint64_t *unread)
{
    uint64_t args[2] = {uid, gid};

    return prep_u64(k, q, UR_OP_GRP_UNREAD, 2, args, unread);
}
UC_FACES(grp_unread, (uint64_t uid, uint64_t gid, uint64_t *unread),
         (uid, gid, unread))

static int prep_grp_total(struct uc_core *k, struct uc_call *q, uint64_t uid,
                          uint64_t *total)
{
    return prep_u64(k, q, UR_OP_GRP_TOTAL, 1, &uid, total);
}
UC_FACES(grp_total, (uint64_t uid, uint64_t *total), (uid, total))

/* GRP.LIST: [gid, unread, ...], gids ascending, unread >= 1; the first
 * q->n into (struct unread_grp_item *)out[0], the count into (size_t *)
 * out[1]; degraded: none. */
static int dec_list(struct uc_core *k, const struct uc_call *q, int rc,
                    struct ur_val_reader *rd)
{
    struct unread_grp_item *out = q->out[0];
    size_t *n = q->out[1];
    uint64_t gid, unread, last = 0;
    uint32_t count;

    if (rc == UNREAD_DEGRADED) {
        if (n != NULL)
            *n = 0;
        return rc;
    }
    if (!uc_rd_arr(rd, &count) || count % 2 != 0)
        return uc_bad_reply(k, q->op);
    for (uint32_t i = 0; i < count / 2; i++) {
        if (!uc_rd_int(rd, &gid) || !uc_rd_int(rd, &unread) || unread == 0 ||
            (i > 0 && gid <= last))
            return uc_bad_reply(k, q->op);
        last = gid;
        if (out != NULL && i < q->n)
            out[i] = (struct unread_grp_item){gid, unread};
    }
    if (n != NULL)
        *n = count / 2;
    return 0;
}

static int prep_grp_list(struct uc_core *k, struct uc_call *q, uint64_t uid,
                         struct unread_grp_item *out, size_t max, size_t *n)
{
    int rc = uc_q_ints(k, q, UR_OP_GRP_LIST, 1, &uid);

    q->decode = dec_list;
    q->out[0] = out;
    q->out[1] = n;
    q->n = max;
    return rc;
}
UC_FACES(grp_list,
         (uint64_t uid, struct unread_grp_item *out, size_t max, size_t *n),
         (uid, out, max, n))

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

static int prep_grp_join_many(struct uc_core *k, struct uc_call *q,
                              uint64_t uid, const uint64_t *gids, size_t n,
                              uint64_t *unread)
{
    return uc_q_int_list(k, q, UR_OP_GRP_JOIN, uid, gids, n, unread);
}
UC_FACES(grp_join_many,
         (uint64_t uid, const uint64_t *gids, size_t n, uint64_t *unread),
         (uid, gids, n, unread))

static int prep_grp_unread_ex(struct uc_core *k, struct uc_call *q,
                              uint64_t uid, uint64_t gid, uint64_t *unread,
                              uint64_t *expired)
{
    uint64_t args[2] = {uid, gid};

    return uc_q_count_ex(k, q, UR_OP_GRP_UNREAD, 2, args, unread, expired);
}
UC_FACES(grp_unread_ex,
         (uint64_t uid, uint64_t gid, uint64_t *unread, uint64_t *expired),
         (uid, gid, unread, expired))

static int prep_grp_total_ex(struct uc_core *k, struct uc_call *q, uint64_t uid,
                             uint64_t *total, uint64_t *expired)
{
    return uc_q_count_ex(k, q, UR_OP_GRP_TOTAL, 1, &uid, total, expired);
}
UC_FACES(grp_total_ex, (uint64_t uid, uint64_t *total, uint64_t *expired),
         (uid, total, expired))

/* ---- The chat features ------------------------------------------------- */

static int prep_grp_post_mention(struct uc_core *k, struct uc_call *q,
                                 uint64_t gid, uint64_t ts,
                                 const uint64_t *uids, unsigned n,
                                 uint64_t *seq)
{
    unsigned argc = 0;
    int rc;

    if (n > 0 && uids == NULL)
        return uc_err(k, UNREAD_EUSAGE, "GRP.POST MENTION: %u uids, none given",
                      n);
    rc = uc_q_alloc(k, q, UR_OP_GRP_POST,
                    1 + (ts != UNREAD_GRP_NOW) + (n > 0) + n);
    if (rc != 0)
        return rc;
    q->argv[argc++] = unread_arg_int(gid);
    if (ts != UNREAD_GRP_NOW)
        q->argv[argc++] = unread_arg_int(ts);
    if (n > 0)
        q->argv[argc++] = unread_arg_str("MENTION", 7);
    for (unsigned i = 0; i < n; i++)
        q->argv[argc++] = unread_arg_int(uids[i]);
    q->decode = uc_dec_u64;
    q->out[0] = seq;
    return 0;
}
UC_FACES(grp_post_mention,
         (uint64_t gid, uint64_t ts, const uint64_t *uids, unsigned n,
          uint64_t *seq),
         (gid, ts, uids, n, seq))

static int prep_grp_state(struct uc_core *k, struct uc_call *q, uint64_t uid,
                          uint64_t gid, struct unread_chat_state *st)
{
    uint64_t args[2] = {uid, gid};
    int rc = uc_q_ints(k, q, UR_OP_GRP_STATE, 2, args);

    q->decode = uc_dec_state;
    q->out[0] = st;
    return rc;
}
UC_FACES(grp_state, (uint64_t uid, uint64_t gid, struct unread_chat_state *st),
         (uid, gid, st))

static int prep_grp_mute(struct uc_core *k, struct uc_call *q, uint64_t uid,
                         uint64_t gid, int muted, uint64_t *unread,
                         uint64_t *total)
{
    uint64_t args[3] = {uid, gid, muted != 0};
    int rc = uc_q_ints(k, q, UR_OP_GRP_MUTE, 3, args);

    q->decode = uc_dec_ints; /* a write: never degraded */
    q->out[0] = unread;
    q->out[1] = total;
    q->n = 2;
    return rc;
}
UC_FACES(grp_mute,
         (uint64_t uid, uint64_t gid, int muted, uint64_t *unread,
          uint64_t *total),
         (uid, gid, muted, unread, total))

static int prep_grp_markunread(struct uc_core *k, struct uc_call *q,
                               uint64_t uid, uint64_t gid, uint64_t seq,
                               uint64_t *unread)
{
    uint64_t args[3] = {uid, gid, seq};

    return prep_u64(k, q, UR_OP_GRP_MARKUNREAD, 3, args, unread);
}
UC_FACES(grp_markunread,
         (uint64_t uid, uint64_t gid, uint64_t seq, uint64_t *unread),
         (uid, gid, seq, unread))

static int prep_grp_recall(struct uc_core *k, struct uc_call *q, uint64_t gid,
                           uint64_t seq, int *newly)
{
    uint64_t args[2] = {gid, seq};
    int rc = uc_q_ints(k, q, UR_OP_GRP_RECALL, 2, args);

    q->decode = uc_dec_flag;
    q->out[0] = newly;
    return rc;
}
UC_FACES(grp_recall, (uint64_t gid, uint64_t seq, int *newly),
         (gid, seq, newly))

static int prep_grp_seenall(struct uc_core *k, struct uc_call *q, uint64_t uid,
                            uint64_t *total)
{
    return prep_u64(k, q, UR_OP_GRP_SEENALL, 1, &uid, total);
}
UC_FACES(grp_seenall, (uint64_t uid, uint64_t *total), (uid, total))

static int prep_grp_mentions(struct uc_core *k, struct uc_call *q, uint64_t uid,
                             uint64_t *mentions)
{
    return prep_u64(k, q, UR_OP_GRP_MENTIONS, 1, &uid, mentions);
}
UC_FACES(grp_mentions, (uint64_t uid, uint64_t *mentions), (uid, mentions))

static int prep_grp_total_chats(struct uc_core *k, struct uc_call *q,
                                uint64_t uid, uint64_t *total, uint64_t *chats)
{
    struct unread_arg argv[2] = {unread_arg_int(uid),
                                 unread_arg_str("CHATS", 5)};
    int rc = uc_q_args(k, q, UR_OP_GRP_TOTAL, 2, argv);

    q->decode = uc_dec_ints;
    q->out[0] = total;
    q->out[1] = chats;
    q->n = 2;
    return rc;
}
UC_FACES(grp_total_chats, (uint64_t uid, uint64_t *total, uint64_t *chats),
         (uid, total, chats))

static int prep_grp_list_page(struct uc_core *k, struct uc_call *q,
                              uint64_t uid, int order, uint64_t cursor,
                              unsigned count, struct unread_list_entry *out,
                              unsigned *n, uint64_t *next)
{
    return uc_q_list_page(k, q, UR_OP_GRP_LIST, uid, order, cursor, count, out,
                          n, next);
}
UC_FACES(grp_list_page,
         (uint64_t uid, int order, uint64_t cursor, unsigned count,
          struct unread_list_entry *out, unsigned *n, uint64_t *next),
         (uid, order, cursor, count, out, n, next))
