/*
 * notice.c - see notice.h. A u64map from uid to one record holding all
 * the user's notices, every type together, oldest first: a user holds few
 * (a retry window's worth), so a linear walk beats a structure per type,
 * and the order is what picks the one to forget when a type is full.
 */
#include "notice.h"

#include "mem.h"
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct notice) == 16, "16 bytes a notice");

struct rec {
    uint32_t n, cap;
    struct notice v[];
};

struct notice_set {
    struct u64map *users; /* uid -> struct rec * */
    struct mem_acct mem;  /* the map and the records */
    size_t entries;       /* notices held */
};

static inline size_t rec_size(uint32_t cap)
{
    return sizeof(struct rec) + (size_t)cap * sizeof(struct notice);
}

static inline struct rec *rec_of(uint64_t w)
{
    return (struct rec *)(uintptr_t)w;
}

static struct rec *rec_get(const struct notice_set *s, uint64_t uid)
{
    return rec_of(u64map_get(s->users, uid));
}

struct notice_set *notice_create(struct mem_acct *owner)
{
    struct notice_set *s = mem_zalloc(owner, sizeof(*s));

    if (s == NULL)
        return NULL;
    mem_acct_init(&s->mem, owner);
    s->users = u64map_create(&s->mem);
    if (s->users == NULL) {
        mem_free(owner, s, sizeof(*s));
        return NULL;
    }
    return s;
}

static void rec_free(struct notice_set *s, struct rec *r)
{
    mem_free(&s->mem, r, rec_size(r->cap));
}

static void free_visit(uint64_t uid, uint64_t w, void *ctx)
{
    (void)uid;
    rec_free(ctx, rec_of(w));
}

void notice_destroy(struct notice_set *s)
{
    uint64_t cursor = 0;

    if (s == NULL)
        return;
    do
        u64map_scan(s->users, &cursor, SIZE_MAX, free_visit, s);
    while (cursor != 0);
    u64map_destroy(s->users);
    mem_free(s->mem.up, s, sizeof(*s));
}

/* The index of (type, nid) in r, or r->n. */
static uint32_t find(const struct rec *r, unsigned type, uint64_t nid)
{
    uint32_t i;

    for (i = 0; i < r->n; i++)
        if (r->v[i].nid == nid && r->v[i].type == type)
            break;
    return i;
}

enum notice_state notice_get(const struct notice_set *s, uint64_t uid,
                             unsigned type, uint64_t nid, uint32_t *delta)
{
    const struct rec *r = rec_get(s, uid);
    uint32_t i;

    if (r == NULL || (i = find(r, type, nid)) == r->n)
        return NOTICE_UNKNOWN;
    *delta = r->v[i].delta;
    return r->v[i].read ? NOTICE_READ : NOTICE_UNREAD;
}

/* The one a full type forgets: its oldest read notice, else its oldest. */
static uint32_t victim(const struct rec *r, unsigned type)
{
    uint32_t oldest = r->n;

    for (uint32_t i = 0; i < r->n; i++) {
        if (r->v[i].type != type)
            continue;
        if (r->v[i].read)
            return i;
        if (oldest == r->n)
            oldest = i;
    }
    return oldest;
}

static void rec_remove(struct notice_set *s, struct rec *r, uint32_t i)
{
    memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(r->v[0]));
    r->n--;
    s->entries--;
}

int notice_add(struct notice_set *s, uint64_t uid, unsigned type, uint64_t nid,
               uint32_t delta, bool read)
{
    uint64_t *ref = u64map_ref(s->users, uid);
    struct notice nv = {nid, delta, (uint8_t)type, read, 0};
    struct rec *r;
    uint32_t in_type = 0;

    if (type >= NOTICE_TYPES)
        return -1;
    if (ref == NULL) {
        r = mem_alloc(&s->mem, rec_size(2));
        if (r == NULL)
            return -1;
        r->n = 0;
        r->cap = 2;
        if (u64map_put(s->users, uid, (uint64_t)(uintptr_t)r) != 0) {
            rec_free(s, r);
            return -1;
        }
    } else {
        r = rec_of(*ref);
        for (uint32_t i = 0; i < r->n; i++)
            in_type += r->v[i].type == type;
        if (in_type >= NOTICE_MAX) {
            uint32_t v = victim(r, type);

            /* A read id never pushes out an unread one, which could then
             * no longer be acknowledged: it is not remembered. */
            if (read && !r->v[v].read)
                return 0;
            rec_remove(s, r, v);
        } else if (r->n == r->cap) {
            uint32_t cap = r->cap * 2;
            struct rec *g =
                mem_realloc(&s->mem, r, rec_size(r->cap), rec_size(cap));

            if (g == NULL)
                return -1;
            g->cap = cap;
            *ref = (uint64_t)(uintptr_t)g;
            r = g;
        }
    }
    r->v[r->n++] = nv;
    s->entries++;
    return 0;
}

void notice_mark_read(struct notice_set *s, uint64_t uid, unsigned type,
                      uint64_t nid)
{
    struct rec *r = rec_get(s, uid);
    uint32_t i;

    if (r != NULL && (i = find(r, type, nid)) < r->n)
        r->v[i].read = 1;
}

void notice_settle(struct notice_set *s, uint64_t uid, uint64_t mask)
{
    struct rec *r = rec_get(s, uid);

    if (r == NULL)
        return;
    for (uint32_t i = 0; i < r->n; i++)
        if (mask >> r->v[i].type & 1)
            r->v[i].read = 1;
}

size_t notice_forget_user(struct notice_set *s, uint64_t uid)
{
    struct rec *r = rec_get(s, uid);
    size_t n;

    if (r == NULL)
        return 0;
    n = r->n;
    s->entries -= n;
    u64map_del(s->users, uid);
    rec_free(s, r);
    return n;
}

size_t notice_entries(const struct notice_set *s)
{
    return s->entries;
}

size_t notice_users(const struct notice_set *s)
{
    return u64map_count(s->users);
}

size_t notice_bytes(const struct notice_set *s)
{
    return sizeof(*s) + s->mem.bytes;
}

uint32_t notice_user(const struct notice_set *s, uint64_t uid, notice_fn fn,
                     void *ctx)
{
    const struct rec *r = rec_get(s, uid);

    if (r == NULL)
        return 0;
    for (uint32_t i = 0; i < r->n; i++)
        fn(&r->v[i], ctx);
    return r->n;
}

struct scan_ctx {
    notice_visit_fn fn;
    void *ctx;
};

static void scan_visit(uint64_t uid, uint64_t w, void *ctx)
{
    struct scan_ctx *sc = ctx;

    sc->fn(uid, rec_of(w)->n, rec_of(w)->v, sc->ctx);
}

size_t notice_scan(const struct notice_set *s, uint64_t *cursor, size_t max,
                   notice_visit_fn fn, void *ctx)
{
    struct scan_ctx sc = {fn, ctx};

    return u64map_scan(s->users, cursor, max, scan_visit, &sc);
}

/* Violations of a user's notices v[0..n): see notice_audit. */
static size_t check_user(uint32_t n, const struct notice *v)
{
    uint32_t per_type[NOTICE_TYPES] = {0};
    size_t bad = n == 0;

    for (uint32_t i = 0; i < n; i++) {
        if (v[i].type >= NOTICE_TYPES || v[i].read > 1 || v[i].zero != 0) {
            bad++;
            continue;
        }
        per_type[v[i].type]++;
        for (uint32_t j = 0; j < i; j++)
            bad += v[j].nid == v[i].nid && v[j].type == v[i].type;
    }
    for (unsigned t = 0; t < NOTICE_TYPES; t++)
        bad += per_type[t] > NOTICE_MAX;
    return bad;
}

int notice_put_user(struct notice_set *s, uint64_t uid, uint32_t n,
                    const struct notice *v)
{
    struct rec *r;

    if (n == 0 || n > (uint32_t)NOTICE_MAX * NOTICE_TYPES ||
        check_user(n, v) != 0 || u64map_get(s->users, uid) != 0)
        return 1;
    r = mem_alloc(&s->mem, rec_size(n));
    if (r == NULL)
        return -1;
    r->n = n;
    r->cap = n;
    memcpy(r->v, v, n * sizeof(*v));
    if (u64map_put(s->users, uid, (uint64_t)(uintptr_t)r) != 0) {
        rec_free(s, r);
        return -1;
    }
    s->entries += n;
    return 0;
}

struct audit_ctx {
    size_t bad, entries, rec_bytes;
};

static void audit_visit(uint64_t uid, uint64_t w, void *ctx)
{
    struct audit_ctx *ac = ctx;
    const struct rec *r = rec_of(w);

    (void)uid;
    ac->bad += (r->n > r->cap) + check_user(r->n, r->v);
    ac->entries += r->n;
    ac->rec_bytes += rec_size(r->cap);
}

size_t notice_audit(const struct notice_set *s)
{
    struct audit_ctx ac = {0, 0, 0};
    uint64_t cursor = 0;

    do
        u64map_scan(s->users, &cursor, SIZE_MAX, audit_visit, &ac);
    while (cursor != 0);
    return ac.bad + u64map_audit(s->users) + (ac.entries != s->entries) +
           (ac.rec_bytes + u64map_bytes(s->users) != s->mem.bytes);
}
