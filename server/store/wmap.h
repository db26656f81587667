/*
 * wmap.h - a compact map from u64 keys to 16-byte values (two u64 words):
 * u64map's wider sibling, for records that do not fit in one word.
 *
 * Why it exists: u64map's 16-byte slot holds a key and one word. A record
 * of three words (a key and two) stored out of line behind that word costs
 * the slot (~20 bytes) plus the record and its allocation (~32): over 50
 * bytes for 24 of payload. Here the whole record sits in the table: ~27
 * bytes per entry at any size, table overhead included.
 *
 * Layout: entries live in small sorted buckets (about 16 entries, a few
 * hundred bytes each); a u64map indexes the buckets. Buckets are split and
 * merged one at a time as the map grows and shrinks (linear hashing), so no
 * insert or delete ever moves more than one or two buckets: the worst pause
 * does not grow with the number of keys.
 *
 * Keys are hashed with hash.h's keyed bijection (seeded by hash_setup), so
 * ids chosen by clients cannot pile up in one bucket.
 *
 * Not thread-safe. A value pointer returned by wmap_get, wmap_ref or
 * wmap_add is invalidated by the next wmap_add or wmap_del on the same map.
 */
#ifndef UR_WMAP_H
#define UR_WMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"
#include "u64map.h"

struct wmap_val {
    uint64_t a, b;
};

struct wmap;

/* An empty map, or NULL on allocation failure. Its struct is charged to
 * owner and what it allocates to an account of its own under owner
 * (mem.h; NULL: the process total only). */
struct wmap *wmap_create(struct mem_acct *owner);
/* Frees the map (not whatever its values point to). NULL is a no-op. */
void wmap_destroy(struct wmap *m);

/* key's value, or NULL when absent. */
const struct wmap_val *wmap_get(const struct wmap *m, uint64_t key);
/* The same, writable in place. */
struct wmap_val *wmap_ref(struct wmap *m, uint64_t key);

/*
 * A hint for a lookup of key soon after, with no effect on the map: stage
 * 0 starts loading key's bucket index entry, stage 1 (issue it a little
 * later: it reads that entry) the bucket's first lines, where the search
 * lands. As u64map_prefetch. A caller that can issue more stages, each a
 * little after the one before, issues 2 and 3 in place of 1: 2 loads the
 * bucket's header (reading the index entry), 3 exactly the lines of its
 * entries (reading the header), a third of stage 1's lines on average.
 */
void wmap_prefetch(const struct wmap *m, uint64_t key, int stage);

/*
 * A lookup in stages that keeps each stage's work for the next (as
 * u64map_probe), for pipelines over many keys (USER.MBADGE): stage 0
 * hashes the key and starts loading its bucket's index entry (the index's
 * segment header), 1 the entry's lines, 2 reads the entry and loads the
 * bucket's header, 3 reads the header and loads the lines of its entries;
 * then wmap_get_probed answers as wmap_get. Stages run in order, each
 * once, on the same probe, and the map must not change between stage 0
 * and wmap_get_probed.
 */
struct wmap_probe {
    uint64_t h;              /* the key's hash */
    struct u64map_probe dir; /* its bucket's index entry */
};
void wmap_probe(const struct wmap *m, uint64_t key, int stage,
                struct wmap_probe *p);
const struct wmap_val *wmap_get_probed(const struct wmap_probe *p);

/*
 * key's value, inserting {0, 0} when absent (*created tells which). NULL on
 * allocation failure, map unchanged. Unlike u64map, a zero value is a value:
 * entries exist until wmap_del.
 */
struct wmap_val *wmap_add(struct wmap *m, uint64_t key, bool *created);

/* Removes key; true if it was present. Never allocates. */
bool wmap_del(struct wmap *m, uint64_t key);

size_t wmap_count(const struct wmap *m);
/* Bytes requested by the map (struct, bucket index, buckets): its
 * account. */
size_t wmap_bytes(const struct wmap *m);

/*
 * Cursor walk in hash order, with u64map_scan's contract: start with
 * *cursor = 0; each call visits up to max entries and returns how many;
 * *cursor is 0 again when the walk is done. An entry present for the whole
 * walk is visited exactly once, whatever inserts, deletes, splits and merges
 * happen between calls; the callback itself must not insert or delete.
 */
typedef void (*wmap_visit_fn)(uint64_t key, const struct wmap_val *v,
                              void *ctx);
size_t wmap_scan(const struct wmap *m, uint64_t *cursor, size_t max,
                 wmap_visit_fn fn, void *ctx);

struct wmap_stats {
    size_t count;   /* entries */
    size_t bytes;   /* as wmap_bytes */
    size_t buckets; /* non-empty buckets */
    unsigned level; /* buckets have `level` or `level + 1` prefix bits */
};
void wmap_stats(const struct wmap *m, struct wmap_stats *st);

/* Checks every structural invariant (bucket placement and order, counts,
 * byte accounting, the index's own). Returns the number of violations, 0
 * when healthy. O(n): for tests and DEBUG AUDIT. */
size_t wmap_audit(const struct wmap *m);

#endif
