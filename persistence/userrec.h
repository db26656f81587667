/*
 * userrec.h - the user record: one id's whole state as one checksummed
 * record (docs/PERSISTENCE.md "User record", byte by byte), what DUMP
 * answers, RESTORE applies and MIGRATE carries to another shard.
 *
 * A Redis Cluster key is just an id, and the id names two things here:
 * user <id> (its state in CNT, CONV, GRP, BC, DOT and FEED, its notices,
 * its activity day and its expiry record) and RCPT group <id> (keyed by
 * gid). A record carries both. Global objects (BC channel heads, GRP
 * group heads, DOT push times, FEED author counts) are not in it: every
 * primary holds them (server/cluster_copy.h); a membership travels as the
 * position the user has seen (not as its unread), so it reads the same
 * against the target's copy of the head.
 *
 * Restoring parses and checks the whole record first (every part loaded
 * into scratch stores, every global object it names looked up), and only
 * then changes the db: a record is applied whole or not at all.
 */
#ifndef UR_USERREC_H
#define UR_USERREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"

#define USERREC_MAGIC "URUR" /* 4 bytes */
#define USERREC_VERSION 1
#define USERREC_HDR 20     /* magic, version, parts, flags, id, body len */
#define USERREC_PART_HDR 5 /* kind, len */
#define USERREC_TRAILER 8  /* XXH3-64 of every byte before it */

/* Parts, in this order in a record, each at most once. */
enum userrec_part {
    UREC_CNT = 1,      /* sec_cnt.c's records of the user */
    UREC_CONV = 2,     /* sec_conv.c's */
    UREC_GRP = 3,      /* memberships: gid, head there, seen, mute, mentions */
    UREC_BC = 4,       /* subscriptions: channel, head there, seen */
    UREC_DOT = 5,      /* clicks: dot, click time */
    UREC_FEED = 6,     /* follows: author, snapshot */
    UREC_RCPT = 7,     /* group <id>: sec_rcpt.c's format item and group */
    UREC_ACTIVITY = 8, /* u32 the UTC day of its last activity */
    UREC_NOTICE = 9,   /* sec_notice.c's records of the user */
    UREC_EXPIRY = 10,  /* u64 ms, u32 families, u32 pending */
    UREC_PARTS = 10
};

enum userrec_rc {
    USERREC_OK = 0,
    USERREC_CORRUPT, /* not a record, cut, checksum, bad or impossible data */
    USERREC_BUSY,    /* the id holds state here and replace was not given */
    USERREC_MISSING, /* a group or channel it names is behind here */
    USERREC_NOMEM    /* nothing applied (REPLACE: the old state put back,
                        or, when memory fails again, the id left empty) */
};

/* Whether id holds anything a record would carry. */
bool userrec_exists(const struct db *db, uint64_t id);

/*
 * The record of id: 0 with *out (valid until the next dump) and *len; 1
 * when id holds nothing (no record); -1 on allocation failure.
 */
int userrec_dump(const struct db *db, uint64_t id, const char **out,
                 size_t *len);

/*
 * Checks the record p[0..n) (of id) whole, then gives id its state: when
 * id holds state already, USERREC_BUSY unless replace (then the old state
 * goes first; put back if the new one cannot be applied for memory). err
 * gets a message for anything but USERREC_OK. p must not be a dump's
 * buffer (userrec_dump's *out): copy it first.
 */
enum userrec_rc userrec_restore(struct db *db, uint64_t id, const char *p,
                                size_t n, bool replace, char *err,
                                size_t errlen);

/* Only checks p[0..n) as userrec_restore does, changing nothing in db:
 * USERREC_OK or USERREC_CORRUPT (the fuzzer's entry). *id = its id. */
enum userrec_rc userrec_check(const struct db *db, const char *p, size_t n,
                              uint64_t *id, char *err, size_t errlen);

/*
 * Erases what a record of id carries (the user moved away): user id from
 * every family but RCPT (its receipts belong to the groups, keyed by
 * theirs), its notices, activity and expiry record, and RCPT group id
 * whole. Returns the entries removed. Never fails.
 */
uint64_t userrec_delete(struct db *db, uint64_t id);

/* DEBUG DIGEST-VALUE: 40 lower-case hex digits (and a NUL) in hex, the
 * digest of id's record, or 40 zeros when id holds nothing. 0, or -1 on
 * allocation failure. Two servers holding the same state give the same
 * digest, except for a user with more than 128 conversations (whose
 * order in the record is the store's). */
#define USERREC_DIGEST 40
int userrec_digest(const struct db *db, uint64_t id,
                   char hex[USERREC_DIGEST + 1]);

/* Frees the scratch stores and the dump buffer (tests, shutdown). */
void userrec_teardown(void);

#endif
