/*
 * sec_expired.c - the expiry records (sections.def, id 10): what the
 * server remembers of each user it expired (server/store/db.h,
 * db_expiry_*; docs/OPERATIONS.md, "Users and expiry"). Snapshots written
 * before it load with no record.
 *
 * Raw bytes: one record per user, in the table's walk order:
 *   u64 uid, varint ms (< 2^48: its last expiry), u8 families (the
 *   families its expiries forgot, 1 << the family's row in families.def,
 *   not 0), u8 pending (those not rebuilt since: a subset of families)
 */
#include "sections.h"

/* Users per walk step: bounds the stack of a step, not memory. */
#define SCAN_BATCH 1024

static void save_user(uint64_t uid, const struct db_expiry *e, void *ctx)
{
    struct snap_writer *w = ctx;

    snap_put_u64(w, uid);
    snap_put_varint(w, e->ms);
    snap_put_u8(w, (uint8_t)e->families);
    snap_put_u8(w, (uint8_t)e->pending);
}

int sec_expired_save(const struct db *db, struct snap_writer *w)
{
    uint64_t cursor = 0;

    do {
        db_expiry_scan(db, &cursor, SCAN_BATCH, save_user, w);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    return 0;
}

int sec_expired_load(struct db *db, struct snap_reader *r)
{
    while (snap_more(r)) {
        struct db_expiry e;
        uint64_t uid;
        uint8_t fams, pending;
        int rc;

        if (snap_get_u64(r, &uid) != 0 ||
            snap_get_varint(r, DB_EXPIRY_MS_MAX, &e.ms) != 0 ||
            snap_get_u8(r, &fams) != 0 || snap_get_u8(r, &pending) != 0)
            return -1;
        if (fams == 0 || (fams >> FAM_COUNT) != 0 || (pending & ~fams) != 0)
            return snap_fail(r, "user %llu: families 0x%02x, pending 0x%02x",
                             (unsigned long long)uid, fams, pending);
        e.families = fams;
        e.pending = pending;
        rc = db_expiry_put(db, uid, &e);
        if (rc != 0)
            return snap_fail(r, "user %llu: %s", (unsigned long long)uid,
                             rc > 0 ? "listed twice" : "out of memory");
    }
    return 0;
}
