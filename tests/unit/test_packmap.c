/*
 * test_packmap.c - packmap: the inline <-> record transitions, lists of
 * every shape (appended, prepended, random, keys and values of every
 * width up to 31 and 32 bits), deletes that never allocate, rewrites that
 * fail cleanly when allocation does, and a randomized run of every
 * operation against a sorted-array model, with the audit and the byte
 * account checked along the way.
 */
#include "packmap.h"
#define T_RNG_SEED 0x6a09e667f3bcc909ULL
#include "t.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static size_t no_check(uint32_t key, uint32_t val, const void *ctx)
{
    (void)key;
    (void)val;
    (void)ctx;
    return 0;
}

static size_t key_below(uint32_t key, uint32_t val, const void *ctx)
{
    (void)val;
    return key >= *(const uint32_t *)ctx;
}

/* A list as the model keeps it: pairs in ascending key order. */
struct list {
    uint32_t n, cap;
    uint32_t *keys, *vals;
};

static void list_reserve(struct list *l, uint32_t n)
{
    if (n <= l->cap)
        return;
    l->cap = n * 2;
    l->keys = realloc(l->keys, l->cap * sizeof(uint32_t));
    l->vals = realloc(l->vals, l->cap * sizeof(uint32_t));
    if (l->keys == NULL || l->vals == NULL)
        abort();
}

static uint32_t list_lower(const struct list *l, uint32_t key)
{
    uint32_t lo = 0, hi = l->n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (l->keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool list_has(const struct list *l, uint32_t key, uint32_t *val)
{
    uint32_t i = list_lower(l, key);

    if (i == l->n || l->keys[i] != key)
        return false;
    *val = l->vals[i];
    return true;
}

static void list_add(struct list *l, uint32_t key, uint32_t val)
{
    uint32_t i = list_lower(l, key);

    list_reserve(l, l->n + 1);
    memmove(&l->keys[i + 1], &l->keys[i], (l->n - i) * sizeof(uint32_t));
    memmove(&l->vals[i + 1], &l->vals[i], (l->n - i) * sizeof(uint32_t));
    l->keys[i] = key;
    l->vals[i] = val;
    l->n++;
}

static void list_del(struct list *l, uint32_t key)
{
    uint32_t i = list_lower(l, key);

    memmove(&l->keys[i], &l->keys[i + 1], (l->n - i - 1) * sizeof(uint32_t));
    memmove(&l->vals[i], &l->vals[i + 1], (l->n - i - 1) * sizeof(uint32_t));
    l->n--;
}

static void list_free(struct list *l)
{
    free(l->keys);
    free(l->vals);
    memset(l, 0, sizeof(*l));
}

/* Disagreements between uid's list in m and l: the count, every pair in
 * order through both cursors (packmap_next and block by block), and a
 * lookup of each key. */
static size_t list_diff(const struct packmap *m, uint64_t uid,
                        const struct list *l)
{
    struct packmap_iter it;
    uint32_t n = packmap_iter_init(m, uid, &it), i = 0, key, val;
    size_t bad = (n != l->n) + (packmap_count(m, uid) != l->n);

    while (packmap_next(&it, &key, &val)) {
        bad += i >= l->n || key != l->keys[i] || val != l->vals[i];
        i++;
    }
    bad += i != l->n;
    i = 0;
    if (packmap_iter_init(m, uid, &it) > 0) {
        do {
            for (uint32_t p = 0; p < it.b.k; p++, i++) {
                packmap_blk_pair(&it.b, p, &key, &val);
                bad += i >= l->n || key != l->keys[i] || val != l->vals[i];
            }
        } while (packmap_iter_next_blk(&it));
    }
    bad += i != l->n;
    for (i = 0; i < l->n; i++)
        bad += !packmap_lookup(m, uid, l->keys[i], &val) || val != l->vals[i];
    return bad;
}

static void test_transitions(void)
{
    struct packmap *m = packmap_create(NULL);
    size_t empty = packmap_bytes(m);
    struct list l = {0};
    uint32_t val;

    CHECK(m != NULL);
    CHECK_EQ_U64(packmap_count(m, 5), 0);
    CHECK(!packmap_lookup(m, 5, 1, &val));
    CHECK(!packmap_del(m, 5, 1));
    CHECK_EQ_U64(packmap_set_all(m, 5, NULL, NULL), 0);
    CHECK_EQ_U64(list_diff(m, 5, &l), 0);

    /* One pair: inline, nothing beyond the map. */
    CHECK_EQ_U64(packmap_add(m, 5, 30, 7), 0);
    CHECK_EQ_U64(packmap_add(m, 5, 30, 8), 1); /* present: unchanged */
    list_add(&l, 30, 7);
    CHECK_EQ_U64(list_diff(m, 5, &l), 0);
    CHECK(!packmap_lookup(m, 5, 31, &val));
    /* Two, three: a record; before, after, between. */
    CHECK_EQ_U64(packmap_add(m, 5, 10, 1), 0);
    list_add(&l, 10, 1);
    CHECK(packmap_bytes(m) > empty);
    CHECK_EQ_U64(packmap_add(m, 5, 20, 2), 0);
    list_add(&l, 20, 2);
    CHECK_EQ_U64(packmap_add(m, 5, 20, 3), 1);
    CHECK_EQ_U64(packmap_add(m, 5, 10, 3), 1);
    CHECK_EQ_U64(list_diff(m, 5, &l), 0);
    CHECK_EQ_U64(packmap_entries(m), 3);
    CHECK_EQ_U64(packmap_users(m), 1);
    CHECK_EQ_U64(packmap_audit(m, no_check, NULL), 0);
    /* Back down to one (inline again) and none. */
    CHECK(packmap_del(m, 5, 20));
    CHECK(!packmap_del(m, 5, 20));
    list_del(&l, 20);
    CHECK(packmap_del(m, 5, 10));
    list_del(&l, 10);
    CHECK_EQ_U64(list_diff(m, 5, &l), 0);
    CHECK(!packmap_del(m, 5, 31));
    CHECK(packmap_del(m, 5, 30));
    CHECK_EQ_U64(packmap_count(m, 5), 0);
    CHECK_EQ_U64(packmap_users(m), 0);
    CHECK_EQ_U64(packmap_entries(m), 0);
    CHECK_EQ_U64(packmap_audit(m, no_check, NULL), 0);
    CHECK_EQ_U64(packmap_del_user(m, 5), 0);
    CHECK_EQ_U64(packmap_bytes(m), empty);
    packmap_destroy(m);
    packmap_destroy(NULL);
    list_free(&l);
}

/* Extreme keys and values: 0, PACKMAP_KEY_MAX, UINT32_MAX, in one block
 * (the widest pairs: 31 + 32 bits) and inline. */
static void test_extremes(void)
{
    struct packmap *m = packmap_create(NULL);
    struct list l = {0};
    const uint32_t keys[] = {0, 1, PACKMAP_KEY_MAX - 1, PACKMAP_KEY_MAX};
    const uint32_t vals[] = {UINT32_MAX, 0, 1, UINT32_MAX - 1};

    CHECK_EQ_U64(packmap_add(m, 1, PACKMAP_KEY_MAX, UINT32_MAX), 0);
    list_add(&l, PACKMAP_KEY_MAX, UINT32_MAX);
    CHECK_EQ_U64(list_diff(m, 1, &l), 0);
    CHECK(packmap_del(m, 1, PACKMAP_KEY_MAX));
    list_free(&l);
    for (unsigned i = 0; i < 4; i++) {
        CHECK_EQ_U64(packmap_add(m, 1, keys[i], vals[i]), 0);
        list_add(&l, keys[i], vals[i]);
        CHECK_EQ_U64(list_diff(m, 1, &l), 0);
    }
    CHECK_EQ_U64(packmap_put(m, 2, 4, keys, vals), 0);
    CHECK_EQ_U64(packmap_put(m, 2, 4, keys, vals), 1);
    CHECK_EQ_U64(list_diff(m, 2, &l), 0);
    CHECK_EQ_U64(packmap_audit(m, no_check, NULL), 0);
    /* The audit passes each pair to the caller's check. */
    {
        uint32_t below = PACKMAP_KEY_MAX;

        CHECK_EQ_U64(packmap_audit(m, key_below, &below), 2);
    }
    for (unsigned i = 0; i < 4; i++) {
        CHECK(packmap_del(m, 1, keys[i]));
        list_del(&l, keys[i]);
        CHECK_EQ_U64(list_diff(m, 1, &l), 0);
    }
    CHECK_EQ_U64(packmap_audit(m, no_check, NULL), 0);
    packmap_destroy(m);
    list_free(&l);
}

/* Lists built in key order, in reverse, and at random, with values from
 * equal to any: every pair reads back, and the audit passes (blocks
 * within their bounds, splits and widths right). */
static void test_shapes(void)
{
    struct packmap *m = packmap_create(NULL);
    struct list l[6] = {{0}};
    const uint32_t spread[] = {1, 3, 1000, 100000, PACKMAP_KEY_MAX / 2000};
    const uint32_t vmask[] = {0, 0x3f, 0xffff, UINT32_MAX};
    size_t bad = 0;

    for (unsigned shape = 0; shape < 6; shape++) {
        uint32_t step = spread[shape % 5], vm = vmask[shape % 4];

        for (uint32_t i = 0; i < 1000; i++) {
            uint32_t k = shape == 1   ? 999 - i
                         : shape >= 4 ? (uint32_t)(t_rng() % 1000)
                                      : i;
            uint32_t key = k * step, val = (uint32_t)t_rng() & vm, old;

            if (list_has(&l[shape], key, &old)) {
                bad += packmap_add(m, shape, key, val) != 1;
                continue;
            }
            bad += packmap_add(m, shape, key, val) != 0;
            list_add(&l[shape], key, val);
        }
        bad += list_diff(m, shape, &l[shape]);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(packmap_audit(m, no_check, NULL), 0);
    /* Appended in order: full blocks, so ~1.5 bytes a pair here (keys 1
     * apart, values equal: one byte each, plus the blocks' headers). */
    {
        struct packmap *a = packmap_create(NULL);
        size_t before = packmap_bytes(a);

        for (uint32_t i = 0; i < 6400; i++)
            CHECK_EQ_U64(packmap_add(a, 1, i, 7), 0);
        CHECK((packmap_bytes(a) - before) < 6400 * 3 / 2);
        CHECK_EQ_U64(packmap_audit(a, no_check, NULL), 0);
        packmap_destroy(a);
    }
    for (unsigned shape = 0; shape < 6; shape++)
        list_free(&l[shape]);
    packmap_destroy(m);
}

/* packmap_del never allocates, whatever it removes; the byte account
 * never grows on a delete. */
static void test_del_never_allocates(void)
{
    struct packmap *m = packmap_create(NULL);
    struct list l = {0};
    size_t bad = 0;

    for (unsigned round = 0; round < 20; round++) {
        uint32_t span = round % 2 ? 200 : PACKMAP_KEY_MAX;

        for (uint32_t i = 0; i < 600; i++) {
            uint32_t key = (uint32_t)(t_rng() % span), val, old;

            val = round % 3 == 0 ? 5 : (uint32_t)t_rng() >> (round % 32);
            if (!list_has(&l, key, &old)) {
                CHECK_EQ_U64(packmap_add(m, 9, key, val), 0);
                list_add(&l, key, val);
            }
        }
        while (l.n > 0) {
            uint32_t key = l.keys[t_rng() % l.n];
            uint64_t allocs = mem_allocs();
            size_t bytes = packmap_bytes(m);

            bad += !packmap_del(m, 9, key);
            bad += mem_allocs() != allocs || packmap_bytes(m) > bytes;
            list_del(&l, key);
            if (l.n % 50 == 0)
                bad += list_diff(m, 9, &l) + packmap_audit(m, no_check, NULL);
        }
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(packmap_count(m, 9), 0);
    list_free(&l);
    packmap_destroy(m);
}

static uint32_t val_of(uint32_t key, void *ctx)
{
    uint32_t mask = *(const uint32_t *)ctx;

    return (key * 2654435761u ^ mask) & mask;
}

/* Each allocating change, with its allocation failing: -1 and the list
 * as it was. */
static void test_alloc_failure(void)
{
    struct packmap *m = packmap_create(NULL);
    struct list l = {0};
    uint32_t keys[100], vals[100], mask = UINT32_MAX;
    size_t bad = 0;

    /* The first two pairs: a record. */
    CHECK_EQ_U64(packmap_add(m, 1, 51, 1), 0);
    list_add(&l, 51, 1);
    mem_fail_after(1, true);
    bad += packmap_add(m, 1, 60, 1) != -1;
    mem_fail_after(0, false);
    bad += list_diff(m, 1, &l);
    for (uint32_t i = 0; i < 300; i++) {
        uint32_t key = i * 7 + 1;

        CHECK_EQ_U64(packmap_add(m, 1, key, i), 0);
        list_add(&l, key, i);
        /* A wider key in each block, a split: each fails alone. */
        mem_fail_after(1, true);
        bad += packmap_add(m, 1, key + 3, UINT32_MAX) != -1;
        mem_fail_after(0, false);
        bad += list_diff(m, 1, &l);
    }
    for (uint32_t i = 0; i < 100; i++) {
        keys[i] = 10000 + i * 3;
        vals[i] = i;
    }
    mem_fail_after(1, true);
    bad += packmap_add_many(m, 1, 100, keys, vals) != -1;
    bad += packmap_set_all(m, 1, val_of, &mask) != -1;
    bad += packmap_put(m, 3, 100, keys, vals) != -1;
    mem_fail_after(0, false);
    bad += list_diff(m, 1, &l) + packmap_count(m, 3);
    /* And when allocation works. */
    CHECK_EQ_U64(packmap_add_many(m, 1, 100, keys, vals), 0);
    for (uint32_t i = 0; i < 100; i++)
        list_add(&l, keys[i], vals[i]);
    bad += list_diff(m, 1, &l);
    CHECK_EQ_U64(packmap_set_all(m, 1, val_of, &mask), 0);
    for (uint32_t i = 0; i < l.n; i++)
        l.vals[i] = val_of(l.keys[i], &mask);
    bad += list_diff(m, 1, &l);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(packmap_audit(m, no_check, NULL), 0);
    list_free(&l);
    packmap_destroy(m);
}

/*
 * The model: per uid a sorted array. Keys from a universe of the uid's
 * kind (dense: 0..400; sparse: 800 random 31-bit keys; clustered: runs
 * of 40 around random centres), values from a width that changes with
 * the step, so that blocks keep splitting, merging, widening and
 * narrowing. Every operation, including the bulk ones.
 */
#define M_UIDS 12
#define M_POOL 800

static uint32_t pool[M_POOL];

static uint32_t pick_key(unsigned u)
{
    switch (u % 3) {
    case 0:
        return (uint32_t)(t_rng() % 400);
    case 1:
        return pool[t_rng() % M_POOL];
    default:
        return pool[t_rng() % 20] / 2 + (uint32_t)(t_rng() % 40);
    }
}

static uint32_t pick_val(uint64_t step)
{
    static const uint32_t masks[] = {0, 1, 0xff, 0xfffff, UINT32_MAX};

    return (uint32_t)t_rng() & masks[(step / 5000) % 5];
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

static size_t random_op(struct packmap *m, struct list *l, uint64_t step)
{
    unsigned u = (unsigned)(t_rng() % M_UIDS);
    uint64_t r = t_rng() % 100;
    uint32_t key = pick_key(u), val = pick_val(step), old;
    uint64_t uid = u * 0x9e3779b97f4a7c15ULL;
    size_t bad = 0;

    if (r < 45) {
        bool had = list_has(&l[u], key, &old);

        bad += packmap_add(m, uid, key, val) != (had ? 1 : 0);
        if (!had)
            list_add(&l[u], key, val);
    } else if (r < 80) {
        bool had = list_has(&l[u], key, &old);

        bad += packmap_del(m, uid, key) != had;
        if (had)
            list_del(&l[u], key);
    } else if (r < 88) {
        bool had = list_has(&l[u], key, &old);

        bad += packmap_lookup(m, uid, key, &val) != had || (had && val != old);
    } else if (r < 91) {
        uint32_t mask = pick_val(step) | 1;

        bad += packmap_set_all(m, uid, val_of, &mask) != 0;
        for (uint32_t i = 0; i < l[u].n; i++)
            l[u].vals[i] = val_of(l[u].keys[i], &mask);
    } else if (r < 95) {
        /* Bulk: up to 150 new keys, sorted, none in the list. */
        uint32_t keys[150], vals[150], n = 0, want = 1 + t_rng() % 150;

        for (uint32_t i = 0; i < want; i++)
            keys[n++] = pick_key(u);
        qsort(keys, n, sizeof(keys[0]), cmp_u32);
        want = n;
        n = 0;
        for (uint32_t i = 0; i < want; i++)
            if ((n == 0 || keys[i] != keys[n - 1]) &&
                !list_has(&l[u], keys[i], &old))
                keys[n++] = keys[i];
        for (uint32_t i = 0; i < n; i++)
            vals[i] = pick_val(step);
        if (n > 0) {
            bad += packmap_add_many(m, uid, n, keys, vals) != 0;
            for (uint32_t i = 0; i < n; i++)
                list_add(&l[u], keys[i], vals[i]);
        }
    } else if (r < 97) {
        bad += packmap_del_user(m, uid) != l[u].n;
        l[u].n = 0;
    } else {
        bad += list_diff(m, uid, &l[u]);
    }
    return bad;
}

static void test_random_vs_model(void)
{
    struct packmap *m = packmap_create(NULL);
    struct list l[M_UIDS] = {{0}};
    size_t bad = 0, entries = 0;

    for (unsigned i = 0; i < M_POOL; i++)
        pool[i] = (uint32_t)t_rng() & PACKMAP_KEY_MAX;
    for (uint64_t step = 0; step < 200000; step++) {
        bad += random_op(m, l, step);
        if (step % 20000 == 0)
            bad += packmap_audit(m, no_check, NULL);
    }
    CHECK_EQ_U64(bad, 0);
    for (unsigned u = 0; u < M_UIDS; u++) {
        bad += list_diff(m, u * 0x9e3779b97f4a7c15ULL, &l[u]);
        entries += l[u].n;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(packmap_entries(m), entries);
    CHECK_EQ_U64(packmap_audit(m, no_check, NULL), 0);
    /* Every byte counted is given back. */
    {
        size_t used = mem_used();

        packmap_destroy(m);
        CHECK(mem_used() < used);
    }
    for (unsigned u = 0; u < M_UIDS; u++)
        list_free(&l[u]);
}

/* A walk visits every list once with its pairs in order. */
struct walk {
    size_t lists, pairs, bad;
};

static void walk_visit(uint64_t uid, uint32_t n, struct packmap_iter *it,
                       void *ctx)
{
    struct walk *w = ctx;
    uint32_t key, val, prev = 0, seen = 0;

    while (packmap_next(it, &key, &val)) {
        w->bad += seen > 0 && key <= prev;
        w->bad += val != (uint32_t)(uid + key);
        prev = key;
        seen++;
    }
    w->bad += seen != n;
    w->lists++;
    w->pairs += n;
}

static void test_scan(void)
{
    struct packmap *m = packmap_create(NULL);
    struct walk w = {0, 0, 0};
    uint64_t cursor = 0;
    size_t pairs = 0;

    for (uint64_t uid = 1; uid <= 300; uid++) {
        for (uint32_t k = 0; k < uid % 150; k++)
            CHECK_EQ_U64(packmap_add(m, uid, k * 13, (uint32_t)(uid + k * 13)),
                         0);
        pairs += uid % 150;
    }
    do
        packmap_scan(m, &cursor, 7, walk_visit, &w);
    while (cursor != 0);
    CHECK_EQ_U64(w.bad, 0);
    CHECK_EQ_U64(w.lists, packmap_users(m));
    CHECK_EQ_U64(w.pairs, pairs);
    packmap_destroy(m);
}

int main(void)
{
    T_RUN(test_transitions);
    T_RUN(test_extremes);
    T_RUN(test_shapes);
    T_RUN(test_del_never_allocates);
    T_RUN(test_alloc_failure);
    T_RUN(test_random_vs_model);
    T_RUN(test_scan);
    T_END();
}
