/*
 * conv.h - CONV, conversation unread with watermarks and a consistent total
 * (docs/COMMANDS.md, "CONV").
 *
 * Per (user, conversation): max, the newest message seq; read, the read
 * watermark (read <= max always); a muted flag; and the recalled seqs above
 * read. unread = the seqs in (read, max] that are not recalled, reported
 * saturated at CONV_UNREAD_MAX. Per user: total = the sum of the unread of
 * its unmuted conversations, kept up to date by every mutator in the same
 * call, never recomputed (conv_audit recomputes it to check).
 *
 * A conversation whose state is all zero (read = max = 0, not muted, no
 * recall remembered) is the same as an absent one and holds no memory; a
 * user with no conversation holds none either.
 *
 * Plain data structure: no requests, no sockets.
 */
#ifndef UR_CONV_H
#define UR_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONV_UNREAD_MAX UINT32_MAX
/* Recalled seqs remembered per conversation (those above the watermark). */
#define CONV_RECALL_MAX 1024

/* Result codes besides 0. */
enum {
    CONV_ENOMEM = -1, /* allocation failed; nothing changed */
    CONV_ELIMIT = -2, /* a recall past CONV_RECALL_MAX; nothing changed */
    CONV_EINVAL = -3  /* an argument out of its range (see conv_op) */
};

/* The mutations of one conversation; `arg` of conv_update is: */
enum conv_op {
    CONV_OP_INCR,       /* delta: max += delta (saturating at UINT64_MAX) */
    CONV_OP_SEQ,        /* seq: max = max(max, seq) */
    CONV_OP_READ,       /* seq: read = max(read, seq); max rises to read */
    CONV_OP_READ_ALL,   /* ignored: read = max */
    CONV_OP_MARKUNREAD, /* seq >= 1: read = seq - 1; max rises to seq */
    CONV_OP_RECALL,     /* seq: remembered as recalled when above read */
    CONV_OP_MUTE        /* 0 or 1 */
};

struct conv_store;

struct conv_store *conv_create(void);
void conv_destroy(struct conv_store *s);

/*
 * Applies op to (uid, cid). Returns 0 and sets *unread (the conversation's,
 * after) and *total (the user's, after), or a CONV_E* code with nothing
 * changed. See docs/COMMANDS.md (CONV) for what each op does to the
 * watermark, max and the recalled seqs at the edges.
 */
int conv_update(struct conv_store *s, enum conv_op op, uint64_t uid,
                uint64_t cid, uint64_t arg, uint32_t *unread, uint64_t *total);

/* Forgets (uid, cid); returns the user's total after. Never fails. */
uint64_t conv_del(struct conv_store *s, uint64_t uid, uint64_t cid);

uint32_t conv_get(const struct conv_store *s, uint64_t uid, uint64_t cid);
uint64_t conv_total(const struct conv_store *s, uint64_t uid);

/*
 * Calls fn for the user's conversations with unread > 0 (muted ones
 * included) in ascending cid order, at most max of them, and sets *n to how
 * many. 0, or CONV_ENOMEM with nothing visited: a user with more than
 * CONV_SMALL_MAX conversations needs a temporary buffer to sort them.
 */
typedef void (*conv_list_fn)(uint64_t cid, uint32_t unread, void *ctx);
int conv_list(const struct conv_store *s, uint64_t uid, size_t max,
              conv_list_fn fn, void *ctx, size_t *n);

/* Everything held about one conversation. */
struct conv_info {
    uint64_t read, max;
    uint32_t unread;
    bool muted;
    uint32_t nrecall;
    const uint64_t *recall; /* nrecall seqs above read, ascending */
};

/*
 * Walk for snapshots, audits and expiry, with wmap_scan's cursor contract
 * (max counts users): fn is called once per conversation of each visited
 * user; ascending cid within a user, except for users with more than
 * CONV_SMALL_MAX conversations (in no particular order).
 */
typedef void (*conv_visit_fn)(uint64_t uid, uint64_t cid,
                              const struct conv_info *ci, void *ctx);
size_t conv_scan(const struct conv_store *s, uint64_t *cursor, size_t max,
                 conv_visit_fn fn, void *ctx);

/*
 * For loaders (snapshots): stores (uid, cid) exactly as ci describes it
 * (ci->unread is ignored). 0; 1 when (uid, cid) is already held; CONV_EINVAL
 * for a state no sequence of commands produces (read > max, recalled seqs
 * not strictly ascending above read or more than CONV_RECALL_MAX, all
 * zero); CONV_ENOMEM. Nothing changes unless 0.
 */
int conv_put(struct conv_store *s, uint64_t uid, uint64_t cid,
             const struct conv_info *ci);

/* Starts loading uid's record into the cache, for a command about uid
 * soon after: a hint in two stages (wmap_prefetch), for server/net.c's
 * lookahead and USER.MBADGE. */
void conv_prefetch_user(const struct conv_store *s, uint64_t uid, int stage);

/* (user, conversation) entries held, and users. */
size_t conv_entries(const struct conv_store *s);
size_t conv_users(const struct conv_store *s);
/* Bytes requested: tables, arrays and records (malloc overhead excluded). */
size_t conv_bytes(const struct conv_store *s);

/*
 * Recomputes every user's total from its conversations and checks every
 * invariant (canonical encodings, order, watermark <= max, recalled seqs
 * above the watermark, counts, byte accounting, the tables' own). Returns
 * the number of violations: 0 when healthy.
 */
size_t conv_audit(const struct conv_store *s);

/* Users with up to this many conversations keep them in one sorted array;
 * beyond it, in a hash map of their own (hysteresis: back to an array
 * below half of it). */
#define CONV_SMALL_MAX 128

/* Per user (expiry, USER.DEL, USER.INFO). del_user forgets every
 * conversation of uid and returns how many; never fails. user_info calls
 * fn for each of uid's conversations (as conv_scan's visits) and returns
 * how many. */
size_t conv_forget_user(struct conv_store *s, uint64_t uid);
size_t conv_user_info(const struct conv_store *s, uint64_t uid,
                      conv_visit_fn fn, void *ctx);

#endif
