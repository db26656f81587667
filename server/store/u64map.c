/*
 * u64map.c - extendible hashing over Robin Hood segments, kept in hash order.
 *
 * Layout. A key's 64-bit hash h is hash.h's keyed bijection of the key
 * (distinct keys never share a hash), and a slot holds h in place of the
 * key (a walk gets the key back with hash_u64_inv). The directory (xdir.h,
 * shared with u32map) is indexed by the top bits of h; a segment of local
 * depth d holds exactly the hashes whose top d bits are its prefix.
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
#include "u64map.h"

#include <string.h>
#include <unistd.h>

#include "hash.h"
#include "xdir.h"

/* A slot holds its key's hash, not the key: the hash is a bijection of
 * the key (hash_u64_inv gives it back, for walks), and a lookup then
 * compares each slot it passes with one load, where hashing each key it
 * passes cost ~15 instructions a slot. */
struct slot {
    uint64_t h;   /* map_hash(key): 0 in an empty slot */
    uint64_t val; /* 0: empty slot */
};

struct seg {
    struct xdir_node node; /* its local depth */
    uint32_t cap;          /* homes are 0..cap-1 */
    uint32_t nslots;       /* cap plus spill slack */
    uint32_t count;
    struct slot slot[];
};

struct u64map {
    struct xdir dir;    /* hash prefix -> struct seg */
    bool tagged;        /* a u16 tag per slot, after the slots (Tags) */
    size_t ntagged;     /* entries whose tag is not 0 */
    u64map_tag_fn drop; /* told of a non-zero tag its entry's delete drops */
    void *drop_ctx;
    struct mem_acct mem; /* directory, segments and the spare */
    void *spare;         /* the last unmapped segment's pages, for reuse */
    size_t spare_size;
    uint64_t seed;
    size_t count;
    uint32_t nsegs;
};

/*
 * Segments grow from SEG_MIN_CAP homes up to SEG_MAX_CAP (64 KiB), then
 * split. Growth happens at 90% load, in steps of x1.0625; splits, merges
 * and shrinks (below 40%) rebuild at ~86%. Robin Hood ordering keeps probes
 * short at 90%. Uniform hashing makes all segments of a map fill in step,
 * so the map's average load swings with the number of keys between the
 * rebuild level and the limit: small steps keep that swing to 0.85..0.9,
 * i.e. 17.8-18.9 bytes per entry at any size (x1.125 steps swung 0.8..0.9:
 * 20 bytes at the bottom, where 1M CNT users happened to sit; x1.25 steps
 * 0.72..0.9). The price is a rebuild every ~0.06 * cap inserts into a
 * segment: ~17 slot moves per insert, amortized (an insert 802 -> 1048
 * instructions, a lookup 150 -> 168, from the higher mean load: cachegrind
 * over 300k keys).
 */
#define SEG_MIN_CAP 4u
#define SEG_MAX_CAP 4000u
#define SEG_MAX_LOAD(cap) ((cap) - (cap) / 10)
#define SEG_SHRINK_BELOW(cap) ((cap)*2 / 5)
/* Depth is limited by the 32 home bits that must remain after the prefix. */
#define MAP_MAX_DEPTH XDIR_MAX_DEPTH

/* The keyed bijection of hash.h: being one is what lets the scan cursor be
 * a plain hash value. */
static inline uint64_t map_hash(uint64_t key, uint64_t seed)
{
    return hash_u64(key, seed);
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

/*
 * Tags. A tagged map keeps a u16 per slot in an array after the slots (2
 * bytes a slot, ~2.3 an entry), moved with its slot by every insert,
 * delete and rebuild: state its owner reads with the entry, such as the
 * activity day GRP and FEED keep (days.h), which an entry of its own
 * elsewhere (the activity table) would cost ~8.5 bytes. An untagged map's
 * segments have no array.
 */
static inline size_t slot_bytes(bool tagged)
{
    return sizeof(struct slot) + (tagged ? sizeof(uint16_t) : 0);
}

static inline size_t seg_size(const struct u64map *m, uint32_t nslots)
{
    return sizeof(struct seg) + (size_t)nslots * slot_bytes(m->tagged);
}

static inline uint16_t *seg_tags(const struct seg *s)
{
    return (uint16_t *)(uintptr_t)&s->slot[s->nslots];
}

static inline uint32_t seg_home(const struct seg *s, uint64_t h)
{
    uint32_t x = (uint32_t)((h << s->node.depth) >> 32);

    return (uint32_t)(((uint64_t)x * s->cap) >> 32);
}

/* The segment holding hash h, or NULL in a map with none yet. */
static inline struct seg *seg_of(const struct u64map *m, uint64_t h)
{
    return (struct seg *)xdir_get(&m->dir, h);
}

/* Homes for n entries at ~86% load: the level rebuilds aim for. */
static uint32_t cap_for(size_t n)
{
    size_t cap = n + n / 6 + 1;

    if (cap < SEG_MIN_CAP)
        cap = SEG_MIN_CAP;
    return (uint32_t)cap;
}

static uint32_t cap_next(uint32_t cap)
{
    uint32_t next = cap + cap / 16 + 1;

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
 * and recycled (mem_remap) for the next segment: that saves most of the page
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
static inline bool seg_mapped(const struct u64map *m, uint32_t nslots)
{
    return seg_size(m, nslots) >= SEG_MMAP_MIN;
}

/* The bytes a segment of nslots slots holds: whole pages when mapped (a
 * tagged map's 18-byte slots do not divide a page: the rest is unused). */
static size_t seg_bytes(const struct u64map *m, uint32_t nslots)
{
    size_t size = seg_size(m, nslots), ps = page_size();

    return size >= SEG_MMAP_MIN ? (size + ps - 1) / ps * ps : size;
}

static void spare_drop(struct u64map *m)
{
    if (m->spare == NULL)
        return;
    mem_unmap(&m->mem, m->spare, m->spare_size);
    m->spare = NULL;
    m->spare_size = 0;
}

/* size zeroed bytes of fresh or recycled pages, or NULL. */
static void *pages_get(struct u64map *m, size_t size)
{
    void *p;

    if (m->spare != NULL) {
        p = mem_remap(&m->mem, m->spare, m->spare_size, size);
        if (p != NULL) {
            m->spare = NULL;
            m->spare_size = 0;
            return p;
        }
        spare_drop(m);
    }
    return mem_map(&m->mem, size);
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
    size_t size = seg_bytes(m, nslots);
    struct seg *s;

    if (size >= SEG_MMAP_MIN) {
        nslots =
            (uint32_t)((size - sizeof(struct seg)) / slot_bytes(m->tagged));
        cap = nslots - slack;
        s = pages_get(m, size);
    } else {
        s = mem_zalloc(&m->mem, size);
    }
    if (s == NULL)
        return NULL;
    s->cap = cap;
    s->nslots = nslots;
    s->node.depth = depth;
    m->nsegs++;
    return s;
}

static void seg_free(struct u64map *m, struct seg *s)
{
    size_t size;

    if (s == NULL)
        return;
    size = seg_bytes(m, s->nslots);
    m->nsegs--;
    if (seg_mapped(m, s->nslots))
        pages_put(m, s, size);
    else
        mem_free(&m->mem, s, size);
    /* An empty map keeps nothing back. */
    if (m->nsegs == 0)
        spare_drop(m);
}

/*
 * Appends src's slots [from, to) to d, which must receive hashes in
 * increasing order (*next: first free position, start at 0). -1 when a run
 * would spill past the slack; d is then partly filled and must be dropped.
 */
static int seg_append(const struct u64map *m, struct seg *d,
                      const struct seg *src, uint32_t from, uint32_t to,
                      uint32_t *next)
{
    for (uint32_t i = from; i < to; i++) {
        const struct slot *sl = &src->slot[i];
        uint32_t p;

        if (sl->val == 0)
            continue;
        p = seg_home(d, sl->h);
        if (p < *next)
            p = *next;
        if (p >= d->nslots)
            return -1;
        d->slot[p] = *sl;
        if (m->tagged)
            seg_tags(d)[p] = seg_tags(src)[i];
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
        if (seg_append(m, s, a, afrom, ato, &next) == 0 &&
            (b == NULL || seg_append(m, s, b, bfrom, bto, &next) == 0))
            return s;
        /* A spill at 80% load is very unlikely; retry with more room. */
        seg_free(m, s);
        cap = cap + cap / 4 + 1;
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
    uint8_t d = s->node.depth;

    if (s->cap < SEG_MAX_CAP || d >= MAP_MAX_DEPTH) {
        struct seg *g =
            seg_build(m, d, cap_next(s->cap), s, 0, s->nslots, NULL, 0, 0);

        if (g == NULL)
            return -1;
        xdir_replace(&m->dir, h, &g->node);
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
            if (q == hi || (s->slot[q].h << d) >> 63)
                hi = lo + (hi - lo) / 2;
            else
                lo = q + 1;
        }
        cut = lo;
    }
    for (uint32_t i = 0; i < cut; i++)
        nl += s->slot[i].val != 0;
    if (xdir_split_room(&m->dir, &m->mem, d) != 0)
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
    xdir_split(&m->dir, h, d, &l->node, &r->node);
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
    uint8_t d = s->node.depth;

    if (s->count >= SEG_SHRINK_BELOW(s->cap))
        return;
    if (d == 0 && s->count == 0) {
        /* Fixed: a directory left doubled over this last segment by a
         * split that failed used to keep pointing to it once freed. */
        xdir_clear(&m->dir, &m->mem);
        seg_free(m, s);
        return;
    }
    if (d > 0) {
        bool lower;
        struct seg *b = (struct seg *)xdir_buddy(&m->dir, h, d, &lower);

        if (b != NULL && s->count + b->count <= SEG_MAX_LOAD(SEG_MAX_CAP) / 2) {
            struct seg *lo = lower ? s : b, *hi = lower ? b : s;
            struct seg *g = seg_build(m, d - 1, cap_for(s->count + b->count),
                                      lo, 0, lo->nslots, hi, 0, hi->nslots);

            if (g == NULL)
                return;
            xdir_merge(&m->dir, &m->mem, h, &g->node);
            seg_free(m, s);
            seg_free(m, b);
            return;
        }
    }
    if (cap_for(s->count) < s->cap) {
        struct seg *g =
            seg_build(m, d, cap_for(s->count), s, 0, s->nslots, NULL, 0, 0);

        if (g == NULL)
            return;
        xdir_replace(&m->dir, h, &g->node);
        seg_free(m, s);
    }
}

struct u64map *u64map_create(struct mem_acct *owner)
{
    struct u64map *m = mem_zalloc(owner, sizeof(*m));

    if (m == NULL)
        return NULL;
    xdir_init(&m->dir);
    mem_acct_init(&m->mem, owner);
    m->seed = hash_seed(HASH_U64MAP);
    return m;
}

void u64map_destroy(struct u64map *m)
{
    struct xdir_node *n;

    if (m == NULL)
        return;
    for (size_t i = 0; (n = xdir_walk(&m->dir, &i)) != NULL;) {
        struct seg *s = (struct seg *)n;

        if (seg_mapped(m, s->nslots))
            mem_unmap(&m->mem, s, seg_bytes(m, s->nslots));
        else
            mem_free(&m->mem, s, seg_bytes(m, s->nslots));
    }
    xdir_deinit(&m->dir, &m->mem);
    spare_drop(m);
    mem_free(m->mem.up, m, sizeof(*m));
}

int u64map_seed(struct u64map *m, uint64_t seed)
{
    if (m->count != 0)
        return -1;
    m->seed = seed;
    return 0;
}

/* The slot holding the key of hash h in s, or NULL. */
static struct slot *seg_find(const struct seg *s, uint64_t h)
{
    for (uint32_t p = seg_home(s, h); p < s->nslots; p++) {
        const struct slot *sl = &s->slot[p];

        if (sl->val == 0 || sl->h > h)
            return NULL;
        if (sl->h == h)
            return (struct slot *)sl;
    }
    return NULL;
}

uint64_t u64map_get(const struct u64map *m, uint64_t key)
{
    uint64_t h = map_hash(key, m->seed);
    const struct seg *s = seg_of(m, h);
    const struct slot *sl = s ? seg_find(s, h) : NULL;

    return sl ? sl->val : 0;
}

void u64map_prefetch(const struct u64map *m, uint64_t key, int stage)
{
    uint64_t h;
    const struct seg *s;
    const char *p;

    if (stage > 1)
        return;
    h = map_hash(key, m->seed);
    s = seg_of(m, h);
    if (s == NULL)
        return;
    if (stage == 0) {
        __builtin_prefetch(s);
        return;
    }
    p = (const char *)&s->slot[seg_home(s, h)];
    __builtin_prefetch(p);
    __builtin_prefetch(p + 64);
}

/* u64map_probe's body, inlined into u64map_probe_rec too: the badges'
 * probes run it for every family of every user at every stage. */
static inline __attribute__((always_inline)) void
probe_stage(const struct u64map *m, uint64_t key, int stage,
            struct u64map_probe *p)
{
    const struct seg *s;

    switch (stage) {
    case 0:
        p->h = map_hash(key, m->seed);
        p->seg = s = seg_of(m, p->h);
        p->val = 0;
        if (s != NULL)
            __builtin_prefetch(s);
        return;
    case 1:
        s = p->seg;
        if (s != NULL) {
            const char *line = (const char *)&s->slot[seg_home(s, p->h)];

            __builtin_prefetch(line);
            __builtin_prefetch(line + 64);
        }
        return;
    case 2:
        s = p->seg;
        if (s != NULL) {
            const struct slot *sl = seg_find(s, p->h);

            p->val = sl ? sl->val : 0;
        }
        return;
    default:
        return;
    }
}

void u64map_probe(const struct u64map *m, uint64_t key, int stage,
                  struct u64map_probe *p)
{
    probe_stage(m, key, stage, p);
}

void u64map_probe_rec(const struct u64map *m, uint64_t key, int stage,
                      struct u64map_probe *p)
{
    probe_stage(m, key, stage, p);
    if (stage == 2 && p->val != 0 && (p->val & 1) == 0)
        __builtin_prefetch((const void *)(uintptr_t)p->val);
}

void u64map_prefetch_rec(const struct u64map *m, uint64_t key, int stage)
{
    uint64_t w;

    if (stage != 2) {
        u64map_prefetch(m, key, stage);
        return;
    }
    w = u64map_get(m, key);
    if (w != 0 && (w & 1) == 0)
        __builtin_prefetch((const void *)(uintptr_t)w);
}

struct each_rec {
    void (*fn)(void *rec, void *ctx);
    void *ctx;
};

static void each_rec_visit(uint64_t key, uint64_t w, void *ctx)
{
    const struct each_rec *e = ctx;

    (void)key;
    if ((w & 1) == 0)
        e->fn((void *)(uintptr_t)w, e->ctx);
}

void u64map_each_rec(const struct u64map *m, void (*fn)(void *rec, void *ctx),
                     void *ctx)
{
    struct each_rec e = {fn, ctx};
    uint64_t cursor = 0;

    do
        u64map_scan(m, &cursor, SIZE_MAX, each_rec_visit, &e);
    while (cursor != 0);
}

uint64_t *u64map_ref(struct u64map *m, uint64_t key)
{
    uint64_t h = map_hash(key, m->seed);
    struct seg *s = seg_of(m, h);
    struct slot *sl = s ? seg_find(s, h) : NULL;

    return sl ? &sl->val : NULL;
}

/*
 * Inserts absent key into s at its sorted position, shifting the rest of its
 * run right by one. -1 (s unchanged) when the run would pass the slack.
 */
static int seg_insert(const struct u64map *m, struct seg *s, uint64_t val,
                      uint64_t h)
{
    uint32_t p = seg_home(s, h), e;

    while (p < s->nslots && s->slot[p].val != 0 && s->slot[p].h < h)
        p++;
    for (e = p; e < s->nslots && s->slot[e].val != 0; e++)
        ;
    if (e == s->nslots)
        return -1;
    memmove(&s->slot[p + 1], &s->slot[p], (e - p) * sizeof(struct slot));
    s->slot[p].h = h;
    s->slot[p].val = val;
    if (m->tagged) {
        uint16_t *t = seg_tags(s);

        memmove(&t[p + 1], &t[p], (e - p) * sizeof(*t));
        t[p] = 0;
    }
    s->count++;
    return 0;
}

int u64map_put(struct u64map *m, uint64_t key, uint64_t val)
{
    uint64_t h = map_hash(key, m->seed);

    for (;;) {
        struct seg *s = seg_of(m, h);
        struct slot *sl;

        if (s == NULL) {
            /* Only an empty map (depth 0) has no segment. */
            s = seg_alloc(m, SEG_MIN_CAP, 0);
            if (s == NULL)
                return -1;
            xdir_set_first(&m->dir, &s->node);
        }
        sl = seg_find(s, h);
        if (sl != NULL) {
            sl->val = val;
            return 0;
        }
        if (s->count < SEG_MAX_LOAD(s->cap) && seg_insert(m, s, val, h) == 0) {
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
    struct seg *s = seg_of(m, h);
    struct slot *sl = s ? seg_find(s, h) : NULL;
    uint32_t p, e;
    uint16_t tag = 0;

    if (sl == NULL)
        return false;
    /* Backward shift: pull back the following entries not at their home. */
    p = (uint32_t)(sl - s->slot);
    for (e = p + 1;
         e < s->nslots && s->slot[e].val != 0 && seg_home(s, s->slot[e].h) < e;
         e++)
        ;
    memmove(&s->slot[p], &s->slot[p + 1], (e - p - 1) * sizeof(struct slot));
    s->slot[e - 1].h = 0;
    s->slot[e - 1].val = 0;
    if (m->tagged) {
        uint16_t *t = seg_tags(s);

        tag = t[p];
        memmove(&t[p], &t[p + 1], (e - p - 1) * sizeof(*t));
        t[e - 1] = 0;
        m->ntagged -= tag != 0;
    }
    s->count--;
    m->count--;
    seg_trim(m, s, h);
    if (tag != 0 && m->drop != NULL)
        m->drop(key, tag, m->drop_ctx);
    return true;
}

size_t u64map_count(const struct u64map *m)
{
    return m->count;
}

size_t u64map_bytes(const struct u64map *m)
{
    return sizeof(*m) + m->mem.bytes;
}

void u64map_stats(const struct u64map *m, struct u64map_stats *st)
{
    const struct xdir_node *n;

    st->count = m->count;
    st->bytes = u64map_bytes(m);
    st->segments = m->nsegs;
    st->depth = m->dir.depth;
    st->slots = 0;
    for (size_t i = 0; (n = xdir_walk(&m->dir, &i)) != NULL;)
        st->slots += ((const struct seg *)n)->nslots;
}

/*
 * The map is ordered by hash, so the cursor is the hash of the next entry to
 * visit: growth, splits and merges move entries between slots and segments
 * but never change that order. Walking resumes at the cursor's segment and
 * its home slot there (entries at or past the cursor are never before it).
 */
static size_t scan_walk(const struct u64map *m, uint64_t *cursor, size_t max,
                        u64map_visit_fn fn, u64map_tag_fn tfn, void *ctx)
{
    uint64_t h = *cursor;
    size_t n = 0;

    if (max == 0)
        return 0;
    for (;;) {
        const struct seg *s = seg_of(m, h);

        for (uint32_t p = s ? seg_home(s, h) : 0; s && p < s->nslots; p++) {
            const struct slot *sl = &s->slot[p];
            uint64_t hs;

            if (sl->val == 0)
                continue;
            hs = sl->h;
            if (hs < h)
                continue;
            if (n == max) {
                *cursor = hs;
                return n;
            }
            if (tfn == NULL)
                fn(hash_u64_inv(hs, m->seed), sl->val, ctx);
            else if (seg_tags(s)[p] != 0)
                tfn(hash_u64_inv(hs, m->seed), seg_tags(s)[p], ctx);
            n++;
        }
        /* Next segment: the first hash after this one's prefix range. */
        if (!xdir_next_range(&h, s ? s->node.depth : 0)) {
            *cursor = 0;
            return n;
        }
    }
}

int u64map_set_tagged(struct u64map *m)
{
    if (m->count != 0 || m->nsegs != 0)
        return -1;
    m->tagged = true;
    return 0;
}

void u64map_on_drop(struct u64map *m, u64map_tag_fn drop, void *ctx)
{
    m->drop = drop;
    m->drop_ctx = ctx;
}

/* key's slot in a tagged map and its tag's place, or NULL. */
static struct slot *tag_find(const struct u64map *m, uint64_t key,
                             uint16_t **tag)
{
    uint64_t h = map_hash(key, m->seed);
    const struct seg *s = seg_of(m, h);
    struct slot *sl = s ? seg_find(s, h) : NULL;

    if (sl != NULL)
        *tag = &seg_tags(s)[sl - s->slot];
    return sl;
}

bool u64map_get_tag(const struct u64map *m, uint64_t key, uint16_t *tag)
{
    uint16_t *t;

    if (tag_find(m, key, &t) == NULL)
        return false;
    *tag = *t;
    return true;
}

bool u64map_set_tag(struct u64map *m, uint64_t key, uint16_t tag)
{
    uint16_t *t;

    if (tag_find(m, key, &t) == NULL)
        return false;
    m->ntagged += (size_t)(tag != 0) - (size_t)(*t != 0);
    *t = tag;
    return true;
}

size_t u64map_tagged(const struct u64map *m)
{
    return m->ntagged;
}

size_t u64map_scan_tags(const struct u64map *m, uint64_t *cursor, size_t max,
                        u64map_tag_fn fn, void *ctx)
{
    return scan_walk(m, cursor, max, NULL, fn, ctx);
}

size_t u64map_scan(const struct u64map *m, uint64_t *cursor, size_t max,
                   u64map_visit_fn fn, void *ctx)
{
    return scan_walk(m, cursor, max, fn, NULL, ctx);
}

struct audit_ctx {
    const struct u64map *m;
    size_t count, bytes, tagged;
};

/* One segment, at directory entries [first, first + span): its entries
 * hash into its range, in order, each at or after its home with no hole
 * before it, and its count is theirs. */
static size_t seg_audit(const struct xdir *x, const struct xdir_node *n,
                        size_t first, size_t span, void *ctx)
{
    struct audit_ctx *ac = ctx;
    const struct seg *s = (const struct seg *)n;
    size_t bad = 0, c = 0;
    uint64_t prev = 0;

    bad += s->nslots < s->cap + 4;
    for (uint32_t p = 0; p < s->nslots; p++) {
        const struct slot *sl = &s->slot[p];
        uint64_t hs;
        uint32_t home;

        if (ac->m->tagged) {
            bad += sl->val == 0 && seg_tags(s)[p] != 0;
            ac->tagged += sl->val != 0 && seg_tags(s)[p] != 0;
        }
        if (sl->val == 0) {
            bad += sl->h != 0;
            continue;
        }
        hs = sl->h;
        home = seg_home(s, hs);
        bad += xdir_index(x, hs) < first || xdir_index(x, hs) >= first + span;
        bad += c > 0 && hs <= prev;
        bad += home > p || (home < p && s->slot[p - 1].val == 0);
        prev = hs;
        c++;
    }
    bad += c != s->count;
    ac->count += c;
    ac->bytes += seg_bytes(ac->m, s->nslots);
    return bad;
}

size_t u64map_audit(const struct u64map *m)
{
    struct audit_ctx ac = {m, 0, m->spare_size + xdir_bytes(&m->dir), 0};
    size_t nsegs, bad = xdir_audit(&m->dir, seg_audit, &ac, &nsegs);

    bad += ac.count != m->count;
    bad += ac.tagged != m->ntagged;
    bad += ac.bytes != m->mem.bytes;
    bad += nsegs != m->nsegs;
    return bad;
}
