/*
 * dot.c - DOT over three parts:
 *
 *   dots   (denseid) dot id -> dense index 0..65535, and per index the push
 *          time plus one (0: never pushed), 8 bytes.
 *   users  (tagged u32map) uid -> a handle of the user's click record, and
 *          in the entry's u16 tag the user's day of last activity when DOT
 *          keeps it (dot.h, "Activity days"; 0: none): ~13 bytes a user.
 *   slab   the click records: one 8-byte entry per dot the user clicked,
 *          ascending by dot index,
 *
 *            63        48 47                      1  0
 *           [ dot index  |  click time (47 bits)   | 1 ]
 *
 * Records come in size classes of 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48 and
 * 64 clicks, carved from chunks of 48-64 KiB per class (no allocator header
 * per record) and reused through a free list per class. Chunks are pages
 * mapped from the kernel (mem_map), not malloc'ed: the map's buckets grow
 * in small steps and leave holes in malloc's heap (u32map.c, "Growth
 * steps"), which chunks allocated between them would keep from being
 * reused or given back. Mapped, RSS follows the accounting: 11.4 against
 * 11.3 bytes a click at 4 clicks a user (11.9 with 16 KiB chunks from
 * malloc). A user's record is
 * of the smallest class that holds its clicks, so its count needs no
 * header: a record of n < capacity clicks ends with zero words (a click is
 * never 0: bit 0), and n is always more than the class below holds (the
 * count is found by looking at the last third of the record at most).
 * Clicks are never removed one by one (only a whole user goes), so a record
 * only moves up a class; the class of a user who leaves is reused by the
 * next one, and a class that empties gives its chunks back.
 *
 * A user with more than 64 clicks has an out-of-line record (big): a
 * malloc'ed block of a count word and exactly that many clicks, found
 * through a table of pointers by the same kind of handle, resized by each
 * new click (up to DOT_MAX_DOTS clicks).
 *
 * A handle is [class: 4 | index: 28]: slab classes 0..11, BIG_CLASS for
 * the out-of-line records; the index is the record's number in its class
 * (chunk index >> shift, slot index & mask) or its slot in the big table.
 *
 * A free slab record holds, in its first word, (next free index + 1) << 1
 * (0: the last): bit 0 clear, which no record in use has. A free slot of
 * the big table holds (next free slot + 1) << 1 | 1 instead of a pointer.
 *
 * Cost at 4 clicks a user (`make bench-memory`'s row): 13 bytes of map
 * entry + 32 bytes of record = ~11.3 bytes a click, the activity day
 * included (before: a u64map slot, an 8-byte header and malloc's per
 * block, and a 12-byte entry in the activity table: ~20 bytes).
 */
#include "dot.h"

#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "denseid.h"
#include "mem.h"
#include "u32map.h"

/* denseid_intern's errors pass through as DOT_* errors. */
_Static_assert((int)DOT_ENOMEM == (int)DENSEID_ENOMEM &&
                   (int)DOT_EFULL == (int)DENSEID_EFULL,
               "DOT and denseid error codes");

#define SLAB_CLASSES 12
#define BIG_CLASS 15u
#define H_BITS 28
#define H_INDEX_MAX ((UINT32_C(1) << H_BITS) - 1)
#define CHUNK_BYTES 65536u /* at most: chunks are 48 or 64 KiB, whole pages */

static const uint32_t class_cap[SLAB_CLASSES] = {1,  2,  3,  4,  6,  8,
                                                 12, 16, 24, 32, 48, 64};
#define SLAB_MAX 64u /* class_cap[SLAB_CLASSES - 1] */

static inline uint32_t h_class(uint32_t h)
{
    return h >> H_BITS;
}

static inline uint32_t h_index(uint32_t h)
{
    return h & H_INDEX_MAX;
}

static inline uint32_t h_make(uint32_t c, uint32_t i)
{
    return c << H_BITS | i;
}

struct slab_class {
    uint64_t **chunks; /* nchunks chunks of 1 << shift records */
    uint32_t nchunks;
    uint32_t carved;    /* records handed out at least once: 0..carved-1 */
    uint32_t live;      /* records in use */
    uint32_t free_head; /* index + 1 of the first free record; 0: none */
    uint32_t cap;       /* clicks a record */
    uint32_t shift;     /* log2 of the records in a chunk */
};

struct big_table {
    uintptr_t *slot; /* nslots: a record's pointer, or a free link */
    uint32_t nslots;
    uint32_t live;
    uint32_t free_head; /* slot + 1; 0: none */
};

struct dot_store {
    struct denseid *dots; /* value: uint64_t push time + 1, 0 = never */
    struct u32map *users; /* uid -> handle, tag: activity day */
    struct slab_class cls[SLAB_CLASSES];
    struct big_table big;
    size_t entries;      /* clicks held */
    size_t tracked;      /* users whose tag is not 0 */
    struct mem_acct mem; /* everything */
};

static inline uint64_t *push_ref(const struct dot_store *s, uint32_t idx)
{
    return denseid_val(s->dots, idx);
}

/* ---- The slab ------------------------------------------------------------ */

static inline size_t chunk_bytes(const struct slab_class *c)
{
    return ((size_t)c->cap << c->shift) * sizeof(uint64_t);
}

static inline uint64_t *slab_rec(const struct slab_class *c, uint32_t i)
{
    return c->chunks[i >> c->shift] +
           (size_t)(i & ((UINT32_C(1) << c->shift) - 1)) * c->cap;
}

/* The clicks in a record of class k (see the top: more than the class
 * below holds, zero words after them). */
static inline uint32_t slab_count(uint32_t k, const uint64_t *r)
{
    uint32_t cap = class_cap[k], n;

    if (k < 4)
        return cap; /* 1, 2, 3, 4: always full */
    n = class_cap[k - 1] + 1;
    while (n < cap && r[n] != 0)
        n++;
    return n;
}

/* The smallest class holding n clicks, or BIG_CLASS. */
static uint32_t class_for(uint32_t n)
{
    for (uint32_t k = 0; k < SLAB_CLASSES; k++)
        if (n <= class_cap[k])
            return k;
    return BIG_CLASS;
}

/* A record of class k: its index, or -1 (nothing changed). Its words are
 * the caller's to fill. */
static int64_t slab_get(struct dot_store *s, uint32_t k)
{
    struct slab_class *c = &s->cls[k];
    uint32_t i;

    if (c->free_head != 0) {
        i = c->free_head - 1;
        c->free_head = (uint32_t)(slab_rec(c, i)[0] >> 1);
        c->live++;
        return i;
    }
    if (c->carved > H_INDEX_MAX)
        return -1;
    if (c->carved == c->nchunks << c->shift) {
        uint64_t **a, *chunk;

        a = mem_realloc(&s->mem, c->chunks, c->nchunks * sizeof(*a),
                        (c->nchunks + 1) * sizeof(*a));
        if (a == NULL)
            return -1;
        c->chunks = a;
        chunk = mem_map(&s->mem, chunk_bytes(c));
        if (chunk == NULL) {
            /* The array back to its size (a shrink never fails: mem.h). */
            if (c->nchunks == 0) {
                mem_free(&s->mem, a, sizeof(*a));
                c->chunks = NULL;
            } else {
                c->chunks =
                    mem_realloc(&s->mem, a, (c->nchunks + 1) * sizeof(*a),
                                c->nchunks * sizeof(*a));
            }
            return -1;
        }
        c->chunks[c->nchunks++] = chunk;
    }
    c->live++;
    return c->carved++;
}

/* Frees every chunk of class c (no record in use). */
static void slab_release_all(struct dot_store *s, struct slab_class *c)
{
    for (uint32_t j = 0; j < c->nchunks; j++)
        mem_unmap(&s->mem, c->chunks[j], chunk_bytes(c));
    mem_free(&s->mem, c->chunks, c->nchunks * sizeof(*c->chunks));
    c->chunks = NULL;
    c->nchunks = c->carved = c->live = c->free_head = 0;
}

static void slab_put(struct dot_store *s, uint32_t k, uint32_t i)
{
    struct slab_class *c = &s->cls[k];

    if (--c->live == 0 && c->nchunks > 1) {
        /* Empty: all but the first chunk go back (the first stays, so
         * that users passing through a class, as every user's first
         * clicks do, do not allocate and free it each time; a store
         * whose last user leaves frees it too: dot_forget_user). */
        for (uint32_t j = 1; j < c->nchunks; j++)
            mem_unmap(&s->mem, c->chunks[j], chunk_bytes(c));
        c->chunks =
            mem_realloc(&s->mem, c->chunks, c->nchunks * sizeof(*c->chunks),
                        sizeof(*c->chunks));
        c->nchunks = 1;
    }
    if (c->live == 0) {
        c->carved = c->free_head = 0;
        return;
    }
    slab_rec(c, i)[0] = (uint64_t)c->free_head << 1;
    c->free_head = i + 1;
}

/* A store without users holds no chunk (slab_put keeps one a class). */
static void trim_if_empty(struct dot_store *s)
{
    if (u32map_count(s->users) == 0)
        for (uint32_t k = 0; k < SLAB_CLASSES; k++)
            slab_release_all(s, &s->cls[k]);
}

/* ---- Out-of-line records ------------------------------------------------ */

/* A slot of the big table for p: its index, or -1 (nothing changed). */
static int64_t big_slot(struct dot_store *s, uint64_t *p)
{
    struct big_table *b = &s->big;
    uint32_t i;

    if (b->free_head != 0) {
        i = b->free_head - 1;
        b->free_head = (uint32_t)(b->slot[i] >> 1);
    } else {
        /* The table grows by an eighth (the new slots but the first go
         * to the free list), so that many big users cost no copy each. */
        uint32_t add = b->nslots / 8 + 1;
        uintptr_t *a;

        if (b->nslots > H_INDEX_MAX)
            return -1;
        if (add > H_INDEX_MAX + 1 - b->nslots)
            add = H_INDEX_MAX + 1 - b->nslots;
        a = mem_realloc(&s->mem, b->slot, b->nslots * sizeof(*a),
                        (size_t)(b->nslots + add) * sizeof(*a));
        if (a == NULL)
            return -1;
        b->slot = a;
        i = b->nslots;
        for (uint32_t j = i + add - 1; j > i; j--) {
            a[j] = (uintptr_t)b->free_head << 1 | 1;
            b->free_head = j + 1;
        }
        b->nslots += add;
    }
    b->slot[i] = (uintptr_t)p;
    b->live++;
    return i;
}

static inline uint64_t *big_rec(const struct dot_store *s, uint32_t i)
{
    return (uint64_t *)s->big.slot[i];
}

static void big_drop(struct dot_store *s, uint32_t i)
{
    struct big_table *b = &s->big;
    uint64_t *p = big_rec(s, i);

    mem_free(&s->mem, p, (p[0] + 1) * sizeof(uint64_t));
    if (--b->live == 0) {
        mem_free(&s->mem, b->slot, b->nslots * sizeof(*b->slot));
        *b = (struct big_table){0};
        return;
    }
    b->slot[i] = (uintptr_t)b->free_head << 1 | 1;
    b->free_head = i + 1;
}

/* ---- Records behind handles --------------------------------------------- */

/* The clicks of handle h: *e and their count. */
static inline uint32_t rec_of(const struct dot_store *s, uint32_t h,
                              uint64_t **e)
{
    uint32_t k = h_class(h);

    if (k == BIG_CLASS) {
        uint64_t *p = big_rec(s, h_index(h));

        *e = p + 1;
        return (uint32_t)p[0];
    }
    *e = slab_rec(&s->cls[k], h_index(h));
    return slab_count(k, *e);
}

/* A record of class k = class_for(n) for n clicks (1 <= n <=
 * DOT_MAX_DOTS) holding src[0..n) with
 * click at position at inserted when at <= n - 1 names a slot (at == n:
 * no insertion, src has n clicks; else src has n - 1): its handle in *h.
 * 0, or -1 (nothing changed). */
static int rec_new(struct dot_store *s, uint32_t k, uint32_t n,
                   const uint64_t *src, uint32_t at, uint64_t click,
                   uint32_t *h)
{
    uint64_t *e;

    if (k == BIG_CLASS) {
        uint64_t *p = mem_alloc(&s->mem, (n + 1) * sizeof(uint64_t));
        int64_t i;

        if (p == NULL)
            return -1;
        i = big_slot(s, p);
        if (i < 0) {
            mem_free(&s->mem, p, (n + 1) * sizeof(uint64_t));
            return -1;
        }
        p[0] = n;
        e = p + 1;
        *h = h_make(BIG_CLASS, (uint32_t)i);
    } else {
        int64_t i = slab_get(s, k);

        if (i < 0)
            return -1;
        e = slab_rec(&s->cls[k], (uint32_t)i);
        memset(e + n, 0, (class_cap[k] - n) * sizeof(*e));
        *h = h_make(k, (uint32_t)i);
    }
    if (at == n) {
        memcpy(e, src, n * sizeof(*e));
        return 0;
    }
    for (uint32_t j = 0; j < at; j++)
        e[j] = src[j];
    e[at] = click;
    for (uint32_t j = at + 1; j < n; j++)
        e[j] = src[j - 1];
    return 0;
}

static void rec_free(struct dot_store *s, uint32_t h)
{
    if (h_class(h) == BIG_CLASS)
        big_drop(s, h_index(h));
    else
        slab_put(s, h_class(h), h_index(h));
}

/* Position of the first click of dot index key or above among e[0..n). */
static inline uint32_t lower_bound(const uint64_t *e, uint32_t n, uint32_t key)
{
    uint32_t lo = 0, hi = n;

    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;

        if (dot_click_dot(e[mid]) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* uid's clicks (0 when it has none). */
static inline uint32_t user_clicks(const struct dot_store *s, uint64_t uid,
                                   uint64_t **e)
{
    uint32_t h;

    if (!u32map_get(s->users, uid, &h)) {
        *e = NULL;
        return 0;
    }
    return rec_of(s, h, e);
}

/* ---- The store ------------------------------------------------------------
 */

struct dot_store *dot_create(void)
{
    struct dot_store *s = mem_zalloc(NULL, sizeof(*s));

    if (s == NULL)
        return NULL;
    mem_acct_init(&s->mem, NULL);
    for (uint32_t k = 0; k < SLAB_CLASSES; k++) {
        struct slab_class *c = &s->cls[k];

        c->cap = class_cap[k];
        while ((size_t)c->cap * sizeof(uint64_t) << (c->shift + 1) <=
               CHUNK_BYTES)
            c->shift++;
    }
    s->dots = denseid_create(&s->mem, sizeof(uint64_t), DOT_MAX_DOTS);
    s->users = u32map_create_tagged(&s->mem);
    if (s->dots == NULL || s->users == NULL) {
        dot_destroy(s);
        return NULL;
    }
    return s;
}

void dot_destroy(struct dot_store *s)
{
    if (s == NULL)
        return;
    for (uint32_t k = 0; k < SLAB_CLASSES; k++)
        slab_release_all(s, &s->cls[k]);
    for (uint32_t i = 0; i < s->big.nslots; i++)
        if ((s->big.slot[i] & 1) == 0)
            mem_free(&s->mem, big_rec(s, i),
                     (big_rec(s, i)[0] + 1) * sizeof(uint64_t));
    mem_free(&s->mem, s->big.slot, s->big.nslots * sizeof(*s->big.slot));
    denseid_destroy(s->dots);
    u32map_destroy(s->users);
    mem_free(NULL, s, sizeof(*s));
}

int dot_push(struct dot_store *s, uint64_t dot, uint64_t ts, uint64_t *push)
{
    uint32_t idx;
    uint64_t *p;
    int rc;

    if (ts > DOT_TS_MAX)
        return DOT_ERANGE;
    rc = denseid_intern(s->dots, dot, &idx);
    if (rc != 0)
        return rc;
    p = push_ref(s, idx);
    if (*p < ts + 1)
        *p = ts + 1;
    *push = *p - 1;
    return 0;
}

/* Adds click (of dot index idx, which uid has not clicked) to uid's
 * record, or makes uid one. 0, or -1 (nothing changed). */
static int add_click(struct dot_store *s, uint64_t uid, uint32_t *href,
                     uint32_t idx, uint64_t click)
{
    uint64_t *e;
    uint32_t n, at, h;

    if (href == NULL) {
        if (rec_new(s, 0, 1, NULL, 0, click, &h) != 0)
            return -1;
        if (u32map_put_tagged(s->users, uid, h, 0) != 0) {
            rec_free(s, h);
            trim_if_empty(s);
            return -1;
        }
        s->entries++;
        return 0;
    }
    n = rec_of(s, *href, &e);
    at = lower_bound(e, n, idx);
    if (h_class(*href) == BIG_CLASS) {
        uint32_t i = h_index(*href);
        uint64_t *p =
            mem_realloc(&s->mem, big_rec(s, i), (n + 1) * sizeof(uint64_t),
                        (n + 2) * sizeof(uint64_t));

        if (p == NULL)
            return -1;
        s->big.slot[i] = (uintptr_t)p;
        memmove(p + 1 + at + 1, p + 1 + at, (n - at) * sizeof(*p));
        p[1 + at] = click;
        p[0] = n + 1;
    } else if (n < class_cap[h_class(*href)]) {
        memmove(e + at + 1, e + at, (n - at) * sizeof(*e));
        e[at] = click;
    } else {
        /* Full: the next class up (records are not resized in place). */
        if (rec_new(s,
                    h_class(*href) + 1 < SLAB_CLASSES ? h_class(*href) + 1
                                                      : BIG_CLASS,
                    n + 1, e, at, click, &h) != 0)
            return -1;
        rec_free(s, *href);
        *href = h;
    }
    s->entries++;
    return 0;
}

int dot_click(struct dot_store *s, uint64_t uid, uint64_t dot, uint64_t ts)
{
    uint32_t idx, *href, n;
    uint64_t *e;
    uint16_t tag;
    bool known = denseid_find(s->dots, dot, &idx);
    int rc;

    if (ts > DOT_TS_MAX)
        return DOT_ERANGE;
    rc = known ? 0 : denseid_intern(s->dots, dot, &idx);
    if (rc != 0)
        return rc;
    href = u32map_ref_tagged(s->users, uid, &tag);
    if (href != NULL) {
        uint32_t at;

        n = rec_of(s, *href, &e);
        at = lower_bound(e, n, idx);
        if (at < n && dot_click_dot(e[at]) == idx) {
            if (dot_click_ts(e[at]) < ts)
                e[at] = dot_click_make(idx, ts);
            return 0;
        }
    }
    if (add_click(s, uid, href, idx, dot_click_make(idx, ts)) == 0)
        return 0;
    /* The dot created for this click does not stay behind. */
    if (!known)
        denseid_unintern(s->dots, dot);
    return DOT_ENOMEM;
}

bool dot_shown(const struct dot_store *s, uint64_t uid, uint64_t dot)
{
    return dot_shown_after(s, uid, dot, 0);
}

/* push (stored + 1, 0: never) shows over a click at ts and the floor. */
static inline bool shows(uint64_t push, uint64_t ts, uint64_t floor)
{
    return push != 0 && ts < push - 1 && (floor == 0 || floor < push - 1);
}

bool dot_shown_after(const struct dot_store *s, uint64_t uid, uint64_t dot,
                     uint64_t floor)
{
    uint64_t push, *e;
    uint32_t idx, n, at;

    if (!denseid_find(s->dots, dot, &idx))
        return false;
    push = *push_ref(s, idx);
    if (push == 0)
        return false;
    n = user_clicks(s, uid, &e);
    at = lower_bound(e, n, idx);
    if (at == n || dot_click_dot(e[at]) != idx)
        return floor == 0 || floor < push - 1; /* never clicked */
    return shows(push, dot_click_ts(e[at]), floor);
}

uint32_t dot_user_shown(const struct dot_store *s, uint64_t uid, uint64_t floor)
{
    uint64_t *e;
    uint32_t n = user_clicks(s, uid, &e), k = 0;

    for (uint32_t i = 0; i < n; i++)
        k +=
            shows(*push_ref(s, dot_click_dot(e[i])), dot_click_ts(e[i]), floor);
    return k;
}

uint64_t dot_push_time(const struct dot_store *s, uint64_t dot)
{
    uint32_t idx;
    uint64_t p;

    if (!denseid_find(s->dots, dot, &idx))
        return DOT_NEVER;
    p = *push_ref(s, idx);
    return p == 0 ? DOT_NEVER : p - 1;
}

void dot_dot_at(const struct dot_store *s, uint32_t i, uint64_t *dot,
                uint64_t *push)
{
    uint64_t p = *push_ref(s, i);

    *dot = denseid_id(s->dots, i);
    *push = p == 0 ? DOT_NEVER : p - 1;
}

int dot_put_dot(struct dot_store *s, uint64_t dot, uint64_t push)
{
    uint32_t idx;
    int rc;

    if (push != DOT_NEVER && push > DOT_TS_MAX)
        return DOT_ERANGE;
    if (denseid_find(s->dots, dot, &idx))
        return 1;
    rc = denseid_intern(s->dots, dot, &idx);
    if (rc == 0 && push != DOT_NEVER)
        *push_ref(s, idx) = push + 1;
    return rc;
}

bool dot_find(const struct dot_store *s, uint64_t dot, uint32_t *i)
{
    return denseid_find(s->dots, dot, i);
}

struct scan_ctx {
    const struct dot_store *s;
    dot_visit_fn fn;
    void *ctx;
};

static void scan_visit(uint64_t uid, uint32_t h, uint16_t tag, void *ctx)
{
    struct scan_ctx *sc = ctx;
    uint64_t *e;
    uint32_t n = rec_of(sc->s, h, &e);

    (void)tag;
    sc->fn(uid, n, e, sc->ctx);
}

size_t dot_scan(const struct dot_store *s, uint64_t *cursor, size_t max,
                dot_visit_fn fn, void *ctx)
{
    struct scan_ctx sc = {s, fn, ctx};

    return u32map_scan_tagged(s->users, cursor, max, scan_visit, &sc);
}

int dot_put_user(struct dot_store *s, uint64_t uid, uint32_t n,
                 const uint64_t *clicks)
{
    uint32_t h;

    if (u32map_get(s->users, uid, &h))
        return 1;
    if (n == 0 || n > DOT_MAX_DOTS)
        return DOT_ENOMEM; /* the caller validates: never */
    if (rec_new(s, class_for(n), n, clicks, n, 0, &h) != 0)
        return DOT_ENOMEM;
    if (u32map_put_tagged(s->users, uid, h, 0) != 0) {
        rec_free(s, h);
        trim_if_empty(s);
        return DOT_ENOMEM;
    }
    s->entries += n;
    return 0;
}

size_t dot_entries(const struct dot_store *s)
{
    return s->entries;
}

size_t dot_users(const struct dot_store *s)
{
    return u32map_count(s->users);
}

size_t dot_dots(const struct dot_store *s)
{
    return denseid_count(s->dots);
}

size_t dot_bytes(const struct dot_store *s)
{
    return sizeof(*s) + s->mem.bytes;
}

/* ---- Activity days --------------------------------------------------------
 */

bool dot_user_day(const struct dot_store *s, uint64_t uid, uint16_t *day)
{
    return u32map_ref_tagged(s->users, uid, day) != NULL;
}

int dot_set_user_day(struct dot_store *s, uint64_t uid, uint16_t day)
{
    uint16_t old;

    if (u32map_ref_tagged(s->users, uid, &old) == NULL)
        return 0;
    if (old == day)
        return 1;
    if (u32map_set_tag(s->users, uid, day) != 0)
        return -1;
    s->tracked += (old == 0) - (day == 0);
    return 1;
}

size_t dot_tracked_users(const struct dot_store *s)
{
    return s->tracked;
}

struct day_ctx {
    dot_day_fn fn;
    void *ctx;
};

static void day_visit(uint64_t uid, uint32_t h, uint16_t tag, void *ctx)
{
    struct day_ctx *dc = ctx;

    (void)h;
    if (tag != 0)
        dc->fn(uid, tag, dc->ctx);
}

size_t dot_scan_days(const struct dot_store *s, uint64_t *cursor, size_t max,
                     dot_day_fn fn, void *ctx)
{
    struct day_ctx dc = {fn, ctx};

    return u32map_scan_tagged(s->users, cursor, max, day_visit, &dc);
}

/* ---- Audit ------------------------------------------------------------------
 */

struct audit_ctx {
    const struct dot_store *s;
    uint8_t *seen[SLAB_CLASSES + 1]; /* a byte per record; NULL: skipped */
    uint32_t live[SLAB_CLASSES + 1];
    size_t entries, tracked, big_bytes, bad;
};

static void audit_user(uint64_t uid, uint32_t h, uint16_t tag, void *ctx)
{
    struct audit_ctx *ac = ctx;
    const struct dot_store *s = ac->s;
    uint32_t k = h_class(h), i = h_index(h), n, cap, slot;
    uint64_t *e;

    (void)uid;
    ac->tracked += tag != 0;
    if (k == BIG_CLASS) {
        if (i >= s->big.nslots || (s->big.slot[i] & 1) != 0) {
            ac->bad++;
            return;
        }
        slot = SLAB_CLASSES;
        cap = DOT_MAX_DOTS;
        n = rec_of(s, h, &e);
        ac->bad += n <= SLAB_MAX || n > DOT_MAX_DOTS;
        ac->big_bytes += ((size_t)n + 1) * sizeof(uint64_t);
    } else {
        if (k >= SLAB_CLASSES || i >= s->cls[k].carved ||
            (slab_rec(&s->cls[k], i)[0] & 1) == 0) {
            ac->bad++;
            return;
        }
        slot = k;
        cap = class_cap[k];
        n = rec_of(s, h, &e);
        ac->bad += k > 0 && n <= class_cap[k - 1];
        for (uint32_t j = n; j < cap; j++)
            ac->bad += e[j] != 0;
    }
    if (ac->seen[slot] != NULL)
        ac->bad += ac->seen[slot][i]++ != 0; /* one user per record */
    ac->live[slot]++;
    ac->entries += n;
    for (uint32_t j = 0; j < n && j < cap; j++) {
        ac->bad += (e[j] & 1) == 0;
        ac->bad += dot_click_dot(e[j]) >= denseid_count(s->dots);
        ac->bad += j > 0 && dot_click_dot(e[j]) <= dot_click_dot(e[j - 1]);
    }
}

/* Class k's free list: in range, not in use, as long as carved - live. */
static size_t audit_free(const struct dot_store *s, uint32_t k,
                         const uint8_t *seen)
{
    const struct slab_class *c = &s->cls[k];
    uint32_t f = c->free_head, steps = 0;
    size_t bad = 0;

    while (f != 0 && steps <= c->carved) {
        uint64_t w;

        if (f - 1 >= c->carved)
            return bad + 1;
        w = slab_rec(c, f - 1)[0];
        bad += (w & 1) != 0 || (seen != NULL && seen[f - 1] != 0);
        f = (uint32_t)(w >> 1);
        steps++;
    }
    return bad + (f != 0 || steps != c->carved - c->live);
}

static size_t audit_big_free(const struct dot_store *s)
{
    const struct big_table *b = &s->big;
    uint32_t f = b->free_head, steps = 0;

    while (f != 0 && steps <= b->nslots) {
        if (f - 1 >= b->nslots || (b->slot[f - 1] & 1) == 0)
            return 1;
        f = (uint32_t)(b->slot[f - 1] >> 1);
        steps++;
    }
    return f != 0 || steps != b->nslots - b->live;
}

size_t dot_audit(const struct dot_store *s)
{
    struct audit_ctx ac = {.s = s};
    size_t bad = denseid_audit(s->dots) + u32map_audit(s->users);
    size_t slab_bytes = 0;
    uint64_t cursor = 0;

    for (uint32_t k = 0; k < SLAB_CLASSES; k++) {
        const struct slab_class *c = &s->cls[k];

        /* plain calloc: the audit's scratch is not the store's memory */
        ac.seen[k] = c->carved != 0 ? calloc(c->carved, 1) : NULL;
        slab_bytes += c->nchunks * (sizeof(uint64_t *) + chunk_bytes(c));
        bad += c->carved > (size_t)c->nchunks << c->shift ||
               c->live > c->carved ||
               (c->live == 0 && (c->carved != 0 || c->nchunks > 1)) ||
               (u32map_count(s->users) == 0 && c->nchunks != 0);
    }
    ac.seen[SLAB_CLASSES] =
        s->big.nslots != 0 ? calloc(s->big.nslots, 1) : NULL;
    do
        u32map_scan_tagged(s->users, &cursor, SIZE_MAX, audit_user, &ac);
    while (cursor != 0);
    bad += ac.bad + (ac.entries != s->entries) + (ac.tracked != s->tracked);
    for (uint32_t k = 0; k < SLAB_CLASSES; k++) {
        bad += ac.live[k] != s->cls[k].live;
        bad += audit_free(s, k, ac.seen[k]);
        free(ac.seen[k]);
    }
    bad += ac.live[SLAB_CLASSES] != s->big.live;
    bad += audit_big_free(s);
    free(ac.seen[SLAB_CLASSES]);
    slab_bytes += s->big.nslots * sizeof(*s->big.slot) + ac.big_bytes;
    bad += denseid_bytes(s->dots) + u32map_bytes(s->users) + slab_bytes !=
           s->mem.bytes;
    for (uint32_t i = 0; i < denseid_count(s->dots); i++)
        bad += *push_ref(s, i) > DOT_TS_MAX + 1;
    return bad;
}

/* ---- Per user ----------------------------------------------------------- */

size_t dot_forget_user(struct dot_store *s, uint64_t uid)
{
    uint16_t tag;
    uint32_t *href = u32map_ref_tagged(s->users, uid, &tag), h, n;
    uint64_t *e;

    if (href == NULL)
        return 0;
    h = *href;
    n = rec_of(s, h, &e);
    rec_free(s, h);
    u32map_del(s->users, uid);
    s->entries -= n;
    s->tracked -= tag != 0;
    trim_if_empty(s);
    return n;
}

uint32_t dot_user_info(const struct dot_store *s, uint64_t uid, dot_user_fn fn,
                       void *ctx)
{
    uint64_t *e;
    uint32_t n = user_clicks(s, uid, &e);

    for (uint32_t i = 0; i < n; i++) {
        uint64_t dot, push;

        dot_dot_at(s, dot_click_dot(e[i]), &dot, &push);
        fn(dot, dot_click_ts(e[i]), push,
           push != DOT_NEVER && dot_click_ts(e[i]) < push, ctx);
    }
    return n;
}

void dot_prefetch_user(const struct dot_store *s, uint64_t uid, int stage)
{
    uint32_t h;

    if (stage < 2) {
        u32map_prefetch(s->users, uid, stage);
        return;
    }
    if (stage == 2 && u32map_get(s->users, uid, &h)) {
        uint32_t k = h_class(h);

        __builtin_prefetch(
            k == BIG_CLASS ? (const void *)big_rec(s, h_index(h))
                           : (const void *)slab_rec(&s->cls[k], h_index(h)));
    }
}
