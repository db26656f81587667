/*
 * sec_grp.c - the GRP section of the snapshot (sections.def, id 3).
 *
 * Raw bytes:
 *   varint ngroups, then for each group in number order:
 *     u64 gid, varint head, varint window (0..GRP_WINDOW_MAX),
 *     varint known (<= window, <= head; 0 only when head is 0), then when
 *     known > 0: varint the oldest kept ts and known - 1 varint deltas to
 *     the next one (timestamps never go back)
 *   then one record per membership, in the store's walk order:
 *     u64 uid, varint group number (< ngroups), varint unread (<= head)
 *
 * Memberships name groups by their number in the store. The loader adds
 * the groups in file order to an empty store, so they get the same
 * numbers back. A window of 100 ordinary timestamps takes ~200-300 bytes
 * before compression, a membership ~11.
 */
#include <stdlib.h>

#include "grp.h"
#include "sections.h"

/* Users per grp_scan_members call: bounds a walk step, not memory. */
#define SCAN_BATCH 1024

static void save_member(uint64_t uid, uint32_t group, uint64_t unread,
                        void *ctx)
{
    struct snap_writer *w = ctx;

    snap_put_u64(w, uid);
    snap_put_varint(w, group);
    snap_put_varint(w, unread);
}

static void save_group(const struct grp_store *s, uint32_t i,
                       struct snap_writer *w)
{
    struct grp_group_info gi;
    uint64_t prev = 0;

    grp_group_info(s, i, &gi);
    snap_put_u64(w, gi.gid);
    snap_put_varint(w, gi.head);
    snap_put_varint(w, gi.window);
    snap_put_varint(w, gi.known);
    for (uint32_t k = 0; k < gi.known; k++) {
        uint64_t ts = grp_group_ts(s, i, k);

        snap_put_varint(w, ts - prev);
        prev = ts;
    }
}

int sec_grp_save(const struct db *db, struct snap_writer *w)
{
    uint32_t n = grp_group_count(db->grp);
    uint64_t cursor = 0;

    snap_put_varint(w, n);
    for (uint32_t i = 0; i < n; i++)
        save_group(db->grp, i, w);
    do {
        grp_scan_members(db->grp, &cursor, SCAN_BATCH, save_member, w);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    return 0;
}

/* One group's record into the store; *ts is a buffer the caller frees,
 * grown here to the window. */
static int load_group(struct grp_store *s, struct snap_reader *r, uint64_t **ts,
                      uint64_t *cap)
{
    uint64_t gid, head, window, known, d, t = 0;
    int rc;

    if (snap_get_u64(r, &gid) != 0 ||
        snap_get_varint(r, UINT64_MAX, &head) != 0 ||
        snap_get_varint(r, GRP_WINDOW_MAX, &window) != 0 ||
        snap_get_varint(r, window, &known) != 0)
        return -1;
    if (known > *cap) {
        uint64_t *more = realloc(*ts, known * sizeof(**ts));

        if (more == NULL)
            return snap_fail(r, "out of memory");
        *ts = more;
        *cap = known;
    }
    for (uint64_t k = 0; k < known; k++) {
        if (snap_get_varint(r, UINT64_MAX - t, &d) != 0)
            return -1;
        (*ts)[k] = t += d;
    }
    rc =
        grp_restore_group(s, gid, head, (uint32_t)window, (uint32_t)known, *ts);
    if (rc != 0)
        return snap_fail(r, "group %llu: %s", (unsigned long long)gid,
                         rc > 0 ? "listed twice or inconsistent"
                                : "out of memory");
    return 0;
}

static int load_member(struct grp_store *s, struct snap_reader *r,
                       uint64_t ngroups)
{
    uint64_t uid, group, unread;
    int rc;

    if (snap_get_u64(r, &uid) != 0 ||
        snap_get_varint(r, ngroups - 1, &group) != 0 ||
        snap_get_varint(r, UINT64_MAX, &unread) != 0)
        return -1;
    rc = grp_restore_member(s, uid, (uint32_t)group, unread);
    if (rc != 0)
        return snap_fail(r, "user %llu, group number %llu: %s",
                         (unsigned long long)uid, (unsigned long long)group,
                         rc > 0 ? "listed twice or unread over the head"
                                : "out of memory");
    return 0;
}

int sec_grp_load(struct db *db, struct snap_reader *r)
{
    uint64_t ngroups, *ts = NULL, cap = 0;
    int rc = -1;

    if (snap_get_varint(r, INT32_MAX, &ngroups) != 0)
        return -1;
    for (uint64_t i = 0; i < ngroups; i++)
        if (load_group(db->grp, r, &ts, &cap) != 0)
            goto out;
    if (snap_more(r) && ngroups == 0) {
        snap_fail(r, "memberships but no groups");
        goto out;
    }
    while (snap_more(r))
        if (load_member(db->grp, r, ngroups) != 0)
            goto out;
    rc = 0;
out:
    free(ts);
    return rc;
}
