/*
 * test_sec_grpbc.c - the GRP and BC sections of the snapshot: random stores
 * survive a round trip exactly (groups with their windows, every
 * membership, channels and every user's unread, and what the commands
 * answer afterwards, posts included). The stores' restore calls, which
 * judge the content, are tested in test_grp.c and test_bc.c.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>

#include "bc.h"
#include "grp.h"
#include "snap_craft.h"
#include "snapshot.h"
#include "t.h"

#define USERS 3000
#define GROUPS 200
#define CHANS 7

/*
 * Random GRP and BC data: groups never posted to, with a few posts, with
 * full windows of several sizes and timestamps spanning more than 2^32
 * ms; users in 0 to 30 groups, up to date or far behind; channels with
 * and without publishes.
 */
static void fill(struct db *db)
{
    uint64_t seq, u, ts = UINT64_C(1700000000000);
    bool reg;

    CHECK(db_init(db) == 0);
    for (unsigned g = 0; g < GROUPS; g++) {
        unsigned posts = (unsigned)(g % 4 ? t_rng() % 300 : 0);
        uint32_t window = g % 3 ? 100 : 7;

        for (unsigned p = 0; p < posts; p++) {
            ts += t_rng() % (g % 10 ? 1000 : UINT64_C(20) * 86400000);
            CHECK(grp_post(db->grp, g * 31, ts, window, &seq) == GRP_OK);
        }
    }
    for (unsigned i = 0; i < USERS; i++) {
        unsigned n = (unsigned)(t_rng() % (i % 4 ? 3 : 30));

        for (unsigned k = 0; k < n; k++) {
            uint64_t gid = t_rng() % GROUPS * 31;

            if (k % 2)
                CHECK(grp_join(db->grp, i, gid, 100, &u) == GRP_OK);
            else
                CHECK(grp_seen(db->grp, i, gid, ts - t_rng() % 5000000, 100,
                               &u) == GRP_OK);
        }
    }
    /* Chat features: mutes, posts that mention members, recalls. */
    for (unsigned i = 0; i < USERS; i += 3) {
        uint64_t gid = t_rng() % GROUPS * 31;

        grp_mute(db->grp, i, gid, true);
    }
    for (unsigned g = 0; g < GROUPS; g += 3) {
        uint64_t uids[6];

        for (unsigned k = 0; k < 6; k++)
            uids[k] = t_rng() % USERS;
        ts += 10;
        CHECK(grp_post_mention(db->grp, g * 31, ts, 100, uids, 6, &seq) ==
              GRP_OK);
        CHECK(grp_recall(db->grp, g * 31, 1 + t_rng() % seq) >= 0);
        if (g % 2)
            CHECK(grp_recall(db->grp, g * 31, seq) >= 0);
    }
    for (unsigned c = 0; c < CHANS; c++)
        for (unsigned i = 0; i < USERS; i++) {
            if (t_rng() % 3 == 0)
                CHECK(bc_unread(db->bc, i * 7919, c, &u, &reg) == 0);
            if (i % (c + 2) == 0)
                CHECK(bc_publish(db->bc, c, &u) == 0);
        }
}

/* An order-independent digest of the walks' visits. */
static void grp_visit(uint64_t uid, uint32_t group,
                      const struct grp_member_info *mi, void *ctx)
{
    uint64_t *sum = ctx, v[3] = {group, mi->unread, mi->muted};

    *sum += XXH3_64bits_withSeed(v, sizeof(v), uid);
    for (uint32_t i = 0; i < mi->nment; i++)
        *sum += XXH3_64bits_withSeed(&mi->ment[i], 8, uid ^ group);
}

static uint64_t grp_digest(const struct grp_store *s)
{
    uint64_t sum = 0, cursor = 0;

    do
        grp_scan_members(s, &cursor, 100, grp_visit, &sum);
    while (cursor != 0);
    for (uint32_t i = 0; i < grp_group_count(s); i++) {
        struct grp_group_info gi;

        grp_group_info(s, i, &gi);
        sum += XXH3_64bits_withSeed(&gi,
                                    offsetof(struct grp_group_info, recall), i);
        for (uint32_t k = 0; k < gi.known; k++)
            sum += grp_group_ts(s, i, k) * (k + 1);
        for (uint32_t k = 0; k < gi.nrecall; k++)
            sum += gi.recall[k] * (k + 7);
    }
    return sum;
}

static void bc_user_visit(uint64_t uid, uint64_t unread, void *ctx)
{
    uint64_t *sum = ctx;

    *sum += XXH3_64bits_withSeed(&unread, sizeof(unread), uid);
}

struct bc_walk {
    const struct bc_store *s;
    uint64_t sum;
};

static void bc_chan_visit(uint64_t ch, uint64_t head, size_t users, void *ctx)
{
    struct bc_walk *w = ctx;
    uint64_t cursor = 0, v[2] = {head, users};

    w->sum += XXH3_64bits_withSeed(v, sizeof(v), ch);
    do
        bc_scan_users(w->s, ch, &cursor, 100, bc_user_visit, &w->sum);
    while (cursor != 0);
}

static uint64_t bc_digest(const struct bc_store *s)
{
    struct bc_walk w = {s, 0};
    uint64_t cursor = 0;

    do
        bc_scan_channels(s, &cursor, 2, bc_chan_visit, &w);
    while (cursor != 0);
    return w.sum;
}

static void test_round_trip(void)
{
    struct db a, b;
    struct snap_meta meta;
    char *buf, err[256];
    size_t len, bad = 0;
    uint64_t seq1, seq2, ts = UINT64_C(1800000000000);

    fill(&a);
    len = snap_image(&a, 1, 0, &buf);
    CHECK(len > 0);
    CHECK(db_init(&b) == 0);
    CHECK(snapshot_load(buf, len, &b, &meta, err, sizeof(err)) == 0);
    CHECK(grp_entries(a.grp) > USERS);
    CHECK(bc_entries(a.bc) > USERS);
    CHECK_EQ_U64(grp_entries(b.grp), grp_entries(a.grp));
    CHECK_EQ_U64(grp_group_count(b.grp), grp_group_count(a.grp));
    CHECK_EQ_U64(bc_entries(b.bc), bc_entries(a.bc));
    CHECK_EQ_U64(grp_digest(b.grp), grp_digest(a.grp));
    CHECK_EQ_U64(bc_digest(b.bc), bc_digest(a.bc));
    /* The same answers, also after the same new posts. */
    for (unsigned g = 0; g < GROUPS; g += 7) {
        CHECK(grp_post(a.grp, g * 31, ts, 100, &seq1) == GRP_OK);
        CHECK(grp_post(b.grp, g * 31, ts, 100, &seq2) == GRP_OK);
        bad += seq1 != seq2;
    }
    for (unsigned i = 0; i < USERS; i++) {
        uint64_t gid = t_rng() % GROUPS * 31, t = ts - t_rng() % 10000000, u1,
                 u2;
        bool r1, r2;

        bad +=
            grp_total(a.grp, i, UINT64_MAX) != grp_total(b.grp, i, UINT64_MAX);
        bad += grp_mentions(a.grp, i) != grp_mentions(b.grp, i);
        bad += grp_chats(a.grp, i) != grp_chats(b.grp, i);
        bad += grp_unread(a.grp, i, gid) != grp_unread(b.grp, i, gid);
        bad += grp_seen(a.grp, i, gid, t, 100, &u1) !=
               grp_seen(b.grp, i, gid, t, 100, &u2);
        bad += u1 != u2;
        bad += bc_unread(a.bc, i * 7919, i % CHANS, &u1, &r1) != 0 ||
               bc_unread(b.bc, i * 7919, i % CHANS, &u2, &r2) != 0;
        bad += u1 != u2 || r1 != r2;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(db_audit(&b), 0);
    db_deinit(&a);
    db_deinit(&b);
    free(buf);
}

/* An empty store writes sections that load back empty. */
static void test_empty(void)
{
    struct db a, b;
    struct snap_meta meta;
    char *buf, err[256];
    size_t len;

    CHECK(db_init(&a) == 0);
    len = snap_image(&a, 1, 0, &buf);
    CHECK(len > 0);
    CHECK(db_init(&b) == 0);
    CHECK(snapshot_load(buf, len, &b, &meta, err, sizeof(err)) == 0);
    CHECK_EQ_U64(grp_group_count(b.grp), 0);
    CHECK_EQ_U64(bc_entries(b.bc), 0);
    db_deinit(&a);
    db_deinit(&b);
    free(buf);
}

/* Raw GRP section bytes, built by hand. */
struct raw {
    unsigned char b[512];
    size_t n;
};

static void put8(struct raw *r, uint8_t v)
{
    r->b[r->n++] = v;
}

static void putv(struct raw *r, uint64_t v)
{
    while (v >= 0x80) {
        put8(r, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    put8(r, (uint8_t)v);
}

static void put64(struct raw *r, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        put8(r, (uint8_t)(v >> (8 * i)));
}

/* Section `first` (ngroups | version << 40): group 5 with 3 posts, user 9
 * two behind; version 1 adds `recalls` (the gaps given) and the member's
 * flags and mentions. 0 when it loads, and then *st is user 9's state. */
static int load_grp(uint64_t first, uint8_t flags, uint64_t recall,
                    uint64_t mention, struct grp_state *st)
{
    struct raw r = {{0}, 0};
    struct snap_meta meta;
    char *buf = NULL, err[256];
    struct db db;
    size_t len;
    int rc;

    putv(&r, first);
    put64(&r, 5);
    putv(&r, 3);
    putv(&r, 4);
    putv(&r, 3);
    putv(&r, 100);
    putv(&r, 10);
    putv(&r, 10);
    if (first >> 40) {
        putv(&r, recall ? 1 : 0);
        if (recall)
            putv(&r, recall);
    }
    put64(&r, 9);
    putv(&r, 0);
    putv(&r, 2);
    if (first >> 40) {
        put8(&r, flags);
        putv(&r, mention ? 1 : 0);
        if (mention)
            putv(&r, mention);
    }
    len = snap_craft(3, r.b, r.n, &buf);
    CHECK(len > 0 && db_init(&db) == 0);
    rc = snapshot_load(buf, len, &db, &meta, err, sizeof(err));
    if (rc == 0) {
        grp_state(db.grp, 9, 5, st);
        CHECK_EQ_U64(db_audit(&db), 0);
    }
    db_deinit(&db);
    free(buf);
    return rc;
}

/* A section written before the chat features (version 0) still loads;
 * version 1 carries recalls, mute flags and mentions; bad ones fail. */
static void test_versions(void)
{
    struct grp_state st;

    CHECK_EQ_U64(load_grp(1, 0, 0, 0, &st), 0);
    CHECK(st.head == 3 && st.seen == 1 && st.unread == 2 && !st.muted &&
          st.mentions == 0 && st.first_unread == 2);
    CHECK_EQ_U64(load_grp(1 | UINT64_C(1) << 40, 1, 2, 1, &st), 0);
    CHECK(st.unread == 1 && st.muted && st.mentions == 0 &&
          st.first_unread == 3); /* 2 recalled, and it was the mention */
    CHECK_EQ_U64(load_grp(1 | UINT64_C(1) << 40, 0, 0, 2, &st), 0);
    CHECK(st.unread == 2 && st.mentions == 1);
    CHECK(load_grp(1 | UINT64_C(2) << 40, 0, 0, 0, &st) != 0); /* newer */
    CHECK(load_grp(1 | UINT64_C(1) << 40, 2, 0, 0, &st) != 0); /* flag */
    CHECK(load_grp(1 | UINT64_C(1) << 40, 0, 4, 0, &st) != 0); /* > head */
    CHECK(load_grp(1 | UINT64_C(1) << 40, 0, 0, 3, &st) != 0); /* > head */
}

int main(void)
{
    T_RUN(test_round_trip);
    T_RUN(test_empty);
    T_RUN(test_versions);
    T_END();
}
