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
 *
 * Two more rows for `make bench-memory` (issue 21's read shapes), their
 * operation a count as rcpt-count's, their load spread over the group's
 * keys in key order (keys of a group are loaded in order by one
 * connection; `-r` a multiple of 1,000 per connection keeps every group
 * on one):
 *   rcpt-lag   members 0..189 read with RCPT.READUPTO every 20 messages
 *              (member j right after message i when (i + j) mod 20 = 19,
 *              up to it), members 190..199 never read;
 *   rcpt-half  each message is read by a random half of the members with
 *              RCPT.READ, in batches: after every 22nd message of the
 *              group each member reads its share of the last 22 (one
 *              command, up to 22 msgids).
 * Redis gets the same end state: per message its hash and the bitmap of
 * its readers, the sender's bit cleared.
 */
#include <pthread.h>

#include "bench_workload.h"
#include "ops.h"

#define RCPT_MEMBERS 200 /* members per group */
#define RCPT_MSGS 1000   /* preloaded messages per group (keys per group) */
#define RCPT_WINDOW 50   /* messages this young are not read by everyone */
#define RCPT_NEW_MSGS (1u << 31) /* rcpt-mix sends msgids above the preload */
#define RCPT_PAIRS 11            /* uid-mapid pairs per HSET (23 arguments) */
#define LAG_READERS 190          /* rcpt-lag: members 190..199 never read */
#define LAG_EVERY 20  /* rcpt-lag: messages between a reader's reads */
#define HALF_BATCH 22 /* rcpt-half: messages per round of reads */
#define BITMAP_BYTES (RCPT_MEMBERS / 8)
#define HALF_PATTERNS 256 /* rcpt-half: reader sets messages draw from */
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

/* ---- rcpt-lag and rcpt-half (bench-memory's read shapes) ------------- */

/* Redis bitmaps: bit j is the j-th bit of the string, most significant
 * bit of each byte first. */
static void bit_set(uint8_t *b, unsigned j)
{
    b[j / 8] |= (uint8_t)(0x80 >> (j % 8));
}

static bool bit_get(const uint8_t *b, unsigned j)
{
    return b[j / 8] & (0x80 >> (j % 8));
}

/* A string argument of n bytes (any bytes; p lives for the run). */
static void arg_bytes(struct bench_cmd *c, const uint8_t *p, unsigned n)
{
    bench_arg_str(c, "");
    c->argv[c->argc - 1].str = (const char *)p;
    c->argv[c->argc - 1].len = n;
}

/* rcpt-lag: the last message index reader j has read up to (by its last
 * RCPT.READUPTO after message i, (i + j) mod 20 = 19). */
static unsigned lag_last(unsigned j)
{
    return RCPT_MSGS - 1 -
           (RCPT_MSGS - 1 + j + LAG_EVERY - (LAG_EVERY - 1)) % LAG_EVERY;
}

/* Readers of message i at the end: messages older than every reader's
 * last read share one bitmap, the last LAG_EVERY have one each; and
 * rcpt-half's reader sets. Built once. */
static uint8_t lag_all[BITMAP_BYTES], lag_tail[LAG_EVERY][BITMAP_BYTES];
static uint8_t half_sets[HALF_PATTERNS][BITMAP_BYTES];
static pthread_once_t shapes_once = PTHREAD_ONCE_INIT;

static void shapes_init(void)
{
    uint64_t x = 0x2545f4914f6cdd1dULL;

    for (unsigned j = 0; j < LAG_READERS; j++) {
        bit_set(lag_all, j);
        for (unsigned t = 0; t < LAG_EVERY; t++)
            if (RCPT_MSGS - LAG_EVERY + t <= lag_last(j))
                bit_set(lag_tail[t], j);
    }
    for (unsigned p = 0; p < HALF_PATTERNS; p++)
        for (unsigned b = 0; b < BITMAP_BYTES; b++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            half_sets[p][b] = (uint8_t)(x >> 24);
        }
}

static const uint8_t *lag_readers(unsigned i)
{
    pthread_once(&shapes_once, shapes_init);
    return i < RCPT_MSGS - LAG_EVERY ? lag_all
                                     : lag_tail[i - (RCPT_MSGS - LAG_EVERY)];
}

/* rcpt-half: the reader set of message i of group g. */
static const uint8_t *half_readers(uint64_t g, unsigned i)
{
    uint64_t h = (g * RCPT_MSGS + i) * 0x9e3779b97f4a7c15ULL;

    pthread_once(&shapes_once, shapes_init);
    return half_sets[h >> 56];
}

/* unreadd: the group's joins before its first message. */
static unsigned joins(uint64_t g, struct bench_cmd *out)
{
    for (unsigned j = 0; j < RCPT_MEMBERS; j++) {
        bench_cmd_unreadd(&out[j], UR_OP_RCPT_JOIN, BX_INT);
        bench_arg_int(&out[j], g);
        bench_arg_int(&out[j], uid_of(g, j));
    }
    return RCPT_MEMBERS;
}

/* Redis: the group's map before its first message. */
static unsigned map_redis(uint64_t g, struct bench_cmd *out)
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
    return n;
}

/* Redis: message i's hash, the bitmap of its readers, the sender's bit
 * cleared (not a recipient). */
static unsigned msg_redis(uint64_t g, unsigned i, const uint8_t *readers,
                          struct bench_cmd *out)
{
    uint64_t msgid = i + 1, sd = sender_of(msgid);

    bench_cmd_redis(&out[0], "HSET", BX_INT);
    bench_arg_key(&out[0], MSG, g << 32 | msgid);
    bench_arg_str(&out[0], "u");
    bench_arg_int(&out[0], uid_of(g, sd));
    bench_arg_str(&out[0], "s");
    bench_arg_int(&out[0], sd);
    bench_arg_str(&out[0], "n");
    bench_arg_int(&out[0], RCPT_MEMBERS);
    bench_arg_str(&out[0], "c");
    bench_arg_int(&out[0], RCPT_MEMBERS - 1);
    bench_cmd_redis(&out[1], "SET", BX_STATUS);
    bench_arg_key(&out[1], READ, g << 32 | msgid);
    arg_bytes(&out[1], readers, BITMAP_BYTES);
    bench_cmd_redis(&out[2], "SETBIT", BX_INT);
    bench_arg_key(&out[2], READ, g << 32 | msgid);
    bench_arg_int(&out[2], sd);
    bench_arg_int(&out[2], 0);
    return 3;
}

/* Key k is message i = k mod 1,000 of group g: its send and the reads
 * that follow it. */
static unsigned lag_load(const struct bench_ctx *x, uint64_t key,
                         struct bench_cmd *out)
{
    uint64_t g = key / RCPT_MSGS;
    unsigned i = (unsigned)(key % RCPT_MSGS), n = 0;

    if (x->dialect != BENCH_UNREADD) {
        if (i == 0)
            n = map_redis(g, out);
        return n + msg_redis(g, i, lag_readers(i), &out[n]);
    }
    if (i == 0)
        n = joins(g, out);
    send1(x, &out[n++], g, i + 1);
    for (unsigned j = 0; j < LAG_READERS; j++) {
        if ((i + j) % LAG_EVERY != LAG_EVERY - 1)
            continue;
        bench_cmd_unreadd(&out[n], UR_OP_RCPT_READUPTO, BX_INT);
        bench_arg_int(&out[n], g);
        bench_arg_int(&out[n], uid_of(g, j));
        bench_arg_int(&out[n++], i + 1);
    }
    return n;
}

static unsigned half_load(const struct bench_ctx *x, uint64_t key,
                          struct bench_cmd *out)
{
    uint64_t g = key / RCPT_MSGS;
    unsigned i = (unsigned)(key % RCPT_MSGS), n = 0, first;

    if (x->dialect != BENCH_UNREADD) {
        if (i == 0)
            n = map_redis(g, out);
        return n + msg_redis(g, i, half_readers(g, i), &out[n]);
    }
    if (i == 0)
        n = joins(g, out);
    send1(x, &out[n++], g, i + 1);
    if (i % HALF_BATCH != HALF_BATCH - 1 && i != RCPT_MSGS - 1)
        return n;
    first = i - i % HALF_BATCH;
    for (unsigned j = 0; j < RCPT_MEMBERS; j++) {
        struct bench_cmd *c = &out[n];

        bench_cmd_unreadd(c, UR_OP_RCPT_READ, BX_INT);
        bench_arg_int(c, g);
        bench_arg_int(c, uid_of(g, j));
        for (unsigned k = first; k <= i; k++)
            if (bit_get(half_readers(g, k), j))
                bench_arg_int(c, k + 1);
        n += c->argc > 2;
    }
    return n;
}

_Static_assert(HALF_BATCH + 2 <= BENCH_MAX_ARGS, "a batch fits a READ");
_Static_assert(RCPT_MEMBERS + 1 + RCPT_MEMBERS <= BENCH_LOAD_MAX,
               "a key's load step fits");

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
    {"rcpt-lag",
     "RCPT.COUNT gid msgid; loaded: 190 of 200 members read by "
     "RCPT.READUPTO every 20 messages, 10 never",
     "FCALL rcpt_count 3 <keys>; loaded: the same readers' bitmaps",
     rcpt_library, rcpt_count, lag_load},
    {"rcpt-half",
     "RCPT.COUNT gid msgid; loaded: each message read by a random half of "
     "the 200 members (RCPT.READ)",
     "FCALL rcpt_count 3 <keys>; loaded: the same readers' bitmaps",
     rcpt_library, rcpt_count, half_load},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
