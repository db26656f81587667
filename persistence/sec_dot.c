/*
 * sec_dot.c - the DOT section of the snapshot (sections.def, id 5).
 *
 * Raw bytes:
 *   varint ndots (0..65536), then for each dot in number order:
 *     u64 dot id, varint push time + 1 (0: never pushed)
 *   then one record per user holding clicks, in the store's walk order:
 *     u64 uid, varint n (1..ndots), then n times:
 *       varint dot number (strictly ascending, < ndots), varint ts
 *
 * Clicks name dots by their number in the store. The loader adds the dots
 * in file order to an empty store, so they get the same numbers back, and
 * a user's clicks go in with one map insert (dot_put_user). A user with one
 * click takes ~17 bytes before compression.
 */
#include <stdlib.h>

#include "dot.h"
#include "sections.h"

/* Users per dot_scan call: bounds the stack of a walk step, not memory. */
#define SCAN_BATCH 1024

static void save_user(uint64_t uid, uint32_t n, const uint64_t *clicks,
                      void *ctx)
{
    struct snap_writer *w = ctx;

    snap_put_u64(w, uid);
    snap_put_varint(w, n);
    for (uint32_t i = 0; i < n; i++) {
        snap_put_varint(w, dot_click_dot(clicks[i]));
        snap_put_varint(w, dot_click_ts(clicks[i]));
    }
}

int sec_dot_save(const struct db *db, struct snap_writer *w)
{
    uint32_t ndots = (uint32_t)dot_dots(db->dot);
    uint64_t cursor = 0, dot, push;

    snap_put_varint(w, ndots);
    for (uint32_t i = 0; i < ndots; i++) {
        dot_dot_at(db->dot, i, &dot, &push);
        snap_put_u64(w, dot);
        snap_put_varint(w, push == DOT_NEVER ? 0 : push + 1);
    }
    do {
        dot_scan(db->dot, &cursor, SCAN_BATCH, save_user, w);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    return 0;
}

static int load_dots(struct dot_store *s, struct snap_reader *r,
                     uint32_t *ndots)
{
    uint64_t n, dot, push;
    int rc;

    if (snap_get_varint(r, DOT_MAX_DOTS, &n) != 0)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        if (snap_get_u64(r, &dot) != 0 ||
            snap_get_varint(r, DOT_TS_MAX + 1, &push) != 0)
            return -1;
        rc = dot_put_dot(s, dot, push == 0 ? DOT_NEVER : push - 1);
        if (rc != 0)
            return snap_fail(r, "dot %llu: %s", (unsigned long long)dot,
                             rc > 0 ? "listed twice" : "out of memory");
    }
    *ndots = (uint32_t)n;
    return 0;
}

/* One user's record into clicks[] (room for ndots), then the store. */
static int load_user(struct dot_store *s, struct snap_reader *r, uint32_t ndots,
                     uint64_t *clicks)
{
    uint64_t uid, n, idx, ts;
    int rc;

    if (snap_get_u64(r, &uid) != 0 || snap_get_varint(r, ndots, &n) != 0)
        return -1;
    if (n == 0)
        return snap_fail(r, "user %llu: no clicks", (unsigned long long)uid);
    for (uint64_t i = 0; i < n; i++) {
        if (snap_get_varint(r, ndots - 1, &idx) != 0 ||
            snap_get_varint(r, DOT_TS_MAX, &ts) != 0)
            return -1;
        if (i > 0 && idx <= dot_click_dot(clicks[i - 1]))
            return snap_fail(r, "user %llu: dot number %llu out of order",
                             (unsigned long long)uid, (unsigned long long)idx);
        clicks[i] = dot_click_make((uint32_t)idx, ts);
    }
    rc = dot_put_user(s, uid, (uint32_t)n, clicks);
    if (rc != 0)
        return snap_fail(r, "user %llu: %s", (unsigned long long)uid,
                         rc > 0 ? "listed twice" : "out of memory");
    return 0;
}

int sec_dot_load(struct db *db, struct snap_reader *r)
{
    uint64_t *clicks = NULL;
    uint32_t ndots = 0;
    int rc = -1;

    if (load_dots(db->dot, r, &ndots) != 0)
        return -1;
    if (!snap_more(r))
        return 0;
    if (ndots == 0)
        return snap_fail(r, "clicks but no dots");
    clicks = malloc(ndots * sizeof(*clicks)); /* ndots <= 65536: bounded */
    if (clicks == NULL)
        return snap_fail(r, "out of memory");
    while (snap_more(r))
        if (load_user(db->dot, r, ndots, clicks) != 0)
            goto out;
    rc = 0;
out:
    free(clicks);
    return rc;
}
