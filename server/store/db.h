/*
 * db.h - the data of the process: one store per family of families.def,
 * plus the user activity table, and the loops over them. Plain data: no
 * network, no persistence, no configuration, so the executor can run on a
 * scratch db in unit tests and fuzzers, and persistence can load into one.
 */
#ifndef UR_DB_H
#define UR_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum family {
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title) FAM_##ID,
#include "families.def"
#undef FAMILY
    FAM_COUNT
};

/*
 * The store interface every family provides (families.def's comment says
 * what each returns). Declared here from the table, and seen by each
 * store's own .c (which includes db.h): a missing function fails the link,
 * a different signature the compile.
 */
#define DB_PREFETCH_PREFETCH(f)                                                \
    void f##_prefetch_user(const struct f##_store *s, uint64_t uid, int stage);
#define DB_PREFETCH_NO_PREFETCH(f)
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    struct f##_store;                                                          \
    struct f##_store *f##_create(void);                                        \
    void f##_destroy(struct f##_store *s);                                     \
    size_t f##_entries(const struct f##_store *s);                             \
    size_t f##_bytes(const struct f##_store *s);                               \
    size_t f##_audit(const struct f##_store *s);                               \
    size_t f##_forget_user(struct f##_store *s, uint64_t uid);                 \
    DB_PREFETCH_##prefetch(f)
#include "families.def"
#undef FAMILY
#undef DB_PREFETCH_PREFETCH
#undef DB_PREFETCH_NO_PREFETCH

struct db {
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    struct f##_store *f;
#include "families.def"
#undef FAMILY
    /* uid -> the UTC day it was last active (server/users.h) */
    struct u32map *active;
};

/* A family as families.def describes it. */
#define FAMF_EXPIRABLE 1u /* expire-families may name it */
#define FAMF_PREFETCH 2u  /* has <f>_prefetch_user */
struct family_desc {
    const char *name;  /* "cnt" */
    const char *upper; /* "CNT": its commands are "CNT.*" */
    const char *unit;  /* "user" */
    const char *title; /* "CNT: typed counters" */
    uint16_t lo, hi;   /* its opcode range */
    uint32_t flags;    /* FAMF_* */
};
extern const struct family_desc db_families[FAM_COUNT];

/* The family whose opcode range holds code; FAM_COUNT for the commands
 * of no family (admin, USER, DEBUG, framing). */
static inline unsigned db_family_of_opcode(uint16_t code)
{
    return
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    (code >= (lo) && code <= (hi)) ? FAM_##ID:
#include "families.def"
#undef FAMILY
        FAM_COUNT;
}

/* The family named name[0..len) (case-insensitive); -1 when none. */
int db_family_by_name(const char *name, size_t len);

/* 0, or -1 on allocation failure (nothing allocated). */
int db_init(struct db *db);
/* Safe on a partly initialised db. */
void db_deinit(struct db *db);

/* Memory use of one family (or of the activity table), for INFO and the
 * memory benchmarks. */
struct db_usage {
    const char *family; /* "cnt", "conv", ..., "activity" */
    const char *unit;   /* what an entry is: "user", "membership", ... */
    size_t entries;
    size_t bytes;
};
/* Rows db_usage fills: one per family, then the activity table. */
#define DB_USAGE_ROWS (FAM_COUNT + 1)
/* Fills out[DB_USAGE_ROWS] in families.def order; returns the count. */
unsigned db_usage(const struct db *db, struct db_usage *out);
/* Bytes held by every store. */
size_t db_bytes(const struct db *db);

/* Recomputes every maintained total from its parts and checks every
 * store's invariants; returns the number of mismatches (0 when healthy). */
size_t db_audit(const struct db *db);

/*
 * Erases uid from the families whose bit (1 << FAM_x) is set in mask, and
 * from the activity table. RCPT only anonymizes (rcpt_forget_user). Adds
 * the entries removed in family f to removed[f] (the units of db_usage)
 * and returns their sum. Never fails.
 */
uint64_t db_forget_user(struct db *db, uint64_t uid, uint32_t mask,
                        uint64_t removed[FAM_COUNT]);

/* Starts loading uid's record of family fam into the cache, in two stages
 * (0 a few requests before 1). Nothing for a family without PREFETCH. */
void db_prefetch_user(const struct db *db, unsigned fam, uint64_t uid,
                      int stage);

/* Whether db_prefetch_user does anything for fam. */
static inline bool db_prefetchable(unsigned fam)
{
    return fam < FAM_COUNT && (db_families[fam].flags & FAMF_PREFETCH);
}

#endif
