/*
 * grp.h - GRP, group unread by read diffusion (docs/COMMANDS.md, "GRP").
 *
 * A group keeps its head (the seq of its newest message: seqs are assigned
 * here, dense from 1) and the timestamps of its last `window` messages; a
 * member keeps only the seq it has seen. A member's unread is head - seen.
 * Posting touches the group alone, whatever the number of members.
 *
 * The window serves GRP.SEEN with a timestamp ("seen up to the last
 * message posted at or before ts"). A ts older than the window means more
 * than window - 1 unread: the member is placed just before the window, so
 * with window = unread-cap + 1 every capped reply stays exact. Timestamps
 * never go backwards inside a group: a post older than the group's newest
 * message is recorded at the newest message's time, which keeps the window
 * sorted. A group takes the window it is given at its next post; growing
 * it keeps the timestamps it had, so until window more messages are
 * posted, a ts older than those reads as "just before the kept ones".
 * The window's memory follows the messages actually kept (4 slots at the
 * first post, doubled when full, up to window): a quiet group of a dozen
 * messages costs 64 bytes of timestamps, not 4 x window.
 *
 * Widths: a member's seen is kept as its low 32 bits and unread computed
 * modulo 2^32, exact while a member is fewer than 2^32 messages behind in
 * one group (heads themselves are 64-bit). Window timestamps are kept as
 * 32-bit offsets from a per-group base: when the kept messages span more
 * than 2^32 ms (49.7 days) the oldest are recorded at the base, so a
 * GRP.SEEN ts older than that base counts them as unread.
 *
 * Chat features, held only where used:
 *   mute      a membership flag: a muted group leaves grp_total (its
 *             unread still reads in grp_unread and the lists);
 *   recalls   per group the recalled seqs, at most GRP_RECALL_MAX (past
 *             that the oldest is forgotten and counts again for members
 *             still behind it): a member's unread is head - seen minus the
 *             recalled seqs above seen;
 *   mentions  per membership the seqs of unread posts that mention the
 *             member (a post names them), at most GRP_MENTION_MAX (past
 *             that the oldest is forgotten); mentions = those above seen
 *             and not recalled, so reads and recalls clear them as they
 *             clear unread. Kept as 8 bytes each (group index, low 32 bits
 *             of the seq) in a per-user list.
 *
 * Plain data structure: no requests, no sockets. Counts returned here are
 * exact (within the widths above); capping for display is the caller's.
 */
#ifndef UR_GRP_H
#define UR_GRP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64map;

struct u64map_probe;

/*
 * Results of the calls that can fail. GRP_ENOMEM: an allocation failed and
 * nothing changed (no seq, membership or count, and no group created on
 * the way).
 */
#define GRP_OK 0
#define GRP_ENOMEM (-1)
#define GRP_ELIMIT (-2) /* the user is already in max_groups groups */
#define GRP_EINVAL                                                             \
    (-3) /* no such message (seq 0 or above the head), or                      \
            one more than 2^32 - 1 behind the head */

/* Recalled seqs remembered per group; mentions kept per membership. */
#define GRP_RECALL_MAX 1024
#define GRP_MENTION_MAX 1024

struct grp_store;

struct grp_store *grp_create(void);
void grp_destroy(struct grp_store *s);

/*
 * Appends a message posted at ts to gid (created when new); *seq = its
 * seq. window (1..GRP_WINDOW_MAX) is how many timestamps the group keeps
 * from now on.
 * GRP_OK or GRP_ENOMEM.
 */
int grp_post(struct grp_store *s, uint64_t gid, uint64_t ts, uint32_t window,
             uint64_t *seq);

/* grp_post whose message mentions the users uids[0..n): those that are
 * members of gid get it in their mentions (the others are ignored). *seq,
 * and GRP_OK or GRP_ENOMEM with nothing changed. */
int grp_post_mention(struct grp_store *s, uint64_t gid, uint64_t ts,
                     uint32_t window, const uint64_t *uids, size_t n,
                     uint64_t *seq);

/*
 * Cluster copies (server/cluster_copy.c): the group's owner posted message
 * seq at ts mentioning uids[0..n). Nothing changes when the group is at
 * seq already (a copy late or twice: 0); else its head moves to seq (1),
 * messages between the old head and seq, whose copies were lost, taking
 * ts as their time. GRP_ENOMEM.
 */
int grp_copy_post(struct grp_store *s, uint64_t gid, uint64_t seq, uint64_t ts,
                  uint32_t window, const uint64_t *uids, size_t n);

/*
 * Cluster copies, a whole group as its owner holds it (a full sync): its
 * head and kept timestamps ts[0..known) (oldest first) when that head is
 * ahead of this one's (a head never moves back), and its recalled seqs
 * rec[0..nrec), added to the ones held. 0, 1 when the data is not that
 * of a group (as grp_restore_group), GRP_ENOMEM.
 */
int grp_copy_group(struct grp_store *s, uint64_t gid, uint64_t head,
                   uint32_t window, uint32_t known, const uint64_t *ts,
                   uint32_t nrec, const uint64_t *rec);

/*
 * Post seq of gid was recalled: it stops counting for every member who has
 * not seen it. 1 when newly recalled, 0 when it already was; GRP_EINVAL
 * for no such message (unknown group, seq 0 or above the head); GRP_ENOMEM.
 */
int grp_recall(struct grp_store *s, uint64_t gid, uint64_t seq);

/* Mutes (muted) or unmutes uid's membership of gid: GRP_OK, or 1 when uid
 * is not a member (nothing stored). */
int grp_mute(struct grp_store *s, uint64_t uid, uint64_t gid, bool muted);

/*
 * Makes post seq (1..head) of gid the first unread for uid: seen = seq - 1,
 * back or forward; a non-member joins there. *unread after. GRP_OK,
 * GRP_ENOMEM, GRP_ELIMIT (max_groups), GRP_EINVAL (no such post, or more
 * than 2^32 - 1 behind the head).
 */
int grp_markunread(struct grp_store *s, uint64_t uid, uint64_t gid,
                   uint64_t seq, uint32_t max_groups, uint64_t *unread);

/* Marks every group of uid seen at its head (muted ones too). GRP_OK, or
 * GRP_ENOMEM with nothing changed (a seen wider than the user's record
 * holds: grp.c, "members"). */
int grp_seen_all(struct grp_store *s, uint64_t uid);

/* What an app shows of one membership; all zero for a non-member. */
struct grp_state {
    uint64_t head, seen, unread;
    bool muted;
    uint64_t mentions;
    uint64_t first_unread; /* seen + 1, recalled ones skipped; 0: none */
    uint64_t recency;      /* the group's newest post time, 0: none */
};
void grp_state(const struct grp_store *s, uint64_t uid, uint64_t gid,
               struct grp_state *st);

/* uid's unread mentions over all its groups, muted ones included. */
uint64_t grp_mentions(const struct grp_store *s, uint64_t uid);

/*
 * Makes uid a member of gid at the head (past messages are not unread); a
 * member stays where it is. *unread = uid's unread in gid after. GRP_OK,
 * GRP_ENOMEM, or GRP_ELIMIT when joining would put uid in more than
 * max_groups groups.
 */
int grp_join(struct grp_store *s, uint64_t uid, uint64_t gid,
             uint32_t max_groups, uint64_t *unread);

/*
 * grp_join over gids[0..n) (repeats allowed), all or nothing: GRP_ELIMIT
 * when the new memberships would put uid in more than max_groups groups,
 * GRP_ENOMEM; either way nothing changed (the groups this call created are
 * taken back). *unread = uid's unread summed over the
 * distinct groups given, after, stopping once past limit as grp_total.
 */
int grp_join_many(struct grp_store *s, uint64_t uid, const uint64_t *gids,
                  uint32_t n, uint32_t max_groups, uint64_t limit,
                  uint64_t *unread);

/* Whether uid is a member of gid. */
bool grp_member(const struct grp_store *s, uint64_t uid, uint64_t gid);

/* Removes uid from gid; true if it was a member. Never fails. */
bool grp_leave(struct grp_store *s, uint64_t uid, uint64_t gid);

/*
 * Marks gid seen by uid up to the last message posted at or before ts
 * (UINT64_MAX: the head). Monotonic: a member's seen never moves back. A
 * non-member joins at that position (so messages after ts are unread).
 * *unread = uid's unread in gid after. Results as grp_join.
 */
int grp_seen(struct grp_store *s, uint64_t uid, uint64_t gid, uint64_t ts,
             uint32_t max_groups, uint64_t *unread);

/* gid's head: the seq of its newest post (0 for a group never posted to).
 * A read: creates nothing. */
uint64_t grp_head(const struct grp_store *s, uint64_t gid);

/* uid's unread in gid; 0 when not a member. */
uint64_t grp_unread(const struct grp_store *s, uint64_t uid, uint64_t gid);

/* Starts loading uid's record into the cache, for a command about uid
 * soon after, in the stages of db_prefetch_user: 0 to 2 the memberships
 * (memblist_prefetch), 3 the heads of the first groups. */
void grp_prefetch_user(const struct grp_store *s, uint64_t uid, int stage);

/* The sum of uid's unread over its unmuted groups, stopping as soon as it
 * exceeds limit: the result is exact when <= limit, else some value >
 * limit. */
uint64_t grp_total(const struct grp_store *s, uint64_t uid, uint64_t limit);

/* grp_prefetch_user and grp_total over one probe (u64map_probe): the
 * stages 0 to 3 in order, then the total of the user the probe found. */
void grp_probe_user(const struct grp_store *s, uint64_t uid, int stage,
                    struct u64map_probe *p);
uint64_t grp_total_probed(const struct grp_store *s,
                          const struct u64map_probe *p, uint64_t limit);

/* The number of uid's unmuted groups with unread (all of them visited). */
uint32_t grp_chats(const struct grp_store *s, uint64_t uid);

/* Number of groups uid is in. */
uint32_t grp_groups(const struct grp_store *s, uint64_t uid);

struct grp_item {
    uint64_t gid;
    struct grp_state st;
};

/* Fills out[] (room for grp_groups(uid) items) with uid's groups that have
 * unread messages (muted ones included), by ascending gid; returns how
 * many. */
uint32_t grp_list(const struct grp_store *s, uint64_t uid,
                  struct grp_item *out);

/*
 * Snapshots. Groups are numbered 0 .. grp_group_count() - 1 in the order
 * they were first used, and memberships name their group by that number;
 * a store rebuilt by restoring groups in number order gives them the same
 * numbers back. Memberships travel as unread counts, which hide the
 * widths kept inside.
 */
struct grp_group_info {
    uint64_t gid;
    uint64_t head;
    uint32_t window;  /* timestamps kept at most; 0 before the first post */
    uint32_t known;   /* timestamps kept now: of seqs head - known + 1 .. */
    uint32_t nrecall; /* recalled seqs, ascending, <= head */
    const uint64_t *recall;
};

/* The largest window: unread-cap's maximum plus one. */
#define GRP_WINDOW_MAX 1000001u

uint32_t grp_group_count(const struct grp_store *s);
/* Group number i (< grp_group_count). */
void grp_group_info(const struct grp_store *s, uint32_t i,
                    struct grp_group_info *gi);
/* The timestamp of group i's k-th kept message (k < known), oldest first;
 * non-decreasing in k. */
uint64_t grp_group_ts(const struct grp_store *s, uint32_t i, uint32_t k);

/* One membership as the snapshot keeps it: the unread (which hides the
 * widths kept inside), the mute flag and the mentioned seqs above seen,
 * ascending (mentions of recalled posts included: they count again when
 * the recall is forgotten). */
struct grp_member_info {
    uint64_t unread; /* head - seen, recalls not subtracted */
    bool muted;
    uint32_t nment;
    const uint64_t *ment;
};

/* Cursor walk over the users (as u64map_scan: start with *cursor = 0,
 * done when it is 0 again), up to max users a call: fn once per
 * membership, a user's memberships in a row. */
typedef void (*grp_member_fn)(uint64_t uid, uint32_t group,
                              const struct grp_member_info *mi, void *ctx);
size_t grp_scan_members(const struct grp_store *s, uint64_t *cursor, size_t max,
                        grp_member_fn fn, void *ctx);

/*
 * Loading: adds group gid as number grp_group_count(), with its head and
 * the kept timestamps ts[0..known) (oldest first). 0; 1 when the data is
 * not that of a group (gid already present, known > window or > head,
 * window over GRP_WINDOW_MAX, timestamps going back): nothing changed;
 * GRP_ENOMEM.
 */
int grp_restore_group(struct grp_store *s, uint64_t gid, uint64_t head,
                      uint32_t window, uint32_t known, const uint64_t *ts);

/* Loading: the recalled seqs of the group just restored (ascending, 1..head,
 * at most GRP_RECALL_MAX). 0; 1 when they are not; GRP_ENOMEM. */
int grp_restore_recalls(struct grp_store *s, uint64_t gid, uint32_t n,
                        const uint64_t *seqs);

/* Loading: uid is a member of group number `group` as mi says (the limit
 * of max groups does not apply). 0; 1 when no such group, unread over its
 * head or 2^32 - 1, mentions not ascending within (seen, head] or over
 * GRP_MENTION_MAX, or already a member: nothing changed; GRP_ENOMEM. */
int grp_restore_member(struct grp_store *s, uint64_t uid, uint32_t group,
                       const struct grp_member_info *mi);

/* One user's memberships as grp_scan_members visits them (a move of the
 * user to another shard, persistence/userrec.c); returns how many. */
uint32_t grp_user_members(const struct grp_store *s, uint64_t uid,
                          grp_member_fn fn, void *ctx);

/* Whether group gid is held, with *i its number (grp_group_info). */
bool grp_group_find(const struct grp_store *s, uint64_t gid, uint32_t *i);

/* Memberships held. (Mentions are not entries: they live in the
 * memberships' bytes.) */
size_t grp_entries(const struct grp_store *s);
/* Users with at least one membership. */
size_t grp_users(const struct grp_store *s);
/* Bytes held: tables, groups, windows, membership records (requested
 * sizes). */
size_t grp_bytes(const struct grp_store *s);

/* The map of the members' lists, keyed by uid, for its tags: the user's
 * activity day (days.h), kept in a u16 beside its list (memblist.h). */
struct u64map *grp_user_map(const struct grp_store *s);

/*
 * Checks every invariant: membership records canonical and sorted, seen
 * never ahead of the head, windows sorted and consistent with heads, the
 * gid <-> index tables in agreement, membership and byte counts equal to a
 * recount, and the tables' own structure. Returns the number of
 * violations, 0 when healthy. O(memberships + groups * window).
 */
size_t grp_audit(const struct grp_store *s);

/* Per user (expiry, USER.DEL, USER.INFO). del_user removes uid from every
 * group and returns how many it left; never fails. user_info calls fn
 * for each membership of uid (in group number order) and returns how
 * many. */
size_t grp_forget_user(struct grp_store *s, uint64_t uid);
typedef void (*grp_user_fn)(uint64_t gid, const struct grp_state *st,
                            void *ctx);
uint32_t grp_user_info(const struct grp_store *s, uint64_t uid, grp_user_fn fn,
                       void *ctx);

#endif
