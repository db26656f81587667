/*
 * u64map.c - extendible hashing over Robin Hood segments, kept in hash order.
 *
 * Layout. A key's 64-bit hash h is a keyed bijection of the key (distinct keys
 * never share a hash). The directory has 1 << gdepth entries and is indexed
 * by the top gdepth bits of h. A segment of local depth d holds exactly the
 * hashes whose top d bits are its prefix; it is referenced by the
 * 1 << (gdepth - d) consecutive directory entries that share that prefix.
 *
 * Inside a segment, a key's home slot comes from the 32 hash bits right after
 * the prefix, scaled to the segment's capacity with a multiply-shift (no
 * power-of-two capacities, no modulo). That mapping is monotone in h, and
 * insertion keeps every segment strictly sorted by h (Robin Hood with ties
 * broken by hash): a key sits at or after its home and every slot between
 * its home and itself is occupied. Runs may spill into a small slack area
 * past the last home but never wrap around. Consequences:
 *   - lookups stop at the first empty slot or the first larger hash;
 *   - deletion is a backward shift, no tombstones;
 *   - rebuilding (grow, shrink, split, merge) is a single ordered append
 *     with no probing, and a split is a cut at one position;
 *   - the whole map is ordered by h, so the scan cursor is simply the next
 *     hash to visit and survives any growth, split or merge.
 *
 * Bounded pauses. A segment grows x1.125 up to SEG_MAX_CAP homes, then splits
 * in two by the next hash bit; a sparse segment shrinks or merges with its
 * buddy. Each of these rebuilds one or two segments (at most SEG_MAX_CAP
 * entries) and at worst copies the directory, which holds one pointer per
 * ~3000 keys. No operation touches the rest of the map.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include "u64map.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct slot {
    uint64_t key;
    uint64_t val; /* 0: empty slot */
};

struct seg {
    uint32_t cap;    /* homes are 0..cap-1 */
    uint32_t nslots; /* cap plus spill slack */
    uint32_t count;
    uint8_t depth; /* local depth: the number of prefix bits */
    struct slot slot[];
};

struct u64map {
    struct seg **dir; /* 1 << gdepth entries; &seg0 while gdepth is 0 */
    struct seg *seg0; /* NULL for an empty map that has no segment yet */
    void *spare;      /* the last unmapped segment's pages, kept for reuse */
    size_t spare_size;
    uint64_t seed;
    size_t count;
    size_t bytes; /* including the spare */
    uint32_t nsegs;
    uint8_t gdepth;
};

/*
 * Segments grow from SEG_MIN_CAP homes up to SEG_MAX_CAP (64 KiB), then
 * split. Growth happens at 90% load, in steps of x1.125; splits, merges and
 * shrinks (below 40%) rebuild at 80%. Robin Hood ordering keeps probes short
 * at 90%. Uniform hashing makes all segments of a map fill in step, so the
 * map's average load swings with the number of keys between the rebuild
 * level and the limit: small steps keep that swing to 0.8..0.9, i.e. 18-21
 * bytes per entry at any size. (x1.25 steps swing 0.72..0.9: 22+ bytes at
 * the bottom.) The price is a rebuild every ~0.1 * cap inserts into a
 * segment: ~10 slot moves per insert, amortized.
 */
#define SEG_MIN_CAP 4u
#define SEG_MAX_CAP 4000u
#define SEG_MAX_LOAD(cap) ((cap) - (cap) / 10)
#define SEG_SHRINK_BELOW(cap) ((cap)*2 / 5)
/* Depth is limited by the 32 home bits that must remain after the prefix. */
#define MAP_MAX_DEPTH 32u

/* The seed of new maps: a constant until u64map_setup says otherwise. */
static uint64_t map_default_seed = 0x9e3779b97f4a7c15ULL;

/*
 * Keyed bijection (murmur3 finalizer with the seed mixed in twice). Being a
 * bijection is what lets the scan cursor be a plain hash value. The seed is
 * hardening against uids chosen to collide, not cryptography.
 */
static inline uint64_t map_hash(uint64_t key, uint64_t seed)
{
    uint64_t z = key ^ seed;

    z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdULL;
    z += (seed << 32) | (seed >> 32);
    z = (z ^ (z >> 33)) * 0xc4ceb9fe1a85ec53ULL;
    return z ^ (z >> 33);
}

/*
 * Spill area past the last home: ~0.8%, plus a little for tiny segments.
 * A run reaching past it forces an early growth: measured, ~5 times per
 * million inserts.
 */
static inline uint32_t seg_slack(uint32_t cap)
{
    return 4 + cap / 128;
}

static inline size_t seg_size(uint32_t nslots)
{
    return sizeof(struct seg) + (size_t)nslots * sizeof(struct slot);
}

static inline uint32_t seg_home(const struct seg *s, uint64_t h)
{
    uint32_t x = (uint32_t)((h << s->depth) >> 32);

    return (uint32_t)(((uint64_t)x * s->cap) >> 32);
}

static inline size_t dir_index(const struct u64map *m, uint64_t h)
{
    return m->gdepth ? (size_t)(h >> (64 - m->gdepth)) : 0;
}

/* First directory index of the range that points to a depth-d segment. */
static inline size_t dir_first(const struct u64map *m, size_t idx, uint8_t d)
{
    unsigned shift = m->gdepth - d;

    return (idx >> shift) << shift;
}

/* Homes for n entries at 80% load: the level rebuilds aim for. */
static uint32_t cap_for(size_t n)
{
    size_t cap = n + n / 4 + 1;

    if (cap < SEG_MIN_CAP)
        cap = SEG_MIN_CAP;
    return (uint32_t)cap;
}

static uint32_t cap_next(uint32_t cap)
{
    uint32_t next = cap + cap / 8 + 1;

    /* Skip a last tiny step before the maximum: it would rebuild for little. */
    if (cap < SEG_MAX_CAP && next > SEG_MAX_CAP - SEG_MAX_CAP / 16)
        next = SEG_MAX_CAP;
    return next;
}

/*
 * Large segments are mapped straight from the kernel, in whole pages. Under
 * malloc, segments that all grow in step (uniform hashing makes them do so)
 * leave each generation's freed blocks behind as holes too small for the
 * next generation: +15-20% RSS over the live bytes. Unmapped pages go back to
 * the kernel, and the page rounding is handed to the segment as extra homes,
 * so RSS matches u64map_bytes. The last released mapping is kept as a spare
 * and resized with mremap for the next segment: that saves most of the page
 * faults of a fresh mapping, which dominate a rebuild on virtual machines.
 * Small segments (small maps) stay on malloc. Address sanitizer builds use
 * malloc throughout so that overruns are caught.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SEG_MMAP_MIN SIZE_MAX
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SEG_MMAP_MIN SIZE_MAX
#endif
#endif
#ifndef SEG_MMAP_MIN
#define SEG_MMAP_MIN ((size_t)16384)
#endif

static size_t page_size(void)
{
    static size_t ps;

    if (ps == 0) {
        long p = sysconf(_SC_PAGESIZE);

        ps = p > 0 ? (size_t)p : 4096;
    }
    return ps;
}

/* Whether a segment of this many slots lives in its own mapping. */
static inline bool seg_mapped(uint32_t nslots)
{
    return seg_size(nslots) >= SEG_MMAP_MIN;
}

static void spare_drop(struct u64map *m)
{
    if (m->spare == NULL)
        return;
    munmap(m->spare, m->spare_size);
    m->bytes -= m->spare_size;
    m->spare = NULL;
    m->spare_size = 0;
}

/* size zeroed bytes of fresh or recycled pages, or NULL. */
static void *pages_get(struct u64map *m, size_t size)
{
    void *p;

    if (m->spare != NULL) {
        size_t old = m->spare_size;

        p = mremap(m->spare, old, size, MREMAP_MAYMOVE);
        if (p != MAP_FAILED) {
            m->bytes -= old;
            m->spare = NULL;
            m->spare_size = 0;
            memset(p, 0, old < size ? old : size);
            m->bytes += size;
            return p;
        }
        spare_drop(m);
    }
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    m->bytes += size;
    return p;
}

static void pages_put(struct u64map *m, void *p, size_t size)
{
    spare_drop(m);
    m->spare = p;
    m->spare_size = size;
}

/* A zeroed segment with at least cap homes, or NULL. */
static struct seg *seg_alloc(struct u64map *m, uint32_t cap, uint8_t depth)
{
    uint32_t slack = seg_slack(cap), nslots = cap + slack;
    size_t size = seg_size(nslots);
    struct seg *s;

    if (size >= SEG_MMAP_MIN) {
        size_t ps = page_size();

        size = (size + ps - 1) / ps * ps;
        nslots = (uint32_t)((size - sizeof(struct seg)) / sizeof(struct slot));
        cap = nslots - slack;
        s = pages_get(m, size);
    } else {
        s = calloc(1, size);
        if (s != NULL)
            m->bytes += size;
    }
    if (s == NULL)
        return NULL;
    s->cap = cap;
    s->nslots = nslots;
    s->depth = depth;
    m->nsegs++;
    return s;
}

static void seg_free(struct u64map *m, struct seg *s)
{
    size_t size;

    if (s == NULL)
        return;
    size = seg_size(s->nslots);
    m->nsegs--;
    if (seg_mapped(s->nslots)) {
        pages_put(m, s, size);
    } else {
        m->bytes -= size;
        free(s);
    }
    /* An empty map keeps nothing back. */
    if (m->nsegs == 0)
        spare_drop(m);
}

/*
 * Appends src's slots [from, to) to d, which must receive hashes in
 * increasing order (*next: first free position, start at 0). -1 when a run
 * would spill past the slack; d is then partly filled and must be dropped.
 */
static int seg_append(struct seg *d, const struct seg *src, uint32_t from,
                      uint32_t to, uint32_t *next, uint64_t seed)
{
    for (uint32_t i = from; i < to; i++) {
        const struct slot *sl = &src->slot[i];
        uint32_t p;

        if (sl->val == 0)
            continue;
        p = seg_home(d, map_hash(sl->key, seed));
        if (p < *next)
            p = *next;
        if (p >= d->nslots)
            return -1;
        d->slot[p] = *sl;
        d->count++;
        *next = p + 1;
    }
    return 0;
}

/*
 * A new segment of the given depth holding a's slots [afrom, ato) followed by
 * b's [bfrom, bto) (b may be NULL), with at least `cap` homes. NULL on
 * allocation failure.
 */
static struct seg *seg_build(struct u64map *m, uint8_t depth, uint32_t cap,
                             const struct seg *a, uint32_t afrom, uint32_t ato,
                             const struct seg *b, uint32_t bfrom, uint32_t bto)
{
    for (;;) {
        struct seg *s = seg_alloc(m, cap, depth);
        uint32_t next = 0;

        if (s == NULL)
            return NULL;
        if (seg_append(s, a, afrom, ato, &next, m->seed) == 0 &&
            (b == NULL || seg_append(s, b, bfrom, bto, &next, m->seed) == 0))
            return s;
        /* A spill at 80% load is very unlikely; retry with more room. */
        seg_free(m, s);
        cap = cap + cap / 4 + 1;
    }
}

/* Points the directory range of old's depth at idx to s. */
static void dir_set(struct u64map *m, size_t idx, uint8_t depth, struct seg *s)
{
    size_t first = dir_first(m, idx, depth);
    size_t n = (size_t)1 << (m->gdepth - depth);

    for (size_t i = 0; i < n; i++)
        m->dir[first + i] = s;
}

static int dir_double(struct u64map *m)
{
    size_t n = (size_t)1 << m->gdepth;
    struct seg **d = malloc(2 * n * sizeof(*d));

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

/* Halves the directory while no segment uses its full depth. */
static void dir_shrink(struct u64map *m)
{
    while (m->gdepth > 0) {
        size_t n = (size_t)1 << m->gdepth;

        for (size_t i = 0; i < n; i++)
            if (m->dir[i]->depth == m->gdepth)
                return;
        if (m->gdepth == 1) {
            m->seg0 = m->dir[0];
            free(m->dir);
            m->dir = &m->seg0;
            m->bytes -= n * sizeof(struct seg *);
        } else {
            struct seg **d;

            for (size_t i = 0; i < n / 2; i++)
                m->dir[i] = m->dir[2 * i];
            /* Shrinking in place cannot really fail; if it does, keep it. */
            d = realloc(m->dir, n / 2 * sizeof(*d));
            if (d != NULL)
                m->dir = d;
            m->bytes -= n / 2 * sizeof(struct seg *);
        }
        m->gdepth--;
    }
}

/*
 * Makes room in s, the segment for hash h, which is at its load limit or
 * has no free slot for h: grow it, or split it at the maximum size. The
 * caller retries the insert. 0, or -1 on allocation failure (map unchanged
 * apart from a possibly doubled directory, which is a valid state).
 */
static int seg_make_room(struct u64map *m, struct seg *s, uint64_t h)
{
    struct seg *l, *r;
    uint32_t cut, nl = 0;
    uint8_t d = s->depth;
    size_t first, half;

    if (s->cap < SEG_MAX_CAP || d >= MAP_MAX_DEPTH) {
        struct seg *g =
            seg_build(m, d, cap_next(s->cap), s, 0, s->nslots, NULL, 0, 0);

        if (g == NULL)
            return -1;
        dir_set(m, dir_index(m, h), d, g);
        seg_free(m, s);
        return 0;
    }

    /*
     * Split on hash bit 63 - d. Sorted order puts every 0 before every 1, so
     * the cut is found by bisection (a dozen hashes, not thousands).
     */
    {
        uint32_t lo = 0, hi = s->nslots;

        while (lo < hi) {
            uint32_t q = lo + (hi - lo) / 2;

            while (q < hi && s->slot[q].val == 0)
                q++;
            if (q == hi || (map_hash(s->slot[q].key, m->seed) << d) >> 63)
                hi = lo + (hi - lo) / 2;
            else
                lo = q + 1;
        }
        cut = lo;
    }
    for (uint32_t i = 0; i < cut; i++)
        nl += s->slot[i].val != 0;
    if (d == m->gdepth && dir_double(m) != 0)
        return -1;
    l = seg_build(m, d + 1, cap_for(nl), s, 0, cut, NULL, 0, 0);
    if (l == NULL)
        return -1;
    r = seg_build(m, d + 1, cap_for(s->count - nl), s, cut, s->nslots, NULL, 0,
                  0);
    if (r == NULL) {
        seg_free(m, l);
        return -1;
    }
    first = dir_first(m, dir_index(m, h), d);
    half = (size_t)1 << (m->gdepth - d - 1);
    for (size_t i = 0; i < half; i++) {
        m->dir[first + i] = l;
        m->dir[first + half + i] = r;
    }
    seg_free(m, s);
    return 0;
}

/*
 * After a delete left s (the segment for hash h) sparse: merge it with its
 * buddy when both are small, else shrink it; free the last segment of an
 * empty map. Allocation failure just leaves s as it is.
 */
static void seg_trim(struct u64map *m, struct seg *s, uint64_t h)
{
    uint8_t d = s->depth;

    if (s->count >= SEG_SHRINK_BELOW(s->cap))
        return;
    if (d == 0 && s->count == 0) {
        seg_free(m, s);
        m->seg0 = NULL;
        return;
    }
    if (d > 0) {
        size_t idx = dir_index(m, h);
        size_t bidx = idx ^ ((size_t)1 << (m->gdepth - d));
        struct seg *b = m->dir[bidx];

        if (b->depth == d &&
            s->count + b->count <= SEG_MAX_LOAD(SEG_MAX_CAP) / 2) {
            struct seg *lo = idx < bidx ? s : b, *hi = idx < bidx ? b : s;
            struct seg *g = seg_build(m, d - 1, cap_for(s->count + b->count),
                                      lo, 0, lo->nslots, hi, 0, hi->nslots);

            if (g == NULL)
                return;
            dir_set(m, idx, d - 1, g);
            seg_free(m, s);
            seg_free(m, b);
            if (d == m->gdepth)
                dir_shrink(m);
            return;
        }
    }
    if (cap_for(s->count) < s->cap) {
        struct seg *g =
            seg_build(m, d, cap_for(s->count), s, 0, s->nslots, NULL, 0, 0);

        if (g == NULL)
            return;
        dir_set(m, dir_index(m, h), d, g);
        seg_free(m, s);
    }
}

struct u64map *u64map_create(void)
{
    struct u64map *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return NULL;
    m->dir = &m->seg0;
    m->seed = map_default_seed;
    m->bytes = sizeof(*m);
    return m;
}

void u64map_destroy(struct u64map *m)
{
    size_t n;

    if (m == NULL)
        return;
    n = (size_t)1 << m->gdepth;
    /* A depth-d segment fills 1 << (gdepth - d) entries: free it once. */
    for (size_t i = 0; i < n;) {
        struct seg *s = m->dir[i];

        if (s == NULL)
            break;
        i += (size_t)1 << (m->gdepth - s->depth);
        if (seg_mapped(s->nslots))
            munmap(s, seg_size(s->nslots));
        else
            free(s);
    }
    if (m->gdepth > 0)
        free(m->dir);
    if (m->spare != NULL)
        munmap(m->spare, m->spare_size);
    free(m);
}

void u64map_setup(uint64_t seed)
{
    map_default_seed = seed;
}

int u64map_seed(struct u64map *m, uint64_t seed)
{
    if (m->count != 0)
        return -1;
    m->seed = seed;
    return 0;
}

/* The slot holding key in s, or NULL. */
static struct slot *seg_find(const struct seg *s, uint64_t key, uint64_t h,
                             uint64_t seed)
{
    for (uint32_t p = seg_home(s, h); p < s->nslots; p++) {
        const struct slot *sl = &s->slot[p];

        if (sl->val == 0)
            return NULL;
        if (sl->key == key)
            return (struct slot *)sl;
        if (map_hash(sl->key, seed) > h)
            return NULL;
    }
    return NULL;
}

uint64_t u64map_get(const struct u64map *m, uint64_t key)
{
    uint64_t h = map_hash(key, m->seed);
    const struct seg *s = m->dir[dir_index(m, h)];
    const struct slot *sl = s ? seg_find(s, key, h, m->seed) : NULL;

    return sl ? sl->val : 0;
}

void u64map_prefetch(const struct u64map *m, uint64_t key, int stage)
{
    uint64_t h = map_hash(key, m->seed);
    const struct seg *s = m->dir[dir_index(m, h)];

    if (s == NULL)
        return;
    if (stage == 0)
        __builtin_prefetch(s);
    else
        __builtin_prefetch(&s->slot[seg_home(s, h)]);
}

uint64_t *u64map_ref(struct u64map *m, uint64_t key)
{
    uint64_t h = map_hash(key, m->seed);
    struct seg *s = m->dir[dir_index(m, h)];
    struct slot *sl = s ? seg_find(s, key, h, m->seed) : NULL;

    return sl ? &sl->val : NULL;
}

/*
 * Inserts absent key into s at its sorted position, shifting the rest of its
 * run right by one. -1 (s unchanged) when the run would pass the slack.
 */
static int seg_insert(struct seg *s, uint64_t key, uint64_t val, uint64_t h,
                      uint64_t seed)
{
    uint32_t p = seg_home(s, h), e;

    while (p < s->nslots && s->slot[p].val != 0 &&
           map_hash(s->slot[p].key, seed) < h)
        p++;
    for (e = p; e < s->nslots && s->slot[e].val != 0; e++)
        ;
    if (e == s->nslots)
        return -1;
    memmove(&s->slot[p + 1], &s->slot[p], (e - p) * sizeof(struct slot));
    s->slot[p].key = key;
    s->slot[p].val = val;
    s->count++;
    return 0;
}

int u64map_put(struct u64map *m, uint64_t key, uint64_t val)
{
    uint64_t h = map_hash(key, m->seed);

    for (;;) {
        struct seg *s = m->dir[dir_index(m, h)];
        struct slot *sl;

        if (s == NULL) {
            /* Only an empty map (gdepth 0) has no segment. */
            s = m->seg0 = seg_alloc(m, SEG_MIN_CAP, 0);
            if (s == NULL)
                return -1;
        }
        sl = seg_find(s, key, h, m->seed);
        if (sl != NULL) {
            sl->val = val;
            return 0;
        }
        if (s->count < SEG_MAX_LOAD(s->cap) &&
            seg_insert(s, key, val, h, m->seed) == 0) {
            m->count++;
            return 0;
        }
        if (seg_make_room(m, s, h) != 0)
            return -1;
    }
}

bool u64map_del(struct u64map *m, uint64_t key)
{
    uint64_t h = map_hash(key, m->seed);
    struct seg *s = m->dir[dir_index(m, h)];
    struct slot *sl = s ? seg_find(s, key, h, m->seed) : NULL;
    uint32_t p, e;

    if (sl == NULL)
        return false;
    /* Backward shift: pull back the following entries not at their home. */
    p = (uint32_t)(sl - s->slot);
    for (e = p + 1; e < s->nslots && s->slot[e].val != 0 &&
                    seg_home(s, map_hash(s->slot[e].key, m->seed)) < e;
         e++)
        ;
    memmove(&s->slot[p], &s->slot[p + 1], (e - p - 1) * sizeof(struct slot));
    s->slot[e - 1].key = 0;
    s->slot[e - 1].val = 0;
    s->count--;
    m->count--;
    seg_trim(m, s, h);
    return true;
}

size_t u64map_count(const struct u64map *m)
{
    return m->count;
}

size_t u64map_bytes(const struct u64map *m)
{
    return m->bytes;
}

void u64map_stats(const struct u64map *m, struct u64map_stats *st)
{
    st->count = m->count;
    st->bytes = m->bytes;
    st->segments = m->nsegs;
    st->depth = m->gdepth;
    st->slots = 0;
    for (size_t i = 0, n = (size_t)1 << m->gdepth; i < n;) {
        const struct seg *s = m->dir[i];

        if (s == NULL)
            break;
        st->slots += s->nslots;
        i += (size_t)1 << (m->gdepth - s->depth);
    }
}

/*
 * The map is ordered by hash, so the cursor is the hash of the next entry to
 * visit: growth, splits and merges move entries between slots and segments
 * but never change that order. Walking resumes at the cursor's segment and
 * its home slot there (entries at or past the cursor are never before it).
 */
size_t u64map_scan(const struct u64map *m, uint64_t *cursor, size_t max,
                   u64map_visit_fn fn, void *ctx)
{
    uint64_t h = *cursor;
    size_t n = 0;

    if (max == 0)
        return 0;
    for (;;) {
        const struct seg *s = m->dir[dir_index(m, h)];
        uint8_t d = s ? s->depth : 0;

        for (uint32_t p = s ? seg_home(s, h) : 0; s && p < s->nslots; p++) {
            const struct slot *sl = &s->slot[p];
            uint64_t hs;

            if (sl->val == 0)
                continue;
            hs = map_hash(sl->key, m->seed);
            if (hs < h)
                continue;
            if (n == max) {
                *cursor = hs;
                return n;
            }
            fn(sl->key, sl->val, ctx);
            n++;
        }
        /* Next segment: the first hash after this one's prefix range. */
        if (d == 0 || (h >> (64 - d)) == ((uint64_t)1 << d) - 1) {
            *cursor = 0;
            return n;
        }
        h = ((h >> (64 - d)) + 1) << (64 - d);
    }
}

size_t u64map_audit(const struct u64map *m)
{
    size_t bad = 0, count = 0, bytes = sizeof(*m) + m->spare_size, nsegs = 0;
    size_t n = (size_t)1 << m->gdepth;

    if (m->gdepth > 0)
        bytes += n * sizeof(struct seg *);
    for (size_t i = 0; i < n;) {
        const struct seg *s = m->dir[i];
        size_t span, c = 0;
        uint64_t prev = 0;

        if (s == NULL) {
            bad += m->gdepth != 0 || m->count != 0;
            break;
        }
        if (s->depth > m->gdepth) {
            bad++;
            break;
        }
        span = (size_t)1 << (m->gdepth - s->depth);
        for (size_t j = 0; j < span; j++)
            bad += i + j >= n || m->dir[i + j] != s;
        bad += s->nslots < s->cap + 4;
        for (uint32_t p = 0; p < s->nslots; p++) {
            const struct slot *sl = &s->slot[p];
            uint64_t hs;
            uint32_t home;

            if (sl->val == 0) {
                bad += sl->key != 0;
                continue;
            }
            hs = map_hash(sl->key, m->seed);
            home = seg_home(s, hs);
            /* In its segment, sorted, at or after home, no hole before. */
            bad += dir_index(m, hs) < i || dir_index(m, hs) >= i + span;
            bad += c > 0 && hs <= prev;
            bad += home > p || (home < p && s->slot[p - 1].val == 0);
            prev = hs;
            c++;
        }
        bad += c != s->count;
        count += c;
        bytes += seg_size(s->nslots);
        nsegs++;
        i += span;
    }
    bad += count != m->count;
    bad += bytes != m->bytes;
    bad += nsegs != m->nsegs;
    return bad;
}
