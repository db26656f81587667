/*
 * test_sec_notice.c - what issue 17 added to a db and its snapshot: CNT's
 * notices read once (section 9) and the expiry records (section 10, the
 * db_expiry_* calls). Random data survives a round trip exactly and
 * audits clean; a snapshot without the two sections (written before them)
 * loads with none; crafted sections with right checksums but wrong data
 * are refused with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cnt.h"
#include "notice.h"
#include "snap_craft.h"
#include "snapshot.h"
#include "t.h"

#define USERS 2000

static void fill(struct db *db)
{
    uint32_t v;
    uint64_t t;

    CHECK(db_init(db) == 0);
    for (uint64_t u = 0; u < USERS; u++) {
        unsigned n = (unsigned)(t_rng() % (u % 5 ? 4 : 150));

        if (u % 3 == 0)
            CHECK(cnt_incr(db->cnt, u * 31, 1, 5, &v, &t) == 0);
        for (unsigned k = 0; k < n; k++) {
            unsigned type = (unsigned)(t_rng() % 3);
            uint64_t nid = t_rng() % 100;

            if (t_rng() % 3)
                CHECK(cnt_incr_notice(db->cnt, u * 31, type, t_rng() % 9, nid,
                                      &v, &t) == 0);
            else
                CHECK(cnt_ack(db->cnt, u * 31, type, nid, &v, &t) == 0);
        }
        if (u % 4 == 0)
            CHECK(db_expiry_note(db, u * 37, 1000 + u,
                                 (uint32_t)(t_rng() % 126) + 1) == 0);
        if (u % 8 == 0)
            db_expiry_rebuilt(db, u * 37, (unsigned)(t_rng() % FAM_COUNT));
    }
}

struct cmp {
    const struct db *other;
    size_t bad, seen;
};

static void cmp_notices(uint64_t uid, uint32_t n, const struct notice *v,
                        void *ctx)
{
    struct cmp *c = ctx;

    c->seen += n;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t d = 0;
        enum notice_state st = notice_get(cnt_notices(c->other->cnt), uid,
                                          v[i].type, v[i].nid, &d);

        c->bad +=
            st != (v[i].read ? NOTICE_READ : NOTICE_UNREAD) || d != v[i].delta;
    }
}

static void cmp_expiry(uint64_t uid, const struct db_expiry *e, void *ctx)
{
    struct cmp *c = ctx;
    struct db_expiry o;

    c->seen++;
    c->bad += !db_expiry_get(c->other, uid, &o) || o.ms != e->ms ||
              o.families != e->families || o.pending != e->pending;
}

static void test_round_trip(void)
{
    struct db a, b;
    struct snap_meta meta;
    struct cmp c;
    uint64_t cursor = 0;
    char *buf, err[256];
    size_t len;

    fill(&a);
    CHECK(notice_entries(cnt_notices(a.cnt)) > USERS);
    len = snap_image(&a, 1, 1, &buf);
    CHECK(len > 0);
    CHECK(db_init(&b) == 0);
    CHECK(snapshot_load(buf, len, &b, &meta, err, sizeof(err)) == 0);
    CHECK_EQ_U64(notice_entries(cnt_notices(b.cnt)),
                 notice_entries(cnt_notices(a.cnt)));
    CHECK_EQ_U64(notice_users(cnt_notices(b.cnt)),
                 notice_users(cnt_notices(a.cnt)));
    c = (struct cmp){&b, 0, 0};
    do
        notice_scan(cnt_notices(a.cnt), &cursor, 100, cmp_notices, &c);
    while (cursor != 0);
    CHECK_EQ_U64(c.bad, 0);
    CHECK_EQ_U64(c.seen, notice_entries(cnt_notices(a.cnt)));
    c = (struct cmp){&b, 0, 0};
    do
        db_expiry_scan(&a, &cursor, 100, cmp_expiry, &c);
    while (cursor != 0);
    CHECK_EQ_U64(c.bad, 0);
    CHECK_EQ_U64(c.seen, USERS / 4);
    for (unsigned f = 0; f < FAM_COUNT; f++)
        CHECK_EQ_U64(b.expired_pending[f], a.expired_pending[f]);
    CHECK_EQ_U64(db_audit(&a), 0);
    CHECK_EQ_U64(db_audit(&b), 0);
    free(buf);
    db_deinit(&a);
    db_deinit(&b);
}

/* A snapshot of the CNT section alone, as written before sections 9 and
 * 10 existed: it loads, with no notice and no expiry record. */
static void test_older_snapshot_loads(void)
{
    const unsigned char cnt_only[] = {9, 0, 0, 0, 0, 0, 0, 0, 1, 1, 5};
    struct snap_meta meta;
    struct db b;
    char *buf, err[256];
    size_t len = snap_craft(1, cnt_only, sizeof(cnt_only), &buf);

    CHECK(len > 0);
    CHECK(db_init(&b) == 0);
    CHECK(snapshot_load(buf, len, &b, &meta, err, sizeof(err)) == 0);
    CHECK_EQ_U64(cnt_total(b.cnt, 9), 5);
    CHECK_EQ_U64(notice_entries(cnt_notices(b.cnt)), 0);
    CHECK(!db_expiry_get(&b, 9, &(struct db_expiry){0, 0, 0}));
    CHECK_EQ_U64(db_audit(&b), 0);
    free(buf);
    db_deinit(&b);
}

/* Section id's raw bytes alone; 0 when they load, the error in err. */
static int load_raw(uint32_t id, const void *raw, size_t n, char *err,
                    size_t errlen)
{
    struct snap_meta meta;
    struct db b;
    char *buf;
    size_t len = snap_craft(id, raw, n, &buf);
    int rc;

    CHECK(len > 0);
    CHECK(db_init(&b) == 0);
    rc = snapshot_load(buf, len, &b, &meta, err, errlen);
    if (rc == 0)
        CHECK_EQ_U64(db_audit(&b), 0);
    free(buf);
    db_deinit(&b);
    return rc;
}

static void test_bad_notice_sections(void)
{
    /* uid 9, 2 notices: type 0 unread delta 1 nid 7; type 0 read delta 0
     * nid 8 */
    const unsigned char good[] = {9, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0,
                                  1, 7, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                                  0, 8, 0, 0, 0, 0, 0, 0, 0};
    unsigned char bad[sizeof(good) * 2];
    char err[256];

    CHECK(load_raw(9, good, sizeof(good), err, sizeof(err)) == 0);
    memcpy(bad, good, sizeof(good));
    bad[23] = 7; /* the same id twice in a type */
    CHECK(load_raw(9, bad, sizeof(good), err, sizeof(err)) != 0);
    CHECK(strstr(err, "not a set's") != NULL);
    memcpy(bad, good, sizeof(good));
    bad[9] = 64; /* type out of range */
    CHECK(load_raw(9, bad, sizeof(good), err, sizeof(err)) != 0);
    memcpy(bad, good, sizeof(good));
    bad[10] = 2; /* read flag */
    CHECK(load_raw(9, bad, sizeof(good), err, sizeof(err)) != 0);
    memcpy(bad, good, sizeof(good));
    bad[8] = 0; /* no notice */
    CHECK(load_raw(9, bad, sizeof(good), err, sizeof(err)) != 0);
    memcpy(bad, good, sizeof(good));
    memcpy(bad + sizeof(good), good, sizeof(good)); /* the user twice */
    CHECK(load_raw(9, bad, sizeof(bad), err, sizeof(err)) != 0);
    CHECK(load_raw(9, good, sizeof(good) - 3, err, sizeof(err)) != 0);
    CHECK(strstr(err, "inside a record") != NULL);
}

/* One user with k notices of one type, ids 0..k-1; the raw length. */
static size_t one_type(unsigned char *raw, unsigned k)
{
    size_t n = 8;

    memset(raw, 0, 8);
    raw[0] = 3;
    raw[n++] = (unsigned char)k; /* varint, k < 128 */
    for (unsigned i = 0; i < k; i++) {
        raw[n++] = 1; /* type */
        raw[n++] = 0; /* unread */
        raw[n++] = 1; /* delta */
        memset(raw + n, 0, 8);
        raw[n] = (unsigned char)i; /* nid */
        n += 8;
    }
    return n;
}

/* NOTICE_MAX notices of one type load; one more is refused. */
static void test_notice_section_bound(void)
{
    unsigned char raw[9 + (NOTICE_MAX + 1) * 11];
    char err[256];

    CHECK(load_raw(9, raw, one_type(raw, NOTICE_MAX), err, sizeof(err)) == 0);
    CHECK(load_raw(9, raw, one_type(raw, NOTICE_MAX + 1), err, sizeof(err)) !=
          0);
    CHECK(strstr(err, "more than 64") != NULL);
}

static void test_bad_expiry_sections(void)
{
    /* uid 5, ms 1000 (varint 0xE8 0x07), families 0x30, pending 0x10 */
    const unsigned char good[] = {5, 0, 0, 0, 0, 0, 0, 0, 0xE8, 7, 0x30, 0x10};
    unsigned char bad[sizeof(good) * 2];
    char err[256];

    CHECK(load_raw(10, good, sizeof(good), err, sizeof(err)) == 0);
    memcpy(bad, good, sizeof(good));
    bad[10] = 0; /* no family */
    CHECK(load_raw(10, bad, sizeof(good), err, sizeof(err)) != 0);
    memcpy(bad, good, sizeof(good));
    bad[11] = 0x11; /* pending outside families */
    CHECK(load_raw(10, bad, sizeof(good), err, sizeof(err)) != 0);
    memcpy(bad, good, sizeof(good));
    bad[10] = 0xB0; /* a family past the table */
    CHECK(load_raw(10, bad, sizeof(good), err, sizeof(err)) != 0);
    memcpy(bad, good, sizeof(good));
    memcpy(bad + sizeof(good), good, sizeof(good));
    CHECK(load_raw(10, bad, sizeof(bad), err, sizeof(err)) != 0);
    CHECK(strstr(err, "listed twice") != NULL);
}

/* The record's life: expiries add families and move the time, writes
 * clear pending ones, USER.DEL drops it; the per-family counts follow. */
static void test_expiry_records(void)
{
    struct db db;
    struct db_expiry e;

    CHECK(db_init(&db) == 0);
    CHECK_EQ_U64(db_expiry_pending(&db, 1, FAM_GRP), 0);
    CHECK(db_expiry_note(&db, 1, 5000, 1u << FAM_GRP | 1u << FAM_DOT) == 0);
    CHECK_EQ_U64(db_expiry_pending(&db, 1, FAM_GRP), 5000);
    CHECK_EQ_U64(db_expiry_pending(&db, 1, FAM_FEED), 0);
    CHECK_EQ_U64(db_expiry_pending(&db, 2, FAM_GRP), 0);
    CHECK_EQ_U64(db_expiry_floor(&db, 1, FAM_DOT), 5000);
    CHECK_EQ_U64(db.expired_pending[FAM_GRP], 1);
    db_expiry_rebuilt(&db, 1, FAM_GRP);
    db_expiry_rebuilt(&db, 1, FAM_GRP);
    CHECK_EQ_U64(db_expiry_pending(&db, 1, FAM_GRP), 0);
    CHECK_EQ_U64(db.expired_pending[FAM_GRP], 0);
    CHECK(db_expiry_get(&db, 1, &e));
    CHECK_EQ_U64(e.families, 1u << FAM_GRP | 1u << FAM_DOT);
    CHECK_EQ_U64(e.pending, 1u << FAM_DOT);
    db_expiry_rebuilt(&db, 1, FAM_DOT);
    CHECK_EQ_U64(db_expiry_floor(&db, 1, FAM_DOT), 5000); /* still */
    CHECK(db_expiry_note(&db, 1, 9000, 1u << FAM_FEED) == 0);
    CHECK(db_expiry_get(&db, 1, &e));
    CHECK_EQ_U64(e.ms, 9000);
    CHECK_EQ_U64(e.pending, 1u << FAM_FEED);
    CHECK_EQ_U64(db_expiry_floor(&db, 1, FAM_DOT), 9000);
    CHECK(db_expiry_note(&db, 1, UINT64_MAX, 1u << FAM_BC) == 0);
    CHECK(db_expiry_get(&db, 1, &e));
    CHECK_EQ_U64(e.ms, DB_EXPIRY_MS_MAX);
    CHECK_EQ_U64(db_audit(&db), 0);
    CHECK(db_expiry_forget(&db, 1));
    CHECK(!db_expiry_forget(&db, 1));
    CHECK_EQ_U64(db.expired_pending[FAM_FEED], 0);
    CHECK_EQ_U64(db.expired_pending[FAM_BC], 0);
    CHECK_EQ_U64(db_audit(&db), 0);
    db_deinit(&db);
}

int main(void)
{
    T_RUN(test_round_trip);
    T_RUN(test_older_snapshot_loads);
    T_RUN(test_bad_notice_sections);
    T_RUN(test_notice_section_bound);
    T_RUN(test_bad_expiry_sections);
    T_RUN(test_expiry_records);
    T_END();
}
