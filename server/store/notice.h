/*
 * notice.h - notices read once (docs/COMMANDS.md, "Notices read once"):
 * for each (user, counter type), the ids of the last notices counted with
 * CNT.INCR ... ID, each with its delta and whether it was read, so that a
 * retried or repeated increment or acknowledgement applies once. The CNT
 * store owns one set (cnt.h); the counters themselves stay in the CNT
 * store.
 *
 * Bounded: at most NOTICE_MAX ids per (user, type). Adding one to a full
 * type forgets the type's oldest read id, or when every one is unread its
 * oldest unread id (which stays counted: only CNT.CLEAR, SET or DECR take
 * it off the counter, and acknowledging it later changes nothing) - except
 * that an id acknowledged before it was counted is not remembered then:
 * it would push out an unread one.
 *
 * Memory: a user with no notice costs nothing here (the CNT map is not
 * touched). A user with some costs one u64map slot (~20 bytes) and one
 * record of 8 bytes plus 16 bytes per remembered notice, every type in
 * one record, oldest first.
 *
 * Plain data structure: no requests, no sockets.
 */
#ifndef UR_NOTICE_H
#define UR_NOTICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NOTICE_MAX 64   /* ids remembered per (user, type) */
#define NOTICE_TYPES 64 /* types 0..63, as CNT's */

/* What a set knows of one notice id. */
enum notice_state {
    NOTICE_UNKNOWN = 0, /* not remembered */
    NOTICE_UNREAD = 1,  /* counted, not acknowledged */
    NOTICE_READ = 2     /* acknowledged (or settled, or acked first) */
};

struct notice {
    uint64_t nid;
    uint32_t delta; /* what it added to the counter */
    uint8_t type;
    uint8_t read; /* 0 or 1 */
    uint16_t zero;
};

struct notice_set;
struct mem_acct;

/* An empty set whose struct and memory are charged to owner (mem.h), or
 * NULL on allocation failure. */
struct notice_set *notice_create(struct mem_acct *owner);
void notice_destroy(struct notice_set *s);

/* The state of (uid, type, nid); *delta = its delta when remembered. */
enum notice_state notice_get(const struct notice_set *s, uint64_t uid,
                             unsigned type, uint64_t nid, uint32_t *delta);

/*
 * Remembers nid, which (uid, type) does not hold, as the type's newest,
 * unread with delta or read (read = true). A full type first forgets one
 * (see above; a read one is dropped instead when only unread ones could
 * go). 0, or -1 on allocation failure (nothing changed).
 */
int notice_add(struct notice_set *s, uint64_t uid, unsigned type, uint64_t nid,
               uint32_t delta, bool read);

/* Marks (uid, type, nid), held unread, as read. Never fails. */
void notice_mark_read(struct notice_set *s, uint64_t uid, unsigned type,
                      uint64_t nid);

/* Marks every unread notice of uid whose type's bit is set in mask read
 * (CNT.CLEAR, CNT.SET). Never fails. */
void notice_settle(struct notice_set *s, uint64_t uid, uint64_t mask);

/* Forgets every notice of uid; returns how many. Never fails. */
size_t notice_forget_user(struct notice_set *s, uint64_t uid);

/* Notices remembered, users holding one, bytes held (requested sizes). */
size_t notice_entries(const struct notice_set *s);
size_t notice_users(const struct notice_set *s);
size_t notice_bytes(const struct notice_set *s);

/* Calls fn with uid's notices, oldest first; returns how many. */
typedef void (*notice_fn)(const struct notice *n, void *ctx);
uint32_t notice_user(const struct notice_set *s, uint64_t uid, notice_fn fn,
                     void *ctx);

/* Cursor walk over the users (as u64map_scan): each visit gives one
 * user's n notices, oldest first. */
typedef void (*notice_visit_fn)(uint64_t uid, uint32_t n,
                                const struct notice *v, void *ctx);
size_t notice_scan(const struct notice_set *s, uint64_t *cursor, size_t max,
                   notice_visit_fn fn, void *ctx);

/*
 * Loading: gives uid, which holds no notice, v[0..n) oldest first. 0; 1
 * when the data is not a set's (n == 0, a type >= NOTICE_TYPES, read not
 * 0 or 1, a nonzero pad, an id twice in one type, more than NOTICE_MAX in
 * one type, or uid already holding notices): nothing changed; -1 on
 * allocation failure.
 */
int notice_put_user(struct notice_set *s, uint64_t uid, uint32_t n,
                    const struct notice *v);

/* Every invariant (no empty record, types in range, ids unique and at
 * most NOTICE_MAX per type, entry and byte counts, the map's own); the
 * number of violations, 0 when healthy. O(notices * notices of a user). */
size_t notice_audit(const struct notice_set *s);

#endif
