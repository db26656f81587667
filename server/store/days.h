/*
 * days.h - where the users' activity days live (server/users.h, "Activity"):
 * the activity table (db->active, a u32map tag set: the day is the tag of
 * the user's key, ~8.5 bytes a user, u32map.h) and
 * the day holders, the families whose per-user records keep the day in a
 * u16 tag at little or no extra cost (DOT: dot.h, BC: bc.h, "Activity
 * days"; GRP and FEED: the tag of their uid-keyed map's slot, u64map.h,
 * "Tags", 2 bytes a slot).
 *
 * A holder may lose a user's record while the user keeps state elsewhere
 * (GRP.LEAVE of the last group, FEED.UNFOLLOW of the last author): GRP's
 * and FEED's maps hand the day of a slot they delete to db_day_dropped,
 * which moves it to the table. (DOT and BC only lose a user whole, with
 * USER.DEL or USER.EXPIRE, which untrack it anyway.)
 *
 * Invariant (DEBUG AUDIT, db_day_audit): a tracked user's day is kept in
 * exactly one place, the table or one holder; the other holders keep 0 for
 * it. So a walk of the table, then of each holder's days (db_scan_days),
 * visits each tracked user once: the expiry sweep and the snapshot's
 * activity section walk that.
 *
 * Where a day goes is users_mark_active's rule (server/users.c); a new
 * holder is one row of db_day_holders (days.c) with the five calls below,
 * and a family whose store can keep a u16 per user.
 */
#ifndef UR_DAYS_H
#define UR_DAYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"

typedef void (*db_day_fn)(uint64_t uid, uint32_t day, void *ctx);

struct db_day_holder {
    unsigned fam; /* FAM_x: its commands refresh the day where it is */
    /* false when uid has no record in the family; else true, *day (0:
     * none kept here) */
    bool (*get)(const struct db *db, uint64_t uid, uint16_t *day);
    /* 1; 0 when uid has no record; -1 on allocation failure (nothing
     * changed). Day 0 and the day uid has never fail. */
    int (*set)(struct db *db, uint64_t uid, uint16_t day);
    /* users with a day kept here */
    size_t (*tracked)(const struct db *db);
    /* one step of the walk of the users with a day here: looks at about
     * max users from pos (zeroed: the start), calls fn for those with a
     * day; *done when the walk ended */
    size_t (*scan)(const struct db *db, uint64_t pos[2], size_t max,
                   db_day_fn fn, void *ctx, bool *done);
};

#define DB_DAY_HOLDERS 4
extern const struct db_day_holder db_day_holders[DB_DAY_HOLDERS];

/* The holder of family fam, or NULL when fam keeps no days. */
const struct db_day_holder *db_day_holder_of(unsigned fam);

/* The holder keeping a day for uid, with *day, or NULL; skip (or NULL) is
 * not looked at. */
const struct db_day_holder *db_day_held(const struct db *db, uint64_t uid,
                                        const struct db_day_holder *skip,
                                        uint16_t *day);

/* A walk over every tracked user's day, each once: the table, then each
 * holder's. Start zeroed; done is true when the walk ended. Changes
 * between steps never make it miss a user whose day stays in one place for
 * the whole walk. Returns the users looked at. */
struct db_day_cursor {
    unsigned place; /* 0: the table; i > 0: db_day_holders[i - 1] */
    uint64_t pos[2];
    bool done;
};
size_t db_scan_days(const struct db *db, struct db_day_cursor *cur, size_t max,
                    db_day_fn fn, void *ctx);

/* uid's day dropped from the holders whose family is not in mask (those
 * in mask forget the user's records with it). */
void db_day_forget(struct db *db, uint64_t uid, uint32_t mask);

/* u64map_tag_fn of the maps of GRP and FEED (db_init): the dropped day of
 * uid goes to the activity table, ctx (db->active). */
void db_day_dropped(uint64_t uid, uint16_t day, void *ctx);

/* Users tracked by the holders. */
size_t db_day_tracked(const struct db *db);

/* The invariant above: the violations. O(tracked users). */
size_t db_day_audit(const struct db *db);

#endif
