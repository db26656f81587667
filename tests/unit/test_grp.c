/*
 * test_grp.c - GRP: seqs, joining at the head, GRP.SEEN with a ts inside,
 * before and after the window, monotonic seen, the early-stopping total,
 * leaving, limits, window changes, timestamps that go backwards or span
 * more than 32 bits, and a long randomized run against a model that keeps
 * every message.
 */
#include "grp.h"
#include "t.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define CAP 9            /* the display cap of these tests */
#define WINDOW (CAP + 1) /* what the server passes for it */
#define MAXG 1000        /* grp-max-groups */

static uint64_t post(struct grp_store *s, uint64_t gid, uint64_t ts)
{
    uint64_t seq = 0;

    CHECK_EQ_U64(grp_post(s, gid, ts, WINDOW, &seq), GRP_OK);
    return seq;
}

static uint64_t join(struct grp_store *s, uint64_t uid, uint64_t gid)
{
    uint64_t u = UINT64_MAX;

    CHECK_EQ_U64(grp_join(s, uid, gid, MAXG, &u), GRP_OK);
    return u;
}

static uint64_t seen(struct grp_store *s, uint64_t uid, uint64_t gid,
                     uint64_t ts)
{
    uint64_t u = UINT64_MAX;

    CHECK_EQ_U64(grp_seen(s, uid, gid, ts, MAXG, &u), GRP_OK);
    return u;
}

static void test_seqs_are_dense_per_group(void)
{
    struct grp_store *s = grp_create();

    CHECK(s != NULL);
    CHECK_EQ_U64(post(s, 10, 1000), 1);
    CHECK_EQ_U64(post(s, 10, 1001), 2);
    CHECK_EQ_U64(post(s, 20, 1002), 1);
    CHECK_EQ_U64(post(s, 10, 1003), 3);
    CHECK_EQ_U64(post(s, 0, 5), 1);
    CHECK_EQ_U64(post(s, UINT64_MAX, 5), 1);
    CHECK_EQ_U64(post(s, 20, 1004), 2);
    /* Posts create groups but no memberships. */
    CHECK_EQ_U64(grp_entries(s), 0);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
    grp_destroy(NULL);
}

static void test_join_at_head(void)
{
    struct grp_store *s = grp_create();

    for (int i = 0; i < 5; i++)
        post(s, 1, 100 + (uint64_t)i);
    CHECK_EQ_U64(join(s, 7, 1), 0); /* past messages are not unread */
    post(s, 1, 200);
    post(s, 1, 201);
    CHECK_EQ_U64(grp_unread(s, 7, 1), 2);
    /* Joining again changes nothing. */
    CHECK_EQ_U64(join(s, 7, 1), 2);
    CHECK_EQ_U64(grp_unread(s, 7, 1), 2);
    /* A group that never posted: joins at 0, the first post counts. */
    CHECK_EQ_U64(join(s, 7, 2), 0);
    post(s, 2, 300);
    CHECK_EQ_U64(grp_unread(s, 7, 2), 1);
    CHECK_EQ_U64(grp_groups(s, 7), 2);
    CHECK_EQ_U64(grp_entries(s), 2);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

/* Messages at ts 1000, 1010, ..., 1000 + 10 * (n - 1). */
static void post_n(struct grp_store *s, uint64_t gid, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        post(s, gid, 1000 + 10 * (uint64_t)i);
}

static void test_seen_inside_the_window(void)
{
    struct grp_store *s = grp_create();

    join(s, 1, 5);
    post_n(s, 5, 8); /* seqs 1..8 at 1000..1070 */
    CHECK_EQ_U64(grp_unread(s, 1, 5), 8);
    CHECK_EQ_U64(seen(s, 1, 5, 1025), 5); /* seen 1..3 */
    CHECK_EQ_U64(seen(s, 1, 5, 1030), 4); /* a message at ts is seen */
    CHECK_EQ_U64(seen(s, 1, 5, 1069), 1);
    CHECK_EQ_U64(seen(s, 1, 5, 1070), 0);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

static void test_seen_before_and_after_the_window(void)
{
    struct grp_store *s = grp_create();

    join(s, 1, 5);
    join(s, 2, 5);
    join(s, 3, 5);
    post_n(s, 5, 30); /* window keeps seqs 21..30 (1200..1290) */
    /* Before the window: more than CAP unread, reported as CAP + 1. */
    CHECK_EQ_U64(seen(s, 1, 5, 1150), CAP + 1);
    CHECK_EQ_U64(seen(s, 2, 5, 0), CAP + 1);
    /* The oldest kept message itself is exact. */
    CHECK_EQ_U64(seen(s, 3, 5, 1200), CAP);
    /* After the head: everything seen. */
    CHECK_EQ_U64(seen(s, 1, 5, 99999), 0);
    CHECK_EQ_U64(seen(s, 2, 5, UINT64_MAX), 0);
    /* A small group keeps all of its messages: exact before the first. */
    join(s, 4, 6);
    post_n(s, 6, 3);
    CHECK_EQ_U64(seen(s, 4, 6, 999), 3);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

static void test_seen_is_monotonic(void)
{
    struct grp_store *s = grp_create();

    join(s, 1, 5);
    post_n(s, 5, 8);
    CHECK_EQ_U64(seen(s, 1, 5, 1050), 2);
    CHECK_EQ_U64(seen(s, 1, 5, 1010), 2); /* stale: no move back */
    CHECK_EQ_U64(seen(s, 1, 5, 0), 2);
    CHECK_EQ_U64(seen(s, 1, 5, UINT64_MAX), 0);
    CHECK_EQ_U64(seen(s, 1, 5, 1000), 0);
    post(s, 5, 2000);
    CHECK_EQ_U64(seen(s, 1, 5, 1070), 1);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

static void test_seen_joins_a_non_member(void)
{
    struct grp_store *s = grp_create();

    post_n(s, 5, 8);
    /* At the point given: only messages after ts are unread. */
    CHECK_EQ_U64(seen(s, 1, 5, 1045), 3);
    CHECK_EQ_U64(grp_groups(s, 1), 1);
    /* Without a ts (the head): 0. */
    CHECK_EQ_U64(seen(s, 2, 5, UINT64_MAX), 0);
    /* A group nobody posted to yet. */
    CHECK_EQ_U64(seen(s, 3, 77, 5), 0);
    post(s, 77, 6);
    CHECK_EQ_U64(grp_unread(s, 3, 77), 1);
    CHECK_EQ_U64(grp_entries(s), 3);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

static void test_total_stops_early(void)
{
    struct grp_store *s = grp_create();

    for (uint64_t g = 1; g <= 4; g++) {
        join(s, 1, g);
        for (uint64_t i = 0; i < g; i++)
            post(s, g, 10);
    }
    /* 1 + 2 + 3 + 4, exact while within the limit. */
    CHECK_EQ_U64(grp_total(s, 1, 10), 10);
    CHECK_EQ_U64(grp_total(s, 1, 100), 10);
    /* Past it: some value above the limit, without the whole sum. */
    CHECK(grp_total(s, 1, 9) > 9);
    CHECK_EQ_U64(grp_total(s, 1, 0), 1); /* stops after the first group */
    CHECK_EQ_U64(grp_total(s, 99, 5), 0);
    grp_destroy(s);
}

static void test_leave_and_non_members(void)
{
    struct grp_store *s = grp_create();
    struct grp_item items[4];

    join(s, 1, 5);
    join(s, 1, 6);
    join(s, 1, 7);
    post(s, 5, 1);
    post(s, 6, 1);
    post(s, 7, 1);
    CHECK(grp_leave(s, 1, 6));
    CHECK(!grp_leave(s, 1, 6));
    CHECK(!grp_leave(s, 1, 8)); /* unknown group */
    CHECK(!grp_leave(s, 2, 5)); /* unknown user */
    CHECK_EQ_U64(grp_unread(s, 1, 6), 0);
    CHECK_EQ_U64(grp_unread(s, 2, 5), 0);
    CHECK_EQ_U64(grp_unread(s, 1, 99), 0);
    CHECK_EQ_U64(grp_total(s, 1, CAP), 2);
    CHECK_EQ_U64(grp_list(s, 1, items), 2);
    CHECK(items[0].gid == 5 && items[0].st.unread == 1);
    CHECK(items[1].gid == 7 && items[1].st.unread == 1);
    CHECK(grp_leave(s, 1, 5));
    CHECK(grp_leave(s, 1, 7));
    CHECK_EQ_U64(grp_groups(s, 1), 0);
    CHECK_EQ_U64(grp_entries(s), 0);
    /* Rejoining starts at the head again. */
    CHECK_EQ_U64(join(s, 1, 6), 0);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

static void test_list_by_gid(void)
{
    struct grp_store *s = grp_create();
    struct grp_item items[8];
    uint64_t gids[] = {900, 3, UINT64_MAX, 0, 42};

    for (int i = 0; i < 5; i++)
        join(s, 1, gids[i]);
    for (int i = 0; i < 5; i++)
        for (int k = 0; k <= i; k++)
            post(s, gids[i], 1);
    seen(s, 1, 42, UINT64_MAX); /* no unread: left out */
    CHECK_EQ_U64(grp_list(s, 1, items), 4);
    CHECK(items[0].gid == 0 && items[0].st.unread == 4);
    CHECK(items[1].gid == 3 && items[1].st.unread == 2);
    CHECK(items[2].gid == 900 && items[2].st.unread == 1);
    CHECK(items[3].gid == UINT64_MAX && items[3].st.unread == 3);
    CHECK_EQ_U64(grp_list(s, 2, items), 0);
    grp_destroy(s);
}

static void test_max_groups(void)
{
    struct grp_store *s = grp_create();
    uint64_t u;

    CHECK_EQ_U64(grp_join(s, 1, 10, 2, &u), GRP_OK);
    CHECK_EQ_U64(grp_join(s, 1, 11, 2, &u), GRP_OK);
    CHECK_EQ_U64(grp_join(s, 1, 12, 2, &u), GRP_ELIMIT);
    CHECK_EQ_U64(grp_seen(s, 1, 12, 5, 2, &u), GRP_ELIMIT);
    /* A member is never refused. */
    CHECK_EQ_U64(grp_join(s, 1, 11, 2, &u), GRP_OK);
    CHECK_EQ_U64(grp_seen(s, 1, 11, UINT64_MAX, 2, &u), GRP_OK);
    CHECK_EQ_U64(grp_groups(s, 1), 2);
    grp_leave(s, 1, 10);
    CHECK_EQ_U64(grp_join(s, 1, 12, 2, &u), GRP_OK);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

/* A post older than the group's newest counts at the newest's time. */
static void test_old_timestamps_are_clamped(void)
{
    struct grp_store *s = grp_create();

    join(s, 1, 5);
    post(s, 5, 1000);
    post(s, 5, 2000);
    post(s, 5, 1500); /* recorded at 2000 */
    post(s, 5, 3000);
    CHECK_EQ_U64(seen(s, 1, 5, 1999), 3);
    CHECK_EQ_U64(seen(s, 1, 5, 2000), 1);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

/* The window follows the cap it is given at the next post. */
static void test_window_changes(void)
{
    struct grp_store *s = grp_create();
    uint64_t seq, u;

    for (uint64_t i = 1; i <= 20; i++)
        grp_post(s, 5, 1000 + i, 4, &seq); /* keeps 17..20 */
    CHECK_EQ_U64(grp_seen(s, 1, 5, 1016, MAXG, &u), GRP_OK);
    CHECK_EQ_U64(u, 4); /* before the window */
    CHECK_EQ_U64(grp_seen(s, 2, 5, 1018, MAXG, &u), GRP_OK);
    CHECK_EQ_U64(u, 2);
    /* Larger: the kept timestamps stay, the window fills up again. */
    grp_post(s, 5, 1021, 8, &seq);
    CHECK_EQ_U64(grp_seen(s, 3, 5, 1017, MAXG, &u), GRP_OK);
    CHECK_EQ_U64(u, 4); /* 18..21 */
    CHECK_EQ_U64(grp_seen(s, 4, 5, 1000, MAXG, &u), GRP_OK);
    CHECK_EQ_U64(u, 5); /* just before the 5 kept */
    CHECK_EQ_U64(grp_audit(s), 0);
    /* Smaller: the newest are kept. */
    grp_post(s, 5, 1022, 2, &seq);
    CHECK_EQ_U64(grp_seen(s, 5, 5, 1021, MAXG, &u), GRP_OK);
    CHECK_EQ_U64(u, 1);
    CHECK_EQ_U64(grp_seen(s, 6, 5, 1019, MAXG, &u), GRP_OK);
    CHECK_EQ_U64(u, 2);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

/* A window's slots are allocated as messages come (4, 8, 16, ... up to
 * the window), and every kept timestamp survives each growth. */
static void test_window_grows_lazily(void)
{
    struct grp_store *s = grp_create();
    size_t empty, one;
    uint64_t seq, u;

    grp_post(s, 9, 5, 101, &seq); /* group 9 exists, ring of 4 */
    empty = grp_bytes(s);
    grp_post(s, 5, 1001, 101, &seq);
    one = grp_bytes(s);
    CHECK(one > empty);
    for (uint64_t i = 2; i <= 12; i++)
        grp_post(s, 5, 1000 + i, 101, &seq);
    /* 12 kept: 16 slots, not 101. */
    CHECK_EQ_U64(grp_bytes(s) - one, (16 - 4) * sizeof(uint32_t));
    for (uint64_t ts = 1000; ts <= 1013; ts++) {
        CHECK_EQ_U64(grp_seen(s, ts, 5, ts, MAXG, &u), GRP_OK);
        CHECK_EQ_U64(u, ts >= 1012 ? 0 : 1012 - ts);
    }
    one = grp_bytes(s); /* with the 14 new members */
    for (uint64_t i = 13; i <= 300; i++)
        grp_post(s, 5, 1000 + i, 101, &seq);
    /* Full: exactly the window, the newest 101 kept. */
    CHECK_EQ_U64(grp_bytes(s) - one, (101 - 16) * sizeof(uint32_t));
    CHECK_EQ_U64(grp_seen(s, 1, 5, 1200, MAXG, &u), GRP_OK);
    CHECK_EQ_U64(u, 100); /* 200 is the oldest kept */
    CHECK_EQ_U64(grp_seen(s, 2, 5, 1199, MAXG, &u), GRP_OK);
    CHECK_EQ_U64(u, 101); /* before the window: unread-cap + 1 */
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

/* Kept timestamps spanning more than 2^32 ms still compare right. */
static void test_wide_timestamps(void)
{
    struct grp_store *s = grp_create();
    uint64_t day = 86400000, t0 = UINT64_C(1700000000000);

    join(s, 1, 5);
    join(s, 2, 5);
    join(s, 3, 5);
    post(s, 5, t0);
    post(s, 5, t0 + 30 * day);
    post(s, 5, t0 + 60 * day); /* rebases: t0 + 60d - t0 > 2^32 ms */
    post(s, 5, t0 + 61 * day);
    CHECK_EQ_U64(seen(s, 1, 5, t0 + 60 * day), 1);
    CHECK_EQ_U64(seen(s, 2, 5, t0 + 45 * day), 2);
    /* The oldest fell below the new base: a ts older than the base
     * counts it unread (documented in grp.h); one at or after the base
     * counts it seen, which is exact (its own ts is older still). */
    CHECK_EQ_U64(seen(s, 3, 5, t0 + day), 4);
    CHECK_EQ_U64(seen(s, 3, 5, t0 + 29 * day), 3);
    CHECK_EQ_U64(grp_audit(s), 0);
    /* Far beyond 2^32 ms at once. */
    post(s, 5, UINT64_MAX - 5);
    CHECK_EQ_U64(grp_unread(s, 1, 5), 2);
    CHECK_EQ_U64(seen(s, 1, 5, UINT64_MAX - 6), 1);
    CHECK_EQ_U64(seen(s, 1, 5, UINT64_MAX - 5), 0);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

/* Loading refuses what cannot be a group or a membership, and what it
 * accepts behaves as the store it came from. */
/* grp_restore_member of a plain membership: not muted, no mentions. */
static int restore_member(struct grp_store *s, uint64_t uid, uint32_t group,
                          uint64_t unread)
{
    struct grp_member_info mi = {unread, false, 0, NULL};

    return grp_restore_member(s, uid, group, &mi);
}

static void test_restore(void)
{
    struct grp_store *s = grp_create();
    const uint64_t ts[4] = {100, 200, 200, 400}, back[2] = {300, 299};
    struct grp_group_info gi;

    CHECK_EQ_U64(grp_restore_group(s, 5, 10, 4, 4, ts), 0);
    CHECK_EQ_U64(grp_restore_group(s, 5, 10, 4, 4, ts), 1); /* twice */
    CHECK_EQ_U64(grp_restore_group(s, 6, 10, 3, 4, ts), 1); /* > window */
    CHECK_EQ_U64(grp_restore_group(s, 6, 3, 4, 4, ts), 1);  /* > head */
    CHECK_EQ_U64(grp_restore_group(s, 6, 3, 0, 0, ts), 1);  /* no window */
    CHECK_EQ_U64(grp_restore_group(s, 6, 9, 2, 2, back), 1);
    CHECK_EQ_U64(grp_restore_group(s, 6, 9, GRP_WINDOW_MAX + 1, 2, ts), 1);
    CHECK_EQ_U64(grp_restore_group(s, 7, 0, 0, 0, NULL), 0); /* joined only */
    CHECK_EQ_U64(grp_group_count(s), 2);
    grp_group_info(s, 0, &gi);
    CHECK(gi.gid == 5 && gi.head == 10 && gi.window == 4 && gi.known == 4);
    CHECK_EQ_U64(grp_group_ts(s, 0, 0), 100);
    CHECK_EQ_U64(grp_group_ts(s, 0, 3), 400);

    CHECK_EQ_U64(restore_member(s, 1, 0, 3), 0);
    CHECK_EQ_U64(restore_member(s, 1, 0, 3), 1);  /* twice */
    CHECK_EQ_U64(restore_member(s, 2, 2, 0), 1);  /* no group 2 */
    CHECK_EQ_U64(restore_member(s, 2, 0, 11), 1); /* over the head */
    CHECK_EQ_U64(restore_member(s, 1, 1, 0), 0);
    CHECK_EQ_U64(grp_entries(s), 2);
    CHECK_EQ_U64(grp_unread(s, 1, 5), 3);
    CHECK_EQ_U64(seen(s, 1, 5, 250), 1); /* seqs 7..10 kept: 9 at 200 */
    CHECK_EQ_U64(post(s, 5, 500), 11);
    CHECK_EQ_U64(post(s, 7, 1), 1);
    CHECK_EQ_U64(grp_unread(s, 1, 7), 1);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

/* ---- randomized, against a model that keeps every message ---------- */

#define M_GROUPS 7
#define M_USERS 9
#define M_MSGS 3000
#define M_MAXG 4
#define M_RECALLS 1000 /* below GRP_RECALL_MAX: the model keeps them all */
#define M_MENTIONS 60  /* per membership; the store keeps up to 1024 */

struct m_group {
    uint64_t gid;
    uint32_t n;                /* head */
    uint64_t ts[M_MSGS];       /* ts[seq - 1], clamped like the store */
    bool recalled[M_MSGS + 1]; /* by seq */
    unsigned nrecalled;
};

struct m_user {
    bool member[M_GROUPS], muted[M_GROUPS];
    uint64_t seen[M_GROUPS];
    unsigned nment[M_GROUPS];
    uint64_t ment[M_GROUPS][M_MENTIONS]; /* mentioned seqs above seen */
};

static struct m_group mg[M_GROUPS];
static struct m_user mu[M_USERS];

static uint64_t capped(uint64_t v)
{
    return v > CAP ? CAP + 1 : v;
}

/* Where SEEN ts puts a member: after the last post at or before ts, but
 * never before the window of the last WINDOW posts (the store keeps only
 * their times: older reads as "just before them"). */
static uint64_t m_pos(const struct m_group *g, uint64_t ts)
{
    uint64_t p = 0, floor = g->n > WINDOW ? g->n - WINDOW : 0;

    while (p < g->n && g->ts[p] <= ts)
        p++;
    return p > floor ? p : floor;
}

static unsigned m_groups_of(unsigned u)
{
    unsigned n = 0;

    for (unsigned g = 0; g < M_GROUPS; g++)
        n += mu[u].member[g];
    return n;
}

/* Forgets u's mentions in g at or below seq. */
static void m_prune(unsigned u, unsigned g, uint64_t seq)
{
    unsigned k = 0;

    for (unsigned i = 0; i < mu[u].nment[g]; i++)
        if (mu[u].ment[g][i] > seq)
            mu[u].ment[g][k++] = mu[u].ment[g][i];
    mu[u].nment[g] = k;
}

static uint64_t m_unread(unsigned u, unsigned g)
{
    uint64_t n = 0;

    if (!mu[u].member[g])
        return 0;
    for (uint64_t q = mu[u].seen[g] + 1; q <= mg[g].n; q++)
        n += !mg[g].recalled[q];
    return n;
}

static uint64_t m_mentions(unsigned u, unsigned g)
{
    uint64_t n = 0;

    for (unsigned i = 0; mu[u].member[g] && i < mu[u].nment[g]; i++)
        n += mu[u].ment[g][i] > mu[u].seen[g] &&
             !mg[g].recalled[mu[u].ment[g][i]];
    return n;
}

/* The model's JOIN (advance false) and SEEN (advance true). */
static int m_place(unsigned u, unsigned g, uint64_t ts, bool advance,
                   uint64_t *unread)
{
    uint64_t p = m_pos(&mg[g], ts);

    if (mu[u].member[g]) {
        if (advance && p > mu[u].seen[g]) {
            mu[u].seen[g] = p;
            m_prune(u, g, p);
        }
    } else {
        if (m_groups_of(u) >= M_MAXG)
            return GRP_ELIMIT;
        mu[u].member[g] = true;
        mu[u].muted[g] = false;
        mu[u].nment[g] = 0;
        mu[u].seen[g] = p;
    }
    *unread = m_unread(u, g);
    return GRP_OK;
}

/* A post at now (a ts backwards now and then: clamped) mentioning up to
 * three users; false when the model cannot hold it. */
static bool m_post(struct grp_store *s, unsigned g, uint64_t *now,
                   const uint64_t *uids, size_t *bad)
{
    uint64_t ts = *now, seq = 0, who[3];
    unsigned n = (unsigned)(t_rng() % 4), idx[3];

    if (mg[g].n == M_MSGS)
        return false;
    for (unsigned k = 0; k < n; k++) {
        idx[k] = (unsigned)(t_rng() % M_USERS);
        who[k] = uids[idx[k]];
        if (mu[idx[k]].nment[g] == M_MENTIONS)
            return false;
    }
    if (t_rng() % 10 == 0)
        ts = *now - t_rng() % 50;
    else
        *now = ts = *now + t_rng() % 3;
    if (mg[g].n > 0 && ts < mg[g].ts[mg[g].n - 1])
        mg[g].ts[mg[g].n] = mg[g].ts[mg[g].n - 1];
    else
        mg[g].ts[mg[g].n] = ts;
    mg[g].n++;
    for (unsigned k = 0; k < n; k++) {
        struct m_user *m = &mu[idx[k]];
        bool dup = false;

        for (unsigned i = 0; i < m->nment[g]; i++)
            dup |= m->ment[g][i] == mg[g].n;
        if (m->member[g] && !dup)
            m->ment[g][m->nment[g]++] = mg[g].n;
    }
    *bad += grp_post_mention(s, mg[g].gid, ts, WINDOW, who, n, &seq) != GRP_OK;
    *bad += seq != mg[g].n;
    return true;
}

/* GRP.STATE against the model. */
static size_t m_check_state(const struct grp_store *s, const uint64_t *uids,
                            unsigned u, unsigned g)
{
    struct grp_state st;
    uint64_t first = 0;

    grp_state(s, uids[u], mg[g].gid, &st);
    if (!mu[u].member[g])
        return st.head || st.seen || st.unread || st.muted || st.mentions ||
               st.first_unread;
    for (uint64_t q = mu[u].seen[g] + 1; q <= mg[g].n && !first; q++)
        first = mg[g].recalled[q] ? 0 : q;
    return (st.head != mg[g].n) + (st.seen != mu[u].seen[g]) +
           (st.unread != m_unread(u, g)) + (st.muted != mu[u].muted[g]) +
           (st.mentions != m_mentions(u, g)) + (st.first_unread != first);
}

static void test_random_vs_model(void)
{
    struct grp_store *s = grp_create();
    uint64_t uids[M_USERS], now = 1000;
    size_t bad = 0;

    memset(mg, 0, sizeof(mg));
    memset(mu, 0, sizeof(mu));
    for (unsigned g = 0; g < M_GROUPS; g++)
        mg[g].gid = t_rng();
    for (unsigned u = 0; u < M_USERS; u++)
        uids[u] = t_rng();
    for (int round = 0; round < 30000; round++) {
        unsigned g = (unsigned)(t_rng() % M_GROUPS);
        unsigned u = (unsigned)(t_rng() % M_USERS);
        unsigned op = (unsigned)(t_rng() % 120);
        uint64_t got = 0, want = 0;

        if (op < 30) {
            m_post(s, g, &now, uids, &bad);
        } else if (op < 40) {
            int rc = grp_join(s, uids[u], mg[g].gid, M_MAXG, &got);

            bad += rc != m_place(u, g, UINT64_MAX, false, &want);
            bad += rc == GRP_OK && got != want;
        } else if (op < 45) {
            bad += grp_leave(s, uids[u], mg[g].gid) != mu[u].member[g];
            mu[u].member[g] = false;
        } else if (op < 65) {
            /* A ts near recent posts, or far back, or none (the head). */
            uint64_t r = t_rng() % 10;
            uint64_t ts = r < 6   ? now - t_rng() % 40
                          : r < 8 ? now - t_rng() % 400
                                  : UINT64_MAX;
            int rc = grp_seen(s, uids[u], mg[g].gid, ts, M_MAXG, &got);

            bad += rc != m_place(u, g, ts, true, &want);
            bad += rc == GRP_OK && got != want;
        } else if (op < 75) {
            bad += grp_unread(s, uids[u], mg[g].gid) != m_unread(u, g);
            bad += m_check_state(s, uids, u, g);
        } else if (op < 82) {
            uint64_t total = 0, ment = 0;
            uint32_t chats = 0;

            for (unsigned k = 0; k < M_GROUPS; k++) {
                ment += m_mentions(u, k);
                if (mu[u].muted[k] || !mu[u].member[k])
                    continue;
                total += m_unread(u, k);
                chats += m_unread(u, k) != 0;
            }
            got = grp_total(s, uids[u], CAP);
            bad += total <= CAP ? got != total : got <= CAP;
            bad += grp_total(s, uids[u], UINT64_MAX) != total;
            bad += grp_chats(s, uids[u]) != chats;
            bad += grp_mentions(s, uids[u]) != ment;
        } else if (op < 87) {
            bool f = t_rng() % 2;
            int rc = grp_mute(s, uids[u], mg[g].gid, f);

            bad += rc != (mu[u].member[g] ? GRP_OK : 1);
            if (mu[u].member[g])
                mu[u].muted[g] = f;
        } else if (op < 93) {
            uint64_t seq = t_rng() % (mg[g].n + 2);
            int rc = grp_markunread(s, uids[u], mg[g].gid, seq, M_MAXG, &got);

            if (seq == 0 || seq > mg[g].n) {
                bad += rc != GRP_EINVAL;
            } else if (!mu[u].member[g] && m_groups_of(u) >= M_MAXG) {
                bad += rc != GRP_ELIMIT;
            } else {
                if (!mu[u].member[g]) {
                    mu[u].member[g] = true;
                    mu[u].muted[g] = false;
                    mu[u].nment[g] = 0;
                }
                mu[u].seen[g] = seq - 1;
                m_prune(u, g, seq - 1);
                bad += rc != GRP_OK || got != m_unread(u, g);
            }
        } else if (op < 98) {
            uint64_t seq = mg[g].n ? 1 + t_rng() % (mg[g].n + 1) : 1;
            int rc;

            if (mg[g].nrecalled == M_RECALLS)
                continue;
            rc = grp_recall(s, mg[g].gid, seq);
            if (seq > mg[g].n) {
                bad += rc != GRP_EINVAL;
            } else {
                bad += rc != !mg[g].recalled[seq];
                mg[g].nrecalled += !mg[g].recalled[seq];
                mg[g].recalled[seq] = true;
            }
        } else if (op < 100) {
            bad += grp_seen_all(s, uids[u]) != GRP_OK;
            for (unsigned k = 0; k < M_GROUPS; k++)
                if (mu[u].member[k]) {
                    mu[u].seen[k] = mg[k].n;
                    mu[u].nment[k] = 0;
                }
            bad += grp_total(s, uids[u], UINT64_MAX) != 0;
            bad += grp_mentions(s, uids[u]) != 0;
        } else if (op < 110) {
            bad += capped(grp_unread(s, uids[u], mg[g].gid)) !=
                   capped(m_unread(u, g));
        } else {
            struct grp_item items[M_GROUPS];
            uint32_t n = grp_list(s, uids[u], items), k = 0;

            bad += grp_groups(s, uids[u]) != m_groups_of(u);
            for (uint32_t i = 1; i < n; i++)
                bad += items[i].gid <= items[i - 1].gid;
            for (unsigned x = 0; x < M_GROUPS; x++) {
                if (m_unread(u, x) == 0)
                    continue;
                /* The model's groups in gid order are the store's. */
                for (k = 0; k < n && items[k].gid != mg[x].gid; k++)
                    ;
                bad += k == n || items[k].st.unread != m_unread(u, x) ||
                       items[k].st.mentions != m_mentions(u, x) ||
                       items[k].st.muted != mu[u].muted[x];
                want++;
            }
            bad += n != want;
        }
        if (round % 2000 == 0)
            bad += grp_audit(s);
    }
    for (unsigned u = 0; u < M_USERS; u++)
        for (unsigned g = 0; g < M_GROUPS; g++)
            bad += m_check_state(s, uids, u, g);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

struct memb {
    unsigned n;
    uint64_t unread, heads;
};

static void user_visit(uint64_t gid, const struct grp_state *st, void *ctx)
{
    struct memb *m = ctx;

    (void)gid;
    m->n++;
    m->unread += st->unread;
    m->heads += st->head;
}

/* USER.INFO's view of a user adds up to GRP.TOTAL; forgetting the user
 * leaves every group, which keep their heads and other members. */
static void test_user_info_and_del(void)
{
    struct grp_store *s = grp_create();
    struct memb m = {0, 0, 0};

    for (uint64_t g = 1; g <= 3; g++) {
        join(s, 7, g);
        join(s, 8, g);
        post_n(s, g, (unsigned)g);
    }
    CHECK_EQ_U64(grp_user_info(s, 7, user_visit, &m), 3);
    CHECK_EQ_U64(m.n, 3);
    CHECK_EQ_U64(m.unread, 6);
    CHECK_EQ_U64(m.heads, 6);
    CHECK_EQ_U64(grp_total(s, 7, 100), 6);
    CHECK_EQ_U64(grp_forget_user(s, 7), 3);
    CHECK_EQ_U64(grp_forget_user(s, 7), 0);
    CHECK_EQ_U64(grp_groups(s, 7), 0);
    CHECK_EQ_U64(grp_total(s, 7, 100), 0);
    CHECK_EQ_U64(grp_total(s, 8, 100), 6);
    CHECK_EQ_U64(grp_entries(s), 3);
    /* Back as new: joins at the head. */
    CHECK_EQ_U64(join(s, 7, 3), 0);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

/* GRP.JOIN with many gids: each joined at its head, repeats once, members
 * left where they are; past max_groups nothing changes. */
static void test_join_many(void)
{
    struct grp_store *s = grp_create();
    uint64_t seq, u, gids[] = {5, 6, 5, 7};

    for (int i = 0; i < 3; i++)
        CHECK_EQ_U64(grp_post(s, 5, 1000 + i, 10, &seq), GRP_OK);
    CHECK_EQ_U64(grp_seen(s, 1, 6, 0, 10, &u), GRP_OK); /* member of 6 */
    for (int i = 0; i < 4; i++)
        CHECK_EQ_U64(grp_post(s, 6, 2000 + i, 10, &seq), GRP_OK);
    CHECK_EQ_U64(grp_unread(s, 1, 6), 4);
    CHECK_EQ_U64(grp_join_many(s, 1, gids, 4, 2, 100, &u), GRP_ELIMIT);
    CHECK(!grp_member(s, 1, 5));
    CHECK_EQ_U64(grp_groups(s, 1), 1);
    CHECK_EQ_U64(grp_join_many(s, 1, gids, 4, 4, 100, &u), GRP_OK);
    CHECK_EQ_U64(u, 4); /* 5 and 7 at their heads, 6 as it was */
    CHECK_EQ_U64(grp_groups(s, 1), 3);
    CHECK_EQ_U64(grp_unread(s, 1, 5), 0);
    CHECK_EQ_U64(grp_post(s, 5, 3000, 10, &seq), GRP_OK);
    CHECK_EQ_U64(grp_total(s, 1, 100), 5);
    CHECK_EQ_U64(grp_join_many(s, 1, gids, 4, 3, 100, &u), GRP_OK); /* same */
    CHECK_EQ_U64(u, 5);
    CHECK(grp_join_many(s, 1, gids, 4, 3, 2, &u) == GRP_OK && u > 2);
    CHECK_EQ_U64(grp_audit(s), 0);
    grp_destroy(s);
}

int main(void)
{
    T_RUN(test_seqs_are_dense_per_group);
    T_RUN(test_join_at_head);
    T_RUN(test_seen_inside_the_window);
    T_RUN(test_seen_before_and_after_the_window);
    T_RUN(test_seen_is_monotonic);
    T_RUN(test_seen_joins_a_non_member);
    T_RUN(test_total_stops_early);
    T_RUN(test_leave_and_non_members);
    T_RUN(test_list_by_gid);
    T_RUN(test_max_groups);
    T_RUN(test_old_timestamps_are_clamped);
    T_RUN(test_window_changes);
    T_RUN(test_window_grows_lazily);
    T_RUN(test_wide_timestamps);
    T_RUN(test_restore);
    T_RUN(test_random_vs_model);
    T_RUN(test_user_info_and_del);
    T_RUN(test_join_many);
    T_END();
}
