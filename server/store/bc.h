/*
 * bc.h - BC, broadcast channels (docs/COMMANDS.md, "BC").
 *
 * A channel is a head (the number of messages published to it) and, per
 * user, an offset: the head when the user last read. unread = head -
 * offset. Publishing bumps the head and touches nothing else, so it costs
 * the same with ten users or a hundred million.
 *
 * A user with no offset in a channel (never seen, or expired) is
 * registered at the head when it first asks, and so reads 0: a broadcast
 * is for the users present when it is sent, and a new user is not flooded
 * with the history. Channels come into existence on first use by any call.
 *
 * Width: offsets are kept as their low 32 bits and unread is computed
 * modulo 2^32, so it is exact while a user is fewer than 2^32 (4.29
 * billion) messages behind in a channel; further behind it would wrap.
 * That is what buys 12-byte entries (a tagged u32map: a 7-byte key, the
 * offset and the user's activity day in a byte of its bucket's window of
 * days, "Activity days" below): broadcast channels publish
 * system notices, not billions of messages, and expiry forgets users long
 * inactive.
 *
 * Plain data structure: no requests, no sockets.
 */
#ifndef UR_BC_H
#define UR_BC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bc_store;

struct bc_store *bc_create(void);
void bc_destroy(struct bc_store *s);

/* Publishes one message to ch; *head = the new head. 0, or -1 on
 * allocation failure (nothing changed). */
int bc_publish(struct bc_store *s, uint64_t ch, uint64_t *head);

/*
 * uid's unread in ch (head - offset). A user with no offset is registered
 * at the head first (*registered = true; the caller must treat the read as
 * a write) and reads 0. 0, or -1 on allocation failure (nothing changed: no
 * offset, and no channel created on the way).
 */
int bc_unread(struct bc_store *s, uint64_t uid, uint64_t ch, uint64_t *unread,
              bool *registered);

/* uid's unread in ch without registering it (a replica's read, which may
 * change nothing): head - offset, or 0 for a user with no offset, which
 * bc_unread would register at the head. */
uint64_t bc_peek_unread(const struct bc_store *s, uint64_t uid, uint64_t ch);

/* Marks everything in ch read by uid (offset = head), registering the user
 * when new. 0, or -1 on allocation failure (nothing changed, as
 * bc_unread). */
int bc_read(struct bc_store *s, uint64_t uid, uint64_t ch);

/*
 * Marks ch's messages 1..upto read by uid (messages are numbered by the
 * head their publish made): offset = min(upto, head) when that is ahead
 * of the user's offset, else nothing changes (never back). A user with no
 * offset is registered at the head first, so it reads 0 whatever upto.
 * *unread = uid's unread in ch after. 0, or -1 on allocation failure (no
 * offset changed).
 */
int bc_read_upto(struct bc_store *s, uint64_t uid, uint64_t ch, uint64_t upto,
                 uint64_t *unread);

/* Cluster copies (server/cluster_copy.c): ch's head becomes head when that
 * is ahead of it (created when new); a head never moves back, so a copy
 * that arrives late or twice changes nothing. 0, or -1 on allocation
 * failure (nothing changed). */
int bc_raise_head(struct bc_store *s, uint64_t ch, uint64_t head);

/* ch's head: the messages published to it (0 for a channel never used).
 * A read: creates nothing. */
uint64_t bc_head(const struct bc_store *s, uint64_t ch);

/* uid's unread in ch when it has an offset there (true), else false,
 * registering no one (unlike bc_unread). */
bool bc_peek(const struct bc_store *s, uint64_t uid, uint64_t ch,
             uint64_t *unread);

/* The sum of uid's unread over the channels it has an offset in, without
 * registering it anywhere; once the sum passes limit, some value above
 * limit. O(channels). Its lookups miss the cache one after another unless
 * bc_prefetch_user asked for them first. */
uint64_t bc_user_unread(const struct bc_store *s, uint64_t uid, uint64_t limit);

/* Starts loading uid's offsets in every channel into the cache (as
 * db_prefetch_user's stages: 0 the buckets' headers, 1 where the lookups
 * land; others nothing), for bc_user_unread soon after. O(channels): for
 * reads over all of a user's channels, not for one channel's command. */
void bc_prefetch_user(const struct bc_store *s, uint64_t uid, int stage);

/*
 * Snapshots: walks over the channels and over one channel's users (as
 * u64map_scan: start with *cursor = 0, done when it is 0 again). A user's
 * offset travels as its unread count, which hides the width kept inside.
 */
typedef void (*bc_chan_fn)(uint64_t ch, uint64_t head, size_t users, void *ctx);
size_t bc_scan_channels(const struct bc_store *s, uint64_t *cursor, size_t max,
                        bc_chan_fn fn, void *ctx);
typedef void (*bc_user_fn)(uint64_t uid, uint64_t unread, void *ctx);
/* Walks channel ch's users; 0 with *cursor = 0 when there is no such
 * channel. */
size_t bc_scan_users(const struct bc_store *s, uint64_t ch, uint64_t *cursor,
                     size_t max, bc_user_fn fn, void *ctx);

/* Loading: adds channel ch with its head. 0; 1 when ch is already present
 * (nothing changed); -1 on allocation failure. */
int bc_restore_channel(struct bc_store *s, uint64_t ch, uint64_t head);
/* Loading: uid reads `unread` in channel ch. 0; 1 when there is no such
 * channel, unread is over its head or 2^32 - 1, or uid is already there
 * (nothing changed); -1 on allocation failure. */
int bc_restore_user(struct bc_store *s, uint64_t ch, uint64_t uid,
                    uint64_t unread);

/* (user, channel) offsets held. */
size_t bc_entries(const struct bc_store *s);
/* Bytes held: channel table, channels, offset tables (requested sizes). */
size_t bc_bytes(const struct bc_store *s);

/* Checks that no offset is ahead of its channel's head, that the entry and
 * byte counts match the tables, and every table's structure. Returns the
 * number of violations, 0 when healthy. O(entries). */
size_t bc_audit(const struct bc_store *s);

/* Per user (expiry, USER.DEL, USER.INFO), O(channels): the store has no
 * per-user index (see bc.c). del_user forgets uid's offset in every
 * channel and returns how many it had: the user then reads as new. Never
 * fails. user_info calls fn for each channel uid has an offset in, with
 * the head and uid's unread, and returns how many. */
size_t bc_forget_user(struct bc_store *s, uint64_t uid);
/*
 * Activity days (server/users.h): a user registered in some channel keeps
 * the UTC day of its last activity in its entries, a u16 tag beside each
 * offset (all of a user's entries hold the same day; 0: none kept here),
 * so that tracking it costs a byte a subscription (2 in a bucket of the
 * channel's table whose users' days span more than 255 days: u32map.c)
 * instead of an entry of its own in the activity table.
 *
 * bc_user_day: false when uid is in no channel, else true with *day (0:
 * no day kept). Right after a bc_unread/bc_read/bc_read_upto of uid it
 * needs no lookup (the store remembers the entry it touched); for a user
 * in no channel, mostly one bit of a filter of the users (~0.5 byte a
 * user; ~1 in 4 answer "maybe"); else O(channels). bc_set_user_day gives every
 * entry of uid the day (0: none): 1; 0 when uid is in no channel; -1 on
 * allocation failure (a bucket rebuilt with 2-byte days could not be
 * allocated; nothing changed). Day 0, and the day the user has, never
 * fail. A new entry of a user takes the day its other entries have.
 */
bool bc_user_day(const struct bc_store *s, uint64_t uid, uint16_t *day);
int bc_set_user_day(struct bc_store *s, uint64_t uid, uint16_t day);
/* Users with a day kept here. O(1). */
size_t bc_tracked_users(const struct bc_store *s);

/* Walk over the users with a day kept here, each once, in steps of about
 * max entries looked at (start with a zeroed cursor; done is true when the
 * walk ended). Changes between steps never make it miss a user present
 * for the whole walk. The callback must not change the store. */
struct bc_day_cursor {
    uint64_t chan, user; /* the channel map's and that channel's cursor */
    bool done;
};
typedef void (*bc_day_fn)(uint64_t uid, uint16_t day, void *ctx);
size_t bc_scan_days(const struct bc_store *s, struct bc_day_cursor *cur,
                    size_t max, bc_day_fn fn, void *ctx);

typedef void (*bc_user_info_fn)(uint64_t ch, uint64_t head, uint64_t unread,
                                void *ctx);
size_t bc_user_info(const struct bc_store *s, uint64_t uid, bc_user_info_fn fn,
                    void *ctx);

#endif
