/*
 * bench_user.c - USER workloads: the app badge over every family
 * (USER.BADGE) and the badges of many users per call (USER.MBADGE).
 *
 * The Redis side keeps each family as its own workload file models it,
 * under the same key names, so whatever the other families' runs left is
 * read the same way by both servers: CNT's hash u:<uid> (its field
 * `total`), CONV's hash c:<uid> (`total`), GRP's hash gs:<uid> of gid ->
 * seen and heads gh:<gid>, BC's heads bh:<ch> and offsets bo:<ch> of
 * channels 0..types-1, DOT's dot:click:<uid> and dot:push, FEED's
 * feed:snap:<uid> and feed:count. The badge is one function of library
 * `badge` below (FCALL): it reads every part the way USER.BADGE does
 * (muted conversations are not modelled: no workload mutes), caps each
 * part and the sum at unreadd's default unread-cap, and answers what
 * USER.BADGE answers. It reads the GRP heads of the groups in the user's
 * hash, keys the caller cannot declare (fine on one Redis, not on Redis
 * Cluster), as grp_total does.
 *
 * badge-many sends USER.MBADGE of MANY users per call to unreadd, and to
 * Redis a pipelined FCALL badge_only per user (MANY requests per
 * operation): compare.py counts both in users per second.
 *
 * The load step gives the key's user a part in every family: two counter
 * types, two conversations, the groups of GRP's own scheme (100 members a
 * group, one post per member), a registration in every channel, two dot
 * clicks (half of them pushed again later), two followees (with posts).
 */
#include "bench_workload.h"
#include "ops.h"

#define MANY 100                /* users per USER.MBADGE */
#define MEMBERS 100             /* users per group, as bench_grp.c */
#define BADGE_TYPE 7            /* the CNT type of the load (cnt: 0, 1) */
#define BADGE_CID 100           /* the first conversation of the load */
#define BADGE_DOT 60            /* dots 60..63: bench_dot.c's range */
#define BADGE_AUTHOR 20000      /* authors 20000..: not bench_feed.c's */
#define DOT_T0 1700000000000ull /* ms, as bench_dot.c */

_Static_assert(MANY <= BENCH_MAX_ARGS && MANY <= BENCH_OP_MAX,
               "badge-many: one USER.MBADGE, or MANY FCALLs");
_Static_assert(7 + 2 * BENCH_TYPES_MAX + 4 <= BENCH_MAX_ARGS,
               "FCALL badge: 7 + 2 * types keys, uid and types");

static const char badge_library[] =
    "#!lua name=badge\n"
    "-- One user's badge over the families' own Redis models (see\n"
    "-- bench_user.c): keys u:, c:, gs:, dot:click:, feed:snap: of the user,\n"
    "-- feed:count, dot:push, then bh:<ch> bo:<ch> per channel.\n"
    "local CAP = 99\n"
    "local function capped(n)\n"
    "  if n > CAP then return CAP + 1 end\n"
    "  return n\n"
    "end\n"
    "local function num(v) return tonumber(v) or 0 end\n"
    "local function badge(keys, uid, nch)\n"
    "  local p = {}\n"
    "  p[1] = num(redis.call('HGET', keys[1], 'total'))\n"
    "  p[2] = num(redis.call('HGET', keys[2], 'total'))\n"
    "  local grp, seen = 0, redis.call('HGETALL', keys[3])\n"
    "  if #seen > 0 then\n"
    "    local heads = {}\n"
    "    for i = 1, #seen, 2 do heads[#heads + 1] = 'gh:' .. seen[i] end\n"
    "    heads = redis.call('MGET', unpack(heads))\n"
    "    for j = 1, #heads do\n"
    "      grp = grp + num(heads[j]) - tonumber(seen[2 * j])\n"
    "      if grp > CAP then break end\n"
    "    end\n"
    "  end\n"
    "  p[3] = grp\n"
    "  local bc = 0\n"
    "  for c = 0, nch - 1 do\n"
    "    local off = redis.call('HGET', keys[9 + 2 * c], uid)\n"
    "    if off then\n"
    "      bc = bc + num(redis.call('GET', keys[8 + 2 * c])) - tonumber(off)\n"
    "    end\n"
    "  end\n"
    "  p[4] = bc\n"
    "  local dot, clicks = 0, redis.call('HGETALL', keys[4])\n"
    "  if #clicks > 0 then\n"
    "    local ids = {}\n"
    "    for i = 1, #clicks, 2 do ids[#ids + 1] = clicks[i] end\n"
    "    local pushes = redis.call('HMGET', keys[7], unpack(ids))\n"
    "    for i = 1, #ids do\n"
    "      local pt = tonumber(pushes[i])\n"
    "      if pt and tonumber(clicks[2 * i]) < pt then dot = dot + 1 end\n"
    "    end\n"
    "  end\n"
    "  p[5] = dot\n"
    "  local feed, snap = 0, redis.call('HGETALL', keys[5])\n"
    "  if #snap > 0 then\n"
    "    local authors = {}\n"
    "    for i = 1, #snap, 2 do authors[#authors + 1] = snap[i] end\n"
    "    local counts = redis.call('HMGET', keys[6], unpack(authors))\n"
    "    for i = 1, #authors do\n"
    "      local d = num(counts[i]) - tonumber(snap[2 * i])\n"
    "      if d > 0 then\n"
    "        feed = feed + d\n"
    "        if feed > CAP then break end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  p[6] = feed\n"
    "  local sum = 0\n"
    "  for i = 1, 6 do\n"
    "    p[i] = capped(p[i])\n"
    "    sum = sum + p[i]\n"
    "  end\n"
    "  return capped(sum), p\n"
    "end\n"
    "redis.register_function('badge', function(keys, args)\n"
    "  local b, p = badge(keys, args[1], tonumber(args[2]))\n"
    "  return {b, 'cnt', p[1], 'conv', p[2], 'grp', p[3], 'bc', p[4],\n"
    "          'dot', p[5], 'feed', p[6]}\n"
    "end)\n"
    "redis.register_function('badge_only', function(keys, args)\n"
    "  local b = badge(keys, args[1], tonumber(args[2]))\n"
    "  return b\n"
    "end)\n"
    "-- The load: joins at the head, follows from the count, registers at\n"
    "-- the head (as GRP.JOIN, FEED.FOLLOW, BC.UNREAD), times only forward.\n"
    "redis.register_function('badge_at_head', function(keys, args)\n"
    "  if not redis.call('HGET', keys[1], args[1]) then\n"
    "    local head\n"
    "    if keys[2] == 'feed:count' then\n"
    "      head = redis.call('HGET', keys[2], args[2])\n"
    "    else\n"
    "      head = redis.call('GET', keys[2])\n"
    "    end\n"
    "    redis.call('HSET', keys[1], args[1], num(head))\n"
    "  end\n"
    "  return 0\n"
    "end)\n"
    "redis.register_function('badge_later', function(keys, args)\n"
    "  local old = tonumber(redis.call('HGET', keys[1], args[1]))\n"
    "  if not old or old < tonumber(args[2]) then\n"
    "    redis.call('HSET', keys[1], args[1], args[2])\n"
    "  end\n"
    "  return 0\n"
    "end)\n";

static uint64_t group_of(uint64_t uid, unsigned i)
{
    return uid / MEMBERS * BENCH_TYPES_MAX + i;
}

/* FCALL badge[_only] <keys> uid types: the user's keys, then each
 * channel's. */
static void badge_fcall(const struct bench_ctx *x, struct bench_cmd *c,
                        const char *fn, uint8_t expect, uint64_t uid)
{
    bench_cmd_fcall(c, fn, 7 + 2 * x->types, expect);
    bench_arg_key(c, "u:", uid);
    bench_arg_key(c, "c:", uid);
    bench_arg_key(c, "gs:", uid);
    bench_arg_key(c, "dot:click:", uid);
    bench_arg_key(c, "feed:snap:", uid);
    bench_arg_str(c, "feed:count");
    bench_arg_str(c, "dot:push");
    for (unsigned ch = 0; ch < x->types; ch++) {
        bench_arg_key(c, "bh:", ch);
        bench_arg_key(c, "bo:", ch);
    }
    bench_arg_int(c, uid);
    bench_arg_int(c, x->types);
}

/* USER.BADGE uid  |  FCALL badge <7 + 2 types keys> uid types */
static unsigned badge_one(const struct bench_ctx *x, uint64_t key,
                          struct bench_rng *r, struct bench_cmd *out)
{
    (void)r;
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(out, UR_OP_USER_BADGE, BX_ARR);
        bench_arg_int(out, key);
    } else {
        badge_fcall(x, out, "badge", BX_ARR, key);
    }
    return 1;
}

/* USER.MBADGE key .. key+MANY-1  |  MANY x FCALL badge_only, pipelined */
static unsigned badge_many(const struct bench_ctx *x, uint64_t key,
                           struct bench_rng *r, struct bench_cmd *out)
{
    (void)r;
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(out, UR_OP_USER_MBADGE, BX_ARR);
        for (unsigned i = 0; i < MANY; i++)
            bench_arg_int(out, key + i);
        return 1;
    }
    for (unsigned i = 0; i < MANY; i++)
        badge_fcall(x, &out[i], "badge_only", BX_INT, key + i);
    return MANY;
}

/*
 * Something placed at the current head or count (a membership, a follow,
 * a registration): unreadd `op uid id`; Redis `FCALL badge_at_head 2
 * <hash> <head> field head-field`, which sets hash[field] to the head
 * (GET) or to feed:count[head-field] when it is not set yet.
 */
static void at_head(const struct bench_ctx *x, struct bench_cmd *c, uint16_t op,
                    uint64_t uid, uint64_t id, const char *hash,
                    uint64_t hash_id, const char *head, uint64_t head_id,
                    uint64_t field)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, op, BX_INT);
        bench_arg_int(c, uid);
        bench_arg_int(c, id);
        return;
    }
    bench_cmd_fcall(c, "badge_at_head", 2, BX_INT);
    bench_arg_key(c, hash, hash_id);
    if (head_id == UINT64_MAX)
        bench_arg_str(c, head);
    else
        bench_arg_key(c, head, head_id);
    bench_arg_int(c, field);
    bench_arg_int(c, id);
}

/* A counter or a conversation's unread and the total:
 *   CNT.INCR / CONV.INCR uid id n  |  HINCRBY <hash> id n (+ total). */
static unsigned add(const struct bench_ctx *x, struct bench_cmd *c, uint16_t op,
                    const char *hash, uint64_t uid, uint64_t id, uint64_t n)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, op, BX_ARR);
        bench_arg_int(c, uid);
        bench_arg_int(c, id);
        bench_arg_int(c, n);
        return 1;
    }
    for (unsigned i = 0; i < 2; i++) {
        bench_cmd_redis(&c[i], "HINCRBY", BX_INT);
        bench_arg_key(&c[i], hash, uid);
        if (i == 0)
            bench_arg_int(&c[i], id);
        else
            bench_arg_str(&c[i], "total");
        bench_arg_int(&c[i], n);
    }
    return 2;
}

/* A time that only moves forward: DOT.CLICK uid dot ts / DOT.PUSH dot ts |
 * FCALL badge_later 1 <hash> dot ts. */
static void later(const struct bench_ctx *x, struct bench_cmd *c, bool click,
                  uint64_t uid, uint64_t dot, uint64_t ts)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, click ? UR_OP_DOT_CLICK : UR_OP_DOT_PUSH, BX_INT);
        if (click)
            bench_arg_int(c, uid);
    } else {
        bench_cmd_fcall(c, "badge_later", 1, BX_INT);
        if (click)
            bench_arg_key(c, "dot:click:", uid);
        else
            bench_arg_str(c, "dot:push");
    }
    bench_arg_int(c, dot);
    bench_arg_int(c, ts);
}

static unsigned badge_load(const struct bench_ctx *x, uint64_t key,
                           struct bench_cmd *out)
{
    uint64_t a = BADGE_AUTHOR + key % 1000, dot = BADGE_DOT + key % 4;
    unsigned n = 0;

    n += add(x, &out[n], UR_OP_CNT_INCR, "u:", key, BADGE_TYPE, 1 + key % 5);
    n += add(x, &out[n], UR_OP_CONV_INCR, "c:", key, BADGE_CID, 1 + key % 3);
    n += add(x, &out[n], UR_OP_CONV_INCR, "c:", key, BADGE_CID + 1, 2);
    for (unsigned i = 0; i < x->types; i++) {
        uint64_t gid = group_of(key, i);

        at_head(x, &out[n++], UR_OP_GRP_JOIN, key, gid, "gs:", key, "gh:", gid,
                gid);
    }
    /* a post: the heads of GRP's own Redis model (its window is not read) */
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(&out[n], UR_OP_GRP_POST, BX_INT);
        bench_arg_int(&out[n], group_of(key, (unsigned)(key % x->types)));
        bench_arg_int(&out[n++], bench_clock_ms());
    } else {
        bench_cmd_redis(&out[n], "INCR", BX_INT);
        bench_arg_key(&out[n++],
                      "gh:", group_of(key, (unsigned)(key % x->types)));
    }
    for (unsigned ch = 0; ch < x->types; ch++)
        at_head(x, &out[n++], UR_OP_BC_UNREAD, key, ch, "bo:", ch, "bh:", ch,
                key);
    later(x, &out[n++], true, key, dot, DOT_T0 + key % 1000);
    if (key < 4)
        later(x, &out[n++], false, 0, dot, DOT_T0 + 2000);
    at_head(x, &out[n++], UR_OP_FEED_FOLLOW, key, a, "feed:snap:", key,
            "feed:count", UINT64_MAX, a);
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(&out[n], UR_OP_FEED_POST, BX_INT);
        bench_arg_int(&out[n++], a);
    } else {
        bench_cmd_redis(&out[n], "HINCRBY", BX_INT);
        bench_arg_str(&out[n], "feed:count");
        bench_arg_int(&out[n], a);
        bench_arg_int(&out[n++], 1);
    }
    return n;
}

const struct bench_workload bench_user_workloads[] = {
    {"badge-one", "USER.BADGE uid (every family's part, capped)",
     "FCALL badge <the user's keys in every family's model> uid types: "
     "HGET u: and c: totals, HGETALL gs: + MGET heads, HGET bo: + GET bh: "
     "per channel, HGETALL dot:click: + HMGET dot:push, HGETALL feed:snap: "
     "+ HMGET feed:count; each part and the sum capped",
     badge_library, badge_one, badge_load},
    {"badge-many", "USER.MBADGE of 100 users (uid .. uid+99)",
     "100 pipelined FCALL badge_only (as badge, the badge alone), one per "
     "user",
     badge_library, badge_many, badge_load},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
