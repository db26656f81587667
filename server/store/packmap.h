/*
 * packmap.h - a map from u64 keys (uids) to sorted lists of (key, value)
 * pairs, packed a few bytes a pair: FEED's follow lists (per followee an
 * author index and a snapshot of its post count).
 *
 * A pair is a 31-bit key, unique within its list, and a u32 value. A list
 * of one pair is the u64map value itself:
 *
 *     [key: 31 | value: 32 | 1]
 *
 * Longer lists are records of blocks of at most PACKMAP_BLOCK pairs, in
 * ascending key order, with a skip index in front:
 *
 *     u32 n, u32 nb                         pairs, blocks
 *     nb x {u32 first, u32 off}             per block a key <= its first
 *                                           pair's (> the block before's
 *                                           keys), where its bytes start
 *     the blocks, one after the other:
 *       u32 base, u8 k - 1, u8 wo, u8 wv
 *       k pairs of (wo + wv + 7) / 8 bytes each (little-endian): the key
 *       - first in the low wo bits, the value - base above
 *     8 zero bytes
 *
 * Frame of reference (Lucene's FOR blocks): first and base are at most the
 * block's smallest key and value, wo and wv bits hold the offsets from
 * them, so a follow costs what its numbers need: ~3 bytes for 200 random
 * followees out of 100,000 with snapshots under 50, ~1 for followees
 * close in index with equal snapshots. Offsets from first, not gaps
 * between neighbours: pair i sits at a fixed place (a lookup is two
 * binary searches, no decoding in between), and removing a pair leaves the
 * others' bytes as they are.
 *
 * Pairs take whole bytes, so that reading one is an unaligned 8-byte load
 * at i * size and two masks, no bit arithmetic: FEED.UNREAD's inner loop.
 * That costs ~4 bits a pair over packing them bit by bit. A record ends
 * with 8 bytes of padding so that the load never leaves it.
 *
 * Blocks narrow lazily. A delete keeps the block's layout and only moves
 * bytes, so it never allocates and never grows the record; an insert
 * widens a block only when the new pair does not fit in its layout. A
 * block is written at its narrowest when a list is built or rewritten
 * (packmap_set_all, packmap_add_many) and when it splits, merges or
 * widens. What churn leaves wider than needed stays within that block
 * (in FEED: following and unfollowing new authors, whose indices are the
 * highest, widens the last block only), and a snapshot reload packs it
 * tight.
 *
 * Not thread-safe. Iterators are invalidated by the next change of the map.
 */
#ifndef UR_PACKMAP_H
#define UR_PACKMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mem.h"

struct u64map_probe;

#define PACKMAP_KEY_BITS 31
#define PACKMAP_KEY_MAX ((UINT32_C(1) << PACKMAP_KEY_BITS) - 1)
#define PACKMAP_BLOCK 128 /* pairs per block at most */
/* Pairs per list at most (the callers keep to it): block offsets are u32. */
#define PACKMAP_MAX_PAIRS (UINT32_C(1) << 26)

struct packmap;

/* An empty map, or NULL on allocation failure. Its struct is charged to
 * owner and what it allocates to an account of its own under owner
 * (mem.h; NULL: the process total only). */
struct packmap *packmap_create(struct mem_acct *owner);
void packmap_destroy(struct packmap *m);

/* Starts loading uid's map slot into the cache: stages 0 and 1 as
 * u64map_prefetch; stage 2 (reading the slot: issue it later still) the
 * first line of uid's record when it has one (more than one pair). */
void packmap_prefetch(const struct packmap *m, uint64_t uid, int stage);

/* Pairs in uid's list (0 when it has none). O(1). */
uint32_t packmap_count(const struct packmap *m, uint64_t uid);

/* uid's value for key into *val; false when uid has no such pair.
 * O(log n). */
bool packmap_lookup(const struct packmap *m, uint64_t uid, uint32_t key,
                    uint32_t *val);

/* Adds (key, val) to uid's list (key <= PACKMAP_KEY_MAX). 0; 1 when the
 * list has key already (nothing changed); -1 on allocation failure with
 * nothing changed. O(n) bytes moved, O(PACKMAP_BLOCK) pairs re-encoded. */
int packmap_add(struct packmap *m, uint64_t uid, uint32_t key, uint32_t val);

/* Adds the n >= 1 pairs (keys[i], vals[i]) to uid's list, keys strictly
 * ascending and none in the list: one new record. 0, or -1 on allocation
 * failure with nothing changed. O(n + list). */
int packmap_add_many(struct packmap *m, uint64_t uid, uint32_t n,
                     const uint32_t *keys, const uint32_t *vals);

/* Removes uid's pair with this key; true if there was one. Never fails and
 * never allocates: a block only narrows when a pair leaves it. */
bool packmap_del(struct packmap *m, uint64_t uid, uint32_t key);

/*
 * Every value of uid's list := fn(key, ctx), which must answer the same
 * for a key each time it is called (it is called twice per pair: sizing,
 * then writing). 0, or -1 on allocation failure with nothing changed (the
 * list is rewritten into a new record). O(n).
 */
typedef uint32_t (*packmap_val_fn)(uint32_t key, void *ctx);
int packmap_set_all(struct packmap *m, uint64_t uid, packmap_val_fn fn,
                    void *ctx);

/*
 * Loading (snapshots): gives uid, which has no pairs, the list (keys[i],
 * vals[i]) for i < n: 1 <= n, keys strictly ascending and at most
 * PACKMAP_KEY_MAX (the caller validates them). 0; 1 when uid already has
 * pairs (nothing changed); -1 on allocation failure (nothing changed).
 */
int packmap_put(struct packmap *m, uint64_t uid, uint32_t n,
                const uint32_t *keys, const uint32_t *vals);

/* Removes every pair of uid (expiry, USER.DEL); returns how many. Never
 * fails. */
uint32_t packmap_del_user(struct packmap *m, uint64_t uid);

/* Pairs over all lists, and lists (uids with at least one pair). */
size_t packmap_entries(const struct packmap *m);
size_t packmap_users(const struct packmap *m);

/* Bytes held: the struct, the map and the records, its account (requested
 * sizes). */
size_t packmap_bytes(const struct packmap *m);

/* The uid-keyed map under the lists, for its tags only (u64map.h, "Tags":
 * u64map_set_tagged while it is empty): state its owner keeps per user at
 * 2 bytes a slot (FEED: the activity day, days.h). */
struct u64map *packmap_user_map(const struct packmap *m);

/*
 * Checks every invariant: one pair inline and more in records; per record
 * the counts, the index (first keys ascending, offsets where the blocks
 * are), per block 1..PACKMAP_BLOCK pairs in strictly ascending key order,
 * keys below the next block's first, the narrowest widths and the smallest
 * value as base; the pair and byte counts; and calls check(key, val, ctx)
 * on every pair for the caller's own rules, adding what it returns. The
 * number of violations: 0 when healthy. O(pairs).
 */
typedef size_t (*packmap_check_fn)(uint32_t key, uint32_t val, const void *ctx);
size_t packmap_audit(const struct packmap *m, packmap_check_fn check,
                     const void *ctx);

/* ---- Reading ------------------------------------------------------------
 * A list is read block by block: the loop over one block's pairs is the
 * inner loop of FEED.UNREAD, so the block and its pair decoder are inline.
 */

/* One block being read. */
struct packmap_blk {
    const uint8_t *bits; /* its fields */
    uint32_t first;      /* its first key */
    uint32_t base;       /* its smallest value */
    uint32_t k;          /* pairs: 1..PACKMAP_BLOCK (0: an empty list) */
    unsigned wo;         /* key offset bits */
    unsigned size;       /* bytes per pair: (wo + wv + 7) / 8 */
    uint64_t mo, mv;     /* masks of wo and wv bits */
};

/* A cursor over one list: its current block, and the blocks after it. */
struct packmap_iter {
    struct packmap_blk b;
    const uint8_t *rec; /* the record, NULL for an inline pair */
    uint32_t j;         /* b's block number */
    uint32_t i;         /* the next pair of b, for packmap_next */
};

/* 8 zero bytes: the pair (of 0 bytes) of a one-pair list. */
extern const uint8_t packmap_zero8[8];

/* Starts a cursor at uid's first block; the list's pair count (0: it->b.k
 * is 0 and there are no blocks). */
uint32_t packmap_iter_init(const struct packmap *m, uint64_t uid,
                           struct packmap_iter *it);

/* packmap_prefetch and packmap_iter_init over one probe (u64map_probe):
 * the stages 0 to 2 in order, then a cursor on the list of the user the
 * probe found. */
void packmap_probe(const struct packmap *m, uint64_t uid, int stage,
                   struct u64map_probe *p);
uint32_t packmap_iter_probed(const struct u64map_probe *p,
                             struct packmap_iter *it);

/* Moves the cursor to the next block; false when b was the last. */
bool packmap_iter_next_blk(struct packmap_iter *it);

static inline uint64_t packmap_le64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Pair i (< b->k) of a block. */
static inline void packmap_blk_pair(const struct packmap_blk *b, uint32_t i,
                                    uint32_t *key, uint32_t *val)
{
    uint64_t v = packmap_le64(b->bits + (size_t)i * b->size);

    *key = b->first + (uint32_t)(v & b->mo);
    *val = b->base + (uint32_t)((v >> b->wo) & b->mv);
}

/* The cursor's next pair, in ascending key order; false past the last. */
static inline bool packmap_next(struct packmap_iter *it, uint32_t *key,
                                uint32_t *val)
{
    if (it->i == it->b.k && !packmap_iter_next_blk(it))
        return false;
    packmap_blk_pair(&it->b, it->i++, key, val);
    return true;
}

/*
 * Cursor walk over the lists, as u64map_scan (start with *cursor = 0; done
 * when it is 0 again): each call visits up to max uids, each with its
 * pair count and a cursor at its first pair, and returns how many it
 * visited. The callback must not change the map.
 */
typedef void (*packmap_visit_fn)(uint64_t uid, uint32_t n,
                                 struct packmap_iter *it, void *ctx);
size_t packmap_scan(const struct packmap *m, uint64_t *cursor, size_t max,
                    packmap_visit_fn fn, void *ctx);

#endif
