/*
 * cnt.c - CNT: one u64map entry per user, its 8-byte value holding the
 * user's counters inline when they fit, else pointing to an exact-size
 * record.
 *
 * Inline word (low bit 1), two forms told apart by bit 63:
 *
 *   bit 63 = 0: two pairs of 31 bits (type: low 6 bits, value: high 25)
 *     bit 0 tag, bits 1..31 pair A, bits 32..62 pair B
 *   bit 63 = 1: three pairs of 20 bits (type: low 6, value: high 14)
 *     bit 0 tag, bits 1..20, 21..40, 41..60 pairs A, B, C; 61..62 zero
 *
 * Record (low bit 0, a malloc'd pointer): struct cnt_rec, a 64-bit mask of
 * the non-zero types and their values in ascending type order.
 *
 * The encoding is canonical, so cnt_audit can check it: one or two types
 * with values below 2^25 use the two-pair form (pair B all zero when
 * unused); exactly three types with values below 2^14 use the three-pair
 * form; anything else is a record. Pairs ascend by type, no stored value is
 * 0, a record's mask is never empty, and a user with no non-zero counter has
 * no entry. So the common user (up to three types with ordinary counts)
 * costs one map slot and nothing else; a record costs 8 + 4 bytes per type
 * on top.
 */
#include "cnt.h"

#include "db.h"
#include "mem.h"
#include "notice.h"
#include "u64map.h"

#include <stdbool.h>
#include <string.h>

/* The two inline forms: pairs, value bits, where each pair starts. */
struct inl_form {
    unsigned n;
    unsigned vbits;
    unsigned shift[3];
};

static const struct inl_form inl_forms[2] = {
    {2, 25, {1, 32, 0}},
    {3, 14, {1, 21, 41}},
};

static inline const struct inl_form *inl_form_of(uint64_t w)
{
    return &inl_forms[w >> 63];
}

static inline uint64_t inl_pair_at(uint64_t w, const struct inl_form *f,
                                   unsigned i)
{
    return (w >> f->shift[i]) & ((UINT64_C(1) << (6 + f->vbits)) - 1);
}

struct cnt_rec {
    uint64_t mask;
    uint32_t vals[]; /* popcount(mask) values, ascending type order */
};

struct cnt_store {
    struct u64map *map;
    struct mem_acct mem;      /* the map, the records, the notices */
    struct notice_set *notes; /* notices read once (notice.h) */
};

/* A user's counters decoded from either form, sparse: n pairs ascending. */
struct cnt_user {
    unsigned n;
    uint8_t types[CNT_TYPES];
    uint32_t vals[CNT_TYPES];
};

static inline bool is_inline(uint64_t w)
{
    return w & 1;
}

static inline struct cnt_rec *rec_of(uint64_t w)
{
    return (struct cnt_rec *)(uintptr_t)w;
}

static inline size_t rec_size(unsigned n)
{
    return sizeof(struct cnt_rec) + (size_t)n * sizeof(uint32_t);
}

static inline uint64_t inl_pair(unsigned type, uint32_t v)
{
    return ((uint64_t)v << 6) | type;
}

static void user_decode(uint64_t w, struct cnt_user *u)
{
    u->n = 0;
    if (is_inline(w)) {
        const struct inl_form *f = inl_form_of(w);

        for (unsigned i = 0; i < f->n; i++) {
            uint64_t p = inl_pair_at(w, f, i);

            if (p >> 6) {
                u->types[u->n] = (uint8_t)(p & 63);
                u->vals[u->n++] = (uint32_t)(p >> 6);
            }
        }
    } else {
        const struct cnt_rec *r = rec_of(w);

        for (uint64_t m = r->mask; m; m &= m - 1) {
            u->types[u->n] = (uint8_t)__builtin_ctzll(m);
            u->vals[u->n] = r->vals[u->n];
            u->n++;
        }
    }
}

/* The inline form u's canonical encoding uses, or NULL for a record. */
static const struct inl_form *user_form(const struct cnt_user *u)
{
    const struct inl_form *f = &inl_forms[u->n == 3];

    if (u->n == 0 || u->n > 3)
        return NULL;
    for (unsigned i = 0; i < u->n; i++)
        if (u->vals[i] >> f->vbits)
            return NULL;
    return f;
}

/* The inline word for u in form f (from user_form). */
static uint64_t user_inline(const struct cnt_user *u, const struct inl_form *f)
{
    uint64_t w = 1;

    if (f->n == 3)
        w |= UINT64_C(1) << 63;
    for (unsigned i = 0; i < u->n; i++)
        w |= inl_pair(u->types[i], u->vals[i]) << f->shift[i];
    return w;
}

/* A new record for u (n >= 1), or NULL on allocation failure. */
static struct cnt_rec *rec_new(struct cnt_store *s, const struct cnt_user *u)
{
    struct cnt_rec *r = mem_alloc(&s->mem, rec_size(u->n));

    if (r == NULL)
        return NULL;
    r->mask = 0;
    for (unsigned i = 0; i < u->n; i++) {
        r->mask |= UINT64_C(1) << u->types[i];
        r->vals[i] = u->vals[i];
    }
    return r;
}

static void rec_free(struct cnt_store *s, struct cnt_rec *r)
{
    mem_free(&s->mem, r, rec_size((unsigned)__builtin_popcountll(r->mask)));
}

static uint64_t user_total(const struct cnt_user *u)
{
    uint64_t t = 0;

    for (unsigned i = 0; i < u->n; i++)
        t += u->vals[i];
    return t;
}

/* Sets type to v in u, keeping it sparse and sorted. */
static void user_set(struct cnt_user *u, unsigned type, uint32_t v)
{
    unsigned i = 0;

    while (i < u->n && u->types[i] < type)
        i++;
    if (i < u->n && u->types[i] == type) {
        if (v != 0) {
            u->vals[i] = v;
            return;
        }
        memmove(&u->types[i], &u->types[i + 1], u->n - i - 1);
        memmove(&u->vals[i], &u->vals[i + 1],
                (u->n - i - 1) * sizeof(uint32_t));
        u->n--;
    } else if (v != 0) {
        memmove(&u->types[i + 1], &u->types[i], u->n - i);
        memmove(&u->vals[i + 1], &u->vals[i], (u->n - i) * sizeof(uint32_t));
        u->types[i] = (uint8_t)type;
        u->vals[i] = v;
        u->n++;
    }
}

/*
 * Stores u as uid's counters, replacing old (the current word, 0 when
 * absent; ref its slot, NULL when absent). Chooses the canonical form,
 * reusing old's record in place when its size does not change. 0, or -1 on
 * allocation failure with nothing changed.
 */
static int user_store(struct cnt_store *s, uint64_t uid, uint64_t *ref,
                      const struct cnt_user *u)
{
    uint64_t old = ref ? *ref : 0;
    struct cnt_rec *oldrec = old && !is_inline(old) ? rec_of(old) : NULL;
    struct cnt_rec *r;

    if (u->n == 0) {
        if (ref != NULL)
            u64map_del(s->map, uid);
        if (oldrec != NULL)
            rec_free(s, oldrec);
        return 0;
    }
    if (user_form(u) != NULL) {
        uint64_t w = user_inline(u, user_form(u));

        if (ref != NULL)
            *ref = w;
        else if (u64map_put(s->map, uid, w) != 0)
            return -1;
        if (oldrec != NULL)
            rec_free(s, oldrec);
        return 0;
    }
    if (oldrec != NULL) {
        unsigned oldn = (unsigned)__builtin_popcountll(oldrec->mask);

        if (oldn != u->n) {
            /* A failed growth keeps the old record intact; a shrink never
             * fails (mem.h). */
            r = mem_realloc(&s->mem, oldrec, rec_size(oldn), rec_size(u->n));
            if (r == NULL)
                return -1;
        } else {
            r = oldrec;
        }
        r->mask = 0;
        for (unsigned i = 0; i < u->n; i++) {
            r->mask |= UINT64_C(1) << u->types[i];
            r->vals[i] = u->vals[i];
        }
        *ref = (uint64_t)(uintptr_t)r;
        return 0;
    }
    r = rec_new(s, u);
    if (r == NULL)
        return -1;
    if (ref != NULL) {
        *ref = (uint64_t)(uintptr_t)r;
    } else if (u64map_put(s->map, uid, (uint64_t)(uintptr_t)r) != 0) {
        rec_free(s, r);
        return -1;
    }
    return 0;
}

struct cnt_store *cnt_create(void)
{
    struct cnt_store *s = mem_zalloc(NULL, sizeof(*s));

    if (s == NULL)
        return NULL;
    mem_acct_init(&s->mem, NULL);
    s->map = u64map_create(&s->mem);
    s->notes = notice_create(&s->mem);
    if (s->map == NULL || s->notes == NULL) {
        u64map_destroy(s->map);
        notice_destroy(s->notes);
        mem_free(NULL, s, sizeof(*s));
        return NULL;
    }
    return s;
}

static void free_rec_visit(uint64_t uid, uint64_t w, void *ctx)
{
    (void)uid;
    if (!is_inline(w))
        rec_free(ctx, rec_of(w));
}

void cnt_destroy(struct cnt_store *s)
{
    uint64_t cursor = 0;

    if (s == NULL)
        return;
    do
        u64map_scan(s->map, &cursor, SIZE_MAX, free_rec_visit, s);
    while (cursor != 0);
    u64map_destroy(s->map);
    notice_destroy(s->notes);
    mem_free(NULL, s, sizeof(*s));
}

/* uid's current value of type, decoded into u; ref set to its slot. */
static uint32_t user_load(struct cnt_store *s, uint64_t uid, unsigned type,
                          uint64_t **ref, struct cnt_user *u)
{
    *ref = u64map_ref(s->map, uid);
    u->n = 0;
    if (*ref == NULL)
        return 0;
    user_decode(**ref, u);
    for (unsigned i = 0; i < u->n; i++)
        if (u->types[i] == type)
            return u->vals[i];
    return 0;
}

static int cnt_assign(struct cnt_store *s, uint64_t uid, unsigned type,
                      uint32_t v, uint64_t *ref, struct cnt_user *u,
                      uint32_t *value, uint64_t *total)
{
    user_set(u, type, v);
    if (user_store(s, uid, ref, u) != 0)
        return -1;
    *value = v;
    *total = user_total(u);
    return 0;
}

int cnt_incr(struct cnt_store *s, uint64_t uid, unsigned type, uint64_t delta,
             uint32_t *value, uint64_t *total)
{
    struct cnt_user u;
    uint64_t *ref;
    uint32_t cur;

    if (type >= CNT_TYPES)
        return -1;
    cur = user_load(s, uid, type, &ref, &u);
    /* Saturate: a badge stuck at the maximum beats one that wraps to 0. */
    if (delta > (uint64_t)(CNT_VALUE_MAX - cur))
        delta = CNT_VALUE_MAX - cur;
    return cnt_assign(s, uid, type, cur + (uint32_t)delta, ref, &u, value,
                      total);
}

int cnt_decr(struct cnt_store *s, uint64_t uid, unsigned type, uint64_t delta,
             uint32_t *value, uint64_t *total)
{
    struct cnt_user u;
    uint64_t *ref;
    uint32_t cur;

    if (type >= CNT_TYPES)
        return -1;
    cur = user_load(s, uid, type, &ref, &u);
    return cnt_assign(s, uid, type, delta >= cur ? 0 : cur - (uint32_t)delta,
                      ref, &u, value, total);
}

int cnt_set(struct cnt_store *s, uint64_t uid, unsigned type, uint32_t v,
            uint32_t *value, uint64_t *total)
{
    struct cnt_user u;
    uint64_t *ref;

    if (type >= CNT_TYPES)
        return -1;
    user_load(s, uid, type, &ref, &u);
    if (cnt_assign(s, uid, type, v, ref, &u, value, total) != 0)
        return -1;
    notice_settle(s->notes, uid, UINT64_C(1) << type);
    return 0;
}

/*
 * The counter first (its failure changes nothing), then the notice; when
 * remembering the notice fails, the counter goes back to what it was,
 * which never allocates: the user's old encoding was either absent (a
 * map delete), inline (no record), or a record no larger than the new
 * one (a shrink, which never fails: mem.h).
 */
int cnt_incr_notice(struct cnt_store *s, uint64_t uid, unsigned type,
                    uint64_t delta, uint64_t nid, uint32_t *value,
                    uint64_t *total)
{
    struct cnt_user u, before;
    uint64_t *ref;
    uint32_t cur, d;

    if (type >= CNT_TYPES)
        return -1;
    if (notice_get(s->notes, uid, type, nid, &d) != NOTICE_UNKNOWN) {
        *value = cnt_get(s, uid, type);
        *total = cnt_total(s, uid);
        return 0;
    }
    cur = user_load(s, uid, type, &ref, &u);
    before = u;
    d = delta > (uint64_t)(CNT_VALUE_MAX - cur) ? CNT_VALUE_MAX - cur
                                                : (uint32_t)delta;
    if (cnt_assign(s, uid, type, cur + d, ref, &u, value, total) != 0)
        return -1;
    if (notice_add(s->notes, uid, type, nid, d, false) != 0) {
        user_store(s, uid, u64map_ref(s->map, uid), &before);
        return -1;
    }
    return 0;
}

/* Taking a delta off never allocates (cnt_clear's argument), so only
 * remembering an unknown nid as read can fail. */
int cnt_ack(struct cnt_store *s, uint64_t uid, unsigned type, uint64_t nid,
            uint32_t *value, uint64_t *total)
{
    struct cnt_user u;
    uint64_t *ref;
    uint32_t cur, d = 0;

    if (type >= CNT_TYPES)
        return -1;
    switch (notice_get(s->notes, uid, type, nid, &d)) {
    case NOTICE_UNKNOWN:
        if (notice_add(s->notes, uid, type, nid, 0, true) != 0)
            return -1;
        break;
    case NOTICE_UNREAD:
        cur = user_load(s, uid, type, &ref, &u);
        if (cnt_assign(s, uid, type, d >= cur ? 0 : cur - d, ref, &u, value,
                       total) != 0)
            return -1;
        notice_mark_read(s->notes, uid, type, nid);
        break;
    case NOTICE_READ:
        break;
    }
    *value = cnt_get(s, uid, type);
    *total = cnt_total(s, uid);
    return 0;
}

/*
 * Removing types never needs memory: the result is either inline, or a
 * record no larger than the old one (a shrink never fails, mem.h), so this
 * cannot fail.
 */
uint64_t cnt_clear(struct cnt_store *s, uint64_t uid, uint64_t mask)
{
    uint64_t *ref = u64map_ref(s->map, uid);
    struct cnt_user u;
    unsigned j = 0;

    notice_settle(s->notes, uid, mask);
    if (ref == NULL)
        return 0;
    user_decode(*ref, &u);
    for (unsigned i = 0; i < u.n; i++) {
        if (mask >> u.types[i] & 1)
            continue;
        u.types[j] = u.types[i];
        u.vals[j++] = u.vals[i];
    }
    if (j != u.n) {
        u.n = j;
        user_store(s, uid, ref, &u);
    }
    return user_total(&u);
}

int cnt_put_user(struct cnt_store *s, uint64_t uid, unsigned n,
                 const uint8_t *types, const uint32_t *vals)
{
    struct cnt_user u;

    if (u64map_get(s->map, uid) != 0)
        return 1;
    u.n = n;
    memcpy(u.types, types, n);
    memcpy(u.vals, vals, n * sizeof(uint32_t));
    return user_store(s, uid, NULL, &u);
}

uint32_t cnt_get(const struct cnt_store *s, uint64_t uid, unsigned type)
{
    uint64_t w = u64map_get(s->map, uid);

    if (w == 0 || type >= CNT_TYPES)
        return 0;
    if (is_inline(w)) {
        const struct inl_form *f = inl_form_of(w);

        for (unsigned i = 0; i < f->n; i++) {
            uint64_t p = inl_pair_at(w, f, i);

            if ((p >> 6) != 0 && (p & 63) == type)
                return (uint32_t)(p >> 6);
        }
        return 0;
    } else {
        const struct cnt_rec *r = rec_of(w);
        uint64_t below = r->mask & ((UINT64_C(1) << type) - 1);

        if (!(r->mask >> type & 1))
            return 0;
        return r->vals[__builtin_popcountll(below)];
    }
}

static uint64_t total_of(uint64_t w)
{
    struct cnt_user u;

    if (w == 0)
        return 0;
    user_decode(w, &u);
    return user_total(&u);
}

uint64_t cnt_total(const struct cnt_store *s, uint64_t uid)
{
    return total_of(u64map_get(s->map, uid));
}

void cnt_probe_user(const struct cnt_store *s, uint64_t uid, int stage,
                    struct u64map_probe *p)
{
    u64map_probe_rec(s->map, uid, stage, p);
}

uint64_t cnt_total_probed(const struct u64map_probe *p)
{
    return total_of(p->val);
}

unsigned cnt_getall(const struct cnt_store *s, uint64_t uid, uint8_t *types,
                    uint32_t *vals)
{
    uint64_t w = u64map_get(s->map, uid);
    struct cnt_user u;

    if (w == 0)
        return 0;
    user_decode(w, &u);
    memcpy(types, u.types, u.n);
    memcpy(vals, u.vals, u.n * sizeof(uint32_t));
    return u.n;
}

size_t cnt_entries(const struct cnt_store *s)
{
    return u64map_count(s->map);
}

/*
 * Requested sizes, as for the map: malloc's own per-block overhead (8-16
 * bytes per record in glibc) is not counted. Records are rare: only users
 * with four or more types, or values too wide for their inline form, have
 * one.
 */
size_t cnt_bytes(const struct cnt_store *s)
{
    return sizeof(*s) + s->mem.bytes;
}

struct scan_ctx {
    cnt_visit_fn fn;
    void *ctx;
};

static void scan_visit(uint64_t uid, uint64_t w, void *ctx)
{
    struct scan_ctx *sc = ctx;
    struct cnt_user u;

    user_decode(w, &u);
    sc->fn(uid, u.n, u.types, u.vals, sc->ctx);
}

size_t cnt_scan(const struct cnt_store *s, uint64_t *cursor, size_t max,
                cnt_visit_fn fn, void *ctx)
{
    struct scan_ctx sc = {fn, ctx};

    return u64map_scan(s->map, cursor, max, scan_visit, &sc);
}

/* Whether w is the canonical encoding of a non-empty user. */
static bool word_canonical(uint64_t w)
{
    struct cnt_user u;

    if (is_inline(w)) {
        const struct inl_form *f = inl_form_of(w);
        uint64_t used = 1 | UINT64_C(1) << 63;
        unsigned n = 0;

        /* Pairs in use come first, then zero pairs; no stray bits. */
        for (unsigned i = 0; i < f->n; i++) {
            uint64_t p = inl_pair_at(w, f, i);

            used |= ((UINT64_C(1) << (6 + f->vbits)) - 1) << f->shift[i];
            if (p >> 6) {
                if (n != i)
                    return false;
                n++;
            } else if (p != 0) {
                return false;
            }
        }
        if (w & ~used)
            return false;
        user_decode(w, &u);
        for (unsigned i = 1; i < u.n; i++)
            if (u.types[i] <= u.types[i - 1])
                return false;
        return user_form(&u) == f;
    }
    if (rec_of(w)->mask == 0)
        return false;
    user_decode(w, &u);
    for (unsigned i = 0; i < u.n; i++)
        if (u.vals[i] == 0)
            return false;
    return user_form(&u) == NULL;
}

struct audit_ctx {
    size_t bad;
    size_t rec_bytes;
};

static void audit_visit(uint64_t uid, uint64_t w, void *ctx)
{
    struct audit_ctx *ac = ctx;

    (void)uid;
    ac->bad += !word_canonical(w);
    if (!is_inline(w))
        ac->rec_bytes +=
            rec_size((unsigned)__builtin_popcountll(rec_of(w)->mask));
}

/* Also counts the map's own structural violations and a record byte count
 * that disagrees with the records present. */
size_t cnt_audit(const struct cnt_store *s)
{
    struct audit_ctx ac = {0, 0};
    uint64_t cursor = 0;

    do
        u64map_scan(s->map, &cursor, SIZE_MAX, audit_visit, &ac);
    while (cursor != 0);
    return ac.bad + u64map_audit(s->map) + notice_audit(s->notes) +
           (ac.rec_bytes + u64map_bytes(s->map) + notice_bytes(s->notes) !=
            s->mem.bytes);
}

size_t cnt_forget_user(struct cnt_store *s, uint64_t uid)
{
    bool had = u64map_get(s->map, uid) != 0;

    had |= notice_forget_user(s->notes, uid) > 0;
    cnt_clear(s, uid, UINT64_MAX);
    return had;
}

const struct notice_set *cnt_notices(const struct cnt_store *s)
{
    return s->notes;
}

struct notice_set *cnt_notices_mut(struct cnt_store *s)
{
    return s->notes;
}

void cnt_prefetch_user(const struct cnt_store *s, uint64_t uid, int stage)
{
    uint64_t w;

    if (stage != 2) {
        u64map_prefetch(s->map, uid, stage);
        return;
    }
    w = u64map_get(s->map, uid);
    if (w != 0 && !is_inline(w))
        __builtin_prefetch(rec_of(w));
}
