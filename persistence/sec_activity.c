/*
 * sec_activity.c - the user activity section of the snapshot
 * (sections.def, id 8): the days expiry reads (server/users.h), those of
 * the activity table and those the families keep in their entries alike
 * (days.h: DOT, GRP, FEED, BC). Loading after the families' sections (ids
 * 1-7), a user with clicks gets its day back in DOT's entry, else one with
 * groups in GRP's, else one with follows in FEED's, else one registered in
 * a channel in BC's entries, else one in the table, whichever kept it when
 * the snapshot was written (so snapshots of every version, written before
 * those families kept days, load into the new layout).
 *
 * Raw bytes: one record per tracked user, in the walk order of
 * db_scan_days (the table, then the days of DOT, GRP, FEED and BC):
 *   u64 uid, varint day (the UTC day of its last activity, ms / 86400000,
 *   at most 4294967295)
 * 11 bytes a user before compression.
 */
#include "sections.h"
#include "days.h"
#include "u32map.h"

/* Users per walk step: bounds the stack of a step, not memory. */
#define SCAN_BATCH 1024

static void save_user(uint64_t uid, uint32_t day, void *ctx)
{
    struct snap_writer *w = ctx;

    snap_put_u64(w, uid);
    snap_put_varint(w, day);
}

int sec_activity_save(const struct db *db, struct snap_writer *w)
{
    struct db_day_cursor cur = {0};

    while (!cur.done) {
        db_scan_days(db, &cur, SCAN_BATCH, save_user, w);
        if (snap_put_failed(w))
            return -1;
    }
    return 0;
}

int sec_activity_load(struct db *db, struct snap_reader *r)
{
    while (snap_more(r)) {
        const struct db_day_holder *h = NULL;
        uint64_t uid, day;
        uint32_t old;
        uint16_t tag;
        int rc;

        if (snap_get_u64(r, &uid) != 0 ||
            snap_get_varint(r, UINT32_MAX, &day) != 0)
            return -1;
        if (db_active_day(db, uid, &old))
            return snap_fail(r, "user %llu listed twice",
                             (unsigned long long)uid);
        /* The first family that keeps days and has the user, else the
         * table. */
        for (unsigned i = 0; i < DB_DAY_HOLDERS && h == NULL; i++)
            if (db_day_holders[i].get(db, uid, &tag))
                h = &db_day_holders[i];
        rc = h != NULL ? h->set(db, uid, db_day_tag((uint32_t)day)) < 0
                       : u32map_put_tagged(db->active, uid, 0,
                                           db_day_tag((uint32_t)day)) != 0;
        if (rc != 0)
            return snap_fail(r, "user %llu: out of memory",
                             (unsigned long long)uid);
    }
    return 0;
}
