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
 * Who has read what is kept as a read watermark per member (it has read
 * every message sent before it), plus, per message, only what a watermark
 * cannot say: the members who read it out of order. docs/RCPT.md has the
 * layout and its arithmetic.
 *
 * Messages are keyed by (gid, msgid); msgids may arrive in any order.
 * A message is visible while it is younger than the retention horizon the
 * caller passes (ts >= horizon_ms, ts kept to the second, rounded up);
 * older ones read as absent everywhere and are dropped incrementally by
 * rcpt_expire and rcpt_expire_step (bounded work per call).
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

/*
 * Marks msgids[0..n) read by uid (RCPT.READ) and sets *newly to how many
 * were newly marked: msgids of no visible message, and those uid is not a
 * recipient of or had read already, count nothing. RCPT_OK, or
 * RCPT_ENOMEM with nothing marked (a read out of order may need room).
 * O(n), each in order or out of it.
 */
int rcpt_mark_read(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                   const uint64_t *msgids, size_t n, uint64_t horizon_ms,
                   uint64_t *newly);

/*
 * Marks read by uid every visible message of gid whose msgid <= upto
 * (RCPT.READUPTO) and sets *newly to how many were newly marked. RCPT_OK,
 * or RCPT_ENOMEM with nothing marked. O(log messages) to place the
 * watermark, plus the work of freeing what it passes: one step per 128
 * messages passed, per out-of-order read freed, and per message passed in
 * a chunk of 128 holding a message whose sender had not read everything;
 * plus one step per message sent after it with a smaller msgid than one
 * before it ("late" msgids, which a watermark cannot cover).
 */
int rcpt_mark_upto(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                   uint64_t upto, uint64_t horizon_ms, uint64_t *newly);

/* rcpt_mark_read of one msgid and rcpt_mark_upto, answering the count
 * (0 as well on RCPT_ENOMEM: nothing marked). For tests and tools. */
uint32_t rcpt_read(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                   uint64_t msgid, uint64_t horizon_ms);
uint64_t rcpt_read_upto(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                        uint64_t upto, uint64_t horizon_ms);

/* Recipients who have and have not read msgid. RCPT_OK or RCPT_ENOMSG.
 * O(log members): the members still below it are counted from the sorted
 * watermarks, the out-of-order readers from its bitmap when it has one. */
int rcpt_count(const struct rcpt_store *s, uint64_t gid, uint64_t msgid,
               uint64_t horizon_ms, uint32_t *nread, uint32_t *nunread);

/*
 * Lists the recipients of msgid who have read it (want_read) or not, in
 * mapid order (join order): skips the first `offset`, then calls fn for up
 * to `count` uids and sets *n to how many. RCPT_OK or RCPT_ENOMSG.
 * O(mapids below the message's member count).
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
 * it is: its members in mapid order, its messages in send order (expired
 * ones awaiting their drop included), each preceded by the quit set it was
 * sent under whenever that differs from the previous message's, then its
 * read marks. Positions count the group's messages in that order: 0 is the
 * first message handed out, the message count is "after the last one".
 * The same calls in the same order into an empty store (rcpt_restore_*)
 * rebuild every group message for message: a quit set is shared again by
 * the messages that follow it, send times and the order retention drops
 * in are kept, and so are the watermarks and out-of-order reads.
 */

/* Words of a bitmap of n bits, and bytes of an out-of-order bitmap. */
#define RCPT_WORDS(n) (((uint32_t)(n) + 63) / 64)
#define RCPT_BYTES(n) (((uint32_t)(n) + 7) / 8)
/* A message's sender that was not a member at send. */
#define RCPT_NOSENDER UINT32_MAX
/* A member's marks: no open gap; parked (quit when it had read
 * everything, so it is pending nowhere). */
#define RCPT_NOPOS UINT32_MAX
#define RCPT_PARKED UINT32_MAX

struct rcpt_msg_info {
    uint64_t msgid;
    uint32_t ts;     /* seconds since the epoch (rounded up at send) */
    uint32_t nmemb;  /* mapids < nmemb existed at send */
    uint32_t sender; /* mapid < nmemb, or RCPT_NOSENDER */
    /* The sender, a live member, sent it while its watermark was below
     * (it had not read everything): done with it all the same. */
    bool sender_done;
    /* NULL, or RCPT_BYTES(nmemb) bytes: bit m (byte m / 8, bit m % 8) set
     * when recipient m read the message while its watermark was at or
     * below it; at least one bit set. */
    const uint8_t *reads;
};

/* A range of positions [from, to) where a member is not a recipient
 * although its watermark is below it: it had quit, or sent them. */
struct rcpt_gap {
    uint32_t mapid, from, to;
};

/*
 * A member's marks: w, its watermark (it has read, or is not a recipient
 * of, every message at a position below w), or RCPT_PARKED for a member
 * that quit when it had read everything; qfrom, for a member that quit
 * before it had (not parked), the position from which it is not a
 * recipient, else RCPT_NOPOS. Gaps come sorted by mapid, then position,
 * at or above their member's w and below its qfrom, apart from each other.
 */
struct rcpt_walk {
    void (*group)(uint64_t gid, uint32_t nmap, void *ctx);
    /* nmap times, in mapid order; quit: it has quit (now) */
    void (*member)(uint64_t uid, bool quit, void *ctx);
    /* The quit set of the messages that follow: nwords words, the last
     * one non-zero. */
    void (*epoch)(uint32_t nwords, const uint64_t *quit, void *ctx);
    void (*msg)(const struct rcpt_msg_info *m, void *ctx);
    /* After the messages: the number of gaps, then nmap times mark() in
     * mapid order, then the gaps. */
    void (*marks)(uint32_t ngaps, void *ctx);
    void (*mark)(uint32_t w, uint32_t qfrom, void *ctx);
    void (*gap)(const struct rcpt_gap *gap, void *ctx);
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
 * rcpt_restore_group adds gid, empty, waiting for its marks.
 * rcpt_restore_member gives uid the group's next mapid, marked as having
 * quit or not; uid RCPT_UID_ANON, an erased user's mapid
 * (rcpt_forget_user), is restored as one again (1 unless quit).
 * rcpt_restore_epoch sets the quit set of the messages restored next (1:
 * more words than the group's mapids need, a bit past them, or a zero
 * last word). rcpt_restore_msg appends a message (1: nmemb over the
 * group's mapids, a sender not under nmemb, out-of-order reads by a
 * non-recipient or by nobody, sender_done for a sender that was not a
 * live member, or the group's marks already set).
 * rcpt_restore_marks sets every member's marks (w[m], qfrom[m], as
 * struct rcpt_walk says, positions counted from the group's first
 * restored message) and its gaps, and makes the group whole: 1 when any
 * of them is out of range or out of order, or would count a message for a
 * member who is not its recipient, or an out-of-order read for a member
 * whose watermark says it read the message already. Until its marks are
 * set a group must not be used otherwise.
 */
int rcpt_restore_group(struct rcpt_store *s, uint64_t gid);
int rcpt_restore_member(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                        bool quit);
int rcpt_restore_epoch(struct rcpt_store *s, uint64_t gid, uint32_t nwords,
                       const uint64_t *quit);
int rcpt_restore_msg(struct rcpt_store *s, uint64_t gid,
                     const struct rcpt_msg_info *m);
int rcpt_restore_marks(struct rcpt_store *s, uint64_t gid, uint32_t nmap,
                       const uint32_t *w, const uint32_t *qfrom, uint32_t ngaps,
                       const struct rcpt_gap *gaps);

/* One group: rcpt_scan's walk of gid alone (persistence/userrec.c, a
 * move of the group to another shard); false when gid holds nothing
 * rcpt_scan would hand out. */
bool rcpt_walk_group(const struct rcpt_store *s, uint64_t gid,
                     const struct rcpt_walk *w, void *ctx);

/* Whether gid holds anything rcpt_scan would hand out. */
bool rcpt_group_held(const struct rcpt_store *s, uint64_t gid);

/* Drops group gid whole, its messages and members (the group moved to
 * another shard: not an erasure of its users). true when it was held. */
bool rcpt_drop_group(struct rcpt_store *s, uint64_t gid);

/* Messages held (visible or awaiting their drop), and groups. */
size_t rcpt_entries(const struct rcpt_store *s);
size_t rcpt_groups(const struct rcpt_store *s);
/* Bytes held: every record, bitmap, map and index (requested sizes). */
size_t rcpt_bytes(const struct rcpt_store *s);

/*
 * Recomputes and checks everything the counts derive from: the sorted
 * watermarks against the members' marks, each member's marks against the
 * messages it is not a recipient of (quit sets, its own messages, joins),
 * each out-of-order read against its reader's marks, the recipient counts
 * against the quit sets, every count of a small group member by member,
 * the two-way map, the index, the byte total. Returns the number of
 * mismatches (0 when healthy). O(everything), for tests and DEBUG AUDIT.
 */
size_t rcpt_audit(const struct rcpt_store *s);

/*
 * Per user (USER.DEL, USER.INFO), O(groups): the store has no per-user
 * index. rcpt_forget_user cuts uid's link to its mapid in every group it
 * joined and returns in how many: the mapid stays taken, so the user's
 * receipts keep counting, anonymously; it is marked quit (no longer a
 * recipient), its uid reads as RCPT_UID_ANON (RCPT.LIST, rcpt_scan,
 * rcpt_restore_member) and it is in no uid map. A later RCPT.JOIN of uid
 * gets a new mapid. RCPT_UID_ANON itself can therefore never join
 * (rcpt_join: RCPT_EANON). Never fails. rcpt_user_info calls fn for each
 * group uid is in, with its mapid and whether it quit, and returns how
 * many.
 */
#define RCPT_UID_ANON UINT64_MAX
size_t rcpt_forget_user(struct rcpt_store *s, uint64_t uid);
typedef void (*rcpt_user_fn)(uint64_t gid, uint32_t mapid, bool quit,
                             void *ctx);
size_t rcpt_user_info(const struct rcpt_store *s, uint64_t uid, rcpt_user_fn fn,
                      void *ctx);

#endif
