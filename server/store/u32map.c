/*
 * u32map.c - extendible hashing over sorted buckets of (hash, u32 value).
 *
 * Layout. A key's 64-bit hash h is hash.h's keyed bijection of the key,
 * stored in place of the key (hash_u64_inv gives the key back). The
 * directory (xdir.h, shared with u64map) is indexed by the top bits of h; a
 * bucket of local depth d holds exactly the hashes whose top d bits are its
 * prefix.
 *
 * A bucket is one allocation: a header, cap hashes in ascending order (n of
 * them in use), then cap values, value i belonging to hash i. Hashes are
 * uniform inside a bucket's prefix range, so a lookup starts at the
 * interpolated position and walks a few entries (the rank of a uniform
 * sample deviates by ~sqrt(n)/2 from its estimate: ~10 entries at the
 * maximum size, in one or two cache lines); no slot is ever empty, so the
 * whole allocation is entries plus the growth slack.
 *
 * Narrow buckets. Every hash of a bucket whose prefix has 8 bits or more
 * has the same top byte: such a bucket keeps it once (`top`) and each hash
 * in 7 bytes, read as an unaligned 8-byte load whose extra byte (the next
 * hash's, or the values') is shifted or masked out. The form follows the
 * depth, and only a split or merge changes a depth, rebuilding the bucket
 * anyway. It saves a byte an entry in maps of more than ~100,000 keys (BC's
 * large channels, the activity table) for ~8% more time per lookup (the
 * walk's loads are masked): 80-83 -> 88 ns at 1M keys, cache-missing.
 *
 * Sizes. A bucket grows by x1.125 when full (x1.016 in a tagged map,
 * below), up to U32MAP_BUCKET_MAX
 * entries, then splits in two by the next hash bit (a cut at one position,
 * found by bisection). After deletes a bucket shrinks below half full, and
 * merges with its buddy when both fit in half a maximum bucket. The average
 * fill stays near 0.94: ~12.8 bytes per entry, headers and directory
 * included, ~11.6 once buckets are narrow (below).
 *
 * Growth steps and the heap. Each step allocates the larger bucket and
 * frees the smaller, and the holes this leaves in the C library's heap
 * cost RSS beyond the accounting. Where buckets are most of the heap
 * (BC's channel tables: `make bench-memory`'s row), steps of x1.016
 * (n / 64 + 4 entries) leave fewer: 0.8-0.9 bytes an entry of free heap
 * at 1M keys (glibc) against 1.3-2.2 with x1.125, and a fill near 0.98.
 * Where small records of other stores are allocated between the steps
 * (the activity table beside DOT's click lists), they carve the holes
 * that many small steps leave and the heap grows instead: DOT's row at
 * 250,000 users grew by 1.9 bytes a click with x1.016 for the activity
 * table. So tagged maps (BC's) grow by x1.016 and plain ones by x1.125.
 * A small step costs a copy of the bucket every ~n/64 inserts, about
 * what an insert's own memmove moves. Depth stops at 32 (the
 * interpolation reads the 32 bits after the prefix); a bucket at that depth
 * grows past the maximum instead of splitting, which only keys chosen against a
 * known seed could cause.
 */
#include "u32map.h"

#include <string.h>

#include "hash.h"
#include "xdir.h"

struct bkt {
    struct xdir_node node; /* its local depth */
    uint8_t top;           /* a narrow bucket's top hash byte */
    uint16_t tbase;        /* a tagged map's bucket: the tag of byte 1, or
                              0 when its tags take 2 bytes each (below) */
    uint32_t n;            /* entries in use */
    uint32_t cap;          /* room for cap hashes, cap values, cap tags */
    uint32_t voff;         /* where the values start, from h */
    uint64_t h[];          /* cap hashes, ascending, of 8 bytes, or 7 in a
                              narrow bucket; then (4-aligned) the values;
                              then a tagged map's tags */
};

/*
 * Tags. A tagged map's bucket keeps each tag in one byte while its
 * non-zero tags lie within a window of TAG_SPAN: byte 0 is tag 0, byte t
 * tag tbase + t - 1. A tag outside the window moves the window when all of
 * the bucket's tags then still fit (no allocation), else the bucket is
 * rebuilt with 2-byte tags (tbase 0), and any rebuild (split, merge,
 * shrink) goes back to bytes when they fit again. BC's days are such tags:
 * the days of a bucket's users span the expiry delay (30 days by default),
 * so its entries take 12 bytes, not 13.
 */
#define TAG_SPAN 255u

/* A bucket of this depth or more is narrow: its hashes share their top
 * byte (its prefix's), which it keeps once in `top`, so each hash takes 7
 * bytes. */
#define NARROW_DEPTH 8u
#define LOW56 ((UINT64_C(1) << 56) - 1)

struct u32map {
    struct xdir dir;     /* hash prefix -> struct bkt */
    struct mem_acct mem; /* directory and buckets */
    uint64_t seed;
    size_t count;
    uint32_t nbkts;
    bool tagged;        /* a u16 tag beside every value */
    bool novals;        /* a tag set: keys and tags, no values (Tag sets) */
    uint8_t grow_shift; /* a full bucket grows by n >> grow_shift + 4 */
    uint32_t noval;     /* what u32map_ref points to in a tag set: 0 */
};

/*
 * Tag sets. A map made by u32map_create_tagset keeps keys and their tags
 * only: its buckets have no values, so an entry takes its 7 hash bytes
 * and a byte of tag (2 past a window, above): ~8.5 bytes at the map's
 * fill, against ~11.6 for a key and a 4-byte value (the activity table's
 * days, days.h). Such a bucket's voff is set so that bkt_vals(b) + cap,
 * where the tags start, is right after the hashes; values are never read
 * or written there (every access below tests novals).
 */

#define BKT_MIN_CAP 4u
#define MAP_MAX_DEPTH XDIR_MAX_DEPTH

/* Bytes per hash in a bucket of this depth. */
static inline size_t hash_width(uint8_t depth)
{
    return depth >= NARROW_DEPTH ? 7 : 8;
}

/* Bytes per tag: none in a plain map, 1 or 2 in a tagged one. */
static inline size_t tag_width(const struct u32map *m, uint16_t tbase)
{
    return !m->tagged ? 0 : tbase != 0 ? 1 : 2;
}

/* The hashes' bytes, up to where the values start. */
static inline size_t hashes_size(uint32_t cap, uint8_t depth)
{
    return ((size_t)cap * hash_width(depth) + 3) & ~(size_t)3;
}

static inline size_t bkt_size(const struct u32map *m, uint32_t cap,
                              uint8_t depth, uint16_t tbase)
{
    return sizeof(struct bkt) + hashes_size(cap, depth) +
           (size_t)cap *
               ((m->novals ? 0 : sizeof(uint32_t)) + tag_width(m, tbase));
}

static inline uint8_t *bkt_hbytes(const struct bkt *b)
{
    return (uint8_t *)(uintptr_t)b->h;
}

static inline uint32_t *bkt_vals(const struct bkt *b)
{
    return (uint32_t *)(uintptr_t)(bkt_hbytes(b) + b->voff);
}

static inline uint64_t le64(uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap64(v);
#else
    return v;
#endif
}

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

/* Hash i of b. A narrow one is an 8-byte load at 7 * i (its last byte is
 * the next hash's, or for the last the values' (a tag set's tags or their
 * alignment padding): never past the bucket). */
static inline uint64_t bh(const struct bkt *b, uint32_t i)
{
    uint64_t v;

    if (b->node.depth < NARROW_DEPTH)
        return b->h[i];
    memcpy(&v, bkt_hbytes(b) + (size_t)i * 7, sizeof(v));
    return (le64(v) & LOW56) | (uint64_t)b->top << 56;
}

static inline void bh_set(struct bkt *b, uint32_t i, uint64_t h)
{
    uint64_t v = le64(h);

    if (b->node.depth < NARROW_DEPTH)
        b->h[i] = h;
    else
        memcpy(bkt_hbytes(b) + (size_t)i * 7, &v, 7);
}

/* Moves hashes [from, from + k) of b to start at `to`. */
static inline void bh_move(struct bkt *b, uint32_t to, uint32_t from,
                           uint32_t k)
{
    size_t w = hash_width(b->node.depth);

    memmove(bkt_hbytes(b) + to * w, bkt_hbytes(b) + from * w, k * w);
}

/* A tagged map's tags (meaningless for an untagged one): bytes, or u16s
 * when tbase is 0. */
static inline uint8_t *bkt_tags(const struct bkt *b)
{
    return (uint8_t *)(bkt_vals(b) + b->cap);
}

static inline uint16_t tag_get(const struct bkt *b, uint32_t i)
{
    uint16_t t;

    if (b->tbase == 0) {
        memcpy(&t, bkt_tags(b) + (size_t)i * 2, sizeof(t));
        return t;
    }
    t = bkt_tags(b)[i];
    return t == 0 ? 0 : (uint16_t)(b->tbase + t - 1);
}

/* Whether b can hold tag as it is. */
static inline bool tag_fits(const struct bkt *b, uint16_t tag)
{
    return b->tbase == 0 || tag == 0 ||
           (tag >= b->tbase && (unsigned)(tag - b->tbase) < TAG_SPAN);
}

/* Sets tag i of b to tag, which fits. */
static inline void tag_set(struct bkt *b, uint32_t i, uint16_t tag)
{
    if (b->tbase == 0)
        memcpy(bkt_tags(b) + (size_t)i * 2, &tag, sizeof(tag));
    else
        bkt_tags(b)[i] = tag == 0 ? 0 : (uint8_t)(tag - b->tbase + 1);
}

/* Moves tags [from, from + k) of b to start at `to`. */
static inline void tag_move(struct bkt *b, uint32_t to, uint32_t from,
                            uint32_t k)
{
    size_t w = b->tbase == 0 ? 2 : 1;

    memmove(bkt_tags(b) + to * w, bkt_tags(b) + from * w, k * w);
}

/* The smallest and largest non-zero tag of b's entries [from, to) joined
 * into *lo, *hi (*lo > *hi: none yet). */
static void tag_range(const struct bkt *b, uint32_t from, uint32_t to,
                      uint16_t *lo, uint16_t *hi)
{
    for (uint32_t i = from; i < to; i++) {
        uint16_t t = tag_get(b, i);

        if (t != 0 && t < *lo)
            *lo = t;
        if (t > *hi)
            *hi = t;
    }
}

/* The tbase for tags within [lo, hi]: 0 (2-byte tags) when they span more
 * than a window. */
static inline uint16_t tbase_for(uint16_t lo, uint16_t hi)
{
    if (lo > hi)
        return 1; /* no non-zero tag: any window */
    return (unsigned)(hi - lo) < TAG_SPAN ? lo : 0;
}

/* Moves b's window of 1-byte tags to hold tag too, in place: false when
 * its tags and tag span more than a window (b unchanged). */
static bool tag_rebase(struct bkt *b, uint16_t tag)
{
    uint16_t lo = tag, hi = tag, base;

    tag_range(b, 0, b->n, &lo, &hi);
    base = tbase_for(lo, hi);
    if (base == 0)
        return false;
    for (uint32_t i = 0; i < b->n; i++) {
        uint8_t *t = &bkt_tags(b)[i];

        if (*t != 0)
            *t = (uint8_t)(b->tbase + *t - 1 - base + 1);
    }
    b->tbase = base;
    return true;
}

/* Room for n entries plus growth slack; rebuilds and growth aim here. */
static uint32_t cap_for(const struct u32map *m, uint32_t n, uint8_t depth)
{
    uint32_t cap = n + (n >> m->grow_shift) + BKT_MIN_CAP;

    if (cap > U32MAP_BUCKET_MAX && depth < MAP_MAX_DEPTH)
        cap = n > U32MAP_BUCKET_MAX ? n : U32MAP_BUCKET_MAX;
    return cap;
}

/* The bucket holding hash h, or NULL in a map with none yet. */
static inline struct bkt *bkt_of(const struct u32map *m, uint64_t h)
{
    return (struct bkt *)xdir_get(&m->dir, h);
}

/*
 * Index of the first hash >= h in b (b->n when none): start where a uniform
 * spread puts h among the 32 bits after the prefix, then walk.
 */
static uint32_t bkt_seek(const struct bkt *b, uint64_t h, bool *found)
{
    uint32_t x = (uint32_t)((h << b->node.depth) >> 32);
    uint32_t i = (uint32_t)(((uint64_t)x * b->n) >> 32);

    if (b->node.depth < NARROW_DEPTH) {
        const uint64_t *e = b->h;

        if (i < b->n && e[i] < h) {
            while (i < b->n && e[i] < h)
                i++;
        } else {
            while (i > 0 && e[i - 1] >= h)
                i--;
        }
        *found = i < b->n && e[i] == h;
        return i;
    } else {
        /* Narrow: h shares the bucket's top byte, so the low 7 bytes
         * order; shifted up, the byte loaded past them drops out. */
        const uint8_t *p = bkt_hbytes(b);
        uint64_t k = h << 8;

#define HI7(j) (le64(load64(p + (size_t)(j)*7)) << 8)
        if (i < b->n && HI7(i) < k) {
            while (i < b->n && HI7(i) < k)
                i++;
        } else {
            while (i > 0 && HI7(i - 1) >= k)
                i--;
        }
        *found = i < b->n && HI7(i) == k;
#undef HI7
        return i;
    }
}

static uint32_t bkt_lower(const struct bkt *b, uint64_t h)
{
    bool found;

    return bkt_seek(b, h, &found);
}

/* A bucket for the range of depth `depth` that holds hash h. */
static struct bkt *bkt_alloc(struct u32map *m, uint32_t cap, uint8_t depth,
                             uint64_t h, uint16_t tbase)
{
    struct bkt *b = mem_alloc(&m->mem, bkt_size(m, cap, depth, tbase));

    if (b == NULL)
        return NULL;
    b->top = (uint8_t)(h >> 56);
    b->tbase = tbase;
    /* tags right after the hashes in a tag set (>= 7 bytes a hash) */
    b->voff = (uint32_t)(hashes_size(cap, depth) -
                         (m->novals ? cap * sizeof(uint32_t) : 0));
    b->n = 0;
    b->cap = cap;
    b->node.depth = depth;
    m->nbkts++;
    return b;
}

static void bkt_free(struct u32map *m, struct bkt *b)
{
    m->nbkts--;
    mem_free(&m->mem, b, bkt_size(m, b->cap, b->node.depth, b->tbase));
}

/* Appends src's entries [from, to) to d, which has room for them. */
static void bkt_append(const struct u32map *m, struct bkt *d,
                       const struct bkt *src, uint32_t from, uint32_t to)
{
    uint32_t k = to - from;
    size_t w = hash_width(d->node.depth);

    if (w == hash_width(src->node.depth))
        memcpy(bkt_hbytes(d) + d->n * w, bkt_hbytes(src) + from * w, k * w);
    else
        for (uint32_t j = 0; j < k; j++)
            bh_set(d, d->n + j, bh(src, from + j));
    if (!m->novals)
        memcpy(bkt_vals(d) + d->n, bkt_vals(src) + from, k * sizeof(uint32_t));
    if (m->tagged && d->tbase == src->tbase)
        memcpy(bkt_tags(d) + d->n * tag_width(m, d->tbase),
               bkt_tags(src) + from * tag_width(m, d->tbase),
               k * tag_width(m, d->tbase));
    else if (m->tagged)
        for (uint32_t j = 0; j < k; j++)
            tag_set(d, d->n + j, tag_get(src, from + j));
    d->n += k;
}

/* A new bucket of the given depth, for the range holding hash h, with
 * a's entries then b's (b may be NULL), sized for them, its tags in bytes
 * when they fit in a window (and `tag`, when not 0, with them); NULL on
 * allocation failure. */
static struct bkt *bkt_build(struct u32map *m, uint8_t depth, uint64_t h,
                             const struct bkt *a, uint32_t from, uint32_t to,
                             const struct bkt *b, uint16_t tag)
{
    uint32_t n = to - from + (b ? b->n : 0);
    uint16_t lo = tag ? tag : UINT16_MAX, hi = tag, tbase = 1;
    struct bkt *d;

    if (m->tagged) {
        tag_range(a, from, to, &lo, &hi);
        if (b != NULL)
            tag_range(b, 0, b->n, &lo, &hi);
        tbase = tbase_for(lo, hi);
    }
    d = bkt_alloc(m, cap_for(m, n, depth), depth, h, tbase);

    if (d == NULL)
        return NULL;
    bkt_append(m, d, a, from, to);
    if (b != NULL)
        bkt_append(m, d, b, 0, b->n);
    return d;
}

/*
 * Makes room in b, the full bucket for hash h: a larger copy, or two halves
 * by the next hash bit at the maximum size. The caller retries the insert.
 * 0, or -1 on allocation failure (map unchanged apart from a possibly
 * doubled directory, which is a valid state).
 */
static int bkt_make_room(struct u32map *m, struct bkt *b, uint64_t h)
{
    uint8_t d = b->node.depth;
    struct bkt *l, *r;
    uint32_t lo = 0, hi = b->n;

    if (b->n < U32MAP_BUCKET_MAX || d >= MAP_MAX_DEPTH) {
        uint16_t tlo = UINT16_MAX, thi = 0, tbase = b->tbase;
        struct bkt *g;

        /* 2-byte tags go back to bytes when they fit again */
        if (m->tagged && tbase == 0) {
            tag_range(b, 0, b->n, &tlo, &thi);
            tbase = tbase_for(tlo, thi);
        }
        g = bkt_alloc(m, cap_for(m, b->n + 1, d), d, h, tbase);
        if (g == NULL)
            return -1;
        bkt_append(m, g, b, 0, b->n);
        xdir_replace(&m->dir, h, &g->node);
        bkt_free(m, b);
        return 0;
    }
    /* Sorted order puts every 0 of bit 63 - d before every 1. */
    while (lo < hi) {
        uint32_t q = lo + (hi - lo) / 2;

        if ((bh(b, q) << d) >> 63)
            hi = q;
        else
            lo = q + 1;
    }
    if (xdir_split_room(&m->dir, &m->mem, d) != 0)
        return -1;
    l = bkt_build(m, d + 1, h & ~(UINT64_C(1) << (63 - d)), b, 0, lo, NULL, 0);
    if (l == NULL)
        return -1;
    r = bkt_build(m, d + 1, h | UINT64_C(1) << (63 - d), b, lo, b->n, NULL, 0);
    if (r == NULL) {
        bkt_free(m, l);
        return -1;
    }
    xdir_split(&m->dir, h, d, &l->node, &r->node);
    bkt_free(m, b);
    return 0;
}

/*
 * After a delete from b (the bucket for hash h): merge it with its buddy
 * when both are small, else shrink it below half full; free the last
 * bucket of an empty map. Allocation failure leaves b as it is.
 */
static void bkt_trim(struct u32map *m, struct bkt *b, uint64_t h)
{
    uint8_t d = b->node.depth;
    struct bkt *g;

    if (d == 0 && b->n == 0) {
        /* A directory doubled for a split that then failed may still point
         * here: xdir_clear folds it back so that no entry dangles. */
        xdir_clear(&m->dir, &m->mem);
        bkt_free(m, b);
        return;
    }
    if (d > 0 && b->n < U32MAP_BUCKET_MAX / 4) {
        bool lower;
        struct bkt *o = (struct bkt *)xdir_buddy(&m->dir, h, d, &lower);

        if (o != NULL && b->n + o->n <= U32MAP_BUCKET_MAX / 2) {
            struct bkt *lo = lower ? b : o, *hi = lower ? o : b;

            g = bkt_build(m, d - 1, h, lo, 0, lo->n, hi, 0);
            if (g == NULL)
                return;
            xdir_merge(&m->dir, &m->mem, h, &g->node);
            bkt_free(m, b);
            bkt_free(m, o);
            return;
        }
    }
    if (b->n >= b->cap / 2 || cap_for(m, b->n, d) >= b->cap)
        return;
    g = bkt_build(m, d, h, b, 0, b->n, NULL, 0);
    if (g == NULL)
        return;
    xdir_replace(&m->dir, h, &g->node);
    bkt_free(m, b);
}

/*
 * Makes b, the bucket of hash h, able to hold tag: moves its window of
 * 1-byte tags, or rebuilds it with 2-byte tags. The bucket holding h
 * after, or NULL on allocation failure (b unchanged).
 */
static struct bkt *bkt_tag_room(struct u32map *m, struct bkt *b, uint64_t h,
                                uint16_t tag)
{
    struct bkt *g;

    if (tag_fits(b, tag) || tag_rebase(b, tag))
        return b;
    g = bkt_build(m, b->node.depth, h, b, 0, b->n, NULL, tag);
    if (g == NULL)
        return NULL;
    xdir_replace(&m->dir, h, &g->node);
    bkt_free(m, b);
    return g;
}

static struct u32map *map_create(struct mem_acct *owner, bool tagged,
                                 bool novals)
{
    struct u32map *m = mem_zalloc(owner, sizeof(*m));

    if (m == NULL)
        return NULL;
    xdir_init(&m->dir);
    mem_acct_init(&m->mem, owner);
    m->seed = hash_seed(HASH_U32MAP);
    m->tagged = tagged;
    m->novals = novals;
    /* a tag set grows as a plain map: the activity table, whose small
     * steps carved holes in the heap between other stores' records */
    m->grow_shift = tagged && !novals ? 6 : 3;
    return m;
}

struct u32map *u32map_create(struct mem_acct *owner)
{
    return map_create(owner, false, false);
}

struct u32map *u32map_create_tagged(struct mem_acct *owner)
{
    return map_create(owner, true, false);
}

struct u32map *u32map_create_tagset(struct mem_acct *owner)
{
    return map_create(owner, true, true);
}

void u32map_destroy(struct u32map *m)
{
    struct xdir_node *n;

    if (m == NULL)
        return;
    for (size_t i = 0; (n = xdir_walk(&m->dir, &i)) != NULL;)
        mem_free(&m->mem, n,
                 bkt_size(m, ((struct bkt *)n)->cap, n->depth,
                          ((struct bkt *)n)->tbase));
    xdir_deinit(&m->dir, &m->mem);
    mem_free(m->mem.up, m, sizeof(*m));
}

/* key's value in m, or NULL; *tag = its tag when m is tagged. */
static uint32_t *map_find(const struct u32map *m, uint64_t key, uint16_t *tag)
{
    uint64_t h = hash_u64(key, m->seed);
    const struct bkt *b = bkt_of(m, h);
    uint32_t i;

    bool found;

    if (b == NULL)
        return NULL;
    i = bkt_seek(b, h, &found);
    if (!found)
        return NULL;
    if (tag != NULL)
        *tag = tag_get(b, i);
    if (m->novals)
        return (uint32_t *)(uintptr_t)&m->noval;
    return &bkt_vals(b)[i];
}

uint32_t *u32map_ref(struct u32map *m, uint64_t key)
{
    return map_find(m, key, NULL);
}

uint32_t *u32map_ref_tagged(struct u32map *m, uint64_t key, uint16_t *tag)
{
    return map_find(m, key, tag);
}

int u32map_set_tag(struct u32map *m, uint64_t key, uint16_t tag)
{
    uint64_t h = hash_u64(key, m->seed);
    struct bkt *b = bkt_of(m, h);
    bool found;
    uint32_t i;

    if (b == NULL)
        return 1;
    i = bkt_seek(b, h, &found);
    if (!found)
        return 1;
    b = bkt_tag_room(m, b, h, tag);
    if (b == NULL)
        return -1;
    tag_set(b, i, tag);
    return 0;
}

void u32map_prefetch(const struct u32map *m, uint64_t key, int stage)
{
    uint64_t h;
    const struct bkt *b;
    uint32_t x, i;

    if (stage > 1)
        return;
    h = hash_u64(key, m->seed);
    b = bkt_of(m, h);
    if (b == NULL)
        return;
    if (stage == 0) {
        __builtin_prefetch(b);
        return;
    }
    /* where bkt_lower starts */
    x = (uint32_t)((h << b->node.depth) >> 32);
    i = (uint32_t)(((uint64_t)x * b->n) >> 32);
    __builtin_prefetch(bkt_hbytes(b) + i * hash_width(b->node.depth));
    if (!m->novals)
        __builtin_prefetch(&bkt_vals(b)[i]);
}

bool u32map_get(const struct u32map *m, uint64_t key, uint32_t *val)
{
    const uint32_t *v = map_find(m, key, NULL);

    if (v == NULL)
        return false;
    *val = *v;
    return true;
}

bool u32map_get_tag(const struct u32map *m, uint64_t key, uint16_t *tag)
{
    return map_find(m, key, tag) != NULL;
}

int u32map_put(struct u32map *m, uint64_t key, uint32_t val)
{
    return u32map_put_tagged(m, key, val, 0);
}

int u32map_put_tagged(struct u32map *m, uint64_t key, uint32_t val,
                      uint16_t tag)
{
    uint64_t h = hash_u64(key, m->seed);

    for (;;) {
        struct bkt *b = bkt_of(m, h);
        uint32_t i, *v;

        if (b == NULL) {
            /* Only an empty map (depth 0) has no bucket. */
            b = bkt_alloc(m, BKT_MIN_CAP, 0, h, tag ? tag : 1);
            if (b == NULL)
                return -1;
            xdir_set_first(&m->dir, &b->node);
        }
        if (m->tagged) {
            b = bkt_tag_room(m, b, h, tag);
            if (b == NULL)
                return -1;
        }
        i = bkt_lower(b, h);
        v = bkt_vals(b);
        if (i < b->n && bh(b, i) == h) {
            if (!m->novals)
                v[i] = val;
            if (m->tagged)
                tag_set(b, i, tag);
            return 0;
        }
        if (b->n < b->cap) {
            bh_move(b, i + 1, i, b->n - i);
            if (!m->novals)
                memmove(&v[i + 1], &v[i], (b->n - i) * sizeof(uint32_t));
            if (m->tagged) {
                tag_move(b, i + 1, i, b->n - i);
                tag_set(b, i, tag);
            }
            bh_set(b, i, h);
            if (!m->novals)
                v[i] = val;
            b->n++;
            m->count++;
            return 0;
        }
        if (bkt_make_room(m, b, h) != 0)
            return -1;
    }
}

bool u32map_del(struct u32map *m, uint64_t key)
{
    uint64_t h = hash_u64(key, m->seed);
    struct bkt *b = bkt_of(m, h);
    uint32_t i, *v;

    if (b == NULL)
        return false;
    i = bkt_lower(b, h);
    if (i == b->n || bh(b, i) != h)
        return false;
    v = bkt_vals(b);
    bh_move(b, i, i + 1, b->n - i - 1);
    if (!m->novals)
        memmove(&v[i], &v[i + 1], (b->n - i - 1) * sizeof(uint32_t));
    if (m->tagged)
        tag_move(b, i, i + 1, b->n - i - 1);
    b->n--;
    m->count--;
    bkt_trim(m, b, h);
    return true;
}

size_t u32map_count(const struct u32map *m)
{
    return m->count;
}

size_t u32map_bytes(const struct u32map *m)
{
    return sizeof(*m) + m->mem.bytes;
}

/*
 * The cursor is the hash of the next entry to visit: resume at its bucket
 * and position, then continue with the bucket after that prefix range.
 */
static size_t map_scan(const struct u32map *m, uint64_t *cursor, size_t max,
                       u32map_visit_fn fn, u32map_tag_visit_fn tfn, void *ctx)
{
    uint64_t h = *cursor;
    size_t n = 0;

    if (max == 0)
        return 0;
    for (;;) {
        const struct bkt *b = bkt_of(m, h);

        for (uint32_t i = b ? bkt_lower(b, h) : 0; b && i < b->n; i++) {
            if (n == max) {
                *cursor = bh(b, i);
                return n;
            }
            uint32_t val = m->novals ? 0 : bkt_vals(b)[i];

            if (tfn != NULL)
                tfn(hash_u64_inv(bh(b, i), m->seed), val, tag_get(b, i), ctx);
            else
                fn(hash_u64_inv(bh(b, i), m->seed), val, ctx);
            n++;
        }
        if (!xdir_next_range(&h, b ? b->node.depth : 0)) {
            *cursor = 0;
            return n;
        }
    }
}

size_t u32map_scan(const struct u32map *m, uint64_t *cursor, size_t max,
                   u32map_visit_fn fn, void *ctx)
{
    return map_scan(m, cursor, max, fn, NULL, ctx);
}

size_t u32map_scan_tagged(const struct u32map *m, uint64_t *cursor, size_t max,
                          u32map_tag_visit_fn fn, void *ctx)
{
    return map_scan(m, cursor, max, NULL, fn, ctx);
}

struct audit_ctx {
    const struct u32map *m;
    size_t count, bytes;
};

/* One bucket, at directory entries [first, first + span): sorted hashes of
 * its range, within its size. */
static size_t bkt_audit(const struct xdir *x, const struct xdir_node *n,
                        size_t first, size_t span, void *ctx)
{
    struct audit_ctx *ac = ctx;
    const struct bkt *b = (const struct bkt *)n;
    size_t bad = 0;

    bad += b->n > b->cap;
    bad += b->cap > U32MAP_BUCKET_MAX && b->node.depth < MAP_MAX_DEPTH;
    for (uint32_t k = 0; k < b->n; k++) {
        size_t di = xdir_index(x, bh(b, k));

        bad += k > 0 && bh(b, k) <= bh(b, k - 1);
        bad += di < first || di >= first + span;
    }
    /* 1-byte tags within their window; a plain map's buckets all alike */
    bad += !ac->m->tagged && b->tbase != 1;
    if (ac->m->tagged && b->tbase != 0)
        for (uint32_t k = 0; k < b->n; k++)
            bad += bkt_tags(b)[k] != 0 &&
                   (uint32_t)b->tbase + bkt_tags(b)[k] - 1 > UINT16_MAX;
    ac->count += b->n;
    ac->bytes += bkt_size(ac->m, b->cap, b->node.depth, b->tbase);
    return bad;
}

size_t u32map_audit(const struct u32map *m)
{
    struct audit_ctx ac = {m, 0, xdir_bytes(&m->dir)};
    size_t nbkts, bad = xdir_audit(&m->dir, bkt_audit, &ac, &nbkts);

    bad += ac.count != m->count;
    bad += ac.bytes != m->mem.bytes;
    bad += nbkts != m->nbkts;
    return bad;
}
