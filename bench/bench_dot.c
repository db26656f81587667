/*
 * bench_dot.c - DOT workloads (red dots: a global push time per dot, a
 * last-click time per user and dot).
 *
 * A key is one click entry, (user k / n, that user's dot number k % n) with
 * n = DOT_PER_USER or --per-user (1 for bench-memory's single-entry
 * shapes), so `-r` counts what `make bench-memory` divides by.
 * There are DOT_DOTS dots; the load step clicks the key's dot at a time
 * spread over the DOT_DOTS minutes after T0 and keys 0..DOT_DOTS-1 also
 * push their dot at T0 + dot minutes, so about half of the preloaded dots
 * show. Operations
 * use the client's clock (ms), the same for both servers; every time is
 * passed explicitly, so both hold the same state whatever the order.
 *
 * Redis model: a hash `dot:click:<uid>` (dot -> click time) per user and
 * one hash `dot:push` (dot -> push time). Times only move forward and a
 * check compares the two, which takes a script on Redis: the functions of
 * library `dot` below (FCALL), each atomic as on unreadd.
 */
#include "bench_workload.h"
#include "ops.h"

#define DOT_PER_USER 4          /* click entries per user (keys per user) */
#define DOT_DOTS 64             /* dots in the application */
#define DOT_CHECKED 4           /* dots one DOT.CHECK asks about */
#define DOT_T0 1700000000000ull /* ms: preloaded times are after this */
#define DOT_MINUTE 60000ull
#define CLICK "dot:click:"
#define PUSH "dot:push"

static const char dot_library[] =
    "#!lua name=dot\n"
    "-- dot:click:<uid>: dot -> click time; dot:push: dot -> push time.\n"
    "-- Both only move forward: field := max(field, ts), the result.\n"
    "local function later(key, field, ts)\n"
    "  local old = tonumber(redis.call('HGET', key, field))\n"
    "  if old and old >= tonumber(ts) then return old end\n"
    "  redis.call('HSET', key, field, ts)\n"
    "  return tonumber(ts)\n"
    "end\n"
    "redis.register_function('dot_click', function(keys, args)\n"
    "  later(keys[1], args[1], args[2])\n"
    "  return 0\n"
    "end)\n"
    "redis.register_function('dot_push', function(keys, args)\n"
    "  return later(keys[1], args[1], args[2])\n"
    "end)\n"
    "redis.register_function('dot_check', function(keys, args)\n"
    "  local c = redis.call('HMGET', keys[1], unpack(args))\n"
    "  local p = redis.call('HMGET', keys[2], unpack(args))\n"
    "  local out = {}\n"
    "  for i = 1, #args do\n"
    "    local pt = tonumber(p[i])\n"
    "    out[i] = (pt and (not c[i] or tonumber(c[i]) < pt)) and 1 or 0\n"
    "  end\n"
    "  return out\n"
    "end)\n";

_Static_assert(DOT_CHECKED + 5 <= BENCH_MAX_ARGS, "FCALL f 2 k k dots");
_Static_assert(BENCH_PER_USER_MAX <= DOT_DOTS, "a user's dots distinct");

/* Click entries per user (keys per user). */
static uint64_t per_user(const struct bench_ctx *x)
{
    return x->per_user ? x->per_user : DOT_PER_USER;
}

/* Dot number j (0..n-1, n entries per user) of a user: distinct for each
 * j, spread over the dots. */
static uint64_t dot_of(uint64_t uid, uint64_t j, uint64_t n)
{
    return (uid * 7 + j * (DOT_DOTS / n)) % DOT_DOTS;
}

/* DOT.CLICK uid dot ts  |  FCALL dot_click 1 dot:click:<uid> dot ts */
static void click(const struct bench_ctx *x, struct bench_cmd *c, uint64_t uid,
                  uint64_t dot, uint64_t ts)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_DOT_CLICK, BX_INT);
        bench_arg_int(c, uid);
    } else {
        bench_cmd_fcall(c, "dot_click", 1, BX_INT);
        bench_arg_key(c, CLICK, uid);
    }
    bench_arg_int(c, dot);
    bench_arg_int(c, ts);
}

/* DOT.PUSH dot ts  |  FCALL dot_push 1 dot:push dot ts */
static void push(const struct bench_ctx *x, struct bench_cmd *c, uint64_t dot,
                 uint64_t ts)
{
    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(c, UR_OP_DOT_PUSH, BX_INT);
    } else {
        bench_cmd_fcall(c, "dot_push", 1, BX_INT);
        bench_arg_str(c, PUSH);
    }
    bench_arg_int(c, dot);
    bench_arg_int(c, ts);
}

/* The key's click entry again, now. */
static unsigned dot_click(const struct bench_ctx *x, uint64_t key,
                          struct bench_rng *r, struct bench_cmd *out)
{
    uint64_t n = per_user(x), uid = key / n;

    (void)r;
    click(x, out, uid, dot_of(uid, key % n, n), bench_clock_ms());
    return 1;
}

/* DOT.CHECK uid d d+1 .. d+3 (mod DOT_DOTS, d random)  |  FCALL dot_check
 * 2 dot:click:<uid> dot:push d ...: one HMGET of each hash. */
static unsigned dot_check(const struct bench_ctx *x, uint64_t key,
                          struct bench_rng *r, struct bench_cmd *out)
{
    uint64_t uid = key / per_user(x), d = bench_rng_below(r, DOT_DOTS);

    if (x->dialect == BENCH_UNREADD) {
        bench_cmd_unreadd(out, UR_OP_DOT_CHECK, BX_ARR);
        bench_arg_int(out, uid);
    } else {
        bench_cmd_fcall(out, "dot_check", 2, BX_ARR);
        bench_arg_key(out, CLICK, uid);
        bench_arg_str(out, PUSH);
    }
    for (unsigned i = 0; i < DOT_CHECKED; i++)
        bench_arg_int(out, (d + i) % DOT_DOTS);
    return 1;
}

/* A global push of dot key % DOT_DOTS, now. */
static unsigned dot_push(const struct bench_ctx *x, uint64_t key,
                         struct bench_rng *r, struct bench_cmd *out)
{
    (void)r;
    push(x, out, key % DOT_DOTS, bench_clock_ms());
    return 1;
}

/* The key's click at T0 + (a spread over DOT_DOTS minutes); keys below
 * DOT_DOTS also push dot `key` at T0 + key minutes. */
static unsigned dot_load(const struct bench_ctx *x, uint64_t key,
                         struct bench_cmd *out)
{
    uint64_t n = per_user(x), uid = key / n;
    uint64_t ts = DOT_T0 + key * 7919 % (DOT_DOTS * DOT_MINUTE);

    click(x, out, uid, dot_of(uid, key % n, n), ts);
    if (key >= DOT_DOTS)
        return 1;
    push(x, &out[1], key, DOT_T0 + key * DOT_MINUTE);
    return 2;
}

const struct bench_workload bench_dot_workloads[] = {
    {"dot-click", "DOT.CLICK uid dot ts (the key's click entry, ts = now)",
     "FCALL dot_click 1 dot:click:<uid> dot ts: HGET, then HSET when later",
     dot_library, dot_click, dot_load},
    {"dot-check", "DOT.CHECK uid d d+1 d+2 d+3 (4 of 64 dots)",
     "FCALL dot_check 2 dot:click:<uid> dot:push d ...: HMGET of each "
     "hash; shows = pushed and (never clicked or click < push)",
     dot_library, dot_check, dot_load},
    {"dot-push", "DOT.PUSH dot ts (global, ts = now)",
     "FCALL dot_push 1 dot:push dot ts: HGET, then HSET when later; the "
     "push time after the call",
     dot_library, dot_push, dot_load},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
