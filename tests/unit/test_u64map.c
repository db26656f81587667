/*
 * test_u64map.c - the map against a naive reference, its growth and merge
 * paths, the scan cursor under mutation, and its byte accounting.
 */
#define T_RNG_SEED 0x853c49e6748fea9bULL
#include "hash.h"
#include "mem.h"
#include "t.h"
#include "u64map.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void test_basic(void)
{
    struct u64map *m = u64map_create(NULL);
    size_t empty_bytes;
    uint64_t *ref;

    CHECK(m != NULL);
    empty_bytes = u64map_bytes(m);
    CHECK(empty_bytes > 0);
    CHECK_EQ_U64(u64map_count(m), 0);
    CHECK_EQ_U64(u64map_get(m, 0), 0);
    CHECK(u64map_ref(m, 7) == NULL);
    CHECK(!u64map_del(m, 7));

    /* The extremes are ordinary keys. */
    CHECK_EQ_U64(u64map_put(m, 0, 10), 0);
    CHECK_EQ_U64(u64map_put(m, UINT64_MAX, 20), 0);
    CHECK_EQ_U64(u64map_put(m, 1, UINT64_MAX), 0);
    CHECK_EQ_U64(u64map_count(m), 3);
    CHECK_EQ_U64(u64map_get(m, 0), 10);
    CHECK_EQ_U64(u64map_get(m, UINT64_MAX), 20);
    CHECK_EQ_U64(u64map_get(m, 1), UINT64_MAX);
    CHECK_EQ_U64(u64map_get(m, 2), 0);
    CHECK(u64map_bytes(m) > empty_bytes);

    /* Overwrite keeps the count. */
    CHECK_EQ_U64(u64map_put(m, 0, 11), 0);
    CHECK_EQ_U64(u64map_count(m), 3);
    CHECK_EQ_U64(u64map_get(m, 0), 11);

    ref = u64map_ref(m, UINT64_MAX);
    CHECK(ref != NULL);
    if (ref != NULL) {
        CHECK_EQ_U64(*ref, 20);
        *ref = 21;
    }
    CHECK_EQ_U64(u64map_get(m, UINT64_MAX), 21);

    CHECK(u64map_del(m, 0));
    CHECK(!u64map_del(m, 0));
    CHECK_EQ_U64(u64map_get(m, 0), 0);
    CHECK_EQ_U64(u64map_count(m), 2);
    CHECK(u64map_del(m, 1));
    CHECK(u64map_del(m, UINT64_MAX));
    CHECK_EQ_U64(u64map_count(m), 0);
    CHECK_EQ_U64(u64map_bytes(m), empty_bytes);
    CHECK_EQ_U64(u64map_audit(m), 0);
    u64map_destroy(m);
    u64map_destroy(NULL);
}

static void first_key(uint64_t key, uint64_t val, void *ctx)
{
    (void)val;
    *(uint64_t *)ctx = key;
}

static void test_seed(void)
{
    struct u64map *a = u64map_create(NULL), *b = u64map_create(NULL);
    uint64_t ca = 0, cb = 0, ka = 0, kb = 0;

    CHECK_EQ_U64(u64map_seed(b, 12345), 0);
    for (uint64_t k = 1; k <= 1000; k++) {
        u64map_put(a, k, k);
        u64map_put(b, k, k);
    }
    CHECK_EQ_U64(u64map_seed(b, 1), -1);
    CHECK_EQ_U64(u64map_get(b, 500), 500);
    CHECK_EQ_U64(u64map_audit(b), 0);
    /* Another seed, another order: the first key visited differs. */
    CHECK_EQ_U64(u64map_scan(a, &ca, 1, first_key, &ka), 1);
    CHECK_EQ_U64(u64map_scan(b, &cb, 1, first_key, &kb), 1);
    CHECK(ka != kb);
    CHECK(ca != 0 && cb != 0);
    u64map_destroy(a);

    /* The start-up seed applies to maps created afterwards. */
    hash_setup(12345);
    a = u64map_create(NULL);
    for (uint64_t k = 1; k <= 1000; k++)
        u64map_put(a, k, k);
    ca = 0;
    CHECK_EQ_U64(u64map_scan(a, &ca, 1, first_key, &ka), 1);
    CHECK_EQ_U64(ka, kb);
    CHECK_EQ_U64(ca, cb);
    u64map_destroy(a);
    u64map_destroy(b);
}

/* 1M keys through many growths and splits, then all deleted again. */
static void test_many(void)
{
    const uint64_t n = 1000000;
    struct u64map *m = u64map_create(NULL);
    size_t empty_bytes = u64map_bytes(m);
    struct u64map_stats st;
    size_t bad = 0;

    for (uint64_t i = 0; i < n; i++)
        bad += u64map_put(m, i * 0x9e3779b97f4a7c15ULL, i + 1) != 0;
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u64map_count(m), n);
    for (uint64_t i = 0; i < n; i++)
        bad += u64map_get(m, i * 0x9e3779b97f4a7c15ULL) != i + 1;
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u64map_get(m, 3), 0);
    CHECK_EQ_U64(u64map_audit(m), 0);

    u64map_stats(m, &st);
    CHECK(st.segments > 100);
    CHECK(st.depth >= 7);
    CHECK(st.slots > st.count);
    /* Load between the rebuild level and the limit: 16..24 B per entry. */
    CHECK(st.count * 100 >= st.slots * 65);
    CHECK(st.count * 100 <= st.slots * 91);
    CHECK(u64map_bytes(m) >= 16 * n);
    CHECK(u64map_bytes(m) <= 24 * n);

    /* Delete half (odd), check, delete the rest: segments merge back. */
    for (uint64_t i = 1; i < n; i += 2)
        bad += !u64map_del(m, i * 0x9e3779b97f4a7c15ULL);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u64map_count(m), n / 2);
    for (uint64_t i = 0; i < n; i++)
        bad += u64map_get(m, i * 0x9e3779b97f4a7c15ULL) != (i & 1 ? 0 : i + 1);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u64map_audit(m), 0);
    u64map_stats(m, &st);
    CHECK(st.count * 100 >= st.slots * 40);
    for (uint64_t i = 0; i < n; i += 2)
        bad += !u64map_del(m, i * 0x9e3779b97f4a7c15ULL);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u64map_count(m), 0);
    CHECK_EQ_U64(u64map_audit(m), 0);
    CHECK_EQ_U64(u64map_bytes(m), empty_bytes);
    u64map_stats(m, &st);
    CHECK_EQ_U64(st.segments, 0);
    CHECK_EQ_U64(st.depth, 0);
    u64map_destroy(m);
}

/* key's lookup through a probe's stages, as USER.MBADGE runs them. */
static uint64_t probed(const struct u64map *m, uint64_t key, bool rec)
{
    struct u64map_probe p;

    for (int s = 0; s < 4; s++)
        (rec ? u64map_probe_rec : u64map_probe)(m, key, s, &p);
    return p.val;
}

/*
 * A probe answers as u64map_get for present and absent keys, in an empty
 * map, one of a single small segment, and one deep enough to have split
 * (every depth on the way), with values that look like records or inline
 * words; and several probes in flight at once, stages interleaved.
 */
static void test_probe(void)
{
    struct u64map *m = u64map_create(NULL);
    struct u64map_probe ring[16]; /* > the 8 keys in flight */
    uint64_t keys[64];
    const int64_t nk = 64;
    size_t bad = 0;

    CHECK_EQ_U64(probed(m, 1, false), 0);
    CHECK_EQ_U64(probed(m, 0, true), 0);
    for (uint64_t n = 1; n <= 50000; n = n * 3 / 2 + 1) {
        while (u64map_count(m) < n) {
            uint64_t k = t_rng();

            if (u64map_count(m) < nk / 2)
                keys[u64map_count(m)] = k;
            bad += u64map_put(m, k, (k & 1) ? k : 0x1000 + (k & 0xfff0)) != 0;
        }
        for (int i = 0; i < 200; i++) {
            uint64_t k = t_rng();

            bad += probed(m, k, i & 1) != u64map_get(m, k);
        }
    }
    CHECK_EQ_U64(bad, 0);
    /* Keys present and absent, in a pipeline: stage s for
     * key i + 2 * (4 - s) while key i is read. */
    {
        for (int64_t i = nk / 2; i < nk; i++)
            keys[i] = t_rng(); /* absent, almost surely */
        for (int64_t i = 0; i < nk / 2; i++)
            bad += u64map_get(m, keys[i]) == 0;
        for (int64_t i = -8; i < nk; i++) {
            for (int s = 0; s < 4; s++) {
                int64_t j = i + 2 * (4 - s);

                if (j >= 0 && j < nk)
                    u64map_probe(m, keys[j], s, &ring[j % 16]);
            }
            if (i >= 0)
                bad += ring[i % 16].val != u64map_get(m, keys[i]);
        }
    }
    CHECK_EQ_U64(bad, 0);
    u64map_destroy(m);
}

/*
 * ~200k random operations over a pool of keys (extremes included) against a
 * plain array, in waves that fill and drain the map so that segments split
 * and merge over and over.
 */
static void test_random_vs_reference(void)
{
    enum { POOL = 40000, OPS = 200000 };
    uint64_t *keys = malloc(POOL * sizeof(*keys));
    uint64_t *vals = calloc(POOL, sizeof(*vals));
    struct u64map *m = u64map_create(NULL);
    size_t live = 0, bad = 0, audits = 0;

    keys[0] = 0;
    keys[1] = UINT64_MAX;
    keys[2] = 1;
    for (size_t i = 3; i < POOL; i++)
        keys[i] = i % 3 ? t_rng() : i; /* random and small dense ids */

    for (size_t op = 0; op < OPS; op++) {
        size_t i = t_rng() % POOL;
        unsigned r = (unsigned)(t_rng() % 100);
        /* Waves: mostly inserting for 25k ops, then mostly deleting. */
        bool filling = (op / 25000) % 2 == 0;

        if (r < (filling ? 60u : 20u)) {
            uint64_t v = t_rng() | 1;

            bad += u64map_put(m, keys[i], v) != 0;
            live += vals[i] == 0;
            vals[i] = v;
        } else if (r < 90) {
            bool had = vals[i] != 0;

            bad += u64map_del(m, keys[i]) != had;
            live -= had;
            vals[i] = 0;
        } else if (r < 95) {
            uint64_t *p = u64map_ref(m, keys[i]);

            bad += (p != NULL) != (vals[i] != 0);
            if (p != NULL)
                *p = vals[i] = t_rng() | 2;
        } else {
            bad += u64map_get(m, keys[i]) != vals[i];
        }
        bad += u64map_count(m) != live;
        if (op % 20000 == 0) {
            for (size_t k = 0; k < POOL; k++)
                bad += u64map_get(m, keys[k]) != vals[k];
            audits += u64map_audit(m);
        }
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(audits, 0);
    for (size_t k = 0; k < POOL; k++)
        bad += u64map_get(m, keys[k]) != vals[k];
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(u64map_audit(m), 0);
    CHECK_EQ_U64(u64map_count(m), live);
    u64map_destroy(m);
    free(keys);
    free(vals);
}

struct visits {
    uint32_t *seen; /* per value-1 (values are key indexes + 1) */
    size_t n;
    size_t limit;
    size_t foreign; /* visited values outside the tracked range */
};

static void count_visit(uint64_t key, uint64_t val, void *ctx)
{
    struct visits *v = ctx;

    (void)key;
    if (val >= 1 && val <= v->limit)
        v->seen[val - 1]++;
    else
        v->foreign++;
    v->n++;
}

static void test_scan_stable(void)
{
    enum { N = 100000 };
    struct u64map *m = u64map_create(NULL);
    struct visits v = {calloc(N, sizeof(uint32_t)), 0, N, 0};
    uint64_t cursor = 0;
    size_t calls = 0, once = 0, got, maxgot = 0;

    /* Empty map: one call, done. */
    CHECK_EQ_U64(u64map_scan(m, &cursor, 10, count_visit, &v), 0);
    CHECK_EQ_U64(cursor, 0);

    for (uint64_t i = 0; i < N; i++)
        u64map_put(m, t_rng(), i + 1);
    do {
        got = u64map_scan(m, &cursor, 97, count_visit, &v);
        maxgot = got > maxgot ? got : maxgot;
        calls++;
    } while (cursor != 0 && calls < 10 * N);
    CHECK_EQ_U64(cursor, 0);
    CHECK_EQ_U64(maxgot, 97);
    CHECK(calls >= N / 97);
    CHECK(calls <= N / 97 + 2 + 2000);
    for (size_t i = 0; i < N; i++)
        once += v.seen[i] == 1;
    CHECK_EQ_U64(once, N);
    CHECK_EQ_U64(v.n, N);
    CHECK_EQ_U64(v.foreign, 0);

    /* max == 0 makes no progress and visits nothing. */
    cursor = 0;
    CHECK_EQ_U64(u64map_scan(m, &cursor, 0, count_visit, &v), 0);
    CHECK_EQ_U64(cursor, 0);
    CHECK_EQ_U64(v.n, N);
    free(v.seen);
    u64map_destroy(m);
}

/*
 * A walk while the map grows from 50k to ~300k entries and then shrinks
 * back (splits and merges under the cursor): the stable entries are each
 * visited exactly once and the walk ends.
 */
static void test_scan_mutating(void)
{
    enum { STABLE = 50000, CHURN = 250000 };
    struct u64map *m = u64map_create(NULL);
    struct visits v = {calloc(STABLE, sizeof(uint32_t)), 0, STABLE, 0};
    uint64_t *churn = malloc(CHURN * sizeof(*churn));
    uint64_t cursor = 0;
    size_t calls = 0, added = 0, removed = 0, once = 0;

    for (uint64_t i = 0; i < STABLE; i++)
        u64map_put(m, t_rng(), i + 1);
    do {
        u64map_scan(m, &cursor, 50, count_visit, &v);
        calls++;
        /* Between calls: add 500 churn keys, or later take 500 away. */
        for (int j = 0; j < 500; j++) {
            if (added < CHURN) {
                churn[added] = t_rng();
                u64map_put(m, churn[added], STABLE + 1 + added);
                added++;
            } else if (removed < CHURN) {
                u64map_del(m, churn[removed++]);
            }
        }
    } while (cursor != 0 && calls < 100000);
    CHECK_EQ_U64(cursor, 0);
    CHECK(added > CHURN / 2); /* the walk really overlapped the churn */
    for (size_t i = 0; i < STABLE; i++)
        once += v.seen[i] == 1;
    CHECK_EQ_U64(once, STABLE);
    CHECK_EQ_U64(u64map_audit(m), 0);

    /* Drain the churn and walk the shrinking map too. */
    memset(v.seen, 0, STABLE * sizeof(uint32_t));
    cursor = 0;
    calls = 0;
    do {
        u64map_scan(m, &cursor, 50, count_visit, &v);
        for (int j = 0; j < 2000 && removed < added; j++)
            u64map_del(m, churn[removed++]);
    } while (cursor != 0 && ++calls < 100000);
    CHECK_EQ_U64(cursor, 0);
    CHECK_EQ_U64(removed, added);
    once = 0;
    for (size_t i = 0; i < STABLE; i++)
        once += v.seen[i] == 1;
    CHECK_EQ_U64(once, STABLE);
    CHECK_EQ_U64(u64map_count(m), STABLE);
    CHECK_EQ_U64(u64map_audit(m), 0);
    free(churn);
    free(v.seen);
    u64map_destroy(m);
}

/*
 * The map's first split failing after the directory doubled (its second
 * allocation, the left half, fails): the put fails, the map stays valid
 * with a directory of two entries over one segment, and once emptied it
 * holds nothing. (It used to free that segment with the directory still
 * pointing to it: the next put wrote to freed memory.)
 */
static void test_failed_split(void)
{
    struct u64map *m = u64map_create(NULL);
    struct u64map_stats st;
    size_t empty = u64map_bytes(m), bad = 0;
    uint64_t k;

    for (k = 1; k < 100000; k++) {
        int rc;

        mem_fail_after(2, true);
        rc = u64map_put(m, k, k);
        mem_fail_after(0, false);
        u64map_stats(m, &st);
        if (rc != 0 && st.depth == 1 && st.segments == 1)
            break;
        if (rc != 0)
            bad += u64map_put(m, k, k) != 0; /* a growth: try again */
    }
    CHECK_EQ_U64(st.depth, 1);
    CHECK_EQ_U64(st.segments, 1);
    CHECK_EQ_U64(u64map_get(m, k), 0);
    CHECK_EQ_U64(u64map_count(m), k - 1);
    CHECK_EQ_U64(u64map_audit(m), 0);
    for (uint64_t j = 1; j < k; j++)
        bad += !u64map_del(m, j);
    CHECK_EQ_U64(bad, 0);
    u64map_stats(m, &st);
    CHECK_EQ_U64(st.depth, 0);
    CHECK_EQ_U64(st.segments, 0);
    CHECK_EQ_U64(u64map_bytes(m), empty);
    CHECK_EQ_U64(u64map_put(m, 7, 7), 0);
    CHECK_EQ_U64(u64map_get(m, 7), 7);
    CHECK_EQ_U64(u64map_audit(m), 0);
    u64map_destroy(m);
}

/*
 * Random operations with allocations failing now and then (one, or every
 * one from the nth on): a put that fails leaves the map as it was, a
 * delete always works, and the map stays valid throughout.
 */
static void test_random_failures(void)
{
    enum { POOL = 20000, OPS = 200000 };
    uint64_t *vals = calloc(POOL, sizeof(*vals));
    struct u64map *m = u64map_create(NULL);
    size_t bad = 0, failed = 0;

    for (size_t op = 0; op < OPS; op++) {
        uint64_t key = t_rng() % POOL, v = t_rng() | 1;
        bool filling = (op / 25000) % 2 == 0;

        if (t_rng() % 4 == 0)
            mem_fail_after(1 + t_rng() % 3, t_rng() % 2);
        if (t_rng() % 100 < (filling ? 70u : 30u)) {
            if (u64map_put(m, key, v) == 0)
                vals[key] = v;
            else
                failed++;
        } else {
            bad += u64map_del(m, key) != (vals[key] != 0);
            vals[key] = 0;
        }
        mem_fail_after(0, false);
        bad += u64map_get(m, key) != vals[key];
        if (op % 10000 == 0) {
            for (size_t k = 0; k < POOL; k++)
                bad += u64map_get(m, k) != vals[k];
            bad += u64map_audit(m);
        }
    }
    CHECK_EQ_U64(bad, 0);
    CHECK(failed > 0);
    CHECK_EQ_U64(u64map_audit(m), 0);
    u64map_destroy(m);
    free(vals);
}

/* ---- Tags ---------------------------------------------------------------- */

struct tag_ref {
    const uint64_t *keys;
    uint16_t *tags; /* the reference's tag per key index */
    size_t pool;
    size_t drops, bad; /* drop callbacks, and those not expected */
    uint64_t want_key; /* the key u64map_del is deleting, its tag */
    uint16_t want_tag;
};

static void on_drop(uint64_t key, uint16_t tag, void *ctx)
{
    struct tag_ref *r = ctx;

    r->drops++;
    r->bad += key != r->want_key || tag != r->want_tag || tag == 0;
}

struct tag_seen {
    const struct tag_ref *r;
    size_t calls, wrong;
    uint8_t *seen; /* per key index */
};

static void tag_seen_visit(uint64_t key, uint16_t tag, void *ctx)
{
    struct tag_seen *ts = ctx;
    /* keys are i * 7919 + 1: the index is found without a search */
    size_t i = (key - 1) / 7919;

    ts->calls++;
    if ((key - 1) % 7919 != 0 || i >= ts->r->pool || tag == 0 ||
        ts->r->tags[i] != tag) {
        ts->wrong++;
        return;
    }
    ts->seen[i]++;
}

/* A tagged map against a reference of values and tags through waves of
 * inserts and deletes that grow, split, merge and shrink its segments
 * (mapped ones included): tags follow their keys through every move,
 * u64map_put and u64map_ref keep them, u64map_del reports each non-zero one
 * once, u64map_scan_tags visits exactly the tagged entries, and the tagged
 * count and the audit (tags of empty slots, bytes of 18-byte slots) hold. */
static void test_tags_vs_reference(void)
{
    enum { POOL = 60000, OPS = 400000 };
    uint64_t *keys = malloc(POOL * sizeof(*keys));
    uint64_t *vals = calloc(POOL, sizeof(*vals));
    uint16_t *tags = calloc(POOL, sizeof(*tags));
    struct tag_ref r = {keys, tags, POOL, 0, 0, 0, 0};
    struct u64map *m = u64map_create(NULL);
    size_t bad = 0, audits = 0, tagged = 0, dropped = 0, max_live = 0, live = 0;

    for (size_t i = 0; i < POOL; i++)
        keys[i] = i * 7919 + 1;
    CHECK(u64map_set_tagged(m) == 0);
    u64map_on_drop(m, on_drop, &r);
    for (size_t op = 0; op < OPS; op++) {
        size_t i = t_rng() % POOL;
        unsigned x = (unsigned)(t_rng() % 100);
        bool filling = (op / 50000) % 2 == 0;
        uint16_t t;

        if (x < (filling ? 50u : 15u)) {
            uint64_t v = t_rng() | 1;

            bad += u64map_put(m, keys[i], v) != 0;
            live += vals[i] == 0;
            vals[i] = v; /* a present key keeps its tag */
        } else if (x < (filling ? 60u : 75u)) {
            bool had = vals[i] != 0;

            r.want_key = keys[i];
            r.want_tag = tags[i];
            dropped += had && tags[i] != 0;
            tagged -= had && tags[i] != 0;
            bad += u64map_del(m, keys[i]) != had;
            live -= had;
            vals[i] = 0;
            tags[i] = 0;
        } else if (x < 85) {
            uint16_t nt = (uint16_t)(t_rng() % 4 == 0 ? 0 : t_rng());

            bad += u64map_set_tag(m, keys[i], nt) != (vals[i] != 0);
            if (vals[i] != 0) {
                tagged += (nt != 0) - (tags[i] != 0);
                tags[i] = nt;
            }
        } else if (x < 90) {
            uint64_t *p = u64map_ref(m, keys[i]);

            bad += (p != NULL) != (vals[i] != 0);
            if (p != NULL)
                *p = vals[i] = t_rng() | 2;
        } else {
            bool has = u64map_get_tag(m, keys[i], &t);

            bad += has != (vals[i] != 0) || (has && t != tags[i]);
            bad += u64map_get(m, keys[i]) != vals[i];
        }
        bad += u64map_count(m) != live || u64map_tagged(m) != tagged;
        if (live > max_live)
            max_live = live;
        if (op % 40000 == 0) {
            struct tag_seen ts = {&r, 0, 0, calloc(POOL, 1)};
            uint64_t cursor = 0;
            size_t looked = 0;

            do
                looked +=
                    u64map_scan_tags(m, &cursor, 1000, tag_seen_visit, &ts);
            while (cursor != 0);
            bad += looked != live || ts.calls != tagged || ts.wrong != 0;
            for (size_t k = 0; k < POOL; k++)
                bad += ts.seen[k] != (vals[k] != 0 && tags[k] != 0);
            free(ts.seen);
            audits += u64map_audit(m);
        }
    }
    CHECK(max_live > 20000); /* segments past 16 KiB: mapped pages */
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(audits, 0);
    CHECK_EQ_U64(r.bad, 0);
    CHECK_EQ_U64(r.drops, dropped);
    for (size_t k = 0; k < POOL; k++) {
        uint16_t t = 0;

        bad += u64map_get(m, keys[k]) != vals[k];
        bad += u64map_get_tag(m, keys[k], &t) != (vals[k] != 0) ||
               (vals[k] != 0 && t != tags[k]);
    }
    CHECK_EQ_U64(bad, 0);
    /* Deleting everything drops each remaining tag once, and frees all. */
    for (size_t k = 0; k < POOL; k++) {
        r.want_key = keys[k];
        r.want_tag = tags[k];
        dropped += vals[k] != 0 && tags[k] != 0;
        bad += u64map_del(m, keys[k]) != (vals[k] != 0);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(r.bad, 0);
    CHECK_EQ_U64(r.drops, dropped);
    CHECK_EQ_U64(u64map_tagged(m), 0);
    CHECK_EQ_U64(u64map_count(m), 0);
    CHECK_EQ_U64(u64map_audit(m), 0);
    u64map_destroy(m);
    free(keys);
    free(vals);
    free(tags);
}

/* Tagging is for an empty map only; an untagged map's bytes are as before
 * (16-byte slots), a tagged one's 18 a slot. */
static void test_tags_setup_and_bytes(void)
{
    struct u64map *a = u64map_create(NULL), *b = u64map_create(NULL);
    struct u64map_stats sa, sb;
    uint16_t t = 7;

    CHECK(u64map_set_tagged(b) == 0);
    CHECK(u64map_put(a, 1, 1) == 0);
    CHECK(u64map_set_tagged(a) == -1);
    CHECK(u64map_del(a, 1));
    for (uint64_t k = 1; k <= 100000; k++) {
        CHECK(u64map_put(a, k, k) == 0 || !"put");
        CHECK(u64map_put(b, k, k) == 0 || !"put");
    }
    CHECK(u64map_get_tag(b, 5, &t) && t == 0);
    CHECK(!u64map_get_tag(b, 100001, &t));
    CHECK(!u64map_set_tag(b, 100001, 3));
    CHECK(u64map_set_tag(b, 5, 3) && u64map_tagged(b) == 1);
    CHECK(u64map_set_tag(b, 5, 3) && u64map_tagged(b) == 1);
    CHECK(u64map_put(b, 5, 99) == 0);
    CHECK(u64map_get_tag(b, 5, &t) && t == 3);
    CHECK(u64map_set_tag(b, 5, 0) && u64map_tagged(b) == 0);
    u64map_stats(a, &sa);
    u64map_stats(b, &sb);
    /* 16 and 18 bytes a slot, plus headers, the directory and the page
     * rounding of mapped segments (less than a page a segment) */
    CHECK(sa.bytes >= sa.slots * 16 && sb.bytes >= sb.slots * 18);
    CHECK(sa.bytes - sa.slots * 16 < sa.segments * 4096 + 65536);
    CHECK(sb.bytes - sb.slots * 18 < sb.segments * 4096 + 65536);
    CHECK_EQ_U64(u64map_audit(a), 0);
    CHECK_EQ_U64(u64map_audit(b), 0);
    u64map_destroy(a);
    u64map_destroy(b);
}

int main(void)
{
    T_RUN(test_basic);
    T_RUN(test_seed);
    T_RUN(test_many);
    T_RUN(test_probe);
    T_RUN(test_random_vs_reference);
    T_RUN(test_scan_stable);
    T_RUN(test_scan_mutating);
    T_RUN(test_failed_split);
    T_RUN(test_random_failures);
    T_RUN(test_tags_vs_reference);
    T_RUN(test_tags_setup_and_bytes);
    T_END();
}
