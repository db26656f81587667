/*
 * users.h - users as a whole (docs/OPERATIONS.md, "Users and expiry"): the
 * activity table that says when each user was last active, erasing one user
 * from every family (expiry, USER.DEL), and the incremental expiry of users
 * inactive for longer than inactive-days.
 *
 * Activity: the UTC day (ms / 86400000) of the user's last command naming
 * it as the reader, kept in one place (days.h): the entries of a family
 * that keeps days while the user's commands are that family's (DOT's map
 * entry, dot.h; BC's entries, bc.h: 1 byte a subscription; the tag of
 * GRP's and FEED's map slot, 2 bytes: u64map.h, "Tags"), else in
 * db->active, a u32map tag set: a key and a day, ~8.5 bytes (db_active_day).
 * Only users with something to expire are in it: a user enters through a
 * command of a family in expire-families, and from then on any user command
 * keeps it active; a user of kept families only (CNT, CONV by default) costs
 * nothing. Days, not milliseconds: the table changes at most once a day per
 * user, so the executor journals a read that marks a user active only then
 * (x->dirty), and replay rebuilds the table exactly.
 *
 * Expiry: a sweep walks the activity table, then the days DOT, GRP, FEED
 * and BC keep (db_scan_days: each tracked user once), with a cursor, a bounded
 * slice
 * per timer run (users_expire_cycle), and expires each user inactive for
 * more than inactive-days whole days by running USER.EXPIRE through the
 * executor, which journals it like any write: replay repeats exactly what
 * the sweep did, and the sweep itself never runs during replay (it is
 * started by main.c's timer, after recovery). A sweep starts when the day
 * changes (no user can become expirable between two days) and ends when
 * the walk does.
 */
#ifndef UR_USERS_H
#define UR_USERS_H

#include <stdbool.h>
#include <stdint.h>

#include "ops.h"
#include "proto.h"
#include "server.h"

#define USERS_DAY_MS UINT64_C(86400000)

static inline uint32_t users_day(uint64_t ms)
{
    return (uint32_t)(ms / USERS_DAY_MS);
}

/*
 * The executor's hook after a command succeeded: when op names its reader
 * (OPF_USER, and not OPF_ADMIN: an operator looking at a user is not the
 * user's activity), marks argv[0] active today by the server clock (the
 * pinned one: no system call). true when the table changed (a new user or
 * a new day): the command must be journaled. An allocation failure leaves
 * the user as it was: activity is best effort, and a user absent from the
 * table is never expired. A user not in the table is added only by a
 * command of a family in expire-families.
 *
 * changed: the command changed state (a write, or a read that did, as
 * BC.UNREAD registering the user). Then the command rebuilt its family
 * for the user: the family is no longer pending in the user's expiry
 * record (db_expiry_rebuilt). That needs no journal record of its own:
 * the command's own record replays it.
 */
bool users_mark_active(struct server *srv, const struct ur_op *op,
                       uint32_t argc, const struct ur_arg *argv, bool changed);

/*
 * One slice of the expiry sweep, from a timer while the server serves:
 * starts a sweep when the day changed since the last one began, then
 * expires inactive users until budget_us has passed or the walk ends.
 * Each expiry is a USER.EXPIRE through the executor; when one is refused
 * (the journal cannot be written) the sweep stops and starts again from
 * the beginning at the next slice. true while a sweep is in progress (call
 * again soon), false when there is nothing to do until the day changes.
 */
bool users_expire_cycle(struct server *srv, uint64_t budget_us);

#endif
