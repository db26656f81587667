/*
 * listmap.c - see listmap.h. A map value with bit 0 set is a one-entry list
 * (the entry itself); otherwise it points to a struct lm_rec of n >= 2
 * entries. That form is canonical (listmap_audit checks it), so the common
 * user with one dot or one followee never has a record.
 *
 * Records have exact sizes: lists change one entry at a time, and the
 * memmove of an insert or delete already costs O(n), so a realloc per
 * change adds little and no slack is ever paid for.
 */
#include "listmap.h"

#include "u64map.h"

#include <string.h>

struct lm_rec {
    uint32_t n;
    uint32_t unused;
    uint64_t e[];
};

struct listmap {
    struct u64map *map;
    struct mem_acct mem; /* the map and the records */
    unsigned shift;      /* 64 - keybits: entry >> shift is its key */
    size_t entries;
};

static inline bool is_inline(uint64_t w)
{
    return w & 1;
}

static inline struct lm_rec *rec_of(uint64_t w)
{
    return (struct lm_rec *)(uintptr_t)w;
}

static inline size_t rec_size(uint32_t n)
{
    return sizeof(struct lm_rec) + (size_t)n * sizeof(uint64_t);
}

/* The first position in e[0..n) whose key is >= key. */
static uint32_t lower_bound(const uint64_t *e, uint32_t n, unsigned shift,
                            uint64_t key)
{
    uint32_t lo = 0, hi = n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if ((e[mid] >> shift) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct listmap *listmap_create(struct mem_acct *owner, unsigned keybits)
{
    struct listmap *m;

    if (keybits < 1 || keybits > 62)
        return NULL;
    m = mem_zalloc(owner, sizeof(*m));
    if (m == NULL)
        return NULL;
    mem_acct_init(&m->mem, owner);
    m->map = u64map_create(&m->mem);
    if (m->map == NULL) {
        mem_free(owner, m, sizeof(*m));
        return NULL;
    }
    m->shift = 64 - keybits;
    return m;
}

static void rec_free(struct listmap *m, struct lm_rec *r)
{
    mem_free(&m->mem, r, rec_size(r->n));
}

static void free_one(void *rec, void *ctx)
{
    rec_free(ctx, rec);
}

void listmap_destroy(struct listmap *m)
{
    if (m == NULL)
        return;
    u64map_each_rec(m->map, free_one, m);
    u64map_destroy(m->map);
    mem_free(m->mem.up, m, sizeof(*m));
}

uint32_t listmap_get(const struct listmap *m, uint64_t uid, const uint64_t **e,
                     uint64_t *one)
{
    uint64_t w = u64map_get(m->map, uid);

    *e = NULL;
    if (w == 0)
        return 0;
    if (is_inline(w)) {
        *one = w;
        *e = one;
        return 1;
    }
    *e = rec_of(w)->e;
    return rec_of(w)->n;
}

uint32_t listmap_edit(struct listmap *m, uint64_t uid, uint64_t **e)
{
    uint64_t *ref = u64map_ref(m->map, uid);

    *e = NULL;
    if (ref == NULL)
        return 0;
    if (is_inline(*ref)) {
        *e = ref;
        return 1;
    }
    *e = rec_of(*ref)->e;
    return rec_of(*ref)->n;
}

void listmap_prefetch(const struct listmap *m, uint64_t uid, int stage)
{
    u64map_prefetch_rec(m->map, uid, stage);
}

bool listmap_lookup(const struct listmap *m, uint64_t uid, uint64_t key,
                    uint64_t *entry)
{
    const uint64_t *e;
    uint64_t one;
    uint32_t n = listmap_get(m, uid, &e, &one);
    uint32_t i = lower_bound(e, n, m->shift, key);

    if (i == n || (e[i] >> m->shift) != key)
        return false;
    *entry = e[i];
    return true;
}

uint64_t *listmap_find(struct listmap *m, uint64_t uid, uint64_t key)
{
    uint64_t *e;
    uint32_t n = listmap_edit(m, uid, &e);
    uint32_t i = lower_bound(e, n, m->shift, key);

    return i < n && (e[i] >> m->shift) == key ? &e[i] : NULL;
}

/* A record of n entries: e[0..n) with entry inserted at position at. */
static struct lm_rec *rec_with(struct listmap *m, struct lm_rec *old,
                               const uint64_t *e, uint32_t n, uint32_t at,
                               uint64_t entry)
{
    struct lm_rec *r =
        mem_realloc(&m->mem, old, old ? rec_size(n - 1) : 0, rec_size(n));

    if (r == NULL)
        return NULL;
    if (old == NULL) {
        memcpy(r->e, e, at * sizeof(uint64_t));
        memcpy(&r->e[at + 1], &e[at], (n - 1 - at) * sizeof(uint64_t));
    } else {
        memmove(&r->e[at + 1], &r->e[at], (n - 1 - at) * sizeof(uint64_t));
    }
    r->e[at] = entry;
    r->n = n;
    r->unused = 0;
    return r;
}

int listmap_add(struct listmap *m, uint64_t uid, uint64_t entry)
{
    uint64_t *ref = u64map_ref(m->map, uid);
    struct lm_rec *r;

    if (ref == NULL) {
        if (u64map_put(m->map, uid, entry) != 0)
            return -1;
    } else if (is_inline(*ref)) {
        r = rec_with(m, NULL, ref, 2, *ref < entry, entry);
        if (r == NULL)
            return -1;
        *ref = (uint64_t)(uintptr_t)r;
    } else {
        r = rec_of(*ref);
        r = rec_with(m, r, r->e, r->n + 1,
                     lower_bound(r->e, r->n, m->shift, entry >> m->shift),
                     entry);
        if (r == NULL)
            return -1;
        *ref = (uint64_t)(uintptr_t)r;
    }
    m->entries++;
    return 0;
}

/* Removes e[at] from a record of two or more entries, stored at *ref. */
static void rec_remove(struct listmap *m, uint64_t *ref, uint32_t at)
{
    struct lm_rec *r = rec_of(*ref);
    uint32_t n = r->n - 1;

    if (n == 1) {
        *ref = r->e[1 - at];
        rec_free(m, r);
        return;
    }
    memmove(&r->e[at], &r->e[at + 1], (n - at) * sizeof(uint64_t));
    r->n = n;
    /* A shrink: never fails (mem.h). */
    *ref = (uint64_t)(uintptr_t)mem_realloc(&m->mem, r, rec_size(n + 1),
                                            rec_size(n));
}

bool listmap_del(struct listmap *m, uint64_t uid, uint64_t key)
{
    uint64_t *ref = u64map_ref(m->map, uid);
    uint32_t i;

    if (ref == NULL)
        return false;
    if (is_inline(*ref)) {
        if ((*ref >> m->shift) != key)
            return false;
        u64map_del(m->map, uid);
    } else {
        struct lm_rec *r = rec_of(*ref);

        i = lower_bound(r->e, r->n, m->shift, key);
        if (i == r->n || (r->e[i] >> m->shift) != key)
            return false;
        rec_remove(m, ref, i);
    }
    m->entries--;
    return true;
}

int listmap_put(struct listmap *m, uint64_t uid, const uint64_t *e, uint32_t n)
{
    struct lm_rec *r;

    if (u64map_get(m->map, uid) != 0)
        return 1;
    if (n == 1) {
        if (u64map_put(m->map, uid, e[0]) != 0)
            return -1;
    } else {
        r = mem_alloc(&m->mem, rec_size(n));
        if (r == NULL)
            return -1;
        r->n = n;
        r->unused = 0;
        memcpy(r->e, e, n * sizeof(uint64_t));
        if (u64map_put(m->map, uid, (uint64_t)(uintptr_t)r) != 0) {
            rec_free(m, r);
            return -1;
        }
    }
    m->entries += n;
    return 0;
}

struct scan_ctx {
    listmap_visit_fn fn;
    void *ctx;
};

static void scan_visit(uint64_t uid, uint64_t w, void *ctx)
{
    struct scan_ctx *sc = ctx;

    if (is_inline(w))
        sc->fn(uid, 1, &w, sc->ctx);
    else
        sc->fn(uid, rec_of(w)->n, rec_of(w)->e, sc->ctx);
}

size_t listmap_scan(const struct listmap *m, uint64_t *cursor, size_t max,
                    listmap_visit_fn fn, void *ctx)
{
    struct scan_ctx sc = {fn, ctx};

    return u64map_scan(m->map, cursor, max, scan_visit, &sc);
}

size_t listmap_entries(const struct listmap *m)
{
    return m->entries;
}

size_t listmap_users(const struct listmap *m)
{
    return u64map_count(m->map);
}

size_t listmap_bytes(const struct listmap *m)
{
    return sizeof(*m) + m->mem.bytes;
}

struct audit_ctx {
    const struct listmap *m;
    listmap_check_fn check;
    const void *ctx;
    size_t bad, entries, rec_bytes;
};

static void audit_visit(uint64_t uid, uint64_t w, void *ctx)
{
    struct audit_ctx *ac = ctx;
    const uint64_t *e = &w;
    uint32_t n = 1;

    (void)uid;
    if (!is_inline(w)) {
        e = rec_of(w)->e;
        n = rec_of(w)->n;
        ac->bad += n < 2;
        ac->rec_bytes += rec_size(n);
    }
    for (uint32_t i = 0; i < n; i++) {
        ac->bad += !is_inline(e[i]);
        if (i > 0)
            ac->bad += (e[i] >> ac->m->shift) <= (e[i - 1] >> ac->m->shift);
        ac->bad += ac->check(e[i], ac->ctx);
    }
    ac->entries += n;
}

size_t listmap_audit(const struct listmap *m, listmap_check_fn check,
                     const void *ctx)
{
    struct audit_ctx ac = {m, check, ctx, 0, 0, 0};
    uint64_t cursor = 0;

    do
        u64map_scan(m->map, &cursor, SIZE_MAX, audit_visit, &ac);
    while (cursor != 0);
    return ac.bad + u64map_audit(m->map) + (ac.entries != m->entries) +
           (ac.rec_bytes + u64map_bytes(m->map) != m->mem.bytes);
}

uint32_t listmap_del_user(struct listmap *m, uint64_t uid)
{
    uint64_t w = u64map_get(m->map, uid);
    uint32_t n = 1;

    if (w == 0)
        return 0;
    if (!is_inline(w)) {
        n = rec_of(w)->n;
        rec_free(m, rec_of(w));
    }
    u64map_del(m->map, uid);
    m->entries -= n;
    return n;
}
