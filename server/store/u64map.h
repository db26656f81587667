/*
 * u64map.h - a compact map from u64 keys to non-zero u64 values, the
 * container under every per-user family.
 *
 * 16 bytes per slot (the key's hash, value), value 0 marks an empty slot, so
 * "absent" and "zero" are the same thing: callers delete instead of storing 0.
 * Open addressing with Robin Hood linear probing inside segments of bounded
 * size; a directory (extendible hashing) picks the segment from the top hash
 * bits. A full segment grows or splits on its own, so no insert ever moves
 * more than one segment's worth of slots: the worst pause does not grow with
 * the number of keys. Load stays between ~0.85 and ~0.9 (down to 0.4
 * after deletes).
 *
 * Not thread-safe. Pointers returned by u64map_ref are invalidated by the
 * next insert or delete on the same map.
 */
#ifndef UR_U64MAP_H
#define UR_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"

struct u64map;

/* An empty map, or NULL on allocation failure. Its struct is charged to
 * owner and what it allocates to an account of its own under owner
 * (mem.h; NULL: the process total only). */
struct u64map *u64map_create(struct mem_acct *owner);
void u64map_destroy(struct u64map *m);

/* The value for key, or 0 when absent. */
uint64_t u64map_get(const struct u64map *m, uint64_t key);

/*
 * Hints for a lookup of key soon after, with no effect on the map: stage 0
 * starts loading the header of key's segment, stage 1 (which reads that
 * header: issue it a little later) the cache lines of key's home slot and
 * the next (at ~0.9 load a key sits a few slots past its home, often on
 * the next line). Other stages do nothing here: the maps built on u64map
 * use stage 2 for what the value points to. server/net.c issues them a few
 * requests ahead, so that the misses of a pipelined read overlap instead
 * of queueing.
 */
void u64map_prefetch(const struct u64map *m, uint64_t key, int stage);

/*
 * Maps of records (packmap, memblist): each value is either a
 * small value inline, low bit set, or a pointer to an out-of-line record,
 * low bit clear. u64map_prefetch_rec is u64map_prefetch plus stage 2,
 * the record key's value points to; u64map_each_rec calls fn on every
 * record (to free them all before u64map_destroy).
 */
void u64map_prefetch_rec(const struct u64map *m, uint64_t key, int stage);
void u64map_each_rec(const struct u64map *m, void (*fn)(void *rec, void *ctx),
                     void *ctx);

/*
 * A lookup in the stages of u64map_prefetch that keeps each stage's work
 * for the next, for pipelines over many keys (USER.MBADGE): the key is
 * hashed once and its slot searched once. Stage 0 hashes the key, finds
 * its segment and starts loading the segment's header; stage 1 (reading
 * that header: a little later) the lines of the key's home slot; stage 2
 * (later still) searches the segment: p->val is the key's value, 0 when
 * absent. u64map_probe_rec adds to stage 2 the record the value points to,
 * as u64map_prefetch_rec. Stages run in order, each once, on the same
 * probe, and the map must not change between stage 0 and the last use of
 * p->val; other stages do nothing.
 */
struct u64map_probe {
    uint64_t h;      /* the key's hash */
    const void *seg; /* its segment, NULL in a map with none */
    uint64_t val;    /* stage 2 on: the value, 0 when absent */
};
void u64map_probe(const struct u64map *m, uint64_t key, int stage,
                  struct u64map_probe *p);
void u64map_probe_rec(const struct u64map *m, uint64_t key, int stage,
                      struct u64map_probe *p);

/* Pointer to key's value slot, or NULL when absent. The caller may change
 * the value to any non-zero value through it (to 0: use u64map_del). */
uint64_t *u64map_ref(struct u64map *m, uint64_t key);

/* Sets key to val (val != 0), inserting when absent. 0, or -1 on allocation
 * failure (map unchanged). */
int u64map_put(struct u64map *m, uint64_t key, uint64_t val);

/* Removes key. true if it was present. */
bool u64map_del(struct u64map *m, uint64_t key);

size_t u64map_count(const struct u64map *m);
/* Bytes allocated by the map itself (struct, segments and directory): its
 * account (mem.h). */
size_t u64map_bytes(const struct u64map *m);

/*
 * Cursor walk (like Redis SCAN): start with *cursor = 0; each call visits up
 * to `max` entries and returns how many; *cursor becomes 0 when the walk is
 * done. Entries present for the whole walk are visited at least once;
 * the callback must not insert or delete.
 */
typedef void (*u64map_visit_fn)(uint64_t key, uint64_t val, void *ctx);
size_t u64map_scan(const struct u64map *m, uint64_t *cursor, size_t max,
                   u64map_visit_fn fn, void *ctx);

/*
 * Additions to the contract above.
 *
 * Scan, precisely: the map is kept in the order of a keyed 64-bit bijective
 * hash and the cursor is the hash of the next entry to visit, so inserts,
 * deletes, growth, splits and merges between calls never make a walk
 * revisit or miss anything: an entry present for the whole walk is visited
 * exactly once, one inserted or deleted during the walk at most once. Every
 * call with max >= 1 either ends the walk or advances the cursor past at
 * least one entry, so a walk ends. max == 0 visits nothing and leaves the
 * cursor unchanged. A call may step over many empty segments but examines
 * at most max entries plus the slots of the segments it passes through.
 * Cursors are only meaningful for the map (and seed) that produced them.
 *
 * u64map_bytes counts the map struct, the directory, the segments (requested
 * sizes for small ones; whole pages for large ones, which are mapped
 * directly so that the process RSS follows the count) and at most one spare
 * mapping kept for the next rebuild (<= 64 KiB, dropped when the map
 * empties). Per entry: 18-19 bytes at any size.
 */

/* A map hashes with the seed of hash.h (hash_setup) when it is created.
 * This sets another, only while the map is empty: 0, or -1 when it holds
 * entries. */
int u64map_seed(struct u64map *m, uint64_t seed);

struct u64map_stats {
    size_t count;    /* entries */
    size_t bytes;    /* as u64map_bytes */
    size_t slots;    /* allocated slots: count / slots is the load */
    size_t segments; /* segments in use */
    unsigned depth;  /* directory depth: 1 << depth directory entries */
};
void u64map_stats(const struct u64map *m, struct u64map_stats *st);

/*
 * Tags (u64map.c, "Tags"): a map made tagged, while it is still empty,
 * keeps a u16 beside every value, 0 for a new key, kept by u64map_put and
 * u64map_ref's changes, dropped with the key: 2 bytes a slot (~2.3 an
 * entry) on top of the 16. u64map_set_tagged: 0, or -1 when the map is not
 * empty. Only a tagged map may be given to the other calls here.
 *
 * u64map_on_drop: drop (NULL: none) is called by u64map_del with the key
 * and its tag when the tag was not 0, after the delete (it may not change
 * this map); not by u64map_destroy.
 */
typedef void (*u64map_tag_fn)(uint64_t key, uint16_t tag, void *ctx);
int u64map_set_tagged(struct u64map *m);
void u64map_on_drop(struct u64map *m, u64map_tag_fn drop, void *ctx);
/* false when key is absent; else true and *tag. */
bool u64map_get_tag(const struct u64map *m, uint64_t key, uint16_t *tag);
/* Sets key's tag: false (nothing changed) when key is absent. */
bool u64map_set_tag(struct u64map *m, uint64_t key, uint16_t tag);
/* Entries whose tag is not 0. O(1). */
size_t u64map_tagged(const struct u64map *m);
/* u64map_scan's walk (the same cursor), calling fn only for the entries
 * whose tag is not 0: looks at up to max entries, returns how many. */
size_t u64map_scan_tags(const struct u64map *m, uint64_t *cursor, size_t max,
                        u64map_tag_fn fn, void *ctx);

/* Checks every structural invariant (order, placement, counts, accounting).
 * Returns the number of violations: 0 when healthy. O(n), for tests and
 * DEBUG AUDIT. */
size_t u64map_audit(const struct u64map *m);

#endif
