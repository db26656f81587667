/*
 * dot.h - DOT: red dots (docs/COMMANDS.md, "DOT"). A global push time per dot,
 * a last click time per (user, dot); a dot shows for a user when it was pushed
 * and the user's last click is older than the push.
 *
 * Both times only move forward (each is the max of every time recorded), so
 * a stale or replayed push never hides a dot a user has not seen, and a
 * stale click never brings back one the user dismissed.
 *
 * Times are milliseconds, at most DOT_TS_MAX (the year 6429): that is what
 * lets a click be stored with its dot's index in 8 bytes. At most
 * DOT_MAX_DOTS distinct dot ids (pushed or clicked) per store.
 */
#ifndef UR_DOT_H
#define UR_DOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DOT_TS_BITS 47
#define DOT_TS_MAX ((UINT64_C(1) << DOT_TS_BITS) - 1)
#define DOT_INDEX_BITS 16
#define DOT_MAX_DOTS (UINT32_C(1) << DOT_INDEX_BITS)

enum { DOT_ENOMEM = -1, DOT_EFULL = -2, DOT_ERANGE = -3 };

struct dot_store;

/* An empty store, or NULL on allocation failure. */
struct dot_store *dot_create(void);
void dot_destroy(struct dot_store *s);

/* Starts loading uid's record into the cache, for a command about uid
 * soon after, in the stages of db_prefetch_user (0 and 1 the map entry, as
 * u32map_prefetch; 2 the clicks, which looks the entry up). */
void dot_prefetch_user(const struct dot_store *s, uint64_t uid, int stage);

/*
 * Records a push of dot at ts (<= DOT_TS_MAX): the dot's push time becomes
 * the later of its old one and ts, and is stored in *push. 0, DOT_ENOMEM,
 * DOT_EFULL (a new dot beyond DOT_MAX_DOTS) or DOT_ERANGE (ts too large);
 * no push is recorded on error.
 */
int dot_push(struct dot_store *s, uint64_t dot, uint64_t ts, uint64_t *push);

/*
 * Records that uid clicked dot at ts (<= DOT_TS_MAX): the click time becomes
 * the later of its old one and ts. A dot never pushed gets its index here
 * too, so that a later push with an older ts still compares right. 0,
 * DOT_ENOMEM, DOT_EFULL or DOT_ERANGE; nothing changes on error (no click,
 * and no dot created on the way).
 */
int dot_click(struct dot_store *s, uint64_t uid, uint64_t dot, uint64_t ts);

/* Whether dot shows for uid: pushed, and never clicked or last clicked
 * before the push time. */
bool dot_shown(const struct dot_store *s, uint64_t uid, uint64_t dot);

/*
 * dot_shown for a user that also counts as having clicked every dot at
 * floor (ms; 0: no floor): the time of its expiry, so that a dot it
 * dismissed before its clicks were forgotten stays dismissed - every dot
 * pushed at or before floor reads as clicked.
 */
bool dot_shown_after(const struct dot_store *s, uint64_t uid, uint64_t dot,
                     uint64_t floor);

/* How many of the dots uid clicked show again (pushed after its click and
 * after floor, as dot_shown_after). O(dots of the user). */
uint32_t dot_user_shown(const struct dot_store *s, uint64_t uid,
                        uint64_t floor);

/* (user, dot) click entries held, users holding one, distinct dots. */
size_t dot_entries(const struct dot_store *s);
size_t dot_users(const struct dot_store *s);
size_t dot_dots(const struct dot_store *s);

/* Bytes held by the store (requested sizes, mem.h: the map, the dot
 * index, every chunk of click records whether in use or free, the
 * out-of-line records). */
size_t dot_bytes(const struct dot_store *s);

/*
 * Walking and loading (snapshots). Dots are numbered 0 .. dot_dots() - 1 in
 * the order they were first named; a user's clicks are 8-byte values that
 * name a dot by its number, built and read with dot_click_*.
 */
#define DOT_NEVER UINT64_MAX /* the push time of a dot never pushed */

/* dot's push time, or DOT_NEVER when it was never pushed. */
uint64_t dot_push_time(const struct dot_store *s, uint64_t dot);

/* Dot number i (< dot_dots): its id and push time (or DOT_NEVER). */
void dot_dot_at(const struct dot_store *s, uint32_t i, uint64_t *dot,
                uint64_t *push);

/* Whether dot is known, with *i its number (dot_dot_at). */
bool dot_find(const struct dot_store *s, uint64_t dot, uint32_t *i);

/* Loading: adds dot, absent from the store, as the next number, with push
 * time push (DOT_NEVER or <= DOT_TS_MAX). 0; 1 when dot is known (nothing
 * changed); DOT_ENOMEM, DOT_EFULL or DOT_ERANGE. */
int dot_put_dot(struct dot_store *s, uint64_t dot, uint64_t push);

/* A click of dot number i (< DOT_MAX_DOTS) at ts (<= DOT_TS_MAX), and the
 * two halves of one: [dot number: 16 | ts: 47 | 1]. */
static inline uint64_t dot_click_make(uint32_t i, uint64_t ts)
{
    return (uint64_t)i << (64 - DOT_INDEX_BITS) | ts << 1 | 1;
}

static inline uint32_t dot_click_dot(uint64_t click)
{
    return (uint32_t)(click >> (64 - DOT_INDEX_BITS));
}

static inline uint64_t dot_click_ts(uint64_t click)
{
    return (click >> 1) & DOT_TS_MAX;
}

/* Cursor walk over the users with clicks, as u64map_scan: each visit
 * gives one user's n clicks, ascending by dot number. */
typedef void (*dot_visit_fn)(uint64_t uid, uint32_t n, const uint64_t *clicks,
                             void *ctx);
size_t dot_scan(const struct dot_store *s, uint64_t *cursor, size_t max,
                dot_visit_fn fn, void *ctx);

/* Loading: gives uid, which has no clicks, clicks[0..n): n >= 1, dot
 * numbers strictly ascending and < dot_dots (the caller validates them).
 * 0; 1 when uid already has clicks (nothing changed); DOT_ENOMEM. */
int dot_put_user(struct dot_store *s, uint64_t uid, uint32_t n,
                 const uint64_t *clicks);

/* Structural checks (entries in order and in range, counts, the dot
 * index, the click records: every handle names a record in use of the
 * class its count fits, one user a record, the free lists, the bytes
 * held); the number of violations, 0 when healthy. O(entries). */
size_t dot_audit(const struct dot_store *s);

/* Per user (expiry, USER.DEL, USER.INFO). del_user forgets every click of
 * uid and returns how many; never fails. user_info calls fn for each dot
 * uid clicked, with the click time, the dot's push time (DOT_NEVER when
 * never pushed) and whether it shows, and returns how many. */
size_t dot_forget_user(struct dot_store *s, uint64_t uid);

/*
 * Activity days (server/users.h), as BC's (bc.h): a user with clicks may
 * keep the UTC day of its last activity in the u16 tag of its map entry
 * (0: none kept here), so that tracking it costs nothing beyond the entry
 * (a byte of tag in most buckets, u32map.h) instead of an entry of the
 * activity table. A new user has none; forgetting the user forgets it.
 *
 * dot_user_day: false when uid has no clicks, else true with *day (0:
 * none). One lookup. dot_set_user_day gives uid the day (0: none): 1; 0
 * when uid has no clicks; -1 on allocation failure (its map bucket rebuilt
 * with 2-byte tags could not be allocated; nothing changed). Day 0, and
 * the day the user has, never fail.
 */
bool dot_user_day(const struct dot_store *s, uint64_t uid, uint16_t *day);
int dot_set_user_day(struct dot_store *s, uint64_t uid, uint16_t day);
/* Users with a day kept here. O(1). */
size_t dot_tracked_users(const struct dot_store *s);
/* Cursor walk (as u32map_scan: *cursor 0 to start, 0 again when done) over
 * the users with a day kept here: looks at up to max users, calls fn for
 * those with a day, returns how many it looked at. */
typedef void (*dot_day_fn)(uint64_t uid, uint16_t day, void *ctx);
size_t dot_scan_days(const struct dot_store *s, uint64_t *cursor, size_t max,
                     dot_day_fn fn, void *ctx);
typedef void (*dot_user_fn)(uint64_t dot, uint64_t click, uint64_t push,
                            bool shown, void *ctx);
uint32_t dot_user_info(const struct dot_store *s, uint64_t uid, dot_user_fn fn,
                       void *ctx);

#endif
