/*
 * u32map.h - a compact map from u64 keys to u32 values: 12 bytes an entry
 * (11 in a map of more than ~100,000 keys, whose buckets keep the top byte
 * of their hashes once) plus ~2-6% slack, for the per-(user, x) tables where a
 * 16-byte u64map slot at 85-90% load (18-19 bytes) is over budget (BC offsets:
 * docs/COMMANDS.md, "BC", goal
 * <= 16 bytes per entry).
 *
 * Any u32 value may be stored, 0 included: presence is the key's, not the
 * value's (unlike u64map). A key is stored as its 64-bit keyed hash, which
 * is a bijection, so keys come back out for scans. A bucket whose prefix
 * has 8 bits or more (a map of 256 buckets or more) stores each hash in 7
 * bytes, their common top byte once in its header.
 *
 * Extendible hashing over sorted buckets: a directory indexed by the top
 * hash bits picks a bucket, a bucket is a sorted array of hashes with the
 * values beside them, sized to its count in x1.125 steps (x1.016 in a
 * tagged map: u32map.c, "Growth steps"). A full bucket
 * splits in two by the next hash bit; sparse buddies merge. No operation
 * moves more than one or two buckets (<= U32MAP_BUCKET_MAX entries) apart
 * from the directory (one pointer per ~400 keys) when it doubles or halves,
 * so the worst pause does not grow with the number of keys.
 *
 * Not thread-safe. Pointers returned by u32map_ref are invalidated by the
 * next put or delete on the same map.
 */
#ifndef UR_U32MAP_H
#define UR_U32MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"

/* A bucket splits when it holds this many entries. */
#define U32MAP_BUCKET_MAX 512u

struct u32map;

/* An empty map, or NULL on allocation failure. It hashes with hash.h's
 * seed (hash_setup), so keys cannot be picked to pile up in one bucket.
 * Its struct is charged to owner and what it allocates to an account of its
 * own under owner (mem.h; NULL: the process total only). */
struct u32map *u32map_create(struct mem_acct *owner);
void u32map_destroy(struct u32map *m);

/* As u32map_create, for a map that keeps a u16 tag beside every value (in
 * a byte while a bucket's tags span fewer than 255 values, else 2: 13 or
 * 14 bytes an entry instead of 12, 12 or 13 in large maps; u32map.c,
 * "Tags"): state its owner reads with the value,
 * such as BC's day of last activity. Only a tagged map may be given to
 * the *_tagged calls; the others work on both (u32map_put sets tag 0). */
struct u32map *u32map_create_tagged(struct mem_acct *owner);

/* A tagged map of keys and tags only, no values (u32map.c, "Tag sets"):
 * ~8.5 bytes an entry in a large map whose tags mostly lie within 255 of
 * each other, ~9.5 otherwise. Its values read 0 and are not stored:
 * u32map_put's val is ignored, and the pointer u32map_ref returns (for
 * presence) may not be written through. The activity table (days.h). */
struct u32map *u32map_create_tagset(struct mem_acct *owner);

/* Pointer to key's value, or NULL when absent. The caller may change the
 * value through it. */
uint32_t *u32map_ref(struct u32map *m, uint64_t key);

/* As u32map_ref, and *tag = its tag (tagged maps only; *tag untouched
 * when key is absent). */
uint32_t *u32map_ref_tagged(struct u32map *m, uint64_t key, uint16_t *tag);

/* Sets key's tag (tagged maps only). 0; 1 when key is absent; -1 on
 * allocation failure (a bucket whose tags no longer fit in bytes is
 * rebuilt with 2-byte tags), nothing changed. Setting tag 0, or a tag some
 * entry of the same bucket already has, never allocates. */
int u32map_set_tag(struct u32map *m, uint64_t key, uint16_t tag);

/* true with *val set when key is present. */
bool u32map_get(const struct u32map *m, uint64_t key, uint32_t *val);

/* true with *tag set when key is present (tagged maps only). */
bool u32map_get_tag(const struct u32map *m, uint64_t key, uint16_t *tag);

/* A hint for a lookup of key soon after, with no effect on the map: stage
 * 0 starts loading key's bucket header, stage 1 (a little later: it reads
 * that header) the lines of the hash and value the search lands on;
 * other stages nothing. */
void u32map_prefetch(const struct u32map *m, uint64_t key, int stage);

/* Sets key to val, inserting when absent. 0, or -1 on allocation failure
 * (map unchanged). */
int u32map_put(struct u32map *m, uint64_t key, uint32_t val);

/* u32map_put with the entry's tag (tagged maps only). */
int u32map_put_tagged(struct u32map *m, uint64_t key, uint32_t val,
                      uint16_t tag);

/* Removes key. true if it was present. Never fails: when a shrink cannot
 * allocate, the bucket just stays larger. */
bool u32map_del(struct u32map *m, uint64_t key);

size_t u32map_count(const struct u32map *m);
/* Bytes requested by the map (struct, directory, buckets): its account. */
size_t u32map_bytes(const struct u32map *m);

/*
 * Cursor walk (as u64map_scan): start with *cursor = 0; each call visits up
 * to max entries and returns how many; *cursor is 0 when the walk is done.
 * The map is kept in hash order and the cursor is the hash of the next
 * entry, so changes between calls never make a walk revisit or miss an
 * entry present for the whole walk. The callback must not change the map.
 */
typedef void (*u32map_visit_fn)(uint64_t key, uint32_t val, void *ctx);
size_t u32map_scan(const struct u32map *m, uint64_t *cursor, size_t max,
                   u32map_visit_fn fn, void *ctx);

/* u32map_scan with each entry's tag (tagged maps only). */
typedef void (*u32map_tag_visit_fn)(uint64_t key, uint32_t val, uint16_t tag,
                                    void *ctx);
size_t u32map_scan_tagged(const struct u32map *m, uint64_t *cursor, size_t max,
                          u32map_tag_visit_fn fn, void *ctx);

/* Checks every structural invariant (order, placement, counts, byte
 * accounting); returns the number of violations, 0 when healthy. O(n). */
size_t u32map_audit(const struct u32map *m);

#endif
