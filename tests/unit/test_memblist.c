/*
 * test_memblist.c - memblist: the inline <-> record transitions, widths
 * growing with the keys' spread and the values (and kept by deletes), the
 * in-place edits, the byte accounting, and a randomized run against a
 * presence/flag/value array model with keys and values of every width,
 * and runs decoded at once (memblist_decode) against entries one by one.
 */
#include "memblist.h"
#define T_RNG_SEED 0x9e3779b97f4a7c15ULL
#include "t.h"

#include <stdbool.h>
#include <stdlib.h>

static size_t no_check(uint64_t e, const void *ctx)
{
    (void)e;
    (void)ctx;
    return 0;
}

static size_t key_below(uint64_t e, const void *ctx)
{
    return ml_key(e) >= *(const uint32_t *)ctx;
}

static void test_transitions(void)
{
    struct memblist *m = memblist_create(NULL);
    size_t empty = memblist_bytes(m), b2, b3;
    struct ml_iter it;
    uint64_t got;

    CHECK_EQ_U64(memblist_get(m, 5, &it), 0);
    CHECK(!memblist_lookup(m, 5, 1, &got));
    CHECK(!memblist_del(m, 5, 1));
    CHECK_EQ_U64(memblist_set(m, 5, ML_ENTRY(1, false, 1)), 1);

    /* One entry: inline, whatever its value. */
    CHECK_EQ_U64(memblist_add(m, 5, ML_ENTRY(300, true, 0xfffffff0u)), 0);
    CHECK_EQ_U64(memblist_get(m, 5, &it), 1);
    CHECK_EQ_U64(ml_at(&it, 0), ML_ENTRY(300, true, 0xfffffff0u));
    CHECK(it.k == NULL);
    /* Two close keys, small values: 8 + 2 x (1 + 1) bytes. */
    CHECK_EQ_U64(memblist_set(m, 5, ML_ENTRY(300, false, 7)), 0);
    b2 = memblist_bytes(m);
    CHECK_EQ_U64(memblist_add(m, 5, ML_ENTRY(301, false, 9)), 0);
    CHECK_EQ_U64(memblist_bytes(m) - b2, 8 + 2 * 2);
    CHECK_EQ_U64(memblist_get(m, 5, &it), 2);
    CHECK_EQ_U64(it.wk, 1);
    CHECK_EQ_U64(it.wv, 1);
    /* A key below the base and a wider value: re-encoded. */
    b3 = memblist_bytes(m);
    CHECK_EQ_U64(memblist_add(m, 5, ML_ENTRY(10, true, 70000)), 0);
    CHECK_EQ_U64(memblist_get(m, 5, &it), 3);
    CHECK_EQ_U64(it.base, 10);
    CHECK_EQ_U64(it.wk, 2); /* (301 - 10) << 1 | 1 */
    CHECK_EQ_U64(it.wv, 3);
    CHECK_EQ_U64(memblist_bytes(m) - b3, 3 * 5 - 2 * 2);
    CHECK_EQ_U64(ml_at(&it, 0), ML_ENTRY(10, true, 70000));
    CHECK_EQ_U64(ml_at(&it, 1), ML_ENTRY(300, false, 7));
    CHECK_EQ_U64(ml_at(&it, 2), ML_ENTRY(301, false, 9));
    /* A value too wide for the record: set re-encodes; fit makes room. */
    CHECK_EQ_U64(memblist_set(m, 5, ML_ENTRY(300, true, 0x12345678u)), 0);
    CHECK(memblist_lookup(m, 5, 300, &got));
    CHECK_EQ_U64(got, ML_ENTRY(300, true, 0x12345678u));
    CHECK_EQ_U64(memblist_get(m, 5, &it), 3);
    CHECK_EQ_U64(it.wv, 4);
    CHECK_EQ_U64(memblist_fit(m, 5, UINT32_MAX), 0);
    CHECK_EQ_U64(memblist_edit(m, 5, &it), 3);
    memblist_put_at(&it, 2, ML_ENTRY(301, true, UINT32_MAX));
    CHECK(memblist_lookup(m, 5, 301, &got));
    CHECK_EQ_U64(got, ML_ENTRY(301, true, UINT32_MAX));
    /* Deletes keep the widths, and two back to one goes inline. */
    CHECK(memblist_del(m, 5, 10));
    CHECK(!memblist_del(m, 5, 10));
    CHECK_EQ_U64(memblist_get(m, 5, &it), 2);
    CHECK_EQ_U64(it.wv, 4);
    CHECK_EQ_U64(ml_at(&it, 0), ML_ENTRY(300, true, 0x12345678u));
    CHECK_EQ_U64(ml_at(&it, 1), ML_ENTRY(301, true, UINT32_MAX));
    CHECK(memblist_del(m, 5, 301));
    CHECK_EQ_U64(memblist_get(m, 5, &it), 1);
    CHECK(it.k == NULL);
    CHECK_EQ_U64(memblist_bytes(m), b2);
    CHECK_EQ_U64(memblist_audit(m, no_check, NULL), 0);
    CHECK_EQ_U64(memblist_entries(m), 1);
    CHECK_EQ_U64(memblist_users(m), 1);
    CHECK_EQ_U64(memblist_del_user(m, 5), 1);
    CHECK_EQ_U64(memblist_bytes(m), empty);
    /* The widest key spread. */
    CHECK_EQ_U64(memblist_add(m, 6, ML_ENTRY(0, false, 0)), 0);
    CHECK_EQ_U64(memblist_add(m, 6, ML_ENTRY((1u << 30) - 1, true, 1)), 0);
    CHECK_EQ_U64(memblist_get(m, 6, &it), 2);
    CHECK_EQ_U64(it.wk, 4);
    CHECK_EQ_U64(ml_at(&it, 1), ML_ENTRY((1u << 30) - 1, true, 1));
    CHECK_EQ_U64(memblist_audit(m, no_check, NULL), 0);
    memblist_destroy(m);
}

static void test_audit_calls_the_check(void)
{
    struct memblist *m = memblist_create(NULL);
    uint32_t limit = 50;

    memblist_add(m, 1, ML_ENTRY(10, false, 0));
    memblist_add(m, 2, ML_ENTRY(20, false, 0));
    memblist_add(m, 2, ML_ENTRY(60, false, 0));
    CHECK_EQ_U64(memblist_audit(m, key_below, &limit), 1);
    limit = 61;
    CHECK_EQ_U64(memblist_audit(m, key_below, &limit), 0);
    memblist_destroy(m);
}

/* The model: per user and key slot, present or not, the flag and value. */
#define M_USERS 16
#define M_KEYS 24

/* Key slot k's key: small, spread over 16 bits, or over all 30, by the
 * user (so records see every key width). */
static uint32_t key_of(unsigned u, unsigned k)
{
    switch (u % 3) {
    case 0:
        return 100 + k;
    case 1:
        return k * 2000;
    default:
        return k * ((1u << 30) / M_KEYS);
    }
}

/* A value of a random width. */
static uint32_t rand_val(void)
{
    unsigned bits = 1 + (unsigned)(t_rng() % 32);

    return (uint32_t)(t_rng() & (UINT32_MAX >> (32 - bits)));
}

static void test_random_vs_model(void)
{
    static bool has[M_USERS][M_KEYS], flag[M_USERS][M_KEYS];
    static uint32_t val[M_USERS][M_KEYS];
    struct memblist *m = memblist_create(NULL);
    size_t bad = 0, entries = 0;

    for (unsigned step = 0; step < 200000; step++) {
        unsigned u = (unsigned)(t_rng() % M_USERS);
        /* Low users use few keys: short lists crossing inline/record. */
        unsigned k = (unsigned)(t_rng() % (u < 8 ? 1 + u : M_KEYS));
        uint32_t v = rand_val(), key = key_of(u, k);
        bool f = t_rng() % 2;
        unsigned r = (unsigned)(t_rng() % 5);
        uint64_t got;

        if (t_rng() % 64 == 0) { /* the whole list (expiry, USER.DEL) */
            uint32_t n = 0;

            for (unsigned j = 0; j < M_KEYS; j++) {
                n += has[u][j];
                has[u][j] = false;
            }
            bad += memblist_del_user(m, u) != n;
            entries -= n;
            continue;
        }
        if (r == 0 && !has[u][k]) {
            bad += memblist_add(m, u, ML_ENTRY(key, f, v)) != 0;
            has[u][k] = true;
            flag[u][k] = f;
            val[u][k] = v;
            entries++;
        } else if (r == 1) {
            bad += memblist_del(m, u, key) != has[u][k];
            entries -= has[u][k];
            has[u][k] = false;
        } else if (r == 2) {
            int rc = memblist_set(m, u, ML_ENTRY(key, f, v));

            bad += rc != (has[u][k] ? 0 : 1);
            if (has[u][k]) {
                flag[u][k] = f;
                val[u][k] = v;
            }
        } else if (r == 3) { /* every value at once, as GRP.SEENALL */
            struct ml_iter it;
            uint32_t n, i = 0;

            bad += memblist_fit(m, u, v) != 0;
            n = memblist_edit(m, u, &it);
            for (unsigned j = 0; j < M_KEYS; j++) {
                if (!has[u][j])
                    continue;
                bad += i >= n || ml_key(ml_at(&it, i)) != key_of(u, j);
                if (i < n)
                    memblist_put_at(
                        &it, i,
                        ML_ENTRY(key_of(u, j), flag[u][j], v >> (j % 4)));
                val[u][j] = v >> (j % 4);
                i++;
            }
            if (i != n)
                bad++;
            bad += memblist_fit(m, u, v) != 0; /* fits already */
        } else {
            bool found = memblist_lookup(m, u, key, &got);

            bad += found != has[u][k];
            bad += found && got != ML_ENTRY(key, flag[u][k], val[u][k]);
        }
        if (step % 20000 == 0)
            bad += memblist_audit(m, no_check, NULL);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(memblist_entries(m), entries);
    for (unsigned u = 0; u < M_USERS; u++) {
        struct ml_iter it;
        uint32_t n = memblist_get(m, u, &it), i = 0;
        uint64_t run[M_KEYS];

        /* Runs decoded at once, from every start, agree with ml_at. */
        for (uint32_t from = 0; from < n; from++) {
            memblist_decode(&it, from, n - from, run);
            for (uint32_t j = from; j < n; j++)
                bad += run[j - from] != ml_at(&it, j);
        }

        for (unsigned k = 0; k < M_KEYS; k++) {
            if (!has[u][k])
                continue;
            bad += i >= n || ml_at(&it, i) !=
                                 ML_ENTRY(key_of(u, k), flag[u][k], val[u][k]);
            i++;
        }
        bad += i != n;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(memblist_audit(m, no_check, NULL), 0);
    memblist_destroy(m);
}

int main(void)
{
    T_RUN(test_transitions);
    T_RUN(test_audit_calls_the_check);
    T_RUN(test_random_vs_model);
    T_END();
}
