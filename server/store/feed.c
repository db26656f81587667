/*
 * feed.c - FEED over two containers:
 *
 *   authors (denseid) author id -> dense index, and per index the post
 *           count (u32). The counts of 4096 consecutive indices are one
 *           flat array, so a read costs two loads per followee.
 *   follows (listmap) uid -> the user's followees, one 8-byte edge each,
 *           sorted by author index:
 *
 *            63         33 32                  1  0
 *           [author index | snapshot (u32)      | 1 ]
 *
 * A user following n authors costs one map slot plus 8 + 8n bytes (one
 * follow: the slot alone): ~8.1 bytes per edge at 200 follows.
 *
 * FEED.UNREAD is a walk over the user's edges with a random access into
 * the counts per edge. The loads of successive edges do not depend on each
 * other, so the processor overlaps their cache misses by itself: measured
 * (bench/store_feed.c), a __builtin_prefetch a few edges ahead gained
 * nothing, and the walk over 2,000 followees takes ~6 us.
 */
#include "feed.h"

#include "db.h"
#include "denseid.h"
#include "listmap.h"
#include "mem.h"

#include <stdlib.h>
#include <string.h>

/* denseid_intern's errors pass through as FEED_* errors. */
_Static_assert((int)FEED_ENOMEM == (int)DENSEID_ENOMEM &&
                   (int)FEED_EFULL == (int)DENSEID_EFULL,
               "FEED and denseid error codes");

struct feed_store {
    struct denseid *authors; /* value: uint32_t post count */
    struct listmap *follows;
    struct mem_acct mem; /* both */
};

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
    s->follows = listmap_create(&s->mem, FEED_INDEX_BITS);
    if (s->authors == NULL || s->follows == NULL) {
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
    listmap_destroy(s->follows);
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

int feed_follow(struct feed_store *s, uint64_t uid, uint64_t author,
                uint32_t max_follows)
{
    const uint64_t *e;
    uint64_t one, edge;
    uint32_t idx;
    bool known = denseid_find(s->authors, author, &idx);
    int rc;

    if (known && listmap_lookup(s->follows, uid, idx, &one))
        return 0;
    /* The limit first: a refused follow must not create the author. */
    if (listmap_get(s->follows, uid, &e, &one) >= max_follows)
        return FEED_ELIMIT;
    if (!known) {
        rc = denseid_intern(s->authors, author, &idx);
        if (rc != 0)
            return rc;
    }
    edge = feed_edge_make(idx, *count_ref(s, idx));
    if (listmap_add(s->follows, uid, edge) != 0) {
        /* Fixed: the author created for this follow used to stay behind. */
        if (!known)
            denseid_unintern(s->authors, author);
        return FEED_ENOMEM;
    }
    return 1;
}

bool feed_follows(const struct feed_store *s, uint64_t uid, uint64_t author)
{
    uint32_t idx;
    uint64_t one;

    return denseid_find(s->authors, author, &idx) &&
           listmap_lookup(s->follows, uid, idx, &one);
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* What a bulk follow did for authors[i], to take it back. */
#define DID_FOLLOW 1u /* uid follows it since this call */
#define DID_INTERN 2u /* the author is new to the store since this call */

/*
 * As grp_join_many: the limit on a sorted copy first, then the follows;
 * a failure takes back what this call did, in reverse order (an author
 * this call created is the last interned when its turn comes).
 */
int feed_follow_many(struct feed_store *s, uint64_t uid,
                     const uint64_t *authors, uint32_t n, uint32_t max_follows)
{
    size_t bytes = (n ? n : 1) * sizeof(uint64_t);
    uint64_t *sorted = mem_alloc(NULL, bytes), one;
    uint8_t *did = mem_zalloc(NULL, n ? n : 1);
    const uint64_t *e;
    uint32_t fresh = 0, i, idx;
    int rc = 0;

    if (sorted == NULL || did == NULL) {
        rc = FEED_ENOMEM;
        goto done;
    }
    memcpy(sorted, authors, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), u64_cmp);
    for (i = 0; i < n; i++)
        fresh += (i == 0 || sorted[i] != sorted[i - 1]) &&
                 !feed_follows(s, uid, sorted[i]);
    if (fresh > 0 && (uint64_t)listmap_get(s->follows, uid, &e, &one) + fresh >
                         max_follows) {
        rc = FEED_ELIMIT;
        goto done;
    }
    for (i = 0; i < n; i++) {
        bool known = denseid_find(s->authors, authors[i], &idx);
        int r = feed_follow(s, uid, authors[i], UINT32_MAX);

        if (r < 0) {
            while (i-- > 0) {
                if (did[i] & DID_FOLLOW)
                    feed_unfollow(s, uid, authors[i]);
                if (did[i] & DID_INTERN)
                    denseid_unintern(s->authors, authors[i]);
            }
            rc = r;
            goto done;
        }
        did[i] =
            (uint8_t)((r == 1 ? DID_FOLLOW : 0) | (known ? 0 : DID_INTERN));
        rc += r;
    }

done:
    mem_free(NULL, sorted, sorted ? bytes : 0);
    mem_free(NULL, did, did ? (n ? n : 1) : 0);
    return rc;
}

bool feed_unfollow(struct feed_store *s, uint64_t uid, uint64_t author)
{
    uint32_t idx;

    return denseid_find(s->authors, author, &idx) &&
           listmap_del(s->follows, uid, idx);
}

/* The walk of feed_unread over e[0..n). */
static uint64_t unread_sum(const struct feed_store *s, const uint64_t *e,
                           uint32_t n, uint64_t cap)
{
    uint64_t sum = 0;

    for (uint32_t i = 0; i < n; i++) {
        uint32_t count = *count_ref(s, feed_edge_author(e[i]));
        uint32_t snap = feed_edge_snapshot(e[i]);

        if (count > snap) {
            sum += count - snap;
            if (sum > cap)
                return cap + 1;
        }
    }
    return sum;
}

uint64_t feed_unread(const struct feed_store *s, uint64_t uid, uint64_t cap)
{
    const uint64_t *e;
    uint64_t one;
    uint32_t n = listmap_get(s->follows, uid, &e, &one);

    return unread_sum(s, e, n, cap);
}

void feed_reset(struct feed_store *s, uint64_t uid)
{
    uint64_t *e;
    uint32_t n = listmap_edit(s->follows, uid, &e);

    for (uint32_t i = 0; i < n; i++) {
        uint32_t idx = feed_edge_author(e[i]);

        e[i] = feed_edge_make(idx, *count_ref(s, idx));
    }
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

size_t feed_scan(const struct feed_store *s, uint64_t *cursor, size_t max,
                 feed_visit_fn fn, void *ctx)
{
    return listmap_scan(s->follows, cursor, max, fn, ctx);
}

int feed_put_user(struct feed_store *s, uint64_t uid, uint32_t n,
                  const uint64_t *edges)
{
    return listmap_put(s->follows, uid, edges, n);
}

size_t feed_entries(const struct feed_store *s)
{
    return listmap_entries(s->follows);
}

size_t feed_users(const struct feed_store *s)
{
    return listmap_users(s->follows);
}

size_t feed_authors(const struct feed_store *s)
{
    return denseid_count(s->authors);
}

size_t feed_bytes(const struct feed_store *s)
{
    return sizeof(*s) + s->mem.bytes;
}

static size_t check_edge(uint64_t e, const void *ctx)
{
    const struct feed_store *s = ctx;

    return feed_edge_author(e) >= denseid_count(s->authors);
}

size_t feed_audit(const struct feed_store *s)
{
    return denseid_audit(s->authors) +
           listmap_audit(s->follows, check_edge, s) +
           (denseid_bytes(s->authors) + listmap_bytes(s->follows) !=
            s->mem.bytes);
}

size_t feed_forget_user(struct feed_store *s, uint64_t uid)
{
    return listmap_del_user(s->follows, uid);
}

uint32_t feed_user_info(const struct feed_store *s, uint64_t uid,
                        feed_user_fn fn, void *ctx)
{
    const uint64_t *e;
    uint64_t one;
    uint32_t n = listmap_get(s->follows, uid, &e, &one);

    for (uint32_t i = 0; i < n; i++) {
        uint32_t idx = feed_edge_author(e[i]);

        fn(denseid_id(s->authors, idx), *count_ref(s, idx),
           feed_edge_snapshot(e[i]), ctx);
    }
    return n;
}

void feed_prefetch_user(const struct feed_store *s, uint64_t uid, int stage)
{
    listmap_prefetch(s->follows, uid, stage);
}
