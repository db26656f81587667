/*
 * test_wmap.c - the wide-value map: every call, growth and shrinkage
 * through many splits and merges, a randomized run against u64map as the
 * reference, and the scan contract under mutation.
 */
#define T_RNG_SEED 0x853c49e6748fea9bULL
#include "t.h"
#include "u64map.h"
#include "wmap.h"

#include <stdbool.h>
#include <stdlib.h>

/* The value the tests store for a key: derived, so any mix-up shows. */
static struct wmap_val val_for(uint64_t key)
{
    return (struct wmap_val){key * 3 + 1, ~key};
}

static bool holds(const struct wmap *m, uint64_t key)
{
    const struct wmap_val *v = wmap_get(m, key);

    return v != NULL && v->a == val_for(key).a && v->b == val_for(key).b;
}

static int put(struct wmap *m, uint64_t key)
{
    bool created;
    struct wmap_val *v = wmap_add(m, key, &created);

    if (v == NULL)
        return -1;
    *v = val_for(key);
    return created;
}

static void count_visit(uint64_t key, const struct wmap_val *v, void *ctx)
{
    (void)key;
    (void)v;
    ++*(size_t *)ctx;
}

static void test_empty(void)
{
    struct wmap *m = wmap_create(NULL);
    uint64_t cursor = 0;
    size_t seen = 0;

    CHECK(m != NULL);
    CHECK(wmap_get(m, 0) == NULL);
    CHECK(wmap_ref(m, 5) == NULL);
    CHECK(!wmap_del(m, 5));
    CHECK_EQ_U64(wmap_count(m), 0);
    CHECK_EQ_U64(wmap_scan(m, &cursor, 10, count_visit, &seen), 0);
    CHECK_EQ_U64(cursor, 0);
    CHECK_EQ_U64(seen, 0);
    CHECK_EQ_U64(wmap_audit(m), 0);
    wmap_destroy(m);
    wmap_destroy(NULL);
}

static void test_basic(void)
{
    struct wmap *m = wmap_create(NULL);
    struct wmap_val *v;
    bool created;

    /* A new entry is {0, 0}, and a zero value is a value. */
    v = wmap_add(m, 42, &created);
    CHECK(v != NULL && created && v->a == 0 && v->b == 0);
    CHECK(wmap_get(m, 42) != NULL);
    CHECK_EQ_U64(wmap_count(m), 1);
    v->a = 7;
    v = wmap_add(m, 42, &created);
    CHECK(v != NULL && !created && v->a == 7);
    wmap_ref(m, 42)->b = 9;
    CHECK_EQ_U64(wmap_get(m, 42)->b, 9);
    /* The extreme keys. */
    CHECK_EQ_U64(put(m, 0), 1);
    CHECK_EQ_U64(put(m, UINT64_MAX), 1);
    CHECK(holds(m, 0) && holds(m, UINT64_MAX));
    CHECK_EQ_U64(wmap_count(m), 3);
    CHECK(wmap_del(m, 42));
    CHECK(!wmap_del(m, 42));
    CHECK(wmap_get(m, 42) == NULL);
    CHECK(holds(m, 0) && holds(m, UINT64_MAX));
    CHECK_EQ_U64(wmap_audit(m), 0);
    wmap_destroy(m);
}

/* Grows through thousands of splits and shrinks back through the merges;
 * every key readable at every size checked. */
static void test_grow_and_shrink(void)
{
    struct wmap *m = wmap_create(NULL);
    struct wmap_stats st;
    const uint64_t n = 200000;
    size_t missing = 0;

    for (uint64_t i = 0; i < n; i++)
        CHECK_EQ_U64(put(m, i * 0x9e3779b97f4a7c15ULL), 1);
    CHECK_EQ_U64(wmap_count(m), n);
    for (uint64_t i = 0; i < n; i++)
        missing += !holds(m, i * 0x9e3779b97f4a7c15ULL);
    CHECK_EQ_U64(missing, 0);
    CHECK_EQ_U64(wmap_audit(m), 0);
    wmap_stats(m, &st);
    CHECK(st.level >= 12);
    /* ~16 entries per bucket: 24 bytes an entry plus ~2-5 of overhead. */
    CHECK(st.buckets > n / 32 && st.buckets < n / 8);
    CHECK(wmap_bytes(m) < n * 30);
    /* Sequential keys too (a different pattern of hashes); 0 is taken. */
    for (uint64_t i = 1; i <= 5000; i++)
        CHECK_EQ_U64(put(m, i), 1);
    for (uint64_t i = 1; i <= 5000; i++)
        CHECK(wmap_del(m, i));
    for (uint64_t i = 0; i < n; i += 2)
        CHECK(wmap_del(m, i * 0x9e3779b97f4a7c15ULL));
    CHECK_EQ_U64(wmap_audit(m), 0);
    missing = 0;
    for (uint64_t i = 1; i < n; i += 2)
        missing += !holds(m, i * 0x9e3779b97f4a7c15ULL);
    CHECK_EQ_U64(missing, 0);
    for (uint64_t i = 1; i < n; i += 2)
        CHECK(wmap_del(m, i * 0x9e3779b97f4a7c15ULL));
    wmap_stats(m, &st);
    CHECK_EQ_U64(st.count, 0);
    CHECK_EQ_U64(st.buckets, 0);
    CHECK_EQ_U64(st.level, 0); /* merged all the way back */
    CHECK_EQ_U64(wmap_audit(m), 0);
    wmap_destroy(m);
}

/* key's value through a probe's stages, as USER.MBADGE runs them. */
static const struct wmap_val *probed(const struct wmap *m, uint64_t key)
{
    struct wmap_probe p;

    for (int s = 0; s < 4; s++)
        wmap_probe(m, key, s, &p);
    return wmap_get_probed(&p);
}

/* A probe answers as wmap_get (the same entry) for present and absent
 * keys, at every size on the way up through splits and down through
 * merges (the split pointer anywhere), and in an empty map. */
static void test_probe(void)
{
    struct wmap *m = wmap_create(NULL);
    const uint64_t n = 30000;
    size_t bad = 0;

    CHECK(probed(m, 7) == NULL);
    for (uint64_t i = 0; i < n; i++) {
        CHECK_EQ_U64(put(m, i * 0x9e3779b97f4a7c15ULL), 1);
        if (i % 97 == 0)
            for (uint64_t k = 0; k < 2 * i + 2; k += 1 + i / 50)
                bad += probed(m, k * 0x9e3779b97f4a7c15ULL) !=
                       wmap_get(m, k * 0x9e3779b97f4a7c15ULL);
    }
    for (uint64_t i = 0; i < n; i++) {
        CHECK(wmap_del(m, i * 0x9e3779b97f4a7c15ULL));
        if (i % 89 == 0)
            for (uint64_t k = i; k < n + 10; k += 1 + (n - i) / 50)
                bad += probed(m, k * 0x9e3779b97f4a7c15ULL) !=
                       wmap_get(m, k * 0x9e3779b97f4a7c15ULL);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK(probed(m, 0) == NULL);
    wmap_destroy(m);
}

static void test_random_vs_u64map(void)
{
    struct wmap *m = wmap_create(NULL);
    struct u64map *ref = u64map_create(NULL);
    const uint64_t space = 30000;
    size_t wrong = 0;

    for (int i = 0; i < 400000; i++) {
        uint64_t key = (t_rng() % space) * 0x100000001b3ULL;
        unsigned op = (unsigned)(t_rng() % 10);

        if (op < 5) {
            int created = put(m, key);

            wrong += created != (u64map_get(ref, key) == 0);
            u64map_put(ref, key, 1);
        } else if (op < 8) {
            wrong += wmap_del(m, key) != u64map_del(ref, key);
        } else {
            wrong += (wmap_get(m, key) != NULL) != (u64map_get(ref, key) != 0);
            wrong += wmap_get(m, key) != NULL && !holds(m, key);
        }
        wrong += wmap_count(m) != u64map_count(ref);
        if (i % 50000 == 0)
            CHECK_EQ_U64(wmap_audit(m), 0);
    }
    CHECK_EQ_U64(wrong, 0);
    CHECK_EQ_U64(wmap_audit(m), 0);
    u64map_destroy(ref);
    wmap_destroy(m);
}

struct seen {
    struct u64map *times; /* key -> visits */
    size_t bad;
};

static void seen_visit(uint64_t key, const struct wmap_val *v, void *ctx)
{
    struct seen *s = ctx;

    s->bad += v->a != val_for(key).a;
    u64map_put(s->times, key, u64map_get(s->times, key) + 1);
}

/* Keys present for the whole walk are visited exactly once, whatever the
 * map does between calls; the keys given back are the keys put in (the
 * hash is inverted correctly). */
static void test_scan_under_mutation(void)
{
    struct wmap *m = wmap_create(NULL);
    struct seen s = {u64map_create(NULL), 0};
    uint64_t cursor = 0, calls = 0;
    size_t once = 0, twice = 0;

    for (uint64_t i = 0; i < 20000; i++)
        put(m, i);
    do {
        wmap_scan(m, &cursor, 1 + t_rng() % 40, seen_visit, &s);
        /* Churn keys >= 1000000: inserts split, deletes merge. */
        for (int j = 0; j < 30; j++) {
            uint64_t key = 1000000 + t_rng() % 40000;

            if (calls % 200 < 100)
                put(m, key);
            else
                wmap_del(m, key);
        }
        calls++;
    } while (cursor != 0);
    for (uint64_t i = 0; i < 20000; i++) {
        once += u64map_get(s.times, i) == 1;
        twice += u64map_get(s.times, i) > 1;
    }
    CHECK_EQ_U64(once, 20000);
    CHECK_EQ_U64(twice, 0);
    CHECK_EQ_U64(s.bad, 0);
    CHECK(calls > 100);
    /* max 0 visits nothing and keeps the cursor. */
    cursor = 12345;
    CHECK_EQ_U64(wmap_scan(m, &cursor, 0, seen_visit, &s), 0);
    CHECK_EQ_U64(cursor, 12345);
    CHECK_EQ_U64(wmap_audit(m), 0);
    u64map_destroy(s.times);
    wmap_destroy(m);
}

int main(void)
{
    T_RUN(test_empty);
    T_RUN(test_basic);
    T_RUN(test_grow_and_shrink);
    T_RUN(test_probe);
    T_RUN(test_random_vs_u64map);
    T_RUN(test_scan_under_mutation);
    T_END();
}
