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
    /* uid -> the UTC day it was last active (server/users.h), for the
     * users whose day no family keeps in its entries (days.h) */
    struct u32map *active;
    /* uid -> its last expiry: when, and the families it forgot (the
     * db_expiry_* calls below) */
    struct u64map *expired;
    /* Users whose expiry record still has family f pending (not rebuilt
     * by a write since): a write of f looks the user up only when
     * expired_pending[f] is not 0 (server/users.c). */
    uint64_t expired_pending[FAM_COUNT];
};

_Static_assert(FAM_COUNT <= 8, "an expiry record holds 8 family bits");

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

/*
 * Activity (server/users.h): a tracked user's day is kept in one place,
 * the entries of a family that keeps days (days.h: DOT's, GRP's and FEED's
 * map entries, BC's entries) or else the activity table. db_active_day: whether
 * uid is tracked, with *day. db_active_users: the users tracked. A day in a
 * family's entries is a u16: db_day_tag is the day kept for day (1..65535,
 * the year 2149).
 */
bool db_active_day(const struct db *db, uint64_t uid, uint32_t *day);
size_t db_active_users(const struct db *db);
static inline uint16_t db_day_tag(uint32_t day)
{
    return day == 0 ? 1 : day > UINT16_MAX ? UINT16_MAX : (uint16_t)day;
}

/* Memory use of one family (or of the activity table), for INFO and the
 * memory benchmarks. */
struct db_usage {
    const char *family; /* "cnt", "conv", ..., "activity" */
    const char *unit;   /* what an entry is: "user", "membership", ... */
    size_t entries;
    size_t bytes;
};
/* Rows db_usage fills: one per family, then the activity table and the
 * expiry records. */
#define DB_USAGE_ROWS (FAM_COUNT + 2)
/* Fills out[DB_USAGE_ROWS] in families.def order; returns the count. */
unsigned db_usage(const struct db *db, struct db_usage *out);
/* Bytes held by every store. */
size_t db_bytes(const struct db *db);
/* Family fam's entries (db_usage's, O(1)): 0 when no user holds anything
 * in it, every user's badge part then being 0. */
size_t db_entries(const struct db *db, unsigned fam);

/* Recomputes every maintained total from its parts and checks every
 * store's invariants; returns the number of mismatches (0 when healthy). */
size_t db_audit(const struct db *db);

/*
 * Erases uid from the families whose bit (1 << FAM_x) is set in mask, and
 * from the activity table. RCPT only anonymizes (rcpt_forget_user). Adds
 * the entries removed in family f to removed[f] (the units of db_usage)
 * and returns their sum. Never fails. The expiry record stays: an expiry
 * adds to it (db_expiry_note), USER.DEL drops it (db_expiry_forget).
 */
uint64_t db_forget_user(struct db *db, uint64_t uid, uint32_t mask,
                        uint64_t removed[FAM_COUNT]);

/*
 * Expiry records (docs/OPERATIONS.md, "Users and expiry"): what the server
 * remembers of a user it expired, one u64map entry (~20 bytes) a user, so
 * that expiry never fails silently. families: the families its expiries
 * forgot (DOT reads every dot pushed up to ms as clicked when it is one);
 * pending: those of them no write of the user has rebuilt since (reads
 * with WITHEXPIRY and USER.STATUS say so). ms is the latest expiry.
 */
struct db_expiry {
    uint64_t ms;       /* when it last expired (< 2^48) */
    uint32_t families; /* 1 << FAM_x */
    uint32_t pending;  /* a subset of families */
};

/* Whether uid has a record; *e = it. */
bool db_expiry_get(const struct db *db, uint64_t uid, struct db_expiry *e);

/* When uid expired from family fam if fam is still pending for it, else
 * 0. One lookup, skipped when no user has fam pending. */
uint64_t db_expiry_pending(const struct db *db, uint64_t uid, unsigned fam);

/* ms when uid's expiries forgot family fam, else 0: the time up to which
 * its reads of fam treat everything as seen (DOT). No lookup while there
 * is no record. */
uint64_t db_expiry_floor(const struct db *db, uint64_t uid, unsigned fam);

/* uid expires at ms from the families in mask: they join its record's
 * families and pending ones, ms becomes the record's time. 0, or -1 on
 * allocation failure (nothing changed). */
int db_expiry_note(struct db *db, uint64_t uid, uint64_t ms, uint32_t mask);

/* A write of uid in family fam rebuilt it: fam is no longer pending. The
 * record itself stays (DOT's reads depend on its time) until USER.DEL. */
void db_expiry_rebuilt(struct db *db, uint64_t uid, unsigned fam);

/* Drops uid's record (USER.DEL: the user reads as new). true if it had
 * one. */
bool db_expiry_forget(struct db *db, uint64_t uid);

/* Loading: gives uid, which has no record, e (pending within families,
 * families non-empty, ms < 2^48: the caller checks). 0; 1 when uid has
 * one (nothing changed); -1 on allocation failure. */
int db_expiry_put(struct db *db, uint64_t uid, const struct db_expiry *e);

/* Walk over the records, as u64map_scan. */
typedef void (*db_expiry_fn)(uint64_t uid, const struct db_expiry *e,
                             void *ctx);
size_t db_expiry_scan(const struct db *db, uint64_t *cursor, size_t max,
                      db_expiry_fn fn, void *ctx);

#define DB_EXPIRY_MS_MAX ((UINT64_C(1) << 48) - 1)

/*
 * Starts loading uid's record of family fam into the cache, in stages,
 * each reading what the one before loaded, so issued a little after it:
 * 0 the map's segment header, 1 uid's slot, 2 what the slot points to
 * (the record out of line), 3 what the record points to (GRP: the groups'
 * heads). server/net.c's lookahead issues stages 0 and 1 (a family's
 * stages 0 and 1 are worth having alone); USER.MBADGE all of them, a few
 * users apart. Nothing for a family without PREFETCH.
 */
#define DB_PREFETCH_STAGES 4
void db_prefetch_user(const struct db *db, unsigned fam, uint64_t uid,
                      int stage);

/* Whether db_prefetch_user does anything for fam. */
static inline bool db_prefetchable(unsigned fam)
{
    return fam < FAM_COUNT && (db_families[fam].flags & FAMF_PREFETCH);
}

#endif
