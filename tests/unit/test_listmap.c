/*
 * test_listmap.c - listmap: the inline <-> record transitions, lookups and
 * in-place edits, the byte accounting, the audit catching a caller's bad
 * entry, and a randomized run against a presence/payload array model.
 */
#include "listmap.h"
#define T_RNG_SEED 0x2545f4914f6cdd1dULL
#include "t.h"

#include <stdbool.h>
#include <stdlib.h>

#define KEYBITS 16
#define SHIFT (64 - KEYBITS)

static uint64_t entry(uint64_t key, uint64_t payload)
{
    return key << SHIFT | payload << 1 | 1;
}

static uint64_t payload_of(uint64_t e)
{
    return (e & ((UINT64_C(1) << SHIFT) - 1)) >> 1;
}

static size_t no_check(uint64_t e, const void *ctx)
{
    (void)e;
    (void)ctx;
    return 0;
}

static size_t key_below(uint64_t e, const void *ctx)
{
    return (e >> SHIFT) >= *(const uint64_t *)ctx;
}

static void test_transitions(void)
{
    struct listmap *m = listmap_create(NULL, KEYBITS);
    const uint64_t *e;
    uint64_t one, got, *w;
    size_t empty_bytes = listmap_bytes(m);

    CHECK(m != NULL);
    CHECK(listmap_create(NULL, 0) == NULL);
    CHECK(listmap_create(NULL, 63) == NULL);
    CHECK_EQ_U64(listmap_get(m, 5, &e, &one), 0);
    CHECK(!listmap_lookup(m, 5, 1, &got));
    CHECK(listmap_find(m, 5, 1) == NULL);
    CHECK(!listmap_del(m, 5, 1));

    /* One entry: inline, no record bytes beyond the map slot. */
    CHECK_EQ_U64(listmap_add(m, 5, entry(30, 7)), 0);
    CHECK_EQ_U64(listmap_get(m, 5, &e, &one), 1);
    CHECK_EQ_U64(e[0], entry(30, 7));
    CHECK_EQ_U64(listmap_users(m), 1);
    /* Two and three, inserted before, after and between. */
    CHECK_EQ_U64(listmap_add(m, 5, entry(10, 1)), 0);
    CHECK_EQ_U64(listmap_add(m, 5, entry(20, 2)), 0);
    CHECK_EQ_U64(listmap_add(m, 5, entry(40, 3)), 0);
    CHECK_EQ_U64(listmap_get(m, 5, &e, &one), 4);
    CHECK_EQ_U64(e[0] >> SHIFT, 10);
    CHECK_EQ_U64(e[1] >> SHIFT, 20);
    CHECK_EQ_U64(e[2] >> SHIFT, 30);
    CHECK_EQ_U64(e[3] >> SHIFT, 40);
    CHECK_EQ_U64(listmap_entries(m), 4);
    CHECK(listmap_bytes(m) > empty_bytes);
    /* Payload edits in place. */
    w = listmap_find(m, 5, 20);
    CHECK(w != NULL);
    *w = entry(20, 99);
    CHECK(listmap_lookup(m, 5, 20, &got));
    CHECK_EQ_U64(payload_of(got), 99);
    CHECK(!listmap_lookup(m, 5, 25, &got));
    /* Back down: 4 -> 3 -> 2 -> 1 (inline again) -> 0 (no entry). */
    CHECK(listmap_del(m, 5, 10));
    CHECK(!listmap_del(m, 5, 10));
    CHECK(listmap_del(m, 5, 40));
    CHECK(listmap_del(m, 5, 30));
    CHECK_EQ_U64(listmap_get(m, 5, &e, &one), 1);
    CHECK_EQ_U64(e[0], entry(20, 99));
    CHECK_EQ_U64(listmap_audit(m, no_check, NULL), 0);
    CHECK(listmap_del(m, 5, 20));
    CHECK_EQ_U64(listmap_users(m), 0);
    CHECK_EQ_U64(listmap_entries(m), 0);
    CHECK_EQ_U64(listmap_audit(m, no_check, NULL), 0);
    listmap_destroy(m);
    listmap_destroy(NULL);
}

static void test_audit_calls_the_check(void)
{
    struct listmap *m = listmap_create(NULL, KEYBITS);
    uint64_t limit = 50;

    listmap_add(m, 1, entry(10, 0));
    listmap_add(m, 2, entry(20, 0));
    listmap_add(m, 2, entry(60, 0));
    CHECK_EQ_U64(listmap_audit(m, key_below, &limit), 1);
    limit = 61;
    CHECK_EQ_U64(listmap_audit(m, key_below, &limit), 0);
    listmap_destroy(m);
}

/* The model: per user and key, present or not and the payload. */
#define M_USERS 16
#define M_KEYS 24

static void test_random_vs_model(void)
{
    static bool has[M_USERS][M_KEYS];
    static uint64_t pay[M_USERS][M_KEYS];
    struct listmap *m = listmap_create(NULL, KEYBITS);
    size_t bad = 0, entries = 0;

    for (unsigned step = 0; step < 200000; step++) {
        unsigned u = (unsigned)(t_rng() % M_USERS);
        /* Low users use few keys, so their lists stay short and cross
         * the inline/record boundary often. */
        unsigned k = (unsigned)(t_rng() % (u < 8 ? 1 + u : M_KEYS));
        uint64_t p = t_rng() % 1000, got, *w;
        unsigned r = (unsigned)(t_rng() % 4);

        if (t_rng() % 64 == 0) { /* the whole list (expiry, USER.DEL) */
            uint32_t n = 0;

            for (unsigned j = 0; j < M_KEYS; j++) {
                n += has[u][j];
                has[u][j] = false;
            }
            bad += listmap_del_user(m, u) != n;
            entries -= n;
            continue;
        }
        if (r == 0 && !has[u][k]) {
            bad += listmap_add(m, u, entry(k, p)) != 0;
            has[u][k] = true;
            pay[u][k] = p;
            entries++;
        } else if (r == 1) {
            bad += listmap_del(m, u, k) != has[u][k];
            entries -= has[u][k];
            has[u][k] = false;
        } else if (r == 2 && has[u][k]) {
            w = listmap_find(m, u, k);
            bad += w == NULL;
            if (w != NULL)
                *w = entry(k, p);
            pay[u][k] = p;
        } else {
            bool found = listmap_lookup(m, u, k, &got);

            bad += found != has[u][k];
            bad += found && payload_of(got) != pay[u][k];
        }
        if (step % 20000 == 0)
            bad += listmap_audit(m, no_check, NULL);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(listmap_entries(m), entries);
    /* Whole lists, in order. */
    for (unsigned u = 0; u < M_USERS; u++) {
        const uint64_t *e;
        uint64_t one;
        uint32_t n = listmap_get(m, u, &e, &one), i = 0;

        for (unsigned k = 0; k < M_KEYS; k++) {
            if (!has[u][k])
                continue;
            bad += i >= n || e[i] != entry(k, pay[u][k]);
            i++;
        }
        bad += i != n;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(listmap_audit(m, no_check, NULL), 0);
    listmap_destroy(m);
}

int main(void)
{
    T_RUN(test_transitions);
    T_RUN(test_audit_calls_the_check);
    T_RUN(test_random_vs_model);
    T_END();
}
