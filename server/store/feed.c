/*
 * feed.c - FEED over two containers:
 *
 *   authors (denseid) author id -> dense index, and per index the post
 *           count (u32). The counts of 4096 consecutive indices are one
 *           flat array, so a read costs two loads per followee.
 *   follows (packmap) uid -> the user's followees, sorted by author
 *           index: per followee the index and the snapshot, packed in
 *           blocks of up to 128 with a skip index (packmap.h).
 *
 * A followee costs the bytes its numbers need in its block: the author
 * index as an offset from the block's first, the snapshot as a difference
 * from the block's smallest. 200 random followees out of 100,000 authors
 * with snapshots under 50 take ~3.5 bytes each, 200 of neighbouring
 * indices that have not posted (make bench-memory's shape) ~2.5, a user
 * with one followee only its map slot (bench/store_feed.c measures them;
 * the old 8-byte edges took 8-11).
 *
 * FEED.UNREAD is a walk over the user's blocks with a random access into
 * the counts per followee. Decoding a followee is a load, a shift and two
 * masks, with no dependency between followees, so the processor still
 * overlaps the cache misses of the count reads by itself.
 */
#include "feed.h"

#include "db.h"
#include "denseid.h"
#include "mem.h"
#include "packmap.h"
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

/* denseid_intern's errors pass through as FEED_* errors. */
_Static_assert((int)FEED_ENOMEM == (int)DENSEID_ENOMEM &&
                   (int)FEED_EFULL == (int)DENSEID_EFULL,
               "FEED and denseid error codes");

struct feed_store {
    struct denseid *authors; /* value: uint32_t post count */
    struct packmap *follows; /* key: author index, value: snapshot */
    struct mem_acct mem;     /* both */
};

_Static_assert(FEED_INDEX_BITS == PACKMAP_KEY_BITS &&
                   FEED_MAX_FOLLOWS <= PACKMAP_MAX_PAIRS,
               "an author index is a packmap key");

static inline uint32_t *count_ref(const struct feed_store *s, uint32_t idx)
{
    return denseid_val(s->authors, idx);
}

struct feed_store *feed_create(void)
{
    struct feed_store *s = mem_zalloc(NULL, sizeof(*s));

    if (s == NULL)
        return NULL;
    mem_acct_init(&s->mem, NULL);
    s->authors = denseid_create(&s->mem, sizeof(uint32_t), FEED_MAX_AUTHORS);
    s->follows = packmap_create(&s->mem);
    /* Each follower's slot keeps its activity day in a tag (days.h). */
    if (s->authors == NULL || s->follows == NULL ||
        u64map_set_tagged(feed_user_map(s)) != 0) {
        feed_destroy(s);
        return NULL;
    }
    return s;
}

void feed_destroy(struct feed_store *s)
{
    if (s == NULL)
        return;
    denseid_destroy(s->authors);
    packmap_destroy(s->follows);
    mem_free(NULL, s, sizeof(*s));
}

int feed_post(struct feed_store *s, uint64_t author, uint64_t n,
              uint32_t *count)
{
    uint32_t idx, *c;
    int rc = denseid_intern(s->authors, author, &idx);

    if (rc != 0)
        return rc;
    c = count_ref(s, idx);
    *c = n >= (uint64_t)(FEED_COUNT_MAX - *c) ? FEED_COUNT_MAX
                                              : *c + (uint32_t)n;
    *count = *c;
    return 0;
}

int feed_set_posts(struct feed_store *s, uint64_t author, uint64_t count)
{
    uint32_t idx;
    int rc;

    if (!denseid_find(s->authors, author, &idx)) {
        if (count == 0)
            return 0;
        rc = denseid_intern(s->authors, author, &idx);
        if (rc != 0)
            return rc;
    }
    *count_ref(s, idx) =
        count > FEED_COUNT_MAX ? FEED_COUNT_MAX : (uint32_t)count;
    return 0;
}

uint32_t feed_posts(const struct feed_store *s, uint64_t author)
{
    uint32_t idx;

    return denseid_find(s->authors, author, &idx) ? *count_ref(s, idx) : 0;
}

uint32_t feed_unpost(struct feed_store *s, uint64_t author, uint64_t n)
{
    uint32_t idx, *c;

    if (!denseid_find(s->authors, author, &idx))
        return 0;
    c = count_ref(s, idx);
    *c = n >= *c ? 0 : *c - (uint32_t)n;
    return *c;
}

/* Whether uid can follow `more` more authors. */
static bool within_limit(const struct feed_store *s, uint64_t uid,
                         uint64_t more, uint32_t max_follows)
{
    uint64_t after = (uint64_t)packmap_count(s->follows, uid) + more;

    return after <= max_follows && after <= FEED_MAX_FOLLOWS;
}

/* packmap_add looks for the author in the block it decodes anyway, so a
 * follow of a known author takes one search, not two. */
int feed_follow(struct feed_store *s, uint64_t uid, uint64_t author,
                uint32_t max_follows)
{
    uint32_t idx, snap;
    bool known = denseid_find(s->authors, author, &idx);
    int rc;

    /* The limit first: a refused follow must not create the author. */
    if (!within_limit(s, uid, 1, max_follows))
        return known && packmap_lookup(s->follows, uid, idx, &snap)
                   ? 0
                   : FEED_ELIMIT;
    if (!known) {
        rc = denseid_intern(s->authors, author, &idx);
        if (rc != 0)
            return rc;
    }
    rc = packmap_add(s->follows, uid, idx, *count_ref(s, idx));
    if (rc < 0) {
        /* The author created for this follow must not stay behind. */
        if (!known)
            denseid_unintern(s->authors, author);
        return FEED_ENOMEM;
    }
    return rc == 0; /* 1: followed already (a known author) */
}

bool feed_follows(const struct feed_store *s, uint64_t uid, uint64_t author)
{
    uint32_t idx, snap;

    return denseid_find(s->authors, author, &idx) &&
           packmap_lookup(s->follows, uid, idx, &snap);
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/*
 * The new followees, sorted and without repeats, then the limit, then the
 * authors (new ones get the next indices, so those >= the count before
 * are this call's), then one new list. A failure takes the authors back
 * in reverse order, as denseid_unintern asks.
 */
int feed_follow_many(struct feed_store *s, uint64_t uid,
                     const uint64_t *authors, uint32_t n, uint32_t max_follows)
{
    size_t bytes = (n ? n : 1) * sizeof(uint64_t);
    uint64_t *ids = mem_alloc(NULL, bytes); /* then (index, snapshot) */
    uint32_t *keys = mem_alloc(NULL, bytes), *vals = keys + n;
    uint32_t fresh = 0, count0 = denseid_count(s->authors), idx;
    int rc = 0;

    if (ids == NULL || keys == NULL) {
        rc = FEED_ENOMEM;
        goto done;
    }
    memcpy(ids, authors, n * sizeof(*ids));
    qsort(ids, n, sizeof(*ids), u64_cmp);
    for (uint32_t i = 0; i < n; i++)
        if ((i == 0 || ids[i] != ids[i - 1]) && !feed_follows(s, uid, ids[i]))
            ids[fresh++] = ids[i];
    if (fresh == 0)
        goto done;
    if (!within_limit(s, uid, fresh, max_follows)) {
        rc = FEED_ELIMIT;
        goto done;
    }
    for (uint32_t i = 0; i < fresh; i++) {
        rc = denseid_intern(s->authors, ids[i], &idx);
        if (rc != 0)
            goto undo;
        ids[i] = (uint64_t)idx << 32 | *count_ref(s, idx);
    }
    qsort(ids, fresh, sizeof(*ids), u64_cmp);
    for (uint32_t i = 0; i < fresh; i++) {
        keys[i] = (uint32_t)(ids[i] >> 32);
        vals[i] = (uint32_t)ids[i];
    }
    if (packmap_add_many(s->follows, uid, fresh, keys, vals) != 0) {
        rc = FEED_ENOMEM;
        goto undo;
    }
    rc = (int)fresh;
    goto done;

undo:
    for (uint32_t i = denseid_count(s->authors); i-- > count0;)
        denseid_unintern(s->authors, denseid_id(s->authors, i));
done:
    mem_free(NULL, ids, ids ? bytes : 0);
    mem_free(NULL, keys, keys ? bytes : 0);
    return rc;
}

bool feed_unfollow(struct feed_store *s, uint64_t uid, uint64_t author)
{
    uint32_t idx;

    return denseid_find(s->authors, author, &idx) &&
           packmap_del(s->follows, uid, idx);
}

/* Adds author idx's term to *sum; true once it passes cap. */
static inline bool add_term(const struct feed_store *s, uint32_t idx,
                            uint32_t snap, uint64_t *sum, uint64_t cap)
{
    uint32_t count = *count_ref(s, idx);

    if (count > snap) {
        *sum += count - snap;
        return *sum > cap;
    }
    return false;
}

/* A block whose snapshots are all equal (mv 0: followed before their
 * authors posted, say) has a loop that does not decode them: ~25% fewer
 * instructions per followee. */
/* The unread over the follows at cursor it (packmap_iter_init), as
 * feed_unread. */
static uint64_t unread_at(const struct feed_store *s, struct packmap_iter *it,
                          uint64_t cap)
{
    uint32_t idx, snap;
    uint64_t sum = 0;

    do {
        const struct packmap_blk b = it->b;
        const uint8_t *p = b.bits;

        /* A counter, not an end pointer: pairs of a one-pair block may
         * take 0 bytes. */
        if (b.mv == 0) {
            for (uint32_t i = 0; i < b.k; i++, p += b.size) {
                idx = b.first + (uint32_t)(packmap_le64(p) & b.mo);
                if (add_term(s, idx, b.base, &sum, cap))
                    return cap + 1;
            }
        } else {
            for (uint32_t i = 0; i < b.k; i++, p += b.size) {
                uint64_t v = packmap_le64(p);

                idx = b.first + (uint32_t)(v & b.mo);
                snap = b.base + (uint32_t)((v >> b.wo) & b.mv);
                if (add_term(s, idx, snap, &sum, cap))
                    return cap + 1;
            }
        }
    } while (packmap_iter_next_blk(it));
    return sum;
}

uint64_t feed_unread(const struct feed_store *s, uint64_t uid, uint64_t cap)
{
    struct packmap_iter it;

    if (packmap_iter_init(s->follows, uid, &it) == 0)
        return 0;
    return unread_at(s, &it, cap);
}

void feed_probe_user(const struct feed_store *s, uint64_t uid, int stage,
                     struct u64map_probe *p)
{
    packmap_probe(s->follows, uid, stage, p);
}

uint64_t feed_unread_probed(const struct feed_store *s,
                            const struct u64map_probe *p, uint64_t cap)
{
    struct packmap_iter it;

    if (packmap_iter_probed(p, &it) == 0)
        return 0;
    return unread_at(s, &it, cap);
}

static uint32_t current_count(uint32_t idx, void *ctx)
{
    return *count_ref(ctx, idx);
}

int feed_reset(struct feed_store *s, uint64_t uid)
{
    return packmap_set_all(s->follows, uid, current_count, s) == 0
               ? 0
               : FEED_ENOMEM;
}

void feed_author_at(const struct feed_store *s, uint32_t i, uint64_t *author,
                    uint32_t *count)
{
    *author = denseid_id(s->authors, i);
    *count = *count_ref(s, i);
}

int feed_put_author(struct feed_store *s, uint64_t author, uint32_t count)
{
    uint32_t idx;
    int rc;

    if (denseid_find(s->authors, author, &idx))
        return 1;
    rc = denseid_intern(s->authors, author, &idx);
    if (rc == 0)
        *count_ref(s, idx) = count;
    return rc;
}

struct feed_edges {
    struct packmap_iter it;
};

void feed_edges_next(struct feed_edges *e, uint32_t *author, uint32_t *snapshot)
{
    if (!packmap_next(&e->it, author, snapshot))
        *author = *snapshot = 0; /* past the n edges: a caller's bug */
}

bool feed_author_find(const struct feed_store *s, uint64_t author, uint32_t *i)
{
    return denseid_find(s->authors, author, i);
}

struct scan_ctx {
    feed_visit_fn fn;
    void *ctx;
};

static void scan_visit(uint64_t uid, uint32_t n, struct packmap_iter *it,
                       void *ctx)
{
    const struct scan_ctx *sc = ctx;
    struct feed_edges e = {*it};

    sc->fn(uid, n, &e, sc->ctx);
}

size_t feed_scan(const struct feed_store *s, uint64_t *cursor, size_t max,
                 feed_visit_fn fn, void *ctx)
{
    struct scan_ctx sc = {fn, ctx};

    return packmap_scan(s->follows, cursor, max, scan_visit, &sc);
}

int feed_put_user(struct feed_store *s, uint64_t uid, uint32_t n,
                  const uint32_t *authors, const uint32_t *snapshots)
{
    int rc = packmap_put(s->follows, uid, n, authors, snapshots);

    return rc < 0 ? FEED_ENOMEM : rc;
}

size_t feed_entries(const struct feed_store *s)
{
    return packmap_entries(s->follows);
}

size_t feed_users(const struct feed_store *s)
{
    return packmap_users(s->follows);
}

size_t feed_authors(const struct feed_store *s)
{
    return denseid_count(s->authors);
}

size_t feed_bytes(const struct feed_store *s)
{
    return sizeof(*s) + s->mem.bytes;
}

struct u64map *feed_user_map(const struct feed_store *s)
{
    return packmap_user_map(s->follows);
}

static size_t check_edge(uint32_t idx, uint32_t snap, const void *ctx)
{
    const struct feed_store *s = ctx;

    (void)snap;
    return idx >= denseid_count(s->authors);
}

size_t feed_audit(const struct feed_store *s)
{
    return denseid_audit(s->authors) +
           packmap_audit(s->follows, check_edge, s) +
           (denseid_bytes(s->authors) + packmap_bytes(s->follows) !=
            s->mem.bytes);
}

size_t feed_forget_user(struct feed_store *s, uint64_t uid)
{
    return packmap_del_user(s->follows, uid);
}

uint32_t feed_user_info(const struct feed_store *s, uint64_t uid,
                        feed_user_fn fn, void *ctx)
{
    struct packmap_iter it;
    uint32_t n = packmap_iter_init(s->follows, uid, &it), idx, snap;

    while (packmap_next(&it, &idx, &snap))
        fn(denseid_id(s->authors, idx), *count_ref(s, idx), snap, ctx);
    return n;
}

void feed_prefetch_user(const struct feed_store *s, uint64_t uid, int stage)
{
    packmap_prefetch(s->follows, uid, stage);
}
