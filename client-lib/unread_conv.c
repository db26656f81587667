/*
 * unread_conv.c - libunread's CONV calls (docs/COMMANDS.md, "CONV"): typed
 * synchronous calls and pipeline queue helpers over the connection core
 * (unread_int.h).
 */
#include "unread_int.h"

/* The [unread, total] reply of every CONV mutator (writes: never
 * degraded). */
static int prep_pair(struct uc_core *k, struct uc_call *q, uint16_t op,
                     unsigned argc, const uint64_t *args, uint32_t *unread,
                     uint64_t *total)
{
    int rc = uc_q_ints(k, q, op, argc, args);

    q->decode = uc_dec_pair32;
    q->out[0] = unread;
    q->out[1] = total;
    return rc;
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

#define CONV_PAIR(name, OP)                                                    \
    static int prep_conv_##name(struct uc_core *k, struct uc_call *q,          \
                                uint64_t uid, uint64_t cid, uint64_t arg,      \
                                uint32_t *unread, uint64_t *total)             \
    {                                                                          \
        uint64_t args[3] = {uid, cid, arg};                                    \
                                                                               \
        return prep_pair(k, q, OP, 3, args, unread, total);                    \
    }

CONV_PAIR(incr, UR_OP_CONV_INCR)
UC_FACES(conv_incr,
         (uint64_t uid, uint64_t cid, uint64_t delta, uint32_t *unread,
          uint64_t *total),
         (uid, cid, delta, unread, total))

CONV_PAIR(seq, UR_OP_CONV_SEQ)
UC_FACES(conv_seq,
         (uint64_t uid, uint64_t cid, uint64_t seq, uint32_t *unread,
          uint64_t *total),
         (uid, cid, seq, unread, total))

CONV_PAIR(read, UR_OP_CONV_READ)
UC_FACES(conv_read,
         (uint64_t uid, uint64_t cid, uint64_t seq, uint32_t *unread,
          uint64_t *total),
         (uid, cid, seq, unread, total))

static int prep_conv_read_all(struct uc_core *k, struct uc_call *q,
                              uint64_t uid, uint64_t cid, uint32_t *unread,
                              uint64_t *total)
{
    uint64_t args[2] = {uid, cid};

    return prep_pair(k, q, UR_OP_CONV_READ, 2, args, unread, total);
}
UC_FACES(conv_read_all,
         (uint64_t uid, uint64_t cid, uint32_t *unread, uint64_t *total),
         (uid, cid, unread, total))

CONV_PAIR(markunread, UR_OP_CONV_MARKUNREAD)
UC_FACES(conv_markunread,
         (uint64_t uid, uint64_t cid, uint64_t seq, uint32_t *unread,
          uint64_t *total),
         (uid, cid, seq, unread, total))

CONV_PAIR(recall, UR_OP_CONV_RECALL)
UC_FACES(conv_recall,
         (uint64_t uid, uint64_t cid, uint64_t seq, uint32_t *unread,
          uint64_t *total),
         (uid, cid, seq, unread, total))

static int prep_conv_mute(struct uc_core *k, struct uc_call *q, uint64_t uid,
                          uint64_t cid, int muted, uint32_t *unread,
                          uint64_t *total)
{
    uint64_t args[3] = {uid, cid, muted != 0};

    return prep_pair(k, q, UR_OP_CONV_MUTE, 3, args, unread, total);
}
UC_FACES(conv_mute,
         (uint64_t uid, uint64_t cid, int muted, uint32_t *unread,
          uint64_t *total),
         (uid, cid, muted, unread, total))

static int prep_conv_del(struct uc_core *k, struct uc_call *q, uint64_t uid,
                         uint64_t cid, uint64_t *total)
{
    uint64_t args[2] = {uid, cid};

    return prep_u64(k, q, UR_OP_CONV_DEL, 2, args, total);
}
UC_FACES(conv_del, (uint64_t uid, uint64_t cid, uint64_t *total),
         (uid, cid, total))

static int prep_conv_get(struct uc_core *k, struct uc_call *q, uint64_t uid,
                         uint64_t cid, uint32_t *unread)
{
    uint64_t args[2] = {uid, cid};
    int rc = uc_q_ints(k, q, UR_OP_CONV_GET, 2, args);

    q->decode = uc_dec_u32;
    q->out[0] = unread;
    return rc;
}
UC_FACES(conv_get, (uint64_t uid, uint64_t cid, uint32_t *unread),
         (uid, cid, unread))

static int prep_conv_total(struct uc_core *k, struct uc_call *q, uint64_t uid,
                           uint64_t *total)
{
    return prep_u64(k, q, UR_OP_CONV_TOTAL, 1, &uid, total);
}
UC_FACES(conv_total, (uint64_t uid, uint64_t *total), (uid, total))

/* [id, unread, ...]: ids ascending, unread 1..u32, at most q->n pairs
 * into (struct unread_conv_pair *)out[0] (NULL: none stored; out[2]
 * non-NULL: only the first n stored, more allowed), the count into
 * (unsigned *)out[1]; degraded: none. */
static int dec_pairs(struct uc_core *k, const struct uc_call *q, int rc,
                     struct ur_val_reader *rd)
{
    struct unread_conv_pair *out = q->out[0];
    unsigned *n = q->out[1];
    bool store_some = q->out[2] != NULL;
    uint64_t id, unread, last = 0;
    uint32_t count, i;

    if (rc == UNREAD_DEGRADED) {
        if (n != NULL)
            *n = 0;
        return rc;
    }
    if (!uc_rd_arr(rd, &count) || count % 2 != 0 ||
        (!store_some && count / 2 > q->n))
        return uc_bad_reply(k, q->op);
    for (i = 0; i < count / 2; i++) {
        if (!uc_rd_int(rd, &id) || !uc_rd_int(rd, &unread) || unread == 0 ||
            unread > UINT32_MAX || (i > 0 && id <= last))
            return uc_bad_reply(k, q->op);
        last = id;
        if (out != NULL && i < q->n)
            out[i] = (struct unread_conv_pair){id, (uint32_t)unread};
    }
    if (n != NULL)
        *n = count / 2;
    return 0;
}

static int prep_conv_list(struct uc_core *k, struct uc_call *q, uint64_t uid,
                          unsigned max, struct unread_conv_pair *out,
                          unsigned *n)
{
    uint64_t args[2] = {uid, max};
    int rc = uc_q_ints(k, q, UR_OP_CONV_LIST, 2, args);

    q->decode = dec_pairs;
    q->out[0] = out;
    q->out[1] = n;
    q->n = max;
    return rc;
}
UC_FACES(conv_list,
         (uint64_t uid, unsigned max, struct unread_conv_pair *out,
          unsigned *n),
         (uid, max, out, n))

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

static int prep_conv_mtotal(struct uc_core *k, struct uc_call *q,
                            const uint64_t *uids, size_t n, uint64_t *totals)
{
    return uc_q_uids(k, q, UR_OP_CONV_MTOTAL, uids, n, totals);
}
UC_FACES(conv_mtotal, (const uint64_t *uids, size_t n, uint64_t *totals),
         (uids, n, totals))

static int prep_conv_total_ex(struct uc_core *k, struct uc_call *q,
                              uint64_t uid, uint64_t *total, uint64_t *expired)
{
    return uc_q_count_ex(k, q, UR_OP_CONV_TOTAL, 1, &uid, total, expired);
}
UC_FACES(conv_total_ex, (uint64_t uid, uint64_t *total, uint64_t *expired),
         (uid, total, expired))

/* ---- The chat features ------------------------------------------------- */

/* argv for a CONV write: uid cid [arg] then the options; returns argc. */
static unsigned write_argv(struct unread_arg *argv, uint64_t uid, uint64_t cid,
                           bool has_arg, uint64_t arg,
                           const struct unread_conv_opt *opt)
{
    unsigned n = 0;

    argv[n++] = unread_arg_int(uid);
    argv[n++] = unread_arg_int(cid);
    if (has_arg)
        argv[n++] = unread_arg_int(arg);
    if (opt == NULL)
        return n;
    if (opt->flags & UNREAD_CONV_MENTION)
        argv[n++] = unread_arg_str("MENTION", 7);
    if (opt->flags & UNREAD_CONV_SPARSE)
        argv[n++] = unread_arg_str("SPARSE", 6);
    if (opt->flags & UNREAD_CONV_SOURCE) {
        argv[n++] = unread_arg_str("SOURCE", 6);
        argv[n++] = unread_arg_int(opt->source);
    }
    if (opt->flags & UNREAD_CONV_THREAD) {
        argv[n++] = unread_arg_str("THREAD", 6);
        argv[n++] = unread_arg_int(opt->tid);
    }
    return n;
}

/* A write with options and its [unread, total] reply. */
static int prep_opt(struct uc_core *k, struct uc_call *q, uint16_t op,
                    uint64_t uid, uint64_t cid, bool has_arg, uint64_t arg,
                    const struct unread_conv_opt *opt, uint32_t *unread,
                    uint64_t *total)
{
    struct unread_arg argv[9];
    unsigned argc = write_argv(argv, uid, cid, has_arg, arg, opt);
    int rc = uc_q_args(k, q, op, argc, argv);

    q->decode = uc_dec_pair32;
    q->out[0] = unread;
    q->out[1] = total;
    return rc;
}

#define CONV_OPT(name, OP, HAS)                                                \
    static int prep_conv_##name##_opt(                                         \
        struct uc_core *k, struct uc_call *q, uint64_t uid, uint64_t cid,      \
        uint64_t arg, const struct unread_conv_opt *opt, uint32_t *unread,     \
        uint64_t *total)                                                       \
    {                                                                          \
        return prep_opt(k, q, OP, uid, cid, HAS, arg, opt, unread, total);     \
    }                                                                          \
    UC_FACES(conv_##name##_opt,                                                \
             (uint64_t uid, uint64_t cid, uint64_t arg,                        \
              const struct unread_conv_opt *opt, uint32_t *unread,             \
              uint64_t *total),                                                \
             (uid, cid, arg, opt, unread, total))

CONV_OPT(seq, UR_OP_CONV_SEQ, true)
CONV_OPT(incr, UR_OP_CONV_INCR, true)
CONV_OPT(read, UR_OP_CONV_READ, arg != UNREAD_CONV_ALL)
CONV_OPT(markunread, UR_OP_CONV_MARKUNREAD, true)
CONV_OPT(recall, UR_OP_CONV_RECALL, true)

static int prep_conv_rollup(struct uc_core *k, struct uc_call *q, uint64_t uid,
                            uint64_t cid, int rolled_up, uint32_t *unread,
                            uint64_t *total)
{
    uint64_t args[3] = {uid, cid, rolled_up != 0};

    return prep_pair(k, q, UR_OP_CONV_ROLLUP, 3, args, unread, total);
}
UC_FACES(conv_rollup,
         (uint64_t uid, uint64_t cid, int rolled_up, uint32_t *unread,
          uint64_t *total),
         (uid, cid, rolled_up, unread, total))

bool uc_rd_state(struct ur_val_reader *rd, struct unread_chat_state *st)
{
    uint64_t muted;

    if (!uc_rd_int(rd, &st->max) || !uc_rd_int(rd, &st->read) ||
        !uc_rd_int(rd, &st->unread) || !uc_rd_int(rd, &muted) || muted > 1 ||
        !uc_rd_int(rd, &st->mentions) || !uc_rd_int(rd, &st->first_unread))
        return false;
    st->muted = (int)muted;
    return true;
}

int uc_dec_state(struct uc_core *k, const struct uc_call *q, int rc,
                 struct ur_val_reader *rd)
{
    struct unread_chat_state *st = q->out[0], one;
    uint32_t count;
    uint64_t v;

    if (rc == UNREAD_DEGRADED) {
        v = uc_rd_int(rd, &v) ? v : 0;
        one = (struct unread_chat_state){v, v, v, 0, v, v};
    } else if (!uc_rd_arr(rd, &count) || count != 6 || !uc_rd_state(rd, &one)) {
        return uc_bad_reply(k, q->op);
    }
    if (st != NULL)
        *st = one;
    return rc;
}

static int prep_conv_state(struct uc_core *k, struct uc_call *q, uint64_t uid,
                           uint64_t cid, const uint64_t *tid,
                           struct unread_chat_state *st)
{
    struct unread_arg argv[4] = {unread_arg_int(uid), unread_arg_int(cid),
                                 unread_arg_str("THREAD", 6),
                                 unread_arg_int(tid ? *tid : 0)};
    int rc = uc_q_args(k, q, UR_OP_CONV_STATE, tid ? 4 : 2, argv);

    q->decode = uc_dec_state;
    q->out[0] = st;
    return rc;
}
UC_FACES(conv_state,
         (uint64_t uid, uint64_t cid, const uint64_t *tid,
          struct unread_chat_state *st),
         (uid, cid, tid, st))

static int prep_conv_mentions(struct uc_core *k, struct uc_call *q,
                              uint64_t uid, uint64_t *mentions)
{
    return prep_u64(k, q, UR_OP_CONV_MENTIONS, 1, &uid, mentions);
}
UC_FACES(conv_mentions, (uint64_t uid, uint64_t *mentions), (uid, mentions))

static int prep_conv_readall(struct uc_core *k, struct uc_call *q, uint64_t uid,
                             uint64_t *total)
{
    return prep_u64(k, q, UR_OP_CONV_READALL, 1, &uid, total);
}
UC_FACES(conv_readall, (uint64_t uid, uint64_t *total), (uid, total))

int uc_dec_ints(struct uc_core *k, const struct uc_call *q, int rc,
                struct ur_val_reader *rd)
{
    uint64_t v[UC_CALL_OUTS], d;
    uint32_t count;
    unsigned i;

    if (rc == UNREAD_DEGRADED) {
        d = uc_rd_int(rd, &d) ? d : 0;
        for (i = 0; i < q->n; i++)
            v[i] = d;
    } else {
        if (!uc_rd_arr(rd, &count) || count != q->n)
            return uc_bad_reply(k, q->op);
        for (i = 0; i < q->n; i++)
            if (!uc_rd_int(rd, &v[i]))
                return uc_bad_reply(k, q->op);
    }
    for (i = 0; i < q->n; i++)
        if (q->out[i] != NULL)
            *(uint64_t *)q->out[i] = v[i];
    return rc;
}

static int prep_conv_total_counts(struct uc_core *k, struct uc_call *q,
                                  uint64_t uid, uint64_t *total,
                                  uint64_t *chats, uint64_t *threads)
{
    struct unread_arg argv[3] = {unread_arg_int(uid),
                                 unread_arg_str("CHATS", 5),
                                 unread_arg_str("THREADS", 7)};
    int rc = uc_q_args(k, q, UR_OP_CONV_TOTAL, 3, argv);

    q->decode = uc_dec_ints;
    q->out[0] = total;
    q->out[1] = chats;
    q->out[2] = threads;
    q->n = 3;
    return rc;
}
UC_FACES(conv_total_counts,
         (uint64_t uid, uint64_t *total, uint64_t *chats, uint64_t *threads),
         (uid, total, chats, threads))

static int prep_conv_threads(struct uc_core *k, struct uc_call *q, uint64_t uid,
                             uint64_t cid, struct unread_conv_pair *out,
                             unsigned max, unsigned *n)
{
    uint64_t args[2] = {uid, cid};
    int rc = uc_q_ints(k, q, UR_OP_CONV_THREADS, 2, args);

    q->decode = dec_pairs;
    q->out[0] = out;
    q->out[1] = n;
    q->out[2] = q; /* more than max may come: the first max are stored */
    q->n = max;
    return rc;
}
UC_FACES(conv_threads,
         (uint64_t uid, uint64_t cid, struct unread_conv_pair *out,
          unsigned max, unsigned *n),
         (uid, cid, out, max, n))

/* CONV.SOURCES: [src, n, ...] into (uint32_t *)out[0][8]; degraded: none. */
static int dec_sources(struct uc_core *k, const struct uc_call *q, int rc,
                       struct ur_val_reader *rd)
{
    uint32_t *counts = q->out[0], count;
    uint64_t src, n;

    if (rc == UNREAD_DEGRADED)
        return rc;
    if (!uc_rd_arr(rd, &count) || count % 2 != 0 || count > 16)
        return uc_bad_reply(k, q->op);
    for (uint32_t i = 0; i < count / 2; i++) {
        if (!uc_rd_int(rd, &src) || !uc_rd_int(rd, &n) || src >= 8 || n == 0 ||
            n > UINT32_MAX)
            return uc_bad_reply(k, q->op);
        counts[src] = (uint32_t)n;
    }
    return 0;
}

static int prep_conv_sources(struct uc_core *k, struct uc_call *q, uint64_t uid,
                             uint64_t cid, uint32_t counts[8])
{
    uint64_t args[2] = {uid, cid};
    int rc;

    for (unsigned i = 0; i < 8; i++)
        counts[i] = 0;
    rc = uc_q_ints(k, q, UR_OP_CONV_SOURCES, 2, args);
    q->decode = dec_sources;
    q->out[0] = counts;
    return rc;
}
UC_FACES(conv_sources, (uint64_t uid, uint64_t cid, uint32_t counts[8]),
         (uid, cid, counts))

/* A page: [next, [id, state..., ...]] (degraded: an empty last page). */
static int dec_page(struct uc_core *k, const struct uc_call *q, int rc,
                    struct ur_val_reader *rd)
{
    struct unread_list_entry *out = q->out[0];
    uint32_t outer, inner;

    if (rc == UNREAD_DEGRADED)
        return rc;
    if (!uc_rd_arr(rd, &outer) || outer != 2 ||
        !uc_rd_int(rd, (uint64_t *)q->out[2]) || !uc_rd_arr(rd, &inner) ||
        inner % 7 != 0 || inner / 7 > q->n)
        return uc_bad_reply(k, q->op);
    for (uint32_t i = 0; i < inner / 7; i++)
        if (!uc_rd_int(rd, &out[i].id) || !uc_rd_state(rd, &out[i].st))
            return uc_bad_reply(k, q->op);
    *(unsigned *)q->out[1] = inner / 7;
    return 0;
}

int uc_q_list_page(struct uc_core *k, struct uc_call *q, uint16_t op,
                   uint64_t uid, int order, uint64_t cursor, unsigned count,
                   struct unread_list_entry *out, unsigned *n, uint64_t *next)
{
    struct unread_arg argv[6] = {
        unread_arg_int(uid),        unread_arg_int(count),
        unread_arg_str("STATE", 5), unread_arg_str("CURSOR", 6),
        unread_arg_int(cursor),     unread_arg_str("RECENT", 6)};
    int rc;

    *n = 0;
    *next = 0;
    rc = uc_q_args(k, q, op, order == UNREAD_LIST_RECENT ? 6 : 5, argv);
    q->decode = dec_page;
    q->out[0] = out;
    q->out[1] = n;
    q->out[2] = next;
    q->n = count;
    return rc;
}

static int prep_conv_list_page(struct uc_core *k, struct uc_call *q,
                               uint64_t uid, int order, uint64_t cursor,
                               unsigned count, struct unread_list_entry *out,
                               unsigned *n, uint64_t *next)
{
    return uc_q_list_page(k, q, UR_OP_CONV_LIST, uid, order, cursor, count, out,
                          n, next);
}
UC_FACES(conv_list_page,
         (uint64_t uid, int order, uint64_t cursor, unsigned count,
          struct unread_list_entry *out, unsigned *n, uint64_t *next),
         (uid, order, cursor, count, out, n, next))
