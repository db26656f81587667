/*
 * bench_rcpt.c - RCPT workloads (read receipts of group messages).
 *
 * A key is one message: message i = k % RCPT_MSGS (msgid i + 1) of group
 * g = k / RCPT_MSGS, so `-r` counts what `make bench-memory` divides by
 * (1,000,000 keys: 1,000 groups of 1,000 messages). Each group has
 * RCPT_MEMBERS members, uid_of(g, j) with mapid j, and message i is sent by
 * member sender_of(i).
 *
 * The load step of a group's first key builds the whole group in order
 * (joins, then sends, then reads: recipients are the members at send, so
 * the order matters and one step keeps it); its other keys send nothing.
 * Reads lag sends as in bench/store_rcpt.c: the message of age a (0 =
 * newest) has been read by members 0..readers(a)-1, everyone once a >=
 * RCPT_WINDOW; unreadd gets one RCPT.READUPTO per member, Redis the
 * resulting bitmaps.
 *
 * Redis model (the one issue 5 names): per group a hash `rcpt:map:<g>`
 * uid -> mapid; per message a hash `rcpt:msg:<g,msgid>` (sender uid u,
 * sender mapid s or -1, members at send n, recipients c) and a bitmap
 * `rcpt:read:<g,msgid>` of the mapids that read it; <g,msgid> is
 * g * 2^32 + msgid. A read tests recipience and sets the bit in one script
 * so that it answers "newly marked" as RCPT.READ does; a count is BITCOUNT
 * against c: the functions of library `rcpt` below (FCALL).
 * Left out on Redis, in its favour: quits (none happen here) and retention
 * (unreadd dates every message for rcpt-max-age-days; Redis would need a
 * TTL per key).
 */
#include "bench_workload.h"
#include "ops.h"

#define RCPT_MEMBERS 200 /* members per group */
#define RCPT_MSGS 1000   /* preloaded messages per group (keys per group) */
#define RCPT_WINDOW 50   /* messages this young are not read by everyone */
#define RCPT_NEW_MSGS (1u << 31) /* rcpt-mix sends msgids above the preload */
#define RCPT_PAIRS 11            /* uid-mapid pairs per HSET (23 arguments) */
#define MAP "rcpt:map:"
#define MSG "rcpt:msg:"
#define READ "rcpt:read:"

#define FF8 "\xff\xff\xff\xff\xff\xff\xff\xff"
/* Bitmaps of the first 8m mapids: the last m bytes of ones. */
static const char ones[] = FF8 FF8 FF8 "\xff";

_Static_assert(RCPT_MEMBERS % 8 == 0 && sizeof(ones) - 1 == RCPT_MEMBERS / 8,
               "readers() counts whole bytes of members");
_Static_assert(RCPT_MEMBERS + RCPT_MSGS * 3 + RCPT_MEMBERS / RCPT_PAIRS + 1 <=
                   BENCH_LOAD_MAX,
               "a group's load fits one step");

/* Every function takes keys rcpt:map:<g>, rcpt:msg:<g,msgid>,
 * rcpt:read:<g,msgid>. */
static const char rcpt_library[] =
    "#!lua name=rcpt\n"
    "-- rcpt:map:<g>: uid -> mapid; rcpt:msg:<m>: u (sender uid), s (its\n"
    "-- mapid or -1), n (members at send), c (recipients); rcpt:read:<m>:\n"
    "-- the bitmap of the mapids that read it.\n"
    "redis.register_function('rcpt_read', function(keys, args)\n"
    "  local idx = redis.call('HGET', keys[1], args[1])\n"
    "  local m = redis.call('HMGET', keys[2], 's', 'n')\n"
    "  if not idx or not m[2] then return 0 end\n"
    "  idx = tonumber(idx)\n"
    "  if idx >= tonumber(m[2]) or idx == tonumber(m[1]) then return 0 end\n"
    "  return 1 - redis.call('SETBIT', keys[3], idx, 1)\n"
    "end)\n"
    "redis.register_function('rcpt_count', function(keys, args)\n"
    "  local c = redis.call('HGET', keys[2], 'c')\n"
    "  if not c then return redis.error_reply('ERR untracked msgid') end\n"
    "  local r = redis.call('BITCOUNT', keys[3])\n"
    "  return {r, tonumber(c) - r}\n"
    "end)\n"
    "redis.register_function('rcpt_send', function(keys, args)\n"
    "  local m = redis.call('HMGET', keys[2], 'u', 'c')\n"
    "  if m[1] then\n"
    "    if m[1] ~= args[1] then\n"
    "      return redis.error_reply('ERR msgid sent by another sender')\n"
    "    end\n"
    "    return tonumber(m[2])\n"
    "  end\n"
    "  local n = redis.call('HLEN', keys[1])\n"
    "  local s = redis.call('HGET', keys[1], args[1])\n"
    "  local c = s and n - 1 or n\n"
    "  redis.call('HSET', keys[2], 'u', args[1], 's', s or -1, 'n', n,\n"
    "             'c', c)\n"
    "  return c\n"
    "end)\n";

static uint64_t uid_of(uint64_t g, uint64_t j)
{
    return g * RCPT_MEMBERS + j + 1;
}

static uint64_t sender_of(uint64_t msgid)
{
    return msgid * 7 % RCPT_MEMBERS;
}

/* Members who have read a preloaded message of age a: a multiple of 8. */
static unsigned readers(unsigned age)
{
    if (age >= RCPT_WINDOW)
        return RCPT_MEMBERS;
    return 8 * (age * (RCPT_MEMBERS / 8) / RCPT_WINDOW);
}

/* Redis: FCALL fn with the three keys of message msgid of group g. */
static void fcall(struct bench_cmd *c, const char *fn, uint8_t expect,
                  uint64_t g, uint64_t msgid)
{
    bench_cmd_fcall(c, fn, 3, expect);
    bench_arg_key(c, MAP, g);
    bench_arg_key(c, MSG, g << 32 | msgid);
    bench_arg_key(c, READ, g << 32 | msgid);
}

/* RCPT.READ g uid msgid  |  FCALL rcpt_read 3 <keys> uid */
static void read1(const struct bench_ctx *x, struct bench_cmd *c, uint64_t g,
                  uint64_t j, uint64_t msgid)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_RCPT_READ, BX_INT);
        bench_arg_int(c, g);
        bench_arg_int(c, uid_of(g, j));
        bench_arg_int(c, msgid);
        return;
    }
    fcall(c, "rcpt_read", BX_INT, g, msgid);
    bench_arg_int(c, uid_of(g, j));
}

/* RCPT.COUNT g msgid  |  FCALL rcpt_count 3 <keys> */
static void count(const struct bench_ctx *x, struct bench_cmd *c, uint64_t g,
                  uint64_t msgid)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_RCPT_COUNT, BX_ARR);
        bench_arg_int(c, g);
        bench_arg_int(c, msgid);
        return;
    }
    fcall(c, "rcpt_count", BX_ARR, g, msgid);
}

/* RCPT.SEND g msgid sender  |  FCALL rcpt_send 3 <keys> sender */
static void send1(const struct bench_ctx *x, struct bench_cmd *c, uint64_t g,
                  uint64_t msgid)
{
    uint64_t sender = uid_of(g, sender_of(msgid));

    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_RCPT_SEND, BX_INT);
        bench_arg_int(c, g);
        bench_arg_int(c, msgid);
        bench_arg_int(c, sender);
        return;
    }
    fcall(c, "rcpt_send", BX_INT, g, msgid);
    bench_arg_int(c, sender);
}

/* A random member reads the key's message. */
static unsigned rcpt_read(const struct bench_ctx *x, uint64_t key,
                          struct bench_rng *r, struct bench_cmd *out)
{
    read1(x, out, key / RCPT_MSGS, bench_rng_below(r, RCPT_MEMBERS),
          key % RCPT_MSGS + 1);
    return 1;
}

static unsigned rcpt_count(const struct bench_ctx *x, uint64_t key,
                           struct bench_rng *r, struct bench_cmd *out)
{
    (void)r;
    count(x, out, key / RCPT_MSGS, key % RCPT_MSGS + 1);
    return 1;
}

/* 10% a new message to the key's group, 60% a read and 30% a count of
 * the key's message. */
static unsigned rcpt_mix(const struct bench_ctx *x, uint64_t key,
                         struct bench_rng *r, struct bench_cmd *out)
{
    unsigned dice = (unsigned)bench_rng_below(r, 100);
    uint64_t g = key / RCPT_MSGS;

    if (dice < 10)
        send1(x, out, g, RCPT_MSGS + 1 + bench_rng_below(r, RCPT_NEW_MSGS));
    else if (dice < 70)
        read1(x, out, g, bench_rng_below(r, RCPT_MEMBERS), key % RCPT_MSGS + 1);
    else
        count(x, out, g, key % RCPT_MSGS + 1);
    return 1;
}

/* unreadd: joins, sends, then member j reads up to the newest message
 * old enough for readers() to include j. */
static unsigned load_unreadd(const struct bench_ctx *x, uint64_t g,
                             struct bench_cmd *out)
{
    unsigned n = 0;

    for (unsigned j = 0; j < RCPT_MEMBERS; j++, n++) {
        bench_cmd_unreadd(&out[n], UR_OP_RCPT_JOIN, BX_INT);
        bench_arg_int(&out[n], g);
        bench_arg_int(&out[n], uid_of(g, j));
    }
    for (unsigned i = 0; i < RCPT_MSGS; i++)
        send1(x, &out[n++], g, i + 1);
    for (unsigned j = 0; j < RCPT_MEMBERS; j++) {
        unsigned age = 0;

        while (readers(age) <= j)
            age++;
        if (age >= RCPT_MSGS)
            continue;
        bench_cmd_unreadd(&out[n], UR_OP_RCPT_READUPTO, BX_INT);
        bench_arg_int(&out[n], g);
        bench_arg_int(&out[n], uid_of(g, j));
        bench_arg_int(&out[n++], RCPT_MSGS - age);
    }
    return n;
}

/* Redis: the map, then per message its hash and the bitmap of its
 * readers (without the sender, who is not a recipient). */
static unsigned load_redis(uint64_t g, struct bench_cmd *out)
{
    unsigned n = 0;

    for (unsigned j = 0; j < RCPT_MEMBERS; j++) {
        if (j % RCPT_PAIRS == 0) {
            bench_cmd_redis(&out[n++], "HSET", BX_INT);
            bench_arg_key(&out[n - 1], MAP, g);
        }
        bench_arg_int(&out[n - 1], uid_of(g, j));
        bench_arg_int(&out[n - 1], j);
    }
    for (unsigned i = 0; i < RCPT_MSGS; i++) {
        uint64_t msgid = i + 1, s = sender_of(msgid);
        unsigned k = readers(RCPT_MSGS - 1 - i);
        struct bench_cmd *c = &out[n++];

        bench_cmd_redis(c, "HSET", BX_INT);
        bench_arg_key(c, MSG, g << 32 | msgid);
        bench_arg_str(c, "u");
        bench_arg_int(c, uid_of(g, s));
        bench_arg_str(c, "s");
        bench_arg_int(c, s);
        bench_arg_str(c, "n");
        bench_arg_int(c, RCPT_MEMBERS);
        bench_arg_str(c, "c");
        bench_arg_int(c, RCPT_MEMBERS - 1);
        if (k == 0)
            continue;
        c = &out[n++];
        bench_cmd_redis(c, "SET", BX_STATUS);
        bench_arg_key(c, READ, g << 32 | msgid);
        bench_arg_str(c, ones + sizeof(ones) - 1 - k / 8);
        if (s >= k)
            continue;
        c = &out[n++];
        bench_cmd_redis(c, "SETBIT", BX_INT);
        bench_arg_key(c, READ, g << 32 | msgid);
        bench_arg_int(c, s);
        bench_arg_int(c, 0);
    }
    return n;
}

/* The whole group at its first key; nothing at the others. */
static unsigned rcpt_load(const struct bench_ctx *x, uint64_t key,
                          struct bench_cmd *out)
{
    if (key % RCPT_MSGS != 0)
        return 0;
    if (x->dialect == BENCH_UNREADD)
        return load_unreadd(x, key / RCPT_MSGS, out);
    return load_redis(key / RCPT_MSGS, out);
}

const struct bench_workload bench_rcpt_workloads[] = {
    {"rcpt-read", "RCPT.READ gid uid msgid (a random member of 200)",
     "FCALL rcpt_read 3 rcpt:map:<g> rcpt:msg:<m> rcpt:read:<m> uid: HGET "
     "mapid, HMGET s n, recipient test, SETBIT; newly marked",
     rcpt_library, rcpt_read, rcpt_load},
    {"rcpt-count", "RCPT.COUNT gid msgid",
     "FCALL rcpt_count 3 <keys>: HGET c, BITCOUNT; [read, c - read]",
     rcpt_library, rcpt_count, rcpt_load},
    {"rcpt-mix",
     "10% RCPT.SEND gid msgid sender (a new msgid), 60% RCPT.READ, 30% "
     "RCPT.COUNT",
     "10% FCALL rcpt_send 3 <keys> sender (HMGET, HLEN, HGET, HSET), 60% "
     "FCALL rcpt_read, 30% FCALL rcpt_count",
     rcpt_library, rcpt_mix, rcpt_load},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
