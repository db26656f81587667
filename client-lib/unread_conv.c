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
static int call_opt(struct unread *c, uint16_t op, uint64_t uid, uint64_t cid,
                    bool has_arg, uint64_t arg,
                    const struct unread_conv_opt *opt, uint32_t *unread,
                    uint64_t *total)
{
    struct unread_arg argv[9];
    unsigned argc = write_argv(argv, uid, cid, has_arg, arg, opt);
    struct ur_val_reader rd;
    struct ur_frame_hdr h;
    const char *body;
    uint32_t count;
    uint64_t u, t;
    int rc;

    rc = uc_roundtrip(c, op, argc, argv, &h, &body);
    if (rc != 0)
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    if (!uc_rd_arr(&rd, &count) || count != 2 || !uc_rd_int(&rd, &u) ||
        !uc_rd_int(&rd, &t) || u > UINT32_MAX)
        return uc_shape_err(c, op);
    if (unread != NULL)
        *unread = (uint32_t)u;
    if (total != NULL)
        *total = t;
    return 0;
}

int unread_conv_seq_opt(struct unread *c, uint64_t uid, uint64_t cid,
                        uint64_t seq, const struct unread_conv_opt *opt,
                        uint32_t *unread, uint64_t *total)
{
    return call_opt(c, UR_OP_CONV_SEQ, uid, cid, true, seq, opt, unread, total);
}

int unread_conv_incr_opt(struct unread *c, uint64_t uid, uint64_t cid,
                         uint64_t delta, const struct unread_conv_opt *opt,
                         uint32_t *unread, uint64_t *total)
{
    return call_opt(c, UR_OP_CONV_INCR, uid, cid, true, delta, opt, unread,
                    total);
}

int unread_conv_read_opt(struct unread *c, uint64_t uid, uint64_t cid,
                         uint64_t seq, const struct unread_conv_opt *opt,
                         uint32_t *unread, uint64_t *total)
{
    return call_opt(c, UR_OP_CONV_READ, uid, cid, seq != UNREAD_CONV_ALL, seq,
                    opt, unread, total);
}

int unread_conv_markunread_opt(struct unread *c, uint64_t uid, uint64_t cid,
                               uint64_t seq, const struct unread_conv_opt *opt,
                               uint32_t *unread, uint64_t *total)
{
    return call_opt(c, UR_OP_CONV_MARKUNREAD, uid, cid, true, seq, opt, unread,
                    total);
}

int unread_conv_recall_opt(struct unread *c, uint64_t uid, uint64_t cid,
                           uint64_t seq, const struct unread_conv_opt *opt,
                           uint32_t *unread, uint64_t *total)
{
    return call_opt(c, UR_OP_CONV_RECALL, uid, cid, true, seq, opt, unread,
                    total);
}

int unread_conv_rollup(struct unread *c, uint64_t uid, uint64_t cid,
                       int rolled_up, uint32_t *unread, uint64_t *total)
{
    uint64_t args[3] = {uid, cid, rolled_up != 0};

    return call_pair(c, UR_OP_CONV_ROLLUP, 3, args, unread, total);
}

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

int uc_call_state(struct unread *c, uint16_t op, unsigned argc,
                  const struct unread_arg *argv, struct unread_chat_state *st)
{
    struct ur_val_reader rd;
    struct ur_frame_hdr h;
    const char *body;
    uint32_t count;
    uint64_t v;
    int rc;

    rc = uc_roundtrip(c, op, argc, argv, &h, &body);
    if (rc < 0)
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    if (rc == UNREAD_DEGRADED) {
        v = uc_rd_int(&rd, &v) ? v : 0;
        *st = (struct unread_chat_state){v, v, v, 0, v, v};
        return rc;
    }
    if (rc != 0)
        return rc;
    if (!uc_rd_arr(&rd, &count) || count != 6 || !uc_rd_state(&rd, st))
        return uc_shape_err(c, op);
    return 0;
}

int unread_conv_state(struct unread *c, uint64_t uid, uint64_t cid,
                      const uint64_t *tid, struct unread_chat_state *st)
{
    struct unread_arg argv[4] = {unread_arg_int(uid), unread_arg_int(cid),
                                 unread_arg_str("THREAD", 6),
                                 unread_arg_int(tid ? *tid : 0)};

    return uc_call_state(c, UR_OP_CONV_STATE, tid ? 4 : 2, argv, st);
}

int unread_conv_mentions(struct unread *c, uint64_t uid, uint64_t *mentions)
{
    return uc_call_int(c, UR_OP_CONV_MENTIONS, 1, &uid, mentions);
}

int unread_conv_readall(struct unread *c, uint64_t uid, uint64_t *total)
{
    return uc_call_int(c, UR_OP_CONV_READALL, 1, &uid, total);
}

int unread_conv_total_counts(struct unread *c, uint64_t uid, uint64_t *total,
                             uint64_t *chats, uint64_t *threads)
{
    struct unread_arg argv[3] = {unread_arg_int(uid),
                                 unread_arg_str("CHATS", 5),
                                 unread_arg_str("THREADS", 7)};
    uint64_t *out[3] = {total, chats, threads}, v[3] = {0, 0, 0};
    struct ur_val_reader rd;
    struct ur_frame_hdr h;
    const char *body;
    uint32_t count;
    int rc;

    rc = uc_roundtrip(c, UR_OP_CONV_TOTAL, 3, argv, &h, &body);
    if (rc < 0)
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    if (rc == UNREAD_DEGRADED) {
        v[0] = uc_rd_int(&rd, &v[0]) ? v[0] : 0;
        v[1] = v[2] = v[0];
    } else if (rc != 0) {
        return rc;
    } else if (!uc_rd_arr(&rd, &count) || count != 3 ||
               !uc_rd_int(&rd, &v[0]) || !uc_rd_int(&rd, &v[1]) ||
               !uc_rd_int(&rd, &v[2])) {
        return uc_shape_err(c, UR_OP_CONV_TOTAL);
    }
    for (unsigned i = 0; i < 3; i++)
        if (out[i] != NULL)
            *out[i] = v[i];
    return rc;
}

int unread_conv_threads(struct unread *c, uint64_t uid, uint64_t cid,
                        struct unread_conv_pair *out, unsigned max, unsigned *n)
{
    uint64_t args[2] = {uid, cid}, tid, unread, last = 0;
    struct ur_val_reader rd;
    uint32_t count;
    int rc;

    rc = uc_call_ints(c, UR_OP_CONV_THREADS, 2, args, &rd);
    if (rc == UNREAD_DEGRADED && n != NULL)
        *n = 0;
    if (rc != 0)
        return rc;
    if (!uc_rd_arr(&rd, &count) || count % 2 != 0)
        return uc_shape_err(c, UR_OP_CONV_THREADS);
    for (uint32_t i = 0; i < count / 2; i++) {
        if (!uc_rd_int(&rd, &tid) || !uc_rd_int(&rd, &unread) || unread == 0 ||
            unread > UINT32_MAX || (i > 0 && tid <= last))
            return uc_shape_err(c, UR_OP_CONV_THREADS);
        last = tid;
        if (out != NULL && i < max)
            out[i] = (struct unread_conv_pair){tid, (uint32_t)unread};
    }
    if (n != NULL)
        *n = count / 2;
    return 0;
}

int unread_conv_sources(struct unread *c, uint64_t uid, uint64_t cid,
                        uint32_t counts[8])
{
    uint64_t args[2] = {uid, cid}, src, n;
    struct ur_val_reader rd;
    uint32_t count;
    int rc;

    for (unsigned k = 0; k < 8; k++)
        counts[k] = 0;
    rc = uc_call_ints(c, UR_OP_CONV_SOURCES, 2, args, &rd);
    if (rc != 0)
        return rc; /* UNREAD_DEGRADED: none */
    if (!uc_rd_arr(&rd, &count) || count % 2 != 0 || count > 16)
        return uc_shape_err(c, UR_OP_CONV_SOURCES);
    for (uint32_t i = 0; i < count / 2; i++) {
        if (!uc_rd_int(&rd, &src) || !uc_rd_int(&rd, &n) || src >= 8 ||
            n == 0 || n > UINT32_MAX)
            return uc_shape_err(c, UR_OP_CONV_SOURCES);
        counts[src] = (uint32_t)n;
    }
    return 0;
}

int uc_list_page(struct unread *c, uint16_t op, uint64_t uid, int order,
                 uint64_t cursor, unsigned count, struct unread_list_entry *out,
                 unsigned *n, uint64_t *next)
{
    struct unread_arg argv[6] = {
        unread_arg_int(uid),        unread_arg_int(count),
        unread_arg_str("STATE", 5), unread_arg_str("CURSOR", 6),
        unread_arg_int(cursor),     unread_arg_str("RECENT", 6)};
    struct ur_val_reader rd;
    struct ur_frame_hdr h;
    const char *body;
    uint32_t outer, inner;
    int rc;

    *n = 0;
    *next = 0;
    rc = uc_roundtrip(c, op, order == UNREAD_LIST_RECENT ? 6 : 5, argv, &h,
                      &body);
    if (rc != 0)
        return rc; /* UNREAD_DEGRADED included: an empty last page */
    ur_val_reader_init(&rd, body, h.len);
    if (!uc_rd_arr(&rd, &outer) || outer != 2 || !uc_rd_int(&rd, next) ||
        !uc_rd_arr(&rd, &inner) || inner % 7 != 0 || inner / 7 > count)
        return uc_shape_err(c, op);
    for (uint32_t i = 0; i < inner / 7; i++)
        if (!uc_rd_int(&rd, &out[i].id) || !uc_rd_state(&rd, &out[i].st))
            return uc_shape_err(c, op);
    *n = inner / 7;
    return 0;
}

int unread_conv_list_page(struct unread *c, uint64_t uid, int order,
                          uint64_t cursor, unsigned count,
                          struct unread_list_entry *out, unsigned *n,
                          uint64_t *next)
{
    return uc_list_page(c, UR_OP_CONV_LIST, uid, order, cursor, count, out, n,
                        next);
}
