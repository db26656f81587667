/*
 * days.c - see days.h.
 */
#include "days.h"

#include "bc.h"
#include "dot.h"
#include "feed.h"
#include "grp.h"
#include "u32map.h"
#include "u64map.h"

/* ---- The holders ----------------------------------------------------------
 */

struct fn_ctx {
    db_day_fn fn;
    void *ctx;
};

static void tag_visit(uint64_t uid, uint16_t day, void *ctx)
{
    struct fn_ctx *fc = ctx;

    fc->fn(uid, day, fc->ctx);
}

/* The activity table is a tag set (u32map.h): the day is the tag. */
static void table_visit(uint64_t uid, uint32_t val, uint16_t day, void *ctx)
{
    (void)val;
    tag_visit(uid, day, ctx);
}

static bool dot_get(const struct db *db, uint64_t uid, uint16_t *day)
{
    return dot_user_day(db->dot, uid, day);
}

static int dot_set(struct db *db, uint64_t uid, uint16_t day)
{
    return dot_set_user_day(db->dot, uid, day);
}

static size_t dot_tracked(const struct db *db)
{
    return dot_tracked_users(db->dot);
}

static size_t dot_days(const struct db *db, uint64_t pos[2], size_t max,
                       db_day_fn fn, void *ctx, bool *done)
{
    struct fn_ctx fc = {fn, ctx};
    size_t n = dot_scan_days(db->dot, &pos[0], max, tag_visit, &fc);

    *done = pos[0] == 0;
    return n;
}

static bool bc_get(const struct db *db, uint64_t uid, uint16_t *day)
{
    return bc_user_day(db->bc, uid, day);
}

static int bc_set(struct db *db, uint64_t uid, uint16_t day)
{
    return bc_set_user_day(db->bc, uid, day);
}

static size_t bc_tracked(const struct db *db)
{
    return bc_tracked_users(db->bc);
}

static size_t bc_days(const struct db *db, uint64_t pos[2], size_t max,
                      db_day_fn fn, void *ctx, bool *done)
{
    struct fn_ctx fc = {fn, ctx};
    struct bc_day_cursor c = {pos[0], pos[1], false};
    size_t n = bc_scan_days(db->bc, &c, max, tag_visit, &fc);

    pos[0] = c.chan;
    pos[1] = c.user;
    *done = c.done;
    return n;
}

/* GRP and FEED keep the day in the tag of their uid-keyed map's slot
 * (u64map.h, "Tags", f##_user_map): the same four calls over either map. */
#define MAP_HOLDER(f)                                                          \
    static bool f##_get(const struct db *db, uint64_t uid, uint16_t *day)      \
    {                                                                          \
        return u64map_get_tag(f##_user_map(db->f), uid, day);                  \
    }                                                                          \
    static int f##_set(struct db *db, uint64_t uid, uint16_t day)              \
    {                                                                          \
        return u64map_set_tag(f##_user_map(db->f), uid, day) ? 1 : 0;          \
    }                                                                          \
    static size_t f##_tracked(const struct db *db)                             \
    {                                                                          \
        return u64map_tagged(f##_user_map(db->f));                             \
    }                                                                          \
    static size_t f##_days(const struct db *db, uint64_t pos[2], size_t max,   \
                           db_day_fn fn, void *ctx, bool *done)                \
    {                                                                          \
        struct fn_ctx fc = {fn, ctx};                                          \
        size_t n = u64map_scan_tags(f##_user_map(db->f), &pos[0], max,         \
                                    tag_visit, &fc);                           \
                                                                               \
        *done = pos[0] == 0;                                                   \
        return n;                                                              \
    }

MAP_HOLDER(grp)
MAP_HOLDER(feed)
#undef MAP_HOLDER

/* Map probes first (DOT, GRP, FEED: one each), BC last: its lookup may
 * walk the user's channels (bc.h); db_day_held asks them in this order. */
const struct db_day_holder db_day_holders[DB_DAY_HOLDERS] = {
    {FAM_DOT, dot_get, dot_set, dot_tracked, dot_days},
    {FAM_GRP, grp_get, grp_set, grp_tracked, grp_days},
    {FAM_FEED, feed_get, feed_set, feed_tracked, feed_days},
    {FAM_BC, bc_get, bc_set, bc_tracked, bc_days},
};

/* A day dropped with a GRP or FEED list (the user's last group left, last
 * author unfollowed) moves to the activity table (ctx), so that the user
 * stays tracked for what it keeps elsewhere. Best effort, as every move to
 * the table: if it cannot grow, the user is no longer tracked. */
void db_day_dropped(uint64_t uid, uint16_t day, void *ctx)
{
    (void)u32map_put_tagged(ctx, uid, 0, day);
}

const struct db_day_holder *db_day_holder_of(unsigned fam)
{
    for (unsigned i = 0; i < DB_DAY_HOLDERS; i++)
        if (db_day_holders[i].fam == fam)
            return &db_day_holders[i];
    return NULL;
}

const struct db_day_holder *db_day_held(const struct db *db, uint64_t uid,
                                        const struct db_day_holder *skip,
                                        uint16_t *day)
{
    for (unsigned i = 0; i < DB_DAY_HOLDERS; i++) {
        const struct db_day_holder *h = &db_day_holders[i];

        /* A holder that keeps no day costs no lookup: GRP's and FEED's
         * stay out of the way of CNT's writers while nobody expires. */
        if (h != skip && h->tracked(db) != 0 && h->get(db, uid, day) &&
            *day != 0)
            return h;
    }
    return NULL;
}

/* ---- Walks ------------------------------------------------------------------
 */

size_t db_scan_days(const struct db *db, struct db_day_cursor *cur, size_t max,
                    db_day_fn fn, void *ctx)
{
    size_t n;
    bool done;

    if (cur->done)
        return 0;
    if (cur->place == 0) {
        struct fn_ctx fc = {fn, ctx};

        n = u32map_scan_tagged(db->active, &cur->pos[0], max, table_visit, &fc);
        done = cur->pos[0] == 0;
    } else {
        n = db_day_holders[cur->place - 1].scan(db, cur->pos, max, fn, ctx,
                                                &done);
    }
    if (done) {
        cur->pos[0] = cur->pos[1] = 0;
        cur->done = ++cur->place > DB_DAY_HOLDERS;
    }
    return n;
}

void db_day_forget(struct db *db, uint64_t uid, uint32_t mask)
{
    for (unsigned i = 0; i < DB_DAY_HOLDERS; i++)
        if (!(mask & (1u << db_day_holders[i].fam)))
            db_day_holders[i].set(db, uid, 0);
}

size_t db_day_tracked(const struct db *db)
{
    size_t n = 0;

    for (unsigned i = 0; i < DB_DAY_HOLDERS; i++)
        n += db_day_holders[i].tracked(db);
    return n;
}

struct audit_ctx {
    const struct db *db;
    unsigned place;
    size_t bad, seen[DB_DAY_HOLDERS + 1];
};

/* uid, whose day the walk found in place ac->place, has none elsewhere. */
static void audit_visit(uint64_t uid, uint32_t day, void *ctx)
{
    struct audit_ctx *ac = ctx;
    uint32_t t;
    uint16_t d;

    (void)day;
    ac->seen[ac->place]++;
    if (ac->place != 0)
        ac->bad += u32map_get(ac->db->active, uid, &t);
    for (unsigned i = 0; i < DB_DAY_HOLDERS; i++)
        if (i + 1 != ac->place)
            ac->bad += db_day_holders[i].get(ac->db, uid, &d) && d != 0;
}

size_t db_day_audit(const struct db *db)
{
    struct audit_ctx ac = {db, 0, 0, {0}};
    struct db_day_cursor cur = {0};

    while (!cur.done) {
        ac.place = cur.place;
        db_scan_days(db, &cur, SIZE_MAX, audit_visit, &ac);
    }
    ac.bad += ac.seen[0] != u32map_count(db->active);
    for (unsigned i = 0; i < DB_DAY_HOLDERS; i++)
        ac.bad += ac.seen[i + 1] != db_day_holders[i].tracked(db);
    return ac.bad;
}
