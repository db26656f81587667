/*
 * memblist.c - see memblist.h. A map value with bit 0 set is a one-entry
 * list (the entry itself); otherwise it points to a struct ml_rec of n >= 2
 * entries. That form is canonical (memblist_audit checks it).
 *
 * Changes that keep the widths work in place (a value set, a delete, an
 * insert that fits: a realloc and a memmove); the others
 * re-encode the list into a new record of the widths it needs.
 */
#include "memblist.h"

#include "u64map.h"

#include <string.h>

struct ml_rec {
    uint32_t hdr;  /* n << 4 | (wk - 1) << 2 | (wv - 1) */
    uint32_t base; /* a key is base + (field >> 1) */
    uint8_t d[];   /* n fields of wk bytes, then n values of wv bytes */
};

struct memblist {
    struct u64map *map;
    struct mem_acct mem; /* the map and the records */
    size_t entries;
};

#define N_MAX (UINT32_MAX >> 4)

static inline bool is_inline(uint64_t w)
{
    return w & 1;
}

static inline struct ml_rec *rec_of(uint64_t w)
{
    return (struct ml_rec *)(uintptr_t)w;
}

static inline uint32_t rec_n(const struct ml_rec *r)
{
    return r->hdr >> 4;
}

static inline unsigned rec_wk(const struct ml_rec *r)
{
    return ((r->hdr >> 2) & 3) + 1;
}

static inline unsigned rec_wv(const struct ml_rec *r)
{
    return (r->hdr & 3) + 1;
}

static inline size_t rec_size(uint32_t n, unsigned wk, unsigned wv)
{
    return sizeof(struct ml_rec) + (size_t)n * (wk + wv);
}

static inline size_t rec_bytes(const struct ml_rec *r)
{
    return rec_size(rec_n(r), rec_wk(r), rec_wv(r));
}

/* Bytes needed for x. */
static inline unsigned width(uint32_t x)
{
    return x < 1u << 8 ? 1 : x < 1u << 16 ? 2 : x < 1u << 24 ? 3 : 4;
}

static inline void st(uint8_t *p, unsigned w, uint32_t x)
{
    for (unsigned i = 0; i < w; i++)
        p[i] = (uint8_t)(x >> (8 * i));
}

static inline __attribute__((always_inline)) void iter_of(uint64_t w,
                                                          struct ml_iter *it)
{
    if (is_inline(w)) {
        it->k = it->v = NULL;
        it->n = 1;
        it->base = 0;
        it->wk = it->wv = 1;
        it->one = w;
        it->rec = NULL;
        return;
    }
    struct ml_rec *r = rec_of(w);

    it->n = rec_n(r);
    it->wk = (uint8_t)rec_wk(r);
    it->wv = (uint8_t)rec_wv(r);
    it->base = r->base;
    it->k = r->d;
    it->v = r->d + (size_t)it->n * it->wk;
    it->one = 0;
    it->rec = r;
}

/* The key of entry i. */
static inline uint32_t key_at(const struct ml_iter *it, uint32_t i)
{
    return it->k == NULL
               ? ml_key(it->one)
               : it->base + (ml_ld(it->k + (size_t)i * it->wk, it->wk) >> 1);
}

/* The first of the n >= 1 fields of w bytes at k whose key part (field >>
 * 1) is >= t. Branch-free, as conv.c's arr_index; w a constant once
 * inlined. */
static inline __attribute__((always_inline)) uint32_t
fields_index(const uint8_t *k, uint32_t n, uint32_t t, unsigned w)
{
    const uint8_t *p = k;

    while (n > 1) {
        uint32_t half = n / 2;

        p = (ml_ld(p + (size_t)half * w, w) >> 1) < t ? p + (size_t)half * w
                                                      : p;
        n -= half;
    }
    return (uint32_t)((size_t)(p - k) / w) + ((ml_ld(p, w) >> 1) < t);
}

/* The first position whose key is >= key. */
static uint32_t lower_bound(const struct ml_iter *it, uint32_t key)
{
    if (it->k == NULL)
        return it->n > 0 && ml_key(it->one) < key;
    if (key <= it->base)
        return key < it->base ? 0 : fields_index(it->k, it->n, 0, it->wk);
    switch (it->wk) {
    case 1:
        return fields_index(it->k, it->n, key - it->base, 1);
    case 2:
        return fields_index(it->k, it->n, key - it->base, 2);
    case 3:
        return fields_index(it->k, it->n, key - it->base, 3);
    default:
        return fields_index(it->k, it->n, key - it->base, 4);
    }
}

/* Entries [from, from + k) of the record behind it, widths wk and wv (the
 * constants of one instance). */
static inline __attribute__((always_inline)) void
decode_w(const struct ml_iter *it, uint32_t from, uint32_t k, uint64_t *out,
         unsigned wk, unsigned wv)
{
    const uint8_t *kp = it->k + (size_t)from * wk,
                  *vp = it->v + (size_t)from * wv;

    for (uint32_t i = 0; i < k; i++, kp += wk, vp += wv) {
        uint32_t f = ml_ld(kp, wk);

        out[i] = ML_ENTRY(it->base + (f >> 1), f & 1, ml_ld(vp, wv));
    }
}

#define DEC(wk, wv)                                                            \
    case ((wk)-1) * 4 + (wv)-1:                                                \
        decode_w(it, from, k, out, wk, wv);                                    \
        return

void memblist_decode(const struct ml_iter *it, uint32_t from, uint32_t k,
                     uint64_t *out)
{
    if (it->k == NULL) {
        for (uint32_t i = 0; i < k; i++)
            out[i] = it->one;
        return;
    }
    switch ((it->wk - 1) * 4 + it->wv - 1) {
        DEC(1, 1);
        DEC(1, 2);
        DEC(1, 3);
        DEC(1, 4);
        DEC(2, 1);
        DEC(2, 2);
        DEC(2, 3);
        DEC(2, 4);
        DEC(3, 1);
        DEC(3, 2);
        DEC(3, 3);
        DEC(3, 4);
        DEC(4, 1);
        DEC(4, 2);
        DEC(4, 3);
    default:
        decode_w(it, from, k, out, 4, 4);
    }
}

#undef DEC

struct u64map *memblist_user_map(const struct memblist *m)
{
    return m->map;
}

struct memblist *memblist_create(struct mem_acct *owner)
{
    struct memblist *m = mem_zalloc(owner, sizeof(*m));

    if (m == NULL)
        return NULL;
    mem_acct_init(&m->mem, owner);
    m->map = u64map_create(&m->mem);
    if (m->map == NULL) {
        mem_free(owner, m, sizeof(*m));
        return NULL;
    }
    return m;
}

static void rec_free(struct memblist *m, struct ml_rec *r)
{
    mem_free(&m->mem, r, rec_bytes(r));
}

static void free_one(void *rec, void *ctx)
{
    rec_free(ctx, rec);
}

void memblist_destroy(struct memblist *m)
{
    if (m == NULL)
        return;
    u64map_each_rec(m->map, free_one, m);
    u64map_destroy(m->map);
    mem_free(m->mem.up, m, sizeof(*m));
}

static uint32_t get_of(uint64_t w, struct ml_iter *it)
{
    it->ref = NULL;
    if (w == 0) {
        it->n = 0;
        it->k = NULL;
        return 0;
    }
    iter_of(w, it);
    return it->n;
}

uint32_t memblist_get(const struct memblist *m, uint64_t uid,
                      struct ml_iter *it)
{
    return get_of(u64map_get(m->map, uid), it);
}

void memblist_probe(const struct memblist *m, uint64_t uid, int stage,
                    struct u64map_probe *p)
{
    u64map_probe_rec(m->map, uid, stage, p);
}

uint32_t memblist_get_probed(const struct u64map_probe *p, struct ml_iter *it)
{
    return get_of(p->val, it);
}

uint32_t memblist_edit(struct memblist *m, uint64_t uid, struct ml_iter *it)
{
    uint64_t *ref = u64map_ref(m->map, uid);

    if (ref == NULL) {
        it->n = 0;
        it->k = NULL;
        it->ref = NULL;
        return 0;
    }
    iter_of(*ref, it);
    it->ref = ref;
    return it->n;
}

void memblist_put_at(struct ml_iter *it, uint32_t i, uint64_t e)
{
    if (it->rec == NULL) {
        *it->ref = e;
        it->one = e;
        return;
    }
    uint8_t *k = it->rec->d, *v = k + (size_t)it->n * it->wk;

    st(k + (size_t)i * it->wk, it->wk,
       (ml_key(e) - it->base) << 1 | ((e & ML_FLAG) != 0));
    st(v + (size_t)i * it->wv, it->wv, ml_val(e));
}

void memblist_prefetch(const struct memblist *m, uint64_t uid, int stage)
{
    u64map_prefetch_rec(m->map, uid, stage);
}

/* memblist_lookup in a record of key fields of wk bytes (a constant once
 * inlined); key >= the record's base. */
static inline __attribute__((always_inline)) bool
lookup_w(const struct ml_iter *it, uint32_t key, uint64_t *e, unsigned wk)
{
    uint32_t t = key - it->base, i = fields_index(it->k, it->n, t, wk), f;

    if (i == it->n)
        return false;
    f = ml_ld(it->k + (size_t)i * wk, wk);
    if ((f >> 1) != t)
        return false;
    *e = ML_ENTRY(key, f & 1, ml_ld(it->v + (size_t)i * it->wv, it->wv));
    return true;
}

bool memblist_lookup(const struct memblist *m, uint64_t uid, uint32_t key,
                     uint64_t *e)
{
    struct ml_iter it;

    if (memblist_get(m, uid, &it) == 0)
        return false;
    if (it.k == NULL) {
        *e = it.one;
        return ml_key(it.one) == key;
    }
    if (key < it.base)
        return false;
    switch (it.wk) {
    case 1:
        return lookup_w(&it, key, e, 1);
    case 2:
        return lookup_w(&it, key, e, 2);
    case 3:
        return lookup_w(&it, key, e, 3);
    default:
        return lookup_w(&it, key, e, 4);
    }
}

/* ---- Re-encoding --------------------------------------------------------- */

#define OP_INSERT 0
#define OP_REPLACE 1

/* Entry j of the list `it` with e inserted at, or replacing, position at. */
static inline uint64_t changed_at(const struct ml_iter *it, int op, uint32_t at,
                                  uint64_t e, uint32_t j)
{
    if (j == at)
        return e;
    return ml_at(it, op == OP_INSERT && j > at ? j - 1 : j);
}

/*
 * The list `it` (n >= 1 entries) changed by op at `at` with e, as a new
 * record of the widths it needs, at least minwv for values; NULL on
 * allocation failure.
 */
static struct ml_rec *reencode(struct memblist *m, const struct ml_iter *it,
                               int op, uint32_t at, uint64_t e, unsigned minwv)
{
    uint32_t n = it->n + (op == OP_INSERT), base, maxf = 0, maxv = 0;
    unsigned wk, wv;
    struct ml_rec *r;
    uint8_t *k, *v;

    base = ml_key(changed_at(it, op, at, e, 0));
    for (uint32_t j = 0; j < n; j++) {
        uint64_t x = changed_at(it, op, at, e, j);
        uint32_t f = (ml_key(x) - base) << 1 | 1;

        maxf = f > maxf ? f : maxf;
        maxv = ml_val(x) > maxv ? ml_val(x) : maxv;
    }
    wk = width(maxf);
    wv = width(maxv);
    wv = wv < minwv ? minwv : wv;
    r = mem_alloc(&m->mem, rec_size(n, wk, wv));
    if (r == NULL)
        return NULL;
    r->hdr = n << 4 | (wk - 1) << 2 | (wv - 1);
    r->base = base;
    k = r->d;
    v = k + (size_t)n * wk;
    for (uint32_t j = 0; j < n; j++) {
        uint64_t x = changed_at(it, op, at, e, j);

        st(k + (size_t)j * wk, wk,
           (ml_key(x) - base) << 1 | ((x & ML_FLAG) != 0));
        st(v + (size_t)j * wv, wv, ml_val(x));
    }
    return r;
}

/* Replaces the list at *ref (iterator it) by record r. */
static void swap_in(struct memblist *m, uint64_t *ref, const struct ml_iter *it,
                    struct ml_rec *r)
{
    if (it->rec != NULL)
        rec_free(m, it->rec);
    *ref = (uint64_t)(uintptr_t)r;
}

/* Whether e fits it's record in place (key field and value). */
static bool fits(const struct ml_iter *it, uint64_t e)
{
    if (ml_key(e) < it->base)
        return false;
    return width((ml_key(e) - it->base) << 1 | 1) <= it->wk &&
           width(ml_val(e)) <= it->wv;
}

int memblist_fit(struct memblist *m, uint64_t uid, uint32_t val)
{
    struct ml_iter it;
    struct ml_rec *r;

    if (memblist_edit(m, uid, &it) == 0 || it.rec == NULL ||
        width(val) <= it.wv)
        return 0;
    r = reencode(m, &it, OP_REPLACE, 0, ml_at(&it, 0), width(val));
    if (r == NULL)
        return -1;
    swap_in(m, it.ref, &it, r);
    return 0;
}

int memblist_set(struct memblist *m, uint64_t uid, uint64_t e)
{
    struct ml_iter it;
    struct ml_rec *r;
    uint32_t i;

    if (memblist_edit(m, uid, &it) == 0)
        return 1;
    i = lower_bound(&it, ml_key(e));
    if (i == it.n || key_at(&it, i) != ml_key(e))
        return 1;
    if (it.rec == NULL || fits(&it, e)) {
        memblist_put_at(&it, i, e);
        return 0;
    }
    r = reencode(m, &it, OP_REPLACE, i, e, 1);
    if (r == NULL)
        return -1;
    swap_in(m, it.ref, &it, r);
    return 0;
}

int memblist_add(struct memblist *m, uint64_t uid, uint64_t e)
{
    struct ml_iter it;
    struct ml_rec *r;
    uint32_t at;

    if (memblist_edit(m, uid, &it) == 0) {
        if (u64map_put(m->map, uid, e) != 0)
            return -1;
        m->entries++;
        return 0;
    }
    if (it.n >= N_MAX)
        return -1;
    at = lower_bound(&it, ml_key(e));
    if (it.rec != NULL && fits(&it, e)) {
        /* In place: one more field and value, the values moved up. */
        size_t old = rec_bytes(it.rec);
        unsigned wk = it.wk, wv = it.wv;
        uint32_t n = it.n;
        uint8_t *k, *v;

        r = mem_realloc(&m->mem, it.rec, old, old + wk + wv);
        if (r == NULL)
            return -1;
        k = r->d;
        v = k + (size_t)(n + 1) * wk;
        memmove(v + (size_t)(at + 1) * wv, k + (size_t)n * wk + at * wv,
                (size_t)(n - at) * wv);
        memmove(v, k + (size_t)n * wk, (size_t)at * wv);
        memmove(k + (size_t)(at + 1) * wk, k + (size_t)at * wk,
                (size_t)(n - at) * wk);
        r->hdr += 1u << 4;
        st(k + (size_t)at * wk, wk,
           (ml_key(e) - r->base) << 1 | ((e & ML_FLAG) != 0));
        st(v + (size_t)at * wv, wv, ml_val(e));
        *it.ref = (uint64_t)(uintptr_t)r;
    } else {
        r = reencode(m, &it, OP_INSERT, at, e, it.rec ? it.wv : 1);
        if (r == NULL)
            return -1;
        swap_in(m, it.ref, &it, r);
    }
    m->entries++;
    return 0;
}

bool memblist_del(struct memblist *m, uint64_t uid, uint32_t key)
{
    struct ml_iter it;
    uint32_t at, n;
    unsigned wk, wv;
    uint8_t *k;

    if (memblist_edit(m, uid, &it) == 0)
        return false;
    at = lower_bound(&it, key);
    if (at == it.n || key_at(&it, at) != key)
        return false;
    m->entries--;
    if (it.rec == NULL) {
        u64map_del(m->map, uid);
        return true;
    }
    n = it.n;
    if (n == 2) {
        *it.ref = ml_at(&it, 1 - at);
        rec_free(m, it.rec);
        return true;
    }
    wk = it.wk;
    wv = it.wv;
    k = it.rec->d;
    /* The fields without `at`, then the values without it, closed up. */
    memmove(k + (size_t)at * wk, k + (size_t)(at + 1) * wk,
            (size_t)(n - 1 - at) * wk);
    memmove(k + (size_t)(n - 1) * wk, k + (size_t)n * wk, (size_t)at * wv);
    memmove(k + (size_t)(n - 1) * wk + (size_t)at * wv,
            k + (size_t)n * wk + (size_t)(at + 1) * wv,
            (size_t)(n - 1 - at) * wv);
    it.rec->hdr -= 1u << 4;
    /* A shrink: never fails (mem.h). */
    *it.ref = (uint64_t)(uintptr_t)mem_realloc(
        &m->mem, it.rec, rec_size(n, wk, wv), rec_size(n - 1, wk, wv));
    return true;
}

uint32_t memblist_del_user(struct memblist *m, uint64_t uid)
{
    uint64_t w = u64map_get(m->map, uid);
    uint32_t n = 1;

    if (w == 0)
        return 0;
    if (!is_inline(w)) {
        n = rec_n(rec_of(w));
        rec_free(m, rec_of(w));
    }
    u64map_del(m->map, uid);
    m->entries -= n;
    return n;
}

struct scan_ctx {
    memblist_visit_fn fn;
    void *ctx;
};

static void scan_visit(uint64_t uid, uint64_t w, void *ctx)
{
    struct scan_ctx *sc = ctx;
    struct ml_iter it;

    iter_of(w, &it);
    it.ref = NULL;
    sc->fn(uid, &it, sc->ctx);
}

size_t memblist_scan(const struct memblist *m, uint64_t *cursor, size_t max,
                     memblist_visit_fn fn, void *ctx)
{
    struct scan_ctx sc = {fn, ctx};

    return u64map_scan(m->map, cursor, max, scan_visit, &sc);
}

size_t memblist_entries(const struct memblist *m)
{
    return m->entries;
}

size_t memblist_users(const struct memblist *m)
{
    return u64map_count(m->map);
}

size_t memblist_bytes(const struct memblist *m)
{
    return sizeof(*m) + m->mem.bytes;
}

struct audit_ctx {
    memblist_check_fn check;
    const void *ctx;
    size_t bad, entries, rec_bytes;
};

static void audit_visit(uint64_t uid, uint64_t w, void *ctx)
{
    struct audit_ctx *ac = ctx;
    struct ml_iter it;

    (void)uid;
    iter_of(w, &it);
    if (it.rec != NULL) {
        ac->bad += it.n < 2;
        ac->rec_bytes += rec_bytes(it.rec);
    }
    for (uint32_t i = 0; i < it.n; i++) {
        uint64_t e = ml_at(&it, i);

        ac->bad += !is_inline(e);
        if (i > 0)
            ac->bad += ml_key(e) <= ml_key(ml_at(&it, i - 1));
        /* base + field must not wrap past the key's 30 bits */
        ac->bad += it.rec != NULL && ml_key(e) < it.base;
        ac->bad += ac->check(e, ac->ctx);
    }
    ac->entries += it.n;
}

size_t memblist_audit(const struct memblist *m, memblist_check_fn check,
                      const void *ctx)
{
    struct audit_ctx ac = {check, ctx, 0, 0, 0};
    uint64_t cursor = 0;

    do
        u64map_scan(m->map, &cursor, SIZE_MAX, audit_visit, &ac);
    while (cursor != 0);
    return ac.bad + u64map_audit(m->map) + (ac.entries != m->entries) +
           (ac.rec_bytes + u64map_bytes(m->map) != m->mem.bytes);
}
