/*
 * rcpt.c - read receipts by watermark: per member the position up to which
 * it has read, per message a 16-byte record; only what a watermark cannot
 * say takes more.
 *
 * Group (struct rgroup):
 *   members  per mapid its uid, watermark and open gap start (three
 *            dense arrays: a list reads the watermarks alone), a flag
 *            byte, the live quit set, and a uid -> mapid index (open
 *            addressing, one u32 per slot: 8-bit hash tag, 24-bit mapid,
 *            checked against the uids);
 *   records  struct rmsg in send order, numbered by a 32-bit seq
 *            (wrapping), in chunks of CHUNK records (the first chunk of a
 *            small group starts at CHUNK_MIN and doubles); retention drops
 *            from the front, so chunks are freed whole. Each chunk has a
 *            descriptor in a ring: its records, the bitmaps of its
 *            out-of-order reads (struct rxb), the largest msgid sent up to
 *            its end, its oldest ts and its dead records;
 *   index    msgid -> seq: open addressing, linear probing, one u32 per
 *            slot (8-bit hash tag, 24-bit seq), load 0.57..0.85. Growing
 *            or shrinking allocates the new table and copies the entries
 *            MIGRATE_STEP records per index change (lookups try the new
 *            table, then the old one, which is freed whole once every
 *            entry is copied), so no call pays for a whole rebuild;
 *   epochs   the quit sets messages were sent under, shared: a new
 *            snapshot is taken by the first send after the quit set
 *            changed, found by binary search on first seqs (as before);
 *   steps    (first seq, member count, quit count) each time either
 *            changed between two sends: a message's recipient count is
 *            nmemb - nquit - (1 if its sender was a live member).
 *
 * Read marks. Member m has a watermark w: m has read, or is not a
 * recipient of, every record below w ("done"). Where m is not a recipient
 * although w is below (it quit, or sent the message, while it had not read
 * everything), m has a gap [from, to), or an open gap [qfrom, inf) while it
 * is quit; a member that quits having read everything is parked (done for
 * everything until it rejoins at the then next seq). So m is "pending" at
 * record q when it is not parked, w <= q and q is in none of its gaps, and
 * every pending member is a recipient. A recipient that reads a record out
 * of order (w still below it) sets its bit in the record's bitmap of
 * out-of-order reads (a slot of the chunk's struct rxb), cleared again when
 * its watermark passes the record. Then
 *
 *   unread(q) = pending(q) - out-of-order reads of q,
 *   pending(q) = |P <= q| - |N <= q| - |O <= q|,
 *
 * where P, N and O are sorted arrays of positions: P the watermarks of the
 * members not parked and the ends of closed gaps, N the starts of closed
 * gaps, O the starts of open gaps. COUNT is three binary searches (usually
 * one: N and O are mostly empty); READUPTO moves one watermark.
 *
 * Positions compare by their distance from the front (rel(): clamped at 0,
 * so that positions of dropped records all count as "before everything"),
 * which keeps the sorted arrays sorted while the front moves; every
 * CLAMP_EVERY records dropped, positions below the front are rewritten to
 * it, so that no distance ever wraps.
 *
 * Record (struct rmsg): msgid, ts (seconds, rounded up), meta: sender
 * mapid + 1 (0: not a member at send), M_SLIVE (the sender was a live
 * member: not a recipient, out of the count), M_SDONE (that sender had
 * not read everything before it: it is done with its own message although
 * its watermark is below it, so a count subtracts it while it is pending
 * there, and READUPTO finds those through the chunks' counts of them),
 * M_DEAD (replaced: its msgid was sent again after it expired; it waits
 * for the front), M_LATE (its msgid is below one sent before it: READUPTO
 * finds those through the group's list of late seqs, since a watermark
 * cannot cover them).
 */
#include "rcpt.h"

#include "db.h"
#include "hash.h"
#include "mem.h"
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_SHIFT 7
#define CHUNK (1u << CHUNK_SHIFT) /* records in a full chunk */
#define CHUNK_MIN 8u              /* a new group's first chunk */
#define SEQ_BITS 24
#define SEQ_MASK ((1u << SEQ_BITS) - 1)
#define NOMAP UINT32_MAX
#define NONE UINT32_MAX
#define IDX_MIN 8u
/* Records whose index entries one index change moves to a new table. */
#define MIGRATE_STEP 32u
/* Groups visited by one rcpt_expire_step. */
#define STEP_GROUPS 4
/* Expired records of its own group a send drops first: more than the one
 * it adds, so a busy group never lags behind its retention. */
#define SEND_EXPIRE 4
/* Records a watermark may be moved over, one by one, by one call: what a
 * member has done past its watermark (read out of order, not received)
 * is folded into it a bounded amount at a time. */
#define NORM_STEPS 32
/* Records dropped between two rewrites of positions below the front. */
#define CLAMP_EVERY (1u << 20)
/* Slots of a new bitmap block. */
#define XB_MIN 4u

#define M_SENDER ((1u << 25) - 1)
#define M_SLIVE (1u << 25)
#define M_DEAD (1u << 26)
#define M_LATE (1u << 27)
#define M_SDONE (1u << 28)

#define F_PARKED 1u
#define F_OPEN 2u
#define F_GAPS 4u

struct rmsg {
    uint64_t msgid;
    uint32_t ts;   /* seconds since the epoch, rounded up */
    uint32_t meta; /* sender mapid + 1, M_* */
};

/* The out-of-order reads of a chunk's records: slot[off] is the slot + 1
 * of record off's bitmap (0: none), stride bytes each. */
struct rxb {
    uint32_t stride;
    uint16_t n, cap; /* slots used, allocated */
    uint8_t slot[CHUNK];
    uint8_t bits[];
};

struct rchunk {
    struct rxb *xb;  /* NULL: no record of it was read out of order */
    uint64_t top;    /* largest msgid appended up to the end of it */
    uint32_t min_ts; /* smallest ts of its records */
    uint8_t ndead;   /* M_DEAD records in it at or past the front */
    uint8_t nsdone;  /* M_SDONE records in it */
    uint8_t late;    /* some record of it is M_LATE */
};

/* A ring of chunks, capacity a power of two: their records, and apart
 * (in the same block) their descriptors, so that finding a record reads
 * a dense array of pointers. */
struct cring {
    struct rmsg **rec; /* cap pointers, then cap descriptors */
    uint32_t head, n, cap;
};

struct repoch {
    uint32_t first_seq; /* the first message sent under this quit set */
    uint32_t nwords;    /* up to the last non-zero word */
    uint64_t quit[];
};

/* A ring of pointers, capacity a power of two. */
struct ptrq {
    void **v;
    uint32_t head, n, cap;
};

struct rstep {
    uint32_t first_seq, nmemb, nquit;
};

/* An open-addressing table of slots (0: empty). */
struct ridx {
    uint32_t *slot;
    uint32_t cap, count;
};

/* A sorted array of positions. */
struct rset {
    uint32_t *v;
    uint32_t n, cap;
};

struct rgap {
    uint32_t mapid, from, to;
};

/* Field order matters: a lookup of a message and its counts (COUNT, a
 * READ of a message everyone has read) reads the first cache line only. */
struct rgroup {
    struct cring chunks;
    struct ridx idx;    /* msgid -> seq */
    uint32_t base_seq;  /* seq of record 0 of chunks[0] */
    uint32_t front_seq; /* oldest live record */
    uint32_t plo;       /* P.v[0], or PLO_NONE when P is empty: nobody is
                           pending before it */
    uint32_t hot_first; /* slast.first_seq */
    uint32_t hot_rcpt;  /* slast.nmemb - slast.nquit */
    uint32_t nxb;       /* chunks with a bitmap block */
    uint32_t next_seq;  /* the next record's seq */
    uint32_t ndead;     /* M_DEAD records at or past the front */
    uint32_t nrec;      /* records not M_DEAD: the ones indexed */
    bool trim;          /* P, N or the gaps lost entries: group_trim */
    struct ridx old;    /* the table idx replaces, emptied MIGRATE_STEP
                           records at a time */
    struct rstep slast; /* steps[sn - 1], at hand */
    uint32_t midx_cap, midx_count;
    uint32_t *midx;      /* uid -> mapid, midx_cap slots */
    uint64_t *muid;      /* mapcap: uids (RCPT_UID_ANON: erased) */
    uint32_t *mw;        /* mapcap: watermarks (a parked member's: where it
                            parked) */
    uint32_t *mq;        /* mapcap: F_OPEN: the start of the open gap */
    uint8_t *mflag;      /* mapcap, F_* */
    struct rset P, N, O; /* O.v holds mapcap entries */
    uint64_t *quit;      /* live quit set, words(mapcap) words */
    uint32_t nmap, mapcap, nquit;
    bool quit_changed; /* since the last epoch was taken */
    bool unmarked;     /* restored, waiting for rcpt_restore_marks */
    struct rgap *gaps; /* closed gaps, by mapid then position */
    uint32_t ngaps, gapcap;
    struct ptrq epochs;
    struct rstep *steps; /* live steps are [shead, sn) */
    uint32_t shead, sn, scap;
    uint32_t *late; /* seqs of M_LATE records, [lhead, ln) */
    uint32_t lhead, ln, lcap;
    uint32_t tailcap; /* records in the last chunk (CHUNK unless alone) */
    uint64_t top;     /* largest msgid appended since the group was last
                         empty */
    uint32_t min_ts;  /* smallest ts of the chunks' records */
    uint32_t mig_seq; /* the next record whose entry may be in old */
    uint32_t mig_end; /* records from here on were never in old */
};

struct rcpt_store {
    struct u64map *groups; /* gid -> struct rgroup * */
    struct mem_acct mem;   /* everything, the u64map included */
    uint64_t seed;         /* index hash key */
    uint64_t cursor;       /* rcpt_expire_step's walk */
    size_t nmsgs;          /* records not dead */
};

static inline uint32_t words_for(uint32_t bits)
{
    return (bits + 63) / 64;
}

static inline bool bit_test(const uint64_t *w, uint32_t i)
{
    return w[i / 64] >> (i % 64) & 1;
}

static inline bool byte_test(const uint8_t *b, uint32_t i)
{
    return b[i / 8] >> (i % 8) & 1;
}

static uint32_t popcount_bytes(const uint8_t *b, uint32_t n)
{
    uint32_t c = 0;

    for (; n >= 8; n -= 8, b += 8) {
        uint64_t x;

        memcpy(&x, b, 8);
        c += (uint32_t)__builtin_popcountll(x);
    }
    for (; n > 0; n--)
        c += (uint32_t)__builtin_popcount(*b++);
    return c;
}

static bool bytes_zero(const uint8_t *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (b[i] != 0)
            return false;
    return true;
}

/* g->plo of an empty P: further than any position from the front (as
 * long as the front moves less than 2^30 before P gets an entry). */
#define PLO_NONE(g) ((g)->front_seq + 0x7fffffffu)

/* A position's distance from the front; 0 for any before it. */
static inline uint32_t rel(const struct rgroup *g, uint32_t x)
{
    uint32_t d = x - g->front_seq;

    return (int32_t)d < 0 ? 0 : d;
}

/* ---- Pointer rings ----------------------------------------------------- */

static inline void *pq_at(const struct ptrq *q, uint32_t i)
{
    return q->v[(q->head + i) & (q->cap - 1)];
}

/* Reallocates q to cap slots (>= q->n), unwrapped. 0 or -1. */
static int pq_resize(struct rcpt_store *s, struct ptrq *q, uint32_t cap)
{
    void **v = NULL;

    if (cap > 0) {
        v = mem_alloc(&s->mem, cap * sizeof(*v));
        if (v == NULL)
            return -1;
        for (uint32_t i = 0; i < q->n; i++)
            v[i] = pq_at(q, i);
    }
    mem_free(&s->mem, q->v, q->cap * sizeof(*v));
    q->v = v;
    q->cap = cap;
    q->head = 0;
    return 0;
}

static int pq_push(struct rcpt_store *s, struct ptrq *q, void *p)
{
    if (q->n == q->cap && pq_resize(s, q, q->cap ? q->cap * 2 : 2) != 0)
        return -1;
    q->n++;
    q->v[(q->head + q->n - 1) & (q->cap - 1)] = p;
    return 0;
}

/* Removes and returns the first pointer; shrinks a mostly empty ring (a
 * failed shrink keeps the larger one). */
static void *pq_shift(struct rcpt_store *s, struct ptrq *q)
{
    void *p = pq_at(q, 0);

    q->head = (q->head + 1) & (q->cap - 1);
    q->n--;
    if (q->n == 0 || (q->cap > 4 && q->n < q->cap / 4))
        pq_resize(s, q, q->n == 0 ? 0 : q->cap / 2);
    return p;
}

/* ---- Chunk rings -------------------------------------------------------- */

static inline struct rchunk *cr_at(const struct cring *r, uint32_t i)
{
    return &((struct rchunk *)(r->rec + r->cap))[(r->head + i) & (r->cap - 1)];
}

static inline struct rmsg **cr_rec(const struct cring *r, uint32_t i)
{
    return &r->rec[(r->head + i) & (r->cap - 1)];
}

static inline size_t cr_size(uint32_t cap)
{
    return cap * (sizeof(struct rmsg *) + sizeof(struct rchunk));
}

static int cr_resize(struct rcpt_store *s, struct cring *r, uint32_t cap)
{
    struct rmsg **rec = NULL;
    struct rchunk *v = NULL;

    if (cap > 0) {
        rec = mem_alloc(&s->mem, cr_size(cap));
        if (rec == NULL)
            return -1;
        v = (struct rchunk *)(rec + cap);
        for (uint32_t i = 0; i < r->n; i++) {
            rec[i] = *cr_rec(r, i);
            v[i] = *cr_at(r, i);
        }
    }
    mem_free(&s->mem, r->rec, cr_size(r->cap));
    r->rec = rec;
    r->cap = cap;
    r->head = 0;
    return 0;
}

static int cr_reserve(struct rcpt_store *s, struct cring *r)
{
    if (r->n < r->cap)
        return 0;
    return cr_resize(s, r, r->cap ? r->cap * 2 : 2);
}

static void cr_shift(struct rcpt_store *s, struct cring *r)
{
    r->head = (r->head + 1) & (r->cap - 1);
    r->n--;
    if (r->n == 0 || (r->cap > 4 && r->n < r->cap / 4))
        cr_resize(s, r, r->n == 0 ? 0 : r->cap / 2);
}

/* ---- Records ----------------------------------------------------------- */

static inline uint32_t chunk_idx(const struct rgroup *g, uint32_t seq)
{
    return (seq - g->base_seq) >> CHUNK_SHIFT;
}

static inline struct rchunk *chunk_of(const struct rgroup *g, uint32_t seq)
{
    return cr_at(&g->chunks, chunk_idx(g, seq));
}

/* The records of chunk ci. */
static inline struct rmsg *chunk_recs(const struct rgroup *g, uint32_t ci)
{
    return *cr_rec(&g->chunks, ci);
}

static inline struct rmsg *rec_at(const struct rgroup *g, uint32_t seq)
{
    return &chunk_recs(g, chunk_idx(g, seq))[(seq - g->base_seq) & (CHUNK - 1)];
}

static inline uint32_t group_live(const struct rgroup *g)
{
    return g->next_seq - g->front_seq;
}

static inline bool rec_visible(const struct rmsg *m, uint64_t horizon_ms)
{
    return !(m->meta & M_DEAD) && (uint64_t)m->ts * 1000 >= horizon_ms;
}

/* Every record of c at or past the front is visible at horizon h. */
static inline bool chunk_clean(const struct rchunk *c, uint64_t h)
{
    return c->ndead == 0 && (uint64_t)c->min_ts * 1000 >= h;
}

static inline uint32_t rec_sender(const struct rmsg *m)
{
    return (m->meta & M_SENDER) ? (m->meta & M_SENDER) - 1 : NOMAP;
}

static size_t chunk_bytes(uint32_t cap)
{
    return cap * sizeof(struct rmsg);
}

static inline size_t epoch_size(uint32_t nwords)
{
    return sizeof(struct repoch) + (size_t)nwords * sizeof(uint64_t);
}

static inline size_t xb_size(uint32_t cap, uint32_t stride)
{
    return sizeof(struct rxb) + (size_t)cap * stride;
}

/* ---- Index: msgid -> seq ----------------------------------------------- */

static uint64_t msg_hash(const struct rcpt_store *s, uint64_t msgid)
{
    return hash_u64(msgid, s->seed);
}

static inline uint32_t tbl_home(uint32_t cap, uint64_t h)
{
    return (uint32_t)(((h & 0xffffffffu) * cap) >> 32);
}

static inline uint32_t tbl_next(uint32_t cap, uint32_t i)
{
    return i + 1 == cap ? 0 : i + 1;
}

/* A slot: tag (1..255, never 0 so that 0 is empty) and 24 value bits. */
static inline uint32_t tag_slot(uint64_t h, uint32_t v)
{
    return (1 + (uint32_t)((h >> 32) % 255)) << SEQ_BITS | (v & SEQ_MASK);
}

/* The full seq of a slot: live seqs span less than 2^24 from front_seq. */
static inline uint32_t slot_seq(const struct rgroup *g, uint32_t slot)
{
    return g->front_seq + (((slot & SEQ_MASK) - g->front_seq) & SEQ_MASK);
}

static void tbl_place(struct ridx *t, uint64_t h, uint32_t slot)
{
    uint32_t i = tbl_home(t->cap, h);

    while (t->slot[i] != 0)
        i = tbl_next(t->cap, i);
    t->slot[i] = slot;
    t->count++;
}

/* Position of msgid in t (its seq in *seq), or NONE. */
static uint32_t tbl_find(const struct rgroup *g, const struct ridx *t,
                         uint64_t h, uint64_t msgid, uint32_t *seq)
{
    uint32_t tag = tag_slot(h, 0);

    if (t->count == 0)
        return NONE;
    for (uint32_t i = tbl_home(t->cap, h); t->slot[i] != 0;
         i = tbl_next(t->cap, i)) {
        uint32_t q;

        if ((t->slot[i] & ~SEQ_MASK) != tag)
            continue;
        q = slot_seq(g, t->slot[i]);
        if (rec_at(g, q)->msgid == msgid) {
            *seq = q;
            return i;
        }
    }
    return NONE;
}

/* Empties position i by backward shift (no tombstones): each following
 * entry of the run moves back unless its home lies cyclically in (i, j]. */
static void tbl_remove(const struct rcpt_store *s, const struct rgroup *g,
                       struct ridx *t, uint32_t i)
{
    for (uint32_t j = tbl_next(t->cap, i); t->slot[j] != 0;
         j = tbl_next(t->cap, j)) {
        const struct rmsg *m = rec_at(g, slot_seq(g, t->slot[j]));
        uint32_t k = tbl_home(t->cap, msg_hash(s, m->msgid));

        if (i <= j ? (k > i && k <= j) : (k > i || k <= j))
            continue;
        t->slot[i] = t->slot[j];
        i = j;
    }
    t->slot[i] = 0;
    t->count--;
}

static void tbl_free(struct rcpt_store *s, struct ridx *t)
{
    mem_free(&s->mem, t->slot, t->cap * sizeof(*t->slot));
    *t = (struct ridx){NULL, 0, 0};
}

static bool idx_find(const struct rcpt_store *s, const struct rgroup *g,
                     uint64_t msgid, uint32_t *seq)
{
    uint64_t h = msg_hash(s, msgid);

    return tbl_find(g, &g->idx, h, msgid, seq) != NONE ||
           tbl_find(g, &g->old, h, msgid, seq) != NONE;
}

/* Indexes msgid at seq in the current table (room made by idx_reserve). */
static void idx_insert(const struct rcpt_store *s, struct rgroup *g,
                       uint64_t msgid, uint32_t seq)
{
    uint64_t h = msg_hash(s, msgid);

    tbl_place(&g->idx, h, tag_slot(h, seq));
}

/*
 * Copies up to `budget` records' entries from the table being replaced to
 * the new one, in seq order; frees the old table once all are copied.
 * The old table keeps its copies meanwhile (removing them would rehash
 * their clusters): a lookup finds a copied entry in the new table first.
 * Bounded work, so that no operation pays for a whole rebuild.
 */
static void idx_migrate(struct rcpt_store *s, struct rgroup *g, uint32_t budget)
{
    if (g->old.cap == 0)
        return;
    if ((int32_t)(g->mig_seq - g->front_seq) < 0)
        g->mig_seq = g->front_seq;
    for (; budget > 0 && (int32_t)(g->mig_end - g->mig_seq) > 0;
         budget--, g->mig_seq++) {
        const struct rmsg *m = rec_at(g, g->mig_seq);

        if (!(m->meta & M_DEAD))
            idx_insert(s, g, m->msgid, g->mig_seq);
    }
    if ((int32_t)(g->mig_end - g->mig_seq) <= 0)
        tbl_free(s, &g->old);
}

/*
 * Starts moving the index into a new table of cap slots (0: none): the
 * entries follow MIGRATE_STEP records per index change. A migration still
 * running is finished first; it fits: it ends within (live records) /
 * MIGRATE_STEP changes, long before its table passes its top load, so in
 * practice there is none. 0, or -1 with the index unchanged.
 */
static int idx_resize(struct rcpt_store *s, struct rgroup *g, uint32_t cap)
{
    uint32_t *slot = NULL;

    if (cap > 0 && (slot = mem_zalloc(&s->mem, cap * sizeof(*slot))) == NULL)
        return -1;
    idx_migrate(s, g, UINT32_MAX);
    tbl_free(s, &g->old);
    g->old = g->idx;
    g->idx = (struct ridx){slot, cap, 0};
    g->mig_seq = g->front_seq;
    g->mig_end = g->next_seq;
    idx_migrate(s, g, cap == 0 ? UINT32_MAX : MIGRATE_STEP);
    return 0;
}

/* A table for n entries at load 2/3; it grows again past 0.85 and shrinks
 * below 0.2. */
static uint32_t idx_cap_for(uint32_t n)
{
    uint32_t cap = n + n / 2 + 1;

    return cap > IDX_MIN ? cap : IDX_MIN;
}

/* Room for one more entry in the new table at load <= 0.85. 0 or -1. */
static int idx_reserve(struct rcpt_store *s, struct rgroup *g)
{
    idx_migrate(s, g, MIGRATE_STEP);
    if ((uint64_t)(g->idx.count + 1) * 20 <= (uint64_t)g->idx.cap * 17)
        return 0;
    return idx_resize(s, g, idx_cap_for(g->nrec + 1));
}

/* Unindexes msgid (from both tables: a copied entry is in both), g->nrec
 * already counting it out; shrinks the index below load 0.2 (allocation
 * failure keeps the larger one). */
static void idx_remove(struct rcpt_store *s, struct rgroup *g, uint64_t msgid)
{
    uint64_t h = msg_hash(s, msgid);
    uint32_t seq, i = tbl_find(g, &g->idx, h, msgid, &seq);

    if (i != NONE)
        tbl_remove(s, g, &g->idx, i);
    if ((i = tbl_find(g, &g->old, h, msgid, &seq)) != NONE)
        tbl_remove(s, g, &g->old, i);
    idx_migrate(s, g, MIGRATE_STEP);
    if (g->nrec == 0)
        idx_resize(s, g, 0);
    else if (g->old.cap == 0 && g->idx.cap > IDX_MIN &&
             g->idx.count * 5 < g->idx.cap)
        idx_resize(s, g, idx_cap_for(g->idx.count));
}

/* ---- Member index: uid -> mapid ---------------------------------------- */

static uint64_t uid_hash(const struct rcpt_store *s, uint64_t uid)
{
    return hash_u64(uid, hash_seed_rot(s->seed));
}

static uint32_t member(const struct rcpt_store *s, const struct rgroup *g,
                       uint64_t uid)
{
    uint64_t h;
    uint32_t tag;

    if (g->midx_count == 0)
        return NOMAP;
    h = uid_hash(s, uid);
    tag = tag_slot(h, 0);
    for (uint32_t i = tbl_home(g->midx_cap, h); g->midx[i] != 0;
         i = tbl_next(g->midx_cap, i)) {
        uint32_t m = g->midx[i] & SEQ_MASK;

        if ((g->midx[i] & ~SEQ_MASK) == tag && g->muid[m] == uid)
            return m;
    }
    return NOMAP;
}

static void midx_place(const struct rcpt_store *s, uint32_t *slot, uint32_t cap,
                       uint64_t uid, uint32_t m)
{
    uint64_t h = uid_hash(s, uid);
    uint32_t i = tbl_home(cap, h);

    while (slot[i] != 0)
        i = tbl_next(cap, i);
    slot[i] = tag_slot(h, m);
}

/* Room for one more uid at load <= 0.8: a table of twice the entries,
 * rebuilt at once (as the member arrays, which grow by a copy too). 0 or
 * -1 with nothing changed. */
static int midx_reserve(struct rcpt_store *s, struct rgroup *g)
{
    uint32_t cap, *slot;

    if ((uint64_t)(g->midx_count + 1) * 5 <= (uint64_t)g->midx_cap * 4)
        return 0;
    cap = (g->midx_count + 1) * 2 > IDX_MIN ? (g->midx_count + 1) * 2 : IDX_MIN;
    slot = mem_zalloc(&s->mem, cap * sizeof(*slot));
    if (slot == NULL)
        return -1;
    for (uint32_t m = 0; m < g->nmap; m++)
        if (g->muid[m] != RCPT_UID_ANON)
            midx_place(s, slot, cap, g->muid[m], m);
    mem_free(&s->mem, g->midx, g->midx_cap * sizeof(*slot));
    g->midx = slot;
    g->midx_cap = cap;
    return 0;
}

/* Removes uid (a member) from the index, by backward shift. */
static void midx_remove(const struct rcpt_store *s, struct rgroup *g,
                        uint64_t uid)
{
    uint64_t h = uid_hash(s, uid);
    uint32_t tag = tag_slot(h, 0), cap = g->midx_cap, i;

    for (i = tbl_home(cap, h); g->midx[i] != 0; i = tbl_next(cap, i))
        if ((g->midx[i] & ~SEQ_MASK) == tag &&
            g->muid[g->midx[i] & SEQ_MASK] == uid)
            break;
    if (g->midx[i] == 0)
        return;
    for (uint32_t j = tbl_next(cap, i); g->midx[j] != 0; j = tbl_next(cap, j)) {
        uint32_t k = tbl_home(cap, uid_hash(s, g->muid[g->midx[j] & SEQ_MASK]));

        if (i <= j ? (k > i && k <= j) : (k > i || k <= j))
            continue;
        g->midx[i] = g->midx[j];
        i = j;
    }
    g->midx[i] = 0;
    g->midx_count--;
}

/* ---- Sorted position arrays ------------------------------------------- */

/* Entries of t at or before position q. O(log n), without branches in
 * the loop: its comparisons are coin flips, which a predictor loses. */
static uint32_t rs_le(const struct rgroup *g, const struct rset *t, uint32_t q)
{
    const uint32_t *base = t->v;
    uint32_t n = t->n, rq = rel(g, q);

    if (n == 0 || rel(g, base[0]) > rq)
        return 0;
    if (rel(g, base[n - 1]) <= rq)
        return n;
    while (n > 1) {
        uint32_t half = n / 2;

        /* both places the next probe may read, while this one resolves */
        __builtin_prefetch(base + half / 2);
        __builtin_prefetch(base + half + half / 2);
        base = rel(g, base[half]) <= rq ? base + half : base;
        n -= half;
    }
    return (uint32_t)(base - t->v) + 1;
}

/* Index of the first entry at or after position x. */
static uint32_t rs_lb(const struct rgroup *g, const struct rset *t, uint32_t x)
{
    uint32_t lo = 0, hi = t->n, rx = rel(g, x);

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (rel(g, t->v[mid]) < rx)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Adds x (room made by rs_reserve). */
static void rs_insert(struct rgroup *g, struct rset *t, uint32_t x)
{
    uint32_t i = rs_le(g, t, x);

    memmove(t->v + i + 1, t->v + i, (t->n - i) * sizeof(*t->v));
    t->v[i] = x;
    t->n++;
    if (t == &g->P)
        g->plo = t->v[0];
}

/* Removes one entry at position x (there is one). */
static void rs_remove(struct rgroup *g, struct rset *t, uint32_t x)
{
    uint32_t i = rs_lb(g, t, x);

    memmove(t->v + i, t->v + i + 1, (t->n - i - 1) * sizeof(*t->v));
    t->n--;
    g->trim = true;
    if (t == &g->P)
        g->plo = t->n > 0 ? t->v[0] : PLO_NONE(g);
}

/* Moves one entry from position a to position b >= a, in one pass. */
static void rs_move(struct rgroup *g, struct rset *t, uint32_t a, uint32_t b)
{
    uint32_t i = rs_lb(g, t, a), j = rs_le(g, t, b);

    memmove(t->v + i, t->v + i + 1, (j - 1 - i) * sizeof(*t->v));
    t->v[j - 1] = b;
    if (t == &g->P)
        g->plo = t->v[0];
}

/* Room for extra more entries. 0 or -1 with t unchanged. */
static int rs_reserve(struct rcpt_store *s, struct rset *t, uint32_t extra)
{
    uint32_t cap = t->cap + t->cap / 2;
    uint32_t *v;

    if (t->n + extra <= t->cap)
        return 0;
    if (cap < t->n + extra)
        cap = t->n + extra;
    if (cap < 4)
        cap = 4;
    v = mem_realloc(&s->mem, t->v, t->cap * sizeof(*v), cap * sizeof(*v));
    if (v == NULL)
        return -1;
    t->v = v;
    t->cap = cap;
    return 0;
}

/* The capacity an array of n entries shrinks to, once it holds less than
 * half of cap (0: it keeps cap): a quarter more than n, so that growing
 * again (x1.5) and shrinking do not alternate. */
static uint32_t shrunk_cap(uint32_t n, uint32_t cap)
{
    if (n >= cap / 2 || cap <= 8)
        return n == 0 && cap > 0 ? 0 : cap;
    return n + n / 4 + 4;
}

/* Gives back what a sorted array does not use (never fails). */
static void rs_shrink(struct rcpt_store *s, struct rset *t)
{
    uint32_t cap = shrunk_cap(t->n, t->cap);

    if (cap == t->cap)
        return;
    if (cap == 0) {
        mem_free(&s->mem, t->v, t->cap * sizeof(*t->v));
        *t = (struct rset){NULL, 0, 0};
        return;
    }
    t->v =
        mem_realloc(&s->mem, t->v, t->cap * sizeof(*t->v), cap * sizeof(*t->v));
    t->cap = cap;
}

/* Gives back most of what a group's mark arrays do not use, once an
 * operation is over (never inside one: it may have made room it is
 * about to use). Never fails. */
static void group_trim(struct rcpt_store *s, struct rgroup *g)
{
    uint32_t cap = shrunk_cap(g->ngaps, g->gapcap);

    if (!g->trim)
        return;
    g->trim = false;
    rs_shrink(s, &g->P);
    rs_shrink(s, &g->N);
    if (cap == g->gapcap)
        return;
    if (cap == 0)
        mem_free(&s->mem, g->gaps, g->gapcap * sizeof(*g->gaps));
    else
        g->gaps = mem_realloc(&s->mem, g->gaps, g->gapcap * sizeof(*g->gaps),
                              cap * sizeof(*g->gaps));
    if (cap == 0)
        g->gaps = NULL;
    g->gapcap = cap;
}

/* Whether nobody is pending at q: every watermark is past it. O(1). */
static inline bool all_past(const struct rgroup *g, uint32_t q)
{
    return rel(g, q) < rel(g, g->plo);
}

/* Members pending at q (modulo the out-of-order reads): recipients that
 * have not read q by their watermark. */
static uint32_t pending_at(const struct rgroup *g, uint32_t q)
{
    uint32_t n;

    if (all_past(g, q))
        return 0;
    n = rs_le(g, &g->P, q);

    if (g->N.n > 0)
        n -= rs_le(g, &g->N, q);
    if (g->O.n > 0)
        n -= rs_le(g, &g->O, q);
    return n;
}

/* ---- Gaps ---------------------------------------------------------------- */

/* Index of the first gap of a mapid >= m. */
static uint32_t gap_lb(const struct rgroup *g, uint32_t m)
{
    uint32_t lo = 0, hi = g->ngaps;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (g->gaps[mid].mapid < m)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* m's gaps: [*i, *j). */
static void gap_run(const struct rgroup *g, uint32_t m, uint32_t *i,
                    uint32_t *j)
{
    if (!(g->mflag[m] & F_GAPS)) {
        *i = *j = 0;
        return;
    }
    *i = gap_lb(g, m);
    *j = gap_lb(g, m + 1);
}

/* Whether position q is in one of m's closed gaps. */
static bool in_gap(const struct rgroup *g, uint32_t m, uint32_t q)
{
    uint32_t lo, hi, rq = rel(g, q);

    gap_run(g, m, &lo, &hi);
    if (lo == hi)
        return false;
    /* the last gap starting at or before q */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (rel(g, g->gaps[mid].from) <= rq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && g->gaps[lo - 1].mapid == m &&
           rel(g, g->gaps[lo - 1].from) <= rq &&
           rq < rel(g, g->gaps[lo - 1].to);
}

static int gap_reserve(struct rcpt_store *s, struct rgroup *g)
{
    uint32_t cap = g->gapcap < 4 ? 4 : g->gapcap + g->gapcap / 2;
    struct rgap *v;

    if (g->ngaps < g->gapcap)
        return 0;
    v = mem_realloc(&s->mem, g->gaps, g->gapcap * sizeof(*v), cap * sizeof(*v));
    if (v == NULL)
        return -1;
    g->gaps = v;
    g->gapcap = cap;
    return 0;
}

/* Adds m's gap [from, to), after its gaps that start before (room made by
 * gap_reserve). */
static void gap_add(struct rgroup *g, uint32_t m, uint32_t from, uint32_t to)
{
    uint32_t i = gap_lb(g, m + 1);

    while (i > 0 && g->gaps[i - 1].mapid == m &&
           rel(g, g->gaps[i - 1].from) > rel(g, from))
        i--;
    memmove(g->gaps + i + 1, g->gaps + i, (g->ngaps - i) * sizeof(*g->gaps));
    g->gaps[i] = (struct rgap){m, from, to};
    g->ngaps++;
    g->mflag[m] |= F_GAPS;
}

static void gap_del(struct rgroup *g, uint32_t i)
{
    uint32_t m = g->gaps[i].mapid;

    g->trim = true;
    memmove(g->gaps + i, g->gaps + i + 1,
            (g->ngaps - i - 1) * sizeof(*g->gaps));
    g->ngaps--;
    if ((i == g->ngaps || g->gaps[i].mapid != m) &&
        (i == 0 || g->gaps[i - 1].mapid != m))
        g->mflag[m] &= (uint8_t)~F_GAPS;
}

/* ---- Out-of-order reads ---------------------------------------------- */

/* The bitmap of record seq's out-of-order reads (its bytes in *stride), or
 * NULL. */
static uint8_t *xb_find(const struct rgroup *g, uint32_t seq, uint32_t *stride)
{
    uint32_t off = (seq - g->base_seq) & (CHUNK - 1);
    struct rxb *x = chunk_of(g, seq)->xb;

    if (x == NULL || x->slot[off] == 0)
        return NULL;
    *stride = x->stride;
    return x->bits + (size_t)(x->slot[off] - 1) * x->stride;
}

static bool xb_test(const struct rgroup *g, uint32_t seq, uint32_t m)
{
    uint32_t stride;
    const uint8_t *b = xb_find(g, seq, &stride);

    return b != NULL && m / 8 < stride && byte_test(b, m);
}

/* Out-of-order reads of record seq. */
static uint32_t xb_count(const struct rgroup *g, uint32_t seq)
{
    uint32_t stride;
    const uint8_t *b = g->nxb ? xb_find(g, seq, &stride) : NULL;

    return b != NULL ? popcount_bytes(b, stride) : 0;
}

/*
 * Makes sure record seq has a bitmap slot of at least nbytes (an empty one
 * if it had none: the caller sets a bit or gives it back with xb_trim).
 * 0, or -1 with nothing changed.
 */
static int xb_reserve(struct rcpt_store *s, struct rgroup *g, uint32_t seq,
                      uint32_t nbytes)
{
    struct rchunk *c = chunk_of(g, seq);
    uint32_t off = (seq - g->base_seq) & (CHUNK - 1);
    struct rxb *x = c->xb, *y;
    bool need = x == NULL || x->slot[off] == 0;
    uint32_t cap = x ? x->cap : 0, stride = x ? x->stride : 0;

    if (nbytes == 0)
        nbytes = 1;
    if (!need && stride >= nbytes)
        return 0;
    if (stride < nbytes)
        stride = nbytes;
    if (need && (x == NULL || x->n == x->cap))
        cap = cap == 0 ? XB_MIN : cap * 2 > CHUNK ? CHUNK : cap * 2;
    if (x == NULL || cap != x->cap || stride != x->stride) {
        y = mem_zalloc(&s->mem, xb_size(cap, stride));
        if (y == NULL)
            return -1;
        y->stride = stride;
        y->cap = (uint16_t)cap;
        if (x != NULL) {
            y->n = x->n;
            memcpy(y->slot, x->slot, sizeof(y->slot));
            for (uint32_t i = 0; i < x->n; i++)
                memcpy(y->bits + (size_t)i * stride,
                       x->bits + (size_t)i * x->stride, x->stride);
            mem_free(&s->mem, x, xb_size(x->cap, x->stride));
        } else {
            g->nxb++;
        }
        c->xb = x = y;
    }
    if (need)
        x->slot[off] = (uint8_t)++x->n;
    return 0;
}

/* Frees record off's slot of chunk c: the last slot moves into it. */
static void xb_free_slot(struct rcpt_store *s, struct rgroup *g,
                         struct rchunk *c, uint32_t off)
{
    struct rxb *x = c->xb;
    uint32_t k = x->slot[off] - 1u, last = x->n - 1u;

    if (k != last) {
        memcpy(x->bits + (size_t)k * x->stride,
               x->bits + (size_t)last * x->stride, x->stride);
        for (uint32_t o = 0; o < CHUNK; o++)
            if (x->slot[o] == last + 1) {
                x->slot[o] = (uint8_t)(k + 1);
                break;
            }
    }
    memset(x->bits + (size_t)last * x->stride, 0, x->stride);
    x->slot[off] = 0;
    x->n--;
    if (x->n == 0) {
        mem_free(&s->mem, x, xb_size(x->cap, x->stride));
        c->xb = NULL;
        g->nxb--;
    } else if (x->cap > 8 && x->n <= x->cap / 4) {
        c->xb = mem_realloc(&s->mem, x, xb_size(x->cap, x->stride),
                            xb_size(x->cap / 2, x->stride));
        c->xb->cap /= 2;
    }
}

/* Gives back record seq's slot if no bit of it is set. */
static void xb_trim(struct rcpt_store *s, struct rgroup *g, uint32_t seq)
{
    struct rchunk *c = chunk_of(g, seq);
    uint32_t stride, off = (seq - g->base_seq) & (CHUNK - 1);
    const uint8_t *b = xb_find(g, seq, &stride);

    if (b != NULL && bytes_zero(b, stride))
        xb_free_slot(s, g, c, off);
}

/* Sets m's bit of record seq (its slot reserved). */
static void xb_set(struct rgroup *g, uint32_t seq, uint32_t m)
{
    uint32_t stride;
    uint8_t *b = xb_find(g, seq, &stride);

    b[m / 8] |= (uint8_t)(1u << (m % 8));
}

/* Clears m's bit of record seq; true if it was set. */
static bool xb_clear(struct rcpt_store *s, struct rgroup *g, uint32_t seq,
                     uint32_t m)
{
    uint32_t stride;
    uint8_t *b = g->nxb ? xb_find(g, seq, &stride) : NULL;

    if (b == NULL || m / 8 >= stride || !byte_test(b, m))
        return false;
    b[m / 8] &= (uint8_t) ~(1u << (m % 8));
    if (bytes_zero(b, stride))
        xb_free_slot(s, g, chunk_of(g, seq), (seq - g->base_seq) & (CHUNK - 1));
    return true;
}

/* ---- Epochs ------------------------------------------------------------ */

/* The quit set message seq was sent under, or NULL for none. */
static const struct repoch *epoch_of(const struct rgroup *g, uint32_t seq)
{
    uint32_t lo = 0, hi = g->epochs.n;

    /* Last epoch with first_seq <= seq; seqs compare by wrapping distance. */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const struct repoch *e = pq_at(&g->epochs, mid);

        if ((int32_t)(e->first_seq - seq) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? NULL : pq_at(&g->epochs, lo - 1);
}

static inline bool epoch_quit(const struct repoch *e, uint32_t m)
{
    return e != NULL && m / 64 < e->nwords && bit_test(e->quit, m);
}

/* Quitters of e below nmemb. */
static uint32_t epoch_nquit(const struct repoch *e, uint32_t nmemb)
{
    uint32_t n = 0;

    for (uint32_t w = 0; e != NULL && w < e->nwords && w * 64 < nmemb; w++) {
        uint64_t x = e->quit[w];

        if (w == nmemb / 64)
            x &= (UINT64_C(1) << (nmemb % 64)) - 1;
        n += (uint32_t)__builtin_popcountll(x);
    }
    return n;
}

static uint32_t quit_used_words(const struct rgroup *g)
{
    uint32_t n = words_for(g->nmap);

    while (n > 0 && g->quit[n - 1] == 0)
        n--;
    return n;
}

/* Appends an epoch of quit[0..nw) starting at the next message. 0 or -1
 * with the epochs unchanged. */
static int epoch_push(struct rcpt_store *s, struct rgroup *g, uint32_t nw,
                      const uint64_t *quit)
{
    struct repoch *e = mem_alloc(&s->mem, epoch_size(nw));

    if (e == NULL)
        return -1;
    e->first_seq = g->next_seq;
    e->nwords = nw;
    if (nw > 0)
        memcpy(e->quit, quit, nw * sizeof(uint64_t));
    if (pq_push(s, &g->epochs, e) != 0) {
        mem_free(&s->mem, e, epoch_size(nw));
        return -1;
    }
    return 0;
}

/*
 * Before a send: when the quit set changed since the last snapshot and now
 * differs from it, snapshot it (first_seq = the next message). 0 or -1;
 * either way the epochs stay valid.
 */
static int epoch_take(struct rcpt_store *s, struct rgroup *g)
{
    const struct repoch *last =
        g->epochs.n ? pq_at(&g->epochs, g->epochs.n - 1) : NULL;
    uint32_t nw = quit_used_words(g);
    bool same;

    if (!g->quit_changed)
        return 0;
    same = last != NULL
               ? last->nwords == nw && memcmp(last->quit, g->quit, nw * 8) == 0
               : nw == 0;
    if (!same && epoch_push(s, g, nw, g->quit) != 0)
        return -1;
    g->quit_changed = false;
    return 0;
}

/* After the front moved: frees epochs no live message uses, and pulls the
 * first one's first_seq up to the front so wrapping compares stay valid. */
static void epoch_trim(struct rcpt_store *s, struct rgroup *g)
{
    while (g->epochs.n >= 2) {
        const struct repoch *next = pq_at(&g->epochs, 1);
        struct repoch *e;

        if ((int32_t)(next->first_seq - g->front_seq) > 0)
            break;
        e = pq_shift(s, &g->epochs);
        mem_free(&s->mem, e, epoch_size(e->nwords));
    }
    if (g->epochs.n > 0) {
        struct repoch *e = pq_at(&g->epochs, 0);

        if ((int32_t)(e->first_seq - g->front_seq) < 0)
            e->first_seq = g->front_seq;
    }
}

/* ---- Steps: member and quit counts ------------------------------------ */

/* The step record seq was sent in (every live record has one). */
static const struct rstep *step_of(const struct rgroup *g, uint32_t seq)
{
    uint32_t lo = g->shead, hi = g->sn, rq = rel(g, seq);

    if (rel(g, g->slast.first_seq) <= rq)
        return &g->slast;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (rel(g, g->steps[mid].first_seq) <= rq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return &g->steps[lo - 1];
}

static bool step_needed(const struct rgroup *g, uint32_t nmemb, uint32_t nquit)
{
    const struct rstep *last = g->sn > g->shead ? &g->steps[g->sn - 1] : NULL;

    return last == NULL || last->nmemb != nmemb || last->nquit != nquit;
}

/* Room for a step of (nmemb, nquit) at the next record if one is needed. 0
 * or -1 with nothing changed. */
static int step_reserve(struct rcpt_store *s, struct rgroup *g, uint32_t nmemb,
                        uint32_t nquit)
{
    uint32_t cap = g->scap < 2 ? 2 : g->scap * 2;
    struct rstep *v;

    if (!step_needed(g, nmemb, nquit) || g->sn < g->scap)
        return 0;
    if (g->shead > 0) {
        memmove(g->steps, g->steps + g->shead, (g->sn - g->shead) * sizeof(*v));
        g->sn -= g->shead;
        g->shead = 0;
        return 0;
    }
    v = mem_realloc(&s->mem, g->steps, g->scap * sizeof(*v), cap * sizeof(*v));
    if (v == NULL)
        return -1;
    g->steps = v;
    g->scap = cap;
    return 0;
}

static void step_push(struct rgroup *g, uint32_t nmemb, uint32_t nquit)
{
    if (step_needed(g, nmemb, nquit)) {
        g->slast = g->steps[g->sn++] =
            (struct rstep){g->next_seq, nmemb, nquit};
        g->hot_first = g->next_seq;
        g->hot_rcpt = nmemb - nquit;
    }
}

/* After the front moved: drops steps no live message is in. */
static void step_trim(struct rcpt_store *s, struct rgroup *g)
{
    while (g->sn - g->shead >= 2 &&
           (int32_t)(g->steps[g->shead + 1].first_seq - g->front_seq) <= 0)
        g->shead++;
    if (g->sn > g->shead &&
        (int32_t)(g->steps[g->shead].first_seq - g->front_seq) < 0) {
        g->steps[g->shead].first_seq = g->front_seq;
        if (g->sn - g->shead == 1)
            g->slast.first_seq = g->hot_first = g->front_seq;
    }
    if (group_live(g) == 0 || g->sn == g->shead) {
        mem_free(&s->mem, g->steps, g->scap * sizeof(*g->steps));
        g->steps = NULL;
        g->shead = g->sn = g->scap = 0;
    } else if (g->scap > 8 && g->sn - g->shead < g->scap / 4) {
        memmove(g->steps, g->steps + g->shead,
                (g->sn - g->shead) * sizeof(*g->steps));
        g->sn -= g->shead;
        g->shead = 0;
        g->steps = mem_realloc(&s->mem, g->steps, g->scap * sizeof(*g->steps),
                               g->scap / 2 * sizeof(*g->steps));
        g->scap /= 2;
    }
}

/* A record's recipient count. */
static uint32_t rec_nrcpt(const struct rgroup *g, const struct rmsg *m,
                          uint32_t seq)
{
    uint32_t base;

    if (rel(g, g->hot_first) <= rel(g, seq)) {
        base = g->hot_rcpt;
    } else {
        const struct rstep *st = step_of(g, seq);

        base = st->nmemb - st->nquit;
    }
    return base - ((m->meta & M_SLIVE) ? 1 : 0);
}

/* ---- Late msgids -------------------------------------------------------- */

static int late_reserve(struct rcpt_store *s, struct rgroup *g)
{
    uint32_t cap = g->lcap < 4 ? 4 : g->lcap * 2, *v;

    if (g->ln < g->lcap)
        return 0;
    if (g->lhead > 0) {
        memmove(g->late, g->late + g->lhead, (g->ln - g->lhead) * sizeof(*v));
        g->ln -= g->lhead;
        g->lhead = 0;
        return 0;
    }
    v = mem_realloc(&s->mem, g->late, g->lcap * sizeof(*v), cap * sizeof(*v));
    if (v == NULL)
        return -1;
    g->late = v;
    g->lcap = cap;
    return 0;
}

static void late_trim(struct rcpt_store *s, struct rgroup *g)
{
    while (g->lhead < g->ln && (int32_t)(g->late[g->lhead] - g->front_seq) < 0)
        g->lhead++;
    if (g->lhead == g->ln && g->lcap > 0) {
        mem_free(&s->mem, g->late, g->lcap * sizeof(*g->late));
        g->late = NULL;
        g->lhead = g->ln = g->lcap = 0;
    } else if (g->lcap > 8 && g->ln - g->lhead < g->lcap / 4) {
        memmove(g->late, g->late + g->lhead,
                (g->ln - g->lhead) * sizeof(*g->late));
        g->ln -= g->lhead;
        g->lhead = 0;
        g->late = mem_realloc(&s->mem, g->late, g->lcap * sizeof(*g->late),
                              g->lcap / 2 * sizeof(*g->late));
        g->lcap /= 2;
    }
}

/* Index of the first late seq at or after q. */
static uint32_t late_lb(const struct rgroup *g, uint32_t q)
{
    uint32_t lo = g->lhead, hi = g->ln, rq = rel(g, q);

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (rel(g, g->late[mid]) < rq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first seq after which every record has a msgid above upto (none
 * before it has): READUPTO's watermark. O(log chunks + log CHUNK), or a
 * scan of one chunk holding late msgids. */
static uint32_t upto_pos(const struct rgroup *g, uint64_t upto)
{
    uint32_t lo = 0, hi = g->chunks.n, first, end;
    const struct rchunk *c;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (cr_at(&g->chunks, mid)->top > upto)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (lo == g->chunks.n)
        return g->next_seq;
    c = cr_at(&g->chunks, lo);
    first = g->base_seq + lo * CHUNK;
    end = lo + 1 == g->chunks.n ? g->next_seq : first + CHUNK;
    if (!c->late) {
        /* msgids never decrease in it: the first one above upto */
        uint32_t a = 0, b = end - first;

        while (a < b) {
            uint32_t mid = a + (b - a) / 2;

            if (chunk_recs(g, lo)[mid].msgid > upto)
                b = mid;
            else
                a = mid + 1;
        }
        return first + a;
    }
    for (uint64_t run = lo > 0 ? cr_at(&g->chunks, lo - 1)->top : 0;
         first != end; first++) {
        const struct rmsg *m =
            &chunk_recs(g, lo)[(first - g->base_seq) & (CHUNK - 1)];

        if (m->msgid > run)
            run = m->msgid;
        if (run > upto)
            break;
    }
    return first;
}

/* ---- Read marks ------------------------------------------------------- */

/* Whether member m is pending at record q: a recipient that has not read
 * it by its watermark. */
static bool pending(const struct rgroup *g, uint32_t m, uint32_t q)
{
    uint8_t f;

    if (rel(g, g->mw[m]) > rel(g, q))
        return false;
    f = g->mflag[m];
    if (f & F_PARKED)
        return false;
    if ((f & F_OPEN) && rel(g, q) >= rel(g, g->mq[m]))
        return false;
    return !(f & F_GAPS) || !in_gap(g, m, q);
}

/* x, or the front for a position before it. */
static inline uint32_t at_front(const struct rgroup *g, uint32_t x)
{
    return rel(g, x) == 0 ? g->front_seq : x;
}

/* m's watermark passes record r of chunk c: a mark of it as sender
 * behind its watermark goes (M_SDONE is set exactly while the sender is
 * pending there). true if it had one. */
static bool sdone_clear(struct rchunk *c, struct rmsg *r, uint32_t m)
{
    if (!(r->meta & M_SDONE) || rec_sender(r) != m)
        return false;
    r->meta &= ~M_SDONE;
    c->nsdone--;
    return true;
}

/* Members pending at record q who are done with it anyway: its sender,
 * behind its watermark when it sent it and still (0 or 1). */
static uint32_t sender_done(const struct rmsg *r)
{
    return (r->meta & M_SDONE) != 0;
}

/* Recipients of record q who have not read it. */
static uint32_t unread_of(const struct rgroup *g, const struct rmsg *r,
                          uint32_t q)
{
    return pending_at(g, q) - xb_count(g, q) - sender_done(r);
}

static void w_move(struct rgroup *g, uint32_t m, uint32_t to)
{
    rs_move(g, &g->P, g->mw[m], to);
    g->mw[m] = to;
}

/* m reached its open gap, or quit having read everything: done for
 * everything until it rejoins. Gaps it still has (behind the front) go. */
static void park(struct rgroup *g, uint32_t m)
{
    uint32_t lo, hi;

    rs_remove(g, &g->P, g->mw[m]);
    if (g->mflag[m] & F_OPEN)
        rs_remove(g, &g->O, g->mq[m]);
    gap_run(g, m, &lo, &hi);
    while (hi-- > lo) {
        rs_remove(g, &g->N, g->gaps[hi].from);
        rs_remove(g, &g->P, g->gaps[hi].to);
        gap_del(g, hi);
    }
    g->mflag[m] = F_PARKED;
    g->mw[m] = g->next_seq;
}

/* m's watermark is at the start of its gap i: it moves to the gap's end
 * (whose entry in P becomes the watermark's). */
static void skip_gap(struct rgroup *g, uint32_t m, uint32_t i)
{

    rs_remove(g, &g->P, g->mw[m]);
    rs_remove(g, &g->N, g->gaps[i].from);
    g->mw[m] = g->gaps[i].to;
    gap_del(g, i);
}

/*
 * Moves m's watermark over what m is done with right above it (its gaps,
 * its out-of-order reads, records gone or, with a horizon, expired), up
 * to `steps` records: keeping watermarks high keeps bitmaps and gaps
 * few. Never allocates.
 */
static void normalize(struct rcpt_store *s, struct rgroup *g, uint32_t m,
                      bool have_h, uint64_t h, unsigned steps)
{

    if (g->mflag[m] & F_PARKED)
        return;
    if ((int32_t)(g->mw[m] - g->front_seq) < 0)
        w_move(g, m, g->front_seq);
    while (steps-- > 0 && g->mw[m] != g->next_seq) {
        uint8_t f = g->mflag[m];
        struct rmsg *r;

        if ((f & F_OPEN) && rel(g, g->mw[m]) >= rel(g, g->mq[m])) {
            park(g, m);
            return;
        }
        if (f & F_GAPS) {
            uint32_t i = gap_lb(g, m);

            if (rel(g, g->gaps[i].from) <= rel(g, g->mw[m])) {
                /* (a gap wholly behind the front ends there too) */
                skip_gap(g, m, i);
                if ((int32_t)(g->mw[m] - g->front_seq) < 0)
                    w_move(g, m, g->front_seq);
                continue;
            }
        }
        /* its own messages, read out of order, gone, expired (an expired
         * record's marks go with it) */
        r = rec_at(g, g->mw[m]);
        if (!xb_clear(s, g, g->mw[m], m) && !(r->meta & M_DEAD) &&
            !(have_h && !rec_visible(r, h)) &&
            !(rec_sender(r) == m && (r->meta & M_SLIVE)))
            return;
        sdone_clear(chunk_of(g, g->mw[m]), r, m);
        w_move(g, m, g->mw[m] + 1);
    }
}

/* Visible records in [a, b) (a and b at or past the front). */
static uint32_t vis_count(const struct rgroup *g, uint32_t a, uint32_t b,
                          uint64_t h)
{
    uint32_t n = 0;

    if (g->ndead == 0 && (uint64_t)g->min_ts * 1000 >= h)
        return b - a;
    while (a != b) {
        const struct rchunk *c = chunk_of(g, a);
        uint32_t end = g->base_seq + (chunk_idx(g, a) + 1) * CHUNK;

        if ((int32_t)(end - b) > 0)
            end = b;
        if (chunk_clean(c, h)) {
            n += end - a;
        } else {
            for (; a != end; a++)
                n += rec_visible(rec_at(g, a), h);
        }
        a = end;
    }
    return n;
}

/* Clears m's out-of-order reads in [a, b); returns how many of them were
 * visible. */
static uint32_t xb_absorb(struct rcpt_store *s, struct rgroup *g, uint32_t m,
                          uint32_t a, uint32_t b, uint64_t h)
{
    uint32_t n = 0;

    while (g->nxb > 0 && a != b) {
        uint32_t ci = chunk_idx(g, a), first = g->base_seq + ci * CHUNK;
        uint32_t end = first + CHUNK;
        struct rchunk *c = cr_at(&g->chunks, ci);

        if ((int32_t)(end - b) > 0)
            end = b;
        for (uint32_t q = a; c->xb != NULL && q != end; q++)
            if (c->xb->slot[q - first] != 0 && xb_clear(s, g, q, m))
                n += rec_visible(&chunk_recs(g, ci)[q - first], h);
        a = end;
    }
    return n;
}

/* Clears m's marks as a sender behind its watermark in [a, b) and
 * returns how many of those messages are visible: they are done for it.
 * Only chunks holding such marks are looked at. */
static uint32_t own_absorb(struct rgroup *g, uint32_t m, uint32_t a, uint32_t b,
                           uint64_t h)
{
    uint32_t n = 0;

    while (a != b) {
        uint32_t ci = chunk_idx(g, a), end = g->base_seq + (ci + 1) * CHUNK;
        struct rchunk *c = cr_at(&g->chunks, ci);

        if ((int32_t)(end - b) > 0)
            end = b;
        for (; c->nsdone > 0 && a != end; a++) {
            struct rmsg *r =
                &chunk_recs(g, ci)[(a - g->base_seq) & (CHUNK - 1)];

            if (sdone_clear(c, r, m))
                n += rec_visible(r, h);
        }
        a = end;
    }
    return n;
}

/*
 * Moves m's watermark up to `to` (READUPTO: every record before it has a
 * msgid <= upto) and returns how many visible records m became a reader of
 * on the way: those it was a recipient of and had not read out of order.
 * Frees the gaps and bitmap bits it passes. Never allocates.
 */
static uint64_t absorb(struct rcpt_store *s, struct rgroup *g, uint32_t m,
                       uint32_t to, uint64_t h)
{
    uint32_t a, end = to, lo, hi;
    uint64_t n;

    if ((int32_t)(g->mw[m] - g->front_seq) < 0)
        w_move(g, m, g->front_seq);
    a = g->mw[m];
    n = vis_count(g, a, to, h);
    n -= xb_absorb(s, g, m, a, to, h);
    n -= own_absorb(g, m, a, to, h);
    gap_run(g, m, &lo, &hi);
    while (lo < hi && rel(g, g->gaps[lo].from) < rel(g, to)) {
        struct rgap gp = g->gaps[lo];

        n -= vis_count(g, at_front(g, gp.from),
                       rel(g, gp.to) < rel(g, to) ? at_front(g, gp.to) : to, h);
        if (rel(g, gp.to) <= rel(g, to)) {
            rs_remove(g, &g->N, gp.from);
            rs_remove(g, &g->P, gp.to);
        } else { /* to falls in it: the watermark goes to its end */
            end = gp.to;
            rs_remove(g, &g->N, gp.from);
            rs_remove(g, &g->P, g->mw[m]);
            g->mw[m] = a = gp.to;
        }
        gap_del(g, lo);
        hi--;
    }
    if ((g->mflag[m] & F_OPEN) && rel(g, g->mq[m]) < rel(g, to)) {
        n -= vis_count(g, at_front(g, g->mq[m]), to, h);
        park(g, m);
        return n;
    }
    if (end == to)
        w_move(g, m, to);
    return n;
}

/* ---- Members ----------------------------------------------------------- */

/* Room for one more mapid (x1.5). 0 or -1 with nothing changed. */
static int members_reserve(struct rcpt_store *s, struct rgroup *g)
{
    uint32_t cap = g->mapcap < 8 ? 8 : g->mapcap + g->mapcap / 2;
    uint32_t ow = words_for(g->mapcap), nw;
    uint64_t *uid, *q;
    uint32_t *w, *qf, *o;
    uint8_t *fl;

    if (g->nmap < g->mapcap)
        return 0;
    if (cap > RCPT_MAX_MEMBERS)
        cap = RCPT_MAX_MEMBERS;
    nw = words_for(cap);
    uid = mem_alloc(&s->mem, cap * sizeof(*uid));
    w = mem_alloc(&s->mem, cap * sizeof(*w));
    qf = mem_alloc(&s->mem, cap * sizeof(*qf));
    fl = mem_alloc(&s->mem, cap);
    q = mem_zalloc(&s->mem, nw * sizeof(*q));
    o = mem_alloc(&s->mem, cap * sizeof(*o));
    if (uid == NULL || w == NULL || qf == NULL || fl == NULL || q == NULL ||
        o == NULL) {
        mem_free(&s->mem, uid, cap * sizeof(*uid));
        mem_free(&s->mem, w, cap * sizeof(*w));
        mem_free(&s->mem, qf, cap * sizeof(*qf));
        mem_free(&s->mem, fl, cap);
        mem_free(&s->mem, q, nw * sizeof(*q));
        mem_free(&s->mem, o, cap * sizeof(*o));
        return -1;
    }
    if (g->nmap > 0) {
        memcpy(uid, g->muid, g->nmap * sizeof(*uid));
        memcpy(w, g->mw, g->nmap * sizeof(*w));
        memcpy(qf, g->mq, g->nmap * sizeof(*qf));
        memcpy(fl, g->mflag, g->nmap);
        memcpy(o, g->O.v, g->O.n * sizeof(*o));
    }
    if (ow > 0)
        memcpy(q, g->quit, ow * sizeof(*q));
    mem_free(&s->mem, g->muid, g->mapcap * sizeof(*uid));
    mem_free(&s->mem, g->mw, g->mapcap * sizeof(*w));
    mem_free(&s->mem, g->mq, g->mapcap * sizeof(*qf));
    mem_free(&s->mem, g->mflag, g->mapcap);
    mem_free(&s->mem, g->quit, ow * sizeof(*q));
    mem_free(&s->mem, g->O.v, g->mapcap * sizeof(*o));
    g->muid = uid;
    g->mw = w;
    g->mq = qf;
    g->mflag = fl;
    g->quit = q;
    g->O.v = o;
    g->O.cap = cap;
    g->mapcap = cap;
    return 0;
}

/* Room for a new member (and its watermark in P). 0 or -1. */
static int member_reserve(struct rcpt_store *s, struct rgroup *g, uint64_t uid)
{
    if (members_reserve(s, g) != 0 || rs_reserve(s, &g->P, 1) != 0)
        return -1;
    return uid == RCPT_UID_ANON ? 0 : midx_reserve(s, g);
}

/* Gives uid, not a member yet, the next mapid (room made by
 * member_reserve), its watermark at the next record (it receives what is
 * sent from now on); RCPT_UID_ANON gets an erased user's mapid, in no uid
 * map. A restored group's members get their marks later. */
static void member_add(struct rcpt_store *s, struct rgroup *g, uint64_t uid)
{
    uint32_t m = g->nmap++;

    g->muid[m] = uid;
    g->mw[m] = g->next_seq;
    g->mq[m] = 0;
    g->mflag[m] = 0;
    if (uid != RCPT_UID_ANON) {
        midx_place(s, g->midx, g->midx_cap, uid, m);
        g->midx_count++;
    }
    if (!g->unmarked)
        rs_insert(g, &g->P, g->next_seq);
}

static void quit_mark(struct rgroup *g, uint32_t m)
{
    g->quit[m / 64] |= UINT64_C(1) << (m % 64);
    g->nquit++;
    g->quit_changed = true;
}

/* m has just quit: parked if it had read everything, else an open gap from
 * the next record on. Never allocates (O has room for every member). */
static void member_quit(struct rcpt_store *s, struct rgroup *g, uint32_t m)
{
    uint32_t lo, hi;

    normalize(s, g, m, false, 0, NORM_STEPS);
    if (g->mw[m] == g->next_seq) {
        park(g, m);
        return;
    }
    gap_run(g, m, &lo, &hi);
    if (lo < hi && g->gaps[hi - 1].to == g->next_seq) {
        /* its last gap runs up to now: it becomes the open one */
        g->mq[m] = g->gaps[hi - 1].from;
        rs_remove(g, &g->N, g->mq[m]);
        rs_remove(g, &g->P, g->next_seq);
        gap_del(g, hi - 1);
    } else {
        g->mq[m] = g->next_seq;
    }
    rs_insert(g, &g->O, g->mq[m]);
    g->mflag[m] |= F_OPEN;
}

/* ---- Groups ------------------------------------------------------------ */

static struct rgroup *group_get(const struct rcpt_store *s, uint64_t gid)
{
    return (struct rgroup *)(uintptr_t)u64map_get(s->groups, gid);
}

/* gid's group, created empty when absent; NULL on allocation failure. */
static struct rgroup *group_need(struct rcpt_store *s, uint64_t gid)
{
    struct rgroup *g = group_get(s, gid);

    if (g != NULL)
        return g;
    g = mem_zalloc(&s->mem, sizeof(*g));
    if (g == NULL)
        return NULL;
    g->min_ts = UINT32_MAX;
    g->plo = PLO_NONE(g);
    if (u64map_put(s->groups, gid, (uint64_t)(uintptr_t)g) != 0) {
        mem_free(&s->mem, g, sizeof(*g));
        return NULL;
    }
    return g;
}

/* Frees chunk 0 (records, bitmaps). */
static void chunk_drop(struct rcpt_store *s, struct rgroup *g)
{
    struct rchunk *c = cr_at(&g->chunks, 0);

    if (c->xb != NULL) {
        mem_free(&s->mem, c->xb, xb_size(c->xb->cap, c->xb->stride));
        g->nxb--;
    }
    g->ndead -= c->ndead;
    mem_free(&s->mem, chunk_recs(g, 0),
             chunk_bytes(g->chunks.n == 1 ? g->tailcap : CHUNK));
    cr_shift(s, &g->chunks);
    g->min_ts = UINT32_MAX;
    for (uint32_t i = 0; i < g->chunks.n; i++)
        if (cr_at(&g->chunks, i)->min_ts < g->min_ts)
            g->min_ts = cr_at(&g->chunks, i)->min_ts;
}

static void chunks_free(struct rcpt_store *s, struct rgroup *g)
{
    while (g->chunks.n > 0)
        chunk_drop(s, g);
    g->tailcap = 0;
    g->top = 0;
}

static void group_free(struct rcpt_store *s, struct rgroup *g)
{
    chunks_free(s, g);
    cr_resize(s, &g->chunks, 0); /* room a failed send left */
    while (g->epochs.n > 0) {
        struct repoch *e = pq_shift(s, &g->epochs);

        mem_free(&s->mem, e, epoch_size(e->nwords));
    }
    tbl_free(s, &g->idx);
    tbl_free(s, &g->old);
    mem_free(&s->mem, g->muid, g->mapcap * sizeof(*g->muid));
    mem_free(&s->mem, g->mw, g->mapcap * sizeof(*g->mw));
    mem_free(&s->mem, g->mq, g->mapcap * sizeof(*g->mq));
    mem_free(&s->mem, g->mflag, g->mapcap);
    mem_free(&s->mem, g->quit, words_for(g->mapcap) * sizeof(*g->quit));
    mem_free(&s->mem, g->O.v, g->mapcap * sizeof(*g->O.v));
    mem_free(&s->mem, g->midx, g->midx_cap * sizeof(*g->midx));
    mem_free(&s->mem, g->P.v, g->P.cap * sizeof(*g->P.v));
    mem_free(&s->mem, g->N.v, g->N.cap * sizeof(*g->N.v));
    mem_free(&s->mem, g->gaps, g->gapcap * sizeof(*g->gaps));
    mem_free(&s->mem, g->steps, g->scap * sizeof(*g->steps));
    mem_free(&s->mem, g->late, g->lcap * sizeof(*g->late));
    mem_free(&s->mem, g, sizeof(*g));
}

/* Frees gid's group if nobody ever joined and it holds no message. */
static void group_drop_if_empty(struct rcpt_store *s, uint64_t gid,
                                struct rgroup *g)
{
    if (g->nmap != 0 || group_live(g) != 0 || g->unmarked)
        return;
    u64map_del(s->groups, gid);
    group_free(s, g);
}

/* Room for the next record. 0 or -1 (a grown chunk is kept). */
static int chunk_reserve(struct rcpt_store *s, struct rgroup *g)
{
    uint32_t used = g->next_seq - g->base_seq;
    struct rmsg *r;

    if (g->chunks.n > 0 && used < (g->chunks.n - 1) * CHUNK + g->tailcap)
        return 0;
    if (cr_reserve(s, &g->chunks) != 0)
        return -1;
    if (g->chunks.n > 0 && g->tailcap < CHUNK) {
        /* the only chunk, still small: double it */
        r = mem_realloc(&s->mem, chunk_recs(g, 0), chunk_bytes(g->tailcap),
                        chunk_bytes(g->tailcap * 2));
        if (r == NULL)
            return -1;
        *cr_rec(&g->chunks, 0) = r;
        g->tailcap *= 2;
        return 0;
    }
    r = mem_alloc(&s->mem, chunk_bytes(g->chunks.n == 0 ? CHUNK_MIN : CHUNK));
    if (r == NULL)
        return -1;
    g->chunks.n++;
    *cr_rec(&g->chunks, g->chunks.n - 1) = r;
    *cr_at(&g->chunks, g->chunks.n - 1) =
        (struct rchunk){NULL, g->top, UINT32_MAX, 0, 0, 0};
    if (g->chunks.n == 1)
        g->tailcap = CHUNK_MIN;
    return 0;
}

/* Makes live record seq invisible for good: frees its bitmap, unindexes
 * it. */
static void msg_kill(struct rcpt_store *s, struct rgroup *g, uint32_t seq)
{
    struct rchunk *c = chunk_of(g, seq);
    uint32_t off = (seq - g->base_seq) & (CHUNK - 1);
    struct rmsg *m = rec_at(g, seq);

    if (c->xb != NULL && c->xb->slot[off] != 0)
        xb_free_slot(s, g, c, off);
    m->meta |= M_DEAD;
    c->ndead++;
    g->ndead++;
    g->nrec--;
    idx_remove(s, g, m->msgid);
    s->nmsgs--;
}

/* Rewrites every position below the front to the front (they all compare
 * as the front already), so that no distance ever wraps; drops the gaps
 * left entirely behind it. O(members + gaps). */
static void group_clamp(struct rgroup *g)
{
    struct rset *sets[3] = {&g->P, &g->N, &g->O};

    for (uint32_t m = 0; m < g->nmap; m++) {
        if ((int32_t)(g->mw[m] - g->front_seq) < 0)
            g->mw[m] = g->front_seq;
        if ((int32_t)(g->mq[m] - g->front_seq) < 0)
            g->mq[m] = g->front_seq;
    }
    for (uint32_t i = g->ngaps; i-- > 0;) {
        struct rgap *gp = &g->gaps[i];

        if ((int32_t)(gp->to - g->front_seq) <= 0) {
            rs_remove(g, &g->N, gp->from);
            rs_remove(g, &g->P, gp->to);
            gap_del(g, i);
        } else if ((int32_t)(gp->from - g->front_seq) < 0) {
            gp->from = g->front_seq;
        }
    }
    for (int k = 0; k < 3; k++)
        for (uint32_t i = 0; i < sets[k]->n; i++)
            if ((int32_t)(sets[k]->v[i] - g->front_seq) < 0)
                sets[k]->v[i] = g->front_seq;
    g->plo = g->P.n > 0 ? g->P.v[0] : PLO_NONE(g);
}

/* Drops the oldest record; frees its chunk once passed, every chunk when
 * the group holds no more records, and what nobody uses any more. */
static void drop_front(struct rcpt_store *s, struct rgroup *g)
{
    struct rchunk *c = chunk_of(g, g->front_seq);

    if (!(rec_at(g, g->front_seq)->meta & M_DEAD))
        msg_kill(s, g, g->front_seq);
    c->ndead--;
    g->ndead--;
    g->front_seq++;
    if (g->front_seq == g->next_seq) {
        chunks_free(s, g);
        g->base_seq = g->front_seq;
    } else if (g->front_seq - g->base_seq == CHUNK) {
        chunk_drop(s, g);
        g->base_seq += CHUNK;
    }
    epoch_trim(s, g);
    step_trim(s, g);
    late_trim(s, g);
    if (g->front_seq % CLAMP_EVERY == 0) {
        group_clamp(g);
        group_trim(s, g);
    }
}

/* Drops up to max records at the front that are dead or older than the
 * horizon; returns how many. */
static size_t group_expire(struct rcpt_store *s, struct rgroup *g,
                           uint64_t horizon_ms, size_t max)
{
    size_t n = 0;

    while (n < max && group_live(g) > 0 &&
           !rec_visible(rec_at(g, g->front_seq), horizon_ms)) {
        drop_front(s, g);
        n++;
    }
    return n;
}

/* The visible record of msgid (its seq in *seq), or NULL. */
static struct rmsg *msg_find(const struct rcpt_store *s, const struct rgroup *g,
                             uint64_t msgid, uint64_t horizon_ms, uint32_t *seq)
{
    struct rmsg *m;

    if (g == NULL || !idx_find(s, g, msgid, seq))
        return NULL;
    m = rec_at(g, *seq);
    return rec_visible(m, horizon_ms) ? m : NULL;
}

/* Room for the next record of (nmemb, nquit): its chunk slot, index entry,
 * step and, when late, its place in the late list. 0 or -1; the group
 * stays valid either way. */
static int msg_reserve(struct rcpt_store *s, struct rgroup *g, uint32_t nmemb,
                       uint32_t nquit, bool late)
{
    if (chunk_reserve(s, g) != 0 || idx_reserve(s, g) != 0 ||
        step_reserve(s, g, nmemb, nquit) != 0)
        return -1;
    return late ? late_reserve(s, g) : 0;
}

/* Whether a record of msgid appended now is late. */
static bool msg_late(const struct rgroup *g, uint64_t msgid)
{
    return g->chunks.n > 0 && msgid < g->top;
}

/* Appends *rec (room made by msg_reserve) sent to nmemb members of whom
 * nquit had quit; returns its seq. */
static uint32_t msg_append(struct rcpt_store *s, struct rgroup *g,
                           struct rmsg rec, uint32_t nmemb, uint32_t nquit)
{
    uint32_t seq = g->next_seq;
    struct rchunk *c;

    step_push(g, nmemb, nquit);
    if (msg_late(g, rec.msgid)) {
        rec.meta |= M_LATE;
        g->late[g->ln++] = seq;
    } else {
        g->top = rec.msgid;
    }
    g->next_seq++;
    c = chunk_of(g, seq);
    *rec_at(g, seq) = rec;
    c->top = g->top;
    c->late |= (rec.meta & M_LATE) != 0;
    if (rec.ts < c->min_ts)
        c->min_ts = rec.ts;
    if (rec.ts < g->min_ts)
        g->min_ts = rec.ts;
    idx_insert(s, g, rec.msgid, seq);
    g->nrec++;
    s->nmsgs++;
    return seq;
}

/* The sender's mapid as a record of nmemb members stores it. */
static uint32_t sender_mapid(const struct rcpt_store *s, const struct rgroup *g,
                             uint64_t sender, uint32_t nmemb)
{
    uint32_t m = member(s, g, sender);

    return m < nmemb ? m : NOMAP;
}

/* ---- API --------------------------------------------------------------- */

struct rcpt_store *rcpt_create(void)
{
    struct rcpt_store *s = mem_zalloc(NULL, sizeof(*s));

    if (s == NULL)
        return NULL;
    mem_acct_init(&s->mem, NULL);
    s->groups = u64map_create(&s->mem);
    if (s->groups == NULL) {
        mem_free(NULL, s, sizeof(*s));
        return NULL;
    }
    /* The process's secret seed (hash.h), so that msgids and uids cannot
     * be chosen to pile up in one probe run. */
    s->seed = hash_seed(HASH_RCPT_INDEX);
    return s;
}

static void free_group_visit(uint64_t gid, uint64_t val, void *ctx)
{
    (void)gid;
    group_free(ctx, (struct rgroup *)(uintptr_t)val);
}

void rcpt_destroy(struct rcpt_store *s)
{
    uint64_t cursor = 0;

    if (s == NULL)
        return;
    do
        u64map_scan(s->groups, &cursor, SIZE_MAX, free_group_visit, s);
    while (cursor != 0);
    u64map_destroy(s->groups);
    mem_free(NULL, s, sizeof(*s));
}

/* A rejoin of quit member m: it receives what is sent from now on. */
static void member_rejoin(struct rgroup *g, uint32_t m)
{
    uint32_t lo, hi, q = g->mq[m];

    g->quit[m / 64] &= ~(UINT64_C(1) << (m % 64));
    g->nquit--;
    g->quit_changed = true;
    if (g->mflag[m] & F_PARKED) {
        g->mflag[m] &= (uint8_t)~F_PARKED;
        g->mw[m] = g->next_seq;
        rs_insert(g, &g->P, g->next_seq);
        return;
    }
    g->mflag[m] &= (uint8_t)~F_OPEN;
    rs_remove(g, &g->O, q);
    if (q == g->next_seq)
        return; /* nothing was sent meanwhile */
    gap_run(g, m, &lo, &hi);
    if (lo < hi && g->gaps[hi - 1].to == q) {
        g->gaps[hi - 1].to = g->next_seq;
        rs_move(g, &g->P, q, g->next_seq);
        return;
    }
    gap_add(g, m, q, g->next_seq);
    rs_insert(g, &g->N, q);
    rs_insert(g, &g->P, g->next_seq);
}

int rcpt_join(struct rcpt_store *s, uint64_t gid, uint64_t uid,
              uint32_t max_members, uint32_t *mapid)
{
    struct rgroup *g;
    uint32_t m;
    int rc = RCPT_ENOMEM;

    if (uid == RCPT_UID_ANON)
        return RCPT_EANON;
    g = group_need(s, gid);
    if (g == NULL)
        return RCPT_ENOMEM;
    m = member(s, g, uid);
    if (m != NOMAP) {
        if (bit_test(g->quit, m)) {
            /* a rejoin may add a gap: room first */
            if (rs_reserve(s, &g->P, 1) != 0 || rs_reserve(s, &g->N, 1) != 0 ||
                gap_reserve(s, g) != 0)
                return RCPT_ENOMEM;
            member_rejoin(g, m);
        }
        *mapid = m;
        return RCPT_OK;
    }
    if (g->nmap >= max_members || g->nmap >= RCPT_MAX_MEMBERS) {
        rc = RCPT_ELIMIT;
        goto error;
    }
    if (member_reserve(s, g, uid) != 0)
        goto error;
    member_add(s, g, uid);
    *mapid = g->nmap - 1;
    return RCPT_OK;

error:
    group_drop_if_empty(s, gid, g);
    return rc;
}

bool rcpt_quit(struct rcpt_store *s, uint64_t gid, uint64_t uid)
{
    struct rgroup *g = group_get(s, gid);
    uint32_t m;

    if (g == NULL || (m = member(s, g, uid)) == NOMAP || bit_test(g->quit, m))
        return false;
    quit_mark(g, m);
    member_quit(s, g, m);
    group_trim(s, g);
    return true;
}

/* A resend of a visible msgid: the same answer, or RCPT_EEXIST. */
static int send_again(const struct rcpt_store *s, const struct rgroup *g,
                      const struct rmsg *m, uint32_t seq, uint64_t sender,
                      uint32_t *nrcpt)
{
    if (sender_mapid(s, g, sender, step_of(g, seq)->nmemb) != rec_sender(m))
        return RCPT_EEXIST;
    *nrcpt = rec_nrcpt(g, m, seq);
    return RCPT_OK;
}

int rcpt_send(struct rcpt_store *s, uint64_t gid, uint64_t msgid,
              uint64_t sender, uint64_t ts_ms, uint64_t horizon_ms,
              uint32_t *nrcpt)
{
    struct rgroup *g;
    uint32_t seq, sm, n;
    uint64_t ts = ts_ms / 1000 + (ts_ms % 1000 != 0);
    bool live;
    int rc = RCPT_ENOMEM;

    if (ts_ms < horizon_ms)
        return RCPT_EEXPIRED;
    g = group_need(s, gid);
    if (g == NULL)
        return RCPT_ENOMEM;
    group_expire(s, g, horizon_ms, SEND_EXPIRE);
    if (idx_find(s, g, msgid, &seq)) {
        if (rec_visible(rec_at(g, seq), horizon_ms))
            return send_again(s, g, rec_at(g, seq), seq, sender, nrcpt);
        msg_kill(s, g, seq); /* expired, not yet dropped: a new message */
    }
    if (group_live(g) >= RCPT_MAX_MESSAGES) {
        rc = RCPT_ELIMIT;
        goto error;
    }
    sm = sender_mapid(s, g, sender, g->nmap);
    live = sm != NOMAP && !bit_test(g->quit, sm);
    n = g->nmap - g->nquit - live;
    /* Every step below that can fail leaves a valid group behind. */
    if (epoch_take(s, g) != 0 ||
        msg_reserve(s, g, g->nmap, g->nquit, msg_late(g, msgid)) != 0)
        goto error;
    if (live)
        normalize(s, g, sm, true, horizon_ms, NORM_STEPS);
    seq = msg_append(
        s, g,
        (struct rmsg){msgid, ts > UINT32_MAX ? UINT32_MAX : (uint32_t)ts,
                      (sm == NOMAP ? 0 : sm + 1) | (live ? M_SLIVE : 0)},
        g->nmap, g->nquit);
    if (live) {
        /* its own message: done for it, by its watermark if it had read
         * everything, else by the record's mark */
        if (g->mw[sm] == seq) {
            w_move(g, sm, seq + 1);
        } else {
            rec_at(g, seq)->meta |= M_SDONE;
            chunk_of(g, seq)->nsdone++;
        }
        group_trim(s, g);
    }
    *nrcpt = n;
    return RCPT_OK;

error:
    group_drop_if_empty(s, gid, g);
    return rc;
}

/* m, pending at q and not an out-of-order reader of it, reads it: in
 * order (its watermark was there) or out of it (its slot reserved). */
static void mark(struct rcpt_store *s, struct rgroup *g, uint32_t m, uint32_t q,
                 uint64_t h)
{
    /* (a watermark NORM_STEPS or more below cannot reach it now) */
    if (rel(g, q) - rel(g, g->mw[m]) < NORM_STEPS)
        normalize(s, g, m, true, h, NORM_STEPS);
    if (g->mw[m] == q) {
        w_move(g, m, q + 1);
        normalize(s, g, m, true, h, NORM_STEPS);
    } else {
        xb_set(g, q, m);
    }
}

/* Whether m can newly read record q (visible): it is pending there and
 * has not read it out of order. */
static bool can_mark(const struct rgroup *g, uint32_t m, uint32_t q)
{
    const struct rmsg *r = rec_at(g, q);

    return pending(g, m, q) && !xb_test(g, q, m) &&
           !(rec_sender(r) == m && (r->meta & M_SLIVE));
}

/* msgids whose records RCPT.READ remembers between its passes (more
 * are looked up again). */
#define READ_SEQS 64

/* The seq of visible msgid where somebody is pending, else NONE. */
static uint32_t read_target(const struct rcpt_store *s, const struct rgroup *g,
                            uint64_t msgid, uint64_t h)
{
    uint32_t q;

    if (msg_find(s, g, msgid, h, &q) == NULL || all_past(g, q))
        return NONE;
    return q;
}

int rcpt_mark_read(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                   const uint64_t *msgids, size_t n, uint64_t horizon_ms,
                   uint64_t *newly)
{
    struct rgroup *g = group_get(s, gid);
    uint32_t stack[READ_SEQS], m, q;
    size_t i, some = 0;

#define TARGET(i)                                                              \
    (n <= READ_SEQS ? stack[i] : read_target(s, g, msgids[i], horizon_ms))
    *newly = 0;
    if (g == NULL)
        return RCPT_OK;
    if (n == 1) { /* RCPT.READ of one msgid, the usual: one pass */
        q = read_target(s, g, msgids[0], horizon_ms);
        if (q == NONE || (m = member(s, g, uid)) == NOMAP || !can_mark(g, m, q))
            return RCPT_OK;
        if (g->mw[m] != q &&
            xb_reserve(s, g, q, RCPT_BYTES(step_of(g, q)->nmemb)) != 0)
            return RCPT_ENOMEM;
        mark(s, g, m, q, horizon_ms);
        *newly = 1;
        xb_trim(s, g, q);
        group_trim(s, g);
        return RCPT_OK;
    }
    /* Messages everyone has read by watermark (most) end it here. */
    for (i = 0; i < n; i++) {
        q = read_target(s, g, msgids[i], horizon_ms);
        some += q != NONE;
        if (n <= READ_SEQS)
            stack[i] = q;
    }
    if (some == 0 || (m = member(s, g, uid)) == NOMAP)
        return RCPT_OK;
    /* A read out of order needs room: a slot for every message that may
     * become one, given back afterwards when unused. */
    for (i = 0; i < n; i++) {
        q = TARGET(i);
        if (q != NONE && can_mark(g, m, q) && g->mw[m] != q &&
            xb_reserve(s, g, q, RCPT_BYTES(step_of(g, q)->nmemb)) != 0)
            break;
    }
    if (i < n) {
        for (size_t k = 0; k <= i; k++)
            if ((q = TARGET(k)) != NONE)
                xb_trim(s, g, q);
        return RCPT_ENOMEM;
    }
    for (i = 0; i < n; i++)
        if ((q = TARGET(i)) != NONE && can_mark(g, m, q)) {
            mark(s, g, m, q, horizon_ms);
            (*newly)++;
        }
    for (i = 0; g->nxb > 0 && i < n; i++)
        if ((q = TARGET(i)) != NONE)
            xb_trim(s, g, q);
#undef TARGET
    group_trim(s, g);
    return RCPT_OK;
}

uint32_t rcpt_read(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                   uint64_t msgid, uint64_t horizon_ms)
{
    uint64_t n = 0;

    return rcpt_mark_read(s, gid, uid, &msgid, 1, horizon_ms, &n) == RCPT_OK
               ? (uint32_t)n
               : 0;
}

/* Late records from late index i on that m may read by READUPTO upto. */
static bool late_candidate(const struct rgroup *g, uint32_t m, uint32_t q,
                           uint64_t upto, uint64_t h)
{
    const struct rmsg *r = rec_at(g, q);

    return r->msgid <= upto && rec_visible(r, h) && can_mark(g, m, q);
}

int rcpt_mark_upto(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                   uint64_t upto, uint64_t horizon_ms, uint64_t *newly)
{
    struct rgroup *g = group_get(s, gid);
    uint32_t m, to, first, i;

    *newly = 0;
    if (g == NULL || (m = member(s, g, uid)) == NOMAP ||
        (g->mflag[m] & F_PARKED))
        return RCPT_OK;
    to = upto_pos(g, upto);
    if (rel(g, to) == 0)
        to = g->front_seq;
    /* Late msgids past the watermark's new place: one by one, room first.
     * (Every step of the reservation is given back on failure.) */
    first = late_lb(g, to);
    for (i = first; i < g->ln; i++)
        if (late_candidate(g, m, g->late[i], upto, horizon_ms) &&
            g->mw[m] != g->late[i] &&
            xb_reserve(s, g, g->late[i],
                       RCPT_BYTES(step_of(g, g->late[i])->nmemb)) != 0)
            break;
    if (i < g->ln) {
        for (uint32_t k = first; k <= i; k++)
            xb_trim(s, g, g->late[k]);
        return RCPT_ENOMEM;
    }
    if (rel(g, g->mw[m]) < rel(g, to))
        *newly += absorb(s, g, m, to, horizon_ms);
    for (i = first; i < g->ln && !(g->mflag[m] & F_PARKED); i++)
        if (late_candidate(g, m, g->late[i], upto, horizon_ms)) {
            mark(s, g, m, g->late[i], horizon_ms);
            (*newly)++;
        }
    for (i = first; i < g->ln; i++)
        xb_trim(s, g, g->late[i]);
    normalize(s, g, m, true, horizon_ms, NORM_STEPS);
    group_trim(s, g);
    return RCPT_OK;
}

uint64_t rcpt_read_upto(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                        uint64_t upto, uint64_t horizon_ms)
{
    uint64_t n = 0;

    return rcpt_mark_upto(s, gid, uid, upto, horizon_ms, &n) == RCPT_OK ? n : 0;
}

int rcpt_count(const struct rcpt_store *s, uint64_t gid, uint64_t msgid,
               uint64_t horizon_ms, uint32_t *nread, uint32_t *nunread)
{
    const struct rgroup *g = group_get(s, gid);
    uint32_t seq, nrcpt;
    const struct rmsg *m = msg_find(s, g, msgid, horizon_ms, &seq);

    if (m == NULL)
        return RCPT_ENOMSG;
    nrcpt = rec_nrcpt(g, m, seq);
    *nunread = all_past(g, seq) ? 0 : unread_of(g, m, seq);
    *nread = nrcpt - *nunread;
    return RCPT_OK;
}

int rcpt_list(const struct rcpt_store *s, uint64_t gid, uint64_t msgid,
              uint64_t horizon_ms, bool want_read, uint32_t offset,
              uint32_t count, rcpt_uid_fn fn, void *ctx, uint32_t *n)
{
    const struct rgroup *g = group_get(s, gid);
    uint32_t seq, skip = offset, stride = 0, nmemb, sender;
    const struct rmsg *m = msg_find(s, g, msgid, horizon_ms, &seq);
    const struct repoch *e;
    const uint8_t *x;
    int32_t rq;
    bool all = false;

    if (m == NULL)
        return RCPT_ENOMSG;
    e = epoch_of(g, seq);
    x = g->nxb ? xb_find(g, seq, &stride) : NULL;
    nmemb = step_of(g, seq)->nmemb;
    sender = rec_sender(m);
    rq = (int32_t)rel(g, seq);
    all = all_past(g, seq); /* every recipient has read it */
    *n = 0;
    /*
     * Word by word of 64 mapids: the recipients (below nmemb, not quit at
     * send, not the sender); of those, who has read it: its watermark is
     * past it (or it is parked: it quit after reading everything up to its
     * quit, which came after this message), or it read it out of order.
     */
    for (uint32_t w = 0; w < RCPT_WORDS(nmemb) && *n < count; w++) {
        uint64_t rc = ~UINT64_C(0), rd = 0, want;
        uint32_t c;

        if (w == nmemb / 64)
            rc = (UINT64_C(1) << (nmemb % 64)) - 1;
        if (e != NULL && w < e->nwords)
            rc &= ~e->quit[w];
        if (sender != NOMAP && sender / 64 == w)
            rc &= ~(UINT64_C(1) << (sender % 64));
        if (all) {
            rd = rc;
        } else {
            for (uint64_t b = rc; b != 0; b &= b - 1) {
                uint32_t k = w * 64 + (uint32_t)__builtin_ctzll(b);

                if ((int32_t)(g->mw[k] - g->front_seq) > rq ||
                    (g->mflag[k] & F_PARKED) ||
                    (x != NULL && k / 8 < stride && byte_test(x, k)))
                    rd |= b & -b;
            }
        }
        want = want_read ? rd : rc & ~rd;
        c = (uint32_t)__builtin_popcountll(want);
        if (skip >= c) {
            skip -= c;
            continue;
        }
        for (; skip > 0; skip--)
            want &= want - 1;
        for (; want != 0 && *n < count; want &= want - 1, (*n)++)
            fn(g->muid[w * 64 + (uint32_t)__builtin_ctzll(want)], ctx);
    }
    return RCPT_OK;
}

size_t rcpt_expire(struct rcpt_store *s, uint64_t gid, uint64_t horizon_ms,
                   size_t max)
{
    struct rgroup *g = group_get(s, gid);
    size_t n;

    if (g == NULL || g->unmarked)
        return 0;
    n = group_expire(s, g, horizon_ms, max);
    group_drop_if_empty(s, gid, g);
    return n;
}

struct step_pick {
    unsigned n;
    uint64_t gid[STEP_GROUPS];
};

static void step_visit(uint64_t gid, uint64_t val, void *ctx)
{
    struct step_pick *p = ctx;

    (void)val;
    p->gid[p->n++] = gid;
}

/* The groups are picked first and expired after the scan call, since a
 * scan callback may not delete from the map. */
size_t rcpt_expire_step(struct rcpt_store *s, uint64_t horizon_ms, size_t max)
{
    struct step_pick pick = {0, {0}};
    size_t n = 0;

    u64map_scan(s->groups, &s->cursor, STEP_GROUPS, step_visit, &pick);
    for (unsigned i = 0; i < pick.n && n < max; i++)
        n += rcpt_expire(s, pick.gid[i], horizon_ms, max - n);
    return n;
}

size_t rcpt_entries(const struct rcpt_store *s)
{
    return s->nmsgs;
}

size_t rcpt_groups(const struct rcpt_store *s)
{
    return u64map_count(s->groups);
}

/* Requested sizes (malloc's own overhead excluded), as the other stores. */
size_t rcpt_bytes(const struct rcpt_store *s)
{
    return sizeof(*s) + s->mem.bytes;
}

/* ---- Snapshots --------------------------------------------------------- */

_Static_assert(RCPT_NOSENDER == NOMAP, "senders pass through as stored");

/* Positions of a group's records as the walk hands them out (dead ones
 * left out): before[i], the live records before chunk i. */
struct posmap {
    const struct rgroup *g;
    uint32_t *before; /* NULL: no dead record, or counted chunk by chunk */
};

static uint32_t chunk_live_before(const struct rgroup *g, uint32_t ci,
                                  uint32_t end)
{
    uint32_t first = g->base_seq + ci * CHUNK, n = 0;
    const struct rchunk *c = cr_at(&g->chunks, ci);

    if ((int32_t)(first - g->front_seq) < 0)
        first = g->front_seq;
    if (c->ndead == 0)
        return end - first;
    for (; first != end; first++)
        n += !(rec_at(g, first)->meta & M_DEAD);
    return n;
}

static uint32_t pos_of(const struct posmap *pm, uint32_t seq)
{
    const struct rgroup *g = pm->g;
    uint32_t ci, n = 0;

    if (rel(g, seq) == 0)
        return 0;
    if (g->ndead == 0)
        return rel(g, seq);
    ci = chunk_idx(g, seq);
    if (pm->before != NULL) {
        n = pm->before[ci];
    } else {
        for (uint32_t k = 0; k < ci; k++)
            n += chunk_live_before(g, k, g->base_seq + (k + 1) * CHUNK);
    }
    if (seq == g->next_seq && ci == g->chunks.n)
        return n;
    return n + chunk_live_before(g, ci, seq);
}

struct scan_ctx {
    const struct rcpt_walk *w;
    void *ctx;
};

static void scan_marks(const struct rgroup *g, const struct scan_ctx *c)
{
    struct posmap pm = {g, NULL};
    uint32_t ngaps = 0;

    if (g->ndead > 0 && g->chunks.n > 0 &&
        (pm.before = malloc((g->chunks.n + 1) * sizeof(*pm.before))) != NULL) {
        pm.before[0] = 0;
        for (uint32_t k = 0; k < g->chunks.n; k++)
            pm.before[k + 1] =
                pm.before[k] +
                chunk_live_before(g, k,
                                  k + 1 == g->chunks.n
                                      ? g->next_seq
                                      : g->base_seq + (k + 1) * CHUNK);
    }
    /* Gaps behind the front, or over dead records only, are empty as
     * positions: left out. */
    for (uint32_t i = 0; i < g->ngaps; i++)
        ngaps += pos_of(&pm, g->gaps[i].from) < pos_of(&pm, g->gaps[i].to);
    c->w->marks(ngaps, c->ctx);
    for (uint32_t m = 0; m < g->nmap; m++) {

        if (g->mflag[m] & F_PARKED)
            c->w->mark(RCPT_PARKED, RCPT_NOPOS, c->ctx);
        else
            c->w->mark(pos_of(&pm, g->mw[m]),
                       (g->mflag[m] & F_OPEN) ? pos_of(&pm, g->mq[m])
                                              : RCPT_NOPOS,
                       c->ctx);
    }
    for (uint32_t i = 0; i < g->ngaps; i++) {
        struct rcpt_gap gp = {g->gaps[i].mapid, pos_of(&pm, g->gaps[i].from),
                              pos_of(&pm, g->gaps[i].to)};

        if (gp.from < gp.to)
            c->w->gap(&gp, c->ctx);
    }
    free(pm.before);
}

static void scan_group(uint64_t gid, uint64_t val, void *arg)
{
    const struct scan_ctx *c = arg;
    const struct rgroup *g = (const struct rgroup *)(uintptr_t)val;
    const struct repoch *cur = NULL;

    if (g->nmap == 0 && g->nrec == 0)
        return; /* dead records only: nothing to keep */
    c->w->group(gid, g->nmap, c->ctx);
    for (uint32_t m = 0; m < g->nmap; m++)
        c->w->member(g->muid[m], bit_test(g->quit, m), c->ctx);
    for (uint32_t q = g->front_seq; q != g->next_seq; q++) {
        const struct rmsg *m = rec_at(g, q);
        struct rcpt_msg_info mi = {
            m->msgid, m->ts, 0, rec_sender(m), (m->meta & M_SDONE) != 0, NULL};
        const struct repoch *e;
        uint32_t stride;

        if (m->meta & M_DEAD)
            continue;
        /* Epochs follow send order: once set, e is never NULL again. */
        e = epoch_of(g, q);
        if (e != cur) {
            c->w->epoch(e->nwords, e->quit, c->ctx);
            cur = e;
        }
        mi.nmemb = step_of(g, q)->nmemb;
        mi.reads = g->nxb ? xb_find(g, q, &stride) : NULL;
        c->w->msg(&mi, c->ctx);
    }
    scan_marks(g, c);
}

size_t rcpt_scan(const struct rcpt_store *s, uint64_t *cursor, size_t max,
                 const struct rcpt_walk *w, void *ctx)
{
    struct scan_ctx c = {w, ctx};

    return u64map_scan(s->groups, cursor, max, scan_group, &c);
}

bool rcpt_walk_group(const struct rcpt_store *s, uint64_t gid,
                     const struct rcpt_walk *w, void *ctx)
{
    struct scan_ctx c = {w, ctx};
    const struct rgroup *g = group_get(s, gid);

    if (g == NULL || (g->nmap == 0 && g->nrec == 0))
        return false;
    scan_group(gid, (uint64_t)(uintptr_t)g, &c);
    return true;
}

bool rcpt_group_held(const struct rcpt_store *s, uint64_t gid)
{
    const struct rgroup *g = group_get(s, gid);

    return g != NULL && (g->nmap != 0 || g->nrec != 0);
}

bool rcpt_drop_group(struct rcpt_store *s, uint64_t gid)
{
    struct rgroup *g = group_get(s, gid);

    if (g == NULL)
        return false;
    s->nmsgs -= g->nrec;
    u64map_del(s->groups, gid);
    group_free(s, g);
    return true;
}

int rcpt_restore_group(struct rcpt_store *s, uint64_t gid)
{
    struct rgroup *g;

    if (group_get(s, gid) != NULL)
        return RCPT_EEXIST;
    g = group_need(s, gid);
    if (g == NULL)
        return RCPT_ENOMEM;
    /* Unknown: the next send compares the quit set with the last epoch. */
    g->quit_changed = true;
    g->unmarked = true;
    return RCPT_OK;
}

int rcpt_restore_member(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                        bool quit)
{
    struct rgroup *g = group_get(s, gid);

    if (g == NULL || !g->unmarked || (uid == RCPT_UID_ANON && !quit))
        return 1;
    if (uid != RCPT_UID_ANON && member(s, g, uid) != NOMAP)
        return RCPT_EEXIST;
    if (g->nmap >= RCPT_MAX_MEMBERS)
        return RCPT_ELIMIT;
    if (member_reserve(s, g, uid) != 0)
        return RCPT_ENOMEM;
    member_add(s, g, uid);
    if (quit)
        quit_mark(g, g->nmap - 1);
    return RCPT_OK;
}

/* Whether w[0..nw) (nw <= words_for(n)) sets a bit >= n. */
static bool bits_past(const uint64_t *w, uint32_t nw, uint32_t n)
{
    return nw == words_for(n) && n % 64 != 0 && w[nw - 1] >> (n % 64) != 0;
}

int rcpt_restore_epoch(struct rcpt_store *s, uint64_t gid, uint32_t nwords,
                       const uint64_t *quit)
{
    struct rgroup *g = group_get(s, gid);

    if (g == NULL || !g->unmarked || nwords > words_for(g->nmap) ||
        (nwords > 0 && quit[nwords - 1] == 0) ||
        bits_past(quit, nwords, g->nmap))
        return 1;
    return epoch_push(s, g, nwords, quit) != 0 ? RCPT_ENOMEM : RCPT_OK;
}

int rcpt_restore_msg(struct rcpt_store *s, uint64_t gid,
                     const struct rcpt_msg_info *mi)
{
    struct rgroup *g = group_get(s, gid);
    const struct repoch *e;
    uint32_t seq, nquit, nb = RCPT_BYTES(mi->nmemb);
    bool live;

    if (g == NULL || !g->unmarked || mi->nmemb > g->nmap ||
        (mi->sender != NOMAP && mi->sender >= mi->nmemb))
        return 1;
    if (idx_find(s, g, mi->msgid, &seq))
        return RCPT_EEXIST;
    if (group_live(g) >= RCPT_MAX_MESSAGES)
        return RCPT_ELIMIT;
    e = g->epochs.n ? pq_at(&g->epochs, g->epochs.n - 1) : NULL;
    live = mi->sender != NOMAP && !epoch_quit(e, mi->sender);
    nquit = epoch_nquit(e, mi->nmemb);
    if (mi->reads != NULL) {
        /* readers out of order: recipients only, at least one */
        uint32_t k, nr = 0;

        for (k = 0; k < nb * 8; k++) {
            if (!byte_test(mi->reads, k))
                continue;
            if (k >= mi->nmemb || k == mi->sender || epoch_quit(e, k))
                return 1;
            nr++;
        }
        if (nr == 0)
            return 1;
    }
    if (mi->sender_done && !live)
        return 1;
    if (msg_reserve(s, g, mi->nmemb, nquit, msg_late(g, mi->msgid)) != 0)
        return RCPT_ENOMEM;
    /* Loading has no latency to keep: a resize completes at once. */
    idx_migrate(s, g, UINT32_MAX);
    /* The next record's chunk exists now: its slot can be made. */
    if (mi->reads != NULL && xb_reserve(s, g, g->next_seq, nb) != 0)
        return RCPT_ENOMEM;
    seq = msg_append(s, g,
                     (struct rmsg){mi->msgid, mi->ts,
                                   (mi->sender == NOMAP ? 0 : mi->sender + 1) |
                                       (live ? M_SLIVE : 0) |
                                       (mi->sender_done ? M_SDONE : 0)},
                     mi->nmemb, nquit);
    chunk_of(g, seq)->nsdone += mi->sender_done;
    if (mi->reads != NULL) {
        uint32_t stride;

        memcpy(xb_find(g, seq, &stride), mi->reads, nb);
    }
    return RCPT_OK;
}

static size_t check_semantics(const struct rgroup *g);

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

int rcpt_restore_marks(struct rcpt_store *s, uint64_t gid, uint32_t nmap,
                       const uint32_t *w, const uint32_t *qfrom, uint32_t ngaps,
                       const struct rcpt_gap *gaps)
{
    struct rgroup *g = group_get(s, gid);
    uint32_t n, nopen = 0;

    if (g == NULL || !g->unmarked || nmap != g->nmap)
        return 1;
    n = g->next_seq; /* positions are seqs: the group starts at 0 */
    /* Everything in range and in order first: nothing built yet. */
    for (uint32_t m = 0; m < nmap; m++) {
        bool quit = bit_test(g->quit, m);

        if (w[m] == RCPT_PARKED
                ? !quit || qfrom[m] != RCPT_NOPOS
                : w[m] > n || (qfrom[m] == RCPT_NOPOS) == quit ||
                      (quit && (qfrom[m] > n || qfrom[m] < w[m])))
            return 1;
        nopen += qfrom[m] != RCPT_NOPOS;
    }
    for (uint32_t i = 0; i < ngaps; i++) {
        const struct rcpt_gap *gp = &gaps[i];

        if (gp->mapid >= nmap || w[gp->mapid] == RCPT_PARKED ||
            gp->from < w[gp->mapid] || gp->from >= gp->to || gp->to > n ||
            (qfrom[gp->mapid] != RCPT_NOPOS && gp->to > qfrom[gp->mapid]) ||
            (i > 0 &&
             (gaps[i - 1].mapid > gp->mapid ||
              (gaps[i - 1].mapid == gp->mapid && gaps[i - 1].to > gp->from))))
            return 1;
    }
    if (rs_reserve(s, &g->P, nmap + ngaps) != 0 ||
        rs_reserve(s, &g->N, ngaps) != 0 ||
        (ngaps > g->gapcap &&
         (g->gaps = mem_realloc(&s->mem, g->gaps, g->gapcap * sizeof(*g->gaps),
                                ngaps * sizeof(*g->gaps))) == NULL))
        return RCPT_ENOMEM;
    if (ngaps > g->gapcap)
        g->gapcap = ngaps;
    g->unmarked = false;
    for (uint32_t m = 0; m < nmap; m++) {
        g->mflag[m] = 0;
        if (w[m] == RCPT_PARKED) {
            g->mw[m] = n;
            g->mflag[m] = F_PARKED;
            continue;
        }
        g->mw[m] = w[m];
        g->P.v[g->P.n++] = w[m];
        if (qfrom[m] != RCPT_NOPOS) {
            g->mq[m] = qfrom[m];
            g->mflag[m] |= F_OPEN;
            g->O.v[g->O.n++] = qfrom[m];
        }
    }
    for (uint32_t i = 0; i < ngaps; i++) {
        g->gaps[g->ngaps++] =
            (struct rgap){gaps[i].mapid, gaps[i].from, gaps[i].to};
        g->mflag[gaps[i].mapid] |= F_GAPS;
        g->P.v[g->P.n++] = gaps[i].to;
        g->N.v[g->N.n++] = gaps[i].from;
    }
    (void)nopen;
    /* Sorted by position: the group starts at seq 0, so positions sort as
     * numbers. */
    for (int k = 0; k < 3; k++) {
        struct rset *t = k == 0 ? &g->P : k == 1 ? &g->N : &g->O;

        if (t->n > 1)
            qsort(t->v, t->n, sizeof(*t->v), cmp_u32);
    }
    g->plo = g->P.n > 0 ? g->P.v[0] : PLO_NONE(g);
    return check_semantics(g) == 0 ? RCPT_OK : 1;
}

/* ---- Audit ------------------------------------------------------------- */

/* The step index of the first step whose member count is above m: from
 * its first record on, m is a member (joined). */
static uint32_t join_seq(const struct rgroup *g, uint32_t m)
{
    for (uint32_t lo = g->shead, hi = g->sn;;) {
        uint32_t mid;

        if (lo >= hi)
            return lo < g->sn ? g->steps[lo].first_seq : g->next_seq;
        mid = lo + (hi - lo) / 2;
        if (g->steps[mid].nmemb <= m)
            lo = mid + 1;
        else
            hi = mid;
    }
}

/* Whether m is pending at some position of [a, b) (a, b positions at or
 * past the front): by its watermark, gaps and open gap alone. */
static bool pending_in(const struct rgroup *g, uint32_t m, uint32_t a,
                       uint32_t b)
{
    uint32_t p = rel(g, a), rb = rel(g, b), lo, hi;

    if (g->mflag[m] & F_PARKED)
        return false;
    if (rel(g, g->mw[m]) > p)
        p = rel(g, g->mw[m]);
    gap_run(g, m, &lo, &hi);
    for (; lo < hi && p < rb; lo++) {
        if (rel(g, g->gaps[lo].to) <= p)
            continue;
        if (rel(g, g->gaps[lo].from) > p)
            return true;
        p = rel(g, g->gaps[lo].to);
    }
    if (p >= rb)
        return false;
    return !(g->mflag[m] & F_OPEN) || p < rel(g, g->mq[m]);
}

/*
 * What makes every count right: a member is pending only where it is a
 * recipient (it had joined, had not quit, did not send it), and an
 * out-of-order read is a pending recipient's. Returns the mismatches.
 */
static size_t check_semantics(const struct rgroup *g)
{
    size_t bad = 0;

    for (uint32_t m = 0; m < g->nmap; m++)
        bad += !(g->mflag[m] & F_PARKED) &&
               rel(g, g->mw[m]) < rel(g, join_seq(g, m));
    /* quitters, over each quit set's records */
    for (uint32_t i = 0; i < g->epochs.n; i++) {
        const struct repoch *e = pq_at(&g->epochs, i);
        uint32_t a = e->first_seq,
                 b = i + 1 < g->epochs.n
                         ? ((const struct repoch *)pq_at(&g->epochs, i + 1))
                               ->first_seq
                         : g->next_seq;

        if (rel(g, a) >= rel(g, b))
            continue;
        for (uint32_t w = 0; w < e->nwords; w++)
            for (uint64_t x = e->quit[w]; x != 0; x &= x - 1) {
                uint32_t m = w * 64 + (uint32_t)__builtin_ctzll(x);

                bad += m >= g->nmap || pending_in(g, m, a, b);
            }
    }
    for (uint32_t q = g->front_seq; q != g->next_seq; q++) {
        const struct rmsg *r = rec_at(g, q);
        uint32_t sender = rec_sender(r), stride = 0;
        const uint8_t *x;
        const struct repoch *e;
        uint32_t nmemb;

        if (r->meta & M_DEAD)
            continue;
        /* a live sender is done with it: by its watermark, or marked
         * exactly while pending */
        if (sender != NOMAP && (r->meta & M_SLIVE))
            bad += pending(g, sender, q) != ((r->meta & M_SDONE) != 0);
        else
            bad += (r->meta & M_SDONE) != 0;
        x = g->nxb ? xb_find(g, q, &stride) : NULL;
        if (x == NULL)
            continue;
        e = epoch_of(g, q);
        nmemb = step_of(g, q)->nmemb;
        bad += bytes_zero(x, stride);
        for (uint32_t m = 0; m < stride * 8; m++)
            if (byte_test(x, m))
                bad += m >= nmemb || m == sender || epoch_quit(e, m) ||
                       !pending(g, m, q);
    }
    return bad;
}

struct audit {
    const struct rcpt_store *s;
    size_t bad;
    size_t nmsgs;
    size_t bytes;
    size_t map_bytes;
};

/* Every non-erased mapid maps back to its uid; erased users'
 * (RCPT_UID_ANON) are in no map and quit; flags agree with quits. */
static void audit_members(struct audit *a, const struct rgroup *g)
{
    uint32_t nquit = 0, nnamed = 0, nslots = 0;

    for (uint32_t m = 0; m < g->nmap; m++) {
        bool quit = bit_test(g->quit, m);
        uint8_t f = g->mflag[m];

        if (g->muid[m] == RCPT_UID_ANON)
            a->bad += !quit;
        else
            a->bad += member(a->s, g, g->muid[m]) != m;
        nnamed += g->muid[m] != RCPT_UID_ANON;
        nquit += quit;
        a->bad += (f & F_PARKED) ? !quit || (f & (F_OPEN | F_GAPS))
                  : (f & F_OPEN) ? !quit
                                 : quit;
        if (f & F_PARKED)
            continue;
        a->bad += rel(g, g->mw[m]) > rel(g, g->next_seq);
        if (f & F_OPEN)
            a->bad += rel(g, g->mw[m]) > rel(g, g->mq[m]) ||
                      rel(g, g->mq[m]) > rel(g, g->next_seq);
    }
    for (uint32_t i = 0; i < g->midx_cap; i++)
        nslots += g->midx[i] != 0;
    a->bad += nslots != g->midx_count || nnamed != g->midx_count;
    for (uint32_t m = g->nmap; m < words_for(g->mapcap) * 64; m++)
        a->bad += bit_test(g->quit, m);
    a->bad += nquit != g->nquit;
}

/* Gaps sorted, in their members' ranges, apart; F_GAPS where there are. */
static void audit_gaps(struct audit *a, const struct rgroup *g)
{
    for (uint32_t i = 0; i < g->ngaps; i++) {
        const struct rgap *gp = &g->gaps[i];

        if (gp->mapid >= g->nmap) {
            a->bad++;
            continue;
        }
        a->bad +=
            !(g->mflag[gp->mapid] & F_GAPS) || (g->mflag[gp->mapid] & F_PARKED);
        /* (one wholly behind the front waits for group_clamp) */
        a->bad += (rel(g, gp->to) > 0 && rel(g, gp->from) >= rel(g, gp->to)) ||
                  rel(g, gp->from) < rel(g, g->mw[gp->mapid]) ||
                  rel(g, gp->to) > rel(g, g->next_seq);
        a->bad += (g->mflag[gp->mapid] & F_OPEN) &&
                  rel(g, gp->to) > rel(g, g->mq[gp->mapid]);
        a->bad += i > 0 && (g->gaps[i - 1].mapid > gp->mapid ||
                            (g->gaps[i - 1].mapid == gp->mapid &&
                             rel(g, g->gaps[i - 1].to) > rel(g, gp->from)));
    }
    for (uint32_t m = 0; m < g->nmap; m++) {
        uint32_t lo = gap_lb(g, m);

        a->bad += ((g->mflag[m] & F_GAPS) != 0) !=
                  (lo < g->ngaps && g->gaps[lo].mapid == m);
    }
}

/* One sorted array against the positions it should hold. */
static void audit_set(struct audit *a, const struct rgroup *g,
                      const struct rset *t, uint32_t *want, uint32_t n)
{
    qsort(want, n, sizeof(*want), cmp_u32);
    a->bad += t->n != n || t->n > t->cap;
    for (uint32_t i = 0; i < t->n && i < n; i++)
        a->bad += rel(g, t->v[i]) != want[i] ||
                  (i > 0 && rel(g, t->v[i - 1]) > rel(g, t->v[i]));
}

/* P, N and O hold exactly the members' watermarks, gap ends and starts. */
static void audit_sets(struct audit *a, const struct rgroup *g)
{
    uint32_t np = 0, nn = 0, no = 0;
    uint32_t *p = malloc((g->nmap + g->ngaps + 1) * sizeof(*p));
    uint32_t *n = malloc((g->ngaps + 1) * sizeof(*n));
    uint32_t *o = malloc((g->nmap + 1) * sizeof(*o));

    if (p == NULL || n == NULL || o == NULL) {
        a->bad++;
        goto done;
    }
    for (uint32_t m = 0; m < g->nmap; m++) {
        if (g->mflag[m] & F_PARKED)
            continue;
        p[np++] = rel(g, g->mw[m]);
        if (g->mflag[m] & F_OPEN)
            o[no++] = rel(g, g->mq[m]);
    }
    for (uint32_t i = 0; i < g->ngaps; i++) {
        p[np++] = rel(g, g->gaps[i].to);
        n[nn++] = rel(g, g->gaps[i].from);
    }
    audit_set(a, g, &g->P, p, np);
    audit_set(a, g, &g->N, n, nn);
    audit_set(a, g, &g->O, o, no);
    a->bad += g->O.cap != g->mapcap ||
              (g->P.n > 0 ? g->plo != g->P.v[0]
                          : rel(g, g->plo) <= RCPT_MAX_MESSAGES);
done:
    free(p);
    free(n);
    free(o);
}

/* A chunk's summary against its records, and its bitmap block. */
static void audit_chunk(struct audit *a, const struct rgroup *g, uint32_t ci,
                        uint64_t *run)
{
    const struct rchunk *c = cr_at(&g->chunks, ci);
    uint32_t first = g->base_seq + ci * CHUNK, end = first + CHUNK;
    uint32_t ndead = 0, nsdone = 0, min_ts = UINT32_MAX;
    bool late = false;

    if (ci + 1 == g->chunks.n)
        end = g->next_seq;
    for (uint32_t q = first; q != end; q++) {
        const struct rmsg *r = &chunk_recs(g, ci)[q - first];

        /* (before chunk 0, dropped chunks may have raised the top) */
        a->bad +=
            (r->meta & M_LATE) ? ci > 0 && r->msgid >= *run : r->msgid < *run;
        if (r->msgid > *run && !(r->meta & M_LATE))
            *run = r->msgid;
        late |= (r->meta & M_LATE) != 0;
        if (r->ts < min_ts)
            min_ts = r->ts;
        ndead += (r->meta & M_DEAD) && rel(g, q) == q - g->front_seq;
        nsdone += (r->meta & M_SDONE) != 0;
        if (c->xb != NULL)
            a->bad += c->xb->slot[q - first] != 0 &&
                      ((r->meta & M_DEAD) || rel(g, q) != q - g->front_seq);
    }
    if (ci == 0 && c->top >= *run)
        *run = c->top;
    a->bad += c->top != *run || c->min_ts != min_ts || c->ndead != ndead ||
              c->nsdone != nsdone || (c->late != 0) != late;
    if (c->xb != NULL) {
        uint32_t used = 0;
        uint8_t seen[CHUNK] = {0};

        for (uint32_t o = 0; o < CHUNK; o++) {
            uint32_t k = c->xb->slot[o];

            if (k == 0)
                continue;
            used++;
            a->bad += k > c->xb->n || seen[k - 1]++ ||
                      first + o - g->front_seq >= end - g->front_seq;
        }
        a->bad += used != c->xb->n || c->xb->n == 0 || c->xb->n > c->xb->cap ||
                  c->xb->cap > CHUNK;
        a->bytes += xb_size(c->xb->cap, c->xb->stride);
    }
}

/* Every count of a small group (members x messages <= 2^16, so that an
 * audit of a big store stays linear), member by member. */
static void audit_brute(struct audit *a, const struct rgroup *g)
{
    if ((uint64_t)g->nmap * group_live(g) > 65536)
        return;
    for (uint32_t q = g->front_seq; q != g->next_seq; q++) {
        const struct rmsg *r = rec_at(g, q);
        const struct repoch *e;
        uint32_t nmemb, sender = rec_sender(r), nr = 0, nu = 0;

        if (r->meta & M_DEAD)
            continue;
        e = epoch_of(g, q);
        nmemb = step_of(g, q)->nmemb;
        for (uint32_t m = 0; m < nmemb; m++) {
            if (m == sender || epoch_quit(e, m))
                continue;
            if (pending(g, m, q) && !xb_test(g, q, m))
                nu++;
            else
                nr++;
        }
        a->bad += nu != unread_of(g, r, q) || nr + nu != rec_nrcpt(g, r, q);
    }
}

static void audit_messages(struct audit *a, const struct rgroup *g)
{
    uint32_t live = 0, seq, nlate = 0, ndead = 0, nxb = 0;
    uint32_t min_ts = UINT32_MAX;
    uint64_t run = 0;
    const struct repoch *prev = NULL;

    for (uint32_t ci = 0; ci < g->chunks.n; ci++) {
        audit_chunk(a, g, ci, &run);
        nxb += cr_at(&g->chunks, ci)->xb != NULL;
        ndead += cr_at(&g->chunks, ci)->ndead;
        if (cr_at(&g->chunks, ci)->min_ts < min_ts)
            min_ts = cr_at(&g->chunks, ci)->min_ts;
    }
    a->bad += nxb != g->nxb || ndead != g->ndead || min_ts != g->min_ts ||
              (g->chunks.n > 0 && g->top != run);
    for (uint32_t q = g->front_seq; q != g->next_seq; q++) {
        const struct rmsg *m = rec_at(g, q);
        const struct rstep *st;
        const struct repoch *e;
        uint32_t sender = rec_sender(m);

        nlate += (m->meta & M_LATE) != 0;
        if (m->meta & M_DEAD)
            continue;
        live++;
        a->bad += !idx_find(a->s, g, m->msgid, &seq) || seq != q;
        st = step_of(g, q);
        e = epoch_of(g, q);
        a->bad +=
            st->nmemb > g->nmap || (sender != NOMAP && sender >= st->nmemb);
        a->bad += st->nquit != epoch_nquit(e, st->nmemb);
        a->bad += ((m->meta & M_SLIVE) != 0) !=
                  (sender != NOMAP && !epoch_quit(e, sender));
        a->bad += pending_at(g, q) < xb_count(g, q) + sender_done(m) ||
                  unread_of(g, m, q) > rec_nrcpt(g, m, q);
    }
    /* every record once in the new table, some in the old one too */
    a->bad += live != g->nrec || g->idx.count > live || g->old.count > live ||
              (g->old.cap == 0 && (g->idx.count != live || g->old.count));
    a->bad += group_live(g) > RCPT_MAX_MESSAGES;
    /* the late list: exactly the live late records, in order */
    a->bad += g->ln - g->lhead != nlate || g->ln > g->lcap;
    for (uint32_t i = g->lhead; i < g->ln; i++)
        a->bad +=
            rel(g, g->late[i]) >= group_live(g) ||
            !(rec_at(g, g->late[i])->meta & M_LATE) ||
            (i > g->lhead && rel(g, g->late[i - 1]) >= rel(g, g->late[i]));
    /* steps: every live record in one, counts growing with the mapids */
    a->bad += group_live(g) > 0 &&
              (g->sn <= g->shead || rel(g, g->steps[g->shead].first_seq) != 0 ||
               memcmp(&g->slast, &g->steps[g->sn - 1], sizeof(g->slast)) != 0 ||
               g->hot_first != g->slast.first_seq ||
               g->hot_rcpt != g->slast.nmemb - g->slast.nquit);
    for (uint32_t i = g->shead; i < g->sn; i++)
        a->bad += g->steps[i].nmemb > g->nmap ||
                  (i > g->shead && (rel(g, g->steps[i - 1].first_seq) >
                                        rel(g, g->steps[i].first_seq) ||
                                    g->steps[i - 1].nmemb > g->steps[i].nmemb));
    for (uint32_t i = 0; i < g->epochs.n; i++) {
        const struct repoch *e = pq_at(&g->epochs, i);

        a->bad += e->nwords > 0 && e->quit[e->nwords - 1] == 0;
        a->bad += prev != NULL && (int32_t)(e->first_seq - prev->first_seq) < 0;
        a->bytes += epoch_size(e->nwords);
        prev = e;
    }
    a->nmsgs += live;
}

/* The bytes a group should account for, from its shapes (bitmap blocks
 * and epochs are added where they are walked). */
static size_t group_bytes(const struct rgroup *g)
{
    size_t b = sizeof(*g) + (g->idx.cap + g->old.cap) * sizeof(uint32_t) +
               g->mapcap * (sizeof(*g->muid) + sizeof(*g->mw) + sizeof(*g->mq) +
                            1 + sizeof(*g->O.v)) +
               words_for(g->mapcap) * sizeof(*g->quit) +
               g->midx_cap * sizeof(*g->midx) + cr_size(g->chunks.cap) +
               g->epochs.cap * sizeof(void *) + g->scap * sizeof(*g->steps) +
               g->lcap * sizeof(*g->late) +
               (g->P.cap + g->N.cap) * sizeof(uint32_t) +
               g->gapcap * sizeof(*g->gaps);

    if (g->chunks.n > 0)
        b += chunk_bytes(CHUNK) * (g->chunks.n - 1) + chunk_bytes(g->tailcap);
    return b;
}

static void audit_visit(uint64_t gid, uint64_t val, void *ctx)
{
    struct audit *a = ctx;
    const struct rgroup *g = (const struct rgroup *)(uintptr_t)val;

    (void)gid;
    a->bad += g->unmarked;
    audit_members(a, g);
    audit_gaps(a, g);
    audit_sets(a, g);
    audit_messages(a, g);
    a->bad += check_semantics(g);
    audit_brute(a, g);
    a->bytes += group_bytes(g);
    a->bad += g->chunks.n > 0 && g->next_seq - g->base_seq >
                                     (g->chunks.n - 1) * CHUNK + g->tailcap;
}

size_t rcpt_audit(const struct rcpt_store *s)
{
    struct audit a = {s, 0, 0, 0, 0};
    uint64_t cursor = 0;

    do
        u64map_scan(s->groups, &cursor, SIZE_MAX, audit_visit, &a);
    while (cursor != 0);
    return a.bad + u64map_audit(s->groups) + (a.nmsgs != s->nmsgs) +
           (a.bytes + u64map_bytes(s->groups) != s->mem.bytes);
}

/* ---- Per user ---------------------------------------------------------- */

struct forget_ctx {
    struct rcpt_store *s;
    uint64_t uid;
    size_t n;
};

/* Changes the group, never the group map being walked. */
static void forget_visit(uint64_t gid, uint64_t val, void *ctx)
{
    struct forget_ctx *fc = ctx;
    struct rgroup *g = (struct rgroup *)(uintptr_t)val;
    uint32_t m = member(fc->s, g, fc->uid);

    (void)gid;
    if (m == NOMAP)
        return;
    midx_remove(fc->s, g, fc->uid);
    g->muid[m] = RCPT_UID_ANON;
    if (!bit_test(g->quit, m)) {
        quit_mark(g, m);
        member_quit(fc->s, g, m);
        group_trim(fc->s, g);
    }
    fc->n++;
}

size_t rcpt_forget_user(struct rcpt_store *s, uint64_t uid)
{
    struct forget_ctx fc = {s, uid, 0};
    uint64_t cursor = 0;

    if (uid == RCPT_UID_ANON)
        return 0;
    do
        u64map_scan(s->groups, &cursor, SIZE_MAX, forget_visit, &fc);
    while (cursor != 0);
    return fc.n;
}

struct user_ctx {
    const struct rcpt_store *s;
    uint64_t uid;
    rcpt_user_fn fn;
    void *ctx;
    size_t n;
};

static void user_visit(uint64_t gid, uint64_t val, void *ctx)
{
    struct user_ctx *uc = ctx;
    const struct rgroup *g = (const struct rgroup *)(uintptr_t)val;
    uint32_t m = member(uc->s, g, uc->uid);

    if (m == NOMAP)
        return;
    uc->fn(gid, m, bit_test(g->quit, m), uc->ctx);
    uc->n++;
}

size_t rcpt_user_info(const struct rcpt_store *s, uint64_t uid, rcpt_user_fn fn,
                      void *ctx)
{
    struct user_ctx uc = {s, uid, fn, ctx, 0};
    uint64_t cursor = 0;

    do
        u64map_scan(s->groups, &cursor, SIZE_MAX, user_visit, &uc);
    while (cursor != 0);
    return uc.n;
}
