/*
 * test_cnt.c - CNT: every call, the inline <-> record transitions, the
 * limits (saturation, floor), and a long randomized run against a plain
 * array model.
 */
#include "cnt.h"
#include "notice.h"
#include "t.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* White-box: the largest values the inline forms hold (see cnt.c). */
#define INLINE_VMAX ((UINT32_C(1) << 25) - 1)  /* one or two types */
#define INLINE3_VMAX ((UINT32_C(1) << 14) - 1) /* three types */

static void test_empty(void)
{
    struct cnt_store *s = cnt_create();
    uint8_t types[CNT_TYPES];
    uint32_t vals[CNT_TYPES], v = 1;
    uint64_t t = 1;

    CHECK(s != NULL);
    CHECK_EQ_U64(cnt_entries(s), 0);
    CHECK_EQ_U64(cnt_get(s, 42, 0), 0);
    CHECK_EQ_U64(cnt_total(s, 42), 0);
    CHECK_EQ_U64(cnt_getall(s, 42, types, vals), 0);
    CHECK_EQ_U64(cnt_clear(s, 42, UINT64_MAX), 0);
    /* Decrementing or setting 0 on nothing creates nothing. */
    CHECK_EQ_U64(cnt_decr(s, 42, 3, 5, &v, &t), 0);
    CHECK_EQ_U64(v, 0);
    CHECK_EQ_U64(t, 0);
    CHECK_EQ_U64(cnt_set(s, 42, 3, 0, &v, &t), 0);
    CHECK_EQ_U64(cnt_incr(s, 42, 3, 0, &v, &t), 0);
    CHECK_EQ_U64(cnt_entries(s), 0);
    /* Out-of-range type: refused, nothing stored. */
    CHECK_EQ_U64(cnt_incr(s, 42, CNT_TYPES, 1, &v, &t), -1);
    CHECK_EQ_U64(cnt_set(s, 42, 200, 1, &v, &t), -1);
    CHECK_EQ_U64(cnt_decr(s, 42, 64, 1, &v, &t), -1);
    CHECK_EQ_U64(cnt_get(s, 42, 64), 0);
    CHECK_EQ_U64(cnt_entries(s), 0);
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_destroy(s);
    cnt_destroy(NULL);
}

static void test_basic(void)
{
    struct cnt_store *s = cnt_create();
    uint8_t types[CNT_TYPES];
    uint32_t vals[CNT_TYPES], v;
    uint64_t t;

    CHECK_EQ_U64(cnt_incr(s, 7, 1, 1, &v, &t), 0);
    CHECK_EQ_U64(v, 1);
    CHECK_EQ_U64(t, 1);
    CHECK_EQ_U64(cnt_incr(s, 7, 1, 4, &v, &t), 0);
    CHECK_EQ_U64(v, 5);
    CHECK_EQ_U64(t, 5);
    CHECK_EQ_U64(cnt_incr(s, 7, 0, 2, &v, &t), 0);
    CHECK_EQ_U64(v, 2);
    CHECK_EQ_U64(t, 7);
    CHECK_EQ_U64(cnt_set(s, 7, 63, 10, &v, &t), 0);
    CHECK_EQ_U64(v, 10);
    CHECK_EQ_U64(t, 17);
    CHECK_EQ_U64(cnt_decr(s, 7, 1, 2, &v, &t), 0);
    CHECK_EQ_U64(v, 3);
    CHECK_EQ_U64(t, 15);
    CHECK_EQ_U64(cnt_get(s, 7, 0), 2);
    CHECK_EQ_U64(cnt_get(s, 7, 1), 3);
    CHECK_EQ_U64(cnt_get(s, 7, 2), 0);
    CHECK_EQ_U64(cnt_get(s, 7, 63), 10);
    CHECK_EQ_U64(cnt_total(s, 7), 15);
    CHECK_EQ_U64(cnt_getall(s, 7, types, vals), 3);
    CHECK_EQ_U64(types[0], 0);
    CHECK_EQ_U64(vals[0], 2);
    CHECK_EQ_U64(types[1], 1);
    CHECK_EQ_U64(vals[1], 3);
    CHECK_EQ_U64(types[2], 63);
    CHECK_EQ_U64(vals[2], 10);
    /* Other users are independent, uid 0 and UINT64_MAX included. */
    CHECK_EQ_U64(cnt_incr(s, 0, 1, 9, &v, &t), 0);
    CHECK_EQ_U64(cnt_incr(s, UINT64_MAX, 1, 8, &v, &t), 0);
    CHECK_EQ_U64(cnt_get(s, 0, 1), 9);
    CHECK_EQ_U64(cnt_get(s, UINT64_MAX, 1), 8);
    CHECK_EQ_U64(cnt_get(s, 7, 1), 3);
    CHECK_EQ_U64(cnt_entries(s), 3);
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_destroy(s);
}

/* Records are visible through cnt_bytes: inline users cost no extra. */
static void test_transitions(void)
{
    struct cnt_store *s = cnt_create();
    uint8_t types[CNT_TYPES];
    uint32_t vals[CNT_TYPES], v;
    uint64_t t;
    size_t base;

    cnt_incr(s, 1, 5, 1, &v, &t);
    base = cnt_bytes(s);
    cnt_incr(s, 1, 2, 1, &v, &t); /* two types: inline */
    CHECK_EQ_U64(cnt_bytes(s), base);
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_incr(s, 1, 9, 1, &v, &t); /* three small ones: still inline */
    CHECK_EQ_U64(cnt_bytes(s), base);
    CHECK_EQ_U64(t, 3);
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_incr(s, 1, 0, 1, &v, &t); /* four: record */
    CHECK(cnt_bytes(s) > base);
    CHECK_EQ_U64(cnt_getall(s, 1, types, vals), 4);
    CHECK(types[0] == 0 && types[1] == 2 && types[2] == 5 && types[3] == 9);
    CHECK_EQ_U64(t, 4);
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_decr(s, 1, 5, 1, &v, &t); /* three: inline again */
    CHECK_EQ_U64(cnt_bytes(s), base);
    CHECK_EQ_U64(cnt_get(s, 1, 0), 1);
    CHECK_EQ_U64(cnt_get(s, 1, 9), 1);
    CHECK_EQ_U64(cnt_audit(s), 0);

    /* Three types hold 14-bit values inline; one more and it is a record. */
    cnt_set(s, 1, 9, INLINE3_VMAX, &v, &t);
    CHECK_EQ_U64(cnt_bytes(s), base);
    CHECK_EQ_U64(cnt_get(s, 1, 9), INLINE3_VMAX);
    cnt_incr(s, 1, 9, 1, &v, &t);
    CHECK_EQ_U64(v, INLINE3_VMAX + 1);
    CHECK(cnt_bytes(s) > base);
    CHECK_EQ_U64(t, INLINE3_VMAX + 1 + 2);
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_decr(s, 1, 0, 100, &v, &t); /* two types: the wide form fits */
    CHECK_EQ_U64(v, 0);
    CHECK_EQ_U64(t, INLINE3_VMAX + 1 + 1);
    CHECK_EQ_U64(cnt_bytes(s), base);
    CHECK_EQ_U64(cnt_getall(s, 1, types, vals), 2);
    CHECK(types[0] == 2 && types[1] == 9);
    CHECK(vals[0] == 1 && vals[1] == INLINE3_VMAX + 1);
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_set(s, 1, 63, 1, &v, &t); /* three again, one value too wide */
    CHECK(cnt_bytes(s) > base);
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_clear(s, 1, UINT64_C(1) << 63);
    CHECK_EQ_U64(cnt_bytes(s), base);

    /* A value too wide for a pair forces a record, even alone. */
    cnt_set(s, 1, 2, INLINE_VMAX, &v, &t);
    CHECK_EQ_U64(cnt_bytes(s), base);
    CHECK_EQ_U64(t, (uint64_t)INLINE_VMAX + INLINE3_VMAX + 1);
    cnt_clear(s, 1, UINT64_C(1) << 9);
    cnt_incr(s, 1, 2, 1, &v, &t);
    CHECK_EQ_U64(v, (uint64_t)INLINE_VMAX + 1);
    CHECK_EQ_U64(t, (uint64_t)INLINE_VMAX + 1);
    CHECK(cnt_bytes(s) > base); /* one type, but a wide value */
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_decr(s, 1, 2, 1, &v, &t);
    CHECK_EQ_U64(cnt_bytes(s), base); /* fits again: inline */
    CHECK_EQ_U64(cnt_get(s, 1, 2), INLINE_VMAX);
    CHECK_EQ_U64(cnt_audit(s), 0);

    /* Record with many types cleared in one go back to inline. */
    for (unsigned ty = 0; ty < CNT_TYPES; ty++)
        cnt_set(s, 1, ty, ty + 1, &v, &t);
    CHECK_EQ_U64(t, 64 * 65 / 2);
    CHECK_EQ_U64(cnt_getall(s, 1, types, vals), 64);
    CHECK(types[63] == 63 && vals[63] == 64 && types[0] == 0 && vals[0] == 1);
    CHECK_EQ_U64(cnt_audit(s), 0);
    CHECK_EQ_U64(cnt_clear(s, 1, ~(UINT64_C(1) << 40 | UINT64_C(1) << 3)),
                 41 + 4);
    CHECK_EQ_U64(cnt_bytes(s), base);
    CHECK_EQ_U64(cnt_getall(s, 1, types, vals), 2);
    CHECK(types[0] == 3 && types[1] == 40);
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_destroy(s);
}

static void test_limits(void)
{
    struct cnt_store *s = cnt_create();
    uint32_t v;
    uint64_t t;

    cnt_set(s, 5, 1, UINT32_MAX - 1, &v, &t);
    CHECK_EQ_U64(cnt_incr(s, 5, 1, 5, &v, &t), 0);
    CHECK_EQ_U64(v, UINT32_MAX);
    CHECK_EQ_U64(cnt_incr(s, 5, 2, UINT64_MAX, &v, &t), 0);
    CHECK_EQ_U64(v, UINT32_MAX);
    /* The total is 64-bit: two saturated parts do not wrap. */
    CHECK_EQ_U64(t, 2 * (uint64_t)UINT32_MAX);
    CHECK_EQ_U64(cnt_total(s, 5), 2 * (uint64_t)UINT32_MAX);
    CHECK_EQ_U64(cnt_incr(s, 5, 2, 1, &v, &t), 0);
    CHECK_EQ_U64(v, UINT32_MAX);
    /* Decrement floors at 0; the type then disappears. */
    CHECK_EQ_U64(cnt_decr(s, 5, 1, UINT64_MAX, &v, &t), 0);
    CHECK_EQ_U64(v, 0);
    CHECK_EQ_U64(t, UINT32_MAX);
    CHECK_EQ_U64(cnt_decr(s, 5, 2, (uint64_t)UINT32_MAX + 7, &v, &t), 0);
    CHECK_EQ_U64(v, 0);
    CHECK_EQ_U64(t, 0);
    /* A user whose counters all reach zero holds nothing. */
    CHECK_EQ_U64(cnt_entries(s), 0);
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_destroy(s);
}

static void test_clear_and_vanish(void)
{
    struct cnt_store *s = cnt_create();
    size_t empty = cnt_bytes(s);
    uint32_t v;
    uint64_t t;

    for (uint64_t uid = 100; uid < 200; uid++) {
        cnt_incr(s, uid, 0, 1, &v, &t);
        cnt_incr(s, uid, 4, uid, &v, &t);
        if (uid % 2) { /* odd users: four types, records */
            cnt_incr(s, uid, 6, 2, &v, &t);
            cnt_incr(s, uid, 7, 3, &v, &t);
        }
    }
    CHECK_EQ_U64(cnt_entries(s), 100);
    CHECK(cnt_bytes(s) > empty);
    CHECK_EQ_U64(cnt_clear(s, 101, UINT64_C(1) << 4), 6);
    CHECK_EQ_U64(cnt_clear(s, 101, UINT64_C(1) << 33), 6); /* no such type */
    CHECK_EQ_U64(cnt_clear(s, 102, 0), 103);               /* empty mask */
    CHECK_EQ_U64(cnt_clear(s, 103, UINT64_MAX), 0);
    CHECK_EQ_U64(cnt_get(s, 103, 0), 0);
    CHECK_EQ_U64(cnt_entries(s), 99);
    CHECK_EQ_U64(cnt_audit(s), 0);
    for (uint64_t uid = 100; uid < 200; uid++)
        cnt_clear(s, uid, uid % 3 ? UINT64_MAX : 0xd1);
    CHECK_EQ_U64(cnt_entries(s), 0);
    CHECK_EQ_U64(cnt_bytes(s), empty);
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_destroy(s);
}

struct scan_seen {
    uint64_t sum;   /* of all values visited */
    size_t users;   /* visits */
    size_t bad;     /* visits with unsorted or zero entries */
    uint64_t types; /* union of types seen */
};

static void scan_visit(uint64_t uid, unsigned n, const uint8_t *types,
                       const uint32_t *vals, void *ctx)
{
    struct scan_seen *ss = ctx;

    (void)uid;
    ss->users++;
    ss->bad += n == 0;
    for (unsigned i = 0; i < n; i++) {
        ss->bad += vals[i] == 0 || (i > 0 && types[i] <= types[i - 1]);
        ss->sum += vals[i];
        ss->types |= UINT64_C(1) << types[i];
    }
}

static void test_scan(void)
{
    struct cnt_store *s = cnt_create();
    struct scan_seen ss = {0, 0, 0, 0};
    uint64_t cursor = 0, want = 0;
    uint32_t v;
    uint64_t t;
    size_t calls = 0;

    for (uint64_t uid = 0; uid < 5000; uid++) {
        unsigned k = (unsigned)(uid % 5);

        for (unsigned j = 0; j <= k; j++) {
            cnt_incr(s, uid * 7919, (unsigned)(uid + j * 13) % 64, uid + j + 1,
                     &v, &t);
            want += uid + j + 1;
        }
    }
    do {
        cnt_scan(s, &cursor, 64, scan_visit, &ss);
        calls++;
    } while (cursor != 0 && calls < 100000);
    CHECK_EQ_U64(cursor, 0);
    CHECK_EQ_U64(ss.users, 5000);
    CHECK_EQ_U64(ss.sum, want);
    CHECK_EQ_U64(ss.bad, 0);
    CHECK_EQ_U64(ss.types, UINT64_MAX);
    cnt_destroy(s);
}

/* Values drawn to cross the inline limits and saturation often. */
static uint64_t rand_amount(void)
{
    switch (t_rng() % 18) {
    case 16:
        return INLINE3_VMAX - t_rng() % 3;
    case 17:
        return INLINE3_VMAX + 1 + t_rng() % 3;
    case 0:
        return INLINE_VMAX - t_rng() % 3;
    case 1:
        return (uint64_t)INLINE_VMAX + 1 + t_rng() % 3;
    case 2:
        return UINT32_MAX - t_rng() % 3;
    case 3:
        return t_rng() >> (t_rng() % 64);
    default:
        return t_rng() % 5;
    }
}

static unsigned rand_type(void)
{
    /* Mostly a few hot types, so users hover around two types. */
    return (unsigned)(t_rng() % 4 ? t_rng() % 4 : t_rng() % CNT_TYPES);
}

/*
 * ~200k operations over 1000 users x 64 types against uint32_t model[][],
 * checking every reply, and every value, total and the audit periodically.
 */
static void test_random_vs_model(void)
{
    enum { USERS = 1000, OPS = 200000 };
    static uint32_t model[USERS][CNT_TYPES];
    uint64_t uids[USERS];
    struct cnt_store *s = cnt_create();
    size_t bad = 0, audits = 0, checks = 0;
    uint8_t types[CNT_TYPES];
    uint32_t vals[CNT_TYPES];

    memset(model, 0, sizeof(model));
    for (size_t i = 0; i < USERS; i++)
        uids[i] = i < 2 ? (i ? UINT64_MAX : 0) : t_rng();

    for (size_t op = 0; op < OPS; op++) {
        size_t i = t_rng() % USERS;
        unsigned ty = rand_type(), r = (unsigned)(t_rng() % 100);
        uint64_t amount = rand_amount(), mt = 0, t = ~0ULL;
        uint32_t *cell = &model[i][ty], v = ~0u;
        bool mutated = true;

        if (r < 45) {
            uint64_t sum = (uint64_t)*cell + amount;

            *cell = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
            bad += cnt_incr(s, uids[i], ty, amount, &v, &t) != 0;
        } else if (r < 75) {
            *cell = amount >= *cell ? 0 : *cell - (uint32_t)amount;
            bad += cnt_decr(s, uids[i], ty, amount, &v, &t) != 0;
        } else if (r < 85) {
            *cell = (uint32_t)amount;
            bad += cnt_set(s, uids[i], ty, (uint32_t)amount, &v, &t) != 0;
        } else if (r < 90) {
            uint64_t mask = t_rng() % 4 ? t_rng() & t_rng() : UINT64_MAX;

            for (unsigned k = 0; k < CNT_TYPES; k++)
                if (mask >> k & 1)
                    model[i][k] = 0;
            t = cnt_clear(s, uids[i], mask);
            v = *cell;
        } else {
            mutated = false;
            bad += cnt_get(s, uids[i], ty) != *cell;
            bad += cnt_getall(s, uids[i], types, vals) > CNT_TYPES;
        }
        for (unsigned k = 0; k < CNT_TYPES; k++)
            mt += model[i][k];
        if (mutated) {
            bad += v != *cell;
            bad += t != mt;
        }
        bad += cnt_total(s, uids[i]) != mt;
        checks++;

        if (op % 10000 == 0 || op == OPS - 1) {
            size_t users = 0;

            for (size_t u = 0; u < USERS; u++) {
                unsigned n = cnt_getall(s, uids[u], types, vals), j = 0;
                uint64_t sum = 0;

                for (unsigned k = 0; k < CNT_TYPES; k++) {
                    bad += cnt_get(s, uids[u], k) != model[u][k];
                    sum += model[u][k];
                    if (model[u][k] != 0) {
                        bad +=
                            j >= n || types[j] != k || vals[j] != model[u][k];
                        j++;
                    }
                }
                bad += j != n;
                bad += cnt_total(s, uids[u]) != sum;
                users += sum != 0;
            }
            bad += cnt_entries(s) != users;
            audits += cnt_audit(s);
        }
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(audits, 0);
    CHECK_EQ_U64(checks, OPS);
    CHECK(cnt_entries(s) > USERS / 2); /* the run kept a populated store */
    cnt_destroy(s);
}

/* Forgetting a user: inline and record forms, other users untouched,
 * bytes back to what they were. */
static void test_del_user(void)
{
    struct cnt_store *s = cnt_create();
    size_t empty = cnt_bytes(s);
    uint32_t v;
    uint64_t t;

    CHECK_EQ_U64(cnt_incr(s, 1, 0, 3, &v, &t), 0);
    for (unsigned type = 0; type < 6; type++) /* a record */
        CHECK_EQ_U64(cnt_incr(s, 2, type, 1u << 20, &v, &t), 0);
    CHECK_EQ_U64(cnt_incr(s, 3, 5, 1, &v, &t), 0);
    CHECK(cnt_forget_user(s, 1));
    CHECK(cnt_forget_user(s, 2));
    CHECK(!cnt_forget_user(s, 2));
    CHECK(!cnt_forget_user(s, 99));
    CHECK_EQ_U64(cnt_total(s, 2), 0);
    CHECK_EQ_U64(cnt_total(s, 3), 1);
    CHECK_EQ_U64(cnt_entries(s), 1);
    CHECK_EQ_U64(cnt_audit(s), 0);
    CHECK(cnt_forget_user(s, 3));
    CHECK_EQ_U64(cnt_bytes(s), empty);
    cnt_destroy(s);
}

/* ---- Notices read once ---------------------------------------------------
 * The scenario of docs/COMMANDS.md: a notice counted twice (a retry, a
 * second sender) counts once; read twice (a retry, a second device), it is
 * taken off once; acknowledged before its increment arrives, the late
 * increment adds nothing. */
static void test_notices_count_once(void)
{
    struct cnt_store *s = cnt_create();
    uint32_t v;
    uint64_t t;

    CHECK_EQ_U64(cnt_incr(s, 7, 1, 2, &v, &t), 0); /* a plain count */
    CHECK_EQ_U64(cnt_incr_notice(s, 7, 0, 1, 1001, &v, &t), 0);
    CHECK_EQ_U64(v, 1);
    CHECK_EQ_U64(t, 3);
    CHECK_EQ_U64(cnt_incr_notice(s, 7, 0, 1, 1001, &v, &t), 0); /* retry */
    CHECK_EQ_U64(v, 1);
    CHECK_EQ_U64(t, 3);
    CHECK_EQ_U64(cnt_incr_notice(s, 7, 0, 5, 1002, &v, &t), 0);
    CHECK_EQ_U64(v, 6);
    CHECK_EQ_U64(cnt_incr_notice(s, 7, 1, 1, 1001, &v, &t), 0); /* own type */
    CHECK_EQ_U64(v, 3);
    CHECK_EQ_U64(t, 9);
    CHECK_EQ_U64(cnt_ack(s, 7, 0, 1002, &v, &t), 0);
    CHECK_EQ_U64(v, 1);
    CHECK_EQ_U64(t, 4);
    CHECK_EQ_U64(cnt_ack(s, 7, 0, 1002, &v, &t), 0); /* second device */
    CHECK_EQ_U64(v, 1);
    CHECK_EQ_U64(t, 4);
    CHECK_EQ_U64(cnt_incr_notice(s, 7, 0, 5, 1002, &v, &t), 0); /* late */
    CHECK_EQ_U64(v, 1);
    CHECK_EQ_U64(cnt_ack(s, 7, 0, 2000, &v, &t), 0); /* ack first */
    CHECK_EQ_U64(cnt_incr_notice(s, 7, 0, 1, 2000, &v, &t), 0);
    CHECK_EQ_U64(v, 1);
    CHECK_EQ_U64(t, 4);
    /* CLEAR settles: the unread notice reads, and a retry adds nothing */
    CHECK_EQ_U64(cnt_clear(s, 7, 1), 3);
    CHECK_EQ_U64(cnt_incr_notice(s, 7, 0, 1, 1001, &v, &t), 0);
    CHECK_EQ_U64(v, 0);
    CHECK_EQ_U64(cnt_ack(s, 7, 0, 1001, &v, &t), 0);
    CHECK_EQ_U64(t, 3);
    /* SET settles its type only */
    CHECK_EQ_U64(cnt_incr_notice(s, 7, 2, 4, 3000, &v, &t), 0);
    CHECK_EQ_U64(cnt_set(s, 7, 2, 10, &v, &t), 0);
    CHECK_EQ_U64(cnt_ack(s, 7, 2, 3000, &v, &t), 0);
    CHECK_EQ_U64(v, 10);
    CHECK_EQ_U64(cnt_ack(s, 7, 1, 1001, &v, &t), 0); /* type 1: unread */
    CHECK_EQ_U64(v, 2);
    /* an ack floors at 0 after a plain DECR took the count */
    CHECK_EQ_U64(cnt_incr_notice(s, 7, 3, 3, 9, &v, &t), 0);
    CHECK_EQ_U64(cnt_decr(s, 7, 3, 2, &v, &t), 0);
    CHECK_EQ_U64(cnt_ack(s, 7, 3, 9, &v, &t), 0);
    CHECK_EQ_U64(v, 0);
    CHECK_EQ_U64(cnt_audit(s), 0);
    CHECK(cnt_forget_user(s, 7));
    CHECK_EQ_U64(notice_entries(cnt_notices(s)), 0);
    CHECK_EQ_U64(cnt_incr_notice(s, 7, 0, 1, 1001, &v, &t), 0); /* new */
    CHECK_EQ_U64(v, 1);
    cnt_destroy(s);
}

/* The bound: NOTICE_MAX ids per (user, type). A full type forgets its
 * oldest read id first; when all are unread, its oldest, which stays
 * counted (an ack of it changes nothing). Other types and users keep
 * theirs. A user without notices costs nothing more. */
static void test_notices_bound(void)
{
    struct cnt_store *s = cnt_create();
    size_t empty = cnt_bytes(s);
    uint32_t v, d;
    uint64_t t;

    CHECK_EQ_U64(cnt_incr(s, 1, 0, 3, &v, &t), 0);
    CHECK_EQ_U64(cnt_incr(s, 1, 1, 4, &v, &t), 0);
    CHECK_EQ_U64(notice_users(cnt_notices(s)), 0);
    CHECK(cnt_bytes(s) > empty);
    CHECK_EQ_U64(cnt_forget_user(s, 1), 1);
    CHECK_EQ_U64(cnt_bytes(s), empty);

    CHECK_EQ_U64(cnt_incr_notice(s, 2, 5, 1, 77, &v, &t), 0); /* type 5 */
    for (uint64_t n = 0; n < NOTICE_MAX; n++)
        CHECK_EQ_U64(cnt_incr_notice(s, 2, 0, 1, n, &v, &t), 0);
    CHECK_EQ_U64(v, NOTICE_MAX);
    CHECK_EQ_U64(cnt_ack(s, 2, 0, 10, &v, &t), 0);
    CHECK_EQ_U64(cnt_ack(s, 2, 0, 20, &v, &t), 0);
    CHECK_EQ_U64(v, NOTICE_MAX - 2);
    /* full: the oldest read one (10) goes, then 20 */
    CHECK_EQ_U64(cnt_incr_notice(s, 2, 0, 1, 1000, &v, &t), 0);
    CHECK(notice_get(cnt_notices(s), 2, 0, 10, &d) == NOTICE_UNKNOWN);
    CHECK(notice_get(cnt_notices(s), 2, 0, 20, &d) == NOTICE_READ);
    CHECK_EQ_U64(cnt_incr_notice(s, 2, 0, 1, 1001, &v, &t), 0);
    CHECK(notice_get(cnt_notices(s), 2, 0, 20, &d) == NOTICE_UNKNOWN);
    /* all unread: the oldest (0) goes and stays counted */
    CHECK_EQ_U64(cnt_incr_notice(s, 2, 0, 1, 1002, &v, &t), 0);
    CHECK_EQ_U64(v, NOTICE_MAX + 1);
    CHECK(notice_get(cnt_notices(s), 2, 0, 0, &d) == NOTICE_UNKNOWN);
    CHECK(notice_get(cnt_notices(s), 2, 0, 1, &d) == NOTICE_UNREAD);
    CHECK_EQ_U64(cnt_ack(s, 2, 0, 0, &v, &t), 0);
    CHECK_EQ_U64(v, NOTICE_MAX + 1);
    CHECK(notice_get(cnt_notices(s), 2, 5, 77, &d) == NOTICE_UNREAD);
    CHECK_EQ_U64(notice_entries(cnt_notices(s)), NOTICE_MAX + 1);
    CHECK_EQ_U64(cnt_audit(s), 0);
    cnt_destroy(s);
}

/*
 * Randomized against a naive model of the documented rules: per (user,
 * type) a counter and the list of remembered notices, oldest first, with
 * the forgetting rule spelled out plainly. Few users, types and ids, so
 * that retries, acks before increments and full types happen all the
 * time; plain INCR/DECR/SET/CLEAR and forgetting users mixed in.
 */
#define NM_USERS 40
#define NM_TYPES 4
#define NM_IDS 150

struct nm_notice {
    uint64_t nid;
    uint32_t delta;
    bool read;
};

struct nm_cell {
    uint32_t value;
    unsigned n;
    struct nm_notice v[NOTICE_MAX];
};

static struct nm_cell nm[NM_USERS][NM_TYPES];

static int nm_find(const struct nm_cell *c, uint64_t nid)
{
    for (unsigned i = 0; i < c->n; i++)
        if (c->v[i].nid == nid)
            return (int)i;
    return -1;
}

static void nm_add(struct nm_cell *c, uint64_t nid, uint32_t delta, bool read)
{
    if (c->n == NOTICE_MAX) {
        unsigned k = 0;
        bool any_read = false;

        for (unsigned i = 0; i < c->n; i++)
            if (c->v[i].read) {
                k = i;
                any_read = true;
                break;
            }
        if (read && !any_read)
            return; /* an early ack never pushes out an unread notice */
        memmove(&c->v[k], &c->v[k + 1], (c->n - k - 1) * sizeof(c->v[0]));
        c->n--;
    }
    c->v[c->n++] = (struct nm_notice){nid, delta, read};
}

static uint64_t nm_total(unsigned u)
{
    uint64_t t = 0;

    for (unsigned k = 0; k < NM_TYPES; k++)
        t += nm[u][k].value;
    return t;
}

static void test_notices_vs_model(void)
{
    enum { OPS = 300000 };
    struct cnt_store *s = cnt_create();
    size_t bad = 0, audits = 0;

    memset(nm, 0, sizeof(nm));
    for (size_t op = 0; op < OPS; op++) {
        unsigned u = (unsigned)(t_rng() % NM_USERS);
        unsigned ty = (unsigned)(t_rng() % NM_TYPES);
        unsigned r = (unsigned)(t_rng() % 100);
        uint64_t nid = t_rng() % NM_IDS, amount = t_rng() % 4, t = 0;
        struct nm_cell *c = &nm[u][ty];
        uint32_t v = 0;
        int at = nm_find(c, nid);

        if (r < 40) {
            if (at < 0) {
                uint64_t room = UINT32_MAX - c->value;
                uint32_t d = amount > room ? (uint32_t)room : (uint32_t)amount;

                c->value += d;
                nm_add(c, nid, d, false);
            }
            bad += cnt_incr_notice(s, u, ty, amount, nid, &v, &t) != 0;
        } else if (r < 75) {
            if (at < 0) {
                nm_add(c, nid, 0, true);
            } else if (!c->v[at].read) {
                uint32_t d = c->v[at].delta;

                c->value = d >= c->value ? 0 : c->value - d;
                c->v[at].read = true;
            }
            bad += cnt_ack(s, u, ty, nid, &v, &t) != 0;
        } else if (r < 83) {
            c->value += (uint32_t)amount;
            bad += cnt_incr(s, u, ty, amount, &v, &t) != 0;
        } else if (r < 90) {
            c->value = amount >= c->value ? 0 : c->value - (uint32_t)amount;
            bad += cnt_decr(s, u, ty, amount, &v, &t) != 0;
        } else if (r < 94) {
            c->value = (uint32_t)amount;
            for (unsigned i = 0; i < c->n; i++)
                c->v[i].read = true;
            bad += cnt_set(s, u, ty, (uint32_t)amount, &v, &t) != 0;
        } else if (r < 98) {
            for (unsigned k = 0; k < NM_TYPES; k++) {
                nm[u][k].value = 0;
                for (unsigned i = 0; i < nm[u][k].n; i++)
                    nm[u][k].v[i].read = true;
            }
            t = cnt_clear(s, u, UINT64_MAX);
            v = 0;
        } else {
            memset(nm[u], 0, sizeof(nm[u]));
            cnt_forget_user(s, u);
            v = 0;
        }
        bad += v != c->value;
        bad += t != nm_total(u) && r < 98;
        bad += cnt_total(s, u) != nm_total(u);
        for (unsigned i = 0; i < c->n; i++) {
            uint32_t d = 0;
            enum notice_state st =
                notice_get(cnt_notices(s), u, ty, c->v[i].nid, &d);

            bad += st != (c->v[i].read ? NOTICE_READ : NOTICE_UNREAD);
            bad += d != c->v[i].delta;
        }
        if (op % 20000 == 0 || op == OPS - 1) {
            size_t held = 0;

            for (unsigned uu = 0; uu < NM_USERS; uu++)
                for (unsigned k = 0; k < NM_TYPES; k++) {
                    held += nm[uu][k].n;
                    bad += cnt_get(s, uu, k) != nm[uu][k].value;
                }
            bad += notice_entries(cnt_notices(s)) != held;
            audits += cnt_audit(s);
        }
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(audits, 0);
    CHECK(notice_entries(cnt_notices(s)) > NM_USERS * NM_TYPES);
    cnt_destroy(s);
}

int main(void)
{
    T_RUN(test_empty);
    T_RUN(test_basic);
    T_RUN(test_transitions);
    T_RUN(test_limits);
    T_RUN(test_clear_and_vanish);
    T_RUN(test_scan);
    T_RUN(test_random_vs_model);
    T_RUN(test_del_user);
    T_RUN(test_notices_count_once);
    T_RUN(test_notices_bound);
    T_RUN(test_notices_vs_model);
    T_END();
}
