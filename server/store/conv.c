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
 *   bit 0 = 0: pointer to a struct conv_full (read, max, muted and the
 *       recalled seqs above read), for the rare conversation with recalled
 *       seqs above its watermark, read >= 2^41, or 2^21 unread or more.
 * The encoding is canonical (compact whenever the state fits) so that
 * conv_audit can check it; the all-zero state (compact word W_ZERO) is
 * never stored. malloc'd pointers are 8-aligned: their three low bits are
 * free for the tags, and a compact word (bit 0 set) is never a tag.
 *
 * Sorted array: {cid, word} records, 16 bytes each, ascending cid, sized
 * exactly: 16 bytes per conversation plus an 8-byte header per user. A user
 * past CONV_SMALL_MAX conversations moves to a u64map cid -> word (a word
 * is never 0), so that adding a conversation never costs more than moving
 * CONV_SMALL_MAX records; it moves back below half of that.
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

struct conv_full {
    uint64_t read, max;
    uint32_t nrec; /* recalled seqs, all above read, ascending */
    uint16_t cap;  /* room in rec[] (<= CONV_RECALL_MAX) */
    uint8_t muted;
    uint64_t rec[];
};

struct crec {
    uint64_t cid, w;
};

struct conv_arr {
    uint32_t n, cap; /* cap > n only after a failed shrink */
    struct crec r[];
};

struct conv_store {
    struct wmap *users;
    struct mem_acct mem; /* users, arrays, full records, per-user maps */
    size_t convs;        /* (user, conversation) entries */
};

/* One conversation's state while an operation works on it. */
struct cst {
    uint64_t read, max;
    bool muted;
    struct conv_full *f; /* its record when it has one (or is getting one) */
};

/* ---- Conversation words ------------------------------------------------ */

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

/* A record with room for cap recalled seqs and none yet, or NULL. */
static struct conv_full *full_alloc(struct conv_store *s, uint32_t cap)
{
    struct conv_full *f = mem_zalloc(&s->mem, full_size(cap));

    if (f == NULL)
        return NULL;
    f->cap = (uint16_t)cap;
    return f;
}

static void full_free(struct conv_store *s, struct conv_full *f)
{
    mem_free(&s->mem, f, full_size(f->cap));
}

/* f resized to cap: the new address, or NULL with f intact (growing only:
 * a shrink never fails, mem.h). */
static struct conv_full *full_resize(struct conv_store *s, struct conv_full *f,
                                     uint32_t cap)
{
    struct conv_full *nf =
        mem_realloc(&s->mem, f, full_size(f->cap), full_size(cap));

    if (nf == NULL)
        return NULL;
    nf->cap = (uint16_t)cap;
    return nf;
}

/* Frees what a stored word owns. */
static void word_free(struct conv_store *s, uint64_t w)
{
    if (!is_compact(w))
        full_free(s, full_of(w));
}

static void cst_load(uint64_t w, struct cst *c)
{
    if (is_compact(w)) {
        c->read = w >> READ_SHIFT;
        c->max =
            c->read + ((w >> SPAN_SHIFT) & ((UINT64_C(1) << SPAN_BITS) - 1));
        c->muted = w & W_MUTED;
        c->f = NULL;
    } else {
        c->f = full_of(w);
        c->read = c->f->read;
        c->max = c->f->max;
        c->muted = c->f->muted;
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

static uint32_t cst_unread(const struct cst *c)
{
    uint64_t u = c->max - c->read - rec_upto(c->f, c->max);

    return u > CONV_UNREAD_MAX ? CONV_UNREAD_MAX : (uint32_t)u;
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

static inline bool fits_compact(const struct cst *c)
{
    return (c->f == NULL || c->f->nrec == 0) && c->read >> READ_BITS == 0 &&
           (c->max - c->read) >> SPAN_BITS == 0;
}

/*
 * The canonical word for c: compact when it fits (freeing c's record if it
 * had one), else c's record, allocated when missing. 0, or CONV_ENOMEM with
 * nothing changed.
 */
static int cst_encode(struct conv_store *s, struct cst *c, uint64_t *w)
{
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
    *w = (uint64_t)(uintptr_t)c->f;
    return 0;
}

/* ---- Operations on one conversation ------------------------------------ */

/* Forgets the recalled seqs at or below the watermark: they no longer
 * count either way, and keeping them would let the set grow forever. */
static void rec_prune(struct conv_store *s, struct cst *c)
{
    struct conv_full *f = c->f, *nf;
    uint32_t k = rec_upto(f, c->read);

    if (k == 0)
        return;
    f->nrec -= k;
    memmove(f->rec, f->rec + k, f->nrec * sizeof(uint64_t));
    nf = full_resize(s, f, f->nrec); /* a shrink: never fails (mem.h) */
    c->f = nf;
}

/* Remembers seq (above the watermark) as recalled; idempotent. 0, or a
 * CONV_E* code with c unchanged. */
static int rec_add(struct conv_store *s, struct cst *c, uint64_t seq)
{
    struct conv_full *f = c->f;
    uint32_t n = f ? f->nrec : 0, i = rec_upto(f, seq - 1);

    if (i < n && f->rec[i] == seq)
        return 0;
    if (n == CONV_RECALL_MAX)
        return CONV_ELIMIT;
    if (f == NULL)
        f = full_alloc(s, 1);
    else if (f->cap == n)
        f = full_resize(s, f, n + 1);
    if (f == NULL)
        return CONV_ENOMEM;
    memmove(f->rec + i + 1, f->rec + i, (n - i) * sizeof(uint64_t));
    f->rec[i] = seq;
    f->nrec++;
    c->f = f;
    return 0;
}

/* Moves the watermark (either way); max follows it up. */
static void cst_set_read(struct conv_store *s, struct cst *c, uint64_t read)
{
    c->read = read;
    if (read > c->max)
        c->max = read;
    rec_prune(s, c);
}

/*
 * Applies op to c. Only RECALL allocates, and it fails before changing
 * anything; the others always succeed.
 */
static int cst_apply(struct conv_store *s, struct cst *c, enum conv_op op,
                     uint64_t arg)
{
    switch (op) {
    case CONV_OP_INCR:
        c->max = arg > UINT64_MAX - c->max ? UINT64_MAX : c->max + arg;
        break;
    case CONV_OP_SEQ:
        if (arg > c->max)
            c->max = arg;
        break;
    case CONV_OP_READ_ALL:
        cst_set_read(s, c, c->max);
        break;
    case CONV_OP_READ:
        if (arg > c->read)
            cst_set_read(s, c, arg);
        break;
    case CONV_OP_MARKUNREAD:
        cst_set_read(s, c, arg - 1);
        if (arg > c->max)
            c->max = arg;
        break;
    case CONV_OP_RECALL:
        if (arg > c->read)
            return rec_add(s, c, arg);
        break;
    case CONV_OP_MUTE:
        c->muted = arg;
        break;
    }
    return 0;
}

/* ---- A user's conversations -------------------------------------------- */

static inline uint64_t user_tag(const struct wmap_val *u)
{
    uint64_t t = u->b & TAG_MASK;

    return t == TAG_ARR || t == TAG_MAP ? t : 0;
}

static inline struct conv_arr *arr_of(const struct wmap_val *u)
{
    return (struct conv_arr *)(uintptr_t)(u->b & ~TAG_MASK);
}

static inline struct u64map *map_of(const struct wmap_val *u)
{
    return (struct u64map *)(uintptr_t)(u->b & ~TAG_MASK);
}

static inline size_t arr_size(uint32_t cap)
{
    return sizeof(struct conv_arr) + (size_t)cap * sizeof(struct crec);
}

static uint64_t user_total(const struct wmap_val *u)
{
    return user_tag(u) ? u->a : word_contrib(u->b);
}

/* First position whose cid is >= cid (n when none). Branch-free, as
 * wmap's bucket search: cids in an array are in no predictable order. */
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

/* Where the user's word for cid is stored, or NULL when absent. The
 * pointer is writable, like strchr's: the store owns both. */
static uint64_t *conv_slot(const struct wmap_val *u, uint64_t cid)
{
    switch (user_tag(u)) {
    case TAG_ARR: {
        struct conv_arr *a = arr_of(u);
        uint32_t i = arr_index(a, cid);

        return i < a->n && a->r[i].cid == cid ? &a->r[i].w : NULL;
    }
    case TAG_MAP:
        return u64map_ref(map_of(u), cid);
    default:
        return u->a == cid ? (uint64_t *)&u->b : NULL;
    }
}

static struct conv_arr *arr_alloc(struct conv_store *s, uint32_t n)
{
    struct conv_arr *a = mem_alloc(&s->mem, arr_size(n));

    if (a == NULL)
        return NULL;
    a->n = a->cap = n;
    return a;
}

static void arr_free(struct conv_store *s, struct conv_arr *a)
{
    mem_free(&s->mem, a, arr_size(a->cap));
}

/* a resized to cap: the new address, or NULL with a intact (growing only:
 * a shrink never fails, mem.h). */
static struct conv_arr *arr_resize(struct conv_store *s, struct conv_arr *a,
                                   uint32_t cap)
{
    struct conv_arr *na =
        mem_realloc(&s->mem, a, arr_size(a->cap), arr_size(cap));

    if (na == NULL)
        return NULL;
    na->cap = cap;
    return na;
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
    struct conv_arr *a = arr_alloc(s, 2);
    struct crec old = {u->a, u->b}, add = {cid, w};

    if (a == NULL)
        return CONV_ENOMEM;
    a->r[0] = old.cid < cid ? old : add;
    a->r[1] = old.cid < cid ? add : old;
    u->a = word_contrib(old.w);
    u->b = (uint64_t)(uintptr_t)a | TAG_ARR;
    return 0;
}

/* A full array and a new conversation become a map. */
static int arr_to_map(struct conv_store *s, struct wmap_val *u, uint64_t cid,
                      uint64_t w)
{
    struct conv_arr *a = arr_of(u);
    /* Fixed: a map that could not be created was used as one. */
    struct u64map *m = u64map_create(&s->mem);
    int rc = m != NULL ? u64map_put(m, cid, w) : -1;

    for (uint32_t i = 0; rc == 0 && i < a->n; i++)
        rc = u64map_put(m, a->r[i].cid, a->r[i].w);
    if (rc != 0) {
        u64map_destroy(m);
        return CONV_ENOMEM;
    }
    arr_free(s, a);
    u->b = (uint64_t)(uintptr_t)m | TAG_MAP;
    return 0;
}

static int arr_insert(struct conv_store *s, struct wmap_val *u, uint64_t cid,
                      uint64_t w)
{
    struct conv_arr *a = arr_of(u);
    uint32_t i = arr_index(a, cid);

    if (a->n == CONV_SMALL_MAX)
        return arr_to_map(s, u, cid, w);
    if (a->n == a->cap) {
        a = arr_resize(s, a, a->n + 1);
        if (a == NULL)
            return CONV_ENOMEM;
        u->b = (uint64_t)(uintptr_t)a | TAG_ARR;
    }
    memmove(&a->r[i + 1], &a->r[i], (a->n - i) * sizeof(struct crec));
    a->r[i] = (struct crec){cid, w};
    a->n++;
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

static void arr_remove(struct conv_store *s, struct wmap_val *u, uint64_t cid)
{
    struct conv_arr *a = arr_of(u), *na;
    uint32_t i = arr_index(a, cid);

    a->n--;
    memmove(&a->r[i], &a->r[i + 1], (a->n - i) * sizeof(struct crec));
    if (a->n == 1) {
        set_to_single(u, a->r[0]);
        arr_free(s, a);
        return;
    }
    na = arr_resize(s, a, a->n); /* a shrink: never fails (mem.h) */
    u->b = (uint64_t)(uintptr_t)na | TAG_ARR;
}

/* Back to an array below half of CONV_SMALL_MAX (best effort: without
 * memory the map stays, which is valid), or into the entry at one. */
static void map_remove(struct conv_store *s, struct wmap_val *u, uint64_t cid)
{
    struct u64map *m = map_of(u);
    struct conv_arr *a;
    size_t n;

    u64map_del(m, cid);
    n = u64map_count(m);
    if (n == 1) {
        struct crec last;

        map_records(m, &last);
        set_to_single(u, last);
    } else if (n < CONV_SMALL_MAX / 2 && (a = arr_alloc(s, (uint32_t)n))) {
        map_records(m, a->r);
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
            word_free(s, arr_of(u)->r[i].w);
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

/*
 * The one path of every mutator: load the conversation's state (all zero
 * when absent), apply op, encode, then store the word, remove the
 * conversation (state back to zero) or insert it (new), adjusting the
 * user's total by the change of the conversation's contribution. Every
 * step that can fail comes before the first change.
 */
int conv_update(struct conv_store *s, enum conv_op op, uint64_t uid,
                uint64_t cid, uint64_t arg, uint32_t *unread, uint64_t *total)
{
    struct wmap_val *u;
    uint64_t *slot, w;
    uint32_t before, after;
    struct cst c;
    int rc;

    if ((op == CONV_OP_MARKUNREAD && arg == 0) ||
        (op == CONV_OP_MUTE && arg > 1))
        return CONV_EINVAL;
    u = wmap_ref(s->users, uid);
    slot = u ? conv_slot(u, cid) : NULL;
    cst_load(slot ? *slot : W_ZERO, &c);
    before = cst_contrib(&c);
    rc = cst_apply(s, &c, op, arg);
    if (rc != 0)
        return rc;
    *unread = cst_unread(&c);
    after = c.muted ? 0 : *unread;
    rc = cst_encode(s, &c, &w);
    if (rc != 0)
        return rc;
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

/* conv_list for the map form: the non-zero ones, sorted, then the first
 * max of them. */
static int map_list(const struct u64map *m, size_t max, conv_list_fn fn,
                    void *ctx, size_t *n)
{
    size_t size = u64map_count(m) * sizeof(struct crec), k = 0;
    struct crec *r = mem_alloc(NULL, size);

    if (r == NULL)
        return CONV_ENOMEM;
    map_records(m, r);
    for (size_t i = 0; i < u64map_count(m) && k < max; i++) {
        uint32_t un = word_unread(r[i].w);

        if (un != 0) {
            fn(r[i].cid, un, ctx);
            k++;
        }
    }
    mem_free(NULL, r, size);
    *n = k;
    return 0;
}

int conv_list(const struct conv_store *s, uint64_t uid, size_t max,
              conv_list_fn fn, void *ctx, size_t *n)
{
    const struct wmap_val *u = wmap_get(s->users, uid);
    size_t k = 0;

    if (u != NULL && user_tag(u) == TAG_MAP)
        return map_list(map_of(u), max, fn, ctx, n);
    if (u != NULL && user_tag(u) == TAG_ARR) {
        const struct conv_arr *a = arr_of(u);

        for (uint32_t i = 0; i < a->n && k < max; i++) {
            uint32_t un = word_unread(a->r[i].w);

            if (un != 0) {
                fn(a->r[i].cid, un, ctx);
                k++;
            }
        }
    } else if (u != NULL && max > 0 && word_unread(u->b) != 0) {
        fn(u->a, word_unread(u->b), ctx);
        k = 1;
    }
    *n = k;
    return 0;
}

/* Whether some sequence of commands leads to the state ci describes. */
static bool info_valid(const struct conv_info *ci)
{
    if (ci->read > ci->max || ci->nrecall > CONV_RECALL_MAX ||
        !(ci->read || ci->max || ci->muted || ci->nrecall))
        return false;
    for (uint32_t i = 0; i < ci->nrecall; i++)
        if (ci->recall[i] <= (i ? ci->recall[i - 1] : ci->read))
            return false;
    return true;
}

int conv_put(struct conv_store *s, uint64_t uid, uint64_t cid,
             const struct conv_info *ci)
{
    struct wmap_val *u = wmap_ref(s->users, uid);
    struct cst c = {ci->read, ci->max, ci->muted, NULL};
    uint64_t w, total;
    int rc;

    if (u != NULL && conv_slot(u, cid) != NULL)
        return 1;
    if (!info_valid(ci))
        return CONV_EINVAL;
    if (ci->nrecall > 0) {
        c.f = full_alloc(s, ci->nrecall);
        if (c.f == NULL)
            return CONV_ENOMEM;
        memcpy(c.f->rec, ci->recall, ci->nrecall * sizeof(uint64_t));
        c.f->nrec = ci->nrecall;
    }
    rc = cst_encode(s, &c, &w);
    if (rc == 0) {
        rc = user_insert(s, uid, u, cid, w, &total);
        if (rc != 0)
            word_free(s, w);
    }
    return rc;
}

static void info_of(uint64_t w, struct conv_info *ci)
{
    struct cst c;

    cst_load(w, &c);
    ci->read = c.read;
    ci->max = c.max;
    ci->unread = cst_unread(&c);
    ci->muted = c.muted;
    ci->nrecall = c.f ? c.f->nrec : 0;
    ci->recall = c.f ? c.f->rec : NULL;
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

    info_of(w, &ci);
    sc->fn(sc->uid, cid, &ci, sc->ctx);
}

static void scan_user_visit(uint64_t uid, const struct wmap_val *u, void *ctx)
{
    struct scan_ctx *sc = ctx;
    uint64_t cursor = 0;

    sc->uid = uid;
    switch (user_tag(u)) {
    case TAG_ARR:
        for (uint32_t i = 0; i < arr_of(u)->n; i++)
            scan_word_visit(arr_of(u)->r[i].cid, arr_of(u)->r[i].w, sc);
        break;
    case TAG_MAP:
        do
            u64map_scan(map_of(u), &cursor, SIZE_MAX, scan_word_visit, sc);
        while (cursor != 0);
        break;
    default:
        scan_word_visit(u->a, u->b, sc);
    }
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

/* One stored word: canonical, not the zero state, recalled seqs in order
 * above the watermark. */
static void audit_word(struct audit_ctx *ac, uint64_t w)
{
    struct cst c;

    cst_load(w, &c);
    ac->convs++;
    ac->sum += cst_contrib(&c);
    if (is_compact(w)) {
        ac->bad += w == W_ZERO;
        return;
    }
    ac->bytes += full_size(c.f->cap);
    ac->bad += c.read > c.max || fits_compact(&c) || c.f->nrec > c.f->cap ||
               c.f->cap > CONV_RECALL_MAX || c.f->muted > 1;
    for (uint32_t i = 0; i < c.f->nrec; i++)
        ac->bad += c.f->rec[i] <= (i ? c.f->rec[i - 1] : c.read);
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
        const struct conv_arr *a = arr_of(u);

        ac->bytes += arr_size(a->cap);
        ac->bad += a->n < 2 || a->n > CONV_SMALL_MAX || a->n > a->cap;
        for (uint32_t i = 0; i < a->n; i++) {
            audit_word(ac, a->r[i].w);
            ac->bad += i > 0 && a->r[i].cid <= a->r[i - 1].cid;
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
