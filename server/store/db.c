/*
 * db.c - see db.h. Every loop is generated from families.def, so a family
 * is in all of them or fails the build.
 */
#include "db.h"

#include <string.h>
#include <strings.h>

#include "days.h"
#include "feed.h"
#include "grp.h"
#include "u32map.h"
#include "u64map.h"

#define FLAG_EXPIRABLE FAMF_EXPIRABLE
#define FLAG_KEPT 0u
#define FLAG_PREFETCH FAMF_PREFETCH
#define FLAG_NO_PREFETCH 0u

const struct family_desc db_families[FAM_COUNT] = {
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    [FAM_##                                                                    \
        ID] = {#f, #ID, unit, title, lo, hi, FLAG_##expiry | FLAG_##prefetch},
#include "families.def"
#undef FAMILY
};

static size_t expiry_audit(const struct db *db);

int db_family_by_name(const char *name, size_t len)
{
    for (unsigned f = 0; f < FAM_COUNT; f++)
        if (strlen(db_families[f].name) == len &&
            strncasecmp(db_families[f].name, name, len) == 0)
            return (int)f;
    return -1;
}

int db_init(struct db *db)
{
    *db = (struct db){0};
    db->active = u32map_create_tagset(NULL);
    db->expired = u64map_create(NULL);
    if (db->active == NULL || db->expired == NULL)
        goto error;
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    if ((db->f = f##_create()) == NULL)                                        \
        goto error;
#include "families.def"
#undef FAMILY
    /* GRP and FEED keep days in their maps' tags (days.h); ctx is the
     * table itself, not db, which FLUSHALL copies. */
    u64map_on_drop(grp_user_map(db->grp), db_day_dropped, db->active);
    u64map_on_drop(feed_user_map(db->feed), db_day_dropped, db->active);
    return 0;

error:
    db_deinit(db);
    return -1;
}

void db_deinit(struct db *db)
{
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title) f##_destroy(db->f);
#include "families.def"
#undef FAMILY
    u32map_destroy(db->active);
    u64map_destroy(db->expired);
    *db = (struct db){0};
}

unsigned db_usage(const struct db *db, struct db_usage *out)
{
    unsigned n = 0;

#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    out[n++] =                                                                 \
        (struct db_usage){#f, unit, f##_entries(db->f), f##_bytes(db->f)};
#include "families.def"
#undef FAMILY
    /* The days DOT, GRP, FEED and BC keep in their entries are in their
     * bytes. */
    out[n++] = (struct db_usage){"activity", "user", db_active_users(db),
                                 u32map_bytes(db->active)};
    out[n++] = (struct db_usage){"expired", "user", u64map_count(db->expired),
                                 u64map_bytes(db->expired)};
    return n;
}

size_t db_entries(const struct db *db, unsigned fam)
{
    switch (fam) {
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    case FAM_##ID:                                                             \
        return f##_entries(db->f);
#include "families.def"
#undef FAMILY
    default:
        return 0;
    }
}

size_t db_bytes(const struct db *db)
{
    struct db_usage u[DB_USAGE_ROWS];
    unsigned n = db_usage(db, u);
    size_t bytes = 0;

    for (unsigned i = 0; i < n; i++)
        bytes += u[i].bytes;
    return bytes;
}

bool db_active_day(const struct db *db, uint64_t uid, uint32_t *day)
{
    uint16_t d;

    if (!u32map_get_tag(db->active, uid, &d) &&
        db_day_held(db, uid, NULL, &d) == NULL)
        return false;
    *day = d;
    return true;
}

size_t db_active_users(const struct db *db)
{
    return u32map_count(db->active) + db_day_tracked(db);
}

size_t db_audit(const struct db *db)
{
    size_t bad = 0;

#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    bad += f##_audit(db->f);
#include "families.def"
#undef FAMILY
    bad += u32map_audit(db->active);
    bad += db_day_audit(db);
    bad += expiry_audit(db);
    return bad;
}

uint64_t db_forget_user(struct db *db, uint64_t uid, uint32_t mask,
                        uint64_t removed[FAM_COUNT])
{
    uint64_t sum = 0, n;

#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    if (mask & (1u << FAM_##ID)) {                                             \
        n = f##_forget_user(db->f, uid);                                       \
        removed[FAM_##ID] += n;                                                \
        sum += n;                                                              \
    }
#include "families.def"
#undef FAMILY
    u32map_del(db->active, uid);
    /* Erased from the activity table, the days the families keep included
     * (a day GRP or FEED dropped with the user's list went to the table):
     * the user is no longer tracked, whatever entries it keeps. */
    db_day_forget(db, uid, mask);
    return sum;
}

#define PREFETCH_PREFETCH(f, ID)                                               \
    case FAM_##ID:                                                             \
        f##_prefetch_user(db->f, uid, stage);                                  \
        break;
#define PREFETCH_NO_PREFETCH(f, ID)

void db_prefetch_user(const struct db *db, unsigned fam, uint64_t uid,
                      int stage)
{
    switch (fam) {
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    PREFETCH_##prefetch(f, ID)
#include "families.def"
#undef FAMILY
    default:
        break;
    }
}

/* ---- Expiry records ------------------------------------------------------
 * One u64map word per user: [ms: 48 | pending: 8 | families: 8]. families
 * is never empty, so the word is never 0 (u64map's "absent"). */

static uint64_t expiry_word(const struct db_expiry *e)
{
    return e->ms << 16 | (uint64_t)(e->pending & 0xFF) << 8 |
           (e->families & 0xFF);
}

static void expiry_of(uint64_t w, struct db_expiry *e)
{
    e->ms = w >> 16;
    e->pending = (uint32_t)(w >> 8) & 0xFF;
    e->families = (uint32_t)w & 0xFF;
}

/* Moves the per-family pending counts from old's bits to new's. */
static void pending_count(struct db *db, uint32_t old, uint32_t now)
{
    for (unsigned f = 0; f < FAM_COUNT; f++) {
        db->expired_pending[f] -= (old >> f) & 1;
        db->expired_pending[f] += (now >> f) & 1;
    }
}

bool db_expiry_get(const struct db *db, uint64_t uid, struct db_expiry *e)
{
    uint64_t w = u64map_get(db->expired, uid);

    if (w == 0)
        return false;
    expiry_of(w, e);
    return true;
}

uint64_t db_expiry_pending(const struct db *db, uint64_t uid, unsigned fam)
{
    struct db_expiry e;

    if (fam >= FAM_COUNT || db->expired_pending[fam] == 0 ||
        !db_expiry_get(db, uid, &e) || !(e.pending >> fam & 1))
        return 0;
    return e.ms;
}

uint64_t db_expiry_floor(const struct db *db, uint64_t uid, unsigned fam)
{
    struct db_expiry e;

    if (fam >= FAM_COUNT || u64map_count(db->expired) == 0 ||
        !db_expiry_get(db, uid, &e) || !(e.families >> fam & 1))
        return 0;
    return e.ms;
}

int db_expiry_note(struct db *db, uint64_t uid, uint64_t ms, uint32_t mask)
{
    struct db_expiry e = {0, 0, 0};
    uint32_t old = 0;

    mask &= (1u << FAM_COUNT) - 1;
    if (mask == 0)
        return 0;
    if (db_expiry_get(db, uid, &e))
        old = e.pending;
    e.ms = ms > DB_EXPIRY_MS_MAX ? DB_EXPIRY_MS_MAX : ms;
    e.families |= mask;
    e.pending |= mask;
    if (u64map_put(db->expired, uid, expiry_word(&e)) != 0)
        return -1;
    pending_count(db, old, e.pending);
    return 0;
}

void db_expiry_rebuilt(struct db *db, uint64_t uid, unsigned fam)
{
    uint64_t *w = u64map_ref(db->expired, uid);
    struct db_expiry e;

    if (w == NULL)
        return;
    expiry_of(*w, &e);
    if (!(e.pending >> fam & 1))
        return;
    e.pending &= ~(1u << fam);
    *w = expiry_word(&e);
    db->expired_pending[fam]--;
}

bool db_expiry_forget(struct db *db, uint64_t uid)
{
    struct db_expiry e;

    if (!db_expiry_get(db, uid, &e))
        return false;
    pending_count(db, e.pending, 0);
    u64map_del(db->expired, uid);
    return true;
}

int db_expiry_put(struct db *db, uint64_t uid, const struct db_expiry *e)
{
    if (u64map_get(db->expired, uid) != 0)
        return 1;
    if (u64map_put(db->expired, uid, expiry_word(e)) != 0)
        return -1;
    pending_count(db, 0, e->pending);
    return 0;
}

struct expiry_scan {
    db_expiry_fn fn;
    void *ctx;
};

static void expiry_visit(uint64_t uid, uint64_t w, void *ctx)
{
    struct expiry_scan *es = ctx;
    struct db_expiry e;

    expiry_of(w, &e);
    es->fn(uid, &e, es->ctx);
}

size_t db_expiry_scan(const struct db *db, uint64_t *cursor, size_t max,
                      db_expiry_fn fn, void *ctx)
{
    struct expiry_scan es = {fn, ctx};

    return u64map_scan(db->expired, cursor, max, expiry_visit, &es);
}

/* Every record well formed, and the pending counts a recount. */
struct expiry_audit {
    size_t bad;
    uint64_t pending[FAM_COUNT];
};

static void expiry_audit_visit(uint64_t uid, const struct db_expiry *e,
                               void *ctx)
{
    struct expiry_audit *a = ctx;

    (void)uid;
    a->bad += e->families == 0 || (e->families >> FAM_COUNT) != 0 ||
              (e->pending & ~e->families) != 0;
    for (unsigned f = 0; f < FAM_COUNT; f++)
        a->pending[f] += e->pending >> f & 1;
}

static size_t expiry_audit(const struct db *db)
{
    struct expiry_audit a = {0, {0}};
    uint64_t cursor = 0;

    do
        db_expiry_scan(db, &cursor, SIZE_MAX, expiry_audit_visit, &a);
    while (cursor != 0);
    for (unsigned f = 0; f < FAM_COUNT; f++)
        a.bad += a.pending[f] != db->expired_pending[f];
    return a.bad + u64map_audit(db->expired);
}
