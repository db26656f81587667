/*
 * bench_workload.h - the workload table of unread-bench.
 *
 * A workload is a row: a name, what it does on each side, the Lua script
 * the Redis side needs (loaded once with SCRIPT LOAD, run with EVALSHA),
 * and two functions:
 *
 *   op    one operation on key `key`, built for the context's dialect
 *         (unreadd commands, whichever protocol carries them, or Redis
 *         commands). It draws its random choices (counter type, op mix)
 *         from r the same way for both dialects, so both servers get the
 *         same stream of work for the same seed.
 *   load  the preload of key `key`: the state every key holds before a run
 *         (and the data of `make bench-memory`). Deterministic in the key,
 *         but for clock readings (CONV's seqs, GRP's ts).
 *
 * An op may emit up to BENCH_OP_MAX commands, a load step up to
 * BENCH_LOAD_MAX (for example unreadd sets two counters with two CNT.SET
 * where Redis sets the hash with one HSET; an RCPT group is built whole by
 * one step, its joins before its sends). A load step may emit nothing (a
 * key whose state another key's step builds). Every command counts as one
 * request in the figures.
 *
 * Adding a family's workloads: a file bench/bench_<family>.c holding its
 * rows in `const struct bench_workload bench_<family>_workloads[]` (ended
 * by a row whose name is NULL), one extern line below and one line in the
 * registry of bench_workload.c, and a section in docs/PERFORMANCE.md.
 */
#ifndef BENCH_WORKLOAD_H
#define BENCH_WORKLOAD_H

#include <stdint.h>
#include <stdio.h>

#include "bench_keys.h"
#include "bench_wire.h"

#define BENCH_OP_MAX 104      /* commands one operation may send */
#define BENCH_LOAD_MAX 4096   /* commands one load step may send */
#define BENCH_TYPES_MAX 8     /* --types: counter types in play */
#define BENCH_SHA_LEN 40      /* a Redis script's SHA1 in hex */
#define BENCH_PER_USER_MAX 64 /* --per-user: DOT has 64 dots */

/* What a row's functions may read. */
struct bench_ctx {
    enum bench_dialect dialect;
    unsigned types; /* counter types in play: 0..types-1 */
    /* --per-user: entries per user of the rows whose key is one entry
     * (DOT's clicks, FEED's follows): key k is entry k % per_user of user
     * k / per_user. 0: the row's own (DOT 4, FEED 200). */
    unsigned per_user;
    char sha[BENCH_SHA_LEN + 1]; /* Redis: the row's script, once loaded */
};

struct bench_workload {
    const char *name;    /* "cnt-incr" */
    const char *unreadd; /* what one operation sends to unreadd */
    const char *redis;   /* the Redis equivalent */
    const char *script;  /* Redis Lua script, NULL when none */
    unsigned (*op)(const struct bench_ctx *x, uint64_t key, struct bench_rng *r,
                   struct bench_cmd *out);
    unsigned (*load)(const struct bench_ctx *x, uint64_t key,
                     struct bench_cmd *out);
};

/* The families' rows (one line per family). */
/* One table per family of server/store/families.def, in bench_<f>.c. */
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    extern const struct bench_workload bench_##f##_workloads[];
#include "families.def"
#undef FAMILY
/* USER: over every family (bench_user.c). */
extern const struct bench_workload bench_user_workloads[];

/* The row named `name`, or NULL. */
const struct bench_workload *bench_workload_find(const char *name);

/* Prints every row: name, unreadd side, Redis side. */
void bench_workload_list(FILE *f);

/* The value preloaded into counter `type` of key `key`: small (1..9) and
 * varied, the same for every family that preloads counts. */
uint32_t bench_load_value(uint64_t key, unsigned type);

/* The wall clock in ms since the Unix epoch: unreadd's ts. */
uint64_t bench_clock_ms(void);

#endif
