/*
 * sec_conv.c - the CONV section of the snapshot (sections.def, id 2).
 *
 * Raw bytes: one record per (user, conversation), in the store's walk
 * order (a user's conversations together):
 *   u64 uid, u64 cid, varint read, varint max - read, u8 muted (0 or 1),
 *   varint nrecall (0..CONV_RECALL_MAX), then nrecall times: varint gap
 *   (>= 1) from the previous recalled seq, the first from read
 * The user totals are not saved: conv_put rebuilds them, and the loader
 * cannot be handed a total that disagrees with its parts. An ordinary
 * conversation takes ~21 bytes before compression.
 */
#include "conv.h"
#include "sections.h"

/* Users per conv_scan call: bounds the work of a walk step, not memory. */
#define SCAN_BATCH 1024

static void save_conv(uint64_t uid, uint64_t cid, const struct conv_info *ci,
                      void *ctx)
{
    struct snap_writer *w = ctx;

    snap_put_u64(w, uid);
    snap_put_u64(w, cid);
    snap_put_varint(w, ci->read);
    snap_put_varint(w, ci->max - ci->read);
    snap_put_u8(w, ci->muted);
    snap_put_varint(w, ci->nrecall);
    for (uint32_t i = 0; i < ci->nrecall; i++)
        snap_put_varint(w, ci->recall[i] - (i ? ci->recall[i - 1] : ci->read));
}

int sec_conv_save(const struct db *db, struct snap_writer *w)
{
    uint64_t cursor = 0;

    do {
        conv_scan(db->conv, &cursor, SCAN_BATCH, save_conv, w);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    return 0;
}

/* One record; recall has room for CONV_RECALL_MAX seqs. */
static int load_conv(struct conv_store *s, struct snap_reader *r,
                     uint64_t *recall)
{
    uint64_t uid, cid, span, n, gap;
    struct conv_info ci = {0, 0, 0, false, 0, recall};
    uint8_t muted;
    int rc;

    if (snap_get_u64(r, &uid) != 0 || snap_get_u64(r, &cid) != 0 ||
        snap_get_varint(r, UINT64_MAX, &ci.read) != 0 ||
        snap_get_varint(r, UINT64_MAX - ci.read, &span) != 0 ||
        snap_get_u8(r, &muted) != 0 ||
        snap_get_varint(r, CONV_RECALL_MAX, &n) != 0)
        return -1;
    ci.max = ci.read + span;
    ci.muted = muted == 1;
    ci.nrecall = (uint32_t)n;
    for (uint32_t i = 0; i < ci.nrecall; i++) {
        uint64_t prev = i ? recall[i - 1] : ci.read;

        if (snap_get_varint(r, UINT64_MAX - prev, &gap) != 0)
            return -1;
        recall[i] = prev + gap;
    }
    rc = muted > 1 ? CONV_EINVAL : conv_put(s, uid, cid, &ci);
    if (rc != 0)
        return snap_fail(r, "user %llu conversation %llu: %s",
                         (unsigned long long)uid, (unsigned long long)cid,
                         rc > 0              ? "listed twice"
                         : rc == CONV_ENOMEM ? "out of memory"
                                             : "impossible state");
    return 0;
}

int sec_conv_load(struct db *db, struct snap_reader *r)
{
    uint64_t recall[CONV_RECALL_MAX]; /* 8 KiB */

    while (snap_more(r))
        if (load_conv(db->conv, r, recall) != 0)
            return -1;
    return 0;
}
