/*
 * memblist.h - a map from u64 keys (uids) to small sorted lists of
 * memberships, GRP's per-user container: each entry a 30-bit key (a dense
 * group index), a flag bit (muted) and a 32-bit value (the low 32 bits of
 * the seq seen), packed in the fewest bytes the list's own contents need.
 *
 * Entries travel as u64, key << 34 | flag << 33 | value << 1 | 1
 * (ML_ENTRY), the shape GRP's callers and snapshot section use.
 *
 * Layout: a list of one entry is stored inline as the u64map value itself
 * (bit 0 set tells it from a pointer). A longer list is a record of exact
 * size: an 8-byte header (count, widths, base key) then the n key fields
 * (key - base) << 1 | flag, each in wk bytes, then the n values, each in wv
 * bytes; wk and wv (1..4) are the widths of the record's largest field and
 * value. A list of eight groups close together whose members have seen
 * fewer than 256 posts costs 8 + 8 x 2 = 24 bytes, not the 8 + 8 x 8 of a
 * record of 8-byte entries; seqs up to 65,535 make it 32, up to 2^24 40.
 * Widths only grow with the contents (a delete keeps them); a value that
 * does not fit re-encodes the record wider (memblist_set, memblist_fit),
 * the one change of a value that can fail.
 *
 * Not thread-safe. An iterator is valid until the list next changes
 * (memblist_put_at excepted).
 */
#ifndef UR_MEMBLIST_H
#define UR_MEMBLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"

struct u64map_probe;

#define ML_KEY_BITS 30
#define ML_KEY_SHIFT 34
#define ML_FLAG (UINT64_C(1) << 33)

static inline uint64_t ML_ENTRY(uint32_t key, bool flag, uint32_t val)
{
    return (uint64_t)key << ML_KEY_SHIFT | (flag ? ML_FLAG : 0) |
           (uint64_t)val << 1 | 1;
}

static inline uint32_t ml_key(uint64_t e)
{
    return (uint32_t)(e >> ML_KEY_SHIFT);
}

static inline uint32_t ml_val(uint64_t e)
{
    return (uint32_t)(e >> 1);
}

struct memblist;
struct ml_rec;

/* One user's list, read by index: ml_at(it, i) for i < it->n. */
struct ml_iter {
    const uint8_t *k; /* key fields; NULL: the one inline entry */
    const uint8_t *v; /* values */
    uint32_t n, base;
    uint8_t wk, wv;
    uint64_t one;       /* the inline entry */
    uint64_t *ref;      /* memblist_edit: the map slot */
    struct ml_rec *rec; /* memblist_edit: the record, or NULL */
};

static inline uint32_t ml_ld(const uint8_t *p, unsigned w)
{
    switch (w) {
    case 1:
        return p[0];
    case 2:
        return (uint32_t)p[0] | (uint32_t)p[1] << 8;
    case 3:
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
    default:
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
               (uint32_t)p[3] << 24;
    }
}

/* Entry i of the list (i < it->n). */
static inline uint64_t ml_at(const struct ml_iter *it, uint32_t i)
{
    uint32_t f;

    if (it->k == NULL)
        return it->one;
    f = ml_ld(it->k + (size_t)i * it->wk, it->wk);
    return ML_ENTRY(it->base + (f >> 1), f & 1,
                    ml_ld(it->v + (size_t)i * it->wv, it->wv));
}

/* Entries [from, from + k) of the list into out: ml_at over a run, with
 * the widths' decoding chosen once (GRP.TOTAL's loop). */
void memblist_decode(const struct ml_iter *it, uint32_t from, uint32_t k,
                     uint64_t *out);

/* An empty map, or NULL. Its struct is charged to owner, what it
 * allocates to an account of its own under owner (mem.h). */
struct memblist *memblist_create(struct mem_acct *owner);
void memblist_destroy(struct memblist *m);

/* uid's list into *it (read-only); the count, 0 when uid has none. */
uint32_t memblist_get(const struct memblist *m, uint64_t uid,
                      struct ml_iter *it);

/* uid's list into *it for memblist_put_at; the count. */
uint32_t memblist_edit(struct memblist *m, uint64_t uid, struct ml_iter *it);

/* Replaces entry i of an edit iterator by e (same key; its value must fit:
 * memblist_fit first). Never fails. */
void memblist_put_at(struct ml_iter *it, uint32_t i, uint64_t e);

/* Makes every value of uid's list able to hold val without re-encoding:
 * 0, or -1 on allocation failure (nothing changed). */
int memblist_fit(struct memblist *m, uint64_t uid, uint32_t val);

/* Starts loading uid's map slot into the cache: stages 0 and 1 as
 * u64map_prefetch; stage 2 (reading the slot: issue it later still) the
 * first line of uid's record when it has one (two entries or more). */
void memblist_prefetch(const struct memblist *m, uint64_t uid, int stage);

/* memblist_prefetch and memblist_get over one probe (u64map_probe): the
 * stages 0 to 2 in order, then the list of the user the probe found. */
void memblist_probe(const struct memblist *m, uint64_t uid, int stage,
                    struct u64map_probe *p);
uint32_t memblist_get_probed(const struct u64map_probe *p, struct ml_iter *it);

/* uid's entry with this key into *e; false when none. O(log n). */
bool memblist_lookup(const struct memblist *m, uint64_t uid, uint32_t key,
                     uint64_t *e);

/* Replaces uid's entry of e's key by e (flag and value). 0; 1 when uid has
 * no entry of that key; -1 on allocation failure (a value wider than the
 * record's: nothing changed). */
int memblist_set(struct memblist *m, uint64_t uid, uint64_t e);

/* Adds e to uid's list; its key must not be in it. 0, or -1 on allocation
 * failure with nothing changed. O(n). */
int memblist_add(struct memblist *m, uint64_t uid, uint64_t e);

/* Removes uid's entry with this key; true if there was one. Never fails.
 * O(n). */
bool memblist_del(struct memblist *m, uint64_t uid, uint32_t key);

/* Removes every entry of uid; how many. Never fails. */
uint32_t memblist_del_user(struct memblist *m, uint64_t uid);

/* Cursor walk (u64map_scan): fn once per user with its list. The callback
 * must not change the map. */
typedef void (*memblist_visit_fn)(uint64_t uid, const struct ml_iter *it,
                                  void *ctx);
size_t memblist_scan(const struct memblist *m, uint64_t *cursor, size_t max,
                     memblist_visit_fn fn, void *ctx);

size_t memblist_entries(const struct memblist *m);
size_t memblist_users(const struct memblist *m);
/* The struct and its account (map, records). */
size_t memblist_bytes(const struct memblist *m);

/* The uid-keyed map under the lists, for its tags only (u64map.h, "Tags":
 * u64map_set_tagged while it is empty): state its owner keeps per user at
 * 2 bytes a slot (GRP: the activity day, days.h). */
struct u64map *memblist_user_map(const struct memblist *m);

/* Every invariant (inline iff one entry, keys strictly ascending, widths
 * 1..4, counts, bytes), and check(entry, ctx) on every entry; the number
 * of violations. O(entries). */
typedef size_t (*memblist_check_fn)(uint64_t e, const void *ctx);
size_t memblist_audit(const struct memblist *m, memblist_check_fn check,
                      const void *ctx);

#endif
