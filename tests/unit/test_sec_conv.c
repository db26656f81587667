/*
 * test_sec_conv.c - the CONV section of the snapshot: a store using every
 * chat feature (mentions, sources, sparse ids with lost ones, threads,
 * collapsed and muted conversations, recalls, every user form) survives a
 * round trip exactly; a section written before the chat features (no
 * extended record) still loads; bad extended records are refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "conv.h"
#include "snap_craft.h"
#include "snapshot.h"
#include "t.h"

#define USERS 400

static void apply(struct conv_store *s, uint64_t uid, uint64_t cid,
                  enum conv_op op, uint64_t arg, uint32_t flags, uint64_t tid,
                  uint32_t source)
{
    struct conv_req rq = {op, flags, arg, tid, source, 4};
    uint32_t u;
    uint64_t t;

    /* Refusals (a mode mismatch, a limit) are part of the mix. */
    (void)conv_apply(s, uid, cid, &rq, &u, &t);
}

static void fill(struct db *db)
{
    CHECK(db_init(db) == 0);
    for (uint64_t u = 0; u < USERS; u++) {
        unsigned n = u % 50 == 0 ? 150 : (unsigned)(1 + t_rng() % 6);

        for (uint64_t c = 0; c < n; c++) {
            uint64_t cid = t_rng() % 1000, base = c % 3 == 0 ? 1u << 30 : 0;
            uint32_t sp = c % 3 == 0 ? CONV_SPARSE : 0;

            for (unsigned k = 0; k < 1 + t_rng() % 12; k++) {
                uint64_t q = base + 1 + t_rng() % 40;
                unsigned r = (unsigned)(t_rng() % 10);
                uint32_t tf = t_rng() % 3 == 0 ? CONV_THREAD : 0;

                if (r < 5)
                    apply(db->conv, u, cid, CONV_OP_SEQ, q,
                          sp | tf | (r % 2 ? CONV_MENTION : 0) |
                              (r == 4 && !tf ? CONV_SOURCE : 0),
                          t_rng() % 5, (uint32_t)(t_rng() % CONV_SOURCES));
                else if (r < 7)
                    apply(db->conv, u, cid, CONV_OP_READ, q - 5, sp | tf,
                          t_rng() % 5, 0);
                else if (r < 8)
                    apply(db->conv, u, cid, CONV_OP_RECALL, q + 3, sp | tf,
                          t_rng() % 5, 0);
                else if (r < 9)
                    apply(db->conv, u, cid, CONV_OP_MUTE, t_rng() % 2, 0, 0, 0);
                else
                    apply(db->conv, u, cid, CONV_OP_ROLLUP, t_rng() % 2, 0, 0,
                          0);
            }
        }
    }
}

/* An order-independent digest of everything the walk shows. */
static uint64_t tl_digest(uint64_t seed, const struct conv_info *ci)
{
    uint64_t v[9] = {ci->read,      ci->max,     ci->unread,
                     ci->muted,     ci->nrecall, ci->sparse,
                     ci->collapsed, ci->lost,    ci->nids};
    uint64_t sum = XXH3_64bits_withSeed(v, sizeof(v), seed);

    for (uint32_t i = 0; i < ci->nrecall; i++)
        sum += XXH3_64bits_withSeed(&ci->recall[i], 8, seed + 1);
    for (uint32_t i = 0; i < ci->nids; i++)
        sum += XXH3_64bits_withSeed(&ci->ids[i], 8, seed + 2);
    for (unsigned k = 0; k < CONV_TAGS; k++)
        for (uint32_t i = 0; i < ci->ntag[k]; i++)
            sum += XXH3_64bits_withSeed(&ci->tag[k][i], 8, seed + 3 + k);
    return sum;
}

static void visit(uint64_t uid, uint64_t cid, const struct conv_info *ci,
                  void *ctx)
{
    uint64_t *sum = ctx;

    *sum += tl_digest(uid * 1000003 + cid, ci);
    for (uint32_t i = 0; i < ci->nthreads; i++) {
        struct conv_info ti;
        uint64_t tid;

        conv_info_thread(ci, i, &tid, &ti);
        *sum += tl_digest(uid ^ cid ^ (tid << 20), &ti);
    }
}

static uint64_t digest(const struct conv_store *s)
{
    uint64_t sum = 0, cursor = 0;

    do
        conv_scan(s, &cursor, 7, visit, &sum);
    while (cursor != 0);
    return sum;
}

static void test_round_trip(void)
{
    struct snap_meta meta;
    char *buf, err[256];
    struct db a, b;
    size_t len, bad = 0;

    fill(&a);
    CHECK_EQ_U64(conv_audit(a.conv), 0);
    len = snap_image(&a, 1, 0, &buf);
    CHECK(len > 0);
    CHECK(db_init(&b) == 0);
    CHECK(snapshot_load(buf, len, &b, &meta, err, sizeof(err)) == 0);
    CHECK_EQ_U64(conv_entries(b.conv), conv_entries(a.conv));
    CHECK_EQ_U64(conv_bytes(b.conv), conv_bytes(a.conv));
    CHECK_EQ_U64(digest(b.conv), digest(a.conv));
    for (uint64_t u = 0; u < USERS; u++) {
        struct conv_user_counts x, y;

        conv_user_counts(a.conv, u, &x);
        conv_user_counts(b.conv, u, &y);
        bad += conv_total(a.conv, u) != conv_total(b.conv, u) ||
               x.mentions != y.mentions || x.chats != y.chats ||
               x.threads != y.threads;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(db_audit(&b), 0);
    db_deinit(&a);
    db_deinit(&b);
    free(buf);
}

/* Raw section bytes, built by hand. */
struct raw {
    unsigned char b[4096];
    size_t n;
};

static void put8(struct raw *r, uint8_t v)
{
    r->b[r->n++] = v;
}

static void put64(struct raw *r, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        put8(r, (uint8_t)(v >> (8 * i)));
}

static void putv(struct raw *r, uint64_t v)
{
    while (v >= 0x80) {
        put8(r, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    put8(r, (uint8_t)v);
}

/* Loads raw as the CONV section (id 2) into a fresh db: 0 or -1. */
static int load_raw(const struct raw *r, struct db *db, char *err, size_t cap)
{
    struct snap_meta meta;
    char *buf = NULL;
    size_t len = snap_craft(2, r->b, r->n, &buf);
    int rc;

    CHECK(len > 0);
    CHECK(db_init(db) == 0);
    rc = snapshot_load(buf, len, db, &meta, err, cap);
    free(buf);
    return rc;
}

/* A section as unreadd wrote it before the chat features: it loads. */
static void test_old_section_loads(void)
{
    struct raw r = {{0}, 0};
    struct conv_state st;
    char err[256];
    struct db db;

    /* user 7, cid 10: read 3, max 9, muted, recalls 5 and 8 */
    put64(&r, 7);
    put64(&r, 10);
    putv(&r, 3);
    putv(&r, 6);
    put8(&r, 1);
    putv(&r, 2);
    putv(&r, 2);
    putv(&r, 3);
    /* user 7, cid 11: read 0, max 4 */
    put64(&r, 7);
    put64(&r, 11);
    putv(&r, 0);
    putv(&r, 4);
    put8(&r, 0);
    putv(&r, 0);
    CHECK(load_raw(&r, &db, err, sizeof(err)) == 0);
    conv_state(db.conv, 7, 10, NULL, &st);
    CHECK(st.max == 9 && st.read == 3 && st.unread == 4 && st.muted &&
          st.mentions == 0 && st.first_unread == 4);
    CHECK_EQ_U64(conv_total(db.conv, 7), 4);
    CHECK_EQ_U64(db_audit(&db), 0);
    db_deinit(&db);
}

/* One extended record, then the caller's tail; whether it loads. */
static int load_ext(uint8_t flags, uint8_t xflags, uint64_t mask,
                    const uint64_t *tail, size_t ntail)
{
    struct raw r = {{0}, 0};
    char err[256];
    struct db db;
    int rc;

    put64(&r, 1);
    put64(&r, 2);
    putv(&r, 0); /* read */
    putv(&r, 5); /* max */
    put8(&r, flags);
    putv(&r, 0); /* recalls */
    put8(&r, xflags);
    putv(&r, mask);
    for (size_t i = 0; i < ntail; i++)
        putv(&r, tail[i]);
    rc = load_raw(&r, &db, err, sizeof(err));
    if (rc == 0)
        CHECK_EQ_U64(db_audit(&db), 0);
    db_deinit(&db);
    return rc;
}

static void test_bad_extended_records(void)
{
    /* mentions {2, 4}, no threads: fine */
    const uint64_t ok[] = {2, 2, 2, 0};
    /* a thread: tid 3, read 0, max 2, no recalls, no mentions */
    const uint64_t thread[] = {1, 3, 0, 2, 0, 0};
    const uint64_t empty_tag[] = {0, 0};
    const uint64_t above_max[] = {1, 9, 0};
    const uint64_t two_threads_down[] = {2, 4, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0};

    CHECK_EQ_U64(load_ext(2, 0, 1, ok, 4), 0);
    CHECK_EQ_U64(load_ext(2, 0, 0, thread, 6), 0);
    CHECK(load_ext(4, 0, 1, ok, 4) != 0);                /* unknown flag */
    CHECK(load_ext(2, 8, 1, ok, 4) != 0);                /* unknown xflag */
    CHECK(load_ext(2, 0, 1 << 9, ok, 4) != 0);           /* no such tag list */
    CHECK(load_ext(2, 0, 1, empty_tag, 2) != 0);         /* marked, empty */
    CHECK(load_ext(2, 0, 1, above_max, 3) != 0);         /* mention past max */
    CHECK(load_ext(2, 0, 0, two_threads_down, 12) != 0); /* tid gap 0 */
    CHECK(load_ext(2, 0, 0, ok + 3, 1) == 0); /* extended, no feature */
}

int main(void)
{
    T_RUN(test_round_trip);
    T_RUN(test_old_section_loads);
    T_RUN(test_bad_extended_records);
    T_END();
}
