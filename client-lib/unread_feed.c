/*
 * unread_feed.c - libunread's FEED calls (docs/COMMANDS.md, "FEED"): typed
 * synchronous calls and pipeline queue helpers over the connection core
 * (unread_int.h).
 */
#include "unread_int.h"

/* POST and UNPOST: author n -> the count after, at most 4294967295. */
static int call_count(struct unread *c, uint16_t op, uint64_t author,
                      uint32_t n, uint32_t *count)
{
    uint64_t args[2] = {author, n}, v;
    int rc;

    rc = uc_call_int(c, op, 2, args, &v);
    if (rc != 0)
        return rc;
    if (v > UINT32_MAX)
        return uc_shape_err(c, op);
    if (count != NULL)
        *count = (uint32_t)v;
    return 0;
}

/* FOLLOW and UNFOLLOW: uid author -> 1 or 0. */
static int call_flag(struct unread *c, uint16_t op, uint64_t uid,
                     uint64_t author, int *flag)
{
    uint64_t args[2] = {uid, author}, v;
    int rc;

    rc = uc_call_int(c, op, 2, args, &v);
    if (rc != 0)
        return rc;
    if (v > 1)
        return uc_shape_err(c, op);
    if (flag != NULL)
        *flag = (int)v;
    return 0;
}

static int prep_feed_post(struct uc_core *k, struct uc_call *q, uint64_t author,
                          uint32_t n, uint32_t *count)
{
    uint64_t args[2] = {author, n};
    int rc = uc_q_ints(k, q, UR_OP_FEED_POST, 2, args);

    q->decode = uc_dec_u32;
    q->out[0] = count;
    return rc;
}
UC_FACES(feed_post, (uint64_t author, uint32_t n, uint32_t *count),
         (author, n, count))

int unread_feed_unpost(struct unread *c, uint64_t author, uint32_t n,
                       uint32_t *count)
{
    return call_count(c, UR_OP_FEED_UNPOST, author, n, count);
}

int unread_feed_follow(struct unread *c, uint64_t uid, uint64_t author,
                       int *added)
{
    return call_flag(c, UR_OP_FEED_FOLLOW, uid, author, added);
}

int unread_feed_unfollow(struct unread *c, uint64_t uid, uint64_t author,
                         int *removed)
{
    return call_flag(c, UR_OP_FEED_UNFOLLOW, uid, author, removed);
}

static int prep_feed_unread(struct uc_core *k, struct uc_call *q, uint64_t uid,
                            uint64_t *unread)
{
    int rc = uc_q_ints(k, q, UR_OP_FEED_UNREAD, 1, &uid);

    q->decode = uc_dec_u64;
    q->out[0] = unread;
    return rc;
}
UC_FACES(feed_unread, (uint64_t uid, uint64_t *unread), (uid, unread))

int unread_feed_reset(struct unread *c, uint64_t uid)
{
    uint64_t zero;
    int rc;

    rc = uc_call_int(c, UR_OP_FEED_RESET, 1, &uid, &zero);
    if (rc == 0 && zero != 0)
        return uc_shape_err(c, UR_OP_FEED_RESET);
    return rc;
}

int unread_pipe_feed_post(struct unread *c, uint64_t author, uint32_t n)
{
    uint64_t a[2] = {author, n};

    return uc_pipe_ints(c, UR_OP_FEED_POST, 2, a);
}

int unread_pipe_feed_unpost(struct unread *c, uint64_t author, uint32_t n)
{
    uint64_t a[2] = {author, n};

    return uc_pipe_ints(c, UR_OP_FEED_UNPOST, 2, a);
}

int unread_pipe_feed_follow(struct unread *c, uint64_t uid, uint64_t author)
{
    uint64_t a[2] = {uid, author};

    return uc_pipe_ints(c, UR_OP_FEED_FOLLOW, 2, a);
}

int unread_pipe_feed_unfollow(struct unread *c, uint64_t uid, uint64_t author)
{
    uint64_t a[2] = {uid, author};

    return uc_pipe_ints(c, UR_OP_FEED_UNFOLLOW, 2, a);
}

int unread_pipe_feed_unread(struct unread *c, uint64_t uid)
{
    return uc_pipe_ints(c, UR_OP_FEED_UNREAD, 1, &uid);
}

int unread_pipe_feed_reset(struct unread *c, uint64_t uid)
{
    return uc_pipe_ints(c, UR_OP_FEED_RESET, 1, &uid);
}

int unread_feed_follow_many(struct unread *c, uint64_t uid,
                            const uint64_t *authors, size_t n, uint64_t *added)
{
    return uc_call_int_list(c, UR_OP_FEED_FOLLOW, uid, authors, n, added);
}

int unread_feed_unread_ex(struct unread *c, uint64_t uid, uint64_t *unread,
                          uint64_t *expired)
{
    return uc_call_count_ex(c, UR_OP_FEED_UNREAD, 1, &uid, unread, expired);
}
