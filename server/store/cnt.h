/*
 * cnt.h - CNT, typed unread counters per user (docs/COMMANDS.md, "CNT").
 *
 * Per user, up to 64 counter types (0..63), each an unsigned 32-bit value
 * that saturates at UINT32_MAX and floors at 0. The total is the sum of the
 * parts, derived from the same record in the same call, so the badge and
 * its parts can never disagree. A user whose counters are all zero holds no
 * memory.
 *
 * Plain data structure: no requests, no sockets.
 */
#ifndef UR_CNT_H
#define UR_CNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64map_probe;

#define CNT_TYPES 64
#define CNT_VALUE_MAX UINT32_MAX

struct cnt_store;

struct cnt_store *cnt_create(void);
void cnt_destroy(struct cnt_store *s);

/*
 * The mutators return 0 and set *value (the type's value after) and *total
 * (the user's total after), or -1 on allocation failure with nothing changed.
 * type must be < CNT_TYPES.
 */
int cnt_incr(struct cnt_store *s, uint64_t uid, unsigned type, uint64_t delta,
             uint32_t *value, uint64_t *total);
int cnt_decr(struct cnt_store *s, uint64_t uid, unsigned type, uint64_t delta,
             uint32_t *value, uint64_t *total);
int cnt_set(struct cnt_store *s, uint64_t uid, unsigned type, uint32_t v,
            uint32_t *value, uint64_t *total);

/*
 * Notices read once (notice.h). incr_notice: cnt_incr counting notice nid
 * of (uid, type) once: when the type remembers nid (unread or read)
 * nothing changes; else the counter grows by delta (saturating) and nid
 * is remembered unread with the delta applied. ack: when (uid, type)
 * holds nid unread, its delta comes off the counter (flooring at 0) and it
 * is read; read already, nothing changes; unknown, it is remembered read
 * (a late incr_notice of it adds nothing). Both set *value and *total
 * after and return 0, or -1 on allocation failure with nothing changed.
 * cnt_set and cnt_clear mark the notices of the types they set read.
 */
int cnt_incr_notice(struct cnt_store *s, uint64_t uid, unsigned type,
                    uint64_t delta, uint64_t nid, uint32_t *value,
                    uint64_t *total);
int cnt_ack(struct cnt_store *s, uint64_t uid, unsigned type, uint64_t nid,
            uint32_t *value, uint64_t *total);

/* The store's notices, for USER.INFO and snapshots (notice.h). */
struct notice_set;
const struct notice_set *cnt_notices(const struct cnt_store *s);
struct notice_set *cnt_notices_mut(struct cnt_store *s);

/* Zeroes every type whose bit is set in mask; returns the total after.
 * Never allocates. */
uint64_t cnt_clear(struct cnt_store *s, uint64_t uid, uint64_t mask);

uint32_t cnt_get(const struct cnt_store *s, uint64_t uid, unsigned type);

/* Starts loading uid's record into the cache, for a command about uid
 * soon after, in the stages of db_prefetch_user: 0 and 1 as u64map_prefetch,
 * 2 the user's record when out of line (3 or more types). */
void cnt_prefetch_user(const struct cnt_store *s, uint64_t uid, int stage);

uint64_t cnt_total(const struct cnt_store *s, uint64_t uid);

/* cnt_prefetch_user and cnt_total over one probe (u64map_probe): the
 * stages 0 to 2 in order, then the total of the user the probe found. */
void cnt_probe_user(const struct cnt_store *s, uint64_t uid, int stage,
                    struct u64map_probe *p);
uint64_t cnt_total_probed(const struct u64map_probe *p);

/* Fills types[]/vals[] (CNT_TYPES entries each) with the non-zero types in
 * ascending order; returns how many. */
unsigned cnt_getall(const struct cnt_store *s, uint64_t uid, uint8_t *types,
                    uint32_t *vals);

size_t cnt_entries(const struct cnt_store *s);
/* Bytes held: table plus out-of-line records. */
size_t cnt_bytes(const struct cnt_store *s);

/*
 * Walk for snapshots, audits and expiry (see u64map_scan): calls fn once per
 * user with its non-zero types.
 */
typedef void (*cnt_visit_fn)(uint64_t uid, unsigned n, const uint8_t *types,
                             const uint32_t *vals, void *ctx);
size_t cnt_scan(const struct cnt_store *s, uint64_t *cursor, size_t max,
                cnt_visit_fn fn, void *ctx);

/*
 * Loading (snapshots): gives a user absent from the store the counters a
 * cnt_scan visit reported, in one map insert. types strictly ascending and
 * < CNT_TYPES, vals non-zero, 1 <= n <= CNT_TYPES: the caller validates
 * them. 0; 1 when uid already has counters (nothing changed); -1 on
 * allocation failure (nothing changed).
 */
int cnt_put_user(struct cnt_store *s, uint64_t uid, unsigned n,
                 const uint8_t *types, const uint32_t *vals);

/* Checks internal invariants (no zero stored values, canonical encoding).
 * Returns the number of users that violate them (0 when healthy). */
size_t cnt_audit(const struct cnt_store *s);

/*
 * Additions to the contract above: the mutators also return -1, storing
 * nothing, for type >= CNT_TYPES (cnt_get then answers 0). cnt_bytes counts
 * requested sizes (malloc's per-block overhead excluded). A user with one or
 * two types (values < 2^25) or three (values < 2^14) costs one map slot
 * (~20 bytes) and nothing else; others add a record of 8 + 4 bytes a type.
 * cnt_audit also counts the map's structural violations (u64map_audit) and a
 * record byte count that disagrees with the records.
 */

/* Forgets every counter and notice of uid (expiry, USER.DEL): 1 if it had
 * any (its one entry), else 0.
 * Never fails. (cnt_getall describes a user for USER.INFO.) */
size_t cnt_forget_user(struct cnt_store *s, uint64_t uid);

#endif
