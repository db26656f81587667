/*
 * feed.h - FEED: "N new posts" by followee snapshots (docs/COMMANDS.md,
 * "FEED"). A post count per author; per user, for each followee, a snapshot of
 * that count taken at the last follow or reset:
 *
 *     unread(user) = sum over followees a of max(0, count[a] - snapshot[a])
 *
 * Posting is O(1) whatever the number of followers; reading is O(follows).
 * Counts are u32: posts saturate at FEED_COUNT_MAX, deletions floor at 0.
 * A deletion below a snapshot makes that followee's term 0 (never
 * negative), and the followee's next posts fill the gap before they count.
 */
#ifndef UR_FEED_H
#define UR_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64map;

struct u64map_probe;

#define FEED_INDEX_BITS 31
#define FEED_MAX_AUTHORS (UINT32_C(1) << FEED_INDEX_BITS)
#define FEED_COUNT_MAX UINT32_MAX
/* Follows of one user at most, whatever max_follows says (a list's bound:
 * packmap.h). */
#define FEED_MAX_FOLLOWS (UINT32_C(1) << 26)

enum { FEED_ENOMEM = -1, FEED_EFULL = -2, FEED_ELIMIT = -3 };

struct feed_store;

/* An empty store, or NULL on allocation failure. */
struct feed_store *feed_create(void);
void feed_destroy(struct feed_store *s);

/* Starts loading uid's record into the cache, for a command about uid
 * soon after, in the stages of db_prefetch_user (packmap_prefetch: 0 and 1
 * the slot, 2 the follows when out of line). */
void feed_prefetch_user(const struct feed_store *s, uint64_t uid, int stage);

/* Adds n posts to author (saturating); *count is the count after. 0,
 * FEED_ENOMEM, or FEED_EFULL (a new author beyond FEED_MAX_AUTHORS). */
int feed_post(struct feed_store *s, uint64_t author, uint64_t n,
              uint32_t *count);

/* Cluster copies (server/cluster_copy.c): author's count becomes count
 * (saturated at FEED_COUNT_MAX; an author never seen is created, unless
 * count is 0). 0, FEED_ENOMEM or FEED_EFULL. */
int feed_set_posts(struct feed_store *s, uint64_t author, uint64_t count);

/* author's post count (0 for an author never seen). A read. */
uint32_t feed_posts(const struct feed_store *s, uint64_t author);

/* Removes n posts from author, flooring at 0; the count after (0 for an
 * author never seen, which is not created). */
uint32_t feed_unpost(struct feed_store *s, uint64_t author, uint64_t n);

/*
 * uid follows author from now on: the snapshot is the author's current
 * count, so earlier posts are not unread. 1 when new, 0 when uid already
 * followed author (its snapshot unchanged), FEED_ELIMIT when uid already
 * follows max_follows authors (or FEED_MAX_FOLLOWS), FEED_ENOMEM or
 * FEED_EFULL; nothing changes unless 1 is returned (no follow, and no
 * author created on the way). O(follows) bytes moved.
 */
int feed_follow(struct feed_store *s, uint64_t uid, uint64_t author,
                uint32_t max_follows);

/*
 * feed_follow over authors[0..n) (repeats allowed), all or nothing: the
 * number newly followed (>= 0); FEED_ELIMIT when that would make uid
 * follow more than max_follows (or FEED_MAX_FOLLOWS), FEED_ENOMEM or
 * FEED_EFULL; on an error nothing changed (the authors this call created
 * are taken back). O(n log n + follows): one new list.
 */
int feed_follow_many(struct feed_store *s, uint64_t uid,
                     const uint64_t *authors, uint32_t n, uint32_t max_follows);

/* Whether uid follows author. */
bool feed_follows(const struct feed_store *s, uint64_t uid, uint64_t author);

/* true if uid followed author (and no longer does). Never fails: it
 * allocates nothing. O(follows) bytes moved. */
bool feed_unfollow(struct feed_store *s, uint64_t uid, uint64_t author);

/* uid's unread count, exact up to cap; cap + 1 as soon as the sum passes
 * cap (the rest of the followees are not read). O(follows). */
uint64_t feed_unread(const struct feed_store *s, uint64_t uid, uint64_t cap);

/* feed_prefetch_user and feed_unread over one probe (u64map_probe): the
 * stages 0 to 2 in order, then the unread of the user the probe found. */
void feed_probe_user(const struct feed_store *s, uint64_t uid, int stage,
                     struct u64map_probe *p);
uint64_t feed_unread_probed(const struct feed_store *s,
                            const struct u64map_probe *p, uint64_t cap);

/* Every snapshot of uid := its followee's current count. 0, or
 * FEED_ENOMEM with nothing changed (the new snapshots may need more
 * bytes). O(follows). */
int feed_reset(struct feed_store *s, uint64_t uid);

/* Follow edges, users with at least one, authors known. */
size_t feed_entries(const struct feed_store *s);
size_t feed_users(const struct feed_store *s);
size_t feed_authors(const struct feed_store *s);

/* Bytes held by the store (requested sizes, as u64map counts them). */
size_t feed_bytes(const struct feed_store *s);

/* The map of the follow lists, keyed by uid, for its tags: the user's
 * activity day (days.h), kept in a u16 beside its list (packmap.h). */
struct u64map *feed_user_map(const struct feed_store *s);

/*
 * Walking and loading (snapshots). Authors are numbered 0 ..
 * feed_authors() - 1 in the order they were first named; a user's follows
 * are edges (author number, snapshot).
 */

/* Author number i (< feed_authors): its id and post count. */
void feed_author_at(const struct feed_store *s, uint32_t i, uint64_t *author,
                    uint32_t *count);

/* Whether author is known, with *i its number (feed_author_at). */
bool feed_author_find(const struct feed_store *s, uint64_t author, uint32_t *i);

/* Loading: adds author, absent from the store, as the next number with
 * this post count. 0; 1 when author is known (nothing changed);
 * FEED_ENOMEM or FEED_EFULL. */
int feed_put_author(struct feed_store *s, uint64_t author, uint32_t count);

/* One user's edges being walked, ascending by author number. */
struct feed_edges;

/* The next edge of the walk (call it n times, n as the visit gave). */
void feed_edges_next(struct feed_edges *e, uint32_t *author,
                     uint32_t *snapshot);

/* Cursor walk over the users with follows, as u64map_scan: each visit
 * gives one user's number of edges n and a walk over them (valid during
 * the visit). */
typedef void (*feed_visit_fn)(uint64_t uid, uint32_t n, struct feed_edges *e,
                              void *ctx);
size_t feed_scan(const struct feed_store *s, uint64_t *cursor, size_t max,
                 feed_visit_fn fn, void *ctx);

/* Loading: gives uid, which follows nobody, the edges (authors[i],
 * snapshots[i]) for i < n: 1 <= n <= FEED_MAX_FOLLOWS, author numbers
 * strictly ascending and < feed_authors (the caller validates them);
 * feed-max-follows is not applied. 0; 1 when uid already follows someone
 * (nothing changed); FEED_ENOMEM. */
int feed_put_user(struct feed_store *s, uint64_t uid, uint32_t n,
                  const uint32_t *authors, const uint32_t *snapshots);

/* Structural checks (edges in order and in range, counts, the author
 * index); the number of violations, 0 when healthy. O(edges). */
size_t feed_audit(const struct feed_store *s);

/* Per user (expiry, USER.DEL, USER.INFO). del_user forgets every follow
 * of uid and returns how many; never fails. user_info calls fn for each
 * followee of uid with its post count and uid's snapshot of it, and
 * returns how many. */
size_t feed_forget_user(struct feed_store *s, uint64_t uid);
typedef void (*feed_user_fn)(uint64_t author, uint32_t count, uint32_t snapshot,
                             void *ctx);
uint32_t feed_user_info(const struct feed_store *s, uint64_t uid,
                        feed_user_fn fn, void *ctx);

#endif
