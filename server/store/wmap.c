/*
 * wmap.c - linear hashing by hash prefix, buckets indexed by a u64map.
 *
 * Every key is stored as h, a keyed bijection of the key (the key is
 * recovered from h for walks), and the whole map is ordered by h. Buckets
 * partition the hash space by prefix. With `level` L and split pointer p
 * (0 <= p < 2^L), the L-bit prefixes below p have already been split in two
 * (L+1 bits each); the others are buckets of L bits. So there are 2^L + p
 * buckets and h alone says which one holds it (bucket_of). A bucket is a
 * sorted array of entries, found by binary search, stored in the index
 * under the key (1 << bits) | prefix; an empty bucket is not stored at all.
 *
 * Growth: whenever the average bucket would hold more than SPLIT_LOAD
 * entries, bucket p is split and p advances (at 2^L, L grows and p restarts
 * at 0); under MERGE_LOAD the last split is undone. Since entries are sorted
 * by h, a split is a cut at one position and a merge a concatenation; and
 * the scan cursor is simply the next hash to visit, so walks survive both.
 * Splits and merges are optional upkeep: one that cannot allocate is simply
 * skipped, and the map stays valid with fuller or emptier buckets.
 *
 * Buckets are sized exactly (realloc on each insert and delete): a bucket is
 * a few hundred bytes, so the copy is cheap and no slack is carried.
 */
#include "wmap.h"

#include "hash.h"
#include "u64map.h"

#include <string.h>

struct wslot {
    uint64_t h;
    struct wmap_val v;
};

struct bucket {
    uint32_t n;   /* entries, ascending h */
    uint32_t cap; /* allocated entries (> n only after a failed shrink) */
    struct wslot e[];
};

struct wmap {
    struct u64map *dir;  /* bucket key -> struct bucket * */
    struct mem_acct mem; /* the index and the buckets */
    uint64_t seed;
    uint64_t split; /* next bucket to split, at `level` bits */
    unsigned level;
    size_t count;
};

/* Average entries per bucket: ~400-byte buckets, 4 probes of binary search,
 * index overhead ~2.5 bytes per entry. */
#define SPLIT_LOAD 16u
#define MERGE_LOAD 8u

/* One bucket's place in the hash space: its top `bits` bits are `prefix`. */
struct baddr {
    unsigned bits;
    uint64_t prefix;
};

static inline uint64_t prefix_of(uint64_t h, unsigned bits)
{
    return bits ? h >> (64 - bits) : 0;
}

static inline uint64_t dir_key(struct baddr a)
{
    return (UINT64_C(1) << a.bits) | a.prefix;
}

static struct baddr bucket_of(const struct wmap *m, uint64_t h)
{
    struct baddr a = {m->level, prefix_of(h, m->level)};

    if (a.prefix < m->split) {
        a.bits++;
        a.prefix = prefix_of(h, a.bits);
    }
    return a;
}

static inline uint64_t bucket_total(const struct wmap *m)
{
    return (UINT64_C(1) << m->level) + m->split;
}

static inline struct bucket *bucket_get(const struct wmap *m, struct baddr a)
{
    return (struct bucket *)(uintptr_t)u64map_get(m->dir, dir_key(a));
}

static inline size_t bucket_size(uint32_t cap)
{
    return sizeof(struct bucket) + (size_t)cap * sizeof(struct wslot);
}

/* First position whose hash is >= h (n when none). Branch-free: hashes
 * are random, so a branchy search mispredicts at every step, which costs
 * more than the search itself in a bucket that is in cache. */
static uint32_t slot_index(const struct bucket *b, uint64_t h)
{
    const struct wslot *p = b->e;
    uint32_t n = b->n;

    if (n == 0)
        return 0;
    while (n > 1) {
        uint32_t half = n / 2;

        p = p[half].h < h ? p + half : p;
        n -= half;
    }
    return (uint32_t)(p - b->e) + (p->h < h);
}

/* A bucket of n entries, to be filled by the caller; or NULL. */
static struct bucket *bucket_alloc(struct wmap *m, uint32_t n)
{
    struct bucket *b = mem_alloc(&m->mem, bucket_size(n));

    if (b == NULL)
        return NULL;
    b->n = b->cap = n;
    return b;
}

/* A bucket holding a copy of src[0..n), or NULL. */
static struct bucket *bucket_new(struct wmap *m, const struct wslot *src,
                                 uint32_t n)
{
    struct bucket *b = bucket_alloc(m, n);

    if (b != NULL)
        memcpy(b->e, src, (size_t)n * sizeof(struct wslot));
    return b;
}

static void bucket_free(struct wmap *m, struct bucket *b)
{
    mem_free(&m->mem, b, bucket_size(b->cap));
}

/* b resized to hold cap entries: the new address, or NULL with b intact
 * (growing only: a shrink never fails, mem.h). */
static struct bucket *bucket_resize(struct wmap *m, struct bucket *b,
                                    uint32_t cap)
{
    struct bucket *nb =
        mem_realloc(&m->mem, b, bucket_size(b->cap), bucket_size(cap));

    if (nb == NULL)
        return NULL;
    nb->cap = cap;
    return nb;
}

/* Points the index entry of bucket a to nb (a moved bucket). */
static void bucket_moved(struct wmap *m, struct baddr a, struct bucket *nb)
{
    *u64map_ref(m->dir, dir_key(a)) = (uint64_t)(uintptr_t)nb;
}

struct wmap *wmap_create(struct mem_acct *owner)
{
    struct wmap *m = mem_zalloc(owner, sizeof(*m));

    if (m == NULL)
        return NULL;
    mem_acct_init(&m->mem, owner);
    m->dir = u64map_create(&m->mem);
    if (m->dir == NULL) {
        mem_free(owner, m, sizeof(*m));
        return NULL;
    }
    m->seed = hash_seed(HASH_WMAP);
    return m;
}

static void free_bucket_visit(uint64_t key, uint64_t val, void *ctx)
{
    (void)key;
    bucket_free(ctx, (struct bucket *)(uintptr_t)val);
}

void wmap_destroy(struct wmap *m)
{
    uint64_t cursor = 0;

    if (m == NULL)
        return;
    do
        u64map_scan(m->dir, &cursor, SIZE_MAX, free_bucket_visit, m);
    while (cursor != 0);
    u64map_destroy(m->dir);
    mem_free(m->mem.up, m, sizeof(*m));
}

const struct wmap_val *wmap_get(const struct wmap *m, uint64_t key)
{
    uint64_t h = hash_u64(key, m->seed);
    const struct bucket *b = bucket_get(m, bucket_of(m, h));
    uint32_t i;

    if (b == NULL)
        return NULL;
    i = slot_index(b, h);
    return i < b->n && b->e[i].h == h ? &b->e[i].v : NULL;
}

/* Lines of a bucket stage 1 asks for: the header and ~40 entries, more
 * than a bucket holds between splits (SPLIT_LOAD on average). */
#define PREFETCH_LINES 16

void wmap_prefetch(const struct wmap *m, uint64_t key, int stage)
{
    uint64_t h, dk;
    const struct bucket *b;
    size_t end;

    if (stage > 3)
        return;
    h = hash_u64(key, m->seed);
    dk = dir_key(bucket_of(m, h));
    if (stage == 0) {
        u64map_prefetch(m->dir, dk, 0);
        u64map_prefetch(m->dir, dk, 1);
        return;
    }
    b = (const struct bucket *)(uintptr_t)u64map_get(m->dir, dk);
    if (b == NULL)
        return;
    if (stage == 2) {
        __builtin_prefetch(b);
        return;
    }
    /* stage 1: PREFETCH_LINES; stage 3: the lines of b's n entries */
    end = stage == 1 ? 64 * PREFETCH_LINES : bucket_size(b->n);
    for (size_t i = stage == 1 ? 0 : 64; i < end; i += 64)
        __builtin_prefetch((const char *)b + i);
}

void wmap_probe(const struct wmap *m, uint64_t key, int stage,
                struct wmap_probe *p)
{
    const struct bucket *b;

    switch (stage) {
    case 0:
        p->h = hash_u64(key, m->seed);
        u64map_probe(m->dir, dir_key(bucket_of(m, p->h)), 0, &p->dir);
        return;
    case 1:
        u64map_probe(m->dir, 0, 1, &p->dir);
        return;
    case 2:
        u64map_probe(m->dir, 0, 2, &p->dir);
        if (p->dir.val != 0)
            __builtin_prefetch((const void *)(uintptr_t)p->dir.val);
        return;
    case 3:
        b = (const struct bucket *)(uintptr_t)p->dir.val;
        if (b == NULL)
            return;
        for (size_t i = 64; i < bucket_size(b->n); i += 64)
            __builtin_prefetch((const char *)b + i);
        return;
    default:
        return;
    }
}

const struct wmap_val *wmap_get_probed(const struct wmap_probe *p)
{
    const struct bucket *b = (const struct bucket *)(uintptr_t)p->dir.val;
    uint32_t i;

    if (b == NULL)
        return NULL;
    i = slot_index(b, p->h);
    return i < b->n && b->e[i].h == p->h ? &b->e[i].v : NULL;
}

struct wmap_val *wmap_ref(struct wmap *m, uint64_t key)
{
    return (struct wmap_val *)wmap_get(m, key);
}

/*
 * Splits bucket `split` of `level` bits into its two halves of level + 1
 * bits and advances the split pointer. Skipped (map unchanged) when memory
 * runs out: the new index entries are put before the old one is removed.
 */
static void map_split(struct wmap *m)
{
    struct baddr old = {m->level, m->split};
    struct baddr lo = {m->level + 1, 2 * m->split};
    struct baddr hi = {m->level + 1, 2 * m->split + 1};
    struct bucket *b = bucket_get(m, old), *hb = NULL;

    if (b != NULL) {
        uint32_t cut = slot_index(b, hi.prefix << (64 - hi.bits));

        if (cut < b->n) {
            hb = bucket_new(m, &b->e[cut], b->n - cut);
            if (hb == NULL)
                return;
            if (u64map_put(m->dir, dir_key(hi), (uint64_t)(uintptr_t)hb) != 0) {
                bucket_free(m, hb);
                return;
            }
        }
        if (cut > 0 &&
            u64map_put(m->dir, dir_key(lo), (uint64_t)(uintptr_t)b) != 0) {
            if (hb != NULL) {
                u64map_del(m->dir, dir_key(hi));
                bucket_free(m, hb);
            }
            return;
        }
        u64map_del(m->dir, dir_key(old));
        if (cut == 0) {
            bucket_free(m, b);
        } else {
            struct bucket *nb;

            b->n = cut;
            nb = bucket_resize(m, b, cut);
            if (nb != NULL && nb != b)
                bucket_moved(m, lo, nb);
        }
    }
    if (++m->split == UINT64_C(1) << m->level) {
        m->level++;
        m->split = 0;
    }
}

/* Undoes the last split: the two halves become one bucket again. Skipped
 * when memory runs out (the merged bucket is built before anything moves). */
static void map_merge(struct wmap *m)
{
    struct baddr to, lo, hi;
    struct bucket *lb, *hb, *b;
    uint32_t nlo, nhi;

    if (m->split == 0 && m->level == 0)
        return;
    if (m->split == 0)
        to = (struct baddr){m->level - 1, (UINT64_C(1) << (m->level - 1)) - 1};
    else
        to = (struct baddr){m->level, m->split - 1};
    lo = (struct baddr){to.bits + 1, 2 * to.prefix};
    hi = (struct baddr){to.bits + 1, 2 * to.prefix + 1};
    lb = bucket_get(m, lo);
    hb = bucket_get(m, hi);
    nlo = lb ? lb->n : 0;
    nhi = hb ? hb->n : 0;
    if (nlo + nhi > 0) {
        b = bucket_alloc(m, nlo + nhi);
        if (b == NULL)
            return;
        if (nlo)
            memcpy(b->e, lb->e, (size_t)nlo * sizeof(struct wslot));
        if (nhi)
            memcpy(b->e + nlo, hb->e, (size_t)nhi * sizeof(struct wslot));
        if (u64map_put(m->dir, dir_key(to), (uint64_t)(uintptr_t)b) != 0) {
            bucket_free(m, b);
            return;
        }
        if (lb != NULL) {
            u64map_del(m->dir, dir_key(lo));
            bucket_free(m, lb);
        }
        if (hb != NULL) {
            u64map_del(m->dir, dir_key(hi));
            bucket_free(m, hb);
        }
    }
    m->level = to.bits;
    m->split = to.prefix;
}

/* Inserts {h, {0, 0}} at position i of bucket a (b: NULL when empty). */
static struct wmap_val *bucket_insert(struct wmap *m, struct baddr a,
                                      struct bucket *b, uint32_t i, uint64_t h)
{
    struct wslot e = {h, {0, 0}};

    if (b == NULL) {
        b = bucket_new(m, &e, 1);
        if (b == NULL)
            return NULL;
        if (u64map_put(m->dir, dir_key(a), (uint64_t)(uintptr_t)b) != 0) {
            bucket_free(m, b);
            return NULL;
        }
    } else {
        if (b->n == b->cap) {
            struct bucket *nb = bucket_resize(m, b, b->n + 1);

            if (nb == NULL)
                return NULL;
            if (nb != b)
                bucket_moved(m, a, nb);
            b = nb;
        }
        memmove(&b->e[i + 1], &b->e[i], (b->n - i) * sizeof(struct wslot));
        b->e[i] = e;
        b->n++;
    }
    m->count++;
    return &b->e[i].v;
}

struct wmap_val *wmap_add(struct wmap *m, uint64_t key, bool *created)
{
    uint64_t h = hash_u64(key, m->seed);
    struct baddr a = bucket_of(m, h);
    struct bucket *b = bucket_get(m, a);
    uint32_t i = b ? slot_index(b, h) : 0;

    *created = false;
    if (b != NULL && i < b->n && b->e[i].h == h)
        return &b->e[i].v;
    /* Split before inserting, so the pointer returned stays valid. */
    if (m->count + 1 > SPLIT_LOAD * bucket_total(m)) {
        map_split(m);
        a = bucket_of(m, h);
        b = bucket_get(m, a);
        i = b ? slot_index(b, h) : 0;
    }
    *created = true;
    return bucket_insert(m, a, b, i, h);
}

bool wmap_del(struct wmap *m, uint64_t key)
{
    uint64_t h = hash_u64(key, m->seed);
    struct baddr a = bucket_of(m, h);
    struct bucket *b = bucket_get(m, a);
    uint32_t i = b ? slot_index(b, h) : 0;

    if (b == NULL || i == b->n || b->e[i].h != h)
        return false;
    memmove(&b->e[i], &b->e[i + 1], (b->n - i - 1) * sizeof(struct wslot));
    b->n--;
    m->count--;
    if (b->n == 0) {
        u64map_del(m->dir, dir_key(a));
        bucket_free(m, b);
    } else {
        /* A failed shrink keeps the larger block: still valid. */
        struct bucket *nb = bucket_resize(m, b, b->n);

        if (nb != NULL && nb != b)
            bucket_moved(m, a, nb);
    }
    if (m->count < MERGE_LOAD * bucket_total(m))
        map_merge(m);
    return true;
}

size_t wmap_count(const struct wmap *m)
{
    return m->count;
}

size_t wmap_bytes(const struct wmap *m)
{
    return sizeof(*m) + m->mem.bytes;
}

size_t wmap_scan(const struct wmap *m, uint64_t *cursor, size_t max,
                 wmap_visit_fn fn, void *ctx)
{
    uint64_t h = *cursor;
    size_t done = 0;

    if (max == 0)
        return 0;
    for (;;) {
        struct baddr a = bucket_of(m, h);
        const struct bucket *b = bucket_get(m, a);

        for (uint32_t i = b ? slot_index(b, h) : 0; b && i < b->n; i++) {
            if (done == max) {
                *cursor = b->e[i].h;
                return done;
            }
            fn(hash_u64_inv(b->e[i].h, m->seed), &b->e[i].v, ctx);
            done++;
        }
        if (a.prefix + 1 == UINT64_C(1) << a.bits) {
            *cursor = 0;
            return done;
        }
        h = (a.prefix + 1) << (64 - a.bits);
    }
}

void wmap_stats(const struct wmap *m, struct wmap_stats *st)
{
    st->count = m->count;
    st->bytes = wmap_bytes(m);
    st->buckets = u64map_count(m->dir);
    st->level = m->level;
}

struct audit_ctx {
    const struct wmap *m;
    size_t bad, count, bytes;
};

/* One index entry: a live bucket address holding sorted hashes of its
 * prefix only. */
static void audit_visit(uint64_t key, uint64_t val, void *ctx)
{
    struct audit_ctx *ac = ctx;
    const struct wmap *m = ac->m;
    const struct bucket *b = (const struct bucket *)(uintptr_t)val;
    struct baddr a = {63u - (unsigned)__builtin_clzll(key), 0};
    bool live;

    a.prefix = key ^ (UINT64_C(1) << a.bits);
    live = (a.bits == m->level && a.prefix >= m->split) ||
           (a.bits == m->level + 1 && a.prefix < 2 * m->split);
    ac->bad += !live || b->n == 0 || b->n > b->cap;
    for (uint32_t i = 0; i < b->n; i++) {
        ac->bad += prefix_of(b->e[i].h, a.bits) != a.prefix;
        ac->bad += i > 0 && b->e[i].h <= b->e[i - 1].h;
    }
    ac->count += b->n;
    ac->bytes += bucket_size(b->cap);
}

size_t wmap_audit(const struct wmap *m)
{
    struct audit_ctx ac = {m, 0, 0, 0};
    uint64_t cursor = 0;

    do
        u64map_scan(m->dir, &cursor, SIZE_MAX, audit_visit, &ac);
    while (cursor != 0);
    return ac.bad + u64map_audit(m->dir) + (ac.count != m->count) +
           (ac.bytes + u64map_bytes(m->dir) != m->mem.bytes) +
           (m->split >= UINT64_C(1) << m->level);
}
