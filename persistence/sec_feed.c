/*
 * sec_feed.c - the FEED section of the snapshot (sections.def, id 6).
 *
 * Raw bytes:
 *   varint nauthors (0..2^31), then for each author in number order:
 *     u64 author id, varint post count (<= 4294967295)
 *   then one record per user following someone, in the store's walk order:
 *     u64 uid, varint n (1..nauthors, at most 2^26), then n times:
 *       varint author number (strictly ascending, < nauthors),
 *       varint snapshot (<= 4294967295)
 *
 * Edges name authors by their number in the store. The loader adds the
 * authors in file order to an empty store, so they get the same numbers
 * back, and a user's edges go in with one map insert (feed_put_user),
 * packed as the store keeps them. The raw format does not follow the
 * store's layout, so files written before the store packed its lists
 * (8-byte edges) load the same. feed-max-follows is not applied: follows
 * made under a larger limit stay; FEED_MAX_FOLLOWS (2^26, far above the
 * configurable 100,000) is, as the bound of one packed list.
 */
#include <stdlib.h>

#include "feed.h"
#include "sections.h"

/* Users per feed_scan call: bounds the stack of a walk step, not memory. */
#define SCAN_BATCH 1024

static void save_user(uint64_t uid, uint32_t n, struct feed_edges *e, void *ctx)
{
    struct snap_writer *w = ctx;
    uint32_t author, snapshot;

    snap_put_u64(w, uid);
    snap_put_varint(w, n);
    for (uint32_t i = 0; i < n; i++) {
        feed_edges_next(e, &author, &snapshot);
        snap_put_varint(w, author);
        snap_put_varint(w, snapshot);
    }
}

int sec_feed_save(const struct db *db, struct snap_writer *w)
{
    uint32_t nauthors = (uint32_t)feed_authors(db->feed), count;
    uint64_t cursor = 0, author;

    snap_put_varint(w, nauthors);
    for (uint32_t i = 0; i < nauthors; i++) {
        feed_author_at(db->feed, i, &author, &count);
        snap_put_u64(w, author);
        snap_put_varint(w, count);
    }
    do {
        feed_scan(db->feed, &cursor, SCAN_BATCH, save_user, w);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    return 0;
}

static int load_authors(struct feed_store *s, struct snap_reader *r,
                        uint32_t *nauthors)
{
    uint64_t n, author, count;
    int rc;

    if (snap_get_varint(r, FEED_MAX_AUTHORS, &n) != 0)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        if (snap_get_u64(r, &author) != 0 ||
            snap_get_varint(r, FEED_COUNT_MAX, &count) != 0)
            return -1;
        rc = feed_put_author(s, author, (uint32_t)count);
        if (rc != 0)
            return snap_fail(r, "author %llu: %s", (unsigned long long)author,
                             rc > 0 ? "listed twice" : "out of memory");
    }
    *nauthors = (uint32_t)n;
    return 0;
}

/* Edges read so far for one user; grows as edges arrive, so a corrupt
 * count fails at the end of the data, not at a huge allocation. */
struct edge_buf {
    uint32_t *author, *snap;
    uint32_t cap;
};

static int buf_room(struct edge_buf *b, uint32_t n)
{
    uint32_t *author, *snap, cap;

    if (n < b->cap)
        return 0;
    cap = b->cap ? b->cap * 2 : 256;
    author = realloc(b->author, cap * sizeof(*author));
    if (author == NULL)
        return -1;
    b->author = author;
    snap = realloc(b->snap, cap * sizeof(*snap));
    if (snap == NULL)
        return -1;
    b->snap = snap;
    b->cap = cap;
    return 0;
}

static int load_user(struct feed_store *s, struct snap_reader *r,
                     uint32_t nauthors, struct edge_buf *b)
{
    uint64_t uid, n, idx, snap;
    int rc;

    if (snap_get_u64(r, &uid) != 0 || snap_get_varint(r, nauthors, &n) != 0)
        return -1;
    if (n == 0)
        return snap_fail(r, "user %llu: no follows", (unsigned long long)uid);
    if (n > FEED_MAX_FOLLOWS)
        return snap_fail(r, "user %llu: %llu follows (at most %lu)",
                         (unsigned long long)uid, (unsigned long long)n,
                         (unsigned long)FEED_MAX_FOLLOWS);
    for (uint32_t i = 0; i < n; i++) {
        if (snap_get_varint(r, nauthors - 1, &idx) != 0 ||
            snap_get_varint(r, FEED_COUNT_MAX, &snap) != 0)
            return -1;
        if (i > 0 && idx <= b->author[i - 1])
            return snap_fail(r, "user %llu: author number %llu out of order",
                             (unsigned long long)uid, (unsigned long long)idx);
        if (buf_room(b, i) != 0)
            return snap_fail(r, "out of memory");
        b->author[i] = (uint32_t)idx;
        b->snap[i] = (uint32_t)snap;
    }
    rc = feed_put_user(s, uid, (uint32_t)n, b->author, b->snap);
    if (rc != 0)
        return snap_fail(r, "user %llu: %s", (unsigned long long)uid,
                         rc > 0 ? "listed twice" : "out of memory");
    return 0;
}

int sec_feed_load(struct db *db, struct snap_reader *r)
{
    struct edge_buf b = {NULL, NULL, 0};
    uint32_t nauthors = 0;
    int rc = -1;

    if (load_authors(db->feed, r, &nauthors) != 0)
        return -1;
    if (!snap_more(r))
        return 0;
    if (nauthors == 0)
        return snap_fail(r, "follows but no authors");
    while (snap_more(r))
        if (load_user(db->feed, r, nauthors, &b) != 0)
            goto out;
    rc = 0;
out:
    free(b.author);
    free(b.snap);
    return rc;
}
