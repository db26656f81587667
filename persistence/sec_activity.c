/*
 * sec_activity.c - the user activity section of the snapshot
 * (sections.def, id 8): the days expiry reads (server/users.h), those of
 * the activity table and those BC keeps in its entries alike. Loading
 * after BC's section (id 4), a user registered in a channel gets its day
 * back in BC's entries, one without in the table, whichever kept it when
 * the snapshot was written (so snapshots of every version load into the
 * new layout).
 *
 * Raw bytes: one record per user in the table, in its walk order:
 *   u64 uid, varint day (the UTC day of its last activity, ms / 86400000,
 *   at most 4294967295)
 * 11 bytes a user before compression.
 */
#include "sections.h"
#include "bc.h"
#include "u32map.h"

/* Users per walk step: bounds the stack of a step, not memory. */
#define SCAN_BATCH 1024

static void save_user(uint64_t uid, uint32_t day, void *ctx)
{
    struct snap_writer *w = ctx;

    snap_put_u64(w, uid);
    snap_put_varint(w, day);
}

static void save_bc_user(uint64_t uid, uint16_t day, void *ctx)
{
    save_user(uid, day, ctx);
}

int sec_activity_save(const struct db *db, struct snap_writer *w)
{
    struct bc_day_cursor bc = {0, 0, false};
    uint64_t cursor = 0;

    do {
        u32map_scan(db->active, &cursor, SCAN_BATCH, save_user, w);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    do {
        bc_scan_days(db->bc, &bc, SCAN_BATCH, save_bc_user, w);
        if (snap_put_failed(w))
            return -1;
    } while (!bc.done);
    return 0;
}

int sec_activity_load(struct db *db, struct snap_reader *r)
{
    while (snap_more(r)) {
        uint64_t uid, day;
        uint32_t old;
        uint16_t tag;
        bool in_bc;

        if (snap_get_u64(r, &uid) != 0 ||
            snap_get_varint(r, UINT32_MAX, &day) != 0)
            return -1;
        in_bc = bc_user_day(db->bc, uid, &tag);
        if (u32map_get(db->active, uid, &old) || (in_bc && tag != 0))
            return snap_fail(r, "user %llu listed twice",
                             (unsigned long long)uid);
        if (in_bc) {
            if (bc_set_user_day(db->bc, uid, db_day_tag((uint32_t)day)) < 0)
                return snap_fail(r, "user %llu: out of memory",
                                 (unsigned long long)uid);
            continue;
        }
        if (u32map_put(db->active, uid, (uint32_t)day) != 0)
            return snap_fail(r, "user %llu: out of memory",
                             (unsigned long long)uid);
    }
    return 0;
}
