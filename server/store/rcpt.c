/*
 * rcpt.c - read receipts: per group a two-way member map, per message a
 * 24-byte record, with a read bitmap only while someone has not read it.
 *
 * Group (struct rgroup):
 *   uids     u64map uid -> mapid + 1, and mapuid[] mapid -> uid;
 *   quit     the live quit set, one bit per mapid;
 *   records  struct rmsg in send order, numbered by a 32-bit seq
 *            (wrapping), stored in chunks of CHUNK records (the first chunk
 *            of a small group starts at CHUNK_MIN and doubles); retention
 *            drops from the front, so chunks are freed whole;
 *   index    msgid -> seq: open addressing, linear probing, one u32 per
 *            slot (8-bit hash tag, 24-bit seq), load 0.4..0.8. Growing
 *            or shrinking allocates the new table and moves the entries
 *            MIGRATE_STEP records per index change (lookups try both
 *            tables meanwhile), so no call pays for a whole rebuild;
 *   open     the messages that some recipient has not read: a dense array
 *            of struct ropen (a bitmap of nmemb bits, set for "read or not
 *            a recipient", plus the counts), the record holding its index;
 *   epochs   the quit sets messages were sent under, shared: a new
 *            snapshot is taken by the first send after the quit set
 *            changed (copy on write), and since snapshots are taken in
 *            send order, the epoch of a message is the last one whose
 *            first_seq <= its seq (binary search, no per-message pointer).
 *            An epoch is freed when no live message is older than the next
 *            one (records are dropped in send order, so that is its
 *            reference count reaching zero).
 *
 * Record (struct rmsg): msgid, ts (seconds, rounded up), sender mapid,
 * nmemb (mapids < nmemb existed at send) and state: ST_OPEN | the index of
 * its open entry, or the recipient count once everyone has read it (the
 * collapsed form: no bitmap at all), or ST_DEAD for a record that was
 * replaced (its msgid resent after it expired) and waits for the front.
 *
 * Recipients of a record: mapids < nmemb, minus the epoch's quit set, minus
 * the sender. An open bitmap starts as exactly the non-recipients (and the
 * padding bits past nmemb), so marking a read is one bit test and set:
 * non-recipients and later joiners are "already read" by construction.
 */
#include "rcpt.h"

#include "db.h"
#include "hash.h"
#include "mem.h"
#include "u64map.h"

#include <string.h>

#define CHUNK_SHIFT 7
#define CHUNK (1u << CHUNK_SHIFT) /* records in a full chunk */
#define CHUNK_MIN 8u              /* a new group's first chunk */
#define SEQ_BITS 24
#define SEQ_MASK ((1u << SEQ_BITS) - 1)
#define ST_OPEN 0x80000000u
#define ST_DEAD 0xFFFFFFFFu
#define NOMAP UINT32_MAX
#define IDX_MIN 8u
/* Records whose index entries one index change moves to a new table. */
#define MIGRATE_STEP 32u
#define NONE UINT32_MAX
/* Groups visited by one rcpt_expire_step. */
#define STEP_GROUPS 4
/* Expired records of its own group a send drops first: more than the one
 * it adds, so a busy group never lags behind its retention. */
#define SEND_EXPIRE 4

struct rmsg {
    uint64_t msgid;
    uint32_t ts;     /* seconds since the epoch, rounded up */
    uint32_t sender; /* mapid, or NOMAP: not a member (yet) at send */
    uint32_t nmemb;  /* mapids < nmemb existed at send */
    uint32_t state;  /* ST_OPEN | open index, recipient count, ST_DEAD */
};

struct ropen {
    uint32_t seq;     /* the record's seq, to repoint it when this moves */
    uint32_t nrcpt;   /* recipients */
    uint32_t nunread; /* recipients whose bit is clear; > 0 */
    uint32_t nwords;
    uint64_t bits[]; /* set: read, or not a recipient, or past nmemb */
};

struct repoch {
    uint32_t first_seq; /* the first message sent under this quit set */
    uint32_t nwords;    /* up to the last non-zero word */
    uint64_t quit[];
};

/* An open-addressing table of slots (0: empty). */
struct ridx {
    uint32_t *slot;
    uint32_t cap, count;
};

/* A ring of pointers, capacity a power of two. */
struct ptrq {
    void **v;
    uint32_t head, n, cap;
};

struct rgroup {
    struct u64map *uids; /* uid -> mapid + 1; NULL until the first join */
    uint64_t *mapuid;    /* mapid -> uid */
    uint64_t *quit;      /* live quit set, words(mapcap) words */
    uint32_t nmap, mapcap, nquit;
    bool quit_changed; /* since the last epoch was taken */
    struct ptrq chunks;
    struct ptrq epochs;
    uint32_t base_seq;  /* seq of slot 0 of chunks[0] */
    uint32_t front_seq; /* oldest live record */
    uint32_t next_seq;  /* the next record's seq */
    uint32_t tailcap;   /* records in the last chunk (CHUNK unless alone) */
    struct ridx idx;    /* msgid -> seq */
    struct ridx old;    /* the table idx replaces, emptied MIGRATE_STEP
                           records at a time */
    uint32_t mig_seq;   /* the next record whose entry may be in old */
    uint32_t mig_end;   /* records from here on were never in old */
    struct ropen **open;
    uint32_t nopen, opencap;
};

struct rcpt_store {
    struct u64map *groups; /* gid -> struct rgroup * */
    struct mem_acct mem;   /* everything, the u64maps included */
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

/* ---- Pointer rings ----------------------------------------------------- */

static inline void *pq_at(const struct ptrq *q, uint32_t i)
{
    return q->v[(q->head + i) & (q->cap - 1)];
}

static inline void pq_set(struct ptrq *q, uint32_t i, void *p)
{
    q->v[(q->head + i) & (q->cap - 1)] = p;
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
    pq_set(q, q->n - 1, p);
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

/* ---- Records ----------------------------------------------------------- */

static inline struct rmsg *rec_at(const struct rgroup *g, uint32_t seq)
{
    uint32_t off = seq - g->base_seq;
    struct rmsg *c = pq_at(&g->chunks, off >> CHUNK_SHIFT);

    return &c[off & (CHUNK - 1)];
}

static inline uint32_t group_live(const struct rgroup *g)
{
    return g->next_seq - g->front_seq;
}

static inline bool rec_visible(const struct rmsg *m, uint64_t horizon_ms)
{
    return m->state != ST_DEAD && (uint64_t)m->ts * 1000 >= horizon_ms;
}

static inline size_t open_size(uint32_t nwords)
{
    return sizeof(struct ropen) + (size_t)nwords * sizeof(uint64_t);
}

static inline size_t epoch_size(uint32_t nwords)
{
    return sizeof(struct repoch) + (size_t)nwords * sizeof(uint64_t);
}

/* ---- Index: msgid -> seq ----------------------------------------------- */

static uint64_t msg_hash(const struct rcpt_store *s, uint64_t msgid)
{
    return hash_u64(msgid, s->seed);
}

static inline uint32_t tbl_home(const struct ridx *t, uint64_t h)
{
    return (uint32_t)(((h & 0xffffffffu) * t->cap) >> 32);
}

static inline uint32_t tbl_next(const struct ridx *t, uint32_t i)
{
    return i + 1 == t->cap ? 0 : i + 1;
}

/* A slot: tag (1..255, never 0 so that 0 is empty) and the low seq bits. */
static inline uint32_t idx_slot(uint64_t h, uint32_t seq)
{
    return (1 + (uint32_t)((h >> 32) % 255)) << SEQ_BITS | (seq & SEQ_MASK);
}

/* The full seq of a slot: live seqs span less than 2^24 from front_seq. */
static inline uint32_t slot_seq(const struct rgroup *g, uint32_t slot)
{
    return g->front_seq + (((slot & SEQ_MASK) - g->front_seq) & SEQ_MASK);
}

static void tbl_place(struct ridx *t, uint64_t h, uint32_t slot)
{
    uint32_t i = tbl_home(t, h);

    while (t->slot[i] != 0)
        i = tbl_next(t, i);
    t->slot[i] = slot;
    t->count++;
}

/* Position of msgid in t (its seq in *seq), or NONE. */
static uint32_t tbl_find(const struct rcpt_store *s, const struct rgroup *g,
                         const struct ridx *t, uint64_t msgid, uint32_t *seq)
{
    uint64_t h;
    uint32_t tag;

    if (t->count == 0)
        return NONE;
    h = msg_hash(s, msgid);
    tag = idx_slot(h, 0);
    for (uint32_t i = tbl_home(t, h); t->slot[i] != 0; i = tbl_next(t, i)) {
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
    for (uint32_t j = tbl_next(t, i); t->slot[j] != 0; j = tbl_next(t, j)) {
        const struct rmsg *m = rec_at(g, slot_seq(g, t->slot[j]));
        uint32_t k = tbl_home(t, msg_hash(s, m->msgid));

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

static inline uint32_t idx_count(const struct rgroup *g)
{
    return g->idx.count + g->old.count;
}

/* Position of msgid in idx or old (which one in *t), or NONE. */
static uint32_t idx_find_in(const struct rcpt_store *s, struct rgroup *g,
                            uint64_t msgid, uint32_t *seq, struct ridx **t)
{
    uint32_t i = tbl_find(s, g, &g->idx, msgid, seq);

    *t = &g->idx;
    if (i == NONE) {
        *t = &g->old;
        i = tbl_find(s, g, &g->old, msgid, seq);
    }
    return i;
}

static bool idx_find(const struct rcpt_store *s, const struct rgroup *g,
                     uint64_t msgid, uint32_t *seq)
{
    return tbl_find(s, g, &g->idx, msgid, seq) != NONE ||
           tbl_find(s, g, &g->old, msgid, seq) != NONE;
}

/* Indexes msgid at seq in the current table (room made by idx_reserve). */
static void idx_insert(const struct rcpt_store *s, struct rgroup *g,
                       uint64_t msgid, uint32_t seq)
{
    uint64_t h = msg_hash(s, msgid);

    tbl_place(&g->idx, h, idx_slot(h, seq));
}

/*
 * Moves up to `budget` records' entries from the table being replaced to
 * the new one, in seq order; frees the old table when it is empty. Bounded
 * work, so that no operation pays for a whole rebuild.
 */
static void idx_migrate(struct rcpt_store *s, struct rgroup *g, uint32_t budget)
{
    if ((int32_t)(g->mig_seq - g->front_seq) < 0)
        g->mig_seq = g->front_seq;
    for (; budget > 0 && g->old.count > 0 && g->mig_seq != g->mig_end;
         budget--, g->mig_seq++) {
        const struct rmsg *m = rec_at(g, g->mig_seq);
        uint32_t seq, i;

        if (m->state == ST_DEAD ||
            (i = tbl_find(s, g, &g->old, m->msgid, &seq)) == NONE)
            continue;
        tbl_remove(s, g, &g->old, i);
        idx_insert(s, g, m->msgid, seq);
    }
    if (g->old.count == 0)
        tbl_free(s, &g->old);
}

/*
 * Starts moving the index into a new table of cap slots (0: none), sized
 * for load 0.5: the entries follow MIGRATE_STEP records per index change.
 * A migration still running is finished first; it fits: it ends within
 * (live records) / MIGRATE_STEP changes, long before its table passes
 * load 0.8, so in practice there is none. 0, or -1 with the index
 * unchanged.
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

static uint32_t idx_cap_for(uint32_t n)
{
    return n * 2 > IDX_MIN ? n * 2 : IDX_MIN;
}

/* Room for one more entry in the new table at load <= 0.8. 0 or -1. */
static int idx_reserve(struct rcpt_store *s, struct rgroup *g)
{
    idx_migrate(s, g, MIGRATE_STEP);
    if ((uint64_t)(g->idx.count + 1) * 5 <= (uint64_t)g->idx.cap * 4)
        return 0;
    return idx_resize(s, g, idx_cap_for(idx_count(g) + 1));
}

/* Unindexes msgid; shrinks the index below load 0.2 (allocation failure
 * keeps the larger one). */
static void idx_remove(struct rcpt_store *s, struct rgroup *g, uint64_t msgid)
{
    struct ridx *t;
    uint32_t seq, i = idx_find_in(s, g, msgid, &seq, &t);

    if (i != NONE)
        tbl_remove(s, g, t, i);
    idx_migrate(s, g, MIGRATE_STEP);
    if (idx_count(g) == 0)
        idx_resize(s, g, 0);
    else if (g->old.cap == 0 && g->idx.cap > IDX_MIN &&
             g->idx.count * 5 < g->idx.cap)
        idx_resize(s, g, idx_cap_for(g->idx.count));
}

/* ---- Open entries ------------------------------------------------------ */

/* Reallocates the open array to cap entries (>= nopen). 0 or -1 with the
 * array unchanged. */
static int open_resize(struct rcpt_store *s, struct rgroup *g, uint32_t cap)
{
    size_t old = g->opencap * sizeof(*g->open);
    struct ropen **a = NULL;

    if (cap == 0)
        mem_free(&s->mem, g->open, old);
    else if ((a = mem_realloc(&s->mem, g->open, old, cap * sizeof(*a))) == NULL)
        return -1;
    g->open = a;
    g->opencap = cap;
    return 0;
}

/* Room for one more open entry. 0 or -1. */
static int open_reserve(struct rcpt_store *s, struct rgroup *g)
{
    if (g->nopen < g->opencap)
        return 0;
    return open_resize(s, g, g->opencap ? g->opencap * 2 : 4);
}

/* An open entry of nw bitmap words (the caller fills them) with its
 * counts; NULL on allocation failure. */
static struct ropen *open_alloc(struct rcpt_store *s, uint32_t nw,
                                uint32_t nrcpt, uint32_t nunread)
{
    struct ropen *o = mem_alloc(&s->mem, open_size(nw));

    if (o != NULL) {
        o->nrcpt = nrcpt;
        o->nunread = nunread;
        o->nwords = nw;
    }
    return o;
}

/* Drops open entry oi (its record's state is the caller's to set); the
 * last entry moves into its place. Shrinks a mostly empty array (a failed
 * shrink keeps the larger one). */
static void open_remove(struct rcpt_store *s, struct rgroup *g, uint32_t oi)
{
    struct ropen *o = g->open[oi];
    struct ropen *last = g->open[--g->nopen];

    mem_free(&s->mem, o, open_size(o->nwords));
    if (oi != g->nopen) {
        g->open[oi] = last;
        rec_at(g, last->seq)->state = ST_OPEN | oi;
    }
    if (g->nopen == 0 || (g->opencap > 8 && g->nopen < g->opencap / 4))
        open_resize(s, g, g->nopen == 0 ? 0 : g->opencap / 2);
}

/* Marks mapid in open entry oi: 1 if newly read. The last reader collapses
 * the message to its recipient count and frees the bitmap. */
static uint32_t open_mark(struct rcpt_store *s, struct rgroup *g, uint32_t oi,
                          uint32_t mapid)
{
    struct ropen *o = g->open[oi];
    uint64_t bit = UINT64_C(1) << (mapid % 64);

    if (mapid / 64 >= o->nwords || (o->bits[mapid / 64] & bit))
        return 0;
    o->bits[mapid / 64] |= bit;
    if (--o->nunread == 0) {
        struct rmsg *m = rec_at(g, o->seq);
        uint32_t nrcpt = o->nrcpt;

        open_remove(s, g, oi);
        m->state = nrcpt;
    }
    return 1;
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

/* ---- Members ----------------------------------------------------------- */

static uint32_t member(const struct rgroup *g, uint64_t uid)
{
    uint64_t v = g->uids ? u64map_get(g->uids, uid) : 0;

    return v ? (uint32_t)(v - 1) : NOMAP;
}

/* Room for one more mapid (x1.5). 0 or -1 with nothing changed. */
static int members_reserve(struct rcpt_store *s, struct rgroup *g)
{
    uint32_t cap = g->mapcap < 8 ? 8 : g->mapcap + g->mapcap / 2;
    uint32_t ow = words_for(g->mapcap), nw = words_for(cap);
    uint64_t *u, *q;

    if (g->nmap < g->mapcap)
        return 0;
    u = mem_alloc(&s->mem, cap * sizeof(*u));
    q = mem_zalloc(&s->mem, nw * sizeof(*q));
    if (u == NULL || q == NULL) {
        mem_free(&s->mem, u, cap * sizeof(*u));
        mem_free(&s->mem, q, nw * sizeof(*q));
        return -1;
    }
    if (g->nmap > 0)
        memcpy(u, g->mapuid, g->nmap * sizeof(*u));
    if (ow > 0)
        memcpy(q, g->quit, ow * sizeof(*q));
    mem_free(&s->mem, g->mapuid, g->mapcap * sizeof(*u));
    mem_free(&s->mem, g->quit, ow * sizeof(*q));
    g->mapuid = u;
    g->quit = q;
    g->mapcap = cap;
    return 0;
}

/* Gives uid, not a member yet, the next mapid; RCPT_UID_ANON gets an
 * erased user's mapid, in no uid map. 0 or -1 with nothing changed. */
static int member_add(struct rcpt_store *s, struct rgroup *g, uint64_t uid)
{
    if (g->uids == NULL) {
        g->uids = u64map_create(&s->mem);
        if (g->uids == NULL)
            return -1;
    }
    if (members_reserve(s, g) != 0)
        return -1;
    if (uid != RCPT_UID_ANON &&
        u64map_put(g->uids, uid, (uint64_t)g->nmap + 1) != 0)
        return -1;
    g->mapuid[g->nmap++] = uid;
    return 0;
}

static void quit_mark(struct rgroup *g, uint32_t m)
{
    g->quit[m / 64] |= UINT64_C(1) << (m % 64);
    g->nquit++;
    g->quit_changed = true;
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
    if (u64map_put(s->groups, gid, (uint64_t)(uintptr_t)g) != 0) {
        mem_free(&s->mem, g, sizeof(*g));
        return NULL;
    }
    return g;
}

static size_t chunk_bytes(uint32_t cap)
{
    return cap * sizeof(struct rmsg);
}

static void chunks_free(struct rcpt_store *s, struct rgroup *g)
{
    while (g->chunks.n > 0) {
        uint32_t cap = g->chunks.n == 1 ? g->tailcap : CHUNK;

        mem_free(&s->mem, pq_shift(s, &g->chunks), chunk_bytes(cap));
    }
    g->tailcap = 0;
}

static void group_free(struct rcpt_store *s, struct rgroup *g)
{
    while (g->nopen > 0)
        open_remove(s, g, g->nopen - 1);
    chunks_free(s, g);
    while (g->epochs.n > 0) {
        struct repoch *e = pq_shift(s, &g->epochs);

        mem_free(&s->mem, e, epoch_size(e->nwords));
    }
    tbl_free(s, &g->idx);
    tbl_free(s, &g->old);
    mem_free(&s->mem, g->mapuid, g->mapcap * sizeof(*g->mapuid));
    mem_free(&s->mem, g->quit, words_for(g->mapcap) * sizeof(*g->quit));
    u64map_destroy(g->uids);
    mem_free(&s->mem, g, sizeof(*g));
}

/* Frees gid's group if nobody ever joined and it holds no message. */
static void group_drop_if_empty(struct rcpt_store *s, uint64_t gid,
                                struct rgroup *g)
{
    if (g->nmap != 0 || group_live(g) != 0)
        return;
    u64map_del(s->groups, gid);
    group_free(s, g);
}

/* Room for the next record. 0 or -1 (a grown chunk is kept). */
static int chunk_reserve(struct rcpt_store *s, struct rgroup *g)
{
    uint32_t used = g->next_seq - g->base_seq;
    struct rmsg *c;

    if (g->chunks.n == 0) {
        c = mem_alloc(&s->mem, chunk_bytes(CHUNK_MIN));
        if (c == NULL || pq_push(s, &g->chunks, c) != 0) {
            mem_free(&s->mem, c, chunk_bytes(CHUNK_MIN));
            return -1;
        }
        g->tailcap = CHUNK_MIN;
        return 0;
    }
    if (used < (g->chunks.n - 1) * CHUNK + g->tailcap)
        return 0;
    if (g->tailcap < CHUNK) { /* the only chunk, still small: double it */
        c = mem_realloc(&s->mem, pq_at(&g->chunks, 0), chunk_bytes(g->tailcap),
                        chunk_bytes(g->tailcap * 2));
        if (c == NULL)
            return -1;
        pq_set(&g->chunks, 0, c);
        g->tailcap *= 2;
        return 0;
    }
    c = mem_alloc(&s->mem, chunk_bytes(CHUNK));
    if (c == NULL || pq_push(s, &g->chunks, c) != 0) {
        mem_free(&s->mem, c, chunk_bytes(CHUNK));
        return -1;
    }
    return 0;
}

/* Makes live record seq invisible for good: frees its bitmap, unindexes
 * it. (Only live records are indexed or open: ST_DEAD never gets here.) */
static void msg_kill(struct rcpt_store *s, struct rgroup *g, uint32_t seq)
{
    struct rmsg *m = rec_at(g, seq);

    if (m->state & ST_OPEN)
        open_remove(s, g, m->state & ~ST_OPEN);
    m->state = ST_DEAD;
    idx_remove(s, g, m->msgid);
    s->nmsgs--;
}

/* Drops the oldest record; frees its chunk once passed, every chunk when
 * the group holds no more records, and the epochs nobody uses. */
static void drop_front(struct rcpt_store *s, struct rgroup *g)
{
    if (rec_at(g, g->front_seq)->state != ST_DEAD)
        msg_kill(s, g, g->front_seq);
    g->front_seq++;
    if (g->front_seq == g->next_seq) {
        chunks_free(s, g);
        g->base_seq = g->front_seq;
    } else if (g->front_seq - g->base_seq == CHUNK) {
        mem_free(&s->mem, pq_shift(s, &g->chunks), chunk_bytes(CHUNK));
        g->base_seq += CHUNK;
    }
    epoch_trim(s, g);
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

static uint32_t msg_nrcpt(const struct rgroup *g, const struct rmsg *m)
{
    return (m->state & ST_OPEN) ? g->open[m->state & ~ST_OPEN]->nrcpt
                                : m->state;
}

/* Room for the next record, and for its open entry when open. 0 or -1;
 * the group stays valid either way. */
static int msg_reserve(struct rcpt_store *s, struct rgroup *g, bool open)
{
    if (chunk_reserve(s, g) != 0 || idx_reserve(s, g) != 0)
        return -1;
    return open ? open_reserve(s, g) : 0;
}

/* Appends record *rec (room made by msg_reserve) with its open entry o, or
 * collapsed (rec->state: the recipient count) when o is NULL. */
static void msg_append(struct rcpt_store *s, struct rgroup *g,
                       const struct rmsg *rec, struct ropen *o)
{
    uint32_t seq = g->next_seq++;
    struct rmsg *m = rec_at(g, seq);

    *m = *rec;
    if (o != NULL) {
        o->seq = seq;
        m->state = ST_OPEN | g->nopen;
        g->open[g->nopen++] = o;
    }
    idx_insert(s, g, m->msgid, seq);
    s->nmsgs++;
}

/* The sender's mapid as a record of nmemb members stores it. */
static uint32_t sender_mapid(const struct rgroup *g, uint64_t sender,
                             uint32_t nmemb)
{
    uint32_t m = member(g, sender);

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
    /* The process's secret seed (hash.h), so that msgids cannot be chosen
     * to pile up in one probe run. */
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
    m = member(g, uid);
    if (m != NOMAP) {
        if (bit_test(g->quit, m)) {
            g->quit[m / 64] &= ~(UINT64_C(1) << (m % 64));
            g->nquit--;
            g->quit_changed = true;
        }
        *mapid = m;
        return RCPT_OK;
    }
    if (g->nmap >= max_members || g->nmap >= RCPT_MAX_MEMBERS) {
        rc = RCPT_ELIMIT;
        goto error;
    }
    if (member_add(s, g, uid) != 0)
        goto error;
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

    if (g == NULL || (m = member(g, uid)) == NOMAP || bit_test(g->quit, m))
        return false;
    quit_mark(g, m);
    return true;
}

/* A new open entry for a message of nmemb members with nrcpt recipients:
 * the non-recipients (quit, sender) and the padding bits start set. */
static struct ropen *open_new(struct rcpt_store *s, const struct rgroup *g,
                              uint32_t sender, uint32_t nrcpt)
{
    uint32_t nw = words_for(g->nmap);
    struct ropen *o = open_alloc(s, nw, nrcpt, nrcpt);

    if (o == NULL)
        return NULL;
    memcpy(o->bits, g->quit, nw * sizeof(uint64_t));
    if (g->nmap % 64)
        o->bits[nw - 1] |= ~UINT64_C(0) << (g->nmap % 64);
    if (sender != NOMAP)
        o->bits[sender / 64] |= UINT64_C(1) << (sender % 64);
    return o;
}

/* A resend of a visible msgid: the same answer, or RCPT_EEXIST. */
static int send_again(const struct rgroup *g, const struct rmsg *m,
                      uint64_t sender, uint32_t *nrcpt)
{
    if (sender_mapid(g, sender, m->nmemb) != m->sender)
        return RCPT_EEXIST;
    *nrcpt = msg_nrcpt(g, m);
    return RCPT_OK;
}

int rcpt_send(struct rcpt_store *s, uint64_t gid, uint64_t msgid,
              uint64_t sender, uint64_t ts_ms, uint64_t horizon_ms,
              uint32_t *nrcpt)
{
    struct rgroup *g;
    struct ropen *o = NULL;
    struct rmsg rec;
    uint32_t seq, sm, n;
    uint64_t ts = ts_ms / 1000 + (ts_ms % 1000 != 0);
    int rc = RCPT_ENOMEM;

    if (ts_ms < horizon_ms)
        return RCPT_EEXPIRED;
    g = group_need(s, gid);
    if (g == NULL)
        return RCPT_ENOMEM;
    group_expire(s, g, horizon_ms, SEND_EXPIRE);
    if (idx_find(s, g, msgid, &seq)) {
        if (rec_visible(rec_at(g, seq), horizon_ms))
            return send_again(g, rec_at(g, seq), sender, nrcpt);
        msg_kill(s, g, seq); /* expired, not yet dropped: a new message */
    }
    if (group_live(g) >= RCPT_MAX_MESSAGES) {
        rc = RCPT_ELIMIT;
        goto error;
    }
    sm = sender_mapid(g, sender, g->nmap);
    n = g->nmap - g->nquit - (sm != NOMAP && !bit_test(g->quit, sm));
    /* Every step below that can fail leaves a valid group behind. */
    if (epoch_take(s, g) != 0 || msg_reserve(s, g, n > 0) != 0)
        goto error;
    if (n > 0 && (o = open_new(s, g, sm, n)) == NULL)
        goto error;
    rec = (struct rmsg){msgid, ts > UINT32_MAX ? UINT32_MAX : (uint32_t)ts, sm,
                        g->nmap, n};
    msg_append(s, g, &rec, o);
    *nrcpt = n;
    return RCPT_OK;

error:
    group_drop_if_empty(s, gid, g);
    return rc;
}

uint32_t rcpt_read(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                   uint64_t msgid, uint64_t horizon_ms)
{
    struct rgroup *g = group_get(s, gid);
    uint32_t seq, mapid;
    struct rmsg *m = msg_find(s, g, msgid, horizon_ms, &seq);

    if (m == NULL || !(m->state & ST_OPEN) || (mapid = member(g, uid)) == NOMAP)
        return 0;
    return open_mark(s, g, m->state & ~ST_OPEN, mapid);
}

uint64_t rcpt_read_upto(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                        uint64_t upto, uint64_t horizon_ms)
{
    struct rgroup *g = group_get(s, gid);
    uint32_t mapid;
    uint64_t n = 0;

    if (g == NULL || (mapid = member(g, uid)) == NOMAP)
        return 0;
    /* Downwards: a collapse moves the last entry (already visited) into
     * the hole. Collapsed messages are read by everyone already. */
    for (uint32_t i = g->nopen; i-- > 0;) {
        const struct rmsg *m = rec_at(g, g->open[i]->seq);

        if (m->msgid <= upto && rec_visible(m, horizon_ms))
            n += open_mark(s, g, i, mapid);
    }
    return n;
}

int rcpt_count(const struct rcpt_store *s, uint64_t gid, uint64_t msgid,
               uint64_t horizon_ms, uint32_t *nread, uint32_t *nunread)
{
    const struct rgroup *g = group_get(s, gid);
    uint32_t seq;
    const struct rmsg *m = msg_find(s, g, msgid, horizon_ms, &seq);

    if (m == NULL)
        return RCPT_ENOMSG;
    if (m->state & ST_OPEN) {
        const struct ropen *o = g->open[m->state & ~ST_OPEN];

        *nread = o->nrcpt - o->nunread;
        *nunread = o->nunread;
    } else {
        *nread = m->state;
        *nunread = 0;
    }
    return RCPT_OK;
}

/* Word w of a message's recipient set: mapids < nmemb, minus the quit set
 * it was sent under, minus the sender. */
static uint64_t rcpt_word(const struct rmsg *m, const struct repoch *e,
                          uint32_t w)
{
    uint64_t x = ~UINT64_C(0);

    if (w == m->nmemb / 64)
        x = (UINT64_C(1) << (m->nmemb % 64)) - 1;
    if (e != NULL && w < e->nwords)
        x &= ~e->quit[w];
    if (m->sender != NOMAP && m->sender / 64 == w)
        x &= ~(UINT64_C(1) << (m->sender % 64));
    return x;
}

int rcpt_list(const struct rcpt_store *s, uint64_t gid, uint64_t msgid,
              uint64_t horizon_ms, bool want_read, uint32_t offset,
              uint32_t count, rcpt_uid_fn fn, void *ctx, uint32_t *n)
{
    const struct rgroup *g = group_get(s, gid);
    uint32_t seq, skip = offset;
    const struct rmsg *m = msg_find(s, g, msgid, horizon_ms, &seq);
    const struct ropen *o;
    const struct repoch *e;

    if (m == NULL)
        return RCPT_ENOMSG;
    o = (m->state & ST_OPEN) ? g->open[m->state & ~ST_OPEN] : NULL;
    e = epoch_of(g, seq);
    *n = 0;
    for (uint32_t w = 0; w < words_for(m->nmemb) && *n < count; w++) {
        uint64_t x;
        uint32_t c;

        /* The open bitmap holds "read or not a recipient", so its
         * complement is exactly the unread recipients. */
        if (want_read)
            x = rcpt_word(m, e, w) & (o != NULL ? o->bits[w] : ~UINT64_C(0));
        else
            x = o != NULL ? ~o->bits[w] : 0;
        c = (uint32_t)__builtin_popcountll(x);
        if (skip >= c) {
            skip -= c;
            continue;
        }
        for (; skip > 0; skip--)
            x &= x - 1;
        for (; x != 0 && *n < count; x &= x - 1, (*n)++)
            fn(g->mapuid[w * 64 + (uint32_t)__builtin_ctzll(x)], ctx);
    }
    return RCPT_OK;
}

size_t rcpt_expire(struct rcpt_store *s, uint64_t gid, uint64_t horizon_ms,
                   size_t max)
{
    struct rgroup *g = group_get(s, gid);
    size_t n;

    if (g == NULL)
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

/*
 * Counts the recipients of record m (sent under epoch e) and, given its
 * open bitmap, the unread ones; false when the bitmap misses a
 * non-recipient or a padding bit. O(nmemb / 64).
 */
static bool msg_tally(const struct rmsg *m, const struct repoch *e,
                      const uint64_t *bits, uint32_t *nrcpt, uint32_t *nunread)
{
    bool ok = true;

    *nrcpt = *nunread = 0;
    for (uint32_t w = 0; w < words_for(m->nmemb); w++) {
        uint64_t r = rcpt_word(m, e, w);

        *nrcpt += (uint32_t)__builtin_popcountll(r);
        if (bits != NULL) {
            ok &= (~r & ~bits[w]) == 0;
            *nunread += (uint32_t)__builtin_popcountll(~bits[w]);
        }
    }
    return ok;
}

/* Whether w[0..nw) (nw <= words_for(n)) sets a bit >= n. */
static bool bits_past(const uint64_t *w, uint32_t nw, uint32_t n)
{
    return nw == words_for(n) && n % 64 != 0 && w[nw - 1] >> (n % 64) != 0;
}

struct scan_ctx {
    const struct rcpt_walk *w;
    void *ctx;
};

static void scan_group(uint64_t gid, uint64_t val, void *arg)
{
    const struct scan_ctx *c = arg;
    const struct rgroup *g = (const struct rgroup *)(uintptr_t)val;
    const struct repoch *cur = NULL;

    if (g->nmap == 0 && idx_count(g) == 0)
        return; /* dead records only: nothing to keep */
    c->w->group(gid, g->nmap, g->mapuid, g->quit, c->ctx);
    for (uint32_t q = g->front_seq; q != g->next_seq; q++) {
        const struct rmsg *m = rec_at(g, q);
        struct rcpt_msg_info mi = {m->msgid, m->ts, m->nmemb, m->sender, NULL};
        const struct repoch *e;

        if (m->state == ST_DEAD)
            continue;
        /* Epochs follow send order: once set, e is never NULL again. */
        e = epoch_of(g, q);
        if (e != cur) {
            c->w->epoch(e->nwords, e->quit, c->ctx);
            cur = e;
        }
        if (m->state & ST_OPEN)
            mi.bits = g->open[m->state & ~ST_OPEN]->bits;
        c->w->msg(&mi, c->ctx);
    }
}

size_t rcpt_scan(const struct rcpt_store *s, uint64_t *cursor, size_t max,
                 const struct rcpt_walk *w, void *ctx)
{
    struct scan_ctx c = {w, ctx};

    return u64map_scan(s->groups, cursor, max, scan_group, &c);
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
    return RCPT_OK;
}

int rcpt_restore_member(struct rcpt_store *s, uint64_t gid, uint64_t uid,
                        bool quit)
{
    struct rgroup *g = group_get(s, gid);

    if (g == NULL || (uid == RCPT_UID_ANON && !quit))
        return 1;
    if (uid != RCPT_UID_ANON && member(g, uid) != NOMAP)
        return RCPT_EEXIST;
    if (g->nmap >= RCPT_MAX_MEMBERS)
        return RCPT_ELIMIT;
    if (member_add(s, g, uid) != 0)
        return RCPT_ENOMEM;
    if (quit)
        quit_mark(g, g->nmap - 1);
    return RCPT_OK;
}

int rcpt_restore_epoch(struct rcpt_store *s, uint64_t gid, uint32_t nwords,
                       const uint64_t *quit)
{
    struct rgroup *g = group_get(s, gid);

    if (g == NULL || nwords > words_for(g->nmap) ||
        (nwords > 0 && quit[nwords - 1] == 0) ||
        bits_past(quit, nwords, g->nmap))
        return 1;
    return epoch_push(s, g, nwords, quit) != 0 ? RCPT_ENOMEM : RCPT_OK;
}

int rcpt_restore_msg(struct rcpt_store *s, uint64_t gid,
                     const struct rcpt_msg_info *mi)
{
    struct rgroup *g = group_get(s, gid);
    struct rmsg rec = {mi->msgid, mi->ts, mi->sender, mi->nmemb, 0};
    struct ropen *o = NULL;
    uint32_t seq, nunread, nw = words_for(mi->nmemb);

    if (g == NULL || mi->nmemb > g->nmap ||
        (mi->sender != NOMAP && mi->sender >= mi->nmemb))
        return 1;
    if (idx_find(s, g, mi->msgid, &seq))
        return RCPT_EEXIST;
    if (group_live(g) >= RCPT_MAX_MESSAGES)
        return RCPT_ELIMIT;
    /* rec.state: the recipient count, the collapsed form's state */
    if (!msg_tally(&rec, epoch_of(g, g->next_seq), mi->bits, &rec.state,
                   &nunread) ||
        (mi->bits != NULL && nunread == 0))
        return 1;
    if (msg_reserve(s, g, mi->bits != NULL) != 0)
        return RCPT_ENOMEM;
    /* Loading has no latency to keep: a resize completes at once. */
    idx_migrate(s, g, UINT32_MAX);
    if (mi->bits != NULL) {
        o = open_alloc(s, nw, rec.state, nunread);
        if (o == NULL)
            return RCPT_ENOMEM;
        memcpy(o->bits, mi->bits, nw * sizeof(uint64_t));
    }
    msg_append(s, g, &rec, o);
    return RCPT_OK;
}

/* ---- Audit ------------------------------------------------------------- */

struct audit {
    const struct rcpt_store *s;
    size_t bad;
    size_t nmsgs;
    size_t bytes;
    size_t map_bytes;
};

/* Every mapid maps back to its uid, except erased users' (RCPT_UID_ANON,
 * in no map, quit): the map holds the others. */
static void audit_members(struct audit *a, const struct rgroup *g)
{
    uint32_t nquit = 0, nanon = 0;

    if (g->uids != NULL) {
        a->bad += u64map_audit(g->uids);
        a->map_bytes += u64map_bytes(g->uids);
    } else {
        a->bad += g->nmap != 0;
    }
    for (uint32_t m = 0; m < g->nmap; m++) {
        bool anon =
            g->mapuid[m] == RCPT_UID_ANON && member(g, RCPT_UID_ANON) != m;

        a->bad += anon ? !bit_test(g->quit, m) : member(g, g->mapuid[m]) != m;
        nanon += anon;
        nquit += bit_test(g->quit, m);
    }
    if (g->uids != NULL)
        a->bad += u64map_count(g->uids) != g->nmap - nanon;
    for (uint32_t m = g->nmap; m < words_for(g->mapcap) * 64; m++)
        a->bad += bit_test(g->quit, m);
    a->bad += nquit != g->nquit;
}

/* One open record: the bitmap holds every non-recipient, and the counts
 * are its popcounts. */
static void audit_open(struct audit *a, const struct rgroup *g,
                       const struct rmsg *m, uint32_t seq)
{
    uint32_t oi = m->state & ~ST_OPEN, unread, nrcpt;
    const struct ropen *o;

    if (oi >= g->nopen) {
        a->bad++;
        return;
    }
    o = g->open[oi];
    if (o->seq != seq || o->nwords != words_for(m->nmemb)) {
        a->bad++;
        return;
    }
    a->bad += !msg_tally(m, epoch_of(g, seq), o->bits, &nrcpt, &unread);
    a->bad += unread != o->nunread || nrcpt != o->nrcpt || unread == 0;
}

static void audit_messages(struct audit *a, const struct rgroup *g)
{
    uint32_t live = 0, nopen = 0, seq;
    const struct repoch *prev = NULL;

    for (uint32_t q = g->front_seq; q != g->next_seq; q++) {
        const struct rmsg *m = rec_at(g, q);

        if (m->state == ST_DEAD)
            continue;
        live++;
        a->bad += !idx_find(a->s, g, m->msgid, &seq) || seq != q;
        a->bad +=
            m->nmemb > g->nmap || (m->sender != NOMAP && m->sender >= m->nmemb);
        if (m->state & ST_OPEN) {
            nopen++;
            audit_open(a, g, m, q);
        } else {
            uint32_t nrcpt, unread;

            msg_tally(m, epoch_of(g, q), NULL, &nrcpt, &unread);
            a->bad += nrcpt != m->state;
        }
    }
    a->bad += live != idx_count(g) || nopen != g->nopen;
    a->bad += (g->old.cap == 0) != (g->old.count == 0);
    a->bad += group_live(g) > RCPT_MAX_MESSAGES;
    for (uint32_t i = 0; i < g->epochs.n; i++) {
        const struct repoch *e = pq_at(&g->epochs, i);

        a->bad += e->nwords > 0 && e->quit[e->nwords - 1] == 0;
        a->bad += prev != NULL && (int32_t)(e->first_seq - prev->first_seq) < 0;
        a->bytes += epoch_size(e->nwords);
        prev = e;
    }
    a->nmsgs += live;
}

/* The bytes a group should account for, from its shapes. */
static size_t group_bytes(const struct rgroup *g)
{
    size_t b = sizeof(*g) + (g->idx.cap + g->old.cap) * sizeof(uint32_t) +
               g->opencap * sizeof(*g->open) + g->mapcap * sizeof(*g->mapuid) +
               words_for(g->mapcap) * sizeof(*g->quit) +
               (g->chunks.cap + g->epochs.cap) * sizeof(void *);

    if (g->chunks.n > 0)
        b += chunk_bytes(CHUNK) * (g->chunks.n - 1) + chunk_bytes(g->tailcap);
    for (uint32_t i = 0; i < g->nopen; i++)
        b += open_size(g->open[i]->nwords);
    return b;
}

static void audit_visit(uint64_t gid, uint64_t val, void *ctx)
{
    struct audit *a = ctx;
    const struct rgroup *g = (const struct rgroup *)(uintptr_t)val;

    (void)gid;
    audit_members(a, g);
    audit_messages(a, g);
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
           (a.bytes + a.map_bytes + u64map_bytes(s->groups) != s->mem.bytes);
}

/* ---- Per user ---------------------------------------------------------- */

struct forget_ctx {
    struct rcpt_store *s;
    uint64_t uid;
    size_t n;
};

/* Changes the group's own uid map, never the group map being walked. */
static void forget_visit(uint64_t gid, uint64_t val, void *ctx)
{
    struct forget_ctx *fc = ctx;
    struct rgroup *g = (struct rgroup *)(uintptr_t)val;
    uint32_t m = member(g, fc->uid);

    (void)gid;
    if (m == NOMAP)
        return;
    u64map_del(g->uids, fc->uid);
    g->mapuid[m] = RCPT_UID_ANON;
    if (!bit_test(g->quit, m))
        quit_mark(g, m);
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
    uint64_t uid;
    rcpt_user_fn fn;
    void *ctx;
    size_t n;
};

static void user_visit(uint64_t gid, uint64_t val, void *ctx)
{
    struct user_ctx *uc = ctx;
    const struct rgroup *g = (const struct rgroup *)(uintptr_t)val;
    uint32_t m = member(g, uc->uid);

    if (m == NOMAP)
        return;
    uc->fn(gid, m, bit_test(g->quit, m), uc->ctx);
    uc->n++;
}

size_t rcpt_user_info(const struct rcpt_store *s, uint64_t uid, rcpt_user_fn fn,
                      void *ctx)
{
    struct user_ctx uc = {uid, fn, ctx, 0};
    uint64_t cursor = 0;

    do
        u64map_scan(s->groups, &cursor, SIZE_MAX, user_visit, &uc);
    while (cursor != 0);
    return uc.n;
}
