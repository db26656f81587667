/*
 * denseid.h - dense indices for global ids: the first time a u64 id (a dot,
 * an author) is named it gets the next index 0, 1, 2, ..., kept for the
 * life of the table, and a zeroed fixed-size value (a push time, a post
 * count).
 *
 * Why: per-user state can then name the id with a few bits (16 for dots, 31
 * for authors) instead of 8 bytes, and the per-id values sit in flat arrays
 * that a read over many ids (FEED.UNREAD) walks with two plain loads each.
 *
 * Values and ids live in chunks of DENSEID_CHUNK entries that are never
 * copied once full: only the last chunk grows (by doubling, so a small table
 * stays small), and a small directory of chunk pointers doubles. No insert
 * copies more than one chunk plus the directory, whatever the number of ids.
 *
 * Indices are never released. Not thread-safe.
 */
#ifndef UR_DENSEID_H
#define UR_DENSEID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"

#define DENSEID_CHUNK_BITS 12
#define DENSEID_CHUNK (1u << DENSEID_CHUNK_BITS)

enum { DENSEID_ENOMEM = -1, DENSEID_EFULL = -2 };

/* Private: exposed only so that denseid_val can be inlined in hot loops. */
struct denseid {
    struct u64map *map;  /* id -> index + 1 */
    struct mem_acct mem; /* the map, the directory and the chunks */
    uint64_t **ids;      /* ids[i >> BITS][i & (CHUNK - 1)]: the id of i */
    uint8_t **vals;      /* the same layout, vsize bytes per index */
    size_t vsize;
    uint32_t count;    /* indices given: 0..count-1 */
    uint32_t max;      /* at most this many */
    uint32_t chunks;   /* chunks allocated */
    uint32_t dir_cap;  /* entries in ids[] and vals[] */
    uint32_t last_cap; /* indices the last chunk holds */
};

/* A table giving at most max indices with vsize-byte values (1..64), or
 * NULL on allocation failure. Its struct is charged to owner and what it
 * allocates to an account of its own under owner (mem.h; NULL: the process
 * total only). */
struct denseid *denseid_create(struct mem_acct *owner, size_t vsize,
                               uint32_t max);
void denseid_destroy(struct denseid *d);

/* true with *idx set when id has an index. */
bool denseid_find(const struct denseid *d, uint64_t id, uint32_t *idx);

/* id's index, giving it the next one (with a zeroed value) when it has
 * none. 0, DENSEID_ENOMEM, or DENSEID_EFULL when max indices are given;
 * the table is unchanged on error. */
int denseid_intern(struct denseid *d, uint64_t id, uint32_t *idx);

/* Takes back the index that the last denseid_intern gave id when id had
 * none, for a caller whose change then fails and must leave the table as
 * it was: id has no index again and the next one is given again, zeroed.
 * id must be the last id interned. Never fails. */
void denseid_unintern(struct denseid *d, uint64_t id);

/* The id that has index idx (idx < count). */
uint64_t denseid_id(const struct denseid *d, uint32_t idx);

static inline uint32_t denseid_count(const struct denseid *d)
{
    return d->count;
}

/* Pointer to the value of index idx (idx < count). Valid until the next
 * denseid_intern, which may move the last chunk. */
static inline void *denseid_val(const struct denseid *d, uint32_t idx)
{
    return d->vals[idx >> DENSEID_CHUNK_BITS] +
           (size_t)(idx & (DENSEID_CHUNK - 1)) * d->vsize;
}

/* Bytes held: the struct, the map, the directory and the chunks (requested
 * sizes): its account. */
size_t denseid_bytes(const struct denseid *d);

/* Checks that the map and the ids agree both ways and the map's own
 * invariants. The number of violations: 0 when healthy. O(count). */
size_t denseid_audit(const struct denseid *d);

#endif
