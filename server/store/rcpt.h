/*
 * rcpt.h - RCPT, per-message read receipts in group chats (docs/RCPT.md).
 *
 * Per group: a two-way map uid <-> mapid (dense from 0, assigned at the
 * first join, kept on quit and rejoin, never given to another uid) and the
 * set of mapids that have quit. Per message: its sender, the number of
 * mapids that existed when it was sent (later joiners are not recipients)
 * and who has read it. The recipients of a message are the mapids that
 * existed at send, minus those that had quit, minus the sender; a recipient
 * who quits later stays a recipient (and may still mark it read).
 *
 * Messages are keyed by (gid, msgid); msgids may arrive in any order.
 * A message is visible while it is younger than the retention horizon the
 * caller passes (ts >= horizon_ms, ts kept to the second, rounded up);
 * older ones read as absent everywhere and are dropped incrementally by
 * rcpt_expire and rcpt_expire_step (bounded work per call).
 * docs/RCPT.md explains the layout and its memory arithmetic.
 *
 * Plain data structure: no requests, no sockets, no clock (callers pass
 * times in milliseconds since the epoch).
 */
#ifndef UR_RCPT_H
#define UR_RCPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Live messages one group may hold (positions are 24-bit in its index). */
#define RCPT_MAX_MESSAGES ((1u << 24) - 1)
/* The largest mapid count a group may reach (rcpt-max-members' ceiling). */
#define RCPT_MAX_MEMBERS (1u << 24)

/* Results of the calls that can fail. */
enum rcpt_status {
    RCPT_OK = 0,
    RCPT_ENOMEM = -1,   /* allocation failed; nothing changed */
    RCPT_ELIMIT = -2,   /* max_members or RCPT_MAX_MESSAGES reached */
    RCPT_ENOMSG = -3,   /* no visible message with that msgid */
    RCPT_EEXIST = -4,   /* msgid already sent by another sender */
    RCPT_EEXPIRED = -5, /* a send whose ts is already past the horizon */
    RCPT_EANON = -6     /* uid RCPT_UID_ANON, which stands for erased users */
};

struct rcpt_store;

/* An empty store, or NULL on allocation failure. */
struct rcpt_store *rcpt_create(void);
void rcpt_destroy(struct rcpt_store *s);

/*
 * Makes uid a member of gid (creating the group) and sets *mapid. A known
 * uid keeps its mapid (a rejoin clears its quit mark) and never fails for
 * the limit; a new uid gets the next mapid unless the group already has
 * max_members mapids (RCPT_ELIMIT: mapids are never reused, so the limit
 * counts every uid that ever joined). RCPT_OK or RCPT_ENOMEM otherwise.
 */
int rcpt_join(struct rcpt_store *s, uint64_t gid, uint64_t uid,
              uint32_t max_members, uint32_t *mapid);

/* Marks uid as having quit gid. true if it was a member (joined and not
 * quit); never allocates. */
bool rcpt_quit(struct rcpt_store *s, uint64_t gid, uint64_t uid);

/*
 * Tracks message msgid of gid, sent by sender at ts_ms, and sets *nrcpt to
 * its recipient count. Creates the group if needed (a group nobody joined
 * has no recipients). Sending a visible msgid again changes nothing and
 * answers the same count (retries are safe), unless the sender differs
 * (RCPT_EEXIST). RCPT_EEXPIRED when ts_ms < horizon_ms; RCPT_ELIMIT at
 * RCPT_MAX_MESSAGES live messages; RCPT_ENOMEM.
 */
int rcpt_send(struct rcpt_store *s, uint64_t gid, uint64_t msgid,
              uint64_t sender, uint64_t ts_ms, uint64_t horizon_ms,
              uint32_t *nrcpt);

/* Marks msgid read by uid: 1 if newly marked, 0 if uid is not a recipient
 * of a visible msgid or had already read it. O(1); never allocates. */
uint32_t rcpt_read(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                   uint64_t msgid, uint64_t horizon_ms);

/* Marks read by uid every visible message of gid whose msgid <= upto;
 * returns how many were newly marked. O(messages not yet read by
 * everyone); never allocates. */
uint64_t rcpt_read_upto(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                        uint64_t upto, uint64_t horizon_ms);

/* Recipients who have and have not read msgid. RCPT_OK or RCPT_ENOMSG.
 * O(1). */
int rcpt_count(const struct rcpt_store *s, uint64_t gid, uint64_t msgid,
               uint64_t horizon_ms, uint32_t *nread, uint32_t *nunread);

/*
 * Lists the recipients of msgid who have read it (want_read) or not, in
 * mapid order (join order): skips the first `offset`, then calls fn for up
 * to `count` uids and sets *n to how many. RCPT_OK or RCPT_ENOMSG. O(group
 * size / 64 + count).
 */
typedef void (*rcpt_uid_fn)(uint64_t uid, void *ctx);
int rcpt_list(const struct rcpt_store *s, uint64_t gid, uint64_t msgid,
              uint64_t horizon_ms, bool want_read, uint32_t offset,
              uint32_t count, rcpt_uid_fn fn, void *ctx, uint32_t *n);

/*
 * Retention, bounded: rcpt_expire drops up to max messages of gid older
 * than horizon_ms (oldest sent first); rcpt_expire_step does the same for
 * the next few groups of a walk over all groups (so that quiet groups are
 * cleaned too) with max messages in all. Both return the number dropped.
 * A group left with no member and no message is freed.
 */
size_t rcpt_expire(struct rcpt_store *s, uint64_t gid, uint64_t horizon_ms,
                   size_t max);
size_t rcpt_expire_step(struct rcpt_store *s, uint64_t horizon_ms, size_t max);

/*
 * Snapshots (persistence/sec_rcpt.c). rcpt_scan hands out each group as
 * it is: its members in mapid order, then its messages in send order
 * (expired ones awaiting their drop included), each preceded by the quit
 * set it was sent under whenever that differs from the previous
 * message's. The same calls in the same order into an empty store
 * (rcpt_restore_*) rebuild every group message for message: a quit set
 * is shared again by the messages that follow it, messages read by
 * everyone stay without a bitmap, send times and the order retention
 * drops in are kept.
 */

/* Words of a bitmap of n bits. */
#define RCPT_WORDS(n) (((uint32_t)(n) + 63) / 64)
/* A message's sender that was not a member at send. */
#define RCPT_NOSENDER UINT32_MAX

struct rcpt_msg_info {
    uint64_t msgid;
    uint32_t ts;     /* seconds since the epoch (rounded up at send) */
    uint32_t nmemb;  /* mapids < nmemb existed at send */
    uint32_t sender; /* mapid < nmemb, or RCPT_NOSENDER */
    /* NULL when every recipient has read it; else RCPT_WORDS(nmemb) words,
     * bit m set when mapid m has read it or is not a recipient (quit at
     * send, the sender), and every bit past nmemb set. */
    const uint64_t *bits;
};

struct rcpt_walk {
    /* uids[m] is mapid m's uid; bit m of quit[0..RCPT_WORDS(nmap)) is set
     * when it has quit (now). */
    void (*group)(uint64_t gid, uint32_t nmap, const uint64_t *uids,
                  const uint64_t *quit, void *ctx);
    /* The quit set of the messages that follow: nwords words, the last
     * one non-zero. */
    void (*epoch)(uint32_t nwords, const uint64_t *quit, void *ctx);
    void (*msg)(const struct rcpt_msg_info *m, void *ctx);
};

/* Cursor walk over the groups (as u64map_scan: start with *cursor = 0,
 * done when it is 0 again), up to max groups a call, each in full. */
size_t rcpt_scan(const struct rcpt_store *s, uint64_t *cursor, size_t max,
                 const struct rcpt_walk *w, void *ctx);

/*
 * Loading, in walk order. Each call returns RCPT_OK, RCPT_ENOMEM, or with
 * nothing changed: RCPT_EEXIST (gid, uid or msgid already there),
 * RCPT_ELIMIT (RCPT_MAX_MEMBERS or RCPT_MAX_MESSAGES reached; the
 * configured rcpt-max-members does not apply), 1 (no such group, or data
 * that cannot be the group's: see each call).
 *
 * rcpt_restore_group adds gid, empty. rcpt_restore_member gives uid the
 * group's next mapid, marked as having quit or not; uid RCPT_UID_ANON, an
 * erased user's mapid (rcpt_forget_user), is restored as one again (1
 * unless quit). rcpt_restore_epoch
 * sets the quit set of the messages restored next (1: more words than the
 * group's mapids need, a bit past them, or a zero last word).
 * rcpt_restore_msg appends a message (1: nmemb over the group's mapids, a
 * sender not under nmemb, or a bitmap that misses a non-recipient or
 * leaves nobody unread).
 */
int rcpt_restore_group(struct rcpt_store *s, uint64_t gid);
int rcpt_restore_member(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                        bool quit);
int rcpt_restore_epoch(struct rcpt_store *s, uint64_t gid, uint32_t nwords,
                       const uint64_t *quit);
int rcpt_restore_msg(struct rcpt_store *s, uint64_t gid,
                     const struct rcpt_msg_info *m);

/* Messages held (visible or awaiting their drop), and groups. */
size_t rcpt_entries(const struct rcpt_store *s);
size_t rcpt_groups(const struct rcpt_store *s);
/* Bytes held: every record, bitmap, map and index (requested sizes). */
size_t rcpt_bytes(const struct rcpt_store *s);

/*
 * Recomputes every maintained count (read and recipient counts, quit
 * counts, message and byte totals) from the bitmaps and maps, and checks
 * the two-way map and the index. Returns the number of mismatches (0 when
 * healthy). O(everything), for tests and DEBUG AUDIT.
 */
size_t rcpt_audit(const struct rcpt_store *s);

/*
 * Per user (USER.DEL, USER.INFO), O(groups): the store has no per-user
 * index. rcpt_forget_user cuts uid's link to its mapid in every group it
 * joined and returns in how many: the mapid stays taken, so every bitmap
 * stays valid and the user's receipts keep counting, anonymously; it is
 * marked quit (no longer a recipient), its uid reads as RCPT_UID_ANON
 * (RCPT.LIST, rcpt_scan, rcpt_restore_member) and it is in no uid map.
 * A later RCPT.JOIN of uid gets a new mapid. RCPT_UID_ANON itself can
 * therefore never join (rcpt_join: RCPT_EANON). Never fails.
 * rcpt_user_info calls fn for each group uid is in, with its mapid and
 * whether it quit, and returns how many.
 */
#define RCPT_UID_ANON UINT64_MAX
size_t rcpt_forget_user(struct rcpt_store *s, uint64_t uid);
typedef void (*rcpt_user_fn)(uint64_t gid, uint32_t mapid, bool quit,
                             void *ctx);
size_t rcpt_user_info(const struct rcpt_store *s, uint64_t uid, rcpt_user_fn fn,
                      void *ctx);

#endif
