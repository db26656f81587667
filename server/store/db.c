/*
 * db.c - see db.h. Every loop is generated from families.def, so a family
 * is in all of them or fails the build.
 */
#include "db.h"

#include <string.h>
#include <strings.h>

#include "u32map.h"

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
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    if ((db->f = f##_create()) == NULL)                                        \
        goto error;
#include "families.def"
#undef FAMILY
    db->active = u32map_create(NULL);
    if (db->active == NULL)
        goto error;
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
    out[n++] = (struct db_usage){"activity", "user", u32map_count(db->active),
                                 u32map_bytes(db->active)};
    return n;
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

size_t db_audit(const struct db *db)
{
    size_t bad = 0;

#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    bad += f##_audit(db->f);
#include "families.def"
#undef FAMILY
    bad += u32map_audit(db->active);
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
