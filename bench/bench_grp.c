/*
 * bench_grp.c - GRP workloads (group unread by read diffusion).
 *
 * Groups: users 100b .. 100b+99 (block b) are the members of groups
 * 8b .. 8b+types-1, so every user is in `types` groups of 100 members.
 * A user's i-th group is group_of(uid, i).
 *
 * Redis model, as read diffusion needs it: per group a head `gh:<gid>`
 * (INCR gives the seqs) and a sorted set `gt:<gid>` of its last cap+1 seqs
 * scored by ts (what GRP.SEEN with a ts looks up); per user a hash
 * `gs:<uid>` of gid -> the seq it has seen. Each command is a function of
 * library `grp` below (FCALL), so each is atomic as on unreadd, capped at
 * unreadd's default unread-cap. grp_total reads the heads of the groups
 * named in the user's hash, keys the caller cannot declare: fine on a
 * single Redis, not on Redis Cluster.
 *
 * Posts carry the client's clock as ts on both sides. The load step joins
 * the user to its groups and then posts once to its group number uid mod
 * types: with the load's connections each taking a run of consecutive
 * keys, a member's unread is the posts of the block's later users, 0 to
 * 100 / types.
 */
#include "bench_workload.h"
#include "ops.h"

#define SEEN "gs:"
#define HEAD "gh:"
#define WINDOW "gt:"
#define MEMBERS 100 /* users per group */

_Static_assert(BENCH_TYPES_MAX + 1 <= BENCH_LOAD_MAX,
               "grp_load: a join per group and a post");

static const char grp_library[] =
    "#!lua name=grp\n"
    "-- gs:<uid>: gid -> seen seq; gh:<gid>: head seq; gt:<gid>: the last\n"
    "-- CAP + 1 seqs scored by ts. CAP: unreadd's default unread-cap.\n"
    "local CAP = 99\n"
    "local function capped(n)\n"
    "  if n > CAP then return CAP + 1 end\n"
    "  return n\n"
    "end\n"
    "redis.register_function('grp_post', function(keys, args)\n"
    "  local ts = tonumber(args[1])\n"
    "  local last = redis.call('ZRANGE', keys[2], -1, -1, 'WITHSCORES')\n"
    "  if last[2] and tonumber(last[2]) > ts then ts = tonumber(last[2]) end\n"
    "  local seq = redis.call('INCR', keys[1])\n"
    "  redis.call('ZADD', keys[2], ts, seq)\n"
    "  redis.call('ZREMRANGEBYRANK', keys[2], 0, -(CAP + 2))\n"
    "  return seq\n"
    "end)\n"
    "redis.register_function('grp_join', function(keys, args)\n"
    "  local seen = redis.call('HGET', keys[1], args[1])\n"
    "  local head = tonumber(redis.call('GET', keys[2])) or 0\n"
    "  if seen then return capped(head - tonumber(seen)) end\n"
    "  redis.call('HSET', keys[1], args[1], head)\n"
    "  return 0\n"
    "end)\n"
    "redis.register_function('grp_seen', function(keys, args)\n"
    "  redis.call('HSET', keys[1], args[1], redis.call('GET', keys[2]) or 0)\n"
    "  return 0\n"
    "end)\n"
    "redis.register_function('grp_unread', function(keys, args)\n"
    "  local seen = redis.call('HGET', keys[1], args[1])\n"
    "  if not seen then return 0 end\n"
    "  local head = tonumber(redis.call('GET', keys[2])) or 0\n"
    "  return capped(head - tonumber(seen))\n"
    "end)\n"
    "redis.register_function('grp_total', function(keys, args)\n"
    "  local seen = redis.call('HGETALL', keys[1])\n"
    "  if #seen == 0 then return 0 end\n"
    "  local heads = {}\n"
    "  for i = 1, #seen, 2 do heads[#heads + 1] = 'gh:' .. seen[i] end\n"
    "  heads = redis.call('MGET', unpack(heads))\n"
    "  local sum = 0\n"
    "  for j = 1, #heads do\n"
    "    sum = sum + (tonumber(heads[j]) or 0) - tonumber(seen[2 * j])\n"
    "    if sum > CAP then return CAP + 1 end\n"
    "  end\n"
    "  return sum\n"
    "end)\n";

static uint64_t group_of(uint64_t uid, unsigned i)
{
    return uid / MEMBERS * BENCH_TYPES_MAX + i;
}

/* GRP.POST gid ts  |  FCALL grp_post 2 gh:<gid> gt:<gid> ts */
static void post(const struct bench_ctx *x, struct bench_cmd *c, uint64_t gid)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_GRP_POST, BX_INT);
        bench_arg_int(c, gid);
    } else {
        bench_cmd_fcall(c, "grp_post", 2, BX_INT);
        bench_arg_key(c, HEAD, gid);
        bench_arg_key(c, WINDOW, gid);
    }
    bench_arg_int(c, bench_clock_ms());
}

/*
 * A command on one membership:
 *   GRP.<CMD> uid gid  |  FCALL grp_<fn> 2 gs:<uid> gh:<gid> gid
 */
static void membership(const struct bench_ctx *x, struct bench_cmd *c,
                       uint16_t op, const char *fn, uint64_t uid, uint64_t gid)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, op, BX_INT);
        bench_arg_int(c, uid);
        bench_arg_int(c, gid);
        return;
    }
    bench_cmd_fcall(c, fn, 2, BX_INT);
    bench_arg_key(c, SEEN, uid);
    bench_arg_key(c, HEAD, gid);
    bench_arg_int(c, gid);
}

/* GRP.TOTAL uid  |  FCALL grp_total 1 gs:<uid> */
static void total(const struct bench_ctx *x, struct bench_cmd *c, uint64_t uid)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_GRP_TOTAL, BX_INT);
        bench_arg_int(c, uid);
        return;
    }
    bench_cmd_fcall(c, "grp_total", 1, BX_INT);
    bench_arg_key(c, SEEN, uid);
}

/* A post to one of key's groups. */
static unsigned grp_post(const struct bench_ctx *x, uint64_t key,
                         struct bench_rng *r, struct bench_cmd *out)
{
    post(x, out, group_of(key, (unsigned)bench_rng_below(r, x->types)));
    return 1;
}

static unsigned grp_unread(const struct bench_ctx *x, uint64_t key,
                           struct bench_rng *r, struct bench_cmd *out)
{
    uint64_t gid = group_of(key, (unsigned)bench_rng_below(r, x->types));

    membership(x, out, UR_OP_GRP_UNREAD, "grp_unread", key, gid);
    return 1;
}

static unsigned grp_total(const struct bench_ctx *x, uint64_t key,
                          struct bench_rng *r, struct bench_cmd *out)
{
    (void)r;
    total(x, out, key);
    return 1;
}

/* 70% reads: 40% UNREAD, 30% TOTAL; 20% SEEN (to the head), 10% POST. */
static unsigned grp_mix(const struct bench_ctx *x, uint64_t key,
                        struct bench_rng *r, struct bench_cmd *out)
{
    unsigned dice = (unsigned)bench_rng_below(r, 100);
    uint64_t gid = group_of(key, (unsigned)bench_rng_below(r, x->types));

    if (dice < 40)
        membership(x, out, UR_OP_GRP_UNREAD, "grp_unread", key, gid);
    else if (dice < 70)
        total(x, out, key);
    else if (dice < 90)
        membership(x, out, UR_OP_GRP_SEEN, "grp_seen", key, gid);
    else
        post(x, out, gid);
    return 1;
}

/* Joins key to its groups, then posts once to its group key mod types. */
static unsigned grp_load(const struct bench_ctx *x, uint64_t key,
                         struct bench_cmd *out)
{
    for (unsigned i = 0; i < x->types; i++)
        membership(x, &out[i], UR_OP_GRP_JOIN, "grp_join", key,
                   group_of(key, i));
    post(x, &out[x->types], group_of(key, (unsigned)(key % x->types)));
    return x->types + 1;
}

const struct bench_workload bench_grp_workloads[] = {
    {"grp-unread", "GRP.UNREAD uid gid",
     "FCALL grp_unread 2 gs:<uid> gh:<gid> gid: HGET seen, GET head; "
     "min(head - seen, cap + 1)",
     grp_library, grp_unread, grp_load},
    {"grp-total", "GRP.TOTAL uid",
     "FCALL grp_total 1 gs:<uid>: HGETALL the seen seqs, MGET the heads, "
     "sum capped",
     grp_library, grp_total, grp_load},
    {"grp-mix",
     "40% GRP.UNREAD uid gid, 30% GRP.TOTAL uid, 20% GRP.SEEN uid gid, 10% "
     "GRP.POST gid ts",
     "40% FCALL grp_unread, 30% FCALL grp_total, 20% FCALL grp_seen (HSET "
     "seen = GET head), 10% FCALL grp_post",
     grp_library, grp_mix, grp_load},
    {"grp-post", "GRP.POST gid ts",
     "FCALL grp_post 2 gh:<gid> gt:<gid> ts: INCR the head, ZADD ts seq, "
     "ZREMRANGEBYRANK to the last cap + 1, atomically",
     grp_library, grp_post, grp_load},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
