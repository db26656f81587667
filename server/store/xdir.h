/*
 * xdir.h - the directory of extendible hashing, shared by u64map (Robin
 * Hood segments) and u32map (sorted buckets).
 *
 * The directory has 1 << depth entries indexed by the top `depth` bits of
 * a 64-bit hash. A node (a segment, a bucket) of local depth d <= depth
 * holds exactly the hashes whose top d bits are its prefix, and the
 * 1 << (depth - d) consecutive entries sharing that prefix all point to
 * it. A full node splits in two by the next hash bit (the directory doubles
 * first when the node uses every bit of it); two sparse buddies merge back
 * (and the directory halves while no node uses its last bit). A map grows
 * node by node: apart from the directory, which holds one pointer per
 * node's worth of keys, no change touches more than two nodes.
 *
 * While depth is 0 the directory is one pointer inside struct xdir, so a
 * small map allocates no directory. The maps own their nodes (the
 * directory frees only its own array); every node starts with a struct
 * xdir_node, its local depth, so the directory can read it.
 *
 * The lookups are inline: they are the first step of every map access.
 */
#ifndef UR_XDIR_H
#define UR_XDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"

/* The first member of every node. */
struct xdir_node {
    uint8_t depth; /* local depth: the number of prefix bits */
};

struct xdir {
    struct xdir_node **v;  /* 1 << depth entries; &one while depth is 0 */
    struct xdir_node *one; /* the only entry at depth 0; NULL: no node */
    uint8_t depth;         /* global depth */
};

/* Depth is limited to 32: the maps read the 32 bits after a prefix. */
#define XDIR_MAX_DEPTH 32u

static inline size_t xdir_index(const struct xdir *x, uint64_t h)
{
    return x->depth ? (size_t)(h >> (64 - x->depth)) : 0;
}

/* The node holding hash h, or NULL in a map with no node yet. */
static inline struct xdir_node *xdir_get(const struct xdir *x, uint64_t h)
{
    return x->v[xdir_index(x, h)];
}

/*
 * Walks from a node of depth d (0 also for a NULL node of an empty map) to
 * the next one in hash order: *h becomes the first hash of the next prefix
 * range. false when the node was the last.
 */
static inline bool xdir_next_range(uint64_t *h, uint8_t d)
{
    if (d == 0 || (*h >> (64 - d)) == ((uint64_t)1 << d) - 1)
        return false;
    *h = ((*h >> (64 - d)) + 1) << (64 - d);
    return true;
}

/* An empty directory (no node). */
void xdir_init(struct xdir *x);
/* Frees the array (not the nodes, which the map frees first). */
void xdir_deinit(struct xdir *x, struct mem_acct *a);
/* Bytes of the array: 0 at depth 0. */
size_t xdir_bytes(const struct xdir *x);

/* The distinct nodes in hash order: start with *i = 0; NULL at the end. */
struct xdir_node *xdir_walk(const struct xdir *x, size_t *i);

/* Sets the only node of an empty directory (depth 0). */
void xdir_set_first(struct xdir *x, struct xdir_node *n);
/* n takes the place of the node holding h, of the same depth. */
void xdir_replace(struct xdir *x, uint64_t h, struct xdir_node *n);

/*
 * Splitting the node of depth d that holds h: xdir_split_room first (it
 * doubles the directory when d is its depth: 0, or -1 when that cannot
 * allocate, directory unchanged), then, with the halves built, xdir_split
 * points the node's lower half to lo and its upper half to hi (both of
 * depth d + 1). A directory doubled for a split that then fails to build
 * its halves is a valid directory: it stays.
 */
int xdir_split_room(struct xdir *x, struct mem_acct *a, uint8_t d);
void xdir_split(struct xdir *x, uint64_t h, uint8_t d, struct xdir_node *lo,
                struct xdir_node *hi);

/*
 * Merging: the buddy of the node of depth d >= 1 holding h (the node with
 * the same prefix but its last bit flipped), when it has depth d too, else
 * NULL; *lower tells whether h's node comes first in hash order. Once both
 * are merged into n (depth d - 1), xdir_merge points their ranges to n and
 * halves the directory while no node uses its last bit.
 */
struct xdir_node *xdir_buddy(const struct xdir *x, uint64_t h, uint8_t d,
                             bool *lower);
void xdir_merge(struct xdir *x, struct mem_acct *a, uint64_t h,
                struct xdir_node *n);

/* The map's last node (depth 0) is being freed: the directory becomes
 * empty, its array folded back first (a failed split may have left it
 * doubled over that node). */
void xdir_clear(struct xdir *x, struct mem_acct *a);

/*
 * Checks the directory (every node's depth within the directory's, and its
 * whole range pointing to it) and calls check for every node with the
 * first index and the number of entries of its range, for the map's own
 * checks. The number of violations plus what check returns; *nodes the
 * nodes visited.
 */
typedef size_t (*xdir_check_fn)(const struct xdir *x, const struct xdir_node *n,
                                size_t first, size_t span, void *ctx);
size_t xdir_audit(const struct xdir *x, xdir_check_fn check, void *ctx,
                  size_t *nodes);

#endif
