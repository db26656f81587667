/*
 * bench_feed.c - FEED workloads ("N new posts": a post count per author,
 * per user a snapshot of each followee's count).
 *
 * A key is one follow edge: user k / n follows author author_of(user,
 * k % n), one of FEED_AUTHORS authors, with n = FEED_FOLLOWS or --per-user
 * (1 for bench-memory's single-entry shapes), so `-r` counts what `make
 * bench-memory` divides by (1,000,000 keys: 5,000 users following 200
 * authors each). The load step follows the key's author;
 * no author has posted yet, so every snapshot is 0 on both servers
 * whatever the order of the steps, and feed-unread then walks all 200
 * followees of a user on every call (no early stop: the worst case) until
 * feed-post runs.
 *
 * Redis model: a hash `feed:count` (author -> posts) and a hash
 * `feed:snap:<uid>` (author -> count when followed or last reset) per
 * user. unread is a sum over the user's followees with an early stop past
 * the cap, and a follow reads the author's count: scripts on Redis, the
 * functions of library `feed` below (FCALL), each atomic as on unreadd.
 */
#include "bench_workload.h"
#include "ops.h"

#define FEED_FOLLOWS 200   /* follows per user (keys per user) */
#define FEED_AUTHORS 10000 /* authors followed by the preload */
#define FEED_CAP "99"      /* unreadd's default unread-cap */
#define FEED_MAX "5000"    /* unreadd's default feed-max-follows */
#define SNAP "feed:snap:"
#define COUNT "feed:count"

_Static_assert(FEED_FOLLOWS <= FEED_AUTHORS &&
                   BENCH_PER_USER_MAX <= FEED_AUTHORS,
               "a user's followees distinct");

static const char feed_library[] =
    "#!lua name=feed\n"
    "-- feed:count: author -> posts; feed:snap:<uid>: author -> the count\n"
    "-- when followed or last reset.\n"
    "redis.register_function('feed_unread', function(keys, args)\n"
    "  local cap = tonumber(args[1])\n"
    "  local snap = redis.call('HGETALL', keys[1])\n"
    "  if #snap == 0 then return 0 end\n"
    "  local authors = {}\n"
    "  for i = 1, #snap, 2 do authors[#authors + 1] = snap[i] end\n"
    "  local counts = redis.call('HMGET', keys[2], unpack(authors))\n"
    "  local sum = 0\n"
    "  for i = 1, #authors do\n"
    "    local d = (tonumber(counts[i]) or 0) - tonumber(snap[2 * i])\n"
    "    if d > 0 then\n"
    "      sum = sum + d\n"
    "      if sum > cap then return cap + 1 end\n"
    "    end\n"
    "  end\n"
    "  return sum\n"
    "end)\n"
    "redis.register_function('feed_follow', function(keys, args)\n"
    "  if redis.call('HEXISTS', keys[1], args[1]) == 1 then return 0 end\n"
    "  if redis.call('HLEN', keys[1]) >= tonumber(args[2]) then\n"
    "    return redis.error_reply('LIMIT feed-max-follows')\n"
    "  end\n"
    "  redis.call('HSET', keys[1], args[1],\n"
    "             redis.call('HGET', keys[2], args[1]) or 0)\n"
    "  return 1\n"
    "end)\n";

/* Follow edges per user (keys per user). */
static uint64_t per_user(const struct bench_ctx *x)
{
    return x->per_user ? x->per_user : FEED_FOLLOWS;
}

/* Followee j (0..per_user-1) of a user: distinct for each j. */
static uint64_t author_of(uint64_t uid, uint64_t j)
{
    return (uid * 7919 + j) % FEED_AUTHORS;
}

/* FEED.FOLLOW uid author  |  FCALL feed_follow 2 feed:snap:<uid> feed:count
 * author max */
static void follow(const struct bench_ctx *x, struct bench_cmd *c, uint64_t uid,
                   uint64_t author)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_FEED_FOLLOW, BX_INT);
        bench_arg_int(c, uid);
        bench_arg_int(c, author);
        return;
    }
    bench_cmd_fcall(c, "feed_follow", 2, BX_INT);
    bench_arg_key(c, SNAP, uid);
    bench_arg_str(c, COUNT);
    bench_arg_int(c, author);
    bench_arg_str(c, FEED_MAX);
}

/* FEED.UNREAD uid  |  FCALL feed_unread 2 feed:snap:<uid> feed:count cap:
 * HGETALL of the snapshots, HMGET of their authors' counts, the sum. */
static unsigned feed_unread(const struct bench_ctx *x, uint64_t key,
                            struct bench_rng *r, struct bench_cmd *out)
{
    uint64_t uid = key / per_user(x);

    (void)r;
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(out, UR_OP_FEED_UNREAD, BX_INT);
        bench_arg_int(out, uid);
        return 1;
    }
    bench_cmd_fcall(out, "feed_unread", 2, BX_INT);
    bench_arg_key(out, SNAP, uid);
    bench_arg_str(out, COUNT);
    bench_arg_str(out, FEED_CAP);
    return 1;
}

/* FEED.POST author (global)  |  HINCRBY feed:count author 1 */
static unsigned feed_post(const struct bench_ctx *x, uint64_t key,
                          struct bench_rng *r, struct bench_cmd *out)
{
    uint64_t author = key % FEED_AUTHORS;

    (void)r;
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(out, UR_OP_FEED_POST, BX_INT);
        bench_arg_int(out, author);
        return 1;
    }
    bench_cmd_redis(out, "HINCRBY", BX_INT);
    bench_arg_str(out, COUNT);
    bench_arg_int(out, author);
    bench_arg_int(out, 1);
    return 1;
}

/* The key's user follows, then unfollows, an author outside the preload's
 * (so the follow is new): FEED.FOLLOW + FEED.UNFOLLOW | FCALL feed_follow +
 * HDEL feed:snap:<uid> author. Two requests; the state stays bounded. */
static unsigned feed_follow(const struct bench_ctx *x, uint64_t key,
                            struct bench_rng *r, struct bench_cmd *out)
{
    uint64_t uid = key / per_user(x);
    uint64_t author = FEED_AUTHORS + bench_rng_below(r, FEED_AUTHORS);

    follow(x, &out[0], uid, author);
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(&out[1], UR_OP_FEED_UNFOLLOW, BX_INT);
        bench_arg_int(&out[1], uid);
    } else {
        bench_cmd_redis(&out[1], "HDEL", BX_INT);
        bench_arg_key(&out[1], SNAP, uid);
    }
    bench_arg_int(&out[1], author);
    return 2;
}

/* The key's follow edge. */
static unsigned feed_load(const struct bench_ctx *x, uint64_t key,
                          struct bench_cmd *out)
{
    uint64_t uid = key / per_user(x);

    follow(x, out, uid, author_of(uid, key % per_user(x)));
    return 1;
}

const struct bench_workload bench_feed_workloads[] = {
    {"feed-unread", "FEED.UNREAD uid (200 followees, cap 99)",
     "FCALL feed_unread 2 feed:snap:<uid> feed:count 99: HGETALL, HMGET "
     "of the followees' counts, sum of max(0, count - snapshot) with the "
     "early stop",
     feed_library, feed_unread, feed_load},
    {"feed-post", "FEED.POST author (global)", "HINCRBY feed:count author 1",
     feed_library, feed_post, feed_load},
    {"feed-follow", "FEED.FOLLOW uid a, then FEED.UNFOLLOW uid a (a new)",
     "FCALL feed_follow 2 feed:snap:<uid> feed:count a 5000 (HEXISTS, HLEN "
     "limit, HSET of HGET feed:count a), then HDEL feed:snap:<uid> a",
     feed_library, feed_follow, feed_load},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
