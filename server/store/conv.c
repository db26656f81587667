/*
 * conv.c - CONV: users in a wmap; a user's conversations in its entry (one
 * conversation), in a sorted array (up to CONV_SMALL_MAX) or in a u64map of
 * their own (more).
 *
 * User entry (struct wmap_val, stored next to the uid's hash):
 *   one conversation:  a = cid,   b = the conversation's word
 *   several:           a = total, b = pointer | TAG_ARR or | TAG_MAP
 * So a user with one conversation costs one wmap entry (~27 bytes) and
 * nothing else, its total being that conversation's contribution; with
 * several, the total is stored and adjusted by every mutation.
 *
 * Conversation word (8 bytes), two forms told apart by bit 0:
 *   bit 0 = 1, compact: bit 1 muted, bits 2..22 span = max - read,
 *       bits 23..63 read. No recalled seq is remembered, so unread = span.
 *   bit 0 = 0: pointer to a struct conv_full (read, max, muted, flags and
 *       the recalled seqs above read), for the rare conversation with
 *       recalled seqs above its watermark, read >= 2^41, 2^21 unread or
 *       more, or a chat feature (below).
 * The encoding is canonical (compact whenever the state fits) so that
 * conv_audit can check it; the all-zero state (compact word W_ZERO) is
 * never stored. malloc'd pointers are 8-aligned: their three low bits are
 * free for the tags, and a compact word (bit 0 set) is never a tag.
 *
 * The chat features live out of line, behind the full record: its `ext`
 * points to a struct conv_ext holding the sparse ids, the tag lists
 * (mentions, sources) and the threads, each a sorted vector allocated
 * only when non-empty (8 bytes an entry). A thread is a timeline of its
 * own, encoded exactly as a conversation's main timeline (a word: compact,
 * or a full record that may have an ext without threads), kept in a
 * sorted {tid, word} array. So a conversation that uses none of them
 * costs what it always did; one with a mention costs a full record
 * (32 bytes), an ext (112) and 8 + 8 bytes a mention.
 *
 * Sorted array (struct conv_uarr): a 4-byte header, the cids ascending in
 * the bytes the largest needs (1, 2, 4 or 8), padding to 8 and the words,
 * sized exactly: 8 + 1 bytes a conversation plus ~8 a user for cids below
 * 256 (4 conversations: 40 bytes), 16 + 8 for 64-bit cids. A user
 * past CONV_SMALL_MAX conversations moves to a u64map cid -> word (a word
 * is never 0), so that adding a conversation never costs more than moving
 * CONV_SMALL_MAX records; it moves back below half of that.
 *
 * Every mutation plans what it will allocate, allocates it, and only then
 * changes anything: a failed allocation leaves the store as it was.
 */
#include "conv.h"

#include "db.h"
#include "mem.h"
#include "u64map.h"
#include "wmap.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(_Alignof(max_align_t) >= 8, "three tag bits in pointers");

#define TAG_MASK UINT64_C(7)
#define TAG_ARR UINT64_C(2)
#define TAG_MAP UINT64_C(4)

#define W_COMPACT UINT64_C(1)
#define W_MUTED UINT64_C(2)
#define SPAN_SHIFT 2
#define SPAN_BITS 21
#define READ_SHIFT 23
#define READ_BITS 41
#define W_ZERO W_COMPACT

/* conv_full.flags */
#define F_SPARSE 1u    /* ids are sparse: the unread ones are kept */
#define F_COLLAPSED 2u /* thread unread stays out of the conversation's */
#define F_ALL (F_SPARSE | F_COLLAPSED)

/* A sorted vector of u64 (seqs or ids), sized exactly. */
struct seqv {
    uint32_t n, cap;
    uint64_t v[];
};

struct crec {
    uint64_t cid, w; /* a thread's record: cid is its tid */
};

struct conv_arr {
    uint32_t n, cap; /* cap > n only after a failed shrink */
    struct crec r[];
};

/* A user's conversations, 2..CONV_SMALL_MAX: the header, the n cids
 * ascending in cw bytes each, padding to 8, the n words (uarr_words). */
struct conv_uarr {
    uint32_t n : 24;
    uint32_t cw : 8; /* bytes a cid: 1, 2, 4 or 8 */
    uint8_t d[];
};

/* The chat features of one timeline (threads: the main one only). */
struct conv_ext {
    struct seqv *ids;            /* sparse: kept ids, in (read, max] */
    uint64_t lost;               /* sparse: the newest dropped id; 0 none */
    struct seqv *tag[CONV_TAGS]; /* mentions, sources: in (read, max] */
    struct conv_arr *thr;        /* threads by tid */
    uint64_t thr_unread;         /* sum of the threads' unread */
    uint32_t thr_ment;           /* sum of the threads' mentions */
    uint32_t thr_busy;           /* threads with unread */
};

struct conv_full {
    uint64_t read, max;
    uint32_t nrec; /* recalled seqs, ascending: dense above read, sparse
                      above max */
    uint16_t cap;  /* room in rec[] (<= CONV_RECALL_MAX) */
    uint8_t muted;
    uint8_t flags; /* F_* */
    struct conv_ext *ext;
    uint64_t rec[];
};

struct conv_store {
    struct wmap *users;
    struct mem_acct mem; /* users, arrays, records, extensions, user maps */
    size_t convs;        /* (user, conversation) entries */
};

/* One timeline's state while an operation works on it. */
struct cst {
    uint64_t read, max;
    bool muted;
    uint8_t flags;
    struct conv_full *f; /* its record when it has one (or is getting one) */
};

/* ---- Counted allocations (mem.h) -------------------------------------- */

static void *heap_alloc(struct conv_store *s, size_t n)
{
    return mem_zalloc(&s->mem, n);
}

static void heap_free(struct conv_store *s, void *p, size_t n)
{
    mem_free(&s->mem, p, n);
}

/* p resized from old to n bytes: the new address, or NULL with p intact
 * when growing fails (a shrink never fails: mem.h). */
static void *heap_realloc(struct conv_store *s, void *p, size_t old, size_t n)
{
    return mem_realloc(&s->mem, p, old, n);
}

/* ---- Sorted vectors ----------------------------------------------------- */

static inline size_t sv_size(uint32_t cap)
{
    return sizeof(struct seqv) + (size_t)cap * sizeof(uint64_t);
}

static inline uint32_t sv_n(const struct seqv *v)
{
    return v ? v->n : 0;
}

/* How many entries of v are <= x (v may be NULL). */
static uint32_t sv_upto(const struct seqv *v, uint64_t x)
{
    uint32_t lo = 0, hi = sv_n(v);

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (v->v[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool sv_has(const struct seqv *v, uint64_t x)
{
    uint32_t i = sv_upto(v, x);

    return i > 0 && v->v[i - 1] == x;
}

/* Room for k more entries. 0, or CONV_ENOMEM with *pv unchanged. */
static int sv_reserve(struct conv_store *s, struct seqv **pv, uint32_t k)
{
    struct seqv *v = *pv, *nv;
    uint32_t n = sv_n(v);

    if (k == 0 || (v != NULL && v->cap >= n + k))
        return 0;
    nv = v ? heap_realloc(s, v, sv_size(v->cap), sv_size(n + k))
           : heap_alloc(s, sv_size(k));
    if (nv == NULL)
        return CONV_ENOMEM;
    nv->cap = n + k;
    *pv = nv;
    return 0;
}

/* Frees an empty vector, shrinks a loose one. */
static void sv_fit(struct conv_store *s, struct seqv **pv)
{
    struct seqv *v = *pv, *nv;

    if (v == NULL || v->cap == v->n)
        return;
    if (v->n == 0) {
        heap_free(s, v, sv_size(v->cap));
        *pv = NULL;
        return;
    }
    nv = heap_realloc(s, v, sv_size(v->cap), sv_size(v->n)); /* a shrink */
    nv->cap = nv->n;
    *pv = nv;
}

static void sv_free(struct conv_store *s, struct seqv **pv)
{
    if (*pv != NULL)
        heap_free(s, *pv, sv_size((*pv)->cap));
    *pv = NULL;
}

/* Inserts x, absent, into v, which has room. */
static void sv_insert(struct seqv *v, uint64_t x)
{
    uint32_t i = sv_upto(v, x);

    memmove(&v->v[i + 1], &v->v[i], (v->n - i) * sizeof(uint64_t));
    v->v[i] = x;
    v->n++;
}

/* Drops the k oldest (smallest) entries, keeping the block. */
static void sv_drop_front(struct seqv *v, uint32_t k)
{
    if (k > v->n)
        k = v->n;
    v->n -= k;
    memmove(v->v, v->v + k, v->n * sizeof(uint64_t));
}

/*
 * Removes x when present; whether it was. Removals keep the block (room
 * an operation reserved must survive them): cst_tidy fits every vector
 * once the operation is done.
 */
static bool sv_remove(struct seqv *v, uint64_t x)
{
    uint32_t i = sv_upto(v, x);

    if (i == 0 || v->v[i - 1] != x)
        return false;
    memmove(&v->v[i - 1], &v->v[i], (v->n - i) * sizeof(uint64_t));
    v->n--;
    return true;
}

/* Removes every entry <= x, keeping the block. */
static void sv_prune(struct seqv *v, uint64_t x)
{
    uint32_t k = sv_upto(v, x);

    if (k > 0)
        sv_drop_front(v, k);
}

/* ---- Records ------------------------------------------------------------ */

static inline bool is_compact(uint64_t w)
{
    return w & W_COMPACT;
}

static inline struct conv_full *full_of(uint64_t w)
{
    return (struct conv_full *)(uintptr_t)w;
}

static inline size_t full_size(uint32_t cap)
{
    return sizeof(struct conv_full) + (size_t)cap * sizeof(uint64_t);
}

static inline size_t arr_size(uint32_t cap)
{
    return sizeof(struct conv_arr) + (size_t)cap * sizeof(struct crec);
}

/* A record with room for cap recalled seqs and none yet, or NULL. */
static struct conv_full *full_alloc(struct conv_store *s, uint32_t cap)
{
    struct conv_full *f = heap_alloc(s, full_size(cap));

    if (f != NULL)
        f->cap = (uint16_t)cap;
    return f;
}

/* Frees the record itself (its ext is the caller's). */
static void full_free(struct conv_store *s, struct conv_full *f)
{
    heap_free(s, f, full_size(f->cap));
}

/* f resized to cap: the new address, or NULL with f intact. */
static struct conv_full *full_resize(struct conv_store *s, struct conv_full *f,
                                     uint32_t cap)
{
    struct conv_full *nf =
        heap_realloc(s, f, full_size(f->cap), full_size(cap));

    if (nf != NULL)
        nf->cap = (uint16_t)cap;
    return nf;
}

static bool ext_empty(const struct conv_ext *e)
{
    if (e->ids != NULL || e->lost != 0 || e->thr != NULL)
        return false;
    for (unsigned k = 0; k < CONV_TAGS; k++)
        if (e->tag[k] != NULL)
            return false;
    return true;
}

static void word_free(struct conv_store *s, uint64_t w);

/* Frees an ext and everything it holds, threads included. */
static void ext_free(struct conv_store *s, struct conv_ext *e)
{
    if (e == NULL)
        return;
    sv_free(s, &e->ids);
    for (unsigned k = 0; k < CONV_TAGS; k++)
        sv_free(s, &e->tag[k]);
    if (e->thr != NULL) {
        for (uint32_t i = 0; i < e->thr->n; i++)
            word_free(s, e->thr->r[i].w);
        heap_free(s, e->thr, arr_size(e->thr->cap));
    }
    heap_free(s, e, sizeof(*e));
}

/* Frees what a stored word owns. */
static void word_free(struct conv_store *s, uint64_t w)
{
    if (is_compact(w))
        return;
    ext_free(s, full_of(w)->ext);
    full_free(s, full_of(w));
}

static inline struct conv_ext *cst_ext(const struct cst *c)
{
    return c->f ? c->f->ext : NULL;
}

static void cst_load(uint64_t w, struct cst *c)
{
    if (is_compact(w)) {
        c->read = w >> READ_SHIFT;
        c->max =
            c->read + ((w >> SPAN_SHIFT) & ((UINT64_C(1) << SPAN_BITS) - 1));
        c->muted = w & W_MUTED;
        c->flags = 0;
        c->f = NULL;
    } else {
        c->f = full_of(w);
        c->read = c->f->read;
        c->max = c->f->max;
        c->muted = c->f->muted;
        c->flags = c->f->flags;
    }
}

/* How many recalled seqs of f are <= seq (f may be NULL). */
static uint32_t rec_upto(const struct conv_full *f, uint64_t seq)
{
    uint32_t lo = 0, hi = f ? f->nrec : 0;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (f->rec[mid] <= seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool rec_has(const struct conv_full *f, uint64_t seq)
{
    uint32_t i = rec_upto(f, seq);

    return i > 0 && f->rec[i - 1] == seq;
}

static inline uint32_t sat32(uint64_t v)
{
    return v > CONV_UNREAD_MAX ? CONV_UNREAD_MAX : (uint32_t)v;
}

/* The timeline's own unread, threads aside, unsaturated. */
static uint64_t tl_unread(const struct cst *c)
{
    const struct conv_ext *e = cst_ext(c);

    if (c->flags & F_SPARSE)
        return sv_n(e ? e->ids : NULL) + (e != NULL && e->lost != 0);
    return c->max - c->read - rec_upto(c->f, c->max);
}

static uint32_t tl_mentions(const struct cst *c)
{
    const struct conv_ext *e = cst_ext(c);

    return e ? sv_n(e->tag[CONV_TAG_MENTION]) : 0;
}

/* Whether the conversation's counts include its threads'. */
static inline bool rolls_up(const struct cst *c)
{
    return !(c->flags & F_COLLAPSED);
}

/* The conversation's unread: its own, plus its threads' when rolled up. */
static uint32_t cst_unread(const struct cst *c)
{
    const struct conv_ext *e = cst_ext(c);
    uint64_t u = tl_unread(c);

    if (u >= CONV_UNREAD_MAX)
        return CONV_UNREAD_MAX;
    if (e != NULL && rolls_up(c))
        u += e->thr_unread;
    return sat32(u);
}

static uint32_t cst_mentions(const struct cst *c)
{
    const struct conv_ext *e = cst_ext(c);

    return tl_mentions(c) + (e != NULL && rolls_up(c) ? e->thr_ment : 0);
}

/* What the conversation adds to its user's total. */
static uint32_t cst_contrib(const struct cst *c)
{
    return c->muted ? 0 : cst_unread(c);
}

static uint32_t word_unread(uint64_t w)
{
    struct cst c;

    cst_load(w, &c);
    return cst_unread(&c);
}

static uint32_t word_contrib(uint64_t w)
{
    struct cst c;

    cst_load(w, &c);
    return cst_contrib(&c);
}

/* The timeline's first unread seq (0 when none): dense, the first of
 * (read, max] not recalled; sparse, the newest dropped id when some are,
 * else the oldest kept one. */
static uint64_t tl_first_unread(const struct cst *c)
{
    const struct conv_ext *e = cst_ext(c);
    uint64_t q;

    if (c->flags & F_SPARSE) {
        if (e != NULL && e->lost != 0)
            return e->lost;
        return sv_n(e ? e->ids : NULL) ? e->ids->v[0] : 0;
    }
    if (tl_unread(c) == 0)
        return 0;
    q = c->read + 1;
    for (uint32_t i = 0; c->f && i < c->f->nrec && c->f->rec[i] == q; i++)
        q++;
    return q;
}

static inline bool fits_compact(const struct cst *c)
{
    return (c->f == NULL || (c->f->nrec == 0 && c->f->ext == NULL)) &&
           c->flags == 0 && c->read >> READ_BITS == 0 &&
           (c->max - c->read) >> SPAN_BITS == 0;
}

/* Frees what the timeline holds empty: vectors, the thread array, the
 * ext. Never allocates. */
static void cst_tidy(struct conv_store *s, struct cst *c)
{
    struct conv_ext *e = cst_ext(c);

    if (e == NULL)
        return;
    sv_fit(s, &e->ids);
    for (unsigned k = 0; k < CONV_TAGS; k++)
        sv_fit(s, &e->tag[k]);
    if (e->thr != NULL && e->thr->n == 0) {
        heap_free(s, e->thr, arr_size(e->thr->cap));
        e->thr = NULL;
    } else if (e->thr != NULL && e->thr->cap > e->thr->n) {
        struct conv_arr *a = /* a shrink: never fails (mem.h) */
            heap_realloc(s, e->thr, arr_size(e->thr->cap), arr_size(e->thr->n));

        a->cap = a->n;
        e->thr = a;
    }
    if (ext_empty(e)) {
        heap_free(s, e, sizeof(*e));
        c->f->ext = NULL;
    }
}

/*
 * The canonical word for c: compact when it fits (freeing c's record if it
 * had one), else c's record, allocated when missing. 0, or CONV_ENOMEM with
 * nothing changed.
 */
static int cst_encode(struct conv_store *s, struct cst *c, uint64_t *w)
{
    cst_tidy(s, c);
    if (fits_compact(c)) {
        if (c->f != NULL)
            full_free(s, c->f);
        c->f = NULL;
        *w = W_COMPACT | (c->muted ? W_MUTED : 0) |
             (c->max - c->read) << SPAN_SHIFT | c->read << READ_SHIFT;
        return 0;
    }
    if (c->f == NULL && (c->f = full_alloc(s, 0)) == NULL)
        return CONV_ENOMEM;
    c->f->read = c->read;
    c->f->max = c->max;
    c->f->muted = c->muted;
    c->f->flags = c->flags;
    *w = (uint64_t)(uintptr_t)c->f;
    return 0;
}

/* Whether the timeline holds nothing (its sparse flag aside). */
static bool tl_zero(const struct cst *c)
{
    return c->read == 0 && c->max == 0 && !c->muted &&
           !(c->flags & F_COLLAPSED) && (c->f == NULL || c->f->nrec == 0) &&
           cst_ext(c) == NULL;
}

/* ---- Tags (mentions, sources) ------------------------------------------ */

/* The tag lists a request writes: bit k for list k. */
static uint32_t req_tags(const struct conv_req *rq)
{
    return (rq->flags & CONV_MENTION ? 1u << CONV_TAG_MENTION : 0) |
           (rq->flags & CONV_SOURCE ? 1u << (1 + rq->source) : 0);
}

/* Removes seq from every tag list. */
static void tags_remove(struct conv_ext *e, uint64_t seq)
{
    if (e == NULL)
        return;
    for (unsigned k = 0; k < CONV_TAGS; k++)
        sv_remove(e->tag[k], seq);
}

/* Tags seq in list k (room reserved unless full); past CONV_TAG_MAX the
 * oldest is forgotten. A message has one source: tagging it with one
 * removes it from the others. */
static void tag_add(struct conv_ext *e, unsigned k, uint64_t seq)
{
    if (sv_has(e->tag[k], seq))
        return;
    if (k != CONV_TAG_MENTION)
        for (unsigned j = 1; j < CONV_TAGS; j++)
            if (j != k)
                sv_remove(e->tag[j], seq);
    if (e->tag[k]->n == CONV_TAG_MAX)
        sv_drop_front(e->tag[k], 1);
    sv_insert(e->tag[k], seq);
}

/* Appends the k new seqs of an INCR, seqs[k-1] the smallest, all above
 * every seq of list t, keeping the newest CONV_TAG_MAX (room reserved). */
static void tag_append(struct seqv *v, const uint64_t *seqs, uint32_t k)
{
    if (v->n + k > CONV_TAG_MAX)
        sv_drop_front(v, v->n + k - CONV_TAG_MAX);
    for (uint32_t i = k; i-- > 0;)
        v->v[v->n++] = seqs[i];
}

/* ---- Operations on one timeline ---------------------------------------- */

/* Forgets the recalled seqs <= upto: dense, those at or below the
 * watermark (they no longer count either way); sparse, those at or below
 * max (ids there are never added again). */
static void rec_prune(struct conv_store *s, struct cst *c, uint64_t upto)
{
    struct conv_full *f = c->f, *nf;
    uint32_t k = rec_upto(f, upto);

    if (k == 0)
        return;
    f->nrec -= k;
    memmove(f->rec, f->rec + k, f->nrec * sizeof(uint64_t));
    nf = full_resize(s, f, f->nrec); /* a shrink: never fails (mem.h) */
    c->f = nf;
}

/* Remembers seq as recalled (room reserved); idempotent. */
static void rec_insert(struct conv_full *f, uint64_t seq)
{
    uint32_t i = rec_upto(f, seq);

    if (i > 0 && f->rec[i - 1] == seq)
        return;
    memmove(f->rec + i + 1, f->rec + i, (f->nrec - i) * sizeof(uint64_t));
    f->rec[i] = seq;
    f->nrec++;
}

/* Moves the watermark (either way); max follows it up; what is at or
 * below it stops being held. */
static void tl_set_read(struct conv_store *s, struct cst *c, uint64_t read)
{
    struct conv_ext *e;

    c->read = read;
    if (read > c->max)
        c->max = read;
    rec_prune(s, c, c->flags & F_SPARSE ? c->max : read);
    e = cst_ext(c);
    if (e == NULL)
        return;
    sv_prune(e->ids, read);
    if (e->lost <= read)
        e->lost = 0;
    for (unsigned k = 0; k < CONV_TAGS; k++)
        sv_prune(e->tag[k], read);
}

/* What an op will allocate before it changes anything. */
struct plan {
    bool rec;     /* one more recalled seq */
    bool f;       /* a record (sparse timelines have one) */
    bool ext;     /* an ext */
    uint32_t ids; /* sparse id slots */
    uint32_t tag[CONV_TAGS];
    uint32_t nnew; /* INCR: new seqs to tag, newest first */
    uint64_t fresh[CONV_TAG_MAX];
};

/* Seqs INCR adds to the tags: the non-recalled ones of (from, to], the
 * newest CONV_TAG_MAX, newest first. */
static uint32_t incr_new_seqs(const struct cst *c, uint64_t from, uint64_t to,
                              uint64_t *out)
{
    uint32_t k = 0;

    for (uint64_t q = to; q > from && k < CONV_TAG_MAX; q--)
        if (!rec_has(c->f, q))
            out[k++] = q;
    return k;
}

/* Slots list k needs for one more seq (0 when present or full). */
static uint32_t tag_room(const struct cst *c, unsigned k, uint64_t seq)
{
    const struct conv_ext *e = cst_ext(c);
    const struct seqv *v = e ? e->tag[k] : NULL;

    return sv_has(v, seq) || sv_n(v) == CONV_TAG_MAX ? 0 : 1;
}

/* Plans tagging seq with every list of mask. */
static void plan_tags(const struct cst *c, uint32_t mask, uint64_t seq,
                      struct plan *p)
{
    for (unsigned k = 0; k < CONV_TAGS; k++)
        if (mask & (1u << k)) {
            p->tag[k] = tag_room(c, k, seq);
            p->ext = true;
        }
}

/*
 * Fills p for rq on c (in c's mode). 0, or CONV_ELIMIT (a recall past
 * CONV_RECALL_MAX). Pure: changes nothing.
 */
static int tl_plan(const struct cst *c, const struct conv_req *rq,
                   struct plan *p)
{
    const struct conv_ext *e = cst_ext(c);
    bool sparse = c->flags & F_SPARSE;
    uint32_t mask = req_tags(rq), nrec = c->f ? c->f->nrec : 0;
    uint64_t arg = rq->arg;

    memset(p, 0, offsetof(struct plan, fresh));
    p->f = sparse;
    switch (rq->op) {
    case CONV_OP_INCR:
        if (mask != 0 && rq->arg != 0) {
            uint64_t to = arg > UINT64_MAX - c->max ? UINT64_MAX : c->max + arg;

            p->nnew = incr_new_seqs(c, c->max, to, p->fresh);
            for (unsigned k = 0; k < CONV_TAGS && p->nnew; k++)
                if (mask & (1u << k)) {
                    uint32_t n = e ? sv_n(e->tag[k]) : 0, want = n + p->nnew;

                    p->tag[k] = (want > CONV_TAG_MAX ? CONV_TAG_MAX : want) - n;
                    p->ext = true;
                }
        }
        break;
    case CONV_OP_SEQ:
        if (sparse && arg > c->max && !rec_has(c->f, arg)) {
            uint32_t n = sv_n(e ? e->ids : NULL);

            p->ext = true;
            p->ids = n + 1 > rq->window ? 0 : 1;
            plan_tags(c, mask, arg, p);
        } else if (sparse ? arg > c->read && sv_has(e ? e->ids : NULL, arg)
                          : arg > c->read && !rec_has(c->f, arg)) {
            plan_tags(c, mask, arg, p);
        }
        break;
    case CONV_OP_MARKUNREAD:
        if (sparse && !sv_has(e ? e->ids : NULL, arg)) {
            p->ext = true;
            p->ids = 1;
        }
        break;
    case CONV_OP_RECALL:
        if (sparse ? !sv_has(e ? e->ids : NULL, arg) && arg > c->max &&
                         !rec_has(c->f, arg)
                   : arg > c->read && !rec_has(c->f, arg)) {
            if (nrec == CONV_RECALL_MAX)
                return CONV_ELIMIT;
            p->rec = true;
        }
        break;
    default:
        break;
    }
    return 0;
}

/*
 * Allocates what p asks of c: its record (fresh: *fresh set, c's state is
 * still in c's fields), room for a recalled seq, its ext, room in its
 * vectors. 0, or CONV_ENOMEM with everything it allocated freed again (a
 * grown vector may keep its room).
 */
static int tl_alloc(struct conv_store *s, struct cst *c, const struct plan *p,
                    bool *fresh)
{
    bool need_ext = p->ext || p->ids;
    struct conv_ext *e;

    *fresh = false;
    if (c->f == NULL && (p->f || p->rec || need_ext)) {
        c->f = full_alloc(s, p->rec ? 1 : 0);
        if (c->f == NULL)
            return CONV_ENOMEM;
        *fresh = true;
    } else if (p->rec && c->f->cap == c->f->nrec) {
        struct conv_full *nf = full_resize(s, c->f, c->f->nrec + 1);

        if (nf == NULL)
            return CONV_ENOMEM;
        c->f = nf;
    }
    if (!need_ext)
        return 0;
    if (c->f->ext == NULL &&
        (c->f->ext = heap_alloc(s, sizeof(struct conv_ext))) == NULL)
        goto error;
    e = c->f->ext;
    if (sv_reserve(s, &e->ids, p->ids) != 0)
        goto error;
    for (unsigned k = 0; k < CONV_TAGS; k++)
        if (sv_reserve(s, &e->tag[k], p->tag[k]) != 0)
            goto error;
    return 0;
error:
    cst_tidy(s, c);
    if (*fresh) {
        full_free(s, c->f);
        c->f = NULL;
    }
    return CONV_ENOMEM;
}

/* Sparse: keeps at most window ids, forgetting the oldest (remembered as
 * lost) and their tags, so that one more fits when `room`. */
static void ids_trim(struct conv_ext *e, uint32_t window, bool room)
{
    uint32_t keep = room ? window - 1 : window;

    while (sv_n(e->ids) > keep) {
        e->lost = e->ids->v[0];
        sv_drop_front(e->ids, 1);
        tags_remove(e, e->lost);
    }
}

/* Sparse SEQ: a new id above max counts one (unless recalled ahead). */
static void sparse_seq(struct conv_store *s, struct cst *c,
                       const struct conv_req *rq, uint32_t mask)
{
    struct conv_ext *e = cst_ext(c);
    uint64_t id = rq->arg;
    bool tag;

    if (id > c->max) {
        bool recalled = rec_has(c->f, id);

        c->max = id;
        rec_prune(s, c, id);
        e = cst_ext(c);
        if (recalled)
            return;
        ids_trim(e, rq->window, true);
        sv_insert(e->ids, id);
        tag = true;
    } else {
        tag = id > c->read && e != NULL && sv_has(e->ids, id);
    }
    for (unsigned k = 0; tag && k < CONV_TAGS; k++)
        if (mask & (1u << k))
            tag_add(e, k, id);
}

/* Sparse MARKUNREAD: id becomes the first unread; the ids between it and
 * the old watermark were forgotten when read and do not come back. */
static void sparse_markunread(struct conv_store *s, struct cst *c,
                              const struct conv_req *rq)
{
    uint64_t id = rq->arg;
    bool recalled = id > c->max && rec_has(c->f, id);
    struct conv_ext *e;

    tl_set_read(s, c, id - 1);
    if (id > c->max)
        c->max = id;
    rec_prune(s, c, c->max);
    e = cst_ext(c);
    if (recalled || e == NULL || sv_has(e->ids, id) || e->lost >= id)
        return;
    if (sv_n(e->ids) >= rq->window) {
        e->lost = id; /* older than every kept one: dropped at once */
        return;
    }
    if (e->ids == NULL)
        return; /* not reserved: cannot happen (planned) */
    sv_insert(e->ids, id);
}

/* Applies rq to c, everything allocated (tl_plan, tl_alloc): cannot fail. */
static void tl_do(struct conv_store *s, struct cst *c,
                  const struct conv_req *rq, const struct plan *p)
{
    struct conv_ext *e = cst_ext(c);
    uint32_t mask = req_tags(rq);
    uint64_t arg = rq->arg;

    switch (rq->op) {
    case CONV_OP_INCR:
        c->max = arg > UINT64_MAX - c->max ? UINT64_MAX : c->max + arg;
        for (unsigned k = 0; k < CONV_TAGS && p->nnew; k++)
            if (mask & (1u << k))
                tag_append(e->tag[k], p->fresh, p->nnew);
        break;
    case CONV_OP_SEQ:
        if (c->flags & F_SPARSE) {
            sparse_seq(s, c, rq, mask);
            break;
        }
        if (arg > c->max)
            c->max = arg;
        if (arg > c->read && !rec_has(c->f, arg))
            for (unsigned k = 0; k < CONV_TAGS; k++)
                if (mask & (1u << k))
                    tag_add(e, k, arg);
        break;
    case CONV_OP_READ_ALL:
        tl_set_read(s, c, c->max);
        break;
    case CONV_OP_READ:
        if (arg > c->read)
            tl_set_read(s, c, arg);
        break;
    case CONV_OP_MARKUNREAD:
        if (c->flags & F_SPARSE) {
            sparse_markunread(s, c, rq);
            break;
        }
        tl_set_read(s, c, arg - 1);
        if (arg > c->max)
            c->max = arg;
        break;
    case CONV_OP_RECALL:
        if (c->flags & F_SPARSE) {
            if (e != NULL && sv_remove(e->ids, arg))
                tags_remove(e, arg);
            else if (p->rec)
                rec_insert(c->f, arg);
        } else if (arg > c->read) {
            if (p->rec)
                rec_insert(c->f, arg);
            tags_remove(e, arg);
        }
        break;
    case CONV_OP_MUTE:
        c->muted = arg;
        break;
    case CONV_OP_ROLLUP:
        c->flags =
            (uint8_t)(arg ? c->flags & ~F_COLLAPSED : c->flags | F_COLLAPSED);
        break;
    }
}

/* Plans, allocates and applies rq to timeline c. 0, CONV_ELIMIT or
 * CONV_ENOMEM (nothing changed; c's record freed again when fresh). */
static int tl_apply(struct conv_store *s, struct cst *c,
                    const struct conv_req *rq, bool *fresh)
{
    struct plan p;
    int rc = tl_plan(c, rq, &p);

    if (rc == 0)
        rc = tl_alloc(s, c, &p, fresh);
    if (rc == 0)
        tl_do(s, c, rq, &p);
    return rc;
}

/* ---- Threads ------------------------------------------------------------ */

/* First position whose cid (or tid) is >= cid (n when none). Branch-free,
 * as wmap's bucket search: cids in an array are in no predictable order. */
static uint32_t arr_index(const struct conv_arr *a, uint64_t cid)
{
    const struct crec *p = a->r;
    uint32_t n = a->n;

    while (n > 1) {
        uint32_t half = n / 2;

        p = p[half].cid < cid ? p + half : p;
        n -= half;
    }
    return (uint32_t)(p - a->r) + (n == 1 && p->cid < cid);
}

/* What one thread adds to its conversation's sums. */
struct tsum {
    uint64_t unread;
    uint32_t ment, busy;
};

static void tsum_of(const struct cst *t, struct tsum *ts)
{
    ts->unread = sat32(tl_unread(t));
    ts->ment = tl_mentions(t);
    ts->busy = ts->unread != 0;
}

/* The thread word of tid in e, or NULL. */
static uint64_t *thread_slot(const struct conv_ext *e, uint64_t tid)
{
    struct conv_arr *a = e ? e->thr : NULL;
    uint32_t i;

    if (a == NULL)
        return NULL;
    i = arr_index(a, tid);
    return i < a->n && a->r[i].cid == tid ? &a->r[i].w : NULL;
}

/* The thread that a new one replaces when the array is full: the lowest
 * tid without unread; a->n when all have some. */
static uint32_t thread_victim(const struct conv_arr *a)
{
    for (uint32_t i = 0; i < a->n; i++) {
        struct cst t;

        cst_load(a->r[i].w, &t); /* a sparse thread's record says so */
        if (tl_unread(&t) == 0)
            return i;
    }
    return a->n;
}

static void thread_load(uint64_t w, bool sparse, struct cst *t)
{
    cst_load(w, t);
    if (sparse)
        t->flags |= F_SPARSE;
}

/*
 * Applies rq to thread rq->tid of conversation c (whose mode is final):
 * *tun = the thread's unread after. The conversation gets a record and an
 * ext when it had none; its thread sums follow. 0, or CONV_ELIMIT,
 * CONV_ETHREADS, CONV_ENOMEM with nothing changed.
 */
static int thread_apply(struct conv_store *s, struct cst *c,
                        const struct conv_req *rq, uint32_t *tun)
{
    bool sparse = c->flags & F_SPARSE, fresh_c = false, fresh_t;
    struct conv_ext *e = cst_ext(c);
    uint64_t *slot = thread_slot(e, rq->tid), tw;
    uint32_t victim = UINT32_MAX;
    struct tsum before, after;
    struct conv_arr *a;
    struct cst t;
    int rc;

    thread_load(slot ? *slot : W_ZERO, sparse, &t);
    if (slot == NULL && e != NULL && e->thr != NULL &&
        e->thr->n == CONV_THREAD_MAX) {
        victim = thread_victim(e->thr);
        if (victim == e->thr->n)
            return CONV_ETHREADS;
    }
    /* The conversation's side: record, ext, room for one more thread. */
    if (c->f == NULL) {
        if ((c->f = full_alloc(s, 0)) == NULL)
            return CONV_ENOMEM;
        fresh_c = true;
    }
    if (c->f->ext == NULL &&
        (c->f->ext = heap_alloc(s, sizeof(struct conv_ext))) == NULL)
        goto nomem;
    e = c->f->ext;
    if (slot == NULL && victim == UINT32_MAX) {
        a = e->thr;
        if (a == NULL || a->n == a->cap) {
            uint32_t n = a ? a->n : 0;
            struct conv_arr *na =
                a ? heap_realloc(s, a, arr_size(a->cap), arr_size(n + 1))
                  : heap_alloc(s, arr_size(1));

            if (na == NULL)
                goto nomem;
            na->cap = n + 1;
            e->thr = na;
        }
    }
    tsum_of(&t, &before);
    rc = tl_apply(s, &t, rq, &fresh_t);
    if (rc != 0)
        goto undo;
    if (tl_zero(&t))
        t.flags &= (uint8_t)~F_SPARSE;
    rc = cst_encode(s, &t, &tw);
    if (rc != 0)
        goto undo; /* t had no record: only its fields changed */
    tsum_of(&t, &after);
    *tun = (uint32_t)after.unread;
    e->thr_unread = e->thr_unread - before.unread + after.unread;
    e->thr_ment = e->thr_ment - before.ment + after.ment;
    e->thr_busy = e->thr_busy - before.busy + after.busy;
    a = e->thr;
    slot = thread_slot(e, rq->tid);
    if (slot != NULL && tw != W_ZERO) {
        *slot = tw;
    } else if (slot != NULL) {
        uint32_t i = arr_index(a, rq->tid);

        a->n--;
        memmove(&a->r[i], &a->r[i + 1], (a->n - i) * sizeof(struct crec));
    } else if (tw != W_ZERO) {
        uint32_t i;

        if (victim != UINT32_MAX) {
            word_free(s, a->r[victim].w);
            a->n--;
            memmove(&a->r[victim], &a->r[victim + 1],
                    (a->n - victim) * sizeof(struct crec));
        }
        i = arr_index(a, rq->tid);
        memmove(&a->r[i + 1], &a->r[i], (a->n - i) * sizeof(struct crec));
        a->r[i] = (struct crec){rq->tid, tw};
        a->n++;
    }
    return 0;
nomem:
    rc = CONV_ENOMEM;
undo:
    cst_tidy(s, c);
    if (fresh_c) {
        full_free(s, c->f);
        c->f = NULL;
    }
    return rc;
}

/* ---- A user's conversations -------------------------------------------- */

static inline uint64_t user_tag(const struct wmap_val *u)
{
    uint64_t t = u->b & TAG_MASK;

    return t == TAG_ARR || t == TAG_MAP ? t : 0;
}

static inline struct conv_uarr *arr_of(const struct wmap_val *u)
{
    return (struct conv_uarr *)(uintptr_t)(u->b & ~TAG_MASK);
}

static inline struct u64map *map_of(const struct wmap_val *u)
{
    return (struct u64map *)(uintptr_t)(u->b & ~TAG_MASK);
}

static uint64_t user_total(const struct wmap_val *u)
{
    return user_tag(u) ? u->a : word_contrib(u->b);
}

/* Bytes a cid takes in an array whose largest is cid. */
static inline unsigned cid_width(uint64_t cid)
{
    return cid <= UINT8_MAX    ? 1
           : cid <= UINT16_MAX ? 2
           : cid <= UINT32_MAX ? 4
                               : 8;
}

/* Where the words of an array of n cids of cw bytes start. */
static inline size_t uarr_woff(uint32_t n, unsigned cw)
{
    return (sizeof(struct conv_uarr) + (size_t)n * cw + 7) & ~(size_t)7;
}

static inline size_t uarr_size(uint32_t n, unsigned cw)
{
    return uarr_woff(n, cw) + (size_t)n * sizeof(uint64_t);
}

static inline uint64_t *uarr_words(const struct conv_uarr *a)
{
    return (uint64_t *)(uintptr_t)((const char *)a + uarr_woff(a->n, a->cw));
}

static inline uint64_t ld_cid(const uint8_t *p, unsigned cw);

static inline uint64_t uarr_cid(const struct conv_uarr *a, uint32_t i)
{
    return ld_cid(a->d + (size_t)i * a->cw, a->cw);
}

static inline void uarr_set_cid(struct conv_uarr *a, uint32_t i, uint64_t cid)
{
    uint8_t *p = a->d + (size_t)i * a->cw;
    uint16_t x16 = (uint16_t)cid;
    uint32_t x32 = (uint32_t)cid;

    switch (a->cw) {
    case 1:
        *p = (uint8_t)cid;
        break;
    case 2:
        memcpy(p, &x16, 2);
        break;
    case 4:
        memcpy(p, &x32, 4);
        break;
    default:
        memcpy(p, &cid, 8);
    }
}

/* A cid of cw bytes at p (cw a constant where inlined). */
static inline uint64_t ld_cid(const uint8_t *p, unsigned cw)
{
    uint16_t x16;
    uint32_t x32;
    uint64_t x64;

    switch (cw) {
    case 1:
        return *p;
    case 2:
        memcpy(&x16, p, 2);
        return x16;
    case 4:
        memcpy(&x32, p, 4);
        return x32;
    default:
        memcpy(&x64, p, 8);
        return x64;
    }
}

/* First position in the n >= 1 cids of cw bytes at d whose cid is >= cid.
 * Branch-free, as arr_index. */
static inline __attribute__((always_inline)) uint32_t
cids_index(const uint8_t *d, uint32_t n, uint64_t cid, unsigned cw)
{
    const uint8_t *p = d;

    while (n > 1) {
        uint32_t half = n / 2;

        p = ld_cid(p + (size_t)half * cw, cw) < cid ? p + (size_t)half * cw : p;
        n -= half;
    }
    return (uint32_t)((size_t)(p - d) / cw) + (ld_cid(p, cw) < cid);
}

/* First position whose cid is >= cid (n when none). */
static uint32_t uarr_index(const struct conv_uarr *a, uint64_t cid)
{
    switch (a->cw) {
    case 1:
        return cids_index(a->d, a->n, cid, 1);
    case 2:
        return cids_index(a->d, a->n, cid, 2);
    case 4:
        return cids_index(a->d, a->n, cid, 4);
    default:
        return cids_index(a->d, a->n, cid, 8);
    }
}

/* cid's word in array a of cids of cw bytes, or NULL. */
static inline __attribute__((always_inline)) uint64_t *
uarr_find(struct conv_uarr *a, uint64_t cid, unsigned cw)
{
    uint32_t n = a->n, i = cids_index(a->d, n, cid, cw);

    if (i == n || ld_cid(a->d + (size_t)i * cw, cw) != cid)
        return NULL;
    return (uint64_t *)(uintptr_t)((char *)a + uarr_woff(n, cw)) + i;
}

/* Where the user's word for cid is stored, or NULL when absent. The
 * pointer is writable, like strchr's: the store owns both. */
static uint64_t *conv_slot(const struct wmap_val *u, uint64_t cid)
{
    switch (user_tag(u)) {
    case TAG_ARR:
        switch (arr_of(u)->cw) {
        case 1:
            return uarr_find(arr_of(u), cid, 1);
        case 2:
            return uarr_find(arr_of(u), cid, 2);
        case 4:
            return uarr_find(arr_of(u), cid, 4);
        default:
            return uarr_find(arr_of(u), cid, 8);
        }
    case TAG_MAP:
        return u64map_ref(map_of(u), cid);
    default:
        return u->a == cid ? (uint64_t *)&u->b : NULL;
    }
}

/* An array of the n records r (ascending cids), or NULL. */
static struct conv_uarr *uarr_build(struct conv_store *s, const struct crec *r,
                                    uint32_t n)
{
    struct conv_uarr *a;
    uint64_t *w;

    a = heap_alloc(s, uarr_size(n, cid_width(r[n - 1].cid)));
    if (a == NULL)
        return NULL;
    a->n = n;
    a->cw = cid_width(r[n - 1].cid);
    w = uarr_words(a);
    for (uint32_t i = 0; i < n; i++) {
        uarr_set_cid(a, i, r[i].cid);
        w[i] = r[i].w;
    }
    return a;
}

static void arr_free(struct conv_store *s, struct conv_uarr *a)
{
    heap_free(s, a, uarr_size(a->n, a->cw));
}

/* The records of array a into r (room for a->n). */
static void uarr_records(const struct conv_uarr *a, struct crec *r)
{
    const uint64_t *w = uarr_words(a);

    for (uint32_t i = 0; i < a->n; i++)
        r[i] = (struct crec){uarr_cid(a, i), w[i]};
}

static int crec_cmp(const void *x, const void *y)
{
    uint64_t a = ((const struct crec *)x)->cid;
    uint64_t b = ((const struct crec *)y)->cid;

    return (a > b) - (a < b);
}

struct crec_sink {
    struct crec *r;
    uint32_t n;
};

static void crec_collect(uint64_t cid, uint64_t w, void *ctx)
{
    struct crec_sink *k = ctx;

    k->r[k->n++] = (struct crec){cid, w};
}

/* Every {cid, word} of map into r (room for all), sorted by cid. */
static void map_records(const struct u64map *m, struct crec *r)
{
    struct crec_sink k = {r, 0};
    uint64_t cursor = 0;

    do
        u64map_scan(m, &cursor, SIZE_MAX, crec_collect, &k);
    while (cursor != 0);
    qsort(r, k.n, sizeof(*r), crec_cmp);
}

/* The user's one conversation and a new one become a sorted array. The
 * caller then adds the new one's contribution to the total. */
static int single_to_arr(struct conv_store *s, struct wmap_val *u, uint64_t cid,
                         uint64_t w)
{
    struct crec old = {u->a, u->b}, add = {cid, w};
    struct crec r[2] = {old.cid < cid ? old : add, old.cid < cid ? add : old};
    struct conv_uarr *a = uarr_build(s, r, 2);

    if (a == NULL)
        return CONV_ENOMEM;
    u->a = word_contrib(old.w);
    u->b = (uint64_t)(uintptr_t)a | TAG_ARR;
    return 0;
}

/* A full array and a new conversation become a map. */
static int arr_to_map(struct conv_store *s, struct wmap_val *u, uint64_t cid,
                      uint64_t w)
{
    struct conv_uarr *a = arr_of(u);
    const uint64_t *words = uarr_words(a);
    /* Fixed: a map that could not be created was used as one. */
    struct u64map *m = u64map_create(&s->mem);
    int rc = m != NULL ? u64map_put(m, cid, w) : -1;

    for (uint32_t i = 0; rc == 0 && i < a->n; i++)
        rc = u64map_put(m, uarr_cid(a, i), words[i]);
    if (rc != 0) {
        u64map_destroy(m);
        return CONV_ENOMEM;
    }
    arr_free(s, a);
    u->b = (uint64_t)(uintptr_t)m | TAG_MAP;
    return 0;
}

/* Adds {cid, w} to the array: a new block of the next size (and of the
 * cid width the new cid may widen). */
static int arr_insert(struct conv_store *s, struct wmap_val *u, uint64_t cid,
                      uint64_t w)
{
    struct conv_uarr *a = arr_of(u), *na;
    uint32_t i = uarr_index(a, cid), n = a->n;
    const uint64_t *ow = uarr_words(a);
    unsigned cw = cid_width(cid) > a->cw ? cid_width(cid) : a->cw;
    uint64_t *nw;

    if (n == CONV_SMALL_MAX)
        return arr_to_map(s, u, cid, w);
    na = heap_alloc(s, uarr_size(n + 1, cw));
    if (na == NULL)
        return CONV_ENOMEM;
    na->n = n + 1;
    na->cw = cw;
    nw = uarr_words(na);
    if (cw == a->cw) {
        memcpy(na->d, a->d, (size_t)i * cw);
        memcpy(na->d + (size_t)(i + 1) * cw, a->d + (size_t)i * cw,
               (size_t)(n - i) * cw);
    } else {
        for (uint32_t j = 0; j < n; j++)
            uarr_set_cid(na, j + (j >= i), uarr_cid(a, j));
    }
    memcpy(nw, ow, (size_t)i * sizeof(uint64_t));
    memcpy(nw + i + 1, ow + i, (size_t)(n - i) * sizeof(uint64_t));
    uarr_set_cid(na, i, cid);
    nw[i] = w;
    arr_free(s, a);
    u->b = (uint64_t)(uintptr_t)na | TAG_ARR;
    return 0;
}

static int map_insert(struct wmap_val *u, uint64_t cid, uint64_t w)
{
    return u64map_put(map_of(u), cid, w) == 0 ? 0 : CONV_ENOMEM;
}

/* Adds conversation cid (word w, not stored yet) to user uid (u: its
 * entry, NULL when new). 0 and the user's total, or CONV_ENOMEM. */
static int user_insert(struct conv_store *s, uint64_t uid, struct wmap_val *u,
                       uint64_t cid, uint64_t w, uint64_t *total)
{
    if (u == NULL) {
        bool created;

        u = wmap_add(s->users, uid, &created);
        if (u == NULL)
            return CONV_ENOMEM;
        u->a = cid;
        u->b = w;
    } else {
        uint64_t tag = user_tag(u);
        int rc = tag == TAG_ARR   ? arr_insert(s, u, cid, w)
                 : tag == TAG_MAP ? map_insert(u, cid, w)
                                  : single_to_arr(s, u, cid, w);

        if (rc != 0)
            return rc;
        u->a += word_contrib(w);
    }
    s->convs++;
    *total = user_total(u);
    return 0;
}

/* The user is down to its last conversation: it moves into the entry. */
static void set_to_single(struct wmap_val *u, struct crec last)
{
    u->a = last.cid;
    u->b = last.w;
}

/* Removes cid in place (the cid width stays), then shrinks the block. */
static void arr_remove(struct conv_store *s, struct wmap_val *u, uint64_t cid)
{
    struct conv_uarr *a = arr_of(u);
    uint32_t i = uarr_index(a, cid), n = a->n;
    unsigned cw = a->cw;
    uint64_t *ow = uarr_words(a), *nw;
    size_t old = uarr_size(n, cw);

    if (n == 2) {
        set_to_single(u, (struct crec){uarr_cid(a, 1 - i), ow[1 - i]});
        arr_free(s, a);
        return;
    }
    for (uint32_t j = i; j + 1 < n; j++)
        uarr_set_cid(a, j, uarr_cid(a, j + 1));
    a->n = n - 1;
    /* The words move down to their new start (never up: fewer cids). */
    nw = uarr_words(a);
    memmove(nw, ow, i * sizeof(uint64_t));
    memmove(nw + i, ow + i + 1, (n - 1 - i) * sizeof(uint64_t));
    /* a shrink: never fails (mem.h) */
    a = heap_realloc(s, a, old, uarr_size(n - 1, cw));
    u->b = (uint64_t)(uintptr_t)a | TAG_ARR;
}

/* Back to an array below half of CONV_SMALL_MAX (best effort: without
 * memory the map stays, which is valid), or into the entry at one. */
static void map_remove(struct conv_store *s, struct wmap_val *u, uint64_t cid)
{
    struct u64map *m = map_of(u);
    struct crec r[CONV_SMALL_MAX / 2];
    struct conv_uarr *a;
    size_t n;

    u64map_del(m, cid);
    n = u64map_count(m);
    if (n == 1) {
        map_records(m, r);
        set_to_single(u, r[0]);
    } else if (n < CONV_SMALL_MAX / 2) {
        map_records(m, r);
        a = uarr_build(s, r, (uint32_t)n);
        if (a == NULL)
            return;
        u->b = (uint64_t)(uintptr_t)a | TAG_ARR;
    } else {
        return;
    }
    u64map_destroy(m);
}

/* Removes conversation cid, whose record is already freed and whose
 * contribution was `contrib`; returns the user's total after. */
static uint64_t user_remove(struct conv_store *s, uint64_t uid,
                            struct wmap_val *u, uint64_t cid, uint32_t contrib)
{
    s->convs--;
    switch (user_tag(u)) {
    case TAG_ARR:
        u->a -= contrib;
        arr_remove(s, u, cid);
        break;
    case TAG_MAP:
        u->a -= contrib;
        map_remove(s, u, cid);
        break;
    default:
        wmap_del(s->users, uid);
        return 0;
    }
    return user_total(u);
}

/* ---- Public ------------------------------------------------------------ */

struct conv_store *conv_create(void)
{
    struct conv_store *s = mem_zalloc(NULL, sizeof(*s));

    if (s == NULL)
        return NULL;
    mem_acct_init(&s->mem, NULL);
    s->users = wmap_create(&s->mem);
    if (s->users == NULL) {
        mem_free(NULL, s, sizeof(*s));
        return NULL;
    }
    return s;
}

static void free_word_visit(uint64_t cid, uint64_t w, void *ctx)
{
    (void)cid;
    word_free(ctx, w);
}

static void free_user_visit(uint64_t uid, const struct wmap_val *u, void *ctx)
{
    struct conv_store *s = ctx;
    uint64_t cursor = 0;

    (void)uid;
    switch (user_tag(u)) {
    case TAG_ARR:
        for (uint32_t i = 0; i < arr_of(u)->n; i++)
            word_free(s, uarr_words(arr_of(u))[i]);
        arr_free(s, arr_of(u));
        break;
    case TAG_MAP:
        do
            u64map_scan(map_of(u), &cursor, SIZE_MAX, free_word_visit, s);
        while (cursor != 0);
        u64map_destroy(map_of(u));
        break;
    default:
        word_free(s, u->b);
    }
}

void conv_destroy(struct conv_store *s)
{
    uint64_t cursor = 0;

    if (s == NULL)
        return;
    do
        wmap_scan(s->users, &cursor, SIZE_MAX, free_user_visit, s);
    while (cursor != 0);
    wmap_destroy(s->users);
    mem_free(NULL, s, sizeof(*s));
}

/* Whether rq is well formed (conv_apply's CONV_EINVAL list). */
static bool req_valid(const struct conv_req *rq)
{
    enum conv_op op = rq->op;
    bool writes = op == CONV_OP_SEQ || op == CONV_OP_INCR;
    bool carries_id = op == CONV_OP_SEQ || op == CONV_OP_READ ||
                      op == CONV_OP_MARKUNREAD || op == CONV_OP_RECALL;

    if (op > CONV_OP_ROLLUP || (op == CONV_OP_MARKUNREAD && rq->arg == 0))
        return false;
    if ((op == CONV_OP_MUTE || op == CONV_OP_ROLLUP) &&
        (rq->arg > 1 || (rq->flags & CONV_THREAD)))
        return false;
    if ((rq->flags & (CONV_MENTION | CONV_SOURCE)) && !writes)
        return false;
    if ((rq->flags & CONV_SOURCE) &&
        ((rq->flags & CONV_THREAD) || rq->source >= CONV_SOURCES))
        return false;
    if ((rq->flags & CONV_SPARSE) &&
        (op == CONV_OP_INCR || (carries_id && rq->arg > CONV_ID_MAX)))
        return false;
    return !((rq->flags & CONV_THREAD) && rq->tid > CONV_ID_MAX) &&
           rq->window <= CONV_WINDOW_MAX &&
           !(rq->flags &
             ~(CONV_MENTION | CONV_SPARSE | CONV_THREAD | CONV_SOURCE));
}

/* Whether the conversation has no message yet, so that its first write
 * that carries a seq still chooses its mode. */
static bool conv_blank(const struct cst *c)
{
    const struct conv_ext *e = cst_ext(c);

    return !(c->flags & F_SPARSE) && c->max == 0 &&
           (c->f == NULL || c->f->nrec == 0) && (e == NULL || e->thr == NULL);
}

/*
 * Checks rq's mode against c's, choosing sparse for a blank conversation.
 * A write of a message (SEQ, INCR) must say the conversation's mode; a
 * read, mark-unread or recall of a sparse conversation may leave SPARSE
 * out (the conversation knows its mode), but SPARSE given to a dense one
 * with messages is refused. 0, CONV_EMODE, or CONV_EINVAL for an id over
 * CONV_ID_MAX in a sparse conversation.
 */
static int conv_mode(struct cst *c, const struct conv_req *rq)
{
    bool want = rq->flags & CONV_SPARSE;
    bool message = rq->op == CONV_OP_SEQ || rq->op == CONV_OP_INCR;

    if (rq->op == CONV_OP_READ_ALL || rq->op == CONV_OP_MUTE ||
        rq->op == CONV_OP_ROLLUP)
        return 0;
    if (c->flags & F_SPARSE) {
        if (rq->op == CONV_OP_INCR || (message && !want))
            return CONV_EMODE;
        return rq->arg > CONV_ID_MAX ? CONV_EINVAL : 0;
    }
    if (!want)
        return 0;
    if (!conv_blank(c))
        return CONV_EMODE;
    c->flags |= F_SPARSE;
    return 0;
}

/* INCR, SEQ, READ and READ_ALL on a compact word without options: what
 * tl_apply does to such a state (no record, nothing to allocate before the
 * encoding), without its planning. */
static void compact_apply(struct cst *c, enum conv_op op, uint64_t arg)
{
    switch (op) {
    case CONV_OP_INCR:
        c->max = arg > UINT64_MAX - c->max ? UINT64_MAX : c->max + arg;
        break;
    case CONV_OP_SEQ:
        if (arg > c->max)
            c->max = arg;
        break;
    case CONV_OP_READ:
        if (arg <= c->read)
            break;
        c->read = arg;
        if (arg > c->max)
            c->max = arg;
        break;
    default: /* CONV_OP_READ_ALL */
        c->read = c->max;
    }
}

/*
 * The one path of every mutator: load the conversation's state (all zero
 * when absent), apply rq to it or to one of its threads, encode, then
 * store the word, remove the conversation (state back to zero) or insert
 * it (new), adjusting the user's total by the change of the
 * conversation's contribution. Every step that can fail comes before the
 * first change.
 */
int conv_apply(struct conv_store *s, uint64_t uid, uint64_t cid,
               const struct conv_req *rq, uint32_t *unread, uint64_t *total)
{
    struct conv_req r = *rq;
    struct wmap_val *u;
    uint64_t *slot, w;
    uint32_t before, after, tun = 0;
    bool fresh = false;
    struct cst c;
    int rc;

    if (!(rq->flags == 0 && rq->op <= CONV_OP_READ_ALL) && !req_valid(rq))
        return CONV_EINVAL;
    if (r.window == 0)
        r.window = CONV_RECALL_MAX;
    u = wmap_ref(s->users, uid);
    slot = u ? conv_slot(u, cid) : NULL;
    cst_load(slot ? *slot : W_ZERO, &c);
    before = cst_contrib(&c);
    if (r.flags == 0 && c.f == NULL && r.op <= CONV_OP_READ_ALL) {
        compact_apply(&c, r.op, r.arg); /* the common case, shortest */
    } else {
        rc = conv_mode(&c, &r);
        if (rc == 0)
            rc = r.flags & CONV_THREAD ? thread_apply(s, &c, &r, &tun)
                                       : tl_apply(s, &c, &r, &fresh);
        if (rc != 0)
            return rc;
        cst_tidy(s, &c);
        if (tl_zero(&c))
            c.flags &= (uint8_t)~F_SPARSE;
    }
    *unread = r.flags & CONV_THREAD ? tun : cst_unread(&c);
    after = cst_contrib(&c);
    rc = cst_encode(s, &c, &w);
    if (rc != 0)
        return rc; /* c had no record: only its fields changed */
    if (slot != NULL && w == W_ZERO) {
        *total = user_remove(s, uid, u, cid, before);
    } else if (slot != NULL) {
        *slot = w;
        if (user_tag(u))
            u->a = u->a - before + after;
        *total = user_total(u);
    } else if (w != W_ZERO) {
        rc = user_insert(s, uid, u, cid, w, total);
        if (rc != 0)
            word_free(s, w);
    } else {
        *total = u ? user_total(u) : 0;
    }
    return rc;
}

int conv_update(struct conv_store *s, enum conv_op op, uint64_t uid,
                uint64_t cid, uint64_t arg, uint32_t *unread, uint64_t *total)
{
    struct conv_req rq = {op, 0, arg, 0, 0, 0};

    return conv_apply(s, uid, cid, &rq, unread, total);
}

uint64_t conv_del(struct conv_store *s, uint64_t uid, uint64_t cid)
{
    struct wmap_val *u = wmap_ref(s->users, uid);
    uint64_t *slot = u ? conv_slot(u, cid) : NULL;
    uint32_t contrib;

    if (slot == NULL)
        return u ? user_total(u) : 0;
    contrib = word_contrib(*slot);
    word_free(s, *slot);
    return user_remove(s, uid, u, cid, contrib);
}

uint32_t conv_get(const struct conv_store *s, uint64_t uid, uint64_t cid)
{
    const struct wmap_val *u = wmap_get(s->users, uid);
    const uint64_t *slot = u ? conv_slot(u, cid) : NULL;

    return slot ? word_unread(*slot) : 0;
}

void conv_prefetch_user(const struct conv_store *s, uint64_t uid, int stage)
{
    wmap_prefetch(s->users, uid, stage);
}

uint64_t conv_total(const struct conv_store *s, uint64_t uid)
{
    const struct wmap_val *u = wmap_get(s->users, uid);

    return u ? user_total(u) : 0;
}

void conv_probe_user(const struct conv_store *s, uint64_t uid, int stage,
                     struct wmap_probe *p)
{
    wmap_probe(s->users, uid, stage, p);
}

uint64_t conv_total_probed(const struct wmap_probe *p)
{
    const struct wmap_val *u = wmap_get_probed(p);

    return u ? user_total(u) : 0;
}

/* ---- Mark all read ------------------------------------------------------ */

/* Whether marking a compact word read moves it out of the compact form
 * (a record is then needed). */
static bool read_all_needs_record(uint64_t w)
{
    struct cst c;

    if (!is_compact(w))
        return false;
    cst_load(w, &c);
    return c.max >> READ_BITS != 0;
}

/* Records that need one, over a conversation and its threads. */
static uint32_t read_all_needs(uint64_t w)
{
    const struct conv_ext *e;
    uint32_t n = read_all_needs_record(w);

    if (is_compact(w) || (e = full_of(w)->ext) == NULL || e->thr == NULL)
        return n;
    for (uint32_t i = 0; i < e->thr->n; i++)
        n += read_all_needs_record(e->thr->r[i].w);
    return n;
}

/* A pool of records allocated ahead, taken by read_all_tl. */
struct pool {
    struct conv_full **f;
    uint32_t n;
};

/* Marks one timeline read; returns its word. Cannot fail. */
static uint64_t read_all_tl(struct conv_store *s, struct cst *c,
                            struct pool *pool)
{
    uint64_t w;

    tl_set_read(s, c, c->max);
    cst_tidy(s, c);
    if (!fits_compact(c) && c->f == NULL)
        c->f = pool->f[--pool->n];
    cst_encode(s, c, &w);
    return w;
}

static uint64_t read_all_word(struct conv_store *s, uint64_t w,
                              struct pool *pool)
{
    struct conv_ext *e;
    struct cst c;

    cst_load(w, &c);
    e = cst_ext(&c);
    if (e != NULL && e->thr != NULL) {
        for (uint32_t i = 0; i < e->thr->n; i++) {
            struct cst t;

            thread_load(e->thr->r[i].w, c.flags & F_SPARSE, &t);
            e->thr->r[i].w = read_all_tl(s, &t, pool);
        }
        e->thr_unread = 0;
        e->thr_ment = 0;
        e->thr_busy = 0;
    }
    return read_all_tl(s, &c, pool);
}

int conv_read_all_user(struct conv_store *s, uint64_t uid, uint64_t *total)
{
    struct wmap_val *u = wmap_ref(s->users, uid);
    struct pool pool = {NULL, 0};
    struct crec *r = NULL;
    uint64_t *aw = NULL;
    uint32_t n = 0, need = 0;
    int rc = CONV_ENOMEM;

    *total = 0;
    if (u == NULL)
        return 0;
    switch (user_tag(u)) {
    case TAG_ARR:
        n = arr_of(u)->n;
        aw = uarr_words(arr_of(u));
        break;
    case TAG_MAP:
        n = (uint32_t)u64map_count(map_of(u));
        r = mem_alloc(NULL, n * sizeof(*r));
        if (r == NULL)
            return CONV_ENOMEM;
        map_records(map_of(u), r);
        break;
    default:
        n = 1;
        r = NULL;
    }
    for (uint32_t i = 0; i < n; i++)
        need += read_all_needs(aw ? aw[i] : r ? r[i].w : u->b);
    if (need > 0) {
        pool.f = mem_alloc(NULL, need * sizeof(*pool.f));
        if (pool.f == NULL)
            goto out;
        for (; pool.n < need; pool.n++)
            if ((pool.f[pool.n] = full_alloc(s, 0)) == NULL)
                goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (aw != NULL)
            aw[i] = read_all_word(s, aw[i], &pool);
        else if (r == NULL)
            u->b = read_all_word(s, u->b, &pool);
        else
            *u64map_ref(map_of(u), r[i].cid) = read_all_word(s, r[i].w, &pool);
    }
    if (user_tag(u))
        u->a = 0;
    rc = 0;
out:
    while (pool.n > 0)
        full_free(s, pool.f[--pool.n]);
    if (pool.f != NULL)
        mem_free(NULL, pool.f, need * sizeof(*pool.f));
    if (user_tag(u) == TAG_MAP)
        mem_free(NULL, r, n * sizeof(*r));
    return rc;
}

/* ---- Reads -------------------------------------------------------------- */

static void state_of(const struct cst *c, const struct cst *t,
                     struct conv_state *st)
{
    const struct cst *tl = t ? t : c;

    st->max = tl->max;
    st->read = tl->read;
    st->unread = t ? sat32(tl_unread(t)) : cst_unread(c);
    st->muted = c->muted;
    st->mentions = t ? tl_mentions(t) : cst_mentions(c);
    st->first_unread = tl_first_unread(tl);
}

void conv_state(const struct conv_store *s, uint64_t uid, uint64_t cid,
                const uint64_t *tid, struct conv_state *st)
{
    const struct wmap_val *u = wmap_get(s->users, uid);
    const uint64_t *slot = u ? conv_slot(u, cid) : NULL, *ts;
    struct cst c, t;

    memset(st, 0, sizeof(*st));
    if (slot == NULL)
        return;
    cst_load(*slot, &c);
    if (tid == NULL) {
        state_of(&c, NULL, st);
        return;
    }
    ts = thread_slot(cst_ext(&c), *tid);
    thread_load(ts ? *ts : W_ZERO, c.flags & F_SPARSE, &t);
    state_of(&c, &t, st);
}

/* Visits every word of a user in no particular order. */
typedef void (*word_fn)(uint64_t cid, uint64_t w, void *ctx);

static void user_words(const struct wmap_val *u, word_fn fn, void *ctx)
{
    uint64_t cursor = 0;

    switch (user_tag(u)) {
    case TAG_ARR:
        for (uint32_t i = 0; i < arr_of(u)->n; i++)
            fn(uarr_cid(arr_of(u), i), uarr_words(arr_of(u))[i], ctx);
        break;
    case TAG_MAP:
        do
            u64map_scan(map_of(u), &cursor, SIZE_MAX, fn, ctx);
        while (cursor != 0);
        break;
    default:
        fn(u->a, u->b, ctx);
    }
}

static void count_visit(uint64_t cid, uint64_t w, void *ctx)
{
    struct conv_user_counts *uc = ctx;
    const struct conv_ext *e;
    struct cst c;

    (void)cid;
    cst_load(w, &c);
    e = cst_ext(&c);
    uc->mentions += tl_mentions(&c) + (e ? e->thr_ment : 0);
    if (c.muted)
        return;
    uc->chats += cst_unread(&c) != 0;
    uc->threads += e ? e->thr_busy : 0;
}

void conv_user_counts(const struct conv_store *s, uint64_t uid,
                      struct conv_user_counts *uc)
{
    const struct wmap_val *u = wmap_get(s->users, uid);

    memset(uc, 0, sizeof(*uc));
    if (u != NULL)
        user_words(u, count_visit, uc);
}

/* conv_each over sorted records. */
static size_t each_sorted(const struct crec *r, uint32_t n, uint64_t from,
                          conv_each_fn fn, void *ctx)
{
    size_t k = 0;

    for (uint32_t i = 0; i < n; i++) {
        struct conv_state st;
        struct cst c;

        if (r[i].cid < from)
            continue;
        cst_load(r[i].w, &c);
        if (cst_unread(&c) == 0)
            continue;
        state_of(&c, NULL, &st);
        k++;
        if (!fn(r[i].cid, &st, ctx))
            break;
    }
    return k;
}

int conv_each(const struct conv_store *s, uint64_t uid, uint64_t from,
              conv_each_fn fn, void *ctx, size_t *n)
{
    const struct wmap_val *u = wmap_get(s->users, uid);
    struct crec one, *r, ar[CONV_SMALL_MAX];
    uint32_t i;

    *n = 0;
    if (u == NULL)
        return 0;
    switch (user_tag(u)) {
    case TAG_ARR:
        i = uarr_index(arr_of(u), from);
        uarr_records(arr_of(u), ar);
        *n = each_sorted(ar + i, arr_of(u)->n - i, from, fn, ctx);
        return 0;
    case TAG_MAP: {
        size_t size = u64map_count(map_of(u)) * sizeof(*r);

        r = mem_alloc(NULL, size);
        if (r == NULL)
            return CONV_ENOMEM;
        map_records(map_of(u), r);
        *n = each_sorted(r, (uint32_t)u64map_count(map_of(u)), from, fn, ctx);
        mem_free(NULL, r, size);
        return 0;
    }
    default:
        one = (struct crec){u->a, u->b};
        *n = each_sorted(&one, 1, from, fn, ctx);
        return 0;
    }
}

struct list_adapter {
    conv_list_fn fn;
    void *ctx;
    size_t left;
};

static bool list_adapt(uint64_t cid, const struct conv_state *st, void *ctx)
{
    struct list_adapter *la = ctx;

    la->fn(cid, st->unread, la->ctx);
    return --la->left > 0;
}

int conv_list(const struct conv_store *s, uint64_t uid, size_t max,
              conv_list_fn fn, void *ctx, size_t *n)
{
    struct list_adapter la = {fn, ctx, max};

    *n = 0;
    return max == 0 ? 0 : conv_each(s, uid, 0, list_adapt, &la, n);
}

size_t conv_threads(const struct conv_store *s, uint64_t uid, uint64_t cid,
                    conv_thread_fn fn, void *ctx)
{
    const struct wmap_val *u = wmap_get(s->users, uid);
    const uint64_t *slot = u ? conv_slot(u, cid) : NULL;
    const struct conv_ext *e;
    size_t k = 0;
    struct cst c;

    if (slot == NULL)
        return 0;
    cst_load(*slot, &c);
    e = cst_ext(&c);
    for (uint32_t i = 0; e && e->thr && i < e->thr->n; i++) {
        struct cst t;
        uint32_t un;

        thread_load(e->thr->r[i].w, c.flags & F_SPARSE, &t);
        un = sat32(tl_unread(&t));
        if (un != 0) {
            fn(e->thr->r[i].cid, un, ctx);
            k++;
        }
    }
    return k;
}

void conv_sources(const struct conv_store *s, uint64_t uid, uint64_t cid,
                  uint32_t counts[CONV_SOURCES])
{
    const struct wmap_val *u = wmap_get(s->users, uid);
    const uint64_t *slot = u ? conv_slot(u, cid) : NULL;
    const struct conv_ext *e = NULL;
    struct cst c;

    if (slot != NULL) {
        cst_load(*slot, &c);
        e = cst_ext(&c);
    }
    for (unsigned k = 0; k < CONV_SOURCES; k++)
        counts[k] = e ? sv_n(e->tag[1 + k]) : 0;
}

/* ---- Loading and walking ------------------------------------------------ */

/* Whether vals[0..n) ascend strictly within (lo, hi]. */
static bool ascending_in(const uint64_t *vals, uint32_t n, uint64_t lo,
                         uint64_t hi)
{
    for (uint32_t i = 0; i < n; i++)
        if (vals[i] <= (i ? vals[i - 1] : lo) || vals[i] > hi)
            return false;
    return true;
}

static bool in_sorted(const uint64_t *vals, uint32_t n, uint64_t x)
{
    uint32_t lo = 0, hi = n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (vals[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && vals[lo] == x;
}

/* Whether some sequence of commands leads to the timeline ci describes
 * (thread: a thread's; its sources and flags other than sparse unused). */
static bool info_valid(const struct conv_info *ci, bool thread, bool sparse,
                       uint32_t threads)
{
    uint64_t rec_floor = sparse ? ci->max : ci->read;
    uint32_t ntags = 0;

    if (ci->read > ci->max || ci->nrecall > CONV_RECALL_MAX ||
        !ascending_in(ci->recall, ci->nrecall, rec_floor, UINT64_MAX))
        return false;
    if (sparse) {
        if (ci->max > CONV_ID_MAX || ci->nids > CONV_WINDOW_MAX ||
            !ascending_in(ci->ids, ci->nids, ci->read, ci->max))
            return false;
        if (ci->lost != 0 && (ci->lost <= ci->read || ci->lost > ci->max ||
                              (ci->nids > 0 && ci->lost >= ci->ids[0])))
            return false;
    } else if (ci->nids != 0 || ci->lost != 0) {
        return false;
    }
    for (unsigned k = 0; k < CONV_TAGS; k++) {
        uint32_t n = ci->ntag[k];

        if (n == 0)
            continue;
        if (n > CONV_TAG_MAX || (thread && k != CONV_TAG_MENTION) ||
            !ascending_in(ci->tag[k], n, ci->read, ci->max))
            return false;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t q = ci->tag[k][i];

            if (sparse ? !in_sorted(ci->ids, ci->nids, q)
                       : in_sorted(ci->recall, ci->nrecall, q))
                return false;
            for (unsigned j = 1; k > 0 && j < k; j++)
                if (in_sorted(ci->tag[j], ci->ntag[j], q))
                    return false; /* one source per message */
        }
        ntags += n;
    }
    if (thread)
        return ci->read || ci->max || ci->nrecall;
    return ci->read || ci->max || ci->muted || ci->nrecall || ci->collapsed ||
           ntags || threads;
}

/*
 * Builds the timeline ci describes into c (record, ext and vectors as
 * needed; an ext is kept when `keep_ext`, for threads to come). 0 or
 * CONV_ENOMEM with nothing allocated.
 */
static int tl_build(struct conv_store *s, const struct conv_info *ci,
                    bool thread, bool sparse, bool keep_ext, struct cst *c)
{
    bool tags = false;
    struct conv_ext *e;

    for (unsigned k = 0; k < CONV_TAGS; k++)
        tags |= ci->ntag[k] > 0;
    *c = (struct cst){ci->read, ci->max, !thread && ci->muted, 0, NULL};
    if (sparse)
        c->flags |= F_SPARSE;
    if (!thread && ci->collapsed)
        c->flags |= F_COLLAPSED;
    if (ci->nrecall == 0 && !sparse && !tags && !keep_ext)
        return 0;
    c->f = full_alloc(s, ci->nrecall);
    if (c->f == NULL)
        return CONV_ENOMEM;
    if (ci->nrecall > 0)
        memcpy(c->f->rec, ci->recall, ci->nrecall * sizeof(uint64_t));
    c->f->nrec = ci->nrecall;
    if (ci->nids == 0 && ci->lost == 0 && !tags && !keep_ext)
        return 0;
    e = c->f->ext = heap_alloc(s, sizeof(*e));
    if (e == NULL)
        goto nomem;
    e->lost = ci->lost;
    if (sv_reserve(s, &e->ids, ci->nids) != 0)
        goto nomem;
    if (ci->nids)
        memcpy(e->ids->v, ci->ids, ci->nids * sizeof(uint64_t));
    if (e->ids)
        e->ids->n = ci->nids;
    for (unsigned k = 0; k < CONV_TAGS; k++) {
        if (sv_reserve(s, &e->tag[k], ci->ntag[k]) != 0)
            goto nomem;
        if (ci->ntag[k]) {
            memcpy(e->tag[k]->v, ci->tag[k], ci->ntag[k] * sizeof(uint64_t));
            e->tag[k]->n = ci->ntag[k];
        }
    }
    return 0;
nomem:
    ext_free(s, c->f->ext);
    full_free(s, c->f);
    c->f = NULL;
    return CONV_ENOMEM;
}

int conv_put(struct conv_store *s, uint64_t uid, uint64_t cid,
             const struct conv_info *ci, uint32_t threads)
{
    struct wmap_val *u = wmap_ref(s->users, uid);
    uint64_t w, total;
    struct cst c;
    int rc;

    if (u != NULL && conv_slot(u, cid) != NULL)
        return 1;
    if (!info_valid(ci, false, ci->sparse, threads))
        return CONV_EINVAL;
    rc = tl_build(s, ci, false, ci->sparse, threads > 0, &c);
    if (rc != 0)
        return rc;
    if (threads > 0) {
        w = (uint64_t)(uintptr_t)c.f; /* canonical once its threads come */
        c.f->read = c.read;
        c.f->max = c.max;
        c.f->muted = c.muted;
        c.f->flags = c.flags;
    } else if ((rc = cst_encode(s, &c, &w)) != 0) {
        ext_free(s, cst_ext(&c));
        if (c.f)
            full_free(s, c.f);
        return rc;
    }
    rc = user_insert(s, uid, u, cid, w, &total);
    if (rc != 0)
        word_free(s, w);
    return rc;
}

int conv_put_thread(struct conv_store *s, uint64_t uid, uint64_t cid,
                    uint64_t tid, const struct conv_info *ti)
{
    struct wmap_val *u = wmap_ref(s->users, uid);
    uint64_t *slot = u ? conv_slot(u, cid) : NULL, tw;
    uint32_t before, after, i;
    struct conv_ext *e;
    struct conv_arr *a;
    struct tsum ts;
    struct cst c, t;
    int rc;

    if (slot == NULL || is_compact(*slot) || (e = full_of(*slot)->ext) == NULL)
        return 1;
    cst_load(*slot, &c);
    if (thread_slot(e, tid) != NULL)
        return 1;
    if (tid > CONV_ID_MAX || (e->thr && e->thr->n == CONV_THREAD_MAX) ||
        !info_valid(ti, true, c.flags & F_SPARSE, 0))
        return CONV_EINVAL;
    a = e->thr;
    if (a == NULL || a->n == a->cap) {
        uint32_t n = a ? a->n : 0;
        struct conv_arr *na =
            a ? heap_realloc(s, a, arr_size(a->cap), arr_size(n + 1))
              : heap_alloc(s, arr_size(1));

        if (na == NULL)
            return CONV_ENOMEM;
        na->cap = n + 1;
        a = e->thr = na;
    }
    rc = tl_build(s, ti, true, c.flags & F_SPARSE, false, &t);
    if (rc == 0 && (rc = cst_encode(s, &t, &tw)) != 0) {
        ext_free(s, cst_ext(&t));
        if (t.f)
            full_free(s, t.f);
    }
    if (rc != 0)
        return rc;
    before = cst_contrib(&c);
    tsum_of(&t, &ts);
    e->thr_unread += ts.unread;
    e->thr_ment += ts.ment;
    e->thr_busy += ts.busy;
    i = arr_index(a, tid);
    memmove(&a->r[i + 1], &a->r[i], (a->n - i) * sizeof(struct crec));
    a->r[i] = (struct crec){tid, tw};
    a->n++;
    after = cst_contrib(&c);
    if (user_tag(u))
        u->a = u->a - before + after;
    return 0;
}

static void info_of(uint64_t w, bool thread, bool sparse, struct conv_info *ci)
{
    const struct conv_ext *e;
    struct cst c;

    if (thread)
        thread_load(w, sparse, &c);
    else
        cst_load(w, &c);
    e = cst_ext(&c);
    memset(ci, 0, sizeof(*ci));
    ci->read = c.read;
    ci->max = c.max;
    ci->unread = thread ? sat32(tl_unread(&c)) : cst_unread(&c);
    ci->muted = c.muted;
    ci->nrecall = c.f ? c.f->nrec : 0;
    ci->recall = c.f ? c.f->rec : NULL;
    ci->sparse = c.flags & F_SPARSE;
    ci->collapsed = c.flags & F_COLLAPSED;
    if (e == NULL)
        return;
    ci->lost = e->lost;
    ci->nids = sv_n(e->ids);
    ci->ids = e->ids ? e->ids->v : NULL;
    for (unsigned k = 0; k < CONV_TAGS; k++) {
        ci->ntag[k] = sv_n(e->tag[k]);
        ci->tag[k] = e->tag[k] ? e->tag[k]->v : NULL;
    }
    ci->nthreads = e->thr ? e->thr->n : 0;
    ci->priv = e->thr;
}

void conv_info_thread(const struct conv_info *ci, uint32_t i, uint64_t *tid,
                      struct conv_info *ti)
{
    const struct conv_arr *a = ci->priv;

    *tid = a->r[i].cid;
    info_of(a->r[i].w, true, ci->sparse, ti);
}

struct scan_ctx {
    conv_visit_fn fn;
    void *ctx;
    uint64_t uid;
};

static void scan_word_visit(uint64_t cid, uint64_t w, void *ctx)
{
    struct scan_ctx *sc = ctx;
    struct conv_info ci;

    info_of(w, false, false, &ci);
    sc->fn(sc->uid, cid, &ci, sc->ctx);
}

static void scan_user_visit(uint64_t uid, const struct wmap_val *u, void *ctx)
{
    struct scan_ctx *sc = ctx;

    sc->uid = uid;
    user_words(u, scan_word_visit, sc);
}

size_t conv_scan(const struct conv_store *s, uint64_t *cursor, size_t max,
                 conv_visit_fn fn, void *ctx)
{
    struct scan_ctx sc = {fn, ctx, 0};

    return wmap_scan(s->users, cursor, max, scan_user_visit, &sc);
}

size_t conv_entries(const struct conv_store *s)
{
    return s->convs;
}

size_t conv_users(const struct conv_store *s)
{
    return wmap_count(s->users);
}

/* Requested sizes, as for the maps: malloc's own per-block overhead (8-16
 * bytes per array or record) is not counted; bench/store_conv.c shows the
 * process RSS beside it. */
size_t conv_bytes(const struct conv_store *s)
{
    return sizeof(*s) + s->mem.bytes;
}

/* ---- Audit ------------------------------------------------------------- */

struct audit_ctx {
    size_t bad, convs, bytes;
    uint64_t sum; /* contributions of the user being checked */
};

/* A vector held by an ext: not empty, within its room. */
static void audit_sv(struct audit_ctx *ac, const struct seqv *v)
{
    if (v == NULL)
        return;
    ac->bytes += sv_size(v->cap);
    ac->bad += v->n == 0 || v->n > v->cap;
}

/* One timeline (a conversation's main one, or a thread: `thread`):
 * canonical, in range, in order; its own numbers against its tags. */
static void audit_tl(struct audit_ctx *ac, uint64_t w, bool thread, bool sparse)
{
    struct conv_info ci;
    const struct conv_ext *e;
    uint64_t tagged = 0;
    struct cst c;

    if (thread)
        thread_load(w, sparse, &c);
    else
        cst_load(w, &c);
    if (is_compact(w)) {
        ac->bad +=
            w == W_ZERO || (thread && sparse) || (thread && (w & W_MUTED) != 0);
        return;
    }
    e = c.f->ext;
    ac->bytes += full_size(c.f->cap) + (e ? sizeof(*e) : 0);
    info_of(w, thread, sparse, &ci);
    ac->bad += fits_compact(&c) || c.f->nrec > c.f->cap ||
               c.f->cap > CONV_RECALL_MAX || c.f->muted > 1 ||
               (c.f->flags & ~F_ALL) != 0 ||
               (thread && (c.f->muted || (c.f->flags & F_COLLAPSED))) ||
               ((c.f->flags & F_SPARSE) != 0) != sparse;
    ac->bad += !info_valid(&ci, thread, sparse, ci.nthreads);
    if (e == NULL)
        return;
    ac->bad += ext_empty(e) || (thread && e->thr != NULL);
    audit_sv(ac, e->ids);
    for (unsigned k = 0; k < CONV_TAGS; k++) {
        audit_sv(ac, e->tag[k]);
        ac->bad += sv_n(e->tag[k]) > tl_unread(&c); /* each <= unread */
        tagged += k != CONV_TAG_MENTION ? sv_n(e->tag[k]) : 0;
    }
    ac->bad += tagged > tl_unread(&c); /* the sources' sum <= unread */
}

static void audit_word(struct audit_ctx *ac, uint64_t w)
{
    const struct conv_ext *e;
    struct tsum sum = {0, 0, 0};
    bool sparse;
    struct cst c;

    cst_load(w, &c);
    sparse = c.flags & F_SPARSE;
    ac->convs++;
    ac->sum += cst_contrib(&c);
    audit_tl(ac, w, false, sparse);
    e = cst_ext(&c);
    if (e == NULL || e->thr == NULL) {
        ac->bad += e != NULL && (e->thr_unread || e->thr_ment || e->thr_busy);
        return;
    }
    ac->bytes += arr_size(e->thr->cap);
    ac->bad += e->thr->n == 0 || e->thr->n > e->thr->cap ||
               e->thr->n > CONV_THREAD_MAX;
    for (uint32_t i = 0; i < e->thr->n; i++) {
        struct tsum ts;
        struct cst t;

        ac->bad += e->thr->r[i].cid > CONV_ID_MAX ||
                   (i > 0 && e->thr->r[i].cid <= e->thr->r[i - 1].cid);
        audit_tl(ac, e->thr->r[i].w, true, sparse);
        thread_load(e->thr->r[i].w, sparse, &t);
        tsum_of(&t, &ts);
        sum.unread += ts.unread;
        sum.ment += ts.ment;
        sum.busy += ts.busy;
    }
    /* The roll-up sums are the sums of their parts. */
    ac->bad += sum.unread != e->thr_unread || sum.ment != e->thr_ment ||
               sum.busy != e->thr_busy;
    ac->bad += cst_mentions(&c) > cst_unread(&c);
}

static void audit_map_visit(uint64_t cid, uint64_t w, void *ctx)
{
    (void)cid;
    audit_word(ctx, w);
}

/* One user: its form fits its count, its total is the sum of the parts. */
static void audit_user_visit(uint64_t uid, const struct wmap_val *u, void *ctx)
{
    struct audit_ctx *ac = ctx;
    uint64_t cursor = 0;

    (void)uid;
    ac->sum = 0;
    switch (user_tag(u)) {
    case TAG_ARR: {
        const struct conv_uarr *a = arr_of(u);

        ac->bytes += uarr_size(a->n, a->cw);
        ac->bad += a->n < 2 || a->n > CONV_SMALL_MAX ||
                   (a->cw != 1 && a->cw != 2 && a->cw != 4 && a->cw != 8);
        for (uint32_t i = 0; i < a->n; i++) {
            audit_word(ac, uarr_words(a)[i]);
            ac->bad += i > 0 && uarr_cid(a, i) <= uarr_cid(a, i - 1);
        }
        ac->bad += ac->sum != u->a;
        break;
    }
    case TAG_MAP:
        ac->bytes += u64map_bytes(map_of(u));
        ac->bad += (u64map_count(map_of(u)) < 2) + u64map_audit(map_of(u));
        do
            u64map_scan(map_of(u), &cursor, SIZE_MAX, audit_map_visit, ac);
        while (cursor != 0);
        ac->bad += ac->sum != u->a;
        break;
    default:
        audit_word(ac, u->b);
    }
}

size_t conv_audit(const struct conv_store *s)
{
    struct audit_ctx ac = {0, 0, 0, 0};
    uint64_t cursor = 0;

    do
        wmap_scan(s->users, &cursor, SIZE_MAX, audit_user_visit, &ac);
    while (cursor != 0);
    return ac.bad + wmap_audit(s->users) + (ac.convs != s->convs) +
           (ac.bytes + wmap_bytes(s->users) != s->mem.bytes);
}

/* ---- Per user ---------------------------------------------------------- */

static size_t user_convs(const struct wmap_val *u)
{
    switch (user_tag(u)) {
    case TAG_ARR:
        return arr_of(u)->n;
    case TAG_MAP:
        return u64map_count(map_of(u));
    default:
        return 1;
    }
}

size_t conv_forget_user(struct conv_store *s, uint64_t uid)
{
    const struct wmap_val *u = wmap_get(s->users, uid);
    size_t n;

    if (u == NULL)
        return 0;
    n = user_convs(u);
    free_user_visit(uid, u, s);
    wmap_del(s->users, uid);
    s->convs -= n;
    return n;
}

size_t conv_user_info(const struct conv_store *s, uint64_t uid,
                      conv_visit_fn fn, void *ctx)
{
    const struct wmap_val *u = wmap_get(s->users, uid);
    struct scan_ctx sc = {fn, ctx, 0};

    if (u == NULL)
        return 0;
    scan_user_visit(uid, u, &sc);
    return user_convs(u);
}
