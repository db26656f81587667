/*
 * unread_feed.c - libunread's FEED calls (docs/COMMANDS.md, "FEED"): typed
 * synchronous calls and pipeline queue helpers over the connection core
 * (unread_int.h).
 */
#include "unread_int.h"

/* POST and UNPOST: author n -> the count after, at most 4294967295. */
static int prep_count(struct uc_core *k, struct uc_call *q, uint16_t op,
                      uint64_t author, uint32_t n, uint32_t *count)
{
    uint64_t args[2] = {author, n};
    int rc = uc_q_ints(k, q, op, 2, args);

    q->decode = uc_dec_u32;
    q->out[0] = count;
    return rc;
}

/* FOLLOW and UNFOLLOW: uid author -> 1 or 0. */
static int prep_flag(struct uc_core *k, struct uc_call *q, uint16_t op,
                     uint64_t uid, uint64_t author, int *flag)
{
    uint64_t args[2] = {uid, author};
    int rc = uc_q_ints(k, q, op, 2, args);

    q->decode = uc_dec_flag;
    q->out[0] = flag;
    return rc;
}

static int prep_feed_post(struct uc_core *k, struct uc_call *q, uint64_t author,
                          uint32_t n, uint32_t *count)
{
    return prep_count(k, q, UR_OP_FEED_POST, author, n, count);
}
UC_FACES(feed_post, (uint64_t author, uint32_t n, uint32_t *count),
         (author, n, count))

static int prep_feed_unpost(struct uc_core *k, struct uc_call *q,
                            uint64_t author, uint32_t n, uint32_t *count)
{
    return prep_count(k, q, UR_OP_FEED_UNPOST, author, n, count);
}
UC_FACES(feed_unpost, (uint64_t author, uint32_t n, uint32_t *count),
         (author, n, count))

static int prep_feed_follow(struct uc_core *k, struct uc_call *q, uint64_t uid,
                            uint64_t author, int *added)
{
    return prep_flag(k, q, UR_OP_FEED_FOLLOW, uid, author, added);
}
UC_FACES(feed_follow, (uint64_t uid, uint64_t author, int *added),
         (uid, author, added))

static int prep_feed_unfollow(struct uc_core *k, struct uc_call *q,
                              uint64_t uid, uint64_t author, int *removed)
{
    return prep_flag(k, q, UR_OP_FEED_UNFOLLOW, uid, author, removed);
}
UC_FACES(feed_unfollow, (uint64_t uid, uint64_t author, int *removed),
         (uid, author, removed))

static int prep_feed_unread(struct uc_core *k, struct uc_call *q, uint64_t uid,
                            uint64_t *unread)
{
    int rc = uc_q_ints(k, q, UR_OP_FEED_UNREAD, 1, &uid);

    q->decode = uc_dec_u64;
    q->out[0] = unread;
    return rc;
}
UC_FACES(feed_unread, (uint64_t uid, uint64_t *unread), (uid, unread))

static int prep_feed_reset(struct uc_core *k, struct uc_call *q, uint64_t uid)
{
    int rc = uc_q_ints(k, q, UR_OP_FEED_RESET, 1, &uid);

    q->decode = uc_dec_zero;
    return rc;
}
UC_FACES(feed_reset, (uint64_t uid), (uid))

static int prep_feed_follow_many(struct uc_core *k, struct uc_call *q,
                                 uint64_t uid, const uint64_t *authors,
                                 size_t n, uint64_t *added)
{
    return uc_q_int_list(k, q, UR_OP_FEED_FOLLOW, uid, authors, n, added);
}
UC_FACES(feed_follow_many,
         (uint64_t uid, const uint64_t *authors, size_t n, uint64_t *added),
         (uid, authors, n, added))

static int prep_feed_unread_ex(struct uc_core *k, struct uc_call *q,
                               uint64_t uid, uint64_t *unread,
                               uint64_t *expired)
{
    return uc_q_count_ex(k, q, UR_OP_FEED_UNREAD, 1, &uid, unread, expired);
}
UC_FACES(feed_unread_ex, (uint64_t uid, uint64_t *unread, uint64_t *expired),
         (uid, unread, expired))

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
