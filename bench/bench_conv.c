/*
 * bench_conv.c - CONV workloads (conversation unread with a consistent
 * total).
 *
 * Every user has `types` conversations, cids 0..types-1. Redis model of a
 * user: one hash `c:<uid>` with, per conversation, a field <cid> holding
 * its unread, m<cid> its newest seq and r<cid> its read watermark, and a
 * field `total`. CONV.SEQ and CONV.READ move a conversation and the total
 * in one step; on Redis that takes a function (FCALL, library `conv`
 * below), which is what conv-seq and conv-read measure against. Mutes and
 * recalls are not modelled: no workload sends them. conv-mention sends a
 * message that mentions the user, then reads the conversation's state
 * (what a chat app's screen shows): on Redis the function also counts the
 * mention in a field n<cid> (a count, where unreadd keeps the mentioned
 * seqs themselves, so that a partial read or a recall clears them
 * exactly), and the state is an HMGET of the conversation's fields.
 *
 * Seqs. CONV.SEQ is idempotent (a seq at or below the conversation's max
 * adds nothing), so a workload that repeated seqs would measure lookups
 * only. A conversation's seq is the process's base (its wall clock in ms
 * since 2025, taken once) plus a counter of its slot, advanced by every
 * CONV.SEQ the process sends to the slot (a table of SEQ_SLOTS counters
 * shared by the client's threads; two or so conversations share a slot at
 * 1M users). So seqs strictly increase per conversation within a run, and
 * from one run to the next as long as a slot takes fewer SEQs in a run
 * than the milliseconds between the two runs' starts: true of uniform keys
 * (a few per slot), not of the hottest keys of a Zipf run, whose first
 * SEQs in the next run then repeat seqs and add nothing, as retries would.
 * The load step sets max = base and read = base - v, so a run's first SEQ
 * to a conversation leaves about (milliseconds since the load) unread:
 * large numbers, but within the compact form of the store (under 2^21
 * unread, read under 2^41) for 35 minutes, and exact in Lua's doubles.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "bench_workload.h"
#include "ops.h"

#define KEY "c:"
#define SEQ_EPOCH_MS UINT64_C(1735689600000) /* 2025-01-01T00:00:00Z */
#define SEQ_SLOTS (1u << 20)

_Static_assert(2 * BENCH_TYPES_MAX <= BENCH_LOAD_MAX,
               "conv_load: two commands per conversation");

static const char conv_library[] =
    "#!lua name=conv\n"
    "-- c:<uid>: <cid> = unread, m<cid> = newest seq, r<cid> = read\n"
    "-- watermark, total = the sum of the unread.\n"
    "redis.register_function('conv_seq', function(keys, args)\n"
    "  local k, c, s = keys[1], args[1], tonumber(args[2])\n"
    "  local v = redis.call('HMGET', k, 'm' .. c, 'r' .. c, 'total')\n"
    "  local m, r = tonumber(v[1]) or 0, tonumber(v[2]) or 0\n"
    "  if s <= m then return {m - r, tonumber(v[3]) or 0} end\n"
    "  redis.call('HSET', k, 'm' .. c, args[2], c, s - r)\n"
    "  return {s - r, redis.call('HINCRBY', k, 'total', s - m)}\n"
    "end)\n"
    "redis.register_function('conv_read', function(keys, args)\n"
    "  local k, c = keys[1], args[1]\n"
    "  local v = redis.call('HMGET', k, c, 'm' .. c, 'total')\n"
    "  if not v[2] then return {0, tonumber(v[3]) or 0} end\n"
    "  local u = tonumber(v[1]) or 0\n"
    "  redis.call('HSET', k, 'r' .. c, v[2], c, 0)\n"
    "  -- 0 - u, not -u: Lua writes -0 as '-0', which HINCRBY refuses\n"
    "  return {0, redis.call('HINCRBY', k, 'total', 0 - u)}\n"
    "end)\n"
    "-- n<cid> = unread mentions\n"
    "redis.register_function('conv_seq_mention', function(keys, args)\n"
    "  local k, c, s = keys[1], args[1], tonumber(args[2])\n"
    "  local v = redis.call('HMGET', k, 'm' .. c, 'r' .. c, 'total')\n"
    "  local m, r = tonumber(v[1]) or 0, tonumber(v[2]) or 0\n"
    "  if s <= m then return {m - r, tonumber(v[3]) or 0} end\n"
    "  redis.call('HSET', k, 'm' .. c, args[2], c, s - r)\n"
    "  redis.call('HINCRBY', k, 'n' .. c, 1)\n"
    "  return {s - r, redis.call('HINCRBY', k, 'total', s - m)}\n"
    "end)\n";

static _Atomic uint32_t seq_slot[SEQ_SLOTS];
static uint64_t seq_base;
static pthread_once_t seq_once = PTHREAD_ONCE_INIT;

static void seq_base_init(void)
{
    seq_base = bench_clock_ms() - SEQ_EPOCH_MS;
}

/* The process's base seq: every conversation's max after the load step. */
static uint64_t base(void)
{
    pthread_once(&seq_once, seq_base_init);
    return seq_base;
}

/* The next seq of conversation cid of uid (see the top of the file). */
static uint64_t next_seq(const struct bench_ctx *x, uint64_t uid, unsigned cid)
{
    uint32_t slot = (uint32_t)((uid * x->types + cid) % SEQ_SLOTS);

    return base() + 1 +
           atomic_fetch_add_explicit(&seq_slot[slot], 1, memory_order_relaxed);
}

/* CONV.SEQ uid cid seq  |  FCALL conv_seq 1 c:<uid> cid seq */
static void seq(const struct bench_ctx *x, struct bench_cmd *c, uint64_t uid,
                unsigned cid)
{
    uint64_t s = next_seq(x, uid, cid);

    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_CONV_SEQ, BX_ARR);
        bench_arg_int(c, uid);
    } else {
        bench_cmd_fcall(c, "conv_seq", 1, BX_ARR);
        bench_arg_key(c, KEY, uid);
    }
    bench_arg_int(c, cid);
    bench_arg_int(c, s);
}

/* CONV.READ uid cid  |  FCALL conv_read 1 c:<uid> cid */
static void read_all(const struct bench_ctx *x, struct bench_cmd *c,
                     uint64_t uid, unsigned cid)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_CONV_READ, BX_ARR);
        bench_arg_int(c, uid);
    } else {
        bench_cmd_fcall(c, "conv_read", 1, BX_ARR);
        bench_arg_key(c, KEY, uid);
    }
    bench_arg_int(c, cid);
}

/* CONV.SEQ uid cid seq MENTION  |  FCALL conv_seq_mention 1 c:<uid> cid
 * seq */
static void seq_mention(const struct bench_ctx *x, struct bench_cmd *c,
                        uint64_t uid, unsigned cid)
{
    uint64_t s = next_seq(x, uid, cid);

    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_CONV_SEQ, BX_ARR);
        bench_arg_int(c, uid);
        bench_arg_int(c, cid);
        bench_arg_int(c, s);
        bench_arg_str(c, "MENTION");
        return;
    }
    bench_cmd_fcall(c, "conv_seq_mention", 1, BX_ARR);
    bench_arg_key(c, KEY, uid);
    bench_arg_int(c, cid);
    bench_arg_int(c, s);
}

/* CONV.STATE uid cid  |  HMGET c:<uid> m<cid> r<cid> <cid> n<cid> */
static void state(const struct bench_ctx *x, struct bench_cmd *c, uint64_t uid,
                  unsigned cid)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_CONV_STATE, BX_ARR);
        bench_arg_int(c, uid);
        bench_arg_int(c, cid);
        return;
    }
    bench_cmd_redis(c, "HMGET", BX_ARR);
    bench_arg_key(c, KEY, uid);
    bench_arg_key(c, "m", cid);
    bench_arg_key(c, "r", cid);
    bench_arg_int(c, cid);
    bench_arg_key(c, "n", cid);
}

/* CONV.GET uid cid  |  HGET c:<uid> cid */
static void get(const struct bench_ctx *x, struct bench_cmd *c, uint64_t uid,
                unsigned cid)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_CONV_GET, BX_INT);
        bench_arg_int(c, uid);
    } else {
        bench_cmd_redis(c, "HGET", BX_BULK);
        bench_arg_key(c, KEY, uid);
    }
    bench_arg_int(c, cid);
}

/* CONV.TOTAL uid  |  HGET c:<uid> total */
static void total(const struct bench_ctx *x, struct bench_cmd *c, uint64_t uid)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_CONV_TOTAL, BX_INT);
        bench_arg_int(c, uid);
        return;
    }
    bench_cmd_redis(c, "HGET", BX_BULK);
    bench_arg_key(c, KEY, uid);
    bench_arg_str(c, "total");
}

static unsigned conv_seq(const struct bench_ctx *x, uint64_t key,
                         struct bench_rng *r, struct bench_cmd *out)
{
    seq(x, out, key, (unsigned)bench_rng_below(r, x->types));
    return 1;
}

static unsigned conv_read(const struct bench_ctx *x, uint64_t key,
                          struct bench_rng *r, struct bench_cmd *out)
{
    read_all(x, out, key, (unsigned)bench_rng_below(r, x->types));
    return 1;
}

/* A message mentioning the user, then the conversation's state: two
 * requests. */
static unsigned conv_mention(const struct bench_ctx *x, uint64_t key,
                             struct bench_rng *r, struct bench_cmd *out)
{
    unsigned cid = (unsigned)bench_rng_below(r, x->types);

    seq_mention(x, &out[0], key, cid);
    state(x, &out[1], key, cid);
    return 2;
}

/* 70% reads: 40% GET, 30% TOTAL; 30% writes: 20% SEQ, 10% READ. */
static unsigned conv_mix(const struct bench_ctx *x, uint64_t key,
                         struct bench_rng *r, struct bench_cmd *out)
{
    unsigned dice = (unsigned)bench_rng_below(r, 100);
    unsigned cid = (unsigned)bench_rng_below(r, x->types);

    if (dice < 40)
        get(x, out, key, cid);
    else if (dice < 70)
        total(x, out, key);
    else if (dice < 90)
        seq(x, out, key, cid);
    else
        read_all(x, out, key, cid);
    return 1;
}

/*
 * Conversation cid of key: max = base, read = base - v with v =
 * bench_load_value(key, cid), so v unread. unreadd: CONV.READ to base - v
 * (max rises with it) then CONV.SEQ base; Redis: an HSET of the
 * conversation's three fields each, then one of the total.
 */
static unsigned conv_load(const struct bench_ctx *x, uint64_t key,
                          struct bench_cmd *out)
{
    uint64_t b = base(), sum = 0;
    unsigned n = 0;

    for (unsigned cid = 0; cid < x->types; cid++) {
        uint32_t v = bench_load_value(key, cid);
        struct bench_cmd *c = &out[n++];

        sum += v;
        if (x->dialect == BENCH_UNREADD) {
            bench_cmd_unreadd(c, UR_OP_CONV_READ, BX_ARR);
            bench_arg_int(c, key);
            bench_arg_int(c, cid);
            bench_arg_int(c, b - v);
            c = &out[n++];
            bench_cmd_unreadd(c, UR_OP_CONV_SEQ, BX_ARR);
            bench_arg_int(c, key);
            bench_arg_int(c, cid);
            bench_arg_int(c, b);
            continue;
        }
        bench_cmd_redis(c, "HSET", BX_INT);
        bench_arg_key(c, KEY, key);
        bench_arg_int(c, cid);
        bench_arg_int(c, v);
        bench_arg_key(c, "m", cid);
        bench_arg_int(c, b);
        bench_arg_key(c, "r", cid);
        bench_arg_int(c, b - v);
    }
    if (x->dialect == BENCH_REDIS_CMDS) {
        bench_cmd_redis(&out[n], "HSET", BX_INT);
        bench_arg_key(&out[n], KEY, key);
        bench_arg_str(&out[n], "total");
        bench_arg_int(&out[n], sum);
        n++;
    }
    return n;
}

const struct bench_workload bench_conv_workloads[] = {
    {"conv-seq", "CONV.SEQ uid cid seq (seq above the conversation's max)",
     "FCALL conv_seq 1 c:<uid> cid seq: HMGET max, read, total; if seq > "
     "max, HSET max and unread and HINCRBY total, atomically",
     conv_library, conv_seq, conv_load},
    {"conv-read", "CONV.READ uid cid",
     "FCALL conv_read 1 c:<uid> cid: HMGET unread, max, total; HSET read = "
     "max and unread = 0, HINCRBY total -unread, atomically",
     conv_library, conv_read, conv_load},
    {"conv-mix",
     "40% CONV.GET uid cid, 30% CONV.TOTAL uid, 20% CONV.SEQ uid cid seq, "
     "10% CONV.READ uid cid",
     "40% HGET c:<uid> cid, 30% HGET c:<uid> total, 20% FCALL conv_seq, 10% "
     "FCALL conv_read",
     conv_library, conv_mix, conv_load},
    {"conv-mention", "CONV.SEQ uid cid seq MENTION, then CONV.STATE uid cid",
     "FCALL conv_seq_mention 1 c:<uid> cid seq (conv_seq, and HINCRBY "
     "n<cid> 1), then HMGET c:<uid> m<cid> r<cid> <cid> n<cid>",
     conv_library, conv_mention, conv_load},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
