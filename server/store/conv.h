/*
 * conv.h - CONV, conversation unread with watermarks and a consistent total
 * (docs/COMMANDS.md, "CONV").
 *
 * Per (user, conversation) a main timeline: max, the newest message seq;
 * read, the read watermark (read <= max always); the recalled seqs above
 * read; a muted flag. unread = the seqs in (read, max] that are not
 * recalled, reported saturated at CONV_UNREAD_MAX. Per user: total = the
 * sum of the unread of its unmuted conversations, kept up to date by every
 * mutator in the same call, never recomputed (conv_audit recomputes it to
 * check).
 *
 * The chat features, each held only by the conversations that use them (a
 * conversation without them is stored exactly as before: one 8-byte word):
 *
 *   mentions  seqs of unread messages that mention the user: in (read,
 *             max], not recalled; at most CONV_TAG_MAX kept per timeline
 *             (past it the oldest is forgotten: it still counts as unread,
 *             no longer as a mention). Reads, recalls and mark-all-read
 *             clear them as they clear unread.
 *   sources   per message source (0..CONV_SOURCES-1) the seqs of the
 *             unread messages it sent, kept as mentions are; a message has
 *             one source (the last write naming it wins).
 *   sparse    a conversation whose first write carried CONV_SPARSE takes
 *             arbitrary increasing ids (1..CONV_ID_MAX): a new id above max
 *             counts one, an id at or below max adds nothing. Its SEQs
 *             carry CONV_SPARSE (a dense one's do not); its READ,
 *             MARKUNREAD and RECALL may leave it out. It keeps the
 *             unread ids (those above read) themselves, at most `window`
 *             of them (the caller passes unread-cap): past that the oldest
 *             is dropped and remembered only as `lost` (the newest dropped
 *             id), and unread = kept ids + 1 while lost > read: exact up to
 *             window, window + 1 above it. Recalled ids stop counting;
 *             recalled ids above max are remembered as in a dense one.
 *   threads   per conversation up to CONV_THREAD_MAX threads, each a
 *             timeline of its own (read, max, recalls, mentions; sparse
 *             when the conversation is), numbered by its own seqs. Thread
 *             unread counts in the conversation's unread (and so in the
 *             user's total) unless the conversation is collapsed
 *             (CONV_OP_ROLLUP 0); mentions follow the same rule in the
 *             conversation's count. Each conversation keeps the sums over
 *             its threads (unread, mentions, threads with unread), which
 *             conv_audit recomputes.
 *
 * A conversation whose state is all zero (read = max = 0, not muted, no
 * recall remembered, nothing of the above) is the same as an absent one and
 * holds no memory; a user with no conversation holds none either.
 *
 * Plain data structure: no requests, no sockets.
 */
#ifndef UR_CONV_H
#define UR_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wmap_probe;

#define CONV_UNREAD_MAX UINT32_MAX
/* Recalled seqs remembered per timeline (those above the watermark). */
#define CONV_RECALL_MAX 1024
/* Mentions kept per timeline, and seqs kept per source. */
#define CONV_TAG_MAX 1024
/* Message sources per conversation: 0 .. CONV_SOURCES - 1. */
#define CONV_SOURCES 8
/* Tag lists of a timeline: mentions, then one per source. */
#define CONV_TAG_MENTION 0
#define CONV_TAGS (1 + CONV_SOURCES)
/* Threads per conversation. */
#define CONV_THREAD_MAX 1024
/* The largest sparse id and thread id (RESP integers are signed). */
#define CONV_ID_MAX UINT64_C(9223372036854775807)
/* The largest window of a sparse conversation (unread-cap's maximum). */
#define CONV_WINDOW_MAX 1000000u

/* Result codes besides 0. */
enum {
    CONV_ENOMEM = -1,  /* allocation failed; nothing changed */
    CONV_ELIMIT = -2,  /* a recall past CONV_RECALL_MAX; nothing changed */
    CONV_EINVAL = -3,  /* an argument out of its range (see conv_op) */
    CONV_EMODE = -4,   /* CONV_SPARSE given to a dense conversation, or
                          missing from a SEQ of a sparse one (or an INCR
                          of one); nothing changed */
    CONV_ETHREADS = -5 /* a new thread while CONV_THREAD_MAX threads all
                          have unread; nothing changed */
};

/* The mutations of one conversation; `arg` of conv_update is: */
enum conv_op {
    CONV_OP_INCR,       /* delta: max += delta (saturating at UINT64_MAX) */
    CONV_OP_SEQ,        /* seq: max = max(max, seq) */
    CONV_OP_READ,       /* seq: read = max(read, seq); max rises to read */
    CONV_OP_READ_ALL,   /* ignored: read = max */
    CONV_OP_MARKUNREAD, /* seq >= 1: read = seq - 1; max rises to seq */
    CONV_OP_RECALL,     /* seq: remembered as recalled when above read */
    CONV_OP_MUTE,       /* 0 or 1 */
    CONV_OP_ROLLUP      /* 1 (default): thread unread counts in the
                           conversation's; 0: it does not (collapsed) */
};

/* Options of a request (conv_req.flags). */
#define CONV_MENTION 1u /* SEQ, INCR: the new message(s) mention the user */
#define CONV_SPARSE 2u  /* the seq is a sparse id (every op carrying one) */
#define CONV_THREAD 4u  /* the op applies to thread `tid` (not MUTE, ROLLUP) */
#define CONV_SOURCE                                                            \
    8u /* SEQ, INCR: the message(s) come from `source`                         \
          (main timeline only) */

struct conv_req {
    enum conv_op op;
    uint32_t flags;  /* CONV_MENTION | ... */
    uint64_t arg;    /* as for conv_update */
    uint64_t tid;    /* with CONV_THREAD: 0 .. CONV_ID_MAX */
    uint32_t source; /* with CONV_SOURCE: < CONV_SOURCES */
    uint32_t window; /* sparse ids kept above the watermark, 1 ..
                        CONV_WINDOW_MAX (0: CONV_RECALL_MAX) */
};

struct conv_store;

struct conv_store *conv_create(void);
void conv_destroy(struct conv_store *s);

/*
 * Applies rq to (uid, cid). Returns 0 and sets *unread (the conversation's
 * after, by its roll-up rule; with CONV_THREAD the thread's) and *total
 * (the user's, after), or a CONV_E* code with nothing changed. CONV_EINVAL
 * for MARKUNREAD 0, MUTE or ROLLUP other than 0 and 1 or with a thread,
 * MENTION or SOURCE on an op that writes no message, SOURCE in a thread or
 * >= CONV_SOURCES, SPARSE with INCR, a sparse id or a tid over CONV_ID_MAX,
 * a window over CONV_WINDOW_MAX. See docs/COMMANDS.md (CONV) for what each
 * op does to the watermark, max, the recalled seqs and the tags at the
 * edges.
 */
int conv_apply(struct conv_store *s, uint64_t uid, uint64_t cid,
               const struct conv_req *rq, uint32_t *unread, uint64_t *total);

/* conv_apply without options. */
int conv_update(struct conv_store *s, enum conv_op op, uint64_t uid,
                uint64_t cid, uint64_t arg, uint32_t *unread, uint64_t *total);

/*
 * Marks every conversation of uid read, every thread included (muted ones
 * too): 0 and *total, the user's total after (0); or CONV_ENOMEM with
 * nothing changed (the only allocations, records for watermarks that leave
 * the compact form, are made before anything changes).
 */
int conv_read_all_user(struct conv_store *s, uint64_t uid, uint64_t *total);

/* Forgets (uid, cid); returns the user's total after. Never fails. */
uint64_t conv_del(struct conv_store *s, uint64_t uid, uint64_t cid);

uint32_t conv_get(const struct conv_store *s, uint64_t uid, uint64_t cid);
uint64_t conv_total(const struct conv_store *s, uint64_t uid);

/* What an app shows of one conversation, or of one of its threads. */
struct conv_state {
    uint64_t max, read;
    uint32_t unread;       /* as conv_get (a thread: its own) */
    bool muted;            /* the conversation's */
    uint32_t mentions;     /* by the roll-up rule (a thread: its own) */
    uint64_t first_unread; /* the main timeline's (the thread's) first
                              unread seq, recalled ones skipped; 0 when
                              it has none. Sparse, with more unread than
                              kept: the newest dropped id */
};

/* The state of (uid, cid), or of its thread *tid when tid is not NULL;
 * all zero when unknown. */
void conv_state(const struct conv_store *s, uint64_t uid, uint64_t cid,
                const uint64_t *tid, struct conv_state *st);

/*
 * Per user, by a walk of its conversations (O(conversations)):
 *   mentions  every unread mention, in every conversation and thread,
 *             muted ones included (mute hides unread, not mentions)
 *   chats     unmuted conversations with unread
 *   threads   threads with unread in unmuted conversations
 */
struct conv_user_counts {
    uint64_t mentions, chats, threads;
};
void conv_user_counts(const struct conv_store *s, uint64_t uid,
                      struct conv_user_counts *uc);

/*
 * Calls fn for the user's conversations with unread > 0 (muted ones
 * included) in ascending cid order from the first cid >= from, until fn
 * returns false; sets *n to how many were visited. 0, or CONV_ENOMEM with
 * nothing visited: a user with more than CONV_SMALL_MAX conversations
 * needs a temporary buffer to sort them.
 */
typedef bool (*conv_each_fn)(uint64_t cid, const struct conv_state *st,
                             void *ctx);
int conv_each(const struct conv_store *s, uint64_t uid, uint64_t from,
              conv_each_fn fn, void *ctx, size_t *n);

/* conv_each from the first cid, at most max of them, with the unread
 * only. */
typedef void (*conv_list_fn)(uint64_t cid, uint32_t unread, void *ctx);
int conv_list(const struct conv_store *s, uint64_t uid, size_t max,
              conv_list_fn fn, void *ctx, size_t *n);

/* Calls fn(tid, unread) for the threads of (uid, cid) with unread > 0, by
 * ascending tid; returns how many. */
typedef void (*conv_thread_fn)(uint64_t tid, uint32_t unread, void *ctx);
size_t conv_threads(const struct conv_store *s, uint64_t uid, uint64_t cid,
                    conv_thread_fn fn, void *ctx);

/* The unread messages of (uid, cid) per source (main timeline). */
void conv_sources(const struct conv_store *s, uint64_t uid, uint64_t cid,
                  uint32_t counts[CONV_SOURCES]);

/*
 * Everything held about one timeline. For a conversation: its main
 * timeline, its flags and its thread count (conv_info_thread gives each);
 * for a thread (conv_info_thread, conv_put_thread): muted, collapsed,
 * nthreads and the source lists are unused.
 */
struct conv_info {
    uint64_t read, max;
    uint32_t unread; /* the conversation's by the roll-up rule (a thread:
                        its own); ignored by the loaders */
    bool muted;
    uint32_t nrecall;
    const uint64_t *recall; /* nrecall seqs above read (sparse: above
                               max), ascending */
    bool sparse, collapsed;
    uint64_t lost; /* sparse: the newest dropped id above read */
    uint32_t nids; /* sparse: kept ids above read, ascending */
    const uint64_t *ids;
    uint32_t ntag[CONV_TAGS]; /* mentions, then per source: seqs in (read,
                                 max], ascending */
    const uint64_t *tag[CONV_TAGS];
    uint32_t nthreads;
    const void *priv; /* conv_info_thread's */
};

/* Thread i (< ci->nthreads, by ascending tid) of a conversation ci that
 * conv_scan or conv_user_info visits; valid during the visit. */
void conv_info_thread(const struct conv_info *ci, uint32_t i, uint64_t *tid,
                      struct conv_info *ti);

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
 * (ci->unread and ci->nthreads are ignored); `threads` of its threads
 * follow, one conv_put_thread each, before the next conv_put (a
 * conversation whose main timeline is all zero must have some). 0; 1 when
 * (uid, cid) is already held; CONV_EINVAL for a state no sequence of
 * commands produces (read > max, seqs out of order or out of their
 * ranges, over their bounds, all zero without threads); CONV_ENOMEM.
 * Nothing changes unless 0.
 */
int conv_put(struct conv_store *s, uint64_t uid, uint64_t cid,
             const struct conv_info *ci, uint32_t threads);

/* For loaders: adds thread tid, as ti describes it (in the mode of its
 * conversation, which conv_put stored just before), to (uid, cid). 0; 1
 * when the conversation is not held or already has tid; CONV_EINVAL,
 * CONV_ENOMEM as conv_put. */
int conv_put_thread(struct conv_store *s, uint64_t uid, uint64_t cid,
                    uint64_t tid, const struct conv_info *ti);

/* Starts loading uid's record into the cache, for a command about uid
 * soon after, in the stages of db_prefetch_user: 0 and 1 as wmap_prefetch,
 * or 0, 2 and 3 (wmap_prefetch's deeper form: a caller that issues every
 * stage skips 1). */
void conv_prefetch_user(const struct conv_store *s, uint64_t uid, int stage);

/* conv_prefetch_user and conv_total over one probe (wmap_probe): the
 * stages 0 to 3 in order, then the total of the user the probe found. */
void conv_probe_user(const struct conv_store *s, uint64_t uid, int stage,
                     struct wmap_probe *p);
uint64_t conv_total_probed(const struct wmap_probe *p);

/* (user, conversation) entries held, and users. */
size_t conv_entries(const struct conv_store *s);
size_t conv_users(const struct conv_store *s);
/* Bytes requested: tables, arrays and records (malloc overhead excluded). */
size_t conv_bytes(const struct conv_store *s);

/*
 * Recomputes every user's total from its conversations and every
 * conversation's thread sums from its threads, and checks every invariant
 * (canonical encodings, order, watermark <= max, recalled seqs, sparse ids
 * and tags in their ranges, mentions and each source <= unread, the
 * sources' sum <= unread, counts, byte accounting, the tables' own).
 * Returns the number of violations: 0 when healthy.
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
