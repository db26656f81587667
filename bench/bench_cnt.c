/*
 * bench_cnt.c - CNT workloads (typed counters per user).
 *
 * Redis model of a user: one hash `u:<uid>` with a field per counter type
 * ("0", "1", ...) and a field `total`. unreadd keeps the part and the total
 * consistent in one step; on Redis that takes a Lua script (two HINCRBY in
 * one atomic EVALSHA), which is what cnt-incr measures against.
 */
#include "bench_workload.h"
#include "ops.h"

#define KEY "u:"

_Static_assert(BENCH_TYPES_MAX <= BENCH_OP_MAX, "cnt_load: a CNT.SET per type");

static const char incr_script[] =
    "local v = redis.call('HINCRBY', KEYS[1], ARGV[1], 1) "
    "return {v, redis.call('HINCRBY', KEYS[1], 'total', 1)}";

/* CNT.INCR uid type  |  EVALSHA <incr_script> 1 u:<uid> type */
static void incr(const struct bench_ctx *x, struct bench_cmd *c, uint64_t uid,
                 unsigned type)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_CNT_INCR, BX_ARR);
        bench_arg_int(c, uid);
        bench_arg_int(c, type);
        return;
    }
    bench_cmd_redis(c, "EVALSHA", BX_ARR);
    bench_arg_str(c, x->sha);
    bench_arg_str(c, "1");
    bench_arg_key(c, KEY, uid);
    bench_arg_int(c, type);
}

/* CNT.GET uid type  |  HGET u:<uid> type */
static void get(const struct bench_ctx *x, struct bench_cmd *c, uint64_t uid,
                unsigned type)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_CNT_GET, BX_INT);
        bench_arg_int(c, uid);
        bench_arg_int(c, type);
        return;
    }
    bench_cmd_redis(c, "HGET", BX_BULK);
    bench_arg_key(c, KEY, uid);
    bench_arg_int(c, type);
}

/* CNT.TOTAL uid  |  HGET u:<uid> total */
static void total(const struct bench_ctx *x, struct bench_cmd *c, uint64_t uid)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_CNT_TOTAL, BX_INT);
        bench_arg_int(c, uid);
        return;
    }
    bench_cmd_redis(c, "HGET", BX_BULK);
    bench_arg_key(c, KEY, uid);
    bench_arg_str(c, "total");
}

/* CNT.GETALL uid  |  HGETALL u:<uid> */
static void getall(const struct bench_ctx *x, struct bench_cmd *c, uint64_t uid)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_CNT_GETALL, BX_ARR);
        bench_arg_int(c, uid);
        return;
    }
    bench_cmd_redis(c, "HGETALL", BX_ARR);
    bench_arg_key(c, KEY, uid);
}

static unsigned cnt_incr(const struct bench_ctx *x, uint64_t key,
                         struct bench_rng *r, struct bench_cmd *out)
{
    incr(x, out, key, (unsigned)bench_rng_below(r, x->types));
    return 1;
}

static unsigned cnt_get(const struct bench_ctx *x, uint64_t key,
                        struct bench_rng *r, struct bench_cmd *out)
{
    get(x, out, key, (unsigned)bench_rng_below(r, x->types));
    return 1;
}

/* 90% reads: 50% GET, 20% TOTAL, 20% GETALL; 10% INCR. */
static unsigned cnt_mix(const struct bench_ctx *x, uint64_t key,
                        struct bench_rng *r, struct bench_cmd *out)
{
    unsigned dice = (unsigned)bench_rng_below(r, 100);
    unsigned type = (unsigned)bench_rng_below(r, x->types);

    if (dice < 50)
        get(x, out, key, type);
    else if (dice < 70)
        total(x, out, key);
    else if (dice < 90)
        getall(x, out, key);
    else
        incr(x, out, key, type);
    return 1;
}

/* Types 0..types-1 set to bench_load_value: CNT.SET per type on unreadd,
 * one HSET of every field and the total on Redis. */
static unsigned cnt_load(const struct bench_ctx *x, uint64_t key,
                         struct bench_cmd *out)
{
    uint64_t sum = 0;

    if (x->dialect == BENCH_UNREADD) {
        for (unsigned t = 0; t < x->types; t++) {
            bench_cmd_unreadd(&out[t], UR_OP_CNT_SET, BX_ARR);
            bench_arg_int(&out[t], key);
            bench_arg_int(&out[t], t);
            bench_arg_int(&out[t], bench_load_value(key, t));
        }
        return x->types;
    }
    bench_cmd_redis(out, "HSET", BX_INT);
    bench_arg_key(out, KEY, key);
    for (unsigned t = 0; t < x->types; t++) {
        bench_arg_int(out, t);
        bench_arg_int(out, bench_load_value(key, t));
        sum += bench_load_value(key, t);
    }
    bench_arg_str(out, "total");
    bench_arg_int(out, sum);
    return 1;
}

const struct bench_workload bench_cnt_workloads[] = {
    {"cnt-incr", "CNT.INCR uid type",
     "EVALSHA <script> 1 u:<uid> type: HINCRBY u:<uid> type 1 and HINCRBY "
     "u:<uid> total 1, atomically",
     incr_script, cnt_incr, cnt_load},
    {"cnt-get", "CNT.GET uid type", "HGET u:<uid> type", NULL, cnt_get,
     cnt_load},
    {"cnt-mix",
     "50% CNT.GET uid type, 20% CNT.TOTAL uid, 20% CNT.GETALL uid, 10% "
     "CNT.INCR uid type",
     "50% HGET u:<uid> type, 20% HGET u:<uid> total, 20% HGETALL u:<uid>, "
     "10% the cnt-incr EVALSHA",
     incr_script, cnt_mix, cnt_load},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
