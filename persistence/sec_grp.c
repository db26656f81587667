/*
 * sec_grp.c - the GRP section of the snapshot (sections.def, id 3).
 *
 * Raw bytes:
 *   varint ngroups | version << 40 (version 0: written before the chat
 *   features, 1: now), then for each group in number order:
 *     u64 gid, varint head, varint window (0..GRP_WINDOW_MAX),
 *     varint known (<= window, <= head; 0 only when head is 0), then when
 *     known > 0: varint the oldest kept ts and known - 1 varint deltas to
 *     the next one (timestamps never go back);
 *     version 1: varint nrecall (0..GRP_RECALL_MAX) and the recalled seqs
 *     as gaps (>= 1), the first from 0 (ascending, <= head)
 *   then one record per membership, in the store's walk order:
 *     u64 uid, varint group number (< ngroups), varint unread (<= head);
 *     version 1: u8 flags (bit 0 muted), varint nmentions
 *     (0..GRP_MENTION_MAX) and the mentioned seqs as gaps (>= 1), the
 *     first from seen = head - unread (ascending, <= head)
 *
 * An older unreadd refuses a version 1 section (its ngroups bound); this
 * one reads both.
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

#define VERSION_SHIFT 40
#define VERSION 1
#define FL_MUTED 1u

/* Everything save_member needs: the writer and the store (for heads). */
struct save_ctx {
    struct snap_writer *w;
    const struct grp_store *s;
};

static void save_member(uint64_t uid, uint32_t group,
                        const struct grp_member_info *mi, void *ctx)
{
    struct save_ctx *sc = ctx;
    struct snap_writer *w = sc->w;
    struct grp_group_info gi;
    uint64_t prev;

    grp_group_info(sc->s, group, &gi);
    prev = gi.head - mi->unread;
    snap_put_u64(w, uid);
    snap_put_varint(w, group);
    snap_put_varint(w, mi->unread);
    snap_put_u8(w, mi->muted ? FL_MUTED : 0);
    snap_put_varint(w, mi->nment);
    for (uint32_t i = 0; i < mi->nment; i++) {
        snap_put_varint(w, mi->ment[i] - prev);
        prev = mi->ment[i];
    }
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
    snap_put_varint(w, gi.nrecall);
    for (uint32_t k = 0; k < gi.nrecall; k++)
        snap_put_varint(w, gi.recall[k] - (k ? gi.recall[k - 1] : 0));
}

int sec_grp_save(const struct db *db, struct snap_writer *w)
{
    uint32_t n = grp_group_count(db->grp);
    struct save_ctx sc = {w, db->grp};
    uint64_t cursor = 0;

    snap_put_varint(w, n | (uint64_t)VERSION << VERSION_SHIFT);
    for (uint32_t i = 0; i < n; i++)
        save_group(db->grp, i, w);
    do {
        grp_scan_members(db->grp, &cursor, SCAN_BATCH, save_member, &sc);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    return 0;
}

/* n gaps (>= 1), the first from base, at most max of them, into out
 * (room for max); *n the count. */
static int get_seqs(struct snap_reader *r, uint64_t max, uint64_t base,
                    uint64_t *out, uint32_t *n)
{
    uint64_t cnt, gap;

    if (snap_get_varint(r, max, &cnt) != 0)
        return -1;
    for (uint64_t i = 0; i < cnt; i++) {
        if (snap_get_varint(r, UINT64_MAX - base, &gap) != 0)
            return -1;
        out[i] = base += gap;
    }
    *n = (uint32_t)cnt;
    return 0;
}

/* One group's record into the store; *ts is a buffer the caller frees,
 * grown here to the window; seqs has room for GRP_RECALL_MAX. */
static int load_group(struct grp_store *s, struct snap_reader *r, uint64_t **ts,
                      uint64_t *cap, unsigned version, uint64_t *seqs)
{
    uint32_t nrec = 0;
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
    if (rc == 0 && version > 0) {
        if (get_seqs(r, GRP_RECALL_MAX, 0, seqs, &nrec) != 0)
            return -1;
        rc = grp_restore_recalls(s, gid, nrec, seqs);
    }
    if (rc != 0)
        return snap_fail(r, "group %llu: %s", (unsigned long long)gid,
                         rc > 0 ? "listed twice or inconsistent"
                                : "out of memory");
    return 0;
}

static int load_member(struct grp_store *s, struct snap_reader *r,
                       uint64_t ngroups, unsigned version, uint64_t *seqs)
{
    struct grp_member_info mi = {0, false, 0, seqs};
    uint64_t uid, group;
    struct grp_group_info gi;
    uint8_t flags = 0;
    int rc;

    if (snap_get_u64(r, &uid) != 0 ||
        snap_get_varint(r, ngroups - 1, &group) != 0 ||
        snap_get_varint(r, UINT64_MAX, &mi.unread) != 0)
        return -1;
    if (version > 0) {
        grp_group_info(s, (uint32_t)group, &gi);
        if (snap_get_u8(r, &flags) != 0)
            return -1;
        if (flags & ~FL_MUTED)
            return snap_fail(r, "user %llu: unknown membership flags 0x%02x",
                             (unsigned long long)uid, flags);
        if (mi.unread > gi.head)
            return snap_fail(r,
                             "user %llu, group number %llu: unread over "
                             "the head",
                             (unsigned long long)uid,
                             (unsigned long long)group);
        if (get_seqs(r, GRP_MENTION_MAX, gi.head - mi.unread, seqs,
                     &mi.nment) != 0)
            return -1;
        mi.muted = flags & FL_MUTED;
    }
    rc = grp_restore_member(s, uid, (uint32_t)group, &mi);
    if (rc != 0)
        return snap_fail(r, "user %llu, group number %llu: %s",
                         (unsigned long long)uid, (unsigned long long)group,
                         rc > 0 ? "listed twice or unread over the head"
                                : "out of memory");
    return 0;
}

int sec_grp_load(struct db *db, struct snap_reader *r)
{
    uint64_t first, ngroups, *ts = NULL, cap = 0, *seqs;
    unsigned version;
    int rc = -1;

    if (snap_get_varint(r, (uint64_t)VERSION << VERSION_SHIFT | INT32_MAX,
                        &first) != 0)
        return -1;
    version = (unsigned)(first >> VERSION_SHIFT);
    ngroups = first & ((UINT64_C(1) << VERSION_SHIFT) - 1);
    if (ngroups > INT32_MAX)
        return snap_fail(r, "%llu groups: more than a store can hold",
                         (unsigned long long)ngroups);
    /* Fixed size: the larger of the two bounds, never a count read. */
    seqs = malloc(GRP_MENTION_MAX > GRP_RECALL_MAX
                      ? GRP_MENTION_MAX * sizeof(*seqs)
                      : GRP_RECALL_MAX * sizeof(*seqs));
    if (seqs == NULL)
        return snap_fail(r, "out of memory");
    for (uint64_t i = 0; i < ngroups; i++)
        if (load_group(db->grp, r, &ts, &cap, version, seqs) != 0)
            goto out;
    if (snap_more(r) && ngroups == 0) {
        snap_fail(r, "memberships but no groups");
        goto out;
    }
    while (snap_more(r))
        if (load_member(db->grp, r, ngroups, version, seqs) != 0)
            goto out;
    rc = 0;
out:
    free(ts);
    free(seqs);
    return rc;
}
