/*
 * u32map.c - extendible hashing over sorted buckets of (hash, u32 value).
 *
 * Layout. A key's 64-bit hash h is a keyed bijection of the key, stored in
 * place of the key (map_unhash gives the key back). The directory has
 * 1 << gdepth entries indexed by the top gdepth bits of h; a bucket of local
 * depth d holds exactly the hashes whose top d bits are its prefix and is
 * referenced by the 1 << (gdepth - d) consecutive entries sharing it.
 *
 * A bucket is one allocation: a header, cap hashes in ascending order (n of
 * them in use), then cap values, value i belonging to hash i. Hashes are
 * uniform inside a bucket's prefix range, so a lookup starts at the
 * interpolated position and walks a few entries (the rank of a uniform
 * sample deviates by ~sqrt(n)/2 from its estimate: ~10 entries at the
 * maximum size, in one or two cache lines); no slot is ever empty, so the
 * whole allocation is entries plus the growth slack.
 *
 * Sizes. A bucket grows by x1.125 when full, up to U32MAP_BUCKET_MAX
 * entries, then splits in two by the next hash bit (a cut at one position,
 * found by bisection). After deletes a bucket shrinks below half full, and
 * merges with its buddy when both fit in half a maximum bucket. The average
 * fill stays near 0.94: ~12.8 bytes per entry, headers and directory
 * included. Depth stops at 32 (the interpolation reads the 32 bits after
 * the prefix); a bucket at that depth grows past the maximum instead of
 * splitting, which only keys chosen against a known seed could cause.
 *
 * The directory code follows u64map.c's (same extendible scheme); only the
 * buckets differ.
 */
#include "u32map.h"

#include <stdlib.h>
#include <string.h>

struct bkt {
    uint32_t n;   /* entries in use */
    uint32_t cap; /* room for cap hashes, then cap values */
    uint8_t depth;
    uint64_t h[]; /* ascending; the values start at h + cap */
};

struct u32map {
    struct bkt **dir; /* 1 << gdepth entries; &b0 while gdepth is 0 */
    struct bkt *b0;   /* NULL for an empty map with no bucket yet */
    uint64_t seed;
    size_t count;
    size_t bytes;
    uint32_t nbkts;
    uint8_t gdepth;
};

#define BKT_MIN_CAP 4u
#define MAP_MAX_DEPTH 32u

static uint64_t map_default_seed = 0x2545f4914f6cdd1dULL;

/*
 * Keyed bijection: the murmur3 finalizer over key ^ seed. Each step (an
 * xor-shift by 33 >= 32 bits, a multiplication by an odd constant) has an
 * inverse, which map_unhash applies in reverse order.
 */
static inline uint64_t map_hash(uint64_t key, uint64_t seed)
{
    uint64_t z = key ^ seed;

    z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdULL;
    z = (z ^ (z >> 33)) * 0xc4ceb9fe1a85ec53ULL;
    return z ^ (z >> 33);
}

static inline uint64_t map_unhash(uint64_t h, uint64_t seed)
{
    uint64_t z = h ^ (h >> 33);

    z *= 0x9cb4b2f8129337dbULL; /* inverse of 0xc4ceb9fe1a85ec53 mod 2^64 */
    z ^= z >> 33;
    z *= 0x4f74430c22a54005ULL; /* inverse of 0xff51afd7ed558ccd */
    z ^= z >> 33;
    return z ^ seed;
}

static inline size_t bkt_size(uint32_t cap)
{
    return sizeof(struct bkt) +
           (size_t)cap * (sizeof(uint64_t) + sizeof(uint32_t));
}

static inline uint32_t *bkt_vals(const struct bkt *b)
{
    return (uint32_t *)(b->h + b->cap);
}

/* Room for n entries plus growth slack; rebuilds and growth aim here. */
static uint32_t cap_for(uint32_t n, uint8_t depth)
{
    uint32_t cap = n + n / 8 + BKT_MIN_CAP;

    if (cap > U32MAP_BUCKET_MAX && depth < MAP_MAX_DEPTH)
        cap = n > U32MAP_BUCKET_MAX ? n : U32MAP_BUCKET_MAX;
    return cap;
}

static inline size_t dir_index(const struct u32map *m, uint64_t h)
{
    return m->gdepth ? (size_t)(h >> (64 - m->gdepth)) : 0;
}

/* First directory index of the range that points to a depth-d bucket. */
static inline size_t dir_first(const struct u32map *m, size_t idx, uint8_t d)
{
    unsigned shift = m->gdepth - d;

    return (idx >> shift) << shift;
}

/*
 * Index of the first hash >= h in b (b->n when none): start where a uniform
 * spread puts h among the 32 bits after the prefix, then walk.
 */
static uint32_t bkt_lower(const struct bkt *b, uint64_t h)
{
    uint32_t x = (uint32_t)((h << b->depth) >> 32);
    uint32_t i = (uint32_t)(((uint64_t)x * b->n) >> 32);

    if (i < b->n && b->h[i] < h) {
        while (i < b->n && b->h[i] < h)
            i++;
    } else {
        while (i > 0 && b->h[i - 1] >= h)
            i--;
    }
    return i;
}

static struct bkt *bkt_alloc(struct u32map *m, uint32_t cap, uint8_t depth)
{
    struct bkt *b = malloc(bkt_size(cap));

    if (b == NULL)
        return NULL;
    b->n = 0;
    b->cap = cap;
    b->depth = depth;
    m->bytes += bkt_size(cap);
    m->nbkts++;
    return b;
}

static void bkt_free(struct u32map *m, struct bkt *b)
{
    m->bytes -= bkt_size(b->cap);
    m->nbkts--;
    free(b);
}

/* Appends src's entries [from, to) to d, which has room for them. */
static void bkt_append(struct bkt *d, const struct bkt *src, uint32_t from,
                       uint32_t to)
{
    uint32_t k = to - from;

    memcpy(d->h + d->n, src->h + from, k * sizeof(uint64_t));
    memcpy(bkt_vals(d) + d->n, bkt_vals(src) + from, k * sizeof(uint32_t));
    d->n += k;
}

/* A new bucket of the given depth holding a's entries then b's (b may be
 * NULL), sized for them; NULL on allocation failure. */
static struct bkt *bkt_build(struct u32map *m, uint8_t depth,
                             const struct bkt *a, uint32_t from, uint32_t to,
                             const struct bkt *b)
{
    uint32_t n = to - from + (b ? b->n : 0);
    struct bkt *d = bkt_alloc(m, cap_for(n, depth), depth);

    if (d == NULL)
        return NULL;
    bkt_append(d, a, from, to);
    if (b != NULL)
        bkt_append(d, b, 0, b->n);
    return d;
}

/* Points the directory range of a depth-`depth` bucket at idx to b. */
static void dir_set(struct u32map *m, size_t idx, uint8_t depth, struct bkt *b)
{
    size_t first = dir_first(m, idx, depth);
    size_t n = (size_t)1 << (m->gdepth - depth);

    for (size_t i = 0; i < n; i++)
        m->dir[first + i] = b;
}

static int dir_double(struct u32map *m)
{
    size_t n = (size_t)1 << m->gdepth;
    struct bkt **d = malloc(2 * n * sizeof(*d));

    if (d == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        d[2 * i] = d[2 * i + 1] = m->dir[i];
    if (m->gdepth > 0) {
        free(m->dir);
        m->bytes -= n * sizeof(*d);
    }
    m->dir = d;
    m->bytes += 2 * n * sizeof(*d);
    m->gdepth++;
    return 0;
}

/* Halves the directory while no bucket uses its full depth. */
static void dir_shrink(struct u32map *m)
{
    while (m->gdepth > 0) {
        size_t n = (size_t)1 << m->gdepth;
        struct bkt **d;

        for (size_t i = 0; i < n; i++)
            if (m->dir[i]->depth == m->gdepth)
                return;
        for (size_t i = 0; i < n / 2; i++)
            m->dir[i] = m->dir[2 * i];
        m->bytes -= n / 2 * sizeof(*d);
        if (m->gdepth == 1) {
            m->b0 = m->dir[0];
            free(m->dir);
            m->dir = &m->b0;
            m->bytes -= sizeof(*d);
        } else {
            /* Shrinking in place cannot really fail; if it does, keep it. */
            d = realloc(m->dir, n / 2 * sizeof(*d));
            if (d != NULL)
                m->dir = d;
        }
        m->gdepth--;
    }
}

/*
 * Makes room in b, the full bucket for hash h: a larger copy, or two halves
 * by the next hash bit at the maximum size. The caller retries the insert.
 * 0, or -1 on allocation failure (map unchanged apart from a possibly
 * doubled directory, which is a valid state).
 */
static int bkt_make_room(struct u32map *m, struct bkt *b, uint64_t h)
{
    uint8_t d = b->depth;
    struct bkt *l, *r;
    uint32_t lo = 0, hi = b->n;
    size_t first, half;

    if (b->n < U32MAP_BUCKET_MAX || d >= MAP_MAX_DEPTH) {
        struct bkt *g = bkt_alloc(m, cap_for(b->n + 1, d), d);

        if (g == NULL)
            return -1;
        bkt_append(g, b, 0, b->n);
        dir_set(m, dir_index(m, h), d, g);
        bkt_free(m, b);
        return 0;
    }
    /* Sorted order puts every 0 of bit 63 - d before every 1. */
    while (lo < hi) {
        uint32_t q = lo + (hi - lo) / 2;

        if ((b->h[q] << d) >> 63)
            hi = q;
        else
            lo = q + 1;
    }
    if (d == m->gdepth && dir_double(m) != 0)
        return -1;
    l = bkt_build(m, d + 1, b, 0, lo, NULL);
    if (l == NULL)
        return -1;
    r = bkt_build(m, d + 1, b, lo, b->n, NULL);
    if (r == NULL) {
        bkt_free(m, l);
        return -1;
    }
    first = dir_first(m, dir_index(m, h), d);
    half = (size_t)1 << (m->gdepth - d - 1);
    for (size_t i = 0; i < half; i++) {
        m->dir[first + i] = l;
        m->dir[first + half + i] = r;
    }
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
    uint8_t d = b->depth;
    struct bkt *g;

    if (d == 0 && b->n == 0) {
        /* A directory doubled for a split that then failed may still point
         * here: fold it back first so that no entry dangles. */
        dir_shrink(m);
        bkt_free(m, b);
        m->b0 = NULL;
        return;
    }
    if (d > 0 && b->n < U32MAP_BUCKET_MAX / 4) {
        size_t idx = dir_index(m, h);
        size_t bidx = idx ^ ((size_t)1 << (m->gdepth - d));
        struct bkt *o = m->dir[bidx];

        if (o->depth == d && b->n + o->n <= U32MAP_BUCKET_MAX / 2) {
            struct bkt *lo = idx < bidx ? b : o, *hi = idx < bidx ? o : b;

            g = bkt_build(m, d - 1, lo, 0, lo->n, hi);
            if (g == NULL)
                return;
            dir_set(m, idx, d - 1, g);
            bkt_free(m, b);
            bkt_free(m, o);
            if (d == m->gdepth)
                dir_shrink(m);
            return;
        }
    }
    if (b->n >= b->cap / 2 || cap_for(b->n, d) >= b->cap)
        return;
    g = bkt_build(m, d, b, 0, b->n, NULL);
    if (g == NULL)
        return;
    dir_set(m, dir_index(m, h), d, g);
    bkt_free(m, b);
}

void u32map_setup(uint64_t seed)
{
    map_default_seed = seed;
}

struct u32map *u32map_create(void)
{
    struct u32map *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return NULL;
    m->dir = &m->b0;
    m->seed = map_default_seed;
    m->bytes = sizeof(*m);
    return m;
}

void u32map_destroy(struct u32map *m)
{
    size_t n;

    if (m == NULL)
        return;
    n = (size_t)1 << m->gdepth;
    /* A depth-d bucket fills 1 << (gdepth - d) entries: free it once. */
    for (size_t i = 0; i < n;) {
        struct bkt *b = m->dir[i];

        if (b == NULL)
            break;
        i += (size_t)1 << (m->gdepth - b->depth);
        free(b);
    }
    if (m->gdepth > 0)
        free(m->dir);
    free(m);
}

/* key's value in m, or NULL. */
static uint32_t *map_find(const struct u32map *m, uint64_t key)
{
    uint64_t h = map_hash(key, m->seed);
    const struct bkt *b = m->dir[dir_index(m, h)];
    uint32_t i;

    if (b == NULL)
        return NULL;
    i = bkt_lower(b, h);
    return i < b->n && b->h[i] == h ? &bkt_vals(b)[i] : NULL;
}

uint32_t *u32map_ref(struct u32map *m, uint64_t key)
{
    return map_find(m, key);
}

bool u32map_get(const struct u32map *m, uint64_t key, uint32_t *val)
{
    const uint32_t *v = map_find(m, key);

    if (v == NULL)
        return false;
    *val = *v;
    return true;
}

int u32map_put(struct u32map *m, uint64_t key, uint32_t val)
{
    uint64_t h = map_hash(key, m->seed);

    for (;;) {
        struct bkt *b = m->dir[dir_index(m, h)];
        uint32_t i, *v;

        if (b == NULL) {
            /* Only an empty map (gdepth 0) has no bucket. */
            b = m->b0 = bkt_alloc(m, BKT_MIN_CAP, 0);
            if (b == NULL)
                return -1;
        }
        i = bkt_lower(b, h);
        v = bkt_vals(b);
        if (i < b->n && b->h[i] == h) {
            v[i] = val;
            return 0;
        }
        if (b->n < b->cap) {
            memmove(&b->h[i + 1], &b->h[i], (b->n - i) * sizeof(uint64_t));
            memmove(&v[i + 1], &v[i], (b->n - i) * sizeof(uint32_t));
            b->h[i] = h;
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
    uint64_t h = map_hash(key, m->seed);
    struct bkt *b = m->dir[dir_index(m, h)];
    uint32_t i, *v;

    if (b == NULL)
        return false;
    i = bkt_lower(b, h);
    if (i == b->n || b->h[i] != h)
        return false;
    v = bkt_vals(b);
    memmove(&b->h[i], &b->h[i + 1], (b->n - i - 1) * sizeof(uint64_t));
    memmove(&v[i], &v[i + 1], (b->n - i - 1) * sizeof(uint32_t));
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
    return m->bytes;
}

/*
 * The cursor is the hash of the next entry to visit: resume at its bucket
 * and position, then continue with the bucket after that prefix range.
 */
size_t u32map_scan(const struct u32map *m, uint64_t *cursor, size_t max,
                   u32map_visit_fn fn, void *ctx)
{
    uint64_t h = *cursor;
    size_t n = 0;

    if (max == 0)
        return 0;
    for (;;) {
        const struct bkt *b = m->dir[dir_index(m, h)];
        uint8_t d = b ? b->depth : 0;

        for (uint32_t i = b ? bkt_lower(b, h) : 0; b && i < b->n; i++) {
            if (n == max) {
                *cursor = b->h[i];
                return n;
            }
            fn(map_unhash(b->h[i], m->seed), bkt_vals(b)[i], ctx);
            n++;
        }
        if (d == 0 || (h >> (64 - d)) == ((uint64_t)1 << d) - 1) {
            *cursor = 0;
            return n;
        }
        h = ((h >> (64 - d)) + 1) << (64 - d);
    }
}

/* Violations inside one bucket referenced from directory index i. */
static size_t bkt_audit(const struct u32map *m, const struct bkt *b, size_t i,
                        size_t span)
{
    size_t bad = 0;

    bad += b->n > b->cap;
    bad += b->cap > U32MAP_BUCKET_MAX && b->depth < MAP_MAX_DEPTH;
    for (uint32_t k = 0; k < b->n; k++) {
        size_t di = dir_index(m, b->h[k]);

        bad += k > 0 && b->h[k] <= b->h[k - 1];
        bad += di < i || di >= i + span;
    }
    return bad;
}

size_t u32map_audit(const struct u32map *m)
{
    size_t bad = 0, count = 0, bytes = sizeof(*m), nbkts = 0;
    size_t n = (size_t)1 << m->gdepth;

    if (m->gdepth > 0)
        bytes += n * sizeof(struct bkt *);
    for (size_t i = 0; i < n;) {
        const struct bkt *b = m->dir[i];
        size_t span;

        if (b == NULL) {
            bad += m->gdepth != 0 || m->count != 0;
            break;
        }
        if (b->depth > m->gdepth) {
            bad++;
            break;
        }
        span = (size_t)1 << (m->gdepth - b->depth);
        for (size_t j = 0; j < span; j++)
            bad += i + j >= n || m->dir[i + j] != b;
        bad += bkt_audit(m, b, i, span);
        count += b->n;
        bytes += bkt_size(b->cap);
        nbkts++;
        i += span;
    }
    bad += count != m->count;
    bad += bytes != m->bytes;
    bad += nbkts != m->nbkts;
    return bad;
}
