/*
 * bench_bc.c - BC workloads (broadcast channels).
 *
 * Channels 0..types-1; every user is registered in each. Redis model: per
 * channel a head `bh:<ch>` (INCR) and a hash `bo:<ch>` of uid -> the head
 * when the user last read. BC.PUBLISH is then a plain INCR, O(1) on both
 * servers; BC.UNREAD (which registers an unknown user at the head) and
 * BC.READ are functions of library `bc` below (FCALL), atomic as on
 * unreadd. What BC saves is the fan-out a per-user counter would need (one
 * write per user per publish): bench/bc_scale.py shows publish costing the
 * same with 1M and 10M users, and what the fan-out would cost.
 */
#include "bench_workload.h"
#include "ops.h"

#define HEAD "bh:"
#define OFFSETS "bo:"

_Static_assert(BENCH_TYPES_MAX <= BENCH_LOAD_MAX,
               "bc_load: a read per channel");

static const char bc_library[] =
    "#!lua name=bc\n"
    "-- bh:<ch>: the channel's head; bo:<ch>: uid -> the head when the user\n"
    "-- last read.\n"
    "redis.register_function('bc_unread', function(keys, args)\n"
    "  local head = tonumber(redis.call('GET', keys[1])) or 0\n"
    "  local off = redis.call('HGET', keys[2], args[1])\n"
    "  if off then return head - tonumber(off) end\n"
    "  redis.call('HSET', keys[2], args[1], head)\n"
    "  return 0\n"
    "end)\n"
    "redis.register_function('bc_read', function(keys, args)\n"
    "  redis.call('HSET', keys[2], args[1], redis.call('GET', keys[1]) or 0)\n"
    "  return 0\n"
    "end)\n";

/* BC.PUBLISH ch  |  INCR bh:<ch> */
static void publish(const struct bench_ctx *x, struct bench_cmd *c, uint64_t ch)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_BC_PUBLISH, BX_INT);
        bench_arg_int(c, ch);
        return;
    }
    bench_cmd_redis(c, "INCR", BX_INT);
    bench_arg_key(c, HEAD, ch);
}

/* BC.<CMD> uid ch  |  FCALL bc_<fn> 2 bh:<ch> bo:<ch> uid */
static void user_cmd(const struct bench_ctx *x, struct bench_cmd *c,
                     uint16_t op, const char *fn, uint64_t uid, uint64_t ch)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, op, BX_INT);
        bench_arg_int(c, uid);
        bench_arg_int(c, ch);
        return;
    }
    bench_cmd_fcall(c, fn, 2, BX_INT);
    bench_arg_key(c, HEAD, ch);
    bench_arg_key(c, OFFSETS, ch);
    bench_arg_int(c, uid);
}

/* A publish to a random channel: the key plays no part. */
static unsigned bc_publish(const struct bench_ctx *x, uint64_t key,
                           struct bench_rng *r, struct bench_cmd *out)
{
    (void)key;
    publish(x, out, bench_rng_below(r, x->types));
    return 1;
}

static unsigned bc_unread(const struct bench_ctx *x, uint64_t key,
                          struct bench_rng *r, struct bench_cmd *out)
{
    user_cmd(x, out, UR_OP_BC_UNREAD, "bc_unread", key,
             bench_rng_below(r, x->types));
    return 1;
}

static unsigned bc_read(const struct bench_ctx *x, uint64_t key,
                        struct bench_rng *r, struct bench_cmd *out)
{
    user_cmd(x, out, UR_OP_BC_READ, "bc_read", key,
             bench_rng_below(r, x->types));
    return 1;
}

/* Registers key in every channel at its head: BC.READ  |  FCALL bc_read. */
static unsigned bc_load(const struct bench_ctx *x, uint64_t key,
                        struct bench_cmd *out)
{
    for (unsigned ch = 0; ch < x->types; ch++)
        user_cmd(x, &out[ch], UR_OP_BC_READ, "bc_read", key, ch);
    return x->types;
}

const struct bench_workload bench_bc_workloads[] = {
    {"bc-publish", "BC.PUBLISH ch", "INCR bh:<ch>", bc_library, bc_publish,
     bc_load},
    {"bc-unread", "BC.UNREAD uid ch",
     "FCALL bc_unread 2 bh:<ch> bo:<ch> uid: GET head, HGET offset; head - "
     "offset, or HSET offset = head and 0 for a new user",
     bc_library, bc_unread, bc_load},
    {"bc-read", "BC.READ uid ch",
     "FCALL bc_read 2 bh:<ch> bo:<ch> uid: HSET offset = GET head", bc_library,
     bc_read, bc_load},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
