/*
 * listmap.h - a map from u64 keys (uids) to small sorted lists of u64
 * entries, the per-user container of DOT (a click time per dot) and GRP (a
 * membership per group). FEED packs its lists tighter: packmap.h.
 *
 * An entry is a u64 that the caller builds: its top `keybits` bits are the
 * entry's key (a dense dot or author index), unique within one list; bit 0
 * is always 1; the bits between are the caller's payload. Lists are kept in
 * ascending entry order, which is key order.
 *
 * Layout, and why it is small: a list of one entry is stored inline as the
 * u64map value itself (the set bit 0 tells it from a pointer, and keeps it
 * non-zero); a longer list is a malloc'd record of exact size (an 8-byte
 * header and 8 bytes per entry). A user with one entry costs one map slot;
 * with n entries, one slot plus 8 + 8n bytes. An empty list has no map
 * entry at all.
 *
 * Not thread-safe. Entry pointers returned here are invalidated by the next
 * listmap_add or listmap_del on the same map.
 */
#ifndef UR_LISTMAP_H
#define UR_LISTMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"

struct listmap;

/* An empty map whose entries have keybits-bit keys (1..62), or NULL on
 * allocation failure. Its struct is charged to owner and what it allocates
 * to an account of its own under owner (mem.h; NULL: the process total
 * only). */
struct listmap *listmap_create(struct mem_acct *owner, unsigned keybits);
void listmap_destroy(struct listmap *m);

/*
 * uid's entries in ascending order, *e pointing to them (to *one for a
 * one-entry list); the count, 0 when uid has none. Read-only; valid until
 * the list changes.
 */
uint32_t listmap_get(const struct listmap *m, uint64_t uid, const uint64_t **e,
                     uint64_t *one);

/* uid's entries for changing their payloads in place (keys and bit 0 must
 * stay as they are); the count, 0 when uid has none. */
uint32_t listmap_edit(struct listmap *m, uint64_t uid, uint64_t **e);

/* Starts loading uid's map slot into the cache: stages 0 and 1 as
 * u64map_prefetch; stage 2 (reading the slot: issue it later still) the
 * first line of uid's list when it is out of line. */
void listmap_prefetch(const struct listmap *m, uint64_t uid, int stage);

/* uid's entry with this key into *entry; false when there is none.
 * O(log n). */
bool listmap_lookup(const struct listmap *m, uint64_t uid, uint64_t key,
                    uint64_t *entry);

/* The entry of uid with this key, for changing its payload in place (key
 * and bit 0 must stay), or NULL when there is none. O(log n). */
uint64_t *listmap_find(struct listmap *m, uint64_t uid, uint64_t key);

/* Adds entry to uid's list; its key must not be in the list (listmap_find
 * first). 0, or -1 on allocation failure with nothing changed. O(n). */
int listmap_add(struct listmap *m, uint64_t uid, uint64_t entry);

/* Removes uid's entry with this key. true if there was one. Never fails
 * (a record that cannot shrink keeps its block). O(n). */
bool listmap_del(struct listmap *m, uint64_t uid, uint64_t key);

/*
 * Loading (snapshots): gives uid, which has no entries, the list e[0..n)
 * in one map insert. 1 <= n, every entry with bit 0 set, keys strictly
 * ascending: the caller validates them. 0; 1 when uid already has entries
 * (nothing changed); -1 on allocation failure (nothing changed).
 */
int listmap_put(struct listmap *m, uint64_t uid, const uint64_t *e, uint32_t n);

/*
 * Cursor walk over the lists, as u64map_scan (start with *cursor = 0; done
 * when it is 0 again): each call visits up to max users with their
 * entries, ascending, and returns how many it visited. The callback must
 * not change the map.
 */
typedef void (*listmap_visit_fn)(uint64_t uid, uint32_t n, const uint64_t *e,
                                 void *ctx);
size_t listmap_scan(const struct listmap *m, uint64_t *cursor, size_t max,
                    listmap_visit_fn fn, void *ctx);

/* Entries over all lists, and lists (users with at least one entry). */
size_t listmap_entries(const struct listmap *m);
size_t listmap_users(const struct listmap *m);

/* Bytes held: the struct, the map and the records, its account (requested
 * sizes; malloc's own per-block overhead, 8-16 bytes per record in glibc,
 * is not counted). */
size_t listmap_bytes(const struct listmap *m);

/*
 * Checks every invariant: entries with bit 0 set, strictly ascending keys,
 * one-entry lists inline and longer ones in records, the entry and byte
 * counts; and calls check(entry, ctx) on every entry for the caller's own
 * rules (a key within its index range, ...), adding what it returns. The
 * number of violations: 0 when healthy. O(entries).
 */
typedef size_t (*listmap_check_fn)(uint64_t entry, const void *ctx);
size_t listmap_audit(const struct listmap *m, listmap_check_fn check,
                     const void *ctx);

/* Removes every entry of uid (expiry, USER.DEL); returns how many. Never
 * fails. O(1) plus the free of the user's record. */
uint32_t listmap_del_user(struct listmap *m, uint64_t uid);

#endif
