/*
 * test_u32map.c - u32map: every call, zero values, splits and merges
 * across many keys, the scan contract under changes, the memory per entry,
 * and a long randomized run against u64map as the model.
 */
#include "mem.h"
#include "t.h"
#include "u32map.h"
#include "u64map.h"

#include <stdbool.h>
#include <stdlib.h>

static void test_empty(void)
{
    struct u32map *m = u32map_create(NULL);
    uint32_t v = 7;
    uint64_t cursor = 0;

    CHECK(m != NULL);
    CHECK_EQ_U64(u32map_count(m), 0);
    CHECK(!u32map_get(m, 1, &v));
    CHECK_EQ_U64(v, 7);
    CHECK(u32map_ref(m, 1) == NULL);
    CHECK(!u32map_del(m, 1));
    CHECK_EQ_U64(u32map_scan(m, &cursor, 10, NULL, NULL), 0);
    CHECK_EQ_U64(cursor, 0);
    CHECK_EQ_U64(u32map_audit(m), 0);
    u32map_destroy(m);
    u32map_destroy(NULL);
}

static void test_basic(void)
{
    struct u32map *m = u32map_create(NULL);
    size_t empty = u32map_bytes(m);
    uint32_t v;

    /* Zero is a value like any other; keys 0 and UINT64_MAX too. */
    CHECK_EQ_U64(u32map_put(m, 0, 0), 0);
    CHECK_EQ_U64(u32map_put(m, UINT64_MAX, UINT32_MAX), 0);
    CHECK_EQ_U64(u32map_put(m, 42, 5), 0);
    CHECK_EQ_U64(u32map_count(m), 3);
    CHECK(u32map_get(m, 0, &v) && v == 0);
    CHECK(u32map_get(m, UINT64_MAX, &v) && v == UINT32_MAX);
    CHECK(u32map_get(m, 42, &v) && v == 5);
    CHECK(!u32map_get(m, 43, &v));
    /* put on a present key replaces; ref writes through. */
    CHECK_EQ_U64(u32map_put(m, 42, 6), 0);
    CHECK_EQ_U64(u32map_count(m), 3);
    *u32map_ref(m, 42) = 9;
    CHECK(u32map_get(m, 42, &v) && v == 9);
    CHECK(u32map_bytes(m) > empty);
    CHECK_EQ_U64(u32map_audit(m), 0);
    CHECK(u32map_del(m, 0));
    CHECK(!u32map_del(m, 0));
    CHECK(!u32map_get(m, 0, &v));
    CHECK(u32map_del(m, 42));
    CHECK(u32map_del(m, UINT64_MAX));
    /* An empty map gives its buckets back. */
    CHECK_EQ_U64(u32map_count(m), 0);
    CHECK_EQ_U64(u32map_bytes(m), empty);
    CHECK_EQ_U64(u32map_audit(m), 0);
    u32map_destroy(m);
}

/* Sequential keys (the worst case for a hash that did not mix) and random
 * ones, through many splits, then all deleted again through merges. */
static void test_grow_and_shrink(void)
{
    enum { N = 200000 };
    static uint64_t rnd[N];
    struct u32map *m = u32map_create(NULL);
    size_t empty = u32map_bytes(m), bad = 0;
    uint32_t v;

    for (uint64_t i = 0; i < N; i++) {
        rnd[i] = t_rng() | (UINT64_C(1) << 63);
        bad += u32map_put(m, i, (uint32_t)(i * 3)) != 0;
        bad += u32map_put(m, rnd[i], 1) != 0;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u32map_count(m), 2 * N);
    CHECK_EQ_U64(u32map_audit(m), 0);
    for (uint64_t i = 0; i < N; i++)
        bad += !u32map_get(m, i, &v) || v != (uint32_t)(i * 3);
    CHECK_EQ_U64(bad, 0);
    /* 12 bytes an entry plus the slack: well under 16. */
    CHECK(u32map_bytes(m) < 14 * u32map_count(m));
    for (uint64_t i = 0; i < N; i += 2)
        bad += !u32map_del(m, i);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u32map_audit(m), 0);
    /* Half deleted: buckets shrink only below half full. */
    CHECK(u32map_bytes(m) < 26 * u32map_count(m));
    for (uint64_t i = 1; i < N; i += 2)
        bad += !u32map_del(m, i) || u32map_get(m, i, &v);
    for (uint64_t i = 0; i < N; i++)
        bad += !u32map_get(m, rnd[i], &v) || v != 1;
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u32map_audit(m), 0);
    for (uint64_t i = 0; i < N; i++)
        bad += !u32map_del(m, rnd[i]);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u32map_count(m), 0);
    CHECK_EQ_U64(u32map_bytes(m), empty);
    CHECK_EQ_U64(u32map_audit(m), 0);
    u32map_destroy(m);
}

struct seen {
    struct u64map *keys; /* key -> times visited */
    size_t visits;
};

static void count_visit(uint64_t key, uint32_t val, void *ctx)
{
    struct seen *s = ctx;
    uint64_t *r = u64map_ref(s->keys, key);

    (void)val;
    if (r != NULL)
        (*r)++;
    s->visits++;
}

/* Every key present for the whole walk is visited exactly once, even when
 * keys come and go (and buckets split and merge) between calls. */
static void test_scan_under_changes(void)
{
    struct u32map *m = u32map_create(NULL);
    struct seen s = {u64map_create(NULL), 0};
    uint64_t cursor = 0, base = UINT64_C(1) << 40, bad = 0;
    size_t calls = 0;

    for (uint64_t i = 0; i < 50000; i++) {
        u32map_put(m, i, (uint32_t)i);
        u64map_put(s.keys, i, 1); /* 1 = present, not yet visited */
    }
    do {
        u32map_scan(m, &cursor, 97, count_visit, &s);
        /* Churn keys that are not part of the check. */
        for (int j = 0; j < 60; j++)
            u32map_put(m, base + t_rng() % 40000, 0);
        for (int j = 0; j < 60; j++)
            u32map_del(m, base + t_rng() % 40000);
        calls++;
    } while (cursor != 0);
    for (uint64_t i = 0; i < 50000; i++)
        bad += u64map_get(s.keys, i) != 2;
    CHECK_EQ_U64(bad, 0);
    CHECK(calls > 400);
    CHECK_EQ_U64(u32map_audit(m), 0);
    /* The keys come back out as they went in: the hash is inverted. */
    {
        struct u32map *one = u32map_create(NULL);
        struct seen t = {u64map_create(NULL), 0};
        uint64_t c = 0, keys[] = {0, 1, 12345, UINT64_MAX, 0x8000000000000000};

        for (int i = 0; i < 5; i++) {
            u32map_put(one, keys[i], 1);
            u64map_put(t.keys, keys[i], 1);
        }
        CHECK_EQ_U64(u32map_scan(one, &c, 100, count_visit, &t), 5);
        CHECK_EQ_U64(c, 0);
        for (int i = 0; i < 5; i++)
            CHECK_EQ_U64(u64map_get(t.keys, keys[i]), 2);
        /* max 0 visits nothing; max 2 stops with a cursor. */
        CHECK_EQ_U64(u32map_scan(one, &c, 0, count_visit, &t), 0);
        CHECK_EQ_U64(u32map_scan(one, &c, 2, count_visit, &t), 2);
        CHECK(c != 0);
        u64map_destroy(t.keys);
        u32map_destroy(one);
    }
    u64map_destroy(s.keys);
    u32map_destroy(m);
}

/* u64map holds the model: value + 1 (u64map cannot store 0). */
static void test_random_vs_model(void)
{
    struct u32map *m = u32map_create(NULL);
    struct u64map *model = u64map_create(NULL);
    size_t bad = 0;

    for (int round = 0; round < 400000; round++) {
        /* Phases that fill toward ~20000 keys, then empty out: splits,
         * merges, growth and shrinking all happen many times. */
        bool filling = round / 50000 % 2 == 0;
        uint64_t key = t_rng() % 20000 * 0x9e3779b97f4a7c15ULL;
        uint32_t v, val = (uint32_t)t_rng();
        unsigned op = (unsigned)(t_rng() % 10);

        if (op < (filling ? 6u : 1u)) {
            bad += u32map_put(m, key, val) != 0;
            u64map_put(model, key, (uint64_t)val + 1);
        } else if (op < 8) {
            bad += u32map_del(m, key) != u64map_del(model, key);
        } else {
            uint64_t want = u64map_get(model, key);
            bool got = u32map_get(m, key, &v);

            bad += got != (want != 0) || (got && v != want - 1);
        }
        if (round % 50000 == 0)
            bad += u32map_audit(m);
    }
    bad += u32map_count(m) != u64map_count(model);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u32map_audit(m), 0);
    u64map_destroy(model);
    u32map_destroy(m);
}

/*
 * Random operations with allocations failing now and then (one, or every
 * one from the nth on): a put that fails leaves the map as it was, a
 * delete always works, and the map stays valid throughout, emptied to
 * nothing at the end.
 */
static void test_random_failures(void)
{
    enum { POOL = 6000, OPS = 200000 };
    int64_t *vals = malloc(POOL * sizeof(*vals)); /* -1: absent */
    struct u32map *m = u32map_create(NULL);
    size_t empty = u32map_bytes(m), bad = 0, failed = 0;
    uint32_t v;

    for (size_t k = 0; k < POOL; k++)
        vals[k] = -1;
    for (size_t op = 0; op < OPS; op++) {
        uint64_t key = t_rng() % POOL;
        uint32_t val = (uint32_t)t_rng();
        bool filling = (op / 25000) % 2 == 0;

        if (t_rng() % 4 == 0)
            mem_fail_after(1 + t_rng() % 3, t_rng() % 2);
        if (t_rng() % 100 < (filling ? 70u : 30u)) {
            if (u32map_put(m, key, val) == 0)
                vals[key] = val;
            else
                failed++;
        } else {
            bad += u32map_del(m, key) != (vals[key] >= 0);
            vals[key] = -1;
        }
        mem_fail_after(0, false);
        bad += u32map_get(m, key, &v) != (vals[key] >= 0);
        if (op % 10000 == 0)
            bad += u32map_audit(m);
    }
    for (uint64_t k = 0; k < POOL; k++) {
        if (vals[k] >= 0)
            bad += !u32map_get(m, k, &v) || v != (uint32_t)vals[k];
        u32map_del(m, k);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK(failed > 0);
    CHECK_EQ_U64(u32map_audit(m), 0);
    CHECK_EQ_U64(u32map_bytes(m), empty);
    u32map_destroy(m);
    free(vals);
}

static void nop_visit(uint64_t key, uint32_t val, void *ctx)
{
    (void)key;
    (void)val;
    (void)ctx;
}

struct tag_check {
    const int32_t *tags;
    size_t bad, seen;
    bool set;      /* a tag set: values are 0, the index is the key's */
    uint64_t pool; /* indexes below it (0: 60000) */
};

static void tag_visit(uint64_t key, uint32_t val, uint16_t tag, void *ctx)
{
    struct tag_check *ck = ctx;
    /* keys are index * 0x9e3779b97f4a7c15: this is its inverse */
    uint64_t idx = ck->set ? key * 0xf1de83e19937733dULL : val;

    ck->bad += (ck->set && val != 0) || idx >= (ck->pool ? ck->pool : 60000) ||
               key != idx * 0x9e3779b97f4a7c15ULL ||
               ck->tags[idx] != (int32_t)tag;
    ck->seen++;
}

/* A tagged map: every tag stays with its key through inserts, deletes,
 * splits and merges (checked against a model), scans report it, and an
 * entry costs 14 bytes plus the slack when the tags are spread (2 bytes
 * each: these are random); a tag set (set), whose values read 0, 10. */
static void tags_vs_model(bool set)
{
    enum { POOL = 60000, OPS = 400000 };
    struct u32map *m =
        set ? u32map_create_tagset(NULL) : u32map_create_tagged(NULL);
    int32_t *tags = malloc(POOL * sizeof(*tags)); /* -1: absent */
    uint64_t seed = 99, cursor = 0;
    size_t bad = 0, seen = 0, n = 0;

    CHECK(m != NULL && tags != NULL);
    for (uint64_t k = 0; k < POOL; k++)
        tags[k] = -1;
    for (int op = 0; op < OPS; op++) {
        uint64_t r, key;
        uint16_t t;
        uint32_t *v;

        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        r = seed >> 33;
        key = r % POOL;
        if ((r >> 20) % 4 != 0) {
            uint16_t tag = (uint16_t)(r >> 8);

            bad += u32map_put_tagged(m, key * 0x9e3779b97f4a7c15ULL,
                                     (uint32_t)key, tag) != 0;
            tags[key] = tag;
        } else {
            bad +=
                u32map_del(m, key * 0x9e3779b97f4a7c15ULL) != (tags[key] >= 0);
            tags[key] = -1;
        }
        v = u32map_ref_tagged(m, key * 0x9e3779b97f4a7c15ULL, &t);
        bad += (v != NULL) != (tags[key] >= 0);
        {
            uint16_t t2 = 0;

            bad += u32map_get_tag(m, key * 0x9e3779b97f4a7c15ULL, &t2) !=
                       (v != NULL) ||
                   (v != NULL && t2 != t);
        }
        if (v != NULL) {
            bad += *v != (set ? 0 : (uint32_t)key) || t != (uint16_t)tags[key];
            t = (uint16_t)(t + 1);
            bad += u32map_set_tag(m, key * 0x9e3779b97f4a7c15ULL, t) != 0;
            tags[key] = t;
        }
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u32map_audit(m), 0);
    for (uint64_t k = 0; k < POOL; k++)
        n += tags[k] >= 0;
    CHECK_EQ_U64(u32map_count(m), n);
    /* random tags: 2-byte tags, hashes of 8 bytes (depth < 8) */
    CHECK(u32map_bytes(m) < (set ? 12 : 16) * n);
    CHECK(u32map_bytes(m) > (set ? 10 : 14) * n);
    struct tag_check ck = {tags, 0, 0, set, 0};
    do
        u32map_scan_tagged(m, &cursor, 100, tag_visit, &ck);
    while (cursor != 0);
    bad = ck.bad;
    seen = ck.seen;
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(seen, n);
    u32map_destroy(m);
    free(tags);
}

static void test_tags_vs_model(void)
{
    tags_vs_model(false);
}

static void test_tagset_vs_model(void)
{
    tags_vs_model(true);
}

/* Growing past depth 8 (narrow buckets: 7-byte hashes under a shared top
 * byte) and shrinking back below it: every key, value and tag survives
 * the splits and merges that change a bucket's form, in tagged and plain
 * maps. */
static void test_narrow_buckets(void)
{
    enum { N = 250000 };

    for (int tagged = 0; tagged < 2; tagged++) {
        struct u32map *m =
            tagged ? u32map_create_tagged(NULL) : u32map_create(NULL);
        size_t bad = 0, per;
        uint64_t cursor = 0;
        uint16_t t = 0;
        uint32_t *v;

        for (uint64_t k = 0; k < N; k++)
            bad +=
                (tagged ? u32map_put_tagged(m, k, (uint32_t)k * 3, (uint16_t)k)
                        : u32map_put(m, k, (uint32_t)k * 3)) != 0;
        CHECK_EQ_U64(u32map_audit(m), 0);
        per = u32map_bytes(m) / N;
        CHECK(per <= (tagged ? 13u : 11u)); /* 7-byte hashes at this size */
        for (uint64_t k = 0; k < N + 1000; k++) {
            v = tagged ? u32map_ref_tagged(m, k, &t) : u32map_ref(m, k);
            bad +=
                (v != NULL) != (k < N) ||
                (v && (*v != (uint32_t)k * 3 || (tagged && t != (uint16_t)k)));
        }
        CHECK_EQ_U64(bad, 0);
        for (uint64_t k = 0; k < N; k++)
            if (k % 200 != 0)
                bad += !u32map_del(m, k);
        CHECK_EQ_U64(u32map_audit(m), 0);
        CHECK_EQ_U64(u32map_count(m), N / 200);
        for (uint64_t k = 0; k < N; k++) {
            v = tagged ? u32map_ref_tagged(m, k, &t) : u32map_ref(m, k);
            bad +=
                (v != NULL) != (k % 200 == 0) ||
                (v && (*v != (uint32_t)k * 3 || (tagged && t != (uint16_t)k)));
        }
        CHECK_EQ_U64(bad, 0);
        CHECK_EQ_U64(u32map_scan(m, &cursor, SIZE_MAX, nop_visit, NULL),
                     N / 200);
        u32map_destroy(m);
    }
}

/*
 * Day-like tags (BC's days): a bucket keeps them in a byte each while its
 * non-zero tags span fewer than 255 values, moving its window as the days
 * advance, in 2 bytes once they spread wider, and in bytes again after a
 * rebuild once they fit. Against a model, with allocations failing at
 * random: a failed put or set changes nothing.
 */
static void tag_windows(bool set)
{
    enum { POOL = 150000, OPS = 600000 };
    struct u32map *m =
        set ? u32map_create_tagset(NULL) : u32map_create_tagged(NULL);
    int32_t *tags = malloc(POOL * sizeof(*tags)); /* -1: absent */
    size_t bad = 0, n = 0, fails = 0, before;
    uint16_t today = 20000;

    CHECK(m != NULL && tags != NULL);
    for (uint64_t k = 0; k < POOL; k++)
        tags[k] = -1;
    /* every key, today's day: 1-byte tags, 12 bytes an entry + slack */
    for (uint64_t k = 0; k < POOL; k++) {
        bad += u32map_put_tagged(m, k, (uint32_t)k, today) != 0;
        tags[k] = today;
    }
    CHECK_EQ_U64(u32map_audit(m), 0);
    /* 7 + 4 + 1 bytes, 7 + 1 in a tag set, + slack */
    CHECK(u32map_bytes(m) < (size_t)(set ? 900 : 1275) * POOL / 100);
    /* one day far back widens its bucket; 0 and today fit any bucket */
    before = u32map_bytes(m);
    CHECK_EQ_U64(u32map_set_tag(m, 7, (uint16_t)(today - 1000)), 0);
    CHECK(u32map_bytes(m) > before);
    mem_fail_after(1, true);
    CHECK_EQ_U64(u32map_set_tag(m, 7, 0), 0);
    CHECK_EQ_U64(u32map_set_tag(m, 7, today), 0);
    mem_fail_after(0, false);
    CHECK_EQ_U64(u32map_audit(m), 0);
    for (int op = 0; op < OPS; op++) {
        uint64_t key = t_rng() % POOL;
        unsigned what = (unsigned)(t_rng() % 100);
        uint16_t t = 0, tag;
        uint32_t *v;
        int rc;

        if (op % 2000 == 0)
            today++; /* days pass: windows move */
        /* mostly today, some days far back (spreading a bucket past a
         * window), some none */
        tag = what < 80   ? today
              : what < 85 ? 0
              : what < 88 ? (uint16_t)(today - 300 - t_rng() % 2000)
                          : (uint16_t)(today - t_rng() % 60);
        if (t_rng() % 50 == 0)
            mem_fail_after(1, false);
        if (what % 7 == 0) {
            bad += u32map_del(m, key) != (tags[key] >= 0);
            tags[key] = -1;
        } else if (what % 3 == 0 || tags[key] < 0) {
            rc = u32map_put_tagged(m, key, (uint32_t)key, tag);
            if (rc == 0)
                tags[key] = tag;
            fails += rc != 0;
        } else {
            rc = u32map_set_tag(m, key, tag);
            bad += rc == 1;
            if (rc == 0)
                tags[key] = tag;
            fails += rc != 0;
        }
        mem_fail_after(0, false);
        v = u32map_ref_tagged(m, key, &t);
        bad += (v != NULL) != (tags[key] >= 0);
        bad += v != NULL &&
               (*v != (set ? 0 : (uint32_t)key) || t != (uint16_t)tags[key]);
        /* setting a tag the entry has, or 0, never allocates */
        if (v != NULL) {
            mem_fail_after(1, true);
            bad += u32map_set_tag(m, key, t) != 0;
            bad += u32map_set_tag(m, key, 0) != 0;
            bad += u32map_set_tag(m, key, t) != 0;
            mem_fail_after(0, false);
        }
        if (op % 50000 == 0)
            bad += u32map_audit(m);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK(fails > 0);
    CHECK_EQ_U64(u32map_audit(m), 0);
    for (uint64_t k = 0; k < POOL; k++) {
        uint16_t t = 0;
        uint32_t *v = u32map_ref_tagged(m, k, &t);

        n += tags[k] >= 0;
        bad += (v != NULL) != (tags[k] >= 0) ||
               (v != NULL && t != (uint16_t)tags[k]);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u32map_count(m), n);
    /* the old days gone (expired users come back today) */
    for (uint64_t k = 0; k < POOL; k++)
        if (tags[k] >= 0 && (uint16_t)tags[k] + 100 < today) {
            bad += !u32map_del(m, k);
            tags[k] = -1;
        }
    for (uint64_t k = 0; k < POOL; k++)
        if (tags[k] < 0) {
            bad += u32map_put_tagged(m, k, (uint32_t)k, today) != 0;
            tags[k] = today;
        }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u32map_audit(m), 0);
    u32map_destroy(m);
    free(tags);
}

static void test_tag_windows(void)
{
    tag_windows(false);
}

/* A tag set past depth 8 (narrow buckets: 7-byte hashes, the last one's
 * 8-byte load reading a tag byte) whose tags are spread (2 bytes each):
 * every key keeps its tag through the growth, and the walk sees each. */
static void test_tagset_narrow_wide_tags(void)
{
    enum { POOL = 200000 };
    struct u32map *m = u32map_create_tagset(NULL);
    size_t bad = 0, n = 0;
    uint64_t cursor = 0;
    struct tag_check ck;
    int32_t *tags = malloc(POOL * sizeof(*tags));

    CHECK(m != NULL && tags != NULL);
    for (uint64_t k = 0; k < POOL; k++) {
        tags[k] = (int32_t)(1 + t_rng() % 60000);
        bad += u32map_put_tagged(m, k * 0x9e3779b97f4a7c15ULL, 7,
                                 (uint16_t)tags[k]) != 0;
    }
    /* 7 + 2 bytes an entry, slack and headers: under 11 */
    CHECK(u32map_bytes(m) < (size_t)11 * POOL);
    for (uint64_t k = 0; k < POOL; k += 3) {
        bad += !u32map_del(m, k * 0x9e3779b97f4a7c15ULL);
        tags[k] = -1;
    }
    for (uint64_t k = 0; k < POOL; k++) {
        uint16_t t = 0;

        n += tags[k] >= 0;
        bad += u32map_get_tag(m, k * 0x9e3779b97f4a7c15ULL, &t) !=
                   (tags[k] >= 0) ||
               (tags[k] >= 0 && t != (uint16_t)tags[k]);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u32map_count(m), n);
    CHECK_EQ_U64(u32map_audit(m), 0);
    ck = (struct tag_check){tags, 0, 0, true, POOL};
    do
        u32map_scan_tagged(m, &cursor, 500, tag_visit, &ck);
    while (cursor != 0);
    CHECK_EQ_U64(ck.bad, 0);
    CHECK_EQ_U64(ck.seen, n);
    u32map_destroy(m);
    free(tags);
}

static void test_tagset_windows(void)
{
    tag_windows(true);
}

int main(void)
{
    T_RUN(test_narrow_buckets);
    T_RUN(test_tags_vs_model);
    T_RUN(test_tag_windows);
    T_RUN(test_tagset_vs_model);
    T_RUN(test_tagset_windows);
    T_RUN(test_tagset_narrow_wide_tags);
    T_RUN(test_empty);
    T_RUN(test_basic);
    T_RUN(test_grow_and_shrink);
    T_RUN(test_scan_under_changes);
    T_RUN(test_random_vs_model);
    T_RUN(test_random_failures);
    T_END();
}
