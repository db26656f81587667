/*
 * test_conv.c - CONV: the semantics of every operation at its edges
 * (idempotent seqs, monotonic reads, mark-unread, recalls, mute), the
 * storage forms a user moves through (one conversation, array, map) and a
 * conversation's (compact, full record), saturation, memory per entry, the
 * walk, the loaders' conv_put, and a long randomized run against a plain
 * model.
 */
#include "conv.h"
#include "t.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A conv_info of the plain fields, the chat features all zero. */
#define CI(r_, m_, u_, mu_, n_, rec_)                                          \
    ((struct conv_info){.read = (r_),                                          \
                        .max = (m_),                                           \
                        .unread = (u_),                                        \
                        .muted = (mu_),                                        \
                        .nrecall = (n_),                                       \
                        .recall = (rec_)})

/* One mutation that must succeed with the given [unread, total]. */
#define UPD(s, op, uid, cid, arg, want_unread, want_total)                     \
    do {                                                                       \
        uint32_t u_ = 0xdead;                                                  \
        uint64_t t_ = 0xdead;                                                  \
        CHECK_EQ_U64(conv_update(s, op, uid, cid, arg, &u_, &t_), 0);          \
        CHECK_EQ_U64(u_, want_unread);                                         \
        CHECK_EQ_U64(t_, want_total);                                          \
    } while (0)

/* conv_list into flat[]: [cid, unread, ...]; returns the pair count. */
struct flat {
    uint64_t v[2 * 400];
    size_t n;
};

static void flat_add(uint64_t cid, uint32_t unread, void *ctx)
{
    struct flat *f = ctx;

    f->v[2 * f->n] = cid;
    f->v[2 * f->n + 1] = unread;
    f->n++;
}

static size_t list(const struct conv_store *s, uint64_t uid, size_t max,
                   struct flat *f)
{
    size_t n = 0;

    f->n = 0;
    CHECK_EQ_U64(conv_list(s, uid, max, flat_add, f, &n), 0);
    CHECK_EQ_U64(n, f->n);
    return n;
}

static void test_empty(void)
{
    struct conv_store *s = conv_create();
    struct flat f;
    uint32_t u;
    uint64_t t;

    CHECK(s != NULL);
    CHECK_EQ_U64(conv_get(s, 1, 2), 0);
    CHECK_EQ_U64(conv_total(s, 1), 0);
    CHECK_EQ_U64(list(s, 1, 100, &f), 0);
    CHECK_EQ_U64(conv_del(s, 1, 2), 0);
    /* Operations that leave the state all zero store nothing. */
    UPD(s, CONV_OP_SEQ, 1, 2, 0, 0, 0);
    UPD(s, CONV_OP_INCR, 1, 2, 0, 0, 0);
    UPD(s, CONV_OP_READ, 1, 2, 0, 0, 0);
    UPD(s, CONV_OP_READ_ALL, 1, 2, 0, 0, 0);
    UPD(s, CONV_OP_RECALL, 1, 2, 0, 0, 0);
    UPD(s, CONV_OP_MUTE, 1, 2, 0, 0, 0);
    CHECK_EQ_U64(conv_entries(s), 0);
    CHECK_EQ_U64(conv_users(s), 0);
    /* Out-of-range arguments are refused, nothing stored. */
    CHECK_EQ_U64(conv_update(s, CONV_OP_MARKUNREAD, 1, 2, 0, &u, &t),
                 CONV_EINVAL);
    CHECK_EQ_U64(conv_update(s, CONV_OP_MUTE, 1, 2, 2, &u, &t), CONV_EINVAL);
    CHECK_EQ_U64(conv_entries(s), 0);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
    conv_destroy(NULL);
}

static void test_seq_is_idempotent(void)
{
    struct conv_store *s = conv_create();

    UPD(s, CONV_OP_SEQ, 1, 10, 5, 5, 5);
    UPD(s, CONV_OP_SEQ, 1, 10, 5, 5, 5); /* retried */
    UPD(s, CONV_OP_SEQ, 1, 10, 3, 5, 5); /* replayed late */
    UPD(s, CONV_OP_SEQ, 1, 10, 7, 7, 7);
    UPD(s, CONV_OP_SEQ, 1, 11, 2, 2, 9); /* another conversation */
    UPD(s, CONV_OP_SEQ, 2, 10, 1, 1, 1); /* another user */
    CHECK_EQ_U64(conv_get(s, 1, 10), 7);
    CHECK_EQ_U64(conv_total(s, 1), 9);
    CHECK_EQ_U64(conv_entries(s), 3);
    CHECK_EQ_U64(conv_users(s), 2);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

static void test_seq_at_or_below_watermark_adds_nothing(void)
{
    struct conv_store *s = conv_create();

    /* The read raced ahead of the increments: no ghost unread. */
    UPD(s, CONV_OP_READ, 1, 10, 10, 0, 0);
    UPD(s, CONV_OP_SEQ, 1, 10, 8, 0, 0);
    UPD(s, CONV_OP_SEQ, 1, 10, 10, 0, 0);
    UPD(s, CONV_OP_SEQ, 1, 10, 12, 2, 2);
    CHECK_EQ_U64(conv_entries(s), 1);
    conv_destroy(s);
}

static void test_read_is_monotonic(void)
{
    struct conv_store *s = conv_create();

    UPD(s, CONV_OP_SEQ, 1, 10, 10, 10, 10);
    UPD(s, CONV_OP_READ, 1, 10, 6, 4, 4);
    UPD(s, CONV_OP_READ, 1, 10, 3, 4, 4); /* stale: no move back */
    UPD(s, CONV_OP_READ, 1, 10, 6, 4, 4);
    UPD(s, CONV_OP_READ_ALL, 1, 10, 0, 0, 0);
    UPD(s, CONV_OP_SEQ, 1, 10, 12, 2, 2);
    UPD(s, CONV_OP_READ, 1, 10, 11, 1, 1);
    /* Reading past max raises max: the late seqs add nothing. */
    UPD(s, CONV_OP_READ, 1, 10, 20, 0, 0);
    UPD(s, CONV_OP_SEQ, 1, 10, 20, 0, 0);
    UPD(s, CONV_OP_SEQ, 1, 10, 21, 1, 1);
    conv_destroy(s);
}

static void test_markunread_moves_back(void)
{
    struct conv_store *s = conv_create();

    UPD(s, CONV_OP_SEQ, 1, 10, 10, 10, 10);
    UPD(s, CONV_OP_READ_ALL, 1, 10, 0, 0, 0);
    UPD(s, CONV_OP_MARKUNREAD, 1, 10, 8, 3, 3); /* 8, 9, 10 */
    UPD(s, CONV_OP_MARKUNREAD, 1, 10, 10, 1, 1);
    UPD(s, CONV_OP_MARKUNREAD, 1, 10, 2, 9, 9); /* back again */
    UPD(s, CONV_OP_MARKUNREAD, 1, 10, 1, 10, 10);
    /* Past max: the message exists, max follows; its SEQ adds nothing. */
    UPD(s, CONV_OP_MARKUNREAD, 1, 10, 15, 1, 1);
    UPD(s, CONV_OP_SEQ, 1, 10, 15, 1, 1);
    UPD(s, CONV_OP_SEQ, 1, 10, 16, 2, 2);
    /* A fresh conversation: exactly the one message is unread. */
    UPD(s, CONV_OP_MARKUNREAD, 1, 11, 7, 1, 3);
    UPD(s, CONV_OP_READ, 1, 11, 5, 1, 3); /* a stale read stays stale */
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

static void test_recall(void)
{
    struct conv_store *s = conv_create();

    UPD(s, CONV_OP_SEQ, 1, 10, 10, 10, 10);
    UPD(s, CONV_OP_RECALL, 1, 10, 4, 9, 9); /* unread one: once */
    UPD(s, CONV_OP_RECALL, 1, 10, 4, 9, 9); /* twice = once */
    UPD(s, CONV_OP_READ, 1, 10, 5, 5, 5);
    UPD(s, CONV_OP_RECALL, 1, 10, 3, 5, 5); /* a read one: nothing */
    UPD(s, CONV_OP_RECALL, 1, 10, 5, 5, 5); /* at the watermark: read */
    UPD(s, CONV_OP_RECALL, 1, 10, 7, 4, 4);
    /* Above max: remembered, so the message never counts. */
    UPD(s, CONV_OP_RECALL, 1, 10, 12, 4, 4);
    UPD(s, CONV_OP_SEQ, 1, 10, 12, 5, 5); /* 6, 8, 9, 10, 11 */
    UPD(s, CONV_OP_SEQ, 1, 10, 13, 6, 6);
    CHECK_EQ_U64(conv_audit(s), 0);
    /* Reading past the recalls forgets them... */
    UPD(s, CONV_OP_READ_ALL, 1, 10, 0, 0, 0);
    /* ...so moving the watermark back over one counts it again. */
    UPD(s, CONV_OP_MARKUNREAD, 1, 10, 7, 7, 7);
    UPD(s, CONV_OP_RECALL, 1, 10, 7, 6, 6); /* re-recalling fixes it */
    /* Recall in a conversation never seen: remembered, count 0. */
    UPD(s, CONV_OP_RECALL, 1, 11, 3, 0, 6);
    CHECK_EQ_U64(conv_entries(s), 2);
    UPD(s, CONV_OP_SEQ, 1, 11, 5, 4, 10);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

static void test_recall_limit(void)
{
    struct conv_store *s = conv_create();
    uint32_t u;
    uint64_t t, i;

    UPD(s, CONV_OP_SEQ, 1, 10, 5000, 5000, 5000);
    for (i = 1; i <= CONV_RECALL_MAX; i++)
        UPD(s, CONV_OP_RECALL, 1, 10, 2 * i, 5000 - i, 5000 - i);
    CHECK_EQ_U64(conv_update(s, CONV_OP_RECALL, 1, 10, 4001, &u, &t),
                 CONV_ELIMIT);
    CHECK_EQ_U64(conv_get(s, 1, 10), 5000 - CONV_RECALL_MAX);
    /* Recalling a remembered one again is no new memory: fine. */
    UPD(s, CONV_OP_RECALL, 1, 10, 2, 5000 - CONV_RECALL_MAX,
        5000 - CONV_RECALL_MAX);
    /* Reading past some frees room. */
    UPD(s, CONV_OP_READ, 1, 10, 10, 4990 - CONV_RECALL_MAX + 5,
        4990 - CONV_RECALL_MAX + 5);
    UPD(s, CONV_OP_RECALL, 1, 10, 4001, 4990 - CONV_RECALL_MAX + 4,
        4990 - CONV_RECALL_MAX + 4);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

static void test_mute(void)
{
    struct conv_store *s = conv_create();

    UPD(s, CONV_OP_SEQ, 1, 10, 5, 5, 5);
    UPD(s, CONV_OP_SEQ, 1, 11, 3, 3, 8);
    UPD(s, CONV_OP_MUTE, 1, 10, 1, 5, 3); /* keeps its count */
    UPD(s, CONV_OP_MUTE, 1, 10, 1, 5, 3);
    CHECK_EQ_U64(conv_get(s, 1, 10), 5);
    CHECK_EQ_U64(conv_total(s, 1), 3);
    UPD(s, CONV_OP_SEQ, 1, 10, 7, 7, 3);   /* counts on, muted */
    UPD(s, CONV_OP_MUTE, 1, 10, 0, 7, 10); /* back into the total */
    /* Muting a conversation never seen: remembered (count 0). */
    UPD(s, CONV_OP_MUTE, 1, 12, 1, 0, 10);
    CHECK_EQ_U64(conv_entries(s), 3);
    UPD(s, CONV_OP_SEQ, 1, 12, 4, 4, 10);
    UPD(s, CONV_OP_READ_ALL, 1, 12, 0, 0, 10);
    /* Unmuted with nothing else left: the state is zero, so it goes. */
    UPD(s, CONV_OP_MUTE, 1, 13, 1, 0, 10);
    UPD(s, CONV_OP_MUTE, 1, 13, 0, 0, 10);
    CHECK_EQ_U64(conv_entries(s), 3);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

static void test_del(void)
{
    struct conv_store *s = conv_create();

    UPD(s, CONV_OP_SEQ, 1, 10, 5, 5, 5);
    UPD(s, CONV_OP_SEQ, 1, 11, 3, 3, 8);
    UPD(s, CONV_OP_RECALL, 1, 11, 2, 2, 7);
    CHECK_EQ_U64(conv_del(s, 1, 11), 5);
    CHECK_EQ_U64(conv_del(s, 1, 11), 5); /* absent: just the total */
    CHECK_EQ_U64(conv_get(s, 1, 11), 0);
    /* Deleted means forgotten: its seqs count afresh. */
    UPD(s, CONV_OP_SEQ, 1, 11, 3, 3, 8);
    CHECK_EQ_U64(conv_del(s, 1, 11), 5);
    CHECK_EQ_U64(conv_del(s, 1, 10), 0);
    CHECK_EQ_U64(conv_users(s), 0);
    CHECK_EQ_U64(conv_entries(s), 0);
    CHECK_EQ_U64(conv_del(s, 9, 9), 0);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

static void test_list(void)
{
    struct conv_store *s = conv_create();
    struct flat f;

    UPD(s, CONV_OP_SEQ, 1, 30, 3, 3, 3);
    UPD(s, CONV_OP_SEQ, 1, 10, 1, 1, 4);
    UPD(s, CONV_OP_SEQ, 1, 20, 2, 2, 6);
    UPD(s, CONV_OP_READ_ALL, 1, 20, 0, 0, 4); /* zero: not listed */
    UPD(s, CONV_OP_SEQ, 1, UINT64_MAX, 9, 9, 13);
    UPD(s, CONV_OP_MUTE, 1, UINT64_MAX, 1, 9, 4); /* muted: listed */
    UPD(s, CONV_OP_MUTE, 1, 0, 1, 0, 4);
    CHECK_EQ_U64(list(s, 1, 100, &f), 3);
    CHECK_EQ_U64(f.v[0], 10);
    CHECK_EQ_U64(f.v[1], 1);
    CHECK_EQ_U64(f.v[2], 30);
    CHECK_EQ_U64(f.v[3], 3);
    CHECK_EQ_U64(f.v[4], UINT64_MAX);
    CHECK_EQ_U64(f.v[5], 9);
    CHECK_EQ_U64(list(s, 1, 2, &f), 2); /* the first two by cid */
    CHECK_EQ_U64(f.v[2], 30);
    CHECK_EQ_U64(list(s, 1, 0, &f), 0);
    CHECK_EQ_U64(list(s, 2, 10, &f), 0);
    /* A user with one conversation. */
    UPD(s, CONV_OP_SEQ, 2, 5, 1, 1, 1);
    CHECK_EQ_U64(list(s, 2, 10, &f), 1);
    CHECK_EQ_U64(f.v[0], 5);
    CHECK_EQ_U64(list(s, 2, 0, &f), 0);
    conv_destroy(s);
}

static void test_incr_and_saturation(void)
{
    struct conv_store *s = conv_create();

    UPD(s, CONV_OP_INCR, 1, 10, 1, 1, 1);
    UPD(s, CONV_OP_INCR, 1, 10, 4, 5, 5);
    UPD(s, CONV_OP_READ_ALL, 1, 10, 0, 0, 0);
    UPD(s, CONV_OP_INCR, 1, 10, 2, 2, 2);
    /* unread saturates at 2^32 - 1; the total is a u64 sum of those. */
    UPD(s, CONV_OP_INCR, 1, 10, UINT64_C(1) << 32, CONV_UNREAD_MAX,
        CONV_UNREAD_MAX);
    UPD(s, CONV_OP_SEQ, 1, 11, UINT64_C(1) << 40, CONV_UNREAD_MAX,
        2 * (uint64_t)CONV_UNREAD_MAX);
    /* max saturates at 2^64 - 1. */
    UPD(s, CONV_OP_INCR, 1, 10, UINT64_MAX, CONV_UNREAD_MAX,
        2 * (uint64_t)CONV_UNREAD_MAX);
    UPD(s, CONV_OP_INCR, 1, 10, 1, CONV_UNREAD_MAX,
        2 * (uint64_t)CONV_UNREAD_MAX);
    UPD(s, CONV_OP_READ_ALL, 1, 10, 0, 0, CONV_UNREAD_MAX);
    UPD(s, CONV_OP_SEQ, 1, 10, UINT64_MAX, 0, CONV_UNREAD_MAX);
    UPD(s, CONV_OP_MARKUNREAD, 1, 10, UINT64_MAX, 1, CONV_UNREAD_MAX + 1ULL);
    /* Recalls below a saturated count: the total moves only with the
     * reported (saturated) values. */
    UPD(s, CONV_OP_RECALL, 1, 11, 5, CONV_UNREAD_MAX, CONV_UNREAD_MAX + 1ULL);
    UPD(s, CONV_OP_READ, 1, 11, (UINT64_C(1) << 40) - 3, 3, 4);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

/* Wide values take the full record and come back to the compact word. */
static void test_wide_values_round_trip(void)
{
    struct conv_store *s = conv_create();
    size_t base;

    UPD(s, CONV_OP_SEQ, 1, 10, 3, 3, 3);
    base = conv_bytes(s);
    UPD(s, CONV_OP_SEQ, 1, 10, 3000000, 3000000, 3000000); /* span >= 2^21 */
    CHECK(conv_bytes(s) > base);
    CHECK_EQ_U64(conv_audit(s), 0);
    UPD(s, CONV_OP_READ, 1, 10, 2999999, 1, 1);
    CHECK_EQ_U64(conv_bytes(s), base);
    UPD(s, CONV_OP_READ, 1, 10, UINT64_C(1) << 50, 0, 0); /* read >= 2^41 */
    CHECK(conv_bytes(s) > base);
    UPD(s, CONV_OP_SEQ, 1, 10, (UINT64_C(1) << 50) + 3, 3, 3);
    CHECK_EQ_U64(conv_audit(s), 0);
    CHECK_EQ_U64(conv_del(s, 1, 10), 0);
    UPD(s, CONV_OP_SEQ, 1, 10, 3, 3, 3);
    CHECK_EQ_U64(conv_bytes(s), base);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

/* A user grows from one conversation through the array to the map and
 * back; totals, order and accounting hold at every size. */
static void test_user_forms(void)
{
    struct conv_store *s = conv_create();
    const uint64_t n = 3 * CONV_SMALL_MAX;
    size_t empty = conv_bytes(s), bad = 0;
    uint64_t total = 0;
    struct flat f;

    for (uint64_t i = 0; i < n; i++) {
        uint64_t cid = (i * 0x9e3779b97f4a7c15ULL) >> 1;

        total += i % 7;
        UPD(s, CONV_OP_INCR, 7, cid, i % 7, i % 7, total);
        if (i % 7 == 0) /* zero unread but remembered: muted */
            UPD(s, CONV_OP_MUTE, 7, cid, 1, 0, total);
        bad += conv_audit(s);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(conv_entries(s), n);
    CHECK_EQ_U64(conv_users(s), 1);
    CHECK_EQ_U64(list(s, 7, 1000, &f), n - (n + 6) / 7);
    for (size_t i = 1; i < f.n; i++)
        bad += f.v[2 * i] <= f.v[2 * i - 2];
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(list(s, 7, 5, &f), 5);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t cid = (i * 0x9e3779b97f4a7c15ULL) >> 1;

        total -= i % 7;
        CHECK_EQ_U64(conv_del(s, 7, cid), total);
        bad += conv_audit(s);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(conv_users(s), 0);
    CHECK_EQ_U64(conv_bytes(s), empty);
    conv_destroy(s);
}

/* Memory per (user, conversation), table overhead included, requested
 * sizes: the store's goal is <= 32 bytes (bench/store_conv.c measures the
 * process at 1M). */
static void test_memory_per_entry(void)
{
    struct conv_store *s = conv_create();

    for (uint64_t u = 0; u < 50000; u++)
        UPD(s, CONV_OP_SEQ, t_rng(), t_rng(), 1 + u % 1000, 1 + u % 1000,
            1 + u % 1000);
    CHECK(conv_bytes(s) < 32 * conv_entries(s));
    conv_destroy(s);
    s = conv_create();
    for (uint64_t u = 0; u < 5000; u++) {
        uint64_t uid = t_rng();

        for (uint64_t c = 0; c < 10; c++)
            UPD(s, CONV_OP_SEQ, uid, t_rng(), 5, 5, 5 * (c + 1));
    }
    CHECK(conv_bytes(s) < 24 * conv_entries(s));
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

struct scan_sum {
    size_t convs;
    uint64_t unread, read, recalls;
};

static void scan_visit(uint64_t uid, uint64_t cid, const struct conv_info *ci,
                       void *ctx)
{
    struct scan_sum *ss = ctx;

    (void)uid;
    (void)cid;
    ss->convs++;
    ss->unread += ci->unread;
    ss->read += ci->read;
    ss->recalls += ci->nrecall;
}

static void test_scan(void)
{
    struct conv_store *s = conv_create();
    struct scan_sum ss = {0, 0, 0, 0};
    uint64_t cursor = 0;

    for (uint64_t u = 1; u <= 300; u++)
        for (uint64_t c = 1; c <= u % 5 + (u == 7 ? 200 : 0); c++)
            UPD(s, CONV_OP_SEQ, u, c, 3, 3, 3 * c);
    UPD(s, CONV_OP_READ, 3, 1, 1, 2, 8);
    UPD(s, CONV_OP_RECALL, 3, 1, 2, 1, 7);
    do
        conv_scan(s, &cursor, 7, scan_visit, &ss);
    while (cursor != 0);
    CHECK_EQ_U64(ss.convs, conv_entries(s));
    CHECK_EQ_U64(ss.unread, 3 * conv_entries(s) - 3 + 1);
    CHECK_EQ_U64(ss.read, 1);
    CHECK_EQ_U64(ss.recalls, 1);
    conv_destroy(s);
}

/* conv_put, the loaders' way in: exact states go in, impossible ones and
 * duplicates are refused with nothing stored. */
static void test_put(void)
{
    struct conv_store *s = conv_create();
    uint64_t rec[] = {5, 7, 40}, many[CONV_RECALL_MAX + 1];
    struct conv_info ok = CI(3, 20, 0, true, 3, rec), ci;
    struct scan_sum ss = {0, 0, 0, 0};
    uint64_t cursor = 0;

    CHECK_EQ_U64(conv_put(s, 1, 10, &ok, 0), 0); /* recall 40 above max */
    CHECK_EQ_U64(conv_get(s, 1, 10), 20 - 3 - 2);
    CHECK_EQ_U64(conv_total(s, 1), 0); /* muted */
    ci = CI(0, 9, 0, false, 0, NULL);
    CHECK_EQ_U64(conv_put(s, 1, 11, &ci, 0), 0);
    ci = CI(UINT64_C(1) << 50, UINT64_MAX, 0, false, 0, NULL);
    CHECK_EQ_U64(conv_put(s, 1, 12, &ci, 0), 0);
    CHECK_EQ_U64(conv_total(s, 1), 9 + (uint64_t)CONV_UNREAD_MAX);
    ci = CI(0, 0, 0, true, 0, NULL); /* muted only */
    CHECK_EQ_U64(conv_put(s, 2, 10, &ci, 0), 0);
    for (uint64_t c = 100; c < 100 + 2 * CONV_SMALL_MAX; c++) {
        ci = CI(c, c + 1, 0, false, 0, NULL);
        CHECK_EQ_U64(conv_put(s, 3, c, &ci, 0), 0); /* through every form */
    }
    CHECK_EQ_U64(conv_total(s, 3), 2 * CONV_SMALL_MAX);
    /* Already held: refused, unchanged. */
    ci = CI(0, 1, 0, false, 0, NULL);
    CHECK_EQ_U64(conv_put(s, 1, 10, &ci, 0), 1);
    CHECK_EQ_U64(conv_put(s, 3, 150, &ci, 0), 1);
    CHECK_EQ_U64(conv_get(s, 1, 10), 15);
    /* Impossible states. */
    for (unsigned i = 0; i <= CONV_RECALL_MAX; i++)
        many[i] = 10 + i;
    {
        uint64_t low[] = {3}, down[] = {9, 8}, twice[] = {9, 9};
        struct conv_info bad[] = {
            CI(5, 4, 0, false, 0, NULL),  /* read > max */
            CI(0, 0, 0, false, 0, NULL),  /* all zero */
            CI(3, 9, 0, false, 1, low),   /* recall at the watermark */
            CI(3, 9, 0, false, 2, down),  /* not ascending */
            CI(3, 9, 0, false, 2, twice), /* twice */
            CI(3, 9, 0, false, CONV_RECALL_MAX + 1, many),
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            CHECK_EQ_U64(conv_put(s, 9, 9, &bad[i], 0), CONV_EINVAL);
    }
    CHECK_EQ_U64(conv_get(s, 9, 9), 0);
    CHECK_EQ_U64(conv_entries(s), 4 + 2 * CONV_SMALL_MAX);
    ci = CI(3, 2000, 0, false, CONV_RECALL_MAX, many);
    CHECK_EQ_U64(conv_put(s, 9, 9, &ci, 0), 0); /* exactly the limit */
    CHECK_EQ_U64(conv_get(s, 9, 9), 2000 - 3 - CONV_RECALL_MAX);
    do
        conv_scan(s, &cursor, 3, scan_visit, &ss);
    while (cursor != 0);
    CHECK_EQ_U64(ss.recalls, 3 + CONV_RECALL_MAX);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

/* ---- The chat features ------------------------------------------------ */

/* One request that must succeed with the given [unread, total]. */
#define REQ(s, uid, cid, rq, want_unread, want_total)                          \
    do {                                                                       \
        uint32_t u_ = 0xdead;                                                  \
        uint64_t t_ = 0xdead;                                                  \
        CHECK_EQ_U64(conv_apply(s, uid, cid, rq, &u_, &t_), 0);                \
        CHECK_EQ_U64(u_, want_unread);                                         \
        CHECK_EQ_U64(t_, want_total);                                          \
    } while (0)

static struct conv_req rq_of(enum conv_op op, uint64_t arg, uint32_t flags)
{
    struct conv_req rq = {op, flags, arg, 0, 0, 0};

    return rq;
}

static void state(const struct conv_store *s, uint64_t uid, uint64_t cid,
                  const uint64_t *tid, uint64_t max, uint64_t read,
                  uint32_t unread, bool muted, uint32_t mentions,
                  uint64_t first)
{
    struct conv_state st;

    conv_state(s, uid, cid, tid, &st);
    CHECK_EQ_U64(st.max, max);
    CHECK_EQ_U64(st.read, read);
    CHECK_EQ_U64(st.unread, unread);
    CHECK_EQ_U64(st.muted, muted);
    CHECK_EQ_U64(st.mentions, mentions);
    CHECK_EQ_U64(st.first_unread, first);
}

/* The scenario: seqs 1..5, 2 and 4 mention the user, muted: total
 * 0, mentions 2; read to 3: 1; recall 4: 0. */
static void test_mentions(void)
{
    struct conv_store *s = conv_create();
    struct conv_user_counts uc;
    struct conv_req rq;

    for (uint64_t q = 1; q <= 5; q++) {
        rq = rq_of(CONV_OP_SEQ, q, q % 2 ? 0 : CONV_MENTION);
        REQ(s, 1, 10, &rq, q, q);
    }
    rq = rq_of(CONV_OP_SEQ, 4, CONV_MENTION); /* a retry: once */
    REQ(s, 1, 10, &rq, 5, 5);
    UPD(s, CONV_OP_MUTE, 1, 10, 1, 5, 0);
    conv_user_counts(s, 1, &uc);
    CHECK_EQ_U64(uc.mentions, 2); /* muted: still counted */
    CHECK_EQ_U64(uc.chats, 0);
    state(s, 1, 10, NULL, 5, 0, 5, true, 2, 1);
    UPD(s, CONV_OP_READ, 1, 10, 3, 2, 0);
    conv_user_counts(s, 1, &uc);
    CHECK_EQ_U64(uc.mentions, 1);
    UPD(s, CONV_OP_RECALL, 1, 10, 4, 1, 0);
    conv_user_counts(s, 1, &uc);
    CHECK_EQ_U64(uc.mentions, 0);
    state(s, 1, 10, NULL, 5, 3, 1, true, 0, 5);
    /* A mention at or below the watermark, or recalled, is not one. */
    rq = rq_of(CONV_OP_SEQ, 2, CONV_MENTION);
    REQ(s, 1, 10, &rq, 1, 0);
    rq = rq_of(CONV_OP_SEQ, 4, CONV_MENTION);
    REQ(s, 1, 10, &rq, 1, 0);
    state(s, 1, 10, NULL, 5, 3, 1, true, 0, 5);
    /* INCR MENTION: every new message mentions. */
    rq = rq_of(CONV_OP_INCR, 3, CONV_MENTION);
    REQ(s, 1, 10, &rq, 4, 0);
    state(s, 1, 10, NULL, 8, 3, 4, true, 3, 5);
    UPD(s, CONV_OP_MARKUNREAD, 1, 10, 7, 2, 0); /* forward: clears 6 */
    state(s, 1, 10, NULL, 8, 6, 2, true, 2, 7);
    /* Back: the mentions behind stay gone; recall 4, forgotten when read
     * passed it, counts again (re-send it to fix that). */
    UPD(s, CONV_OP_MARKUNREAD, 1, 10, 1, 8, 0);
    state(s, 1, 10, NULL, 8, 0, 8, true, 2, 1);
    CHECK_EQ_U64(conv_audit(s), 0);
    /* Read all: the record goes back to the compact word. */
    UPD(s, CONV_OP_READ_ALL, 1, 10, 0, 0, 0);
    UPD(s, CONV_OP_MUTE, 1, 10, 0, 0, 0);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

/* Past CONV_TAG_MAX mentions, the oldest are forgotten: they still count
 * as unread. */
static void test_mention_bound(void)
{
    struct conv_store *s = conv_create();
    struct conv_req rq;
    const uint64_t n = CONV_TAG_MAX + 10;

    for (uint64_t q = 1; q <= n; q++) {
        rq = rq_of(CONV_OP_SEQ, q, CONV_MENTION);
        REQ(s, 1, 10, &rq, q, q);
    }
    state(s, 1, 10, NULL, n, 0, n, false, CONV_TAG_MAX, 1);
    UPD(s, CONV_OP_READ, 1, 10, 20, n - 20, n - 20);
    state(s, 1, 10, NULL, n, 20, n - 20, false, n - 20, 21);
    rq = rq_of(CONV_OP_INCR, 5000, CONV_MENTION);
    REQ(s, 1, 10, &rq, n - 20 + 5000, n - 20 + 5000);
    state(s, 1, 10, NULL, n + 5000, 20, n - 20 + 5000, false, CONV_TAG_MAX, 21);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

/* Sources: per-source counts inside one conversation, cleared by reads;
 * one source per message. */
static void test_sources(void)
{
    struct conv_store *s = conv_create();
    uint32_t c[CONV_SOURCES];
    struct conv_req rq;

    for (uint64_t q = 1; q <= 6; q++) {
        rq = rq_of(CONV_OP_SEQ, q, CONV_SOURCE);
        rq.source = q % 3 == 0 ? 7 : (uint32_t)(q % 2);
        REQ(s, 1, 10, &rq, q, q);
    }
    conv_sources(s, 1, 10, c);
    CHECK(c[0] == 2 && c[1] == 2 && c[7] == 2 && c[3] == 0);
    rq = rq_of(CONV_OP_SEQ, 1, CONV_SOURCE); /* 1 comes from 7 after all */
    rq.source = 7;
    REQ(s, 1, 10, &rq, 6, 6);
    conv_sources(s, 1, 10, c);
    CHECK(c[0] == 2 && c[1] == 1 && c[7] == 3);
    UPD(s, CONV_OP_READ, 1, 10, 3, 3, 3);
    conv_sources(s, 1, 10, c);
    CHECK(c[0] == 1 && c[1] == 1 && c[7] == 1);
    UPD(s, CONV_OP_RECALL, 1, 10, 6, 2, 2);
    conv_sources(s, 1, 10, c);
    CHECK(c[0] == 1 && c[1] == 1 && c[7] == 0);
    rq = rq_of(CONV_OP_INCR, 4, CONV_SOURCE | CONV_MENTION);
    rq.source = 2;
    REQ(s, 1, 10, &rq, 6, 6);
    conv_sources(s, 1, 10, c);
    CHECK(c[2] == 4);
    state(s, 1, 10, NULL, 10, 3, 6, false, 4, 4);
    CHECK_EQ_U64(conv_audit(s), 0);
    rq = rq_of(CONV_OP_SEQ, 11, CONV_SOURCE);
    rq.source = CONV_SOURCES;
    CHECK_EQ_U64(conv_apply(s, 1, 10, &rq, &c[0], &(uint64_t){0}), CONV_EINVAL);
    conv_destroy(s);
}

/* The sparse example, the window, recalls and mark-unread. */
static void test_sparse(void)
{
    struct conv_store *s = conv_create();
    struct conv_req rq = rq_of(CONV_OP_SEQ, 1000001, CONV_SPARSE);
    uint64_t snow = UINT64_C(1234567890123456789), t;
    uint32_t u;

    rq.window = 3;
    REQ(s, 1, 10, &rq, 1, 1);
    rq.arg = 1000005;
    REQ(s, 1, 10, &rq, 2, 2);
    rq.arg = 1000009;
    REQ(s, 1, 10, &rq, 3, 3);
    rq.arg = 1000005; /* a retry, and an id below max: nothing */
    REQ(s, 1, 10, &rq, 3, 3);
    rq.arg = 1000007;
    REQ(s, 1, 10, &rq, 3, 3);
    rq.op = CONV_OP_READ;
    rq.arg = 1000005;
    REQ(s, 1, 10, &rq, 1, 1);
    state(s, 1, 10, NULL, 1000009, 1000005, 1, false, 0, 1000009);
    rq.op = CONV_OP_SEQ;
    rq.arg = snow;
    REQ(s, 2, 10, &rq, 1, 1);
    /* Mixing modes is refused, nothing changed. */
    CHECK_EQ_U64(conv_update(s, CONV_OP_SEQ, 1, 10, 1000010, &u, &t),
                 CONV_EMODE);
    UPD(s, CONV_OP_SEQ, 1, 11, 5, 5, 6);
    rq.arg = 9;
    CHECK_EQ_U64(conv_apply(s, 1, 11, &rq, &u, &t), CONV_EMODE);
    rq.arg = CONV_ID_MAX + 1;
    CHECK_EQ_U64(conv_apply(s, 1, 12, &rq, &u, &t), CONV_EINVAL);
    rq = rq_of(CONV_OP_INCR, 1, CONV_SPARSE);
    CHECK_EQ_U64(conv_apply(s, 1, 12, &rq, &u, &t), CONV_EINVAL);
    CHECK_EQ_U64(conv_update(s, CONV_OP_INCR, 1, 10, 1, &u, &t), CONV_EMODE);
    /* The window: 3 kept; beyond, unread reads window + 1. */
    rq = rq_of(CONV_OP_SEQ, 0, CONV_SPARSE);
    rq.window = 3;
    for (uint64_t k = 1; k <= 5; k++) {
        rq.arg = 100 * k;
        REQ(s, 3, 30, &rq, k < 4 ? k : 4, k < 4 ? k : 4);
    }
    state(s, 3, 30, NULL, 500, 0, 4, false, 0, 200); /* 200: newest lost */
    rq.op = CONV_OP_READ;
    rq.arg = 150; /* below the newest lost: still "more than kept" */
    REQ(s, 3, 30, &rq, 4, 4);
    rq.arg = 200; /* at it: exact again */
    REQ(s, 3, 30, &rq, 3, 3);
    state(s, 3, 30, NULL, 500, 200, 3, false, 0, 300);
    rq.op = CONV_OP_RECALL;
    rq.arg = 400;
    REQ(s, 3, 30, &rq, 2, 2);
    REQ(s, 3, 30, &rq, 2, 2);
    rq.arg = 900; /* above max: remembered, never counts */
    REQ(s, 3, 30, &rq, 2, 2);
    rq.op = CONV_OP_SEQ;
    REQ(s, 3, 30, &rq, 2, 2);
    rq.arg = 901;
    REQ(s, 3, 30, &rq, 3, 3);
    rq.op = CONV_OP_MARKUNREAD; /* back: 250 itself counts again */
    rq.arg = 250;
    REQ(s, 3, 30, &rq, 4, 4); /* window full: 250 reads as "one more" */
    state(s, 3, 30, NULL, 901, 249, 4, false, 0, 250);
    rq.op = CONV_OP_READ_ALL;
    REQ(s, 3, 30, &rq, 0, 0);
    state(s, 3, 30, NULL, 901, 901, 0, false, 0, 0);
    rq.op = CONV_OP_MARKUNREAD;
    rq.arg = 901;
    REQ(s, 3, 30, &rq, 1, 1);
    /* Mentions of sparse ids. */
    rq = rq_of(CONV_OP_SEQ, 1000, CONV_SPARSE | CONV_MENTION);
    rq.window = 3;
    REQ(s, 3, 30, &rq, 2, 2);
    state(s, 3, 30, NULL, 1000, 900, 2, false, 1, 901);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

/* Threads: their own unread, read position and mentions; rolled up into
 * the conversation's or not; reading one leaves the main count alone. */
static void test_threads(void)
{
    struct conv_store *s = conv_create();
    struct conv_req rq = rq_of(CONV_OP_SEQ, 0, CONV_THREAD);
    struct conv_user_counts uc;
    uint64_t t7 = 7, t9 = 9;

    UPD(s, CONV_OP_SEQ, 1, 10, 4, 4, 4);
    rq.tid = 7;
    rq.arg = 3;
    REQ(s, 1, 10, &rq, 3, 7);
    rq.tid = 9;
    rq.arg = 2;
    rq.flags |= CONV_MENTION;
    REQ(s, 1, 10, &rq, 2, 9);
    state(s, 1, 10, NULL, 4, 0, 9, false, 1, 1);
    state(s, 1, 10, &t7, 3, 0, 3, false, 0, 1);
    state(s, 1, 10, &t9, 2, 0, 2, false, 1, 1);
    conv_user_counts(s, 1, &uc);
    CHECK(uc.threads == 2 && uc.chats == 1 && uc.mentions == 1);
    /* Collapsed: thread unread and mentions leave the conversation's. */
    UPD(s, CONV_OP_ROLLUP, 1, 10, 0, 4, 4);
    state(s, 1, 10, NULL, 4, 0, 4, false, 0, 1);
    conv_user_counts(s, 1, &uc);
    CHECK(uc.threads == 2 && uc.mentions == 1);
    UPD(s, CONV_OP_ROLLUP, 1, 10, 1, 9, 9);
    /* Reading a thread leaves the main timeline alone. */
    rq = rq_of(CONV_OP_READ_ALL, 0, CONV_THREAD);
    rq.tid = 9;
    REQ(s, 1, 10, &rq, 0, 7);
    state(s, 1, 10, NULL, 4, 0, 7, false, 0, 1);
    UPD(s, CONV_OP_READ_ALL, 1, 10, 0, 3, 3);
    conv_user_counts(s, 1, &uc);
    CHECK(uc.threads == 1 && uc.chats == 1 && uc.mentions == 0);
    /* Muted: out of the total and of the thread count. */
    UPD(s, CONV_OP_MUTE, 1, 10, 1, 3, 0);
    conv_user_counts(s, 1, &uc);
    CHECK(uc.threads == 0 && uc.chats == 0);
    UPD(s, CONV_OP_MUTE, 1, 10, 0, 3, 3);
    /* A thread of a conversation without messages of its own. */
    rq = rq_of(CONV_OP_INCR, 2, CONV_THREAD | CONV_MENTION);
    rq.tid = 1;
    REQ(s, 1, 20, &rq, 2, 5);
    state(s, 1, 20, NULL, 0, 0, 2, false, 2, 0);
    /* Thread ops refused. */
    rq = rq_of(CONV_OP_MUTE, 1, CONV_THREAD);
    CHECK_EQ_U64(conv_apply(s, 1, 20, &rq, &(uint32_t){0}, &(uint64_t){0}),
                 CONV_EINVAL);
    rq = rq_of(CONV_OP_SEQ, 3, CONV_THREAD | CONV_SOURCE);
    CHECK_EQ_U64(conv_apply(s, 1, 20, &rq, &(uint32_t){0}, &(uint64_t){0}),
                 CONV_EINVAL);
    rq = rq_of(CONV_OP_SEQ, 3, CONV_THREAD);
    rq.tid = CONV_ID_MAX + 1;
    CHECK_EQ_U64(conv_apply(s, 1, 20, &rq, &(uint32_t){0}, &(uint64_t){0}),
                 CONV_EINVAL);
    CHECK_EQ_U64(conv_audit(s), 0);
    /* Reading the thread away leaves nothing: the conversation goes. */
    rq = rq_of(CONV_OP_READ_ALL, 0, CONV_THREAD);
    rq.tid = 1;
    REQ(s, 1, 20, &rq, 0, 3);
    CHECK_EQ_U64(conv_entries(s), 2);
    CHECK_EQ_U64(conv_del(s, 1, 20), 3);
    CHECK_EQ_U64(conv_del(s, 1, 10), 0);
    CHECK_EQ_U64(conv_entries(s), 0);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

struct tlist {
    size_t n;
    uint64_t first;
};

static void tlist_add(uint64_t tid, uint32_t unread, void *ctx)
{
    struct tlist *l = ctx;

    (void)unread;
    if (l->n++ == 0)
        l->first = tid;
}

/* CONV_THREAD_MAX threads: a new one replaces the lowest read one; with
 * all unread, a new one is refused. */
static void test_thread_bound(void)
{
    struct conv_store *s = conv_create();
    struct conv_req rq = rq_of(CONV_OP_SEQ, 1, CONV_THREAD);
    struct tlist l = {0, 0};
    uint32_t u;
    uint64_t t;

    for (uint64_t k = 0; k < CONV_THREAD_MAX; k++) {
        rq.tid = 100 + k;
        REQ(s, 1, 10, &rq, 1, k + 1);
    }
    rq.tid = 5;
    CHECK_EQ_U64(conv_apply(s, 1, 10, &rq, &u, &t), CONV_ETHREADS);
    rq = rq_of(CONV_OP_READ_ALL, 0, CONV_THREAD);
    rq.tid = 300;
    REQ(s, 1, 10, &rq, 0, CONV_THREAD_MAX - 1);
    rq.tid = 200;
    REQ(s, 1, 10, &rq, 0, CONV_THREAD_MAX - 2);
    rq = rq_of(CONV_OP_SEQ, 4, CONV_THREAD);
    rq.tid = 5; /* replaces read thread 200 */
    REQ(s, 1, 10, &rq, 4, CONV_THREAD_MAX + 2);
    CHECK_EQ_U64(conv_threads(s, 1, 10, tlist_add, &l), CONV_THREAD_MAX - 1);
    CHECK_EQ_U64(l.first, 5);
    rq.tid = 200; /* counts afresh: it was forgotten */
    rq.arg = 1;
    REQ(s, 1, 10, &rq, 1, CONV_THREAD_MAX + 3);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

/* Mark all read: every conversation and thread, muted ones too, every
 * storage form; a watermark leaving the compact form gets its record. */
static void test_read_all_user(void)
{
    struct conv_store *s = conv_create();
    struct conv_req rq = rq_of(CONV_OP_SEQ, 3, CONV_THREAD | CONV_MENTION);
    struct conv_user_counts uc;
    uint64_t t;

    uint64_t want = 0;

    for (uint64_t c = 0; c < 2 * CONV_SMALL_MAX; c++) {
        want += 1 + c % 3;
        UPD(s, CONV_OP_SEQ, 1, c, 1 + c % 3, 1 + c % 3, want);
        if (c % 5 == 0) {
            want -= 1 + c % 3;
            UPD(s, CONV_OP_MUTE, 1, c, 1, 1 + c % 3, want);
        }
    }
    rq.tid = 4;
    REQ(s, 1, 7, &rq, 3, want + 3); /* a thread's reply: its unread */
    /* Compact, near the edge of the compact form. */
    UPD(s, CONV_OP_READ, 2, 1, (UINT64_C(1) << 41) - 2, 0, 0);
    UPD(s, CONV_OP_SEQ, 2, 1, (UINT64_C(1) << 41) + 5, 7, 7);
    rq.tid = 1;
    rq.arg = (UINT64_C(1) << 41) + 1;
    rq.flags = CONV_THREAD;
    REQ(s, 2, 1, &rq, CONV_UNREAD_MAX, CONV_UNREAD_MAX); /* saturated */
    UPD(s, CONV_OP_SEQ, 3, 1, 4, 4, 4);
    CHECK_EQ_U64(conv_read_all_user(s, 1, &t), 0);
    CHECK_EQ_U64(t, 0);
    CHECK_EQ_U64(conv_read_all_user(s, 2, &t), 0);
    CHECK_EQ_U64(t, 0);
    CHECK_EQ_U64(conv_read_all_user(s, 9, &t), 0);
    conv_user_counts(s, 1, &uc);
    CHECK(uc.mentions == 0 && uc.chats == 0 && uc.threads == 0);
    CHECK_EQ_U64(conv_total(s, 3), 4); /* another user */
    CHECK_EQ_U64(conv_get(s, 1, 7), 0);
    state(s, 2, 1, NULL, (UINT64_C(1) << 41) + 5, (UINT64_C(1) << 41) + 5, 0,
          false, 0, 0);
    /* Later messages count from there. */
    UPD(s, CONV_OP_SEQ, 1, 7, 9, 7, 7);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

/* Loading: conv_put and conv_put_thread give back what the walk saw. */
struct copy_ctx {
    struct conv_store *to;
    size_t bad;
};

static void copy_visit(uint64_t uid, uint64_t cid, const struct conv_info *ci,
                       void *ctx)
{
    struct copy_ctx *cc = ctx;

    cc->bad += conv_put(cc->to, uid, cid, ci, ci->nthreads) != 0;
    for (uint32_t i = 0; i < ci->nthreads; i++) {
        struct conv_info ti;
        uint64_t tid;

        conv_info_thread(ci, i, &tid, &ti);
        cc->bad += conv_put_thread(cc->to, uid, cid, tid, &ti) != 0;
    }
}

static void test_put_features(void)
{
    struct conv_store *a = conv_create(), *b = conv_create();
    struct copy_ctx cc = {b, 0};
    struct conv_req rq;
    uint64_t cursor = 0;
    uint64_t bad_ids[] = {5, 3};

    for (uint64_t u = 0; u < 40; u++)
        for (uint64_t c = 0; c < (u % 4 == 3 ? 140 : u % 4 + 1); c++) {
            rq = rq_of(CONV_OP_SEQ, 1 + (u * c) % 9,
                       (c % 3 ? CONV_MENTION : 0) | (c % 4 ? 0 : CONV_SPARSE));
            rq.window = 4;
            conv_apply(a, u, c, &rq, &(uint32_t){0}, &(uint64_t){0});
            rq.arg += 7;
            rq.flags |= c % 2 ? CONV_THREAD : CONV_SOURCE;
            rq.tid = c;
            rq.source = 3;
            conv_apply(a, u, c, &rq, &(uint32_t){0}, &(uint64_t){0});
            if (c % 7 == 0)
                conv_update(a, CONV_OP_ROLLUP, u, c, 0, &(uint32_t){0},
                            &(uint64_t){0});
        }
    CHECK_EQ_U64(conv_audit(a), 0);
    do
        conv_scan(a, &cursor, 5, copy_visit, &cc);
    while (cursor != 0);
    CHECK_EQ_U64(cc.bad, 0);
    CHECK_EQ_U64(conv_audit(b), 0);
    CHECK_EQ_U64(conv_entries(b), conv_entries(a));
    CHECK_EQ_U64(conv_bytes(b), conv_bytes(a));
    for (uint64_t u = 0; u < 40; u++) {
        struct conv_user_counts x, y;

        conv_user_counts(a, u, &x);
        conv_user_counts(b, u, &y);
        cc.bad += conv_total(a, u) != conv_total(b, u) ||
                  x.mentions != y.mentions || x.threads != y.threads ||
                  x.chats != y.chats;
    }
    CHECK_EQ_U64(cc.bad, 0);
    /* Impossible extended states are refused. */
    {
        struct conv_info ci = CI(3, 9, 0, false, 0, NULL);

        ci.sparse = true;
        ci.nids = 2;
        ci.ids = bad_ids; /* not ascending */
        CHECK_EQ_U64(conv_put(b, 99, 1, &ci, 0), CONV_EINVAL);
        ci.sparse = false; /* ids in a dense conversation */
        bad_ids[0] = 4;
        bad_ids[1] = 5;
        CHECK_EQ_U64(conv_put(b, 99, 1, &ci, 0), CONV_EINVAL);
        ci.nids = 0;
        ci.ntag[CONV_TAG_MENTION] = 1;
        ci.tag[CONV_TAG_MENTION] = &bad_ids[1];
        ci.ntag[2] = 1;
        ci.tag[2] = &bad_ids[1]; /* a mention may have a source too */
        CHECK_EQ_U64(conv_put(b, 99, 1, &ci, 0), 0);
        ci.ntag[3] = 1;
        ci.tag[3] = &bad_ids[1]; /* but only one source */
        CHECK_EQ_U64(conv_put(b, 99, 2, &ci, 0), CONV_EINVAL);
        ci = CI(0, 0, 0, false, 0, NULL);
        CHECK_EQ_U64(conv_put(b, 99, 3, &ci, 0), CONV_EINVAL);
        CHECK_EQ_U64(conv_put(b, 99, 3, &ci, 1), 0); /* threads follow */
        ci = CI(0, 0, 0, false, 0, NULL);
        CHECK_EQ_U64(conv_put_thread(b, 99, 3, 5, &ci), CONV_EINVAL);
        ci = CI(1, 4, 0, false, 0, NULL);
        CHECK_EQ_U64(conv_put_thread(b, 99, 3, 5, &ci), 0);
        CHECK_EQ_U64(conv_put_thread(b, 99, 3, 5, &ci), 1);
        CHECK_EQ_U64(conv_put_thread(b, 99, 4, 5, &ci), 1);
        CHECK_EQ_U64(conv_get(b, 99, 3), 3);
    }
    CHECK_EQ_U64(conv_audit(b), 0);
    conv_destroy(a);
    conv_destroy(b);
}

/* Memory: a kept mention or sparse id costs 8 bytes. */
static void test_memory_of_features(void)
{
    struct conv_store *s = conv_create();
    struct conv_req rq = rq_of(CONV_OP_SEQ, 1, CONV_MENTION);
    size_t before;

    REQ(s, 1, 10, &rq, 1, 1);
    before = conv_bytes(s);
    for (uint64_t q = 2; q <= 101; q++) {
        rq.arg = q;
        REQ(s, 1, 10, &rq, q, q);
    }
    CHECK(conv_bytes(s) - before <= 8 * 100);
    rq = rq_of(CONV_OP_SEQ, 1000, CONV_SPARSE);
    rq.window = 1000;
    REQ(s, 2, 10, &rq, 1, 1);
    before = conv_bytes(s);
    for (uint64_t k = 1; k <= 100; k++) {
        rq.arg = 1000 + 17 * k;
        REQ(s, 2, 10, &rq, k + 1, k + 1);
    }
    CHECK(conv_bytes(s) - before <= 8 * 100);
    CHECK_EQ_U64(conv_audit(s), 0);
    conv_destroy(s);
}

/* ---- The randomized run against a plain model ------------------------- */

/*
 * The model says what docs/COMMANDS.md says, as plainly as possible:
 * sorted arrays, linear scans. A conversation is a main timeline, flags
 * and up to MT threads; each timeline holds read, max, the recalled seqs,
 * the kept sparse ids and lost, and its tag lists (mentions, sources
 * 0..MS-1). Sparse conversations keep a window of M_WINDOW ids, small so
 * that the overflow paths run often.
 */
#define MU 6        /* users */
#define MC 160      /* cids in the pool: user 3 goes past CONV_SMALL_MAX */
#define MT 3        /* tids in a conversation's pool */
#define MREC 64     /* recalled seqs a model timeline can hold */
#define MTAG 64     /* seqs a model tag list can hold */
#define MS 3        /* sources the run uses */
#define MK (1 + MS) /* tag lists */
#define M_WINDOW 5u

struct mtl {
    uint64_t read, max, lost;
    unsigned nrec, nids, ntag[MK];
    uint64_t rec[MREC], ids[M_WINDOW + 1], tag[MK][MTAG]; /* ascending */
};

struct mconv {
    struct mtl main;
    bool muted, sparse, collapsed;
    bool has[MT]; /* thread MT-pool index held */
    struct mtl thr[MT];
};

static const uint64_t m_uids[MU] = {0, 1, 42, UINT64_MAX, 123456789012345ULL,
                                    7};
static const unsigned m_pool[MU] = {1, 3, 20, MC, 130, 60};
static struct mconv model[MU][MC];

/* Cids of every width a user's array packs them in (1, 2, 4, 8 bytes),
 * ascending with j past 1, so that adds widen arrays and deletes leave
 * them wide. */
static uint64_t m_cid(unsigned j)
{
    if (j < 2)
        return j == 0 ? 0 : UINT64_MAX;
    if (j < 40)
        return j; /* one byte */
    if (j < 80)
        return j * 500ULL; /* two */
    if (j < 120)
        return j * 1000003ULL; /* four */
    return (uint64_t)j << 40;  /* eight */
}

static uint64_t m_tid(unsigned t)
{
    return t == 0 ? 0 : t == 1 ? CONV_ID_MAX : 77 + t;
}

/* Conversations whose index is 2 mod 5 are sparse: their writes say so. */
static bool m_wants_sparse(unsigned j)
{
    return j % 5 == 2;
}

static bool arr_has(const uint64_t *v, unsigned n, uint64_t x)
{
    for (unsigned i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

/* Inserts x into the ascending v (room checked by the caller). */
static void arr_add(uint64_t *v, unsigned *n, uint64_t x)
{
    unsigned i = *n;

    if (arr_has(v, *n, x))
        return;
    while (i > 0 && v[i - 1] > x) {
        v[i] = v[i - 1];
        i--;
    }
    v[i] = x;
    (*n)++;
}

static void arr_del(uint64_t *v, unsigned *n, uint64_t x)
{
    unsigned k = 0;

    for (unsigned i = 0; i < *n; i++)
        if (v[i] != x)
            v[k++] = v[i];
    *n = k;
}

/* Keeps the entries > x. */
static void arr_keep_above(uint64_t *v, unsigned *n, uint64_t x)
{
    unsigned k = 0;

    for (unsigned i = 0; i < *n; i++)
        if (v[i] > x)
            v[k++] = v[i];
    *n = k;
}

static uint64_t m_tl_unread(const struct mtl *t, bool sparse)
{
    uint64_t u;

    if (sparse)
        return t->nids + (t->lost != 0);
    u = t->max - t->read;
    for (unsigned i = 0; i < t->nrec; i++)
        u -= t->rec[i] <= t->max;
    return u;
}

static uint32_t m_sat(uint64_t u)
{
    return u > CONV_UNREAD_MAX ? CONV_UNREAD_MAX : (uint32_t)u;
}

static bool m_tl_zero(const struct mtl *t)
{
    unsigned tags = 0;

    for (unsigned k = 0; k < MK; k++)
        tags += t->ntag[k];
    return !t->read && !t->max && !t->nrec && !t->nids && !t->lost && !tags;
}

static uint32_t m_unread(const struct mconv *c)
{
    uint64_t u = m_tl_unread(&c->main, c->sparse);

    if (u >= CONV_UNREAD_MAX)
        return CONV_UNREAD_MAX;
    for (unsigned t = 0; t < MT && !c->collapsed; t++)
        if (c->has[t])
            u += m_sat(m_tl_unread(&c->thr[t], c->sparse));
    return m_sat(u);
}

static uint32_t m_mentions(const struct mconv *c, bool all)
{
    uint32_t n = c->main.ntag[0];

    for (unsigned t = 0; t < MT && (all || !c->collapsed); t++)
        n += c->has[t] ? c->thr[t].ntag[0] : 0;
    return n;
}

static bool m_exists(const struct mconv *c)
{
    bool thr = false;

    for (unsigned t = 0; t < MT; t++)
        thr |= c->has[t];
    return !m_tl_zero(&c->main) || c->muted || c->collapsed || thr;
}

static uint64_t m_total(unsigned u)
{
    uint64_t t = 0;

    for (unsigned j = 0; j < MC; j++)
        if (!model[u][j].muted)
            t += m_unread(&model[u][j]);
    return t;
}

static size_t m_count(void)
{
    size_t n = 0;

    for (unsigned u = 0; u < MU; u++)
        for (unsigned j = 0; j < MC; j++)
            n += m_exists(&model[u][j]);
    return n;
}

static void m_set_read(struct mtl *t, bool sparse, uint64_t read)
{
    t->read = read;
    if (t->max < read)
        t->max = read;
    arr_keep_above(t->rec, &t->nrec, sparse ? t->max : read);
    arr_keep_above(t->ids, &t->nids, read);
    if (t->lost <= read)
        t->lost = 0;
    for (unsigned k = 0; k < MK; k++)
        arr_keep_above(t->tag[k], &t->ntag[k], read);
}

static void m_untag(struct mtl *t, uint64_t q)
{
    for (unsigned k = 0; k < MK; k++)
        arr_del(t->tag[k], &t->ntag[k], q);
}

/* Tags q with the lists of mask; a source replaces another source. */
static void m_tag(struct mtl *t, uint32_t mask, uint64_t q)
{
    for (unsigned k = 0; k < MK; k++) {
        if (!(mask & (1u << k)))
            continue;
        if (k > 0)
            for (unsigned j = 1; j < MK; j++)
                if (j != k)
                    arr_del(t->tag[j], &t->ntag[j], q);
        arr_add(t->tag[k], &t->ntag[k], q);
    }
}

/* Whether the model's own bounds hold one more recall and `more` tags
 * (else the caller skips the request). */
static bool m_tl_fits(const struct mtl *t, const struct conv_req *rq,
                      uint32_t mask)
{
    unsigned more = rq->op == CONV_OP_INCR ? (unsigned)rq->arg : 1;

    for (unsigned k = 0; k < MK; k++)
        if ((mask & (1u << k)) && t->ntag[k] + more > MTAG)
            return false;
    return rq->op != CONV_OP_RECALL || t->nrec < MREC;
}

/* Applies one request to a model timeline. */
static void m_tl_apply(struct mtl *t, bool sparse, const struct conv_req *rq)
{
    uint32_t mask = (rq->flags & CONV_MENTION ? 1u : 0) |
                    (rq->flags & CONV_SOURCE ? 1u << (1 + rq->source) : 0);
    uint64_t arg = rq->arg, old;
    bool recalled;

    switch (rq->op) {
    case CONV_OP_INCR:
        old = t->max;
        t->max = arg > UINT64_MAX - t->max ? UINT64_MAX : t->max + arg;
        for (uint64_t q = old + 1; mask && q <= t->max && q > old; q++)
            if (!arr_has(t->rec, t->nrec, q))
                m_tag(t, mask, q);
        break;
    case CONV_OP_SEQ:
        if (!sparse) {
            t->max = arg > t->max ? arg : t->max;
            if (arg > t->read && !arr_has(t->rec, t->nrec, arg))
                m_tag(t, mask, arg);
        } else if (arg > t->max) {
            t->max = arg;
            recalled = arr_has(t->rec, t->nrec, arg);
            arr_keep_above(t->rec, &t->nrec, t->max);
            if (recalled)
                break;
            if (t->nids == M_WINDOW) {
                t->lost = t->ids[0];
                arr_del(t->ids, &t->nids, t->lost);
                m_untag(t, t->lost);
            }
            arr_add(t->ids, &t->nids, arg);
            m_tag(t, mask, arg);
        } else if (arg > t->read && arr_has(t->ids, t->nids, arg)) {
            m_tag(t, mask, arg);
        }
        break;
    case CONV_OP_READ:
        if (arg > t->read)
            m_set_read(t, sparse, arg);
        break;
    case CONV_OP_READ_ALL:
        m_set_read(t, sparse, t->max);
        break;
    case CONV_OP_MARKUNREAD:
        recalled = sparse && arg > t->max && arr_has(t->rec, t->nrec, arg);
        m_set_read(t, sparse, arg - 1);
        t->max = arg > t->max ? arg : t->max;
        if (!sparse)
            break;
        arr_keep_above(t->rec, &t->nrec, t->max);
        if (recalled || arr_has(t->ids, t->nids, arg) || t->lost >= arg)
            break;
        if (t->nids >= M_WINDOW)
            t->lost = arg;
        else
            arr_add(t->ids, &t->nids, arg);
        break;
    case CONV_OP_RECALL:
        if (sparse) {
            if (arr_has(t->ids, t->nids, arg)) {
                arr_del(t->ids, &t->nids, arg);
                m_untag(t, arg);
            } else if (arg > t->max) {
                arr_add(t->rec, &t->nrec, arg);
            }
        } else if (arg > t->read) {
            arr_add(t->rec, &t->nrec, arg);
            m_untag(t, arg);
        }
        break;
    default:
        break;
    }
}

static uint64_t m_first_unread(const struct mtl *t, bool sparse)
{
    if (sparse)
        return t->lost ? t->lost : t->nids ? t->ids[0] : 0;
    for (uint64_t q = t->read + 1; q <= t->max && q > t->read; q++)
        if (!arr_has(t->rec, t->nrec, q))
            return q;
    return 0;
}

static bool m_blank(const struct mconv *c)
{
    for (unsigned t = 0; t < MT; t++)
        if (c->has[t])
            return false;
    return !c->sparse && c->main.max == 0 && c->main.nrec == 0;
}

/*
 * The model's answer to rq on conversation c: a CONV_E* code (nothing
 * changed), 0 with the change made, or 1 when the model cannot hold the
 * result (skip the request). *tun the thread's unread.
 */
static int m_apply(struct mconv *c, const struct conv_req *rq, uint32_t *tun)
{
    bool carries = rq->op == CONV_OP_SEQ || rq->op == CONV_OP_READ ||
                   rq->op == CONV_OP_MARKUNREAD || rq->op == CONV_OP_RECALL ||
                   rq->op == CONV_OP_INCR;
    bool want = rq->flags & CONV_SPARSE, sparse = c->sparse;
    uint32_t mask = (rq->flags & CONV_MENTION ? 1u : 0) |
                    (rq->flags & CONV_SOURCE ? 1u << (1 + rq->source) : 0);
    struct mtl *t = &c->main;
    unsigned ti = 0;

    if (carries && sparse &&
        (rq->op == CONV_OP_INCR || (rq->op == CONV_OP_SEQ && !want)))
        return CONV_EMODE;
    if (carries && sparse && rq->arg > CONV_ID_MAX)
        return CONV_EINVAL;
    if (carries && want && !sparse) {
        if (!m_blank(c))
            return CONV_EMODE;
        sparse = true;
    }
    if (rq->op == CONV_OP_MUTE) {
        c->muted = rq->arg;
        return 0;
    }
    if (rq->op == CONV_OP_ROLLUP) {
        c->collapsed = !rq->arg;
        return 0;
    }
    if (rq->flags & CONV_THREAD) {
        for (ti = 0; ti < MT && m_tid(ti) != rq->tid; ti++)
            ;
        t = &c->thr[ti];
        if (!c->has[ti])
            memset(t, 0, sizeof(*t));
    }
    if (!m_tl_fits(t, rq, mask))
        return 1;
    if (rq->op == CONV_OP_RECALL && !sparse && rq->arg > t->read &&
        !arr_has(t->rec, t->nrec, rq->arg) && t->nrec == CONV_RECALL_MAX)
        return CONV_ELIMIT;
    c->sparse = sparse;
    m_tl_apply(t, sparse, rq);
    if (rq->flags & CONV_THREAD) {
        c->has[ti] = !m_tl_zero(t);
        *tun = m_sat(m_tl_unread(t, sparse));
    }
    if (!m_exists(c))
        memset(c, 0, sizeof(*c));
    return 0;
}

/* Mostly small seqs, so that they collide; now and then one at the edges
 * of the compact encoding or of the u64 range (sparse: of the id range). */
static uint64_t m_seq(bool sparse)
{
    static const uint64_t edges[] = {UINT64_C(1) << 21, UINT64_C(1) << 41,
                                     3000000, UINT64_MAX - 3};

    if (t_rng() % 50 != 0)
        return t_rng() % 120;
    return sparse ? CONV_ID_MAX - t_rng() % 4 - (t_rng() % 2 ? 0 : 1u << 30)
                  : edges[t_rng() % 4] + t_rng() % 4;
}

/* A random request for conversation j; it may be one the store refuses
 * (a mode mismatch now and then). */
static void m_request(unsigned j, struct conv_req *rq)
{
    unsigned r = (unsigned)(t_rng() % 100);
    bool sparse = m_wants_sparse(j) != (t_rng() % 200 == 0);

    memset(rq, 0, sizeof(*rq));
    rq->window = M_WINDOW;
    rq->op = r < 8    ? CONV_OP_INCR
             : r < 44 ? CONV_OP_SEQ
             : r < 58 ? CONV_OP_READ
             : r < 64 ? CONV_OP_READ_ALL
             : r < 72 ? CONV_OP_MARKUNREAD
             : r < 86 ? CONV_OP_RECALL
             : r < 94 ? CONV_OP_MUTE
                      : CONV_OP_ROLLUP;
    if (sparse && rq->op == CONV_OP_INCR)
        rq->op = CONV_OP_SEQ;
    rq->arg = m_seq(sparse);
    if (sparse && rq->op != CONV_OP_MUTE && rq->op != CONV_OP_ROLLUP)
        rq->flags |= CONV_SPARSE;
    if (rq->op == CONV_OP_INCR)
        rq->arg = t_rng() % 30 == 0 ? UINT64_C(1) << 33 : t_rng() % 4;
    if (rq->op == CONV_OP_MARKUNREAD && rq->arg == 0)
        rq->arg = 1;
    if (rq->op == CONV_OP_MUTE || rq->op == CONV_OP_ROLLUP) {
        rq->arg = t_rng() % 2;
        return;
    }
    if (t_rng() % 4 == 0) {
        rq->flags |= CONV_THREAD;
        rq->tid = m_tid((unsigned)(t_rng() % MT));
    }
    if ((rq->op == CONV_OP_SEQ || (rq->op == CONV_OP_INCR && rq->arg < 8)) &&
        t_rng() % 3 == 0)
        rq->flags |= CONV_MENTION;
    if ((rq->op == CONV_OP_SEQ || (rq->op == CONV_OP_INCR && rq->arg < 8)) &&
        !(rq->flags & CONV_THREAD) && t_rng() % 4 == 0) {
        rq->flags |= CONV_SOURCE;
        rq->source = (uint32_t)(t_rng() % MS);
    }
}

/* The store's state of one conversation (or thread) against the model's. */
static size_t m_check_state(const struct conv_store *s, unsigned u, unsigned j)
{
    const struct mconv *c = &model[u][j];
    struct conv_state st;
    uint32_t counts[CONV_SOURCES];
    size_t wrong = 0;

    conv_state(s, m_uids[u], m_cid(j), NULL, &st);
    wrong += st.max != c->main.max || st.read != c->main.read ||
             st.unread != m_unread(c) || st.muted != c->muted ||
             st.mentions != m_mentions(c, false) ||
             st.first_unread != m_first_unread(&c->main, c->sparse);
    for (unsigned t = 0; t < MT; t++) {
        const struct mtl *tl = &c->thr[t];
        uint64_t tid = m_tid(t);
        bool h = c->has[t];

        conv_state(s, m_uids[u], m_cid(j), &tid, &st);
        wrong += st.max != (h ? tl->max : 0) || st.read != (h ? tl->read : 0) ||
                 st.unread != (h ? m_sat(m_tl_unread(tl, c->sparse)) : 0) ||
                 st.mentions != (h ? tl->ntag[0] : 0) ||
                 st.first_unread != (h ? m_first_unread(tl, c->sparse) : 0);
    }
    conv_sources(s, m_uids[u], m_cid(j), counts);
    for (unsigned k = 0; k < CONV_SOURCES; k++)
        wrong += counts[k] != (k < MS ? c->main.ntag[1 + k] : 0);
    return wrong;
}

static size_t m_check_user(const struct conv_store *s, unsigned u)
{
    struct conv_user_counts uc;
    uint64_t ment = 0, chats = 0, threads = 0;

    for (unsigned j = 0; j < MC; j++) {
        const struct mconv *c = &model[u][j];

        ment += m_mentions(c, true);
        if (c->muted)
            continue;
        chats += m_unread(c) != 0;
        for (unsigned t = 0; t < MT; t++)
            threads += c->has[t] && m_tl_unread(&c->thr[t], c->sparse) != 0;
    }
    conv_user_counts(s, m_uids[u], &uc);
    return (uc.mentions != ment) + (uc.chats != chats) +
           (uc.threads != threads) + (conv_total(s, m_uids[u]) != m_total(u));
}

static void test_random_vs_model(void)
{
    struct conv_store *s = conv_create();
    size_t wrong = 0, audits = 0, refused = 0;
    const long ops = 300000;
    struct flat f;

    memset(model, 0, sizeof(model));
    for (long i = 0; i < ops; i++) {
        unsigned u = (unsigned)(t_rng() % MU),
                 j = (unsigned)(t_rng() % m_pool[u]);
        struct mconv *mc = &model[u][j], before;
        uint64_t uid = m_uids[u], cid = m_cid(j), t;
        unsigned r = (unsigned)(t_rng() % 100);
        uint32_t un, tun = 0;
        struct conv_req rq;
        int want, got;

        if (t_rng() % 4000 == 0) { /* expiry or USER.DEL of the user */
            size_t had = 0;

            for (unsigned k = 0; k < MC; k++)
                had += m_exists(&model[u][k]);
            memset(model[u], 0, sizeof(model[u]));
            wrong += conv_forget_user(s, uid) != had;
            wrong += conv_total(s, uid) != 0;
            continue;
        }
        if (t_rng() % 3000 == 0) { /* mark all read */
            for (unsigned k = 0; k < MC; k++) {
                struct mconv *c = &model[u][k];

                m_set_read(&c->main, c->sparse, c->main.max);
                for (unsigned tt = 0; tt < MT; tt++)
                    if (c->has[tt])
                        m_set_read(&c->thr[tt], c->sparse, c->thr[tt].max);
            }
            wrong += conv_read_all_user(s, uid, &t) != 0 || t != 0;
            continue;
        }
        if (r < 6) {
            wrong += conv_get(s, uid, cid) != m_unread(mc);
            continue;
        } else if (r < 9) {
            wrong += m_check_user(s, u);
            continue;
        } else if (r < 12) {
            wrong += m_check_state(s, u, j);
            continue;
        } else if (r < 14) {
            memset(mc, 0, sizeof(*mc));
            wrong += conv_del(s, uid, cid) != m_total(u);
            continue;
        }
        m_request(j, &rq);
        before = *mc;
        want = m_apply(mc, &rq, &tun);
        if (want == 1) {
            *mc = before; /* the model's own bounds, far below the store's */
            continue;
        }
        got = conv_apply(s, uid, cid, &rq, &un, &t);
        refused += want != 0;
        wrong += got != want;
        if (want != 0) {
            *mc = before;
            continue;
        }
        wrong += un != (rq.flags & CONV_THREAD ? tun : m_unread(mc)) ||
                 t != m_total(u);
        if (i % 20000 == 0) {
            audits += conv_audit(s);
            wrong += conv_entries(s) != m_count();
        }
    }
    CHECK_EQ_U64(wrong, 0);
    CHECK_EQ_U64(audits, 0);
    CHECK(refused > 0); /* mode mismatches were tried */
    CHECK_EQ_U64(conv_audit(s), 0);
    CHECK_EQ_U64(conv_entries(s), m_count());
    /* Every user's list, counts and states. */
    for (unsigned u = 0; u < MU; u++) {
        size_t k = 0;

        list(s, m_uids[u], 1000, &f);
        /* Pool order is ascending cid except 0 (first) and UINT64_MAX. */
        for (unsigned j = 0; j < m_pool[u]; j++) {
            unsigned jj = j == 0 ? 0 : j == m_pool[u] - 1 ? 1 : j + 1;

            wrong += m_check_state(s, u, jj);
            if (m_unread(&model[u][jj]) == 0)
                continue;
            wrong += k >= f.n || f.v[2 * k] != m_cid(jj) ||
                     f.v[2 * k + 1] != m_unread(&model[u][jj]);
            k++;
        }
        wrong += k != f.n;
        wrong += m_check_user(s, u);
    }
    CHECK_EQ_U64(wrong, 0);
    conv_destroy(s);
}

struct info_sum {
    size_t n, recalls;
    uint64_t unread;
};

static void info_visit(uint64_t uid, uint64_t cid, const struct conv_info *ci,
                       void *ctx)
{
    struct info_sum *is = ctx;

    (void)uid, (void)cid;
    is->n++;
    is->recalls += ci->nrecall;
    is->unread += ci->unread;
}

/* Per user: one conversation (inline), an array, a map past
 * CONV_SMALL_MAX; a recalled seq's record freed; bytes back to empty. */
static void test_del_user(void)
{
    struct conv_store *s = conv_create();
    size_t empty = conv_bytes(s);
    const uint32_t sizes[3] = {1, 5, CONV_SMALL_MAX + 20};
    struct info_sum is;
    uint32_t un;
    uint64_t t;

    for (uint64_t u = 0; u < 3; u++)
        for (uint64_t c = 0; c < sizes[u]; c++)
            CHECK_EQ_U64(conv_update(s, CONV_OP_SEQ, u, c + 1, 3, &un, &t), 0);
    CHECK_EQ_U64(conv_update(s, CONV_OP_RECALL, 2, 7, 2, &un, &t), 0);
    CHECK_EQ_U64(conv_update(s, CONV_OP_SEQ, 9, 1, 1, &un, &t), 0);
    is = (struct info_sum){0, 0, 0};
    CHECK_EQ_U64(conv_user_info(s, 2, info_visit, &is), sizes[2]);
    CHECK_EQ_U64(is.n, sizes[2]);
    CHECK_EQ_U64(is.recalls, 1);
    CHECK_EQ_U64(is.unread, conv_total(s, 2));
    for (uint64_t u = 0; u < 3; u++) {
        CHECK_EQ_U64(conv_forget_user(s, u), sizes[u]);
        CHECK_EQ_U64(conv_forget_user(s, u), 0);
        CHECK_EQ_U64(conv_total(s, u), 0);
        CHECK_EQ_U64(conv_get(s, u, 1), 0);
        CHECK_EQ_U64(conv_audit(s), 0);
    }
    CHECK_EQ_U64(conv_entries(s), 1); /* user 9 untouched */
    CHECK_EQ_U64(conv_get(s, 9, 1), 1);
    CHECK_EQ_U64(conv_forget_user(s, 9), 1);
    CHECK_EQ_U64(conv_bytes(s), empty);
    is = (struct info_sum){0, 0, 0};
    CHECK_EQ_U64(conv_user_info(s, 9, info_visit, &is), 0);
    CHECK_EQ_U64(is.n, 0);
    conv_destroy(s);
}

int main(void)
{
    T_RUN(test_empty);
    T_RUN(test_seq_is_idempotent);
    T_RUN(test_seq_at_or_below_watermark_adds_nothing);
    T_RUN(test_read_is_monotonic);
    T_RUN(test_markunread_moves_back);
    T_RUN(test_recall);
    T_RUN(test_recall_limit);
    T_RUN(test_mute);
    T_RUN(test_del);
    T_RUN(test_list);
    T_RUN(test_incr_and_saturation);
    T_RUN(test_wide_values_round_trip);
    T_RUN(test_user_forms);
    T_RUN(test_memory_per_entry);
    T_RUN(test_scan);
    T_RUN(test_put);
    T_RUN(test_del_user);
    T_RUN(test_mentions);
    T_RUN(test_mention_bound);
    T_RUN(test_sources);
    T_RUN(test_sparse);
    T_RUN(test_threads);
    T_RUN(test_thread_bound);
    T_RUN(test_read_all_user);
    T_RUN(test_put_features);
    T_RUN(test_memory_of_features);
    T_RUN(test_random_vs_model);
    T_END();
}
